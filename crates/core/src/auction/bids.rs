//! A bidder's answer, read and checked against what it was asked: the bids that may compete,
//! and for each one that may not, why. A bidder is a partner the edge calls, not one it
//! trusts: its answer may be late, huge, not JSON, or name impressions it was never offered.
//! A bad answer costs only that bidder's bids ([`BidderError`]); a bad bid costs only itself
//! ([`Dropped`]).
//!
//! | the answer | outcome |
//! | --- | --- |
//! | `204 No Content`, or `200` with no `seatbid` | no bids |
//! | another status | [`BidderError::Status`] |
//! | a body over [`MAX_BIDDER_BODY_BYTES`] | [`BidderError::TooLarge`] |
//! | not JSON, not an object, `seatbid` or `bid` not arrays | [`BidderError::NotOpenRtb`] |
//! | more than [`MAX_BIDS`] bids | the first [`MAX_BIDS`] are read, the rest dropped ([`Dropped::TooMany`]) |
//!
//! | a bid | outcome |
//! | --- | --- |
//! | no `id`, or `impid` not an impression the bidder was asked for | [`Dropped::UnknownImp`] |
//! | `price` not a finite number > 0 | [`Dropped::BadPrice`] |
//! | the answer's `cur` (default `USD`) not the auction's currency | [`Dropped::Currency`] |
//! | below the impression's `bidfloor` (in the auction's currency) | [`Dropped::BelowFloor`] |
//! | its media type (`mtype`, else `ext.prebid.type`, else the impression's only medium) not one the impression offers | [`Dropped::MediaNotOffered`] |
//! | neither `adm` nor `nurl` | [`Dropped::NoCreative`] |
//!
//! `${AUCTION_PRICE}` in `adm`, `nurl` and `burl` is replaced by the clearing price
//! ([`with_auction_price`]) when the bid is answered, as OpenRTB's macro asks.

use std::fmt;

use serde_json::{Map, Value};

use super::request::{Imp, Media};

/// The largest bidder answer read: 1 MiB. A banner's markup is a few kilobytes; a video's VAST
/// tens; an answer past this is a fault of the bidder, not a bid.
pub const MAX_BIDDER_BODY_BYTES: usize = 1024 * 1024;

/// The most bids read from one answer.
pub const MAX_BIDS: usize = 100;

/// OpenRTB 2.6's `mtype` (and Prebid's `ext.prebid.type`): the medium of a bid's creative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaType {
    /// `1`, `banner`.
    Banner,
    /// `2`, `video`.
    Video,
    /// `3`, `audio`.
    Audio,
    /// `4`, `native`.
    Native,
}

impl MediaType {
    /// The OpenRTB `mtype` number.
    pub fn mtype(self) -> u8 {
        match self {
            MediaType::Banner => 1,
            MediaType::Video => 2,
            MediaType::Audio => 3,
            MediaType::Native => 4,
        }
    }

    /// Prebid's name (`ext.prebid.type`).
    pub fn name(self) -> &'static str {
        match self {
            MediaType::Banner => "banner",
            MediaType::Video => "video",
            MediaType::Audio => "audio",
            MediaType::Native => "native",
        }
    }

    fn offered(self, media: Media) -> bool {
        match self {
            MediaType::Banner => media.banner,
            MediaType::Video => media.video,
            MediaType::Audio => media.audio,
            MediaType::Native => media.native,
        }
    }
}

/// A bid that may compete.
#[derive(Debug, Clone, PartialEq)]
pub struct Bid {
    /// `bid.id`.
    pub id: String,
    /// `bid.impid`: an impression the bidder was asked for.
    pub imp_id: String,
    /// `bid.price`, in the auction's currency, > 0 and not below the floor.
    pub price: f64,
    /// Its medium.
    pub media: MediaType,
    /// `bid.adm`: the creative's markup (HTML, native JSON or VAST), as sent.
    pub adm: Option<String>,
    /// `bid.nurl`: the win notice (or the creative's address, without `adm`).
    pub nurl: Option<String>,
    /// `bid.burl`: the billing notice, fired when the creative renders.
    pub burl: Option<String>,
    /// `bid.w` and `bid.h` (0 when absent).
    pub size: (u32, u32),
    /// `bid.crid`.
    pub crid: Option<String>,
    /// `bid.adomain`: the advertiser's domains.
    pub adomain: Vec<String>,
    /// `bid.dealid`.
    pub deal_id: Option<String>,
}

/// Why a bid may not compete. Each is reported to the page with the bidder's errors.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Dropped {
    /// No `id`, or an `impid` the bidder was not asked for.
    UnknownImp(String),
    /// A `price` that is not a finite number above 0.
    BadPrice,
    /// Priced in another currency than the auction's (the currency given).
    Currency(String),
    /// Below the impression's floor (the price and the floor).
    BelowFloor(f64, f64),
    /// A medium the impression does not offer, or none that can be told.
    MediaNotOffered,
    /// Neither markup (`adm`) nor an address (`nurl`) to render.
    NoCreative,
    /// Past [`MAX_BIDS`] in one answer.
    TooMany,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dropped::UnknownImp(imp) => write!(f, "bid for an impression not asked for: {imp:?}"),
            Dropped::BadPrice => f.write_str("price is not a number above 0"),
            Dropped::Currency(cur) => write!(f, "bid in {cur}, not the auction's currency"),
            Dropped::BelowFloor(price, floor) => write!(f, "price {price} below the floor {floor}"),
            Dropped::MediaNotOffered => f.write_str("media type not offered by the impression"),
            Dropped::NoCreative => f.write_str("no adm and no nurl"),
            Dropped::TooMany => write!(f, "more than {MAX_BIDS} bids in one answer"),
        }
    }
}

/// Why a bidder's whole answer was refused. [`BidderError::code`] is Prebid Server's
/// `ext.errors` code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BidderError {
    /// The answer's status was neither 200 nor 204.
    Status(u16),
    /// The body is longer than [`MAX_BIDDER_BODY_BYTES`].
    TooLarge,
    /// The body is not an OpenRTB bid response (what is wrong).
    NotOpenRtb(String),
}

impl BidderError {
    /// Prebid Server's error code: 3, a bad server response.
    pub fn code(&self) -> u16 {
        3
    }
}

impl fmt::Display for BidderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BidderError::Status(status) => write!(f, "the bidder answered status {status}"),
            BidderError::TooLarge => {
                write!(f, "the answer is over {MAX_BIDDER_BODY_BYTES} bytes")
            }
            BidderError::NotOpenRtb(why) => write!(f, "not an OpenRTB bid response: {why}"),
        }
    }
}

/// A bidder's answer: the bids that may compete, and the others with why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// Bids that passed every check, in the answer's order.
    pub bids: Vec<Bid>,
    /// Bids that did not: the bid's `id` (empty when it had none) and why.
    pub dropped: Vec<(String, Dropped)>,
}

/// Reads a bidder's answer (`status` and `body`) to a request for `imps`, in an auction whose
/// currency is `currency`. See the module for every rule.
pub fn read_answer(
    status: u16,
    body: &[u8],
    imps: &[Imp],
    currency: &str,
) -> Result<Answer, BidderError> {
    match status {
        204 => return Ok(Answer::default()),
        200 => {}
        other => return Err(BidderError::Status(other)),
    }
    if body.len() > MAX_BIDDER_BODY_BYTES {
        return Err(BidderError::TooLarge);
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Answer::default());
    }
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| BidderError::NotOpenRtb(format!("not JSON: {e}")))?;
    let top = json
        .as_object()
        .ok_or_else(|| not_openrtb("not a JSON object"))?;
    let cur = match top.get("cur") {
        None | Some(Value::Null) => "USD",
        Some(Value::String(cur)) => cur.as_str(),
        Some(_) => return Err(not_openrtb("`cur` is not a string")),
    };
    let seatbids = match top.get("seatbid") {
        None | Some(Value::Null) => return Ok(Answer::default()),
        Some(Value::Array(seatbids)) => seatbids,
        Some(_) => return Err(not_openrtb("`seatbid` is not an array")),
    };
    let mut answer = Answer::default();
    let mut seen = 0;
    for seatbid in seatbids {
        let bids = match seatbid.get("bid") {
            Some(Value::Array(bids)) => bids,
            _ => return Err(not_openrtb("a `seatbid` without a `bid` array")),
        };
        for bid in bids {
            let id = text(bid, "id").unwrap_or_default();
            seen += 1;
            if seen > MAX_BIDS {
                answer.dropped.push((id, Dropped::TooMany));
                continue;
            }
            match read_bid(bid, imps, cur, currency) {
                Ok(bid) => answer.bids.push(bid),
                Err(why) => answer.dropped.push((id, why)),
            }
        }
    }
    Ok(answer)
}

fn not_openrtb(why: &str) -> BidderError {
    BidderError::NotOpenRtb(why.to_owned())
}

/// The string at `key` of `value`, if it is one.
fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key)?.as_str().map(str::to_owned)
}

fn read_bid(bid: &Value, imps: &[Imp], cur: &str, currency: &str) -> Result<Bid, Dropped> {
    let fields = bid.as_object();
    let imp_id = text(bid, "impid").unwrap_or_default();
    let (Some(fields), Some(id)) = (fields, text(bid, "id")) else {
        return Err(Dropped::UnknownImp(imp_id));
    };
    let imp = (imps.iter())
        .find(|imp| imp.id == imp_id)
        .ok_or_else(|| Dropped::UnknownImp(imp_id.clone()))?;
    let price = (fields.get("price").and_then(Value::as_f64))
        .filter(|p| p.is_finite() && *p > 0.0)
        .ok_or(Dropped::BadPrice)?;
    if cur != currency {
        return Err(Dropped::Currency(cur.to_owned()));
    }
    let floor_applies = imp.bidfloorcur.as_deref().is_none_or(|c| c == currency);
    if floor_applies && price < imp.bidfloor {
        return Err(Dropped::BelowFloor(price, imp.bidfloor));
    }
    let media = media_type(fields, imp.media).ok_or(Dropped::MediaNotOffered)?;
    let (adm, nurl) = (text(bid, "adm"), text(bid, "nurl"));
    if adm.is_none() && nurl.is_none() {
        return Err(Dropped::NoCreative);
    }
    let dimension = |key: &str| {
        (fields.get(key).and_then(Value::as_u64))
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    };
    let adomain = match fields.get("adomain") {
        Some(Value::Array(domains)) => (domains.iter())
            .filter_map(|d| d.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Bid {
        id,
        imp_id,
        price,
        media,
        adm,
        nurl,
        burl: text(bid, "burl"),
        size: (dimension("w"), dimension("h")),
        crid: text(bid, "crid"),
        adomain,
        deal_id: text(bid, "dealid"),
    })
}

/// A bid's medium: `mtype` when it is 1 to 4, else `ext.prebid.type`, else the impression's
/// medium when it offers exactly one; `None` when it cannot be told or is not offered.
fn media_type(bid: &Map<String, Value>, offered: Media) -> Option<MediaType> {
    let by_number = |n: u64| match n {
        1 => Some(MediaType::Banner),
        2 => Some(MediaType::Video),
        3 => Some(MediaType::Audio),
        4 => Some(MediaType::Native),
        _ => None,
    };
    let by_name = |name: &str| match name {
        "banner" => Some(MediaType::Banner),
        "video" => Some(MediaType::Video),
        "audio" => Some(MediaType::Audio),
        "native" => Some(MediaType::Native),
        _ => None,
    };
    let only = || {
        let all = [
            (offered.banner, MediaType::Banner),
            (offered.video, MediaType::Video),
            (offered.audio, MediaType::Audio),
            (offered.native, MediaType::Native),
        ];
        let mut on = all.iter().filter(|(on, _)| *on).map(|(_, t)| *t);
        match (on.next(), on.next()) {
            (Some(t), None) => Some(t),
            _ => None,
        }
    };
    let said = match bid.get("mtype") {
        Some(Value::Number(n)) => n.as_u64().and_then(by_number),
        _ => None,
    }
    .or_else(|| {
        let name = bid.get("ext")?.get("prebid")?.get("type")?.as_str()?;
        by_name(name)
    });
    said.or_else(only).filter(|t| t.offered(offered))
}

/// `text` with OpenRTB's `${AUCTION_PRICE}` macro replaced by `price` (as the shortest
/// decimal that reads back as it).
pub fn with_auction_price(text: &str, price: f64) -> String {
    text.replace("${AUCTION_PRICE}", &price.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn imps() -> Vec<Imp> {
        let imp = |id: &str, media: Media, floor: f64| Imp {
            id: id.to_owned(),
            media,
            bidfloor: floor,
            bidfloorcur: None,
            bidders: Vec::new(),
        };
        vec![
            imp(
                "banner-1",
                Media {
                    banner: true,
                    ..Media::default()
                },
                0.5,
            ),
            imp(
                "both",
                Media {
                    banner: true,
                    native: true,
                    ..Media::default()
                },
                0.0,
            ),
        ]
    }

    fn answer(bids: Value) -> Result<Answer, BidderError> {
        let body = json!({"id": "r", "seatbid": [{"seat": "fast", "bid": bids}]});
        read_answer(200, body.to_string().as_bytes(), &imps(), "USD")
    }

    fn good() -> Value {
        json!({"id": "b1", "impid": "banner-1", "price": 1.37, "adm": "<div>ad ${AUCTION_PRICE}</div>",
               "w": 300, "h": 250, "crid": "c1", "adomain": ["adv.example"], "mtype": 1,
               "burl": "https://bid.example/bill?p=${AUCTION_PRICE}"})
    }

    #[test]
    fn a_good_bid_is_read_whole() {
        let a = answer(json!([good()])).unwrap();
        assert!(a.dropped.is_empty());
        let bid = &a.bids[0];
        assert_eq!((bid.id.as_str(), bid.imp_id.as_str()), ("b1", "banner-1"));
        assert_eq!(
            (bid.price, bid.media, bid.size),
            (1.37, MediaType::Banner, (300, 250))
        );
        assert_eq!(bid.adomain, ["adv.example"]);
        assert_eq!(
            with_auction_price(bid.burl.as_deref().unwrap(), bid.price),
            "https://bid.example/bill?p=1.37"
        );
    }

    #[test]
    fn each_bad_bid_is_dropped_with_its_reason_and_costs_only_itself() {
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut bid = good();
            edit(&mut bid);
            bid
        };
        let cases: Vec<(Value, Dropped)> = vec![
            (
                with(&|b| b["impid"] = "other".into()),
                Dropped::UnknownImp("other".into()),
            ),
            (
                with(&|b| b["id"] = Value::Null),
                Dropped::UnknownImp("banner-1".into()),
            ),
            (with(&|b| b["price"] = (-1.0).into()), Dropped::BadPrice),
            (with(&|b| b["price"] = 0.into()), Dropped::BadPrice),
            (with(&|b| b["price"] = "1.0".into()), Dropped::BadPrice),
            (
                with(&|b| b["price"] = 0.49.into()),
                Dropped::BelowFloor(0.49, 0.5),
            ),
            (with(&|b| b["mtype"] = 4.into()), Dropped::MediaNotOffered),
            (
                with(&|b| {
                    b["adm"] = Value::Null;
                }),
                Dropped::NoCreative,
            ),
        ];
        let bids: Vec<Value> = cases
            .iter()
            .map(|(b, _)| b.clone())
            .chain([good()])
            .collect();
        let a = answer(Value::Array(bids)).unwrap();
        assert_eq!(a.bids.len(), 1, "the good bid survives");
        let reasons: Vec<Dropped> = a.dropped.iter().map(|(_, why)| why.clone()).collect();
        let want: Vec<Dropped> = cases.into_iter().map(|(_, why)| why).collect();
        assert_eq!(reasons, want);
        // Another currency drops every bid of the answer.
        let body = json!({"id": "r", "cur": "EUR", "seatbid": [{"bid": [good()]}]});
        let a = read_answer(200, body.to_string().as_bytes(), &imps(), "USD").unwrap();
        assert_eq!(a.dropped[0].1, Dropped::Currency("EUR".into()));
        // A floor in another currency is not compared.
        let mut other_floor = imps();
        other_floor[0].bidfloorcur = Some("EUR".into());
        let body = json!({"seatbid": [{"bid": [with(&|b| b["price"] = 0.1.into())]}]});
        let a = read_answer(200, body.to_string().as_bytes(), &other_floor, "USD").unwrap();
        assert_eq!(a.bids.len(), 1);
    }

    #[test]
    fn the_media_type_is_said_or_implied() {
        let bid = |extra: Value, imp: &str| {
            let mut b = good();
            b["impid"] = imp.into();
            b.as_object_mut().unwrap().remove("mtype");
            for (k, v) in extra.as_object().unwrap() {
                b[k] = v.clone();
            }
            answer(json!([b])).unwrap()
        };
        // A banner-only impression implies banner.
        assert_eq!(bid(json!({}), "banner-1").bids[0].media, MediaType::Banner);
        // Banner and native offered: the bid must say which.
        assert_eq!(
            bid(json!({}), "both").dropped[0].1,
            Dropped::MediaNotOffered
        );
        let native = json!({"ext": {"prebid": {"type": "native"}}});
        assert_eq!(bid(native, "both").bids[0].media, MediaType::Native);
        assert_eq!(
            bid(json!({"mtype": 4}), "both").bids[0].media,
            MediaType::Native
        );
        // An unknown mtype falls back to the name.
        let both = json!({"mtype": 9, "ext": {"prebid": {"type": "banner"}}});
        assert_eq!(bid(both, "both").bids[0].media, MediaType::Banner);
    }

    #[test]
    fn a_bad_answer_is_one_error() {
        let read = |status: u16, body: &[u8]| read_answer(status, body, &imps(), "USD");
        assert_eq!(read(204, b"anything"), Ok(Answer::default()));
        assert_eq!(read(200, b""), Ok(Answer::default()));
        assert_eq!(read(200, br#"{"id":"r"}"#), Ok(Answer::default()));
        assert_eq!(read(500, b"{}"), Err(BidderError::Status(500)));
        assert_eq!(read(302, b""), Err(BidderError::Status(302)));
        for body in [
            &b"<html>"[..],
            b"[1]",
            br#"{"seatbid":1}"#,
            br#"{"seatbid":[{}]}"#,
        ] {
            assert!(
                matches!(read(200, body), Err(BidderError::NotOpenRtb(_))),
                "{body:?}"
            );
        }
        let huge = vec![b' '; MAX_BIDDER_BODY_BYTES + 1];
        assert_eq!(read(200, &huge), Err(BidderError::TooLarge));
        assert_eq!(BidderError::TooLarge.code(), 3);
        // Past MAX_BIDS, the rest are dropped, not read.
        let many: Vec<Value> = (0..MAX_BIDS + 3).map(|_| good()).collect();
        let a = answer(Value::Array(many)).unwrap();
        assert_eq!((a.bids.len(), a.dropped.len()), (MAX_BIDS, 3));
        assert!(a.dropped.iter().all(|(_, why)| *why == Dropped::TooMany));
    }

    proptest! {
        /// Any bytes as a bidder's answer: an answer or an error, never a panic, and every
        /// bid that survives is for an impression asked, priced above 0 and at the floor.
        #[test]
        fn any_answer_is_read_or_refused(body in prop::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(a) = read_answer(200, &body, &imps(), "USD") {
                for bid in a.bids {
                    prop_assert!(bid.price > 0.0 && bid.price.is_finite());
                }
            }
        }

        /// A good bid with one field replaced by a random JSON value: kept or dropped with a
        /// reason, never a panic; a kept one still meets every rule.
        #[test]
        fn a_changed_bid_field_is_kept_or_dropped(
            key in prop::sample::select(&[
                "id", "impid", "price", "adm", "nurl", "w", "h", "mtype", "adomain", "ext",
            ][..]),
            value in prop_oneof![
                Just(Value::Null), any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from), any::<f64>().prop_map(Value::from),
                ".{0,8}".prop_map(Value::from),
            ],
        ) {
            let mut bid = good();
            bid[key] = value;
            let a = answer(json!([bid])).unwrap();
            prop_assert_eq!(a.bids.len() + a.dropped.len(), 1);
            for bid in a.bids {
                prop_assert!(bid.price >= 0.5 && bid.imp_id == "banner-1");
                prop_assert!(bid.adm.is_some() || bid.nurl.is_some());
            }
        }
    }
}
