//! Replays the captured Next.js app (`fixtures/nextjs`) under [`BASE_PATH`].
//!
//! `scripts/capture-nextjs-fixtures.sh` records every response a browser
//! needs from the real app: each page's HTML and each Flight
//! (`text/x-component`) response of a client-side navigation, a prefetch or
//! a segment prefetch, with the time every body chunk arrived. A request
//! under `/next/` is answered with the capture whose path equals the
//! request's path (the query, including Next's `_rsc` cache buster, is
//! ignored) and whose [`Kind`] equals the one the request's headers select,
//! so a browser's `RSC: 1` fetch gets the Flight capture while a plain `GET`
//! gets the HTML. Everything else under `/next/` is a static file from
//! `static/` (the build's `/_next/static` assets, `public/` files, icons),
//! mirroring the URL path.
//!
//! Captures are loaded once, when the server starts; no Node is involved.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::body::TimedChunk;
use hyper::HeaderMap;
use serde_json::Value as Json;

/// The app's `basePath`: everything it serves is under this path.
pub const BASE_PATH: &str = "/next";

/// Response header fields of a capture that are not replayed: framing and
/// hop-by-hop fields (the server frames the body itself), the content coding
/// (bodies are stored decoded and encoded again per `Accept-Encoding`), the
/// date (a fresh one is sent) and `content-type` (kept separately).
const DROPPED_HEADERS: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "te",
    "trailer",
    "upgrade",
    "date",
    "content-type",
];

/// Which response of a path a request selects, from its Next.js request headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// No `RSC: 1`: the HTML page (or whatever the path answers to a browser).
    Html,
    /// `RSC: 1`: the Flight payload of a client-side navigation.
    Rsc,
    /// `RSC: 1` and `Next-Router-Prefetch: 1`: a route prefetch.
    Prefetch,
    /// `RSC: 1` and `Next-Router-Segment-Prefetch: <segment>`: a segment
    /// prefetch (Next 16's client segment cache), e.g. `/_tree`.
    SegmentPrefetch(String),
}

impl Kind {
    /// The kind a request's headers select.
    pub fn of_request(headers: &HeaderMap) -> Kind {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        if header("rsc") != Some("1") {
            return Kind::Html;
        }
        if let Some(segment) = header("next-router-segment-prefetch") {
            return Kind::SegmentPrefetch(segment.to_string());
        }
        if header("next-router-prefetch") == Some("1") {
            return Kind::Prefetch;
        }
        Kind::Rsc
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Html => f.write_str("html"),
            Kind::Rsc => f.write_str("rsc"),
            Kind::Prefetch => f.write_str("prefetch"),
            Kind::SegmentPrefetch(s) => write!(f, "segment-prefetch {s}"),
        }
    }
}

/// One captured response.
#[derive(Debug, Clone)]
pub struct Capture {
    /// File name stem in the fixture directory (`about.rsc`, ...).
    pub name: String,
    /// Request path it answers (no query).
    pub path: String,
    /// Request kind it answers.
    pub kind: Kind,
    /// Captured status.
    pub status: u16,
    /// Captured `Content-Type`, if any.
    pub content_type: Option<String>,
    /// Captured header fields to replay, in order (names lower-case).
    pub headers: Vec<(String, String)>,
    /// The body, exactly as received (identity coding).
    pub body: Arc<Vec<u8>>,
    /// The body's chunks in order, with when each arrived after the head.
    pub chunks: Arc<Vec<TimedChunk>>,
}

/// All captures of one fixture directory.
#[derive(Debug, Clone)]
pub struct Replay {
    dir: PathBuf,
    captures: Vec<Capture>,
}

impl Replay {
    /// Loads `dir/index.json` and every capture it lists.
    pub fn load(dir: &Path) -> Result<Replay, String> {
        let read_json = |name: &str| -> Result<Json, String> {
            let path = dir.join(name);
            let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            serde_json::from_str::<Json>(&text).map_err(|e| format!("{}: {e}", path.display()))
        };
        let index = read_json("index.json")?;
        let list = index
            .get("captures")
            .and_then(Json::as_array)
            .ok_or("index.json: no captures list")?;
        let mut captures = Vec::with_capacity(list.len());
        for entry in list {
            let field = |key: &str| {
                entry
                    .get(key)
                    .and_then(Json::as_str)
                    .ok_or_else(|| format!("index.json: a capture without {key}"))
            };
            let name = field("name")?;
            if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
                return Err(format!("index.json: bad capture name {name:?}"));
            }
            let kind = match field("kind")? {
                "html" => Kind::Html,
                "rsc" => Kind::Rsc,
                "prefetch" => Kind::Prefetch,
                "segment-prefetch" => Kind::SegmentPrefetch(
                    entry
                        .get("select")
                        .and_then(|s| s.get("Next-Router-Segment-Prefetch"))
                        .and_then(Json::as_str)
                        .ok_or_else(|| format!("{name}: segment prefetch without a segment"))?
                        .to_string(),
                ),
                other => return Err(format!("{name}: unknown kind {other:?}")),
            };
            let meta = read_json(&format!("{name}.meta.json"))?;
            let body_path = dir.join(format!("{name}.body"));
            let body = fs::read(&body_path).map_err(|e| format!("{}: {e}", body_path.display()))?;
            let status = meta
                .get("status")
                .and_then(Json::as_u64)
                .filter(|s| (100..=599).contains(s))
                .ok_or_else(|| format!("{name}: bad status"))? as u16;
            let mut content_type = None;
            let mut headers = Vec::new();
            for pair in meta
                .get("headers")
                .and_then(Json::as_array)
                .ok_or_else(|| format!("{name}: no headers"))?
            {
                let (Some(n), Some(v)) = (
                    pair.as_array()
                        .and_then(|p| p.first())
                        .and_then(Json::as_str),
                    pair.as_array()
                        .and_then(|p| p.get(1))
                        .and_then(Json::as_str),
                ) else {
                    return Err(format!("{name}: a header is not a [name, value] pair"));
                };
                let n = n.to_ascii_lowercase();
                if n == "content-type" {
                    content_type = Some(v.to_string());
                }
                if !DROPPED_HEADERS.contains(&n.as_str()) {
                    headers.push((n, v.to_string()));
                }
            }
            let mut chunks = Vec::new();
            for c in meta
                .get("chunks")
                .and_then(Json::as_array)
                .ok_or_else(|| format!("{name}: no chunks"))?
            {
                let len = c.get("len").and_then(Json::as_u64);
                let at = c.get("at_ms").and_then(Json::as_f64).filter(|t| *t >= 0.0);
                let (Some(len), Some(at)) = (len, at) else {
                    return Err(format!("{name}: a chunk without len or at_ms"));
                };
                chunks.push(TimedChunk {
                    len: len as usize,
                    at: Duration::from_secs_f64(at / 1000.0),
                });
            }
            let total: usize = chunks.iter().map(|c| c.len).sum();
            if total != body.len() {
                return Err(format!(
                    "{name}: chunk lengths add up to {total}, the body has {}",
                    body.len()
                ));
            }
            captures.push(Capture {
                name: name.to_string(),
                path: field("path")?.to_string(),
                kind,
                status,
                content_type,
                headers,
                body: Arc::new(body),
                chunks: Arc::new(chunks),
            });
        }
        Ok(Replay {
            dir: dir.to_path_buf(),
            captures,
        })
    }

    /// Every capture, in `index.json` order.
    pub fn captures(&self) -> &[Capture] {
        &self.captures
    }

    /// The capture for `path` (no query) and `kind`, if there is one.
    pub fn find(&self, path: &str, kind: &Kind) -> Option<&Capture> {
        self.captures
            .iter()
            .find(|c| c.path == path && &c.kind == kind)
    }

    /// Root of the static files: URL path `/next/x` is `<static_root>/next/x`.
    pub fn static_root(&self) -> PathBuf {
        self.dir.join("static")
    }
}

/// Whether `path` is [`BASE_PATH`] or below it.
pub fn is_under_base(path: &str) -> bool {
    path.strip_prefix(BASE_PATH)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The default capture directory: `fixtures/nextjs` at the workspace root.
pub fn default_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/nextjs"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_request_headers() {
        let kind = |pairs: &[(&'static str, &'static str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.append(*name, hyper::header::HeaderValue::from_static(value));
            }
            Kind::of_request(&headers)
        };
        assert_eq!(kind(&[]), Kind::Html);
        assert_eq!(kind(&[("rsc", "0")]), Kind::Html);
        assert_eq!(kind(&[("next-router-prefetch", "1")]), Kind::Html);
        let state_tree = ("next-router-state-tree", "%5B%5D");
        assert_eq!(kind(&[("rsc", "1"), state_tree]), Kind::Rsc);
        let prefetch = ("next-router-prefetch", "1");
        assert_eq!(kind(&[("rsc", "1"), prefetch]), Kind::Prefetch);
        assert_eq!(
            kind(&[
                ("rsc", "1"),
                prefetch,
                ("next-router-segment-prefetch", "/_tree")
            ]),
            Kind::SegmentPrefetch("/_tree".to_string())
        );
    }

    #[test]
    fn base_path_prefix() {
        assert!(is_under_base("/next"));
        assert!(is_under_base("/next/"));
        assert!(is_under_base("/next/_next/static/chunks/a.js"));
        assert!(!is_under_base("/nextgen"));
        assert!(!is_under_base("/"));
        assert!(!is_under_base("/news/next"));
    }

    #[test]
    fn loads_the_committed_captures() {
        let replay = Replay::load(&default_dir()).unwrap();
        assert!(replay.captures().len() >= 8);
        let page = replay.find("/next", &Kind::Html).unwrap();
        assert_eq!(page.status, 200);
        assert!(page
            .content_type
            .as_deref()
            .unwrap()
            .starts_with("text/html"));
        assert!(page
            .headers
            .iter()
            .all(|(n, _)| !DROPPED_HEADERS.contains(&n.as_str())));
        let flight = replay.find("/next/about", &Kind::Rsc).unwrap();
        assert_eq!(flight.content_type.as_deref(), Some("text/x-component"));
        assert!(replay.find("/next/about", &Kind::Prefetch).is_some());
        assert!(replay
            .find("/next/about", &Kind::SegmentPrefetch("/_tree".into()))
            .is_some());
        assert!(replay.find("/next/nope", &Kind::Html).is_none());
    }

    #[test]
    fn load_reports_inconsistent_fixtures() {
        let dir = std::env::temp_dir().join(format!("nextjs-replay-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        assert!(Replay::load(&dir).unwrap_err().contains("index.json"));
        fs::write(
            dir.join("index.json"),
            r#"{"captures": [{"name": "a", "kind": "html", "path": "/next/a"}]}"#,
        )
        .unwrap();
        fs::write(dir.join("a.body"), b"hello").unwrap();
        fs::write(
            dir.join("a.meta.json"),
            r#"{"status": 200, "headers": [["content-type", "text/plain"], ["x-a", "1"], ["Transfer-Encoding", "chunked"]],
                "chunks": [{"len": 2, "at_ms": 0}, {"len": 2, "at_ms": 10.5}]}"#,
        )
        .unwrap();
        assert!(Replay::load(&dir).unwrap_err().contains("add up to 4"));
        fs::write(dir.join("a.body"), b"hell").unwrap();
        let replay = Replay::load(&dir).unwrap();
        let a = replay.find("/next/a", &Kind::Html).unwrap();
        assert_eq!(a.headers, vec![("x-a".to_string(), "1".to_string())]);
        assert_eq!(a.content_type.as_deref(), Some("text/plain"));
        assert_eq!(a.chunks[1].at, Duration::from_micros(10_500));
        fs::remove_dir_all(&dir).unwrap();
    }
}
