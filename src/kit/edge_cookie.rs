//! The edge-ID cookie on the way out: our `Set-Cookie` for a new ID on a page
//! ([`add_cookie`], by the response phase and by the cache on a stored page's way out), and
//! the expiry of the client's cookie when consent is withdrawn (the request's consent decision,
//! which covers `Sec-GPC`) on whatever response a request gets ([`withdrawal`],
//! [`expire_withdrawn`], by `leaving::stamp`). Header writers only: which ID a request has is
//! the identity phase's (`phases::identity`).

use fastly::http::{HeaderName, HeaderValue};
use fastly::Response;
use trusted_server_core::publisher::identity::{
    expire_cookie, expires_cookie, is_page_response, is_well_formed, keep_out_of_shared_caches,
    set_cookie, CookieAction, IdentityPlan, RequestFacts,
};
use trusted_server_core::Settings;

use crate::kit::reply;

/// On a response's final header list (`status` is the response's): our
/// `Set-Cookie` for a new ID on a page, added after the origin's own, and then the response
/// kept out of shared caches. Runs after `[response_headers]`, so those cannot make a response
/// that sets the cookie cacheable by shared caches. (The expiry under `Sec-GPC` is every
/// response's, not the plan's: [`expire_withdrawn`].)
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

/// Whether the response to a request with `facts` (its headers, read once in `main`) expires
/// the client's `ts-ec` cookie: the feature is on, the request sent the cookie, and the
/// consent decision `withdraw`s the edge ID (as it does under `Sec-GPC: 1`; asked only then).
/// Decided once per request, in `main`, whatever the route.
pub fn withdrawal(
    facts: &RequestFacts,
    withdraw: impl FnOnce() -> bool,
    settings: &Settings,
) -> bool {
    settings.identity.enabled && expires_cookie(facts, withdraw)
}

/// The well-formed edge IDs in the `ts-ec` cookies of a request with `facts` (whether or not
/// they verify for its network: a reader who withdraws from a new address still erases what
/// was kept under their ID), for the partner-ID graph's erasure.
pub fn cookie_ids(facts: &RequestFacts) -> Vec<String> {
    let mut ids = facts.cookies.clone();
    ids.retain(|id| is_well_formed(id));
    ids.dedup();
    ids
}

/// The expiry of the client's `ts-ec` cookie on `response` when `expire` ([`withdrawal`]),
/// and the response kept out of shared caches. Called where every response's headers are
/// final (`leaving::stamp`), so every route does it: the service's own answers, the
/// first-party proxy (before it streams), pages from the origin or the cache, and errors.
pub fn expire_withdrawn(response: &mut Response, expire: bool, settings: &Settings) {
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

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use fastly::http::StatusCode;

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
        response_phase(&mut html, &set, &crate::kit::generated::SETTINGS);
        let cookies = html.get_header_all_str("set-cookie");
        assert_eq!(cookies[0], "origin=1; Path=/");
        assert!(cookies[1].starts_with("ts-ec=abc.DEF123; "), "{cookies:?}");
        assert_eq!(
            html.get_header_str("cache-control"),
            Some("private, max-age=60")
        );
        let mut json = page("application/json", "public, max-age=60");
        response_phase(&mut json, &set, &crate::kit::generated::SETTINGS);
        assert_eq!(json.get_header_all_str("set-cookie").len(), 1);
        assert_eq!(
            json.get_header_str("cache-control"),
            Some("public, max-age=60")
        );
    }

    #[test]
    fn the_withdrawal_expiry_goes_on_any_response_and_keeps_it_private() {
        let mut expired = page("image/png", "public, max-age=60");
        expire_withdrawn(&mut expired, true, &crate::kit::generated::SETTINGS);
        let cookies = expired.get_header_all_str("set-cookie");
        assert_eq!(cookies[0], "origin=1; Path=/");
        assert!(cookies[1].starts_with("ts-ec=; ") && cookies[1].contains("Max-Age=0"));
        assert_eq!(
            expired.get_header_str("cache-control"),
            Some("private, max-age=60")
        );
        let mut kept = page("image/png", "public, max-age=60");
        expire_withdrawn(&mut kept, false, &crate::kit::generated::SETTINGS);
        assert_eq!(kept.get_header_all_str("set-cookie").len(), 1);
        // `withdraw` is what the decision says under `Sec-GPC: 1`.
        let gpc = |cookie: &str| {
            let request = fastly::Request::get("http://www.pub.test/")
                .with_header("sec-gpc", "1")
                .with_header("cookie", cookie);
            RequestFacts::from_headers(request.get_headers())
        };
        let settings = &crate::kit::generated::SETTINGS;
        assert!(withdrawal(&gpc("ts-ec=x"), || true, settings));
        assert!(!withdrawal(&gpc("ts-ec=x"), || false, settings));
        // Without a `ts-ec` cookie, or with the feature off, the decision is never asked for.
        let unasked = || -> bool { panic!("the decision was asked for") };
        assert!(!withdrawal(&gpc("other=x"), unasked, settings));
        let mut off = settings.clone();
        off.identity.enabled = false;
        assert!(!withdrawal(&gpc("ts-ec=x"), unasked, &off));
    }
}
