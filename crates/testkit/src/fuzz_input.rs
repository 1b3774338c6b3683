//! How a fuzz input is read, shared by the fuzz targets (`fuzz/`) and the tests that replay
//! their saved inputs (`fuzz/regressions`), so a replay cuts the body where the target did.
//!
//! An input is the body, then a short trailer that says where the body is cut into chunks
//! and picks options. A file cut from a fixture is a usable seed as it is (its last bytes
//! become a harmless trailer), and `fuzz/make-seeds.py` writes seeds with an explicit trailer.

use crate::cut_points;

/// Request `(scheme, authority)` pairs the targets pick from with config bits: authorities
/// shorter and longer than the origin's (equal lengths would hide length bugs), both schemes.
pub const TARGETS: [(&str, &str); 4] = [
    ("http", "127.0.0.1:7676"),
    ("https", "www.a-much-longer-first-party-host-name.example"),
    ("https", "a.io"),
    ("http", "p.test:8080"),
];

/// A body and how to push it.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The bytes to push.
    pub body: &'a [u8],
    /// Sorted, deduplicated cut points in `0..=body.len()`.
    pub cuts: Vec<usize>,
    /// Option bits; each target says what they mean.
    pub config: u8,
    /// The raw cut values (for targets that use them for more than cuts).
    pub raw_cuts: Vec<u16>,
    /// One-byte chunks were asked for.
    pub bytewise: bool,
}

/// Longest body pushed one byte at a time (a 1-byte chunking of a large input costs seconds).
const MAX_BYTEWISE: usize = 4096;

/// Reads a fuzz input: `body ‖ cuts ‖ config ‖ n`. The last byte's low nibble `n` is the
/// number of cuts, each two little-endian bytes taken modulo `body.len() + 1`; `n == 15` means
/// one-byte chunks. The byte before it is `config`. Inputs shorter than the trailer are all
/// body.
pub fn split_input(data: &[u8]) -> Input<'_> {
    let empty = |body| Input {
        body,
        cuts: Vec::new(),
        config: 0,
        raw_cuts: Vec::new(),
        bytewise: false,
    };
    let Some((&last, rest)) = data.split_last() else {
        return empty(data);
    };
    let n = usize::from(last & 0x0f);
    let pairs = if n == 15 { 0 } else { n };
    let Some((&config, rest)) = rest.split_last() else {
        return empty(data);
    };
    if rest.len() < 2 * pairs {
        return empty(data);
    }
    let (body, spec) = rest.split_at(rest.len() - 2 * pairs);
    let raw_cuts: Vec<u16> = spec
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let cuts = if n == 15 {
        if body.len() <= MAX_BYTEWISE {
            (1..body.len()).collect()
        } else {
            Vec::new()
        }
    } else {
        cut_points(&raw_cuts, body.len())
    };
    Input {
        body,
        cuts,
        config,
        raw_cuts,
        bytewise: n == 15,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trailer_gives_cuts_and_config() {
        // body "abcdef", cuts 4 and 9 (9 % 7 = 2), config 0x5a, n = 2.
        let input = split_input(b"abcdef\x04\x00\x09\x00\x5a\x02");
        assert_eq!(input.body, b"abcdef");
        assert_eq!(input.cuts, [2, 4]);
        assert_eq!(input.raw_cuts, [4, 9]);
        assert_eq!(input.config, 0x5a);
        assert!(!input.bytewise);
        let bytewise = split_input(b"abcd\x00\x0f");
        assert_eq!((bytewise.body, bytewise.bytewise), (&b"abcd"[..], true));
        assert_eq!(bytewise.cuts, [1, 2, 3]);
        // Too short for the cuts it announces: all body.
        assert_eq!(split_input(b"ab\x03").body, b"ab\x03");
    }
}
