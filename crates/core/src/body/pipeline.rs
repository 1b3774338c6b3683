//! The streaming body pipeline: decode → rewrite → encode → batched writes to the client.
//!
//! Push-based, like lol_html: the caller pushes origin chunks in with [`BodyPipeline::push`] and
//! the pipeline writes into the `Write` it was given. [`BodyPipeline::finish`] consumes the
//! pipeline and hands the sink back, so the caller decides how a body ends: `finish()` the
//! client stream when the pipeline finished, abandon it when anything failed.
//!
//! Output is batched: bytes collect in the encoder's buffer and reach the sink (one host call
//! on Fastly) once [`BATCH_BYTES`] are waiting, or when the caller asks with
//! [`BodyPipeline::flush`], never per lol_html fragment. When to ask is
//! [`Release`](crate::body::release::Release)'s decision, not the pipeline's: only the caller
//! knows whether more input is on its way.

use std::fmt;
use std::io::{self, Write};

use crate::body::codec::{Codec, Encoder};
use crate::body::decode::{DecodeError, Decoder};
use crate::body::inject::{InjectStage, Injected, Injection};
use crate::body::lazy_html::LazyHtml;
use crate::body::release::{Progress, BATCH_BYTES};
use crate::body::rsc::{FlightStage, RscReport};
use crate::body::stage::{BodyStage, Chain};
use crate::body::text::TextStage;
use crate::body::utf16::{Utf16Guard, UTF16_PASSED_THROUGH};
use crate::content::Rewrite;
use crate::hints::HintsStage;
use crate::url_rewrite::UrlRule;
use trusted_server_settings::Nextjs;

/// Everything a pipeline needs besides the body's own plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineOptions {
    /// How Next.js payloads are handled (`[integrations.nextjs]`).
    pub nextjs: Nextjs,
    /// Most bytes of an HTML page kept while the URL rule alone suffices, so that lol_html can
    /// replay them if the page turns out to need its structure (see the `lazy_html` module).
    /// The output does not depend on it; 0 runs lol_html from the first byte. Default
    /// 2 MiB.
    pub html_lookback: usize,
    /// The script tag to put at the start of an HTML page's `<head>` (see the `inject`
    /// module); `None` for a response that must not get it. Only HTML bodies get it.
    pub inject: Option<Injection>,
    /// Collect the page's `<link rel=preload|modulepreload|preconnect>` hints from its head
    /// (`crate::hints`), reported in [`PipelineReport::hints`]. HTML only; it reads the decoded
    /// bytes and never changes the output. Default `false`.
    pub learn_hints: bool,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            nextjs: trusted_server_settings::Settings::DEFAULT
                .integrations
                .nextjs,
            html_lookback: crate::body::lazy_html::LOOKBACK_MAX,
            inject: None,
            learn_hints: false,
        }
    }
}

/// Why a body could not be completed. Each variant calls for a different reaction.
#[derive(Debug)]
#[non_exhaustive]
pub enum PipelineError {
    /// The origin's body is corrupt or truncated (e.g. gzip without its trailer). The output
    /// must not look complete: abandon the client stream.
    Origin(DecodeError),
    /// Writing to the client failed (usually a disconnect): stop working on this request.
    Client(io::Error),
    /// Re-encoding failed. Does not happen with in-memory codecs; handled like `Origin`.
    Internal(io::Error),
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipelineError::Origin(e) => write!(f, "origin body: {e}"),
            PipelineError::Client(e) => write!(f, "client write: {e}"),
            PipelineError::Internal(e) => write!(f, "re-encoding: {e}"),
        }
    }
}

impl std::error::Error for PipelineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PipelineError::Origin(e) => Some(e),
            PipelineError::Client(e) | PipelineError::Internal(e) => Some(e),
        }
    }
}

/// The body's stages, in the order bytes flow through them. A new stage is one line here.
pub(crate) fn compose(rewrite: Rewrite, rule: UrlRule, options: &PipelineOptions) -> Chain {
    let nextjs = &options.nextjs;
    let flight_limit = nextjs.enabled.then_some(nextjs.max_held_bytes as usize);
    match rewrite {
        Rewrite::Html(encoding) => {
            // Early hints are read from the origin's head before the rewrite (their URLs are
            // rewritten when reported); the stage steps aside once the head is complete.
            let hints = options.learn_hints.then(|| HintsStage::new(rule.clone()));
            let html = LazyHtml::new(rule, encoding, flight_limit, options.html_lookback);
            let inner = match hints {
                Some(hints) => Chain::new(hints).then(html),
                None => Chain::new(html),
            };
            // After the rewriter, on its output: the tag is never rewritten, and the plain
            // path stays lol_html-free.
            let inner = match &options.inject {
                Some(injection) => inner.then(InjectStage::new(injection)),
                None => inner,
            };
            Chain::new(Utf16Guard::new(inner))
        }
        Rewrite::Text => Chain::new(Utf16Guard::new(TextStage::new(rule))),
        Rewrite::Flight => Chain::new(Utf16Guard::new(FlightStage::new(
            rule,
            nextjs.max_held_bytes as usize,
        ))),
    }
}

/// What a finished pipeline did (for logs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineReport {
    /// Encoded bytes received from the origin.
    pub bytes_in: u64,
    /// Encoded bytes written to the sink.
    pub bytes_out: u64,
    /// Set when lol_html gave up and the rest of the document passed through as-is.
    pub html_bail_out: Option<String>,
    /// For a body the HTML stage rewrote (`None` for text, Flight, and a UTF-16 body passed
    /// through): whether it needed lol_html's view of its structure, because it had a Next.js
    /// Flight marker, a `<meta>` that may declare a charset, or grew past 2 MiB. `false`: the
    /// URL rule alone produced the same output for less.
    pub html_structured: Option<bool>,
    /// What the Next.js payload rewriting did: bytes held at most, and whether it degraded.
    pub rsc: RscReport,
    /// Bytes after the end of a complete gzip or deflate body that were ignored (zero
    /// padding, garbage), as browsers ignore them.
    pub ignored_trailing: u64,
    /// The body started with a UTF-16 byte order mark and passed through unchanged.
    pub utf16: bool,
    /// For an HTML body given an [`Injection`]: whether the tag went in, or why not.
    pub injected: Option<Injected>,
    /// For a first-party creative ([`crate::first_party::creative::pipeline`]): what was
    /// rewritten, and whether memory limits made part of it pass through.
    pub creative: Option<crate::first_party::creative::CreativeReport>,
    /// With [`PipelineOptions::learn_hints`], for an HTML body: the early hints found in its
    /// head, URLs rewritten first-party (unbounded here; `crate::hints::Hints` bounds them).
    pub hints: Vec<String>,
}

/// Everything after the decoder: rewrite → encode → batched writes. The decoder writes
/// decoded bytes into it as they are produced, in small pieces.
struct Downstream<W: Write> {
    /// The composed stages; taken by `finish`.
    stage: Option<Box<dyn BodyStage>>,
    encoder: Encoder,
    /// Rewritten plain bytes waiting for a non-identity encoder; reused.
    plain: Vec<u8>,
    sink: W,
    report: PipelineReport,
    /// Rewritten page bytes handed to the encoder so far.
    page_bytes: u64,
    /// A typed failure parked here when a `Write` call from inside a decoder fails, so the
    /// pipeline can report it as what it is rather than as undecodable input.
    failure: Option<PipelineError>,
}

impl<W: Write> Downstream<W> {
    fn stage_write(&mut self, plain_input: &[u8]) -> Result<(), PipelineError> {
        if let (false, Some(stage)) = (plain_input.is_empty(), self.stage.as_mut()) {
            match self.encoder.identity_output() {
                Some(direct) => stage.write(plain_input, direct),
                None => stage.write(plain_input, &mut self.plain),
            }
        }
        self.encode_plain()?;
        let waiting = self.encoder.output().len();
        if waiting >= BATCH_BYTES {
            self.write_out(false)?;
        }
        Ok(())
    }

    fn encode_plain(&mut self) -> Result<(), PipelineError> {
        if !self.plain.is_empty() {
            self.page_bytes += self.plain.len() as u64;
            self.encoder
                .write(&self.plain)
                .map_err(PipelineError::Internal)?;
            self.plain.clear();
        }
        Ok(())
    }

    /// The caller's [`BodyPipeline::flush`].
    fn flush(&mut self) -> Result<(), PipelineError> {
        self.encoder.flush().map_err(PipelineError::Internal)?;
        self.write_out(true)
    }

    fn finish(mut self) -> Result<(W, PipelineReport), PipelineError> {
        if let Some(stage) = self.stage.take() {
            let out = match self.encoder.identity_output() {
                Some(direct) => direct,
                None => &mut self.plain,
            };
            let stage_report = stage.finish(out);
            self.report.html_bail_out = stage_report.bail_out;
            self.report.rsc = stage_report.rsc;
            self.report.html_structured = stage_report.structured;
            self.report.utf16 = stage_report.passed_through == Some(UTF16_PASSED_THROUGH);
            self.report.injected = stage_report.injected;
            self.report.creative = stage_report.creative;
            self.report.hints = stage_report.hints.unwrap_or_default();
        }
        self.encode_plain()?;
        self.encoder.finish().map_err(PipelineError::Internal)?;
        self.write_out(false)?;
        Ok((self.sink, self.report))
    }

    /// Writes the encoder's waiting output to the sink; `flush` also flushes the sink.
    fn write_out(&mut self, flush: bool) -> Result<(), PipelineError> {
        let waiting = self.encoder.output();
        if !waiting.is_empty() {
            self.sink
                .write_all(waiting)
                .map_err(PipelineError::Client)?;
            self.report.bytes_out += waiting.len() as u64;
            self.encoder.clear_output();
        }
        if flush {
            self.sink.flush().map_err(PipelineError::Client)?;
        }
        Ok(())
    }
}

impl<W: Write> Write for Downstream<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.stage_write(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                self.failure = Some(e);
                Err(io::Error::other("the pipeline failed after the decoder"))
            }
        }
    }

    /// Decoders flush their inner writer as they see fit; when output leaves for the client is
    /// [`Release`](crate::body::release::Release)'s decision, carried out through
    /// [`BodyPipeline::flush`], so a decoder's flush does nothing.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A body being rewritten into `W`. See the module docs.
pub struct BodyPipeline<W: Write> {
    decoder: Decoder<Downstream<W>>,
    bytes_in: u64,
}

impl<W: Write> fmt::Debug for BodyPipeline<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyPipeline")
            .field("bytes_in", &self.bytes_in)
            .finish_non_exhaustive()
    }
}

impl<W: Write> BodyPipeline<W> {
    /// A pipeline decoding and re-encoding `codec`, rewriting with `rewrite` and `rule`.
    pub fn new(
        codec: Codec,
        rewrite: Rewrite,
        rule: UrlRule,
        options: &PipelineOptions,
        sink: W,
    ) -> Self {
        Self::with_stages(codec, compose(rewrite, rule, options), sink)
    }

    /// A pipeline through `stages` (see [`compose`]).
    pub(crate) fn with_stages(codec: Codec, stages: Chain, sink: W) -> Self {
        let downstream = Downstream {
            stage: Some(Box::new(stages)),
            page_bytes: 0,
            encoder: Encoder::new(codec),
            plain: Vec::with_capacity(16 * 1024),
            sink,
            report: PipelineReport::default(),
            failure: None,
        };
        BodyPipeline {
            decoder: Decoder::new(codec, downstream),
            bytes_in: 0,
        }
    }

    /// Classifies an error that came out of the decoder: a failure parked downstream (the
    /// client, the encoder) is that failure; anything else is the origin body's fault.
    fn classify(&mut self, error: io::Error) -> PipelineError {
        match self.decoder.inner_mut().failure.take() {
            Some(parked) => parked,
            None => PipelineError::Origin(DecodeError(error)),
        }
    }

    /// Pushes one origin chunk (any size, any split). Its output reaches the sink once the
    /// flush threshold's worth is waiting; the rest waits for more input, [`Self::flush`] or
    /// [`Self::finish`].
    ///
    /// # Errors
    /// See [`PipelineError`]; after an error the pipeline must not be used again.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), PipelineError> {
        self.bytes_in += chunk.len() as u64;
        match self.decoder.write(chunk) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.classify(e)),
        }
    }

    /// Makes the output of everything pushed so far reach the sink, and flushes the sink: the
    /// caller's "send now". A compressed coding ends a block here, which costs; when that is
    /// worth it is [`Release`](crate::body::release::Release)'s decision.
    ///
    /// # Errors
    /// See [`PipelineError`]; after an error the pipeline must not be used again.
    pub fn flush(&mut self) -> Result<(), PipelineError> {
        self.decoder.inner_mut().flush()
    }

    /// What the pipeline has done so far, for [`Release::after_read`](crate::Release::after_read).
    pub fn progress(&mut self) -> Progress {
        let downstream = self.decoder.inner_mut();
        Progress {
            page_bytes: downstream.page_bytes,
            unflushed: downstream.encoder.unflushed() > 0,
        }
    }

    /// Ends the body and returns the sink, with every byte written to it, and a report. The
    /// sink is not flushed: how the body ends (`finish()` the client stream, or send it whole)
    /// is the caller's.
    ///
    /// # Errors
    /// See [`PipelineError`]. A truncated compressed body is an error here, at the end.
    pub fn finish(self) -> Result<(W, PipelineReport), PipelineError> {
        let bytes_in = self.bytes_in;
        let ignored_trailing = self.decoder.ignored_trailing();
        let mut downstream = self
            .decoder
            .finish()
            .map_err(|e| PipelineError::Origin(DecodeError(e)))?;
        if let Some(parked) = downstream.failure.take() {
            return Err(parked);
        }
        let (sink, mut report) = downstream.finish()?;
        report.bytes_in = bytes_in;
        report.ignored_trailing = ignored_trailing;
        Ok((sink, report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::release::{Release, Step};
    use lol_html::AsciiCompatibleEncoding;

    fn rule() -> UrlRule {
        UrlRule::new("origin.example.com", "http", "127.0.0.1:7676")
    }

    fn html() -> Rewrite {
        Rewrite::Html(AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap())
    }

    /// A sink that records each write and flush, and fails after `fail_after` writes.
    #[derive(Default)]
    struct Recorder {
        writes: Vec<Vec<u8>>,
        flushes: usize,
        fail_after: Option<usize>,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.fail_after.is_some_and(|n| self.writes.len() >= n) {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "client went away",
                ));
            }
            self.writes.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            self.flushes += 1;
            Ok(())
        }
    }

    /// Runs `input` through a pipeline split once at `cut`, returning output and report.
    fn run_cut(
        codec: Codec,
        rewrite: Rewrite,
        input: &[u8],
        cut: usize,
    ) -> (Vec<u8>, PipelineReport) {
        let mut p = BodyPipeline::new(
            codec,
            rewrite,
            rule(),
            &PipelineOptions::default(),
            Vec::new(),
        );
        p.push(&input[..cut]).unwrap();
        p.push(&input[cut..]).unwrap();
        p.finish().unwrap()
    }

    #[test]
    fn a_utf16_body_passes_through_unchanged_at_every_split() {
        let text = "<p>https://origin.example.com/ é ✓</p>";
        let le: Vec<u8> = [0xff, 0xfe]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xfe, 0xff]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        // Not real UTF-16, but it would be rewritten if the mark were not honoured.
        let marked_ascii = [&[0xff, 0xfe][..], text.as_bytes()].concat();
        for body in [le, be, marked_ascii] {
            for rewrite in [html(), Rewrite::Text] {
                for cut in 0..=body.len() {
                    let (out, report) = run_cut(Codec::Identity, rewrite, &body, cut);
                    assert_eq!(out, body, "cut at {cut}");
                    assert!(report.utf16);
                }
            }
        }
        // Without a mark, and for bodies shorter than one, rewriting is as before.
        for (body, want) in [
            (
                text.as_bytes(),
                "<p>http://127.0.0.1:7676/ é ✓</p>".as_bytes(),
            ),
            (b"\xff", b"\xff"),
            (b"", b""),
        ] {
            for cut in 0..=body.len() {
                let (out, report) = run_cut(Codec::Identity, Rewrite::Text, body, cut);
                assert_eq!(out, want);
                assert!(!report.utf16);
            }
        }
    }

    /// Pushes `origin` in pieces of `chunk` bytes, the origin pausing after each, flushing
    /// when [`Release`] says; returns the output and each write's size.
    fn run_chunks(codec: Codec, origin: &[u8], chunk: usize) -> (Vec<u8>, Vec<usize>) {
        let mut p = BodyPipeline::new(
            codec,
            html(),
            rule(),
            &PipelineOptions::default(),
            Recorder::default(),
        );
        let mut after_each = Vec::new();
        let mut release = Release::new(codec, None);
        for piece in origin.chunks(chunk) {
            p.push(piece).unwrap();
            release_step(&mut release, &mut p, piece.len());
            after_each.push(p.decoder.inner_mut().sink.writes.len());
        }
        let (sink, _) = p.finish().unwrap();
        (sink.writes.concat(), after_each)
    }

    /// What the adapter does after an origin read that the origin does not follow at once.
    fn release_step<W: Write>(release: &mut Release, p: &mut BodyPipeline<W>, n: usize) {
        if release.after_read(n, p.progress(), || false) == (Step::Send { flush: true }) {
            p.flush().unwrap();
        }
    }

    #[test]
    fn a_trickling_origin_does_not_inflate_the_compressed_output() {
        let page = include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/site/index.html"
        ));
        for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
            let origin = crate::body::codec::compress(codec, page);
            let (whole, _) = run_chunks(codec, &origin, origin.len());
            let (trickled, _) = run_chunks(codec, &origin, 1);
            // One flush per chunk made this 4.6× for gzip.
            assert!(
                trickled.len() * 100 <= whole.len() * 120,
                "{codec:?}: {} bytes one byte at a time, {} in one go",
                trickled.len(),
                whole.len()
            );
            let mut plain = Vec::new();
            let mut d = Decoder::new(codec, &mut plain);
            d.write(&trickled).unwrap();
            d.finish().unwrap();
            let mut want = Vec::new();
            let mut d = Decoder::new(codec, &mut want);
            d.write(&whole).unwrap();
            d.finish().unwrap();
            assert_eq!(plain, want, "{codec:?}");
        }
    }

    #[test]
    fn small_compressed_chunks_still_leave_at_once() {
        // Next.js sends a Suspense row of a few bytes on its own: it must not wait for more.
        let parts: [&[u8]; 4] = [
            &b"<p>head</p>".repeat(500),
            b"<p>1</p>",
            b"<p>2</p>",
            b"<p>3</p>",
        ];
        let mut encoder = crate::body::codec::Encoder::new(Codec::Gzip);
        let mut chunks = Vec::new();
        for part in parts {
            encoder.write(part).unwrap();
            encoder.flush().unwrap();
            chunks.push(encoder.output().to_vec());
            encoder.clear_output();
        }
        let mut p = BodyPipeline::new(
            Codec::Gzip,
            html(),
            rule(),
            &PipelineOptions::default(),
            Recorder::default(),
        );
        let mut release = Release::new(Codec::Gzip, None);
        for (i, chunk) in chunks.iter().enumerate() {
            let before = p.decoder.inner_mut().sink.writes.len();
            p.push(chunk).unwrap();
            release_step(&mut release, &mut p, chunk.len());
            assert!(
                p.decoder.inner_mut().sink.writes.len() > before,
                "chunk {i} waited"
            );
        }
    }

    #[test]
    fn ignored_trailing_bytes_are_reported() {
        let mut body =
            crate::body::codec::compress(Codec::Gzip, b"<p>https://origin.example.com/</p>");
        body.extend_from_slice(b"\0\0\0");
        let (out, report) = run_cut(Codec::Gzip, html(), &body, body.len() - 1);
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&out[..]), &mut plain)
            .unwrap();
        assert_eq!(plain, b"<p>http://127.0.0.1:7676/</p>");
        assert_eq!(report.ignored_trailing, 3);
    }

    #[test]
    fn first_chunk_reaches_the_sink_before_the_second_is_pushed() {
        let mut p = BodyPipeline::new(
            Codec::Identity,
            html(),
            rule(),
            &PipelineOptions::default(),
            Recorder::default(),
        );
        p.push(b"<html><head><link href=\"https://origin.example.com/a.css\"></head>")
            .unwrap();
        assert!(
            p.decoder.inner_mut().sink.writes.is_empty(),
            "a push alone waits for more input, a flush or the threshold"
        );
        p.flush().unwrap();
        let sink = &p.decoder.inner_mut().sink;
        assert_eq!(
            sink.writes.concat(),
            b"<html><head><link href=\"http://127.0.0.1:7676/a.css\"></head>"
        );
        assert_eq!(sink.flushes, 1);
        p.push(b"<body></body></html>").unwrap();
        let (sink, report) = p.finish().unwrap();
        assert_eq!(sink.writes.concat().len() as u64, report.bytes_out);
    }

    #[test]
    fn writes_are_batched_not_per_fragment() {
        let page = "<p><a href=\"https://origin.example.com/x\">link</a></p>\n".repeat(2000);
        let mut p = BodyPipeline::new(
            Codec::Identity,
            html(),
            rule(),
            &PipelineOptions::default(),
            Recorder::default(),
        );
        for piece in page.as_bytes().chunks(100) {
            p.push(piece).unwrap();
        }
        let (sink, _) = p.finish().unwrap();
        let expected = page.replace("https://origin.example.com", "http://127.0.0.1:7676");
        assert_eq!(sink.writes.concat(), expected.as_bytes());
        // ~100 KB in writes of >= 8 KiB: a dozen or so, not thousands.
        assert!(
            sink.writes.len() <= expected.len() / 8192 + 1,
            "{} writes",
            sink.writes.len()
        );
        assert!(sink.writes[..sink.writes.len() - 1]
            .iter()
            .all(|w| w.len() >= 8192));
    }

    #[test]
    fn a_failing_client_is_reported_as_a_client_error() {
        let sink = Recorder {
            fail_after: Some(1),
            ..Recorder::default()
        };
        let mut p = BodyPipeline::new(
            Codec::Identity,
            html(),
            rule(),
            &PipelineOptions::default(),
            sink,
        );
        p.push(b"<p>one</p>").unwrap();
        p.flush().unwrap();
        p.push(b"<p>two</p>").unwrap();
        let err = p.flush().unwrap_err();
        assert!(matches!(err, PipelineError::Client(_)), "{err}");
    }

    #[test]
    fn a_truncated_gzip_body_fails_at_the_end() {
        let mut enc = Encoder::new(Codec::Gzip);
        enc.write(&b"<p>https://origin.example.com/</p>".repeat(100))
            .unwrap();
        enc.finish().unwrap();
        let gz = enc.output().to_vec();
        let mut p = BodyPipeline::new(
            Codec::Gzip,
            html(),
            rule(),
            &PipelineOptions::default(),
            Vec::new(),
        );
        p.push(&gz[..gz.len() - 4]).unwrap();
        assert!(matches!(p.finish(), Err(PipelineError::Origin(_))));
    }

    #[test]
    fn compressed_output_streams_per_chunk() {
        let options = PipelineOptions::default();
        let mut p = BodyPipeline::new(Codec::Gzip, html(), rule(), &options, Vec::new());
        let mut enc = Encoder::new(Codec::Gzip);
        enc.write(b"<html><head><title>https://origin.example.com/</title></head>")
            .unwrap();
        enc.flush().unwrap();
        p.push(enc.output()).unwrap();
        p.flush().unwrap();
        // Before the body ends, what the client has must already decode to the rewritten head.
        let sent = p.decoder.inner_mut().sink.clone();
        let mut d = Decoder::new(Codec::Gzip, Vec::new());
        d.write(&sent).unwrap();
        assert_eq!(
            d.inner_mut().as_slice(),
            b"<html><head><title>http://127.0.0.1:7676/</title></head>"
        );
    }

    #[test]
    fn a_failing_client_inside_a_decoder_is_still_a_client_error() {
        let sink = Recorder {
            fail_after: Some(0),
            ..Recorder::default()
        };
        let options = PipelineOptions::default();
        let mut p = BodyPipeline::new(Codec::Gzip, html(), rule(), &options, sink);
        // Varied enough that the re-encoded output passes a batch during the one push.
        let page: String = (0..40_000u64)
            .map(|i| format!("<p>https://origin.example.com/{}</p>", i * 7919 % 100_003))
            .collect();
        let mut enc = Encoder::new(Codec::Gzip);
        enc.write(page.as_bytes()).unwrap();
        enc.finish().unwrap();
        let err = p.push(enc.output()).unwrap_err();
        assert!(matches!(err, PipelineError::Client(_)), "{err}");
    }
}
