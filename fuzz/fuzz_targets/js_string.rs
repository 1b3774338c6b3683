//! The string codec of `self.__next_f.push([1,"…"])` (`crates/core/src/stages/rsc/js_string.rs`),
//! driven through the public pipeline: a page with one push whose string body is the fuzzer's
//! bytes, or the fuzzer's text escaped the way Next.js does.
//!
//! * Decoding does not depend on where the page is cut into chunks (an escape split anywhere).
//! * Without the origin host, the string the browser decodes from the output is the one it
//!   decodes from the input (checked with an independent JSON string decoder).
//! * A string in Next.js's own escaping, decoded and encoded again, is the same bytes: the
//!   page comes back byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::UrlRule;
use trusted_server_fuzz::flight::{json_string_decode, next_js_escape, read_pushes};
use trusted_server_fuzz::{assert_split_invariant, whole_and_split};
use trusted_server_fuzz::{contains_ignore_case, options, rewrite_for, show, split_input};
use trusted_server_fuzz::{ORIGIN, TARGETS};

fuzz_target!(|data: &[u8]| {
    let input = split_input(data);
    let (scheme, target) = TARGETS[usize::from(input.config >> 4) % TARGETS.len()];
    let rule = UrlRule::new(ORIGIN, scheme, target);
    let options = options(input.config);
    let next_js_style = input.config & 4 != 0;
    let body: Vec<u8> = if next_js_style {
        next_js_escape(&String::from_utf8_lossy(input.body)).into_bytes()
    } else {
        input.body.to_vec()
    };
    let mut page = b"<p>x</p><script>self.__next_f.push([1,\"".to_vec();
    page.extend_from_slice(&body);
    page.extend_from_slice(b"\"])</script><p>y</p>");
    let cuts: Vec<usize> = if input.bytewise {
        (1..page.len().min(8192)).collect()
    } else {
        // The input's cuts were taken over its body; spread them over the page.
        input
            .cuts
            .iter()
            .map(|&c| c * page.len() / input.body.len().max(1))
            .map(|c| c.min(page.len()))
            .collect()
    };
    let html = rewrite_for("text/html; charset=utf-8");
    let ((whole, _), (split, _)) = whole_and_split(html, &rule, &options, &page, &cuts);
    assert_split_invariant(&page, &cuts, &whole, &split);

    let mut string = body.clone();
    string.push(b'"');
    let decoded = match json_string_decode(&string) {
        // The whole body is one JSON string, and nothing in it ends the script early.
        Some((decoded, end)) if end == body.len() && !body.contains(&b'<') => decoded,
        _ => {
            assert!(!next_js_style, "Next.js-style string that does not decode");
            return;
        }
    };
    if contains_ignore_case(&decoded, ORIGIN.as_bytes()) || contains_ignore_case(&body, b"origin") {
        return;
    }
    let Some((stream_out, _)) = read_pushes(&whole) else {
        panic!("the output string is not a JSON string: {}", show(&whole));
    };
    assert!(
        stream_out == decoded,
        "the browser would read another string:\npage   {}\noutput {}",
        show(&page),
        show(&whole)
    );
    if std::str::from_utf8(&decoded).is_ok_and(|text| next_js_escape(text).as_bytes() == body) {
        assert!(
            whole == page,
            "a Next.js-style string did not come back byte for byte:\npage   {}\noutput {}",
            show(&page),
            show(&whole)
        );
    }
});
