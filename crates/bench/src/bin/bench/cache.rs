//! Cached rewrites: a 110 KB page the origin marks cacheable, through the streaming build as a
//! **hit** (the stored rewrite), as a **miss** (origin, pipeline and the insert, streamed back
//! from the entry), and straight from the **origin**, in interleaved rounds; the results are
//! ratios of the medians of the time to the last byte, hit ÷ miss and hit ÷ origin.
//!
//! Every miss needs its own key: each round's miss carries a query parameter no other request
//! used (`miss=<run>-<round>`), which the demo origin ignores and the key includes. The hits
//! all read one entry per process (`hit=<run>`), filled before timing. Both processes of the
//! build are used, alternately, as in the latency run (each has its own cache).
//!
//! The A/A control is a second hit in every round (the same request again): its median over the
//! first hit's says how far two measurements of one thing read apart on this machine. A hit ÷
//! miss figure inside it is a difference the run cannot tell apart.
//!
//! Then the **hit ratio of two reader populations** on a page the origin marks `max-age` (not
//! `public`), one fresh entry per process: readers with no cookie, and readers whose only
//! cookies are a consent management platform's (`euconsent-v2`, `__gpp`, `__gpp_sid`,
//! `usprivacy`) and the service's `ts-ec`, each reader with values of its own. Each population
//! makes the same number of requests; the ratio is HITs over requests (the first request of each
//! process fills, so the best possible is `1 - processes / requests`). The anonymous readers
//! are the control: consent readers at the same ratio lose nothing to their cookies.
//!
//! Before timing, the hit and a miss must return the same bytes, and those must be the origin's
//! page with the URL rule applied (the same oracle as the latency run); every timed response
//! must carry the `x-ts-cache` verdict its side expects, so a miss that hit (or the reverse)
//! fails the run instead of skewing it.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use e2e::{get, Timed};

use crate::cases::{proxy_rule, PUBLIC_HOST};
use crate::report::RoundRatio;
use crate::stats::median;

/// The page: 110 KB of generated HTML, stored for an hour (longer than any run).
pub const PAGE: &str = "/__gen/110kb.html?cache_control=public%2C%20max-age%3D3600";
const TIMEOUT: Duration = Duration::from_secs(30);

/// Medians of the time to the last byte (ms) per side, and the round ratios.
#[derive(Debug, Clone)]
pub struct CacheResult {
    /// Hit, median ms.
    pub hit_ms: f64,
    /// The second hit of each round (the A/A control), median ms.
    pub hit_again_ms: f64,
    /// Miss, median ms.
    pub miss_ms: f64,
    /// Direct from the origin, median ms.
    pub origin_ms: f64,
    /// Per-round hit ÷ miss.
    pub over_miss: RoundRatio,
    /// Per-round hit ÷ origin.
    pub over_origin: RoundRatio,
    /// Rounds measured.
    pub rounds: usize,
    /// Hit ratio of readers without cookies (the control).
    pub anonymous_hit_ratio: f64,
    /// Hit ratio of readers with consent cookies only.
    pub consent_hit_ratio: f64,
    /// Requests per population.
    pub ratio_requests: usize,
}

impl CacheResult {
    /// Hit ÷ miss, ratio of medians.
    pub fn hit_over_miss(&self) -> f64 {
        self.hit_ms / self.miss_ms
    }

    /// Hit ÷ origin, ratio of medians.
    pub fn hit_over_origin(&self) -> f64 {
        self.hit_ms / self.origin_ms
    }

    /// The A/A control as a factor ≥ 1: second hit over first, or its inverse.
    pub fn aa(&self) -> f64 {
        let r = self.hit_again_ms / self.hit_ms;
        r.max(1.0 / r)
    }
}

/// One side of a round.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Hit,
    HitAgain,
    Miss,
    Origin,
}

/// Requests `path` from `addr`; through the proxy, checks the `x-ts-cache` verdict.
fn fetch(addr: SocketAddr, path: &str, proxied: bool, want: &str) -> Result<Timed, String> {
    let r = fetch_as(addr, path, proxied, None)?;
    if proxied && r.header("x-ts-cache") != Some(want) {
        return Err(format!(
            "cache {path}: x-ts-cache {:?}, expected {want}",
            r.header("x-ts-cache")
        ));
    }
    Ok(r)
}

/// Requests `path` from `addr` with `cookie`, if any; a complete `200` or an error.
fn fetch_as(
    addr: SocketAddr,
    path: &str,
    proxied: bool,
    cookie: Option<&str>,
) -> Result<Timed, String> {
    let mut headers = vec![("accept-encoding", "identity")];
    if proxied {
        headers.push(("host", PUBLIC_HOST));
    }
    if let Some(cookie) = cookie {
        headers.push(("cookie", cookie));
    }
    let r = get(addr, path, &headers, TIMEOUT).map_err(|e| format!("cache {path}: {e}"))?;
    if r.status != 200 || !r.complete {
        return Err(format!(
            "cache {path}: status {} complete {}",
            r.status, r.complete
        ));
    }
    Ok(r)
}

/// A TC string (purpose 1 and vendor 755 consented; encoded by the IAB's reference library,
/// as in the e2e tests) and a GPP string (usca, no opt-out).
const TCF: &str = "CQeEcwAQeEcwAAKABBENBkFAAIAAAAAAAAYgF5wAQF5gAAAA.IF5wAQF5gAAA";
const GPP: &str = "DBABBg~BQoAAACA.QA";

/// The cookies of consent reader `n`: a CMP's, with an edge ID and a `usprivacy` of its own.
fn consent_cookies(n: usize) -> String {
    format!(
        "ts-ec={n:064x}.bench{}; euconsent-v2={TCF}; __gpp={GPP}; __gpp_sid=8; usprivacy=1{}NN",
        n % 10,
        if n.is_multiple_of(2) { 'Y' } else { 'N' }
    )
}

/// The hit ratio of `requests` readers, spread over the processes, on a fresh `max-age`
/// entry per process; `cookie` gives reader `n`'s cookies.
fn hit_ratio(
    proxies: &[SocketAddr],
    requests: usize,
    tag: &str,
    cookie: impl Fn(usize) -> Option<String>,
) -> Result<f64, String> {
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = format!("/__gen/110kb.html?cache_control=max-age%3D3600&{tag}={run_id}");
    let mut hits = 0;
    for n in 0..requests {
        let proxy = proxies[n % proxies.len()];
        let r = fetch_as(proxy, &path, true, cookie(n).as_deref())?;
        hits += usize::from(r.header("x-ts-cache") == Some("HIT"));
    }
    Ok(hits as f64 / requests as f64)
}

/// Checks the outputs, fills one entry per process, then measures.
pub fn run(origin: SocketAddr, proxies: &[SocketAddr], quick: bool) -> Result<CacheResult, String> {
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let hit_path = format!("{PAGE}&hit={run_id}");
    let miss_path =
        |round: usize, process: usize| format!("{PAGE}&miss={run_id}-{round}-{process}");
    let direct = fetch(origin, PAGE, false, "")?;
    let want = proxy_rule().rewrite_all(&direct.body);
    if want == direct.body {
        return Err("cache: the URL rule changes nothing on the page (wrong page?)".into());
    }
    for (process, &proxy) in proxies.iter().enumerate() {
        let miss = fetch(proxy, &hit_path, true, "MISS")?;
        let hit = fetch(proxy, &hit_path, true, "HIT")?;
        let other = fetch(proxy, &miss_path(usize::MAX, process), true, "MISS")?;
        for (name, r) in [("miss", &miss), ("hit", &hit), ("second miss", &other)] {
            if r.body != want {
                return Err(format!(
                    "cache: process {process}: the {name} differs from the origin's page with \
                     the URL rule applied ({} bytes, expected {})",
                    r.body.len(),
                    want.len()
                ));
            }
        }
    }
    let rounds = if quick { 41 } else { 201 };
    let sides = [Side::Hit, Side::Miss, Side::Origin, Side::HitAgain];
    let (mut hit, mut again, mut miss, mut direct_ms) = (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        let process = round % proxies.len();
        let proxy = proxies[process];
        // A balanced order each round (`crate::order`), so no side always runs on a warmer
        // machine or after the same side.
        for i in crate::order::balanced(round / proxies.len(), sides.len()) {
            let side = sides[i];
            let r = match side {
                Side::Hit | Side::HitAgain => fetch(proxy, &hit_path, true, "HIT")?,
                Side::Miss => fetch(proxy, &miss_path(round, process), true, "MISS")?,
                Side::Origin => fetch(origin, PAGE, false, "")?,
            };
            let ms = r.last_at.as_secs_f64() * 1000.0;
            match side {
                Side::Hit => hit.push(ms),
                Side::HitAgain => again.push(ms),
                Side::Miss => miss.push(ms),
                Side::Origin => direct_ms.push(ms),
            }
        }
    }
    let per_round = |b: &[f64]| RoundRatio::of(hit.iter().zip(b).map(|(x, y)| x / y).collect());
    let ratio_requests = if quick { 40 } else { 200 };
    let anonymous_hit_ratio = hit_ratio(proxies, ratio_requests, "anonymous", |_| None)?;
    let consent_hit_ratio = hit_ratio(proxies, ratio_requests, "consent", |n| {
        Some(consent_cookies(n))
    })?;
    Ok(CacheResult {
        anonymous_hit_ratio,
        consent_hit_ratio,
        ratio_requests,
        over_miss: per_round(&miss),
        over_origin: per_round(&direct_ms),
        hit_ms: median(hit.clone()),
        hit_again_ms: median(again),
        miss_ms: median(miss),
        origin_ms: median(direct_ms),
        rounds,
    })
}

/// The table.
pub fn print(c: &CacheResult) {
    println!("\ncached rewrites, 110 KB page (time to last byte, medians)");
    println!(
        "hit {:.3} ms, miss {:.3} ms, origin {:.3} ms; hit/miss {:.3} [{:.3}–{:.3}], \
         hit/origin {:.3} [{:.3}–{:.3}]; hit again/hit (A/A) {:.3}; {} rounds",
        c.hit_ms,
        c.miss_ms,
        c.origin_ms,
        c.hit_over_miss(),
        c.over_miss.lo,
        c.over_miss.hi,
        c.hit_over_origin(),
        c.over_origin.lo,
        c.over_origin.hi,
        c.aa(),
        c.rounds
    );
    println!(
        "hit ratio on a max-age page, {} requests each: readers without cookies {:.3}, \
         readers with consent cookies only {:.3}",
        c.ratio_requests, c.anonymous_hit_ratio, c.consent_hit_ratio
    );
}

/// The `---RESULTS---` lines: `cache_hit_over_miss_ttlb` and `cache_hit_over_origin_ttlb`
/// (ratios of medians) with the min and max of their per-round ratios, the A/A control
/// `cache_hit_aa_ttlb`, and the medians.
pub fn results(c: &CacheResult) -> Vec<(String, String)> {
    let f = |v: f64| format!("{v:.3}");
    [
        ("cache_hit_over_miss_ttlb", f(c.hit_over_miss())),
        ("cache_hit_over_miss_ttlb_min", f(c.over_miss.lo)),
        ("cache_hit_over_miss_ttlb_max", f(c.over_miss.hi)),
        ("cache_hit_over_origin_ttlb", f(c.hit_over_origin())),
        ("cache_hit_over_origin_ttlb_min", f(c.over_origin.lo)),
        ("cache_hit_over_origin_ttlb_max", f(c.over_origin.hi)),
        ("cache_hit_aa_ttlb", f(c.aa())),
        ("cache_hit_ms", f(c.hit_ms)),
        ("cache_miss_ms", f(c.miss_ms)),
        ("cache_origin_ms", f(c.origin_ms)),
        ("cache_hit_ratio_anonymous", f(c.anonymous_hit_ratio)),
        ("cache_hit_ratio_consent_cookies", f(c.consent_hit_ratio)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(hit: f64, again: f64, miss: f64, origin: f64) -> CacheResult {
        CacheResult {
            hit_ms: hit,
            hit_again_ms: again,
            miss_ms: miss,
            origin_ms: origin,
            over_miss: RoundRatio::of(vec![0.4, 0.5, 0.7]),
            over_origin: RoundRatio::of(vec![0.9, 1.1, 1.3]),
            rounds: 3,
            anonymous_hit_ratio: 0.95,
            consent_hit_ratio: 0.0,
            ratio_requests: 40,
        }
    }

    #[test]
    fn results_are_ratios_of_medians_with_the_round_spread() {
        let out = results(&result(2.0, 2.5, 4.0, 1.6));
        let get = |k: &str| {
            out.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("cache_hit_over_miss_ttlb"), Some("0.500"));
        assert_eq!(get("cache_hit_over_miss_ttlb_min"), Some("0.400"));
        assert_eq!(get("cache_hit_over_miss_ttlb_max"), Some("0.700"));
        assert_eq!(get("cache_hit_over_origin_ttlb"), Some("1.250"));
        assert_eq!(get("cache_hit_over_origin_ttlb_min"), Some("0.900"));
        assert_eq!(get("cache_hit_over_origin_ttlb_max"), Some("1.300"));
        assert_eq!(get("cache_hit_aa_ttlb"), Some("1.250"));
        assert_eq!(get("cache_miss_ms"), Some("4.000"));
        assert_eq!(get("cache_hit_ratio_anonymous"), Some("0.950"));
        assert_eq!(get("cache_hit_ratio_consent_cookies"), Some("0.000"));
    }

    #[test]
    fn the_control_is_a_factor_either_way() {
        assert_eq!(format!("{:.3}", result(2.0, 1.6, 4.0, 1.0).aa()), "1.250");
        assert_eq!(format!("{:.3}", result(2.0, 2.0, 4.0, 1.0).aa()), "1.000");
    }
}
