//! Property tests of the RSC path on generated Flight streams.
//!
//! A random row stream (text rows with URLs, multibyte text and characters Next.js escapes;
//! newline rows) is cut into `self.__next_f.push([1,"…"])` scripts at random character
//! boundaries, with markup between them, and pushed through the pipeline in random pieces.
//! The output's push strings are decoded with `serde_json` (not the stage's own decoder) and
//! concatenated: that stream must equal the original rows with the URLs replaced and every
//! text row's length recomputed, and the output must not depend on the split.

use proptest::prelude::*;
use trusted_server_core::{BodyReport, Codec, PageOptions, PageReport, UrlRule};

mod support;
use support::{rewrite_for, Flush};

const ORIGIN: &str = "origin.example.com";
const HOST: &str = "www.a-longer-first-party.example";

#[derive(Debug, Clone)]
enum Row {
    Text(String),
    Line(String),
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{1,12}",
        Just("é✓😀".to_owned()),
        Just("<b>&amp;</b>\"\\".to_owned()),
        Just("\n".to_owned()),
        Just("\u{2028}".to_owned()),
        Just(format!("https://{ORIGIN}/path")),
        // A space first: `//` right after a path or a word is part of that URL, not a new one.
        Just(format!(" //{ORIGIN}/x")),
        Just(format!(" //{ORIGIN}.evil.test/")),
    ]
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(piece(), 0..12).prop_map(|p| p.concat())
}

fn row() -> impl Strategy<Value = Row> {
    prop_oneof![
        text().prop_map(Row::Text),
        text().prop_map(|t| Row::Line(format!("[{:?}]", t.replace('\n', " ")))),
    ]
}

fn serialize(rows: &[Row], rewrite: bool) -> String {
    let fix = |t: &str| {
        if rewrite {
            t.replace(&format!("//{ORIGIN}/"), &format!("//{HOST}/"))
        } else {
            t.to_owned()
        }
    };
    rows.iter()
        .enumerate()
        .map(|(id, row)| match row {
            Row::Text(t) => {
                let t = fix(t);
                format!("{id:x}:T{:x},{t}", t.len())
            }
            Row::Line(l) => format!("{id:x}:{}\n", fix(l)),
        })
        .collect()
}

/// Next.js's escaping: JSON plus `<`, `>`, `&`, U+2028, U+2029 as `\uXXXX`.
fn escape(chunk: &str) -> String {
    serde_json::to_string(chunk)
        .unwrap()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// The page, and the markup between scripts as it must come out.
fn page(stream: &str, cuts: &[usize], markup: bool) -> (String, Vec<String>) {
    let mut boundaries: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c % (stream.len() + 1);
            while !stream.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    boundaries.push(0);
    boundaries.push(stream.len());
    boundaries.sort_unstable();
    boundaries.dedup();
    let mut html = String::from("<html><body>");
    let mut between = Vec::new();
    for (i, w) in boundaries.windows(2).enumerate() {
        let nonce = if i % 2 == 0 { "" } else { " nonce=\"abc\"" };
        html.push_str(&format!(
            "<script{nonce}>self.__next_f.push([1,{}])</script>",
            escape(&stream[w[0]..w[1]])
        ));
        if markup {
            let m = format!("<p id={i}>https://{ORIGIN}/m{i}</p>");
            between.push(m.replace(ORIGIN, HOST));
            html.push_str(&m);
        }
    }
    html.push_str("</body></html>");
    (html, between)
}

fn run(input: &[u8], cuts: &[usize]) -> Vec<u8> {
    run_capped(input, cuts, PageOptions::default().nextjs.max_held_bytes).0
}

/// Like [`run`], holding at most `max_held` bytes; with the report.
fn run_capped(input: &[u8], cuts: &[usize], max_held: u32) -> (Vec<u8>, BodyReport<PageReport>) {
    let rule = UrlRule::new(ORIGIN, "https", HOST);
    let rewrite = rewrite_for("text/html; charset=utf-8");
    let mut options = PageOptions::default();
    options.nextjs.max_held_bytes = max_held;
    ts_testkit::run(
        Codec::Identity,
        rewrite,
        &rule,
        &options,
        input,
        cuts,
        Flush::Never,
    )
    .unwrap()
}

/// The fuzz crate's independent model of Flight rows and of how the browser reads push
/// strings (each decoded on its own, then concatenated), written from the wire format.
#[path = "../../../fuzz/src/flight.rs"]
#[allow(dead_code)]
mod flight;

/// The smallest cap the settings allow.
const SMALL_CAP: u32 = 1024;

/// Checks a page's output as the browser reads it, at the small cap: the same bytes for every
/// cut, each push string valid on its own, and the decoded rows each rewritten or as they
/// came (a degrade passes rows on as they came, never a row in neither form).
fn check_small_cap(html: &[u8], stream: &str, cuts: &[usize]) -> Result<(), String> {
    let rule = UrlRule::new(ORIGIN, "https", HOST);
    let model = flight::model(stream.as_bytes(), &rule, u64::from(SMALL_CAP));
    let (whole, _) = run_capped(html, &[], SMALL_CAP);
    for cuts in [&[][..], cuts] {
        let (out, report) = run_capped(html, cuts, SMALL_CAP);
        let (decoded, _) = flight::read_pushes(&out).ok_or("an output string does not decode")?;
        let fine = match report.stages.rsc.degraded {
            None => decoded == model.rewritten(),
            Some(_) => model.each_row_whole_or_released(&decoded, &rule),
        };
        if !fine {
            return Err(format!(
                "cut at {cuts:?}, degraded {:?}, the decoded rows are not the model's:\n\
                 stream {stream:?}\noutput {:?}",
                report.stages.rsc.degraded,
                String::from_utf8_lossy(&decoded)
            ));
        }
        if out != whole {
            return Err(format!(
                "cut at {cuts:?}, the output differs:\nwhole {}\nsplit {}",
                String::from_utf8_lossy(&whole),
                String::from_utf8_lossy(&out)
            ));
        }
    }
    Ok(())
}

/// Held output passes the cap inside the second string, in the middle of its `✓`s: the
/// release must move whole characters into the first string. Cut between a character's
/// bytes, each string decodes to U+FFFD on its own, the text row grows past its length, and
/// its last bytes parse as a row.
#[test]
fn a_cap_release_inside_a_string_moves_whole_characters() {
    let head = format!("1:T3fa,{}", "A".repeat(300));
    let tail = format!("{}https://{ORIGIN}/x", "✓".repeat(230));
    let html = format!(
        "<script>self.__next_f.push([1,\"{head}\"])</script><p>x</p>\
         <script>self.__next_f.push([1,\"{tail}\"])</script>"
    );
    let stream = format!("{head}{tail}");
    assert_eq!(html.len(), 1119);
    assert_eq!(stream.len(), 7 + 0x3fa);
    for cut in 0..=html.len() {
        if let Err(e) = check_small_cap(html.as_bytes(), &stream, &[cut]) {
            panic!("{e}");
        }
    }
}

/// Decodes every push string in `html` with serde_json and returns their concatenation, and
/// the markup outside the scripts.
fn flight_stream(html: &str) -> (String, String) {
    const OPEN: &str = "self.__next_f.push([1,";
    let mut stream = String::new();
    let mut outside = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<script") {
        outside.push_str(&rest[..start]);
        let open = rest[start..].find(OPEN).expect("a push") + start + OPEN.len();
        let end = rest[open..].find("])</script>").expect("an end") + open;
        let chunk: String = serde_json::from_str(&rest[open..end]).expect("a JSON string");
        stream.push_str(&chunk);
        rest = &rest[end + "])</script>".len()..];
    }
    outside.push_str(rest);
    (stream, outside)
}

/// The same at the default cap (10 MiB), the page written whole: the pipeline hands it on in
/// 16 KiB slices, and the cap is passed inside the second string, among its `✓`s (three
/// lengths of markup between the strings put the slice ends at each byte of a `✓`).
#[test]
fn at_the_default_cap_a_release_inside_a_string_moves_whole_characters() {
    let cap = PageOptions::default().nextjs.max_held_bytes as usize;
    let head = format!("{}https://{ORIGIN}/a ", "A".repeat(300));
    let ticks = "✓".repeat((cap - head.len()) / 3);
    let text = format!("{head}{ticks}");
    assert!(text.len() <= cap, "the row is held, not passed through");
    let stream = format!("1:T{:x},{text}", text.len());
    let (first, second) = stream.split_at(7 + head.len());
    let rule = UrlRule::new(ORIGIN, "https", HOST);
    let model = flight::model(stream.as_bytes(), &rule, cap as u64);
    for markup in 100_000..100_003 {
        let html = format!(
            "<script>self.__next_f.push([1,\"{first}\"])</script><p>{}</p>\
             <script>self.__next_f.push([1,\"{second}\"])</script>",
            "x".repeat(markup)
        );
        let (out, report) = run_capped(html.as_bytes(), &[], cap as u32);
        assert!(report.stages.rsc.degraded.is_some(), "the cap was passed");
        let (decoded, _) = flight::read_pushes(&out).expect("the output's strings decode");
        assert!(
            model.each_row_whole_or_released(&decoded, &rule),
            "{markup} bytes of markup: the decoded rows are not the model's \
             ({} bytes decoded, {} in the stream)",
            decoded.len(),
            stream.len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_payloads_come_out_rewritten_framed_and_split_independent(
        rows in proptest::collection::vec(row(), 1..8),
        script_cuts in proptest::collection::vec(any::<usize>(), 0..6),
        input_cuts in proptest::collection::vec(any::<usize>(), 0..5),
        markup in any::<bool>(),
    ) {
        let original = serialize(&rows, false);
        let (html, between) = page(&original, &script_cuts, markup);
        let whole = run(html.as_bytes(), &[]);
        let mut cuts: Vec<usize> = input_cuts.iter().map(|c| c % (html.len() + 1)).collect();
        cuts.sort_unstable();
        let split = run(html.as_bytes(), &cuts);
        prop_assert!(split == whole, "output depends on the split {:?}", cuts);
        let bytes: Vec<usize> = (1..html.len()).collect();
        prop_assert!(run(html.as_bytes(), &bytes) == whole, "1-byte chunks differ");

        let whole = String::from_utf8(whole).expect("UTF-8 in, UTF-8 out");
        prop_assert!(!whole.contains("<b>"), "a raw < inside a push string");
        let (stream, outside) = flight_stream(&whole);
        prop_assert_eq!(stream, serialize(&rows, true));
        prop_assert_eq!(outside, format!("<html><body>{}</body></html>", between.concat()));
    }

    #[test]
    fn near_the_cap_the_output_is_split_independent_and_each_string_is_valid(
        rows in proptest::collection::vec(row(), 4..24),
        script_cuts in proptest::collection::vec(any::<usize>(), 1..10),
        input_cuts in proptest::collection::vec(any::<usize>(), 1..6),
        markup in any::<bool>(),
    ) {
        let original = serialize(&rows, false);
        let (html, _) = page(&original, &script_cuts, markup);
        let mut cuts: Vec<usize> = input_cuts.iter().map(|c| c % (html.len() + 1)).collect();
        cuts.sort_unstable();
        if let Err(e) = check_small_cap(html.as_bytes(), &original, &cuts) {
            prop_assert!(false, "{}", e);
        }
    }
}
