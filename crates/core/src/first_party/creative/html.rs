//! HTML creatives: lol_html says where the URL-bearing attribute values and the `<style>`
//! sheets are; this stage rewrites those bytes and passes every other byte on as it came.
//!
//! No token is modified through lol_html, so its output is its input byte for byte and the
//! source locations its handlers see are also where those bytes sit in its output (the page
//! stage, `stages/html.rs`, works the same way, through the same driver, `stages/staging.rs`). Handlers run just before their token reaches
//! the sink, so a value's bytes are all staged by the time the `write` that found them
//! returns, and are rewritten whole: an attribute value is never split. lol_html holds at
//! most [`MAX_PARSER_MEMORY`] of one token; a larger one (a huge attribute) makes it give up,
//! and from there the creative passes through unchanged, which the report says.
//!
//! An HTML `<script>` of JavaScript or JSON is held whole (up to [`script::SCRIPT_CAP`]) from
//! its start tag to its end tag and its URL literals signed (`script`), so that a literal
//! split across lol_html's text chunks is read whole.

use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::{Element, EndTag};
use lol_html::AsciiCompatibleEncoding;

use super::attrs;
use super::css::CssRewriter;
use super::entities;
use super::script;
use super::signing::{Signing, UrlUse};
use crate::stages::staging::{StagedParser, WRITE_SLICE};

/// lol_html's limit for one token. Creatives inline images as `data:` URLs of some hundreds of
/// kilobytes; a token larger than this passes through, with the rest of the creative.
pub(crate) const MAX_PARSER_MEMORY: usize = 1 << 20;

const HTML_NAMESPACE: &str = "http://www.w3.org/1999/xhtml";

/// How an attribute's value holds URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// The whole value is one URL the creative loads.
    Url,
    /// The whole value is one URL the reader follows (`<a href>`, `<area href>`).
    Link,
    /// `srcset` / `imagesrcset` candidates.
    Srcset,
    /// An inline style sheet (`style`).
    Style,
    /// A `<meta http-equiv=refresh>`'s `content`.
    Refresh,
    /// A `<base href>`: the base URL of what follows (the first one only).
    Base,
    /// `<a ping>` / `<area ping>`: URLs separated by ASCII whitespace, each a beacon.
    Ping,
}

/// What the bytes at an offset of the document are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// An attribute value, `start..end`.
    Attribute {
        start: usize,
        end: usize,
        value: Value,
    },
    /// A `<style>` element's text starts.
    Sheet(usize),
    /// A `<script>` element's text (JavaScript or JSON) starts.
    Script(usize),
    /// Markup again (a `<style>`'s end tag).
    Markup(usize),
    /// Everything from here passes through (lol_html gave up).
    Raw(usize),
}

impl Mark {
    fn at(self) -> usize {
        match self {
            Mark::Attribute { start, .. } => start,
            Mark::Sheet(at) | Mark::Script(at) | Mark::Markup(at) | Mark::Raw(at) => at,
        }
    }

    fn end(self) -> usize {
        match self {
            Mark::Attribute { end, .. } => end,
            other => other.at(),
        }
    }
}

/// The staged output and its marks (see `crate::stages::staging`).
type Staging = crate::stages::staging::Staging<Mark>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Markup,
    Sheet,
    /// A script's text, held whole in `script` to be rewritten at its end tag.
    Script,
    /// The rest of a script over [`script::SCRIPT_CAP`], passed through.
    ScriptRaw,
    Raw,
}

/// The HTML creative stage. See the module docs.
pub(crate) struct CreativeHtml {
    parser: StagedParser<Mark>,
    signing: Rc<Signing>,
    css: CssRewriter,
    /// The text of the script being read (mode `Script`).
    script: Vec<u8>,
    script_cap: usize,
    /// Set when a script went over the cap.
    script_degraded: Option<&'static str>,
    mode: Mode,
    /// The last byte passed on: the one before an attribute value, which says its quoting.
    prev: u8,
}

/// What the value of `name` on `<tag>` holds, if URLs.
fn url_value(tag: &str, name: &str, refresh: bool) -> Option<Value> {
    Some(match name {
        // `<base href>` sets how relative URLs resolve: see `Signing::base`.
        "href" if tag == "base" => Value::Base,
        "href" | "xlink:href" if tag == "a" || tag == "area" => Value::Link,
        "src" | "href" | "xlink:href" | "poster" | "action" | "formaction" | "background" => {
            Value::Url
        }
        "data" if tag == "object" => Value::Url,
        // Lazy-loading conventions: a script copies these into `src`, `srcset` or a
        // background when the element scrolls into view, so they are loads like those.
        "data-src" | "data-lazy-src" | "data-background" | "data-bg" => Value::Url,
        "srcset" | "imagesrcset" | "data-srcset" => Value::Srcset,
        // Hyperlink auditing: the browser sends a beacon to each URL when the link is followed.
        "ping" if tag == "a" || tag == "area" => Value::Ping,
        "style" => Value::Style,
        "content" if refresh => Value::Refresh,
        _ => return None,
    })
}

impl CreativeHtml {
    pub(crate) fn new(
        signing: Rc<Signing>,
        encoding: AsciiCompatibleEncoding,
        max_memory: usize,
        css_cap: usize,
        script_cap: usize,
    ) -> Self {
        let parser = StagedParser::new(encoding, max_memory, Mark::Raw, |settings, staging| {
            let on_element = Rc::clone(staging);
            settings.append_element_content_handler(lol_html::element!(
                "*",
                move |el: &mut Element| {
                    mark_element(el, &on_element);
                    Ok(())
                }
            ))
        });
        CreativeHtml {
            parser,
            css: CssRewriter::with_cap(Rc::clone(&signing), css_cap),
            signing,
            script: Vec::new(),
            script_cap,
            script_degraded: None,
            mode: Mode::Markup,
            prev: b' ',
        }
    }

    pub(crate) fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for slice in input.chunks(WRITE_SLICE) {
            if self.parser.write(slice) {
                self.drain(out);
            } else {
                out.extend_from_slice(slice);
            }
        }
    }

    /// Ends the document; says why lol_html gave up, if it did, or why a sheet's token
    /// passed through.
    pub(crate) fn finish(mut self, out: &mut Vec<u8>) -> Option<String> {
        if self.parser.end() {
            self.drain(out);
        }
        if self.mode == Mode::Sheet {
            self.css.finish(out);
        }
        // A document that ends inside a script: its text as written.
        out.append(&mut self.script);
        match self.parser.gave_up() {
            Some(error) => Some(format!(
                "the HTML parser gave up ({error}); the rest passed through unrewritten"
            )),
            None => self
                .css
                .degraded()
                .or(self.script_degraded)
                .map(str::to_owned),
        }
    }

    /// Passes the staged output on, rewriting what the marks point at.
    fn drain(&mut self, out: &mut Vec<u8>) {
        let staging = self.parser.staging();
        let mut s = staging.borrow_mut();
        let Staging { bytes, base, marks } = &mut *s;
        let mut pos = 0;
        let mut kept = marks.len();
        for (i, &mark) in marks.iter().enumerate() {
            if mark.end().saturating_sub(*base) > bytes.len() {
                // Not all staged yet (does not happen: see the module docs); next drain.
                kept = i;
                break;
            }
            let at = mark.at().saturating_sub(*base).max(pos);
            self.emit(&bytes[pos..at], out);
            pos = at;
            match mark {
                Mark::Attribute { end, value, .. } if self.mode == Mode::Markup => {
                    let end = end.saturating_sub(*base).max(at);
                    let raw = &bytes[at..end];
                    match self.rewrite_value(raw, value) {
                        Some(new) => out.extend_from_slice(&new),
                        None => out.extend_from_slice(raw),
                    }
                    if let Some(&last) = raw.last() {
                        self.prev = last;
                    }
                    pos = end;
                }
                Mark::Attribute { .. } => {}
                Mark::Sheet(_) if self.mode == Mode::Markup => self.mode = Mode::Sheet,
                Mark::Sheet(_) => {}
                Mark::Script(_) if self.mode == Mode::Markup => self.mode = Mode::Script,
                Mark::Script(_) => {}
                Mark::Markup(_) if self.mode == Mode::Sheet => {
                    self.css.finish(out);
                    self.mode = Mode::Markup;
                }
                Mark::Markup(_) if self.mode == Mode::Script => {
                    self.end_script(out);
                    self.mode = Mode::Markup;
                }
                Mark::Markup(_) if self.mode == Mode::ScriptRaw => self.mode = Mode::Markup,
                Mark::Markup(_) => {}
                Mark::Raw(_) => {
                    if self.mode == Mode::Sheet {
                        self.css.finish(out);
                    }
                    out.append(&mut self.script);
                    self.mode = Mode::Raw;
                }
            }
        }
        self.emit(&bytes[pos..], out);
        *base += bytes.len();
        bytes.clear();
        marks.drain(..kept);
    }

    fn emit(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let Some(&last) = bytes.last() else {
            return;
        };
        self.prev = last;
        match self.mode {
            Mode::Sheet => self.css.write(bytes, out),
            Mode::Script if self.script.len() + bytes.len() > self.script_cap => {
                // Too long to hold: what is held and the rest pass through as written.
                out.append(&mut self.script);
                out.extend_from_slice(bytes);
                self.script_degraded = Some(script::OVER_CAP);
                self.mode = Mode::ScriptRaw;
            }
            Mode::Script => self.script.extend_from_slice(bytes),
            Mode::Markup | Mode::ScriptRaw | Mode::Raw => out.extend_from_slice(bytes),
        }
    }

    /// A script's end tag: its text, with its URL literals signed, or as written.
    fn end_script(&mut self, out: &mut Vec<u8>) {
        let text = std::mem::take(&mut self.script);
        let readable = std::str::from_utf8(&text)
            .ok()
            .filter(|s| !self.signing.ascii_only() || s.is_ascii());
        let sign = |url: &str, use_: UrlUse| self.signing.sign(url, use_);
        match readable.and_then(|t| script::rewrite(t, &sign)) {
            Some(new) => out.extend_from_slice(new.as_bytes()),
            None => out.extend_from_slice(&text),
        }
        self.script = text;
        self.script.clear();
    }

    /// The new bytes for an attribute value written as `raw`, or `None` to keep it.
    fn rewrite_value(&self, raw: &[u8], value: Value) -> Option<Vec<u8>> {
        let quote = match self.prev {
            b'"' => Some('"'),
            b'\'' => Some('\''),
            _ => None,
        };
        let readable = std::str::from_utf8(raw)
            .ok()
            .filter(|s| !self.signing.ascii_only() || s.is_ascii());
        let Some(decoded) = readable.and_then(entities::decode) else {
            self.signing.unreadable();
            return None;
        };
        let sign = |url: &str| self.signing.sign(url, UrlUse::Load);
        let new = match value {
            Value::Url => sign(&decoded),
            Value::Link => self.signing.sign(&decoded, UrlUse::Follow),
            Value::Base => self.signing.base(&decoded),
            Value::Srcset => attrs::srcset(&decoded, &sign),
            Value::Ping => attrs::ping(&decoded, &sign),
            Value::Refresh => attrs::refresh(&decoded, &sign),
            Value::Style => {
                let mut css = CssRewriter::with_cap(Rc::clone(&self.signing), usize::MAX);
                let mut sheet = Vec::with_capacity(decoded.len() + 64);
                css.write(decoded.as_bytes(), &mut sheet);
                css.finish(&mut sheet);
                // Only signed URLs (strings) were put in: still UTF-8.
                String::from_utf8(sheet).ok().filter(|s| *s != decoded)
            }
        }?;
        Some(match quote {
            Some(q) => entities::escape(&new, q).into_bytes(),
            // An unquoted value gets quotes: a URL may hold what ends an unquoted one.
            None => format!("\"{}\"", entities::escape(&new, '"')).into_bytes(),
        })
    }
}

/// Marks the URL-bearing attribute values of `el`, and a `<style>`'s text.
fn mark_element(el: &mut Element, staging: &Rc<RefCell<Staging>>) {
    let tag = el.tag_name();
    let refresh = tag == "meta"
        && el
            .get_attribute("http-equiv")
            .is_some_and(|v| v.eq_ignore_ascii_case("refresh"));
    let mut seen: Vec<String> = Vec::new();
    {
        let mut s = staging.borrow_mut();
        for attribute in el.attributes() {
            let name = attribute.name();
            // The browser keeps the first of duplicate attributes and ignores the others.
            if seen.contains(&name) {
                continue;
            }
            let value = url_value(&tag, &name, refresh);
            seen.push(name);
            if let (Some(value), Some(at)) = (value, attribute.value_source_location()) {
                let range = at.bytes();
                s.marks.push(Mark::Attribute {
                    start: range.start,
                    end: range.end,
                    value,
                });
            }
        }
    }
    // An HTML `<script>` of JavaScript or JSON: its text is held and its literals read. In
    // SVG a `<script>` holds character references, so it is left alone.
    let script_type = el.get_attribute("type");
    if tag == "script"
        && el.namespace_uri() == HTML_NAMESPACE
        && script::readable_type(script_type.as_deref())
    {
        let text_start = el.source_location().bytes().end;
        let on_end = Rc::clone(staging);
        if let Some(handlers) = el.end_tag_handlers() {
            staging.borrow_mut().marks.push(Mark::Script(text_start));
            handlers.push(Box::new(move |end: &mut EndTag| {
                let at = end.source_location().bytes().start;
                on_end.borrow_mut().marks.push(Mark::Markup(at));
                Ok(())
            }));
        }
    }
    // In SVG and MathML, `<style>` holds markup and character references, not raw CSS.
    if tag == "style" && el.namespace_uri() == HTML_NAMESPACE {
        let text_start = el.source_location().bytes().end;
        let on_end = Rc::clone(staging);
        if let Some(handlers) = el.end_tag_handlers() {
            staging.borrow_mut().marks.push(Mark::Sheet(text_start));
            handlers.push(Box::new(move |end: &mut EndTag| {
                let at = end.source_location().bytes().start;
                on_end.borrow_mut().marks.push(Mark::Markup(at));
                Ok(())
            }));
        }
    }
}
