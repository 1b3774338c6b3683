//! First-party URLs for third-party content: ad creatives, pixels and clicks served from the
//! publisher's own host through URLs the service signs.
//!
//! * [`target`]: the SSRF policy, the one place that decides which URLs may be signed,
//!   fetched or redirected to;
//! * [`token`]: the signed `/first-party/proxy` and `/first-party/click` URLs (HMAC-SHA256
//!   over the exact target URL and its expiry);
//! * [`creative`]: the body stage that rewrites a proxied HTML or CSS creative's absolute URLs
//!   to signed first-party URLs while it streams;
//! * here: what the routes decide, given a query string, the key, the policy and the time
//!   ([`sign_target`], [`verify`]), and the bodies they answer with. The adapter only reads
//!   the secret and the clock and sends the answer.
//!
//! Every refusal has a reason for the log; clients get one generic body per status, so a
//! response never tells an attacker which check failed. See `docs/first-party.md`.

use std::fmt;

pub mod creative;
pub mod proxy;
mod query;
pub mod target;
pub mod token;

pub use query::ParamError;
pub use target::{Refusal, Target, TargetPolicy};
pub use token::{SignedParams, TokenError, UrlKey};

/// The service's namespace: every path under it is answered by the service.
pub const PREFIX: &str = "/first-party/";
/// The paths under [`PREFIX`] that exist (each answers `GET` only).
pub const PATHS: [&str; 3] = [SIGN_PATH, token::CLICK_PATH, token::PROXY_PATH];

/// The route that signs a URL: `GET /first-party/sign?url=<absolute URL>`.
pub const SIGN_PATH: &str = "/first-party/sign";
/// The parameter of [`SIGN_PATH`] that carries the URL to sign (form-encoded).
pub const SIGN_PARAM: &str = "url";

/// The `400` body of `/first-party/sign`, whatever the reason.
pub const REFUSED_BODY: &str = "{\"error\":\"this URL cannot be signed\"}\n";
/// The `403` body of `/first-party/click` and `/first-party/proxy`, whatever the reason.
pub const FORBIDDEN_BODY: &str = "{\"error\":\"forbidden\"}\n";
/// The `503` body when the signing secret cannot be read.
pub const UNAVAILABLE_BODY: &str = "{\"error\":\"first-party URLs are unavailable\"}\n";

/// Why `/first-party/sign` refuses a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignError {
    /// No query, or no single `url` parameter that decodes.
    Param(ParamError),
    /// The policy refuses the URL.
    Refused(Refusal),
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignError::Param(e) => e.fmt(f),
            SignError::Refused(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SignError {}

/// Why a signed URL (click or proxy) is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// The token, its expiry or the parameters.
    Token(TokenError),
    /// The token is good but the policy now refuses the URL (the settings changed since it
    /// was signed).
    Refused(Refusal),
    /// The token is good but the URL is not in the form the service signs (normalised by
    /// [`TargetPolicy::check`]), so it was not signed by this service's sign step.
    NotNormalised,
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denied::Token(e) => e.fmt(f),
            Denied::Refused(e) => write!(f, "signed, but refused now: {e}"),
            Denied::NotNormalised => f.write_str("signed, but not a normalised URL"),
        }
    }
}

impl std::error::Error for Denied {}

impl From<TokenError> for Denied {
    fn from(e: TokenError) -> Self {
        Denied::Token(e)
    }
}

/// The target `/first-party/sign` is asked for: the one `url` parameter of `query`, checked
/// by the policy. The caller then signs [`Target::url`].
///
/// # Errors
/// [`SignError`], for the log.
pub fn sign_target(query: Option<&str>, policy: &TargetPolicy) -> Result<Target, SignError> {
    let url = query::required(query.unwrap_or(""), SIGN_PARAM).map_err(SignError::Param)?;
    policy.check(&url).map_err(SignError::Refused)
}

/// The `200` body of `/first-party/sign`: `{"url":"<first-party URL>","expires":N}`.
pub fn signed_body(first_party_url: &str, expires: u64) -> String {
    let mut body = serde_json::json!({ "url": first_party_url, "expires": expires }).to_string();
    body.push('\n');
    body
}

/// Verifies a signed URL's parameters: the token (constant time), the expiry against `now`
/// (not passed, and at most `longest` seconds ahead: [`token::longest_lifetime`]), and the
/// policy again, so a URL signed before the settings changed is refused after.
///
/// # Errors
/// [`Denied`], for the log.
pub fn verify(
    params: &SignedParams,
    key: &UrlKey,
    policy: &TargetPolicy,
    now: u64,
    longest: u64,
) -> Result<Target, Denied> {
    key.verify(params, now, longest)?;
    let target = policy.check(&params.url).map_err(Denied::Refused)?;
    if target.url != params.url {
        return Err(Denied::NotNormalised);
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> TargetPolicy {
        TargetPolicy::new(["demo-partner.example"], &[])
    }

    fn key() -> UrlKey {
        UrlKey::new(b"route test key, sixteen bytes+").unwrap()
    }

    #[test]
    fn sign_takes_one_url_parameter_and_checks_it() {
        let p = policy();
        let t = sign_target(Some("url=https%3A%2F%2FAds.Demo-Partner.example%2Fa"), &p).unwrap();
        assert_eq!(t.url, "https://ads.demo-partner.example/a");
        assert_eq!(
            sign_target(None, &p),
            Err(SignError::Param(ParamError::Missing("url")))
        );
        assert_eq!(
            sign_target(Some("url=a&url=b"), &p),
            Err(SignError::Param(ParamError::Repeated("url")))
        );
        let e = sign_target(Some("url=http%3A%2F%2F127.1%2F"), &p).unwrap_err();
        assert_eq!(e.to_string(), "IP literal 127.0.0.1 is loopback");
    }

    #[test]
    fn the_signed_body_is_json() {
        let body = signed_body("/first-party/proxy?tsurl=a%22b&tsexp=1", 12);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["url"], "/first-party/proxy?tsurl=a%22b&tsexp=1");
        assert_eq!(v["expires"], 12);
        for body in [REFUSED_BODY, FORBIDDEN_BODY, UNAVAILABLE_BODY] {
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            assert!(v["error"].is_string());
        }
    }

    #[test]
    fn verify_checks_token_expiry_policy_and_form() {
        let (k, p) = (key(), policy());
        let parse = |url: &str, exp| {
            let signed = k.signed_url(token::CLICK_PATH, url, exp);
            SignedParams::parse(signed.split_once('?').unwrap().1).unwrap()
        };
        let good = parse("https://ads.demo-partner.example/a", 10);
        assert_eq!(
            verify(&good, &k, &p, 10, u64::MAX).unwrap().host,
            "ads.demo-partner.example"
        );
        assert!(matches!(
            verify(&good, &k, &p, 11, u64::MAX),
            Err(Denied::Token(TokenError::Expired { .. }))
        ));
        // Good for 10 s more than the longest lifetime allows.
        assert!(matches!(
            verify(&good, &k, &p, 0, 0),
            Err(Denied::Token(TokenError::TooFarAhead { .. }))
        ));
        assert!(verify(&good, &k, &p, 0, 10).is_ok());
        let other_policy = TargetPolicy::new(["other.example"], &[]);
        assert!(matches!(
            verify(&good, &k, &other_policy, 0, u64::MAX),
            Err(Denied::Refused(Refusal::NotAllowed(_)))
        ));
        // Signed with the key, but not as the sign route would have written it.
        let odd = parse("https://ADS.demo-partner.example/a", 10);
        assert_eq!(
            verify(&odd, &k, &p, 0, u64::MAX),
            Err(Denied::NotNormalised)
        );
        let hostile = parse("http://169.254.169.254/", 10);
        assert!(matches!(
            verify(&hostile, &k, &p, 0, u64::MAX),
            Err(Denied::Refused(_))
        ));
    }
}
