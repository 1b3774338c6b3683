//! Content codings: negotiation, one-shot compression and a streaming
//! encoder that sync-flushes after every part.

use std::io::{self, Write};

use flate2::write::{GzEncoder, ZlibEncoder};
use flate2::Compression;

/// Brotli quality: fast enough for benchmarks, still a real compressor.
const BROTLI_QUALITY: u32 = 5;
/// Brotli window (log2 bytes).
const BROTLI_LGWIN: u32 = 22;
/// Internal buffer of the brotli writer.
const BROTLI_BUFFER: usize = 16 * 1024;

/// A `Content-Encoding` the origin can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// No content coding.
    Identity,
    /// gzip (RFC 1952).
    Gzip,
    /// zlib-wrapped deflate (RFC 1950), which is what HTTP calls `deflate`.
    Deflate,
    /// Brotli (RFC 7932).
    Br,
}

impl Encoding {
    /// Parses a coding token as used in the `encoding=` knob.
    pub fn from_token(token: &str) -> Option<Self> {
        match token.to_ascii_lowercase().as_str() {
            "identity" => Some(Encoding::Identity),
            "gzip" | "x-gzip" => Some(Encoding::Gzip),
            "deflate" => Some(Encoding::Deflate),
            "br" => Some(Encoding::Br),
            _ => None,
        }
    }

    /// Token for the `Content-Encoding` header (`None` for identity).
    pub fn header_value(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Gzip => Some("gzip"),
            Encoding::Deflate => Some("deflate"),
            Encoding::Br => Some("br"),
        }
    }
}

/// Picks a coding from an `Accept-Encoding` value: br, then gzip, then
/// deflate, skipping codings with `q=0`; `*` stands for any coding not
/// listed explicitly. Absent header or nothing acceptable gives identity.
pub fn negotiate(accept_encoding: Option<&str>) -> Encoding {
    let Some(accept) = accept_encoding else {
        return Encoding::Identity;
    };
    let mut listed: Vec<(String, bool)> = Vec::new();
    for item in accept.split(',') {
        let mut params = item.split(';');
        let coding = params.next().unwrap_or("").trim().to_ascii_lowercase();
        if coding.is_empty() {
            continue;
        }
        let mut acceptable = true;
        for param in params {
            if let Some((k, v)) = param.split_once('=') {
                if k.trim().eq_ignore_ascii_case("q") {
                    acceptable = v.trim().parse::<f32>().is_ok_and(|q| q > 0.0);
                }
            }
        }
        listed.push((coding, acceptable));
    }
    let verdict = |name: &str| listed.iter().find(|(c, _)| c == name).map(|(_, ok)| *ok);
    let wildcard = verdict("*").unwrap_or(false);
    for (name, enc) in [
        ("br", Encoding::Br),
        ("gzip", Encoding::Gzip),
        ("deflate", Encoding::Deflate),
    ] {
        let alias = if name == "gzip" {
            verdict("x-gzip")
        } else {
            None
        };
        let ok = verdict(name).or(alias).unwrap_or(wildcard);
        if ok {
            return enc;
        }
    }
    Encoding::Identity
}

/// Compresses `data` in one go.
pub fn compress(encoding: Encoding, data: &[u8]) -> Vec<u8> {
    let encoder = StreamEncoder::new(encoding);
    // Writing into a Vec cannot fail.
    encoder.finish(data).unwrap_or_default()
}

/// Incremental encoder: every [`StreamEncoder::push`] returns bytes that a
/// decoder can turn into exactly the plain input pushed so far.
pub enum StreamEncoder {
    /// Pass-through.
    Identity,
    /// gzip writer.
    Gzip(GzEncoder<Vec<u8>>),
    /// zlib writer.
    Deflate(ZlibEncoder<Vec<u8>>),
    /// brotli writer.
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
}

impl StreamEncoder {
    /// Creates an encoder for `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        match encoding {
            Encoding::Identity => StreamEncoder::Identity,
            Encoding::Gzip => {
                StreamEncoder::Gzip(GzEncoder::new(Vec::new(), Compression::default()))
            }
            Encoding::Deflate => {
                StreamEncoder::Deflate(ZlibEncoder::new(Vec::new(), Compression::default()))
            }
            Encoding::Br => StreamEncoder::Br(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                BROTLI_BUFFER,
                BROTLI_QUALITY,
                BROTLI_LGWIN,
            ))),
        }
    }

    /// Encodes `part`, sync-flushes, and returns the bytes produced.
    pub fn push(&mut self, part: &[u8]) -> io::Result<Vec<u8>> {
        match self {
            StreamEncoder::Identity => Ok(part.to_vec()),
            StreamEncoder::Gzip(e) => {
                e.write_all(part)?;
                e.flush()?;
                Ok(std::mem::take(e.get_mut()))
            }
            StreamEncoder::Deflate(e) => {
                e.write_all(part)?;
                e.flush()?;
                Ok(std::mem::take(e.get_mut()))
            }
            StreamEncoder::Br(e) => {
                e.write_all(part)?;
                e.flush()?;
                Ok(std::mem::take(e.get_mut()))
            }
        }
    }

    /// Encodes the final `part`, ends the stream and returns the remaining
    /// bytes (including any trailer).
    pub fn finish(self, part: &[u8]) -> io::Result<Vec<u8>> {
        match self {
            StreamEncoder::Identity => Ok(part.to_vec()),
            StreamEncoder::Gzip(mut e) => {
                e.write_all(part)?;
                e.finish()
            }
            StreamEncoder::Deflate(mut e) => {
                e.write_all(part)?;
                e.finish()
            }
            StreamEncoder::Br(mut e) => {
                e.write_all(part)?;
                Ok(e.into_inner())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn decode(encoding: Encoding, data: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        match encoding {
            Encoding::Identity => out.extend_from_slice(data),
            Encoding::Gzip => {
                flate2::read::GzDecoder::new(data).read_to_end(&mut out)?;
            }
            Encoding::Deflate => {
                flate2::read::ZlibDecoder::new(data).read_to_end(&mut out)?;
            }
            Encoding::Br => {
                brotli::Decompressor::new(data, 4096).read_to_end(&mut out)?;
            }
        }
        Ok(out)
    }

    #[test]
    fn negotiation_prefers_br_then_gzip_then_deflate() {
        assert_eq!(negotiate(None), Encoding::Identity);
        assert_eq!(negotiate(Some("identity")), Encoding::Identity);
        assert_eq!(negotiate(Some("gzip, deflate, br")), Encoding::Br);
        assert_eq!(negotiate(Some("deflate, gzip")), Encoding::Gzip);
        assert_eq!(negotiate(Some("deflate")), Encoding::Deflate);
        assert_eq!(negotiate(Some("br;q=0, gzip;q=0.5")), Encoding::Gzip);
        assert_eq!(negotiate(Some("*")), Encoding::Br);
        assert_eq!(negotiate(Some("*, br;q=0")), Encoding::Gzip);
        assert_eq!(negotiate(Some("zstd")), Encoding::Identity);
    }

    #[test]
    fn one_shot_round_trips() {
        let data = "héllo wörld ✓ 😀 ".repeat(500).into_bytes();
        for enc in [Encoding::Gzip, Encoding::Deflate, Encoding::Br] {
            let packed = compress(enc, &data);
            assert!(packed.len() < data.len() / 4, "{enc:?} did not compress");
            assert_eq!(decode(enc, &packed).unwrap(), data, "{enc:?}");
        }
        let zlib = compress(Encoding::Deflate, b"x");
        assert_eq!(zlib[0] & 0x0f, 8, "deflate must be zlib-wrapped");
    }

    #[test]
    fn streaming_concatenation_round_trips() {
        let parts: Vec<Vec<u8>> = (0..5)
            .map(|i| format!("<p>part {i} – ünïcödé</p>").repeat(40).into_bytes())
            .collect();
        for enc in [Encoding::Gzip, Encoding::Deflate, Encoding::Br] {
            let mut e = StreamEncoder::new(enc);
            let mut all = Vec::new();
            for p in &parts[..4] {
                let out = e.push(p).unwrap();
                assert!(!out.is_empty(), "{enc:?} flush produced nothing");
                all.extend(out);
            }
            all.extend(e.finish(&parts[4]).unwrap());
            assert_eq!(decode(enc, &all).unwrap(), parts.concat(), "{enc:?}");
        }
    }
}
