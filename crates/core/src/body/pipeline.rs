//! The streaming body pipeline: decode → stages → encode → batched writes to the client.
//!
//! Push-based: the caller pushes origin chunks in with [`BodyPipeline::push`] and the pipeline
//! writes into the `Write` it was given. [`BodyPipeline::finish`] consumes the pipeline and
//! hands the sink back with a [`BodyReport`]: the engine's own facts (bytes in and out) and
//! the report of the stages it was given, whatever their type. So the caller decides how a
//! body ends: `finish()` the client stream when the pipeline finished, abandon it when anything
//! failed.
//! [`BodyPipeline::end_stages`] is the same end in two steps: the origin's body and the stages
//! end, then the caller may append last plain bytes ([`Ending::write`], encoded as the rest)
//! before [`Ending::finish`] ends the encoder.
//!
//! Which stages a body gets is its composer's decision, not the pipeline's: the pipeline runs
//! any [`BodyStage`] and never looks inside its report.
//!
//! Output is batched: bytes collect in the encoder's buffer and reach the sink (one host call
//! on Fastly) once [`BATCH_BYTES`] are waiting, or when the caller asks with
//! [`BodyPipeline::flush`], never per stage fragment. When to ask is
//! [`Release`](crate::body::release::Release)'s decision, not the pipeline's: only the caller
//! knows whether more input is on its way.

use std::fmt;
use std::io::{self, Write};

use crate::body::codec::Encoder;
use crate::body::decode::{DecodeError, Decoder};
use crate::body::release::{Progress, BATCH_BYTES};
use crate::body::room;
use crate::body::stage::BodyStage;
use crate::content::Codec;

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

/// What a finished pipeline did: the engine's facts, and the report of its stages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BodyReport<R> {
    /// Encoded bytes received from the origin.
    pub bytes_in: u64,
    /// Encoded bytes written to the sink.
    pub bytes_out: u64,
    /// Bytes after the end of a complete gzip or deflate body that were ignored (zero
    /// padding, garbage), as browsers ignore them.
    pub ignored_trailing: u64,
    /// What the stages said at the end ([`BodyStage::Report`]).
    pub stages: R,
}

/// Everything after the decoder: stages → encode → batched writes. The decoder writes
/// decoded bytes into it as they are produced, in small pieces.
struct Downstream<W: Write, S> {
    /// The composed stages; taken by `finish`.
    stage: Option<S>,
    encoder: Encoder,
    /// Rewritten plain bytes waiting for a non-identity encoder; reused.
    plain: Vec<u8>,
    sink: W,
    /// Encoded bytes written to the sink so far.
    bytes_out: u64,
    /// Plain bytes the stages wrote and the encoder was handed so far.
    page_bytes: u64,
    /// A typed failure parked here when a `Write` call from inside a decoder fails, so the
    /// pipeline can report it as what it is rather than as undecodable input.
    failure: Option<PipelineError>,
}

impl<W: Write, S: BodyStage> Downstream<W, S> {
    fn stage_write(&mut self, plain_input: &[u8]) -> Result<(), PipelineError> {
        if let (false, Some(stage)) = (plain_input.is_empty(), self.stage.as_mut()) {
            let out = match self.encoder.identity_output() {
                Some(direct) => direct,
                None => &mut self.plain,
            };
            room::at_first_use(out, plain_input.len(), room::PIECE_ROOM);
            stage.write(plain_input, out);
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

    /// Ends the stages; what they reported. The encoder stays open for [`Ending::write`].
    fn end_stages(&mut self) -> Result<Option<S::Report>, PipelineError> {
        let Some(stage) = self.stage.take() else {
            return Ok(None);
        };
        let out = match self.encoder.identity_output() {
            Some(direct) => direct,
            None => &mut self.plain,
        };
        let stages = stage.finish(out);
        self.encode_plain()?;
        Ok(Some(stages))
    }

    /// Ends the encoder; the sink and the bytes written to it.
    fn finish(mut self) -> Result<(W, u64), PipelineError> {
        self.encoder.finish().map_err(PipelineError::Internal)?;
        self.write_out(false)?;
        Ok((self.sink, self.bytes_out))
    }

    /// Writes the encoder's waiting output to the sink; `flush` also flushes the sink.
    fn write_out(&mut self, flush: bool) -> Result<(), PipelineError> {
        let waiting = self.encoder.output();
        if !waiting.is_empty() {
            self.sink
                .write_all(waiting)
                .map_err(PipelineError::Client)?;
            self.bytes_out += waiting.len() as u64;
            self.encoder.clear_output();
        }
        if flush {
            self.sink.flush().map_err(PipelineError::Client)?;
        }
        Ok(())
    }
}

impl<W: Write, S: BodyStage> Write for Downstream<W, S> {
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
pub struct BodyPipeline<W: Write, S: BodyStage> {
    decoder: Decoder<Downstream<W, S>>,
    bytes_in: u64,
}

impl<W: Write, S: BodyStage> fmt::Debug for BodyPipeline<W, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyPipeline")
            .field("bytes_in", &self.bytes_in)
            .finish_non_exhaustive()
    }
}

impl<W: Write, S: BodyStage> BodyPipeline<W, S> {
    /// A pipeline decoding `codec`, running the body through `stages`, re-encoding with
    /// `codec` and writing to `sink`.
    pub fn new(codec: Codec, stages: S, sink: W) -> Self {
        let downstream = Downstream {
            stage: Some(stages),
            page_bytes: 0,
            encoder: Encoder::new(codec),
            // Sized at its first use, as the identity encoder's output is (`room`).
            plain: Vec::new(),
            sink,
            bytes_out: 0,
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

    /// Ends the body and returns the sink, with every byte written to it, and a report: the
    /// engine's facts and the stages' own report. The sink is not flushed: how the body ends (`finish()` the client stream, or send it whole)
    /// is the caller's.
    ///
    /// # Errors
    /// See [`PipelineError`]. A truncated compressed body is an error here, at the end.
    pub fn finish(self) -> Result<(W, BodyReport<S::Report>), PipelineError> {
        self.end_stages()?.finish()
    }

    /// Ends the origin's body and the stages, as [`Self::finish`] does, but keeps the encoder
    /// open: the caller may then append last plain bytes ([`Ending::write`]) before it
    /// [`Ending::finish`]es. `end_stages()?.finish()` is `finish()`.
    ///
    /// # Errors
    /// See [`PipelineError`]. A truncated compressed body is an error here.
    pub fn end_stages(self) -> Result<Ending<W, S>, PipelineError> {
        let bytes_in = self.bytes_in;
        let ignored_trailing = self.decoder.ignored_trailing();
        let mut downstream = self
            .decoder
            .finish()
            .map_err(|e| PipelineError::Origin(DecodeError(e)))?;
        if let Some(parked) = downstream.failure.take() {
            return Err(parked);
        }
        let stages = downstream
            .end_stages()?
            .ok_or_else(|| PipelineError::Internal(io::Error::other("stages ended twice")))?;
        Ok(Ending {
            downstream,
            bytes_in,
            ignored_trailing,
            stages,
        })
    }

    /// The sink, as far as it has been written to (for tests of when bytes reach it).
    #[cfg(test)]
    pub(crate) fn sink_mut(&mut self) -> &mut W {
        &mut self.decoder.inner_mut().sink
    }
}

/// A body whose origin input and stages have ended, its encoder still open
/// ([`BodyPipeline::end_stages`]): the caller appends last plain bytes, if any, then finishes.
pub struct Ending<W: Write, S: BodyStage> {
    /// The engine, its stages ended.
    downstream: Downstream<W, S>,
    bytes_in: u64,
    ignored_trailing: u64,
    stages: S::Report,
}

impl<W: Write, S: BodyStage> fmt::Debug for Ending<W, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ending")
            .field("bytes_in", &self.bytes_in)
            .finish_non_exhaustive()
    }
}

impl<W: Write, S: BodyStage> Ending<W, S> {
    /// Encoded bytes written to the sink so far.
    pub fn bytes_out(&self) -> u64 {
        self.downstream.bytes_out
    }

    /// What the stages reported.
    pub fn stages(&self) -> &S::Report {
        &self.stages
    }

    /// What the stages reported, for the caller to read or take from before it finishes.
    pub fn stages_mut(&mut self) -> &mut S::Report {
        &mut self.stages
    }

    /// Appends plain bytes to the body, encoded as the rest; they reach the sink as a stage's
    /// output does (a batch's worth, or at a flush or the end).
    ///
    /// # Errors
    /// See [`PipelineError`]; after an error the body must not be used again.
    pub fn write(&mut self, plain: &[u8]) -> Result<(), PipelineError> {
        let downstream = &mut self.downstream;
        match downstream.encoder.identity_output() {
            Some(direct) => direct.extend_from_slice(plain),
            None => downstream.plain.extend_from_slice(plain),
        }
        downstream.stage_write(&[])
    }

    /// Makes everything so far reach the sink, and flushes it ([`BodyPipeline::flush`]).
    ///
    /// # Errors
    /// See [`PipelineError`].
    pub fn flush(&mut self) -> Result<(), PipelineError> {
        self.downstream.flush()
    }

    /// Ends the encoder; the sink and the report, as [`BodyPipeline::finish`] gives them.
    ///
    /// # Errors
    /// See [`PipelineError`].
    pub fn finish(self) -> Result<(W, BodyReport<S::Report>), PipelineError> {
        let Ending {
            downstream,
            bytes_in,
            ignored_trailing,
            stages,
        } = self;
        let (sink, bytes_out) = downstream.finish()?;
        Ok((
            sink,
            BodyReport {
                bytes_in,
                bytes_out,
                ignored_trailing,
                stages,
            },
        ))
    }
}
