//! The response and body phases.
//!
//! [`prepare`] decides every header and the body plan before anything is sent; [`send`] then
//! runs only the body: untouched bodies stream host-side (`send_to_client`), rewritten bodies
//! go through the core pipeline into `stream_to_client()`, or, with `publisher.streaming =
//! false`, are collected and sent with a `Content-Length`.

use std::io::Read;
use std::rc::Rc;
use std::time::Instant;

use fastly::handle::BodyHandle;
use fastly::http::{HeaderName, HeaderValue, StatusCode};
use fastly::{Body, Response};
use trusted_server_core::{
    origin_response_headers, BodyPipeline, BodyPlan, Codec, PipelineError, PipelineOptions,
    PipelineReport, Release, ResponseContext, Rewrite, Settings, Step, UrlRule,
};

use crate::access::{Access, Outcome, SinkStats};
use crate::client::Client;
use crate::downstream::{self, ClientBody, HoldingSink};
use crate::failure::{self, Failure, Phase};
use crate::{origin, reply};

/// Largest read from the origin body. A read returns whatever has arrived, so a large buffer
/// costs no latency and means fewer host calls when the origin is fast.
const READ_CHUNK: usize = 64 * 1024;

/// First read buffer for a body of unknown length; it doubles (up to [`READ_CHUNK`]) each time
/// a read fills it.
const FIRST_READ_CHUNK: usize = 16 * 1024;

/// The read buffer for an origin body of `length` bytes, if known: no larger than the body.
/// Every request runs in a fresh instance, whose memory the host maps, faults in and tears
/// down per request, so bytes the guest touches cost even when it never reads into them:
/// with a 64 KiB buffer for a 1.3 KB page the streaming build served 8–12% fewer requests
/// than the buffered one at 64 connections, and the same with a buffer the body's size.
fn read_buffer(length: Option<u64>) -> Vec<u8> {
    let size = match length {
        Some(len) => usize::try_from(len)
            .unwrap_or(usize::MAX)
            .clamp(1, READ_CHUNK),
        None => FIRST_READ_CHUNK,
    };
    vec![0u8; size]
}

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
    let content_type = header_text(&response, "content-type");
    let content_encoding = header_text(&response, "content-encoding");
    let get_plan = BodyPlan::decide(
        status,
        content_type.as_deref(),
        content_encoding.as_deref(),
        &settings.integrations.nextjs,
    );
    let plan = if is_head {
        BodyPlan::PassThrough(trusted_server_core::PassReason::NoFullBody)
    } else {
        get_plan
    };
    let p = &settings.publisher;
    let ctx = ResponseContext {
        rule: &client.rule,
        origin_host_name: &p.origin_host_name,
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
        origin_response_headers(headers, &ctx, &settings.response_headers),
    );
    response.set_version(client.version);
    Prepared {
        response,
        plan,
        rule: client.rule,
    }
}

/// A response header as text, for planning: several lines are one comma-separated list (two
/// `Content-Encoding` lines are two codings, which the pipeline does not stack, so the body
/// passes through). `get_header_str` would panic on a value that is not UTF-8, and any origin
/// can send one: such a value is unknown. As a type that plans a pass-through, and as a coding
/// it must too, so it becomes a name no coding has rather than disappearing (absent means
/// identity).
fn header_text(response: &Response, name: &str) -> Option<String> {
    let lines: Vec<&str> = response
        .get_header_all(name)
        .map(|v| v.to_str().unwrap_or("(not UTF-8)"))
        .collect();
    (!lines.is_empty()).then(|| lines.join(", "))
}

/// The body phase. Everything it learns goes into `access`; failures are reported once.
pub fn send(prepared: Prepared, settings: &Settings, access: &mut Access) {
    let Prepared {
        mut response,
        plan,
        rule,
    } = prepared;
    access.plan = plan_label(&plan);
    let BodyPlan::Rewrite { codec, rewrite } = plan else {
        // Untouched: the platform streams origin bytes to the client without a guest copy.
        access.headers_sent(response.get_status().as_u16());
        access.outcome = Outcome::PassedThrough(access.plan.clone());
        return response.send_to_client();
    };
    let origin_body = response.take_body();
    let options = PipelineOptions {
        nextjs: settings.integrations.nextjs,
        ..PipelineOptions::default()
    };
    let job = Job {
        codec,
        rewrite,
        rule,
        options,
    };
    if settings.publisher.streaming {
        stream(response, origin_body, job, settings, access);
    } else {
        buffer(response, origin_body, job, settings, access);
    }
}

/// `rewrite:html+gzip`, `pass:NotText`, ...: the plan as the access line shows it.
fn plan_label(plan: &BodyPlan) -> String {
    match plan {
        BodyPlan::Rewrite { codec, rewrite } => {
            let stage = match rewrite {
                Rewrite::Html(_) => "html",
                Rewrite::Text => "text",
                Rewrite::Flight => "flight",
            };
            format!(
                "rewrite:{stage}+{}",
                format!("{codec:?}").to_ascii_lowercase()
            )
        }
        BodyPlan::PassThrough(reason) => format!("pass:{reason:?}"),
    }
}

struct Job {
    codec: Codec,
    rewrite: Rewrite,
    rule: UrlRule,
    options: PipelineOptions,
}

/// A failure of the body phase: what it was and its cause.
type BodyFailure = (Failure, String);

fn classify(error: PipelineError) -> BodyFailure {
    let failure = match &error {
        PipelineError::Origin(_) => Failure::OriginBody,
        PipelineError::Client(_) => Failure::ClientGone,
        _ => Failure::Reencoding,
    };
    (failure, error.to_string())
}

/// Logs a body-phase failure as one report.
#[track_caller]
fn report(
    failure: BodyFailure,
    bytes_in: u64,
    bytes_out: u64,
    settings: &Settings,
    access: &Access,
) {
    let progress = access.progress(Phase::Body, bytes_in, bytes_out);
    failure::record(
        failure.0,
        failure.1,
        &origin::backend_info(settings),
        progress,
    );
}

/// The head and the body as the origin delivers it, through the pipeline into a
/// [`ClientBody`]: output waits only while the origin has more ready (see `downstream`), so a
/// body the origin sends at once leaves in one write, with a `Content-Length`, and a slow one
/// streams as it arrives. On any failure the client body is dropped without `finish()`: the
/// transfer is abandoned, so the client sees an incomplete transfer rather than a short page
/// that looks complete.
fn stream(
    response: Response,
    origin_body: Body,
    job: Job,
    settings: &Settings,
    access: &mut Access,
) {
    let status = response.get_status().as_u16();
    let stats = Rc::new(SinkStats::default());
    let mut origin_body = origin_body;
    let length = origin_body.known_length();
    let client_body = ClientBody::new(response, Rc::clone(&stats), length);
    let pipeline = BodyPipeline::new(
        job.codec,
        job.rewrite,
        job.rule,
        &job.options,
        client_body.sink(),
    );
    let mut bytes_in = 0;
    let release = Release::new(job.codec, length);
    let result = pump(
        pipeline,
        origin_body.into_handle(),
        release,
        client_body,
        &mut bytes_in,
    );
    access.headers_sent(status);
    access.headers_at = stats.sent_at.get();
    access.bytes_in = Some(bytes_in);
    access.body_written(&stats);
    match result {
        Ok(pipeline_report) => {
            access.last_byte_at = Some(Instant::now());
            record_report(&pipeline_report, settings, access);
        }
        Err(failure) => {
            access.outcome = if failure.0 == Failure::ClientGone {
                Outcome::ClientGone
            } else {
                Outcome::Abandoned
            };
            report(failure, bytes_in, stats.bytes.get(), settings, access);
        }
    }
}

/// Reads the origin body through the pipeline to the end and finishes the client body. After
/// each chunk it carries out what `release` decides (core `Release`): hold, or send what the
/// client body holds, flushing the pipeline first when that is worth it. On an error the
/// client body is dropped unfinished: abandoned.
fn pump(
    mut pipeline: BodyPipeline<HoldingSink>,
    mut origin_body: BodyHandle,
    mut release: Release,
    client_body: ClientBody,
    bytes_in: &mut u64,
) -> Result<PipelineReport, BodyFailure> {
    let client_gone = |e: std::io::Error| (Failure::ClientGone, e.to_string());
    let length = release.origin_length();
    let mut buf = read_buffer(length);
    loop {
        let n = match origin_body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err((Failure::OriginBody, e.to_string())),
        };
        *bytes_in += n as u64;
        pipeline.push(&buf[..n]).map_err(classify)?;
        if n == buf.len() && n < READ_CHUNK && length.is_none_or(|len| *bytes_in < len) {
            // The origin delivers faster than this buffer takes it.
            buf.resize(n * 2, 0);
        }
        // Decided after the work on this chunk, which gives the origin's next bytes time to
        // arrive.
        let progress = pipeline.progress();
        match release.after_read(n, progress, || {
            downstream::origin_has_more_ready(&origin_body)
        }) {
            Step::Hold => {}
            // Flushing the pipeline flushes the client body: what it holds leaves.
            Step::Send { flush: true } => pipeline.flush().map_err(classify)?,
            Step::Send { flush: false } => client_body.send_held().map_err(client_gone)?,
        }
    }
    if let Some((read, len)) = release.origin_short() {
        return Err((
            Failure::OriginBody,
            format!("origin body ended after {read} of its {len} bytes"),
        ));
    }
    let (sink, pipeline_report) = pipeline.finish().map_err(classify)?;
    drop(sink);
    client_body.finish().map_err(|e| {
        (
            Failure::ClientGone,
            format!("client stream did not finish: {e}"),
        )
    })?;
    Ok(pipeline_report)
}

/// Records what the pipeline reports: for the access line whether lol_html ran, and, once per
/// response, where rewriting gave way to passing original bytes through.
fn record_report(pipeline_report: &PipelineReport, settings: &Settings, access: &mut Access) {
    access.html_structured = pipeline_report.html_structured;
    let (bytes_in, bytes_out) = (pipeline_report.bytes_in, pipeline_report.bytes_out);
    if pipeline_report.utf16 {
        log::info!("body starts with a UTF-16 byte order mark: passed through unchanged");
    }
    if pipeline_report.ignored_trailing > 0 {
        log::info!(
            "ignored {} bytes after the end of the compressed body, as browsers do",
            pipeline_report.ignored_trailing
        );
    }
    if let Some(reason) = &pipeline_report.html_bail_out {
        let failure = (Failure::HtmlBailOut, reason.clone());
        report(failure, bytes_in, bytes_out, settings, access);
    }
    if let Some(reason) = pipeline_report.rsc.degraded {
        let cause = format!(
            "{reason} (held at most {} bytes)",
            pipeline_report.rsc.peak_held
        );
        report(
            (Failure::RscDegraded, cause),
            bytes_in,
            bytes_out,
            settings,
            access,
        );
    }
}

/// Largest origin body, and largest rewritten body, that buffered mode holds in memory. The
/// guest's memory is bounded (about 128 MiB under Viceroy, with the input, the output and their
/// growth at once), so a larger page is refused with a 502 instead of trapping the instance.
/// Streaming mode has no such limit.
pub const BUFFERED_MAX_BYTES: usize = 16 * 1024 * 1024;

/// Buffered mode: the same pipeline into memory, then one response with a `Content-Length`.
/// Nothing has been sent yet when something fails, so failures become a clean 502.
fn buffer(
    mut response: Response,
    origin_body: Body,
    job: Job,
    settings: &Settings,
    access: &mut Access,
) {
    let mut encoded = Vec::new();
    let limit = BUFFERED_MAX_BYTES as u64 + 1;
    let read = origin_body
        .into_handle()
        .take(limit)
        .read_to_end(&mut encoded);
    access.bytes_in = Some(encoded.len() as u64);
    let failure = match read {
        Ok(n) if n > BUFFERED_MAX_BYTES => Some((
            Failure::TooLargeToBuffer,
            format!(
                "origin body is larger than the buffered-mode cap of {BUFFERED_MAX_BYTES} bytes"
            ),
        )),
        Ok(_) => None,
        Err(e) => Some((Failure::OriginBody, e.to_string())),
    };
    let result = match failure {
        Some(failure) => Err(failure),
        None => {
            let sink = CappedVec(Vec::new());
            let mut pipeline =
                BodyPipeline::new(job.codec, job.rewrite, job.rule, &job.options, sink);
            let result = pipeline.push(&encoded).and_then(|()| pipeline.finish());
            result.map_err(|e| match e {
                // The only sink error here is the cap.
                PipelineError::Client(e) => (Failure::TooLargeToBuffer, e.to_string()),
                other => classify(other),
            })
        }
    };
    let bytes_in = encoded.len() as u64;
    drop(encoded);
    match result {
        Ok((CappedVec(out), pipeline_report)) => {
            access.headers_sent(response.get_status().as_u16());
            access.first_body_at = access.headers_at;
            access.bytes_out = Some(out.len() as u64);
            access.writes = Some(1);
            record_report(&pipeline_report, settings, access);
            response.set_body(out);
            response.send_to_client();
            access.last_byte_at = Some(Instant::now());
        }
        Err(failure) => {
            report(failure, bytes_in, 0, settings, access);
            access.headers_sent(StatusCode::BAD_GATEWAY.as_u16());
            access.outcome = Outcome::Error;
            reply::error(StatusCode::BAD_GATEWAY, settings).send_to_client();
        }
    }
}

/// The buffered output, refusing to grow past [`BUFFERED_MAX_BYTES`] (a small compressed page
/// can decode to far more).
struct CappedVec(Vec<u8>);

impl std::io::Write for CappedVec {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > BUFFERED_MAX_BYTES {
            return Err(std::io::Error::other(format!(
                "rewritten body is larger than the buffered-mode cap of {BUFFERED_MAX_BYTES} bytes"
            )));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
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
    fn stacked_or_unreadable_codings_and_types_pass_through() {
        let plan = |response: Response| prepare(response, client(), false, &crate::SETTINGS).plan;
        // Two lines are two codings (br over gzip): not something the pipeline undoes.
        let mut stacked = origin_response("text/html");
        stacked.append_header("content-encoding", "gzip");
        stacked.append_header("content-encoding", "br");
        assert!(!plan(stacked).changes_body());
        let mut twice = origin_response("text/html");
        twice.append_header("content-encoding", "gzip");
        twice.append_header("content-encoding", "gzip");
        assert!(!plan(twice).changes_body());
        // Values that are not UTF-8 are unknown, never unwrapped.
        let mut bad_type = origin_response("text/html");
        bad_type.set_header(
            "content-type",
            HeaderValue::from_bytes(b"text/html; charset=\xe9t\xe9").unwrap(),
        );
        assert!(!plan(bad_type).changes_body());
        let mut bad_coding = origin_response("text/html");
        bad_coding.set_header(
            "content-encoding",
            HeaderValue::from_bytes(b"gzip\xff").unwrap(),
        );
        let prepared = prepare(bad_coding, client(), false, &crate::SETTINGS);
        assert!(!prepared.plan.changes_body());
        assert_eq!(
            prepared
                .response
                .get_header("content-encoding")
                .unwrap()
                .as_bytes(),
            b"gzip\xff"
        );
        let mut single = origin_response("text/html");
        single.set_header("content-encoding", "gzip");
        assert!(plan(single).changes_body());
    }

    #[test]
    fn the_read_buffer_is_no_larger_than_the_body() {
        assert_eq!(read_buffer(Some(1319)).len(), 1319);
        assert_eq!(
            read_buffer(Some(0)).len(),
            1,
            "a read must be able to see the end"
        );
        assert_eq!(read_buffer(Some(10 << 20)).len(), READ_CHUNK);
        assert_eq!(read_buffer(Some(u64::MAX)).len(), READ_CHUNK);
        assert_eq!(read_buffer(None).len(), FIRST_READ_CHUNK);
    }

    #[test]
    fn the_buffered_output_refuses_to_grow_past_the_cap() {
        use std::io::Write;
        let mut sink = CappedVec(Vec::new());
        sink.write_all(&vec![b'a'; BUFFERED_MAX_BYTES]).unwrap();
        assert!(sink.write_all(b"b").is_err());
        assert_eq!(sink.0.len(), BUFFERED_MAX_BYTES);
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
