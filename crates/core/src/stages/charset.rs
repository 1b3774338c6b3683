//! What a `<meta>` tag declares about a page's charset, read two ways that must agree.
//!
//! A page may declare its charset only in markup. If that charset lets ASCII bytes be halves
//! of characters (Shift_JIS, Big5, GBK, gb18030) or is not ASCII-compatible, nothing after the
//! tag may be rewritten. The HTML stage learns it from lol_html's `<meta>` element; the lazy
//! HTML stage must reach the same verdict on raw bytes, without lol_html, to know when it has
//! to hand over. Both go through [`declared_charset`], and [`scan_metas`] reads a tag's
//! attributes as lol_html's tokenizer splits them.

use encoding_rs::Encoding;

use crate::content::charset_allows_rewrite;
use crate::stages::word_scan::find_near;

/// Longest `<meta ...>` tag the scan reads; a longer one is a trigger.
pub(crate) const MAX_META_TAG: usize = 4096;

/// The charset a `<meta>` tag declares, given its attribute values (decoded, by name, the
/// first of each name). Both readers of a `<meta>` use it: the
/// HTML stage on lol_html's element, and [`scan_metas`] on raw bytes.
pub(crate) fn declared_charset(attribute: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(charset) = attribute("charset") {
        return Some(charset.trim().to_owned());
    }
    let http_equiv = attribute("http-equiv")?;
    if !http_equiv.trim().eq_ignore_ascii_case("content-type") {
        return None;
    }
    let content = attribute("content")?;
    content.split(';').find_map(|part| {
        let (key, value) = part.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']).to_owned())
    })
}

/// What the `<meta` tags in some bytes mean for the plain stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaScan {
    /// None may declare an unsafe charset.
    Clear,
    /// One may (or cannot be read for certain): lol_html must decide.
    Trigger,
    /// None does so far, but from this offset on a tag may still become a `<meta>` or is
    /// not complete yet.
    Incomplete(usize),
}

/// Scans every `<meta` tag in `bytes` (module docs). A lone `<` at the end counts as an
/// incomplete tag.
pub(crate) fn scan_metas(bytes: &[u8], encoding: &'static Encoding) -> MetaScan {
    let mut incomplete = (bytes.last() == Some(&b'<')).then(|| bytes.len() - 1);
    for at in meta_starts(bytes) {
        match meta_verdict(&bytes[at..], encoding) {
            Verdict::Safe => {}
            Verdict::Unsafe => return MetaScan::Trigger,
            Verdict::Incomplete => incomplete = Some(incomplete.map_or(at, |i| i.min(at))),
        }
    }
    incomplete.map_or(MetaScan::Clear, MetaScan::Incomplete)
}

/// Offsets of `<m` and `<M`, in order (a `<meta` in any letter case starts with one).
fn meta_starts(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'<', bytes).filter(|&i| matches!(bytes.get(i + 1), Some(b'm' | b'M')))
}

/// A `<m` tag's meaning for the plain stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not a `<meta>`, or one that declares no charset or a safe one.
    Safe,
    /// A `<meta>` that may declare an unsafe charset, or one the scan cannot read for certain:
    /// a repeated `charset`, `http-equiv` or `content`, or a tag longer than [`MAX_META_TAG`].
    Unsafe,
    /// The tag is not wholly in hand yet.
    Incomplete,
}

/// The verdict on the tag at the start of `bytes` (which starts with `<m` or `<M`), read as
/// lol_html reads it: its tokenizer's attribute states, and values decoded with the document's
/// `encoding`.
pub(crate) fn meta_verdict(bytes: &[u8], encoding: &'static Encoding) -> Verdict {
    const NAME: &[u8] = b"<meta";
    let Some(head) = bytes.get(..NAME.len()) else {
        // `<m`, `<me`, ... at the end of the input.
        return if NAME[..bytes.len()].eq_ignore_ascii_case(bytes) {
            Verdict::Incomplete
        } else {
            Verdict::Safe
        };
    };
    if !is_named(head, NAME) {
        return Verdict::Safe;
    }
    match bytes.get(NAME.len()) {
        None => return Verdict::Incomplete,
        Some(&b) if !is_space(b) && b != b'/' && b != b'>' => return Verdict::Safe, // `<metadata>`
        _ => {}
    }
    let rest = &bytes[NAME.len()..];
    let mut meta = MetaAttributes::default();
    let walked = walk_attributes(&rest[..rest.len().min(MAX_META_TAG)], |name, value| {
        meta.take(name, value);
    });
    if walked.is_none() {
        return if rest.len() < MAX_META_TAG {
            Verdict::Incomplete
        } else {
            Verdict::Unsafe
        };
    }
    meta.verdict(encoding)
}

/// What a `<meta>`'s attributes say about the charset, collected as they are walked
/// ([`walk_attributes`]): the first `charset`, `http-equiv` and `content`, and whether one
/// of them came twice.
#[derive(Debug, Default)]
pub(crate) struct MetaAttributes<'a> {
    values: [Option<&'a [u8]>; 3],
    repeated: bool,
}

impl<'a> MetaAttributes<'a> {
    const NAMES: [&'static str; 3] = ["charset", "http-equiv", "content"];

    /// Takes one attribute, as [`walk_attributes`] gives it.
    pub(crate) fn take(&mut self, name: &'a [u8], value: &'a [u8]) {
        if let Some(i) = Self::NAMES
            .iter()
            .position(|n| is_named(name, n.as_bytes()))
        {
            self.repeated |= self.values[i].replace(value).is_some();
        }
    }

    /// The verdict on a whole `<meta>` with these attributes, whose values are in
    /// `encoding`.
    pub(crate) fn verdict(&self, encoding: &'static Encoding) -> Verdict {
        if self.repeated {
            return Verdict::Unsafe;
        }
        let charset = declared_charset(|name| {
            let value = self.values[Self::NAMES.iter().position(|n| *n == name)?]?;
            Some(encoding.decode(value).0.into_owned())
        });
        if charset.is_some_and(|c| !charset_allows_rewrite(&c)) {
            Verdict::Unsafe
        } else {
            Verdict::Safe
        }
    }

    /// The verdict on a whole `<meta>` whose attributes, up to and with the `>` that ends
    /// it, are `len` bytes long: as [`meta_verdict`] gives it, which reads no further than
    /// [`MAX_META_TAG`].
    pub(crate) fn verdict_for(&self, len: usize, encoding: &'static Encoding) -> Verdict {
        if len > MAX_META_TAG {
            Verdict::Unsafe
        } else {
            self.verdict(encoding)
        }
    }
}

/// Whether `name` is `lower` in any letter case. For the few short names a `<meta>` is read
/// for, a loop costs less than `eq_ignore_ascii_case`'s set-up.
fn is_named(name: &[u8], lower: &[u8]) -> bool {
    name.len() == lower.len()
        && name
            .iter()
            .zip(lower)
            .all(|(a, b)| a.to_ascii_lowercase() == *b)
}

/// lol_html's whitespace in tags (the HTML tokenizer's, plus CR, which the tokenizer never
/// sees because the input stream turns it into LF).
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// The attributes of a start tag as lol_html's tokenizer splits them, from just after its name
/// to its `>` (a valueless attribute has an empty value); `None` if the tag does not end in
/// `bytes`.
pub(crate) fn start_tag_attributes(bytes: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut attributes = Vec::new();
    walk_attributes(bytes, |name, value| attributes.push((name, value)))?;
    Some(attributes)
}

/// How a tag ended, read by [`walk_attributes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TagEnd {
    /// Offset just past the tag's `>`, in the bytes walked.
    pub(crate) end: usize,
    /// Whether the `>` closed a `/` outside any attribute (`<x/>`, `<x a=1 />`).
    pub(crate) self_closing: bool,
    /// Whether the `>` came where an attribute value was due (`<x a=>`). lol_html's tokenizer
    /// then goes on in its data state even after a tag whose text is raw (`<script a=>`).
    pub(crate) in_value: bool,
}

/// Walks a tag's attributes as lol_html's tokenizer reads them, from just after the tag's
/// name to its `>`, giving each `(name, value)` to `attribute` (a valueless attribute has an
/// empty value); `None` if the tag does not end in `bytes`. End tags are read the same way.
pub(crate) fn walk_attributes<'a>(
    bytes: &'a [u8],
    mut attribute: impl FnMut(&'a [u8], &'a [u8]),
) -> Option<TagEnd> {
    let at = |i: usize| bytes.get(i).copied();
    let mut i = 0;
    loop {
        // Before a name: spaces, and slashes that do not end the tag.
        let before = i;
        while is_space(at(i)?) || at(i)? == b'/' {
            i += 1;
        }
        if at(i)? == b'>' {
            return Some(TagEnd {
                end: i + 1,
                self_closing: i > before && bytes[i - 1] == b'/',
                in_value: false,
            });
        }
        // The name: its first byte may be `=`.
        let name_start = i;
        i += 1;
        while !matches!(at(i)?, b'/' | b'>' | b'=') && !is_space(at(i)?) {
            i += 1;
        }
        let name = &bytes[name_start..i];
        while is_space(at(i)?) {
            i += 1;
        }
        if at(i)? != b'=' {
            attribute(name, &bytes[i..i]);
            continue;
        }
        i += 1;
        while is_space(at(i)?) {
            i += 1;
        }
        let value = match at(i)? {
            quote @ (b'"' | b'\'') => {
                let len = find_near([quote], &bytes[i + 1..])?;
                let value = &bytes[i + 1..i + 1 + len];
                i += len + 2;
                value
            }
            b'>' => {
                attribute(name, &bytes[i..i]);
                return Some(TagEnd {
                    end: i + 1,
                    self_closing: false,
                    in_value: true,
                });
            }
            _ => {
                let start = i;
                while at(i)? != b'>' && !is_space(at(i)?) {
                    i += 1;
                }
                &bytes[start..i]
            }
        };
        attribute(name, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdicts_follow_lol_html_tokenizer() {
        let cases: [(&[u8], Verdict); 14] = [
            (b"<meta charset=utf-8>", Verdict::Safe),
            (b"<meta charset=sjis>", Verdict::Unsafe),
            (b"<meta/charset=sjis>", Verdict::Unsafe),
            (b"<meta\rcharset=\"sjis\">", Verdict::Unsafe),
            (b"<metadata charset=sjis>", Verdict::Safe),
            (b"<meta x='>' charset=sjis>", Verdict::Unsafe),
            (b"<meta x=a>charset=sjis>", Verdict::Safe),
            (b"<meta =charset=sjis>", Verdict::Safe),
            (b"<meta charset = 'big5' >", Verdict::Unsafe),
            (
                b"<meta http-equiv=refresh content='charset=sjis'>",
                Verdict::Safe,
            ),
            (
                b"<meta content='charset=sjis' http-equiv=' content-type '>",
                Verdict::Unsafe,
            ),
            (b"<meta charset='sjis", Verdict::Incomplete),
            (b"<me", Verdict::Incomplete),
            (b"<mark>", Verdict::Safe),
        ];
        for (tag, want) in cases {
            assert_eq!(
                meta_verdict(tag, encoding_rs::UTF_8),
                want,
                "{}",
                String::from_utf8_lossy(tag)
            );
        }
    }
}
