//! Remote mode (`--target URL [--baseline URL]`): measures a service that is already running
//! (a local `fastly compute serve`, an http staging endpoint), and optionally a second one
//! against it, interleaved.
//!
//! For each path: `--warmup` requests per side, then `--samples` interleaved rounds (in round
//! `i` the target goes first when `i` is even, the baseline when it is odd). Every request is a
//! new connection (`Connection: close`), timed from the moment the request is handed to the
//! same client as the local benchmark ([`e2e::get`], hyper's HTTP/1 client): the end of the
//! response head, the first body byte and the last byte.
//!
//! **Cold starts.** A request is *cold* when either
//! 1. it is the first request of the run to its side, or the first after that side has been
//!    idle for `--idle-gap` seconds (the instance may have been started or evicted meanwhile;
//!    under Viceroy the first request after start is the typical one), or
//! 2. its time to headers is more than [`COLD_FACTOR`] times the median time to headers of the
//!    same side and path, and at least [`COLD_MIN_EXCESS_MS`] more than that median (so that a
//!    scheduling hiccup on a sub-millisecond request is not called a cold start).
//!
//! Warm-up requests are checked too (a cold start usually lands there). Cold requests are
//! counted and listed apart, and never enter p50 / p95; warm-up requests never do either.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::chart;
use crate::chart::{write_chart, ChartPanel, ChartRow};

/// A request is cold (rule 2) when its time to headers exceeds this many warm medians...
pub const COLD_FACTOR: f64 = 3.0;
/// ...and exceeds the median by at least this much.
pub const COLD_MIN_EXCESS_MS: f64 = 5.0;
const DEFAULT_PATHS: [&str; 2] = ["/", "/_ts/health"];

/// A service to measure: `http://host[:port][/prefix]`.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The URL as given.
    pub url: String,
    /// `host[:port]` from the URL: the `Host` header unless `--host` overrides it.
    pub authority: String,
    /// Path prefix from the URL (empty, or starting with `/` without a trailing one).
    pub prefix: String,
    /// The resolved address (the first one the resolver gives).
    pub addr: SocketAddr,
}

impl Endpoint {
    /// Parses and resolves an `http://` URL.
    ///
    /// # Errors
    /// For `https://` (see docs/performance.md: the timing client speaks plain HTTP/1.1), any other
    /// scheme, or a host that does not resolve.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err(format!(
                "{url}: https is not supported; the timing client speaks plain HTTP/1.1 over \
                 TCP (use the service's http:// address, e.g. a local `fastly compute serve`)"
            ));
        } else {
            return Err(format!("{url}: expected an http:// URL"));
        };
        let (authority, prefix) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || prefix.starts_with(['?', '#']) {
            return Err(format!("{url}: expected http://host[:port][/prefix]"));
        }
        let with_port = if authority.rsplit_once(':').is_some_and(|(_, p)| {
            !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) && !authority.ends_with(']')
        }) {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| format!("{url}: cannot resolve {with_port}: {e}"))?
            .next()
            .ok_or_else(|| format!("{url}: {with_port} resolves to no address"))?;
        Ok(Endpoint {
            url: url.to_owned(),
            authority: authority.to_owned(),
            prefix: prefix.trim_end_matches('/').to_owned(),
            addr,
        })
    }
}

/// Options of the remote mode.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// The service measured.
    pub target: Endpoint,
    /// The service it is compared with, if any.
    pub baseline: Option<Endpoint>,
    /// Paths (with query) requested on both.
    pub paths: Vec<String>,
    /// Measured rounds per path.
    pub samples: usize,
    /// Unrecorded requests per side and path before the samples.
    pub warmup: usize,
    /// Seconds of `wrk` load per side on the first path (none without the option).
    pub load_seconds: Option<u32>,
    /// `wrk` connections.
    pub connections: u32,
    /// Extra request headers; `Accept-Encoding: identity` unless one of them sets it.
    pub headers: Vec<(String, String)>,
    /// `Host` for both sides instead of each URL's authority.
    pub host: Option<String>,
    /// Idle time after which the next request to a side counts as cold.
    pub idle_gap: Duration,
    /// Per-request time limit.
    pub timeout: Duration,
}

/// The flags of the remote mode, for the usage text.
pub const USAGE: &str = "--target URL [--baseline URL] [--paths /a,/b] [--samples N] \
[--warmup N] [--load SECONDS] [--connections N] [--header 'Name: value']... [--host NAME] \
[--idle-gap SECONDS] [--timeout SECONDS]";

/// Collects remote flags while the main parser walks the arguments; [`RemoteArgs::finish`]
/// turns them into [`RemoteOptions`] when `--target` was given.
#[derive(Debug, Default)]
pub struct RemoteArgs {
    target: Option<String>,
    baseline: Option<String>,
    paths: Option<String>,
    samples: Option<String>,
    warmup: Option<String>,
    load: Option<String>,
    connections: Option<String>,
    headers: Vec<String>,
    host: Option<String>,
    idle_gap: Option<String>,
    timeout: Option<String>,
}

impl RemoteArgs {
    /// Takes `flag` (and its value from `rest`) if it is a remote flag. `Ok(false)` when it
    /// is not one.
    ///
    /// # Errors
    /// A remote flag without its value.
    pub fn take(
        &mut self,
        flag: &str,
        rest: &mut impl Iterator<Item = String>,
    ) -> Result<bool, String> {
        let slot = match flag {
            "--target" => &mut self.target,
            "--baseline" => &mut self.baseline,
            "--paths" => &mut self.paths,
            "--samples" => &mut self.samples,
            "--warmup" => &mut self.warmup,
            "--load" => &mut self.load,
            "--connections" => &mut self.connections,
            "--host" => &mut self.host,
            "--idle-gap" => &mut self.idle_gap,
            "--timeout" => &mut self.timeout,
            "--header" => {
                let v = rest.next().ok_or("--header needs 'Name: value'")?;
                self.headers.push(v);
                return Ok(true);
            }
            _ => return Ok(false),
        };
        *slot = Some(rest.next().ok_or_else(|| format!("{flag} needs a value"))?);
        Ok(true)
    }

    /// The remote options, or `None` when `--target` was not given (the local benchmark).
    ///
    /// # Errors
    /// A bad value, or a remote flag without `--target`.
    pub fn finish(self) -> Result<Option<RemoteOptions>, String> {
        let Some(target) = self.target else {
            let given = self.baseline.is_some()
                || self.paths.is_some()
                || self.samples.is_some()
                || self.warmup.is_some()
                || self.load.is_some()
                || self.connections.is_some()
                || self.host.is_some()
                || self.idle_gap.is_some()
                || self.timeout.is_some()
                || !self.headers.is_empty();
            return if given {
                Err("remote options need --target URL".into())
            } else {
                Ok(None)
            };
        };
        fn number<T: std::str::FromStr>(
            v: Option<String>,
            flag: &str,
            default: T,
        ) -> Result<T, String> {
            v.map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| format!("{flag}: not a number: {v:?}"))
            })
        }
        let paths: Vec<String> = match self.paths {
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect(),
            None => DEFAULT_PATHS.iter().map(|p| (*p).to_owned()).collect(),
        };
        if paths.is_empty() || paths.iter().any(|p| !p.starts_with('/')) {
            return Err("--paths: a comma-separated list of paths starting with /".into());
        }
        let mut headers = Vec::new();
        for h in self.headers {
            let (n, v) = h
                .split_once(':')
                .ok_or_else(|| format!("--header {h:?}: expected 'Name: value'"))?;
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        if !headers.iter().any(|(n, _)| n == "accept-encoding") {
            headers.push(("accept-encoding".into(), "identity".into()));
        }
        let samples = number(self.samples, "--samples", 30usize)?;
        if samples == 0 {
            return Err("--samples must be at least 1".into());
        }
        let load_seconds: Option<u32> = self
            .load
            .map(|v| number(Some(v), "--load", 0u32))
            .transpose()?;
        if load_seconds.is_some_and(|s| s == 0 || s > 600) {
            return Err("--load: 1 to 600 seconds".into());
        }
        Ok(Some(RemoteOptions {
            target: Endpoint::parse(&target)?,
            baseline: self.baseline.as_deref().map(Endpoint::parse).transpose()?,
            paths,
            samples,
            warmup: number(self.warmup, "--warmup", 5usize)?,
            load_seconds,
            connections: number(self.connections, "--connections", 8u32)?.max(1),
            headers,
            host: self.host,
            idle_gap: Duration::from_secs_f64(number(self.idle_gap, "--idle-gap", 30.0f64)?),
            timeout: Duration::from_secs_f64(number(self.timeout, "--timeout", 30.0f64)?),
        }))
    }
}

/// Which of the two services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Which {
    /// `--target`.
    Target,
    /// `--baseline`.
    Baseline,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Target => "target",
            Which::Baseline => "baseline",
        }
    }
}

/// Why a request counts as cold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cold {
    /// The first request to its side, or the first after an idle gap.
    AfterIdle,
    /// Time to headers far above the side's median on that path.
    Outlier,
}

/// One request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The round it was sent in (warm-up rounds first), to pair it with the other side's.
    pub round: usize,
    /// A warm-up request (never in the statistics).
    pub warmup: bool,
    /// Status code.
    pub status: u16,
    /// Body bytes (after transfer decoding).
    pub bytes: usize,
    /// End of the response head, ms from the request being written.
    pub headers_ms: f64,
    /// First body byte (the last byte for an empty body).
    pub first_body_ms: f64,
    /// Last byte.
    pub last_ms: f64,
    /// Whether, and why, it was a cold start.
    pub cold: Option<Cold>,
}

/// Every request to one side on one path.
#[derive(Debug, Clone)]
pub struct Series {
    /// The side.
    pub which: Which,
    /// Requests in the order they were sent, warm-up first.
    pub requests: Vec<Request>,
    /// Requests that failed (no response head, or an incomplete transfer), with the reason.
    pub errors: Vec<String>,
}

impl Series {
    /// Measured requests that were not cold: the ones p50 and p95 are taken over.
    pub fn warm(&self) -> impl Iterator<Item = &Request> {
        self.requests
            .iter()
            .filter(|r| !r.warmup && r.cold.is_none())
    }

    /// Cold requests, warm-up included.
    pub fn cold(&self) -> impl Iterator<Item = &Request> {
        self.requests.iter().filter(|r| r.cold.is_some())
    }

    fn field(&self, f: impl Fn(&Request) -> f64) -> Vec<f64> {
        self.warm().map(f).collect()
    }
}

/// One path's series, the target's first.
#[derive(Debug, Clone)]
pub struct PathResult {
    /// The path as given.
    pub path: String,
    /// Target, then baseline if any.
    pub series: Vec<Series>,
}

/// A `wrk` run against one side.
#[derive(Debug, Clone)]
pub struct RemoteLoad {
    /// The side.
    pub which: Which,
    /// The parsed report.
    pub result: crate::load::LoadResult,
}

/// Nearest-rank percentile (`q` in 0..=1) of `v`; NaN when empty.
pub fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = (q * s.len() as f64).ceil().max(1.0) as usize;
    s[rank.min(s.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `/news/article.html?x=1` → `news_article_html_x_1`; `/` → `root`.
pub fn path_key(path: &str) -> String {
    let mut key = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c.to_ascii_lowercase());
        } else if !key.ends_with('_') {
            key.push('_');
        }
    }
    let key = key.trim_matches('_').to_owned();
    if key.is_empty() {
        "root".into()
    } else {
        key
    }
}

/// Marks rule-2 cold starts: time to headers above [`COLD_FACTOR`] × the median of the
/// side's other requests on the path (warm-up included, rule-1 requests excluded) and at
/// least [`COLD_MIN_EXCESS_MS`] above it.
pub fn mark_outliers(requests: &mut [Request]) {
    let base: Vec<f64> = requests
        .iter()
        .filter(|r| r.cold.is_none())
        .map(|r| r.headers_ms)
        .collect();
    let median = percentile(&base, 0.5);
    if median.is_nan() {
        return;
    }
    for r in requests.iter_mut().filter(|r| r.cold.is_none()) {
        if r.headers_ms > COLD_FACTOR * median && r.headers_ms - median >= COLD_MIN_EXCESS_MS {
            r.cold = Some(Cold::Outlier);
        }
    }
}

struct Client<'a> {
    options: &'a RemoteOptions,
    last_sent: HashMap<Which, Instant>,
}

impl Client<'_> {
    fn endpoint(&self, which: Which) -> &Endpoint {
        match which {
            Which::Target => &self.options.target,
            Which::Baseline => self
                .options
                .baseline
                .as_ref()
                .unwrap_or(&self.options.target),
        }
    }

    fn fetch(&mut self, which: Which, path: &str, round: usize, warmup: bool, series: &mut Series) {
        let endpoint = self.endpoint(which).clone();
        let host = self.options.host.as_deref().unwrap_or(&endpoint.authority);
        let mut headers: Vec<(&str, &str)> = vec![("host", host)];
        headers.extend(
            self.options
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str())),
        );
        let now = Instant::now();
        let after_idle = self
            .last_sent
            .get(&which)
            .is_none_or(|t| now.duration_since(*t) >= self.options.idle_gap);
        let full = format!("{}{path}", endpoint.prefix);
        let result = e2e::get(endpoint.addr, &full, &headers, self.options.timeout);
        self.last_sent.insert(which, Instant::now());
        match result {
            Ok(r) if r.complete => series.requests.push(Request {
                round,
                warmup,
                status: r.status,
                bytes: r.body.len(),
                headers_ms: ms(r.headers_at),
                first_body_ms: ms(r.first_body_at.unwrap_or(r.last_at)),
                last_ms: ms(r.last_at),
                cold: after_idle.then_some(Cold::AfterIdle),
            }),
            Ok(r) => series.errors.push(format!(
                "{} {full}: status {}, transfer incomplete",
                which.name(),
                r.status
            )),
            Err(e) => series.errors.push(format!("{} {full}: {e}", which.name())),
        }
    }
}

/// Runs the warm-up and the interleaved samples on every path.
pub fn measure(options: &RemoteOptions) -> Vec<PathResult> {
    let sides: Vec<Which> = if options.baseline.is_some() {
        vec![Which::Target, Which::Baseline]
    } else {
        vec![Which::Target]
    };
    let mut client = Client {
        options,
        last_sent: HashMap::new(),
    };
    let mut results = Vec::new();
    for path in &options.paths {
        eprintln!(
            "bench: {path}: {} warm-up and {} measured requests per side",
            options.warmup, options.samples
        );
        let mut series: Vec<Series> = sides
            .iter()
            .map(|&which| Series {
                which,
                requests: Vec::new(),
                errors: Vec::new(),
            })
            .collect();
        for round in 0..options.warmup + options.samples {
            let warmup = round < options.warmup;
            let n = series.len();
            for k in 0..n {
                let i = (round + k) % n;
                let which = series[i].which;
                client.fetch(which, path, round, warmup, &mut series[i]);
            }
        }
        for s in &mut series {
            mark_outliers(&mut s.requests);
            for e in &s.errors {
                eprintln!("bench: failed: {e}");
            }
        }
        results.push(PathResult {
            path: path.clone(),
            series,
        });
    }
    results
}

/// A bounded `wrk` run per side on the first path; `None` (with a note) when `wrk` is not
/// installed.
///
/// # Errors
/// If `wrk` fails or its report cannot be read.
pub fn load(options: &RemoteOptions) -> Result<Option<Vec<RemoteLoad>>, String> {
    let Some(seconds) = options.load_seconds else {
        return Ok(None);
    };
    if Command::new("wrk").arg("--version").output().is_err() {
        println!("note: --load skipped: wrk is not installed (apt-get install wrk)");
        return Ok(None);
    }
    let path = &options.paths[0];
    let mut out = Vec::new();
    let mut sides = vec![(Which::Target, &options.target)];
    if let Some(b) = &options.baseline {
        sides.push((Which::Baseline, b));
    }
    for (which, endpoint) in sides {
        eprintln!(
            "bench: load {} {path} with {} connections for {seconds}s",
            which.name(),
            options.connections
        );
        let mut headers: Vec<String> = options
            .headers
            .iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .collect();
        headers.extend(options.host.as_ref().map(|h| format!("Host: {h}")));
        let url = format!("http://{}{}{path}", endpoint.authority, endpoint.prefix);
        let report = crate::load::wrk(&url, &headers, 1, options.connections, seconds)?;
        let result = crate::load::parse(&report, which.name(), 0)?;
        out.push(RemoteLoad {
            which,
            result: crate::load::LoadResult {
                connections: options.connections,
                ..result
            },
        });
    }
    Ok(Some(out))
}

fn fmt(v: f64) -> String {
    if v.is_nan() {
        "na".into()
    } else {
        format!("{v:.3}")
    }
}

/// The `---RESULTS---` lines. The target's keys have no side in their name, the baseline's
/// say `baseline`; ratios are of p50s.
pub fn results(paths: &[PathResult], load: Option<&[RemoteLoad]>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |k: String, v: String| out.push((k, v));
    let count = |f: &dyn Fn(&Series) -> usize, which: Option<Which>| -> usize {
        paths
            .iter()
            .flat_map(|p| &p.series)
            .filter(|s| which.is_none_or(|w| s.which == w))
            .map(f)
            .sum()
    };
    put(
        "remote_cold_starts".into(),
        count(&|s| s.cold().count(), None).to_string(),
    );
    put(
        "remote_errors".into(),
        count(&|s| s.errors.len(), None).to_string(),
    );
    type Metric = (&'static str, fn(&Request) -> f64);
    let metrics: [Metric; 3] = [
        ("headers", |r| r.headers_ms),
        ("ttfb", |r| r.first_body_ms),
        ("ttlb", |r| r.last_ms),
    ];
    for p in paths {
        let key = path_key(&p.path);
        for s in &p.series {
            let side = match s.which {
                Which::Target => String::new(),
                Which::Baseline => "baseline_".into(),
            };
            for (name, f) in metrics {
                let v = s.field(f);
                put(
                    format!("remote_{side}{name}_p50_ms_{key}"),
                    fmt(percentile(&v, 0.5)),
                );
                put(
                    format!("remote_{side}{name}_p95_ms_{key}"),
                    fmt(percentile(&v, 0.95)),
                );
            }
            let last = s.field(|r| r.last_ms);
            put(
                format!("remote_{side}ttlb_min_ms_{key}"),
                fmt(last.iter().copied().fold(f64::NAN, f64::min)),
            );
            put(
                format!("remote_{side}ttlb_max_ms_{key}"),
                fmt(last.iter().copied().fold(f64::NAN, f64::max)),
            );
            put(
                format!("remote_{side}samples_{key}"),
                s.warm().count().to_string(),
            );
            put(
                format!("remote_{side}cold_starts_{key}"),
                s.cold().count().to_string(),
            );
        }
        if let [target, baseline] = &p.series[..] {
            for (name, f) in metrics {
                let a = percentile(&target.field(f), 0.5);
                let b = percentile(&baseline.field(f), 0.5);
                put(
                    format!("remote_{name}_target_over_baseline_{key}"),
                    fmt(a / b),
                );
            }
        }
    }
    for l in load.unwrap_or_default() {
        let side = l.which.name();
        put(
            format!("remote_load_rps_{side}"),
            format!("{:.0}", l.result.rps),
        );
        put(format!("remote_load_p50_ms_{side}"), fmt(l.result.p50_ms));
        put(format!("remote_load_p99_ms_{side}"), fmt(l.result.p99_ms));
        put(
            format!("remote_load_errors_{side}"),
            l.result.errors.to_string(),
        );
    }
    if let Some([t, b]) = load {
        put(
            "remote_load_rps_target_over_baseline".into(),
            fmt(t.result.rps / b.result.rps),
        );
    }
    out
}

/// Prints the tables: one block per path, then the cold starts, the A/B ratios and the load.
pub fn print_tables(options: &RemoteOptions, paths: &[PathResult], load: Option<&[RemoteLoad]>) {
    println!("\ntarget:   {}", options.target.url);
    if let Some(b) = &options.baseline {
        println!("baseline: {}", b.url);
    }
    println!(
        "\nLatency (ms; p50 / p95 over warm samples; last byte [min–max]; each request a new \
         connection, timed from the request being written)"
    );
    println!(
        "{:<24} {:<8} {:>4} {:>6} {:>15} {:>15} {:>15} {:>19} {:>4} {:>8}",
        "path",
        "side",
        "code",
        "warm",
        "headers",
        "first body",
        "last byte",
        "spread",
        "cold",
        "bytes"
    );
    for p in paths {
        // A long path gets a line of its own, so the columns stay aligned.
        let label = if p.path.len() > 24 {
            println!("{}", p.path);
            ""
        } else {
            p.path.as_str()
        };
        for s in &p.series {
            let pair = |f: fn(&Request) -> f64| {
                let v = s.field(f);
                format!("{:.1} / {:.1}", percentile(&v, 0.5), percentile(&v, 0.95))
            };
            let last = s.field(|r| r.last_ms);
            let lo = last.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = last.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let first = s.requests.first();
            println!(
                "{:<24} {:<8} {:>4} {:>6} {:>15} {:>15} {:>15} {:>19} {:>4} {:>8}",
                label,
                s.which.name(),
                first.map_or("-".into(), |r| r.status.to_string()),
                s.warm().count(),
                pair(|r| r.headers_ms),
                pair(|r| r.first_body_ms),
                pair(|r| r.last_ms),
                format!("[{lo:.1}–{hi:.1}]"),
                s.cold().count(),
                first.map_or("-".into(), |r| r.bytes.to_string()),
            );
            if !s.errors.is_empty() {
                println!("{:<24} {} failed requests", "", s.errors.len());
            }
        }
        if let [target, baseline] = &p.series[..] {
            let ratio = |f: fn(&Request) -> f64| {
                percentile(&target.field(f), 0.5) / percentile(&baseline.field(f), 0.5)
            };
            // Rounds are interleaved: the two sides' requests of a round ran back to back.
            let per_round: Vec<f64> = target
                .warm()
                .filter_map(|a| {
                    let b = baseline.warm().find(|b| b.round == a.round)?;
                    Some(a.last_ms / b.last_ms)
                })
                .collect();
            println!(
                "{:<24} target/baseline (p50): headers {:.3}, first body {:.3}, last byte {:.3} \
                 [per round {:.3}–{:.3}]",
                "",
                ratio(|r| r.headers_ms),
                ratio(|r| r.first_body_ms),
                ratio(|r| r.last_ms),
                per_round.iter().copied().fold(f64::NAN, f64::min),
                per_round.iter().copied().fold(f64::NAN, f64::max),
            );
            if let (Some(a), Some(b)) = (target.requests.first(), baseline.requests.first()) {
                if a.status != b.status || a.bytes != b.bytes {
                    println!(
                        "{:<24} note: the two answer differently (status {} / {}, {} / {} bytes)",
                        "", a.status, b.status, a.bytes, b.bytes
                    );
                }
            }
        }
    }
    println!(
        "\nCold starts (first request to a side or after {:.0} s idle; or time to headers > \
         {COLD_FACTOR}× the median and ≥ {COLD_MIN_EXCESS_MS} ms above it), excluded from p50/p95:",
        options.idle_gap.as_secs_f64()
    );
    let mut any = false;
    for p in paths {
        for s in &p.series {
            for (i, r) in s.requests.iter().enumerate() {
                let Some(why) = r.cold else { continue };
                any = true;
                println!(
                    "  {} {} request {} ({}): headers {:.1} ms, first body {:.1} ms, last byte \
                     {:.1} ms; {}",
                    s.which.name(),
                    p.path,
                    i + 1,
                    if r.warmup { "warm-up" } else { "sample" },
                    r.headers_ms,
                    r.first_body_ms,
                    r.last_ms,
                    match why {
                        Cold::AfterIdle => "first after idle",
                        Cold::Outlier => "outlier",
                    }
                );
            }
        }
    }
    if !any {
        println!("  none");
    }
    if let Some(load) = load {
        println!(
            "\nLoad (wrk, {}, {} connections)",
            options.paths[0], options.connections
        );
        println!(
            "{:<9} {:>10} {:>9} {:>9} {:>7}",
            "side", "req/s", "p50 ms", "p99 ms", "errors"
        );
        for l in load {
            println!(
                "{:<9} {:>10.0} {:>9.2} {:>9.2} {:>7}",
                l.which.name(),
                l.result.rps,
                l.result.p50_ms,
                l.result.p99_ms,
                l.result.errors
            );
        }
    }
}

/// The chart panels: one per path, a row per side (warm samples) and one for its cold
/// requests, if any.
pub fn chart(paths: &[PathResult]) -> Vec<ChartPanel> {
    paths
        .iter()
        .map(|p| {
            let mut rows = Vec::new();
            for s in &p.series {
                let color = match s.which {
                    Which::Target => chart::BLUE,
                    Which::Baseline => chart::RED,
                };
                rows.push(ChartRow {
                    label: s.which.name().to_owned(),
                    color,
                    points: s.warm().map(|r| (r.first_body_ms, r.last_ms)).collect(),
                });
                let cold: Vec<(f64, f64)> =
                    s.cold().map(|r| (r.first_body_ms, r.last_ms)).collect();
                if !cold.is_empty() {
                    rows.push(ChartRow {
                        label: format!("{} cold", s.which.name()),
                        color: chart::GREY,
                        points: cold,
                    });
                }
            }
            ChartPanel {
                title: p.path.clone(),
                rows,
            }
        })
        .collect()
}

/// The whole remote run: measure, load, print, chart, `--compare` / `--save`, results.
///
/// # Errors
/// A path on which every request to a side failed, a failed `wrk`, or an unwritable output.
pub fn run(
    options: &RemoteOptions,
    out: &std::path::Path,
) -> Result<Vec<(String, String)>, String> {
    let paths = measure(options);
    for p in &paths {
        for s in &p.series {
            if s.requests.is_empty() {
                return Err(format!(
                    "{} {}: every request failed ({})",
                    s.which.name(),
                    p.path,
                    s.errors.first().map_or("", String::as_str)
                ));
            }
        }
    }
    let load = load(options)?;
    print_tables(options, &paths, load.as_deref());
    let chart_path: PathBuf = out.join("remote-latency.svg");
    write_chart(
        &chart_path,
        "Latency per request (ms): hollow = first body byte, filled = last byte, bar = median",
        &chart(&paths),
    )
    .map_err(|e| format!("{}: {e}", chart_path.display()))?;
    println!("\nchart: {}", chart_path.display());
    Ok(results(&paths, load.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers_ms: f64) -> Request {
        Request {
            round: 0,
            warmup: false,
            status: 200,
            bytes: 1,
            headers_ms,
            first_body_ms: headers_ms,
            last_ms: headers_ms,
            cold: None,
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 10.0);
        assert_eq!(percentile(&v, 0.95), 19.0);
        assert_eq!(percentile(&[3.0], 0.95), 3.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn outliers_need_both_the_factor_and_the_absolute_excess() {
        let mut r = vec![req(1.0), req(1.1), req(0.9), req(4.0), req(40.0), req(1.0)];
        r[0].cold = Some(Cold::AfterIdle);
        mark_outliers(&mut r);
        // 4 ms is 4× the median but only 3 ms above it: jitter, not a cold start.
        let cold: Vec<Option<Cold>> = r.iter().map(|r| r.cold).collect();
        assert_eq!(
            cold,
            [
                Some(Cold::AfterIdle),
                None,
                None,
                None,
                Some(Cold::Outlier),
                None
            ]
        );
        let mut slow = vec![req(100.0), req(110.0), req(250.0)];
        mark_outliers(&mut slow);
        assert!(slow.iter().all(|r| r.cold.is_none()), "2.3× is not 3×");
    }

    #[test]
    fn endpoints_and_path_keys() {
        let e = Endpoint::parse("http://127.0.0.1:7676").unwrap();
        assert_eq!(e.authority, "127.0.0.1:7676");
        assert_eq!(e.prefix, "");
        assert_eq!(e.addr.port(), 7676);
        let e = Endpoint::parse("http://127.0.0.1/base/").unwrap();
        assert_eq!((e.addr.port(), e.prefix.as_str()), (80, "/base"));
        assert!(Endpoint::parse("https://example.com")
            .unwrap_err()
            .contains("https is not supported"));
        assert!(Endpoint::parse("ftp://x").is_err());
        assert!(Endpoint::parse("http://").is_err());
        assert_eq!(path_key("/"), "root");
        assert_eq!(path_key("/_ts/health"), "ts_health");
        assert_eq!(
            path_key("/News/article.html?drip_ms=200"),
            "news_article_html_drip_ms_200"
        );
    }

    #[test]
    fn remote_flags_need_a_target() {
        let mut a = RemoteArgs::default();
        let mut rest = vec!["5".to_owned()].into_iter();
        assert!(a.take("--samples", &mut rest).unwrap());
        assert!(a.finish().is_err());
        assert!(RemoteArgs::default().finish().unwrap().is_none());
        let mut a = RemoteArgs::default();
        let mut rest = vec!["http://127.0.0.1:1".to_owned()].into_iter();
        assert!(!a.take("--quick", &mut rest).unwrap());
        assert!(a.take("--target", &mut rest).unwrap());
        let o = a.finish().unwrap().unwrap();
        assert_eq!(o.paths, ["/", "/_ts/health"]);
        assert_eq!(o.samples, 30);
        assert_eq!(
            o.headers,
            [("accept-encoding".to_owned(), "identity".to_owned())]
        );
    }
}
