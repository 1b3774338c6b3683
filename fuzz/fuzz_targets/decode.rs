//! Compressed bodies (gzip, deflate as zlib or raw, br) through the whole pipeline.
//!
//! * A valid encoding of text `T` (made here with flate2 / brotli, with sync flushes and gzip
//!   members at fuzzer-chosen points) gives output that decodes to exactly what the identity
//!   pipeline makes of `T` (for a plain-text body: the URL rule on `T`), whatever the cuts.
//! * Arbitrary bytes labelled with a coding never panic and give an origin error (never an
//!   internal or client one) or output; cutting them into chunks does not change which, nor
//!   what the output decodes to.
#![no_main]

use std::io::{Read, Write};

use libfuzzer_sys::fuzz_target;
use trusted_server_core::{Codec, PipelineError, PageOptions, Rewrite, UrlRule};
use trusted_server_fuzz::{cut_points, options, rewrite_for, run, show, split_input};
use trusted_server_fuzz::{utf16_bom, ORIGIN, TARGETS};

/// The codings to try; raw deflate is also labelled `deflate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Gzip,
    Zlib,
    RawDeflate,
    Brotli,
}

impl Coding {
    fn codec(self) -> Codec {
        match self {
            Coding::Gzip => Codec::Gzip,
            Coding::Zlib | Coding::RawDeflate => Codec::Deflate,
            Coding::Brotli => Codec::Brotli,
        }
    }
}

/// `plain` encoded, flushed at each of `flushes`; with `members`, gzip starts a new member
/// at the first flush point instead.
fn encode(coding: Coding, plain: &[u8], flushes: &[usize], members: bool) -> Vec<u8> {
    fn feed<W: Write>(w: &mut W, plain: &[u8], flushes: &[usize]) {
        let mut last = 0;
        for &at in flushes {
            w.write_all(&plain[last..at]).unwrap();
            w.flush().unwrap();
            last = at;
        }
        w.write_all(&plain[last..]).unwrap();
    }
    let level = flate2::Compression::new(6);
    match coding {
        Coding::Gzip if members && !flushes.is_empty() => {
            let (a, b) = plain.split_at(flushes[0]);
            let mut out = encode(Coding::Gzip, a, &[], false);
            out.extend(encode(Coding::Gzip, b, &[], false));
            out
        }
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
            feed(&mut e, plain, flushes);
            e.finish().unwrap()
        }
        Coding::Zlib => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
            feed(&mut e, plain, flushes);
            e.finish().unwrap()
        }
        Coding::RawDeflate => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), level);
            feed(&mut e, plain, flushes);
            e.finish().unwrap()
        }
        Coding::Brotli => {
            let mut out = Vec::new();
            {
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                feed(&mut e, plain, flushes);
            }
            out
        }
    }
}

/// The pipeline's output decoded by the codec crates directly; it must be one complete
/// stream with nothing after it.
fn decode_output(codec: Codec, encoded: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    if encoded.is_empty() {
        return plain;
    }
    match codec {
        Codec::Identity => plain.extend_from_slice(encoded),
        Codec::Gzip => {
            let mut d = flate2::bufread::GzDecoder::new(encoded);
            d.read_to_end(&mut plain).expect("the output is gzip");
            assert!(d.into_inner().is_empty(), "bytes after the gzip member");
        }
        Codec::Deflate => {
            let mut d = flate2::bufread::ZlibDecoder::new(encoded);
            d.read_to_end(&mut plain).expect("the output is zlib");
            assert!(d.into_inner().is_empty(), "bytes after the zlib stream");
        }
        Codec::Brotli => {
            brotli::Decompressor::new(encoded, 4096)
                .read_to_end(&mut plain)
                .expect("the output is br");
        }
    }
    plain
}

const REWRITES: [&str; 3] = ["text/css", "text/html; charset=utf-8", "text/x-component"];

fn check_error(e: &PipelineError, what: &str) {
    assert!(
        matches!(e, PipelineError::Origin(_)),
        "{what}: not an origin error: {e:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let input = split_input(data);
    let c = input.config;
    let coding = [
        Coding::Gzip,
        Coding::Zlib,
        Coding::RawDeflate,
        Coding::Brotli,
    ][usize::from(c >> 2) & 3];
    let codec = coding.codec();
    let rewrite: Rewrite = rewrite_for(REWRITES[usize::from((c >> 5) & 3) % REWRITES.len()]);
    let (scheme, target) = TARGETS[usize::from(c >> 4) & 1];
    let rule = UrlRule::new(ORIGIN, scheme, target);
    let opts: PageOptions = options(c);
    let garbage = c & 0x80 != 0;

    if garbage {
        let body = input.body;
        let whole = run(codec, rewrite, &rule, &opts, body, &[]);
        let split = run(codec, rewrite, &rule, &opts, body, &input.cuts);
        match (whole, split) {
            (Ok((a, _)), Ok((b, _))) => {
                let (a, b) = (decode_output(codec, &a), decode_output(codec, &b));
                assert!(a == b, "cut at {:?}, the output differs", input.cuts);
            }
            (Err(a), Err(b)) => {
                check_error(&a, "whole");
                check_error(&b, "split");
            }
            (a, b) => panic!(
                "cut at {:?}, one run failed and the other did not: whole {:?}, split {:?}",
                input.cuts,
                a.map(|(o, _)| o.len()),
                b.map(|(o, _)| o.len())
            ),
        }
        return;
    }

    let plain = input.body;
    let half = input.raw_cuts.len() / 2;
    let flushes = cut_points(&input.raw_cuts[..half], plain.len());
    let encoded = encode(coding, plain, &flushes, input.raw_cuts.len() % 2 == 1);
    let cuts = if input.bytewise {
        (1..encoded.len().min(4096)).collect()
    } else {
        cut_points(&input.raw_cuts[half..], encoded.len())
    };
    let (expected, _) = run(Codec::Identity, rewrite, &rule, &opts, plain, &[])
        .unwrap_or_else(|e| panic!("identity body gave an error: {e}"));
    // A body that starts with a UTF-16 byte order mark passes through untouched.
    let utf16 = utf16_bom(plain);
    if rewrite == Rewrite::Text {
        let want = if utf16 {
            plain.to_vec()
        } else {
            rule.rewrite_all(plain)
        };
        assert!(expected == want, "text is not the URL rule");
    }
    let (out, _) = run(codec, rewrite, &rule, &opts, &encoded, &cuts)
        .unwrap_or_else(|e| panic!("{coding:?} of {} cut at {cuts:?}: {e}", show(plain)));
    let got = decode_output(codec, &out);
    assert!(
        got == expected,
        "{coding:?}, cut at {cuts:?}:\nplain    {}\ngot      {}\nexpected {}",
        show(plain),
        show(&got),
        show(&expected)
    );
});
