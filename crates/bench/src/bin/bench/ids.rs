//! The partner-ID graph's cost (`docs/identity.md`): what keeping the graph in Fastly's KV
//! Store adds to an auction and to a navigation with a slot, for a returning reader whose
//! entry holds a partner ID, the graph kept (**on**) against `ids.enabled = false` (**off**),
//! each build in two processes (the A/A control).
//!
//! Both builds have the auction's bidders ([`crate::auction::bidders`]) with `b1` a partner of
//! the graph (`eid_source = "b1.bench.example"`, pushing with the demo's DEVELOPMENT-ONLY
//! `fast_sync_token`), and the navigation cases' slots ([`crate::navigation::slots`]). On each
//! process a reader gets an edge ID from a page view; on the two **on** processes `b1` then
//! pushes its ID for that reader (`POST /_ts/ids/sync`). What the graph costs each case:
//!
//! * **auction**: `POST /_ts/openrtb2/auction` with the reader's cookie, `b1` answering at
//!   once: the entry is read (one KV lookup) before the bidders are asked, on the request's
//!   critical path;
//! * **navigation**: the origin-first slot page ([`crate::navigation::LATE`]) with the
//!   reader's cookie: the lookup starts with the origin request and is waited for when the
//!   bidders are asked; after the page and its access line, the reader's entry is read again
//!   for their consent (unchanged: no write). That last part runs after the last byte, so the
//!   client's figures do not hold it.
//!
//! Before timing, on every process: the auction's answer holds `b1`'s bid, and the request
//! `b1` received carried the partner ID in `user.eids` exactly on the **on** builds (the demo
//! bidder's records); the navigation's page holds `b1`'s bids block. Wrong answers during
//! timing are left out and counted (`ids_wrong_answers`).
//!
//! Figures (ms, client side): per case the on and off spreads, `on − off` of the medians and
//! the p95s, and the A/A control (how far the two processes of one build read apart, the
//! larger over on and off). Not part of the full run: it builds two more modules; run it with
//! `scripts/benchmark.sh --ids-only`.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::trust::start_viceroy;
use e2e::{build_service, ChildGuard};
use serde_json::{json, Value};

use crate::auction::{check_auction, Spread, PATH as AUCTION_PATH};
use crate::cases::PUBLIC_HOST;
use crate::navigation::{check_bids, without_bids, LATE};

const TIMEOUT: Duration = Duration::from_secs(30);
/// The partner ID `b1` pushes for each reader.
const PARTNER_ID: &str = "bench-b1-partner-id";
/// `b1`'s EID source.
const SOURCE: &str = "b1.bench.example";
/// The demo's DEVELOPMENT-ONLY token named `fast_sync_token` (fastly.toml's `ts_ids`).
const TOKEN: &str = "DEVELOPMENT-ONLY-fast-3f9a1c7e5b2d4086";

/// The two cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Auction,
    Navigation,
}

/// One process under test: its address, whether its build keeps the graph, the reader's
/// cookie there.
struct Process {
    addr: SocketAddr,
    on: bool,
    cookie: String,
}

/// One case's figures (ms).
#[derive(Debug, Clone)]
pub struct Figures {
    /// The graph kept, and not.
    pub spread: [Spread; 2],
    /// `on − off` of the medians and of the p95s.
    pub on_minus_off: (f64, f64),
    /// The A/A control: the two processes of one build apart (medians, p95s), the larger over
    /// on and off.
    pub between_processes: (f64, f64),
    /// Each process's median, in the order started (on, on, off, off).
    pub per_process_p50: Vec<f64>,
}

/// The graph's cost.
#[derive(Debug, Clone)]
pub struct IdsResult {
    /// The auction's time to its last byte.
    pub auction: Figures,
    /// The navigation's time to its first body byte.
    pub navigation_ttfb: Figures,
    /// The navigation's time to its last byte.
    pub navigation_ttlb: Figures,
    /// Rounds measured.
    pub rounds: usize,
    /// Timed requests whose answer was wrong (left out).
    pub wrong_answers: usize,
}

/// The bidders of [`crate::auction::bidders`], `b1` a partner of the graph.
fn bidders(origin: SocketAddr) -> String {
    crate::auction::bidders_with(origin, |code| match code {
        "b1" => format!(", eid_source = \"{SOURCE}\", sync_token_key = \"fast_sync_token\""),
        _ => String::new(),
    })
}

/// The processes started: each one's address and whether its build keeps the graph, and the
/// guards that stop them.
type Started = (Vec<(SocketAddr, bool)>, Vec<ChildGuard>);

/// Builds the two modules, starts each in two processes, and returns them with their guards.
fn start(root: &Path, origin: SocketAddr) -> Result<Started, String> {
    let dir = root.join("target/bench");
    let mut started = Vec::new();
    let mut guards = Vec::new();
    for on in [true, false] {
        let name = if on { "ids-on" } else { "ids-off" };
        eprintln!(
            "bench: building the service with the graph {}",
            if on { "kept" } else { "off" }
        );
        let mut overrides = e2e::service_overrides(origin, true);
        overrides.extend(
            [
                ("TRUSTED_SERVER__AUCTION__BIDDERS", bidders(origin)),
                ("TRUSTED_SERVER__AUCTION__SLOTS", crate::navigation::slots()),
                ("TRUSTED_SERVER__IDS__ENABLED", on.to_string()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        let wasm = build_service(root, &dir.join(format!("{name}.wasm")), &overrides)?;
        for process in 0..crate::PROCESSES {
            let log = dir.join(format!("viceroy-{name}-{process}.log"));
            let (guard, addr) = start_viceroy(&wasm, &root.join("fastly.toml"), &log)
                .map_err(|e| format!("viceroy ({name}): {e}"))?;
            guards.push(guard);
            started.push((addr, on));
        }
    }
    Ok((started, guards))
}

/// What Chrome sends for a typed URL ([`crate::navigation::navigation`]), with `cookie`.
fn navigation_headers(cookie: &str) -> Vec<(&str, &str)> {
    let mut headers = crate::navigation::navigation(false);
    headers.push(("cookie", cookie));
    headers
}

/// A reader's edge ID on `addr` (a page view without a cookie), as its cookie.
fn reader(addr: SocketAddr) -> Result<String, String> {
    let r = e2e::send(addr, "GET", "/", &navigation_headers(""), b"", TIMEOUT)
        .map_err(|e| format!("ids: a reader's page view: {e}"))?;
    r.edge_id_set()
        .map(|id| format!("ts-ec={id}"))
        .ok_or_else(|| format!("ids: no edge ID from {addr}"))
}

/// `b1` pushes [`PARTNER_ID`] for the reader of `cookie` on `addr`, again while the edge does
/// not know the reader yet (their entry is written once their page has left).
fn push(addr: SocketAddr, cookie: &str) -> Result<(), String> {
    let ec = cookie.trim_start_matches("ts-ec=");
    let body = json!({"pairs": [{"ec": ec, "id": PARTNER_ID}]}).to_string();
    let auth = format!("Bearer {TOKEN}");
    let headers = [
        ("content-type", "application/json"),
        ("authorization", auth.as_str()),
    ];
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = e2e::send(
            addr,
            "POST",
            "/_ts/ids/sync?partner=b1",
            &headers,
            body.as_bytes(),
            TIMEOUT,
        )
        .map_err(|e| format!("ids: b1's sync: {e}"))?;
        let text = String::from_utf8_lossy(&r.body).into_owned();
        if r.status == 200 && text.contains("\"stored\"") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("ids: b1's sync on {addr}: {} {text}", r.status));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The auction request: `b1` only, answering at once.
fn auction_body(id: &str) -> Vec<u8> {
    json!({
        "id": id,
        "tmax": 1000,
        "imp": [{
            "id": "slot",
            "banner": {"format": [{"w": 300, "h": 250}]},
            "secure": 1,
            "ext": {"prebid": {"bidder": {"b1": {"delay_ms": 0, "price": crate::auction::price(1)}}}},
        }],
        "site": {"page": format!("http://{PUBLIC_HOST}/auction.html"), "publisher": {"id": "bench"}},
    })
    .to_string()
    .into_bytes()
}

/// One request of `case` to `p`, checked: `Err` of the outer result, the request failed; of
/// the inner, the answer was wrong. The times: first body byte, last byte (ms).
fn one(p: &Process, case: Case, id: &str) -> Result<Result<(f64, f64), String>, String> {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let r = match case {
        Case::Auction => {
            let headers = [
                ("host", PUBLIC_HOST),
                ("content-type", "text/plain"),
                ("cookie", p.cookie.as_str()),
            ];
            e2e::send(
                p.addr,
                "POST",
                AUCTION_PATH,
                &headers,
                &auction_body(id),
                TIMEOUT,
            )
        }
        Case::Navigation => e2e::send(
            p.addr,
            "GET",
            LATE.path,
            &navigation_headers(&p.cookie),
            b"",
            TIMEOUT,
        ),
    }
    .map_err(|e| format!("ids {case:?}: {e}"))?;
    let checked = match case {
        Case::Auction => check_auction(r.status, &r.body, id, 1),
        Case::Navigation if r.status != 200 || !r.complete => {
            Err(format!("status {}, complete {}", r.status, r.complete))
        }
        Case::Navigation => {
            let text = String::from_utf8_lossy(&r.body);
            match without_bids(&text).1 {
                Some(data) => check_bids(data, LATE.slot),
                None => Err("no bids block".to_owned()),
            }
        }
    };
    let first = r.first_body_at.map_or(f64::NAN, ms);
    Ok(checked.map(|()| (first, ms(r.last_at))))
}

/// The `user.eids` sources `b1` received for auction `id` (the demo bidder's records).
fn eid_sources(origin: SocketAddr, id: &str) -> Result<Vec<(String, String)>, String> {
    let path = format!("/bidders/received?id={id}");
    let r = e2e::get(origin, &path, &[], TIMEOUT).map_err(|e| format!("{path}: {e}"))?;
    let records: Vec<Value> =
        serde_json::from_slice(&r.body).map_err(|e| format!("{path}: {e}"))?;
    let record = records
        .first()
        .ok_or_else(|| format!("{path}: b1 was not asked"))?;
    let body: Value = serde_json::from_str(record["body"].as_str().unwrap_or("null"))
        .map_err(|e| format!("{path}: {e}"))?;
    Ok((body["user"]["eids"].as_array().into_iter().flatten())
        .map(|e| {
            let source = e["source"].as_str().unwrap_or("?").to_owned();
            (
                source,
                e["uids"][0]["id"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect())
}

/// Starts the builds, checks every process's answers, times the rounds.
///
/// # Errors
/// A build or a request that fails, or a wrong answer before timing.
pub fn run(root: &Path, origin: SocketAddr, quick: bool) -> Result<IdsResult, String> {
    let (started, _guards) = start(root, origin)?;
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut processes = Vec::new();
    for (addr, on) in started {
        let cookie = reader(addr)?;
        if on {
            push(addr, &cookie)?;
        }
        processes.push(Process { addr, on, cookie });
    }
    for (i, p) in processes.iter().enumerate() {
        for warm in 0..3 {
            let id = format!("ids-{run_id}-check-{i}-{warm}");
            for case in [Case::Auction, Case::Navigation] {
                one(p, case, &id)?.map_err(|e| format!("ids {case:?}, process {i}: {e}"))?;
            }
            let partner = (SOURCE.to_owned(), PARTNER_ID.to_owned());
            let eids = eid_sources(origin, &id)?;
            if eids.contains(&partner) != p.on {
                return Err(format!(
                    "ids, process {i} (graph {}): b1 got user.eids {eids:?}",
                    if p.on { "kept" } else { "off" }
                ));
            }
        }
    }
    let rounds = if quick { 61 } else { 201 };
    // (case, process, first, last)
    let mut samples: Vec<(Case, usize, f64, f64)> = Vec::new();
    let mut wrong_answers = 0;
    let order: Vec<(Case, usize)> = [Case::Auction, Case::Navigation]
        .into_iter()
        .flat_map(|case| (0..processes.len()).map(move |i| (case, i)))
        .collect();
    for round in 0..rounds {
        for k in crate::order::balanced(round, order.len()) {
            let (case, i) = order[k];
            let id = format!("ids-{run_id}-{round}-{k}");
            match one(&processes[i], case, &id)? {
                Ok((first, last)) => samples.push((case, i, first, last)),
                Err(_) => wrong_answers += 1,
            }
        }
    }
    let figures = |case: Case, last: bool| {
        let values = |on: bool, process: Option<usize>| -> Vec<f64> {
            (samples.iter())
                .filter(|s| {
                    s.0 == case && processes[s.1].on == on && process.is_none_or(|p| s.1 == p)
                })
                .map(|s| if last { s.3 } else { s.2 })
                .collect()
        };
        let spread = [
            Spread::of(values(true, None)),
            Spread::of(values(false, None)),
        ];
        let apart = |on: bool| {
            let mine: Vec<usize> = (0..processes.len())
                .filter(|&i| processes[i].on == on)
                .collect();
            let [a, b] = [mine[0], mine[1]].map(|i| Spread::of(values(on, Some(i))));
            ((a.p50 - b.p50).abs(), (a.p95 - b.p95).abs())
        };
        let (on_aa, off_aa) = (apart(true), apart(false));
        let per_process_p50 = (0..processes.len())
            .map(|i| Spread::of(values(processes[i].on, Some(i))).p50)
            .collect();
        Figures {
            per_process_p50,
            on_minus_off: (spread[0].p50 - spread[1].p50, spread[0].p95 - spread[1].p95),
            between_processes: (on_aa.0.max(off_aa.0), on_aa.1.max(off_aa.1)),
            spread,
        }
    };
    Ok(IdsResult {
        auction: figures(Case::Auction, true),
        navigation_ttfb: figures(Case::Navigation, false),
        navigation_ttlb: figures(Case::Navigation, true),
        rounds,
        wrong_answers,
    })
}

/// Prints the table.
pub fn print(r: &IdsResult) {
    println!(
        "\npartner-ID graph: kept (on) against ids.enabled = false (off), a returning reader with \
         a partner ID, {} rounds, ms (p50 / p95)",
        r.rounds
    );
    println!(
        "{:<18} {:>15} {:>15} {:>15} {:>15}",
        "case", "on", "off", "on - off", "A/A"
    );
    for (name, f) in [
        ("auction", &r.auction),
        ("navigation TTFB", &r.navigation_ttfb),
        ("navigation TTLB", &r.navigation_ttlb),
    ] {
        println!(
            "{name:<18} {:>7.2} / {:<6.2} {:>7.2} / {:<6.2} {:>7.2} / {:<6.2} {:>7.2} / {:<6.2}",
            f.spread[0].p50,
            f.spread[0].p95,
            f.spread[1].p50,
            f.spread[1].p95,
            f.on_minus_off.0,
            f.on_minus_off.1,
            f.between_processes.0,
            f.between_processes.1
        );
    }
    for (name, f) in [
        ("auction", &r.auction),
        ("navigation TTFB", &r.navigation_ttfb),
        ("navigation TTLB", &r.navigation_ttlb),
    ] {
        let each: Vec<String> = f
            .per_process_p50
            .iter()
            .map(|v| format!("{v:.2}"))
            .collect();
        println!(
            "{name}: p50 per process (on, on, off, off): {}",
            each.join(", ")
        );
    }
    println!("wrong answers left out: {}", r.wrong_answers);
}

/// The `---RESULTS---` lines.
pub fn results(r: &IdsResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, f) in [
        ("auction", &r.auction),
        ("navigation_ttfb", &r.navigation_ttfb),
        ("navigation_ttlb", &r.navigation_ttlb),
    ] {
        let mut put =
            |key: &str, v: f64| out.push((format!("ids_{name}_{key}"), format!("{v:.3}")));
        put("on_p50_ms", f.spread[0].p50);
        put("on_p95_ms", f.spread[0].p95);
        put("off_p50_ms", f.spread[1].p50);
        put("off_p95_ms", f.spread[1].p95);
        put("on_minus_off_p50_ms", f.on_minus_off.0);
        put("on_minus_off_p95_ms", f.on_minus_off.1);
        put("aa_p50_ms", f.between_processes.0);
        put("aa_p95_ms", f.between_processes.1);
    }
    out.push(("ids_rounds".to_owned(), r.rounds.to_string()));
    out.push(("ids_wrong_answers".to_owned(), r.wrong_answers.to_string()));
    out
}
