//! The inline Flight rewriting (`crate::stages::rsc`'s `InlineFlight`) as the HTML stage
//! drives it: holding across scripts, and the cap.

use super::{HtmlReport, HtmlStage};
use crate::body::stage::BodyStage;
use crate::stages::segments::MARKUP_STEP;
use crate::url_rewrite::UrlRule;
use lol_html::AsciiCompatibleEncoding;

const ORIGIN: &str = "origin.example.com";

// Next.js's escaping, written independently of the stage's encoder.
use crate::stages::rsc::next_js_escape as escape;

fn push(attrs: &str, chunk: &str) -> String {
    format!(
        "<script{attrs}>self.__next_f.push([1,\"{}\"])</script>",
        escape(chunk)
    )
}

fn run(input: &[u8], host: &str, max_held: usize, cuts: &[usize]) -> Vec<u8> {
    let rule = UrlRule::new(ORIGIN, "https", host);
    let utf8 = AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap();
    let mut stage = HtmlStage::new(rule, utf8, Some(max_held));
    let mut out = Vec::new();
    let mut at = 0;
    for &cut in cuts.iter().chain([&input.len()]) {
        stage.write(&input[at..cut.max(at)], &mut out);
        at = cut.max(at);
    }
    stage.finish(&mut out);
    out
}

fn run_chunked(input: &[u8], host: &str, max_held: usize, chunk: usize) -> Vec<u8> {
    let cuts: Vec<usize> = (chunk..input.len()).step_by(chunk).collect();
    run(input, host, max_held, &cuts)
}

/// A page whose text row starts in one script and ends two scripts later, and the page as
/// it must come out: the whole row in the first string, with its new length.
fn crossing_page(host: &str) -> (String, String) {
    let text = "Visit https://origin.example.com/a — é ✓ 😀 <b>&</b> //origin.example.com/b";
    let (a, rest) = text.split_at(20);
    let (b, c) = rest.split_at(rest.len() - 9);
    let row_start = format!(
        "0:[\"$\",\"a\",null,{{\"href\":\"https://{ORIGIN}/y\"}}]\n1:T{:x},{a}",
        text.len()
    );
    let input = [
        format!("<html><body><a href=\"https://{ORIGIN}/x\">x</a>"),
        "<script>(self.__next_f=self.__next_f||[]).push([0])</script>".to_owned(),
        push("", &row_start),
        format!("<div>between https://{ORIGIN}/z</div>"),
        push(" nonce=\"n0nce\" async", b),
        push("", &format!("{c}2:\"$L1\"\n")),
        "</body></html>".to_owned(),
    ]
    .concat();
    let new_text = text.replace(ORIGIN, host);
    let whole = format!(
        "0:[\"$\",\"a\",null,{{\"href\":\"https://{host}/y\"}}]\n1:T{:x},{new_text}2:\"$L1\"\n",
        new_text.len()
    );
    let expected = [
        format!("<html><body><a href=\"https://{host}/x\">x</a>"),
        "<script>(self.__next_f=self.__next_f||[]).push([0])</script>".to_owned(),
        push("", &whole),
        format!("<div>between https://{host}/z</div>"),
        push(" nonce=\"n0nce\" async", ""),
        push("", ""),
        "</body></html>".to_owned(),
    ]
    .concat();
    (input, expected)
}

#[test]
fn a_text_row_across_scripts_gets_its_new_length_at_every_split() {
    for host in ["p.test", "www.a-much-longer-first-party-host.example"] {
        let (input, expected) = crossing_page(host);
        let input = input.as_bytes();
        for cut in 0..=input.len() {
            let out = run(input, host, 1 << 20, &[cut]);
            assert_eq!(String::from_utf8_lossy(&out), expected, "{host} cut {cut}");
        }
        for chunk in [1, 2, 3, 7] {
            let out = run_chunked(input, host, 1 << 20, chunk);
            assert_eq!(
                String::from_utf8_lossy(&out),
                expected,
                "{host} chunk {chunk}"
            );
        }
    }
}

#[test]
fn output_before_an_open_row_streams_and_only_the_rest_is_held() {
    let (input, _) = crossing_page("p.test");
    let rule = UrlRule::new(ORIGIN, "https", "p.test");
    let utf8 = AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap();
    let mut stage = HtmlStage::new(rule, utf8, Some(1 << 20));
    let mut out = Vec::new();
    let first_end = input.find("</script><div>").unwrap() + "</script><div>between".len();
    stage.write(&input.as_bytes()[..first_end], &mut out);
    let out = String::from_utf8(out).unwrap();
    // Everything up to the open row went out, rewritten; the row itself did not.
    assert!(out.ends_with("\\\"https://p.test/y\\\"}]\\n1:T"), "{out}");
}

#[test]
fn a_row_over_the_cap_comes_out_byte_identical() {
    let text = format!("https://{ORIGIN}/ ").repeat(200);
    let input = [
        push("", &format!("1:T{:x},{}", text.len(), &text[..1000])),
        format!("<p>https://{ORIGIN}/</p>"),
        push("", &format!("{}0:\"https://{ORIGIN}/\"\n", &text[1000..])),
    ]
    .concat();
    let expected = [
        push("", &format!("1:T{:x},{}", text.len(), &text[..1000])),
        "<p>https://p.test/</p>".to_owned(),
        push("", &format!("{}0:\"https://p.test/\"\n", &text[1000..])),
    ]
    .concat();
    for chunk in [1, 5, 4096] {
        let out = run_chunked(input.as_bytes(), "p.test", 1024, chunk);
        assert_eq!(String::from_utf8_lossy(&out), expected, "chunk {chunk}");
    }
}

/// `input` through the HTML stage at the 1 KiB cap, in pieces of `chunk` bytes, with
/// nothing to rewrite (the request host is not the origin's).
fn run_at_small_cap(input: &str, chunk: usize) -> (Vec<u8>, HtmlReport) {
    let rule = UrlRule::new(ORIGIN, "https", "p.test");
    let utf8 = AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap();
    let mut stage = HtmlStage::new(rule, utf8, Some(1024));
    let mut out = Vec::new();
    for piece in input.as_bytes().chunks(chunk) {
        stage.write(piece, &mut out);
    }
    let report = stage.finish(&mut out);
    (out, report)
}

#[test]
fn outside_a_string_the_cap_is_passed_by_at_most_one_markup_step() {
    // A text row opened in one push and ended in the next, with 100 KB of markup between
    // them (one 100 KB text token, and 2,000 small tags): the markup waits behind the row
    // until the cap is passed, and must not pile up by a whole input slice first.
    const { assert!(MARKUP_STEP <= 512, "the bound the docs give") };
    let text = "A".repeat(600);
    let (a, b) = text.split_at(300);
    for markup in [
        format!("<p>{}</p>", "x".repeat(100_000)),
        "<i>xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</i>".repeat(2_000),
    ] {
        let input = [
            push("", &format!("1:T{:x},{a}", text.len())),
            markup,
            push("", b),
        ]
        .concat();
        for chunk in [7, 4096, 1 << 20] {
            let (out, report) = run_at_small_cap(&input, chunk);
            assert!(report.rsc.degraded.is_some(), "chunk {chunk}");
            assert!(
                report.rsc.peak_held <= 1024 + MARKUP_STEP,
                "chunk {chunk}: peak {}",
                report.rsc.peak_held
            );
            assert_eq!(out, input.as_bytes(), "as it came: nothing to rewrite");
        }
    }
}

#[test]
fn inside_a_string_the_cap_is_passed_by_at_most_one_character() {
    // A text row under the cap, held across markup; nothing is rewritten, so what is held
    // is what the cap counts, and the cap is passed inside the second string, in the
    // middle of a `✓` unless the input is cut there. To rule out: comparing only where a
    // piece of input ends (one 16 KiB slice).
    let text = format!("{}{}", "A".repeat(300), "✓".repeat(200));
    let (a, b) = text.split_at(300);
    let input = [
        push("", &format!("1:T{:x},{a}", text.len())),
        format!("<p>{}</p>", "x".repeat(200)),
        push("", b),
    ]
    .concat();
    let mut outputs = Vec::new();
    for chunk in [1, 2, 3, 5, 4096, 1 << 20] {
        let (out, report) = run_at_small_cap(&input, chunk);
        assert!(report.rsc.degraded.is_some(), "chunk {chunk}");
        assert!(
            (1025..=1024 + 4).contains(&report.rsc.peak_held),
            "chunk {chunk}: peak {}",
            report.rsc.peak_held
        );
        outputs.push(String::from_utf8(out).expect("whole characters in each string"));
    }
    assert!(outputs.iter().all(|o| *o == outputs[0]), "{outputs:#?}");
    // The row went as it came, split where the cap was passed: its length unchanged.
    assert!(outputs[0].contains(&format!("1:T{:x},{a}✓", text.len())));
}

#[test]
fn held_markup_over_the_cap_releases_the_original_row() {
    let text = format!("https://{ORIGIN}/ ").repeat(4);
    let filler = "<p>filler</p>".repeat(200);
    let input = [
        push("", &format!("1:T{:x},{}", text.len(), &text[..10])),
        filler.clone(),
        push("", &text[10..]),
    ]
    .concat();
    let out = run_chunked(input.as_bytes(), "p.test", 1024, 512);
    let out = String::from_utf8(out).unwrap();
    // Released as it came: the original length and text, then the rest unheld.
    assert!(
        out.starts_with(&push("", &format!("1:T{:x},{}", text.len(), &text[..10]))),
        "{out}"
    );
    assert!(out.contains(&filler));
    assert!(out.ends_with(&push("", &text[10..])), "{out}");
}

#[test]
fn a_possible_url_at_a_string_end_is_decided_by_its_next_bytes_despite_the_cap() {
    // The first string ends with a possible URL; the second string decides it. Held
    // output passes the cap inside the second string (a long row), or in the markup
    // between (filler). Either way the URL comes out whole: rewritten when the next bytes
    // make it the origin, as it came when they make it another host.
    let filler = "<p>filler</p>".repeat(100);
    let long = "x".repeat(1100);
    for (end, next, rewritten) in [
        ("https://origin.exa", "mple.com/", "https://p.test/"),
        (
            "//origin.example.com",
            ".evil.test/",
            "//origin.example.com.evil.test/",
        ),
    ] {
        for (between, tail) in [("", long.as_str()), (filler.as_str(), "")] {
            let input = [
                push("", &format!("0:\"https://{ORIGIN}/\"\n1:\"{end}")),
                between.to_owned(),
                push("", &format!("{next}{tail}\"\n")),
            ]
            .concat();
            for chunk in [1, 7, 4096] {
                let out = run_chunked(input.as_bytes(), "p.test", 1024, chunk);
                let out = String::from_utf8(out).unwrap();
                let stream: String = out
                    .split("self.__next_f.push([1,\"")
                    .skip(1)
                    .map(|s| s.split("\"])").next().unwrap())
                    .collect();
                let expected = escape(&format!("0:\"https://p.test/\"\n1:\"{rewritten}{tail}\"\n"));
                let released = escape(&format!("0:\"https://p.test/\"\n1:\"{end}{next}{tail}\"\n"));
                assert!(
                    stream == expected || (!between.is_empty() && stream == released),
                    "{end} + {next}, {} bytes between, chunk {chunk}: {out}",
                    between.len()
                );
                assert!(out.contains(between));
            }
        }
    }
}

#[test]
fn a_possible_url_held_over_the_cap_in_markup_stays_in_its_string() {
    // The last string ends with a possible URL, then markup passes the cap: no later
    // string is sure to come (the document ends, a base64 push or a damaged one follows),
    // so the URL goes out in the string it came from, as it came, before the markup.
    use base64::Engine as _;
    let filler = "<p>filler</p>".repeat(100);
    let binary = base64::engine::general_purpose::STANDARD.encode(b".evil.test/\"\n");
    for after in [
        "</body></html>".to_owned(),
        format!("<script>self.__next_f.push([3,\"{binary}\"])</script>"),
        "<script>self.__next_f.push([1,foo])</script>".to_owned(),
    ] {
        let flight = |host: &str| push("", &format!("0:\"https://{host}/\"\n1:\"//{ORIGIN}"));
        let input = [flight(ORIGIN), filler.clone(), after.clone()].concat();
        let expected = [flight("p.test"), filler.clone(), after.clone()].concat();
        for chunk in [1, 7, 4096] {
            let out = run_chunked(input.as_bytes(), "p.test", 1024, chunk);
            assert_eq!(
                String::from_utf8_lossy(&out),
                expected,
                "{after} chunk {chunk}"
            );
        }
    }
}

#[test]
fn damage_neither_panics_nor_loses_a_byte() {
    let good = push("", &format!("0:\"https://{ORIGIN}/\"\n"));
    let good_out = push("", "0:\"https://p.test/\"\n");
    // (damaged script, how it comes out): bytes decided before the damage keep their
    // rewrite; from the damage on, everything Flight passes through as it came.
    let cases = [
        // A bad hex length.
        (
            format!("<script>self.__next_f.push([1,\"1:Tzz,https://{ORIGIN}/\"])</script>"),
            None,
        ),
        // A truncated escape, after a URL that was already decided.
        (
            format!(
                "<script>self.__next_f.push([1,\"1:\\\"https://{ORIGIN}/\\u00\"])</script>"
            ),
            Some("<script>self.__next_f.push([1,\"1:\\\"https://p.test/\\u00\"])</script>"),
        ),
        // An escape JSON does not have.
        (
            format!("<script>self.__next_f.push([1,\"1:\\x41 https://{ORIGIN}/\"])</script>"),
            None,
        ),
        // A push whose payload is not a string.
        (
            format!("<script>self.__next_f.push([1,foo(\"https://{ORIGIN}/\")])</script>"),
            None,
        ),
        // A base64 push that is not base64.
        (
            "<script>self.__next_f.push([3,\"!!!!\"])</script>".to_owned(),
            None,
        ),
        // Two pushes in one script: the second one's bytes were not read.
        (
            format!("<script>self.__next_f.push([1,\"1:T50,https://{ORIGIN}/\"]);self.__next_f.push([1,\"x\"])</script>"),
            None,
        ),
        // A string not followed by the end of the push.
        (format!("<script>self.__next_f.push([1,\"1:T50,https://{ORIGIN}/\",2])</script>"), None),
        // A script that ends inside its string, inside an open text row.
        (
            format!("<script>self.__next_f.push([1,\"1:T50,https://{ORIGIN}/ \\u00</script>"),
            None,
        ),
    ];
    for (damaged, damaged_out) in cases {
        let input = format!("{good}{damaged}{good}");
        let expected = format!("{good_out}{}{good}", damaged_out.unwrap_or(&damaged));
        for chunk in [1, 3, 4096] {
            let out = run_chunked(input.as_bytes(), "p.test", 1 << 20, chunk);
            assert_eq!(
                String::from_utf8_lossy(&out),
                expected,
                "{damaged} chunk {chunk}"
            );
        }
        // The document may also end right there.
        let input = format!("{good}{damaged}");
        let out = run_chunked(input.as_bytes(), "p.test", 1 << 20, 2);
        let expected = format!("{good_out}{}", damaged_out.unwrap_or(&damaged));
        assert_eq!(
            String::from_utf8_lossy(&out),
            expected,
            "{damaged} at the end"
        );
    }
}

#[test]
fn form_state_and_unknown_pushes_leave_the_stream_alone() {
    let input = [
        push("", "0:\"a\"\n1:T3,"),
        "<script>self.__next_f.push([2,{\"k\":\"https://origin.example.com/\"}])</script>"
            .to_owned(),
        "<script>self.__next_f.push([0])</script>".to_owned(),
        push("", "abc2:\"https://origin.example.com/\"\n"),
    ]
    .concat();
    let expected = [
        push("", "0:\"a\"\n1:T3,abc2:\"https://p.test/\"\n"),
        "<script>self.__next_f.push([2,{\"k\":\"https://origin.example.com/\"}])</script>"
            .to_owned(),
        "<script>self.__next_f.push([0])</script>".to_owned(),
        push("", ""),
    ]
    .concat();
    for chunk in [1, 4, 4096] {
        let out = run_chunked(input.as_bytes(), "p.test", 1 << 20, chunk);
        assert_eq!(String::from_utf8_lossy(&out), expected, "chunk {chunk}");
    }
}

#[test]
fn base64_pushes_pass_through_and_keep_the_framing() {
    use base64::Engine as _;
    // A binary row carried in base64, then text rows in strings.
    let binary = base64::engine::general_purpose::STANDARD.encode(b"3:o5,\x00\xff\n\x01:");
    let input = [
        push("", "0:\"https://origin.example.com/\"\n1:T3,ab"),
        format!("<script>self.__next_f.push([3,\"{binary}\"])</script>"),
        push("", "2:\"https://origin.example.com/\"\n"),
    ]
    .concat();
    // The open row cannot wait across the binary push: it goes out as it came.
    let expected = [
        push("", "0:\"https://p.test/\"\n1:T3,ab"),
        format!("<script>self.__next_f.push([3,\"{binary}\"])</script>"),
        push("", "2:\"https://p.test/\"\n"),
    ]
    .concat();
    for chunk in [1, 6, 4096] {
        let out = run_chunked(input.as_bytes(), "p.test", 1 << 20, chunk);
        assert_eq!(String::from_utf8_lossy(&out), expected, "chunk {chunk}");
    }
}
