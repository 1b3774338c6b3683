//! First-party URLs, the service's own answers: `GET /first-party/sign`,
//! `GET /first-party/click` and anything else under `/first-party/`. The key, the clock and the
//! check of a signed query are `kit::signed_url`'s; every decision is the core's
//! (`first_party`); this file only reads the platform and sends.
//!
//! Refusals are logged with their reason at `info` (the client's mistake or attack) and
//! answered with one generic body per status. A missing or unusable secret is logged at
//! `error`, naming the store, the key and the setting but never the value, and answered `503`.

use fastly::http::StatusCode;
use fastly::{Request, Response};
use trusted_server_core::first_party::{self, token, REFUSED_BODY};
use trusted_server_core::Settings;

use crate::kit::reply;
use crate::kit::signed_url::{now, policy, read_key, unavailable, verify_signed, Verified};

/// `GET /first-party/sign?url=<absolute URL>`: `200 {"url": "/first-party/proxy?…",
/// "expires": N}` for an allowed target, `400` otherwise.
pub fn sign(request: &Request, settings: &Settings) -> Response {
    let fp = &settings.first_party;
    let target = match first_party::sign_target(request.get_query_str(), &policy(fp)) {
        Ok(target) => target,
        Err(e) => {
            log::info!("first-party sign refused: {e}");
            return reply::json(
                StatusCode::BAD_REQUEST,
                REFUSED_BODY.to_owned(),
                "no-store",
                settings,
            );
        }
    };
    let (key, now) = match read_key(fp).and_then(|k| Ok((k, now()?))) {
        Ok(pair) => pair,
        Err(e) => return unavailable(&e, "first-party sign", settings),
    };
    let expires = now.saturating_add(u64::from(fp.sign_ttl_secs));
    let url = key.signed_url(token::PROXY_PATH, &target.url, expires);
    reply::json(
        StatusCode::OK,
        first_party::signed_body(&url, expires),
        "no-store",
        settings,
    )
}

/// Any other request under `/first-party/`: `405` (with `Allow: GET`, or `GET, POST` on the
/// proxy) for another method on
/// one of its paths, `404` for a path that does not exist. Never proxied: a signed URL's query
/// must not reach the origin.
pub fn other(request: &Request, settings: &Settings) -> Response {
    let (status, body) = if first_party::PATHS.contains(&request.get_path()) {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "{\"error\":\"method not allowed\"}\n",
        )
    } else {
        (StatusCode::NOT_FOUND, "{\"error\":\"not found\"}\n")
    };
    let mut response = reply::json(status, body.to_owned(), "no-store", settings);
    if status == StatusCode::METHOD_NOT_ALLOWED {
        let allow = if request.get_path() == token::PROXY_PATH {
            token::PROXY_METHODS.join(", ")
        } else {
            "GET".to_owned()
        };
        response.set_header("allow", allow);
    }
    if request.get_method_str() == "HEAD" {
        response.set_body(Vec::<u8>::new());
    }
    response
}

/// `GET /first-party/click?tsurl=…&tsexp=…&tstoken=…`: `302` to the target when the token,
/// the expiry and the policy all agree, `403` with the same body otherwise.
pub fn click(request: &Request, settings: &Settings) -> Response {
    match verify_signed(request, "first-party click", settings) {
        Ok(Verified { target, .. }) => reply::with_standard_headers(
            Response::from_status(StatusCode::FOUND)
                .with_header("location", &target.url)
                .with_header("cache-control", "no-store, private"),
            settings,
        ),
        Err(answer) => *answer,
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use trusted_server_core::first_party::FORBIDDEN_BODY;

    const SECRET_MARK: &str = "DEVELOPMENT ONLY";

    fn sign_query(url: &str) -> Response {
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("url", url)
            .finish();
        sign(
            &Request::get(format!("http://www.pub.test/first-party/sign?{query}")),
            &crate::kit::generated::SETTINGS,
        )
    }

    #[test]
    fn sign_then_click_redirects_and_a_refusal_is_generic() {
        let mut signed = sign_query("https://ads.demo-partner.example/c?x=1");
        assert_eq!(signed.get_status(), StatusCode::OK);
        assert_eq!(signed.get_header_str("cache-control"), Some("no-store"));
        let body = signed.take_body_str();
        assert!(!body.contains(SECRET_MARK), "{body}");
        let path = body
            .split("\"url\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .replace(token::PROXY_PATH, token::CLICK_PATH);
        let mut r = click(
            &Request::get(format!("http://www.pub.test{path}")),
            &crate::kit::generated::SETTINGS,
        );
        assert_eq!(r.get_status(), StatusCode::FOUND, "{}", r.take_body_str());
        assert_eq!(
            r.get_header_str("location"),
            Some("https://ads.demo-partner.example/c?x=1")
        );
        assert_eq!(r.get_header_str("cache-control"), Some("no-store, private"));

        let mut refused = sign_query("http://127.0.0.1/");
        assert_eq!(refused.get_status(), StatusCode::BAD_REQUEST);
        assert_eq!(refused.take_body_str(), REFUSED_BODY);
        let mut forged = click(
            &Request::get(format!(
                "http://www.pub.test{}",
                path.replace("tsexp=", "tsexp=1")
            )),
            &crate::kit::generated::SETTINGS,
        );
        assert_eq!(forged.get_status(), StatusCode::FORBIDDEN);
        assert_eq!(forged.take_body_str(), FORBIDDEN_BODY);
    }
}
