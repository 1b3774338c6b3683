//! A reference implementation of the one URL rule, written from its specification and not
//! from `crates/core/src/url_rewrite/`: slow and plain, one host occurrence at a time over
//! the whole input.
//!
//! The rule. Take every occurrence of the origin host (ASCII letters in any case), left to
//! right. It is a *match* when:
//!
//! 1. it is preceded by slashes in one *form*; the forms are tried in this order and the first
//!    that gives a prefix (step 2) is taken:
//!    double-escaped `\\/`; JSON-escaped `\/`; Unicode escape `\u002F` / `\u002f`;
//!    character reference `&#x2F;` (the `x` and the `F` in either case), `&#47;`, `&sol;`;
//!    percent-encoded `%2F` / `%2f`; plain `/` or `\`. The slashes are counted back from the
//!    host, at most three, every one in that form;
//! 2. the prefix is either `scheme C` then those slashes (one to three), where the scheme is
//!    `http` or `https` in any case and `C` is `:` (`%3A` / `%3a` in the percent-encoded
//!    form), or the slashes alone (two or three), scheme-relative, when the byte before them
//!    is not an ASCII letter or digit, `.`, `-`, `_`, `~`, `%`, `@`, `/` or `\` (there they
//!    are a path inside another URL), or when there is no byte before them;
//! 3. after the host: optionally one `.`; optionally a port, `C` then one to five digits
//!    (more digits: no match) whose value must fit: with an origin without a port, the
//!    default port of the URL's scheme (443 for https, 80 for http; scheme-relative: the
//!    default port of the *target* scheme); with an origin port `P`, `P`, which may be left
//!    out when it is that default port;
//! 4. then a boundary: the end of the input, or a character that does not continue an
//!    authority. A character is read as: `%HH` decoded; `\uHHHH` decoded; `\n`, `\r`, `\t`
//!    as LF, CR, tab; any of those three escapes or `\uHHHH` after one more `\`, decoded
//!    likewise; else the byte itself. Tab, LF and CR (URL parsing removes them) are skipped
//!    and the next character read, except when written `%HH` outside the percent-encoded
//!    form; when more than 32 bytes have been skipped, the authority continues. After a
//!    port (one was written), the character reached continues the authority only when it is
//!    an ASCII digit or `@`. Otherwise it continues an authority when it is an ASCII letter
//!    or digit, `.`, `-`, `_`, `:`, `@`, tab, LF, CR (written `%HH`), or not ASCII at all.
//!
//! A match (from the scheme, or the first slash, to the end of the port) is replaced by the
//! target in the same form: `scheme C S S authority` or `S S authority`, where `S` is the
//! slash spelling written just before the host, except that plain slashes are written `/`,
//! and in the percent-encoded form `C` and every authority byte other than ASCII letters,
//! digits and `-._~` are percent-encoded with the hex case of that `S`. When a port was
//! written, the target authority has no port, and the character reached in step 4 would have
//! continued an authority had no port been written, the replacement ends with `C` and the
//! default port of the target scheme (so no character after it can extend the target's
//! host). A match that would
//! start before the end of the previous one is not taken. Every other byte is copied.

/// Alternative byte strings for one character.
type Spellings = &'static [&'static [u8]];

/// The slash spellings of each form, in the order the forms are tried, with the colon
/// spellings of that form.
const FORMS: [(Spellings, Spellings); 6] = [
    (&[b"\\\\/"], &[b":"]),
    (&[b"\\/"], &[b":"]),
    (&[b"\\u002F", b"\\u002f"], &[b":"]),
    (
        &[
            b"&#x2F;", b"&#x2f;", b"&#X2F;", b"&#X2f;", b"&#47;", b"&sol;",
        ],
        &[b":"],
    ),
    (&[b"%2F", b"%2f"], &[b"%3A", b"%3a"]),
    (&[b"/", b"\\"], &[b":"]),
];

/// The index of the plain form in [`FORMS`].
const PLAIN: usize = 5;
/// The index of the percent-encoded form in [`FORMS`].
const PERCENT: usize = 4;

/// The rule for one origin and one target.
#[derive(Debug, Clone)]
pub struct Reference {
    host: Vec<u8>,
    port: Option<u16>,
    target_scheme: String,
    target_default_port: u16,
    target_authority: String,
    target_has_port: bool,
}

/// One match: its span and how to write its replacement.
struct Match {
    start: usize,
    end: usize,
    form: usize,
    scheme: bool,
    slash: &'static [u8],
    /// The replacement ends with the target scheme's default port.
    with_port: bool,
}

impl Reference {
    /// `origin_authority` is `host[:port]`; `target_scheme` is `http` or `https`.
    pub fn new(origin_authority: &str, target_scheme: &str, target_authority: &str) -> Self {
        let (host, port) = match origin_authority.rsplit_once(':') {
            Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
                (host, Some(port.parse().expect("a port")))
            }
            _ => (origin_authority, None),
        };
        Reference {
            host: host.to_ascii_lowercase().into_bytes(),
            port,
            target_scheme: target_scheme.to_owned(),
            target_default_port: if target_scheme.eq_ignore_ascii_case("https") {
                443
            } else {
                80
            },
            target_authority: target_authority.to_owned(),
            target_has_port: target_authority
                .rsplit_once(':')
                .is_some_and(|(_, port)| !port.contains(']')),
        }
    }

    /// The rule applied to a whole input.
    pub fn apply(&self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut copied = 0;
        for at in 0..input.len() {
            let Some(m) = self.match_at(input, at) else {
                continue;
            };
            if m.start < copied {
                continue;
            }
            out.extend_from_slice(&input[copied..m.start]);
            out.extend_from_slice(&self.replacement(&m));
            copied = m.end;
        }
        out.extend_from_slice(&input[copied..]);
        out
    }

    fn replacement(&self, m: &Match) -> Vec<u8> {
        let upper = m.slash.contains(&b'F');
        let slash: &[u8] = if m.form == PLAIN { b"/" } else { m.slash };
        let mut text = Vec::new();
        if m.scheme {
            text.extend_from_slice(self.target_scheme.as_bytes());
            text.extend_from_slice(if m.form != PERCENT {
                b":"
            } else if upper {
                b"%3A"
            } else {
                b"%3a"
            });
        }
        text.extend_from_slice(slash);
        text.extend_from_slice(slash);
        for &b in self.target_authority.as_bytes() {
            let keep = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
            if m.form != PERCENT || keep {
                text.push(b);
            } else if upper {
                text.extend_from_slice(format!("%{b:02X}").as_bytes());
            } else {
                text.extend_from_slice(format!("%{b:02x}").as_bytes());
            }
        }
        if m.with_port {
            text.extend_from_slice(match (m.form == PERCENT, upper) {
                (true, true) => b"%3A",
                (true, false) => b"%3a",
                (false, _) => b":",
            });
            text.extend_from_slice(self.target_default_port.to_string().as_bytes());
        }
        text
    }

    /// The match whose host starts at `at`, if there is one.
    fn match_at(&self, input: &[u8], at: usize) -> Option<Match> {
        let host_end = starts_with_ignore_case(input, at, &self.host)?;
        let before = &input[..at];
        let (start, form, scheme, slash, default) = (0..FORMS.len()).find_map(|form| {
            self.prefix(before, form)
                .map(|p| (p.0, form, p.1, p.2, p.3))
        })?;
        let colons = FORMS[form].1;
        let mut end = host_end;
        if input.get(end) == Some(&b'.') {
            end += 1;
        }
        let mut written_port = None;
        if let Some(colon) = colons.iter().find(|c| input[end..].starts_with(c)) {
            let digits = input[end + colon.len()..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == 0 || digits > 5 {
                return None;
            }
            let text = &input[end + colon.len()..end + colon.len() + digits];
            written_port = Some(std::str::from_utf8(text).ok()?.parse::<u32>().ok()?);
            end += colon.len() + digits;
        }
        let fits = match (written_port, self.port) {
            (Some(p), Some(own)) => p == u32::from(own),
            (Some(p), None) => p == u32::from(default),
            (None, Some(own)) => own == default,
            (None, None) => true,
        };
        if !fits {
            return None;
        }
        let with_port = match deciding_character(input, end, form == PERCENT)? {
            None => false,
            Some(c) if written_port.is_some() => {
                if char::from_u32(c).is_some_and(|c| c.is_ascii_digit() || c == '@') {
                    return None;
                }
                continues_authority(c) && !self.target_has_port
            }
            Some(c) if continues_authority(c) => return None,
            Some(_) => false,
        };
        Some(Match {
            start,
            end,
            form,
            scheme,
            slash,
            with_port,
        })
    }

    /// The prefix in form `form` ending `before`: (start, has a scheme, the slash next to the
    /// host, the default port).
    fn prefix(&self, before: &[u8], form: usize) -> Option<(usize, bool, &'static [u8], u16)> {
        let (slashes, colons) = FORMS[form];
        let ending = |text: &[u8]| slashes.iter().copied().find(|s| text.ends_with(s));
        let slash = ending(before)?;
        let mut first = before.len();
        let mut count = 0;
        while count < 3 {
            let Some(s) = ending(&before[..first]) else {
                break;
            };
            first -= s.len();
            count += 1;
        }
        let rest = &before[..first];
        for (scheme, port) in [("https", 443), ("http", 80)] {
            for colon in colons {
                let whole = [scheme.as_bytes(), colon].concat();
                if rest.len() >= whole.len()
                    && rest[rest.len() - whole.len()..].eq_ignore_ascii_case(&whole)
                    && rest.ends_with(colon)
                {
                    return Some((first - whole.len(), true, slash, port));
                }
            }
        }
        let inside_a_url = rest
            .last()
            .is_some_and(|&b| b.is_ascii_alphanumeric() || b".-_~%@/\\".contains(&b));
        (count >= 2 && !inside_a_url).then_some((first, false, slash, self.target_default_port))
    }
}

/// If `input[at..]` starts with `word` (ASCII case-insensitively), the index after it.
fn starts_with_ignore_case(input: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    let end = at.checked_add(word.len())?;
    let got = input.get(at..end)?;
    got.eq_ignore_ascii_case(word).then_some(end)
}

/// The character at `at` that decides the boundary (see the module docs, step 4), after
/// the tab and newlines URL parsing removes: `Some(None)` at the end of the input,
/// `Some(Some(value))`, or `None` (no match) when more than 32 bytes were skipped.
fn deciding_character(input: &[u8], at: usize, percent_form: bool) -> Option<Option<u32>> {
    let mut at = at;
    let mut skipped = 0;
    loop {
        let Some((value, len, percent)) = character(input, at) else {
            return Some(None);
        };
        let removed = matches!(value, 0x09 | 0x0A | 0x0D) && (percent_form || !percent);
        if !removed {
            return Some(Some(value));
        }
        at += len;
        skipped += len;
        if skipped > 32 {
            return None;
        }
    }
}

/// Whether a character (as step 4 reads it) continues an authority after a host.
fn continues_authority(value: u32) -> bool {
    match char::from_u32(value) {
        Some(c) if c.is_ascii() => {
            c.is_ascii_alphanumeric()
                || matches!(c, '.' | '-' | '_' | ':' | '@' | '\t' | '\n' | '\r')
        }
        _ => true,
    }
}

/// The character at `at` as step 4 reads it: its value, its length in bytes, and whether it
/// was written `%HH`. `None` at the end of the input.
fn character(input: &[u8], at: usize) -> Option<(u32, usize, bool)> {
    let first = *input.get(at)?;
    let hex = |from: usize, len: usize| -> Option<u32> {
        let text = std::str::from_utf8(input.get(from..from + len)?).ok()?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(text, 16).ok()
    };
    // One escape `\X` starting at `from`: its value and length.
    let escape = |from: usize| -> Option<(u32, usize)> {
        if input.get(from) != Some(&b'\\') {
            return None;
        }
        match input.get(from + 1)? {
            b'u' => hex(from + 2, 4).map(|v| (v, 6)),
            b'n' => Some((0x0A, 2)),
            b'r' => Some((0x0D, 2)),
            b't' => Some((0x09, 2)),
            _ => None,
        }
    };
    if first == b'%' {
        if let Some(v) = hex(at + 1, 2) {
            return Some((v, 3, true));
        }
    }
    if let Some((v, len)) = escape(at) {
        return Some((v, len, false));
    }
    if first == b'\\' {
        if let Some((v, len)) = escape(at + 1) {
            return Some((v, len + 1, false));
        }
    }
    Some((u32::from(first), 1, false))
}

/// Examples from the specification, checked once by the `url_rule` target before it fuzzes,
/// so the reference itself is tested wherever the fuzzer runs: (origin, target scheme, target
/// authority, input, expected).
pub const SPEC_EXAMPLES: &[(&str, &str, &str, &str, &str)] = &[
    // After a port only a digit or `@` goes on; a character that would go on with a host
    // ends the URL, and the replacement keeps the target scheme's default port.
    (
        "o.test:8080",
        "https",
        "t.io",
        "<!-- http://o.test:8080\n-->",
        "<!-- https://t.io:443\n-->",
    ),
    (
        "o.test:8080",
        "https",
        "t.io:7676",
        "<!-- http://o.test:8080\n-->",
        "<!-- https://t.io:7676\n-->",
    ),
    ("o.test:8080", "https", "t.io", "http://o.test:8080 x", "https://t.io x"),
    (
        "o.test:8080",
        "https",
        "t.io",
        "http://o.test:8080\n80/",
        "http://o.test:8080\n80/",
    ),
    (
        "o.test:8080",
        "https",
        "t.io",
        "http://o.test:8080@evil/",
        "http://o.test:8080@evil/",
    ),
    (
        "o.test",
        "https",
        "t.io",
        "https://o.test:443.evil/",
        "https://t.io:443.evil/",
    ),
    (
        "o.test",
        "http",
        "t.io",
        "https://o.test/a",
        "http://t.io/a",
    ),
    (
        "o.test",
        "http",
        "t.io",
        "HTTPS://O.Test/a",
        "http://t.io/a",
    ),
    ("o.test", "https", "t.io", "x //o.test/a", "x //t.io/a"),
    (
        "o.test",
        "https",
        "t.io",
        r"https:\/\/o.test\/a",
        r"https:\/\/t.io\/a",
    ),
    ("o.test", "https", "t.io", r"\/\/o.test", r"\/\/t.io"),
    (
        "o.test",
        "https",
        "t.io",
        "https://o.test./a",
        "https://t.io/a",
    ),
    (
        "o.test",
        "https",
        "t.io",
        "https://o.test:443/a",
        "https://t.io/a",
    ),
    (
        "o.test",
        "https",
        "t.io",
        "https://o.test.:443",
        "https://t.io",
    ),
    (
        "o.test",
        "https",
        "t.io",
        "http://o.test:80/",
        "https://t.io/",
    ),
    (
        "o.test",
        "https",
        "t.io",
        "https://o.test:80/",
        "https://o.test:80/",
    ),
    (
        "o.test",
        "https",
        "t.io",
        "https://o.test:8443/",
        "https://o.test:8443/",
    ),
    ("o.test", "https", "t.io", "//o.test:443/", "//t.io/"),
    ("o.test", "http", "t.io", "//o.test:443/", "//o.test:443/"),
    ("o.test", "http", "t.io", "//o.test:80/", "//t.io/"),
    (
        "o.test",
        "https",
        "t.io",
        "//o.test.evil/",
        "//o.test.evil/",
    ),
    ("o.test", "https", "t.io", "//o.test..", "//o.test.."),
    ("o.test", "https", "t.io", "//o.test@x", "//o.test@x"),
    ("o.test", "https", "t.io", "//o.testx", "//o.testx"),
    ("o.test", "https", "t.io", "https:/o.test", "https://t.io"),
    (
        "o.test",
        "http",
        "t.io",
        r"https:\o.test/a",
        "http://t.io/a",
    ),
    ("o.test", "http", "t.io", r"x=/\o.test/a", "x=//t.io/a"),
    ("o.test", "http", "t.io", r"x=\\o.test", "x=//t.io"),
    ("o.test", "http", "t.io", "x=///o.test", "x=//t.io"),
    (
        "o.test",
        "http",
        "t.io",
        "https:////o.test",
        "https:////o.test",
    ),
    ("o.test", "http", "t.io", "https:o.test", "https:o.test"),
    (
        "o.test",
        "http",
        "t.io",
        "https://e.test//o.test/a",
        "https://e.test//o.test/a",
    ),
    (
        "o.test",
        "http",
        "t.io",
        r#""https:\\/\\/o.test\\/a""#,
        r#""http:\\/\\/t.io\\/a""#,
    ),
    (
        "o.test",
        "http",
        "t.io",
        r"https:\u002F\u002Fo.test\u002F",
        r"http:\u002F\u002Ft.io\u002F",
    ),
    (
        "o.test",
        "http",
        "t.io",
        r"https:\u002f\u002fo.test\u002eevil",
        r"https:\u002f\u002fo.test\u002eevil",
    ),
    (
        "o.test",
        "http",
        "t.io",
        "https:&#x2F;&#x2F;o.test&#x2F;",
        "http:&#x2F;&#x2F;t.io&#x2F;",
    ),
    (
        "o.test",
        "http",
        "t.io",
        "=&#47;&sol;o.test",
        "=&sol;&sol;t.io",
    ),
    (
        "o.test",
        "http",
        "t.io",
        "=&sol;&sol;o.test",
        "=&sol;&sol;t.io",
    ),
    (
        "o.test",
        "http",
        "t.io:7676",
        "?r=https%3A%2F%2Fo.test%2F",
        "?r=http%3A%2F%2Ft.io%3A7676%2F",
    ),
    (
        "o.test",
        "http",
        "[::1]",
        "?r=%2f%2fO.TEST%3a80",
        "?r=%2f%2f%5b%3a%3a1%5d",
    ),
    (
        "o.test",
        "http",
        "t.io",
        "?r=%2F%2Fo.test%2eevil",
        "?r=%2F%2Fo.test%2eevil",
    ),
    ("o.test", "http", "t.io", "//o.test%2Fa", "//t.io%2Fa"),
    ("o.test", "http", "t.io", "//o.test\tx", "//o.test\tx"),
    ("o.test", "http", "t.io", "//o.test\r\n<", "//t.io\r\n<"),
    ("o.test", "http", "t.io", "//o.test\r\n.evil", "//o.test\r\n.evil"),
    ("o.test", "http", "t.io", r"//o.test\n\/", r"//t.io\n\/"),
    ("o.test", "http", "t.io", r"//o.test\\u002ex", r"//o.test\\u002ex"),
    ("o.test", "http", "t.io", "//o.test%0A/", "//o.test%0A/"),
    ("o.test", "http", "t.io", "%2F%2Fo.test%0A%2F", "%2F%2Ft.io%0A%2F"),
    (
        "o.test",
        "http",
        "t.io",
        "//o.test\u{ad}x",
        "//o.test\u{ad}x",
    ),
    (
        "o.test",
        "http",
        "t.io",
        "//o.test\u{3002}x",
        "//o.test\u{3002}x",
    ),
    (
        "o.test",
        "http",
        "t.io",
        "//o.test:000080/",
        "//o.test:000080/",
    ),
    (
        "o.test:8443",
        "https",
        "t.io",
        "https://o.test/",
        "https://o.test/",
    ),
    (
        "o.test:8443",
        "https",
        "t.io",
        "https://o.test:8443/",
        "https://t.io/",
    ),
    ("o.test:8443", "https", "t.io", "//o.test.:8443", "//t.io"),
    (
        "o.test:443",
        "https",
        "t.io",
        "https://o.test/",
        "https://t.io/",
    ),
    (
        "o.test:443",
        "https",
        "t.io",
        "https://o.test:443/",
        "https://t.io/",
    ),
    (
        "o.test:443",
        "https",
        "t.io",
        "http://o.test:443/",
        "https://t.io/",
    ),
    ("o.test:443", "http", "t.io", "//o.test/", "//o.test/"),
    (
        "o.test:443",
        "https",
        "t.io",
        "http://o.test/",
        "http://o.test/",
    ),
    (
        "o.test",
        "https",
        "t.io",
        "http://o.test:443/",
        "http://o.test:443/",
    ),
];

/// Panics unless the reference gives every [`SPEC_EXAMPLES`] result.
pub fn check_spec_examples() {
    for &(origin, scheme, target, input, expected) in SPEC_EXAMPLES {
        let got = Reference::new(origin, scheme, target).apply(input.as_bytes());
        assert_eq!(
            String::from_utf8_lossy(&got),
            expected,
            "reference rule {origin} -> {scheme}://{target} on {input:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    /// `cargo test --manifest-path fuzz/Cargo.toml --lib` checks the examples without the
    /// fuzzer.
    #[test]
    fn the_reference_follows_its_examples() {
        super::check_spec_examples();
    }
}
