//! Platform-free core of Trusted Server Edge.
//!
//! Bytes in, bytes out: no `fastly` dependency, so every property here is tested natively. The
//! Fastly adapter (`src/main.rs`) owns the I/O and calls into this crate for every decision:
//!
//! * [`RouteTable::resolve`]: which line of the caller's route table a request is for, however
//!   its path is spelt ([`path_readings`]);
//! * [`origin_request_headers`]: what the origin sees of the client's request;
//! * [`BodyPlan::decide`]: whether and how a response body is rewritten;
//! * [`origin_response_headers`]: the response headers, decided before any are sent;
//! * [`BodyPipeline`]: decode → stages → encode → batched writes, chunk by chunk; which
//!   stages a publisher page gets is [`page`]'s decision, a creative's
//!   [`first_party::creative`]'s;
//! * [`Release`]: when the output leaves for the client;
//! * [`script_answer`]: the first-party script's representation and validators.
//! * [`publisher::identity`]: the edge ID (HMAC, cookie, navigation and GPC rules).
//! * [`signing`]: RFC 9421 signatures on partner requests, and the discovery document.
//! * [`admin`]: the admin routes (basic auth, the settings with secrets redacted).
//! * [`cache`]: cached rewrites: what may be stored, the key, surrogate keys, the stored headers.
//! * [`consent`]: the consent strings (TCF, GPP, US Privacy), decoded.
//! * [`timing`]: the `Server-Timing` header; [`compression`]: compression at the edge.
//! * [`first_party`]: first-party URLs: the SSRF policy, signed URLs, the sign and click
//!   decisions.
//! * [`ids`]: partner IDs kept per reader: the entry, its encoding, and the sync endpoint's body.
//!
//! The one URL replacement rule lives in [`UrlRule`]; see its module for what it rewrites.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod admin;
pub mod auction;
mod body;
pub mod cache;
pub mod compression;
pub mod consent;
mod content;
pub mod first_party;
mod forward;
pub mod hints;
pub mod hmac_key;
pub mod ids;
pub mod page;
pub mod publisher;
mod qvalue;
mod response;
mod routes;
pub mod signing;
mod stages;
#[cfg(test)]
mod test_support;
pub mod timing;
mod url_rewrite;

pub use body::decode::DecodeError;
pub use body::pipeline::{BodyPipeline, BodyReport, Ending, PipelineError};
pub use body::release::{Progress, Release, Step, FIRST_SEND_AFTER_BYTES, HOLD_MAX_BYTES};
pub use body::stage::BodyStage;
pub use content::{BodyPlan, Codec, PassReason, Rewrite};
pub use forward::{client_authority, origin_request_headers, ClientInfo};
pub use page::{end_page, PageEnding, PageOptions, PagePipeline, PageReport};
pub use publisher::script::{
    answer as script_answer, if_none_match, ScriptAnswer, ScriptEncoding, SCRIPT_CACHE_CONTROL,
    SCRIPT_CONTENT_TYPE, SCRIPT_PATH_PREFIX,
};
pub use response::{
    apply_standard_headers, origin_response_headers, ResponseContext, VERSION, VERSION_HEADER,
};
pub use routes::{readings as path_readings, Methods, PathMatch, RouteLine, RouteTable, Routed};
pub use stages::inject::{Injected, Injection, SCRIPT_ID};
/// The reference switch for fuzzing: `use_flight_fast_reader(false)` makes inline Flight
/// rewriting decode every push string (feature `reference-paths`; never in a service build).
#[cfg(feature = "reference-paths")]
pub use stages::rsc::use_fast_reader as use_flight_fast_reader;
pub use stages::rsc::RscReport;
pub use stages::tail::{HeldTail, TailPoint, TAIL_MAX};
pub use url_rewrite::UrlRule;

/// Re-exported so callers can name the settings type without another dependency line.
pub use trusted_server_settings::{HeaderSetting, Nextjs, Settings};
