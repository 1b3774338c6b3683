//! Responses the service makes itself (JSON answers, errors), with the standard headers.

use fastly::http::{HeaderName, HeaderValue, StatusCode};
use fastly::Response;
use trusted_server_core::{apply_standard_headers, Settings};

use crate::kit::failure::OriginFailure;

/// A JSON answer of the service's own endpoints, with `cache_control` and the standard
/// headers.
pub fn json(
    status: StatusCode,
    body: impl Into<fastly::Body>,
    cache_control: &str,
    settings: &Settings,
) -> Response {
    with_standard_headers(
        Response::from_status(status)
            .with_header("content-type", "application/json")
            .with_header("cache-control", cache_control)
            .with_body(body),
        settings,
    )
}

/// 504 for an origin timeout, 502 for anything else. The body is short and generic; the
/// details go to the log only (the caller reports them).
pub fn origin_failure(failure: &OriginFailure, settings: &Settings) -> Response {
    let status = match failure {
        OriginFailure::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
        OriginFailure::Unavailable(_) => StatusCode::BAD_GATEWAY,
    };
    error(status, settings)
}

/// `404` for a spelling of one of the service's paths that no route serves (`Route::Reserved`):
/// answered here, never proxied. `HEAD` gets the headers only.
pub fn not_found(request: &fastly::Request, settings: &Settings) -> Response {
    let mut response = error(StatusCode::NOT_FOUND, settings);
    if request.get_method_str() == "HEAD" {
        response.set_body(Vec::<u8>::new());
    }
    response
}

/// A generic error response for `status`.
pub fn error(status: StatusCode, settings: &Settings) -> Response {
    let text = format!(
        "{} {}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error")
    );
    with_standard_headers(
        Response::from_status(status)
            .with_header("content-type", "text/plain; charset=utf-8")
            .with_header("cache-control", "no-store")
            .with_body(text),
        settings,
    )
}

/// Applies the standard headers (version, `[response_headers]`) to a response of our own.
pub fn with_standard_headers(mut response: Response, settings: &Settings) -> Response {
    let mut headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    apply_standard_headers(&mut headers, &settings.response_headers);
    replace_headers(&mut response, headers);
    response
}

/// Replaces every header of `response` with `headers`: each name gets exactly its values
/// there, in order. Only the names that change are written (`kit::headers`): a response from
/// the platform writes each change through with a host call.
pub fn replace_headers(response: &mut Response, headers: Vec<(HeaderName, HeaderValue)>) {
    crate::kit::headers::replace(response, &headers);
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use trusted_server_core::{VERSION, VERSION_HEADER};

    #[test]
    fn errors_are_short_generic_and_carry_the_standard_headers() {
        let mut bad_gateway = origin_failure(
            &OriginFailure::Unavailable("secret detail".into()),
            &crate::kit::generated::SETTINGS,
        );
        assert_eq!(bad_gateway.get_status(), StatusCode::BAD_GATEWAY);
        assert_eq!(bad_gateway.get_header_str(VERSION_HEADER), Some(VERSION));
        let body = bad_gateway.take_body_str();
        assert_eq!(body, "502 Bad Gateway\n");
        let timeout = origin_failure(
            &OriginFailure::Timeout("slow".into()),
            &crate::kit::generated::SETTINGS,
        );
        assert_eq!(timeout.get_status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(timeout.get_header_str(VERSION_HEADER), Some(VERSION));
    }
}
