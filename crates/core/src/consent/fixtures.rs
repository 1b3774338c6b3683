//! Consent strings for the decision tests and the benchmark, encoded by the IAB Tech Lab's
//! reference libraries (`@iabtechlabtcf/core` 1.5.21 and `@iabgpp/cmpapi` 3.2.0, as pinned in
//! `tests/consent/package.json`): a `TCModel` with the fields listed per constant (CMP 10,
//! version 1, screen 1, language EN, publisher country DE, vendor list 100, created and
//! updated 2026-01-15, policy version 5 unless said), encoded segment by segment with
//! `SegmentEncoder.encode`; a `GppModel` whose fields were set with `setFieldValue` (every
//! field not named is 0), encoded with `encode()`. They were printed once by a small node
//! script and pasted here; the decoders' own differential test (`tests/consent/`) is what
//! checks that they read such strings as the libraries do.
#![allow(dead_code)]

/// core: purpose consents {1}, vendor consents {755}; DisclosedVendors {755}; policy version 5.
pub const TCF_P1_V755: &str = "CQeEcwAQeEcwAAKABBENBkFAAIAAAAAAAAYgF5wAQF5gAAAA.IF5wAQF5gAAA";

/// core: no purpose or vendor consent; DisclosedVendors {755}.
pub const TCF_NO_CONSENT: &str = "CQeEcwAQeEcwAAKABBENBkFAAAAAAAAAAAYgAAAAAAAA.IF5wAQF5gAAA";

/// core: purpose consents {1}, vendor consents {32, 755}; DisclosedVendors {32} (755 not disclosed).
pub const TCF_P1_NOT_DISCLOSED: &str =
    "CQeEcwAQeEcwAAKABBENBkFAAIAAAAAAAAYgF5wAgAQALzAAAAAA.IAQAAAAAEAAA";

/// core only (policy version 4, TCF 2.2): purpose consents {1}, vendor consents {755}.
pub const TCF_P1_NO_DISCLOSED_SEGMENT: &str = "CQeEcwAQeEcwAAKABBENBkEAAIAAAAAAAAYgF5wAQF5gAAAA";

/// core: purpose consents {1}, vendor consents {755}, publisher restriction purpose 1 type 0 (not allowed) for vendor 755; DisclosedVendors {755}.
pub const TCF_P1_RESTRICTED: &str =
    "CQeEcwAQeEcwAAKABBENBkFAAIAAAAAAAAYgF5wAQF5gAAABBAAQF5gA.IF5wAQF5gAAA";

/// core: purpose consents {1, 2, 3, 7}, purpose legitimate interests {2, 3, 7}, no vendor consent, vendor legitimate interests {755}; DisclosedVendors {755}.
pub const TCF_LI: &str = "CQeEcwAQeEcwAAKABBENBkFAAOIAAGIAAAYgAAALzgAgLzAA.IF5wAQF5gAAA";

/// as TCF_LI, plus publisher restriction purpose 2 type 1 (require consent) for vendor 755.
pub const TCF_LI_REQUIRE_CONSENT: &str =
    "CQeEcwAQeEcwAAKABBENBkFAAOIAAGIAAAYgAAALzgAgLzABCQAQF5gA.IF5wAQF5gAAA";

/// core: purpose consents {1, 2}, vendor consents {755}, publisher restriction purpose 2 type 2 (require legitimate interest) for vendor 755; DisclosedVendors {755}.
pub const TCF_CONSENT_REQUIRE_LI: &str =
    "CQeEcwAQeEcwAAKABBENBkFAAMAAAAAAAAYgF5wAQF5gAAABCgAQF5gA.IF5wAQF5gAAA";

/// core: no purpose consent, vendor consents {755}; DisclosedVendors {755}; publisher TC segment: publisher purpose consents {1}.
pub const TCF_PUBLISHER_P1: &str =
    "CQeEcwAQeEcwAAKABBENBkFAAAAAAAAAAAYgF5wAQF5gAAAA.IF5wAQF5gAAA.cAAAAAAAAAAA";

/// core: purpose consents {1, 2, 3, 4, 7, 9, 10}, purpose LIs {2, 7, 9, 10}, vendor consents 1..=600 but multiples of 7 (515 vendors), vendor LIs those of them not multiples of 3, three publisher restrictions; DisclosedVendors 1..=700.
pub const TCF_MANY_VENDORS: &str =
    "CQeEcwAQeEcwAAKABBENBkFAAPLAAELAAAYgEsP379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv3wJXbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLADCQAQAQBgAIALREAEAMgAA.IFeQAYAAgV4A";

/// usca (8): SaleOptOutNotice 1, SaleOptOut 1 (opted out), SharingOptOut 2, MspaCoveredTransaction 2, the rest 0.
pub const GPP_CA_SALE_OPT_OUT: &str = "DBABBg~BQYAAACA.QA";

/// usca (8): SaleOptOutNotice 1, SaleOptOut 2, SharingOptOut 2 (did not opt out), MspaCoveredTransaction 2, the rest 0.
pub const GPP_CA_NO_OPT_OUT: &str = "DBABBg~BQoAAACA.QA";

/// as GPP_CA_NO_OPT_OUT, with the GPC sub-section: Gpc true.
pub const GPP_CA_GPC: &str = "DBABBg~BQoAAACA.YA";

/// usnat (7): SaleOptOut 2, SharingOptOut 2, TargetedAdvertisingOptOut 1 (opted out), MspaCoveredTransaction 2, the rest 0.
pub const GPP_NAT_TA_OPT_OUT: &str = "DBABLA~CAApAAAAAACA.QA";

/// usnat (7): SaleOptOut 2, SharingOptOut 2, TargetedAdvertisingOptOut 2, MspaCoveredTransaction 2, the rest 0.
pub const GPP_NAT_NO_OPT_OUT: &str = "DBABLA~CAAqAAAAAACA.QA";

/// usnat (7): SaleOptOut 1 (opted out), the other opt-outs 2; usva (9): SaleOptOut 2, TargetedAdvertisingOptOut 2.
pub const GPP_VA_OK_NAT_SALE_OPT_OUT: &str = "DBACLMA~CAAaAAAAAACA.QA~BAoAACA";

/// tcfeuv2 (2): a service-specific TC string, purpose consents {1}, vendor consents {755}, DisclosedVendors {755} (the library adds its own publisher segment).
pub const GPP_TCF_P1_V755: &str =
    "DBABMA~CQeEcwAQeEcwAAKABBENBkFgAIAAAAAAAAYgF5wAQF5gAAAA.IF5wAQF5gAAA.YAAAAAAAAAAA";

/// uspv1 (6): 1YYN (opted out of sale).
pub const GPP_USP_OPT_OUT: &str = "DBABTA~1YYN";

/// eight US sections: usnat (7), usca (8, GPC false), usva (9), usco (10), usut (11), usct (12), usor (15), ustx (16), none opted out (SaleOptOut 2).
pub const GPP_MANY_US: &str =
    "DBACrHPA~CAAqAAAAAACA.QA~BQoAAACA.QA~BAoAACA~BAgAAIA.QA~BAIAAAgA~BAgAAAIA.QA~BAgAAAACAA.QA~BAgAAAgA.QA";

/// usca (8): SaleOptOutNotice 1, SaleOptOut 2, SharingOptOut 2, KnownChildSensitiveDataConsents
/// [1, 0] (a known child under 13, no consent), MspaCoveredTransaction 2, the rest 0.
pub const GPP_CA_KNOWN_CHILD: &str = "DBABBg~BQoAABCA.QA";
