//! How much room the engine's buffers take at their first use.
//!
//! Why not a fixed size up front: every request runs in a fresh instance whose memory is
//! mapped and faulted in per request, and each large allocation from the top of the heap
//! grows that memory. A pipeline made four 16 KiB buffers and a 64 KiB lookback block before
//! reading a byte; on a 1.2 KB page that growth was most of the pipeline's set-up time. Why
//! not from nothing: a buffer grown step by step as a stage appends is reallocated and copied
//! at each doubling (about 4% of a 20 KB page's cost). So a buffer is sized once, at its
//! first use, by the piece it is about to take: a small page gets a small buffer, a large
//! page's first read its usual room.

/// Reserves room in `buffer`, if it has none yet, for a first piece of `input_len` bytes as a
/// stage may lengthen it (an eighth more, and at least [`LEAST`] bytes), but no more than
/// `most`. A buffer that already has room is left alone.
pub(crate) fn at_first_use(buffer: &mut Vec<u8>, input_len: usize, most: usize) {
    if buffer.capacity() == 0 {
        let want = input_len.saturating_add(input_len / 8).max(LEAST);
        buffer.reserve(want.min(most));
    }
}

/// The most room a buffer between stages, or before the encoder, takes at first: a typical
/// decoded piece (a first read is 16 KiB, `FIRST_SEND_AFTER_BYTES`).
pub(crate) const PIECE_ROOM: usize = 16 * 1024;

/// The least room a buffer takes: a stage's small additions (a tag, a rewritten
/// URL) fit without a second allocation.
pub(crate) const LEAST: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_follows_the_first_piece_between_the_least_and_the_most() {
        let mut small = Vec::new();
        at_first_use(&mut small, 1200, 16 * 1024);
        assert!(
            (1350..16 * 1024).contains(&small.capacity()),
            "{}",
            small.capacity()
        );
        let mut large = Vec::new();
        at_first_use(&mut large, 64 * 1024, 16 * 1024);
        assert!(large.capacity() >= 16 * 1024 && large.capacity() < 32 * 1024);
        let mut tiny = Vec::new();
        at_first_use(&mut tiny, 3, 16 * 1024);
        assert!(tiny.capacity() >= LEAST);
    }

    #[test]
    fn a_buffer_with_room_is_left_alone() {
        let mut used = Vec::with_capacity(100);
        at_first_use(&mut used, 50_000, 16 * 1024);
        assert!(used.capacity() < 1000);
    }
}
