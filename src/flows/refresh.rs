//! The stale-while-revalidate refresh: after a stale copy was served, the same request asks
//! the origin again and stores the rewrite, as a fill would. Nothing here reaches the client
//! (it has its answer); failures are logged and leave the stale entry to expire. The store is
//! the cache phase's; the order of things (origin, response, injection, body into the entry)
//! is this flow's.

use fastly::{Request, Response};
use trusted_server_core::cache::PassWhy;
use trusted_server_core::publisher::identity::IdentityPlan;
use trusted_server_core::Settings;

use crate::kit::access::Access;
use crate::phases::cache::{self, Fill, Lookup};
use crate::phases::client::Client;
use crate::phases::{body, inject, origin, response};

/// Refreshes the entry `fill` holds the obligation for: sends `upstream`, the fill's origin
/// request this request's lookup found the entry with (so the headers the entry's variant is
/// keyed on are the ones the origin gets again), and stores the rewrite if the answer may be
/// stored. `learn_hints`: the pipeline reads the page's head for early hints, as it would have
/// for this request's own page (what it finds is not stored: no page was sent).
pub fn refresh(
    upstream: Request,
    fill: Fill,
    client: &Client,
    learn_hints: bool,
    settings: &Settings,
    access: &mut Access,
) {
    access.cache = Some("HIT(stale, refreshing)".into());
    let Some((origin_response, fill)) = ask_origin(upstream, fill, settings) else {
        return;
    };
    let storing = match cache::assess(Lookup::Fill(fill), &origin_response) {
        Ok(storing) => storing,
        Err(state) => {
            log::info!("cache: refreshed answer not stored: {state}");
            return;
        }
    };
    let mut prepared = response::prepare(
        origin_response,
        client,
        &IdentityPlan::NONE,
        false,
        settings,
    );
    prepared.inject = inject::decide(&prepared.response, &prepared.plan, client, settings);
    let store = match storing.refill(&prepared.response, &prepared.plan) {
        Ok(store) => store,
        Err(state) => return log::info!("cache: refreshed answer not stored: {state}"),
    };
    // The access line reports the stale copy the client got, not how the refresh ended.
    let served = access.outcome.clone();
    let refreshed = body::send(prepared, Some(store), learn_hints, None, settings, access).complete;
    log::info!("cache: stale entry refreshed: {refreshed}");
    access.cache = Some(format!("HIT(stale, refreshed={refreshed})"));
    access.outcome = served;
}

/// The origin's answer to the refresh, with the obligation; `None` (logged, the obligation
/// given up) when it gave none, or a `1xx` as its final answer.
fn ask_origin(upstream: Request, fill: Fill, settings: &Settings) -> Option<(Response, Fill)> {
    match origin::send(upstream, settings) {
        Ok(r) if !r.get_status().is_informational() => Some((r, fill)),
        Ok(r) => {
            log::warn!(
                "cache: refresh got status {}; not refreshed",
                r.get_status()
            );
            let _ = fill.cancel(PassWhy::OriginError);
            None
        }
        Err(e) => {
            log::warn!("cache: refresh failed, stale entry kept: {}", e.detail());
            let _ = fill.cancel(PassWhy::OriginError);
            None
        }
    }
}
