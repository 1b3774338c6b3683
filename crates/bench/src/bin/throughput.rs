//! `throughput [ROUNDS]`: pipeline vs bare lol_html (and, on the plain pages, lol_html with URL
//! attribute handlers) on the benchmark pages, printed as
//! `key=value` lines (MB/s). Built natively and for wasm32-wasip1 (run with `viceroy run`), so
//! scripts/benchmark.sh can compare the two on identical inputs.

fn main() {
    if let Ok(side) = std::env::var("TS_BENCH_PROFILE") {
        // Run one side in a loop, for a profiler: `TS_BENCH_PROFILE=pipeline|bare|handlers`, on the 1 MB
        // page or on `TS_BENCH_PAGE=<name>` (e.g. `next_live`).
        let name = std::env::var("TS_BENCH_PAGE").unwrap_or_else(|_| "1mb".into());
        let pages = ts_bench::throughput::all_pages();
        let Some(page) = pages.iter().find(|p| p.name == name) else {
            eprintln!("throughput: no page named {name:?}");
            std::process::exit(2);
        };
        let reps = (200 << 20) / page.bytes.len();
        for _ in 0..reps {
            let out = match side.as_str() {
                "bare" => ts_bench::throughput::run_bare(&page.bytes),
                "handlers" => ts_bench::throughput::run_handlers(&page.bytes),
                _ => ts_bench::throughput::run_pipeline(page),
            };
            std::hint::black_box(out);
        }
        return;
    }
    let rounds = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(9usize);
    match ts_bench::throughput::run_all(rounds.max(1)) {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
        }
        Err(e) => {
            eprintln!("throughput: output check failed: {e}");
            std::process::exit(1);
        }
    }
}
