//! Which URL a browser requests for a URL written in a creative, as far as the stage needs.
//!
//! Only absolute `http`/`https` URLs (`https://host/…`) and scheme-relative ones (`//host/…`)
//! can point at another host, so only those are offered to the signer. Relative URLs stay
//! relative. The browser's first steps are applied here so that the signer is offered what
//! the browser would request: leading and trailing C0 controls and spaces are stripped, ASCII
//! tabs and newlines removed anywhere, `\` counts as `/` in the leading slashes (the WHATWG URL
//! parser does that for `http` and `https`), and a scheme-relative URL gets the scheme of the
//! document it is read in: its base's (the creative's own address or `<base href>`), as when
//! the partner serves it directly, else the publisher's page's (an auction's markup, written
//! into a frame of the page). Everything after the slashes
//! (host case, IDNA, percent-encoding, dot segments) is left to the signer, which must parse
//! the URL anyway to decide whether its host is allowed.
//!
//! Without a base (no creative address and no `<base href>`), spellings that a browser
//! resolves against the page's own URL (`https:host`, `http:/host`) and relative URLs are not
//! offered: they stay as written, and the browser fetches them where it would have.
//!
//! With a base ([`resolve`]: the creative's own address, or its first `<base href>`), a
//! relative URL is resolved against it by the WHATWG parser (the `url` crate) and offered
//! absolute: served under `/first-party/proxy?…`, it would otherwise resolve against the
//! publisher's `/first-party/` path and break. An empty value and a fragment (`#x`) are not
//! resolved: they are references to the document itself (an in-page anchor, an SVG
//! `url(#gradient)`), which the browser never fetches.

use url::Url;

/// The absolute URL the browser requests for `value`, if `value` is an absolute or
/// scheme-relative `http`/`https` URL (which gets `scheme`, the document's); `None` for
/// anything else (relative, `data:`, …).
pub(crate) fn absolute(value: &str, scheme: &str) -> Option<String> {
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
        format!("{scheme}:{clean}")
    } else {
        clean
    })
}

/// The absolute URL the browser requests for `value` in a document whose base URL is `base`,
/// shown in a page whose scheme is `page_scheme`: [`absolute`] when `value` is an absolute or
/// scheme-relative http(s) URL (scheme-relative taking the base's scheme, or the page's
/// without a base), else `value` resolved against `base` when there is one and the result is
/// http(s); `None` otherwise (no base, an empty value or a fragment, `data:`, `javascript:`,
/// `mailto:`, …).
pub(crate) fn resolve(value: &str, base: Option<&Url>, page_scheme: &str) -> Option<String> {
    if let Some(url) = absolute(value, base.map_or(page_scheme, Url::scheme)) {
        return Some(url);
    }
    let base = base?;
    let trimmed = value.trim_matches(|c: char| c <= ' ');
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    let joined = base.join(trimmed).ok()?;
    matches!(joined.scheme(), "http" | "https").then(|| joined.into())
}

/// The base URL a `<base href>` value gives a document at `address`: `href` resolved
/// against the address (without one, only an absolute or scheme-relative URL, the latter
/// taking `page_scheme`), if the result is http(s). Browsers ignore
/// a base that is not a URL, and one that is `data:` or `javascript:`; this stage also
/// ignores any other scheme, since nothing it could offer resolves against one.
pub(crate) fn base_href(href: &str, address: Option<&Url>, page_scheme: &str) -> Option<Url> {
    let trimmed = href.trim_matches(|c: char| c <= ' ');
    let url = match address {
        Some(address) => address.join(trimmed).ok()?,
        None => Url::parse(&absolute(trimmed, page_scheme)?).ok()?,
    };
    matches!(url.scheme(), "http" | "https").then_some(url)
}

#[cfg(test)]
mod tests {
    use super::{absolute, base_href, resolve};

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
            assert_eq!(absolute(value, "https").as_deref(), want, "{value:?}");
        }
        // A scheme-relative URL takes the document's scheme; an absolute one keeps its own.
        assert_eq!(
            absolute("//a.test/x", "http").as_deref(),
            Some("http://a.test/x")
        );
        assert_eq!(
            absolute("https://a.test/x", "http").as_deref(),
            Some("https://a.test/x")
        );
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
            let offered = absolute(value, base.scheme()).unwrap();
            assert_eq!(
                url::Url::parse(&offered).unwrap(),
                base.join(value).unwrap(),
                "{value:?}"
            );
        }
    }

    #[test]
    fn relative_urls_resolve_against_the_base_as_the_whatwg_parser_does() {
        let base = url::Url::parse("https://ads.test/c/d/page.html?q=1").unwrap();
        let cases = [
            ("a.png", Some("https://ads.test/c/d/a.png")),
            ("../a.png", Some("https://ads.test/c/a.png")),
            ("/a.png", Some("https://ads.test/a.png")),
            ("?x=1", Some("https://ads.test/c/d/page.html?x=1")),
            (" a b.png\n", Some("https://ads.test/c/d/a%20b.png")),
            ("https:x.png", Some("https://ads.test/c/d/x.png")),
            ("//cdn.test/x", Some("https://cdn.test/x")),
            ("", None),
            ("  ", None),
            ("#top", None),
            ("data:,x", None),
            ("javascript:void(0)", None),
            ("mailto:a@b.test", None),
        ];
        for (value, want) in cases {
            // The page is http: with a base, the base's scheme is what counts.
            assert_eq!(
                resolve(value, Some(&base), "http").as_deref(),
                want,
                "{value:?}"
            );
        }
        assert_eq!(resolve("a.png", None, "https"), None);
        // Without a base (an auction's markup in a frame of the page), the page's scheme.
        for page in ["http", "https"] {
            let page_url = url::Url::parse(&format!("{page}://www.publisher.test/a")).unwrap();
            assert_eq!(
                resolve("//cdn.test/x", None, page).as_deref(),
                Some(page_url.join("//cdn.test/x").unwrap().as_str())
            );
        }
    }

    #[test]
    fn a_base_href_resolves_against_the_address_and_must_be_http() {
        let address = url::Url::parse("https://ads.test/c/page.html").unwrap();
        let got = |href: &str, address: Option<&url::Url>| {
            base_href(href, address, "http").map(String::from)
        };
        assert_eq!(
            got("x/", Some(&address)).as_deref(),
            Some("https://ads.test/c/x/")
        );
        assert_eq!(
            got("https://cdn.test/", None).as_deref(),
            Some("https://cdn.test/")
        );
        assert_eq!(got("x/", None), None);
        assert_eq!(
            got("//cdn.test/", None).as_deref(),
            Some("http://cdn.test/")
        );
        assert_eq!(
            got("//cdn.test/", Some(&address)).as_deref(),
            Some("https://cdn.test/")
        );
        assert_eq!(got("data:,x", Some(&address)), None);
        assert_eq!(got("javascript:x", None), None);
    }
}
