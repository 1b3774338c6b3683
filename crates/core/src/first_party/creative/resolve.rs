//! Which URL a browser requests for a URL written in a creative, as far as the stage needs.
//!
//! Only absolute `http`/`https` URLs (`https://host/…`) and scheme-relative ones (`//host/…`)
//! can point at another host, so only those are offered to the signer. Relative URLs stay
//! relative. The browser's first steps are applied here so that the signer is offered what
//! the browser would request: leading and trailing C0 controls and spaces are stripped, ASCII
//! tabs and newlines removed anywhere, `\` counts as `/` in the leading slashes (the WHATWG URL
//! parser does that for `http` and `https`), and a scheme-relative URL gets `https:`, the
//! scheme of the publisher's page the creative is served in. Everything after the slashes
//! (host case, IDNA, percent-encoding, dot segments) is left to the signer, which must parse
//! the URL anyway to decide whether its host is allowed.
//!
//! Spellings that a browser resolves against the page's own URL (`https:host`, `http:/host`)
//! are not offered: they stay as written, and the browser fetches them where it would have.

/// The absolute URL the browser requests for `value`, if `value` is an absolute or
/// scheme-relative `http`/`https` URL; `None` for anything else (relative, `data:`, …).
pub(crate) fn absolute(value: &str) -> Option<String> {
    let trimmed = value.trim_matches(|c: char| c <= ' ');
    let clean: String = trimmed
        .chars()
        .filter(|&c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let lower_prefix = |p: &str| {
        clean
            .get(..p.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(p))
    };
    let after_scheme = if lower_prefix("https:") {
        "https:".len()
    } else if lower_prefix("http:") {
        "http:".len()
    } else {
        0
    };
    let rest = &clean[after_scheme..];
    let mut slashes = rest.bytes().take_while(|&b| b == b'/' || b == b'\\');
    if slashes.next().is_none() || slashes.next().is_none() {
        return None;
    }
    Some(if after_scheme == 0 {
        format!("https:{clean}")
    } else {
        clean
    })
}

#[cfg(test)]
mod tests {
    use super::absolute;

    #[test]
    fn absolute_and_scheme_relative_urls_are_offered_as_the_browser_requests_them() {
        let cases = [
            ("https://a.test/x", Some("https://a.test/x")),
            ("HTTP://A.test/x", Some("HTTP://A.test/x")),
            ("  \u{0c}https://a.test/x \n", Some("https://a.test/x")),
            ("ht\ttps://a.\ntest/x", Some("https://a.test/x")),
            ("//a.test/x", Some("https://a.test/x")),
            ("\\\\a.test/x", Some("https:\\\\a.test/x")),
            ("/\\a.test/x", Some("https:/\\a.test/x")),
            ("https:\\\\a.test", Some("https:\\\\a.test")),
            ("/x", None),
            ("x/y", None),
            ("https:a.test", None),
            ("http:/a.test", None),
            ("data:image/png;base64,AA", None),
            ("javascript:alert(1)", None),
            ("", None),
            ("é//a", None),
        ];
        for (value, want) in cases {
            assert_eq!(absolute(value).as_deref(), want, "{value:?}");
        }
    }

    /// The `url` crate (the WHATWG parser) is the independent reading: whatever is offered
    /// parses, against the publisher's https page, to the same URL as the raw value does.
    #[test]
    fn what_is_offered_is_what_the_whatwg_parser_resolves() {
        let base = url::Url::parse("https://www.publisher.test/first-party/proxy?x=1").unwrap();
        for value in [
            "//a.test/x?y#z",
            " https://A.test:8443/%7e/../b ",
            "\\/a.test\\p",
            "http:\\\\a.test/\tq",
            "\n//a.test/\r\nx",
        ] {
            let offered = absolute(value).unwrap();
            assert_eq!(
                url::Url::parse(&offered).unwrap(),
                base.join(value).unwrap(),
                "{value:?}"
            );
        }
    }
}
