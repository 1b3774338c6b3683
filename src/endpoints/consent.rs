//! `GET /_ts/consent`: the request's consent decision as JSON, for page code (`tsjs`'s
//! `getConsent`) and for checking a configuration: the rule applied, whether an edge ID and
//! `X-TS-EC` to the origin are allowed, and the reasons. Never a consent string, never stored.

use fastly::http::StatusCode;
use fastly::Response;
use trusted_server_core::consent::Decision;
use trusted_server_core::Settings;

use crate::kit::reply;

/// `GET /_ts/consent`: `{"rule": "opt-in", "edge_id": false, "origin": false, "reasons":
/// ["opt-in-region", "no-tcf"]}`, `no-store`.
pub fn respond(settings: &Settings, decision: &Decision) -> Response {
    reply::json(
        StatusCode::OK,
        body(decision),
        "no-store, private",
        settings,
    )
}

/// The JSON body. The rule and the reasons are fixed lowercase words (letters and `-`), so
/// they are written as JSON strings without escaping.
fn body(decision: &Decision) -> String {
    let reasons: Vec<String> = (decision.reasons.iter())
        .map(|r| format!("\"{}\"", r.as_str()))
        .collect();
    format!(
        "{{\"rule\":\"{}\",\"edge_id\":{},\"origin\":{},\"reasons\":[{}]}}",
        decision.rule.as_str(),
        decision.edge_id,
        decision.origin,
        reasons.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use trusted_server_core::consent::{Jurisdiction, Signals};

    #[test]
    fn the_body_is_the_decision_and_no_string() {
        let settings = &crate::kit::generated::SETTINGS;
        let signals = Signals::from_cookies("euconsent-v2=not-a-tc-string", true);
        let decision = Decision::decide(&signals, &Jurisdiction::OptIn, &settings.consent);
        assert_eq!(
            body(&decision),
            r#"{"rule":"opt-in","edge_id":false,"origin":false,"reasons":["opt-in-region","no-tcf"]}"#
        );
        let decision = Decision::decide(&signals, &Jurisdiction::Elsewhere, &settings.consent);
        assert_eq!(
            body(&decision),
            r#"{"rule":"none","edge_id":false,"origin":false,"reasons":["elsewhere","gpc"]}"#
        );
    }
}
