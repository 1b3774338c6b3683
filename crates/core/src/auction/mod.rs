//! Server-side auctions: the pure parts, knowing no platform.
//!
//! An auction endpoint reads an OpenRTB request from Prebid.js, asks the configured bidders
//! concurrently under a deadline, and answers with their bids and the targeting keys Prebid.js
//! reads. Everything that needs no I/O lives here, so it is tested natively; the Fastly
//! adapter only sends the requests and waits (`src/flows/auction.rs`).
//!
//! * [`read_request`]: the bid request Prebid.js's `prebidServerBidAdapter` posts, read once
//!   and bounded ([`MAX_BODY_BYTES`], [`MAX_IMPS`], …), with an error per status.
//! * [`read_answer`]: a bidder's answer, bounded and checked against what it was asked: the
//!   bids that may compete ([`Bid`]) and why each other one may not ([`Dropped`]), or why the
//!   whole answer was refused ([`BidderError`]).
//! * [`BidderConsent`]: what each bidder may be given (asked at all, the edge ID, precise
//!   geolocation) from the request's one consent decision, by Prebid Server's privacy rules.
//! * [`Granularity`]: the price buckets behind `hb_pb`, Prebid's low, medium, high, auto,
//!   dense and custom granularities, read from `ext.prebid.targeting.pricegranularity` as
//!   Prebid Server reads it, and bucketed exactly as Prebid.js's own `getPriceBucketString`
//!   does (the differential test in `tests/auction/` holds it to that).
//!
//! A page navigation can start an auction too, for the ad slots the settings know
//! (`[[auction.slots]]`), while the page streams:
//!
//! * [`page_slots`]: whether a page request starts one ([`PageRequest`], or why not:
//!   [`Skip`]), and for which slots; [`anyone_asked`]: whether the reader's consent lets any of
//!   their bidders take part.
//! * [`navigation_request`]: the [`BidRequest`] for those slots, the same type the endpoint
//!   reads, so one orchestrator runs both.
//! * [`bids_script`]: its bids as a JSON data block for the page's script, written before
//!   `</body>`, that no bidder's value can break out of.

mod bids;
mod consent;
mod creative;
mod navigation;
mod outcome;
mod outgoing;
mod page_bids;
mod price;
mod request;
mod slots;

pub use bids::{
    read_answer, with_auction_price, Answer, Bid, BidderError, Dropped, MediaType,
    MAX_BIDDER_BODY_BYTES, MAX_BIDS,
};
pub use consent::{
    BidderConsent, PURPOSES_EDGE_ID, PURPOSE_TAKE_PART, SPECIAL_FEATURE_PRECISE_GEO,
};
pub use creative::first_party as first_party_creative;
pub use navigation::{anyone_asked, page_slots, PageRequest, Skip};
pub use outcome::{code, granularity_of, respond, Outcome};
pub use outgoing::{bidder_request, truncated, ConsentStrings, Edge, Geo, PartnerEid};
pub use page_bids::{bids_script, page_bids, BIDS_ELEMENT_ID, BIDS_VERSION};
pub use price::{CustomGranularity, Granularity, PriceRange};
pub use request::{
    read as read_request, BidRequest, Imp, Media, RequestError, MAX_BIDDERS, MAX_BODY_BYTES,
    MAX_ID_LEN, MAX_IMPS,
};
pub use slots::{navigation_request, path_matches, slots_for};
