//! Route classification in one place: the service's own endpoints first, then the publisher
//! proxy as the fallback. A new endpoint is one line in [`ROUTES`].

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
    /// Everything else: proxied to the publisher origin.
    PublisherProxy,
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
            Route::PublisherProxy => "proxy",
        }
    }

    /// Classifies a request by method and path (without the query string).
    pub fn classify(method: &str, path: &str) -> Route {
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
        for (method, path) in [
            ("POST", "/first-party/sign"),
            ("HEAD", "/first-party/click"),
            ("GET", "/first-party/sign/"),
            ("GET", "/first-party/clicks"),
            ("GET", "/First-Party/click"),
            ("HEAD", "/first-party/proxy"),
            ("POST", "/first-party/proxy"),
            ("GET", "/first-party/proxy/"),
        ] {
            assert_eq!(
                Route::classify(method, path),
                Route::PublisherProxy,
                "{method} {path}"
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
}
