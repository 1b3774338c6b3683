//! The one URL replacement rule, and a streaming replacer that applies it across chunk
//! boundaries.
//!
//! Every place the proxy rewrites (HTML attributes, text nodes, inline scripts and styles,
//! CSS/JS/JSON bodies, Flight rows, `Location` headers) uses this same rule on the bytes as
//! they are. React compares the server HTML with the RSC payload during hydration, so a URL
//! rewritten in one place and not in another breaks the page.
//!
//! # The rule
//!
//! A match is `scheme C S…` or `S S…` (scheme-relative), then the origin host, an optional
//! `.` and port, then a character that cannot continue the authority. It becomes the same
//! spelling with the request's scheme and authority. The slashes `S` (one to three with a
//! scheme, two or three without) and the colon `C` are all written in one form:
//!
//! | form | slash `S` | colon `C` | typical source |
//! |---|---|---|---|
//! | plain | `/` or `\` (WHATWG URL parsing reads `\` as `/`) | `:` | HTML, CSS, JS, headers |
//! | JSON-escaped | `\/` | `:` | JSON |
//! | double-escaped | `\\/` | `:` | JSON inside a JS string literal (`json_encode`) |
//! | Unicode escape | `\u002F`, `\u002f` | `:` | serialize-javascript |
//! | character reference | `&#x2F;` (`x`/`X`, `F`/`f`), `&#47;`, `&sol;` | `:` | HTML attributes and text |
//! | percent-encoded | `%2F`, `%2f` | `%3A`, `%3a` | query parameters (`redirect_to=`) |
//!
//! The replacement keeps the form: plain slashes become `//`; other forms repeat the slash
//! spelling next to the host (`&#47;` stays `&#47;`). In the percent-encoded form the colon,
//! and every byte of the authority other than letters, digits and `-._~`, are percent-encoded
//! with hex letters in the case of the matched `%2F`/`%2f` (so a port is `%3A7676`, an IPv6
//! literal `%5B…%5D`); in every other form the authority is written as it is (`:7676`).
//! When the request's authority has no port and the match ended at a port before a
//! character that would go on with a host (see the boundaries), the replacement ends with
//! the default port of the request's scheme, in the form's colon: `:443`, `%3A443`.
//!
//! Within a match:
//!
//! * the scheme (`http`, `https`) and the host are compared in any ASCII letter case;
//! * a trailing dot on the host is allowed (`//origin.example.com./`);
//! * an explicit default port is allowed: `:443` after `https`, `:80` after `http`, and for
//!   the scheme-relative forms the default port of the request's scheme, which is what the
//!   browser resolves them against (up to 5 digits, so `:0443` too). If the origin authority
//!   has a port, that port is required, unless it is the default one. The port's colon is the
//!   form's `C`.
//!
//! Boundaries:
//!
//! * after the host, the next character must not continue an authority: ASCII letters,
//!   digits, `.-_:@` and any non-ASCII character (IDNA may map it into the host: U+3002
//!   becomes `.`, U+00AD is dropped) all do. A `%HH`, `\uHHHH`, `\n`, `\r` or `\t` there is
//!   read as the character it encodes, also escaped once more (`\\u002e`, `\\n`: JSON in a
//!   JavaScript string), so `origin.example.com%2eevil.test` is a longer host;
//! * after a port, only a digit (another port: `:80\n80` is port 8080) or `@` (the origin
//!   becomes user info: `:80@evil.test` is the host `evil.test`) continues the authority,
//!   read the same way. URL parsing fails on any other character there: it is no longer
//!   host, so it ends the URL and `<!-- http://origin.example.com:80\n-->` is rewritten. Where
//!   that character would go on with a host written before it, the replacement keeps a port
//!   (see above), so `https://origin.example.com:443.evil.test`, which is no URL, never
//!   becomes one to the first-party host with `.evil.test` after it;
//! * tab, LF and CR after the host or port (raw or escaped) are looked past, as URL parsing
//!   removes them wherever they are: the next other character decides. So an origin URL at
//!   the end of a line (`source: http://origin.example.com:80\r\n`) is rewritten, while
//!   `//origin.example.com\n.evil.test` is the host `origin.example.com.evil.test` and is
//!   left alone. At most 32 bytes of them are looked past (beyond, the URL is left alone), so
//!   the streaming replacer decides from a bounded window. Percent-encoded (`%0A`) they are
//!   looked past only in the percent-encoded form, whose server decodes them first; elsewhere
//!   URL parsing decodes them into the host, which is then invalid, and the URL is left alone
//!   (after a port, where URL parsing fails at the `%`, they end it like any other character
//!   but a digit or `@`);
//! * the slashes are counted back from the host, at most three, all in one form; the forms
//!   are tried longest spelling first (double-escaped, JSON-escaped, Unicode escape,
//!   character reference, percent-encoded, plain), so `https:\/\/origin…` keeps its escapes;
//! * scheme-relative slashes preceded by a letter, digit, `.-_~%@`, `/` or `\` are a path
//!   inside another URL (`https://evil.test//origin.example.com/a`), not a URL of their own.
//!
//! Not covered (left byte for byte, although a browser or the server reading the parameter
//! reaches the origin): a form mixed within one URL (`https:/&#47;origin…`), four or more
//! slashes, `https:origin…` with no slash, host characters that are percent-encoded, escaped
//! or IDNA-mapped (`origin%2Eexample.com`, full-width letters), a host followed by `%2e` or
//! U+00AD and then the end of the host (`origin.example.com%2e/`), a tab or newline elsewhere
//! inside the URL (within the scheme, slashes or host, or before the port:
//! `origin.example.com\n:443`), more than 32 bytes of them after the host, `\n`, `\r`, `\t`
//! in HTML where the backslash starts a path (`origin.example.com\news`), `%0A` in a URL
//! read as written, character references without their `;` or with leading
//! zeros (`&#047;`), `&colon;` or `\u003A` for the colon, a backslash spelled `%5C`
//! or `&bsol;`, a port of six digits or more (`:000443`), double
//! percent-encoding, and authorities with user info (`//user@origin.example.com`), which no
//! page uses for its own links. `https:/origin…` and `https:\origin…` are rewritten although
//! against a page of the same scheme the browser reads them as a path on that page's host: the
//! rewrite then points at the first-party root instead, never at the origin. Left alone as
//! other hosts: `//origin.example.com.evil.test`, `//origin.example.com:8443`,
//! `//origin.example.com@evil.test`, `//origin.example.comx`, `//origin.example.com:80\n80`,
//! `//origin.example.com:80@evil.test`.
//!
//! `tests/url_spellings.rs` holds the table of spellings, checked against Node's WHATWG `URL`.

mod spelling;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use spelling::{
    continues_url, has_suffix, percent_encode, slash_ending, starts_with_one_of, suffix, Form,
    Start, Suffix, FORMS, MAX_BOUNDARY, MAX_SCHEME, MAX_SLASHES, MAX_SUFFIX, MAX_TOKEN, SCHEMES,
};

/// The outcome of looking at one host occurrence.
enum Decision {
    /// Not a match.
    No,
    /// The bytes after the host have not all arrived.
    NeedMore,
    /// A match from `start` to `end` (exclusive).
    Match(Found),
}

/// A match: where it is and how it is spelled.
struct Found {
    start: usize,
    end: usize,
    form: Form,
    /// With a scheme (`scheme C S…`) or scheme-relative (`S S…`).
    absolute: bool,
    /// The slash spelling next to the host, repeated in the replacement.
    slash: &'static [u8],
    /// The replacement ends with the target's default port, written out: the target has no
    /// port and the character after the match would go on with its host.
    with_port: bool,
}

/// The origin → first-party mapping for one request.
///
/// Each stage of a page holds the rule (the replacers in markup and in Flight text, the
/// Flight rows), so a clone shares one copy of its tables rather than allocating them again.
#[derive(Debug, Clone)]
pub struct UrlRule(Arc<Rule>);

/// What a [`UrlRule`] holds.
#[derive(Debug)]
struct Rule {
    /// The origin's host, lowercase (an IPv6 literal keeps its brackets).
    host: Vec<u8>,
    /// The origin authority's explicit port, if it has one.
    port: Option<u16>,
    /// Default port of the request's scheme, for the scheme-relative forms.
    target_default_port: u16,
    /// The request's scheme, as given.
    target_scheme: Vec<u8>,
    /// The request's authority, as given.
    target_authority: Vec<u8>,
    /// Whether that authority has a port.
    target_has_port: bool,
    /// `scheme://authority` and `//authority`: the plain form's replacements, by far the
    /// most frequent, written in one piece.
    plain_absolute: Vec<u8>,
    plain_relative: Vec<u8>,
    /// The bytes a match or its undecided end can contain (see [`Self::undecided_tail`]), as
    /// a table: a lookup per byte is what that scan costs.
    in_match: Box<[bool; 256]>,
    /// The host byte searched for to find host candidates, and a second one checked before
    /// a candidate is read further, each with its offset in `host` ([`host_candidates`]).
    anchor: (u8, usize),
    check: (u8, usize),
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
        let (anchor, check) = anchors(host.as_bytes());
        UrlRule(Arc::new(Rule {
            host: host.as_bytes().to_vec(),
            port,
            target_default_port: if target_scheme.eq_ignore_ascii_case("https") {
                443
            } else {
                80
            },
            target_scheme: target_scheme.as_bytes().to_vec(),
            target_authority: target_authority.as_bytes().to_vec(),
            target_has_port: split_authority(&target_authority.to_ascii_lowercase())
                .1
                .is_some(),
            plain_absolute: format!("{target_scheme}://{target_authority}").into_bytes(),
            plain_relative: format!("//{target_authority}").into_bytes(),
            anchor,
            check,
            in_match: {
                let mut set = Box::new([false; 256]);
                // Besides the host's bytes: letters and digits (scheme, hex, `u`, `sol`, port),
                // the punctuation of the spellings, and the tab and newlines looked past after
                // the host before the character that decides a match.
                for b in 0..=255u8 {
                    set[usize::from(b)] = b.is_ascii_alphanumeric()
                        || matches!(
                            b,
                            b':' | b'/'
                                | b'\\'
                                | b'&'
                                | b'#'
                                | b';'
                                | b'%'
                                | b'.'
                                | b'\t'
                                | b'\n'
                                | b'\r'
                        );
                }
                for b in host.bytes() {
                    set[usize::from(b)] = true;
                }
                set
            },
        }))
    }

    /// Longest input span one match needs to be decided: its bytes, the byte after it.
    fn max_match_len(&self) -> usize {
        MAX_SCHEME + MAX_SLASHES * MAX_TOKEN + self.0.host.len() + MAX_SUFFIX + MAX_BOUNDARY
    }

    /// Length of the longest suffix of `work` that is the start of a match, or a whole match
    /// still waiting for the bytes after it. Everything before it can be decided now.
    fn undecided_tail(&self, work: &[u8]) -> usize {
        let window = self.max_match_len().min(work.len());
        let window = &work[work.len() - window..];
        // Nothing before the last byte that no match can contain (a space, a quote) can start
        // one that reaches the end.
        let from = window
            .iter()
            .rposition(|&b| !self.0.in_match[usize::from(b)])
            .map_or(0, |i| i + 1);
        let tail = &window[from..];
        // A match starts with a scheme or a slash spelling; try those positions, longest
        // suffix first.
        tail.iter()
            .enumerate()
            .filter(|(_, b)| matches!(b, b'h' | b'H' | b'/' | b'\\' | b'&' | b'%'))
            .find(|&(i, _)| self.could_start_match(&tail[i..]))
            .map_or(0, |(i, _)| tail.len() - i)
    }

    /// Whether `tail` (the end of the input so far) could be the start of a match in some
    /// form. Generous on purpose (it ignores what precedes `tail`): holding too much only
    /// delays bytes, holding too little would decide a match without its end.
    fn could_start_match(&self, tail: &[u8]) -> bool {
        // Only the forms whose scheme or slash can start with this byte.
        let forms: &[Form] = match tail.first() {
            Some(b'h' | b'H') => {
                let n = tail.len().min(4);
                if !tail[1..n].eq_ignore_ascii_case(&b"ttp"[..n - 1]) {
                    return false;
                }
                &FORMS
            }
            Some(b'/') => &[Form::Plain],
            Some(b'\\') => &[
                Form::DoubleEscaped,
                Form::JsonEscaped,
                Form::Unicode,
                Form::Plain,
            ],
            Some(b'&') => &[Form::CharRef],
            Some(b'%') => &[Form::Percent],
            _ => return false,
        };
        forms.iter().any(|&form| self.could_start_in(form, tail))
    }

    fn could_start_in(&self, form: Form, tail: &[u8]) -> bool {
        let mut rest = tail;
        for (scheme, _) in SCHEMES {
            let (head, after) = rest.split_at(rest.len().min(scheme.len()));
            if !head.eq_ignore_ascii_case(&scheme[..head.len()]) {
                continue;
            }
            if after.is_empty() {
                return true;
            }
            match starts_with_one_of(after, form.colons()) {
                Start::Partial => return true,
                Start::Full(colon) => {
                    rest = &after[colon..];
                    break;
                }
                Start::No => {}
            }
        }
        let mut slashes = 0;
        while slashes < MAX_SLASHES {
            match starts_with_one_of(rest, form.slashes()) {
                Start::Partial => return true,
                Start::Full(len) => {
                    rest = &rest[len..];
                    slashes += 1;
                }
                Start::No => break,
            }
        }
        if slashes == 0 {
            return false;
        }
        if rest.len() <= self.0.host.len() {
            return rest.eq_ignore_ascii_case(&self.0.host[..rest.len()]);
        }
        rest[..self.0.host.len()].eq_ignore_ascii_case(&self.0.host)
            && matches!(
                suffix(form, &rest[self.0.host.len()..], false),
                Suffix::NeedMore
            )
    }

    /// Whether `b` can be part of a match or of its undecided end. A match never spans a byte
    /// outside this set, so after such a byte a [`StreamReplacer`] holds nothing.
    pub(crate) fn in_match(&self, b: u8) -> bool {
        self.0.in_match[usize::from(b)]
    }

    /// The origin host, lowercase.
    pub(crate) fn host(&self) -> &[u8] {
        &self.0.host
    }

    /// The target's scheme and authority as a match's replacement spells them without
    /// escapes (`scheme://authority`): every byte any plain or percent-encoded replacement
    /// can hold, but for `%` and hex digits.
    pub(crate) fn target(&self) -> &[u8] {
        &self.0.plain_absolute
    }

    /// Where the host may start in `work` (see [`host_candidates`]).
    pub(crate) fn host_starts<'a>(&self, work: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
        host_candidates(work, self.0.anchor, self.0.check)
    }

    /// Rewrites a piece of a stream that a [`StreamReplacer`] would read as a whole: `before`
    /// is the byte before it, and `at_end` says the stream ends with it. Returns how much of
    /// it is decided (all of it when it ends with a byte outside [`in_match`](Self::in_match)).
    pub(crate) fn rewrite_piece(
        &self,
        work: &[u8],
        before: Option<u8>,
        at_end: bool,
        out: &mut Vec<u8>,
    ) -> usize {
        self.process(work, before, at_end, out)
    }

    /// Applies the rule to a complete value (a header, an attribute) in one go.
    pub fn rewrite_all(&self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len());
        self.process(input, None, true, &mut out);
        out
    }

    /// Rewrites the decidable prefix of `work` into `out` and returns its length. `before` is
    /// the input byte just before `work`, if any. With `at_end`, all of `work` is decidable.
    fn process(&self, work: &[u8], before: Option<u8>, at_end: bool, out: &mut Vec<u8>) -> usize {
        let mut emitted = 0;
        for at in self.host_starts(work) {
            match self.classify(work, at, before, at_end) {
                Decision::No => {}
                // The bytes after the host have not arrived: decide next time.
                Decision::NeedMore => break,
                Decision::Match(found) => {
                    if found.start < emitted {
                        // Overlaps a match already written: the earlier one wins.
                        continue;
                    }
                    out.extend_from_slice(&work[emitted..found.start]);
                    self.replace(&found, out);
                    emitted = found.end;
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

    /// Writes the replacement of `found`: the request's scheme and authority in its form.
    fn replace(&self, found: &Found, out: &mut Vec<u8>) {
        if found.form == Form::Plain {
            out.extend_from_slice(if found.absolute {
                &self.0.plain_absolute
            } else {
                &self.0.plain_relative
            });
            if found.with_port {
                out.push(b':');
                self.write_default_port(out);
            }
            return;
        }
        let slash = found.slash;
        let upper = !found.slash.ends_with(b"f");
        if found.absolute {
            out.extend_from_slice(&self.0.target_scheme);
            out.extend_from_slice(match (found.form, upper) {
                (Form::Percent, true) => b"%3A",
                (Form::Percent, false) => b"%3a",
                _ => b":",
            });
        }
        out.extend_from_slice(slash);
        out.extend_from_slice(slash);
        if found.form == Form::Percent {
            percent_encode(&self.0.target_authority, upper, out);
        } else {
            out.extend_from_slice(&self.0.target_authority);
        }
        if found.with_port {
            out.extend_from_slice(match (found.form, upper) {
                (Form::Percent, true) => b"%3A",
                (Form::Percent, false) => b"%3a",
                _ => b":",
            });
            self.write_default_port(out);
        }
    }

    /// The default port of the request's scheme, which a replacement writes out where the
    /// character after it would otherwise go on with the target's host.
    fn write_default_port(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0.target_default_port.to_string().as_bytes());
    }

    /// Decides the candidate at `at` (where the host may start): the host in any case,
    /// the slashes and scheme before it, then an optional dot and port, then a boundary.
    fn classify(&self, work: &[u8], at: usize, before: Option<u8>, at_end: bool) -> Decision {
        let rest = &work[at..];
        if rest.len() < self.0.host.len() {
            let partial = rest.eq_ignore_ascii_case(&self.0.host[..rest.len()]);
            return if partial && !at_end {
                Decision::NeedMore
            } else {
                Decision::No
            };
        }
        if self.0.host.is_empty() || !is_lowercase_of(&rest[..self.0.host.len()], &self.0.host) {
            return Decision::No;
        }
        let head = &work[..at];
        // Only the forms whose slash can end with the byte before the host, in FORMS order.
        let forms: &[Form] = match head.last() {
            Some(b'/') => &[Form::DoubleEscaped, Form::JsonEscaped, Form::Plain],
            Some(b'\\') => &[Form::Plain],
            Some(b';') => &[Form::CharRef],
            Some(b'F' | b'f') => &[Form::Unicode, Form::Percent],
            _ => return Decision::No,
        };
        let Some((start, form, absolute, default_port, slash)) = forms
            .iter()
            .find_map(|&form| self.prefix(head, before, form))
        else {
            return Decision::No;
        };
        let after = &work[at + self.0.host.len()..];
        let (len, port, host_follows) = match suffix(form, after, at_end) {
            Suffix::NeedMore => return Decision::NeedMore,
            Suffix::No => return Decision::No,
            Suffix::Found {
                len,
                port,
                host_follows,
            } => (len, port, host_follows),
        };
        let port_ok = match (port, self.0.port) {
            (None, None) => true,
            (None, Some(own)) => own == default_port,
            (Some(p), None) => p == u32::from(default_port),
            (Some(p), Some(own)) => p == u32::from(own),
        };
        if !port_ok {
            return Decision::No;
        }
        Decision::Match(Found {
            start,
            end: at + self.0.host.len() + len,
            form,
            absolute,
            slash,
            with_port: host_follows && !self.0.target_has_port,
        })
    }

    /// The match prefix in `form` that ends `head` (the input before the host): its start,
    /// whether it has a scheme, the default port it implies and the slash next to the host.
    fn prefix(
        &self,
        head: &[u8],
        before: Option<u8>,
        form: Form,
    ) -> Option<(usize, Form, bool, u16, &'static [u8])> {
        let slash = slash_ending(form, head)?;
        let mut run_start = head.len() - slash.len();
        let mut slashes = 1;
        while slashes < MAX_SLASHES {
            match slash_ending(form, &head[..run_start]) {
                Some(s) => {
                    run_start -= s.len();
                    slashes += 1;
                }
                None => break,
            }
        }
        let scheme_part = &head[..run_start];
        for (scheme, default_port) in SCHEMES {
            for colon in form.colons() {
                let len = scheme.len() + colon.len();
                if scheme_part.len() >= len
                    && has_suffix(scheme_part, colon)
                    && is_lowercase_of(
                        &scheme_part[run_start - len..run_start - colon.len()],
                        scheme,
                    )
                {
                    return Some((run_start - len, form, true, default_port, slash));
                }
            }
        }
        let preceding = scheme_part.last().copied().or(before);
        if slashes >= 2 && !preceding.is_some_and(continues_url) {
            return Some((run_start, form, false, self.0.target_default_port, slash));
        }
        None
    }
}

/// Whether `bytes` is `lower` (lowercase) in any letter case. URLs are nearly always written
/// in lowercase, and comparing bytes as they are costs a fraction of folding the case of each.
fn is_lowercase_of(bytes: &[u8], lower: &[u8]) -> bool {
    bytes.len() == lower.len() && (same_bytes(bytes, lower) || bytes.eq_ignore_ascii_case(lower))
}

/// `a == b` for slices of one length. In wasm `==` calls a `memcmp` that reads a byte at a
/// time, which cost more than the rest of a match's reading: there they are compared eight
/// bytes at a time ([`same_words`]); natively `memcmp` is faster still.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if cfg!(target_arch = "wasm32") {
        same_words(a, b)
    } else {
        a == b
    }
}

/// `a == b` for slices of one length, eight bytes at a time.
fn same_words(a: &[u8], b: &[u8]) -> bool {
    const WORD: usize = 8;
    let word = |s: &[u8], at: usize| {
        let mut w = [0; WORD];
        w.copy_from_slice(&s[at..at + WORD]);
        u64::from_ne_bytes(w)
    };
    if a.len() < WORD {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    // The last word may overlap the one before it.
    let last = a.len() - WORD;
    (0..last).step_by(WORD).all(|at| word(a, at) == word(b, at)) && word(a, last) == word(b, last)
}

/// Where the host may start in `work`, in order: every position where the host's anchor byte
/// (`anchor`: the byte, lowercase, and its offset in the host) occurs in either case, moved
/// back to the host's start, unless the host's `check` byte is in hand there and is not the
/// one due. Every match contains the host, so these positions hold every match;
/// [`UrlRule::classify`] verifies the host and reads the spelling around it. One `memchr2`
/// pass over a byte chosen to be rare finds few candidates (SIMD where the target has it,
/// word-at-a-time without it, as on wasm), where a pass over the slashes would stop at every
/// `/` of the markup; the check drops most of the rest for a byte or two, where a rare byte
/// is common on a page (the `x` of a host's `example` on a Next.js page, full of `_next`).
fn host_candidates(
    work: &[u8],
    (anchor, offset): (u8, usize),
    (check, check_offset): (u8, usize),
) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr2_iter(anchor, anchor.to_ascii_uppercase(), work).filter_map(move |at| {
        let start = at.checked_sub(offset)?;
        match work.get(start + check_offset) {
            Some(b) if !b.eq_ignore_ascii_case(&check) => None,
            _ => Some(start),
        }
    })
}

/// The bytes of `host` (lowercase) to search for and to check, with their offsets: the two
/// `memchr` deems rarest in text, so that few positions need verifying (a one-byte host's
/// only byte for both). An empty host has none: its candidates, wherever a NUL is, are
/// rejected by `classify`.
fn anchors(host: &[u8]) -> ((u8, usize), (u8, usize)) {
    let at = |i: usize| (host.get(i).copied().unwrap_or_default(), i);
    match memchr::arch::all::packedpair::Pair::new(host) {
        Some(pair) => (
            at(usize::from(pair.index1())),
            at(usize::from(pair.index2())),
        ),
        None => (at(0), at(0)),
    }
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

/// Applies a [`UrlRule`] to a byte stream split into arbitrary chunks.
///
/// Output is byte-identical for every split of the input. At most `41 + len(host)` bytes are
/// held back between writes, and only when the end of a write could start a match: just
/// enough to decide a match that straddles a boundary.
#[derive(Debug)]
pub struct StreamReplacer {
    rule: UrlRule,
    /// Input received but not yet decided.
    carry: Vec<u8>,
    /// The last input byte before `carry`: whether slashes start a URL depends on it.
    before: Option<u8>,
}

impl StreamReplacer {
    /// A replacer with nothing held.
    pub fn new(rule: UrlRule) -> Self {
        StreamReplacer {
            carry: Vec::with_capacity(2 * rule.max_match_len()),
            rule,
            before: None,
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
            let kept = self.rule.process(&self.carry, self.before, false, out);
            if kept > 0 {
                self.before = Some(self.carry[kept - 1]);
            }
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
        let kept = self.rule.process(input, self.before, false, out);
        if kept > 0 {
            self.before = Some(input[kept - 1]);
        }
        self.carry.extend_from_slice(&input[kept..]);
    }

    /// The rule this replacer applies.
    pub fn rule(&self) -> &UrlRule {
        &self.rule
    }

    /// The last input byte decided, which the next match's start may depend on.
    pub(crate) fn before(&self) -> Option<u8> {
        self.before
    }

    /// Takes up again after a caller applied the rule to the next bytes itself (with
    /// [`UrlRule::rewrite_piece`]) up to and including `last`, a byte after which nothing is
    /// held. Only while nothing is held.
    pub(crate) fn passed(&mut self, last: Option<u8>) {
        debug_assert!(self.carry.is_empty());
        self.before = last;
    }

    /// Bytes held back for a match that may straddle the next write.
    pub fn held(&self) -> usize {
        self.carry.len()
    }

    /// Emits whatever is held as if the input ended here. Used at the end of the stream and
    /// before bytes that must bypass the rule (an RSC payload, a raw bail-out flush).
    pub fn flush(&mut self, out: &mut Vec<u8>) {
        self.rule.process(&self.carry, self.before, true, out);
        self.forget_carry();
    }

    /// Emits whatever is held as it came, unrewritten: for when the bytes that would decide it
    /// bypass the rule, so deciding it as if the input ended ([`flush`](Self::flush)) could
    /// rewrite a host that those bytes continue (`//origin.example.com` then `.evil.test`).
    pub fn pass_held(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.carry);
        self.forget_carry();
    }

    fn forget_carry(&mut self) {
        if let Some(&last) = self.carry.last() {
            self.before = Some(last);
        }
        self.carry.clear();
    }

    /// Ends the stream.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        self.flush(out);
    }
}
