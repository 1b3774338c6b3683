//! A client's request body, read whole up to a cap: the routes that take a body (the auction,
//! the first-party proxy's beacons) hold at most their own number of bytes in memory.

use std::io::Read;

use fastly::http::StatusCode;
use fastly::Request;

/// `request`'s body, at most `cap` bytes: `413` past it (nothing more is read), `400` when
/// it cannot be read.
///
/// # Errors
/// The status to answer with, as above.
pub fn bounded(request: &mut Request, cap: usize) -> Result<Vec<u8>, StatusCode> {
    let mut body = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    match request.take_body().take(limit).read_to_end(&mut body) {
        Ok(_) if body.len() <= cap => Ok(body),
        Ok(_) => Err(StatusCode::PAYLOAD_TOO_LARGE),
        Err(_) => Err(StatusCode::BAD_REQUEST),
    }
}
