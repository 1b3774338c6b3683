//! The admin routes: everything under `/_ts/admin`, answered by the service itself and never
//! proxied, behind HTTP Basic authentication.
//!
//! The adapter reads the credentials from the Secret Store and the request's `Authorization`
//! headers; everything else is decided here, natively testable: [`answer`] authenticates
//! first (so an unknown admin path is a `401` to a stranger and a `404` only to the admin),
//! then routes within the admin space. Every admin answer is `Cache-Control: no-store` JSON.
//!
//! * [`basic_auth`]: the `Authorization` parser and the constant-time check;
//! * `redact`: the settings as JSON, with every value that could be a secret redacted.

pub mod basic_auth;
pub mod purge;
mod redact;

use std::fmt;

pub use basic_auth::{AdminCredentials, CredentialError, Credentials, Malformed, CHALLENGE};
pub use redact::{settings_json, Shape, REDACTED};

use trusted_server_settings::Settings;

/// Where the admin space starts. The route table sends every path that starts with it
/// (`/_ts/admin`, `/_ts/admin/…`, also `/_ts/adminx`) here, whatever the method.
pub const ADMIN_PREFIX: &str = "/_ts/admin";

/// The settings page.
pub const SETTINGS_PATH: &str = "/_ts/admin/settings";

/// Purging cached pages by surrogate key (`POST`, `?key=`): see [`purge`].
pub const PURGE_PATH: &str = "/_ts/admin/purge";

/// One reader's partner IDs (`/_ts/admin/ids/<edge ID>`): `GET` shows what the graph holds
/// for them (a reader's access request), `DELETE` erases it (their erasure request).
pub const IDS_PREFIX: &str = "/_ts/admin/ids/";

/// What the adapter must do for a request the admin let in, beyond sending the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A purge: the adapter answers with [`purge::answer`] and the platform's purge.
    Purge,
    /// Show the graph's entry of the edge ID after [`IDS_PREFIX`] ([`ids_answer`]).
    ShowIds,
    /// Erase the graph's entry of the edge ID after [`IDS_PREFIX`] ([`ids_answer`]).
    EraseIds,
}

/// The edge ID of an admin path under [`IDS_PREFIX`], when it is one.
pub fn ids_path_edge_id(path: &str) -> Option<&str> {
    path.strip_prefix(IDS_PREFIX)
        .filter(|ec| crate::publisher::identity::is_well_formed(ec))
}

/// What the graph did for an admin `GET` or `DELETE` of one reader's partner IDs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdsOutcome {
    /// The entry as stored (`ids::Entry::encode`), or `None` when nothing is held.
    Shown(Option<serde_json::Value>),
    /// Whether an entry was there to erase (it is now a tombstone).
    Erased(bool),
    /// The store could not be read or changed (the cause, for the log).
    Failed(String),
}

/// The reply to an admin request for one reader's partner IDs: `200` with
/// `{"ec": …, "held": true, "entry": {…}}` (or `"held": false`), `{"ec": …, "erased": …}` after a
/// `DELETE`, `503` when the store failed.
pub fn ids_answer(method: &str, edge_id: &str, outcome: IdsOutcome) -> Reply {
    let body = match outcome {
        IdsOutcome::Shown(Some(entry)) => {
            serde_json::json!({ "ec": edge_id, "held": true, "entry": entry })
        }
        IdsOutcome::Shown(None) => serde_json::json!({ "ec": edge_id, "held": false }),
        IdsOutcome::Erased(erased) => serde_json::json!({ "ec": edge_id, "erased": erased }),
        IdsOutcome::Failed(cause) => {
            let mut reply = Reply::error(503, "partner-ID store unavailable");
            reply.log = Some(cause);
            return reply.for_method(method);
        }
    };
    Reply::json(200, json_line(&body)).for_method(method)
}

/// Why a request was not let in. Says which rule refused it, never what was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization` header.
    Missing,
    /// More than one `Authorization` header: ambiguous, so neither is used.
    Ambiguous,
    /// The header is not usable Basic credentials.
    Malformed(Malformed),
    /// Well-formed credentials that are not the admin's (which part was wrong is not known:
    /// both are compared every time).
    Wrong,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Missing => f.write_str("no Authorization header"),
            Refusal::Ambiguous => f.write_str("more than one Authorization header"),
            Refusal::Malformed(why) => write!(f, "{why}"),
            Refusal::Wrong => f.write_str("wrong user or password"),
        }
    }
}

/// Checks the request's `Authorization` header values against the admin's credentials.
///
/// # Errors
/// The [`Refusal`] when the request is not the admin's.
pub fn authorize<'h>(
    authorization: impl IntoIterator<Item = &'h [u8]>,
    credentials: &AdminCredentials,
) -> Result<(), Refusal> {
    let mut values = authorization.into_iter();
    let value = values.next().ok_or(Refusal::Missing)?;
    if values.next().is_some() {
        return Err(Refusal::Ambiguous);
    }
    let given = basic_auth::parse(value).map_err(Refusal::Malformed)?;
    if credentials.matches(&given) {
        Ok(())
    } else {
        Err(Refusal::Wrong)
    }
}

/// A pure description of an admin response, which the adapter sends as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Every header, in order.
    pub headers: Vec<(&'static str, &'static str)>,
    /// The body (empty for `HEAD`).
    pub body: String,
    /// Why the request was refused, for the log; `None` when it was let in (or never asked).
    pub refusal: Option<Refusal>,
    /// What the adapter must do instead of sending this reply as it is.
    pub action: Option<Action>,
    /// A line for the adapter's log (a failure's cause, never in the body).
    pub log: Option<String>,
}

impl Reply {
    fn json(status: u16, body: String) -> Reply {
        Reply {
            status,
            headers: vec![
                ("content-type", "application/json"),
                // Admin answers are per person and may describe the deployment: no cache
                // keeps them, shared or private.
                ("cache-control", "no-store"),
                ("x-content-type-options", "nosniff"),
            ],
            body,
            refusal: None,
            action: None,
            log: None,
        }
    }

    fn error(status: u16, message: &str) -> Reply {
        Reply::json(status, json_line(&serde_json::json!({ "error": message })))
    }

    fn for_method(mut self, method: &str) -> Reply {
        if method == "HEAD" {
            self.body.clear();
        }
        self
    }
}

/// The answer when `admin.enabled` is `false`: `404`, no secret read, nothing proxied.
pub fn disabled(method: &str) -> Reply {
    Reply::error(404, "not found").for_method(method)
}

/// The answer when the credentials cannot be read or are unusable: `503`. The admin routes
/// are never open without credentials; the adapter logs why (names only).
pub fn unavailable(method: &str) -> Reply {
    Reply::error(503, "admin unavailable").for_method(method)
}

/// The answer to an admin request: `401` with the challenge unless the credentials match,
/// then the page, `404` for an unknown admin path, `405` for a method other than `GET` or
/// `HEAD`.
pub fn answer<'h>(
    method: &str,
    path: &str,
    authorization: impl IntoIterator<Item = &'h [u8]>,
    credentials: &AdminCredentials,
    settings: &Settings,
) -> Reply {
    if let Err(refusal) = authorize(authorization, credentials) {
        let mut reply = Reply::error(401, "authentication required");
        reply.headers.push(("www-authenticate", CHALLENGE));
        reply.refusal = Some(refusal);
        return reply.for_method(method);
    }
    let page = match path {
        "/_ts/admin" | "/_ts/admin/" => Page::Index,
        SETTINGS_PATH => Page::Settings,
        PURGE_PATH if method == "POST" => {
            let mut reply = Reply::error(500, "purge not carried out");
            reply.action = Some(Action::Purge);
            return reply;
        }
        PURGE_PATH => {
            let mut reply = Reply::error(405, "method not allowed");
            reply.headers.push(("allow", "POST"));
            return reply.for_method(method);
        }
        ids if ids_path_edge_id(ids).is_some() => {
            let action = match method {
                "GET" | "HEAD" => Action::ShowIds,
                "DELETE" => Action::EraseIds,
                _ => {
                    let mut reply = Reply::error(405, "method not allowed");
                    reply.headers.push(("allow", "GET, HEAD, DELETE"));
                    return reply.for_method(method);
                }
            };
            let mut reply = Reply::error(500, "partner IDs not read");
            reply.action = Some(action);
            return reply;
        }
        _ => return Reply::error(404, "not found").for_method(method),
    };
    if method != "GET" && method != "HEAD" {
        let mut reply = Reply::error(405, "method not allowed");
        reply.headers.push(("allow", "GET, HEAD"));
        return reply.for_method(method);
    }
    let body = match page {
        Page::Index => json_line(&serde_json::json!({
            "endpoints": {
                "settings": SETTINGS_PATH,
                "purge": PURGE_PATH,
                "ids": format!("{IDS_PREFIX}{{edge ID}}")
            }
        })),
        Page::Settings => settings_json(settings),
    };
    Reply::json(200, body).for_method(method)
}

/// `value` as compact JSON and a newline, the form of every admin answer.
fn json_line(value: &serde_json::Value) -> String {
    let mut body = value.to_string();
    body.push('\n');
    body
}

/// A page of the admin space.
enum Page {
    /// `/_ts/admin` and `/_ts/admin/`: what there is.
    Index,
    /// `/_ts/admin/settings`.
    Settings,
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = "ops-admin";
    const PASSWORD: &str = "correct horse battery";

    fn admin() -> AdminCredentials {
        AdminCredentials::new(USER.as_bytes(), PASSWORD.as_bytes()).unwrap()
    }

    /// `Basic` + base64 of `user:password`, built by hand from RFC 4648's alphabet so the
    /// test does not share the parser's decoder.
    fn basic(user: &str, password: &str) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let raw = format!("{user}:{password}").into_bytes();
        let mut out = String::from("Basic ");
        for chunk in raw.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    fn ask(method: &str, path: &str, auth: &[&str]) -> Reply {
        let values = auth.iter().map(|v| v.as_bytes());
        answer(method, path, values, &admin(), &Settings::DEFAULT)
    }

    fn header<'r>(reply: &'r Reply, name: &str) -> Option<&'r str> {
        reply
            .headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    #[test]
    fn the_hand_made_encoding_is_rfc_7617s() {
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }

    #[test]
    fn strangers_get_401_with_the_challenge_on_every_admin_path_and_method() {
        let right = basic(USER, PASSWORD);
        let cases: &[(&[&str], Refusal)] = &[
            (&[], Refusal::Missing),
            (&["Bearer abc"], Refusal::Malformed(Malformed::NotBasic)),
            (&["Basic %%%"], Refusal::Malformed(Malformed::BadBase64)),
            (&[&basic("nobody", PASSWORD)], Refusal::Wrong),
            (&[&basic(USER, "wrong password!")], Refusal::Wrong),
            (&[&basic(&USER.to_uppercase(), PASSWORD)], Refusal::Wrong),
            (&[&right, &right], Refusal::Ambiguous),
        ];
        for (auth, refusal) in cases {
            for path in [
                "/_ts/admin",
                "/_ts/admin/settings",
                "/_ts/admin/nope",
                "/_ts/adminx",
            ] {
                for method in ["GET", "POST", "DELETE", "HEAD"] {
                    let r = ask(method, path, auth);
                    assert_eq!(r.status, 401, "{method} {path} {auth:?}");
                    assert_eq!(r.refusal, Some(*refusal));
                    assert_eq!(header(&r, "www-authenticate"), Some(CHALLENGE));
                    assert_eq!(header(&r, "cache-control"), Some("no-store"));
                    assert!(!r.body.contains("horse"));
                    assert_eq!(r.body.is_empty(), method == "HEAD");
                }
            }
        }
        assert_eq!(
            CHALLENGE,
            "Basic realm=\"trusted-server\", charset=\"UTF-8\""
        );
    }

    #[test]
    fn the_admin_gets_pages_404_and_405() {
        let auth = basic(USER, PASSWORD);
        let auth = [auth.as_str()];
        let r = ask("GET", SETTINGS_PATH, &auth);
        assert_eq!((r.status, r.refusal), (200, None));
        assert_eq!(header(&r, "content-type"), Some("application/json"));
        assert_eq!(header(&r, "cache-control"), Some("no-store"));
        assert_eq!(r.body, settings_json(&Settings::DEFAULT));
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["settings"]["admin"]["secret_store"], "ts_admin");
        let head = ask("HEAD", SETTINGS_PATH, &auth);
        assert_eq!((head.status, head.body.as_str()), (200, ""));
        assert_eq!(head.headers, r.headers);
        for path in ["/_ts/admin", "/_ts/admin/"] {
            let r = ask("GET", path, &auth);
            assert_eq!(r.status, 200);
            let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
            assert_eq!(v["endpoints"]["settings"], SETTINGS_PATH);
        }
        for path in [
            "/_ts/admin/nope",
            "/_ts/admin/settings/",
            "/_ts/adminx",
            "/_ts/admin//settings",
        ] {
            let r = ask("GET", path, &auth);
            assert_eq!(r.status, 404, "{path}");
            assert_eq!(header(&r, "www-authenticate"), None);
        }
        let r = ask("POST", SETTINGS_PATH, &auth);
        assert_eq!(r.status, 405);
        assert_eq!(header(&r, "allow"), Some("GET, HEAD"));
        // The purge page: POST only, and the adapter carries it out.
        let r = ask("POST", PURGE_PATH, &auth);
        assert_eq!((r.status, r.action), (500, Some(Action::Purge)));
        for method in ["GET", "HEAD", "PUT"] {
            let r = ask(method, PURGE_PATH, &auth);
            assert_eq!((r.status, r.action), (405, None), "{method}");
            assert_eq!(header(&r, "allow"), Some("POST"));
        }
        // Strangers never reach it.
        let r = ask("POST", PURGE_PATH, &[]);
        assert_eq!((r.status, r.action), (401, None));
    }

    #[test]
    fn one_readers_partner_ids_are_shown_and_erased_by_the_admin_only() {
        let right = basic(USER, PASSWORD);
        let auth = [right.as_str()];
        let ec = format!("{}.Ab3dE9", "c".repeat(64));
        let path = format!("{IDS_PREFIX}{ec}");
        for (method, action) in [
            ("GET", Action::ShowIds),
            ("HEAD", Action::ShowIds),
            ("DELETE", Action::EraseIds),
        ] {
            let r = ask(method, &path, &auth);
            assert_eq!(r.action, Some(action), "{method}");
            assert_eq!(ids_path_edge_id(&path), Some(ec.as_str()));
            // Strangers never reach it, whatever the method.
            let r = ask(method, &path, &[]);
            assert_eq!((r.status, r.action), (401, None), "{method}");
        }
        let r = ask("POST", &path, &auth);
        assert_eq!((r.status, r.action), (405, None));
        assert_eq!(header(&r, "allow"), Some("GET, HEAD, DELETE"));
        // Only an edge ID's shape is a reader's page: anything else is not found.
        for bad in [
            "",
            "x",
            &format!("{ec}/"),
            &format!("{ec}x"),
            &format!("{}.Ab3dE9", "c".repeat(63)),
        ] {
            let r = ask("GET", &format!("{IDS_PREFIX}{bad}"), &auth);
            assert_eq!((r.status, r.action), (404, None), "{bad:?}");
        }
        // The answers: what is held, or that nothing is; an erasure; a failure logged, not shown.
        let shown = ids_answer(
            "GET",
            &ec,
            IdsOutcome::Shown(Some(serde_json::json!({"v": 1}))),
        );
        assert_eq!(shown.status, 200);
        let body: serde_json::Value = serde_json::from_str(&shown.body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"ec": ec, "held": true, "entry": {"v": 1}})
        );
        let none = ids_answer("HEAD", &ec, IdsOutcome::Shown(None));
        assert_eq!((none.status, none.body.as_str()), (200, ""));
        let erased = ids_answer("DELETE", &ec, IdsOutcome::Erased(true));
        assert!(erased.body.contains("\"erased\":true"), "{}", erased.body);
        let failed = ids_answer("GET", &ec, IdsOutcome::Failed("KV store: boom".into()));
        assert_eq!(failed.status, 503);
        assert!(!failed.body.contains("boom") && failed.log.as_deref() == Some("KV store: boom"));
    }

    #[test]
    fn disabled_and_unavailable_are_closed() {
        assert_eq!(disabled("GET").status, 404);
        let r = unavailable("GET");
        assert_eq!(r.status, 503);
        assert_eq!(header(&r, "www-authenticate"), None);
        assert_eq!(header(&r, "cache-control"), Some("no-store"));
        assert_eq!(unavailable("HEAD").body, "");
    }

    proptest::proptest! {
        /// Any method, path and header values: no panic, a status from the table, the
        /// challenge exactly on a 401, and a 200 only with the admin's credentials.
        #[test]
        fn any_request_gets_a_closed_answer(
            method in "[A-Z]{0,8}",
            path in "/_ts/admin[ -~]{0,20}",
            values in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..60), 0..3),
        ) {
            let r = answer(&method, &path, values.iter().map(Vec::as_slice), &admin(), &Settings::DEFAULT);
            proptest::prop_assert!(matches!(r.status, 200 | 401 | 404 | 405), "{}", r.status);
            proptest::prop_assert_eq!(r.status == 401, header(&r, "www-authenticate") == Some(CHALLENGE));
            proptest::prop_assert_ne!(r.status, 200);
            proptest::prop_assert_eq!(header(&r, "cache-control"), Some("no-store"));
        }
    }

    #[test]
    fn refusals_name_the_rule_not_the_value() {
        let wrong = basic(USER, "hunter2-hunter2");
        let e = authorize([wrong.as_bytes()], &admin()).unwrap_err();
        let text = format!("{e} {e:?}");
        assert!(!text.contains("hunter2") && !text.contains(USER), "{text}");
        assert_eq!(e.to_string(), "wrong user or password");
    }
}
