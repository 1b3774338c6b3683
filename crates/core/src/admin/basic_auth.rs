//! HTTP Basic authentication (RFC 7617) for the admin routes: parsing the client's
//! `Authorization` header and checking it against the configured credentials.
//!
//! Two rules shape this module:
//!
//! * **No panic, no guess.** Any header value is either a well-formed `Basic` credential or a
//!   [`Malformed`] reason; nothing in between is repaired or half-accepted.
//! * **Nothing about the secret leaks through timing.** The configured user and password are
//!   kept only as SHA-256 digests, and a check hashes what the client sent and compares *both*
//!   digests with [`subtle`]'s constant-time equality, combining the two results without a
//!   branch. So the time taken does not depend on which of the two was wrong, on how many
//!   leading bytes matched, or on the length of the configured values (every digest is 32
//!   bytes).
//!
//! Credentials never reach a log or a response: [`Credentials`] and [`AdminCredentials`]
//! print as `<redacted>`, and every error here describes the *shape* of a value, never its
//! bytes.

use std::fmt;

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The `WWW-Authenticate` value of every `401`: the realm names the service, and `charset`
/// tells browsers to send the user and password as UTF-8 (RFC 7617 section 2.1), which is
/// how the configured values are compared.
pub const CHALLENGE: &str = "Basic realm=\"trusted-server\", charset=\"UTF-8\"";

/// The longest `Authorization` value parsed. Longer values are refused before any decoding:
/// a real user and password fit many times over, and the bound keeps a hostile header cheap.
pub const MAX_HEADER_BYTES: usize = 4096;

/// The shortest configured password accepted, in bytes. A shorter one is treated as missing
/// (the admin routes answer `503`), so a placeholder never guards the routes.
pub const MIN_PASSWORD_BYTES: usize = 12;

/// The longest configured user name or password accepted, in bytes.
pub const MAX_SECRET_BYTES: usize = 1024;

/// Standard base64 (RFC 4648 section 4), as RFC 7617 requires, with its padding complete.
/// Characters outside the alphabet and non-zero trailing bits are refused.
const PADDED: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// The same without any padding: some clients leave it out, and the bytes are unambiguous.
/// Partial padding (one `=` where two belong) matches neither and is refused.
const UNPADDED: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::RequireNone),
);

/// What a client sent in `Authorization: Basic …`: a user and a password, as bytes.
///
/// Its `Debug` output is `<redacted>`, so it cannot end up in a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    user: Vec<u8>,
    password: Vec<u8>,
}

impl Credentials {
    /// The user name as sent (UTF-8 by the challenge's `charset`, but compared as bytes).
    pub fn user(&self) -> &[u8] {
        &self.user
    }

    /// The password as sent.
    pub fn password(&self) -> &[u8] {
        &self.password
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

/// Why an `Authorization` value is not a usable Basic credential. Says what is wrong with the
/// shape of the value, never what it contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// Longer than [`MAX_HEADER_BYTES`].
    TooLong,
    /// Another scheme (`Bearer …`), or no credentials after `Basic`.
    NotBasic,
    /// The credentials are not one token of standard base64.
    BadBase64,
    /// The decoded credentials have no `:` between user and password.
    NoColon,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Malformed::TooLong => "Authorization header too long",
            Malformed::NotBasic => "Authorization header is not Basic credentials",
            Malformed::BadBase64 => "Authorization header is not valid base64",
            Malformed::NoColon => "Authorization credentials have no ':' separator",
        })
    }
}

impl std::error::Error for Malformed {}

/// Parses one `Authorization` header value as Basic credentials (RFC 7617).
///
/// The scheme is matched without regard to case (RFC 9110 section 11.1); spaces or tabs may
/// surround it and the credentials. The user is everything before the first `:` of the
/// decoded bytes and the password everything after it (a user cannot contain `:`, a password
/// can).
///
/// # Errors
/// A [`Malformed`] reason for anything else. Never panics, whatever the input.
pub fn parse(value: &[u8]) -> Result<Credentials, Malformed> {
    if value.len() > MAX_HEADER_BYTES {
        return Err(Malformed::TooLong);
    }
    let value = value.trim_ascii();
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let scheme_end = value.iter().position(blank).unwrap_or(value.len());
    let (scheme, rest) = value.split_at(scheme_end);
    let token = rest.trim_ascii();
    if !scheme.eq_ignore_ascii_case(b"basic") || token.is_empty() {
        return Err(Malformed::NotBasic);
    }
    // One token68: any blank inside means two values, not base64.
    if token.iter().any(blank) {
        return Err(Malformed::BadBase64);
    }
    let engine = if token.ends_with(b"=") {
        &PADDED
    } else {
        &UNPADDED
    };
    let decoded = engine.decode(token).map_err(|_| Malformed::BadBase64)?;
    let colon = decoded
        .iter()
        .position(|&b| b == b':')
        .ok_or(Malformed::NoColon)?;
    Ok(Credentials {
        user: decoded[..colon].to_vec(),
        password: decoded[colon + 1..].to_vec(),
    })
}

/// Why configured credentials cannot be used. Names the problem, never the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialError {
    /// The user name is empty.
    EmptyUser,
    /// The user name contains `:`, which Basic credentials cannot carry (RFC 7617).
    ColonInUser,
    /// The user name or password contains a control character (a stray newline inside it,
    /// for example), which no browser prompt can send.
    ControlCharacter,
    /// The password is shorter than [`MIN_PASSWORD_BYTES`].
    PasswordTooShort,
    /// The user name or password is longer than [`MAX_SECRET_BYTES`].
    TooLong,
}

impl fmt::Display for CredentialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredentialError::EmptyUser => f.write_str("the user name is empty"),
            CredentialError::ColonInUser => f.write_str("the user name contains ':'"),
            CredentialError::ControlCharacter => {
                f.write_str("the user name or password contains a control character")
            }
            CredentialError::PasswordTooShort => {
                write!(f, "the password is shorter than {MIN_PASSWORD_BYTES} bytes")
            }
            CredentialError::TooLong => write!(
                f,
                "the user name or password is longer than {MAX_SECRET_BYTES} bytes"
            ),
        }
    }
}

impl std::error::Error for CredentialError {}

/// The configured admin user and password, kept only as SHA-256 digests.
///
/// Its `Debug` output is `<redacted>`.
#[derive(Clone)]
pub struct AdminCredentials {
    user: [u8; 32],
    password: [u8; 32],
}

impl fmt::Debug for AdminCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminCredentials(<redacted>)")
    }
}

/// The value without one trailing line ending (`\n` or `\r\n`): `echo secret | fastly
/// secret-store-entry create --stdin` stores that newline, and no browser can send it.
fn without_line_end(value: &[u8]) -> &[u8] {
    let value = value.strip_suffix(b"\n").unwrap_or(value);
    value.strip_suffix(b"\r").unwrap_or(value)
}

impl AdminCredentials {
    /// The credentials from the secrets' bytes, each without one trailing line ending.
    ///
    /// # Errors
    /// A [`CredentialError`] when the user is empty, contains `:` or a control character, or
    /// the password is shorter than [`MIN_PASSWORD_BYTES`]; the routes then stay closed.
    pub fn new(user: &[u8], password: &[u8]) -> Result<Self, CredentialError> {
        let (user, password) = (without_line_end(user), without_line_end(password));
        if user.is_empty() {
            return Err(CredentialError::EmptyUser);
        }
        if user.len() > MAX_SECRET_BYTES || password.len() > MAX_SECRET_BYTES {
            return Err(CredentialError::TooLong);
        }
        if user.contains(&b':') {
            return Err(CredentialError::ColonInUser);
        }
        if (user.iter().chain(password)).any(|b| b.is_ascii_control()) {
            return Err(CredentialError::ControlCharacter);
        }
        if password.len() < MIN_PASSWORD_BYTES {
            return Err(CredentialError::PasswordTooShort);
        }
        Ok(AdminCredentials {
            user: Sha256::digest(user).into(),
            password: Sha256::digest(password).into(),
        })
    }

    /// Whether `given` names this user **and** this password.
    ///
    /// Both digests are always computed and compared in constant time, and the two results
    /// are combined with a non-short-circuiting `&` on [`subtle::Choice`], so a wrong user
    /// takes as long as a wrong password.
    pub fn matches(&self, given: &Credentials) -> bool {
        let user: [u8; 32] = Sha256::digest(&given.user).into();
        let password: [u8; 32] = Sha256::digest(&given.password).into();
        let same = self.user[..].ct_eq(&user[..]) & self.password[..].ct_eq(&password[..]);
        bool::from(same)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn creds(user: &[u8], password: &[u8]) -> Credentials {
        Credentials {
            user: user.to_vec(),
            password: password.to_vec(),
        }
    }

    /// The published examples of RFC 7617: section 2 ("Aladdin" / "open sesame") and
    /// section 2.1 ("test" / "123£" in UTF-8).
    #[test]
    fn the_rfc_7617_examples_parse() {
        let c = parse(b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==").unwrap();
        assert_eq!(
            (c.user(), c.password()),
            (&b"Aladdin"[..], &b"open sesame"[..])
        );
        let c = parse(b"Basic dGVzdDoxMjPCow==").unwrap();
        assert_eq!(c.user(), b"test");
        assert_eq!(c.password(), "123£".as_bytes());
    }

    #[test]
    fn scheme_case_and_blanks_are_tolerated() {
        for value in [
            "basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "BASIC QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "bAsIc\tQWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "  Basic   QWxhZGRpbjpvcGVuIHNlc2FtZQ==  ",
            // Padding left out.
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ",
        ] {
            let c = parse(value.as_bytes()).unwrap_or_else(|e| panic!("{value:?}: {e}"));
            assert_eq!(c, creds(b"Aladdin", b"open sesame"), "{value:?}");
        }
    }

    #[test]
    fn malformed_values_are_refused_with_their_reason() {
        let cases: &[(&[u8], Malformed)] = &[
            (b"", Malformed::NotBasic),
            (b"Basic", Malformed::NotBasic),
            (b"Basic   ", Malformed::NotBasic),
            (b"Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ==", Malformed::NotBasic),
            (b"Basics QWxhZGRpbjpvcGVuIHNlc2FtZQ==", Malformed::NotBasic),
            (b"BasicQWxhZGRpbjpvcGVuIHNlc2FtZQ==", Malformed::NotBasic),
            (b"QWxhZGRpbjpvcGVuIHNlc2FtZQ==", Malformed::NotBasic),
            (b"Basic QWxh ZGRpbjpvcGVuIHNlc2FtZQ==", Malformed::BadBase64),
            (b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=", Malformed::BadBase64),
            (b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ===", Malformed::BadBase64),
            (b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZR==", Malformed::BadBase64),
            (b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ-_", Malformed::BadBase64),
            (b"Basic !!!!", Malformed::BadBase64),
            (b"Basic \xff\xfe", Malformed::BadBase64),
            // "Aladdin" alone: no colon.
            (b"Basic QWxhZGRpbg==", Malformed::NoColon),
            // Empty credentials.
            (b"Basic =", Malformed::BadBase64),
        ];
        for (value, want) in cases {
            assert_eq!(
                parse(value),
                Err(*want),
                "{:?}",
                String::from_utf8_lossy(value)
            );
        }
        let long = format!("Basic {}", "A".repeat(MAX_HEADER_BYTES));
        assert_eq!(parse(long.as_bytes()), Err(Malformed::TooLong));
    }

    #[test]
    fn an_empty_user_or_password_parses_and_the_first_colon_splits() {
        // ":" → empty user, empty password; "a:b:c" → user "a", password "b:c".
        assert_eq!(parse(b"Basic Og==").unwrap(), creds(b"", b""));
        assert_eq!(parse(b"Basic YTpiOmM=").unwrap(), creds(b"a", b"b:c"));
    }

    #[test]
    fn credentials_never_print() {
        let c = parse(b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==").unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("Aladdin") && !shown.contains("sesame"),
            "{shown}"
        );
        let admin = AdminCredentials::new(b"Aladdin", b"open sesame 12").unwrap();
        let shown = format!("{admin:?}");
        assert_eq!(shown, "AdminCredentials(<redacted>)");
    }

    #[test]
    fn configured_credentials_are_checked_and_errors_never_show_them() {
        let cases: &[(&[u8], &[u8], CredentialError)] = &[
            (b"", b"a long enough password", CredentialError::EmptyUser),
            (b"\n", b"a long enough password", CredentialError::EmptyUser),
            (
                b"ad:min",
                b"a long enough password",
                CredentialError::ColonInUser,
            ),
            (b"admin", b"short-pw", CredentialError::PasswordTooShort),
            (
                b"ad\nmin",
                b"a long enough password",
                CredentialError::ControlCharacter,
            ),
            (
                b"admin",
                b"a long enough\tpassword",
                CredentialError::ControlCharacter,
            ),
            (
                b"admin",
                &[b'p'; MAX_SECRET_BYTES + 1],
                CredentialError::TooLong,
            ),
        ];
        for (user, password, want) in cases {
            let e = AdminCredentials::new(user, password).unwrap_err();
            assert_eq!(e, *want);
            let text = e.to_string();
            for secret in [user, password] {
                let secret = String::from_utf8_lossy(secret);
                assert!(secret.len() < 3 || !text.contains(&*secret), "{text}");
            }
        }
        // One trailing line ending is not part of the secret.
        let admin = AdminCredentials::new(b"admin\n", b"a long enough password\r\n").unwrap();
        assert!(admin.matches(&creds(b"admin", b"a long enough password")));
        assert!(!admin.matches(&creds(b"admin\n", b"a long enough password")));
    }

    #[test]
    fn both_user_and_password_must_match() {
        let admin = AdminCredentials::new(b"Aladdin", b"open sesame, please").unwrap();
        assert!(admin.matches(&creds(b"Aladdin", b"open sesame, please")));
        assert!(!admin.matches(&creds(b"aladdin", b"open sesame, please")));
        assert!(!admin.matches(&creds(b"Aladdin", b"open sesame, pleas")));
        assert!(!admin.matches(&creds(b"Aladdin", b"open sesame, please ")));
        assert!(!admin.matches(&creds(b"open sesame, please", b"Aladdin")));
        assert!(!admin.matches(&creds(b"", b"")));
        // The user and password are not one string: moving the split does not match.
        assert!(!admin.matches(&creds(b"Aladdin:open", b"sesame, please")));
    }

    fn user_bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>().prop_filter("no colon", |b| *b != b':'), 0..40)
    }

    proptest! {
        /// No input panics; whatever parses re-encodes to the same credentials.
        #[test]
        fn parse_never_panics(value in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse(&value);
        }

        #[test]
        fn parse_never_panics_on_basic_prefixed_text(rest in "\\PC{0,80}") {
            let _ = parse(format!("Basic {rest}").as_bytes());
            let _ = parse(format!("basic{rest}").as_bytes());
        }

        /// Any user without `:` and any password, encoded as a client does (with the base64
        /// crate's *encoder*; the RFC examples above check the decoding independently), come
        /// back exactly, whatever the scheme's case.
        #[test]
        fn encoded_credentials_round_trip(
            user in user_bytes(),
            password in proptest::collection::vec(any::<u8>(), 0..60),
            upper in proptest::collection::vec(any::<bool>(), 5),
            pad in any::<bool>(),
        ) {
            let mut raw = user.clone();
            raw.push(b':');
            raw.extend_from_slice(&password);
            let mut token = base64::engine::general_purpose::STANDARD.encode(&raw);
            if !pad {
                token = token.trim_end_matches('=').to_owned();
            }
            let scheme: String = "basic"
                .chars()
                .zip(&upper)
                .map(|(c, up)| if *up { c.to_ascii_uppercase() } else { c })
                .collect();
            let parsed = parse(format!("{scheme} {token}").as_bytes()).unwrap();
            prop_assert_eq!(parsed.user(), &user[..]);
            prop_assert_eq!(parsed.password(), &password[..]);
        }

        /// The check agrees with plain equality of both parts (the oracle), for the right
        /// pair, a pair with either part changed, and unrelated pairs.
        #[test]
        fn matches_exactly_when_both_parts_are_equal(
            user in "[a-z]{1,12}",
            password in "[ -~]{12,30}",
            other_user in "[a-z]{0,12}",
            other_password in "[ -~]{0,30}",
            swap_user in any::<bool>(),
            swap_password in any::<bool>(),
        ) {
            let admin = AdminCredentials::new(user.as_bytes(), password.as_bytes()).unwrap();
            let given_user = if swap_user { &other_user } else { &user };
            let given_password = if swap_password { &other_password } else { &password };
            let want = *given_user == user && *given_password == password;
            let got = admin.matches(&creds(given_user.as_bytes(), given_password.as_bytes()));
            prop_assert_eq!(got, want);
        }

        /// A near miss, one byte of the user or of the password changed, truncated or
        /// extended, never matches.
        #[test]
        fn a_near_miss_never_matches(
            user in proptest::collection::vec(0x21u8..0x7f, 1..20)
                .prop_filter("no colon", |u| !u.contains(&b':')),
            password in proptest::collection::vec(0x20u8..0x7f, 12..40),
            in_password in any::<bool>(),
            at in any::<proptest::sample::Index>(),
            flip in 1u8..=255,
            edit in 0..3u8,
        ) {
            let admin = AdminCredentials::new(&user, &password).unwrap();
            prop_assert!(admin.matches(&creds(&user, &password)));
            let (mut u, mut p) = (user.clone(), password.clone());
            let target = if in_password { &mut p } else { &mut u };
            match edit {
                0 => {
                    let i = at.index(target.len());
                    target[i] ^= flip;
                }
                1 => {
                    target.pop();
                }
                _ => target.push(flip),
            }
            prop_assert!(!admin.matches(&creds(&u, &p)));
        }
    }
}
