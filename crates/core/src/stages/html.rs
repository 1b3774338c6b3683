//! HTML stage: lol_html finds the document's structure, the [`StreamReplacer`] rewrites URLs.
//!
//! lol_html emits every token it does not modify as its original bytes, so the URL rule runs on
//! lol_html's output instead of through attribute setters: a rewritten tag keeps its own quotes,
//! spacing and attribute order, and one rule covers attributes, text, inline `<script>` and
//! `<style>` alike. lol_html's job is to say which output bytes are what. Handlers run just
//! before their token is written to the sink, so a handler can mark where the next bytes start:
//!
//! * a script's text: the first bytes decide whether it is a Next.js Flight payload
//!   (`self.__next_f.push(`). Those scripts carry length-prefixed `T` rows that a plain
//!   replacement would corrupt, so their text goes to the RSC stage ([`InlineFlight`]) instead,
//!   which also decides where output is held while a row is open across scripts. Without it
//!   (disabled, or a document that is not UTF-8) they pass through untouched.
//! * a bail-out: when lol_html gives up (its memory limit), it flushes the input it holds as-is;
//!   from there on the original bytes pass through unchanged. Nothing is dropped.

use std::rc::Rc;

use lol_html::html_content::{Element, EndTag};
use lol_html::AsciiCompatibleEncoding;

use crate::body::stage::BodyStage;
use crate::content::charset_allows_rewrite;
use crate::stages::charset::declared_charset;
use crate::stages::rsc::{InlineFlight, RscReport};
use crate::stages::staging::{StagedParser, WRITE_SLICE};
use crate::url_rewrite::{StreamReplacer, UrlRule};

/// lol_html's own buffer limit (a single tag or comment larger than this makes it bail out to
/// pass-through). Real tags are bytes to kilobytes long.
const MAX_PARSER_MEMORY: usize = 8 << 20;

/// While a Flight row is held, markup behind it is passed on in pieces of at most this many
/// bytes, with the cap checked after each: outside a push string the cap is then passed by at
/// most this much, however large the markup between two pushes (or a token lol_html held).
pub(crate) const MARKUP_STEP: usize = 512;

/// Script text longer than this without the Flight marker is an ordinary script.
const MAX_SCRIPT_SNIFF: usize = 64;

/// What a Next.js Flight script's text starts with (after whitespace).
pub(crate) const FLIGHT_MARKER: &[u8] = b"self.__next_f.push(";

/// What the bytes from a given offset on are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Segment {
    /// Tags, text, comments: the URL rule applies.
    Markup,
    /// The text of a `<script>`: the URL rule applies unless it is a Flight payload.
    ScriptText,
    /// Passes through untouched, to the end: input lol_html flushed unprocessed after bailing
    /// out, or everything after a `<meta>` declaring a charset in which byte-wise rewriting
    /// could corrupt text.
    Raw,
}

/// The staged output, marked by `(absolute offset, kind of the bytes from there)` in offset
/// order (see [`super::staging`]). Text handlers are deliberately not used: lol_html
/// re-serializes a handled text chunk from its decoded form, which would turn invalid UTF-8
/// into U+FFFD.
type Staging = super::staging::Staging<(usize, Segment)>;

/// What the HTML stage (and the lazy HTML stage in front of it) did with a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HtmlReport {
    /// Whether the page needed lol_html's view of its structure (always, for [`HtmlStage`];
    /// the lazy stage may not have handed over).
    pub structured: bool,
    /// Set when lol_html gave up and the rest of the document passed through as-is.
    pub bail_out: Option<String>,
    /// What the Next.js Flight rewriting did (all zero for a page without Flight scripts).
    pub rsc: RscReport,
}

/// Whether the current script is a Flight payload, once known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Undecided,
    Flight,
    Ordinary,
}

/// The streaming HTML rewriter. See the module docs.
pub struct HtmlStage {
    parser: StagedParser<(usize, Segment)>,
    replacer: StreamReplacer,
    /// Kind of the bytes at the start of the next staging batch.
    current: Segment,
    script: Script,
    /// Start of an undecided script's text, held until its kind is known.
    script_head: Vec<u8>,
    /// The RSC stage, created at the first Flight script.
    flight: Option<InlineFlight>,
    /// `Some(max held bytes)` when Flight scripts are rewritten.
    flight_limit: Option<usize>,
}

impl std::fmt::Debug for HtmlStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HtmlStage")
            .field("current", &self.current)
            .field("bail_out", &self.parser.gave_up())
            .finish_non_exhaustive()
    }
}

impl HtmlStage {
    /// A stage for a document in `encoding` (which must be ASCII-compatible). With
    /// `flight_limit`, Next.js Flight scripts in a UTF-8 document are rewritten, holding at most
    /// that many bytes; otherwise they pass through untouched.
    pub fn new(
        rule: UrlRule,
        encoding: AsciiCompatibleEncoding,
        flight_limit: Option<usize>,
    ) -> Self {
        // The browser turns a Flight string into bytes as UTF-8; in another charset the
        // script's bytes are not the payload's.
        let flight_limit = flight_limit.filter(|_| encoding == AsciiCompatibleEncoding::utf_8());
        let parser = StagedParser::new(
            encoding,
            MAX_PARSER_MEMORY,
            |at| (at, Segment::Raw),
            |settings, staging| {
                let on_script = Rc::clone(staging);
                let on_meta = Rc::clone(staging);
                settings
                    .append_element_content_handler(lol_html::element!(
                        "script",
                        move |el: &mut Element| {
                            // The script's text starts right after its start tag and ends where
                            // its end tag starts. A self-closing `<script/>` (in SVG) has
                            // neither.
                            let text_start = el.source_location().bytes().end;
                            let staging = Rc::clone(&on_script);
                            if let Some(handlers) = el.end_tag_handlers() {
                                on_script
                                    .borrow_mut()
                                    .mark((text_start, Segment::ScriptText));
                                handlers.push(Box::new(move |end: &mut EndTag| {
                                    staging.borrow_mut().mark((
                                        end.source_location().bytes().start,
                                        Segment::Markup,
                                    ));
                                    Ok(())
                                }));
                            }
                            Ok(())
                        }
                    ))
                    .append_element_content_handler(lol_html::element!(
                        "meta",
                        move |el: &mut Element| {
                            // A page may declare its charset only in markup. If that charset
                            // lets ASCII bytes be halves of characters (Shift_JIS, Big5, GBK,
                            // gb18030) or is not ASCII-compatible, nothing from here on is
                            // rewritten.
                            if meta_charset(el).is_some_and(|c| !charset_allows_rewrite(&c)) {
                                on_meta
                                    .borrow_mut()
                                    .mark((el.source_location().bytes().start, Segment::Raw));
                            }
                            Ok(())
                        }
                    ))
            },
        );
        HtmlStage {
            parser,
            replacer: StreamReplacer::new(rule),
            current: Segment::Markup,
            script: Script::Ordinary,
            script_head: Vec::new(),
            flight: None,
            flight_limit,
        }
    }

    /// What the RSC stage did (all zero for a page without Flight scripts).
    fn rsc_report(&self) -> RscReport {
        self.flight
            .as_ref()
            .map_or_else(RscReport::default, |f| RscReport {
                peak_held: f.peak_held(),
                degraded: f.degraded(),
            })
    }

    /// Why lol_html gave up, if it did (the rest of the document then passed through).
    #[cfg(test)]
    pub fn bail_out_reason(&self) -> Option<&str> {
        self.parser.gave_up()
    }

    /// Routes the staged output through the URL rule according to its marks.
    fn drain(&mut self, out: &mut Vec<u8>) {
        let staging = self.parser.staging();
        let mut s = staging.borrow_mut();
        let Staging { bytes, base, marks } = &mut *s;
        let mut start = 0;
        let mut kept = 0;
        for (i, &(offset, segment)) in marks.iter().enumerate() {
            let at = offset.saturating_sub(*base);
            if at > bytes.len() {
                // Not emitted yet (cannot happen: handlers run just before their token is
                // written in the same `write`); keep it for the next drain.
                kept = i;
                break;
            }
            let at = at.max(start);
            self.emit(&bytes[start..at], out);
            self.enter(segment, out);
            start = at;
            kept = i + 1;
        }
        self.emit(&bytes[start..], out);
        *base += bytes.len();
        bytes.clear();
        marks.drain(..kept);
        if let Some(flight) = &mut self.flight {
            flight.after_markup(out);
        }
    }

    fn enter(&mut self, segment: Segment, out: &mut Vec<u8>) {
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

    fn emit(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
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
                self.emit(rest, out);
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

    /// Emits the held start of a script whose kind is now decided, keeping the buffer.
    fn release_script_head(&mut self, out: &mut Vec<u8>) {
        let head = std::mem::take(&mut self.script_head);
        self.emit(&head, out);
        self.script_head = head;
        self.script_head.clear();
    }
}

impl BodyStage for HtmlStage {
    type Report = HtmlReport;

    /// Rewrites `input`, appending decided output to `out`. The input goes to lol_html in
    /// slices of at most [`WRITE_SLICE`] bytes (see its docs).
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for slice in input.chunks(WRITE_SLICE) {
            if self.parser.write(slice) {
                self.drain(out);
            } else {
                out.extend_from_slice(slice);
            }
        }
    }

    /// Ends the document; reports why lol_html gave up, if it did, and what the RSC stage did.
    fn finish(mut self, out: &mut Vec<u8>) -> HtmlReport {
        if self.parser.end() {
            self.drain(out);
        }
        if self.script == Script::Undecided {
            // The document ended inside a script too short to be a Flight payload.
            self.script = Script::Ordinary;
            self.release_script_head(out);
        }
        match &mut self.flight {
            Some(flight) => {
                self.replacer.flush(flight.target(out));
                flight.finish(out);
            }
            None => self.replacer.flush(out),
        }
        HtmlReport {
            structured: true,
            bail_out: self.parser.gave_up().map(str::to_owned),
            rsc: self.rsc_report(),
        }
    }
}

/// The charset a `<meta charset>` or `<meta http-equiv="content-type" content="...">` declares.
fn meta_charset(el: &Element) -> Option<String> {
    declared_charset(|name| el.get_attribute(name))
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
mod flight_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn utf8() -> AsciiCompatibleEncoding {
        AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap()
    }

    fn rule() -> UrlRule {
        UrlRule::new("origin.example.com", "https", "www.pub.test")
    }

    fn run(input: &[u8], chunk: usize) -> Vec<u8> {
        let mut stage = HtmlStage::new(rule(), utf8(), None);
        let mut out = Vec::new();
        for piece in input.chunks(chunk.max(1)) {
            stage.write(piece, &mut out);
        }
        stage.finish(&mut out);
        out
    }

    #[test]
    fn rewrites_attributes_text_scripts_and_styles_keeping_tag_bytes() {
        let input = "<!doctype html><html><head>\n<link rel=preload HREF='//origin.example.com/a.css'  >\
            <style>body{background:url(https://origin.example.com/bg.png)}</style>\
            <script>var u = \"https:\\/\\/origin.example.com\\/api\";</script></head>\
            <body><img   src=\"https://origin.example.com/i.jpg\"\n srcset=\"//origin.example.com/i2.jpg 2x\">\
            <p>Visit https://origin.example.com/subscribe — é ✓ 😀</p></body></html>";
        let expected = input.replace("origin.example.com", "www.pub.test");
        for chunk in [1, 3, 17, 4096] {
            assert_eq!(
                String::from_utf8(run(input.as_bytes(), chunk)).unwrap(),
                expected,
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn flight_scripts_pass_through_untouched() {
        let flight =
            "<script>self.__next_f.push([1,\"1:T2a,https://origin.example.com/abc\"])</script>";
        let ordinary = "<script>fetch(\"https://origin.example.com/x\")</script>";
        let input = format!(
            "<html><body>{flight}<a href=\"https://origin.example.com/\">{ordinary}</body></html>"
        );
        let expected = format!(
            "<html><body>{flight}<a href=\"https://www.pub.test/\">{}</body></html>",
            ordinary.replace("origin.example.com", "www.pub.test")
        );
        for chunk in 1..=input.len() {
            assert_eq!(
                String::from_utf8(run(input.as_bytes(), chunk)).unwrap(),
                expected,
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn a_page_with_nothing_to_rewrite_is_byte_identical() {
        let input = b"<!DOCTYPE html>\n<html lang=fr><HEAD><meta charset=utf-8><title>\xc3\xa9t\xc3\xa9</title>\
            <script   SRC='a.js'  defer></script><script>if (a < b && c > d) {s='\xff\xfe'}</script>\
            <style>b{c:'\xff'}</style></HEAD><body class='x'   id=y><p>caf\xff\xfe invalid utf-8</p>\
            <!-- comment https://cdn.example.org/ --><svg><path d='M0 0'/></svg></body></html>";
        for chunk in [1, 2, 5, 64, 1 << 20] {
            assert_eq!(run(input, chunk), input, "chunk {chunk}");
        }
    }

    #[test]
    fn memory_bail_out_passes_the_rest_through_without_loss() {
        // A start tag lol_html must capture whole (it has a handler) and that is larger than
        // its limit: it must bail out and lose nothing.
        let huge = "x".repeat(MAX_PARSER_MEMORY + 1024);
        let input = format!("<p>https://origin.example.com/</p><script data-x=\"{huge}\">tail https://origin.example.com/</script>");
        let mut stage = HtmlStage::new(rule(), utf8(), None);
        let mut out = Vec::new();
        for piece in input.as_bytes().chunks(65536) {
            stage.write(piece, &mut out);
        }
        assert!(stage.bail_out_reason().is_some(), "expected a bail-out");
        stage.finish(&mut out);
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.starts_with("<p>https://www.pub.test/</p>"),
            "{}",
            &out[..60]
        );
        // After the bail-out the original bytes pass through.
        assert!(out.ends_with("\">tail https://origin.example.com/</script>"));
        assert_eq!(
            out.len(),
            input.len() - "origin.example.com".len() + "www.pub.test".len()
        );
    }

    #[test]
    fn a_self_closing_svg_script_opens_no_script_text() {
        let input = "<svg><script href=\"x.js\"/></svg>self.__next_f.push( https://origin.example.com/ <script></script>";
        let expected = input.replace("origin.example.com", "www.pub.test");
        assert_eq!(
            String::from_utf8(run(input.as_bytes(), 7)).unwrap(),
            expected
        );
    }

    #[test]
    fn huge_writes_do_not_make_lol_html_give_up() {
        // A tag split across writes, then one write far larger than lol_html's buffer limit:
        // fed whole, lol_html would have to buffer the tag remainder plus the entire write.
        let text = "y".repeat(MAX_PARSER_MEMORY + 4096);
        let first = "<a href=\"https://origin.example.com/1\">one</a><p";
        let second = format!("p>{text}<a href=\"https://origin.example.com/2\">two</a>");
        let mut stage = HtmlStage::new(rule(), utf8(), None);
        let mut out = Vec::new();
        stage.write(first.as_bytes(), &mut out);
        stage.write(second.as_bytes(), &mut out);
        assert!(
            stage.bail_out_reason().is_none(),
            "{:?}",
            stage.bail_out_reason()
        );
        stage.finish(&mut out);
        let expected = format!("{first}{second}").replace("origin.example.com", "www.pub.test");
        assert!(out == expected.as_bytes());
    }

    #[test]
    fn a_meta_charset_that_is_unsafe_to_rewrite_stops_rewriting() {
        // Shift_JIS: 0x82 0xa0 is one character; ASCII-range bytes can be trail bytes.
        for meta in [
            &b"<meta charset=\"Shift_JIS\">"[..],
            b"<META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=shift_jis\">",
            b"<meta charset=big5>",
        ] {
            let head = b"<html><head><link href=\"https://origin.example.com/a.css\">";
            let rest = b"<a href=\"https://origin.example.com/\">\x82\xa0https://origin.example.com</a></head>";
            let input = [&head[..], meta, &rest[..]].concat();
            let expected = [
                &b"<html><head><link href=\"https://www.pub.test/a.css\">"[..],
                meta,
                &rest[..],
            ]
            .concat();
            for chunk in [1, 5, 4096] {
                assert!(
                    run(&input, chunk) == expected,
                    "{} chunk {chunk}",
                    String::from_utf8_lossy(meta)
                );
            }
        }
    }

    #[test]
    fn a_safe_meta_charset_keeps_rewriting() {
        for meta in [
            "<meta charset=utf-8>",
            "<meta charset=\"windows-1252\">",
            "<meta name=x content=y>",
        ] {
            let input = format!("<head>{meta}<a href=\"https://origin.example.com/\">x</a>");
            let expected = input.replace("origin.example.com", "www.pub.test");
            assert_eq!(
                String::from_utf8(run(input.as_bytes(), 3)).unwrap(),
                expected,
                "{meta}"
            );
        }
    }

    #[test]
    fn a_document_ending_inside_a_short_script_loses_nothing() {
        for input in [
            "<p>x</p><script>var u='//origin.example.com",
            "<script>self.__ne",
        ] {
            let expected = input.replace("origin.example.com", "www.pub.test");
            for chunk in [1, 4, 64] {
                assert_eq!(
                    String::from_utf8(run(input.as_bytes(), chunk)).unwrap(),
                    expected,
                    "{input} {chunk}"
                );
            }
        }
    }

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
