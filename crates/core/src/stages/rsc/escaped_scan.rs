//! How far escaped Flight text reads as Next.js writes it, 64 bytes at a time: the scan under
//! the fast reader ([`super::escaped`]).
//!
//! Text reads on while it holds only plain bytes and the escapes [`common_escape`] knows (the
//! ones Next.js writes: `\"`, `\\`, `\n`, and the `\u00XX` of `<`, `>`, `&`). It ends at the
//! `\n` escape that ends a newline row, after a given number of decoded bytes (a `T` row), or
//! before anything else: the string's closing quote, another escape, a raw byte the encoder
//! would have escaped (`<`, `>`, `&`, a control byte, U+2028, U+2029), or the end of the
//! input. Its bytes are then exactly the bytes the encoder would write for what they decode
//! to, which is what lets the reader copy them through.
//!
//! A block of 64 bytes is read from two bit masks made from 16-byte vectors, backslashes and
//! quotes, and one test for any raw byte that may stop the reading (whose mask is made only
//! in the few blocks that hold one): which bytes the backslashes escape comes from the
//! backslash mask alone (in a run of backslashes every second one escapes the byte after it,
//! counting from the run's start; one addition's carries find every run's start and parity at
//! once, as simdjson does). The rare bytes the masks cannot settle alone (an escape other
//! than `\"` and `\\`, such as the `\n` that ends a row or a `\u00XX`; an `E2` that may start
//! U+2028) are looked at one by one. A block where the count of decoded bytes
//! runs out is read byte by byte ([`by_bytes`], which is also the reference the block reading
//! is tested against).

use wide::u8x16;

use super::js_string::common_escape;

/// How a run of text ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// Just after the `\n` escape that ends a newline row.
    Row,
    /// After as many decoded bytes as were asked for.
    Count,
    /// Before something this reader does not read.
    Stop,
}

/// How far a run of text read, and what it held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Scanned {
    /// Where it ended.
    pub(super) end: usize,
    /// How it ended.
    pub(super) how: End,
    /// The decoded bytes read.
    pub(super) decoded: u64,
    /// Whether its only escapes are `\"` (but for the `\n` that ends a newline row): then
    /// every byte of it but those escapes' backslashes decodes to itself.
    pub(super) quotes_only: bool,
}

/// Reads text from `raw[from..]` (which starts between escapes): plain bytes and
/// [`common_escape`]s, up to `limit` decoded bytes, or (with `line`) to the `\n` escape that
/// ends a newline row, or to anything else (module docs).
pub(super) fn content(raw: &[u8], from: usize, limit: u64, line: bool) -> Scanned {
    let mut i = from;
    let mut n = 0u64;
    let mut quotes_only = true;
    loop {
        let block = read_block(raw, i, line);
        let room = limit - n;
        // As `by_bytes` counts: a row's `\n` may take the last byte of room; nothing else
        // ends a block once the room is used up.
        let fits = match block.end {
            Some(End::Row) => block.decoded <= room,
            _ => block.decoded < room,
        };
        if !fits {
            let rest = by_bytes(raw, i, room, line);
            return Scanned {
                decoded: n + rest.decoded,
                quotes_only: quotes_only && rest.quotes_only,
                ..rest
            };
        }
        i += block.len;
        n += block.decoded;
        quotes_only &= block.quotes_only;
        if let Some(how) = block.end {
            return Scanned {
                end: i,
                how,
                decoded: n,
                quotes_only,
            };
        }
    }
}

/// [`content`] read one byte or escape at a time.
pub(super) fn by_bytes(raw: &[u8], from: usize, limit: u64, line: bool) -> Scanned {
    let (mut i, mut n) = (from, 0u64);
    let mut quotes_only = true;
    let scanned = |end, how, decoded, quotes_only| Scanned {
        end,
        how,
        decoded,
        quotes_only,
    };
    loop {
        if n == limit {
            return scanned(i, End::Count, n, quotes_only);
        }
        match raw.get(i) {
            None | Some(b'"') => return scanned(i, End::Stop, n, quotes_only),
            Some(b'\\') => match common_escape(&raw[i..]) {
                Some((b'\n', len)) if line => {
                    return scanned(i + len, End::Row, n + 1, quotes_only)
                }
                Some((b, len)) => {
                    quotes_only &= b == b'"';
                    i += len;
                }
                None => return scanned(i, End::Stop, n, quotes_only),
            },
            Some(_) if stops_raw(raw, i) => return scanned(i, End::Stop, n, quotes_only),
            Some(_) => i += 1,
        }
        n += 1;
    }
}

/// Whether the raw byte at `raw[at]` stops the reading: a byte the encoder escapes, or the
/// `E2` of a U+2028 or U+2029 (or one too near the end of the input to tell).
fn stops_raw(raw: &[u8], at: usize) -> bool {
    match raw[at] {
        b'<' | b'>' | b'&' | 0..=0x1f => true,
        0xe2 => match raw.get(at + 1..at + 3) {
            Some([second, third]) => *second == 0x80 && matches!(third, 0xa8 | 0xa9),
            _ => true,
        },
        _ => false,
    }
}

/// Bytes in one block.
const BLOCK: usize = 64;

/// Every other bit, from bit 0.
const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

/// What one block read.
#[derive(Debug)]
struct Block {
    /// Bytes read.
    len: usize,
    /// Their decoded length.
    decoded: u64,
    /// How the text ended within them, if it did.
    end: Option<End>,
    /// Whether their only escapes are `\"` (a row's closing `\n` aside).
    quotes_only: bool,
}

/// Reads the (up to) 64 bytes at `raw[at..]`, which start between escapes.
fn read_block(raw: &[u8], at: usize, line: bool) -> Block {
    let real = (raw.len() - at).min(BLOCK);
    let mut padded = [b'"'; BLOCK];
    let bytes: &[u8; BLOCK] = match raw[at..].first_chunk() {
        Some(bytes) => bytes,
        None => {
            // Past the end of the input, a quote: the reading stops there, as at the end.
            padded[..real].copy_from_slice(&raw[at..]);
            &padded
        }
    };
    let ([backslash, quote], any_odd) = masks(bytes);
    let odd = if any_odd { odd_mask(bytes) } else { 0 };
    let follows = backslash << 1;
    let odd_starts = backslash & !EVEN_BITS & !follows;
    let (even_runs, _) = odd_starts.overflowing_add(backslash);
    // The bytes an escape's backslash applies to.
    let escaped = (EVEN_BITS ^ (even_runs << 1)) & follows;
    let starts = backslash & !escaped;
    // Where the reading stops (before the byte), ends a row (after it), or must leave the
    // rest to the next block (before it).
    let mut stop = quote & !escaped;
    let mut rows = 0u64;
    let mut cut = if starts >> (BLOCK - 1) == 1 {
        BLOCK - 1
    } else {
        BLOCK
    };
    if (1..BLOCK).contains(&real) && starts & (1 << (real - 1)) != 0 {
        // An escape cut short by the end of the input.
        stop |= 1 << (real - 1);
    }
    // Raw bytes that stop the reading, but for an `E2` that does not start U+2028 or U+2029.
    let mut raw_odd = odd & !escaped;
    while raw_odd != 0 {
        let k = raw_odd.trailing_zeros() as usize;
        if stops_raw(raw, at + k) {
            stop |= 1 << k;
            break;
        }
        raw_odd &= raw_odd - 1;
    }
    // Escapes other than `\"` and `\\`: a `\n` (which may end a row), a `\u00XX` read here,
    // or a stop at its backslash.
    let mut others = escaped & !(quote | backslash);
    let mut long = 0u64;
    while others != 0 {
        let k = others.trailing_zeros() as usize;
        if bytes[k] == b'n' {
            if line {
                rows = 1 << k;
                break;
            }
            others &= others - 1;
            continue;
        }
        match common_escape(&raw[at + k - 1..]) {
            Some((_, 6)) if k + 4 < BLOCK => long |= 1 << k,
            // Its digits run into the next block: that block reads it.
            Some((_, 6)) => {
                cut = cut.min(k - 1);
                break;
            }
            _ => {
                stop |= 1 << (k - 1);
                break;
            }
        }
        others &= others - 1;
    }
    let first_stop = stop.trailing_zeros() as usize;
    let first_row = rows.trailing_zeros() as usize;
    let (len, end) = if first_row < first_stop && first_row < cut {
        (first_row + 1, Some(End::Row))
    } else if first_stop < cut {
        (first_stop, Some(End::Stop))
    } else {
        (cut, None)
    };
    let within = if len == BLOCK {
        u64::MAX
    } else {
        (1u64 << len) - 1
    };
    // Each escape is one byte for two, a `\u00XX` one for six.
    let mut saved = u64::from((escaped & within).count_ones());
    if long != 0 {
        saved += 4 * u64::from((long & within).count_ones());
    }
    // A row's closing `\n` is the last byte read.
    let before_row = if end == Some(End::Row) {
        within >> 1
    } else {
        within
    };
    Block {
        len,
        decoded: len as u64 - saved,
        end,
        quotes_only: escaped & !quote & before_row == 0,
    }
}

/// Bit `k` set where `bytes[k]` is a backslash, a quote; and whether any byte is one that may
/// stop the reading ([`odd_mask`]), which few blocks hold.
fn masks(bytes: &[u8; BLOCK]) -> ([u64; 2], bool) {
    let [backslash, quote] = [b'\\', b'"'].map(u8x16::splat);
    let mut bits = [0u64; 2];
    let mut odd = u8x16::splat(0);
    for k in 0..BLOCK / 16 {
        let v = lanes(bytes, k);
        odd |= odd_lanes(v);
        for (bits, found) in bits.iter_mut().zip([v.cmp_eq(backslash), v.cmp_eq(quote)]) {
            // `move_mask` sets the low 16 bits of its i32, one per lane.
            *bits |= (found.move_mask() as u64 & 0xffff) << (16 * k);
        }
    }
    (bits, odd.any())
}

/// Bit `k` set where `bytes[k]` is a raw byte that may stop the reading: `<`, `>`, `&`, a
/// control byte, or `E2`.
fn odd_mask(bytes: &[u8; BLOCK]) -> u64 {
    (0..BLOCK / 16).fold(0, |bits, k| {
        bits | (odd_lanes(lanes(bytes, k)).move_mask() as u64 & 0xffff) << (16 * k)
    })
}

/// The `k`-th 16 bytes of `bytes`.
fn lanes(bytes: &[u8; BLOCK], k: usize) -> u8x16 {
    let mut lanes = [0; 16];
    lanes.copy_from_slice(&bytes[16 * k..16 * (k + 1)]);
    u8x16::new(lanes)
}

/// All ones in the lanes of `v` that hold a byte [`odd_mask`] marks.
fn odd_lanes(v: u8x16) -> u8x16 {
    let [lt, gt, amp, e2, top] = [b'<', b'>', b'&', 0xe2, 0x1f].map(u8x16::splat);
    // `min(v, 0x1f) == v` exactly where `v` ≤ 0x1f.
    v.cmp_eq(lt) | v.cmp_eq(gt) | v.cmp_eq(amp) | v.cmp_eq(e2) | v.min(top).cmp_eq(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// The block reading agrees with reading byte by byte, for runs of backslashes of
        /// every length, escapes and stopping bytes across block boundaries, and every limit.
        #[test]
        fn blocks_read_as_bytes_do(
            parts in proptest::collection::vec(prop_oneof![
                // Mostly what Flight text holds, so that many blocks read whole.
                12 => "[a-z]{1,24}", 4 => Just("\\\"".to_owned()), 3 => Just("\\\\".to_owned()),
                2 => Just("\\n".to_owned()), 1 => Just("\\".to_owned()), 2 => Just("\\u003c".to_owned()),
                1 => Just("\\u0026".to_owned()), 1 => Just("\\u003e".to_owned()),
                1 => Just("\\u0041".to_owned()), 1 => Just("\\u00".to_owned()), 1 => Just("\"".to_owned()),
                1 => Just("n".to_owned()), 1 => Just("u".to_owned()), 1 => Just("\\t".to_owned()),
                1 => Just("<".to_owned()), 1 => Just("&".to_owned()), 1 => Just("\u{1}".to_owned()),
                1 => Just("\u{2028}".to_owned()), 1 => Just("\u{2029}".to_owned()),
                1 => Just("\u{2014}".to_owned()), 1 => Just("é".to_owned()),
            ], 0..120),
            from in 0..70usize,
            limit in prop_oneof![Just(u64::MAX), 0..400u64],
            line in any::<bool>(),
            trim in 0..3usize,
        ) {
            let raw = parts.concat();
            // Cut anywhere, even inside a character or an escape.
            let raw = &raw.as_bytes()[..raw.len().saturating_sub(trim)];
            // Start between escapes, as the reader does.
            let mut start = 0;
            while start < from.min(raw.len()) {
                start += common_escape(&raw[start..]).map_or(1, |(_, len)| len);
            }
            let start = start.min(raw.len());
            prop_assert_eq!(
                content(raw, start, limit, line),
                by_bytes(raw, start, limit, line)
            );
        }
    }

    #[test]
    fn each_kind_of_end_is_found_in_a_block_and_across_one() {
        for pad in [0, 1, 30, 57, 58, 59, 60, 61, 62, 63, 64, 65] {
            let lead = "x".repeat(pad);
            for (tail, line) in [
                ("a\\nb", true),
                ("a\\u003cb\\nz", true),
                ("a\\\"b\"", false),
                ("a<b", false),
                ("a\u{2028}b", false),
                ("a\u{2014}b\\u0026\\\\\\\"", false),
                ("a\\u0041b", false),
                ("a\\", false),
                ("a\\u00", false),
            ] {
                let raw = format!("{lead}{tail}");
                let raw = raw.as_bytes();
                for limit in [u64::MAX, pad as u64, pad as u64 + 2, 70] {
                    assert_eq!(
                        content(raw, 0, limit, line),
                        by_bytes(raw, 0, limit, line),
                        "{pad} {tail:?} {limit}"
                    );
                }
            }
        }
        // Spot checks of the reference itself, counted by hand.
        let scanned = |end, how, decoded, quotes_only| Scanned {
            end,
            how,
            decoded,
            quotes_only,
        };
        let all = u64::MAX;
        assert_eq!(
            by_bytes(b"ab\\nc", 0, all, true),
            scanned(4, End::Row, 3, true)
        );
        assert_eq!(
            by_bytes(b"ab\\nc", 0, all, false),
            scanned(5, End::Stop, 4, false)
        );
        assert_eq!(
            by_bytes(b"a\\\"b\\nc", 0, all, true),
            scanned(6, End::Row, 4, true)
        );
        assert_eq!(
            by_bytes(b"a\\\\b\\nc", 0, all, true),
            scanned(6, End::Row, 4, false)
        );
        assert_eq!(
            by_bytes(b"a\\u003cb\"", 0, all, false),
            scanned(8, End::Stop, 3, false)
        );
        assert_eq!(
            by_bytes(b"a\\u003cb", 0, 2, false),
            scanned(7, End::Count, 2, false)
        );
        assert_eq!(
            by_bytes("a\u{2028}".as_bytes(), 0, all, false),
            scanned(1, End::Stop, 1, true)
        );
        assert_eq!(
            by_bytes("a\u{2014}".as_bytes(), 0, all, false),
            scanned(4, End::Stop, 4, true)
        );
        assert_eq!(
            by_bytes(b"a\xe2\x80", 0, all, false),
            scanned(1, End::Stop, 1, true)
        );
    }
}
