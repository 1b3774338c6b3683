//! Which stale window a found entry is in, and what a request for it does.
//!
//! The origin grants two windows past an entry's freshness (RFC 5861), both counted from the
//! moment it went stale:
//!
//! * `stale-while-revalidate`: the stale copy is served at once and one request refreshes it;
//! * `stale-if-error`: the origin is asked first, as for a miss, and the stale copy is served
//!   only if the origin fails (no response, or a `500`, `502`, `503` or `504`,
//!   [`is_origin_error`]).
//!
//! The core cache knows one window only (its `stale_while_revalidate`, in which a lookup finds
//! the entry and one request gets the obligation to update it). So an entry is inserted with
//! the longer of the two ([`StaleWindows::cache_window`]), its real windows are kept in its
//! stored header block (`super::stored`), and at lookup [`staleness`] tells the windows apart
//! from the entry's age.

use std::time::Duration;

/// The two windows the origin granted past freshness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StaleWindows {
    /// `stale-while-revalidate`: served stale while one request refreshes.
    pub while_revalidate: Duration,
    /// `stale-if-error`: kept, and served only when the origin fails.
    pub if_error: Duration,
}

impl StaleWindows {
    /// The window the core cache is given on insert: the longer of the two, so that the entry
    /// outlives both.
    pub fn cache_window(&self) -> Duration {
        self.while_revalidate.max(self.if_error)
    }
}

/// Where a found entry is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staleness {
    /// Within its lifetime: a hit.
    Fresh,
    /// Stale, within `stale-while-revalidate`: served stale, refreshed by one request.
    WhileRevalidate,
    /// Stale, past `stale-while-revalidate` but within `stale-if-error`: the origin is asked
    /// first; the stale copy answers only if it fails.
    IfError,
    /// Past both windows: not to be served (a lookup racing the expiry can still find it).
    Expired,
}

/// The window an entry of `age` is in, given its lifetime `max_age` and the origin's windows.
/// `stale-while-revalidate` wins where the two overlap: it allows more (serving without
/// asking).
pub fn staleness(age: Duration, max_age: Duration, windows: StaleWindows) -> Staleness {
    // Stale from `max_age` on, as the core cache counts (fresh while `age < max_age`).
    let Some(past) = age.checked_sub(max_age) else {
        return Staleness::Fresh;
    };
    if past < windows.while_revalidate {
        Staleness::WhileRevalidate
    } else if past < windows.if_error {
        Staleness::IfError
    } else {
        Staleness::Expired
    }
}

/// Whether an origin status counts as a failure for `stale-if-error`: RFC 5861 section 4
/// names `500`, `502`, `503` and `504`. Any other status is the origin's answer, relayed (a
/// `404` is a page, not an outage).
pub fn is_origin_error(status: u16) -> bool {
    matches!(status, 500 | 502 | 503 | 504)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn windows(swr: u64, sie: u64) -> StaleWindows {
        StaleWindows {
            while_revalidate: s(swr),
            if_error: s(sie),
        }
    }

    #[test]
    fn the_windows_follow_each_other_from_the_expiry() {
        let w = windows(10, 60);
        assert_eq!(staleness(s(0), s(30), w), Staleness::Fresh);
        assert_eq!(
            staleness(Duration::from_millis(29_999), s(30), w),
            Staleness::Fresh
        );
        assert_eq!(staleness(s(30), s(30), w), Staleness::WhileRevalidate);
        assert_eq!(staleness(s(39), s(30), w), Staleness::WhileRevalidate);
        assert_eq!(staleness(s(40), s(30), w), Staleness::IfError);
        assert_eq!(staleness(s(89), s(30), w), Staleness::IfError);
        assert_eq!(staleness(s(90), s(30), w), Staleness::Expired);
        assert_eq!(w.cache_window(), s(60));
    }

    #[test]
    fn either_window_alone_and_neither() {
        let only_sie = windows(0, 60);
        assert_eq!(staleness(s(1), s(1), only_sie), Staleness::IfError);
        assert_eq!(staleness(s(61), s(1), only_sie), Staleness::Expired);
        let only_swr = windows(60, 0);
        assert_eq!(staleness(s(1), s(1), only_swr), Staleness::WhileRevalidate);
        assert_eq!(staleness(s(61), s(1), only_swr), Staleness::Expired);
        assert_eq!(only_swr.cache_window(), s(60));
        assert_eq!(staleness(s(1), s(1), windows(0, 0)), Staleness::Expired);
        // stale-if-error shorter than stale-while-revalidate adds nothing.
        let inside = windows(60, 10);
        assert_eq!(staleness(s(20), s(1), inside), Staleness::WhileRevalidate);
        assert_eq!(staleness(s(61), s(1), inside), Staleness::Expired);
        assert_eq!(inside.cache_window(), s(60));
    }

    #[test]
    fn origin_errors_are_rfc_5861s_four() {
        for status in [500, 502, 503, 504] {
            assert!(is_origin_error(status), "{status}");
        }
        for status in [200, 301, 304, 404, 410, 429, 501, 505, 599] {
            assert!(!is_origin_error(status), "{status}");
        }
    }

    proptest! {
        /// Never a panic; the window only moves forward with age; an entry the core cache
        /// keeps (age within max_age + the cache window) is never `Expired`, one past it always.
        #[test]
        fn any_ages(age in 0u64..1_000_000, older in 0u64..1000, max_age in 0u64..1000,
                    swr in 0u64..1000, sie in 0u64..1000) {
            let w = windows(swr, sie);
            let rank = |x: Staleness| match x {
                Staleness::Fresh => 0,
                Staleness::WhileRevalidate => 1,
                Staleness::IfError => 2,
                Staleness::Expired => 3,
            };
            let now = staleness(s(age), s(max_age), w);
            let later = staleness(s(age + older), s(max_age), w);
            prop_assert!(rank(later) >= rank(now));
            let kept = s(age) < s(max_age) + w.cache_window();
            prop_assert_eq!(now != Staleness::Expired, kept);
        }
    }
}
