//! `GET /_ts/ec`: the client's edge ID as JSON, for the first-party script.

use fastly::http::StatusCode;
use fastly::{Request, Response};
use trusted_server_core::consent::Decision;
use trusted_server_core::publisher::identity::endpoint_body;
use trusted_server_core::Settings;

use crate::kit::reply;
use crate::phases::identity;

/// `GET /_ts/ec`: the client's ID when its cookie verifies and consent allows an edge ID,
/// else `null` (as under `Sec-GPC: 1`); never stored.
pub fn respond(request: &Request, settings: &Settings, decision: &Decision) -> Response {
    let plan = identity::request_phase(request, || decision.edge_id, settings);
    let body = endpoint_body(plan.valid_cookie.as_deref());
    reply::json(StatusCode::OK, body, "no-store, private", settings)
}
