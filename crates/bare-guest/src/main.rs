//! The benchmark's floor (`--guest-only`, docs/performance.md): what a request costs a Fastly
//! guest under Viceroy when the guest does only the platform's part of the service's work,
//! and nothing of its own (no settings, consent, routing table, header policy, rewrite or
//! access record). Never deployed; built and run only by the benchmark.
//!
//! By path:
//! * `/_ts/health`: a fixed JSON answer, sent whole.
//! * a request with a query containing `cache_control=`: the core cache's entry for the path
//!   and query; a hit streams the stored body (its metadata read, as a stored page's headers
//!   are), a miss fetches the page from the origin, stores it for an hour and sends it;
//!   `x-ts-cache` says which, as the service's does.
//! * anything else: fetched from the origin, its body copied through the guest to the client
//!   in 16 KiB reads, as a rewrite reads and writes it.
//!
//! The origin is `BARE_GUEST_ORIGIN` (`host:port`) when the guest is built, else
//! `127.0.0.1:8080`. Each request writes one line shaped like the service's access line
//! (`path`, `status`, `cache`, `origin_ms`, `last_byte_ms`, the clock started first thing in
//! `main`), which the benchmark reads as it reads the service's.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use fastly::cache::core::{CacheKey, Transaction};
use fastly::http::StatusCode;
use fastly::{Backend, Body, Request, Response};

/// Where pages come from.
const ORIGIN: &str = match option_env!("BARE_GUEST_ORIGIN") {
    Some(origin) => origin,
    None => "127.0.0.1:8080",
};

/// What one request did, for its line.
struct Line {
    started: Instant,
    origin: Option<Duration>,
    cache: &'static str,
}

fn main() {
    let started = Instant::now();
    let request = Request::from_client();
    let path = request.get_path().to_owned();
    let mut line = Line {
        started,
        origin: None,
        cache: "-",
    };
    let status = match answer(request, &mut line) {
        Ok(status) => status,
        Err(why) => {
            eprintln!("bare-guest: {path}: {why}");
            let mut failed = Response::from_status(StatusCode::BAD_GATEWAY);
            failed.set_body(why);
            failed.send_to_client();
            502
        }
    };
    let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1000.0);
    let origin_ms = line.origin.map_or_else(|| "-".to_owned(), ms);
    println!(
        "bare-guest access id=- path=\"{path}\" status={status} cache={} origin_ms={origin_ms} last_byte_ms={}",
        line.cache,
        ms(line.started.elapsed())
    );
}

/// Answers `request`; returns the status sent.
fn answer(request: Request, line: &mut Line) -> Result<u16, String> {
    if request.get_path() == "/_ts/health" {
        let mut response = Response::from_body("{\"status\":\"ok\"}\n");
        response.set_header("content-type", "application/json");
        response.set_header("cache-control", "no-store");
        response.send_to_client();
        return Ok(200);
    }
    let cached = request
        .get_query_str()
        .is_some_and(|q| q.contains("cache_control="));
    match cached {
        true => from_cache(request, line),
        false => copied(request, line),
    }
}

/// The origin's answer to `request`, timed into `line`.
fn fetch(request: &Request, line: &mut Line) -> Result<Response, String> {
    let backend = Backend::builder("origin", ORIGIN)
        .finish()
        .map_err(|e| format!("backend {ORIGIN}: {e}"))?;
    let mut upstream = request.clone_without_body();
    upstream.set_header("host", ORIGIN);
    upstream.set_pass(true);
    let asked = Instant::now();
    let response = upstream.send(backend).map_err(|e| e.to_string());
    line.origin = Some(asked.elapsed());
    response
}

/// The origin's page, its body read and written by the guest.
fn copied(request: Request, line: &mut Line) -> Result<u16, String> {
    let mut response = fetch(&request, line)?;
    let status = response.get_status().as_u16();
    let body = response.take_body();
    let mut out = response.stream_to_client();
    let mut from = body.into_handle();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).map_err(|e| e.to_string())?;
    }
    out.finish().map_err(|e| e.to_string())?;
    Ok(status)
}

/// The stored page for the path and query, stored from the origin on a miss.
fn from_cache(request: Request, line: &mut Line) -> Result<u16, String> {
    let key = request.get_url_str().as_bytes().to_vec();
    let tx = Transaction::lookup(CacheKey::from(key))
        .execute()
        .map_err(|e| e.to_string())?;
    if let Some(found) = tx.found() {
        line.cache = "HIT";
        let metadata = found.user_metadata();
        let body = found.to_stream().map_err(|e| e.to_string())?;
        let mut response = Response::from_body(body);
        response.set_header("content-type", "text/html");
        response.set_header("x-bare-guest-metadata", metadata.len().to_string());
        response.set_header("x-ts-cache", "HIT");
        response.send_to_client();
        return Ok(200);
    }
    line.cache = "MISS";
    let mut response = fetch(&request, line)?;
    let page = response.take_body().into_bytes();
    let mut insert = tx
        .insert(Duration::from_secs(3600))
        .user_metadata(b"text/html".to_vec().into())
        .execute()
        .map_err(|e| e.to_string())?;
    insert.write_all(&page).map_err(|e| e.to_string())?;
    insert.finish().map_err(|e| e.to_string())?;
    let status = response.get_status().as_u16();
    response.set_header("x-ts-cache", "MISS");
    response.with_body(Body::from(page)).send_to_client();
    Ok(status)
}
