//! `GET /first-party/proxy?tsurl=…&tsexp=…&tstoken=…`, adapter side: verify the signed URL
//! (as `/first-party/click` does, with the same key, clock and policy from `first_party`),
//! fetch the target from the partner through a dynamic backend, following redirects, each hop
//! signed by `partner::sign`, and stream the answer: an HTML or CSS creative through the
//! creative pipeline (`body::stream`, the machinery that streams the publisher's pages), any
//! other body untouched. What passes in each direction, when a redirect is followed and the
//! sandbox every relayed response is confined to are the core's decisions
//! (`first_party::proxy`).
//!
//! Outcomes: `403` with the one body for any verification failure (reason at `info`); `503`
//! when the key cannot be read; `502` when a partner cannot be reached, answers with too many
//! headers, redirects somewhere the policy refuses, or redirects more than four times (the
//! signed URL was good: the partner is at fault), `504` when it is too slow. A body that fails
//! mid-way is abandoned: the client sees an incomplete transfer, never a clean end.

use std::time::{Duration, Instant};

use fastly::backend::BackendCreationError;
use fastly::http::{HeaderName, HeaderValue, StatusCode, Version};
use fastly::{Backend, Request, Response};
use trusted_server_core::first_party::creative;
use trusted_server_core::first_party::proxy::{
    body_plan, client_response_headers, confine, next_hop, partner_fetch_passes,
    partner_request_headers, signer, Hop, ProxyBody,
};
use trusted_server_core::first_party::{Target, TargetPolicy};
use trusted_server_core::{apply_standard_headers, Settings};
use trusted_server_settings::FirstParty;

use crate::access::{Access, Outcome};
use crate::failure::{self, BackendInfo, Failure, Phase};
use crate::first_party::{verify_signed, Verified};
use crate::origin::{self, OriginFailure};
use crate::{body, identity, leaving, partner, reply};

/// The name reports give every partner backend (each backend's own name carries the host).
const REPORT_NAME: &str = "first_party_partner";

/// The route: verify, fetch, stream. Everything it learns goes into `access`.
pub fn respond(request: Request, settings: &Settings, access: &mut Access) {
    let fp = &settings.first_party;
    let send = |access: &mut Access, mut response: Response| {
        leaving::stamp(&mut response, access, None, settings);
        access.headers_sent(response.get_status().as_u16());
        response.send_to_client();
    };
    let Verified {
        target,
        key,
        policy,
        now,
    } = match verify_signed(&request, "first-party proxy", settings) {
        Ok(verified) => verified,
        Err(answer) => return send(access, *answer),
    };
    // The ID the client already holds, unless consent says none (`Sec-GPC: 1`): the proxy
    // never mints one, since it sets no cookie.
    let plan = identity::request_phase(&request, settings);
    let edge_id = plan.valid_cookie.filter(|_| plan.forward.is_some());
    let headers = partner_request_headers(request.get_headers(), edge_id.as_deref());
    let client_version = request.get_version();
    let asked = Instant::now();
    let fetched = fetch(target, &headers, &policy, settings);
    access.origin_wait = Some(asked.elapsed());
    let (mut response, last) = match fetched {
        Ok(fetched) => fetched,
        Err((failure, backend)) => {
            let kind = match failure {
                OriginFailure::Timeout(_) => Failure::OriginTimeout,
                OriginFailure::Unavailable(_) => Failure::OriginUnavailable,
            };
            let progress = access.progress(Phase::Upstream, 0, 0);
            failure::record(kind, failure.detail(), &backend, progress);
            access.outcome = Outcome::Error;
            return send(access, reply::origin_failure(&failure, settings));
        }
    };
    let status = response.get_status().as_u16();
    let plan = body_plan(
        status,
        crate::response::header_text(&response, "content-type").as_deref(),
        crate::response::header_text(&response, "content-encoding").as_deref(),
    );
    access.plan = plan.label();
    let partner_headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    let mut headers = match client_response_headers(partner_headers, plan.rewritten()) {
        Ok(headers) => headers,
        Err(e) => {
            let progress = access.progress(Phase::Upstream, 0, 0);
            failure::record(
                Failure::OriginUnavailable,
                &e,
                &backend_info(&last, fp),
                progress,
            );
            access.outcome = Outcome::Error;
            return send(access, reply::error(StatusCode::BAD_GATEWAY, settings));
        }
    };
    apply_standard_headers(&mut headers, &settings.response_headers);
    // Last, so no configured header can undo it: partner content never runs as the publisher.
    confine(&mut headers);
    reply::replace_headers(&mut response, headers);
    response.set_version(client_version);
    let ProxyBody::Rewrite { codec, creative } = plan else {
        // Untouched: the platform streams the partner's bytes, as for the publisher's.
        access.outcome = Outcome::PassedThrough(access.plan.clone());
        return send(access, response);
    };
    leaving::stamp(&mut response, access, None, settings);
    let partner_body = response.take_body();
    let expires = now.saturating_add(u64::from(fp.page_ttl_secs));
    let sign = signer(key, policy, expires);
    let streamed = body::stream::stream_through(
        response,
        partner_body,
        codec,
        |sink| creative::pipeline(codec, creative, sign, sink),
        access,
    );
    match streamed.result {
        Ok(report) => {
            if let Some(c) = report.stages.creative {
                log::info!(
                    "first-party creative {}: {} URLs rewritten, {} not allowed, {} unreadable{}",
                    last.url,
                    c.rewritten,
                    c.not_allowed,
                    c.unreadable,
                    c.degraded
                        .map_or(String::new(), |d| format!(", degraded: {d}"))
                );
            }
        }
        Err(failure) => body::report_for(
            failure,
            streamed.bytes_in,
            streamed.bytes_out,
            &backend_info(&last, fp),
            access,
        ),
    }
}

/// Fetches `target`, following redirects the core allows, and returns the final response
/// (headers only: the body streams afterwards) and the target that gave it. Each hop is a
/// fresh `GET` with the same headers, its `Host` the target's authority, signed last.
fn fetch(
    target: Target,
    headers: &[(HeaderName, HeaderValue)],
    policy: &TargetPolicy,
    settings: &Settings,
) -> Result<(Response, Target), (OriginFailure, BackendInfo)> {
    let fp = &settings.first_party;
    let mut current = target;
    let mut followed = 0;
    loop {
        let info = backend_info(&current, fp);
        let fail = |f: OriginFailure| (f, backend_info(&current, fp));
        let backend = backend(&current, &info.address, settings).map_err(fail)?;
        let mut request = Request::get(&current.url);
        for (name, value) in headers {
            request.append_header(name, value);
        }
        request.set_header("host", authority(&current));
        request.set_version(Version::HTTP_11);
        if partner_fetch_passes(headers) {
            request.set_pass(true);
        }
        partner::sign(&mut request, settings);
        let sent_at = Instant::now();
        let response = request
            .send(backend)
            .map_err(|e| fail(origin::send_failure(&e, sent_at, settings)))?;
        let status = response.get_status().as_u16();
        let location = response
            .get_header("location")
            .and_then(|v| v.to_str().ok());
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
        let mut fp = crate::SETTINGS.first_party.clone();
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
