//! Helpers shared by the core's integration tests: codecs written with the codec crates
//! directly (not the pipeline's own), and the kit's pipeline driver with the options these
//! tests share.
#![allow(dead_code)] // each test binary uses its own subset

use std::io::{Read, Write};

use trusted_server_core::{
    BodyReport, Codec, PageOptions, PageReport, PipelineError, Rewrite, UrlRule,
};
pub use ts_testkit::{rewrite_for, Flush, ORIGIN};

/// Two rules: the request host shorter and longer than the origin's (equal lengths would hide
/// length bugs).
pub fn rules() -> [UrlRule; 2] {
    [
        UrlRule::new(ORIGIN, "http", "127.0.0.1:7676"),
        UrlRule::new(
            ORIGIN,
            "https",
            "www.a-much-longer-first-party-host-name.example",
        ),
    ]
}

pub fn encode(codec: Codec, plain: &[u8]) -> Vec<u8> {
    match codec {
        Codec::Identity => plain.to_vec(),
        Codec::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(plain).unwrap();
            e.finish().unwrap()
        }
        Codec::Deflate => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(plain).unwrap();
            e.finish().unwrap()
        }
        Codec::Brotli => {
            let mut out = Vec::new();
            {
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                e.write_all(plain).unwrap();
            }
            out
        }
    }
}

pub fn decode(codec: Codec, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match codec {
        Codec::Identity => out.extend_from_slice(data),
        Codec::Gzip => {
            flate2::read::GzDecoder::new(data)
                .read_to_end(&mut out)
                .unwrap();
        }
        Codec::Deflate => {
            flate2::read::ZlibDecoder::new(data)
                .read_to_end(&mut out)
                .unwrap();
        }
        Codec::Brotli => {
            brotli::Decompressor::new(data, 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
    }
    out
}

/// Options for the two ways the HTML stage runs: the default, where the URL rule alone
/// rewrites a page until it needs lol_html's structure (up to a 2 MiB lookback, so lol_html
/// never sees most test pages), and a lookback of 0, where lol_html sees every byte. The
/// output must be the same; tests of HTML output run with both, so lol_html stays tested.
pub fn html_paths() -> [PageOptions; 2] {
    let lol_html_first = PageOptions {
        html_lookback: 0,
        ..PageOptions::default()
    };
    [PageOptions::default(), lol_html_first]
}

/// Pushes `input` split at `cuts` with the default options and returns the raw output.
pub fn run(
    codec: Codec,
    rewrite: Rewrite,
    rule: &UrlRule,
    input: &[u8],
    cuts: &[usize],
) -> Result<Vec<u8>, PipelineError> {
    let options = PageOptions::default();
    run_with(&options, codec, rewrite, rule, input, cuts).map(|(out, _)| out)
}

/// Like [`run`] with `options`, and the pipeline's report. It flushes after every piece, as the adapter does
/// when the origin pauses after each: the worst case for a compressed coding, whose every
/// flush ends a block.
pub fn run_with(
    options: &PageOptions,
    codec: Codec,
    rewrite: Rewrite,
    rule: &UrlRule,
    input: &[u8],
    cuts: &[usize],
) -> Result<(Vec<u8>, BodyReport<PageReport>), PipelineError> {
    ts_testkit::run(
        codec,
        rewrite,
        rule,
        options,
        input,
        cuts,
        Flush::EveryPiece,
    )
}
