//! The demo bidders through the in-process server: what they answer, when, and what they
//! record of what they were sent.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{make_site, start, text, IO_TIMEOUT};

/// `POST path` with `body` as JSON, as the edge sends it, read within `timeout`.
fn post(addr: SocketAddr, path: &str, body: &Value, timeout: Duration) -> e2e::Timed {
    let headers = [("Content-Type", "application/json"), ("X-Edge", "test")];
    let body = body.to_string();
    e2e::send(addr, "POST", path, &headers, body.as_bytes(), timeout)
        .unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

fn json_of(r: &e2e::Timed) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}: {}", text(r)))
}

/// A request for one banner (two formats) and one native impression, with these bidder
/// parameters on the first.
fn bid_request(id: &str, params: Value) -> Value {
    json!({
        "id": id,
        "tmax": 400,
        "imp": [
            {"id": "1", "banner": {"format": [{"w": 300, "h": 250}, {"w": 728, "h": 90}]},
             "ext": {"bidder": params}},
            {"id": "2", "native": {"request": "{\"assets\":[]}"}},
        ],
        "device": {"ip": "192.0.2.1"},
    })
}

#[test]
fn fast_answers_at_once_and_received_shows_what_it_was_sent() {
    let site = make_site();
    let addr = start(&site);
    let sent = bid_request("auction-fast", json!({}));
    let r = post(addr, "/bidders/fast", &sent, IO_TIMEOUT);
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let answer = json_of(&r);
    assert_eq!(answer["id"], "auction-fast");
    assert_eq!(answer["seatbid"][0]["seat"], "fast");
    let bids = answer["seatbid"][0]["bid"].as_array().unwrap();
    assert_eq!(bids.len(), 2);
    assert_eq!(
        (bids[0]["impid"].as_str(), bids[0]["mtype"].as_u64()),
        (Some("1"), Some(1))
    );
    assert_eq!(
        (bids[0]["w"].as_u64(), bids[0]["h"].as_u64()),
        (Some(300), Some(250))
    );
    assert_eq!(
        (bids[1]["impid"].as_str(), bids[1]["mtype"].as_u64()),
        (Some("2"), Some(4))
    );

    post(
        addr,
        "/bidders/slow",
        &bid_request("other", json!({"delay_ms": 0})),
        IO_TIMEOUT,
    );
    let got = support::get(addr, "/bidders/received?id=auction-fast", &[]);
    assert_eq!(got.status, 200);
    let records = json_of(&got);
    let records = records.as_array().unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record["bidder"], "fast");
    assert_eq!(record["method"], "POST");
    assert_eq!(record["path"], "/bidders/fast");
    let body: Value = serde_json::from_str(record["body"].as_str().unwrap()).unwrap();
    assert_eq!(body, sent);
    let headers = record["headers"].as_array().unwrap();
    assert!(headers.contains(&json!(["x-edge", "test"])), "{headers:?}");
    assert!(headers.contains(&json!(["content-type", "application/json"])));
    assert!(record["received_unix_ms"].as_u64().unwrap() > 0);

    let none = support::get(addr, "/bidders/received?id=nobody", &[]);
    assert_eq!(json_of(&none), json!([]));
    assert_eq!(support::get(addr, "/bidders/received", &[]).status, 400);
}

#[test]
fn refused_requests() {
    let site = make_site();
    let addr = start(&site);
    let bad = e2e::send(addr, "POST", "/bidders/fast", &[], b"{\"id\":", IO_TIMEOUT).unwrap();
    assert_eq!(bad.status, 400);
    let no_imp = post(
        addr,
        "/bidders/fast",
        &json!({"id": "x", "imp": []}),
        IO_TIMEOUT,
    );
    assert_eq!(no_imp.status, 400);
    assert_eq!(support::get(addr, "/bidders/fast", &[]).status, 405);
    let unknown = post(
        addr,
        "/bidders/nobody",
        &bid_request("x", json!({})),
        IO_TIMEOUT,
    );
    assert_eq!(unknown.status, 404);
    let typo = post(
        addr,
        "/bidders/misbehave",
        &bid_request("x", json!({"how": "stal"})),
        IO_TIMEOUT,
    );
    assert_eq!(typo.status, 400);
    // Neither banner nor native: OpenRTB's no-bid.
    let video = json!({"id": "v", "imp": [{"id": "1", "video": {}}]});
    assert_eq!(post(addr, "/bidders/fast", &video, IO_TIMEOUT).status, 204);
    // Even refused requests are recorded.
    let got = json_of(&support::get(addr, "/bidders/received?id=x", &[]));
    assert_eq!(got.as_array().unwrap().len(), 3);
}

#[test]
fn slow_waits_its_delay() {
    let site = make_site();
    let addr = start(&site);
    let default = post(
        addr,
        "/bidders/slow",
        &bid_request("s1", json!({})),
        IO_TIMEOUT,
    );
    assert_eq!(default.status, 200);
    assert!(
        default.headers_at >= Duration::from_millis(300),
        "{:?}",
        default.headers_at
    );
    assert_eq!(json_of(&default)["seatbid"][0]["bid"][0]["price"], 2.1);
    let set = post(
        addr,
        "/bidders/slow",
        &bid_request("s2", json!({"delay_ms": 700, "price": 9.5})),
        IO_TIMEOUT,
    );
    assert!(
        set.headers_at >= Duration::from_millis(700),
        "{:?}",
        set.headers_at
    );
    assert_eq!(json_of(&set)["seatbid"][0]["bid"][0]["price"], 9.5);
}

#[test]
fn stall_sends_the_head_and_half_a_body_then_nothing() {
    let site = make_site();
    let addr = start(&site);
    let asked = Instant::now();
    let r = post(
        addr,
        "/bidders/misbehave",
        &bid_request("st", json!({"how": "stall"})),
        Duration::from_secs(1),
    );
    assert_eq!(r.status, 200);
    assert!(
        r.headers_at < Duration::from_millis(500),
        "{:?}",
        r.headers_at
    );
    assert!(!r.complete, "the body completed: {}", text(&r));
    assert!(!r.body.is_empty());
    assert!(serde_json::from_slice::<Value>(&r.body).is_err());
    assert!(asked.elapsed() >= Duration::from_secs(1));

    // A short stall (`delay_ms`) ends in a dropped connection, never a finished body.
    let params = json!({"how": "stall", "delay_ms": 200});
    let r = post(
        addr,
        "/bidders/misbehave",
        &bid_request("st2", params),
        IO_TIMEOUT,
    );
    assert_eq!(r.status, 200);
    assert!(!r.complete);
    assert!(r.last_at < Duration::from_secs(5), "{:?}", r.last_at);
}

#[test]
fn misbehaviours_on_the_wire() {
    let site = make_site();
    let addr = start(&site);
    let how = |how: &str| {
        post(
            addr,
            "/bidders/misbehave",
            &bid_request("m", json!({"how": how})),
            IO_TIMEOUT,
        )
    };
    let normal = post(
        addr,
        "/bidders/misbehave",
        &bid_request("m", json!({})),
        IO_TIMEOUT,
    );
    assert_eq!(json_of(&normal)["seatbid"][0]["seat"], "misbehave");
    let bomb = how("gzip-bomb");
    assert_eq!(
        (bomb.status, bomb.header("content-encoding")),
        (200, Some("gzip"))
    );
    assert!(bomb.body.len() < 1024 * 1024);
    assert_eq!(how("not-json").header("content-type"), Some("text/html"));
    let redirect = how("redirect");
    assert_eq!(
        (redirect.status, redirect.header("location")),
        (302, Some("/bidders/fast"))
    );
    assert_eq!(how("no-content").status, 204);
    assert_eq!(how("status-500").status, 500);
    assert!(how("huge").body.len() > 2 * 1024 * 1024);
    assert!(text(&how("nan-price")).contains("\"price\":1e309"));
}

#[test]
fn corpus_answers_the_named_file_as_adm_and_refuses_paths_outside_the_root() {
    let site = make_site();
    let addr = start(&site);
    let mut sent = bid_request("auction-corpus", json!({"creative": "sub/index.html"}));
    // A second banner naming no creative gets no bid.
    sent["imp"][1] = json!({"id": "3", "banner": {"w": 728, "h": 90}});
    let r = post(addr, "/bidders/corpus", &sent, IO_TIMEOUT);
    assert_eq!(r.status, 200, "{}", text(&r));
    let answer = json_of(&r);
    assert_eq!(answer["id"], "auction-corpus");
    let bids = answer["seatbid"][0]["bid"].as_array().unwrap();
    assert_eq!(bids.len(), 1, "{answer}");
    assert_eq!(bids[0]["impid"], "1");
    assert_eq!(
        bids[0]["adm"], "<html><head></head><body>sub</body></html>",
        "the file, unchanged"
    );
    assert_eq!(
        (
            bids[0]["w"].as_u64(),
            bids[0]["h"].as_u64(),
            bids[0]["mtype"].as_u64()
        ),
        (Some(300), Some(250), Some(1))
    );
    assert_eq!(bids[0]["price"], 1.0);
    assert_eq!(bids[0]["crid"], "corpus-sub/index.html");

    for bad in [
        "../index.html",
        "/etc/passwd",
        "sub/../index.html",
        "missing.html",
        "sub",
        "",
    ] {
        let sent = bid_request("auction-corpus-bad", json!({"creative": bad}));
        let r = post(addr, "/bidders/corpus", &sent, IO_TIMEOUT);
        assert_eq!(r.status, 400, "{bad:?}: {}", text(&r));
        assert!(text(&r).contains("creative"), "{bad:?}: {}", text(&r));
    }
    let none = bid_request("auction-corpus-none", json!({}));
    let r = post(addr, "/bidders/corpus", &none, IO_TIMEOUT);
    assert_eq!(r.status, 204, "no creative named, no bid: {}", text(&r));
}
