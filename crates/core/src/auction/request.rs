//! The bid request a page posts to the auction endpoint: the OpenRTB 2.6 JSON that Prebid.js's
//! `prebidServerBidAdapter` sends to Prebid Server, read once, bounded, into the parts the
//! auction decides on. Everything else stays as the page sent it, as JSON ([`BidRequest::json`]),
//! for the request each bidder gets.
//!
//! What is required, and why each bound exists:
//!
//! | part | rule | error |
//! | --- | --- | --- |
//! | the body | at most [`MAX_BODY_BYTES`] | [`RequestError::TooLarge`] (413) |
//! | the text | JSON (serde_json also refuses nesting deeper than 128) | [`RequestError::NotJson`] (400) |
//! | `id` | a non-empty string of at most [`MAX_ID_LEN`] bytes | [`RequestError::NotOpenRtb`] (400) |
//! | `imp` | 1 to [`MAX_IMPS`] objects | [`RequestError::TooManyImps`] (400) past the bound |
//! | `imp[].id` | a non-empty string of at most [`MAX_ID_LEN`] bytes, unique | `NotOpenRtb` |
//! | `imp[]` media | at least one of `banner`, `native`, `video`, `audio`, each an object | `NotOpenRtb` |
//! | `imp[].bidfloor` | absent, or a finite number ≥ 0 | `NotOpenRtb` |
//! | `imp[].bidfloorcur` | absent, or three upper-case letters | `NotOpenRtb` |
//! | `imp[].ext.prebid.bidder` | absent, or an object of at most [`MAX_BIDDERS`] bidder codes, each with its params | `NotOpenRtb` |
//! | `tmax` | absent, or an integer ≥ 0 (milliseconds) | `NotOpenRtb` |
//!
//! Bidder codes are not checked against the configured bidders here: an unknown code is the
//! auction's to report per bidder (`ext.errors`), not a reason to refuse the page's request.

use std::fmt;

use serde_json::{Map, Value};

/// The largest request body read: 256 KiB. Prebid.js's requests are a few kilobytes per ad
/// unit; a page with [`MAX_IMPS`] units and long first-party data stays far below it.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// The most impressions (ad units) one request may carry. Each costs a request to every
/// bidder that bids on it, so the bound is what keeps one page from fanning out without end.
pub const MAX_IMPS: usize = 32;

/// The most bidder codes one impression may name.
pub const MAX_BIDDERS: usize = 32;

/// The longest `id` (request or impression) read, in bytes.
pub const MAX_ID_LEN: usize = 256;

/// Which media an impression offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Media {
    /// `imp.banner`.
    pub banner: bool,
    /// `imp.native`.
    pub native: bool,
    /// `imp.video`.
    pub video: bool,
    /// `imp.audio`.
    pub audio: bool,
}

/// One impression (a Prebid.js ad unit), as the auction needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Imp {
    /// `imp.id`: Prebid.js sends the ad unit code.
    pub id: String,
    /// The media it offers.
    pub media: Media,
    /// `imp.bidfloor` (0 when absent).
    pub bidfloor: f64,
    /// `imp.bidfloorcur`, when given.
    pub bidfloorcur: Option<String>,
    /// `imp.ext.prebid.bidder`: each bidder code the page asks, with its params, in the
    /// order written.
    pub bidders: Vec<(String, Value)>,
}

/// A bid request, read and bounded.
#[derive(Debug, Clone, PartialEq)]
pub struct BidRequest {
    /// `id`.
    pub id: String,
    /// `imp`, in order.
    pub imps: Vec<Imp>,
    /// `tmax`: the time the page gives the auction, in milliseconds.
    pub tmax_ms: Option<u64>,
    /// The whole request as sent.
    pub json: Value,
}

/// Why a request was refused. Each maps to one status ([`RequestError::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// The body is longer than [`MAX_BODY_BYTES`] (its length).
    TooLarge(usize),
    /// The body is not JSON (the parser's message, with its line and column).
    NotJson(String),
    /// The JSON is not an OpenRTB bid request (what is wrong).
    NotOpenRtb(String),
    /// More impressions than [`MAX_IMPS`] (how many).
    TooManyImps(usize),
}

impl RequestError {
    /// The HTTP status of the answer: 413 for a body too large, 400 otherwise.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::TooLarge(_) => 413,
            _ => 400,
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::TooLarge(len) => {
                write!(
                    f,
                    "the body is {len} bytes; at most {MAX_BODY_BYTES} are read"
                )
            }
            RequestError::NotJson(why) => write!(f, "the body is not JSON: {why}"),
            RequestError::NotOpenRtb(why) => write!(f, "not an OpenRTB bid request: {why}"),
            RequestError::TooManyImps(n) => {
                write!(f, "{n} impressions; at most {MAX_IMPS} per request")
            }
        }
    }
}

impl std::error::Error for RequestError {}

/// Reads a bid request from a request body (see the module docs for every rule).
pub fn read(body: &[u8]) -> Result<BidRequest, RequestError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(RequestError::TooLarge(body.len()));
    }
    let json: Value =
        serde_json::from_slice(body).map_err(|e| RequestError::NotJson(e.to_string()))?;
    let top = json
        .as_object()
        .ok_or_else(|| not_openrtb("the body is not a JSON object"))?;
    let id = id_at(top, "id")?;
    let imps = match top.get("imp") {
        Some(Value::Array(imps)) if imps.len() > MAX_IMPS => {
            return Err(RequestError::TooManyImps(imps.len()))
        }
        Some(Value::Array(imps)) if !imps.is_empty() => imps,
        _ => {
            return Err(not_openrtb(
                "`imp` must be an array of 1 or more impressions",
            ))
        }
    };
    let mut read_imps: Vec<Imp> = Vec::with_capacity(imps.len());
    for (i, imp) in imps.iter().enumerate() {
        let imp = read_imp(i, imp)?;
        if read_imps.iter().any(|seen| seen.id == imp.id) {
            return Err(not_openrtb(&format!("imp[{i}].id repeats {:?}", imp.id)));
        }
        read_imps.push(imp);
    }
    let tmax_ms = match top.get("tmax") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| not_openrtb("`tmax` must be an integer of milliseconds, ≥ 0"))?,
        ),
    };
    Ok(BidRequest {
        id,
        imps: read_imps,
        tmax_ms,
        json,
    })
}

fn not_openrtb(why: &str) -> RequestError {
    RequestError::NotOpenRtb(why.to_owned())
}

/// A required identifier: a non-empty string of at most [`MAX_ID_LEN`] bytes.
fn id_at(object: &Map<String, Value>, key: &str) -> Result<String, RequestError> {
    match object.get(key) {
        Some(Value::String(id)) if !id.is_empty() && id.len() <= MAX_ID_LEN => Ok(id.clone()),
        _ => Err(not_openrtb(&format!(
            "`{key}` must be a string of 1 to {MAX_ID_LEN} bytes"
        ))),
    }
}

fn read_imp(i: usize, imp: &Value) -> Result<Imp, RequestError> {
    let at = |what: &str| not_openrtb(&format!("imp[{i}]: {what}"));
    let imp = imp.as_object().ok_or_else(|| at("not an object"))?;
    let id = id_at(imp, "id").map_err(|_| at("`id` must be a string of 1 to 256 bytes"))?;
    let mut media = Media::default();
    for (name, flag) in [
        ("banner", &mut media.banner),
        ("native", &mut media.native),
        ("video", &mut media.video),
        ("audio", &mut media.audio),
    ] {
        match imp.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::Object(_)) => *flag = true,
            Some(_) => return Err(at(&format!("`{name}` must be an object"))),
        }
    }
    if media == Media::default() {
        return Err(at("no `banner`, `native`, `video` or `audio`"));
    }
    let bidfloor = match imp.get("bidfloor") {
        None | Some(Value::Null) => 0.0,
        Some(v) => v
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .ok_or_else(|| at("`bidfloor` must be a number ≥ 0"))?,
    };
    let bidfloorcur = match imp.get("bidfloorcur") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if is_currency(c) => Some(c.clone()),
        Some(_) => return Err(at("`bidfloorcur` must be a currency code like \"USD\"")),
    };
    let bidders = match imp
        .get("ext")
        .and_then(|e| e.get("prebid"))
        .and_then(|p| p.get("bidder"))
    {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(bidders)) if bidders.len() <= MAX_BIDDERS => bidders
            .iter()
            .map(|(code, params)| (code.clone(), params.clone()))
            .collect(),
        Some(Value::Object(_)) => {
            return Err(at(&format!("more than {MAX_BIDDERS} bidders")));
        }
        Some(_) => return Err(at("`ext.prebid.bidder` must be an object")),
    };
    Ok(Imp {
        id,
        media,
        bidfloor,
        bidfloorcur,
        bidders,
    })
}

/// Three upper-case ASCII letters (ISO 4217).
fn is_currency(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The shape Prebid.js 11's `prebidServerBidAdapter` posts (DESIGN.md section 10): one
    /// banner ad unit with two bidders.
    const PREBID: &str = r#"{
        "id": "a6f1c7e0-1",
        "source": {"tid": "a6f1c7e0-1"},
        "tmax": 800,
        "imp": [{
            "id": "div-banner-1",
            "banner": {"format": [{"w": 300, "h": 250}, {"w": 300, "h": 600}], "topframe": 1},
            "secure": 1,
            "ext": {"prebid": {"bidder": {"fast": {"placement": 1}, "slow": {}}}}
        }],
        "site": {"page": "https://www.pub.test/news", "domain": "www.pub.test"},
        "device": {"ua": "Mozilla/5.0", "w": 1280, "h": 800},
        "ext": {"prebid": {"targeting": {"includewinners": true, "includebidderkeys": false},
                "tmaxmax": 1000}}
    }"#;

    #[test]
    fn reads_what_prebid_js_sends() {
        let r = read(PREBID.as_bytes()).unwrap();
        assert_eq!(r.id, "a6f1c7e0-1");
        assert_eq!(r.tmax_ms, Some(800));
        assert_eq!(r.imps.len(), 1);
        let imp = &r.imps[0];
        assert_eq!(imp.id, "div-banner-1");
        assert!(imp.media.banner && !imp.media.native);
        assert_eq!(imp.bidfloor, 0.0);
        let codes: Vec<&str> = imp.bidders.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(codes, ["fast", "slow"]);
        assert_eq!(imp.bidders[0].1["placement"], 1);
        assert_eq!(r.json["site"]["domain"], "www.pub.test");
    }

    #[test]
    fn each_rule_refuses_with_its_status() {
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut v: Value = serde_json::from_str(PREBID).unwrap();
            edit(&mut v);
            read(v.to_string().as_bytes())
        };
        type Edit = Box<dyn Fn(&mut Value)>;
        let refused: Vec<(&str, Edit)> = vec![
            ("no id", Box::new(|v| v["id"] = Value::Null)),
            ("empty id", Box::new(|v| v["id"] = "".into())),
            ("long id", Box::new(|v| v["id"] = "x".repeat(257).into())),
            ("no imp", Box::new(|v| v["imp"] = Value::Array(vec![]))),
            ("imp not array", Box::new(|v| v["imp"] = 1.into())),
            ("imp not object", Box::new(|v| v["imp"][0] = "x".into())),
            ("imp without id", Box::new(|v| v["imp"][0]["id"] = 3.into())),
            (
                "no media",
                Box::new(|v| v["imp"][0]["banner"] = Value::Null),
            ),
            (
                "banner not object",
                Box::new(|v| v["imp"][0]["banner"] = 1.into()),
            ),
            (
                "negative floor",
                Box::new(|v| v["imp"][0]["bidfloor"] = (-1.0).into()),
            ),
            (
                "floor text",
                Box::new(|v| v["imp"][0]["bidfloor"] = "1".into()),
            ),
            (
                "currency",
                Box::new(|v| v["imp"][0]["bidfloorcur"] = "usd".into()),
            ),
            (
                "bidder not object",
                Box::new(|v| v["imp"][0]["ext"]["prebid"]["bidder"] = 1.into()),
            ),
            ("tmax negative", Box::new(|v| v["tmax"] = (-5).into())),
            ("tmax fraction", Box::new(|v| v["tmax"] = 1.5.into())),
            (
                "repeated imp id",
                Box::new(|v| {
                    let imp = v["imp"][0].clone();
                    v["imp"].as_array_mut().unwrap().push(imp);
                }),
            ),
        ];
        for (what, edit) in &refused {
            let e = with(edit.as_ref()).unwrap_err();
            assert!(matches!(e, RequestError::NotOpenRtb(_)), "{what}: {e:?}");
            assert_eq!(e.status(), 400, "{what}");
        }
        let many = with(&|v| {
            let imp = v["imp"][0].clone();
            v["imp"] = (0..=MAX_IMPS)
                .map(|i| {
                    let mut imp = imp.clone();
                    imp["id"] = format!("u{i}").into();
                    imp
                })
                .collect();
        });
        assert_eq!(many, Err(RequestError::TooManyImps(MAX_IMPS + 1)));
        let big = vec![b' '; MAX_BODY_BYTES + 1];
        let e = read(&big).unwrap_err();
        assert_eq!(
            (e.status(), e),
            (413, RequestError::TooLarge(MAX_BODY_BYTES + 1))
        );
        for not_json in [&b"{"[..], b"", b"\xff", b"[1,2"] {
            let e = read(not_json).unwrap_err();
            assert!(matches!(e, RequestError::NotJson(_)), "{not_json:?}");
        }
        assert!(matches!(read(b"[]"), Err(RequestError::NotOpenRtb(_))));
        // Deep nesting is refused by the parser, not by a stack overflow.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(
            read(deep.as_bytes()),
            Err(RequestError::NotJson(_))
        ));
        // Accepted: a floor in a currency, native and video together, no bidders.
        let ok = with(&|v| {
            v["imp"][0]["bidfloor"] = 0.5.into();
            v["imp"][0]["bidfloorcur"] = "EUR".into();
            v["imp"][0]["native"] = serde_json::json!({"request": "{}"});
            v["imp"][0]["ext"] = serde_json::json!({});
            v["tmax"] = Value::Null;
        })
        .unwrap();
        let imp = &ok.imps[0];
        assert_eq!(
            (imp.bidfloor, imp.bidfloorcur.as_deref()),
            (0.5, Some("EUR"))
        );
        assert!(imp.media.native && imp.media.banner && imp.bidders.is_empty());
        assert_eq!(ok.tmax_ms, None);
    }

    proptest! {
        /// Any bytes: an answer, never a panic; an accepted request keeps its bounds.
        #[test]
        fn any_body_is_read_or_refused(body in prop::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(r) = read(&body) {
                prop_assert!(!r.imps.is_empty() && r.imps.len() <= MAX_IMPS);
            }
        }

        /// Prebid.js's request with one value replaced by a random JSON scalar: read or
        /// refused with 400, never a panic.
        #[test]
        fn a_changed_field_is_read_or_refused(
            path in prop::sample::select(&[
                "/id", "/tmax", "/imp/0/id", "/imp/0/banner", "/imp/0/bidfloor",
                "/imp/0/bidfloorcur", "/imp/0/ext/prebid/bidder", "/imp/0/ext", "/imp",
            ][..]),
            value in prop_oneof![
                Just(Value::Null), any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from), any::<f64>().prop_map(Value::from),
                ".{0,8}".prop_map(Value::from),
            ],
        ) {
            let mut v: Value = serde_json::from_str(PREBID).unwrap();
            if let Some(slot) = v.pointer_mut(path) {
                *slot = value;
            }
            match read(v.to_string().as_bytes()) {
                Ok(r) => prop_assert!(r.imps[0].bidfloor >= 0.0),
                Err(e) => prop_assert_eq!(e.status(), 400),
            }
        }
    }
}
