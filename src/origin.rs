//! The upstream phase: build the origin request and send it through a dynamic backend.

use std::time::Duration;

use fastly::backend::BackendCreationError;
use fastly::http::request::SendErrorCause;
use fastly::{Backend, Request, Response};
use trusted_server_core::{origin_request_headers, ClientInfo, Settings};
use trusted_server_settings::Scheme;

use crate::client::Client;

/// Name of the dynamic backend for `publisher.origin_url`.
const BACKEND_NAME: &str = "publisher_origin";

/// Why the origin gave no response. Decides the status: 504 for timeouts, 502 otherwise.
#[derive(Debug)]
pub enum OriginFailure {
    /// The origin did not answer in time.
    Timeout(String),
    /// The origin could not be reached or answered with garbage.
    Unavailable(String),
}

/// Sends the client's request (method, path, query, body, filtered headers) to the origin and
/// returns its response as soon as the headers arrive; the body streams afterwards.
pub fn fetch(mut request: Request, client: &Client, settings: &Settings) -> Result<Response, OriginFailure> {
    let backend = backend(settings)?;
    let p = &settings.publisher;
    let path_and_query = match request.get_query_str() {
        Some(q) => format!("{}?{q}", request.get_path()),
        None => request.get_path().to_owned(),
    };
    let info = ClientInfo { host: &client.authority, scheme: client.scheme, ip: client.ip };
    let headers = origin_request_headers(request.get_headers(), &info, &p.origin_host);
    let names: Vec<_> = request.get_header_names().cloned().collect();
    for name in names {
        request.remove_header(name);
    }
    for (name, value) in headers {
        request.append_header(name, value);
    }
    request.set_url(format!("{}://{}{}", p.origin_scheme.as_str(), p.origin_host, path_and_query));
    request.send(backend).map_err(|e| {
        let detail = format!("{e}");
        match e.root_cause() {
            SendErrorCause::ConnectionTimeout | SendErrorCause::HttpResponseTimeout | SendErrorCause::DnsTimeout => {
                OriginFailure::Timeout(detail)
            }
            _ => OriginFailure::Unavailable(detail),
        }
    })
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
        Err(e) => Err(OriginFailure::Unavailable(format!("cannot create backend for {}: {e}", p.origin_address))),
    }
}
