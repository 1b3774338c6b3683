//! The cache phase: the store of cached rewrites, adapter side (the core cache's transactions,
//! stream-back and purge). Every decision is the core's (`trusted_server_core::cache`); this
//! file only talks to the platform. It runs no request of its own: the refresh of a stale
//! entry is a flow (`flows::refresh`) that uses this store like any other.
//!
//! Per request: [`lookup`] before the origin is asked, with the headers of the origin request
//! already built, since a variant is keyed on what the origin receives
//! (`trusted_server_core::cache::fill`). A hit is answered from the cache without the origin
//! or the pipeline; concurrent misses for one key wait in the transaction for the one request
//! that fills it. Then [`assess`] on the origin's response headers; then
//! [`Storing::begin`] on the way into the body phase, which starts the insert and gives back
//! the body the client reads (the stored bytes, streamed back as they are written), or, in a
//! buffered build, the insert to make once the whole page is rewritten ([`Store`]). A failure
//! of the cache is logged at `warn` and the request served around it.
//!
//! Per-reader headers are never stored: the response to store is prepared without the edge-ID
//! step, its header block encoded, and only then the reader's own `Set-Cookie` added to the
//! response that leaves ([`outgoing`]), on a hit as on a miss.
//!
//! Stale entries (`trusted_server_core::cache::stale`): an entry is inserted with the longer
//! of the origin's `stale-while-revalidate` and `stale-if-error` as the core cache's window,
//! and its real windows in its header block. A lookup that finds it stale tells them apart:
//! within `stale-while-revalidate` the copy is served and refreshed ([`Lookup::Stale`],
//! [`Storing::refill`]);
//! past it, within `stale-if-error`, the origin is asked first ([`Lookup::StaleIfError`]) and
//! the copy answers only if the origin fails ([`serve_stale_if_error`]).

use std::io::{Read, Write};

use fastly::cache::core::{CacheKey, Found, Transaction};
use fastly::http::{HeaderName, HeaderValue, StatusCode};
use fastly::{Body, Request, Response};
use trusted_server_core::cache::conditional::{self, Preconditions};
use trusted_server_core::cache::shared::{self, Audience, Reader};
use trusted_server_core::cache::stale::{self, StaleWindows, Staleness};
use trusted_server_core::cache::{
    fill, key::KeyInputs, policy, stored, surrogate, CacheState, PassWhy,
};
use trusted_server_core::publisher::identity::IdentityPlan;
use trusted_server_core::{BodyPlan, Codec, Rewrite, Settings};

use crate::kit::access::{Access, Outcome};
use crate::kit::generated::SETTINGS_FINGERPRINT;
use crate::phases::client::Client;

/// What the lookup found for this request.
pub enum Lookup {
    /// The cache is not used for this request.
    Pass(PassWhy),
    /// A usable copy: served as it is.
    Hit(Box<Entry>),
    /// A stale copy within `stale-while-revalidate`, and the obligation to refresh it: served
    /// as it is, then refreshed in the same request, after the response left.
    Stale(Box<Entry>, Fill),
    /// This request fills the entry; other requests for it wait in the transaction.
    Fill(Fill),
    /// A stale copy past `stale-while-revalidate`, within `stale-if-error`: the origin is
    /// asked first. If it fails, the copy answers ([`serve_stale_if_error`]); if it answers,
    /// the answer fills the entry as on a miss, when this request has the obligation (`Some`),
    /// or passes (`PASS(refreshing)`) when another request has it.
    StaleIfError(Box<Entry>, Option<Fill>),
}

/// An entry the lookup found, with its user metadata (the stored header block, or a pass
/// marker). Each read of either is a host call, and the metadata is copied into the guest each
/// time, so the lookup reads them once and everything after uses this. (Boxed in [`Lookup`],
/// which is passed around by value.)
pub struct Entry {
    found: Found,
    metadata: CacheKey,
}

impl Lookup {
    /// Whether the origin's answer to this request may fill the entry: then the origin request
    /// is a fill's (`crate::phases::origin::for_fill`), the one the lookup was keyed on.
    pub fn fills(&self) -> bool {
        matches!(
            self,
            Lookup::Fill(_) | Lookup::Stale(..) | Lookup::StaleIfError(_, Some(_))
        )
    }
}

/// The obligation to fill one entry, and what its surrogate keys are made from.
pub struct Fill {
    tx: Transaction,
    key: [u8; 32],
    authority: String,
    path: String,
    /// Whether the filling request carries the reader's own cookies: its answer is stored
    /// only when explicitly shared, and its passes are never remembered.
    reader: Reader,
}

impl Fill {
    /// Gives up the obligation. A pass the origin's answer decided is remembered for
    /// `shared::remembered_for` (an entry with no body whose metadata names the reason, under
    /// the page's surrogate key), so requests for the key stop queueing behind each other; any
    /// other (and every pass of a reader with cookies) gives the obligation to the next waiting
    /// request.
    pub fn cancel(self, why: PassWhy) -> CacheState {
        if let Some(remember) = shared::remembered_for(why, self.reader) {
            let page = surrogate::page_key(&self.authority, &self.path);
            let marker = self
                .tx
                .insert(remember)
                .surrogate_keys([page.as_str(), surrogate::ALL_REWRITTEN])
                .user_metadata(CacheKey::from(stored::pass_marker(why)))
                .known_length(0)
                .execute();
            let finished = match marker {
                Ok(body) => body.finish().map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = finished {
                log::warn!("cache: cannot remember the pass: {e}");
            }
            return CacheState::Pass(why);
        }
        if let Err(e) = self.tx.cancel_insert_or_update() {
            log::warn!("cache: cannot cancel the insert: {e}");
        }
        CacheState::Pass(why)
    }
}

/// The lookup of the entry `key` ([`page_key`] of the client's request) for the origin
/// request `upstream` (`crate::phases::origin::build_request`). Only `GET` without `Authorization`
/// looks; a request with the reader's own cookies is served only an entry stored for every
/// reader (`PASS(cookie)` otherwise). The origin's `Vary` is matched against `upstream`'s headers as a fill sends them
/// (`trusted_server_core::cache::fill`): the values the origin receives, not the client's.
pub fn lookup(upstream: &Request, key: [u8; 32], client: &Client) -> Lookup {
    let ask = crate::phases::origin::ask(upstream);
    if let Err(why) = shared::request_allows(ask) {
        return Lookup::Pass(why);
    }
    // Every header of the fill's request (the cache uses only those the `Vary` names).
    let mut builder = Transaction::lookup(CacheKey::copy_from_slice(&key));
    let names = fill::lookup_headers(upstream.get_header_names().map(|n| (n.as_str(), n)));
    for (_, name) in names {
        builder = builder.header_values(name, upstream.get_header_all(name));
    }
    let tx = match builder.execute() {
        Ok(tx) => tx,
        Err(e) => {
            log::warn!("cache: lookup failed, served around the cache: {e}");
            return Lookup::Pass(PassWhy::CacheError);
        }
    };
    let entry = tx.found().map(|found| {
        Box::new(Entry {
            metadata: found.user_metadata(),
            found,
        })
    });
    let remembered = (entry.as_ref()).and_then(|entry| stored::read_pass_marker(&entry.metadata));
    if let Some(why) = remembered {
        if tx.must_insert_or_update() {
            let _ = tx.cancel_insert_or_update();
        }
        return Lookup::Pass(why);
    }
    // An entry not explicitly shared is not this reader's to read: it passes, and an
    // obligation to update the entry goes to the next waiting request.
    let audience = (entry.as_ref()).map(|entry| stored::audience(&entry.metadata));
    if audience.is_some_and(|audience| !audience.serves(ask.reader)) {
        if tx.must_insert_or_update() {
            if let Err(e) = tx.cancel_insert_or_update() {
                log::warn!("cache: cannot cancel the update: {e}");
            }
        }
        return Lookup::Pass(PassWhy::Cookie);
    }
    let fill = |tx| Fill {
        tx,
        key,
        authority: client.authority.clone(),
        path: upstream.get_path().to_owned(),
        reader: ask.reader,
    };
    let Some(entry) = entry else {
        return if tx.must_insert() {
            Lookup::Fill(fill(tx))
        } else {
            Lookup::Pass(PassWhy::CacheError)
        };
    };
    // The core cache finds an entry while it is fresh or within its one stale window; which
    // of the origin's windows that is, the entry's age and its stored windows tell.
    let windows = entry_windows(&entry.metadata);
    let obligated = tx.must_insert_or_update();
    match stale::staleness(entry.found.age(), entry.found.max_age(), windows) {
        // A stale copy within stale-while-revalidate: this request serves it and refreshes
        // it; other requests meanwhile get the stale copy without the obligation.
        Staleness::Fresh | Staleness::WhileRevalidate if obligated => {
            Lookup::Stale(entry, fill(tx))
        }
        Staleness::Fresh | Staleness::WhileRevalidate => Lookup::Hit(entry),
        Staleness::IfError => Lookup::StaleIfError(entry, obligated.then(|| fill(tx))),
        // Expired while the lookup ran: as if not found; the insert replaces the entry.
        Staleness::Expired if obligated => Lookup::Fill(fill(tx)),
        Staleness::Expired => Lookup::Pass(PassWhy::Refreshing),
    }
}

/// The stale windows an entry with `metadata` was stored with. An entry of the previous header layout (`TSH1`,
/// no windows) was inserted with its `stale-while-revalidate` as the cache's only window, so
/// all of that window is taken as `stale-while-revalidate`, as then. (Not read from
/// `Found::stale_while_revalidate`: Viceroy 0.22 does not implement that host call, and the
/// SDK panics on the answer.)
fn entry_windows(metadata: &[u8]) -> StaleWindows {
    stored::windows(metadata).unwrap_or(StaleWindows {
        while_revalidate: policy::MAX_LIFETIME,
        if_error: std::time::Duration::ZERO,
    })
}

/// The request's preconditions (`If-None-Match`, `If-Modified-Since`), read before the request
/// goes to the origin, for a hit to answer `304 Not Modified` ([`hit`]).
pub fn preconditions(request: &Request) -> Preconditions {
    Preconditions::of(
        request.get_method_str(),
        request
            .get_headers()
            .map(|(n, v)| (n.as_str(), v.as_bytes())),
    )
}

/// The cache key of the rewritten answer to `request` (also the base of its learned early
/// hints' key, `phases::hints`).
pub fn page_key(request: &Request, client: &Client) -> [u8; 32] {
    key_under(&SETTINGS_FINGERPRINT, request, client)
}

/// [`page_key`] for a build whose settings have `fingerprint`.
fn key_under(fingerprint: &[u8], request: &Request, client: &Client) -> [u8; 32] {
    let path_and_query = match request.get_query_str() {
        Some(q) => format!("{}?{q}", request.get_path()),
        None => request.get_path().to_owned(),
    };
    let accept_encoding: Vec<&[u8]> = request
        .get_header_all("accept-encoding")
        .map(HeaderValue::as_bytes)
        .collect();
    let accept_encoding = String::from_utf8_lossy(&accept_encoding.join(&b","[..])).into_owned();
    KeyInputs {
        fingerprint,
        scheme: client.scheme,
        authority: &client.authority,
        path_and_query: &path_and_query,
        accept_encoding: &accept_encoding,
        navigation: client.navigation,
    }
    .key()
}

/// The reader a copy from the cache is answered to: its preconditions ([`preconditions`], for
/// a `304`), its client and its edge ID (the reader's own cookie goes on the copy).
pub struct Recipient<'a> {
    /// The request's `If-None-Match` and `If-Modified-Since`.
    pub preconditions: &'a Preconditions,
    /// What the platform observed about the client.
    pub client: &'a Client,
    /// The request's edge ID.
    pub edge_id: &'a IdentityPlan,
}

/// What is left to do after [`answer_hit`] or [`serve_stale_if_error`], which were given the
/// reader's bids `B` (whatever the flow adds to a page; the cache never looks inside).
pub enum AfterHit<B> {
    /// The response left; nothing else.
    Served,
    /// The response left (a stale copy); refresh the entry (`flows::refresh`).
    Refresh(Fill),
    /// Not answered: ask the origin with this lookup; the bids come back untouched.
    Origin(Lookup, Option<B>),
    /// A stored page that takes the reader's bids: its response, headers final and recorded,
    /// body the stored bytes in `codec`, for the body phase to send with the bids
    /// (`body::send_stored`); then the refresh, if the copy was stale.
    Bids(Box<Response>, Codec, B, Option<Fill>),
}

/// Answers a hit, fresh or stale, or gives the lookup back for the origin. An entry that cannot
/// be read is served around: the origin is asked, nothing stored.
///
/// With `bids` (a navigation's auction), a stored `200` HTML page is not sent but given back
/// with them ([`AfterHit::Bids`]): the stored bytes stay reader-neutral, and the reader's bids
/// are added on the way out. Any other hit drops them.
pub fn answer_hit<B>(
    lookup: Lookup,
    recipient: &Recipient,
    bids: Option<B>,
    settings: &Settings,
    access: &mut Access,
) -> AfterHit<B> {
    let (entry, refresh) = match lookup {
        Lookup::Hit(entry) => (entry, None),
        Lookup::Stale(entry, fill) => (entry, Some(fill)),
        other => return AfterHit::Origin(other, bids),
    };
    let state = CacheState::Hit;
    let Some(response) = hit(&entry, recipient, &state, settings) else {
        return AfterHit::Origin(served_around(refresh), bids);
    };
    let labels = ["cache-hit", "cache-hit+bids"];
    deliver(response, &state, labels, bids, refresh, settings, access)
}

/// The lookup for the origin when a found copy cannot be read: its fill, if it had one, else
/// a pass (nothing stored).
fn served_around(fill: Option<Fill>) -> Lookup {
    match fill {
        Some(fill) => Lookup::Fill(fill),
        None => Lookup::Pass(PassWhy::CacheError),
    }
}

/// A copy read from the cache, answered: with `bids`, a `200` HTML page is given back with
/// them ([`AfterHit::Bids`], outcome `labels[1]`); anything else is sent (outcome
/// `labels[0]`), the bids dropped. Then the refresh, if the copy needs one.
fn deliver<B>(
    mut response: Response,
    state: &CacheState,
    labels: [&str; 2],
    bids: Option<B>,
    refresh: Option<Fill>,
    settings: &Settings,
    access: &mut Access,
) -> AfterHit<B> {
    if let Some(bids) = bids {
        if let Some(codec) = html_page(&response) {
            record_from_cache(&mut response, state, labels[1], settings, access);
            return AfterHit::Bids(Box::new(response), codec, bids, refresh);
        }
    }
    send_from_cache(response, state, labels[0], settings, access);
    match refresh {
        Some(fill) => AfterHit::Refresh(fill),
        None => AfterHit::Served,
    }
}

/// The origin failed (`failure` says how: no response, a 1xx as its final answer, or one of
/// the statuses of `stale::is_origin_error`). For a [`Lookup::StaleIfError`], answers the
/// client with the stale copy (`x-ts-cache: HIT(stale-if-error)`), gives up the fill so the
/// stale entry stays, and logs the failure at `warn`. Any other lookup, or a copy that cannot
/// be read, is given back for the usual failure path ([`AfterHit::Origin`], with `bids`).
///
/// With `bids` (a navigation's auction), a stored `200` HTML page is given back with them
/// ([`AfterHit::Bids`]) to be sent with the reader's bids, as [`answer_hit`] does.
pub fn serve_stale_if_error<B>(
    lookup: Lookup,
    failure: &str,
    recipient: &Recipient,
    bids: Option<B>,
    settings: &Settings,
    access: &mut Access,
) -> AfterHit<B> {
    let Lookup::StaleIfError(entry, fill) = lookup else {
        return AfterHit::Origin(lookup, bids);
    };
    let state = CacheState::StaleIfError;
    let Some(response) = hit(&entry, recipient, &state, settings) else {
        return AfterHit::Origin(served_around(fill), bids);
    };
    if let Some(fill) = fill {
        // Not remembered: the next waiting request asks the origin again.
        let _ = fill.cancel(PassWhy::OriginError);
    }
    log::warn!(
        "cache: origin failed ({failure}); served the stale copy (stale-if-error, {}s past its lifetime)",
        entry.found.age().saturating_sub(entry.found.max_age()).as_secs()
    );
    // The fill was given up: nothing to refresh.
    let labels = ["cache-stale-if-error", "cache-stale-if-error+bids"];
    deliver(response, &state, labels, bids, None, settings, access)
}

/// Gives up the lookup's fill, if it has one (the origin failed): the next waiting request
/// tries. Returns the state to report.
pub fn origin_failed(lookup: Lookup) -> CacheState {
    match lookup {
        Lookup::Fill(fill) => fill.cancel(PassWhy::OriginError),
        Lookup::Pass(why) => CacheState::Pass(why),
        Lookup::Hit(_) | Lookup::StaleIfError(_, None) => CacheState::Pass(PassWhy::OriginError),
        Lookup::Stale(_, fill) | Lookup::StaleIfError(_, Some(fill)) => {
            fill.cancel(PassWhy::OriginError)
        }
    }
}

/// Sends a response answered from the cache (a hit, or a stale copy), after recording it in
/// `access` (`label` is the outcome's, unless it is a `304`) and stamping its timings.
fn send_from_cache(
    mut response: Response,
    state: &CacheState,
    label: &str,
    settings: &Settings,
    access: &mut Access,
) {
    record_from_cache(&mut response, state, label, settings, access);
    access.headers_sent(response.get_status().as_u16());
    response.send_to_client();
}

/// Records a response answered from the cache in `access` and stamps its timings.
fn record_from_cache(
    response: &mut Response,
    state: &CacheState,
    label: &str,
    settings: &Settings,
    access: &mut Access,
) {
    access.plan = "cache".into();
    access.cache = Some(state.to_string());
    access.outcome = Outcome::PassedThrough(hit_label(response, label));
    crate::kit::leaving::stamp(response, access, access.cache.as_deref(), settings);
}

/// The coding of a stored `200` HTML page (the only kind that takes bids); `None` for
/// anything else (a `304` made for the reader, a stored stylesheet).
fn html_page(response: &Response) -> Option<Codec> {
    let header = |name: &str| response.get_header(name).and_then(|v| v.to_str().ok());
    let status = response.get_status().as_u16();
    let plan = BodyPlan::decide(
        status,
        header("content-type"),
        header("content-encoding"),
        true,
    );
    match plan {
        BodyPlan::Rewrite {
            codec,
            rewrite: Rewrite::Html(_),
        } if status == 200 => Some(codec),
        _ => None,
    }
}

/// The access line's outcome for a response from the cache: `label`, or
/// `cache-not-modified` for a `304`.
fn hit_label(response: &Response, label: &str) -> String {
    if response.get_status() == StatusCode::NOT_MODIFIED {
        "cache-not-modified".into()
    } else {
        label.into()
    }
}

/// The response to a hit: the stored status and headers, the reader's own parts added (and
/// `state` in `x-ts-cache`), the stored body streamed by the host; or, when the request's
/// preconditions say the reader's copy is current, a `304` without the body
/// ([`not_modified`]). `None` (logged) when the entry cannot be read: the caller asks the
/// origin instead.
fn hit(
    entry: &Entry,
    recipient: &Recipient,
    state: &CacheState,
    settings: &Settings,
) -> Option<Response> {
    let Recipient {
        preconditions,
        client,
        edge_id,
    } = recipient;
    let Some(stored::Block {
        status, headers, ..
    }) = stored::decode(&entry.metadata)
    else {
        log::warn!("cache: stored header block unreadable, served around the cache");
        return None;
    };
    let unchanged = preconditions.not_modified(
        status,
        headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())),
    );
    let body = if unchanged {
        Body::new()
    } else {
        let read = entry.found.to_stream().map_err(|e| e.to_string());
        // A buffered build promises a `Content-Length` on every rewritten page: the stored
        // body is read whole first (the host streams a cache body without a length).
        let read = match read {
            Ok(body) if !settings.publisher.streaming => whole(body).map(Body::from),
            other => other,
        };
        match read {
            Ok(body) => body,
            Err(e) => {
                log::warn!("cache: stored body unreadable, served around the cache: {e}");
                return None;
            }
        }
    };
    let mut response = Response::from_status(status).with_body(body);
    crate::kit::reply::replace_headers(&mut response, headers);
    response.set_version(client.version);
    // The reader's parts are decided on the full response (the edge-ID cookie goes on a
    // page), and a 304 keeps them.
    outgoing(&mut response, Some(edge_id), state, settings);
    if unchanged {
        not_modified(&mut response, settings);
    }
    Some(response)
}

/// A stored body read whole, for a buffered build; an error when it cannot be read to its end
/// or is larger than buffered mode holds (`kit::limits::BUFFERED_MAX_BYTES`), so that nothing is sent
/// yet and the request can be served around the cache.
fn whole(body: Body) -> Result<Vec<u8>, String> {
    let cap = crate::kit::limits::BUFFERED_MAX_BYTES;
    let mut out = Vec::new();
    body.into_handle()
        .take(cap as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() > cap {
        return Err(format!("larger than the buffered-mode cap of {cap} bytes"));
    }
    Ok(out)
}

/// Turns a hit (or a fill whose reader's copy is current) into its `304 Not Modified`: the
/// headers a `304` carries (`conditional::kept_on_304`: `ETag`, `Cache-Control`, `Vary`,
/// `Expires`, `Date`, `Content-Location`), the reader's parts (`Set-Cookie`, `x-ts-cache`,
/// `Server-Timing` when already stamped), the service's standard headers, and no body.
pub(crate) fn not_modified(response: &mut Response, settings: &Settings) {
    let has_etag = response.get_header("etag").is_some();
    let mut headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .filter(|(n, _)| {
            conditional::kept_on_304(n.as_str(), has_etag)
                || *n == "set-cookie"
                || *n == "server-timing"
                || n.as_str() == trusted_server_core::cache::CACHE_STATE_HEADER
        })
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    trusted_server_core::apply_standard_headers(&mut headers, &settings.response_headers);
    crate::kit::reply::replace_headers(response, headers);
    response.set_status(StatusCode::NOT_MODIFIED);
}

/// The origin's response may be stored: what to store it with.
pub struct Storing {
    fill: Fill,
    freshness: policy::Freshness,
    audience: Audience,
    surrogate_keys: Vec<String>,
}

/// Whether the origin's response may be stored (checked on its own headers, before the
/// response phase changes them); if not, the fill is cancelled and the reason returned.
pub fn assess(lookup: Lookup, origin: &Response) -> Result<Storing, CacheState> {
    let fill = match lookup {
        // Within stale-if-error and the origin answered: the answer fills as on a miss.
        Lookup::Fill(fill) | Lookup::StaleIfError(_, Some(fill)) => fill,
        Lookup::StaleIfError(_, None) => return Err(CacheState::Pass(PassWhy::Refreshing)),
        Lookup::Pass(why) => return Err(CacheState::Pass(why)),
        Lookup::Hit(_) => return Err(CacheState::Pass(PassWhy::CacheError)),
        Lookup::Stale(_, fill) => return Err(fill.cancel(PassWhy::CacheError)),
    };
    let headers: Vec<(&str, &[u8])> = origin
        .get_headers()
        .map(|(n, v)| (n.as_str(), v.as_bytes()))
        .collect();
    let (freshness, audience) =
        match shared::storable(fill.reader, origin.get_status().as_u16(), &headers) {
            Ok(verdict) => verdict,
            Err(why) => return Err(fill.cancel(why)),
        };
    let origin_keys = origin
        .get_header_all("surrogate-key")
        .map(HeaderValue::as_bytes);
    let (surrogate_keys, dropped) = surrogate::keys(origin_keys, &fill.authority, &fill.path);
    if dropped > 0 {
        log::info!("cache: {dropped} surrogate keys from the origin not usable, dropped");
    }
    Ok(Storing {
        fill,
        freshness,
        audience,
        surrogate_keys,
    })
}

/// A stored response being written: the insert body, finished by the body phase after the
/// whole body, abandoned when dropped.
pub struct Filling {
    /// Where the rewritten bytes go: the cache entry.
    pub insert: fastly::http::body::StreamingBody,
    /// The entry read back, for the client; `None` when refreshing after a stale hit, or
    /// when the client gets a `304` ([`Filling::not_modified`]).
    pub client_body: Option<Body>,
    /// The reader's own preconditions hold for the page being stored (its copy is current):
    /// it gets `304 Not Modified` while the entry is filled, as a hit would answer it.
    pub not_modified: bool,
    /// A surrogate key only this entry has, to purge it if the fill fails.
    fill_key: String,
}

impl Filling {
    /// After a failed fill (the insert already dropped, so abandoned): purges this entry by
    /// its own key, so no reader ever gets a short copy. (Viceroy 0.22 keeps an abandoned
    /// entry, and serves it as a hit whose body ends in an error; on Fastly an abandoned insert
    /// is not committed, and the purge finds nothing.)
    pub fn discard(fill_key: &str) {
        match purge(fill_key) {
            Ok(()) => log::info!("cache: failed fill discarded ({fill_key})"),
            Err(e) => log::warn!("cache: failed fill could not be purged ({fill_key}): {e}"),
        }
    }

    /// The entry's own key, for [`Filling::discard`].
    pub fn fill_key(&self) -> String {
        self.fill_key.clone()
    }
}

/// A key for one fill: `ts-fill-` and 12 random bytes in hex, so that no other entry shares
/// it. Without randomness, the cache key and the time (still unique enough for one fill).
fn fill_key(key: &[u8; 32]) -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = key[i] ^ nanos.to_le_bytes()[i];
        }
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("ts-fill-{hex}")
}

/// How the entry is written, as `body::send` takes it.
pub enum Store {
    /// Streaming builds: the entry is written while the pipeline runs, and the client (and
    /// every request waiting in the transaction) reads it back as it is written.
    Streaming(Filling),
    /// Buffered builds (`publisher.streaming = false`): the whole rewritten body is collected
    /// first, as buffered mode does without a cache, then stored with its length
    /// ([`Insert::whole`]) and sent with a `Content-Length`.
    Whole(Insert),
}

impl Storing {
    /// The response prepared without the reader's parts: checks the plan and the header
    /// block, and starts the insert the build's mode calls for ([`Store`]), with the reader's
    /// parts added to the response. On any refusal or failure, the response leaves as it
    /// would without a cache; the state says which.
    ///
    /// The fill asked the origin for the whole page, without the reader's preconditions
    /// (`crate::phases::origin::for_fill`); they are evaluated here against the page as stored, so a
    /// reader whose copy is current gets `304 Not Modified` ([`Filling::not_modified`],
    /// [`Insert::not_modified`]), as on a hit.
    ///
    /// `read_back`: the client reads the entry back as it is written (a streaming build);
    /// `false` when the reader's copy differs from the stored one (a navigation auction's
    /// bids), and the body phase sends it itself.
    pub fn begin(
        self,
        response: &mut Response,
        plan: &BodyPlan,
        edge_id: &IdentityPlan,
        preconditions: &Preconditions,
        read_back: bool,
        settings: &Settings,
    ) -> (CacheState, Option<Store>) {
        let headers: Vec<(&str, &[u8])> = response
            .get_headers()
            .map(|(n, v)| (n.as_str(), v.as_bytes()))
            .collect();
        let unchanged =
            preconditions.not_modified(response.get_status().as_u16(), headers.iter().copied());
        let started = self.checked(response, plan).and_then(|mut insert| {
            if settings.publisher.streaming {
                let filling = insert.stream(!unchanged && read_back).map(|mut filling| {
                    filling.not_modified = unchanged;
                    filling
                });
                filling.map(Store::Streaming)
            } else {
                insert.not_modified = unchanged;
                Ok(Store::Whole(insert))
            }
        });
        let (state, store) = match started {
            Ok(store) => (CacheState::Miss, Some(store)),
            Err(state) => (state, None),
        };
        outgoing(response, Some(edge_id), &state, settings);
        (state, store)
    }

    /// For a refresh (stale-while-revalidate, `flows::refresh`): the insert started without
    /// a client reading it back, since the client already has its answer (the stale copy).
    pub fn refill(self, response: &Response, plan: &BodyPlan) -> Result<Store, CacheState> {
        self.checked(response, plan)
            .and_then(|insert| insert.stream(false))
            .map(Store::Streaming)
    }

    /// Checks that the response may be stored as prepared (its body is rewritten, its header
    /// block fits): the insert, not started yet.
    fn checked(self, response: &Response, plan: &BodyPlan) -> Result<Insert, CacheState> {
        if !plan.changes_body() {
            return Err(self.fill.cancel(PassWhy::NotRewritten));
        }
        let headers: Vec<(HeaderName, HeaderValue)> = response
            .get_headers()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        let status = response.get_status().as_u16();
        let windows = self.freshness.windows();
        let Some(block) = stored::encode(status, &headers, windows, self.audience) else {
            return Err(self.fill.cancel(PassWhy::HeadersTooLarge));
        };
        let own_key = fill_key(&self.fill.key);
        Ok(Insert {
            not_modified: false,
            fill: self.fill,
            freshness: self.freshness,
            surrogate_keys: self.surrogate_keys,
            block,
            own_key,
        })
    }
}

/// An insert decided (the response may be stored, its header block encoded) and not started:
/// the fill's obligation is still held, so requests for the key keep waiting.
pub struct Insert {
    fill: Fill,
    freshness: policy::Freshness,
    surrogate_keys: Vec<String>,
    block: Vec<u8>,
    /// A surrogate key only this entry has (`ts-fill-…`), to purge it if the fill fails.
    own_key: String,
    /// The reader's own preconditions hold for the page being stored: it gets a `304`.
    pub not_modified: bool,
}

impl Insert {
    /// The core cache's insert, configured: lifetime, age, the stale window, `Vary`, surrogate
    /// keys, the header block.
    fn builder(self) -> (fastly::cache::core::TransactionInsertBuilder, String) {
        let f = &self.freshness;
        let mut builder = self
            .fill
            .tx
            .insert(f.max_age)
            .initial_age(f.initial_age)
            // The longer of the two stale windows; the block keeps them apart.
            .stale_while_revalidate(f.windows().cache_window());
        // No `Vary`: no rule at all (the core cache refuses an empty one).
        if let Some(names) = f.vary_rule() {
            let vary: Vec<HeaderName> = names
                .iter()
                .filter_map(|n| HeaderName::from_bytes(n.as_bytes()).ok())
                .collect();
            builder = builder.vary_by(&vary);
        }
        let builder = builder
            .surrogate_keys(
                self.surrogate_keys
                    .iter()
                    .map(String::as_str)
                    .chain([self.own_key.as_str()]),
            )
            .user_metadata(CacheKey::from(self.block));
        (builder, self.own_key)
    }

    /// Starts the insert while the body is still to come; with `stream_back`, the body the
    /// client reads back from it.
    fn stream(self, stream_back: bool) -> Result<Filling, CacheState> {
        let (builder, own_key) = self.builder();
        let started = if stream_back {
            builder
                .execute_and_stream_back()
                .map(|(insert, found)| (insert, Some(found)))
        } else {
            builder.execute().map(|insert| (insert, None))
        };
        let (insert, found) = match started {
            Ok(pair) => pair,
            Err(e) => {
                log::warn!("cache: insert failed, served around the cache: {e}");
                return Err(CacheState::Pass(PassWhy::CacheError));
            }
        };
        match found.map(|found| found.to_stream()).transpose() {
            Ok(client_body) => Ok(Filling {
                insert,
                client_body,
                not_modified: false,
                fill_key: own_key,
            }),
            Err(e) => {
                log::warn!("cache: stream-back failed, served around the cache: {e}");
                // `insert` is dropped unfinished: abandoned.
                Err(CacheState::Pass(PassWhy::CacheError))
            }
        }
    }

    /// Stores the whole rewritten `body`, its length known up front (buffered builds). A
    /// failure is logged at `warn` and the entry discarded; the client's answer does not
    /// depend on it. Returns whether the entry was stored.
    pub fn whole(self, body: &[u8]) -> bool {
        let (builder, own_key) = self.builder();
        let length = u64::try_from(body.len()).unwrap_or(u64::MAX);
        let written = builder
            .known_length(length)
            .execute()
            .map_err(|e| e.to_string())
            .and_then(|mut insert| {
                insert.write_all(body).map_err(|e| e.to_string())?;
                insert.finish().map_err(|e| e.to_string())
            });
        match written {
            Ok(()) => true,
            Err(e) => {
                log::warn!("cache: storing the buffered page failed, not stored: {e}");
                Filling::discard(&own_key);
                false
            }
        }
    }

    /// Gives the obligation up (the body failed before it was stored): the next waiting
    /// request tries. Returns the state to report.
    pub fn cancel(self, why: PassWhy) -> CacheState {
        self.fill.cancel(why)
    }
}

/// The reader's parts, added to a response on its way out: the edge-ID `Set-Cookie` (when
/// the response was prepared without it), no surrogate header, and `x-ts-cache`.
pub fn outgoing(
    response: &mut Response,
    edge_id: Option<&IdentityPlan>,
    state: &CacheState,
    settings: &Settings,
) {
    let mut headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .filter(|(n, _)| !matches!(n.as_str(), "surrogate-key" | "surrogate-control"))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    if let Some(plan) = edge_id {
        crate::kit::edge_cookie::add_cookie(
            &mut headers,
            response.get_status().as_u16(),
            plan,
            settings,
        );
    }
    if let Ok(value) = HeaderValue::from_str(&state.to_string()) {
        headers.push((
            HeaderName::from_static(trusted_server_core::cache::CACHE_STATE_HEADER),
            value,
        ));
    }
    crate::kit::reply::replace_headers(response, headers);
}

/// Purges every entry stored under `key` (the admin route; Fastly's purge API in production).
pub fn purge(key: &str) -> Result<(), String> {
    fastly::http::purge::purge_surrogate_key(key).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache keys of one real request: [`page_key`]'s (this build's), then one under each
    /// settings fingerprint given.
    fn keys_under(fingerprints: &[&[u8]]) -> Vec<[u8; 32]> {
        let request = Request::get("http://www.pub.test/news/article.html?x=1")
            .with_header("host", "www.pub.test")
            .with_header("accept-encoding", "gzip");
        let client = crate::phases::client::observe(&request, &crate::kit::generated::SETTINGS);
        let mut keys = vec![page_key(&request, &client)];
        keys.extend(fingerprints.iter().map(|f| key_under(f, &request, &client)));
        keys
    }

    /// The cache key's fingerprint covers the version and every setting: a build whose
    /// settings differ (here only `script.inject`) gets another fingerprint, so another key
    /// for the same request ([`page_key`]).
    #[test]
    fn the_cache_fingerprint_changes_with_the_settings() {
        use crate::kit::generated::SETTINGS;
        use sha2::{Digest, Sha256};
        let fingerprint = |settings: &trusted_server_settings::Settings| {
            let text = format!("{}\n{}", env!("CARGO_PKG_VERSION"), settings.to_rust_expr());
            Sha256::digest(text.as_bytes()).to_vec()
        };
        assert_eq!(fingerprint(&SETTINGS), SETTINGS_FINGERPRINT);
        let other = trusted_server_settings::load(
            include_str!("../../trusted-server.toml"),
            [("TRUSTED_SERVER__SCRIPT__INJECT", "false")],
        )
        .expect("a valid override");
        assert_ne!(other, SETTINGS);
        assert_ne!(fingerprint(&other), SETTINGS_FINGERPRINT);
        // And so another key for the same request: a deploy with another rule never reads
        // the old build's rewrites.
        let own = fingerprint(&SETTINGS);
        let keys = keys_under(&[&own, &fingerprint(&other)]);
        assert_eq!(
            keys[0], keys[1],
            "the build's key is under its own fingerprint"
        );
        assert_ne!(keys[1], keys[2]);
    }

    /// The shared rule sees every `Cookie` line of the request, and `Authorization`.
    #[test]
    fn the_shared_rule_reads_every_cookie_line() {
        let mut request = Request::get("http://www.pub.test/").with_header("cookie", "ts-ec=a");
        assert_eq!(
            crate::phases::origin::ask(&request).reader,
            Reader::Anonymous
        );
        assert!(!shared::origin_fetch_passes(crate::phases::origin::ask(
            &request
        )));
        request.append_header("cookie", "session=alice");
        assert_eq!(
            crate::phases::origin::ask(&request).reader,
            Reader::WithCookies
        );
        assert!(shared::origin_fetch_passes(crate::phases::origin::ask(
            &request
        )));
        let request = Request::get("http://www.pub.test/").with_header("authorization", "Bearer x");
        assert!(crate::phases::origin::ask(&request).authorization);
        assert_eq!(
            crate::phases::origin::ask(&request).reader,
            Reader::Anonymous
        );
    }
}
