//! Flight rows read as they are written in a push string, escapes and all: the fast path of
//! [`InlineFlight`](super::InlineFlight).
//!
//! Decoding a push string, rewriting its rows and encoding them back touches every byte three
//! times, and Flight text has an escape every ten bytes or so. Yet almost all of it comes out
//! as it went in: only origin URLs change, and the lengths of the `T` rows that hold them. This
//! reader walks the string as it came and copies it through, rewriting only a short window
//! around each place where the origin host appears: decoded and encoded back, unless it needs
//! neither ([`is_quoted`]), when the rule runs over it as it stands, in one pass with the text
//! around it and the other such windows ([`write_plain`]).
//!
//! It reads what Next.js writes: plain bytes, and the escapes that [`StringEncoder`] writes for
//! `"`, `\`, newline, `<`, `>` and `&` ([`common_escape`]). The bytes it copies are therefore
//! the bytes the encoder would write for what they decode to. Anything else ends its reading:
//! another escape, a raw byte the encoder would escape, U+2028, the end of the string, a binary
//! row, a `T` row not wholly in hand or over the cap, or the end of the input. It then hands
//! back to the decode, rewrite and encode path ([`RowRewriter`](super::rows::RowRewriter)) at
//! the last place where nothing is held, and that path carries on from there. The two give the
//! same output; a property test runs both on every capture at every split.
//!
//! Why windows are enough: the URL rule changes bytes only inside a match; every match
//! contains the host, which none of the escapes read here can spell; and a match, with every
//! byte that decides it, lies between two bytes outside [`UrlRule::in_match`] (*separators*).
//! So a window from the separator before a host to the separator after it, rewritten on its
//! own with that first separator as the byte before it, comes out as it would in the whole
//! row. After a separator the line replacer holds nothing, so that is where this reader hands
//! back. A raw ASCII separator in the text is always itself, never part of an escape (the
//! only one it can end is `\"`, which decodes to it).

use std::io::Write as _;

use super::escaped_scan::{content, End, Scanned};
use super::js_string::{common_escape, is_unescaped, StringEncoder};
use super::rows::{Frame, Handover, RowRewriter, BINARY_TAGS, MAX_LENGTH_DIGITS};
use crate::url_rewrite::UrlRule;

/// The fast reader: reusable buffers, and a `T` row it has begun and not finished.
#[derive(Debug)]
pub(crate) struct EscapedRows {
    decoded: Vec<u8>,
    rewritten: Vec<u8>,
    text: Vec<u8>,
    open: Option<OpenText>,
    /// Whether the rule's target needs no escape in a string (then [`is_quoted`] windows
    /// are rewritten as they stand).
    plain_target: bool,
}

/// A `T` row whose text went on past the end of the input or of its string: its `T` went
/// out, the rest waits here, as it came, until the row is whole.
#[derive(Debug)]
struct OpenText {
    /// The length digits as they came.
    digits: Vec<u8>,
    /// The declared length.
    len: u64,
    /// The text so far, as it came (escaped).
    raw: Vec<u8>,
    /// Its decoded length.
    decoded: u64,
}

/// What one call of [`EscapedRows::rewrite`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Read {
    /// Input bytes read.
    pub(crate) used: usize,
    /// Decoded Flight bytes they hold (what the cap counts).
    pub(crate) decoded: u64,
    /// The most the row rewriter would have held meanwhile.
    pub(crate) peak: usize,
}

/// What a run of rewritten text came to.
struct Run {
    /// Input used up to here: what went out is decided.
    done: usize,
    /// The last decoded byte before `done`, if any went out.
    last: Option<u8>,
    /// Whether any URL was rewritten, and how much longer the decoded text got.
    changed: bool,
    growth: isize,
}

/// What became of a `T` row at the reader.
enum TextRead {
    /// Written out whole: where it ends, its decoded bytes, what the rewriter would have
    /// held.
    Whole(usize, u64, usize),
    /// Begun and left open at the end of the input or the string.
    Open(usize, u64),
    /// Left to the row rewriter, nothing read.
    Declined,
}

impl EscapedRows {
    /// A reader for text rewritten by `rule`, the rule every call is given.
    pub(crate) fn new(rule: &UrlRule) -> Self {
        EscapedRows {
            decoded: Vec::new(),
            rewritten: Vec::new(),
            text: Vec::new(),
            open: None,
            plain_target: is_unescaped(rule.target()),
        }
    }

    /// Reads rows from the start of `raw` (the text of a `[1,"…"]` string from where the row
    /// rewriter stands, `at`), appending their output to `out`, and reading at most `budget`
    /// decoded bytes. `at` becomes where the reading stopped.
    pub(crate) fn rewrite(
        &mut self,
        rule: &UrlRule,
        raw: &[u8],
        at: &mut Handover,
        budget: u64,
        out: &mut Vec<u8>,
    ) -> Read {
        let mut read = Read {
            used: 0,
            decoded: 0,
            peak: 0,
        };
        if let Some(open) = self.open.take() {
            match self.go_on(rule, open, raw, budget, out) {
                (used, decoded, Some(held)) => {
                    read = Read {
                        used,
                        decoded,
                        peak: held,
                    };
                    at.frame = Frame::Id;
                }
                (used, decoded, None) => {
                    return Read {
                        used,
                        decoded,
                        peak: 0,
                    }
                }
            }
        }
        let mut i = read.used;
        let mut n = read.decoded;
        // The first place at or after `i` where the host may start, once searched for.
        let mut next_host: Option<usize> = None;
        loop {
            match at.frame {
                Frame::Id => {
                    let room = usize::try_from(budget - n).unwrap_or(usize::MAX);
                    let span = &raw[i..raw.len().min(i.saturating_add(room))];
                    let digits = span
                        .iter()
                        .position(|b| !b.is_ascii_hexdigit())
                        .unwrap_or(span.len());
                    out.extend_from_slice(&raw[i..i + digits]);
                    i += digits;
                    n += digits as u64;
                    if raw.get(i) != Some(&b':') || n == budget {
                        break;
                    }
                    out.push(b':');
                    i += 1;
                    n += 1;
                    at.frame = Frame::Tag;
                }
                Frame::Tag => match raw.get(i) {
                    None | Some(b'"') => break,
                    Some(b'T') => match self.text_row(rule, raw, i, at.max_held, budget - n, out) {
                        TextRead::Whole(end, decoded, held) => {
                            i = end;
                            n += decoded;
                            read.peak = read.peak.max(held);
                            at.frame = Frame::Id;
                        }
                        TextRead::Open(end, decoded) => {
                            i = end;
                            n += decoded;
                            at.frame = Frame::Id;
                            break;
                        }
                        TextRead::Declined => break,
                    },
                    Some(tag) if BINARY_TAGS.contains(tag) => break,
                    // An escape this reader cannot decode might spell a tag.
                    Some(b'\\') if common_escape(&raw[i..]).is_none() => break,
                    // The row's first byte of content.
                    Some(_) => at.frame = Frame::Line,
                },
                Frame::Line => {
                    let Scanned {
                        end,
                        how,
                        decoded,
                        quotes_only,
                    } = content(raw, i, budget - n, true);
                    let row_end = how == End::Row;
                    // One search serves every row before the next candidate.
                    let mut host_from_here = || match next_host {
                        Some(at) if at >= i => at,
                        _ => {
                            let at = rule
                                .host_starts(&raw[i..])
                                .next()
                                .map_or(usize::MAX, |h| i + h);
                            next_host = Some(at);
                            at
                        }
                    };
                    if row_end && host_from_here() >= end {
                        // No host in the row: nothing in it changes.
                        out.extend_from_slice(&raw[i..end]);
                        n += decoded;
                        i = end;
                        at.before = Some(b'\n');
                        at.frame = Frame::Id;
                        continue;
                    }
                    let run =
                        self.rewrite_run(rule, raw, i..end, at.before, row_end, quotes_only, out);
                    // What was read past the last place where nothing is held goes back.
                    n += decoded - decoded_len(&raw[run.done..end]);
                    i = run.done;
                    if !row_end {
                        at.before = run.last.or(at.before);
                        break;
                    }
                    // The row and anything it held are over; its last byte is the newline.
                    at.before = Some(b'\n');
                    at.frame = Frame::Id;
                }
            }
        }
        Read {
            used: i,
            decoded: n,
            peak: read.peak,
        }
    }

    /// Whether a `T` row is open here.
    pub(crate) fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// What the row rewriter would hold for the open `T` row: its length digits, the comma
    /// and the text so far.
    pub(crate) fn held(&self) -> usize {
        self.open.as_ref().map_or(0, |open| {
            open.digits.len() + 1 + usize::try_from(open.decoded).unwrap_or(usize::MAX)
        })
    }

    /// Hands the open `T` row, if any, to the row rewriter, decoded, for the slow path to
    /// finish.
    pub(crate) fn give_back(&mut self, rows: &mut RowRewriter) {
        if let Some(open) = self.open.take() {
            let mut header = open.digits;
            header.push(b',');
            let mut text = Vec::with_capacity(open.raw.len());
            decode_common(&open.raw, &mut text);
            rows.resume_text(header, text, open.len - open.decoded);
        }
    }

    /// Reads more of the open `T` row from `raw`: `(used, decoded, Some(held))` if it is now
    /// whole and written out, `(used, decoded, None)` if it is still open.
    fn go_on(
        &mut self,
        rule: &UrlRule,
        mut open: OpenText,
        raw: &[u8],
        budget: u64,
        out: &mut Vec<u8>,
    ) -> (usize, u64, Option<usize>) {
        let want = open.len - open.decoded;
        let Scanned {
            end,
            how,
            decoded: n,
            ..
        } = content(raw, 0, want.min(budget), false);
        open.raw.extend_from_slice(&raw[..end]);
        open.decoded += n;
        if how != End::Count || n < want {
            self.open = Some(open);
            return (end, n, None);
        }
        let held = self.write_text(rule, &open.digits, open.len, &open.raw, false, out);
        (end, n, Some(held))
    }

    /// Writes a whole `T` row after its `T`: its length digits as they came, the comma and its
    /// escaped text, or, if a URL in it changed, the new length and the rewritten text.
    /// `quotes_only`: the text's only escapes are `\"`. Returns what the row rewriter would
    /// have held for it (digits, comma, text).
    fn write_text(
        &mut self,
        rule: &UrlRule,
        digits: &[u8],
        len: u64,
        raw: &[u8],
        quotes_only: bool,
        out: &mut Vec<u8>,
    ) -> usize {
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        let run = self.rewrite_run(rule, raw, 0..raw.len(), None, true, quotes_only, &mut text);
        if run.changed {
            let new_len = len.saturating_add_signed(run.growth as i64);
            // Into a Vec, writing cannot fail.
            let _ = write!(out, "{new_len:x},");
            out.extend_from_slice(&text);
        } else {
            out.extend_from_slice(digits);
            out.push(b',');
            out.extend_from_slice(raw);
        }
        self.text = text;
        usize::try_from(len).map_or(usize::MAX, |len| len + digits.len() + 1)
    }

    /// A `T` row whose `T` is at `raw[at]`, reading at most `budget` decoded bytes: written
    /// out whole (with its new length if a URL in it changed) if all of it is in `raw`, left
    /// open if `raw` or the string ends first, declined if something else stops it or it
    /// passes the cap.
    fn text_row(
        &mut self,
        rule: &UrlRule,
        raw: &[u8],
        at: usize,
        max_held: u64,
        budget: u64,
        out: &mut Vec<u8>,
    ) -> TextRead {
        let from = at + 1;
        let Some(digits) = raw[from..]
            .iter()
            .take(MAX_LENGTH_DIGITS + 1)
            .position(|b| !b.is_ascii_hexdigit())
        else {
            return TextRead::Declined;
        };
        let comma = from + digits;
        // The `T`, the digits and the comma.
        let head = digits as u64 + 2;
        if digits > MAX_LENGTH_DIGITS || raw.get(comma) != Some(&b',') || head > budget {
            return TextRead::Declined;
        }
        // At most 12 hex digits: fits a u64. No digits is a length of 0, as for the rewriter.
        let len = raw[from..comma].iter().fold(0u64, |n, &d| {
            (n << 4) | u64::from((d as char).to_digit(16).unwrap_or(0))
        });
        if len == 0 {
            out.extend_from_slice(&raw[at..=comma]);
            return TextRead::Whole(comma + 1, head, 0);
        }
        if len > max_held {
            return TextRead::Declined;
        }
        let Scanned {
            end,
            how,
            decoded: n,
            quotes_only,
        } = content(raw, comma + 1, len.min(budget - head), false);
        if how == End::Count && n == len {
            out.push(b'T');
            let body = &raw[comma + 1..end];
            let held = self.write_text(rule, &raw[from..comma], len, body, quotes_only, out);
            return TextRead::Whole(end, head + len, held);
        }
        // Cut off by the end of the input or the string (or an escape cut short there), or
        // by the budget: open. Anything else goes to the rewriter whole.
        let cut = how == End::Count || raw.len() - end < 6 || raw[end] == b'"';
        if !cut {
            return TextRead::Declined;
        }
        out.push(b'T');
        self.open = Some(OpenText {
            digits: raw[from..comma].to_vec(),
            len,
            raw: raw[comma + 1..end].to_vec(),
            decoded: n,
        });
        TextRead::Open(end, head + n)
    }

    /// Writes `raw[from..end]`, text read by [`content`], with the URL rule applied window by
    /// window. `before` is the decoded byte before it. With `at_end` the text is all there is
    /// (a `T` row's, or a newline row's up to and with its `\n`); otherwise the output stops
    /// after the last separator, since what follows may be the start of a URL. `quotes_only`:
    /// its only escapes are `\"` (and a newline row's closing `\n`).
    #[allow(clippy::too_many_arguments)]
    fn rewrite_run(
        &mut self,
        rule: &UrlRule,
        raw: &[u8],
        span: std::ops::Range<usize>,
        mut before: Option<u8>,
        at_end: bool,
        quotes_only: bool,
        out: &mut Vec<u8>,
    ) -> Run {
        let (from, end) = (span.start, span.end);
        let plain_target = self.plain_target;
        let mut run = Run {
            done: from,
            last: None,
            changed: false,
            growth: 0,
        };
        if at_end && quotes_only && plain_target {
            // Every window is quoted but one that takes in a row's closing `\n` ([`write_plain`]).
            write_plain(rule, raw, end, true, before, &mut run, out);
            return run;
        }
        let host = rule.host();
        // `raw[run.done..plain]` is quoted windows and the text between them, not written yet:
        // the rule rewrites it in one pass when a window that is not, or the end, comes.
        let mut plain = from;
        for h in rule.host_starts(&raw[from..end]) {
            let h = from + h;
            if h < plain
                || h + host.len() > end
                || !raw[h..h + host.len()].eq_ignore_ascii_case(host)
            {
                continue;
            }
            let start = last_separator(rule, raw, plain, h).unwrap_or(plain);
            let (stop, window_at_end) = match next_separator(rule, raw, h + host.len(), end) {
                Some(stop) => (stop, false),
                None if at_end => (end, true),
                None => {
                    write_plain(rule, raw, start, false, before, &mut run, out);
                    return run;
                }
            };
            let window = &raw[start..stop];
            if plain_target && is_quoted(window) {
                plain = stop;
                continue;
            }
            before = write_plain(rule, raw, start, false, before, &mut run, out);
            self.decoded.clear();
            decode_common(window, &mut self.decoded);
            self.rewritten.clear();
            let decided =
                rule.rewrite_piece(&self.decoded, before, window_at_end, &mut self.rewritten);
            if decided != self.decoded.len() {
                // Not decidable here after all: the output stops before the window.
                run.done = start;
                run.last = before;
                return run;
            }
            if self.rewritten == self.decoded {
                out.extend_from_slice(window);
            } else {
                let mut encoder = StringEncoder::default();
                encoder.encode(&self.rewritten, out);
                encoder.finish(out);
                run.changed = true;
                run.growth += self.rewritten.len() as isize - self.decoded.len() as isize;
            }
            before = self.decoded.last().copied().or(before);
            run.done = stop;
            run.last = before;
            plain = stop;
        }
        let stop = if at_end {
            end
        } else {
            last_separator(rule, raw, run.done, end).unwrap_or(run.done)
        };
        write_plain(rule, raw, stop, at_end, before, &mut run, out);
        run
    }
}

/// Writes `raw[run.done..to]` through the rule in one pass over its bytes as they are, and
/// moves `run` past it: text that holds no host but in quoted windows ([`is_quoted`]), and ends after a
/// separator or (with `at_end`) where the text ends. `before` is the decoded byte before it;
/// returns the one before `to`.
///
/// A quoted window decodes to its own bytes, but for a last `\"` that decodes to `"`. The
/// rule reads the two alike: both are bytes no match contains, so a match ends before either,
/// and the rule decides a match from the bytes up to the first such byte after the host (a
/// `\` there is read as an escape only if `u`, `n`, `r` or `t` follows). So each window comes
/// out as it would decoded, rewritten and encoded on its own, and grows as much. The same
/// holds for a window that takes in a newline row's closing `\n`, as in a text whose only
/// escapes are `\"`: the rule reads an escaped `\n` after a host as it reads the newline it
/// decodes to (both are looked past, [`crate::url_rewrite`]).
fn write_plain(
    rule: &UrlRule,
    raw: &[u8],
    to: usize,
    at_end: bool,
    before: Option<u8>,
    run: &mut Run,
    out: &mut Vec<u8>,
) -> Option<u8> {
    let text = &raw[run.done..to];
    if text.is_empty() {
        run.last = run.last.or(before);
        return before;
    }
    let mark = out.len();
    let decided = rule.rewrite_piece(text, before, at_end, out);
    // It ends after a byte no match contains, or at the end of the text.
    debug_assert_eq!(decided, text.len());
    let written = &out[mark..];
    if written != text {
        run.changed = true;
        run.growth += written.len() as isize - text.len() as isize;
    }
    // A separator; or the end of a text, where the caller knows the last byte (a row's `\n`)
    // or needs none (a `T` row's).
    run.last = Some(raw[to - 1]);
    run.done = to;
    run.last
}

/// Whether `window` is *quoted*: it holds no escape but perhaps a last `\"`. When the rule's
/// target needs no escape either, such a window decodes to itself (and `"`), and its rewrite
/// encodes to itself (and `\"`), so it is rewritten as it stands ([`write_plain`]).
fn is_quoted(window: &[u8]) -> bool {
    let body = window.strip_suffix(b"\\\"").unwrap_or(window);
    memchr::memchr(b'\\', body).is_none()
}

/// Decoded length of text [`content`] read.
fn decoded_len(raw: &[u8]) -> u64 {
    let mut i = 0;
    let mut n = 0u64;
    while i < raw.len() {
        i += common_escape(&raw[i..]).map_or(1, |(_, len)| len);
        n += 1;
    }
    n
}

/// Decodes text that [`content`] read.
fn decode_common(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < raw.len() {
        let at = memchr::memchr(b'\\', &raw[i..]).map_or(raw.len(), |n| i + n);
        out.extend_from_slice(&raw[i..at]);
        i = at;
        if let Some((b, len)) = common_escape(&raw[i..]) {
            out.push(b);
            i += len;
        } else if i < raw.len() {
            // Not reached: `content` read only common escapes. Copy rather than lose.
            out.push(raw[i]);
            i += 1;
        }
    }
}

/// Just after the last separator in `raw[lo..hi]`.
fn last_separator(rule: &UrlRule, raw: &[u8], lo: usize, hi: usize) -> Option<usize> {
    raw[lo..hi]
        .iter()
        .rposition(|&b| is_separator(rule, b))
        .map(|p| lo + p + 1)
}

/// Just after the first separator in `raw[lo..hi]`.
fn next_separator(rule: &UrlRule, raw: &[u8], lo: usize, hi: usize) -> Option<usize> {
    raw[lo..hi]
        .iter()
        .position(|&b| is_separator(rule, b))
        .map(|p| lo + p + 1)
}

/// An ASCII byte no match contains.
fn is_separator(rule: &UrlRule, b: u8) -> bool {
    b.is_ascii() && !rule.in_match(b)
}

#[cfg(test)]
mod tests {
    //! The fast reader against the decode, rewrite and encode path alone: the same HTML stage
    //! with the reader switched off ([`super::super::inline::FAST_PATH`]).

    use super::*;
    use crate::body::stage::BodyStage;
    use crate::stages::html::HtmlStage;
    use crate::stages::rsc::inline::{FAST_PATH, SLOW_BYTES};
    use crate::stages::rsc::next_js_escape;
    use lol_html::AsciiCompatibleEncoding;
    use proptest::prelude::*;

    const ORIGIN: &str = "origin.example.com";

    /// The authority URLs are rewritten to.
    const TARGET: &str = "first-party.example:8443";

    fn stage_output(
        input: &[u8],
        origin: &str,
        cuts: &[usize],
        max_held: usize,
        fast: bool,
    ) -> Vec<u8> {
        stage_output_to(TARGET, input, origin, cuts, max_held, fast)
    }

    /// The HTML stage's output for `input` cut at `cuts`, with URLs of `origin` rewritten to
    /// `target`, the fast reader on or off.
    fn stage_output_to(
        target: &str,
        input: &[u8],
        origin: &str,
        cuts: &[usize],
        max_held: usize,
        fast: bool,
    ) -> Vec<u8> {
        FAST_PATH.with(|on| on.set(fast));
        let rule = UrlRule::new(origin, "https", target);
        let utf8 = AsciiCompatibleEncoding::new(encoding_rs::UTF_8).expect("UTF-8");
        let mut stage = HtmlStage::new(rule, utf8, Some(max_held));
        let mut out = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain([&input.len()]) {
            let cut = cut.clamp(at, input.len());
            stage.write(&input[at..cut], &mut out);
            at = cut;
        }
        stage.finish(&mut out);
        FAST_PATH.with(|on| on.set(true));
        out
    }

    /// Both paths on `input`, cut at `cuts`: the outputs must be equal.
    fn same(input: &[u8], origin: &str, cuts: &[usize], max_held: usize) -> Result<(), String> {
        same_to(TARGET, input, origin, cuts, max_held)
    }

    /// [`same`] with URLs rewritten to `target`.
    fn same_to(
        target: &str,
        input: &[u8],
        origin: &str,
        cuts: &[usize],
        max_held: usize,
    ) -> Result<(), String> {
        let fast = stage_output_to(target, input, origin, cuts, max_held, true);
        let slow = stage_output_to(target, input, origin, cuts, max_held, false);
        if fast == slow {
            Ok(())
        } else {
            let at = fast
                .iter()
                .zip(&slow)
                .position(|(a, b)| a != b)
                .unwrap_or(fast.len().min(slow.len()));
            let from = at.saturating_sub(80);
            Err(format!(
                "cuts {cuts:?} cap {max_held}: differ at {at}\n fast …{}\n slow …{}",
                String::from_utf8_lossy(&fast[from..(at + 80).min(fast.len())]),
                String::from_utf8_lossy(&slow[from..(at + 80).min(slow.len())]),
            ))
        }
    }

    const CAPTURES: [&[u8]; 4] = [
        include_bytes!("../../../../../fixtures/nextjs/index.body"),
        include_bytes!("../../../../../fixtures/nextjs/live.body"),
        include_bytes!("../../../../../fixtures/nextjs/about.body"),
        include_bytes!("../../../../../fixtures/nextjs/nonce.body"),
    ];
    const CAPTURE_ORIGIN: &str = "origin.demo-publisher.example";

    #[test]
    fn captures_come_out_as_the_slow_path_writes_them_at_every_chunk_size() {
        for page in CAPTURES {
            let whole = stage_output(page, CAPTURE_ORIGIN, &[], 1 << 20, true);
            assert_ne!(whole, page, "the capture's URLs are rewritten");
            for chunk in (1..=64).chain([97, 500, 1000, 4096, 8192, 16384]) {
                let cuts: Vec<usize> = (chunk..page.len()).step_by(chunk).collect();
                for cap in [1 << 20, 4096, 300] {
                    same(page, CAPTURE_ORIGIN, &cuts, cap).unwrap();
                }
            }
        }
    }

    #[test]
    fn a_target_a_string_must_escape_is_escaped_in_every_window() {
        // Windows are copied without encoding only when the target needs no escape.
        const ODD: &str = "a\"b<c>&d\\e\u{2028}f";
        const ESCAPED: &[u8] = b"a\\\"b\\u003c";
        for page in CAPTURES {
            let whole = stage_output_to(ODD, page, CAPTURE_ORIGIN, &[], 1 << 20, false);
            assert!(
                whole.windows(ESCAPED.len()).any(|w| w == ESCAPED),
                "the target is escaped in a push string"
            );
            for chunk in [7, 64, 8192] {
                let cuts: Vec<usize> = (chunk..page.len()).step_by(chunk).collect();
                same_to(ODD, page, CAPTURE_ORIGIN, &cuts, 1 << 20).unwrap();
            }
        }
    }

    #[test]
    fn the_fast_reader_reads_nearly_all_of_every_capture() {
        // What the slow path decodes is counted where it does (`SLOW_BYTES`).
        for page in CAPTURES {
            let flight: usize = push_strings(page).iter().map(|s| s.len()).sum();
            for chunk in [8192, 1 << 20] {
                SLOW_BYTES.with(|n| n.set(0));
                let cuts: Vec<usize> = (chunk..page.len()).step_by(chunk).collect();
                stage_output(page, CAPTURE_ORIGIN, &cuts, 64 * 1024, true);
                let slow = SLOW_BYTES.with(std::cell::Cell::get);
                assert!(
                    slow * 100 <= flight,
                    "{slow} of {flight} bytes the slow way"
                );
            }
        }
    }

    #[test]
    fn what_next_js_does_not_write_goes_the_slow_way() {
        // Each is read by the slow path, which writes it the way Next.js would.
        for odd in [
            "\u{2028}", "\u{2029}", "<", "\\/", "\\u0041", "\\t", "\u{1}",
        ] {
            let page = format!(
                "<script>self.__next_f.push([1,\"0:[\\\"a{odd}b https://{ORIGIN}/\\\"]\\n1:T5,a{odd}b\"])</script>"
            );
            same(page.as_bytes(), ORIGIN, &[], 1 << 20).unwrap_or_else(|e| panic!("{odd}: {e}"));
        }
        // A scheme-relative URL after a byte that continues a URL is a path, in a window too.
        for before in ["-", "_", "~", "@", " "] {
            let page = format!(
                "<script>self.__next_f.push([1,\"0:[\\\"a{before}//{ORIGIN}/x\\\"]\\n1:{before}//{ORIGIN}/\\n\"])</script>"
            );
            same(page.as_bytes(), ORIGIN, &[], 1 << 20).unwrap_or_else(|e| panic!("{before}: {e}"));
        }
    }

    /// `pushes` as a page (raw string bodies; `None` a base64 push of `xy`), both paths
    /// compared uncut and cut at every single place, under each cap.
    fn same_at_every_cut(pushes: &[Option<&[u8]>], origin: &str, caps: &[usize]) {
        let mut page = b"<p>x</p>".to_vec();
        for push in pushes {
            match push {
                Some(body) => {
                    page.extend_from_slice(b"<script>self.__next_f.push([1,\"");
                    page.extend_from_slice(body);
                    page.extend_from_slice(b"\"])</script><i>y</i>");
                }
                None => {
                    page.extend_from_slice(b"<script>self.__next_f.push([3,\"eHk=\"])</script>")
                }
            }
        }
        for &cap in caps {
            for cut in std::iter::once(None).chain((0..=page.len()).map(Some)) {
                let cuts: Vec<usize> = cut.into_iter().collect();
                same(&page, origin, &cuts, cap)
                    .unwrap_or_else(|e| panic!("{}\n{e}", String::from_utf8_lossy(&page)));
            }
        }
    }

    #[test]
    fn urls_that_end_a_row_or_a_text() {
        // A URL right before a row's closing `\n`, in rows whose only other escapes are `\"`
        // (read in one pass of the rule) and in rows with other escapes (window by window).
        let rows: &[&[u8]] = &[
            br#"0:https://origin.example.com\n1:\"//origin.example.com:443\"\n"#,
            br#"2:x//origin.example.com\n3:https://origin.example.com.\n4:[\"a\"]\n"#,
            br#"5:https://origin.example.com\n.evil.test\n"#,
            br#"6:\\//origin.example.com\n7:T1a,https://origin.example.com8:\"\"\n"#,
            br#"9:T1b,https://origin.example.com\na:\"\"\n"#,
        ];
        let pushes: Vec<Option<&[u8]>> = rows.iter().map(|p| Some(*p)).collect();
        same_at_every_cut(&pushes, ORIGIN, &[8, 21, 1 << 20]);
    }

    #[test]
    fn origins_whose_bytes_escapes_spell_and_origins_with_a_port() {
        // The reader finds host candidates in the escaped bytes: the `n` of a `\n` escape then
        // `extjs.org` is no host; after two escaped backslashes (slashes to URL parsing),
        // `nextjs.org` is one. With a port in the origin, `:80` is another authority.
        let caps = [8, 13, 21, 34, 55, 1 << 20];
        let cases: [(&str, &[&[u8]]); 3] = [
            (
                "nextjs.org",
                &[
                    br#"0:[\"\\\\nextjs.org/a\",\" //nextjs.org\"]\n1:T1a,x\nextjs.org //nextjs.org/\n"#,
                    br#"3:T1c,https://nextjs.org\nextjs.org4:\"https://nextjs.org\"\n"#,
                ],
            ),
            (
                "u003c.example",
                &[br#"0:[\"//u003c.example\\u003c\",\"\u003c//u003c.example\u003e\"]\n1:T10,//u003c.example\u003c2:\"\"\n"#],
            ),
            (
                "origin.example.com:8080",
                &[
                    br#"0:[\"https://origin.example.com:8080/\",\"//origin.example.com/\"]\n1:T1f,https://origin.example.com:8080"#,
                    br#"2:\"//origin.example.com:80\"\n"#,
                ],
            ),
        ];
        for (origin, pushes) in cases {
            let pushes: Vec<Option<&[u8]>> = pushes.iter().map(|p| Some(*p)).collect();
            same_at_every_cut(&pushes, origin, &caps);
        }
    }

    #[test]
    fn pushes_that_are_not_as_next_js_writes_them_at_every_cut_and_cap() {
        // Control bytes, lone surrogates, a raw U+2028 split between strings, a string end
        // and a base64 push inside an open `T` row, an escape split between strings and one
        // JSON lacks (the last two stop the rewriting).
        let rows: [&[u8]; 7] = [
            b"0:\\\"a\x01b //O/\\\"\\n1:T1a,ab\tc //O/\\n",
            b"2:\\\"\\ud83d //O/\\ude00\\ud83d\\n3:T15,//O\\u002e4:\\\"\xe2",
            b"\x80\xa8 //O\\\"\\n5:T1d,https://O",
            b"/ab6:T1a,\\\"//O\\\"",
            b"x\\n7:\\\"//O/\\\"\\n8:\\\"//O\\u",
            b"002f\\\"\\n",
            b"9:\\\"\\x //O\\\"\\n",
        ];
        let rows: Vec<Vec<u8>> = rows
            .iter()
            .map(|r| {
                r.split(|&b| b == b'O')
                    .collect::<Vec<_>>()
                    .join(ORIGIN.as_bytes())
            })
            .collect();
        let mut pushes: Vec<Option<&[u8]>> = rows.iter().map(|r| Some(&r[..])).collect();
        // A base64 push while row 6 is open, before the rest of it.
        pushes.insert(4, None);
        same_at_every_cut(&pushes, ORIGIN, &[8, 11, 16, 24, 40, 70, 1 << 20]);
    }

    /// The raw text of every `[1,"…"]` push in `page`.
    fn push_strings(page: &[u8]) -> Vec<&[u8]> {
        let marker = b"self.__next_f.push([1,\"";
        let mut strings = Vec::new();
        let mut at = 0;
        while let Some(start) = memchr::memmem::find(&page[at..], marker) {
            let from = at + start + marker.len();
            let len = memchr::memmem::find(&page[from..], b"\"])").expect("closed");
            strings.push(&page[from..from + len]);
            at = from + len;
        }
        strings
    }

    /// Pieces of Flight text, some of which this reader stops at.
    fn text_piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z ]{1,8}",
            Just("é✓😀’".to_owned()),
            Just("<b>&amp;</b>\"\\".to_owned()),
            Just("\n".to_owned()),
            Just("\t\r".to_owned()),
            Just("\u{2028}\u{2029}".to_owned()),
            Just(format!("https://{ORIGIN}/path")),
            Just(format!("http://{ORIGIN}:80")),
            Just(format!(" //{ORIGIN}/x")),
            Just(format!("//{ORIGIN}")),
            Just(format!(" //{ORIGIN}.evil.test/")),
            Just(format!("https:\\/\\/{ORIGIN}\\/y")),
            Just(format!("https:\\u002F\\u002F{ORIGIN}")),
            Just(format!("HTTPS://{}", ORIGIN.to_uppercase())),
            Just(format!("https://{ORIGIN}\n.evil")),
            Just(format!("href=\"//{ORIGIN}\"")),
            Just(format!("https://{ORIGIN}%2e")),
            Just(format!("https://{ORIGIN}-x")),
            Just(format!("a-//{ORIGIN}/")),
            Just(format!("_//{ORIGIN}")),
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(text_piece(), 0..6).prop_map(|p| p.concat())
    }

    /// A row without its id, decoded, in one of the forms the rewriter reads.
    fn row() -> impl Strategy<Value = String> {
        prop_oneof![
            text().prop_map(|t| format!("T{:x},{t}", t.len())),
            text().prop_map(|t| format!("T{:X},{t}", t.len())),
            text().prop_map(|t| format!("[{:?}]\n", t.replace('\n', " "))),
            text().prop_map(|t| format!("\"{}\n", t.replace('\n', " "))),
            text().prop_map(|t| format!("I{}\n", t.replace('\n', " "))),
            Just("o3,\n\"\\".to_owned()),
            Just("T,".to_owned()),
            Just("T0,".to_owned()),
            Just("\n".to_owned()),
        ]
    }

    /// Each character escaped as Next.js writes it, except those whose index modulo 17 is in
    /// `odd`, which get a spelling Next.js does not write where there is one.
    fn spell(decoded: &str, odd: &[usize]) -> Vec<String> {
        decoded
            .chars()
            .enumerate()
            .map(|(i, c)| match odd.contains(&(i % 17)) {
                true if c == '/' => "\\/".to_owned(),
                true if c.is_ascii_alphanumeric() => format!("\\u{:04X}", c as u32),
                true if c == '\u{2028}' || c == '<' => c.to_string(),
                _ => next_js_escape(&c.to_string()),
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

        /// Generated row streams, spelled mostly as Next.js writes them, pushed in strings cut
        /// anywhere, with markup between, read in pieces cut anywhere, under caps small and
        /// large: the fast reader changes nothing.
        #[test]
        fn generated_pages_come_out_as_the_slow_path_writes_them(
            rows in proptest::collection::vec(row(), 1..8),
            odd in proptest::collection::vec(0..17usize, 0..3),
            string_cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..5),
            input_cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
            cap in prop_oneof![Just(1usize << 20), 8..200usize],
            base64 in any::<bool>(),
        ) {
            let stream: String = rows.iter().enumerate().map(|(id, r)| format!("{id:x}:{r}")).collect();
            let units = spell(&stream, &odd);
            // Strings are cut between characters: each must be valid on its own.
            let mut bounds: Vec<usize> = string_cuts.iter().map(|i| i.index(units.len() + 1)).collect();
            bounds.extend([0, units.len()]);
            bounds.sort_unstable();
            bounds.dedup();
            let mut page = format!("<html><body><a href=\"https://{ORIGIN}/\">x</a>");
            for pair in bounds.windows(2) {
                page.push_str(&format!("<script>self.__next_f.push([1,\"{}\"])</script>", units[pair[0]..pair[1]].concat()));
                page.push_str(&format!("<p>https://{ORIGIN}/between</p>"));
                if base64 {
                    page.push_str("<script>self.__next_f.push([3,\"YWI=\"])</script>");
                }
            }
            page.push_str("</body></html>");
            let input = page.as_bytes();
            let mut cuts: Vec<usize> = input_cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            prop_assert_eq!(same(input, ORIGIN, &cuts, cap), Ok(()));
        }
    }
}
