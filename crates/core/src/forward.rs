//! Which client request headers reach the origin, and what the proxy adds.
//!
//! The client's own `Forwarded`, `X-Forwarded-*` and client-IP headers are never trusted: they
//! are dropped and rebuilt from what the platform observed, so a client cannot claim another
//! IP or host to the origin.

use std::net::IpAddr;

use http::header::{HeaderName, HeaderValue};

use crate::content::Codec;
use crate::publisher::identity::COOKIE_NAME;

/// Hop-by-hop headers (RFC 9110 §7.6.1) and their common non-standard cousins: never relayed
/// to an upstream (the origin here, a partner in `first_party::proxy`).
pub(crate) const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The header names a `Connection` header lists (lowercase): hop-by-hop for this message too.
pub(crate) fn connection_listed<'h>(
    headers: impl IntoIterator<Item = (&'h HeaderName, &'h HeaderValue)>,
) -> Vec<String> {
    headers
        .into_iter()
        .filter(|(n, _)| n.as_str() == "connection")
        .filter_map(|(_, v)| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|t| t.trim().to_ascii_lowercase()))
        .collect()
}

/// Headers through which a client could claim an identity, or steer how the origin builds
/// URLs or which method it runs, or claim an edge ID; dropped (the proxy rebuilds the ones it vouches for). Every
/// `x-forwarded-*` header is dropped too, see [`is_spoofable`].
const SPOOFABLE: [&str; 21] = [
    "forwarded",
    "forwarded-for",
    "x-forwarded",
    "x-real-ip",
    "true-client-ip",
    "fastly-client-ip",
    "client-ip",
    "x-client-ip",
    "cf-connecting-ip",
    "x-cluster-client-ip",
    "x-originating-ip",
    "x-remote-ip",
    "x-remote-addr",
    "x-original-url",
    "x-original-host",
    "x-rewrite-url",
    "x-host",
    "x-http-method",
    "x-http-method-override",
    "x-method-override",
    // The edge ID: only the proxy vouches for it (see `publisher::identity`).
    "x-ts-ec",
];

fn is_spoofable(name: &str) -> bool {
    name.starts_with("x-forwarded-") || SPOOFABLE.contains(&name)
}

/// What the platform observed about the client connection.
#[derive(Debug, Clone, Copy)]
pub struct ClientInfo<'a> {
    /// The authority the client asked for (its `Host`), lowercase.
    pub host: &'a str,
    /// `https` when the client connection used TLS, else `http`.
    pub scheme: &'a str,
    /// The client's address, if known.
    pub ip: Option<IpAddr>,
}

/// The origin request's headers, built from the client's.
///
/// Drops hop-by-hop headers (including those named in `Connection`), `Host`, framing headers
/// (the platform frames the forwarded body), every client-supplied forwarding header and the
/// `ts-ec` cookie (the edge ID goes to the origin only as `X-TS-EC`, which the caller adds
/// when the consent decision allows it: a `Cookie` line left with no cookie is dropped); always
/// sends one `Accept-Encoding`, limited to codings the pipeline can decode (`identity` when the
/// client offered none of them, or no header at all, since a missing header means "any
/// coding"; a client's `Connection: accept-encoding` cannot remove it); sets `Host` to
/// `origin_host` and `X-Forwarded-Host`/`-Proto`/`-For` and `Forwarded` from `client`.
pub fn origin_request_headers<'h>(
    client_headers: impl IntoIterator<Item = (&'h HeaderName, &'h HeaderValue)>,
    client: &ClientInfo<'_>,
    origin_host: &str,
) -> Vec<(HeaderName, HeaderValue)> {
    let client_headers: Vec<_> = client_headers.into_iter().collect();
    let connection_listed = connection_listed(client_headers.iter().copied());
    let mut out = Vec::with_capacity(client_headers.len() + 6);
    let mut accepted: Vec<&HeaderValue> = Vec::new();
    for (name, value) in client_headers {
        let n = name.as_str();
        if n == "accept-encoding" {
            // Decided by the proxy, not the client: collected here, sent once below.
            accepted.push(value);
            continue;
        }
        let dropped = HOP_BY_HOP.contains(&n)
            || is_spoofable(n)
            || connection_listed.iter().any(|c| c == n)
            || n == "host"
            || n == "content-length";
        if dropped {
            continue;
        }
        if n == "cookie" {
            // The edge ID reaches the origin only as `X-TS-EC`, when the consent decision
            // allows it: never in the client's cookie.
            if let Some(kept) = without_edge_id(value) {
                out.push((name.clone(), kept));
            }
            continue;
        }
        out.push((name.clone(), value.clone()));
    }
    // With nothing we can decode left, ask for identity: no header would mean "any".
    out.push((
        http::header::ACCEPT_ENCODING,
        supported_accept_encoding(&accepted).unwrap_or(HeaderValue::from_static("identity")),
    ));
    let mut add = |name: &'static str, value: String| {
        // Values built from a validated host, a scheme and an IP are always valid header values;
        // skip rather than panic if a platform ever hands us something odd.
        if let Ok(v) = HeaderValue::from_str(&value) {
            out.push((HeaderName::from_static(name), v));
        }
    };
    add("host", origin_host.to_owned());
    add("x-forwarded-host", client.host.to_owned());
    add("x-forwarded-proto", client.scheme.to_owned());
    let mut forwarded = format!("host=\"{}\";proto={}", client.host, client.scheme);
    if let Some(ip) = client.ip {
        add("x-forwarded-for", ip.to_string());
        forwarded = match ip {
            IpAddr::V4(v4) => format!("for={v4};{forwarded}"),
            IpAddr::V6(v6) => format!("for=\"[{v6}]\";{forwarded}"),
        };
    }
    add("forwarded", forwarded);
    out
}

/// A `Cookie` line without the service's `ts-ec` cookie (by name, exactly, as browsers
/// compare names; spaces around it trimmed): the line itself when it has none, the other
/// cookies when it has, `None` when nothing else is left.
fn without_edge_id(line: &HeaderValue) -> Option<HeaderValue> {
    let bytes = line.as_bytes();
    let is_edge_id = |piece: &[u8]| {
        let name = piece.split(|&b| b == b'=').next().unwrap_or_default();
        piece.contains(&b'=') && name.trim_ascii() == COOKIE_NAME.as_bytes()
    };
    if !bytes.split(|&b| b == b';').any(is_edge_id) {
        return Some(line.clone());
    }
    let kept: Vec<&[u8]> = (bytes.split(|&b| b == b';'))
        .filter(|piece| !is_edge_id(piece) && !piece.trim_ascii().is_empty())
        .map(<[u8]>::trim_ascii)
        .collect();
    if kept.is_empty() {
        return None;
    }
    HeaderValue::from_bytes(&kept.join(&b"; "[..])).ok()
}

/// The client's `Accept-Encoding` lines restricted to codings the pipeline decodes (with
/// their q-values). `None` when nothing is left: the origin then sends identity.
pub(crate) fn supported_accept_encoding(values: &[&HeaderValue]) -> Option<HeaderValue> {
    let kept: Vec<&str> = values
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|item| {
            let coding = item
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            Codec::SUPPORTED_TOKENS.contains(&coding.as_str()) || coding == "identity"
        })
        .collect();
    if kept.is_empty() {
        return None;
    }
    HeaderValue::from_str(&kept.join(", ")).ok()
}

/// The client's public authority: its `Host` header if it is a plausible `host[:port]`,
/// otherwise `fallback` (the configured `publisher.domain`). Lowercased.
pub fn client_authority(host_header: Option<&str>, fallback: &str) -> String {
    let valid = |h: &str| {
        !h.is_empty()
            && h.len() <= 261
            && h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
    };
    match host_header {
        Some(h) if valid(h) => h.to_ascii_lowercase(),
        _ => fallback.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::header_list as headers;

    fn forward(list: &[(&str, &str)]) -> Vec<(String, String)> {
        let input = headers(list);
        let client = ClientInfo {
            host: "www.pub.test",
            scheme: "https",
            ip: Some("203.0.113.9".parse().unwrap()),
        };
        origin_request_headers(
            input.iter().map(|(n, v)| (n, v)),
            &client,
            "origin.pub.test",
        )
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
    fn client_forwarding_headers_are_replaced_not_trusted() {
        let out = forward(&[
            ("x-forwarded-for", "1.2.3.4"),
            ("x-forwarded-host", "evil.test"),
            ("forwarded", "for=1.2.3.4"),
            ("fastly-client-ip", "1.2.3.4"),
            ("x-real-ip", "1.2.3.4"),
            ("x-forwarded-prefix", "/evil"),
            ("x-forwarded-server", "evil.test"),
            ("x-original-url", "/admin"),
            ("x-host", "evil.test"),
            ("cookie", "a=b"),
        ]);
        for gone in [
            "x-forwarded-prefix",
            "x-forwarded-server",
            "x-original-url",
            "x-host",
        ] {
            assert!(
                get(&out, gone).is_empty(),
                "{gone} must not reach the origin"
            );
        }
        assert_eq!(get(&out, "x-forwarded-for"), ["203.0.113.9"]);
        assert_eq!(get(&out, "x-forwarded-host"), ["www.pub.test"]);
        assert_eq!(get(&out, "x-forwarded-proto"), ["https"]);
        assert_eq!(
            get(&out, "forwarded"),
            ["for=203.0.113.9;host=\"www.pub.test\";proto=https"]
        );
        assert!(get(&out, "fastly-client-ip").is_empty() && get(&out, "x-real-ip").is_empty());
        assert_eq!(get(&out, "cookie"), ["a=b"]);
    }

    /// The edge ID never reaches the origin in a cookie, whatever the spelling around it;
    /// every other cookie does, and a cookie named like it is not it.
    #[test]
    fn the_edge_id_cookie_never_reaches_the_origin() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["ts-ec=abc.123456"], &[]),
            (&["a=1; ts-ec=abc; b=2"], &["a=1; b=2"]),
            (&[" ts-ec = abc ;a=1"], &["a=1"]),
            (&["ts-ec=x", "a=1", "ts-ec=y; ts-ec=z"], &["a=1"]),
            (&["a=1;b=2"], &["a=1;b=2"]),
            (
                &["ts-ec2=x; xts-ec=y; TS-EC=z; ts-ec"],
                &["ts-ec2=x; xts-ec=y; TS-EC=z; ts-ec"],
            ),
            (&["euconsent-v2=CQ; ts-ec=abc"], &["euconsent-v2=CQ"]),
        ];
        for (lines, want) in cases {
            let list: Vec<(&str, &str)> = lines.iter().map(|l| ("cookie", *l)).collect();
            let out = forward(&list);
            assert_eq!(get(&out, "cookie"), *want, "{lines:?}");
        }
    }

    #[test]
    fn next_js_router_headers_reach_the_origin_unchanged() {
        // Next.js answers HTML or Flight depending on these; losing one mixes them up.
        let rsc = [
            ("rsc", "1"),
            ("next-router-state-tree", "%5B%22%22%2C%7B%7D%5D"),
            ("next-router-prefetch", "1"),
            ("next-router-segment-prefetch", "/_tree"),
            ("next-url", "/about"),
            ("next-action", "7f3a9c"),
        ];
        let out = forward(&rsc);
        for (name, value) in rsc {
            assert_eq!(get(&out, name), [value], "{name}");
        }
    }

    #[test]
    fn hop_by_hop_and_host_are_dropped() {
        let out = forward(&[
            ("host", "www.pub.test"),
            ("connection", "keep-alive, x-secret-hop"),
            ("x-secret-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers"),
            ("upgrade", "websocket"),
            ("transfer-encoding", "chunked"),
            ("accept", "text/html"),
        ]);
        for gone in [
            "connection",
            "x-secret-hop",
            "keep-alive",
            "te",
            "upgrade",
            "transfer-encoding",
        ] {
            assert!(get(&out, gone).is_empty(), "{gone} must not be forwarded");
        }
        assert_eq!(get(&out, "host"), ["origin.pub.test"]);
        assert_eq!(get(&out, "accept"), ["text/html"]);
    }

    #[test]
    fn accept_encoding_is_limited_to_what_we_decode() {
        let out = forward(&[("accept-encoding", "zstd, br;q=1.0, gzip;q=0.8, compress")]);
        assert_eq!(get(&out, "accept-encoding"), ["br;q=1.0, gzip;q=0.8"]);
        let out = forward(&[("accept-encoding", "zstd")]);
        assert_eq!(get(&out, "accept-encoding"), ["identity"]);
        // Several lines are one list; the origin gets one header.
        let out = forward(&[("accept-encoding", "zstd, gzip"), ("accept-encoding", "br")]);
        assert_eq!(get(&out, "accept-encoding"), ["gzip, br"]);
    }

    #[test]
    fn accept_encoding_is_always_sent() {
        // No header means "any coding" to the origin, which could then pick one the pipeline
        // cannot decode; a client must not be able to remove it through `Connection`.
        assert_eq!(get(&forward(&[]), "accept-encoding"), ["identity"]);
        let out = forward(&[
            ("connection", "accept-encoding"),
            ("accept-encoding", "gzip"),
        ]);
        assert_eq!(get(&out, "accept-encoding"), ["gzip"]);
    }

    #[test]
    fn method_and_address_claims_never_reach_the_origin() {
        let claims = [
            "x-forwarded",
            "forwarded-for",
            "x-originating-ip",
            "x-remote-ip",
            "x-remote-addr",
            "x-http-method",
            "x-http-method-override",
            "x-method-override",
            "X-Forwarded-Anything",
            "x-ts-ec",
        ];
        let list: Vec<(&str, &str)> = claims.iter().map(|n| (*n, "6.6.6.6")).collect();
        let out = forward(&list);
        for name in claims {
            let name = name.to_ascii_lowercase();
            assert!(
                !get(&out, &name).contains(&"6.6.6.6"),
                "{name} reached the origin"
            );
        }
    }

    #[test]
    fn client_authority_falls_back_on_missing_or_odd_hosts() {
        assert_eq!(
            client_authority(Some("WWW.Pub.Test:7676"), "pub.test"),
            "www.pub.test:7676"
        );
        assert_eq!(client_authority(None, "pub.test"), "pub.test");
        assert_eq!(client_authority(Some("a b\"<"), "pub.test"), "pub.test");
        assert_eq!(
            client_authority(Some("[::1]:7676"), "pub.test"),
            "[::1]:7676"
        );
    }
}
