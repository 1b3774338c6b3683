//! The pipeline's output does not depend on how the origin body is split into chunks.
//!
//! Real fixture pages (plain, gzip and brotli) are pushed whole and in random splits, including
//! one byte at a time; the decoded output must be byte-identical every time, and equal to the
//! URL rule applied to the whole page (the HTML stage only adds structure-awareness for Flight
//! scripts, which these pages do not have). Arbitrary bytes must never panic. HTML runs both
//! ways the HTML stage can run (see `support::html_paths`), and the lookback-0 runs check that
//! lol_html did rewrite the page.

use std::path::PathBuf;

use proptest::prelude::*;
use trusted_server_core::{BodyReport, Codec, PageOptions, PageReport};

mod support;
use support::{decode, encode, html_paths, rewrite_for, rules, run_with};

fn fixture(path: &str) -> Vec<u8> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/site");
    std::fs::read(root.join(path)).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

/// `(path, content type)` of the text fixtures.
const FIXTURES: [(&str, &str); 6] = [
    ("index.html", "text/html; charset=utf-8"),
    ("news/article.html", "text/html; charset=utf-8"),
    ("latin1.latin1.html", "text/html; charset=iso-8859-1"),
    ("static/site.css", "text/css"),
    ("static/app.js", "text/javascript; charset=utf-8"),
    ("api/feed.json", "application/json"),
];

fn cut_points(len: usize, picks: &[prop::sample::Index]) -> Vec<usize> {
    let mut cuts: Vec<usize> = picks.iter().map(|i| i.index(len + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

fn is_html(content_type: &str) -> bool {
    content_type.starts_with("text/html")
}

/// With a lookback of 0, lol_html must have rewritten an HTML body (one without a UTF-16
/// byte order mark): else the lol_html path goes untested.
fn reached_lol_html(options: &PageOptions, report: &BodyReport<PageReport>) -> bool {
    options.html_lookback != 0 || report.stages.html_structured == Some(true)
}

#[test]
fn whole_fixtures_equal_the_url_rule_and_change_something() {
    for options in html_paths() {
        for (path, content_type) in FIXTURES {
            let page = fixture(path);
            for rule in rules() {
                let rewrite = rewrite_for(content_type);
                let (out, report) =
                    run_with(&options, Codec::Identity, rewrite, &rule, &page, &[]).unwrap();
                assert_eq!(out, rule.rewrite_all(&page), "{path} {options:?}");
                assert_ne!(
                    out, page,
                    "{path} has nothing to rewrite, so it proves nothing"
                );
                if is_html(content_type) {
                    assert!(reached_lol_html(&options, &report), "{path} {report:?}");
                }
            }
        }
    }
}

#[test]
fn one_byte_chunks_give_the_same_output() {
    for options in html_paths() {
        for (path, content_type) in [FIXTURES[1], FIXTURES[2], FIXTURES[3]] {
            let page = fixture(path);
            let rule = &rules()[1];
            let rewrite = rewrite_for(content_type);
            let run = |cuts: &[usize]| {
                run_with(&options, Codec::Identity, rewrite, rule, &page, cuts).unwrap()
            };
            let (whole, _) = run(&[]);
            let every: Vec<usize> = (1..page.len()).collect();
            let (split, report) = run(&every);
            assert!(whole == split, "{path}: one-byte chunks changed the output");
            if is_html(content_type) {
                assert!(reached_lol_html(&options, &report), "{path} {report:?}");
            }
        }
    }
}

#[test]
fn one_byte_chunks_of_compressed_input_give_the_same_output() {
    let page = fixture("index.html");
    let rule = &rules()[0];
    let kind = rewrite_for("text/html");
    let want = rule.rewrite_all(&page);
    for options in html_paths() {
        for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let encoded = encode(codec, &page);
            let every: Vec<usize> = (1..encoded.len()).collect();
            let (out, report) = run_with(&options, codec, kind, rule, &encoded, &every).unwrap();
            assert!(decode(codec, &out) == want, "{codec:?} {options:?}");
            assert!(reached_lol_html(&options, &report), "{codec:?} {report:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn any_split_of_any_fixture_in_any_codec_gives_the_same_bytes(
        which in 0..FIXTURES.len(),
        codec in prop_oneof![Just(Codec::Identity), Just(Codec::Gzip), Just(Codec::Deflate), Just(Codec::Brotli)],
        longer in any::<bool>(),
        lol_html_first in any::<bool>(),
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let (path, content_type) = FIXTURES[which];
        let options = &html_paths()[usize::from(lol_html_first)];
        let page = fixture(path);
        let rule = &rules()[usize::from(longer)];
        let encoded = encode(codec, &page);
        let cuts = cut_points(encoded.len(), &picks);
        let (out, report) = run_with(options, codec, rewrite_for(content_type), rule, &encoded, &cuts).unwrap();
        prop_assert!(decode(codec, &out) == rule.rewrite_all(&page), "{} {:?} cuts {:?}", path, codec, cuts);
        prop_assert!(!is_html(content_type) || reached_lol_html(options, &report), "{:?}", report);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_html_loses_nothing(
        body in proptest::collection::vec(any::<u8>(), 0..4096),
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..16),
    ) {
        let rule = &rules()[0];
        let cuts = cut_points(body.len(), &picks);
        let html = rewrite_for("text/html");
        for options in &html_paths() {
            // As plain HTML the bytes must come out exactly as the URL rule says.
            let (out, _) = run_with(options, Codec::Identity, html, rule, &body, &cuts).unwrap();
            prop_assert_eq!(out, rule.rewrite_all(&body));
            // As "compressed" input they are garbage: an error or a (rare) valid decode, never
            // a panic.
            for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
                let _ = run_with(options, codec, html, rule, &body, &cuts);
            }
        }
    }

    #[test]
    fn html_soup_is_rewritten_consistently(
        parts in proptest::collection::vec(prop_oneof![
            Just(&b"<script>"[..]), Just(&b"</script>"[..]), Just(&b"<style>"[..]), Just(&b"</style>"[..]), Just(&b"<!--"[..]), Just(&b"-->"[..]),
            Just(&b"<a href=\""[..]), Just(&b"\">"[..]), Just(&b"https://origin.demo-publisher.example/x"[..]),
            Just(&b"//origin.demo-publisher.example"[..]), Just(&b"<svg><![CDATA["[..]), Just(&b"]]></svg>"[..]),
            Just(&b"<textarea>"[..]), Just(&b"</textarea>"[..]), Just("é✓😀".as_bytes()), Just(&b"<"[..]), Just(&b">"[..]), Just(&b"\""[..]),
            // Invalid UTF-8 must survive byte for byte, in scripts and styles too.
            Just(&b"\xff\xfe"[..]), Just(&b"\xc3"[..]),
        ], 0..60),
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..16),
    ) {
        let body = parts.concat();
        let rule = &rules()[1];
        let cuts = cut_points(body.len(), &picks);
        // A body that starts with a UTF-16 byte order mark is UTF-16 to a browser: untouched.
        let utf16 = body.starts_with(b"\xff\xfe") || body.starts_with(b"\xfe\xff");
        let want = if utf16 { body.clone() } else { rule.rewrite_all(&body) };
        for options in &html_paths() {
            let (out, report) = run_with(options, Codec::Identity, rewrite_for("text/html"), rule, &body, &cuts).unwrap();
            prop_assert_eq!(&out, &want, "{:?}", options);
            prop_assert!(utf16 || body.len() < 2 || reached_lol_html(options, &report), "{:?}", report);
        }
    }
}
