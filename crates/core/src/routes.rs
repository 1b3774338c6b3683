//! Route resolution: the service's own endpoints first, then the fallback. The table itself is
//! the caller's: one [`RouteLine`] per endpoint, `(methods, path, log name, handler)`, generic
//! over what a line routes to, so this module owns the path readings and the `Reserved` rule
//! and no handler. A new endpoint is its handler plus one line in the caller's table.
//!
//! A path is classified as a server that normalises it would read it ([`readings`]): its
//! standard reading first (repeated slashes merged, dot segments resolved, escaped unreserved
//! characters decoded; letter case kept), then the bytes as sent, then every other plausible
//! reading (every escape decoded, overlong UTF-8, control characters and trailing dots
//! stripped, …), compared with the table with letter case folded. A path goes to the fallback
//! only when no reading of it is one the service answers, so no spelling carries a request for
//! the service's paths (with its `Authorization` or signed query) to the origin, not even to
//! an origin that folds case (IIS, Windows file systems).

use std::borrow::Cow;

pub mod readings;

/// Which methods a line serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Methods {
    /// Any method, even one no server knows.
    Any,
    /// Only these (`"GET"`, `"HEAD"`, …), exactly as spelt.
    Only(&'static [&'static str]),
}

impl Methods {
    fn allow(self, method: &str) -> bool {
        match self {
            Methods::Any => true,
            Methods::Only(methods) => methods.contains(&method),
        }
    }
}

/// Which requests a line is for, by path (without the query string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathMatch {
    /// Exactly this path. Tried before every prefix.
    Exact(&'static str),
    /// Every path that starts with this one, tried in table order after the exact paths.
    Prefix(&'static str),
    /// A path whose bytes and standard reading are no line's, but which some other plausible
    /// reading (`%2F` or a backslash read as a slash, escapes decoded twice, overlong UTF-8,
    /// letter case folded, control characters stripped) turns into one of the service's
    /// paths: answered by the service, never by the fallback.
    Reserved,
    /// Everything else: the fallback (for the service, the publisher proxy).
    Otherwise,
}

/// One line of a route table: `(methods, path, log name, handler)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteLine<H> {
    /// The methods it serves ([`PathMatch::Reserved`] and [`PathMatch::Otherwise`] lines take
    /// every method whatever this says).
    pub methods: Methods,
    /// The path it serves.
    pub path: PathMatch,
    /// Its name in the access log's `plan=` field.
    pub name: &'static str,
    /// What it routes to.
    pub handler: H,
}

/// A route table: the lines, checked when the table is built (at compile time, for a `const`
/// or `static` table) to have one [`PathMatch::Reserved`] and one [`PathMatch::Otherwise`]
/// line, so that every request resolves to a line.
#[derive(Debug)]
pub struct RouteTable<H: 'static> {
    lines: &'static [RouteLine<H>],
    reserved: usize,
    otherwise: usize,
}

/// A request's line and the path it was routed by.
#[derive(Debug, PartialEq, Eq)]
pub struct Routed<'t, 'a, H> {
    /// The line that answers it.
    pub line: &'t RouteLine<H>,
    /// The reading of the path that decided: its standard reading
    /// ([`readings::normalise`]) when that named the line, else the path as sent. The
    /// service's handlers read this one, so `//_ts/admin/settings` is the settings page
    /// (behind the same auth).
    pub path: Cow<'a, str>,
}

impl<H> RouteTable<H> {
    /// The table of `lines`. Panics (at compile time in a constant) unless exactly one line
    /// is [`PathMatch::Reserved`] and exactly one [`PathMatch::Otherwise`].
    pub const fn new(lines: &'static [RouteLine<H>]) -> Self {
        let (mut reserved, mut otherwise) = (None, None);
        let mut i = 0;
        while i < lines.len() {
            match lines[i].path {
                PathMatch::Reserved => {
                    assert!(reserved.is_none(), "two Reserved lines");
                    reserved = Some(i);
                }
                PathMatch::Otherwise => {
                    assert!(otherwise.is_none(), "two Otherwise lines");
                    otherwise = Some(i);
                }
                PathMatch::Exact(_) | PathMatch::Prefix(_) => {}
            }
            i += 1;
        }
        let (Some(reserved), Some(otherwise)) = (reserved, otherwise) else {
            panic!("a route table needs a Reserved and an Otherwise line");
        };
        RouteTable {
            lines,
            reserved,
            otherwise,
        }
    }

    /// Every line, in table order.
    pub fn lines(&self) -> &'static [RouteLine<H>] {
        self.lines
    }

    /// Routes a request by method and path (without the query string), as the module says:
    /// the line its standard reading names, else the line of the bytes as sent
    /// (`/_ts/admin/../x` stays the admin's), else the [`PathMatch::Reserved`] line when any
    /// reading, letter case folded, is the service's (`/_TS/admin`, `/_ts%C0%AFadmin`), else
    /// the [`PathMatch::Otherwise`] line.
    pub fn resolve<'t, 'a>(&'t self, method: &str, path: &'a str) -> Routed<'t, 'a, H> {
        let as_sent = |line| Routed {
            line,
            path: Cow::Borrowed(path),
        };
        if readings::is_plain(path) {
            // Every reading is the path as sent: only its case may be folded (no allocation).
            let line = self.by_table(method, path).unwrap_or_else(|| {
                if self.is_reserved(path, path) {
                    &self.lines[self.reserved]
                } else {
                    self.otherwise()
                }
            });
            return as_sent(line);
        }
        let normal = readings::normalise(path);
        if let Some(line) = self.by_table(method, &normal) {
            return Routed {
                line,
                path: Cow::Owned(normal),
            };
        }
        if let Some(line) = self.by_table(method, path) {
            return as_sent(line);
        }
        let elsewhere = readings::readings(path)
            .iter()
            .any(|reading| self.is_reserved(reading, path));
        as_sent(if elsewhere {
            &self.lines[self.reserved]
        } else {
            self.otherwise()
        })
    }

    fn otherwise(&self) -> &RouteLine<H> {
        &self.lines[self.otherwise]
    }

    /// Whether `reading`, a reading of `path` that no line serves for the request's method,
    /// makes the request [`PathMatch::Reserved`]: whatever the method, a spelling that any
    /// server on the way could read as one of the service's paths, letter case folded, is
    /// never the fallback's. The path exactly as sent, with a method its line does not serve,
    /// goes to the fallback as before (`POST /_ts/health`); a folded spelling of it does not
    /// (`POST /_TS/health`).
    fn is_reserved(&self, reading: &str, path: &str) -> bool {
        self.is_the_services_folded(reading) && !(reading == path && self.is_the_services(path))
    }

    /// Whether `path`, exactly as given, is one of the table's paths for some method.
    fn is_the_services(&self, path: &str) -> bool {
        self.lines.iter().any(|line| match line.path {
            PathMatch::Exact(p) => p == path,
            PathMatch::Prefix(p) => path.starts_with(p),
            PathMatch::Reserved | PathMatch::Otherwise => false,
        })
    }

    /// Whether `path`, compared with letter case folded ([`readings::strip_prefix_folded`]),
    /// is one of the table's paths for some method.
    fn is_the_services_folded(&self, path: &str) -> bool {
        self.lines.iter().any(|line| match line.path {
            PathMatch::Exact(p) => readings::strip_prefix_folded(path, p) == Some(""),
            PathMatch::Prefix(p) => readings::strip_prefix_folded(path, p).is_some(),
            PathMatch::Reserved | PathMatch::Otherwise => false,
        })
    }

    /// The table alone, on the path exactly as given: an exact line, else a prefix line.
    fn by_table(&self, method: &str, path: &str) -> Option<&RouteLine<H>> {
        let serving = || self.lines.iter().filter(|line| line.methods.allow(method));
        serving()
            .find(|line| matches!(line.path, PathMatch::Exact(p) if p == path))
            .or_else(|| {
                serving()
                    .find(|line| matches!(line.path, PathMatch::Prefix(p) if path.starts_with(p)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Methods::{Any, Only};
    use PathMatch::{Exact, Otherwise, Prefix, Reserved};

    /// What a request is for: the handlers of the service's table, named.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Route {
        Health,
        Script,
        EdgeId,
        Discovery,
        VerifySignature,
        Admin,
        FirstPartySign,
        FirstPartyClick,
        FirstPartyProxy,
        FirstPartyOther,
        Reserved,
        PublisherProxy,
    }

    const fn line(
        methods: Methods,
        path: PathMatch,
        name: &'static str,
        handler: Route,
    ) -> RouteLine<Route> {
        RouteLine {
            methods,
            path,
            name,
            handler,
        }
    }

    const GET: Methods = Only(&["GET"]);

    /// The service's table as the adapter has it (`ROUTES` in `src/main.rs`), each handler
    /// named by a [`Route`].
    static TABLE: RouteTable<Route> = RouteTable::new(&[
        line(GET, Exact("/_ts/health"), "health", Route::Health),
        line(GET, Exact("/_ts/ec"), "edge-id", Route::EdgeId),
        line(
            GET,
            Exact("/.well-known/trusted-server.json"),
            "discovery",
            Route::Discovery,
        ),
        line(
            Only(&["POST"]),
            Exact("/verify-signature"),
            "verify-signature",
            Route::VerifySignature,
        ),
        line(
            GET,
            Exact(crate::first_party::SIGN_PATH),
            "first-party-sign",
            Route::FirstPartySign,
        ),
        line(
            GET,
            Exact(crate::first_party::token::CLICK_PATH),
            "first-party-click",
            Route::FirstPartyClick,
        ),
        line(
            Only(crate::first_party::token::PROXY_METHODS),
            Exact(crate::first_party::token::PROXY_PATH),
            "first-party-proxy",
            Route::FirstPartyProxy,
        ),
        line(
            Only(&["GET", "HEAD"]),
            Prefix(crate::publisher::script::SCRIPT_PATH_PREFIX),
            "script",
            Route::Script,
        ),
        line(
            Any,
            Prefix(crate::admin::ADMIN_PREFIX),
            "admin",
            Route::Admin,
        ),
        line(
            Any,
            Prefix(crate::first_party::PREFIX),
            "first-party-other",
            Route::FirstPartyOther,
        ),
        line(Any, Reserved, "reserved", Route::Reserved),
        line(Any, Otherwise, "proxy", Route::PublisherProxy),
    ]);

    /// A request's route and the path it was routed by.
    struct Resolved<'a> {
        route: Route,
        path: Cow<'a, str>,
    }

    impl Route {
        fn classify(method: &str, path: &str) -> Route {
            TABLE.resolve(method, path).line.handler
        }

        fn resolve<'a>(method: &str, path: &'a str) -> Resolved<'a> {
            let routed = TABLE.resolve(method, path);
            Resolved {
                route: routed.line.handler,
                path: routed.path,
            }
        }

        fn by_table(method: &str, path: &str) -> Route {
            TABLE
                .by_table(method, path)
                .map_or(Route::PublisherProxy, |line| line.handler)
        }

        fn is_reserved(reading: &str, path: &str) -> bool {
            TABLE.is_reserved(reading, path)
        }
    }

    #[test]
    fn each_line_is_found_with_its_name() {
        assert_eq!(TABLE.resolve("GET", "/_ts/health").line.name, "health");
        assert_eq!(TABLE.resolve("GET", "/_ts%2Fadmin").line.name, "reserved");
        assert_eq!(TABLE.resolve("GET", "/").line.name, "proxy");
        assert_eq!(TABLE.lines().len(), 12);
    }

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
        for path in ["/x/_ts/admin", "/_ts/admi", "/_ts"] {
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
        assert_eq!(
            Route::classify("POST", "/first-party/proxy"),
            Route::FirstPartyProxy
        );
        // The rest of the namespace is the service's, never the origin's.
        for (method, path) in [
            ("POST", "/first-party/sign"),
            ("HEAD", "/first-party/click"),
            ("GET", "/first-party/sign/"),
            ("GET", "/first-party/clicks"),
            ("HEAD", "/first-party/proxy"),
            ("PUT", "/first-party/proxy"),
            ("GET", "/first-party/proxy/"),
            ("GET", "/first-party/"),
        ] {
            assert_eq!(
                Route::classify(method, path),
                Route::FirstPartyOther,
                "{method} {path}"
            );
        }
        for path in ["/first-party", "/x/first-party/sign"] {
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
        for path in ["/static/tsjs.js", "/static/", "/x/static/tsjs=a.js"] {
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
            ("PUT", "//first-party/proxy", Route::FirstPartyOther),
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

    /// Issue 35's spellings, read by origins that fold case (IIS, Windows file systems),
    /// decode overlong UTF-8, or strip control characters, spaces and trailing dots: each is
    /// the service's (`Reserved`, a `404`), whatever the method.
    #[test]
    fn folded_overlong_and_stripped_spellings_are_reserved() {
        for path in [
            "/_ts%C0%AFadmin/settings",
            "/%C1%9Fts/admin/settings",
            "/_ts%09/admin/settings",
            "/_TS/admin/settings",
            "/_ts/Admin",
            "/_TS/ADMIN/settings",
            "/%5FTS/admin/settings",
            "/FIRST-PARTY/proxy",
            "/First-Party/click",
            "//First-Party/proxy",
            "/STATIC/tsjs=a.js",
            "/_TS/health",
            "/.Well-Known/trusted-server.json",
            // Overlong in three, four, five and six bytes; the NUL of Java's modified UTF-8.
            "/_ts%E0%80%AFadmin",
            "/_ts%F0%80%80%AFadmin",
            "/_ts%F8%80%80%80%AFadmin",
            "/_ts%FC%80%80%80%80%AFadmin",
            "/_ts%C0%80/admin",
            // An overlong `%` decoded again: `%5F`, then `_`.
            "/%C0%A55Fts/admin",
            // Control characters, spaces, DEL, trailing dots, a NUL that ends a C string.
            "/_ts%0A/admin",
            "/_ts%0D%0A/admin",
            "/_ts%20/admin",
            "/_ts%7F/admin",
            "/%00_ts/admin",
            "/_ts./admin",
            "/_ts.%20./admin",
            "/_ts/ec.",
            "/_ts/ec%00.html",
            "/first-party./proxy",
            "/x/.%09./_ts/admin",
            // Characters whose case maps onto ASCII, and fullwidth ASCII.
            "/_t%C5%BF/admin",
            "/_ts/adm%C4%B1n",
            "/_ts/adm%C4%B0n",
            "/.well-%E2%84%AAnown/trusted-server.json",
            "/%EF%BC%BFts/admin",
            "/_ts%EF%BC%8Fadmin",
            "/_t\u{17f}/admin",
        ] {
            for method in ["GET", "POST", "HEAD", "PUT"] {
                assert_eq!(
                    Route::classify(method, path),
                    Route::Reserved,
                    "{method} {path}"
                );
            }
        }
        // The path exactly as sent, with a method its line does not serve, is the fallback's
        // as before; any folded spelling of it is not.
        assert_eq!(
            Route::classify("POST", "/_ts/health"),
            Route::PublisherProxy
        );
        assert_eq!(Route::classify("POST", "/_TS/health"), Route::Reserved);
        assert_eq!(Route::classify("POST", "/_ts/Health"), Route::Reserved);
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

    /// Spellings that no reading makes the service's stay the origin's: a reading that leaves
    /// a namespace (`..` out of it) is not in it, and neither is a path that only looks alike.
    #[test]
    fn other_spellings_are_still_proxied() {
        for (method, path) in [
            ("GET", "/_ts/x/../health/y"),
            ("GET", "/News/Article.html"),
            ("GET", "/news/article.html"),
            ("GET", "/_tsx/admin"),
            ("GET", "/_t%C3%9F/admin"),
            ("GET", "/_ts%C3%80admin"),
            ("GET", "/first-party"),
            ("GET", "/first-party.html"),
            ("GET", "/a.b/c"),
            ("GET", "/x/_TS/admin"),
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
    /// that reading is what the spelling gets (`Reserved` when only its folded case names one).
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
            if named == Route::PublisherProxy && TABLE.is_the_services_folded(want) {
                // The service's with case folded (`/_TS/admin`): a `404`, never the origin.
                assert_eq!(got, Route::Reserved, "{raw}");
            } else if named == Route::PublisherProxy {
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
            Just("%C0%AF"),
            Just("%C1%9F"),
            Just("%E0%80%AE"),
            Just("%09"),
            Just("%00"),
            Just(" "),
            Just("Admin"),
            Just("FIRST-PARTY"),
            Just("%C5%BF"),
            Just("%EF%BC%8F"),
        ];
        prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    }

    /// One of the service's paths (a prefix line's with something after it), and a spelling of
    /// it: see `every_spelling_of_a_service_path_is_the_services`.
    fn spelt_service_path() -> impl Strategy<Value = (String, String)> {
        let path = prop_oneof![
            Just("/_ts/health"),
            Just("/_ts/ec"),
            Just("/_ts/admin/settings"),
            Just("/.well-known/trusted-server.json"),
            Just("/verify-signature"),
            Just("/first-party/sign"),
            Just("/first-party/click"),
            Just("/first-party/proxy"),
            Just("/first-party/x"),
            Just("/static/tsjs=abc.js"),
        ];
        path.prop_flat_map(|path| {
            let n = path.chars().count();
            (
                Just(path),
                prop::collection::vec((0..6u8, 0..10usize, any::<bool>()), n),
            )
        })
        .prop_map(|(path, choices)| {
            let mut out = String::new();
            let chars: Vec<char> = path.chars().collect();
            for (i, (&c, (form, junk, dot))) in chars.iter().zip(choices).enumerate() {
                out.push_str(&spelt_char(c, form));
                let ends_segment = chars.get(i + 1).is_none_or(|&next| next == '/');
                if dot && ends_segment && c != '/' {
                    out.push('.');
                }
                out.push_str(["", "", "", "", "%09", "%0A", "%0D%0A", "%20", "%7F", "%00"][junk]);
            }
            (path.to_owned(), out)
        })
    }

    /// `c` in one of six forms.
    fn spelt_char(c: char, form: u8) -> String {
        let escaped = |s: &str| s.bytes().map(|b| format!("%{b:02X}")).collect::<String>();
        let cp = u32::from(c);
        match form {
            1 if c.is_ascii_lowercase() => c.to_ascii_uppercase().to_string(),
            2 => match c {
                's' => "\u{17f}".to_owned(),
                'k' => "\u{212a}".to_owned(),
                'i' => "\u{131}".to_owned(),
                '!'..='~' => char::from_u32(cp + 0xFEE0).map_or(c.to_string(), String::from),
                _ => c.to_string(),
            },
            3 => escaped(&c.to_string()),
            // Overlong in two and three bytes, percent-encoded.
            4 if cp < 0x80 => format!("%C{:X}%{:02X}", cp >> 6, 0x80 | (cp & 0x3F)),
            5 if cp < 0x80 => format!("%E0%{:02X}%{:02X}", 0x80 | (cp >> 6), 0x80 | (cp & 0x3F)),
            _ => c.to_string(),
        }
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
                if Route::is_reserved(&reading, &path) {
                    prop_assert_ne!(got, Route::PublisherProxy, "{} read as {}", path, reading);
                }
            }
        }

        /// Any of the service's paths, each character spelt as some server reads it (case
        /// flipped, a character whose case maps onto it, fullwidth, percent-encoded, overlong
        /// UTF-8) with control characters, spaces and trailing dots added, is never proxied,
        /// whatever the method.
        #[test]
        fn every_spelling_of_a_service_path_is_the_services(
            (original, spelt) in spelt_service_path(),
            method in method(),
        ) {
            if spelt != original {
                let got = Route::classify(method, &spelt);
                prop_assert_ne!(got, Route::PublisherProxy, "{} {}", method, spelt);
            }
        }

        /// Classification never panics, whatever the bytes.
        #[test]
        fn any_request_is_classified(path in any::<String>(), method in any::<String>()) {
            let _ = Route::classify(&method, &path);
        }
    }
}
