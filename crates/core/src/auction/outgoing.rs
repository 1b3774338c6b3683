//! The request each bidder receives: built by the edge from the page's request, never passed
//! through. The page says what it wants to sell (its impressions and each bidder's params);
//! the edge says who is asking (the first-party site, the reader's device and location, the
//! consent strings, the edge ID) and keeps back what this bidder may not have.
//!
//! | part | from | rule |
//! | --- | --- | --- |
//! | `imp` | the page | only the impressions that name this bidder; `imp.ext.bidder` = its params, and `imp.ext.prebid.bidder` holds only its own entry (an upstream Prebid Server reads that); other bidders' params never reach it |
//! | `site.domain`, `site.page` | the edge | the first-party host; the page's `site.page` only when it is a URL on that host |
//! | `device.ua`, `device.ip`/`ipv6` | the edge | the reader's `User-Agent` and address; the address truncated (IPv4 to /24, IPv6 to /56) unless [`BidderConsent::precise_geo`] |
//! | `device.geo` | the edge | country (alpha-3) and region; `lat`/`lon` only with [`BidderConsent::precise_geo`] |
//! | `user.eids` | the edge | the edge ID as an EID whose source is the publisher's domain, only with [`BidderConsent::edge_id`]; without it every ID the page sent (`user.id`, `buyeruid`, `eids`, `ext.eids`) is removed too |
//! | `regs`, `user.consent` | the edge | `regs.gdpr` from the rule of the reader's location; the TC string, US Privacy and GPP strings as the reader's cookies carried them; whatever else the page wrote there is replaced, but its `regs.coppa` is kept |
//! | `source.tid` | the edge | one per auction |
//! | `tmax` | the edge | the time this bidder has left |
//! | `cur` | the edge | the auction's one currency |
//!
//! Cookies and request headers are not part of it at all: the adapter sends this body with
//! a fresh set of headers.

use std::net::IpAddr;

use serde_json::{json, Map, Value};

use super::consent::BidderConsent;
use super::request::{BidRequest, Imp};
use crate::consent::cookies;

/// What the edge knows of the request, the same for every bidder.
#[derive(Debug, Clone, Default)]
pub struct Edge<'a> {
    /// The first-party host the page was served from (the request's `Host`).
    pub host: &'a str,
    /// The publisher's domain (`publisher.domain`): the EID source of the edge ID.
    pub publisher_domain: &'a str,
    /// The reader's `User-Agent`.
    pub user_agent: Option<&'a str>,
    /// The reader's address (the connection's, never a header).
    pub ip: Option<IpAddr>,
    /// The reader's location.
    pub geo: Option<Geo<'a>>,
    /// The reader's edge ID, when the decision allows one and the reader has one.
    pub edge_id: Option<&'a str>,
    /// `regs.gdpr`: the reader is under an opt-in rule.
    pub gdpr: bool,
    /// The consent strings of the reader's cookies.
    pub strings: ConsentStrings<'a>,
    /// `source.tid`: this auction's transaction ID.
    pub tid: &'a str,
    /// The auction's currency.
    pub currency: &'a str,
    /// The partner IDs the graph holds for the reader that the reader's decision allows
    /// (`ids::allowed_partners`), each under its partner's EID source: sent next to the edge
    /// ID, to the bidders that may get it.
    pub partner_eids: &'a [PartnerEid],
}

/// One partner's ID for the reader, as an EID: `{"source": …, "uids": [{"id": …, "atype": 3}]}`
/// (`atype` 3: an ID a partner defines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartnerEid {
    /// The partner's `eid_source` (a domain).
    pub source: String,
    /// The partner's ID for the reader.
    pub id: String,
}

/// The reader's location, as the platform's geolocation gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Geo<'a> {
    /// ISO 3166-1 alpha-3 country code (OpenRTB's `geo.country`).
    pub country: Option<&'a str>,
    /// ISO 3166-2 subdivision code, without the country (OpenRTB's `geo.region`).
    pub region: Option<&'a str>,
    /// Latitude and longitude.
    pub point: Option<(f64, f64)>,
}

/// The consent strings as the reader's cookies carried them (the first copy of each).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsentStrings<'a> {
    /// `euconsent-v2`.
    pub tcf: Option<&'a str>,
    /// `usprivacy` (or `us_privacy`).
    pub us_privacy: Option<&'a str>,
    /// `__gpp`.
    pub gpp: Option<&'a str>,
    /// `__gpp_sid`, as written (`2,7`).
    pub gpp_sid: Option<&'a str>,
}

impl<'a> ConsentStrings<'a> {
    /// The first copy of each consent cookie in a raw `Cookie` header, read as the consent
    /// decision reads cookies (`consent::cookies`).
    pub fn from_cookies(header: &'a str) -> Self {
        let mut strings = Self::default();
        for (name, value) in cookies(header) {
            let slot = match name {
                "euconsent-v2" => &mut strings.tcf,
                "usprivacy" | "us_privacy" => &mut strings.us_privacy,
                "__gpp" => &mut strings.gpp,
                "__gpp_sid" => &mut strings.gpp_sid,
                _ => continue,
            };
            if slot.is_none() && !value.is_empty() {
                *slot = Some(value);
            }
        }
        strings
    }
}

/// The bid request for the bidder `code` with `consent`, given `tmax_ms` to answer, or
/// `None` when no impression names it. `imps` returns the impressions it is asked about
/// (what its answer is checked against).
pub fn bidder_request(
    request: &BidRequest,
    code: &str,
    consent: &BidderConsent,
    edge: &Edge<'_>,
    tmax_ms: u64,
) -> Option<(Value, Vec<Imp>)> {
    let page_imps = request.json.get("imp")?.as_array()?;
    let mut imps = Vec::new();
    let mut asked = Vec::new();
    for (imp, read) in page_imps.iter().zip(&request.imps) {
        let Some((_, params)) = read.bidders.iter().find(|(c, _)| c == code) else {
            continue;
        };
        let mut imp = imp.clone();
        if let Some(fields) = imp.as_object_mut() {
            let mut ext = match fields.remove("ext") {
                Some(Value::Object(ext)) => ext,
                _ => Map::new(),
            };
            let mut prebid = match ext.remove("prebid") {
                Some(Value::Object(prebid)) => prebid,
                _ => Map::new(),
            };
            prebid.insert("bidder".into(), json!({ code: params }));
            ext.insert("prebid".into(), Value::Object(prebid));
            ext.insert("bidder".into(), params.clone());
            fields.insert("ext".into(), Value::Object(ext));
        }
        imps.push(imp);
        asked.push(read.clone());
    }
    if imps.is_empty() {
        return None;
    }
    let mut out = match &request.json {
        Value::Object(top) => top.clone(),
        _ => Map::new(),
    };
    out.insert("imp".into(), Value::Array(imps));
    out.insert("tmax".into(), json!(tmax_ms));
    out.insert("cur".into(), json!([edge.currency]));
    out.insert("site".into(), site(out.get("site"), edge.host));
    out.insert("device".into(), device(out.get("device"), consent, edge));
    let user = user(out.get("user"), consent, edge);
    out.insert("user".into(), user);
    let coppa = out.get("regs").and_then(|r| r.get("coppa")).cloned();
    out.insert("regs".into(), regs(edge, coppa));
    let mut source = match out.remove("source") {
        Some(Value::Object(source)) => source,
        _ => Map::new(),
    };
    source.insert("tid".into(), json!(edge.tid));
    out.insert("source".into(), Value::Object(source));
    Some((Value::Object(out), asked))
}

/// `site` with the first-party host as its domain, and as its page unless the page's own
/// URL is on that host.
fn site(page_site: Option<&Value>, host: &str) -> Value {
    let mut site = match page_site {
        Some(Value::Object(site)) => site.clone(),
        _ => Map::new(),
    };
    let on_host = |url: &str| {
        let rest = (url.strip_prefix("https://"))
            .or_else(|| url.strip_prefix("http://"))
            .unwrap_or("");
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        !host.is_empty() && authority.eq_ignore_ascii_case(host)
    };
    let page = match site.get("page").and_then(Value::as_str) {
        Some(page) if on_host(page) => page.to_owned(),
        _ => format!("https://{host}/"),
    };
    let domain = host.split(':').next().unwrap_or(host);
    site.insert("page".into(), json!(page));
    site.insert("domain".into(), json!(domain));
    Value::Object(site)
}

fn device(page_device: Option<&Value>, consent: &BidderConsent, edge: &Edge<'_>) -> Value {
    let mut device = match page_device {
        Some(Value::Object(device)) => device.clone(),
        _ => Map::new(),
    };
    for key in ["ua", "ip", "ipv6", "geo"] {
        device.remove(key);
    }
    if let Some(ua) = edge.user_agent {
        device.insert("ua".into(), json!(ua));
    }
    match edge.ip.map(|ip| truncated(ip, !consent.precise_geo)) {
        Some(IpAddr::V4(v4)) => {
            device.insert("ip".into(), json!(v4.to_string()));
        }
        Some(IpAddr::V6(v6)) => {
            device.insert("ipv6".into(), json!(v6.to_string()));
        }
        None => {}
    }
    if let Some(geo) = &edge.geo {
        let mut out = Map::new();
        if let Some(country) = geo.country {
            out.insert("country".into(), json!(country));
        }
        if let Some(region) = geo.region {
            out.insert("region".into(), json!(region));
        }
        if let (Some((lat, lon)), true) = (geo.point, consent.precise_geo) {
            out.insert("lat".into(), json!(lat));
            out.insert("lon".into(), json!(lon));
            // 2: IP address (OpenRTB's location type).
            out.insert("type".into(), json!(2));
        }
        if !out.is_empty() {
            device.insert("geo".into(), Value::Object(out));
        }
    }
    Value::Object(device)
}

/// `ip`, truncated when `truncate` is set: IPv4 to its /24, IPv6 to its /56 (Prebid
/// Server's defaults).
pub fn truncated(ip: IpAddr, truncate: bool) -> IpAddr {
    if !truncate {
        return ip;
    }
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            IpAddr::from([a, b, c, 0])
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 72) - 1);
            IpAddr::from(bits.to_be_bytes())
        }
    }
}

/// `user` with the edge ID as an EID where allowed, the page's IDs only where an ID is
/// allowed, and the TC string as the reader's cookie carried it.
fn user(page_user: Option<&Value>, consent: &BidderConsent, edge: &Edge<'_>) -> Value {
    let mut user = match page_user {
        Some(Value::Object(user)) => user.clone(),
        _ => Map::new(),
    };
    user.remove("consent");
    if let Some(Value::Object(ext)) = user.get_mut("ext") {
        ext.remove("consent");
    }
    if !consent.edge_id {
        for key in ["id", "buyeruid", "eids"] {
            user.remove(key);
        }
        if let Some(Value::Object(ext)) = user.get_mut("ext") {
            ext.remove("eids");
        }
    } else if let Some(id) = edge.edge_id {
        let mut ours = vec![json!({
            "source": edge.publisher_domain,
            "uids": [{ "id": id, "atype": 1 }],
        })];
        // The page's own EID for a source wins: a partner ID is added only for a source the
        // page did not send.
        let page_has = |source: &str| {
            (user.get("eids").and_then(Value::as_array))
                .is_some_and(|eids| eids.iter().any(|e| e["source"] == source))
        };
        for partner in edge.partner_eids {
            if !page_has(&partner.source) {
                ours.push(json!({
                    "source": partner.source,
                    "uids": [{ "id": partner.id, "atype": 3 }],
                }));
            }
        }
        match user.get_mut("eids") {
            Some(Value::Array(eids)) => eids.extend(ours),
            _ => {
                user.insert("eids".into(), Value::Array(ours));
            }
        }
    }
    if let Some(tcf) = edge.strings.tcf {
        user.insert("consent".into(), json!(tcf));
    }
    Value::Object(user)
}

/// `regs` from the reader's cookies; the page's `coppa` flag is kept (it can only restrict).
fn regs(edge: &Edge<'_>, coppa: Option<Value>) -> Value {
    let mut regs = Map::new();
    if let Some(coppa) = coppa {
        regs.insert("coppa".into(), coppa);
    }
    regs.insert("gdpr".into(), json!(u8::from(edge.gdpr)));
    if let Some(usp) = edge.strings.us_privacy {
        regs.insert("us_privacy".into(), json!(usp));
    }
    if let Some(gpp) = edge.strings.gpp {
        regs.insert("gpp".into(), json!(gpp));
    }
    if let Some(sid) = edge.strings.gpp_sid {
        let ids: Vec<i64> = (sid.split([',', '_']))
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        regs.insert("gpp_sid".into(), json!(ids));
    }
    Value::Object(regs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auction::read_request;
    use crate::consent::Reason;

    const PAGE: &str = r#"{
        "id": "auction-1",
        "tmax": 900,
        "site": {"page": "https://evil.example/x", "domain": "evil.example", "publisher": {"id": "p"}},
        "device": {"ua": "page-ua", "ip": "9.9.9.9", "w": 1280, "geo": {"lat": 1.0, "lon": 2.0}},
        "user": {"id": "u1", "buyeruid": "b1", "consent": "PAGE-TCF", "ext": {"eids": [{"source": "x.example", "uids": [{"id": "1"}]}]}},
        "regs": {"gdpr": 0, "coppa": 1, "ext": {"us_privacy": "1---"}},
        "source": {"tid": "page-tid", "ext": {"schain": {"ver": "1.0"}}},
        "imp": [
            {"id": "a", "banner": {"format": [{"w": 300, "h": 250}]},
             "ext": {"prebid": {"bidder": {"fast": {"p": 1}, "slow": {"q": 2}}, "adunitcode": "a"}}},
            {"id": "b", "native": {"request": "{}"},
             "ext": {"prebid": {"bidder": {"slow": {"q": 3}}}}}
        ]
    }"#;

    fn consent(edge_id: bool, precise_geo: bool) -> BidderConsent {
        BidderConsent {
            asked: true,
            reason: Reason::NotOptIn,
            edge_id,
            precise_geo,
        }
    }

    fn edge() -> Edge<'static> {
        Edge {
            host: "www.pub.example",
            publisher_domain: "pub.example",
            user_agent: Some("Reader/1.0"),
            ip: Some("203.0.113.77".parse().unwrap()),
            geo: Some(Geo {
                country: Some("DEU"),
                region: Some("BE"),
                point: Some((52.5, 13.4)),
            }),
            edge_id: Some("ec-1234"),
            gdpr: true,
            strings: ConsentStrings {
                tcf: Some("COOKIE-TCF"),
                us_privacy: None,
                gpp: Some("DBABMA~x"),
                gpp_sid: Some("2,7"),
            },
            tid: "tid-1",
            currency: "USD",
            partner_eids: &[],
        }
    }

    fn build(code: &str, consent: BidderConsent) -> Option<Value> {
        let request = read_request(PAGE.as_bytes()).unwrap();
        bidder_request(&request, code, &consent, &edge(), 700).map(|(v, _)| v)
    }

    #[test]
    fn a_bidder_sees_only_its_impressions_and_its_own_params() {
        let fast = build("fast", consent(true, true)).unwrap();
        let imps = fast["imp"].as_array().unwrap();
        assert_eq!(imps.len(), 1);
        assert_eq!(imps[0]["id"], "a");
        assert_eq!(imps[0]["ext"]["bidder"], json!({"p": 1}));
        assert_eq!(
            imps[0]["ext"]["prebid"]["bidder"],
            json!({"fast": {"p": 1}})
        );
        assert_eq!(imps[0]["ext"]["prebid"]["adunitcode"], "a");
        assert!(!fast.to_string().contains("\"q\""), "{fast}");
        let slow = build("slow", consent(true, true)).unwrap();
        assert_eq!(slow["imp"].as_array().unwrap().len(), 2);
        assert_eq!(build("other", consent(true, true)), None);
    }

    #[test]
    fn the_edge_says_who_is_asking() {
        let v = build("fast", consent(true, true)).unwrap();
        assert_eq!(v["tmax"], 700);
        assert_eq!(v["cur"], json!(["USD"]));
        assert_eq!(v["site"]["domain"], "www.pub.example");
        assert_eq!(v["site"]["page"], "https://www.pub.example/");
        assert_eq!(v["site"]["publisher"]["id"], "p");
        assert_eq!(v["device"]["ua"], "Reader/1.0");
        assert_eq!(v["device"]["w"], 1280);
        assert_eq!(v["device"]["ip"], "203.0.113.77");
        assert_eq!(
            v["device"]["geo"],
            json!({"country": "DEU", "region": "BE", "lat": 52.5, "lon": 13.4, "type": 2})
        );
        assert_eq!(v["source"]["tid"], "tid-1");
        assert_eq!(v["source"]["ext"]["schain"]["ver"], "1.0");
        assert_eq!(
            v["regs"],
            json!({"gdpr": 1, "coppa": 1, "gpp": "DBABMA~x", "gpp_sid": [2, 7]})
        );
        assert_eq!(v["user"]["consent"], "COOKIE-TCF");
        let eids = v["user"]["eids"].as_array().unwrap();
        assert_eq!(
            eids.last().unwrap(),
            &json!({"source": "pub.example", "uids": [{"id": "ec-1234", "atype": 1}]})
        );
        assert_eq!(v["user"]["id"], "u1");
    }

    #[test]
    fn partner_ids_go_next_to_the_edge_id_only_to_a_bidder_that_may_get_it() {
        let partners = [
            PartnerEid {
                source: "fast.example".into(),
                id: "F-1".into(),
            },
            // The page sent `x.example` only under `user.ext.eids`, not in `user.eids`: ours
            // is added.
            PartnerEid {
                source: "x.example".into(),
                id: "X-9".into(),
            },
        ];
        let request = read_request(PAGE.as_bytes()).unwrap();
        let edge = Edge {
            partner_eids: &partners,
            ..edge()
        };
        let with = |c| bidder_request(&request, "fast", &c, &edge, 700).unwrap().0;
        let v = with(consent(true, true));
        let eids = v["user"]["eids"].as_array().unwrap();
        let tail = &eids[eids.len() - 3..];
        assert_eq!(tail[0]["uids"][0]["id"], "ec-1234");
        assert_eq!(
            tail[1],
            json!({"source": "fast.example", "uids": [{"id": "F-1", "atype": 3}]})
        );
        assert_eq!(tail[2]["source"], "x.example");
        // A bidder that may not get the edge ID gets no partner ID either.
        let v = with(consent(false, false));
        assert!(
            !v.to_string().contains("F-1") && !v.to_string().contains("X-9"),
            "{v}"
        );
        // A reader without an edge ID has no partner IDs sent.
        let no_id = Edge {
            edge_id: None,
            ..edge.clone()
        };
        let v = bidder_request(&request, "fast", &consent(true, true), &no_id, 700)
            .unwrap()
            .0;
        assert!(!v.to_string().contains("F-1"), "{v}");
        // The page's own EID for a partner's source wins.
        let page = PAGE.replace(
            "\"user\": {",
            "\"user\": {\"eids\": [{\"source\": \"fast.example\", \"uids\": [{\"id\": \"PAGE\"}]}], ",
        );
        let request = read_request(page.as_bytes()).unwrap();
        let v = bidder_request(&request, "fast", &consent(true, true), &edge, 700)
            .unwrap()
            .0;
        let fast: Vec<&Value> = (v["user"]["eids"].as_array().unwrap().iter())
            .filter(|e| e["source"] == "fast.example")
            .collect();
        assert_eq!(fast.len(), 1, "{v}");
        assert_eq!(fast[0]["uids"][0]["id"], "PAGE");
    }

    #[test]
    fn without_consent_no_id_no_coordinates_and_a_truncated_address() {
        let v = build("fast", consent(false, false)).unwrap();
        let user = v["user"].as_object().unwrap();
        for key in ["id", "buyeruid", "eids"] {
            assert!(!user.contains_key(key), "{key}: {v}");
        }
        assert!(v["user"]["ext"].get("eids").is_none(), "{v}");
        assert!(!v.to_string().contains("ec-1234"));
        assert_eq!(v["device"]["ip"], "203.0.113.0");
        assert_eq!(
            v["device"]["geo"],
            json!({"country": "DEU", "region": "BE"})
        );
        assert!(!v.to_string().contains("9.9.9.9"));
    }

    #[test]
    fn a_page_url_on_the_first_party_host_is_kept() {
        let mut request = read_request(PAGE.as_bytes()).unwrap();
        request.json["site"]["page"] = json!("https://WWW.pub.example/news/a?x=1");
        let (v, _) = bidder_request(&request, "fast", &consent(true, true), &edge(), 5).unwrap();
        assert_eq!(v["site"]["page"], "https://WWW.pub.example/news/a?x=1");
        for evil in [
            "https://www.pub.example.evil/",
            "https://www.pub.example@evil/",
        ] {
            request.json["site"]["page"] = json!(evil);
            let (v, _) =
                bidder_request(&request, "fast", &consent(true, true), &edge(), 5).unwrap();
            assert_eq!(v["site"]["page"], "https://www.pub.example/", "{evil}");
        }
    }

    #[test]
    fn addresses_truncate_to_the_documented_prefixes() {
        let v6: IpAddr = "2001:db8:1234:5678:9abc:def0:1234:5678".parse().unwrap();
        assert_eq!(
            truncated(v6, true),
            "2001:db8:1234:5600::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(truncated(v6, false), v6);
    }

    #[test]
    fn consent_strings_are_the_first_copy_of_each_cookie() {
        let s = ConsentStrings::from_cookies(
            "a=1; euconsent-v2=\"T1\"; usprivacy=1YNN; euconsent-v2=T2; __gpp=G; __gpp_sid=7; us_privacy=1NNN",
        );
        assert_eq!(s.tcf, Some("T1"));
        assert_eq!(s.us_privacy, Some("1YNN"));
        assert_eq!(s.gpp, Some("G"));
        assert_eq!(s.gpp_sid, Some("7"));
        assert_eq!(ConsentStrings::from_cookies(""), ConsentStrings::default());
    }
}
