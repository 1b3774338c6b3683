//! Timings on the way out: the `Server-Timing` header (its value is the core's
//! `timing::Timings`), and the stopwatch for the rewrite time the access line reports.
//!
//! Why here and not in `access`: the access line is the operator's record of the whole request
//! and is always written; `Server-Timing` is what the reader may see of it, when the publisher
//! allows (`delivery.server_timing`), and only what is known when the headers leave.

use std::time::{Duration, Instant};

use fastly::Response;
use trusted_server_core::timing::{Timings, SERVER_TIMING};
use trusted_server_core::Settings;

use crate::kit::access::Access;

/// Adds `Server-Timing` to `response` unless `delivery.server_timing` is off: the origin's wait if it was asked,
/// the time in the service so far, and `cache`, the cache's verdict for this response if a
/// cache was consulted (the hook the cache fills; `None` leaves the entry out). Called for
/// every response by `leaving::stamp`.
///
/// Appended, not set: an origin's own `Server-Timing` lines are the publisher's to send.
pub fn add_server_timing(
    response: &mut Response,
    access: &Access,
    cache: Option<&str>,
    settings: &Settings,
) {
    if !settings.delivery.server_timing {
        return;
    }
    let timings = Timings {
        cache,
        origin: access.origin_wait,
        edge: access.elapsed(),
    };
    response.append_header(SERVER_TIMING, timings.header_value());
}

/// Runs `work` and adds the time it took to `total`: the rewrite time of the access line is
/// the sum over the pipeline's calls. A wasm instance is single-threaded and has no CPU clock,
/// so this is wall time in the pipeline (decode, rewrite, encode, and the client writes a
/// call may make), which is the guest's CPU time for that work plus those host calls.
pub fn timed<T>(total: &mut Duration, work: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = work();
    *total += start.elapsed();
    out
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use fastly::http::StatusCode;
    use fastly::Request;
    use trusted_server_settings::Settings as S;

    fn access() -> Access {
        Access::start(
            &Request::get("http://www.pub.test/"),
            std::time::Instant::now(),
        )
    }

    #[test]
    fn the_header_carries_what_is_known_and_follows_the_origins() {
        let mut access = access();
        access.origin_wait = Some(Duration::from_millis(7));
        let mut response =
            Response::from_status(StatusCode::OK).with_header(SERVER_TIMING, "db;dur=3");
        add_server_timing(
            &mut response,
            &access,
            Some("MISS"),
            &crate::kit::generated::SETTINGS,
        );
        let lines: Vec<&str> = response.get_header_all_str(SERVER_TIMING);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0], "db;dur=3");
        assert!(
            lines[1].starts_with("cache;desc=MISS, origin;dur=7.0, edge;dur="),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn the_setting_turns_it_off() {
        let mut settings: S = crate::kit::generated::SETTINGS.clone();
        settings.delivery.server_timing = false;
        let mut response = Response::from_status(StatusCode::OK);
        add_server_timing(&mut response, &access(), Some("HIT"), &settings);
        assert_eq!(response.get_header(SERVER_TIMING), None);
    }

    #[test]
    fn timed_adds_up() {
        let mut total = Duration::ZERO;
        let a = timed(&mut total, || {
            std::thread::sleep(Duration::from_millis(2));
            1
        });
        timed(&mut total, || std::thread::sleep(Duration::from_millis(2)));
        assert_eq!(a, 1);
        assert!(total >= Duration::from_millis(4), "{total:?}");
    }
}
