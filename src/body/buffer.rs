//! Buffered mode (`publisher.streaming = false`): the same pipeline into memory, then one
//! response with a `Content-Length`. A page the cache may keep is stored whole, with its
//! length, before the response leaves (`crate::cache::Insert::whole`); a failure stores
//! nothing.

use std::io::Read;
use std::time::{Duration, Instant};

use fastly::http::StatusCode;
use fastly::{Body, Response};
use trusted_server_core::cache::{PassWhy, CACHE_STATE_HEADER};
use trusted_server_core::{PipelineError, Settings};

use super::{classify, record_report, report, Job};
use crate::access::{Access, Outcome, SinkStats};
use crate::cache::Insert;
use crate::failure::Failure;
use crate::reply;
use crate::timing::timed;

/// Largest origin body, and largest rewritten body, that buffered mode holds in memory. The
/// guest's memory is bounded (about 128 MiB under Viceroy, with the input, the output and their
/// growth at once), so a larger page is refused with a 502 instead of trapping the instance.
/// Streaming mode has no such limit.
pub const BUFFERED_MAX_BYTES: usize = 16 * 1024 * 1024;

/// Buffered mode: the same pipeline into memory, then one response with a `Content-Length`.
/// Nothing has been sent yet when something fails, so failures become a clean 502. `insert`:
/// the cache entry to store the rewritten page in (whole, before it is sent); on a failure
/// it is given up, nothing stored.
pub(crate) fn buffer(
    mut response: Response,
    origin_body: Body,
    job: Job,
    insert: Option<Insert>,
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
            let mut pipeline = trusted_server_core::page::pipeline(
                job.codec,
                job.rewrite,
                job.rule,
                &job.options,
                sink,
            );
            let mut rewrite = Duration::ZERO;
            let result = timed(&mut rewrite, || {
                pipeline.push(&encoded).and_then(|()| pipeline.finish())
            });
            access.rewrite = Some(rewrite);
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
            record_report(&pipeline_report, settings, access);
            // Stored first: the requests waiting for this fill read it as soon as it is in,
            // and the response below does not depend on it (a failure is logged).
            let mut out = out;
            if let Some(insert) = insert {
                let not_modified = insert.not_modified;
                insert.whole(&out);
                // The reader's copy is current (its preconditions, evaluated on the page
                // stored): a 304, as a hit answers it.
                if not_modified {
                    crate::cache::not_modified(&mut response, settings);
                    out = Vec::new();
                }
            }
            // Counted as the streaming build counts a body it sends whole: one host call,
            // whose body bytes have left once it returns.
            let stats = SinkStats::default();
            let n = out.len();
            response.set_body(out);
            access.headers_sent(response.get_status().as_u16());
            response.send_to_client();
            stats.record(n);
            access.body_written(&stats);
            access.last_byte_at = Some(Instant::now());
        }
        Err(failure) => {
            report(failure, bytes_in, 0, settings, access);
            let mut response = reply::error(StatusCode::BAD_GATEWAY, settings);
            // Not stored; the next request waiting for this fill asks the origin again.
            if let Some(insert) = insert {
                access.cache = Some(insert.cancel(PassWhy::OriginError).to_string());
            }
            // The cache's verdict for this response, as on every proxied response.
            if let Some(state) = access.cache.as_deref() {
                response.set_header(CACHE_STATE_HEADER, state);
            }
            crate::leaving::stamp(&mut response, access, access.cache.as_deref(), settings);
            access.headers_sent(StatusCode::BAD_GATEWAY.as_u16());
            access.outcome = Outcome::Error;
            response.send_to_client();
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

    #[test]
    fn the_buffered_output_refuses_to_grow_past_the_cap() {
        use std::io::Write;
        let mut sink = CappedVec(Vec::new());
        sink.write_all(&vec![b'a'; BUFFERED_MAX_BYTES]).unwrap();
        assert!(sink.write_all(b"b").is_err());
        assert_eq!(sink.0.len(), BUFFERED_MAX_BYTES);
    }
}
