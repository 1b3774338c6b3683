//! End-to-end scenarios of the admin routes (`/_ts/admin`, basic auth, the redacted settings),
//! against the streaming build (fastly.toml's development store `ts_admin`) and the build
//! whose settings name a password key the store does not have. The development values are
//! read from the dev-only file, as Viceroy reads them; the Authorization headers are built
//! here with the base64 crate's encoder, as a client builds them.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;

use super::{check, Outcome, World, TIMEOUT};

const DEV_FILE: &str = "fixtures/dev-only/admin-credentials.DEVELOPMENT-ONLY.json";
const SETTINGS: &str = "/_ts/admin/settings";
const CHALLENGE: &str = "Basic realm=\"trusted-server\", charset=\"UTF-8\"";
/// A wrong password the tests try; it must not show up in any log either.
const TRIED: &str = "tried-password-e2e-51c9aa";

/// The development user and password.
pub fn dev_credentials(w: &World) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(w.root.join(DEV_FILE)).map_err(|e| e.to_string())?;
    let json: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let value = |key: &str| {
        json[key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{DEV_FILE} has no {key}"))
    };
    Ok((value("admin_user")?, value("admin_password")?))
}

fn token(user: &str, password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}

pub fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", token(user, password))
}

fn ask(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<e2e::Timed, String> {
    e2e::request(addr, method, path, headers, TIMEOUT)
        .map_err(|e| format!("{method} {path} on {addr}: {e}"))
}

/// Every place a credential could show in a response: status line aside, all of it.
fn response_text(r: &e2e::Timed) -> String {
    let mut text = String::from_utf8_lossy(&r.body).into_owned();
    for (name, value) in &r.headers {
        text.push_str(&format!("\n{name}: {}", String::from_utf8_lossy(value)));
    }
    text
}

/// The strings that must never appear in a response or a log: the development values, their
/// base64 in an Authorization header, and a wrong password a client tried.
fn secrets(w: &World) -> Result<Vec<String>, String> {
    let (user, password) = dev_credentials(w)?;
    Ok(vec![
        token(&user, &password),
        token(&user, TRIED),
        user,
        password,
        TRIED.to_owned(),
    ])
}

fn assert_refused(r: &e2e::Timed, what: &str) -> Outcome {
    check(r.status == 401, || format!("{what}: status {}", r.status))?;
    check(r.header("www-authenticate") == Some(CHALLENGE), || {
        format!(
            "{what}: www-authenticate {:?}",
            r.header("www-authenticate")
        )
    })?;
    check(r.header("cache-control") == Some("no-store"), || {
        format!("{what}: cache-control {:?}", r.header("cache-control"))
    })
}

pub fn strangers_get_401_with_the_challenge(w: &World) -> Outcome {
    let (user, password) = dev_credentials(w)?;
    let wrong_user = basic("not-the-admin", &password);
    let wrong_password = basic(&user, TRIED);
    let swapped = basic(&password, &user);
    let lower_scheme = format!("basic {}", token("not-the-admin", &password));
    let cases: &[(&str, Vec<(&str, &str)>)] = &[
        ("no credentials", vec![]),
        ("a wrong user", vec![("authorization", wrong_user.as_str())]),
        (
            "a wrong password",
            vec![("authorization", wrong_password.as_str())],
        ),
        (
            "user and password swapped",
            vec![("authorization", swapped.as_str())],
        ),
        (
            "a wrong user, scheme in lowercase",
            vec![("authorization", lower_scheme.as_str())],
        ),
        ("another scheme", vec![("authorization", "Bearer abc")]),
        ("malformed base64", vec![("authorization", "Basic %%%===")]),
        ("no colon", vec![("authorization", "Basic YWRtaW4=")]),
    ];
    for (what, headers) in cases {
        for (method, path) in [
            ("GET", SETTINGS),
            ("GET", "/_ts/admin"),
            ("GET", "/_ts/admin/unknown"),
            ("POST", SETTINGS),
            ("DELETE", "/_ts/admin/x"),
        ] {
            let r = ask(w.streaming, method, path, headers)?;
            assert_refused(&r, &format!("{what}, {method} {path}"))?;
        }
    }
    let line = super::log_line(
        w,
        &[
            "admin request refused (401): wrong user or password",
            SETTINGS,
        ],
    )?;
    check(!line.contains(TRIED), || {
        format!("the log shows a password: {line}")
    })?;
    super::log_line(w, &["admin request refused (401): no Authorization header"])?;
    super::log_line(
        w,
        &["admin request refused (401): Authorization header is not valid base64"],
    )
    .map(|_| ())
}

pub fn the_admin_gets_the_settings(w: &World) -> Outcome {
    let (user, password) = dev_credentials(w)?;
    let auth = basic(&user, &password);
    // Any case of the scheme.
    let upper = format!("BASIC {}", token(&user, &password));
    for value in [auth.as_str(), upper.as_str()] {
        let r = ask(w.streaming, "GET", SETTINGS, &[("authorization", value)])?;
        check(r.status == 200 && r.complete, || {
            format!("status {}", r.status)
        })?;
        check(r.header("content-type") == Some("application/json"), || {
            format!("content-type {:?}", r.header("content-type"))
        })?;
        check(r.header("cache-control") == Some("no-store"), || {
            format!("cache-control {:?}", r.header("cache-control"))
        })?;
        check(r.header("www-authenticate").is_none(), || {
            "a challenge on 200".into()
        })?;
        let v: Value = serde_json::from_slice(&r.body).map_err(|e| format!("not JSON: {e}"))?;
        let s = &v["settings"];
        // What the e2e build was given (e2e.rs's set_up and trusted-server.toml).
        let expected = [
            (
                &s["publisher"]["origin_url"],
                Value::from(format!("http://{}", w.origin_addr)),
            ),
            (
                &s["publisher"]["origin_host"],
                Value::from(super::ORIGIN_HOST),
            ),
            (
                &s["publisher"]["domain"],
                Value::from("www.demo-publisher.example"),
            ),
            (&s["publisher"]["streaming"], Value::from(true)),
            (
                &s["publisher"]["first_byte_timeout_ms"],
                Value::from(super::FIRST_BYTE_TIMEOUT_MS),
            ),
            (&s["identity"]["secret_key"], Value::from("ec_hmac_key")),
            (&s["admin"]["secret_store"], Value::from("ts_admin")),
            (&s["admin"]["password_key"], Value::from("admin_password")),
            (&s["logging"]["level"], Value::from("info")),
            // Free text is redacted: the header's name shows, its value does not.
            (
                &s["response_headers"],
                serde_json::json!({ (super::RESPONSE_HEADER.0): "[redacted]" }),
            ),
        ];
        for (got, want) in expected {
            check(*got == want, || {
                format!("{got} where {want} was expected in {v}")
            })?;
        }
        check(v["version"].as_str().is_some_and(|v| !v.is_empty()), || {
            format!("no version in {v}")
        })?;
    }
    // HEAD: the same headers, no body; a 404 for an unknown admin path, only once let in.
    let head = ask(w.streaming, "HEAD", SETTINGS, &[("authorization", &auth)])?;
    check(head.status == 200 && head.body.is_empty(), || {
        format!("HEAD: status {} body {}", head.status, head.body.len())
    })?;
    let r = ask(
        w.streaming,
        "GET",
        "/_ts/admin/unknown",
        &[("authorization", &auth)],
    )?;
    check(r.status == 404, || {
        format!("unknown path: status {}", r.status)
    })?;
    let r = ask(w.streaming, "POST", SETTINGS, &[("authorization", &auth)])?;
    check(
        r.status == 405 && r.header("allow") == Some("GET, HEAD"),
        || format!("POST: status {} allow {:?}", r.status, r.header("allow")),
    )?;
    let r = ask(
        w.streaming,
        "GET",
        "/_ts/admin",
        &[("authorization", &auth)],
    )?;
    check(r.status == 200, || format!("index: status {}", r.status))?;
    let line = super::log_line(
        w,
        &[
            "trusted_server :: access ",
            "path=\"/_ts/admin/settings\"",
            "status=200",
        ],
    )?;
    check(line.contains("plan=admin"), || line.clone())
}

/// The demo origin logs every request it answers (method and URI). Admin requests of every
/// kind go to the proxy, then one ordinary page as a marker: once the marker is in the
/// origin's log, no line may name an admin path.
pub fn admin_requests_never_reach_the_origin(w: &World) -> Outcome {
    let (user, password) = dev_credentials(w)?;
    let auth = basic(&user, &password);
    let wrong = basic(&user, TRIED);
    for (method, path) in [
        ("GET", "/_ts/admin"),
        ("GET", "/_ts/admin/"),
        ("GET", SETTINGS),
        ("GET", "/_ts/admin/unknown?x=1"),
        ("GET", "/_ts/admin/../news/article.html"),
        ("POST", SETTINGS),
        ("PUT", "/_ts/admin/settings"),
        ("OPTIONS", "/_ts/admin"),
        ("DELETE", "/_ts/adminx"),
    ] {
        for headers in [
            vec![],
            vec![("authorization", auth.as_str())],
            vec![("authorization", wrong.as_str())],
        ] {
            let r = ask(w.streaming, method, path, &headers)?;
            check(matches!(r.status, 200 | 401 | 404 | 405), || {
                format!("{method} {path}: status {}", r.status)
            })?;
        }
    }
    let marker = "/news/article.html?admin_e2e_marker=1";
    let r = ask(w.streaming, "GET", marker, &[super::identity()])?;
    check(r.status == 200, || format!("marker: status {}", r.status))?;
    let log_path = w.root.join(super::ORIGIN_LOG);
    let deadline = Instant::now() + Duration::from_secs(5);
    let log = loop {
        let log = std::fs::read_to_string(&log_path)
            .map_err(|e| format!("{}: {e}", log_path.display()))?;
        if log.contains("admin_e2e_marker") {
            break log;
        }
        if Instant::now() > deadline {
            return Err(format!("the marker never reached {}", log_path.display()));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let seen: Vec<&str> = log.lines().filter(|l| l.contains("/_ts/admin")).collect();
    check(seen.is_empty(), || {
        format!("the origin saw admin requests: {seen:?}")
    })
}

pub fn missing_credentials_answer_503(w: &World) -> Outcome {
    let (user, password) = dev_credentials(w)?;
    let auth = basic(&user, &password);
    for headers in [vec![], vec![("authorization", auth.as_str())]] {
        let r = ask(w.no_secret, "GET", SETTINGS, &headers)?;
        check(r.status == 503, || format!("status {}", r.status))?;
        check(r.header("www-authenticate").is_none(), || {
            "a challenge on 503".into()
        })?;
        let text = response_text(&r);
        check(
            !text.contains("ts_admin") && !text.contains(&password),
            || format!("the 503 says too much: {text}"),
        )?;
    }
    super::build_log_line(
        w,
        "no-secret",
        &[
            "admin routes closed (503)",
            "`ts_admin`",
            "no key `no_such_admin_key`",
            "(admin.password_key)",
        ],
    )
    .map(|_| ())
}

/// Runs last among the admin scenarios: every response above and both Viceroy logs are
/// checked for the development values, their base64, and the wrong password tried.
pub fn secrets_never_shown(w: &World) -> Outcome {
    let (user, password) = dev_credentials(w)?;
    let auth = basic(&user, &password);
    let wrong = basic(&user, TRIED);
    let secrets = secrets(w)?;
    let mut responses = Vec::new();
    for path in [SETTINGS, "/_ts/admin", "/_ts/admin/unknown"] {
        for headers in [
            vec![],
            vec![("authorization", auth.as_str())],
            vec![("authorization", wrong.as_str())],
        ] {
            responses.push(ask(w.streaming, "GET", path, &headers)?);
        }
    }
    responses.push(ask(
        w.no_secret,
        "GET",
        SETTINGS,
        &[("authorization", &auth)],
    )?);
    for r in &responses {
        let text = response_text(r);
        for secret in &secrets {
            check(!text.contains(secret.as_str()), || {
                format!("a secret in a {} response: {text}", r.status)
            })?;
        }
    }
    // The requests above are logged by now (the access line precedes the response's end).
    super::log_line(
        w,
        &["trusted_server :: access ", "path=\"/_ts/admin/unknown\""],
    )?;
    for build in ["streaming", "no-secret"] {
        let path = crate::viceroy_log(w, build);
        let log = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        check(log.contains("admin"), || {
            format!("no admin line in {}", path.display())
        })?;
        for secret in &secrets {
            check(!log.contains(secret.as_str()), || {
                format!(
                    "{} shows a secret ({} bytes long)",
                    path.display(),
                    secret.len()
                )
            })?;
        }
    }
    Ok(())
}
