//! Byte searches a machine word at a time, for the short distances that markup and Flight
//! text are full of: the next quote of an attribute, the `<` after a `>`, the next escape.
//! `memchr` scans long runs faster, but its set-up costs more than a word or two read here,
//! so these read the first words themselves and hand the rest to it.

/// Bytes in a machine word, for the scans below.
pub(crate) const WORD: usize = std::mem::size_of::<u64>();

/// `b` in every byte of a word.
pub(crate) const fn splat(b: u8) -> u64 {
    u64::from_ne_bytes([b; WORD])
}

/// A word whose high bit is set in the lowest byte of `x` that is zero (bytes above it may be
/// marked too, but never one below: a borrow only starts at a zero byte).
pub(crate) fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(splat(0x01)) & !x & splat(0x80)
}

/// Reads the word at `bytes[at..at + WORD]` with its first byte lowest, so the lowest marked
/// byte of a mask made from it is the first such byte in memory.
pub(crate) fn word_at(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0; WORD];
    w.copy_from_slice(&bytes[at..at + WORD]);
    u64::from_le_bytes(w)
}

/// The index of the first byte marked in `mask` (non-zero), a mask of a word read by
/// [`word_at`].
pub(crate) fn first_marked(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// The first `needle` in `hay`: the first [`NEAR`] bytes a word at a time, then `memchr`.
pub(crate) fn find_near(needle: u8, hay: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at + WORD <= hay.len().min(NEAR) {
        let mask = zero_bytes(word_at(hay, at) ^ splat(needle));
        if mask != 0 {
            return Some(at + first_marked(mask));
        }
        at += WORD;
    }
    memchr::memchr(needle, &hay[at..]).map(|i| at + i)
}

/// How far [`find_near`] reads before `memchr`.
const NEAR: usize = 4 * WORD;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn find_near_finds_what_memchr_finds(
            hay in proptest::collection::vec(prop_oneof![Just(b'<'), Just(b'>'), any::<u8>()], 0..80),
            needle in prop_oneof![Just(b'<'), any::<u8>()],
        ) {
            prop_assert_eq!(find_near(needle, &hay), memchr::memchr(needle, &hay));
        }
    }
}
