use super::*;
use proptest::prelude::*;

const SECRET: &[u8] = b"test key: at least sixteen bytes";
const URL: &str = "https://ads.demo-partner.example/x?y=1";
/// A longest lifetime that bounds nothing, for the tests of the other checks.
const NO_BOUND: u64 = u64::MAX;

fn key() -> UrlKey {
    UrlKey::new(SECRET).unwrap()
}

/// The query of a signed URL.
fn query_of(signed: &str) -> &str {
    signed.split_once('?').map_or("", |(_, q)| q)
}

/// Tokens computed independently with Python's `hmac`, `hashlib`, `struct` and `base64`:
/// `urlsafe_b64encode(hmac.new(key, b"ts-first-party-url/v1\0" + pack(">Q", len(url)) + url +
/// pack(">Q", exp), sha256).digest()).rstrip(b"=")`.
#[test]
fn tokens_match_an_independent_implementation() {
    let k = key();
    assert_eq!(
        k.token(URL, 1_700_000_000),
        "ZbjtuVLL1_DS9l5e4kYsQL2JrMJH3DG1Rz2-gqSuZT4"
    );
    assert_eq!(
        k.token("", 0),
        "qwm2BCXlceGQBynv5FSvAuVcRqd8smRQcepm1pbVB4s"
    );
    assert_eq!(
        k.token("https://ads.demo-partner.example/✓", u64::MAX),
        "Eyb46BvV4dsTj-e1Sr-gCo2FyDysK4iIiENVY99kFTg"
    );
}

/// The URL encoding checked against Python's `urllib.parse.quote_plus(url, safe='*')`.
#[test]
fn the_signed_url_has_the_documented_form() {
    assert_eq!(
        key().signed_url(PROXY_PATH, &format!("{URL} z"), 7),
        format!(
            "/first-party/proxy?tsurl=https%3A%2F%2Fads.demo-partner.example%2Fx%3Fy%3D1+z\
             &tsexp=7&tstoken={}",
            key().token(&format!("{URL} z"), 7)
        )
    );
    assert!(key()
        .signed_url(CLICK_PATH, URL, 1)
        .starts_with("/first-party/click?tsurl="));
}

#[test]
fn expiry_is_inclusive() {
    let k = key();
    let p = SignedParams::parse(query_of(&k.signed_url(PROXY_PATH, URL, 100))).unwrap();
    assert_eq!(k.verify(&p, 99, NO_BOUND), Ok(()));
    assert_eq!(k.verify(&p, 100, NO_BOUND), Ok(()));
    assert_eq!(
        k.verify(&p, 101, NO_BOUND),
        Err(TokenError::Expired {
            expires: 100,
            now: 101
        })
    );
}

/// The defaults (sign 300 s, pages 3600 s): a token good for one second more than an hour is
/// refused even though its MAC is right; the longest lifetime is the larger of the two.
#[test]
fn tokens_good_for_longer_than_the_longest_lifetime_are_refused() {
    let longest = longest_lifetime(300, 3600);
    assert_eq!(longest, 3600);
    assert_eq!(longest_lifetime(7200, 60), 7200);
    let k = key();
    let now = 1_700_000_000;
    let at = |expires| SignedParams::parse(query_of(&k.signed_url(PROXY_PATH, URL, expires)));
    assert_eq!(k.verify(&at(now + 3600).unwrap(), now, longest), Ok(()));
    let e = k
        .verify(&at(now + 3601).unwrap(), now, longest)
        .unwrap_err();
    assert_eq!(
        e,
        TokenError::TooFarAhead {
            expires: now + 3601,
            now,
            longest
        }
    );
    assert_eq!(
        e.to_string(),
        "expires at 1700003601, 3601 s ahead, more than the longest lifetime 3600 s"
    );
    // Years ahead, as a leaked key could make.
    let far = at(u64::MAX).unwrap();
    assert!(matches!(
        k.verify(&far, now, longest),
        Err(TokenError::TooFarAhead { .. })
    ));
    // A wrong MAC is still a mismatch, whatever the expiry.
    let other = UrlKey::new(b"another key of sixteen bytes+").unwrap();
    assert_eq!(other.verify(&far, now, longest), Err(TokenError::Mismatch));
}

#[test]
fn malformed_parameters_are_named_without_their_values() {
    let token = key().token(URL, 5);
    let cases: &[(String, TokenError)] = &[
        (
            format!("tsexp=5&tstoken={token}"),
            TokenError::Param(ParamError::Missing(URL_PARAM)),
        ),
        (
            format!("tsurl=a&tstoken={token}"),
            TokenError::Param(ParamError::Missing(EXPIRES_PARAM)),
        ),
        (
            "tsurl=a&tsexp=5".to_owned(),
            TokenError::Param(ParamError::Missing(TOKEN_PARAM)),
        ),
        (
            format!("tsurl=a&tsurl=b&tsexp=5&tstoken={token}"),
            TokenError::Param(ParamError::Repeated(URL_PARAM)),
        ),
        (
            format!("tsurl=a&tsexp=05&tstoken={token}"),
            TokenError::Expiry,
        ),
        (
            format!("tsurl=a&tsexp=+5&tstoken={token}"),
            TokenError::Expiry,
        ),
        (
            format!("tsurl=a&tsexp=-5&tstoken={token}"),
            TokenError::Expiry,
        ),
        (
            format!("tsurl=a&tsexp=&tstoken={token}"),
            TokenError::Expiry,
        ),
        (
            format!("tsurl=a&tsexp=18446744073709551616&tstoken={token}"),
            TokenError::Expiry,
        ),
        (
            format!("tsurl=a&tsexp=5&tstoken={token}="),
            TokenError::TokenShape,
        ),
        (
            format!("tsurl=a&tsexp=5&tstoken={}", &token[..42]),
            TokenError::TokenShape,
        ),
        (
            format!("tsurl=a&tsexp=5&tstoken={token}A"),
            TokenError::TokenShape,
        ),
        (
            "tsurl=a&tsexp=5&tstoken=%FF".to_owned(),
            TokenError::Param(ParamError::Encoding),
        ),
    ];
    for (query, want) in cases {
        let got = SignedParams::parse(query);
        assert_eq!(got.as_ref().err(), Some(want), "{query}");
        let text = want.to_string();
        assert!(
            !text.contains(&token) && !text.contains("tsurl=a"),
            "{text}"
        );
    }
    // The last base64 character carries 4 bits of the MAC and 2 spare bits, which must be 0.
    let last = token.as_bytes()[42];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let index = alphabet.iter().position(|&c| c == last).unwrap();
    let spare = char::from(alphabet[index | 1]);
    if index & 1 == 0 {
        let q = format!("tsurl=a&tsexp=5&tstoken={}{spare}", &token[..42]);
        assert_eq!(SignedParams::parse(&q), Err(TokenError::TokenShape));
    }
}

#[test]
fn the_key_never_shows() {
    let k = key();
    let shown = format!("{k:?}");
    assert_eq!(shown, "UrlKey(..)");
    assert!(UrlKey::new(&SECRET[..15]).is_err());
    let e = UrlKey::new(b"short secret").unwrap_err().to_string();
    assert!(!e.contains("short secret"), "{e}");
    // Errors of verification carry no key material either.
    let p = SignedParams::parse(query_of(&k.signed_url(PROXY_PATH, URL, 1))).unwrap();
    let other = UrlKey::new(b"another key of sixteen bytes+").unwrap();
    let e = other.verify(&p, 0, NO_BOUND).unwrap_err();
    assert_eq!(e, TokenError::Mismatch);
    assert!(!e.to_string().contains("sixteen") && !format!("{e:?}").contains("sixteen"));
}

/// A different character of the base64url alphabet at `at`.
fn flip(token: &str, at: usize) -> String {
    let mut bytes = token.as_bytes().to_vec();
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).unwrap()
}

proptest! {
    #[test]
    fn round_trip(url in any::<String>(), expires in any::<u64>(), now in any::<u64>()) {
        let k = key();
        let signed = k.signed_url(PROXY_PATH, &url, expires);
        let p = SignedParams::parse(query_of(&signed)).unwrap();
        prop_assert_eq!(&p.url, &url);
        prop_assert_eq!(p.expires, expires);
        let want = if now <= expires { Ok(()) } else { Err(TokenError::Expired { expires, now }) };
        prop_assert_eq!(k.verify(&p, now, NO_BOUND), want);
    }

    /// With a validly signed token, the verdict on the expiry is: expired before `now`, good up
    /// to `longest` seconds ahead, refused beyond (checked with `i128` arithmetic, apart from
    /// the code's own).
    #[test]
    fn an_expiry_further_ahead_than_the_longest_lifetime_is_refused(
        now in any::<u64>(),
        ahead in -5i128..5,
        longest in prop_oneof![0u64..10, any::<u64>()],
    ) {
        let expires = i128::from(now) + i128::from(longest) + ahead;
        let Ok(expires) = u64::try_from(expires) else { return Ok(()) };
        let k = key();
        let p = SignedParams::parse(query_of(&k.signed_url(PROXY_PATH, URL, expires))).unwrap();
        let distance = i128::from(expires) - i128::from(now);
        let want = if distance < 0 {
            Err(TokenError::Expired { expires, now })
        } else if distance > i128::from(longest) {
            Err(TokenError::TooFarAhead { expires, now, longest })
        } else {
            Ok(())
        };
        prop_assert_eq!(k.verify(&p, now, longest), want);
    }

    #[test]
    fn any_change_to_url_expiry_or_token_fails(
        url in any::<String>(),
        other_url in any::<String>(),
        expires in any::<u64>(),
        other_expires in any::<u64>(),
        at in 0usize..43,
    ) {
        let k = key();
        let token = k.token(&url, expires);
        let query = |u: &str, e: u64, t: &str| {
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair(URL_PARAM, u)
                .append_pair(EXPIRES_PARAM, &e.to_string())
                .append_pair(TOKEN_PARAM, t)
                .finish()
        };
        let verdict = |q: String| SignedParams::parse(&q).and_then(|p| k.verify(&p, 0, NO_BOUND));
        prop_assert_eq!(verdict(query(&url, expires, &token)), Ok(()));
        if other_url != url {
            prop_assert_eq!(verdict(query(&other_url, expires, &token)), Err(TokenError::Mismatch));
        }
        if other_expires != expires {
            prop_assert_eq!(verdict(query(&url, other_expires, &token)), Err(TokenError::Mismatch));
        }
        let flipped = flip(&token, at);
        prop_assert!(verdict(query(&url, expires, &flipped)).is_err());
        // A token for the same URL and expiry under another key fails too.
        let other = UrlKey::new(b"a different key, sixteen+ bytes").unwrap();
        prop_assert_eq!(
            verdict(query(&url, expires, &other.token(&url, expires))),
            Err(TokenError::Mismatch)
        );
    }
}
