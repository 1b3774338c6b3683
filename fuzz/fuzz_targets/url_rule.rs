//! The URL rule as the streaming replacer applies it (the plain-text pipeline, cut at
//! fuzzer-chosen points) and as `UrlRule::rewrite_all` applies it, against an independent
//! reference written from the rule's specification (`trusted_server_fuzz::reference`), for
//! origins with and without a port and targets of both schemes. All three must agree byte for
//! byte.
#![no_main]

use std::sync::Once;

use libfuzzer_sys::fuzz_target;
use trusted_server_core::{Codec, Rewrite, UrlRule};
use trusted_server_fuzz::reference::{check_spec_examples, Reference};
use trusted_server_fuzz::{options, run, show, split_input, utf16_bom, ORIGIN, TARGETS};

/// Origins: without a port, with a port that is no scheme's default, and with each default.
const ORIGINS: [&str; 4] = [
    ORIGIN,
    "origin.demo-publisher.example:8443",
    "origin.demo-publisher.example:443",
    "origin.demo-publisher.example:80",
];

static SPEC: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    SPEC.call_once(check_spec_examples);
    let input = split_input(data);
    let origin = ORIGINS[usize::from(input.config >> 2) % ORIGINS.len()];
    let (scheme, target) = TARGETS[usize::from(input.config >> 4) % TARGETS.len()];
    let rule = UrlRule::new(origin, scheme, target);
    let reference = Reference::new(origin, scheme, target).apply(input.body);

    let all = rule.rewrite_all(input.body);
    assert!(
        all == reference,
        "rewrite_all, {origin} -> {scheme}://{target}:\ninput     {}\ngot       {}\nreference {}",
        show(input.body),
        show(&all),
        show(&reference)
    );
    let (streamed, _) = run(
        Codec::Identity,
        Rewrite::Text,
        &rule,
        &options(input.config),
        input.body,
        &input.cuts,
    )
    .unwrap_or_else(|e| panic!("identity text gave an error: {e}"));
    // A body starting with a UTF-16 byte order mark passes through the pipeline untouched.
    let expected = if utf16_bom(input.body) {
        input.body
    } else {
        &reference[..]
    };
    assert!(
        streamed == expected,
        "streamed, cut at {:?}, {origin} -> {scheme}://{target}:\ninput     {}\ngot       {}\nreference {}",
        input.cuts,
        show(input.body),
        show(&streamed),
        show(expected)
    );
});
