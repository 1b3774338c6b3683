//! Inputs found by the fuzz targets in `fuzz/` (see docs/testing.md, "Fuzzing"), each kept as a
//! regression test through the public pipeline.

mod support;

use support::{rewrite_for, rules, run, Flush};
use trusted_server_core::{Codec, PipelineOptions, PipelineReport, UrlRule};
use ts_testkit::cut_points;
use ts_testkit::fuzz_input::{split_input, TARGETS};

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
    let html = rewrite_for("text/html; charset=utf-8");
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
    let css = rewrite_for("text/css");
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

/// The fuzz crate's independent model of Flight rows and of Next.js's push strings (written
/// from the wire format, not from the core), so a saved `rsc` input replays here as it did
/// there.
#[path = "../../../fuzz/src/flight.rs"]
#[allow(dead_code)]
mod flight;

/// Replays a saved input of the `rsc` fuzz target for an inline page at the 1 KiB cap (config
/// bits 4 and 8): the rule, the Flight stream, the page the target built from it, and the
/// page's chunk cuts. The trailer is read as the target reads it ([`split_input`]): the first
/// half of the cut values places the scripts, the second half cuts the page.
fn rsc_inline_page(name: &str) -> (UrlRule, String, Vec<u8>, Vec<usize>) {
    let path = format!(
        "{}/../../fuzz/regressions/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let input = split_input(&data);
    assert!(
        !input.bytewise,
        "{name}: one-byte chunks are not replayed here"
    );
    assert_eq!(
        input.config & 0x0c,
        0x0c,
        "{name}: not an inline page at the small cap"
    );
    let raw = &input.raw_cuts;
    let (scheme, target) = TARGETS[usize::from(input.config >> 4) % TARGETS.len()];
    let rule = UrlRule::new(support::ORIGIN, scheme, target);
    let stream = String::from_utf8_lossy(input.body).into_owned();
    let script_cuts = cut_points(&raw[..raw.len() / 2], stream.len());
    let page = flight::inline_page(&stream, &script_cuts, raw);
    let cuts = cut_points(&raw[raw.len() / 2..], page.len());
    (rule, stream, page, cuts)
}

/// Runs a page through the HTML pipeline at the smallest cap the settings allow.
fn run_small_cap(rule: &UrlRule, page: &[u8], cuts: &[usize]) -> (Vec<u8>, PipelineReport) {
    let html = rewrite_for("text/html; charset=utf-8");
    let mut options = PipelineOptions::default();
    options.nextjs.max_held_bytes = 1024;
    ts_testkit::run(
        Codec::Identity,
        html,
        rule,
        &options,
        page,
        cuts,
        Flush::Never,
    )
    .unwrap()
}

/// Found by `rsc` at the 1 KiB cap (`fuzz/regressions/rsc-inline-cap-row-neither` and `-2`):
/// when held output passed the cap, what the row rewriter held was let go in a way that
/// rewrote part of a row and not the rest: the decoded output had a row that was neither the
/// row rewritten nor the row as it came. A degrade may pass rows on as they came, but each
/// row must come out whole in one form or the other.
#[test]
fn a_cap_release_passes_each_row_on_rewritten_or_as_it_came() {
    for name in ["rsc-inline-cap-row-neither", "rsc-inline-cap-row-neither-2"] {
        let (rule, stream, page, cuts) = rsc_inline_page(name);
        let model = flight::model(stream.as_bytes(), &rule, 1024);
        for cuts in [&[][..], &cuts] {
            let (out, report) = run_small_cap(&rule, &page, cuts);
            let (decoded, _) = flight::read_pushes(&out).expect("the output's strings decode");
            if report.rsc.degraded.is_none() {
                assert!(decoded == model.rewritten(), "{name} cut at {cuts:?}");
                continue;
            }
            if let Some(bad) = first_row_neither(&model, &decoded) {
                panic!("{name} cut at {cuts:?}: {bad}");
            }
        }
    }
}

/// Where `out` stops being the model's rows, each rewritten or as it came: the first row that
/// cannot be matched, with both forms and the output there.
fn first_row_neither(model: &flight::Model, out: &[u8]) -> Option<String> {
    if model.each_row_rewritten_or_original(out) {
        return None;
    }
    // A greedy walk, for the message only (the check above is the exact one).
    let mut at = 0;
    for (i, row) in model.rows.iter().enumerate() {
        if out[at..].starts_with(&row.rewritten) {
            at += row.rewritten.len();
        } else if out[at..].starts_with(&row.original) {
            at += row.original.len();
        } else {
            let show = |b: &[u8]| format!("{:?}", String::from_utf8_lossy(b));
            let end = (at + row.original.len().max(row.rewritten.len()) + 40).min(out.len());
            return Some(format!(
                "row {i}\noriginal  {}\nrewritten {}\noutput    {}",
                show(&row.original),
                show(&row.rewritten),
                show(&out[at..end])
            ));
        }
    }
    Some("the rows match greedily, but not all of the output".to_owned())
}
