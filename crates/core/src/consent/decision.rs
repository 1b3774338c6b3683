//! The one consent decision of a request: from the reader's [`Signals`], their
//! [`Jurisdiction`] and the `[consent]` settings, whether an edge ID may be created or used,
//! whether it may go to the origin and to each partner, and whether an existing one must be
//! withdrawn, with the reasons why.
//!
//! [`Decision::decide`] is a pure function: no clock, no platform, no I/O. Its reasons are a
//! fixed list of short stable words ([`Reason::as_str`]) for the access line and the consent
//! endpoint; no consent string ever reaches them.
//!
//! | rule | edge ID when |
//! | --- | --- |
//! | opt-in | no `Sec-GPC: 1` (unless `consent.gpc_refuses_opt_in` is off), and a valid TC string consents to every purpose of `consent.purposes` (core segment, or the publisher segment when `consent.publisher_segment`) |
//! | opt-out | no `Sec-GPC: 1`; the GPP section of the reader's state (else the national one) opts out of neither sale, sharing nor targeted advertising, has no GPC flag set and no known child without consent; the US Privacy string has no sale opt-out |
//! | none | no `Sec-GPC: 1` |
//!
//! Under opt-in and opt-out, a consent cookie sent twice with different valid values refuses
//! (`conflicting-cookies`): a sibling subdomain can plant a copy the browser sends first. A
//! `__gpp_sid` cookie that sets sections of the GPP string aside is obeyed only where that is
//! stricter: the string is decided with and without it, and either refusal refuses.
//!
//! A partner gets the edge ID only when the reader has one; in an opt-in location, only when
//! its TCF vendor has a legal basis for every configured purpose (see [`Decision::partner`]).

use std::fmt;

use trusted_server_settings::{Consent, ConsentRule};

use super::{Jurisdiction, OptOut, RestrictionType, Signals, TcString, UsSection, UspFlag};

/// Why a decision came out as it did. Each has a short stable name ([`Reason::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// `opt-in-region`: the reader is in an opt-in country.
    OptInRegion,
    /// `opt-out-region`: the reader is in an opt-out state.
    OptOutRegion,
    /// `elsewhere`: the reader is in neither.
    Elsewhere,
    /// `location-unknown`: the location is unknown; `consent.unknown` chose the rule.
    LocationUnknown,
    /// `tcf-consent`: the TC string consents to every configured purpose.
    TcfConsent,
    /// `no-tcf`: no valid TC string.
    NoTcf,
    /// `tcf-no-consent`: the TC string lacks consent to a configured purpose.
    TcfNoConsent,
    /// `no-publisher-segment`: the publisher segment is required and the string has none.
    NoPublisherSegment,
    /// `gpc`: Global Privacy Control (`Sec-GPC: 1`, or a GPP section's GPC flag).
    Gpc,
    /// `gpp-opt-out`: a GPP US section opts out of sale, sharing or targeted advertising.
    GppOptOut,
    /// `usp-opt-out`: the US Privacy string opts out of sale.
    UspOptOut,
    /// `known-child`: a GPP US section records a known child without consent.
    KnownChild,
    /// `conflicting-cookies`: a consent cookie came twice with different valid values
    /// ([`Signals::conflicting`]): no choice the decision can trust, so no edge ID.
    ConflictingCookies,
    /// `no-opt-out`: no signal refused.
    NoOptOut,
    /// `no-edge-id`: the reader has no edge ID, so no partner gets one.
    NoEdgeId,
    /// `not-opt-in`: outside opt-in rules a partner gets the edge ID as the reader has it.
    NotOptIn,
    /// `no-vendor-id`: in an opt-in location, a partner without a TCF vendor ID.
    NoVendorId,
    /// `vendor-not-disclosed`: the string's DisclosedVendors segment omits the vendor.
    VendorNotDisclosed,
    /// `vendor-restricted`: a publisher restriction forbids the vendor a configured purpose.
    VendorRestricted,
    /// `vendor-no-basis`: the vendor has neither consent nor an allowed legitimate interest
    /// for a configured purpose.
    VendorNoBasis,
    /// `vendor-consent`: the vendor has consent for every configured purpose.
    VendorConsent,
    /// `vendor-legitimate-interest`: the vendor relies on legitimate interest for at least
    /// one configured purpose (and consent for the others).
    VendorLegitimateInterest,
}

impl Reason {
    /// Every reason, in the order [`Reasons`] lists them.
    pub const ALL: [Reason; 22] = [
        Reason::OptInRegion,
        Reason::OptOutRegion,
        Reason::Elsewhere,
        Reason::LocationUnknown,
        Reason::TcfConsent,
        Reason::NoTcf,
        Reason::TcfNoConsent,
        Reason::NoPublisherSegment,
        Reason::Gpc,
        Reason::GppOptOut,
        Reason::UspOptOut,
        Reason::KnownChild,
        Reason::ConflictingCookies,
        Reason::NoOptOut,
        Reason::NoEdgeId,
        Reason::NotOptIn,
        Reason::NoVendorId,
        Reason::VendorNotDisclosed,
        Reason::VendorRestricted,
        Reason::VendorNoBasis,
        Reason::VendorConsent,
        Reason::VendorLegitimateInterest,
    ];

    /// The reason's short stable name (`gpc`, `tcf-consent`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::OptInRegion => "opt-in-region",
            Reason::OptOutRegion => "opt-out-region",
            Reason::Elsewhere => "elsewhere",
            Reason::LocationUnknown => "location-unknown",
            Reason::TcfConsent => "tcf-consent",
            Reason::NoTcf => "no-tcf",
            Reason::TcfNoConsent => "tcf-no-consent",
            Reason::NoPublisherSegment => "no-publisher-segment",
            Reason::Gpc => "gpc",
            Reason::GppOptOut => "gpp-opt-out",
            Reason::UspOptOut => "usp-opt-out",
            Reason::KnownChild => "known-child",
            Reason::ConflictingCookies => "conflicting-cookies",
            Reason::NoOptOut => "no-opt-out",
            Reason::NoEdgeId => "no-edge-id",
            Reason::NotOptIn => "not-opt-in",
            Reason::NoVendorId => "no-vendor-id",
            Reason::VendorNotDisclosed => "vendor-not-disclosed",
            Reason::VendorRestricted => "vendor-restricted",
            Reason::VendorNoBasis => "vendor-no-basis",
            Reason::VendorConsent => "vendor-consent",
            Reason::VendorLegitimateInterest => "vendor-legitimate-interest",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of [`Reason`]s; displayed as their names in [`Reason::ALL`] order, space-separated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Reasons(u32);

impl Reasons {
    /// Whether `reason` is in the set.
    pub fn contains(self, reason: Reason) -> bool {
        self.0 & reason.bit() != 0
    }

    /// The reasons, in [`Reason::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Reason> {
        Reason::ALL.into_iter().filter(move |r| self.contains(*r))
    }

    fn add(&mut self, reason: Reason) {
        self.0 |= reason.bit();
    }
}

impl fmt::Display for Reasons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, reason) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(reason.as_str())?;
        }
        Ok(())
    }
}

/// Whether one partner gets the edge ID, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartnerDecision {
    /// The partner may receive the edge ID.
    pub allowed: bool,
    /// Why.
    pub reason: Reason,
}

/// The consent decision of one request.
#[derive(Clone, PartialEq, Eq)]
pub struct Decision<'a> {
    /// An edge ID may be created or used (the `ts-ec` cookie, `/_ts/ec`).
    pub edge_id: bool,
    /// The edge ID may go to the origin in `X-TS-EC`. Today always equal to `edge_id`; a
    /// field of its own so a future rule can tell them apart without touching callers.
    pub origin: bool,
    /// The reader must lose an edge ID they hold: the `ts-ec` cookie, when the request sent
    /// one, is expired on whatever response the request gets.
    pub withdraw: bool,
    /// The rule applied (the jurisdiction's, or `consent.unknown`'s).
    pub rule: ConsentRule,
    /// Why.
    pub reasons: Reasons,
    /// What [`Decision::partner`] reads: the TC string in an opt-in location.
    tcf: Option<&'a TcString>,
    purposes: &'a [u8],
}

/// The decision's outcome; never the TC string it keeps for partners.
impl fmt::Debug for Decision<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decision")
            .field("edge_id", &self.edge_id)
            .field("origin", &self.origin)
            .field("withdraw", &self.withdraw)
            .field("rule", &self.rule.as_str())
            .field("reasons", &self.reasons.to_string())
            .finish()
    }
}

/// TCF purposes a vendor may rely on legitimate interest for. TCF Policy (v2.2 and later):
/// purpose 1 (store and access information on a device) and purposes 3 to 6 (profiles and
/// personalised advertising and content) require consent; special features are opt-ins.
const LEGITIMATE_INTEREST_PURPOSES: [u8; 6] = [2, 7, 8, 9, 10, 11];

impl<'a> Decision<'a> {
    /// Decides for one request. Pure: the same inputs always give the same decision.
    ///
    /// When `__gpp_sid` set sections of the GPP string aside, the signals are also decided
    /// whole ([`Signals::without_gpp_sid`]) and a refusal there wins: the cookie may withhold
    /// an edge ID, never grant one.
    pub fn decide(
        signals: &'a Signals,
        jurisdiction: &Jurisdiction,
        settings: &'a Consent,
    ) -> Self {
        let decision = Self::decide_read(signals, jurisdiction, settings);
        match signals.without_gpp_sid() {
            Some(whole) if decision.edge_id => {
                let strict = Self::decide_read(whole, jurisdiction, settings);
                if strict.edge_id {
                    decision
                } else {
                    strict
                }
            }
            _ => decision,
        }
    }

    /// [`Decision::decide`] for one reading of the signals.
    fn decide_read(
        signals: &'a Signals,
        jurisdiction: &Jurisdiction,
        settings: &'a Consent,
    ) -> Self {
        let mut reasons = Reasons::default();
        reasons.add(match jurisdiction {
            Jurisdiction::OptIn => Reason::OptInRegion,
            Jurisdiction::OptOut(_) => Reason::OptOutRegion,
            Jurisdiction::Elsewhere => Reason::Elsewhere,
            Jurisdiction::Unknown => Reason::LocationUnknown,
        });
        let rule = jurisdiction.rule(settings);
        let edge_id = match rule {
            // Disagreeing copies of a consent cookie: no choice to follow where cookies count.
            ConsentRule::OptIn | ConsentRule::OptOut if signals.conflicting() => {
                reasons.add(Reason::ConflictingCookies);
                false
            }
            ConsentRule::OptIn => opt_in(signals, settings, &mut reasons),
            ConsentRule::OptOut => {
                let sections: Vec<&UsSection> = match jurisdiction {
                    Jurisdiction::OptOut(state) => {
                        // The state's own section speaks for it; else the national one.
                        (state.gpp_sections())
                            .find_map(|id| signals.us_section(id))
                            .into_iter()
                            .collect()
                    }
                    // No state known: any US section's opt-out counts.
                    _ => signals.us_sections().collect(),
                };
                opt_out(signals, &sections, &mut reasons)
            }
            ConsentRule::None => {
                let gpc = signals.gpc();
                reasons.add(if gpc { Reason::Gpc } else { Reason::NoOptOut });
                !gpc
            }
        };
        Self {
            edge_id,
            origin: edge_id,
            withdraw: !edge_id,
            rule,
            reasons,
            tcf: signals.tcf().filter(|_| rule == ConsentRule::OptIn),
            purposes: &settings.purposes,
        }
    }

    /// Whether a partner with this TCF vendor ID (from `consent.partner_vendors`) gets the
    /// edge ID. Never without one for the reader. Outside opt-in rules, as the reader. Under
    /// opt-in: never without a vendor ID; with one, only when the TC string's DisclosedVendors
    /// segment (TCF 2.3), if present, lists the vendor, and for every configured purpose the
    /// vendor has a legal basis the publisher's restrictions allow:
    ///
    /// * consent: the purpose's consent and the vendor's consent, and no restriction of the
    ///   purpose to legitimate interest (type 2);
    /// * legitimate interest, for purposes that allow it (2, 7 to 11): the purpose's
    ///   legitimate interest and the vendor's, neither objected to, and no restriction of the
    ///   purpose to consent (type 1).
    ///
    /// A restriction of type 0 (not allowed), the undefined type 3, or both types 1 and 2 on one
    /// purpose forbid it.
    pub fn partner(&self, vendor_id: Option<u16>) -> PartnerDecision {
        if !self.edge_id {
            return PartnerDecision {
                allowed: false,
                reason: Reason::NoEdgeId,
            };
        }
        self.vendor_basis(vendor_id, self.purposes)
    }

    /// Whether a TCF vendor has a legal basis for every purpose of `purposes` (the rules of
    /// [`Decision::partner`]), whether or not the reader has an edge ID: what an auction asks
    /// of a bidder (purpose 2 to take part; 1 and 4 for an ID). Outside opt-in rules, allowed
    /// (`not-opt-in`); under opt-in without a TC string, refused (`no-tcf`).
    pub fn vendor_basis(&self, vendor_id: Option<u16>, purposes: &[u8]) -> PartnerDecision {
        let verdict = |allowed, reason| PartnerDecision { allowed, reason };
        if self.rule != ConsentRule::OptIn {
            return verdict(true, Reason::NotOptIn);
        }
        let Some(tcf) = self.tcf else {
            return verdict(false, Reason::NoTcf);
        };
        let Some(vendor) = vendor_id else {
            return verdict(false, Reason::NoVendorId);
        };
        if tcf
            .disclosed_vendors
            .as_ref()
            .is_some_and(|d| !d.contains(vendor))
        {
            return verdict(false, Reason::VendorNotDisclosed);
        }
        let core = &tcf.core;
        let mut reason = Reason::VendorConsent;
        for &purpose in purposes {
            let (mut require_consent, mut require_interest) = (false, false);
            for r in &core.publisher_restrictions {
                if r.purpose_id != purpose || !r.applies_to(vendor) {
                    continue;
                }
                match r.restriction_type {
                    RestrictionType::RequireConsent => require_consent = true,
                    RestrictionType::RequireLegitimateInterest => require_interest = true,
                    RestrictionType::NotAllowed | RestrictionType::Undefined => {
                        return verdict(false, Reason::VendorRestricted);
                    }
                }
            }
            if require_consent && require_interest {
                // Contradictory restrictions leave no basis.
                return verdict(false, Reason::VendorRestricted);
            }
            let consent = core.purpose_consents.has(purpose)
                && core.vendor_consents.contains(vendor)
                && !require_interest;
            let interest = LEGITIMATE_INTEREST_PURPOSES.contains(&purpose)
                && core.purpose_legitimate_interests.has(purpose)
                && core.vendor_legitimate_interests.contains(vendor)
                && !require_consent;
            match (consent, interest) {
                (true, _) => {}
                (false, true) => reason = Reason::VendorLegitimateInterest,
                (false, false) => return verdict(false, Reason::VendorNoBasis),
            }
        }
        verdict(true, reason)
    }

    /// Whether the reader opted in to TCF special feature `id` (1: precise geolocation) in the
    /// TC string, under opt-in rules; outside them, whether the reader has no refusal at all
    /// (the edge ID's rule: no opt-out, no GPC).
    pub fn special_feature(&self, id: u8) -> bool {
        match self.rule {
            ConsentRule::OptIn => self
                .tcf
                .is_some_and(|tcf| tcf.core.special_feature_optins.has(id)),
            ConsentRule::OptOut | ConsentRule::None => self.edge_id,
        }
    }

    /// [`Decision::partner`] for a partner host, its vendor ID looked up in
    /// `consent.partner_vendors` (the host or a parent domain).
    pub fn partner_at(&self, host: &str, settings: &Consent) -> PartnerDecision {
        self.partner(settings.vendor_for(&host.to_ascii_lowercase()))
    }
}

/// Opt-in: consent to every configured purpose, from a valid TC string, and no `Sec-GPC: 1`
/// unless `consent.gpc_refuses_opt_in` is off. GPC is an explicit objection to the sale and
/// sharing of the reader's data, which is what handing the ID to others is; a TC string may
/// be older than the browser setting, so the objection wins over a recorded consent.
fn opt_in(signals: &Signals, settings: &Consent, reasons: &mut Reasons) -> bool {
    let Some(tcf) = signals.tcf() else {
        reasons.add(Reason::NoTcf);
        return false;
    };
    let consents = if settings.publisher_segment {
        match &tcf.publisher_tc {
            Some(publisher) => publisher.purpose_consents,
            None => {
                reasons.add(Reason::NoPublisherSegment);
                return false;
            }
        }
    } else {
        tcf.core.purpose_consents
    };
    let all = settings.purposes.iter().all(|&p| consents.has(p));
    if !all {
        reasons.add(Reason::TcfNoConsent);
        return false;
    }
    // `gpc` is the reason only where it decided: a consent it overrides.
    if settings.gpc_refuses_opt_in && signals.gpc() {
        reasons.add(Reason::Gpc);
        return false;
    }
    reasons.add(Reason::TcfConsent);
    true
}

/// Opt-out: no refusal in `Sec-GPC`, the US Privacy string or `sections`.
fn opt_out(signals: &Signals, sections: &[&UsSection], reasons: &mut Reasons) -> bool {
    let before = *reasons;
    if signals.gpc() {
        reasons.add(Reason::Gpc);
    }
    let refused = |o: Option<OptOut>| matches!(o, Some(OptOut::OptedOut | OptOut::Invalid));
    for us in sections {
        if refused(us.sale_opt_out())
            || refused(us.sharing_opt_out())
            || refused(us.targeted_advertising_opt_out())
        {
            reasons.add(Reason::GppOptOut);
        }
        if us.gpc() == Some(true) {
            reasons.add(Reason::Gpc);
        }
        // 1 = no consent, 3 = invalid (read as no consent).
        if us
            .known_child_sensitive_data_consents()
            .iter()
            .any(|&v| v == 1 || v == 3)
        {
            reasons.add(Reason::KnownChild);
        }
    }
    if signals
        .us_privacy()
        .is_some_and(|u| u.opt_out_sale == UspFlag::Yes)
    {
        reasons.add(Reason::UspOptOut);
    }
    if *reasons == before {
        reasons.add(Reason::NoOptOut);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{Flags, PublisherRestriction, UsState, VendorSet};
    use super::*;
    use proptest::prelude::*;
    use trusted_server_settings::{PartnerVendor, Settings};

    const DE: Jurisdiction = Jurisdiction::OptIn;

    fn state(code: &str) -> Jurisdiction {
        Jurisdiction::OptOut(UsState::parse(code).unwrap())
    }

    fn settings() -> Consent {
        Settings::DEFAULT.consent
    }

    fn with_purposes(purposes: &[u8]) -> Consent {
        Consent {
            purposes: purposes.to_vec().into(),
            ..settings()
        }
    }

    fn signals(cookies: &str, gpc: bool) -> Signals {
        Signals::from_cookies(cookies, gpc)
    }

    fn tcf(text: &str) -> Signals {
        signals(&format!("euconsent-v2={text}"), false)
    }

    fn gpp(text: &str, gpc: bool) -> Signals {
        signals(&format!("__gpp={text}"), gpc)
    }

    /// `edge_id` and the reasons, as the access line would show them.
    fn outcome(s: &Signals, j: Jurisdiction, c: &Consent) -> (bool, String) {
        let d = Decision::decide(s, &j, c);
        assert_eq!((d.origin, d.withdraw), (d.edge_id, !d.edge_id));
        (d.edge_id, d.reasons.to_string())
    }

    #[test]
    fn opt_in_needs_consent_to_the_configured_purposes() {
        let c = settings();
        let yes = (true, "opt-in-region tcf-consent".to_owned());
        assert_eq!(outcome(&tcf(TCF_P1_V755), DE, &c), yes);
        assert_eq!(outcome(&gpp(GPP_TCF_P1_V755, false), DE, &c), yes);
        let no_consent = (false, "opt-in-region tcf-no-consent".to_owned());
        assert_eq!(outcome(&tcf(TCF_NO_CONSENT), DE, &c), no_consent);
        let none = (false, "opt-in-region no-tcf".to_owned());
        assert_eq!(outcome(&signals("", false), DE, &c), none);
        assert_eq!(outcome(&tcf("not-a-tc-string"), DE, &c), none);
        // US signals say nothing under opt-in.
        assert_eq!(outcome(&gpp(GPP_CA_NO_OPT_OUT, false), DE, &c), none);
        // Consent to 1 but not 2.
        let p12 = with_purposes(&[1, 2]);
        assert_eq!(outcome(&tcf(TCF_P1_V755), DE, &p12), no_consent);
        assert_eq!(outcome(&tcf(TCF_LI), DE, &p12), yes);
    }

    #[test]
    fn under_opt_in_gpc_refuses_a_consent_unless_configured_otherwise() {
        let c = settings();
        let with_gpc = |text: &str| signals(&format!("euconsent-v2={text}"), true);
        assert_eq!(
            outcome(&with_gpc(TCF_P1_V755), DE, &c),
            (false, "opt-in-region gpc".to_owned())
        );
        // Without a consent, GPC decides nothing: the TC string's reason stays.
        assert_eq!(
            outcome(&with_gpc(TCF_NO_CONSENT), DE, &c),
            (false, "opt-in-region tcf-no-consent".to_owned())
        );
        let s = with_gpc(TCF_P1_V755);
        let d = Decision::decide(&s, &DE, &c);
        assert_eq!(d.partner(Some(755)).reason, Reason::NoEdgeId);
        // `consent.gpc_refuses_opt_in = false`: the recorded consent wins.
        let tcf_wins = Consent {
            gpc_refuses_opt_in: false,
            ..settings()
        };
        assert_eq!(
            outcome(&with_gpc(TCF_P1_V755), DE, &tcf_wins),
            (true, "opt-in-region tcf-consent".to_owned())
        );
    }

    #[test]
    fn disagreeing_copies_of_a_consent_cookie_refuse_where_cookies_count() {
        let c = settings();
        let conflict = |cookies: &str| outcome(&signals(cookies, false), DE, &c);
        let refused = (false, "opt-in-region conflicting-cookies".to_owned());
        // Either order: a planted copy can neither grant nor keep a consent.
        for cookies in [
            format!("euconsent-v2={TCF_NO_CONSENT}; euconsent-v2={TCF_P1_V755}"),
            format!("euconsent-v2={TCF_P1_V755}; euconsent-v2={TCF_NO_CONSENT}"),
        ] {
            assert_eq!(conflict(&cookies), refused, "{cookies}");
        }
        // The same value twice, or a malformed copy (as if absent), is no conflict.
        let yes = (true, "opt-in-region tcf-consent".to_owned());
        for cookies in [
            format!("euconsent-v2={TCF_P1_V755}; euconsent-v2={TCF_P1_V755}"),
            format!("euconsent-v2=garbage; euconsent-v2={TCF_P1_V755}"),
            format!(
                "euconsent-v2={TCF_P1_V755}; euconsent-v2={}",
                "A".repeat(5000)
            ),
        ] {
            assert_eq!(conflict(&cookies), yes, "{cookies}");
        }
        // Opt-out: a planted copy without the opt-out cannot hide it.
        let ca = state("CA");
        for cookies in [
            format!("__gpp={GPP_CA_NO_OPT_OUT}; __gpp={GPP_CA_SALE_OPT_OUT}"),
            "usprivacy=1YNN; us_privacy=1YYN".to_owned(),
            "__gpp_sid=7; __gpp_sid=8".to_owned(),
        ] {
            assert_eq!(
                outcome(&signals(&cookies, false), ca, &c),
                (false, "opt-out-region conflicting-cookies".to_owned()),
                "{cookies}"
            );
        }
        // Elsewhere consent cookies do not count, so neither does their conflict.
        let s = signals("usprivacy=1YNN; usprivacy=1YYN", false);
        assert!(Decision::decide(&s, &Jurisdiction::Elsewhere, &c).edge_id);
    }

    #[test]
    fn the_publisher_segment_when_configured() {
        let core = settings();
        let publisher = Consent {
            publisher_segment: true,
            ..settings()
        };
        assert!(!outcome(&tcf(TCF_PUBLISHER_P1), DE, &core).0);
        assert_eq!(
            outcome(&tcf(TCF_PUBLISHER_P1), DE, &publisher),
            (true, "opt-in-region tcf-consent".to_owned())
        );
        assert_eq!(
            outcome(&tcf(TCF_P1_V755), DE, &publisher),
            (false, "opt-in-region no-publisher-segment".to_owned())
        );
    }

    #[test]
    fn opt_out_states_read_their_own_section_then_the_national_one() {
        let c = settings();
        let ca = state("CA");
        let ok = (true, "opt-out-region no-opt-out".to_owned());
        assert_eq!(outcome(&signals("", false), ca, &c), ok);
        assert_eq!(outcome(&gpp(GPP_CA_NO_OPT_OUT, false), ca, &c), ok);
        assert_eq!(
            outcome(&gpp(GPP_CA_SALE_OPT_OUT, false), ca, &c),
            (false, "opt-out-region gpp-opt-out".to_owned())
        );
        assert_eq!(
            outcome(&gpp(GPP_CA_GPC, false), ca, &c),
            (false, "opt-out-region gpc".to_owned())
        );
        assert_eq!(
            outcome(&gpp(GPP_CA_NO_OPT_OUT, true), ca, &c),
            (false, "opt-out-region gpc".to_owned())
        );
        // California's section is not Virginia's: Virginia reads the national one (none here).
        assert_eq!(
            outcome(&gpp(GPP_CA_SALE_OPT_OUT, false), state("VA"), &c),
            ok
        );
        // No state section: the national one speaks.
        let nat = gpp(GPP_NAT_TA_OPT_OUT, false);
        assert_eq!(
            outcome(&nat, ca, &c),
            (false, "opt-out-region gpp-opt-out".to_owned())
        );
        assert_eq!(outcome(&gpp(GPP_NAT_NO_OPT_OUT, false), ca, &c), ok);
        // The state's own section wins over the national one.
        let both = gpp(GPP_VA_OK_NAT_SALE_OPT_OUT, false);
        assert_eq!(outcome(&both, state("VA"), &c), ok);
        assert!(!outcome(&both, state("CO"), &c).0);
        assert_eq!(
            outcome(&gpp(GPP_CA_KNOWN_CHILD, false), ca, &c),
            (false, "opt-out-region known-child".to_owned())
        );
        // US Privacy.
        assert_eq!(
            outcome(&signals("usprivacy=1YYN", false), ca, &c),
            (false, "opt-out-region usp-opt-out".to_owned())
        );
        assert_eq!(outcome(&signals("us_privacy=1YNN", false), ca, &c), ok);
        assert!(!outcome(&gpp(GPP_USP_OPT_OUT, false), ca, &c).0);
        // A TC string means nothing here.
        assert_eq!(outcome(&tcf(TCF_NO_CONSENT), ca, &c), ok);
    }

    #[test]
    fn elsewhere_only_gpc_refuses() {
        let c = settings();
        let e = Jurisdiction::Elsewhere;
        assert_eq!(
            outcome(&signals("", false), e, &c),
            (true, "elsewhere no-opt-out".to_owned())
        );
        assert_eq!(
            outcome(&signals("", true), e, &c),
            (false, "elsewhere gpc".to_owned())
        );
        assert!(outcome(&gpp(GPP_CA_SALE_OPT_OUT, false), e, &c).0);
        assert!(outcome(&tcf(TCF_NO_CONSENT), e, &c).0);
    }

    #[test]
    fn an_unknown_location_follows_consent_unknown() {
        let u = Jurisdiction::Unknown;
        let mut c = settings();
        assert_eq!(
            outcome(&signals("", false), u, &c),
            (false, "location-unknown no-tcf".to_owned())
        );
        assert!(outcome(&tcf(TCF_P1_V755), u, &c).0);
        c.unknown = ConsentRule::OptOut;
        assert!(outcome(&signals("", false), u, &c).0);
        // Any US section's opt-out counts when the state is unknown.
        assert!(!outcome(&gpp(GPP_CA_SALE_OPT_OUT, false), u, &c).0);
        assert!(!outcome(&gpp(GPP_NAT_TA_OPT_OUT, false), u, &c).0);
        c.unknown = ConsentRule::None;
        assert_eq!(
            outcome(&signals("", false), u, &c),
            (true, "location-unknown no-opt-out".to_owned())
        );
        assert!(!outcome(&signals("", true), u, &c).0);
    }

    fn partner(text: &str, c: &Consent, vendor: Option<u16>) -> (bool, &'static str) {
        let s = tcf(text);
        let d = Decision::decide(&s, &DE, c);
        let p = d.partner(vendor);
        (p.allowed, p.reason.as_str())
    }

    #[test]
    fn a_partner_needs_its_vendor_to_have_a_basis() {
        let c = settings();
        assert_eq!(
            partner(TCF_P1_V755, &c, Some(755)),
            (true, "vendor-consent")
        );
        assert_eq!(
            partner(TCF_P1_V755, &c, Some(32)),
            (false, "vendor-not-disclosed")
        );
        assert_eq!(partner(TCF_P1_V755, &c, None), (false, "no-vendor-id"));
        assert_eq!(
            partner(TCF_NO_CONSENT, &c, Some(755)),
            (false, "no-edge-id")
        );
        assert_eq!(
            partner(TCF_P1_NOT_DISCLOSED, &c, Some(755)),
            (false, "vendor-not-disclosed")
        );
        assert_eq!(
            partner(TCF_P1_NOT_DISCLOSED, &c, Some(32)),
            (true, "vendor-consent")
        );
        // No DisclosedVendors segment (a TCF 2.2 string): no disclosure check.
        assert_eq!(
            partner(TCF_P1_NO_DISCLOSED_SEGMENT, &c, Some(755)),
            (true, "vendor-consent")
        );
        assert_eq!(
            partner(TCF_P1_RESTRICTED, &c, Some(755)),
            (false, "vendor-restricted")
        );
        // Legitimate interest: allowed for purpose 2, never for 1 or 3.
        assert_eq!(partner(TCF_LI, &c, Some(755)), (false, "vendor-no-basis"));
        let p2 = with_purposes(&[2]);
        assert_eq!(
            partner(TCF_LI, &p2, Some(755)),
            (true, "vendor-legitimate-interest")
        );
        assert_eq!(
            partner(TCF_LI, &with_purposes(&[3]), Some(755)),
            (false, "vendor-no-basis")
        );
        assert!(partner(TCF_LI, &with_purposes(&[2, 7]), Some(755)).0);
        // Restricted to consent: legitimate interest no longer counts.
        assert_eq!(
            partner(TCF_LI_REQUIRE_CONSENT, &p2, Some(755)),
            (false, "vendor-no-basis")
        );
        assert!(partner(TCF_LI_REQUIRE_CONSENT, &with_purposes(&[7]), Some(755)).0);
        // Restricted to legitimate interest: consent no longer counts.
        assert_eq!(
            partner(TCF_CONSENT_REQUIRE_LI, &p2, Some(755)),
            (false, "vendor-no-basis")
        );
        assert_eq!(
            partner(TCF_CONSENT_REQUIRE_LI, &c, Some(755)),
            (true, "vendor-consent")
        );
        // Outside opt-in, a partner gets what the reader has.
        let s = signals("", false);
        let d = Decision::decide(&s, &state("CA"), &c);
        assert_eq!(
            d.partner(None),
            PartnerDecision {
                allowed: true,
                reason: Reason::NotOptIn
            }
        );
        let s = signals("", true);
        let d = Decision::decide(&s, &Jurisdiction::Elsewhere, &c);
        assert_eq!(
            d.partner(Some(755)),
            PartnerDecision {
                allowed: false,
                reason: Reason::NoEdgeId
            }
        );
    }

    #[test]
    fn partners_are_found_by_host() {
        let c = Consent {
            partner_vendors: vec![PartnerVendor {
                domain: "demo-partner.example".into(),
                vendor_id: 755,
            }]
            .into(),
            ..settings()
        };
        let s = tcf(TCF_P1_V755);
        let d = Decision::decide(&s, &DE, &c);
        assert!(d.partner_at("ads.Demo-Partner.example", &c).allowed);
        assert_eq!(d.partner_at("other.example", &c).reason, Reason::NoVendorId);
    }

    #[test]
    fn debug_shows_the_outcome_not_the_string() {
        let (s, c) = (tcf(TCF_P1_V755), settings());
        let d = Decision::decide(&s, &DE, &c);
        let debug = format!("{d:?}");
        assert_eq!(
            debug,
            "Decision { edge_id: true, origin: true, withdraw: false, rule: \"opt-in\", reasons: \"opt-in-region tcf-consent\" }"
        );
    }

    #[test]
    fn reason_names_are_unique_short_words() {
        let names: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        for n in names {
            assert!(
                n.len() <= 32 && n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{n}"
            );
        }
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "ALL is in declaration order");
        }
    }

    /// Real strings, malformed ones, and nothing: the pool random signals are drawn from.
    const TCF_POOL: [&str; 12] = [
        TCF_P1_V755,
        TCF_NO_CONSENT,
        TCF_P1_NOT_DISCLOSED,
        TCF_P1_NO_DISCLOSED_SEGMENT,
        TCF_P1_RESTRICTED,
        TCF_LI,
        TCF_LI_REQUIRE_CONSENT,
        TCF_CONSENT_REQUIRE_LI,
        TCF_PUBLISHER_P1,
        TCF_MANY_VENDORS,
        "CPzvOIAPzvOIAGXABBENAUEAAACAAAAAAAAAAAAAAAAA.",
        "",
    ];
    const GPP_POOL: [&str; 11] = [
        GPP_CA_SALE_OPT_OUT,
        GPP_CA_NO_OPT_OUT,
        GPP_CA_GPC,
        GPP_NAT_TA_OPT_OUT,
        GPP_NAT_NO_OPT_OUT,
        GPP_VA_OK_NAT_SALE_OPT_OUT,
        GPP_TCF_P1_V755,
        GPP_USP_OPT_OUT,
        GPP_MANY_US,
        "DBABBg~garbage",
        "",
    ];
    const USP_POOL: [&str; 5] = ["1YYN", "1YNN", "1---", "1yyn", ""];
    const SID_POOL: [&str; 5] = ["", "2", "7,8", "-1", "x"];

    fn any_signals() -> impl Strategy<Value = (String, bool)> {
        (
            prop::sample::select(&TCF_POOL[..]),
            prop::sample::select(&GPP_POOL[..]),
            prop::sample::select(&USP_POOL[..]),
            prop::sample::select(&SID_POOL[..]),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(t, g, u, sid, gpc, us_privacy)| {
                let usp = if us_privacy {
                    "us_privacy"
                } else {
                    "usprivacy"
                };
                let cookies = format!("euconsent-v2={t}; __gpp={g}; __gpp_sid={sid}; {usp}={u}");
                (cookies, gpc)
            })
    }

    fn any_jurisdiction() -> impl Strategy<Value = Jurisdiction> {
        prop_oneof![
            Just(Jurisdiction::OptIn),
            Just(Jurisdiction::Elsewhere),
            Just(Jurisdiction::Unknown),
            prop::sample::select(&["CA", "VA", "CO", "NY", "RI", "FL"][..]).prop_map(state),
        ]
    }

    fn any_settings() -> impl Strategy<Value = Consent> {
        (
            prop::sample::select(&ConsentRule::ALL[..]),
            prop::collection::vec(1u8..=11, 1..4),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(
                |(unknown, mut purposes, publisher_segment, gpc_refuses_opt_in)| {
                    purposes.sort_unstable();
                    purposes.dedup();
                    Consent {
                        unknown,
                        purposes: purposes.into(),
                        publisher_segment,
                        gpc_refuses_opt_in,
                        ..settings()
                    }
                },
            )
    }

    /// Purposes drawn for the partner property: some that need consent, some that allow
    /// legitimate interest (few, so restrictions often land on a configured purpose).
    const PURPOSES: [u8; 5] = [1, 2, 3, 7, 10];

    proptest! {
        // Many cases: a restriction must land on a configured purpose and on this vendor.
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Vendor 755's verdict against the TCF rules, stated per purpose, for TC strings built
        /// field by field: purpose consents and legitimate interests, the vendor's consent and
        /// legitimate interest, DisclosedVendors and publisher restrictions all random. The
        /// edge ID comes from the publisher segment here, so every partner verdict is reached.
        #[test]
        fn a_partner_verdict_follows_the_tcf_rules(
            purposes in prop::collection::btree_set(prop::sample::select(&PURPOSES[..]), 1..4),
            (consents, interests) in (0u64..1 << 11, 0u64..1 << 11),
            (vendor_consent, vendor_interest) in (any::<bool>(), any::<bool>()),
            disclosed in prop::option::of(any::<bool>()),
            restrictions in prop::collection::vec(
                (prop::sample::select(&PURPOSES[..]), 0u8..4, any::<bool>()),
                0..4,
            ),
        ) {
            const V: u16 = 755;
            let mut tcf = TcString::decode(TCF_PUBLISHER_P1).unwrap();
            let purposes: Vec<u8> = purposes.into_iter().collect();
            tcf.publisher_tc.as_mut().unwrap().purpose_consents =
                Flags(purposes.iter().map(|p| 1u64 << (p - 1)).sum());
            let core = &mut tcf.core;
            core.purpose_consents = Flags(consents);
            core.purpose_legitimate_interests = Flags(interests);
            let set = |on: bool| VendorSet::of(if on { &[32, V] } else { &[32] });
            core.vendor_consents = set(vendor_consent);
            core.vendor_legitimate_interests = set(vendor_interest);
            core.publisher_restrictions = (restrictions.iter())
                .map(|&(purpose_id, code, names_v)| PublisherRestriction {
                    purpose_id,
                    restriction_type: [
                        RestrictionType::NotAllowed,
                        RestrictionType::RequireConsent,
                        RestrictionType::RequireLegitimateInterest,
                        RestrictionType::Undefined,
                    ][usize::from(code)],
                    vendors: vec![if names_v { (700, 800) } else { (1, 40) }],
                })
                .collect();
            tcf.disclosed_vendors = disclosed.map(set);
            let c = Consent {
                purposes: purposes.clone().into(),
                publisher_segment: true,
                ..settings()
            };
            let s = Signals::with_tcf(tcf, false);
            let d = Decision::decide(&s, &Jurisdiction::OptIn, &c);
            prop_assert!(d.edge_id);
            let verdict = d.partner(Some(V));

            // The restriction types on (purpose, V).
            let on = |p: u8, code: u8| restrictions.contains(&(p, code, true));
            let consent = |p: u8| consents & (1 << (p - 1)) != 0 && vendor_consent;
            // TCF: purposes 1 and 3 to 6 need consent; 2 and 7 to 11 allow legitimate
            // interest, when neither the purpose's nor the vendor's was objected to.
            let interest = |p: u8| {
                matches!(p, 2 | 7..=11) && interests & (1 << (p - 1)) != 0 && vendor_interest
            };
            let basis = |p: u8| {
                let forbidden = on(p, 0) || on(p, 3) || (on(p, 1) && on(p, 2));
                !forbidden && ((consent(p) && !on(p, 2)) || (interest(p) && !on(p, 1)))
            };
            let disclosed_ok = disclosed != Some(false);
            prop_assert_eq!(
                verdict.allowed,
                disclosed_ok && purposes.iter().all(|&p| basis(p)),
                "{:?}", verdict
            );
            if verdict.allowed {
                let by_interest = purposes.iter().any(|&p| !consent(p) || on(p, 2));
                let want = if by_interest {
                    Reason::VendorLegitimateInterest
                } else {
                    Reason::VendorConsent
                };
                prop_assert_eq!(verdict.reason, want);
                // Never by legitimate interest for a purpose that needs consent.
                for &p in &purposes {
                    if matches!(p, 1 | 3..=6) {
                        prop_assert!(consent(p) && !on(p, 2));
                    }
                }
            } else if !disclosed_ok {
                prop_assert_eq!(verdict.reason, Reason::VendorNotDisclosed);
            }
        }

    }

    #[test]
    fn padding_hides_no_consent_cookie() {
        let c = settings();
        let filler = |n: usize| format!("pad={}", "x".repeat(n));
        // Germany: a planted consent first, 16 KiB and more of filler, the reader's refusal.
        for n in [16 * 1024, 64 * 1024] {
            let cookies = format!(
                "euconsent-v2={TCF_P1_V755}; {}; euconsent-v2={TCF_NO_CONSENT}",
                filler(n)
            );
            assert_eq!(
                outcome(&signals(&cookies, false), DE, &c),
                (false, "opt-in-region conflicting-cookies".to_owned())
            );
            // California: ordinary cookies before the opt-out.
            let ca = state("CA");
            for opt_out in [
                "usprivacy=1YYN".to_owned(),
                format!("__gpp={GPP_CA_SALE_OPT_OUT}"),
            ] {
                let cookies = format!("{}; {opt_out}", filler(n));
                assert!(!outcome(&signals(&cookies, false), ca, &c).0, "{opt_out}");
            }
        }
    }

    #[test]
    fn a_planted_gpp_sid_withholds_but_never_grants() {
        let c = settings();
        let ca = state("CA");
        for sid in ["-1", "2", "7", "2,7"] {
            let cookies = format!("__gpp={GPP_CA_SALE_OPT_OUT}; __gpp_sid={sid}");
            assert_eq!(
                outcome(&signals(&cookies, false), ca, &c),
                (false, "opt-out-region gpp-opt-out".to_owned()),
                "{sid}"
            );
        }
        // A US Privacy section set aside still speaks.
        let cookies = format!("__gpp={GPP_USP_OPT_OUT}; __gpp_sid=7");
        assert!(!outcome(&signals(&cookies, false), ca, &c).0);
        // Withholding still works: the TCF section set aside under opt-in.
        let cookies = format!("__gpp={GPP_TCF_P1_V755}; __gpp_sid=7");
        assert_eq!(
            outcome(&signals(&cookies, false), DE, &c),
            (false, "opt-in-region no-tcf".to_owned())
        );
        // Listing the applicable sections changes nothing.
        let cookies = format!("__gpp={GPP_CA_NO_OPT_OUT}; __gpp_sid=8");
        assert!(outcome(&signals(&cookies, false), ca, &c).0);
    }

    /// Cookies that are not consent cookies, of random names (never a consent cookie's) and
    /// sizes, up to 40 KiB in all.
    fn other_cookies() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(("[a-z_]{1,12}", 0usize..12_000, "[ -~&&[^;]]{0,8}"), 0..6).prop_map(
            |pieces| {
                (pieces.into_iter())
                    .filter(|(name, _, _)| !super::super::CONSENT_COOKIES.contains(&name.as_str()))
                    .map(|(name, len, text)| format!("{name}={text}{}", "x".repeat(len)))
                    .collect()
            },
        )
    }

    proptest! {
        /// Other cookies, however many, large and wherever placed, change nothing: the decision
        /// is the one the consent cookies alone give.
        #[test]
        fn other_cookies_never_change_the_decision(
            (cookies, gpc) in any_signals(),
            (planted, second) in (any_signals(), any::<bool>()),
            others in other_cookies(),
            at in prop::collection::vec(any::<prop::sample::Index>(), 6),
            j in any_jurisdiction(),
            c in any_settings(),
        ) {
            // The reader's consent cookies, sometimes with a second copy of each planted.
            let mut consent: Vec<String> = cookies.split("; ").map(str::to_owned).collect();
            if second {
                consent.extend(planted.0.split("; ").map(str::to_owned));
            }
            let alone = signals(&consent.join("; "), gpc);
            let mut mixed = consent.clone();
            for (other, i) in others.into_iter().zip(&at) {
                mixed.insert(i.index(mixed.len() + 1), other);
            }
            let padded = signals(&mixed.join("; "), gpc);
            let (d1, d2) = (Decision::decide(&alone, &j, &c), Decision::decide(&padded, &j, &c));
            prop_assert_eq!(&d1, &d2);
        }

        /// `__gpp_sid` can only withhold: with it, an edge ID only when the same cookies
        /// without it give one too.
        #[test]
        fn a_gpp_sid_never_grants_an_id(
            (cookies, gpc) in any_signals(), j in any_jurisdiction(), c in any_settings(),
        ) {
            let without: Vec<&str> = (cookies.split("; "))
                .filter(|pair| !pair.starts_with("__gpp_sid="))
                .collect();
            let with = Decision::decide(&signals(&cookies, gpc), &j, &c).edge_id;
            let plain = signals(&without.join("; "), gpc);
            prop_assert!(!with || Decision::decide(&plain, &j, &c).edge_id);
        }
    }

    proptest! {
        #[test]
        fn under_opt_in_gpc_refuses_unless_configured_otherwise(
            (cookies, _) in any_signals(), c in any_settings(),
        ) {
            let (with, without) = (signals(&cookies, true), signals(&cookies, false));
            let d = Decision::decide(&with, &Jurisdiction::OptIn, &c);
            let quiet = Decision::decide(&without, &Jurisdiction::OptIn, &c);
            if c.gpc_refuses_opt_in {
                prop_assert!(!d.edge_id && d.withdraw);
                // `gpc` is named exactly when it overrode a consent.
                prop_assert_eq!(d.reasons.contains(Reason::Gpc), quiet.edge_id);
            } else {
                prop_assert_eq!(d.edge_id, quiet.edge_id);
                prop_assert_eq!(d.reasons, quiet.reasons);
            }
        }

        #[test]
        fn a_gpc_reader_gets_no_id_outside_opt_in(
            (cookies, _) in any_signals(), j in any_jurisdiction(), c in any_settings(),
        ) {
            let s = signals(&cookies, true);
            let d = Decision::decide(&s, &j, &c);
            if d.rule != ConsentRule::OptIn {
                prop_assert!(!d.edge_id && d.withdraw);
                prop_assert!(d.reasons.contains(Reason::Gpc));
                prop_assert!(!d.partner(Some(755)).allowed);
            }
        }

        #[test]
        fn opt_in_without_a_tc_string_gets_no_id(
            (cookies, gpc) in any_signals(), c in any_settings(),
        ) {
            let s = signals(&cookies, gpc);
            let d = Decision::decide(&s, &Jurisdiction::OptIn, &c);
            if s.tcf().is_none() {
                prop_assert!(!d.edge_id && !d.origin && d.withdraw);
                prop_assert_eq!(d.reasons.to_string(), "opt-in-region no-tcf");
            }
            // Whatever the string, a partner never gets more than the reader.
            for v in [None, Some(32), Some(755), Some(1)] {
                prop_assert!(!d.partner(v).allowed || d.edge_id);
            }
            prop_assert!(!d.partner(None).allowed);
        }

        #[test]
        fn a_decision_is_a_pure_function_of_its_inputs(
            (cookies, gpc) in any_signals(), j in any_jurisdiction(), c in any_settings(),
        ) {
            let (s1, s2) = (signals(&cookies, gpc), signals(&cookies, gpc));
            let (d1, d2) = (Decision::decide(&s1, &j, &c), Decision::decide(&s2, &j, &c));
            prop_assert_eq!(&d1, &d2);
            prop_assert_eq!(d1.partner(Some(755)), d2.partner(Some(755)));
            prop_assert_eq!((d1.origin, d1.withdraw), (d1.edge_id, !d1.edge_id));
        }

        #[test]
        fn reasons_come_from_the_fixed_list(
            (cookies, gpc) in any_signals(), j in any_jurisdiction(), c in any_settings(),
        ) {
            let s = signals(&cookies, gpc);
            let d = Decision::decide(&s, &j, &c);
            let names: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
            let text = d.reasons.to_string();
            prop_assert!(!text.is_empty());
            for word in text.split(' ') {
                prop_assert!(names.contains(&word), "{}", word);
            }
            // Exactly one reason says where the reader is.
            let places = [Reason::OptInRegion, Reason::OptOutRegion, Reason::Elsewhere, Reason::LocationUnknown];
            prop_assert_eq!(places.iter().filter(|r| d.reasons.contains(**r)).count(), 1);
            prop_assert!(names.contains(&d.partner(Some(755)).reason.as_str()));
            // No consent string shows anywhere.
            let shown = format!("{d:?} {s:?} {text}");
            for raw in TCF_POOL.iter().chain(&GPP_POOL).filter(|t| t.len() > 4) {
                prop_assert!(!shown.contains(raw));
            }
        }
    }
}
