//! Reading a base64url text as a string of bits, most significant bit first: the one
//! representation every IAB consent format (TCF, GPP) is built on.
//!
//! The text is not decoded into bytes first: each read looks the character up, so reading a
//! segment allocates nothing. Every read past the end is `None`, never a panic.

/// The value of one base64url character (RFC 4648 section 5, no padding), or `None`.
fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

/// The longest Fibonacci code read (terminator included): 2^32 needs 47 bits, and no value a
/// consent string carries comes near that.
const FIBONACCI_MAX_BITS: usize = 48;

/// A cursor over the bits of one base64url segment.
#[derive(Debug, Clone)]
pub(crate) struct BitReader<'a> {
    text: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    /// A reader over `text`, or `None` when a character is outside the base64url alphabet
    /// (padding `=` included: the IAB formats never pad).
    pub(crate) fn new(text: &'a [u8]) -> Option<Self> {
        if text.iter().all(|&c| sextet(c).is_some()) {
            Some(Self { text, pos: 0 })
        } else {
            None
        }
    }

    /// How many bits the text holds.
    pub(crate) fn len(&self) -> usize {
        self.text.len() * 6
    }

    /// How many bits are left to read.
    pub(crate) fn remaining(&self) -> usize {
        self.len() - self.pos
    }

    fn bit_at(&self, i: usize) -> bool {
        // `new` checked every character; the fallback is never taken.
        let value = self.text.get(i / 6).and_then(|&c| sextet(c)).unwrap_or(0);
        (value >> (5 - i % 6)) & 1 == 1
    }

    /// The next bit.
    pub(crate) fn bool(&mut self) -> Option<bool> {
        if self.pos >= self.len() {
            return None;
        }
        let bit = self.bit_at(self.pos);
        self.pos += 1;
        Some(bit)
    }

    /// The next `n` bits (at most 64) as an unsigned integer.
    pub(crate) fn uint(&mut self, n: usize) -> Option<u64> {
        if n > 64 || self.remaining() < n {
            return None;
        }
        let mut value = 0u64;
        for _ in 0..n {
            value = (value << 1) | u64::from(self.bit_at(self.pos));
            self.pos += 1;
        }
        Some(value)
    }

    /// The next `n` bits (at most 16) as a `u16`.
    pub(crate) fn u16(&mut self, n: usize) -> Option<u16> {
        debug_assert!(n <= 16);
        self.uint(n.min(16)).and_then(|v| u16::try_from(v).ok())
    }

    /// The next `n` bits (at most 8) as a `u8`.
    pub(crate) fn u8(&mut self, n: usize) -> Option<u8> {
        debug_assert!(n <= 8);
        self.uint(n.min(8)).and_then(|v| u8::try_from(v).ok())
    }

    /// The next `n` bits (at most 64) as a set: bit `i` of the result is the `i`-th bit read,
    /// so item `k` of a 1-based IAB bitfield is bit `k - 1`.
    pub(crate) fn flags(&mut self, n: usize) -> Option<u64> {
        if n > 64 || self.remaining() < n {
            return None;
        }
        let mut value = 0u64;
        for i in 0..n {
            if self.bit_at(self.pos) {
                value |= 1 << i;
            }
            self.pos += 1;
        }
        Some(value)
    }

    /// A Fibonacci-coded positive integer (Zeckendorf digits, least significant first, ended
    /// by the first `11`), as GPP's header writes section ids.
    pub(crate) fn fibonacci(&mut self) -> Option<u64> {
        let (mut a, mut b) = (1u64, 2u64);
        let mut value = 0u64;
        let mut previous = false;
        for _ in 0..FIBONACCI_MAX_BITS {
            let bit = self.bool()?;
            if bit && previous {
                return Some(value);
            }
            if bit {
                value = value.checked_add(a)?;
            }
            previous = bit;
            (a, b) = (b, a.checked_add(b)?);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bits_most_significant_first() {
        // 'B' = 000001, 'g' = 100000
        let mut r = BitReader::new(b"Bg").unwrap();
        assert_eq!(r.len(), 12);
        assert_eq!(r.uint(6), Some(1));
        assert_eq!(r.bool(), Some(true));
        assert_eq!(r.uint(5), Some(0));
        assert_eq!(r.bool(), None);
        assert_eq!(r.uint(1), None);
    }

    #[test]
    fn refuses_characters_outside_base64url() {
        assert!(BitReader::new(b"AB=").is_none());
        assert!(BitReader::new(b"A+").is_none());
        assert!(BitReader::new(b"").is_some());
    }

    #[test]
    fn fibonacci_codes() {
        // 1 = "11", 2 = "011", 3 = "0011", 4 = "1011", 12 = "101011" (1 + 3 + 8)
        for (bits, value) in [
            ("11", 1),
            ("011", 2),
            ("0011", 3),
            ("1011", 4),
            ("101011", 12),
        ] {
            let mut padded = bits.to_string();
            while padded.len() % 6 != 0 {
                padded.push('0');
            }
            let text: Vec<u8> = padded
                .as_bytes()
                .chunks(6)
                .map(|c| {
                    let v = c.iter().fold(0u8, |acc, &b| (acc << 1) | (b - b'0'));
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[v as usize]
                })
                .collect();
            let mut r = BitReader::new(&text).unwrap();
            assert_eq!(r.fibonacci(), Some(value), "{bits}");
        }
    }

    #[test]
    fn fibonacci_without_terminator_is_none() {
        let mut r = BitReader::new(b"AAAAAAAAAAAA").unwrap();
        assert_eq!(r.fibonacci(), None);
    }
}
