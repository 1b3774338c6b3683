//! Where the URLs are in the attribute values that hold more than one URL or more than a URL:
//! `srcset` (HTML's "parse a srcset attribute"), `<meta http-equiv=refresh content>`
//! (HTML's "shared declarative refresh steps") and `<a ping>` (a set of space-separated
//! tokens). Both work on the value as the browser reads it
//! (references decoded) and give back the value with each signed URL in place of its span.

/// ASCII whitespace as HTML defines it.
fn is_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

/// `value` with each `(start, end)` span replaced by `sign`'s answer for its text; `None`
/// when `sign` answered `None` for every span.
fn replace_spans(
    value: &str,
    spans: &[(usize, usize)],
    sign: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let mut out = String::with_capacity(value.len() + 64);
    let mut at = 0;
    let mut changed = false;
    for &(start, end) in spans {
        if let Some(url) = sign(&value[start..end]) {
            out.push_str(&value[at..start]);
            out.push_str(&url);
            at = end;
            changed = true;
        }
    }
    out.push_str(&value[at..]);
    changed.then_some(out)
}

/// The URL spans of a `srcset` value.
pub(crate) fn srcset_urls(value: &str) -> Vec<(usize, usize)> {
    let bytes = value.as_bytes();
    let mut spans = Vec::new();
    let mut at = 0;
    loop {
        while at < bytes.len() && (is_space(char::from(bytes[at])) || bytes[at] == b',') {
            at += 1;
        }
        if at >= bytes.len() {
            return spans;
        }
        let start = at;
        while at < bytes.len() && !is_space(char::from(bytes[at])) {
            at += 1;
        }
        let mut end = at;
        if bytes[end - 1] == b',' {
            while end > start && bytes[end - 1] == b',' {
                end -= 1;
            }
            if end > start {
                spans.push((start, end));
            }
            continue;
        }
        spans.push((start, end));
        // Descriptors, to the `,` outside parentheses that ends the candidate.
        let mut parens = false;
        while at < bytes.len() {
            match bytes[at] {
                b'(' => parens = true,
                b')' => parens = false,
                b',' if !parens => {
                    at += 1;
                    break;
                }
                _ => {}
            }
            at += 1;
        }
    }
}

/// A `srcset` value with its URLs signed; `None` when none was.
pub(crate) fn srcset(value: &str, sign: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    replace_spans(value, &srcset_urls(value), sign)
}

/// The URL spans of a `ping` value: its tokens separated by ASCII whitespace.
pub(crate) fn ping_urls(value: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in value.char_indices() {
        match (is_space(c), start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, value.len()));
    }
    spans
}

/// A `ping` value with its URLs signed; `None` when none was.
pub(crate) fn ping(value: &str, sign: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    replace_spans(value, &ping_urls(value), sign)
}

/// The URL span of a refresh `content` value, if it has one.
pub(crate) fn refresh_url(value: &str) -> Option<(usize, usize)> {
    let bytes = value.as_bytes();
    let mut at = 0;
    let skip_space = |at: &mut usize| {
        while *at < bytes.len() && is_space(char::from(bytes[*at])) {
            *at += 1;
        }
    };
    skip_space(&mut at);
    let digits = bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 && bytes.get(at) != Some(&b'.') {
        return None;
    }
    at += bytes[at..]
        .iter()
        .take_while(|&&b| b.is_ascii_digit() || b == b'.')
        .count();
    match bytes.get(at) {
        None => return None,
        Some(b';' | b',') => {}
        Some(&b) if is_space(char::from(b)) => {}
        Some(_) => return None,
    }
    skip_space(&mut at);
    if matches!(bytes.get(at), Some(b';' | b',')) {
        at += 1;
    }
    skip_space(&mut at);
    if at >= bytes.len() {
        return None;
    }
    let whole = (at, bytes.len());
    let lower = |i: usize| bytes.get(i).map(u8::to_ascii_lowercase);
    let mut quoted_from = at;
    if lower(at) == Some(b'u') {
        if lower(at + 1) != Some(b'r') || lower(at + 2) != Some(b'l') {
            return Some(whole);
        }
        let mut p = at + 3;
        skip_space(&mut p);
        if bytes.get(p) != Some(&b'=') {
            return Some(whole);
        }
        p += 1;
        skip_space(&mut p);
        quoted_from = p;
    }
    match bytes.get(quoted_from) {
        Some(&q @ (b'"' | b'\'')) => {
            let start = quoted_from + 1;
            let end = bytes[start..]
                .iter()
                .position(|&b| b == q)
                .map_or(bytes.len(), |i| start + i);
            Some((start, end))
        }
        _ => Some((quoted_from, bytes.len())),
    }
}

/// A refresh `content` value with its URL signed; `None` when it has none or it was not.
pub(crate) fn refresh(value: &str, sign: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let span = refresh_url(value)?;
    replace_spans(value, &[span], sign)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls<'a>(value: &'a str, spans: &[(usize, usize)]) -> Vec<&'a str> {
        spans.iter().map(|&(s, e)| &value[s..e]).collect()
    }

    #[test]
    fn srcset_candidates_are_found_as_html_parses_them() {
        let cases: [(&str, &[&str]); 7] = [
            ("a.png", &["a.png"]),
            ("a.png 1x, b.png 2x", &["a.png", "b.png"]),
            (" ,a.png,b.png, c.png,,", &["a.png,b.png", "c.png"]),
            ("a.png 100w,b.png", &["a.png", "b.png"]),
            ("a.png (x, y) 1x, b.png", &["a.png", "b.png"]),
            ("\ta.png\n2x,\r\nb.png", &["a.png", "b.png"]),
            (",,,", &[]),
        ];
        for (value, want) in cases {
            assert_eq!(urls(value, &srcset_urls(value)), want, "{value:?}");
        }
    }

    #[test]
    fn ping_urls_are_the_space_separated_tokens() {
        let cases: [(&str, &[&str]); 4] = [
            ("https://a.test/p", &["https://a.test/p"]),
            (" a\tb\n\x0cc  ", &["a", "b", "c"]),
            ("a,b é", &["a,b", "é"]),
            ("  ", &[]),
        ];
        for (value, want) in cases {
            assert_eq!(urls(value, &ping_urls(value)), want, "{value:?}");
        }
    }

    #[test]
    fn refresh_urls_are_found_as_html_parses_them() {
        let cases = [
            ("5;url=https://a.test/x", Some("https://a.test/x")),
            ("5; URL = 'https://a.test/x'y", Some("https://a.test/x")),
            ("0 ,\"//a.test\"", Some("//a.test")),
            ("0;https://a.test", Some("https://a.test")),
            ("0;ur https://a.test", Some("ur https://a.test")),
            (".5;url=x", Some("x")),
            ("5", None),
            ("5;", None),
            ("x;url=a", None),
            ("5x;url=a", None),
        ];
        for (value, want) in cases {
            let got = refresh_url(value).map(|(s, e)| &value[s..e]);
            assert_eq!(got, want, "{value:?}");
        }
    }
}
