//! Route classification in one place: the service's own endpoints first, then the publisher
//! proxy as the fallback. A new endpoint is one line in [`ROUTES`].
//!
//! A path is classified as a server that normalises it would read it ([`readings`]): its
//! standard reading first (repeated slashes merged, dot segments resolved, escaped unreserved
//! characters decoded; letter case kept), then the bytes as sent, then every other plausible
//! reading. A path is proxied only when no reading of it is one the service answers, so no
//! spelling carries a request for the service's paths (with its `Authorization` or signed
//! query) to the origin.

use std::borrow::Cow;

pub mod readings;

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /_ts/health`: liveness and version, answered without touching the origin.
    Health,
    /// `GET` or `HEAD /static/tsjs=…`: the first-party script (any hash: a stale one gets its
    /// `404` there, not from the origin).
    Script,
    /// `GET /_ts/ec`: the client's edge ID as JSON, for the first-party script.
    EdgeId,
    /// `GET /.well-known/trusted-server.json`: the service version and the public keys that
    /// verify its partner request signatures (a JWKS).
    Discovery,
    /// `POST /verify-signature`: checks a signature against a key ID.
    VerifySignature,
    /// Any method on `/_ts/admin` and everything under it: the admin routes, behind basic
    /// auth, never proxied (see [`crate::admin`]).
    Admin,
    /// `GET /first-party/sign?url=…`: a signed first-party proxy URL for an allowed target.
    FirstPartySign,
    /// `GET /first-party/click?tsurl=…&tsexp=…&tstoken=…`: a redirect to a signed target.
    FirstPartyClick,
    /// `GET /first-party/proxy?tsurl=…&tsexp=…&tstoken=…`: the signed target fetched from the
    /// partner (redirects followed and re-checked), its creative rewritten as it streams.
    FirstPartyProxy,
    /// Any other method or path under `/first-party/`: the service's namespace, answered
    /// `405` or `404` by the service and never proxied (a signed URL's query must not reach
    /// the origin).
    FirstPartyOther,
    /// A path whose bytes and standard reading are no route of the service's, but which some
    /// other plausible reading (`%2F` or a backslash read as a slash, escapes decoded twice)
    /// turns into one: answered `404` by the service, never proxied.
    Reserved,
    /// Everything else: proxied to the publisher origin.
    PublisherProxy,
}

/// A request's route and the path it was routed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed<'a> {
    /// What the request is for.
    pub route: Route,
    /// The reading of the path that decided: its standard reading
    /// ([`readings::normalise`]) when that named the route, else the path as sent. The service's handlers
    /// read this one, so `//_ts/admin/settings` is the settings page (behind the same auth).
    pub path: Cow<'a, str>,
}

/// `(method, exact path, route)`; `None` matches any method.
const ROUTES: &[(Option<&str>, &str, Route)] = &[
    (Some("GET"), "/_ts/health", Route::Health),
    (Some("GET"), "/_ts/ec", Route::EdgeId),
    (
        Some("GET"),
        "/.well-known/trusted-server.json",
        Route::Discovery,
    ),
    (Some("POST"), "/verify-signature", Route::VerifySignature),
    (
        Some("GET"),
        crate::first_party::SIGN_PATH,
        Route::FirstPartySign,
    ),
    (
        Some("GET"),
        crate::first_party::token::CLICK_PATH,
        Route::FirstPartyClick,
    ),
    (
        Some("GET"),
        crate::first_party::token::PROXY_PATH,
        Route::FirstPartyProxy,
    ),
];

/// `(methods, path prefix, route)`, tried after [`ROUTES`]; `None` matches any method.
const PREFIX_ROUTES: &[(Option<&[&str]>, &str, Route)] = &[
    (
        Some(&["GET", "HEAD"]),
        crate::publisher::script::SCRIPT_PATH_PREFIX,
        Route::Script,
    ),
    (None, crate::admin::ADMIN_PREFIX, Route::Admin),
    (None, crate::first_party::PREFIX, Route::FirstPartyOther),
];

impl Route {
    /// The route's name in the access log's `plan=` field (the publisher proxy's plan names
    /// its body's handling instead).
    pub fn name(self) -> &'static str {
        match self {
            Route::Health => "health",
            Route::Script => "script",
            Route::EdgeId => "edge-id",
            Route::Discovery => "discovery",
            Route::VerifySignature => "verify-signature",
            Route::Admin => "admin",
            Route::FirstPartySign => "first-party-sign",
            Route::FirstPartyClick => "first-party-click",
            Route::FirstPartyProxy => "first-party-proxy",
            Route::FirstPartyOther => "first-party-other",
            Route::Reserved => "reserved",
            Route::PublisherProxy => "proxy",
        }
    }

    /// Classifies a request by method and path (without the query string): [`Route::resolve`]'s
    /// route.
    pub fn classify(method: &str, path: &str) -> Route {
        Route::resolve(method, path).route
    }

    /// Routes a request by method and path (without the query string), as the module says:
    /// the route its standard reading names, else the route of the bytes as sent
    /// (`/_ts/admin/../x` stays the admin's), else [`Route::Reserved`] when any other reading
    /// is the service's, else the publisher proxy.
    pub fn resolve<'a>(method: &str, path: &'a str) -> Routed<'a> {
        let as_sent = |route| Routed {
            route,
            path: Cow::Borrowed(path),
        };
        if readings::is_plain(path) {
            // Every reading is the path as sent.
            return as_sent(Route::by_table(method, path));
        }
        let normal = readings::normalise(path);
        let standard = Route::by_table(method, &normal);
        if standard != Route::PublisherProxy {
            return Routed {
                route: standard,
                path: Cow::Owned(normal),
            };
        }
        let raw = Route::by_table(method, path);
        if raw != Route::PublisherProxy {
            return as_sent(raw);
        }
        // Whatever the method: another spelling that any server on the way could read as one
        // of the service's paths is never the origin's. (The path exactly as sent, with a
        // method its route does not serve, is proxied as before: `POST /_ts/health`.)
        let elsewhere = readings::readings(path)
            .iter()
            .any(|reading| reading != path && Route::is_the_services(reading));
        as_sent(if elsewhere {
            Route::Reserved
        } else {
            Route::PublisherProxy
        })
    }

    /// Whether `path`, exactly as given, is one of the service's paths for some method.
    fn is_the_services(path: &str) -> bool {
        ROUTES.iter().any(|(_, p, _)| *p == path)
            || PREFIX_ROUTES.iter().any(|(_, p, _)| path.starts_with(p))
    }

    /// The table alone, on the path exactly as given.
    fn by_table(method: &str, path: &str) -> Route {
        ROUTES
            .iter()
            .find(|(m, p, _)| *p == path && m.is_none_or(|m| m == method))
            .map(|(_, _, route)| *route)
            .or_else(|| {
                PREFIX_ROUTES
                    .iter()
                    .find(|(m, p, _)| path.starts_with(p) && m.is_none_or(|m| m.contains(&method)))
                    .map(|(_, _, route)| *route)
            })
            .unwrap_or(Route::PublisherProxy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_endpoints_first_then_the_proxy() {
        assert_eq!(Route::classify("GET", "/_ts/health"), Route::Health);
        assert_eq!(
            Route::classify("POST", "/_ts/health"),
            Route::PublisherProxy
        );
        assert_eq!(
            Route::classify("GET", "/_ts/health/x"),
            Route::PublisherProxy
        );
        assert_eq!(Route::classify("GET", "/"), Route::PublisherProxy);
        assert_eq!(Route::classify("GET", "/_ts/ec"), Route::EdgeId);
        assert_eq!(Route::classify("POST", "/_ts/ec"), Route::PublisherProxy);
    }

    #[test]
    fn discovery_and_signature_check() {
        let doc = "/.well-known/trusted-server.json";
        assert_eq!(Route::classify("GET", doc), Route::Discovery);
        assert_eq!(Route::classify("POST", doc), Route::PublisherProxy);
        assert_eq!(
            Route::classify("POST", "/verify-signature"),
            Route::VerifySignature
        );
        assert_eq!(
            Route::classify("GET", "/verify-signature"),
            Route::PublisherProxy
        );
    }

    #[test]
    fn everything_under_the_admin_prefix_with_any_method_is_admin() {
        for path in [
            "/_ts/admin",
            "/_ts/admin/",
            "/_ts/admin/settings",
            "/_ts/admin/unknown/deeper",
            "/_ts/admin/../x",
            "/_ts/adminx",
        ] {
            for method in [
                "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PROPFIND", "",
            ] {
                assert_eq!(
                    Route::classify(method, path),
                    Route::Admin,
                    "{method} {path}"
                );
            }
        }
        for path in [
            "/_ts/Admin",
            "/_TS/ADMIN/settings",
            "/x/_ts/admin",
            "/_ts/admi",
            "/_ts",
        ] {
            assert_eq!(
                Route::classify("GET", path),
                Route::PublisherProxy,
                "{path}"
            );
        }
    }

    #[test]
    fn first_party_sign_and_click_by_exact_path() {
        assert_eq!(
            Route::classify("GET", "/first-party/sign"),
            Route::FirstPartySign
        );
        assert_eq!(
            Route::classify("GET", "/first-party/click"),
            Route::FirstPartyClick
        );
        assert_eq!(
            Route::classify("GET", "/first-party/proxy"),
            Route::FirstPartyProxy
        );
        // The rest of the namespace is the service's, never the origin's.
        for (method, path) in [
            ("POST", "/first-party/sign"),
            ("HEAD", "/first-party/click"),
            ("GET", "/first-party/sign/"),
            ("GET", "/first-party/clicks"),
            ("HEAD", "/first-party/proxy"),
            ("POST", "/first-party/proxy"),
            ("GET", "/first-party/proxy/"),
            ("GET", "/first-party/"),
        ] {
            assert_eq!(
                Route::classify(method, path),
                Route::FirstPartyOther,
                "{method} {path}"
            );
        }
        for path in ["/First-Party/click", "/first-party", "/x/first-party/sign"] {
            assert_eq!(
                Route::classify("GET", path),
                Route::PublisherProxy,
                "{path}"
            );
        }
    }

    #[test]
    fn the_script_by_prefix_for_get_and_head() {
        for path in [
            "/static/tsjs=0123456789abcdef.js",
            "/static/tsjs=old.js",
            "/static/tsjs=",
        ] {
            assert_eq!(Route::classify("GET", path), Route::Script, "{path}");
            assert_eq!(Route::classify("HEAD", path), Route::Script, "{path}");
            assert_eq!(
                Route::classify("POST", path),
                Route::PublisherProxy,
                "{path}"
            );
        }
        for path in [
            "/static/tsjs.js",
            "/static/",
            "/x/static/tsjs=a.js",
            "/STATIC/tsjs=a.js",
        ] {
            assert_eq!(
                Route::classify("GET", path),
                Route::PublisherProxy,
                "{path}"
            );
        }
    }

    /// The item-9 spellings: each reads as one of the service's paths and is answered by the
    /// service (the route its standard reading names, or `Reserved`), never proxied.
    #[test]
    fn spellings_of_the_service_paths_are_the_services() {
        for (method, path, want) in [
            ("GET", "//_ts/admin/settings", Route::Admin),
            ("GET", "/_ts//admin/settings", Route::Admin),
            ("POST", "/%5Fts/admin/purge", Route::Admin),
            ("GET", "/%5fts/%61dmin", Route::Admin),
            ("GET", "/x/../_ts/admin", Route::Admin),
            ("GET", "/x/%2e%2E/_ts/admin", Route::Admin),
            ("GET", "/./_ts/./admin/", Route::Admin),
            ("GET", "//first-party/proxy", Route::FirstPartyProxy),
            ("GET", "/first-party//click", Route::FirstPartyClick),
            ("GET", "/%66irst-party/sign", Route::FirstPartySign),
            ("POST", "//first-party/proxy", Route::FirstPartyOther),
            ("GET", "///_ts/health", Route::Health),
            ("GET", "//_ts/ec", Route::EdgeId),
            ("GET", "//.well-known/trusted-server.json", Route::Discovery),
            ("POST", "//verify-signature", Route::VerifySignature),
            ("GET", "//static/tsjs=x.js", Route::Script),
            ("GET", "/_ts%2Fadmin", Route::Reserved),
            ("GET", "/first-party%2Fproxy", Route::Reserved),
            ("GET", "/%255Fts/admin", Route::Reserved),
            ("GET", "/x/..%2F_ts/admin", Route::Reserved),
            ("GET", "/_ts\\admin", Route::Reserved),
            ("GET", "/x\\..\\first-party\\proxy", Route::Reserved),
            // Servlet path parameters, and a method the route does not serve under a spelling.
            ("GET", "/_ts;x/admin/settings", Route::Reserved),
            ("POST", "/x/..;/_ts/admin/purge", Route::Reserved),
            ("GET", "/first-party;a=b/proxy", Route::Reserved),
            ("POST", "//_ts/health", Route::Reserved),
            ("HEAD", "//_ts/ec", Route::Reserved),
            ("PUT", "/%5Fts/ec", Route::Reserved),
        ] {
            assert_eq!(Route::classify(method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn the_path_handlers_read_is_the_one_that_routed() {
        let routed = Route::resolve("GET", "//_ts/admin/settings");
        assert_eq!(routed.path, "/_ts/admin/settings");
        let routed = Route::resolve("GET", "/_ts/admin/../x");
        assert_eq!(
            (routed.route, &*routed.path),
            (Route::Admin, "/_ts/admin/../x")
        );
        let routed = Route::resolve("GET", "/news//a.html");
        assert_eq!(
            (routed.route, &*routed.path),
            (Route::PublisherProxy, "/news//a.html")
        );
    }

    /// Spellings that no reading makes the service's stay the origin's: case is kept, and a
    /// reading that leaves a namespace (`..` out of it) is not in it.
    #[test]
    fn other_spellings_are_still_proxied() {
        for (method, path) in [
            ("GET", "/_TS/admin"),
            ("GET", "/%5FTS/admin"),
            ("GET", "//First-Party/proxy"),
            ("GET", "/_ts/x/../health/y"),
            ("GET", "/news//a.html"),
            ("GET", "/a/%2e%2e/b"),
            ("GET", "/search/a%20b"),
            ("GET", "/x/_ts/admin"),
            ("GET", "/x//_ts/admin"),
        ] {
            assert_eq!(
                Route::classify(method, path),
                Route::PublisherProxy,
                "{method} {path}"
            );
        }
    }

    /// The hand-written table (`fixtures/path-spellings.txt`, also read by Node's WHATWG URL in
    /// `tests/paths/`): each row's standard reading is what the table says, and the route of
    /// that reading is what the spelling gets.
    #[test]
    fn the_spelling_table() {
        let table = include_str!("../../../fixtures/path-spellings.txt");
        let mut rows = 0;
        for line in table
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let mut cols = line.split(' ');
            let (Some(raw), Some(want), None) = (cols.next(), cols.next(), cols.next()) else {
                panic!("malformed row: {line:?}");
            };
            assert_eq!(readings::normalise(raw), want, "{raw}");
            let named = Route::by_table("GET", want);
            let got = Route::classify("GET", raw);
            if named == Route::PublisherProxy {
                assert!(
                    matches!(got, Route::PublisherProxy | Route::Reserved),
                    "{raw}: {got:?}"
                );
            } else {
                assert_eq!(got, named, "{raw}");
            }
            rows += 1;
        }
        assert!(rows >= 20, "{rows} rows");
    }

    use proptest::prelude::*;

    fn hostile_path() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("/"),
            Just("//"),
            Just("."),
            Just(".."),
            Just("%2e"),
            Just("%2E"),
            Just("%5F"),
            Just("%5f"),
            Just("%2F"),
            Just("%2f"),
            Just("%25"),
            Just("\\"),
            Just("_ts"),
            Just("_TS"),
            Just("admin"),
            Just("%61dmin"),
            Just("ec"),
            Just("health"),
            Just("first-party"),
            Just("proxy"),
            Just("click"),
            Just("sign"),
            Just("static"),
            Just("tsjs="),
            Just(".well-known"),
            Just("trusted-server.json"),
            Just("verify-signature"),
            Just("x"),
        ];
        prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    }

    fn method() -> impl Strategy<Value = &'static str> {
        prop_oneof![Just("GET"), Just("HEAD"), Just("POST"), Just("PUT")]
    }

    proptest! {
        /// For any path: when its standard reading (or any other reading) is one the service
        /// answers, the path is never proxied; when the standard reading names a route, the
        /// path gets that route.
        #[test]
        fn a_path_read_as_the_services_is_never_proxied(
            path in hostile_path(),
            method in method(),
        ) {
            let got = Route::classify(method, &path);
            let normal = readings::normalise(&path);
            let named = Route::by_table(method, &normal);
            if named != Route::PublisherProxy {
                prop_assert_eq!(got, named, "{}", path);
            }
            for reading in readings::readings(&path) {
                if reading != path && Route::is_the_services(&reading) {
                    prop_assert_ne!(got, Route::PublisherProxy, "{} read as {}", path, reading);
                }
            }
        }

        /// Classification never panics, whatever the bytes.
        #[test]
        fn any_request_is_classified(path in any::<String>(), method in any::<String>()) {
            let _ = Route::classify(&method, &path);
        }
    }
}
