//! `throughput [ROUNDS]` (and `throughput compression [ROUNDS]`, `throughput consent [SAMPLES]`:
//! see `ts_bench::compression`, `ts_bench::consent`): pipeline vs bare lol_html (and, on the plain pages, lol_html with URL
//! attribute handlers) on the benchmark pages, printed as
//! `key=value` lines (MB/s). Built natively and for wasm32-wasip1 (run with `viceroy run`), so
//! scripts/benchmark.sh can compare the two on identical inputs.
//!
//! The benchmark runs it natively with glibc's malloc keeping freed memory
//! (`MALLOC_TRIM_THRESHOLD_=4294967295 MALLOC_MMAP_THRESHOLD_=33554432`, see
//! `NATIVE_MALLOC` in the `bench` tool); run it by hand the same way to get the same figures.

fn main() {
    // `throughput loop SIDE PAGE MB`: the same, from arguments, for wasm (where the guest does
    // not see the host's environment).
    let args: Vec<String> = std::env::args().collect();
    // `throughput compression [ROUNDS]`: guest CPU per page, re-encode vs edge compression.
    if args.get(1).map(String::as_str) == Some("compression") {
        let rounds = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(9usize);
        match ts_bench::compression::run_all(rounds.max(1)) {
            Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
            Err(e) => {
                eprintln!("throughput compression: output check failed: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    // `throughput consent [SAMPLES]`: reading the consent cookies and deciding, per request.
    if args.get(1).map(String::as_str) == Some("consent") {
        let samples = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(301usize);
        ts_bench::consent::run_all(samples)
            .iter()
            .for_each(|l| println!("{l}"));
        return;
    }
    if args.get(1).map(String::as_str) == Some("loop") {
        let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
        let megabytes = arg(4, "200").parse().unwrap_or(200);
        return run_loop(&arg(2, "pipeline"), &arg(3, "1mb"), megabytes);
    }
    if let Ok(side) = std::env::var("TS_BENCH_PROFILE") {
        // Run one side in a loop, for a profiler: `TS_BENCH_PROFILE=pipeline|bare|handlers`, on
        // the 1 MB page or on `TS_BENCH_PAGE=<name>` (e.g. `next_live`).
        let name = std::env::var("TS_BENCH_PAGE").unwrap_or_else(|_| "1mb".into());
        return run_loop(&side, &name, 200);
    }
    let rounds = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(9usize);
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

/// Runs one side on one page over and over, `megabytes` MiB in all.
fn run_loop(side: &str, name: &str, megabytes: usize) {
    let pages = ts_bench::throughput::all_pages();
    let Some(page) = pages.iter().find(|p| p.name == name) else {
        eprintln!("throughput: no page named {name:?}");
        std::process::exit(2);
    };
    let reps = (megabytes << 20) / page.bytes.len();
    for _ in 0..reps {
        let out = match side {
            "bare" => ts_bench::throughput::run_bare(&page.bytes),
            "handlers" => ts_bench::throughput::run_handlers(&page.bytes),
            "inject" => ts_bench::throughput::run_inject(page),
            _ => ts_bench::throughput::run_pipeline(page),
        };
        std::hint::black_box(out);
    }
}
