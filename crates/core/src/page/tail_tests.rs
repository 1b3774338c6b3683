//! The page's hold on its tail ([`PageOptions::hold_tail`], [`end_page`], [`PageEnding`]),
//! held to the output without it: with nothing inserted, the same bytes; with bids, the same
//! bytes with the bids spliced in before the first real `</body>` (a model of the documents
//! generated here, and html5ever's reading of the result), or at the end.

use super::*;
use crate::body::decode::Decoder;
use crate::stages::tail::TAIL_MAX;
use html5ever::tendril::TendrilSink;
use lol_html::AsciiCompatibleEncoding;
use markup5ever_rcdom::{Handle, NodeData, RcDom};
use proptest::prelude::*;

const BIDS: &str = "<script type=\"application/json\" id=\"ts-bids\">{\"s\":1}</script>";

fn rule() -> UrlRule {
    UrlRule::new("origin.example.com", "https", "www.pub.test")
}

fn html() -> Rewrite {
    Rewrite::Html(AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap())
}

fn decode(codec: Codec, bytes: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    let mut d = Decoder::new(codec, &mut plain);
    d.write(bytes).unwrap();
    d.finish().unwrap();
    plain
}

/// The page's plain output: `origin` (plain) encoded with `codec`, pushed cut at `cuts`,
/// with the hold and `insertion` when `insertion` is `Some`.
fn run(
    codec: Codec,
    rewrite: Rewrite,
    origin: &[u8],
    cuts: &[usize],
    options: &PageOptions,
    insertion: Option<&str>,
) -> (Vec<u8>, PageReport) {
    let encoded = crate::body::codec::compress(codec, origin);
    let options = PageOptions {
        hold_tail: insertion.is_some(),
        ..options.clone()
    };
    let mut p = pipeline(codec, rewrite, rule(), &options, Vec::new());
    let mut from = 0;
    for &cut in cuts {
        let cut = cut.min(encoded.len()).max(from);
        p.push(&encoded[from..cut]).unwrap();
        from = cut;
    }
    p.push(&encoded[from..]).unwrap();
    let (out, report) = match insertion {
        None => p.finish().unwrap(),
        Some(insertion) => {
            let mut ending = end_page(p).unwrap();
            ending.flush().unwrap();
            ending.finish(insertion).unwrap()
        }
    };
    (decode(codec, &out), report.stages)
}

fn splice(bytes: &[u8], at: usize, insertion: &str) -> Vec<u8> {
    [&bytes[..at], insertion.as_bytes(), &bytes[at..]].concat()
}

fn element_name(node: &Handle) -> Option<String> {
    match &node.data {
        NodeData::Element { name, .. } => Some(name.local.to_string()),
        _ => None,
    }
}

fn text_of(node: &Handle) -> String {
    node.children
        .borrow()
        .iter()
        .map(|c| match &c.data {
            NodeData::Text { contents } => contents.borrow().to_string(),
            _ => String::new(),
        })
        .collect()
}

/// The elements `id="ts-bids"` html5ever reads in `html`, with their text.
fn bids_elements(html: &[u8]) -> Vec<(String, String)> {
    let dom = html5ever::parse_document(RcDom::default(), Default::default())
        .from_utf8()
        .read_from(&mut &html[..])
        .expect("reading from memory");
    let mut found = Vec::new();
    // The document stays alive while it is walked: a dropped node empties its descendants.
    let mut stack = vec![Handle::clone(&dom.document)];
    while let Some(node) = stack.pop() {
        if let NodeData::Element { attrs, .. } = &node.data {
            if attrs
                .borrow()
                .iter()
                .any(|a| &*a.name.local == "id" && &*a.value == "ts-bids")
            {
                found.push((element_name(&node).unwrap_or_default(), text_of(&node)));
            }
        }
        stack.extend(node.children.borrow().iter().cloned());
    }
    found
}

/// Pieces of a document, each leaving the tokenizer in its data state, with where its first
/// real `</body>` end tag starts.
const PIECES: &[(&str, Option<usize>)] = &[
    ("text ", None),
    ("<p>", None),
    ("</p>", None),
    ("<div class=\"a>b\">", None),
    ("<p title='</body>'>", None),
    ("<!-- </body> -->", None),
    ("<script>var s='</body>';</script>", None),
    ("<script><!--<script></script></body>--></script>", None),
    ("<script><!--</script></body>", Some(21)),
    ("<style>p{}</body></style>", None),
    ("<textarea></body></textarea>", None),
    ("<title></BODY></title>", None),
    ("</bodyx>", None),
    ("<body>", None),
    ("</body>", Some(0)),
    ("</BODY >", Some(0)),
    ("</html>", None),
    ("<html><head></head>", None),
];

prop_compose! {
    fn document()(picks in proptest::collection::vec(0..PIECES.len(), 0..20)) -> (String, Option<usize>) {
        let mut doc = String::new();
        let mut first = None;
        for i in picks {
            let (piece, at) = PIECES[i];
            if first.is_none() {
                first = at.map(|at| doc.len() + at);
            }
            doc.push_str(piece);
        }
        (doc, first)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// With nothing inserted the output is the output without the hold; with bids, it is
    /// that output with the bids before the first real `</body>` (or at the end), and
    /// html5ever reads them as one element with their text. Any cuts, plain or gzip.
    #[test]
    fn the_bids_go_where_the_model_says_and_nothing_else_changes(
        (doc, first) in document(),
        cuts in proptest::collection::vec(0usize..1000, 0..5),
        gzip in any::<bool>(),
    ) {
        let codec = if gzip { Codec::Gzip } else { Codec::Identity };
        let mut cuts = cuts;
        cuts.sort_unstable();
        let options = PageOptions::default();
        let bytes = doc.as_bytes();
        let (without, _) = run(codec, html(), bytes, &cuts, &options, None);
        // No URL in these documents: the page's stages leave them as they are.
        prop_assert_eq!(&without, &bytes);
        let (empty, report) = run(codec, html(), bytes, &cuts, &options, Some(""));
        prop_assert_eq!(&empty, &without);
        let (with, _) = run(codec, html(), bytes, &cuts, &options, Some(BIDS));
        let point = report.tail.map(|t| t.point);
        match first {
            Some(at) => {
                prop_assert_eq!(point, Some(TailPoint::BeforeBodyEnd));
                prop_assert_eq!(&with, &splice(&without, at, BIDS));
            }
            None => {
                prop_assert_eq!(point, Some(TailPoint::AtEnd));
                prop_assert_eq!(&with, &[&without[..], BIDS.as_bytes()].concat());
            }
        }
        prop_assert_eq!(
            bids_elements(&with),
            vec![("script".to_string(), "{\"s\":1}".to_string())]
        );
    }
}

/// Real pages, rewritten and with the script injected: the bids go before their one
/// `</body>` (after the Next.js pages' Flight and Suspense scripts, which come before it),
/// in every codec and at several piece sizes.
#[test]
fn real_pages_get_the_bids_before_their_end_tag() {
    let pages: [&[u8]; 4] = [
        include_bytes!("../../../../fixtures/site/index.html"),
        include_bytes!("../../../../fixtures/nextjs/index.body"),
        include_bytes!("../../../../fixtures/nextjs/live.body"),
        include_bytes!("../../../../fixtures/nextjs/nonce.body"),
    ];
    let options = PageOptions {
        inject: Some(Injection {
            src: "/static/tsjs=abc.js".into(),
            nonce: None,
        }),
        ..PageOptions::default()
    };
    for (n, page) in pages.iter().enumerate() {
        for codec in [Codec::Identity, Codec::Gzip, Codec::Brotli] {
            let (without, _) = run(codec, html(), page, &[], &options, None);
            let text = String::from_utf8_lossy(&without).to_ascii_lowercase();
            assert_eq!(text.matches("</body").count(), 1, "page {n}");
            let at = text.find("</body>").unwrap();
            for size in [997, 8192, usize::MAX] {
                let cuts: Vec<usize> = (1..)
                    .map(|i: usize| i.saturating_mul(size))
                    .take_while(|c| *c < page.len())
                    .collect();
                let (empty, _) = run(codec, html(), page, &cuts, &options, Some(""));
                assert!(
                    empty == without,
                    "page {n} {codec:?} {size}: empty insertion"
                );
                let (with, report) = run(codec, html(), page, &cuts, &options, Some(BIDS));
                assert!(
                    with == splice(&without, at, BIDS),
                    "page {n} {codec:?} {size}"
                );
                let tail = report.tail.unwrap();
                assert_eq!(tail.point, TailPoint::BeforeBodyEnd);
                assert_eq!(tail.held, without.len() - at, "page {n}");
            }
        }
    }
}

/// Bytes before `</body>` reach the client as they do without the hold, flush by flush; only
/// a piece ending in a prefix of `</body` keeps those bytes (at most 6) for the next one.
#[test]
fn bytes_before_the_end_tag_leave_when_they_did() {
    let page = include_bytes!("../../../../fixtures/nextjs/index.body");
    let at = page.len() - "</body></html>".len();
    // Pieces of 1 KiB, and pieces ending inside `</body`.
    let mut cutss: Vec<Vec<usize>> = vec![(1..page.len() / 1024).map(|i| i * 1024).collect()];
    for k in 1..=7 {
        cutss.push(vec![at - 3000, at + k - 1, at + 7]);
    }
    for cuts in cutss {
        let sinks = |hold: bool| {
            let options = PageOptions {
                hold_tail: hold,
                ..PageOptions::default()
            };
            let mut p = pipeline(Codec::Identity, html(), rule(), &options, Vec::new());
            let mut lens = Vec::new();
            let mut from = 0;
            for &cut in &cuts {
                p.push(&page[from..cut]).unwrap();
                p.flush().unwrap();
                lens.push(p.sink_mut().len());
                from = cut;
            }
            p.push(&page[from..]).unwrap();
            p.flush().unwrap();
            lens.push(p.sink_mut().len());
            let mut ending = end_page(p).unwrap();
            ending.flush().unwrap();
            // What the client has while the auction runs.
            lens.push(ending.downstream_sink_len() as usize);
            let (out, _) = ending.finish("").unwrap();
            (lens, out)
        };
        let (without, out_without) = sinks(false);
        let (with, out_with) = sinks(true);
        assert!(out_with == out_without);
        for (i, (w, wo)) in with.iter().zip(&without).enumerate() {
            let due = (*wo).min(at);
            assert!(
                *w <= due && due - w <= 6,
                "cuts {cuts:?} step {i}: {w} of {due}"
            );
            assert!(b"</body".starts_with(&out_without[*w..due]));
        }
        // While the auction runs, everything before `</body>` has left.
        assert_eq!(with.last(), Some(&at));
    }
}

/// A tail past the cap is written as it comes and the bids go at the very end; a page
/// without `</body>` gets them at the end too; a text body or a UTF-16 page gets none.
#[test]
fn the_bids_go_at_the_end_past_the_cap_and_nowhere_without_a_hold() {
    let long = format!("<p>x</p></body>{}", "<!-- padding -->".repeat(TAIL_MAX / 8));
    let cases: [(&[u8], Rewrite, Option<TailPoint>); 4] = [
        (long.as_bytes(), html(), Some(TailPoint::AfterCap)),
        (b"<p>no end tag", html(), Some(TailPoint::AtEnd)),
        (b"body { color: red } </body>", Rewrite::Text, None),
        (b"\xff\xfe<\0/\0b\0o\0d\0y\0>\0", html(), None),
    ];
    for (page, rewrite, want) in cases {
        for codec in [Codec::Identity, Codec::Deflate] {
            let (without, _) = run(codec, rewrite, page, &[100], &PageOptions::default(), None);
            let (with, report) = run(
                codec,
                rewrite,
                page,
                &[100],
                &PageOptions::default(),
                Some(BIDS),
            );
            assert_eq!(report.tail.as_ref().map(|t| t.point), want);
            let expected = match want {
                Some(_) => [&without[..], BIDS.as_bytes()].concat(),
                None => without,
            };
            assert!(with == expected, "{want:?} {codec:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any bytes from an HTML-ish alphabet, with URLs the rule rewrites, at any cuts, plain or
    /// gzip: nothing inserted gives the output without the hold, byte for byte; bids go in
    /// whole, once, either at the end or just before a `</body` of that output, and the rest
    /// is that output.
    #[test]
    fn any_page_is_unchanged_but_for_the_bids(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "<", ">", "/", "!", "-", "'", "\"", "=", " ", "body", "BODY", "script", "style",
                "p", "x", "https://origin.example.com/a", "self.__next_f.push(", "<!--", "-->",
                "</body>", "<meta charset=utf-8>",
            ]),
            0..60,
        ),
        cuts in proptest::collection::vec(0usize..400, 0..5),
        gzip in any::<bool>(),
    ) {
        let codec = if gzip { Codec::Gzip } else { Codec::Identity };
        let mut cuts = cuts;
        cuts.sort_unstable();
        let doc = parts.concat();
        let bytes = doc.as_bytes();
        let options = PageOptions::default();
        let (without, _) = run(codec, html(), bytes, &cuts, &options, None);
        let (empty, _) = run(codec, html(), bytes, &cuts, &options, Some(""));
        prop_assert_eq!(&empty, &without);
        let (with, report) = run(codec, html(), bytes, &cuts, &options, Some(BIDS));
        let at = with
            .windows(BIDS.len())
            .position(|w| w == BIDS.as_bytes())
            .expect("the bids are written");
        prop_assert_eq!(&[&with[..at], &with[at + BIDS.len()..]].concat(), &without);
        let point = report.tail.map(|t| t.point);
        if at == without.len() {
            prop_assert_ne!(point, Some(TailPoint::BeforeBodyEnd));
        } else {
            prop_assert_eq!(point, Some(TailPoint::BeforeBodyEnd));
            prop_assert!(without[at..].to_ascii_lowercase().starts_with(b"</body"));
        }
    }
}

/// A page from the cache gets its bids where the same page from the origin does: the stored
/// bytes (the pipeline's output without the hold, encoded) through [`stored_pipeline`], cut
/// anywhere, with an insertion, equal the origin's page with the hold and that insertion.
/// Real pages, rewritten and with the script injected, in every codec.
#[test]
fn a_stored_page_gets_the_bids_where_the_origins_page_does() {
    let pages: [&[u8]; 3] = [
        include_bytes!("../../../../fixtures/site/index.html"),
        include_bytes!("../../../../fixtures/nextjs/index.body"),
        b"<p>no end tag",
    ];
    let options = PageOptions {
        inject: Some(Injection {
            src: "/static/tsjs=abc.js".into(),
            nonce: None,
        }),
        ..PageOptions::default()
    };
    for (n, page) in pages.iter().enumerate() {
        for codec in [Codec::Identity, Codec::Gzip, Codec::Brotli] {
            let (origin_with, origin_report) = run(codec, html(), page, &[], &options, Some(BIDS));
            let (stored_plain, _) = run(codec, html(), page, &[], &options, None);
            let stored = crate::body::codec::compress(codec, &stored_plain);
            for size in [1, 7, 4096, usize::MAX] {
                let mut p = stored_pipeline(codec, Vec::new());
                for piece in stored.chunks(size.min(stored.len().max(1))) {
                    p.push(piece).unwrap();
                }
                let mut ending = end_page(p).unwrap();
                assert_eq!(
                    ending.tail_point(),
                    origin_report.tail.as_ref().map(|t| t.point)
                );
                ending.flush().unwrap();
                let (out, _) = ending.finish(BIDS).unwrap();
                assert!(
                    decode(codec, &out) == origin_with,
                    "page {n} {codec:?} pieces of {size}"
                );
            }
        }
    }
}
