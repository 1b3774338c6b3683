//! Maps a request to the resource it names: a file under the site root,
//! a generated page, a replayed Next.js capture, the JSON echo, or an error
//! page.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use hyper::http::request::Parts;
use hyper::Method;

use crate::body::TimedChunk;
use crate::cache::BodyCache;
use crate::knobs::percent_decode;
use crate::nextjs::{self, Kind, Replay};
use crate::pages;

/// What to send before knobs and content codings are applied.
#[derive(Debug, Clone)]
pub struct Resource {
    /// Status code.
    pub status: u16,
    /// `Content-Type` value (`None`: no such header, as in some captures).
    pub content_type: Option<Cow<'static, str>>,
    /// Whether this is a text type that is compressed per `Accept-Encoding`.
    pub text: bool,
    /// Cache key for encoded variants (`None`: do not cache).
    pub cache_key: Option<String>,
    /// Plain (unencoded) body.
    pub body: Arc<Vec<u8>>,
    /// Additional header fields.
    pub headers: Vec<(String, String)>,
    /// Recorded chunks of the body with their timing (replayed captures).
    pub chunks: Option<Arc<Vec<TimedChunk>>>,
}

const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";

impl Resource {
    fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> Self {
        Resource {
            status,
            content_type: Some(Cow::Borrowed(content_type)),
            text: is_text(content_type),
            cache_key: None,
            body: Arc::new(body),
            headers: Vec::new(),
            chunks: None,
        }
    }

    /// A small HTML page describing an error or a redirect.
    pub fn html_message(status: u16, title: &str, detail: &str) -> Self {
        let body = format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{status} {t}</title></head>\n\
             <body><h1>{status} {t}</h1><p>{d}</p></body></html>\n",
            t = html_escape(title),
            d = html_escape(detail)
        );
        Resource::new(status, HTML, body.into_bytes())
    }
}

/// Resolves `head` (with its already-read `body`) against `root`, and
/// requests under [`nextjs::BASE_PATH`] against `nextjs` when given.
pub fn route(
    root: &Path,
    nextjs: Option<&Replay>,
    cache: &BodyCache,
    head: &Parts,
    body: &[u8],
) -> Resource {
    let path = head.uri.path();
    if path == "/__echo" || head.method == Method::POST {
        return Resource::new(200, JSON, echo_json(head, body).into_bytes());
    }
    if head.method != Method::GET && head.method != Method::HEAD {
        let mut r = Resource::html_message(405, "Method Not Allowed", "Use GET, HEAD or POST.");
        r.headers
            .push(("Allow".to_string(), "GET, HEAD, POST".to_string()));
        return r;
    }
    let segments = match path_segments(path) {
        Ok(s) => s,
        Err(why) => return Resource::html_message(400, "Bad Request", why),
    };
    if segments.first().map(String::as_str) == Some("__gen") {
        return generated(cache, &segments);
    }
    if let Some(replay) = nextjs.filter(|_| nextjs::is_under_base(path)) {
        return next_app(replay, cache, head, &segments);
    }
    static_file(root, cache, &segments, path)
}

/// A request under the Next.js base path: the capture its path and headers
/// select, else a static asset of the app, else 404.
fn next_app(replay: &Replay, cache: &BodyCache, head: &Parts, segments: &[String]) -> Resource {
    let path = head.uri.path();
    let kind = Kind::of_request(&head.headers);
    if let Some(capture) = replay.find(path, &kind) {
        let content_type = capture.content_type.clone().map(Cow::Owned);
        return Resource {
            status: capture.status,
            text: content_type.as_deref().is_some_and(is_text),
            content_type,
            // Replayed chunk by chunk, encoded as it goes: nothing to cache.
            cache_key: None,
            body: capture.body.clone(),
            headers: capture.headers.clone(),
            chunks: Some(capture.chunks.clone()),
        };
    }
    if kind != Kind::Html {
        return Resource::html_message(
            404,
            "Not Found",
            &format!("No captured {kind} response for {path}"),
        );
    }
    let mut asset = static_file(&replay.static_root(), cache, segments, path);
    if asset.status == 200 && path.starts_with("/next/_next/static/") {
        // As `next start` sends them: the file names carry content hashes.
        asset.headers.push((
            "Cache-Control".to_string(),
            "public, max-age=31536000, immutable".to_string(),
        ));
    }
    asset
}

fn generated(cache: &BodyCache, segments: &[String]) -> Resource {
    let kib = match segments {
        [_, name] => pages::parse_gen_name(name),
        _ => None,
    };
    let Some(kib) = kib else {
        return Resource::html_message(
            404,
            "Not Found",
            "Generated pages are /__gen/<N>kb.html with 1 <= N <= 16384.",
        );
    };
    let key = format!("gen:{kib}");
    let body = cache
        .plain(&key, || Ok(pages::generate(kib)))
        .unwrap_or_else(|_| Arc::new(pages::generate(kib)));
    Resource {
        status: 200,
        content_type: Some(Cow::Borrowed(HTML)),
        text: true,
        cache_key: Some(key),
        body,
        headers: Vec::new(),
        chunks: None,
    }
}

fn static_file(root: &Path, cache: &BodyCache, segments: &[String], raw_path: &str) -> Resource {
    let mut file: PathBuf = root.to_path_buf();
    file.extend(segments);
    let not_found =
        || Resource::html_message(404, "Not Found", &format!("No such page: {raw_path}"));
    let Ok(mut meta) = fs::metadata(&file) else {
        return not_found();
    };
    if meta.is_dir() {
        file.push("index.html");
        match fs::metadata(&file) {
            Ok(m) => meta = m,
            Err(_) => return not_found(),
        }
    }
    if !meta.is_file() {
        return not_found();
    }
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let key = format!("file:{}:{}:{mtime}", file.display(), meta.len());
    let Ok(body) = cache.plain(&key, || fs::read(&file)) else {
        return not_found();
    };
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let content_type = content_type_for(&name);
    Resource {
        status: 200,
        content_type: Some(Cow::Borrowed(content_type)),
        text: is_text(content_type),
        cache_key: Some(key),
        body,
        headers: Vec::new(),
        chunks: None,
    }
}

/// Percent-decodes `path` and splits it into safe segments. Empty and `.`
/// segments are dropped; `..`, backslashes and NUL bytes are rejected.
pub fn path_segments(path: &str) -> Result<Vec<String>, &'static str> {
    let decoded = percent_decode(path).ok_or("Malformed percent-encoding in path.")?;
    let decoded = String::from_utf8(decoded).map_err(|_| "Path is not valid UTF-8.")?;
    let mut segments = Vec::new();
    for seg in decoded.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err("Path traversal is not allowed."),
            s if s.contains(['\\', '\0']) => return Err("Invalid character in path."),
            s => segments.push(s.to_string()),
        }
    }
    Ok(segments)
}

/// `Content-Type` for a (lower-case) file name.
pub fn content_type_for(name: &str) -> &'static str {
    if name.ends_with(".latin1.html") {
        return "text/html; charset=iso-8859-1";
    }
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "html" | "htm" => HTML,
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" => JSON,
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "ico" => "image/x-icon",
        "xml" => "application/xml",
        _ => "application/octet-stream",
    }
}

/// Whether `content_type` is compressed according to `Accept-Encoding`.
pub fn is_text(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.starts_with("text/")
        || matches!(
            essence,
            "application/json" | "image/svg+xml" | "application/xml"
        )
}

/// The `/__echo` JSON document for a request.
pub fn echo_json(head: &Parts, body: &[u8]) -> String {
    let mut out = String::from("{\"method\":");
    json_string(&mut out, head.method.as_str());
    out.push_str(",\"path\":");
    json_string(&mut out, head.uri.path());
    out.push_str(",\"query\":");
    json_string(&mut out, head.uri.query().unwrap_or(""));
    out.push_str(",\"headers\":[");
    for (i, (name, value)) in head.headers.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        json_string(&mut out, name.as_str());
        out.push(',');
        json_string(&mut out, &String::from_utf8_lossy(value.as_bytes()));
        out.push(']');
    }
    let _ = write!(out, "],\"body_len\":{}}}", body.len());
    out
}

/// Appends `s` as a JSON string literal (serde_json's escaping).
pub fn json_string(out: &mut String, s: &str) {
    // Serialising a `str` into a `String` cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_reject_traversal_in_any_spelling() {
        assert_eq!(path_segments("/a//./b/").unwrap(), vec!["a", "b"]);
        for bad in [
            "/../x",
            "/a/%2e%2E/x",
            "/a/..",
            "/a%5c..%5cb",
            "/a%00",
            "/%zz",
        ] {
            assert!(path_segments(bad).is_err(), "accepted {bad}");
        }
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type_for("index.html"), HTML);
        assert_eq!(
            content_type_for("latin1.latin1.html"),
            "text/html; charset=iso-8859-1"
        );
        assert_eq!(content_type_for("app.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type_for("hero.png"), "image/png");
        assert_eq!(content_type_for("random.bin"), "application/octet-stream");
        assert!(is_text(content_type_for("logo.svg")));
        assert!(is_text(content_type_for("feed.json")));
        assert!(!is_text(content_type_for("font.woff2")));
    }

    #[test]
    fn json_escaping() {
        let mut s = String::new();
        json_string(&mut s, "a\"b\\c\nd\u{1}é😀");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001é😀\"");
    }
}
