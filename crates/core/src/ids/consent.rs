//! Which partners a reader's consent allows the graph to hold IDs for, and to send them to
//! bidders: a partner (a bidder with an `eid_source`) whose bidder may receive the reader's
//! edge ID under the auction's per-bidder rules (`auction::BidderConsent::edge_id`). In an
//! opt-in location that is the partner's vendor with consent for purposes 1 and 4 (and a basis
//! to take part at all); under US opt-out rules, no opt-out of sale, sharing or targeted
//! advertising (US Privacy, GPC); elsewhere no `Sec-GPC: 1`; and always a reader allowed an
//! edge ID at all. One rule for storing and sending, so an ID is never sent where it could
//! not have been stored.

use trusted_server_settings::Bidder;

use crate::auction::BidderConsent;
use crate::consent::Decision;

/// The codes of the partners among `bidders` that `decision` allows, in the bidders' order.
pub fn allowed_partners<'b>(decision: &Decision<'_>, bidders: &'b [Bidder]) -> Vec<&'b str> {
    (bidders.iter())
        .filter(|b| b.eid_source.is_some())
        .filter(|b| BidderConsent::of(decision, b.vendor_id).edge_id)
        .map(|b| &*b.code)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::consent::{Flags, Jurisdiction, Signals, TcString, UsState, VendorSet};
    use trusted_server_settings::Settings;

    /// A TC string from the IAB's encoder (vendor 755, DisclosedVendors {755}), its purpose
    /// consents then set to `purposes` with the vendor's consent.
    const TCF_P1_V755: &str = "CQeEcwAQeEcwAAKABBENBkFAAIAAAAAAAAYgF5wAQF5gAAAA.IF5wAQF5gAAA";

    fn opt_in(purposes: &[u8]) -> Signals {
        let mut tcf = TcString::decode(TCF_P1_V755).unwrap();
        tcf.core.purpose_consents = Flags(purposes.iter().fold(0, |all, p| all | 1u64 << (p - 1)));
        tcf.core.vendor_consents = VendorSet::of(&[755]);
        Signals::with_tcf(tcf, false)
    }

    /// A bidder of the loaded settings, with `vendor_id` and `eid_source`.
    fn bidder(code: &str, vendor_id: Option<u16>, eid_source: Option<&str>) -> Bidder {
        let text = format!(
            "[publisher]\ndomain = \"www.example.com\"\norigin_url = \"https://o.example\"\n\
             [[auction.bidders]]\ncode = \"{code}\"\nendpoint = \"https://b.example/\"\n"
        );
        let settings = trusted_server_settings::load(&text, Vec::<(String, String)>::new());
        let mut b = settings.expect("valid settings").auction.bidders[0].clone();
        b.vendor_id = vendor_id;
        b.eid_source = eid_source.map(|s| Cow::Owned(s.to_owned()));
        b
    }

    fn allowed(signals: &Signals, j: Jurisdiction, bidders: &[Bidder]) -> Vec<String> {
        let decision = Decision::decide(signals, &j, &Settings::DEFAULT.consent);
        allowed_partners(&decision, bidders)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_partner_is_allowed_where_its_bidder_may_get_the_edge_id() {
        let bidders = [
            bidder("v755", Some(755), Some("v755.example")),
            bidder("v1", Some(1), Some("v1.example")),
            // Not a partner of the graph: never, whatever the consent.
            bidder("plain", Some(755), None),
        ];
        // Opt-in: vendor 755 with purposes 1, 2 and 4; vendor 1 has no consent.
        assert_eq!(
            allowed(&opt_in(&[1, 2, 4]), Jurisdiction::OptIn, &bidders),
            ["v755"]
        );
        // Without purpose 4 no ID may be kept; without 1 the reader has no edge ID.
        assert!(allowed(&opt_in(&[1, 2]), Jurisdiction::OptIn, &bidders).is_empty());
        assert!(allowed(&opt_in(&[2, 4]), Jurisdiction::OptIn, &bidders).is_empty());
        assert!(allowed(&Signals::default(), Jurisdiction::OptIn, &bidders).is_empty());
        // A US state: every partner, unless the reader opted out (US Privacy or GPC).
        let ca = Jurisdiction::OptOut(UsState::parse("CA").unwrap());
        assert_eq!(allowed(&Signals::default(), ca, &bidders), ["v755", "v1"]);
        for refusal in [
            Signals::from_cookies("usprivacy=1YYN", false),
            Signals::from_cookies("", true),
        ] {
            assert!(allowed(&refusal, ca, &bidders).is_empty());
        }
        // Elsewhere: every partner, unless `Sec-GPC: 1`.
        assert_eq!(
            allowed(&Signals::default(), Jurisdiction::Elsewhere, &bidders),
            ["v755", "v1"]
        );
        assert!(allowed(
            &Signals::from_cookies("", true),
            Jurisdiction::Elsewhere,
            &bidders
        )
        .is_empty());
    }
}
