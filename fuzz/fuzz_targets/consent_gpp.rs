//! The GPP decoder (`crates/core/src/consent/gpp.rs`) on any bytes: it never panics, refuses
//! anything longer than its limit, lists exactly one section per `~`-separated part, and reads
//! its EU TCF and US Privacy sections as the stand-alone decoders read the same text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::consent::{Gpp, SectionBody, TcString, UsPrivacy, GPP_MAX_LEN};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Some(gpp) = Gpp::decode(&text) else {
        return;
    };
    assert!(text.len() <= GPP_MAX_LEN);
    let parts: Vec<&str> = text.split('~').skip(1).collect();
    assert_eq!(parts.len(), gpp.sections.len());
    for (section, part) in gpp.sections.iter().zip(parts) {
        match &section.body {
            SectionBody::TcfEu(tc) => assert_eq!(TcString::decode(part).as_ref(), Some(&**tc)),
            SectionBody::UsPrivacy(u) => assert_eq!(UsPrivacy::decode(part), Some(*u)),
            SectionBody::Us(us) => {
                assert_eq!(us.id(), section.id);
                assert!(
                    us.sale_opt_out().is_some(),
                    "every US section has a sale opt-out"
                );
            }
            SectionBody::Unsupported | SectionBody::Malformed => {}
        }
    }
});
