//! CPU per page for the two `delivery.compression` choices, measured where it is billed: in the
//! wasm guest (this module is built for `wasm32-wasip1` and run under `viceroy run` by
//! `throughput compression`).
//!
//! * **re-encode** (`wasm`): the origin sends gzip (level 6, what servers default to) or
//!   brotli (quality 5); the pipeline decodes it, rewrites, and encodes it again (gzip level 6,
//!   brotli quality 5, the core's levels).
//! * **edge**: the origin sends identity; the pipeline rewrites only. Fastly's delivery
//!   compression then runs outside the guest and is not billed as guest CPU.
//!
//! Method: a wasm instance is single-threaded and the pipeline does no I/O here (input in
//! memory, output into a `Vec`), so wall time around the pipeline is guest CPU time. Each round
//! runs edge, re-encode, then edge again on the same page (interleaved, so drift hits all
//! three alike), each over enough repetitions to last a few milliseconds; medians over rounds
//! are reported. The second edge run is the A/A control: its ratio to the first says how much
//! of a difference is noise. Before anything is timed, both outputs are checked: the edge
//! output must be the URL rule applied to the page, and each re-encoded output must decode
//! (with `flate2` or `brotli`'s reader, not the pipeline's decoder) to the same bytes.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use trusted_server_core::{Codec, PageOptions, UrlRule};

use crate::throughput::{pages, Page, CHUNK};

const ORIGIN: &str = "origin.demo-publisher.example";

fn rule() -> UrlRule {
    UrlRule::new(ORIGIN, "http", "127.0.0.1:7676")
}

/// The page as a gzip origin sends it (flate2 level 6).
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    e.write_all(bytes).expect("writing to a Vec");
    e.finish().expect("writing to a Vec")
}

/// The page as a brotli origin sends it (quality 5, window 22).
pub fn brotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = ::brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        w.write_all(bytes).expect("writing to a Vec");
    }
    out
}

/// The pipeline over `input` (coded as `codec`) in [`CHUNK`] pieces, flushed only at the end,
/// as the adapter runs it for a body the origin sends at once.
fn run(page: &Page, codec: Codec, input: &[u8]) -> Vec<u8> {
    let rewrite = ts_testkit::rewrite_for(page.content_type);
    let sink = Vec::with_capacity(input.len() * 2);
    let mut p =
        trusted_server_core::page::pipeline(codec, rewrite, rule(), &PageOptions::default(), sink);
    for piece in input.chunks(CHUNK) {
        p.push(piece).expect("the pipeline accepts the page");
    }
    p.finish().expect("the pipeline finishes").0
}

/// Re-encode: gzip in, gzip out.
pub fn run_reencode(page: &Page, gzipped: &[u8]) -> Vec<u8> {
    run(page, Codec::Gzip, gzipped)
}

/// Re-encode: brotli in, brotli out.
pub fn run_reencode_br(page: &Page, compressed: &[u8]) -> Vec<u8> {
    run(page, Codec::Brotli, compressed)
}

/// Edge: identity in, identity out.
pub fn run_edge(page: &Page) -> Vec<u8> {
    run(page, Codec::Identity, &page.bytes)
}

/// Checks both sides' outputs on `page` against independent references.
///
/// # Errors
/// Which side produced what.
pub fn check(page: &Page, gzipped: &[u8], br: &[u8]) -> Result<(), String> {
    let want = rule().rewrite_all(&page.bytes);
    if run_edge(page) != want {
        return Err(format!("{}: edge output is not the URL rule's", page.name));
    }
    let mut decoded = Vec::new();
    GzDecoder::new(&run_reencode(page, gzipped)[..])
        .read_to_end(&mut decoded)
        .map_err(|e| format!("{}: re-encoded output is not gzip: {e}", page.name))?;
    if decoded != want {
        return Err(format!(
            "{}: re-encoded output decodes to other bytes",
            page.name
        ));
    }
    let mut decoded = Vec::new();
    ::brotli::Decompressor::new(&run_reencode_br(page, br)[..], 4096)
        .read_to_end(&mut decoded)
        .map_err(|e| format!("{}: re-encoded output is not brotli: {e}", page.name))?;
    if decoded != want {
        return Err(format!(
            "{}: brotli output decodes to other bytes",
            page.name
        ));
    }
    Ok(())
}

/// Time per page of `work`, averaged over `reps` repetitions.
fn per_page(reps: usize, mut work: impl FnMut() -> Vec<u8>) -> Duration {
    let start = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(work());
    }
    start.elapsed() / reps.max(1) as u32
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs `rounds` interleaved rounds on the plain benchmark pages and returns `key=value`
/// lines, per page: `compression.<page>.edge_us`, `.reencode_us` (gzip), `.reencode_br_us`,
/// `.edge_over_reencode` and `.edge_over_reencode_br` (the edge's CPU as a share of
/// re-encoding's, median of per-round ratios), `.aa` (edge again over edge: the control), and
/// the page's and its gzip's sizes.
///
/// # Errors
/// If an output check fails.
pub fn run_all(rounds: usize) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for page in pages() {
        let gz = gzip(&page.bytes);
        let br = brotli(&page.bytes);
        check(&page, &gz, &br)?;
        // About 8 MiB of page per measurement: a few ms natively, tens in wasm.
        let reps = ((8usize << 20) / page.bytes.len()).max(1);
        let (mut edge, mut reencode, mut again) = (Vec::new(), Vec::new(), Vec::new());
        let mut reencode_br = Vec::new();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        for _ in 0..rounds {
            edge.push(us(per_page(reps, || run_edge(&page))));
            reencode.push(us(per_page(reps, || run_reencode(&page, &gz))));
            reencode_br.push(us(per_page(reps, || run_reencode_br(&page, &br))));
            again.push(us(per_page(reps, || run_edge(&page))));
        }
        let ratios =
            |a: &[f64], b: &[f64]| -> f64 { median(a.iter().zip(b).map(|(x, y)| x / y).collect()) };
        let name = page.name;
        let figures = [
            ("bytes", page.bytes.len().to_string()),
            ("gzip_bytes", gz.len().to_string()),
            ("edge_us", format!("{:.1}", median(edge.clone()))),
            ("reencode_us", format!("{:.1}", median(reencode.clone()))),
            (
                "edge_over_reencode",
                format!("{:.3}", ratios(&edge, &reencode)),
            ),
            (
                "reencode_br_us",
                format!("{:.1}", median(reencode_br.clone())),
            ),
            (
                "edge_over_reencode_br",
                format!("{:.3}", ratios(&edge, &reencode_br)),
            ),
            ("aa", format!("{:.3}", ratios(&again, &edge))),
        ];
        lines.extend(
            figures
                .into_iter()
                .map(|(key, value)| format!("compression.{name}.{key}={value}")),
        );
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_produce_the_rewritten_page() {
        for page in pages() {
            check(&page, &gzip(&page.bytes), &brotli(&page.bytes)).unwrap();
        }
    }

    #[test]
    fn a_wrong_output_is_caught() {
        // The gzip input of another page: the re-encoded side's output no longer matches.
        let page = pages().remove(1);
        let other = b"<html>not the page</html>";
        assert!(check(&page, &gzip(other), &brotli(&page.bytes)).is_err());
        assert!(check(&page, &gzip(&page.bytes), &brotli(other)).is_err());
    }
}
