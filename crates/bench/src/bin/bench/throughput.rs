//! Throughput: the `throughput` tool natively and as wasm under `viceroy run`, in two wasm
//! builds: the one that ships (fixed-width SIMD, `+simd128` from `.cargo/config.toml`) and one
//! made with the documented switch off (`CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="-C
//! target-feature=-simd128"`, in its own target directory, [`NO_SIMD_TARGET_DIR`]), alternating
//! (native, wasm, wasm without SIMD, native, ...). Each run verifies its sides' outputs before
//! timing; on the RSC pages every run's pipeline output must also have the same digest, on
//! every platform. Each wasm run must report the build it was meant to be (`build.simd128`),
//! so a `RUSTFLAGS` in the environment (which replaces the config's flags) cannot pass a build
//! without SIMD off as the one with it.
//!
//! Native runs keep freed memory in the process ([`NATIVE_MALLOC`]), as the wasm guest's
//! linear memory does: otherwise glibc's trim heuristic decides the figure. A side whose
//! transient allocations per page add up to more than glibc's 128 KiB trim threshold (the
//! pipeline with injection on the homepage: its output, the decoded-text buffer, the chain's
//! buffer between two stages and the lazy stage's 64 KiB look-back block, 138 KB in all)
//! gives the heap top back with `brk` after every page and takes it again on the next, when
//! the heap's layout happens to put those blocks at its top: 26,000 `brk` calls in two
//! seconds and half the throughput, depending only on how many bytes earlier allocations took
//! (the number of rounds alone switched it). With memory kept, every side runs without a
//! system call per page and the figure measures the code.

use std::collections::HashMap;
use std::process::Command;

use e2e::{cargo, workspace_root};

use crate::Options;

/// Median MB/s per `page.side` for one platform.
pub type Rates = HashMap<String, f64>;

/// Both platforms.
#[derive(Debug, Clone, Default)]
pub struct ThroughputResult {
    /// Native medians (median of the per-run medians).
    pub native: Rates,
    /// wasm32-wasip1 under Viceroy, the shipped build (with SIMD).
    pub wasm: Rates,
    /// The same without SIMD (the switch in docs/deploy.md, "SIMD").
    pub wasm_nosimd: Rates,
    /// Min and max of the per-run medians, per `platform.page.side`.
    pub spread: HashMap<String, (f64, f64)>,
    /// Body bytes per page.
    pub bytes: HashMap<String, f64>,
    /// `throughput compression` in wasm: guest CPU per page, re-encode vs edge compression
    /// (`ts_bench::compression`), as the tool printed it (`compression.<page>.<what>`).
    pub compression: Vec<(String, String)>,
    /// `throughput consent` natively and in wasm: reading the consent cookies and deciding
    /// (`ts_bench::consent`), as `native.<case>.<what>` and `wasm.<case>.<what>`.
    pub consent: Vec<(String, String)>,
}

/// The environment of the native runs: glibc's malloc keeps freed memory (no trimming of the
/// heap top, no `mmap` for large blocks), as wasm's never-shrinking linear memory does. See
/// the module documentation for why.
pub const NATIVE_MALLOC: [(&str, &str); 2] = [
    ("MALLOC_TRIM_THRESHOLD_", "4294967295"),
    ("MALLOC_MMAP_THRESHOLD_", "33554432"),
];

/// Where the wasm build without SIMD goes (under the workspace root): a target directory of
/// its own, so neither build's artifacts replace the other's.
pub const NO_SIMD_TARGET_DIR: &str = "target/nosimd";

/// The switch that builds wasm without SIMD (docs/deploy.md, "SIMD"): Cargo appends these
/// flags to `.cargo/config.toml`'s, and the last `target-feature` wins.
pub const NO_SIMD_ENV: (&str, &str) = (
    "CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS",
    "-C target-feature=-simd128",
);

/// Pages measured by the tool, in report order.
pub const PAGES: [&str; 3] = ["homepage", "article", "1mb"];

/// The captured Next.js pages, named as their latency cases: four HTML pages, then the
/// `/next/live` Flight response.
pub const RSC_PAGES: [&str; 5] = [
    "next",
    "next_live",
    "next_about",
    "next_nonce",
    "next_live_rsc",
];

/// Pathological markup (1 MiB of empty `<script></script>` elements), reported for its floor:
/// at least 10 MB/s natively and 4 MB/s in wasm, so a megabyte of the worst markup costs at most
/// a quarter of a second of guest CPU. Plain pages run at hundreds of MB/s.
pub const PATHOLOGICAL_PAGES: [&str; 1] = ["scripts"];

/// The RSC pages whose baseline is bare lol_html on the same HTML (the Flight response is not
/// HTML, so it is listed but left out of the RSC ratio).
pub const RSC_HTML_PAGES: [&str; 4] = ["next", "next_live", "next_about", "next_nonce"];

/// One run's output.
struct Run {
    rates: Rates,
    bytes: HashMap<String, f64>,
    digests: Vec<(String, String)>,
    /// `build.simd128`: whether the build that ran has SIMD (`None`: the tool did not say).
    simd128: Option<bool>,
}

fn parse(text: &str) -> Run {
    let pairs = || text.lines().filter_map(|l| l.split_once('='));
    let suffixed = |suffix: &str| -> HashMap<String, f64> {
        pairs()
            .filter_map(|(k, v)| Some((k.strip_suffix(suffix)?.to_owned(), v.parse().ok()?)))
            .collect()
    };
    let mut digests: Vec<(String, String)> = pairs()
        .filter_map(|(k, v)| Some((k.strip_suffix(".digest")?.to_owned(), v.to_owned())))
        .collect();
    digests.sort();
    Run {
        rates: suffixed(".median"),
        bytes: suffixed(".bytes"),
        digests,
        simd128: pairs()
            .find(|(k, _)| *k == "build.simd128")
            .and_then(|(_, v)| v.parse().ok()),
    }
}

/// Builds the tool for both platforms and runs it alternately.
///
/// # Errors
/// If a build fails or a run reports an output mismatch.
pub fn run(options: &Options) -> Result<ThroughputResult, String> {
    let root = workspace_root().canonicalize().map_err(|e| e.to_string())?;
    eprintln!(
        "bench: building the throughput tool (native, wasm32-wasip1, wasm32-wasip1 without SIMD)"
    );
    let no_simd_dir = root.join(NO_SIMD_TARGET_DIR);
    for (target, no_simd) in [
        (None, false),
        (Some("wasm32-wasip1"), false),
        (Some("wasm32-wasip1"), true),
    ] {
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
        if no_simd {
            cmd.arg("--target-dir")
                .arg(&no_simd_dir)
                .env(NO_SIMD_ENV.0, NO_SIMD_ENV.1);
        }
        e2e::run(&mut cmd)?;
    }
    let (runs, rounds) = if options.quick { (2, "5") } else { (3, "9") };
    let native_bin = root.join("target/release/throughput");
    let wasm = root.join("target/wasm32-wasip1/release/throughput.wasm");
    let wasm_nosimd = no_simd_dir.join("wasm32-wasip1/release/throughput.wasm");
    let mut native_runs = Vec::new();
    let mut wasm_runs = Vec::new();
    let mut nosimd_runs = Vec::new();
    for i in 0..runs {
        eprintln!(
            "bench: throughput run {}/{runs} (native, wasm, wasm without SIMD)",
            i + 1
        );
        native_runs.push(capture(
            Command::new(&native_bin).envs(NATIVE_MALLOC).arg(rounds),
        )?);
        for (module, runs, simd) in [
            (&wasm, &mut wasm_runs, true),
            (&wasm_nosimd, &mut nosimd_runs, false),
        ] {
            let run = capture(
                Command::new("viceroy")
                    .current_dir(&root)
                    .args(["run", "-C", "fastly.toml", "--"])
                    .arg(module)
                    .arg(rounds),
            )?;
            check_build(module, run.simd128, simd)?;
            runs.push(run);
        }
    }
    // Each run already checked its own outputs; the RSC pages' outputs must also be the same
    // bytes on both platforms and in every run.
    let reference = &native_runs[0].digests;
    if reference.len() != RSC_PAGES.len() {
        return Err(format!(
            "the throughput tool reported {} RSC output digests, expected {}",
            reference.len(),
            RSC_PAGES.len()
        ));
    }
    for (i, run) in native_runs
        .iter()
        .chain(&wasm_runs)
        .chain(&nosimd_runs)
        .enumerate()
    {
        if &run.digests != reference {
            return Err(format!(
                "throughput: the pipeline's output on the RSC pages differs between runs \
                 (run {i}: {:?}, first native run: {reference:?})",
                run.digests
            ));
        }
    }
    eprintln!("bench: throughput: native and wasm pipeline outputs on the RSC pages are identical");
    eprintln!("bench: guest CPU per page, re-encode vs edge compression (wasm)");
    let compression = prefixed_lines(
        Command::new("viceroy")
            .current_dir(&root)
            .args(["run", "-C", "fastly.toml", "--"])
            .arg(&wasm)
            .args(["compression", rounds]),
        "compression.",
    )?;
    eprintln!("bench: consent per request, read the cookies and decide (native, wasm)");
    let samples = if options.quick { "31" } else { "101" };
    let mut consent = Vec::new();
    for (platform, cmd) in [
        (
            "native",
            Command::new(&native_bin).args(["consent", samples]),
        ),
        (
            "wasm",
            Command::new("viceroy")
                .current_dir(&root)
                .args(["run", "-C", "fastly.toml", "--"])
                .arg(&wasm)
                .args(["consent", samples]),
        ),
    ] {
        for (key, value) in prefixed_lines(cmd, "consent.")? {
            consent.push((format!("{platform}.{}", &key["consent.".len()..]), value));
        }
    }
    let mut spread = HashMap::new();
    let bytes = native_runs[0].bytes.clone();
    let native: Vec<Rates> = native_runs.into_iter().map(|r| r.rates).collect();
    let wasm: Vec<Rates> = wasm_runs.into_iter().map(|r| r.rates).collect();
    let nosimd: Vec<Rates> = nosimd_runs.into_iter().map(|r| r.rates).collect();
    let native = combine("native", &native, &mut spread);
    let wasm = combine("wasm", &wasm, &mut spread);
    let wasm_nosimd = combine("wasm_nosimd", &nosimd, &mut spread);
    Ok(ThroughputResult {
        native,
        wasm,
        wasm_nosimd,
        spread,
        bytes,
        compression,
        consent,
    })
}

/// Fails unless the wasm build at `module` reported `build.simd128` as `want`.
fn check_build(module: &std::path::Path, got: Option<bool>, want: bool) -> Result<(), String> {
    if got == Some(want) {
        return Ok(());
    }
    let hint = if want {
        "RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS in the environment replace .cargo/config.toml's \
         +simd128, and CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS=\"-C target-feature=-simd128\" \
         turns it off: unset them for the benchmark"
    } else {
        "the build without SIMD still has it: RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS in the \
         environment may ask for it"
    };
    Err(format!(
        "throughput: {} reports build.simd128={got:?}, expected {want}; {hint}",
        module.display()
    ))
}

/// The `key=value` lines of a `throughput` subcommand whose keys start with `prefix`
/// (`throughput compression` checks its outputs first).
fn prefixed_lines(cmd: &mut Command, prefix: &str) -> Result<Vec<(String, String)>, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect())
}

fn capture(cmd: &mut Command) -> Result<Run, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wasm_run_must_be_the_build_it_was_meant_to_be() {
        let module = std::path::Path::new("throughput.wasm");
        let with = parse("build.simd128=true\nhomepage.pipeline.median=1.0\n");
        let without = parse("build.simd128=false\n");
        assert!(check_build(module, with.simd128, true).is_ok());
        assert!(check_build(module, without.simd128, false).is_ok());
        assert!(check_build(module, without.simd128, true).is_err());
        assert!(check_build(module, with.simd128, false).is_err());
        // A tool that does not say is not taken for either.
        assert!(check_build(module, parse("").simd128, true).is_err());
    }
}
