//! The upstream phase: build the origin request and send it through a dynamic backend.

use std::time::{Duration, Instant};

use fastly::backend::BackendCreationError;
use fastly::handle::{BodyHandle, PendingRequestHandle};
use fastly::http::request::{SendError, SendErrorCause};
use fastly::http::{HeaderValue, Url, Version};
use fastly::{Backend, Request, Response};
use trusted_server_core::cache::{fill, shared};
use trusted_server_core::compression;
use trusted_server_core::publisher::identity::ORIGIN_HEADER;
use trusted_server_core::{origin_request_headers, ClientInfo, Settings};
use trusted_server_settings::{Publisher, Scheme};

use crate::kit::failure::{BackendInfo, OriginFailure};
use crate::kit::headers;
use crate::kit::ready::{self, Waitable};
use crate::phases::client::Client;

/// Name of the dynamic backend for `publisher.origin_url`.
const BACKEND_NAME: &str = "publisher_origin";

/// The backend every origin request uses, for reports.
pub fn backend_info(settings: &Settings) -> BackendInfo {
    BackendInfo {
        name: BACKEND_NAME,
        address: settings.publisher.origin_address.to_string(),
    }
}

/// Sends the origin request ([`build_request`]) and returns the origin's response as soon as
/// the headers arrive; the body streams afterwards.
pub fn send(request: Request, settings: &Settings) -> Result<Response, OriginFailure> {
    send_async(request, settings)?.wait(settings)
}

/// An origin request on its way: the platform carries it while the guest does other work;
/// [`Sent::answered_within`] asks whether its head came in time, [`Sent::wait`] gives it.
///
/// Sent through the handle API (as the fastly crate itself sends a request the host caches),
/// because only a handle can be waited on with a time limit (`kit::ready`).
pub struct Sent {
    pending: PendingRequestHandle,
    sent_at: Instant,
}

/// Sends the origin request ([`build_request`]) without waiting for it. A request whose answer
/// may be the reader's own bypasses the platform's HTTP cache in front of the origin
/// (`trusted_server_core::cache::shared::origin_fetch_passes`).
pub fn send_async(mut request: Request, settings: &Settings) -> Result<Sent, OriginFailure> {
    let backend = backend(settings)?;
    if shared::origin_fetch_passes(ask(&request)) {
        request.set_pass(true);
    }
    let (request, body) = request.into_handles();
    let body = body.unwrap_or_else(BodyHandle::new);
    let sent_at = Instant::now();
    match request.send_async_to_backend(body, &backend) {
        Ok(pending) => Ok(Sent { pending, sent_at }),
        Err(cause) => Err(failure_of(&cause, sent_at, settings)),
    }
}

impl Sent {
    /// Whether the origin's head (or its failure) came in within `limit` (at least 1 ms, the
    /// platform's finest wait), waiting at most that long.
    pub fn answered_within(&self, limit: Duration) -> bool {
        ready::first_ready(&[Waitable::Pending(&self.pending)], limit).is_some()
    }

    /// Waits for the origin's response headers; the body streams afterwards.
    pub fn wait(self, settings: &Settings) -> Result<Response, OriginFailure> {
        let Sent { pending, sent_at } = self;
        match pending.wait() {
            // Read once, detached from its handle (`kit::incoming`).
            Ok((head, body)) => Ok(crate::kit::incoming::response(head, body)),
            Err(cause) => Err(failure_of(&cause, sent_at, settings)),
        }
    }
}

/// What the shared-cache rule (`trusted_server_core::cache::shared`) needs of `request`: its
/// method, whether it has `Authorization`, and whether it carries the reader's own cookies.
pub fn ask(request: &Request) -> shared::Ask<'_> {
    shared::Ask {
        method: request.get_method_str(),
        authorization: request.get_header("authorization").is_some(),
        reader: shared::reader(request.get_header_all("cookie").map(HeaderValue::as_bytes)),
    }
}

/// Makes `request` (an origin request from [`build_request`]) the request of a cache fill:
/// without `Range` and preconditions (`trusted_server_core::cache::fill::FILL_DROPPED`), so
/// the origin answers with the whole page, which is what an entry stores; and, for a reader
/// whose only cookies are consent cookies (`shared::Reader::ConsentOnly`), without its
/// `Cookie`, so the page stored for every such reader cannot depend on one reader's consent.
pub fn for_fill(request: &mut Request) {
    let dropped: Vec<_> = request
        .get_header_names()
        .filter(|name| fill::fill_drops(name.as_str()))
        .cloned()
        .collect();
    for name in dropped {
        request.remove_header(name);
    }
    if ask(request).reader == shared::Reader::ConsentOnly {
        request.remove_header(fastly::http::header::COOKIE);
    }
}

/// What a failed `send` means: a timeout (504) or an unavailable upstream (502). Shared with
/// the first-party proxy, whose backends use the same timeouts.
pub fn send_failure(e: &SendError, sent_at: Instant, settings: &Settings) -> OriginFailure {
    classify_failure(e.root_cause(), format!("{e}"), sent_at, settings)
}

/// [`send_failure`] for the origin's own request, sent through the handle API: the platform's
/// cause, named with the origin's backend as the fastly crate names it.
fn failure_of(cause: &SendErrorCause, sent_at: Instant, settings: &Settings) -> OriginFailure {
    let detail = format!("error sending request: {cause} to backend {BACKEND_NAME}");
    classify_failure(cause, detail, sent_at, settings)
}

fn classify_failure(
    cause: &SendErrorCause,
    detail: String,
    sent_at: Instant,
    settings: &Settings,
) -> OriginFailure {
    let timed_out = matches!(
        cause,
        SendErrorCause::ConnectionTimeout
            | SendErrorCause::HttpResponseTimeout
            | SendErrorCause::DnsTimeout
    );
    // Viceroy reports an expired first-byte timeout as a generic error; the elapsed time
    // tells the two apart there.
    let waited_out =
        sent_at.elapsed() >= Duration::from_millis(settings.publisher.first_byte_timeout_ms.into());
    if timed_out || waited_out {
        OriginFailure::Timeout(detail)
    } else {
        OriginFailure::Unavailable(detail)
    }
}

/// Turns the client's request into the origin's: same method, path, query and body; the
/// origin's URL and `Host`; headers filtered by the core's forwarding policy (which drops a
/// client's own `X-TS-EC`), then ours (the edge ID in `X-TS-EC` when there is one). Built
/// before the cache lookup: the lookup matches the origin's `Vary` against these headers,
/// the ones the origin receives (`trusted_server_core::cache::fill`).
pub fn build_request(
    mut request: Request,
    client: &Client,
    edge_id: Option<&str>,
    settings: &Settings,
) -> Request {
    let p = &settings.publisher;
    let info = ClientInfo {
        host: &client.authority,
        scheme: client.scheme,
        ip: client.ip,
    };
    let headers = origin_request_headers(request.get_headers(), &info, &p.origin_host);
    // Only the names the policy changed are written to the client's request (its handle
    // writes each change through with a host call).
    headers::replace(&mut request, &headers);
    if let Some(id) = edge_id {
        request.set_header(ORIGIN_HEADER, id);
    }
    // `delivery.compression = "edge"`: the body comes uncompressed, Fastly compresses it.
    if let Some(coding) = compression::upstream_accept_encoding(settings.delivery.compression) {
        request.set_header(fastly::http::header::ACCEPT_ENCODING, coding);
    }
    // Always HTTP/1.1 to the origin, whatever the client spoke: the client's HTTP/2 is not a
    // version the backend connection speaks, and HTTP/1.0 would lose chunked framing.
    request.set_version(Version::HTTP_11);
    point_at_origin(&mut request.get_url_mut(), p);
    request
}

/// Puts `url`'s path and query on the origin's scheme and authority. Changed in place: the
/// path and query were parsed when the request was read, and parsing them again cost a
/// small page's request a few microseconds. Should the URL refuse a part, the joined text
/// is parsed instead (the unit tests check both give the same URL).
fn point_at_origin(url: &mut Url, p: &Publisher) {
    let moved = url.set_scheme(p.origin_scheme.as_str()).is_ok()
        && url.set_host(Some(&p.origin_host_name)).is_ok()
        && url.set_port(p.origin_port).is_ok()
        && url.set_username("").is_ok()
        && url.set_password(None).is_ok();
    url.set_fragment(None);
    if !moved {
        if let Ok(joined) = Url::parse(&joined_origin_url(url, p)) {
            *url = joined;
        }
    }
}

/// The origin's URL for `url` as text: its scheme and authority, `url`'s path and query.
fn joined_origin_url(url: &Url, p: &Publisher) -> String {
    let query = url.query().map(|q| format!("?{q}")).unwrap_or_default();
    format!(
        "{}://{}{}{query}",
        p.origin_scheme.as_str(),
        p.origin_host,
        url.path()
    )
}

fn backend(settings: &Settings) -> Result<Backend, OriginFailure> {
    let p = &settings.publisher;
    let mut builder = Backend::builder(BACKEND_NAME, &*p.origin_address)
        .override_host(&*p.origin_host)
        .connect_timeout(Duration::from_millis(p.connect_timeout_ms.into()))
        .first_byte_timeout(Duration::from_millis(p.first_byte_timeout_ms.into()))
        .between_bytes_timeout(Duration::from_millis(p.between_bytes_timeout_ms.into()));
    if p.origin_scheme == Scheme::Https {
        builder = builder
            .enable_ssl()
            .sni_hostname(&*p.origin_tls_host)
            .check_certificate(&*p.origin_tls_host);
    }
    match builder.finish() {
        Ok(backend) => Ok(backend),
        Err(BackendCreationError::NameInUse) => Backend::from_name(BACKEND_NAME)
            .map_err(|e| OriginFailure::Unavailable(format!("backend {BACKEND_NAME}: {e}"))),
        Err(e) => Err(OriginFailure::Unavailable(format!(
            "cannot create backend for {}: {e}",
            p.origin_address
        ))),
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use crate::phases::client;

    #[test]
    fn origin_request_keeps_method_path_query_and_replaces_forwarding() {
        let mut incoming = Request::post("http://www.pub.test:7676/search/a%20b?q=1&r=%C3%A9")
            .with_header("host", "www.pub.test:7676")
            .with_header("x-forwarded-for", "6.6.6.6")
            .with_header("x-forwarded-host", "evil.test")
            .with_header("connection", "close")
            .with_header("cookie", "a=1")
            .with_header("x-ts-ec", "spoofed")
            .with_body("form=1");
        incoming.set_header("accept-encoding", "zstd, gzip");
        let client = client::observe(&incoming, &crate::kit::generated::SETTINGS);
        let mut out = build_request(incoming, &client, None, &crate::kit::generated::SETTINGS);
        let p = &crate::kit::generated::SETTINGS.publisher;
        assert_eq!(out.get_method_str(), "POST");
        assert_eq!(out.get_path(), "/search/a%20b");
        assert_eq!(out.get_query_str(), Some("q=1&r=%C3%A9"));
        assert_eq!(out.get_url().host_str(), p.origin_host.split(':').next());
        assert_eq!(out.get_header_str("host"), Some(&*p.origin_host));
        assert_eq!(
            out.get_header_str("x-forwarded-host"),
            Some("www.pub.test:7676")
        );
        assert_eq!(out.get_header_str("x-forwarded-proto"), Some("http"));
        assert_eq!(out.get_header_str("accept-encoding"), Some("gzip"));
        assert_eq!(out.get_header_str("cookie"), Some("a=1"));
        assert_eq!(out.get_header("connection"), None);
        assert_eq!(
            out.get_header("x-ts-ec"),
            None,
            "a client's own ID never reaches the origin"
        );
        // No client IP in a synthetic request: the spoofed value must be gone, not kept.
        assert_ne!(out.get_header_str("x-forwarded-for"), Some("6.6.6.6"));
        assert_eq!(out.get_version(), Version::HTTP_11);
        assert_eq!(out.take_body_str(), "form=1");
    }

    #[test]
    fn the_edge_id_replaces_the_clients_own() {
        let incoming = Request::get("http://www.pub.test/")
            .with_header("host", "www.pub.test")
            .with_header("x-ts-ec", "spoofed");
        let client = client::observe(&incoming, &crate::kit::generated::SETTINGS);
        let out = build_request(
            incoming,
            &client,
            Some("abc.DEF123"),
            &crate::kit::generated::SETTINGS,
        );
        let all: Vec<&str> = out.get_header_all_str("x-ts-ec");
        assert_eq!(all, ["abc.DEF123"]);
    }

    #[test]
    fn a_fill_asks_for_the_whole_page_and_keeps_the_rest() {
        let incoming = Request::get("http://www.pub.test/")
            .with_header("host", "www.pub.test")
            .with_header("range", "bytes=0-9")
            .with_header("if-range", "\"v1\"")
            .with_header("if-none-match", "\"v1\"")
            .with_header("if-modified-since", "Tue, 15 Nov 1994 12:45:26 GMT")
            .with_header("if-match", "\"v1\"")
            .with_header("if-unmodified-since", "Tue, 15 Nov 1994 12:45:26 GMT")
            .with_header("accept-language", "de");
        let client = client::observe(&incoming, &crate::kit::generated::SETTINGS);
        let mut out = build_request(
            incoming,
            &client,
            Some("abc.DEF123"),
            &crate::kit::generated::SETTINGS,
        );
        // A request that passes forwards them as they came.
        assert_eq!(out.get_header_str("if-none-match"), Some("\"v1\""));
        assert_eq!(out.get_header_str("range"), Some("bytes=0-9"));
        for_fill(&mut out);
        for gone in fill::FILL_DROPPED {
            assert_eq!(out.get_header(gone), None, "{gone}");
        }
        assert_eq!(out.get_header_str("accept-language"), Some("de"));
        assert_eq!(out.get_header_str("x-ts-ec"), Some("abc.DEF123"));
    }

    /// The edge ID never goes in the cookie; a fill drops consent-only cookies (the stored
    /// page must not depend on them) and keeps a reader's other cookies whole.
    #[test]
    fn cookies_to_the_origin() {
        let settings = &crate::kit::generated::SETTINGS;
        let built = |cookies: &[&str]| {
            let mut incoming =
                Request::get("http://www.pub.test/").with_header("host", "www.pub.test");
            for line in cookies {
                incoming.append_header("cookie", *line);
            }
            let client = client::observe(&incoming, settings);
            build_request(incoming, &client, None, settings)
        };
        let cookies = |r: &Request| r.get_header_all_str("cookie").join(" | ");
        let mut out = built(&["ts-ec=abc.DEF123; euconsent-v2=CQ", "__gpp=DBA"]);
        assert_eq!(cookies(&out), "euconsent-v2=CQ | __gpp=DBA");
        for_fill(&mut out);
        assert_eq!(cookies(&out), "");
        let mut out = built(&["ts-ec=abc.DEF123; euconsent-v2=CQ; session=alice"]);
        assert_eq!(cookies(&out), "euconsent-v2=CQ; session=alice");
        for_fill(&mut out);
        assert_eq!(cookies(&out), "euconsent-v2=CQ; session=alice");
        let out = built(&["ts-ec=abc.DEF123"]);
        assert_eq!(out.get_header("cookie"), None);
    }

    #[test]
    fn edge_compression_asks_the_origin_for_identity() {
        let mut settings = crate::kit::generated::SETTINGS.clone();
        let incoming = || {
            Request::get("http://www.pub.test/")
                .with_header("host", "www.pub.test")
                .with_header("accept-encoding", "br, gzip")
        };
        let client = client::observe(&incoming(), &settings);
        let out = build_request(incoming(), &client, None, &settings);
        assert_eq!(out.get_header_str("accept-encoding"), Some("br, gzip"));
        settings.delivery.compression = trusted_server_settings::Compression::Edge;
        let out = build_request(incoming(), &client, None, &settings);
        let all: Vec<&str> = out.get_header_all_str("accept-encoding");
        assert_eq!(all, ["identity"]);
    }

    #[test]
    fn origin_requests_are_http_1_1_whatever_the_client_spoke() {
        for version in [Version::HTTP_10, Version::HTTP_2, Version::HTTP_3] {
            let mut incoming =
                Request::get("http://www.pub.test/").with_header("host", "www.pub.test");
            incoming.set_version(version);
            let client = client::observe(&incoming, &crate::kit::generated::SETTINGS);
            let out = build_request(incoming, &client, None, &crate::kit::generated::SETTINGS);
            assert_eq!(out.get_version(), Version::HTTP_11, "client {version:?}");
        }
    }

    /// The origin's URL changed in place is the URL the joined text parses to, for client
    /// URLs of every shape the platform can give (ports, user info, escapes, odd queries,
    /// dot segments already resolved, IPv4 and IPv6 hosts) and origins of every shape the
    /// settings allow (either scheme, with and without a port, the scheme's own port, an
    /// address).
    #[test]
    fn the_origin_url_changed_in_place_is_the_joined_url_parsed() {
        let clients = [
            "http://www.pub.test/",
            "https://www.pub.test:8443/a/b.html?x=1&y=%20z",
            "http://user:secret@www.pub.test/private?q",
            "http://www.pub.test/%2e%2E/%2F/caf%C3%A9?%FF=1#frag",
            "http://127.0.0.1:7676/a//b/./c/../d?",
            "http://[::1]:9000/x?a=b?c=d",
            "http://www.pub.test/?",
            "http://www.pub.test/a%5Cb/\\c",
            "https://xn--caf-dma.test/\u{e9}t\u{e9}?\u{e9}=1",
        ];
        let origins = [
            ("http", "origin.pub.test"),
            ("https", "origin.pub.test"),
            ("http", "origin.pub.test:8080"),
            ("https", "origin.pub.test:443"),
            ("http", "origin.pub.test:80"),
            ("http", "127.0.0.1:8080"),
            ("https", "10.0.0.1:8443"),
        ];
        for (scheme, host) in origins {
            let settings = trusted_server_settings::load(
                &format!(
                    "[publisher]\ndomain = \"www.pub.test\"\n\
                     origin_url = \"{scheme}://{host}\"\n"
                ),
                [(
                    "TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST".to_owned(),
                    host.to_owned(),
                )],
            );
            let Ok(settings) = settings else {
                panic!("origin {scheme}://{host}: {:?}", settings.err());
            };
            let p = &settings.publisher;
            for client in clients {
                let mut url = Url::parse(client).expect(client);
                let joined = Url::parse(&joined_origin_url(&url, p)).expect("joined");
                point_at_origin(&mut url, p);
                assert_eq!(
                    url.as_str(),
                    joined.as_str(),
                    "{client} to {scheme}://{host}"
                );
            }
        }
    }
}
