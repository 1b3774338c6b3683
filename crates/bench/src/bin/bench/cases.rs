//! The pages and variants the latency run measures, and the hosts they are served under.

use trusted_server_core::UrlRule;

/// The `Host` every proxy request carries, so both proxy builds rewrite to the same authority
/// and their outputs can be compared byte for byte.
pub const PUBLIC_HOST: &str = "bench.first-party.example";
/// The authority the origin's pages use in absolute URLs (the proxy's `origin_host`).
pub const ORIGIN_HOST: &str = "origin.demo-publisher.example";

/// The URL rule the proxy under test applies: the origin's URLs to [`PUBLIC_HOST`] over
/// plain HTTP (loopback).
pub fn proxy_rule() -> UrlRule {
    UrlRule::new(ORIGIN_HOST, "http", PUBLIC_HOST)
}

/// What a browser's navigation sends that the service's navigation rule reads.
const NAVIGATION: &[(&str, &str)] = &[("sec-fetch-dest", "document"), ("accept", "text/html")];

/// One page fetched from every side.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name used in tables and result keys.
    pub name: &'static str,
    /// Path and query on the origin (knobs included).
    pub path: &'static str,
    /// `Accept-Encoding` sent: `identity` or `gzip`.
    pub encoding: &'static str,
    /// Interleaved rounds.
    pub rounds: usize,
    /// Extra request headers (`RSC: 1` for a Flight navigation).
    pub headers: &'static [(&'static str, &'static str)],
    /// For a replayed Next.js page: the capture in `fixtures/nextjs` the origin answers with.
    /// Such a page is checked against the core pipeline run natively, not a plain replacement.
    pub capture: Option<&'static str>,
}

impl Case {
    fn page(name: &'static str, path: &'static str, encoding: &'static str, rounds: usize) -> Case {
        Case {
            name,
            path,
            encoding,
            rounds,
            headers: &[],
            capture: None,
        }
    }

    /// A page requested as a browser navigation: the proxies put the first-party script's tag
    /// in its head.
    fn navigation(
        name: &'static str,
        path: &'static str,
        encoding: &'static str,
        rounds: usize,
    ) -> Case {
        Case {
            headers: NAVIGATION,
            ..Case::page(name, path, encoding, rounds)
        }
    }

    /// Whether the proxies answer this case as a page navigation (with the script's tag).
    pub fn is_navigation(&self) -> bool {
        self.headers == NAVIGATION
    }

    fn next(name: &'static str, path: &'static str, capture: &'static str, rounds: usize) -> Case {
        Case {
            capture: Some(capture),
            headers: if capture.ends_with(".rsc") {
                &[("rsc", "1")]
            } else {
                &[]
            },
            ..Case::page(name, path, "identity", rounds)
        }
    }

    /// Whether this is a replayed Next.js (RSC) page.
    pub fn is_rsc(&self) -> bool {
        self.capture.is_some()
    }
}

/// All cases. Dripped pages take ~2 s per request and the replayed Next.js pages 0.4–0.8 s, so
/// they get fewer rounds. The pages the origin sends at once take 2–20 ms a request, so they
/// get many: their per-round ratios spread over 0.6–1.6 on a 2-core machine, and the worst
/// page's ratio of medians is only as steady as its sample count (201 rounds take ~25 s).
pub fn all(quick: bool) -> Vec<Case> {
    let (fast, slow) = if quick { (41, 5) } else { (201, 15) };
    let mut cases = vec![
        Case::page("small", "/embed/poll.html", "identity", fast),
        Case::page("110kb", "/__gen/110kb.html", "identity", fast),
        Case::page("110kb_gzip", "/__gen/110kb.html", "gzip", fast),
        Case::page("1mb", "/__gen/1024kb.html", "identity", fast),
        // Head at once, the rest in 10 parts 200 ms apart (~2 s).
        Case::page(
            "drip",
            "/news/article.html?drip_ms=200&drip_chunks=10",
            "identity",
            slow,
        ),
        // The same page as a browser's navigation: the script's tag goes into its head.
        Case::navigation(
            "drip_nav",
            "/news/article.html?drip_ms=200&drip_chunks=10",
            "identity",
            slow,
        ),
        Case::page(
            "drip_gzip",
            "/news/article.html?drip_ms=200&drip_chunks=10",
            "gzip",
            slow,
        ),
        // The 1 MB page from an origin that takes ~1 s to send it, as real origins do.
        Case::page(
            "1mb_paced",
            "/__gen/1024kb.html?drip_ms=50&drip_chunks=20",
            "identity",
            slow,
        ),
    ];
    // The captured Next.js 16 app, replayed with its recorded chunk timing (Suspense
    // boundaries resolving 0.3–0.8 s after the head): four HTML pages with inline Flight
    // scripts, and the Flight response of a client-side navigation to /next/live.
    cases.extend([
        Case::next("next", "/next", "index", slow),
        Case::next("next_live", "/next/live", "live", slow),
        Case::next("next_about", "/next/about", "about", slow),
        Case::next("next_nonce", "/next/nonce", "nonce", slow),
        Case::next("next_live_rsc", "/next/live", "live.rsc", slow),
    ]);
    cases
}
