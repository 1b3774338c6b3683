//! Flight payloads inline in HTML: `<script>self.__next_f.push([1,"…"])</script>`.
//!
//! The HTML stage hands this stage the text of every Flight script, in pieces, and says where
//! each script ends. The browser concatenates the decoded strings of all `[1,…]` pushes (and
//! the bytes of `[3,"base64"]` pushes) into one Flight stream, so a row may start in one script
//! and end several scripts later. This stage decodes each string, feeds the one
//! [`RowRewriter`], and writes the rewritten bytes back into the string in Next.js's escaping;
//! where the string is written as Next.js writes it, the fast reader ([`EscapedRows`]) does
//! the same on the escaped bytes without decoding them, and gives what it cannot read back to
//! the decoding path at a place where nothing is held.
//!
//! **Holding.** Usually the rewriter has nothing held when a string ends, and every byte
//! streams. When a `T` row (or a possible URL) is still open at the end of a string, its new
//! length is not known yet: the output stops at that point (the *slot*) and everything after
//! it (the rest of that script, the HTML between, the next scripts' wrappers) is held. Rows
//! decoded meanwhile go into the slot (encoded as they arrive), and the later strings stay
//! empty, until a string ends with nothing open; then the slot is written in place and
//! everything held is released. The
//! browser sees the same concatenated stream, so moving bytes between strings changes nothing
//! for React. Decisions are only taken where strings end, so the output does not depend on how
//! the input was split.
//!
//! **Degrading.** Over `max_held` bytes held, a push this stage cannot parse, a script that
//! ends inside its string, or the end of the document: what is held is released as it came
//! (a `T` row with its original length is still valid), and anything unparsed passes through
//! as it is. A possible URL at the end of a newline row is not let go by the cap while a
//! string is open to take it later, since only its next bytes can decide it; outside a string
//! it goes as it came, with the rest of its row.
//!
//! **The cap, independent of the cuts.** What the cap counts grows with every byte of input
//! while a hold lasts: the decoded Flight bytes held or moved into the slot, and the output
//! behind the slot (markup and script wrappers), never what the URL rule made of them. Inside
//! a string the release comes exactly after the character during which the count passed the
//! cap (or at the string's end), wherever the input was cut, and only whole characters move
//! into the earlier string: each string is its own JavaScript string, so a character split
//! between two would reach React as two U+FFFD. Outside a string no Flight byte arrives, and
//! releasing anywhere there produces the same bytes, so the count is compared where pieces
//! end and, at the latest, where the next string opens or the document ends.
//!
//! **Overshoot.** Inside a string the count passes `max_held` by at most one character (4
//! bytes: the one that passed it, then the rest of its character). Outside a string, by at
//! most one piece the HTML stage hands on before calling [`InlineFlight::after_markup`]: while
//! a row is held, the HTML stage passes markup on in pieces of at most 512 bytes
//! (`segments::MARKUP_STEP`, plus the URL rule's growth in it). The bytes actually held can exceed the count by what the URL rule adds to
//! the held Flight bytes (a longer host in each rewritten URL).

use base64::Engine as _;

use super::escaped::EscapedRows;
use super::js_string::{Decoded, StringDecoder, StringEncoder};
use super::rows::RowRewriter;
use crate::url_rewrite::UrlRule;

/// How a Flight script's text starts, after optional whitespace.
const CALL: &[u8] = b"self.__next_f.push([";

/// How a push ends, from its string's closing quote.
const CLOSE: &[u8] = b"\"])";

/// Most string text the decode, rewrite and encode path takes at once, where the fast reader
/// ([`EscapedRows`]) stopped: then the fast reader tries again.
const SLOW_STEP: usize = 64;

/// The degrade reason when held output passes the cap.
const CAP: &str = "held output passed integrations.nextjs.max_held_bytes";

/// Where in the current script's text this stage is.
#[derive(Debug)]
enum Script {
    /// Before or between scripts.
    Outside,
    /// Matching [`CALL`]: this many bytes matched.
    Call(usize),
    /// After the call's `[`: `kind` is `b'1'` or `b'3'` once read; `comma_quote` counts the
    /// bytes of `,"` matched after it.
    Kind {
        kind: Option<u8>,
        comma_quote: usize,
    },
    /// Inside a `[1,"…"]` string.
    Text(StringDecoder),
    /// Inside a `[3,"…"]` string: base64 characters not yet decoded (fewer than four).
    Base64(Vec<u8>),
    /// After a string: this many bytes of [`CLOSE`] matched.
    Close(usize),
    /// After the push: only whitespace and `;` may follow. Another push would add bytes to
    /// the stream that this stage did not read.
    Tail,
    /// The rest of the script is copied as it is.
    Rest,
}

/// Output held behind the slot.
#[derive(Debug, Default)]
struct Hold {
    /// Rewritten Flight bytes that belong at the slot, already encoded into the string
    /// (by `slot_encoder`, or written as they came by the fast reader).
    slot: Vec<u8>,
    /// Encodes into `slot`; what it holds of a character goes out at the release.
    slot_encoder: StringEncoder,
    /// Decoded bytes moved into `slot`, for the peak.
    slot_decoded: usize,
    /// Everything output after the slot.
    after: Vec<u8>,
    /// Decoded Flight bytes the row rewriter held when the hold began, plus those decoded
    /// since.
    flight: usize,
    /// `Some(n)` once the cap was passed inside the current string: the release waits for
    /// the end of the character that passed it, at most `n` more continuation bytes.
    over: Option<usize>,
}

impl Hold {
    /// What the cap counts: the held Flight bytes as decoded, and the output behind the
    /// slot. Both only grow while the hold lasts, by the input alone (what the URL rule made
    /// of them does not count), so where the count passes the cap does not depend on where
    /// the input was cut.
    fn counted(&self) -> usize {
        self.flight + self.after.len()
    }
}

/// Where held output goes: behind the slot while holding, else `live`.
fn after_or<'a>(hold: &'a mut Option<Hold>, live: &'a mut Vec<u8>) -> &'a mut Vec<u8> {
    match hold {
        Some(hold) => &mut hold.after,
        None => live,
    }
}

/// The inline Flight stage. See the module docs.
#[derive(Debug)]
pub(crate) struct InlineFlight {
    rows: RowRewriter,
    /// The fast reader of push strings.
    escaped: EscapedRows,
    script: Script,
    encoder: StringEncoder,
    hold: Option<Hold>,
    max_held: usize,
    peak_held: usize,
    /// Set once the payload can no longer be followed: later scripts are copied.
    opaque: bool,
    /// Scratch: decoded bytes of the current piece, and their rewrite.
    decoded: Vec<u8>,
    rewritten: Vec<u8>,
}

impl InlineFlight {
    pub(crate) fn new(rule: UrlRule, max_held: usize) -> Self {
        InlineFlight {
            escaped: EscapedRows::new(&rule),
            rows: RowRewriter::new(rule, max_held),
            script: Script::Outside,
            encoder: StringEncoder::default(),
            hold: None,
            max_held,
            peak_held: 0,
            opaque: false,
            decoded: Vec::new(),
            rewritten: Vec::new(),
        }
    }

    /// Where output goes now: behind the slot while holding, else `out`.
    pub(crate) fn target<'a>(&'a mut self, out: &'a mut Vec<u8>) -> &'a mut Vec<u8> {
        after_or(&mut self.hold, out)
    }

    /// Largest number of bytes held at once.
    pub(crate) fn peak_held(&self) -> usize {
        self.peak_held.max(self.rows.peak_held())
    }

    /// Why rewriting degraded, the first time it did.
    pub(crate) fn degraded(&self) -> Option<&'static str> {
        self.rows.degraded()
    }

    /// A piece of a Flight script's text.
    pub(crate) fn script_text(&mut self, mut text: &[u8], out: &mut Vec<u8>) {
        if matches!(self.script, Script::Outside) {
            self.script = if self.opaque {
                Script::Rest
            } else {
                Script::Call(0)
            };
        }
        while !text.is_empty() {
            let used = match &self.script {
                Script::Outside | Script::Rest => {
                    self.target(out).extend_from_slice(text);
                    text.len()
                }
                &Script::Call(matched) => self.call(text, matched, out),
                &Script::Kind { kind, comma_quote } => self.kind(text[0], kind, comma_quote, out),
                Script::Text(_) => self.text(text, out),
                Script::Base64(_) => self.base64(text, out),
                &Script::Close(matched) => self.close(text, matched, out),
                Script::Tail => self.tail(text, out),
            };
            text = &text[used..];
        }
        self.enforce_cap(out);
    }

    /// The current Flight script ended (its end tag starts here).
    pub(crate) fn script_end(&mut self, out: &mut Vec<u8>) {
        if matches!(
            self.script,
            Script::Text(_) | Script::Base64(_) | Script::Close(_)
        ) {
            // The browser rejects such a script, so React never sees its bytes: the stream can
            // no longer be followed.
            self.stop("a Flight script ended inside its push", out);
        }
        self.script = Script::Outside;
    }

    /// Stops rewriting: what is held is released as it came, the rest of the current script
    /// and every later one pass through as they are.
    pub(crate) fn stop(&mut self, why: &'static str, out: &mut Vec<u8>) {
        self.escaped.give_back(&mut self.rows);
        self.enforce_cap(out);
        self.opaque = true;
        let mut lone = Vec::new();
        let mut raw = Vec::new();
        if let Script::Text(decoder) = &mut self.script {
            decoder.lone_high(&mut lone);
            raw.extend_from_slice(decoder.raw_held());
        }
        if !lone.is_empty() {
            self.feed(&lone, out);
        }
        self.rows.give_up(why, &mut self.rewritten);
        self.flush_rewritten(out);
        let target = after_or(&mut self.hold, out);
        self.encoder.finish(target);
        self.release(out);
        // The unfinished escape's own bytes, as they came.
        out.extend_from_slice(&raw);
        if !matches!(self.script, Script::Outside) {
            self.script = Script::Rest;
        }
    }

    /// Ends the document.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        self.escaped.give_back(&mut self.rows);
        self.script_end(out);
        self.enforce_cap(out);
        self.rows.finish(&mut self.rewritten);
        self.flush_rewritten(out);
        self.release(out);
    }

    fn call(&mut self, text: &[u8], matched: usize, out: &mut Vec<u8>) -> usize {
        let mut matched = matched;
        let mut used = 0;
        for &b in text {
            if matched == 0 && b.is_ascii_whitespace() {
                used += 1;
                continue;
            }
            if b != CALL[matched] {
                // Not a push this stage knows (the HTML stage saw the same marker, so this
                // cannot happen); copy the rest.
                self.script = Script::Rest;
                break;
            }
            matched += 1;
            used += 1;
            if matched == CALL.len() {
                self.script = Script::Kind {
                    kind: None,
                    comma_quote: 0,
                };
                break;
            }
        }
        if let Script::Call(m) = &mut self.script {
            *m = matched;
        }
        self.target(out).extend_from_slice(&text[..used]);
        used
    }

    fn kind(&mut self, b: u8, kind: Option<u8>, comma_quote: usize, out: &mut Vec<u8>) -> usize {
        match kind {
            None if b == b'1' || b == b'3' => {
                self.script = Script::Kind {
                    kind: Some(b),
                    comma_quote: 0,
                };
            }
            None => {
                // `[0]`, `[2,…]` (form state) or anything else: not part of the stream.
                self.script = Script::Rest;
                return 0;
            }
            Some(kind) if b == b",\""[comma_quote] => {
                if comma_quote == 1 {
                    // The last place before the string where the cap is compared as outside a
                    // string, whichever pieces the input came in (see `enforce_cap`).
                    self.enforce_cap(out);
                }
                self.script = match (comma_quote, kind) {
                    (0, _) => Script::Kind {
                        kind: Some(kind),
                        comma_quote: 1,
                    },
                    (_, b'1') => Script::Text(StringDecoder::new()),
                    _ => {
                        // The bytes of a base64 push reach the client as they are; what is
                        // held must go out before them.
                        self.release_for_binary(out);
                        Script::Base64(Vec::new())
                    }
                };
            }
            Some(_) => {
                self.stop("a Flight push whose payload is not a string", out);
                return 0;
            }
        }
        self.target(out).push(b);
        1
    }

    fn text(&mut self, text: &[u8], out: &mut Vec<u8>) -> usize {
        let Script::Text(decoder) = &self.script else {
            return 0;
        };
        if decoder.is_between() {
            if let Some(used) = self.read_fast(text, out) {
                return used;
            }
        }
        self.escaped.give_back(&mut self.rows);
        let Script::Text(decoder) = &mut self.script else {
            return 0;
        };
        let text = &text[..text.len().min(SLOW_STEP)];
        #[cfg(test)]
        SLOW_BYTES.with(|c| c.set(c.get() + text.len()));
        self.decoded.clear();
        let outcome = decoder.decode(text, &mut self.decoded);
        let decoded = std::mem::take(&mut self.decoded);
        self.feed_in_string(&decoded, out);
        self.decoded = decoded;
        match outcome {
            Decoded::More => text.len(),
            Decoded::End(at) => {
                // A release the cap made due waits no longer than the string's end, and comes
                // while the string is still open: a possible URL can then wait for the next
                // string instead of being let go as it came (see `release_in_string`).
                if self.hold.as_ref().is_some_and(|hold| hold.over.is_some()) {
                    self.release_in_string(out);
                }
                self.string_end(out);
                self.script = Script::Close(0);
                at
            }
            Decoded::Invalid(at) => {
                self.stop("a Flight string this stage cannot decode", out);
                at
            }
        }
    }

    /// The fast reader's turn ([`EscapedRows`]), between characters of a `[1,"…"]` string:
    /// `Some(bytes used)` if it read any or ended the string, `None` to go the slow way.
    ///
    /// It reads where nothing is half done (no escape begun, no character half encoded, the
    /// row rewriter between rows or in a newline row with nothing held). Under a hold it
    /// writes into the slot and reads no more than the cap leaves, so the slow path is the one
    /// that passes the cap, at the exact byte it always does.
    fn read_fast(&mut self, text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
        if !(self.encoder.is_idle() && fast_path()) {
            return None;
        }
        let budget = match &self.hold {
            None => u64::MAX,
            Some(hold) if hold.over.is_none() && hold.slot_encoder.is_idle() => {
                self.max_held.saturating_sub(hold.counted()) as u64
            }
            Some(_) => return None,
        };
        let mut at = self.rows.handover()?;
        let open_before = self.escaped.held();
        let target = match &mut self.hold {
            Some(hold) => &mut hold.slot,
            None => &mut *out,
        };
        let read = self
            .escaped
            .rewrite(self.rows.rule(), text, &mut at, budget, target);
        self.rows.take_back(at, read.peak);
        if let Some(hold) = &mut self.hold {
            let decoded = usize::try_from(read.decoded).unwrap_or(usize::MAX);
            hold.flight += decoded;
            // Into the slot went what was read, less what an open row keeps, plus what it
            // kept before and let go now.
            hold.slot_decoded += (decoded + open_before).saturating_sub(self.escaped.held());
        }
        self.note_peak();
        if read.used > 0 {
            return Some(read.used);
        }
        if self.escaped.is_open() && text.first() == Some(&b'"') {
            // The string ends inside the open `T` row: as the slow path ends a string.
            self.string_end(out);
            self.script = Script::Close(0);
            return Some(0);
        }
        None
    }

    /// Rewrites decoded bytes of a `[1,"…"]` string, releasing what is held where the cap
    /// says (see the module docs): exactly after the character during which what the cap
    /// counts passed `max_held`, so the point depends on the bytes alone, never on where the
    /// input was cut, and only whole characters move into the earlier string.
    fn feed_in_string(&mut self, mut decoded: &[u8], out: &mut Vec<u8>) {
        // A UTF-8 character has at most three bytes after its first.
        const MAX_CONTINUATION: usize = 3;
        let is_continuation = |b: &u8| b & 0xc0 == 0x80;
        let max_held = self.max_held;
        while !decoded.is_empty() {
            let Some(hold) = &mut self.hold else {
                self.feed(decoded, out);
                return;
            };
            // The rest of the character that passed the cap: continuation bytes, a bounded
            // number of them (more would not be one character).
            let finish_char = |bytes: &[u8], allowed: usize| {
                bytes
                    .iter()
                    .take(allowed)
                    .position(|b| !is_continuation(b))
                    .unwrap_or(bytes.len().min(allowed))
            };
            let n = match hold.over {
                Some(allowed) => {
                    let n = finish_char(decoded, allowed);
                    hold.over = Some(allowed - n);
                    n
                }
                None => {
                    let room = max_held.saturating_sub(hold.counted());
                    if decoded.len() <= room {
                        decoded.len()
                    } else {
                        // Byte `room` passes the cap.
                        let rest = &decoded[room + 1..];
                        let n = finish_char(rest, MAX_CONTINUATION);
                        hold.over = Some(MAX_CONTINUATION - n);
                        room + 1 + n
                    }
                }
            };
            hold.flight += n;
            let due = hold.over.is_some_and(|allowed| allowed == 0) || n < decoded.len();
            let over = hold.over.is_some();
            self.feed(&decoded[..n], out);
            self.note_peak();
            decoded = &decoded[n..];
            if over && due {
                self.release_in_string(out);
            }
        }
    }

    /// Rewrites decoded bytes: into the slot while holding, else encoded into the string.
    fn feed(&mut self, decoded: &[u8], out: &mut Vec<u8>) {
        self.rows.write(decoded, &mut self.rewritten);
        self.flush_rewritten(out);
    }

    /// Encodes rewritten bytes waiting in scratch into the current string.
    fn flush_rewritten(&mut self, out: &mut Vec<u8>) {
        if !self.rewritten.is_empty() {
            match &mut self.hold {
                Some(hold) => {
                    hold.slot_encoder.encode(&self.rewritten, &mut hold.slot);
                    hold.slot_decoded += self.rewritten.len();
                }
                None => self.encoder.encode(&self.rewritten, out),
            }
            self.rewritten.clear();
        }
    }

    /// A `[1,"…"]` string ended: start holding if rows are open, release if none are.
    fn string_end(&mut self, out: &mut Vec<u8>) {
        let target = after_or(&mut self.hold, out);
        self.encoder.finish(target);
        let open = self.rows.is_holding() || self.escaped.is_open();
        match (&self.hold, open) {
            (None, true) => {
                self.hold = Some(Hold {
                    flight: self.rows.held() + self.escaped.held(),
                    ..Hold::default()
                })
            }
            (Some(_), false) => self.release(out),
            _ => {}
        }
    }

    /// Writes the slot in place and everything held after it.
    fn release(&mut self, out: &mut Vec<u8>) {
        if let Some(mut hold) = self.hold.take() {
            hold.slot_encoder.finish(&mut hold.slot);
            out.extend_from_slice(&hold.slot);
            out.extend_from_slice(&hold.after);
        }
    }

    /// Before a base64 push: release what is held, as it came, so the push's bytes follow it.
    fn release_for_binary(&mut self, out: &mut Vec<u8>) {
        self.escaped.give_back(&mut self.rows);
        self.rows.release_held(
            "a base64 Flight push inside an open row",
            &mut self.rewritten,
        );
        self.flush_rewritten(out);
        self.release(out);
    }

    fn base64(&mut self, text: &[u8], out: &mut Vec<u8>) -> usize {
        let end = memchr::memchr(b'"', text);
        let body = &text[..end.unwrap_or(text.len())];
        self.target(out).extend_from_slice(body);
        let Script::Base64(pending) = &mut self.script else {
            return 0;
        };
        pending.extend_from_slice(body);
        let whole = if end.is_some() {
            pending.len()
        } else {
            pending.len() / 4 * 4
        };
        let decoded = base64::engine::general_purpose::STANDARD.decode(&pending[..whole]);
        pending.drain(..whole);
        match decoded {
            Ok(bytes) => self.rows.observe(&bytes),
            Err(_) => {
                self.stop("a base64 Flight push that is not base64", out);
                return body.len();
            }
        }
        if end.is_some() {
            self.script = Script::Close(0);
        }
        body.len()
    }

    fn close(&mut self, text: &[u8], matched: usize, out: &mut Vec<u8>) -> usize {
        let n = text.len().min(CLOSE.len() - matched);
        if text[..n] != CLOSE[matched..matched + n] {
            self.stop("a Flight push that does not end after its string", out);
            return 0;
        }
        self.target(out).extend_from_slice(&text[..n]);
        self.script = if matched + n == CLOSE.len() {
            Script::Tail
        } else {
            Script::Close(matched + n)
        };
        n
    }

    fn tail(&mut self, text: &[u8], out: &mut Vec<u8>) -> usize {
        let n = text
            .iter()
            .position(|b| !(b.is_ascii_whitespace() || *b == b';'))
            .unwrap_or(text.len());
        self.target(out).extend_from_slice(&text[..n]);
        if n < text.len() {
            self.stop("a Flight script with more code after its push", out);
        }
        n
    }

    /// Outside a `[1,"…"]` string: over the cap, what is held is released as it came rather
    /// than held any longer. Inside a string this does nothing; the cap is applied there as
    /// the bytes are decoded ([`feed_in_string`](Self::feed_in_string)).
    ///
    /// Outside a string no Flight byte arrives and what the cap counts only grows, and a
    /// release anywhere between two strings produces the same bytes: so comparing where the
    /// pieces end, and then where the next string opens (or the document ends, or the stage
    /// stops), gives the same output for every cut. A possible URL at the end of a newline row
    /// goes into the slot, as it came, with the rest of its row
    /// ([`RowRewriter::release_held`]): no later string is sure to come (the document may
    /// end, a base64 push may follow), and keeping it would leave it nowhere to go but the
    /// markup.
    fn enforce_cap(&mut self, out: &mut Vec<u8>) {
        self.note_peak();
        if matches!(self.script, Script::Text(_)) {
            return;
        }
        if self
            .hold
            .as_ref()
            .is_some_and(|hold| hold.counted() > self.max_held)
        {
            self.escaped.give_back(&mut self.rows);
            self.rows.release_held(CAP, &mut self.rewritten);
            self.flush_rewritten(out);
            self.release(out);
        }
    }

    /// Inside a `[1,"…"]` string, where the cap made a release due: the open `T` row is
    /// released as it came and the slot written in place, so the rest of this string streams.
    ///
    /// A possible URL at the end of a newline row (a few dozen bytes at most) is not a row: it
    /// stays in the rewriter ([`RowRewriter::release_row`]), and its next bytes decide it, so
    /// the row comes out whole. Its bytes then go into this string, or a hold starts again
    /// where it ends.
    fn release_in_string(&mut self, out: &mut Vec<u8>) {
        self.escaped.give_back(&mut self.rows);
        if self.hold.is_some() {
            self.rows.release_row(CAP, &mut self.rewritten);
            self.flush_rewritten(out);
        }
        self.release(out);
    }

    /// Records the bytes held right now in the peak.
    fn note_peak(&mut self) {
        let behind = self
            .hold
            .as_ref()
            .map_or(0, |hold| hold.slot_decoded + hold.after.len());
        let held = self.rows.held() + self.escaped.held();
        self.peak_held = self.peak_held.max(behind + held);
    }

    /// Whether output is held behind an open row: markup written now waits behind it.
    pub(crate) fn holding(&self) -> bool {
        self.hold.is_some()
    }

    /// Called by the HTML stage after it wrote markup behind the slot.
    pub(crate) fn after_markup(&mut self, out: &mut Vec<u8>) {
        if self.hold.is_some() {
            self.enforce_cap(out);
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Test count: string bytes the decoding path was given.
    pub(crate) static SLOW_BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(any(test, feature = "reference-paths"))]
thread_local! {
    /// Test and fuzzing switch: `false` turns the fast reader off, so the two paths can be
    /// compared.
    pub(crate) static FAST_PATH: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Whether the fast reader is on (always, unless a test or the fuzzer turned it off).
fn fast_path() -> bool {
    #[cfg(any(test, feature = "reference-paths"))]
    {
        FAST_PATH.with(std::cell::Cell::get)
    }
    #[cfg(not(any(test, feature = "reference-paths")))]
    {
        true
    }
}
