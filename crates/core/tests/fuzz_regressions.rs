//! Inputs found by the fuzz targets in `fuzz/` (see docs/testing.md, "Fuzzing"), each kept as a
//! regression test through the public pipeline.

mod support;

use support::{rewrite_for, rules, run, Flush};
use trusted_server_core::{BodyReport, Codec, Injection, PageOptions, PageReport, UrlRule};
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

/// Every file in `fuzz/regressions/` (its README aside), each replayed by a test here.
const SAVED: [&str; 8] = [
    "decode-gzip-member-finish-error",
    "decode-utf16-bom-text",
    "rsc-cap-one-run-degraded",
    "rsc-host-split-across-pushes",
    "rsc-inline-cap-row-neither",
    "rsc-inline-cap-row-neither-2",
    "rsc-inline-row-end-url",
    "rsc-inline-split-variance",
];

/// The saved inline pages of the `rsc` target.
const SAVED_RSC_PAGES: [&str; 6] = [
    "rsc-cap-one-run-degraded",
    "rsc-host-split-across-pushes",
    "rsc-inline-cap-row-neither",
    "rsc-inline-cap-row-neither-2",
    "rsc-inline-row-end-url",
    "rsc-inline-split-variance",
];

#[test]
fn every_saved_input_is_replayed() {
    let dir = format!("{}/../../fuzz/regressions", env!("CARGO_MANIFEST_DIR"));
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name != "README.md")
        .collect();
    found.sort();
    assert_eq!(
        found, SAVED,
        "a saved input without a replay here, or a replay without its file"
    );
    let readme = std::fs::read_to_string(format!("{dir}/README.md")).unwrap();
    for name in SAVED {
        assert!(readme.contains(name), "{name} is not in the README");
    }
}

/// A saved fuzz input, read as the fuzz targets read it ([`split_input`]).
struct Saved {
    body: Vec<u8>,
    config: u8,
    raw_cuts: Vec<u16>,
    /// The target cut the body before every byte (of its first 8 KiB) instead.
    bytewise: bool,
}

fn saved(name: &str) -> Saved {
    let path = format!(
        "{}/../../fuzz/regressions/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let input = split_input(&data);
    Saved {
        body: input.body.to_vec(),
        config: input.config,
        raw_cuts: input.raw_cuts,
        bytewise: input.bytewise,
    }
}

/// A saved input of the `rsc` target for an inline page (config bit 4): the rule, the cap
/// (1 KiB with config bit 8, else the default), the Flight stream, the page the target built
/// from it, and the page's chunk cuts (the first half of the cut values places the scripts,
/// the second half cuts the page).
fn rsc_inline_page(name: &str) -> (UrlRule, u32, String, Vec<u8>, Vec<usize>) {
    let Saved {
        body,
        config,
        raw_cuts: raw,
        bytewise,
    } = saved(name);
    assert_eq!(config & 4, 4, "{name}: not an inline page");
    let max_held = if config & 8 != 0 {
        1024
    } else {
        PageOptions::default().nextjs.max_held_bytes
    };
    let n = raw.len();
    let (scheme, target) = TARGETS[usize::from(config >> 4) % TARGETS.len()];
    let rule = UrlRule::new(support::ORIGIN, scheme, target);
    let stream = String::from_utf8_lossy(&body).into_owned();
    let script_cuts = cut_points(&raw[..n / 2], stream.len());
    let page = flight::inline_page(&stream, &script_cuts, &raw);
    let cuts = if bytewise {
        (1..page.len().min(8192)).collect()
    } else {
        cut_points(&raw[n / 2..], page.len())
    };
    (rule, max_held, stream, page, cuts)
}

/// Runs a page through the HTML pipeline holding at most `max_held` bytes.
fn run_capped(
    rule: &UrlRule,
    max_held: u32,
    page: &[u8],
    cuts: &[usize],
) -> (Vec<u8>, BodyReport<PageReport>) {
    run_capped_with(rule, max_held, page, cuts, None)
}

/// [`run_capped`], with the first-party script's tag injected when `inject` is set.
fn run_capped_with(
    rule: &UrlRule,
    max_held: u32,
    page: &[u8],
    cuts: &[usize],
    inject: Option<Injection>,
) -> (Vec<u8>, BodyReport<PageReport>) {
    let html = rewrite_for("text/html; charset=utf-8");
    let mut options = PageOptions {
        inject,
        ..PageOptions::default()
    };
    options.nextjs.max_held_bytes = max_held;
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

/// Found by `rsc` (`rsc-inline-split-variance`, `rsc-cap-one-run-degraded`; the others in
/// `SAVED_RSC_PAGES` replay here too): near the 1 KiB cap, whether held output passed the cap
/// was compared where chunks ended, so the page cut as found and the whole page came out
/// differently (the decoded bytes in different strings, or only one run degrading). Every
/// cut must give the same bytes, and the strings, each decoded on its own as the browser
/// does, the model's rows: rewritten, or where it degraded each row rewritten or as it came.
#[test]
fn a_saved_page_comes_out_the_same_for_every_cut() {
    for name in SAVED_RSC_PAGES {
        let (rule, max_held, stream, page, found) = rsc_inline_page(name);
        let (whole, report) = run_capped(&rule, max_held, &page, &[]);
        let (decoded, markup) = flight::read_pushes(&whole).expect("the output's strings decode");
        let (_, markup_in) = flight::read_pushes(&page).expect("the page's strings decode");
        assert!(markup == rule.rewrite_all(&markup_in), "{name}: the markup");
        let model = flight::model(stream.as_bytes(), &rule, u64::from(max_held));
        match report.stages.rsc.degraded {
            None => assert!(decoded == model.rewritten(), "{name}: not the model's rows"),
            Some(why) => assert!(
                model.each_row_whole_or_released(&decoded, &rule),
                "{name}: degraded ({why}), a row in neither form"
            ),
        }
        let singles = (0..=page.len()).step_by(3).map(|cut| vec![cut]);
        for cuts in std::iter::once(found).chain(singles) {
            let (out, split_report) = run_capped(&rule, max_held, &page, &cuts);
            assert!(
                out == whole,
                "{name} cut at {cuts:?}: the output differs\nwhole {}\nsplit {}",
                String::from_utf8_lossy(&whole),
                String::from_utf8_lossy(&out)
            );
            assert_eq!(
                report.stages.rsc.degraded, split_report.stages.rsc.degraded,
                "{name} cut at {cuts:?}"
            );
        }
    }
}

/// The saved inline pages again with the first-party script injected: at every cut, the
/// output holds the tag exactly once, and without it is the output without injection (the
/// tag's place is checked against a real HTML parser in `tests/inject.rs`).
#[test]
fn a_saved_page_with_the_script_injected_is_the_same_page_plus_the_tag() {
    let injection = Injection {
        src: "/static/tsjs=0123456789abcdef.js".into(),
        nonce: None,
    };
    let tag = injection.tag().into_bytes();
    for name in SAVED_RSC_PAGES {
        let (rule, max_held, _, page, found) = rsc_inline_page(name);
        let (plain, _) = run_capped(&rule, max_held, &page, &[]);
        let singles = (0..=page.len()).step_by(7).map(|cut| vec![cut]);
        for cuts in std::iter::once(vec![])
            .chain(std::iter::once(found))
            .chain(singles)
        {
            let (out, _) = run_capped_with(&rule, max_held, &page, &cuts, Some(injection.clone()));
            let at: Vec<usize> = (0..out.len().saturating_sub(tag.len() - 1))
                .filter(|&i| out[i..].starts_with(&tag))
                .collect();
            assert_eq!(at.len(), 1, "{name} cut at {cuts:?}: the tag at {at:?}");
            let mut without = out[..at[0]].to_vec();
            without.extend_from_slice(&out[at[0] + tag.len()..]);
            assert!(
                without == plain,
                "{name} cut at {cuts:?}: more than the tag changed\nplain {}\nout   {}",
                String::from_utf8_lossy(&plain),
                String::from_utf8_lossy(&out)
            );
        }
    }
}

/// Replays a saved input of the `decode` target: config bits pick the coding (`>> 2 & 3`),
/// the content type (`>> 5 & 3`), the target (`>> 4 & 1`) and garbage mode (`0x80`, the body
/// labelled with the coding as it is); otherwise the body is encoded here (flushed at the
/// first half of the cut values) and the output must decode to what the identity pipeline
/// makes of it.
fn replay_decode(name: &str) {
    use std::io::{Read, Write};
    let Saved {
        body,
        config: c,
        raw_cuts,
        bytewise,
    } = saved(name);
    assert!(!bytewise, "{name}: one-byte chunks are not replayed here");
    let (codec, raw_deflate) = [
        (Codec::Gzip, false),
        (Codec::Deflate, false),
        (Codec::Deflate, true),
        (Codec::Brotli, false),
    ][usize::from(c >> 2) & 3];
    let types = ["text/css", "text/html; charset=utf-8", "text/x-component"];
    let rewrite = rewrite_for(types[usize::from((c >> 5) & 3) % types.len()]);
    let (scheme, target) = TARGETS[usize::from(c >> 4) & 1];
    let rule = UrlRule::new(support::ORIGIN, scheme, target);
    let decode = |out: &[u8]| -> Vec<u8> {
        let mut plain = Vec::new();
        if out.is_empty() {
            return plain;
        }
        match codec {
            Codec::Gzip => flate2::read::GzDecoder::new(out).read_to_end(&mut plain),
            Codec::Deflate => flate2::read::ZlibDecoder::new(out).read_to_end(&mut plain),
            _ => brotli::Decompressor::new(out, 4096).read_to_end(&mut plain),
        }
        .unwrap_or_else(|e| panic!("{name}: the output does not decode: {e}"));
        plain
    };
    if c & 0x80 != 0 {
        let cuts = cut_points(&raw_cuts, body.len());
        let whole = run(codec, rewrite, &rule, &body, &[]);
        let split = run(codec, rewrite, &rule, &body, &cuts);
        match (whole, split) {
            (Ok(a), Ok(b)) => assert!(decode(&a) == decode(&b), "{name}: the output differs"),
            (Err(a), Err(b)) => {
                for e in [a, b] {
                    assert!(
                        matches!(e, trusted_server_core::PipelineError::Origin(_)),
                        "{name}: not an origin error: {e:?}"
                    );
                }
            }
            (a, b) => panic!("{name}: one run failed: {:?} / {:?}", a.err(), b.err()),
        }
        return;
    }
    let half = raw_cuts.len() / 2;
    let flushes = cut_points(&raw_cuts[..half], body.len());
    let mut encoded = Vec::new();
    let mut last = 0;
    let level = flate2::Compression::new(6);
    let mut feed = |w: &mut dyn Write| {
        for &at in &flushes {
            w.write_all(&body[last..at]).unwrap();
            w.flush().unwrap();
            last = at;
        }
        w.write_all(&body[last..]).unwrap();
    };
    match (codec, raw_deflate) {
        (Codec::Gzip, _) => {
            let mut e = flate2::write::GzEncoder::new(&mut encoded, level);
            feed(&mut e);
            e.finish().unwrap();
        }
        (Codec::Deflate, false) => {
            let mut e = flate2::write::ZlibEncoder::new(&mut encoded, level);
            feed(&mut e);
            e.finish().unwrap();
        }
        (Codec::Deflate, true) => {
            let mut e = flate2::write::DeflateEncoder::new(&mut encoded, level);
            feed(&mut e);
            e.finish().unwrap();
        }
        _ => {
            let mut e = brotli::CompressorWriter::new(&mut encoded, 4096, 5, 22);
            feed(&mut e);
        }
    }
    let cuts = cut_points(&raw_cuts[half..], encoded.len());
    let expected = run(Codec::Identity, rewrite, &rule, &body, &[]).unwrap();
    let out = run(codec, rewrite, &rule, &encoded, &cuts).unwrap();
    assert!(
        decode(&out) == expected,
        "{name}: not what the identity pipeline makes"
    );
}

/// Found by `decode` (`decode-utf16-bom-text`): a text body starting with `FE FF` (a UTF-16
/// byte order mark), raw-deflate encoded, passes through untouched: a byte-wise URL rule
/// could corrupt UTF-16 text.
#[test]
fn a_saved_utf16_text_body_passes_through_untouched() {
    let Saved { body, .. } = saved("decode-utf16-bom-text");
    assert!(body.starts_with(&[0xfe, 0xff]));
    let css = rewrite_for("text/css");
    for rule in &rules() {
        assert_eq!(run(Codec::Identity, css, rule, &body, &[]).unwrap(), body);
    }
    replay_decode("decode-utf16-bom-text");
}

/// The saved input of the gzip trailer finding (see the test above), replayed as found.
#[test]
fn the_saved_gzip_trailer_input_is_an_origin_error_not_a_panic() {
    replay_decode("decode-gzip-member-finish-error");
}

/// Found by `rsc` at the 1 KiB cap (`fuzz/regressions/rsc-inline-cap-row-neither` and `-2`):
/// when held output passed the cap, what the row rewriter held was let go in a way that
/// rewrote part of a row and not the rest: the decoded output had a row that was neither the
/// row rewritten nor the row as it came. A degrade may pass rows on as they came, but each
/// row must come out whole in one form or the other.
///
/// `rsc-inline-row-end-url` (no cap involved) had a row ending in a bare origin host, held
/// with its `\n` by the URL replacer, overtaken by the next row's id: `…for 0:http://…\n{…`.
#[test]
fn a_cap_release_passes_each_row_on_rewritten_or_as_it_came() {
    for name in [
        "rsc-inline-cap-row-neither",
        "rsc-inline-cap-row-neither-2",
        "rsc-inline-row-end-url",
    ] {
        let (rule, max_held, stream, page, cuts) = rsc_inline_page(name);
        let model = flight::model(stream.as_bytes(), &rule, u64::from(max_held));
        for cuts in [&[][..], &cuts] {
            let (out, report) = run_capped(&rule, max_held, &page, cuts);
            let (decoded, _) = flight::read_pushes(&out).expect("the output's strings decode");
            if report.stages.rsc.degraded.is_none() {
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
