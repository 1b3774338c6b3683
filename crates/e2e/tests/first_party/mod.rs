//! End-to-end scenarios of the first-party routes (`/first-party/sign`, `/first-party/click`)
//! against the streaming build (fastly.toml's development key, the shipped
//! `first_party.allowed_domains = ["demo-partner.example"]`) and the build whose settings
//! name keys the store does not have. The rules are tested exhaustively in the core
//! (`first_party`); here the `url` crate reads the answers, and the development key (through
//! the core's `UrlKey`) forges the tokens the service must refuse. The SSRF table is the
//! core's own fixture, every row sent through the real service.

use std::time::{SystemTime, UNIX_EPOCH};

use trusted_server_core::first_party::token::{CLICK_PATH, PROXY_PATH};
use trusted_server_core::first_party::{UrlKey, FORBIDDEN_BODY, REFUSED_BODY, UNAVAILABLE_BODY};

use super::{check, fetch, Outcome, World, RESPONSE_HEADER, TIMEOUT};

pub mod proxy;

const KEY_FILE: &str = "fixtures/dev-only/first-party-url-key.DEVELOPMENT-ONLY.txt";
const TABLE_FILE: &str = "fixtures/ssrf-targets.txt";
const TARGET: &str = "https://ads.demo-partner.example/creative.html?slot=top&size=300x250";
/// The shipped `first_party.sign_ttl_secs`.
const SIGN_TTL: u64 = 300;
/// The shipped `first_party.page_ttl_secs`, the longest lifetime the service gives a URL.
const PAGE_TTL: u64 = 3600;

fn dev_key(w: &World) -> Result<UrlKey, String> {
    let secret = std::fs::read(w.root.join(KEY_FILE)).map_err(|e| format!("{e}"))?;
    UrlKey::new(&secret).map_err(|e| e.to_string())
}

/// The key's last line: what would show if the secret leaked anywhere.
fn secret_line(w: &World) -> Result<String, String> {
    let text = std::fs::read_to_string(w.root.join(KEY_FILE)).map_err(|e| e.to_string())?;
    Ok(text.lines().last().unwrap_or_default().to_owned())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

fn sign_path(target: &str) -> String {
    format!("/first-party/sign?url={}", encode(target))
}

/// The form-decoded parameters of a path's query, read by the `url` crate.
fn params(path: &str) -> Vec<(String, String)> {
    let query = path.split_once('?').map_or("", |(_, q)| q);
    url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The `"url"` and `"expires"` of a sign answer, read by a JSON parser.
fn signed(body: &[u8]) -> Result<(String, u64), String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(body)))?;
    match (value["url"].as_str(), value["expires"].as_u64()) {
        (Some(u), Some(e)) => Ok((u.to_owned(), e)),
        _ => Err(format!("not a sign answer: {value}")),
    }
}

/// Signs `target` through the service and returns the first-party path.
fn sign_through_service(w: &World, target: &str) -> Result<(String, u64), String> {
    let r = fetch(w.streaming, &sign_path(target), &[])?;
    check(r.status == 200, || {
        format!(
            "sign {target}: status {} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        )
    })?;
    signed(&r.body)
}

pub fn sign_answers_a_verifiable_proxy_url(w: &World) -> Outcome {
    let before = now();
    let r = fetch(w.streaming, &sign_path(TARGET), &[])?;
    check(r.status == 200, || format!("status {}", r.status))?;
    for (name, value) in [
        ("content-type", "application/json"),
        ("cache-control", "no-store"),
        RESPONSE_HEADER,
    ] {
        check(r.header(name) == Some(value), || {
            format!("{name}: {:?}", r.header(name))
        })?;
    }
    let (url, expires) = signed(&r.body)?;
    check(url.starts_with(&format!("{PROXY_PATH}?tsurl=")), || {
        format!("url {url}")
    })?;
    check(
        (before + SIGN_TTL..=now() + SIGN_TTL).contains(&expires),
        || format!("expires {expires}, signed at {before} with a {SIGN_TTL} s TTL"),
    )?;
    let p = params(&url);
    check(param(&p, "tsurl") == Some(TARGET), || format!("{p:?}"))?;
    check(param(&p, "tsexp") == Some(&expires.to_string()), || {
        format!("{p:?}")
    })?;
    let token = param(&p, "tstoken").unwrap_or_default();
    check(token == dev_key(w)?.token(TARGET, expires), || {
        format!("the token {token} is not the development key's for {TARGET} until {expires}")
    })?;
    // The normalised target is what is signed.
    let (url, _) = sign_through_service(w, "HTTPS://Ads.Demo-Partner.Example./a b")?;
    let p = params(&url);
    check(
        param(&p, "tsurl") == Some("https://ads.demo-partner.example/a%20b"),
        || format!("{p:?}"),
    )
}

pub fn sign_refuses_with_one_generic_body(w: &World) -> Outcome {
    for path in [
        sign_path("http://169.254.169.254/latest/meta-data/"),
        sign_path("https://evil.example/"),
        "/first-party/sign".to_owned(),
        "/first-party/sign?url=a&url=b".to_owned(),
        "/first-party/sign?url=%FF".to_owned(),
    ] {
        let r = fetch(w.streaming, &path, &[])?;
        check(r.status == 400, || format!("{path}: status {}", r.status))?;
        check(r.body == REFUSED_BODY.as_bytes(), || {
            format!("{path}: body {}", String::from_utf8_lossy(&r.body))
        })?;
        check(r.header("cache-control") == Some("no-store"), || {
            format!("{path}: cache-control {:?}", r.header("cache-control"))
        })?;
    }
    super::build_log_line(
        w,
        "streaming",
        &[
            "first-party sign refused",
            "169.254.169.254 is cloud metadata",
        ],
    )
    .map(|_| ())
}

/// Every row of the core's SSRF table through the real service: refused rows get `400`,
/// allowed rows `200`.
pub fn ssrf_table_through_the_service(w: &World) -> Outcome {
    let text = std::fs::read_to_string(w.root.join(TABLE_FILE)).map_err(|e| e.to_string())?;
    let mut refused = 0;
    let mut wrong = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (reason, url) = line.split_once(' ').ok_or(format!("bad row {line:?}"))?;
        let url = unescape(url)?;
        let want = if reason == "allowed" { 200 } else { 400 };
        let r = fetch(w.streaming, &sign_path(&url), &[])?;
        let body_ok = want == 200 || r.body == REFUSED_BODY.as_bytes();
        if r.status != want || !body_ok {
            wrong.push(format!(
                "{url:?} ({reason}): {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            ));
        }
        refused += usize::from(want == 400);
    }
    println!("    SSRF table: {refused} hostile targets refused through the service");
    check(refused >= 60, || format!("only {refused} hostile rows"))?;
    check(wrong.is_empty(), || wrong.join("\n    "))
}

/// The table's escapes (see its header): `\\`, `\t`, `\n`, `\r`, `\xHH`.
fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                let byte = u8::from_str_radix(&hex, 16).map_err(|e| format!("{text}: {e}"))?;
                out.push(char::from(byte));
            }
            other => return Err(format!("unknown escape {other:?} in {text:?}")),
        }
    }
    Ok(out)
}

pub fn click_redirects_to_the_signed_target(w: &World) -> Outcome {
    let (url, _) = sign_through_service(w, TARGET)?;
    let click = url.replacen(PROXY_PATH, CLICK_PATH, 1);
    let r = fetch(w.streaming, &click, &[])?;
    check(r.status == 302, || {
        format!("status {} {}", r.status, String::from_utf8_lossy(&r.body))
    })?;
    for (name, value) in [
        ("location", TARGET),
        ("cache-control", "no-store, private"),
        RESPONSE_HEADER,
    ] {
        check(r.header(name) == Some(value), || {
            format!("{name}: {:?}", r.header(name))
        })?;
    }
    Ok(())
}

/// `403` with the one body, whatever is wrong.
/// The rest of `/first-party/` is the service's: another method on a route is `405` with
/// its `Allow` (`GET`, and `POST` too on the proxy, for beacons), an unknown path `404`, both
/// the service's JSON (the origin's pages are HTML), so a signed URL's query never reaches the
/// origin.
pub fn the_namespace_is_never_proxied(w: &World) -> Outcome {
    let query = "?tsurl=https%3A%2F%2Fads.demo-partner.example%2F&tsexp=1&tstoken=x";
    for (method, path, status, allow) in [
        ("PUT", format!("{PROXY_PATH}{query}"), 405, "GET, POST"),
        ("HEAD", format!("{CLICK_PATH}{query}"), 405, "GET"),
        ("POST", "/first-party/sign?url=x".to_owned(), 405, "GET"),
        ("GET", format!("/first-party/nope{query}"), 404, ""),
        ("GET", "/first-party/".to_owned(), 404, ""),
    ] {
        let r = e2e::request(w.streaming, method, &path, &[], TIMEOUT)
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let body_ok = method == "HEAD" || r.body.starts_with(b"{\"error\":");
        check(
            r.status == status
                && body_ok
                && r.header("content-type") == Some("application/json")
                && (status != 405 || r.header("allow") == Some(allow)),
            || {
                format!(
                    "{method} {path}: {} {:?} allow {:?}: {}",
                    r.status,
                    r.header("content-type"),
                    r.header("allow"),
                    String::from_utf8_lossy(&r.body)
                )
            },
        )?;
    }
    Ok(())
}

fn forbidden(w: &World, what: &str, path: &str) -> Outcome {
    let r = fetch(w.streaming, path, &[])?;
    check(
        r.status == 403 && r.body == FORBIDDEN_BODY.as_bytes(),
        || {
            format!(
                "{what}: {} {} for {path}",
                r.status,
                String::from_utf8_lossy(&r.body)
            )
        },
    )?;
    check(r.header("location").is_none(), || {
        format!("{what}: a Location")
    })?;
    check(
        r.header("cache-control") == Some("no-store, private"),
        || format!("{what}: cache-control {:?}", r.header("cache-control")),
    )
}

pub fn click_refuses_tampered_expired_and_other_hosts(w: &World) -> Outcome {
    let key = dev_key(w)?;
    let (url, expires) = sign_through_service(w, TARGET)?;
    let click = url.replacen(PROXY_PATH, CLICK_PATH, 1);
    let p = params(&click);
    let token = param(&p, "tstoken").unwrap_or_default().to_owned();
    let flipped = {
        let first = if token.starts_with('A') { 'B' } else { 'A' };
        format!("{first}{}", &token[1..])
    };
    let with = |target: &str, exp: u64, token: &str| {
        format!(
            "{CLICK_PATH}?tsurl={}&tsexp={exp}&tstoken={token}",
            encode(target)
        )
    };
    let other_key =
        UrlKey::new(b"not the service's key, but long enough").map_err(|e| e.to_string())?;
    let past = now() - 10;
    let cases = [
        ("tampered token", with(TARGET, expires, &flipped)),
        ("wrong expiry", with(TARGET, expires + 1, &token)),
        (
            "expiry with a leading zero",
            click.replace("tsexp=", "tsexp=0"),
        ),
        (
            "other URL, same token",
            with("https://ads.demo-partner.example/other", expires, &token),
        ),
        (
            "expired (forged with the dev key)",
            with(TARGET, past, &key.token(TARGET, past)),
        ),
        (
            "other host (forged with the dev key)",
            with(
                "https://evil.example/",
                expires,
                &key.token("https://evil.example/", expires),
            ),
        ),
        (
            "metadata address (forged with the dev key)",
            with(
                "http://169.254.169.254/",
                expires,
                &key.token("http://169.254.169.254/", expires),
            ),
        ),
        (
            "another key",
            with(TARGET, expires, &other_key.token(TARGET, expires)),
        ),
        (
            "no token",
            with(TARGET, expires, "").replace("&tstoken=", ""),
        ),
        ("repeated URL", format!("{click}&tsurl={}", encode(TARGET))),
    ];
    for (what, path) in &cases {
        forbidden(w, what, path)?;
    }
    // The reasons reach the log, one per kind.
    for needle in [
        "the token does not match",
        "expired at",
        "signed, but refused now: host \"evil.example\"",
        "IP literal 169.254.169.254 is cloud metadata",
    ] {
        super::build_log_line(w, "streaming", &["first-party click refused", needle])?;
    }
    Ok(())
}

/// A token with a valid MAC (forged with the development key, as a leaked key would allow)
/// whose `tsexp` lies further ahead than the longest configured lifetime gets the one `403`
/// on both signed routes; one a little inside the lifetime still redirects.
pub fn an_expiry_beyond_the_longest_lifetime_is_refused(w: &World) -> Outcome {
    let key = dev_key(w)?;
    let signed = |path: &str, exp: u64| {
        format!(
            "{path}?tsurl={}&tsexp={exp}&tstoken={}",
            encode(TARGET),
            key.token(TARGET, exp)
        )
    };
    // A margin of a minute either side of the bound, for the time between here and the check.
    let inside = now() + PAGE_TTL - 60;
    let r = fetch(w.streaming, &signed(CLICK_PATH, inside), &[])?;
    check(
        r.status == 302 && r.header("location") == Some(TARGET),
        || {
            format!(
                "inside the lifetime: {} {:?}",
                r.status,
                r.header("location")
            )
        },
    )?;
    let beyond = now() + PAGE_TTL + 60;
    let ten_years = now() + 10 * 365 * 24 * 3600;
    for (what, path) in [
        ("click, a minute too far", signed(CLICK_PATH, beyond)),
        ("click, ten years ahead", signed(CLICK_PATH, ten_years)),
        ("click, the largest expiry", signed(CLICK_PATH, u64::MAX)),
        ("proxy, ten years ahead", signed(PROXY_PATH, ten_years)),
    ] {
        forbidden(w, what, &path)?;
    }
    super::build_log_line(
        w,
        "streaming",
        &[
            "first-party click refused",
            "more than the longest lifetime 3600 s",
        ],
    )
    .map(|_| ())
}

pub fn missing_key_answers_503_and_logs_why(w: &World) -> Outcome {
    let key = dev_key(w)?;
    let exp = now() + 60;
    for path in [
        sign_path(TARGET),
        format!(
            "{CLICK_PATH}?tsurl={}&tsexp={exp}&tstoken={}",
            encode(TARGET),
            key.token(TARGET, exp)
        ),
    ] {
        let r = fetch(w.no_secret, &path, &[])?;
        check(
            r.status == 503 && r.body == UNAVAILABLE_BODY.as_bytes(),
            || format!("{path}: {} {}", r.status, String::from_utf8_lossy(&r.body)),
        )?;
    }
    // A refused target is still refused before the key is needed.
    let r = fetch(w.no_secret, &sign_path("http://127.0.0.1/"), &[])?;
    check(r.status == 400, || format!("status {}", r.status))?;
    super::build_log_line(
        w,
        "no-secret",
        &[
            "first-party sign unavailable",
            "`ts_first_party`",
            "no key `no_such_url_key`",
            "first_party.token_key",
        ],
    )
    .map(|_| ())
}

/// The development key never reaches a response or a log.
pub fn the_key_never_shows(w: &World) -> Outcome {
    let secret = secret_line(w)?;
    check(secret.len() >= 16, || "no key line".into())?;
    let (url, _) = sign_through_service(w, TARGET)?;
    let click = url.replacen(PROXY_PATH, CLICK_PATH, 1);
    for path in [sign_path(TARGET), click, sign_path("http://10.0.0.1/")] {
        let r = fetch(w.streaming, &path, &[])?;
        let all: Vec<u8> = (r.headers.iter())
            .flat_map(|(n, v)| n.bytes().chain(v.iter().copied()))
            .chain(r.body.iter().copied())
            .collect();
        let shown = String::from_utf8_lossy(&all);
        check(
            !shown.contains(&secret) && !shown.contains("DEVELOPMENT ONLY"),
            || format!("{path}: the key shows"),
        )?;
    }
    for build in ["streaming", "no-secret"] {
        let log =
            std::fs::read_to_string(crate::viceroy_log(w, build)).map_err(|e| e.to_string())?;
        check(!log.contains(&secret) && !log.contains("panicked"), || {
            format!("the {build} log shows the key or a panic")
        })?;
    }
    Ok(())
}
