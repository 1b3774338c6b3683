//! Could a shared cache have stored this answer for any reader? The one rule behind the page
//! cache ([`storable`]), the learned early hints ([`teaches_hints`]) and the platform's pass
//! override on the origin fetch ([`origin_fetch_passes`]).
//!
//! Why: an answer stored or learned once is given to every later reader. A logged-in reader's
//! page (or the hints it carried, such as preloads of `/u/<name>/…`) must never reach another
//! reader. Caching proxies by default keep a request with credentials out of the shared cache;
//! this rule does the same, with the service's own `ts-ec` cookie counted as no credential:
//!
//! * **Request side** ([`Ask`]): only `GET` (`HEAD` for the origin fetch), no `Authorization`
//!   (`policy::request_allows`). A request carrying any cookie other than `ts-ec` and the
//!   consent cookies is a **reader with cookies** ([`Reader::WithCookies`], from [`reader`],
//!   which parses every `Cookie` line: `ts-ec2` or `xts-ec` are reader cookies). Consent
//!   cookies alone ([`Reader::ConsentOnly`]) count as anonymous: a fill does not send them to
//!   the origin, so the stored page cannot depend on them.
//! * **Response side** ([`audience`]): no per-reader marker from the origin (`Set-Cookie`,
//!   `Vary: Cookie`, `Vary: *`, `Cache-Control: private`, `no-store`). For a reader with
//!   cookies the origin must also say explicitly that the answer is shared: `public` or
//!   `s-maxage` in `Cache-Control` (RFC 9111 section 3.5, as for `Authorization`).
//!   `Surrogate-Control` alone does **not** count: origins commonly send it on every page,
//!   relying on the edge to keep cookie requests out, so it says nothing about whether a
//!   logged-in page is everyone's.
//!
//! An entry records whom it may serve ([`Audience`], in its header block, `super::stored`):
//! an entry filled from an explicitly shared answer may serve a reader with cookies; any
//! other serves anonymous readers only, and a reader with cookies passes (`PASS(cookie)`).

use std::time::Duration;

use super::policy::{self, Freshness, PassWhy};
use crate::consent::CONSENT_COOKIES;
use crate::publisher::identity::COOKIE_NAME;

/// Which cookies the request carries, as far as a shared cache goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// No cookie, or only `ts-ec` (the edge ID, never part of a page and never sent to the
    /// origin): the same as any reader.
    Anonymous,
    /// Consent cookies ([`CONSENT_COOKIES`]), with or without `ts-ec`, and nothing else: what
    /// a CMP stores in nearly every EU reader's browser, no session. The request reads and
    /// fills shared entries as an anonymous reader, and its fill goes to the origin without
    /// those cookies (the adapter's `for_fill`), so the stored page cannot depend on them.
    /// A request that passes sends them, with the platform's pass override
    /// ([`origin_fetch_passes`]).
    ConsentOnly,
    /// At least one other cookie: the answer may be this reader's own (a session).
    WithCookies,
}

/// Whom a stored entry may be served to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Anonymous readers only: the answer was shared by default, not explicitly.
    Anonymous,
    /// Every reader, with cookies or without: the origin said `public` or `s-maxage`.
    Everyone,
}

impl Audience {
    /// Whether an entry for this audience may answer `reader`.
    pub fn serves(self, reader: Reader) -> bool {
        self == Audience::Everyone || reader != Reader::WithCookies
    }
}

/// What the rule needs to know of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask<'a> {
    /// The request method, as received (case-sensitive, as HTTP methods are).
    pub method: &'a str,
    /// Whether the request has an `Authorization` header.
    pub authorization: bool,
    /// The reader's cookies ([`reader`]).
    pub reader: Reader,
}

/// Which cookies the `Cookie` lines of a request (each `a=1; b=2`) carry: any cookie but
/// `ts-ec` and the consent cookies makes a [`Reader::WithCookies`]. Cookie names are compared
/// exactly (they are case-sensitive); a piece without `=` is a cookie with an empty name
/// (RFC 6265bis), so a reader cookie; empty pieces are ignored.
pub fn reader<'v>(cookie_lines: impl IntoIterator<Item = &'v [u8]>) -> Reader {
    let mut consent = false;
    for line in cookie_lines {
        for piece in line.split(|&b| b == b';') {
            let piece = piece.trim_ascii();
            if piece.is_empty() {
                continue;
            }
            let name = match piece.iter().position(|&b| b == b'=') {
                Some(eq) => piece[..eq].trim_ascii(),
                None => &[][..],
            };
            if CONSENT_COOKIES.iter().any(|c| c.as_bytes() == name) {
                consent = true;
            } else if name != COOKIE_NAME.as_bytes() {
                return Reader::WithCookies;
            }
        }
    }
    if consent {
        Reader::ConsentOnly
    } else {
        Reader::Anonymous
    }
}

/// Whether the request may use the shared cache at all; `Err` with the reason when it must
/// go to the origin. A reader with cookies may (it can read and fill entries for
/// [`Audience::Everyone`]); the answer decides the rest ([`storable`]).
pub fn request_allows(ask: Ask<'_>) -> Result<(), PassWhy> {
    policy::request_allows(ask.method, ask.authorization)
}

/// Whether the origin fetch must bypass the platform's HTTP cache in front of the origin
/// (Fastly's `Request::set_pass(true)`): for every request whose answer may be the reader's
/// own (`Authorization`, reader cookies, consent cookies: a fill sends none of those) or that
/// a cache does not answer (methods other than `GET` and `HEAD`). Otherwise that cache would keep a logged-in reader's answer and hand it
/// to the next reader's fetch, whatever this service decides.
pub fn origin_fetch_passes(ask: Ask<'_>) -> bool {
    !matches!(ask.method, "GET" | "HEAD") || ask.authorization || ask.reader != Reader::Anonymous
}

/// Response side of the rule: whom the origin's answer may be shared with (names in any
/// case), or why it is one reader's. Every header is read before deciding, so the reason
/// does not depend on their order: `set-cookie`, then `vary-cookie`, `vary-star`, `private`,
/// `no-store`, `unreadable` (a `Cache-Control`, `Vary` or `Surrogate-Control` that is not
/// text), and for a reader with cookies without `public` or `s-maxage`, `cookie`.
pub fn audience<'h>(
    reader: Reader,
    headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
) -> Result<Audience, PassWhy> {
    let mut found = Found::default();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if name == "set-cookie" {
            found.set_cookie = true;
            continue;
        }
        if !matches!(
            name.as_str(),
            "cache-control" | "surrogate-control" | "vary"
        ) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(value) else {
            found.unreadable = true;
            continue;
        };
        for item in text.split(',') {
            let word = item
                .split('=')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            match (name.as_str(), word.as_str()) {
                ("vary", "cookie") => found.vary_cookie = true,
                ("vary", "*") => found.vary_star = true,
                ("cache-control", "private") => found.private = true,
                ("cache-control", "public") => found.explicit = true,
                ("cache-control", "s-maxage") => found.explicit = true,
                ("cache-control" | "surrogate-control", "no-store") => found.no_store = true,
                _ => {}
            }
        }
    }
    found.verdict(reader)
}

/// What [`audience`] saw.
#[derive(Default)]
struct Found {
    set_cookie: bool,
    vary_cookie: bool,
    vary_star: bool,
    private: bool,
    no_store: bool,
    unreadable: bool,
    explicit: bool,
}

impl Found {
    fn verdict(&self, reader: Reader) -> Result<Audience, PassWhy> {
        let per_reader = [
            (self.set_cookie, PassWhy::SetCookie),
            (self.vary_cookie, PassWhy::VaryCookie),
            (self.vary_star, PassWhy::VaryStar),
            (self.private, PassWhy::Private),
            (self.no_store, PassWhy::NoStore),
            (self.unreadable, PassWhy::Unreadable),
        ];
        if let Some((_, why)) = per_reader.into_iter().find(|(seen, _)| *seen) {
            return Err(why);
        }
        match (self.explicit, reader) {
            (true, _) => Ok(Audience::Everyone),
            (false, Reader::Anonymous | Reader::ConsentOnly) => Ok(Audience::Anonymous),
            (false, Reader::WithCookies) => Err(PassWhy::Cookie),
        }
    }
}

/// Whether the page cache may store the origin's answer to a request from `reader`, for how
/// long, and for whom: `policy::response_allows` (status, lifetime, the per-reader markers)
/// and then [`audience`].
pub fn storable<'h>(
    reader: Reader,
    status: u16,
    headers: &[(&'h str, &'h [u8])],
) -> Result<(Freshness, Audience), PassWhy> {
    let freshness = policy::response_allows(status, headers.iter().copied())?;
    let audience = audience(reader, headers.iter().copied())?;
    Ok((freshness, audience))
}

/// How long a pass is remembered for its key after a fill by `reader` gave up: never after a
/// reader with cookies (its answer says nothing about anonymous readers', and remembering it
/// would let one logged-in reader switch the page's cache off for everyone), otherwise
/// [`PassWhy::remembered_for`].
pub fn remembered_for(why: PassWhy, reader: Reader) -> Option<Duration> {
    match reader {
        // A consent-only reader's fill asked as an anonymous reader does.
        Reader::Anonymous | Reader::ConsentOnly => why.remembered_for(),
        Reader::WithCookies => None,
    }
}

/// Whether a page's hints may be learned from this answer (replayed to every later reader in
/// a `103`): the request may use the shared cache, the answer is a `200`, a shared cache
/// could have stored it for any reader ([`audience`]), and it varies by nothing but what the
/// hints' key already tells apart ([`HINTS_MAY_VARY_BY`]). Learned hints are stored under the
/// page's key with no variant, so an answer that varies by `X-TS-EC`, the reader's address or
/// anything else per reader would hand one reader's preloads to all. Unlike the page cache, no
/// explicit lifetime is needed: a shared cache may store a `200` without one (RFC 9111
/// section 4.2.2, heuristic freshness), and a page without a lifetime is the same for every
/// reader.
pub fn teaches_hints<'h>(
    ask: Ask<'_>,
    status: u16,
    headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
) -> bool {
    let headers: Vec<(&str, &[u8])> = headers.into_iter().collect();
    // A consent-only reader's page may have been asked with its consent cookies (a request
    // that passes sends them): its hints could follow that reader's consent.
    let reader = match ask.reader {
        Reader::ConsentOnly => Reader::WithCookies,
        other => other,
    };
    request_allows(ask).is_ok()
        && status == 200
        && varies_only_by_the_key(&headers)
        && audience(reader, headers.iter().copied()).is_ok()
}

/// The request headers an answer may vary by and still teach hints: the ones the page key
/// covers (`Accept-Encoding`, and `Accept` and `Sec-Fetch-Dest`, which the navigation rule
/// reads).
pub const HINTS_MAY_VARY_BY: [&str; 3] = ["accept-encoding", "accept", "sec-fetch-dest"];

/// Whether every name in every `Vary` line is one of [`HINTS_MAY_VARY_BY`] (a `Vary` that is
/// not text varies by something unknown).
fn varies_only_by_the_key(headers: &[(&str, &[u8])]) -> bool {
    headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("vary"))
        .all(|(_, value)| {
            std::str::from_utf8(value).is_ok_and(|text| {
                text.split(',')
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .all(|name| {
                        HINTS_MAY_VARY_BY
                            .iter()
                            .any(|ok| name.eq_ignore_ascii_case(ok))
                    })
            })
        })
}

#[cfg(test)]
mod tests;
