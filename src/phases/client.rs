//! What the platform observed about the client: its public authority, scheme and address.

use fastly::Request;
use trusted_server_core::publisher::navigation::is_page_navigation;
use trusted_server_core::{client_authority, Settings, UrlRule};
use trusted_server_settings::Scheme;

/// The client side of one request.
pub struct Client {
    /// `host[:port]` the client asked for, lowercase (falls back to `publisher.domain`).
    pub authority: String,
    /// `https` if the client connection used TLS.
    pub scheme: &'static str,
    /// The client's IP address, if the platform knows it.
    pub ip: Option<std::net::IpAddr>,
    /// The request's URL rule: origin authority → this client's scheme and authority.
    pub rule: UrlRule,
    /// The client's HTTP version: the response keeps it, so an HTTP/1.1 client always gets a
    /// framed (chunked) body whose abandonment it can detect, even from an HTTP/1.0 origin.
    pub version: fastly::http::Version,
    /// The request is a page navigation (it may get the first-party script).
    pub navigation: bool,
}

/// `host[:port]` of the request URL, when the client sent one (an HTTP/2 `:authority`).
fn url_authority(request: &Request) -> Option<String> {
    let url = request.get_url();
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// Reads the client facts from the request. Only the platform's own observations are used
/// (TLS state, peer address); client-supplied forwarding headers are ignored.
pub fn observe(request: &Request, settings: &Settings) -> Client {
    observe_as(request, is_navigation(request), settings)
}

/// [`observe`], with whether the request is a page navigation already read from its headers
/// (`main` reads them once for the publisher proxy).
pub fn observe_as(request: &Request, navigation: bool, settings: &Settings) -> Client {
    // `get_header_str` panics on a value that is not UTF-8; such a Host is treated as absent.
    // HTTP/2 and HTTP/3 carry the authority in the URL (`:authority`), not in a Host header.
    let url_authority = url_authority(request);
    let host = request
        .get_header("host")
        .and_then(|v| v.to_str().ok())
        .or(url_authority.as_deref());
    let authority = client_authority(host, &settings.publisher.domain);
    let scheme = scheme().as_str();
    let p = &settings.publisher;
    let rule = UrlRule::for_origin(&p.origin_host_name, p.origin_port, scheme, &authority);
    Client {
        authority,
        scheme,
        ip: crate::kit::incoming::client_ip(),
        rule,
        version: request.get_version(),
        navigation,
    }
}

/// The scheme the client used: `https` when it came over TLS. The platform's observation
/// (`kit::incoming`), never a client header.
pub fn scheme() -> Scheme {
    if crate::kit::incoming::client_tls() {
        Scheme::Https
    } else {
        Scheme::Http
    }
}

/// Whether `request` is a page navigation (see the core's `navigation` module).
pub fn is_navigation(request: &Request) -> bool {
    is_page_navigation(
        request
            .get_headers()
            .map(|(name, value)| (name.as_str(), value.as_bytes())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authority_comes_from_host_then_from_the_url() {
        let settings = &crate::kit::generated::SETTINGS;
        // HTTP/2: no Host header, the authority is in the URL.
        let h2 = Request::get("http://other.test:8443/page");
        assert_eq!(h2.get_header("host"), None);
        assert_eq!(observe(&h2, settings).authority, "other.test:8443");
        let h1 = Request::get("http://ignored.test/page").with_header("host", "www.pub.test");
        assert_eq!(observe(&h1, settings).authority, "www.pub.test");
        // A Host that is not a plausible authority falls back to the configured domain.
        let odd = Request::get("http://ignored.test/").with_header("host", "a b<");
        assert_eq!(
            observe(&odd, settings).authority,
            settings.publisher.domain.to_ascii_lowercase()
        );
    }
}
