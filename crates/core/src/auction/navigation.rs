//! Whether a request for a page starts an auction for its slots as the page is fetched: a
//! pure decision over the request's method, path and headers and the settings, so the adapter
//! only reads the headers and asks.
//!
//! | the request | starts an auction |
//! | --- | --- |
//! | `auction.enabled` or `auction.navigation` off, or no slot configured | no ([`Skip::Off`]) |
//! | not `GET` (a `HEAD` renders nothing) | no ([`Skip::NotGet`]) |
//! | not a page navigation, as [`is_page_navigation`](crate::publisher::navigation::is_page_navigation) reads it (the same reading that decides who gets the first-party script): a frame, a fetch, an image, … | no ([`Skip::NotDocument`]) |
//! | `Sec-Purpose`, `Purpose` or `X-Purpose` naming `prefetch`, `prerender` or `preview`, or `X-Moz: prefetch` | no ([`Skip::Prefetch`]): the page may never be seen, and bids are for a reader who is there |
//! | no `User-Agent`, or one that contains an `auction.bots` entry (ignoring ASCII case) | no ([`Skip::Bot`]): every browser sends one |
//! | a path no slot names | no ([`Skip::NoSlot`]) |
//! | otherwise | yes: the matching slots, in the order written |
//!
//! Consent is the last gate ([`anyone_asked`]): the reader's one decision must let at least one
//! of the bidders of the matching slots take part, or no auction starts (and the page's end
//! does not wait for one).

use trusted_server_settings::{Auction, Bidder, Slot, Text};

use super::consent::BidderConsent;
use super::slots::slots_for;
use crate::consent::Decision;

/// The parts of a page request the decision reads: the method and the headers' values, as
/// the request carried them (`None` when absent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageRequest<'a> {
    /// The method (`GET`).
    pub method: &'a str,
    /// The path, without the query (a query is ignored if given).
    pub path: &'a str,
    /// The request is a page navigation
    /// ([`is_page_navigation`](crate::publisher::navigation::is_page_navigation) of its headers).
    pub document: bool,
    /// `Sec-Purpose` (Chromium's and Firefox's prefetches and prerenders).
    pub sec_purpose: Option<&'a str>,
    /// `Purpose` (older Chromium prefetches).
    pub purpose: Option<&'a str>,
    /// `X-Purpose` (Safari's previews).
    pub x_purpose: Option<&'a str>,
    /// `X-Moz` (older Firefox prefetches).
    pub x_moz: Option<&'a str>,
    /// `User-Agent`.
    pub user_agent: Option<&'a str>,
}

/// Why a page request starts no auction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Auctions, or navigation auctions, are off, or no slot is configured.
    Off,
    /// Not a `GET`.
    NotGet,
    /// Not a request for a document shown in the window.
    NotDocument,
    /// A prefetch, prerender or preview.
    Prefetch,
    /// No `User-Agent`, or a bot's.
    Bot,
    /// No slot is on this page.
    NoSlot,
}

impl Skip {
    /// A word for logs and `Server-Timing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::Off => "off",
            Skip::NotGet => "not-get",
            Skip::NotDocument => "not-document",
            Skip::Prefetch => "prefetch",
            Skip::Bot => "bot",
            Skip::NoSlot => "no-slot",
        }
    }
}

/// The slots a navigation's auction asks for, or why the request starts none (the table in
/// the module docs, in its order: the cheap checks first).
pub fn page_slots<'s>(auction: &'s Auction, page: &PageRequest<'_>) -> Result<Vec<&'s Slot>, Skip> {
    if !auction.enabled || !auction.navigation || auction.slots.is_empty() {
        return Err(Skip::Off);
    }
    if page.method != "GET" {
        return Err(Skip::NotGet);
    }
    if !page.document {
        return Err(Skip::NotDocument);
    }
    if is_prefetch(page) {
        return Err(Skip::Prefetch);
    }
    if is_bot(page.user_agent, &auction.bots) {
        return Err(Skip::Bot);
    }
    let slots = slots_for(&auction.slots, page.path);
    if slots.is_empty() {
        return Err(Skip::NoSlot);
    }
    Ok(slots)
}

/// A purpose header naming a prefetch, prerender or preview (`Sec-Purpose: prefetch;prerender`
/// is a list of one item with a parameter: every token counts).
fn is_prefetch(page: &PageRequest<'_>) -> bool {
    let names = |value: &str| {
        value.split([',', ';', '=']).map(str::trim).any(|t| {
            ["prefetch", "prerender", "preview"]
                .iter()
                .any(|p| t.eq_ignore_ascii_case(p))
        })
    };
    [page.sec_purpose, page.purpose, page.x_purpose, page.x_moz]
        .into_iter()
        .flatten()
        .any(names)
}

/// No (or an empty) `User-Agent`, or one containing an entry of `bots`, ignoring ASCII case.
fn is_bot(user_agent: Option<&str>, bots: &[Text]) -> bool {
    let Some(ua) = user_agent.map(str::trim).filter(|ua| !ua.is_empty()) else {
        return true;
    };
    let ua = ua.to_ascii_lowercase();
    bots.iter()
        .any(|bot| ua.contains(&bot.to_ascii_lowercase()))
}

/// Whether the reader's consent `decision` lets at least one bidder of `slots` take part (a
/// configured bidder whose [`BidderConsent`] is asked). When none may, no auction starts.
/// Read from the slots, not from their bid request: the request is built only once the
/// origin has been asked.
pub fn anyone_asked(slots: &[&Slot], bidders: &[Bidder], decision: &Decision<'_>) -> bool {
    (slots.iter())
        .flat_map(|slot| slot.bidders.iter())
        .filter_map(|named| bidders.iter().find(|b| b.code == named.code))
        .any(|bidder| BidderConsent::of(decision, bidder.vendor_id).asked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use trusted_server_settings::load;

    const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                           Chrome/131.0.0.0 Safari/537.36";

    fn auction(extra: &str) -> Auction {
        let text = format!(
            "[publisher]\ndomain = \"www.pub.example\"\norigin_url = \"https://origin.pub.example\"\n\
             [auction]\n{extra}\n\
             [[auction.bidders]]\ncode = \"fast\"\nendpoint = \"https://fast.example/\"\n\
             [[auction.slots]]\nid = \"ad-top\"\npaths = [\"/ads.html\"]\nsizes = [[728, 90]]\n\
             bidders = {{ fast = {{}} }}\n"
        );
        load(&text, std::iter::empty::<(&str, &str)>())
            .unwrap()
            .auction
    }

    /// What Chrome sends for a typed URL.
    fn navigation() -> PageRequest<'static> {
        PageRequest {
            method: "GET",
            path: "/ads.html",
            document: true,
            user_agent: Some(BROWSER),
            ..PageRequest::default()
        }
    }

    #[test]
    fn each_rule_says_why_no_auction_starts() {
        let a = auction("");
        let ok = page_slots(&a, &navigation()).unwrap();
        assert_eq!(ok.len(), 1);
        type Edit = fn(&mut PageRequest<'static>);
        let cases: [(&str, Edit, Skip); 14] = [
            ("HEAD", |p| p.method = "HEAD", Skip::NotGet),
            ("POST", |p| p.method = "POST", Skip::NotGet),
            ("get", |p| p.method = "get", Skip::NotGet),
            (
                "not a navigation",
                |p| p.document = false,
                Skip::NotDocument,
            ),
            (
                "Chrome's prefetch",
                |p| p.sec_purpose = Some("prefetch"),
                Skip::Prefetch,
            ),
            (
                "Chrome's prerender",
                |p| p.sec_purpose = Some("prefetch;prerender"),
                Skip::Prefetch,
            ),
            ("Purpose", |p| p.purpose = Some("Prefetch"), Skip::Prefetch),
            (
                "Safari's preview",
                |p| p.x_purpose = Some("preview"),
                Skip::Prefetch,
            ),
            (
                "Firefox's prefetch",
                |p| p.x_moz = Some("prefetch"),
                Skip::Prefetch,
            ),
            (
                "Googlebot",
                |p| {
                    p.user_agent = Some(
                        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
                    )
                },
                Skip::Bot,
            ),
            (
                "a bot's case",
                |p| p.user_agent = Some("x BINGBOT/2.0"),
                Skip::Bot,
            ),
            ("no User-Agent", |p| p.user_agent = None, Skip::Bot),
            (
                "an empty User-Agent",
                |p| p.user_agent = Some(" "),
                Skip::Bot,
            ),
            ("another page", |p| p.path = "/about", Skip::NoSlot),
        ];
        for (what, edit, skip) in cases {
            let mut page = navigation();
            edit(&mut page);
            assert_eq!(page_slots(&a, &page).map(|s| s.len()), Err(skip), "{what}");
        }
        // Other purposes, and a query on the path, change nothing.
        let mut other = navigation();
        other.sec_purpose = Some("something-else");
        other.path = "/ads.html?utm=1";
        assert!(page_slots(&a, &other).is_ok());
    }

    #[test]
    fn the_settings_turn_it_off_and_name_the_bots() {
        for off in ["enabled = false", "navigation = false"] {
            assert_eq!(
                page_slots(&auction(off), &navigation()),
                Err(Skip::Off),
                "{off}"
            );
        }
        let no_slots = Auction {
            slots: Vec::new().into(),
            ..auction("")
        };
        assert_eq!(page_slots(&no_slots, &navigation()), Err(Skip::Off));
        // A configured list replaces the default: Googlebot is a reader now, "Mozilla" a bot.
        let custom = auction("bots = [\"mozilla/5.0 (x11\"]");
        assert_eq!(page_slots(&custom, &navigation()), Err(Skip::Bot));
        let none = auction("bots = []");
        let mut google = navigation();
        google.user_agent = Some("Googlebot/2.1");
        assert!(page_slots(&none, &google).is_ok());
        assert_eq!(Skip::Prefetch.as_str(), "prefetch");
    }

    #[test]
    fn consent_must_let_one_of_the_slots_bidders_take_part() {
        use crate::consent::{Jurisdiction, Signals, UsState};
        use trusted_server_settings::Settings;

        let a = auction("");
        let slots = page_slots(&a, &navigation()).unwrap();
        let consent = Settings::DEFAULT.consent;
        let quiet = Signals::default();
        // A US state's opt-out rule: asked. An opt-in location without a TC string: not; nor
        // with bidders the settings do not know.
        let ca = Jurisdiction::OptOut(UsState::parse("CA").unwrap());
        let decision = Decision::decide(&quiet, &ca, &consent);
        assert!(anyone_asked(&slots, &a.bidders, &decision));
        assert!(!anyone_asked(&slots, &[], &decision));
        let eu = Decision::decide(&quiet, &Jurisdiction::OptIn, &consent);
        assert!(!anyone_asked(&slots, &a.bidders, &eu));
    }
}
