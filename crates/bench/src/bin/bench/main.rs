//! `bench [--quick] [--save NAME] [--compare NAME] [--out DIR]`: the run behind
//! `scripts/benchmark.sh`.
//!
//! With `--target URL` it measures a service that is already running instead (and, with
//! `--baseline URL`, a second one against it, interleaved): see [`remote`].
//!
//! Builds and starts everything it measures, on loopback: the demo origin, and two builds of
//! the service under Viceroy (streaming, and buffered with `publisher.streaming = false`). Then:
//!
//! 1. **latency**: three timestamps per request (headers, first body byte, last byte) for the
//!    direct origin, the streaming proxy and the buffered proxy, in interleaved rounds, after
//!    checking that all three return the same page (the proxy's being the origin's with the
//!    URL rule applied);
//! 2. **streamed fraction**: the share of each proxied page that reached the client before the
//!    origin sent its last byte (the origin logs that moment on the shared wall clock);
//! 3. **throughput**: pipeline vs bare lol_html, native vs wasm (`viceroy run`), interleaved;
//! 4. **load**: `wrk` against the proxy and the origin at two concurrency levels;
//! 5. **first-party proxy**: a 100 KB image and an HTML creative through
//!    `/first-party/proxy` against the same straight from the partner ([`first_party`]).
//!    `--first-party-only` runs just this part;
//! 6. **cache**: a cacheable page as a hit, a miss and straight from the origin ([`cache`]).
//!    `--cache-only` runs just this part;
//! 7. **auctions**: the edge's overhead beyond the slowest bidder for 1, 3 and 8 bidders, the
//!    deadline kept with a bidder that hangs, and the guest CPU per auction ([`auction`]).
//!    `--auction-only` runs just this part;
//! 9. **navigation auction**: time to first and last byte of a page with a slot, the auction
//!    on against off, beside the A/A control, and the last byte against the later of the
//!    origin's and the bidder's own ([`navigation`]). `--navigation-only` runs just this part;
//! 10. **partner-ID graph** (only with `--ids-only`, which builds two more modules): what
//!     keeping the graph adds to an auction and to a navigation, kept against off ([`ids`]);
//! 11. **guest time against a baseline** (only with `--guest-only`, and `--baseline-rev REV`
//!     for the revision): guest time per request of today's build in two processes and of
//!     `REV`'s in one, interleaved ([`guest_ab`]);
//! 8. **guest CPU per request** (measured right after the output checks, before latency): a
//!    small page, a 110 KB page, a Next.js page, a cache hit and a first-party proxy request,
//!    from the guest's own access lines ([`guest_cpu`]).
//!
//! The latency cases include the captured Next.js app the demo origin replays with its
//! recorded chunk timing (`/next/...`, and a Flight navigation with `RSC: 1`). For those, the
//! expected proxy output is the core pipeline run natively, and [`rsc`] also reports the most
//! bytes the pipeline held at once on each capture fed in its captured chunks, next to the
//! largest `T` row and the origin's own streamed fraction (the ceiling).
//!
//! It prints a table, writes an SVG chart of the latency distributions, and ends with a
//! `---RESULTS---` block of `key=value` lines.

mod auction;
mod baseline;
mod cache;
mod cases;
mod chart;
mod first_party;
mod guest_ab;
mod guest_cpu;
mod ids;
mod latency;
mod load;
mod navigation;
mod order;
mod remote;
mod report;
mod rsc;
mod stats;
mod throughput;
mod trust;

use std::path::PathBuf;
use std::time::Instant;

use e2e::{build_and_start_demo_origin, start_service_pair_with, workspace_root, ChildGuard};
use trust::start_viceroy;

/// Command-line options.
pub struct Options {
    /// About 8 minutes on 2 cores: fewer rounds, shorter load runs.
    pub quick: bool,
    /// Store this run's results under this name.
    pub save: Option<String>,
    /// Print deltas against a stored run.
    pub compare: Option<String>,
    /// Where results, logs and the chart go.
    pub out: PathBuf,
    /// `--target URL`: measure a running service instead of the local builds.
    pub remote: Option<remote::RemoteOptions>,
    /// `--first-party-only`: only the first-party proxy cases.
    pub first_party_only: bool,
    /// `--cache-only`: only the cache cases.
    pub cache_only: bool,
    /// `--auction-only`: only the auction cases.
    pub auction_only: bool,
    /// `--navigation-only`: only the navigation auction cases.
    pub navigation_only: bool,
    /// `--ids-only`: the partner-ID graph's cost (not part of the full run).
    pub ids_only: bool,
    /// `--guest-only`: guest time per request, today's build in two processes (not part of
    /// the full run).
    pub guest_only: bool,
    /// `--baseline-rev REV` (with `--guest-only`): the revision whose build is timed beside
    /// today's.
    pub baseline_rev: Option<String>,
    /// `--system-roots`: the Viceroy processes keep the system's trust store ([`trust`]).
    pub system_roots: bool,
}

fn parse_args() -> Result<Options, String> {
    let root = workspace_root();
    let mut options = Options {
        quick: false,
        save: None,
        compare: None,
        out: root.join("bench-results"),
        remote: None,
        first_party_only: false,
        cache_only: false,
        auction_only: false,
        navigation_only: false,
        ids_only: false,
        guest_only: false,
        baseline_rev: None,
        system_roots: false,
    };
    let mut remote_args = remote::RemoteArgs::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if remote_args.take(&arg, &mut args)? {
            continue;
        }
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--first-party-only" => options.first_party_only = true,
            "--cache-only" => options.cache_only = true,
            "--auction-only" => options.auction_only = true,
            "--navigation-only" => options.navigation_only = true,
            "--ids-only" => options.ids_only = true,
            "--guest-only" => options.guest_only = true,
            "--system-roots" => options.system_roots = true,
            "--baseline-rev" => {
                options.baseline_rev = Some(args.next().ok_or("--baseline-rev needs a REV")?)
            }
            "--save" => options.save = Some(args.next().ok_or("--save needs a NAME")?),
            "--compare" => options.compare = Some(args.next().ok_or("--compare needs a NAME")?),
            "--out" => options.out = PathBuf::from(args.next().ok_or("--out needs a DIR")?),
            "-h" | "--help" => {
                return Err(format!(
                    "usage: benchmark.sh [--quick] [--first-party-only] [--cache-only] [--auction-only] [--navigation-only] [--ids-only] [--guest-only [--baseline-rev REV]] [--system-roots] [--save NAME] [--compare NAME] [--out DIR]\n   \
                     or: benchmark.sh {} [--save NAME] [--compare NAME] [--out DIR]",
                    remote::USAGE
                ))
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    options.remote = remote_args.finish()?;
    if options.baseline_rev.is_some() && !options.guest_only {
        return Err("--baseline-rev goes with --guest-only".into());
    }
    if options.remote.is_some() && options.system_roots {
        return Err("--system-roots is for the local benchmark, not --target".into());
    }
    if options.remote.is_some() && options.quick {
        return Err("--quick is for the local benchmark, not --target".into());
    }
    for name in options.save.iter().chain(options.compare.iter()) {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(format!(
                "run names are letters, digits, '-', '_' and '.': {name:?}"
            ));
        }
    }
    Ok(options)
}

/// How many Viceroy processes serve each build. Two processes serving the same module differ
/// by up to 5% in the latency of a 7 ms page, and which one is faster changes when they are
/// restarted (measured: 4 restarts of 2 + 2 processes, 400 interleaved rounds each). A ratio
/// taken between one process of each build carries that difference as if it were the
/// builds'. So each build runs in two, the rounds alternate between them, and the report
/// shows how far the two processes of one build read apart: the A/A control every build
/// comparison is read against.
pub const PROCESSES: usize = 2;

/// The servers under test.
pub struct Servers {
    /// The demo origin.
    pub origin: std::net::SocketAddr,
    /// The streaming build under Viceroy, in [`PROCESSES`] processes.
    pub streaming: [std::net::SocketAddr; PROCESSES],
    /// The buffered build under Viceroy, in [`PROCESSES`] processes.
    pub buffered: [std::net::SocketAddr; PROCESSES],
    /// The origin's request log.
    pub origin_log: PathBuf,
    /// The first-party proxy's partner (`first_party.resolve` points the builds at it).
    pub partner: first_party::Partner,
    /// The Viceroy log of the streaming build's first process (its access lines).
    pub streaming_log: PathBuf,
    /// The Viceroy log of the streaming build's second process.
    pub streaming_log_2: PathBuf,
    _guards: Vec<ChildGuard>,
}

/// The overrides the benchmark's builds get beyond the origin's ([`e2e::service_overrides`]).
fn bench_overrides(
    origin: std::net::SocketAddr,
    partner: std::net::SocketAddr,
) -> [(&'static str, String); 3] {
    [
        (
            "TRUSTED_SERVER__FIRST_PARTY__RESOLVE",
            first_party::resolve(partner),
        ),
        // The auction cases' bidders, on the demo origin.
        ("TRUSTED_SERVER__AUCTION__BIDDERS", auction::bidders(origin)),
        // The navigation cases' slots, on paths only they ask for.
        ("TRUSTED_SERVER__AUCTION__SLOTS", navigation::slots()),
    ]
}

/// Every override of the streaming build [`start_servers`] starts, for building it (or
/// another revision of it) the same way elsewhere.
pub fn streaming_overrides(
    origin: std::net::SocketAddr,
    partner: std::net::SocketAddr,
) -> Vec<(String, String)> {
    let mut list = e2e::service_overrides(origin, true);
    list.extend(bench_overrides(origin, partner).map(|(k, v)| (k.to_owned(), v)));
    list
}

fn start_servers(out: &std::path::Path) -> Result<Servers, String> {
    let root = workspace_root().canonicalize().map_err(|e| e.to_string())?;
    eprintln!("bench: building the demo origin and the benchmark tools");
    let origin_log = out.join("origin.log");
    let (origin_guard, origin) = build_and_start_demo_origin(&root, Some(&origin_log))?;
    eprintln!("bench: building the service (streaming and buffered) for the origin on {origin}");
    let dir = root.join("target/bench");
    let partner = first_party::start_partner()?;
    let overrides = bench_overrides(origin, partner.addr());
    let pair =
        start_service_pair_with(&root, &dir, origin, &overrides, &[], &trust::viceroy_env())?;
    let mut guards = vec![origin_guard];
    guards.extend(pair.guards);
    // The same modules again, each in a second process.
    let mut second = |module: &std::path::Path, name: &str| {
        let (guard, addr) = start_viceroy(
            module,
            &root.join("fastly.toml"),
            &dir.join(format!("viceroy-{name}-2.log")),
        )
        .map_err(|e| format!("viceroy ({name}, second process): {e}"))?;
        guards.push(guard);
        Ok::<_, String>(addr)
    };
    let streaming = [pair.streaming, second(&pair.modules[0], "streaming")?];
    let buffered = [pair.buffered, second(&pair.modules[1], "buffered")?];
    Ok(Servers {
        origin,
        streaming,
        buffered,
        origin_log,
        partner,
        // Where `start_service_pair` writes the first process's log.
        streaming_log: dir.join("viceroy-streaming.log"),
        // Where `second` writes it.
        streaming_log_2: dir.join("viceroy-streaming-2.log"),
        _guards: guards,
    })
}

fn main() {
    let options = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run_benchmark(&options) {
        eprintln!("bench: {e}");
        std::process::exit(1);
    }
}

fn run_benchmark(options: &Options) -> Result<(), String> {
    let started = Instant::now();
    std::fs::create_dir_all(&options.out).map_err(|e| format!("{}: {e}", options.out.display()))?;
    if let Some(remote) = &options.remote {
        let results = remote::run(remote, &options.out)?;
        return finish(options, started, &results);
    }
    let bench_dir = workspace_root().join("target/bench");
    std::fs::create_dir_all(&bench_dir).map_err(|e| format!("{}: {e}", bench_dir.display()))?;
    trust::init(options.system_roots, &bench_dir)?;
    if options.first_party_only {
        let servers = start_servers(&options.out)?;
        let fp = first_party::run(
            &workspace_root(),
            &servers.partner,
            &servers.streaming,
            options.quick,
        )?;
        drop(servers);
        first_party::print(&fp);
        return finish(options, started, &first_party::results(&fp));
    }
    if options.cache_only {
        let servers = start_servers(&options.out)?;
        let c = cache::run(servers.origin, &servers.streaming, options.quick)?;
        drop(servers);
        cache::print(&c);
        return finish(options, started, &cache::results(&c));
    }
    if options.auction_only {
        let servers = start_servers(&options.out)?;
        let a = run_auctions(&servers, options.quick)?;
        drop(servers);
        auction::print(&a);
        return finish(options, started, &auction::results(&a));
    }
    if options.ids_only {
        let root = workspace_root().canonicalize().map_err(|e| e.to_string())?;
        let log = options.out.join("origin.log");
        let (_origin_guard, origin) = build_and_start_demo_origin(&root, Some(&log))?;
        let r = ids::run(&root, origin, options.quick)?;
        ids::print(&r);
        return finish(options, started, &ids::results(&r));
    }
    if options.guest_only {
        let root = workspace_root().canonicalize().map_err(|e| e.to_string())?;
        let log = options.out.join("origin.log");
        let (_origin_guard, origin) = build_and_start_demo_origin(&root, Some(&log))?;
        let partner = first_party::start_partner()?;
        let g = guest_ab::run(
            &root,
            origin,
            partner.addr(),
            options.baseline_rev.as_deref(),
            options.quick,
        )?;
        guest_ab::print(&g);
        return finish(options, started, &guest_ab::results(&g));
    }
    if options.navigation_only {
        let servers = start_servers(&options.out)?;
        let n = navigation::run(servers.origin, &servers.streaming, options.quick)?;
        drop(servers);
        navigation::print(&n);
        return finish(options, started, &navigation::results(&n));
    }
    // Throughput first, while nothing else runs on the machine.
    let throughput = throughput::run(options)?;
    let root = workspace_root();
    let pipeline_options = rsc::proxy_options();
    let replay = rsc::load(&root)?;
    let captures = rsc::analyze(&replay, &cases::proxy_rule(), &pipeline_options)?;
    let servers = start_servers(&options.out)?;
    let cases = cases::all(options.quick);
    latency::verify_outputs(&servers, &cases, &replay, &pipeline_options)?;
    // Before the load parts, while the processes are fresh.
    let guest = guest_cpu::run(
        servers.streaming[0],
        &servers.streaming_log,
        first_party::signed_image_url(&root)?,
        options.quick,
    )?;
    guest_cpu::print(&guest);
    let latency = latency::measure(&servers, &cases)?;
    let load = load::run(&servers, options)?;
    let fp = first_party::run(&root, &servers.partner, &servers.streaming, options.quick)?;
    let cached = cache::run(servers.origin, &servers.streaming, options.quick)?;
    let auctions = run_auctions(&servers, options.quick)?;
    let nav = navigation::run(servers.origin, &servers.streaming, options.quick)?;
    drop(servers);
    let mut results = report::results(&latency, &throughput, &load, &captures);
    results.extend(first_party::results(&fp));
    results.extend(cache::results(&cached));
    results.extend(guest_cpu::results(&guest));
    results.extend(auction::results(&auctions));
    results.extend(navigation::results(&nav));
    report::print_tables(&latency, &throughput, &load, &captures);
    first_party::print(&fp);
    cache::print(&cached);
    auction::print(&auctions);
    navigation::print(&nav);
    let chart = options.out.join("latency.svg");
    report::write_svg(&chart, &latency).map_err(|e| format!("{}: {e}", chart.display()))?;
    println!("\nchart: {}", chart.display());
    finish(options, started, &results)
}

/// The auction cases on the streaming build's two processes.
fn run_auctions(servers: &Servers, quick: bool) -> Result<auction::AuctionResult, String> {
    let logs = [
        servers.streaming_log.as_path(),
        servers.streaming_log_2.as_path(),
    ];
    auction::run(servers.origin, &servers.streaming, &logs, quick)
}

/// The machine line, the time taken, `--compare` and `--save`, and the `---RESULTS---` block.
fn finish(options: &Options, started: Instant, results: &[(String, String)]) -> Result<(), String> {
    let machine = report::machine();
    println!("machine: {machine}");
    println!(
        "took {:.0}s{}",
        started.elapsed().as_secs_f64(),
        if options.quick { " (--quick)" } else { "" }
    );
    if let Some(name) = &options.compare {
        report::compare(&options.out, name, results)?;
    }
    if let Some(name) = &options.save {
        let path = report::save(&options.out, name, results, &machine)?;
        println!("saved as {name} ({})", path.display());
    }
    println!("\n---RESULTS---");
    for (k, v) in results {
        println!("{k}={v}");
    }
    Ok(())
}
