//! The HTML stage without lol_html: [`HtmlScan`] reads the structure, [`SegmentWriter`]
//! writes it.
//!
//! [`HtmlStage`](super::html::HtmlStage) is lol_html's marks fed to a [`SegmentWriter`]; this
//! is the byte-level reading's marks fed to one. Where the two readings give the same marks
//! for the same bytes, the two stages give the same output; where the byte-level reading
//! cannot be sure it does, it stops, and the lazy stage hands the page to lol_html (see
//! [`super::lazy_html`]).
//!
//! A construct not wholly in hand at the end of a write (a tag, a comment, a `</script` that
//! may end a script) is held, from its `<`, and read again with the next write: the writer
//! gets only bytes whose marks are final, so what it wrote is a prefix of what it writes for
//! any continuation of the document. At the end of the document what is held is text of the
//! current kind, as lol_html emits an unfinished tag.

use lol_html::AsciiCompatibleEncoding;

use crate::stages::html::HtmlReport;
use crate::stages::html_scan::{HtmlScan, Scan};
use crate::stages::segments::{Segment, SegmentWriter};
use crate::url_rewrite::UrlRule;

/// The byte-level HTML stage; see the module docs.
#[derive(Debug)]
pub(crate) struct ScannedHtml {
    scan: HtmlScan,
    segments: SegmentWriter,
    /// The end of the input from the start of a construct not yet wholly read.
    held: Vec<u8>,
    /// Scratch: the marks of one write.
    marks: Vec<(usize, Segment)>,
    /// Every mark so far, at its offset in the document, and the offset of `held`'s first
    /// byte, for tests.
    #[cfg(test)]
    pub(crate) all_marks: (Vec<(usize, Segment)>, usize),
}

impl ScannedHtml {
    /// A stage for a document in `encoding`, with [`HtmlStage::new`]'s arguments.
    ///
    /// [`HtmlStage::new`]: super::html::HtmlStage::new
    pub(crate) fn new(
        rule: UrlRule,
        encoding: AsciiCompatibleEncoding,
        flight_limit: Option<usize>,
    ) -> Self {
        ScannedHtml {
            scan: HtmlScan::new(encoding.into()),
            segments: SegmentWriter::new(rule, encoding, flight_limit),
            held: Vec::new(),
            marks: Vec::new(),
            #[cfg(test)]
            all_marks: (Vec::new(), 0),
        }
    }

    /// Rewrites `input`, appending decided output to `out`. `false` when lol_html must read
    /// the document: the output so far is still a prefix of lol_html's stage's, but this stage
    /// is done.
    pub(crate) fn write(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        let joined = !self.held.is_empty();
        if joined {
            self.held.extend_from_slice(input);
        }
        let work: &[u8] = if joined { &self.held } else { input };
        self.marks.clear();
        let decided = match self.scan.scan(work, &mut self.marks) {
            Scan::Undecidable => return false,
            Scan::Upto(decided) => decided,
        };
        #[cfg(test)]
        {
            let (all, base) = &mut self.all_marks;
            all.extend(self.marks.iter().map(|&(at, s)| (*base + at, s)));
            *base += decided;
        }
        let mut start = 0;
        for &(at, segment) in &self.marks {
            self.segments.write(&work[start..at], out);
            self.segments.enter(segment, out);
            start = at;
        }
        self.segments.write(&work[start..decided], out);
        self.segments.end_batch(out);
        if joined {
            self.held.drain(..decided);
        } else {
            self.held.extend_from_slice(&input[decided..]);
        }
        true
    }

    /// Ends the document.
    pub(crate) fn finish(mut self, out: &mut Vec<u8>) -> HtmlReport {
        // A construct cut off by the end of the document is text of the current kind.
        self.segments.write(&self.held, out);
        HtmlReport {
            structured: false,
            scanned: true,
            bail_out: None,
            rsc: self.segments.finish(out),
        }
    }
}
