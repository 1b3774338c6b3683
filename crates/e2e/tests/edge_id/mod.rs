//! End-to-end scenarios of the edge ID (`ts-ec`, `X-TS-EC`, `GET /_ts/ec`), against the
//! streaming build (fastly.toml's development secret store) and a build whose settings name a
//! secret the store does not have. The ID's rules are tested exhaustively in the core
//! (`publisher::identity`); here the core's `verify` is the oracle for the wiring, with the
//! development key and the address Viceroy reports for loopback clients.

use std::net::IpAddr;

use trusted_server_core::publisher::identity::{EdgeIdKey, SUFFIX_LEN};

use super::{check, fetch, identity, Outcome, World};

const SECRET_FILE: &str = "fixtures/dev-only/identity-secret.DEVELOPMENT-ONLY.txt";
const PAGE: &str = "/news/article.html";
const NAV: (&str, &str) = ("sec-fetch-dest", "document");
const XHR: (&str, &str) = ("sec-fetch-dest", "empty");
/// What follows the value in our cookie (publisher.cookie_domain is empty in the e2e builds).
const ATTRIBUTES: &str = "; Path=/; Secure; SameSite=Lax; Max-Age=31536000; HttpOnly";
pub const EXPIRY: &str = "ts-ec=; Path=/; Secure; SameSite=Lax; Max-Age=0; HttpOnly";

/// Viceroy's client address for a loopback connection.
fn client_ip() -> IpAddr {
    IpAddr::from([127, 0, 0, 1])
}

fn dev_key(w: &World) -> Result<EdgeIdKey, String> {
    let secret = std::fs::read(w.root.join(SECRET_FILE)).map_err(|e| format!("{e}"))?;
    EdgeIdKey::new(&secret).map_err(|e| e.to_string())
}

/// The `ts-ec` lines among the response's `Set-Cookie`s.
pub fn our_cookies(r: &e2e::Timed) -> Vec<String> {
    r.header_values("set-cookie")
        .into_iter()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|c| c.starts_with("ts-ec="))
        .collect()
}

/// The one new ID the response sets, checked for its exact form and attributes and for
/// verifying for this client.
fn new_id(w: &World, r: &e2e::Timed) -> Result<String, String> {
    let cookies = our_cookies(r);
    let [line] = cookies.as_slice() else {
        return Err(format!("expected one ts-ec cookie, got {cookies:?}"));
    };
    let (value, attributes) = line["ts-ec=".len()..]
        .split_once(';')
        .map(|(v, a)| (v, format!(";{a}")))
        .ok_or_else(|| format!("no attributes in {line:?}"))?;
    check(attributes == ATTRIBUTES, || {
        format!("attributes {attributes:?}, want {ATTRIBUTES:?}")
    })?;
    let (mac, suffix) = value.split_once('.').unwrap_or(("", ""));
    check(
        mac.len() == 64
            && mac.bytes().all(|b| b.is_ascii_hexdigit())
            && suffix.len() == SUFFIX_LEN
            && suffix.bytes().all(|b| b.is_ascii_alphanumeric()),
        || format!("value {value:?} is not <64 hex>.<{SUFFIX_LEN} alphanumerics>"),
    )?;
    check(dev_key(w)?.verify(client_ip(), value), || {
        format!("{value} does not verify for {}", client_ip())
    })?;
    Ok(value.to_owned())
}

/// The values of `x-ts-ec` the origin saw, from the demo origin's `/__echo` JSON.
pub fn echoed_ids(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let needle = "[\"x-ts-ec\",\"";
    text.match_indices(needle)
        .filter_map(|(at, _)| {
            let rest = &text[at + needle.len()..];
            rest.split_once('"').map(|(v, _)| v.to_owned())
        })
        .collect()
}

/// Changes the first hex digit of the HMAC part.
fn tampered(id: &str) -> String {
    let first = if id.starts_with('0') { '1' } else { '0' };
    format!("{first}{}", &id[1..])
}

pub fn cookie_set_on_first_navigation(w: &World) -> Outcome {
    let r = fetch(
        w.streaming,
        &format!("{PAGE}?set_cookie=1"),
        &[identity(), NAV, ("accept", "text/html")],
    )?;
    check(r.status == 200 && r.complete, || {
        format!("status {}", r.status)
    })?;
    new_id(w, &r)?;
    // The origin's own cookies are kept, ours is added after them.
    let all = r.header_values("set-cookie");
    check(all.len() == 3 && all[2].starts_with(b"ts-ec="), || {
        format!("set-cookie lines {all:?}")
    })?;
    check(r.header("cache-control") == Some("private"), || {
        format!("cache-control {:?}", r.header("cache-control"))
    })?;
    // Without Fetch Metadata, an Accept naming text/html is a navigation too.
    let r = fetch(
        w.streaming,
        PAGE,
        &[identity(), ("accept", "text/html,*/*;q=0.8")],
    )?;
    new_id(w, &r).map(|_| ())
}

pub fn valid_cookie_reused_tampered_replaced(w: &World) -> Outcome {
    let first = fetch(w.streaming, PAGE, &[identity(), NAV])?;
    let id = new_id(w, &first)?;
    let cookie = format!("a=1; ts-ec={id}; b=2");
    let again = fetch(w.streaming, PAGE, &[identity(), NAV, ("cookie", &cookie)])?;
    check(again.status == 200, || format!("status {}", again.status))?;
    check(our_cookies(&again).is_empty(), || {
        format!("a valid cookie was replaced: {:?}", our_cookies(&again))
    })?;
    check(again.header("cache-control").is_none(), || {
        "cache-control added without a cookie being set".into()
    })?;
    let edited = format!("ts-ec={}", tampered(&id));
    let other_ip = format!(
        "ts-ec={}",
        dev_key(w)?.mint("192.0.2.7".parse().unwrap(), [1; 8])
    );
    for cookie in [edited, other_ip, "ts-ec=garbage".to_owned()] {
        let r = fetch(w.streaming, PAGE, &[identity(), NAV, ("cookie", &cookie)])?;
        let fresh = new_id(w, &r).map_err(|e| format!("{cookie}: {e}"))?;
        check(format!("ts-ec={fresh}") != cookie, || {
            format!("{cookie} kept")
        })?;
    }
    Ok(())
}

/// Changes the last character of the suffix (the HMAC part stays the one the service made).
fn resuffixed(id: &str) -> String {
    let last = if id.ends_with('a') { 'b' } else { 'a' };
    format!("{}{last}", &id[..id.len() - 1])
}

/// A reader who changes the suffix of its own valid ID (same network, same HMAC part) does
/// not get that other ID accepted: it is not forwarded as `X-TS-EC`, `/_ts/ec` does not answer
/// it, and a navigation replaces it with a fresh ID.
pub fn a_changed_suffix_is_not_accepted(w: &World) -> Outcome {
    let id = new_id(w, &fetch(w.streaming, PAGE, &[identity(), NAV])?)?;
    let other = resuffixed(&id);
    let cookie = format!("ts-ec={other}");
    let r = fetch(
        w.streaming,
        "/__echo",
        &[identity(), XHR, ("cookie", &cookie)],
    )?;
    check(echoed_ids(&r.body).is_empty(), || {
        format!("origin saw {:?} for a changed suffix", echoed_ids(&r.body))
    })?;
    let r = fetch(
        w.streaming,
        "/__echo",
        &[identity(), NAV, ("cookie", &cookie)],
    )?;
    let seen = echoed_ids(&r.body);
    check(
        seen.len() == 1 && seen[0] != other && dev_key(w)?.verify(client_ip(), &seen[0]),
        || format!("a navigation with {other}: origin saw {seen:?}"),
    )?;
    let api = fetch(w.streaming, "/_ts/ec", &[XHR, ("cookie", &cookie)])?;
    check(api.body == b"{\"ec\":null}\n", || {
        format!("/_ts/ec answered {}", String::from_utf8_lossy(&api.body))
    })?;
    let r = fetch(w.streaming, PAGE, &[identity(), NAV, ("cookie", &cookie)])?;
    let fresh = new_id(w, &r)?;
    check(fresh != other, || format!("{other} set again"))
}

pub fn gpc_means_no_id(w: &World) -> Outcome {
    let gpc = ("sec-gpc", "1");
    let r = fetch(w.streaming, PAGE, &[identity(), NAV, gpc])?;
    check(r.status == 200, || format!("status {}", r.status))?;
    check(our_cookies(&r).is_empty(), || {
        format!("cookie set under GPC: {:?}", our_cookies(&r))
    })?;
    let id = new_id(w, &fetch(w.streaming, PAGE, &[identity(), NAV])?)?;
    let cookie = format!("ts-ec={id}");
    let r = fetch(
        w.streaming,
        PAGE,
        &[identity(), NAV, gpc, ("cookie", &cookie)],
    )?;
    check(our_cookies(&r) == [EXPIRY], || {
        format!("expected the expiry, got {:?}", our_cookies(&r))
    })?;
    let echo = fetch(
        w.streaming,
        "/__echo",
        &[
            identity(),
            NAV,
            gpc,
            ("cookie", &cookie),
            ("x-ts-ec", "spoofed"),
        ],
    )?;
    check(echoed_ids(&echo.body).is_empty(), || {
        format!(
            "the origin saw an ID under GPC: {:?}",
            echoed_ids(&echo.body)
        )
    })?;
    let api = fetch(w.streaming, "/_ts/ec", &[gpc, ("cookie", &cookie)])?;
    check(api.body == b"{\"ec\":null}\n", || {
        format!("/_ts/ec under GPC: {}", String::from_utf8_lossy(&api.body))
    })
}

pub fn no_id_on_non_navigations(w: &World) -> Outcome {
    let cases: [(&str, &[(&str, &str)]); 5] = [
        (PAGE, &[XHR, ("accept", "text/html")]),
        (PAGE, &[("sec-fetch-mode", "cors"), ("accept", "text/html")]),
        (
            "/static/hero.png",
            &[("sec-fetch-dest", "image"), ("accept", "image/*")],
        ),
        (
            "/static/hero.png",
            &[("accept", "image/avif,image/webp,*/*")],
        ),
        // A navigation whose response is not a 2xx page.
        ("/no-such-page.html", &[NAV]),
    ];
    for (path, headers) in cases {
        let mut all = vec![identity()];
        all.extend_from_slice(headers);
        let r = fetch(w.streaming, path, &all)?;
        check(our_cookies(&r).is_empty(), || {
            format!(
                "{path} with {headers:?} (status {}): {:?}",
                r.status,
                our_cookies(&r)
            )
        })?;
    }
    Ok(())
}

pub fn id_reaches_origin_and_clients_own_never(w: &World) -> Outcome {
    let spoof = ("x-ts-ec", "spoofed.AAAAAA");
    // A navigation: a new ID, made for this client.
    let r = fetch(w.streaming, "/__echo", &[identity(), NAV, spoof])?;
    let seen = echoed_ids(&r.body);
    let key = dev_key(w)?;
    check(seen.len() == 1 && key.verify(client_ip(), &seen[0]), || {
        format!("origin saw {seen:?}")
    })?;
    // Any request with a valid cookie: that ID.
    let id = new_id(w, &fetch(w.streaming, PAGE, &[identity(), NAV])?)?;
    let cookie = format!("ts-ec={id}");
    let r = fetch(
        w.streaming,
        "/__echo",
        &[identity(), XHR, spoof, ("cookie", &cookie)],
    )?;
    check(echoed_ids(&r.body) == [id.clone()], || {
        format!("origin saw {:?}, want [{id}]", echoed_ids(&r.body))
    })?;
    // No ID: the client's own is dropped, nothing replaces it.
    let r = fetch(w.streaming, "/__echo", &[identity(), XHR, spoof])?;
    check(echoed_ids(&r.body).is_empty(), || {
        format!("origin saw {:?}", echoed_ids(&r.body))
    })
}

pub fn endpoint_answers(w: &World) -> Outcome {
    let id = new_id(w, &fetch(w.streaming, PAGE, &[identity(), NAV])?)?;
    let with = |cookie: String| fetch(w.streaming, "/_ts/ec", &[XHR, ("cookie", &cookie)]);
    let r = with(format!("ts-ec={id}"))?;
    check(r.status == 200, || format!("status {}", r.status))?;
    let want = format!("{{\"ec\":\"{id}\"}}\n");
    check(r.body == want.as_bytes(), || {
        format!("body {:?}, want {want:?}", String::from_utf8_lossy(&r.body))
    })?;
    for (name, value) in [
        ("content-type", "application/json"),
        ("cache-control", "no-store, private"),
        ("x-ts-version", trusted_server_core::VERSION),
    ] {
        check(r.header(name) == Some(value), || {
            format!("{name}: {:?}", r.header(name))
        })?;
    }
    for cookie in [format!("ts-ec={}", tampered(&id)), String::new()] {
        let r = with(cookie.clone())?;
        check(r.body == b"{\"ec\":null}\n", || {
            format!("{cookie:?}: {}", String::from_utf8_lossy(&r.body))
        })?;
        check(
            r.header("cache-control") == Some("no-store, private"),
            || format!("cache-control {:?}", r.header("cache-control")),
        )?;
    }
    Ok(())
}

pub fn missing_secret_serves_page_without_id(w: &World) -> Outcome {
    let r = fetch(w.no_secret, PAGE, &[identity(), NAV])?;
    check(r.status == 200 && r.complete, || {
        format!("status {}", r.status)
    })?;
    let want = super::expected(
        &super::fixture(w, "news/article.html"),
        &w.no_secret.to_string(),
    );
    // The page is the rewritten article with the first-party script's tag, which does not
    // depend on the edge ID.
    super::same_bytes(
        "body without the script tag",
        &super::without_tag(&r.body),
        &want,
    )?;
    check(our_cookies(&r).is_empty(), || {
        format!("cookie without a secret: {:?}", our_cookies(&r))
    })?;
    let echo = fetch(w.no_secret, "/__echo", &[identity(), NAV])?;
    check(
        echo.status == 200 && echoed_ids(&echo.body).is_empty(),
        || format!("origin saw {:?}", echoed_ids(&echo.body)),
    )?;
    let line = super::build_log_line(
        w,
        "no-secret",
        &[
            "edge ID unavailable",
            "`ts_identity`",
            "no key `no_such_key`",
        ],
    )?;
    let log =
        std::fs::read_to_string(crate::viceroy_log(w, "no-secret")).map_err(|e| e.to_string())?;
    check(
        !log.contains("DEVELOPMENT ONLY") && !log.contains("panicked"),
        || format!("the log shows the secret or a panic: {line}"),
    )
}
