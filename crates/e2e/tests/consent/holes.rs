//! The holes an attack on consent found, each tried again as the attacker would: a refused
//! edge ID must not reach the origin in the client's own `Cookie`, no amount of other cookies
//! may hide a consent cookie, a planted `__gpp_sid` may not hide an opt-out, an EU territory
//! under its own country code is opt-in and a placeholder code is unknown, and consent cookies
//! alone do not switch the page cache off.

use std::net::IpAddr;

use super::super::cache::{state, unique};
use super::super::{check, contains, identity, Outcome, World, TIMEOUT};
use super::{
    consent_answer, from, gets_an_id, tcf, CALIFORNIA, GERMANY, GPC, GPP_CA_SALE_OPT_OUT, NAV,
    PAGE, TCF_NONE, TCF_P1,
};

/// Åland (`AX`): Finland's, in the EU, under its own ISO code.
const ALAND: [u8; 4] = [127, 0, 0, 14];
/// French Guiana (`GF`): an EU outermost region under its own ISO code.
const FRENCH_GUIANA: [u8; 4] = [127, 0, 0, 15];
/// A reader a geolocation database places only in `EU`, a placeholder.
const PLACEHOLDER_EU: [u8; 4] = [127, 0, 0, 16];

/// An edge ID in the service's format (what a reader who got one earlier sends back).
const HELD_ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.AbCdEf";

/// A reader: what it plays, its address, its consent cookies (after a `; `), other headers.
type Reader<'a> = (&'a str, [u8; 4], String, Vec<(&'a str, &'a str)>);

/// A request from `source` with any method.
fn send(
    w: &World,
    source: [u8; 4],
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<e2e::Timed, String> {
    let source = IpAddr::from(source);
    e2e::send_from(source, w.streaming, method, path, headers, b"x=1", TIMEOUT)
        .map_err(|e| format!("{method} {path} from {source}: {e}"))
}

/// (1) Readers whose decision withholds `X-TS-EC` send a `ts-ec` cookie with another cookie
/// on every kind of proxied request: the origin (which echoes the `Cookie` and `X-TS-EC` it
/// got, in a response header, and for `POST` in its body) sees the other cookie and never the
/// ID. A reader whose decision allows the ID gets it to the origin as `X-TS-EC` only.
pub fn a_refused_id_never_reaches_the_origin(w: &World) -> Outcome {
    let readers: [Reader; 5] = [
        ("Germany, no consent", GERMANY, String::new(), vec![]),
        ("California, Sec-GPC", CALIFORNIA, String::new(), vec![GPC]),
        (
            "California, usprivacy=1YYN",
            CALIFORNIA,
            "; usprivacy=1YYN".into(),
            vec![],
        ),
        (
            "California, a GPP sale opt-out",
            CALIFORNIA,
            format!("; __gpp={GPP_CA_SALE_OPT_OUT}"),
            vec![],
        ),
        (
            "Germany, consent",
            GERMANY,
            format!("; {}", tcf(TCF_P1)),
            vec![],
        ),
    ];
    let echo = "echo=cookie&echo=x-ts-ec";
    let requests = [
        ("GET", format!("{PAGE}?{echo}")),
        ("GET", format!("{PAGE}?redirect=/elsewhere.html&{echo}")),
        ("GET", format!("/no-such-page.html?{echo}")),
        ("GET", format!("{PAGE}?status=500&{echo}")),
        ("HEAD", format!("{PAGE}?{echo}")),
        ("POST", format!("/forms/submit?{echo}")),
    ];
    for (who, source, consent, extra) in &readers {
        let allowed = who.ends_with(", consent");
        let cookie = format!("session=s{}; ts-ec={HELD_ID}{consent}", unique());
        let mut headers = vec![identity(), NAV, ("cookie", cookie.as_str())];
        headers.extend_from_slice(extra);
        for (method, path) in &requests {
            let what = format!("{who}: {method} {path}");
            let r = send(w, *source, method, path, &headers)?;
            let seen = r.header("x-echo-cookie").unwrap_or("(no echo)");
            check(seen.contains("session=s"), || {
                format!(
                    "{what}: status {}, the origin's cookie echo {seen:?}",
                    r.status
                )
            })?;
            check(!seen.contains("ts-ec") && !seen.contains(HELD_ID), || {
                format!("{what}: the origin got the edge ID in its cookie: {seen:?}")
            })?;
            if *method == "POST" {
                check(!contains(&r.body, HELD_ID.as_bytes()), || {
                    format!("{what}: the edge ID in the request the origin echoed")
                })?;
            }
            let header = r.header("x-echo-x-ts-ec").unwrap_or("(no echo)");
            check(allowed != (header == "(none)"), || {
                format!("{what}: X-TS-EC at the origin {header:?}")
            })?;
        }
    }
    Ok(())
}

/// (2) However many other cookies come first or last, a consent cookie is read: a consenting
/// copy planted before 16 KiB and more of filler cannot hide the reader's refusal after it,
/// and ordinary cookies before an opt-out cannot hide the opt-out.
pub fn padding_hides_no_consent_cookie(w: &World) -> Outcome {
    for pad in [16 * 1024, 40 * 1024] {
        let filler: Vec<String> = (0..pad / 1024)
            .map(|i| format!("pad{i}={}", "x".repeat(1020)))
            .collect();
        let filler = filler.join("; ");
        let planted = format!("{}; {filler}; {}", tcf(TCF_P1), tcf(TCF_NONE));
        check(!gets_an_id(w, GERMANY, &[("cookie", &planted)])?, || {
            format!("Germany: an ID from a consent planted before {pad} bytes of filler")
        })?;
        let body = consent_answer(w, GERMANY, &[("cookie", &planted)])?;
        check(body.contains("\"conflicting-cookies\""), || body.clone())?;
        for opt_out in [
            "usprivacy=1YYN".to_owned(),
            format!("__gpp={GPP_CA_SALE_OPT_OUT}"),
        ] {
            let cookie = format!("{filler}; {opt_out}");
            check(!gets_an_id(w, CALIFORNIA, &[("cookie", &cookie)])?, || {
                format!("California: an ID despite {opt_out} after {pad} bytes of cookies")
            })?;
        }
    }
    Ok(())
}

/// (3) A `__gpp_sid` the reader's CMP did not write, setting the US sections aside, does not
/// hide a sale opt-out.
pub fn a_planted_gpp_sid_hides_no_opt_out(w: &World) -> Outcome {
    for sid in ["-1", "2", "7"] {
        let cookie = format!("__gpp={GPP_CA_SALE_OPT_OUT}; __gpp_sid={sid}");
        check(!gets_an_id(w, CALIFORNIA, &[("cookie", &cookie)])?, || {
            format!("California: an ID despite a sale opt-out with __gpp_sid={sid}")
        })?;
        let body = consent_answer(w, CALIFORNIA, &[("cookie", &cookie)])?;
        check(body.contains("\"gpp-opt-out\""), || body.clone())?;
    }
    Ok(())
}

/// (4) Åland and French Guiana are in the EU under codes of their own: opt-in. A reader
/// placed only in `EU` (a placeholder) is at an unknown location: `consent.unknown`
/// (opt-in by default), never "elsewhere".
pub fn eu_territories_and_placeholders(w: &World) -> Outcome {
    for (place, source, reason) in [
        ("Åland", ALAND, "opt-in-region"),
        ("French Guiana", FRENCH_GUIANA, "opt-in-region"),
        ("EU (placeholder)", PLACEHOLDER_EU, "location-unknown"),
    ] {
        check(!gets_an_id(w, source, &[])?, || {
            format!("{place}: an ID without consent")
        })?;
        let p1 = tcf(TCF_P1);
        check(gets_an_id(w, source, &[("cookie", &p1)])?, || {
            format!("{place}: no ID with consent")
        })?;
        let body = consent_answer(w, source, &[])?;
        let want = "\"rule\":\"opt-in\"";
        check(
            body.contains(want) && body.contains(&format!("\"{reason}\"")),
            || format!("{place}: {body}"),
        )?;
    }
    Ok(())
}

/// (6) A page the origin marks `max-age` (not `public`): readers whose only cookies are
/// consent cookies (and `ts-ec`) read and fill the shared entry; the fill does not send the
/// consent cookies, so the stored page does not depend on them; a reader with a session
/// cookie still passes.
pub fn consent_cookies_keep_the_cache(w: &World) -> Outcome {
    let path = format!(
        "{PAGE}?cache_control=max-age%3D300&echo=cookie&t={}",
        unique()
    );
    let p1 = tcf(TCF_P1);
    let first = from(w, GERMANY, &path, &[identity(), NAV, ("cookie", &p1)])?;
    check(state(&first) == "MISS", || {
        format!("the first consent-only reader: {}", state(&first))
    })?;
    check(
        contains(&first.body, b"<!-- echo cookie: (none) -->"),
        || "the fill sent the consent cookies to the origin".into(),
    )?;
    let readers = [
        ("another TC string", GERMANY, tcf(TCF_NONE)),
        (
            "ts-ec and GPP",
            CALIFORNIA,
            format!("ts-ec={HELD_ID}; __gpp={GPP_CA_SALE_OPT_OUT}; __gpp_sid=8"),
        ),
        (
            "US Privacy",
            CALIFORNIA,
            "us_privacy=1YNN; usprivacy=1YNN".into(),
        ),
    ];
    for (what, source, cookie) in &readers {
        let r = from(w, *source, &path, &[identity(), NAV, ("cookie", cookie)])?;
        check(state(&r) == "HIT", || format!("{what}: {}", state(&r)))?;
        check(r.body == first.body, || format!("{what}: another page"))?;
    }
    let session = format!("session=alice; {p1}");
    let r = from(w, GERMANY, &path, &[identity(), NAV, ("cookie", &session)])?;
    check(state(&r) == "PASS(cookie)", || {
        format!("a session cookie: {}", state(&r))
    })?;
    // A pass sends every cookie but the edge ID.
    check(
        contains(&r.body, b"session=alice") && contains(&r.body, TCF_P1.as_bytes()),
        || "a reader with cookies: the origin did not get them".into(),
    )?;
    // An origin that needs the consent cookies marks the page `private`: the first request
    // (a fill) went without them, the pass is then remembered and later ones carry them.
    let private = format!("{PAGE}?cache_control=private&echo=cookie&t={}", unique());
    let first = from(w, GERMANY, &private, &[identity(), NAV, ("cookie", &p1)])?;
    check(
        contains(&first.body, b"<!-- echo cookie: (none) -->"),
        || format!("private, first: {}", state(&first)),
    )?;
    let second = from(w, GERMANY, &private, &[identity(), NAV, ("cookie", &p1)])?;
    check(contains(&second.body, TCF_P1.as_bytes()), || {
        format!(
            "private, second ({}): the origin did not get the consent cookie",
            state(&second)
        )
    })
}
