//! Keeps `fixtures/site` honest: every file the README promises exists and
//! still contains the constructs the proxy's rewriter tests rely on.

use std::path::PathBuf;

fn root() -> PathBuf {
    demo_origin::default_root()
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn text(rel: &str) -> String {
    String::from_utf8(read(rel)).unwrap_or_else(|_| panic!("{rel} is not UTF-8"))
}

const ORIGIN: &str = "origin.demo-publisher.example";

/// Constructs both full pages must contain.
const PAGE_NEEDLES: &[&str] = &[
    "<meta charset=\"utf-8\">",
    "<link rel=\"canonical\" href=\"https://origin.demo-publisher.example/",
    "<meta property=\"og:url\" content=\"https://origin.demo-publisher.example/",
    "<meta property=\"og:image\" content=\"https://origin.demo-publisher.example/",
    "rel=\"preconnect\" href=\"//origin.demo-publisher.example\"",
    "rel=\"preload\" href=\"//origin.demo-publisher.example/",
    "<link rel=\"stylesheet\" href=\"https://origin.demo-publisher.example/static/site.css\">",
    "<script src=\"https://origin.demo-publisher.example/static/app.js\"",
    "url(https://origin.demo-publisher.example/",
    "\"https:\\/\\/origin.demo-publisher.example\\/api",
    "<script type=\"application/ld+json\">",
    "srcset=\"https://origin.demo-publisher.example/",
    "<source type=\"image/webp\" srcset=\"https://origin.demo-publisher.example/",
    "poster=\"https://origin.demo-publisher.example/",
    "<form action=\"https://origin.demo-publisher.example/",
    "formaction=\"//origin.demo-publisher.example/",
    "href=\"http://origin.demo-publisher.example/",
    "href=\"https://origin.demo-publisher.example/",
    "href=\"//origin.demo-publisher.example/",
    " https://origin.demo-publisher.example/subscribe",
    "<iframe src=\"https://origin.demo-publisher.example/embed/poll.html",
    "data-src=\"https://origin.demo-publisher.example/",
    "https://cdn.thirdparty.example/",
    "https://origin.demo-publisher.example.evil.test/",
    "https://notorigin.demo-publisher.example/",
    "https://origin.demo-publisher.examples/",
];

#[test]
fn homepage_and_article_exercise_the_rewriter() {
    for (rel, min_kb, max_kb) in [("index.html", 20, 40), ("news/article.html", 40, 60)] {
        let page = text(rel);
        let kb = page.len() / 1000;
        assert!((min_kb..=max_kb).contains(&kb), "{rel} is {kb} KB");
        for needle in PAGE_NEEDLES {
            assert!(page.contains(needle), "{rel} lacks {needle:?}");
        }
        assert_eq!(
            page.to_ascii_lowercase().matches("</head>").count(),
            1,
            "{rel}"
        );
        // A srcset with several origin candidates.
        assert!(
            page.lines()
                .any(|l| l.contains("srcset=") && l.matches(ORIGIN).count() >= 3),
            "{rel}: no multi-candidate srcset"
        );
    }
    let article = text("news/article.html");
    for needle in ["é", "✓", "😀", "« ", "„", "ß", "電車", "ヨーロッパ"] {
        assert!(article.contains(needle), "article lacks {needle}");
    }
}

#[test]
fn latin1_page_is_really_latin1() {
    let bytes = read("latin1.latin1.html");
    assert!(
        String::from_utf8(bytes.clone()).is_err(),
        "must not be UTF-8"
    );
    for b in [0xe9u8, 0xfc, 0xdf, 0xab, 0xbb] {
        assert!(bytes.contains(&b), "missing latin-1 byte {b:#x}");
    }
    let ascii: String = bytes
        .iter()
        .map(|&b| if b < 0x80 { b as char } else { '?' })
        .collect();
    assert!(ascii.contains("<meta charset=\"iso-8859-1\">"));
    assert!(ascii.contains("https://origin.demo-publisher.example/subscribe"));
    assert!(ascii.contains("srcset=\"https://origin.demo-publisher.example/"));
}

#[test]
fn static_assets() {
    let css = text("static/site.css");
    assert!(css.contains("@import url(\"https://origin.demo-publisher.example/"));
    assert!(css.contains("url(https://origin.demo-publisher.example/static/logo.svg)"));
    let js = text("static/app.js");
    assert!(js.contains("fetch("));
    assert!(js.contains("\"https://origin.demo-publisher.example/api/feed.json\""));
    assert!(js.contains("'https://origin.demo-publisher.example/api/comments'"));
    assert!(js.contains("\"https:\\/\\/origin.demo-publisher.example\\/api\""));
    let feed = text("api/feed.json");
    assert!(feed.contains("\"https://origin.demo-publisher.example/news/article.html\""));
    assert!(feed.contains("\"https:\\/\\/origin.demo-publisher.example\\/api\\/feed.json\""));
    assert!(text("static/logo.svg").starts_with("<svg"));

    let png = read("static/hero.png");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(
        (20_000..=60_000).contains(&png.len()),
        "hero.png is {} bytes",
        png.len()
    );
    assert!(png.ends_with(b"IEND\xae\x42\x60\x82"));

    let random = read("static/random.bin");
    assert_eq!(random.len(), 64 * 1024);
    // xorshift64 (13, 7, 17) from 0x9E3779B97F4A7C15, little-endian words.
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    for word in random.chunks(8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        assert_eq!(word, s.to_le_bytes());
    }
}
