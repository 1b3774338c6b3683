//! Whether a request is a page navigation: what gets the first-party script (and, with the
//! edge ID, the cookie). A fetch or XHR for an HTML fragment is not one.

use crate::qvalue::quality;

/// A page navigation: `Sec-Fetch-Dest: document`, or, from a client that sends no
/// `Sec-Fetch-*` headers at all, an `Accept` that names `text/html` (with a non-zero
/// quality). `headers` are the request's (name, value) pairs.
pub fn is_page_navigation<'h>(headers: impl IntoIterator<Item = (&'h str, &'h [u8])>) -> bool {
    let mut sec_fetch = false;
    let mut accepts_html = false;
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value);
        if name.eq_ignore_ascii_case("sec-fetch-dest") {
            if value.trim().eq_ignore_ascii_case("document") {
                return true;
            }
            sec_fetch = true;
        } else if name.len() > 10 && name[..10].eq_ignore_ascii_case("sec-fetch-") {
            sec_fetch = true;
        } else if name.eq_ignore_ascii_case("accept") {
            accepts_html |= names_html(&value);
        }
    }
    !sec_fetch && accepts_html
}

/// Whether an `Accept` value names `text/html` with a quality above zero (a malformed
/// quality does not refuse it).
fn names_html(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim();
        media.eq_ignore_ascii_case("text/html") && quality(parts).is_none_or(|q| q > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nav(headers: &[(&str, &str)]) -> bool {
        is_page_navigation(headers.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    #[test]
    fn navigations() {
        assert!(nav(&[("Sec-Fetch-Dest", "document"), ("Accept", "*/*")]));
        assert!(nav(&[("sec-fetch-dest", "Document")]));
        assert!(nav(&[(
            "accept",
            "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
        )]));
        assert!(nav(&[("Accept", "application/json, TEXT/HTML ; q=0.5")]));
    }

    #[test]
    fn not_navigations() {
        // A fetch from page code, even one asking for HTML.
        assert!(!nav(&[
            ("Sec-Fetch-Dest", "empty"),
            ("Accept", "text/html")
        ]));
        assert!(!nav(&[("Sec-Fetch-Mode", "cors"), ("Accept", "text/html")]));
        assert!(!nav(&[("Sec-Fetch-Dest", "iframe")]));
        assert!(!nav(&[("Accept", "*/*")]));
        assert!(!nav(&[("Accept", "text/html;q=0")]));
        assert!(!nav(&[("Accept", "text/html-fragment")]));
        assert!(!nav(&[]));
    }
}
