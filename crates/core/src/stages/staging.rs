//! lol_html as a marker, not a rewriter: the stages that only need to know *where* things are
//! (the HTML stage's Flight scripts, the creative stage's URL attributes and sheets) let
//! lol_html pass every byte through unchanged into a [`Staging`] buffer, while their handlers
//! record marks at absolute source offsets. Since no token is modified, a token's source
//! location is also where its bytes sit in the staged output, and the stage rewrites the marked
//! ranges itself as it drains the buffer.

use std::cell::RefCell;
use std::rc::Rc;

use lol_html::OutputSink;

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
