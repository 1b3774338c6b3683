//! `POST /_ts/ids/sync?partner=<code>`: an ad partner pushes, server to server, the IDs it has
//! for readers it knows by their edge ID. The partner is a bidder with an `eid_source` and a
//! `sync_token_key`; it proves who it is with its own bearer token from the Secret Store
//! (`ids.secret_store`), checked in constant time by the core (`ids::token`), and can only
//! write its own IDs: the partner is the one the token belongs to, never something in the body.
//!
//! The batch (`{"pairs": [{"ec": …, "id": …}]}`, at most `ids.max_batch` pairs and
//! `MAX_SYNC_BODY_BYTES`) is refused whole when it cannot be read, and when its pairs would
//! pass the partner's `ids.max_pairs_per_minute` at this POP (`429` with `Retry-After`,
//! `kit::rate`); otherwise each pair is
//! answered alone (`stored`, `unchanged`, `unknown_ec`, `refused_by_consent`, `malformed`,
//! `unavailable`). Each edge ID's pairs are applied to its entry by one compare-and-set
//! (`phases::partner_ids`): a pair for a reader the edge has not seen is `unknown_ec` (no
//! entry is made for it), and one the reader's consent does not allow is refused. Nothing a
//! refused batch or pair carried is stored, and nothing already stored is lost.
//!
//! Every refusal of the caller (unknown partner, missing or wrong token) is the same `401`,
//! logged at `warn` with its reason and the partner's code, never the token.

use fastly::http::header::{AUTHORIZATION, RETRY_AFTER, WWW_AUTHENTICATE};
use fastly::http::StatusCode;
use fastly::{Request, Response};
use serde_json::json;
use trusted_server_core::ids::token::{PartnerToken, CHALLENGE};
use trusted_server_core::ids::{
    answer_json, apply_in_order, by_edge_id, read_batch, Pair, PairAnswer, MAX_SYNC_BODY_BYTES,
};
use trusted_server_core::Settings;
use trusted_server_settings::Bidder;

use crate::kit::secrets::Store;
use crate::kit::{rate, reply, request_body};
use crate::phases::partner_ids::{self, Graph};

/// The route's path.
pub const PATH: &str = "/_ts/ids/sync";

/// Answers a partner's sync.
pub fn respond(mut request: Request, settings: &Settings) -> Response {
    if !settings.ids.enabled {
        return reply::not_found(&request, settings);
    }
    let code = request.get_query_parameter("partner").unwrap_or_default();
    let partner = (settings.auction.bidders.iter())
        .find(|b| b.code == code && b.eid_source.is_some() && b.sync_token_key.is_some());
    let Some(partner) = partner else {
        log::warn!("ids sync refused (401): no partner {code:?} with a sync token");
        return unauthorized(settings);
    };
    let token = match token_of(partner, settings) {
        Ok(token) => token,
        Err(why) => return unavailable(&format!("for partner {code}: {why}"), settings),
    };
    let authorization = (request.get_headers())
        .filter(|(name, _)| *name == AUTHORIZATION)
        .map(|(_, value)| value.as_bytes());
    if let Err(refused) = token.check(authorization) {
        log::warn!(
            "ids sync refused (401) for partner {code}: {}",
            refused.as_str()
        );
        return unauthorized(settings);
    }
    let body = match request_body::bounded(&mut request, MAX_SYNC_BODY_BYTES) {
        Ok(body) => body,
        Err(status) => return answer(status, "body too large or unreadable", settings),
    };
    let max = usize::try_from(settings.ids.max_batch).unwrap_or(usize::MAX);
    let pairs = match read_batch(&body, max) {
        Ok(pairs) => pairs,
        Err(e) => {
            let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
            return answer(status, &e.to_string(), settings);
        }
    };
    // Every pair counts, malformed or not: the budget bounds what a partner makes the edge do.
    let units = u32::try_from(pairs.len()).unwrap_or(u32::MAX);
    let per_minute = settings.ids.max_pairs_per_minute;
    if let Err(spent) = rate::take(
        &format!("ids-sync/{}", partner.code),
        units,
        per_minute,
        partner_ids::now(),
    ) {
        log::warn!(
            "ids sync refused (429) for partner {}: {units} pairs past {per_minute} a minute",
            partner.code
        );
        let mut response = answer(
            StatusCode::TOO_MANY_REQUESTS,
            "past ids.max_pairs_per_minute: nothing of this batch was applied",
            settings,
        );
        response.set_header(RETRY_AFTER, spent.retry_after_secs.to_string());
        return response;
    }
    let graph = match Graph::open(&settings.ids.kv_store) {
        Ok(graph) => graph,
        Err(e) => return unavailable(&format!("{e} (ids.kv_store)"), settings),
    };
    let answers = apply(&graph, &partner.code, &pairs, partner_ids::now(), settings);
    let body = answer_json(&pairs, &answers).to_string();
    reply::json(StatusCode::OK, body, "no-store", settings)
}

/// Each pair's answer: the malformed alone, the others by one compare-and-set per edge ID.
fn apply(
    graph: &Graph,
    partner: &str,
    pairs: &[Pair],
    now: u64,
    settings: &Settings,
) -> Vec<PairAnswer> {
    let ttl = partner_ids::ttl(settings);
    let ttl_secs = ttl.as_secs();
    let mut answers: Vec<PairAnswer> = (pairs.iter())
        .map(|pair| match pair {
            Pair::Malformed { why, .. } => PairAnswer::Malformed(why),
            Pair::Valid { .. } => PairAnswer::Unavailable,
        })
        .collect();
    for (ec, indices) in by_edge_id(pairs) {
        let ids: Vec<&str> = (indices.iter())
            .filter_map(|&i| match &pairs[i] {
                Pair::Valid { id, .. } => Some(id.as_str()),
                Pair::Malformed { .. } => None,
            })
            .collect();
        let change =
            |entry: &mut _| apply_in_order(entry, partner, ids.iter().copied(), now, ttl_secs);
        let got = match graph.update(ec, false, ttl, change) {
            Ok(Some(got)) => got,
            Ok(None) => vec![PairAnswer::UnknownEdgeId; indices.len()],
            Err(e) => {
                // The edge ID is the reader's pseudonym: not logged.
                log::warn!("ids sync: an entry could not be changed for partner {partner}: {e}");
                continue;
            }
        };
        for (&i, got) in indices.iter().zip(got) {
            answers[i] = got;
        }
    }
    answers
}

/// The partner's token from the Secret Store, or why not (never its value).
fn token_of(partner: &Bidder, settings: &Settings) -> Result<PartnerToken, String> {
    let key = partner.sync_token_key.as_deref().unwrap_or_default();
    let store =
        Store::open(&settings.ids.secret_store, "ids.secret_store").map_err(|e| e.to_string())?;
    store
        .read(key, "sync_token_key", PartnerToken::new)
        .map_err(|e| e.to_string())
}

/// `503`, the cause logged (store and key names, never a value).
fn unavailable(why: &str, settings: &Settings) -> Response {
    log::error!("ids sync closed (503): {why}");
    answer(
        StatusCode::SERVICE_UNAVAILABLE,
        "sync unavailable",
        settings,
    )
}

fn unauthorized(settings: &Settings) -> Response {
    let mut response = answer(StatusCode::UNAUTHORIZED, "unauthorized", settings);
    response.set_header(WWW_AUTHENTICATE, CHALLENGE);
    response
}

fn answer(status: StatusCode, error: &str, settings: &Settings) -> Response {
    let body = json!({ "error": error }).to_string();
    reply::json(status, body, "no-store", settings)
}
