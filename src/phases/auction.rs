//! Running an auction: a read bid request's bidders looked up in the settings and checked
//! against the reader's consent, every allowed bidder asked at once (`phases::bidders`), and,
//! once collected, the answer put together by the core
//! (`trusted_server_core::auction::respond`). One orchestrator for both kinds of auction: the
//! endpoint's (`flows::auction`) starts and finishes at once; a navigation's
//! (`flows::publisher_proxy`) is planned from the reader's request ([`for_page`]), started
//! after the origin request ([`Bidding`]: while a slow origin thinks, else once the page's
//! first bytes have left), its answers read as they come while the page streams
//! ([`Running::read_ready`]), and finished when the page's body has ended, so the page
//! streams while the bidders think.
//!
//! The deadline: the smaller of the request's `tmax` less `auction.margin_ms`, and
//! `auction.timeout_ms`, counted from [`start`]; each bidder is also cut off at its own
//! `timeout_ms`, and is told in its request's `tmax` how long it has. A bidder's fault costs
//! only its own bids.

use std::net::IpAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use fastly::Request;
use trusted_server_core::auction::{
    anyone_asked, bidder_request, first_party_creative, granularity_of, navigation_request,
    page_slots, read_answer, respond, BidRequest, BidderConsent, BidderError, ConsentStrings, Edge,
    Geo, Granularity, Imp, Outcome, PageRequest, PartnerEid, Skip,
};
use trusted_server_core::consent::Decision;
use trusted_server_core::first_party::creative::Signer;
use trusted_server_core::first_party::proxy::signer;
use trusted_server_core::Settings;
use trusted_server_settings::{Bidder, Rendering, Scheme, Slot};

use crate::kit::{partner, signed_url};
use crate::phases::bidders::{self, send_all, Asked, Call, Collected};
use crate::phases::client::{self, Client};

/// Who asks, as the edge adds it to every bidder's request.
pub struct Asker<'r> {
    /// The host the page was asked for (`site.domain`, the page's own host).
    pub host: &'r str,
    /// The reader's edge ID, when their consent lets bidders see it.
    pub edge_id: Option<&'r str>,
}

/// What an auction reads of the reader's request, copied out of it, so that an auction
/// decided on before the request goes to the origin ([`Planned`]) can start after.
pub struct Reader<'r> {
    /// Who asks.
    asker: Asker<'r>,
    ip: Option<IpAddr>,
    user_agent: Option<String>,
    cookies: String,
    /// The page's scheme: the markup is written into a frame of the page that asked.
    page_scheme: Scheme,
}

impl<'r> Reader<'r> {
    /// The reader of `request`: its address, `User-Agent`, cookies and scheme.
    pub fn of(request: &Request, asker: Asker<'r>) -> Self {
        Reader {
            asker,
            ip: crate::kit::incoming::client_ip(),
            // Lossy: `get_header_str` panics on a value that is not UTF-8, which any client
            // can send.
            user_agent: (request.get_header_str_lossy("user-agent")).map(|ua| ua.into_owned()),
            cookies: request.get_header_all_str_lossy("cookie").join("; "),
            page_scheme: client::scheme(),
        }
    }
}

/// A navigation's auction decided on ([`for_page`], [`for_slots`]) and not yet started: the
/// page's slots, its URL and its reader. The flow starts it once the origin has been asked,
/// so that neither the bid request's making nor any bidder's request delays the origin's.
pub struct Planned<'r> {
    slots: Vec<&'r Slot>,
    page_url: String,
    reader: Reader<'r>,
    /// The reader's partner IDs, read when the bidders are asked (a store lookup the flow
    /// started earlier, so the page never waits for it).
    partner_eids: Option<Box<dyn FnOnce() -> Vec<PartnerEid> + 'r>>,
}

impl<'r> Planned<'r> {
    /// The same auction, with the reader's partner IDs from `eids` when it starts.
    pub fn with_partner_eids(self, eids: impl FnOnce() -> Vec<PartnerEid> + 'r) -> Self {
        Planned {
            partner_eids: Some(Box::new(eids)),
            ..self
        }
    }

    /// Makes the bid request of the page's slots and asks the bidders ([`start`]).
    pub fn start<'s>(self, settings: &'s Settings, decision: &Decision) -> Running<'s> {
        let id = transaction_id();
        let bid_request = navigation_request(&id, &self.page_url, &self.slots, &settings.auction);
        let eids = self.partner_eids.map(|eids| eids()).unwrap_or_default();
        start(&self.reader, bid_request, &eids, settings, decision)
    }
}

/// An auction whose bidders were asked ([`start`]) and are not yet collected: the platform
/// carries the requests meanwhile. Dropping it abandons them.
pub struct Running<'s> {
    request: BidRequest,
    deadline_ms: u64,
    granularity: Granularity,
    warnings: Vec<String>,
    page_scheme: Scheme,
    /// Per bidder named, in the order first named: its code and outcome so far.
    outcomes: Vec<(String, Outcome)>,
    /// Per call: its place in `outcomes`, the impressions it was asked about, its bidder.
    calls: Vec<(usize, Vec<Imp>, &'s Bidder)>,
    /// The calls in flight, until their answers are read (`None` after).
    asked: Option<Asked>,
    /// The signer of a first-party bidder's creatives, read while the bidders think (`None`
    /// when no such bidder was asked, or the key could not be read, which is logged).
    signer: Option<Rc<Signer>>,
}

/// A navigation's auction as the page's body carries it: its bidders asked already, or to be
/// asked once the reader's first bytes have left ([`Bidding::asked`]), whichever the flow
/// chose. Dropping it abandons the bidders, or never asks them.
pub enum Bidding<'a> {
    /// The bidders were asked.
    Asked(Running<'a>),
    /// Not yet: [`Bidding::asked`] asks them.
    Waiting {
        /// The auction decided on.
        planned: Planned<'a>,
        /// The settings it runs with.
        settings: &'a Settings,
        /// The reader's consent, which chooses the bidders.
        decision: &'a Decision<'a>,
    },
}

impl<'a> Bidding<'a> {
    /// The auction with its bidders asked: asked now if they were not yet.
    pub fn asked(self) -> Running<'a> {
        match self {
            Bidding::Asked(running) => running,
            Bidding::Waiting {
                planned,
                settings,
                decision,
            } => planned.start(settings, decision),
        }
    }

    /// Whether the bidders were asked.
    pub fn is_asked(&self) -> bool {
        matches!(self, Bidding::Asked(_))
    }
}

/// Starts the auction of `bid_request` for `reader`: every bidder it names that the
/// settings know and the reader's `decision` allows is asked at once; `partner_eids` (the
/// reader's partner IDs their decision allows) go to each bidder that may get the edge ID.
pub fn start<'s>(
    reader: &Reader,
    bid_request: BidRequest,
    partner_eids: &[PartnerEid],
    settings: &'s Settings,
    decision: &Decision,
) -> Running<'s> {
    let start = Instant::now();
    let Reader {
        asker,
        ip,
        user_agent,
        cookies,
        page_scheme,
    } = reader;
    let (ip, page_scheme) = (*ip, *page_scheme);
    let a = &settings.auction;
    let deadline_ms = match bid_request.tmax_ms {
        Some(tmax) => tmax
            .saturating_sub(a.margin_ms.into())
            .min(a.timeout_ms.into()),
        None => a.timeout_ms.into(),
    };
    let deadline = start + Duration::from_millis(deadline_ms);
    let (granularity, granularity_warning) = granularity_of(&bid_request, a.price_granularity);

    // Looked up once per request: the consent phase has read it already.
    let geo = ip.and_then(crate::kit::geo::of);
    let tid = transaction_id();
    let edge = Edge {
        host: asker.host,
        publisher_domain: &settings.publisher.domain,
        user_agent: user_agent.as_deref(),
        ip,
        geo: geo.as_ref().map(|g| Geo {
            country: Some(g.country_code3()).filter(|c| !c.is_empty()),
            region: g.region(),
            point: Some((g.latitude(), g.longitude())),
        }),
        edge_id: asker.edge_id,
        gdpr: decision.rule == trusted_server_settings::ConsentRule::OptIn,
        strings: ConsentStrings::from_cookies(cookies),
        tid: &tid,
        currency: &a.currency,
        partner_eids,
    };

    // Each bidder code the page names, once, in the order first named.
    let mut codes: Vec<&str> = Vec::new();
    for imp in &bid_request.imps {
        for (code, _) in &imp.bidders {
            if !codes.contains(&code.as_str()) {
                codes.push(code);
            }
        }
    }
    // The signing key only when a bidder is signed: a Secret Store read per auction otherwise.
    let key = match a.bidders.iter().any(|b| b.signed) {
        true => partner::key(settings),
        false => partner::Key::Disabled,
    };
    let mut outcomes: Vec<(String, Outcome)> = Vec::with_capacity(codes.len());
    let mut sending = Vec::new();
    let mut calls = Vec::new();
    for code in codes {
        // Exactly as written: Prebid.js's codes are case-sensitive.
        let Some(bidder) = (a.bidders.iter()).find(|b| b.code == code) else {
            outcomes.push((code.to_owned(), Outcome::Unknown));
            continue;
        };
        let consent = BidderConsent::of(decision, bidder.vendor_id);
        if !consent.asked {
            outcomes.push((code.to_owned(), Outcome::NotAllowed(consent.reason)));
            continue;
        }
        let bidder_deadline = deadline.min(start + Duration::from_millis(bidder.timeout_ms.into()));
        let tmax = bidder_deadline.saturating_duration_since(Instant::now());
        let tmax_ms = u64::try_from(tmax.as_millis()).unwrap_or(u64::MAX);
        if tmax_ms == 0 {
            // No time left (a `tmax` at or below the margin): not worth a request.
            outcomes.push((code.to_owned(), Outcome::TimedOut { ms: 0 }));
            continue;
        }
        let Some((body, imps)) = bidder_request(&bid_request, code, &consent, &edge, tmax_ms)
        else {
            continue;
        };
        match outgoing(bidder, &body, &key, settings) {
            Ok(call) => {
                calls.push((outcomes.len(), imps, bidder));
                outcomes.push((code.to_owned(), Outcome::TimedOut { ms: deadline_ms }));
                sending.push(Call {
                    deadline: bidder_deadline,
                    ..call
                });
            }
            Err(why) => outcomes.push((code.to_owned(), Outcome::Unreachable { why, ms: 0 })),
        }
    }
    let asked = send_all(sending, start);
    // Read once the bidders are on their way, so the Secret Store's round trip is not added
    // after their answers (where a navigation's last byte waits for it).
    let first_party = (calls.iter()).any(|(_, _, b)| b.rendering == Rendering::FirstParty);
    let signer = first_party.then(|| creative_signer(settings)).flatten();
    Running {
        request: bid_request,
        deadline_ms,
        granularity,
        warnings: granularity_warning.into_iter().collect(),
        page_scheme,
        outcomes,
        calls,
        asked: Some(asked),
        signer,
    }
}

impl Running<'_> {
    /// Takes in, without waiting, what the bidders have sent so far; once every bidder is
    /// done, reads their answers ([`Self::read_all`]) now. Whether the answers are read (now or
    /// before). A navigation calls it after each part of its page it sends, so that the
    /// page's end, which waits for the bids, finds them read.
    pub fn read_ready(&mut self, settings: &Settings) -> bool {
        let done = self.asked.as_mut().is_none_or(Asked::read_ready);
        if done {
            self.read_all(settings);
        }
        done
    }

    /// Waits for the bidders still open until their deadlines and reads every answer (a
    /// first-party bidder's creatives made first-party); once: [`Self::finish`] then only puts
    /// the answer together.
    pub fn read_all(&mut self, settings: &Settings) {
        let Some(asked) = self.asked.take() else {
            return;
        };
        let a = &settings.auction;
        let collected = asked.collect();
        for ((place, imps, bidder), got) in
            std::mem::take(&mut self.calls).into_iter().zip(collected)
        {
            let outcome = match got {
                Collected::Whole { status, body, ms } => {
                    match read_answer(status, &body, &imps, &a.currency) {
                        Ok(mut answer) => {
                            // Only a first-party bidder's bids (the key was read at the start).
                            let first_party = bidder.rendering == Rendering::FirstParty;
                            if let Some(signer) = self.signer.as_ref().filter(|_| first_party) {
                                for bid in &mut answer.bids {
                                    first_party_creative(bid, signer, self.page_scheme);
                                }
                            }
                            Outcome::Answered { answer, ms }
                        }
                        Err(error) => Outcome::Refused { error, ms },
                    }
                }
                Collected::TooLarge { ms } => Outcome::Refused {
                    error: BidderError::TooLarge,
                    ms,
                },
                Collected::Unreadable { why, ms } => Outcome::Refused {
                    error: BidderError::NotOpenRtb(why),
                    ms,
                },
                Collected::Failed { why, ms } => Outcome::Unreachable { why, ms },
                Collected::Late { ms } => Outcome::TimedOut { ms },
            };
            self.outcomes[place].1 = outcome;
        }
    }

    /// Waits for the bidders until their deadlines, reads their answers (a first-party
    /// bidder's creatives made first-party) and puts the auction's answer together: the
    /// answer, and the request it answers.
    pub fn finish(mut self, settings: &Settings) -> (serde_json::Value, BidRequest) {
        self.read_all(settings);
        let answer = respond(
            &self.request,
            &self.outcomes,
            &self.granularity,
            &settings.auction.currency,
            self.deadline_ms,
            &self.warnings,
        );
        (answer, self.request)
    }

    /// [`Self::finish`], as the data of the page's bids (`trusted_server_core::auction::page_bids`).
    pub fn page_bids(self, settings: &Settings) -> serde_json::Value {
        let (answer, request) = self.finish(settings);
        trusted_server_core::auction::page_bids(&request, &answer)
    }

    /// [`Self::finish`], as the page's data block of bids (`#ts-bids`,
    /// `trusted_server_core::auction::bids_script`), for the page of a navigation's auction.
    pub fn bids_script(self, settings: &Settings) -> String {
        let (answer, request) = self.finish(settings);
        trusted_server_core::auction::bids_script(&request, &answer)
    }
}

/// The signer of winning creatives' URLs (`rendering = "first-party"`): the first-party
/// proxy's key and policy, good for `first_party.page_ttl_secs` (the page may show the ad a
/// while). Without the key the creatives go as the bidders sent them, and the log says so.
fn creative_signer(settings: &Settings) -> Option<Rc<Signer>> {
    let fp = &settings.first_party;
    let key = signed_url::read_key(fp).and_then(|key| Ok((key, signed_url::now()?)));
    match key {
        Ok((key, now)) => {
            let expires = now + u64::from(fp.page_ttl_secs);
            Some(Rc::new(signer(key, signed_url::policy(fp), expires)))
        }
        Err(e) => {
            log::error!("auction creatives sent as the bidders wrote them: {e}");
            None
        }
    }
}

/// The OpenRTB request to `bidder`: its endpoint, the body, the version header.
fn outgoing(
    bidder: &Bidder,
    body: &serde_json::Value,
    key: &partner::Key,
    settings: &Settings,
) -> Result<Call, String> {
    let request = bidders::post(bidder, &bidder.path_and_query, body.to_string())
        .with_header("x-openrtb-version", "2.6");
    bidders::call(request, bidder, key, settings)
}

/// A navigation's auction, decided on with the page's request (before the cache and the
/// origin are asked): the page's slots (`[[auction.slots]]`) and the reader's consent allow
/// one (`trusted_server_core::auction::page_slots`, `anyone_asked`), or why there is none.
/// The page is asked for at `client`'s scheme and authority, so `site.page` is the address
/// the reader sees.
pub fn for_page<'r, 'd>(
    request: &Request,
    client: &'r Client,
    edge_id: Option<&'r str>,
    settings: &'r Settings,
    decision: impl FnOnce() -> &'d Decision<'d>,
) -> Result<Planned<'r>, &'static str> {
    let path = request.get_path();
    // Built only once the page has slots: every proxied request comes through here.
    let page_url = || match request.get_query_str() {
        Some(query) => format!("{}://{}{path}?{query}", client.scheme, client.authority),
        None => format!("{}://{}{path}", client.scheme, client.authority),
    };
    let page = page_request(request, path, client.navigation);
    let asker = Asker {
        host: &client.authority,
        edge_id,
    };
    for_slots(request, &page, page_url, asker, settings, decision)
}

/// The parts of `request` the navigation decision reads, for the page at `path`; `document`:
/// whether it is a navigation to a page (a single-page app's own fetch for its next page
/// counts as one). The purpose and `User-Agent` headers are read only for a `GET` of a
/// document, the only request whose auction they can refuse.
pub fn page_request<'r>(request: &'r Request, path: &'r str, document: bool) -> PageRequest<'r> {
    let method = request.get_method_str();
    let read = document && method == "GET";
    let header = |name: &str| match read {
        true => request.get_header(name).and_then(|v| v.to_str().ok()),
        false => None,
    };
    PageRequest {
        method,
        path,
        document,
        sec_purpose: header("sec-purpose"),
        purpose: header("purpose"),
        x_purpose: header("x-purpose"),
        x_moz: header("x-moz"),
        user_agent: header("user-agent"),
    }
}

/// The auction of the slots on `page` (at the URL `page_url` gives, asked only when it has
/// slots) for the reader of `request`, planned, or why there is none. The reader's consent
/// `decision` is asked for only once the page has slots.
pub fn for_slots<'r, 'd>(
    request: &Request,
    page: &PageRequest,
    page_url: impl FnOnce() -> String,
    asker: Asker<'r>,
    settings: &'r Settings,
    decision: impl FnOnce() -> &'d Decision<'d>,
) -> Result<Planned<'r>, &'static str> {
    let a = &settings.auction;
    let slots = page_slots(a, page).map_err(Skip::as_str)?;
    if !anyone_asked(&slots, &a.bidders, decision()) {
        return Err("consent");
    }
    Ok(Planned {
        slots,
        page_url: page_url(),
        reader: Reader::of(request, asker),
        partner_eids: None,
    })
}

/// A fresh random ID, 16 bytes as hex (no time, no reader in it): `source.tid`, and a
/// navigation auction's `id`.
pub fn transaction_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        return String::from("0");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_agent_that_is_not_utf8_is_read_lossily() {
        let value = fastly::http::HeaderValue::from_bytes(b"Mozilla/5.0 \xff").unwrap();
        let request = Request::get("http://www.pub.test/").with_header("user-agent", value);
        let asker = Asker {
            host: "www.pub.test",
            edge_id: None,
        };
        let reader = Reader::of(&request, asker);
        assert_eq!(reader.user_agent.as_deref(), Some("Mozilla/5.0 \u{fffd}"));
    }

    #[test]
    fn a_transaction_id_is_new_each_time() {
        let (a, b) = (transaction_id(), transaction_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
