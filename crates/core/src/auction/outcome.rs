//! The answer the page gets: every bidder's outcome put together in the shape Prebid Server
//! answers and Prebid.js's `prebidServerBidAdapter` reads.
//!
//! * `seatbid[]`: one per bidder with bids, `seat` = its code; each bid with `impid`,
//!   `price`, `adm`, `nurl`, `burl` (`${AUCTION_PRICE}` substituted by the bid's own price:
//!   a first-price auction), `w`/`h`, `crid`, `adomain`, `dealid`, `mtype`, and
//!   `ext.prebid` with its `type` and `targeting`: `hb_pb`, `hb_bidder`, `hb_size` on the
//!   highest bid of each impression (unless the request's `ext.prebid.targeting` says
//!   `includewinners: false`), the bidder's own `hb_pb_<code>`, `hb_bidder_<code>`,
//!   `hb_size_<code>` (keys cut to 20 characters, as Prebid Server does) on every bid (unless
//!   it says `includebidderkeys: false`, as Prebid.js 11 does);
//! * `ext.responsetimemillis`: each bidder asked, the milliseconds until its answer (or until
//!   the deadline, for one that had not answered);
//! * `ext.errors`: each bidder that failed, timed out, was not asked, or is unknown, with
//!   Prebid Server's error code and what happened;
//! * `ext.warnings`: each dropped bid with why;
//! * `ext.tmaxrequest`: the deadline the auction kept.

use serde_json::{json, Map, Value};
use trusted_server_settings::PriceGranularity;

use super::bids::{with_auction_price, Answer, Bid, BidderError};
use super::price::Granularity;
use super::request::BidRequest;
use crate::consent::Reason;

/// Prebid Server's error codes in `ext.errors`.
pub mod code {
    /// The bidder did not answer before the deadline.
    pub const TIMEOUT: u16 = 1;
    /// The request could not be made for this bidder (an unknown code).
    pub const BAD_INPUT: u16 = 2;
    /// The bidder's answer was refused, or could not be had.
    pub const BAD_SERVER_RESPONSE: u16 = 3;
    /// The bidder was not asked, for the reader's consent.
    pub const BLOCKED: u16 = 999;
}

/// What became of one bidder.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The page named a bidder code the settings do not have.
    Unknown,
    /// Not asked: the reader's consent does not allow this bidder (why).
    NotAllowed(Reason),
    /// Answered in time, after `ms`.
    Answered {
        /// Its bids and the dropped ones.
        answer: Answer,
        /// Milliseconds from the auction's start.
        ms: u64,
    },
    /// Its answer was refused.
    Refused {
        /// Why.
        error: BidderError,
        /// Milliseconds from the auction's start.
        ms: u64,
    },
    /// It could not be reached (the platform's message).
    Unreachable {
        /// What the platform said.
        why: String,
        /// Milliseconds from the auction's start.
        ms: u64,
    },
    /// No (whole) answer by the deadline.
    TimedOut {
        /// Milliseconds from the auction's start to the deadline.
        ms: u64,
    },
}

impl From<PriceGranularity> for Granularity {
    fn from(named: PriceGranularity) -> Self {
        match named {
            PriceGranularity::Low => Granularity::Low,
            PriceGranularity::Medium => Granularity::Medium,
            PriceGranularity::High => Granularity::High,
            PriceGranularity::Auto => Granularity::Auto,
            PriceGranularity::Dense => Granularity::Dense,
        }
    }
}

/// The granularity the request names (`ext.prebid.targeting.pricegranularity`), else
/// `configured`; a request's unreadable granularity falls back too, with the reason.
pub fn granularity_of(
    request: &BidRequest,
    configured: PriceGranularity,
) -> (Granularity, Option<String>) {
    let named = (request.json.get("ext"))
        .and_then(|e| e.get("prebid"))
        .and_then(|p| p.get("targeting"))
        .and_then(|t| t.get("pricegranularity"));
    match named.map(Granularity::from_openrtb) {
        None => (configured.into(), None),
        Some(Ok(g)) => (g, None),
        Some(Err(why)) => (configured.into(), Some(why)),
    }
}

/// The longest a targeting key may be (Prebid Server's default).
const MAX_KEY_LEN: usize = 20;

/// The answer's JSON: `outcomes` in the order the bidders were named, the auction's
/// `currency`, `granularity` for `hb_pb`, `tmax_ms` the deadline kept, and `warnings` about
/// the request itself.
pub fn respond(
    request: &BidRequest,
    outcomes: &[(String, Outcome)],
    granularity: &Granularity,
    currency: &str,
    tmax_ms: u64,
    warnings: &[String],
) -> Value {
    let mut winners: Vec<(&str, f64)> = Vec::new();
    for (_, outcome) in outcomes {
        if let Outcome::Answered { answer, .. } = outcome {
            for bid in &answer.bids {
                match winners.iter_mut().find(|(imp, _)| *imp == bid.imp_id) {
                    Some((_, best)) if *best >= bid.price => {}
                    Some(entry) => entry.1 = bid.price,
                    None => winners.push((&bid.imp_id, bid.price)),
                }
            }
        }
    }
    let targeting = (request.json.get("ext"))
        .and_then(|e| e.get("prebid"))
        .and_then(|p| p.get("targeting"));
    let flag = |name: &str| {
        (targeting.and_then(|t| t.get(name)))
            .and_then(Value::as_bool)
            .unwrap_or(true)
    };
    let keys = Keys {
        winners: flag("includewinners"),
        bidders: flag("includebidderkeys"),
    };
    let mut won = Vec::new();
    let mut seatbid = Vec::new();
    let (mut times, mut errors, mut dropped) = (Map::new(), Map::new(), Map::new());
    for (code, outcome) in outcomes {
        let error = |code_: u16, message: String| json!([{ "code": code_, "message": message }]);
        match outcome {
            Outcome::Unknown => {
                let message = "unknown bidder: not in the auction's settings".to_owned();
                errors.insert(code.clone(), error(code::BAD_INPUT, message));
            }
            Outcome::NotAllowed(reason) => {
                let message = format!("not asked: the reader's consent ({reason})");
                errors.insert(code.clone(), error(code::BLOCKED, message));
            }
            Outcome::Refused { error: e, ms } => {
                times.insert(code.clone(), json!(ms));
                errors.insert(code.clone(), error(e.code(), e.to_string()));
            }
            Outcome::Unreachable { why, ms } => {
                times.insert(code.clone(), json!(ms));
                let message = format!("the bidder could not be reached: {why}");
                errors.insert(code.clone(), error(code::BAD_SERVER_RESPONSE, message));
            }
            Outcome::TimedOut { ms } => {
                times.insert(code.clone(), json!(ms));
                let message = format!("no answer within the auction's {tmax_ms} ms");
                errors.insert(code.clone(), error(code::TIMEOUT, message));
            }
            Outcome::Answered { answer, ms } => {
                times.insert(code.clone(), json!(ms));
                if !answer.dropped.is_empty() {
                    let list: Vec<Value> = (answer.dropped.iter())
                        .map(|(id, why)| json!({"code": 10_001, "message": format!("bid {id:?} dropped: {why}")}))
                        .collect();
                    dropped.insert(code.clone(), Value::Array(list));
                }
                if answer.bids.is_empty() {
                    continue;
                }
                let bids: Vec<Value> = (answer.bids.iter())
                    .map(|bid| {
                        let winner = winners
                            .iter()
                            .any(|(imp, best)| *imp == bid.imp_id && *best == bid.price)
                            && !won.contains(&bid.imp_id);
                        if winner {
                            won.push(bid.imp_id.clone());
                        }
                        bid_json(bid, code, granularity, winner, keys)
                    })
                    .collect();
                seatbid.push(json!({ "seat": code, "bid": bids }));
            }
        }
    }
    let mut ext = Map::new();
    ext.insert("responsetimemillis".into(), Value::Object(times));
    ext.insert("tmaxrequest".into(), json!(tmax_ms));
    if !errors.is_empty() {
        ext.insert("errors".into(), Value::Object(errors));
    }
    if !warnings.is_empty() {
        let list: Vec<Value> = (warnings.iter())
            .map(|w| json!({"code": 999, "message": w}))
            .collect();
        dropped.insert("prebid".into(), Value::Array(list));
    }
    if !dropped.is_empty() {
        ext.insert("warnings".into(), Value::Object(dropped));
    }
    json!({
        "id": request.id,
        "seatbid": seatbid,
        "cur": currency,
        "ext": ext,
    })
}

/// Which targeting keys the request asked for.
#[derive(Clone, Copy)]
struct Keys {
    /// `hb_pb`, `hb_bidder`, `hb_size` on each impression's highest bid.
    winners: bool,
    /// `hb_pb_<code>`, … on every bid.
    bidders: bool,
}

fn bid_json(bid: &Bid, code: &str, granularity: &Granularity, winner: bool, keys: Keys) -> Value {
    let (w, h) = bid.size;
    let bucket = granularity.bucket(bid.price);
    let size = format!("{w}x{h}");
    let mut targeting = Map::new();
    let key = |name: &str| {
        let mut k = format!("{name}_{code}");
        while k.len() > MAX_KEY_LEN {
            k.pop();
        }
        k
    };
    if keys.bidders {
        targeting.insert(key("hb_pb"), json!(bucket));
        targeting.insert(key("hb_bidder"), json!(code));
        targeting.insert(key("hb_size"), json!(size));
    }
    if winner && keys.winners {
        targeting.insert("hb_pb".into(), json!(bucket));
        targeting.insert("hb_bidder".into(), json!(code));
        targeting.insert("hb_size".into(), json!(size));
    }
    let mut out = Map::new();
    out.insert("id".into(), json!(bid.id));
    out.insert("impid".into(), json!(bid.imp_id));
    out.insert("price".into(), json!(bid.price));
    let priced = |text: &Option<String>| text.as_deref().map(|t| with_auction_price(t, bid.price));
    for (name, value) in [
        ("adm", priced(&bid.adm)),
        ("nurl", priced(&bid.nurl)),
        ("burl", priced(&bid.burl)),
        ("crid", bid.crid.clone()),
        ("dealid", bid.deal_id.clone()),
    ] {
        if let Some(value) = value {
            out.insert(name.into(), json!(value));
        }
    }
    if w > 0 && h > 0 {
        out.insert("w".into(), json!(w));
        out.insert("h".into(), json!(h));
    }
    if !bid.adomain.is_empty() {
        out.insert("adomain".into(), json!(bid.adomain));
    }
    out.insert("mtype".into(), json!(bid.media.mtype()));
    out.insert(
        "ext".into(),
        json!({ "prebid": { "type": bid.media.name(), "targeting": targeting } }),
    );
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auction::{read_answer, read_request};

    const PAGE: &str = r#"{"id": "r1", "tmax": 500, "imp": [
        {"id": "a", "banner": {"format": [{"w": 300, "h": 250}]}, "ext": {"prebid": {"bidder": {"fast": {}, "slow": {}, "longer-bidder-code": {}}}}},
        {"id": "b", "banner": {"format": [{"w": 728, "h": 90}]}, "ext": {"prebid": {"bidder": {"fast": {}}}}}
    ], "ext": {"prebid": {"targeting": {"pricegranularity": "dense"}}}}"#;

    fn answer(bids: &str, imps: &[crate::auction::Imp]) -> Answer {
        let body = format!(r#"{{"id": "r1", "cur": "USD", "seatbid": [{{"bid": [{bids}]}}]}}"#);
        read_answer(200, body.as_bytes(), imps, "USD").unwrap()
    }

    fn auction() -> Value {
        let request = read_request(PAGE.as_bytes()).unwrap();
        let (granularity, warning) = granularity_of(&request, PriceGranularity::Medium);
        assert_eq!((granularity.clone(), warning), (Granularity::Dense, None));
        let fast = answer(
            r#"{"id": "f1", "impid": "a", "price": 1.234, "adm": "<img src=x?p=${AUCTION_PRICE}>", "w": 300, "h": 250, "mtype": 1, "burl": "https://w/?p=${AUCTION_PRICE}"},
               {"id": "f2", "impid": "b", "price": 0.5, "adm": "x", "w": 728, "h": 90},
               {"id": "f3", "impid": "zzz", "price": 0.5, "adm": "x"}"#,
            &request.imps,
        );
        let slow = answer(
            r#"{"id": "s1", "impid": "a", "price": 2.0, "adm": "y", "w": 300, "h": 250, "crid": "c", "adomain": ["adv.example"]}"#,
            &request.imps,
        );
        let outcomes = vec![
            (
                "fast".to_owned(),
                Outcome::Answered {
                    answer: fast,
                    ms: 40,
                },
            ),
            (
                "slow".to_owned(),
                Outcome::Answered {
                    answer: slow,
                    ms: 300,
                },
            ),
            (
                "longer-bidder-code".to_owned(),
                Outcome::TimedOut { ms: 450 },
            ),
            ("nobody".to_owned(), Outcome::Unknown),
            (
                "gated".to_owned(),
                Outcome::NotAllowed(Reason::VendorNoBasis),
            ),
            (
                "broken".to_owned(),
                Outcome::Refused {
                    error: BidderError::Status(500),
                    ms: 12,
                },
            ),
        ];
        respond(&request, &outcomes, &granularity, "USD", 450, &[])
    }

    #[test]
    fn each_bidder_is_a_seat_and_the_highest_bid_per_impression_carries_hb_keys() {
        let v = auction();
        assert_eq!(v["id"], "r1");
        assert_eq!(v["cur"], "USD");
        let seats: Vec<&str> = (v["seatbid"].as_array().unwrap().iter())
            .map(|s| s["seat"].as_str().unwrap())
            .collect();
        assert_eq!(seats, ["fast", "slow"]);
        let fast = &v["seatbid"][0]["bid"];
        let slow = &v["seatbid"][1]["bid"];
        // Impression a: slow's 2.00 beats fast's 1.234.
        assert!(fast[0]["ext"]["prebid"]["targeting"].get("hb_pb").is_none());
        assert_eq!(slow[0]["ext"]["prebid"]["targeting"]["hb_pb"], "2.00");
        assert_eq!(slow[0]["ext"]["prebid"]["targeting"]["hb_bidder"], "slow");
        assert_eq!(slow[0]["ext"]["prebid"]["targeting"]["hb_size"], "300x250");
        // Impression b: fast alone.
        assert_eq!(fast[1]["ext"]["prebid"]["targeting"]["hb_pb"], "0.50");
        // Every bid its own bidder's keys; dense granularity from the request.
        assert_eq!(fast[0]["ext"]["prebid"]["targeting"]["hb_pb_fast"], "1.23");
        assert_eq!(fast[0]["ext"]["prebid"]["type"], "banner");
        assert_eq!(fast[0]["mtype"], 1);
        assert_eq!(fast[0]["adm"], "<img src=x?p=1.234>");
        assert_eq!(fast[0]["burl"], "https://w/?p=1.234");
        assert_eq!(slow[0]["adomain"], json!(["adv.example"]));
        assert_eq!(slow[0]["crid"], "c");
    }

    #[test]
    fn every_bidder_left_out_says_why() {
        let v = auction();
        let ext = &v["ext"];
        assert_eq!(ext["tmaxrequest"], 450);
        assert_eq!(
            ext["responsetimemillis"],
            json!({"fast": 40, "slow": 300, "longer-bidder-code": 450, "broken": 12})
        );
        assert_eq!(
            ext["errors"]["longer-bidder-code"][0]["code"],
            code::TIMEOUT
        );
        assert_eq!(ext["errors"]["nobody"][0]["code"], code::BAD_INPUT);
        assert_eq!(ext["errors"]["gated"][0]["code"], code::BLOCKED);
        assert!(ext["errors"]["gated"][0]["message"]
            .as_str()
            .unwrap()
            .contains("consent"));
        assert_eq!(
            ext["errors"]["broken"][0]["code"],
            code::BAD_SERVER_RESPONSE
        );
        assert!(ext["errors"].get("fast").is_none());
        let warning = ext["warnings"]["fast"][0]["message"].as_str().unwrap();
        assert!(warning.contains("f3"), "{warning}");
    }

    #[test]
    fn targeting_keys_are_cut_to_twenty_characters() {
        let request = read_request(PAGE.as_bytes()).unwrap();
        let long = answer(
            r#"{"id": "l1", "impid": "a", "price": 9, "adm": "z", "w": 300, "h": 250}"#,
            &request.imps,
        );
        let outcomes = vec![(
            "longer-bidder-code".to_owned(),
            Outcome::Answered {
                answer: long,
                ms: 1,
            },
        )];
        let v = respond(&request, &outcomes, &Granularity::Medium, "USD", 10, &[]);
        let targeting = v["seatbid"][0]["bid"][0]["ext"]["prebid"]["targeting"]
            .as_object()
            .unwrap();
        assert!(targeting.keys().all(|k| k.len() <= 20), "{targeting:?}");
        assert_eq!(targeting["hb_pb_longer-bidder-"], "9.00");
        assert_eq!(targeting["hb_pb"], "9.00");
    }

    #[test]
    fn the_request_chooses_which_keys_it_gets() {
        for (winners, bidders) in [(true, false), (false, true), (false, false)] {
            let mut request = read_request(PAGE.as_bytes()).unwrap();
            request.json["ext"]["prebid"]["targeting"]["includewinners"] = json!(winners);
            request.json["ext"]["prebid"]["targeting"]["includebidderkeys"] = json!(bidders);
            let only = answer(
                r#"{"id": "o1", "impid": "a", "price": 1, "adm": "z", "w": 300, "h": 250}"#,
                &request.imps,
            );
            let outcomes = vec![(
                "fast".to_owned(),
                Outcome::Answered {
                    answer: only,
                    ms: 1,
                },
            )];
            let v = respond(&request, &outcomes, &Granularity::Medium, "USD", 10, &[]);
            let t = &v["seatbid"][0]["bid"][0]["ext"]["prebid"]["targeting"];
            assert_eq!(t.get("hb_pb").is_some(), winners, "{t}");
            assert_eq!(t.get("hb_pb_fast").is_some(), bidders, "{t}");
        }
    }

    #[test]
    fn an_unreadable_granularity_falls_back_with_a_warning() {
        let mut request = read_request(PAGE.as_bytes()).unwrap();
        request.json["ext"]["prebid"]["targeting"]["pricegranularity"] = json!("weird");
        let (g, warning) = granularity_of(&request, PriceGranularity::High);
        assert_eq!(g, Granularity::High);
        assert!(warning.unwrap().contains("weird"));
    }
}
