//! Puts the first-party script's tag at the start of the page's `<head>`, while streaming.
//!
//! The tag goes where an HTML parser opens the head element: right after a `<head …>` start
//! tag, or, for a page without one, just before the first token that makes the parser open
//! the head implicitly. Until then the parser is in its "initial", "before html" and "before
//! head" insertion modes (WHATWG HTML, tree construction), where only these tokens pass
//! without opening the head: whitespace text, comments, a DOCTYPE, `<html>` start tags, and
//! end tags other than `</head>`, `</body>`, `</html>` and `</br>`. Any other token (another
//! start tag, one of those end tags, a non-whitespace character, the end of the document)
//! opens the head first, so the tag goes just before it and the parser puts it in the head.
//!
//! No element is open before the head, so the tokenizer is in its data state there and the
//! scan needs only the states that find where a tag, comment or DOCTYPE ends: quoted attribute
//! values (a `>` inside one does not end the tag), comments (`<!-->`, `--!>`), bogus comments.
//! A `<head>` inside a comment, or after a `<script>`, `<template>`, `<noscript>` or
//! `<textarea>` start tag, is never reached: those open the head themselves.
//!
//! A token is held until it is decided, so the output does not depend on where the input is
//! cut; a token longer than [`MAX_TOKEN`] before the head ends the scan without a tag. After
//! the injection point, the next bytes are held until they show whether the origin's page
//! already starts its head with the script (`id="ts-js"`, or a `src` on `/static/tsjs=`):
//! then nothing is added. A copy of the script elsewhere in the page is not looked for.
//!
//! This stage runs after the HTML rewriter, on its output: the URL rule never changes where a
//! token ends (it writes host names), so the injection point is the same as in the origin's
//! bytes, and the tag itself is never rewritten.

use crate::body::stage::BodyStage;
use crate::stages::charset::{is_space, start_tag_attributes};

/// Longest tag, comment or DOCTYPE read before the head; a longer one stops the scan without
/// injecting (real ones are bytes to a few kilobytes; a licence comment may be longer).
pub const MAX_TOKEN: usize = 64 * 1024;

/// Most bytes held after the injection point to see whether the origin's page already starts
/// its head with the script.
const MAX_LOOKAHEAD: usize = 4096;

/// The `id` the injected script carries; the origin's own tag is recognised by it, too.
pub const SCRIPT_ID: &str = "ts-js";

/// A `src` with this in it is the script, whatever the hash.
const SCRIPT_PATH_MARK: &[u8] = b"/static/tsjs=";

/// The script tag to inject into a page, decided per response by the adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// The script's public path (`/static/tsjs=<hash>.js`).
    pub src: String,
    /// The `Content-Security-Policy` nonce the tag must carry, if the page's policy uses one.
    pub nonce: Option<String>,
}

impl Injection {
    /// The tag: `<script src="…" id="ts-js"></script>`, with ` nonce="…"` when there is one.
    /// Values are escaped for a double-quoted attribute.
    pub fn tag(&self) -> String {
        let nonce = self.nonce.as_deref().unwrap_or("");
        let mut tag = String::with_capacity(64 + self.src.len() + nonce.len());
        tag.push_str("<script src=\"");
        escape_into(&self.src, &mut tag);
        tag.push_str("\" id=\"");
        tag.push_str(SCRIPT_ID);
        if self.nonce.is_some() {
            tag.push_str("\" nonce=\"");
            escape_into(nonce, &mut tag);
        }
        tag.push_str("\"></script>");
        tag
    }
}

/// Appends `value` escaped for a double-quoted attribute.
fn escape_into(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// What happened to the injection, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injected {
    /// The tag went into the page.
    Yes,
    /// It did not, and why.
    No(&'static str),
}

/// Where the tokenizer is, before the injection point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of the body: a UTF-8 byte order mark, matched so far.
    Bom,
    /// Between tokens.
    Data,
    /// After `<`.
    TagOpen,
    /// After `<!`, and `-` when `dash`.
    MarkupOpen {
        dash: bool,
    },
    /// A DOCTYPE or bogus comment: ends at the first `>`.
    Bogus,
    CommentStart,
    CommentStartDash,
    Comment,
    CommentEndDash,
    CommentEnd,
    CommentEndBang,
    /// After `</`.
    EndTagOpen,
    /// In a tag's name.
    TagName {
        end: bool,
    },
    BeforeAttrName,
    AttrName,
    AfterAttrName,
    BeforeAttrValue,
    AttrValue(u8),
    AttrValueUnquoted,
    AfterAttrValueQuoted,
    SelfClosing,
}

#[derive(Debug)]
enum Phase {
    /// Looking for the injection point.
    Scan,
    /// Past it: holding the next bytes to see whether the origin already put the script there.
    Check,
    /// Decided: everything passes through.
    Done(Injected),
}

/// The injection stage; see the module docs.
#[derive(Debug)]
pub(crate) struct InjectStage {
    tag: Vec<u8>,
    phase: Phase,
    state: State,
    /// The current token's bytes (scan), or the bytes after the injection point (check).
    held: Vec<u8>,
    /// The current tag's name, lower case, its first bytes (enough to tell the names that
    /// matter).
    name: [u8; 5],
    name_len: usize,
    /// The current start tag is `<head>`: the tag goes after its `>`.
    head: bool,
}

impl InjectStage {
    pub(crate) fn new(injection: &Injection) -> Self {
        InjectStage {
            tag: injection.tag().into_bytes(),
            phase: Phase::Scan,
            state: State::Bom,
            held: Vec::new(),
            name: [0; 5],
            name_len: 0,
            head: false,
        }
    }

    /// The injection point is before the held bytes, which `input` follows.
    fn inject_before_held(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.phase = Phase::Check;
        self.check(input, out);
    }

    /// Scans `input`; past the injection point, hands the rest to [`Self::check`].
    fn scan(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            if self.state == State::Data {
                if is_space(b) {
                    out.push(b);
                    i += 1;
                    continue;
                }
                if b != b'<' {
                    // Text: it opens the head.
                    return self.inject_before_held(&input[i..], out);
                }
                self.held.push(b);
                self.state = State::TagOpen;
                i += 1;
                continue;
            }
            if self.state == State::Bom {
                const BOM: &[u8] = b"\xef\xbb\xbf";
                if BOM.get(self.held.len()) == Some(&b) {
                    self.held.push(b);
                    i += 1;
                    if self.held.len() == BOM.len() {
                        out.append(&mut self.held);
                        self.state = State::Data;
                    }
                    continue;
                }
                if self.held.is_empty() {
                    self.state = State::Data;
                    continue;
                }
                // Not a mark: its bytes are text.
                return self.inject_before_held(&input[i..], out);
            }
            if self.held.len() >= MAX_TOKEN {
                out.append(&mut self.held);
                self.phase = Phase::Done(Injected::No(
                    "a tag or comment before the head is longer than 64 KiB",
                ));
                out.extend_from_slice(&input[i..]);
                return;
            }
            self.held.push(b);
            i += 1;
            match self.step(b) {
                Step::Continue => {}
                Step::TokenEnd => {
                    if self.head {
                        out.append(&mut self.held);
                        return self.inject_before_held(&input[i..], out);
                    }
                    out.append(&mut self.held);
                    self.state = State::Data;
                }
                // The token in `held` opens the head: the tag goes before it.
                Step::OpensHead => return self.inject_before_held(&input[i..], out),
            }
        }
    }

    /// One byte of a token (already in `held`).
    fn step(&mut self, b: u8) -> Step {
        use State::*;
        let lower = b.to_ascii_lowercase();
        match self.state {
            // `scan` reads these itself.
            Bom | Data => {}
            TagOpen => match b {
                b'!' => self.state = MarkupOpen { dash: false },
                b'/' => self.state = EndTagOpen,
                b'?' => self.state = Bogus,
                _ if b.is_ascii_alphabetic() => self.start_name(lower, false),
                // `<` followed by anything else is text.
                _ => return Step::OpensHead,
            },
            MarkupOpen { dash } => match (dash, b) {
                (false, b'-') => self.state = MarkupOpen { dash: true },
                (true, b'-') => self.state = CommentStart,
                _ => return self.bogus(b),
            },
            Bogus => {
                if b == b'>' {
                    return Step::TokenEnd;
                }
            }
            CommentStart | CommentStartDash | Comment | CommentEndDash | CommentEnd
            | CommentEndBang => return self.comment(b),
            EndTagOpen => match b {
                b'>' => return Step::TokenEnd, // `</>` is nothing at all
                _ if b.is_ascii_alphabetic() => self.start_name(lower, true),
                _ => return self.bogus(b),
            },
            TagName { end } => return self.tag_name(b, lower, end),
            BeforeAttrName => return self.attribute_state(b, BeforeAttrName),
            AttrName => match b {
                b'=' => self.state = BeforeAttrValue,
                _ if is_space(b) => self.state = AfterAttrName,
                _ => return self.attribute_state(b, AttrName),
            },
            AfterAttrName => match b {
                b'=' => self.state = BeforeAttrValue,
                _ if is_space(b) => {}
                _ => return self.attribute_state(b, AttrName),
            },
            BeforeAttrValue => match b {
                b'"' | b'\'' => self.state = AttrValue(b),
                b'>' => return Step::TokenEnd,
                _ if is_space(b) => {}
                _ => self.state = AttrValueUnquoted,
            },
            AttrValue(quote) => {
                if b == quote {
                    self.state = AfterAttrValueQuoted;
                }
            }
            AttrValueUnquoted => match b {
                b'>' => return Step::TokenEnd,
                _ if is_space(b) => self.state = BeforeAttrName,
                _ => {}
            },
            AfterAttrValueQuoted | SelfClosing => {
                return self.attribute_state(b, BeforeAttrName);
            }
        }
        Step::Continue
    }

    /// One byte of a comment (`<!--` … `-->`, as the tokenizer's comment states read it).
    fn comment(&mut self, b: u8) -> Step {
        use State::*;
        match self.state {
            CommentStart => match b {
                b'-' => self.state = CommentStartDash,
                b'>' => return Step::TokenEnd,
                _ => self.state = Comment,
            },
            CommentStartDash => match b {
                b'-' => self.state = CommentEnd,
                b'>' => return Step::TokenEnd,
                _ => self.state = Comment,
            },
            Comment if b == b'-' => self.state = CommentEndDash,
            CommentEndDash => {
                self.state = if b == b'-' { CommentEnd } else { Comment };
            }
            CommentEnd => match b {
                b'>' => return Step::TokenEnd,
                b'!' => self.state = CommentEndBang,
                b'-' => {}
                _ => self.state = Comment,
            },
            CommentEndBang => match b {
                b'-' => self.state = CommentEndDash,
                b'>' => return Step::TokenEnd,
                _ => self.state = Comment,
            },
            // `Comment` on any other byte, and the states `step` reads itself.
            _ => {}
        }
        Step::Continue
    }

    /// One byte of a tag's name: at its end, whether the tag opens the head's content (and
    /// the script goes before it); before that, the name's first bytes, lower-cased.
    fn tag_name(&mut self, b: u8, lower: u8, end: bool) -> Step {
        use State::*;
        if is_space(b) || b == b'/' || b == b'>' {
            let name = &self.name[..self.name_len];
            let opens = if end {
                matches!(name, b"head" | b"body" | b"html" | b"br")
            } else {
                self.head = name == b"head";
                !matches!(name, b"head" | b"html")
            };
            if opens {
                return Step::OpensHead;
            }
            return self.attribute_state(b, BeforeAttrName);
        }
        if self.name_len < self.name.len() {
            self.name[self.name_len] = lower;
            self.name_len += 1;
        } else {
            // Longer than any name that matters.
            self.name = [0; 5];
        }
        Step::Continue
    }

    /// `b` in the states where `/` and `>` mean the same: before a name (a name starts with
    /// any other byte, `=` included), after a quoted value, after `/`; and in a name, where
    /// `otherwise` is the name itself.
    fn attribute_state(&mut self, b: u8, otherwise: State) -> Step {
        self.state = match b {
            b'>' => return Step::TokenEnd,
            b'/' => State::SelfClosing,
            _ if is_space(b) => State::BeforeAttrName,
            _ => match otherwise {
                State::BeforeAttrName => State::AttrName,
                other => other,
            },
        };
        Step::Continue
    }

    fn start_name(&mut self, first: u8, end: bool) {
        self.name = [0; 5];
        self.name[0] = first;
        self.name_len = 1;
        self.head = false;
        self.state = State::TagName { end };
    }

    /// A bogus comment (or DOCTYPE) whose first byte is `b`.
    fn bogus(&mut self, b: u8) -> Step {
        self.state = State::Bogus;
        if b == b'>' {
            Step::TokenEnd
        } else {
            Step::Continue
        }
    }

    /// Past the injection point: `held` and `input` are what follows it.
    fn check(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if self.held.is_empty() {
            // Most often decided by the input alone: no copy.
            match origin_has_script(input) {
                Some(true) => {
                    out.extend_from_slice(input);
                    self.phase = Phase::Done(Injected::No("the page already has the script"));
                    return;
                }
                Some(false) => {
                    out.extend_from_slice(&self.tag);
                    out.extend_from_slice(input);
                    self.phase = Phase::Done(Injected::Yes);
                    return;
                }
                None => {}
            }
        }
        self.held.extend_from_slice(input);
        match origin_has_script(&self.held) {
            None if self.held.len() <= MAX_LOOKAHEAD => {}
            Some(true) => {
                out.append(&mut self.held);
                self.phase = Phase::Done(Injected::No("the page already has the script"));
            }
            _ => self.inject(out),
        }
    }

    fn inject(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.tag);
        out.append(&mut self.held);
        self.phase = Phase::Done(Injected::Yes);
    }
}

/// What a byte of a token meant.
enum Step {
    Continue,
    /// The token ended with this byte, and the head is not open.
    TokenEnd,
    /// The token opens the head.
    OpensHead,
}

/// Whether `bytes`, what follows the injection point, start (after whitespace) with the
/// script's own tag; `None` until that is known.
fn origin_has_script(bytes: &[u8]) -> Option<bool> {
    const OPEN: &[u8] = b"<script";
    let start = bytes.iter().position(|&b| !is_space(b))?;
    let rest = &bytes[start..];
    let n = rest.len().min(OPEN.len());
    if !rest[..n].eq_ignore_ascii_case(&OPEN[..n]) {
        return Some(false);
    }
    match rest.get(OPEN.len()) {
        None => return None,
        Some(&b) if !is_space(b) && b != b'/' && b != b'>' => return Some(false),
        _ => {}
    }
    let attributes = start_tag_attributes(&rest[OPEN.len()..])?;
    Some(attributes.iter().any(|(name, value)| {
        (name.eq_ignore_ascii_case(b"id") && *value == SCRIPT_ID.as_bytes())
            || (name.eq_ignore_ascii_case(b"src")
                && value
                    .windows(SCRIPT_PATH_MARK.len())
                    .any(|w| w == SCRIPT_PATH_MARK))
    }))
}

impl BodyStage for InjectStage {
    type Report = Injected;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match self.phase {
            Phase::Done(_) => out.extend_from_slice(input),
            Phase::Check => self.check(input, out),
            Phase::Scan => self.scan(input, out),
        }
    }

    fn passes_through(&self) -> bool {
        matches!(self.phase, Phase::Done(_))
    }

    fn finish(mut self, out: &mut Vec<u8>) -> Injected {
        match self.phase {
            Phase::Done(injected) => injected,
            // The end of the document opens the head. An unfinished tag held before it is
            // dropped by the parser, an unfinished comment becomes the head's comment.
            Phase::Scan | Phase::Check => {
                self.inject(out);
                Injected::Yes
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_escapes_its_values() {
        let plain = Injection {
            src: "/static/tsjs=0123456789abcdef.js".into(),
            nonce: None,
        };
        assert_eq!(
            plain.tag(),
            r#"<script src="/static/tsjs=0123456789abcdef.js" id="ts-js"></script>"#
        );
        let odd = Injection {
            src: "/a?b=1&c=\"<x>\"".into(),
            nonce: Some("n\"><".into()),
        };
        assert_eq!(
            odd.tag(),
            r#"<script src="/a?b=1&amp;c=&quot;&lt;x&gt;&quot;" id="ts-js" nonce="n&quot;&gt;&lt;"></script>"#
        );
    }
}
