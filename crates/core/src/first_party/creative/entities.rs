//! Attribute values as the browser reads them, and written back so it reads them again.
//!
//! lol_html gives an attribute's raw bytes, character references and all. The browser decodes
//! those references before it parses a URL, so `?a=1&amp;b=2` requests `?a=1&b=2`. Decoding all
//! of HTML's 2,231 named references would need their table; the stage does not: it decodes the
//! numeric references and the named ones URLs and CSS actually use (`&amp; &lt; &gt; &quot;
//! &apos;`), knows which bare `&name` a browser leaves alone (HTML's rule for attributes), and
//! refuses a value holding anything else. A refused value is left exactly as it was.

/// The named references a browser decodes even without their `;` (HTML's "legacy" ones). In
/// an attribute value such a name followed by `=` or a letter or digit is left as text.
const LEGACY: [&str; 106] = [
    "AElig", "AMP", "Aacute", "Acirc", "Agrave", "Aring", "Atilde", "Auml", "COPY", "Ccedil",
    "ETH", "Eacute", "Ecirc", "Egrave", "Euml", "GT", "Iacute", "Icirc", "Igrave", "Iuml", "LT",
    "Ntilde", "Oacute", "Ocirc", "Ograve", "Oslash", "Otilde", "Ouml", "QUOT", "REG", "THORN",
    "Uacute", "Ucirc", "Ugrave", "Uuml", "Yacute", "aacute", "acirc", "acute", "aelig", "agrave",
    "amp", "aring", "atilde", "auml", "brvbar", "ccedil", "cedil", "cent", "copy", "curren", "deg",
    "divide", "eacute", "ecirc", "egrave", "eth", "euml", "frac12", "frac14", "frac34", "gt",
    "iacute", "icirc", "iexcl", "igrave", "iquest", "iuml", "laquo", "lt", "macr", "micro",
    "middot", "nbsp", "not", "ntilde", "oacute", "ocirc", "ograve", "ordf", "ordm", "oslash",
    "otilde", "ouml", "para", "plusmn", "pound", "quot", "raquo", "reg", "sect", "shy", "sup1",
    "sup2", "sup3", "szlig", "thorn", "times", "uacute", "ucirc", "ugrave", "uml", "uuml",
    "yacute", "yen", "yuml",
];

/// The named references decoded here, with or without `;` (`apos` only with it).
fn known(name: &str, semicolon: bool) -> Option<char> {
    Some(match name {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "apos" if semicolon => '\'',
        _ => return None,
    })
}

/// The value of an attribute whose raw text is `raw`, as the browser reads it; `None` when it
/// holds a reference this module does not decode (or a NUL, which the browser replaces).
pub(crate) fn decode(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find(['&', '\0']) {
        out.push_str(&rest[..at]);
        if rest.as_bytes()[at] == b'\0' {
            return None;
        }
        let (decoded, used) = reference(&rest[at + 1..])?;
        match decoded {
            Some(c) => out.push(c),
            None => out.push('&'),
        }
        rest = &rest[at + 1 + used..];
    }
    out.push_str(rest);
    Some(out)
}

/// Reads what follows an `&`: `Some((Some(char), bytes used))` for a reference decoded,
/// `Some((None, 0))` for an `&` that is only text, `None` for one this module cannot decode.
fn reference(after: &str) -> Option<(Option<char>, usize)> {
    let bytes = after.as_bytes();
    if bytes.first() == Some(&b'#') {
        return numeric(after);
    }
    let name_len = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    if name_len == 0 {
        return Some((None, 0));
    }
    let name = &after[..name_len];
    if bytes.get(name_len) == Some(&b';') {
        // A complete `&name;`: decoded if it is one of ours, otherwise it may be any of the
        // named references (or a legacy prefix of the name, left as text): refused.
        return known(name, true).map(|c| (Some(c), name_len + 1));
    }
    // The browser matches the longest legacy name at the start of the run.
    let Some(legacy) = LEGACY
        .iter()
        .filter(|l| name.starts_with(*l))
        .max_by_key(|l| l.len())
    else {
        return Some((None, 0));
    };
    let next = bytes.get(legacy.len());
    if next.is_some_and(|&b| b == b'=' || b.is_ascii_alphanumeric()) {
        return Some((None, 0)); // Left as text in an attribute value.
    }
    known(legacy, false).map(|c| (Some(c), legacy.len()))
}

/// `&#…;` and `&#x…;`, by HTML's rules; `None` for a number the browser replaces or remaps
/// (zero, surrogates, beyond U+10FFFF, the C1 range) or a form it leaves as text.
fn numeric(after: &str) -> Option<(Option<char>, usize)> {
    let bytes = after.as_bytes();
    let hex = matches!(bytes.get(1), Some(b'x' | b'X'));
    let start = if hex { 2 } else { 1 };
    let digits = bytes[start..]
        .iter()
        .take_while(|b| {
            if hex {
                b.is_ascii_hexdigit()
            } else {
                b.is_ascii_digit()
            }
        })
        .count();
    if digits == 0 {
        return Some((None, 0)); // `&#` or `&#x` without digits is text.
    }
    let text = &after[start..start + digits];
    let value = u32::from_str_radix(text, if hex { 16 } else { 10 }).ok()?;
    if value == 0 || (0x80..=0x9f).contains(&value) || value > 0x10ffff {
        return None;
    }
    let c = char::from_u32(value)?;
    let used = start + digits + usize::from(bytes.get(start + digits) == Some(&b';'));
    Some((Some(c), used))
}

/// `value` written inside an attribute quoted with `quote` (`"` or `'`): `&` and the quote
/// become references, so the browser reads exactly `value` back.
pub(crate) fn escape(value: &str, quote: char) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' if quote == '"' => out.push_str("&quot;"),
            '\'' if quote == '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_decode_as_in_an_attribute_value() {
        let cases = [
            ("a&amp;b", Some("a&b")),
            ("?a=1&b=2", Some("?a=1&b=2")),
            ("?a=1&amp=2", Some("?a=1&amp=2")),
            ("?x&amp,y", Some("?x&,y")),
            ("?x&ampz", Some("?x&ampz")),
            ("&#47;&#x2F;&#X2f;&#47x", Some("///\u{2f}x")),
            ("&quot;&lt;&gt;&apos;&QUOT;", Some("\"<>'\"")),
            ("&# &#x; & &;", Some("&# &#x; & &;")),
            ("?a&b;", None),
            ("&copy;", None),
            ("&copy,", None),
            ("&notit;", None),
            ("&#0;", None),
            ("&#x80;", None),
            ("&#xD800;", None),
            ("&#99999999999;", None),
            ("a\0b", None),
        ];
        for (raw, want) in cases {
            assert_eq!(decode(raw).as_deref(), want, "{raw:?}");
        }
    }

    #[test]
    fn escaped_values_read_back_the_same() {
        for value in ["a&b\"c'd", "&amp;", "plain", "&#47;"] {
            for quote in ['"', '\''] {
                let escaped = escape(value, quote);
                assert!(!escaped.contains(quote));
                assert_eq!(decode(&escaped).as_deref(), Some(value));
            }
        }
    }
}
