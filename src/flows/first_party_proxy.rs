//! `GET /first-party/proxy?tsurl=…&tsexp=…&tstoken=…`, adapter side: verify the signed URL
//! (as `/first-party/click` does, with the same key, clock and policy from `kit::signed_url`),
//! fetch the target from the partner through a dynamic backend, following redirects, each hop
//! signed by `partner::sign_with`, and stream the answer: an HTML or CSS creative through the
//! creative pipeline (`phases::body::stream`, the machinery that streams the publisher's pages), any
//! other body untouched. What passes in each direction, when a redirect is followed and the
//! sandbox every relayed response is confined to are the core's decisions
//! (`first_party::proxy`).
//!
//! `POST` to the same signed URL is a beacon (`<a ping>`, `navigator.sendBeacon`, a tracker's
//! `fetch` with a body), which a creative fires at URLs the creative stage signed: its body, at
//! most [`BEACON_MAX_BYTES`] (`413` past it), goes to the partner with its `Content-Type` in one
//! `POST`; a redirect answering it is relayed, not followed (a browser ignores a beacon's
//! answer, and re-sending a body elsewhere is not the proxy's to decide).
//!
//! Outcomes: `403` with the one body for any verification failure (reason at `info`); `503`
//! when the key cannot be read; `502` when a partner cannot be reached, answers with too many
//! headers, redirects somewhere the policy refuses, or redirects more than four times (the
//! signed URL was good: the partner is at fault), `504` when it is too slow. A body that fails
//! mid-way is abandoned: the client sees an incomplete transfer, never a clean end.

use std::cell::OnceCell;
use std::time::{Duration, Instant};

use fastly::backend::BackendCreationError;
use fastly::http::{HeaderName, HeaderValue, StatusCode, Version};
use fastly::{Backend, Request, Response};
use trusted_server_core::consent::Decision;
use trusted_server_core::first_party::creative;
use trusted_server_core::first_party::proxy::{
    allow_cors, body_plan, client_response_headers, confine, next_hop, partner_fetch_passes,
    partner_request_headers, signer, Hop, ProxyBody,
};
use trusted_server_core::first_party::{Target, TargetPolicy};
use trusted_server_core::publisher::identity::ORIGIN_HEADER;
use trusted_server_core::{apply_standard_headers, BodyReport, Settings};
use trusted_server_settings::FirstParty;

use crate::kit::access::{Access, Outcome};
use crate::kit::failure::{self, BackendInfo, Failure, OriginFailure, Phase};
use crate::kit::signed_url::{verify_signed, Verified};
use crate::kit::timing::timed;
use crate::kit::{leaving, partner, reply, request_body};
use crate::phases::response::header_text;
use crate::phases::{body, client, identity, origin};

/// The name reports give every partner backend (each backend's own name carries the host).
const REPORT_NAME: &str = "first_party_partner";

/// The flow: verify, fetch, relay the headers, stream the body. Everything it learns goes
/// into `access`. The reader's consent `decision` says whether each partner host may receive
/// the edge ID.
pub fn run(mut request: Request, settings: &Settings, decision: &Decision, access: &mut Access) {
    let Verified {
        target,
        key,
        policy,
        now,
    } = match verify_signed(&request, "first-party proxy", settings) {
        Ok(verified) => verified,
        Err(answer) => return send(*answer, settings, access),
    };
    let beacon = match beacon(&mut request) {
        Ok(beacon) => beacon,
        Err(status) => return send(reply::error(status, settings), settings, access),
    };
    let headers = partner_headers(&request, decision, settings);
    let client_version = request.get_version();
    let page_scheme = client::scheme();
    let asked = Ask {
        headers: &headers,
        policy: &policy,
        decision,
        beacon: beacon.as_ref(),
    };
    let Some((response, last)) = ask_partner(target, &asked, settings, access) else {
        return;
    };
    let plan = body_plan(
        response.get_status().as_u16(),
        header_text(&response, "content-type").as_deref(),
        header_text(&response, "content-encoding").as_deref(),
    );
    access.plan = plan.label();
    let Some(mut response) = relay_headers(response, &last, &plan, settings, access) else {
        return;
    };
    response.set_version(client_version);
    let ProxyBody::Rewrite { codec, creative } = plan else {
        // Untouched: the platform streams the partner's bytes, as for the publisher's.
        access.outcome = Outcome::PassedThrough(access.plan.clone());
        return send(response, settings, access);
    };
    let expires = now.saturating_add(u64::from(settings.first_party.page_ttl_secs));
    let sign = signer(key, policy, expires);
    leaving::stamp(&mut response, access, None, settings);
    let partner_body = response.take_body();
    let streamed = body::stream::stream_through(
        response,
        partner_body,
        codec,
        // The creative's own address (the last hop's): its relative URLs resolve against it.
        |sink| {
            let placement = creative::Placement {
                address: Some(&last.url),
                page_scheme,
            };
            creative::pipeline(codec, creative, sign, placement, sink)
        },
        || {},
        |pipeline, rewrite| timed(rewrite, || pipeline.finish()),
        access,
    );
    match streamed.result {
        Ok(report) => log_creative(&report, &last),
        Err(failure) => body::report_for(
            failure,
            streamed.bytes_in,
            streamed.bytes_out,
            &backend_info(&last, &settings.first_party),
            access,
        ),
    }
}

/// Most bytes of a beacon's body relayed: browsers cap `sendBeacon` at 64 KiB too.
pub const BEACON_MAX_BYTES: usize = 64 * 1024;

/// What a `POST` beacon sends on: its body and `Content-Type`.
struct Beacon {
    body: Vec<u8>,
    content_type: Option<HeaderValue>,
}

/// The beacon a `POST` carries (`None` for a `GET`): its body, at most [`BEACON_MAX_BYTES`]
/// (`413` past it, `400` when it cannot be read), and its `Content-Type`.
fn beacon(request: &mut Request) -> Result<Option<Beacon>, StatusCode> {
    if request.get_method_str() != "POST" {
        return Ok(None);
    }
    Ok(Some(Beacon {
        body: request_body::bounded(request, BEACON_MAX_BYTES)?,
        content_type: request.get_header("content-type").cloned(),
    }))
}

/// Sends a response the service made whole (stamped as every response is).
fn send(response: Response, settings: &Settings, access: &mut Access) {
    leaving::send_whole(response, access, settings);
}

/// What the partner gets of the client's request: its headers as the core filters them, with
/// the ID the client already holds, unless consent says none. The proxy never mints one, since
/// it sets no cookie. (Whether each partner host may have it is decided per hop: [`fetch`].)
fn partner_headers(
    request: &Request,
    decision: &Decision,
    settings: &Settings,
) -> Vec<(HeaderName, HeaderValue)> {
    let plan = identity::request_phase(request, || decision.edge_id, settings);
    let edge_id = plan.valid_cookie.filter(|_| plan.forward.is_some());
    partner_request_headers(request.get_headers(), edge_id.as_deref())
}

/// [`fetch`], timed for the access line; a failure is reported and answered `502` or `504`
/// here (`None`).
fn ask_partner(
    target: Target,
    ask: &Ask,
    settings: &Settings,
    access: &mut Access,
) -> Option<(Response, Target)> {
    let asked = Instant::now();
    access.origin_sent = Some(asked);
    let fetched = fetch(target, ask, settings);
    access.origin_wait = Some(asked.elapsed());
    match fetched {
        Ok(fetched) => Some(fetched),
        Err((failure, backend)) => {
            let progress = access.progress(Phase::Upstream, 0, 0);
            failure::record(failure.kind(), failure.detail(), &backend, progress);
            access.outcome = Outcome::Error;
            send(reply::origin_failure(&failure, settings), settings, access);
            None
        }
    }
}

/// The partner's response with the headers the client gets: the core's selection, the
/// standard headers, and last the sandbox, so no configured header can undo it (partner
/// content never runs as the publisher). Headers the core refuses are reported and answered
/// `502` here (`None`).
fn relay_headers(
    mut response: Response,
    last: &Target,
    plan: &ProxyBody,
    settings: &Settings,
    access: &mut Access,
) -> Option<Response> {
    let partner_headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    let mut headers = match client_response_headers(partner_headers, plan.rewritten()) {
        Ok(headers) => headers,
        Err(e) => {
            let progress = access.progress(Phase::Upstream, 0, 0);
            let backend = backend_info(last, &settings.first_party);
            failure::record(Failure::OriginUnavailable, &e, &backend, progress);
            access.outcome = Outcome::Error;
            send(
                reply::error(StatusCode::BAD_GATEWAY, settings),
                settings,
                access,
            );
            return None;
        }
    };
    apply_standard_headers(&mut headers, &settings.response_headers);
    allow_cors(&mut headers);
    confine(&mut headers);
    reply::replace_headers(&mut response, headers);
    Some(response)
}

/// Logs what the creative pipeline did to the creative's URLs.
fn log_creative(report: &BodyReport<creative::CreativeOutcome>, last: &Target) {
    if let Some(c) = &report.stages.creative {
        log::info!(
            "first-party creative {}: {} URLs rewritten, {} not allowed, {} unreadable{}",
            last.url,
            c.rewritten,
            c.not_allowed,
            c.unreadable,
            c.degraded
                .as_ref()
                .map_or(String::new(), |d| format!(", degraded: {d}"))
        );
    }
}

/// What every hop of a partner fetch is asked with.
struct Ask<'a> {
    /// The headers of [`partner_headers`].
    headers: &'a [(HeaderName, HeaderValue)],
    /// Where redirects may go.
    policy: &'a TargetPolicy,
    /// The reader's consent decision: which partner hosts get the edge ID.
    decision: &'a Decision<'a>,
    /// A `POST` beacon's body, sent with the first hop; `None` for a `GET`.
    beacon: Option<&'a Beacon>,
}

/// Fetches `target`, following redirects the core allows, and returns the final response
/// (headers only: the body streams afterwards) and the target that gave it. Each hop is a
/// fresh `GET` with the same headers, its `Host` the target's authority, signed last (with one
/// key for all hops, read at the first), or for a beacon one `POST` with its body, whose answer
/// is final even when it redirects; the edge ID (`X-TS-EC`) goes only to a host the
/// consent decision allows (`Decision::partner_at`, by `consent.partner_vendors`).
fn fetch(
    target: Target,
    ask: &Ask,
    settings: &Settings,
) -> Result<(Response, Target), (OriginFailure, BackendInfo)> {
    let Ask {
        headers,
        policy,
        decision,
        beacon,
    } = *ask;
    let fp = &settings.first_party;
    let mut current = target;
    let mut followed = 0;
    // Read and derived at the first hop that is sent, then reused by the redirects.
    let signing_key = OnceCell::new();
    loop {
        let info = backend_info(&current, fp);
        let fail = |f: OriginFailure| (f, backend_info(&current, fp));
        let backend = backend(&current, &info.address, settings).map_err(fail)?;
        let mut request = match beacon {
            Some(beacon) => {
                let mut post = Request::post(&current.url).with_body(beacon.body.clone());
                if let Some(content_type) = &beacon.content_type {
                    post.set_header("content-type", content_type);
                }
                post
            }
            None => Request::get(&current.url),
        };
        let allowed = decision
            .partner_at(&current.host, &settings.consent)
            .allowed;
        let hop: Vec<(HeaderName, HeaderValue)> = (headers.iter())
            .filter(|(name, _)| allowed || name.as_str() != ORIGIN_HEADER)
            .cloned()
            .collect();
        for (name, value) in &hop {
            request.append_header(name, value);
        }
        request.set_header("host", authority(&current));
        request.set_version(Version::HTTP_11);
        if partner_fetch_passes(&hop) {
            request.set_pass(true);
        }
        partner::sign_with(
            &mut request,
            signing_key.get_or_init(|| partner::key(settings)),
        );
        let sent_at = Instant::now();
        let response = request
            .send(backend)
            .map_err(|e| fail(origin::send_failure(&e, sent_at, settings)))?;
        let status = response.get_status().as_u16();
        let location = response
            .get_header("location")
            .and_then(|v| v.to_str().ok());
        if beacon.is_some() {
            return Ok((response, current));
        }
        match next_hop(status, location, &current.url, followed, policy) {
            Ok(Hop::Final) => return Ok((response, current)),
            Ok(Hop::Follow(next)) => {
                log::info!(
                    "first-party proxy: {status} from {} followed to {}",
                    current.url,
                    next.url
                );
                followed += 1;
                current = next;
            }
            Err(e) => {
                let cause = format!("{e} (from {})", current.url);
                return Err(fail(OriginFailure::Unavailable(cause)));
            }
        }
    }
}

/// `host`, or `host:port` when the port is not the scheme's default: the `Host` header, and
/// the `@authority` the partner's signature covers.
fn authority(target: &Target) -> String {
    let default = if target.scheme == "https" { 443 } else { 80 };
    if target.port == default {
        target.host.clone()
    } else {
        format!("{}:{}", target.host, target.port)
    }
}

/// Where a target's backend connects: the `first_party.resolve` address for its host
/// (development only), else the host and port themselves, resolved by the platform.
fn backend_info(target: &Target, fp: &FirstParty) -> BackendInfo {
    let address = fp
        .resolve
        .iter()
        .find(|r| *r.host == *target.host)
        .map_or_else(
            || format!("{}:{}", target.host, target.port),
            |r| r.address.to_string(),
        );
    BackendInfo {
        name: REPORT_NAME,
        address,
    }
}

/// The dynamic backend for `target`, connecting to `address`: one per scheme, host, port
/// and address, named after them, so a redirect to another host gets its own and a second
/// use in the same instance finds the first. It does not override `Host`: the request's own
/// is the signed one. HTTPS checks the certificate against the host name.
fn backend(target: &Target, address: &str, settings: &Settings) -> Result<Backend, OriginFailure> {
    let p = &settings.publisher;
    let name = format!(
        "fp_{}_{}_{}_{}",
        target.scheme, target.host, target.port, address
    );
    let mut builder = Backend::builder(&name, address)
        .connect_timeout(Duration::from_millis(p.connect_timeout_ms.into()))
        .first_byte_timeout(Duration::from_millis(p.first_byte_timeout_ms.into()))
        .between_bytes_timeout(Duration::from_millis(p.between_bytes_timeout_ms.into()));
    if target.scheme == "https" {
        builder = builder
            .enable_ssl()
            .sni_hostname(&target.host)
            .check_certificate(&target.host);
    }
    match builder.finish() {
        Ok(backend) => Ok(backend),
        Err(BackendCreationError::NameInUse) => Backend::from_name(&name)
            .map_err(|e| OriginFailure::Unavailable(format!("backend {name}: {e}"))),
        Err(e) => Err(OriginFailure::Unavailable(format!(
            "cannot create backend for {address}: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        TargetPolicy::new(["demo-partner.example"], &[8443])
            .check(url)
            .unwrap()
    }

    #[test]
    fn the_authority_carries_only_a_port_that_is_not_the_default() {
        for (url, want) in [
            (
                "https://ads.demo-partner.example/a",
                "ads.demo-partner.example",
            ),
            (
                "http://ads.demo-partner.example:80/a",
                "ads.demo-partner.example",
            ),
            (
                "https://ads.demo-partner.example:8443/a",
                "ads.demo-partner.example:8443",
            ),
            (
                "http://ads.demo-partner.example:443/a",
                "ads.demo-partner.example:443",
            ),
        ] {
            assert_eq!(authority(&target(url)), want, "{url}");
        }
    }

    #[test]
    fn resolve_only_redirects_the_listed_host() {
        let mut fp = crate::kit::generated::SETTINGS.first_party.clone();
        fp.resolve = std::borrow::Cow::Owned(vec![trusted_server_settings::Resolve {
            host: "ads.demo-partner.example".into(),
            address: "127.0.0.1:9999".into(),
        }]);
        let t = target("https://ads.demo-partner.example/a");
        assert_eq!(backend_info(&t, &fp).address, "127.0.0.1:9999");
        let t = target("https://cdn.demo-partner.example/a");
        assert_eq!(
            backend_info(&t, &fp).address,
            "cdn.demo-partner.example:443"
        );
    }
}
