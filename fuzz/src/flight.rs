//! An independent model of what the Flight rewriting must produce, and of the script strings
//! that carry Flight data inside HTML. Written from the wire format (docs/nextjs.md and
//! docs/url-rule.md), not from `crates/core/src/stages/rsc/`.
//!
//! A Flight stream is rows: `<hex id>:` then either `T`/a binary tag, a hex byte length, `,`
//! and exactly that many bytes, or anything else up to and including a `\n`. A newline row
//! gets the URL rule; a `T` row gets the URL rule on its text and, when that changed it, a new
//! (lowercase hex) length; binary rows, rows too long for the cap, rows cut off by the end of
//! the stream, and everything after a byte the grammar does not allow pass through as they
//! came.

use trusted_server_core::UrlRule;

/// The binary row tags: length-prefixed, never rewritten.
const BINARY_TAGS: &[u8] = b"AOoUSsLlGgMmV";

/// More hex digits than this in a row length is not a length anyone can send.
const MAX_LENGTH_DIGITS: usize = 12;

/// One row (or the unparseable rest) of a stream: its bytes as they came, and as they must go
/// out when it is rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The row's original bytes.
    pub original: Vec<u8>,
    /// The row with the URL rule applied (equal to `original` when nothing applies).
    pub rewritten: Vec<u8>,
    /// For a newline row, the length of its `<id>:`; `None` for any other row. A newline row
    /// streams, so a degrade can let it go as it came part way through (see
    /// [`Model::each_row_whole_or_released`]).
    pub newline_head: Option<usize>,
}

/// What a Flight stream must become.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// The rows, in order; concatenated they are the stream.
    pub rows: Vec<Row>,
    /// Whether the rewriter must report that it degraded (a row over the cap, a row cut off
    /// by the end of the stream, or bytes it cannot follow).
    pub degrades: bool,
}

impl Model {
    /// Every row rewritten: the output when nothing degraded.
    pub fn rewritten(&self) -> Vec<u8> {
        self.rows.iter().flat_map(|r| r.rewritten.clone()).collect()
    }

    /// Whether `out` is the rows in order, each either rewritten or as it came (what a
    /// degraded rewrite may produce).
    pub fn each_row_rewritten_or_original(&self, out: &[u8]) -> bool {
        // Positions in `out` reachable after the first i rows.
        let mut reachable = vec![0usize];
        for row in &self.rows {
            let mut next = Vec::new();
            for &at in &reachable {
                for form in [&row.rewritten, &row.original] {
                    if out[at..].starts_with(form) && !next.contains(&(at + form.len())) {
                        next.push(at + form.len());
                    }
                }
            }
            if next.is_empty() {
                return false;
            }
            reachable = next;
        }
        reachable.contains(&out.len())
    }

    /// Like [`each_row_rewritten_or_original`](Self::each_row_rewritten_or_original), and a
    /// newline row may also be rewritten up to a possible URL and come out as it came from
    /// there: what a degrade produces when it must let go of a URL whose next bytes have not
    /// arrived, with nothing later sure to take it (the row's earlier bytes had already gone
    /// out rewritten). A URL is never half rewritten, and no row goes back to rewriting.
    pub fn each_row_whole_or_released(&self, out: &[u8], rule: &UrlRule) -> bool {
        let mut reachable = vec![0usize];
        for row in &self.rows {
            let mut next = Vec::new();
            let mut reach = |end: usize| {
                if !next.contains(&end) {
                    next.push(end);
                }
            };
            for &at in &reachable {
                let rest = &out[at..];
                for form in [&row.rewritten, &row.original] {
                    if rest.starts_with(form) {
                        reach(at + form.len());
                    }
                }
                let Some(head) = row.newline_head else {
                    continue;
                };
                let o = &row.original;
                if !rest.starts_with(&o[..head]) {
                    continue;
                }
                // Where a held possible URL can start.
                for k in (head..o.len()).filter(|&k| matches!(o[k], b'h' | b'H' | b'/' | b'\\')) {
                    let done = rule.rewrite_all(&o[head..k]);
                    let rest = &rest[head..];
                    if rest.starts_with(&done) && rest[done.len()..].starts_with(&o[k..]) {
                        reach(at + head + done.len() + o.len() - k);
                    }
                }
            }
            if next.is_empty() {
                return false;
            }
            reachable = next;
        }
        reachable.contains(&out.len())
    }
}

/// Models the rewriting of stream `s` with `rule`, `T` rows longer than `max_held` passing
/// through unchanged.
pub fn model(s: &[u8], rule: &UrlRule, max_held: u64) -> Model {
    let mut m = Model::default();
    let raw = |m: &mut Model, bytes: &[u8]| {
        m.rows.push(Row {
            original: bytes.to_vec(),
            rewritten: bytes.to_vec(),
            newline_head: None,
        })
    };
    let mut p = 0;
    while p < s.len() {
        let start = p;
        while p < s.len() && s[p].is_ascii_hexdigit() {
            p += 1;
        }
        if p == s.len() {
            raw(&mut m, &s[start..]);
            break;
        }
        if s[p] != b':' {
            // Not a row id: the rest passes through as it is.
            raw(&mut m, &s[start..]);
            m.degrades = true;
            break;
        }
        p += 1;
        let Some(&tag) = s.get(p) else {
            raw(&mut m, &s[start..]);
            break;
        };
        if tag != b'T' && !BINARY_TAGS.contains(&tag) {
            let end = s[p..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(s.len(), |i| p + i + 1);
            let mut rewritten = s[start..p].to_vec();
            rewritten.extend_from_slice(&rule.rewrite_all(&s[p..end]));
            m.rows.push(Row {
                original: s[start..end].to_vec(),
                rewritten,
                newline_head: Some(p - start),
            });
            p = end;
            continue;
        }
        let text_row = tag == b'T';
        p += 1;
        let length_start = p;
        let mut len: u64 = 0;
        let mut digits = 0;
        loop {
            let Some(&b) = s.get(p) else {
                // The stream ended inside the length.
                raw(&mut m, &s[start..]);
                m.degrades |= text_row;
                return m;
            };
            p += 1;
            if b == b',' {
                break;
            }
            match (b as char).to_digit(16) {
                Some(d) if digits < MAX_LENGTH_DIGITS => {
                    len = (len << 4) | u64::from(d);
                    digits += 1;
                }
                _ => {
                    raw(&mut m, &s[start..]);
                    m.degrades = true;
                    return m;
                }
            }
        }
        let available = (s.len() - p) as u64;
        if len > available {
            // Cut off by the end of the stream: released as it came.
            raw(&mut m, &s[start..]);
            m.degrades |= text_row;
            return m;
        }
        let end = p + len as usize;
        if text_row && len > max_held {
            m.degrades = true;
        }
        if text_row && len > 0 && len <= max_held {
            let text = &s[p..end];
            let new = rule.rewrite_all(text);
            if new != text {
                let mut rewritten = s[start..length_start].to_vec();
                rewritten.extend_from_slice(format!("{:x},", new.len()).as_bytes());
                rewritten.extend_from_slice(&new);
                m.rows.push(Row {
                    original: s[start..end].to_vec(),
                    rewritten,
                    newline_head: None,
                });
                p = end;
                continue;
            }
        }
        raw(&mut m, &s[start..end]);
        p = end;
    }
    m
}

/// Escapes UTF-8 text the way Next.js writes a Flight chunk into `push([1,"…"])`:
/// `JSON.stringify`, then `<`, `>`, `&`, U+2028 and U+2029 as `\u` escapes.
pub fn next_js_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Decodes a JSON string body (after its opening quote) the way the browser's `TextEncoder`
/// sees it: escapes resolved, UTF-8 out, a lone surrogate as U+FFFD. Raw bytes are read as the
/// browser reads the page, as UTF-8 with each invalid or cut-off sequence becoming U+FFFD, and
/// this string on its own: a character whose bytes are split between two push strings is two
/// U+FFFD, not the character, since each string is its own JavaScript string.
/// Returns the bytes and the index of the closing quote, or `None` if it is not a JSON string
/// (an unknown escape, a raw line break, no closing quote).
pub fn json_string_decode(body: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut units: Vec<u16> = Vec::new();
    let mut raw: Vec<u8> = Vec::new();
    let flush_units = |units: &mut Vec<u16>, out: &mut Vec<u8>| {
        for c in char::decode_utf16(units.drain(..)) {
            let c = c.unwrap_or('\u{fffd}');
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
    };
    // Escapes and quotes are ASCII, which never continues a UTF-8 sequence, so decoding each
    // run of raw bytes on its own is decoding the string's raw bytes as a whole.
    let flush_raw = |raw: &mut Vec<u8>, out: &mut Vec<u8>| {
        out.extend_from_slice(String::from_utf8_lossy(raw).as_bytes());
        raw.clear();
    };
    let mut i = 0;
    while i < body.len() {
        if !matches!(body[i], b'"' | b'\\' | b'\n' | b'\r') {
            flush_units(&mut units, &mut out);
            raw.push(body[i]);
            i += 1;
            continue;
        }
        flush_raw(&mut raw, &mut out);
        match body[i] {
            b'"' => {
                flush_units(&mut units, &mut out);
                return Some((out, i));
            }
            b'\n' | b'\r' => return None,
            b'\\' => {
                let &e = body.get(i + 1)?;
                let simple = match e {
                    b'"' => Some(b'"'),
                    b'\\' => Some(b'\\'),
                    b'/' => Some(b'/'),
                    b'b' => Some(8),
                    b'f' => Some(12),
                    b'n' => Some(b'\n'),
                    b'r' => Some(b'\r'),
                    b't' => Some(b'\t'),
                    b'u' => None,
                    _ => return None,
                };
                match simple {
                    Some(b) => {
                        flush_units(&mut units, &mut out);
                        out.push(b);
                        i += 2;
                    }
                    None => {
                        let hex = body.get(i + 2..i + 6)?;
                        let hex = std::str::from_utf8(hex).ok()?;
                        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                            return None;
                        }
                        units.push(u16::from_str_radix(hex, 16).ok()?);
                        i += 6;
                    }
                }
            }
            _ => unreachable!("raw bytes are handled above"),
        }
    }
    None
}

/// The marker that opens a Flight text push.
pub const PUSH_TEXT: &[u8] = b"self.__next_f.push([1,\"";

/// Reads every `push([1,"…"])` string of an HTML document as the browser does: each string
/// decoded on its own ([`json_string_decode`]), then the decoded bytes concatenated; and the
/// document with each string emptied. `None` if a string does not decode.
pub fn read_pushes(doc: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut stream = Vec::new();
    let mut rest_of_doc = Vec::new();
    let mut at = 0;
    while let Some(found) = find(&doc[at..], PUSH_TEXT) {
        let body_start = at + found + PUSH_TEXT.len();
        rest_of_doc.extend_from_slice(&doc[at..body_start]);
        let (bytes, end) = json_string_decode(&doc[body_start..])?;
        stream.extend_from_slice(&bytes);
        at = body_start + end;
    }
    rest_of_doc.extend_from_slice(&doc[at..]);
    Some((stream, rest_of_doc))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Markup placed between Flight scripts: plain, with URLs, and ordinary scripts and styles.
pub const MARKUP: &[&str] = &[
    "",
    "<p>text</p>",
    "<a href=\"https://origin.demo-publisher.example/a\">a</a>",
    "<img src=//origin.demo-publisher.example/i.png srcset='http://origin.demo-publisher.example/j.png 2x'>",
    "<script>var u=\"https:\\/\\/origin.demo-publisher.example\\/x\";</script>",
    "<style>b{background:url(https://origin.demo-publisher.example/b.png)}</style>",
    "<div data-x=\"//origin.demo-publisher.example.evil.test/\">é ✓ 😀</div>",
    "<script nonce=\"n\" async>self.__next_f.push([0])</script>",
    "<!-- https://origin.demo-publisher.example/comment -->",
];

/// An HTML page carrying `stream` as Flight scripts: the stream is cut at `script_cuts`
/// (moved back to character boundaries), each piece escaped like Next.js does, and markup
/// chosen by `markup` placed before each script.
pub fn inline_page(stream: &str, script_cuts: &[usize], markup: &[u16]) -> Vec<u8> {
    let mut cuts: Vec<usize> = script_cuts
        .iter()
        .map(|&c| {
            let mut c = c.min(stream.len());
            while !stream.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    cuts.push(stream.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut page = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>t</title></head><body>\
         <script>(self.__next_f=self.__next_f||[]).push([0])</script>",
    );
    let mut last = 0;
    for (i, &cut) in cuts.iter().enumerate() {
        let bit = markup.get(i).map_or(0, |&m| usize::from(m) % MARKUP.len());
        page.push_str(MARKUP[bit]);
        page.push_str("<script>self.__next_f.push([1,\"");
        page.push_str(&next_js_escape(&stream[last..cut]));
        page.push_str("\"])</script>");
        last = cut;
    }
    page.push_str("</body></html>");
    page.into_bytes()
}
