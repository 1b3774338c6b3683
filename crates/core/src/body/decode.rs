//! Push-based decoding of `Content-Encoding` bodies.
//!
//! A [`Decoder`] wraps the writer that takes the decoded bytes (the rest of the pipeline) and
//! hands them on in pieces of at most a few tens of KiB as they are produced. Nothing collects
//! a whole chunk's output: a body that expands a thousandfold (a "decompression bomb", or just
//! a very repetitive page) costs no more memory than any other, and the rewriter downstream
//! sees the same small writes whatever the compression ratio.

use std::io::{self, Write};

use crate::content::Codec;

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

/// Largest piece of decoded output handed on at once by the deflate decoder.
const OUT_STEP: usize = 32 * 1024;

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "compressed stream ended before its end marker",
    )
}

enum State<D: Write> {
    Identity(D),
    /// A compressed coding before its first byte: an empty body is an empty body in any
    /// coding, and needs no decoder at all.
    Waiting {
        codec: Codec,
        inner: D,
    },
    /// `deflate` before its first two bytes: they tell zlib from raw deflate.
    DeflateSniff {
        head: Vec<u8>,
        inner: D,
    },
    /// gzip; several members in a row are one body (RFC 1952 §2.2).
    Gzip(GzipMembers<D>),
    Inflate(Box<Inflate<D>>),
    Brotli(Box<brotli::DecompressorWriter<D>>),
    /// Only while switching states.
    Switching,
}

/// A streaming decoder writing into `D`.
///
/// Errors from `write` and `finish` are `io::Error`s: either the body's (invalid data,
/// truncation) or `D`'s own, passed through. The caller tells them apart (the pipeline parks
/// its typed error inside `D` before failing the write).
pub struct Decoder<D: Write> {
    state: State<D>,
}

impl<D: Write> std::fmt::Debug for Decoder<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").finish_non_exhaustive()
    }
}

impl<D: Write> Decoder<D> {
    /// A decoder for `codec` writing decoded bytes into `inner`.
    pub fn new(codec: Codec, inner: D) -> Self {
        let state = match codec {
            Codec::Identity => State::Identity(inner),
            codec => State::Waiting { codec, inner },
        };
        Decoder { state }
    }

    /// Leaves `Waiting` for the codec's own state, at the first body byte.
    fn start(&mut self) {
        if !matches!(self.state, State::Waiting { .. }) {
            return;
        }
        let State::Waiting { codec, inner } = std::mem::replace(&mut self.state, State::Switching)
        else {
            unreachable!("matched above");
        };
        self.state = match codec {
            Codec::Identity => State::Identity(inner),
            Codec::Gzip => State::Gzip(GzipMembers::InMember(Box::new(
                flate2::write::GzDecoder::new(inner),
            ))),
            Codec::Deflate => State::DeflateSniff {
                head: Vec::with_capacity(2),
                inner,
            },
            Codec::Brotli => State::Brotli(Box::new(brotli::DecompressorWriter::new(inner, 4096))),
        };
    }

    /// The writer decoded bytes go to.
    pub fn inner_mut(&mut self) -> &mut D {
        match &mut self.state {
            State::Identity(d)
            | State::Waiting { inner: d, .. }
            | State::DeflateSniff { inner: d, .. } => d,
            State::Gzip(d) => d.inner_mut(),
            State::Inflate(d) => &mut d.inner,
            State::Brotli(d) => d.get_mut(),
            State::Switching => unreachable!("a decoder is never observed while switching"),
        }
    }

    /// Decodes `input`, writing everything it yields into the inner writer before returning.
    ///
    /// # Errors
    /// Invalid data, or the inner writer's error.
    pub fn write(&mut self, input: &[u8]) -> io::Result<()> {
        if input.is_empty() {
            return Ok(());
        }
        self.start();
        match &mut self.state {
            State::Identity(d) => d.write_all(input),
            State::Waiting { .. } => unreachable!("started above"),
            State::DeflateSniff { head, .. } => {
                head.extend_from_slice(input);
                if head.len() < 2 {
                    return Ok(());
                }
                let State::DeflateSniff { head, inner } =
                    std::mem::replace(&mut self.state, State::Switching)
                else {
                    unreachable!("matched above");
                };
                let zlib = is_zlib_header(head[0], head[1]);
                self.state = State::Inflate(Box::new(Inflate::new(zlib, inner)));
                self.write(&head)
            }
            State::Gzip(d) => d.write(input),
            State::Inflate(d) => d.write(input),
            State::Brotli(d) => d.write_all(input),
            State::Switching => unreachable!("a decoder is never observed while switching"),
        }
    }

    /// Bytes after the end of a complete gzip or deflate stream that were not another gzip
    /// member, and were ignored as browsers ignore them.
    pub fn ignored_trailing(&self) -> u64 {
        match &self.state {
            State::Gzip(GzipMembers::Ignoring { bytes, .. }) => *bytes,
            State::Inflate(d) => d.ignored,
            _ => 0,
        }
    }

    /// Ends the input and returns the inner writer.
    ///
    /// # Errors
    /// A truncated stream (a body that stops before its codec's end marker must not be
    /// presented as complete), or the inner writer's error.
    pub fn finish(self) -> io::Result<D> {
        match self.state {
            State::Identity(d) | State::Waiting { inner: d, .. } => Ok(d),
            State::DeflateSniff { head, inner } => {
                if head.is_empty() {
                    Ok(inner)
                } else {
                    Err(truncated())
                }
            }
            State::Gzip(d) => d.finish(),
            State::Inflate(d) => {
                if d.done {
                    Ok(d.inner)
                } else {
                    Err(truncated())
                }
            }
            State::Brotli(mut d) => {
                d.close()?;
                d.into_inner().map_err(|_| truncated())
            }
            State::Switching => unreachable!("a decoder is never observed while switching"),
        }
    }
}

/// gzip, member after member. Several members are one body (RFC 1952 §2.2). Bytes after a
/// complete member that do not start another one (zero padding, garbage) are ignored, as
/// browsers ignore them: Chromium stops reading at the end of the first member. A later member
/// that starts (`1f 8b`) but does not finish is a truncation, like a truncated first one.
enum GzipMembers<D: Write> {
    /// Inside a member (from its first header byte on).
    InMember(Box<flate2::write::GzDecoder<D>>),
    /// After a complete member; `magic` when a lone `1f` has arrived.
    Between { inner: D, magic: bool },
    /// After a complete member and bytes that do not start another.
    Ignoring { inner: D, bytes: u64 },
    /// Only while switching states.
    Switching,
}

/// The gzip magic number that starts every member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

impl<D: Write> GzipMembers<D> {
    fn inner_mut(&mut self) -> &mut D {
        match self {
            GzipMembers::InMember(d) => d.get_mut(),
            GzipMembers::Between { inner, .. } | GzipMembers::Ignoring { inner, .. } => inner,
            GzipMembers::Switching => unreachable!("never observed while switching"),
        }
    }

    fn write(&mut self, mut input: &[u8]) -> io::Result<()> {
        while !input.is_empty() {
            match self {
                GzipMembers::InMember(d) => match d.write(input)? {
                    // The member, its CRC and its length are complete.
                    0 => {
                        // Check the trailer while the state is still whole: an error here
                        // must not leave `Switching` behind for the caller to trip on.
                        d.try_finish()?;
                        let GzipMembers::InMember(d) =
                            std::mem::replace(self, GzipMembers::Switching)
                        else {
                            unreachable!("matched above");
                        };
                        let inner = d.finish()?;
                        *self = GzipMembers::Between {
                            inner,
                            magic: false,
                        };
                    }
                    n => input = &input[n..],
                },
                GzipMembers::Between { magic, .. } => {
                    let starts_member = if *magic {
                        input[0] == GZIP_MAGIC[1]
                    } else if input == [GZIP_MAGIC[0]] {
                        *magic = true;
                        return Ok(());
                    } else {
                        input.starts_with(&GZIP_MAGIC)
                    };
                    let had_magic = *magic;
                    let GzipMembers::Between { inner, .. } =
                        std::mem::replace(self, GzipMembers::Switching)
                    else {
                        unreachable!("matched above");
                    };
                    if !starts_member {
                        let bytes = input.len() as u64 + u64::from(had_magic);
                        *self = GzipMembers::Ignoring { inner, bytes };
                        return Ok(());
                    }
                    let mut d = Box::new(flate2::write::GzDecoder::new(inner));
                    if had_magic {
                        d.write_all(&GZIP_MAGIC[..1])?;
                    }
                    *self = GzipMembers::InMember(d);
                }
                GzipMembers::Ignoring { bytes, .. } => {
                    *bytes += input.len() as u64;
                    return Ok(());
                }
                GzipMembers::Switching => unreachable!("never observed while switching"),
            }
        }
        // flate2's writers keep decoded bytes until the next write or a flush.
        match self {
            GzipMembers::InMember(d) => d.flush(),
            _ => Ok(()),
        }
    }

    fn finish(self) -> io::Result<D> {
        match self {
            GzipMembers::InMember(d) => d.finish(),
            GzipMembers::Between { inner, magic } => {
                if magic {
                    // A lone `1f`: the start of a member that never came.
                    Err(truncated())
                } else {
                    Ok(inner)
                }
            }
            GzipMembers::Ignoring { inner, .. } => Ok(inner),
            GzipMembers::Switching => unreachable!("never observed while switching"),
        }
    }
}

fn is_zlib_header(cmf: u8, flg: u8) -> bool {
    cmf & 0x0f == 8 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
}

/// zlib-wrapped or raw deflate, driven through flate2's low-level API so that the end of the
/// stream is observed exactly and output is handed on in bounded steps.
struct Inflate<D: Write> {
    state: flate2::Decompress,
    inner: D,
    out: Vec<u8>,
    /// Input the decompressor could not take yet (a split block header or trailer).
    pending: Vec<u8>,
    done: bool,
    /// Bytes after the end of the stream, ignored (as after a gzip member).
    ignored: u64,
}

impl<D: Write> Inflate<D> {
    fn new(zlib_header: bool, inner: D) -> Self {
        Inflate {
            state: flate2::Decompress::new(zlib_header),
            inner,
            out: Vec::with_capacity(OUT_STEP),
            pending: Vec::new(),
            done: false,
            ignored: 0,
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
                self.ignored += input.len() as u64;
                return Ok(());
            }
            self.out.clear();
            let before = self.state.total_in();
            let status = self
                .state
                .decompress_vec(input, &mut self.out, flate2::FlushDecompress::None)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            let consumed = usize::try_from(self.state.total_in() - before).unwrap_or(input.len());
            input = &input[consumed..];
            let produced = self.out.len();
            if produced > 0 {
                self.inner.write_all(&self.out)?;
            }
            if status == flate2::Status::StreamEnd {
                self.done = true;
                continue;
            }
            if produced == self.out.capacity() || (produced > 0 && consumed == 0) {
                // Output space, not input, limited this step: more may be waiting inside.
                continue;
            }
            if input.is_empty() {
                return Ok(());
            }
            if consumed == 0 {
                self.pending.extend_from_slice(input);
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::codec::{compress, Encoder};

    const TEXT: &[u8] = "Grüße, héllo ✓ 😀 https://example.com/ and more text\n".as_bytes();

    /// Records the size of every write it receives.
    #[derive(Default)]
    struct Recorder {
        bytes: Vec<u8>,
        largest_write: usize,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.largest_write = self.largest_write.max(buf.len());
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn decode_all(codec: Codec, encoded: &[u8], chunk: usize) -> io::Result<Recorder> {
        let mut d = Decoder::new(codec, Recorder::default());
        for piece in encoded.chunks(chunk.max(1)) {
            d.write(piece)?;
        }
        d.finish()
    }

    const COMPRESSED: [Codec; 3] = [Codec::Gzip, Codec::Deflate, Codec::Brotli];

    #[test]
    fn round_trips_through_every_codec_and_chunk_size() {
        let plain = TEXT.repeat(200);
        for codec in [Codec::Identity, Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let encoded = compress(codec, &plain);
            for chunk in [1, 2, 7, 64, 8192, usize::MAX] {
                let out = decode_all(codec, &encoded, chunk).unwrap();
                assert!(out.bytes == plain, "{codec:?} chunk {chunk}");
            }
        }
    }

    #[test]
    fn every_two_way_split_decodes_completely() {
        // Larger than the deflate decoder's output step, so one write must produce several.
        let plain = TEXT.repeat(1200);
        for codec in COMPRESSED {
            let encoded = compress(codec, &plain);
            for cut in 0..=encoded.len() {
                let mut d = Decoder::new(codec, Recorder::default());
                d.write(&encoded[..cut]).unwrap();
                d.write(&encoded[cut..]).unwrap();
                let out = d
                    .finish()
                    .unwrap_or_else(|e| panic!("{codec:?} cut at {cut}: {e}"));
                assert!(out.bytes == plain, "{codec:?} cut at {cut}");
            }
        }
    }

    #[test]
    fn a_highly_compressible_body_is_handed_on_in_bounded_pieces() {
        // 16 MiB of one byte compresses to a few KiB: its output must not be collected.
        let plain = vec![b' '; 16 << 20];
        for codec in COMPRESSED {
            let encoded = compress(codec, &plain);
            let out = decode_all(codec, &encoded, 64 * 1024).unwrap();
            assert_eq!(out.bytes.len(), plain.len(), "{codec:?}");
            assert!(
                out.largest_write <= 64 * 1024,
                "{codec:?}: a write of {} bytes",
                out.largest_write
            );
        }
    }

    #[test]
    fn raw_deflate_is_accepted_for_deflate() {
        let plain = TEXT.repeat(50);
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&plain).unwrap();
        let raw = e.finish().unwrap();
        assert!(decode_all(Codec::Deflate, &raw, 5).unwrap().bytes == plain);
    }

    #[test]
    fn concatenated_gzip_members_are_one_body() {
        let mut two = compress(Codec::Gzip, b"first member, ");
        two.extend_from_slice(&compress(Codec::Gzip, b"second member"));
        assert_eq!(
            decode_all(Codec::Gzip, &two, 3).unwrap().bytes,
            b"first member, second member"
        );
    }

    /// Decodes `encoded` split once at every point, returning each outcome.
    fn every_split(codec: Codec, encoded: &[u8]) -> Vec<io::Result<(Vec<u8>, u64)>> {
        (0..=encoded.len())
            .map(|cut| {
                let mut d = Decoder::new(codec, Recorder::default());
                d.write(&encoded[..cut])?;
                d.write(&encoded[cut..])?;
                let ignored = d.ignored_trailing();
                d.finish().map(|r| (r.bytes, ignored))
            })
            .collect()
    }

    #[test]
    fn bytes_after_a_complete_stream_are_ignored_as_browsers_do() {
        let plain = TEXT.repeat(20);
        for codec in [Codec::Gzip, Codec::Deflate] {
            for trailer in [&b"\0\0\0\0"[..], b"garbage", b"\n", b"\x1f\x00", b"\x8b"] {
                let mut encoded = compress(codec, &plain);
                encoded.extend_from_slice(trailer);
                for (cut, outcome) in every_split(codec, &encoded).into_iter().enumerate() {
                    let (bytes, ignored) = outcome
                        .unwrap_or_else(|e| panic!("{codec:?} + {trailer:?}, cut at {cut}: {e}"));
                    assert_eq!(bytes, plain, "{codec:?} + {trailer:?}, cut at {cut}");
                    assert_eq!(ignored, trailer.len() as u64, "{codec:?} cut at {cut}");
                }
            }
        }
    }

    #[test]
    fn a_later_gzip_member_that_starts_must_finish() {
        let first = compress(Codec::Gzip, b"first member, ");
        let second = compress(Codec::Gzip, b"second member");
        // A lone magic byte, a header cut short, a member cut short: all truncations.
        for cut in [1, 2, 5, second.len() - 1] {
            let mut body = first.clone();
            body.extend_from_slice(&second[..cut]);
            for (at, outcome) in every_split(Codec::Gzip, &body).into_iter().enumerate() {
                assert!(
                    outcome.is_err(),
                    "second member cut at {cut}, split at {at}"
                );
            }
        }
        let mut body = first.clone();
        body.extend_from_slice(&second);
        body.extend_from_slice(b"\0\0");
        for outcome in every_split(Codec::Gzip, &body) {
            assert_eq!(
                outcome.unwrap(),
                (b"first member, second member".to_vec(), 2)
            );
        }
    }

    #[test]
    fn an_empty_body_is_empty_in_every_coding() {
        for codec in [Codec::Identity, Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            assert!(
                decode_all(codec, b"", 1).unwrap().bytes.is_empty(),
                "{codec:?}"
            );
        }
    }

    #[test]
    fn truncated_streams_are_errors_not_short_bodies() {
        let plain = TEXT.repeat(200);
        for codec in COMPRESSED {
            let encoded = compress(codec, &plain);
            for cut in [1, 2, 9, encoded.len() / 2, encoded.len() - 1] {
                assert!(
                    decode_all(codec, &encoded[..cut], 3).is_err(),
                    "{codec:?} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn plain_bytes_declared_as_compressed_are_errors() {
        for codec in COMPRESSED {
            assert!(
                decode_all(codec, &TEXT.repeat(50), 1000).is_err(),
                "{codec:?}"
            );
        }
    }

    #[test]
    fn inner_writer_errors_pass_through() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::BrokenPipe, "client gone"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        for codec in [Codec::Identity, Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let encoded = compress(codec, &TEXT.repeat(2000));
            let mut d = Decoder::new(codec, Broken);
            let err = d
                .write(&encoded)
                .and_then(|()| d.finish().map(|_| ()))
                .unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{codec:?}: {err}");
        }
    }

    #[test]
    fn flushed_output_is_decodable_before_the_end() {
        for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let mut e = Encoder::new(codec);
            e.write(TEXT).unwrap();
            e.flush().unwrap();
            let mut d = Decoder::new(codec, Vec::new());
            d.write(e.output()).unwrap();
            assert_eq!(d.inner_mut().as_slice(), TEXT, "{codec:?}");
        }
    }
}
