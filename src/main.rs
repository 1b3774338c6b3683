//! Trusted Server Edge: the Fastly Compute adapter.
//!
//! A thin layer over `trusted-server-core`, read top to bottom as the request's phases, one
//! file (or folder) each: **route** (here) → **identity** (`identity`: the edge ID) →
//! **upstream** (`origin`, with `client` for what the platform observed) → **response** (`response`: every header decided before any is
//! sent) → **body** (`body`: streamed through the pipeline, buffered, or passed through
//! untouched).
//! Settings were validated at build time and are embedded as a `static`.
#![warn(missing_docs)]
// One call into the ABI, in `body::downstream::origin_has_more_ready`; nothing else.
#![deny(unsafe_code)]

mod access;
mod admin;
mod body;
mod client;
mod discovery;
mod failure;
mod first_party;
mod first_party_proxy;
mod identity;
mod inject;
mod origin;
mod partner;
mod reply;
mod response;
mod script;
mod signing_keys;

use fastly::Request;
use trusted_server_core::Route;

use access::{Access, Outcome};
use failure::{Failure, Phase};

include!(concat!(env!("OUT_DIR"), "/settings.rs"));

/// A plain `main`, not `#[fastly::main]`: the macro sends the returned response itself, which
/// rules out `stream_to_client`.
fn main() {
    access::init_logging(SETTINGS.logging.level);
    let request = Request::from_client();
    let mut access = Access::start(&request);
    match Route::classify(request.get_method_str(), request.get_path()) {
        Route::Health => {
            access.plan = "health".into();
            access.headers_sent(200);
            reply::health(&SETTINGS).send_to_client();
        }
        Route::Script => {
            access.plan = "script".into();
            let response = script::respond(&request, &SETTINGS);
            access.headers_sent(response.get_status().as_u16());
            response.send_to_client();
        }
        Route::EdgeId => {
            access.plan = "edge-id".into();
            access.headers_sent(200);
            identity::endpoint(&request, &SETTINGS).send_to_client();
        }
        Route::Discovery => {
            access.plan = "discovery".into();
            let response = discovery::well_known(&SETTINGS);
            access.headers_sent(response.get_status().as_u16());
            response.send_to_client();
        }
        Route::Admin => {
            access.plan = "admin".into();
            let response = admin::respond(&request, &SETTINGS);
            access.headers_sent(response.get_status().as_u16());
            response.send_to_client();
        }
        Route::FirstPartySign => {
            access.plan = "first-party-sign".into();
            let response = first_party::sign(&request, &SETTINGS);
            access.headers_sent(response.get_status().as_u16());
            response.send_to_client();
        }
        Route::FirstPartyClick => {
            access.plan = "first-party-click".into();
            let response = first_party::click(&request, &SETTINGS);
            access.headers_sent(response.get_status().as_u16());
            response.send_to_client();
        }
        Route::VerifySignature => {
            access.plan = "verify-signature".into();
            let response = discovery::verify(request, &SETTINGS);
            access.headers_sent(response.get_status().as_u16());
            response.send_to_client();
        }
        Route::FirstPartyProxy => {
            access.plan = "first-party-proxy".into();
            first_party_proxy::respond(request, &SETTINGS, &mut access);
        }
        Route::PublisherProxy => proxy(request, &mut access),
    }
    access.log();
}

/// The publisher proxy: identity, upstream, response, body.
fn proxy(request: Request, access: &mut Access) {
    let client = client::observe(&request, &SETTINGS);
    let edge_id = identity::request_phase(&request, &SETTINGS);
    let is_head = request.get_method_str() == "HEAD";
    let forward = edge_id.forward.as_deref();
    let origin_response = match origin::fetch(request, &client, forward, &SETTINGS) {
        Ok(response) => response,
        Err(failure) => {
            let kind = match failure {
                origin::OriginFailure::Timeout(_) => Failure::OriginTimeout,
                origin::OriginFailure::Unavailable(_) => Failure::OriginUnavailable,
            };
            upstream_failed(access, kind, failure.detail());
            let response = reply::origin_failure(&failure, &SETTINGS);
            access.headers_sent(response.get_status().as_u16());
            return response.send_to_client();
        }
    };
    if origin_response.get_status().is_informational() {
        // 100 and 103 are interim and consumed by the platform; a 1xx that reaches us as the
        // final answer (101 Switching Protocols, 102) cannot be relayed: the platform refuses
        // to send it and there is no body to stream.
        let cause = format!("status {}", origin_response.get_status());
        upstream_failed(access, Failure::InterimAsFinal, &cause);
        let failure = origin::OriginFailure::Unavailable(cause);
        let response = reply::origin_failure(&failure, &SETTINGS);
        access.headers_sent(response.get_status().as_u16());
        return response.send_to_client();
    }
    let prepared = response::prepare(origin_response, client, &edge_id, is_head, &SETTINGS);
    body::send(prepared, &SETTINGS, access);
}

/// Reports a failure before any response header was sent; the caller answers with an error.
#[track_caller]
fn upstream_failed(access: &mut Access, kind: Failure, cause: &str) {
    let progress = access.progress(Phase::Upstream, 0, 0);
    failure::record(kind, cause, &origin::backend_info(&SETTINGS), progress);
    access.outcome = Outcome::Error;
}

#[cfg(test)]
mod tests {
    /// The embedded settings are exactly what the settings crate loads from the file: the
    /// build-time code generation loses nothing. (scripts/test.sh builds without overrides.)
    #[test]
    fn embedded_settings_equal_the_loaded_file() {
        let loaded = trusted_server_settings::load(
            include_str!("../trusted-server.toml"),
            std::iter::empty::<(String, String)>(),
        )
        .expect("trusted-server.toml is valid");
        assert_eq!(loaded, super::SETTINGS);
    }
}
