//! `--guest-only`: guest time per request of today's build against a baseline revision's, in
//! one interleaved run, beside its A/A control.
//!
//! Today's tree is built as the full run's streaming build (the same overrides) and runs in two
//! Viceroy processes; with `--baseline-rev REV`, the service of revision `REV`, built with the
//! same overrides ([`crate::baseline`]), runs in two more, so that each build's median pools
//! two processes alike and neither side's figure rests on one process's luck. The guest time
//! of a request is read from its access line, as [`crate::guest_cpu`] reads it (end less the origin's wait), for
//! the five kinds of request of the full run, a 32 KB page, `/_ts/health` (the floor: no origin, no
//! cache, no page), and a navigation of the small page
//! with Chrome's headers and no cookie, so the edge ID is made and set. Every request names
//! the same host ([`PUBLIC_HOST`]), so the processes rewrite the pages alike.
//!
//! Before timing, every process answers each case's warm-ups with the same body bytes (the
//! headers may differ), and the navigation's answers set an edge ID; else the run stops,
//! naming the case. Then, per case, rounds of one request to each process, in a balanced
//! order (`crate::order`), so no process always goes first or after the same one; each
//! process's access lines for the case must be the requests' own (path, and `cache=HIT` for
//! the cache hit).
//!
//! Two processes of one module read apart (`crate::PROCESSES`), so the baseline's difference
//! from today's build means something only where it is larger than how far one build's two
//! processes read apart: the A/A control, `guest_<case>_aa`, the larger of the two builds'.
//! Builds before 29 Nov 2026 wrote the access line's times in 0.1 ms; those parse too, with a
//! warning that the baseline's medians are that coarse.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::trust::start_viceroy;
use e2e::{build_service, ChildGuard};

use crate::cases::PUBLIC_HOST;
use crate::guest_cpu::{fetch, log_len, read_lines, requests, warm_up, Request};
use crate::stats::{median, percentile};

/// The navigation case, whose answers must set an edge ID.
const NAVIGATION: &str = "small_page_navigation";

/// The cases the bare guest (`crates/bare-guest`) answers: the floor under each of them.
const BARE_CASES: [&str; 4] = ["health", "small_page", "cache_hit", "32kb_page"];

/// Which build a process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    Current,
    Baseline,
    /// The bare guest: the platform's part of a request and nothing of the service's.
    Bare,
}

impl Process {
    /// Whether this process is asked for `r`: the service's builds answer every case, the bare
    /// guest only [`BARE_CASES`].
    fn serves(&self, r: &Request) -> bool {
        self.build != Build::Bare || BARE_CASES.contains(&r.name)
    }
}

/// One Viceroy process under test.
struct Process {
    /// How the table and the keys name it.
    name: &'static str,
    build: Build,
    addr: SocketAddr,
    /// Its Viceroy log, where its access lines are.
    log: PathBuf,
}

/// One process's guest time for a case, µs.
#[derive(Debug, Clone, Copy)]
pub struct Quartiles {
    /// A quarter of the requests took this or less.
    pub p25: f64,
    /// The median.
    pub p50: f64,
    /// Three quarters took this or less.
    pub p75: f64,
}

impl Quartiles {
    fn of(us: &[f64]) -> Quartiles {
        Quartiles {
            p25: percentile(us, 0.25),
            p50: median(us.to_vec()),
            p75: percentile(us, 0.75),
        }
    }
}

/// One case's figures, µs.
#[derive(Debug, Clone)]
pub struct CaseFigures {
    /// The case's key: `small_page`, `110kb_page`, ….
    pub name: &'static str,
    /// Each process's, in [`GuestAb::processes`]' order (`None`: the process is not asked for
    /// this case).
    pub per_process: Vec<Option<Quartiles>>,
    /// The median over both current processes' requests.
    pub current: f64,
    /// The median over both baseline processes' requests, when there is a baseline.
    pub baseline: Option<f64>,
    /// The median over both bare-guest processes' requests, for [`BARE_CASES`]: the floor.
    pub bare: Option<f64>,
    /// The A/A control: one build's two processes' medians, the larger over the smaller; the
    /// larger of the two builds' when there is a baseline.
    pub aa: f64,
}

impl CaseFigures {
    /// Today's build over the baseline, medians: below 1, today's costs less.
    pub fn current_over_baseline(&self) -> Option<f64> {
        self.baseline.map(|b| self.current / b)
    }

    /// What today's build adds to the floor, medians (µs).
    pub fn over_bare(&self) -> Option<f64> {
        self.bare.map(|b| self.current - b)
    }
}

/// The run's figures.
#[derive(Debug, Clone)]
pub struct GuestAb {
    /// The processes' names, in the order the figures give them.
    pub processes: Vec<&'static str>,
    /// Per case.
    pub cases: Vec<CaseFigures>,
    /// Rounds per case.
    pub rounds: usize,
    /// The baseline's commit (full hash), when there is one.
    pub baseline: Option<String>,
    /// Every time the baseline logged was a multiple of 0.1 ms: an older access line.
    pub baseline_coarse: bool,
}

/// Builds and starts the processes, checks their answers, and times the cases.
///
/// # Errors
/// A revision that is no commit, a build or a request that fails, a body that differs between
/// processes, or access lines that are not the requests'.
pub fn run(
    root: &Path,
    origin: SocketAddr,
    partner: SocketAddr,
    baseline_rev: Option<&str>,
    quick: bool,
) -> Result<GuestAb, String> {
    // Before anything is built: a wrong revision should not cost a build.
    let commit = (baseline_rev.map(|rev| crate::baseline::resolve(root, rev))).transpose()?;
    let (processes, _guards) = start(root, origin, partner, commit.as_deref())?;
    let cases = cases(crate::first_party::signed_image_url(root)?);
    for r in &cases {
        check_answers(&processes, r)?;
    }
    let rounds = if quick { 31 } else { 101 };
    let mut figures = Vec::new();
    let mut baseline_ms = Vec::new();
    for r in &cases {
        let ms = interleave(&processes, r, rounds)?;
        let baseline = (processes.iter().zip(&ms)).filter(|(p, _)| p.build == Build::Baseline);
        baseline_ms.extend(baseline.flat_map(|(_, t)| t.iter().copied()));
        figures.push(case_figures(r.name, &processes, &ms));
    }
    Ok(GuestAb {
        processes: processes.iter().map(|p| p.name).collect(),
        cases: figures,
        rounds,
        baseline_coarse: commit.is_some() && coarse(&baseline_ms),
        baseline: commit,
    })
}

/// The figures of case `name` from each process's times (ms, in `processes`' order).
fn case_figures(name: &'static str, processes: &[Process], ms: &[Vec<f64>]) -> CaseFigures {
    let us: Vec<Vec<f64>> = (ms.iter())
        .map(|t| t.iter().map(|v| v * 1000.0).collect())
        .collect();
    let of = |build| -> Vec<&Vec<f64>> {
        (processes.iter().zip(&us))
            .filter(|(p, _)| p.build == build)
            .map(|(_, t)| t)
            .collect()
    };
    // One build's processes: its pooled median, and its A/A (larger median over smaller).
    let build = |processes: Vec<&Vec<f64>>| {
        let medians: Vec<f64> = processes.iter().map(|t| median(t.to_vec())).collect();
        let [low, high] = [f64::min, f64::max].map(|pick| medians.iter().copied().reduce(pick));
        let pooled = median(processes.into_iter().flatten().copied().collect());
        (pooled, high.zip(low).map(|(h, l)| h / l))
    };
    let (current, current_aa) = build(of(Build::Current));
    let baseline = Some(of(Build::Baseline))
        .filter(|p| !p.is_empty())
        .map(build);
    let bare: Vec<f64> = of(Build::Bare).into_iter().flatten().copied().collect();
    let aa = match baseline.and_then(|(_, aa)| aa) {
        Some(base_aa) => current_aa.map_or(base_aa, |aa| aa.max(base_aa)),
        None => current_aa.unwrap_or(f64::NAN),
    };
    CaseFigures {
        name,
        per_process: (us.iter())
            .map(|t| (!t.is_empty()).then(|| Quartiles::of(t)))
            .collect(),
        current,
        baseline: baseline.map(|(median, _)| median),
        bare: (!bare.is_empty()).then(|| median(bare)),
        aa,
    }
}

/// Whether every time in `ms` is a whole number of tenths of a millisecond (and there are
/// some): what an access line with one decimal gives.
fn coarse(ms: &[f64]) -> bool {
    !ms.is_empty()
        && ms
            .iter()
            .all(|t| ((t * 10.0).round() - t * 10.0).abs() < 1e-6)
}

/// Builds today's tree and, with `commit`, the baseline, both with the full run's streaming
/// overrides, and the bare guest for the same origin, then starts two processes of each
/// module; their logs go to `target/bench`.
fn start(
    root: &Path,
    origin: SocketAddr,
    partner: SocketAddr,
    commit: Option<&str>,
) -> Result<(Vec<Process>, Vec<ChildGuard>), String> {
    let dir = root.join("target/bench");
    let overrides = crate::streaming_overrides(origin, partner);
    eprintln!("bench: building the service (streaming) for the origin on {origin}");
    let current = build_service(root, &dir.join("guest-current.wasm"), &overrides)?;
    let mut modules = vec![
        ("current_a", Build::Current, current.clone()),
        ("current_b", Build::Current, current),
    ];
    if let Some(commit) = commit {
        eprintln!("bench: building the service of {commit} (the baseline) in a worktree");
        let to = dir.join("guest-baseline.wasm");
        let wasm = crate::baseline::build(root, commit, &to, &overrides)?;
        modules.push(("baseline_a", Build::Baseline, wasm.clone()));
        modules.push(("baseline_b", Build::Baseline, wasm));
    }
    eprintln!("bench: building the bare guest (the floor) for the origin on {origin}");
    let bare = build_bare(root, &dir.join("guest-bare.wasm"), origin)?;
    modules.push(("bare_a", Build::Bare, bare.clone()));
    modules.push(("bare_b", Build::Bare, bare));
    let manifest = root.join("fastly.toml");
    let mut processes = Vec::new();
    let mut guards = Vec::new();
    for (name, build, wasm) in modules {
        let log = dir.join(format!("viceroy-guest-{name}.log"));
        let (guard, addr) =
            start_viceroy(&wasm, &manifest, &log).map_err(|e| format!("viceroy ({name}): {e}"))?;
        guards.push(guard);
        processes.push(Process {
            name,
            build,
            addr,
            log,
        });
    }
    Ok((processes, guards))
}

/// Builds the bare guest (`crates/bare-guest`, release, wasm32-wasip1) for `origin` and copies
/// the module to `to`.
fn build_bare(root: &Path, to: &Path, origin: SocketAddr) -> Result<PathBuf, String> {
    let mut cmd = std::process::Command::new(e2e::cargo());
    cmd.current_dir(root)
        .args(["build", "--quiet", "--release", "--locked"])
        .args(["--target", "wasm32-wasip1", "-p", "bare-guest"])
        .env("BARE_GUEST_ORIGIN", origin.to_string());
    e2e::run(&mut cmd)?;
    let built = e2e::target_dir(root).join("wasm32-wasip1/release/bare-guest.wasm");
    std::fs::copy(&built, to).map_err(|e| format!("copy {}: {e}", built.display()))?;
    Ok(to.to_path_buf())
}

/// The full run's five requests ([`requests`]), a 32 KB page and `/_ts/health` (the floor),
/// each naming [`PUBLIC_HOST`], and the small page as Chrome navigates to it, without a cookie.
fn cases(first_party: String) -> Vec<Request> {
    let mut list = requests(first_party);
    list.push(Request::get(
        "32kb_page",
        "/__gen/32kb.html".into(),
        "/__gen/32kb.html",
    ));
    // The floor: a fixed answer with no origin, no cache and no page, so what every request
    // pays the platform and the guest's start whatever it asks for.
    list.push(Request::get("health", "/_ts/health".into(), "/_ts/health"));
    for r in &mut list {
        r.headers.push(("host", PUBLIC_HOST));
    }
    list.push(Request {
        headers: crate::navigation::navigation(false),
        ..Request::get(NAVIGATION, "/embed/poll.html".into(), "/embed/poll.html")
    });
    list
}

/// Warms `r` up on every process that serves it and checks the answers: the same body bytes
/// from every process of the service's builds, and from both of the bare guest's (which
/// rewrites nothing, so its bytes are its own), and for the navigation an edge ID set each
/// time.
fn check_answers(processes: &[Process], r: &Request) -> Result<(), String> {
    let service = processes.iter().filter(|p| p.build != Build::Bare);
    let bare = processes.iter().filter(|p| p.build == Build::Bare);
    same_answers(service, r)?;
    same_answers(bare.filter(|p| p.serves(r)), r)
}

/// [`check_answers`] over one group of processes that must answer `r` alike.
fn same_answers<'p>(
    processes: impl Iterator<Item = &'p Process>,
    r: &Request,
) -> Result<(), String> {
    let mut first: Option<(&str, Vec<u8>)> = None;
    for p in processes {
        for got in warm_up(p.addr, &p.log, r)? {
            if r.name == NAVIGATION && got.edge_id_set().is_none() {
                return Err(format!("guest {}: {} set no edge ID", r.name, p.name));
            }
            match &first {
                None => first = Some((p.name, got.body)),
                Some((name, want)) => e2e::same_bytes(&got.body, want).map_err(|e| {
                    format!(
                        "guest {}: {}'s body is not {name}'s, so the builds do different work: {e}",
                        r.name, p.name
                    )
                })?,
            }
        }
    }
    Ok(())
}

/// `rounds` rounds of one request of `r` to each process that serves it, in a balanced order
/// (`crate::order`); returns each process's guest times (ms), in `processes`' order (none
/// for a process not asked).
fn interleave(processes: &[Process], r: &Request, rounds: usize) -> Result<Vec<Vec<f64>>, String> {
    let marks = (processes.iter())
        .map(|p| log_len(&p.log))
        .collect::<Result<Vec<_>, _>>()?;
    let asked: Vec<&Process> = processes.iter().filter(|p| p.serves(r)).collect();
    for round in 0..rounds {
        for k in crate::order::balanced(round, asked.len()) {
            let p = asked[k];
            fetch(p.addr, r, r.cache)?;
        }
    }
    (processes.iter().zip(marks))
        .map(|(p, mark)| match p.serves(r) {
            true => read_lines(&p.log, mark, r, rounds),
            false => Ok(Vec::new()),
        })
        .collect()
}

/// Prints the table, and the warning when the baseline's times are coarse.
pub fn print(g: &GuestAb) {
    let against = g.baseline.as_deref().map_or_else(
        || "today's build, no baseline".to_owned(),
        |c| format!("today's build against {}", &c[..c.len().min(12)]),
    );
    println!(
        "\nguest time per request ({against}; access line: end - origin wait), {} interleaved \
         rounds, µs: median (p25-p75)",
        g.rounds
    );
    let mut head = format!("{:<22}", "case");
    for name in &g.processes {
        head.push_str(&format!(" {name:>17}"));
    }
    println!(
        "{head} {:>8} {:>8} {:>9} {:>6} {:>6} {:>8}",
        "current", "baseline", "cur/base", "A/A", "bare", "cur-bare"
    );
    for c in &g.cases {
        println!("{}", row(c));
    }
    if g.baseline.is_some() {
        println!(
            "read cur/base against A/A: a ratio no farther from 1 than the A/A is no difference \
             this run can tell"
        );
    }
    println!(
        "bare: the bare guest (crates/bare-guest), the platform's part of the request alone: \
         cur-bare is what the service's own work costs"
    );
    if g.baseline_coarse {
        println!(
            "warning: every time the baseline logged is a multiple of 0.1 ms: its access line \
             has one decimal, so its medians are that coarse"
        );
    }
}

/// One case's line of the table: each process's median and quartiles, today's median, the
/// baseline's, their ratio, the A/A.
fn row(c: &CaseFigures) -> String {
    let mut row = format!("{:<22}", c.name);
    for q in &c.per_process {
        let spread = q.map_or("-".to_owned(), |q| {
            format!("{:.0} ({:.0}-{:.0})", q.p50, q.p25, q.p75)
        });
        row.push_str(&format!(" {spread:>17}"));
    }
    let or_dash =
        |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    format!(
        "{row} {:>8.0} {:>8} {:>9} {:>6.3} {:>6} {:>8}",
        c.current,
        or_dash(c.baseline, 0),
        or_dash(c.current_over_baseline(), 3),
        c.aa,
        or_dash(c.bare, 0),
        or_dash(c.over_bare(), 0)
    )
}

/// The `---RESULTS---` lines.
pub fn results(g: &GuestAb) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in &g.cases {
        let name = c.name;
        out.push((
            format!("guest_us_{name}_current"),
            format!("{:.0}", c.current),
        ));
        if let (Some(b), Some(ratio)) = (c.baseline, c.current_over_baseline()) {
            out.push((format!("guest_us_{name}_baseline"), format!("{b:.0}")));
            out.push((
                format!("guest_{name}_current_over_baseline"),
                format!("{ratio:.3}"),
            ));
        }
        out.push((format!("guest_{name}_aa"), format!("{:.3}", c.aa)));
        if let Some(bare) = c.bare {
            out.push((format!("guest_us_{name}_bare"), format!("{bare:.0}")));
        }
        let asked = g.processes.iter().zip(&c.per_process);
        for (process, q) in asked.filter_map(|(p, q)| Some((p, (*q)?))) {
            for (which, v) in [("p25", q.p25), ("p50", q.p50), ("p75", q.p75)] {
                out.push((
                    format!("guest_us_{name}_{process}_{which}"),
                    format!("{v:.0}"),
                ));
            }
        }
    }
    out.push(("guest_rounds".to_owned(), g.rounds.to_string()));
    if let Some(commit) = &g.baseline {
        out.push(("guest_baseline_rev".to_owned(), commit.clone()));
        out.push((
            "guest_baseline_coarse".to_owned(),
            u8::from(g.baseline_coarse).to_string(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(name: &'static str, build: Build) -> Process {
        Process {
            name,
            build,
            addr: ([127, 0, 0, 1], 1).into(),
            log: PathBuf::new(),
        }
    }

    #[test]
    fn tenths_of_a_millisecond_are_coarse() {
        assert!(coarse(&[0.4, 1.2, 0.3 - 0.1, 2.0]));
        assert!(!coarse(&[0.4, 1.234]));
        assert!(!coarse(&[]));
    }

    #[test]
    fn each_median_pools_its_builds_processes_and_the_control_is_the_wider_builds() {
        let processes = [
            process("current_a", Build::Current),
            process("current_b", Build::Current),
            process("baseline_a", Build::Baseline),
            process("baseline_b", Build::Baseline),
        ];
        let ms = [
            vec![0.1, 0.2, 0.3],
            vec![0.3, 0.4, 0.5],
            vec![0.5, 0.5, 0.6],
            vec![0.5, 0.6, 0.7],
        ];
        let c = case_figures("t", &processes, &ms);
        assert!((c.current - 300.0).abs() < 1e-6, "{c:?}");
        // Pooled: 0.5 0.5 0.5 0.6 0.6 0.7, whose median `stats::median` takes as the upper
        // middle.
        assert!((c.baseline.unwrap() - 600.0).abs() < 1e-6, "{c:?}");
        // Today's processes read 0.2 and 0.4 (2.0), the baseline's 0.5 and 0.6 (1.2).
        assert!((c.aa - 2.0).abs() < 1e-9, "{c:?}");
        assert!((c.current_over_baseline().unwrap() - 0.5).abs() < 1e-9);
        // The baseline's own spread counts when it is the wider.
        let ms = [vec![0.2], vec![0.2], vec![0.2], vec![0.6]];
        assert!((case_figures("t", &processes, &ms).aa - 3.0).abs() < 1e-9);
        assert!((c.per_process[1].unwrap().p25 - 300.0).abs() < 1e-6);
        assert!((c.per_process[1].unwrap().p75 - 500.0).abs() < 1e-6);
    }

    #[test]
    fn the_bare_guest_is_the_floor_and_no_part_of_the_control() {
        let processes = [
            process("current_a", Build::Current),
            process("current_b", Build::Current),
            process("bare_a", Build::Bare),
            process("bare_b", Build::Bare),
        ];
        let ms = [vec![0.4], vec![0.5], vec![0.1], vec![0.3]];
        let c = case_figures("t", &processes, &ms);
        // Pooled 0.1 and 0.3: `stats::median` takes the upper middle.
        assert!((c.bare.unwrap() - 300.0).abs() < 1e-6, "{c:?}");
        assert!((c.over_bare().unwrap() - 200.0).abs() < 1e-6, "{c:?}");
        // The bare guest's 3x spread is not the service's control.
        assert!((c.aa - 1.25).abs() < 1e-9, "{c:?}");
        // A case the bare guest is not asked for has no floor and no quartiles for it.
        let c = case_figures("t", &processes, &[vec![0.4], vec![0.5], vec![], vec![]]);
        assert_eq!(c.bare, None);
        assert!(c.per_process[2].is_none() && c.per_process[0].is_some());
        let small = Request::get("small_page", String::new(), "/");
        let other = Request::get("110kb_page", String::new(), "/");
        assert!(processes[2].serves(&small) && !processes[2].serves(&other));
        assert!(processes[0].serves(&other));
    }

    #[test]
    fn without_a_baseline_there_is_no_ratio_to_it() {
        let processes = [
            process("current_a", Build::Current),
            process("current_b", Build::Current),
        ];
        let c = case_figures("t", &processes, &[vec![0.2], vec![0.2]]);
        assert_eq!(c.baseline, None);
        assert_eq!(c.current_over_baseline(), None);
        assert!((c.aa - 1.0).abs() < 1e-9);
    }
}
