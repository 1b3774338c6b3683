//! A reference implementation of the one URL rule, written from its specification and not
//! from `crates/core/src/url_rewrite.rs`: slow and plain, one position at a time.
//!
//! The rule: at each position, left to right, look for a *match*:
//!
//! 1. a prefix: `https://`, `http://`, `//`, `https:\/\/`, `http:\/\/` or `\/\/` (the scheme
//!    letters in any case);
//! 2. the origin host, ASCII letters in any case;
//! 3. optionally one `.`;
//! 4. optionally a port part (a number, so leading zeros do not matter): with an origin
//!    without a port, `:D` where `D` is the default
//!    port of the URL's scheme (443 for https, 80 for http; for `//` and `\/\/` the default
//!    port of the *target* scheme); with an origin port `P`, `:P` is required, but may be left
//!    out when `P` is that default port;
//! 5. a boundary: the end of the input, or a byte that cannot continue an authority (anything
//!    but ASCII letters and digits, `.`, `-`, `_`, `:`, `@`).
//!
//! The `//` of `http://` or `https://` is part of that prefix, never a scheme-relative one of
//! its own (the specification's grammar leaves this open; a URL with a scheme means that
//! scheme's port).
//!
//! A match (prefix to port) is replaced by the same form with the target: `S://T`,
//! `S:\/\/T`, `//T` or `\/\/T`. Every other byte is copied; matches do not overlap.

/// The forms of prefix, and what replaces them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `https://` / `http://`, with the scheme's default port.
    Absolute(u16),
    /// `https:\/\/` / `http:\/\/`, with the scheme's default port.
    AbsoluteEscaped(u16),
    /// `//`: resolved against the proxied page, so the target scheme's default port.
    Relative,
    /// `\/\/`.
    RelativeEscaped,
}

const PREFIXES: [(&[u8], Form); 6] = [
    (b"https://", Form::Absolute(443)),
    (b"http://", Form::Absolute(80)),
    (b"https:\\/\\/", Form::AbsoluteEscaped(443)),
    (b"http:\\/\\/", Form::AbsoluteEscaped(80)),
    (b"//", Form::Relative),
    (b"\\/\\/", Form::RelativeEscaped),
];

/// The rule for one origin and one target.
#[derive(Debug, Clone)]
pub struct Reference {
    host: Vec<u8>,
    port: Option<u16>,
    target_default_port: u16,
    absolute: Vec<u8>,
    absolute_escaped: Vec<u8>,
    relative: Vec<u8>,
    relative_escaped: Vec<u8>,
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
            target_default_port: if target_scheme.eq_ignore_ascii_case("https") {
                443
            } else {
                80
            },
            absolute: format!("{target_scheme}://{target_authority}").into_bytes(),
            absolute_escaped: format!("{target_scheme}:\\/\\/{target_authority}").into_bytes(),
            relative: format!("//{target_authority}").into_bytes(),
            relative_escaped: format!("\\/\\/{target_authority}").into_bytes(),
        }
    }

    /// The rule applied to a whole input.
    pub fn apply(&self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len());
        let mut i = 0;
        while i < input.len() {
            match self.match_at(input, i) {
                Some((len, replacement)) => {
                    out.extend_from_slice(replacement);
                    i += len;
                }
                None => {
                    out.push(input[i]);
                    i += 1;
                }
            }
        }
        out
    }

    /// The length of the match starting at `i` and its replacement, if there is one.
    fn match_at(&self, input: &[u8], i: usize) -> Option<(usize, &[u8])> {
        for (prefix, form) in PREFIXES {
            let Some(after_prefix) = starts_with_ignore_case(input, i, prefix) else {
                continue;
            };
            if matches!(form, Form::Relative | Form::RelativeEscaped)
                && [&b"http:"[..], b"https:"]
                    .iter()
                    .any(|scheme| ends_with_ignore_case(&input[..i], scheme))
            {
                // The slashes of `http://` are not a scheme-relative URL: `http://A:443` is
                // port 443 over http, not the origin, even where `//A:443` would be.
                continue;
            }
            let Some(mut at) = starts_with_ignore_case(input, after_prefix, &self.host) else {
                continue;
            };
            if input.get(at) == Some(&b'.') {
                at += 1;
            }
            let default = match form {
                Form::Absolute(port) | Form::AbsoluteEscaped(port) => port,
                Form::Relative | Form::RelativeEscaped => self.target_default_port,
            };
            let port_given = self.port.unwrap_or(default);
            let may_omit = self.port.is_none_or(|p| p == default);
            // A port is a number: `:0443` is port 443 to a browser.
            let with_port = input
                .get(at)
                .filter(|&&b| b == b':')
                .map(|_| at + 1 + input[at + 1..].iter().take_while(|&&b| b == b'0').count())
                .and_then(|digits| {
                    starts_with_ignore_case(input, digits, port_given.to_string().as_bytes())
                });
            let end = match with_port {
                Some(end) if is_boundary(input, end) => end,
                _ if may_omit && is_boundary(input, at) => at,
                _ => continue,
            };
            let replacement = match form {
                Form::Absolute(_) => &self.absolute,
                Form::AbsoluteEscaped(_) => &self.absolute_escaped,
                Form::Relative => &self.relative,
                Form::RelativeEscaped => &self.relative_escaped,
            };
            return Some((end - i, replacement));
        }
        None
    }
}

/// If `input[at..]` starts with `word` (ASCII case-insensitively), the index after it.
fn starts_with_ignore_case(input: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    let end = at.checked_add(word.len())?;
    let got = input.get(at..end)?;
    got.eq_ignore_ascii_case(word).then_some(end)
}

fn ends_with_ignore_case(input: &[u8], word: &[u8]) -> bool {
    input.len() >= word.len() && input[input.len() - word.len()..].eq_ignore_ascii_case(word)
}

/// The end of the input, or a byte that cannot continue an authority.
fn is_boundary(input: &[u8], at: usize) -> bool {
    match input.get(at) {
        None => true,
        Some(&b) => !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'@')),
    }
}

/// Examples from the specification, checked once by the `url_rule` target before it fuzzes,
/// so the reference itself is tested wherever the fuzzer runs: (origin, target scheme, target
/// authority, input, expected).
pub const SPEC_EXAMPLES: &[(&str, &str, &str, &str, &str)] = &[
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
    ("o.test", "https", "t.io", "https:/o.test", "https:/o.test"),
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
