//! The consent phase: what the reader's browser and location say, read once per request (in
//! `main`, before routing) into the core's consent inputs. The core decides
//! ([`Observed::decide`], `trusted_server_core::consent::Decision`); the flows and endpoints
//! follow that decision: the identity phase makes or reuses an edge ID only when it allows
//! one, the origin gets `X-TS-EC` only when it allows that, a partner only when its own
//! verdict does, and a `ts-ec` cookie is expired on whatever response when it is withdrawn.
//!
//! Read here: every `Cookie` header (joined, as one; the core bounds what it reads),
//! `Sec-GPC`, and Fastly's geolocation of the client address (country, and region). No
//! consent string is kept: only the decoded signals.

use std::net::IpAddr;

use fastly::Request;
use trusted_server_core::consent::{Decision, Jurisdiction, Signals};
use trusted_server_core::Settings;
use trusted_server_settings::Consent;

/// The reader's consent inputs: decoded signals and jurisdiction.
pub struct Observed {
    signals: Signals,
    jurisdiction: Jurisdiction,
}

impl Observed {
    /// The decision for this reader under `settings.consent`. Pure and cheap: the decoding
    /// is done once, in [`read`].
    pub fn decide<'a>(&'a self, settings: &'a Settings) -> Decision<'a> {
        Decision::decide(&self.signals, &self.jurisdiction, &settings.consent)
    }
}

/// Reads the request's consent signals and the reader's location.
pub fn read(request: &Request, settings: &Settings) -> Observed {
    // Lossy: a header that is not UTF-8 must not panic; the decoders refuse what it mangles.
    let cookies = request.get_header_all_str_lossy("cookie");
    let sec_gpc = request
        .get_header_all("sec-gpc")
        .any(|v| v.as_bytes().trim_ascii() == b"1");
    let signals = Signals::from_cookies(&cookies.join("; "), sec_gpc);
    // The connection's address, never a header: `X-Forwarded-For`, `Fastly-Client-IP` or a
    // geolocation header the client sends cannot move the reader.
    let jurisdiction = jurisdiction_at(request.get_client_ip_addr(), &settings.consent);
    Observed {
        signals,
        jurisdiction,
    }
}

/// Where the reader at `ip` is, by Fastly's geolocation of the address (country, and
/// region) and the `[consent]` lists. No address, or one the platform cannot place, is
/// [`Jurisdiction::Unknown`] (`consent.unknown` then chooses the rule).
fn jurisdiction_at(ip: Option<IpAddr>, consent: &Consent) -> Jurisdiction {
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
}
