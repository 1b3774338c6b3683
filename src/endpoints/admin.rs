//! The admin routes, adapter side: the credentials from the Fastly Secret Store and the
//! request's `Authorization` headers go into the core's [`admin::answer`], whose reply is sent
//! as it is. Nothing under `/_ts/admin` is ever proxied.
//!
//! Credentials that cannot be read (store not linked, key missing, value unusable) close the
//! routes with a `503` and an `error` record naming the store, the key and the setting, never
//! a value. A refused request is logged at `warn` with the rule that refused it, never what it
//! sent; the `Authorization` header itself is never logged (the access line has the method,
//! the path without its query, and the status).

use std::fmt;

use fastly::http::header::AUTHORIZATION;
use fastly::http::StatusCode;
use fastly::{Request, Response};
use trusted_server_core::admin::{self, AdminCredentials, CredentialError, Reply};
use trusted_server_core::Settings;
use trusted_server_settings::Admin;

use crate::kit::reply;
use crate::kit::secrets::{SecretError, Store};
use crate::phases::partner_ids;

/// Why the admin credentials are not available.
#[derive(Debug)]
enum Unavailable {
    /// The credentials' store or a key (named, never a value).
    Secret(SecretError),
    /// The values are there but unusable (empty user, short password, …).
    Unusable(CredentialError),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Secret(e) => e.fmt(f),
            Unavailable::Unusable(e) => write!(
                f,
                "the admin credentials (admin.user_key, admin.password_key) are unusable: {e}"
            ),
        }
    }
}

/// Reads the admin user and password. Each request runs in a fresh instance, so this is per
/// admin request (and only for admin requests).
fn read_credentials(settings: &Admin) -> Result<AdminCredentials, Unavailable> {
    let store =
        Store::open(&settings.secret_store, "admin.secret_store").map_err(Unavailable::Secret)?;
    let bytes = |b: &[u8]| Ok::<_, std::convert::Infallible>(b.to_vec());
    let user = store
        .read(&settings.user_key, "admin.user_key", bytes)
        .map_err(Unavailable::Secret)?;
    let password = store
        .read(&settings.password_key, "admin.password_key", bytes)
        .map_err(Unavailable::Secret)?;
    AdminCredentials::new(&user, &password).map_err(Unavailable::Unusable)
}

/// The core's decision for `request`, with the log records it calls for.
fn decide(request: &Request, settings: &Settings) -> Reply {
    let method = request.get_method_str();
    if !settings.admin.enabled {
        return admin::disabled(method);
    }
    let credentials = match read_credentials(&settings.admin) {
        Ok(credentials) => credentials,
        Err(e) => {
            log::error!("admin routes closed (503): {e}");
            return admin::unavailable(method);
        }
    };
    let authorization = request
        .get_headers()
        .filter(|(name, _)| *name == AUTHORIZATION)
        .map(|(_, value)| value.as_bytes());
    let reply = admin::answer(
        method,
        request.get_path(),
        authorization,
        &credentials,
        settings,
    );
    if let Some(refusal) = reply.refusal {
        log::warn!(
            "admin request refused (401): {refusal}; {method} {:?}",
            request.get_path()
        );
    }
    reply
}

/// Answers an admin request (any method, any path under `/_ts/admin`).
pub fn respond(request: &Request, settings: &Settings) -> Response {
    let mut reply = decide(request, settings);
    let method = request.get_method_str();
    let reader = admin::ids_path_edge_id(request.get_path());
    reply = match (reply.action, reader) {
        (Some(admin::Action::Purge), _) => {
            admin::purge::answer(request.get_query_str(), crate::phases::cache::purge)
        }
        (Some(admin::Action::ShowIds), Some(ec)) => {
            admin::ids_answer(method, ec, partner_ids::show(ec, settings))
        }
        (Some(admin::Action::EraseIds), Some(ec)) => {
            admin::ids_answer(method, ec, partner_ids::erase_one(ec, settings))
        }
        _ => reply,
    };
    if let Some(line) = &reply.log {
        log::error!("admin: {line}");
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = reply::with_standard_headers(
        Response::from_status(status).with_body(reply.body),
        settings,
    );
    // After the standard headers, so `[response_headers]` cannot make an admin answer
    // cacheable or drop its challenge.
    for (name, value) in &reply.headers {
        response.set_header(*name, *value);
    }
    response
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// The development values, read the way Viceroy reads them (fastly.toml's JSON file).
    const DEV_FILE: &str =
        include_str!("../../fixtures/dev-only/admin-credentials.DEVELOPMENT-ONLY.json");

    fn dev_value(key: &str) -> &'static str {
        let needle = format!("\"{key}\": \"");
        let start = DEV_FILE.find(&needle).expect("key in the dev file") + needle.len();
        let len = DEV_FILE[start..].find('"').expect("closing quote");
        &DEV_FILE[start..start + len]
    }

    fn basic(user: &str, password: &str) -> String {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {token}")
    }

    /// Under `viceroy run`, fastly.toml's development store is there.
    #[test]
    fn credentials_are_read_and_failures_name_store_and_key_not_values() {
        let settings = &crate::kit::generated::SETTINGS.admin;
        assert!(read_credentials(settings).is_ok());
        let secrets = [dev_value("admin_user"), dev_value("admin_password")];
        let mut missing = settings.clone();
        missing.password_key = Cow::Borrowed("no_such_key");
        let e = read_credentials(&missing).unwrap_err().to_string();
        assert!(
            e.contains("no_such_key") && e.contains("admin.password_key"),
            "{e}"
        );
        let mut no_store = settings.clone();
        no_store.secret_store = Cow::Borrowed("no_such_store");
        let e2 = read_credentials(&no_store).unwrap_err().to_string();
        assert!(e2.contains("no_such_store"), "{e2}");
        for text in [&e, &e2] {
            for secret in secrets {
                assert!(!text.contains(secret), "a secret in {text}");
            }
        }
    }

    #[test]
    fn the_dev_credentials_open_the_settings_and_nothing_else_does() {
        let (user, password) = (dev_value("admin_user"), dev_value("admin_password"));
        let get = |auth: Option<String>| {
            let mut request = Request::get("http://www.pub.test/_ts/admin/settings");
            if let Some(auth) = auth {
                request.set_header(AUTHORIZATION, auth);
            }
            respond(&request, &crate::kit::generated::SETTINGS)
        };
        let mut ok = get(Some(basic(user, password)));
        assert_eq!(ok.get_status(), StatusCode::OK);
        assert_eq!(ok.get_header_str("cache-control"), Some("no-store"));
        let body = ok.take_body_str();
        assert!(
            body.contains("\"password_key\":\"admin_password\""),
            "{body}"
        );
        assert!(!body.contains(user) && !body.contains(password), "{body}");
        for auth in [
            None,
            Some(basic(user, "wrong")),
            Some(basic("wrong", password)),
        ] {
            let mut refused = get(auth);
            assert_eq!(refused.get_status(), StatusCode::UNAUTHORIZED);
            assert_eq!(
                refused.get_header_str("www-authenticate"),
                Some(admin::CHALLENGE)
            );
            let body = refused.take_body_str();
            assert!(!body.contains(user) && !body.contains(password), "{body}");
        }
    }

    #[test]
    fn response_headers_settings_cannot_override_the_admin_headers() {
        let mut settings = crate::kit::generated::SETTINGS.clone();
        let headers = [
            ("cache-control", "public, max-age=3600"),
            ("www-authenticate", "Bearer"),
            ("x-extra", "kept"),
        ];
        settings.response_headers = headers
            .iter()
            .map(|(n, v)| trusted_server_core::HeaderSetting {
                name: Cow::Borrowed(n),
                value: Cow::Borrowed(v),
            })
            .collect::<Vec<_>>()
            .into();
        let request = Request::get("http://www.pub.test/_ts/admin/settings");
        let response = respond(&request, &settings);
        assert_eq!(response.get_status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.get_header_all_str("cache-control"), ["no-store"]);
        assert_eq!(
            response.get_header_all_str("www-authenticate"),
            [admin::CHALLENGE]
        );
        assert_eq!(response.get_header_str("x-extra"), Some("kept"));
    }

    #[test]
    fn missing_credentials_close_the_routes_and_disabled_is_404() {
        let request = Request::get("http://www.pub.test/_ts/admin/settings").with_header(
            AUTHORIZATION,
            basic(dev_value("admin_user"), dev_value("admin_password")),
        );
        let mut settings = crate::kit::generated::SETTINGS.clone();
        settings.admin.user_key = Cow::Borrowed("no_such_key");
        assert_eq!(
            respond(&request, &settings).get_status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        settings.admin.enabled = false;
        assert_eq!(
            respond(&request, &settings).get_status(),
            StatusCode::NOT_FOUND
        );
    }
}
