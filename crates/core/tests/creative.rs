//! First-party creatives, checked from outside: random HTML and CSS creatives built from parts
//! whose rewritten form is known in advance, pushed through the public pipeline at random
//! cuts (ts-testkit's driver), in a compressed coding too.
//!
//! The references are independent of the stage: the WHATWG `url` crate resolves every URL the
//! way a browser does against the publisher's page, the test signer signs that resolution,
//! and html5ever (Servo's parser) reads the output the way a browser does. The expected bytes
//! are written by the generator from the documented output form (a rewritten attribute value
//! is the new value escaped in its own quotes, or in added double quotes; a rewritten CSS URL
//! keeps its quotes), so the output must also match byte for byte: nothing else changed.

use std::cell::RefCell;
use std::rc::Rc;

use html5ever::tendril::TendrilSink;
use markup5ever_rcdom::{Handle, NodeData, RcDom};
use proptest::prelude::*;
use trusted_server_core::first_party::creative::{
    self, Creative, CreativeOutcome, Placement, Signer, UrlUse,
};
use trusted_server_core::{BodyReport, Codec};
use trusted_server_settings::Scheme;

#[allow(unused_imports)] // the shared helpers this file does not need
mod support;
use support::{decode, encode};

/// Markup without an address (as an auction's), shown in an https page.
const NO_ADDRESS: Placement<'static> = Placement {
    address: None,
    page_scheme: Scheme::Https,
};

/// The page the creative is served in: what its relative URLs resolve against.
const BASE: &str = "https://www.publisher.test/first-party/proxy?tsurl=x";

fn base() -> url::Url {
    url::Url::parse(BASE).unwrap()
}

/// Allows `ads.test` and its subdomains, by the `url` crate's reading of the host.
fn allowed(target: &url::Url) -> bool {
    target.scheme().starts_with("http")
        && target
            .host_str()
            .is_some_and(|h| h == "ads.test" || h.ends_with(".ads.test"))
}

/// The first-party URL for a target, from the `url` crate's normalised form. The `&` and
/// `=` in it must be escaped in HTML. A link the reader follows gets the click route.
fn first_party(target: &url::Url, use_: UrlUse) -> String {
    let encoded: String =
        url::form_urlencoded::byte_serialize(target.as_str().as_bytes()).collect();
    let route = match use_ {
        UrlUse::Load => "proxy",
        UrlUse::Follow => "click",
    };
    format!("/first-party/{route}?tsurl={encoded}&tsexp=9&tstoken=t")
}

/// The test signer, recording what it was offered.
fn signer(offered: &Rc<RefCell<Vec<String>>>) -> Signer {
    let offered = Rc::clone(offered);
    Box::new(move |target: &str, use_: UrlUse| {
        offered.borrow_mut().push(target.to_owned());
        let parsed = url::Url::parse(target).ok()?;
        allowed(&parsed).then(|| first_party(&parsed, use_))
    })
}

/// What the browser ends up reading for a URL written as `value` (decoded): the signed URL
/// for an allowed target, the value itself otherwise; for a URL the creative loads.
fn after(value: &str) -> String {
    after_as(value, UrlUse::Load)
}

/// [`after`] for a URL used as `use_`.
fn after_as(value: &str, use_: UrlUse) -> String {
    match base().join(value) {
        Ok(target) if allowed(&target) => first_party(&target, use_),
        _ => value.to_owned(),
    }
}

/// Runs `body` (plain) through the creative pipeline in `codec`, cut at `cuts` of the encoded
/// body, and returns the plain output and report.
fn run(
    creative: Creative,
    body: &[u8],
    codec: Codec,
    cuts: &[usize],
) -> (Vec<u8>, BodyReport<CreativeOutcome>) {
    let offered = Rc::new(RefCell::new(Vec::new()));
    let encoded = encode(codec, body);
    let cuts = ts_testkit::cut_points(
        &cuts.iter().map(|&c| (c % 65536) as u16).collect::<Vec<_>>(),
        encoded.len(),
    );
    let pipeline = creative::pipeline(codec, creative, signer(&offered), NO_ADDRESS, Vec::new());
    let (out, report) = ts_testkit::drive(
        pipeline,
        ts_testkit::pieces(&encoded, &cuts),
        ts_testkit::Flush::EveryOtherPiece,
        || {},
    )
    .expect("an in-memory creative never fails");
    (decode(codec, &out), report)
}

fn html() -> Creative {
    Creative::for_content_type(Some("text/html; charset=utf-8")).unwrap()
}

// ---- Generated creatives -------------------------------------------------------------------

/// URLs as written (decoded), allowed or not, absolute, scheme-relative or relative.
fn url_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..50).prop_map(|n| format!("https://ads.test/i/{n}.png?a=1&b=2")),
        (0u8..50).prop_map(|n| format!("HTTPS://Cdn.Ads.Test/x{n}")),
        (0u8..50).prop_map(|n| format!("//ads.test/s{n}.css")),
        (0u8..50).prop_map(|n| format!("http://ads.test:8080/p?q={n}")),
        Just(" https://ads.test/padded ".to_owned()),
        Just("https://other.test/z.png".to_owned()),
        Just("//other.test/z".to_owned()),
        Just("/local.png".to_owned()),
        Just("img/a.png".to_owned()),
        Just("data:image/png;base64,AAAA".to_owned()),
        Just("https://ads.test.other.test/evil".to_owned()),
    ]
}

/// A decoded attribute value written as HTML, in one of several spellings the browser reads
/// back as the same value.
fn spelled(value: &str, style: u8) -> String {
    match style % 3 {
        0 => value.replace('&', "&amp;"),
        // Bare `&` where the browser leaves it as text, `/` as numeric references.
        1 => value.replace('/', "&#47;"),
        _ => value.replace('&', "&#x26;").replace('.', "&#46;"),
    }
}

/// One attribute: its name, the raw text after `=` as written, the value the browser reads in
/// the input, and the value it must read in the output.
#[derive(Debug, Clone)]
struct Attr {
    name: &'static str,
    decoded: String,
    after: String,
    spelling: u8,
    quote: u8,
}

impl Attr {
    fn quote_char(&self) -> Option<char> {
        match self.quote % 3 {
            0 => Some('"'),
            1 => Some('\''),
            // Unquoted only where the raw text allows it.
            _ if !self
                .raw_inner()
                .contains([' ', '"', '\'', '=', '<', '>', '`', '\t', '\n']) =>
            {
                None
            }
            _ => Some('"'),
        }
    }

    fn raw_inner(&self) -> String {
        spelled(&self.decoded, self.spelling)
    }

    /// The name and `=` as written: in upper case, or with spaces around `=`, sometimes.
    fn prefix(&self) -> String {
        let name = if self.spelling & 4 != 0 {
            self.name.to_ascii_uppercase()
        } else {
            self.name.to_owned()
        };
        if self.spelling & 8 != 0 {
            format!("{name} \n= ")
        } else {
            format!("{name}=")
        }
    }

    fn write(&self) -> String {
        let prefix = self.prefix();
        match self.quote_char() {
            Some('"') => format!("{prefix}\"{}\"", self.raw_inner().replace('"', "&quot;")),
            Some(q) => format!("{prefix}{q}{}{q}", self.raw_inner().replace(q, "&#39;")),
            None => format!("{prefix}{}", self.raw_inner()),
        }
    }

    /// As the stage writes it: unchanged when nothing in it was signed, else the new value
    /// escaped (`&`, and the quote) in its quotes, double quotes for an unquoted one.
    fn write_after(&self) -> String {
        if self.after == self.decoded {
            return self.write();
        }
        let q = self.quote_char().unwrap_or('"');
        let mut escaped = self.after.replace('&', "&amp;");
        if q == '"' {
            escaped = escaped.replace('"', "&quot;");
        } else {
            escaped = escaped.replace('\'', "&#39;");
        }
        format!("{}{q}{escaped}{q}", self.prefix())
    }
}

/// A piece of a creative: its input, its expected output, and the attributes html5ever must
/// read in the output, in document order.
#[derive(Debug, Clone)]
struct Piece {
    input: String,
    output: String,
    attrs: Vec<(String, String, String)>,
    /// The same, as the browser reads them in the input.
    attrs_before: Vec<(String, String, String)>,
    /// The text of a `<style>` element, after.
    sheet: Option<String>,
}

/// A CSS URL reference: input and output text.
fn css_url() -> impl Strategy<Value = (String, String)> {
    (url_text(), 0u8..4).prop_map(|(u, form)| {
        let u = u.trim().to_owned();
        let a = after(&u);
        match form {
            0 => (format!("url({u})"), format!("url({a})")),
            1 => (format!("url( \"{u}\" )"), format!("url( \"{a}\" )")),
            2 => (format!("URL('{u}')"), format!("URL('{a}')")),
            _ => (format!("@import \"{u}\";"), format!("@import \"{a}\";")),
        }
    })
}

/// CSS text around URLs that must stay as it is: comments, strings, other functions.
fn css_decoy() -> impl Strategy<Value = String> {
    (url_text(), 0u8..5).prop_map(|(u, form)| {
        let u = u.trim();
        match form {
            0 => format!("/* url({u}) */"),
            1 => format!("a::after{{content:\"url({u})\"}}"),
            2 => format!("b{{x:-url({u});y:#url({u})}}"),
            3 => "c{background:url(data:image/gif;base64,R0lG) no-repeat}".to_owned(),
            _ => "d { color: red }\n".to_owned(),
        }
    })
}

/// A small style sheet: input and output text.
fn sheet() -> impl Strategy<Value = (String, String)> {
    prop::collection::vec(
        prop_oneof![css_url(), css_decoy().prop_map(|d| (d.clone(), d))],
        0..5,
    )
    .prop_map(|parts| {
        let input = parts
            .iter()
            .map(|p| p.0.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let output = parts
            .iter()
            .map(|p| p.1.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        (input, output)
    })
}

fn attr(name: &'static str, decoded: String, after: String, spelling: u8, quote: u8) -> Attr {
    Attr {
        name,
        decoded,
        after,
        spelling,
        quote,
    }
}

fn element(tag: &str, attrs: &[Attr], content: &str) -> Piece {
    let open = |after: bool| {
        let mut s = format!("<{tag}");
        for a in attrs {
            s.push(' ');
            s.push_str(&if after { a.write_after() } else { a.write() });
        }
        s.push('>');
        s
    };
    let void = matches!(tag, "img" | "meta" | "base" | "area");
    let close = if void {
        String::new()
    } else {
        format!("{content}</{tag}>")
    };
    Piece {
        input: format!("{}{close}", open(false)),
        output: format!("{}{close}", open(true)),
        attrs: attrs
            .iter()
            .map(|a| (tag.to_owned(), a.name.to_owned(), a.after.clone()))
            .collect(),
        attrs_before: attrs
            .iter()
            .map(|a| (tag.to_owned(), a.name.to_owned(), a.decoded.clone()))
            .collect(),
        sheet: None,
    }
}

fn piece() -> impl Strategy<Value = Piece> {
    let single = (
        prop::sample::select(vec![
            ("img", "src"),
            ("a", "href"),
            ("area", "href"),
            ("video", "poster"),
            ("object", "data"),
            ("iframe", "src"),
            ("div", "background"),
            ("button", "formaction"),
            ("img", "data-src"),
            ("div", "data-bg"),
            ("video", "src"),
            ("track", "src"),
            // Not URL attributes here: must stay.
            ("div", "title"),
            ("embed", "data"),
            // `<base href>` changes how every later URL resolves: its own tests are in
            // `first_party/creative/tests.rs`.
        ]),
        url_text(),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|((tag, name), u, spelling, quote)| {
            let rewritten = !matches!((tag, name), (_, "title") | ("embed", _));
            // Links are told apart by the HTML spec's element list, not by the stage's code.
            let use_ = match tag {
                "a" | "area" => UrlUse::Follow,
                _ => UrlUse::Load,
            };
            let a = if rewritten {
                after_as(&u, use_)
            } else {
                u.clone()
            };
            element(tag, &[attr(name, u, a, spelling, quote)], "x")
        });
    let srcset = (url_text(), url_text(), any::<u8>(), any::<u8>()).prop_map(|(u1, u2, s, q)| {
        let (u1, u2) = (u1.trim().to_owned(), u2.trim().to_owned());
        let decoded = format!("{u1} 1x, {u2} 2x");
        let after = format!("{} 1x, {} 2x", after(&u1), after(&u2));
        element("img", &[attr("srcset", decoded, after, s, q)], "")
    });
    let style_attr = (url_text(), any::<u8>(), any::<u8>()).prop_map(|(u, s, q)| {
        let u = u.trim().to_owned();
        let decoded = format!("color:red;background:url('{u}') no-repeat");
        let after = format!("color:red;background:url('{}') no-repeat", after(&u));
        element("div", &[attr("style", decoded, after, s, q)], "y")
    });
    let refresh = (url_text(), any::<u8>()).prop_map(|(u, s)| {
        let u = u.trim().to_owned();
        let equiv = attr("http-equiv", "refresh".into(), "refresh".into(), 0, 0);
        let content = attr(
            "content",
            format!("0;url={u}"),
            format!("0;url={}", after(&u)),
            s,
            0,
        );
        element("meta", &[equiv, content], "")
    });
    let style = sheet().prop_map(|(input, output)| Piece {
        input: format!("<style>{input}</style>"),
        output: format!("<style>{output}</style>"),
        attrs: Vec::new(),
        attrs_before: Vec::new(),
        sheet: Some(output),
    });
    // Markup that looks like URLs but is text to the browser.
    let decoy = (url_text(), 0u8..4).prop_map(|(u, form)| {
        let text = match form {
            0 => format!("<!-- <img src=\"{u}\"> -->"),
            // A URL inside a longer string, and one a script builds: not whole literals.
            1 => format!("<script>var s='<img src=\"{u}\">';url('{u}' + x)</script>"),
            2 => format!("<textarea><img src=\"{u}\"></textarea>"),
            _ => format!("<p>see {} &amp; more</p>", u.replace('<', "")),
        };
        Piece {
            input: text.clone(),
            output: text,
            attrs: Vec::new(),
            attrs_before: Vec::new(),
            sheet: None,
        }
    });
    // A string literal that is a whole URL: signed when absolute and allowed (a value with
    // spaces is not a URL literal to the stage).
    let script = (url_text(), any::<bool>()).prop_map(|(u, json)| {
        let whole = !u.contains(' ') && !u.starts_with(['/', 'i']) || u.starts_with("//");
        let after = if whole { after(&u) } else { u.clone() };
        let (input, output) = if json {
            (
                format!("<script type=application/json>{{\"u\":\"{u}\"}}</script>"),
                format!("<script type=application/json>{{\"u\":\"{after}\"}}</script>"),
            )
        } else {
            (
                format!("<script>new Image().src = '{u}';</script>"),
                format!("<script>new Image().src = '{after}';</script>"),
            )
        };
        let attrs: Vec<(String, String, String)> = if json {
            vec![("script".into(), "type".into(), "application/json".into())]
        } else {
            Vec::new()
        };
        Piece {
            input,
            output,
            attrs_before: attrs.clone(),
            attrs,
            sheet: None,
        }
    });
    prop_oneof![3 => single, 1 => srcset, 1 => style_attr, 1 => refresh, 1 => style, 1 => decoy, 1 => script]
}

fn creative_html() -> impl Strategy<Value = (String, String, Vec<Piece>)> {
    prop::collection::vec(piece(), 0..8).prop_map(|pieces| {
        let head = "<!doctype html><html><head><meta charset=utf-8></head><body>";
        let tail = "</body></html>";
        let input = format!(
            "{head}{}{tail}",
            pieces.iter().map(|p| p.input.as_str()).collect::<String>()
        );
        let output = format!(
            "{head}{}{tail}",
            pieces.iter().map(|p| p.output.as_str()).collect::<String>()
        );
        (input, output, pieces)
    })
}

// ---- html5ever's reading -------------------------------------------------------------------

fn parse(html: &[u8]) -> RcDom {
    html5ever::parse_document(RcDom::default(), Default::default())
        .from_utf8()
        .read_from(&mut &html[..])
        .expect("reading from memory")
}

/// Every element's (tag, attribute, value), and every `<style>`'s text, in document order.
fn walk(node: &Handle, attrs: &mut Vec<(String, String, String)>, sheets: &mut Vec<String>) {
    if let NodeData::Element {
        name, attrs: list, ..
    } = &node.data
    {
        let tag = name.local.to_string();
        for a in list.borrow().iter() {
            attrs.push((tag.clone(), a.name.local.to_string(), a.value.to_string()));
        }
        if tag == "style" {
            let text: String = node
                .children
                .borrow()
                .iter()
                .filter_map(|c| match &c.data {
                    NodeData::Text { contents } => Some(contents.borrow().to_string()),
                    _ => None,
                })
                .collect();
            sheets.push(text);
        }
    }
    for child in node.children.borrow().iter() {
        walk(child, attrs, sheets);
    }
}

fn reading(html: &[u8]) -> (Vec<(String, String, String)>, Vec<String>) {
    let dom = parse(html);
    let (mut attrs, mut sheets) = (Vec::new(), Vec::new());
    walk(&dom.document, &mut attrs, &mut sheets);
    // The head's `<meta charset>` is the frame, not a piece.
    attrs.retain(|(tag, name, _)| !(tag == "meta" && name == "charset"));
    (attrs, sheets)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The output is the expected one, byte for byte, whatever the cuts, and html5ever reads
    /// in it exactly the signed URLs where the input had allowed absolute URLs, and every
    /// other attribute and sheet as it was.
    #[test]
    fn html_creatives_read_signed_urls_and_nothing_else_changes(
        (input, expected, pieces) in creative_html(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        gzip in any::<bool>(),
    ) {
        let codec = if gzip { Codec::Gzip } else { Codec::Identity };
        let (out, report) = run(html(), input.as_bytes(), codec, &cuts);
        prop_assert_eq!(String::from_utf8_lossy(&out), expected.as_str());
        let (whole, _) = run(html(), input.as_bytes(), Codec::Identity, &[]);
        prop_assert_eq!(&whole, &out);

        // html5ever reads what the generator meant in the input, and in the output.
        let before: Vec<_> = pieces.iter().flat_map(|p| p.attrs_before.iter().cloned()).collect();
        prop_assert_eq!(&reading(input.as_bytes()).0, &before);
        let want: Vec<_> = pieces.iter().flat_map(|p| p.attrs.iter().cloned()).collect();
        let (attrs, sheets) = reading(&out);
        prop_assert_eq!(&attrs, &want);
        let want_sheets: Vec<String> = pieces.iter().filter_map(|p| p.sheet.clone()).collect();
        prop_assert_eq!(&sheets, &want_sheets);
        prop_assert!(report.stages.creative.as_ref().is_some_and(|c| c.degraded.is_none()));
    }

    /// A creative with nothing to sign comes out byte for byte, and the signer was offered
    /// only absolute URLs.
    #[test]
    fn a_signer_that_allows_nothing_leaves_every_byte(
        (input, _, _) in creative_html(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let offered = Rc::new(RefCell::new(Vec::new()));
        let recorder = Rc::clone(&offered);
        let refuse: Signer = Box::new(move |t: &str, _| {
            recorder.borrow_mut().push(t.to_owned());
            None
        });
        let pipeline = creative::pipeline(Codec::Identity, html(), refuse, NO_ADDRESS, Vec::new());
        let cuts = ts_testkit::cut_points(
            &cuts.iter().map(|&c| (c % 65536) as u16).collect::<Vec<_>>(),
            input.len(),
        );
        let (out, report) = ts_testkit::drive(
            pipeline,
            ts_testkit::pieces(input.as_bytes(), &cuts),
            ts_testkit::Flush::Never,
            || {},
        )
        .unwrap();
        prop_assert_eq!(String::from_utf8_lossy(&out), input.as_str());
        for target in offered.borrow().iter() {
            let parsed = url::Url::parse(target);
            prop_assert!(
                parsed.as_ref().is_ok_and(|u| u.scheme().starts_with("http")),
                "offered {:?}", target
            );
        }
        prop_assert_eq!(report.stages.creative.unwrap().rewritten, 0);
    }

    /// CSS creatives: the expected sheet, byte for byte, at any cuts, in any coding.
    #[test]
    fn css_creatives_rewrite_url_and_import_only(
        (input, expected) in sheet(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        brotli in any::<bool>(),
    ) {
        let codec = if brotli { Codec::Brotli } else { Codec::Identity };
        let css = Creative::for_content_type(Some("text/css")).unwrap();
        let (out, _) = run(css, input.as_bytes(), codec, &cuts);
        prop_assert_eq!(String::from_utf8_lossy(&out), expected.as_str());
    }
}

#[test]
fn only_html_css_and_utf8_script_are_creatives_to_rewrite() {
    assert!(matches!(
        Creative::for_content_type(Some("text/html; charset=windows-1252")),
        Some(Creative::Html(_))
    ));
    assert_eq!(
        Creative::for_content_type(Some("TEXT/CSS")),
        Some(Creative::Css)
    );
    // JavaScript and JSON get their whole-URL literals signed, in UTF-8 only.
    assert_eq!(
        Creative::for_content_type(Some("application/javascript")),
        Some(Creative::Script)
    );
    for other in [
        None,
        Some("image/png"),
        Some("image/svg+xml"),
        Some("application/javascript; charset=iso-8859-1"),
        Some("text/html; charset=shift_jis"),
        Some("text/css; charset=utf-16"),
        Some("font/woff2"),
    ] {
        assert_eq!(Creative::for_content_type(other), None, "{other:?}");
    }
}

/// A hostile signer's answer (quotes, `<`, `&`, parentheses, backslash, newline) is read back
/// exactly by html5ever, in every quoting of every kind of value.
#[test]
fn any_signed_url_is_escaped_so_the_browser_reads_it_exactly() {
    let nasty = "/fp?u=1&v=\"2\"&w='3'<x>(y)\\z\n";
    let hostile: Signer = Box::new(move |_, _| Some(nasty.to_owned()));
    let input = "<img src=https://a.test/x><img src='https://a.test/x'>\
        <img src=\"https://a.test/x\"><img srcset=\"https://a.test/x 2x\">\
        <meta http-equiv=Refresh content='1;url=https://a.test/x'>\
        <div style=\"background:url(https://a.test/x)\"></div>\
        <div style=\"background:url('https://a.test/x')\"></div>\
        <style>a{background:url(https://a.test/x)}b{background:url(\"https://a.test/x\")}</style>";
    let pipeline = creative::pipeline(Codec::Identity, html(), hostile, NO_ADDRESS, Vec::new());
    let (out, report) = ts_testkit::drive(
        pipeline,
        [input.as_bytes()],
        ts_testkit::Flush::Never,
        || {},
    )
    .unwrap();
    let (attrs, sheets) = reading(&out);
    let values: Vec<&str> = attrs.iter().map(|(_, _, v)| v.as_str()).collect();
    assert_eq!(
        values,
        [
            nasty,
            nasty,
            nasty,
            &format!("{nasty} 2x"),
            "Refresh",
            &format!("1;url={nasty}"),
            // CSS escapes: what a CSS tokenizer reads back is checked in the unit tests.
            "background:url(/fp?u=1&v=\\\"2\\\"&w=\\'3\\'\\3c x>\\(y\\)\\\\z\\a )",
            "background:url('/fp?u=1&v=\"2\"&w=\\'3\\'\\3c x>(y)\\\\z\\a ')",
        ],
        "{}",
        String::from_utf8_lossy(&out)
    );
    assert_eq!(sheets.len(), 1);
    assert!(!sheets[0].contains('<'), "{}", sheets[0]);
    assert_eq!(report.stages.creative.unwrap().rewritten, 9);
}

/// A 3 MiB attribute (over the parser's 1 MiB) and a 3 MiB CSS URL pass through whole, and
/// the report says the creative degraded; a 3 MiB `data:` URL in CSS is not even held.
#[test]
fn huge_tokens_pass_through_and_the_report_says_so() {
    let huge = "a".repeat(3 << 20);
    let page = format!("<img src=\"https://ads.test/{huge}\"><img src=\"https://ads.test/after\">");
    let (out, report) = run(html(), page.as_bytes(), Codec::Identity, &[100, 70_000]);
    assert!(out == page.as_bytes());
    let creative = report.stages.creative.unwrap();
    assert!(creative.degraded.is_some_and(|d| d.contains("gave up")));

    let css = Creative::for_content_type(Some("text/css")).unwrap();
    let sheet = format!(
        "a{{background:url(https://ads.test/{huge})}}b{{background:url(https://ads.test/b)}}"
    );
    let (out, report) = run(css, sheet.as_bytes(), Codec::Identity, &[5, 1 << 20]);
    let want = format!(
        "a{{background:url(https://ads.test/{huge})}}b{{background:url({})}}",
        after("https://ads.test/b")
    );
    assert!(out == want.as_bytes());
    assert!(report
        .stages
        .creative
        .unwrap()
        .degraded
        .is_some_and(|d| d.contains("16 KiB")));

    let sheet = format!("a{{background:url(data:image/png;base64,{huge})}}");
    let (out, report) = run(css, sheet.as_bytes(), Codec::Identity, &[5, 1 << 20]);
    assert!(out == sheet.as_bytes());
    assert_eq!(report.stages.creative.unwrap().degraded, None);
}

#[test]
fn images_and_utf16_bodies_are_not_touched() {
    // A UTF-16 creative passes through whole (its byte order mark says so).
    let page = b"\xff\xfe<\0i\0m\0g\0";
    let (out, report) = run(html(), page, Codec::Identity, &[1]);
    assert_eq!(out, page);
    assert!(report.stages.utf16);
}
