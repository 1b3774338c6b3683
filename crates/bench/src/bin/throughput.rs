//! `throughput [ROUNDS]`: pipeline vs bare lol_html on the benchmark pages, printed as
//! `key=value` lines (MB/s). Built natively and for wasm32-wasip1 (run with `viceroy run`), so
//! scripts/benchmark.sh can compare the two on identical inputs.

fn main() {
    if let Ok(side) = std::env::var("TS_BENCH_PROFILE") {
        // Run one side in a loop, for a profiler: `TS_BENCH_PROFILE=pipeline|bare`.
        let page = &ts_bench::throughput::pages()[2];
        for _ in 0..200 {
            let out = match side.as_str() {
                "bare" => ts_bench::throughput::run_bare(&page.bytes),
                _ => ts_bench::throughput::run_pipeline(&page.bytes),
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
