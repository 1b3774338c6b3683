//! End-to-end scenarios of delivery (issue 19, items 2 and 4): `Server-Timing` on every
//! response and its setting, the access line's phases, and compression at the edge
//! (`delivery.compression = "edge"`) against the demo origin.
//!
//! The `edge` build runs with `delivery.compression = "edge"` and `delivery.server_timing =
//! false`, so one extra build shows both settings. Viceroy does not compress on delivery: it
//! passes `x-compress-hint` through to the client, which is what these tests observe.

use std::net::SocketAddr;
use std::path::Path;

use super::{
    build_log_line, check, expected, fetch, fetch_complete, fixture, gunzip, log_line, same_bytes,
    Outcome, World, ORIGIN_HOST, ORIGIN_LOG,
};

/// Builds and starts the `edge` build against the demo origin at `origin_addr`.
pub fn start_edge_build(
    root: &Path,
    dir: &Path,
    origin_addr: SocketAddr,
) -> Result<(e2e::ChildGuard, SocketAddr), String> {
    let wasm = e2e::build_service(
        root,
        &dir.join("edge.wasm"),
        &[
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL".to_owned(),
                format!("http://{origin_addr}"),
            ),
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST".to_owned(),
                ORIGIN_HOST.to_owned(),
            ),
            (
                "TRUSTED_SERVER__DELIVERY__COMPRESSION".to_owned(),
                "edge".to_owned(),
            ),
            (
                "TRUSTED_SERVER__DELIVERY__SERVER_TIMING".to_owned(),
                "false".to_owned(),
            ),
        ],
    )?;
    e2e::start_viceroy(
        &wasm,
        &root.join("fastly.toml"),
        &dir.join("viceroy-edge.log"),
    )
    .map_err(|e| format!("viceroy (edge): {e}"))
}

/// One `Server-Timing` metric: its name and its `dur`, if it has one.
type Metric = (String, Option<f64>);

/// Reads a `Server-Timing` value strictly: a comma-separated list of `name` with `;param=value`
/// parameters, names tokens, `dur` a non-negative number, `desc` a token or a quoted string.
/// Independent of the service's formatter: a scanner over the grammar.
fn metrics(value: &str) -> Result<Vec<Metric>, String> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    let token = |s: &str| !s.is_empty() && s.chars().all(tchar);
    let mut out = Vec::new();
    for element in value.split(',') {
        let mut parts = element.split(';').map(|p| p.trim_matches([' ', '\t']));
        let name = parts.next().unwrap_or("");
        if !token(name) {
            return Err(format!("bad metric name {name:?} in {value:?}"));
        }
        let mut dur = None;
        for param in parts {
            let (k, v) = param
                .split_once('=')
                .ok_or_else(|| format!("parameter {param:?} without a value in {value:?}"))?;
            if !token(k) {
                return Err(format!("bad parameter name {k:?} in {value:?}"));
            }
            let quoted = v.len() >= 2 && v.starts_with('"') && v.ends_with('"');
            if !(token(v) || quoted) {
                return Err(format!("bad parameter value {v:?} in {value:?}"));
            }
            if k == "dur" {
                let ms: f64 = v
                    .parse()
                    .map_err(|_| format!("dur {v:?} is not a number in {value:?}"))?;
                if !(ms.is_finite() && ms >= 0.0) {
                    return Err(format!("dur {v:?} in {value:?}"));
                }
                dur = Some(ms);
            }
        }
        out.push((name.to_owned(), dur));
    }
    Ok(out)
}

fn dur_of(metrics: &[Metric], name: &str) -> Option<f64> {
    metrics
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, d)| *d)
}

/// The `Server-Timing` lines of a response, joined as one list.
fn server_timing(r: &e2e::Timed) -> Option<String> {
    let lines = r.header_values("server-timing");
    (!lines.is_empty()).then(|| {
        lines
            .iter()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

pub fn server_timing_on_every_response(w: &World) -> Outcome {
    // The service's own endpoint: no origin, only the time in the service.
    let health = fetch_complete(w.streaming, "/_ts/health", &[])?;
    let value = server_timing(&health).ok_or("no Server-Timing on /_ts/health")?;
    let m = metrics(&value)?;
    check(dur_of(&m, "edge").is_some(), || {
        format!("no edge;dur: {value}")
    })?;
    check(dur_of(&m, "origin").is_none(), || {
        format!("an origin time without an origin: {value}")
    })?;
    // A proxied page, rewritten (gzip) and passed through (an image): the origin's wait and
    // the time in the service, which includes it.
    for (path, coding) in [
        ("/news/article.html?timing=1", "gzip"),
        ("/news/article.html?timing=2", "identity"),
        ("/static/hero.png", "identity"),
    ] {
        for build in [w.streaming, w.buffered] {
            let r = fetch(build, path, &[("accept-encoding", coding)])?;
            let value = server_timing(&r).ok_or_else(|| format!("{path}: no Server-Timing"))?;
            let m = metrics(&value)?;
            // Only the service's vocabulary: nothing taken from the request or the reader.
            check(
                m.iter()
                    .all(|(n, _)| n == "origin" || n == "edge" || n == "cache"),
                || format!("{path}: unexpected metrics in {value}"),
            )?;
            // The cache's verdict, as `x-ts-cache` says it (quoted when not a token).
            let verdict = r.header("x-ts-cache").unwrap_or("(none)");
            check(
                value.contains(&format!("cache;desc={verdict}"))
                    || value.contains(&format!("cache;desc=\"{verdict}\"")),
                || format!("{path}: x-ts-cache {verdict} but {value}"),
            )?;
            let origin = dur_of(&m, "origin").ok_or_else(|| format!("{path}: {value}"))?;
            let edge = dur_of(&m, "edge").ok_or_else(|| format!("{path}: {value}"))?;
            check(origin <= edge + 0.1, || {
                format!("{path}: the origin wait exceeds the time in the service: {value}")
            })?;
            check(edge < 30_000.0, || format!("{path}: {value}"))?;
        }
    }
    // The origin's wait is measured: a page whose headers the origin holds back 300 ms.
    let slow = fetch(w.streaming, "/news/article.html?headers_delay_ms=300", &[])?;
    let value = server_timing(&slow).ok_or("no Server-Timing on the slow page")?;
    let origin = dur_of(&metrics(&value)?, "origin").unwrap_or(0.0);
    check(origin >= 290.0, || {
        format!("the origin held its headers 300 ms: {value}")
    })
}

pub fn server_timing_off_by_setting(w: &World) -> Outcome {
    for path in ["/_ts/health", "/news/article.html", "/static/hero.png"] {
        let r = fetch(w.edge, path, &[("accept-encoding", "gzip")])?;
        check(r.status == 200, || format!("{path}: status {}", r.status))?;
        check(server_timing(&r).is_none(), || {
            format!("{path}: Server-Timing with server_timing = false")
        })?;
    }
    Ok(())
}

pub fn access_line_has_the_phases(w: &World) -> Outcome {
    let r = fetch_complete(
        w.streaming,
        "/news/article.html?phases=1",
        &[("accept-encoding", "gzip")],
    )?;
    let value = server_timing(&r).ok_or("no Server-Timing")?;
    let line = log_line(
        w,
        &[
            "trusted_server :: access ",
            "plan=rewrite:html+gzip",
            "origin_ms=",
        ],
    )?;
    let field = |name: &str| -> Result<f64, String> {
        let v = line
            .split(' ')
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .ok_or_else(|| format!("{name} missing from {line}"))?;
        v.parse().map_err(|_| format!("{name}={v} in {line}"))
    };
    let (origin, headers, first, rewrite, last) = (
        field("origin_ms")?,
        field("headers_ms")?,
        field("first_byte_ms")?,
        field("rewrite_ms")?,
        field("last_byte_ms")?,
    );
    check(
        origin <= headers && headers <= first && first <= last && rewrite <= last,
        || format!("phases out of order: {line}"),
    )?;
    check(rewrite > 0.0, || format!("no rewrite time: {line}"))?;
    // What the header said is what the line says (the header is written before the body).
    let said = dur_of(&metrics(&value)?, "origin").unwrap_or(-1.0);
    check(said >= 0.0, || format!("no origin in {value}"))
}

pub fn edge_compression_asks_for_identity_and_marks_the_response(w: &World) -> Outcome {
    // The origin was asked for identity though the client accepts gzip and brotli.
    let echo = fetch_complete(w.edge, "/__echo", &[("accept-encoding", "gzip, br")])?;
    let seen: serde_json::Value = serde_json::from_slice(&echo.body)
        .map_err(|e| format!("echo: {e}: {}", String::from_utf8_lossy(&echo.body)))?;
    let codings: Vec<&str> = seen["headers"]
        .as_array()
        .ok_or("echo without headers")?
        .iter()
        .filter(|h| h[0].as_str() == Some("accept-encoding"))
        .filter_map(|h| h[1].as_str())
        .collect();
    check(codings == ["identity"], || {
        format!("the origin saw Accept-Encoding {codings:?}")
    })?;
    // A page: identity body, rewritten exactly as the default build rewrites (and gzips) it,
    // marked for delivery compression and varying on Accept-Encoding.
    let path = "/news/article.html?edge_compression=1";
    let edge = fetch_complete(w.edge, path, &[("accept-encoding", "gzip, br")])?;
    check(edge.header("x-compress-hint") == Some("on"), || {
        format!("x-compress-hint {:?}", edge.header("x-compress-hint"))
    })?;
    check(edge.header("content-encoding").is_none(), || {
        format!("content-encoding {:?}", edge.header("content-encoding"))
    })?;
    let vary: Vec<String> = edge
        .header_values("vary")
        .iter()
        .flat_map(|v| {
            String::from_utf8_lossy(v)
                .to_ascii_lowercase()
                .split(',')
                .map(|t| t.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    check(vary.iter().any(|t| t == "accept-encoding"), || {
        format!("vary {vary:?}")
    })?;
    let original = fixture(w, "news/article.html");
    same_bytes(
        "edge body",
        &edge.body,
        &expected(&original, &w.edge.to_string()),
    )?;
    let wasm = fetch_complete(w.streaming, path, &[("accept-encoding", "gzip, br")])?;
    check(wasm.header("x-compress-hint").is_none(), || {
        "x-compress-hint with compression = wasm".into()
    })?;
    let coding = wasm.header("content-encoding");
    let decoded = match coding {
        Some("gzip") => gunzip(&wasm.body)?,
        Some("br") => {
            let mut out = Vec::new();
            std::io::Read::read_to_end(
                &mut brotli::Decompressor::new(&wasm.body[..], 4096),
                &mut out,
            )
            .map_err(|e| format!("brotli: {e}"))?;
            out
        }
        other => return Err(format!("the wasm build sent content-encoding {other:?}")),
    };
    same_bytes(
        "wasm body, decoded",
        &decoded,
        &expected(&original, &w.streaming.to_string()),
    )?;
    // The origin's own log: it sent this page uncompressed.
    origin_log_line(w, "edge_compression=1", "ce=identity")?;
    // An image is not marked (nothing to gain), and the access line shows the identity plan.
    let image = fetch_complete(w.edge, "/static/hero.png", &[("accept-encoding", "gzip")])?;
    check(image.header("x-compress-hint").is_none(), || {
        "an image marked for compression".into()
    })?;
    build_log_line(
        w,
        "edge",
        &[
            "trusted_server :: access ",
            "path=\"/news/article.html\"",
            "plan=rewrite:html+identity",
        ],
    )
    .map(|_| ())
}

pub fn edge_compression_reencodes_when_the_origin_ignores_identity(w: &World) -> Outcome {
    // The demo origin's `encoding` knob forces gzip whatever was asked.
    let r = fetch_complete(
        w.edge,
        "/news/article.html?encoding=gzip",
        &[("accept-encoding", "gzip")],
    )?;
    check(r.header("content-encoding") == Some("gzip"), || {
        format!("content-encoding {:?}", r.header("content-encoding"))
    })?;
    check(r.header("x-compress-hint").is_none(), || {
        "a compressed body marked for compression".into()
    })?;
    same_bytes(
        "gunzipped body",
        &gunzip(&r.body)?,
        &expected(&fixture(w, "news/article.html"), &w.edge.to_string()),
    )
}

/// Waits for the demo origin's log line with `marker` and checks it has `needle`.
fn origin_log_line(w: &World, marker: &str, needle: &str) -> Outcome {
    let path = w.root.join(ORIGIN_LOG);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let log = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(line) = log.lines().find(|l| l.contains(marker)) {
            return check(line.contains(needle), || {
                format!("origin log: {needle} missing from {line}")
            });
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("no origin log line with {marker}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
