//! The identity phase: the request's edge ID. The secret from the Fastly Secret Store, the
//! client's address and the platform's randomness go into the core's plan
//! (`publisher::identity`), which others carry out: `X-TS-EC` to the origin (`origin`), the
//! cookie on the response (`kit::edge_cookie`), and `GET /_ts/ec` (`endpoints::edge_id`).
//!
//! A secret that is missing or unusable is logged (its name, never its value) and the request
//! goes on without an ID: the page is still served.

use std::fmt;
use std::net::IpAddr;

use fastly::Request;
use trusted_server_core::publisher::identity::{plan, EdgeIdKey, IdentityPlan, RequestFacts};
use trusted_server_core::Settings;
use trusted_server_settings::Identity;

use crate::kit::secrets::{self, SecretError};

/// Why no ID could be made or checked.
#[derive(Debug)]
enum Unavailable {
    /// The HMAC key's store or key (named, never its value).
    Secret(SecretError),
    /// The platform's random source failed.
    Random(String),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Secret(e) => e.fmt(f),
            Unavailable::Random(e) => write!(f, "the platform's random source failed: {e}"),
        }
    }
}

/// Reads the HMAC key. Each request runs in a fresh instance, so this is per request, and only
/// when a cookie must be checked or an ID made.
fn read_key(settings: &Identity) -> Result<EdgeIdKey, Unavailable> {
    secrets::read(
        &settings.secret_store,
        &settings.secret_key,
        ("identity.secret_store", "identity.secret_key"),
        EdgeIdKey::new,
    )
    .map_err(Unavailable::Secret)
}

/// Eight bytes from the platform's random source (WASI `random_get` on Fastly).
fn random() -> Result<[u8; 8], Unavailable> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| Unavailable::Random(e.to_string()))?;
    Ok(bytes)
}

/// The request phase: the ID for this request (forwarded, set, expired, or none). None at all
/// unless the reader's consent decision allows an edge ID (`allowed`, asked only for a
/// request that could have one: a navigation, or one carrying a `ts-ec` cookie).
pub fn request_phase(
    request: &Request,
    allowed: impl FnOnce() -> bool,
    settings: &Settings,
) -> IdentityPlan {
    if !settings.identity.enabled {
        return IdentityPlan::NONE;
    }
    let facts = RequestFacts::from_headers(request.get_headers());
    request_phase_of(&facts, allowed, settings)
}

/// [`request_phase`] with the request's `facts` already read (`main` reads them once for the
/// publisher proxy), for the client at the address the platform observed.
pub fn request_phase_of(
    facts: &RequestFacts,
    allowed: impl FnOnce() -> bool,
    settings: &Settings,
) -> IdentityPlan {
    plan_for(
        facts,
        crate::kit::incoming::client_ip(),
        allowed,
        &settings.identity,
    )
}

/// [`request_phase`] for a request with `facts` from a client at `ip` (a synthetic request in
/// a test has no address).
fn plan_for(
    facts: &RequestFacts,
    ip: Option<IpAddr>,
    allowed: impl FnOnce() -> bool,
    identity: &Identity,
) -> IdentityPlan {
    if !identity.enabled {
        return IdentityPlan::NONE;
    }
    // Nothing to plan, whatever the consent: it is not asked for.
    if !facts.may_have_id() || !allowed() {
        return IdentityPlan::NONE;
    }
    // Consent given: nothing is withdrawn.
    plan(facts, ip, || read_key(identity), random).unwrap_or_else(|e| {
        log::error!("edge ID unavailable, request served without one: {e}");
        IdentityPlan::NONE
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use trusted_server_core::publisher::identity::CookieAction;

    /// Under `viceroy run`, fastly.toml's development store is there.
    #[test]
    fn the_key_is_read_from_the_store_and_failures_name_store_and_key() {
        let settings = &crate::kit::generated::SETTINGS.identity;
        assert!(read_key(settings).is_ok());
        let mut missing = settings.clone();
        missing.secret_key = Cow::Borrowed("no_such_key");
        let e = read_key(&missing).unwrap_err().to_string();
        assert!(
            e.contains("no_such_key") && e.contains("identity.secret_key"),
            "{e}"
        );
        let mut no_store = settings.clone();
        no_store.secret_store = Cow::Borrowed("no_such_store");
        let e = read_key(&no_store).unwrap_err().to_string();
        assert!(e.contains("no_such_store"), "{e}");
        assert!(
            !e.contains("DEVELOPMENT ONLY"),
            "the secret never shows: {e}"
        );
    }

    #[test]
    fn a_navigation_gets_an_id_unless_the_feature_is_off() {
        let facts = |r: Request| RequestFacts::from_headers(r.get_headers());
        let nav =
            facts(Request::get("http://www.pub.test/").with_header("sec-fetch-dest", "document"));
        let addr = IpAddr::from([192, 0, 2, 1]);
        let ip = Some(addr);
        let on = crate::kit::generated::SETTINGS.identity.clone();
        let plan = plan_for(&nav, ip, || true, &on);
        let id = plan.forward.expect("an ID for a navigation");
        assert!(read_key(&on).unwrap().verify(addr, &id));
        assert_eq!(plan.cookie, CookieAction::SetOnPage(id));
        let off = Identity {
            enabled: false,
            ..on.clone()
        };
        assert_eq!(plan_for(&nav, ip, || true, &off), IdentityPlan::NONE);
        // Without consent, none; a request that could have none never asks for consent.
        assert_eq!(plan_for(&nav, ip, || false, &on), IdentityPlan::NONE);
        let asset =
            facts(Request::get("http://www.pub.test/a.css").with_header("sec-fetch-dest", "style"));
        let unasked = || -> bool { panic!("consent asked for a stylesheet without an ID") };
        assert_eq!(plan_for(&asset, ip, unasked, &on), IdentityPlan::NONE);
        // A missing secret: no ID, no panic.
        let missing = Identity {
            secret_key: Cow::Borrowed("no_such_key"),
            ..on
        };
        assert_eq!(plan_for(&nav, ip, || true, &missing), IdentityPlan::NONE);
    }

    #[test]
    fn random_bytes_differ() {
        assert_ne!(random().unwrap(), random().unwrap());
    }
}
