//! Next.js pages whose push strings are built from the fuzzer's bytes out of a vocabulary of
//! rows, URLs in every spelling, the escapes Next.js writes and those it never writes, raw
//! characters it would have escaped, and markup between scripts. The inline Flight rewriting
//! reads most push strings with its fast reader, on the escaped bytes; its output must be the
//! decoding path's (the reader switched off), whole and cut into chunks anywhere, with and
//! without the smallest cap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::{use_flight_fast_reader, PageOptions, UrlRule};
use trusted_server_fuzz::{assert_split_invariant, show, split_input, vocabulary_page};
use trusted_server_fuzz::{rewrite_for, whole_and_split, ORIGIN, TARGETS};

/// What a page is built of: a body byte picks one (or, past the end, is itself the next byte).
const VOCABULARY: &[&str] = &[
    "<script>self.__next_f.push([1,\"",
    "\"])</script>",
    "<script>self.__next_f.push([3,\"YWI=\"])</script>",
    "<p>https://origin.demo-publisher.example/m</p>",
    "0:",
    "1a:",
    "\\n",
    "T",
    "T1f,",
    "T0,",
    "T,",
    "T40,",
    "o3,",
    "I[",
    "[",
    "{",
    "https://origin.demo-publisher.example/x",
    "//origin.demo-publisher.example",
    "http://ORIGIN.demo-publisher.example:80",
    "https:\\\\/\\\\/origin.demo-publisher.example\\\\/y",
    "\\\\u002F\\\\u002Forigin.demo-publisher.example",
    "origin.demo-publisher.example",
    ".evil.test",
    "\\\"",
    "\\\\",
    "\\u003c",
    "\\u003e",
    "\\u0026",
    "\\u2028",
    "\\t",
    "\\/",
    "\\u0041",
    "\\ud83d\\ude00",
    "\\ud83d",
    "é",
    "’",
    "\u{2028}",
    "<",
    "&",
    " ",
    "a",
    "-",
    "_",
    ".",
    ":",
    "\\",
    "\"",
];

fuzz_target!(|data: &[u8]| {
    let input = split_input(data);
    let (page, cuts) = vocabulary_page(&input, VOCABULARY);
    let (scheme, target) = TARGETS[usize::from(input.config >> 1) % TARGETS.len()];
    let rule = UrlRule::new(ORIGIN, scheme, target);
    let mut options = PageOptions::default();
    if input.config & 1 != 0 {
        // The smallest cap the settings allow.
        options.nextjs.max_held_bytes = 1024;
    }
    let html = rewrite_for("text/html; charset=utf-8");
    use_flight_fast_reader(true);
    let ((fast, _), (fast_split, _)) = whole_and_split(html, &rule, &options, &page, &cuts);
    use_flight_fast_reader(false);
    let ((slow, _), (slow_split, _)) = whole_and_split(html, &rule, &options, &page, &cuts);
    use_flight_fast_reader(true);
    assert_split_invariant(&page, &cuts, &fast, &fast_split);
    assert_split_invariant(&page, &cuts, &slow, &slow_split);
    assert!(
        fast == slow,
        "the fast reader differs from the decoding path:\npage {}\nfast {}\nslow {}",
        show(&page),
        show(&fast),
        show(&slow)
    );
});
