//! The last step of every response's headers, on every route: each response passes through
//! [`stamp`] once, just before its headers leave (or are handed to the body phase). What every
//! response gets, whoever answered it, goes on here, in one place rather than one per route.

use fastly::Response;
use trusted_server_core::Settings;

use crate::kit::access::Access;

/// Adds what every response carries, whatever route answered it: the `ts-ec` expiry when
/// consent is withdrawn (`edge_cookie::expire_withdrawn`, decided once per request into
/// `access`) and `Server-Timing` (`timing::add_server_timing`, with the cache's verdict
/// `cache` when a cache was consulted).
pub fn stamp(response: &mut Response, access: &Access, cache: Option<&str>, settings: &Settings) {
    crate::kit::edge_cookie::expire_withdrawn(response, access.expire_edge_id, settings);
    crate::kit::timing::add_server_timing(response, access, cache, settings);
}

/// Sends a response the service made whole: stamped, recorded in `access`, sent.
pub fn send_whole(mut response: Response, access: &mut Access, settings: &Settings) {
    stamp(&mut response, access, None, settings);
    access.headers_sent(response.get_status().as_u16());
    response.send_to_client();
}
