//! Consent signals, decoded: the strings a reader's consent management platform (CMP) leaves
//! in cookies, read into plain typed values. This module only decodes; what a decoded signal
//! allows is decided elsewhere.
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
mod gpp;
mod tcf;
mod us;
mod usp;

pub use gpp::{
    Gpp, GppSection, SectionBody, GPP_MAX_LEN, SECTION_TCF_EU, SECTION_USP, SECTION_US_NATIONAL,
};
pub use tcf::{
    Flags, PublisherRestriction, PublisherTc, RestrictionType, TcCore, TcString, VendorSet,
    TCF_MAX_LEN,
};
pub use us::{OptOut, UsSection};
pub use usp::{UsPrivacy, UspFlag, USP_LEN};
