//! The stage at every split of small creatives, and the CSS reader's corners. The public
//! properties (html5ever's reading, random creatives) are in `crates/core/tests/creative.rs`.

use std::rc::Rc;

use super::css::{escape_string, escape_unquoted, unescape, CssRewriter};
use super::signing::Signing;
use super::{Creative, CreativeStage, Signer, UrlUse};
use crate::body::stage::BodyStage;
use trusted_server_settings::Scheme;

/// Signs every `https://ads.test/…` target (as offered, not normalised) as `/fp?u=<target>`,
/// or `/fc?u=<target>` for a link the reader follows.
fn signer() -> Signer {
    Box::new(|t: &str, use_: UrlUse| {
        let route = match use_ {
            UrlUse::Load => "fp",
            UrlUse::Follow => "fc",
        };
        t.strip_prefix("https://ads.test/")
            .map(|p| format!("/{route}?u={p}&s=1"))
    })
}

fn html() -> Creative {
    Creative::for_content_type(Some("text/html")).unwrap()
}

/// The stage's output for `input` cut at `cuts`.
fn run_cut(creative: Creative, input: &[u8], cuts: &[usize]) -> Vec<u8> {
    run_at(creative, None, input, cuts)
}

/// [`run_cut`] for a creative at `address`.
fn run_at(creative: Creative, address: Option<&str>, input: &[u8], cuts: &[usize]) -> Vec<u8> {
    let address = address.map(|a| url::Url::parse(a).unwrap());
    let mut stage = CreativeStage::new(creative, signer(), address, Scheme::Https);
    let mut out = Vec::new();
    let mut at = 0;
    for &cut in cuts.iter().chain([input.len()].iter()) {
        stage.write(&input[at..cut], &mut out);
        at = cut;
    }
    stage.finish(&mut out);
    out
}

/// The output, checked to be the same at every one- and two-cut split.
fn every_split(creative: Creative, input: &str) -> String {
    every_split_at(creative, None, input)
}

/// [`every_split`] for a creative at `address`.
fn every_split_at(creative: Creative, address: Option<&str>, input: &str) -> String {
    let bytes = input.as_bytes();
    let whole = run_at(creative, address, bytes, &[]);
    for a in 0..=bytes.len() {
        assert_eq!(run_at(creative, address, bytes, &[a]), whole, "cut at {a}");
        for b in (a..=bytes.len()).step_by(7) {
            let got = run_at(creative, address, bytes, &[a, b]);
            assert_eq!(got, whole, "cuts at {a}, {b}");
        }
    }
    String::from_utf8(whole).unwrap()
}

#[test]
fn html_attributes_and_sheets_are_rewritten_at_every_split() {
    let input = "<p class=x><img SRC = 'https://ads.test/a.png?x=1&amp;y=2' alt=\"https://ads.test/no\">\
        <a href=//ads.test/b>b</a><img srcset=\"https://ads.test/1.png 1x,https://ads.test/2.png 2x\">\
        <style>a{background:url(https://ads.test/c)}/* url(https://ads.test/d) */</style>\
        <script>x='<img src=https://ads.test/e>'</script><base href=https://ads.test/f>\
        <div style='background:url(\"https://ads.test/g\")'>é</div>";
    let want = "<p class=x><img SRC = '/fp?u=a.png?x=1&amp;y=2&amp;s=1' alt=\"https://ads.test/no\">\
        <a href=\"/fc?u=b&amp;s=1\">b</a><img srcset=\"/fp?u=1.png&amp;s=1 1x,/fp?u=2.png&amp;s=1 2x\">\
        <style>a{background:url(/fp?u=c&s=1)}/* url(https://ads.test/d) */</style>\
        <script>x='<img src=https://ads.test/e>'</script><base href=\"/fp?u=f&amp;s=1\">\
        <div style='background:url(\"/fp?u=g&amp;s=1\")'>é</div>";
    assert_eq!(every_split(html(), input), want);
}

#[test]
fn relative_urls_resolve_against_the_address_or_the_first_base() {
    let page = Some("https://ads.test/c/d/page.html");
    let input = "<img src=a.png><a href='../l?x=1'>l</a><img srcset=\"s.png 1x, /t.png 2x\">\
        <a href=#top>t</a><img src=''><img src=data:,x><svg><rect fill=url(#g) /></svg>\
        <style>a{b:url(i.png);c:url(#g);d:url( \"data:,x\")}</style><div style='e:url(j)'></div>";
    let want = "<img src=\"/fp?u=c/d/a.png&amp;s=1\"><a href='/fc?u=c/l?x=1&amp;s=1'>l</a>\
        <img srcset=\"/fp?u=c/d/s.png&amp;s=1 1x, /fp?u=t.png&amp;s=1 2x\">\
        <a href=#top>t</a><img src=''><img src=data:,x><svg><rect fill=url(#g) /></svg>\
        <style>a{b:url(/fp?u=c/d/i.png&s=1);c:url(#g);d:url( \"data:,x\")}</style>\
        <div style='e:url(/fp?u=c/d/j&amp;s=1)'></div>";
    assert_eq!(every_split_at(html(), page, input), want);
    // Without an address, relative URLs stay as written.
    assert_eq!(every_split(html(), input), input);
    // The first `<base href>` (itself resolved against the address) wins; it is signed too.
    let input = "<img src=a.png><base href=x/><base href=https://ads.test/no/><img src=b.png>";
    let want = "<img src=\"/fp?u=c/d/a.png&amp;s=1\"><base href=\"/fp?u=c/d/x/&amp;s=1\">\
        <base href=https://ads.test/no/><img src=\"/fp?u=c/d/x/b.png&amp;s=1\">";
    assert_eq!(every_split_at(html(), page, input), want);
    // An absolute base gives markup without an address (an auction's) something to resolve
    // against.
    let input = "<base href=https://ads.test/b/><img src=c.png>";
    let want = "<base href=\"/fp?u=b/&amp;s=1\"><img src=\"/fp?u=b/c.png&amp;s=1\">";
    assert_eq!(every_split(html(), input), want);
    // A base the signer refuses stays, and then nothing is signed: the signer's root-relative
    // URLs would resolve on the base's host.
    let input = "<base href=https://other.test/><img src=c.png><img src=https://ads.test/x>";
    assert_eq!(every_split_at(html(), page, input), input);
}

#[test]
fn lazy_loading_attributes_and_pings_are_loads() {
    let input = "<img data-src=https://ads.test/a data-srcset='https://ads.test/b 2x'>\
        <div data-bg=//ads.test/c data-background=https://ads.test/d data-lazy-src=https://ads.test/e>\
        <a href=https://ads.test/l ping=' https://ads.test/p1\thttps://x.test/p2 https://ads.test/p3'>l</a>\
        <video src=https://ads.test/v><source src=https://ads.test/s><track src=https://ads.test/t></video>\
        <embed src=https://ads.test/m><input type=image src=https://ads.test/i><div ping=https://ads.test/n>";
    let want = "<img data-src=\"/fp?u=a&amp;s=1\" data-srcset='/fp?u=b&amp;s=1 2x'>\
        <div data-bg=\"/fp?u=c&amp;s=1\" data-background=\"/fp?u=d&amp;s=1\" data-lazy-src=\"/fp?u=e&amp;s=1\">\
        <a href=\"/fc?u=l&amp;s=1\" ping=' /fp?u=p1&amp;s=1\thttps://x.test/p2 /fp?u=p3&amp;s=1'>l</a>\
        <video src=\"/fp?u=v&amp;s=1\"><source src=\"/fp?u=s&amp;s=1\"><track src=\"/fp?u=t&amp;s=1\"></video>\
        <embed src=\"/fp?u=m&amp;s=1\"><input type=image src=\"/fp?u=i&amp;s=1\"><div ping=https://ads.test/n>";
    assert_eq!(every_split(html(), input), want);
}

#[test]
fn script_literals_are_rewritten_at_every_split() {
    let input = "<script>var clickTag = \"https://ads.test/l\"; var i = new Image();\
        i.src = 'https://ads.test/p?x=1&y=2'; u = 'https://ads.test/q?id=' + id;</script>\
        <script type=application/ld+json>{\"logo\":\"https:\\/\\/ads.test\\/g.png\"}</script>\
        <script type=text/template><img src='https://ads.test/t'></script>\
        <svg><script>'https://ads.test/v'</script></svg>";
    let want = "<script>var clickTag = \"/fc?u=l&s=1\"; var i = new Image();\
        i.src = '/fp?u=p?x=1&y=2&s=1'; u = 'https://ads.test/q?id=' + id;</script>\
        <script type=application/ld+json>{\"logo\":\"\\/fp?u=g.png&s=1\"}</script>\
        <script type=text/template><img src='https://ads.test/t'></script>\
        <svg><script>'https://ads.test/v'</script></svg>";
    assert_eq!(every_split(html(), input), want);
}

#[test]
fn a_script_over_the_cap_passes_through() {
    let body = format!("x='https://ads.test/a';/*{}*/", "z".repeat(300));
    let input = format!("<script>{body}</script><script>y='https://ads.test/b'</script>");
    let mut stage =
        CreativeStage::with_limits(html(), signer(), None, Scheme::Https, 1 << 20, 64, 100);
    let mut out = Vec::new();
    for chunk in input.as_bytes().chunks(7) {
        stage.write(chunk, &mut out);
    }
    let report = stage.finish(&mut out);
    let want = format!("<script>{body}</script><script>y='/fp?u=b&s=1'</script>");
    assert_eq!(String::from_utf8(out).unwrap(), want);
    assert!(report.degraded.is_some());
}

#[test]
fn a_sheet_resolves_against_its_own_address() {
    let input = "@import 'x.css';a{b:url(../i.png);c:url(data:image/png,AAAA);d:url(#f)}";
    let want = "@import '/fp?u=s/x.css&s=1';a{b:url(/fp?u=i.png&s=1);c:url(data:image/png,AAAA);d:url(#f)}";
    assert_eq!(
        every_split_at(Creative::Css, Some("https://ads.test/s/a.css"), input),
        want
    );
}

#[test]
fn links_the_reader_follows_get_click_urls_and_everything_else_loads() {
    let input = "<link rel=stylesheet href=https://ads.test/s.css><A HREF='https://ads.test/l'>l</A>\
        <map><area shape=rect href=https://ads.test/m></map><iframe src=https://ads.test/f></iframe>\
        <svg><a xlink:href=https://ads.test/x><image href=https://ads.test/i /></a></svg>\
        <form action=https://ads.test/p></form>";
    let want = "<link rel=stylesheet href=\"/fp?u=s.css&amp;s=1\"><A HREF='/fc?u=l&amp;s=1'>l</A>\
        <map><area shape=rect href=\"/fc?u=m&amp;s=1\"></map><iframe src=\"/fp?u=f&amp;s=1\"></iframe>\
        <svg><a xlink:href=\"/fc?u=x&amp;s=1\"><image href=\"/fp?u=i&amp;s=1\" /></a></svg>\
        <form action=\"/fp?u=p&amp;s=1\"></form>";
    assert_eq!(every_split(html(), input), want);
}

#[test]
fn values_with_references_not_decoded_here_are_left_alone() {
    let input = "<img src=\"https://ads.test/&copy;\"><img src=\"https://ads.test/&#x80;\">\
        <img src=\"https://ads.test/ok&#47;x\">";
    let want = "<img src=\"https://ads.test/&copy;\"><img src=\"https://ads.test/&#x80;\">\
        <img src=\"/fp?u=ok/x&amp;s=1\">";
    assert_eq!(every_split(html(), input), want);
}

#[test]
fn css_urls_and_imports_are_rewritten_at_every_split() {
    let input = "@import \"https://ads.test/a.css\";@import url(https://ads.test/b.css);\
        a{background:url( 'https://ads.test/c' ) ;b:URL(https\\3a //ads.test/d\\)x)}\
        c{content:\"url(https://ads.test/e)\";d:-url(https://ads.test/f);e:#url(https://ads.test/g)}\
        /* url(https://ads.test/h) */f{g:url(https://ads.test/i\"j)}";
    let want = "@import \"/fp?u=a.css&s=1\";@import url(/fp?u=b.css&s=1);\
        a{background:url( '/fp?u=c&s=1' ) ;b:URL(/fp?u=d\\)x&s=1)}\
        c{content:\"url(https://ads.test/e)\";d:-url(https://ads.test/f);e:#url(https://ads.test/g)}\
        /* url(https://ads.test/h) */f{g:url(https://ads.test/i\"j)}";
    assert_eq!(every_split(Creative::Css, input), want);
}

#[test]
fn css_escapes_read_back_as_written() {
    let nasty = "a\\b\"c'd(e)f g\nh\u{7f}<i>é😀";
    for quote in [b'"', b'\''] {
        let escaped = escape_string(nasty, quote);
        assert!(!escaped.contains(char::from(quote)) || escaped.contains('\\'));
        assert!(!escaped.contains('<') && !escaped.contains('\n'));
        assert_eq!(unescape(&escaped, false).as_deref(), Some(nasty));
    }
    let escaped = escape_unquoted(nasty);
    // Quotes and parentheses only escaped; no newline or `<` at all.
    assert!(!escaped.contains(['\n', '<']));
    for (i, c) in escaped.char_indices() {
        if matches!(c, '"' | '\'' | '(' | ')') {
            assert!(escaped[..i].ends_with('\\'), "{escaped}");
        }
    }
    assert_eq!(unescape(&escaped, true).as_deref(), Some(nasty));
    // CSS's own escapes: hex with its space, CRLF as one, out-of-range as U+FFFD.
    assert_eq!(
        unescape("\\68 t\\74p\\0 \\110000x", true).as_deref(),
        Some("http\u{fffd}\u{fffd}x")
    );
    assert_eq!(unescape("a\\\r\nb\\", false).as_deref(), Some("ab"));
}

/// A token over the cap passes through unchanged, the rest is still rewritten, and memory
/// holds no more than the cap.
#[test]
fn a_css_token_over_the_cap_passes_through() {
    let signing = Rc::new(Signing::new(signer(), false, None, Scheme::Https));
    let mut css = CssRewriter::with_cap(Rc::clone(&signing), 64);
    let long = format!(
        "url(https://ads.test/{}) url(https://ads.test/x)",
        "a".repeat(100)
    );
    let mut out = Vec::new();
    for b in long.as_bytes() {
        css.write(&[*b], &mut out);
    }
    css.finish(&mut out);
    let want = format!("url(https://ads.test/{}) url(/fp?u=x&s=1)", "a".repeat(100));
    assert_eq!(String::from_utf8(out).unwrap(), want);
    assert!(css.degraded().is_some());
    assert_eq!(signing.report(None).rewritten, 1);
}

#[test]
fn bad_urls_and_strings_pass_through_and_resynchronise() {
    let input = "a{b:url(https://ads.test/x y)}c{d:url(https://ads.test/z)}\
        e{f:\"https://ads.test/\nurl(https://ads.test/w)}";
    let want = "a{b:url(https://ads.test/x y)}c{d:url(/fp?u=z&s=1)}\
        e{f:\"https://ads.test/\nurl(/fp?u=w&s=1)}";
    assert_eq!(every_split(Creative::Css, input), want);
}

#[test]
fn the_report_counts_what_happened() {
    let mut stage = CreativeStage::new(html(), signer(), None, Scheme::Https);
    let mut out = Vec::new();
    stage.write(
        b"<img src=https://ads.test/a><img src=https://b.test/a><img src=\"https://ads.test/&x;\">",
        &mut out,
    );
    let report = stage.finish(&mut out);
    assert_eq!(
        (report.rewritten, report.not_allowed, report.unreadable),
        (1, 1, 1)
    );
    assert_eq!(report.degraded, None);
}

#[test]
fn a_document_that_is_not_utf8_gets_only_ascii() {
    let latin1 = Creative::for_content_type(Some("text/html; charset=windows-1252")).unwrap();
    let input = b"<img src=\"https://ads.test/\xe9\"><img src=\"https://ads.test/a\">";
    let out = run_cut(latin1, input, &[3]);
    assert_eq!(
        out,
        b"<img src=\"https://ads.test/\xe9\"><img src=\"/fp?u=a&amp;s=1\">".to_vec()
    );
}

#[test]
fn script_and_json_bodies_are_creatives_only_in_utf8() {
    let cases = [
        (Some("application/javascript"), Some(Creative::Script)),
        (
            Some("text/javascript; charset=UTF-8"),
            Some(Creative::Script),
        ),
        (Some("application/json"), Some(Creative::Script)),
        (
            Some("application/vnd.ad+json; charset=\"utf-8\""),
            Some(Creative::Script),
        ),
        (
            Some("application/json; charset=us-ascii"),
            Some(Creative::Script),
        ),
        (Some("text/javascript; charset=iso-8859-1"), None),
        (Some("application/json; charset=utf-16"), None),
        (Some("module"), None),
        (Some("image/png"), None),
        (Some("text/plain"), None),
        (None, None),
    ];
    for (content_type, want) in cases {
        assert_eq!(
            Creative::for_content_type(content_type),
            want,
            "{content_type:?}"
        );
    }
}

#[test]
fn a_script_or_json_body_has_its_whole_url_literals_signed_at_every_split() {
    let js = "var img = new Image(); img.src = 'https://ads.test/a.png';\n\
              var clickTag = \"https://ads.test/land\"; var u = 'https://ads.test/?' + id;";
    assert_eq!(
        every_split(Creative::Script, js),
        "var img = new Image(); img.src = '/fp?u=a.png&s=1';\n\
         var clickTag = \"/fc?u=land&s=1\"; var u = 'https://ads.test/?' + id;"
    );
    let json = r#"{"img":"https:\/\/ads.test\/b.svg","other":"https://elsewhere.test/x"}"#;
    assert_eq!(
        every_split(Creative::Script, json),
        r#"{"img":"\/fp?u=b.svg&s=1","other":"https://elsewhere.test/x"}"#
    );
}

#[test]
fn a_script_body_over_the_cap_or_not_utf8_passes_through_and_says_so() {
    let body = "x = 'https://ads.test/a.png';".as_bytes();
    let (out, degraded) =
        properties::run_limits(Creative::Script, signer(), body, &[5], (1024, 64, 10));
    assert_eq!(out, body);
    assert_eq!(degraded.as_deref(), Some(super::script_body::OVER_CAP));
    let mut latin1 = b"x = 'https://ads.test/a.png'; // caf".to_vec();
    latin1.push(0xe9);
    let (out, degraded) = properties::run_limits(
        Creative::Script,
        signer(),
        &latin1,
        &[7],
        (1024, 64, 1 << 20),
    );
    assert_eq!(out, latin1);
    assert_eq!(degraded, None);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Pieces CSS and HTML are made of, to be shuffled into hostile inputs.
    const PIECES: [&str; 33] = [
        "url(",
        "URL( ",
        ")",
        "\"",
        "'",
        "\\",
        "\\29 ",
        "/*",
        "*/",
        " ",
        "\n",
        "\r\n",
        "https://ads.test/",
        "//ads.test/x",
        "a",
        "@import ",
        "#",
        "-",
        "<style>",
        "</style>",
        "<img src=",
        " style='b:url(",
        "<script>",
        "<script type=application/json>",
        "</script>",
        "`",
        "${",
        "}",
        "+",
        "clickTag=",
        "\"https:\\/\\/ads.test\\/j\"",
        "'https://ads.test/s'",
        "//c\n",
    ];

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES.to_vec()), 0..40)
            .prop_map(|parts| parts.concat())
    }

    /// Signs everything as a URL full of what could end a literal or a script.
    fn hostile() -> Signer {
        Box::new(|_, _| Some("/x?a='\"`${}\\</script><!--\n\u{2028}".to_owned()))
    }

    pub(super) fn run_limits(
        creative: Creative,
        signer: Signer,
        input: &[u8],
        cuts: &[usize],
        limits: (usize, usize, usize),
    ) -> (Vec<u8>, Option<String>) {
        let stage = CreativeStage::with_limits(
            creative,
            signer,
            None,
            Scheme::Https,
            limits.0,
            limits.1,
            limits.2,
        );
        let mut stage = stage;
        let mut out = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain([input.len()].iter()) {
            let cut = cut.clamp(at, input.len());
            stage.write(&input[at..cut], &mut out);
            at = cut;
        }
        let report = stage.finish(&mut out);
        (out, report.degraded)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// With memory limits small enough to be hit, the output still does not depend on
        /// the cuts, and with nothing allowed it is the input.
        #[test]
        fn small_limits_keep_split_invariance_and_pass_through(
            input in text(),
            mut cuts in prop::collection::vec(0usize..400, 0..5),
            css_cap in 1usize..40,
            script_cap in 1usize..200,
            kind in 0u8..3,
        ) {
            cuts.sort_unstable();
            let creative = match kind {
                0 => Creative::Html(lol_html::AsciiCompatibleEncoding::utf_8()),
                1 => Creative::Css,
                _ => Creative::Script,
            };
            let limits = (1024, css_cap, script_cap);
            let bytes = input.as_bytes();
            let (whole, degraded) = run_limits(creative, signer(), bytes, &[], limits);
            let (split, split_degraded) = run_limits(creative, signer(), bytes, &cuts, limits);
            prop_assert_eq!(&whole, &split);
            prop_assert_eq!(degraded, split_degraded);
            let refuse: Signer = Box::new(|_, _| None);
            let (same, _) = run_limits(creative, refuse, bytes, &cuts, limits);
            prop_assert_eq!(same, bytes);
            // A hostile signer cannot close a script (or open a tag) through a literal.
            let closes = |b: &[u8]| String::from_utf8_lossy(b).to_ascii_lowercase().matches("</script").count();
            let (hostile, _) = run_limits(creative, hostile(), bytes, &cuts, limits);
            prop_assert_eq!(closes(&hostile), closes(bytes));
        }

        /// Scripts of random pieces: the output is the same at any cuts and with the
        /// default limits.
        #[test]
        fn scripts_do_not_depend_on_cuts(
            input in text(),
            mut cuts in prop::collection::vec(0usize..400, 0..6),
        ) {
            cuts.sort_unstable();
            let input = format!("<script>{input}</script><p>");
            let bytes = input.as_bytes();
            let whole = run_cut(html(), bytes, &[]);
            let cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            prop_assert_eq!(run_cut(html(), bytes, &cuts), whole);
        }
    }
}
