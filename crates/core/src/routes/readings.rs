//! How servers read a request path, for routing.
//!
//! The service proxies every path it does not own to the publisher's origin, with the client's
//! `Authorization` and query. An origin (or a proxy in front of it) that normalises paths reads
//! `//_ts/admin`, `/_ts//admin`, `/%5Fts/admin` or `/x/../_ts/admin` as `/_ts/admin`: if the
//! service routed by the bytes alone, such a spelling would carry an admin's credentials or a
//! signed query to the origin under the service's own path. So the router asks how the path
//! could be read:
//!
//! * [`normalise`]: the standard reading (RFC 3986 §6.2.2 and nginx's defaults):
//!   percent-encoded unreserved characters (`ALPHA DIGIT - . _ ~`, either hex case) decoded,
//!   repeated slashes merged, then `.` and `..` segments resolved (so `%2e%2e` counts). Letter
//!   case is kept: paths are case-sensitive. The service answers a path whose standard reading
//!   is one of its routes with that route.
//! * [`readings`]: every reading a server on the way could plausibly make, the standard one
//!   included: with or without decoding, decoding only unreserved characters or every escape
//!   (`%2F` as a slash, as nginx does, and `%5C` as a backslash), once or until nothing is
//!   left to decode (an application that decodes twice; at most [`MAX_DECODE_PASSES`]), a
//!   backslash read as a slash (WHATWG and IIS do), `;` path parameters dropped from each
//!   segment or not (Tomcat, Jetty and Spring drop them: `/_ts;x/admin`, `/x/..;/_ts/admin`),
//!   slashes merged or not, dot segments resolved or not, before or after the merge. A path
//!   with any reading in the service's namespaces is never proxied.
//!
//! Everything works on bytes: an escape may decode to a byte that is not UTF-8, and any input
//! is accepted (no panics).

/// Which escapes a reading decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decode {
    /// None: the bytes as sent.
    Nothing,
    /// `%XX` of an unreserved character only (RFC 3986 §6.2.2.2), until none is left.
    Unreserved,
    /// Every `%XX`, once.
    Every,
    /// Every `%XX`, again and again until none is left (an application that decodes what its
    /// server already decoded).
    EveryRepeatedly,
}

/// Whether and in which order a reading merges slashes and resolves dot segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    AsSent,
    Merged,
    Resolved,
    MergedThenResolved,
    ResolvedThenMerged,
}

/// The standard reading of `path` (see the module): what the service routes by.
pub fn normalise(path: &str) -> String {
    let read = read(
        path.as_bytes(),
        Decode::Unreserved,
        false,
        Shape::MergedThenResolved,
    );
    // Decoding an unreserved escape replaces three ASCII bytes by one: still UTF-8.
    String::from_utf8(read).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Most passes of decoding a reading makes (an application decoding what its server already
/// decoded is plausible; one that decodes nine times is not). It also bounds the work: each
/// pass is linear in the path, and a path such as `%2525…5F` would otherwise need a pass per
/// two bytes.
pub const MAX_DECODE_PASSES: usize = 8;

/// Every plausible reading of `path` (see the module), deduplicated; the bytes as sent and
/// [`normalise`]'s reading among them. Bytes that are not UTF-8 are replaced (`U+FFFD`): the
/// service's paths are ASCII, so no replacement makes a path one of them. Each way of
/// decoding is computed once; the other choices only reshape its result.
pub fn readings(path: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for decode in [
        Decode::Nothing,
        Decode::Unreserved,
        Decode::Every,
        Decode::EveryRepeatedly,
    ] {
        let decoded = decoded(path.as_bytes(), decode);
        for backslash in [false, true] {
            for params in [false, true] {
                let mut bytes = decoded.clone();
                if backslash {
                    backslash_to_slash(&mut bytes);
                }
                if params {
                    bytes = drop_path_parameters(&bytes);
                }
                for shape in [
                    Shape::AsSent,
                    Shape::Merged,
                    Shape::Resolved,
                    Shape::MergedThenResolved,
                    Shape::ResolvedThenMerged,
                ] {
                    let text = String::from_utf8_lossy(&reshape(&bytes, shape)).into_owned();
                    if !out.contains(&text) {
                        out.push(text);
                    }
                }
            }
        }
    }
    out
}

/// Whether every reading of `path` is `path` itself: an absolute path without an escape, a
/// backslash, a `;`, a repeated slash or a segment that starts with a dot. (The common case,
/// answered without building the readings.)
pub fn is_plain(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains("//")
        && !path.contains("/.")
        && !path.bytes().any(|b| matches!(b, b'%' | b'\\' | b';'))
}

fn read(path: &[u8], decode: Decode, backslash_is_slash: bool, shape: Shape) -> Vec<u8> {
    let mut bytes = decoded(path, decode);
    if backslash_is_slash {
        backslash_to_slash(&mut bytes);
    }
    reshape(&bytes, shape)
}

/// `path` with the escapes `decode` names decoded.
fn decoded(path: &[u8], decode: Decode) -> Vec<u8> {
    match decode {
        Decode::Nothing => path.to_vec(),
        Decode::Unreserved => decode_until_done(path, is_unreserved),
        Decode::Every => percent_decode(path, |_| true),
        Decode::EveryRepeatedly => decode_until_done(path, |_| true),
    }
}

/// Every `\` read as `/`.
fn backslash_to_slash(bytes: &mut [u8]) {
    for b in bytes {
        if *b == b'\\' {
            *b = b'/';
        }
    }
}

/// Each segment without its `;` parameters (`/a;x=1/b;c` is `/a/b`), as Servlet containers
/// read a path.
fn drop_path_parameters(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let mut in_parameters = false;
    for &b in path {
        match b {
            b'/' => {
                in_parameters = false;
                out.push(b);
            }
            b';' => in_parameters = true,
            _ if !in_parameters => out.push(b),
            _ => {}
        }
    }
    out
}

/// `bytes` merged and dot-resolved as `shape` says.
fn reshape(bytes: &[u8], shape: Shape) -> Vec<u8> {
    match shape {
        Shape::AsSent => bytes.to_vec(),
        Shape::Merged => merge_slashes(bytes),
        Shape::Resolved => remove_dot_segments(bytes),
        Shape::MergedThenResolved => remove_dot_segments(&merge_slashes(bytes)),
        Shape::ResolvedThenMerged => merge_slashes(&remove_dot_segments(bytes)),
    }
}

/// `ALPHA / DIGIT / "-" / "." / "_" / "~"` (RFC 3986 §2.3).
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Decodes each `%XX` (either hex case) whose byte `wanted` accepts; anything else, a `%`
/// without two hex digits included, stays as it is.
fn percent_decode(path: &[u8], wanted: impl Fn(u8) -> bool) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok());
    let mut out = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        if path[i] == b'%' {
            if let (Some(hi), Some(lo)) = (
                path.get(i + 1).copied().and_then(hex),
                path.get(i + 2).copied().and_then(hex),
            ) {
                let byte = hi * 16 + lo;
                if wanted(byte) {
                    out.push(byte);
                    i += 3;
                    continue;
                }
            }
        }
        out.push(path[i]);
        i += 1;
    }
    out
}

/// [`percent_decode`] again until nothing changes (`%%35F` is `%5F` after one pass, `_` after
/// two), at most [`MAX_DECODE_PASSES`] times.
fn decode_until_done(path: &[u8], wanted: impl Fn(u8) -> bool) -> Vec<u8> {
    let mut bytes = percent_decode(path, &wanted);
    for _ in 1..MAX_DECODE_PASSES {
        let again = percent_decode(&bytes, &wanted);
        if again.len() == bytes.len() {
            break;
        }
        bytes = again;
    }
    bytes
}

/// Runs of `/` become one `/` (nginx's `merge_slashes`, on by default).
fn merge_slashes(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for &b in path {
        if !(b == b'/' && out.last() == Some(&b'/')) {
            out.push(b);
        }
    }
    out
}

/// RFC 3986 §5.2.4: `.` segments dropped, each `..` drops the segment before it (never above
/// the root); a path that ends in `.` or `..` keeps its trailing slash.
fn remove_dot_segments(path: &[u8]) -> Vec<u8> {
    let absolute = path.first() == Some(&b'/');
    let body = if absolute { &path[1..] } else { path };
    let segments: Vec<&[u8]> = body.split(|&b| b == b'/').collect();
    let last = segments.len() - 1;
    let mut kept: Vec<&[u8]> = Vec::with_capacity(segments.len());
    let mut ends_in_slash = false;
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            b"." => ends_in_slash = i == last,
            b".." => {
                kept.pop();
                ends_in_slash = i == last;
            }
            other => kept.push(other),
        }
    }
    let mut out = Vec::with_capacity(path.len());
    for (i, segment) in kept.iter().enumerate() {
        if absolute || i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(segment);
    }
    if ends_in_slash || (absolute && out.is_empty()) {
        out.push(b'/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dots(path: &str) -> String {
        String::from_utf8(remove_dot_segments(path.as_bytes())).unwrap()
    }

    /// RFC 3986 §5.4's examples that are paths (the reference's path `/b/c/d;p` merged with
    /// each relative path by hand, as §5.2.3 does), and the edges of the root.
    #[test]
    fn dot_segments_as_rfc_3986_resolves_them() {
        for (input, want) in [
            ("/b/c/./g", "/b/c/g"),
            ("/b/c/g/", "/b/c/g/"),
            ("/b/c/.", "/b/c/"),
            ("/b/c/./", "/b/c/"),
            ("/b/c/..", "/b/"),
            ("/b/c/../", "/b/"),
            ("/b/c/../g", "/b/g"),
            ("/b/c/../..", "/"),
            ("/b/c/../../", "/"),
            ("/b/c/../../g", "/g"),
            ("/b/c/../../../g", "/g"),
            ("/b/c/../../../../g", "/g"),
            ("/./g", "/g"),
            ("/../g", "/g"),
            ("/b/c/g.", "/b/c/g."),
            ("/b/c/.g", "/b/c/.g"),
            ("/b/c/g..", "/b/c/g.."),
            ("/b/c/..g", "/b/c/..g"),
            ("/b/c/./../g", "/b/g"),
            ("/b/c/./g/.", "/b/c/g/"),
            ("/b/c/g/./h", "/b/c/g/h"),
            ("/b/c/g/../h", "/b/c/h"),
            ("/", "/"),
            ("/..", "/"),
            ("/.", "/"),
            ("", ""),
            ("//", "//"),
            ("/a//..", "/a/"),
        ] {
            assert_eq!(dots(input), want, "{input}");
        }
    }

    #[test]
    fn only_unreserved_escapes_decode_in_the_standard_reading() {
        assert_eq!(normalise("/%5Fts/%61dmin"), "/_ts/admin");
        assert_eq!(normalise("/%5fts/%2D%2e%7E"), "/_ts/-.~");
        assert_eq!(normalise("/_ts%2Fadmin"), "/_ts%2Fadmin");
        assert_eq!(normalise("/a%20b%3F"), "/a%20b%3F");
        assert_eq!(normalise("/%zz/%5/%"), "/%zz/%5/%");
        assert_eq!(normalise("/%255Fts"), "/%255Fts");
        // An escape that decoding makes is decoded too: no reading of the result differs.
        assert_eq!(normalise("/%%35Fts"), "/_ts");
        // Case is not folded: paths are case-sensitive.
        assert_eq!(normalise("/_TS/Admin"), "/_TS/Admin");
    }

    #[test]
    fn the_lenient_readings_include_encoded_slashes_backslashes_and_double_escapes() {
        let all = readings("/_ts%2Fadmin");
        assert!(all.iter().any(|r| r == "/_ts/admin"), "{all:?}");
        let all = readings("/%255Fts/admin");
        assert!(all.iter().any(|r| r == "/_ts/admin"), "{all:?}");
        let all = readings("/x\\..\\_ts\\admin");
        assert!(all.iter().any(|r| r == "/_ts/admin"), "{all:?}");
        let all = readings("/x/%2e%2E/_ts/admin");
        assert!(all.iter().any(|r| r == "/_ts/admin"), "{all:?}");
        let all = readings("/_ts;jsessionid=1/admin");
        assert!(all.iter().any(|r| r == "/_ts/admin"), "{all:?}");
        let all = readings("/x/..;/_ts/admin");
        assert!(all.iter().any(|r| r == "/_ts/admin"), "{all:?}");
        // The bytes as sent are a reading too.
        assert!(readings("/a//b").contains(&"/a//b".to_owned()));
    }

    /// An escape nested `levels` deep: each decoding pass peels one level (`%5F`, `%%35F`,
    /// `%%%335F`, …), so the whole path needs `levels` passes to become `/_`.
    fn nested(levels: usize) -> String {
        let mut s = "%5F".to_owned();
        for _ in 1..levels {
            let at = s.find(|c: char| c.is_ascii_digit()).expect("a digit");
            let digit = &s[at..=at];
            s = format!("{}%3{digit}{}", &s[..at], &s[at + 1..]);
        }
        format!("/{s}")
    }

    /// Decoding stops after `MAX_DECODE_PASSES`: a reading is linear work per pass, and a path
    /// nested deeper (4,000 levels in an 8 KB path) is read as what that many passes give.
    #[test]
    fn decoding_stops_after_the_most_passes() {
        assert_eq!(normalise(&nested(MAX_DECODE_PASSES)), "/_");
        assert_ne!(normalise(&nested(MAX_DECODE_PASSES + 1)), "/_");
        let deep = nested(4000);
        assert!(deep.len() > 8000);
        assert!(readings(&deep).iter().all(|r| r != "/_"));
    }

    #[test]
    fn escapes_that_are_not_utf8_do_not_panic() {
        let all = readings("/%ff%fe/%C3%28/\u{e9}");
        assert!(all.iter().any(|r| r.contains('\u{fffd}')), "{all:?}");
        assert_eq!(normalise("/\u{e9}%41"), "/\u{e9}A");
    }

    proptest! {
        /// The standard reading is a fixed point: read again, it stays.
        #[test]
        fn normalising_twice_is_normalising_once(path in "[/._a-z%0-9A-F~\\\\-]{0,40}") {
            let once = normalise(&path);
            prop_assert_eq!(normalise(&once), once.clone());
        }

        /// The standard reading has no repeated slash, no dot segment and no escape of an
        /// unreserved character left.
        #[test]
        fn the_standard_reading_is_normal(path in "[/._a-z%0-9A-F~-]{0,40}") {
            let n = normalise(&path);
            prop_assert!(!n.contains("//"), "{}", n);
            prop_assert!(!n.split('/').any(|s| s == "." || s == ".."), "{}", n);
            let b = n.as_bytes();
            for i in 0..b.len() {
                if b[i] == b'%' && i + 2 < b.len() {
                    let byte = u8::from_str_radix(&n[i + 1..i + 3], 16);
                    prop_assert!(!byte.is_ok_and(is_unreserved), "{}", n);
                }
            }
        }

        /// Any input, any bytes: no panic, and the standard reading is among the readings.
        #[test]
        fn any_path_is_read_without_panic(path in any::<String>()) {
            let n = normalise(&path);
            prop_assert!(readings(&path).contains(&n));
            prop_assert!(readings(&path).contains(&path));
        }

        /// A plain path has one reading: itself.
        #[test]
        fn a_plain_path_reads_as_itself(path in "[/._a-z%\\\\]{0,30}") {
            if is_plain(&path) {
                prop_assert_eq!(readings(&path), vec![path.clone()]);
            }
        }
    }
}
