//! The consent phase: what the reader's browser and location say, read into the core's
//! consent inputs the first time a request needs them. The core decides
//! ([`Observed::decide`], `trusted_server_core::consent::Decision`); the flows and endpoints
//! follow that decision: the identity phase makes or reuses an edge ID only when it allows
//! one, the origin gets `X-TS-EC` only when it allows that, a partner only when its own
//! verdict does, and a `ts-ec` cookie is expired on whatever response when it is withdrawn.
//!
//! Read here: every `Cookie` header (joined, as one; the core bounds what it reads),
//! `Sec-GPC`, and Fastly's geolocation of the client address (country, and region). No
//! consent string is kept: only the decoded signals.
//!
//! Why lazily ([`Consent`]): most requests a page makes (its stylesheets, scripts, images)
//! carry no edge ID and start no auction, so nothing they get depends on the decision; the
//! geolocation (a host call and its JSON) and the decoding of consent strings would be paid
//! for nothing.

use std::cell::OnceCell;
use std::net::IpAddr;

use fastly::Request;
use trusted_server_core::consent::{Decision, Jurisdiction, Signals};
use trusted_server_core::Settings;
use trusted_server_settings::Consent as ConsentSettings;

/// The reader's consent inputs: decoded signals and jurisdiction.
pub struct Observed {
    signals: Signals,
    jurisdiction: Jurisdiction,
}

impl Observed {
    /// The decision for this reader under `settings.consent`. Pure and cheap: the decoding
    /// is done once, when the inputs are observed.
    pub fn decide<'a>(&'a self, settings: &'a Settings) -> Decision<'a> {
        Decision::decide(&self.signals, &self.jurisdiction, &settings.consent)
    }
}

/// What the decision is read from, as the request carried it: kept so the request itself can
/// move on to its route.
struct Inputs {
    cookies: String,
    sec_gpc: bool,
    ip: Option<IpAddr>,
}

impl Inputs {
    fn of(request: &Request) -> Inputs {
        // Lossy: a header that is not UTF-8 must not panic; the decoders refuse what it mangles.
        let cookies = request.get_header_all_str_lossy("cookie").join("; ");
        let sec_gpc = request
            .get_header_all("sec-gpc")
            .any(|v| v.as_bytes().trim_ascii() == b"1");
        // The connection's address, never a header: `X-Forwarded-For`, `Fastly-Client-IP` or a
        // geolocation header the client sends cannot move the reader.
        let ip = crate::kit::incoming::client_ip();
        Inputs {
            cookies,
            sec_gpc,
            ip,
        }
    }

    fn observe(&self, settings: &Settings) -> Observed {
        Observed {
            signals: Signals::from_cookies(&self.cookies, self.sec_gpc),
            jurisdiction: jurisdiction_at(self.ip, &settings.consent),
        }
    }
}

/// One request's consent, decided the first time [`Consent::decision`] is asked for. The
/// decoded inputs live in `main`'s frame (`observed`), so the decision, which borrows them,
/// can live here beside them.
pub struct Consent<'o> {
    inputs: Inputs,
    settings: &'o Settings,
    observed: &'o OnceCell<Observed>,
    decision: OnceCell<Decision<'o>>,
}

impl<'o> Consent<'o> {
    /// The consent of `request`'s reader, not yet decided: only its headers and address are
    /// read now.
    pub fn of(request: &Request, observed: &'o OnceCell<Observed>, settings: &'o Settings) -> Self {
        Consent {
            inputs: Inputs::of(request),
            settings,
            observed,
            decision: OnceCell::new(),
        }
    }

    /// The decision: the signals decoded, the reader located and the rule applied, the first
    /// time it is asked for.
    pub fn decision(&self) -> &Decision<'o> {
        self.decision.get_or_init(|| {
            let observed = (self.observed).get_or_init(|| self.inputs.observe(self.settings));
            observed.decide(self.settings)
        })
    }

    /// The decision if the request has needed it (for the access line), else `None`.
    pub fn decided(&self) -> Option<&Decision<'o>> {
        self.decision.get()
    }
}

/// Where the reader at `ip` is, by Fastly's geolocation of the address (country, and
/// region) and the `[consent]` lists. No address, or one the platform cannot place, is
/// [`Jurisdiction::Unknown`] (`consent.unknown` then chooses the rule).
fn jurisdiction_at(ip: Option<IpAddr>, consent: &ConsentSettings) -> Jurisdiction {
    let geo = ip.and_then(crate::kit::geo::of);
    Jurisdiction::of(
        geo.as_ref().map(|g| g.country_code()),
        geo.as_ref().and_then(|g| g.region()),
        consent,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request's consent signals and the reader's location, read at once.
    fn read(request: &Request, settings: &Settings) -> Observed {
        Inputs::of(request).observe(settings)
    }
    use trusted_server_settings::ConsentRule;

    /// A synthetic request has no client address: the location is unknown, and
    /// `consent.unknown` (default: opt-in) applies.
    /// Under `viceroy run`, fastly.toml's `[local_server.geolocation]` places the loopback
    /// readers (docs/consent.md, "Local readers"); an address it has no entry for is unknown.
    #[test]
    fn the_location_is_the_geolocation_of_the_client_address() {
        use trusted_server_core::consent::UsState;
        let consent = &crate::kit::generated::SETTINGS.consent;
        let at = |ip: &str| jurisdiction_at(Some(ip.parse().unwrap()), consent);
        assert_eq!(at("127.0.0.10"), Jurisdiction::OptIn, "Germany");
        let california = Jurisdiction::OptOut(UsState::parse("CA").unwrap());
        assert_eq!(at("127.0.0.11"), california, "California");
        assert_eq!(at("127.0.0.12"), Jurisdiction::Elsewhere, "Brazil");
        assert_eq!(at("127.0.0.13"), Jurisdiction::Unknown, "the US, no state");
        assert_eq!(at("127.0.0.14"), Jurisdiction::OptIn, "Åland (AX)");
        assert_eq!(at("127.0.0.15"), Jurisdiction::OptIn, "French Guiana (GF)");
        assert_eq!(at("127.0.0.16"), Jurisdiction::Unknown, "EU, a placeholder");
        for japan in ["127.0.0.1", "127.0.0.2", "::1", "0:0:0:0:0:0:0:1"] {
            assert_eq!(at(japan), Jurisdiction::Elsewhere, "{japan}");
        }
        // No entry: unknown, so `consent.unknown` decides.
        for unplaced in ["192.0.2.1", "2001:db8::1"] {
            assert_eq!(at(unplaced), Jurisdiction::Unknown, "{unplaced}");
        }
        assert_eq!(jurisdiction_at(None, consent), Jurisdiction::Unknown);
    }

    /// `Sec-GPC` is read here and only here (the identity phase leaves it to the decision):
    /// `1`, with any surrounding spaces, in any of the header's lines; nothing else.
    #[test]
    fn sec_gpc_is_one_and_nothing_else() {
        let settings = &crate::kit::generated::SETTINGS;
        let gpc = |values: &[&str]| {
            let mut request = Request::get("http://www.pub.test/");
            for value in values {
                request.append_header("sec-gpc", *value);
            }
            read(&request, settings).signals.gpc()
        };
        assert!(gpc(&[" 1 "]));
        assert!(gpc(&["0", "1"]));
        assert!(!gpc(&["0"]));
        assert!(!gpc(&["true"]));
        assert!(!gpc(&[]));
    }

    #[test]
    fn without_an_address_the_unknown_rule_applies() {
        let settings = &crate::kit::generated::SETTINGS;
        let request = Request::get("http://www.pub.test/").with_header("sec-gpc", "1");
        let observed = read(&request, settings);
        let decision = observed.decide(settings);
        assert_eq!(decision.rule, settings.consent.unknown);
        if settings.consent.unknown == ConsentRule::OptIn {
            assert!(!decision.edge_id && decision.withdraw);
        }
    }

    /// Nothing is decided until asked for; then the decision is the one `read` gives, and
    /// asking again gives the same, decided once.
    #[test]
    fn the_decision_is_made_when_first_asked_for() {
        let settings = &crate::kit::generated::SETTINGS;
        let request = Request::get("http://www.pub.test/").with_header("sec-gpc", "1");
        let observed = OnceCell::new();
        let consent = Consent::of(&request, &observed, settings);
        assert!(consent.decided().is_none() && observed.get().is_none());
        let first: *const Decision = consent.decision();
        assert!(consent.decided().is_some() && observed.get().is_some());
        assert_eq!(
            *consent.decision(),
            read(&request, settings).decide(settings)
        );
        assert!(std::ptr::eq(first, consent.decision()), "decided once");
    }
}
