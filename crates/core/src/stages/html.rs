//! HTML stage: lol_html finds the document's structure, the [`SegmentWriter`] writes it.
//!
//! lol_html emits every token it does not modify as its original bytes, so the URL rule runs on
//! lol_html's output instead of through attribute setters: a rewritten tag keeps its own quotes,
//! spacing and attribute order, and one rule covers attributes, text, inline `<script>` and
//! `<style>` alike. lol_html's job is to say which output bytes are what. Handlers run just
//! before their token is written to the sink, so a handler can mark where the next bytes start
//! (see [`super::segments`] for what each kind of bytes gets):
//!
//! * a script's text, from the end of its start tag to the start of its end tag;
//! * a `<meta>` declaring a charset in which bytes must not be rewritten: raw from its start;
//! * a bail-out: when lol_html gives up (its memory limit), it flushes the input it holds as-is;
//!   from there on the original bytes pass through unchanged. Nothing is dropped.

use std::rc::Rc;

use lol_html::html_content::{Element, EndTag};
use lol_html::AsciiCompatibleEncoding;

use crate::body::stage::BodyStage;
use crate::content::charset_allows_rewrite;
use crate::stages::charset::declared_charset;
use crate::stages::rsc::RscReport;
use crate::stages::segments::{Segment, SegmentWriter};
use crate::stages::staging::{StagedParser, WRITE_SLICE};
use crate::url_rewrite::UrlRule;

/// lol_html's own buffer limit (a single tag or comment larger than this makes it bail out to
/// pass-through). Real tags are bytes to kilobytes long.
const MAX_PARSER_MEMORY: usize = 8 << 20;

/// The staged output, marked by `(absolute offset, kind of the bytes from there)` in offset
/// order (see [`super::staging`]). Text handlers are deliberately not used: lol_html
/// re-serializes a handled text chunk from its decoded form, which would turn invalid UTF-8
/// into U+FFFD.
type Staging = super::staging::Staging<(usize, Segment)>;

/// What the HTML stage (and the lazy HTML stage in front of it) did with a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HtmlReport {
    /// Whether lol_html read the page's structure (always, for [`HtmlStage`]; the lazy stage
    /// may not have handed over).
    pub structured: bool,
    /// Whether the lazy stage read the page's structure itself, byte by byte, and lol_html
    /// never ran (a Next.js page, usually; see `super::lazy_html`).
    pub scanned: bool,
    /// Set when lol_html gave up and the rest of the document passed through as-is.
    pub bail_out: Option<String>,
    /// What the Next.js Flight rewriting did (all zero for a page without Flight scripts).
    pub rsc: RscReport,
}

/// The streaming HTML rewriter. See the module docs.
pub struct HtmlStage {
    parser: StagedParser<(usize, Segment)>,
    segments: SegmentWriter,
    /// Every mark so far, at its offset in the document, for tests.
    #[cfg(test)]
    pub(crate) marks: Vec<(usize, Segment)>,
}

impl std::fmt::Debug for HtmlStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HtmlStage")
            .field("segments", &self.segments)
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
            segments: SegmentWriter::new(rule, encoding, flight_limit),
            #[cfg(test)]
            marks: Vec::new(),
        }
    }

    /// Ends the document and returns every mark lol_html's handlers made, at their offsets.
    #[cfg(test)]
    pub(crate) fn into_marks(mut self) -> Vec<(usize, Segment)> {
        let mut out = Vec::new();
        if self.parser.end() {
            self.drain(&mut out);
        }
        self.marks
    }

    /// Why lol_html gave up, if it did (the rest of the document then passed through).
    #[cfg(test)]
    pub fn bail_out_reason(&self) -> Option<&str> {
        self.parser.gave_up()
    }

    /// Writes the staged output according to its marks.
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
            #[cfg(test)]
            self.marks.push((offset, segment));
            let at = at.max(start);
            self.segments.write(&bytes[start..at], out);
            self.segments.enter(segment, out);
            start = at;
            kept = i + 1;
        }
        self.segments.write(&bytes[start..], out);
        *base += bytes.len();
        bytes.clear();
        marks.drain(..kept);
        self.segments.end_batch(out);
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
        let bail_out = self.parser.gave_up().map(str::to_owned);
        HtmlReport {
            structured: true,
            scanned: false,
            bail_out,
            rsc: self.segments.finish(out),
        }
    }
}

/// The charset a `<meta charset>` or `<meta http-equiv="content-type" content="...">` declares.
fn meta_charset(el: &Element) -> Option<String> {
    declared_charset(|name| el.get_attribute(name))
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
}
