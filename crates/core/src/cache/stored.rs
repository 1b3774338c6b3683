//! The header block stored with a cached body (the core cache's user metadata), and what is
//! left out of it.
//!
//! Stored: the status and the response headers exactly as the first client got them, minus
//! every per-reader or cache-only header ([`is_per_reader`]): `Set-Cookie` (the edge-ID cookie
//! is added per request on the way out; an origin cookie makes the page pass), the surrogate
//! headers (for the cache, never the browser) and `x-ts-cache` (each response says its own);
//! and the origin's two stale windows ([`StaleWindows`]), which the core cache cannot keep
//! apart itself (it is given the longer one; see `super::stale`).
//!
//! Layout: `TSH3`, `stale-while-revalidate` and `stale-if-error` in seconds (u32 each,
//! big-endian), the entry's audience (one byte: `0` anonymous readers only, `1` every reader,
//! see `super::shared::Audience`), the status (u16), the number of headers (u16), then each
//! name and value with a u16 length before it. Bounded by [`MAX_BLOCK_BYTES`]; a block that
//! does not decode is a cache error, never a panic. The previous layouts still decode: `TSH2`
//! (the same without the audience byte) and `TSH1` (without the windows either), both as
//! serving anonymous readers only (they were stored before readers with cookies could fill,
//! so from answers that may have been shared by default only); a `TSH1` block has no windows:
//! its entries were inserted with their `stale-while-revalidate` as the cache's window, which
//! is what the caller then assumes.

use std::time::Duration;

use http::{HeaderName, HeaderValue};

use super::shared::Audience;
use super::stale::StaleWindows;

/// Largest header block stored: a page whose headers need more is not cached.
pub const MAX_BLOCK_BYTES: usize = 32 * 1024;

const MAGIC: &[u8] = b"TSH3";
/// The layout before the audience was stored.
const MAGIC_V2: &[u8] = b"TSH2";
/// The layout before the stale windows were stored.
const MAGIC_V1: &[u8] = b"TSH1";

/// The metadata of a remembered pass (an entry with no body): `TSPASS1:` and the reason.
const PASS_MAGIC: &[u8] = b"TSPASS1:";

/// What a header block holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The response status.
    pub status: u16,
    /// The stored headers, in order.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The origin's stale windows; `None` for a `TSH1` block, which did not keep them.
    pub windows: Option<StaleWindows>,
    /// Whom the entry may answer; [`Audience::Anonymous`] for the older layouts.
    pub audience: Audience,
}

/// The metadata that remembers a pass for `why` (see `policy::REMEMBER_PASS`).
pub fn pass_marker(why: super::PassWhy) -> Vec<u8> {
    [PASS_MAGIC, why.as_str().as_bytes()].concat()
}

/// The reason a stored entry remembers, if it is a pass marker.
pub fn read_pass_marker(metadata: &[u8]) -> Option<super::PassWhy> {
    let name = metadata.strip_prefix(PASS_MAGIC)?;
    super::PassWhy::from_name(std::str::from_utf8(name).ok()?)
}

/// Whether a response header is per reader or for the cache only, so never stored.
pub fn is_per_reader(name: &str) -> bool {
    name.eq_ignore_ascii_case("set-cookie")
        || name.eq_ignore_ascii_case("surrogate-key")
        || name.eq_ignore_ascii_case("surrogate-control")
        || name.eq_ignore_ascii_case(super::CACHE_STATE_HEADER)
}

/// Seconds as stored: a window is at most `policy::MAX_LIFETIME` (a year), so a u32 holds it;
/// anything larger is kept as the largest u32.
fn secs(d: Duration) -> [u8; 4] {
    u32::try_from(d.as_secs()).unwrap_or(u32::MAX).to_be_bytes()
}

/// The block for `status`, `headers` (without the per-reader ones), the origin's stale
/// `windows` and the entry's `audience`; `None` when it would exceed [`MAX_BLOCK_BYTES`].
pub fn encode(
    status: u16,
    headers: &[(HeaderName, HeaderValue)],
    windows: StaleWindows,
    audience: Audience,
) -> Option<Vec<u8>> {
    let kept: Vec<_> = headers
        .iter()
        .filter(|(n, _)| !is_per_reader(n.as_str()))
        .collect();
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&secs(windows.while_revalidate));
    out.extend_from_slice(&secs(windows.if_error));
    out.push(match audience {
        Audience::Anonymous => 0,
        Audience::Everyone => 1,
    });
    out.extend_from_slice(&status.to_be_bytes());
    out.extend_from_slice(&u16::try_from(kept.len()).ok()?.to_be_bytes());
    for (name, value) in kept {
        for part in [name.as_str().as_bytes(), value.as_bytes()] {
            out.extend_from_slice(&u16::try_from(part.len()).ok()?.to_be_bytes());
            out.extend_from_slice(part);
        }
        if out.len() > MAX_BLOCK_BYTES {
            return None;
        }
    }
    Some(out)
}

/// The stale windows of a block, read from its start only (the lookup needs them before it
/// decides whether to read the rest). `None` for a `TSH1` block or anything else.
pub fn windows(block: &[u8]) -> Option<StaleWindows> {
    let rest = block
        .strip_prefix(MAGIC)
        .or_else(|| block.strip_prefix(MAGIC_V2))?;
    let word = |at: usize| -> Option<Duration> {
        let b = rest.get(at..at + 4)?;
        Some(Duration::from_secs(u64::from(u32::from_be_bytes([
            b[0], b[1], b[2], b[3],
        ]))))
    };
    Some(StaleWindows {
        while_revalidate: word(0)?,
        if_error: word(4)?,
    })
}

/// Whom the entry of a block may answer, read from its start only (the lookup decides with
/// it before reading the rest): [`Audience::Everyone`] only for a `TSH3` block that says so;
/// anything else (an older layout, a pass marker, damage) serves anonymous readers only.
pub fn audience(block: &[u8]) -> Audience {
    block
        .strip_prefix(MAGIC)
        .and_then(|rest| rest.get(8))
        .and_then(|&byte| audience_of(byte))
        .unwrap_or(Audience::Anonymous)
}

/// The audience a `TSH3` block's audience byte names; `None` for a byte no layout writes.
fn audience_of(byte: u8) -> Option<Audience> {
    match byte {
        0 => Some(Audience::Anonymous),
        1 => Some(Audience::Everyone),
        _ => None,
    }
}

/// What a block holds; `None` when it is not one these layouts wrote (truncated, another
/// version, an unknown audience byte, invalid names or values, trailing bytes).
pub fn decode(block: &[u8]) -> Option<Block> {
    let (windows, audience, mut rest) = if let Some(rest) = block.strip_prefix(MAGIC) {
        let audience = audience_of(*rest.get(8)?)?;
        (Some(windows(block)?), audience, rest.get(9..)?)
    } else if let Some(rest) = block.strip_prefix(MAGIC_V2) {
        (Some(windows(block)?), Audience::Anonymous, rest.get(8..)?)
    } else {
        (None, Audience::Anonymous, block.strip_prefix(MAGIC_V1)?)
    };
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    let u16_of = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
    let status = u16_of(take(2)?);
    let count = u16_of(take(2)?);
    let mut headers = Vec::with_capacity(usize::from(count).min(256));
    for _ in 0..count {
        let len = usize::from(u16_of(take(2)?));
        let name = HeaderName::from_bytes(take(len)?).ok()?;
        let len = usize::from(u16_of(take(2)?));
        let value = HeaderValue::from_bytes(take(len)?).ok()?;
        headers.push((name, value));
    }
    if !rest.is_empty() || !(100..1000).contains(&status) {
        return None;
    }
    Some(Block {
        status,
        headers,
        windows,
        audience,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn h(name: &str, value: &[u8]) -> (HeaderName, HeaderValue) {
        (
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(value).unwrap(),
        )
    }

    const W: StaleWindows = StaleWindows {
        while_revalidate: Duration::from_secs(30),
        if_error: Duration::from_secs(600),
    };

    #[test]
    fn per_reader_headers_are_never_stored() {
        let headers = [
            h("content-type", b"text/html"),
            h("set-cookie", b"ts-ec=abc.123456; Path=/"),
            h("Surrogate-Key", b"a b"),
            h("surrogate-control", b"max-age=60"),
            h("x-ts-cache", b"MISS"),
            h("etag", b"W/\"v1\""),
            h("vary", b"Accept-Encoding"),
        ];
        let block = encode(200, &headers, W, Audience::Anonymous).unwrap();
        assert!(
            !block.windows(5).any(|w| w == b"ts-ec"),
            "the cookie's value"
        );
        let back = decode(&block).unwrap();
        assert_eq!(back.status, 200);
        assert_eq!(
            back.headers,
            [headers[0].clone(), headers[5].clone(), headers[6].clone()]
        );
        assert_eq!(back.windows, Some(W));
        assert_eq!(back.audience, Audience::Anonymous);
    }

    #[test]
    fn pass_markers_read_back_and_are_never_header_blocks() {
        use crate::cache::PassWhy;
        for why in PassWhy::ALL {
            let marker = pass_marker(why);
            assert_eq!(read_pass_marker(&marker), Some(why));
            assert_eq!(decode(&marker), None);
        }
        let block = encode(200, &[h("a", b"b")], W, Audience::Everyone).unwrap();
        assert_eq!(read_pass_marker(&block), None);
        assert_eq!(windows(&pass_marker(PassWhy::Status)), None);
        assert_eq!(audience(&pass_marker(PassWhy::Cookie)), Audience::Anonymous);
        assert_eq!(read_pass_marker(b"TSPASS1:nope"), None);
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        let block = encode(404, &[h("a", b"xy")], W, Audience::Anonymous).unwrap();
        assert_eq!(
            block,
            b"TSH3\x00\x00\x00\x1e\x00\x00\x02\x58\x00\x01\x94\x00\x01\x00\x01a\x00\x02xy"
        );
        assert_eq!(windows(&block), Some(W));
        assert_eq!(audience(&block), Audience::Anonymous);
        let block = encode(404, &[h("a", b"xy")], W, Audience::Everyone).unwrap();
        assert_eq!(
            block,
            b"TSH3\x00\x00\x00\x1e\x00\x00\x02\x58\x01\x01\x94\x00\x01\x00\x01a\x00\x02xy"
        );
        assert_eq!(audience(&block), Audience::Everyone);
        assert_eq!(decode(&block).map(|b| b.audience), Some(Audience::Everyone));
        // An audience byte no encoder writes is damage, and serves no reader with cookies.
        let mut odd = block.clone();
        odd[12] = 2;
        assert_eq!(decode(&odd), None);
        assert_eq!(audience(&odd), Audience::Anonymous);
        // A window past a u32 of seconds is kept as the largest one (never wraps).
        let huge = StaleWindows {
            while_revalidate: Duration::from_secs(u64::MAX),
            if_error: Duration::ZERO,
        };
        let block = encode(200, &[], huge, Audience::Anonymous).unwrap();
        let read = windows(&block).unwrap();
        assert_eq!(read.while_revalidate, Duration::from_secs(u32::MAX.into()));
    }

    #[test]
    fn the_previous_layout_still_decodes_without_windows() {
        // What the TSH1 encoder wrote for 404 and `a: xy`.
        let v1 = b"TSH1\x01\x94\x00\x01\x00\x01a\x00\x02xy";
        let block = decode(v1).unwrap();
        assert_eq!(block.status, 404);
        assert_eq!(block.headers, [h("a", b"xy")]);
        assert_eq!(block.windows, None);
        assert_eq!(block.audience, Audience::Anonymous);
        assert_eq!(windows(v1), None);
        assert_eq!(audience(v1), Audience::Anonymous);
    }

    #[test]
    fn the_windows_layout_still_decodes_for_anonymous_readers_only() {
        // What the TSH2 encoder wrote for 404, `a: xy` and the windows 30 s / 600 s.
        let v2 = b"TSH2\x00\x00\x00\x1e\x00\x00\x02\x58\x01\x94\x00\x01\x00\x01a\x00\x02xy";
        let block = decode(v2).unwrap();
        assert_eq!(block.status, 404);
        assert_eq!(block.headers, [h("a", b"xy")]);
        assert_eq!(block.windows, Some(W));
        assert_eq!(block.audience, Audience::Anonymous);
        assert_eq!(windows(v2), Some(W));
        assert_eq!(audience(v2), Audience::Anonymous);
    }

    #[test]
    fn oversized_and_damaged_blocks() {
        let big = vec![
            h("x-big", &vec![b'a'; 20_000]),
            h("x-big2", &vec![b'a'; 20_000]),
        ];
        assert_eq!(encode(200, &big, W, Audience::Everyone), None);
        let block = encode(200, &[h("a", b"xy")], W, Audience::Everyone).unwrap();
        for cut in 0..block.len() {
            assert_eq!(decode(&block[..cut]), None, "cut at {cut}");
        }
        assert_eq!(windows(&block[..11]), None);
        let mut trailing = block.clone();
        trailing.push(0);
        assert_eq!(decode(&trailing), None);
        assert_eq!(decode(b"TSH3\x00\xc8\x00\x00"), None);
        assert_eq!(decode(b"TSH4\x00\xc8\x00\x00"), None);
        assert_eq!(decode(b"TSH1\x00\x00\x00\x00"), None, "status 0");
        assert_eq!(
            decode(b"TSH2\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
            None,
            "status 0"
        );
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
            let mut with_magic = MAGIC.to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = decode(&with_magic);
            let _ = windows(&with_magic);
            let _ = audience(&with_magic);
            let mut v2 = MAGIC_V2.to_vec();
            v2.extend_from_slice(&bytes);
            let _ = decode(&v2);
            let mut v1 = MAGIC_V1.to_vec();
            v1.extend_from_slice(&bytes);
            let _ = decode(&v1);
        }

        #[test]
        fn round_trip(status in 100u16..1000, headers in proptest::collection::vec(("[a-z][a-z0-9-]{0,20}", "[ -~]{0,50}"), 0..20), swr in 0u64..=u64::from(u32::MAX), sie in 0u64..=u64::from(u32::MAX), everyone in any::<bool>()) {
            let headers: Vec<_> = headers.iter().map(|(n, v)| h(n, v.as_bytes())).collect();
            let kept: Vec<_> = headers.iter().filter(|(n, _)| !is_per_reader(n.as_str())).cloned().collect();
            let windows = StaleWindows {
                while_revalidate: Duration::from_secs(swr),
                if_error: Duration::from_secs(sie),
            };
            let audience = if everyone { Audience::Everyone } else { Audience::Anonymous };
            let block = encode(status, &headers, windows, audience).unwrap();
            prop_assert_eq!(super::audience(&block), audience);
            prop_assert_eq!(decode(&block), Some(Block { status, headers: kept, windows: Some(windows), audience }));
        }
    }
}
