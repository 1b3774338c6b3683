//! Pipeline throughput against bare lol_html, on real pages fed in 8 KiB chunks.
//!
//! Both sides get the same bytes in the same chunks. Before anything is timed, each side's
//! output is checked: bare lol_html (no handlers) must return the input unchanged, and the
//! pipeline must return exactly the URL rule applied to the input. Rounds are interleaved
//! (bare, pipeline, bare, pipeline, ...) so drift hits both sides alike; medians and min–max are
//! reported.

use std::time::{Duration, Instant};

use lol_html::{HtmlRewriter, Settings};
use trusted_server_core::{BodyPipeline, BodyPlan, Codec, PipelineOptions, UrlRule};

/// Size of each pushed chunk.
pub const CHUNK: usize = 8 * 1024;

const ORIGIN: &str = "origin.demo-publisher.example";
const HOMEPAGE: &[u8] = include_bytes!("../../../fixtures/site/index.html");
const ARTICLE: &[u8] = include_bytes!("../../../fixtures/site/news/article.html");

/// A named input page.
#[derive(Debug, Clone)]
pub struct Page {
    /// Short name used in reports.
    pub name: &'static str,
    /// The page's bytes.
    pub bytes: Vec<u8>,
}

/// The benchmark pages: the homepage (~35 KB), the article (~42 KB) and a ~1 MB page made of
/// article bodies, so the large case has realistic URL density.
pub fn pages() -> Vec<Page> {
    let mut big = Vec::with_capacity(1 << 20);
    while big.len() < 1 << 20 {
        big.extend_from_slice(ARTICLE);
    }
    vec![
        Page {
            name: "homepage",
            bytes: HOMEPAGE.to_vec(),
        },
        Page {
            name: "article",
            bytes: ARTICLE.to_vec(),
        },
        Page {
            name: "1mb",
            bytes: big,
        },
    ]
}

fn rule() -> UrlRule {
    UrlRule::new(ORIGIN, "http", "127.0.0.1:7676")
}

/// Bare lol_html with no handlers: the ceiling for any lol_html-based rewriter.
pub fn run_bare(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    {
        let mut rewriter = HtmlRewriter::new(Settings::new(), |c: &[u8]| out.extend_from_slice(c));
        for chunk in input.chunks(CHUNK) {
            rewriter
                .write(chunk)
                .expect("bare lol_html accepts the page");
        }
        rewriter.end().expect("bare lol_html ends");
    }
    out
}

/// The full pipeline (identity coding, HTML stage, URL rule, batched output).
pub fn run_pipeline(input: &[u8]) -> Vec<u8> {
    let BodyPlan::Rewrite { rewrite, .. } = BodyPlan::decide(
        200,
        Some("text/html; charset=utf-8"),
        None,
        &PipelineOptions::default().nextjs,
    ) else {
        unreachable!("HTML is always rewritten");
    };
    let sink = Vec::with_capacity(input.len());
    let mut p = BodyPipeline::new(
        Codec::Identity,
        rewrite,
        rule(),
        &PipelineOptions::default(),
        sink,
    );
    for chunk in input.chunks(CHUNK) {
        p.push(chunk).expect("in-memory pipeline cannot fail");
    }
    p.finish().expect("in-memory pipeline cannot fail").0
}

/// Checks both sides' outputs before timing.
///
/// # Errors
/// A message naming the page and side whose output is wrong.
pub fn verify(page: &Page) -> Result<(), String> {
    if run_bare(&page.bytes) != page.bytes {
        return Err(format!("{}: bare lol_html changed the page", page.name));
    }
    if run_pipeline(&page.bytes) != rule().rewrite_all(&page.bytes) {
        return Err(format!(
            "{}: pipeline output differs from the URL rule",
            page.name
        ));
    }
    Ok(())
}

/// Median, min and max of a set of samples, in MB/s.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    /// Median MB/s (10^6 bytes per second).
    pub median: f64,
    /// Slowest round.
    pub min: f64,
    /// Fastest round.
    pub max: f64,
}

fn rate(bytes: usize, times: &mut [Duration]) -> Rate {
    times.sort_unstable();
    let mbps = |d: Duration| bytes as f64 / d.as_secs_f64().max(1e-9) / 1e6;
    Rate {
        median: mbps(times[times.len() / 2]),
        min: mbps(times[times.len() - 1]),
        max: mbps(times[0]),
    }
}

/// Result for one page.
#[derive(Debug, Clone, Copy)]
pub struct PageResult {
    /// Bare lol_html.
    pub bare: Rate,
    /// The pipeline.
    pub pipeline: Rate,
}

/// Times both sides on `page` for `rounds` interleaved rounds. Each round processes ~16 MB
/// (tens of milliseconds), so timer resolution and scheduler blips matter little.
pub fn measure(page: &Page, rounds: usize) -> PageResult {
    let reps = (16_000_000 / page.bytes.len()).max(1);
    let mut bare = Vec::with_capacity(rounds);
    let mut pipeline = Vec::with_capacity(rounds);
    // Warm-up.
    std::hint::black_box(run_bare(&page.bytes));
    std::hint::black_box(run_pipeline(&page.bytes));
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(run_bare(std::hint::black_box(&page.bytes)));
        }
        bare.push(t.elapsed() / reps as u32);
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(run_pipeline(std::hint::black_box(&page.bytes)));
        }
        pipeline.push(t.elapsed() / reps as u32);
    }
    PageResult {
        bare: rate(page.bytes.len(), &mut bare),
        pipeline: rate(page.bytes.len(), &mut pipeline),
    }
}

/// Runs everything and returns `key=value` lines: `<page>.<side>.{median,min,max}` in MB/s.
///
/// # Errors
/// If an output check fails.
pub fn run_all(rounds: usize) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for page in pages() {
        verify(&page)?;
        let r = measure(&page, rounds);
        for (side, rate) in [("bare", r.bare), ("pipeline", r.pipeline)] {
            lines.push(format!("{}.{side}.median={:.2}", page.name, rate.median));
            lines.push(format!("{}.{side}.min={:.2}", page.name, rate.min));
            lines.push(format!("{}.{side}.max={:.2}", page.name, rate.max));
        }
        lines.push(format!("{}.bytes={}", page.name, page.bytes.len()));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_verify_on_every_page() {
        for page in pages() {
            verify(&page).unwrap();
        }
    }

    #[test]
    fn verification_catches_a_wrong_output() {
        // A page whose URLs the rule changes: the pipeline must not equal the bare output.
        let page = &pages()[1];
        assert_ne!(run_pipeline(&page.bytes), run_bare(&page.bytes));
    }
}
