//! The bids of a navigation's auction, written into the page just before `</body>` for its
//! script (`tsjs`) to render: one JSON data block,
//!
//! ```html
//! <script type="application/json" id="ts-bids">{"v":1,"id":"…","cur":"USD","slots":{…}}</script>
//! ```
//!
//! **Why a JSON data block, not a script that assigns a global.** A `<script>` whose type is
//! not JavaScript is never executed: a page's Content-Security-Policy (`script-src`, nonces,
//! hashes) does not apply to it, so the edge needs no nonce and cannot weaken the page's
//! policy; and its text is data, so a bidder's markup can at worst be wrong data, never code
//! running at the page's origin. Page code reads it with
//! `JSON.parse(document.getElementById("ts-bids").textContent)`.
//!
//! **Why it cannot be broken out of.** A script element's text ends at the first `</script`
//! (any case), and `<!--` there changes how that end is found. Every `<`, `>` and `&` is
//! written as a JSON escape (`\u003c`, `\u003e`, `\u0026`), which is only possible because
//! they can only occur inside JSON strings; U+2028 and U+2029 are escaped too, so the text
//! stays a valid JavaScript literal should anyone ever evaluate it. The element's own
//! `</script>` is therefore the only one in the output, whatever a bidder sent.
//!
//! The data, per slot (the element id, in the order asked):
//!
//! | key | value |
//! | --- | --- |
//! | `bid` | the winning bid, or `null`: `bidder` (its code), `id`, `price`, `adm`, `nurl`, `burl`, `w`, `h`, `crid`, `adomain`, `dealid`, `mtype`, `type`, as the auction's answer gives them (`${AUCTION_PRICE}` already replaced; a first-party bidder's URLs already signed) |
//! | `targeting` | the winner's targeting keys (`hb_pb`, `hb_bidder`, `hb_size`), `{}` without a bid |

use serde_json::{json, Map, Value};

use super::request::BidRequest;

/// The `id` of the data block's element.
pub const BIDS_ELEMENT_ID: &str = "ts-bids";

/// The version of the data's shape (`v`).
pub const BIDS_VERSION: u32 = 1;

/// The fields of a winning bid copied into the data, as the auction's answer names them
/// (and `type`, from its `ext.prebid.type`).
const BID_FIELDS: [&str; 11] = [
    "id", "price", "adm", "nurl", "burl", "w", "h", "crid", "adomain", "dealid", "mtype",
];

/// The data of `request`'s auction from its `answer` (what [`respond`](super::respond) gave
/// for it): per slot, its winning bid and targeting. A winner is the bid `respond` gave the
/// winner's keys (`hb_bidder`), which a request from
/// [`navigation_request`](super::navigation_request) always asks for.
pub fn page_bids(request: &BidRequest, answer: &Value) -> Value {
    let mut slots = Map::new();
    for imp in &request.imps {
        slots.insert(imp.id.clone(), json!({ "bid": null, "targeting": {} }));
    }
    let seats = answer.get("seatbid").and_then(Value::as_array);
    for seat in seats.into_iter().flatten() {
        let bidder = seat.get("seat").cloned().unwrap_or(Value::Null);
        let bids = seat.get("bid").and_then(Value::as_array);
        for bid in bids.into_iter().flatten() {
            let prebid = bid.get("ext").and_then(|e| e.get("prebid"));
            let targeting = prebid.and_then(|p| p.get("targeting"));
            // The highest bid of its impression is the one with the winner's keys.
            if targeting.and_then(|t| t.get("hb_bidder")).is_none() {
                continue;
            }
            let Some(slot) =
                (bid.get("impid").and_then(Value::as_str)).and_then(|imp| slots.get_mut(imp))
            else {
                continue;
            };
            let mut out = Map::new();
            out.insert("bidder".into(), bidder.clone());
            for field in BID_FIELDS {
                if let Some(value) = bid.get(field) {
                    out.insert(field.into(), value.clone());
                }
            }
            if let Some(kind) = prebid.and_then(|p| p.get("type")) {
                out.insert("type".into(), kind.clone());
            }
            let winner_keys: Map<String, Value> = (targeting.and_then(Value::as_object))
                .into_iter()
                .flatten()
                .filter(|(k, _)| matches!(k.as_str(), "hb_pb" | "hb_bidder" | "hb_size"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            *slot = json!({ "bid": out, "targeting": winner_keys });
        }
    }
    json!({
        "v": BIDS_VERSION,
        "id": request.id,
        "cur": answer.get("cur").cloned().unwrap_or(Value::Null),
        "slots": slots,
    })
}

/// The element written before `</body>`: [`page_bids`] as a JSON data block whose text no
/// value can end early (see the module docs).
pub fn bids_script(request: &BidRequest, answer: &Value) -> String {
    let data = page_bids(request, answer).to_string();
    let mut out = String::with_capacity(data.len() + 64);
    out.push_str("<script type=\"application/json\" id=\"");
    out.push_str(BIDS_ELEMENT_ID);
    out.push_str("\">");
    push_script_safe(&data, &mut out);
    out.push_str("</script>");
    out
}

/// Appends JSON text with `<`, `>`, `&`, U+2028 and U+2029 written as `\uXXXX` escapes. The
/// result is the same JSON value: outside strings, JSON text has none of these characters.
fn push_script_safe(json: &str, out: &mut String) {
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auction::{
        navigation_request, read_answer, respond, slots_for, Granularity, Outcome,
    };
    use proptest::prelude::*;
    use trusted_server_settings::{load, Auction};

    fn auction() -> Auction {
        let text = "[publisher]\ndomain = \"www.pub.example\"\norigin_url = \"https://origin.pub.example\"\n\
            [[auction.bidders]]\ncode = \"fast\"\nendpoint = \"https://fast.example/\"\n\
            [[auction.bidders]]\ncode = \"slow\"\nendpoint = \"https://slow.example/\"\n\
            [[auction.slots]]\nid = \"ad-top\"\npaths = [\"/ads.html\"]\nsizes = [[728, 90]]\n\
            bidders = { fast = {}, slow = {} }\n\
            [[auction.slots]]\nid = \"ad-side\"\npaths = [\"/ads.html\"]\nsizes = [[300, 250]]\n\
            bidders = { fast = {} }\n";
        load(text, std::iter::empty::<(&str, &str)>())
            .unwrap()
            .auction
    }

    fn request() -> BidRequest {
        let a = auction();
        let slots = slots_for(&a.slots, "/ads.html");
        navigation_request("nav-1", "https://www.pub.example/ads.html", &slots, &a)
    }

    /// The auction's answer for bidders' `(code, bids JSON)` through the endpoint's own
    /// reading and answering.
    fn answer(request: &BidRequest, bidders: &[(&str, Value)]) -> Value {
        let outcomes: Vec<(String, Outcome)> = (bidders.iter())
            .map(|(code, bids)| {
                let body = json!({"id": request.id, "cur": "USD", "seatbid": [{"bid": bids}]});
                let answer =
                    read_answer(200, body.to_string().as_bytes(), &request.imps, "USD").unwrap();
                ((*code).to_owned(), Outcome::Answered { answer, ms: 10 })
            })
            .collect();
        respond(request, &outcomes, &Granularity::Medium, "USD", 450, &[])
    }

    /// The text between the element's tags, parsed.
    fn data_of(script: &str) -> Value {
        let open = "<script type=\"application/json\" id=\"ts-bids\">";
        let inner = (script.strip_prefix(open))
            .and_then(|s| s.strip_suffix("</script>"))
            .expect("one data block");
        serde_json::from_str(inner).expect("JSON")
    }

    #[test]
    fn each_slot_gets_its_winning_bid_and_keys() {
        let r = request();
        let v = answer(
            &r,
            &[
                (
                    "fast",
                    json!([
                        {"id": "f1", "impid": "ad-top", "price": 1.0, "adm": "<b>f</b>", "w": 728, "h": 90},
                        {"id": "f2", "impid": "ad-side", "price": 0.7, "adm": "s", "w": 300, "h": 250,
                         "burl": "https://b.example/?p=${AUCTION_PRICE}", "crid": "c2", "adomain": ["a.example"]}
                    ]),
                ),
                (
                    "slow",
                    json!([{"id": "s1", "impid": "ad-top", "price": 2.5, "adm": "<i>s</i>", "w": 728, "h": 90}]),
                ),
            ],
        );
        let script = bids_script(&r, &v);
        let data = data_of(&script);
        assert_eq!(
            (data["v"].as_u64(), &data["id"], &data["cur"]),
            (Some(1), &json!("nav-1"), &json!("USD"))
        );
        // ad-top: slow's 2.50 beats fast's 1.00.
        assert_eq!(
            data["slots"]["ad-top"],
            json!({
                "bid": {"bidder": "slow", "id": "s1", "price": 2.5, "adm": "<i>s</i>", "w": 728, "h": 90,
                        "mtype": 1, "type": "banner"},
                "targeting": {"hb_pb": "2.50", "hb_bidder": "slow", "hb_size": "728x90"},
            })
        );
        let side = &data["slots"]["ad-side"]["bid"];
        assert_eq!(side["burl"], "https://b.example/?p=0.7");
        assert_eq!(
            (&side["crid"], &side["adomain"]),
            (&json!("c2"), &json!(["a.example"]))
        );
        // The markup's tags are escaped in the page's text.
        assert!(
            script.contains("\\u003ci\\u003es\\u003c/i\\u003e"),
            "{script}"
        );
    }

    #[test]
    fn a_slot_without_a_bid_is_null() {
        let r = request();
        let data = data_of(&bids_script(&r, &answer(&r, &[("fast", json!([]))])));
        assert_eq!(
            data["slots"],
            json!({
                "ad-top": {"bid": null, "targeting": {}},
                "ad-side": {"bid": null, "targeting": {}},
            })
        );
        // Not even an answer: still every slot, and valid.
        let data = data_of(&bids_script(&r, &json!({})));
        assert_eq!(data["slots"]["ad-top"]["bid"], Value::Null);
        assert_eq!(data["cur"], Value::Null);
    }

    /// Exactly one `</script` (any case) and no `<!--`, however hostile the values.
    fn assert_contained(script: &str) {
        let lower = script.to_ascii_lowercase();
        assert_eq!(lower.matches("</script").count(), 1, "{script}");
        assert!(lower.ends_with("</script>"), "{script}");
        assert!(!script.contains("<!--"), "{script}");
        let inner = &script[script.find('>').unwrap() + 1..script.len() - "</script>".len()];
        assert!(
            !inner.contains(['<', '>', '&', '\u{2028}', '\u{2029}']),
            "{inner}"
        );
    }

    #[test]
    fn a_bidders_markup_cannot_end_the_element() {
        let r = request();
        for adm in [
            "</script><script>alert(1)</script>",
            "</SCRIPT >",
            "<!--<script>",
            "]]></script>",
            "a\u{2028}b\u{2029}c & &amp; </ScRiPt",
        ] {
            let bids = json!([{"id": adm, "impid": "ad-top", "price": 1, "adm": adm, "crid": adm,
                               "adomain": [adm], "burl": adm, "w": 728, "h": 90}]);
            let script = bids_script(&r, &answer(&r, &[("fast", bids)]));
            assert_contained(&script);
            let bid = &data_of(&script)["slots"]["ad-top"]["bid"];
            assert_eq!(bid["adm"], adm);
            assert_eq!(bid["crid"], adm);
        }
    }

    proptest! {
        /// Any strings in a bid's fields: one element, and its data parses back to them.
        #[test]
        fn any_bid_strings_stay_inside_and_round_trip(
            adm in any::<String>(),
            crid in any::<String>(),
            burl in any::<String>(),
            nurl in any::<String>(),
            adomain in prop::collection::vec(any::<String>(), 0..3),
            dealid in any::<String>(),
            id in "[^\u{0}]{1,40}",
        ) {
            // `${AUCTION_PRICE}` is the one text the auction changes.
            prop_assume!(![&adm, &burl, &nurl].iter().any(|s| s.contains("${AUCTION_PRICE}")));
            let r = request();
            let bids = json!([{"id": id, "impid": "ad-side", "price": 1.25, "adm": adm,
                               "crid": crid, "burl": burl, "nurl": nurl, "adomain": adomain,
                               "dealid": dealid, "w": 300, "h": 250}]);
            let v = answer(&r, &[("fast", bids)]);
            let script = bids_script(&r, &v);
            assert_contained(&script);
            let data = data_of(&script);
            let bid = &data["slots"]["ad-side"]["bid"];
            prop_assert_eq!(&bid["adm"], &json!(adm));
            prop_assert_eq!(&bid["crid"], &json!(crid));
            prop_assert_eq!(&bid["burl"], &json!(burl));
            prop_assert_eq!(&bid["nurl"], &json!(nurl));
            prop_assert_eq!(&bid["dealid"], &json!(dealid));
            prop_assert_eq!(&bid["id"], &json!(id));
            if !adomain.is_empty() {
                prop_assert_eq!(&bid["adomain"], &json!(adomain));
            }
            // The whole data, not only these fields, is what `page_bids` built.
            prop_assert_eq!(data, page_bids(&r, &v));
        }
    }
}
