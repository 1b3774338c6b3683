//! What consent costs per request: reading the cookies (decoding every string) and deciding,
//! timed natively for the strings a busy reader carries. Prints the median and the 90th
//! percentile of many runs, per case.
//!
//! `cargo run --release -p trusted-server-core --example consent_cost`
//!
//! The strings are the test strings of `crates/core/src/consent/fixtures.rs`, encoded by the
//! IAB reference libraries: a TC string with 515 vendor consents, their legitimate interests,
//! three publisher restrictions and a DisclosedVendors segment of 700 vendors (277 bytes), and
//! a GPP string with eight US sections (102 bytes).

use std::hint::black_box;
use std::time::{Duration, Instant};

use trusted_server_core::consent::{Decision, Jurisdiction, Signals};
use trusted_server_settings::{Consent, PartnerVendor, Settings};

#[path = "../src/consent/fixtures.rs"]
mod fixtures;

/// Runs `f` in batches and returns the median and 90th percentile time per call.
fn time(mut f: impl FnMut()) -> (Duration, Duration) {
    const BATCH: u32 = 200;
    for _ in 0..BATCH {
        f();
    }
    let mut samples: Vec<Duration> = (0..301)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..BATCH {
                f();
            }
            start.elapsed() / BATCH
        })
        .collect();
    samples.sort_unstable();
    (samples[samples.len() / 2], samples[samples.len() * 9 / 10])
}

fn main() {
    let settings = Consent {
        partner_vendors: vec![PartnerVendor {
            domain: "ads.demo-partner.example".into(),
            vendor_id: 755,
        }]
        .into(),
        ..Settings::DEFAULT.consent
    };
    let filler = "_ga=GA1.1.1827526090.1689745728; session=abcdef0123456789";
    let tcf = format!("{filler}; euconsent-v2={}", fixtures::TCF_MANY_VENDORS);
    let gpp = format!(
        "{filler}; __gpp={}; __gpp_sid=7,8,9,10,11,12,15,16",
        fixtures::GPP_MANY_US
    );
    let both = format!("{tcf}; __gpp={}; usprivacy=1YNN", fixtures::GPP_MANY_US);
    let cases: [(&str, &str, Option<&str>, Option<&str>); 4] = [
        ("no consent cookies, elsewhere", filler, Some("JP"), None),
        ("TCF, 515 vendors, Germany", &tcf, Some("DE"), None),
        (
            "GPP, 8 US sections, California",
            &gpp,
            Some("US"),
            Some("CA"),
        ),
        ("TCF + GPP + USP, Germany", &both, Some("DE"), None),
    ];
    println!(
        "{:<34} {:>12} {:>12}",
        "case (read cookies + decide)", "median", "p90"
    );
    for (name, cookies, country, region) in cases {
        let (median, p90) = time(|| {
            let signals = Signals::from_cookies(black_box(cookies), false);
            let place = Jurisdiction::of(country, region, &settings);
            let decision = Decision::decide(&signals, &place, &settings);
            black_box(decision.partner_at("ads.demo-partner.example", &settings));
        });
        println!("{name:<34} {median:>12.2?} {p90:>12.2?}");
    }
}
