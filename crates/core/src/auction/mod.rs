//! Server-side auctions: the pure parts, knowing no platform.
//!
//! An auction endpoint (issue 37) reads an OpenRTB request from Prebid.js, asks the configured
//! bidders concurrently under a deadline, and answers with their bids and the targeting keys
//! Prebid.js reads. Everything that needs no I/O lives here, so it is tested natively; the
//! Fastly adapter only sends the requests and waits.
//!
//! This is its first part: the price buckets behind `hb_pb` ([`Granularity`]), Prebid's low,
//! medium, high, auto, dense and custom granularities, read from
//! `ext.prebid.targeting.pricegranularity` as Prebid Server reads it, and bucketed exactly as
//! Prebid.js's own `getPriceBucketString` does (the differential test in `tests/auction/`
//! holds it to that).

mod price;

pub use price::{CustomGranularity, Granularity, PriceRange};
