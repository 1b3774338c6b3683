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
//!   left to decode (an application that decodes twice; at most [`MAX_DECODE_PASSES`]), with
//!   overlong UTF-8 read as the character it spells (`%C0%AF` as `/`, `%C1%9F` as `_`, as old
//!   IIS and lenient decoders do), a backslash read as a slash (WHATWG and IIS do), `;` path
//!   parameters dropped from each segment or not (Tomcat, Jetty and Spring drop them:
//!   `/_ts;x/admin`, `/x/..;/_ts/admin`), stripped as Windows and trimming servers strip a
//!   path or not (fullwidth ASCII such as `＿` read as ASCII, control characters and spaces
//!   removed, a NUL ending the path, the trailing dots of a segment dropped: `/_ts%09/admin`,
//!   `/_ts./admin`), slashes merged or not, dot segments resolved or not, before or after the
//!   merge.
//! * [`strip_prefix_folded`]: how the router compares a reading with its table, letter case
//!   folded as IIS, Windows file systems and case-insensitive routers fold it (ASCII, and the
//!   few other characters whose case maps onto ASCII: `ſ` is `s`, `K` is `k`, `ı` and `İ` are
//!   `i`, `ß` is `ss`). A path with any reading in the service's namespaces, so compared, is
//!   never proxied.
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
                for bytes in with_stripped(bytes) {
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
    }
    out
}

/// Whether every reading of `path` is `path` itself: an absolute path of printable ASCII
/// without an escape, a backslash, a `;`, a repeated slash, a segment that starts with a dot
/// or one that ends with one. (The common case, answered without building the readings; the
/// router still compares it with its table with case folded.)
pub fn is_plain(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains("//")
        && !path.contains("/.")
        && !path.contains("./")
        && !path.ends_with('.')
        && !path
            .bytes()
            .any(|b| !(0x21..0x7F).contains(&b) || matches!(b, b'%' | b'\\' | b';'))
}

/// The rest of `path` after `prefix`, both compared with letter case folded (see the module):
/// `strip_prefix_folded("/_TS/Admin/x", "/_ts/admin")` is `Some("/x")`. A character that
/// folds to more than one (`ß` is `ss`) matches only whole. No allocation.
pub fn strip_prefix_folded<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let mut want = prefix.chars().flat_map(folded).peekable();
    for (at, c) in path.char_indices() {
        if want.peek().is_none() {
            return Some(&path[at..]);
        }
        for got in folded(c) {
            if want.next() != Some(got) {
                return None;
            }
        }
    }
    want.next().is_none().then_some("")
}

/// A character as a case-insensitive comparison reads it: the lowercase of its uppercase
/// (`ſ` is `s`, `ß` is `ss`, `K` is `k`), and `İ` as `i` (its simple lowercase).
fn folded(c: char) -> impl Iterator<Item = char> {
    let c = if c == '\u{130}' { 'I' } else { c };
    c.to_uppercase().flat_map(char::to_lowercase)
}

fn read(path: &[u8], decode: Decode, backslash_is_slash: bool, shape: Shape) -> Vec<u8> {
    let mut bytes = decoded(path, decode);
    if backslash_is_slash {
        backslash_to_slash(&mut bytes);
    }
    reshape(&bytes, shape)
}

/// `path` with the escapes `decode` names decoded. Decoding every escape also reads overlong
/// UTF-8 as the character it spells ([`shortest_utf8`]), in each pass.
fn decoded(path: &[u8], decode: Decode) -> Vec<u8> {
    let every = |bytes: &[u8]| shortest_utf8(percent_decode(bytes, |_| true));
    match decode {
        Decode::Nothing => path.to_vec(),
        Decode::Unreserved => until_done(path, |bytes| percent_decode(bytes, is_unreserved)),
        Decode::Every => every(path),
        Decode::EveryRepeatedly => until_done(path, every),
    }
}

/// Each overlong UTF-8 sequence (a character in more bytes than it needs: `C0 AF` for `/`,
/// `C1 9F` for `_`, `E0 80 AF`, `F0 80 80 AF`, and the five- and six-byte forms of the first
/// UTF-8) replaced by the character's shortest form, as a decoder that checks no minimum
/// reads it. Anything else, invalid UTF-8 included, stays as it is.
fn shortest_utf8(bytes: Vec<u8>) -> Vec<u8> {
    if !bytes
        .iter()
        .any(|&b| matches!(b, 0xC0 | 0xC1 | 0xE0 | 0xF0 | 0xF8 | 0xFC))
    {
        // Every overlong sequence starts with one of these.
        return bytes;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let lead = bytes[i];
        let (len, least) = match lead {
            0xC0..=0xDF => (2, 0x80),
            0xE0..=0xEF => (3, 0x800),
            0xF0..=0xF7 => (4, 0x1_0000),
            0xF8..=0xFB => (5, 0x20_0000),
            0xFC..=0xFD => (6, 0x400_0000),
            _ => (1, 0),
        };
        let tail = bytes.get(i + 1..i + len).unwrap_or_default();
        if len > 1 && tail.len() == len - 1 && tail.iter().all(|&b| b & 0xC0 == 0x80) {
            let value = tail.iter().fold(u32::from(lead & (0x7F >> len)), |v, &b| {
                (v << 6) | u32::from(b & 0x3F)
            });
            if let Some(c) = char::from_u32(value).filter(|_| value < least) {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                i += len;
                continue;
            }
        }
        out.push(lead);
        i += 1;
    }
    out
}

/// `bytes`, then, where they differ from it, `bytes` as a server that strips them reads it
/// ([`stripped`]), and the same cut at the first NUL (a server that reads the path as a C
/// string).
fn with_stripped(bytes: Vec<u8>) -> Vec<Vec<u8>> {
    let whole = stripped(&bytes);
    let cut = bytes
        .iter()
        .position(|&b| b == 0)
        .map(|nul| stripped(&bytes[..nul]));
    let mut out = vec![bytes];
    for more in [Some(whole), cut].into_iter().flatten() {
        if !out.contains(&more) {
            out.push(more);
        }
    }
    out
}

/// `bytes` as Windows and servers that trim read them: fullwidth ASCII (`U+FF01`..`U+FF5E`,
/// which Windows' best-fit mapping and NFKC read as ASCII) as ASCII, control characters,
/// spaces and DEL removed, then the trailing dots of each segment dropped (IIS reads
/// `/_ts./admin` as `/_ts/admin`), except in a segment of dots only (`.`, `..`: dot segments).
fn stripped(bytes: &[u8]) -> Vec<u8> {
    let mut ascii = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let (b, len) = match bytes[i..] {
            [0xEF, 0xBC, c @ 0x81..=0xBF, ..] => (c - 0x60, 3),
            [0xEF, 0xBD, c @ 0x80..=0x9E, ..] => (c - 0x20, 3),
            [c, ..] => (c, 1),
            [] => break,
        };
        if b > b' ' && b != 0x7F {
            ascii.push(b);
        }
        i += len;
    }
    let mut out = Vec::with_capacity(ascii.len());
    for (i, segment) in ascii.split(|&b| b == b'/').enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        let dots = segment.iter().rev().take_while(|&&b| b == b'.').count();
        let kept = if dots == segment.len() {
            segment
        } else {
            &segment[..segment.len() - dots]
        };
        out.extend_from_slice(kept);
    }
    out
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

/// A decoding `pass` again until nothing changes (`%%35F` is `%5F` after one pass, `_` after
/// two), at most [`MAX_DECODE_PASSES`] times. (A pass that changes anything shortens.)
fn until_done(path: &[u8], pass: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let mut bytes = pass(path);
    for _ in 1..MAX_DECODE_PASSES {
        let again = pass(&bytes);
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

    fn shortest(bytes: &[u8]) -> Vec<u8> {
        shortest_utf8(bytes.to_vec())
    }

    #[test]
    fn overlong_utf8_is_read_as_the_character_it_spells() {
        assert_eq!(shortest(b"/_ts\xC0\xAFadmin"), b"/_ts/admin");
        assert_eq!(shortest(b"/\xC1\x9Fts"), b"/_ts");
        assert_eq!(shortest(b"\xE0\x80\xAF\xF0\x80\x80\xAF"), b"//");
        assert_eq!(
            shortest(b"\xF8\x80\x80\x80\xAF\xFC\x80\x80\x80\x80\xAF"),
            b"//"
        );
        assert_eq!(shortest(b"\xC0\x80"), b"\0");
        // `ſ` (U+017F) in three bytes instead of two.
        assert_eq!(shortest(b"\xE0\x85\xBF"), "\u{17f}".as_bytes());
        // Shortest forms, invalid and truncated sequences and surrogates stay as they are.
        for kept in [
            "\u{e9}\u{17f}\u{20ac}\u{1f600}".as_bytes(),
            b"\xC0",
            b"\xC0/",
            b"\xE0\x80",
            b"\xF0\x80\x80",
            b"\xFF\xFE\x80",
            b"\xF0\x8D\xA0\x80",
        ] {
            assert_eq!(shortest(kept), kept, "{kept:?}");
        }
        let all = readings("/_ts%C0%AFadmin/settings");
        assert!(all.iter().any(|r| r == "/_ts/admin/settings"), "{all:?}");
        let all = readings("/%C1%9Fts/admin/settings");
        assert!(all.iter().any(|r| r == "/_ts/admin/settings"), "{all:?}");
        // An overlong `%` decoded again.
        let all = readings("/%C0%A55Fts");
        assert!(all.iter().any(|r| r == "/_ts"), "{all:?}");
        // The standard reading decodes no overlong sequence: it is not a character's spelling.
        assert_eq!(normalise("/%C0%AF"), "/%C0%AF");
    }

    #[test]
    fn stripped_as_windows_and_trimming_servers_read_it() {
        let strip = |s: &str| String::from_utf8(stripped(s.as_bytes())).unwrap();
        assert_eq!(strip("/_ts\t/admin\r\n"), "/_ts/admin");
        assert_eq!(strip("/_ts ./ad min\x7f/\0x"), "/_ts/admin/x");
        assert_eq!(strip("/_ts.../admin."), "/_ts/admin");
        assert_eq!(strip("/./../.../x/"), "/./../.../x/");
        assert_eq!(
            strip("/\u{ff3f}ts\u{ff0f}\u{ff41}dmin\u{ff5e}\u{ff5f}"),
            "/_ts/admin~\u{ff5f}"
        );
        let all = readings("/_ts%09/admin/settings");
        assert!(all.iter().any(|r| r == "/_ts/admin/settings"), "{all:?}");
        let all = readings("/x/.%20./_ts/admin");
        assert!(all.iter().any(|r| r == "/_ts/admin"), "{all:?}");
        let all = readings("/_ts/ec%00/x");
        assert!(all.iter().any(|r| r == "/_ts/ec"), "{all:?}");
        // The bytes as sent stay a reading.
        assert!(readings("/a%20b").contains(&"/a%20b".to_owned()));
        assert!(readings("/a%20b").contains(&"/a b".to_owned()));
    }

    #[test]
    fn prefixes_compare_with_case_folded() {
        assert_eq!(
            strip_prefix_folded("/_TS/Admin/x", "/_ts/admin"),
            Some("/x")
        );
        assert_eq!(strip_prefix_folded("/_ts/admin", "/_ts/admin"), Some(""));
        assert_eq!(strip_prefix_folded("/_t\u{17f}/", "/_TS/"), Some(""));
        assert_eq!(
            strip_prefix_folded("/\u{212a}\u{131}\u{130}", "/kii"),
            Some("")
        );
        assert_eq!(strip_prefix_folded("/stra\u{df}e", "/STRASSE"), Some(""));
        assert_eq!(strip_prefix_folded("/_ts/admi", "/_ts/admin"), None);
        assert_eq!(strip_prefix_folded("/_ts/x", "/_ts/admin"), None);
        // A character folded to more than the prefix has left does not match.
        assert_eq!(strip_prefix_folded("/\u{df}", "/s"), None);
        assert_eq!(strip_prefix_folded("", ""), Some(""));
        assert_eq!(strip_prefix_folded("/x", ""), Some("/x"));
    }

    /// Every character the comparison reads as ASCII: ASCII itself, and the few whose case
    /// maps onto ASCII (checked against the whole of Unicode, so a new one is noticed).
    #[test]
    fn the_characters_folded_onto_ascii() {
        let mut onto_ascii = Vec::new();
        for c in (0x80..=0x10_FFFF).filter_map(char::from_u32) {
            if folded(c).any(|f| f.is_ascii()) {
                onto_ascii.push(c);
            }
        }
        assert_eq!(
            onto_ascii,
            [
                '\u{df}', '\u{130}', '\u{131}', '\u{149}', '\u{17f}', '\u{1f0}', '\u{1e96}',
                '\u{1e97}', '\u{1e98}', '\u{1e99}', '\u{1e9a}', '\u{212a}', '\u{fb00}', '\u{fb01}',
                '\u{fb02}', '\u{fb03}', '\u{fb04}', '\u{fb05}', '\u{fb06}',
            ]
        );
        for c in (0..0x80).filter_map(char::from_u32) {
            assert_eq!(folded(c).collect::<Vec<_>>(), [c.to_ascii_lowercase()]);
        }
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
        fn a_plain_path_reads_as_itself(path in "[/._a-zA-Z%;\\\\ \t\u{0}\u{7f}\u{ff3f}\u{17f}]{0,30}") {
            if is_plain(&path) {
                prop_assert_eq!(readings(&path), vec![path.clone()]);
            }
        }
    }
}
