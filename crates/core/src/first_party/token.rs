//! Signed first-party URLs: `/first-party/proxy?tsurl=…&tsexp=…&tstoken=…` (and the same
//! parameters on `/first-party/click`).
//!
//! The token is an HMAC-SHA256, keyed by a secret the adapter reads from a Fastly Secret
//! Store, over an unambiguous encoding of the **exact** target URL and the expiry:
//!
//! ```text
//! "ts-first-party-url/v1\0" || len(url) as u64 big-endian || url || expires as u64 big-endian
//! ```
//!
//! The length prefix means no (url, expiry) pair can be re-split into another; the label keeps
//! these MACs apart from any other use of a key. The token is the 32-byte MAC in unpadded
//! base64url (43 characters), checked in constant time ([`HmacKey::verify`]). The expiry
//! is seconds since the Unix epoch, the last second at which the URL is still good; `now` is
//! the caller's, so the rule is tested without a clock.

use super::query::{self, ParamError};
use crate::hmac_key::{HmacKey, WeakSecret, TAG_LEN};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

/// The route that fetches a signed target and streams it back.
pub const PROXY_PATH: &str = "/first-party/proxy";
/// The methods [`PROXY_PATH`] serves: `GET`, and `POST` for the beacons a creative fires at
/// its signed URLs. The route tables and the `405`'s `Allow` all read this.
pub const PROXY_METHODS: &[&str] = &["GET", "POST"];
/// The route that redirects to a signed target.
pub const CLICK_PATH: &str = "/first-party/click";
/// The target URL parameter.
pub const URL_PARAM: &str = "tsurl";
/// The expiry parameter (seconds since the Unix epoch, canonical decimal).
pub const EXPIRES_PARAM: &str = "tsexp";
/// The token parameter (unpadded base64url HMAC-SHA256).
pub const TOKEN_PARAM: &str = "tstoken";

/// Domain separation for the MAC input.
const LABEL: &[u8] = b"ts-first-party-url/v1\0";
/// Length of a MAC, in bytes.
const MAC_LEN: usize = TAG_LEN;

/// The HMAC key that signs and verifies first-party URLs. `Debug` shows `UrlKey(..)`, never
/// the key.
#[derive(Clone, Debug)]
pub struct UrlKey(HmacKey);

/// Why a signed URL is refused. For the log: the client gets the same `403` for every one.
/// No variant carries the token or the key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// The query string is not well-formed, or a parameter is missing or repeated.
    Param(ParamError),
    /// `tsexp` is not a canonical decimal number (no sign, no leading zero, fits in 64 bits).
    Expiry,
    /// `tstoken` is not 43 characters of unpadded base64url.
    TokenShape,
    /// The token does not match the URL and expiry.
    Mismatch,
    /// The expiry has passed.
    Expired {
        /// The URL's expiry.
        expires: u64,
        /// The time of the check.
        now: u64,
    },
    /// The expiry lies further ahead than the longest lifetime the service gives a URL, so
    /// this service did not sign it with its current settings (or the key has leaked).
    TooFarAhead {
        /// The URL's expiry.
        expires: u64,
        /// The time of the check.
        now: u64,
        /// The longest lifetime allowed, in seconds.
        longest: u64,
    },
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Param(e) => e.fmt(f),
            TokenError::Expiry => write!(f, "`{EXPIRES_PARAM}` is not a canonical number"),
            TokenError::TokenShape => write!(f, "`{TOKEN_PARAM}` is not a token"),
            TokenError::Mismatch => f.write_str("the token does not match the URL and expiry"),
            TokenError::Expired { expires, now } => {
                write!(
                    f,
                    "expired at {expires}, {} s ago",
                    now.saturating_sub(*expires)
                )
            }
            TokenError::TooFarAhead {
                expires,
                now,
                longest,
            } => write!(
                f,
                "expires at {expires}, {} s ahead, more than the longest lifetime {longest} s",
                expires.saturating_sub(*now)
            ),
        }
    }
}

impl std::error::Error for TokenError {}

impl From<ParamError> for TokenError {
    fn from(e: ParamError) -> Self {
        TokenError::Param(e)
    }
}

/// The three parameters of a signed URL, decoded but not yet verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedParams {
    /// The target URL, exactly as signed.
    pub url: String,
    /// The expiry, seconds since the Unix epoch.
    pub expires: u64,
    /// The MAC as sent.
    token: [u8; MAC_LEN],
}

impl SignedParams {
    /// Reads `tsurl`, `tsexp` and `tstoken` from a query string (without the `?`). Each must
    /// appear exactly once; other parameters are ignored.
    ///
    /// # Errors
    /// A [`TokenError`] naming what is wrong (never the token's value).
    pub fn parse(query: &str) -> Result<Self, TokenError> {
        let url = query::required(query, URL_PARAM)?;
        let expires = query::required(query, EXPIRES_PARAM)?;
        let token = query::required(query, TOKEN_PARAM)?;
        let canonical = !expires.is_empty()
            && expires.bytes().all(|b| b.is_ascii_digit())
            && (expires == "0" || !expires.starts_with('0'));
        let expires = canonical
            .then(|| expires.parse::<u64>().ok())
            .flatten()
            .ok_or(TokenError::Expiry)?;
        let mut mac = [0u8; MAC_LEN];
        // Canonical decoding: 43 characters, no padding, no stray trailing bits.
        match URL_SAFE_NO_PAD.decode_slice(token.as_bytes(), &mut mac) {
            Ok(MAC_LEN) if token.len() == 43 => {}
            _ => return Err(TokenError::TokenShape),
        }
        Ok(SignedParams {
            url,
            expires,
            token: mac,
        })
    }
}

impl UrlKey {
    /// A key from the secret's bytes, used as they are.
    ///
    /// # Errors
    /// [`WeakSecret`] when the secret is shorter than
    /// [`MIN_SECRET_LEN`](crate::hmac_key::MIN_SECRET_LEN) bytes.
    pub fn new(secret: &[u8]) -> Result<Self, WeakSecret> {
        HmacKey::new(secret).map(UrlKey)
    }

    /// The MAC input for `url` and `expires` (see the module), in parts, handed to `with`.
    fn message<T>(url: &str, expires: u64, with: impl FnOnce(&[&[u8]]) -> T) -> T {
        // usize → u64 never truncates on the targets this builds for (32 and 64 bits).
        let len = (url.len() as u64).to_be_bytes();
        with(&[LABEL, &len, url.as_bytes(), &expires.to_be_bytes()])
    }

    /// The token for `url` good until `expires`: unpadded base64url of the MAC.
    pub fn token(&self, url: &str, expires: u64) -> String {
        URL_SAFE_NO_PAD.encode(Self::message(url, expires, |m| self.0.tag(m)))
    }

    /// The signed first-party URL: `path?tsurl=…&tsexp=…&tstoken=…`, with `url`
    /// form-encoded. `path` is [`PROXY_PATH`] or [`CLICK_PATH`].
    pub fn signed_url(&self, path: &str, url: &str, expires: u64) -> String {
        let token = self.token(url, expires);
        let mut out = String::with_capacity(path.len() + url.len() * 3 / 2 + 80);
        out.push_str(path);
        out.push('?');
        out.push_str(URL_PARAM);
        out.push('=');
        out.extend(url::form_urlencoded::byte_serialize(url.as_bytes()));
        out.push('&');
        out.push_str(EXPIRES_PARAM);
        out.push('=');
        out.push_str(&expires.to_string());
        out.push('&');
        out.push_str(TOKEN_PARAM);
        out.push('=');
        out.push_str(&token);
        out
    }

    /// Checks the token (in constant time) and then the expiry against `now` (seconds since
    /// the Unix epoch). A URL is good up to and including the second `expires`, and only if
    /// `expires` is at most `longest` seconds after `now`: the service never signs for longer
    /// than its longest configured lifetime ([`longest_lifetime`]), so a token that claims more
    /// was not made by it as configured, and a leaked key cannot mint URLs good for years.
    ///
    /// # Errors
    /// [`TokenError::Mismatch`], [`TokenError::Expired`] or [`TokenError::TooFarAhead`].
    pub fn verify(&self, params: &SignedParams, now: u64, longest: u64) -> Result<(), TokenError> {
        if !Self::message(&params.url, params.expires, |m| {
            self.0.verify(m, &params.token)
        }) {
            return Err(TokenError::Mismatch);
        }
        let expires = params.expires;
        if now > expires {
            return Err(TokenError::Expired { expires, now });
        }
        if expires - now > longest {
            return Err(TokenError::TooFarAhead {
                expires,
                now,
                longest,
            });
        }
        Ok(())
    }
}

/// The longest lifetime, in seconds, of any URL the service signs: the larger of
/// `first_party.sign_ttl_secs` (URLs from `/first-party/sign`) and
/// `first_party.page_ttl_secs` (URLs written into creatives). [`UrlKey::verify`] refuses an
/// expiry further ahead than this.
pub fn longest_lifetime(sign_ttl_secs: u32, page_ttl_secs: u32) -> u64 {
    u64::from(sign_ttl_secs.max(page_ttl_secs))
}

#[cfg(test)]
mod tests;
