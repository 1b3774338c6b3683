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

/// The first of `needles` (one to three bytes) in `hay`: the first [`NEAR`] bytes a word at a
/// time, then `memchr`, `memchr2` or `memchr3`.
pub(crate) fn find_near<const N: usize>(needles: [u8; N], hay: &[u8]) -> Option<usize> {
    const { assert!(N >= 1 && N <= 3, "find_near looks for one to three bytes") };
    let mut at = 0;
    while at + WORD <= hay.len().min(NEAR) {
        let w = word_at(hay, at);
        let mask = needles
            .iter()
            .fold(0, |mask, &needle| mask | zero_bytes(w ^ splat(needle)));
        if mask != 0 {
            return Some(at + first_marked(mask));
        }
        at += WORD;
    }
    let rest = &hay[at..];
    match needles[..] {
        [a] => memchr::memchr(a, rest),
        [a, b] => memchr::memchr2(a, b, rest),
        [a, b, c] => memchr::memchr3(a, b, c, rest),
        // Refused at compile time above.
        _ => None,
    }
    .map(|i| at + i)
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
            hay in proptest::collection::vec(prop_oneof![Just(b'<'), Just(b'>'), Just(b'"'), any::<u8>()], 0..80),
            a in prop_oneof![Just(b'<'), any::<u8>()],
            b in prop_oneof![Just(b'>'), any::<u8>()],
            c in prop_oneof![Just(b'"'), any::<u8>()],
        ) {
            prop_assert_eq!(find_near([a], &hay), memchr::memchr(a, &hay));
            prop_assert_eq!(find_near([a, b], &hay), memchr::memchr2(a, b, &hay));
            prop_assert_eq!(find_near([a, b, c], &hay), memchr::memchr3(a, b, c, &hay));
        }
    }
}
