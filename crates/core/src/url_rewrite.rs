//! The one URL replacement rule, and a streaming replacer that applies it across chunk
//! boundaries.
//!
//! Every place the proxy rewrites (HTML attributes, text nodes, inline scripts and styles,
//! CSS/JS/JSON bodies, `Location` headers) uses this same rule. React compares the server HTML
//! with the RSC payload during hydration, so a URL rewritten in one place and not in another
//! breaks the page.
//!
//! The rule: an occurrence of the origin authority preceded by `https://`, `http://` or `//`
//! (or their JSON-escaped forms `https:\/\/`, `http:\/\/`, `\/\/`) and followed by a byte that
//! cannot continue an authority becomes the same form with the request's scheme and authority.
//! It covers every spelling a browser resolves to the origin, so no origin URL survives:
//!
//! * the scheme and the host in any letter case (`HTTPS://Origin.Example.COM/`);
//! * a trailing dot on the host (`//origin.example.com./`);
//! * an explicit default port: `:443` after `https:`, `:80` after `http:`, and for the
//!   scheme-relative forms the default port of the request's scheme, which is what the browser
//!   resolves them against (up to 5 digits, so `:0443` too). If the origin authority has a port,
//!   that port is required, unless it is the default one.
//!
//! Everything else is left alone, byte for byte: `//origin.example.com.evil.test`,
//! `//origin.example.com:8443`, `//origin.example.com@evil.test`, `//origin.example.comx`, and
//! an authority with user info (`//user@origin.example.com`), which no page uses for its own
//! links.

/// Longest prefix that can precede the authority: `https:\/\/`.
const MAX_PREFIX: usize = 10;

/// Longest port suffix that is still followed: `.` then `:` and 5 digits.
const MAX_SUFFIX: usize = 7;

/// The prefixes, with what replaces them (as [`Form`]).
const PREFIXES: [(&[u8], Form); 6] = [
    (b"https://", Form::Absolute(443)),
    (b"http://", Form::Absolute(80)),
    (b"//", Form::Relative),
    (b"https:\\/\\/", Form::AbsoluteEscaped(443)),
    (b"http:\\/\\/", Form::AbsoluteEscaped(80)),
    (b"\\/\\/", Form::RelativeEscaped),
];

/// How a match was written, which decides its replacement and its default port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `scheme://`, with the scheme's default port.
    Absolute(u16),
    /// `scheme:\/\/`.
    AbsoluteEscaped(u16),
    /// `//`: the default port is the request's scheme's.
    Relative,
    /// `\/\/`.
    RelativeEscaped,
}

/// The outcome of looking at one host occurrence.
enum Decision {
    /// Not a match.
    No,
    /// The bytes after the host have not all arrived.
    NeedMore,
    /// A match from `start` to `end` (exclusive), replaced by the form's replacement.
    Match {
        start: usize,
        end: usize,
        form: Form,
    },
}

/// The origin → first-party mapping for one request.
#[derive(Debug, Clone)]
pub struct UrlRule {
    /// The origin's host, lowercase (an IPv6 literal keeps its brackets).
    host: Vec<u8>,
    /// The origin authority's explicit port, if it has one.
    port: Option<u16>,
    /// Default port of the request's scheme, for the scheme-relative forms.
    target_default_port: u16,
    /// `scheme://authority`, with the request's scheme.
    absolute: Vec<u8>,
    /// `scheme:\/\/authority`.
    absolute_escaped: Vec<u8>,
    /// `//authority`.
    relative: Vec<u8>,
    /// `\/\/authority`.
    relative_escaped: Vec<u8>,
}

impl UrlRule {
    /// Maps `origin_authority` (`host[:port]`) to `target_scheme://target_authority`.
    pub fn new(origin_authority: &str, target_scheme: &str, target_authority: &str) -> Self {
        let authority = origin_authority.to_ascii_lowercase();
        let (host, port) = split_authority(&authority);
        Self::for_origin(host, port, target_scheme, target_authority)
    }

    /// [`UrlRule::new`] for an origin authority already split into its host and explicit
    /// port (as the settings hold it, parsed once at load).
    pub fn for_origin(
        origin_host: &str,
        origin_port: Option<u16>,
        target_scheme: &str,
        target_authority: &str,
    ) -> Self {
        let (host, port) = (origin_host.to_ascii_lowercase(), origin_port);
        UrlRule {
            host: host.into_bytes(),
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

    /// Longest input span one match can cover.
    fn max_match_len(&self) -> usize {
        MAX_PREFIX + self.host.len() + MAX_SUFFIX
    }

    /// Length of the longest suffix of `work` that is the start of a match, or a whole match
    /// still waiting for the byte after it. Everything before it can be decided now.
    fn undecided_tail(&self, work: &[u8]) -> usize {
        let window = self.max_match_len().min(work.len());
        let tail = &work[work.len() - window..];
        // A match starts with `h`, `/` or `\`; try those positions, longest suffix first.
        tail.iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, b'h' | b'H' | b'/' | b'\\'))
            .find(|&(i, _)| self.could_start_match(&tail[i..]))
            .map_or(0, |(i, _)| window - i)
    }

    /// Whether `tail` (the end of the input so far) could be the start of a match.
    fn could_start_match(&self, tail: &[u8]) -> bool {
        let first = tail.first().map(u8::to_ascii_lowercase);
        PREFIXES.iter().any(|(prefix, _)| {
            if first != Some(prefix[0]) {
                return false;
            }
            let (head, rest) = tail.split_at(tail.len().min(prefix.len()));
            if !head.eq_ignore_ascii_case(&prefix[..head.len()]) {
                return false;
            }
            if rest.len() <= self.host.len() {
                return rest.eq_ignore_ascii_case(&self.host[..rest.len()]);
            }
            let (host, suffix) = rest.split_at(self.host.len());
            host.eq_ignore_ascii_case(&self.host) && could_be_port_suffix(suffix)
        })
    }

    /// Applies the rule to a complete value (a header, an attribute) in one go.
    pub fn rewrite_all(&self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len());
        self.process(input, true, &mut out);
        out
    }

    /// Rewrites the decidable prefix of `work` into `out` and returns its length. With
    /// `at_end`, all of `work` is decidable.
    fn process(&self, work: &[u8], at_end: bool, out: &mut Vec<u8>) -> usize {
        let mut emitted = 0;
        for at in host_candidates(work) {
            match self.classify(work, at, at_end) {
                Decision::No => {}
                // The bytes after the host have not arrived: decide next time.
                Decision::NeedMore => break,
                Decision::Match { start, end, form } => {
                    if start < emitted {
                        // Overlaps bytes already written (cannot happen: hosts hold no '/').
                        continue;
                    }
                    out.extend_from_slice(&work[emitted..start]);
                    out.extend_from_slice(self.replacement(form));
                    emitted = end;
                }
            }
        }
        let decided = if at_end {
            work.len()
        } else {
            // Hold back only a tail that could still grow into a match.
            (work.len() - self.undecided_tail(work)).max(emitted)
        };
        out.extend_from_slice(&work[emitted..decided]);
        decided
    }

    fn replacement(&self, form: Form) -> &[u8] {
        match form {
            Form::Absolute(_) => &self.absolute,
            Form::AbsoluteEscaped(_) => &self.absolute_escaped,
            Form::Relative => &self.relative,
            Form::RelativeEscaped => &self.relative_escaped,
        }
    }

    /// Decides the candidate at `at` (just after a `//` or `\/\/`): the host in any case, a
    /// prefix before it, then an optional dot and port, then a byte that cannot continue an
    /// authority.
    fn classify(&self, work: &[u8], at: usize, at_end: bool) -> Decision {
        let rest = &work[at..];
        if rest.len() < self.host.len() {
            let partial = rest.eq_ignore_ascii_case(&self.host[..rest.len()]);
            return if partial && !at_end {
                Decision::NeedMore
            } else {
                Decision::No
            };
        }
        if self.host.is_empty() || !rest[..self.host.len()].eq_ignore_ascii_case(&self.host) {
            return Decision::No;
        }
        let before = &work[..at];
        let Some((prefix_len, form)) = PREFIXES
            .iter()
            .find(|(prefix, _)| ends_with_ignore_case(before, prefix))
            .map(|(prefix, form)| (prefix.len(), *form))
        else {
            return Decision::No;
        };
        let default_port = match form {
            Form::Absolute(port) | Form::AbsoluteEscaped(port) => port,
            Form::Relative | Form::RelativeEscaped => self.target_default_port,
        };
        let after = &work[at + self.host.len()..];
        let mut i = usize::from(after.first() == Some(&b'.'));
        let port = match after.get(i) {
            Some(b':') => {
                let digits = after[i + 1..]
                    .iter()
                    .take(6)
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits == after.len() - i - 1 && !at_end && digits <= 5 {
                    return Decision::NeedMore;
                }
                if digits == 0 || digits > 5 {
                    return Decision::No;
                }
                let value = after[i + 1..i + 1 + digits]
                    .iter()
                    .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
                i += 1 + digits;
                Some(value)
            }
            _ => None,
        };
        if after.len() == i && !at_end {
            return Decision::NeedMore;
        }
        let port_ok = match (port, self.port) {
            (None, None) => true,
            (None, Some(own)) => own == default_port,
            (Some(p), None) => p == u32::from(default_port),
            (Some(p), Some(own)) => p == u32::from(own),
        };
        if !port_ok {
            return Decision::No;
        }
        match after.get(i) {
            Some(&b) if continues_authority(b) => Decision::No,
            _ => Decision::Match {
                start: at - prefix_len,
                end: at + self.host.len() + i,
                form,
            },
        }
    }
}

/// Where a host may start: after every `//` and every `\/\/`, in order (overlapping: in
/// `///host` the host follows the second pair). Searching for the slashes rather than for the
/// host finds it in any letter case. One `memchr2` pass over `/` and `\` serves both forms:
/// SIMD where the target has it, and without SIMD (wasm) far cheaper than a substring search
/// per form, whose fallback prefilter dominated the wasm profile.
fn host_candidates(work: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr2_iter(b'/', b'\\', work).filter_map(move |at| {
        let rest = &work[at..];
        if rest.starts_with(b"//") {
            Some(at + 2)
        } else if rest.starts_with(b"\\/\\/") {
            Some(at + 4)
        } else {
            None
        }
    })
}

/// Splits a lowercase `host[:port]` (IPv6 literals in brackets). A port that is not a number
/// stays part of the host, which then never matches a real URL.
fn split_authority(authority: &str) -> (&str, Option<u16>) {
    let port_at = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => i,
        _ => return (authority, None),
    };
    match authority[port_at + 1..].parse::<u16>() {
        Ok(port) => (&authority[..port_at], Some(port)),
        Err(_) => (authority, None),
    }
}

/// Whether `suffix`, the bytes after a host at the end of the input so far, could still be
/// the start of its optional dot and port: `.`, `:`, `.:` and up to 5 digits after the colon.
fn could_be_port_suffix(suffix: &[u8]) -> bool {
    let rest = suffix.strip_prefix(b".").unwrap_or(suffix);
    match rest.split_first() {
        None => true,
        Some((b':', digits)) => digits.len() <= 5 && digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    }
}

/// Bytes that would make the host part of a longer or different authority.
fn continues_authority(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'@')
}

fn ends_with_ignore_case(haystack: &[u8], suffix: &[u8]) -> bool {
    haystack.len() >= suffix.len()
        && haystack[haystack.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Applies a [`UrlRule`] to a byte stream split into arbitrary chunks.
///
/// Output is byte-identical for every split of the input. At most `17 + len(host)` bytes are
/// held back between writes: just enough to decide a match that straddles a boundary.
#[derive(Debug)]
pub struct StreamReplacer {
    rule: UrlRule,
    /// Input received but not yet decided.
    carry: Vec<u8>,
}

impl StreamReplacer {
    /// A replacer with nothing held.
    pub fn new(rule: UrlRule) -> Self {
        StreamReplacer {
            carry: Vec::with_capacity(2 * rule.max_match_len()),
            rule,
        }
    }

    /// Rewrites `input`, appending every byte that can already be decided to `out`.
    pub fn write(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        if !self.carry.is_empty() {
            // Stitch only the boundary: the held bytes plus enough input to decide every match
            // that starts among them. The rest of the input is processed in place, uncopied.
            let carried = self.carry.len();
            let take = input.len().min(self.rule.max_match_len() + 1);
            self.carry.extend_from_slice(&input[..take]);
            let kept = self.rule.process(&self.carry, false, out);
            if take == input.len() {
                self.carry.drain(..kept);
                return;
            }
            // With `max_match_len + 1` input bytes joined, the undecided tail (at most
            // `max_match_len` long) cannot reach back into the held bytes.
            debug_assert!(kept > carried);
            input = &input[kept - carried..];
            self.carry.clear();
        }
        let kept = self.rule.process(input, false, out);
        self.carry.extend_from_slice(&input[kept..]);
    }

    /// The rule this replacer applies.
    pub fn rule(&self) -> &UrlRule {
        &self.rule
    }

    /// Bytes held back for a match that may straddle the next write.
    pub fn held(&self) -> usize {
        self.carry.len()
    }

    /// Emits whatever is held as if the input ended here. Used at the end of the stream and
    /// before bytes that must bypass the rule (an RSC payload, a raw bail-out flush).
    pub fn flush(&mut self, out: &mut Vec<u8>) {
        self.rule.process(&self.carry, true, out);
        self.carry.clear();
    }

    /// Emits whatever is held as it came, unrewritten: for when the bytes that would decide it
    /// bypass the rule, so deciding it as if the input ended ([`flush`](Self::flush)) could
    /// rewrite a host that those bytes continue (`//origin.example.com` then `.evil.test`).
    pub fn pass_held(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.carry);
    }

    /// Ends the stream.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        self.flush(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule() -> UrlRule {
        UrlRule::new("origin.example.com", "http", "127.0.0.1:7676")
    }

    fn rewrite(input: &str) -> String {
        String::from_utf8(rule().rewrite_all(input.as_bytes())).unwrap()
    }

    #[test]
    fn rewrites_every_form_of_the_origin() {
        let cases = [
            ("https://origin.example.com/a", "http://127.0.0.1:7676/a"),
            ("http://origin.example.com", "http://127.0.0.1:7676"),
            ("HTTPS://origin.example.com/", "http://127.0.0.1:7676/"),
            (
                "src=\"//origin.example.com/x.js\"",
                "src=\"//127.0.0.1:7676/x.js\"",
            ),
            (
                r#""https:\/\/origin.example.com\/api""#,
                r#""http:\/\/127.0.0.1:7676\/api""#,
            ),
            (
                r#""\/\/origin.example.com\/api""#,
                r#""\/\/127.0.0.1:7676\/api""#,
            ),
            (
                "url(https://origin.example.com/bg.png)",
                "url(http://127.0.0.1:7676/bg.png)",
            ),
            (
                "a.jpg 1x, https://origin.example.com/b.jpg 2x,//origin.example.com/c.jpg 3x",
                "a.jpg 1x, http://127.0.0.1:7676/b.jpg 2x,//127.0.0.1:7676/c.jpg 3x",
            ),
            (
                "https://origin.example.com?q=1#f",
                "http://127.0.0.1:7676?q=1#f",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(rewrite(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn every_spelling_a_browser_resolves_to_the_origin_is_rewritten() {
        let cases = [
            ("HTTPS://ORIGIN.Example.COM/a", "http://127.0.0.1:7676/a"),
            (
                "https://origin.example.com:443/a",
                "http://127.0.0.1:7676/a",
            ),
            (
                "https://origin.example.com:0443/a",
                "http://127.0.0.1:7676/a",
            ),
            ("http://origin.example.com:80", "http://127.0.0.1:7676"),
            ("https://origin.example.com./a", "http://127.0.0.1:7676/a"),
            (
                "https://origin.example.com.:443/a",
                "http://127.0.0.1:7676/a",
            ),
            ("//Origin.Example.Com./x", "//127.0.0.1:7676/x"),
            // Scheme-relative URLs resolve against the proxied page: http here.
            ("//origin.example.com:80/x", "//127.0.0.1:7676/x"),
            (
                r#""https:\/\/ORIGIN.example.com:443\/api""#,
                r#""http:\/\/127.0.0.1:7676\/api""#,
            ),
            (
                r#""\/\/origin.example.com.\/""#,
                r#""\/\/127.0.0.1:7676\/""#,
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(rewrite(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn ports_follow_the_scheme_and_the_origin_authority() {
        // The default port belongs to the URL's scheme, or for `//` to the request's.
        for input in [
            "http://origin.example.com:443/",
            "https://origin.example.com:80/",
            "//origin.example.com:443/",
            "https://origin.example.com:443443/",
            "https://origin.example.com:/",
            "https://origin.example.com.:8443/",
            "https://origin.example.com../",
        ] {
            assert_eq!(rewrite(input), input);
        }
        let https = UrlRule::new("o.test", "https", "p.test");
        assert_eq!(https.rewrite_all(b"//o.test:443/"), b"//p.test/");
        assert_eq!(https.rewrite_all(b"//o.test:80/"), b"//o.test:80/");
        // An origin on its own port: that port is required, unless it is the default one.
        let own_port = UrlRule::new("O.test:8080", "https", "p.test");
        assert_eq!(
            own_port.rewrite_all(b"http://o.test:8080/ http://o.test/ https://o.test:8080"),
            b"https://p.test/ http://o.test/ https://p.test"
        );
        let default_port = UrlRule::new("o.test:443", "https", "p.test");
        assert_eq!(
            default_port.rewrite_all(b"https://o.test/ https://o.test:443/ http://o.test/"),
            b"https://p.test/ https://p.test/ http://o.test/"
        );
    }

    #[test]
    fn leaves_other_authorities_alone() {
        for input in [
            "https://origin.example.com.evil.test/",
            "https://origin.example.comx/",
            "https://origin.example.com:8443/",
            "https://origin.example.com@evil.test/",
            "https://notorigin.example.com/",
            "https://cdn.example.com/origin.example.com/",
            "origin.example.com without a scheme",
            "https:/origin.example.com",
            "https://origin.example.co",
            "//user@origin.example.com/",
        ] {
            assert_eq!(rewrite(input), input);
        }
    }

    #[test]
    fn host_lengths_in_both_directions() {
        let longer_origin = UrlRule::new("origin.really-long-publisher.example", "https", "a.io");
        assert_eq!(
            longer_origin
                .rewrite_all(b"<a href=\"https://origin.really-long-publisher.example/p\">"),
            b"<a href=\"https://a.io/p\">"
        );
        let shorter_origin = UrlRule::new("o.io", "https", "www.first-party-publisher.example");
        assert_eq!(
            shorter_origin.rewrite_all(b"x //o.io/p y http://o.io"),
            b"x //www.first-party-publisher.example/p y https://www.first-party-publisher.example"
        );
    }

    /// Splits `input` at the given cut points (sorted, deduplicated) and runs the replacer.
    fn run_split(rule: &UrlRule, input: &[u8], cuts: &[usize]) -> Vec<u8> {
        let mut replacer = StreamReplacer::new(rule.clone());
        let mut out = Vec::new();
        let mut last = 0;
        for &cut in cuts {
            replacer.write(&input[last..cut], &mut out);
            last = cut;
        }
        replacer.write(&input[last..], &mut out);
        replacer.finish(&mut out);
        out
    }

    #[test]
    fn every_single_split_point_gives_the_same_output() {
        let input = b"<img srcset=\"https://origin.example.com/a.jpg 1x, //origin.example.com/b.jpg 2x\">\
            x https:\\/\\/origin.example.com\\/y https://origin.example.com.evil/ http://origin.example.com";
        let whole = rule().rewrite_all(input);
        for cut in 0..=input.len() {
            assert_eq!(run_split(&rule(), input, &[cut]), whole, "cut at {cut}");
        }
        // One byte at a time.
        let all: Vec<usize> = (1..input.len()).collect();
        assert_eq!(run_split(&rule(), input, &all), whole);
    }

    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("https://origin.example.com".to_owned()),
            Just("http://origin.example.com".to_owned()),
            Just("//origin.example.com".to_owned()),
            Just("https:\\/\\/origin.example.com".to_owned()),
            Just("origin.example.com".to_owned()),
            Just(".evil".to_owned()),
            Just(":8443".to_owned()),
            Just("/path é✓😀 ".to_owned()),
            Just("HTTPS:".to_owned()),
            Just("//ORIGIN.example.COM".to_owned()),
            Just(".".to_owned()),
            Just(":443".to_owned()),
            Just(":80".to_owned()),
            Just(":44".to_owned()),
            Just(":".to_owned()),
            "[a-z/:. \\\\\"]{0,12}",
        ]
    }

    proptest! {
        #[test]
        fn output_is_independent_of_chunking(
            parts in proptest::collection::vec(fragment(), 0..24),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let input = parts.concat().into_bytes();
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            points.sort_unstable();
            points.dedup();
            let whole = rule().rewrite_all(&input);
            prop_assert_eq!(run_split(&rule(), &input, &points), whole);
        }

        #[test]
        fn bytes_outside_matches_are_unchanged(input in "[a-z/:. <>\"=]{0,200}") {
            // Without the origin authority in the input nothing may change.
            prop_assume!(!input.contains("origin.example.com"));
            prop_assert_eq!(rule().rewrite_all(input.as_bytes()), input.as_bytes());
        }
    }
}
