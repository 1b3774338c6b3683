//! The kit: shared leaves that every room may use and that import no phase, flow or endpoint
//! (only each other): what `build.rs` generates, the client's request read once, header blocks, replies, the access line and
//! the logger it writes through, failures, timing, secrets and signing keys, the request's
//! geolocation (once), partner request signing, signed first-party URLs, the edge-ID
//! cookie's header writers, bounded request bodies, per-minute budgets, and the stamp every
//! response gets on its way out.

pub mod access;
pub mod edge_cookie;
pub mod failure;
pub mod generated;
pub mod geo;
pub mod headers;
pub mod incoming;
pub mod leaving;
pub mod limits;
pub mod logger;
pub mod partner;
pub mod rate;
pub mod ready;
pub mod reply;
pub mod request_body;
pub mod secrets;
pub mod signed_url;
pub mod signing_keys;
pub mod timing;
