//! Tables, the SVG chart, the `key=value` results, and `--save` / `--compare`.
//!
//! Every key that ends in `_ms` holds milliseconds; ratios have no unit.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::chart::{self, write_chart, ChartPanel, ChartRow};
use crate::latency::{CaseResult, Sample, Side};
use crate::load::{self, LoadResult};
use crate::rsc::CaptureReport;
use crate::stats::{geometric_mean, median};
use crate::throughput::{
    Rates, ThroughputResult, PAGES, PATHOLOGICAL_PAGES, RSC_HTML_PAGES, RSC_PAGES,
};

fn field(r: &CaseResult, side: Side, f: impl Fn(&Sample) -> f64) -> Vec<f64> {
    r.samples
        .get(&side)
        .map(|v| v.iter().map(f).collect())
        .unwrap_or_default()
}

fn med(r: &CaseResult, side: Side, f: impl Fn(&Sample) -> f64) -> f64 {
    median(field(r, side, f))
}

/// Ratio of medians, and the min–max of per-round ratios (rounds are interleaved, so sample
/// `i` of both sides ran back to back).
fn ratio(r: &CaseResult, a: Side, b: Side, f: impl Fn(&Sample) -> f64 + Copy) -> (f64, f64, f64) {
    let (xa, xb) = (field(r, a, f), field(r, b, f));
    let spread = RoundRatio::of(xa.iter().zip(&xb).map(|(x, y)| x / y).collect());
    (median(xa) / median(xb), spread.lo, spread.hi)
}

/// How far one build's two processes read apart on `r` (the A/A control, see
/// `crate::PROCESSES`): per proxy side, the median of `f` over process 1's rounds over that
/// of process 0's, as a factor ≥ 1 (the ratio or its inverse, whichever is larger); the larger
/// of the two builds'.
fn between_processes(r: &CaseResult, f: impl Fn(&Sample) -> f64 + Copy) -> f64 {
    [Side::Streaming, Side::Buffered]
        .into_iter()
        .map(|side| {
            let of = |process: usize| {
                median(
                    r.samples
                        .get(&side)
                        .map(|v| v.iter().filter(|s| s.process == process).map(f).collect())
                        .unwrap_or_default(),
                )
            };
            deviation(of(1) / of(0))
        })
        .fold(f64::NAN, f64::max)
}

/// How far a ratio of two things that should be equal is from 1, either way, as a factor ≥ 1.
fn deviation(ratio: f64) -> f64 {
    ratio.max(1.0 / ratio)
}

/// Pipeline MB/s over bare lol_html MB/s for `page`.
fn pipeline_over_bare(rates: &crate::throughput::Rates, page: &str) -> f64 {
    side_over(rates, page, "pipeline", "bare")
}

/// `page`'s MB/s on side `a` over side `b` (NaN if either is missing).
fn side_over(rates: &crate::throughput::Rates, page: &str, a: &str, b: &str) -> f64 {
    let rate = |side: &str| {
        rates
            .get(&format!("{page}.{side}"))
            .copied()
            .unwrap_or(f64::NAN)
    };
    rate(a) / rate(b)
}

fn find<'a>(latency: &'a [CaseResult], name: &str) -> Option<&'a CaseResult> {
    latency.iter().find(|r| r.case.name == name)
}

/// MB/s over a set of pages as one workload: all their bytes over the sum of their median
/// times (each page processed once).
fn aggregate_rate(
    rates: &Rates,
    bytes: &std::collections::HashMap<String, f64>,
    pages: &[&str],
    side: &str,
) -> f64 {
    let mut total = 0.0;
    let mut seconds = 0.0;
    for page in pages {
        let (Some(b), Some(r)) = (bytes.get(*page), rates.get(&format!("{page}.{side}"))) else {
            return f64::NAN;
        };
        total += b;
        seconds += b / r;
    }
    total / seconds
}

/// The result-key suffix of a capture: its latency case's name (`live` → `next_live`,
/// `live.rsc` → `next_live_rsc`, `index` → `next`).
pub fn capture_key(name: &str) -> String {
    let (base, flight) = match name.strip_suffix(".rsc") {
        Some(base) => (base, "_rsc"),
        None => (name, ""),
    };
    let base = if base == "index" {
        "next".to_owned()
    } else {
        format!("next_{}", base.replace('.', "_"))
    };
    format!("{base}{flight}")
}

/// The capture behind an RSC latency case.
fn capture_of<'a>(r: &CaseResult, captures: &'a [CaptureReport]) -> Option<&'a CaptureReport> {
    let name = r.case.capture?;
    captures.iter().find(|c| c.name == name)
}

/// Median share of the streaming proxy's output that left before the origin's last byte.
fn streamed(r: &CaseResult, side: Side) -> f64 {
    median(field(r, side, |s| s.streamed_fraction.unwrap_or(f64::NAN)))
}

fn fmt(v: f64) -> String {
    if v.is_nan() {
        "na".into()
    } else {
        format!("{v:.3}")
    }
}

/// The `---RESULTS---` lines, in a stable order: the headline keys (latency, throughput, the
/// RSC pages, load), then the per-page details in the same order.
pub fn results(
    latency: &[CaseResult],
    tp: &ThroughputResult,
    load: &[LoadResult],
    captures: &[CaptureReport],
) -> Vec<(String, String)> {
    let mut out = Results::default();
    latency_headline(&mut out, latency);
    throughput_headline(&mut out, tp);
    compression_headline(&mut out, tp);
    consent_headline(&mut out, tp);
    rsc_headline(&mut out, latency, captures);
    rsc_throughput(&mut out, tp);
    edge_cost(&mut out, tp);
    load_headline(&mut out, load);
    latency_details(&mut out, latency, captures);
    capture_details(&mut out, captures);
    throughput_details(&mut out, tp);
    for (key, value) in &tp.compression {
        out.put(key.replace('.', "_"), value.clone());
    }
    load_details(&mut out, load);
    out.0
}

/// Guest CPU per page with edge compression as a share of re-encoding in wasm, on the article
/// (gzip and brotli from the origin), with its A/A control (edge against edge).
fn compression_headline(out: &mut Results, tp: &ThroughputResult) {
    let get = |key: &str| {
        let full = format!("compression.article.{key}");
        tp.compression
            .iter()
            .find(|(k, _)| *k == full)
            .map_or_else(|| "na".to_owned(), |(_, v)| v.clone())
    };
    out.put(
        "cpu_per_page_edge_over_reencode_gzip",
        get("edge_over_reencode"),
    );
    out.put(
        "cpu_per_page_edge_over_reencode_br",
        get("edge_over_reencode_br"),
    );
    out.put("cpu_per_page_edge_aa_control", get("aa"));
}

/// Reading the consent cookies and deciding, per request, in microseconds (median), natively
/// and in wasm: no consent cookie, a TC string of 515 vendors, a GPP string of 8 US sections,
/// and all three strings at once. Next to `guest_cpu_ms_*`, the whole request's cost.
fn consent_headline(out: &mut Results, tp: &ThroughputResult) {
    for platform in ["native", "wasm"] {
        for case in ["none", "tcf", "gpp", "all"] {
            let full = format!("{platform}.{case}.median_us");
            let value = tp
                .consent
                .iter()
                .find(|(k, _)| *k == full)
                .map_or_else(|| "na".to_owned(), |(_, v)| v.clone());
            out.put(format!("consent_us_{platform}_{case}"), value);
        }
    }
}

/// The `key=value` lines being collected, in order.
#[derive(Default)]
struct Results(Vec<(String, String)>);

impl Results {
    fn put(&mut self, key: impl Into<String>, value: String) {
        self.0.push((key.into(), value));
    }
}

fn first(s: &Sample) -> f64 {
    s.first_body_ms
}

fn last(s: &Sample) -> f64 {
    s.last_ms
}

/// Streaming over buffered, time to last byte, on `r`.
fn ttlb_stream_over_buffered(r: &CaseResult) -> f64 {
    ratio(r, Side::Streaming, Side::Buffered, last).0
}

/// The streaming/buffered and proxy/origin latency ratios over all pages, with their A/A
/// control.
fn latency_headline(out: &mut Results, latency: &[CaseResult]) {
    if let Some(drip) = find(latency, "drip") {
        out.put(
            "first_body_stream_over_buffered",
            fmt(ratio(drip, Side::Streaming, Side::Buffered, first).0),
        );
    }
    // The same page as a browser's navigation, with the first-party script's tag injected.
    if let Some(drip) = find(latency, "drip_nav") {
        out.put(
            "first_body_stream_over_buffered_inject",
            fmt(ratio(drip, Side::Streaming, Side::Buffered, first).0),
        );
    }
    // Geometric mean over every plain page and coding (the same 7 pages as before the RSC
    // and navigation pages were added, so runs stay comparable); each page's own ratio is
    // listed below.
    let ratios: Vec<f64> = latency
        .iter()
        .filter(|r| !r.case.is_rsc() && !r.case.is_navigation())
        .map(ttlb_stream_over_buffered)
        .collect();
    out.put("ttlb_stream_over_buffered", fmt(geometric_mean(&ratios)));
    // The worst page of all, the replayed Next.js pages included: streaming must not lose on
    // any page, so this is a maximum, never a mean.
    out.put(
        "ttlb_stream_over_buffered_worst",
        fmt(latency
            .iter()
            .map(ttlb_stream_over_buffered)
            .fold(f64::NAN, f64::max)),
    );
    // The A/A control for the key above: two processes of one build, on their worst page. A
    // stream/buffered figure inside this is a difference this machine cannot tell apart.
    out.put(
        "ttlb_between_processes_worst",
        fmt(latency
            .iter()
            .map(|r| between_processes(r, last))
            .fold(f64::NAN, f64::max)),
    );
    for page in ["1mb", "1mb_paced"] {
        if let Some(r) = find(latency, page) {
            out.put(
                format!("ttlb_proxy_over_origin_{page}"),
                fmt(ratio(r, Side::Streaming, Side::Direct, last).0),
            );
        }
    }
}

/// Pipeline over bare lol_html (and over lol_html with URL attribute handlers), natively and
/// in wasm, and wasm over native.
fn throughput_headline(out: &mut Results, tp: &ThroughputResult) {
    out.put(
        "throughput_pipeline_over_bare_lolhtml",
        fmt(pipeline_over_bare(&tp.native, "1mb")),
    );
    // The goal is per page, natively and in wasm: report the worst plain page of each, and the
    // plain way (lol_html with URL attribute handlers) beside it.
    for (suffix, rates) in [("", &tp.native), ("_wasm", &tp.wasm)] {
        let worst = PAGES
            .iter()
            .map(|page| pipeline_over_bare(rates, page))
            .fold(f64::NAN, f64::min);
        out.put(
            format!("throughput_pipeline_over_bare_lolhtml_min{suffix}"),
            fmt(worst),
        );
        // With the first-party script's injection on, as page navigations get it.
        out.put(
            format!("throughput_inject_over_bare_lolhtml{suffix}"),
            fmt(side_over(rates, "1mb", "inject", "bare")),
        );
        let worst_inject = PAGES
            .iter()
            .map(|page| side_over(rates, page, "inject", "bare"))
            .fold(f64::NAN, f64::min);
        out.put(
            format!("throughput_inject_over_bare_lolhtml_min{suffix}"),
            fmt(worst_inject),
        );
        out.put(
            format!("throughput_handlers_over_bare_lolhtml{suffix}"),
            fmt(side_over(rates, "1mb", "handlers", "bare")),
        );
        out.put(
            format!("throughput_pipeline_over_handlers{suffix}"),
            fmt(side_over(rates, "1mb", "pipeline", "handlers")),
        );
    }
    let native_pipeline = tp.native.get("1mb.pipeline").copied().unwrap_or(f64::NAN);
    let wasm_pipeline = tp.wasm.get("1mb.pipeline").copied().unwrap_or(f64::NAN);
    out.put(
        "throughput_wasm_over_native",
        fmt(wasm_pipeline / native_pipeline),
    );
}

/// The replayed Next.js pages: streamed fractions (the proxy's, the origin's ceiling, the
/// pipeline's own), held bytes, `T` rows, degrades, and time to last byte.
fn rsc_headline(out: &mut Results, latency: &[CaseResult], captures: &[CaptureReport]) {
    let rsc_cases: Vec<&CaseResult> = latency.iter().filter(|r| r.case.is_rsc()).collect();
    let min_over =
        |f: &dyn Fn(&CaseResult) -> f64| rsc_cases.iter().map(|r| f(r)).fold(f64::NAN, f64::min);
    out.put(
        "rsc_streamed_fraction",
        fmt(min_over(&|r| streamed(r, Side::Streaming))),
    );
    out.put(
        "rsc_origin_fraction",
        fmt(min_over(&|r| {
            capture_of(r, captures).map_or(f64::NAN, |c| c.origin_fraction)
        })),
    );
    let largest =
        |f: fn(&CaptureReport) -> usize| captures.iter().map(f).max().unwrap_or(0).to_string();
    out.put("rsc_max_held_bytes", largest(|c| c.peak_held));
    // The pipeline's own share, free of network races: what it had written before it was
    // given the origin's last chunks, over the origin's share (every 200 capture it rewrites).
    out.put(
        "rsc_pipeline_streamed_over_origin",
        fmt(captures
            .iter()
            .map(|c| c.pipeline_fraction / c.origin_fraction)
            .filter(|r| r.is_finite())
            .fold(f64::NAN, f64::min)),
    );
    out.put("rsc_largest_t_row_bytes", largest(|c| c.largest_text_row));
    let degraded = captures.iter().filter(|c| c.degraded.is_some()).count();
    out.put("rsc_degraded", degraded.to_string());
    let rsc_ttlb: Vec<f64> = rsc_cases
        .iter()
        .map(|r| ttlb_stream_over_buffered(r))
        .collect();
    out.put(
        "ttlb_stream_over_buffered_rsc",
        fmt(geometric_mean(&rsc_ttlb)),
    );
}

/// The RSC HTML pages as one workload: pipeline MB/s and its ratio to bare lol_html.
fn rsc_throughput(out: &mut Results, tp: &ThroughputResult) {
    for (suffix, rates) in [("", &tp.native), ("_wasm", &tp.wasm)] {
        let pipeline = aggregate_rate(rates, &tp.bytes, &RSC_HTML_PAGES, "pipeline");
        let bare = aggregate_rate(rates, &tp.bytes, &RSC_HTML_PAGES, "bare");
        out.put(
            format!("throughput_rsc_pipeline_mb_s{suffix}"),
            format!("{pipeline:.0}"),
        );
        out.put(
            format!("throughput_rsc_pipeline_over_bare_lolhtml{suffix}"),
            fmt(pipeline / bare),
        );
    }
}

/// The page kinds of [`edge_cost`]: the plain pages, the four Next.js HTML captures, and the
/// Flight response.
const PAGE_KINDS: [(&str, &[&str]); 3] = [
    ("plain", &PAGES),
    ("nextjs_html", &RSC_HTML_PAGES),
    ("flight", &["next_live_rsc"]),
];

/// What a page costs at the edge: the wasm pipeline's MB/s per page kind (each kind's pages as
/// one workload, [`aggregate_rate`]) in the build that ships (`wasm_simd`: `+simd128`) and in
/// the one without SIMD, SIMD's gain per kind, and the Next.js HTML pages' MB/s over the
/// plain pages' in wasm (with SIMD) and natively: as one workload, and the slowest capture.
fn edge_cost(out: &mut Results, tp: &ThroughputResult) {
    let rate = |rates: &Rates, pages: &[&str]| aggregate_rate(rates, &tp.bytes, pages, "pipeline");
    for (build, rates) in [("simd", &tp.wasm), ("nosimd", &tp.wasm_nosimd)] {
        for (kind, pages) in PAGE_KINDS {
            out.put(
                format!("edge_wasm_{build}_mb_s_{kind}"),
                format!("{:.0}", rate(rates, pages)),
            );
        }
    }
    for (kind, pages) in PAGE_KINDS {
        out.put(
            format!("edge_wasm_simd_over_nosimd_{kind}"),
            fmt(rate(&tp.wasm, pages) / rate(&tp.wasm_nosimd, pages)),
        );
    }
    for (platform, rates) in [("wasm_simd", &tp.wasm), ("native", &tp.native)] {
        let plain = rate(rates, &PAGES);
        out.put(
            format!("edge_nextjs_over_plain_{platform}"),
            fmt(rate(rates, &RSC_HTML_PAGES) / plain),
        );
        let slowest = RSC_HTML_PAGES
            .iter()
            .map(|page| rate(rates, &[page]))
            .fold(f64::NAN, f64::min);
        out.put(
            format!("edge_nextjs_over_plain_min_{platform}"),
            fmt(slowest / plain),
        );
    }
}

/// `target`'s req/s over the origin's on the article at `connections` (medians over rounds).
fn load_over_origin(summary: &[LoadResult], target: &str, connections: u32) -> f64 {
    let rps = |t: &str| {
        summary
            .iter()
            .find(|l| l.target == t && l.connections == connections && l.page == load::PATH_PAGE)
            .map_or(f64::NAN, |l| l.rps)
    };
    rps(target) / rps("origin")
}

/// Proxy over origin, the builds' worst page and its A/A control, and the error count.
fn load_headline(out: &mut Results, load: &[LoadResult]) {
    let summary = per_target(load);
    out.put(
        "load_rps_proxy_over_origin",
        fmt(load_over_origin(&summary, "proxy", 64)),
    );
    for c in [8, 64] {
        let (rps, p50) = stream_over_buffered_worst(load, c);
        out.put(format!("load_rps_stream_over_buffered_c{c}"), fmt(rps));
        out.put(format!("load_p50_stream_over_buffered_c{c}"), fmt(p50));
        let (rps, p50) = load_between_processes_worst(load, c);
        out.put(format!("load_rps_between_processes_c{c}"), fmt(rps));
        out.put(format!("load_p50_between_processes_c{c}"), fmt(p50));
    }
    out.put(
        "load_errors",
        load.iter().map(|l| l.errors).sum::<u64>().to_string(),
    );
}

/// Per latency page: its ratios, each side's median times and streamed fraction, and for a
/// replayed Next.js page its capture's ceiling.
fn latency_details(out: &mut Results, latency: &[CaseResult], captures: &[CaptureReport]) {
    for r in latency {
        let n = r.case.name;
        out.put(
            format!("ttlb_stream_over_buffered_{n}"),
            fmt(ttlb_stream_over_buffered(r)),
        );
        out.put(
            format!("first_body_stream_over_buffered_{n}"),
            fmt(ratio(r, Side::Streaming, Side::Buffered, first).0),
        );
        out.put(
            format!("ttlb_between_processes_{n}"),
            fmt(between_processes(r, last)),
        );
        out.put(
            format!("ttlb_proxy_over_origin_{n}"),
            fmt(ratio(r, Side::Streaming, Side::Direct, last).0),
        );
        for side in Side::ALL {
            let s = side.name();
            out.put(format!("first_body_ms_{s}_{n}"), fmt(med(r, side, first)));
            out.put(format!("ttlb_ms_{s}_{n}"), fmt(med(r, side, last)));
        }
        for side in Side::ALL {
            out.put(
                format!("streamed_fraction_{}_{n}", side.name()),
                fmt(streamed(r, side)),
            );
        }
        if let Some(c) = capture_of(r, captures) {
            out.put(
                format!("rsc_streamed_fraction_{n}"),
                fmt(streamed(r, Side::Streaming)),
            );
            out.put(format!("rsc_origin_fraction_{n}"), fmt(c.origin_fraction));
        }
    }
}

/// Per HTML or Flight capture: held bytes, largest `T` row, and the pipeline's own share.
fn capture_details(out: &mut Results, captures: &[CaptureReport]) {
    for c in captures
        .iter()
        .filter(|c| c.kind == "html" || c.kind == "rsc")
    {
        let k = capture_key(&c.name);
        out.put(format!("rsc_max_held_bytes_{k}"), c.peak_held.to_string());
        out.put(
            format!("rsc_largest_t_row_bytes_{k}"),
            c.largest_text_row.to_string(),
        );
        out.put(
            format!("rsc_pipeline_fraction_{k}"),
            fmt(c.pipeline_fraction),
        );
    }
}

/// The pathological page's floor, and per page the ratios and MB/s of every side.
fn throughput_details(out: &mut Results, tp: &ThroughputResult) {
    // Pathological markup: its floor, not its ratio (see `PATHOLOGICAL_FLOOR_MBPS`).
    for (platform, rates) in [("native", &tp.native), ("wasm", &tp.wasm)] {
        out.put(
            format!("throughput_pathological_scripts_mbps_{platform}"),
            fmt(rates.get("scripts.pipeline").copied().unwrap_or(f64::NAN)),
        );
    }
    for page in PAGES.iter().chain(&RSC_PAGES).chain(&PATHOLOGICAL_PAGES) {
        out.put(
            format!("throughput_pipeline_over_bare_lolhtml_{page}"),
            fmt(pipeline_over_bare(&tp.native, page)),
        );
        out.put(
            format!("throughput_pipeline_over_bare_lolhtml_wasm_{page}"),
            fmt(pipeline_over_bare(&tp.wasm, page)),
        );
        for (platform, rates) in [
            ("native", &tp.native),
            ("wasm", &tp.wasm),
            ("wasm_nosimd", &tp.wasm_nosimd),
        ] {
            for side in ["pipeline", "bare", "handlers"] {
                // The handler rewriter runs on the plain pages only.
                if let Some(&v) = rates.get(&format!("{page}.{side}")) {
                    out.put(format!("throughput_mbps_{platform}_{side}_{page}"), fmt(v));
                }
            }
        }
    }
}

/// The other proxy/origin ratios, per page the builds' ratios, and per target, page and
/// concurrency its medians.
fn load_details(out: &mut Results, load: &[LoadResult]) {
    let summary = per_target(load);
    for (key, target, c) in [
        ("load_rps_proxy_over_origin_c8", "proxy", 8),
        ("load_rps_proxy_buffered_over_origin", "proxy_buffered", 64),
        (
            "load_rps_proxy_buffered_over_origin_c8",
            "proxy_buffered",
            8,
        ),
    ] {
        out.put(key, fmt(load_over_origin(&summary, target, c)));
    }
    for c in [8, 64] {
        for (page, rps, p50) in stream_over_buffered(load, c) {
            out.put(
                format!("load_rps_stream_over_buffered_c{c}_{page}"),
                fmt(rps.median),
            );
            out.put(
                format!("load_p50_stream_over_buffered_c{c}_{page}"),
                fmt(p50.median),
            );
        }
    }
    for l in &summary {
        // The article's keys keep the names they had when it was the only page loaded.
        let k = if l.page == load::PATH_PAGE {
            format!("{}_c{}", l.target, l.connections)
        } else {
            format!("{}_c{}_{}", l.target, l.connections, l.page)
        };
        out.put(format!("load_rps_{k}"), format!("{:.0}", l.rps));
        out.put(format!("load_p50_ms_{k}"), fmt(l.p50_ms));
        out.put(format!("load_p99_ms_{k}"), fmt(l.p99_ms));
        out.put(format!("load_errors_{k}"), l.errors.to_string());
    }
}

/// A ratio over interleaved rounds: the median of the per-round ratios, with their min and
/// max.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundRatio {
    /// Median of the per-round ratios.
    pub median: f64,
    /// Smallest per-round ratio.
    pub lo: f64,
    /// Largest per-round ratio.
    pub hi: f64,
}

impl RoundRatio {
    /// The median, min and max of `per_round`.
    pub fn of(per_round: Vec<f64>) -> RoundRatio {
        RoundRatio {
            lo: per_round.iter().copied().fold(f64::NAN, f64::min),
            hi: per_round.iter().copied().fold(f64::NAN, f64::max),
            median: median(per_round),
        }
    }
}

/// The runs of each target, page and concurrency level, one record per group (in the order
/// of their first run): median req/s, p50 and p99 over its rounds, errors summed.
fn per_target(load: &[LoadResult]) -> Vec<LoadResult> {
    group(load.iter(), |l| Some((l.target, l.page, l.connections)))
        .into_iter()
        .map(|(_, g)| {
            let of = |f: fn(&LoadResult) -> f64| median(g.iter().map(|l| f(l)).collect());
            LoadResult {
                rps: of(|l| l.rps),
                p50_ms: of(|l| l.p50_ms),
                p99_ms: of(|l| l.p99_ms),
                errors: g.iter().map(|l| l.errors).sum(),
                round: 0,
                ..g[0].clone()
            }
        })
        .collect()
}

/// Group `a`'s req/s and p50 over group `b`'s, paired by round: in each round that has runs
/// of both, the mean of each group's runs (one per process for a build), then the ratio;
/// over the rounds. `None` when no round has both. The one pairing behind the builds' ratio
/// and the A/A control.
fn paired_by_round(
    runs: &[&LoadResult],
    a: impl Fn(&LoadResult) -> bool,
    b: impl Fn(&LoadResult) -> bool,
) -> Option<(RoundRatio, RoundRatio)> {
    let mean = |group: &dyn Fn(&LoadResult) -> bool, round: u32| {
        let of: Vec<&&LoadResult> = runs
            .iter()
            .filter(|l| l.round == round && group(l))
            .collect();
        let n = of.len() as f64;
        (!of.is_empty()).then(|| {
            (
                of.iter().map(|l| l.rps).sum::<f64>() / n,
                of.iter().map(|l| l.p50_ms).sum::<f64>() / n,
            )
        })
    };
    let mut rounds: Vec<u32> = runs.iter().map(|l| l.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let pairs: Vec<((f64, f64), (f64, f64))> = rounds
        .into_iter()
        .filter_map(|round| Some((mean(&a, round)?, mean(&b, round)?)))
        .collect();
    (!pairs.is_empty()).then(|| {
        (
            RoundRatio::of(pairs.iter().map(|(x, y)| x.0 / y.0).collect()),
            RoundRatio::of(pairs.iter().map(|(x, y)| x.1 / y.1).collect()),
        )
    })
}

/// `runs` grouped by `key` (skipping runs it gives `None`), in the order of each group's
/// first run.
fn group<'a, K: PartialEq + Copy>(
    runs: impl Iterator<Item = &'a LoadResult>,
    key: impl Fn(&LoadResult) -> Option<K>,
) -> Vec<(K, Vec<&'a LoadResult>)> {
    let mut groups: Vec<(K, Vec<&LoadResult>)> = Vec::new();
    for l in runs {
        let Some(k) = key(l) else { continue };
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, runs)) => runs.push(l),
            None => groups.push((k, vec![l])),
        }
    }
    groups
}

/// Per loaded page at `connections`: streaming req/s over buffered req/s, and streaming p50
/// over buffered p50, each from the two builds' runs in the same round (they ran back to
/// back; each build's processes averaged), over the rounds.
fn stream_over_buffered(
    load: &[LoadResult],
    connections: u32,
) -> Vec<(&'static str, RoundRatio, RoundRatio)> {
    let at = load.iter().filter(|l| l.connections == connections);
    group(at, |l| (l.target != "origin").then_some(l.page))
        .into_iter()
        .filter_map(|(page, runs)| {
            let (rps, p50) = paired_by_round(
                &runs,
                |l| l.target == "proxy",
                |l| l.target == "proxy_buffered",
            )?;
            Some((page, rps, p50))
        })
        .collect()
}

/// The worst loaded page at `connections`: the lowest median req/s ratio and the highest
/// median p50 ratio (each from its own worst page). `NaN` when nothing was loaded.
fn stream_over_buffered_worst(load: &[LoadResult], connections: u32) -> (f64, f64) {
    stream_over_buffered(load, connections)
        .iter()
        .fold((f64::NAN, f64::NAN), |(rps, p50), (_, r, p)| {
            (rps.min(r.median), p50.max(p.median))
        })
}

/// Per loaded page at `connections` and per build: its process 1's req/s and p50 over its
/// process 0's, paired by round (both ran in every round), over the rounds: the A/A control,
/// see `crate::PROCESSES`.
fn load_between_processes(
    load: &[LoadResult],
    connections: u32,
) -> Vec<(&'static str, &'static str, RoundRatio, RoundRatio)> {
    let at = load.iter().filter(|l| l.connections == connections);
    group(at, |l| (l.target != "origin").then_some((l.target, l.page)))
        .into_iter()
        .filter_map(|((target, page), runs)| {
            let (rps, p50) = paired_by_round(&runs, |l| l.process == 1, |l| l.process == 0)?;
            Some((target, page, rps, p50))
        })
        .collect()
}

/// The A/A control for [`stream_over_buffered_worst`]: how far one build's two processes read
/// apart on the worst page (median of the per-round ratios), req/s as a factor ≤ 1 and p50 as
/// one ≥ 1. `NaN` when a build ran in one process only.
fn load_between_processes_worst(load: &[LoadResult], connections: u32) -> (f64, f64) {
    load_between_processes(load, connections).iter().fold(
        (f64::NAN, f64::NAN),
        |(worst_rps, worst_p50), (_, _, rps, p50)| {
            (
                // The same distance from 1 as `deviation`, as a factor ≤ 1 like the req/s
                // ratio it is read against.
                worst_rps.min(rps.median.min(rps.median.recip())),
                worst_p50.max(deviation(p50.median)),
            )
        },
    )
}

/// Human-readable tables.
pub fn print_tables(
    latency: &[CaseResult],
    tp: &ThroughputResult,
    load: &[LoadResult],
    captures: &[CaptureReport],
) {
    println!("\nLatency (ms; median [min–max] over interleaved rounds)");
    println!(
        "{:<11} {:<10} {:>6} {:>22} {:>24} {:>9}",
        "page", "side", "head", "first body byte", "last byte", "streamed"
    );
    for r in latency {
        for side in Side::ALL {
            let span = |f: fn(&Sample) -> f64| {
                let v = field(r, side, f);
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                format!("{:.1} [{:.1}–{:.1}]", median(v), lo, hi)
            };
            let streamed = median(field(r, side, |s| s.streamed_fraction.unwrap_or(f64::NAN)));
            println!(
                "{:<11} {:<10} {:>6.1} {:>22} {:>24} {:>9}",
                r.case.name,
                side.name(),
                med(r, side, |s| s.headers_ms),
                span(|s| s.first_body_ms),
                span(|s| s.last_ms),
                if streamed.is_nan() {
                    "-".to_owned()
                } else {
                    format!("{:.0}%", streamed * 100.0)
                }
            );
        }
        let (fb, fb_lo, fb_hi) = ratio(r, Side::Streaming, Side::Buffered, |s| s.first_body_ms);
        let (lb, lb_lo, lb_hi) = ratio(r, Side::Streaming, Side::Buffered, |s| s.last_ms);
        let (po, po_lo, po_hi) = ratio(r, Side::Streaming, Side::Direct, |s| s.last_ms);
        let aa = between_processes(r, |s| s.last_ms);
        println!(
            "{:<11} {} bytes {}; ratios: first body stream/buffered {fb:.3} [{fb_lo:.3}–{fb_hi:.3}], last byte stream/buffered {lb:.3} [{lb_lo:.3}–{lb_hi:.3}], proxy/direct {po:.3} [{po_lo:.3}–{po_hi:.3}]; last byte between one build's processes {aa:.3}",
            "",
            r.body_bytes,
            r.case.encoding
        );
    }
    print_rsc_tables(latency, captures);
    println!("\nThroughput (MB/s, 8 KiB chunks; median of run medians [min–max])");
    println!(
        "{:<9} {:<13} {:>22} {:>22} {:>7} {:>22}",
        "platform", "page", "pipeline", "bare lol_html", "ratio", "attribute handlers"
    );
    for (platform, rates) in [
        ("native", &tp.native),
        ("wasm", &tp.wasm),
        ("wasm_nosimd", &tp.wasm_nosimd),
    ] {
        for page in PAGES.iter().chain(&RSC_PAGES) {
            let show = |side: &str| {
                let v = rates
                    .get(&format!("{page}.{side}"))
                    .copied()
                    .unwrap_or(f64::NAN);
                let (lo, hi) = tp
                    .spread
                    .get(&format!("{platform}.{page}.{side}"))
                    .copied()
                    .unwrap_or((f64::NAN, f64::NAN));
                format!("{v:.0} [{lo:.0}–{hi:.0}]")
            };
            let r = pipeline_over_bare(rates, page);
            let handlers = if rates.contains_key(&format!("{page}.handlers")) {
                show("handlers")
            } else {
                "–".to_owned()
            };
            println!(
                "{platform:<9} {page:<13} {:>22} {:>22} {r:>7.3} {handlers:>22}",
                show("pipeline"),
                show("bare")
            );
        }
        let pipeline = aggregate_rate(rates, &tp.bytes, &RSC_HTML_PAGES, "pipeline");
        let bare = aggregate_rate(rates, &tp.bytes, &RSC_HTML_PAGES, "bare");
        println!(
            "{platform:<9} {:<13} {pipeline:>22.0} {bare:>22.0} {:>7.3}",
            "4 RSC HTML",
            pipeline / bare
        );
    }
    println!(
        "\nLoad (wrk, keep-alive, uncompressed; the origin on the article only; medians over \
         interleaved rounds)"
    );
    println!(
        "{:<15} {:<8} {:>5} {:>10} {:>9} {:>9} {:>7}",
        "target", "page", "conns", "req/s", "p50 ms", "p99 ms", "errors"
    );
    for l in per_target(load) {
        println!(
            "{:<15} {:<8} {:>5} {:>10.0} {:>9.2} {:>9.2} {:>7}",
            l.target, l.page, l.connections, l.rps, l.p50_ms, l.p99_ms, l.errors
        );
    }
    for c in [8, 64] {
        for (page, rps, p50) in stream_over_buffered(load, c) {
            println!(
                "streaming/buffered at {c} connections on {page}: req/s {:.3} [{:.3}–{:.3}], \
                 p50 {:.3} [{:.3}–{:.3}] (median [min–max] of per-round ratios)",
                rps.median, rps.lo, rps.hi, p50.median, p50.lo, p50.hi
            );
        }
        for (target, page, rps, p50) in load_between_processes(load, c) {
            println!(
                "A/A, {target} process 2 over process 1 at {c} connections on {page}: \
                 req/s {:.3} [{:.3}–{:.3}], p50 {:.3} [{:.3}–{:.3}] (per-round ratios)",
                rps.median, rps.lo, rps.hi, p50.median, p50.lo, p50.hi
            );
        }
    }
}

fn print_rsc_tables(latency: &[CaseResult], captures: &[CaptureReport]) {
    println!(
        "\nRSC pages (replayed Next.js captures with their chunk timing). streamed = share of the \
         proxy's output that reached the client before the origin sent its last byte, median \
         [min–max] over rounds; ceiling = share the origin sends before its last chunk (chunks \
         recorded at the same moment as the last count as last); times are medians in ms, \
         direct/streaming/buffered"
    );
    println!(
        "{:<14} {:>20} {:>8} {:>9} {:>9} {:>20} {:>20}",
        "page", "streamed", "ceiling", "max held", "largest T", "first body byte", "last byte"
    );
    for r in latency.iter().filter(|r| r.case.is_rsc()) {
        let c = capture_of(r, captures);
        let triple = |f: fn(&Sample) -> f64| {
            format!(
                "{:.1}/{:.1}/{:.1}",
                med(r, Side::Direct, f),
                med(r, Side::Streaming, f),
                med(r, Side::Buffered, f)
            )
        };
        let fractions = field(r, Side::Streaming, |s| {
            s.streamed_fraction.unwrap_or(f64::NAN)
        });
        let lo = fractions.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = fractions.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "{:<14} {:>20} {:>7.1}% {:>9} {:>9} {:>20} {:>20}",
            r.case.name,
            format!(
                "{:.1}% [{:.0}–{:.0}%]",
                streamed(r, Side::Streaming) * 100.0,
                lo * 100.0,
                hi * 100.0
            ),
            c.map_or(f64::NAN, |c| c.origin_fraction) * 100.0,
            c.map_or("-".into(), |c| c.peak_held.to_string()),
            c.map_or("-".into(), |c| c.largest_text_row.to_string()),
            triple(|s| s.first_body_ms),
            triple(|s| s.last_ms),
        );
    }
    println!("\nHeld bytes per capture (core pipeline, native, fed the captured chunks)");
    println!(
        "{:<26} {:<18} {:>7} {:>6} {:>6} {:>9} {:>9} {:>8} {:>8} {:>8}  degraded",
        "capture",
        "kind",
        "bytes",
        "chunks",
        "T rows",
        "largest T",
        "max held",
        "last ms",
        "ceiling",
        "pipeline"
    );
    for c in captures {
        println!(
            "{:<26} {:<18} {:>7} {:>6} {:>6} {:>9} {:>9} {:>8.1} {:>7.1}% {:>7.1}%  {}",
            c.name,
            c.kind,
            c.bytes,
            c.chunks,
            c.text_rows,
            c.largest_text_row,
            c.peak_held,
            c.last_chunk_ms,
            c.origin_fraction * 100.0,
            c.pipeline_fraction * 100.0,
            c.degraded.unwrap_or("-")
        );
    }
}

/// Writes a chart of the latency distributions: one panel per page, one row per side, a dot
/// per request for the first body byte (hollow) and the last byte (filled), with medians.
///
/// # Errors
/// If the file cannot be written.
pub fn write_svg(path: &Path, latency: &[CaseResult]) -> std::io::Result<()> {
    let colors = [
        (Side::Direct, chart::GREY),
        (Side::Streaming, chart::BLUE),
        (Side::Buffered, chart::RED),
    ];
    let panels: Vec<ChartPanel> = latency
        .iter()
        .map(|r| ChartPanel {
            title: r.case.name.to_owned(),
            rows: colors
                .iter()
                .map(|(side, color)| ChartRow {
                    label: side.name().to_owned(),
                    color: *color,
                    points: r
                        .samples
                        .get(side)
                        .into_iter()
                        .flatten()
                        .map(|s| (s.first_body_ms, s.last_ms))
                        .collect(),
                })
                .collect(),
        })
        .collect();
    write_chart(
        path,
        "Latency per request (ms): hollow = first body byte, filled = last byte, bar = median",
        &panels,
    )
}

/// One line describing the machine the numbers came from.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores, {cpu}, {}", std::env::consts::OS)
}

fn run_path(out: &Path, name: &str) -> PathBuf {
    out.join("runs").join(format!("{name}.results"))
}

/// Stores the results under `name`.
///
/// # Errors
/// If the file cannot be written.
pub fn save(
    out: &Path,
    name: &str,
    results: &[(String, String)],
    machine: &str,
) -> Result<PathBuf, String> {
    let path = run_path(out, name);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut text = format!("# machine: {machine}\n");
    for (k, v) in results {
        let _ = writeln!(text, "{k}={v}");
    }
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Prints this run against a stored one: old, new and the change, for every key.
///
/// # Errors
/// If the stored run does not exist (reported, not swallowed).
pub fn compare(out: &Path, name: &str, results: &[(String, String)]) -> Result<(), String> {
    let path = run_path(out, name);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("--compare {name}: cannot read {}: {e}", path.display()))?;
    let old: std::collections::HashMap<&str, &str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .collect();
    println!("\nCompared with {name} ({})", path.display());
    println!("{:<55} {:>12} {:>12} {:>9}", "key", name, "now", "change");
    for (k, v) in results {
        let Some(before) = old.get(k.as_str()) else {
            println!("{k:<55} {:>12} {v:>12} {:>9}", "-", "new");
            continue;
        };
        let change = match (before.parse::<f64>(), v.parse::<f64>()) {
            (Ok(a), Ok(b)) if a != 0.0 => format!("{:+.1}%", (b - a) / a * 100.0),
            _ => String::new(),
        };
        println!("{k:<55} {before:>12} {v:>12} {change:>9}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keys_are_the_latency_case_names() {
        assert_eq!(capture_key("index"), "next");
        assert_eq!(capture_key("live"), "next_live");
        assert_eq!(capture_key("live.rsc"), "next_live_rsc");
        assert_eq!(capture_key("index.rsc"), "next_rsc");
        let names: Vec<&str> = crate::cases::all(true)
            .iter()
            .filter_map(|c| c.capture.map(|cap| (c.name, cap)))
            .inspect(|(name, cap)| assert_eq!(capture_key(cap), *name))
            .map(|(name, _)| name)
            .collect();
        assert_eq!(names, crate::throughput::RSC_PAGES);
    }

    #[test]
    fn aggregate_rate_is_total_bytes_over_total_time() {
        let rates: Rates = [
            ("a.pipeline".to_owned(), 100.0),
            ("b.pipeline".to_owned(), 300.0),
        ]
        .into_iter()
        .collect();
        let bytes = [("a".to_owned(), 100.0), ("b".to_owned(), 300.0)]
            .into_iter()
            .collect();
        // 1 s + 1 s for 400 bytes.
        assert_eq!(
            aggregate_rate(&rates, &bytes, &["a", "b"], "pipeline"),
            200.0
        );
        assert!(aggregate_rate(&rates, &bytes, &["a", "c"], "pipeline").is_nan());
    }

    fn run(
        target: &'static str,
        page: &'static str,
        connections: u32,
        round: u32,
        rps: f64,
        p50_ms: f64,
    ) -> LoadResult {
        LoadResult {
            target,
            page,
            connections,
            round,
            process: round as usize % 2,
            rps,
            p50_ms,
            p99_ms: 0.0,
            errors: 1,
        }
    }

    #[test]
    fn load_ratios_take_the_worst_page_not_the_mean() {
        let load = [
            run("proxy", "article", 8, 0, 200.0, 10.0),
            run("proxy_buffered", "article", 8, 0, 100.0, 20.0),
            run("proxy_buffered", "small", 8, 0, 100.0, 10.0),
            run("proxy", "small", 8, 0, 90.0, 11.0),
            run("origin", "article", 8, 0, 1000.0, 1.0),
            run("proxy", "article", 64, 0, 100.0, 10.0),
        ];
        let per_page = stream_over_buffered(&load, 8);
        assert_eq!(per_page.len(), 2);
        assert_eq!(per_page[0].0, "article");
        assert_eq!(per_page[0].1.median, 2.0);
        assert_eq!(per_page[0].2.median, 0.5);
        assert_eq!(stream_over_buffered_worst(&load, 8), (0.9, 1.1));
        // No buffered run to compare with: nothing, not a made-up ratio.
        assert!(stream_over_buffered(&load, 64).is_empty());
        assert!(stream_over_buffered_worst(&load, 64).0.is_nan());
        let keys = results_load_keys(&load);
        assert!(keys.contains(&("load_rps_stream_over_buffered_c8".into(), "0.900".into())));
        assert!(keys.contains(&("load_p50_stream_over_buffered_c8".into(), "1.100".into())));
        assert!(keys.contains(&("load_rps_proxy_c8".into(), "200".into())));
        assert!(keys.contains(&("load_rps_proxy_c8_small".into(), "90".into())));
        assert!(keys.contains(&("load_rps_stream_over_buffered_c64".into(), "na".into())));
    }

    #[test]
    fn load_ratios_pair_runs_of_the_same_round_and_take_the_median() {
        // The machine was slow in round 1 for both builds: pairing by round sees streaming
        // ahead in every round, although its slow run is below buffered's fast ones.
        let load = [
            run("proxy", "article", 64, 0, 110.0, 9.0),
            run("proxy_buffered", "article", 64, 0, 100.0, 10.0),
            run("proxy_buffered", "article", 64, 1, 50.0, 20.0),
            run("proxy", "article", 64, 1, 60.0, 19.0),
            run("proxy", "article", 64, 2, 105.0, 10.0),
            run("proxy_buffered", "article", 64, 2, 100.0, 10.0),
            // A run without its partner counts for nothing.
            run("proxy", "article", 64, 3, 1.0, 1000.0),
        ];
        let per_page = stream_over_buffered(&load, 64);
        assert_eq!(per_page.len(), 1);
        let (_, rps, p50) = per_page[0];
        assert_eq!((rps.median, rps.lo, rps.hi), (1.1, 1.05, 1.2));
        assert_eq!((p50.median, p50.lo, p50.hi), (0.95, 0.9, 1.0));
        // The per-target keys are medians over rounds, errors summed.
        let summary = per_target(&load);
        assert_eq!(summary.len(), 2);
        assert_eq!((summary[0].target, summary[0].rps), ("proxy", 105.0));
        assert_eq!(summary[0].errors, 4);
        assert_eq!(
            (summary[1].target, summary[1].rps),
            ("proxy_buffered", 100.0)
        );
        let keys = results_load_keys(&load);
        assert!(keys.contains(&("load_rps_stream_over_buffered_c64".into(), "1.100".into())));
        assert!(keys.contains(&("load_rps_proxy_c64".into(), "105".into())));
        assert!(keys.contains(&("load_errors_proxy_c64".into(), "4".into())));
    }

    /// The load keys of a results block with nothing else measured.
    #[test]
    fn the_a_a_control_compares_one_builds_processes_on_the_worst_page() {
        let on = |process: usize, l: LoadResult| LoadResult { process, ..l };
        // Two rounds; each loads both processes of both builds. Round 1 is slow for all.
        let load = [
            on(0, run("proxy", "article", 8, 0, 100.0, 10.0)),
            on(1, run("proxy", "article", 8, 0, 80.0, 12.0)),
            on(0, run("proxy_buffered", "article", 8, 0, 100.0, 10.0)),
            on(1, run("proxy_buffered", "article", 8, 0, 110.0, 9.0)),
            on(0, run("proxy", "article", 8, 1, 50.0, 20.0)),
            on(1, run("proxy", "article", 8, 1, 45.0, 22.0)),
            on(0, run("proxy_buffered", "article", 8, 1, 50.0, 20.0)),
            on(1, run("proxy_buffered", "article", 8, 1, 55.0, 18.0)),
            // The origin runs in one process: never part of the control.
            run("origin", "article", 8, 0, 1000.0, 1.0),
        ];
        let per = load_between_processes(&load, 8);
        assert_eq!(per.len(), 2);
        // Paired by round: 80/100 and 45/50, although round 1's runs are all below round 0's.
        let (target, page, rps, p50) = per[0];
        assert_eq!((target, page), ("proxy", "article"));
        assert_eq!((rps.lo, rps.hi), (0.8, 0.9));
        assert_eq!((p50.lo, p50.hi), (1.1, 1.2));
        assert_eq!((per[1].2.lo, per[1].2.hi), (1.1, 1.1));
        // The worst page and build, either direction (`median` of two takes the upper one):
        // streaming 0.9, buffered 1.1 read as 1/1.1.
        let (rps, p50) = load_between_processes_worst(&load, 8);
        assert_eq!(rps, 0.9);
        assert_eq!(p50, 1.2);
        let keys = results_load_keys(&load);
        assert!(keys.contains(&("load_rps_between_processes_c8".into(), "0.900".into())));
        assert!(keys.contains(&("load_p50_between_processes_c8".into(), "1.200".into())));
        assert!(keys.contains(&("load_rps_between_processes_c64".into(), "na".into())));
        // The builds' ratio averages each build's processes within a round: 90/105, 47.5/52.5.
        let per_page = stream_over_buffered(&load, 8);
        let (_, sb, _) = per_page[0];
        assert_eq!((sb.lo, sb.hi), (90.0 / 105.0, 47.5 / 52.5));

        // Latency: medians per process, the larger deviation of the two builds, either way.
        let sample = |last_ms: f64, process: usize| Sample {
            headers_ms: 0.0,
            first_body_ms: 0.0,
            last_ms,
            streamed_fraction: None,
            process,
        };
        let case = crate::cases::all(true).remove(0);
        let r = CaseResult {
            case,
            samples: [
                (Side::Direct, vec![sample(1.0, 0), sample(50.0, 0)]),
                (Side::Streaming, vec![sample(10.0, 0), sample(10.5, 1)]),
                (Side::Buffered, vec![sample(10.0, 0), sample(8.0, 1)]),
            ]
            .into_iter()
            .collect(),
            body_bytes: 1,
        };
        assert_eq!(between_processes(&r, |s| s.last_ms), 1.25);
    }

    #[test]
    fn compression_figures_reach_the_results() {
        let tp = ThroughputResult {
            compression: vec![
                (
                    "compression.article.edge_over_reencode".into(),
                    "0.044".into(),
                ),
                ("compression.article.aa".into(), "0.976".into()),
            ],
            ..ThroughputResult::default()
        };
        let r = results(&[], &tp, &[], &[]);
        let get = |k: &str| r.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("cpu_per_page_edge_over_reencode_gzip"), Some("0.044"));
        assert_eq!(get("cpu_per_page_edge_over_reencode_br"), Some("na"));
        assert_eq!(get("cpu_per_page_edge_aa_control"), Some("0.976"));
        assert_eq!(get("compression_article_aa"), Some("0.976"));
    }

    #[test]
    fn consent_medians_reach_the_results_per_platform_and_case() {
        let tp = ThroughputResult {
            consent: vec![
                ("native.tcf.median_us".into(), "5.20".into()),
                ("native.tcf.p90_us".into(), "6.00".into()),
                ("wasm.all.median_us".into(), "12.50".into()),
            ],
            ..ThroughputResult::default()
        };
        let r = results(&[], &tp, &[], &[]);
        let get = |k: &str| r.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("consent_us_native_tcf"), Some("5.20"));
        assert_eq!(get("consent_us_wasm_all"), Some("12.50"));
        assert_eq!(get("consent_us_wasm_gpp"), Some("na"));
    }

    #[test]
    fn edge_cost_reports_each_page_kind_per_build_and_the_nextjs_ratio() {
        // Every page 1 MB; plain pages at 100 MB/s (SIMD) and 50 (without); the Next.js HTML
        // pages at 80 except one at 40; the Flight response at 200 and 100.
        let mut bytes = std::collections::HashMap::new();
        let (mut simd, mut nosimd, mut native) = (Rates::new(), Rates::new(), Rates::new());
        for page in PAGES.iter().chain(&RSC_PAGES) {
            bytes.insert((*page).to_owned(), 1e6);
            let (s, n) = match *page {
                "next_live_rsc" => (200.0, 100.0),
                "next_about" => (40.0, 20.0),
                p if RSC_HTML_PAGES.contains(&p) => (80.0, 40.0),
                _ => (100.0, 50.0),
            };
            simd.insert(format!("{page}.pipeline"), s);
            nosimd.insert(format!("{page}.pipeline"), n);
            native.insert(format!("{page}.pipeline"), s * 4.0);
        }
        let tp = ThroughputResult {
            native,
            wasm: simd,
            wasm_nosimd: nosimd,
            bytes,
            ..ThroughputResult::default()
        };
        let r = results(&[], &tp, &[], &[]);
        let get = |k: &str| r.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("edge_wasm_simd_mb_s_plain"), Some("100"));
        assert_eq!(get("edge_wasm_nosimd_mb_s_plain"), Some("50"));
        // 4 MB in 3 × 1/80 + 1/40 s.
        assert_eq!(get("edge_wasm_simd_mb_s_nextjs_html"), Some("64"));
        assert_eq!(get("edge_wasm_simd_mb_s_flight"), Some("200"));
        assert_eq!(get("edge_wasm_nosimd_mb_s_flight"), Some("100"));
        assert_eq!(get("edge_wasm_simd_over_nosimd_plain"), Some("2.000"));
        assert_eq!(get("edge_nextjs_over_plain_wasm_simd"), Some("0.640"));
        assert_eq!(get("edge_nextjs_over_plain_min_wasm_simd"), Some("0.400"));
        assert_eq!(get("edge_nextjs_over_plain_native"), Some("0.640"));
        assert_eq!(
            get("throughput_mbps_wasm_nosimd_pipeline_1mb"),
            Some("50.000")
        );
    }

    fn results_load_keys(load: &[LoadResult]) -> Vec<(String, String)> {
        let tp = ThroughputResult::default();
        results(&[], &tp, load, &[])
            .into_iter()
            .filter(|(k, _)| k.starts_with("load_"))
            .collect()
    }
}
