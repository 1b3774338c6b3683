//! Streaming decode and re-encode of `Content-Encoding` bodies (gzip, deflate, br).
//!
//! The rewriter needs plain bytes, and the client asked for the origin's encoding, so the body is
//! decoded, rewritten and encoded again with the same codec, chunk by chunk. A flush of the
//! encoder (a sync flush for zlib formats, a brotli flush) makes everything written so far
//! decodable by the client, which is what lets compressed output stream.

use std::io::{self, Write};

use brotli::enc::BrotliEncoderParams;
use flate2::Compression;

use crate::content::Codec;

/// Output of a codec stage: a `Vec` the stage appends to and the caller drains.
type Buf = Vec<u8>;

enum EncoderState {
    Identity(Buf),
    Gzip(flate2::write::GzEncoder<Buf>),
    Zlib(flate2::write::ZlibEncoder<Buf>),
    Brotli(Box<brotli::CompressorWriter<Buf>>),
}

/// Streaming encoder; the counterpart of [`Decoder`](super::decode::Decoder), with the same
/// buffer protocol.
pub struct Encoder {
    state: EncoderState,
    /// Plain bytes written since the last flush.
    unflushed: usize,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder").finish_non_exhaustive()
    }
}

/// Compression level for re-encoding. Level 6 (gzip) and quality 5 (brotli) keep the CPU cost
/// per byte close to the rewriter's while staying within a few percent of origin sizes.
const GZIP_LEVEL: u32 = 6;
const BROTLI_QUALITY: i32 = 5;

impl Encoder {
    /// An encoder for `codec`. Raw deflate input is re-encoded as zlib, the form the
    /// `deflate` coding is specified to carry.
    pub fn new(codec: Codec) -> Self {
        let state = match codec {
            // Room is made at the first write, by its size (`super::room`): the pipeline
            // writes into it directly ([`Encoder::identity_output`]).
            Codec::Identity => EncoderState::Identity(Buf::new()),
            Codec::Gzip => EncoderState::Gzip(flate2::write::GzEncoder::new(
                Buf::new(),
                Compression::new(GZIP_LEVEL),
            )),
            Codec::Deflate => EncoderState::Zlib(flate2::write::ZlibEncoder::new(
                Buf::new(),
                Compression::new(GZIP_LEVEL),
            )),
            Codec::Brotli => {
                let params = BrotliEncoderParams {
                    quality: BROTLI_QUALITY,
                    lgwin: 22,
                    ..BrotliEncoderParams::default()
                };
                EncoderState::Brotli(Box::new(brotli::CompressorWriter::with_params(
                    Buf::new(),
                    4096,
                    &params,
                )))
            }
        };
        Encoder {
            state,
            unflushed: 0,
        }
    }

    /// Plain bytes written since the last [`Encoder::flush`]: what a flush would make
    /// decodable.
    pub fn unflushed(&self) -> usize {
        self.unflushed
    }

    /// For the identity coding, the output buffer itself, so a caller can write plain bytes
    /// straight into it instead of through [`Encoder::write`] (one copy fewer).
    pub fn identity_output(&mut self) -> Option<&mut Vec<u8>> {
        match &mut self.state {
            EncoderState::Identity(b) => Some(b),
            _ => None,
        }
    }

    /// Feeds plain bytes.
    ///
    /// # Errors
    /// Only on internal codec failure (writing into a `Vec` cannot fail otherwise).
    pub fn write(&mut self, input: &[u8]) -> io::Result<()> {
        self.unflushed += input.len();
        match &mut self.state {
            EncoderState::Identity(b) => {
                b.extend_from_slice(input);
                Ok(())
            }
            EncoderState::Gzip(e) => e.write_all(input),
            EncoderState::Zlib(e) => e.write_all(input),
            EncoderState::Brotli(e) => e.write_all(input),
        }
    }

    /// Makes everything written so far decodable from [`Encoder::output`].
    ///
    /// # Errors
    /// Only on internal codec failure.
    pub fn flush(&mut self) -> io::Result<()> {
        self.unflushed = 0;
        match &mut self.state {
            EncoderState::Identity(_) => Ok(()),
            EncoderState::Gzip(e) => e.flush(),
            EncoderState::Zlib(e) => e.flush(),
            EncoderState::Brotli(e) => e.flush(),
        }
    }

    /// Ends the stream, writing the codec's trailer into [`Encoder::output`].
    ///
    /// # Errors
    /// Only on internal codec failure.
    pub fn finish(&mut self) -> io::Result<()> {
        match &mut self.state {
            EncoderState::Identity(_) => Ok(()),
            EncoderState::Gzip(e) => e.try_finish(),
            EncoderState::Zlib(e) => e.try_finish(),
            EncoderState::Brotli(_) => {
                // brotli writes its end marker when the writer is consumed; what remains is
                // plain output, held like identity output.
                let EncoderState::Brotli(done) =
                    std::mem::replace(&mut self.state, EncoderState::Identity(Buf::new()))
                else {
                    unreachable!("matched above");
                };
                self.state = EncoderState::Identity(done.into_inner());
                Ok(())
            }
        }
    }

    /// Encoded bytes produced so far and not yet cleared.
    pub fn output(&self) -> &[u8] {
        match &self.state {
            EncoderState::Identity(b) => b,
            EncoderState::Gzip(e) => e.get_ref(),
            EncoderState::Zlib(e) => e.get_ref(),
            EncoderState::Brotli(e) => e.get_ref(),
        }
    }

    /// Forgets the bytes returned by [`Encoder::output`].
    pub fn clear_output(&mut self) {
        match &mut self.state {
            EncoderState::Identity(b) => b.clear(),
            EncoderState::Gzip(e) => e.get_mut().clear(),
            EncoderState::Zlib(e) => e.get_mut().clear(),
            EncoderState::Brotli(e) => e.get_mut().clear(),
        }
    }
}

/// Test helper: `plain` encoded in one go.
#[cfg(test)]
pub(crate) fn compress(codec: Codec, plain: &[u8]) -> Vec<u8> {
    let mut e = Encoder::new(codec);
    e.write(plain).expect("in-memory encoding");
    e.finish().expect("in-memory encoding");
    e.output().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const TEXT: &[u8] = "Grüße, héllo ✓ 😀 https://example.com/ and more text\n".as_bytes();

    fn body() -> Vec<u8> {
        TEXT.repeat(200)
    }

    #[test]
    fn our_encodings_are_read_by_independent_decoders() {
        let gz = compress(Codec::Gzip, &body());
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body());
        let zl = compress(Codec::Deflate, &body());
        out.clear();
        flate2::read::ZlibDecoder::new(&zl[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body());
        let br = compress(Codec::Brotli, &body());
        out.clear();
        brotli::Decompressor::new(&br[..], 4096)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body());
    }

    #[test]
    fn unknown_codings_are_not_guessed() {
        assert_eq!(Codec::from_header(None), Some(Codec::Identity));
        assert_eq!(Codec::from_header(Some("GZIP")), Some(Codec::Gzip));
        assert_eq!(Codec::from_header(Some("br")), Some(Codec::Brotli));
        assert_eq!(Codec::from_header(Some("zstd")), None);
        assert_eq!(Codec::from_header(Some("gzip, br")), None);
    }
}
