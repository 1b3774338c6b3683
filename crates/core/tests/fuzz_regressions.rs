//! Inputs found by the fuzz targets in `fuzz/` (see README.md, "Tests"), each kept as a
//! regression test through the public pipeline.

mod support;

use support::{rewrite_kind, rules, run};
use trusted_server_core::Codec;

/// A page with one Flight push whose string body is `body` (already escaped).
fn push_page(body: &[u8]) -> Vec<u8> {
    let mut page = b"<p>x</p><script>self.__next_f.push([1,\"".to_vec();
    page.extend_from_slice(body);
    page.extend_from_slice(b"\"])</script><p>y</p>");
    page
}

/// Found by `js_string`: a byte 0xE2 (the lead byte of U+2028 and U+2029) that does not start
/// a valid character made the string encoder copy the next two bytes raw, unescaped, so a
/// decoded `"` or `\` or control byte after it came out raw: the push string ended early (the
/// page's script broke) and the output depended on where the chunks were cut.
#[test]
fn a_stray_e2_byte_does_not_unescape_what_follows_it() {
    let html = rewrite_kind("text/html; charset=utf-8");
    // (string body, as it must come out): unchanged unless it is U+2028 itself.
    for (body, expected) in [
        (&b"\xe2\\\"x"[..], &b"\xe2\\\"x"[..]),
        (b"\xe2\\u0002\\u000f", b"\xe2\\u0002\\u000f"),
        (b"\xe2/\\u000f", b"\xe2/\\u000f"),
        (b"a\xe2\\\\", b"a\xe2\\\\"),
        (b"\xe2\\u003c/script\\u003e", b"\xe2\\u003c/script\\u003e"),
        (b"\xe2\x80\\\"", b"\xe2\x80\\\""),
        (b"\xe2\x80", b"\xe2\x80"),
        (b"\xe2", b"\xe2"),
        (b"\xe2\x80\xa8", b"\\u2028"),
    ] {
        let page = push_page(body);
        let expected = push_page(expected);
        for rule in &rules() {
            let whole = run(Codec::Identity, html, rule, &page, &[]).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&whole),
                String::from_utf8_lossy(&expected),
                "body {body:?}"
            );
            assert_eq!(whole, expected, "body {body:?}");
            for cut in 0..=page.len() {
                let split = run(Codec::Identity, html, rule, &page, &[cut]).unwrap();
                assert_eq!(split, whole, "body {body:?} cut at {cut}");
            }
        }
    }
}

/// Found by `decode` (the input is `fuzz/regressions/decode-gzip-member-finish-error`): a gzip
/// member whose trailer does not check out (a wrong CRC or length) made the gzip decoder return
/// its error after leaving its state mid-switch, and the pipeline's next look at the decoder hit
/// `unreachable!`: a panic on origin input instead of an origin error.
#[test]
fn a_gzip_member_with_a_bad_trailer_is_an_origin_error_not_a_panic() {
    let css = rewrite_kind("text/css");
    let plain = b"body { background: url(https://origin.demo-publisher.example/a.png) }";
    let good = support::encode(Codec::Gzip, plain);
    let trailer = good.len() - 8;
    for damaged_byte in [trailer, trailer + 4] {
        let mut body = good.clone();
        body[damaged_byte] ^= 0x55;
        let mut with_more = body.clone();
        with_more.extend_from_slice(&good);
        for input in [&body, &with_more] {
            for cut in 0..=input.len() {
                for rule in &rules() {
                    match run(Codec::Gzip, css, rule, input, &[cut]) {
                        Err(trusted_server_core::PipelineError::Origin(_)) => {}
                        other => panic!("byte {damaged_byte} damaged, cut at {cut}: {other:?}"),
                    }
                }
            }
        }
    }
}
