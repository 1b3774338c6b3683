//! What consent costs per request: reading the cookies (decoding every string) and deciding,
//! for the strings a busy reader carries. Platform-free, so `throughput consent` prints the
//! same cases natively and as wasm under `viceroy run`, next to the guest CPU of whole requests
//! in the benchmark's RESULTS block.
//!
//! The strings are the test strings of `crates/core/src/consent/fixtures.rs`, encoded by the
//! IAB reference libraries: a TC string with 515 vendor consents, their legitimate interests,
//! three publisher restrictions and a DisclosedVendors segment of 700 vendors (277 bytes), and
//! a GPP string with eight US sections (102 bytes).

use std::hint::black_box;
use std::time::{Duration, Instant};

use trusted_server_core::consent::{Decision, Jurisdiction, Signals};
use trusted_server_settings::{Consent, PartnerVendor, Settings};

#[path = "../../core/src/consent/fixtures.rs"]
mod fixtures;

/// The partner whose vendor consent each case also decides.
const PARTNER: &str = "ads.demo-partner.example";

/// The default consent settings, with [`PARTNER`] given TCF vendor 10 (one of the 515 the TC
/// string consents to, and disclosed), so the partner's verdict reads the vendor sections.
fn with_partner() -> Consent {
    Consent {
        partner_vendors: vec![PartnerVendor {
            domain: PARTNER.into(),
            vendor_id: 10,
        }]
        .into(),
        ..Settings::DEFAULT.consent
    }
}

/// Runs `f` in batches of `batch` and returns the median and 90th percentile time per call
/// over `samples` batches.
fn time(batch: u32, samples: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    for _ in 0..batch {
        f();
    }
    let mut times: Vec<Duration> = (0..samples.max(1))
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                f();
            }
            start.elapsed() / batch
        })
        .collect();
    times.sort_unstable();
    (times[times.len() / 2], times[times.len() * 9 / 10])
}

/// Times each case (read the cookies, place the reader, decide, decide for one partner) and
/// returns `consent.<case>.median_us=` and `consent.<case>.p90_us=` lines. `samples` batches of
/// 200 calls each; the benchmark uses 101, `cargo run --release -p ts-bench --bin throughput
/// consent` 301.
pub fn run_all(samples: usize) -> Vec<String> {
    let settings = with_partner();
    let filler = "_ga=GA1.1.1827526090.1689745728; session=abcdef0123456789";
    let tcf = format!("{filler}; euconsent-v2={}", fixtures::TCF_MANY_VENDORS);
    let gpp = format!(
        "{filler}; __gpp={}; __gpp_sid=7,8,9,10,11,12,15,16",
        fixtures::GPP_MANY_US
    );
    let all = format!("{tcf}; __gpp={}; usprivacy=1YNN", fixtures::GPP_MANY_US);
    // (key, cookies, country, region): no consent cookie elsewhere; TCF 515 vendors in Germany;
    // GPP 8 US sections in California; all three strings in Germany.
    let cases: [(&str, &str, Option<&str>, Option<&str>); 4] = [
        ("none", filler, Some("JP"), None),
        ("tcf", &tcf, Some("DE"), None),
        ("gpp", &gpp, Some("US"), Some("CA")),
        ("all", &all, Some("DE"), None),
    ];
    let mut lines = Vec::new();
    for (key, cookies, country, region) in cases {
        let (median, p90) = time(200, samples, || {
            let signals = Signals::from_cookies(black_box(cookies), false);
            let place = Jurisdiction::of(country, region, &settings);
            let decision = Decision::decide(&signals, &place, &settings);
            black_box(decision.partner_at(PARTNER, &settings));
        });
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        lines.push(format!("consent.{key}.median_us={:.2}", us(median)));
        lines.push(format!("consent.{key}.p90_us={:.2}", us(p90)));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_prints_a_median_and_a_p90() {
        let lines = run_all(3);
        for case in ["none", "tcf", "gpp", "all"] {
            for what in ["median_us", "p90_us"] {
                let key = format!("consent.{case}.{what}=");
                let line = lines.iter().find(|l| l.starts_with(&key));
                let value: f64 = line
                    .and_then(|l| l[key.len()..].parse().ok())
                    .unwrap_or_else(|| panic!("{key} missing from {lines:?}"));
                assert!(value > 0.0 && value < 10_000.0, "{key}{value}");
            }
        }
    }

    #[test]
    fn the_cases_decide_as_their_names_say() {
        // The timed strings must really be read: a consenting German reader gets the ID, and a
        // malformed fixture would silently time the "no signal" path instead.
        let settings = with_partner();
        let tcf = format!("euconsent-v2={}", fixtures::TCF_MANY_VENDORS);
        let signals = Signals::from_cookies(&tcf, false);
        let place = Jurisdiction::of(Some("DE"), None, &settings);
        let decision = Decision::decide(&signals, &place, &settings);
        assert!(decision.edge_id, "{decision:?}");
        assert!(decision.partner_at(PARTNER, &with_partner()).allowed);
        let gpp = format!(
            "__gpp={}; __gpp_sid=7,8,9,10,11,12,15,16",
            fixtures::GPP_MANY_US
        );
        let signals = Signals::from_cookies(&gpp, false);
        assert_eq!(
            signals.us_sections().count(),
            8,
            "the GPP fixture did not decode"
        );
    }
}
