//! `POST /_ts/openrtb2/auction`: the Prebid Server-compatible auction on the first-party host.
//!
//! In order: the method and the caller's origin (only the publisher's own pages), the body
//! (bounded) read into a bid request, then the auction run by `phases::auction` (each bidder
//! checked against the reader's consent, every allowed one asked at once, the answer put
//! together by the core) and answered at once. A bidder's fault costs only its own bids; the
//! page's mistakes are answered 400 or 413; nothing a bidder does makes a 5xx.

use fastly::http::StatusCode;
use fastly::{Request, Response};
use trusted_server_core::auction::{read_request, MAX_BODY_BYTES};
use trusted_server_core::consent::Decision;
use trusted_server_core::{client_authority, Settings};

use crate::kit::access::Access;
use crate::kit::{leaving, reply, request_body};
use crate::phases::auction::{self, Asker, Planned, Reader};
use crate::phases::{client, identity, partner_ids};

/// The path Prebid.js's `s2sConfig.endpoint` points at.
pub const PATH: &str = "/_ts/openrtb2/auction";

/// The path `tsjs.pageBids` asks, for a single-page app's navigation to `?path=`.
pub const PAGE_BIDS_PATH: &str = "/_ts/page-bids";

/// `GET /_ts/page-bids?path=/next/page`: the bids of the slots on the page at `path`, as the
/// page's `#ts-bids` block would carry them (`{"v":1,"id":…,"cur":…,"slots":{…}}`), for a
/// single-page app that changed pages without a navigation. The rules of a navigation's
/// auction (`page_slots`: the settings, prefetches, bots, the slots; the reader's consent)
/// and the endpoint's same-origin rule; `404` (with the reason) when no auction starts.
pub fn page_bids(request: Request, settings: &Settings, decision: &Decision, access: &mut Access) {
    let response = page_bids_answer(&request, settings, decision);
    leaving::send_whole(response, access, settings);
}

fn page_bids_answer(request: &Request, settings: &Settings, decision: &Decision) -> Response {
    if !settings.auction.enabled {
        return reply::not_found(request, settings);
    }
    let host = client_authority(header_utf8(request, "host"), &settings.publisher.domain);
    if let Err(why) = same_origin(request, &host) {
        return refusal(StatusCode::FORBIDDEN, &why, settings);
    }
    let query = request
        .get_query::<std::collections::HashMap<String, String>>()
        .unwrap_or_default();
    let Some(path) = query
        .get("path")
        .filter(|p| p.starts_with('/') && !p.starts_with("//"))
    else {
        let why = "page-bids needs ?path=/the/page's/path";
        return refusal(StatusCode::BAD_REQUEST, why, settings);
    };
    // Slots are matched on the path alone.
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let client = client::observe(request, settings);
    let page_url = format!("{}://{}{path}", client.scheme, client.authority);
    let edge_id = identity::request_phase(request, || decision.edge_id, settings).valid_cookie;
    let asker = Asker {
        host: &client.authority,
        edge_id: edge_id.as_deref(),
    };
    // The app's own fetch stands for a navigation to `path`.
    let page = auction::page_request(request, path, true);
    let planned = auction::for_slots(request, &page, || page_url, asker, settings, || decision);
    let answer = match planned {
        Ok(planned) => {
            let planned = with_partner_eids(planned, edge_id.as_deref(), settings, decision);
            let bids = planned.start(settings, decision).page_bids(settings);
            reply::json(
                StatusCode::OK,
                bids.to_string(),
                "no-store, private",
                settings,
            )
        }
        Err(why) => refusal(
            StatusCode::NOT_FOUND,
            &format!("no auction for this page: {why}"),
            settings,
        ),
    };
    answer
}

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
    let host = client_authority(header_utf8(&request, "host"), &settings.publisher.domain);
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
    let edge_id = identity::request_phase(&request, || decision.edge_id, settings).valid_cookie;
    let asker = Asker {
        host: &host,
        edge_id: edge_id.as_deref(),
    };
    let reader = Reader::of(&request, asker);
    let eids = (edge_id.as_deref())
        .and_then(|ec| partner_ids::eids_for_auction(ec, decision, settings))
        .map(|eids| eids())
        .unwrap_or_default();
    let running = auction::start(&reader, bid_request, &eids, settings, decision);
    let (json, _) = running.finish(settings);
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

/// `name`'s value when it is UTF-8 (`get_header_str` would panic on one that is not, and any
/// client can send one): otherwise absent.
fn header_utf8<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.get_header(name).and_then(|v| v.to_str().ok())
}

/// Only the publisher's own pages: a browser names the page's origin in `Origin` and says
/// `Sec-Fetch-Site`; another site's page (whose request would carry this reader's cookies)
/// is refused. A client that sends neither is not a browser page acting for a reader.
fn same_origin(request: &Request, host: &str) -> Result<(), String> {
    // Lossy, never `get_header_str` (which panics on a value that is not UTF-8): a mangled
    // value matches neither `same-origin` nor the host, so it is refused.
    let lossy = |name| request.get_header_str_lossy(name);
    if let Some(site) = lossy("sec-fetch-site") {
        if !site.trim().eq_ignore_ascii_case("same-origin") {
            return Err(format!(
                "cross-site auction requests are refused (Sec-Fetch-Site: {})",
                site.trim()
            ));
        }
    }
    if let Some(origin) = lossy("origin") {
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

/// `planned` with the reader's partner IDs (the graph's lookup started now, waited for when
/// the bidders are asked), when the reader has a valid edge ID (`edge_id`) and the graph is
/// kept. Every navigation auction and `/_ts/page-bids` starts this way.
pub fn with_partner_eids<'a>(
    planned: Planned<'a>,
    edge_id: Option<&str>,
    settings: &'a Settings,
    decision: &Decision,
) -> Planned<'a> {
    let eids = edge_id.and_then(|ec| partner_ids::eids_for_auction(ec, decision, settings));
    match eids {
        Some(eids) => planned.with_partner_eids(eids),
        None => planned,
    }
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

    /// A client may send any bytes a header allows (obs-text): one that is not UTF-8 is refused
    /// where it is checked and absent where it is only read, and never panics.
    #[test]
    fn header_values_that_are_not_utf8_are_refused_not_a_panic() {
        let not_utf8 = |text: &str| {
            let mut bytes = text.as_bytes().to_vec();
            bytes.push(0xff);
            fastly::http::HeaderValue::from_bytes(&bytes).unwrap()
        };
        for name in ["origin", "sec-fetch-site"] {
            let value = match name {
                "origin" => not_utf8("https://www.pub.test"),
                _ => not_utf8("same-origin"),
            };
            let request =
                Request::post("http://www.pub.test/_ts/openrtb2/auction").with_header(name, value);
            assert!(same_origin(&request, "www.pub.test").is_err(), "{name}");
        }
        let request = Request::get("http://www.pub.test/").with_header("host", not_utf8("a"));
        assert_eq!(header_utf8(&request, "host"), None);
        let request = Request::get("http://www.pub.test/").with_header("host", "www.pub.test");
        assert_eq!(header_utf8(&request, "host"), Some("www.pub.test"));
    }
}
