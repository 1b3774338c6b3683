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
//! | opt-in | a valid TC string consents to every purpose of `consent.purposes` (core segment, or the publisher segment when `consent.publisher_segment`) |
//! | opt-out | no `Sec-GPC: 1`; the GPP section of the reader's state (else the national one) opts out of neither sale, sharing nor targeted advertising, has no GPC flag set and no known child without consent; the US Privacy string has no sale opt-out |
//! | none | no `Sec-GPC: 1` |
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
    pub const ALL: [Reason; 21] = [
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
    pub fn decide(
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
        let verdict = |allowed, reason| PartnerDecision { allowed, reason };
        if !self.edge_id {
            return verdict(false, Reason::NoEdgeId);
        }
        if self.rule != ConsentRule::OptIn {
            return verdict(true, Reason::NotOptIn);
        }
        let (Some(vendor), Some(tcf)) = (vendor_id, self.tcf) else {
            return verdict(false, Reason::NoVendorId);
        };
        if tcf.disclosed_vendors.as_ref().is_some_and(|d| !d.contains(vendor)) {
            return verdict(false, Reason::VendorNotDisclosed);
        }
        let core = &tcf.core;
        let mut reason = Reason::VendorConsent;
        for &purpose in self.purposes {
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

    /// [`Decision::partner`] for a partner host, its vendor ID looked up in
    /// `consent.partner_vendors` (the host or a parent domain).
    pub fn partner_at(&self, host: &str, settings: &Consent) -> PartnerDecision {
        self.partner(settings.vendor_for(&host.to_ascii_lowercase()))
    }
}

/// Opt-in: consent to every configured purpose, from a valid TC string.
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
    reasons.add(if all {
        Reason::TcfConsent
    } else {
        Reason::TcfNoConsent
    });
    all
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
        if us.known_child_sensitive_data_consents().iter().any(|&v| v == 1 || v == 3) {
            reasons.add(Reason::KnownChild);
        }
    }
    if signals.us_privacy().is_some_and(|u| u.opt_out_sale == UspFlag::Yes) {
        reasons.add(Reason::UspOptOut);
    }
    if *reasons == before {
        reasons.add(Reason::NoOptOut);
        return true;
    }
    false
}
