//! The replayed Next.js captures, run through the core pipeline natively.
//!
//! * [`reference()`]: what the proxy must return for a capture. It is the core pipeline with the
//!   proxy's own settings (`trusted-server.toml`) and URL rule, over the origin's bytes in the
//!   capture's chunks. The output is itself checked row by row with the independent reader in
//!   `ts_bench::flight`. For these pages a plain string replacement would be wrong, because
//!   `T` row lengths change.
//! * [`analyze`]: per capture, the most bytes the pipeline held at once
//!   (`BodyReport<PageReport>::rsc.peak_held`) when fed the **captured chunks**, the largest `T` row,
//!   and the origin's own streamed fraction: the share of the body it sent before its last
//!   chunk, which bounds what any proxy can stream before the origin's last byte, and the
//!   pipeline's own share: the output it had written before it was given those last chunks.
//!   The second is free of network races, so it shows whether the rewriter itself holds
//!   anything back that the origin had already sent.

use std::cell::Cell;
use std::io::Write;
use std::path::Path;
use std::rc::Rc;

use demo_origin::nextjs::{Kind, Replay};
use trusted_server_core::{BodyPlan, BodyReport, Codec, PageOptions, PageReport, UrlRule};
use ts_testkit::Flush;

/// The pipeline options the proxy under test runs with. `trusted-server.toml` sets the
/// defaults for every key the pipeline reads (Next.js rewriting on, 10 MiB held at most), and
/// the benchmark overrides none of them. If
/// that file changed, the proxy's output would stop matching the reference and
/// the latency run's output check (`latency::verify_outputs`) would fail before anything is
/// timed.
pub fn proxy_options() -> PageOptions {
    PageOptions::default()
}

/// What a page's pipeline reports at the end.
type PageBodyReport = BodyReport<PageReport>;

/// Runs the core pipeline natively over `body` pushed in pieces of `chunks` bytes.
///
/// Returns the output, the report, and the output length after each push.
///
/// # Errors
/// If the content type is not rewritten, the chunks do not add up, or the output fails the
/// independent Flight check.
pub fn reference(
    content_type: Option<&str>,
    body: &[u8],
    chunks: &[usize],
    rule: &UrlRule,
    options: &PageOptions,
) -> Result<(Vec<u8>, PageBodyReport, Vec<usize>), String> {
    let BodyPlan::Rewrite { codec, rewrite } =
        BodyPlan::decide(200, content_type, None, options.nextjs.enabled)
    else {
        return Err(format!("{content_type:?} is not rewritten"));
    };
    if codec != Codec::Identity {
        return Err("the reference runs on identity-coded bodies".into());
    }
    if chunks.iter().sum::<usize>() != body.len() {
        return Err("the chunk lengths do not add up to the body".into());
    }
    let written = Rc::new(Cell::new(0));
    let sink = CountingSink {
        out: Vec::new(),
        written: Rc::clone(&written),
    };
    let p = trusted_server_core::page::pipeline(codec, rewrite, rule.clone(), options, sink);
    let mut written_after = Vec::with_capacity(chunks.len());
    let mut at = 0;
    let pieces = chunks.iter().map(|&len| {
        at += len;
        &body[at - len..at]
    });
    // The captured chunks came with pauses between them: the adapter flushes at each.
    let (CountingSink { out, .. }, report) =
        ts_testkit::drive(p, pieces, Flush::EveryPiece, || {
            written_after.push(written.get())
        })
        .map_err(|e| e.to_string())?;
    let html = content_type.is_some_and(|t| t.starts_with("text/html"));
    ts_bench::flight::check_rewrite(html, body, &out, rule)
        .map_err(|e| format!("the core pipeline's output fails the Flight check: {e}"))?;
    Ok((out, report, written_after))
}

/// A `Vec` sink that also publishes its length, so the caller can read it between pushes.
struct CountingSink {
    out: Vec<u8>,
    written: Rc<Cell<usize>>,
}

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.extend_from_slice(buf);
        self.written.set(self.out.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What one capture does to the pipeline.
#[derive(Debug, Clone)]
pub struct CaptureReport {
    /// Capture name (`live`, `live.rsc`, ...).
    pub name: String,
    /// `html`, `rsc`, `prefetch`, `segment-prefetch ...`.
    pub kind: String,
    /// Body bytes.
    pub bytes: usize,
    /// Captured chunks.
    pub chunks: usize,
    /// Most bytes the pipeline held at once, fed the captured chunks.
    pub peak_held: usize,
    /// Why the RSC rewriting degraded, if it did.
    pub degraded: Option<&'static str>,
    /// `T` rows in the capture's Flight stream.
    pub text_rows: usize,
    /// The largest `T` row's declared length.
    pub largest_text_row: usize,
    /// Share of the body the origin sends before its last chunk (chunks recorded at the same
    /// moment as the last one count as last).
    pub origin_fraction: f64,
    /// Share of the pipeline's output written before it was given the chunks of the last
    /// moment. Equal to `origin_fraction` (up to the rewritten hosts' length) when the
    /// rewriter holds nothing that the origin had already sent.
    pub pipeline_fraction: f64,
    /// When the last chunk is sent, ms after the head.
    pub last_chunk_ms: f64,
}

/// Loads the captures the demo origin replays.
///
/// # Errors
/// If `fixtures/nextjs` cannot be loaded.
pub fn load(root: &Path) -> Result<Replay, String> {
    Replay::load(&root.join("fixtures/nextjs"))
}

/// Analyzes every capture with a 200 status whose body the pipeline rewrites.
///
/// # Errors
/// If a capture cannot be read or its pipeline output fails the check.
pub fn analyze(
    replay: &Replay,
    rule: &UrlRule,
    options: &PageOptions,
) -> Result<Vec<CaptureReport>, String> {
    let mut out = Vec::new();
    for c in replay.captures() {
        if c.status != 200 {
            continue;
        }
        let content_type = c.content_type.as_deref();
        if !matches!(
            BodyPlan::decide(200, content_type, None, options.nextjs.enabled),
            BodyPlan::Rewrite { .. }
        ) {
            continue;
        }
        let lens: Vec<usize> = c.chunks.iter().map(|ch| ch.len).collect();
        let (output, report, written_after) =
            reference(content_type, &c.body, &lens, rule, options)
                .map_err(|e| format!("{}: {e}", c.name))?;
        let html = c.kind == Kind::Html;
        let stream =
            ts_bench::flight::stream(html, &c.body).map_err(|e| format!("{}: {e}", c.name))?;
        let (text_rows, largest_text_row) =
            ts_bench::flight::text_rows(&stream).map_err(|e| format!("{}: {e}", c.name))?;
        out.push(CaptureReport {
            name: c.name.clone(),
            kind: c.kind.to_string(),
            bytes: c.body.len(),
            chunks: c.chunks.len(),
            peak_held: report.stages.rsc.peak_held,
            degraded: report.stages.rsc.degraded,
            text_rows,
            largest_text_row,
            origin_fraction: origin_fraction(c.chunks.iter().map(|ch| (ch.len, ch.at))),
            pipeline_fraction: pipeline_fraction(
                c.chunks.iter().map(|ch| ch.at).zip(written_after),
                output.len(),
            ),
            last_chunk_ms: c
                .chunks
                .last()
                .map_or(0.0, |ch| ch.at.as_secs_f64() * 1000.0),
        });
    }
    Ok(out)
}

/// The share of bytes in chunks sent before the last chunk's moment.
fn origin_fraction(chunks: impl Iterator<Item = (usize, std::time::Duration)> + Clone) -> f64 {
    let total: usize = chunks.clone().map(|(len, _)| len).sum();
    let Some(last) = chunks.clone().map(|(_, at)| at).max() else {
        return 1.0;
    };
    let before: usize = chunks
        .filter(|(_, at)| *at < last)
        .map(|(len, _)| len)
        .sum();
    if total == 0 {
        1.0
    } else {
        before as f64 / total as f64
    }
}

/// The share of `total` output bytes written before the last moment's chunks were pushed,
/// given each chunk's moment and the output length after it.
fn pipeline_fraction(
    written_after: impl Iterator<Item = (std::time::Duration, usize)> + Clone,
    total: usize,
) -> f64 {
    let Some(last) = written_after.clone().map(|(at, _)| at).max() else {
        return 1.0;
    };
    let before = written_after
        .filter(|(at, _)| *at < last)
        .map(|(_, written)| written)
        .max()
        .unwrap_or(0);
    if total == 0 {
        1.0
    } else {
        before as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn origin_fraction_counts_chunks_before_the_last_moment() {
        let ms = |m: u64| Duration::from_millis(m);
        let chunks = [(60, ms(0)), (20, ms(5)), (15, ms(9)), (5, ms(9))];
        assert!((origin_fraction(chunks.iter().copied()) - 0.8).abs() < 1e-12);
        assert_eq!(origin_fraction([(7, ms(3))].iter().copied()), 0.0);
    }

    #[test]
    fn pipeline_fraction_reads_the_output_before_the_last_moment() {
        let ms = |m: u64| Duration::from_millis(m);
        let written = [(ms(0), 10), (ms(5), 40), (ms(9), 45), (ms(9), 50)];
        assert!((pipeline_fraction(written.iter().copied(), 50) - 0.8).abs() < 1e-12);
        assert_eq!(pipeline_fraction([(ms(3), 7)].iter().copied(), 7), 0.0);
    }

    #[test]
    fn the_live_page_is_held_no_more_than_its_rows_need() {
        let root = e2e::workspace_root();
        let options = proxy_options();
        let rule = crate::cases::proxy_rule();
        let reports = analyze(&load(&root).unwrap(), &rule, &options).unwrap();
        let live = reports.iter().find(|r| r.name == "live").unwrap();
        assert!(live.text_rows >= 6 && live.largest_text_row > 1000);
        assert!(live.degraded.is_none(), "{:?}", live.degraded);
        // Held: about the largest open row and what streams behind it, never the page.
        assert!(live.peak_held < live.bytes / 2, "{live:?}");
        assert!(reports.iter().any(|r| r.name == "live.rsc"));
        // The rewriter writes out what the origin has sent; only open rows wait.
        for r in &reports {
            assert!(
                r.pipeline_fraction > r.origin_fraction - 0.05,
                "{}: pipeline {} origin {}",
                r.name,
                r.pipeline_fraction,
                r.origin_fraction
            );
        }
    }
}
