//! Response header policy, applied identically on every path (streamed, buffered, error).
//!
//! All header decisions are made here, before `stream_to_client()` sends them: once the
//! headers are out they cannot change.

use http::header::{HeaderName, HeaderValue};
use trusted_server_settings::HeaderSetting;

use crate::url_rewrite::UrlRule;

/// Name of the header carrying the service version.
pub const VERSION_HEADER: &str = "x-ts-version";

/// The service version sent in [`VERSION_HEADER`].
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Headers that describe the exact bytes of the body; wrong once the body changes.
const BODY_BOUND: [&str; 5] = [
    "content-length",
    "content-md5",
    "digest",
    "content-digest",
    "repr-digest",
];

/// Response headers whose values may hold origin URLs.
const URL_HEADERS: [&str; 7] = [
    "location",
    "content-location",
    "link",
    "refresh",
    "content-security-policy",
    "content-security-policy-report-only",
    "access-control-allow-origin",
];

/// Hop-by-hop response headers, which the platform manages.
const HOP_BY_HOP: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// Everything the policy needs to know about the request and body.
#[derive(Debug)]
pub struct ResponseContext<'a> {
    /// The URL rule for this request.
    pub rule: &'a UrlRule,
    /// Host name of the origin's authority (no port), for matching cookie domains.
    pub origin_host_name: &'a str,
    /// `publisher.cookie_domain` (empty: make origin-domain cookies host-only).
    pub cookie_domain: &'a str,
    /// Whether the body (or, for HEAD, the body a GET would return) differs from the
    /// origin's bytes.
    pub body_changes: bool,
    /// A `304 Not Modified`: validators must match what a full response would have carried.
    pub not_modified: bool,
    /// Whether the body depends on whether the request is a page navigation (an HTML page
    /// that gets the first-party script's tag only on navigations): the response then varies
    /// on the headers that rule reads, `NAVIGATION_VARY`.
    pub varies_by_navigation: bool,
}

/// The request headers the page-navigation rule reads (`publisher::navigation`): a cache
/// must not give a fetch's copy of a page (no script tag) to a navigation, or the reverse.
/// Browsers send the `Sec-Fetch-*` headers together, so `Sec-Fetch-Dest` stands for them.
pub const NAVIGATION_VARY: [&str; 2] = ["Sec-Fetch-Dest", "Accept"];

/// Applies the proxy's rules to origin response headers, then the standard headers with
/// `extra` (the `[response_headers]` setting).
pub fn origin_response_headers(
    headers: Vec<(HeaderName, HeaderValue)>,
    ctx: &ResponseContext<'_>,
    extra: &[HeaderSetting],
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::with_capacity(headers.len() + 2 + extra.len());
    for (name, value) in headers {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) || (ctx.body_changes && BODY_BOUND.contains(&n)) {
            continue;
        }
        if ctx.body_changes && n == "accept-ranges" {
            // Byte ranges of the rewritten body are not the origin's byte ranges.
            continue;
        }
        if (ctx.body_changes || ctx.not_modified) && n == "etag" {
            // The bytes differ from the origin's; only a weak validator still holds. A 304
            // revalidates a copy that was sent with the weak form, so it carries that too.
            if let Some(weak) = weaken_etag(&value) {
                out.push((name, weak));
            }
            continue;
        }
        if URL_HEADERS.contains(&n) {
            let rewritten = ctx.rule.rewrite_all(value.as_bytes());
            if let Ok(v) = HeaderValue::from_bytes(&rewritten) {
                out.push((name, v));
            }
            continue;
        }
        if n == "set-cookie" {
            // Bytes, not `to_str`: cookie values may carry bytes that are not UTF-8, and such a
            // cookie must lose an origin `Domain` like any other.
            let sanitized =
                sanitize_set_cookie(value.as_bytes(), ctx.origin_host_name, ctx.cookie_domain)
                    .and_then(|v| HeaderValue::from_bytes(&v).ok());
            if let Some(v) = sanitized {
                out.push((name, v));
            }
            continue;
        }
        out.push((name, value));
    }
    if ctx.varies_by_navigation {
        add_vary(&mut out, &NAVIGATION_VARY);
    }
    apply_standard_headers(&mut out, extra);
    out
}

/// Adds each of `names` to the response's `Vary` unless it is already listed (in any letter
/// case, on any `Vary` line) or the response varies on everything (`*`). The origin's lines
/// stay as they are; the missing names go on one more line.
pub fn add_vary(headers: &mut Vec<(HeaderName, HeaderValue)>, names: &[&str]) {
    let mut listed: Vec<String> = Vec::new();
    for (_, value) in headers.iter().filter(|(n, _)| *n == http::header::VARY) {
        let line = String::from_utf8_lossy(value.as_bytes());
        listed.extend(line.split(',').map(|t| t.trim().to_ascii_lowercase()));
    }
    if listed.iter().any(|t| t == "*") {
        return;
    }
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| !listed.contains(&name.to_ascii_lowercase()))
        .collect();
    if missing.is_empty() {
        return;
    }
    // Header names joined by ", ": always a valid value.
    if let Ok(value) = HeaderValue::from_str(&missing.join(", ")) {
        headers.push((http::header::VARY, value));
    }
}

/// Adds the version header and then `extra` (the `[response_headers]` setting), each replacing
/// any earlier value. Called on every path, errors included.
pub fn apply_standard_headers(
    headers: &mut Vec<(HeaderName, HeaderValue)>,
    extra: &[HeaderSetting],
) {
    set(
        headers,
        HeaderName::from_static(VERSION_HEADER),
        HeaderValue::from_static(VERSION),
    );
    for h in extra {
        // Names and values were validated at build time.
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(h.name.as_bytes()),
            HeaderValue::from_str(&h.value),
        ) {
            set(headers, n, v);
        }
    }
}

fn set(headers: &mut Vec<(HeaderName, HeaderValue)>, name: HeaderName, value: HeaderValue) {
    headers.retain(|(n, _)| *n != name);
    headers.push((name, value));
}

/// `value` as a weak validator (`W/…`), or `None` when it is not text.
pub(crate) fn weaken_etag(value: &HeaderValue) -> Option<HeaderValue> {
    let v = value.to_str().ok()?;
    if v.starts_with("W/") {
        Some(value.clone())
    } else {
        HeaderValue::from_str(&format!("W/{v}")).ok()
    }
}

/// Sanitizes one `Set-Cookie` value from the origin, as bytes (a value need not be UTF-8).
///
/// * A cookie whose value or attributes hold control characters is dropped (`None`).
/// * A `Domain` naming the origin's own domain (or a parent of it) would be rejected by the
///   browser on the first-party host: it becomes `cookie_domain`, or is removed (host-only
///   cookie) when `cookie_domain` is empty.
/// * Everything else is kept byte for byte.
pub fn sanitize_set_cookie(
    value: &[u8],
    origin_host_name: &str,
    cookie_domain: &str,
) -> Option<Vec<u8>> {
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return None;
    }
    let mut parts = value.split(|&b| b == b';');
    let pair = parts.next()?;
    if !pair.contains(&b'=') || pair.trim_ascii_start().starts_with(b"=") {
        return None;
    }
    let origin = origin_host_name.to_ascii_lowercase();
    let mut out = pair.to_vec();
    for attr in parts {
        let (key, val) = match attr.iter().position(|&b| b == b'=') {
            Some(i) => (&attr[..i], &attr[i + 1..]),
            None => (attr, &b""[..]),
        };
        if key.trim_ascii().eq_ignore_ascii_case(b"domain") && names_origin(val, &origin) {
            if !cookie_domain.is_empty() {
                out.extend_from_slice(b"; Domain=");
                out.extend_from_slice(cookie_domain.as_bytes());
            }
            continue;
        }
        out.push(b';');
        out.extend_from_slice(attr);
    }
    Some(out)
}

/// Whether a cookie's `Domain` value is `origin` (lowercase) or a parent domain of it.
fn names_origin(domain: &[u8], origin: &str) -> bool {
    let domain = domain.trim_ascii();
    let domain = domain
        .strip_prefix(b".")
        .unwrap_or(domain)
        .to_ascii_lowercase();
    let origin = origin.as_bytes();
    origin == domain
        || (origin.len() > domain.len()
            && origin.ends_with(&domain)
            && origin[origin.len() - domain.len() - 1] == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use trusted_server_settings::Settings;

    use crate::test_support::header_list as hv;

    fn settings() -> Settings {
        let mut s = Settings::DEFAULT;
        s.response_headers = Cow::Owned(vec![
            HeaderSetting {
                name: "x-powered-by".into(),
                value: "trusted-server".into(),
            },
            HeaderSetting {
                name: "x-ts-version".into(),
                value: "override".into(),
            },
        ]);
        s
    }

    fn run(list: &[(&str, &str)], body_changes: bool) -> Vec<(String, String)> {
        run_varying(list, body_changes, false)
    }

    fn run_varying(
        list: &[(&str, &str)],
        body_changes: bool,
        varies_by_navigation: bool,
    ) -> Vec<(String, String)> {
        let rule = UrlRule::new("origin.pub.test", "https", "www.pub.test");
        let ctx = ResponseContext {
            rule: &rule,
            origin_host_name: "origin.pub.test",
            cookie_domain: "",
            body_changes,
            not_modified: false,
            varies_by_navigation,
        };
        origin_response_headers(hv(list), &ctx, &settings().response_headers)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    fn get<'a>(h: &'a [(String, String)], name: &str) -> Vec<&'a str> {
        h.iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    #[test]
    fn pages_that_depend_on_the_navigation_rule_vary_on_its_headers() {
        let page = [("content-type", "text/html")];
        assert_eq!(
            get(&run_varying(&page, true, true), "vary"),
            ["Sec-Fetch-Dest, Accept"]
        );
        assert!(get(&run_varying(&page, true, false), "vary").is_empty());
        // The origin's own line stays; only the names it lacks are added, in any letter case.
        let origin = [("vary", "Accept-Encoding"), ("Vary", "ACCEPT")];
        assert_eq!(
            get(&run_varying(&origin, true, true), "vary"),
            ["Accept-Encoding", "ACCEPT", "Sec-Fetch-Dest"]
        );
        let both = [("vary", "sec-fetch-dest,accept")];
        assert_eq!(
            get(&run_varying(&both, true, true), "vary"),
            ["sec-fetch-dest,accept"]
        );
        // `*` already varies on everything.
        let star = [("vary", "Cookie, *")];
        assert_eq!(get(&run_varying(&star, true, true), "vary"), ["Cookie, *"]);
    }

    #[test]
    fn changed_bodies_lose_length_and_strong_validators() {
        let list = [
            ("content-length", "100"),
            ("etag", "\"abc\""),
            ("content-md5", "x"),
            ("content-type", "text/html"),
        ];
        let changed = run(&list, true);
        assert!(get(&changed, "content-length").is_empty());
        assert!(get(&changed, "content-md5").is_empty());
        assert_eq!(get(&changed, "etag"), ["W/\"abc\""]);
        let untouched = run(&list, false);
        assert_eq!(get(&untouched, "content-length"), ["100"]);
        assert_eq!(get(&untouched, "etag"), ["\"abc\""]);
    }

    #[test]
    fn redirects_point_at_the_first_party_host() {
        let out = run(
            &[
                ("location", "https://origin.pub.test/next?a=1"),
                ("link", "<//origin.pub.test/a.css>; rel=preload"),
            ],
            false,
        );
        assert_eq!(get(&out, "location"), ["https://www.pub.test/next?a=1"]);
        assert_eq!(get(&out, "link"), ["<//www.pub.test/a.css>; rel=preload"]);
    }

    #[test]
    fn standard_headers_come_last_and_configured_ones_win() {
        let out = run(&[("x-powered-by", "php")], false);
        assert_eq!(get(&out, "x-powered-by"), ["trusted-server"]);
        assert_eq!(get(&out, "x-ts-version"), ["override"]);
        let mut plain = Vec::new();
        apply_standard_headers(&mut plain, &Settings::DEFAULT.response_headers);
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].1, VERSION);
    }

    #[test]
    fn origin_cookie_domains_are_rewritten_and_bad_cookies_dropped() {
        let sanitize = |v: &str, domain: &str| {
            sanitize_set_cookie(v.as_bytes(), "origin.pub.test", domain)
                .map(|out| String::from_utf8(out).unwrap())
        };
        assert_eq!(
            sanitize("s=1; Domain=origin.pub.test; Path=/; HttpOnly", "").unwrap(),
            "s=1; Path=/; HttpOnly"
        );
        assert_eq!(
            sanitize("s=1; domain=.pub.test; Secure", ".pub.test").unwrap(),
            "s=1; Domain=.pub.test; Secure"
        );
        assert_eq!(
            sanitize("s=1; Domain=other.test", "").unwrap(),
            "s=1; Domain=other.test"
        );
        // A suffix that is not a parent domain is another site.
        assert_eq!(
            sanitize("s=1; Domain=b.test", "").unwrap(),
            "s=1; Domain=b.test"
        );
        assert_eq!(
            sanitize_set_cookie(b"s=1; Domain=b.test", "origin.pubb.test", ""),
            Some(b"s=1; Domain=b.test".to_vec())
        );
        assert_eq!(sanitize("novalue", ""), None);
        assert_eq!(sanitize("s=1\u{7f}", ""), None);
        let out = run(
            &[
                ("set-cookie", "a=1; Domain=origin.pub.test"),
                ("set-cookie", "b=2"),
            ],
            false,
        );
        assert_eq!(get(&out, "set-cookie"), ["a=1", "b=2"]);
    }

    #[test]
    fn a_cookie_that_is_not_utf8_loses_the_origin_domain_and_keeps_its_bytes() {
        let value = b"a=\xe9t\xe9; Domain=ORIGIN.pub.test; Path=/\xff";
        assert_eq!(
            sanitize_set_cookie(value, "origin.pub.test", "").unwrap(),
            b"a=\xe9t\xe9; Path=/\xff"
        );
        let rule = UrlRule::new("origin.pub.test", "https", "www.pub.test");
        let ctx = ResponseContext {
            rule: &rule,
            origin_host_name: "origin.pub.test",
            cookie_domain: "",
            body_changes: false,
            not_modified: false,
            varies_by_navigation: false,
        };
        let headers = vec![(
            HeaderName::from_static("set-cookie"),
            HeaderValue::from_bytes(value).unwrap(),
        )];
        let out = origin_response_headers(headers, &ctx, &Settings::DEFAULT.response_headers);
        let cookie = out.iter().find(|(n, _)| n == "set-cookie").unwrap();
        assert_eq!(cookie.1.as_bytes(), b"a=\xe9t\xe9; Path=/\xff");
    }
}
