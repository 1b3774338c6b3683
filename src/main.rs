//! Trusted Server Edge: the Fastly Compute adapter.
//!
//! A thin layer over `trusted-server-core`, read top to bottom as the request's phases, one
//! file (or folder) each: **route** (here) → **identity** (`identity`: the edge ID) →
//! **cache** (`cache`: a hit is answered without the origin) → **upstream** (`origin`, with
//! `client` for what the platform observed) → **response** (`response`: every header decided
//! before any is sent) → **body** (`body`: streamed through the pipeline, buffered, or passed through
//! untouched). Every response's headers, on every route, leave through `leaving::stamp`
//! (the `Sec-GPC` expiry of `ts-ec`, and `Server-Timing` from `timing`, which also times the
//! pipeline for the access line, `access`).
//! Settings were validated at build time and are embedded as a `static`.
#![warn(missing_docs)]
// One call into the ABI, in `body::downstream::origin_has_more_ready`; nothing else.
#![deny(unsafe_code)]

mod access;
mod admin;
mod body;
mod cache;
mod client;
mod discovery;
mod failure;
mod first_party;
mod first_party_proxy;
mod hints;
mod identity;
mod inject;
mod leaving;
mod origin;
mod partner;
mod reply;
mod response;
mod script;
mod secrets;
mod signing_keys;
mod timing;

use fastly::Request;
use trusted_server_core::cache::stale;
use trusted_server_core::publisher::identity::IdentityPlan;
use trusted_server_core::Route;

use access::{Access, Outcome};
use failure::{Failure, Phase};

include!(concat!(env!("OUT_DIR"), "/settings.rs"));

/// A plain `main`, not `#[fastly::main]`: the macro sends the returned response itself, which
/// rules out `stream_to_client`.
fn main() {
    access::init_logging(SETTINGS.logging.level);
    let mut request = Request::from_client();
    let mut access = Access::start(&request);
    // Consent first: `Sec-GPC: 1` expires a `ts-ec` cookie on whatever this request gets.
    access.expire_edge_id = identity::gpc_expiry(&request, &SETTINGS);
    // Routed as a normalising server would read the path: a spelling of one of the service's
    // paths is the service's (its handler reads the path it was routed by), never proxied.
    let routed = Route::resolve(request.get_method_str(), request.get_path());
    let (route, read_as) = (routed.route, routed.path.into_owned());
    if route != Route::PublisherProxy && read_as != request.get_path() {
        request.set_path(&read_as);
    }
    access.plan = route.name().into();
    // The service's own endpoints, one line each: answered whole, without the origin.
    let mut response = match route {
        Route::Health => reply::health(&SETTINGS),
        Route::Script => script::respond(&request, &SETTINGS),
        Route::EdgeId => identity::endpoint(&request, &SETTINGS),
        Route::Discovery => discovery::well_known(&SETTINGS),
        Route::VerifySignature => discovery::verify(request, &SETTINGS),
        Route::Admin => admin::respond(&request, &SETTINGS),
        Route::FirstPartySign => first_party::sign(&request, &SETTINGS),
        Route::FirstPartyClick => first_party::click(&request, &SETTINGS),
        Route::FirstPartyOther => first_party::other(&request, &SETTINGS),
        Route::Reserved => reply::not_found(&request, &SETTINGS),
        Route::FirstPartyProxy => {
            first_party_proxy::respond(request, &SETTINGS, &mut access);
            return access.log();
        }
        Route::PublisherProxy => {
            proxy(request, &mut access);
            return access.log();
        }
    };
    leaving::stamp(&mut response, &access, None, &SETTINGS);
    access.headers_sent(response.get_status().as_u16());
    response.send_to_client();
    access.log();
}

/// The publisher proxy: identity, upstream, response, body.
fn proxy(request: Request, access: &mut Access) {
    let client = client::observe(&request, &SETTINGS);
    let edge_id = identity::request_phase(&request, &SETTINGS);
    let is_head = request.get_method_str() == "HEAD";
    let forward = edge_id.forward.as_deref();
    // Learned early hints leave first, before the page cache or the origin is asked.
    let learning = hints::before_origin(&request, &client, &SETTINGS, access);
    // Cache: a hit is answered here, without the origin or the pipeline (src/cache.rs), with
    // a 304 when the reader's copy is current. The origin request is built first: the lookup
    // matches the origin's `Vary` against the headers the origin receives.
    let preconditions = cache::preconditions(&request);
    let key = cache::page_key(&request, &client);
    let mut upstream = origin::build_request(request, &client, forward, &SETTINGS);
    let lookup = cache::lookup(&upstream, key, &client);
    let lookup =
        match cache::answer_hit(lookup, &preconditions, &client, &edge_id, &SETTINGS, access) {
            cache::AfterHit::Served => return,
            cache::AfterHit::Refresh(fill) => {
                origin::for_fill(&mut upstream);
                return cache::refresh(upstream, fill, client, &SETTINGS, access);
            }
            cache::AfterHit::Origin(lookup) => lookup,
        };
    // A fill asks for the whole page; a request that passes forwards its range and
    // preconditions as they came.
    if lookup.fills() {
        origin::for_fill(&mut upstream);
    }
    let asked = std::time::Instant::now();
    let fetched = origin::send(upstream, &SETTINGS);
    access.origin_wait = Some(asked.elapsed());
    let origin_response = match fetched {
        Ok(response) => response,
        Err(failure) => {
            let kind = match failure {
                origin::OriginFailure::Timeout(_) => Failure::OriginTimeout,
                origin::OriginFailure::Unavailable(_) => Failure::OriginUnavailable,
            };
            let cause = failure.detail().to_owned();
            // Within stale-if-error, the stale copy answers instead of the 502/504.
            let named = format!("{kind}: {cause}");
            let Some(lookup) =
                stale_instead(lookup, &named, &preconditions, &client, &edge_id, access)
            else {
                return;
            };
            return answer_origin_failure(access, lookup, failure, kind, &cause);
        }
    };
    let status = origin_response.get_status();
    if status.is_informational() {
        // 100 and 103 are interim and consumed by the platform; a 1xx that reaches us as the
        // final answer (101 Switching Protocols, 102) cannot be relayed: the platform refuses
        // to send it and there is no body to stream.
        let cause = format!("status {status}");
        let named = format!("{}: {cause}", Failure::InterimAsFinal);
        let Some(lookup) = stale_instead(lookup, &named, &preconditions, &client, &edge_id, access)
        else {
            return;
        };
        let failure = origin::OriginFailure::Unavailable(cause.clone());
        return answer_origin_failure(access, lookup, failure, Failure::InterimAsFinal, &cause);
    }
    // A 500, 502, 503 or 504 from the origin is a failure too for stale-if-error (RFC 5861):
    // within its window the stale copy answers; otherwise the origin's answer is relayed.
    let lookup = if stale::is_origin_error(status.as_u16()) {
        let named = format!("origin answered {status}");
        let Some(lookup) = stale_instead(lookup, &named, &preconditions, &client, &edge_id, access)
        else {
            return;
        };
        lookup
    } else {
        lookup
    };
    // Hints are learned only from an answer any reader could get.
    let learning = hints::from_shared_answer(learning, &origin_response, access);
    // A response that may be stored is prepared without the reader's parts (the edge-ID
    // cookie), which `cache` adds on the way out; any other gets them here, as before.
    let assessed = cache::assess(lookup, &origin_response);
    let identity = match assessed {
        Ok(_) => &IdentityPlan::NONE,
        Err(_) => &edge_id,
    };
    let mut prepared = response::prepare(origin_response, client, identity, is_head, &SETTINGS);
    let (state, storing) = match assessed {
        Ok(storing) => storing.begin(
            &mut prepared.response,
            &prepared.plan,
            &edge_id,
            &preconditions,
            &SETTINGS,
        ),
        Err(state) => {
            cache::outgoing(&mut prepared.response, None, &state, &SETTINGS);
            (state, None)
        }
    };
    access.cache = Some(state.to_string());
    leaving::stamp(
        &mut prepared.response,
        access,
        access.cache.as_deref(),
        &SETTINGS,
    );
    let link_hints = learning
        .as_ref()
        .and_then(|_| hints::from_response(&prepared.response));
    body::send(prepared, storing, &SETTINGS, access);
    if let Some(learning) = learning {
        hints::after_page(learning, link_hints, access);
    }
}

/// The origin failed (`failure` names how): within the entry's stale-if-error, the stale copy
/// answered (`cache::serve_stale_if_error`) and `None` is returned; otherwise the lookup is
/// given back for the usual path.
fn stale_instead(
    lookup: cache::Lookup,
    failure: &str,
    preconditions: &trusted_server_core::cache::conditional::Preconditions,
    client: &client::Client,
    edge_id: &IdentityPlan,
    access: &mut Access,
) -> Option<cache::Lookup> {
    cache::serve_stale_if_error(
        lookup,
        failure,
        preconditions,
        client,
        edge_id,
        &SETTINGS,
        access,
    )
    .err()
}

/// The origin gave no response to relay: the failure is reported (before any header was
/// sent) and the client gets the service's `502` or `504`, with the cache's state and timings.
#[track_caller]
fn answer_origin_failure(
    access: &mut Access,
    lookup: cache::Lookup,
    failure: origin::OriginFailure,
    kind: Failure,
    cause: &str,
) {
    let progress = access.progress(Phase::Upstream, 0, 0);
    failure::record(kind, cause, &origin::backend_info(&SETTINGS), progress);
    access.outcome = Outcome::Error;
    let state = cache::origin_failed(lookup);
    let mut response = reply::origin_failure(&failure, &SETTINGS);
    cache::outgoing(&mut response, None, &state, &SETTINGS);
    access.cache = Some(state.to_string());
    leaving::stamp(&mut response, access, access.cache.as_deref(), &SETTINGS);
    access.headers_sent(response.get_status().as_u16());
    response.send_to_client();
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

    /// The cache key's fingerprint covers the version and every setting: a build whose
    /// settings differ (here only `script.inject`) gets another fingerprint, so another key
    /// for the same request (`crate::cache::page_key`).
    #[test]
    fn the_cache_fingerprint_changes_with_the_settings() {
        use sha2::{Digest, Sha256};
        let fingerprint = |settings: &trusted_server_settings::Settings| {
            let text = format!("{}\n{}", env!("CARGO_PKG_VERSION"), settings.to_rust_expr());
            Sha256::digest(text.as_bytes()).to_vec()
        };
        assert_eq!(fingerprint(&super::SETTINGS), super::SETTINGS_FINGERPRINT);
        let other = trusted_server_settings::load(
            include_str!("../trusted-server.toml"),
            [("TRUSTED_SERVER__SCRIPT__INJECT", "false")],
        )
        .expect("a valid override");
        assert_ne!(other, super::SETTINGS);
        assert_ne!(fingerprint(&other), super::SETTINGS_FINGERPRINT);
        // And so another key for the same request: a deploy with another rule never reads
        // the old build's rewrites.
        let own = fingerprint(&super::SETTINGS);
        let keys = crate::cache::tests::keys_under(&[&own, &fingerprint(&other)]);
        assert_eq!(
            keys[0], keys[1],
            "the build's key is under its own fingerprint"
        );
        assert_ne!(keys[1], keys[2]);
    }
}
