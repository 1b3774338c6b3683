//! A publisher page's body: which stages it gets for its kind of content, with which options,
//! and what they say about it. This is the page flow's composition root over the engine
//! (`crate::body`) and the stages (`crate::stages`); neither knows it.
//!
//! [`compose`] picks the stages from the body's plan ([`Rewrite`]):
//!
//! * HTML: the early-hints head reader (with [`PageOptions::learn_hints`]), then the lazy HTML
//!   rewriter (the URL rule, and lol_html with the Next.js Flight rewriting when the page needs
//!   its structure), then the script tag's injection (with [`PageOptions::inject`]), then
//!   the hold on the tail from `</body>` on (with [`PageOptions::hold_tail`]);
//! * text (CSS, JavaScript, JSON, …): the URL rule alone;
//! * a Next.js Flight response: the Flight row rewriter;
//!
//! each behind the UTF-16 rule (a body starting with a UTF-16 byte order mark passes through).
//! The stages are chosen once per body and dispatched statically; [`PageReport`] gathers their
//! reports for the adapter's log line and the early-hints phase. [`pipeline`] is the engine
//! running them.
//!
//! A page built with [`PageOptions::hold_tail`] ends in two steps, so that something decided
//! only after the origin's body (a navigation auction's bids) goes in just before `</body>`:
//! [`end_page`] when the origin's body has ended writes everything before the hold point, and
//! [`PageEnding::finish`] writes the insertion, then the held tail, and ends the body.

use std::io::Write;

use trusted_server_settings::Nextjs;

use crate::body::pipeline::{BodyPipeline, BodyReport, Ending, PipelineError};
use crate::body::stage::{BodyStage, Guard, Then};
use crate::content::{Codec, Rewrite};
use crate::stages::hints::HintsStage;
use crate::stages::html::HtmlReport;
use crate::stages::inject::{InjectStage, Injected, Injection};
use crate::stages::lazy_html::{LazyHtml, LOOKBACK_MAX};
use crate::stages::rsc::{FlightStage, RscReport};
use crate::stages::tail::{HeldTail, TailPoint, TailStage};
use crate::stages::text::TextStage;
use crate::stages::utf16::{utf16_guard, NotUtf16};
use crate::url_rewrite::UrlRule;

/// Everything a page's stages need besides the body's own plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageOptions {
    /// How Next.js payloads are handled (`[integrations.nextjs]`).
    pub nextjs: Nextjs,
    /// Most bytes of an HTML page kept while the URL rule alone suffices, so that lol_html can
    /// replay them if the page turns out to need its structure (see the `lazy_html` stage).
    /// The output does not depend on it; 0 runs lol_html from the first byte. Default
    /// 2 MiB.
    pub html_lookback: usize,
    /// The script tag to put at the start of an HTML page's `<head>` (see the `inject`
    /// stage); `None` for a response that must not get it. Only HTML bodies get it.
    pub inject: Option<Injection>,
    /// Collect the page's `<link rel=preload|modulepreload|preconnect>` hints from its head
    /// (`crate::hints`), reported in [`PageReport::hints`]. HTML only; it reads the decoded
    /// bytes and never changes the output. Default `false`.
    pub learn_hints: bool,
    /// Hold an HTML page's output from its first `</body>` end tag on (at most
    /// `stages::tail::TAIL_MAX` bytes), for [`PageEnding::finish`] to insert something
    /// before it. Bytes before the end tag leave as they do without it. Not for a UTF-16
    /// page, nor for text or Flight bodies. Default `false`.
    pub hold_tail: bool,
}

impl Default for PageOptions {
    fn default() -> Self {
        PageOptions {
            nextjs: trusted_server_settings::Settings::DEFAULT
                .integrations
                .nextjs,
            html_lookback: LOOKBACK_MAX,
            inject: None,
            learn_hints: false,
            hold_tail: false,
        }
    }
}

/// What a page's stages did with its body (for logs, and the hints the page carried).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageReport {
    /// The body started with a UTF-16 byte order mark and passed through unchanged.
    pub utf16: bool,
    /// Set when lol_html gave up and the rest of the document passed through as-is.
    pub html_bail_out: Option<String>,
    /// For a body the HTML stage rewrote (`None` for text, Flight, and a UTF-16 body passed
    /// through): whether it needed lol_html's view of its structure, because it had a `<meta>`
    /// that may declare a charset, markup the lazy stage's own reading cannot follow, or grew
    /// past 2 MiB. `false`: the URL rule alone, or with the lazy stage's own reading of the
    /// structure (`html_scanned`, for a Next.js Flight marker), produced the same output for
    /// less.
    pub html_structured: Option<bool>,
    /// For such a body: whether the lazy HTML stage read its structure itself, byte by byte,
    /// and lol_html never ran (`html_structured` is then `Some(false)`).
    pub html_scanned: bool,
    /// What the Next.js payload rewriting did: bytes held at most, and whether it degraded.
    pub rsc: RscReport,
    /// For an HTML body given an [`Injection`]: whether the tag went in, or why not.
    pub injected: Option<Injected>,
    /// With [`PageOptions::learn_hints`], for an HTML body: the early hints found in its
    /// head, URLs rewritten first-party (unbounded here; `crate::hints::Hints` bounds them).
    pub hints: Vec<String>,
    /// With [`PageOptions::hold_tail`], for an HTML body (not UTF-16): where the insertion
    /// goes (before `</body>`, or at the end), and how many bytes were held.
    pub tail: Option<HeldTail>,
}

/// The engine running a page's stages ([`pipeline`]).
pub type PagePipeline<W> = BodyPipeline<W, PageStages>;

/// A pipeline for a page already rewritten (a copy from the cache), to insert something before
/// its `</body>` as [`end_page`] and [`PageEnding::finish`] do for a page from the origin:
/// decode `codec`, hold the tail from the first `</body>` on (the tail stage alone: the
/// bytes were rewritten when they were stored, so nothing else changes), re-encode, write to
/// `sink`. A UTF-16 page passes through, its tail not held.
pub fn stored_pipeline<W: Write>(codec: Codec, sink: W) -> PagePipeline<W> {
    let stages = PageStages(utf16_guard(Rewriter::Stored(TailStage::new())));
    BodyPipeline::new(codec, stages, sink)
}

/// A pipeline for a page's body: decode `codec`, the stages [`compose`] picks for `rewrite`,
/// re-encode, write to `sink`. Its report's `stages` is a [`PageReport`].
pub fn pipeline<W: Write>(
    codec: Codec,
    rewrite: Rewrite,
    rule: UrlRule,
    options: &PageOptions,
    sink: W,
) -> PagePipeline<W> {
    BodyPipeline::new(codec, compose(rewrite, rule, options), sink)
}

/// The stages a page's body gets (see the module docs), as one stage reporting a
/// [`PageReport`].
pub fn compose(rewrite: Rewrite, rule: UrlRule, options: &PageOptions) -> PageStages {
    let nextjs = &options.nextjs;
    let rewriter = match rewrite {
        Rewrite::Html(encoding) => {
            let flight_limit = nextjs.enabled.then_some(nextjs.max_held_bytes as usize);
            // Early hints are read from the origin's head before the rewrite (their URLs are
            // rewritten when reported); the stage steps aside once the head is complete.
            let hints = options.learn_hints.then(|| HintsStage::new(rule.clone()));
            let html = LazyHtml::new(rule, encoding, flight_limit, options.html_lookback);
            // The injection runs after the rewriter, on its output: the tag is never
            // rewritten, and the plain path stays lol_html-free.
            let inject = options.inject.as_ref().map(InjectStage::new);
            // The hold runs last, on the page's final bytes.
            let tail = options.hold_tail.then(TailStage::new);
            Rewriter::Html(hints.then(html).then(inject).then(tail))
        }
        Rewrite::Text => Rewriter::Text(TextStage::new(rule)),
        Rewrite::Flight => Rewriter::Flight(FlightStage::new(rule, nextjs.max_held_bytes as usize)),
    };
    PageStages(utf16_guard(rewriter))
}

/// A page's stages, chosen by [`compose`]: one [`BodyStage`] whose report is a
/// [`PageReport`].
pub struct PageStages(Guard<NotUtf16, Rewriter>);

impl std::fmt::Debug for PageStages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageStages").finish_non_exhaustive()
    }
}

/// The rewriter for each kind of content (statically dispatched: one match per write).
enum Rewriter {
    Html(HtmlStages),
    Text(TextStage),
    Flight(FlightStage),
    /// A page rewritten before ([`stored_pipeline`]): only the tail's hold.
    Stored(TailStage),
}

/// An HTML page's stages: the head reader, the rewriter, the injection, the tail's hold.
type HtmlStages =
    Then<Then<Then<Option<HintsStage>, LazyHtml>, Option<InjectStage>>, Option<TailStage>>;

impl BodyStage for Rewriter {
    type Report = PageReport;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match self {
            Rewriter::Html(stages) => stages.write(input, out),
            Rewriter::Text(stage) => stage.write(input, out),
            Rewriter::Flight(stage) => stage.write(input, out),
            Rewriter::Stored(stage) => stage.write(input, out),
        }
    }

    fn finish(self, out: &mut Vec<u8>) -> PageReport {
        match self {
            Rewriter::Html(stages) => {
                let (((hints, html), injected), tail) = stages.finish(out);
                let HtmlReport {
                    structured,
                    scanned,
                    bail_out,
                    rsc,
                } = html;
                PageReport {
                    html_bail_out: bail_out,
                    html_structured: Some(structured),
                    html_scanned: scanned,
                    rsc,
                    injected,
                    hints: hints.unwrap_or_default(),
                    tail,
                    ..PageReport::default()
                }
            }
            Rewriter::Text(stage) => {
                stage.finish(out);
                PageReport::default()
            }
            Rewriter::Flight(stage) => PageReport {
                rsc: stage.finish(out),
                ..PageReport::default()
            },
            Rewriter::Stored(stage) => PageReport {
                tail: Some(stage.finish(out)),
                ..PageReport::default()
            },
        }
    }

    fn passes_through(&self) -> bool {
        match self {
            Rewriter::Html(stages) => stages.passes_through(),
            Rewriter::Text(stage) => stage.passes_through(),
            Rewriter::Flight(stage) => stage.passes_through(),
            Rewriter::Stored(stage) => stage.passes_through(),
        }
    }
}

impl BodyStage for PageStages {
    type Report = PageReport;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.0.write(input, out);
    }

    fn finish(self, out: &mut Vec<u8>) -> PageReport {
        self.0.finish(out).unwrap_or(PageReport {
            utf16: true,
            ..PageReport::default()
        })
    }

    fn passes_through(&self) -> bool {
        self.0.passes_through()
    }
}

/// A page whose origin body has ended ([`end_page`]): everything before the hold point is
/// written; the insertion and the held tail wait for [`PageEnding::finish`].
#[derive(Debug)]
pub struct PageEnding<W: Write>(Ending<W, PageStages>);

/// Ends the origin's body for `pipeline`: ends the decoder and the stages, and writes
/// (encoded) everything before the hold point; nothing reaches the sink beyond what
/// [`BodyPipeline::push`] would send until [`PageEnding::flush`] or [`PageEnding::finish`].
/// For a page without [`PageOptions::hold_tail`] this holds nothing back.
///
/// # Errors
/// See [`PipelineError`] (a truncated compressed body is an error here).
pub fn end_page<W: Write>(pipeline: PagePipeline<W>) -> Result<PageEnding<W>, PipelineError> {
    pipeline.end_stages().map(PageEnding)
}

impl<W: Write> PageEnding<W> {
    /// Where [`Self::finish`] will write its insertion: `None` when it will not (the tail was
    /// not held: no [`PageOptions::hold_tail`], not HTML, or a UTF-16 page).
    pub fn tail_point(&self) -> Option<TailPoint> {
        self.0.stages().tail.as_ref().map(|tail| tail.point)
    }

    /// Sends everything written so far (all bytes before the hold point) and flushes the sink.
    ///
    /// # Errors
    /// See [`PipelineError`].
    pub fn flush(&mut self) -> Result<(), PipelineError> {
        self.0.flush()
    }

    /// Bytes written to the sink so far (for tests of when bytes reach it).
    #[cfg(test)]
    fn downstream_sink_len(&self) -> u64 {
        self.0.bytes_out()
    }

    /// Writes `insertion` at the hold point (before the first `</body>` end tag, or at the
    /// end: [`Self::tail_point`]), then the held tail, and ends the body: the sink and the
    /// report, as [`BodyPipeline::finish`] gives them. An empty `insertion` gives the output
    /// the page would have had without the hold. When the tail was not held, `insertion` is
    /// not written.
    ///
    /// # Errors
    /// See [`PipelineError`].
    pub fn finish(mut self, insertion: &str) -> Result<(W, BodyReport<PageReport>), PipelineError> {
        if let Some(tail) = self.0.stages_mut().tail.as_mut() {
            let held = std::mem::take(&mut tail.bytes);
            self.0.write(insertion.as_bytes())?;
            self.0.write(&held)?;
        }
        self.0.finish()
    }
}

#[cfg(test)]
mod tail_tests;
#[cfg(test)]
mod tests;
