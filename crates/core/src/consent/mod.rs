//! Consent: the strings a reader's consent management platform (CMP) leaves in cookies, read
//! into plain typed values, and the one decision per request they feed.
//!
//! Three steps, each platform-free and each its own module:
//!
//! 1. [`Signals::from_cookies`] reads the consent cookies of a `Cookie` header (all of them) and
//!    `Sec-GPC`, and keeps only decoded facts;
//! 2. [`Jurisdiction::of`] places the reader (a geolocated country and region) under opt-in,
//!    a US state's opt-out, no rule, or unknown, by the `[consent]` settings;
//! 3. [`Decision::decide`] says whether an edge ID may be created or used, sent to the origin
//!    and to each partner ([`Decision::partner`]), or must be withdrawn, with [`Reasons`].
//!
//! `docs/consent.md` describes the rules for publishers. The decoders below are the
//! foundation:
//!
//! | signal | where it comes from | decoder | longest input read |
//! | --- | --- | --- | --- |
//! | IAB TCF v2.2 / v2.3 TC string | `euconsent-v2` cookie, GPP section 2 | [`TcString::decode`] | [`TCF_MAX_LEN`] bytes |
//! | IAB GPP string | `__gpp` cookie | [`Gpp::decode`] | [`GPP_MAX_LEN`] bytes |
//! | IAB US Privacy string | `usprivacy` / `us_privacy` cookies, GPP section 6 | [`UsPrivacy::decode`] | [`USP_LEN`] bytes, exactly |
//!
//! What is read:
//!
//! * **TCF**: every field of the core segment (version, created, last updated, CMP id and
//!   version, consent screen, language, vendor list version, policy version, service-specific,
//!   non-standard texts, special feature opt-ins, purpose consents and legitimate interests,
//!   purpose one treatment, publisher country, vendor consents and legitimate interests in the
//!   bitfield and range encodings, publisher restrictions), the DisclosedVendors segment (type
//!   1, required by TCF 2.3), the AllowedVendors segment (type 2) and the publisher TC segment
//!   (type 3: publisher purpose consents and legitimate interests, custom purposes).
//! * **GPP**: the header's section ids; the EU TCF section (2) with the TCF decoder; US Privacy
//!   (6); the US national section (7, versions 1 and 2) and every US state section published
//!   so far (8 usca, 9 usva, 10 usco, 11 usut, 12 usct, 13 usfl, 14 usmt, 15 usor, 16 ustx,
//!   17 usde, 18 usia, 19 usne, 20 usnh, 21 usnj, 22 ustn, 23 usmn, 24 usmd, 25 usin, 26 usky,
//!   27 usri), each with all its fields, its sale / sharing / targeted-advertising opt-outs,
//!   known-child and sensitive-data values, and its GPC sub-section where it has one.
//! * **US Privacy**: the version and the three flags.
//!
//! Every decoder takes any text and never panics (a fuzz target per decoder holds it to that);
//! a string that is malformed, truncated, or longer than its limit is `None`: no valid signal.
//! The limits are a browser's per-cookie size, so no real CMP string is refused. Decoding is
//! checked field by field against the IAB's own reference libraries (`@iabtechlabtcf/core`
//! and `@iabgpp/cmpapi`) by the differential test in `tests/consent/`.

mod bits;
mod decision;
#[cfg(test)]
mod fixtures;
mod gpp;
mod jurisdiction;
mod signals;
mod tcf;
mod us;
mod usp;

pub use decision::{Decision, PartnerDecision, Reason, Reasons};

pub use gpp::{
    Gpp, GppSection, SectionBody, GPP_MAX_LEN, SECTION_TCF_EU, SECTION_USP, SECTION_US_NATIONAL,
};
pub use jurisdiction::{Jurisdiction, UsState};
pub(crate) use signals::cookies;
pub use signals::{Signals, CONSENT_COOKIES};
pub use tcf::{
    Flags, PublisherRestriction, PublisherTc, RestrictionType, TcCore, TcString, VendorSet,
    TCF_MAX_LEN,
};
pub use us::{OptOut, UsSection};
pub use usp::{UsPrivacy, UspFlag, USP_LEN};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Text mostly of the characters the formats use, so the decoders get past their first
    /// checks often.
    fn consent_text() -> impl Strategy<Value = String> {
        prop::string::string_regex("[A-Za-z0-9_~.\\-]{0,300}|.{0,40}").unwrap()
    }

    proptest! {
        #[test]
        fn no_text_makes_a_decoder_panic(text in consent_text()) {
            let _ = TcString::decode(&text);
            let _ = Gpp::decode(&text);
            let _ = UsPrivacy::decode(&text);
        }

        #[test]
        fn a_gpp_string_has_one_section_per_part(text in consent_text()) {
            if let Some(gpp) = Gpp::decode(&text) {
                prop_assert_eq!(gpp.sections.len(), text.split('~').count() - 1);
            }
        }

        #[test]
        fn a_valid_string_padded_past_its_limit_is_no_signal(pad in 1usize..64) {
            let tcf = "CPzvOIAPzvOIAGXABBENAUEAAACAAAAAAAAAAAAAAAAA";
            prop_assert!(TcString::decode(tcf).is_some());
            let long = format!("{tcf}{}", "A".repeat(TCF_MAX_LEN - tcf.len() + pad));
            prop_assert!(TcString::decode(&long).is_none());
            let gpp = "DBABBg~BUoAAABg.Q";
            prop_assert!(Gpp::decode(gpp).is_some());
            let long = format!("{gpp}{}", "A".repeat(GPP_MAX_LEN - gpp.len() + pad));
            prop_assert!(Gpp::decode(&long).is_none());
        }
    }

    /// A real national section (ethyca/fides's GPP decoder tests) that says version 1 but is
    /// written in the version 2 shape: read as the reference library reads it.
    #[test]
    fn a_version_1_national_section_in_the_version_2_shape() {
        let gpp = Gpp::decode("DBABLA~BVAoAAAAAABk.QA").unwrap();
        let us = gpp.us_sections().next().unwrap();
        assert_eq!((us.name(), us.version()), ("usnat", 1));
        assert_eq!(us.sensitive_data_processing().map(<[u8]>::len), Some(12));
        assert_eq!(us.known_child_sensitive_data_consents().len(), 2);
        assert_eq!(us.sale_opt_out(), Some(OptOut::DidNotOptOut));
        assert_eq!(us.gpc(), Some(false));
    }
}
