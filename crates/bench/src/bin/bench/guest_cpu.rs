//! Guest CPU per request: what one request costs in the wasm guest, for five kinds of request
//! through the streaming build (its first process): a small page, a 110 KB page, a Next.js
//! page, a cache hit and a first-party proxy request (the 100 KB image).
//!
//! Method, the one `throughput compression` uses for `cpu_per_page_edge_over_reencode`: a wasm
//! instance is single-threaded, so wall time on the guest's own clock, where the guest waits
//! for nothing, is its CPU time. Here the clock is the access line's (`docs/logs.md`): the
//! guest's time from the request's arrival to its last byte (`last_byte_ms`, or `headers_ms`
//! when the platform streams the body for it: a cache hit, an image passed through), less the
//! one wait the guest records, the origin's (or partner's) answer (`origin_ms`). What is left
//! is the guest's work plus its host calls (cache lookup, secret store, client writes) and
//! the loopback origin's body arriving, which on these pages sent at once is small; it leaves
//! out instantiating the module. The access line's times have microseconds (builds before
//! 29 Nov 2026 wrote 0.1 ms, which parse the same), and each figure is the median over many
//! requests, sent one at a time.
//!
//! The pages come from the demo origin at once (the Next.js capture with `nextjs_timing=0`:
//! its recorded chunks back to back), so no recorded pause counts as guest time. Every
//! request must answer `200`; the cache hits must say `x-ts-cache: HIT`, and each line read
//! must be the request's (path, and `cache=HIT` for the hits).

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::stats::median;

const TIMEOUT: Duration = Duration::from_secs(30);

/// One kind of request and its guest time.
#[derive(Debug, Clone)]
pub struct GuestCase {
    /// Result-key suffix: `small_page`, `110kb_page`, `nextjs_page`, `cache_hit`,
    /// `first_party_proxy`.
    pub name: &'static str,
    /// Median guest milliseconds per request.
    pub median_ms: f64,
    /// Requests measured.
    pub requests: usize,
}

/// What to request and how to recognise its access line.
#[derive(Clone)]
pub struct Request {
    /// Result-key suffix.
    pub name: &'static str,
    /// The request target (path and query).
    pub target: String,
    /// The access line's `path` (without the query).
    pub path: &'static str,
    /// `Some("HIT")`: the response's `x-ts-cache` and the line's `cache` must say so.
    pub cache: Option<&'static str>,
    /// The request's headers.
    pub headers: Vec<(&'static str, &'static str)>,
}

impl Request {
    /// A plain `GET` of `target` (the line's `path` is `path`), unencoded: the body is rewritten
    /// and sent without a compression step.
    pub fn get(name: &'static str, target: String, path: &'static str) -> Request {
        Request {
            name,
            target,
            path,
            cache: None,
            headers: vec![("accept-encoding", "identity")],
        }
    }
}

/// Warm-up requests per case and process; for the cache hit, the first fills the entry.
pub const WARM_UP: usize = 3;

/// The five requests; `first_party` is a signed `/first-party/proxy` URL of the image. The
/// cache hit's page has a query of its own (`guest_cpu=<now>`), so its entry is this run's.
pub fn requests(first_party: String) -> Vec<Request> {
    let run_id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    vec![
        Request::get("small_page", "/embed/poll.html".into(), "/embed/poll.html"),
        Request::get(
            "110kb_page",
            "/__gen/110kb.html".into(),
            "/__gen/110kb.html",
        ),
        Request::get("nextjs_page", "/next?nextjs_timing=0".into(), "/next"),
        Request {
            cache: Some("HIT"),
            ..Request::get(
                "cache_hit",
                format!("{}&guest_cpu={run_id}", crate::cache::PAGE),
                "/__gen/110kb.html",
            )
        },
        Request::get(
            "first_party_proxy",
            first_party,
            trusted_server_core::first_party::token::PROXY_PATH,
        ),
    ]
}

/// The five requests ([`requests`]), sent to the build behind `log` at `proxy`.
///
/// # Errors
/// If a request fails or its access lines do not appear.
pub fn run(
    proxy: SocketAddr,
    log: &Path,
    first_party: String,
    quick: bool,
) -> Result<Vec<GuestCase>, String> {
    let count = if quick { 31 } else { 101 };
    let mut out = Vec::new();
    for r in &requests(first_party) {
        warm_up(proxy, log, r)?;
        let mark = log_len(log)?;
        for _ in 0..count {
            fetch(proxy, r, r.cache)?;
        }
        let times = read_lines(log, mark, r, count)?;
        out.push(GuestCase {
            name: r.name,
            median_ms: median(times),
            requests: count,
        });
    }
    Ok(out)
}

/// Sends `r`'s [`WARM_UP`] requests to `proxy` and waits for their access lines in `log` (a
/// request's line is written after its last byte has left, so the next mark of the log must
/// wait for them); returns the responses. The first need not be a cache hit: it fills the
/// entry.
///
/// # Errors
/// If a request fails or its access lines do not appear.
pub fn warm_up(proxy: SocketAddr, log: &Path, r: &Request) -> Result<Vec<e2e::Timed>, String> {
    let before = log_len(log)?;
    let responses = (0..WARM_UP)
        .map(|i| fetch(proxy, r, r.cache.filter(|_| i > 0)))
        .collect::<Result<Vec<_>, String>>()?;
    let any_verdict = Request {
        cache: None,
        ..r.clone()
    };
    read_lines(log, before, &any_verdict, WARM_UP)?;
    Ok(responses)
}

/// The length of `log` now: the mark after which [`access_times`] reads.
///
/// # Errors
/// If the log cannot be read.
pub fn log_len(log: &Path) -> Result<u64, String> {
    std::fs::metadata(log)
        .map(|m| m.len())
        .map_err(|e| format!("{}: {e}", log.display()))
}

/// The guest milliseconds of the `count` access lines after byte `mark` of `log`, each of a
/// `200` for `path` (waiting for them as [`run`] does); `name` names them in errors. Other
/// lines, or another count, are an error.
///
/// # Errors
/// As [`run`]'s reading of the lines.
pub fn access_times(
    log: &Path,
    mark: u64,
    name: &'static str,
    path: &'static str,
    count: usize,
) -> Result<Vec<f64>, String> {
    read_lines(log, mark, &Request::get(name, path.to_owned(), path), count)
}

/// One request of `r` to `proxy`, which must answer a complete `200`, with `x-ts-cache: <cache>`
/// when `cache` is given.
///
/// # Errors
/// If the request fails or its answer is not that.
pub fn fetch(proxy: SocketAddr, r: &Request, cache: Option<&str>) -> Result<e2e::Timed, String> {
    let got = e2e::get(proxy, &r.target, &r.headers, TIMEOUT)
        .map_err(|e| format!("guest cpu {}: {e}", r.name))?;
    if got.status != 200 || !got.complete {
        return Err(format!(
            "guest cpu {}: status {} complete {}",
            r.name, got.status, got.complete
        ));
    }
    if let Some(want) = cache {
        let verdict = got.header("x-ts-cache").unwrap_or_default();
        if verdict != want {
            return Err(format!(
                "guest cpu {}: x-ts-cache {verdict:?}, expected {want}",
                r.name
            ));
        }
    }
    Ok(got)
}

/// Waits (up to 10 s: a line is written after its response has left) for `count` access lines
/// after byte `mark` of `log`, and returns each one's guest milliseconds; more lines, or any
/// line not `r`'s, is an error.
///
/// # Errors
/// As said, or if the log cannot be read.
pub fn read_lines(log: &Path, mark: u64, r: &Request, count: usize) -> Result<Vec<f64>, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let start = usize::try_from(mark).unwrap_or(usize::MAX).min(text.len());
        let new = String::from_utf8_lossy(&text[start..]);
        let lines: Vec<&str> = new.lines().filter(|l| l.contains(" access id=")).collect();
        if lines.len() >= count || Instant::now() > deadline {
            if lines.len() != count {
                return Err(format!(
                    "guest cpu {}: {} access lines in {} after the requests, expected {count}",
                    r.name,
                    lines.len(),
                    log.display()
                ));
            }
            return lines.iter().map(|l| guest_ms(l, r)).collect();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The guest milliseconds of one access line of `r`: the end (`last_byte_ms`, else
/// `headers_ms`) less `origin_ms` when the origin was asked.
fn guest_ms(line: &str, r: &Request) -> Result<f64, String> {
    let field = |name: &str| -> Option<&str> {
        line.split(' ')
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    };
    let number = |name: &str| field(name).and_then(|v| v.parse::<f64>().ok());
    let path = field("path").map(|p| p.trim_matches('"'));
    if path != Some(r.path) || field("status") != Some("200") {
        return Err(format!("guest cpu {}: not its access line: {line}", r.name));
    }
    if let Some(want) = r.cache {
        if field("cache") != Some(want) {
            return Err(format!("guest cpu {}: not a {want}: {line}", r.name));
        }
    }
    let end = number("last_byte_ms")
        .or_else(|| number("headers_ms"))
        .ok_or_else(|| format!("guest cpu {}: no end time: {line}", r.name))?;
    Ok(end - number("origin_ms").unwrap_or(0.0))
}

/// Prints the table.
pub fn print(cases: &[GuestCase]) {
    println!("\nguest CPU per request (access line: end - origin wait; median, ms)");
    for c in cases {
        println!(
            "  {:<20} {:>8.3} ms  ({} requests)",
            c.name, c.median_ms, c.requests
        );
    }
}

/// `guest_cpu_ms_<name>` (two decimals, as before the access line had microseconds) and
/// `guest_cpu_us_<name>` per case.
pub fn results(cases: &[GuestCase]) -> Vec<(String, String)> {
    (cases.iter())
        .flat_map(|c| {
            [
                (
                    format!("guest_cpu_ms_{}", c.name),
                    format!("{:.2}", c.median_ms),
                ),
                (
                    format!("guest_cpu_us_{}", c.name),
                    format!("{:.0}", c.median_ms * 1000.0),
                ),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cache: Option<&'static str>) -> Request {
        Request {
            cache,
            ..Request::get("t", "/a?b".into(), "/a")
        }
    }

    #[test]
    fn the_guest_time_is_the_end_less_the_origin_wait() {
        let page = "trusted_server :: access id=01 method=GET path=\"/a\" status=200 plan=rewrite:html+identity \
                    origin_ms=1.4 headers_ms=2.3 first_byte_ms=2.3 rewrite_ms=0.0 last_byte_ms=3.0 outcome=finished cache=PASS(no-ttl)";
        assert!((guest_ms(page, &request(None)).unwrap() - 1.6).abs() < 1e-9);
        // Passed through: the end is the headers' hand-over; no origin for a hit.
        let hit = "trusted_server :: access id=02 method=GET path=\"/a\" status=200 plan=cache \
                   origin_ms=- headers_ms=0.4 first_byte_ms=- rewrite_ms=- last_byte_ms=- outcome=passed-through(cache-hit) cache=HIT";
        assert!((guest_ms(hit, &request(Some("HIT"))).unwrap() - 0.4).abs() < 1e-9);
    }

    #[test]
    fn microsecond_lines_read_as_tenths_do() {
        // Today's access line; the test above has an older build's, with one decimal.
        let page = "trusted_server :: access id=06 method=GET path=\"/a\" status=200 \
                    origin_ms=1.412 headers_ms=2.300 last_byte_ms=3.046 cache=PASS(no-ttl)";
        assert!((guest_ms(page, &request(None)).unwrap() - 1.634).abs() < 1e-9);
    }

    #[test]
    fn another_requests_line_is_refused() {
        let other = "trusted_server :: access id=03 method=GET path=\"/b\" status=200 origin_ms=- headers_ms=0.4 last_byte_ms=-";
        assert!(guest_ms(other, &request(None)).is_err());
        let miss = "trusted_server :: access id=04 method=GET path=\"/a\" status=200 origin_ms=1.0 headers_ms=2.0 last_byte_ms=3.0 cache=MISS";
        assert!(guest_ms(miss, &request(Some("HIT"))).is_err());
        let failed = "trusted_server :: access id=05 method=GET path=\"/a\" status=502 origin_ms=1.0 headers_ms=2.0 last_byte_ms=-";
        assert!(guest_ms(failed, &request(None)).is_err());
    }
}
