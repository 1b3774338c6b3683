//! The SSRF policy (`first_party::TargetPolicy::check`) on arbitrary text.
//!
//! * It never panics.
//! * Whatever it allows, two other readers agree on: the `url` crate (WHATWG, the browser's
//!   reading) parses the text to the same scheme, host and port, and the `http` crate's RFC
//!   3986 `Uri` either refuses the text or reads the same host and port. A URL whose host
//!   depends on the reader must be refused, never allowed.
//! * The allowed host is an allowed domain or a subdomain of one (checked label by label
//!   here), the port is 80, 443 or listed, and no IP literal is ever allowed.
//! * The normalised URL it returns is allowed again, as the same target.
#![no_main]

use std::str::FromStr;

use libfuzzer_sys::fuzz_target;
use trusted_server_core::first_party::TargetPolicy;

const DOMAINS: [&str; 2] = ["demo-partner.example", "b.c"];
const PORTS: [u16; 1] = [8080];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let policy = TargetPolicy::new(DOMAINS, &PORTS);
    let Ok(target) = policy.check(&text) else {
        return;
    };

    let parsed = url::Url::parse(&text).expect("allowed, so the url crate parses it");
    assert_eq!(parsed.scheme(), target.scheme, "{text:?}");
    let host = parsed.host_str().expect("a host");
    assert_eq!(host.trim_end_matches('.'), target.host, "{text:?}");
    assert!(
        matches!(parsed.host(), Some(url::Host::Domain(_))),
        "an IP literal allowed: {text:?}"
    );
    assert_eq!(
        parsed.port_or_known_default(),
        Some(target.port),
        "{text:?}"
    );

    if let Ok(uri) = http::Uri::from_str(&text) {
        if let Some(authority) = uri.authority() {
            let h = authority.host().to_ascii_lowercase();
            assert_eq!(
                h.trim_end_matches('.'),
                target.host,
                "http::Uri reads {h}: {text:?}"
            );
            if let Some(port) = authority.port_u16() {
                assert_eq!(port, target.port, "http::Uri reads port {port}: {text:?}");
            }
        }
    }

    let labels: Vec<&str> = target.host.split('.').collect();
    let on_allowed = DOMAINS.iter().any(|d| {
        let want: Vec<&str> = d.split('.').collect();
        labels.len() >= want.len() && labels[labels.len() - want.len()..] == want[..]
    });
    assert!(
        on_allowed,
        "{} is not on an allowed domain: {text:?}",
        target.host
    );
    assert!(
        [80, 443].contains(&target.port) || PORTS.contains(&target.port),
        "port {}: {text:?}",
        target.port
    );

    assert_eq!(policy.check(&target.url).as_ref(), Ok(&target), "{text:?}");
});
