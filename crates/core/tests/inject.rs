//! The script tag's injection, checked against an HTML parser that is not lol_html.
//!
//! html5ever (Servo's parser, which follows the WHATWG tree-construction rules) parses every
//! output: the injected tag must be the first child of `<head>`, and the only `ts-js` script in
//! the document. The output with that one tag taken out must be the output without injection,
//! so nothing else changed. Every page is pushed at every split (or random ones), with lol_html
//! from the first byte and lazily, in every coding, and the outputs must all be equal.

use std::path::PathBuf;

use html5ever::tendril::TendrilSink;
use markup5ever_rcdom::{Handle, NodeData, RcDom};
use proptest::prelude::*;
use trusted_server_core::{
    BodyReport, Codec, Injected, Injection, PageOptions, PageReport, UrlRule,
};

mod support;
use support::{decode, encode, rewrite_for, run_with};

const ORIGIN: &str = "origin.demo-publisher.example";

fn rule() -> UrlRule {
    UrlRule::new(ORIGIN, "https", "www.pub.test")
}

fn injection(nonce: Option<&str>) -> Injection {
    Injection {
        src: "/static/tsjs=0123456789abcdef.js".into(),
        nonce: nonce.map(str::to_owned),
    }
}

fn tag(nonce: Option<&str>) -> Vec<u8> {
    injection(nonce).tag().into_bytes()
}

/// The pipeline's plain output for `page` (content type `content_type`) cut at `cuts`.
fn output(
    page: &[u8],
    content_type: &str,
    codec: Codec,
    cuts: &[usize],
    options: &PageOptions,
) -> (Vec<u8>, BodyReport<PageReport>) {
    let encoded = encode(codec, page);
    let cuts: Vec<usize> = cuts.iter().map(|&c| c.min(encoded.len())).collect();
    let (out, report) = run_with(
        options,
        codec,
        rewrite_for(content_type),
        &rule(),
        &encoded,
        &cuts,
    )
    .expect("the pipeline rewrites the page");
    (decode(codec, &out), report)
}

/// Both ways the HTML stage runs (lol_html from the first byte, and lazily), with injection.
fn with_injection(nonce: Option<&str>, nextjs: bool) -> [PageOptions; 2] {
    let mut lazy = PageOptions {
        inject: Some(injection(nonce)),
        ..PageOptions::default()
    };
    lazy.nextjs.enabled = nextjs;
    let structured = PageOptions {
        html_lookback: 0,
        ..lazy.clone()
    };
    [structured, lazy]
}

fn element_name(node: &Handle) -> Option<String> {
    match &node.data {
        NodeData::Element { name, .. } => Some(name.local.to_string()),
        _ => None,
    }
}

fn is_ts_script(node: &Handle) -> bool {
    match &node.data {
        NodeData::Element { name, attrs, .. } => {
            &*name.local == "script"
                && attrs
                    .borrow()
                    .iter()
                    .any(|a| &*a.name.local == "id" && &*a.value == "ts-js")
        }
        _ => false,
    }
}

fn count_ts_scripts(node: &Handle) -> usize {
    usize::from(is_ts_script(node))
        + node
            .children
            .borrow()
            .iter()
            .map(count_ts_scripts)
            .sum::<usize>()
}

/// Checks, with html5ever, that the tag is the first child of the head and the only one.
fn assert_first_child_of_head(out: &[u8]) {
    // A browser's decoder takes the byte order mark off before the parser sees the text.
    let out = out.strip_prefix(b"\xef\xbb\xbf").unwrap_or(out);
    let dom = html5ever::parse_document(RcDom::default(), Default::default())
        .from_utf8()
        .read_from(&mut &out[..])
        .expect("reading from memory");
    let show = || String::from_utf8_lossy(out).into_owned();
    let document = dom.document;
    let html = document
        .children
        .borrow()
        .iter()
        .find(|n| element_name(n).as_deref() == Some("html"))
        .cloned()
        .expect("a parsed document has <html>");
    let head = html
        .children
        .borrow()
        .iter()
        .find(|n| element_name(n).as_deref() == Some("head"))
        .cloned()
        .expect("a parsed document has <head>");
    let first = head.children.borrow().first().cloned();
    assert!(
        first.as_ref().is_some_and(is_ts_script),
        "the head's first child is not the tag in {}",
        show()
    );
    assert_eq!(count_ts_scripts(&document), 1, "{}", show());
}

/// `with` is `without` plus the tag, once.
fn assert_only_the_tag_added(with: &[u8], without: &[u8], tag: &[u8]) {
    let at = with
        .windows(tag.len())
        .position(|w| w == tag)
        .unwrap_or_else(|| panic!("no tag in {}", String::from_utf8_lossy(with)));
    let mut rest = with[..at].to_vec();
    rest.extend_from_slice(&with[at + tag.len()..]);
    assert!(
        rest == without,
        "more than the tag changed:\n{}\n{}",
        String::from_utf8_lossy(with),
        String::from_utf8_lossy(without)
    );
}

/// Every check on one page, at every one-cut split (or every `step`th), both HTML paths.
fn check_page(page: &[u8], content_type: &str, step: usize, nextjs: bool) -> Vec<u8> {
    let no_injection = PageOptions {
        nextjs: trusted_server_core::Nextjs {
            enabled: nextjs,
            ..PageOptions::default().nextjs
        },
        ..PageOptions::default()
    };
    let (without, _) = output(page, content_type, Codec::Identity, &[], &no_injection);
    let [structured, lazy] = with_injection(None, nextjs);
    let (want, report) = output(page, content_type, Codec::Identity, &[], &structured);
    assert_eq!(report.stages.injected, Some(Injected::Yes));
    assert_only_the_tag_added(&want, &without, &tag(None));
    if content_type.contains("utf-8") {
        assert_first_child_of_head(&want);
    }
    for cut in (0..=page.len()).step_by(step) {
        for options in [&structured, &lazy] {
            let (out, _) = output(page, content_type, Codec::Identity, &[cut], options);
            assert!(
                out == want,
                "cut at {cut}, lookback {}: {}",
                options.html_lookback,
                String::from_utf8_lossy(page)
            );
        }
    }
    want
}

/// Pages that try to fool a scan for `<head>`; `|` marks where the tag belongs (read off the
/// WHATWG tokenizer and tree-construction rules by hand).
const HOSTILE: &[&str] = &[
    "<!DOCTYPE html><html lang=en><head>|<title>t</title></head><body>x</body></html>",
    "<!doctype html>\n<!-- <head> -->\n<HTML>\n<HEAD data-x='a>b' data-y=\"<head>\">|\n<meta charset=utf-8></HEAD>",
    "<html>|<script>document.write('<head>')</script><head><title>x</title></head>",
    "<html>|<template><head></template><head></head>",
    "<html>|<noscript><head></noscript><head></head>",
    "<html>|<textarea><head></textarea>",
    "|<title><head></title><head>",
    "<!-- a -- b --!> <head>|",
    "<!--> <head>|",
    "<!---> <head>|",
    "<!----> <head>|",
    "<!--<!----> <head>|",
    "<!x <head>|> <head>",
    "<?xml <head>|?> <head>",
    "</p> </ div> <head>|",
    "</> <head>|",
    "<html a\"b='>' c=\"<head>\"> <head c='>'>|",
    "<html/><head/>|",
    "<hEaD\tclass=a\n>|",
    "|<headline><head>",
    "|<htmlx><head>",
    "|</head><head>",
    "|</br> <head>",
    "|</body>",
    "|< head>",
    "\u{feff}<head>|",
    "\u{feff}|",
    "|hello <head>",
    "   \n\t|",
    "|",
    "<html>|",
    "<html>|<body></body></html>",
    "|<p>no head at all",
    "<!DOCTYPE html>|<!-- unfinished comment",
    "|<html lang=\"unfinished",
    "<!DOCTYPE html PUBLIC \"a>|b\" <head>",
    "|<svg><head></svg>",
];

#[test]
fn hostile_pages_get_the_tag_first_in_head_at_every_split() {
    let tag = String::from_utf8(tag(None)).unwrap();
    for marked in HOSTILE {
        let page = marked.replace('|', "");
        let out = check_page(page.as_bytes(), "text/html; charset=utf-8", 1, true);
        assert_eq!(String::from_utf8_lossy(&out), marked.replace('|', &tag));
    }
}

#[test]
fn the_tag_goes_right_after_the_head_start_tag() {
    let page = b"<!DOCTYPE html><html><HEAD data-x='>'>\n<title>x</title>";
    let out = check_page(page, "text/html; charset=utf-8", 1, true);
    let mut want = b"<!DOCTYPE html><html><HEAD data-x='>'>".to_vec();
    want.extend_from_slice(&tag(None));
    want.extend_from_slice(b"\n<title>x</title>");
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&want)
    );
}

#[test]
fn a_page_that_starts_its_head_with_the_script_is_left_alone() {
    for page in [
        &b"<html><HEAD>\n <script src=/static/tsjs=0000000000000000.js></script><head>"[..],
        b"<head><SCRIPT id='ts-js' src=\"/x.js\"></SCRIPT>",
        b"<!-- x --> <script id=ts-js src=/x.js></script><body>",
    ] {
        for cut in 0..=page.len() {
            for options in with_injection(None, true) {
                let (out, report) = output(page, "text/html", Codec::Identity, &[cut], &options);
                assert_eq!(out, page, "cut at {cut}");
                assert!(matches!(report.stages.injected, Some(Injected::No(_))));
            }
        }
    }
}

#[test]
fn the_nonce_is_on_the_tag() {
    let page = b"<html><head><title>x</title>";
    for options in with_injection(Some("abc+/="), true) {
        let (out, _) = output(page, "text/html", Codec::Identity, &[], &options);
        assert!(
            String::from_utf8_lossy(&out).contains(
                "<head><script src=\"/static/tsjs=0123456789abcdef.js\" id=\"ts-js\" nonce=\"abc+/=\"></script><title>"
            ),
            "{}",
            String::from_utf8_lossy(&out)
        );
    }
}

#[test]
fn only_html_gets_the_tag() {
    for content_type in ["text/css", "application/json", "text/x-component"] {
        let body = b"<head>x</head>";
        for options in with_injection(None, true) {
            let (out, report) = output(body, content_type, Codec::Identity, &[], &options);
            assert_eq!(out, body, "{content_type}");
            assert_eq!(report.stages.injected, None);
        }
    }
    // A UTF-16 page passes through whole.
    let utf16 = b"\xff\xfe<\0h\0e\0a\0d\0>\0";
    for options in with_injection(None, true) {
        let (out, _) = output(utf16, "text/html", Codec::Identity, &[], &options);
        assert_eq!(out, utf16);
    }
}

#[test]
fn a_token_too_long_before_the_head_stops_the_scan() {
    let mut page = b"<!--".to_vec();
    page.resize(page.len() + 70 * 1024, b'x');
    page.extend_from_slice(b"--><head>");
    for options in with_injection(None, true) {
        let (out, report) = output(
            &page,
            "text/html",
            Codec::Identity,
            &[100, 65_540],
            &options,
        );
        assert_eq!(out, page);
        assert!(matches!(report.stages.injected, Some(Injected::No(_))));
    }
}

fn fixture(path: &str) -> Vec<u8> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    std::fs::read(root.join(path)).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

#[test]
fn every_fixture_page_gets_the_tag_first_in_head() {
    let pages = [
        ("site/index.html", "text/html; charset=utf-8"),
        ("site/news/article.html", "text/html; charset=utf-8"),
        ("site/embed/poll.html", "text/html; charset=utf-8"),
        ("site/latin1.latin1.html", "text/html; charset=iso-8859-1"),
        ("nextjs/index.body", "text/html; charset=utf-8"),
        ("nextjs/about.body", "text/html; charset=utf-8"),
        ("nextjs/live.body", "text/html; charset=utf-8"),
        ("nextjs/nonce.body", "text/html; charset=utf-8"),
        (
            "nextjs/index.trailing-slash.body",
            "text/html; charset=utf-8",
        ),
    ];
    for (path, content_type) in pages {
        let page = fixture(path);
        for nextjs in [true, false] {
            check_page(&page, content_type, 61, nextjs);
        }
    }
}

/// Pieces of markup that matter to the scan, for random pages.
fn soup() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            Just(&b"<head>"[..]),
            Just(&b"<HEAD a='>'>"[..]),
            Just(&b"<html>"[..]),
            Just(&b"<html lang=\"<head>\">"[..]),
            Just(&b"<!DOCTYPE html>"[..]),
            Just(&b"<!--"[..]),
            Just(&b"-->"[..]),
            Just(&b"--!>"[..]),
            Just(&b"-"[..]),
            Just(&b"!"[..]),
            Just(&b"<script>"[..]),
            Just(&b"</script>"[..]),
            Just(&b"<template>"[..]),
            Just(&b"<noscript>"[..]),
            Just(&b"<textarea>"[..]),
            Just(&b"<body>"[..]),
            Just(&b"</p>"[..]),
            Just(&b"</head>"[..]),
            Just(&b"<?x "[..]),
            Just(&b"<!x"[..]),
            Just(&b"</"[..]),
            Just(&b"<"[..]),
            Just(&b">"[..]),
            Just(&b"/"[..]),
            Just(&b"="[..]),
            Just(&b"\""[..]),
            Just(&b"'"[..]),
            Just(&b" "[..]),
            Just(&b"\n"[..]),
            Just(&b"x"[..]),
            Just(&b"h"[..]),
            Just("\u{feff}".as_bytes()),
            Just(&b"<meta charset=utf-8>"[..]),
            Just(&b"https://origin.demo-publisher.example/a"[..]),
            Just(&b"<script>self.__next_f.push([1,\"https://origin.demo-publisher.example/\"])</script>"[..]),
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_pages_any_split_any_coding_either_html_path(
        page in soup(),
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        codec in prop_oneof![Just(Codec::Identity), Just(Codec::Gzip), Just(Codec::Deflate), Just(Codec::Brotli)],
        nextjs in any::<bool>(),
    ) {
        let [structured, lazy] = with_injection(None, nextjs);
        let (want, report) = output(&page, "text/html; charset=utf-8", Codec::Identity, &[], &structured);
        prop_assert_eq!(report.stages.injected, Some(Injected::Yes));
        assert_first_child_of_head(&want);
        let encoded_len = encode(codec, &page).len();
        let mut cuts: Vec<usize> = picks.iter().map(|i| i.index(encoded_len + 1)).collect();
        cuts.sort_unstable();
        for options in [&structured, &lazy] {
            let (out, _) = output(&page, "text/html; charset=utf-8", codec, &cuts, options);
            prop_assert!(out == want, "{:?} cuts {:?} lookback {}", String::from_utf8_lossy(&page), cuts, options.html_lookback);
        }
    }
}
