//! End-to-end scenarios of consent: readers Viceroy geolocates by their loopback address
//! (fastly.toml, `[local_server.geolocation]`) in Germany (opt-in), California (opt-out), an
//! unlisted country and the US with no known state, sending real TCF and GPP strings (encoded
//! by the IAB's reference libraries: `crates/core/src/consent/fixtures.rs` says how). The
//! rules are tested exhaustively in the core (`consent::decision`); here: the wiring of the
//! decision to the edge ID, `X-TS-EC`, the withdrawal and `GET /_ts/consent`.

use std::net::IpAddr;

pub mod holes;
pub mod hostile;

use super::edge_id::{echoed_ids, our_cookies, EXPIRY};
use super::{check, identity, log_line, Outcome, World, TIMEOUT};

const PAGE: &str = "/news/article.html";
const NAV: (&str, &str) = ("sec-fetch-dest", "document");
const GPC: (&str, &str) = ("sec-gpc", "1");

/// Germany: opt-in.
const GERMANY: [u8; 4] = [127, 0, 0, 10];
/// California: opt-out.
const CALIFORNIA: [u8; 4] = [127, 0, 0, 11];
/// Brazil: in no list, `Sec-GPC` alone, as before consent was read.
const UNLISTED: [u8; 4] = [127, 0, 0, 12];
/// The US, no state: `consent.unknown` (default opt-in).
const US_UNKNOWN_STATE: [u8; 4] = [127, 0, 0, 13];

/// TC string, policy version 5: purpose consents {1}, vendor consents {755}; DisclosedVendors
/// {755} (the core's `TCF_P1_V755`).
const TCF_P1: &str = "CQeEcwAQeEcwAAKABBENBkFAAIAAAAAAAAYgF5wAQF5gAAAA.IF5wAQF5gAAA";
/// TC string: no purpose or vendor consent; DisclosedVendors {755} (`TCF_NO_CONSENT`).
const TCF_NONE: &str = "CQeEcwAQeEcwAAKABBENBkFAAAAAAAAAAAYgAAAAAAAA.IF5wAQF5gAAA";
/// TC string: purpose consents {1}, vendor consents {32, 755}; DisclosedVendors {32}: 755
/// not disclosed (`TCF_P1_NOT_DISCLOSED`).
const TCF_P1_NOT_DISCLOSED: &str =
    "CQeEcwAQeEcwAAKABBENBkFAAIAAAAAAAAYgF5wAgAQALzAAAAAA.IAQAAAAAEAAA";
/// GPP, usca (8): opted out of sale (`GPP_CA_SALE_OPT_OUT`).
const GPP_CA_SALE_OPT_OUT: &str = "DBABBg~BQYAAACA.QA";
/// GPP, usca (8): no opt-out (`GPP_CA_NO_OPT_OUT`).
const GPP_CA_NO_OPT_OUT: &str = "DBABBg~BQoAAACA.QA";

/// A GET from `source` to the streaming build.
fn from(
    w: &World,
    source: [u8; 4],
    path: &str,
    headers: &[(&str, &str)],
) -> Result<e2e::Timed, String> {
    let source = IpAddr::from(source);
    e2e::get_from(source, w.streaming, path, headers, TIMEOUT)
        .map_err(|e| format!("GET {path} from {source}: {e}"))
}

/// Whether a navigation from `source` with `headers` got an edge ID (the cookie) and the
/// origin an `X-TS-EC` (`/__echo`): both or neither, else an error.
fn gets_an_id(w: &World, source: [u8; 4], headers: &[(&str, &str)]) -> Result<bool, String> {
    let mut all = vec![identity(), NAV];
    all.extend_from_slice(headers);
    let page = from(w, source, PAGE, &all)?;
    check(page.status == 200, || format!("status {}", page.status))?;
    let cookies = our_cookies(&page);
    let set = match cookies.as_slice() {
        [] => false,
        [one] if one.starts_with("ts-ec=") && !one.starts_with("ts-ec=;") => true,
        other => return Err(format!("unexpected ts-ec cookies {other:?}")),
    };
    let echo = from(w, source, "/__echo", &all)?;
    let seen = echoed_ids(&echo.body);
    check(seen.len() == usize::from(set), || {
        format!("cookie set: {set}, but the origin saw {seen:?}")
    })?;
    Ok(set)
}

/// `GET /_ts/consent` from `source`: its body, checked to be `no-store` JSON.
fn consent_answer(w: &World, source: [u8; 4], headers: &[(&str, &str)]) -> Result<String, String> {
    let r = from(w, source, "/_ts/consent", headers)?;
    check(r.status == 200, || format!("status {}", r.status))?;
    check(
        r.header("cache-control")
            .is_some_and(|c| c.contains("no-store")),
        || format!("cache-control {:?}", r.header("cache-control")),
    )?;
    check(r.header("content-type") == Some("application/json"), || {
        format!("content-type {:?}", r.header("content-type"))
    })?;
    Ok(String::from_utf8_lossy(&r.body).into_owned())
}

/// The ID a navigation from `source` with `cookie` is given.
fn new_id(w: &World, source: [u8; 4], cookie: &str) -> Result<String, String> {
    let page = from(w, source, PAGE, &[identity(), NAV, ("cookie", cookie)])?;
    our_cookies(&page)
        .first()
        .and_then(|c| c["ts-ec=".len()..].split(';').next().map(str::to_owned))
        .ok_or_else(|| format!("no ID for {source:?} with {cookie:?}"))
}

fn tcf(value: &str) -> String {
    format!("euconsent-v2={value}")
}

pub fn germany_needs_consent(w: &World) -> Outcome {
    check(!gets_an_id(w, GERMANY, &[])?, || {
        "an ID without a TC string".into()
    })?;
    let none = tcf(TCF_NONE);
    check(!gets_an_id(w, GERMANY, &[("cookie", &none)])?, || {
        "an ID without purpose-1 consent".into()
    })?;
    let p1 = tcf(TCF_P1);
    check(gets_an_id(w, GERMANY, &[("cookie", &p1)])?, || {
        "no ID with purpose-1 consent".into()
    })?;
    // Under opt-in, Sec-GPC refuses even a recorded consent (`consent.gpc_refuses_opt_in`,
    // on by default).
    check(!gets_an_id(w, GERMANY, &[("cookie", &p1), GPC])?, || {
        "an ID with purpose-1 consent despite Sec-GPC".into()
    })?;
    // The demo's own reader (127.0.0.1) is outside every jurisdiction: an ID as before.
    check(gets_an_id(w, [127, 0, 0, 1], &[])?, || {
        "no ID for 127.0.0.1".into()
    })
}

pub fn withdrawing_consent_expires_the_cookie(w: &World) -> Outcome {
    let p1 = tcf(TCF_P1);
    let id = new_id(w, GERMANY, &p1)?;
    // Consent still there: the cookie is reused, not expired.
    let kept = format!("ts-ec={id}; {p1}");
    let r = from(w, GERMANY, PAGE, &[identity(), NAV, ("cookie", &kept)])?;
    check(our_cookies(&r).is_empty(), || {
        format!("with consent: {:?}", our_cookies(&r))
    })?;
    // Consent withdrawn (no TC string, or one without purpose 1): expired, on any response.
    for cookie in [
        format!("ts-ec={id}"),
        format!("ts-ec={id}; {}", tcf(TCF_NONE)),
    ] {
        for path in [PAGE, "/_ts/health", "/_ts/consent"] {
            let r = from(w, GERMANY, path, &[identity(), NAV, ("cookie", &cookie)])?;
            check(our_cookies(&r) == [EXPIRY], || {
                format!("{path} with {cookie:?}: {:?}", our_cookies(&r))
            })?;
        }
        let api = from(w, GERMANY, "/_ts/ec", &[("cookie", &cookie)])?;
        check(api.body == b"{\"ec\":null}\n", || {
            format!("/_ts/ec answered {:?}", String::from_utf8_lossy(&api.body))
        })?;
    }
    Ok(())
}

pub fn california_opt_outs(w: &World) -> Outcome {
    check(gets_an_id(w, CALIFORNIA, &[])?, || {
        "no ID without an opt-out".into()
    })?;
    let ok = format!("__gpp={GPP_CA_NO_OPT_OUT}; __gpp_sid=8");
    check(gets_an_id(w, CALIFORNIA, &[("cookie", &ok)])?, || {
        "no ID with a GPP string that does not opt out".into()
    })?;
    let out = format!("__gpp={GPP_CA_SALE_OPT_OUT}; __gpp_sid=8");
    check(!gets_an_id(w, CALIFORNIA, &[("cookie", &out)])?, || {
        "an ID despite a GPP sale opt-out".into()
    })?;
    check(!gets_an_id(w, CALIFORNIA, &[GPC])?, || {
        "an ID despite Sec-GPC".into()
    })?;
    check(
        !gets_an_id(w, CALIFORNIA, &[("cookie", "usprivacy=1YYN")])?,
        || "an ID despite a US Privacy sale opt-out".into(),
    )
}

pub fn elsewhere_and_unknown(w: &World) -> Outcome {
    check(gets_an_id(w, UNLISTED, &[])?, || {
        "no ID in an unlisted country".into()
    })?;
    // A GPP opt-out binds no one there; Sec-GPC still does.
    let out = format!("__gpp={GPP_CA_SALE_OPT_OUT}");
    check(gets_an_id(w, UNLISTED, &[("cookie", &out)])?, || {
        "no ID in an unlisted country with a US opt-out".into()
    })?;
    check(!gets_an_id(w, UNLISTED, &[GPC])?, || {
        "an ID despite Sec-GPC".into()
    })?;
    // The US with no state: consent.unknown, opt-in by default.
    check(!gets_an_id(w, US_UNKNOWN_STATE, &[])?, || {
        "an ID in an unknown US state without consent".into()
    })?;
    let body = consent_answer(w, US_UNKNOWN_STATE, &[])?;
    check(body.contains("\"location-unknown\""), || body.clone()).map(|_| ())
}

pub fn malformed_and_oversized_strings_are_no_signal(w: &World) -> Outcome {
    let oversized = format!("{TCF_P1}{}", "A".repeat(5000));
    let malformed = format!("{}!!", &TCF_P1[..20]);
    for value in [malformed.as_str(), oversized.as_str(), "%FF%FE", ""] {
        let cookie = tcf(value);
        check(!gets_an_id(w, GERMANY, &[("cookie", &cookie)])?, || {
            format!(
                "an ID with the TC string {:?}",
                &value[..value.len().min(40)]
            )
        })?;
        let body = consent_answer(w, GERMANY, &[("cookie", &cookie)])?;
        check(body.contains("\"no-tcf\""), || body.clone())?;
    }
    // A broken GPP string in California is no opt-out.
    for gpp in [
        "DBABBg~!!!",
        &format!("{GPP_CA_SALE_OPT_OUT}{}", "A".repeat(5000)),
    ] {
        let cookie = format!("__gpp={gpp}; __gpp_sid=8");
        check(gets_an_id(w, CALIFORNIA, &[("cookie", &cookie)])?, || {
            format!("no ID with the GPP string {:?}", &gpp[..gpp.len().min(40)])
        })?;
    }
    Ok(())
}

pub fn consent_endpoint_answers(w: &World) -> Outcome {
    let body = consent_answer(w, GERMANY, &[])?;
    let want =
        r#"{"rule":"opt-in","edge_id":false,"origin":false,"reasons":["opt-in-region","no-tcf"]}"#;
    check(body == want, || format!("{body}, want {want}"))?;
    let p1 = tcf(TCF_P1);
    let body = consent_answer(w, GERMANY, &[("cookie", &p1)])?;
    let want = r#"{"rule":"opt-in","edge_id":true,"origin":true,"reasons":["opt-in-region","tcf-consent"]}"#;
    check(body == want, || format!("{body}, want {want}"))?;
    check(!body.contains(TCF_P1), || "the TC string echoed".into())?;
    let body = consent_answer(w, CALIFORNIA, &[GPC])?;
    let want =
        r#"{"rule":"opt-out","edge_id":false,"origin":false,"reasons":["opt-out-region","gpc"]}"#;
    check(body == want, || format!("{body}, want {want}"))?;
    let body = consent_answer(w, [127, 0, 0, 1], &[])?;
    let want =
        r#"{"rule":"none","edge_id":true,"origin":true,"reasons":["elsewhere","no-opt-out"]}"#;
    check(body == want, || format!("{body}, want {want}"))?;
    // The access line records the decision, never the strings.
    let line = log_line(
        w,
        &["access", "path=\"/_ts/consent\"", "consent=opt-in:yes"],
    )?;
    check(!line.contains(TCF_P1), || line.clone()).map(|_| ())
}

/// The `X-TS-EC` values in a request head the partner received.
fn sent_ids(head: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(head)
        .to_ascii_lowercase()
        .lines()
        .filter_map(|l| l.strip_prefix("x-ts-ec: ").map(str::to_owned))
        .collect()
}

/// The e2e builds give `ads.demo-partner.example` TCF vendor ID 755 and the cdn host none;
/// `/redirect-allowed` on ads redirects to `/img.png` on cdn (`first_party::proxy`).
pub fn partners_follow_their_vendor_consent(w: &World) -> Outcome {
    use super::first_party::proxy::{install, proxy_path, ADS};
    install(&w.partner);
    let p1 = tcf(TCF_P1);
    let id = new_id(w, GERMANY, &p1)?;
    let elsewhere = new_id(w, UNLISTED, "")?;
    let lower = id.to_ascii_lowercase();
    let cases: [(&str, String, Vec<String>, Vec<String>); 4] = [
        (
            "vendor 755 consented and disclosed",
            format!("ts-ec={id}; {p1}"),
            vec![lower.clone()],
            vec![],
        ),
        (
            "vendor 755 not disclosed",
            format!("ts-ec={id}; {}", tcf(TCF_P1_NOT_DISCLOSED)),
            vec![],
            vec![],
        ),
        ("no consent", format!("ts-ec={id}"), vec![], vec![]),
        // Outside every jurisdiction, as before: every host, no vendor ID needed.
        (
            "a reader in an unlisted country",
            format!("ts-ec={elsewhere}"),
            vec![elsewhere.to_ascii_lowercase()],
            vec![elsewhere.to_ascii_lowercase()],
        ),
    ];
    for (i, (what, cookie, want_ads, want_cdn)) in cases.into_iter().enumerate() {
        w.partner.take_requests("/redirect-allowed");
        w.partner.take_requests("/img.png");
        let path = proxy_path(w, &format!("http://{ADS}/redirect-allowed"), 60)?;
        let source = if i == 3 { UNLISTED } else { GERMANY };
        let r = from(w, source, &path, &[("cookie", &cookie)])?;
        check(r.status == 200, || format!("{what}: status {}", r.status))?;
        let ads = w.partner.take_requests("/redirect-allowed");
        let cdn = w.partner.take_requests("/img.png");
        check(ads.len() == 1 && cdn.len() == 1, || {
            format!("{what}: {} + {} hops", ads.len(), cdn.len())
        })?;
        let (got_ads, got_cdn) = (sent_ids(&ads[0]), sent_ids(&cdn[0]));
        check(got_ads == want_ads && got_cdn == want_cdn, || {
            format!("{what}: ads got {got_ads:?} (want {want_ads:?}), cdn got {got_cdn:?} (want {want_cdn:?})")
        })?;
    }
    Ok(())
}
