//! Limits more than one room holds to.

/// Largest origin body, and largest rewritten body, that buffered mode holds in memory (the
/// body phase's buffered build, and a stored page read whole for it by the cache). The
/// guest's memory is bounded (about 128 MiB under Viceroy, with the input, the output and
/// their growth at once), so a larger page is refused with a 502 instead of trapping the
/// instance. Streaming mode has no such limit.
pub const BUFFERED_MAX_BYTES: usize = 16 * 1024 * 1024;
