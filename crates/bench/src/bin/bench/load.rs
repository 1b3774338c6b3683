//! Load: `wrk` against the streaming proxy, the buffered proxy and the direct origin, bounded
//! in time, at two concurrency levels, in interleaved rounds.
//!
//! One long `wrk` run per target moves by ±20% from one run to the next on a 2-core machine
//! (wrk, Viceroy and the origin share the cores), which is more than the difference between
//! the builds. So each page is loaded in several short rounds ([`rounds`]); in each round every
//! process of both builds runs back to back, the builds alternating, in an order rotated by
//! round and page. The report takes the median of the per-round ratios (each build's
//! processes averaged within the round), with their spread, and the same for one build's two
//! processes against each other: the A/A control.
//!
//! The two builds of the proxy are loaded on every page of [`PAGES`]: the pages whose origin
//! answers at once, where the body leaves in as many writes as the build makes. The dripped
//! and replayed pages are not loaded: each of their requests takes the origin's own 0.4–2 s, so
//! a bounded `wrk` run gets a handful of them and measures the origin's pacing; the latency
//! run compares the builds on those pages.

use std::net::SocketAddr;
use std::process::Command;

use crate::cases::PUBLIC_HOST;
use crate::{Options, Servers, PROCESSES};

/// The page the origin is loaded on, and the one whose keys carry no page suffix (as before
/// more pages were loaded): the article, uncompressed (the proxy rewrites all of it).
pub const PATH: &str = "/news/article.html";

/// The name of [`PATH`] in [`PAGES`].
pub const PATH_PAGE: &str = PAGES[0].0;

/// The pages both builds are loaded on (name, path): the article, and the latency run's pages
/// whose origin answers at once, uncompressed.
pub const PAGES: [(&str, &str); 4] = [
    ("article", PATH),
    ("small", "/embed/poll.html"),
    ("110kb", "/__gen/110kb.html"),
    ("1mb", "/__gen/1024kb.html"),
];

/// Rounds per page and concurrency level, and the seconds of each `wrk` run: 6 × 2 s (2 × 2 s
/// with `--quick`), each round loading both processes of both builds. About 7 minutes in all
/// (2½ with `--quick`). At 64 connections the per-round ratios of two builds that send these
/// pages alike spread over about ±15%, so the median of 5 single-process rounds still moved
/// between full runs (article: 1.071, then 0.915); a round that averages two processes per
/// build is steadier, and loading both in the same round gives the A/A control a pair per
/// round, as the builds' ratio has.
pub fn rounds(quick: bool) -> (u32, u32) {
    if quick {
        (2, 2)
    } else {
        (6, 2)
    }
}

/// One `wrk` run.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// `proxy` (streaming), `proxy_buffered` or `origin`.
    pub target: &'static str,
    /// The page's name in [`PAGES`].
    pub page: &'static str,
    /// Open connections.
    pub connections: u32,
    /// Which round (0 for a single run).
    pub round: u32,
    /// Which of the build's processes was loaded (0 for the origin and `--target` runs).
    pub process: usize,
    /// Requests per second.
    pub rps: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// Socket errors plus non-2xx/3xx responses.
    pub errors: u64,
}

/// Runs the load matrix.
///
/// # Errors
/// If `wrk` is missing or its output cannot be read.
pub fn run(servers: &Servers, options: &Options) -> Result<Vec<LoadResult>, String> {
    let (rounds, seconds) = rounds(options.quick);
    let mut results = Vec::new();
    // Keep-alive connections, as browsers use. Viceroy's listener does not set TCP_NODELAY,
    // so on a kept-alive connection the second segment of a *streamed* body waits for the
    // client's delayed ACK (~40 ms); a body sent whole does not. The buffered build is run
    // too, so that effect and the proxy's own cost can be told apart. (With `Connection:
    // close`, wrk counts every request to Viceroy as a socket read error, even for
    // `/_ts/health`, so that mode cannot show errors honestly and is not used.)
    for connections in [8u32, 64] {
        for round in 0..rounds {
            let mut runs = Vec::new();
            for (i, (page, path)) in PAGES.iter().enumerate() {
                // Every process of both builds (see `crate::PROCESSES`), builds interleaved,
                // in an order rotated by page and round so no run is always first.
                let mut order: Vec<(&'static str, SocketAddr, usize)> = (0..PROCESSES)
                    .flat_map(|p| {
                        [
                            ("proxy", servers.streaming[p], p),
                            ("proxy_buffered", servers.buffered[p], p),
                        ]
                    })
                    .collect();
                let turn = (i + round as usize) % order.len();
                order.rotate_left(turn);
                runs.extend(order.into_iter().map(|(target, addr, process)| {
                    (target, *page, *path, addr, Some(PUBLIC_HOST), process)
                }));
            }
            runs.push(("origin", PAGES[0].0, PATH, servers.origin, None, 0));
            for (target, page, path, addr, host, process) in runs {
                eprintln!(
                    "bench: load {target} on {page} with {connections} connections for {seconds}s \
                     (round {} of {rounds})",
                    round + 1
                );
                let mut headers = vec!["Accept-Encoding: identity".to_owned()];
                headers.extend(host.map(|h| format!("Host: {h}")));
                let url = format!("http://{addr}{path}");
                let text = wrk(&url, &headers, 2, connections, seconds)?;
                let mut result = parse(&text, target, connections)?;
                result.page = page;
                result.round = round;
                result.process = process;
                results.push(result);
            }
        }
    }
    Ok(results)
}

/// One bounded `wrk` run against `url` with `threads` threads and the given header lines
/// (`Name: value`); its `--latency` report. The local matrix and `--target` mode both run
/// `wrk` through this.
pub(crate) fn wrk(
    url: &str,
    headers: &[String],
    threads: u32,
    connections: u32,
    seconds: u32,
) -> Result<String, String> {
    let mut cmd = Command::new("wrk");
    cmd.args([
        &format!("-t{threads}"),
        &format!("-c{connections}"),
        &format!("-d{seconds}s"),
        "--latency",
        "--timeout",
        "10s",
    ]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd
        .arg(url)
        .output()
        .map_err(|e| format!("wrk: {e} (install it: apt-get install wrk)"))?;
    if !out.status.success() {
        return Err(format!(
            "wrk failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Parses wrk's `--latency` report.
pub(crate) fn parse(
    text: &str,
    target: &'static str,
    connections: u32,
) -> Result<LoadResult, String> {
    let mut rps = None;
    let mut p50 = None;
    let mut p99 = None;
    let mut errors = 0u64;
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("Requests/sec:") {
            rps = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("50%") {
            p50 = duration_ms(v.trim());
        } else if let Some(v) = line.strip_prefix("99%") {
            p99 = duration_ms(v.trim());
        } else if let Some(v) = line.strip_prefix("Socket errors:") {
            errors += v
                .split(',')
                .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
                .sum::<u64>();
        } else if let Some(v) = line.strip_prefix("Non-2xx or 3xx responses:") {
            errors += v.trim().parse::<u64>().unwrap_or(0);
        }
    }
    Ok(LoadResult {
        target,
        page: PAGES[0].0,
        connections,
        round: 0,
        process: 0,
        rps: rps.ok_or_else(|| format!("no Requests/sec in wrk output:\n{text}"))?,
        p50_ms: p50.ok_or("no 50% line in wrk output")?,
        p99_ms: p99.ok_or("no 99% line in wrk output")?,
        errors,
    })
}

/// `812.00us`, `1.23ms`, `2.00s` → milliseconds.
fn duration_ms(v: &str) -> Option<f64> {
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic())?);
    let n: f64 = num.parse().ok()?;
    match unit {
        "us" => Some(n / 1000.0),
        "ms" => Some(n),
        "s" => Some(n * 1000.0),
        "m" => Some(n * 60_000.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Running 4s test @ http://127.0.0.1:1/x
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.10ms    1.00ms  20.00ms   90.00%
    Req/Sec     1.90k   100.00     2.10k    70.00%
  Latency Distribution
     50%  812.00us
     75%    2.00ms
     90%    3.00ms
     99%    1.50s
  15200 requests in 4.00s, 600.00MB read
  Socket errors: connect 0, read 2, write 1, timeout 3
  Non-2xx or 3xx responses: 4
Requests/sec:   3800.50
Transfer/sec:    150.00MB
";

    #[test]
    fn parses_wrk_latency_reports() {
        let r = parse(SAMPLE, "proxy", 8).unwrap();
        assert!((r.rps - 3800.5).abs() < 1e-9);
        assert!((r.p50_ms - 0.812).abs() < 1e-9);
        assert!((r.p99_ms - 1500.0).abs() < 1e-9);
        assert_eq!(r.errors, 10);
        assert!(parse("garbage", "proxy", 8).is_err());
    }
}
