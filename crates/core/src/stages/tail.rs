//! Holds a page's output from its first `</body>` end tag on, so that something decided only
//! when the origin's body has ended (a navigation auction's bids) can go in just before it.
//!
//! Every byte before the end tag is written as it comes; only a `<` that may start `</body`
//! and the bytes after it that still match (at most 6, when a piece of input ends there) wait
//! for the next piece to decide. A browser cannot act on those bytes either: they are an
//! unfinished tag. From the end tag's `<` on, the bytes are kept and handed back in the report
//! ([`HeldTail`]) instead of written: `finish` does not write them, its composer does, after
//! the insertion (see `crate::page::PageEnding`). Written output followed by the kept tail is
//! the input, byte for byte, at every split.
//!
//! Which `</body>`: the first end tag named `body` (any letter case, then whitespace, `/` or
//! `>`) that the HTML tokenizer reads in its data state. So not one inside a comment, a
//! DOCTYPE or bogus comment, an attribute value, the text of a `<script>` (including its
//! escaped states), `<style>`, `<xmp>`, `<iframe>`, `<noembed>`, `<noframes>`, `<noscript>`
//! (browsers run scripts), `<title>` or `<textarea>`, nor anything after `<plaintext>`.
//! Limits, each of which costs at most the bids and never the page: SVG and MathML are read
//! as HTML (a `<style>` or `<script>` inside them is taken as raw text, a CDATA section as a
//! bogus comment ending at its first `>`), and a `</body>` inside a `<template>` counts.
//!
//! A tail longer than [`TAIL_MAX`] is written as it comes from then on: nothing is lost, and
//! the insertion goes at the end of the document ([`TailPoint::AfterCap`]).

use crate::body::stage::BodyStage;

/// Most bytes held from the `</body>` end tag on. A real page's tail is `</body></html>` and
/// perhaps a few scripts; past this, the tail is written and the insertion goes at the end.
pub const TAIL_MAX: usize = 256 * 1024;

/// Where the insertion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailPoint {
    /// Just before the first `</body>` end tag; the tail from it is held.
    BeforeBodyEnd,
    /// At the end of the document: it had no `</body>` end tag.
    AtEnd,
    /// At the end of the document: the tail after `</body>` outgrew [`TAIL_MAX`] and was
    /// written as it came.
    AfterCap,
}

/// What the tail stage kept, and where the insertion goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldTail {
    /// Where the insertion goes.
    pub point: TailPoint,
    /// How many bytes were held from the hold point on at the end of the document (0 unless
    /// [`TailPoint::BeforeBodyEnd`]).
    pub held: usize,
    /// Those bytes, until they are written (`crate::page::PageEnding::finish` takes them).
    pub(crate) bytes: Vec<u8>,
}

/// What the scan is in, as the HTML tokenizer's states, merged where they read alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Data,
    /// After `<` in data.
    TagOpen,
    /// After `</` in data.
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
    /// After `<!`, with the dashes seen so far (0 or 1).
    MarkupOpen(u8),
    /// After `<!--`: bytes of the comment so far (capped at 3), for `<!-->` and `<!--->`.
    Comment(u8),
    /// A DOCTYPE, `<?…>` or other bogus comment: ends at the first `>`.
    Bogus,
    /// The text of a raw text or RCDATA element: ends at `</name` and a delimiter.
    Raw(RawKind),
    /// After `<plaintext>`: the rest of the document is text.
    Plaintext,
}

/// Which element's text, and for a script, which of its escape states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RawKind {
    /// `style`, `xmp`, … : the index of its name in [`RAW_NAMES`].
    Named(usize),
    Script(Escape),
}

/// A script's text states: `<!--` escapes it, and `<script` inside that double-escapes it
/// (a `</script>` there does not end the script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    No,
    Escaped,
    Double,
}

/// Elements whose text is read until their own end tag (raw text and RCDATA alike here).
const RAW_NAMES: [&[u8]; 9] = [
    b"style",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
    b"noscript",
    b"title",
    b"textarea",
    b"script",
];

/// Index of `script` in [`RAW_NAMES`].
const SCRIPT: usize = 8;

/// Longest name that matters (`plaintext`, `noframes`, …), plus one to tell a longer one.
const NAME_MAX: usize = 10;

/// Whitespace as the tokenizer reads it.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

#[derive(Debug)]
enum Phase {
    /// Looking for the end tag.
    Scan,
    /// Holding from it.
    Held(Vec<u8>),
    /// The tail outgrew the cap: everything passes through.
    Passed,
}

/// The tail stage; see the module docs. Boxed: a page's stages are one enum, sized by its
/// largest variant.
#[derive(Debug)]
pub(crate) struct TailStage(Box<Hold>);

impl TailStage {
    /// A stage holding at most [`TAIL_MAX`] bytes of tail.
    pub(crate) fn new() -> Self {
        Self::with_cap(TAIL_MAX)
    }

    /// A stage holding at most `cap` bytes of tail.
    pub(crate) fn with_cap(cap: usize) -> Self {
        TailStage(Box::new(Hold::with_cap(cap)))
    }
}

impl BodyStage for TailStage {
    type Report = HeldTail;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.0.write(input, out);
    }

    fn finish(self, out: &mut Vec<u8>) -> HeldTail {
        self.0.finish(out)
    }

    fn passes_through(&self) -> bool {
        matches!(self.0.phase, Phase::Passed)
    }
}

/// The tail stage's state.
#[derive(Debug)]
struct Hold {
    phase: Phase,
    state: State,
    /// The current tag's name, lower case, its first bytes.
    name: [u8; NAME_MAX],
    name_len: usize,
    /// The last bytes of a raw text, lower case, to find where it ends or escapes.
    recent: [u8; NAME_MAX],
    /// From a `<` that may start `</body`, written in an earlier piece: the bytes since.
    pending: Vec<u8>,
    cap: usize,
}

impl Hold {
    fn with_cap(cap: usize) -> Self {
        Hold {
            phase: Phase::Scan,
            state: State::Data,
            name: [0; NAME_MAX],
            name_len: 0,
            recent: [0; NAME_MAX],
            pending: Vec::new(),
            cap,
        }
    }

    /// Whether the bytes from the last `<` in data may still be `</body` and a delimiter.
    fn may_be_body_end(&self) -> bool {
        match self.state {
            State::TagOpen | State::EndTagOpen => true,
            State::TagName { end: true } => {
                self.name_len <= 4 && b"body".starts_with(&self.name[..self.name_len])
            }
            _ => false,
        }
    }

    fn push_recent(&mut self, b: u8) {
        self.recent.copy_within(1.., 0);
        self.recent[NAME_MAX - 1] = b.to_ascii_lowercase();
    }

    fn recent_ends_with(&self, tail: &[u8]) -> bool {
        self.recent.ends_with(tail)
    }

    fn start_name(&mut self, b: u8, end: bool) {
        self.name[0] = b.to_ascii_lowercase();
        self.name_len = 1;
        self.state = State::TagName { end };
    }

    /// The tag in hand ends at `>`: what follows it.
    fn tag_end(&mut self, end: bool) {
        self.state = State::Data;
        if end {
            return;
        }
        let name = &self.name[..self.name_len.min(NAME_MAX)];
        if name == b"plaintext" {
            self.state = State::Plaintext;
        } else if let Some(i) = RAW_NAMES.iter().position(|n| *n == name) {
            self.recent = [0; NAME_MAX];
            self.state = State::Raw(if i == SCRIPT {
                RawKind::Script(Escape::No)
            } else {
                RawKind::Named(i)
            });
        }
    }

    /// One byte; `true` when it completes `</body` and its delimiter (the byte is the
    /// delimiter).
    fn step(&mut self, b: u8) -> bool {
        use State::*;
        match self.state {
            Data => {
                if b == b'<' {
                    self.state = TagOpen;
                }
            }
            TagOpen => match b {
                b'!' => self.state = MarkupOpen(0),
                b'/' => self.state = EndTagOpen,
                b'?' => self.state = Bogus,
                _ if b.is_ascii_alphabetic() => self.start_name(b, false),
                // `<` then anything else is text; another `<` opens a tag again.
                b'<' => {}
                _ => self.state = Data,
            },
            EndTagOpen => match b {
                b'>' => self.state = Data,
                _ if b.is_ascii_alphabetic() => self.start_name(b, true),
                _ => self.state = Bogus,
            },
            TagName { end } => {
                if is_space(b) || b == b'/' || b == b'>' {
                    if end && self.name_len == 4 && &self.name[..4] == b"body" {
                        return true;
                    }
                    if end {
                        // An end tag opens nothing: no name matches a full buffer.
                        self.name_len = NAME_MAX;
                    }
                    if b == b'>' {
                        self.tag_end(end);
                    } else {
                        self.state = BeforeAttrName;
                    }
                } else if self.name_len < NAME_MAX {
                    self.name[self.name_len] = b.to_ascii_lowercase();
                    self.name_len += 1;
                }
            }
            BeforeAttrName | AfterAttrName => match b {
                b'>' => self.tag_end(false),
                b'=' if self.state == AfterAttrName => self.state = BeforeAttrValue,
                b'/' => self.state = BeforeAttrName,
                _ if is_space(b) => {}
                _ => self.state = AttrName,
            },
            AttrName => match b {
                b'>' => self.tag_end(false),
                b'=' => self.state = BeforeAttrValue,
                b'/' => self.state = BeforeAttrName,
                _ if is_space(b) => self.state = AfterAttrName,
                _ => {}
            },
            BeforeAttrValue => match b {
                b'"' | b'\'' => self.state = AttrValue(b),
                b'>' => self.tag_end(false),
                _ if is_space(b) => {}
                _ => self.state = AttrValueUnquoted,
            },
            AttrValue(quote) => {
                if b == quote {
                    self.state = BeforeAttrName;
                }
            }
            AttrValueUnquoted => match b {
                b'>' => self.tag_end(false),
                _ if is_space(b) => self.state = BeforeAttrName,
                _ => {}
            },
            MarkupOpen(dashes) => match (dashes, b) {
                (0, b'-') => self.state = MarkupOpen(1),
                (1, b'-') => {
                    self.recent = [0; NAME_MAX];
                    self.state = Comment(0);
                }
                (_, b'>') => self.state = Data,
                _ => self.state = Bogus,
            },
            Comment(n) => {
                self.push_recent(b);
                let ends = b == b'>'
                    && (n == 0
                        || (n == 1 && self.recent_ends_with(b"->"))
                        || (n >= 2 && self.recent_ends_with(b"-->"))
                        || (n >= 3 && self.recent_ends_with(b"--!>")));
                self.state = if ends {
                    Data
                } else {
                    Comment(n.saturating_add(1).min(3))
                };
            }
            Bogus => {
                if b == b'>' {
                    self.state = Data;
                }
            }
            Raw(kind) => self.raw(kind, b),
            Plaintext => {}
        }
        false
    }

    /// One byte of an element's text.
    fn raw(&mut self, kind: RawKind, b: u8) {
        let delimiter = is_space(b) || b == b'/' || b == b'>';
        let ends_with_tag = |s: &Self, open: &[u8], name: &[u8]| {
            // `open` and `name`, then this delimiter.
            let len = open.len() + name.len();
            delimiter && len <= NAME_MAX && {
                let at = NAME_MAX - len;
                s.recent[at..at + open.len()] == *open && s.recent[at + open.len()..] == *name
            }
        };
        match kind {
            RawKind::Named(i) => {
                if ends_with_tag(self, b"</", RAW_NAMES[i]) {
                    self.end_tag_attributes(b);
                    return;
                }
            }
            RawKind::Script(escape) => {
                let script = RAW_NAMES[SCRIPT];
                let closes = ends_with_tag(self, b"</", script);
                let opens = ends_with_tag(self, b"<", script);
                self.push_recent(b);
                let next = match escape {
                    Escape::No if self.recent_ends_with(b"<!--") => Escape::Escaped,
                    Escape::No | Escape::Escaped if closes => {
                        return self.end_tag_attributes(b);
                    }
                    Escape::Escaped | Escape::Double if self.recent_ends_with(b"-->") => Escape::No,
                    Escape::Escaped if opens => Escape::Double,
                    Escape::Double if closes => Escape::Escaped,
                    e => e,
                };
                self.state = State::Raw(RawKind::Script(next));
                return;
            }
        }
        self.push_recent(b);
    }

    /// How many bytes at the front of `rest` cannot change the state, passed: text up to a
    /// `<`, an attribute value up to its quote, a bogus comment up to a `>`, a comment past
    /// its first bytes up to a `>`, an element's text up to a `<` (in an escaped script, a `<`
    /// or `>`) while no `<` is among the recent bytes, everything after `<plaintext>`.
    /// Stepping through them one by one would only push them into `recent`, as this does
    /// with the last of them; found with `memchr`, a page's scan costs about what its tags
    /// do, not its bytes.
    fn pass(&mut self, rest: &[u8]) -> usize {
        let found = match self.state {
            State::Data => return memchr::memchr(b'<', rest).unwrap_or(rest.len()),
            State::AttrValue(quote) => return memchr::memchr(quote, rest).unwrap_or(rest.len()),
            State::Bogus => return memchr::memchr(b'>', rest).unwrap_or(rest.len()),
            State::Plaintext => return rest.len(),
            State::Raw(_) if self.recent.contains(&b'<') => return 0,
            State::Raw(RawKind::Named(_) | RawKind::Script(Escape::No)) => {
                memchr::memchr(b'<', rest)
            }
            State::Raw(RawKind::Script(_)) => memchr::memchr2(b'<', b'>', rest),
            State::Comment(3) => memchr::memchr(b'>', rest),
            _ => return 0,
        };
        let passed = found.unwrap_or(rest.len());
        for &b in &rest[passed.saturating_sub(NAME_MAX)..passed] {
            self.push_recent(b);
        }
        passed
    }

    /// A raw text's end tag is read to its delimiter `b`: its attributes (if any) follow.
    fn end_tag_attributes(&mut self, b: u8) {
        self.name_len = NAME_MAX;
        if b == b'>' {
            self.state = State::Data;
        } else {
            self.state = State::BeforeAttrName;
        }
    }

    /// Keeps `input` with the tail, writing the tail out if it outgrew the cap.
    fn hold(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let Phase::Held(tail) = &mut self.phase else {
            return;
        };
        tail.extend_from_slice(input);
        if tail.len() > self.cap {
            out.append(tail);
            self.phase = Phase::Passed;
        }
    }
}

impl Hold {
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.write_scanning(input, out, true);
    }

    /// [`Hold::write`]; with `skip` false, every byte is stepped through (the reference the
    /// tests hold the skipping to).
    fn write_scanning(&mut self, input: &[u8], out: &mut Vec<u8>, skip: bool) {
        match self.phase {
            Phase::Scan => {}
            Phase::Held(_) => return self.hold(input, out),
            Phase::Passed => return out.extend_from_slice(input),
        }
        // Where a possible `</body` starts in `input`; before 0 when it started in an earlier
        // piece (its bytes are in `pending`).
        let mut start: Option<usize> = (!self.pending.is_empty()).then_some(0);
        let from_pending = !self.pending.is_empty();
        let mut pending_alive = from_pending;
        let mut i = 0;
        while i < input.len() {
            if skip && start.is_none() {
                // Straight to the next byte that can change the state.
                i += self.pass(&input[i..]);
                if i == input.len() {
                    break;
                }
            }
            let was_data = self.state == State::Data;
            let b = input[i];
            if self.step(b) {
                // The end tag's `<` is where the hold starts.
                let at = if pending_alive { 0 } else { start.unwrap_or(i) };
                out.extend_from_slice(&input[..at]);
                let mut tail = std::mem::take(&mut self.pending);
                tail.extend_from_slice(&input[at..]);
                self.phase = Phase::Held(Vec::new());
                return self.hold(&tail, out);
            }
            if was_data && self.state == State::TagOpen {
                start = Some(i);
            } else if self.state == State::TagOpen && b == b'<' {
                // `<<`: the candidate moves to this `<`.
                if pending_alive {
                    out.append(&mut self.pending);
                    pending_alive = false;
                }
                start = Some(i);
            } else if start.is_some() && !self.may_be_body_end() {
                if pending_alive {
                    out.append(&mut self.pending);
                    pending_alive = false;
                }
                start = None;
            }
            i += 1;
        }
        match start {
            Some(_) if pending_alive => self.pending.extend_from_slice(input),
            Some(at) => {
                out.extend_from_slice(&input[..at]);
                self.pending.extend_from_slice(&input[at..]);
            }
            None => out.extend_from_slice(input),
        }
    }

    fn finish(self, out: &mut Vec<u8>) -> HeldTail {
        match self.phase {
            Phase::Scan => {
                out.extend_from_slice(&self.pending);
                HeldTail {
                    point: TailPoint::AtEnd,
                    held: 0,
                    bytes: Vec::new(),
                }
            }
            Phase::Held(bytes) => HeldTail {
                point: TailPoint::BeforeBodyEnd,
                held: bytes.len(),
                bytes,
            },
            Phase::Passed => HeldTail {
                point: TailPoint::AfterCap,
                held: 0,
                bytes: Vec::new(),
            },
        }
    }
}

#[cfg(test)]
mod tests;
