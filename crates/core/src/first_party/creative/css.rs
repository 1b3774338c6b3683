//! CSS: `url(…)` and `@import "…"` rewritten while streaming.
//!
//! A byte-at-a-time tokenizer keeps just enough of CSS's tokenization (comments, strings,
//! escapes, identifiers) to know when a `url(` function or an `@import` string starts, as the
//! browser's tokenizer would: `url(` inside a comment or a string, or `#url(` and `-url(`, is
//! not one. Every byte leaves as soon as it is read, except a URL token that may be absolute
//! (its value starts with `h` or a slash once spaces are skipped), which is held until it ends
//! and then written back either unchanged or as the signed URL. A held token longer than
//! [`TOKEN_CAP`] is released unchanged and the report says so: memory stays bounded whatever
//! the input, and so does the output's dependence on chunk cuts (none: the state moves byte by
//! byte). What is not recognised (`u\72l(`, `image-set("…")`, `@import /*c*/ "…"`) stays as
//! written.

use std::rc::Rc;

use super::signing::{Signing, UrlUse};

/// Most bytes of one URL token held while deciding it (a `data:` URL can be megabytes, but is
/// not held: its first byte already says it is not absolute).
pub(crate) const TOKEN_CAP: usize = 16 * 1024;

/// What the report says when a token over the cap passed through.
pub(crate) const OVER_CAP: &str = "a CSS URL token longer than 16 KiB passed through unrewritten";

/// Where the tokenizer is in an escape (`\\41 `, `\\"`): a hex escape takes up to six hex
/// digits and then one whitespace (CR LF counting as one), which belong to it, not to what
/// follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    No,
    /// After `\\`.
    Backslash,
    /// After `\\` and this many hex digits.
    Hex(u8),
    /// After the CR of an escape: a following LF belongs to it too.
    Cr,
}

impl Escape {
    /// The state after `b`, and whether `b` belonged to the escape. When it did not, the
    /// caller reads `b` as an ordinary byte.
    fn step(self, b: u8) -> (Escape, bool) {
        match self {
            Escape::No if b == b'\\' => (Escape::Backslash, true),
            Escape::No => (Escape::No, false),
            Escape::Backslash if b.is_ascii_hexdigit() => (Escape::Hex(1), true),
            Escape::Backslash | Escape::Hex(_) if b == b'\r' => (Escape::Cr, true),
            Escape::Backslash => (Escape::No, true),
            Escape::Hex(n) if n < 6 && b.is_ascii_hexdigit() => (Escape::Hex(n + 1), true),
            Escape::Hex(_) if matches!(b, b' ' | b'\t' | b'\n' | b'\x0c') => (Escape::No, true),
            Escape::Cr if b == b'\n' => (Escape::No, true),
            Escape::Hex(_) | Escape::Cr => (Escape::No, false),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Normal,
    /// After `/`: maybe a comment.
    Slash,
    /// In `/* … */`; `star`: the last byte was `*`.
    Comment {
        star: bool,
    },
    /// An ordinary string, passed through.
    Str {
        quote: u8,
        escape: Escape,
    },
    /// After `@import` and whitespace.
    Import,
    /// After `url(`: leading whitespace.
    UrlStart,
    /// A string that is a URL (in `url(` or after `@import`).
    UrlQuoted {
        quote: u8,
        escape: Escape,
    },
    /// An unquoted `url(` value; `space`: whitespace seen after it.
    UrlUnquoted {
        escape: Escape,
        space: bool,
    },
    /// The rest of an invalid unquoted URL, to its `)`.
    BadUrl {
        escape: bool,
    },
}

/// The streaming rewriter. Also used whole on an inline `style` attribute's value.
pub(crate) struct CssRewriter {
    signing: Rc<Signing>,
    state: State,
    /// The current identifier run, lowercased, up to 8 bytes (`@import` is 7).
    run: Vec<u8>,
    /// Whether the run can still be `url` or `@import`: not after `#`, no escape in it.
    run_ok: bool,
    /// The previous byte in the `Normal` state.
    last: u8,
    /// An escape in an identifier, outside strings and URLs.
    ident_escape: Escape,
    /// The URL token being decided (including its leading whitespace and quote).
    held: Vec<u8>,
    holding: bool,
    /// Whether the held value's first meaningful byte has been seen.
    started: bool,
    /// How many bytes of the value so far spell the start of `data:` (`None`: they do not).
    data_prefix: Option<u8>,
    cap: usize,
    degraded: Option<&'static str>,
}

fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b >= 0x80
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

fn is_newline(b: u8) -> bool {
    matches!(b, b'\n' | b'\r' | b'\x0c')
}

/// Bytes that make an unquoted `url(` invalid.
fn breaks_unquoted(b: u8) -> bool {
    matches!(b, b'"' | b'\'' | b'(' | 0..=8 | 0x0b | 0x0e..=0x1f | 0x7f)
}

impl CssRewriter {
    /// A rewriter holding at most `cap` bytes of one URL token ([`TOKEN_CAP`] in service).
    pub(crate) fn with_cap(signing: Rc<Signing>, cap: usize) -> Self {
        CssRewriter {
            signing,
            state: State::Normal,
            run: Vec::with_capacity(8),
            run_ok: true,
            last: b' ',
            ident_escape: Escape::No,
            held: Vec::new(),
            holding: false,
            started: false,
            data_prefix: None,
            cap,
            degraded: None,
        }
    }

    /// Why a token passed through unrewritten for lack of memory, if one did.
    pub(crate) fn degraded(&self) -> Option<&'static str> {
        self.degraded
    }

    /// Rewrites `input`, appending what is decided to `out`.
    pub(crate) fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            self.byte(b, out);
        }
    }

    /// Ends the style sheet: a token still open (the sheet ended inside it) is released as
    /// written. The rewriter is ready for another sheet.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        self.release(out);
        self.state = State::Normal;
        self.run.clear();
        self.run_ok = true;
        self.last = b' ';
        self.ident_escape = Escape::No;
    }

    fn byte(&mut self, b: u8, out: &mut Vec<u8>) {
        match self.state {
            State::Normal => self.normal(b, out),
            State::Slash => {
                if b == b'*' {
                    out.push(b);
                    self.state = State::Comment { star: false };
                } else {
                    self.state = State::Normal;
                    self.normal(b, out);
                }
            }
            State::Comment { star } => {
                out.push(b);
                self.state = match (star, b) {
                    (true, b'/') => State::Normal,
                    _ => State::Comment { star: b == b'*' },
                };
                self.last = b' ';
            }
            State::Str { quote, escape } => {
                out.push(b);
                self.state = match string_step(quote, escape, b) {
                    Some(escape) => State::Str { quote, escape },
                    None => State::Normal,
                };
                self.last = b' ';
            }
            State::Import => self.import_byte(b, out),
            State::UrlStart => self.url_start(b, out),
            State::UrlQuoted { quote, escape } => self.url_quoted(quote, escape, b, out),
            State::UrlUnquoted { escape, space } => self.url_unquoted(escape, space, b, out),
            State::BadUrl { escape } => {
                out.push(b);
                self.state = if escape {
                    State::BadUrl { escape: false }
                } else if b == b'\\' {
                    State::BadUrl { escape: true }
                } else if b == b')' {
                    self.last = b')';
                    State::Normal
                } else {
                    State::BadUrl { escape: false }
                };
            }
        }
    }

    /// After `@import`: spaces, then a quoted URL or anything else.
    fn import_byte(&mut self, b: u8, out: &mut Vec<u8>) {
        if is_space(b) {
            out.push(b);
        } else if b == b'"' || b == b'\'' {
            self.start_holding();
            self.hold(b, out);
            self.state = State::UrlQuoted {
                quote: b,
                escape: Escape::No,
            };
        } else {
            self.state = State::Normal;
            self.normal(b, out);
        }
    }

    /// After `url(`: spaces held, then a quoted or an unquoted URL, or `)`.
    fn url_start(&mut self, b: u8, out: &mut Vec<u8>) {
        if is_space(b) {
            self.hold(b, out);
        } else if b == b'"' || b == b'\'' {
            self.hold(b, out);
            self.state = State::UrlQuoted {
                quote: b,
                escape: Escape::No,
            };
        } else if b == b')' {
            self.release(out);
            self.state = State::Normal;
            self.normal(b, out);
        } else {
            self.state = State::UrlUnquoted {
                escape: Escape::No,
                space: false,
            };
            self.byte(b, out);
        }
    }

    /// Inside a quoted URL: held until its quote ends it.
    fn url_quoted(&mut self, quote: u8, escape: Escape, b: u8, out: &mut Vec<u8>) {
        self.value_byte(b, out);
        match string_step(quote, escape, b) {
            Some(escape) => self.state = State::UrlQuoted { quote, escape },
            None => {
                if b == quote {
                    self.decide(Some(quote), out);
                } else {
                    self.release(out); // A newline ended the string: invalid.
                }
                self.state = State::Normal;
                self.last = b' ';
            }
        }
    }

    /// Inside an unquoted URL: held until `)`; a space or a character a URL token cannot hold before it makes it a bad URL.
    fn url_unquoted(&mut self, escape: Escape, space: bool, b: u8, out: &mut Vec<u8>) {
        if escape == Escape::Backslash && is_newline(b) {
            // Not an escape in a URL: the URL is invalid.
            self.bad_url(b, out);
            return;
        }
        let (next, consumed) = escape.step(b);
        if consumed && escape != Escape::No {
            self.value_byte(b, out);
            self.state = State::UrlUnquoted {
                escape: next,
                space,
            };
        } else if b == b')' {
            self.decide(None, out);
            out.push(b);
            self.state = State::Normal;
            self.last = b')';
        } else if is_space(b) {
            self.hold(b, out);
            self.state = State::UrlUnquoted {
                escape: Escape::No,
                space: true,
            };
        } else if space || breaks_unquoted(b) {
            self.bad_url(b, out);
        } else {
            self.value_byte(b, out);
            self.state = State::UrlUnquoted {
                escape: next,
                space: false,
            };
        }
    }

    fn normal(&mut self, b: u8, out: &mut Vec<u8>) {
        out.push(b);
        if self.ident_escape != Escape::No {
            let (next, consumed) = self.ident_escape.step(b);
            self.ident_escape = next;
            if consumed {
                self.last = b'a';
                return;
            }
        }
        if is_name(b) || (b == b'@' && !is_name(self.last)) {
            if !is_name(self.last) && self.last != b'@' {
                // A new run. After `#` it is a hash token's name, never a function.
                self.run.clear();
                self.run_ok = self.last != b'#';
            }
            if self.run.len() < 8 {
                self.run.push(b.to_ascii_lowercase());
            } else {
                self.run_ok = false;
            }
            self.last = b;
            return;
        }
        let run_is = |word: &[u8]| self.run_ok && self.run == word && is_name(self.last);
        let url = b == b'(' && run_is(b"url");
        let import = is_space(b) && run_is(b"@import");
        self.last = b;
        self.run.clear();
        match b {
            _ if url => {
                self.start_holding();
                self.state = State::UrlStart;
            }
            _ if import => self.state = State::Import,
            b'/' => self.state = State::Slash,
            b'"' | b'\'' => {
                self.state = State::Str {
                    quote: b,
                    escape: Escape::No,
                }
            }
            b'\\' => {
                // An escape continues (or starts) an identifier that is then never ours.
                self.run_ok = false;
                self.run.push(b'\\');
                self.ident_escape = Escape::Backslash;
                self.last = b'a';
            }
            _ => {}
        }
    }

    fn start_holding(&mut self) {
        self.held.clear();
        self.holding = true;
        self.started = false;
    }

    /// A byte of the token: held while the token may be rewritten, passed on otherwise.
    fn hold(&mut self, b: u8, out: &mut Vec<u8>) {
        if !self.holding {
            out.push(b);
            return;
        }
        self.held.push(b);
        if self.held.len() > self.cap {
            self.degraded = Some(OVER_CAP);
            self.release(out);
        }
    }

    /// A byte of the URL's value: the first meaningful one says whether it can be absolute.
    fn value_byte(&mut self, b: u8, out: &mut Vec<u8>) {
        self.hold(b, out);
        if !self.holding {
            return;
        }
        if !self.started {
            if b <= b' ' {
                return;
            }
            self.started = true;
            self.data_prefix = Some(0);
            // With a base, a relative URL is resolved too; a fragment (`url(#gradient)`) never.
            let may_resolve = self.signing.has_base() && b != b'#';
            if !matches!(b, b'h' | b'H' | b'/' | b'\\') && !may_resolve {
                self.release(out);
                return;
            }
        }
        // A `data:` URL is never offered: released as soon as it shows, so it is not held.
        if let Some(n) = self.data_prefix {
            if b.to_ascii_lowercase() != b"data:"[usize::from(n)] {
                self.data_prefix = None;
            } else if n == 4 {
                self.release(out);
            } else {
                self.data_prefix = Some(n + 1);
            }
        }
    }

    /// Passes the held token on unchanged and stops holding.
    fn release(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.held);
        self.held.clear();
        self.holding = false;
    }

    fn bad_url(&mut self, b: u8, out: &mut Vec<u8>) {
        self.release(out);
        self.state = State::BadUrl { escape: false };
        self.byte(b, out);
    }

    /// The held token has ended (after its closing quote, or before the `)` of an unquoted
    /// URL): writes it back signed, or unchanged.
    fn decide(&mut self, quote: Option<u8>, out: &mut Vec<u8>) {
        if !self.holding {
            return;
        }
        let held = std::mem::take(&mut self.held);
        self.holding = false;
        let lead = held.iter().take_while(|&&b| is_space(b)).count();
        let replaced = match quote {
            Some(q) => {
                // Leading whitespace, the quote, the value, the closing quote.
                let value = &held[lead + 1..held.len() - 1];
                self.signed(value, false).map(|url| {
                    let mut new = held[..=lead].to_vec();
                    new.extend_from_slice(escape_string(&url, q).as_bytes());
                    new.push(q);
                    new
                })
            }
            None => {
                let trail = held[lead..]
                    .iter()
                    .rev()
                    .take_while(|&&b| is_space(b))
                    .count();
                let value = &held[lead..held.len() - trail];
                self.signed(value, true).map(|url| {
                    let mut new = held[..lead].to_vec();
                    new.extend_from_slice(escape_unquoted(&url).as_bytes());
                    new.extend_from_slice(&held[held.len() - trail..]);
                    new
                })
            }
        };
        match replaced {
            Some(new) => out.extend_from_slice(&new),
            None => out.extend_from_slice(&held),
        }
        self.held = held;
        self.held.clear();
    }

    fn signed(&self, raw: &[u8], unquoted: bool) -> Option<String> {
        let readable = std::str::from_utf8(raw)
            .ok()
            .filter(|s| !self.signing.ascii_only() || s.is_ascii());
        let Some(value) = readable.and_then(|s| unescape(s, unquoted)) else {
            self.signing.unreadable();
            return None;
        };
        self.signing.sign(&value, UrlUse::Load)
    }
}

/// One byte of a string's content: `Some(escape state)` while the string goes on, `None` at
/// its end (its quote, or an unescaped newline, which makes it invalid).
fn string_step(quote: u8, escape: Escape, b: u8) -> Option<Escape> {
    match escape.step(b) {
        (next, true) => Some(next),
        _ if b == quote || is_newline(b) => None,
        _ => Some(Escape::No),
    }
}

/// A URL's value with CSS escapes decoded; `None` for a NUL, which the browser replaces.
pub(crate) fn unescape(raw: &str, unquoted: bool) -> Option<String> {
    if raw.contains('\0') {
        return None;
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            None => {
                if unquoted {
                    out.push('\u{fffd}');
                }
            }
            Some(h) if h.is_ascii_hexdigit() => {
                let mut value = 0u32;
                for _ in 0..6 {
                    match chars.peek().and_then(|h| h.to_digit(16)) {
                        Some(d) => {
                            value = value * 16 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                match chars.peek() {
                    Some('\r') => {
                        chars.next();
                        if chars.peek() == Some(&'\n') {
                            chars.next();
                        }
                    }
                    Some(' ' | '\t' | '\n' | '\x0c') => {
                        chars.next();
                    }
                    _ => {}
                }
                let c = char::from_u32(value).filter(|&c| c != '\0');
                out.push(c.unwrap_or('\u{fffd}'));
            }
            Some('\r') => {
                chars.next();
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
            }
            Some('\n' | '\x0c') => {
                chars.next();
            }
            Some(other) => {
                out.push(other);
                chars.next();
            }
        }
    }
    Some(out)
}

/// A hex escape, with the space that ends it.
fn hex_escape(out: &mut String, c: char) {
    out.push_str(&format!("\\{:x} ", u32::from(c)));
}

/// `url` inside a CSS string quoted with `quote`: read back as exactly `url`. `<` is escaped
/// too, so the text can never close a `<style>` element.
pub(crate) fn escape_string(url: &str, quote: u8) -> String {
    let mut out = String::with_capacity(url.len() + 8);
    for c in url.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c == char::from(quote) => {
                out.push('\\');
                out.push(c);
            }
            c if c < ' ' || c == '\u{7f}' || c == '<' => hex_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// `url` as an unquoted `url(…)` value: read back as exactly `url`.
pub(crate) fn escape_unquoted(url: &str) -> String {
    let mut out = String::with_capacity(url.len() + 8);
    for c in url.chars() {
        match c {
            '\\' | '"' | '\'' | '(' | ')' => {
                out.push('\\');
                out.push(c);
            }
            c if c <= ' ' || c == '\u{7f}' || c == '<' => hex_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out
}
