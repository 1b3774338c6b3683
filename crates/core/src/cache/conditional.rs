//! Conditional requests answered from the cache: whether a hit is a `304 Not Modified`, and
//! what a `304` carries.
//!
//! RFC 9110 section 13: a `GET` or `HEAD` with `If-None-Match` is compared with the stored
//! `ETag` by the weak comparison (`W/"a"` matches `"a"`; `*` matches any stored response);
//! only without `If-None-Match` is `If-Modified-Since` compared with the stored
//! `Last-Modified` (13.2.2). A precondition that does not parse never gives a `304`: the
//! full response is always a correct answer, a wrong `304` is not. Preconditions apply only
//! when the stored answer is a `2xx` (13.2.1: a `404` stays a `404`).
//!
//! `If-Match` and `If-Unmodified-Since` (which could turn a hit into a `412`) are not
//! evaluated here: such a request gets the stored page, as before.

use std::time::SystemTime;

/// The request's preconditions that can make a hit a `304`, owned (they are read before the
/// request goes to the origin, and used when the stored copy answers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// Every `If-None-Match` line, joined with `, ` (one list, RFC 9110 5.3).
    if_none_match: Option<Vec<u8>>,
    /// Every `If-Modified-Since` line: more than one makes it ignored (13.1.3).
    if_modified_since: Vec<Vec<u8>>,
}

impl Preconditions {
    /// The preconditions of a request: its method, and its headers (names in any case).
    /// Empty unless the method is `GET` or `HEAD`.
    pub fn of<'h>(method: &str, headers: impl IntoIterator<Item = (&'h str, &'h [u8])>) -> Self {
        let mut out = Preconditions::default();
        if method != "GET" && method != "HEAD" {
            return out;
        }
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("if-none-match") {
                let list = out.if_none_match.get_or_insert_with(Vec::new);
                if !list.is_empty() {
                    list.extend_from_slice(b", ");
                }
                list.extend_from_slice(value);
            } else if name.eq_ignore_ascii_case("if-modified-since") {
                out.if_modified_since.push(value.to_vec());
            }
        }
        out
    }

    /// Whether the stored response (`status`, `headers`, names in any case) answers this
    /// request as `304 Not Modified`.
    pub fn not_modified<'h>(
        &self,
        status: u16,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])> + Clone,
    ) -> bool {
        if !(200..300).contains(&status) {
            return false;
        }
        let stored = |wanted: &str| -> Vec<&'h [u8]> {
            headers
                .clone()
                .into_iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(wanted))
                .map(|(_, v)| v)
                .collect()
        };
        if let Some(list) = &self.if_none_match {
            // Present: If-Modified-Since is not looked at, whatever this list holds.
            let etags = stored("etag");
            let [etag] = etags.as_slice() else {
                // No ETag (or several, which is no validator): only `*` matches.
                return matches!(parse_list(list), Some(List::Any));
            };
            return none_match_fails(list, etag);
        }
        let [since] = self.if_modified_since.as_slice() else {
            return false;
        };
        let last_modified = stored("last-modified");
        let (Some(since), [modified]) = (http_date(since), last_modified.as_slice()) else {
            return false;
        };
        http_date(modified).is_some_and(|modified| modified <= since)
    }
}

/// Whether `If-None-Match: list` is false for a response whose `ETag` is `etag`: `*`, or an
/// entity-tag in the list that weakly matches it. A list or an `ETag` that does not parse
/// never matches.
pub fn none_match_fails(list: &[u8], etag: &[u8]) -> bool {
    let Some(stored) = single_tag(etag) else {
        return matches!(parse_list(list), Some(List::Any));
    };
    match parse_list(list) {
        Some(List::Any) => true,
        Some(List::Tags(tags)) => tags.iter().any(|t| t.opaque == stored.opaque),
        None => false,
    }
}

/// Whether a stored header is kept on a `304` (RFC 9110 15.4.5): the fields a `200` would
/// have carried that a cache updates from a `304` (`ETag`, `Cache-Control`, `Vary`,
/// `Expires`, `Date`, `Content-Location`), and `Last-Modified` when there is no `ETag` (it
/// is then the validator; `has_etag` says whether there is one). No other representation
/// metadata: no `Content-Type`, `Content-Encoding`, `Content-Length`.
pub fn kept_on_304(name: &str, has_etag: bool) -> bool {
    const KEPT: [&str; 6] = [
        "etag",
        "cache-control",
        "vary",
        "expires",
        "date",
        "content-location",
    ];
    KEPT.iter().any(|k| name.eq_ignore_ascii_case(k))
        || (!has_etag && name.eq_ignore_ascii_case("last-modified"))
}

/// One entity-tag: its opaque part (quotes included) and whether it is weak.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EntityTag<'a> {
    weak: bool,
    opaque: &'a [u8],
}

#[derive(Debug, PartialEq, Eq)]
enum List<'a> {
    Any,
    Tags(Vec<EntityTag<'a>>),
}

/// RFC 9110 8.8.3: `entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE`, `etagc = %x21 / %x23-7E /
/// obs-text`. Returns the tag and the rest of the input.
fn entity_tag(input: &[u8]) -> Option<(EntityTag<'_>, &[u8])> {
    let (weak, rest) = match input.strip_prefix(b"W/") {
        Some(rest) => (true, rest),
        None => (false, input),
    };
    let body = rest.strip_prefix(b"\"")?;
    let end = body.iter().position(|&b| b == b'"')?;
    if !body[..end]
        .iter()
        .all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
    {
        return None;
    }
    let opaque = &rest[..end + 2];
    Some((EntityTag { weak, opaque }, &body[end + 1..]))
}

/// `ETag`'s value: exactly one entity-tag (optional whitespace around it).
fn single_tag(value: &[u8]) -> Option<EntityTag<'_>> {
    let (tag, rest) = entity_tag(value.trim_ascii())?;
    rest.is_empty().then_some(tag)
}

/// `If-None-Match = "*" / #entity-tag`. Commas may sit inside an opaque tag, so the list is
/// read tag by tag, not split on commas. Empty elements are allowed (RFC 9110 5.6.1), an
/// empty list is not.
fn parse_list(value: &[u8]) -> Option<List<'_>> {
    let value = value.trim_ascii();
    if value == b"*" {
        return Some(List::Any);
    }
    let mut tags = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_ascii_start();
        while let Some(after) = rest.strip_prefix(b",") {
            rest = after.trim_ascii_start();
        }
        if rest.is_empty() {
            break;
        }
        let (tag, after) = entity_tag(rest)?;
        tags.push(tag);
        rest = after.trim_ascii_start();
        if !rest.is_empty() && !rest.starts_with(b",") {
            return None;
        }
    }
    (!tags.is_empty()).then_some(List::Tags(tags))
}

/// An HTTP-date in any of the three formats recipients must accept (RFC 9110 5.6.7).
fn http_date(value: &[u8]) -> Option<SystemTime> {
    let text = std::str::from_utf8(value).ok()?.trim();
    httpdate::parse_http_date(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pre(headers: &[(&str, &str)]) -> Preconditions {
        Preconditions::of("GET", headers.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    fn answer(p: &Preconditions, status: u16, stored: &[(&str, &str)]) -> bool {
        p.not_modified(status, stored.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    const STORED: &[(&str, &str)] = &[
        ("content-type", "text/html"),
        ("ETag", "W/\"v1\""),
        ("last-modified", "Tue, 15 Nov 1994 12:45:26 GMT"),
    ];

    #[test]
    fn if_none_match_by_weak_comparison() {
        for (list, want) in [
            ("W/\"v1\"", true),
            ("\"v1\"", true),
            ("\"v2\"", false),
            ("\"v2\", W/\"v1\"", true),
            ("\"v2\" ,\"v1\"", true),
            (" , \"v1\" , ", true),
            ("*", true),
            ("\"V1\"", false),
            ("W/\"v\"", false),
        ] {
            assert_eq!(
                answer(&pre(&[("if-none-match", list)]), 200, STORED),
                want,
                "{list}"
            );
        }
        // Two lines are one list.
        let p = pre(&[("if-none-match", "\"a\""), ("If-None-Match", "\"v1\"")]);
        assert!(answer(&p, 200, STORED));
        // A comma inside an opaque tag is part of it.
        let stored = [("etag", "\"a,b\"")];
        assert!(answer(&pre(&[("if-none-match", "\"a,b\"")]), 200, &stored));
        assert!(!answer(&pre(&[("if-none-match", "\"a\"")]), 200, &stored));
    }

    #[test]
    fn malformed_lists_and_etags_never_give_a_304() {
        for list in [
            "",
            "v1",
            "\"v1",
            "W/v1",
            "w/\"v1\"",
            "\"v1\" \"v2\"",
            "**",
            "*, \"v1\"",
            "\"v\x011\"",
            ",",
        ] {
            assert!(
                !answer(&pre(&[("if-none-match", list)]), 200, STORED),
                "{list:?}"
            );
        }
        for etag in ["v1", "\"v1", "\"v1\" x", "W/ \"v1\""] {
            let stored = [("etag", etag)];
            assert!(
                !answer(&pre(&[("if-none-match", "\"v1\"")]), 200, &stored),
                "{etag:?}"
            );
            // `*` only says a current representation exists: it does.
            assert!(answer(&pre(&[("if-none-match", "*")]), 200, &stored));
        }
        // No ETag stored: only `*` matches.
        let no_etag = [("content-type", "text/html")];
        assert!(!answer(&pre(&[("if-none-match", "\"v1\"")]), 200, &no_etag));
        assert!(answer(&pre(&[("if-none-match", "*")]), 200, &no_etag));
    }

    #[test]
    fn if_modified_since_only_without_if_none_match() {
        let same = "Tue, 15 Nov 1994 12:45:26 GMT";
        let later = "Wed, 16 Nov 1994 00:00:00 GMT";
        let earlier = "Mon, 14 Nov 1994 00:00:00 GMT";
        assert!(answer(&pre(&[("if-modified-since", same)]), 200, STORED));
        assert!(answer(&pre(&[("if-modified-since", later)]), 200, STORED));
        assert!(!answer(
            &pre(&[("if-modified-since", earlier)]),
            200,
            STORED
        ));
        // The two obsolete formats every recipient must read.
        assert!(answer(
            &pre(&[("if-modified-since", "Tuesday, 15-Nov-94 12:45:26 GMT")]),
            200,
            STORED
        ));
        assert!(answer(
            &pre(&[("if-modified-since", "Tue Nov 15 12:45:26 1994")]),
            200,
            STORED
        ));
        // If-None-Match present decides alone, even when it fails to match.
        let p = pre(&[("if-none-match", "\"v2\""), ("if-modified-since", later)]);
        assert!(!answer(&p, 200, STORED));
        let p = pre(&[("if-none-match", "bad"), ("if-modified-since", later)]);
        assert!(!answer(&p, 200, STORED));
    }

    #[test]
    fn malformed_dates_and_missing_validators_never_give_a_304() {
        for since in [
            "",
            "yesterday",
            "Tue, 15 Nov 1994 12:45:26",
            "Tue, 32 Nov 1994 12:45:26 GMT",
            "Tue, 15 Nov 1994 25:45:26 GMT",
            "1994-11-15T12:45:26Z",
            "Tue, 15 Nov 1994 12:45:26 GMT, Tue, 15 Nov 1994 12:45:26 GMT",
        ] {
            assert!(
                !answer(&pre(&[("if-modified-since", since)]), 200, STORED),
                "{since:?}"
            );
        }
        // Two lines: ignored.
        let later = "Wed, 16 Nov 1994 00:00:00 GMT";
        let p = pre(&[("if-modified-since", later), ("if-modified-since", later)]);
        assert!(!answer(&p, 200, STORED));
        // No Last-Modified, or one that is not a date.
        let p = pre(&[("if-modified-since", later)]);
        assert!(!answer(&p, 200, &[("etag", "\"v1\"")]));
        assert!(!answer(&p, 200, &[("last-modified", "soon")]));
    }

    #[test]
    fn only_get_and_head_and_only_a_2xx() {
        let headers = [("if-none-match", "*")];
        let of = |m: &str| Preconditions::of(m, headers.iter().map(|(n, v)| (*n, v.as_bytes())));
        assert!(answer(&of("GET"), 200, STORED));
        assert!(answer(&of("HEAD"), 200, STORED));
        for method in ["POST", "PUT", "DELETE", "get"] {
            assert_eq!(of(method), Preconditions::default(), "{method}");
            assert!(!answer(&of(method), 200, STORED), "{method}");
        }
        for status in [301, 404, 410] {
            assert!(!answer(&of("GET"), status, STORED), "{status}");
        }
        assert!(answer(&of("GET"), 203, STORED));
        // No precondition at all: never a 304.
        assert!(!answer(&Preconditions::default(), 200, STORED));
    }

    #[test]
    fn what_a_304_keeps() {
        for name in [
            "ETag",
            "cache-control",
            "Vary",
            "expires",
            "date",
            "content-location",
        ] {
            assert!(kept_on_304(name, true), "{name}");
        }
        for name in ["content-type", "content-encoding", "content-length", "x-a"] {
            assert!(!kept_on_304(name, true), "{name}");
            assert!(!kept_on_304(name, false), "{name}");
        }
        assert!(!kept_on_304("last-modified", true));
        assert!(kept_on_304("Last-Modified", false));
    }

    proptest! {
        /// Never a panic on any bytes; and a tag always matches itself, weak or strong.
        #[test]
        fn any_values(list in proptest::collection::vec(any::<u8>(), 0..60),
                      etag in proptest::collection::vec(any::<u8>(), 0..30),
                      since in "\\PC{0,40}",
                      opaque in "[!#-~]{0,20}") {
            let _ = none_match_fails(&list, &etag);
            let _ = parse_list(&list);
            let _ = http_date(since.as_bytes());
            let p = Preconditions::of("GET", [("if-modified-since", since.as_bytes())]);
            let _ = p.not_modified(200, [("last-modified", since.as_bytes())]);
            let strong = format!("\"{opaque}\"");
            let weak = format!("W/{strong}");
            prop_assert!(none_match_fails(strong.as_bytes(), weak.as_bytes()));
            prop_assert!(none_match_fails(weak.as_bytes(), strong.as_bytes()));
        }
    }
}
