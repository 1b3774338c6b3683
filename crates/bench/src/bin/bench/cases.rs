//! The pages and variants the latency run measures.

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
}

/// All cases. Dripped pages take ~2 s per request, so they get fewer rounds.
pub fn all(quick: bool) -> Vec<Case> {
    let (fast, slow) = if quick { (15, 5) } else { (41, 15) };
    vec![
        Case {
            name: "small",
            path: "/embed/poll.html",
            encoding: "identity",
            rounds: fast,
        },
        Case {
            name: "110kb",
            path: "/__gen/110kb.html",
            encoding: "identity",
            rounds: fast,
        },
        Case {
            name: "110kb_gzip",
            path: "/__gen/110kb.html",
            encoding: "gzip",
            rounds: fast,
        },
        Case {
            name: "1mb",
            path: "/__gen/1024kb.html",
            encoding: "identity",
            rounds: fast,
        },
        // Head at once, the rest in 10 parts 200 ms apart (~2 s).
        Case {
            name: "drip",
            path: "/news/article.html?drip_ms=200&drip_chunks=10",
            encoding: "identity",
            rounds: slow,
        },
        Case {
            name: "drip_gzip",
            path: "/news/article.html?drip_ms=200&drip_chunks=10",
            encoding: "gzip",
            rounds: slow,
        },
        // The 1 MB page from an origin that takes ~1 s to send it, as real origins do.
        Case {
            name: "1mb_paced",
            path: "/__gen/1024kb.html?drip_ms=50&drip_chunks=20",
            encoding: "identity",
            rounds: slow,
        },
    ]
}
