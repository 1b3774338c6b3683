//! First-party signed URLs, adapter side: the URL-signing key from the Fastly Secret Store,
//! the clock, the SSRF policy of the embedded settings, and the check of a signed query,
//! shared by `GET /first-party/click` (`endpoints::first_party`) and the first-party proxy
//! (`flows::first_party_proxy`). Every decision is the core's (`first_party`).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use fastly::http::StatusCode;
use fastly::{Request, Response};
use trusted_server_core::first_party::{
    self, token, SignedParams, Target, TargetPolicy, UrlKey, FORBIDDEN_BODY, UNAVAILABLE_BODY,
};
use trusted_server_core::Settings;
use trusted_server_settings::FirstParty;

use crate::kit::reply;
use crate::kit::secrets::{self, SecretError};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    const SECRET_MARK: &str = "DEVELOPMENT ONLY";

    /// Under `viceroy run`, fastly.toml's development store is there.
    #[test]
    fn the_key_is_read_from_the_store_and_failures_name_store_and_key() {
        let settings = &crate::kit::generated::SETTINGS.first_party;
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
}
