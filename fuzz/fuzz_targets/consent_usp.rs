//! The US Privacy decoder (`crates/core/src/consent/usp.rs`) on any bytes: it never panics and
//! accepts exactly the strings `1` + three of `Y`, `N`, `-`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::consent::UsPrivacy;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let valid = text.len() == 4
        && text.starts_with('1')
        && text
            .bytes()
            .skip(1)
            .all(|b| matches!(b, b'Y' | b'N' | b'-'));
    let decoded = UsPrivacy::decode(&text);
    assert_eq!(decoded.is_some(), valid, "{text:?}");
    if let Some(u) = decoded {
        let back: String = std::iter::once('1')
            .chain([u.notice, u.opt_out_sale, u.lspa_covered].map(|f| f.as_char()))
            .collect();
        assert_eq!(back, text);
    }
});
