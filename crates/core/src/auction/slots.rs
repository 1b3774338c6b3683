//! The ad slots of a page (`[[auction.slots]]`), and the bid request a navigation's auction
//! asks for them: the same [`BidRequest`] [`read_request`](super::read_request) gives the
//! endpoint, so the one orchestrator (consent, deadline, [`bidder_request`](super::bidder_request),
//! [`respond`](super::respond)) serves both.
//!
//! A slot's `paths` are exact paths (`/ads.html`) or prefixes ending in `*` (`/news/*`), matched
//! against the request's path alone, case-sensitively (the settings refuse anything else).
//!
//! The request is what Prebid.js would post for the same ad units:
//!
//! | part | value |
//! | --- | --- |
//! | `id` | the auction's ID, given |
//! | `imp[]` | one per matching slot, in the order the slots are written: `id` and `tagid` the element id, `banner.format` its sizes, `secure` 1 on an `https` page, `bidfloor` and `bidfloorcur` (the auction's currency) when it has a floor, `ext.prebid.bidder` its bidders' params |
//! | `tmax` | `auction.navigation_timeout_ms` (the orchestrator keeps `auction.margin_ms` of it) |
//! | `site.page` | the page's URL, given (`https://host/path?query`: the edge keeps it only on the first-party host) |
//! | `ext.prebid.targeting` | `includewinners`, not `includebidderkeys`: the winner's `hb_*` keys per slot |
//!
//! No price granularity is named, so `auction.price_granularity` buckets `hb_pb`. Who is
//! asking (device, user, consent strings, `regs`) is the edge's to add per bidder, as for any
//! request.

use serde_json::{json, Map, Value};
use trusted_server_settings::{Auction, Slot};

use super::request::{BidRequest, Imp, Media};

/// Whether `path` (a request's path; a query or fragment is ignored) is one `pattern` names:
/// the same path, or, for a pattern ending in `*`, any path that starts with what precedes it.
pub fn path_matches(pattern: &str, path: &str) -> bool {
    let path = path.split(['?', '#']).next().unwrap_or(path);
    match pattern.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => path == pattern,
    }
}

/// The slots on the page at `path`, in the order they are written.
pub fn slots_for<'s>(slots: &'s [Slot], path: &str) -> Vec<&'s Slot> {
    (slots.iter())
        .filter(|slot| slot.paths.iter().any(|p| path_matches(p, path)))
        .collect()
}

/// The bid request of a navigation's auction `id` for `slots` on the page at `page_url`,
/// under `auction`'s currency and navigation timeout. With no slot it has no impression, and
/// so asks no bidder ([`page_slots`](super::page_slots) gives at least one).
pub fn navigation_request(
    id: &str,
    page_url: &str,
    slots: &[&Slot],
    auction: &Auction,
) -> BidRequest {
    let secure = page_url.starts_with("https://");
    let mut imps_json = Vec::with_capacity(slots.len());
    let mut imps = Vec::with_capacity(slots.len());
    for slot in slots {
        let (imp_json, imp) = imp(slot, secure, &auction.currency);
        imps_json.push(imp_json);
        imps.push(imp);
    }
    let tmax_ms = u64::from(auction.navigation_timeout_ms);
    let json = json!({
        "id": id,
        "imp": imps_json,
        "tmax": tmax_ms,
        "cur": [&*auction.currency],
        "site": { "page": page_url },
        "ext": { "prebid": { "targeting": {
            "includewinners": true,
            "includebidderkeys": false,
        } } },
    });
    BidRequest {
        id: id.to_owned(),
        imps,
        tmax_ms: Some(tmax_ms),
        json,
    }
}

/// One slot's impression, as JSON and as read.
fn imp(slot: &Slot, secure: bool, currency: &str) -> (Value, Imp) {
    let formats: Vec<Value> = (slot.sizes.iter())
        .map(|s| json!({ "w": s.w, "h": s.h }))
        .collect();
    let mut bidders = Map::new();
    for bidder in slot.bidders.iter() {
        // Validated JSON objects at load; an empty object should one ever not parse.
        let params = serde_json::from_str(&bidder.params).unwrap_or_else(|_| json!({}));
        bidders.insert(bidder.code.to_string(), params);
    }
    let mut fields = Map::new();
    fields.insert("id".into(), json!(slot.id));
    fields.insert("tagid".into(), json!(slot.id));
    fields.insert("banner".into(), json!({ "format": formats }));
    if secure {
        fields.insert("secure".into(), json!(1));
    }
    let bidfloor = f64::from(slot.floor_micros) / 1e6;
    let bidfloorcur = (slot.floor_micros > 0).then(|| currency.to_owned());
    if let Some(cur) = &bidfloorcur {
        fields.insert("bidfloor".into(), json!(bidfloor));
        fields.insert("bidfloorcur".into(), json!(cur));
    }
    // The order the endpoint reads them in: the map's own.
    let read_bidders = (bidders.iter())
        .map(|(code, params)| (code.clone(), params.clone()))
        .collect();
    fields.insert(
        "ext".into(),
        json!({ "prebid": { "bidder": Value::Object(bidders) } }),
    );
    let imp = Imp {
        id: slot.id.to_string(),
        media: Media {
            banner: true,
            ..Media::default()
        },
        bidfloor,
        bidfloorcur,
        bidders: read_bidders,
    };
    (Value::Object(fields), imp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auction::read_request;
    use proptest::prelude::*;
    use trusted_server_settings::load;

    /// Settings with the demo's bidders and three slots.
    fn auction() -> Auction {
        let text = "[publisher]\ndomain = \"www.pub.example\"\norigin_url = \"https://origin.pub.example\"\n\
            [auction]\nnavigation_timeout_ms = 400\ncurrency = \"EUR\"\n\
            [[auction.bidders]]\ncode = \"fast\"\nendpoint = \"https://fast.example/\"\n\
            [[auction.bidders]]\ncode = \"slow\"\nendpoint = \"https://slow.example/\"\n\
            [[auction.slots]]\nid = \"ad-top\"\npaths = [\"/ads.html\", \"/news/*\"]\n\
            sizes = [[728, 90], [970, 250]]\nfloor = 0.1\n\
            bidders = { slow = { zone = \"top\" }, fast = { placement = 1, tags = [\"a\", \"b\"] } }\n\
            [[auction.slots]]\nid = \"ad-side\"\npaths = [\"/ads.html\"]\nsizes = [[300, 250]]\n\
            bidders = { fast = {} }\n\
            [[auction.slots]]\nid = \"ad-all\"\npaths = [\"/*\"]\nsizes = [[1, 1]]\n\
            bidders = { slow = {} }\n";
        load(text, std::iter::empty::<(&str, &str)>())
            .unwrap()
            .auction
    }

    fn ids(slots: &[&Slot]) -> Vec<String> {
        slots.iter().map(|s| s.id.to_string()).collect()
    }

    #[test]
    fn patterns_match_exact_paths_and_prefixes() {
        // (pattern, path, matches)
        let cases = [
            ("/ads.html", "/ads.html", true),
            ("/ads.html", "/ads.html?x=1", true),
            ("/ads.html", "/ads.html#top", true),
            ("/ads.html", "/ads.htm", false),
            ("/ads.html", "/ads.html/", false),
            ("/ads.html", "/ADS.html", false),
            ("/ads.html", "/x/ads.html", false),
            ("/news/*", "/news/", true),
            ("/news/*", "/news/a/b", true),
            ("/news/*", "/news", false),
            ("/news/*", "/newsletter", false),
            ("/news*", "/newsletter", true),
            ("/*", "/", true),
            ("/*", "/anything?q", true),
            ("/", "/", true),
            ("/", "/?q=1", true),
            ("/", "/a", false),
        ];
        for (pattern, path, expected) in cases {
            assert_eq!(path_matches(pattern, path), expected, "{pattern} {path}");
        }
    }

    #[test]
    fn a_page_has_the_slots_whose_paths_match_in_written_order() {
        let a = auction();
        assert_eq!(
            ids(&slots_for(&a.slots, "/ads.html")),
            ["ad-top", "ad-side", "ad-all"]
        );
        assert_eq!(
            ids(&slots_for(&a.slots, "/news/today")),
            ["ad-top", "ad-all"]
        );
        assert_eq!(ids(&slots_for(&a.slots, "/about")), ["ad-all"]);
        assert!(slots_for(&a.slots[..2], "/about").is_empty());
    }

    #[test]
    fn the_request_is_what_prebid_js_would_post_for_the_slots() {
        let a = auction();
        let slots = slots_for(&a.slots, "/ads.html");
        let r = navigation_request("nav-1", "https://www.pub.example/ads.html?x=1", &slots, &a);
        assert_eq!(r.id, "nav-1");
        assert_eq!(r.tmax_ms, Some(400));
        let j = &r.json;
        assert_eq!(j["site"]["page"], "https://www.pub.example/ads.html?x=1");
        assert_eq!(j["cur"], json!(["EUR"]));
        assert_eq!(j["ext"]["prebid"]["targeting"]["includewinners"], true);
        assert_eq!(j["ext"]["prebid"]["targeting"]["includebidderkeys"], false);
        let top = &j["imp"][0];
        assert_eq!(top["id"], "ad-top");
        assert_eq!(
            top["banner"]["format"],
            json!([{"w": 728, "h": 90}, {"w": 970, "h": 250}])
        );
        assert_eq!(
            (top["bidfloor"].as_f64(), &top["bidfloorcur"]),
            (Some(0.1), &json!("EUR"))
        );
        assert_eq!(top["secure"], 1);
        assert_eq!(
            top["ext"]["prebid"]["bidder"],
            json!({"fast": {"placement": 1, "tags": ["a", "b"]}, "slow": {"zone": "top"}})
        );
        // No floor: none written, none read.
        assert!(j["imp"][1].get("bidfloor").is_none());
        assert_eq!(r.imps[1].bidfloor, 0.0);
        // An http page is not secure.
        let plain = navigation_request("n", "http://www.pub.example/", &slots, &a);
        assert!(plain.json["imp"][0].get("secure").is_none());
        let none = navigation_request("n", "https://www.pub.example/", &[], &a);
        assert!(none.imps.is_empty() && none.json["imp"] == json!([]));
    }

    /// A TOML basic string for `s` (JSON's escapes are TOML's, and `s` has no DEL).
    fn toml_string(s: &str) -> String {
        serde_json::to_string(s).unwrap()
    }

    /// A TOML literal for a JSON scalar.
    fn toml_value(v: &Value) -> String {
        match v {
            Value::String(s) => toml_string(s),
            Value::Number(n) if n.is_f64() => format!("{:?}", n.as_f64().unwrap()),
            other => other.to_string(),
        }
    }

    proptest! {
        /// Params of any strings and numbers, written in TOML, reach the bidder's impression
        /// as the same JSON: the settings' own JSON writer is held to serde_json's reading.
        #[test]
        fn any_params_reach_the_request_unchanged(
            params in prop::collection::btree_map(
                "[^\u{7f}]{0,12}",
                prop_oneof![
                    "[^\u{7f}]{0,24}".prop_map(Value::from),
                    any::<i64>().prop_map(Value::from),
                    // Decimals as people write them: a float of 17 significant digits may
                    // come back one unit in the last place off (serde_json's default
                    // reading, as for a page's own params at the endpoint).
                    (-1_000_000_000_000i64..1_000_000_000_000)
                        .prop_map(|n| Value::from(n as f64 / 1000.0)),
                    any::<bool>().prop_map(Value::from),
                ],
                0..6,
            ),
        ) {
            let table: Vec<String> = (params.iter())
                .map(|(k, v)| format!("{} = {}", toml_string(k), toml_value(v)))
                .collect();
            let slots = format!(
                "[{{ id = \"s\", paths = [\"/*\"], sizes = [[1, 1]], bidders = {{ fast = {{ {} }} }} }}]",
                table.join(", ")
            );
            let env = [
                ("TRUSTED_SERVER__AUCTION__BIDDERS", "[{ code = \"fast\", endpoint = \"https://f.example/\" }]".to_owned()),
                ("TRUSTED_SERVER__AUCTION__SLOTS", slots),
            ];
            let text = "[publisher]\ndomain = \"p.example\"\norigin_url = \"https://o.example\"\n";
            let a = load(text, env).unwrap().auction;
            let r = navigation_request("n", "https://p.example/", &slots_for(&a.slots, "/"), &a);
            let expected: Map<String, Value> = params.into_iter().collect();
            prop_assert_eq!(&r.imps[0].bidders[0].1, &Value::Object(expected));
        }
    }

    /// The request read back by the endpoint's own reader is the request built: both auctions
    /// are one auction.
    #[test]
    fn the_endpoint_reads_the_request_as_built() {
        let a = auction();
        for path in ["/ads.html", "/news/x", "/about"] {
            let slots = slots_for(&a.slots, path);
            let built = navigation_request("nav-2", "https://www.pub.example/", &slots, &a);
            let read = read_request(&serde_json::to_vec(&built.json).unwrap()).unwrap();
            assert_eq!(read, built, "{path}");
        }
    }
}
