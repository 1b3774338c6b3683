//! Failures that end or degrade a request, as `error_stack` reports.
//!
//! The reaction to a failure stays typed where it is decided (a 502, an abandoned stream, a
//! pass-through). What this module adds is the record: one [`Report`] per failure, whose
//! context says what happened and whose attachments say where the request was (phase, backend,
//! bytes in and out so far, elapsed time), logged once at `warn`.

use std::fmt;
use std::time::Duration;

use error_stack::Report;

/// What ended or degraded a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The origin could not be reached, refused, or answered with garbage (502).
    OriginUnavailable,
    /// The origin sent no headers in time (504).
    OriginTimeout,
    /// The origin answered a `1xx` as its final response (502).
    InterimAsFinal,
    /// The origin body failed after the headers: it died, stalled, or does not decode.
    OriginBody,
    /// The client went away while the body was being written.
    ClientGone,
    /// Re-encoding the body failed (in-memory codecs: not expected).
    Reencoding,
    /// Buffered mode: the page is larger than the buffered-mode cap (502).
    TooLargeToBuffer,
    /// lol_html gave up; the rest of the document passed through as it came.
    HtmlBailOut,
    /// The Next.js payload could not be rewritten from some point; original bytes passed on.
    RscDegraded,
    /// The cache entry being filled could not be finished (the insert is abandoned).
    CacheWrite,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Failure::OriginUnavailable => "origin unavailable",
            Failure::OriginTimeout => "origin timed out before its headers",
            Failure::InterimAsFinal => "origin answered 1xx as its final response",
            Failure::OriginBody => "origin body failed after the headers",
            Failure::ClientGone => "client went away",
            Failure::Reencoding => "re-encoding the body failed",
            Failure::TooLargeToBuffer => "page too large for buffered mode",
            Failure::HtmlBailOut => "HTML rewriter bailed out; the rest passed through unchanged",
            Failure::RscDegraded => "Next.js payload passed through unrewritten from some point",
            Failure::CacheWrite => "the cache entry could not be finished; not stored",
        })
    }
}

impl std::error::Error for Failure {}

/// Where the request was when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Sending the request and waiting for the origin's headers.
    Upstream,
    /// Streaming or buffering the body (response headers are decided without failing).
    Body,
}

/// The request's progress, attached to every report.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// The phase.
    pub phase: Phase,
    /// Origin body bytes read so far (encoded).
    pub bytes_in: u64,
    /// Body bytes written to the client so far (encoded).
    pub bytes_out: u64,
    /// Time since the request arrived.
    pub elapsed: Duration,
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "phase {:?}, {} bytes in, {} bytes out, after {:.1} ms",
            self.phase,
            self.bytes_in,
            self.bytes_out,
            self.elapsed.as_secs_f64() * 1000.0
        )
    }
}

/// The backend the request went to.
#[derive(Debug, Clone)]
pub struct BackendInfo {
    /// Backend name.
    pub name: &'static str,
    /// `host:port` it connects to.
    pub address: String,
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "backend {} ({})", self.name, self.address)
    }
}

/// Plain text for log lines: no ANSI colours, ASCII tree characters. Called once at start.
pub fn plain_reports() {
    Report::set_color_mode(error_stack::fmt::ColorMode::None);
    Report::set_charset(error_stack::fmt::Charset::Ascii);
}

/// A report for `failure`, with what caused it (any displayable detail), the backend and the
/// request's progress.
#[track_caller]
pub fn report(
    failure: Failure,
    cause: impl fmt::Display,
    backend: &BackendInfo,
    progress: Progress,
) -> Report<Failure> {
    Report::new(failure)
        .attach(cause.to_string())
        .attach(backend.clone())
        .attach(progress)
}

/// Reports `failure` once: builds its report and logs it. The report's location is the
/// caller's.
#[track_caller]
pub fn record(
    failure: Failure,
    cause: impl fmt::Display,
    backend: &BackendInfo,
    progress: Progress,
) {
    log(&report(failure, cause, backend, progress));
}

/// Logs a report once, on one line, at `warn`.
fn log(report: &Report<Failure>) {
    // The report's `Debug` form is a multi-line tree; a log line is easier to grep as one.
    let text = format!("{report:?}");
    let one_line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    log::warn!("failure: {}", one_line.join(" | "));
}

/// Why an upstream (the publisher's origin, or a partner) gave no response. Decides the
/// status: 504 for timeouts, 502 otherwise.
#[derive(Debug)]
pub enum OriginFailure {
    /// The origin did not answer in time.
    Timeout(String),
    /// The origin could not be reached or answered with garbage.
    Unavailable(String),
}

impl OriginFailure {
    /// What the platform said.
    pub fn detail(&self) -> &str {
        match self {
            OriginFailure::Timeout(d) | OriginFailure::Unavailable(d) => d,
        }
    }

    /// The failure it is reported as.
    pub fn kind(&self) -> Failure {
        match self {
            OriginFailure::Timeout(_) => Failure::OriginTimeout,
            OriginFailure::Unavailable(_) => Failure::OriginUnavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_carries_its_context_and_attachments() {
        let backend = BackendInfo {
            name: "publisher_origin",
            address: "127.0.0.1:8080".into(),
        };
        let progress = Progress {
            phase: Phase::Body,
            bytes_in: 1200,
            bytes_out: 900,
            elapsed: Duration::from_millis(42),
        };
        plain_reports();
        let r = report(Failure::OriginBody, "connection reset", &backend, progress);
        assert_eq!(*r.current_context(), Failure::OriginBody);
        let text = format!("{r:?}");
        for needle in [
            "origin body failed after the headers",
            "connection reset",
            "publisher_origin (127.0.0.1:8080)",
            "phase Body, 1200 bytes in, 900 bytes out, after 42.0 ms",
            "src/kit/failure.rs",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from {text}");
        }
        assert!(
            !text.contains('\u{1b}'),
            "no ANSI escapes in a log line: {text:?}"
        );
    }
}
