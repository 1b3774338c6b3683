//! Helpers shared by the core's integration tests: codecs written with the codec crates
//! directly (not the pipeline's own), and a pipeline driver that splits input at given points.
#![allow(dead_code)] // each test binary uses its own subset

use std::io::{Read, Write};

use trusted_server_core::{
    BodyPipeline, BodyPlan, Codec, PipelineError, PipelineOptions, PipelineReport, Rewrite, UrlRule,
};

/// The demo origin's public host, which the fixtures use in their URLs.
pub const ORIGIN: &str = "origin.demo-publisher.example";

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

pub fn rewrite_kind(content_type: &str) -> Rewrite {
    match BodyPlan::decide(
        200,
        Some(content_type),
        None,
        PipelineOptions::default().nextjs.enabled,
    ) {
        BodyPlan::Rewrite { rewrite, .. } => rewrite,
        other => panic!("{content_type} is not rewritten: {other:?}"),
    }
}

/// Pushes `input` split at `cuts` and returns the raw output.
pub fn run(
    codec: Codec,
    rewrite: Rewrite,
    rule: &UrlRule,
    input: &[u8],
    cuts: &[usize],
) -> Result<Vec<u8>, PipelineError> {
    run_reported(codec, rewrite, rule, input, cuts).map(|(out, _)| out)
}

/// Like [`run`], with the pipeline's report.
pub fn run_reported(
    codec: Codec,
    rewrite: Rewrite,
    rule: &UrlRule,
    input: &[u8],
    cuts: &[usize],
) -> Result<(Vec<u8>, PipelineReport), PipelineError> {
    let mut p = BodyPipeline::new(
        codec,
        rewrite,
        rule.clone(),
        &PipelineOptions::default(),
        Vec::new(),
    );
    let mut last = 0;
    for &cut in cuts {
        p.push(&input[last..cut])?;
        // As the adapter does when the origin pauses after each piece: the worst case for a
        // compressed coding, whose every flush ends a block.
        p.flush()?;
        last = cut;
    }
    p.push(&input[last..])?;
    p.finish()
}
