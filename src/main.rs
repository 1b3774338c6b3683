//! Trusted Server Edge: the Fastly Compute adapter.
//!
//! A thin layer over `trusted-server-core`, in four kinds of room, each importing only the
//! ones below it:
//!
//! * **here**, the route table ([`ROUTES`]): one line per endpoint or flow, `(methods, path,
//!   log name, handler)`, resolved by the core (`trusted_server_core::RouteTable`) as a
//!   normalising server would read the path;
//! * **flows** (`flows`): the orders of things: the publisher proxy (identity → hints →
//!   cache → origin → response → body), the stale-while-revalidate refresh, the first-party
//!   proxy, the auction (its bidders asked at once until the deadline);
//! * **endpoints** (`endpoints`), beside the flows: the service's own answers (health, the
//!   script, the edge ID, discovery, admin, first-party sign and click), made whole without
//!   the origin;
//! * **phases** (`phases`): one platform job each (client, identity, hints, cache store,
//!   origin, response, injection, body, the bidders), never calling another phase's entry point;
//! * **kit** (`kit`): shared leaves (what `build.rs` generates, replies, the access line,
//!   failures, timing, secrets, partner requests), importing none of the above.
//!
//! The reader's consent is decided once, the first time a request needs it
//! (`phases::consent`): the endpoints and flows that follow it are given the decision, the
//! publisher proxy the undecided consent, which most of what it serves never asks for. Every
//! response's headers, on every route, leave through `kit::leaving::stamp` (the expiry of
//! `ts-ec` when consent is withdrawn, and `Server-Timing`). Settings were validated at build
//! time and are embedded as a `static` (`kit::generated`).
#![warn(missing_docs)]
// Calls into the ABI in two places only: `body::downstream::origin_has_more_ready` and
// `kit::ready::first_ready`.
#![deny(unsafe_code)]

mod endpoints;
mod flows;
mod kit;
mod phases;

use fastly::{Request, Response};
use trusted_server_core::admin::ADMIN_PREFIX;
use trusted_server_core::first_party::{self, token};
use trusted_server_core::Methods::{Any, Only};
use trusted_server_core::PathMatch::{Exact, Otherwise, Prefix, Reserved};
use trusted_server_core::{
    Methods, PathMatch, RouteLine, RouteTable, Settings, SCRIPT_PATH_PREFIX,
};

use endpoints::{
    admin, consent as consent_endpoint, discovery, edge_id, first_party as fp, health, ids_sync,
    script,
};
use flows::partner_ids::{self, PageView};
use flows::{auction, first_party_proxy, publisher_proxy};
use kit::access::{self, Access};
use kit::generated::SETTINGS;
use kit::{edge_cookie, leaving, reply};
use phases::consent::Consent;
use trusted_server_core::consent::Decision;
use trusted_server_core::publisher::identity::RequestFacts;

/// What a route line leads to.
#[derive(Clone, Copy)]
enum Handler {
    /// An answer made whole, without the origin: stamped and sent by [`main`].
    Answer(fn(Request, &Settings) -> Response),
    /// An [`Answer`] that follows the request's consent decision.
    Decided(fn(Request, &Settings, &Decision) -> Response),
    /// A flow, given the request's consent decision: sends its own response and fills in the
    /// access record.
    Flow(fn(Request, &Settings, &Decision, &mut Access)),
    /// The publisher proxy: a [`Flow`] given the request's consent undecided (most of what
    /// it serves needs no decision) and its edge-ID facts as `main` read them, whose
    /// response may be a page view the partner-ID graph hears of once the access line has
    /// left.
    Proxy(fn(Request, &Settings, &Consent, &RequestFacts, &mut Access) -> Option<PageView>),
}

use Handler::{Answer, Decided, Flow, Proxy};

/// The route table: a new endpoint is its handler plus one line here, `(methods, path, log
/// name, handler)`. Exact paths are tried before prefixes; a spelling of one of these paths
/// that only a lenient reading finds is `reserved` (`404`); everything else is the proxy.
#[rustfmt::skip]
static ROUTES: RouteTable<Handler> = RouteTable::new(&[
    line(GET,  Exact("/_ts/health"),                      "health",            Answer(|_, s| health::respond(s))),
    line(GET,  Exact("/_ts/ec"),                          "edge-id",           Decided(|r, s, d| edge_id::respond(&r, s, d))),
    line(Any,  Exact(auction::PATH),                      "auction",           Flow(auction::run)),
    line(GET,  Exact(auction::PAGE_BIDS_PATH),            "page-bids",         Flow(auction::page_bids)),
    line(GET,  Exact("/_ts/consent"),                     "consent",           Decided(|_, s, d| consent_endpoint::respond(s, d))),
    line(POST, Exact(ids_sync::PATH),                     "ids-sync",          Answer(ids_sync::respond)),
    line(GET,  Exact("/.well-known/trusted-server.json"), "discovery",         Answer(|_, s| discovery::well_known(s))),
    line(POST, Exact("/verify-signature"),                "verify-signature",  Answer(discovery::verify)),
    line(GET,  Exact(first_party::SIGN_PATH),             "first-party-sign",  Answer(|r, s| fp::sign(&r, s))),
    line(GET,  Exact(token::CLICK_PATH),                  "first-party-click", Answer(|r, s| fp::click(&r, s))),
    line(BEACON, Exact(token::PROXY_PATH),                "first-party-proxy", Flow(first_party_proxy::run)),
    line(READ, Prefix(SCRIPT_PATH_PREFIX),                "script",            Answer(|r, s| script::respond(&r, s))),
    line(Any,  Prefix(ADMIN_PREFIX),                      "admin",             Answer(|r, s| admin::respond(&r, s))),
    line(Any,  Prefix(first_party::PREFIX),               "first-party-other", Answer(|r, s| fp::other(&r, s))),
    line(Any,  Reserved,                                  "reserved",          Answer(|r, s| reply::not_found(&r, s))),
    line(Any,  Otherwise,                                 "proxy",             Proxy(publisher_proxy::run)),
]);

/// `GET` only.
const GET: Methods = Only(&["GET"]);
/// `POST` only.
const POST: Methods = Only(&["POST"]);
/// The first-party proxy's: `GET`, and `POST` for beacons.
const BEACON: Methods = Only(token::PROXY_METHODS);
/// `GET` and `HEAD`.
const READ: Methods = Only(&["GET", "HEAD"]);

/// One line of [`ROUTES`].
const fn line(
    methods: Methods,
    path: PathMatch,
    name: &'static str,
    handler: Handler,
) -> RouteLine<Handler> {
    RouteLine {
        methods,
        path,
        name,
        handler,
    }
}

/// A plain `main`, not `#[fastly::main]`: the macro sends the returned response itself, which
/// rules out `stream_to_client`.
fn main() {
    // The access line's clock starts here: everything the guest does for the request is on it.
    let arrived = std::time::Instant::now();
    access::init_logging(SETTINGS.logging.level);
    // Read once, detached from its host-side handle (`kit::incoming`).
    let mut request = match kit::incoming::client_request() {
        Ok(request) => request,
        Err(unreadable) => return refuse_unreadable(unreadable, arrived),
    };
    let mut access = Access::start(&request, arrived);
    // Consent is decided once, when first needed (`phases::consent`). A withdrawal expires a
    // `ts-ec` cookie on whatever this request gets: a request that sends one has it decided.
    let observed = std::cell::OnceCell::new();
    let consent = Consent::of(&request, &observed, &SETTINGS);
    // Routed as a normalising server would read the path: a spelling of one of the service's
    // paths is the service's (its handler reads the path it was routed by), never proxied.
    let routed = ROUTES.resolve(request.get_method_str(), request.get_path());
    let (line, read_as) = (routed.line, routed.path.into_owned());
    if read_as != request.get_path() {
        request.set_path(&read_as);
    }
    access.plan = line.name.into();
    // The edge ID's facts, read from the headers once, where something needs them: the
    // withdrawal on every route while the edge ID is kept, and the publisher proxy.
    let facts = match SETTINGS.identity.enabled || matches!(line.handler, Proxy(_)) {
        true => RequestFacts::from_headers(request.get_headers()),
        false => RequestFacts::default(),
    };
    let withdraw = || consent.decision().withdraw;
    access.expire_edge_id = edge_cookie::withdrawal(&facts, withdraw, &SETTINGS);
    // A withdrawal also erases what the partner-ID graph holds under the reader's ID, once
    // the response and its access line have left (`flows::partner_ids`).
    let erase = match access.expire_edge_id {
        true => edge_cookie::cookie_ids(&facts),
        false => Vec::new(),
    };
    let page_view = match line.handler {
        Answer(answer) => send(answer(request, &SETTINGS), &mut access),
        Decided(answer) => send(answer(request, &SETTINGS, consent.decision()), &mut access),
        Flow(flow) => {
            flow(request, &SETTINGS, consent.decision(), &mut access);
            None
        }
        Proxy(flow) => flow(request, &SETTINGS, &consent, &facts, &mut access),
    };
    access.consent = consent.decided().map(access::consent_field);
    access.log();
    // Erasing and page views both follow a decision already made (a withdrawal, an edge ID).
    if !erase.is_empty() || page_view.is_some() {
        partner_ids::after_response(&erase, page_view, consent.decision(), &SETTINGS);
    }
}

/// A request whose URL does not parse gets `400` (its `Host` names nothing the service can
/// reach, `kit::incoming::Unreadable`), with an access line whose path is `-`.
fn refuse_unreadable(unreadable: kit::incoming::Unreadable, arrived: std::time::Instant) {
    log::warn!("request refused: {}", unreadable.why);
    let mut access = Access::of(unreadable.method.as_str(), "-", arrived);
    access.plan = "unreadable".into();
    let bad_request = kit::reply::error(fastly::http::StatusCode::BAD_REQUEST, &SETTINGS);
    send(bad_request, &mut access);
    access.log();
}

/// Sends an answer made whole, stamped as every response is. No answer is a page view.
fn send(response: Response, access: &mut Access) -> Option<PageView> {
    leaving::send_whole(response, access, &SETTINGS);
    None
}

#[cfg(test)]
mod tests {
    /// Each line of the table is reached by its own path, under its log name (the core's
    /// `routes` tests cover the readings of a path on a table like this one).
    #[test]
    fn each_path_reaches_its_line() {
        for (method, path, name) in [
            ("GET", "/_ts/health", "health"),
            ("GET", "/_ts/ec", "edge-id"),
            ("GET", "/_ts/consent", "consent"),
            ("POST", "/_ts/ids/sync", "ids-sync"),
            ("POST", "/_ts/openrtb2/auction", "auction"),
            ("GET", "/_ts/openrtb2/auction", "auction"),
            ("GET", "/.well-known/trusted-server.json", "discovery"),
            ("POST", "/verify-signature", "verify-signature"),
            ("GET", "/first-party/sign", "first-party-sign"),
            ("GET", "/first-party/click", "first-party-click"),
            ("GET", "/first-party/proxy", "first-party-proxy"),
            ("HEAD", "/static/tsjs=0123456789abcdef.js", "script"),
            ("DELETE", "/_ts/admin/purge", "admin"),
            ("POST", "/first-party/proxy", "first-party-proxy"),
            ("PUT", "/first-party/proxy", "first-party-other"),
            ("GET", "/_ts%2Fadmin", "reserved"),
            ("POST", "/_ts/health", "proxy"),
            ("GET", "/news/a.html", "proxy"),
        ] {
            let routed = super::ROUTES.resolve(method, path);
            assert_eq!(routed.line.name, name, "{method} {path}");
        }
    }
}
