//! One access line per request, the Fastly way: `log` records sent to a real-time log
//! endpoint (`kit::logger`). `fastly compute serve` (Viceroy) prints every endpoint's records
//! as `trusted_server :: <line>`; on the edge they go wherever the endpoint is configured.

use std::cell::Cell;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use fastly::Request;
use trusted_server_core::consent::Decision;
use trusted_server_settings::LogLevel;

use crate::kit::failure::{Phase, Progress};

/// Sends `log` records up to `level` (the `logging.level` setting) to the log endpoint
/// (`kit::logger`). Called once, first thing.
pub fn init_logging(level: LogLevel) {
    crate::kit::logger::init(level_filter(level));
    crate::kit::failure::plain_reports();
}

/// The `log` filter for a `logging.level` setting. (The settings crate does not depend on
/// `log`, so the mapping lives here.)
pub fn level_filter(level: LogLevel) -> log::LevelFilter {
    match level {
        LogLevel::Off => log::LevelFilter::Off,
        LogLevel::Error => log::LevelFilter::Error,
        LogLevel::Warn => log::LevelFilter::Warn,
        LogLevel::Info => log::LevelFilter::Info,
        LogLevel::Debug => log::LevelFilter::Debug,
        LogLevel::Trace => log::LevelFilter::Trace,
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The whole response was sent and properly ended.
    Finished,
    /// The body stream was abandoned after the headers: the client sees an incomplete transfer.
    Abandoned,
    /// The client went away.
    ClientGone,
    /// The body passed through untouched, host-side; why.
    PassedThrough(String),
    /// The service answered an error status itself.
    Error,
}

/// Counters a body sink updates as it writes; shared with the access record.
#[derive(Debug, Default)]
pub struct SinkStats {
    /// When the first body byte was written.
    pub first_write: Cell<Option<Instant>>,
    /// Body bytes written.
    pub bytes: Cell<u64>,
    /// Write calls (host calls on Fastly).
    pub writes: Cell<u64>,
    /// When the response head was sent, if the sink sends it (see `downstream`).
    pub sent_at: Cell<Option<Instant>>,
}

impl SinkStats {
    /// Records one write (one host call) of `bytes` body bytes.
    pub fn record(&self, bytes: usize) {
        if bytes > 0 && self.first_write.get().is_none() {
            self.first_write.set(Some(Instant::now()));
        }
        self.bytes.set(self.bytes.get() + bytes as u64);
        self.writes.set(self.writes.get() + 1);
    }
}

/// Which reader rewrote an HTML body, for the access line's `html` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HtmlReader {
    /// The URL rule alone: no Flight marker, no unsafe `<meta>` charset.
    Plain,
    /// The byte-level reader of a Next.js page's Flight scripts; lol_html never ran.
    Scanned,
    /// lol_html, where the byte-level readers could not decide.
    LolHtml,
}

/// What the access line reports about one request.
#[derive(Debug)]
pub struct Access {
    started: Instant,
    trace_id: String,
    method: String,
    path: String,
    /// Response status sent to the client.
    pub status: u16,
    /// The body plan (`rewrite:html+gzip`, `pass:not-text`, ...).
    pub plan: String,
    /// When the response headers were sent.
    pub headers_at: Option<Instant>,
    /// When the first body byte was written, if the guest wrote the body.
    pub first_body_at: Option<Instant>,
    /// When the last body byte was written, if the guest wrote the body.
    pub last_byte_at: Option<Instant>,
    /// Origin body bytes read, if the guest read the body.
    pub bytes_in: Option<u64>,
    /// Body bytes written, if the guest wrote the body.
    pub bytes_out: Option<u64>,
    /// Host write calls for the body.
    pub writes: Option<u64>,
    /// When the request to the origin (or partner) left, if one was sent: everything the
    /// guest did before it is time the origin's answer, and so the reader's first byte, waits.
    pub origin_sent: Option<Instant>,
    /// How long the origin took to answer with its headers (or to fail), if it was asked.
    pub origin_wait: Option<Duration>,
    /// Time spent in the body pipeline (decode, rewrite, encode), if the body was rewritten:
    /// see `timing::timed`.
    pub rewrite: Option<Duration>,
    /// For a rewritten HTML body: which reader rewrote it (see the core's lazy stage).
    pub html: Option<HtmlReader>,
    /// How it ended.
    pub outcome: Outcome,
    /// What the cache did (`HIT`, `MISS`, `PASS(reason)`), for proxied requests.
    pub cache: Option<String>,
    /// Whether the response expires the client's `ts-ec` cookie (consent withdrawn, e.g.
    /// `Sec-GPC: 1`, with the cookie sent): decided once in `main` (`edge_cookie::withdrawal`),
    /// added to whatever response the request gets where its headers leave
    /// (`leaving::stamp`). Not on the access line.
    pub expire_edge_id: bool,
    /// The consent decision, as [`consent_field`] writes it (`opt-in:no`): the rule and
    /// whether an edge ID was allowed, never a consent string.
    pub consent: Option<String>,
    /// For a proxied request: whether a navigation auction runs with it (`on`) or why not
    /// (`no-slot`, `not-document`, `bot`, `prefetch`, `consent`, ...).
    pub auction: Option<&'static str>,
    /// When the navigation auction's bidders were asked, if they were: with the origin request
    /// when the origin was slow to answer, else once the page's first bytes had left.
    pub auction_asked: Option<Instant>,
    /// When the navigation auction's answers had all been read: while the page streamed,
    /// once every bidder was done, or at the page's end, where the bids go in.
    pub auction_read: Option<Instant>,
}

/// The access line's `consent=` value for a decision: its rule and whether an edge ID is
/// allowed, `rule:yes` or `rule:no` (`opt-in:no`, `none:yes`).
pub fn consent_field(decision: &Decision) -> String {
    let allowed = if decision.edge_id { "yes" } else { "no" };
    format!("{}:{allowed}", decision.rule.as_str())
}

impl Access {
    /// Starts the record for `request`, which `arrived` when the guest began on it: the first
    /// thing `main` does, so that reading the request and the logger's set-up are on the
    /// clock like everything after them.
    pub fn start(request: &Request, arrived: Instant) -> Self {
        Self::of(request.get_method_str(), request.get_path(), arrived)
    }

    /// [`Access::start`] for a request known only by its method and what to log as its path.
    pub fn of(method: &str, path: &str, arrived: Instant) -> Self {
        Access {
            started: arrived,
            trace_id: std::env::var("FASTLY_TRACE_ID").unwrap_or_else(|_| "-".into()),
            method: method.to_owned(),
            path: path.to_owned(),
            status: 0,
            plan: "-".into(),
            headers_at: None,
            first_body_at: None,
            last_byte_at: None,
            bytes_in: None,
            bytes_out: None,
            writes: None,
            origin_sent: None,
            origin_wait: None,
            rewrite: None,
            html: None,
            outcome: Outcome::Finished,
            cache: None,
            expire_edge_id: false,
            consent: None,
            auction: None,
            auction_asked: None,
            auction_read: None,
        }
    }

    /// Time since the request arrived.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Where the request is, for a failure report.
    pub fn progress(&self, phase: Phase, bytes_in: u64, bytes_out: u64) -> Progress {
        Progress {
            phase,
            bytes_in,
            bytes_out,
            elapsed: self.elapsed(),
        }
    }

    /// Records the response headers as sent now, with `status`.
    pub fn headers_sent(&mut self, status: u16) {
        self.status = status;
        self.headers_at = Some(Instant::now());
    }

    /// Takes the body counters of a sink.
    pub fn body_written(&mut self, stats: &SinkStats) {
        self.first_body_at = stats.first_write.get();
        self.bytes_out = Some(stats.bytes.get());
        self.writes = Some(stats.writes.get());
    }

    /// The access line.
    pub fn line(&self) -> String {
        let outcome = match &self.outcome {
            Outcome::Finished => "finished",
            Outcome::Abandoned => "abandoned",
            Outcome::ClientGone => "client-gone",
            Outcome::PassedThrough(_) => "passed-through",
            Outcome::Error => "error",
        };
        let html = match self.html {
            Some(HtmlReader::LolHtml) => "lol_html",
            Some(HtmlReader::Scanned) => "scanned",
            Some(HtmlReader::Plain) => "plain",
            None => "-",
        };
        // Written into one buffer, times as integers: the line is formatted on every request,
        // after its last byte, and a float's formatting in wasm costs microseconds each.
        let mut line = String::with_capacity(400);
        let _ = write!(
            line,
            "access id={} method={} path={:?} status={} plan={} in=",
            self.trace_id, self.method, self.path, self.status, self.plan,
        );
        count(&mut line, self.bytes_in);
        line.push_str(" out=");
        count(&mut line, self.bytes_out);
        line.push_str(" writes=");
        count(&mut line, self.writes);
        let _ = write!(line, " html={html} origin_sent_ms=");
        millis(&mut line, self.since_start(self.origin_sent));
        line.push_str(" origin_ms=");
        millis(&mut line, self.origin_wait);
        line.push_str(" headers_ms=");
        millis(&mut line, self.since_start(self.headers_at));
        line.push_str(" first_byte_ms=");
        millis(&mut line, self.since_start(self.first_body_at));
        line.push_str(" rewrite_ms=");
        millis(&mut line, self.rewrite);
        line.push_str(" last_byte_ms=");
        millis(&mut line, self.since_start(self.last_byte_at));
        let _ = write!(line, " outcome={outcome}");
        if let Outcome::PassedThrough(why) = &self.outcome {
            let _ = write!(line, "({why})");
        }
        let _ = write!(
            line,
            " cache={} consent={} auction={} bidders_asked_ms=",
            self.cache.as_deref().unwrap_or("-"),
            self.consent.as_deref().unwrap_or("-"),
            self.auction.unwrap_or("-"),
        );
        millis(&mut line, self.since_start(self.auction_asked));
        line.push_str(" bids_read_ms=");
        millis(&mut line, self.since_start(self.auction_read));
        line
    }

    /// The time from the start of the request to `at`.
    fn since_start(&self, at: Option<Instant>) -> Option<Duration> {
        at.map(|t| t.saturating_duration_since(self.started))
    }

    /// Logs the access line at `info`.
    pub fn log(&self) {
        log::info!("{}", self.line());
    }
}

/// Writes `d` in milliseconds to the microsecond (`12.340`), rounded to the nearest, or `-`.
fn millis(line: &mut String, d: Option<Duration>) {
    match d {
        Some(d) => {
            let us = (d.as_nanos() + 500) / 1000;
            let _ = write!(line, "{}.{:03}", us / 1000, us % 1000);
        }
        None => line.push('-'),
    }
}

/// Writes `n`, or `-`.
fn count(line: &mut String, n: Option<u64>) {
    match n {
        Some(n) => {
            let _ = write!(line, "{n}");
        }
        None => line.push('-'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn each_setting_level_is_the_log_level_of_that_name() {
        for level in LogLevel::ALL {
            let filter = level_filter(level);
            assert!(
                filter.as_str().eq_ignore_ascii_case(level.as_str()),
                "{level:?}"
            );
        }
        // Access lines are `info`, failure reports `warn`: `warn` keeps only the reports.
        assert!(level_filter(LogLevel::Warn) < log::Level::Info);
        assert!(level_filter(LogLevel::Warn) >= log::Level::Warn);
    }

    #[test]
    fn milliseconds_are_rounded_to_the_nearest_microsecond() {
        for (nanos, text) in [
            (0, "0.000"),
            (499, "0.000"),
            (500, "0.001"),
            (1_234_567, "1.235"),
            (12_340_000, "12.340"),
            (999_999_500, "1000.000"),
        ] {
            let mut line = String::new();
            millis(&mut line, Some(Duration::from_nanos(nanos)));
            assert_eq!(line, text, "{nanos} ns");
        }
        let mut line = String::new();
        millis(&mut line, None);
        assert_eq!(line, "-");
    }

    #[test]
    fn the_fields_keep_their_order() {
        let line = Access::start(&Request::get("http://www.pub.test/"), Instant::now()).line();
        let keys: Vec<&str> = line
            .split(' ')
            .skip(1)
            .filter_map(|field| field.split_once('=').map(|(k, _)| k))
            .collect();
        assert_eq!(
            keys,
            [
                "id",
                "method",
                "path",
                "status",
                "plan",
                "in",
                "out",
                "writes",
                "html",
                "origin_sent_ms",
                "origin_ms",
                "headers_ms",
                "first_byte_ms",
                "rewrite_ms",
                "last_byte_ms",
                "outcome",
                "cache",
                "consent",
                "auction",
                "bidders_asked_ms",
                "bids_read_ms",
            ]
        );
    }

    #[test]
    fn the_line_has_every_field_and_dashes_for_the_unknown() {
        let request = Request::get("http://www.pub.test/a%20b?q=1");
        let mut access = Access::start(&request, Instant::now());
        let line = access.line();
        for field in [
            "method=GET",
            "path=\"/a%20b\"",
            "status=0",
            "in=-",
            "html=-",
            "first_byte_ms=-",
            "origin_sent_ms=-",
            "origin_ms=-",
            "rewrite_ms=-",
            "outcome=finished",
            "cache=-",
            "consent=-",
            "auction=-",
            "bidders_asked_ms=-",
            "bids_read_ms=-",
        ] {
            assert!(line.contains(field), "{field} missing from {line}");
        }
        let stats = Rc::new(SinkStats::default());
        stats.record(5);
        stats.record(6);
        access.headers_sent(200);
        access.body_written(&stats);
        access.outcome = Outcome::PassedThrough("not-text".into());
        access.html = Some(HtmlReader::LolHtml);
        access.cache = Some("PASS(no-ttl)".into());
        access.consent = Some("opt-in:no".into());
        access.origin_wait = Some(Duration::from_micros(12_340));
        access.rewrite = Some(Duration::from_micros(2_500));
        let line = access.line();
        for field in [
            "status=200",
            "out=11",
            "writes=2",
            "html=lol_html",
            // To the microsecond.
            "origin_ms=12.340 ",
            "rewrite_ms=2.500 ",
            "outcome=passed-through(not-text)",
            "cache=PASS(no-ttl)",
            "consent=opt-in:no",
        ] {
            assert!(line.contains(field), "{field} missing from {line}");
        }
        assert!(!line.contains("first_byte_ms=-"), "{line}");
    }
}
