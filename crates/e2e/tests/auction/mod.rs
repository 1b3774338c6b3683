//! End-to-end scenarios of the auction endpoint, `POST /_ts/openrtb2/auction`, against the
//! demo origin's bidders (`fast`, vendor 1; `slow`, vendor 755; `misbehave`, vendor 2; see
//! `e2e::demo_bidders`), which record what they were sent (`GET /bidders/received?id=`):
//! the answer's shape as Prebid.js reads it, what each bidder receives and what it never
//! does, the deadline with a bidder that stalls mid-body, hostile bidders, bad requests,
//! and consent per bidder for readers played from geolocated loopback addresses with TC
//! strings from the IAB's encoder (`crates/core/src/consent/fixtures.rs`).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{check, Outcome, World, TIMEOUT};

pub mod page;

const PATH: &str = "/_ts/openrtb2/auction";
/// What Prebid.js posts with: `text/plain`, and its page's origin.
const TEXT: (&str, &str) = ("content-type", "text/plain");

/// Japan, outside every consent rule: every bidder asked, the edge ID allowed.
const ELSEWHERE: [u8; 4] = [127, 0, 0, 1];
/// Germany: opt-in.
const GERMANY: [u8; 4] = [127, 0, 0, 10];
/// California: opt-out.
const CALIFORNIA: [u8; 4] = [127, 0, 0, 11];

/// TCF: purpose consents {1, 2, 3, 4, 7, 9, 10}, vendor consents 1..=600 except multiples of
/// 7; DisclosedVendors 1..=700 (`TCF_MANY_VENDORS`): vendors 1 and 2 may take part and get
/// the edge ID; 755 has no basis.
const TCF_MANY: &str = "CQeEcwAQeEcwAAKABBENBkFAAPLAAELAAAYgEsP379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv3wJXbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLADCQAQAQBgAIALREAEAMgAA.IFeQAYAAgV4A";
/// TCF: purpose consents {1, 2, 3, 7}, legitimate interests {2, 3, 7}, no vendor consent,
/// vendor 755's legitimate interest (`TCF_LI`): 755 takes part (purpose 2 by legitimate
/// interest) without the edge ID (no purpose 4); vendors 1 and 2 have no basis.
const TCF_LI: &str = "CQeEcwAQeEcwAAKABBENBkFAAOIAAGIAAAYgAAALzgAgLzAA.IF5wAQF5gAAA";

/// A Prebid.js 11 request (the shape `js/prebid/example-request.json` captured) with an id of
/// its own, two banner slots, and each slot's bidders with their params.
fn prebid_request(id: &str, tmax: u64, slots: &[(&str, (u32, u32), Value)]) -> Vec<u8> {
    let imps: Vec<Value> = (slots.iter())
        .map(|(code, (w, h), bidders)| {
            json!({
                "id": code,
                "banner": {"topframe": 1, "format": [{"w": w, "h": h}]},
                "secure": 1,
                "ext": {"prebid": {"bidder": bidders, "adunitcode": code}},
            })
        })
        .collect();
    json!({
        "id": id,
        "tmax": tmax,
        "imp": imps,
        "site": {"page": "https://evil.example/", "domain": "evil.example", "publisher": {"id": "demo"}},
        "device": {"ua": "page-says", "ip": "9.9.9.9", "w": 1280, "h": 2000},
        "user": {"id": "page-user", "ext": {"eids": [{"source": "page.example", "uids": [{"id": "p1"}]}]}},
        "regs": {"ext": {"gdpr": 0, "us_privacy": "1NNN"}},
        "ext": {"prebid": {"targeting": {"includewinners": true, "includebidderkeys": false}, "channel": {"name": "pbjs", "version": "v11.36.0"}}},
    })
    .to_string()
    .into_bytes()
}

/// A fresh auction id, so each scenario finds only its own bidder requests.
fn auction_id(what: &str) -> String {
    format!("e2e-{what}-{}", super::cache::unique())
}

/// `POST` the auction from `source` with `headers` (and Prebid's content type).
fn post(
    w: &World,
    source: [u8; 4],
    body: &[u8],
    headers: &[(&str, &str)],
) -> Result<e2e::Timed, String> {
    let mut all = vec![TEXT];
    all.extend_from_slice(headers);
    e2e::send_from(
        IpAddr::from(source),
        w.streaming,
        "POST",
        PATH,
        &all,
        body,
        TIMEOUT,
    )
    .map_err(|e| format!("POST {PATH}: {e}"))
}

/// The answer as JSON, checked to be a `200` `no-store` JSON answer.
fn answer(r: &e2e::Timed) -> Result<Value, String> {
    let text = String::from_utf8_lossy(&r.body);
    check(r.status == 200, || format!("status {}: {text}", r.status))?;
    check(r.header("content-type") == Some("application/json"), || {
        format!("content-type {:?}", r.header("content-type"))
    })?;
    check(
        r.header("cache-control")
            .is_some_and(|c| c.contains("no-store")),
        || format!("cache-control {:?}", r.header("cache-control")),
    )?;
    serde_json::from_slice(&r.body).map_err(|e| format!("not JSON ({e}): {text}"))
}

/// One request a demo bidder received: the bidder's name, the body, the headers.
type Received = (String, Value, Vec<(String, String)>);

/// What each bidder received for auction `id`, by bidder name.
fn received(w: &World, id: &str) -> Result<Vec<Received>, String> {
    let path = format!("/bidders/received?id={id}");
    let r = e2e::get(w.origin_addr, &path, &[], TIMEOUT).map_err(|e| format!("{path}: {e}"))?;
    let records: Vec<Value> =
        serde_json::from_slice(&r.body).map_err(|e| format!("{path}: not JSON: {e}"))?;
    Ok(records
        .into_iter()
        .map(|record| {
            let bidder = record["bidder"].as_str().unwrap_or_default().to_owned();
            let body = serde_json::from_str(record["body"].as_str().unwrap_or("null"))
                .unwrap_or(Value::Null);
            let headers = (record["headers"].as_array().cloned().unwrap_or_default())
                .into_iter()
                .map(|pair| {
                    let text = |i: usize| pair[i].as_str().unwrap_or_default().to_owned();
                    (text(0), text(1))
                })
                .collect();
            (bidder, body, headers)
        })
        .collect())
}

/// The one request `bidder` received for auction `id`.
fn sent_to(w: &World, id: &str, bidder: &str) -> Result<(Value, Vec<(String, String)>), String> {
    let all = received(w, id)?;
    let mut mine = all.into_iter().filter(|(b, _, _)| b == bidder);
    match (mine.next(), mine.next()) {
        (Some((_, body, headers)), None) => Ok((body, headers)),
        (None, _) => Err(format!("{bidder} was not asked")),
        (Some(_), Some(_)) => Err(format!("{bidder} was asked twice")),
    }
}

fn seats(answer: &Value) -> Vec<String> {
    (answer["seatbid"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter())
    .map(|s| s["seat"].as_str().unwrap_or_default().to_owned())
    .collect()
}

/// The seat's bid for `imp`.
fn bid_for<'a>(answer: &'a Value, seat: &str, imp: &str) -> Option<&'a Value> {
    let seatbid = answer["seatbid"]
        .as_array()?
        .iter()
        .find(|s| s["seat"] == seat)?;
    seatbid["bid"]
        .as_array()?
        .iter()
        .find(|b| b["impid"] == imp)
}

/// Prebid.js's request for two slots gets both bidders' bids in Prebid Server's shape, the
/// higher bid of each slot carrying `hb_pb`/`hb_bidder`/`hb_size`, and each bidder gets a
/// request the edge built: its own slots and params only, the first-party site, the reader's
/// address and user agent, `tmax`, a transaction ID, and none of the reader's cookies.
pub fn prebid_request_gets_bids_in_prebid_servers_shape(w: &World) -> Outcome {
    let id = auction_id("shape");
    let body = prebid_request(
        &id,
        800,
        &[
            (
                "div-banner-1",
                (300, 250),
                json!({"fast": {"price": 1.25}, "slow": {"delay_ms": 50}}),
            ),
            ("div-banner-2", (728, 90), json!({"fast": {"price": 3.0}})),
        ],
    );
    let host = format!("www.pub.test:{}", w.streaming.port());
    let origin = format!("http://{host}");
    let r = post(
        w,
        ELSEWHERE,
        &body,
        &[
            ("host", &host),
            ("origin", &origin),
            ("sec-fetch-site", "same-origin"),
            ("cookie", "session=secret-session; other=1"),
            ("user-agent", "Reader-Browser/1.0"),
            ("authorization", "Bearer reader-token"),
        ],
    )?;
    let a = answer(&r)?;
    check(a["id"] == id.as_str(), || format!("id {}", a["id"]))?;
    check(a["cur"] == "USD", || format!("cur {}", a["cur"]))?;
    check(seats(&a) == ["fast", "slow"], || {
        format!("seats {:?}", seats(&a))
    })?;
    // Slot 1: slow's 2.10 beats fast's 1.25; slot 2: fast alone at 3.00.
    let slow1 = bid_for(&a, "slow", "div-banner-1").ok_or("no slow bid for slot 1")?;
    let fast1 = bid_for(&a, "fast", "div-banner-1").ok_or("no fast bid for slot 1")?;
    let fast2 = bid_for(&a, "fast", "div-banner-2").ok_or("no fast bid for slot 2")?;
    let targeting = |b: &Value| b["ext"]["prebid"]["targeting"].clone();
    check(
        targeting(slow1)["hb_pb"] == "2.10" && targeting(slow1)["hb_bidder"] == "slow",
        || format!("slot 1 winner targeting {}", targeting(slow1)),
    )?;
    check(targeting(fast1).get("hb_pb").is_none(), || {
        format!("the loser carries hb_pb: {}", targeting(fast1))
    })?;
    check(
        targeting(fast2)["hb_pb"] == "3.00" && targeting(fast2)["hb_size"] == "728x90",
        || format!("slot 2 targeting {}", targeting(fast2)),
    )?;
    for bid in [slow1, fast1, fast2] {
        for key in [
            "id", "impid", "price", "adm", "w", "h", "crid", "adomain", "mtype", "burl",
        ] {
            check(bid.get(key).is_some(), || {
                format!("bid without {key}: {bid}")
            })?;
        }
        check(bid["ext"]["prebid"]["type"] == "banner", || {
            format!("type: {bid}")
        })?;
        let burl = bid["burl"].as_str().unwrap_or_default();
        check(!burl.contains("AUCTION_PRICE"), || {
            format!("burl macro left: {burl}")
        })?;
    }
    let ext = &a["ext"];
    check(
        ext["responsetimemillis"]["fast"].is_u64() && ext["responsetimemillis"]["slow"].is_u64(),
        || format!("responsetimemillis {}", ext["responsetimemillis"]),
    )?;
    check(ext["tmaxrequest"] == 750, || {
        format!("tmaxrequest {} (800 - margin 50)", ext["tmaxrequest"])
    })?;
    check(ext.get("errors").is_none(), || {
        format!("errors {}", ext["errors"])
    })?;

    // What fast was sent.
    let (fast, headers) = sent_to(w, &id, "fast")?;
    let imps = fast["imp"].as_array().cloned().unwrap_or_default();
    check(imps.len() == 2, || format!("fast got {} imps", imps.len()))?;
    check(imps[0]["ext"]["bidder"] == json!({"price": 1.25}), || {
        format!("fast's params: {}", imps[0]["ext"])
    })?;
    check(!fast.to_string().contains("delay_ms"), || {
        "fast saw slow's params".into()
    })?;
    let (slow, _) = sent_to(w, &id, "slow")?;
    let slow_imps = slow["imp"].as_array().cloned().unwrap_or_default();
    check(slow_imps.len() == 1, || {
        format!("slow got {} imps", slow_imps.len())
    })?;
    check(fast["site"]["domain"] == "www.pub.test", || {
        format!("site {}", fast["site"])
    })?;
    // The page claimed another site: the edge says which one it is.
    let page = format!("https://{host}/");
    check(fast["site"]["page"] == page.as_str(), || {
        format!("site.page {}", fast["site"]["page"])
    })?;
    check(fast["device"]["ua"] == "Reader-Browser/1.0", || {
        format!("device {}", fast["device"])
    })?;
    check(fast["device"]["ip"] == "127.0.0.1", || {
        format!("device.ip {}", fast["device"]["ip"])
    })?;
    let tmax = fast["tmax"].as_u64().unwrap_or(0);
    check((1..=750).contains(&tmax), || {
        format!("fast's tmax {tmax} (750 left at most)")
    })?;
    check(
        fast["source"]["tid"]
            .as_str()
            .is_some_and(|t| t.len() == 32),
        || format!("source {}", fast["source"]),
    )?;
    check(fast["regs"]["gdpr"] == 0, || {
        format!("regs {}", fast["regs"])
    })?;
    check(!fast.to_string().contains("1NNN"), || {
        "the page's us_privacy reached the bidder".into()
    })?;
    check(fast["cur"] == json!(["USD"]), || {
        format!("cur {}", fast["cur"])
    })?;
    for (name, value) in &headers {
        for secret in ["secret-session", "reader-token"] {
            check(!value.contains(secret), || {
                format!("{name}: {value} reached the bidder")
            })?;
        }
        check(name != "cookie" && name != "authorization", || {
            format!("the bidder got a {name} header")
        })?;
    }
    let header = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    check(header("content-type") == Some("application/json"), || {
        format!("bidder content-type {:?}", header("content-type"))
    })?;
    // A bidder's response headers never reach the browser: the answer's are the edge's own.
    check(r.header("set-cookie").is_none(), || {
        "a cookie reached the browser".into()
    })
}

/// A bidder that sends its headers and half its body, then stalls, is cut off at the deadline:
/// the answer leaves in time, with the others' bids and the staller as a timeout.
pub fn a_bidder_stalling_mid_body_costs_only_its_own_bids(w: &World) -> Outcome {
    let id = auction_id("stall");
    let tmax = 600;
    let body = prebid_request(
        &id,
        tmax,
        &[(
            "slot",
            (300, 250),
            json!({"fast": {}, "misbehave": {"how": "stall", "delay_ms": 5000}}),
        )],
    );
    let started = Instant::now();
    let r = post(w, ELSEWHERE, &body, &[])?;
    let took = started.elapsed();
    let a = answer(&r)?;
    let deadline = Duration::from_millis(tmax - 50);
    // The deadline plus Viceroy's own time; far below the 5 s stall.
    check(took < deadline + Duration::from_millis(400), || {
        format!("the answer took {took:?}, the deadline was {deadline:?}")
    })?;
    check(seats(&a) == ["fast"], || format!("seats {:?}", seats(&a)))?;
    let error = &a["ext"]["errors"]["misbehave"][0];
    check(error["code"] == 1, || {
        format!("misbehave: {}", a["ext"]["errors"])
    })?;
    let ms = a["ext"]["responsetimemillis"]["misbehave"]
        .as_u64()
        .unwrap_or(0);
    check((500..=600).contains(&ms), || {
        format!("misbehave's time {ms}")
    })?;
    // It really did send its headers: the demo origin saw it and answered.
    sent_to(w, &id, "misbehave").map(|_| ())
}

/// Each hostile bidder has its documented outcome, and never a 5xx: the fast bidder's bid
/// still comes back beside it.
pub fn hostile_bidders_each_have_their_documented_outcome(w: &World) -> Outcome {
    // (how, the error code in ext.errors (None: no error), what the message or warning says)
    let cases: [(&str, Option<u64>, &str); 11] = [
        ("huge", Some(3), "over 1048576 bytes"),
        ("not-json", Some(3), "not JSON"),
        ("gzip-bomb", Some(3), "gzip"),
        ("status-500", Some(3), "status 500"),
        ("redirect", Some(3), "status 302"),
        ("wrong-impid", None, "not asked for"),
        ("negative-price", None, "price is not a number above 0"),
        ("nan-price", None, "price is not a number above 0"),
        ("other-currency", None, "EUR"),
        ("no-content", None, ""),
        ("script-adm", None, ""),
    ];
    for (how, code, says) in cases {
        let id = auction_id(how);
        let body = prebid_request(
            &id,
            900,
            &[(
                "slot",
                (300, 250),
                json!({"fast": {}, "misbehave": {"how": how}}),
            )],
        );
        let r = post(w, ELSEWHERE, &body, &[]).map_err(|e| format!("{how}: {e}"))?;
        let a = answer(&r).map_err(|e| format!("{how}: {e}"))?;
        let context = || format!("{how}: {a}");
        check(bid_for(&a, "fast", "slot").is_some(), || {
            format!("no fast bid; {}", context())
        })?;
        let error = &a["ext"]["errors"]["misbehave"];
        let warning = &a["ext"]["warnings"]["misbehave"];
        match code {
            Some(code) => {
                check(error[0]["code"] == code, context)?;
                check(
                    error[0]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(says)),
                    context,
                )?;
                check(bid_for(&a, "misbehave", "slot").is_none(), context)?;
            }
            None if how == "script-adm" => {
                // Passed as the bidder's markup (as Prebid Server does, for Prebid.js to
                // render in its frame); a `javascript:` URL is never signed, so it never
                // becomes a first-party URL.
                let bid = bid_for(&a, "misbehave", "slot").ok_or_else(context)?;
                let adm = bid["adm"].as_str().unwrap_or_default();
                check(adm.contains("href=\"javascript:alert(1)\""), context)?;
            }
            None if how == "nan-price" => {
                // `"NaN"` drops its bid; `1e309` is out of JSON's range, which serde reads
                // as a malformed answer: either way no bid of this bidder competes.
                check(bid_for(&a, "misbehave", "slot").is_none(), context)?;
                let said = format!("{error}{warning}");
                check(
                    said.contains("price is not a number above 0")
                        || said.contains("not an OpenRTB"),
                    context,
                )?;
            }
            None if says.is_empty() => {
                check(error.is_null() && warning.is_null(), context)?;
                check(bid_for(&a, "misbehave", "slot").is_none(), context)?;
            }
            None => {
                check(error.is_null(), context)?;
                let text = warning.to_string();
                check(text.contains(says), context)?;
                check(bid_for(&a, "misbehave", "slot").is_none(), context)?;
            }
        }
    }
    Ok(())
}

/// The page's mistakes get their status, a cross-site page is refused, and an unknown bidder
/// is an error entry, not a failure.
pub fn bad_requests_get_their_status(w: &World) -> Outcome {
    let one = |id: &str| prebid_request(id, 500, &[("slot", (300, 250), json!({"fast": {}}))]);
    let get = e2e::request(w.streaming, "GET", PATH, &[], TIMEOUT).map_err(|e| e.to_string())?;
    check(
        get.status == 405 && get.header("allow") == Some("POST"),
        || format!("GET: {} allow {:?}", get.status, get.header("allow")),
    )?;
    let body = one(&auction_id("cross"));
    for headers in [
        vec![("origin", "https://evil.example")],
        vec![("sec-fetch-site", "cross-site")],
        vec![("origin", "null")],
    ] {
        let r = post(w, ELSEWHERE, &body, &headers)?;
        check(r.status == 403, || format!("{headers:?}: {}", r.status))?;
    }
    let mut many = json!({"id": "many", "imp": []});
    if let Some(imps) = many["imp"].as_array_mut() {
        for i in 0..33 {
            imps.push(json!({"id": format!("i{i}"), "banner": {"w": 1, "h": 1}}));
        }
    }
    let big = vec![b' '; 300 * 1024];
    for (what, body, status) in [
        ("malformed JSON", b"{\"id\": ".to_vec(), 400),
        ("not OpenRTB", b"[1, 2]".to_vec(), 400),
        ("33 impressions", many.to_string().into_bytes(), 400),
        ("300 KiB", big, 413),
    ] {
        let r = post(w, ELSEWHERE, &body, &[])?;
        check(r.status == status, || {
            format!("{what}: {} {}", r.status, String::from_utf8_lossy(&r.body))
        })?;
    }
    let id = auction_id("unknown");
    let body = prebid_request(
        &id,
        500,
        &[("slot", (300, 250), json!({"nosuchbidder": {}, "fast": {}}))],
    );
    let a = answer(&post(w, ELSEWHERE, &body, &[])?)?;
    check(a["ext"]["errors"]["nosuchbidder"][0]["code"] == 2, || {
        format!("{a}")
    })?;
    check(seats(&a) == ["fast"], || format!("seats {:?}", seats(&a)))
}

/// The edge ID a navigation from `source` with `cookie` is given.
pub(crate) fn edge_id(w: &World, source: [u8; 4], cookie: &str) -> Result<String, String> {
    edge_id_at(w.streaming, source, cookie)
}

/// [`edge_id`] from the service at `service`.
pub(crate) fn edge_id_at(
    service: std::net::SocketAddr,
    source: [u8; 4],
    cookie: &str,
) -> Result<String, String> {
    let page = e2e::get_from(
        IpAddr::from(source),
        service,
        "/news/article.html",
        &[("sec-fetch-dest", "document"), ("cookie", cookie)],
        TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    page.edge_id_set()
        .ok_or_else(|| format!("no edge ID from {source:?} with {cookie:?}"))
}

/// Consent per bidder, from the reader's one decision: in Germany a bidder takes part only
/// with purpose 2 for its vendor and gets the edge ID only with purposes 1 and 4; with no TC
/// string no bidder is asked; in California with GPC every bidder is asked, none gets the
/// ID, and the address is truncated.
pub fn each_bidder_gets_what_its_consent_allows(w: &World) -> Outcome {
    let slot = |id: &str| {
        prebid_request(
            id,
            900,
            &[(
                "slot",
                (300, 250),
                json!({"fast": {}, "slow": {"delay_ms": 0}, "misbehave": {}}),
            )],
        )
    };
    let eid = |body: &Value, id: &str| {
        (body["user"]["eids"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter())
        .any(|e| e["uids"][0]["id"] == id)
    };

    // Germany, TCF_MANY: vendors 1 and 2 asked with the ID; 755 (slow) not asked.
    let many = format!("euconsent-v2={TCF_MANY}");
    let id_de = edge_id(w, GERMANY, &many)?;
    let auction = auction_id("de-many");
    let cookie = format!("ts-ec={id_de}; {many}");
    let a = answer(&post(w, GERMANY, &slot(&auction), &[("cookie", &cookie)])?)?;
    check(a["ext"]["errors"]["slow"][0]["code"] == 999, || {
        format!("slow: {a}")
    })?;
    check(sent_to(w, &auction, "slow").is_err(), || {
        "slow was asked without purpose 2".into()
    })?;
    for bidder in ["fast", "misbehave"] {
        let (body, headers) = sent_to(w, &auction, bidder)?;
        check(eid(&body, &id_de), || {
            format!("{bidder}: no edge ID: {}", body["user"])
        })?;
        check(body["user"]["eids"][0]["source"].is_string(), || {
            format!("{}", body["user"])
        })?;
        check(
            body["regs"]["gdpr"] == 1 && body["user"]["consent"] == TCF_MANY,
            || {
                format!(
                    "{bidder}: regs {} user.consent {}",
                    body["regs"], body["user"]["consent"]
                )
            },
        )?;
        check(!headers.iter().any(|(n, _)| n == "cookie"), || {
            format!("{bidder} got a cookie")
        })?;
        // The page's own IDs follow the same rule: allowed here.
        check(body["user"]["id"] == "page-user", || {
            format!("{bidder}: {}", body["user"])
        })?;
    }

    // Germany, TCF_LI: slow (755, legitimate interest for purpose 2) asked, without the ID or
    // the page's IDs; fast and misbehave (no basis) not asked.
    let li = format!("euconsent-v2={TCF_LI}");
    let id_li = edge_id(w, GERMANY, &li)?;
    let auction = auction_id("de-li");
    let cookie = format!("ts-ec={id_li}; {li}");
    let a = answer(&post(w, GERMANY, &slot(&auction), &[("cookie", &cookie)])?)?;
    let (body, _) = sent_to(w, &auction, "slow")?;
    check(
        !eid(&body, &id_li) && !body.to_string().contains(&id_li),
        || format!("slow got the edge ID without purpose 4: {}", body["user"]),
    )?;
    check(
        body["user"].get("id").is_none() && body["user"]["ext"].get("eids").is_none(),
        || format!("slow got the page's IDs: {}", body["user"]),
    )?;
    check(body["device"]["ip"] == "127.0.0.0", || {
        format!("slow: ip {}", body["device"]["ip"])
    })?;
    for bidder in ["fast", "misbehave"] {
        check(sent_to(w, &auction, bidder).is_err(), || {
            format!("{bidder} asked without basis")
        })?;
        check(a["ext"]["errors"][bidder][0]["code"] == 999, || {
            format!("{bidder}: {a}")
        })?;
    }

    // Germany, no TC string: nobody asked, every bidder says why.
    let auction = auction_id("de-none");
    let a = answer(&post(w, GERMANY, &slot(&auction), &[])?)?;
    check(received(w, &auction)?.is_empty(), || {
        "a bidder was asked without consent".into()
    })?;
    check(seats(&a).is_empty(), || format!("seats {:?}", seats(&a)))?;
    for bidder in ["fast", "slow", "misbehave"] {
        check(a["ext"]["errors"][bidder][0]["code"] == 999, || {
            format!("{bidder}: {a}")
        })?;
    }

    // California with GPC: every bidder asked, none with the ID, the address truncated,
    // the US Privacy string as the cookie carried it.
    let id_ca = edge_id(w, CALIFORNIA, "a=1")?;
    let auction = auction_id("ca-gpc");
    let cookie = format!("ts-ec={id_ca}; usprivacy=1YYN");
    let a = answer(&post(
        w,
        CALIFORNIA,
        &slot(&auction),
        &[("cookie", &cookie), ("sec-gpc", "1")],
    )?)?;
    check(seats(&a).len() == 3, || format!("seats {:?}", seats(&a)))?;
    for bidder in ["fast", "slow", "misbehave"] {
        let (body, _) = sent_to(w, &auction, bidder)?;
        check(!body.to_string().contains(&id_ca), || {
            format!("{bidder} got the edge ID under GPC")
        })?;
        check(body["device"]["ip"] == "127.0.0.0", || {
            format!("{bidder}: ip {}", body["device"]["ip"])
        })?;
        check(body["device"]["geo"].get("lat").is_none(), || {
            format!("{bidder}: {}", body["device"]["geo"])
        })?;
        check(
            body["regs"]["us_privacy"] == "1YYN" && body["regs"]["gdpr"] == 0,
            || format!("{bidder}: regs {}", body["regs"]),
        )?;
    }
    Ok(())
}
