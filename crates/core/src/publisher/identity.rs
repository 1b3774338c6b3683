//! The edge ID: a first-party identifier for each browser, kept in the `ts-ec` cookie.
//!
//! An ID is `<hmac>.<suffix>`: [`SUFFIX_LEN`] random letters and digits (so browsers behind one
//! address get different IDs), after the hex-encoded HMAC-SHA256, keyed by a secret the adapter
//! reads at run time, of the client's network (its IPv4 address, or the /64 of its IPv6
//! address) **and that suffix**. The HMAC covers the whole ID: a reader who knows its own ID
//! cannot make another valid one for its network by changing the suffix, so an ID verifies only
//! if the service minted it whole. A cookie is reused only while it verifies for the client
//! sending it (compared in constant time), so a cookie copied to another network, or edited
//! anywhere, is replaced on the next page navigation.
//!
//! Everything here is pure: the adapter passes in the request headers, the client address,
//! the secret (as bytes) and random bytes, and carries out the [`IdentityPlan`]. See
//! `docs/identity.md`.

use std::fmt::Write as _;
use std::net::IpAddr;

use http::header::{HeaderName, HeaderValue};

use crate::hmac_key::{HmacKey, TAG_LEN};
use crate::publisher::navigation::is_page_navigation;

pub use crate::hmac_key::{WeakSecret, MIN_SECRET_LEN};

/// The cookie that carries the ID.
pub const COOKIE_NAME: &str = "ts-ec";
/// The request header that carries the ID to the origin (a client's own is always dropped).
pub const ORIGIN_HEADER: &str = "x-ts-ec";
/// The cookie's lifetime: one year, in seconds.
pub const MAX_AGE_SECS: u32 = 365 * 24 * 60 * 60;
/// Random letters and digits after the dot.
pub const SUFFIX_LEN: usize = 6;

/// Hex digits of the HMAC part.
const MAC_HEX_LEN: usize = 64;
/// Domain separation for the HMAC's message (see [`mac_message`]).
const MAC_LABEL: &str = "ts-ec/v2";
const SUFFIX_ALPHABET: &[u8; 62] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The HMAC key that makes and checks IDs. `Debug` shows `EdgeIdKey(..)`, never the key.
#[derive(Clone, Debug)]
pub struct EdgeIdKey(HmacKey);

impl EdgeIdKey {
    /// A key from the secret's bytes, used as they are.
    ///
    /// # Errors
    /// [`WeakSecret`] when the secret is shorter than [`MIN_SECRET_LEN`] bytes.
    pub fn new(secret: &[u8]) -> Result<Self, WeakSecret> {
        HmacKey::new(secret).map(EdgeIdKey)
    }

    /// A new ID for a client at `ip`; `random` picks the suffix (8 bytes from the platform's
    /// random source).
    pub fn mint(&self, ip: IpAddr, random: [u8; 8]) -> String {
        // 62^6 ≈ 5.7e10 against 2^64: the modulo bias is below one in 10^8.
        let mut n = u64::from_le_bytes(random);
        let mut suffix = String::with_capacity(SUFFIX_LEN);
        for _ in 0..SUFFIX_LEN {
            suffix.push(char::from(SUFFIX_ALPHABET[(n % 62) as usize]));
            n /= 62;
        }
        let digest = self.0.tag(&[mac_message(ip, &suffix).as_bytes()]);
        let mut id = String::with_capacity(MAC_HEX_LEN + 1 + SUFFIX_LEN);
        for byte in digest {
            let _ = write!(id, "{byte:02x}");
        }
        id.push('.');
        id.push_str(&suffix);
        id
    }

    /// Whether `id` is well-formed and its HMAC part was made with this key for the network of
    /// `ip` and the suffix `id` carries. The comparison is constant-time
    /// ([`HmacKey::verify`]).
    pub fn verify(&self, ip: IpAddr, id: &str) -> bool {
        let Some((mac_hex, suffix)) = well_formed(id) else {
            return false;
        };
        let Some(expected) = decode_hex(mac_hex) else {
            return false;
        };
        self.0
            .verify(&[mac_message(ip, suffix).as_bytes()], &expected)
    }
}

/// What the HMAC of an ID is computed over: a label, the client network written the standard
/// way, and the suffix, separated by newlines (which appear in none of them, so no two
/// (network, suffix) pairs give the same message). The label keeps these MACs apart from the
/// first format, whose message was the network alone: IDs minted before the suffix was covered
/// no longer verify.
fn mac_message(ip: IpAddr, suffix: &str) -> String {
    format!("{MAC_LABEL}\n{}\n{suffix}", client_network(ip))
}

/// Whether `id` has the form of an edge ID, `<64 lowercase hex>.<6 letters or digits>`, whoever
/// made it. Only the form: [`EdgeIdKey::verify`] is what says the service minted it. Other
/// features keyed by edge ID (partner ID sync, `crate::ids`) refuse anything else before
/// looking anything up.
pub fn is_well_formed(id: &str) -> bool {
    well_formed(id).is_some()
}

/// The HMAC part and the suffix of `id` when `id` has the form
/// `<64 lowercase hex>.<6 letters or digits>`.
fn well_formed(id: &str) -> Option<(&str, &str)> {
    let (mac, suffix) = id.split_once('.')?;
    let hex =
        mac.len() == MAC_HEX_LEN && mac.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let suffix_ok = suffix.len() == SUFFIX_LEN && suffix.bytes().all(|b| b.is_ascii_alphanumeric());
    (hex && suffix_ok).then_some((mac, suffix))
}

fn decode_hex(hex: &str) -> Option<[u8; TAG_LEN]> {
    let mut out = [0u8; TAG_LEN];
    for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
        let digit = |b: u8| (b as char).to_digit(16);
        *out.get_mut(i)? = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
}

/// What the ID is bound to: an IPv4 address whole (also when written IPv4-mapped, `::ffff:a.b.c.d`),
/// an IPv6 address cut to its /64 (the rest often changes for privacy within one network).
pub fn client_network(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
    }
}

/// What the identity feature needs from a request's headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFacts {
    /// A page navigation: `Sec-Fetch-Dest: document`, or no `Sec-Fetch-*` header and an
    /// `Accept` that names `text/html`.
    pub navigation: bool,
    /// The reader's consent decision withdraws the edge ID (`consent::Decision::withdraw`,
    /// which weighs `Sec-GPC` with every other signal): no ID at all, and a cookie sent is
    /// expired. Not a header: [`from_headers`](Self::from_headers) leaves it `false` and the
    /// caller sets it from the decision, so no second reading of `Sec-GPC` can disagree.
    pub withdrawn: bool,
    /// Every `ts-ec` value in the `Cookie` headers, in order.
    pub cookies: Vec<String>,
}

impl RequestFacts {
    /// Reads the facts from the request's headers.
    pub fn from_headers<'h>(
        headers: impl IntoIterator<Item = (&'h HeaderName, &'h HeaderValue)>,
    ) -> Self {
        let headers: Vec<(&str, &[u8])> = headers
            .into_iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes()))
            .collect();
        let mut facts = RequestFacts {
            navigation: is_page_navigation(headers.iter().copied()),
            ..RequestFacts::default()
        };
        for (name, value) in headers {
            if name == "cookie" {
                facts.cookies.extend(cookie_values(value));
            }
        }
        facts
    }

    /// Whether the request could have an edge ID at all: it is a navigation (which may get a
    /// new one) or it carries a `ts-ec` cookie (to check). Any other request gets none, so
    /// neither the key nor the reader's consent is needed for it.
    pub fn may_have_id(&self) -> bool {
        self.navigation || !self.cookies.is_empty()
    }
}

/// The `ts-ec` values in one `Cookie` header (`a=1; ts-ec=…; b=2`).
fn cookie_values(header: &[u8]) -> impl Iterator<Item = String> + '_ {
    header.split(|&b| b == b';').filter_map(|pair| {
        let pair = pair.trim_ascii();
        let eq = pair.iter().position(|&b| b == b'=')?;
        (pair[..eq].trim_ascii() == COOKIE_NAME.as_bytes())
            .then(|| String::from_utf8_lossy(pair[eq + 1..].trim_ascii()).into_owned())
    })
}

/// What to do with the `ts-ec` cookie on the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CookieAction {
    /// Nothing: the client's cookie is valid, or no ID applies.
    Leave,
    /// Set this new ID, if the response is a page ([`is_page_response`]).
    SetOnPage(String),
}

/// The identity decisions for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityPlan {
    /// The ID sent to the origin in [`ORIGIN_HEADER`].
    pub forward: Option<String>,
    /// What the response does with the cookie.
    pub cookie: CookieAction,
    /// The ID `GET /_ts/ec` answers: the client's cookie when it verifies.
    pub valid_cookie: Option<String>,
}

impl IdentityPlan {
    /// No ID, nothing to set: the feature is off, or the request needs none.
    pub const NONE: IdentityPlan = IdentityPlan {
        forward: None,
        cookie: CookieAction::Leave,
        valid_cookie: None,
    };
}

/// Whether the response to this request, whatever its route, expires the client's `ts-ec`
/// cookie: a `ts-ec` cookie sent, and consent `withdrawn` (asked only then: most requests
/// carry no such cookie, and need no decision). Decided once per request and applied where
/// every response's headers leave, not by each route (the adapter's `leaving::stamp`).
pub fn expires_cookie(facts: &RequestFacts, withdrawn: impl FnOnce() -> bool) -> bool {
    !facts.cookies.is_empty() && withdrawn()
}

/// Decides the ID for a request.
///
/// * Consent [`withdrawn`](RequestFacts::withdrawn): no ID, and the key is not read. (The expiry of a cookie the client still
///   sends is not the plan's but every response's: [`expires_cookie`].)
/// * A `ts-ec` cookie that verifies for `ip` is reused as it is and forwarded.
/// * Otherwise a page navigation gets a new ID (forwarded, and set if the response is a page);
///   any other request gets none. The key is read only when a cookie must be checked or an ID
///   made, and `random` only when an ID is made.
///
/// # Errors
/// Whatever `key` or `random` returns: the caller logs it and goes on without an ID.
pub fn plan<E>(
    facts: &RequestFacts,
    ip: Option<IpAddr>,
    key: impl FnOnce() -> Result<EdgeIdKey, E>,
    random: impl FnOnce() -> Result<[u8; 8], E>,
) -> Result<IdentityPlan, E> {
    if facts.withdrawn {
        return Ok(IdentityPlan::NONE);
    }
    let Some(ip) = ip else {
        return Ok(IdentityPlan::NONE);
    };
    if !facts.may_have_id() {
        return Ok(IdentityPlan::NONE);
    }
    let key = key()?;
    if let Some(valid) = facts.cookies.iter().find(|c| key.verify(ip, c)) {
        return Ok(IdentityPlan {
            forward: Some(valid.clone()),
            cookie: CookieAction::Leave,
            valid_cookie: Some(valid.clone()),
        });
    }
    if !facts.navigation {
        return Ok(IdentityPlan::NONE);
    }
    let id = key.mint(ip, random()?);
    Ok(IdentityPlan {
        forward: Some(id.clone()),
        cookie: CookieAction::SetOnPage(id),
        valid_cookie: None,
    })
}

/// A page: a `2xx` response whose `Content-Type` is `text/html`.
pub fn is_page_response(status: u16, content_type: Option<&str>) -> bool {
    let essence = content_type
        .and_then(|t| t.split(';').next())
        .map(str::trim);
    (200..300).contains(&status) && essence.is_some_and(|e| e.eq_ignore_ascii_case("text/html"))
}

/// The `Set-Cookie` value for `id`: host-only when `cookie_domain` is empty.
pub fn set_cookie(id: &str, cookie_domain: &str) -> String {
    cookie_line(id, MAX_AGE_SECS, cookie_domain)
}

/// The `Set-Cookie` value that expires the cookie (same `Domain` and `Path`, so it replaces
/// the one set).
pub fn expire_cookie(cookie_domain: &str) -> String {
    cookie_line("", 0, cookie_domain)
}

fn cookie_line(value: &str, max_age: u32, cookie_domain: &str) -> String {
    let mut line = format!("{COOKIE_NAME}={value}");
    if !cookie_domain.is_empty() {
        let _ = write!(line, "; Domain={cookie_domain}");
    }
    let _ = write!(
        line,
        "; Path=/; Secure; SameSite=Lax; Max-Age={max_age}; HttpOnly"
    );
    line
}

/// Makes a response that carries our `Set-Cookie` unfit for shared caches, so no other client
/// gets this client's ID from a cache:
///
/// * `Cache-Control`: kept when it already says `no-store` or (unqualified) `private`;
///   otherwise `private` is added, and `public`, `s-maxage` and qualified `private="…"` (which
///   speak to shared caches only) go. Other directives stay: the browser may still cache its
///   own copy as the origin allowed.
/// * `CDN-Cache-Control` and `Surrogate-Control`, which CDNs read before `Cache-Control`, go.
pub fn keep_out_of_shared_caches(headers: &mut Vec<(HeaderName, HeaderValue)>) {
    headers.retain(|(n, _)| !matches!(n.as_str(), "cdn-cache-control" | "surrogate-control"));
    let lines: Vec<Vec<u8>> = headers
        .iter()
        .filter(|(n, _)| n == http::header::CACHE_CONTROL)
        .map(|(_, v)| v.as_bytes().to_vec())
        .collect();
    let directives: Vec<&[u8]> = lines.iter().flat_map(|l| directives(l)).collect();
    let name_of = |d: &[u8]| {
        let end = d.iter().position(|&b| b == b'=').unwrap_or(d.len());
        d[..end].trim_ascii().to_ascii_lowercase()
    };
    let strict = directives
        .iter()
        .any(|d| d.eq_ignore_ascii_case(b"no-store") || d.eq_ignore_ascii_case(b"private"));
    if strict {
        return;
    }
    let mut value = b"private".to_vec();
    for d in directives {
        if matches!(name_of(d).as_slice(), b"public" | b"s-maxage" | b"private") {
            continue;
        }
        value.extend_from_slice(b", ");
        value.extend_from_slice(d);
    }
    headers.retain(|(n, _)| n != http::header::CACHE_CONTROL);
    // Directives came from valid header values joined by ", ": still a valid value.
    if let Ok(v) = HeaderValue::from_bytes(&value) {
        headers.push((http::header::CACHE_CONTROL, v));
    }
}

/// The comma-separated directives of one `Cache-Control` value, trimmed, empty ones skipped;
/// commas inside quoted strings (`no-cache="a, b"`) do not split.
fn directives(value: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, &b) in value.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                out.push(value[start..i].trim_ascii());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(value[start..].trim_ascii());
    out.retain(|d| !d.is_empty());
    out
}

/// The `GET /_ts/ec` body: `{"ec":"<id>"}` or `{"ec":null}`.
pub fn endpoint_body(id: Option<&str>) -> String {
    // Only well-formed IDs (hex, a dot, letters and digits) are ever answered: nothing to
    // escape.
    match id.filter(|id| well_formed(id).is_some()) {
        Some(id) => format!("{{\"ec\":\"{id}\"}}\n"),
        None => "{\"ec\":null}\n".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sha2::Sha256;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const SECRET: &[u8] = b"test secret, at least sixteen bytes";

    fn key() -> EdgeIdKey {
        EdgeIdKey::new(SECRET).unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn facts(list: &[(&str, &str)]) -> RequestFacts {
        let headers: Vec<(HeaderName, HeaderValue)> = list
            .iter()
            .map(|(n, v)| {
                (
                    HeaderName::from_bytes(n.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect();
        RequestFacts {
            // These tests play a consent decision that withdraws the ID exactly when the list
            // holds `Sec-GPC: 1` (the decision's own reading of it is tested in `consent`, and
            // the header's parsing in the adapter's consent phase).
            withdrawn: list.contains(&("sec-gpc", "1")),
            ..RequestFacts::from_headers(headers.iter().map(|(n, v)| (n, v)))
        }
    }

    /// HMAC-SHA256 computed independently (RFC 2104 over `sha2` directly), as the oracle for
    /// the ID's HMAC part.
    fn reference_hmac(secret: &[u8], message: &[u8]) -> String {
        use sha2::Digest;
        let mut block = [0u8; 64];
        if secret.len() > 64 {
            block[..32].copy_from_slice(&Sha256::digest(secret));
        } else {
            block[..secret.len()].copy_from_slice(secret);
        }
        let pad = |x: u8| block.iter().map(|b| b ^ x).collect::<Vec<u8>>();
        let inner = Sha256::new()
            .chain_update(pad(0x36))
            .chain_update(message)
            .finalize();
        let outer = Sha256::new()
            .chain_update(pad(0x5c))
            .chain_update(inner)
            .finalize();
        outer.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn the_id_is_the_hmac_of_the_client_network_and_the_suffix_then_the_suffix() {
        let id = key().mint(ip("203.0.113.9"), [7; 8]);
        let (mac, suffix) = id.split_once('.').unwrap();
        assert_eq!(suffix.len(), SUFFIX_LEN);
        assert!(suffix.bytes().all(|b| b.is_ascii_alphanumeric()));
        let message = format!("ts-ec/v2\n203.0.113.9\n{suffix}");
        assert_eq!(mac, reference_hmac(SECRET, message.as_bytes()));
        // IPv6: the message is the /64, so the interface half does not matter.
        let id6 = key().mint(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), [0; 8]);
        let message6 = "ts-ec/v2\n2001:db8:1:2::\n000000";
        assert_eq!(
            id6,
            format!("{}.000000", reference_hmac(SECRET, message6.as_bytes()))
        );
        // RFC 4231 test case 2 checks the HMAC itself against published values.
        assert_eq!(
            reference_hmac(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn suffixes_come_from_the_random_bytes() {
        let a = key().mint(ip("192.0.2.1"), [1; 8]);
        let b = key().mint(ip("192.0.2.1"), [2; 8]);
        assert_ne!(a[MAC_HEX_LEN..], b[MAC_HEX_LEN..]);
        // The HMAC covers the suffix, so it differs too.
        assert_ne!(a[..MAC_HEX_LEN], b[..MAC_HEX_LEN]);
        assert!(key().mint(ip("192.0.2.1"), [0; 8]).ends_with(".000000"));
    }

    /// The first format's IDs (the HMAC of the network alone, then a suffix) no longer verify:
    /// anyone behind the network could change their suffix.
    #[test]
    fn ids_of_the_first_format_no_longer_verify() {
        let old = format!("{}.Ab3xY9", reference_hmac(SECRET, b"192.0.2.1"));
        assert!(!key().verify(ip("192.0.2.1"), &old));
    }

    #[test]
    fn ipv6_is_cut_to_its_64_and_mapped_ipv4_is_ipv4() {
        assert_eq!(
            client_network(ip("2001:db8:aa:bb:1:2:3:4")),
            ip("2001:db8:aa:bb::")
        );
        assert_eq!(
            client_network(ip("::ffff:198.51.100.7")),
            ip("198.51.100.7")
        );
        assert_eq!(client_network(ip("198.51.100.7")), ip("198.51.100.7"));
        let k = key();
        let id = k.mint(ip("2001:db8:aa:bb::1"), [3; 8]);
        assert!(k.verify(ip("2001:db8:aa:bb:ffff:ffff:ffff:ffff"), &id));
        assert!(!k.verify(ip("2001:db8:aa:bc::1"), &id));
        let v4 = k.mint(ip("198.51.100.7"), [3; 8]);
        assert!(k.verify(ip("::ffff:198.51.100.7"), &v4));
        assert!(!k.verify(ip("198.51.100.8"), &v4));
    }

    #[test]
    fn short_secrets_are_refused_without_showing_them() {
        let e = EdgeIdKey::new(b"short").unwrap_err();
        assert_eq!(e.len, 5);
        assert!(!e.to_string().contains("short"));
        assert!(EdgeIdKey::new(&[0; MIN_SECRET_LEN]).is_ok());
        assert_eq!(format!("{:?}", key()), "EdgeIdKey(..)");
    }

    fn any_ip() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            any::<u32>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(n))),
            any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n))),
        ]
    }

    proptest! {
        /// Verification accepts exactly the IDs made for that client network and secret.
        #[test]
        fn verify_accepts_exactly_what_mint_made_for_that_client(
            a in any_ip(), b in any_ip(), random in any::<[u8; 8]>(),
            other_random in any::<[u8; 8]>(),
            other_secret in proptest::collection::vec(any::<u8>(), 16..80),
        ) {
            let k = key();
            let id = k.mint(a, random);
            prop_assert!(k.verify(a, &id));
            prop_assert_eq!(k.verify(b, &id), client_network(a) == client_network(b));
            let other = EdgeIdKey::new(&other_secret).unwrap();
            prop_assert_eq!(other.verify(a, &id), other_secret == SECRET);
            // Any single changed character, in the HMAC part or the suffix, fails.
            for i in (0..id.len()).filter(|&i| i != MAC_HEX_LEN) {
                for replacement in SUFFIX_ALPHABET.iter().chain(b".") {
                    let mut bytes = id.clone().into_bytes();
                    if bytes[i] == *replacement {
                        continue;
                    }
                    bytes[i] = *replacement;
                    prop_assert!(!k.verify(a, &String::from_utf8(bytes).unwrap()));
                }
            }
            // Any other suffix with the same HMAC part fails.
            let (mac, _) = id.split_once('.').unwrap();
            let other_suffix = k.mint(a, other_random);
            let spliced = format!("{mac}.{}", &other_suffix[MAC_HEX_LEN + 1..]);
            prop_assert_eq!(k.verify(a, &spliced), spliced == id);
            prop_assert!(!k.verify(a, &id[..id.len() - 1]));
            let longer = format!("{id}x");
            prop_assert!(!k.verify(a, &longer));
            prop_assert!(!k.verify(a, &id.to_ascii_uppercase()));
        }

        /// Arbitrary cookie values never verify and never panic.
        #[test]
        fn arbitrary_values_do_not_verify(value in ".{0,90}", a in any_ip()) {
            prop_assert!(!key().verify(a, &value));
        }
    }

    #[test]
    fn navigations_are_document_destinations_or_html_accepts_without_sec_fetch() {
        let nav = |h: &[(&str, &str)]| facts(h).navigation;
        assert!(nav(&[("sec-fetch-dest", "document")]));
        assert!(nav(&[("sec-fetch-dest", "Document"), ("accept", "*/*")]));
        assert!(!nav(&[
            ("sec-fetch-dest", "empty"),
            ("accept", "text/html")
        ]));
        assert!(!nav(&[
            ("sec-fetch-dest", "image"),
            ("accept", "text/html")
        ]));
        assert!(!nav(&[("sec-fetch-dest", "iframe")]));
        // A Sec-Fetch header without Dest is a browser that sent Fetch Metadata: not a page.
        assert!(!nav(&[("sec-fetch-mode", "cors"), ("accept", "text/html")]));
        assert!(nav(&[(
            "accept",
            "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
        )]));
        assert!(nav(&[
            ("accept", "application/json"),
            ("accept", "TEXT/HTML")
        ]));
        assert!(!nav(&[("accept", "text/html;q=0, */*")]));
        assert!(!nav(&[("accept", "text/html;q=0.0")]));
        assert!(nav(&[("accept", "text/html;q=0.1")]));
        assert!(!nav(&[("accept", "text/htmlx, */*")]));
        assert!(!nav(&[("accept", "image/avif,image/webp,*/*")]));
        assert!(!nav(&[]));
    }

    #[test]
    fn cookies_are_read_and_sec_gpc_is_left_to_the_consent_decision() {
        let f = facts(&[
            ("sec-gpc", " 1 "),
            ("cookie", "a=1; ts-ec=abc.def ;b=2"),
            ("cookie", "ts-ec=second; ts-ecx=no; xts-ec=no"),
        ]);
        assert_eq!(f.cookies, ["abc.def", "second"]);
        // The header alone withdraws nothing: only the decision does.
        assert!(!f.withdrawn);
    }

    type Outcome = Result<IdentityPlan, &'static str>;

    fn run(list: &[(&str, &str)], from: &str) -> Outcome {
        plan(&facts(list), Some(ip(from)), || Ok(key()), || Ok([9; 8]))
    }

    const NAV: (&str, &str) = ("sec-fetch-dest", "document");
    const XHR: (&str, &str) = ("sec-fetch-dest", "empty");

    #[test]
    fn a_first_navigation_gets_a_new_id_forwarded_and_set() {
        let p = run(&[NAV], "192.0.2.1").unwrap();
        let id = key().mint(ip("192.0.2.1"), [9; 8]);
        assert_eq!(p.forward.as_deref(), Some(id.as_str()));
        assert_eq!(p.cookie, CookieAction::SetOnPage(id));
        assert_eq!(p.valid_cookie, None);
    }

    #[test]
    fn a_valid_cookie_is_reused_and_a_tampered_one_replaced() {
        let id = key().mint(ip("192.0.2.1"), [5; 8]);
        let cookie = format!("ts-ec={id}");
        for request in [&[NAV, ("cookie", &cookie)][..], &[XHR, ("cookie", &cookie)]] {
            let p = run(request, "192.0.2.1").unwrap();
            assert_eq!(p.forward.as_deref(), Some(id.as_str()));
            assert_eq!(p.cookie, CookieAction::Leave);
            assert_eq!(p.valid_cookie.as_deref(), Some(id.as_str()));
        }
        // Another network, or an edited HMAC part: replaced on a navigation, dropped otherwise.
        let tampered = format!(
            "ts-ec={}{}",
            if id.starts_with('0') { "1" } else { "0" },
            &id[1..]
        );
        // A changed suffix: the same HMAC part, so it would pass a check of the network alone.
        let last = if id.ends_with('a') { 'b' } else { 'a' };
        let resuffixed = format!("ts-ec={}{last}", &id[..id.len() - 1]);
        for (cookie, from) in [
            (&cookie, "192.0.2.2"),
            (&tampered, "192.0.2.1"),
            (&resuffixed, "192.0.2.1"),
        ] {
            let p = run(&[NAV, ("cookie", cookie)], from).unwrap();
            let fresh = key().mint(ip(from), [9; 8]);
            assert_eq!(p.cookie, CookieAction::SetOnPage(fresh.clone()));
            assert_eq!(p.forward, Some(fresh));
            assert_eq!(
                run(&[XHR, ("cookie", cookie)], from).unwrap(),
                IdentityPlan::NONE
            );
        }
    }

    #[test]
    fn gpc_means_no_id_and_an_expired_cookie() {
        let id = key().mint(ip("192.0.2.1"), [5; 8]);
        let cookie = format!("ts-ec={id}");
        let gpc = facts(&[NAV, ("sec-gpc", "1"), ("cookie", &cookie)]);
        let p = plan(
            &gpc,
            Some(ip("192.0.2.1")),
            || Err("the key must not be read"),
            || Err("no randomness either"),
        )
        .unwrap();
        assert_eq!(p, IdentityPlan::NONE);
        let expires = |f: &RequestFacts| expires_cookie(f, || f.withdrawn);
        assert!(expires(&gpc));
        // Any ts-ec value, valid or not, is expired: the client asked for none.
        assert!(expires(&facts(&[
            ("sec-gpc", "1"),
            ("cookie", "ts-ec=junk")
        ])));
        let no_cookie = facts(&[NAV, ("sec-gpc", "1")]);
        assert_eq!(
            run(&[NAV, ("sec-gpc", "1")], "192.0.2.1").unwrap(),
            IdentityPlan::NONE
        );
        assert!(!expires(&no_cookie));
        // Without a `ts-ec` cookie the decision is never asked for.
        assert!(!expires_cookie(&no_cookie, || panic!(
            "the decision was asked for"
        )));
        assert!(!expires(&facts(&[("cookie", &cookie)])));
        assert!(!expires(&facts(&[("sec-gpc", "0"), ("cookie", &cookie)])));
        assert!(!expires(&facts(&[
            ("sec-gpc", "1"),
            ("cookie", "ts-ecx=1")
        ])));
    }

    #[test]
    fn non_navigations_without_a_cookie_read_nothing() {
        for request in [&[XHR][..], &[("accept", "image/webp,*/*")], &[]] {
            let p = plan(
                &facts(request),
                Some(ip("192.0.2.1")),
                || Err("the key must not be read"),
                || Err("no randomness"),
            );
            assert_eq!(p, Ok(IdentityPlan::NONE), "{request:?}");
        }
        // No client address: no ID.
        let p = plan(&facts(&[NAV]), None, || Err("no key"), || Err("no random"));
        assert_eq!(p, Ok(IdentityPlan::NONE));
    }

    #[test]
    fn key_and_random_failures_reach_the_caller() {
        let f = facts(&[NAV]);
        let at = Some(ip("192.0.2.1"));
        assert_eq!(
            plan(&f, at, || Err("no secret"), || Ok([0; 8])),
            Err("no secret")
        );
        assert_eq!(
            plan(&f, at, || Ok(key()), || Err("no random")),
            Err("no random")
        );
    }

    #[test]
    fn only_2xx_html_is_a_page() {
        assert!(is_page_response(200, Some("text/html; charset=utf-8")));
        assert!(is_page_response(203, Some("TEXT/HTML")));
        assert!(!is_page_response(304, Some("text/html")));
        assert!(!is_page_response(404, Some("text/html")));
        assert!(!is_page_response(302, Some("text/html")));
        assert!(!is_page_response(200, Some("application/json")));
        assert!(!is_page_response(200, Some("text/x-component")));
        assert!(!is_page_response(200, None));
    }

    #[test]
    fn cookie_lines_have_exactly_the_attributes() {
        assert_eq!(
            set_cookie("abc.XYZ123", ""),
            "ts-ec=abc.XYZ123; Path=/; Secure; SameSite=Lax; Max-Age=31536000; HttpOnly"
        );
        assert_eq!(
            set_cookie("abc.XYZ123", ".pub.example"),
            "ts-ec=abc.XYZ123; Domain=.pub.example; Path=/; Secure; SameSite=Lax; \
             Max-Age=31536000; HttpOnly"
        );
        assert_eq!(
            expire_cookie(".pub.example"),
            "ts-ec=; Domain=.pub.example; Path=/; Secure; SameSite=Lax; Max-Age=0; HttpOnly"
        );
    }

    fn cache(list: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut headers: Vec<(HeaderName, HeaderValue)> = list
            .iter()
            .map(|(n, v)| {
                (
                    HeaderName::from_bytes(n.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect();
        keep_out_of_shared_caches(&mut headers);
        headers
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    fn cc(list: &[(&str, &str)]) -> Vec<String> {
        cache(list)
            .into_iter()
            .filter(|(n, _)| n == "cache-control")
            .map(|(_, v)| v)
            .collect()
    }

    #[test]
    fn responses_with_our_cookie_stay_out_of_shared_caches() {
        assert_eq!(cc(&[]), ["private"]);
        assert_eq!(
            cc(&[("cache-control", "public, max-age=600, s-maxage=3600")]),
            ["private, max-age=600"]
        );
        assert_eq!(
            cc(&[
                ("cache-control", "max-age=60"),
                ("cache-control", "must-revalidate")
            ]),
            ["private, max-age=60, must-revalidate"]
        );
        assert_eq!(
            cc(&[("cache-control", "private=\"set-cookie, x\", max-age=5")]),
            ["private, max-age=5"]
        );
        assert_eq!(
            cc(&[("cache-control", "no-cache=\"a, public\", S-MAXAGE=9")]),
            ["private, no-cache=\"a, public\""]
        );
        // Already strict: untouched.
        assert_eq!(cc(&[("cache-control", "no-store")]), ["no-store"]);
        assert_eq!(
            cc(&[("cache-control", "Private, max-age=0")]),
            ["Private, max-age=0"]
        );
        let rest = cache(&[
            ("cdn-cache-control", "max-age=600"),
            ("surrogate-control", "max-age=600"),
            ("content-type", "text/html"),
        ]);
        assert_eq!(
            rest,
            [
                ("content-type".to_owned(), "text/html".to_owned()),
                ("cache-control".to_owned(), "private".to_owned())
            ]
        );
    }

    #[test]
    fn the_endpoint_answers_the_id_or_null() {
        let id = key().mint(ip("192.0.2.1"), [5; 8]);
        assert_eq!(endpoint_body(Some(&id)), format!("{{\"ec\":\"{id}\"}}\n"));
        assert_eq!(endpoint_body(None), "{\"ec\":null}\n");
        assert_eq!(endpoint_body(Some("\"><script>")), "{\"ec\":null}\n");
        let parsed: serde_json::Value = serde_json::from_str(&endpoint_body(Some(&id))).unwrap();
        assert_eq!(parsed["ec"], id.as_str());
    }
}
