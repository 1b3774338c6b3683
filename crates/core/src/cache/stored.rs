//! The header block stored with a cached body (the core cache's user metadata), and what is
//! left out of it.
//!
//! Stored: the status and the response headers exactly as the first client got them, minus
//! every per-reader or cache-only header ([`is_per_reader`]): `Set-Cookie` (the edge-ID cookie
//! is added per request on the way out; an origin cookie makes the page pass), the surrogate
//! headers (for the cache, never the browser) and `x-ts-cache` (each response says its own).
//!
//! Layout: `TSH1`, the status (u16, big-endian), the number of headers (u16), then each name
//! and value with a u16 length before it. Bounded by [`MAX_BLOCK_BYTES`]; a block that does
//! not decode is a cache error, never a panic.

use http::{HeaderName, HeaderValue};

/// Largest header block stored: a page whose headers need more is not cached.
pub const MAX_BLOCK_BYTES: usize = 32 * 1024;

const MAGIC: &[u8] = b"TSH1";

/// The metadata of a remembered pass (an entry with no body): `TSPASS1:` and the reason.
const PASS_MAGIC: &[u8] = b"TSPASS1:";

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

/// The block for `status` and `headers`, without the per-reader ones; `None` when it would
/// exceed [`MAX_BLOCK_BYTES`].
pub fn encode(status: u16, headers: &[(HeaderName, HeaderValue)]) -> Option<Vec<u8>> {
    let kept: Vec<_> = headers
        .iter()
        .filter(|(n, _)| !is_per_reader(n.as_str()))
        .collect();
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(MAGIC);
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

/// The status and headers of a block; `None` when it is not one this layout wrote (truncated,
/// another version, invalid names or values, trailing bytes).
pub fn decode(block: &[u8]) -> Option<(u16, Vec<(HeaderName, HeaderValue)>)> {
    let mut rest = block.strip_prefix(MAGIC)?;
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
    Some((status, headers))
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
        let block = encode(200, &headers).unwrap();
        assert!(
            !block.windows(5).any(|w| w == b"ts-ec"),
            "the cookie's value"
        );
        let (status, back) = decode(&block).unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            back,
            [headers[0].clone(), headers[5].clone(), headers[6].clone()]
        );
    }

    #[test]
    fn pass_markers_read_back_and_are_never_header_blocks() {
        use crate::cache::PassWhy;
        for why in PassWhy::ALL {
            let marker = pass_marker(why);
            assert_eq!(read_pass_marker(&marker), Some(why));
            assert_eq!(decode(&marker), None);
        }
        let block = encode(200, &[h("a", b"b")]).unwrap();
        assert_eq!(read_pass_marker(&block), None);
        assert_eq!(read_pass_marker(b"TSPASS1:nope"), None);
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        let block = encode(404, &[h("a", b"xy")]).unwrap();
        assert_eq!(block, b"TSH1\x01\x94\x00\x01\x00\x01a\x00\x02xy");
    }

    #[test]
    fn oversized_and_damaged_blocks() {
        let big = vec![
            h("x-big", &vec![b'a'; 20_000]),
            h("x-big2", &vec![b'a'; 20_000]),
        ];
        assert_eq!(encode(200, &big), None);
        let block = encode(200, &[h("a", b"xy")]).unwrap();
        for cut in 0..block.len() {
            assert_eq!(decode(&block[..cut]), None, "cut at {cut}");
        }
        let mut trailing = block.clone();
        trailing.push(0);
        assert_eq!(decode(&trailing), None);
        assert_eq!(decode(b"TSH2\x00\xc8\x00\x00"), None);
        assert_eq!(decode(b"TSH1\x00\x00\x00\x00"), None, "status 0");
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
            let mut with_magic = MAGIC.to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = decode(&with_magic);
        }

        #[test]
        fn round_trip(status in 100u16..1000, headers in proptest::collection::vec(("[a-z][a-z0-9-]{0,20}", "[ -~]{0,50}"), 0..20)) {
            let headers: Vec<_> = headers.iter().map(|(n, v)| h(n, v.as_bytes())).collect();
            let kept: Vec<_> = headers.iter().filter(|(n, _)| !is_per_reader(n.as_str())).cloned().collect();
            let block = encode(status, &headers).unwrap();
            prop_assert_eq!(decode(&block), Some((status, kept)));
        }
    }
}
