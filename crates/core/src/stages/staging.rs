//! lol_html as a marker, not a rewriter: the stages that only need to know *where* things are
//! (the HTML stage's Flight scripts, the creative stage's URL attributes and sheets) let
//! lol_html pass every byte through unchanged into a [`Staging`] buffer, while their handlers
//! record marks at absolute source offsets. Since no token is modified, a token's source
//! location is also where its bytes sit in the staged output, and the stage rewrites the marked
//! ranges itself as it drains the buffer.
//!
//! [`StagedParser`] is the one driver both stages use: lol_html's settings (the document's
//! encoding, no strict mode, a memory limit, giving up gracefully), the bail-out handler that
//! marks where the raw rest starts, and the write / end calls that remember why it gave up.

use std::cell::RefCell;
use std::rc::Rc;

use lol_html::errors::RewritingError;
use lol_html::html_content::BailOut;
use lol_html::{AsciiCompatibleEncoding, HtmlRewriter, MemorySettings, OutputSink, Settings};

/// Largest slice handed to lol_html in one write: lol_html appends a whole write to any
/// unfinished token it holds before parsing, so a write of any size then needs no more parser
/// memory than a slice, and the output does not depend on how the caller sized its writes.
pub(crate) const WRITE_SLICE: usize = 16 * 1024;

/// lol_html's output not yet drained, and the marks recorded against it. Shared between
/// lol_html's handlers and sink, and the stage.
#[derive(Debug)]
pub(crate) struct Staging<M> {
    /// Output not yet drained.
    pub(crate) bytes: Vec<u8>,
    /// Absolute offset of `bytes[0]`.
    pub(crate) base: usize,
    /// The stage's marks, in offset order.
    pub(crate) marks: Vec<M>,
}

impl<M> Default for Staging<M> {
    fn default() -> Self {
        Staging {
            bytes: Vec::new(),
            base: 0,
            marks: Vec::new(),
        }
    }
}

impl<M> Staging<M> {
    /// Records `mark`.
    pub(crate) fn mark(&mut self, mark: M) {
        self.marks.push(mark);
    }

    /// Absolute offset just past the staged output.
    pub(crate) fn end(&self) -> usize {
        self.base + self.bytes.len()
    }
}

/// lol_html's output sink: appends to the shared [`Staging`].
pub(crate) struct Sink<M>(pub(crate) Rc<RefCell<Staging<M>>>);

impl<M> OutputSink for Sink<M> {
    fn handle_chunk(&mut self, chunk: &[u8]) {
        self.0.borrow_mut().bytes.extend_from_slice(chunk);
    }
}

/// lol_html's settings, as both marking stages build them.
pub(crate) type ParserSettings = Settings<'static, 'static>;

/// lol_html driven over a shared [`Staging`] buffer; see the module docs. The stage feeds it
/// slices of at most [`WRITE_SLICE`] bytes and drains the staging after each.
pub(crate) struct StagedParser<M> {
    rewriter: Option<HtmlRewriter<'static, Sink<M>>>,
    staging: Rc<RefCell<Staging<M>>>,
    /// Why lol_html gave up, if it did.
    gave_up: Option<String>,
}

impl<M: 'static> StagedParser<M> {
    /// A parser for a document in `encoding` holding at most `max_memory` bytes of one token.
    /// When it gives up (over that limit, or a handler's error), it marks `raw(offset)` where
    /// the rest, passed through as it came, starts. `handlers` adds the stage's own element
    /// handlers, which record marks in the staging they are given.
    pub(crate) fn new(
        encoding: AsciiCompatibleEncoding,
        max_memory: usize,
        raw: fn(usize) -> M,
        handlers: impl FnOnce(ParserSettings, &Rc<RefCell<Staging<M>>>) -> ParserSettings,
    ) -> Self {
        let staging = Rc::new(RefCell::new(Staging::default()));
        let on_bail = Rc::clone(&staging);
        let settings = Settings::new()
            .with_encoding(encoding)
            .with_strict(false)
            .with_memory_settings(
                MemorySettings::new()
                    .with_max_allowed_memory_usage(max_memory)
                    .with_graceful_bail_out_on_memory_limit_exceeded(true),
            )
            .with_graceful_bail_out_on_content_handler_error(true)
            .append_bail_out_handler(lol_html::bail_out!(
                move |_e: &RewritingError, _b: &mut BailOut<'_>| {
                    // Handlers run before lol_html flushes the input it holds, raw.
                    let mut s = on_bail.borrow_mut();
                    let at = s.end();
                    s.mark(raw(at));
                }
            ));
        let settings = handlers(settings, &staging);
        StagedParser {
            rewriter: Some(HtmlRewriter::new(settings, Sink(Rc::clone(&staging)))),
            staging,
            gave_up: None,
        }
    }

    /// Parses `slice` (at most [`WRITE_SLICE`] bytes) into the staging; the stage drains it
    /// next. `false` when lol_html gave up before: nothing was staged, and the slice is the
    /// stage's to pass on as it is.
    pub(crate) fn write(&mut self, slice: &[u8]) -> bool {
        let Some(rewriter) = &mut self.rewriter else {
            return false;
        };
        if let Err(e) = rewriter.write(slice) {
            self.give_up(&e);
        }
        true
    }

    /// Ends the document. `true` when lol_html was still running: its last output is staged,
    /// for the stage to drain.
    pub(crate) fn end(&mut self) -> bool {
        let Some(rewriter) = self.rewriter.take() else {
            return false;
        };
        if let Err(e) = rewriter.end() {
            self.give_up(&e);
        }
        true
    }

    /// The staging the parser writes to and the handlers mark.
    pub(crate) fn staging(&self) -> Rc<RefCell<Staging<M>>> {
        Rc::clone(&self.staging)
    }

    /// Why lol_html gave up (its error), if it did: the rest of the document passed through.
    pub(crate) fn gave_up(&self) -> Option<&str> {
        self.gave_up.as_deref()
    }

    fn give_up(&mut self, error: &RewritingError) {
        // The rewriter is poisoned; later input bypasses it (see `write`).
        self.rewriter = None;
        self.gave_up = Some(error.to_string());
    }
}
