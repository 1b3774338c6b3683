//! Buffered mode (`publisher.streaming = false`): the same pipeline into memory, then one
//! response with a `Content-Length`. A page the cache may keep is stored whole, with its
//! length, before the response leaves (`crate::phases::cache::Insert::whole`); a failure stores
//! nothing.

use std::io::Read;
use std::time::{Duration, Instant};

use fastly::http::StatusCode;
use fastly::{Body, Response};
use trusted_server_core::cache::{PassWhy, CACHE_STATE_HEADER};
use trusted_server_core::page::stored_pipeline;
use trusted_server_core::{BodyReport, Codec, PageReport, PipelineError, Settings};

use super::job::{classify, end_page, record_report, report, BodyFailure, Job};
use crate::kit::access::{Access, Outcome, SinkStats};
use crate::kit::failure::Failure;
use crate::kit::limits::BUFFERED_MAX_BYTES;
use crate::kit::reply;
use crate::kit::timing::timed;
use crate::phases::auction::Running;
use crate::phases::cache::Insert;

/// Buffered mode: the same pipeline into memory, then one response with a `Content-Length`.
/// Nothing has been sent yet when something fails, so failures become a clean 502. `insert`:
/// the cache entry to store the rewritten page in (whole, before it is sent); on a failure
/// it is given up, nothing stored. The early hints of the page's head when it was sent,
/// `None` when it failed.
pub(crate) fn buffer(
    response: Response,
    origin_body: Body,
    job: Job,
    insert: Option<Insert>,
    settings: &Settings,
    access: &mut Access,
) -> Option<Vec<String>> {
    let (encoded, read) = read_whole(origin_body);
    access.bytes_in = Some(encoded.len() as u64);
    let (codec, auction) = (job.codec, job.auction);
    // A reader whose copy is current gets a `304`: no bids to wait for.
    let auction = auction.filter(|_| !insert.as_ref().is_some_and(|i| i.not_modified));
    let job = Job {
        auction: None,
        ..job
    };
    let result = read.and_then(|()| rewrite_whole(&encoded, job, access));
    let bytes_in = encoded.len() as u64;
    drop(encoded);
    // The page as stored, and, with a navigation's auction, the reader's copy with the bids
    // (the stored page through the stored-page pipeline: the entry never holds them).
    let result = result.and_then(|(CappedVec(out), pipeline_report)| {
        let with_bids = match auction {
            Some(bidding) => Some(with_bids(codec, &out, bidding.asked(), settings, access)?),
            None => None,
        };
        Ok((out, with_bids, pipeline_report))
    });
    match result {
        Ok((out, with_bids, pipeline_report)) => {
            let head_hints = record_report(&pipeline_report, settings, access);
            send_whole(response, out, with_bids, insert, settings, access);
            Some(head_hints)
        }
        Err(failure) => {
            report(failure, bytes_in, 0, settings, access);
            answer_failure(insert, settings, access);
            None
        }
    }
}

/// The origin body read whole, up to one byte past [`BUFFERED_MAX_BYTES`], and whether it
/// was read (the bytes read so far either way).
fn read_whole(origin_body: Body) -> (Vec<u8>, Result<(), BodyFailure>) {
    let mut encoded = Vec::new();
    let limit = BUFFERED_MAX_BYTES as u64 + 1;
    let read = origin_body
        .into_handle()
        .take(limit)
        .read_to_end(&mut encoded);
    let read = match read {
        Ok(n) if n > BUFFERED_MAX_BYTES => Err((
            Failure::TooLargeToBuffer,
            format!(
                "origin body is larger than the buffered-mode cap of {BUFFERED_MAX_BYTES} bytes"
            ),
        )),
        Ok(_) => Ok(()),
        Err(e) => Err((Failure::OriginBody, e.to_string())),
    };
    (encoded, read)
}

/// The whole body through the pipeline into memory, timed for the access line.
fn rewrite_whole(
    encoded: &[u8],
    job: Job,
    access: &mut Access,
) -> Result<(CappedVec, BodyReport<PageReport>), BodyFailure> {
    let sink = CappedVec(Vec::new());
    let mut pipeline =
        trusted_server_core::page::pipeline(job.codec, job.rewrite, job.rule, &job.options, sink);
    let mut rewrite = Duration::ZERO;
    let result = timed(&mut rewrite, || {
        pipeline.push(encoded).and_then(|()| pipeline.finish())
    });
    access.rewrite = Some(rewrite);
    result.map_err(|e| match e {
        // The only sink error here is the cap.
        PipelineError::Client(e) => (Failure::TooLargeToBuffer, e.to_string()),
        other => classify(other),
    })
}

/// The rewritten page `out` (encoded with `codec`) with the auction's bids before its
/// `</body>`, once the bidders answered (or the deadline passed).
fn with_bids(
    codec: Codec,
    out: &[u8],
    running: Running,
    settings: &Settings,
    access: &mut Access,
) -> Result<Vec<u8>, BodyFailure> {
    let mut rewrite = access.rewrite.unwrap_or_default();
    let mut pipeline = stored_pipeline(codec, CappedVec(Vec::new()));
    let pushed = timed(&mut rewrite, || pipeline.push(out));
    let read_at = std::cell::Cell::new(None);
    let ended = pushed.and_then(|()| {
        let bids = || super::stream::bids_script(running, &read_at, settings);
        end_page(pipeline, Some(bids), &mut rewrite)
    });
    access.rewrite = Some(rewrite);
    access.auction_read = read_at.get();
    match ended {
        Ok((CappedVec(with), _)) => Ok(with),
        Err(PipelineError::Client(e)) => Err((Failure::TooLargeToBuffer, e.to_string())),
        Err(other) => Err(classify(other)),
    }
}

/// Stores the rewritten page `out` (when the cache keeps it), then sends it (or `with_bids`,
/// the reader's copy with a navigation auction's bids) in one write, or a `304` when the
/// reader's copy is current.
fn send_whole(
    mut response: Response,
    out: Vec<u8>,
    with_bids: Option<Vec<u8>>,
    insert: Option<Insert>,
    settings: &Settings,
    access: &mut Access,
) {
    // Stored first: the requests waiting for this fill read it as soon as it is in, and the
    // response below does not depend on it (a failure is logged).
    let mut not_modified = false;
    if let Some(insert) = insert {
        not_modified = insert.not_modified;
        insert.whole(&out);
    }
    let out = match with_bids {
        // The reader's copy is current (its preconditions, evaluated on the page stored): a
        // 304, as a hit answers it.
        _ if not_modified => {
            crate::phases::cache::not_modified(&mut response, settings);
            Vec::new()
        }
        Some(with_bids) => with_bids,
        None => out,
    };
    // Counted as the streaming build counts a body it sends whole: one host call, whose body
    // bytes have left once it returns.
    let stats = SinkStats::default();
    let n = out.len();
    response.set_body(out);
    access.headers_sent(response.get_status().as_u16());
    response.send_to_client();
    stats.record(n);
    access.body_written(&stats);
    access.last_byte_at = Some(Instant::now());
}

/// Nothing was sent yet: the service's `502`, with the cache's verdict, and the fill given up
/// (not stored; the next request waiting for it asks the origin again).
fn answer_failure(insert: Option<Insert>, settings: &Settings, access: &mut Access) {
    let mut response = reply::error(StatusCode::BAD_GATEWAY, settings);
    if let Some(insert) = insert {
        access.cache = Some(insert.cancel(PassWhy::OriginError).to_string());
    }
    // The cache's verdict for this response, as on every proxied response.
    if let Some(state) = access.cache.as_deref() {
        response.set_header(CACHE_STATE_HEADER, state);
    }
    crate::kit::leaving::stamp(&mut response, access, access.cache.as_deref(), settings);
    access.headers_sent(StatusCode::BAD_GATEWAY.as_u16());
    access.outcome = Outcome::Error;
    response.send_to_client();
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
