//! Property tests of the RSC path on generated Flight streams.
//!
//! A random row stream (text rows with URLs, multibyte text and characters Next.js escapes;
//! newline rows) is cut into `self.__next_f.push([1,"…"])` scripts at random character
//! boundaries, with markup between them, and pushed through the pipeline in random pieces.
//! The output's push strings are decoded with `serde_json` (not the stage's own decoder) and
//! concatenated: that stream must equal the original rows with the URLs replaced and every
//! text row's length recomputed, and the output must not depend on the split.

use proptest::prelude::*;
use trusted_server_core::{BodyPipeline, Codec, PipelineOptions, UrlRule};

mod support;
use support::rewrite_kind;

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
    let rule = UrlRule::new(ORIGIN, "https", HOST);
    let rewrite = rewrite_kind("text/html; charset=utf-8");
    let mut p = BodyPipeline::new(
        Codec::Identity,
        rewrite,
        rule,
        &PipelineOptions::default(),
        Vec::new(),
    );
    let mut at = 0;
    for &cut in cuts.iter().chain([&input.len()]) {
        let cut = cut.clamp(at, input.len());
        p.push(&input[at..cut]).unwrap();
        at = cut;
    }
    p.finish().unwrap().0
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
}
