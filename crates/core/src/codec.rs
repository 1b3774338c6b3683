//! Streaming decode and re-encode of `Content-Encoding` bodies (gzip, deflate, br).
//!
//! The rewriter needs plain bytes, and the client asked for the origin's encoding, so the body is
//! decoded, rewritten and encoded again with the same codec, chunk by chunk. A flush of the
//! encoder (a sync flush for zlib formats, a brotli flush) makes everything written so far
//! decodable by the client, which is what lets compressed output stream.

use std::io::{self, Write};

use brotli::enc::BrotliEncoderParams;
use flate2::Compression;

/// A `Content-Encoding` the pipeline can decode and re-encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// No content coding (absent or `identity`).
    Identity,
    /// `gzip` (RFC 1952).
    Gzip,
    /// `deflate`: zlib-wrapped (RFC 1950) as the spec says; raw deflate, which some servers send
    /// instead, is detected on the first bytes.
    Deflate,
    /// `br` (RFC 7932).
    Brotli,
}

impl Codec {
    /// Parses a `Content-Encoding` header value. `None` for anything the pipeline cannot decode
    /// (zstd, compress, stacked codings): such bodies pass through untouched, since guessing
    /// would turn them into garbage.
    pub fn from_header(value: Option<&str>) -> Option<Codec> {
        let Some(value) = value else {
            return Some(Codec::Identity);
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Some(Codec::Identity),
            "gzip" | "x-gzip" => Some(Codec::Gzip),
            "deflate" => Some(Codec::Deflate),
            "br" => Some(Codec::Brotli),
            _ => None,
        }
    }

    /// The codings the pipeline can handle, for filtering the client's `Accept-Encoding`.
    pub const SUPPORTED_TOKENS: [&'static str; 3] = ["gzip", "deflate", "br"];
}

/// Output of a codec stage: a `Vec` the stage appends to and the caller drains.
type Buf = Vec<u8>;

/// Error decoding the origin body: it is corrupt, truncated, or not in the declared coding.
#[derive(Debug)]
pub struct DecodeError(pub io::Error);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "origin body does not decode: {}", self.0)
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

enum DecoderState {
    Identity,
    /// Deflate before its first two bytes arrive (needed to tell zlib from raw deflate).
    DeflateSniff(Vec<u8>),
    Gzip(Box<flate2::write::GzDecoder<Buf>>),
    /// zlib-wrapped or raw deflate, driven through flate2's low-level API so the end of the
    /// stream is observed exactly (`Status::StreamEnd`).
    Inflate(Box<Inflate>),
    Brotli(Box<brotli::DecompressorWriter<Buf>>),
}

/// Streaming decoder. Decoded bytes accumulate in an internal buffer read by
/// [`Decoder::output`] and cleared by [`Decoder::clear_output`].
pub struct Decoder {
    state: DecoderState,
    /// Identity output (the other states own their buffer inside the codec writer).
    plain: Buf,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").finish_non_exhaustive()
    }
}

impl Decoder {
    /// A decoder for `codec`.
    pub fn new(codec: Codec) -> Self {
        let state = match codec {
            Codec::Identity => DecoderState::Identity,
            Codec::Gzip => DecoderState::Gzip(Box::new(flate2::write::GzDecoder::new(Buf::new()))),
            Codec::Deflate => DecoderState::DeflateSniff(Vec::with_capacity(2)),
            Codec::Brotli => {
                DecoderState::Brotli(Box::new(brotli::DecompressorWriter::new(Buf::new(), 4096)))
            }
        };
        Decoder {
            state,
            plain: Buf::new(),
        }
    }

    /// Whether this decoder copies its input unchanged (callers may then skip it).
    pub fn is_identity(&self) -> bool {
        matches!(self.state, DecoderState::Identity)
    }

    /// Feeds encoded bytes.
    ///
    /// # Errors
    /// [`DecodeError`] when the bytes are not valid for the codec.
    pub fn write(&mut self, input: &[u8]) -> Result<(), DecodeError> {
        let result = match &mut self.state {
            DecoderState::Identity => {
                self.plain.extend_from_slice(input);
                Ok(())
            }
            DecoderState::DeflateSniff(head) => {
                head.extend_from_slice(input);
                if head.len() < 2 {
                    return Ok(());
                }
                let head = std::mem::take(head);
                self.state =
                    DecoderState::Inflate(Box::new(Inflate::new(is_zlib_header(head[0], head[1]))));
                return self.write(&head);
            }
            // flate2's writers keep decoded bytes internally until flushed.
            DecoderState::Gzip(d) => d.write_all(input).and_then(|()| d.flush()),
            DecoderState::Inflate(d) => d.write(input),
            DecoderState::Brotli(d) => d.write_all(input),
        };
        result.map_err(DecodeError)
    }

    /// Decoded bytes produced so far and not yet cleared.
    pub fn output(&self) -> &[u8] {
        match &self.state {
            DecoderState::Identity | DecoderState::DeflateSniff(_) => &self.plain,
            DecoderState::Gzip(d) => d.get_ref(),
            DecoderState::Inflate(d) => &d.out,
            DecoderState::Brotli(d) => d.get_ref(),
        }
    }

    /// Forgets the bytes returned by [`Decoder::output`].
    pub fn clear_output(&mut self) {
        match &mut self.state {
            DecoderState::Identity | DecoderState::DeflateSniff(_) => self.plain.clear(),
            DecoderState::Gzip(d) => d.get_mut().clear(),
            DecoderState::Inflate(d) => d.out.clear(),
            DecoderState::Brotli(d) => d.get_mut().clear(),
        }
    }

    /// Ends the input. Any remaining decoded bytes are left in [`Decoder::output`].
    ///
    /// # Errors
    /// [`DecodeError`] when the stream is truncated: a body that stops before its codec's end
    /// marker must not be presented as complete.
    pub fn finish(&mut self) -> Result<(), DecodeError> {
        let truncated = || {
            DecodeError(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "compressed stream ended before its end marker",
            ))
        };
        match &mut self.state {
            DecoderState::Identity => Ok(()),
            DecoderState::DeflateSniff(head) => {
                if head.is_empty() {
                    Ok(())
                } else {
                    Err(truncated())
                }
            }
            DecoderState::Gzip(d) => {
                d.try_finish().map_err(DecodeError)?;
                // flate2 accepts a gzip stream cut before its trailer; insist on the trailer.
                if !gz_complete(d) {
                    return Err(truncated());
                }
                Ok(())
            }
            DecoderState::Inflate(d) => d.done.then_some(()).ok_or_else(truncated),
            DecoderState::Brotli(d) => d.close().map_err(DecodeError),
        }
    }
}

fn is_zlib_header(cmf: u8, flg: u8) -> bool {
    cmf & 0x0f == 8 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
}

/// Whether the gzip stream reached its end. A further write to a finished flate2 decoder
/// consumes nothing, which is how completion is observed without private state.
fn gz_complete(d: &mut flate2::write::GzDecoder<Buf>) -> bool {
    matches!(d.write(&[0]), Ok(0))
}

/// A deflate decoder that knows when its stream ended.
struct Inflate {
    state: flate2::Decompress,
    out: Buf,
    /// Input the decompressor could not take yet (a few bytes of a split trailer or block
    /// header); fed again, first, with the next write.
    pending: Vec<u8>,
    done: bool,
}

impl Inflate {
    fn new(zlib_header: bool) -> Self {
        Inflate {
            state: flate2::Decompress::new(zlib_header),
            out: Buf::new(),
            pending: Vec::new(),
            done: false,
        }
    }

    fn write(&mut self, input: &[u8]) -> io::Result<()> {
        if self.pending.is_empty() {
            return self.feed(input);
        }
        let mut all = std::mem::take(&mut self.pending);
        all.extend_from_slice(input);
        self.feed(&all)
    }

    fn feed(&mut self, mut input: &[u8]) -> io::Result<()> {
        loop {
            if self.done {
                if input.is_empty() {
                    return Ok(());
                }
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes after the end of the deflate stream",
                ));
            }
            // `decompress_vec` only fills spare capacity.
            self.out.reserve(32 * 1024);
            let before = self.state.total_in();
            let produced_before = self.out.len();
            let status = self
                .state
                .decompress_vec(input, &mut self.out, flate2::FlushDecompress::None)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            let consumed = usize::try_from(self.state.total_in() - before).unwrap_or(input.len());
            input = &input[consumed..];
            if status == flate2::Status::StreamEnd {
                self.done = true;
                continue;
            }
            let produced = self.out.len() - produced_before;
            if self.out.len() == self.out.capacity() || (produced > 0 && consumed == 0) {
                // Output space, not input, limited this step: more may be waiting inside.
                continue;
            }
            if input.is_empty() {
                return Ok(());
            }
            if consumed == 0 {
                // Too few bytes to make progress (a split block header or trailer).
                self.pending.extend_from_slice(input);
                return Ok(());
            }
        }
    }
}

enum EncoderState {
    Identity(Buf),
    Gzip(flate2::write::GzEncoder<Buf>),
    Zlib(flate2::write::ZlibEncoder<Buf>),
    Brotli(Box<brotli::CompressorWriter<Buf>>),
}

/// Streaming encoder; the counterpart of [`Decoder`], with the same buffer protocol.
pub struct Encoder {
    state: EncoderState,
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
        Encoder { state }
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
            EncoderState::Brotli(e) => {
                // brotli finishes its stream when the writer is closed; `into_inner` needs
                // ownership, so swap in an empty encoder.
                let done = std::mem::replace(
                    e,
                    Box::new(brotli::CompressorWriter::new(Buf::new(), 0, 0, 0)),
                );
                let out = done.into_inner();
                self.state = EncoderState::Identity(out);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const TEXT: &[u8] = "<p>Grüße, héllo ✓ 😀 https://origin.example.com/</p>\n".as_bytes();

    fn compress(codec: Codec, plain: &[u8]) -> Vec<u8> {
        let mut e = Encoder::new(codec);
        e.write(plain).unwrap();
        e.finish().unwrap();
        e.output().to_vec()
    }

    fn decode_all(codec: Codec, encoded: &[u8], chunk: usize) -> Result<Vec<u8>, DecodeError> {
        let mut d = Decoder::new(codec);
        let mut out = Vec::new();
        for piece in encoded.chunks(chunk.max(1)) {
            d.write(piece)?;
            out.extend_from_slice(d.output());
            d.clear_output();
        }
        d.finish()?;
        out.extend_from_slice(d.output());
        Ok(out)
    }

    fn body() -> Vec<u8> {
        TEXT.repeat(200)
    }

    #[test]
    fn round_trips_through_every_codec_and_chunk_size() {
        for codec in [Codec::Identity, Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let encoded = compress(codec, &body());
            for chunk in [1, 2, 7, 64, 8192, usize::MAX] {
                let chunk = chunk.min(encoded.len().max(1));
                assert_eq!(
                    decode_all(codec, &encoded, chunk).unwrap(),
                    body(),
                    "{codec:?} {chunk}"
                );
            }
        }
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
    fn every_two_way_split_decodes_completely() {
        // Larger than the decoder's 32 KiB output step, so one write must produce several.
        let plain = TEXT.repeat(1200);
        for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let encoded = compress(codec, &plain);
            for cut in 0..=encoded.len() {
                let mut d = Decoder::new(codec);
                let mut out = Vec::new();
                for part in [&encoded[..cut], &encoded[cut..]] {
                    d.write(part).unwrap();
                    out.extend_from_slice(d.output());
                    // Clearing matters: the decoder must not depend on its output buffer's
                    // capacity to hold everything a write produces.
                    d.clear_output();
                }
                d.finish()
                    .unwrap_or_else(|e| panic!("{codec:?} cut at {cut}: {e}"));
                out.extend_from_slice(d.output());
                assert!(out == plain, "{codec:?} cut at {cut}");
            }
        }
    }

    #[test]
    fn raw_deflate_is_accepted_for_deflate() {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Compression::default());
        e.write_all(&body()).unwrap();
        let raw = e.finish().unwrap();
        assert_eq!(decode_all(Codec::Deflate, &raw, 5).unwrap(), body());
    }

    #[test]
    fn truncated_streams_are_errors_not_short_bodies() {
        for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let encoded = compress(codec, &body());
            for cut in [1, encoded.len() / 2, encoded.len() - 1] {
                let result = decode_all(codec, &encoded[..cut], 3);
                assert!(
                    result.is_err(),
                    "{codec:?} truncated at {cut} of {} decoded",
                    encoded.len()
                );
            }
        }
    }

    #[test]
    fn plain_bytes_declared_as_compressed_are_errors() {
        for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            assert!(decode_all(codec, &body(), 1000).is_err(), "{codec:?}");
        }
    }

    #[test]
    fn flushed_output_is_decodable_before_the_end() {
        for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let mut e = Encoder::new(codec);
            e.write(TEXT).unwrap();
            e.flush().unwrap();
            let partial = e.output().to_vec();
            let mut d = Decoder::new(codec);
            d.write(&partial).unwrap();
            assert_eq!(d.output(), TEXT, "{codec:?}");
        }
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
