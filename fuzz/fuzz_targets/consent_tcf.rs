//! The TCF decoder (`crates/core/src/consent/tcf.rs`) on any bytes: it never panics, refuses
//! anything longer than its limit, and what it reads holds together (ranges in order, every
//! vendor id in 1..=65535, the same reading twice).
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::consent::{TcString, TCF_MAX_LEN};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Some(tc) = TcString::decode(&text) else {
        return;
    };
    assert!(text.len() <= TCF_MAX_LEN);
    assert_eq!(tc.core.version, 2);
    for r in &tc.core.publisher_restrictions {
        assert!(r.vendors.iter().all(|&(a, b)| 1 <= a && a <= b));
    }
    assert!(
        !tc.core.vendor_consents.contains(0) && !tc.core.vendor_legitimate_interests.contains(0)
    );
    assert_eq!(TcString::decode(&text), Some(tc));
});
