//! The auction's bid-request reader (`crates/core/src/auction/request.rs`) on any bytes: it
//! never panics; what it accepts keeps its bounds (1 to `MAX_IMPS` impressions with unique
//! ids, floors finite and ≥ 0), and reading the accepted JSON again gives the same request
//! (compared without the floors: serde_json's default float parser may move a re-read number
//! by its last bit).
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::auction::{read_request, MAX_IMPS};

fuzz_target!(|data: &[u8]| {
    let Ok(request) = read_request(data) else {
        return;
    };
    assert!((1..=MAX_IMPS).contains(&request.imps.len()));
    for (i, imp) in request.imps.iter().enumerate() {
        assert!(imp.bidfloor.is_finite() && imp.bidfloor >= 0.0);
        assert!(request.imps[..i].iter().all(|seen| seen.id != imp.id));
    }
    let again = read_request(request.json.to_string().as_bytes()).expect("re-read");
    let shape = |r: &trusted_server_core::auction::BidRequest| {
        let imps: Vec<_> = (r.imps.iter())
            .map(|imp| {
                (
                    imp.id.clone(),
                    imp.media,
                    imp.bidfloorcur.clone(),
                    imp.bidders.len(),
                )
            })
            .collect();
        (r.id.clone(), r.tmax_ms, imps)
    };
    assert_eq!(shape(&again), shape(&request));
});
