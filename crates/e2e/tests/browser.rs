//! A real browser through the service: headless Chromium (Debian's `/usr/bin/chromium`, driven
//! by `playwright-core` from `.tools/`) loads the captured Next.js app from the service under
//! Viceroy, which proxies the demo origin. `tests/browser/nextjs.mjs` does the browsing and the
//! checks (hydration without console errors, no failed request, no request to the origin's
//! host, client-side `next/link` navigation through the service); this test starts the servers
//! it needs on free loopback ports, runs the script with a time limit and fails with its output.
//!
//! The service rewrites origin URLs to the request's host, which is the Viceroy address the
//! browser uses. `scripts/setup.sh` (`ensure_browser`, run by `scripts/test.sh`) installs the
//! browser and playwright-core; when either is missing this test fails, it does not skip.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2e::{build_and_start_demo_origin, build_service, start_viceroy, workspace_root};

/// The whole browser run, a backstop: the script has its own, shorter limits.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

/// Panics (the test fails, loudly) when something the browser test needs is missing.
fn require_browser(root: &Path) {
    let mut missing = Vec::new();
    if !Path::new(&chromium()).is_file() {
        missing.push(format!("Chromium ({})", chromium()));
    }
    let playwright = root.join(".tools/node_modules/playwright-core/package.json");
    if !playwright.is_file() {
        missing.push(format!("playwright-core ({})", playwright.display()));
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        missing.push("node (on PATH)".into());
    }
    assert!(
        missing.is_empty(),
        "the browser test needs {}: run scripts/test.sh, whose set-up (ensure_browser in \
         scripts/setup.sh) installs them",
        missing.join(", ")
    );
}

/// Runs `cmd` in its own process group with stdout and stderr merged and echoed, for at most
/// `limit`. Returns the exit code (`None` if it was killed or timed out) and the output.
fn run_bounded(cmd: &mut Command, limit: Duration) -> (Option<i32>, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let output = Arc::new(Mutex::new(String::new()));
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|stream| {
        let output = Arc::clone(&output);
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                println!("{line}");
                let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                out.push_str(&line);
                out.push('\n');
            }
        })
    })
    .collect();
    let deadline = Instant::now() + limit;
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            Ok(None) | Err(_) => {
                // Not reaped yet, so the id is still ours: end the group (node and the
                // Chromium it started), then the child itself.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.kill();
                let _ = child.wait();
                let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                out.push_str(&format!("\n(killed after {limit:?})\n"));
                break None;
            }
        }
    };
    for reader in readers {
        let _ = reader.join();
    }
    let out = output.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (code, out)
}

#[test]
fn nextjs_app_hydrates_and_navigates_through_the_service() {
    let started = Instant::now();
    let root = workspace_root();
    require_browser(&root);
    let dir = root.join("target/e2e-browser");
    std::fs::create_dir_all(&dir).expect("create target/e2e-browser");

    let (_origin, origin_addr) =
        build_and_start_demo_origin(&root, Some(&dir.join("demo-origin.log")))
            .unwrap_or_else(|e| panic!("{e}"));
    // The default settings otherwise (streaming on, Next.js rewriting on); any
    // TRUSTED_SERVER__* variable in the environment applies too.
    let wasm = build_service(
        &root,
        &dir.join("streaming.wasm"),
        &[
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL".to_owned(),
                format!("http://{origin_addr}"),
            ),
            // The demo origin's pages use this host, not the URL's.
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST".to_owned(),
                "origin.demo-publisher.example".to_owned(),
            ),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (_viceroy, addr) =
        start_viceroy(&wasm, &root.join("fastly.toml"), &dir.join("viceroy.log"))
            .unwrap_or_else(|e| panic!("viceroy: {e}"));
    let set_up = started.elapsed();

    let base = format!("http://{addr}");
    // The browser's profile and playwright's scratch files go here, emptied before each run,
    // so a run that had to be killed leaves nothing in the system's temporary directory.
    let tmp = dir.join("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("create target/e2e-browser/tmp");
    let browsing = Instant::now();
    let (code, output) = run_bounded(
        Command::new("node")
            .arg(root.join("tests/browser/nextjs.mjs"))
            .arg(&base)
            .env("TMPDIR", &tmp)
            .current_dir(&root),
        SCRIPT_TIMEOUT,
    );
    println!(
        "browser test: set-up {:.1}s, browser {:.1}s (logs in {})",
        set_up.as_secs_f64(),
        browsing.elapsed().as_secs_f64(),
        dir.display()
    );
    assert!(
        code == Some(0),
        "tests/browser/nextjs.mjs {base} exited with {code:?}:\n{output}"
    );
}
