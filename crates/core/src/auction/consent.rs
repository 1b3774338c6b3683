//! What each bidder may be given, from the one consent decision the service already makes
//! for the request ([`Decision`]), by the rules Prebid Server follows (its privacy docs):
//!
//! | rule of the reader's location | the bidder is asked | gets the edge ID (as an EID) | gets precise geolocation and the full IP |
//! | --- | --- | --- | --- |
//! | opt-in (TCF) | with a legal basis for purpose 2 for its vendor (consent, or legitimate interest where TCF allows it; publisher restrictions and DisclosedVendors apply) | when asked, the reader has an edge ID, and its vendor has consent for purposes 1 and 4 | when asked and the reader opted in to special feature 1 |
//! | opt-out (a US state) | yes | when the reader has no opt-out (sale, sharing, targeted advertising, US Privacy, GPC): the edge ID's own rule | the same |
//! | none | yes | when no `Sec-GPC: 1` | the same |
//!
//! A bidder without a TCF vendor ID is never asked under opt-in (`no-vendor-id`).

use crate::consent::{Decision, Reason};
use trusted_server_settings::ConsentRule;

/// The TCF purpose a bidder needs to take part: "use limited data to select advertising".
pub const PURPOSE_TAKE_PART: u8 = 2;
/// The TCF purposes a bidder needs to receive the edge ID: storage and access on a device
/// (1) and a personalised advertising profile (4).
pub const PURPOSES_EDGE_ID: [u8; 2] = [1, 4];
/// The TCF special feature for precise geolocation.
pub const SPECIAL_FEATURE_PRECISE_GEO: u8 = 1;

/// What one bidder may be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BidderConsent {
    /// The bidder is asked at all.
    pub asked: bool,
    /// Why it is asked or not (a [`Reason`] of the vendor verdict for purpose 2, or
    /// `not-opt-in` outside opt-in rules).
    pub reason: Reason,
    /// It may receive the reader's edge ID.
    pub edge_id: bool,
    /// It may receive the reader's precise geolocation and full IP address (otherwise
    /// coordinates are left out and the address is truncated).
    pub precise_geo: bool,
}

impl BidderConsent {
    /// The bidder with TCF vendor ID `vendor_id` (if it has one) under `decision`.
    pub fn of(decision: &Decision<'_>, vendor_id: Option<u16>) -> Self {
        let take_part = decision.vendor_basis(vendor_id, &[PURPOSE_TAKE_PART]);
        if !take_part.allowed {
            return Self {
                asked: false,
                reason: take_part.reason,
                edge_id: false,
                precise_geo: false,
            };
        }
        let edge_id = match decision.rule {
            ConsentRule::OptIn => {
                decision.edge_id && decision.vendor_basis(vendor_id, &PURPOSES_EDGE_ID).allowed
            }
            ConsentRule::OptOut | ConsentRule::None => decision.edge_id,
        };
        Self {
            asked: true,
            reason: take_part.reason,
            edge_id,
            precise_geo: decision.special_feature(SPECIAL_FEATURE_PRECISE_GEO),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consent::{Flags, Jurisdiction, Signals, TcString, UsState, VendorSet};
    use proptest::prelude::*;
    use trusted_server_settings::Settings;

    /// A TC string from the IAB's encoder (`consent::fixtures::TCF_P1_V755`), its consents
    /// then set field by field: vendor 755, DisclosedVendors {755}.
    const TCF_P1_V755: &str = "CQeEcwAQeEcwAAKABBENBkFAAIAAAAAAAAYgF5wAQF5gAAAA.IF5wAQF5gAAA";

    fn flags(items: &[u8]) -> Flags {
        Flags(items.iter().fold(0, |all, p| all | 1u64 << (p - 1)))
    }

    /// Opt-in signals: purpose consents, purpose legitimate interests, vendor 755's consent
    /// and legitimate interest, special features.
    fn opt_in(consents: &[u8], interests: &[u8], vendor: (bool, bool), sf: &[u8]) -> Signals {
        let mut tcf = TcString::decode(TCF_P1_V755).unwrap();
        let set = |on: bool| VendorSet::of(if on { &[755] } else { &[] });
        tcf.core.purpose_consents = flags(consents);
        tcf.core.purpose_legitimate_interests = flags(interests);
        tcf.core.vendor_consents = set(vendor.0);
        tcf.core.vendor_legitimate_interests = set(vendor.1);
        tcf.core.special_feature_optins = flags(sf);
        Signals::with_tcf(tcf, false)
    }

    fn bidder(signals: &Signals, j: Jurisdiction, vendor: Option<u16>) -> BidderConsent {
        let settings = Settings::DEFAULT.consent;
        let decision = Decision::decide(signals, &j, &settings);
        BidderConsent::of(&decision, vendor)
    }

    #[test]
    fn opt_in_bidders_need_purpose_2_and_an_id_needs_1_and_4() {
        let j = Jurisdiction::OptIn;
        let v = Some(755);
        // Purpose 1 alone: an edge ID for the reader, but the bidder is not asked.
        let p1 = opt_in(&[1], &[], (true, false), &[]);
        let b = bidder(&p1, j, v);
        assert_eq!((b.asked, b.reason), (false, Reason::VendorNoBasis));
        // Purposes 1 and 2: asked, no ID (no purpose 4).
        let b = bidder(&opt_in(&[1, 2], &[], (true, false), &[]), j, v);
        assert!(b.asked && !b.edge_id && !b.precise_geo, "{b:?}");
        // 1, 2 and 4 with the vendor's consent, and special feature 1: everything.
        let b = bidder(&opt_in(&[1, 2, 4], &[], (true, false), &[1]), j, v);
        assert!(b.asked && b.edge_id && b.precise_geo, "{b:?}");
        // Purpose 2 by legitimate interest: asked; 4 cannot be by legitimate interest.
        let b = bidder(&opt_in(&[1], &[2, 4], (false, true), &[]), j, v);
        assert!(b.asked && !b.edge_id, "{b:?}");
        assert_eq!(b.reason, Reason::VendorLegitimateInterest);
        // Purpose 2 but no purpose 1: asked, and no edge ID exists for the reader.
        let b = bidder(&opt_in(&[2, 4], &[], (true, false), &[1]), j, v);
        assert!(b.asked && !b.edge_id && b.precise_geo, "{b:?}");
        // Another vendor, or none: never asked.
        let all = opt_in(&[1, 2, 4], &[], (true, false), &[1]);
        assert!(!bidder(&all, j, Some(32)).asked);
        assert_eq!(bidder(&all, j, None).reason, Reason::NoVendorId);
        // No TC string at all.
        let b = bidder(&Signals::default(), j, v);
        assert_eq!((b.asked, b.reason), (false, Reason::NoTcf));
    }

    #[test]
    fn outside_opt_in_every_bidder_is_asked_and_refusals_withhold_the_id() {
        let ca = Jurisdiction::OptOut(UsState::parse("CA").unwrap());
        let quiet = Signals::default();
        let b = bidder(&quiet, ca, None);
        assert!(b.asked && b.edge_id && b.precise_geo, "{b:?}");
        for refusal in [
            Signals::from_cookies("usprivacy=1YYN", false),
            Signals::from_cookies("", true),
        ] {
            let b = bidder(&refusal, ca, Some(755));
            assert!(b.asked && !b.edge_id && !b.precise_geo, "{b:?}");
            let b = bidder(&refusal, Jurisdiction::Elsewhere, Some(755));
            assert!(b.asked);
        }
        let b = bidder(
            &Signals::from_cookies("", true),
            Jurisdiction::Elsewhere,
            None,
        );
        assert!(!b.edge_id && !b.precise_geo);
    }

    proptest! {
        /// Against the rules as the module states them, for random consents: asked exactly
        /// with a basis for purpose 2; an ID only when asked, the reader has one, and 1 and 4
        /// are consented for the vendor; geolocation exactly with special feature 1.
        #[test]
        fn opt_in_follows_the_stated_rules(
            consents in prop::collection::vec(1u8..=11, 0..6),
            interests in prop::collection::vec(1u8..=11, 0..6),
            vendor in (any::<bool>(), any::<bool>()),
            sf1 in any::<bool>(),
        ) {
            let sf: &[u8] = if sf1 { &[1] } else { &[] };
            let s = opt_in(&consents, &interests, vendor, sf);
            let b = bidder(&s, Jurisdiction::OptIn, Some(755));
            let has = |list: &[u8], p: u8| list.contains(&p);
            let basis2 = (has(&consents, 2) && vendor.0) || (has(&interests, 2) && vendor.1);
            prop_assert_eq!(b.asked, basis2);
            // The default settings ask purpose 1 for the reader's edge ID.
            let reader_id = has(&consents, 1);
            let id = basis2 && reader_id && has(&consents, 4) && vendor.0;
            prop_assert_eq!(b.edge_id, id);
            prop_assert_eq!(b.precise_geo, basis2 && sf1);
        }
    }
}
