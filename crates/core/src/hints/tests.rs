use super::*;
use proptest::prelude::*;

fn rule() -> UrlRule {
    UrlRule::new("origin.pub.test", "https", "www.pub.test")
}

/// RFC 8288 §3.5's own examples: the preload one is kept; `rel=next` and the `rel="start
/// http://example.net/relation/other"` link are not hints.
#[test]
fn link_header_keeps_only_hint_relations() {
    assert!(from_link_header(
        "<http://example.com/TheBook/chapter2>; rel=\"previous\"; title=\"previous chapter\""
    )
    .is_empty());
    assert!(from_link_header("</>; rel=\"http://example.net/foo\"").is_empty());
    assert_eq!(
        from_link_header("</a.css>; rel=preload; as=style, </n>; rel=next, <https://cdn.test>; rel=preconnect; crossorigin"),
        ["</a.css>; rel=preload; as=style", "<https://cdn.test>; rel=preconnect; crossorigin"]
    );
    assert_eq!(
        from_link_header("</m.js>; REL=\"modulepreload\"; title=\"x, y\", </b.woff2>; as=font; rel=preload; type=font/woff2; crossorigin=anonymous"),
        ["</m.js>; rel=modulepreload", "</b.woff2>; rel=preload; as=font; crossorigin=anonymous; type=font/woff2"]
    );
}

#[test]
fn link_header_rejects_malformed_and_unsafe() {
    for bad in [
        "",
        "junk",
        "</a.css",
        "</a.css>; rel=\"preload",
        "<a b>; rel=preload",
        "</a>; rel=preload; as=\"sty le\"",
    ] {
        assert!(from_link_header(bad).is_empty(), "{bad}");
    }
}

#[test]
fn markup_links_are_found_and_rewritten() {
    let head = b"<!doctype html><html><head><!-- <link rel=preload href=/c.css> -->\
        <LINK href='http://origin.pub.test/a.css' rel=\"preload\" as=style>\
        <link rel=stylesheet href=/s.css><link rel=modulepreload href=\"//origin.pub.test/m.js\"/>\
        <link rel=preconnect href=https://cdn.test crossorigin>\
        </head><body><link rel=preload href=/late.js as=script>";
    let mut s = HeadScanner::new();
    s.feed(head);
    assert!(s.is_done());
    assert_eq!(
        s.finish(&rule()),
        [
            "<https://www.pub.test/a.css>; rel=preload; as=style",
            "<//www.pub.test/m.js>; rel=modulepreload",
            "<https://cdn.test>; rel=preconnect; crossorigin",
        ]
    );
}

#[test]
fn the_list_is_bounded_and_deduplicated() {
    let mut h = Hints::new();
    assert!(h.push("</a>; rel=preload".into()));
    assert!(!h.push("</a>; rel=preload".into()));
    assert!(!h.push("</b>; rel=preload\r\nSet-Cookie: x=1".into()));
    for i in 0..40 {
        h.push(format!("</{i}>; rel=preload"));
    }
    assert_eq!(h.values().len(), MAX_HINTS);
    let mut big = Hints::new();
    let long = format!("</{}>; rel=preload", "x".repeat(1000));
    for i in 0..10 {
        big.push(format!("{long}{i}"));
    }
    assert!(big.encode().len() <= MAX_BYTES + MAX_HINTS + MAGIC.len());
    assert_eq!(big.values().len(), 4);
}

#[test]
fn stored_form_round_trips_and_rejects_others() {
    let mut h = Hints::new();
    h.push("</a.css>; rel=preload; as=style".into());
    h.push("<https://cdn.test>; rel=preconnect".into());
    assert_eq!(
        h.encode(),
        b"TSHINTS1\n</a.css>; rel=preload; as=style\n<https://cdn.test>; rel=preconnect\n"
    );
    assert_eq!(Hints::decode(&h.encode()), Some(h));
    assert_eq!(Hints::decode(b"TSHINTS1\n"), Some(Hints::new()));
    for bad in [
        &b""[..],
        b"TSHINTS2\n</a>\n",
        b"TSHINTS1\n</a>",
        b"TSHINTS1\n\n",
        b"TSHINTS1\n\x01\n",
    ] {
        assert_eq!(Hints::decode(bad), None);
    }
}

/// The key is SHA-256 of the label and the page key (Python: `hashlib.sha256(b"ts-hints/1\0"
/// + bytes(32)).hexdigest()`), and differs from the page key.
#[test]
fn key_matches_the_reference() {
    let hex: String = hints_key(&[0; 32])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(hex, REFERENCE_KEY);
}

const REFERENCE_KEY: &str = "1e0afd2189a019f0451eacd0f43cd0215b29fc57d533ca0c8b7d178f25373f43";

proptest! {
    /// However the page is split, the scanner finds the same hints (and it only reads the
    /// chunks: the page that leaves is the page fed).
    #[test]
    fn scanner_is_split_invariant(cuts in proptest::collection::vec(0usize..400, 0..8), pad in 0usize..300) {
        let page = format!("<html><head>{}<link rel=preload href=/a.css as=style><Link REL=preconnect href=https://origin.pub.test></HEAD><body><link rel=preload href=/z>", " ".repeat(pad));
        let bytes = page.as_bytes();
        let mut whole = HeadScanner::new();
        whole.feed(bytes);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
        cuts.sort_unstable();
        let mut split = HeadScanner::new();
        let mut prev = 0;
        let mut seen = Vec::new();
        for c in cuts.into_iter().chain([bytes.len()]) {
            split.feed(&bytes[prev..c]);
            seen.extend_from_slice(&bytes[prev..c]);
            prev = c;
        }
        prop_assert_eq!(&seen[..], bytes);
        prop_assert_eq!(split.finish(&rule()), whole.finish(&rule()));
        prop_assert_eq!(whole.finish(&rule()).len(), 2);
    }

    /// Any bytes: no panic, and every hint found is safe to send.
    #[test]
    fn arbitrary_input_never_panics(input in proptest::collection::vec(any::<u8>(), 0..600), header in ".{0,200}") {
        let mut s = HeadScanner::new();
        s.feed(&input);
        for v in s.finish(&rule()).into_iter().chain(from_link_header(&header)) {
            prop_assert!(is_safe_value(&v));
        }
        let _ = Hints::decode(&input);
    }
}
