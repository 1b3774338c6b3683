//! How the slashes, the scheme's colon and the bytes after the host of an origin URL may be
//! spelled: the forms the rule knows, as literal byte strings.

/// A way of writing the URL's slashes, chosen by the text the URL sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// `\\/`: JSON with escaped slashes inside a JavaScript string literal.
    DoubleEscaped,
    /// `\/`: JSON with escaped slashes.
    JsonEscaped,
    /// `\u002F`: a JavaScript or JSON Unicode escape.
    Unicode,
    /// `&#x2F;`, `&#47;`, `&sol;`: an HTML character reference.
    CharRef,
    /// `%2F`: percent-encoded, as in a query parameter.
    Percent,
    /// `/`, or `\`, which WHATWG URL parsing reads as `/` in http(s) URLs.
    Plain,
}

/// The forms in the order they are tried: an escaped slash ends in a plain `/` (and `\/` is
/// the end of `\\/`), so the longer spelling is tried first and the URL keeps it.
pub(super) const FORMS: [Form; 6] = [
    Form::DoubleEscaped,
    Form::JsonEscaped,
    Form::Unicode,
    Form::CharRef,
    Form::Percent,
    Form::Plain,
];

/// Longest slash token (`\u002F`, `&#x2F;`).
pub(super) const MAX_TOKEN: usize = 6;

/// Most slashes a match may have between the scheme (or its start) and the host.
pub(super) const MAX_SLASHES: usize = 3;

/// Longest `scheme` plus colon: `https%3A`.
pub(super) const MAX_SCHEME: usize = 8;

/// Longest spelling after the host that is still followed: `.`, a 3-byte colon, 5 digits.
pub(super) const MAX_SUFFIX: usize = 9;

/// Most bytes of tab, CR and LF (raw or escaped) looked past after a match before the next
/// character decides it. Beyond this the match is left alone: a URL parser would read on, but
/// the decision must come from a bounded window for the streaming replacer.
pub(super) const MAX_SKIPPED: usize = 32;

/// Longest input read to decide the character after a match: up to [`MAX_SKIPPED`] bytes of
/// tab and newlines, then one unit of at most 7 bytes (`\\uHHHH`).
pub(super) const MAX_BOUNDARY: usize = MAX_SKIPPED + 7;

/// The schemes that may precede the slashes, with their default ports (longest first).
pub(super) const SCHEMES: [(&[u8], u16); 2] = [(b"https", 443), (b"http", 80)];

impl Form {
    /// Every spelling of one slash in this form (exact bytes; none is a suffix of another).
    pub(super) fn slashes(self) -> &'static [&'static [u8]] {
        match self {
            Form::DoubleEscaped => &[b"\\\\/"],
            Form::JsonEscaped => &[b"\\/"],
            Form::Unicode => &[b"\\u002F", b"\\u002f"],
            Form::CharRef => &[
                b"&#x2F;", b"&#x2f;", b"&#X2F;", b"&#X2f;", b"&#47;", b"&sol;",
            ],
            Form::Percent => &[b"%2F", b"%2f"],
            Form::Plain => &[b"/", b"\\"],
        }
    }

    /// Every spelling of the colon after the scheme and before a port.
    pub(super) fn colons(self) -> &'static [&'static [u8]] {
        match self {
            Form::Percent => &[b"%3A", b"%3a"],
            _ => &[b":"],
        }
    }
}

/// The slash spelling that ends `bytes`, if any.
pub(super) fn slash_ending(form: Form, bytes: &[u8]) -> Option<&'static [u8]> {
    form.slashes()
        .iter()
        .copied()
        .find(|slash| has_suffix(bytes, slash))
}

/// `hay.ends_with(needle)` for the few bytes of a spelling, without a `memcmp` call (these
/// run once per slash or match, where the call would cost more than the compare).
#[inline]
pub(super) fn has_suffix(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len()
        && hay[hay.len() - needle.len()..]
            .iter()
            .zip(needle)
            .all(|(a, b)| a == b)
}

/// `hay.starts_with(needle)`, as [`has_suffix`].
#[inline]
fn has_prefix(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay.iter().zip(needle).all(|(a, b)| a == b)
}

/// How the start of some bytes relates to a set of spellings.
pub(super) enum Start {
    /// Starts with this many bytes of one spelling.
    Full(usize),
    /// Is a proper prefix of a spelling (the rest has not arrived).
    Partial,
    /// Neither.
    No,
}

/// Whether `bytes` starts with one of `spellings` (exact bytes).
pub(super) fn starts_with_one_of(bytes: &[u8], spellings: &[&[u8]]) -> Start {
    let mut partial = false;
    for spelling in spellings {
        if has_prefix(bytes, spelling) {
            return Start::Full(spelling.len());
        }
        partial |= bytes.len() < spelling.len() && has_prefix(spelling, bytes);
    }
    if partial {
        Start::Partial
    } else {
        Start::No
    }
}

/// What follows the host: an optional `.` and port, then a boundary.
pub(super) enum Suffix {
    /// The bytes that decide it have not all arrived.
    NeedMore,
    /// The host goes on (a longer or different authority), or the port part is malformed.
    No,
    /// `len` bytes of dot and port (`port` if one was written), then a boundary.
    /// `host_follows`: the boundary is a character that would go on with a host written
    /// right before it (it ended the URL only because a port came first).
    Found {
        len: usize,
        port: Option<u32>,
        host_follows: bool,
    },
}

/// Reads what follows the host in `form`: `after` is everything after it. With `at_end`, the
/// input ends after `after`.
pub(super) fn suffix(form: Form, after: &[u8], at_end: bool) -> Suffix {
    let mut i = usize::from(after.first() == Some(&b'.'));
    let mut port = None;
    match starts_with_one_of(&after[i..], form.colons()) {
        Start::Partial if !after[i..].is_empty() && !at_end => return Suffix::NeedMore,
        Start::Full(colon) => {
            let digits_at = i + colon;
            let digits = after[digits_at..]
                .iter()
                .take(6)
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == after.len() - digits_at && digits <= 5 && !at_end {
                return Suffix::NeedMore;
            }
            if digits == 0 || digits > 5 {
                return Suffix::No;
            }
            port = Some(
                after[digits_at..digits_at + digits]
                    .iter()
                    .fold(0u32, |n, d| n * 10 + u32::from(d - b'0')),
            );
            i = digits_at + digits;
        }
        _ => {}
    }
    let host_follows = match boundary(form, &after[i..], at_end) {
        Boundary::NeedMore => return Suffix::NeedMore,
        Boundary::TooFar => return Suffix::No,
        Boundary::End => false,
        // After a port only another port or user info go on: anything else ends the URL,
        // even what would go on with a host (`:8080\n-->`).
        Boundary::Char(c) if port.is_some() => {
            if continues_port(c) {
                return Suffix::No;
            }
            continues_authority(c)
        }
        Boundary::Char(c) if continues_authority(c) => return Suffix::No,
        Boundary::Char(_) => false,
    };
    Suffix::Found {
        len: i,
        port,
        host_follows,
    }
}

enum Boundary {
    NeedMore,
    /// The input ends (after tab and newlines, if any).
    End,
    /// More than [`MAX_SKIPPED`] bytes of tab and newlines: the match is left alone.
    TooFar,
    /// The character that decides, after tab and newlines (if any), as [`unit`] reads it.
    Char(u32),
}

/// Reads `rest`, the input after a host and its port, up to the character that decides
/// whether it continues the authority.
///
/// It is read one character at a time as the consumer reads it ([`unit`]). Tab, LF and CR are
/// removed by URL parsing wherever they are (so an origin URL at the end of a line,
/// `origin:8080\r\n`, ends there, while `origin\n.evil.test` is the host
/// `origin.evil.test`): they are looked past, and the first other character decides. Written
/// `%09`, `%0A`, `%0D` they are looked past only in the percent-encoded form, whose server
/// decodes them before URL parsing; elsewhere a URL parser percent-decodes them into the host,
/// which makes it invalid, so the match is left alone (after a port, where URL parsing fails
/// at the `%`, they end it like any character but a digit or `@`).
fn boundary(form: Form, rest: &[u8], at_end: bool) -> Boundary {
    let mut at = 0;
    loop {
        let (value, len, percent) = match unit(&rest[at..], at_end) {
            Unit::NeedMore => return Boundary::NeedMore,
            Unit::End => return Boundary::End,
            Unit::Char {
                value,
                len,
                percent,
            } => (value, len, percent),
        };
        let removed = matches!(value, 0x09 | 0x0A | 0x0D) && (!percent || form == Form::Percent);
        if !removed {
            return Boundary::Char(value);
        }
        at += len;
        if at > MAX_SKIPPED {
            return Boundary::TooFar;
        }
    }
}

/// One character of the input, as the text around a URL decodes it.
enum Unit {
    /// The bytes that decide it have not all arrived.
    NeedMore,
    /// The input ends here.
    End,
    /// The character `value`, written in `len` bytes; `percent` when written `%HH`.
    Char {
        value: u32,
        len: usize,
        percent: bool,
    },
}

/// Reads the character at the start of `rest`: `%HH` (URL parsing percent-decodes a host),
/// a JavaScript/JSON escape `\uHHHH`, `\n`, `\r`, `\t` (decoded before any URL parsing),
/// also escaped once more (`\\uHHHH`, `\\n`: JSON inside a JavaScript string), or one
/// byte. Reading an escape where the text turns out to be HTML (where `\` is a path) only
/// leaves more URLs alone.
fn unit(rest: &[u8], at_end: bool) -> Unit {
    let Some(&first) = rest.first() else {
        return if at_end { Unit::End } else { Unit::NeedMore };
    };
    let escaped = match first {
        b'%' => match hex_unit(&rest[1..], 2) {
            HexUnit::Value(v) => Escape::Value(v, 3),
            HexUnit::Short => Escape::Short,
            HexUnit::Absent => Escape::Absent,
        },
        b'\\' => js_escape(rest),
        _ => Escape::Absent,
    };
    match escaped {
        Escape::Short if !at_end => Unit::NeedMore,
        Escape::Value(value, len) => Unit::Char {
            value,
            len,
            percent: first == b'%',
        },
        Escape::Short | Escape::Absent => Unit::Char {
            value: u32::from(first),
            len: 1,
            percent: false,
        },
    }
}

enum Escape {
    /// The input stops inside what may be an escape.
    Short,
    /// Not an escape: read the byte itself.
    Absent,
    /// The character and the escape's length in bytes.
    Value(u32, usize),
}

/// The escape at the start of `rest` (which starts with `\`): `\uHHHH`, `\n`, `\r`, `\t`, or
/// one of them after one more backslash.
fn js_escape(rest: &[u8]) -> Escape {
    match single_escape(rest) {
        Escape::Absent if rest.get(1) == Some(&b'\\') => match single_escape(&rest[1..]) {
            Escape::Value(v, len) => Escape::Value(v, len + 1),
            other => other,
        },
        other => other,
    }
}

/// `\uHHHH`, `\n`, `\r` or `\t` at the start of `rest` (which starts with `\`).
fn single_escape(rest: &[u8]) -> Escape {
    match rest.get(1) {
        None => Escape::Short,
        Some(b'u') => match hex_unit(&rest[2..], 4) {
            HexUnit::Value(v) => Escape::Value(v, 6),
            HexUnit::Short => Escape::Short,
            HexUnit::Absent => Escape::Absent,
        },
        Some(b'n') => Escape::Value(0x0A, 2),
        Some(b'r') => Escape::Value(0x0D, 2),
        Some(b't') => Escape::Value(0x09, 2),
        // `\\` and the input stops: `\\n` or `\\u…` may follow.
        Some(b'\\') if rest.len() == 2 => Escape::Short,
        Some(_) => Escape::Absent,
    }
}

enum HexUnit {
    /// Fewer hex digits than needed, all hex, and the input stops there.
    Short,
    /// Not an escape: read the byte itself.
    Absent,
    Value(u32),
}

fn hex_unit(digits: &[u8], count: usize) -> HexUnit {
    let hex = digits
        .iter()
        .take(count)
        .take_while(|b| b.is_ascii_hexdigit())
        .count();
    if hex == count {
        let value = digits[..count].iter().fold(0u32, |n, d| {
            n * 16 + char::from(*d).to_digit(16).unwrap_or_default()
        });
        HexUnit::Value(value)
    } else if hex == digits.len() {
        HexUnit::Short
    } else {
        HexUnit::Absent
    }
}

/// Whether a character after a port makes it part of a different authority: a digit makes
/// it another port (`:80\n80` is port 8080), `@` makes the host user info (`:80@evil.test`
/// is the host `evil.test`). URL parsing fails on anything else there: it is not a longer
/// host, and the URL ends before it.
fn continues_port(unit: u32) -> bool {
    u8::try_from(unit).is_ok_and(|b| b.is_ascii_digit() || b == b'@')
}

/// Whether a character after the host makes it part of a longer or different authority (or
/// might: non-ASCII is mapped by IDNA, e.g. U+3002 to `.`). Tab and newlines reach here only
/// percent-encoded outside the percent-encoded form, where they make the host invalid.
fn continues_authority(unit: u32) -> bool {
    match u8::try_from(unit) {
        Ok(b) if b.is_ascii() => {
            b.is_ascii_alphanumeric()
                || matches!(b, b'.' | b'-' | b'_' | b':' | b'@' | b'\t' | b'\n' | b'\r')
        }
        _ => true,
    }
}

/// Whether a byte before the slashes makes them part of another URL's path or host (as in
/// `https://evil.test//origin…`), so the slashes do not start a scheme-relative URL.
pub(super) fn continues_url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'~' | b'%' | b'@' | b'/' | b'\\')
}

/// Appends `authority` percent-encoded: every byte but ASCII letters, digits and `-._~`,
/// with hex letters in the given case.
pub(super) fn percent_encode(authority: &[u8], upper: bool, out: &mut Vec<u8>) {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    for &b in authority {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[
                b'%',
                digits[usize::from(b >> 4)],
                digits[usize::from(b & 15)],
            ]);
        }
    }
}
