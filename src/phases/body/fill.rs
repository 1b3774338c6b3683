//! The body phase of a response being stored (`crate::phases::cache`): the pipeline writes into the
//! cache entry, and the client reads the entry back as it is written (the host streams it), so
//! the first client gets the page while it is stored, and requests that waited for this fill
//! read the same bytes.
//!
//! The entry is finished only when the origin body ended cleanly and the pipeline finished it;
//! on any failure the insert is dropped unfinished, which abandons it: nothing short is ever
//! stored, and the clients reading it back see an incomplete transfer, as without a cache.

use std::io::{self, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use fastly::http::body::StreamingBody;
use fastly::{Body, Response};
use trusted_server_core::page;
use trusted_server_core::{BodyReport, PagePipeline, PageReport, Settings};

use super::downstream::{ClientBody, HoldingSink};
use super::job::{classify, end_page, record_report, report, BodyFailure, Job};
use super::origin_read::read_to_end;
use super::stream::finish_client;
use crate::kit::access::{Access, Outcome, SinkStats};
use crate::kit::failure::Failure;
use crate::kit::timing::timed;
use crate::phases::cache::Filling;

/// The insert body, counting what it is given for the access line.
struct Counting<W> {
    inner: W,
    stats: Rc<SinkStats>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.stats.record(n);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Sends `response` with the body read back from the entry (unless the client already has
/// its answer: a refresh), or as a `304` when the reader's copy is current, then fills the
/// entry. With a navigation's auction (`job.auction`; the insert was started without a body
/// to read back), the client instead gets its own copy of the bytes stored, through the
/// stored-page pipeline that holds its tail for the bids ([`Tee`]): the entry never holds
/// them. The early hints of the page's head when the entry was filled, `None` when it failed.
pub(crate) fn fill(
    mut response: Response,
    mut origin_body: Body,
    job: Job,
    mut filling: Filling,
    settings: &Settings,
    access: &mut Access,
) -> Option<Vec<String>> {
    let mut job = job;
    let status = response.get_status().as_u16();
    let length = origin_body.known_length();
    let mut auction = None;
    if let Some(streamed_back) = filling.client_body.take() {
        response.set_body(streamed_back);
        response.send_to_client();
        access.headers_sent(status);
    } else if filling.not_modified {
        // The reader's copy is current: a 304 now (no body to wait for), then the fill.
        crate::phases::cache::not_modified(&mut response, settings);
        access.headers_sent(response.get_status().as_u16());
        response.send_to_client();
    } else if let Some(running) = job.auction.take() {
        auction = Some((response, running.asked()));
    }
    let stats = Rc::new(SinkStats::default());
    let fill_key = filling.fill_key();
    let insert = Counting {
        inner: filling.insert,
        stats: Rc::clone(&stats),
    };
    let Job {
        codec,
        rewrite: plan,
        rule,
        options,
        ..
    } = job;
    let mut bytes_in = 0;
    let mut rewrite = Duration::ZERO;
    let result = match auction {
        None => pump(
            page::pipeline(codec, plan, rule, &options, insert),
            origin_body,
            length,
            &mut bytes_in,
            &mut rewrite,
            |_| Ok(()),
        )
        .and_then(|(insert, pipeline_report)| finish_insert(insert).map(|()| pipeline_report)),
        Some((response, running)) => {
            let client_stats = Rc::new(SinkStats::default());
            let client_body = ClientBody::new(response, Rc::clone(&client_stats), None);
            let tee = Tee {
                insert,
                client: page::stored_pipeline(codec, client_body.sink()),
            };
            // The client's copy leaves as each piece is stored.
            let pipeline = page::pipeline(codec, plan, rule, &options, tee);
            let sent = pump(
                pipeline,
                origin_body,
                length,
                &mut bytes_in,
                &mut rewrite,
                |p| p.flush().map_err(classify),
            );
            access.headers_sent(status);
            let read_at = std::cell::Cell::new(None);
            let result = sent.and_then(|(tee, pipeline_report)| {
                finish_insert(tee.insert)?;
                let bids = || super::stream::bids_script(running, &read_at, settings);
                let (sink, _) = end_page(tee.client, Some(bids), &mut rewrite).map_err(classify)?;
                drop(sink);
                finish_client(client_body)?;
                Ok(pipeline_report)
            });
            access.headers_at = client_stats.sent_at.get();
            access.auction_read = read_at.get();
            result
        }
    };
    access.bytes_in = Some(bytes_in);
    access.rewrite = Some(rewrite);
    access.body_written(&stats);
    match result {
        Ok(pipeline_report) => {
            access.last_byte_at = Some(Instant::now());
            Some(record_report(&pipeline_report, settings, access))
        }
        Err(failure) => {
            // The insert was dropped unfinished: abandoned; and discarded.
            Filling::discard(&fill_key);
            access.outcome = Outcome::Abandoned;
            report(failure, bytes_in, stats.bytes.get(), settings, access);
            None
        }
    }
}

/// The entry, and the client's own copy of what is stored: each stored piece is also pushed
/// through `client` (`stored_pipeline`, holding the tail from `</body>` on for the bids).
struct Tee<W: Write> {
    insert: Counting<W>,
    client: PagePipeline<HoldingSink>,
}

impl<W: Write> Write for Tee<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.insert.write_all(buf)?;
        self.client.push(buf).map_err(io::Error::other)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.insert.flush()?;
        self.client.flush().map_err(io::Error::other)
    }
}

/// Ends the entry: its body is complete.
fn finish_insert(insert: Counting<StreamingBody>) -> Result<(), BodyFailure> {
    insert.inner.finish().map_err(|e| {
        (
            Failure::CacheWrite,
            format!("cache entry did not finish: {e}"),
        )
    })
}

/// The origin body through the pipeline into its sink, `after_each` piece; the sink and the
/// report only after the whole body (every promised byte, when the origin said how many)
/// went through. On an error the sink is dropped unfinished.
fn pump<W: Write>(
    mut pipeline: PagePipeline<W>,
    origin_body: Body,
    length: Option<u64>,
    bytes_in: &mut u64,
    rewrite: &mut Duration,
    mut after_each: impl FnMut(&mut PagePipeline<W>) -> Result<(), BodyFailure>,
) -> Result<(W, BodyReport<PageReport>), BodyFailure> {
    let mut origin_body = origin_body.into_handle();
    read_to_end(&mut origin_body, length, bytes_in, |chunk, _| {
        timed(rewrite, || pipeline.push(chunk)).map_err(classify)?;
        after_each(&mut pipeline)
    })?;
    if let Some(len) = length.filter(|len| *bytes_in < *len) {
        return Err((
            Failure::OriginBody,
            format!("origin body ended after {bytes_in} of its {len} bytes"),
        ));
    }
    timed(rewrite, || pipeline.finish()).map_err(classify)
}
