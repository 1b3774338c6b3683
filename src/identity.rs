//! The edge ID, adapter side: the secret from the Fastly Secret Store, the client's address
//! and the platform's randomness go into the core's plan (`publisher::identity`), which this
//! module carries out: `X-TS-EC` to the origin (in `origin`), the cookie on the response, and
//! `GET /_ts/ec`.
//!
//! A secret that is missing or unusable is logged (its name, never its value) and the request
//! goes on without an ID: the page is still served.

use std::fmt;
use std::net::IpAddr;

use fastly::http::{HeaderName, HeaderValue, StatusCode};
use fastly::{Request, Response};
use trusted_server_core::publisher::identity::{
    endpoint_body, expire_cookie, expires_cookie, is_page_response, keep_out_of_shared_caches,
    plan, set_cookie, CookieAction, EdgeIdKey, IdentityPlan, RequestFacts,
};
use trusted_server_core::Settings;
use trusted_server_settings::Identity;

use crate::reply;
use crate::secrets::{self, SecretError};

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

/// The request phase: the ID for this request (forwarded, set, expired, or none).
pub fn request_phase(request: &Request, settings: &Settings) -> IdentityPlan {
    plan_for(request, request.get_client_ip_addr(), &settings.identity)
}

/// [`request_phase`] for a client at `ip` (a synthetic request in a test has no address).
fn plan_for(request: &Request, ip: Option<IpAddr>, identity: &Identity) -> IdentityPlan {
    if !identity.enabled {
        return IdentityPlan::NONE;
    }
    let facts = RequestFacts::from_headers(request.get_headers());
    plan(&facts, ip, || read_key(identity), random).unwrap_or_else(|e| {
        log::error!("edge ID unavailable, request served without one: {e}");
        IdentityPlan::NONE
    })
}

/// The response phase, on the response's final header list (`status` is the response's): our
/// `Set-Cookie` for a new ID on a page, added after the origin's own, and then the response
/// kept out of shared caches. Runs after `[response_headers]`, so those cannot make a response
/// that sets the cookie cacheable by shared caches. (The expiry under `Sec-GPC` is every
/// response's, not the plan's: [`expire_under_gpc`].)
pub fn add_cookie(
    headers: &mut Vec<(HeaderName, HeaderValue)>,
    status: u16,
    plan: &IdentityPlan,
    settings: &Settings,
) {
    let CookieAction::SetOnPage(id) = &plan.cookie else {
        return;
    };
    let content_type = headers
        .iter()
        .find(|(name, _)| name == "content-type")
        .and_then(|(_, value)| value.to_str().ok());
    if !is_page_response(status, content_type) {
        return;
    }
    push_cookie(headers, &set_cookie(id, &settings.publisher.cookie_domain));
}

/// Our `Set-Cookie` `line` after the others, and the response kept out of shared caches.
fn push_cookie(headers: &mut Vec<(HeaderName, HeaderValue)>, line: &str) {
    keep_out_of_shared_caches(headers);
    // Built from a well-formed ID and a validated cookie domain: always a valid value.
    if let Ok(value) = HeaderValue::from_str(line) {
        headers.push((HeaderName::from_static("set-cookie"), value));
    }
}

/// Whether the response to `request` expires the client's `ts-ec` cookie (`Sec-GPC: 1` with
/// the cookie sent, the feature on): decided once per request, in `main`, whatever the route.
pub fn gpc_expiry(request: &Request, settings: &Settings) -> bool {
    settings.identity.enabled && expires_cookie(&RequestFacts::from_headers(request.get_headers()))
}

/// The expiry of the client's `ts-ec` cookie on `response` when `expire` ([`gpc_expiry`]),
/// and the response kept out of shared caches. Called where every response's headers are
/// final (`leaving::stamp`), so every route does it: the service's own answers, the
/// first-party proxy (before it streams), pages from the origin or the cache, and errors.
pub fn expire_under_gpc(response: &mut Response, expire: bool, settings: &Settings) {
    if !expire {
        return;
    }
    let mut headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    push_cookie(
        &mut headers,
        &expire_cookie(&settings.publisher.cookie_domain),
    );
    reply::replace_headers(response, headers);
}

/// [`add_cookie`] on a response the service built itself.
#[cfg(test)]
fn response_phase(response: &mut Response, plan: &IdentityPlan, settings: &Settings) {
    let mut headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    add_cookie(&mut headers, response.get_status().as_u16(), plan, settings);
    reply::replace_headers(response, headers);
}

/// `GET /_ts/ec`: the client's ID when its cookie verifies, else `null`; never stored.
pub fn endpoint(request: &Request, settings: &Settings) -> Response {
    let plan = request_phase(request, settings);
    let body = endpoint_body(plan.valid_cookie.as_deref());
    reply::json(StatusCode::OK, body, "no-store, private", settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// Under `viceroy run`, fastly.toml's development store is there.
    #[test]
    fn the_key_is_read_from_the_store_and_failures_name_store_and_key() {
        let settings = &crate::SETTINGS.identity;
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
        let nav = Request::get("http://www.pub.test/").with_header("sec-fetch-dest", "document");
        let addr = IpAddr::from([192, 0, 2, 1]);
        let ip = Some(addr);
        let on = crate::SETTINGS.identity.clone();
        let plan = plan_for(&nav, ip, &on);
        let id = plan.forward.expect("an ID for a navigation");
        assert!(read_key(&on).unwrap().verify(addr, &id));
        assert_eq!(plan.cookie, CookieAction::SetOnPage(id));
        let off = Identity {
            enabled: false,
            ..on.clone()
        };
        assert_eq!(plan_for(&nav, ip, &off), IdentityPlan::NONE);
        // A missing secret: no ID, no panic.
        let missing = Identity {
            secret_key: Cow::Borrowed("no_such_key"),
            ..on
        };
        assert_eq!(plan_for(&nav, ip, &missing), IdentityPlan::NONE);
    }

    #[test]
    fn random_bytes_differ() {
        assert_ne!(random().unwrap(), random().unwrap());
    }

    fn page(content_type: &str, cache_control: &str) -> Response {
        Response::from_status(StatusCode::OK)
            .with_header("content-type", content_type)
            .with_header("cache-control", cache_control)
            .with_header("set-cookie", "origin=1; Path=/")
    }

    fn with(cookie: CookieAction) -> IdentityPlan {
        IdentityPlan {
            cookie,
            ..IdentityPlan::NONE
        }
    }

    #[test]
    fn the_cookie_is_added_to_pages_only_and_the_origins_is_kept() {
        let set = with(CookieAction::SetOnPage("abc.DEF123".into()));
        let mut html = page("text/html; charset=utf-8", "public, max-age=60");
        response_phase(&mut html, &set, &crate::SETTINGS);
        let cookies = html.get_header_all_str("set-cookie");
        assert_eq!(cookies[0], "origin=1; Path=/");
        assert!(cookies[1].starts_with("ts-ec=abc.DEF123; "), "{cookies:?}");
        assert_eq!(
            html.get_header_str("cache-control"),
            Some("private, max-age=60")
        );
        let mut json = page("application/json", "public, max-age=60");
        response_phase(&mut json, &set, &crate::SETTINGS);
        assert_eq!(json.get_header_all_str("set-cookie").len(), 1);
        assert_eq!(
            json.get_header_str("cache-control"),
            Some("public, max-age=60")
        );
    }

    #[test]
    fn the_gpc_expiry_goes_on_any_response_and_keeps_it_private() {
        let mut expired = page("image/png", "public, max-age=60");
        expire_under_gpc(&mut expired, true, &crate::SETTINGS);
        let cookies = expired.get_header_all_str("set-cookie");
        assert_eq!(cookies[0], "origin=1; Path=/");
        assert!(cookies[1].starts_with("ts-ec=; ") && cookies[1].contains("Max-Age=0"));
        assert_eq!(
            expired.get_header_str("cache-control"),
            Some("private, max-age=60")
        );
        let mut kept = page("image/png", "public, max-age=60");
        expire_under_gpc(&mut kept, false, &crate::SETTINGS);
        assert_eq!(kept.get_header_all_str("set-cookie").len(), 1);
        let gpc = |cookie: &str| {
            Request::get("http://www.pub.test/")
                .with_header("sec-gpc", "1")
                .with_header("cookie", cookie)
        };
        assert!(gpc_expiry(&gpc("ts-ec=x"), &crate::SETTINGS));
        assert!(!gpc_expiry(&gpc("other=x"), &crate::SETTINGS));
        let mut off = crate::SETTINGS.clone();
        off.identity.enabled = false;
        assert!(!gpc_expiry(&gpc("ts-ec=x"), &off));
    }
}
