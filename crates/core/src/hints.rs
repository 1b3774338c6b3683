//! Learned `103 Early Hints`: the preload and preconnect hints a page carried last time, sent
//! to the browser on the next navigation before the origin is even asked.
//!
//! Why learned rather than configured: the page itself says what it needs first (its `Link`
//! headers and the `<link rel=preload|modulepreload|preconnect>` elements in its `<head>`);
//! remembering them costs one small cache entry and lets the browser start fetching during the
//! origin's think time, which is when a proxy otherwise sends nothing.
//!
//! Pure parts only: extraction from `Link` header values ([`from_link_header`]) and from head
//! markup ([`HeadScanner`], fed the page in chunks: the result does not depend on how it was
//! split; in a page's pipeline it runs as the first body stage, `crate::stages::hints`), the
//! bounded list ([`Hints`]: at most [`MAX_HINTS`] values and [`MAX_BYTES`] bytes),
//! its stored form ([`Hints::encode`], [`Hints::decode`]) and the cache key it is stored
//! under ([`hints_key`], a namespace of its own derived from the page's key). The adapter
//! (`src/hints.rs`) does the cache reads and writes and sends the `103`.

use sha2::{Digest, Sha256};

use crate::url_rewrite::UrlRule;

/// Most hints remembered for one page: browsers act on the first few, and each is a request.
pub const MAX_HINTS: usize = 16;

/// Most bytes of `Link` values remembered for one page (the `103`'s header block stays small).
pub const MAX_BYTES: usize = 4096;

/// Most bytes of a page's start scanned for `<link>` elements: the head of a real page is far
/// smaller; a page without `</head>` early costs at most this copy.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The relations worth an early hint.
const RELS: [&str; 3] = ["preload", "modulepreload", "preconnect"];

/// Stored-form magic and version.
const MAGIC: &str = "TSHINTS1\n";

/// The key of a page's hints: SHA-256 over a namespace label and the page's own cache key, so
/// the hints never collide with a page entry and follow the page's key space (settings
/// fingerprint, scheme, authority, path and query).
pub fn hints_key(page_key: &[u8; 32]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"ts-hints/1\0");
    hash.update(page_key);
    hash.finalize().into()
}

/// A bounded, de-duplicated list of `Link` values, one link each, in the order first seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    values: Vec<String>,
    bytes: usize,
}

impl Hints {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one `Link` value unless it is a duplicate, unsafe for a header (see
    /// [`is_safe_value`]), or the bounds are reached. Returns whether it was added.
    pub fn push(&mut self, value: String) -> bool {
        if !is_safe_value(&value)
            || self.values.len() >= MAX_HINTS
            || self.bytes + value.len() > MAX_BYTES
            || self.values.contains(&value)
        {
            return false;
        }
        self.bytes += value.len();
        self.values.push(value);
        true
    }

    /// The values, each fit to be one `Link` header line.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether there is nothing to hint.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The stored form: the magic line, then one value per line.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::with_capacity(MAGIC.len() + self.bytes + self.values.len());
        out.push_str(MAGIC);
        for v in &self.values {
            out.push_str(v);
            out.push('\n');
        }
        out.into_bytes()
    }

    /// The list from its stored form; `None` for anything [`Hints::encode`] would not write
    /// (another version, a bad value, beyond the bounds). Never panics.
    pub fn decode(stored: &[u8]) -> Option<Hints> {
        let text = std::str::from_utf8(stored).ok()?;
        let body = text.strip_prefix(MAGIC)?;
        let mut hints = Hints::new();
        if body.is_empty() {
            return Some(hints);
        }
        let body = body.strip_suffix('\n')?;
        for line in body.split('\n') {
            if !hints.push(line.to_owned()) {
                return None;
            }
        }
        Some(hints)
    }
}

/// Whether `value` may be sent as a `Link` header value: visible ASCII and spaces only (no
/// control characters, so no header splitting), non-empty, within [`MAX_BYTES`].
pub fn is_safe_value(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_BYTES
        && value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
}

/// Whether a URL may go between `<` and `>` in a `Link` value.
fn is_safe_url(url: &str) -> bool {
    !url.is_empty()
        && url
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>')
}

/// Whether a parameter value may be written as a token (unquoted).
fn is_token(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/".contains(&b))
}

/// One link: its URL and the parameters an early hint needs (`rel`, `as`, `crossorigin`,
/// `type`), the rest dropped.
#[derive(Debug, Default)]
struct Link<'a> {
    url: &'a str,
    rel: Option<String>,
    as_: Option<String>,
    crossorigin: Option<String>,
    type_: Option<String>,
}

impl Link<'_> {
    /// The hint value for this link, if its `rel` names one of [`RELS`] and everything is
    /// safe to write; the URL rewritten by `rule` when given.
    fn to_value(&self, rule: Option<&UrlRule>) -> Option<String> {
        let rel = self.rel.as_deref()?.to_ascii_lowercase();
        let rels: Vec<&str> = rel
            .split_ascii_whitespace()
            .filter(|r| RELS.contains(r))
            .collect();
        if rels.is_empty() {
            return None;
        }
        let url = match rule {
            Some(rule) => String::from_utf8(rule.rewrite_all(self.url.as_bytes())).ok()?,
            None => self.url.to_owned(),
        };
        if !is_safe_url(&url) {
            return None;
        }
        let mut out = format!("<{url}>; rel={}", rels.join(" "));
        if rels.len() > 1 {
            out = format!("<{url}>; rel=\"{}\"", rels.join(" "));
        }
        for (name, value) in [
            ("as", &self.as_),
            ("crossorigin", &self.crossorigin),
            ("type", &self.type_),
        ] {
            match value.as_deref() {
                None => {}
                Some("") if name == "crossorigin" => out.push_str("; crossorigin"),
                Some(v) if is_token(v) => {
                    out.push_str("; ");
                    out.push_str(name);
                    out.push('=');
                    out.push_str(v);
                }
                Some(_) => return None,
            }
        }
        Some(out)
    }

    fn set(&mut self, name: &str, value: String) {
        let slot = match name.to_ascii_lowercase().as_str() {
            "rel" => &mut self.rel,
            "as" => &mut self.as_,
            "crossorigin" => &mut self.crossorigin,
            "type" => &mut self.type_,
            _ => return,
        };
        // The first occurrence wins (RFC 8288 §3.3 for `rel`; the HTML parser for attributes).
        if slot.is_none() {
            *slot = Some(value);
        }
    }
}

/// The hints in one `Link` header value (RFC 8288: links separated by commas, each
/// `<url>` followed by `; name=value` parameters, values tokens or quoted strings). Links
/// with other relations, and anything malformed, are skipped. The value is taken as sent:
/// the response phase has already applied the URL rule to `Link` headers.
pub fn from_link_header(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        let Some(after) = rest.strip_prefix('<') else {
            return out;
        };
        let Some(end) = after.find('>') else {
            return out;
        };
        let mut link = Link {
            url: &after[..end],
            ..Link::default()
        };
        rest = &after[end + 1..];
        // Parameters until the next top-level comma.
        loop {
            rest = rest.trim_start_matches([' ', '\t']);
            let Some(after) = rest.strip_prefix(';') else {
                break;
            };
            rest = after.trim_start_matches([' ', '\t']);
            let name_end = rest.find(['=', ';', ',', ' ', '\t']).unwrap_or(rest.len());
            let name = &rest[..name_end];
            rest = rest[name_end..].trim_start_matches([' ', '\t']);
            let mut param = String::new();
            if let Some(after) = rest.strip_prefix('=') {
                rest = after.trim_start_matches([' ', '\t']);
                if let Some(quoted) = rest.strip_prefix('"') {
                    let mut chars = quoted.char_indices();
                    let mut closed = None;
                    while let Some((i, c)) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some((_, c)) = chars.next() {
                                    param.push(c);
                                }
                            }
                            '"' => {
                                closed = Some(i);
                                break;
                            }
                            c => param.push(c),
                        }
                    }
                    let Some(i) = closed else {
                        return out;
                    };
                    rest = &quoted[i + 1..];
                } else {
                    let end = rest.find([';', ',', ' ', '\t']).unwrap_or(rest.len());
                    param.push_str(&rest[..end]);
                    rest = &rest[end..];
                }
            }
            if !name.is_empty() {
                link.set(name, param);
            }
        }
        if let Some(v) = link.to_value(None) {
            out.push(v);
        }
        // Anything else before the next comma is malformed: skip to it.
        match rest.find(',') {
            Some(i) => rest = &rest[i..],
            None => return out,
        }
    }
}

/// Collects `<link>` hints from the start of an HTML page, fed in chunks as it streams.
///
/// Only the head is kept (up to `</head`, `<body`, or [`MAX_HEAD_BYTES`]), copied once and
/// parsed at [`HeadScanner::finish`]: the stop point depends only on the bytes, so the result
/// is the same however the page was split, and the scanner never changes the page (it only
/// reads). After the stop point each chunk costs one comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadScanner {
    head: Vec<u8>,
    done: bool,
}

impl HeadScanner {
    /// A scanner at the start of a page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the head is complete (later chunks are ignored).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds the next bytes of the (decoded) page.
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.done {
            return;
        }
        // Re-examine the few bytes before the chunk: a marker may straddle the split.
        let from = self.head.len().saturating_sub(5);
        let room = MAX_HEAD_BYTES - self.head.len();
        self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if let Some(end) = find_head_end(&self.head[from..]) {
            self.head.truncate(from + end);
            self.done = true;
        } else if self.head.len() >= MAX_HEAD_BYTES {
            self.done = true;
        }
    }

    /// The hints in the head seen, each URL rewritten by `rule` (the page's own markup still
    /// names the origin: the scanner sees it before the rewrite).
    pub fn finish(&self, rule: &UrlRule) -> Vec<String> {
        from_markup(&self.head, rule)
    }
}

/// The offset of the first `</head` or `<body` (ASCII case-insensitive) in `bytes`.
fn find_head_end(bytes: &[u8]) -> Option<usize> {
    let starts = |w: &[u8], m: &[u8]| w.len() >= m.len() && w[..m.len()].eq_ignore_ascii_case(m);
    (0..bytes.len()).find(|&i| starts(&bytes[i..], b"</head") || starts(&bytes[i..], b"<body"))
}

/// The hints of the `<link>` elements in `markup` (attributes in any order, quoted with `"`
/// or `'` or unquoted; HTML comments skipped).
fn from_markup(markup: &[u8], rule: &UrlRule) -> Vec<String> {
    let text = String::from_utf8_lossy(markup);
    let lower = text.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = lower[at..].find('<') {
        let start = at + i;
        if lower[start..].starts_with("<!--") {
            match lower[start + 4..].find("-->") {
                Some(e) => {
                    at = start + 4 + e + 3;
                    continue;
                }
                None => break,
            }
        }
        let is_link = lower[start..].starts_with("<link")
            && lower[start + 5..]
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_whitespace() || b == b'/' || b == b'>');
        if !is_link {
            at = start + 1;
            continue;
        }
        let (link, end) = parse_tag(&text[start + 5..]);
        at = start + 5 + end;
        if let Some(v) = link.and_then(|l| l.to_value(Some(rule))) {
            out.push(v);
        }
    }
    out
}

/// The attributes of a tag from just after its name; the link (when it has an `href`) and how
/// many bytes were read.
fn parse_tag(s: &str) -> (Option<Link<'_>>, usize) {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut link = Link::default();
    let mut href = None;
    loop {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() {
            return (None, i);
        }
        if bytes[i] == b'>' {
            i += 1;
            break;
        }
        let name_start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && !b"=>/".contains(&bytes[i]) {
            i += 1;
        }
        let name = &s[name_start..i];
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = "";
        if i < bytes.len() && bytes[i] == b'=' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && (bytes[i] == b'"' || bytes[i] == b'\'') {
                let q = bytes[i];
                let v_start = i + 1;
                match bytes[v_start..].iter().position(|&b| b == q) {
                    Some(n) => {
                        value = &s[v_start..v_start + n];
                        i = v_start + n + 1;
                    }
                    None => return (None, bytes.len()),
                }
            } else {
                let v_start = i;
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                    i += 1;
                }
                value = &s[v_start..i];
            }
        }
        if name.eq_ignore_ascii_case("href") {
            href.get_or_insert(value.trim());
        } else if !name.is_empty() {
            link.set(name, value.trim().to_owned());
        }
    }
    match href {
        Some(url) if !url.is_empty() => {
            link.url = url;
            (Some(link), i)
        }
        _ => (None, i),
    }
}

#[cfg(test)]
mod tests;
