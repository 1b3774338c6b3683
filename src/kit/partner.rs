//! Signing requests the service sends to partners (RFC 9421, `trusted_server_core::signing`):
//! `Signature-Input` and `Signature` covering `@method`, `@authority`, `@path`, `@query`,
//! `x-ts-ec` when the request carries the reader's edge ID (the core's
//! `SIGNED_WHEN_PRESENT`), and `created`, with the current key from the Secret Store.
//!
//! Read the [`key`] once per client request and call [`sign_with`] last, on each request exactly
//! as it will be sent: after its URL and `Host`
//! are final, and with a backend that does not override the host (what the partner sees as
//! `@authority` must be what was signed). It works for any request and route; whether a
//! host is a partner is the caller's decision.
//!
//! Policy when the key is missing: the request goes **unsigned**, with an `error` log line
//! naming the store and kid (never the key). A partner that requires signatures then
//! refuses it, as it would refuse a forged one; partners that do not are still served.

use std::time::{SystemTime, UNIX_EPOCH};

use fastly::Request;
use trusted_server_core::signing::{sign_request, Keypair, RequestParts, SIGNED_WHEN_PRESENT};
use trusted_server_core::Settings;

use crate::kit::signing_keys;

/// What [`sign_with`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    /// Signed with this kid.
    With(String),
    /// `signing.enabled = false`: sent unsigned, nothing logged.
    Disabled,
    /// The key or a request part was unusable: sent unsigned, and logged.
    Unsigned,
}

/// The key partner requests are signed with, for one client request ([`key`]): read from
/// the Secret Store and made a key pair (the public key derived from the seed) once, however
/// many requests it signs (the first-party proxy signs every redirect it follows).
pub enum Key {
    /// `signing.enabled = false`.
    Disabled,
    /// The store or the current key is missing or unusable: why (named, never the value).
    Unavailable(String),
    /// The current key (boxed: a key pair is a few hundred bytes, the other variants a few
    /// words).
    Current(Box<Keypair>),
}

/// Reads the current signing key (`signing_keys::current`), unless signing is off.
pub fn key(settings: &Settings) -> Key {
    if !settings.signing.enabled {
        return Key::Disabled;
    }
    match signing_keys::current(&settings.signing) {
        Ok(key) => Key::Current(Box::new(key)),
        Err(e) => Key::Unavailable(e.to_string()),
    }
}

/// Signs `request` for a partner with `key`: sets `Host` (when the request has none, from its
/// URL, so the signed authority is the one sent) and replaces any `Signature-Input` and
/// `Signature`. Without a signature (off, or no key) those two are removed, so nothing the
/// request carried before can pass for ours. A missing key is logged for each request sent
/// unsigned.
pub fn sign_with(request: &mut Request, key: &Key) -> Signed {
    request.remove_header("signature-input");
    request.remove_header("signature");
    let key = match key {
        Key::Disabled => return Signed::Disabled,
        Key::Unavailable(e) => {
            log::error!("partner request sent unsigned: {e}");
            return Signed::Unsigned;
        }
        Key::Current(key) => key,
    };
    let url = request.get_url().clone();
    let authority = match request.get_header_str_lossy("host") {
        Some(host) => host.into_owned(),
        None => {
            let host = url.host_str().unwrap_or_default();
            let authority = match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            };
            request.set_header("host", &authority);
            authority
        }
    };
    // The fields signed when present, each line as sent (a value that is not text cannot be
    // signed: the request then goes unsigned, below).
    let mut fields: Vec<(&str, &str)> = Vec::new();
    for name in SIGNED_WHEN_PRESENT {
        for value in request.get_header_all(name) {
            fields.push((name, value.to_str().unwrap_or("\u{0}")));
        }
    }
    let parts = RequestParts {
        method: request.get_method_str(),
        scheme: url.scheme(),
        authority: &authority,
        path: url.path(),
        query: url.query(),
        fields: &fields,
    };
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    match sign_request(&parts, key, created) {
        Ok(headers) => {
            request.set_header("signature-input", headers.signature_input);
            request.set_header("signature", headers.signature);
            Signed::With(key.kid().to_owned())
        }
        Err(e) => {
            log::error!("partner request sent unsigned: {e}");
            Signed::Unsigned
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    use trusted_server_core::signing::{verify_request, Policy, PublicKey, PARTNER_COMPONENTS};

    fn keys() -> Vec<PublicKey> {
        signing_keys::public_keys(&crate::kit::generated::SETTINGS.signing).unwrap()
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    /// Checks the headers `request` carries against parts written out by hand.
    fn verify(request: &Request, parts: &RequestParts<'_>) -> Result<String, String> {
        let policy = Policy {
            required: &PARTNER_COMPONENTS,
            required_when_present: &SIGNED_WHEN_PRESENT,
            label: "sig1",
            freshness: Some((now(), 60)),
        };
        verify_request(
            parts,
            request
                .get_header_str("signature-input")
                .ok_or("no input")?,
            request.get_header_str("signature").ok_or("no signature")?,
            &keys(),
            &policy,
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_partner_request_is_signed_as_sent() {
        let mut request = Request::post("https://Bidder.Example/bid/v1?x=1&y=%20z")
            .with_header("signature", "sig1=:AAAA:");
        let kid = crate::kit::generated::SETTINGS
            .signing
            .current_kid
            .to_string();
        assert_eq!(
            sign_with(&mut request, &key(&crate::kit::generated::SETTINGS)),
            Signed::With(kid.clone())
        );
        assert_eq!(request.get_header_str("host"), Some("bidder.example"));
        let input = request.get_header_str("signature-input").unwrap();
        assert!(
            input.starts_with("sig1=(\"@method\" \"@authority\" \"@path\" \"@query\");created=")
                && input.ends_with(&format!(";keyid=\"{kid}\";alg=\"ed25519\"")),
            "{input}"
        );
        let parts = RequestParts {
            method: "POST",
            scheme: "https",
            authority: "bidder.example",
            path: "/bid/v1",
            query: Some("x=1&y=%20z"),
            fields: &[],
        };
        assert_eq!(verify(&request, &parts), Ok(kid));
        // Another method, path or query does not verify.
        for changed in [
            RequestParts {
                method: "GET",
                ..parts
            },
            RequestParts {
                path: "/bid/v2",
                ..parts
            },
            RequestParts {
                query: Some("x=2&y=%20z"),
                ..parts
            },
            RequestParts {
                authority: "bidder.example:8443",
                ..parts
            },
        ] {
            assert!(verify(&request, &changed).is_err(), "{changed:?}");
        }
    }

    /// The first-party proxy reads the key once and signs every redirect with it: each
    /// request is signed over its own parts, and a signature does not carry over.
    #[test]
    fn one_key_signs_each_hop_over_its_own_parts() {
        let key = key(&crate::kit::generated::SETTINGS);
        let kid = crate::kit::generated::SETTINGS
            .signing
            .current_kid
            .to_string();
        let mut first = Request::get("https://a.example/one");
        let mut second = Request::get("https://b.example/two?n=2");
        assert_eq!(sign_with(&mut first, &key), Signed::With(kid.clone()));
        assert_eq!(sign_with(&mut second, &key), Signed::With(kid.clone()));
        let parts = |authority, path, query| RequestParts {
            method: "GET",
            scheme: "https",
            authority,
            path,
            query,
            fields: &[],
        };
        assert_eq!(
            verify(&first, &parts("a.example", "/one", None)),
            Ok(kid.clone())
        );
        assert_eq!(
            verify(&second, &parts("b.example", "/two", Some("n=2"))),
            Ok(kid)
        );
        assert!(verify(&second, &parts("a.example", "/one", None)).is_err());
    }

    #[test]
    fn an_explicit_host_is_what_is_signed() {
        // Development: the URL names the loopback address, Host names the partner.
        let mut request =
            Request::get("http://127.0.0.1:9000/px").with_header("host", "partner.example");
        assert!(matches!(
            sign_with(&mut request, &key(&crate::kit::generated::SETTINGS)),
            Signed::With(_)
        ));
        let parts = RequestParts {
            method: "GET",
            scheme: "http",
            authority: "partner.example",
            path: "/px",
            query: None,
            fields: &[],
        };
        assert!(verify(&request, &parts).is_ok());
        let mut no_host = Request::get("http://127.0.0.1:9000/px");
        sign_with(&mut no_host, &key(&crate::kit::generated::SETTINGS));
        assert_eq!(no_host.get_header_str("host"), Some("127.0.0.1:9000"));
        let parts = RequestParts {
            authority: "127.0.0.1:9000",
            ..parts
        };
        assert!(verify(&no_host, &parts).is_ok());
    }

    #[test]
    fn an_edge_id_sent_to_a_partner_is_signed() {
        let mut request =
            Request::get("https://ads.example/ad?c=1").with_header("x-ts-ec", "abc.DEF123");
        assert!(matches!(
            sign_with(&mut request, &key(&crate::kit::generated::SETTINGS)),
            Signed::With(_)
        ));
        let input = request.get_header_str("signature-input").unwrap();
        assert!(
            input.starts_with("sig1=(\"@method\" \"@authority\" \"@path\" \"@query\" \"x-ts-ec\")"),
            "{input}"
        );
        let parts = |id| RequestParts {
            method: "GET",
            scheme: "https",
            authority: "ads.example",
            path: "/ad",
            query: Some("c=1"),
            fields: id,
        };
        assert!(verify(&request, &parts(&[("x-ts-ec", "abc.DEF123")])).is_ok());
        for changed in [&[("x-ts-ec", "abc.DEF124")][..], &[]] {
            assert!(verify(&request, &parts(changed)).is_err(), "{changed:?}");
        }
    }

    #[test]
    fn off_or_without_a_key_the_request_goes_unsigned_and_clean() {
        let forged = || {
            Request::get("https://p.example/")
                .with_header("signature-input", "sig1=();keyid=\"ts-signing-1\"")
                .with_header("signature", "sig1=:AAAA:")
        };
        let mut settings = crate::kit::generated::SETTINGS.clone();
        settings.signing.current_kid = Cow::Borrowed("no_such_kid");
        let mut request = forged();
        assert_eq!(sign_with(&mut request, &key(&settings)), Signed::Unsigned);
        assert!(request.get_header("signature").is_none());
        assert!(request.get_header("signature-input").is_none());
        settings.signing.enabled = false;
        let mut request = forged();
        assert_eq!(sign_with(&mut request, &key(&settings)), Signed::Disabled);
        assert!(request.get_header("signature").is_none());
    }
}
