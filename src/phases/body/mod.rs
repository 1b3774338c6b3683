//! The body phase: untouched bodies stream host-side (`send_to_client`); rewritten bodies go
//! through the core pipeline, streamed ([`stream`]) into `stream_to_client()` by way of the
//! client body that carries out the core's `Release` ([`downstream`]), or, with
//! `publisher.streaming = false`, collected and sent with a `Content-Length` ([`buffer`]). A
//! page being stored in the cache is written into the entry and read back ([`fill`]), or in a
//! buffered build stored whole by [`buffer`] before it is sent. The streaming body and the
//! cache fill read the origin body through one loop ([`origin_read`]).
//!
//! The phase hands what it learned back to the flow that called it ([`Sent`]); what the access
//! line reports it writes into the access record, and never reads back.

mod buffer;
pub mod downstream;
mod fill;
mod job;
mod origin_read;
pub(crate) mod stream;

use fastly::Response;
use trusted_server_core::{BodyPlan, Codec, PageOptions, Rewrite, Settings};

pub(crate) use job::report_for;
use job::Job;

use crate::kit::access::{Access, Outcome};
use crate::phases::auction::{Bidding, Running};
use crate::phases::cache::Store;
use crate::phases::response::Prepared;

/// What the body phase hands back to the flow that called it.
pub struct Sent {
    /// The body reached its end: rewritten and finished, or passed through host-side.
    pub complete: bool,
    /// The early hints the page's head carried (URLs already first-party), when the flow asked
    /// for them (`learn_hints`) and the pipeline finished.
    pub head_hints: Vec<String>,
}

/// The body phase. What the access line reports goes into `access`; failures are reported
/// once. `storing`: the cache entry this response fills (`crate::phases::cache::Store`):
/// streamed into it and read back by the client, or, in a buffered build, stored whole once
/// rewritten; for a rewritten body only. `learn_hints`: the pipeline also reads the early
/// hints in the page's head, for [`Sent::head_hints`].
///
/// `auction`: a navigation's auction, for an HTML page (see [`takes_bids`]): its bids go before
/// the page's `</body>`, and only the bytes from there on wait for it; in a response being
/// stored, only the reader's copy gets them. Bidders not yet asked are asked once the page's
/// first bytes have left when it streams to the reader, and at once otherwise (a fill or a
/// buffered build, where the reader's bytes wait for the whole page anyway).
pub fn send(
    prepared: Prepared,
    storing: Option<Store>,
    learn_hints: bool,
    auction: Option<Bidding>,
    settings: &Settings,
    access: &mut Access,
) -> Sent {
    let Prepared {
        mut response,
        plan,
        rule,
        inject,
    } = prepared;
    access.plan = plan_label(&plan);
    let BodyPlan::Rewrite { codec, rewrite } = plan else {
        // Untouched: the platform streams origin bytes to the client without a guest copy.
        access.headers_sent(response.get_status().as_u16());
        access.outcome = Outcome::PassedThrough(access.plan.clone());
        response.send_to_client();
        return Sent {
            complete: true,
            head_hints: Vec::new(),
        };
    };
    let origin_body = response.take_body();
    let auction = auction.filter(|_| matches!(rewrite, Rewrite::Html(_)));
    let streams = storing.is_none() && settings.publisher.streaming;
    let auction = auction.map(|bidding| match streams || bidding.is_asked() {
        true => bidding,
        false => {
            access.auction_asked = Some(std::time::Instant::now());
            Bidding::Asked(bidding.asked())
        }
    });
    let options = PageOptions {
        nextjs: settings.integrations.nextjs,
        inject,
        learn_hints,
        // Only a page streamed straight to the reader holds its tail. A fill, or a buffered
        // build, writes the page whole (the tail stage would keep the tail out of it) and
        // gives the reader a copy with the bids through the stored-page pipeline.
        hold_tail: auction.is_some() && streams,
        ..PageOptions::default()
    };
    let job = Job {
        codec,
        rewrite,
        rule,
        options,
        auction,
    };
    let finished = match storing {
        Some(Store::Streaming(filling)) => {
            fill::fill(response, origin_body, job, filling, settings, access)
        }
        Some(Store::Whole(insert)) => {
            buffer::buffer(response, origin_body, job, Some(insert), settings, access)
        }
        None if settings.publisher.streaming => {
            stream::stream(response, origin_body, job, settings, access)
        }
        None => buffer::buffer(response, origin_body, job, None, settings, access),
    };
    Sent {
        complete: finished.is_some(),
        head_hints: finished.unwrap_or_default(),
    }
}

/// Whether a response may take a navigation auction's bids: a `200` HTML page the pipeline
/// rewrites. Any other answer (a redirect, an error page, a non-HTML body, one passed through)
/// gets none, and the flow abandons the auction.
pub fn takes_bids(status: u16, plan: &BodyPlan) -> bool {
    status == 200
        && matches!(
            plan,
            BodyPlan::Rewrite {
                rewrite: Rewrite::Html(_),
                ..
            }
        )
}

/// A page from the cache with a navigation auction's bids: the stored `response` (headers
/// final, body the stored bytes in `codec`), streamed to the client through the stored-page
/// pipeline, which holds the bytes from `</body>` on until `start` has started the auction and
/// it has answered. `start` is called once everything before `</body>` has left
/// (`stream::ask_after`): no bidder's request comes before the reader's first byte (a stale
/// copy served because the origin failed may carry an auction whose bidders were asked while
/// the origin thought: `start` then only hands it over). A failure abandons the transfer, as
/// for any streamed page.
pub fn send_stored<'s>(
    mut response: Response,
    codec: Codec,
    start: impl FnOnce() -> Running<'s>,
    settings: &Settings,
    access: &mut Access,
) {
    let stored_body = response.take_body();
    let asked_at = std::cell::Cell::new(None);
    let read_at = std::cell::Cell::new(None);
    // Called right after the bytes before `</body>` were handed to the platform.
    let start = || stream::ask_after(stream::Sent::AllBeforeTail, &asked_at, start);
    let streamed = stream::stream_through(
        response,
        stored_body,
        codec,
        |sink| trusted_server_core::page::stored_pipeline(codec, sink),
        || {},
        |pipeline, rewrite| {
            let bids = || stream::bids_script(start(), &read_at, settings);
            job::end_page(pipeline, Some(bids), rewrite)
        },
        access,
    );
    // Bidders asked before (while a failing origin thought) keep that time.
    access.auction_asked = access.auction_asked.or(asked_at.get());
    access.auction_read = read_at.get();
    // The early hints are learned from the origin's page, never from a copy with bids.
    let _ = stream::recorded(streamed, settings, access);
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
