//! What every way of sending a rewritten body (streamed, buffered, filling the cache) shares:
//! the job it is given, how a failure is classified and reported, and how the pipeline's report
//! reaches the access line. A leaf of the body phase, so its ways import it and it imports none
//! of them.

use std::io::Write;
use std::time::Duration;

use trusted_server_core::page::PagePipeline;
use trusted_server_core::{
    BodyReport, Codec, PageOptions, PageReport, PipelineError, Rewrite, Settings, UrlRule,
};

use crate::kit::access::{Access, HtmlReader};
use crate::kit::failure::{self, Failure, Phase};
use crate::kit::timing::timed;
use crate::phases::auction::Bidding;
use crate::phases::origin;

/// What a body is rewritten with: its coding, its rewrite, the URL rule and the page's
/// options; and the navigation's auction whose bids go before the page's `</body>`, if one
/// runs (an HTML page only): already asked unless the page streams to the reader
/// (`options.hold_tail` set).
pub(crate) struct Job<'s> {
    pub(super) codec: Codec,
    pub(super) rewrite: Rewrite,
    pub(super) rule: UrlRule,
    pub(super) options: PageOptions,
    pub(super) auction: Option<Bidding<'s>>,
}

/// Ends a page's pipeline once the origin's body has ended. Without `bids`, as any body.
/// With them (a navigation auction's `#ts-bids` block, made when asked: `Running::bids_script`
/// waits for the bidders until the auction's deadline), everything before the hold point
/// (`</body>`) is sent first, then the bids are made and go in before the held tail: only the
/// bytes from `</body>` on ever wait for them. The time spent rewriting is added to `rewrite`;
/// the wait is not.
pub(crate) fn end_page<W: Write>(
    pipeline: PagePipeline<W>,
    bids: Option<impl FnOnce() -> String>,
    rewrite: &mut Duration,
) -> Result<(W, BodyReport<PageReport>), PipelineError> {
    let Some(bids) = bids else {
        return timed(rewrite, || pipeline.finish());
    };
    let mut ending = timed(rewrite, || trusted_server_core::page::end_page(pipeline))?;
    if ending.tail_point().is_none() {
        // Nothing held (a UTF-16 page): no place for the bids; the bidders are abandoned.
        return timed(rewrite, || ending.finish(""));
    }
    timed(rewrite, || ending.flush())?;
    let script = bids();
    timed(rewrite, || ending.finish(&script))
}

/// A failure of the body phase: what it was and its cause.
pub(crate) type BodyFailure = (Failure, String);

pub(crate) fn classify(error: PipelineError) -> BodyFailure {
    let failure = match &error {
        PipelineError::Origin(_) => Failure::OriginBody,
        PipelineError::Client(_) => Failure::ClientGone,
        _ => Failure::Reencoding,
    };
    (failure, error.to_string())
}

/// Logs a body-phase failure of the publisher's page as one report.
#[track_caller]
pub(crate) fn report(
    failure: BodyFailure,
    bytes_in: u64,
    bytes_out: u64,
    settings: &Settings,
    access: &Access,
) {
    report_for(
        failure,
        bytes_in,
        bytes_out,
        &origin::backend_info(settings),
        access,
    );
}

/// Logs a body-phase failure as one report, naming the backend the body came from.
#[track_caller]
pub(crate) fn report_for(
    failure: BodyFailure,
    bytes_in: u64,
    bytes_out: u64,
    backend: &failure::BackendInfo,
    access: &Access,
) {
    let progress = access.progress(Phase::Body, bytes_in, bytes_out);
    failure::record(failure.0, failure.1, backend, progress);
}

/// Records what the pipeline reports: for the access line which HTML reader ran, and, once per
/// response, where rewriting gave way to passing original bytes through. Returns the early
/// hints the page's head carried, for `Sent::head_hints`.
pub(crate) fn record_report(
    pipeline_report: &BodyReport<PageReport>,
    settings: &Settings,
    access: &mut Access,
) -> Vec<String> {
    let page = &pipeline_report.stages;
    access.html = page.html_structured.map(|structured| match structured {
        true => HtmlReader::LolHtml,
        false if page.html_scanned => HtmlReader::Scanned,
        false => HtmlReader::Plain,
    });
    if let Some(trusted_server_core::Injected::No(why)) = pipeline_report.stages.injected {
        log::info!("script not injected: {why}");
    }
    let (bytes_in, bytes_out) = (pipeline_report.bytes_in, pipeline_report.bytes_out);
    if pipeline_report.stages.utf16 {
        log::info!("body starts with a UTF-16 byte order mark: passed through unchanged");
    }
    if pipeline_report.ignored_trailing > 0 {
        log::info!(
            "ignored {} bytes after the end of the compressed body, as browsers do",
            pipeline_report.ignored_trailing
        );
    }
    if let Some(reason) = &pipeline_report.stages.html_bail_out {
        let failure = (Failure::HtmlBailOut, reason.clone());
        report(failure, bytes_in, bytes_out, settings, access);
    }
    if let Some(reason) = pipeline_report.stages.rsc.degraded {
        let cause = format!(
            "{reason} (held at most {} bytes)",
            pipeline_report.stages.rsc.peak_held
        );
        report(
            (Failure::RscDegraded, cause),
            bytes_in,
            bytes_out,
            settings,
            access,
        );
    }
    pipeline_report.stages.hints.clone()
}
