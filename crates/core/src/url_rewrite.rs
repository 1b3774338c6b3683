//! The one URL replacement rule, and a streaming replacer that applies it across chunk
//! boundaries.
//!
//! Every place the proxy rewrites (HTML attributes, text nodes, inline scripts and styles,
//! CSS/JS/JSON bodies, `Location` headers) uses this same rule. React compares the server HTML
//! with the RSC payload during hydration, so a URL rewritten in one place and not in another
//! breaks the page.
//!
//! The rule: an occurrence of the origin authority `A` preceded by `https://`, `http://` or `//`
//! (or their JSON-escaped forms `https:\/\/`, `http:\/\/`, `\/\/`) and followed by a byte that
//! cannot continue an authority becomes the same form with the request's scheme and authority.
//! The scheme is matched case-insensitively; `A` is matched exactly (hosts in pages are
//! lowercase in practice). `//A.evil.test`, `//A:8443`, `//A@evil.test` and `//Axyz` are not the
//! origin and are left alone. Every other byte is copied unchanged.

use memchr::memmem;

/// Longest prefix that can precede the authority: `https:\/\/`.
const MAX_PREFIX: usize = 10;

/// The origin → first-party mapping for one request.
#[derive(Debug, Clone)]
pub struct UrlRule {
    origin: Vec<u8>,
    finder: memmem::Finder<'static>,
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
    /// Maps `origin_authority` (`host[:port]`, lowercase) to `target_scheme://target_authority`.
    pub fn new(origin_authority: &str, target_scheme: &str, target_authority: &str) -> Self {
        let origin = origin_authority.as_bytes().to_vec();
        UrlRule {
            finder: memmem::Finder::new(&origin).into_owned(),
            origin,
            absolute: format!("{target_scheme}://{target_authority}").into_bytes(),
            absolute_escaped: format!("{target_scheme}:\\/\\/{target_authority}").into_bytes(),
            relative: format!("//{target_authority}").into_bytes(),
            relative_escaped: format!("\\/\\/{target_authority}").into_bytes(),
        }
    }

    /// Longest input span one match can cover.
    fn max_match_len(&self) -> usize {
        MAX_PREFIX + self.origin.len()
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

    fn could_start_match(&self, tail: &[u8]) -> bool {
        const FORMS: [&[u8]; 6] = [
            b"https://",
            b"http://",
            b"//",
            b"https:\\/\\/",
            b"http:\\/\\/",
            b"\\/\\/",
        ];
        FORMS.iter().any(|prefix| {
            let (head, rest) = tail.split_at(tail.len().min(prefix.len()));
            head.eq_ignore_ascii_case(&prefix[..head.len()])
                && (rest.is_empty()
                    || (head.len() == prefix.len() && self.origin.starts_with(rest)))
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
        for at in self.finder.find_iter(work) {
            let end = at + self.origin.len();
            let next = match work.get(end) {
                Some(b) => Some(*b),
                None if at_end => None,
                // The byte after the authority has not arrived: decide next time.
                None => break,
            };
            if let Some((start, replacement)) = self.classify(work, at, next) {
                if start < emitted {
                    // Overlaps bytes already written (cannot happen: authorities hold no '/').
                    continue;
                }
                out.extend_from_slice(&work[emitted..start]);
                out.extend_from_slice(replacement);
                emitted = end;
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

    /// If the authority occurrence at `at` is a match, returns (match start, replacement).
    /// `next` is the byte after the authority, `None` at the end of the input.
    fn classify(&self, work: &[u8], at: usize, next: Option<u8>) -> Option<(usize, &[u8])> {
        if next.is_some_and(continues_authority) {
            return None;
        }
        let before = &work[..at];
        let (slashes_len, escaped) = if before.ends_with(b"\\/\\/") {
            (4, true)
        } else if before.ends_with(b"//") {
            (2, false)
        } else {
            return None;
        };
        let before_slashes = &before[..before.len() - slashes_len];
        let scheme_len = if ends_with_ignore_case(before_slashes, b"https:") {
            6
        } else if ends_with_ignore_case(before_slashes, b"http:") {
            5
        } else {
            0
        };
        let start = at - slashes_len - scheme_len;
        let replacement = match (scheme_len != 0, escaped) {
            (true, false) => &self.absolute,
            (true, true) => &self.absolute_escaped,
            (false, false) => &self.relative,
            (false, true) => &self.relative_escaped,
        };
        Some((start, replacement))
    }
}

/// Bytes that would make `A` part of a longer or different authority.
fn continues_authority(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'@')
}

fn ends_with_ignore_case(haystack: &[u8], suffix: &[u8]) -> bool {
    haystack.len() >= suffix.len()
        && haystack[haystack.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Applies a [`UrlRule`] to a byte stream split into arbitrary chunks.
///
/// Output is byte-identical for every split of the input. At most `10 + len(origin)` bytes are
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
