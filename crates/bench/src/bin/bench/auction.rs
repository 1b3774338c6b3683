//! Server-side auctions, `POST /_ts/openrtb2/auction`, against the demo origin's bidders
//! (`crates/demo-origin/src/bidders.rs`): what the edge adds to an auction beyond its slowest
//! bidder, how closely it keeps its deadline when a bidder hangs, and the guest CPU one
//! auction costs.
//!
//! The builds are given [`bidders`]: eight entries `b1` … `b8`, all on the demo's `slow`
//! bidder, which waits the `delay_ms` its impression's params name before it answers and bids
//! the `price` they name, and `stall` on the demo's `misbehave` bidder, which sends its
//! headers and half its body at once and then nothing (`how: "stall"`). Each round, in a
//! balanced order (`crate::order`), on the build's two processes in turn (the A/A control):
//!
//! * **direct**: the slowest bidder's request ([`SLOWEST_MS`]) straight to the demo bidder, a
//!   connection of its own, as the edge's own call to it is;
//! * **auctions of 1, 3 and 8 bidders**: `b1` (the slowest, [`SLOWEST_MS`]) and the others at
//!   the shorter delays of [`DELAYS_MS`], all answering well inside the deadline;
//! * **deadline**: `b2` and `stall`, `tmax` [`DEADLINE_TMAX`].
//!
//! The edge's **overhead** per auction is the auction's time at the client (request sent to
//! last byte) less the median time of the direct request over the run: what a reader waits
//! beyond what the slowest bidder itself takes to answer the same kind of request over the
//! same loopback. It includes the client's connection to Viceroy and the instance, reading
//! the request, each bidder's dynamic backend and connection, reading and checking the
//! answers, the first-party creatives and the answer. The edge's own
//! `ext.responsetimemillis` is not used for it: it has a resolution of 1 ms and starts once the
//! request has been read, so it leaves out part of what a reader waits for.
//!
//! The **overshoot** is the deadline auction's time at the client less its `ext.tmaxrequest`
//! (the deadline the edge kept, `tmax − auction.margin_ms`): it counts from the request's
//! sending, the edge's clock from its reading, so it is an upper bound.
//!
//! Every answer is checked before its time counts: `200`, the request's `id`, a seat per
//! bidder asked in the order named, each with its one bid at its own price for the one
//! impression, the highest bid's `hb_bidder`, no error; in the deadline auction, `b2`'s bid
//! and a timeout (code 1) for `stall`. A wrong answer before timing fails the run; during
//! timing it is left out of the figures and counted (`auction_wrong_answers`).
//!
//! **Guest CPU** per auction is read from the access lines, as [`crate::guest_cpu`] reads the
//! pages', for auctions of 1, 3 and 8 bidders that all answer at once (`delay_ms` 0), sent one
//! at a time to each process: the line's `headers_ms`, from the request's arrival to the
//! answer's hand-over. The guest records no wait for its bidders, so the bidders' loopback
//! answers (a fraction of a millisecond, in parallel) are counted in it: an upper bound.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::cases::PUBLIC_HOST;
use crate::stats::{median, percentile};

/// The endpoint.
pub const PATH: &str = "/_ts/openrtb2/auction";
/// The delay of `b1`, the slowest bidder of every timed auction (ms).
pub const SLOWEST_MS: u64 = 40;
/// The delays of `b1` … `b8` (ms): `b1` the slowest, the others spread below it.
pub const DELAYS_MS: [u64; 8] = [SLOWEST_MS, 10, 25, 0, 5, 15, 30, 20];
/// The auctions' bidder counts.
pub const COUNTS: [usize; 3] = [1, 3, 8];
/// `tmax` of the timed auctions: their deadline is far beyond every bidder's delay.
const TMAX: u64 = 1000;
/// `tmax` of the deadline auction (its deadline is this less `auction.margin_ms`).
pub const DEADLINE_TMAX: u64 = 200;
/// How long the stalling bidder keeps its connection open before it drops it: beyond the
/// deadline, short enough that few are open at once.
const STALL_MS: u64 = 1000;
/// The goals: overhead p95 and the largest deadline overshoot, ms.
pub const OVERHEAD_GOAL_MS: f64 = 10.0;
/// See [`OVERHEAD_GOAL_MS`].
pub const OVERSHOOT_GOAL_MS: f64 = 25.0;
const TIMEOUT: Duration = Duration::from_secs(30);

/// The `TRUSTED_SERVER__AUCTION__BIDDERS` value for the demo origin at `origin`: `b1` … `b8`
/// on its `slow` bidder and `stall` on its `misbehave` bidder.
pub fn bidders(origin: SocketAddr) -> String {
    bidders_with(origin, |_| String::new())
}

/// [`bidders`], each bidder's table ending with `extra(code)` (more `, key = value` pairs).
pub(crate) fn bidders_with(origin: SocketAddr, extra: impl Fn(&str) -> String) -> String {
    let entry = |code: &str, route: &str, vendor: usize| {
        let extra = extra(code);
        format!("{{ code = \"{code}\", endpoint = \"http://{origin}/bidders/{route}\", vendor_id = {vendor}{extra} }}")
    };
    let mut entries: Vec<String> = (1..=DELAYS_MS.len())
        .map(|i| entry(&code(i), "slow", 100 + i))
        .collect();
    entries.push(entry("stall", "misbehave", 2));
    format!("[{}]", entries.join(", "))
}

/// The code of bidder `i` (from 1).
fn code(i: usize) -> String {
    format!("b{i}")
}

/// What bidder `i` (from 1) bids: distinct, rising with `i`, so the last named wins.
pub(crate) fn price(i: usize) -> f64 {
    1.0 + 0.1 * i as f64
}

/// One kind of request of a round.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// The slowest bidder asked straight.
    Direct,
    /// An auction of `b1` … `b<n>`.
    Auction(usize),
    /// `b2` and `stall`.
    Deadline,
}

/// An auction request: one banner impression, `bidders` with their params, as Prebid.js 11
/// sends it.
fn request_body(id: &str, tmax: u64, bidders: &Value) -> Vec<u8> {
    json!({
        "id": id,
        "tmax": tmax,
        "imp": [{
            "id": "slot",
            "banner": {"format": [{"w": 300, "h": 250}]},
            "secure": 1,
            "ext": {"prebid": {"bidder": bidders}},
        }],
        "site": {"page": format!("http://{PUBLIC_HOST}/auction.html"), "publisher": {"id": "bench"}},
        "ext": {"prebid": {"targeting": {"includewinners": true, "includebidderkeys": false}}},
    })
    .to_string()
    .into_bytes()
}

/// The params of `b1` … `b<n>`; `delays` says whether they wait their [`DELAYS_MS`] or
/// answer at once.
fn auction_bidders(n: usize, delays: bool) -> Value {
    let mut bidders = serde_json::Map::new();
    for i in 1..=n {
        let delay = if delays { DELAYS_MS[i - 1] } else { 0 };
        bidders.insert(code(i), json!({"delay_ms": delay, "price": price(i)}));
    }
    Value::Object(bidders)
}

/// The deadline auction's bidders: `b2` at its delay, and `stall`.
fn deadline_bidders() -> Value {
    json!({
        "b2": {"delay_ms": DELAYS_MS[1], "price": price(2)},
        "stall": {"how": "stall", "delay_ms": STALL_MS},
    })
}

/// What the edge sends the slowest bidder, near enough: its impression and params, with
/// `delay_ms` its own or 0.
pub(crate) fn direct_body(id: &str, delay_ms: u64) -> Vec<u8> {
    json!({
        "id": id,
        "tmax": TMAX,
        "cur": ["USD"],
        "imp": [{
            "id": "slot",
            "banner": {"format": [{"w": 300, "h": 250}]},
            "secure": 1,
            "ext": {"bidder": {"delay_ms": delay_ms, "price": price(1)}},
        }],
        "site": {"domain": PUBLIC_HOST, "page": format!("http://{PUBLIC_HOST}/auction.html")},
    })
    .to_string()
    .into_bytes()
}

/// The answer of a `200` as JSON, checked to be for `id`.
pub(crate) fn answer_json(status: u16, body: &[u8], id: &str) -> Result<Value, String> {
    if status != 200 {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        return Err(format!("status {status}: {text}"));
    }
    let answer: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    if answer["id"] != id {
        return Err(format!("id {}, expected {id}", answer["id"]));
    }
    Ok(answer)
}

/// The seats of an answer, in order.
fn seats(answer: &Value) -> Vec<&str> {
    (answer["seatbid"].as_array().map(Vec::as_slice))
        .unwrap_or_default()
        .iter()
        .map(|s| s["seat"].as_str().unwrap_or("?"))
        .collect()
}

/// `seat`'s one bid, checked to be for the impression at `price`.
pub(crate) fn one_bid<'a>(answer: &'a Value, seat: &str, price: f64) -> Result<&'a Value, String> {
    let seatbid = (answer["seatbid"].as_array())
        .and_then(|s| s.iter().find(|s| s["seat"] == seat))
        .ok_or_else(|| format!("no seat {seat}"))?;
    let bids = seatbid["bid"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let [bid] = bids else {
        return Err(format!("{seat}: {} bids, expected 1", bids.len()));
    };
    if bid["impid"] != "slot" {
        return Err(format!("{seat}: bid for {}", bid["impid"]));
    }
    let got = bid["price"].as_f64().unwrap_or(f64::NAN);
    if (got - price).abs() > 1e-9 {
        return Err(format!("{seat}: price {got}, expected {price}"));
    }
    if !bid["adm"].is_string() {
        return Err(format!("{seat}: no adm"));
    }
    Ok(bid)
}

/// Checks the answer of an auction of `b1` … `b<n>`: every seat in order, each one bid at its
/// price, the last named the winner, no error, a response time for each.
pub fn check_auction(status: u16, body: &[u8], id: &str, n: usize) -> Result<(), String> {
    let answer = answer_json(status, body, id)?;
    let want: Vec<String> = (1..=n).map(code).collect();
    if seats(&answer) != want {
        return Err(format!(
            "seats {:?}, expected {want:?} (errors {})",
            seats(&answer),
            answer["ext"]["errors"]
        ));
    }
    for (i, seat) in want.iter().enumerate() {
        let bid = one_bid(&answer, seat, price(i + 1))?;
        let winner = bid["ext"]["prebid"]["targeting"]["hb_bidder"].as_str();
        let should_win = i + 1 == n;
        if should_win != (winner == Some(seat.as_str())) {
            return Err(format!("{seat}: hb_bidder {winner:?}"));
        }
    }
    let ext = &answer["ext"];
    if ext["errors"].as_object().is_some_and(|e| !e.is_empty()) {
        return Err(format!("errors {}", ext["errors"]));
    }
    let times = ext["responsetimemillis"].as_object();
    if let Some(missing) = want
        .iter()
        .find(|c| !times.is_some_and(|t| t.contains_key(c.as_str())))
    {
        return Err(format!("no responsetimemillis for {missing}"));
    }
    Ok(())
}

/// Checks the deadline auction's answer (`b2`'s bid, `stall` timed out) and returns its
/// deadline, `ext.tmaxrequest` (ms).
pub fn check_deadline(status: u16, body: &[u8], id: &str) -> Result<f64, String> {
    let answer = answer_json(status, body, id)?;
    if seats(&answer) != ["b2"] {
        return Err(format!(
            "seats {:?}, expected [\"b2\"] (errors {})",
            seats(&answer),
            answer["ext"]["errors"]
        ));
    }
    one_bid(&answer, "b2", price(2))?;
    let ext = &answer["ext"];
    let code = ext["errors"]["stall"][0]["code"].as_u64();
    if code != Some(1) {
        return Err(format!(
            "stall: errors {}, expected a timeout (code 1)",
            ext["errors"]
        ));
    }
    ext["tmaxrequest"]
        .as_f64()
        .filter(|t| *t > 0.0)
        .ok_or_else(|| format!("tmaxrequest {}", ext["tmaxrequest"]))
}

/// A fresh auction id.
fn auction_id(run: u128, round: usize, kind: Kind) -> String {
    let kind = match kind {
        Kind::Direct => "direct".to_owned(),
        Kind::Auction(n) => format!("n{n}"),
        Kind::Deadline => "deadline".to_owned(),
    };
    format!("bench-{run}-{round}-{kind}")
}

/// What one request of a round gave: its time at the client (ms), and for the deadline
/// auction its deadline (ms).
type Measured = Result<(f64, f64), String>;

/// Sends one request of `kind` (the auctions to `proxy`, the direct one to `origin`) and
/// checks its answer. `Err` of the outer result: the request failed; of the inner: the answer
/// was wrong.
fn one(origin: SocketAddr, proxy: SocketAddr, kind: Kind, id: &str) -> Result<Measured, String> {
    let text = ("content-type", "text/plain");
    let (addr, path, headers, body) = match kind {
        Kind::Direct => (
            origin,
            "/bidders/slow",
            vec![("content-type", "application/json")],
            direct_body(id, SLOWEST_MS),
        ),
        Kind::Auction(n) => (
            proxy,
            PATH,
            vec![text, ("host", PUBLIC_HOST)],
            request_body(id, TMAX, &auction_bidders(n, true)),
        ),
        Kind::Deadline => (
            proxy,
            PATH,
            vec![text, ("host", PUBLIC_HOST)],
            request_body(id, DEADLINE_TMAX, &deadline_bidders()),
        ),
    };
    let r = e2e::send(addr, "POST", path, &headers, &body, TIMEOUT)
        .map_err(|e| format!("auction {kind:?}: POST {path}: {e}"))?;
    let ms = r.last_at.as_secs_f64() * 1000.0;
    if !r.complete {
        return Ok(Err("the answer was cut short".to_owned()));
    }
    Ok(match kind {
        Kind::Direct => {
            // The demo bidder's own answer: seat `slow`, its one bid at b1's price.
            answer_json(r.status, &r.body, id)
                .and_then(|a| one_bid(&a, "slow", price(1)).map(|_| ()))
                .map(|()| (ms, 0.0))
        }
        Kind::Auction(n) => check_auction(r.status, &r.body, id, n).map(|()| (ms, 0.0)),
        Kind::Deadline => check_deadline(r.status, &r.body, id).map(|deadline| (ms, deadline)),
    })
}

/// One timed request: its kind, the process it went to, its time (ms) and, for the deadline
/// auction, its deadline.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    kind: Kind,
    process: usize,
    ms: f64,
    deadline_ms: f64,
}

/// p50 and p95 of a set of samples (ms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median.
    pub p50: f64,
    /// The 95th percentile (nearest rank).
    pub p95: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `v`; `NaN`s when it is empty.
    pub fn of(v: Vec<f64>) -> Spread {
        Spread {
            p95: percentile(&v, 0.95),
            max: v.iter().copied().fold(f64::NAN, f64::max),
            p50: median(v),
        }
    }
}

/// Guest ms per auction of one bidder count (bidders answering at once).
#[derive(Debug, Clone, Copy)]
pub struct GuestCpu {
    /// How many bidders.
    pub bidders: usize,
    /// The median over both processes' requests.
    pub median_ms: f64,
    /// Each process's median (the A/A control).
    pub per_process: [f64; 2],
}

/// A spread over all rounds, and over each process's.
pub type Spreads = (Spread, [Spread; 2]);

/// Per bidder count: the overhead's spread over all rounds, and over each process's.
pub type Overheads = Vec<(usize, Spread, [Spread; 2])>;

/// The auction part's figures.
#[derive(Debug, Clone)]
pub struct AuctionResult {
    /// The direct request's median (ms): what the slowest bidder itself takes.
    pub direct_ms: f64,
    /// Per bidder count of [`COUNTS`]: the overhead over all rounds, and per process.
    pub overhead: Overheads,
    /// The deadline overshoot over all rounds, and per process.
    pub overshoot: Spreads,
    /// The deadline the edge reported (ms).
    pub deadline_ms: f64,
    /// Per bidder count of [`COUNTS`]: guest ms per auction.
    pub guest_cpu: Vec<GuestCpu>,
    /// The demo bidder asked straight with `delay_ms` 0, median ms: at most this much of each
    /// guest figure is a bidder's answer arriving rather than the guest's work.
    pub bidder_at_once_ms: f64,
    /// Deadline auctions whose overshoot reached [`OVERSHOOT_GOAL_MS`].
    pub overshoot_over_goal: usize,
    /// Rounds measured.
    pub rounds: usize,
    /// Timed requests whose answer was wrong (left out of the figures).
    pub wrong_answers: usize,
    /// The first wrong answer, if any.
    pub first_wrong: Option<String>,
}

impl AuctionResult {
    /// Whether every overhead p95 is under [`OVERHEAD_GOAL_MS`].
    pub fn overhead_goal_met(&self) -> bool {
        (self.overhead.iter()).all(|(_, all, _)| all.p95 < OVERHEAD_GOAL_MS)
    }

    /// Whether the largest overshoot is under [`OVERSHOOT_GOAL_MS`].
    pub fn overshoot_goal_met(&self) -> bool {
        self.overshoot.0.max < OVERSHOOT_GOAL_MS
    }
}

/// The overhead and overshoot figures of timed `samples`: each auction's time less the
/// direct requests' median, each deadline auction's less its deadline; over all and per
/// process.
fn figures(samples: &[Sample]) -> (f64, Overheads, Spreads) {
    let direct_ms = median(
        (samples.iter())
            .filter(|s| s.kind == Kind::Direct)
            .map(|s| s.ms)
            .collect(),
    );
    let spreads = |kind: Kind, f: &dyn Fn(&Sample) -> f64| {
        let of = |process: Option<usize>| {
            Spread::of(
                (samples.iter())
                    .filter(|s| s.kind == kind && process.is_none_or(|p| s.process == p))
                    .map(f)
                    .collect(),
            )
        };
        (of(None), [of(Some(0)), of(Some(1))])
    };
    let overhead = (COUNTS.iter())
        .map(|&n| {
            let (all, per) = spreads(Kind::Auction(n), &|s| s.ms - direct_ms);
            (n, all, per)
        })
        .collect();
    let overshoot = spreads(Kind::Deadline, &|s| s.ms - s.deadline_ms);
    (direct_ms, overhead, overshoot)
}

/// Checks every kind of request on every process, then times the rounds, then reads the
/// guest CPU of auctions on each process from `logs` (the processes' Viceroy logs).
///
/// # Errors
/// A request that fails, a wrong answer before timing, or missing access lines.
pub fn run(
    origin: SocketAddr,
    proxies: &[SocketAddr; 2],
    logs: &[&Path; 2],
    quick: bool,
) -> Result<AuctionResult, String> {
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut kinds = vec![Kind::Direct];
    kinds.extend(COUNTS.iter().map(|&n| Kind::Auction(n)));
    kinds.push(Kind::Deadline);
    // Checked, and warmed up, on both processes before anything is timed.
    for (process, &proxy) in proxies.iter().enumerate() {
        for warm in 0..3 {
            for &kind in &kinds {
                let id = auction_id(run_id, usize::MAX - warm, kind);
                one(origin, proxy, kind, &format!("{id}-{process}"))?
                    .map_err(|e| format!("auction {kind:?}, process {process}: {e}"))?;
            }
        }
    }
    let rounds = if quick { 61 } else { 201 };
    let mut samples = Vec::new();
    let (mut wrong_answers, mut first_wrong) = (0, None);
    for round in 0..rounds {
        let process = round % proxies.len();
        for i in crate::order::balanced(round / proxies.len(), kinds.len()) {
            let kind = kinds[i];
            let id = auction_id(run_id, round, kind);
            match one(origin, proxies[process], kind, &id)? {
                Ok((ms, deadline_ms)) => samples.push(Sample {
                    kind,
                    process,
                    ms,
                    deadline_ms,
                }),
                Err(e) => {
                    wrong_answers += 1;
                    first_wrong.get_or_insert(format!("{kind:?}, round {round}: {e}"));
                }
            }
        }
    }
    let (direct_ms, overhead, overshoot) = figures(&samples);
    let deadline_ms = median(
        (samples.iter())
            .filter(|s| s.kind == Kind::Deadline)
            .map(|s| s.deadline_ms)
            .collect(),
    );
    let overshoot_over_goal = (samples.iter())
        .filter(|s| s.kind == Kind::Deadline && s.ms - s.deadline_ms >= OVERSHOOT_GOAL_MS)
        .count();
    let guest_cpu = guest_cpu(proxies, logs, run_id, quick)?;
    let bidder_at_once_ms = bidder_at_once(origin, run_id, quick)?;
    Ok(AuctionResult {
        overshoot_over_goal,
        bidder_at_once_ms,
        direct_ms,
        overhead,
        overshoot,
        deadline_ms,
        guest_cpu,
        rounds,
        wrong_answers,
        first_wrong,
    })
}

/// Guest ms per auction of 1, 3 and 8 bidders answering at once: the median over both
/// processes' requests, and each process's.
fn guest_cpu(
    proxies: &[SocketAddr; 2],
    logs: &[&Path; 2],
    run_id: u128,
    quick: bool,
) -> Result<Vec<GuestCpu>, String> {
    let count = if quick { 31 } else { 101 };
    let mut out = Vec::new();
    for &n in &COUNTS {
        let mut all = Vec::new();
        let mut per_process = [f64::NAN; 2];
        for (process, (&proxy, &log)) in proxies.iter().zip(logs).enumerate() {
            let mark = crate::guest_cpu::log_len(log)?;
            for k in 0..count {
                let id = format!("bench-{run_id}-cpu-{n}-{process}-{k}");
                let body = request_body(&id, TMAX, &auction_bidders(n, false));
                let headers = [("content-type", "text/plain"), ("host", PUBLIC_HOST)];
                let r = e2e::send(proxy, "POST", PATH, &headers, &body, TIMEOUT)
                    .map_err(|e| format!("auction guest cpu: POST {PATH}: {e}"))?;
                check_auction(r.status, &r.body, &id, n)
                    .map_err(|e| format!("auction guest cpu, {n} bidders: {e}"))?;
            }
            let times = crate::guest_cpu::access_times(log, mark, "auction", PATH, count)
                .map_err(|e| format!("{e} ({n} bidders, process {process})"))?;
            per_process[process] = median(times.clone());
            all.extend(times);
        }
        out.push(GuestCpu {
            bidders: n,
            median_ms: median(all),
            per_process,
        });
    }
    Ok(out)
}

/// The median time of the demo bidder asked straight with no delay, as the guest CPU
/// auctions ask it.
fn bidder_at_once(origin: SocketAddr, run_id: u128, quick: bool) -> Result<f64, String> {
    let count = if quick { 31 } else { 101 };
    let mut times = Vec::with_capacity(count);
    for k in 0..count {
        let id = format!("bench-{run_id}-at-once-{k}");
        let headers = [("content-type", "application/json")];
        let body = direct_body(&id, 0);
        let r = e2e::send(origin, "POST", "/bidders/slow", &headers, &body, TIMEOUT)
            .map_err(|e| format!("auction: POST /bidders/slow: {e}"))?;
        answer_json(r.status, &r.body, &id)
            .and_then(|a| one_bid(&a, "slow", price(1)).map(|_| ()))
            .map_err(|e| format!("auction: the demo bidder asked straight: {e}"))?;
        times.push(r.last_at.as_secs_f64() * 1000.0);
    }
    Ok(median(times))
}

/// The table.
pub fn print(a: &AuctionResult) {
    println!(
        "\nauctions ({} rounds; the slowest bidder answers in {SLOWEST_MS} ms, asked straight \
         {:.3} ms median)",
        a.rounds, a.direct_ms
    );
    let line = |label: String, all: &Spread, per: &[Spread; 2]| {
        println!(
            "  {label:<26} p50 {:>7.3}  p95 {:>7.3}  max {:>7.3}   processes: p50 {:.3} / {:.3}, \
             p95 {:.3} / {:.3}",
            all.p50, all.p95, all.max, per[0].p50, per[1].p50, per[0].p95, per[1].p95
        );
    };
    for (n, all, per) in &a.overhead {
        line(format!("overhead, {n} bidder(s), ms"), all, per);
    }
    line(
        format!("past the {:.0} ms deadline", a.deadline_ms),
        &a.overshoot.0,
        &a.overshoot.1,
    );
    for g in &a.guest_cpu {
        println!(
            "  guest ms per auction, {} bidder(s)    {:>7.2}   processes: {:.2} / {:.2}",
            g.bidders, g.median_ms, g.per_process[0], g.per_process[1]
        );
    }
    println!(
        "  the demo bidder asked straight, no delay: {:.3} ms; deadline auctions {OVERSHOOT_GOAL_MS} ms \
         or more past the deadline: {}",
        a.bidder_at_once_ms, a.overshoot_over_goal
    );
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    println!(
        "  goals: overhead p95 < {OVERHEAD_GOAL_MS} ms {}; deadline kept within \
         {OVERSHOOT_GOAL_MS} ms {}",
        verdict(a.overhead_goal_met()),
        verdict(a.overshoot_goal_met())
    );
    if let Some(e) = &a.first_wrong {
        println!(
            "  {} wrong answers left out; the first: {e}",
            a.wrong_answers
        );
    }
}

/// How far apart two processes' figures are, ms (the A/A control).
fn apart(a: f64, b: f64) -> f64 {
    (a - b).abs()
}

/// The `---RESULTS---` lines: `auction_overhead_ms_p50_<n>` / `_p95_<n>` with their controls
/// `auction_overhead_between_processes_ms_p50_<n>` / `_p95_<n>`, the overshoot
/// `auction_deadline_overshoot_ms_p50` / `_p95` / `_max` with its control, the deadline,
/// the direct median, `guest_cpu_ms_auction` (3 bidders) and per count, its control, and the
/// wrong answers.
pub fn results(a: &AuctionResult) -> Vec<(String, String)> {
    let f = |v: f64| format!("{v:.3}");
    let mut out = vec![("auction_direct_ms".to_owned(), f(a.direct_ms))];
    for (n, all, per) in &a.overhead {
        out.push((format!("auction_overhead_ms_p50_{n}"), f(all.p50)));
        out.push((format!("auction_overhead_ms_p95_{n}"), f(all.p95)));
        out.push((
            format!("auction_overhead_between_processes_ms_p50_{n}"),
            f(apart(per[0].p50, per[1].p50)),
        ));
        out.push((
            format!("auction_overhead_between_processes_ms_p95_{n}"),
            f(apart(per[0].p95, per[1].p95)),
        ));
    }
    let (all, per) = &a.overshoot;
    out.extend([
        ("auction_deadline_ms".to_owned(), f(a.deadline_ms)),
        ("auction_deadline_overshoot_ms_p50".to_owned(), f(all.p50)),
        ("auction_deadline_overshoot_ms_p95".to_owned(), f(all.p95)),
        ("auction_deadline_overshoot_ms_max".to_owned(), f(all.max)),
        (
            "auction_deadline_overshoot_over_goal".to_owned(),
            a.overshoot_over_goal.to_string(),
        ),
        (
            "auction_deadline_overshoot_between_processes_ms_p95".to_owned(),
            f(apart(per[0].p95, per[1].p95)),
        ),
    ]);
    for g in &a.guest_cpu {
        let ms = format!("{:.2}", g.median_ms);
        if g.bidders == 3 {
            out.push(("guest_cpu_ms_auction".to_owned(), ms.clone()));
            let [p0, p1] = g.per_process;
            out.push((
                "guest_cpu_ms_auction_between_processes".to_owned(),
                format!("{:.2}", apart(p0, p1)),
            ));
        }
        out.push((format!("guest_cpu_ms_auction_{}", g.bidders), ms));
    }
    out.push((
        "auction_bidder_at_once_ms".to_owned(),
        f(a.bidder_at_once_ms),
    ));
    out.push((
        "auction_wrong_answers".to_owned(),
        a.wrong_answers.to_string(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer the edge gives an auction of `b1` … `b<n>` (the shape of
    /// `docs/auctions.md`), before `spoil` changes it.
    fn answer(id: &str, n: usize, spoil: impl FnOnce(&mut Value)) -> Vec<u8> {
        let seatbid: Vec<Value> = (1..=n)
            .map(|i| {
                let hb_bidder = if i == n { json!(code(i)) } else { Value::Null };
                json!({"seat": code(i), "bid": [{
                    "id": format!("slow-{i}"), "impid": "slot", "price": price(i),
                    "adm": "<a href=\"/first-party/click?x\">ad</a>", "mtype": 1,
                    "ext": {"prebid": {"type": "banner", "targeting": {"hb_bidder": hb_bidder}}},
                }]})
            })
            .collect();
        let times: serde_json::Map<String, Value> = (1..=n)
            .map(|i| (code(i), json!(DELAYS_MS[i - 1])))
            .collect();
        let mut a = json!({"id": id, "cur": "USD", "seatbid": seatbid,
                           "ext": {"responsetimemillis": times, "tmaxrequest": 950}});
        spoil(&mut a);
        a.to_string().into_bytes()
    }

    #[test]
    fn a_right_answer_passes_for_each_count() {
        for n in COUNTS {
            assert_eq!(check_auction(200, &answer("a", n, |_| ()), "a", n), Ok(()));
        }
    }

    #[test]
    fn wrong_answers_are_reported_not_counted() {
        let n = 3;
        let cases: Vec<(&str, Vec<u8>, u16)> = vec![
            ("status", answer("a", n, |_| ()), 502),
            ("id", answer("b", n, |_| ()), 200),
            ("not json", b"<html>".to_vec(), 200),
            (
                "missing seat",
                answer("a", n, |a| a["seatbid"].as_array_mut().unwrap().truncate(2)),
                200,
            ),
            (
                "seat order",
                answer("a", n, |a| a["seatbid"].as_array_mut().unwrap().swap(0, 1)),
                200,
            ),
            (
                "price",
                answer("a", n, |a| a["seatbid"][1]["bid"][0]["price"] = json!(9.0)),
                200,
            ),
            (
                "impid",
                answer("a", n, |a| a["seatbid"][0]["bid"][0]["impid"] = json!("x")),
                200,
            ),
            (
                "two bids",
                answer("a", n, |a| {
                    let bid = a["seatbid"][0]["bid"][0].clone();
                    a["seatbid"][0]["bid"].as_array_mut().unwrap().push(bid);
                }),
                200,
            ),
            (
                "winner",
                answer("a", n, |a| {
                    a["seatbid"][0]["bid"][0]["ext"]["prebid"]["targeting"]["hb_bidder"] =
                        json!("b1");
                }),
                200,
            ),
            (
                "error",
                answer("a", n, |a| {
                    a["ext"]["errors"] = json!({"b2": [{"code": 1}]})
                }),
                200,
            ),
            (
                "time",
                answer("a", n, |a| {
                    a["ext"]["responsetimemillis"]
                        .as_object_mut()
                        .unwrap()
                        .remove("b2");
                }),
                200,
            ),
        ];
        for (what, body, status) in cases {
            assert!(check_auction(status, &body, "a", n).is_err(), "{what}");
        }
        // An empty `errors` object is no error.
        let empty = answer("a", n, |a| a["ext"]["errors"] = json!({}));
        assert_eq!(check_auction(200, &empty, "a", n), Ok(()));
    }

    #[test]
    fn the_deadline_auction_needs_b2_and_a_timeout() {
        let good = |spoil: &dyn Fn(&mut Value)| {
            answer("d", 2, |a| {
                a["seatbid"].as_array_mut().unwrap().remove(0);
                a["ext"]["errors"] = json!({"stall": [{"code": 1, "message": "no answer"}]});
                a["ext"]["tmaxrequest"] = json!(150);
                spoil(a);
            })
        };
        assert_eq!(check_deadline(200, &good(&|_| ()), "d"), Ok(150.0));
        let refused = good(&|a| a["ext"]["errors"]["stall"][0]["code"] = json!(3));
        assert!(check_deadline(200, &refused, "d").is_err());
        let no_bid = good(&|a| a["seatbid"] = json!([]));
        assert!(check_deadline(200, &no_bid, "d").is_err());
        let no_deadline = good(&|a| a["ext"]["tmaxrequest"] = Value::Null);
        assert!(check_deadline(200, &no_deadline, "d").is_err());
    }

    #[test]
    fn each_auction_names_its_bidders_with_their_delays() {
        let request: Value =
            serde_json::from_slice(&request_body("r", TMAX, &auction_bidders(3, true))).unwrap();
        let bidders = &request["imp"][0]["ext"]["prebid"]["bidder"];
        assert_eq!(bidders.as_object().unwrap().len(), 3);
        assert_eq!(bidders["b1"]["delay_ms"], SLOWEST_MS);
        assert_eq!(bidders["b3"]["delay_ms"], DELAYS_MS[2]);
        // b1 is the slowest of every auction, so the direct request is the slowest bidder's.
        assert!(DELAYS_MS.iter().all(|&d| d <= SLOWEST_MS));
        let at_once = auction_bidders(8, false);
        assert!((1..=8).all(|i| at_once[code(i)]["delay_ms"] == 0));
        let config = super::bidders("127.0.0.1:9".parse().unwrap());
        assert!(
            config.starts_with("[{ code = \"b1\", endpoint = \"http://127.0.0.1:9/bidders/slow\"")
        );
        assert!(config.contains("code = \"b8\""));
        assert!(config.ends_with("{ code = \"stall\", endpoint = \"http://127.0.0.1:9/bidders/misbehave\", vendor_id = 2 }]"));
    }

    fn sample(kind: Kind, process: usize, ms: f64, deadline_ms: f64) -> Sample {
        Sample {
            kind,
            process,
            ms,
            deadline_ms,
        }
    }

    #[test]
    fn overhead_is_less_the_direct_median_overshoot_less_the_deadline() {
        let mut samples = vec![
            sample(Kind::Direct, 0, 41.0, 0.0),
            sample(Kind::Direct, 1, 40.0, 0.0),
            sample(Kind::Direct, 0, 90.0, 0.0),
        ];
        for (i, ms) in [44.0, 45.0, 46.0, 50.0].into_iter().enumerate() {
            samples.push(sample(Kind::Auction(3), i % 2, ms, 0.0));
            samples.push(sample(Kind::Deadline, i % 2, 150.0 + ms - 40.0, 150.0));
        }
        let (direct, overhead, (overshoot, per)) = figures(&samples);
        assert_eq!(direct, 41.0);
        let (n, all, per_process) = overhead[1];
        assert_eq!(n, 3);
        assert_eq!(
            all,
            Spread {
                p50: 5.0,
                p95: 9.0,
                max: 9.0
            }
        );
        assert_eq!(per_process[0].p50, 5.0);
        assert_eq!(per_process[1].p50, 9.0);
        assert!(overhead[0].1.p50.is_nan(), "no samples: no figure");
        assert_eq!(overshoot.max, 10.0);
        assert_eq!(per[1].p95, 10.0);
        let result = AuctionResult {
            direct_ms: direct,
            overhead,
            overshoot: (overshoot, per),
            deadline_ms: 150.0,
            guest_cpu: vec![GuestCpu {
                bidders: 3,
                median_ms: 0.9,
                per_process: [0.8, 1.1],
            }],
            rounds: 4,
            bidder_at_once_ms: 0.3,
            overshoot_over_goal: 0,
            wrong_answers: 0,
            first_wrong: None,
        };
        let out = results(&result);
        let get = |k: &str| {
            out.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("auction_overhead_ms_p50_3"), Some("5.000"));
        assert_eq!(get("auction_overhead_ms_p95_3"), Some("9.000"));
        assert_eq!(
            get("auction_overhead_between_processes_ms_p50_3"),
            Some("4.000")
        );
        assert_eq!(get("auction_deadline_overshoot_ms_max"), Some("10.000"));
        assert_eq!(get("guest_cpu_ms_auction"), Some("0.90"));
        assert_eq!(get("guest_cpu_ms_auction_3"), Some("0.90"));
        assert_eq!(get("guest_cpu_ms_auction_between_processes"), Some("0.30"));
        assert_eq!(get("auction_wrong_answers"), Some("0"));
        assert!(!result.overhead_goal_met(), "a NaN p95 is no goal met");
        assert!(result.overshoot_goal_met());
    }
}
