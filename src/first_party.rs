//! First-party URLs, adapter side: the signing key from the Fastly Secret Store, the clock,
//! and the answers of `GET /first-party/sign` and `GET /first-party/click`. Every decision is
//! the core's (`first_party`); this file only reads the platform and sends.
//!
//! Refusals are logged with their reason at `info` (the client's mistake or attack) and
//! answered with one generic body per status. A missing or unusable secret is logged at
//! `error`, naming the store, the key and the setting but never the value, and answered `503`.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use fastly::http::StatusCode;
use fastly::{Request, Response};
use trusted_server_core::first_party::{
    self, token, SignedParams, Target, TargetPolicy, UrlKey, FORBIDDEN_BODY, REFUSED_BODY,
    UNAVAILABLE_BODY,
};
use trusted_server_core::Settings;
use trusted_server_settings::FirstParty;

use crate::reply;
use crate::secrets::{self, SecretError};

/// Why no URL can be signed or checked.
#[derive(Debug)]
pub(crate) enum Unavailable {
    /// The URL-signing key's store or key (named, never its value).
    Secret(SecretError),
    /// The clock reads before 1970.
    Clock,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Secret(e) => e.fmt(f),
            Unavailable::Clock => f.write_str("the clock reads before the Unix epoch"),
        }
    }
}

/// Reads the URL-signing key. Each request runs in a fresh instance, so this is per request,
/// and only for requests that get as far as signing or verifying.
pub(crate) fn read_key(settings: &FirstParty) -> Result<UrlKey, Unavailable> {
    secrets::read(
        &settings.secret_store,
        &settings.token_key,
        ("first_party.secret_store", "first_party.token_key"),
        UrlKey::new,
    )
    .map_err(Unavailable::Secret)
}

/// Seconds since the Unix epoch, from the platform's clock.
pub(crate) fn now() -> Result<u64, Unavailable> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .map_err(|_| Unavailable::Clock)
}

/// The SSRF policy of the embedded settings.
pub fn policy(settings: &FirstParty) -> TargetPolicy {
    TargetPolicy::new(settings.allowed_domains.iter(), &settings.allowed_ports)
}

/// `503` with the one body, the reason logged at `error`.
pub(crate) fn unavailable(e: &Unavailable, route: &str, settings: &Settings) -> Response {
    log::error!("{route} unavailable: {e}");
    reply::json(
        StatusCode::SERVICE_UNAVAILABLE,
        UNAVAILABLE_BODY.to_owned(),
        "no-store",
        settings,
    )
}

/// `GET /first-party/sign?url=<absolute URL>`: `200 {"url": "/first-party/proxy?…",
/// "expires": N}` for an allowed target, `400` otherwise.
pub fn sign(request: &Request, settings: &Settings) -> Response {
    let fp = &settings.first_party;
    let target = match first_party::sign_target(request.get_query_str(), &policy(fp)) {
        Ok(target) => target,
        Err(e) => {
            log::info!("first-party sign refused: {e}");
            return reply::json(
                StatusCode::BAD_REQUEST,
                REFUSED_BODY.to_owned(),
                "no-store",
                settings,
            );
        }
    };
    let (key, now) = match read_key(fp).and_then(|k| Ok((k, now()?))) {
        Ok(pair) => pair,
        Err(e) => return unavailable(&e, "first-party sign", settings),
    };
    let expires = now.saturating_add(u64::from(fp.sign_ttl_secs));
    let url = key.signed_url(token::PROXY_PATH, &target.url, expires);
    reply::json(
        StatusCode::OK,
        first_party::signed_body(&url, expires),
        "no-store",
        settings,
    )
}

/// Any other request under `/first-party/`: `405` (with `Allow: GET`) for another method on
/// one of its paths, `404` for a path that does not exist. Never proxied: a signed URL's query
/// must not reach the origin.
pub fn other(request: &Request, settings: &Settings) -> Response {
    let (status, body) = if first_party::PATHS.contains(&request.get_path()) {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "{\"error\":\"method not allowed\"}\n",
        )
    } else {
        (StatusCode::NOT_FOUND, "{\"error\":\"not found\"}\n")
    };
    let mut response = reply::json(status, body.to_owned(), "no-store", settings);
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response.set_header("allow", "GET");
    }
    if request.get_method_str() == "HEAD" {
        response.set_body(Vec::<u8>::new());
    }
    response
}

/// A signed first-party URL that checked out, and what it was checked with (the proxy signs
/// the creative's URLs with the same key and policy, from the same clock reading).
pub(crate) struct Verified {
    pub target: Target,
    pub key: UrlKey,
    pub policy: TargetPolicy,
    pub now: u64,
}

/// Checks the signed query of a `/first-party/click` or `/first-party/proxy` request (`route`
/// names it in the log): token, expiry and policy. `Err` is the answer to send: `403` with the
/// one body (the reason logged at `info`), or `503` without the key.
pub(crate) fn verify_signed(
    request: &Request,
    route: &str,
    settings: &Settings,
) -> Result<Verified, Box<Response>> {
    let fp = &settings.first_party;
    let forbidden = |why: &dyn fmt::Display| {
        log::info!("{route} refused: {why}");
        Box::new(reply::json(
            StatusCode::FORBIDDEN,
            FORBIDDEN_BODY.to_owned(),
            "no-store, private",
            settings,
        ))
    };
    let params =
        SignedParams::parse(request.get_query_str().unwrap_or("")).map_err(|e| forbidden(&e))?;
    let (key, now) = read_key(fp)
        .and_then(|k| Ok((k, now()?)))
        .map_err(|e| Box::new(unavailable(&e, route, settings)))?;
    let policy = policy(fp);
    let longest = token::longest_lifetime(fp.sign_ttl_secs, fp.page_ttl_secs);
    let target =
        first_party::verify(&params, &key, &policy, now, longest).map_err(|e| forbidden(&e))?;
    Ok(Verified {
        target,
        key,
        policy,
        now,
    })
}

/// `GET /first-party/click?tsurl=…&tsexp=…&tstoken=…`: `302` to the target when the token,
/// the expiry and the policy all agree, `403` with the same body otherwise.
pub fn click(request: &Request, settings: &Settings) -> Response {
    match verify_signed(request, "first-party click", settings) {
        Ok(Verified { target, .. }) => reply::with_standard_headers(
            Response::from_status(StatusCode::FOUND)
                .with_header("location", &target.url)
                .with_header("cache-control", "no-store, private"),
            settings,
        ),
        Err(answer) => *answer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    const SECRET_MARK: &str = "DEVELOPMENT ONLY";

    /// Under `viceroy run`, fastly.toml's development store is there.
    #[test]
    fn the_key_is_read_from_the_store_and_failures_name_store_and_key() {
        let settings = &crate::SETTINGS.first_party;
        assert!(read_key(settings).is_ok());
        let mut missing = settings.clone();
        missing.token_key = Cow::Borrowed("no_such_key");
        let e = read_key(&missing).unwrap_err().to_string();
        assert!(
            e.contains("no_such_key") && e.contains("first_party.token_key"),
            "{e}"
        );
        let mut no_store = settings.clone();
        no_store.secret_store = Cow::Borrowed("no_such_store");
        let e = read_key(&no_store).unwrap_err().to_string();
        assert!(e.contains("no_such_store"), "{e}");
        assert!(!e.contains(SECRET_MARK), "the secret never shows: {e}");
    }

    fn sign_query(url: &str) -> Response {
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("url", url)
            .finish();
        sign(
            &Request::get(format!("http://www.pub.test/first-party/sign?{query}")),
            &crate::SETTINGS,
        )
    }

    #[test]
    fn sign_then_click_redirects_and_a_refusal_is_generic() {
        let mut signed = sign_query("https://ads.demo-partner.example/c?x=1");
        assert_eq!(signed.get_status(), StatusCode::OK);
        assert_eq!(signed.get_header_str("cache-control"), Some("no-store"));
        let body = signed.take_body_str();
        assert!(!body.contains(SECRET_MARK), "{body}");
        let path = body
            .split("\"url\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .replace(token::PROXY_PATH, token::CLICK_PATH);
        let mut r = click(
            &Request::get(format!("http://www.pub.test{path}")),
            &crate::SETTINGS,
        );
        assert_eq!(r.get_status(), StatusCode::FOUND, "{}", r.take_body_str());
        assert_eq!(
            r.get_header_str("location"),
            Some("https://ads.demo-partner.example/c?x=1")
        );
        assert_eq!(r.get_header_str("cache-control"), Some("no-store, private"));

        let mut refused = sign_query("http://127.0.0.1/");
        assert_eq!(refused.get_status(), StatusCode::BAD_REQUEST);
        assert_eq!(refused.take_body_str(), REFUSED_BODY);
        let mut forged = click(
            &Request::get(format!(
                "http://www.pub.test{}",
                path.replace("tsexp=", "tsexp=1")
            )),
            &crate::SETTINGS,
        );
        assert_eq!(forged.get_status(), StatusCode::FORBIDDEN);
        assert_eq!(forged.take_body_str(), FORBIDDEN_BODY);
    }
}
