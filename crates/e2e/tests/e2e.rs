//! End-to-end: the real service under real Viceroy, against the demo origin on loopback.
//!
//! One process (harness = false) builds the demo origin and two builds of the service (streaming
//! and buffered, the buffered one also at `logging.level = "warn"`, both pointed at the origin's port, which is only known at run time because
//! settings are compiled in), starts them on free ports, runs every scenario, and stops every
//! server it started, whatever happens. Each scenario prints `ok` or `FAILED` with the reason;
//! any failure (or no scenario at all) makes the process fail.

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use e2e::{
    build_and_start_demo_origin, get, request, start_service_pair_with, workspace_root, ChildGuard,
    Timed,
};
use trusted_server_core::UrlRule;

mod admin;
mod auction;
mod cache;
mod consent;
mod delivery;
mod edge_id;
mod first_party;
mod hints;
mod ids;
mod paths;
mod shared;
mod signing;
mod url_rule;

const ORIGIN_HOST: &str = "origin.demo-publisher.example";
const TIMEOUT: Duration = Duration::from_secs(30);
/// The demo origin's request log (one line per request it answered), under the root.
const ORIGIN_LOG: &str = "target/e2e/demo-origin.log";
/// The e2e builds allow the origin this long for its headers, so a timeout test stays short.
const FIRST_BYTE_TIMEOUT_MS: u64 = 2000;

/// The `[response_headers]` entry the e2e builds add.
const RESPONSE_HEADER: (&str, &str) = ("x-e2e-site", "demo");

type Outcome = Result<(), String>;
/// A named scenario.
type Scenario = (&'static str, fn(&World) -> Outcome);

struct World {
    root: PathBuf,
    origin: ChildGuard,
    origin_addr: SocketAddr,
    streaming: SocketAddr,
    buffered: SocketAddr,
    /// A streaming build whose `identity.secret_key`, `signing.current_kid`,
    /// `admin.password_key` and `first_party.token_key` name no secret in their stores.
    no_secret: SocketAddr,
    /// The test partner of the first-party proxy: `ads.` and `cdn.demo-partner.example`
    /// resolve to it (`first_party.resolve` in the streaming and buffered builds).
    partner: e2e::raw_origin::RawOrigin,
    /// A streaming build with `delivery.compression = "edge"` and `delivery.server_timing =
    /// false` (see `delivery`).
    edge: SocketAddr,
    /// The streaming build again, in a Viceroy with one runtime thread, whose KV Store's
    /// compare-and-set is atomic (see `ids::two_partners_syncing_one_reader_at_once_both_land`).
    one_thread: SocketAddr,
    _servers: Vec<ChildGuard>,
}

fn main() {
    let started = Instant::now();
    let world = e2e::set_up_or_exit("e2e", set_up);
    let scenarios: &[Scenario] = &[
        (
            "first body bytes arrive before the origin's second chunk",
            first_bytes_before_second_chunk,
        ),
        (
            "a page the origin sends at once leaves whole, with a Content-Length",
            complete_body_leaves_whole,
        ),
        (
            "a gzip page the origin sends at once is one deflate stream, as buffered",
            fast_gzip_body_is_one_stream,
        ),
        (
            "a gzip page stays gzip and still streams",
            gzip_stays_gzip_and_streams,
        ),
        (
            "a brotli page is rewritten and stays brotli",
            brotli_round_trip,
        ),
        (
            "pages are rewritten to a shorter request host",
            rewritten_to_shorter_host,
        ),
        (
            "pages are rewritten to a longer request host",
            rewritten_to_longer_host,
        ),
        (
            "css, js and json bodies are rewritten",
            text_bodies_rewritten,
        ),
        ("a latin-1 page is not corrupted", latin1_not_corrupted),
        (
            "binaries pass through byte-identical with their length",
            binaries_pass_through,
        ),
        (
            "buffered mode gives the same bytes with a Content-Length",
            buffered_matches_streaming,
        ),
        (
            "an origin dying mid-body gives an incomplete transfer",
            origin_dies_mid_body,
        ),
        (
            "every request leaves one access line, failures one report",
            access_lines_and_reports,
        ),
        (
            "logging.level = warn keeps failure reports and drops access lines",
            warn_level_keeps_reports_drops_access_lines,
        ),
        (
            "a truncated gzip body gives an incomplete transfer",
            truncated_gzip_is_incomplete,
        ),
        (
            "a wrong Content-Encoding gives an incomplete transfer",
            wrong_encoding_is_incomplete,
        ),
        (
            "an unsupported Content-Encoding passes through",
            unsupported_encoding_passes_through,
        ),
        (
            "client forwarding headers are not trusted",
            forwarding_headers_not_trusted,
        ),
        (
            "long client header values and repeated lines reach the origin whole, in order",
            long_header_values_reach_the_origin_whole,
        ),
        (
            "POST bodies, paths and queries reach the origin",
            post_reaches_origin,
        ),
        ("HEAD gets GET's headers and no body", head_matches_get),
        (
            "redirects and cookies are made first-party",
            redirects_and_cookies,
        ),
        (
            "Next.js RSC request headers reach the origin unchanged",
            rsc_request_headers_reach_origin,
        ),
        (
            "the origin's Vary reaches the client on Flight and HTML responses",
            vary_reaches_client,
        ),
        (
            "a text/x-component navigation is rewritten with its row structure intact",
            flight_navigation_rewritten,
        ),
        (
            "a Next.js HTML page streams through the proxy, identity and gzip",
            nextjs_page_streams,
        ),
        (
            "the script: 200 with its headers, the bytes as written",
            script_served,
        ),
        (
            "the script: 304 on a matching If-None-Match",
            script_not_modified,
        ),
        (
            "the script: gzip and br per Accept-Encoding, decoding to the script",
            script_encodings,
        ),
        (
            "the script: another hash gets a 404; HEAD gets GET's headers",
            script_unknown_hash_and_head,
        ),
        (
            "auction: Prebid.js's request gets bids in Prebid Server's shape; bidders get what the edge builds",
            auction::prebid_request_gets_bids_in_prebid_servers_shape,
        ),
        (
            "auction: a bidder stalling mid-body costs only its own bids, the answer leaves by the deadline",
            auction::a_bidder_stalling_mid_body_costs_only_its_own_bids,
        ),
        (
            "auction: hostile bidders each have their documented outcome, never a 5xx",
            auction::hostile_bidders_each_have_their_documented_outcome,
        ),
        (
            "auction: bad requests get their status, cross-site pages are refused",
            auction::bad_requests_get_their_status,
        ),
        (
            "auction: each bidder gets what its consent allows",
            auction::each_bidder_gets_what_its_consent_allows,
        ),
        (
            "auction with the page: the page leaves before the bidders answer",
            auction::page::the_page_leaves_before_the_bidders_answer,
        ),
        (
            "auction with the page: bidders asked after the origin, before its answer only when it is slow",
            auction::page::the_bidders_are_asked_after_the_origin_and_before_its_answer_only_when_slow,
        ),
        (
            "auction with the page: a hanging bidder holds the end only until the deadline",
            auction::page::a_hanging_bidder_holds_the_end_only_until_the_deadline,
        ),
        (
            "auction with the page: a Next.js page gets its bids before its end",
            auction::page::a_nextjs_page_gets_its_bids_before_its_end,
        ),
        (
            "auction with the page: a cached page gets fresh bids and stores none",
            auction::page::a_cached_page_gets_fresh_bids_and_stores_none,
        ),
        (
            "auction with the page: a page that ends after the deadline keeps the bids in time",
            auction::page::a_page_that_ends_after_the_deadline_keeps_the_bids_in_time,
        ),
        (
            "auction with the page: answers that come while the page streams are read then",
            auction::page::answers_that_come_while_the_page_streams_are_read_then,
        ),
        (
            "auction with the page: a stale-if-error copy gets fresh bids and stores none",
            auction::page::a_stale_if_error_copy_gets_fresh_bids,
        ),
        (
            "auction with the page: each reader's consent decides their bids",
            auction::page::each_readers_consent_decides_their_bids,
        ),
        (
            "auction with the page: a single-page app asks for the next page's bids",
            auction::page::a_single_page_app_asks_for_the_next_pages_bids,
        ),
        (
            "auction with the page: header bytes that are not UTF-8 get answers, not a crash",
            auction::page::header_bytes_that_are_not_utf8_get_answers_not_a_crash,
        ),
        (
            "partner IDs: a partner syncs IDs for readers it knows, each pair answered",
            ids::a_partner_syncs_ids_for_readers_it_knows,
        ),
        (
            "partner IDs: bad tokens and batches are refused and lose nothing",
            ids::bad_tokens_and_batches_are_refused_and_lose_nothing,
        ),
        (
            "partner IDs: two partners syncing one reader at once both land",
            ids::two_partners_syncing_one_reader_at_once_both_land,
        ),
        (
            "partner IDs: a withdrawn reader is erased and a later sync refused",
            ids::a_withdrawn_reader_is_erased_and_a_later_sync_refused,
        ),
        (
            "partner IDs: the admin shows and erases one reader's IDs",
            ids::the_admin_shows_and_erases_one_readers_ids,
        ),
        (
            "partner IDs: a bidder gets exactly the partner IDs its consent allows",
            ids::a_bidder_gets_exactly_the_partner_ids_its_consent_allows,
        ),
        (
            "partner IDs: the edge asks partners for a returning reader's ID, after the page",
            ids::the_edge_asks_partners_for_a_returning_readers_id,
        ),
        (
            "partner IDs: a partner past its budget is refused whole until Retry-After",
            ids::a_partner_past_its_budget_is_refused_whole,
        ),
        (
            "delivery: Server-Timing on own endpoints and proxied pages, well-formed",
            delivery::server_timing_on_every_response,
        ),
        (
            "delivery: no Server-Timing with delivery.server_timing = false",
            delivery::server_timing_off_by_setting,
        ),
        (
            "delivery: the access line carries origin, first byte, rewrite and last byte",
            delivery::access_line_has_the_phases,
        ),
        (
            "delivery: edge compression asks the origin for identity and marks the page",
            delivery::edge_compression_asks_for_identity_and_marks_the_response,
        ),
        (
            "delivery: edge compression re-encodes in wasm when the origin compresses anyway",
            delivery::edge_compression_reencodes_when_the_origin_ignores_identity,
        ),
        (
            "URL rule: origin URLs at the end of a line are rewritten, hosts going on after a newline are not",
            url_rule::origin_urls_at_the_end_of_a_line,
        ),
        (
            "edge ID: a first navigation gets the cookie with exactly its attributes",
            edge_id::cookie_set_on_first_navigation,
        ),
        (
            "edge ID: a valid cookie is reused, a tampered one replaced",
            edge_id::valid_cookie_reused_tampered_replaced,
        ),
        (
            "edge ID: a cookie whose suffix was changed is neither forwarded nor answered",
            edge_id::a_changed_suffix_is_not_accepted,
        ),
        (
            "edge ID: Sec-GPC means no cookie, no header, and an existing one expired",
            edge_id::gpc_means_no_id,
        ),
        (
            "edge ID: no cookie on requests that are not page navigations",
            edge_id::no_id_on_non_navigations,
        ),
        (
            "edge ID: X-TS-EC reaches the origin, a client's own never does",
            edge_id::id_reaches_origin_and_clients_own_never,
        ),
        ("edge ID: GET /_ts/ec answers", edge_id::endpoint_answers),
        (
            "consent: a reader in Germany gets an ID only with purpose-1 consent",
            consent::germany_needs_consent,
        ),
        (
            "consent: withdrawing consent expires the cookie on any response",
            consent::withdrawing_consent_expires_the_cookie,
        ),
        (
            "consent: a California reader's GPP, US Privacy or GPC opt-out means no ID",
            consent::california_opt_outs,
        ),
        (
            "consent: an unlisted country behaves as before, an unknown US state as configured",
            consent::elsewhere_and_unknown,
        ),
        (
            "consent: malformed and oversized strings are no signal",
            consent::malformed_and_oversized_strings_are_no_signal,
        ),
        (
            "consent: a partner gets X-TS-EC only with its own vendor's consent",
            consent::partners_follow_their_vendor_consent,
        ),
        (
            "consent: GET /_ts/consent answers the decision, no-store, and the access line records it",
            consent::consent_endpoint_answers,
        ),
        (
            "consent, hostile: a cached page is decided per reader (hit), never another's cookie or ID",
            consent::hostile::a_cached_page_is_decided_per_reader,
        ),
        (
            "consent, hostile: a stale copy's refresh asks the origin as the reader who triggered it",
            consent::hostile::a_stale_refresh_asks_as_the_reader_who_triggered_it,
        ),
        (
            "consent, hostile: every redirect hop of the first-party proxy is decided for its host",
            consent::hostile::every_redirect_hop_is_decided_for_its_host,
        ),
        (
            "consent, hostile: headers cannot move a reader or forge consent; disagreeing cookies refuse",
            consent::hostile::headers_cannot_move_a_reader_or_forge_consent,
        ),
        (
            "consent, hostile: no consent string is echoed by /_ts/consent or logged",
            consent::hostile::no_consent_string_is_echoed_or_logged,
        ),
        (
            "consent, holes: a refused ID never reaches the origin, in a cookie or X-TS-EC",
            consent::holes::a_refused_id_never_reaches_the_origin,
        ),
        (
            "consent, holes: no amount or order of other cookies hides a consent cookie",
            consent::holes::padding_hides_no_consent_cookie,
        ),
        (
            "consent, holes: a planted __gpp_sid hides no opt-out",
            consent::holes::a_planted_gpp_sid_hides_no_opt_out,
        ),
        (
            "consent, holes: EU territories under their own codes are opt-in, a placeholder is unknown",
            consent::holes::eu_territories_and_placeholders,
        ),
        (
            "consent, holes: consent cookies alone read and fill the page cache, and reach no fill",
            consent::holes::consent_cookies_keep_the_cache,
        ),
        (
            "edge ID: a missing secret serves the page without an ID and logs why",
            edge_id::missing_secret_serves_page_without_id,
        ),
        (
            "signing: the discovery document lists current and previous keys",
            signing::discovery_lists_the_keys,
        ),
        (
            "signing: the Python verifier passes the RFC 9421 B.2.6 example",
            signing::python_verifies_the_rfc_example,
        ),
        (
            "signing: Python accepts signed requests and rejects a changed method, authority, path, query or created",
            signing::python_accepts_signed_requests_and_rejects_changed_ones,
        ),
        (
            "signing: POST /verify-signature checks a signature made by Python",
            signing::verify_signature_endpoint,
        ),
        (
            "signing: without its key, discovery answers 503 and the log says why",
            signing::missing_key_gives_503_and_a_log_line,
        ),
        (
            "admin: no, wrong or malformed credentials get 401 with the challenge",
            admin::strangers_get_401_with_the_challenge,
        ),
        (
            "admin: the right credentials get the settings as JSON",
            admin::the_admin_gets_the_settings,
        ),
        (
            "admin: no admin request reaches the origin",
            admin::admin_requests_never_reach_the_origin,
        ),
        (
            "admin: a missing password secret answers 503 and logs why",
            admin::missing_credentials_answer_503,
        ),
        (
            "admin: the credentials are in no response and in no log",
            admin::secrets_never_shown,
        ),
        (
            "first party: sign answers a proxy URL the development key verifies",
            first_party::sign_answers_a_verifiable_proxy_url,
        ),
        (
            "first party: sign refuses with one generic 400 and logs why",
            first_party::sign_refuses_with_one_generic_body,
        ),
        (
            "first party: the SSRF table through the real service",
            first_party::ssrf_table_through_the_service,
        ),
        (
            "first party: click redirects to the signed target, never stored",
            first_party::click_redirects_to_the_signed_target,
        ),
        (
            "first party: click refuses tampered, wrong expiry, expired and other hosts with one 403",
            first_party::click_refuses_tampered_expired_and_other_hosts,
        ),
        (
            "first party: a validly signed expiry beyond the longest lifetime gets the one 403",
            first_party::an_expiry_beyond_the_longest_lifetime_is_refused,
        ),
        (
            "first party: a missing key answers 503 and logs why",
            first_party::missing_key_answers_503_and_logs_why,
        ),
        (
            "first party: the key never shows in a response or a log",
            first_party::the_key_never_shows,
        ),
        (
            "first party: the rest of /first-party/ is answered by the service, never proxied",
            first_party::the_namespace_is_never_proxied,
        ),
        (
            "hints: the second navigation gets a 103 with the learned hints before the origin answers",
            hints::second_navigation_gets_a_103_before_the_origin,
        ),
        (
            "hints: an HTTP/1.0 navigation gets the page and no 103",
            hints::an_http10_navigation_gets_no_103,
        ),
        (
            "shared: hints are never learned from a reader's own page (session cookie, private)",
            shared::hints_are_never_learned_from_a_readers_own_page,
        ),
        (
            "shared: a reader's cookie page is never served to another reader (PASS(cookie))",
            shared::a_readers_cookie_page_is_never_served_to_another,
        ),
        (
            "shared: only the ts-ec cookie leaves a request anonymous",
            shared::only_the_edge_id_cookie_is_anonymous,
        ),
        (
            "shared: a public or s-maxage page is filled and read with cookies",
            shared::an_explicitly_shared_page_is_filled_and_read_with_cookies,
        ),
        (
            "shared: the stale-while-revalidate refresh follows the cookie rule",
            shared::the_refresh_follows_the_rule,
        ),
        (
            "cache: MISS then HIT with identical bytes, one origin request",
            cache::miss_then_hit_with_identical_bytes,
        ),
        (
            "cache: concurrent misses wait for one fill (one origin request)",
            cache::concurrent_misses_make_one_origin_request,
        ),
        (
            "cache: Set-Cookie, Vary: Cookie, private, no-store, Authorization, no TTL pass with the reason",
            cache::per_user_responses_pass_with_the_reason,
        ),
        (
            "cache: the edge-ID cookie is never served from cache to another client",
            cache::the_edge_id_cookie_is_never_served_from_cache,
        ),
        (
            "cache: purge by surrogate key (origin's, page, all) makes the next request a MISS",
            cache::purge_by_surrogate_key,
        ),
        (
            "cache: an origin that dies mid-body is never stored",
            cache::a_death_mid_body_is_not_stored,
        ),
        (
            "cache: stale-while-revalidate serves the stale copy and refreshes it",
            cache::stale_while_revalidate_serves_stale_and_refreshes,
        ),
        (
            "cache: concurrent requests for a page that passes do not queue (pass remembered)",
            cache::concurrent_requests_for_a_page_that_passes_do_not_queue,
        ),
        (
            "cache: stale-if-error serves the stale copy when the origin fails (5xx, timeout)",
            cache::stale_if_error_serves_the_stale_copy_when_the_origin_fails,
        ),
        (
            "cache: stale-if-error refreshes the entry when the origin answers",
            cache::stale_if_error_refreshes_when_the_origin_answers,
        ),
        (
            "cache: past stale-if-error the origin's failure reaches the client",
            cache::past_stale_if_error_the_failure_reaches_the_client,
        ),
        (
            "cache: a hit answers If-None-Match and If-Modified-Since with 304",
            cache::a_hit_answers_conditional_requests_with_304,
        ),
        (
            "cache: a buffered build stores whole pages: MISS then HIT, both with Content-Length",
            cache::a_buffered_build_stores_whole_pages_and_sends_their_length,
        ),
        (
            "cache: Vary: X-TS-EC gives each reader its own page, never another's ID",
            cache::vary::vary_x_ts_ec_gives_each_reader_its_own_page,
        ),
        (
            "cache: Vary: X-Forwarded-For keys on the reader's address (127.0.0.2 / 127.0.0.3)",
            cache::vary::vary_x_forwarded_for_keys_on_the_readers_address,
        ),
        (
            "cache: a header removed through Connection cannot poison a variant",
            cache::vary::connection_cannot_poison_a_variant,
        ),
        (
            "cache: a conditional or Range request fills with the whole page (304 to its reader)",
            cache::vary::a_conditional_or_range_request_fills_with_the_whole_page,
        ),
        (
            "cache: pages without Vary are cached; Vary: * passes; several Vary lines honoured",
            cache::vary::pages_without_vary_with_vary_star_and_with_several_vary_lines,
        ),
        (
            "first-party proxy: a 100 KB image is byte-identical, headers filtered",
            first_party::proxy::image_byte_identical,
        ),
        (
            "first-party proxy: a partner's header bytes that are not UTF-8 are no crash",
            first_party::proxy::partner_header_bytes_not_utf8,
        ),
        (
            "first-party proxy: HTML and CSS creatives are rewritten to URLs that verify and fetch",
            first_party::proxy::creatives_rewritten,
        ),
        (
            "first-party proxy: tampered, wrong expiry, expired and other hosts get one 403",
            first_party::proxy::bad_urls_refused,
        ),
        (
            "first-party proxy: redirects followed when allowed, refused otherwise, loops stopped",
            first_party::proxy::redirects,
        ),
        (
            "first-party proxy: partner headers a browser acts on are dropped; responses sandboxed",
            first_party::proxy::browser_acting_headers_dropped_and_content_sandboxed,
        ),
        (
            "first-party proxy: a partner dying mid-body gives an incomplete transfer",
            first_party::proxy::partner_dies_mid_body,
        ),
        (
            "first-party proxy: every hop is signed (Python verifier); X-TS-EC only with consent",
            first_party::proxy::hops_signed_and_edge_id,
        ),
        (
            "first-party proxy: a POST is a beacon: relayed once, signed, bounded, never followed",
            first_party::proxy::beacons_relayed,
        ),
        (
            "first-party proxy: without its key a 503 that says why; the key never shows",
            first_party::proxy::missing_key_and_the_key_never_shows,
        ),
        (
            "paths: spellings of the service's paths are answered by it and never reach the origin",
            paths::spellings_of_service_paths_never_reach_the_origin,
        ),
        (
            "paths: folded-case, overlong UTF-8 and stripped spellings never reach the origin",
            paths::folded_overlong_and_stripped_spellings_never_reach_the_origin,
        ),
        (
            "paths: Sec-GPC expires the ts-ec cookie on every route",
            paths::gpc_expires_the_cookie_on_every_route,
        ),
        (
            "paths: a Host no URL can hold gets 400, not a crash",
            paths::a_host_no_url_can_hold_gets_400_not_a_crash,
        ),
        (
            "page navigations get the script first in <head>; fragments and errors do not",
            script_injected_on_navigations,
        ),
        ("a slow origin gets a 504", slow_origin_gets_504),
        (
            "a dead origin gets a 502 with the standard headers",
            dead_origin_gets_502,
        ),
    ];
    let mut world = world;
    let mut failures = 0;
    // `cargo test -p e2e --test e2e -- delivery`: only the scenarios whose names contain an
    // argument (all without one).
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let scenarios: Vec<&Scenario> = scenarios
        .iter()
        .filter(|(name, _)| only.is_empty() || only.iter().any(|o| name.contains(o.as_str())))
        .collect();
    for (name, scenario) in scenarios.iter().copied() {
        let t = Instant::now();
        let result = scenario(&world);
        match &result {
            Ok(()) => println!("test {name} ... ok ({:.2}s)", t.elapsed().as_secs_f64()),
            Err(e) => {
                failures += 1;
                println!("test {name} ... FAILED\n    {e}");
            }
        }
        if *name == "a slow origin gets a 504" {
            // The last scenario needs the origin gone.
            world.origin.stop();
        }
    }
    println!(
        "\ne2e: {} passed, {failures} failed ({:.1}s)",
        scenarios.len() - failures,
        started.elapsed().as_secs_f64()
    );
    drop(world);
    if failures > 0 || scenarios.is_empty() {
        std::process::exit(1);
    }
}

fn set_up() -> Result<World, String> {
    let root = workspace_root().canonicalize().map_err(|e| e.to_string())?;
    let origin_log = root.join(ORIGIN_LOG);
    if let Some(dir) = origin_log.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let (origin, origin_addr) = build_and_start_demo_origin(&root, Some(&origin_log))?;
    let partner = e2e::raw_origin::RawOrigin::start().map_err(|e| format!("partner: {e}"))?;
    let timeout = [
        (
            "TRUSTED_SERVER__FIRST_PARTY__RESOLVE",
            first_party::proxy::resolve(partner.addr()),
        ),
        (
            "TRUSTED_SERVER__PUBLISHER__FIRST_BYTE_TIMEOUT_MS",
            FIRST_BYTE_TIMEOUT_MS.to_string(),
        ),
        // The demo partner's ads host is TCF vendor 755 (the consent fixtures' vendor); its
        // cdn host has no vendor ID (see `consent`).
        (
            "TRUSTED_SERVER__CONSENT__PARTNER_VENDORS",
            "{ \"ads.demo-partner.example\" = 755 }".to_owned(),
        ),
        // The demo bidders, on the demo origin's port (see `auction`).
        (
            "TRUSTED_SERVER__AUCTION__BIDDERS",
            e2e::demo_bidders(origin_addr),
        ),
        // The navigation auction's slots, deadline and origin window (see `auction::page`).
        (
            "TRUSTED_SERVER__AUCTION__SLOTS",
            auction::page::SLOTS.to_owned(),
        ),
        (
            "TRUSTED_SERVER__AUCTION__NAVIGATION_TIMEOUT_MS",
            auction::page::NAVIGATION_TIMEOUT_MS.to_string(),
        ),
        (
            "TRUSTED_SERVER__AUCTION__ORIGIN_FIRST_WITHIN_MS",
            auction::page::ORIGIN_FIRST_WITHIN_MS.to_string(),
        ),
        // A `[response_headers]` entry, which the service's own responses carry too.
        (
            "TRUSTED_SERVER__RESPONSE_HEADERS__X_E2E_SITE",
            RESPONSE_HEADER.1.to_owned(),
        ),
    ];
    // The buffered build also proves that `logging.level` takes effect (one build fewer than
    // a third service just for that; no other scenario reads the buffered build's log), and
    // holds partners to a small sync budget (`ids`: no other scenario syncs there).
    let quiet = [
        ("TRUSTED_SERVER__LOGGING__LEVEL", "warn".to_owned()),
        (
            "TRUSTED_SERVER__IDS__MAX_PAIRS_PER_MINUTE",
            ids::BUDGET.to_string(),
        ),
    ];
    let dir = root.join("target/e2e");
    let pair = start_service_pair_with(&root, &dir, origin_addr, &timeout, &quiet, &[])?;
    let mut servers = pair.guards;
    // The edge ID, signing, the admin routes and first-party URLs without their secrets: the stores exist (fastly.toml),
    // the keys do not.
    let no_secret_wasm = e2e::build_service(
        &root,
        &dir.join("no-secret.wasm"),
        &[
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL".to_owned(),
                format!("http://{origin_addr}"),
            ),
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST".to_owned(),
                ORIGIN_HOST.to_owned(),
            ),
            (
                "TRUSTED_SERVER__IDENTITY__SECRET_KEY".to_owned(),
                "no_such_key".to_owned(),
            ),
            (
                "TRUSTED_SERVER__SIGNING__CURRENT_KID".to_owned(),
                "no_such_kid".to_owned(),
            ),
            (
                "TRUSTED_SERVER__ADMIN__PASSWORD_KEY".to_owned(),
                "no_such_admin_key".to_owned(),
            ),
            (
                "TRUSTED_SERVER__FIRST_PARTY__TOKEN_KEY".to_owned(),
                "no_such_url_key".to_owned(),
            ),
        ],
    )?;
    let (guard, no_secret) = e2e::start_viceroy(
        &no_secret_wasm,
        &root.join("fastly.toml"),
        &dir.join("viceroy-no-secret.log"),
    )
    .map_err(|e| format!("viceroy (no-secret): {e}"))?;
    servers.push(guard);
    let (guard, edge) = delivery::start_edge_build(&root, &dir, origin_addr)?;
    servers.push(guard);
    let (guard, one_thread) = e2e::start_viceroy_with_env(
        &dir.join("streaming.wasm"),
        &root.join("fastly.toml"),
        &dir.join("viceroy-one-thread.log"),
        &[("TOKIO_WORKER_THREADS", "1")],
    )
    .map_err(|e| format!("viceroy (one thread): {e}"))?;
    servers.push(guard);
    Ok(World {
        root,
        origin,
        origin_addr,
        streaming: pair.streaming,
        buffered: pair.buffered,
        no_secret,
        partner,
        edge,
        one_thread,
        _servers: servers,
    })
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn check(cond: bool, msg: impl FnOnce() -> String) -> Outcome {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

fn fetch(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Result<Timed, String> {
    get(addr, path, headers, TIMEOUT).map_err(|e| format!("GET {path} on {addr}: {e}"))
}

fn fixture(world: &World, path: &str) -> Vec<u8> {
    std::fs::read(world.root.join("fixtures/site").join(path)).expect("fixture exists")
}

/// [`fetch`], requiring a complete `200`.
fn fetch_complete(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Result<Timed, String> {
    let r = fetch(addr, path, headers)?;
    check(r.status == 200 && r.complete, || {
        format!("status {} complete {}", r.status, r.complete)
    })?;
    Ok(r)
}

/// What the proxy must send for `original` when the client used `authority` over http.
/// The rule itself is tested exhaustively in the core; here it is the oracle for the wiring.
fn expected(original: &[u8], authority: &str) -> Vec<u8> {
    UrlRule::new(ORIGIN_HOST, "http", authority).rewrite_all(original)
}

fn identity() -> (&'static str, &'static str) {
    ("accept-encoding", "identity")
}

fn gunzip(data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .map_err(|e| format!("gunzip: {e}"))?;
    Ok(out)
}

/// Decodes a gzip prefix as far as it goes (a streamed body before its end).
fn gunzip_prefix(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut d = flate2::read::GzDecoder::new(data);
    let mut buf = [0u8; 4096];
    while let Ok(n) = d.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Asserts the client could not mistake the response for a complete one: either the transfer
/// is cut short, or the connection closed before a response head arrived (Viceroy drops an
/// abandoned stream whose head it has not written yet).
fn assert_incomplete(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Outcome {
    match get(addr, path, headers, TIMEOUT) {
        Ok(r) => check(r.status == 200 && !r.complete, || {
            format!(
                "{path}: status {} with {} body bytes presented as a complete transfer",
                r.status,
                r.body.len()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Ok(()),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

fn same_bytes(label: &str, got: &[u8], want: &[u8]) -> Outcome {
    e2e::same_bytes(got, want).map_err(|e| format!("{label}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Scenarios

fn first_bytes_before_second_chunk(w: &World) -> Outcome {
    // Head at once, then 4 parts each after 700 ms: the second origin chunk leaves at ~700 ms.
    let r = fetch_complete(
        w.streaming,
        "/news/article.html?drip_ms=700&drip_chunks=4",
        &[identity()],
    )?;
    same_bytes(
        "body",
        &r.body,
        &expected(&fixture(w, "news/article.html"), &w.streaming.to_string()),
    )?;
    let first = r.first_body_at.ok_or("no body")?;
    check(first < Duration::from_millis(500), || {
        format!("first body byte after {first:?}, origin's second chunk leaves at 700ms")
    })?;
    let early = r.body_bytes_by(Duration::from_millis(600));
    check(early >= 1000, || {
        format!("only {early} body bytes before the second chunk")
    })?;
    check(r.last_at >= Duration::from_millis(2700), || {
        format!("last byte at {:?}, before the origin finished", r.last_at)
    })?;
    check(r.header("content-length").is_none(), || {
        "rewritten body kept Content-Length".into()
    })?;
    // The same drip, direct from the origin, for the closing note's figures.
    let direct = fetch(
        w.origin_addr,
        "/news/article.html?drip_ms=700&drip_chunks=4",
        &[identity()],
    )?;
    println!(
        "    drip page: proxy first body byte {:?}, last byte {:?}; direct first body byte {:?}, last byte {:?}",
        first, r.last_at, direct.first_body_at.unwrap_or_default(), direct.last_at
    );
    Ok(())
}

/// The streaming build holds its output while the origin has more ready (src/phases/body/downstream.rs):
/// a page whose every promised byte arrived before anything was sent goes out as one
/// response with a `Content-Length`, like the buffered build's, not as a chunked stream (whose
/// second write waits for the client's delayed ACK on a kept-alive connection). The small page
/// is one origin read, so this does not depend on timing; a dripped page still streams (the
/// scenario above and the chunked framing checked here).
fn complete_body_leaves_whole(w: &World) -> Outcome {
    let authority = w.streaming.to_string();
    let r = fetch_complete(w.streaming, "/embed/poll.html", &[identity()])?;
    same_bytes(
        "body",
        &r.body,
        &expected(&fixture(w, "embed/poll.html"), &authority),
    )?;
    check(
        r.header("content-length") == Some(&r.body.len().to_string())
            && r.header("transfer-encoding").is_none(),
        || {
            format!(
                "content-length {:?}, transfer-encoding {:?}",
                r.header("content-length"),
                r.header("transfer-encoding")
            )
        },
    )?;
    let line = log_line(w, &["path=\"/embed/poll.html\"", "writes=1 "])?;
    check(line.contains("outcome=finished"), || line.clone())?;
    let drip = fetch(
        w.streaming,
        "/news/article.html?drip_ms=300&drip_chunks=2",
        &[identity()],
    )?;
    check(
        drip.complete && drip.header("transfer-encoding") == Some("chunked"),
        || {
            format!(
                "dripped page: complete {}, transfer-encoding {:?}",
                drip.complete,
                drip.header("transfer-encoding")
            )
        },
    )
}

fn gzip_stays_gzip_and_streams(w: &World) -> Outcome {
    let r = fetch_complete(
        w.streaming,
        "/news/article.html?drip_ms=700&drip_chunks=4",
        &[("accept-encoding", "gzip")],
    )?;
    check(r.header("content-encoding") == Some("gzip"), || {
        format!("content-encoding {:?}", r.header("content-encoding"))
    })?;
    let want = expected(&fixture(w, "news/article.html"), &w.streaming.to_string());
    same_bytes("gunzipped body", &gunzip(&r.body)?, &want)?;
    // What had arrived before the origin's second chunk already decodes to a prefix.
    let early = r.body_bytes_by(Duration::from_millis(600));
    let decoded = gunzip_prefix(&r.body[..early]);
    check(decoded.len() >= 1000 && want.starts_with(&decoded), || {
        format!(
            "{early} gzip bytes before the second chunk decode to {} bytes",
            decoded.len()
        )
    })
}

fn brotli_round_trip(w: &World) -> Outcome {
    let r = fetch_complete(w.streaming, "/", &[("accept-encoding", "br")])?;
    check(r.header("content-encoding") == Some("br"), || {
        format!("content-encoding {:?}", r.header("content-encoding"))
    })?;
    let mut out = Vec::new();
    brotli::Decompressor::new(&r.body[..], 4096)
        .read_to_end(&mut out)
        .map_err(|e| format!("brotli: {e}"))?;
    same_bytes(
        "decoded body",
        &out,
        &expected(&fixture(w, "index.html"), &w.streaming.to_string()),
    )
}

fn rewritten_to_shorter_host(w: &World) -> Outcome {
    // 127.0.0.1:PORT is shorter than origin.demo-publisher.example.
    let r = fetch(w.streaming, "/", &[identity()])?;
    let want = expected(&fixture(w, "index.html"), &w.streaming.to_string());
    check(want != fixture(w, "index.html"), || {
        "fixture has nothing to rewrite".into()
    })?;
    // The page's `JSON.parse("…https:\\/\\/origin…")` (JSON inside a JS string literal).
    let double_escaped = format!(r"http:\\/\\/{}\\/api", w.streaming);
    check(contains(&r.body, double_escaped.as_bytes()), || {
        format!("no {double_escaped} in the page")
    })?;
    same_bytes("body", &r.body, &want)
}

fn rewritten_to_longer_host(w: &World) -> Outcome {
    let host = "a-much-longer-first-party-hostname.demo-publisher.example:7676";
    let r = fetch(
        w.streaming,
        "/news/article.html",
        &[identity(), ("host", host)],
    )?;
    let body = String::from_utf8_lossy(&r.body);
    check(body.contains(&format!("http://{host}/")), || {
        "no URL rewritten to the request host".into()
    })?;
    same_bytes(
        "body",
        &r.body,
        &expected(&fixture(w, "news/article.html"), host),
    )
}

fn text_bodies_rewritten(w: &World) -> Outcome {
    for (path, gz) in [
        ("static/site.css", false),
        ("static/app.js", true),
        ("api/feed.json", false),
    ] {
        let enc = if gz { "gzip" } else { "identity" };
        let r = fetch(
            w.streaming,
            &format!("/{path}"),
            &[("accept-encoding", enc)],
        )?;
        let body = if gz { gunzip(&r.body)? } else { r.body.clone() };
        let original = fixture(w, path);
        let want = expected(&original, &w.streaming.to_string());
        check(want != original, || {
            format!("{path} has nothing to rewrite")
        })?;
        same_bytes(path, &body, &want)?;
    }
    Ok(())
}

fn latin1_not_corrupted(w: &World) -> Outcome {
    let r = fetch(w.streaming, "/latin1.latin1.html", &[identity()])?;
    check(
        r.header("content-type")
            .is_some_and(|c| c.contains("iso-8859-1")),
        || "charset lost".into(),
    )?;
    same_bytes(
        "latin-1 body",
        &r.body,
        &expected(&fixture(w, "latin1.latin1.html"), &w.streaming.to_string()),
    )
}

fn binaries_pass_through(w: &World) -> Outcome {
    for path in ["static/hero.png", "static/random.bin"] {
        let r = fetch(
            w.streaming,
            &format!("/{path}"),
            &[("accept-encoding", "gzip, br")],
        )?;
        let original = fixture(w, path);
        same_bytes(path, &r.body, &original)?;
        check(
            r.header("content-length") == Some(&original.len().to_string()),
            || format!("{path}: content-length {:?}", r.header("content-length")),
        )?;
    }
    Ok(())
}

fn buffered_matches_streaming(w: &World) -> Outcome {
    let s = fetch(w.streaming, "/news/article.html", &[identity()])?;
    let host = w.streaming.to_string();
    let b = fetch(
        w.buffered,
        "/news/article.html",
        &[identity(), ("host", &host)],
    )?;
    same_bytes("buffered vs streaming", &b.body, &s.body)?;
    check(
        b.header("content-length") == Some(&b.body.len().to_string()),
        || format!("buffered content-length {:?}", b.header("content-length")),
    )
}

/// A gzip page the origin sends at once, in more than one read (78 KB against a 64 KiB read
/// buffer): the streaming build holds it and flushes nothing, so it is one deflate stream,
/// byte for byte the buffered build's. A sync flush after each read would end a block there
/// and change the bytes. A request whose reads the origin made wait (> 1 ms) is streamed and
/// flushed, so it is retried; three in a row fail the scenario.
fn fast_gzip_body_is_one_stream(w: &World) -> Outcome {
    let host = w.streaming.to_string();
    let gzip = ("accept-encoding", "gzip");
    let mut lines = Vec::new();
    // A page size per attempt, so the access line (which has no query) tells them apart.
    for kib in 2048..2051 {
        let path = format!("/__gen/{kib}kb.html");
        let s = fetch_complete(w.streaming, &path, &[gzip])?;
        let line = log_line(w, &[&format!("path=\"{path}\"")])?;
        if line.contains(" writes=1 ") {
            let b = fetch_complete(w.buffered, &path, &[gzip, ("host", &host)])?;
            same_bytes("decoded", &gunzip(&s.body)?, &gunzip(&b.body)?)?;
            return same_bytes("gzip bytes, streaming vs buffered", &s.body, &b.body);
        }
        lines.push(line);
    }
    Err(format!("never sent whole: {lines:?}"))
}

fn origin_dies_mid_body(w: &World) -> Outcome {
    for (path, enc) in [
        ("/news/article.html?die_after=6000", "identity"),
        (
            "/news/article.html?die_after=3000&drip_ms=100&drip_chunks=4",
            "gzip",
        ),
        ("/static/random.bin?die_after=6000", "identity"),
    ] {
        assert_incomplete(w.streaming, path, &[("accept-encoding", enc)])?;
    }
    Ok(())
}

/// Waits up to 5 s for a line of the streaming build's Viceroy log that contains every
/// needle, and returns it.
pub(crate) fn log_line(w: &World, needles: &[&str]) -> Result<String, String> {
    build_log_line(w, "streaming", needles)
}

/// Where `build`'s Viceroy (`streaming`, `buffered`) writes its log.
pub(crate) fn viceroy_log(w: &World, build: &str) -> std::path::PathBuf {
    w.root.join(format!("target/e2e/viceroy-{build}.log"))
}

/// How long the streaming build's Viceroy log is now, for [`log_line_after`].
pub(crate) fn log_len(w: &World) -> Result<usize, String> {
    let path = viceroy_log(w, "streaming");
    let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(usize::try_from(meta.len()).unwrap_or(usize::MAX))
}

/// [`log_line`], among the lines written after the log was `from` bytes long: the line of a
/// request made since, where earlier requests left lines with the same needles.
pub(crate) fn log_line_after(w: &World, from: usize, needles: &[&str]) -> Result<String, String> {
    log_line_from(w, "streaming", from, needles)
}

/// The first line of `build`'s Viceroy log with every needle, waiting up to 5 s for it.
fn build_log_line(w: &World, build: &str, needles: &[&str]) -> Result<String, String> {
    log_line_from(w, build, 0, needles)
}

/// [`build_log_line`] among what the log gained past its first `from` bytes.
fn log_line_from(w: &World, build: &str, from: usize, needles: &[&str]) -> Result<String, String> {
    let path = viceroy_log(w, build);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let all = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text = String::from_utf8_lossy(&all[from.min(all.len())..]);
        if let Some(line) = text.lines().find(|l| needles.iter().all(|n| l.contains(n))) {
            return Ok(line.to_owned());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "no log line with {needles:?} in {}",
                path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn access_lines_and_reports(w: &World) -> Outcome {
    // The line logs the path without its query (queries may carry tokens).
    let ok = fetch(
        w.streaming,
        "/news/article.html?access=1",
        &[("accept-encoding", "gzip")],
    )?;
    check(ok.status == 200 && ok.complete, || {
        format!("status {}", ok.status)
    })?;
    let line = log_line(
        w,
        &[
            "trusted_server :: access ",
            "path=\"/news/article.html\"",
            "plan=rewrite:html+gzip",
        ],
    )?;
    check(!line.contains("access=1"), || {
        format!("the query was logged: {line}")
    })?;
    for field in [
        "method=GET",
        "status=200",
        "plan=rewrite:html+gzip",
        "outcome=finished",
        "first_byte_ms=",
        "writes=",
        // No Flight script and no `<meta>` charset other than UTF-8: the URL rule alone.
        "html=plain",
    ] {
        check(line.contains(field), || {
            format!("{field} missing from {line}")
        })?;
    }
    check(!line.contains("last_byte_ms=-"), || {
        format!("no last byte time: {line}")
    })?;
    // A Next.js page has Flight scripts: the byte-level reader found them, lol_html never ran.
    fetch_complete(w.streaming, "/next/about", &[identity()])?;
    log_line(
        w,
        &[
            "trusted_server :: access ",
            "path=\"/next/about\"",
            "html=scanned",
        ],
    )?;
    // A death mid-body: the access line says abandoned, and one report says why and where.
    let path = "/news/article.html?die_after=4321";
    assert_incomplete(w.streaming, path, &[("accept-encoding", "identity")])?;
    let line = log_line(
        w,
        &["trusted_server :: access ", "in=4321", "outcome=abandoned"],
    )?;
    check(line.contains("status=200"), || line.clone())?;
    let report = log_line(
        w,
        &[
            "trusted_server :: failure: origin body failed after the headers",
            "4321 bytes in",
        ],
    )?;
    check(report.contains("backend publisher_origin"), || {
        report.clone()
    })?;
    // An image passes through host-side: the line says so and why.
    fetch(w.streaming, "/static/random.bin", &[identity()])?;
    log_line(
        w,
        &[
            "trusted_server :: access ",
            "/static/random.bin",
            "outcome=passed-through(pass:NotText)",
        ],
    )?;
    Ok(())
}

/// The buffered build is compiled with `logging.level = "warn"` (see `set_up`): its failure
/// reports reach the log, its access lines (at `info`) do not.
fn warn_level_keeps_reports_drops_access_lines(w: &World) -> Outcome {
    let ok = fetch(w.buffered, "/news/article.html?level=warn", &[identity()])?;
    check(ok.status == 200 && ok.complete, || {
        format!("status {}", ok.status)
    })?;
    // A failure after that request: once its report is in the log, so would be the earlier
    // request's access line, had it been logged.
    let _ = get(
        w.buffered,
        "/news/article.html?die_after=4321",
        &[identity()],
        TIMEOUT,
    );
    build_log_line(
        w,
        "buffered",
        &["trusted_server :: failure: ", "4321 bytes in"],
    )?;
    let path = viceroy_log(w, "buffered");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    match text
        .lines()
        .find(|l| l.contains("trusted_server :: access "))
    {
        Some(line) => Err(format!("an access line at level warn: {line}")),
        None => Ok(()),
    }
}

fn truncated_gzip_is_incomplete(w: &World) -> Outcome {
    // Cut inside the body, so the head is out long before the end of the origin body.
    assert_incomplete(
        w.streaming,
        "/news/article.html?encoding=gzip&truncate=9000&drip_ms=50&drip_chunks=4",
        &[("accept-encoding", "gzip")],
    )?;
    assert_incomplete(
        w.streaming,
        "/news/article.html?encoding=gzip&truncate=4000",
        &[("accept-encoding", "gzip")],
    )?;
    let b = fetch(
        w.buffered,
        "/news/article.html?encoding=gzip&truncate=4000",
        &[("accept-encoding", "gzip")],
    )?;
    check(b.status == 502, || {
        format!("buffered mode answered {} for a truncated gzip", b.status)
    })
}

fn wrong_encoding_is_incomplete(w: &World) -> Outcome {
    assert_incomplete(
        w.streaming,
        "/news/article.html?lie_encoding=gzip",
        &[("accept-encoding", "gzip")],
    )
}

fn unsupported_encoding_passes_through(w: &World) -> Outcome {
    // The body is plain text labelled zstd: we cannot decode zstd, so it must pass untouched.
    let r = fetch(
        w.streaming,
        "/news/article.html?lie_encoding=zstd",
        &[("accept-encoding", "zstd")],
    )?;
    check(r.header("content-encoding") == Some("zstd"), || {
        "content-encoding changed".into()
    })?;
    same_bytes(
        "zstd-labelled body",
        &r.body,
        &fixture(w, "news/article.html"),
    )
}

fn forwarding_headers_not_trusted(w: &World) -> Outcome {
    let host = "www.first-party.example";
    let r = fetch(
        w.streaming,
        "/__echo?x=1",
        &[
            identity(),
            ("host", host),
            ("x-forwarded-for", "6.6.6.6"),
            ("x-forwarded-host", "evil.test"),
            ("forwarded", "for=6.6.6.6"),
        ],
    )?;
    let body = String::from_utf8_lossy(&r.body);
    for bad in ["6.6.6.6", "evil.test"] {
        check(!body.contains(bad), || {
            format!("origin saw the client's spoofed {bad}: {body}")
        })?;
    }
    for good in [
        "[\"x-forwarded-host\",\"www.first-party.example\"]",
        "[\"x-forwarded-proto\",\"http\"]",
        "[\"host\",\"origin.demo-publisher.example\"]",
    ] {
        check(body.contains(good), || {
            format!("origin did not see {good}: {body}")
        })?;
    }
    Ok(())
}

/// The service reads the client's headers into buffers of 512 bytes and reads a longer value
/// again with the size the platform asks for (`kit::incoming`): values of several KiB, and a
/// name sent on several lines, reach the origin byte for byte and in order.
fn long_header_values_reach_the_origin_whole(w: &World) -> Outcome {
    let long: String = (0..5000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let first: String = (0..600)
        .map(|i| char::from(b'0' + (i % 10) as u8))
        .collect();
    let second = format!("second-{}", "z".repeat(700));
    let r = fetch(
        w.streaming,
        "/__echo?long=1",
        &[
            identity(),
            ("x-long", &long),
            ("x-twice", &first),
            ("x-twice", &second),
        ],
    )?;
    let echo: serde_json::Value =
        serde_json::from_slice(&r.body).map_err(|e| format!("echo is not JSON: {e}"))?;
    let lines: Vec<(String, String)> = (echo["headers"].as_array().cloned().unwrap_or_default())
        .iter()
        .map(|pair| {
            let text = |i: usize| pair[i].as_str().unwrap_or_default().to_owned();
            (text(0), text(1))
        })
        .collect();
    let values = |name: &str| -> Vec<String> {
        (lines.iter())
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect()
    };
    check(values("x-long") == [long.clone()], || {
        format!(
            "x-long arrived as {} lines, lengths {:?}",
            values("x-long").len(),
            values("x-long").iter().map(String::len).collect::<Vec<_>>()
        )
    })?;
    check(values("x-twice") == [first.clone(), second.clone()], || {
        format!(
            "x-twice arrived as {:?}",
            values("x-twice")
                .iter()
                .map(|v| &v[..v.len().min(12)])
                .collect::<Vec<_>>()
        )
    })
}

fn post_reaches_origin(w: &World) -> Outcome {
    let body = b"comment=caf%C3%A9&x=https%3A%2F%2Forigin.demo-publisher.example%2F";
    let r = e2e::send(
        w.streaming,
        "POST",
        "/__echo/a%20b?q=1&r=%C3%A9",
        &[
            identity(),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        body,
        TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    let echo = String::from_utf8_lossy(&r.body);
    for want in [
        "\"method\":\"POST\"".to_owned(),
        "\"path\":\"/__echo/a%20b\"".to_owned(),
        "\"query\":\"q=1&r=%C3%A9\"".to_owned(),
        format!("\"body_len\":{}", body.len()),
    ] {
        check(echo.contains(&want), || {
            format!("origin did not see {want}: {echo}")
        })?;
    }
    Ok(())
}

fn head_matches_get(w: &World) -> Outcome {
    let head = request(
        w.streaming,
        "HEAD",
        "/news/article.html",
        &[identity()],
        TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    let get = fetch(w.streaming, "/news/article.html", &[identity()])?;
    check(head.status == 200 && head.body.is_empty(), || {
        format!(
            "HEAD: status {} with {} body bytes",
            head.status,
            head.body.len()
        )
    })?;
    for name in ["content-type", "etag", "x-ts-version"] {
        check(head.header(name) == get.header(name), || {
            format!(
                "{name}: HEAD {:?} vs GET {:?}",
                head.header(name),
                get.header(name)
            )
        })?;
    }
    // A rewritten GET carries a Content-Length when its body was complete before anything
    // was sent (src/phases/body/downstream.rs), which HEAD cannot know without fetching the body. RFC 9110
    // lets HEAD omit it, never send a different one.
    check(
        head.header("content-length").is_none()
            || head.header("content-length") == get.header("content-length"),
        || {
            format!(
                "content-length: HEAD {:?} vs GET {:?}",
                head.header("content-length"),
                get.header("content-length")
            )
        },
    )?;
    Ok(())
}

fn redirects_and_cookies(w: &World) -> Outcome {
    let r = fetch(
        w.streaming,
        "/?redirect=/news/article.html&set_cookie=1",
        &[identity()],
    )?;
    check(r.status == 302, || format!("status {}", r.status))?;
    let want = format!("http://{}/news/article.html", w.streaming);
    check(r.header("location") == Some(&want), || {
        format!("location {:?}", r.header("location"))
    })?;
    let cookies: Vec<String> = (r.header_values("set-cookie").into_iter())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    check(
        cookies.len() == 2
            && cookies
                .iter()
                .all(|c| !c.to_ascii_lowercase().contains("domain=")),
        || format!("cookies {cookies:?}"),
    )
}

// ---------------------------------------------------------------------------------------------
// Next.js (React Server Components): the captured app the demo origin replays under /next
// (fixtures/nextjs/README.md).

/// The `Next-Router-State-Tree` a browser sent with its client-side navigation from `/next` to
/// About (fixtures/nextjs/about.rsc.meta.json).
const ABOUT_STATE_TREE: &str = "%5B%22%22%2C%7B%22children%22%3A%5B%22about%22%2C%7B%22children%22%3A%5B%22__PAGE__%22%2C%7B%7D%2Cnull%2C%22refetch%22%2C0%5D%7D%2Cnull%2Cnull%2C4%5D%7D%2Cnull%2Cnull%2C24%5D";
/// What Next.js puts in `Vary` on its pages and Flight responses (before `Accept-Encoding`).
const NEXT_VARY: &str =
    "rsc, next-router-state-tree, next-router-prefetch, next-router-segment-prefetch";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// No origin URL is left, in plain or JSON-escaped form, and some URL names `host`.
fn no_origin_urls(label: &str, body: &[u8], host: &str) -> Outcome {
    for leak in [format!("//{ORIGIN_HOST}"), format!("\\/\\/{ORIGIN_HOST}")] {
        check(!contains(body, leak.as_bytes()), || {
            format!("{label}: still contains {leak}")
        })?;
    }
    check(contains(body, format!("//{host}/").as_bytes()), || {
        format!("{label}: no URL points at {host}")
    })
}

/// Runs the independent Flight oracle (tests/oracle/flight_oracle.py) on what the proxy sent
/// for the capture `original`, rewritten for `host` over http.
fn flight_oracle(w: &World, original: &str, proxied: &[u8], host: &str, kind: &str) -> Outcome {
    let dir = w.root.join("target/e2e/rsc");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = dir.join(format!("{original}.proxied"));
    std::fs::write(&file, proxied).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut cmd = std::process::Command::new("python3");
    cmd.current_dir(&w.root)
        .args(["tests/oracle/flight_oracle.py", "check", "--original"])
        .arg(format!("fixtures/nextjs/{original}"))
        .arg("--rewritten")
        .arg(&file)
        .args(["--origin", ORIGIN_HOST, "--scheme", "http", "--host", host])
        .args(["--kind", kind]);
    if kind == "html" {
        // The HTML outside the Flight scripts must be the URL rule applied, too.
        cmd.arg("--check-html");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("flight oracle (python3): {e}"))?;
    check(out.status.success(), || {
        format!(
            "flight oracle rejects the proxied {original} ({}):\n{}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn vary_of(r: &Timed) -> Vec<String> {
    (r.header_values("vary").into_iter())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

fn rsc_request_headers_reach_origin(w: &World) -> Outcome {
    // Named as Next.js's client sends them; the echo shows names as the origin got them.
    let sent = [
        ("RSC", "1"),
        ("Next-Router-State-Tree", ABOUT_STATE_TREE),
        ("Next-Router-Prefetch", "1"),
        ("Next-Router-Segment-Prefetch", "/_tree"),
        ("Next-Url", "/about"),
        ("Next-Action", "7f3c2a9d0e41b5c6a7d8e9f00112233445566778"),
    ];
    // Navigations and prefetches are GETs, server actions POSTs: both must carry them.
    for (method, body) in [("GET", &b""[..]), ("POST", &b"[\"tram\"]"[..])] {
        let mut headers = vec![identity(), ("Accept", "text/x-component")];
        headers.extend(sent);
        if method == "POST" {
            headers.push(("Content-Type", "text/plain;charset=UTF-8"));
        }
        let r = e2e::send(
            w.streaming,
            method,
            "/__echo?_rsc=1x2y3&nextjs=1",
            &headers,
            body,
            TIMEOUT,
        )
        .map_err(|e| format!("{method} /__echo: {e}"))?;
        check(r.status == 200, || format!("{method}: status {}", r.status))?;
        let echo = String::from_utf8_lossy(&r.body);
        check(echo.contains("\"query\":\"_rsc=1x2y3&nextjs=1\""), || {
            format!("{method}: the origin did not get the query: {echo}")
        })?;
        for (name, value) in sent {
            let pair = format!("[\"{}\",\"{value}\"]", name.to_ascii_lowercase());
            let seen = echo.matches(&pair).count();
            let named = echo
                .matches(&format!("[\"{}\",", name.to_ascii_lowercase()))
                .count();
            check(seen == 1 && named == 1, || {
                format!("{method}: the origin saw {named} {name} header(s), {seen} equal to {value:?}: {echo}")
            })?;
        }
    }
    Ok(())
}

fn vary_reaches_client(w: &World) -> Outcome {
    let host = w.streaming.to_string();
    let flight: &[(&str, &str)] = &[("rsc", "1")];
    let prefetch: &[(&str, &str)] = &[("rsc", "1"), ("next-router-prefetch", "1")];
    // (what, path, request headers beyond accept-encoding and host)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: [Case; 4] = [
        ("HTML page", "/next/about?nextjs_timing=0", &[]),
        // The edge runtime's page: Next's Vary lacks Accept-Encoding, the origin adds its own.
        ("edge-runtime HTML page", "/next/live?nextjs_timing=0", &[]),
        (
            "Flight navigation",
            "/next/about?_rsc=a1&nextjs_timing=0",
            flight,
        ),
        (
            "Flight prefetch",
            "/next/about?_rsc=b2&nextjs_timing=0",
            prefetch,
        ),
    ];
    for (label, path, extra) in cases {
        for enc in ["identity", "gzip"] {
            let mut headers = vec![("accept-encoding", enc), ("host", host.as_str())];
            headers.extend_from_slice(extra);
            let direct = fetch(w.origin_addr, path, &headers)?;
            let want = vary_of(&direct);
            check(
                direct.status == 200 && want.first().is_some_and(|v| v.starts_with(NEXT_VARY)),
                || {
                    format!(
                        "{label} ({enc}): the origin sent {} with Vary {want:?}",
                        direct.status
                    )
                },
            )?;
            // An HTML page also varies on the navigation rule's headers (the script's tag),
            // on a line of its own after the origin's.
            let mut want = want;
            if label.ends_with("HTML page") {
                want.push("Sec-Fetch-Dest, Accept".to_owned());
            }
            for (build, addr) in [("streaming", w.streaming), ("buffered", w.buffered)] {
                let r = fetch(addr, path, &headers)?;
                check(r.status == 200 && vary_of(&r) == want, || {
                    format!(
                        "{label} ({enc}, {build}): status {}, Vary {:?}, origin's {want:?}",
                        r.status,
                        vary_of(&r)
                    )
                })?;
                check(
                    r.header("content-type") == direct.header("content-type"),
                    || {
                        format!(
                            "{label} ({enc}, {build}): content-type {:?}",
                            r.header("content-type")
                        )
                    },
                )?;
            }
        }
    }
    Ok(())
}

fn flight_navigation_rewritten(w: &World) -> Outcome {
    let host = w.streaming.to_string();
    // The request a click on About's next/link makes (fixtures/nextjs/README.md).
    let nav = |enc| {
        vec![
            ("accept-encoding", enc),
            ("accept", "*/*"),
            ("rsc", "1"),
            ("next-router-state-tree", ABOUT_STATE_TREE),
            ("next-url", "/"),
        ]
    };
    let path = "/next/about?_rsc=kbjVg6WzCIn1t0Fs&nextjs_timing=0";
    let r = fetch(w.streaming, path, &nav("identity"))?;
    check(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("text/x-component")),
        || format!("content-type {:?}", r.header("content-type")),
    )?;
    check(r.header("content-length").is_none(), || {
        "a rewritten Flight body kept its Content-Length".into()
    })?;
    no_origin_urls("Flight body", &r.body, &host)?;
    flight_oracle(w, "about.rsc.body", &r.body, &host, "flight")?;

    // gzip, the buffered build and the captured timing give the same bytes.
    let g = fetch(w.streaming, path, &nav("gzip"))?;
    check(
        g.header("content-encoding") == Some("gzip") && g.complete,
        || format!("gzip: content-encoding {:?}", g.header("content-encoding")),
    )?;
    same_bytes("gzip Flight body, decoded", &gunzip(&g.body)?, &r.body)?;
    let mut buffered_headers = nav("identity");
    buffered_headers.push(("host", &host));
    let b = fetch(w.buffered, path, &buffered_headers)?;
    same_bytes("buffered Flight body", &b.body, &r.body)?;
    // Timed: the first rows (3,031 bytes at once) come before the 400 ms boundary.
    let t = fetch(
        w.streaming,
        "/next/about?_rsc=kbjVg6WzCIn1t0Fs",
        &nav("identity"),
    )?;
    same_bytes("timed Flight body", &t.body, &r.body)?;
    let first = t.first_body_at.ok_or("timed: no body")?;
    check(
        first < Duration::from_millis(250) && t.last_at >= Duration::from_millis(350),
        || {
            format!(
                "timed: first body byte at {first:?}, last at {:?} (origin: rows at 0 and ~400 ms)",
                t.last_at
            )
        },
    )?;
    println!(
        "    Flight navigation: {} bytes (origin {}), oracle ok; timed: first body byte {first:?}, last {:?}",
        r.body.len(),
        nextjs_fixture(w, "about.rsc.body").len(),
        t.last_at
    );
    Ok(())
}

fn nextjs_fixture(w: &World, name: &str) -> Vec<u8> {
    std::fs::read(w.root.join("fixtures/nextjs").join(name)).expect("Next.js fixture exists")
}

fn nextjs_page_streams(w: &World) -> Outcome {
    // /next/live: 25 KB leave the origin at once, the rest at ~280, ~480, ~630 and ~785 ms.
    const LAST_CHUNK: Duration = Duration::from_millis(785);
    const EARLY: Duration = Duration::from_millis(600);
    let host = w.streaming.to_string();
    let r = fetch_complete(w.streaming, "/next/live", &[identity()])?;
    no_origin_urls("live page", &r.body, &host)?;
    flight_oracle(w, "live.body", &r.body, &host, "html")?;
    let first = r.first_body_at.ok_or("no body")?;
    let early = r.body_bytes_by(EARLY);
    check(first < Duration::from_millis(250), || {
        format!("first body byte at {first:?}; the origin's last chunk leaves at ~785 ms")
    })?;
    check(early * 2 >= r.body.len(), || {
        format!("only {early} of {} body bytes by {EARLY:?}", r.body.len())
    })?;
    check(r.last_at >= LAST_CHUNK - Duration::from_millis(50), || {
        format!(
            "last byte at {:?}: the origin's timing was not replayed?",
            r.last_at
        )
    })?;

    let g = fetch(w.streaming, "/next/live", &[("accept-encoding", "gzip")])?;
    check(
        g.status == 200 && g.complete && g.header("content-encoding") == Some("gzip"),
        || {
            format!(
                "gzip: status {} complete {} content-encoding {:?}",
                g.status,
                g.complete,
                g.header("content-encoding")
            )
        },
    )?;
    same_bytes("gzip live page, decoded", &gunzip(&g.body)?, &r.body)?;
    let g_first = g.first_body_at.ok_or("gzip: no body")?;
    let g_early = gunzip_prefix(&g.body[..g.body_bytes_by(EARLY)]);
    check(
        g_first < Duration::from_millis(250)
            && g_early.len() * 2 >= r.body.len()
            && r.body.starts_with(&g_early),
        || {
            format!(
                "gzip: first body byte at {g_first:?}, {} of {} bytes decodable by {EARLY:?}",
                g_early.len(),
                r.body.len()
            )
        },
    )?;
    let direct = fetch(w.origin_addr, "/next/live", &[identity()])?;
    println!(
        "    live page: proxy first body byte {first:?}, {}% by {EARLY:?}, last byte {:?}; gzip first body byte {g_first:?}, {}% by {EARLY:?}; direct first body byte {:?}, last byte {:?}",
        early * 100 / r.body.len(),
        r.last_at,
        g_early.len() * 100 / r.body.len(),
        direct.first_body_at.unwrap_or_default(),
        direct.last_at
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The first-party script (docs/script.md, "Serving"). The expected path and bytes come from
// the source file and an independent SHA-256, not from the service's build.

/// The script as written, and its path: `/static/tsjs=<first 16 hex of its SHA-256>.js`.
fn script(w: &World) -> (Vec<u8>, String, String) {
    let bytes = std::fs::read(w.root.join("js/tsjs/src/tsjs.js")).expect("script source");
    let hash = e2e::script_hash(&bytes);
    let path = format!("/static/tsjs={hash}.js");
    (bytes, path, hash)
}

/// Checks `name` has exactly `want` (one line), or is absent when `want` is `None`.
fn header_is(r: &Timed, name: &str, want: Option<&str>) -> Outcome {
    let got: Vec<_> = r.header_values(name);
    let ok = match want {
        Some(w) => got.len() == 1 && got[0] == w.as_bytes(),
        None => got.is_empty(),
    };
    check(ok, || {
        let got: Vec<_> = got.iter().map(|v| String::from_utf8_lossy(v)).collect();
        format!("{name}: {got:?}, want {want:?}")
    })
}

/// The headers every `200` and `304` of the script carries.
fn script_caching_headers(r: &Timed, etag: &str) -> Outcome {
    header_is(r, "etag", Some(etag))?;
    header_is(
        r,
        "cache-control",
        Some("public, max-age=31536000, immutable"),
    )?;
    header_is(r, "vary", Some("Accept-Encoding"))?;
    header_is(r, "x-ts-version", Some(trusted_server_core::VERSION))?;
    header_is(r, RESPONSE_HEADER.0, Some(RESPONSE_HEADER.1))
}

fn script_served(w: &World) -> Outcome {
    let (bytes, path, hash) = script(w);
    for addr in [w.streaming, w.buffered] {
        let r = fetch_complete(addr, &path, &[])?;
        script_caching_headers(&r, &format!("\"{hash}\""))?;
        header_is(
            &r,
            "content-type",
            Some("application/javascript; charset=utf-8"),
        )?;
        header_is(&r, "content-encoding", None)?;
        header_is(&r, "content-length", Some(&bytes.len().to_string()))?;
        same_bytes("script body", &r.body, &bytes)?;
        // An explicit identity is the same representation.
        let r = fetch_complete(addr, &path, &[identity()])?;
        header_is(&r, "content-encoding", None)?;
        same_bytes("script body (identity)", &r.body, &bytes)?;
    }
    Ok(())
}

fn script_not_modified(w: &World) -> Outcome {
    let (_, path, hash) = script(w);
    let cases: &[(&[(&str, &str)], String)] = &[
        (&[], format!("\"{hash}\"")),
        (&[], format!("\"stale\", W/\"{hash}\"")),
        (&[], "*".to_owned()),
        (&[("accept-encoding", "gzip")], format!("\"{hash}-gzip\"")),
        (&[("accept-encoding", "gzip, br")], format!("\"{hash}-br\"")),
    ];
    for (headers, inm) in cases {
        let mut h = headers.to_vec();
        h.push(("if-none-match", inm));
        let r = fetch(w.streaming, &path, &h)?;
        check(r.status == 304 && r.body.is_empty(), || {
            format!(
                "If-None-Match {inm}: status {} body {}",
                r.status,
                r.body.len()
            )
        })?;
        let etag = match headers.first().map(|(_, v)| *v) {
            Some("gzip") => format!("\"{hash}-gzip\""),
            Some(_) => format!("\"{hash}-br\""),
            None => format!("\"{hash}\""),
        };
        script_caching_headers(&r, &etag)?;
        header_is(&r, "content-type", None)?;
        header_is(&r, "content-encoding", None)?;
    }
    // A validator of another representation, or of nothing we serve, is no match.
    for (ae, inm) in [
        ("identity", format!("\"{hash}-gzip\"")),
        ("br", format!("\"{hash}\"")),
        ("gzip", "\"0000000000000000-gzip\"".to_owned()),
    ] {
        let r = fetch(
            w.streaming,
            &path,
            &[("accept-encoding", ae), ("if-none-match", &inm)],
        )?;
        check(r.status == 200 && !r.body.is_empty(), || {
            format!("{ae} / If-None-Match {inm}: status {}", r.status)
        })?;
    }
    Ok(())
}

fn script_encodings(w: &World) -> Outcome {
    let (bytes, path, hash) = script(w);
    let cases = [
        ("gzip, deflate, br, zstd", "br"),
        ("gzip", "gzip"),
        ("gzip;q=1, br;q=0.5", "gzip"),
        ("br;q=0, *", "gzip"),
        ("br;q=0, gzip;q=0", "identity"),
        ("deflate", "identity"),
    ];
    for (accept, want) in cases {
        let r = fetch_complete(w.streaming, &path, &[("accept-encoding", accept)])?;
        let (etag, coding) = match want {
            "identity" => (format!("\"{hash}\""), None),
            other => (format!("\"{hash}-{other}\""), Some(other)),
        };
        script_caching_headers(&r, &etag).map_err(|e| format!("{accept}: {e}"))?;
        header_is(&r, "content-encoding", coding).map_err(|e| format!("{accept}: {e}"))?;
        header_is(&r, "content-length", Some(&r.body.len().to_string()))?;
        let decoded = match want {
            "gzip" => gunzip(&r.body)?,
            "br" => {
                let mut out = Vec::new();
                brotli::Decompressor::new(&r.body[..], 4096)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("br: {e}"))?;
                out
            }
            _ => r.body.clone(),
        };
        same_bytes(&format!("{accept}: decoded script"), &decoded, &bytes)?;
        if want != "identity" {
            check(r.body.len() < bytes.len(), || {
                format!("{accept}: {} compressed bytes", r.body.len())
            })?;
        }
    }
    Ok(())
}

fn script_unknown_hash_and_head(w: &World) -> Outcome {
    let (bytes, path, _) = script(w);
    for other in [
        "/static/tsjs=0000000000000000.js".to_owned(),
        path.replace(".js", ".js.map"),
        path.to_uppercase()
            .replace("/STATIC/TSJS=", "/static/tsjs="),
    ] {
        if other == path {
            continue;
        }
        let r = fetch(w.streaming, &other, &[("if-none-match", "*")])?;
        check(r.status == 404, || format!("{other}: status {}", r.status))?;
        header_is(&r, "cache-control", Some("no-store"))?;
        header_is(&r, "x-ts-version", Some(trusted_server_core::VERSION))?;
        header_is(&r, RESPONSE_HEADER.0, Some(RESPONSE_HEADER.1))?;
    }
    for accept in ["identity", "br"] {
        let head = request(
            w.streaming,
            "HEAD",
            &path,
            &[("accept-encoding", accept)],
            TIMEOUT,
        )
        .map_err(|e| e.to_string())?;
        let get = fetch_complete(w.streaming, &path, &[("accept-encoding", accept)])?;
        check(head.status == 200 && head.body.is_empty(), || {
            format!("HEAD: status {} body {}", head.status, head.body.len())
        })?;
        for name in [
            "content-type",
            "content-encoding",
            "content-length",
            "etag",
            "cache-control",
            "vary",
            "x-ts-version",
        ] {
            check(head.header(name) == get.header(name), || {
                format!(
                    "{accept} {name}: HEAD {:?} vs GET {:?}",
                    head.header(name),
                    get.header(name)
                )
            })?;
        }
        if accept == "identity" {
            same_bytes("GET after HEAD", &get.body, &bytes)?;
        }
    }
    Ok(())
}

fn slow_origin_gets_504(w: &World) -> Outcome {
    let started = Instant::now();
    let r = fetch(
        w.streaming,
        &format!("/?headers_delay_ms={}", FIRST_BYTE_TIMEOUT_MS * 3),
        &[identity()],
    )?;
    check(r.status == 504, || {
        format!("status {} after {:?}", r.status, started.elapsed())
    })?;
    check(r.header("x-ts-version").is_some(), || {
        "504 without the version header".into()
    })
}

fn dead_origin_gets_502(w: &World) -> Outcome {
    check(w.origin.id().is_none(), || "origin still running".into())?;
    let r = request(w.streaming, "GET", "/", &[identity()], TIMEOUT).map_err(|e| e.to_string())?;
    check(r.status == 502, || format!("status {}", r.status))?;
    check(r.header("x-ts-version").is_some(), || {
        "502 without the version header".into()
    })?;
    let body = String::from_utf8_lossy(&r.body);
    check(body.len() < 64 && !body.contains("127.0.0.1"), || {
        format!("502 body leaks details: {body:?}")
    })
}

/// The element children of `node` named `name`.
fn children_named(node: &markup5ever_rcdom::Handle, name: &str) -> Vec<markup5ever_rcdom::Handle> {
    node.children
        .borrow()
        .iter()
        .filter(|n| {
            matches!(&n.data, markup5ever_rcdom::NodeData::Element { name: el, .. } if &*el.local == name)
        })
        .cloned()
        .collect()
}

/// The attributes of element `node`, if it is one.
fn attributes(node: &markup5ever_rcdom::Handle) -> Vec<(String, String)> {
    match &node.data {
        markup5ever_rcdom::NodeData::Element { attrs, .. } => attrs
            .borrow()
            .iter()
            .map(|a| (a.name.local.to_string(), a.value.to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

/// Parses `page` with html5ever: the attributes of the head's first child if it is the
/// script (`<script id="ts-js">`), and how many such scripts the document has.
fn injected_script(page: &[u8]) -> (Option<Vec<(String, String)>>, usize) {
    use html5ever::tendril::TendrilSink;
    use markup5ever_rcdom::{Handle, NodeData, RcDom};
    fn is_ts(node: &Handle) -> bool {
        matches!(&node.data, NodeData::Element { name, .. } if &*name.local == "script")
            && attributes(node)
                .iter()
                .any(|(n, v)| n == "id" && v == "ts-js")
    }
    fn count(node: &Handle) -> usize {
        usize::from(is_ts(node)) + node.children.borrow().iter().map(count).sum::<usize>()
    }
    let dom = html5ever::parse_document(RcDom::default(), Default::default())
        .from_utf8()
        .read_from(&mut &page[..])
        .expect("reading from memory");
    let first = children_named(&dom.document, "html")
        .first()
        .and_then(|html| children_named(html, "head").first().cloned())
        .and_then(|head| head.children.borrow().first().cloned())
        .filter(is_ts)
        .map(|node| attributes(&node));
    (first, count(&dom.document))
}

fn script_injected_on_navigations(w: &World) -> Outcome {
    let host = w.streaming.to_string();
    let navigation = ("sec-fetch-dest", "document");
    let tag_of = |label: &str, body: &[u8]| -> Result<Vec<(String, String)>, String> {
        match injected_script(body) {
            (Some(attrs), 1) => Ok(attrs),
            (first, n) => Err(format!(
                "{label}: head's first child {first:?}, {n} ts-js scripts in {}",
                String::from_utf8_lossy(&body[..body.len().min(600)])
            )),
        }
    };
    // Every fixture page, plain and gzip, streamed and buffered: the page is the rewritten
    // origin page plus the tag, which html5ever finds first in the head.
    for (path, file) in [
        ("/", "index.html"),
        ("/news/article.html", "news/article.html"),
        ("/embed/poll.html", "embed/poll.html"),
    ] {
        for addr in [w.streaming, w.buffered] {
            let want = expected(&fixture(w, file), &addr.to_string());
            let r = fetch_complete(addr, path, &[identity(), navigation])?;
            let attrs = tag_of(path, &r.body)?;
            same_bytes(
                &format!("{path} without the tag"),
                &without_tag(&r.body),
                &want,
            )?;
            check(
                attrs
                    .iter()
                    .any(|(n, v)| n == "src" && v.starts_with("/static/tsjs=")),
                || format!("{path}: tag attributes {attrs:?}"),
            )?;
            let g = fetch_complete(addr, path, &[("accept-encoding", "gzip"), navigation])?;
            same_bytes(&format!("{path} gzip"), &gunzip(&g.body)?, &r.body)?;
        }
    }
    // A client without Sec-Fetch headers navigating: Accept names text/html.
    let legacy = fetch_complete(
        w.streaming,
        "/",
        &[identity(), ("accept", "text/html,*/*;q=0.8")],
    )?;
    tag_of("legacy navigation", &legacy.body)?;
    // A fragment fetched by page code, and a request naming no HTML: untouched.
    let home = fixture(w, "index.html");
    for headers in [
        vec![
            identity(),
            ("sec-fetch-dest", "empty"),
            ("accept", "text/html"),
        ],
        vec![identity(), ("accept", "*/*")],
    ] {
        let r = fetch_complete(w.streaming, "/", &headers)?;
        same_bytes(
            &format!("fetch {headers:?}"),
            &r.body,
            &expected(&home, &host),
        )?;
        varies_by_navigation(&format!("fetch {headers:?}"), &r, true)?;
    }
    // The navigation's copy and the fetch's copy differ, so both say what they vary on; a
    // stylesheet is the same for both and does not.
    varies_by_navigation("legacy navigation", &legacy, true)?;
    let css = fetch_complete(w.streaming, "/static/site.css", &[identity(), navigation])?;
    varies_by_navigation("stylesheet", &css, false)?;
    // An error page is not a page to instrument.
    let missing = fetch(w.streaming, "/no-such-page.html", &[identity(), navigation])?;
    check(
        missing.status == 404 && !contains(&missing.body, b"ts-js"),
        || {
            format!(
                "404: status {} body {}",
                missing.status,
                String::from_utf8_lossy(&missing.body)
            )
        },
    )?;
    // A Next.js page with a nonce-based Content-Security-Policy: the tag carries the nonce.
    let nonce = fetch_complete(w.streaming, "/next/nonce", &[identity(), navigation])?;
    let attrs = tag_of("nonce page", &nonce.body)?;
    let policy = nonce.header("content-security-policy").unwrap_or_default();
    check(
        attrs
            .iter()
            .any(|(n, v)| n == "nonce" && policy.contains(&format!("'nonce-{v}'"))),
        || format!("nonce page: tag attributes {attrs:?}, policy {policy}"),
    )?;
    flight_oracle(w, "nonce.body", &without_tag(&nonce.body), &host, "html")
}

/// Whether `r`'s `Vary` lines name both headers the navigation rule reads, as `want`s.
fn varies_by_navigation(label: &str, r: &Timed, want: bool) -> Outcome {
    let names: Vec<String> = vary_of(r)
        .iter()
        .flat_map(|line| line.split(',').map(|t| t.trim().to_ascii_lowercase()))
        .collect();
    let varies = ["sec-fetch-dest", "accept"]
        .iter()
        .all(|n| names.iter().any(|t| t == n));
    check(varies == want, || {
        format!("{label}: Vary names {names:?}, wanted the navigation headers: {want}")
    })
}

/// `page` without its first `<script src="/static/tsjs=…" …></script>`.
fn without_tag(page: &[u8]) -> Vec<u8> {
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let Some(start) = find(page, b"<script src=\"/static/tsjs=") else {
        return page.to_vec();
    };
    let end = start + find(&page[start..], b"</script>").map_or(0, |e| e + b"</script>".len());
    [&page[..start], &page[end..]].concat()
}
