//! Whether a response gets the first-party script's tag, and with which nonce: decided in the
//! response phase, carried out by the core's injection stage.

use fastly::Response;
use trusted_server_core::publisher::csp::{script_policy, ScriptOrigin, ScriptPolicy};
use trusted_server_core::{BodyPlan, Injection, Rewrite, Settings};

use crate::phases::client::Client;

/// The script's public path, with its content hash (made by `build.rs`, served by the script
/// endpoint).
use crate::kit::generated::SCRIPT_PATH;

/// The tag to inject into `response`'s body, if it gets one: a 2xx HTML page, rewritten, for
/// a page navigation, with injection on, and a `Content-Security-Policy` that lets the script
/// run (with its nonce, when it uses one). A policy that would block it is logged.
pub fn decide(
    response: &Response,
    plan: &BodyPlan,
    client: &Client,
    settings: &Settings,
) -> Option<Injection> {
    let status = response.get_status().as_u16();
    if !client.navigation || !varies_by_navigation(status, plan, settings) {
        return None;
    }
    // A header that is not text is no policy the browser can read either.
    let policies: Vec<&str> = response
        .get_header_all("content-security-policy")
        .filter_map(|v| v.to_str().ok())
        .collect();
    let (host, port) = split_port(&client.authority);
    let origin = ScriptOrigin {
        scheme: client.scheme,
        host,
        port,
        path: SCRIPT_PATH,
    };
    match script_policy(policies, &origin) {
        ScriptPolicy::Allowed { nonce } => Some(Injection {
            src: SCRIPT_PATH.to_owned(),
            nonce,
        }),
        ScriptPolicy::Blocked(why) => {
            log::info!("script not injected: {why}");
            None
        }
    }
}

/// Whether a response's body depends on the navigation rule: a 2xx HTML page that is rewritten
/// while injection is on gets the tag on navigations only, whether or not this request is one
/// (and whatever its `Content-Security-Policy`, which could change between two responses), so
/// a cache must keep the two copies apart. `plan` is what a GET would do, so a HEAD says the
/// same.
pub fn varies_by_navigation(status: u16, plan: &BodyPlan, settings: &Settings) -> bool {
    settings.script.inject
        && (200..300).contains(&status)
        && matches!(
            plan,
            BodyPlan::Rewrite {
                rewrite: Rewrite::Html(_),
                ..
            }
        )
}

/// `host[:port]` into its parts (an IPv6 literal keeps its brackets).
fn split_port(authority: &str) -> (&str, Option<u16>) {
    match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()),
        _ => (authority, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phases::client;
    use fastly::http::StatusCode;
    use fastly::Request;

    fn client(navigation: bool) -> Client {
        let mut request = Request::get("http://www.pub.test/").with_header("host", "www.pub.test");
        if navigation {
            request.set_header("sec-fetch-dest", "document");
        } else {
            request.set_header("sec-fetch-dest", "empty");
        }
        client::observe(&request, &crate::kit::generated::SETTINGS)
    }

    fn html_plan() -> BodyPlan {
        BodyPlan::decide(200, Some("text/html"), None, true)
    }

    #[test]
    fn navigations_to_2xx_html_get_the_tag() {
        let ok = Response::from_status(StatusCode::OK);
        let tag = decide(
            &ok,
            &html_plan(),
            &client(true),
            &crate::kit::generated::SETTINGS,
        );
        assert_eq!(tag.map(|t| t.src), Some(SCRIPT_PATH.to_owned()));
        assert!(decide(
            &ok,
            &html_plan(),
            &client(false),
            &crate::kit::generated::SETTINGS
        )
        .is_none());
        let missing = Response::from_status(StatusCode::NOT_FOUND);
        assert!(decide(
            &missing,
            &html_plan(),
            &client(true),
            &crate::kit::generated::SETTINGS
        )
        .is_none());
        let css = BodyPlan::decide(200, Some("text/css"), None, true);
        assert!(decide(&ok, &css, &client(true), &crate::kit::generated::SETTINGS).is_none());
        let mut off = crate::kit::generated::SETTINGS.clone();
        off.script.inject = false;
        assert!(decide(&ok, &html_plan(), &client(true), &off).is_none());
    }

    #[test]
    fn the_policy_decides_the_nonce_or_nothing() {
        let with = |csp: &str| {
            let response =
                Response::from_status(StatusCode::OK).with_header("content-security-policy", csp);
            decide(
                &response,
                &html_plan(),
                &client(true),
                &crate::kit::generated::SETTINGS,
            )
        };
        let nonced = with("script-src 'nonce-abc' 'strict-dynamic'");
        assert_eq!(nonced.and_then(|t| t.nonce).as_deref(), Some("abc"));
        assert!(with("script-src 'none'").is_none());
        assert!(with("script-src www.pub.test").is_some());
        assert!(with("script-src other.test").is_none());
    }

    #[test]
    fn authorities_split_at_their_port() {
        assert_eq!(split_port("a.test:8443"), ("a.test", Some(8443)));
        assert_eq!(split_port("a.test"), ("a.test", None));
        assert_eq!(split_port("[::1]"), ("[::1]", None));
        assert_eq!(split_port("[::1]:80"), ("[::1]", Some(80)));
    }
}
