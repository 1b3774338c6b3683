//! What the platform observed about the client: its public authority, scheme and address.

use fastly::Request;
use trusted_server_core::{client_authority, Settings, UrlRule};

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
}

/// Reads the client facts from the request. Only the platform's own observations are used
/// (TLS state, peer address); client-supplied forwarding headers are ignored.
pub fn observe(request: &Request, settings: &Settings) -> Client {
    // `get_header_str` panics on a value that is not UTF-8; such a Host is treated as absent.
    let host = request.get_header("host").and_then(|v| v.to_str().ok());
    let authority = client_authority(host, &settings.publisher.domain);
    let scheme = if request.get_tls_protocol_bytes().is_some() {
        "https"
    } else {
        "http"
    };
    let rule = UrlRule::new(&settings.publisher.origin_host, scheme, &authority);
    Client {
        authority,
        scheme,
        ip: request.get_client_ip_addr(),
        rule,
        version: request.get_version(),
    }
}
