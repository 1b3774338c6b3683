//! Streaming: the origin body through the pipeline into the client body, read by read.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use fastly::handle::BodyHandle;
use fastly::{Body, Response};
use trusted_server_core::{
    BodyPipeline, BodyReport, BodyStage, Codec, PageReport, PipelineError, Release, Settings, Step,
};

use super::downstream::{self, ClientBody, HoldingSink};
use super::job::{classify, end_page, record_report, report, BodyFailure, Job};
use super::origin_read::read_to_end;
use crate::kit::access::{Access, Outcome, SinkStats};
use crate::kit::failure::Failure;
use crate::kit::timing::timed;
use crate::phases::auction::{Bidding, Running};

/// The head and the body as the origin delivers it, through the pipeline into a
/// [`ClientBody`]: output waits only while the origin has more ready (see `downstream`), so a
/// body the origin sends at once leaves in one write, with a `Content-Length`, and a slow one
/// streams as it arrives. On any failure the client body is dropped without `finish()`: the
/// transfer is abandoned, so the client sees an incomplete transfer rather than a short page
/// that looks complete. The early hints of the page's head when it finished, `None` when it
/// failed.
pub(crate) fn stream(
    response: Response,
    origin_body: Body,
    job: Job,
    settings: &Settings,
    access: &mut Access,
) -> Option<Vec<String>> {
    let Job {
        codec,
        rewrite,
        rule,
        options,
        auction,
    } = job;
    // Bidders not yet asked are asked once the page's first bytes have left, after a pause
    // (or, for a page held whole until its end, once everything before `</body>` has, at once).
    // After each later part of the page, what they have answered is read (without waiting);
    // once every bidder is done, the page's block is written then, so that the page's end,
    // which waits for it, finds it ready.
    let bids = Cell::new(auction.map(PageBids::Bidding));
    let asked_at = Cell::new(None);
    let read_at = Cell::new(None);
    let after_send = || {
        let next = match bids.take() {
            Some(PageBids::Bidding(Bidding::Asked(mut running))) => {
                match running.read_ready(settings) {
                    true => {
                        noted_now(&read_at);
                        PageBids::Written(running.bids_script(settings))
                    }
                    false => PageBids::Bidding(Bidding::Asked(running)),
                }
            }
            Some(PageBids::Bidding(waiting)) => {
                PageBids::Bidding(Bidding::Asked(asked(waiting, &asked_at, Sent::FirstBytes)))
            }
            Some(written) => written,
            None => return,
        };
        bids.set(Some(next));
    };
    let streamed = stream_through(
        response,
        origin_body,
        codec,
        |sink| trusted_server_core::page::pipeline(codec, rewrite, rule, &options, sink),
        after_send,
        |pipeline, rewrite| {
            let bids = (bids.take()).map(|b| {
                || match b {
                    PageBids::Written(script) => script,
                    PageBids::Bidding(b) => {
                        let running = asked(b, &asked_at, Sent::AllBeforeTail);
                        bids_script(running, &read_at, settings)
                    }
                }
            });
            end_page(pipeline, bids, rewrite)
        },
        access,
    );
    if let Some(at) = asked_at.get() {
        access.auction_asked = Some(at);
    }
    access.auction_read = read_at.get();
    recorded(streamed, settings, access)
}

/// A streamed page's navigation auction as its parts leave: still bidding, or its block
/// written (every bidder done before the page's end).
#[allow(
    clippy::large_enum_variant,
    reason = "one per page, moved once per part sent: a box would only add an allocation"
)]
enum PageBids<'a> {
    /// The bidders are to be asked, or are thinking.
    Bidding(Bidding<'a>),
    /// The page's data block of the bids, to go before `</body>`.
    Written(String),
}

/// The page's data block of `running`'s bids, its answers read first (if they were not yet)
/// and when noted in `read_at`.
pub(super) fn bids_script(
    mut running: Running,
    read_at: &Cell<Option<Instant>>,
    settings: &Settings,
) -> String {
    running.read_all(settings);
    noted_now(read_at);
    running.bids_script(settings)
}

/// Notes the time in `at` unless it holds one.
fn noted_now(at: &Cell<Option<Instant>>) {
    at.set(at.get().or_else(|| Some(Instant::now())));
}

/// What of a page had been handed to the platform when its navigation bidders are asked.
pub(super) enum Sent {
    /// Its first bytes; the rest of the body is still to be read and streamed.
    FirstBytes,
    /// Everything before `</body>`: a page the origin sent whole, or one from the cache. Only
    /// the held tail is left, and it waits for the bids.
    AllBeforeTail,
}

/// How long the guest pauses between handing a streamed page's first bytes to the platform
/// and asking the page's navigation bidders. Asking takes a fraction of a millisecond of CPU
/// per bidder (the guest's requests, and the platform's sends and connections); done at once,
/// it held those bytes back: under Viceroy the task that carries them to the reader runs on
/// the guest's own worker only once the guest waits (docs/performance.md, "What the guest's
/// work after a send costs under Viceroy"), and on the benchmark's two-core machine the
/// reader's first byte came about 0.2 ms later with the auction than without it, three runs
/// in a row, beyond the A/A control. A pause (a timer wait) lets the bytes leave first and
/// leaves the processor to the reader's side meanwhile; a wait of zero length, which only
/// lets them leave, read worse in the benchmark. The auction's deadline counts from the
/// asking, so the bids come this much later (under Viceroy up to a millisecond more: its
/// timers tick in milliseconds).
///
/// There is no pause after [`Sent::AllBeforeTail`]: for a page the origin sent whole, the
/// benchmark's first byte was inside its control in most runs with or without the pause, and
/// with it the page's last byte came a millisecond or two later where the bidders answer
/// after the origin (docs/performance.md, "The pause only where the page streams on").
const PAUSE_AFTER_FIRST_BYTES: Duration = Duration::from_micros(500);

/// Asks a navigation's bidders with `ask`, called right after `sent` was handed to the
/// platform: after [`PAUSE_AFTER_FIRST_BYTES`] if that was a streamed page's first bytes,
/// noting in `asked_at` when. The one place a page being sent asks its bidders (streamed from
/// the origin, or from the cache).
pub(super) fn ask_after<T>(
    sent: Sent,
    asked_at: &Cell<Option<Instant>>,
    ask: impl FnOnce() -> T,
) -> T {
    if let Sent::FirstBytes = sent {
        std::thread::sleep(PAUSE_AFTER_FIRST_BYTES);
    }
    asked_at.set(Some(Instant::now()));
    ask()
}

/// The auction of `bidding` with its bidders asked: through [`ask_after`] if they were not
/// yet.
fn asked<'a>(bidding: Bidding<'a>, asked_at: &Cell<Option<Instant>>, sent: Sent) -> Running<'a> {
    match bidding.is_asked() {
        true => bidding.asked(),
        false => ask_after(sent, asked_at, || bidding.asked()),
    }
}

/// Records what streaming a page did: the pipeline's report (the early hints of the page's
/// head, returned), or the failure, reported.
pub(crate) fn recorded(
    streamed: Streamed,
    settings: &Settings,
    access: &mut Access,
) -> Option<Vec<String>> {
    match streamed.result {
        Ok(pipeline_report) => Some(record_report(&pipeline_report, settings, access)),
        Err(failure) => {
            report(
                failure,
                streamed.bytes_in,
                streamed.bytes_out,
                settings,
                access,
            );
            None
        }
    }
}

/// What [`stream_through`] did: the pipeline's report or the failure (not yet reported), and
/// the bytes read and written.
pub(crate) struct Streamed<R = PageReport> {
    pub(crate) result: Result<BodyReport<R>, BodyFailure>,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
}

/// The streaming machinery for any pipeline over `codec` (the publisher's page, or a
/// first-party creative): `make` builds the pipeline on the client body's sink, and `end` ends
/// it when the origin's body has ended (adding the time it spends rewriting to its second
/// argument): `BodyPipeline::finish`, or a page's `job::end_page`. `after_send` is called
/// right after each send of body bytes to the client before the end (none for a body held
/// whole until its end, which leaves in `end`). Records in
/// `access` the time spent rewriting, when the head and the last byte left and the outcome;
/// the caller reports a failure, naming its own backend.
pub(crate) fn stream_through<S: BodyStage>(
    response: Response,
    origin_body: Body,
    codec: Codec,
    make: impl FnOnce(HoldingSink) -> BodyPipeline<HoldingSink, S>,
    after_send: impl FnMut(),
    end: impl FnOnce(BodyPipeline<HoldingSink, S>, &mut Duration) -> Ended<S::Report>,
    access: &mut Access,
) -> Streamed<S::Report> {
    let status = response.get_status().as_u16();
    let stats = Rc::new(SinkStats::default());
    let mut origin_body = origin_body;
    let length = origin_body.known_length();
    let client_body = ClientBody::new(response, Rc::clone(&stats), length);
    let pipeline = make(client_body.sink());
    let mut bytes_in = 0;
    let mut rewrite = Duration::ZERO;
    let release = Release::new(codec, length);
    let result = pump(
        pipeline,
        origin_body.into_handle(),
        release,
        client_body,
        (&mut bytes_in, &mut rewrite),
        after_send,
        end,
    );
    access.rewrite = Some(rewrite);
    access.headers_sent(status);
    access.headers_at = stats.sent_at.get();
    access.bytes_in = Some(bytes_in);
    access.body_written(&stats);
    match &result {
        Ok(_) => access.last_byte_at = Some(Instant::now()),
        Err(failure) => {
            access.outcome = if failure.0 == Failure::ClientGone {
                Outcome::ClientGone
            } else {
                Outcome::Abandoned
            };
        }
    }
    Streamed {
        result,
        bytes_in,
        bytes_out: stats.bytes.get(),
    }
}

/// What ending a pipeline gives: its sink and report, or the error.
pub(crate) type Ended<R> = Result<(HoldingSink, BodyReport<R>), PipelineError>;

/// Reads the origin body through the pipeline to the end, ends it with `end`, and finishes
/// the client body. After
/// each chunk it carries out what `release` decides (core `Release`): hold, or send what the
/// client body holds, flushing the pipeline first when that is worth it. On an error the
/// client body is dropped unfinished: abandoned. Counts origin bytes read and the time spent in
/// the pipeline into `counters`. Calls `after_send` after each send.
fn pump<S: BodyStage>(
    mut pipeline: BodyPipeline<HoldingSink, S>,
    mut origin_body: BodyHandle,
    mut release: Release,
    client_body: ClientBody,
    counters: (&mut u64, &mut Duration),
    mut after_send: impl FnMut(),
    end: impl FnOnce(BodyPipeline<HoldingSink, S>, &mut Duration) -> Ended<S::Report>,
) -> Result<BodyReport<S::Report>, BodyFailure> {
    let (bytes_in, rewrite) = counters;
    let client_gone = |e: std::io::Error| (Failure::ClientGone, e.to_string());
    let length = release.origin_length();
    read_to_end(&mut origin_body, length, bytes_in, |chunk, origin_body| {
        timed(rewrite, || pipeline.push(chunk)).map_err(classify)?;
        // Decided after the work on this chunk, which gives the origin's next bytes time to
        // arrive.
        let progress = pipeline.progress();
        match release.after_read(chunk.len(), progress, || {
            downstream::origin_has_more_ready(origin_body)
        }) {
            Step::Hold => return Ok(()),
            // Flushing the pipeline flushes the client body: what it holds leaves.
            Step::Send { flush: true } => timed(rewrite, || pipeline.flush()).map_err(classify)?,
            Step::Send { flush: false } => client_body.send_held().map_err(client_gone)?,
        }
        after_send();
        Ok(())
    })?;
    if let Some((read, len)) = release.origin_short() {
        return Err((
            Failure::OriginBody,
            format!("origin body ended after {read} of its {len} bytes"),
        ));
    }
    let (sink, pipeline_report) = end(pipeline, rewrite).map_err(classify)?;
    drop(sink);
    finish_client(client_body)?;
    Ok(pipeline_report)
}

/// Ends the client body (see `ClientBody::finish`); the client gone is the failure.
pub(super) fn finish_client(client_body: ClientBody) -> Result<(), BodyFailure> {
    client_body.finish().map_err(|e| {
        (
            Failure::ClientGone,
            format!("client stream did not finish: {e}"),
        )
    })
}
