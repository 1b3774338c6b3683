//! A real browser through the service: headless Chromium (Debian's `/usr/bin/chromium`, driven
//! by `playwright-core` from `.tools/`) loads the captured Next.js app from the service under
//! Viceroy, which proxies the demo origin. `tests/browser/nextjs.mjs` does the browsing and the
//! checks (hydration without console errors, no failed request, no request to the origin's
//! host, client-side `next/link` navigation through the service); this test starts the servers
//! it needs on free loopback ports, runs the script with a time limit and fails with its output.
//!
//! Then `tests/browser/creative.mjs` loads a partner creative through `/first-party/proxy`
//! (from a scripted test partner, `e2e::raw_origin`, that `ads.demo-partner.example` resolves
//! to): it must render and run its script, and that script must not read the publisher's
//! cookies nor get the reader's edge ID from `/_ts/ec`.
//!
//! Then `tests/browser/auction.mjs` loads `fixtures/site/auction.html`: Prebid.js 11 (the
//! pinned npm package's core and Prebid Server adapter, bundled by `scripts/setup.sh`'s
//! `ensure_prebid_bundle` into `fixtures/site/_gen/prebid.js`) POSTs its OpenRTB request to the
//! service's `/_ts/openrtb2/auction` on the first-party host, and both ad slots must render a
//! winning bid from the demo bidders.
//!
//! Then `tests/browser/page-bids.mjs` loads `fixtures/site/ads.html`, whose two slots the
//! demo settings name: the bids come with the page (the navigation auction), `tsjs` renders
//! both from first-party URLs, and again from `tsjs.pageBids` (`/_ts/page-bids`).
//!
//! Last, `tests/browser/creatives.mjs` loads every creative of the corpus
//! (`fixtures/creatives`, served by another demo origin that `creatives.demo-partner.example`
//! and `img.demo-partner2.example` lead to) directly and through `/first-party/proxy`, records
//! every request, and holds each creative to its manifest's expectation (first-party, escapes or
//! breaks through the edge).
//!
//! Then `tests/browser/creatives-auction.mjs` runs every corpus creative as a bidder's `adm`:
//! `fixtures/site/corpus-auction.html` auctions one slot with one bidder, `corpus_direct`
//! (`rendering = "as-sent"`) or `corpus_edge` (`"first-party"`), both the corpus partner's
//! `/bidders/corpus` (which answers with the creative the impression names), and Prebid.js
//! renders the winner into its own frame; each creative is held to its manifest's `auction`
//! expectation.
//!
//! `TS_BROWSER_SCRIPTS=creatives.mjs` (names, comma-separated) runs only those scripts.
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

use e2e::raw_origin::{RawOrigin, Step};
use e2e::{
    build_and_start_demo_origin, build_service, start_demo_origin, start_viceroy, workspace_root,
};

/// Each script's run, a backstop: the scripts have their own, shorter limits (the longest,
/// `creatives-auction.mjs`'s 300 s, is for a busy machine: with another engineer's browser
/// tests running beside it, at load average 18 to 20 on 2 cores, it took 190 to 230 s).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(330);

fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

/// The partner creative `creative.mjs` loads: it renders a heading, and its script tries
/// what a hostile creative on the publisher's origin could do and writes what it saw.
const PROBE_CREATIVE: &str = r#"<!doctype html><html><head><title>creative</title></head><body>
<h1 id="ad">An ad from the partner</h1><pre id="report"></pre>
<script>
(async () => {
  const seen = { ran: true }
  try { seen.cookie = document.cookie } catch (e) { seen.cookie = 'threw ' + e.name }
  try {
    const r = await fetch('/_ts/ec', { credentials: 'include' })
    seen.ec = 'status ' + r.status + ' ' + (await r.text())
  } catch (e) { seen.ec = 'threw ' + e.name }
  document.getElementById('report').textContent = JSON.stringify(seen)
})()
</script></body></html>
"#;

/// The scripted partner: `/probe.html` is [`PROBE_CREATIVE`].
fn start_partner() -> RawOrigin {
    let partner = RawOrigin::start().expect("start the test partner");
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        PROBE_CREATIVE.len()
    );
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(PROBE_CREATIVE.as_bytes());
    partner.script("/probe.html", vec![Step::Write(bytes)]);
    partner
}

/// `bidders` (a TOML array of bidder tables) with the corpus bidder added under two codes:
/// `corpus_direct` (`rendering = "as-sent"`) and `corpus_edge` (`rendering = "first-party"`),
/// both the corpus partner's `/bidders/corpus`, which answers with the corpus creative an
/// impression names (`creatives-auction.mjs`).
fn with_corpus_bidders(bidders: &str, corpus: std::net::SocketAddr) -> String {
    let list = bidders.trim_end().strip_suffix(']').expect("a TOML array");
    let bidder = |code: &str, rendering: &str| {
        format!(
            "{{ code = \"{code}\", endpoint = \"http://{corpus}/bidders/corpus\", vendor_id = 3, \
             rendering = \"{rendering}\" }}"
        )
    };
    format!(
        "{list}, {}, {}]",
        bidder("corpus_direct", "as-sent"),
        bidder("corpus_edge", "first-party")
    )
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

/// Panics when the demo page's Prebid.js bundle (built by `ensure_prebid_bundle` in
/// `scripts/setup.sh`, which `scripts/test.sh` runs) is missing.
fn require_prebid_bundle(root: &Path) {
    let bundle = root.join("fixtures/site/_gen/prebid.js");
    assert!(
        bundle.is_file(),
        "the auction page needs {}: run scripts/test.sh, whose set-up (ensure_prebid_bundle in \
         scripts/setup.sh) builds it from js/prebid",
        bundle.display()
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
    require_prebid_bundle(&root);
    let dir = root.join("target/e2e-browser");
    std::fs::create_dir_all(&dir).expect("create target/e2e-browser");

    let (_origin, origin_addr) =
        build_and_start_demo_origin(&root, Some(&dir.join("demo-origin.log")))
            .unwrap_or_else(|e| panic!("{e}"));
    let partner = start_partner();
    let (_cdn, cdn_addr) = start_demo_origin(
        &e2e::target_dir(&root).join("release/demo-origin"),
        &root.join("fixtures/partner"),
        Some(&dir.join("demo-partner.log")),
    )
    .unwrap_or_else(|e| panic!("demo partner: {e}"));
    // The creative corpus, under two partner names (and one name no setting allows, which
    // only the browser resolves).
    let (_corpus, corpus_addr) = start_demo_origin(
        &e2e::target_dir(&root).join("release/demo-origin"),
        &root.join("fixtures/creatives"),
        Some(&dir.join("corpus-partner.log")),
    )
    .unwrap_or_else(|e| panic!("corpus partner: {e}"));
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
            // The demo partner's creatives come from the scripted partner; the demo
            // bidders' images and win beacons from the demo partner's files; the corpus
            // from its own partner, under two names on two allowed domains.
            (
                "TRUSTED_SERVER__FIRST_PARTY__RESOLVE".to_owned(),
                format!(
                    "{{ \"ads.demo-partner.example\" = \"{}\", \"cdn.demo-partner.example\" = \"{cdn_addr}\", \
                     \"creatives.demo-partner.example\" = \"{corpus_addr}\", \
                     \"img.demo-partner2.example\" = \"{corpus_addr}\" }}",
                    partner.addr()
                ),
            ),
            (
                "TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS".to_owned(),
                r#"["demo-partner.example", "demo-partner2.example"]"#.to_owned(),
            ),
            // The demo bidders, on the demo origin's port, and the corpus bidder twice.
            (
                "TRUSTED_SERVER__AUCTION__BIDDERS".to_owned(),
                with_corpus_bidders(&e2e::demo_bidders(origin_addr), corpus_addr),
            ),
            // Room for the corpus page's long auction on a busy machine (its Prebid.js asks for
            // 5 s); auction.html asks for 1 s, which the edge keeps to.
            (
                "TRUSTED_SERVER__AUCTION__TIMEOUT_MS".to_owned(),
                "5000".to_owned(),
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
    // Each script in turn, the service's address first; any exit but 0 fails the test.
    // TS_BROWSER_SCRIPTS (names, comma-separated) runs only those.
    let only = std::env::var("TS_BROWSER_SCRIPTS").ok();
    let runs = |name: &str| {
        only.as_deref()
            .is_none_or(|list| list.split(',').any(|n| n.trim() == name))
    };
    let script = |name: &str, extra: &[&str]| {
        if !runs(name) {
            println!("browser test: {name} skipped (TS_BROWSER_SCRIPTS)");
            return;
        }
        let path = root.join("tests/browser").join(name);
        let (code, output) = run_bounded(
            Command::new("node")
                .arg(&path)
                .arg(&base)
                .args(extra)
                .env("TMPDIR", &tmp)
                .current_dir(&root),
            SCRIPT_TIMEOUT,
        );
        assert!(
            code == Some(0),
            "tests/browser/{name} {base} exited with {code:?}:\n{output}"
        );
    };
    script("nextjs.mjs", &[]);
    println!(
        "browser test: set-up {:.1}s, browser {:.1}s (logs in {})",
        set_up.as_secs_f64(),
        browsing.elapsed().as_secs_f64(),
        dir.display()
    );
    script(
        "creative.mjs",
        &["http://ads.demo-partner.example/probe.html"],
    );
    let served = partner.take_requests("/probe.html").len();
    assert!(
        !runs("creative.mjs") || served >= 1,
        "the test partner served the creative {served} times"
    );
    script("auction.mjs", &[]);
    script("page-bids.mjs", &[]);
    script("creatives.mjs", &[&corpus_addr.to_string()]);
    script("creatives-auction.mjs", &[&corpus_addr.to_string()]);
}
