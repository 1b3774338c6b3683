//! What may be stored, and for how long.
//!
//! A rewritten page is stored only when it is the same for every reader: the request carries
//! no credentials, the origin says a shared cache may keep it for a positive time, sets no
//! cookie and does not vary by cookie. Anything else passes, with the reason in `x-ts-cache`.
//!
//! Freshness comes from `Surrogate-Control` when the origin sends one (it speaks to edge
//! caches only, as on Fastly), else from `Cache-Control`'s `s-maxage`, else `max-age`. There
//! is no heuristic freshness: a page without an explicit lifetime is not stored, so an origin
//! that says nothing keeps today's behaviour.

use std::fmt;
use std::time::Duration;

/// Longest lifetime stored, whatever the origin says: a year, as for any HTTP cache.
pub const MAX_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);

/// Most `Vary` names kept for one entry: each is a dimension of the cache; an origin that
/// names more is not cached rather than multiplied without bound.
pub const MAX_VARY: usize = 16;

/// Why a response is neither served from nor stored in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassWhy {
    /// Only `GET` is cached (a `HEAD`, `POST`, … goes to the origin as before).
    Method,
    /// The request carries `Authorization`: its answer may be the user's own.
    Authorization,
    /// The request carries the reader's own cookies (any but `ts-ec`), and the answer (or the
    /// stored entry) was not explicitly shared with every reader (`public` or `s-maxage`):
    /// see `super::shared`. Never remembered.
    Cookie,
    /// A status a shared cache should not keep for a rewritten page.
    Status,
    /// A `206`, `304`, `412` or `416`: the answer to one request's range or preconditions,
    /// not a description of the page. A fill never asks for one
    /// ([`super::fill::FILL_DROPPED`]), so it says nothing about the page, and it is never
    /// remembered: one request must not switch the page's cache off.
    RequestStatus,
    /// The origin answered with a `5xx`: not stored, and remembered only briefly
    /// ([`REMEMBER_SERVER_ERROR`]), since it is the origin's state, not the page's.
    ServerError,
    /// The origin sets a cookie: the response is someone's.
    SetCookie,
    /// `Vary: Cookie`: one copy per reader.
    VaryCookie,
    /// `Vary: *`: never the same twice.
    VaryStar,
    /// More than [`MAX_VARY`] `Vary` names, or one that is not a header name.
    VaryUnusable,
    /// `Cache-Control: private`.
    Private,
    /// `no-store` in `Cache-Control` or `Surrogate-Control`.
    NoStore,
    /// `no-cache`: every use needs the origin's approval.
    NoCache,
    /// No positive lifetime (no `max-age`, `s-maxage` or `Surrogate-Control: max-age`, or an
    /// `Age` past it).
    NoTtl,
    /// A freshness header that is not text.
    Unreadable,
    /// The body is not rewritten: the platform streams it untouched, not stored by us.
    NotRewritten,
    /// The headers to store exceed the bound of [`super::stored::MAX_BLOCK_BYTES`].
    HeadersTooLarge,
    /// The cache could not be read or written (logged); served around it.
    CacheError,
    /// The origin gave no usable response (or, in a buffered build, its body failed before
    /// the page was stored).
    OriginError,
    /// The entry is stale past `stale-while-revalidate`, within `stale-if-error`, and another
    /// request is refreshing it (the core cache gives that obligation to one request and the
    /// stale copy to the rest): this request asks the origin itself, stores nothing, and gets
    /// the stale copy only if the origin fails.
    Refreshing,
}

/// How long a response-side pass is remembered for its key ("hit-for-pass"): while it is,
/// requests for the key go straight to the origin instead of waiting, one after another, for
/// the request ahead of them to find out again that the page cannot be stored.
pub const REMEMBER_PASS: Duration = Duration::from_secs(60);

/// How long a pass for an origin's `5xx` is remembered ([`PassWhy::ServerError`]): long enough
/// that requests during an outage do not queue behind each other, short enough that the page
/// is cached again within seconds of the origin's recovery (a `5xx` says nothing about the
/// page itself).
pub const REMEMBER_SERVER_ERROR: Duration = Duration::from_secs(5);

impl PassWhy {
    /// Every reason.
    pub const ALL: [PassWhy; 20] = [
        PassWhy::Method,
        PassWhy::Authorization,
        PassWhy::Cookie,
        PassWhy::Status,
        PassWhy::RequestStatus,
        PassWhy::ServerError,
        PassWhy::SetCookie,
        PassWhy::VaryCookie,
        PassWhy::VaryStar,
        PassWhy::VaryUnusable,
        PassWhy::Private,
        PassWhy::NoStore,
        PassWhy::NoCache,
        PassWhy::NoTtl,
        PassWhy::Unreadable,
        PassWhy::NotRewritten,
        PassWhy::HeadersTooLarge,
        PassWhy::CacheError,
        PassWhy::OriginError,
        PassWhy::Refreshing,
    ];

    /// How long the pass is remembered for the key, if at all: [`REMEMBER_PASS`] when the
    /// origin's answer decided it, [`REMEMBER_SERVER_ERROR`] for an origin's `5xx`; `None` for
    /// a request-side reason (it never reaches the cache), for a failure without an answer,
    /// and for a status that answers one request rather than describes the page
    /// ([`PassWhy::RequestStatus`]).
    pub fn remembered_for(self) -> Option<Duration> {
        match self {
            PassWhy::Method
            | PassWhy::Authorization
            | PassWhy::Cookie
            | PassWhy::RequestStatus
            | PassWhy::CacheError
            | PassWhy::OriginError
            | PassWhy::Refreshing => None,
            PassWhy::ServerError => Some(REMEMBER_SERVER_ERROR),
            _ => Some(REMEMBER_PASS),
        }
    }

    /// The reason for its [`PassWhy::as_str`] name.
    pub fn from_name(name: &str) -> Option<PassWhy> {
        PassWhy::ALL.into_iter().find(|why| why.as_str() == name)
    }

    /// The reason as written in `x-ts-cache: PASS(reason)`.
    pub fn as_str(self) -> &'static str {
        match self {
            PassWhy::Method => "method",
            PassWhy::Authorization => "authorization",
            PassWhy::Cookie => "cookie",
            PassWhy::Status => "status",
            PassWhy::RequestStatus => "request-status",
            PassWhy::ServerError => "server-error",
            PassWhy::SetCookie => "set-cookie",
            PassWhy::VaryCookie => "vary-cookie",
            PassWhy::VaryStar => "vary-star",
            PassWhy::VaryUnusable => "vary-unusable",
            PassWhy::Private => "private",
            PassWhy::NoStore => "no-store",
            PassWhy::NoCache => "no-cache",
            PassWhy::NoTtl => "no-ttl",
            PassWhy::Unreadable => "unreadable",
            PassWhy::NotRewritten => "not-rewritten",
            PassWhy::HeadersTooLarge => "headers-too-large",
            PassWhy::CacheError => "cache-error",
            PassWhy::OriginError => "origin-error",
            PassWhy::Refreshing => "refreshing",
        }
    }
}

impl fmt::Display for PassWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a request may use the cache at all (looked up before the origin is asked). `Err`
/// with the reason when it must go to the origin and its answer must not be stored. Streaming
/// and buffered builds both use the cache: a buffered build stores the whole rewritten page
/// and answers with its length (see docs/caching.md).
pub fn request_allows(method: &str, has_authorization: bool) -> Result<(), PassWhy> {
    if method != "GET" {
        return Err(PassWhy::Method);
    }
    if has_authorization {
        return Err(PassWhy::Authorization);
    }
    Ok(())
}

/// How long a stored response lives, as the core cache takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freshness {
    /// The whole lifetime, counted from the origin's generation of the response.
    pub max_age: Duration,
    /// Age the response already had when it arrived (`Age`), part of `max_age`.
    pub initial_age: Duration,
    /// `stale-while-revalidate`: how long past `max_age` a stale copy may still be served
    /// while one request refreshes it.
    pub stale_while_revalidate: Duration,
    /// `stale-if-error`: how long past `max_age` a stale copy is kept to answer when the
    /// origin, asked first, fails (the core cache has no such window of its own: see
    /// [`super::stale`]).
    pub stale_if_error: Duration,
    /// The request headers the origin's `Vary` names (lowercase, each once), for the core
    /// cache's `vary_by` (see [`Freshness::vary_rule`]).
    pub vary: Vec<String>,
}

impl Freshness {
    /// The names to give the core cache's `vary_by`, or `None` when the origin names none:
    /// the core cache refuses an empty rule (Viceroy 0.22 parses the empty list as one empty
    /// header name), so a page without `Vary` is inserted without a rule at all, which is
    /// what "varies by nothing" means to it.
    pub fn vary_rule(&self) -> Option<&[String]> {
        (!self.vary.is_empty()).then_some(self.vary.as_slice())
    }

    /// The two stale windows, as stored with the entry.
    pub fn windows(&self) -> super::stale::StaleWindows {
        super::stale::StaleWindows {
            while_revalidate: self.stale_while_revalidate,
            if_error: self.stale_if_error,
        }
    }
}

/// Statuses a rewritten page may be stored with (RFC 9110's heuristically cacheable ones that
/// carry a body we rewrite).
const STORABLE_STATUSES: [u16; 7] = [200, 203, 300, 301, 308, 404, 410];

/// Statuses that answer one request's range or preconditions (`206 Partial Content`,
/// `304 Not Modified`, `412 Precondition Failed`, `416 Range Not Satisfiable`) rather than
/// describe the resource: [`PassWhy::RequestStatus`].
pub const REQUEST_STATUSES: [u16; 4] = [206, 304, 412, 416];

/// Whether the origin's response (status and headers, names in any case) may be stored, and
/// for how long; otherwise why not.
pub fn response_allows<'h>(
    status: u16,
    headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
) -> Result<Freshness, PassWhy> {
    if (500..600).contains(&status) {
        return Err(PassWhy::ServerError);
    }
    if REQUEST_STATUSES.contains(&status) {
        return Err(PassWhy::RequestStatus);
    }
    if !STORABLE_STATUSES.contains(&status) {
        return Err(PassWhy::Status);
    }
    let mut cache_control = Directives::default();
    let mut surrogate_control = Directives::default();
    let mut surrogate_seen = false;
    let mut vary = Vec::new();
    let mut age = None;
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        let text = || std::str::from_utf8(value).map_err(|_| PassWhy::Unreadable);
        match name.as_str() {
            "set-cookie" => return Err(PassWhy::SetCookie),
            "cache-control" => cache_control.parse(text()?),
            "surrogate-control" => {
                surrogate_seen = true;
                surrogate_control.parse(text()?);
            }
            "vary" => {
                for token in text()?.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                    let token = token.to_ascii_lowercase();
                    if token == "*" {
                        return Err(PassWhy::VaryStar);
                    }
                    if token == "cookie" {
                        return Err(PassWhy::VaryCookie);
                    }
                    if !token.bytes().all(is_tchar) {
                        return Err(PassWhy::VaryUnusable);
                    }
                    if !vary.contains(&token) {
                        vary.push(token);
                    }
                }
            }
            // Several `Age` lines or a bad one: the response is treated as already old.
            "age" => {
                age = Some(
                    match (age, text().ok().and_then(|t| t.trim().parse().ok())) {
                        (None, Some(secs)) => secs,
                        _ => u64::MAX,
                    },
                )
            }
            _ => {}
        }
    }
    if vary.len() > MAX_VARY {
        return Err(PassWhy::VaryUnusable);
    }
    if cache_control.private {
        return Err(PassWhy::Private);
    }
    if cache_control.no_store || surrogate_control.no_store {
        return Err(PassWhy::NoStore);
    }
    if cache_control.no_cache {
        return Err(PassWhy::NoCache);
    }
    let (lifetime, source) = if surrogate_seen && surrogate_control.max_age.is_some() {
        (surrogate_control.max_age, &surrogate_control)
    } else {
        (
            cache_control.s_maxage.or(cache_control.max_age),
            &cache_control,
        )
    };
    let lifetime = lifetime.unwrap_or(0).min(MAX_LIFETIME.as_secs());
    let age = age.unwrap_or(0);
    if lifetime == 0 || age >= lifetime {
        return Err(PassWhy::NoTtl);
    }
    let extra = |v: Option<u64>| Duration::from_secs(v.unwrap_or(0).min(MAX_LIFETIME.as_secs()));
    Ok(Freshness {
        max_age: Duration::from_secs(lifetime),
        initial_age: Duration::from_secs(age),
        stale_while_revalidate: extra(
            source
                .stale_while_revalidate
                .or(cache_control.stale_while_revalidate),
        ),
        stale_if_error: extra(source.stale_if_error.or(cache_control.stale_if_error)),
        vary,
    })
}

/// RFC 9110 `tchar`: what a header name is made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The directives of `Cache-Control` or `Surrogate-Control` that matter here. A directive
/// given twice keeps the smaller value: the cautious reading of a contradiction.
#[derive(Debug, Default)]
struct Directives {
    private: bool,
    no_store: bool,
    no_cache: bool,
    max_age: Option<u64>,
    s_maxage: Option<u64>,
    stale_while_revalidate: Option<u64>,
    stale_if_error: Option<u64>,
}

impl Directives {
    fn parse(&mut self, value: &str) {
        for directive in value.split(',') {
            let (name, argument) = match directive.split_once('=') {
                Some((n, a)) => (n.trim(), Some(a.trim().trim_matches('"'))),
                None => (directive.trim(), None),
            };
            // An argument that is not a number makes the lifetime zero (RFC 9111 4.2.1:
            // an invalid max-age means stale).
            let seconds = || argument.map(|a| a.parse::<u64>().unwrap_or(0)).unwrap_or(0);
            let keep = |slot: &mut Option<u64>, v: u64| {
                *slot = Some(slot.map_or(v, |old: u64| old.min(v)));
            };
            match name.to_ascii_lowercase().as_str() {
                "private" => self.private = true,
                "no-store" => self.no_store = true,
                "no-cache" => self.no_cache = true,
                "max-age" => keep(&mut self.max_age, seconds()),
                "s-maxage" => keep(&mut self.s_maxage, seconds()),
                "stale-while-revalidate" => keep(&mut self.stale_while_revalidate, seconds()),
                "stale-if-error" => keep(&mut self.stale_if_error, seconds()),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn assess(status: u16, headers: &[(&str, &str)]) -> Result<Freshness, PassWhy> {
        response_allows(status, headers.iter().map(|(n, v)| (*n, v.as_bytes())))
    }

    #[test]
    fn reasons_have_distinct_names_that_read_back() {
        for why in PassWhy::ALL {
            assert_eq!(PassWhy::from_name(why.as_str()), Some(why));
            assert_eq!(
                PassWhy::ALL
                    .iter()
                    .filter(|w| w.as_str() == why.as_str())
                    .count(),
                1
            );
        }
        assert_eq!(PassWhy::from_name("nope"), None);
        for why in [PassWhy::SetCookie, PassWhy::NoTtl, PassWhy::Status] {
            assert_eq!(why.remembered_for(), Some(REMEMBER_PASS), "{why}");
        }
        assert_eq!(
            PassWhy::ServerError.remembered_for(),
            Some(REMEMBER_SERVER_ERROR)
        );
        assert!(REMEMBER_SERVER_ERROR < REMEMBER_PASS);
        for why in [
            PassWhy::Cookie,
            PassWhy::OriginError,
            PassWhy::CacheError,
            PassWhy::Refreshing,
            PassWhy::RequestStatus,
        ] {
            assert_eq!(why.remembered_for(), None, "{why}");
        }
    }

    #[test]
    fn requests_with_credentials_or_other_methods_pass() {
        assert_eq!(request_allows("GET", false), Ok(()));
        assert_eq!(request_allows("GET", true), Err(PassWhy::Authorization));
        for method in ["HEAD", "POST", "PUT", "get"] {
            assert_eq!(
                request_allows(method, false),
                Err(PassWhy::Method),
                "{method}"
            );
        }
    }

    #[test]
    fn shared_lifetimes_in_their_order_of_precedence() {
        let f = assess(200, &[("Cache-Control", "public, max-age=60")]).unwrap();
        assert_eq!(f.max_age, Duration::from_secs(60));
        let f = assess(200, &[("cache-control", "max-age=60, s-maxage=300")]).unwrap();
        assert_eq!(f.max_age, Duration::from_secs(300));
        let f = assess(
            200,
            &[
                ("cache-control", "max-age=60, s-maxage=300"),
                ("surrogate-control", "max-age=3600"),
            ],
        )
        .unwrap();
        assert_eq!(f.max_age, Duration::from_secs(3600));
        // Surrogate-Control without a lifetime leaves Cache-Control's.
        let f = assess(
            200,
            &[
                ("cache-control", "max-age=60"),
                ("surrogate-control", "x=1"),
            ],
        )
        .unwrap();
        assert_eq!(f.max_age, Duration::from_secs(60));
        // The cap.
        let f = assess(200, &[("cache-control", "max-age=999999999999")]).unwrap();
        assert_eq!(f.max_age, MAX_LIFETIME);
    }

    #[test]
    fn stale_directives_and_age() {
        let f = assess(
            200,
            &[
                (
                    "cache-control",
                    "max-age=60, stale-while-revalidate=30, stale-if-error=600",
                ),
                ("age", "10"),
            ],
        )
        .unwrap();
        assert_eq!(f.stale_while_revalidate, Duration::from_secs(30));
        assert_eq!(f.stale_if_error, Duration::from_secs(600));
        assert_eq!(f.initial_age, Duration::from_secs(10));
        assert_eq!(
            assess(200, &[("cache-control", "max-age=60"), ("age", "60")]),
            Err(PassWhy::NoTtl)
        );
        assert_eq!(
            assess(200, &[("cache-control", "max-age=60"), ("age", "x")]),
            Err(PassWhy::NoTtl)
        );
    }

    #[test]
    fn every_reason_to_pass() {
        let ok = ("cache-control", "max-age=60");
        type Case<'a> = (u16, &'a [(&'a str, &'a str)], PassWhy);
        let cases: &[Case] = &[
            (500, &[ok], PassWhy::ServerError),
            (503, &[ok], PassWhy::ServerError),
            (599, &[ok], PassWhy::ServerError),
            (206, &[ok], PassWhy::RequestStatus),
            (304, &[ok], PassWhy::RequestStatus),
            (412, &[ok], PassWhy::RequestStatus),
            (416, &[ok], PassWhy::RequestStatus),
            (302, &[ok], PassWhy::Status),
            (499, &[ok], PassWhy::Status),
            (200, &[ok, ("Set-Cookie", "a=1")], PassWhy::SetCookie),
            (
                200,
                &[ok, ("vary", "Accept-Encoding, Cookie")],
                PassWhy::VaryCookie,
            ),
            (200, &[ok, ("vary", "*")], PassWhy::VaryStar),
            (200, &[ok, ("vary", "a b")], PassWhy::VaryUnusable),
            (
                200,
                &[("cache-control", "private, max-age=60")],
                PassWhy::Private,
            ),
            (
                200,
                &[("cache-control", "private=\"x\", max-age=60")],
                PassWhy::Private,
            ),
            (
                200,
                &[("cache-control", "no-store, max-age=60")],
                PassWhy::NoStore,
            ),
            (
                200,
                &[ok, ("surrogate-control", "no-store")],
                PassWhy::NoStore,
            ),
            (
                200,
                &[("cache-control", "no-cache, max-age=60")],
                PassWhy::NoCache,
            ),
            (200, &[], PassWhy::NoTtl),
            (200, &[("cache-control", "public")], PassWhy::NoTtl),
            (200, &[("cache-control", "max-age=0")], PassWhy::NoTtl),
            (200, &[("cache-control", "max-age=abc")], PassWhy::NoTtl),
            (200, &[("cache-control", "max-age=-5")], PassWhy::NoTtl),
            // A contradiction keeps the cautious value.
            (
                200,
                &[("cache-control", "max-age=60, max-age=0")],
                PassWhy::NoTtl,
            ),
        ];
        for (status, headers, want) in cases {
            assert_eq!(assess(*status, headers), Err(*want), "{status} {headers:?}");
        }
        let bad = [("cache-control", &b"max-age=60\xff"[..])];
        assert_eq!(
            response_allows(200, bad.iter().map(|(n, v)| (*n, *v))),
            Err(PassWhy::Unreadable)
        );
        let many: String = (0..=MAX_VARY).map(|i| format!("h{i},")).collect();
        assert_eq!(
            assess(200, &[ok, ("vary", &many)]),
            Err(PassWhy::VaryUnusable)
        );
    }

    #[test]
    fn vary_names_are_lowercase_and_once() {
        let f = assess(
            200,
            &[
                ("cache-control", "max-age=60"),
                ("vary", "Accept-Encoding, accept-language"),
                ("Vary", "ACCEPT-ENCODING"),
            ],
        )
        .unwrap();
        assert_eq!(f.vary, ["accept-encoding", "accept-language"]);
    }

    #[test]
    fn a_page_without_vary_has_no_vary_rule() {
        let ok = ("cache-control", "max-age=60");
        let none = assess(200, &[ok]).unwrap();
        assert!(none.vary.is_empty());
        assert_eq!(none.vary_rule(), None, "never an empty rule");
        let blank = assess(200, &[ok, ("vary", " , ")]).unwrap();
        assert_eq!(blank.vary_rule(), None);
        let some = assess(200, &[ok, ("vary", "Accept-Language"), ("vary", "X-A")]).unwrap();
        assert_eq!(
            some.vary_rule(),
            Some(&["accept-language".to_owned(), "x-a".to_owned()][..])
        );
    }

    proptest! {
        /// A status that answers one request (range, preconditions) is never stored and never
        /// remembered as a pass, whatever the headers: one request cannot switch a page's
        /// cache off. Every status that is not one of them and not a 5xx keeps its old reason.
        #[test]
        fn request_statuses_are_never_remembered(
            status in 100u16..600,
            max_age in 0u64..1000,
        ) {
            let cc = format!("public, max-age={max_age}");
            let result = assess(status, &[("cache-control", &cc)]);
            if REQUEST_STATUSES.contains(&status) {
                prop_assert_eq!(result, Err(PassWhy::RequestStatus));
                prop_assert_eq!(PassWhy::RequestStatus.remembered_for(), None);
            } else if let Err(why) = result {
                prop_assert_ne!(why, PassWhy::RequestStatus);
            }
            if let Err(why) = assess(status, &[("cache-control", &cc)]) {
                if why.remembered_for().is_some() {
                    prop_assert!(!REQUEST_STATUSES.contains(&status));
                }
            }
        }

        /// Never a panic, and whatever the headers, a stored response has a positive lifetime
        /// within the cap, and none was stored with a cookie or a private/no-store directive.
        #[test]
        fn any_headers(
            status in 100u16..600,
            headers in proptest::collection::vec(
                (prop_oneof![
                    Just("cache-control"), Just("surrogate-control"), Just("vary"),
                    Just("age"), Just("set-cookie"), Just("x-other")
                ], proptest::collection::vec(any::<u8>(), 0..40)),
                0..6,
            )
        ) {
            let result = response_allows(status, headers.iter().map(|(n, v)| (*n, v.as_slice())));
            if let Ok(f) = result {
                prop_assert!(f.max_age > Duration::ZERO && f.max_age <= MAX_LIFETIME);
                prop_assert!(f.initial_age < f.max_age);
                // The core cache refuses an empty vary rule: none is ever given.
                if let Some(rule) = f.vary_rule() {
                    prop_assert!(!rule.is_empty());
                }
                for (name, value) in &headers {
                    prop_assert_ne!(*name, "set-cookie");
                    let text = String::from_utf8_lossy(value).to_ascii_lowercase();
                    let directives: Vec<&str> = text
                        .split(',')
                        .map(|d| d.split('=').next().unwrap_or("").trim())
                        .collect();
                    if *name == "cache-control" {
                        prop_assert!(!directives.contains(&"no-store"));
                        prop_assert!(!directives.contains(&"private"));
                    }
                }
            }
        }
    }
}
