//! Waiting on several things at once, with a deadline, and asking whether one is ready without
//! waiting: pending backend requests and response bodies still arriving. The fastly crate's
//! own `select` waits without a deadline and only on pending requests, and its `async_io`
//! (which has both) is crate-private; these are the ABI calls under it, in one place.

use std::time::Duration;

use fastly::handle::{BodyHandle, PendingRequestHandle};

/// Something the platform can say is ready.
#[derive(Clone, Copy)]
pub enum Waitable<'a> {
    /// A request sent with `send_async`: ready when its response head (or its failure) is in.
    Pending(&'a PendingRequestHandle),
    /// A response body: ready when a read would return at once (bytes, its end, or an error).
    Body(&'a BodyHandle),
}

impl Waitable<'_> {
    #[allow(unsafe_code)]
    fn raw(self) -> u32 {
        match self {
            // Deprecated for a future WASI target only (wasip2); this is wasip1's ABI.
            #[allow(deprecated)]
            Waitable::Pending(handle) => handle.as_u32(),
            // SAFETY: the handle is only borrowed for the call that uses the number; `body`
            // keeps owning (and closes) it.
            #[allow(deprecated)]
            Waitable::Body(body) => unsafe { body.as_u32() },
        }
    }
}

/// The index of the first of `items` that is ready, waiting at most `timeout` (at least 1 ms:
/// the platform reads 0 as "no limit"); `None` when the time ran out, or when the platform
/// refused to wait (an invalid handle), which the caller treats the same way: it stops
/// waiting.
pub fn first_ready(items: &[Waitable<'_>], timeout: Duration) -> Option<usize> {
    if items.is_empty() {
        return None;
    }
    let handles: Vec<u32> = items.iter().map(|w| w.raw()).collect();
    let timeout_ms = u32::try_from(timeout.as_millis())
        .unwrap_or(u32::MAX)
        .max(1);
    let mut done = u32::MAX;
    // SAFETY: `handles` is a live array of `handles.len()` handle numbers, each borrowed from
    // an owner that outlives the call; `done` is a live `u32`.
    #[allow(unsafe_code)]
    let status = unsafe {
        fastly_sys::fastly_async_io::select(handles.as_ptr(), handles.len(), timeout_ms, &mut done)
    };
    // `u32::MAX`: the wait timed out.
    let index = usize::try_from(done).ok()?;
    (status.is_ok() && index < items.len()).then_some(index)
}

/// Whether `item` is ready now (a read or a wait on it would return at once), without
/// waiting; `false` when the platform refuses to say.
///
/// Under Viceroy 0.22 asking about a body consumes a read error waiting in it (its
/// `is_ready` reads a chunk and puts back only data): check a body's length at its end.
pub fn is_ready(item: Waitable<'_>) -> bool {
    let mut ready = 0u32;
    // SAFETY: the handle number is borrowed from an owner that outlives the call; `ready` is
    // a live `u32`.
    #[allow(unsafe_code)]
    let status = unsafe { fastly_sys::fastly_async_io::is_ready(item.raw(), &mut ready) };
    status.is_ok() && ready != 0
}
