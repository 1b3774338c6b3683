//! `GET /_ts/health`: liveness and version, answered without touching the origin.

use fastly::http::StatusCode;
use fastly::Response;
use trusted_server_core::{Settings, VERSION};

use crate::kit::reply;

/// `GET /_ts/health`.
pub fn respond(settings: &Settings) -> Response {
    let body = format!("{{\"status\":\"ok\",\"version\":\"{VERSION}\"}}\n");
    reply::json(StatusCode::OK, body, "no-store", settings)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;

    #[test]
    fn health_reports_the_version() {
        let mut h = respond(&crate::kit::generated::SETTINGS);
        assert_eq!(h.get_status(), StatusCode::OK);
        assert!(h.take_body_str().contains(VERSION));
    }
}
