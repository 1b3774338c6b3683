//! The bearer token a partner pushes its IDs with (`POST /_ts/ids/sync`,
//! `Authorization: Bearer <token>`, RFC 6750), checked against the partner's own token from
//! the Secret Store.
//!
//! As for the admin credentials, the configured token is kept only as a SHA-256 digest and a
//! request's token is hashed and compared with `subtle`'s constant-time equality, so the time
//! a check takes says nothing about how much of a guess was right or how long the token is.
//! Neither token is ever printed: errors name the shape of a value, never its bytes.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The shortest configured token accepted, in bytes: 128 bits as 32 hex digits. A shorter one
/// is unusable (the partner's syncs answer `503`), so a placeholder never opens the route.
pub const MIN_TOKEN_BYTES: usize = 32;

/// The longest token, configured or sent, in bytes.
pub const MAX_TOKEN_BYTES: usize = 512;

/// The `WWW-Authenticate` value of every `401` of the sync route.
pub const CHALLENGE: &str = "Bearer realm=\"trusted-server-ids\"";

/// A partner's configured token, as its digest.
#[derive(Clone)]
pub struct PartnerToken {
    digest: [u8; 32],
}

impl fmt::Debug for PartnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PartnerToken(<redacted>)")
    }
}

/// Why a configured token cannot be used (never its value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenProblem {
    /// Fewer than [`MIN_TOKEN_BYTES`] bytes.
    TooShort,
    /// More than [`MAX_TOKEN_BYTES`] bytes.
    TooLong,
    /// A byte that is not a visible ASCII character (RFC 6750's `b64token` and more).
    NotPrintable,
}

impl fmt::Display for TokenProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenProblem::TooShort => "shorter than 32 bytes",
            TokenProblem::TooLong => "longer than 512 bytes",
            TokenProblem::NotPrintable => "not visible ASCII",
        })
    }
}

/// Why a request's `Authorization` was refused. All are answered alike (`401`); the reason is
/// for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No `Authorization` header.
    Missing,
    /// More than one `Authorization` header.
    Several,
    /// Not `Bearer <token>` with a token of the allowed shape.
    Malformed,
    /// A well-formed token that is not the partner's.
    Wrong,
}

impl Refused {
    /// The reason, for the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Refused::Missing => "no Authorization header",
            Refused::Several => "several Authorization headers",
            Refused::Malformed => "Authorization is not a Bearer token",
            Refused::Wrong => "wrong token",
        }
    }
}

fn shape(token: &[u8]) -> Result<(), TokenProblem> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(TokenProblem::TooLong);
    }
    if !token.iter().all(|b| b.is_ascii_graphic()) {
        return Err(TokenProblem::NotPrintable);
    }
    Ok(())
}

impl PartnerToken {
    /// The partner's token as read from the Secret Store (surrounding ASCII whitespace, such as
    /// a file's final newline, is not part of it).
    ///
    /// # Errors
    /// The [`TokenProblem`].
    pub fn new(secret: &[u8]) -> Result<Self, TokenProblem> {
        let token = secret.trim_ascii();
        shape(token)?;
        if token.len() < MIN_TOKEN_BYTES {
            return Err(TokenProblem::TooShort);
        }
        Ok(PartnerToken {
            digest: Sha256::digest(token).into(),
        })
    }

    /// Checks the request's `Authorization` values: exactly one, `Bearer` (any case), one space
    /// or more, and this partner's token.
    ///
    /// # Errors
    /// [`Refused`].
    pub fn check<'a>(
        &self,
        mut authorization: impl Iterator<Item = &'a [u8]>,
    ) -> Result<(), Refused> {
        let value = authorization.next().ok_or(Refused::Missing)?;
        if authorization.next().is_some() {
            return Err(Refused::Several);
        }
        let (scheme, rest) = match value.iter().position(|&b| b == b' ') {
            Some(at) => value.split_at(at),
            None => return Err(Refused::Malformed),
        };
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return Err(Refused::Malformed);
        }
        let token = rest.trim_ascii();
        if token.is_empty() || shape(token).is_err() {
            return Err(Refused::Malformed);
        }
        let sent: [u8; 32] = Sha256::digest(token).into();
        match bool::from(self.digest.ct_eq(&sent)) {
            true => Ok(()),
            false => Err(Refused::Wrong),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn check(token: &PartnerToken, values: &[&str]) -> Result<(), Refused> {
        token.check(values.iter().map(|v| v.as_bytes()))
    }

    #[test]
    fn only_the_partners_own_token_passes() {
        let token = PartnerToken::new(format!("{TOKEN}\n").as_bytes()).unwrap();
        assert_eq!(check(&token, &[&format!("Bearer {TOKEN}")]), Ok(()));
        assert_eq!(check(&token, &[&format!("bearer   {TOKEN} ")]), Ok(()));
        let other = format!("{}0", &TOKEN[..TOKEN.len() - 1]);
        assert_eq!(
            check(&token, &[&format!("Bearer {other}")]),
            Err(Refused::Wrong)
        );
        // A prefix or an extension of the token is another token.
        assert_eq!(
            check(&token, &[&format!("Bearer {}", &TOKEN[..31])]),
            Err(Refused::Wrong)
        );
        assert_eq!(
            check(&token, &[&format!("Bearer {TOKEN}x")]),
            Err(Refused::Wrong)
        );
    }

    #[test]
    fn malformed_or_missing_authorization_is_refused_before_any_comparison() {
        let token = PartnerToken::new(TOKEN.as_bytes()).unwrap();
        assert_eq!(check(&token, &[]), Err(Refused::Missing));
        let good = format!("Bearer {TOKEN}");
        assert_eq!(check(&token, &[&good, &good]), Err(Refused::Several));
        for bad in [
            TOKEN.to_owned(),
            format!("Basic {TOKEN}"),
            format!("Bearer{TOKEN}"),
            "Bearer ".to_owned(),
            format!("Bearer {TOKEN} extra"),
            format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1)),
        ] {
            assert_eq!(check(&token, &[&bad]), Err(Refused::Malformed), "{bad:?}");
        }
    }

    #[test]
    fn a_short_or_odd_configured_token_is_unusable_and_never_printed() {
        assert_eq!(
            PartnerToken::new(b"short").unwrap_err(),
            TokenProblem::TooShort
        );
        assert_eq!(PartnerToken::new(b"").unwrap_err(), TokenProblem::TooShort);
        let spaced = format!("{TOKEN} {TOKEN}");
        assert_eq!(
            PartnerToken::new(spaced.as_bytes()).unwrap_err(),
            TokenProblem::NotPrintable
        );
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(
            PartnerToken::new(long.as_bytes()).unwrap_err(),
            TokenProblem::TooLong
        );
        let token = PartnerToken::new(TOKEN.as_bytes()).unwrap();
        assert!(!format!("{token:?}").contains(TOKEN));
    }
}
