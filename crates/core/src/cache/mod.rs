//! Cached rewrites: the pure decisions behind serving rewritten pages from Fastly's cache.
//!
//! The adapter (`src/cache.rs`) does the platform I/O (core cache transactions, stream-back,
//! purge); everything it decides comes from here, so every rule is tested natively:
//!
//! * [`policy`]: whether a request may use the cache at all, and whether an origin response
//!   may be stored (and for how long), or passes with a reason;
//! * [`shared`]: whether a shared cache could have stored an answer for any reader (reader
//!   cookies, explicit sharing), for the page cache, the learned hints and the origin fetch;
//! * [`key`]: the cache key, from every input the rewritten output depends on;
//! * [`fill`]: the request headers an entry's variant is keyed on (those the origin received),
//!   and the ones a fill does not send (range, preconditions);
//! * [`surrogate`]: the surrogate keys an entry is stored under (the origin's and ours);
//! * [`stored`]: the header block stored with the body, without any per-reader header;
//! * [`conditional`]: whether a hit answers a conditional request with `304 Not Modified`;
//! * [`stale`]: which stale window (`stale-while-revalidate`, `stale-if-error`) a found entry
//!   is in.
//!
//! See `docs/caching.md` for the whole design.

pub mod conditional;
pub mod fill;
pub mod key;
pub mod policy;
pub mod shared;
pub mod stale;
pub mod stored;
pub mod surrogate;

use std::fmt;

pub use policy::{Freshness, PassWhy};

/// What the cache did for one response: the value of `x-ts-cache` and of the access line's
/// `cache=` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheState {
    /// Served from the cache without asking the origin or running the pipeline.
    Hit,
    /// Not in the cache: fetched, rewritten, and stored while it streamed.
    Miss,
    /// A stale copy within the origin's `stale-if-error`, served because the origin, asked
    /// first, failed (no response, or a `500`, `502`, `503`, `504`).
    StaleIfError,
    /// Not stored and not served from the cache, and why.
    Pass(PassWhy),
}

impl fmt::Display for CacheState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheState::Hit => f.write_str("HIT"),
            CacheState::Miss => f.write_str("MISS"),
            CacheState::StaleIfError => f.write_str("HIT(stale-if-error)"),
            CacheState::Pass(why) => write!(f, "PASS({why})"),
        }
    }
}

/// The response header that says what the cache did.
pub const CACHE_STATE_HEADER: &str = "x-ts-cache";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_values_are_the_documented_ones() {
        assert_eq!(CacheState::Hit.to_string(), "HIT");
        assert_eq!(CacheState::Miss.to_string(), "MISS");
        assert_eq!(CacheState::StaleIfError.to_string(), "HIT(stale-if-error)");
        assert_eq!(
            CacheState::Pass(PassWhy::SetCookie).to_string(),
            "PASS(set-cookie)"
        );
        assert_eq!(
            CacheState::Pass(PassWhy::Authorization).to_string(),
            "PASS(authorization)"
        );
    }
}
