//! The output side of the HTML stages: a document's bytes in order, cut by *marks* into
//! segments, each written the way its kind says.
//!
//! Something else reads the document's structure and says where each segment starts: lol_html
//! in [`HtmlStage`](super::html::HtmlStage), or the byte-level reading of
//! [`html_scan`](super::html_scan) in the lazy stage. Given the same bytes and the same marks,
//! this writer gives the same output however the bytes and marks are handed to it (in one
//! batch or many, cut anywhere), which is what lets the lazy stage swap one reader for the
//! other mid-document:
//!
//! * markup and ordinary script text: the URL rule, one replacer across all of it;
//! * a script's text: its first bytes decide whether it is a Next.js Flight payload
//!   (`self.__next_f.push(`). Those scripts carry length-prefixed `T` rows that a plain
//!   replacement would corrupt, so their text goes to the RSC stage ([`InlineFlight`]) instead,
//!   which also decides where output is held while a row is open across scripts. Without it
//!   (disabled, or a document that is not UTF-8) they pass through untouched.
//! * raw: from a lol_html bail-out or a `<meta>` declaring a charset in which bytes must not be
//!   rewritten, everything passes through as it came, to the end.

use lol_html::AsciiCompatibleEncoding;

use crate::stages::rsc::{InlineFlight, RscReport};
use crate::url_rewrite::StreamReplacer;
use crate::url_rewrite::UrlRule;

/// While a Flight row is held, markup behind it is passed on in pieces of at most this many
/// bytes, with the cap checked after each: outside a push string the cap is then passed by at
/// most this much, however large the markup between two pushes (or a token lol_html held).
pub(crate) const MARKUP_STEP: usize = 512;

/// Script text longer than this without the Flight marker is an ordinary script.
const MAX_SCRIPT_SNIFF: usize = 64;

/// What a Next.js Flight script's text starts with (after whitespace).
pub(crate) const FLIGHT_MARKER: &[u8] = b"self.__next_f.push(";

/// What the bytes from a mark on are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Tags, text, comments: the URL rule applies.
    Markup,
    /// The text of a `<script>`: the URL rule applies unless it is a Flight payload.
    ScriptText,
    /// Passes through untouched, to the end: input lol_html flushed unprocessed after bailing
    /// out, or everything after a `<meta>` declaring a charset in which byte-wise rewriting
    /// could corrupt text.
    Raw,
}

/// Whether the current script is a Flight payload, once known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Undecided,
    Flight,
    Ordinary,
}

/// Writes a document's segments; see the module docs.
#[derive(Debug)]
pub(crate) struct SegmentWriter {
    replacer: StreamReplacer,
    /// Kind of the bytes written next.
    current: Segment,
    script: Script,
    /// Start of an undecided script's text, held until its kind is known.
    script_head: Vec<u8>,
    /// The RSC stage, created at the first Flight script.
    flight: Option<InlineFlight>,
    /// `Some(max held bytes)` when Flight scripts are rewritten.
    flight_limit: Option<usize>,
}

impl SegmentWriter {
    /// A writer for a document in `encoding`, starting in markup. With `flight_limit`, Next.js
    /// Flight scripts in a UTF-8 document are rewritten, holding at most that many bytes;
    /// otherwise they pass through untouched.
    pub(crate) fn new(
        rule: UrlRule,
        encoding: AsciiCompatibleEncoding,
        flight_limit: Option<usize>,
    ) -> Self {
        // The browser turns a Flight string into bytes as UTF-8; in another charset the
        // script's bytes are not the payload's.
        let flight_limit = flight_limit.filter(|_| encoding == AsciiCompatibleEncoding::utf_8());
        SegmentWriter {
            replacer: StreamReplacer::new(rule),
            current: Segment::Markup,
            script: Script::Ordinary,
            script_head: Vec::new(),
            flight: None,
            flight_limit,
        }
    }

    /// The next bytes are of kind `segment`.
    pub(crate) fn enter(&mut self, segment: Segment, out: &mut Vec<u8>) {
        if self.script == Script::Undecided {
            // The script ended before its kind was known: too short to be a Flight payload.
            self.script = Script::Ordinary;
            self.release_script_head(out);
        }
        if self.current == Segment::Raw {
            return; // Raw is final.
        }
        if let (Segment::ScriptText, Script::Flight, Some(flight)) =
            (self.current, self.script, &mut self.flight)
        {
            flight.script_end(out);
        }
        self.current = segment;
        match segment {
            Segment::ScriptText => self.script = Script::Undecided,
            Segment::Markup => self.script = Script::Ordinary,
            Segment::Raw => {
                self.script = Script::Ordinary;
                match &mut self.flight {
                    Some(flight) => {
                        self.replacer.flush(flight.target(out));
                        flight.stop("the rest of the document passes through as it is", out);
                    }
                    None => self.replacer.flush(out),
                }
            }
        }
    }

    /// Writes the next bytes of the document, of the current kind.
    pub(crate) fn write(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        match (self.current, self.script) {
            (Segment::Raw, _) => out.extend_from_slice(bytes),
            (Segment::ScriptText, Script::Flight) => match &mut self.flight {
                Some(flight) => flight.script_text(bytes, out),
                None => out.extend_from_slice(bytes),
            },
            (Segment::ScriptText, Script::Undecided) => {
                // Hold only as much as the decision needs, not the whole script.
                let wanted = (MAX_SCRIPT_SNIFF + 1).saturating_sub(self.script_head.len());
                let (probe, rest) = bytes.split_at(bytes.len().min(wanted));
                self.script_head.extend_from_slice(probe);
                self.script = match flight_marker(&self.script_head) {
                    Some(true) => {
                        // Markup held back for a possible match ends here.
                        match (&mut self.flight, self.flight_limit) {
                            (Some(flight), _) => self.replacer.flush(flight.target(out)),
                            (None, Some(limit)) => {
                                self.replacer.flush(out);
                                let rule = self.replacer.rule().clone();
                                self.flight = Some(InlineFlight::new(rule, limit));
                            }
                            (None, None) => self.replacer.flush(out),
                        }
                        Script::Flight
                    }
                    Some(false) => Script::Ordinary,
                    None if self.script_head.len() > MAX_SCRIPT_SNIFF => Script::Ordinary,
                    None => return,
                };
                self.release_script_head(out);
                self.write(rest, out);
            }
            _ => match &mut self.flight {
                Some(flight) if flight.holding() => {
                    for piece in bytes.chunks(MARKUP_STEP) {
                        self.replacer.write(piece, flight.target(out));
                        flight.after_markup(out);
                    }
                }
                Some(flight) => self.replacer.write(bytes, flight.target(out)),
                None => self.replacer.write(bytes, out),
            },
        }
    }

    /// Ends a batch of writes: while a Flight row is held, the cap is checked.
    pub(crate) fn end_batch(&mut self, out: &mut Vec<u8>) {
        if let Some(flight) = &mut self.flight {
            flight.after_markup(out);
        }
    }

    /// Ends the document; reports what the RSC stage did.
    pub(crate) fn finish(mut self, out: &mut Vec<u8>) -> RscReport {
        if self.script == Script::Undecided {
            // The document ended inside a script too short to be a Flight payload.
            self.script = Script::Ordinary;
            self.release_script_head(out);
        }
        match &mut self.flight {
            Some(flight) => {
                self.replacer.flush(flight.target(out));
                flight.finish(out);
                RscReport {
                    peak_held: flight.peak_held(),
                    degraded: flight.degraded(),
                }
            }
            None => {
                self.replacer.flush(out);
                RscReport::default()
            }
        }
    }

    /// Emits the held start of a script whose kind is now decided, keeping the buffer.
    fn release_script_head(&mut self, out: &mut Vec<u8>) {
        let head = std::mem::take(&mut self.script_head);
        self.write(&head, out);
        self.script_head = head;
        self.script_head.clear();
    }
}

/// `Some(true)` if the script text starts (after whitespace) with the Flight push call,
/// `Some(false)` if it cannot, `None` if more bytes are needed.
fn flight_marker(text: &[u8]) -> Option<bool> {
    let start = text.iter().position(|b| !b.is_ascii_whitespace())?;
    let text = &text[start..];
    let n = text.len().min(FLIGHT_MARKER.len());
    if text[..n] != FLIGHT_MARKER[..n] {
        return Some(false);
    }
    (n == FLIGHT_MARKER.len()).then_some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flight_marker_needs_enough_bytes() {
        assert_eq!(flight_marker(b"  self.__next"), None);
        assert_eq!(flight_marker(b"\nself.__next_f.push([1,"), Some(true));
        assert_eq!(
            flight_marker(b"(self.__next_f=self.__next_f||[]).push([0])"),
            Some(false)
        );
        assert_eq!(flight_marker(b"var x"), Some(false));
        assert_eq!(flight_marker(b"   "), None);
    }
}
