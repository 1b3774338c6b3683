//! The HTML stage on arbitrary bytes: the same output for every way the body is cut into
//! chunks and whether or not lol_html runs from the first byte, never an error for an identity
//! body, and a page without the origin host (in any case) comes back byte for byte. With the
//! script's injection on (a config bit), all of that holds too, and the output is the output
//! without injection plus the tag, once, when the stage says it injected.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::{Codec, Injected, Injection, PageOptions, UrlRule};
use trusted_server_fuzz::{assert_split_invariant, run, whole_and_split};
use trusted_server_fuzz::{contains_ignore_case, options, rewrite_for, show, split_input};
use trusted_server_fuzz::{ORIGIN, TARGETS};

const CHARSETS: [&str; 2] = [
    "text/html; charset=utf-8",
    "text/html; charset=windows-1252",
];

fuzz_target!(|data: &[u8]| {
    let input = split_input(data);
    let (scheme, target) = TARGETS[usize::from(input.config >> 2) % TARGETS.len()];
    let rule = UrlRule::new(ORIGIN, scheme, target);
    let rewrite = rewrite_for(CHARSETS[usize::from(input.config >> 4) % CHARSETS.len()]);
    let plain_options = options(input.config);
    let injection = Injection {
        src: "/static/tsjs=0123456789abcdef.js".into(),
        nonce: Some("n0nce".into()),
    };
    let options = PageOptions {
        inject: (input.config & 0x20 != 0).then(|| injection.clone()),
        ..plain_options.clone()
    };
    let body = input.body;

    let ((whole, report), (split, _)) =
        whole_and_split(rewrite, &rule, &options, body, &input.cuts);
    assert_split_invariant(body, &input.cuts, &whole, &split);
    // lol_html runs only once a page needs it: the output must be what it is with lol_html
    // from the first byte.
    let from_the_start = PageOptions {
        html_lookback: 0,
        ..options.clone()
    };
    let (structured, _) = run(
        Codec::Identity,
        rewrite,
        &rule,
        &from_the_start,
        body,
        &input.cuts,
    )
    .unwrap_or_else(|e| panic!("an identity body gave an error: {e}"));
    assert!(
        structured == whole,
        "the lazy HTML stage differs from lol_html from the start:\ninput  {}\nlazy   {}\nlol_html {}",
        show(body),
        show(&whole),
        show(&structured)
    );
    // The injection adds the tag and nothing else.
    let whole = if options.inject.is_some() {
        let ((without, _), _) = whole_and_split(rewrite, &rule, &plain_options, body, &[]);
        let tag = injection.tag().into_bytes();
        let found = whole.windows(tag.len()).position(|w| w == tag.as_slice());
        let rest = match (report.stages.injected, found) {
            (Some(Injected::Yes), Some(at)) => [&whole[..at], &whole[at + tag.len()..]].concat(),
            (Some(Injected::No(_)), _) => whole.clone(),
            // A UTF-16 page passes through whole, past every stage.
            (None, None) if body.starts_with(b"\xff\xfe") || body.starts_with(b"\xfe\xff") => {
                whole.clone()
            }
            other => panic!("injection reported {other:?} for {}", show(&whole)),
        };
        assert!(
            rest == without,
            "the injection changed more than the tag:\ninput   {}\nwith    {}\nwithout {}",
            show(body),
            show(&whole),
            show(&without)
        );
        without
    } else {
        whole
    };
    // Flight scripts are decoded and written back in Next.js's escaping, so a push string
    // escaped differently (`\/`, `\u00e9`) comes back in Next.js's form even with no URL in
    // it: the `js_string` and `rsc` targets check those pages.
    let flight = body.windows(8).any(|w| w == b"__next_f");
    if !flight && !contains_ignore_case(body, ORIGIN.as_bytes()) {
        assert!(
            whole == body,
            "no origin host, yet the page changed:\ninput  {}\noutput {}",
            show(body),
            show(&whole)
        );
    }
});
