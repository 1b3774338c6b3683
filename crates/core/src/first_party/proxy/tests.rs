use super::*;
use proptest::prelude::*;

use crate::first_party::token::{SignedParams, TOKEN_PARAM};

fn policy() -> TargetPolicy {
    TargetPolicy::new(["demo-partner.example"], &[])
}

use crate::test_support::header_list as headers;

fn names(h: &[(HeaderName, HeaderValue)]) -> Vec<&str> {
    h.iter().map(|(n, _)| n.as_str()).collect()
}

fn value<'a>(h: &'a [(HeaderName, HeaderValue)], name: &str) -> Option<&'a str> {
    h.iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v.to_str().ok())
}

#[test]
fn partners_get_only_what_a_fetch_needs() {
    let client = headers(&[
        ("accept", "image/avif,image/*"),
        ("accept-language", "fr"),
        ("user-agent", "UA/1"),
        ("cookie", "session=secret"),
        ("authorization", "Basic c2VjcmV0"),
        ("referer", "https://www.pub.example/private?q=1"),
        ("x-forwarded-for", "6.6.6.6"),
        ("x-ts-ec", "spoofed"),
        ("accept-encoding", "zstd, br, gzip;q=0.5"),
    ]);
    let out = partner_request_headers(client.iter().map(|(n, v)| (n, v)), Some("abc.DEF"));
    assert_eq!(
        names(&out),
        [
            "accept",
            "accept-language",
            "user-agent",
            "accept-encoding",
            "x-ts-ec"
        ]
    );
    assert_eq!(value(&out, "accept-encoding"), Some("br, gzip;q=0.5"));
    assert_eq!(value(&out, "x-ts-ec"), Some("abc.DEF"));
    // A request with the reader's ID bypasses the platform's HTTP cache.
    assert!(partner_fetch_passes(&out));
    // Without an ID the client's own never passes; without a supported coding, identity.
    let client = headers(&[("x-ts-ec", "spoofed"), ("accept-encoding", "zstd")]);
    let out = partner_request_headers(client.iter().map(|(n, v)| (n, v)), None);
    assert_eq!(names(&out), ["accept-encoding"]);
    assert_eq!(value(&out, "accept-encoding"), Some("identity"));
    assert!(!partner_fetch_passes(&out));
}

/// RFC 3986 §5.4.1 and §5.4.2 reference resolution examples, on an allowed host (the RFC's
/// `a` becomes `a.demo-partner.example`, `g` as a host stays `g`, which is not allowed).
#[test]
fn locations_resolve_as_rfc_3986_says_and_are_rechecked() {
    let base = "http://a.demo-partner.example/b/c/d;p?q";
    let host = "http://a.demo-partner.example";
    for (reference, want) in [
        ("g", "/b/c/g"),
        ("./g", "/b/c/g"),
        ("g/", "/b/c/g/"),
        ("/g", "/g"),
        ("?y", "/b/c/d;p?y"),
        ("g?y", "/b/c/g?y"),
        ("#s", "/b/c/d;p?q"),
        ("g#s", "/b/c/g"),
        (";x", "/b/c/;x"),
        ("", "/b/c/d;p?q"),
        (".", "/b/c/"),
        ("..", "/b/"),
        ("../g", "/b/g"),
        ("../..", "/"),
        ("../../../g", "/g"),
        ("/./g", "/g"),
        ("g.", "/b/c/g."),
        ("./../g", "/b/g"),
        ("g;x=1/../y", "/b/c/y"),
    ] {
        let hop = next_hop(302, Some(reference), base, 0, &policy());
        let want = format!("{host}{want}");
        match hop {
            Ok(Hop::Follow(t)) => assert_eq!(t.url, want, "{reference:?}"),
            other => panic!("{reference:?}: {other:?}"),
        }
    }
    // `//g` is another host, off the allowlist; so is an IP literal or another scheme.
    for refused in [
        "//g",
        "http://127.0.0.1/",
        "http://169.254.169.254/latest",
        "https://evil.example/",
        "ftp://a.demo-partner.example/",
        "http://user@a.demo-partner.example/",
    ] {
        assert!(
            matches!(
                next_hop(301, Some(refused), base, 0, &policy()),
                Err(HopError::Refused(_))
            ),
            "{refused}"
        );
    }
    // Another allowed host is followed.
    assert_eq!(
        next_hop(
            307,
            Some("https://CDN.demo-partner.example./x"),
            base,
            0,
            &policy()
        ),
        Ok(Hop::Follow(
            policy()
                .check("https://cdn.demo-partner.example/x")
                .unwrap()
        ))
    );
}

#[test]
fn only_redirect_statuses_are_followed_and_at_most_four_times() {
    let base = "https://ads.demo-partner.example/a";
    for status in [200, 204, 300, 304, 305, 306, 404, 500] {
        assert_eq!(
            next_hop(status, Some("/b"), base, 0, &policy()),
            Ok(Hop::Final),
            "{status}"
        );
    }
    for status in [301, 302, 303, 307, 308] {
        assert!(matches!(
            next_hop(status, Some("/b"), base, MAX_REDIRECTS - 1, &policy()),
            Ok(Hop::Follow(_))
        ));
        assert_eq!(
            next_hop(status, Some("/b"), base, MAX_REDIRECTS, &policy()),
            Err(HopError::TooMany)
        );
        assert_eq!(
            next_hop(status, None, base, 0, &policy()),
            Err(HopError::NoLocation(status))
        );
    }
    assert_eq!(MAX_REDIRECTS, 4, "the issue's bound");
    assert!(matches!(
        next_hop(302, Some("http://[::1"), base, 0, &policy()),
        Err(HopError::BadLocation(_))
    ));
}

#[test]
fn cookies_cors_hop_and_unknown_headers_are_dropped_cache_control_kept() {
    let partner = headers(&[
        ("content-type", "text/html; charset=utf-8"),
        ("content-length", "1234"),
        ("cache-control", "public, max-age=60"),
        ("set-cookie", "uid=1; Domain=pub.example"),
        ("Set-Cookie2", "old=1"),
        ("access-control-allow-origin", "*"),
        ("Access-Control-Allow-Credentials", "true"),
        ("access-control-expose-headers", "x-a"),
        ("connection", "close, x-hop"),
        ("x-hop", "1"),
        ("transfer-encoding", "chunked"),
        ("strict-transport-security", "max-age=1; includeSubDomains"),
        ("clear-site-data", "\"cookies\""),
        ("etag", "\"v1\""),
        ("x-partner", "kept"),
    ]);
    let pass = client_response_headers(partner.clone(), false).unwrap();
    assert_eq!(
        names(&pass),
        ["content-type", "content-length", "cache-control", "etag"]
    );
    assert_eq!(value(&pass, "etag"), Some("\"v1\""));
    let rewritten = client_response_headers(partner, true).unwrap();
    assert_eq!(names(&rewritten), ["content-type", "cache-control", "etag"]);
    assert_eq!(value(&rewritten, "etag"), Some("W/\"v1\""));
    assert_eq!(
        value(&rewritten, "cache-control"),
        Some("public, max-age=60")
    );
}

/// Headers a browser acts on by going, fetching or reporting somewhere, or by changing state
/// for the whole origin: none reaches the client, whatever the status or body plan.
const BROWSER_ACTING: [(&str, &str); 24] = [
    ("refresh", "0; url=https://evil.example/"),
    (
        "link",
        "<https://evil.example/x.js>; rel=preload; as=script",
    ),
    ("link", "<https://evil.example>; rel=preconnect"),
    ("link", "<//evil.example>; rel=dns-prefetch"),
    ("link", "<https://evil.example/next>; rel=prefetch"),
    ("link", "<https://evil.example/m.js>; rel=modulepreload"),
    ("link", "<https://evil.example/s.css>; rel=stylesheet"),
    ("location", "https://evil.example/"),
    ("content-location", "https://evil.example/"),
    (
        "report-to",
        "{\"group\":\"g\",\"endpoints\":[{\"url\":\"https://evil.example/r\"}]}",
    ),
    ("reporting-endpoints", "default=\"https://evil.example/r\""),
    ("nel", "{\"report_to\":\"g\",\"max_age\":86400}"),
    ("sourcemap", "https://evil.example/map"),
    ("x-sourcemap", "https://evil.example/map"),
    ("speculation-rules", "\"https://evil.example/rules.json\""),
    (
        "content-security-policy",
        "default-src *; report-uri https://evil.example/csp",
    ),
    (
        "content-security-policy-report-only",
        "default-src 'none'; report-uri https://evil.example/csp",
    ),
    ("origin-trial", "AAAAtoken"),
    ("accept-ch", "Sec-CH-UA-Model"),
    ("www-authenticate", "Basic realm=\"pub.example login\""),
    ("content-disposition", "attachment; filename=invoice.exe"),
    ("service-worker-allowed", "/"),
    ("set-login", "logged-in"),
    ("x-content-type-options", "none"),
];

#[test]
fn headers_that_make_the_browser_go_fetch_or_report_are_dropped() {
    let mut partner = vec![("content-type", "text/html")];
    partner.extend_from_slice(&BROWSER_ACTING);
    for rewritten in [false, true] {
        let out = client_response_headers(headers(&partner), rewritten).unwrap();
        assert_eq!(names(&out), ["content-type"], "rewritten {rewritten}");
    }
}

#[test]
fn every_response_is_confined_even_after_configured_headers() {
    let partner = headers(&[
        ("content-type", "image/svg+xml"),
        ("x-content-type-options", "none"),
        ("content-security-policy", "default-src *"),
    ]);
    let mut out = client_response_headers(partner, false).unwrap();
    // The publisher's configured headers come after the partner's and may name a policy.
    out.extend(headers(&[
        ("content-security-policy", "img-src *"),
        ("x-content-type-options", "sniff-please"),
    ]));
    confine(&mut out);
    let all = |name: &str| -> Vec<&str> {
        out.iter()
            .filter(|(n, _)| n == name)
            .filter_map(|(_, v)| v.to_str().ok())
            .collect()
    };
    assert_eq!(all("x-content-type-options"), ["nosniff"]);
    assert_eq!(
        all("content-security-policy"),
        ["img-src *", SANDBOX_POLICY]
    );
}

#[test]
fn the_sandbox_lets_a_creative_run_but_never_as_the_publisher() {
    // Read token by token, as a browser parses the directive.
    let mut tokens = SANDBOX_POLICY.split_ascii_whitespace();
    assert_eq!(tokens.next(), Some("sandbox"));
    let granted: Vec<&str> = tokens.collect();
    for needed in [
        "allow-scripts",
        "allow-forms",
        "allow-popups",
        "allow-popups-to-escape-sandbox",
        "allow-top-navigation-by-user-activation",
    ] {
        assert!(granted.contains(&needed), "{needed}");
    }
    for never in ["allow-same-origin", "allow-top-navigation", "allow-modals"] {
        assert!(!granted.contains(&never), "{never}");
    }
    assert!(!SANDBOX_POLICY.contains(';') && !SANDBOX_POLICY.contains(','));
}

#[test]
fn every_relayed_response_is_open_to_cors_without_credentials() {
    // Whatever the partner or `[response_headers]` said, the client gets exactly one
    // `Access-Control-Allow-Origin: *` and never a credentials grant.
    let cases: [&[(&str, &str)]; 4] = [
        &[("content-type", "font/woff2")],
        &[("content-type", "application/json")],
        &[
            ("content-type", "text/html"),
            ("access-control-allow-origin", "https://x.test"),
            ("access-control-allow-credentials", "true"),
        ],
        &[],
    ];
    for case in cases {
        let mut list = headers(case);
        allow_cors(&mut list);
        let acao: Vec<_> = list
            .iter()
            .filter(|(n, _)| n == "access-control-allow-origin")
            .map(|(_, v)| v.to_str().unwrap())
            .collect();
        assert_eq!(acao, ["*"], "{case:?}");
        assert!(
            list.iter()
                .all(|(n, _)| n != "access-control-allow-credentials"),
            "{case:?}"
        );
        let others = |h: &[(HeaderName, HeaderValue)]| {
            h.iter()
                .filter(|(n, _)| !n.as_str().starts_with("access-control-"))
                .count()
        };
        assert_eq!(others(&list), others(&headers(case)), "{case:?}");
    }
}

#[test]
fn partner_headers_are_bounded() {
    let many: Vec<(&str, &str)> = (0..=MAX_RESPONSE_HEADERS).map(|_| ("x-a", "1")).collect();
    assert_eq!(
        client_response_headers(headers(&many), false),
        Err(HeaderError::TooMany(MAX_RESPONSE_HEADERS + 1))
    );
    let big = "v".repeat(MAX_RESPONSE_HEADER_BYTES);
    assert!(matches!(
        client_response_headers(headers(&[("x-big", &big)]), false),
        Err(HeaderError::TooLarge(_))
    ));
    let at_limit = "v".repeat(MAX_RESPONSE_HEADER_BYTES - "x-big".len());
    assert!(client_response_headers(headers(&[("x-big", &at_limit)]), false).is_ok());
}

#[test]
fn html_css_and_script_are_rewritten_in_any_decodable_coding_and_the_rest_passes() {
    for (ct, ce, want) in [
        ("text/html", None, Some((Codec::Identity, "html"))),
        (
            "text/html; charset=utf-8",
            Some("gzip"),
            Some((Codec::Gzip, "html")),
        ),
        ("text/css", Some("br"), Some((Codec::Brotli, "css"))),
        (
            "text/css; charset=utf-8",
            Some("deflate"),
            Some((Codec::Deflate, "css")),
        ),
        ("image/png", None, None),
        ("image/svg+xml", None, None),
        (
            "application/javascript",
            Some("gzip"),
            Some((Codec::Gzip, "script")),
        ),
        ("application/json", None, Some((Codec::Identity, "script"))),
        ("text/javascript; charset=windows-1252", None, None),
        ("text/html", Some("zstd"), None),
        ("text/html", Some("gzip, br"), None),
    ] {
        let plan = body_plan(200, Some(ct), ce);
        match (plan, want) {
            (ProxyBody::Rewrite { codec, creative }, Some((c, stage))) => {
                assert_eq!(codec, c, "{ct} {ce:?}");
                let kind = match creative {
                    Creative::Html(_) => "html",
                    Creative::Css => "css",
                    Creative::Script => "script",
                };
                assert_eq!(kind, stage, "{ct}");
                assert!(plan.rewritten());
            }
            (ProxyBody::PassThrough(_), None) => assert!(!plan.rewritten()),
            other => panic!("{ct} {ce:?}: {other:?}"),
        }
    }
    for status in [203, 204, 206, 304, 404, 500] {
        assert_eq!(
            body_plan(status, Some("text/html"), None),
            ProxyBody::PassThrough(PassWhy::Status)
        );
    }
}

#[test]
fn the_signer_signs_allowed_normalised_targets_that_verify() {
    let key = UrlKey::new(b"proxy signer test key, 16+ bytes").unwrap();
    let check = UrlKey::new(b"proxy signer test key, 16+ bytes").unwrap();
    let sign = signer(key, policy(), 1000);
    let url = sign("HTTPS://Img.Demo-Partner.example./a b.png", UrlUse::Load).unwrap();
    let (path, query) = url.split_once('?').unwrap();
    assert_eq!(path, PROXY_PATH);
    // Read back by the `url` crate's form decoder, not by the code under test.
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    assert_eq!(pairs[0].1, "https://img.demo-partner.example/a%20b.png");
    assert_eq!(pairs[1].1, "1000");
    assert_eq!(pairs[2].0, TOKEN_PARAM);
    let params = SignedParams::parse(query).unwrap();
    assert!(check.verify(&params, 1000, u64::MAX).is_ok());
    assert!(check.verify(&params, 1001, u64::MAX).is_err());
    for use_ in [UrlUse::Load, UrlUse::Follow] {
        assert_eq!(sign("https://evil.example/x", use_), None);
        assert_eq!(sign("http://127.0.0.1/x", use_), None);
    }
    // A link gets the click route, with the same parameters (verified by the same key).
    let link = sign("HTTPS://Img.Demo-Partner.example./a b.png", UrlUse::Follow).unwrap();
    assert_eq!(link, url.replacen(PROXY_PATH, CLICK_PATH, 1));
}

proptest! {
    /// Whatever the partner sends, no cookie, CORS, hop-by-hop or browser-acting header
    /// reaches the client: only listed ones, each as the partner sent it.
    #[test]
    fn forbidden_headers_never_pass(
        lines in proptest::collection::vec(
            (prop_oneof![
                Just("set-cookie".to_owned()),
                Just("Set-Cookie2".to_owned()),
                Just("access-control-allow-origin".to_owned()),
                "access-control-[a-z-]{1,12}",
                Just("connection".to_owned()),
                Just("transfer-encoding".to_owned()),
                Just("cache-control".to_owned()),
                "x-[a-z]{1,8}",
                proptest::sample::select(BROWSER_ACTING.map(|(n, _)| n.to_owned()).to_vec()),
            ], "[ -~]{0,20}"),
            0..40,
        ),
        rewritten in any::<bool>(),
    ) {
        let input: Vec<(HeaderName, HeaderValue)> = lines
            .iter()
            .filter_map(|(n, v)| Some((
                HeaderName::from_bytes(n.as_bytes()).ok()?,
                HeaderValue::from_str(v).ok()?,
            )))
            .collect();
        let out = client_response_headers(input.clone(), rewritten).unwrap();
        for (name, value) in &out {
            let n = name.as_str();
            prop_assert!(!n.contains("cookie") && !n.starts_with("access-control-"));
            prop_assert!(n != "connection" && n != "transfer-encoding");
            prop_assert!(PASSED_RESPONSE.contains(&n), "{}", n);
            prop_assert!(input.iter().any(|(i, v)| i == name && v == value));
        }
        let cache_in = input.iter().filter(|(n, _)| n == "cache-control").count();
        let cache_out = out.iter().filter(|(n, _)| n == "cache-control").count();
        // A Connection line may name cache-control, which then goes (hop-by-hop).
        let named = input.iter().any(|(n, v)| {
            n == "connection"
                && v.to_str().is_ok_and(|v| {
                    v.split(',').any(|t| t.trim().eq_ignore_ascii_case("cache-control"))
                })
        });
        prop_assert_eq!(cache_out, if named { 0 } else { cache_in });
    }
}
