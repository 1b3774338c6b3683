//! The consent wiring as a hostile reader would try it: a cached page must not carry another
//! reader's cookie or ID (fresh hit, stale hit and its refresh), a partner must not get the
//! edge ID by way of a redirect, no request header can move a reader to another jurisdiction
//! or forge consent, and neither `GET /_ts/consent` nor the log holds a consent string.

use std::time::{Duration, Instant};

use e2e::raw_origin::Step;

use super::super::cache::{origin_requests, state, unique};
use super::super::edge_id::{our_cookies, EXPIRY};
use super::super::first_party::proxy::{proxy_path, ADS};
use super::super::{check, contains, identity, Outcome, World};
use super::{
    consent_answer, from, gets_an_id, sent_ids, tcf, CALIFORNIA, GERMANY, GPC, GPP_CA_NO_OPT_OUT,
    GPP_CA_SALE_OPT_OUT, NAV, PAGE, TCF_NONE, TCF_P1,
};

/// The demo's own reader: Japan, outside every jurisdiction.
const JAPAN: [u8; 4] = [127, 0, 0, 1];
/// `public, max-age=300`, percent-encoded for the demo origin's `cache_control` knob: a page
/// every reader shares, cookies or not.
const SHARED: &str = "cache_control=public%2C%20max-age%3D300";
/// One second fresh, then a minute of stale-while-revalidate.
const SOON_STALE: &str = "cache_control=public%2C%20max-age%3D1%2C%20stale-while-revalidate%3D60";
/// The cdn host: no TCF vendor ID in the e2e builds.
const CDN: &str = "cdn.demo-partner.example";

/// The ID of the one new `ts-ec` cookie a response sets.
fn set_id(r: &e2e::Timed) -> Result<String, String> {
    match our_cookies(r).as_slice() {
        [one] if !one.starts_with("ts-ec=;") => Ok(one["ts-ec=".len()..]
            .split(';')
            .next()
            .unwrap_or("")
            .to_owned()),
        other => Err(format!("expected one new ts-ec cookie, got {other:?}")),
    }
}

/// What a reader's own `Set-Cookie` must be on a page from the cache.
#[derive(Debug)]
enum Cookie {
    /// No `ts-ec` line (no consent, or consent and the ID already held).
    None,
    /// Only the expiry of the `ts-ec` cookie it sent.
    Expired,
    /// A new ID of its own, not `not`.
    New,
}

/// Checks a response from the cache for the reader it went to: `want`'s cookie, no
/// `X-TS-EC` header, and nothing of another reader's ID `other`, if any, in it.
fn only_its_own(what: &str, r: &e2e::Timed, want: &Cookie, other: Option<&str>) -> Outcome {
    let cookies = our_cookies(r);
    let ok = match want {
        Cookie::None => cookies.is_empty(),
        Cookie::Expired => cookies == [EXPIRY],
        Cookie::New => set_id(r).is_ok_and(|id| Some(id.as_str()) != other),
    };
    check(ok, || format!("{what}: cookies {cookies:?}, want {want:?}"))?;
    check(r.header("x-ts-ec").is_none(), || {
        format!("{what}: an X-TS-EC response header")
    })?;
    let Some(other) = other else {
        return Ok(());
    };
    let leaked = (r.headers.iter()).any(|(_, v)| contains(v, other.as_bytes()))
        || contains(&r.body, other.as_bytes());
    check(!leaked, || {
        format!("{what}: another reader's ID {other} in the response")
    })
}

/// (a) A page every reader shares, filled by a consenting reader in Germany: each later
/// reader gets the stored copy with only what its own decision allows, and on a page that
/// varies by `X-TS-EC` never the filler's variant.
pub fn a_cached_page_is_decided_per_reader(w: &World) -> Outcome {
    let p1 = tcf(TCF_P1);
    let path = format!("{PAGE}?{SHARED}&t={}", unique());
    let filler = from(w, GERMANY, &path, &[identity(), NAV, ("cookie", &p1)])?;
    check(state(&filler) == "MISS", || {
        format!("filler: {}", state(&filler))
    })?;
    let id = set_id(&filler)?;
    let held = format!("ts-ec={id}");
    let withdrawn = format!("ts-ec={id}; {}", tcf(TCF_NONE));
    let again = format!("ts-ec={id}; {p1}");
    type Case<'a> = (&'a str, [u8; 4], Vec<(&'a str, &'a str)>, Cookie);
    let cases: Vec<Case> = vec![
        ("Germany, no consent", GERMANY, vec![], Cookie::None),
        (
            "Germany, the filler's ID, no TC string",
            GERMANY,
            vec![("cookie", &held)],
            Cookie::Expired,
        ),
        (
            "Germany, the filler's ID, consent withdrawn",
            GERMANY,
            vec![("cookie", &withdrawn)],
            Cookie::Expired,
        ),
        (
            "Germany, consent and Sec-GPC",
            GERMANY,
            vec![("cookie", &p1), GPC],
            Cookie::None,
        ),
        (
            "California, Sec-GPC, the filler's ID",
            CALIFORNIA,
            vec![("cookie", &held), GPC],
            Cookie::Expired,
        ),
        (
            "Germany, a consent of its own",
            GERMANY,
            vec![("cookie", &p1)],
            Cookie::New,
        ),
        (
            "the filler again",
            GERMANY,
            vec![("cookie", &again)],
            Cookie::None,
        ),
    ];
    for (what, source, extra, want) in &cases {
        let mut headers = vec![identity(), NAV];
        headers.extend_from_slice(extra);
        let r = from(w, *source, &path, &headers)?;
        check(state(&r) == "HIT", || format!("{what}: {}", state(&r)))?;
        // The filler itself may see its own ID; no one else may.
        let other = (*what != "the filler again").then_some(id.as_str());
        only_its_own(what, &r, want, other)?;
    }

    // A page personalised by `X-TS-EC` (and saying so in `Vary`): the origin saw the
    // consenting reader's ID; a reader without consent never gets that variant.
    let path = format!("{PAGE}?{SHARED}&vary=X-TS-EC&echo=x-ts-ec&t={}", unique());
    let a = from(w, GERMANY, &path, &[identity(), NAV, ("cookie", &p1)])?;
    let a_id = set_id(&a)?;
    check(contains(&a.body, a_id.as_bytes()), || {
        "the origin did not see the consenting reader's ID".into()
    })?;
    let withdrawn = format!("ts-ec={a_id}");
    let b = from(
        w,
        GERMANY,
        &path,
        &[identity(), NAV, ("cookie", &withdrawn)],
    )?;
    only_its_own(
        "withdrawn, Vary: X-TS-EC",
        &b,
        &Cookie::Expired,
        Some(&a_id),
    )?;
    let c = from(w, GERMANY, &path, &[identity(), NAV])?;
    check(state(&c) == "HIT", || {
        format!("no consent, Vary: X-TS-EC: {}", state(&c))
    })?;
    only_its_own("no consent, Vary: X-TS-EC", &c, &Cookie::None, Some(&a_id))?;
    let own = format!("ts-ec={a_id}; {p1}");
    let a2 = from(w, GERMANY, &path, &[identity(), NAV, ("cookie", &own)])?;
    check(
        state(&a2) == "HIT" && contains(&a2.body, a_id.as_bytes()) && our_cookies(&a2).is_empty(),
        || {
            format!(
                "the consenting reader's own variant: {} {:?}",
                state(&a2),
                our_cookies(&a2)
            )
        },
    )
}

/// (a) A stale copy served to a reader who withdrew consent gets the expiry only, and the
/// refresh it triggers asks the origin as that reader: without the ID it no longer allows.
/// (The page echoes `X-TS-EC` without `Vary`: the publisher's own choice, so the stale copy
/// holds the ID of the reader who filled it, which is this reader's own former ID.)
pub fn a_stale_refresh_asks_as_the_reader_who_triggered_it(w: &World) -> Outcome {
    let p1 = tcf(TCF_P1);
    let t = unique();
    let path = format!("{PAGE}?{SOON_STALE}&echo=x-ts-ec&t={t}");
    let filler = from(w, GERMANY, &path, &[identity(), NAV, ("cookie", &p1)])?;
    let id = set_id(&filler)?;
    check(contains(&filler.body, id.as_bytes()), || {
        "the origin did not see the ID".into()
    })?;
    std::thread::sleep(Duration::from_millis(1600));
    let held = format!("ts-ec={id}");
    let stale = from(w, GERMANY, &path, &[identity(), NAV, ("cookie", &held)])?;
    check(state(&stale) == "HIT", || {
        format!("stale: {}", state(&stale))
    })?;
    check(our_cookies(&stale) == [EXPIRY], || {
        format!("stale: cookies {:?}", our_cookies(&stale))
    })?;
    let n = origin_requests(w, &t, 2);
    check(n == 2, || format!("{n} origin requests: no refresh"))?;
    // The refreshed copy is the page as the origin made it for a reader without an ID.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let r = from(w, GERMANY, &path, &[identity(), NAV])?;
        if state(&r) == "HIT" && !contains(&r.body, id.as_bytes()) {
            return only_its_own("after the refresh", &r, &Cookie::None, Some(&id));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "after the refresh ({}): the copy still holds the ID {id} the reader withdrew",
                state(&r)
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn redirect_to(to: &str) -> Vec<Step> {
    let head = format!(
        "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    vec![Step::Write(head.into_bytes())]
}

/// The `host` of a request head the partner received.
fn host_of(head: &[u8]) -> String {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    (text.lines())
        .find_map(|l| l.strip_prefix("host: ").map(|h| h.trim().to_owned()))
        .unwrap_or_default()
}

/// (b) Every hop of the first-party proxy is decided for its own host: from a host without
/// a vendor ID to one with it, the ID reaches only the second; a `Location` that names the
/// vendor's host as userinfo (`ads…@cdn…`) is the cdn host; and without consent no hop
/// gets it.
pub fn every_redirect_hop_is_decided_for_its_host(w: &World) -> Outcome {
    let png = b"HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 8\r\nconnection: close\r\n\r\n\x89PNG\r\n\x1a\n";
    w.partner
        .script("/consent-landed.png", vec![Step::Write(png.to_vec())]);
    w.partner.script(
        "/consent-to-ads",
        redirect_to(&format!("http://{ADS}/consent-landed.png")),
    );
    w.partner.script(
        "/consent-userinfo",
        redirect_to(&format!("http://{ADS}@{CDN}/consent-landed.png")),
    );
    let p1 = tcf(TCF_P1);
    let id = set_id(&from(
        w,
        GERMANY,
        PAGE,
        &[identity(), NAV, ("cookie", &p1)],
    )?)?;
    let lower = id.to_ascii_lowercase();
    let paths = [
        "/consent-to-ads",
        "/consent-userinfo",
        "/consent-landed.png",
    ];
    for (what, cookie, first, want_ads) in [
        (
            "consent, cdn then ads",
            format!("ts-ec={id}; {p1}"),
            "/consent-to-ads",
            true,
        ),
        (
            "no consent, cdn then ads",
            format!("ts-ec={id}"),
            "/consent-to-ads",
            false,
        ),
        (
            "consent, ads@cdn userinfo",
            format!("ts-ec={id}; {p1}"),
            "/consent-userinfo",
            false,
        ),
    ] {
        for p in paths {
            w.partner.take_requests(p);
        }
        let target = format!("http://{CDN}{first}");
        let r = from(
            w,
            GERMANY,
            &proxy_path(w, &target, 60)?,
            &[("cookie", &cookie)],
        )?;
        let heads: Vec<Vec<u8>> = paths
            .iter()
            .flat_map(|p| w.partner.take_requests(p))
            .collect();
        check(!heads.is_empty(), || {
            format!("{what}: no hop reached the partner ({})", r.status)
        })?;
        let mut ads_got = false;
        for head in &heads {
            let (host, ids) = (host_of(head), sent_ids(head));
            check(ids.is_empty() || host == ADS, || {
                format!("{what}: {host} got X-TS-EC {ids:?}")
            })?;
            ads_got |= host == ADS && ids == [lower.clone()];
        }
        check(ads_got == want_ads, || {
            format!("{what}: the vendor's host got the ID: {ads_got}, want {want_ads}")
        })?;
    }
    Ok(())
}

/// (c) Forwarding and geolocation headers do not move a reader; a forged `Sec-GPC: 0` does
/// not cancel a `1`; disagreeing copies of a consent cookie refuse (whichever comes first,
/// in one `Cookie` line or two); a copy that does not decode is as if absent, and one after
/// 16 KiB of other cookies is read like any other (`holes.rs` tries the padding attacks).
pub fn headers_cannot_move_a_reader_or_forge_consent(w: &World) -> Outcome {
    let posing_as = |ip: &'static str, country: &'static str| {
        vec![
            ("x-forwarded-for", ip),
            ("fastly-client-ip", ip),
            ("x-real-ip", ip),
            ("true-client-ip", ip),
            ("client-ip", ip),
            ("x-geo-country", country),
            ("x-geo-country-code", country),
            ("fastly-geo-country", country),
            ("geo-country-code", country),
            ("cf-ipcountry", country),
            ("x-geo-region", ""),
        ]
    };
    let germany_no =
        r#"{"rule":"opt-in","edge_id":false,"origin":false,"reasons":["opt-in-region","no-tcf"]}"#;
    let as_japan = posing_as("127.0.0.1", "JP");
    let body = consent_answer(w, GERMANY, &as_japan)?;
    check(body == germany_no, || {
        format!("Germany posing as Japan: {body}")
    })?;
    check(!gets_an_id(w, GERMANY, &as_japan)?, || {
        "an ID for Germany posing as Japan".into()
    })?;
    let body = consent_answer(w, JAPAN, &posing_as("127.0.0.10", "DE"))?;
    check(body.starts_with(r#"{"rule":"none","edge_id":true"#), || {
        format!("Japan posing as Germany: {body}")
    })?;
    let body = consent_answer(w, JAPAN, &posing_as("127.0.0.11", "US"))?;
    check(body.starts_with(r#"{"rule":"none","edge_id":true"#), || {
        format!("Japan posing as California: {body}")
    })?;

    for gpc in [[("sec-gpc", "0"), GPC], [GPC, ("sec-gpc", "0")]] {
        let body = consent_answer(w, CALIFORNIA, &gpc)?;
        check(
            body.contains(r#""edge_id":false"#) && body.contains("\"gpc\""),
            || format!("Sec-GPC {gpc:?}: {body}"),
        )?;
    }
    let body = consent_answer(w, CALIFORNIA, &[("sec-gpc", "0")])?;
    check(body.contains(r#""edge_id":true"#), || {
        format!("Sec-GPC: 0: {body}")
    })?;

    let (yes, no) = (tcf(TCF_P1), tcf(TCF_NONE));
    let conflicting: [Vec<(&str, String)>; 3] = [
        vec![("cookie", format!("{no}; {yes}"))],
        vec![("cookie", format!("{yes}; {no}"))],
        vec![("cookie", yes.clone()), ("cookie", no.clone())],
    ];
    for cookies in &conflicting {
        let headers: Vec<(&str, &str)> = cookies.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let body = consent_answer(w, GERMANY, &headers)?;
        check(body.contains("\"conflicting-cookies\""), || {
            format!("two TC strings {cookies:?}: {body}")
        })?;
        check(!gets_an_id(w, GERMANY, &headers)?, || {
            format!("an ID with two TC strings {cookies:?}")
        })?;
    }
    let hiding = format!("__gpp={GPP_CA_NO_OPT_OUT}; __gpp={GPP_CA_SALE_OPT_OUT}; __gpp_sid=8");
    check(!gets_an_id(w, CALIFORNIA, &[("cookie", &hiding)])?, || {
        "a second GPP string hid the opt-out".into()
    })?;
    let oversized = format!("euconsent-v2={TCF_P1}{}", "A".repeat(5000));
    for (what, cookie, want) in [
        ("the same TC string twice", format!("{yes}; {yes}"), true),
        (
            "a malformed copy first",
            format!("euconsent-v2=%FF; {yes}"),
            true,
        ),
        (
            "an oversized copy first",
            format!("{oversized}; {yes}"),
            true,
        ),
        (
            "a TC string after 16 KiB of other cookies",
            format!("pad={}; {yes}", "x".repeat(16 * 1024)),
            true,
        ),
    ] {
        check(
            gets_an_id(w, GERMANY, &[("cookie", &cookie)])? == want,
            || format!("{what}: want an ID: {want}"),
        )?;
    }
    Ok(())
}

/// (d) `GET /_ts/consent` answers only fixed words, `no-store`, whatever the cookies hold
/// (a consent string, or text shaped to break out of the JSON), and no consent string
/// reaches the service's log.
pub fn no_consent_string_is_echoed_or_logged(w: &World) -> Outcome {
    let raw = [TCF_P1, TCF_NONE, GPP_CA_SALE_OPT_OUT, GPP_CA_NO_OPT_OUT];
    let cases = [
        (GERMANY, format!("euconsent-v2={TCF_P1}")),
        (
            GERMANY,
            format!("euconsent-v2={TCF_NONE}; __gpp={GPP_CA_NO_OPT_OUT}"),
        ),
        (
            CALIFORNIA,
            format!("__gpp={GPP_CA_SALE_OPT_OUT}; usprivacy=1YYN"),
        ),
        (
            GERMANY,
            r#"euconsent-v2="},"edge_id":true,"x":{"; __gpp=<script>"#.to_owned(),
        ),
    ];
    for (source, cookie) in &cases {
        let r = from(w, *source, "/_ts/consent", &[("cookie", cookie)])?;
        check(
            r.header("cache-control") == Some("no-store, private"),
            || format!("cache-control {:?}", r.header("cache-control")),
        )?;
        let body = String::from_utf8_lossy(&r.body).into_owned();
        let words = body.replace(['{', '}', '[', ']', ',', ':', '"', '-', '\n'], " ");
        check(
            words
                .split_whitespace()
                .all(|w| w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')),
            || format!("{cookie:?}: {body}"),
        )?;
        check(body.matches("edge_id").count() == 1, || body.clone())?;
    }
    let log = crate::viceroy_log(w, "streaming");
    let text = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    for s in raw {
        check(!text.contains(s), || format!("{s} in {}", log.display()))?;
    }
    Ok(())
}
