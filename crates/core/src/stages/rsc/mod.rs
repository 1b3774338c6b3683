//! Next.js React Server Components: URLs inside Flight payloads, rewritten as they stream.
//!
//! A Next.js page carries its RSC payload as a Flight row stream, inline in
//! `self.__next_f.push([1,"…"])` scripts ([`InlineFlight`], fed by the HTML stage), and every
//! client-side navigation fetches the same rows as a `text/x-component` response
//! ([`FlightStage`]). Both carry origin URLs that React compares with the server HTML during
//! hydration, so they get the same URL rule as the HTML around them.
//!
//! * `js_string`: the push call's string literal, decoded and re-encoded in Next.js's style;
//! * `rows`: the row parser and rewriter, which fixes `T` row lengths and holds only open
//!   `T` rows;
//! * `inline`: the script wrapper, and holding output across scripts while a row is open;
//! * `escaped`: the inline path's fast reader, which rewrites the rows of a push string
//!   without decoding it, and hands the rest to the three above;
//! * `escaped_scan`: how far the fast reader can read a push string's text, 64 bytes at a
//!   time.

mod escaped;
mod escaped_scan;
mod inline;
mod js_string;
mod rows;

pub(crate) use inline::InlineFlight;

/// Turns the inline Flight fast reader on or off for this thread (feature `reference-paths`),
/// for a fuzzer that compares it with the decoding path.
#[cfg(feature = "reference-paths")]
pub fn use_fast_reader(on: bool) {
    inline::FAST_PATH.with(|fast| fast.set(on));
}
/// Next.js's string escaping, written independently of the stage's encoder, for tests.
#[cfg(test)]
pub(crate) use js_string::tests::next_js_escape;

use crate::body::stage::BodyStage;
use crate::url_rewrite::UrlRule;
use rows::RowRewriter;

/// A `text/x-component` body: the row rewriter on the body itself.
#[derive(Debug)]
pub(crate) struct FlightStage {
    rows: RowRewriter,
}

impl FlightStage {
    pub(crate) fn new(rule: UrlRule, max_held: usize) -> Self {
        FlightStage {
            rows: RowRewriter::new(rule, max_held),
        }
    }
}

impl BodyStage for FlightStage {
    type Report = RscReport;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.rows.write(input, out);
    }

    fn finish(mut self, out: &mut Vec<u8>) -> RscReport {
        self.rows.finish(out);
        RscReport {
            peak_held: self.rows.peak_held(),
            degraded: self.rows.degraded(),
        }
    }
}

/// What the RSC rewriting did, for the request log and the benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RscReport {
    /// Largest number of bytes held back at once.
    pub peak_held: usize,
    /// Why rewriting degraded to passing original bytes, the first time it did.
    pub degraded: Option<&'static str>,
}
