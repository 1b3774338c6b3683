//! End-to-end scenarios of how the service reads request paths and of the `Sec-GPC` expiry
//! (docs/security.md): spellings of the service's own paths (repeated slashes,
//! escaped unreserved characters, dot segments, encoded slashes, letter case, overlong UTF-8,
//! control characters and trailing dots) are answered by the service
//! and never reach the demo origin, whose request log shows it; and a `ts-ec` cookie sent with
//! `Sec-GPC: 1` is expired on whatever response the request gets, route by route.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use e2e::raw_origin::Step;
use trusted_server_core::first_party::token::{CLICK_PATH, PROXY_PATH};

use super::cache::our_cookies;
use super::{check, fetch, identity, Outcome, World, TIMEOUT};

const ADMIN_FILE: &str = "fixtures/dev-only/admin-credentials.DEVELOPMENT-ONLY.json";
const PAGE: &str = "/news/article.html";
const NAV: (&str, &str) = ("sec-fetch-dest", "document");
const GPC: (&str, &str) = ("sec-gpc", "1");
/// The expiry the e2e builds send (`publisher.cookie_domain` is empty there: host-only).
const EXPIRY: &str = "ts-ec=; Path=/; Secure; SameSite=Lax; Max-Age=0; HttpOnly";
/// `public, max-age=300`, percent-encoded for the demo origin's `cache_control` knob.
const CACHEABLE: &str = "cache_control=public%2C%20max-age%3D300";
const PARTNER: &str = "ads.demo-partner.example";

/// A token no other request of this run has.
fn unique(tag: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{tag}{nanos}")
}

fn ask(
    w: &World,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<e2e::Timed, String> {
    e2e::request(w.streaming, method, path, headers, TIMEOUT)
        .map_err(|e| format!("{method} {path}: {e}"))
}

fn basic_auth(w: &World) -> Result<String, String> {
    use base64::Engine as _;
    let text = std::fs::read_to_string(w.root.join(ADMIN_FILE)).map_err(|e| e.to_string())?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let (Some(user), Some(password)) =
        (json["admin_user"].as_str(), json["admin_password"].as_str())
    else {
        return Err(format!("{ADMIN_FILE}: no admin_user or admin_password"));
    };
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    Ok(format!("Basic {token}"))
}

/// The demo origin's log once a control request carrying `control` shows in it (the log has a
/// line per answered request, in order): every request sent before it has had its line.
fn origin_log_after(w: &World, control: &str) -> Result<String, String> {
    let r = fetch(w.streaming, &format!("{PAGE}?{control}=1"), &[identity()])?;
    check(r.status == 200, || format!("control: status {}", r.status))?;
    let path = w.root.join(super::ORIGIN_LOG);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if log.contains(control) {
            return Ok(log);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the control request never reached {}",
                path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Each spelling, sent with the admin's `Authorization` (or a wrong one) and a marker in its
/// query, gets the service's answer (the route its standard reading names, or a `404`), and
/// the demo origin never sees the marker.
pub fn spellings_of_service_paths_never_reach_the_origin(w: &World) -> Outcome {
    let auth = basic_auth(w)?;
    let wrong = "Basic d3Jvbmc6d3Jvbmc=";
    let (_, script, _) = super::script(w);
    let signed = "tsurl=https%3A%2F%2Fads.demo-partner.example%2Fx&tsexp=1&tstoken=x";
    let marker = unique("paths_e2e_spelling");
    // (method, path, Authorization, status, a piece of the body the service's answer has)
    let cases: Vec<(&str, String, &str, u16, &str)> = vec![
        (
            "GET",
            "//_ts/admin/settings".into(),
            &auth,
            200,
            "\"settings\"",
        ),
        (
            "GET",
            "/_ts//admin/settings".into(),
            &auth,
            200,
            "\"settings\"",
        ),
        ("GET", "/%5Fts/admin/settings".into(), wrong, 401, ""),
        ("POST", "/%5fts/%61dmin/purge".into(), "", 401, ""),
        ("GET", "///_ts/admin".into(), "", 401, ""),
        (
            "GET",
            "//_ts/health".into(),
            &auth,
            200,
            "\"status\":\"ok\"",
        ),
        ("GET", "/%5Fts/ec".into(), &auth, 200, "{\"ec\":"),
        (
            "GET",
            "//.well-known/trusted-server.json".into(),
            "",
            200,
            "\"keys\"",
        ),
        ("GET", format!("/{script}"), "", 200, "getEdgeId"),
        (
            "GET",
            format!("//first-party/proxy?{signed}"),
            &auth,
            403,
            "",
        ),
        (
            "GET",
            format!("/first-party//click?{signed}"),
            &auth,
            403,
            "",
        ),
        (
            "GET",
            format!("/%66irst-party/proxy?{signed}"),
            &auth,
            403,
            "",
        ),
        (
            "PUT",
            format!("//first-party/proxy?{signed}"),
            &auth,
            405,
            "",
        ),
        (
            "GET",
            format!("/first-party%2Fproxy?{signed}"),
            &auth,
            404,
            "",
        ),
        ("GET", "/_ts%2Fadmin/settings".into(), &auth, 404, ""),
        ("GET", "/_ts%2fadmin".into(), &auth, 404, ""),
        ("GET", "/%255Fts/admin/settings".into(), &auth, 404, ""),
        ("GET", "/x/..%2F_ts/admin/settings".into(), &auth, 404, ""),
        // Servlet path parameters, and another method under another spelling.
        ("GET", "/_ts;x/admin/settings".into(), &auth, 404, ""),
        ("GET", "/x/..;/_ts/admin/settings".into(), &auth, 404, ""),
        (
            "GET",
            format!("/first-party;a=b/proxy?{signed}"),
            &auth,
            404,
            "",
        ),
        ("POST", "//_ts/health".into(), &auth, 404, ""),
        (
            "GET",
            "/x/%2e%2e/_ts/admin/settings".into(),
            &auth,
            200,
            "\"settings\"",
        ),
    ];
    ask_each_and_check_the_origin_log(w, &cases, &marker)
}

/// Issue 35's spellings, which origins that fold case (IIS, Windows file systems), decode
/// overlong UTF-8 or strip control characters, spaces and trailing dots read as the service's
/// paths: each, sent with the admin's `Authorization` or a signed first-party query, gets the
/// service's `404`, and the demo origin never sees it.
pub fn folded_overlong_and_stripped_spellings_never_reach_the_origin(w: &World) -> Outcome {
    let auth = basic_auth(w)?;
    let signed = "tsurl=https%3A%2F%2Fads.demo-partner.example%2Fx&tsexp=1&tstoken=x";
    let marker = unique("paths_e2e_folded");
    let mut cases: Vec<(&str, String, &str, u16, &str)> = [
        ("GET", "/_ts%C0%AFadmin/settings"),
        ("GET", "/%C1%9Fts/admin/settings"),
        ("GET", "/_ts%09/admin/settings"),
        ("GET", "/_TS/admin/settings"),
        ("GET", "/_Ts/Admin/settings"),
        ("GET", "/%5FTS/admin/settings"),
        ("POST", "/_TS/admin/purge"),
        ("POST", "/_TS/health"),
        ("GET", "/_TS/ec"),
        ("GET", "/_ts./admin/settings"),
        ("GET", "/_ts%20/admin/settings"),
        ("GET", "/_ts%0D%0A/admin/settings"),
        ("GET", "/_ts%E0%80%AFadmin/settings"),
        ("GET", "/_t%C5%BF/admin/settings"),
        ("GET", "/%EF%BC%BFts/admin/settings"),
        ("GET", "/x/.%09./_ts/admin/settings"),
    ]
    .into_iter()
    .map(|(method, path)| (method, path.to_owned(), auth.as_str(), 404, "404 Not Found"))
    .collect();
    for path in [
        "/FIRST-PARTY/proxy",
        "/First-Party/click",
        "/%46IRST-PARTY/proxy",
        "/first-party%C0%AFproxy",
        "/first-party%09/proxy",
        "/first-party./proxy",
    ] {
        let path = format!("{path}?{signed}");
        cases.push(("GET", path, auth.as_str(), 404, "404 Not Found"));
    }
    ask_each_and_check_the_origin_log(w, &cases, &marker)
}

/// Sends each `(method, path, Authorization, status, a piece of the body)` with `marker` in
/// its query, checks the answer, and then that the demo origin's log never shows `marker`.
fn ask_each_and_check_the_origin_log(
    w: &World,
    cases: &[(&str, String, &str, u16, &str)],
    marker: &str,
) -> Outcome {
    let mut failed = Vec::new();
    for (method, path, authorization, status, piece) in cases {
        let sep = if path.contains('?') { '&' } else { '?' };
        let path = format!("{path}{sep}{marker}=1");
        let mut headers = vec![identity()];
        if !authorization.is_empty() {
            headers.push(("authorization", authorization));
        }
        let r = ask(w, method, &path, &headers)?;
        let body = String::from_utf8_lossy(&r.body);
        if r.status != *status || !body.contains(piece) {
            failed.push(format!(
                "{method} {path}: {} (want {status} with {piece:?}): {body}",
                r.status
            ));
        }
    }
    let log = origin_log_after(w, &unique("paths_e2e_control"))?;
    let seen: Vec<&str> = log.lines().filter(|l| l.contains(marker)).collect();
    check(failed.is_empty() && seen.is_empty(), || {
        format!(
            "{} of {} answers wrong: {failed:?}; the origin saw {} spellings of the service's \
             paths: {seen:?}",
            failed.len(),
            cases.len(),
            seen.len()
        )
    })
}

/// `r` expires the cookie (one line, exactly the expiry) and stays out of shared caches.
fn expired(what: &str, r: &e2e::Timed) -> Outcome {
    check(our_cookies(r) == [EXPIRY], || {
        format!(
            "{what}: status {}, ts-ec lines {:?}",
            r.status,
            our_cookies(r)
        )
    })?;
    let cc = r
        .header("cache-control")
        .unwrap_or_default()
        .to_ascii_lowercase();
    check(cc.contains("private") || cc.contains("no-store"), || {
        format!("{what}: cache-control {cc:?} with the expiry")
    })
}

/// A first-party path signed by the service for `target`.
fn signed_path(w: &World, target: &str) -> Result<String, String> {
    let encoded: String = url::form_urlencoded::byte_serialize(target.as_bytes()).collect();
    let r = fetch(
        w.streaming,
        &format!("/first-party/sign?url={encoded}"),
        &[],
    )?;
    let value: serde_json::Value = serde_json::from_slice(&r.body)
        .map_err(|e| format!("sign {target}: {} not JSON ({e})", r.status))?;
    value["url"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("sign {target}: {value}"))
}

/// Each route, asked with a valid `ts-ec` cookie and `Sec-GPC: 1`, expires the cookie: the
/// service's own endpoints, the first-party routes (the proxy passing a body through and
/// streaming a rewritten one), the admin, `404`s in the namespaces, pages from the origin and
/// from the cache. The cached copy never carries the expiry to the next reader.
pub fn gpc_expires_the_cookie_on_every_route(w: &World) -> Outcome {
    let first = fetch(w.streaming, PAGE, &[identity(), NAV])?;
    let id = our_cookies(&first)
        .first()
        .and_then(|line| line.strip_prefix("ts-ec="))
        .and_then(|rest| rest.split(';').next())
        .map(str::to_owned)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| format!("no ID on a first navigation: {:?}", our_cookies(&first)))?;
    let cookie = format!("ts-ec={id}");
    let with = [identity(), NAV, GPC, ("cookie", cookie.as_str())];
    let (_, script, _) = super::script(w);
    let text = [
        ("content-type", "text/plain"),
        ("content-length", "3"),
        ("connection", "close"),
    ];
    let raw = |headers: &[(&str, &str)], body: &str| {
        let mut out = "HTTP/1.1 200 OK\r\n".to_owned();
        for (n, v) in headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        out.push_str("\r\n");
        out.push_str(body);
        vec![Step::Write(out.into_bytes())]
    };
    w.partner.script("/paths-gpc.txt", raw(&text, "ok\n"));
    let html =
        "<html><body><img src=\"http://ads.demo-partner.example/paths-gpc.txt\"></body></html>";
    let html_headers = [
        ("content-type", "text/html"),
        ("content-length", &html.len().to_string()),
        ("connection", "close"),
    ]
    .map(|(n, v)| (n, v.to_owned()));
    let html_headers: Vec<(&str, &str)> =
        html_headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    w.partner
        .script("/paths-gpc.html", raw(&html_headers, html));
    let proxied_text = signed_path(w, &format!("http://{PARTNER}/paths-gpc.txt"))?;
    let proxied_html = signed_path(w, &format!("http://{PARTNER}/paths-gpc.html"))?;
    let click = proxied_text.replacen(PROXY_PATH, CLICK_PATH, 1);
    let sign = format!(
        "/first-party/sign?url={}",
        url::form_urlencoded::byte_serialize(format!("http://{PARTNER}/x").as_bytes())
            .collect::<String>()
    );
    let gets = [
        ("health", "/_ts/health".to_owned(), 200),
        ("script", script, 200),
        (
            "discovery",
            "/.well-known/trusted-server.json".to_owned(),
            200,
        ),
        ("edge-ID endpoint", "/_ts/ec".to_owned(), 200),
        ("sign", sign, 200),
        ("click", click, 302),
        ("first-party proxy, passed through", proxied_text, 200),
        ("first-party proxy, rewritten", proxied_html, 200),
        ("admin", "/_ts/admin/settings".to_owned(), 401),
        (
            "first-party namespace 404",
            "/first-party/nope".to_owned(),
            404,
        ),
        ("reserved spelling 404", "/_ts%2Fadmin".to_owned(), 404),
        ("page", PAGE.to_owned(), 200),
        ("origin 404", "/no-such-page.html".to_owned(), 404),
    ];
    for (what, path, status) in gets {
        let r = fetch(w.streaming, &path, &with)?;
        check(r.status == status, || {
            format!("{what} {path}: status {} (want {status})", r.status)
        })?;
        expired(what, &r)?;
    }
    let verify = e2e::send(
        w.streaming,
        "POST",
        "/verify-signature",
        &with,
        b"{}",
        TIMEOUT,
    )
    .map_err(|e| format!("POST /verify-signature: {e}"))?;
    expired("verify-signature", &verify)?;
    // A page from the cache: stored by a reader without GPC, then a HIT for the GPC reader
    // (with the expiry), then a HIT for a third reader without GPC (without it).
    let cached = format!("{PAGE}?{CACHEABLE}&t={}", unique("paths_gpc"));
    let fill = fetch(w.streaming, &cached, &[identity(), NAV])?;
    let hit = fetch(w.streaming, &cached, &with)?;
    let after = fetch(w.streaming, &cached, &[identity(), NAV])?;
    let states = [&fill, &hit, &after].map(|r| r.header("x-ts-cache").unwrap_or("-").to_owned());
    check(states[1] == "HIT" && states[2] == "HIT", || {
        format!("cache states {states:?}")
    })?;
    expired("cached page (HIT)", &hit)?;
    // The next reader, a first navigation, gets its own new ID, never the expiry.
    check(!our_cookies(&after).iter().any(|c| c == EXPIRY), || {
        format!(
            "the next reader got {:?} from the cache",
            our_cookies(&after)
        )
    })
}

/// The platform makes the client request's URL from its `Host` as sent, and some values it
/// lets through are no host to WHATWG URL parsing (a port past 65535 or not a number, an
/// IPv4 address with a part past 255 or five parts, a bracketed name that is no IPv6
/// address, an `xn--` label that is no punycode). Each gets the service's `400`, never a
/// crash, on a page path and on one of the service's own; a request after them is served.
/// Raw requests: a client library refuses to send such a `Host`.
pub fn a_host_no_url_can_hold_gets_400_not_a_crash(w: &World) -> Outcome {
    let hosts = [
        "www.demo-publisher.example:99999",
        "www.demo-publisher.example:abc",
        "1.2.3.999",
        "1.2.3.4.5",
        "[zz]",
        "xn--zz",
    ];
    for host in hosts {
        for path in [PAGE, "/_ts/health"] {
            let raw = format!("GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
            let got = e2e::wire::send_raw(w.streaming, raw.as_bytes(), TIMEOUT)
                .map_err(|e| format!("{host} {path}: {e}"))?;
            let text = String::from_utf8_lossy(&got);
            check(text.starts_with("HTTP/1.1 400"), || {
                format!("Host {host}, {path}: {:?}", &text[..text.len().min(200)])
            })?;
            check(text.ends_with("400 Bad Request\n"), || {
                format!("Host {host}, {path}: not the service's 400: {text:?}")
            })?;
        }
    }
    let after = ask(w, "GET", "/_ts/health", &[])?;
    check(after.status == 200, || {
        format!("a request after them got {}", after.status)
    })
}
