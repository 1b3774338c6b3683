//! Soak: a bounded mixed load against both builds of the service under Viceroy.
//!
//! `soak [--minutes M] [--threads N] [--seed S]` (`scripts/soak.sh [MINUTES]` runs it). It builds
//! and starts the demo origin and the two service builds (streaming and buffered) on free
//! loopback ports, then for `M` minutes (fractions allowed) runs `N` client threads, each sending
//! a weighted random mix of requests to a random build: good pages in every coding the origin
//! speaks (identity, gzip, br, deflate; HTML, CSS, JS, JSON, SVG, a PNG, a 110 KB generated
//! page, a zstd-labelled body that must pass through), the replayed Next.js pages and Flight
//! responses (at once and with their captured timing), dripped pages, origins that die
//! mid-body, and truncated or mislabelled compressed bodies.
//!
//! Every response is put in one class:
//! - **correct**: complete, status 200, the expected `Content-Encoding`, and the body, decoded,
//!   byte-equal to the expected rewritten bytes (computed once up front from the origin's own
//!   bytes);
//! - **abandoned**: a broken origin body seen as docs/failures.md's table says: an incomplete
//!   transfer (or a closed connection before any head) from the streaming build, a `502` from
//!   the buffered one;
//! - **FAILED**: anything else (a complete body with wrong bytes, an unexpected status or
//!   abandon, a transport error, "panicked" in a body).
//!
//! Meanwhile the resident memory (VmRSS) of both Viceroy processes is sampled. After the run:
//! a guest panic in either Viceroy log, a build that no longer answers, or memory that grows
//! beyond the bound below fails the soak. The exit code is 1 on failure.
//!
//! Expected bytes: for the demo site's pages, the origin's bytes with the URL rule applied
//! (`UrlRule::rewrite_all`, as the end-to-end tests do). For the Next.js captures a plain
//! replacement would be wrong (Flight `T` row lengths change), so there the expected bytes are
//! the core pipeline's output for the whole body, run natively, and they must hold no origin URL.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use e2e::{
    build_and_start_demo_origin, get, start_service_pair, target_dir, workspace_root, ServicePair,
};
use trusted_server_core::{BodyPlan, Codec, PageOptions, UrlRule};

const ORIGIN_HOST: &str = "origin.demo-publisher.example";
/// Request hosts: one shorter and one longer than the origin's, so rewritten bodies both shrink
/// and grow.
const HOSTS: [&str; 2] = [
    "www.soak.example",
    "a-much-longer-first-party-hostname.soak-publisher.example:7676",
];
/// Longest a single request may take (the slowest in the mix takes about a second).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// Part of the run whose memory samples are ignored: instance pools, caches and allocator
/// arenas fill up first.
const WARM_UP_SHARE: f64 = 0.2;
/// Memory growth that fails the soak: the mean RSS of the last quarter of the run may exceed
/// the mean of the second quarter by at most this share *or* this many bytes, whichever is
/// larger. With 8 clients each Viceroy runs up to 8 instances at once, each with its own
/// linear memory and host buffers (a few MB to tens of MB while a large body is in flight), so
/// samples swing by tens of MB with the momentary mix. At ~40 requests/s per build, about
/// 12,000 requests lie between the two quarters of a 10-minute run, so a leak of 3 KB per
/// request fails it.
const GROWTH_SHARE: f64 = 0.20;
const GROWTH_BYTES: f64 = 30.0 * 1024.0 * 1024.0;
/// At most this many failures are described in full.
const SHOWN_FAILURES: usize = 20;

// ---------------------------------------------------------------------------------------------
// The mix

/// What a request is, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Category {
    /// A page that answers at once.
    Good,
    /// A dripped page (the origin pauses between parts).
    Slow,
    /// A replayed Next.js page or Flight response.
    Nextjs,
    /// An origin that dies mid-body.
    Dying,
    /// A compressed body that is truncated or is not what its label says.
    Broken,
}

impl Category {
    fn name(self) -> &'static str {
        match self {
            Category::Good => "good",
            Category::Slow => "slow",
            Category::Nextjs => "nextjs",
            Category::Dying => "dying",
            Category::Broken => "broken-coding",
        }
    }
}

/// How the expected body is derived from the origin's identity bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Oracle {
    /// The URL rule on the whole body.
    Rule,
    /// The core pipeline on the whole body (Next.js: `T` row lengths change).
    Pipeline,
    /// Not rewritten: the origin's bytes as they came.
    Unchanged,
    /// The origin body of a rewritten page is broken: an abandon is expected, seen as an
    /// incomplete transfer from the streaming build and a `502` from the buffered one.
    Abandon,
    /// The origin body of a page that is not rewritten is broken. Such bodies stream host-side
    /// in both builds (docs/architecture.md, "Phases"), so both must show an incomplete transfer.
    AbandonPassThrough,
}

/// One kind of request in the mix.
#[derive(Debug, Clone)]
struct Spec {
    category: Category,
    weight: u32,
    path: String,
    accept: &'static str,
    extra: Vec<(&'static str, &'static str)>,
    oracle: Oracle,
}

/// What a correct response to a spec looks like, per request host.
#[derive(Debug)]
struct Expectation {
    /// `Content-Encoding` the proxy must answer with (the origin's, as negotiated).
    coding: Option<String>,
    /// Decoded body per entry of [`HOSTS`] (empty for an expected abandon).
    bodies: Vec<Vec<u8>>,
}

fn spec(
    category: Category,
    weight: u32,
    path: impl Into<String>,
    accept: &'static str,
    oracle: Oracle,
) -> Spec {
    Spec {
        category,
        weight,
        path: path.into(),
        accept,
        extra: Vec::new(),
        oracle,
    }
}

const CODINGS: [&str; 4] = ["identity", "gzip", "br", "deflate"];

/// The weighted mix (its shares by category are printed at the start of a run).
fn mix() -> Vec<Spec> {
    let mut mix = Vec::new();
    let pages = [
        ("/", 4),
        ("/news/article.html", 4),
        ("/latin1.latin1.html", 1),
        ("/embed/poll.html", 1),
        ("/static/site.css", 2),
        ("/static/print.css", 1),
        ("/static/app.js", 2),
        ("/api/feed.json", 2),
        ("/static/logo.svg", 1),
        ("/__gen/110kb.html", 2),
    ];
    for (path, weight) in pages {
        for accept in CODINGS {
            mix.push(spec(Category::Good, weight, path, accept, Oracle::Rule));
        }
    }
    // Not rewritten: an image (never compressed by the origin) and a body labelled with a
    // coding the proxy cannot decode.
    mix.push(spec(
        Category::Good,
        3,
        "/static/hero.png?w=640",
        "gzip, br",
        Oracle::Unchanged,
    ));
    mix.push(spec(
        Category::Good,
        2,
        "/news/article.html?lie_encoding=zstd",
        "zstd",
        Oracle::Unchanged,
    ));

    // Next.js: pages replayed at once and with their captured timing, Flight navigations,
    // prefetches and segment prefetches, and a static chunk.
    for page in ["/next", "/next/about", "/next/live", "/next/nonce"] {
        for accept in ["identity", "gzip", "br"] {
            mix.push(spec(
                Category::Nextjs,
                2,
                format!("{page}?nextjs_timing=0"),
                accept,
                Oracle::Pipeline,
            ));
            mix.push(spec(Category::Nextjs, 1, page, accept, Oracle::Pipeline));
        }
    }
    // Navigations, a prefetch, and a segment prefetch (which has no URL to rewrite).
    let flights: [(&str, Vec<(&str, &str)>); 4] = [
        ("/next/about?_rsc=soak1", vec![("rsc", "1")]),
        ("/next/nonce?_rsc=soak2", vec![("rsc", "1")]),
        (
            "/next/live?_rsc=soak3",
            vec![("rsc", "1"), ("next-router-prefetch", "1")],
        ),
        (
            "/next?_rsc=soak4",
            vec![
                ("rsc", "1"),
                ("next-router-prefetch", "1"),
                ("next-router-segment-prefetch", "/_tree"),
            ],
        ),
    ];
    for (path, extra) in flights {
        for (accept, timing) in [("identity", "&nextjs_timing=0"), ("gzip", ""), ("br", "")] {
            let mut s = spec(
                Category::Nextjs,
                2,
                format!("{path}{timing}"),
                accept,
                Oracle::Pipeline,
            );
            s.extra = extra.clone();
            mix.push(s);
        }
    }
    mix.push(spec(
        Category::Nextjs,
        2,
        "/next/_next/static/chunks/turbopack-3_7ukl8qxeio8.js",
        "gzip",
        Oracle::Pipeline,
    ));

    // Dripped: the head at once, then parts with pauses.
    for (path, accept) in [
        ("/news/article.html?drip_ms=60&drip_chunks=5", "identity"),
        ("/news/article.html?drip_ms=40&drip_chunks=8", "gzip"),
        ("/?drip_ms=50&drip_chunks=4", "br"),
        ("/__gen/110kb.html?drip_ms=20&drip_chunks=10", "deflate"),
        ("/static/app.js?drip_ms=30&drip_chunks=3", "gzip"),
    ] {
        mix.push(spec(Category::Slow, 4, path, accept, Oracle::Rule));
    }

    // The origin dies after some body bytes (fewer than the body has, in that coding).
    for (path, accept) in [
        ("/news/article.html?die_after=6000", "identity"),
        (
            "/news/article.html?die_after=3000&drip_ms=30&drip_chunks=4",
            "gzip",
        ),
        ("/?die_after=2000", "br"),
        ("/__gen/110kb.html?die_after=50000", "identity"),
        (
            "/__gen/110kb.html?die_after=9000&drip_ms=20&drip_chunks=4",
            "deflate",
        ),
    ] {
        mix.push(spec(Category::Dying, 3, path, accept, Oracle::Abandon));
    }
    for (path, accept) in [
        ("/static/random.bin?die_after=6000", "identity"),
        (
            "/static/hero.png?die_after=9000&drip_ms=20&drip_chunks=3",
            "gzip",
        ),
    ] {
        mix.push(spec(
            Category::Dying,
            2,
            path,
            accept,
            Oracle::AbandonPassThrough,
        ));
    }

    // Cleanly framed but broken for the coding: truncated gzip / br, plain text labelled gzip.
    for (path, accept) in [
        ("/news/article.html?encoding=gzip&truncate=4000", "gzip"),
        (
            "/news/article.html?encoding=gzip&truncate=9000&drip_ms=30&drip_chunks=4",
            "gzip",
        ),
        ("/?encoding=br&truncate=3000", "br"),
        ("/news/article.html?lie_encoding=gzip", "gzip"),
    ] {
        mix.push(spec(Category::Broken, 3, path, accept, Oracle::Abandon));
    }
    mix
}

// ---------------------------------------------------------------------------------------------
// Expected bytes

fn decode(coding: Option<&str>, body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let result = match coding {
        None => {
            out.extend_from_slice(body);
            Ok(0)
        }
        Some("gzip") => flate2::read::GzDecoder::new(body).read_to_end(&mut out),
        Some("deflate") => flate2::read::ZlibDecoder::new(body).read_to_end(&mut out),
        Some("br") => brotli::Decompressor::new(body, 4096).read_to_end(&mut out),
        Some(other) => return Err(format!("unexpected content-encoding {other:?}")),
    };
    result.map(|_| out).map_err(|e| format!("{coding:?}: {e}"))
}

/// The core pipeline's output for the whole identity body `original` of type `content_type`.
fn pipeline_output(content_type: &str, original: &[u8], host: &str) -> Result<Vec<u8>, String> {
    let options = PageOptions::default();
    let BodyPlan::Rewrite { rewrite, .. } =
        BodyPlan::decide(200, Some(content_type), None, options.nextjs.enabled)
    else {
        return Err(format!("{content_type} is not rewritten"));
    };
    let rule = UrlRule::new(ORIGIN_HOST, "http", host);
    let mut p =
        trusted_server_core::page::pipeline(Codec::Identity, rewrite, rule, &options, Vec::new());
    p.push(original).map_err(|e| e.to_string())?;
    let (out, report) = p.finish().map_err(|e| e.to_string())?;
    if let Some(why) = report.stages.rsc.degraded {
        return Err(format!("Flight rewriting degraded: {why}"));
    }
    Ok(out)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn headers_for<'a>(spec: &'a Spec, accept: &'a str, host: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![("accept-encoding", accept), ("host", host)];
    headers.extend(spec.extra.iter().copied());
    headers
}

/// Fetches every spec from the origin directly (on a few threads: some specs take the
/// origin a second) and derives what the proxy must answer.
fn expectations(origin: SocketAddr, mix: &[Spec]) -> Result<Vec<Expectation>, String> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<Expectation, String>>>> =
        mix.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(s) = mix.get(i) else { break };
                let e = expectation(origin, s);
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            });
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err("not computed".into()))
        })
        .collect()
}

/// What the proxy must answer for `s`. Also checks that the spec does what it claims (a dying
/// origin does die, a truncated body does not decode, a rewritten page has something to
/// rewrite), so that no check is vacuous.
fn expectation(origin: SocketAddr, s: &Spec) -> Result<Expectation, String> {
    let direct = |accept: &str| {
        get(
            origin,
            &s.path,
            &headers_for(s, accept, ORIGIN_HOST),
            REQUEST_TIMEOUT,
        )
    };
    let label = format!("{} ({})", s.path, s.accept);
    if matches!(s.oracle, Oracle::Abandon | Oracle::AbandonPassThrough) {
        let broken = match direct(s.accept) {
            // The connection closed before a head: the origin died early.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => true,
            Err(e) => return Err(format!("{label}: {e}")),
            Ok(r) if !r.complete => true,
            Ok(r) => decode(r.header("content-encoding"), &r.body).is_err(),
        };
        if !broken {
            return Err(format!("{label}: the origin's body is not broken"));
        }
        return Ok(Expectation {
            coding: None,
            bodies: Vec::new(),
        });
    }
    let plain = direct("identity").map_err(|e| format!("{label}: {e}"))?;
    let coded = direct(s.accept).map_err(|e| format!("{label}: {e}"))?;
    for r in [&plain, &coded] {
        if r.status != 200 || !r.complete {
            return Err(format!(
                "{label}: the origin answered {} (complete {})",
                r.status, r.complete
            ));
        }
    }
    let coding = coded.header("content-encoding").map(str::to_owned);
    let original = plain.body.clone();
    if s.oracle == Oracle::Unchanged {
        return Ok(Expectation {
            coding,
            bodies: HOSTS.iter().map(|_| coded.body.clone()).collect(),
        });
    }
    if plain.header("content-encoding").is_some() {
        return Err(format!("{label}: identity request answered with a coding"));
    }
    // The decoders here must agree with the origin's encoders.
    if decode(coding.as_deref(), &coded.body)? != original {
        return Err(format!(
            "{label}: decoded origin body differs from identity"
        ));
    }
    let mut bodies = Vec::new();
    for host in HOSTS {
        let want = match s.oracle {
            Oracle::Rule => UrlRule::new(ORIGIN_HOST, "http", host).rewrite_all(&original),
            Oracle::Pipeline => {
                let ct = plain.header("content-type").unwrap_or("");
                let want =
                    pipeline_output(ct, &original, host).map_err(|e| format!("{label}: {e}"))?;
                for leak in [format!("//{ORIGIN_HOST}"), format!("\\/\\/{ORIGIN_HOST}")] {
                    if contains(&want, leak.as_bytes()) {
                        return Err(format!("{label}: expected body still has {leak}"));
                    }
                }
                want
            }
            Oracle::Unchanged | Oracle::Abandon | Oracle::AbandonPassThrough => {
                unreachable!("handled above")
            }
        };
        bodies.push(want);
    }
    // A Next.js static chunk and a segment prefetch have no origin URL (their check is that
    // they come back byte-identical); every other page must have something to rewrite.
    let no_urls = s.path.contains("/_next/static/")
        || s.extra
            .iter()
            .any(|(n, _)| *n == "next-router-segment-prefetch");
    if !no_urls && bodies.contains(&original) {
        return Err(format!(
            "{label}: nothing to rewrite, the check would be vacuous"
        ));
    }
    Ok(Expectation { coding, bodies })
}

// ---------------------------------------------------------------------------------------------
// Classification

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Correct,
    Abandoned,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    Streaming,
    Buffered,
}

impl Build {
    fn name(self) -> &'static str {
        match self {
            Build::Streaming => "streaming",
            Build::Buffered => "buffered",
        }
    }
}

/// Puts one response in its class; `Err` carries why it failed.
fn classify(
    build: Build,
    expect: &Expectation,
    oracle: Oracle,
    host_index: usize,
    result: io::Result<e2e::Timed>,
) -> Result<Class, String> {
    if matches!(oracle, Oracle::Abandon | Oracle::AbandonPassThrough) {
        // Where the body streams, the client must see a cut-short transfer (or, when the head
        // was not written yet, a closed connection); the buffered build has sent nothing when
        // a rewritten body breaks, so it answers 502.
        let streams = build == Build::Streaming || oracle == Oracle::AbandonPassThrough;
        return match result {
            Err(e) if streams && e.kind() == io::ErrorKind::InvalidData => Ok(Class::Abandoned),
            Ok(r) if streams && r.status == 200 && !r.complete => Ok(Class::Abandoned),
            Ok(r)
                if !streams
                    && r.status == 502
                    && r.complete
                    && r.header("x-ts-version").is_some() =>
            {
                Ok(Class::Abandoned)
            }
            Ok(r) => Err(format!(
                "broken origin body answered {} (complete {}, {} body bytes{})",
                r.status,
                r.complete,
                r.body.len(),
                if contains(&r.body, b"panicked") {
                    ", \"panicked\" in the body"
                } else {
                    ""
                }
            )),
            Err(e) => Err(format!("transport error: {e}")),
        };
    }
    let r = result.map_err(|e| format!("transport error: {e}"))?;
    if contains(&r.body, b"panicked") {
        return Err(format!("status {}: \"panicked\" in the body", r.status));
    }
    if r.status != 200 {
        return Err(format!(
            "status {}: {:?}",
            r.status,
            String::from_utf8_lossy(&r.body[..r.body.len().min(200)])
        ));
    }
    if !r.complete {
        return Err(format!(
            "incomplete transfer after {} body bytes",
            r.body.len()
        ));
    }
    if r.header("x-ts-version").is_none() {
        return Err("no x-ts-version header".into());
    }
    if build == Build::Buffered && r.header("content-length").is_none() {
        return Err("buffered response without Content-Length".into());
    }
    let coding = r.header("content-encoding");
    if coding != expect.coding.as_deref() {
        return Err(format!(
            "content-encoding {coding:?}, expected {:?}",
            expect.coding
        ));
    }
    let want = &expect.bodies[host_index];
    let got = if oracle == Oracle::Unchanged {
        r.body
    } else {
        decode(coding, &r.body).map_err(|e| format!("complete body does not decode: {e}"))?
    };
    e2e::same_bytes(&got, want).map_err(|e| format!("complete but wrong body: {e}"))?;
    Ok(Class::Correct)
}

// ---------------------------------------------------------------------------------------------
// Load

/// xorshift64*: enough randomness for picking requests, and reproducible from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Default)]
struct Stats {
    /// `(category, class)` → count.
    counts: BTreeMap<(Category, Class), u64>,
    /// Time to the last byte of each correct good (not dripped) response.
    good_latency: Vec<Duration>,
    /// Time to the last byte of every response that arrived.
    all_latency: Vec<Duration>,
}

impl Stats {
    fn merge(&mut self, other: Stats) {
        for (k, v) in other.counts {
            *self.counts.entry(k).or_default() += v;
        }
        self.good_latency.extend(other.good_latency);
        self.all_latency.extend(other.all_latency);
    }

    fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    fn class(&self, class: Class) -> u64 {
        self.counts
            .iter()
            .filter(|((_, c), _)| *c == class)
            .map(|(_, n)| n)
            .sum()
    }
}

struct Failure {
    build: Build,
    host: &'static str,
    spec: Spec,
    why: String,
}

struct Load<'a> {
    mix: &'a [Spec],
    expect: &'a [Expectation],
    streaming: SocketAddr,
    buffered: SocketAddr,
    deadline: Instant,
    failures: &'a Mutex<(u64, Vec<Failure>)>,
}

fn client(load: &Load, seed: u64) -> [Stats; 2] {
    let mut rng = Rng(seed | 1);
    let total_weight: u64 = load.mix.iter().map(|s| u64::from(s.weight)).sum();
    let mut stats = [Stats::default(), Stats::default()];
    while Instant::now() < load.deadline {
        let mut pick = rng.below(total_weight);
        let index = load
            .mix
            .iter()
            .position(|s| {
                let w = u64::from(s.weight);
                if pick < w {
                    true
                } else {
                    pick -= w;
                    false
                }
            })
            .unwrap_or(0);
        let s = &load.mix[index];
        let build = if rng.below(2) == 0 {
            Build::Streaming
        } else {
            Build::Buffered
        };
        let addr = match build {
            Build::Streaming => load.streaming,
            Build::Buffered => load.buffered,
        };
        let host_index = rng.below(HOSTS.len() as u64) as usize;
        let host = HOSTS[host_index];
        let result = get(
            addr,
            &s.path,
            &headers_for(s, s.accept, host),
            REQUEST_TIMEOUT,
        );
        let latency = result.as_ref().ok().map(|r| r.last_at);
        let class = match classify(build, &load.expect[index], s.oracle, host_index, result) {
            Ok(class) => class,
            Err(why) => {
                let mut failures = load.failures.lock().unwrap_or_else(|e| e.into_inner());
                failures.0 += 1;
                if failures.1.len() < SHOWN_FAILURES {
                    failures.1.push(Failure {
                        build,
                        host,
                        spec: s.clone(),
                        why,
                    });
                }
                Class::Failed
            }
        };
        let st = &mut stats[build as usize];
        *st.counts.entry((s.category, class)).or_default() += 1;
        if let Some(t) = latency {
            st.all_latency.push(t);
            if class == Class::Correct && s.category == Category::Good {
                st.good_latency.push(t);
            }
        }
    }
    stats
}

// ---------------------------------------------------------------------------------------------
// Memory

/// VmRSS of `pid` in bytes.
fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The machine's 1-minute load average (other work on the machine shows here).
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn mean(xs: &[u64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64
}

fn mb(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

/// Judges one process's samples; returns the summary line and whether the growth is within the
/// bound.
fn judge_memory(samples: &[(Duration, u64)], run: Duration) -> (String, bool) {
    let after: Vec<(Duration, u64)> = samples
        .iter()
        .copied()
        .filter(|(t, _)| t.as_secs_f64() >= run.as_secs_f64() * WARM_UP_SHARE)
        .collect();
    let in_range = |from: f64, to: f64| -> Vec<u64> {
        samples
            .iter()
            .filter(|(t, _)| {
                let f = t.as_secs_f64() / run.as_secs_f64();
                f >= from && f < to
            })
            .map(|(_, v)| *v)
            .collect()
    };
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return ("no samples".into(), false);
    };
    let peak = samples.iter().map(|(_, v)| *v).max().unwrap_or(0);
    let q2 = in_range(0.25, 0.5);
    let q4 = in_range(0.75, 1.01);
    if q2.is_empty() || q4.is_empty() {
        return (
            format!("{} samples: too few to judge", samples.len()),
            false,
        );
    }
    let (m2, m4) = (mean(&q2), mean(&q4));
    let bound = (m2 * GROWTH_SHARE).max(GROWTH_BYTES);
    let ok = m4 - m2 <= bound;
    // Least-squares slope after the warm-up, for information.
    let slope = {
        let n = after.len() as f64;
        let xs: Vec<f64> = after.iter().map(|(t, _)| t.as_secs_f64() / 60.0).collect();
        let ys: Vec<f64> = after.iter().map(|(_, v)| *v as f64).collect();
        let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
        if sxx > 0.0 {
            sxy / sxx
        } else {
            0.0
        }
    };
    (
        format!(
            "RSS start {:.1} MB, peak {:.1} MB, end {:.1} MB; mean of 2nd quarter {:.1} MB, of last quarter {:.1} MB ({:+.1} MB, bound {:.1} MB); trend after warm-up {:+.2} MB/min; {} samples",
            mb(first.1 as f64),
            mb(peak as f64),
            mb(last.1 as f64),
            mb(m2),
            mb(m4),
            mb(m4 - m2),
            mb(bound),
            mb(slope),
            samples.len()
        ),
        ok,
    )
}

// ---------------------------------------------------------------------------------------------
// Main

struct Args {
    minutes: f64,
    threads: usize,
    seed: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        minutes: 10.0,
        threads: 8,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--minutes" => args.minutes = value.parse().map_err(|e| bad(&e))?,
            "--threads" => args.threads = value.parse().map_err(|e| bad(&e))?,
            "--seed" => args.seed = value.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if !(args.minutes > 0.0 && args.minutes <= 24.0 * 60.0) {
        return Err(format!(
            "--minutes {}: expected 0 < M <= 1440",
            args.minutes
        ));
    }
    if args.threads == 0 || args.threads > 256 {
        return Err(format!("--threads {}: expected 1 to 256", args.threads));
    }
    Ok(args)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn guest_panic(log: &Path) -> Option<String> {
    let text = std::fs::read(log).ok()?;
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .find(|l| l.contains("panicked"))
        .map(str::to_owned)
}

fn main() -> ExitCode {
    match soak() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Sets up, runs the load, checks the builds after it, and reports: PASS is `Ok(true)`.
fn soak() -> Result<bool, String> {
    let args = parse_args()?;
    let root = workspace_root();
    let dir: PathBuf = target_dir(&root).join("soak");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;

    let set_up = Instant::now();
    let (_origin, origin_addr) = build_and_start_demo_origin(&root, None)?;
    let pair = start_service_pair(&root, &dir, origin_addr, &[])?;
    let built = set_up.elapsed();
    let mix = mix();
    let expect = expectations(origin_addr, &mix)?;
    eprintln!("soak: the mix by weight: {}", shares(&mix));
    let pids: Vec<u32> = pair.guards.iter().filter_map(|g| g.id()).collect();
    if pids.len() != 2 {
        return Err("Viceroy is not running".into());
    }
    eprintln!(
        "soak: set-up took {:.1}s (builds and start-up {:.1}s, expected bodies {:.1}s); {} kinds of request; {:.2} min with {} clients, seed {}",
        set_up.elapsed().as_secs_f64(),
        built.as_secs_f64(),
        (set_up.elapsed() - built).as_secs_f64(),
        mix.len(),
        args.minutes,
        args.threads,
        args.seed
    );

    let mut run = run_load(&args, &mix, &expect, &pair, &pids);
    let mut problems = check_after_load(&dir, &pair);
    drop(pair);
    report(&args, &mut run, &mut problems);
    Ok(verdict(&problems))
}

/// Each category's share of the mix by weight: `good 60%, dripped 10%, …`.
fn shares(mix: &[Spec]) -> String {
    let total_weight: u32 = mix.iter().map(|s| s.weight).sum();
    let mut shares: BTreeMap<Category, u32> = BTreeMap::new();
    for s in mix {
        *shares.entry(s.category).or_default() += s.weight;
    }
    let shares: Vec<String> = shares
        .iter()
        .map(|(c, w)| {
            format!(
                "{} {:.0}%",
                c.name(),
                f64::from(*w) * 100.0 / f64::from(total_weight)
            )
        })
        .collect();
    shares.join(", ")
}

/// What a run of the load measured.
struct Run {
    /// How long the load ran.
    elapsed: Duration,
    /// Per build (streaming, buffered): counts and latencies.
    stats: [Stats; 2],
    /// Per build: `(time since the start, RSS)` of its Viceroy process.
    samples: [Vec<(Duration, u64)>; 2],
    /// The machine's load average, sampled alongside.
    loads: Vec<f64>,
    /// How many requests failed, and the first [`SHOWN_FAILURES`] of them.
    failures: (u64, Vec<Failure>),
}

/// Runs `args.threads` clients against both builds for `args.minutes`, while the memory of
/// the Viceroy processes `pids` (streaming, buffered) is sampled.
fn run_load(
    args: &Args,
    mix: &[Spec],
    expect: &[Expectation],
    pair: &ServicePair,
    pids: &[u32],
) -> Run {
    let run_for = Duration::from_secs_f64(args.minutes * 60.0);
    let sample_every = Duration::from_secs_f64((run_for.as_secs_f64() / 100.0).clamp(0.5, 5.0));
    let started = Instant::now();
    let failures = Mutex::new((0, Vec::new()));
    let load = Load {
        mix,
        expect,
        streaming: pair.streaming,
        buffered: pair.buffered,
        deadline: started + run_for,
        failures: &failures,
    };
    let done = AtomicBool::new(false);
    let mut samples: [Vec<(Duration, u64)>; 2] = [Vec::new(), Vec::new()];
    let mut loads: Vec<f64> = Vec::new();
    let mut stats = [Stats::default(), Stats::default()];
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sample(pids, started, sample_every, &done));
        let mut rng = Rng(args.seed | 1);
        let clients: Vec<_> = (0..args.threads)
            .map(|_| {
                let seed = rng.next();
                let load = &load;
                scope.spawn(move || client(load, seed))
            })
            .collect();
        for c in clients {
            if let Ok([s, b]) = c.join() {
                stats[0].merge(s);
                stats[1].merge(b);
            }
        }
        done.store(true, Ordering::Relaxed);
        if let Ok((s, l)) = sampler.join() {
            samples = s;
            loads = l;
        }
    });
    let elapsed = started.elapsed();
    Run {
        elapsed,
        stats,
        samples,
        loads,
        failures: failures.into_inner().unwrap_or_else(|e| e.into_inner()),
    }
}

/// Samples the RSS of `pids` and the machine's load average every `every` until `done`.
fn sample(
    pids: &[u32],
    started: Instant,
    every: Duration,
    done: &AtomicBool,
) -> ([Vec<(Duration, u64)>; 2], Vec<f64>) {
    let mut samples: [Vec<(Duration, u64)>; 2] = [Vec::new(), Vec::new()];
    let mut loads = Vec::new();
    let mut next = Instant::now();
    while !done.load(Ordering::Relaxed) {
        if Instant::now() >= next {
            for (i, pid) in pids.iter().enumerate() {
                if let Some(v) = rss(*pid) {
                    samples[i].push((started.elapsed(), v));
                }
            }
            loads.extend(load_average());
            next += every;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (samples, loads)
}

/// After the load: the problems if a build no longer answers or its guest panicked.
fn check_after_load(dir: &Path, pair: &ServicePair) -> Vec<String> {
    let mut problems = Vec::new();
    for (build, addr) in [("streaming", pair.streaming), ("buffered", pair.buffered)] {
        match get(addr, "/_ts/health", &[], REQUEST_TIMEOUT) {
            Ok(r) if r.status == 200 => {}
            Ok(r) => problems.push(format!("{build}: health answered {}", r.status)),
            Err(e) => problems.push(format!("{build}: health: {e}")),
        }
        let log = dir.join(format!("viceroy-{build}.log"));
        if let Some(line) = guest_panic(&log) {
            problems.push(format!(
                "{build}: the guest panicked ({}): {line}",
                log.display()
            ));
        }
    }
    problems
}

/// Prints the run's summary, each build's figures and the failed requests, adding to
/// `problems` what fails the soak.
fn report(args: &Args, run: &mut Run, problems: &mut Vec<String>) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let loads = &run.loads;
    println!(
        "\nsoak: {:.1} s of load, {} clients, seed {}; machine load average (1 min) during the run {:.1} to {:.1}, mean {:.1}, on {cores} cores",
        run.elapsed.as_secs_f64(),
        args.threads,
        args.seed,
        loads.iter().copied().fold(f64::INFINITY, f64::min),
        loads.iter().copied().fold(0.0, f64::max),
        loads.iter().sum::<f64>() / loads.len().max(1) as f64,
    );
    for (i, build) in [Build::Streaming, Build::Buffered].into_iter().enumerate() {
        report_build(
            build,
            &mut run.stats[i],
            &run.samples[i],
            run.elapsed,
            problems,
        );
    }
    report_failures(&run.failures, problems);
}

/// Prints one build's counts, latencies and memory; its problems go to `problems`.
fn report_build(
    build: Build,
    st: &mut Stats,
    samples: &[(Duration, u64)],
    elapsed: Duration,
    problems: &mut Vec<String>,
) {
    st.good_latency.sort();
    st.all_latency.sort();
    println!(
        "{:<9}  {} requests, {:.1} req/s: {} correct, {} abandoned as expected, {} FAILED",
        build.name(),
        st.total(),
        st.total() as f64 / elapsed.as_secs_f64(),
        st.class(Class::Correct),
        st.class(Class::Abandoned),
        st.class(Class::Failed)
    );
    let by: Vec<String> = st
        .counts
        .iter()
        .map(|((cat, class), n)| format!("{} {class:?} {n}", cat.name()))
        .collect();
    println!("           {}", by.join(", "));
    println!(
        "           last byte: good pages p50 {:.1} ms, p95 {:.1} ms; all requests p50 {:.1} ms, p95 {:.1} ms",
        percentile(&st.good_latency, 0.5),
        percentile(&st.good_latency, 0.95),
        percentile(&st.all_latency, 0.5),
        percentile(&st.all_latency, 0.95)
    );
    let (line, grew_ok) = judge_memory(samples, elapsed);
    println!("           {line}");
    if !grew_ok {
        problems.push(format!(
            "{}: memory grew beyond the bound ({line})",
            build.name()
        ));
    }
    if st.total() == 0 || st.class(Class::Correct) == 0 || st.class(Class::Abandoned) == 0 {
        problems.push(format!(
            "{}: the mix did not run (no correct or no abandoned response)",
            build.name()
        ));
    }
}

/// Prints the failed requests (the first [`SHOWN_FAILURES`]), a problem if there were any.
fn report_failures(failures: &(u64, Vec<Failure>), problems: &mut Vec<String>) {
    if failures.0 == 0 {
        return;
    }
    println!(
        "\n{} failed requests; the first {}:",
        failures.0,
        failures.1.len()
    );
    for f in &failures.1 {
        let extra: Vec<String> = f
            .spec
            .extra
            .iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .collect();
        println!(
            "  {} GET {} (accept-encoding {}, host {}{}{}): {}",
            f.build.name(),
            f.spec.path,
            f.spec.accept,
            f.host,
            if extra.is_empty() { "" } else { ", " },
            extra.join(", "),
            f.why
        );
    }
    problems.push(format!("{} requests failed", failures.0));
}

/// Prints each problem and the verdict; PASS when there are none.
fn verdict(problems: &[String]) -> bool {
    for p in problems {
        println!("problem: {p}");
    }
    let ok = problems.is_empty();
    println!("\nsoak: {}", if ok { "PASS" } else { "FAIL" });
    ok
}
