//! What the Flight rewriting costs on a Next.js page: the pipeline on a captured page against
//! the same bytes with its Flight marker renamed (`self.__next_X.push(`), which the pipeline
//! then treats as a plain page (the URL rule alone, no script is read as Flight). The homepage
//! is the control: renaming changes nothing there. Best of 30 rounds of 200 pages each,
//! natively, one thread:
//!
//! ```text
//! cargo run --release -p ts-bench --example flight_overhead
//! ```
//!
//! It prints figures for one machine; docs/performance.md ("Profiling and counting
//! instructions") describes the methods. For the full interleaved comparison of builds, use
//! the `throughput` tool and `scripts/benchmark.sh`.

use std::time::Instant;
use ts_bench::throughput::{all_pages, run_pipeline, Page};

/// Microseconds per page, best of 30 rounds.
fn micros_per_page(page: &Page) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..30 {
        let start = Instant::now();
        for _ in 0..200 {
            std::hint::black_box(run_pipeline(page));
        }
        best = best.min(start.elapsed().as_secs_f64() / 200.0);
    }
    best * 1e6
}

fn main() {
    let pages = all_pages();
    for name in ["next_nonce", "next", "homepage"] {
        let Some(page) = pages.iter().find(|p| p.name == name) else {
            eprintln!("flight_overhead: no page named {name}");
            std::process::exit(2);
        };
        let renamed = page.without_flight_marker();
        let (with, without) = (micros_per_page(page), micros_per_page(&renamed));
        let rate = |micros: f64, bytes: usize| bytes as f64 / micros;
        println!(
            "{name}: {} bytes: pipeline {with:.1} us ({:.0} MB/s); Flight marker renamed {without:.1} us ({:.0} MB/s)",
            page.bytes.len(),
            rate(with, page.bytes.len()),
            rate(without, renamed.bytes.len()),
        );
    }
}
