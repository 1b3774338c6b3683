//! Deterministic generated publisher pages for `/__gen/<N>kb.html`.
//!
//! The page is a full HTML document whose body repeats varied article
//! blocks (origin URLs in many attribute forms, srcset lists, third-party
//! look-alike hosts and non-ASCII prose) and is padded so that its length is
//! exactly `N * 1024` bytes whenever that is at least the minimal page size.

use std::fmt::Write as _;

/// Largest accepted `N` in `/__gen/<N>kb.html` (16 MiB).
pub const MAX_GEN_KIB: usize = 16 * 1024;

const ORIGIN: &str = "origin.demo-publisher.example";

/// Parses the file name part of `/__gen/<N>kb.html` and returns `N`.
pub fn parse_gen_name(name: &str) -> Option<usize> {
    let digits = name.strip_suffix("kb.html")?;
    if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = digits.parse().ok()?;
    (1..=MAX_GEN_KIB).contains(&n).then_some(n)
}

const SECTIONS: [&str; 6] = [
    "politics", "economy", "culture", "sport", "science", "travel",
];

const HEADLINES: [&str; 8] = [
    "City council approves the riverside tram extension after a late-night vote",
    "Café owners in Lyon say « la rentrée » brought their best September in years",
    "Energy prices: what the new tariff cap means for a typical household",
    "Bürgermeisterin verspricht „schnellere Genehmigungen“ für Wohnungsbau",
    "Marathon route changes: closures, detours and where to watch",
    "東京の新しい図書館、開館初日に一万人が来館",
    "Researchers map the deep-sea vents off the Azores ✓",
    "Night trains are back — we rode the new sleeper from Paris to Berlin 😀",
];

const STANDFIRSTS: [&str; 5] = [
    "Residents packed the public gallery; the measure passed by a single vote.",
    "« On n'a jamais vu ça », dit Élodie, qui tient le comptoir depuis 1998.",
    "Die Stadtverwaltung rechnet mit Einsparungen von über 12 % — Kritiker sind skeptisch.",
    "関係者によると、週末にはさらに多くの来館者が見込まれている。",
    "Our correspondent spent three weeks at sea with the survey team 🌊.",
];

/// Builds the generated page of about `kib` KiB (exactly `kib * 1024` bytes
/// unless that is smaller than the head, one article block and the tail).
pub fn generate(kib: usize) -> Vec<u8> {
    let target = kib * 1024;
    let head = page_head(kib);
    let tail = page_tail();
    let mut page = String::with_capacity(target + 4096);
    page.push_str(&head);
    let mut i = 0;
    loop {
        let block = article_block(i);
        if i > 0 && page.len() + block.len() + tail.len() > target {
            break;
        }
        page.push_str(&block);
        i += 1;
    }
    let gap = target.saturating_sub(page.len() + tail.len());
    if gap >= 8 {
        page.push_str("<!--");
        page.extend(std::iter::repeat_n('.', gap - 8));
        page.push_str("-->\n");
    } else {
        page.extend(std::iter::repeat_n('\n', gap));
    }
    page.push_str(&tail);
    page.into_bytes()
}

fn page_head(kib: usize) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>The Demo Courier — generated edition ({kib} KiB)</title>
<link rel="canonical" href="https://{ORIGIN}/__gen/{kib}kb.html">
<meta property="og:url" content="https://{ORIGIN}/__gen/{kib}kb.html">
<meta property="og:image" content="https://{ORIGIN}/static/hero.png">
<link rel="preconnect" href="//{ORIGIN}">
<link rel="preload" href="//{ORIGIN}/static/site.css" as="style">
<link rel="stylesheet" href="https://{ORIGIN}/static/site.css">
<link rel="stylesheet" href="https://cdn.thirdparty.example/widgets/v2/widgets.css">
<script src="https://{ORIGIN}/static/app.js" defer></script>
<style>
.masthead {{ background: url(https://{ORIGIN}/static/logo.svg) no-repeat left center; }}
.hero {{ background-image: url("//{ORIGIN}/static/hero.png"); }}
</style>
<script>
window.__COURIER__ = {{ api: "https:\/\/{ORIGIN}\/api\/feed.json", home: "https://{ORIGIN}/" }};
</script>
</head>
<body>
<header class="masthead"><a href="https://{ORIGIN}/">The Demo Courier</a>
<nav><a href="/news/article.html">News</a> <a href="http://{ORIGIN}/sport/">Sport</a> <a href="//{ORIGIN}/culture/">Culture</a></nav>
</header>
<main id="river">
"#
    )
}

fn page_tail() -> String {
    format!(
        r#"</main>
<footer>
<p>Read everything at https://{ORIGIN}/subscribe — cancel any time.</p>
<form action="https://{ORIGIN}/newsletter" method="post"><input name="email" type="email"><button formaction="//{ORIGIN}/newsletter/confirm">Sign up</button></form>
</footer>
<script type="application/ld+json">{{"@context":"https://schema.org","@type":"WebPage","url":"https:\/\/{ORIGIN}\/__gen\/"}}</script>
</body>
</html>
"#
    )
}

fn article_block(i: usize) -> String {
    let section = SECTIONS[i % SECTIONS.len()];
    let headline = HEADLINES[(i * 5 + 1) % HEADLINES.len()];
    let standfirst = STANDFIRSTS[(i * 3 + 2) % STANDFIRSTS.len()];
    let slug = format!("{section}/story-{i:05}");
    let img = format!("https://{ORIGIN}/media/{section}/{i:05}");
    let mut s = String::with_capacity(1400);
    let _ = write!(
        s,
        r#"<article class="card card--{section}" id="story-{i}" data-url="https://{ORIGIN}/{slug}.html">
<a class="card__link" href="https://{ORIGIN}/{slug}.html">
<img src="{img}-480.jpg" srcset="{img}-480.jpg 480w, {img}-960.jpg 960w, //{ORIGIN}/media/{section}/{i:05}-1440.jpg 1440w" sizes="(max-width: 600px) 100vw, 33vw" alt="" width="480" height="270" loading="lazy">
<h2>{headline}</h2></a>
<p class="standfirst">{standfirst}</p>
"#
    );
    match i % 4 {
        0 => {
            let _ = write!(
                s,
                r#"<picture><source type="image/webp" srcset="{img}-wide.webp 1x, {img}-wide@2x.webp 2x"><img data-src="{img}-wide.jpg" alt="Illustration"></picture>
<p>Full coverage: <a href="http://{ORIGIN}/{section}/">{section}</a> · partner offer at <a href="https://cdn.thirdparty.example/offers/{i}">cdn.thirdparty.example</a>.</p>
"#
            );
        }
        1 => {
            let _ = writeln!(
                s,
                r#"<p>Watch: <video controls preload="none" poster="{img}-poster.jpg" src="https://{ORIGIN}/video/{i:05}.mp4"></video> Not ours: <a href="https://{ORIGIN}.evil.test/{i}">mirror</a>, <a href="https://not{ORIGIN}/{i}">lookalike</a>.</p>"#
            );
        }
        2 => {
            let _ = write!(
                s,
                r#"<p lang="fr">« Les lecteurs retrouvent l'édition complète sur https://{ORIGIN}/subscribe », précise la rédaction. Grüße, Zoë &amp; Jürgen — ✓ 😀</p>
<iframe src="https://{ORIGIN}/embed/poll/{i}" title="Poll" width="300" height="120" loading="lazy"></iframe>
"#
            );
        }
        _ => {
            let _ = writeln!(
                s,
                r#"<div class="related" data-src="//{ORIGIN}/api/related?story={i}" data-endpoint="https:\/\/{ORIGIN}\/api\/related"><a href="https://{ORIGIN}s/{i}">.examples is another host</a> · <a href="//{ORIGIN}/{slug}.html#comments">{n} comments</a></div>"#,
                n = (i * 37) % 400
            );
        }
    }
    s.push_str("</article>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names() {
        assert_eq!(parse_gen_name("110kb.html"), Some(110));
        assert_eq!(parse_gen_name("16384kb.html"), Some(16384));
        assert_eq!(parse_gen_name("16385kb.html"), None);
        assert_eq!(parse_gen_name("0kb.html"), None);
        assert_eq!(parse_gen_name("kb.html"), None);
        assert_eq!(parse_gen_name("1mb.html"), None);
        assert_eq!(parse_gen_name("+5kb.html"), None);
    }

    #[test]
    fn exact_size_deterministic_and_valid_utf8() {
        for kib in [8, 110, 1024] {
            let page = generate(kib);
            assert_eq!(page.len(), kib * 1024, "{kib} KiB");
            assert_eq!(page, generate(kib));
            let text = std::str::from_utf8(&page).unwrap();
            assert!(text.starts_with("<!DOCTYPE html>"));
            assert!(text.ends_with("</html>\n"));
            assert_eq!(text.matches("</head>").count(), 1);
        }
    }

    #[test]
    fn contains_the_rewriter_cases() {
        let text = String::from_utf8(generate(64)).unwrap();
        for needle in [
            "srcset=\"https://origin.demo-publisher.example/media/",
            "href=\"http://origin.demo-publisher.example/",
            "href=\"//origin.demo-publisher.example/",
            "https:\\/\\/origin.demo-publisher.example\\/api",
            "https://origin.demo-publisher.example.evil.test/",
            "https://notorigin.demo-publisher.example/",
            "https://origin.demo-publisher.examples/",
            "https://cdn.thirdparty.example/",
            "poster=\"https://origin.demo-publisher.example/",
            "data-src=\"",
            "東京",
            "😀",
        ] {
            assert!(text.contains(needle), "missing {needle}");
        }
        assert!(text.matches("<article").count() > 30);
    }

    #[test]
    fn tiny_pages_still_complete() {
        let page = String::from_utf8(generate(1)).unwrap();
        assert!(page.contains("<article"));
        assert!(page.ends_with("</html>\n"));
    }
}
