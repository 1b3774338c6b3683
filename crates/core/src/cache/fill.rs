//! The origin request of a fill, and the request headers its entry is keyed on.
//!
//! Two rules keep one reader's page from reaching another:
//!
//! * **A variant is keyed on what the origin received.** The origin's `Vary` names request
//!   headers of *its* request, which the service rebuilt: `X-TS-EC`, `Forwarded`,
//!   `X-Forwarded-*` are the service's, a client's own are dropped, a header the client lists
//!   in `Connection` is removed, `Accept-Encoding` is narrowed. So the adapter builds the
//!   origin request first, gives the cache lookup the headers of that request
//!   ([`lookup_headers`]), and a fill sends exactly that request. Whatever the service adds,
//!   drops or rewrites is then matched as the origin saw it, with no list to keep in step.
//! * **A fill asks for the whole representation.** The headers of [`FILL_DROPPED`] make the
//!   origin answer *this request* (`206`, `304`, `412`, `416`) rather than describe the page;
//!   a fill drops them, so one reader's `Range` or validator can neither store a fragment nor
//!   switch the page's cache off. The reader's own preconditions are evaluated against the
//!   stored page instead (`super::conditional`). A request that passes (does not fill)
//!   forwards them unchanged.

/// Request headers a fill does not send to the origin: range and precondition headers
/// (RFC 9110 sections 13.1 and 14.2), lowercase.
pub const FILL_DROPPED: [&str; 6] = [
    "range",
    "if-range",
    "if-none-match",
    "if-modified-since",
    "if-match",
    "if-unmodified-since",
];

/// Whether a fill drops the request header `name` (any case).
pub fn fill_drops(name: &str) -> bool {
    FILL_DROPPED.iter().any(|d| d.eq_ignore_ascii_case(name))
}

/// The headers a cache lookup matches the origin's `Vary` against: those of the origin
/// request as a fill sends it (`origin_request`'s headers, without [`FILL_DROPPED`]), in
/// order. A request that passes sends more (its preconditions), but stores nothing.
pub fn lookup_headers<'h, V: 'h>(
    origin_request: impl IntoIterator<Item = (&'h str, V)>,
) -> impl Iterator<Item = (&'h str, V)> {
    origin_request
        .into_iter()
        .filter(|(name, _)| !fill_drops(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn range_and_preconditions_are_dropped_in_any_case() {
        for name in [
            "Range",
            "if-range",
            "If-None-Match",
            "IF-MODIFIED-SINCE",
            "if-match",
            "If-Unmodified-Since",
        ] {
            assert!(fill_drops(name), "{name}");
        }
        for name in [
            "accept-encoding",
            "accept-language",
            "x-ts-ec",
            "x-forwarded-for",
            "forwarded",
            "cookie",
            "if-none",
            "ranges",
        ] {
            assert!(!fill_drops(name), "{name}");
        }
    }

    #[test]
    fn the_service_headers_are_kept_for_vary() {
        let origin = [
            ("x-ts-ec", "abc.DEF123"),
            ("if-none-match", "\"v1\""),
            ("x-forwarded-for", "127.0.0.2"),
            ("range", "bytes=0-9"),
            ("accept-language", "de"),
        ];
        let kept: Vec<_> = lookup_headers(origin.iter().map(|(n, v)| (*n, *v))).collect();
        assert_eq!(
            kept,
            [
                ("x-ts-ec", "abc.DEF123"),
                ("x-forwarded-for", "127.0.0.2"),
                ("accept-language", "de"),
            ]
        );
    }

    proptest! {
        /// Whatever the request's headers, the lookup sees every one except the dropped ones,
        /// in their order, values untouched; none of the dropped ones.
        #[test]
        fn lookup_headers_are_the_fill_request_minus_the_dropped(
            headers in proptest::collection::vec(
                (prop_oneof![
                    Just("Range".to_owned()), Just("if-none-match".to_owned()),
                    Just("If-Match".to_owned()), Just("if-unmodified-since".to_owned()),
                    Just("if-modified-since".to_owned()), Just("If-Range".to_owned()),
                    "[a-zA-Z-]{1,20}"
                ], any::<u8>()),
                0..12,
            )
        ) {
            let kept: Vec<(&str, u8)> =
                lookup_headers(headers.iter().map(|(n, v)| (n.as_str(), *v))).collect();
            let dropped = |n: &str| FILL_DROPPED.contains(&n.to_ascii_lowercase().as_str());
            let want: Vec<(&str, u8)> = headers
                .iter()
                .filter(|(n, _)| !dropped(n))
                .map(|(n, v)| (n.as_str(), *v))
                .collect();
            prop_assert_eq!(kept, want);
        }
    }
}
