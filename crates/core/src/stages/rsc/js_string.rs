//! The string literal inside `self.__next_f.push([1,"…"])`: decoded incrementally to the bytes
//! the browser feeds to React, and encoded back the way Next.js writes it.
//!
//! Next.js writes each Flight chunk with `JSON.stringify` and then escapes `<`, `>`, `&`,
//! U+2028 and U+2029 as `\u003c`, `\u003e`, `\u0026`, `\u2028` and `\u2029`, so a payload can
//! never close its `<script>` or break a JavaScript parser. The browser turns the string back
//! into bytes with `TextEncoder`: UTF-8, a lone surrogate becoming U+FFFD. [`StringDecoder`]
//! does the same, one input slice at a time (an escape may be split anywhere), and
//! [`StringEncoder`] writes bytes back in Next.js's style, so an unchanged chunk comes out
//! byte for byte as it went in.

use crate::stages::word_scan::{find_near, first_marked, splat, word_at, zero_bytes, WORD};

/// U+FFFD, what `TextEncoder` makes of a lone surrogate.
const REPLACEMENT: [u8; 3] = [0xef, 0xbf, 0xbd];

/// What [`StringDecoder::decode`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// All input was consumed; the string goes on.
    More,
    /// The closing quote is at this index of the input; the bytes after it are not the string's.
    End(usize),
    /// Not a JSON string: an escape that JSON does not have, or a raw line break. The input
    /// before this index was consumed; see [`StringDecoder::decode`] for how to lose nothing.
    Invalid(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Plain,
    /// After a backslash.
    Escape,
    /// After `\u`, with this many hex digits read.
    Unicode(u8),
}

/// Decodes the body of a JSON string (after its opening quote) into UTF-8 bytes.
#[derive(Debug)]
pub(crate) struct StringDecoder {
    state: State,
    /// The code unit being read by a `\u` escape.
    unit: u16,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
    /// The raw bytes of the escape in progress (at most `\uXXXX`), so a failure loses nothing.
    raw: Vec<u8>,
}

impl StringDecoder {
    pub(crate) fn new() -> Self {
        StringDecoder {
            state: State::Plain,
            unit: 0,
            high: None,
            raw: Vec::with_capacity(6),
        }
    }

    /// The raw bytes of an escape begun in earlier input and not finished: after
    /// [`Decoded::Invalid`], or when the input ends inside the string.
    pub(crate) fn raw_held(&self) -> &[u8] {
        &self.raw
    }

    /// Decodes `input` into `out`.
    ///
    /// On [`Decoded::Invalid(at)`](Decoded::Invalid), `input[at..]` was not consumed, and the
    /// failed escape's bytes are [`raw_held`](Self::raw_held) (held from earlier input or from
    /// this one): emit those, then `input[at..]`, to lose nothing.
    pub(crate) fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Decoded {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::Plain => {
                    let run = i + plain_run(&input[i..]);
                    if run > i {
                        self.lone_high(out);
                        out.extend_from_slice(&input[i..run]);
                        i = run;
                        continue;
                    }
                    match input[i] {
                        b'"' => {
                            self.lone_high(out);
                            return Decoded::End(i);
                        }
                        b'\\' => {
                            // A whole escape in this input decodes here at once; one split
                            // across inputs, or one that is not valid, goes through the
                            // states below, which keep its raw bytes.
                            if let Some(&next) = input.get(i + 1) {
                                if let Some(simple) = simple_escape(next) {
                                    self.lone_high(out);
                                    out.push(simple);
                                    i += 2;
                                    continue;
                                }
                                if next == b'u' {
                                    if let Some(unit) = input.get(i + 2..i + 6).and_then(hex4) {
                                        self.unit = unit;
                                        self.unit_done(out);
                                        i += 6;
                                        continue;
                                    }
                                }
                            }
                            self.raw.clear();
                            self.raw.push(b'\\');
                            self.state = State::Escape;
                        }
                        _ => {
                            // A raw line break cannot be inside a string literal.
                            self.lone_high(out);
                            return Decoded::Invalid(i);
                        }
                    }
                    i += 1;
                }
                State::Escape => {
                    let b = input[i];
                    self.raw.push(b);
                    i += 1;
                    let simple = match (b, simple_escape(b)) {
                        (_, Some(simple)) => simple,
                        (b'u', None) => {
                            self.state = State::Unicode(0);
                            self.unit = 0;
                            continue;
                        }
                        _ => {
                            self.lone_high(out);
                            return Decoded::Invalid(i);
                        }
                    };
                    self.lone_high(out);
                    out.push(simple);
                    self.raw.clear();
                    self.state = State::Plain;
                }
                State::Unicode(n) => {
                    let b = input[i];
                    self.raw.push(b);
                    i += 1;
                    let Some(digit) = (b as char).to_digit(16) else {
                        self.lone_high(out);
                        return Decoded::Invalid(i);
                    };
                    // Four hex digits fit a u16; `digit` < 16.
                    self.unit = (self.unit << 4) | digit as u16;
                    if n < 3 {
                        self.state = State::Unicode(n + 1);
                        continue;
                    }
                    self.unit_done(out);
                    self.raw.clear();
                    self.state = State::Plain;
                }
            }
        }
        Decoded::More
    }

    fn unit_done(&mut self, out: &mut Vec<u8>) {
        let unit = self.unit;
        match (self.high.take(), unit) {
            (Some(high), 0xdc00..=0xdfff) => {
                let c = 0x10000 + ((u32::from(high) - 0xd800) << 10) + (u32::from(unit) - 0xdc00);
                push_char(c, out);
            }
            (previous, 0xd800..=0xdbff) => {
                if previous.is_some() {
                    out.extend_from_slice(&REPLACEMENT);
                }
                self.high = Some(unit);
            }
            (previous, _) => {
                if previous.is_some() {
                    out.extend_from_slice(&REPLACEMENT);
                }
                push_char(u32::from(unit), out);
            }
        }
    }

    /// Whether the decoder is between characters: no escape begun, no high surrogate waiting.
    pub(crate) fn is_between(&self) -> bool {
        self.state == State::Plain && self.high.is_none()
    }

    /// A high surrogate followed by anything but its low half stands alone. Also called when
    /// the input ends inside the string.
    pub(crate) fn lone_high(&mut self, out: &mut Vec<u8>) {
        if self.high.take().is_some() {
            out.extend_from_slice(&REPLACEMENT);
        }
    }
}

/// What a backslash followed by `b` stands for, for every `b` but `u` (the start of a `\u`
/// escape); `None` if JSON has no such escape.
fn simple_escape(b: u8) -> Option<u8> {
    Some(match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

/// The code unit four hex digits spell, `None` unless all four are hex digits.
fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |unit, &b| {
        // `to_digit(16)` < 16, so four of them fit a u16.
        (b as char).to_digit(16).map(|d| (unit << 4) | d as u16)
    })
}

/// The same for bytes below `n` (at most 0x80).
fn bytes_below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(splat(n)) & !x & splat(0x80)
}

/// How many bytes from the start of `input` the decoder copies as they are: up to the first
/// `"`, `\\` or line feed. Runs between escapes are short in Flight text (every quote of its
/// JSON is escaped), so this is a search for near bytes ([`find_near`]).
fn plain_run(input: &[u8]) -> usize {
    find_near([b'"', b'\\', b'\n'], input).unwrap_or(input.len())
}

/// The index of the first byte at or after `from` that [`StringEncoder`] escapes (its
/// [`ESCAPE`] class is not 0), or `bytes.len()`: a word at a time, then byte by byte.
fn next_escaped(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    while at + WORD <= bytes.len() {
        let w = word_at(bytes, at);
        let mask = bytes_below(w, 0x20)
            | zero_bytes(w ^ splat(b'"'))
            | zero_bytes(w ^ splat(b'\\'))
            | zero_bytes(w ^ splat(b'<'))
            | zero_bytes(w ^ splat(b'>'))
            | zero_bytes(w ^ splat(b'&'))
            | zero_bytes(w ^ splat(0xe2));
        if mask != 0 {
            return at + first_marked(mask);
        }
        at += WORD;
    }
    bytes[at..]
        .iter()
        .position(|&b| ESCAPE[usize::from(b)] != 0)
        .map_or(bytes.len(), |n| at + n)
}

/// Appends code point `c` as UTF-8 (a lone low surrogate as U+FFFD).
fn push_char(c: u32, out: &mut Vec<u8>) {
    match char::from_u32(c) {
        Some(ch) => {
            let mut buf = [0; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
        None => out.extend_from_slice(&REPLACEMENT),
    }
}

/// Which bytes need an escape: 0 = none, 1 = a two-byte escape, 2 = `\u00XX`, 3 = a lead byte
/// that may start U+2028/U+2029.
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 2;
        b += 1;
    }
    t[0x08] = 1;
    t[0x09] = 1;
    t[0x0a] = 1;
    t[0x0c] = 1;
    t[0x0d] = 1;
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 1;
    t[b'<' as usize] = 2;
    t[b'>' as usize] = 2;
    t[b'&' as usize] = 2;
    t[0xe2] = 3;
    t
};

/// Encodes bytes as the body of a string literal, in Next.js's escaping style.
///
/// Bytes may arrive split anywhere, even inside a character: the first bytes of a possible
/// U+2028/U+2029 wait for the next call or for [`finish`](Self::finish).
#[derive(Debug, Default)]
pub(crate) struct StringEncoder {
    /// `E2` or `E2 80`, waiting to see whether U+2028/U+2029 follows.
    partial: Vec<u8>,
}

impl StringEncoder {
    /// Encodes `bytes` into `out`.
    pub(crate) fn encode(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let mut bytes = bytes;
        if !self.partial.is_empty() {
            let held = self.partial.len();
            let take = (3 - held).min(bytes.len());
            self.partial.extend_from_slice(&bytes[..take]);
            match line_separator(&self.partial) {
                Some(Some(unit)) => {
                    push_u_escape(unit, out);
                    bytes = &bytes[take..];
                }
                // Still a possible start (all input taken): wait for more.
                None => return,
                Some(None) => {
                    // Not U+2028/U+2029: the held bytes (`E2`, `80`) need no escape; the
                    // taken bytes are encoded below like any others.
                    out.extend_from_slice(&self.partial[..held]);
                }
            }
            self.partial.clear();
        }
        let mut start = 0;
        let mut i = 0;
        loop {
            i = next_escaped(bytes, i);
            let Some(&b) = bytes.get(i) else {
                break;
            };
            let class = ESCAPE[b as usize];
            out.extend_from_slice(&bytes[start..i]);
            match class {
                1 => {
                    let letter = match b {
                        0x08 => b'b',
                        0x09 => b't',
                        0x0a => b'n',
                        0x0c => b'f',
                        0x0d => b'r',
                        other => other, // `"` and `\`
                    };
                    out.extend_from_slice(&[b'\\', letter]);
                    i += 1;
                }
                2 => {
                    push_u_escape(u16::from(b), out);
                    i += 1;
                }
                _ => match line_separator(&bytes[i..]) {
                    Some(Some(unit)) => {
                        push_u_escape(unit, out);
                        i += 3;
                    }
                    None => {
                        self.partial.extend_from_slice(&bytes[i..]);
                        return;
                    }
                    Some(None) => {
                        // Only the `E2` itself: whatever follows it is encoded on its own,
                        // since invalid UTF-8 may put a `"` or `\` right after it.
                        out.push(b);
                        i += 1;
                    }
                },
            }
            start = i;
        }
        out.extend_from_slice(&bytes[start..]);
    }

    /// Whether nothing is waiting for the next call.
    pub(crate) fn is_idle(&self) -> bool {
        self.partial.is_empty()
    }

    /// Emits a held partial character as it is: the string ends here.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.partial);
    }
}

/// Whether [`StringEncoder`] writes `bytes` as they are, in any context: none of them is
/// escaped or may start U+2028/U+2029.
pub(super) fn is_unescaped(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| ESCAPE[usize::from(b)] == 0)
}

/// The escape at the start of `raw` if [`StringEncoder`] writes it
/// for a one-byte character, with that byte: `\"`, `\\`, `\n` and the `\u00XX` of `<`, `>`
/// and `&`, the escapes Flight text is full of. `None` for anything else, including an escape
/// cut short by the end of `raw`.
pub(crate) fn common_escape(raw: &[u8]) -> Option<(u8, usize)> {
    match raw {
        [b'\\', b'"', ..] => Some((b'"', 2)),
        [b'\\', b'\\', ..] => Some((b'\\', 2)),
        [b'\\', b'n', ..] => Some((b'\n', 2)),
        [b'\\', b'u', b'0', b'0', b'3', b'c', ..] => Some((b'<', 6)),
        [b'\\', b'u', b'0', b'0', b'3', b'e', ..] => Some((b'>', 6)),
        [b'\\', b'u', b'0', b'0', b'2', b'6', ..] => Some((b'&', 6)),
        _ => None,
    }
}

/// For bytes starting with `E2`: `Some(Some(unit))` if they start with U+2028 or U+2029,
/// `None` if they are too short to tell (`E2` or `E2 80` alone), `Some(None)` if they do not.
fn line_separator(bytes: &[u8]) -> Option<Option<u16>> {
    match bytes {
        [0xe2, 0x80, 0xa8, ..] => Some(Some(0x2028)),
        [0xe2, 0x80, 0xa9, ..] => Some(Some(0x2029)),
        [0xe2] | [0xe2, 0x80] => None,
        _ => Some(None),
    }
}

fn push_u_escape(unit: u16, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hex = |shift: u16| HEX[usize::from((unit >> shift) & 0xf)];
    out.extend_from_slice(&[b'\\', b'u', hex(12), hex(8), hex(4), hex(0)]);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Decodes a whole string body given in `pieces`; returns the bytes and the outcome.
    fn decode_pieces(pieces: &[&[u8]]) -> (Vec<u8>, Decoded) {
        let mut d = StringDecoder::new();
        let mut out = Vec::new();
        let mut last = Decoded::More;
        for piece in pieces {
            last = d.decode(piece, &mut out);
            if last != Decoded::More {
                break;
            }
        }
        (out, last)
    }

    fn encode_all(bytes: &[u8]) -> Vec<u8> {
        let mut e = StringEncoder::default();
        let mut out = Vec::new();
        e.encode(bytes, &mut out);
        e.finish(&mut out);
        out
    }

    #[test]
    fn decodes_every_json_escape_like_text_encoder() {
        let body =
            r#"a\"b\\c\/d\b\f\n\r\t\u0026\u003c\u003e\u00e9\u2713\ud83d\ude00\u2028é✓😀"tail"#
                .as_bytes();
        let (out, end) = decode_pieces(&[body]);
        let expected = "a\"b\\c/d\u{8}\u{c}\n\r\t&<>é✓😀\u{2028}é✓😀";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        assert_eq!(end, Decoded::End(body.len() - 5));
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        for (body, expected) in [
            (&br#"\ud83dx""#[..], "\u{fffd}x"),
            (br#"\ud83d\u0041""#, "\u{fffd}A"),
            (br#"\ude00""#, "\u{fffd}"),
            (br#"\ud83d\ud83d\ude00""#, "\u{fffd}😀"),
            (br#"\ud83d\n""#, "\u{fffd}\n"),
            (br#"\ud83d""#, "\u{fffd}"),
        ] {
            let (out, _) = decode_pieces(&[body]);
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{body:?}");
        }
    }

    #[test]
    fn an_escape_split_anywhere_decodes_the_same() {
        let body = br#"x\u00e9\ud83d\ude00\"\\y""#;
        let (whole, _) = decode_pieces(&[body]);
        for a in 0..body.len() {
            for b in a..body.len() {
                let (out, end) = decode_pieces(&[&body[..a], &body[a..b], &body[b..]]);
                assert_eq!(out, whole, "split at {a},{b}");
                assert!(matches!(end, Decoded::End(_)));
            }
        }
    }

    #[test]
    fn invalid_escapes_report_where_and_keep_their_bytes() {
        let mut d = StringDecoder::new();
        let mut out = Vec::new();
        assert_eq!(d.decode(br"ab\u00", &mut out), Decoded::More);
        assert_eq!(d.decode(b"zq", &mut out), Decoded::Invalid(1));
        assert_eq!(out, b"ab");
        assert_eq!(d.raw_held(), br"\u00z");

        let mut d = StringDecoder::new();
        let mut out = Vec::new();
        assert_eq!(d.decode(br"ab\x41", &mut out), Decoded::Invalid(4));
        assert_eq!(d.raw_held(), br"\x");
        let mut d = StringDecoder::new();
        assert_eq!(d.decode(b"a\nb", &mut out), Decoded::Invalid(1));
        assert!(d.raw_held().is_empty());
    }

    #[test]
    fn encodes_in_next_js_style() {
        let input = "<a href=\"x\">&amp;</a>\\\n\t\u{1}\u{7f}é✓😀\u{2028}\u{2029}";
        let expected =
            r#"\u003ca href=\"x\"\u003e\u0026amp;\u003c/a\u003e\\\n\t\u0001é✓😀\u2028\u2029"#;
        let got = encode_all(input.as_bytes());
        assert_eq!(
            String::from_utf8(got).unwrap(),
            expected.replace("\\u0001", "\\u0001\u{7f}")
        );
    }

    #[test]
    fn a_line_separator_split_across_calls_is_still_escaped() {
        let bytes = "a\u{2028}b\u{2029}\u{2013}".as_bytes();
        let whole = encode_all(bytes);
        assert_eq!(
            whole,
            br"a\u2028b\u2029"
                .iter()
                .chain("\u{2013}".as_bytes())
                .copied()
                .collect::<Vec<_>>()
        );
        for a in 0..bytes.len() {
            for b in a..bytes.len() {
                let mut e = StringEncoder::default();
                let mut out = Vec::new();
                for piece in [&bytes[..a], &bytes[a..b], &bytes[b..]] {
                    e.encode(piece, &mut out);
                }
                e.finish(&mut out);
                assert_eq!(out, whole, "split at {a},{b}");
            }
        }
    }

    /// The escaping Next.js applies, written independently: JSON.stringify's rules plus the
    /// HTML-safe replacements.
    pub(crate) fn next_js_escape(s: &str) -> String {
        let mut out = String::new();
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                }
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out
    }

    proptest! {
        #[test]
        fn round_trips_any_text_byte_for_byte(s in "\\PC*|[<>&\"\\\\\u{2028}\u{2029}é✓😀\n\t\u{1}a]*", cut in 0usize..64) {
            let encoded = next_js_escape(&s);
            prop_assert_eq!(&String::from_utf8(encode_all(s.as_bytes())).unwrap(), &encoded);
            let mut body = encoded.clone().into_bytes();
            body.push(b'"');
            let cut = cut.min(body.len());
            let (decoded, end) = decode_pieces(&[&body[..cut], &body[cut..]]);
            prop_assert_eq!(&decoded, &s.as_bytes().to_vec());
            prop_assert!(matches!(end, Decoded::End(_)));
        }

        /// The decoder's shortcuts (a whole escape at once, runs found a word at a time) give
        /// what its byte-at-a-time states give, on any bytes.
        #[test]
        fn whole_input_decodes_as_byte_by_byte(
            tokens in proptest::collection::vec(
                prop_oneof![
                    any::<u8>().prop_map(|b| vec![b]),
                    proptest::sample::select(&b"\\\"unUdD089afAF/bnrt\n"[..]).prop_map(|b| vec![b]),
                    proptest::sample::select(vec![
                        &br"\u00e9"[..], br"\u003C", br"\ud83d", br"\ude00", br"\uD83D", br"\u2028",
                        br"\u0000", br"\u00zz", br"\u12", br"\x", br#"\""#, br"\\", br"\/", br"\n",
                    ]).prop_map(<[u8]>::to_vec),
                ],
                0..60,
            )
        ) {
            let bytes = tokens.concat();
            let mut whole = StringDecoder::new();
            let mut whole_out = Vec::new();
            let whole_end = whole.decode(&bytes, &mut whole_out);
            let mut each = StringDecoder::new();
            let mut each_out = Vec::new();
            let mut each_end = Decoded::More;
            for (at, b) in bytes.iter().enumerate() {
                each_end = match each.decode(std::slice::from_ref(b), &mut each_out) {
                    Decoded::More => continue,
                    Decoded::End(n) => Decoded::End(at + n),
                    Decoded::Invalid(n) => Decoded::Invalid(at + n),
                };
                break;
            }
            prop_assert_eq!(whole_end, each_end);
            prop_assert_eq!(whole_out, each_out);
            prop_assert_eq!(whole.raw_held(), each.raw_held());
        }

        /// The word-at-a-time scans find what a byte-at-a-time scan finds.
        #[test]
        fn scans_find_the_first_byte_they_look_for(
            bytes in proptest::collection::vec(
                prop_oneof![any::<u8>(), proptest::sample::select(&b"\\\"\n<>&\x1f\x20\xe2\xe3\x7f\x80\x00"[..])],
                0..80,
            ),
            from in 0usize..80,
        ) {
            let from = from.min(bytes.len());
            let escaped = bytes[from..]
                .iter()
                .position(|&b| ESCAPE[usize::from(b)] != 0)
                .map_or(bytes.len(), |n| from + n);
            prop_assert_eq!(next_escaped(&bytes, from), escaped);
            let plain = bytes
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b == b'\n')
                .unwrap_or(bytes.len());
            prop_assert_eq!(plain_run(&bytes), plain);
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut d = StringDecoder::new();
            let mut out = Vec::new();
            let _ = d.decode(&bytes, &mut out);
            let _ = encode_all(&bytes);
        }
    }
}
