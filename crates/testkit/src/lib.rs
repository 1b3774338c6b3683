//! The pieces every caller of the body pipeline in tests, fuzz targets and benchmarks needs:
//! cut a body into pieces, push them through a fresh [`BodyPipeline`], flush between pieces
//! as an origin that pauses would make the adapter do, and finish.
//!
//! * [`run`]: a body cut at given points into a `Vec` sink; what most tests want.
//! * [`drive`]: any sink, any pieces (fixed-size chunks, recorded chunk lengths), with a hook
//!   after each piece for callers that measure between pushes.
//! * [`Flush`]: when the driver flushes; the one thing the callers differ in.
//! * [`rewrite_for`] and [`cut_points`]: the rewrite the service picks for a content type,
//!   and cut points from arbitrary numbers (fuzz inputs, property-test values).
//! * [`fuzz_input`]: how a fuzz target reads its input, for the targets and for the tests
//!   that replay saved inputs.
//!
//! It is compiled for `wasm32-wasip1` too (the throughput benchmark runs there), so it uses
//! nothing but the core.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::io::Write;

pub mod fuzz_input;

use trusted_server_core::{
    BodyPipeline, BodyPlan, BodyReport, BodyStage, Codec, PageOptions, PageReport, PipelineError,
    Rewrite, UrlRule,
};

/// The demo origin's public host, which the fixtures (and so the fuzz seeds) use in their
/// URLs.
pub const ORIGIN: &str = "origin.demo-publisher.example";

/// When the driver calls [`BodyPipeline::flush`] between two pieces. Never after the last
/// piece: [`BodyPipeline::finish`] follows it and writes everything anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// Never: the origin's reads follow each other with no pause.
    Never,
    /// After every piece: the origin pauses after each read. For a compressed coding, whose
    /// every flush ends a block, this is the worst case.
    EveryPiece,
    /// After the first, third, fifth ... piece, so that both a flushed and an unflushed piece
    /// end are exercised (the adapter flushes when the origin pauses, not after every read).
    EveryOtherPiece,
}

impl Flush {
    /// Whether to flush after piece `index` (from 0), given that another piece follows.
    fn after(self, index: usize) -> bool {
        match self {
            Flush::Never => false,
            Flush::EveryPiece => true,
            Flush::EveryOtherPiece => index.is_multiple_of(2),
        }
    }
}

/// The rewrite the service picks for a `200` response of `content_type` (no
/// `Content-Encoding`), with the default Next.js settings.
///
/// # Panics
/// If the service passes such a body through unrewritten: a test that asks for the rewrite of
/// a type the service does not rewrite is wrong.
pub fn rewrite_for(content_type: &str) -> Rewrite {
    match BodyPlan::decide(
        200,
        Some(content_type),
        None,
        PageOptions::default().nextjs.enabled,
    ) {
        BodyPlan::Rewrite { rewrite, .. } => rewrite,
        other => panic!("{content_type} is not rewritten: {other:?}"),
    }
}

/// Cut points in `0..=len` from arbitrary numbers: each taken modulo `len + 1`, then sorted
/// and deduplicated.
pub fn cut_points(raw: &[u16], len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = raw.iter().map(|&c| usize::from(c) % (len + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The pieces of `input` cut at `cuts`: `cuts.len() + 1` pieces, some possibly empty. A cut
/// before the previous one or past the end is moved to it, so any numbers are valid cuts.
pub fn pieces<'a>(input: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut at = 0;
    let ends = cuts.iter().copied().chain(std::iter::once(input.len()));
    ends.map(move |cut| {
        let cut = cut.clamp(at, input.len());
        let piece = &input[at..cut];
        at = cut;
        piece
    })
}

/// Pushes `input` cut at `cuts` (see [`pieces`]) through a fresh pipeline into a `Vec`,
/// flushing between pieces as `flush` says, and finishes it.
///
/// # Errors
/// The pipeline's first error (a corrupt or truncated compressed body).
pub fn run(
    codec: Codec,
    rewrite: Rewrite,
    rule: &UrlRule,
    options: &PageOptions,
    input: &[u8],
    cuts: &[usize],
    flush: Flush,
) -> Result<(Vec<u8>, BodyReport<PageReport>), PipelineError> {
    let pipeline =
        trusted_server_core::page::pipeline(codec, rewrite, rule.clone(), options, Vec::new());
    drive(pipeline, pieces(input, cuts), flush, || {})
}

/// Pushes each of `pieces` into `pipeline`, flushing between pieces as `flush` says, calls
/// `after_piece` once each piece has been pushed (and flushed, if it was), and finishes the
/// pipeline.
///
/// # Errors
/// The pipeline's first error; no piece is pushed after it.
pub fn drive<'a, W: Write, S: BodyStage>(
    mut pipeline: BodyPipeline<W, S>,
    pieces: impl IntoIterator<Item = &'a [u8]>,
    flush: Flush,
    mut after_piece: impl FnMut(),
) -> Result<(W, BodyReport<S::Report>), PipelineError> {
    let mut pieces = pieces.into_iter().enumerate().peekable();
    while let Some((index, piece)) = pieces.next() {
        pipeline.push(piece)?;
        if pieces.peek().is_some() && flush.after(index) {
            pipeline.flush()?;
        }
        after_piece();
    }
    pipeline.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_input_once_in_order() {
        let input = b"abcdefgh";
        let got: Vec<&[u8]> = pieces(input, &[2, 2, 5]).collect();
        assert_eq!(got, [&b"ab"[..], b"", b"cde", b"fgh"]);
        // Out-of-order and out-of-range cuts are moved, never lose or repeat bytes.
        let got: Vec<&[u8]> = pieces(input, &[6, 3, 99]).collect();
        assert_eq!(got, [&b"abcdef"[..], b"", b"gh", b""]);
        assert_eq!(pieces(b"", &[]).collect::<Vec<_>>(), [&b""[..]]);
    }

    #[test]
    fn cut_points_are_sorted_unique_and_in_range() {
        assert_eq!(cut_points(&[9, 3, 3, 0, 65535], 8), [0, 3, 6]);
        assert_eq!(cut_points(&[5], 0), [0]);
    }

    #[test]
    fn flushes_only_between_pieces() {
        let every: Vec<bool> = (0..4).map(|i| Flush::EveryOtherPiece.after(i)).collect();
        assert_eq!(every, [true, false, true, false]);
        assert!(!Flush::Never.after(0) && Flush::EveryPiece.after(3));
    }

    /// A sink that counts its flushes, to see the driver's policy reach the pipeline.
    #[derive(Default)]
    struct Flushes(Vec<u8>, usize);

    impl Write for Flushes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.1 += 1;
            Ok(())
        }
    }

    fn sink_flushes(flush: Flush) -> (Vec<u8>, usize) {
        let rule = UrlRule::new(ORIGIN, "https", "a.io");
        let css = rewrite_for("text/css");
        let input = format!("a{{b:url(//{ORIGIN}/x)}}").repeat(5);
        let pipeline = trusted_server_core::page::pipeline(
            Codec::Identity,
            css,
            rule,
            &PageOptions::default(),
            Flushes::default(),
        );
        let mut calls = 0;
        let (sink, _) = drive(
            pipeline,
            pieces(input.as_bytes(), &[3, 20, 40, 60]),
            flush,
            || calls += 1,
        )
        .unwrap();
        assert_eq!(calls, 5);
        (sink.0, sink.1)
    }

    #[test]
    fn the_flush_policy_reaches_the_pipeline_and_not_the_output() {
        let (never, n0) = sink_flushes(Flush::Never);
        let (every, n1) = sink_flushes(Flush::EveryPiece);
        let (other, n2) = sink_flushes(Flush::EveryOtherPiece);
        assert_eq!(never, "a{b:url(//a.io/x)}".repeat(5).into_bytes());
        assert!(never == every && every == other);
        // finish flushes the sink once; the driver adds one per flushed piece end.
        assert!(n0 < n2 && n2 < n1, "{n0} {n2} {n1}");
    }
}
