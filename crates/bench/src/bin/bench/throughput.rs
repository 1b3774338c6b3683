//! Throughput: the `throughput` tool natively and as wasm under `viceroy run`, alternating
//! (native, wasm, native, wasm, ...). Each run verifies both sides' outputs before timing.

use std::collections::HashMap;
use std::process::Command;

use e2e::{cargo, workspace_root};

use crate::Options;

/// Median MB/s per `page.side` for one platform.
pub type Rates = HashMap<String, f64>;

/// Both platforms.
#[derive(Debug, Clone)]
pub struct ThroughputResult {
    /// Native medians (median of the per-run medians).
    pub native: Rates,
    /// wasm32-wasip1 under Viceroy.
    pub wasm: Rates,
    /// Min and max of the per-run medians, per `platform.page.side`.
    pub spread: HashMap<String, (f64, f64)>,
}

/// Pages measured by the tool, in report order.
pub const PAGES: [&str; 3] = ["homepage", "article", "1mb"];

fn parse(text: &str) -> Rates {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.ends_with(".median"))
        .filter_map(|(k, v)| Some((k.trim_end_matches(".median").to_owned(), v.parse().ok()?)))
        .collect()
}

/// Builds the tool for both platforms and runs it alternately.
///
/// # Errors
/// If a build fails or a run reports an output mismatch.
pub fn run(options: &Options) -> Result<ThroughputResult, String> {
    let root = workspace_root().canonicalize().map_err(|e| e.to_string())?;
    eprintln!("bench: building the throughput tool (native and wasm32-wasip1)");
    for target in [None, Some("wasm32-wasip1")] {
        let mut cmd = Command::new(cargo());
        cmd.current_dir(&root).args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "ts-bench",
            "--bin",
            "throughput",
        ]);
        if let Some(t) = target {
            cmd.args(["--target", t]);
        }
        e2e::run(&mut cmd)?;
    }
    let (runs, rounds) = if options.quick { (2, "5") } else { (3, "9") };
    let native_bin = root.join("target/release/throughput");
    let wasm = root.join("target/wasm32-wasip1/release/throughput.wasm");
    let mut native_runs = Vec::new();
    let mut wasm_runs = Vec::new();
    for i in 0..runs {
        eprintln!("bench: throughput run {}/{runs} (native, then wasm)", i + 1);
        native_runs.push(capture(Command::new(&native_bin).arg(rounds))?);
        wasm_runs.push(capture(
            Command::new("viceroy")
                .current_dir(&root)
                .args(["run", "-C", "fastly.toml", "--"])
                .arg(&wasm)
                .arg(rounds),
        )?);
    }
    let mut spread = HashMap::new();
    let native = combine("native", &native_runs, &mut spread);
    let wasm = combine("wasm", &wasm_runs, &mut spread);
    Ok(ThroughputResult {
        native,
        wasm,
        spread,
    })
}

fn capture(cmd: &mut Command) -> Result<Rates, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(parse(&String::from_utf8_lossy(&out.stdout)))
}

fn combine(platform: &str, runs: &[Rates], spread: &mut HashMap<String, (f64, f64)>) -> Rates {
    let mut out = Rates::new();
    let Some(first) = runs.first() else {
        return out;
    };
    for key in first.keys() {
        let mut values: Vec<f64> = runs.iter().filter_map(|r| r.get(key).copied()).collect();
        values.sort_by(f64::total_cmp);
        let median = values[values.len() / 2];
        spread.insert(
            format!("{platform}.{key}"),
            (values[0], values[values.len() - 1]),
        );
        out.insert(key.clone(), median);
    }
    out
}
