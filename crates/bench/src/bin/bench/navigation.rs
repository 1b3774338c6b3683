//! The navigation auction (`docs/auctions.md`, "Auctions that start with the page"): time to
//! first byte and to last byte of a page with a slot, the auction on against off, on the
//! streaming build's two processes (the A/A control).
//!
//! The builds are given [`slots`]: the 6.5 KB `fixtures/site/slots/article.html` has a slot
//! asking `b1` (the demo's `slow` bidder, [`crate::auction::bidders`]) under two paths, one
//! per timing, since a slot's bidder params are fixed and its `paths` ignore the query:
//!
//! * **bidder first** ([`EARLY`]), `/slots/article.html`: `b1` answers after
//!   [`EARLY_BIDDER_MS`], the origin drips the page in [`DRIP_CHUNKS`] parts
//!   [`DRIP_MS`] apart (its last byte at about 60 ms);
//! * **origin first** ([`LATE`]), `/slots//article.html` (the demo origin reads the empty
//!   segment away and serves the same file; the edge passes the path on as it is): `b1`
//!   answers after [`LATE_BIDDER_MS`], the origin sends the page at once.
//!
//! Each round, in a balanced order (`crate::order`), on the build's two processes in turn: per
//! timing the page with the auction **on** (a typed URL's headers and a reader's Chrome
//! `User-Agent`) and **off** (the same request with `Sec-Purpose: prefetch`), the origin's
//! page asked straight (**origin direct**), and `b1`'s request with that timing's delay
//! straight to the demo bidder (**bidder direct**, as [`crate::auction`]'s `direct`). The off
//! case is a prefetch rather than a bot's `User-Agent` so that the two requests differ in one
//! header the origin never sees and no other rule of the edge keys on a `User-Agent`.
//!
//! Before timing, on both processes and for both timings: the page with the auction, its
//! `#ts-bids` block taken out ([`without_bids`]), equals the page without it byte for byte,
//! and the block parses and holds `b1`'s bid for the slot ([`check_bids`]). A wrong answer
//! then fails the run; during timing it is left out and counted
//! (`navigation_wrong_answers`).
//!
//! Figures: TTFB (request sent to first body byte) and TTLB (to last byte) per case; `ttfb
//! on − off` (the difference of the medians, of the p95s) beside the A/A control (how far
//! the two processes' medians, p95s, of the same case read apart, the larger over on and
//! off); and each auction page's TTLB less the later of the origin's last byte asked
//! straight and the bidder's answer asked straight (their medians over the run), its
//! median and p95 against [`TTLB_GOAL_MS`].

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::auction::{answer_json, direct_body, one_bid, price, Spread};
use crate::cases::PUBLIC_HOST;
use crate::stats::median;

/// `b1`'s delay when it answers before the origin's last byte (ms).
pub const EARLY_BIDDER_MS: u64 = 20;
/// `b1`'s delay when it answers after it (ms).
pub const LATE_BIDDER_MS: u64 = 80;
/// The origin's pause before each part of the dripped page (ms).
pub const DRIP_MS: u64 = 10;
/// The dripped page's parts after the first.
pub const DRIP_CHUNKS: u64 = 6;
/// The goal: TTLB with the auction at most this much past the later of the origin's last
/// byte and the bidder's answer (ms).
pub const TTLB_GOAL_MS: f64 = 5.0;
const TIMEOUT: Duration = Duration::from_secs(30);
const OPEN: &str = "<script type=\"application/json\" id=\"ts-bids\">";
const CLOSE: &str = "</script>";

/// One origin/bidder timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Its name in the keys.
    pub name: &'static str,
    /// The slot's id.
    pub slot: &'static str,
    /// The page's path on the edge (the slot's path).
    pub path: &'static str,
    /// `b1`'s delay (ms).
    pub bidder_ms: u64,
    /// The origin's knobs.
    query: &'static str,
}

/// The bidder answers before the origin's last byte.
pub const EARLY: Timing = Timing {
    name: "bidder_first",
    slot: "nav-early",
    path: "/slots/article.html",
    bidder_ms: EARLY_BIDDER_MS,
    query: "drip_ms=10&drip_chunks=6",
};
/// The bidder answers after the origin's last byte.
pub const LATE: Timing = Timing {
    name: "origin_first",
    slot: "nav-late",
    path: "/slots//article.html",
    bidder_ms: LATE_BIDDER_MS,
    query: "",
};
/// Both timings.
pub const TIMINGS: [Timing; 2] = [EARLY, LATE];

/// The `TRUSTED_SERVER__AUCTION__SLOTS` value: one slot per timing, asking `b1` at its
/// delay and price.
pub fn slots() -> String {
    let entries: Vec<String> = (TIMINGS.iter())
        .map(|t| {
            format!(
                "{{ id = \"{}\", paths = [\"{}\"], sizes = [[300, 250]], bidders = {{ b1 = {{ delay_ms = {}, price = {} }} }} }}",
                t.slot,
                t.path,
                t.bidder_ms,
                price(1)
            )
        })
        .collect();
    format!("[{}]", entries.join(", "))
}

/// One kind of request of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The page with the auction.
    On,
    /// The page as a prefetch: no auction.
    Off,
    /// The origin's page straight.
    Origin,
    /// `b1`'s request straight to the demo bidder.
    Bidder,
}

const KINDS: [Kind; 4] = [Kind::On, Kind::Off, Kind::Origin, Kind::Bidder];

/// What Chrome sends for a typed URL; with `Sec-Purpose: prefetch` when `prefetch`.
pub(crate) fn navigation(prefetch: bool) -> Vec<(&'static str, &'static str)> {
    let mut headers = vec![
        ("host", PUBLIC_HOST),
        ("sec-fetch-dest", "document"),
        ("sec-fetch-mode", "navigate"),
        ("accept", "text/html,application/xhtml+xml,*/*;q=0.8"),
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
        ),
        ("accept-encoding", "identity"),
    ];
    if prefetch {
        headers.push(("sec-purpose", "prefetch"));
    }
    headers
}

/// The page's path with the origin's knobs.
fn page_path(t: &Timing) -> String {
    if t.query.is_empty() {
        t.path.to_owned()
    } else {
        format!("{}?{}", t.path, t.query)
    }
}

/// `page` with its `#ts-bids` block (the first) taken out, and the block's text; the page
/// unchanged and `None` when it has none.
pub fn without_bids(page: &str) -> (String, Option<&str>) {
    let Some(at) = page.find(OPEN) else {
        return (page.to_owned(), None);
    };
    let data = &page[at + OPEN.len()..];
    let Some(len) = data.find(CLOSE) else {
        return (page.to_owned(), None);
    };
    let end = at + OPEN.len() + len + CLOSE.len();
    (
        format!("{}{}", &page[..at], &page[end..]),
        Some(&data[..len]),
    )
}

/// Checks the block's data: version 1, `b1`'s bid for `slot` at its price.
pub fn check_bids(data: &str, slot: &str) -> Result<(), String> {
    let json: Value = serde_json::from_str(data).map_err(|e| format!("bids are not JSON: {e}"))?;
    if json["v"] != 1 {
        return Err(format!("bids version: {json}"));
    }
    let bid = &json["slots"][slot]["bid"];
    if bid["bidder"] != "b1" {
        return Err(format!("{slot}: no bid from b1: {json}"));
    }
    let got = bid["price"].as_f64().unwrap_or(f64::NAN);
    if (got - price(1)).abs() > 1e-9 {
        return Err(format!("{slot}: price {got}, expected {}", price(1)));
    }
    Ok(())
}

/// A page's text, checked to be a complete `200`.
fn page_text(r: &e2e::Timed) -> Result<String, String> {
    if r.status != 200 || !r.complete {
        return Err(format!("status {}, complete {}", r.status, r.complete));
    }
    String::from_utf8(r.body.clone()).map_err(|e| format!("not UTF-8: {e}"))
}

/// Times at the client (ms): first body byte (the answer's last byte for the bidder) and
/// last byte.
type Measured = Result<(f64, f64), String>;

/// Sends one request of `kind` for `t` and checks its answer (the on page: one block with
/// `b1`'s bid; the off page: none). `Err` of the outer result: the request failed; of the
/// inner: the answer was wrong. The on and off pages' text comes back for the output check.
fn one(
    origin: SocketAddr,
    proxy: SocketAddr,
    t: &Timing,
    kind: Kind,
    id: &str,
) -> Result<(Measured, Option<String>), String> {
    let path = page_path(t);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let what = format!("navigation {} {kind:?}", t.name);
    match kind {
        Kind::On | Kind::Off => {
            // Warm: the page request follows a request to the same process at once, as it
            // would on a busy edge, not whatever idle wait came before (`crate::order`).
            e2e::send(proxy, "GET", "/_ts/health", &[], b"", TIMEOUT)
                .map_err(|e| format!("{what}: warming: {e}"))?;
            let r = e2e::send(
                proxy,
                "GET",
                &path,
                &navigation(kind == Kind::Off),
                b"",
                TIMEOUT,
            )
            .map_err(|e| format!("{what}: GET {path}: {e}"))?;
            let checked = page_text(&r).and_then(|text| {
                let (rest, block) = without_bids(&text);
                match (kind, block) {
                    (Kind::On, Some(_)) if rest.contains(OPEN) => {
                        Err("more than one bids block".to_owned())
                    }
                    (Kind::On, Some(data)) => check_bids(data, t.slot),
                    (Kind::On, None) => Err("no bids block".to_owned()),
                    (_, Some(_)) => Err("a bids block without the auction".to_owned()),
                    (_, None) => Ok(()),
                }
                .map(|()| text)
            });
            let first = r.first_body_at.map_or(f64::NAN, ms);
            Ok(match checked {
                Ok(text) => (Ok((first, ms(r.last_at))), Some(text)),
                Err(e) => (Err(e), None),
            })
        }
        Kind::Origin => {
            let headers = [("accept-encoding", "identity")];
            let r = e2e::send(origin, "GET", &path, &headers, b"", TIMEOUT)
                .map_err(|e| format!("{what}: GET {path}: {e}"))?;
            let first = r.first_body_at.map_or(f64::NAN, ms);
            Ok((page_text(&r).map(|_| (first, ms(r.last_at))), None))
        }
        Kind::Bidder => {
            let headers = [("content-type", "application/json")];
            let body = direct_body(id, t.bidder_ms);
            let r = e2e::send(origin, "POST", "/bidders/slow", &headers, &body, TIMEOUT)
                .map_err(|e| format!("{what}: POST /bidders/slow: {e}"))?;
            let checked = if r.complete {
                answer_json(r.status, &r.body, id)
                    .and_then(|a| one_bid(&a, "slow", price(1)).map(|_| ()))
            } else {
                Err("the answer was cut short".to_owned())
            };
            let last = ms(r.last_at);
            Ok((checked.map(|()| (last, last)), None))
        }
    }
}

/// One timed request.
#[derive(Debug, Clone, Copy)]
struct Sample {
    timing: usize,
    kind: Kind,
    process: usize,
    ttfb: f64,
    ttlb: f64,
}

/// One timing's figures (ms).
#[derive(Debug, Clone)]
pub struct TimingResult {
    /// The timing.
    pub timing: Timing,
    /// TTFB with the auction on, and off.
    pub ttfb: [Spread; 2],
    /// TTLB with the auction on, and off.
    pub ttlb: [Spread; 2],
    /// `ttfb on − off`: the difference of the medians and of the p95s.
    pub ttfb_on_minus_off: (f64, f64),
    /// The A/A control beside it: how far the two processes' TTFB medians (and p95s) of one
    /// case read apart, the larger over on and off.
    pub ttfb_between_processes: (f64, f64),
    /// The origin's page asked straight: its TTLB median.
    pub origin_ttlb_ms: f64,
    /// The bidder asked straight: its median.
    pub bidder_ms: f64,
    /// Each auction page's TTLB less the later of the two medians above.
    pub past_later: Spread,
    /// `past_later`'s A/A control: how far the two processes' medians (and p95s) read apart.
    pub past_later_between_processes: (f64, f64),
}

impl TimingResult {
    /// Whether `ttfb on − off` lies inside the A/A control, for the median and the p95.
    pub fn ttfb_goal_met(&self) -> bool {
        self.ttfb_on_minus_off.0.abs() <= self.ttfb_between_processes.0
            && self.ttfb_on_minus_off.1.abs() <= self.ttfb_between_processes.1
    }

    /// Whether the TTLB past the later of origin and bidder is at most [`TTLB_GOAL_MS`], for
    /// the median and the p95.
    pub fn ttlb_goal_met(&self) -> bool {
        self.past_later.p50 <= TTLB_GOAL_MS && self.past_later.p95 <= TTLB_GOAL_MS
    }
}

/// The navigation part's figures.
#[derive(Debug, Clone)]
pub struct NavigationResult {
    /// Per timing.
    pub timings: Vec<TimingResult>,
    /// Rounds measured.
    pub rounds: usize,
    /// Timed requests whose answer was wrong (left out of the figures).
    pub wrong_answers: usize,
    /// The first wrong answer, if any.
    pub first_wrong: Option<String>,
}

/// How far apart two figures are (the A/A control).
fn apart(a: f64, b: f64) -> f64 {
    (a - b).abs()
}

/// The figures of one timing's samples.
fn figures(timing: Timing, index: usize, samples: &[Sample]) -> TimingResult {
    let values = |kind: Kind, process: Option<usize>, f: &dyn Fn(&Sample) -> f64| -> Vec<f64> {
        (samples.iter())
            .filter(|s| {
                s.timing == index && s.kind == kind && process.is_none_or(|p| s.process == p)
            })
            .map(f)
            .collect()
    };
    let ttfb = |s: &Sample| s.ttfb;
    let ttlb = |s: &Sample| s.ttlb;
    let spread = |kind, f: &dyn Fn(&Sample) -> f64| Spread::of(values(kind, None, f));
    let per = |kind, f: &dyn Fn(&Sample) -> f64| {
        [
            Spread::of(values(kind, Some(0), f)),
            Spread::of(values(kind, Some(1), f)),
        ]
    };
    let between =
        |per: &[Spread; 2]| (apart(per[0].p50, per[1].p50), apart(per[0].p95, per[1].p95));
    let fb = [spread(Kind::On, &ttfb), spread(Kind::Off, &ttfb)];
    let (on_aa, off_aa) = (
        between(&per(Kind::On, &ttfb)),
        between(&per(Kind::Off, &ttfb)),
    );
    let origin_ttlb_ms = median(values(Kind::Origin, None, &ttlb));
    let bidder_ms = median(values(Kind::Bidder, None, &ttlb));
    let later = origin_ttlb_ms.max(bidder_ms);
    let past = |s: &Sample| s.ttlb - later;
    TimingResult {
        timing,
        ttfb_on_minus_off: (fb[0].p50 - fb[1].p50, fb[0].p95 - fb[1].p95),
        ttfb_between_processes: (on_aa.0.max(off_aa.0), on_aa.1.max(off_aa.1)),
        ttfb: fb,
        ttlb: [spread(Kind::On, &ttlb), spread(Kind::Off, &ttlb)],
        origin_ttlb_ms,
        bidder_ms,
        past_later: spread(Kind::On, &past),
        past_later_between_processes: between(&per(Kind::On, &past)),
    }
}

/// Checks both sides' output on both processes for both timings, then times the rounds.
///
/// # Errors
/// A request that fails, or a wrong answer before timing.
pub fn run(
    origin: SocketAddr,
    proxies: &[SocketAddr; 2],
    quick: bool,
) -> Result<NavigationResult, String> {
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Checked, and warmed up, on both processes before anything is timed.
    for (process, &proxy) in proxies.iter().enumerate() {
        for t in &TIMINGS {
            for warm in 0..3 {
                let mut pages = [None, None];
                for kind in KINDS {
                    let id = format!("nav-{run_id}-check-{process}-{}-{warm}", t.name);
                    let (measured, text) = one(origin, proxy, t, kind, &id)?;
                    measured.map_err(|e| {
                        format!("navigation {} {kind:?}, process {process}: {e}", t.name)
                    })?;
                    match kind {
                        Kind::On => pages[0] = text,
                        Kind::Off => pages[1] = text,
                        _ => {}
                    }
                }
                let [Some(on), Some(off)] = pages else {
                    return Err(format!("navigation {}: no page to compare", t.name));
                };
                let (rest, _) = without_bids(&on);
                e2e::same_bytes(rest.as_bytes(), off.as_bytes()).map_err(|e| {
                    format!(
                        "navigation {}, process {process}: the page with the auction, its bids \
                         block taken out, is not the page without: {e}",
                        t.name
                    )
                })?;
            }
        }
    }
    let rounds = if quick { 61 } else { 201 };
    let requests: Vec<(usize, Kind)> = (0..TIMINGS.len())
        .flat_map(|t| KINDS.iter().map(move |&k| (t, k)))
        .collect();
    let mut samples = Vec::new();
    let (mut wrong_answers, mut first_wrong) = (0, None);
    for round in 0..rounds {
        let process = round % proxies.len();
        for i in crate::order::balanced(round / proxies.len(), requests.len()) {
            let (timing, kind) = requests[i];
            let id = format!("nav-{run_id}-{round}-{timing}");
            match one(origin, proxies[process], &TIMINGS[timing], kind, &id)?.0 {
                Ok((ttfb, ttlb)) => samples.push(Sample {
                    timing,
                    kind,
                    process,
                    ttfb,
                    ttlb,
                }),
                Err(e) => {
                    wrong_answers += 1;
                    first_wrong.get_or_insert(format!(
                        "{} {kind:?}, round {round}: {e}",
                        TIMINGS[timing].name
                    ));
                }
            }
        }
    }
    let timings = (TIMINGS.iter().enumerate())
        .map(|(i, &t)| figures(t, i, &samples))
        .collect();
    Ok(NavigationResult {
        timings,
        rounds,
        wrong_answers,
        first_wrong,
    })
}

/// The table.
pub fn print(n: &NavigationResult) {
    println!(
        "\nnavigation auction ({} rounds; /slots/article.html, 6.5 KB, one slot asking b1; on: a \
         reader's navigation, off: the same as a prefetch)",
        n.rounds
    );
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    for t in &n.timings {
        let origin = if t.timing.query.is_empty() {
            "at once".to_owned()
        } else {
            format!("dripped over ~{} ms", DRIP_MS * DRIP_CHUNKS)
        };
        println!(
            "  {}: bidder {} ms, origin {origin}; straight: origin last byte {:.3} ms, bidder {:.3} ms",
            t.timing.name, t.timing.bidder_ms, t.origin_ttlb_ms, t.bidder_ms
        );
        for (what, s) in [("ttfb", &t.ttfb), ("ttlb", &t.ttlb)] {
            println!(
                "    {what} ms   on p50 {:>8.3} p95 {:>8.3}   off p50 {:>8.3} p95 {:>8.3}",
                s[0].p50, s[0].p95, s[1].p50, s[1].p95
            );
        }
        println!(
            "    ttfb on − off ms     p50 {:>7.3}  p95 {:>7.3}   A/A (between processes) p50 {:.3}, p95 {:.3}: {}",
            t.ttfb_on_minus_off.0,
            t.ttfb_on_minus_off.1,
            t.ttfb_between_processes.0,
            t.ttfb_between_processes.1,
            verdict(t.ttfb_goal_met())
        );
        println!(
            "    ttlb on − later(origin, bidder) ms  p50 {:>7.3}  p95 {:>7.3}   A/A p50 {:.3}, p95 {:.3}; goal ≤ {TTLB_GOAL_MS} ms: {}",
            t.past_later.p50,
            t.past_later.p95,
            t.past_later_between_processes.0,
            t.past_later_between_processes.1,
            verdict(t.ttlb_goal_met())
        );
    }
    if let Some(e) = &n.first_wrong {
        println!(
            "  {} wrong answers left out; the first: {e}",
            n.wrong_answers
        );
    }
}

/// The `---RESULTS---` lines, per timing `<t>` (`bidder_first`, `origin_first`):
/// `navigation_<t>_ttfb_ms_p50_on` / `_p95_on` / `_p50_off` / `_p95_off` and the same for
/// `ttlb`; `navigation_<t>_ttfb_on_minus_off_ms_p50` / `_p95` with their control
/// `navigation_<t>_ttfb_between_processes_ms_p50` / `_p95`; the straight times
/// `navigation_<t>_origin_ttlb_ms` and `navigation_<t>_bidder_ms`;
/// `navigation_<t>_ttlb_past_later_ms_p50` / `_p95` with their control; then
/// `navigation_wrong_answers`.
pub fn results(n: &NavigationResult) -> Vec<(String, String)> {
    let f = |v: f64| format!("{v:.3}");
    let mut out = Vec::new();
    for t in &n.timings {
        let key = |k: &str| format!("navigation_{}_{k}", t.timing.name);
        for (what, s) in [("ttfb", &t.ttfb), ("ttlb", &t.ttlb)] {
            for (side, spread) in [("on", &s[0]), ("off", &s[1])] {
                out.push((key(&format!("{what}_ms_p50_{side}")), f(spread.p50)));
                out.push((key(&format!("{what}_ms_p95_{side}")), f(spread.p95)));
            }
        }
        out.extend([
            (key("ttfb_on_minus_off_ms_p50"), f(t.ttfb_on_minus_off.0)),
            (key("ttfb_on_minus_off_ms_p95"), f(t.ttfb_on_minus_off.1)),
            (
                key("ttfb_between_processes_ms_p50"),
                f(t.ttfb_between_processes.0),
            ),
            (
                key("ttfb_between_processes_ms_p95"),
                f(t.ttfb_between_processes.1),
            ),
            (key("origin_ttlb_ms"), f(t.origin_ttlb_ms)),
            (key("bidder_ms"), f(t.bidder_ms)),
            (key("ttlb_past_later_ms_p50"), f(t.past_later.p50)),
            (key("ttlb_past_later_ms_p95"), f(t.past_later.p95)),
            (
                key("ttlb_past_later_between_processes_ms_p50"),
                f(t.past_later_between_processes.0),
            ),
            (
                key("ttlb_past_later_between_processes_ms_p95"),
                f(t.past_later_between_processes.1),
            ),
        ]);
    }
    out.push((
        "navigation_wrong_answers".to_owned(),
        n.wrong_answers.to_string(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bids_block_comes_out_and_nothing_else() {
        let data = r#"{"v":1,"slots":{"nav-early":{"bid":{"bidder":"b1","price":1.1}}}}"#;
        let page = format!("<p>a</p><script>x</script>{OPEN}{data}{CLOSE}</body></html>");
        let (rest, block) = without_bids(&page);
        assert_eq!(rest, "<p>a</p><script>x</script></body></html>");
        assert_eq!(block, Some(data));
        assert_eq!(check_bids(data, "nav-early"), Ok(()));
        assert!(check_bids(data, "nav-late").is_err());
        assert!(check_bids("{", "nav-early").is_err());
        let other = data.replace("b1", "b2");
        assert!(check_bids(&other, "nav-early").is_err());
        let cheap = data.replace("1.1", "0.5");
        assert!(check_bids(&cheap, "nav-early").is_err());
        // No block, or one never closed: the page as it is.
        assert_eq!(without_bids("<p>a</p>"), ("<p>a</p>".to_owned(), None));
        let open = format!("<p>{OPEN}{{");
        assert_eq!(without_bids(&open), (open.clone(), None));
    }

    #[test]
    fn each_timing_has_its_slot_and_b1_at_its_delay() {
        let config = slots();
        assert!(config.starts_with(
            "[{ id = \"nav-early\", paths = [\"/slots/article.html\"], sizes = [[300, 250]], \
             bidders = { b1 = { delay_ms = 20, price = 1.1 } } }"
        ));
        assert!(config.contains("paths = [\"/slots//article.html\"]"));
        assert!(config.contains("delay_ms = 80"));
        assert_eq!(
            page_path(&EARLY),
            "/slots/article.html?drip_ms=10&drip_chunks=6"
        );
        assert_eq!(page_path(&LATE), "/slots//article.html");
        const {
            assert!(
                EARLY_BIDDER_MS < DRIP_MS * DRIP_CHUNKS && LATE_BIDDER_MS > DRIP_MS * DRIP_CHUNKS
            )
        };
    }

    fn sample(kind: Kind, process: usize, ttfb: f64, ttlb: f64) -> Sample {
        Sample {
            timing: 0,
            kind,
            process,
            ttfb,
            ttlb,
        }
    }

    #[test]
    fn figures_are_against_the_later_of_origin_and_bidder() {
        let mut samples = vec![
            sample(Kind::Origin, 0, 1.0, 60.0),
            sample(Kind::Origin, 1, 1.0, 61.0),
            sample(Kind::Bidder, 0, 20.0, 20.0),
        ];
        for (i, (on, off)) in [(2.0, 1.5), (2.5, 2.0), (3.0, 2.2), (2.1, 1.6)]
            .into_iter()
            .enumerate()
        {
            samples.push(sample(Kind::On, i % 2, on, 62.0 + i as f64));
            samples.push(sample(Kind::Off, i % 2, off, 61.0));
        }
        let t = figures(EARLY, 0, &samples);
        assert_eq!(t.origin_ttlb_ms, 61.0);
        assert_eq!(t.bidder_ms, 20.0);
        assert_eq!(t.ttfb[0].p50, 2.5);
        assert_eq!(t.ttfb[1].p50, 2.0);
        assert_eq!(t.ttfb_on_minus_off.0, 0.5);
        assert!((t.ttfb_on_minus_off.1 - 0.8).abs() < 1e-9);
        // On: processes 3.0 / 2.5 (the p50 of two is the upper), off: 2.2 / 2.0; the larger.
        assert_eq!(t.ttfb_between_processes, (0.5, 0.5));
        // The median's difference is inside the control, the p95's is not.
        assert!(!t.ttfb_goal_met());
        assert_eq!(t.past_later.p50, 3.0);
        assert_eq!(t.past_later.p95, 4.0);
        assert!(t.ttlb_goal_met());
        let n = NavigationResult {
            timings: vec![t],
            rounds: 4,
            wrong_answers: 0,
            first_wrong: None,
        };
        let out = results(&n);
        let get = |k: &str| {
            out.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("navigation_bidder_first_ttfb_ms_p50_on"), Some("2.500"));
        assert_eq!(
            get("navigation_bidder_first_ttlb_past_later_ms_p95"),
            Some("4.000")
        );
        assert_eq!(
            get("navigation_bidder_first_ttfb_on_minus_off_ms_p50"),
            Some("0.500")
        );
        assert_eq!(get("navigation_wrong_answers"), Some("0"));
    }
}
