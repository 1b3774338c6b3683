//! `POST /_ts/openrtb2/auction`: the Prebid Server-compatible auction on the first-party host.
//!
//! In order: the method and the caller's origin (only the publisher's own pages), the body
//! (bounded) read into a bid request, each bidder the page names looked up in the settings
//! and checked against the reader's consent, every allowed bidder asked at once
//! (`phases::bidders`) until the deadline, and the answer put together by the core
//! (`trusted_server_core::auction::respond`). A bidder's fault costs only its own bids;
//! the page's mistakes are answered 400 or 413; nothing a bidder does makes a 5xx.
//!
//! The deadline: the smaller of the request's `tmax` less `auction.margin_ms`, and
//! `auction.timeout_ms`; each bidder is also cut off at its own `timeout_ms`, and is told in
//! its request's `tmax` how long it has.

use std::rc::Rc;
use std::time::{Duration, Instant};

use fastly::backend::BackendCreationError;
use fastly::http::StatusCode;
use fastly::{Backend, Request, Response};
use trusted_server_core::auction::{
    bidder_request, first_party_creative, granularity_of, read_answer, read_request, respond,
    BidRequest, BidderConsent, BidderError, ConsentStrings, Edge, Geo, Outcome, MAX_BODY_BYTES,
};
use trusted_server_core::consent::Decision;
use trusted_server_core::first_party::creative::Signer;
use trusted_server_core::first_party::proxy::signer;
use trusted_server_core::{client_authority, Settings};
use trusted_server_settings::{Bidder, Rendering, Scheme};

use crate::kit::access::Access;
use crate::kit::{leaving, partner, reply, request_body, signed_url};
use crate::phases::bidders::{ask_all, Call, Collected};
use crate::phases::{client, identity};

/// The path Prebid.js's `s2sConfig.endpoint` points at.
pub const PATH: &str = "/_ts/openrtb2/auction";

/// Answers one auction request and sends the answer.
pub fn run(request: Request, settings: &Settings, decision: &Decision, access: &mut Access) {
    let response = answer(request, settings, decision);
    leaving::send_whole(response, access, settings);
}

fn answer(mut request: Request, settings: &Settings, decision: &Decision) -> Response {
    if !settings.auction.enabled {
        return reply::not_found(&request, settings);
    }
    if request.get_method_str() != "POST" {
        let mut response = refusal(StatusCode::METHOD_NOT_ALLOWED, "use POST", settings);
        response.set_header("allow", "POST");
        return response;
    }
    let host = client_authority(request.get_header_str("host"), &settings.publisher.domain);
    if let Err(why) = same_origin(&request, &host) {
        return refusal(StatusCode::FORBIDDEN, &why, settings);
    }
    let body = match request_body::bounded(&mut request, MAX_BODY_BYTES) {
        Ok(body) => body,
        Err(status) => {
            let why = if status == StatusCode::PAYLOAD_TOO_LARGE {
                format!("the body is over {MAX_BODY_BYTES} bytes")
            } else {
                "the body could not be read".to_owned()
            };
            return refusal(status, &why, settings);
        }
    };
    let bid_request = match read_request(&body) {
        Ok(r) => r,
        Err(e) => {
            let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
            return refusal(status, &e.to_string(), settings);
        }
    };
    let json = auction(&request, &bid_request, &host, settings, decision);
    reply::json(
        StatusCode::OK,
        json.to_string(),
        "no-store, private",
        settings,
    )
}

/// A refusal of the page's request: its status and what is wrong, as text.
fn refusal(status: StatusCode, why: &str, settings: &Settings) -> Response {
    reply::with_standard_headers(
        Response::from_status(status)
            .with_header("content-type", "text/plain; charset=utf-8")
            .with_header("cache-control", "no-store")
            .with_body(format!("{why}\n")),
        settings,
    )
}

/// Only the publisher's own pages: a browser names the page's origin in `Origin` and says
/// `Sec-Fetch-Site`; another site's page (whose request would carry this reader's cookies)
/// is refused. A client that sends neither is not a browser page acting for a reader.
fn same_origin(request: &Request, host: &str) -> Result<(), String> {
    if let Some(site) = request.get_header_str("sec-fetch-site") {
        if !site.trim().eq_ignore_ascii_case("same-origin") {
            return Err(format!(
                "cross-site auction requests are refused (Sec-Fetch-Site: {})",
                site.trim()
            ));
        }
    }
    if let Some(origin) = request.get_header_str("origin") {
        let authority = (origin.strip_prefix("https://"))
            .or_else(|| origin.strip_prefix("http://"))
            .unwrap_or("");
        if authority.is_empty() || !authority.eq_ignore_ascii_case(host) {
            return Err(format!(
                "auction requests are taken from this site's own pages only (Origin: {})",
                origin.chars().take(100).collect::<String>()
            ));
        }
    }
    Ok(())
}

/// Runs the auction for a read request and puts the answer together.
fn auction(
    request: &Request,
    bid_request: &BidRequest,
    host: &str,
    settings: &Settings,
    decision: &Decision,
) -> serde_json::Value {
    let start = Instant::now();
    // The page's scheme: Prebid.js writes the markup into a frame of the page that asked.
    let page_scheme = client::scheme(request);
    let a = &settings.auction;
    let deadline_ms = match bid_request.tmax_ms {
        Some(tmax) => tmax
            .saturating_sub(a.margin_ms.into())
            .min(a.timeout_ms.into()),
        None => a.timeout_ms.into(),
    };
    let deadline = start + Duration::from_millis(deadline_ms);
    let (granularity, granularity_warning) = granularity_of(bid_request, a.price_granularity);

    let ip = request.get_client_ip_addr();
    let geo = ip.and_then(fastly::geo::geo_lookup);
    let cookies = request.get_header_all_str_lossy("cookie").join("; ");
    let edge_id = identity::request_phase(request, decision, settings).valid_cookie;
    let tid = transaction_id();
    let edge = Edge {
        host,
        publisher_domain: &settings.publisher.domain,
        user_agent: request.get_header_str("user-agent"),
        ip,
        geo: geo.as_ref().map(|g| Geo {
            country: Some(g.country_code3()).filter(|c| !c.is_empty()),
            region: g.region(),
            point: Some((g.latitude(), g.longitude())),
        }),
        edge_id: edge_id.as_deref(),
        gdpr: decision.rule == trusted_server_settings::ConsentRule::OptIn,
        strings: ConsentStrings::from_cookies(&cookies),
        tid: &tid,
        currency: &a.currency,
    };

    // Each bidder code the page names, once, in the order first named.
    let mut codes: Vec<&str> = Vec::new();
    for imp in &bid_request.imps {
        for (code, _) in &imp.bidders {
            if !codes.contains(&code.as_str()) {
                codes.push(code);
            }
        }
    }
    // The signing key only when a bidder is signed: a Secret Store read per auction otherwise.
    let key = match a.bidders.iter().any(|b| b.signed) {
        true => partner::key(settings),
        false => partner::Key::Disabled,
    };
    let mut outcomes: Vec<(String, Outcome)> = Vec::with_capacity(codes.len());
    let mut calls = Vec::new();
    // For each call: its place in `outcomes`, the impressions it was asked about, and its
    // bidder (whose settings say how its creatives are served).
    let mut asked = Vec::new();
    for code in codes {
        // Exactly as written: Prebid.js's codes are case-sensitive.
        let Some(bidder) = (a.bidders.iter()).find(|b| b.code == code) else {
            outcomes.push((code.to_owned(), Outcome::Unknown));
            continue;
        };
        let consent = BidderConsent::of(decision, bidder.vendor_id);
        if !consent.asked {
            outcomes.push((code.to_owned(), Outcome::NotAllowed(consent.reason)));
            continue;
        }
        let bidder_deadline = deadline.min(start + Duration::from_millis(bidder.timeout_ms.into()));
        let tmax = bidder_deadline.saturating_duration_since(Instant::now());
        let tmax_ms = u64::try_from(tmax.as_millis()).unwrap_or(u64::MAX);
        if tmax_ms == 0 {
            // No time left (a `tmax` at or below the margin): not worth a request.
            outcomes.push((code.to_owned(), Outcome::TimedOut { ms: 0 }));
            continue;
        }
        let Some((body, imps)) = bidder_request(bid_request, code, &consent, &edge, tmax_ms) else {
            continue;
        };
        match outgoing(bidder, &body, &key, settings) {
            Ok(call) => {
                asked.push((outcomes.len(), imps, bidder));
                outcomes.push((code.to_owned(), Outcome::TimedOut { ms: deadline_ms }));
                calls.push(Call {
                    deadline: bidder_deadline,
                    ..call
                });
            }
            Err(why) => outcomes.push((code.to_owned(), Outcome::Unreachable { why, ms: 0 })),
        }
    }

    let collected = ask_all(calls, start);
    let mut signer: Option<Option<Rc<Signer>>> = None;
    for ((place, imps, bidder), got) in asked.into_iter().zip(collected) {
        let outcome = match got {
            Collected::Whole { status, body, ms } => {
                match read_answer(status, &body, &imps, &a.currency) {
                    Ok(mut answer) => {
                        // The URL key is read once, and only for a first-party bidder's bids.
                        let first_party = bidder.rendering == Rendering::FirstParty;
                        if first_party && !answer.bids.is_empty() {
                            let signer = signer.get_or_insert_with(|| creative_signer(settings));
                            if let Some(signer) = signer {
                                for bid in &mut answer.bids {
                                    first_party_creative(bid, signer, page_scheme);
                                }
                            }
                        }
                        Outcome::Answered { answer, ms }
                    }
                    Err(error) => Outcome::Refused { error, ms },
                }
            }
            Collected::TooLarge { ms } => Outcome::Refused {
                error: BidderError::TooLarge,
                ms,
            },
            Collected::Unreadable { why, ms } => Outcome::Refused {
                error: BidderError::NotOpenRtb(why),
                ms,
            },
            Collected::Failed { why, ms } => Outcome::Unreachable { why, ms },
            Collected::Late { ms } => Outcome::TimedOut { ms },
        };
        outcomes[place].1 = outcome;
    }
    let warnings: Vec<String> = granularity_warning.into_iter().collect();
    respond(
        bid_request,
        &outcomes,
        &granularity,
        &a.currency,
        deadline_ms,
        &warnings,
    )
}

/// The signer of winning creatives' URLs (`rendering = "first-party"`): the first-party
/// proxy's key and policy, good for `first_party.page_ttl_secs` (the page may show the ad a
/// while). Without the key the creatives go as the bidders sent them, and the log says so.
fn creative_signer(settings: &Settings) -> Option<Rc<Signer>> {
    let fp = &settings.first_party;
    let key = signed_url::read_key(fp).and_then(|key| Ok((key, signed_url::now()?)));
    match key {
        Ok((key, now)) => {
            let expires = now + u64::from(fp.page_ttl_secs);
            Some(Rc::new(signer(key, signed_url::policy(fp), expires)))
        }
        Err(e) => {
            log::error!("auction creatives sent as the bidders wrote them: {e}");
            None
        }
    }
}

/// The request to `bidder`, built whole: a fresh set of headers (none of the reader's), the
/// body, the signature when the bidder wants one, through its own backend.
fn outgoing(
    bidder: &Bidder,
    body: &serde_json::Value,
    key: &partner::Key,
    settings: &Settings,
) -> Result<Call, String> {
    let url = format!(
        "{}://{}{}",
        bidder.scheme.as_str(),
        bidder.authority,
        bidder.path_and_query
    );
    let mut request = Request::post(url)
        .with_header("content-type", "application/json")
        .with_header("accept-encoding", "identity")
        .with_header("x-openrtb-version", "2.6")
        .with_header("host", &*bidder.authority)
        .with_body(body.to_string());
    if bidder.signed {
        partner::sign_with(&mut request, key);
    }
    let backend = backend(bidder, settings)?;
    Ok(Call {
        request,
        backend,
        deadline: Instant::now(),
    })
}

/// The dynamic backend of `bidder`, named after it, created once per instance. Its timeouts
/// are the bidder's own (the auction's deadline cuts it off sooner when it must).
fn backend(bidder: &Bidder, settings: &Settings) -> Result<Backend, String> {
    let name = format!("bidder_{}", bidder.code);
    let timeout = Duration::from_millis(bidder.timeout_ms.into());
    let connect = timeout.min(Duration::from_millis(
        settings.publisher.connect_timeout_ms.into(),
    ));
    let mut builder = Backend::builder(&name, &*bidder.address)
        .connect_timeout(connect)
        .first_byte_timeout(timeout)
        .between_bytes_timeout(timeout);
    if bidder.scheme == Scheme::Https {
        builder = builder
            .enable_ssl()
            .sni_hostname(&*bidder.tls_host)
            .check_certificate(&*bidder.tls_host);
    }
    match builder.finish() {
        Ok(backend) => Ok(backend),
        Err(BackendCreationError::NameInUse) => {
            Backend::from_name(&name).map_err(|e| format!("backend {name}: {e}"))
        }
        Err(e) => Err(format!(
            "cannot create a backend for {}: {e}",
            bidder.address
        )),
    }
}

/// A fresh transaction ID for `source.tid`: 16 random bytes as hex (no time, no reader in it).
fn transaction_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        return String::from("0");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_sites_own_pages_may_ask() {
        let at = |headers: &[(&str, &str)]| {
            let mut request = Request::post("http://www.pub.test/_ts/openrtb2/auction");
            for (name, value) in headers {
                request.set_header(*name, *value);
            }
            same_origin(&request, "www.pub.test")
        };
        assert!(at(&[]).is_ok(), "not a browser");
        assert!(at(&[
            ("origin", "https://www.pub.test"),
            ("sec-fetch-site", "same-origin")
        ])
        .is_ok());
        assert!(at(&[("origin", "http://WWW.pub.test")]).is_ok());
        for refused in [
            &[("origin", "https://evil.test")][..],
            &[("origin", "https://www.pub.test.evil.test")],
            &[("origin", "null")],
            &[("sec-fetch-site", "cross-site")],
            &[("sec-fetch-site", "same-site")],
            &[
                ("origin", "https://www.pub.test"),
                ("sec-fetch-site", "cross-site"),
            ],
        ] {
            assert!(at(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn a_transaction_id_is_new_each_time() {
        let (a, b) = (transaction_id(), transaction_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
