//! Latency: three timestamps per request from three sides, in interleaved rounds, plus the
//! share of each proxied page that arrived before the origin finished sending it.

use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use demo_origin::nextjs::Replay;
use e2e::{get, Timed};
use trusted_server_core::{PageOptions, UrlRule};

use crate::cases::{proxy_rule, Case, PUBLIC_HOST};
use crate::{Servers, PROCESSES};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Who answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The demo origin, no proxy.
    Direct,
    /// The proxy with `publisher.streaming = true`.
    Streaming,
    /// The same build with `publisher.streaming = false`.
    Buffered,
}

impl Side {
    /// All sides, in the order tables print them.
    pub const ALL: [Side; 3] = [Side::Direct, Side::Streaming, Side::Buffered];

    /// Name for tables and keys.
    pub fn name(self) -> &'static str {
        match self {
            Side::Direct => "direct",
            Side::Streaming => "streaming",
            Side::Buffered => "buffered",
        }
    }

    /// The address of `process` (of [`crate::PROCESSES`]) serving this side; the origin is one.
    fn addr(self, s: &Servers, process: usize) -> SocketAddr {
        match self {
            Side::Direct => s.origin,
            Side::Streaming => s.streaming[process],
            Side::Buffered => s.buffered[process],
        }
    }
}

/// One request's timings, in milliseconds from the request being written.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// End of the response head.
    pub headers_ms: f64,
    /// First body byte.
    pub first_body_ms: f64,
    /// Last byte.
    pub last_ms: f64,
    /// Share of the body that arrived before the origin sent its last byte (proxy sides).
    pub streamed_fraction: Option<f64>,
    /// Which of the side's processes answered (always 0 for the origin).
    pub process: usize,
}

/// All samples of one case, per side.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case.
    pub case: Case,
    /// Samples per side, in round order.
    pub samples: HashMap<Side, Vec<Sample>>,
    /// Body bytes of the proxied response (decoded).
    pub body_bytes: usize,
}

fn fetch(
    side: Side,
    servers: &Servers,
    process: usize,
    case: &Case,
    rid: u64,
) -> Result<(Timed, SystemTime), String> {
    let sep = if case.path.contains('?') { '&' } else { '?' };
    let path = format!("{}{sep}rid={rid}", case.path);
    let mut headers = vec![("accept-encoding", case.encoding)];
    headers.extend_from_slice(case.headers);
    if side != Side::Direct {
        headers.push(("host", PUBLIC_HOST));
    }
    let sent_at = SystemTime::now();
    let r = get(side.addr(servers, process), &path, &headers, TIMEOUT)
        .map_err(|e| format!("{} {path}: {e}", side.name()))?;
    if r.status != 200 || !r.complete {
        return Err(format!(
            "{} {path}: status {} complete {}",
            side.name(),
            r.status,
            r.complete
        ));
    }
    Ok((r, sent_at))
}

fn decoded(r: &Timed) -> Result<Vec<u8>, String> {
    match r.header("content-encoding") {
        None | Some("identity") => Ok(r.body.clone()),
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&r.body[..])
                .read_to_end(&mut out)
                .map_err(|e| format!("gunzip: {e}"))?;
            Ok(out)
        }
        Some(other) => Err(format!("unexpected content-encoding {other}")),
    }
}

/// What the proxy must return for a replayed Next.js page: the core pipeline run natively, with
/// the proxy's settings and URL rule, over the origin's bytes in the capture's chunks. The
/// direct response must be the capture itself.
fn rsc_reference(
    case: &Case,
    capture: &str,
    direct: &Timed,
    replay: &Replay,
    options: &PageOptions,
    rule: &UrlRule,
) -> Result<Vec<u8>, String> {
    let c = replay
        .captures()
        .iter()
        .find(|c| c.name == capture)
        .ok_or_else(|| format!("{}: no capture named {capture}", case.name))?;
    let body = decoded(direct)?;
    if body != *c.body || direct.header("content-type") != c.content_type.as_deref() {
        return Err(format!(
            "{}: the origin did not answer with the {capture} capture",
            case.name
        ));
    }
    let lens: Vec<usize> = c.chunks.iter().map(|ch| ch.len).collect();
    let (want, _, _) =
        crate::rsc::reference(c.content_type.as_deref(), &body, &lens, rule, options)
            .map_err(|e| format!("{}: {e}", case.name))?;
    Ok(want)
}

/// Before timing anything: the streaming and buffered proxies must return exactly the
/// origin's page with the URL rule applied, in the same content coding, and the same bytes.
/// For a replayed Next.js page the expected output is the core pipeline's, run natively
/// ([`crate::rsc::reference`]); a plain replacement would get `T` row lengths wrong.
///
/// # Errors
/// A message naming the case and side that differ.
pub fn verify_outputs(
    servers: &Servers,
    cases: &[Case],
    replay: &Replay,
    options: &PageOptions,
) -> Result<(), String> {
    let rule = proxy_rule();
    for case in cases {
        let (direct, _) = fetch(Side::Direct, servers, 0, case, 0)?;
        let want = match case.capture {
            Some(capture) => rsc_reference(case, capture, &direct, replay, options, &rule)?,
            None => rule.rewrite_all(&decoded(&direct)?),
        };
        let mut outputs = Vec::new();
        let sides = [Side::Streaming, Side::Buffered];
        for (side, process) in sides
            .into_iter()
            .flat_map(|s| (0..PROCESSES).map(move |p| (s, p)))
        {
            let (r, _) = fetch(side, servers, process, case, 0)?;
            if r.header("content-encoding") != direct.header("content-encoding") {
                return Err(format!(
                    "{}: {} changed the content coding",
                    case.name,
                    side.name()
                ));
            }
            let mut got = decoded(&r)?;
            if case.is_navigation() {
                got = without_script_tag(&got).ok_or_else(|| {
                    format!("{}: {} has not one script tag", case.name, side.name())
                })?;
            }
            if got != want {
                return Err(format!(
                    "{}: {} output differs from the origin's page with the URL rule applied{}",
                    case.name,
                    side.name(),
                    if case.is_rsc() {
                        " (by the core pipeline, run natively)"
                    } else {
                        ""
                    }
                ));
            }
            outputs.push(got);
        }
        if outputs.iter().any(|o| *o != outputs[0]) {
            return Err(format!(
                "{}: streaming and buffered (or two processes of one) differ",
                case.name
            ));
        }
        eprintln!(
            "bench: verified {} ({} bytes): direct, streaming and buffered (each process) agree{}",
            case.name,
            want.len(),
            if case.is_rsc() {
                "; the proxy's Flight output is the native pipeline's"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// `page` without the first-party script's tag (`<script src="/static/tsjs=…"…></script>`),
/// or `None` unless it holds exactly one.
fn without_script_tag(page: &[u8]) -> Option<Vec<u8>> {
    let find = |from: usize, needle: &[u8]| {
        page[from..]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|i| from + i)
    };
    let start = find(0, b"<script src=\"/static/tsjs=")?;
    let end = find(start, b"</script>")? + b"</script>".len();
    if find(end, b"/static/tsjs=").is_some() {
        return None;
    }
    Some([&page[..start], &page[end..]].concat())
}

/// A proxied request whose streamed fraction is computed once the origin log is complete.
struct Pending {
    case: usize,
    side: Side,
    index: usize,
    rid: u64,
    sent_at: SystemTime,
    progress: Vec<(Duration, usize)>,
    total: usize,
}

/// Runs every case's rounds. In round `r` the sides go in a balanced order
/// (`crate::order`), so no side is always first (warmest) or last, or always after the same
/// side.
///
/// # Errors
/// Any failed request.
pub fn measure(servers: &Servers, cases: &[Case]) -> Result<Vec<CaseResult>, String> {
    let mut results = Vec::new();
    let mut pending = Vec::new();
    let mut rid = 1u64;
    for (ci, case) in cases.iter().enumerate() {
        eprintln!("bench: latency {} ({} rounds)", case.name, case.rounds);
        // Warm-up, not recorded.
        for side in Side::ALL {
            for process in 0..PROCESSES {
                fetch(side, servers, process, case, 0)?;
            }
        }
        let mut samples: HashMap<Side, Vec<Sample>> = HashMap::new();
        let mut body_bytes = 0;
        for round in 0..case.rounds {
            // Both builds alternate between their processes, round by round.
            let process = round % PROCESSES;
            for k in crate::order::balanced(round / PROCESSES, Side::ALL.len()) {
                let side = Side::ALL[k];
                let process = if side == Side::Direct { 0 } else { process };
                let (r, sent_at) = fetch(side, servers, process, case, rid)?;
                let ms = |d: Duration| d.as_secs_f64() * 1000.0;
                let list = samples.entry(side).or_default();
                if side != Side::Direct {
                    body_bytes = r.body.len();
                }
                {
                    // For the direct side this is the ceiling: what the origin itself got
                    // to the client before its last byte.
                    pending.push(Pending {
                        case: ci,
                        side,
                        index: list.len(),
                        rid,
                        sent_at,
                        progress: r.progress.clone(),
                        total: r.body.len(),
                    });
                }
                list.push(Sample {
                    headers_ms: ms(r.headers_at),
                    first_body_ms: ms(r.first_body_at.unwrap_or(r.last_at)),
                    last_ms: ms(r.last_at),
                    streamed_fraction: None,
                    process,
                });
                rid += 1;
            }
        }
        results.push(CaseResult {
            case: case.clone(),
            samples,
            body_bytes,
        });
    }
    attach_streamed_fractions(servers, &mut results, &pending)?;
    Ok(results)
}

/// Reads `end_unix_us` per `rid` from the origin log.
fn origin_end_times(log: &std::path::Path) -> Result<HashMap<u64, u128>, String> {
    // The origin logs a request just after its last byte; give the last lines a moment.
    std::thread::sleep(Duration::from_millis(200));
    let text = std::fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut ends = HashMap::new();
    for line in text.lines() {
        let rid = line
            .split(['?', '&', ' '])
            .find_map(|p| p.strip_prefix("rid="))
            .and_then(|v| v.parse::<u64>().ok());
        let end = line
            .split_whitespace()
            .find_map(|p| p.strip_prefix("end_unix_us="))
            .and_then(|v| v.parse::<u128>().ok());
        if let (Some(rid), Some(end)) = (rid, end) {
            ends.insert(rid, end);
        }
    }
    Ok(ends)
}

fn attach_streamed_fractions(
    servers: &Servers,
    results: &mut [CaseResult],
    pending: &[Pending],
) -> Result<(), String> {
    let ends = origin_end_times(&servers.origin_log)?;
    for p in pending {
        let Some(&end_us) = ends.get(&p.rid) else {
            return Err(format!("origin log has no entry for request {}", p.rid));
        };
        let sent_us = p
            .sent_at
            .duration_since(UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_micros();
        let origin_done = Duration::from_micros(
            u64::try_from(end_us.saturating_sub(sent_us)).unwrap_or(u64::MAX),
        );
        let before = p
            .progress
            .iter()
            .take_while(|(t, _)| *t <= origin_done)
            .last()
            .map_or(0, |(_, n)| *n);
        let fraction = if p.total == 0 {
            1.0
        } else {
            before as f64 / p.total as f64
        };
        if let Some(s) = results[p.case]
            .samples
            .get_mut(&p.side)
            .and_then(|v| v.get_mut(p.index))
        {
            s.streamed_fraction = Some(fraction);
        }
    }
    Ok(())
}
