//! The response and body phases.
//!
//! [`prepare`] decides every header and the body plan before anything is sent; [`send`] then
//! runs only the body: untouched bodies stream host-side (`send_to_client`), rewritten bodies
//! go through the core pipeline into `stream_to_client()`, or, with `publisher.streaming =
//! false`, are collected and sent with a `Content-Length`.

use std::io::Read;

use fastly::http::{HeaderName, HeaderValue, StatusCode};
use fastly::{Body, Response};
use trusted_server_core::{
    origin_response_headers, BodyPipeline, BodyPlan, Codec, FlushPolicy, PipelineError,
    PipelineOptions, PipelineReport, ResponseContext, Rewrite, Settings, UrlRule,
};

use crate::client::Client;
use crate::reply;

/// Largest read from the origin body. A read returns whatever has arrived, so a large buffer
/// costs no latency and means fewer host calls when the origin is fast.
const READ_CHUNK: usize = 64 * 1024;

/// A response whose headers are final, with the plan for its body.
pub struct Prepared {
    response: Response,
    plan: BodyPlan,
    rule: UrlRule,
}

/// The response phase: plans the body and rewrites the headers accordingly.
pub fn prepare(
    mut response: Response,
    client: Client,
    is_head: bool,
    settings: &Settings,
) -> Prepared {
    let status = response.get_status().as_u16();
    // What a GET would do with this body. HEAD sends no body but must describe the same
    // representation (no Content-Length, weak ETag) as the GET.
    // `get_header_str` panics on a value that is not UTF-8 (any origin can send one). Such a
    // value is unknown: as a type it plans a pass-through, and as a coding it must too, so
    // it is replaced by a name no coding has rather than dropped (absent means identity).
    let text = |name: &str| {
        response
            .get_header(name)
            .map(|v| v.to_str().unwrap_or("(not UTF-8)"))
    };
    let get_plan = BodyPlan::decide(
        status,
        text("content-type"),
        text("content-encoding"),
        &settings.integrations.nextjs,
    );
    let plan = if is_head {
        BodyPlan::PassThrough(trusted_server_core::PassReason::NoFullBody)
    } else {
        get_plan
    };
    let p = &settings.publisher;
    let origin_host_name = p
        .origin_host
        .rsplit_once(':')
        .map_or(&*p.origin_host, |(h, _)| h);
    let ctx = ResponseContext {
        rule: &client.rule,
        origin_host_name,
        cookie_domain: &p.cookie_domain,
        body_changes: get_plan.changes_body(),
        not_modified: status == 304,
    };
    let headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    reply::replace_headers(
        &mut response,
        origin_response_headers(headers, &ctx, settings),
    );
    response.set_version(client.version);
    Prepared {
        response,
        plan,
        rule: client.rule,
    }
}

/// The body phase.
pub fn send(prepared: Prepared, settings: &Settings) {
    let Prepared {
        mut response,
        plan,
        rule,
    } = prepared;
    let BodyPlan::Rewrite { codec, rewrite } = plan else {
        // Untouched: the platform streams origin bytes to the client without a guest copy.
        return response.send_to_client();
    };
    let origin_body = response.take_body();
    let options = PipelineOptions {
        flush: FlushPolicy {
            threshold: settings.publisher.flush_threshold as usize,
            every_chunk: settings.publisher.flush_every_chunk,
        },
        nextjs: settings.integrations.nextjs,
    };
    let job = Job {
        codec,
        rewrite,
        rule,
        options,
    };
    if settings.publisher.streaming {
        stream(response, origin_body, job);
    } else {
        buffer(response, origin_body, job, settings);
    }
}

struct Job {
    codec: Codec,
    rewrite: Rewrite,
    rule: UrlRule,
    options: PipelineOptions,
}

/// Headers now, then the body chunk by chunk. On any failure the client stream is dropped
/// without `finish()`: the platform abandons it, so the client sees an incomplete transfer
/// rather than a short page that looks complete.
fn stream(response: Response, mut origin_body: Body, job: Job) {
    let client_body = response.stream_to_client();
    let mut pipeline =
        BodyPipeline::new(job.codec, job.rewrite, job.rule, &job.options, client_body);
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = match origin_body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                eprintln!("origin body failed mid-stream, abandoning the response: {e}");
                return; // `pipeline` (and the client body in it) dropped unfinished.
            }
        };
        if let Err(e) = pipeline.push(&buf[..n]) {
            return log_abandon(&e);
        }
    }
    match pipeline.finish() {
        Ok((client_body, report)) => {
            if let Err(e) = client_body.finish() {
                eprintln!("client stream did not finish: {e}");
            }
            log_degraded(&report);
        }
        Err(e) => log_abandon(&e),
    }
}

/// Logs, once per response, where rewriting gave way to passing original bytes through.
fn log_degraded(report: &PipelineReport) {
    if let Some(reason) = &report.html_bail_out {
        eprintln!("html rewriter bailed out, rest passed through unchanged: {reason}");
    }
    if let Some(reason) = report.rsc.degraded {
        eprintln!(
            "next.js payload passed through unrewritten from some point: {reason} (held at most {} bytes)",
            report.rsc.peak_held
        );
    }
}

fn log_abandon(error: &PipelineError) {
    match error {
        PipelineError::Client(e) => eprintln!("client went away: {e}"),
        other => eprintln!("abandoning the response: {other}"),
    }
}

/// Buffered mode: the same pipeline into memory, then one response with a `Content-Length`.
/// Nothing has been sent yet when something fails, so failures become a clean 502.
fn buffer(mut response: Response, origin_body: Body, job: Job, settings: &Settings) {
    let mut encoded = Vec::new();
    if let Err(e) = origin_body.into_handle().read_to_end(&mut encoded) {
        eprintln!("origin body failed: {e}");
        return reply::error(StatusCode::BAD_GATEWAY, settings).send_to_client();
    }
    let mut pipeline =
        BodyPipeline::new(job.codec, job.rewrite, job.rule, &job.options, Vec::new());
    let result = pipeline.push(&encoded).and_then(|()| pipeline.finish());
    match result {
        Ok((out, report)) => {
            log_degraded(&report);
            response.set_body(out);
            response.send_to_client();
        }
        Err(e) => {
            eprintln!("buffered body failed: {e}");
            reply::error(StatusCode::BAD_GATEWAY, settings).send_to_client();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client;
    use fastly::Request;

    fn client() -> Client {
        client::observe(
            &Request::get("http://www.pub.test/").with_header("host", "www.pub.test"),
            &crate::SETTINGS,
        )
    }

    fn origin_response(content_type: &str) -> Response {
        let origin = &crate::SETTINGS.publisher.origin_host;
        Response::from_status(StatusCode::OK)
            .with_header("content-type", content_type)
            .with_header("content-length", "1234")
            .with_header("etag", "\"v1\"")
            .with_header("location", format!("https://{origin}/moved"))
    }

    #[test]
    fn rewritten_bodies_drop_content_length_and_keep_the_rest_consistent() {
        let prepared = prepare(
            origin_response("text/html; charset=utf-8"),
            client(),
            false,
            &crate::SETTINGS,
        );
        assert!(prepared.plan.changes_body());
        let r = &prepared.response;
        assert_eq!(r.get_header("content-length"), None);
        assert_eq!(r.get_header_str("etag"), Some("W/\"v1\""));
        assert_eq!(
            r.get_header_str("location"),
            Some("http://www.pub.test/moved")
        );
        assert!(r.get_header("x-ts-version").is_some());
    }

    #[test]
    fn untouched_bodies_keep_content_length() {
        let prepared = prepare(
            origin_response("image/png"),
            client(),
            false,
            &crate::SETTINGS,
        );
        assert!(!prepared.plan.changes_body());
        assert_eq!(
            prepared.response.get_header_str("content-length"),
            Some("1234")
        );
        assert_eq!(prepared.response.get_header_str("etag"), Some("\"v1\""));
    }

    #[test]
    fn head_describes_the_representation_get_would_send() {
        let prepared = prepare(
            origin_response("text/html"),
            client(),
            true,
            &crate::SETTINGS,
        );
        assert!(!prepared.plan.changes_body(), "HEAD has no body to rewrite");
        assert_eq!(prepared.response.get_header("content-length"), None);
        assert_eq!(prepared.response.get_header_str("etag"), Some("W/\"v1\""));
    }
}
