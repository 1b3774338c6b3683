//! Real Next.js pages (captured by `scripts/capture-nextjs-fixtures.sh` into
//! `fixtures/nextjs/`) through the whole pipeline.
//!
//! For every captured HTML page and Flight response, and for a request host both shorter and
//! longer than the origin's: the output for every two-way split of the body, for one-byte
//! chunks, and for every split of its gzip and brotli encodings is byte-identical to the output
//! for the whole body; and for an HTML page, that output is the HTML stage's with lol_html from
//! the first byte, though the lazy stage reads these pages' structure itself. Correctness of
//! that output (row lengths, URLs) is judged separately, by the independent oracle in
//! `tests/oracle`.
//!
//! Every split point of every page is many gigabytes of work: `scripts/test.sh` runs this file
//! with `--release`. A debug build tries every `TS_SPLIT_STRIDE`-th point (default 97) so a
//! plain `cargo test` stays quick; set `TS_SPLIT_STRIDE=1` for all of them.

use std::path::PathBuf;

use trusted_server_core::Codec;

mod support;
use support::{decode, encode, html_paths, rewrite_for, rules, run, run_with, ORIGIN};

struct Capture {
    name: String,
    content_type: String,
    body: Vec<u8>,
}

fn captures() -> Vec<Capture> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nextjs");
    let index: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("index.json")).expect("fixtures/nextjs/index.json"),
    )
    .expect("index.json is JSON");
    let captures: Vec<Capture> = index["captures"]
        .as_array()
        .expect("index.json lists captures")
        .iter()
        .filter_map(|c| {
            let content_type = c["content_type"].as_str()?;
            let name = c["name"].as_str().expect("a capture has a name");
            let body = std::fs::read(dir.join(format!("{name}.body"))).expect("capture body");
            Some(Capture {
                name: name.to_owned(),
                content_type: content_type.to_owned(),
                body,
            })
        })
        .filter(|c| c.content_type.starts_with("text/html") || c.content_type == "text/x-component")
        .collect();
    assert!(
        captures
            .iter()
            .any(|c| c.content_type.starts_with("text/html"))
            && captures
                .iter()
                .any(|c| c.content_type == "text/x-component"),
        "fixtures/nextjs must hold HTML pages and Flight responses"
    );
    captures
}

fn stride() -> usize {
    let default = if cfg!(debug_assertions) { 97 } else { 1 };
    std::env::var("TS_SPLIT_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// Occurrences of the origin after `//` that the URL rule would still rewrite.
fn leaks(output: &[u8]) -> usize {
    let needle = format!("//{ORIGIN}");
    output
        .windows(needle.len() + 1)
        .filter(|w| {
            w.starts_with(needle.as_bytes())
                && !(w[needle.len()].is_ascii_alphanumeric() || b".-_:@".contains(&w[needle.len()]))
        })
        .count()
}

/// Checks one capture; see the module docs.
fn check_every_split(capture: &Capture, stride: usize) {
    let rewrite = rewrite_for(&capture.content_type);
    let body = &capture.body;
    for rule in rules() {
        let label = format!("{} ({:?})", capture.name, rule);
        let whole = run(Codec::Identity, rewrite, &rule, body, &[]).expect("no error");
        if capture.content_type.starts_with("text/html") {
            let [_, lol_html_first] = html_paths();
            let (structured, _) =
                run_with(&lol_html_first, Codec::Identity, rewrite, &rule, body, &[]).unwrap();
            assert!(
                whole == structured,
                "{label}: not the output of lol_html from the first byte"
            );
        }
        if body.windows(ORIGIN.len()).any(|w| w == ORIGIN.as_bytes()) {
            assert_ne!(&whole, body, "{label}: nothing was rewritten");
        }
        assert_eq!(leaks(&whole), 0, "{label}: origin URLs left");
        let bytes: Vec<usize> = (1..body.len()).collect();
        let one_byte = run(Codec::Identity, rewrite, &rule, body, &bytes).unwrap();
        assert!(one_byte == whole, "{label}: 1-byte chunks differ");
        for cut in (0..=body.len()).step_by(stride) {
            let split = run(Codec::Identity, rewrite, &rule, body, &[cut]).unwrap();
            assert!(split == whole, "{label}: split at {cut} differs");
        }
        for codec in [Codec::Gzip, Codec::Brotli] {
            let encoded = encode(codec, body);
            for cut in (0..=encoded.len()).step_by(stride) {
                let out = run(codec, rewrite, &rule, &encoded, &[cut]).unwrap();
                assert!(
                    decode(codec, &out) == whole,
                    "{label}: {codec:?} split at {cut} differs"
                );
            }
        }
    }
}

#[test]
fn every_split_of_every_capture_gives_the_same_bytes() {
    let stride = stride();
    let captures = captures();
    // Largest first, spread over the available cores.
    let mut order: Vec<&Capture> = captures.iter().collect();
    order.sort_by_key(|c| std::cmp::Reverse(c.body.len()));
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(capture) = order.get(i) else { break };
                check_every_split(capture, stride);
            });
        }
    });
}

/// The largest length a `T` row header in `body` declares (`:T<hex>,`, escaped or not).
fn largest_text_row(body: &[u8]) -> usize {
    let mut largest = 0;
    for (i, w) in body.windows(2).enumerate() {
        if w != b":T" {
            continue;
        }
        let digits: Vec<u8> = body[i + 2..]
            .iter()
            .copied()
            .take_while(u8::is_ascii_hexdigit)
            .collect();
        if !digits.is_empty() && body.get(i + 2 + digits.len()) == Some(&b',') {
            let len = usize::from_str_radix(std::str::from_utf8(&digits).unwrap(), 16).unwrap();
            largest = largest.max(len);
        }
    }
    largest
}

#[test]
fn held_bytes_stay_near_one_text_row_never_the_page() {
    for capture in captures() {
        let rewrite = rewrite_for(&capture.content_type);
        let [rule, _] = rules();
        // Both ways an HTML page is read: by the lazy stage itself (the default), and by
        // lol_html from the first byte.
        let [lazy, lol_html_first] = html_paths();
        for options in [&lazy, &lol_html_first] {
            let (_, report) =
                run_with(options, Codec::Identity, rewrite, &rule, &capture.body, &[])
                    .expect("no error");
            assert!(
                report.stages.rsc.degraded.is_none(),
                "{}: {:?}",
                capture.name,
                report.stages.rsc
            );
            // A page with Flight scripts needs its structure: the lazy stage reads it itself,
            // and with no lookback lol_html reads it, so these pages test both paths.
            if capture.content_type.starts_with("text/html") {
                let lol_html = options.html_lookback == 0;
                assert_eq!(
                    report.stages.html_structured,
                    Some(lol_html),
                    "{}",
                    capture.name
                );
                assert_eq!(report.stages.html_scanned, !lol_html, "{}", capture.name);
            }
            let row = largest_text_row(&capture.body);
            eprintln!(
                "{}: held at most {} bytes; largest text row {row}; body {}",
                capture.name,
                report.stages.rsc.peak_held,
                capture.body.len()
            );
            // One row, plus (inline) the markup and script wrappers that follow it while it
            // is open: never the page.
            assert!(
                report.stages.rsc.peak_held <= row + 2048,
                "{}: held {} bytes, largest text row {row}",
                capture.name,
                report.stages.rsc.peak_held
            );
        }
    }
}
