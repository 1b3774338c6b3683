//! A per-minute budget per name, kept in the POP's cache (Fastly's core cache, which Viceroy
//! emulates): how many units a name has used in the current minute of the clock.
//!
//! Why the cache and not Fastly's edge rate limiter: the limiter counts requests over sliding
//! windows per POP and Viceroy does not implement it (every lookup answers 0), so a bound
//! built on it could not be tested here; a KV Store counter would be worldwide, but a KV key
//! takes about one write per second, far too few for a counter. The cache is per POP like the
//! limiter. A read and its write are two calls, so a request's write can replace the count a
//! request at the same moment wrote: under concurrency the bound is approximate, and a
//! partner that keeps N syncs in flight at once at one POP can pass up to about N times its
//! budget there. It bounds a runaway partner's sequential flood; a partner that parallelises
//! against the edge needs the platform's rate limiter in front of the route.

use fastly::cache::core::{self as cache_core, CacheKey};
use std::time::Duration;

/// How long a minute's count is kept: past its minute it is never read again.
const KEEP: Duration = Duration::from_secs(120);

/// The name's budget for this minute is spent: try again in this many seconds (1 to 60).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spent {
    /// Seconds until the next minute starts.
    pub retry_after_secs: u64,
}

/// Takes `units` from `name`'s budget of `per_minute` in the minute of `now` (Unix seconds).
/// Refused whole, taking nothing, when the units would pass the budget. A cache that cannot be
/// read or written lets the units through (logged): the budget is a guard, not a gate.
///
/// # Errors
/// [`Spent`] when the units do not fit in what is left of the minute's budget.
pub fn take(name: &str, units: u32, per_minute: u32, now: u64) -> Result<(), Spent> {
    let key = format!("ts-rate\n{name}\n{}", now / 60);
    let used = match cache_core::lookup(CacheKey::copy_from_slice(key.as_bytes())).execute() {
        Ok(Some(found)) => std::str::from_utf8(&found.user_metadata())
            .ok()
            .and_then(|count| count.parse::<u32>().ok())
            .unwrap_or(0),
        Ok(None) => 0,
        Err(e) => {
            // Let it through without writing: a count written now would start the minute over.
            log::warn!("rate {name}: the count was not read: {e}");
            return Ok(());
        }
    };
    let total = used.saturating_add(units);
    if total > per_minute {
        return Err(Spent {
            retry_after_secs: 60 - now % 60,
        });
    }
    let written = cache_core::insert(CacheKey::copy_from_slice(key.as_bytes()), KEEP)
        .user_metadata(CacheKey::from(total.to_string()))
        .known_length(0)
        .execute()
        .map_err(|e| e.to_string())
        .and_then(|body| body.finish().map_err(|e| e.to_string()));
    if let Err(e) = written {
        log::warn!("rate {name}: the count was not written: {e}");
    }
    Ok(())
}
