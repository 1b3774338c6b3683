//! The publisher proxy: every request no own endpoint answers. Read top to bottom as its
//! phases: **client** and **identity** (what the platform observed, the edge ID) → the
//! **auction** of a navigation to a page with ad slots (planned now, its bidders asked after
//! the origin, their answers read as they come, the rest collected when the page's body has
//! ended) → **hints** (learned early hints leave first) → **cache** (a hit is answered
//! without the origin) →
//! **origin** (or, when it fails, a stale copy or the service's 502/504) → **response** and
//! **injection** (every header decided before any is sent) → **body** (streamed through the
//! pipeline, buffered, or passed through untouched; filling the cache entry when it may be
//! stored) → **hints** learned from the page.

use std::time::{Duration, Instant};

use fastly::{Request, Response};
use trusted_server_core::cache::stale;
use trusted_server_core::consent::Decision;
use trusted_server_core::publisher::identity::{IdentityPlan, RequestFacts};
use trusted_server_core::Settings;

use crate::flows::auction::with_partner_eids;
use crate::flows::partner_ids::PageView;
use crate::flows::refresh::refresh;
use crate::kit::access::{Access, Outcome};
use crate::kit::failure::{self, Failure, OriginFailure, Phase};
use crate::kit::{leaving, reply};
use crate::phases::auction::{self, Bidding, Planned};
use crate::phases::cache::{self, AfterHit, Lookup, Recipient, Store};
use crate::phases::client::Client;
use crate::phases::consent::Consent;
use crate::phases::response::Prepared;
use crate::phases::{body, client, hints, identity, inject, origin, response};

/// The flow: identity, the navigation auction's plan, hints, cache, origin (with the auction's
/// start), response, body (with the auction's bids before `</body>`), hints. The reader's consent
/// gates the edge ID (the identity phase), the auction and `X-TS-EC` to the origin; on a cache
/// hit the stored page is reader-neutral and the cookie is this reader's, gated the same way.
/// It is decided only if one of them is in play: a request that is no navigation and carries
/// no edge ID (a page's stylesheets, scripts, images) has none of them.
///
/// Returns the page view the partner-ID graph hears of once the response and its access line
/// have left (`flows::partner_ids`): a navigation of a reader with an edge ID.
pub fn run(
    request: Request,
    settings: &Settings,
    consent: &Consent,
    facts: &RequestFacts,
    access: &mut Access,
) -> Option<PageView> {
    let client = client::observe_as(&request, facts.navigation, settings);
    let allowed = || consent.decision().edge_id;
    let edge_id = identity::request_phase_of(facts, allowed, settings);
    let navigation = client.navigation;
    serve(request, client, &edge_id, settings, consent, access);
    let returning = edge_id.valid_cookie.is_some() && edge_id.valid_cookie == edge_id.forward;
    let edge_id = edge_id.forward.filter(|_| navigation)?;
    Some(PageView { edge_id, returning })
}

/// The flow of [`run`] up to the page's last byte.
fn serve(
    request: Request,
    client: Client,
    edge_id: &IdentityPlan,
    settings: &Settings,
    consent: &Consent,
    access: &mut Access,
) {
    // Decided on now, from the reader's request; the bidders are asked after the origin: while
    // it thinks if it is slow to answer (`auction.origin_first_within_ms`), else once the page's first
    // bytes have left (for a stored page, once its bytes before `</body>` have). No bidder's
    // request delays the origin's or the reader's first byte.
    let reader_id = edge_id.valid_cookie.as_deref();
    let auction = auction::for_page(&request, &client, reader_id, settings, || {
        consent.decision()
    });
    access.auction = Some(auction.as_ref().map_or_else(|why| *why, |_| "on"));
    let auction = auction.ok();
    let is_head = request.get_method_str() == "HEAD";
    let key = cache::page_key(&request, &client);
    // Learned early hints leave first, before the page cache or the origin is asked.
    let learning = hints::before_origin(&request, &client, &key, settings);
    // The origin request is built before the lookup: the lookup matches the origin's `Vary`
    // against the headers the origin receives.
    let preconditions = cache::preconditions(&request);
    let forward = (edge_id.forward.as_deref()).filter(|_| consent.decision().origin);
    let mut upstream = origin::build_request(request, &client, forward, settings);
    let lookup = cache::lookup(&upstream, key, &client);
    let recipient = Recipient {
        preconditions: &preconditions,
        client: &client,
        edge_id,
    };
    let (lookup, auction) = match cache::answer_hit(lookup, &recipient, auction, settings, access) {
        AfterHit::Served => return,
        AfterHit::Bids(response, codec, planned, refresh_fill) => {
            let start = || {
                let decision = consent.decision();
                with_partner_eids(planned, edge_id.valid_cookie.as_deref(), settings, decision)
                    .start(settings, decision)
            };
            body::send_stored(*response, codec, start, settings, access);
            if let Some(fill) = refresh_fill {
                origin::for_fill(&mut upstream);
                let learn_hints = learning.is_some();
                refresh(upstream, fill, &client, learn_hints, settings, access);
            }
            return;
        }
        AfterHit::Refresh(fill) => {
            origin::for_fill(&mut upstream);
            let learn_hints = learning.is_some();
            return refresh(upstream, fill, &client, learn_hints, settings, access);
        }
        AfterHit::Origin(lookup, auction) => (lookup, auction),
    };
    // A fill asks for the whole page; a request that passes forwards its range and
    // preconditions as they came.
    if lookup.fills() {
        origin::for_fill(&mut upstream);
    }
    // Only a planned auction consults the decision (already made to plan it).
    let auction = auction.map(|planned| (planned, consent.decision()));
    let asked = ask_origin(upstream, lookup, &recipient, auction, settings, access);
    let Some((origin_response, lookup, auction)) = asked else {
        return;
    };
    // Hints are learned only from an answer any reader could get.
    let learning = hints::from_shared_answer(learning, &origin_response);
    let (prepared, storing, auction) = prepare(
        origin_response,
        lookup,
        &recipient,
        is_head,
        auction,
        settings,
        access,
    );
    let link_hints = learning
        .as_ref()
        .and_then(|_| hints::from_response(&prepared.response));
    let learn = learning.is_some();
    let sent = body::send(prepared, storing, learn, auction, settings, access);
    if let (Some(learning), true) = (learning, sent.complete) {
        hints::after_page(learning, link_hints, sent.head_hints);
    }
}

/// Whether the origin answered within `auction.origin_first_within_ms` (`0`: never waited
/// for).
fn origin_first(sent: &origin::Sent, settings: &Settings) -> bool {
    match settings.auction.origin_first_within_ms {
        0 => false,
        ms => sent.answered_within(Duration::from_millis(u64::from(ms))),
    }
}

/// Sends the origin request, and, unless the origin answers within
/// `auction.origin_first_within_ms`, asks the navigation's bidders while it thinks (otherwise
/// the body phase asks them once the page's first bytes have left). Asking bidders costs the
/// guest, and under Viceroy the host's runtime, a fraction of a millisecond per bidder: a
/// slow origin's think time hides that cost, a fast origin's first byte would pay it. The
/// origin's answer comes back with the lookup and the auction, to be relayed; when the
/// origin failed (no answer, a `1xx` as its final answer, or a `5xx`), the stale copy answers
/// within stale-if-error (RFC 5861), a page with the reader's bids, and `None` is returned.
/// Otherwise a `5xx` is relayed as the origin's answer, and the others get the service's
/// `502` or `504` here.
fn ask_origin<'a>(
    upstream: Request,
    lookup: Lookup,
    recipient: &Recipient,
    auction: Option<(Planned<'a>, &'a Decision<'a>)>,
    settings: &'a Settings,
    access: &mut Access,
) -> Option<(Response, Lookup, Option<Bidding<'a>>)> {
    let asked = Instant::now();
    access.origin_sent = Some(asked);
    let sent = origin::send_async(upstream, settings);
    // Only a page on its way can take bids; the reader's partner IDs are looked up meanwhile.
    let auction = auction.map(|(planned, decision)| {
        let reader_id = recipient.edge_id.valid_cookie.as_deref();
        (
            with_partner_eids(planned, reader_id, settings, decision),
            decision,
        )
    });
    let auction = match (&sent, auction) {
        (Ok(sent), Some((planned, decision))) => Some(match origin_first(sent, settings) {
            true => Bidding::Waiting {
                planned,
                settings,
                decision,
            },
            false => {
                access.auction_asked = Some(Instant::now());
                Bidding::Asked(planned.start(settings, decision))
            }
        }),
        _ => None,
    };
    let fetched = sent.and_then(|sent| sent.wait(settings));
    access.origin_wait = Some(asked.elapsed());
    // What failed, for the log, and what to relay or answer unless a stale copy answers.
    let (failed, unusable) = match fetched {
        Err(failure) => {
            let named = format!("{}: {}", failure.kind(), failure.detail());
            let kind = failure.kind();
            (named, Err((failure, kind)))
        }
        // 100 and 103 are interim and consumed by the platform; a 1xx that reaches us as the
        // final answer (101 Switching Protocols, 102) cannot be relayed: the platform refuses
        // to send it and there is no body to stream.
        Ok(response) if response.get_status().is_informational() => {
            let cause = format!("status {}", response.get_status());
            let named = format!("{}: {cause}", Failure::InterimAsFinal);
            let failure = OriginFailure::Unavailable(cause);
            (named, Err((failure, Failure::InterimAsFinal)))
        }
        Ok(response) if stale::is_origin_error(response.get_status().as_u16()) => (
            format!("origin answered {}", response.get_status()),
            Ok(response),
        ),
        Ok(response) => return Some((response, lookup, auction)),
    };
    // A stale copy that is a page takes the reader's bids as a fresh hit does.
    let (lookup, auction) =
        match cache::serve_stale_if_error(lookup, &failed, recipient, auction, settings, access) {
            AfterHit::Origin(lookup, auction) => (lookup, auction),
            AfterHit::Bids(response, codec, bidding, _) => {
                body::send_stored(*response, codec, || bidding.asked(), settings, access);
                return None;
            }
            AfterHit::Served | AfterHit::Refresh(_) => return None,
        };
    match unusable {
        Ok(response) => Some((response, lookup, auction)),
        Err((failure, kind)) => {
            answer_origin_failure(access, lookup, failure, kind, settings);
            None
        }
    }
}

/// The origin gave no response to relay: the failure is reported (before any header was
/// sent) and the client gets the service's `502` or `504`, with the cache's state and timings.
#[track_caller]
fn answer_origin_failure(
    access: &mut Access,
    lookup: Lookup,
    failure: OriginFailure,
    kind: Failure,
    settings: &Settings,
) {
    let progress = access.progress(Phase::Upstream, 0, 0);
    failure::record(
        kind,
        failure.detail(),
        &origin::backend_info(settings),
        progress,
    );
    access.outcome = Outcome::Error;
    let state = cache::origin_failed(lookup);
    let mut response = reply::origin_failure(&failure, settings);
    cache::outgoing(&mut response, None, &state, settings);
    access.cache = Some(state.to_string());
    leaving::stamp(&mut response, access, access.cache.as_deref(), settings);
    access.headers_sent(response.get_status().as_u16());
    response.send_to_client();
}

/// The response and injection phases, with the cache's part: a response that may be stored
/// is prepared without the reader's parts (the edge-ID cookie), which the cache adds on the
/// way out; any other gets them here. Its headers are final when this returns, stamped as
/// every response's are, with the insert to fill, if any, and the navigation's auction if the
/// page takes its bids (`body::takes_bids`; otherwise it is abandoned here).
fn prepare<'s>(
    origin_response: Response,
    lookup: Lookup,
    recipient: &Recipient,
    is_head: bool,
    auction: Option<Bidding<'s>>,
    settings: &Settings,
    access: &mut Access,
) -> (Prepared, Option<Store>, Option<Bidding<'s>>) {
    let Recipient {
        preconditions,
        client,
        edge_id,
    } = *recipient;
    let assessed = cache::assess(lookup, &origin_response);
    let identity = match assessed {
        Ok(_) => &IdentityPlan::NONE,
        Err(_) => edge_id,
    };
    let mut prepared = response::prepare(origin_response, client, identity, is_head, settings);
    prepared.inject = inject::decide(&prepared.response, &prepared.plan, client, settings);
    let status = prepared.response.get_status().as_u16();
    let auction = auction.filter(|_| body::takes_bids(status, &prepared.plan));
    let response = &mut prepared.response;
    let read_back = auction.is_none();
    let (state, storing) = match assessed {
        Ok(storing) => storing.begin(
            response,
            &prepared.plan,
            edge_id,
            preconditions,
            read_back,
            settings,
        ),
        Err(state) => {
            cache::outgoing(response, None, &state, settings);
            (state, None)
        }
    };
    access.cache = Some(state.to_string());
    leaving::stamp(response, access, access.cache.as_deref(), settings);
    (prepared, storing, auction)
}
