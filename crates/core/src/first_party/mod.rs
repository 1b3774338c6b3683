//! First-party URLs for third-party content: ad creatives, pixels and clicks served from the
//! publisher's own host through URLs the service signs.
//!
//! * [`target`]: the SSRF policy, the one place that decides which URLs may be signed,
//!   fetched or redirected to;
//! * [`token`]: the signed `/first-party/proxy` and `/first-party/click` URLs (HMAC-SHA256
//!   over the exact target URL and its expiry).
//!
//! See `docs/first-party.md`.

pub mod target;
