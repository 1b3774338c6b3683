//! The remote mode (`bench --target URL --baseline URL`) against two running local builds:
//! the streaming and the buffered build of the service under Viceroy, in front of the demo
//! origin, started here as the local benchmark starts them. A bounded run (a few samples), as
//! `scripts/test.sh` does it, that checks the `---RESULTS---` block: every key is there and
//! the values say what the two builds are known to do.
//!
//! Ignored by default (it builds the service twice and starts servers); run it with
//! `cargo test -p ts-bench --test remote -- --ignored`.

use std::collections::HashMap;
use std::process::Command;

use e2e::{build_and_start_demo_origin, start_service_pair, workspace_root};

const DRIP: &str = "/news/article.html?drip_ms=100&drip_chunks=4";

fn results(stdout: &str) -> HashMap<String, String> {
    stdout
        .split_once("---RESULTS---")
        .map(|(_, block)| block)
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn number(r: &HashMap<String, String>, key: &str) -> f64 {
    let v = r
        .get(key)
        .unwrap_or_else(|| panic!("no {key} in the results"));
    v.parse()
        .unwrap_or_else(|_| panic!("{key}={v} is not a number"))
}

fn bench(args: &[&str]) -> (String, HashMap<String, String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
        .output()
        .expect("run bench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bench {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    let r = results(&stdout);
    (stdout, r)
}

#[test]
#[ignore = "builds the service twice and starts servers; scripts/test.sh runs it"]
fn remote_mode_measures_two_running_builds() {
    let root = workspace_root();
    let dir = std::env::temp_dir().join(format!("ts-bench-remote-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (_origin, origin) = build_and_start_demo_origin(&root, None).expect("demo origin");
    let pair = start_service_pair(&root, &dir.join("services"), origin, &[]).expect("services");
    let target = format!("http://{}", pair.streaming);
    let baseline = format!("http://{}", pair.buffered);
    let out = dir.join("out");
    let out_arg = out.to_str().unwrap();
    let paths = format!("/news/article.html,/_ts/health,{DRIP}");
    let mut args = vec![
        "--target",
        &target,
        "--baseline",
        &baseline,
        "--paths",
        &paths,
        "--samples",
        "5",
        "--warmup",
        "2",
        "--out",
        out_arg,
        "--save",
        "first",
    ];
    let wrk = Command::new("wrk").arg("--version").output().is_ok();
    if wrk {
        args.extend(["--load", "1"]);
    }
    let (stdout, r) = bench(&args);

    for key in [
        "news_article_html",
        "ts_health",
        "news_article_html_drip_ms_100_drip_chunks_4",
    ] {
        for side in ["", "baseline_"] {
            for metric in ["headers", "ttfb", "ttlb"] {
                for q in ["p50", "p95"] {
                    let v = number(&r, &format!("remote_{side}{metric}_{q}_ms_{key}"));
                    assert!(v > 0.0 && v < 10_000.0, "{side}{metric} {q} {key}: {v}");
                }
            }
            let warm = number(&r, &format!("remote_{side}samples_{key}"));
            let cold = number(&r, &format!("remote_{side}cold_starts_{key}"));
            // Every warm-up and sample request succeeded and is either warm or cold.
            assert!(
                warm + cold >= 5.0 && warm >= 3.0,
                "{side}{key}: {warm} warm, {cold} cold"
            );
            let p50 = number(&r, &format!("remote_{side}ttlb_p50_ms_{key}"));
            let p95 = number(&r, &format!("remote_{side}ttlb_p95_ms_{key}"));
            let lo = number(&r, &format!("remote_{side}ttlb_min_ms_{key}"));
            let hi = number(&r, &format!("remote_{side}ttlb_max_ms_{key}"));
            assert!(
                lo <= p50 && p50 <= p95 && p95 <= hi,
                "{side}{key}: {lo} {p50} {p95} {hi}"
            );
        }
        for metric in ["headers", "ttfb", "ttlb"] {
            let ratio = number(&r, &format!("remote_{metric}_target_over_baseline_{key}"));
            assert!(
                ratio > 0.0 && ratio.is_finite(),
                "{metric} ratio {key}: {ratio}"
            );
        }
    }
    // The origin drips the page in 4 parts 100 ms apart: the streaming build's first body
    // byte comes with the first part, the buffered build's with the last; both end together.
    let drip = "news_article_html_drip_ms_100_drip_chunks_4";
    let ttfb = number(&r, &format!("remote_ttfb_target_over_baseline_{drip}"));
    assert!(
        ttfb < 0.5,
        "streaming/buffered first body byte on the drip page: {ttfb}"
    );
    let ttlb = number(&r, &format!("remote_ttlb_target_over_baseline_{drip}"));
    assert!(
        (0.8..1.25).contains(&ttlb),
        "streaming/buffered last byte on the drip page: {ttlb}"
    );
    // The first request to each service is cold by rule; nothing failed.
    assert!(number(&r, "remote_cold_starts") >= 2.0);
    assert_eq!(r.get("remote_errors").map(String::as_str), Some("0"));
    assert!(stdout.contains("target/baseline (p50)"), "no ratio line");
    assert!(stdout.contains("first after idle"), "no cold start listed");
    if wrk {
        assert!(number(&r, "remote_load_rps_target") > 0.0);
        assert!(number(&r, "remote_load_rps_baseline") > 0.0);
        assert!(r.contains_key("remote_load_rps_target_over_baseline"));
    }
    let svg = std::fs::read_to_string(out.join("remote-latency.svg")).expect("chart");
    assert!(svg.contains("<circle") && svg.contains("_ts/health"));
    assert!(out.join("runs/first.results").is_file());

    // A second, smaller run compares itself with the saved one.
    let (stdout, r) = bench(&[
        "--target",
        &target,
        "--paths",
        "/_ts/health",
        "--samples",
        "3",
        "--warmup",
        "1",
        "--out",
        out_arg,
        "--compare",
        "first",
    ]);
    assert!(stdout.contains("Compared with first"));
    assert!(number(&r, "remote_ttlb_p50_ms_ts_health") > 0.0);
    assert!(!r.contains_key("remote_ttlb_target_over_baseline_ts_health"));

    drop(pair);
    let _ = std::fs::remove_dir_all(&dir);
}
