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

use fastly::Request;
use trusted_server_core::consent::{Decision, Jurisdiction, Signals};
use trusted_server_core::Settings;

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
    let geo = request
        .get_client_ip_addr()
        .and_then(fastly::geo::geo_lookup);
    let jurisdiction = Jurisdiction::of(
        geo.as_ref().map(|g| g.country_code()),
        geo.as_ref().and_then(|g| g.region()),
        &settings.consent,
    );
    Observed {
        signals,
        jurisdiction,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trusted_server_settings::ConsentRule;

    /// A synthetic request has no client address: the location is unknown, and
    /// `consent.unknown` (default: opt-in) applies.
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
