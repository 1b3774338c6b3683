//! Runs the pipeline on one page of the throughput tool, `N` times, for a profiler or an
//! instruction counter: timings on a shared machine swing by a third from run to run, while
//! instructions retired per page do not, so a change too small for the timer shows there.
//! With `renamed`, the page's Flight marker is renamed first
//! (`Page::without_flight_marker`), so a Next.js capture runs as a plain page.
//!
//! ```text
//! cargo build --release -p ts-bench --example page_loop
//! valgrind --tool=cachegrind --cache-sim=no target/release/examples/page_loop next_nonce real 100
//! valgrind --tool=cachegrind --cache-sim=no target/release/examples/page_loop next_nonce real 300
//! ```
//!
//! The difference of the two `I refs` totals over 200 is the instructions per page, without
//! the set-up. docs/performance.md ("Instructions per page") quotes it.

use ts_bench::throughput::{all_pages, run_pipeline};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: page_loop <page> real|renamed <times>");
        std::process::exit(2);
    };
    let [_, name, mode, times] = args.as_slice() else {
        usage()
    };
    let Ok(times) = times.parse::<usize>() else {
        usage()
    };
    let pages = all_pages();
    let Some(page) = pages.iter().find(|p| p.name == *name) else {
        eprintln!("page_loop: no page named {name}");
        std::process::exit(2);
    };
    let page = match mode.as_str() {
        "real" => page.clone(),
        "renamed" => page.without_flight_marker(),
        _ => usage(),
    };
    for _ in 0..times {
        std::hint::black_box(run_pipeline(&page));
    }
}
