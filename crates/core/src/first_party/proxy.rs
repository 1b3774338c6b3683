//! `GET /first-party/proxy`: what the route decides, given what the partner sent. The adapter
//! (`src/first_party_proxy.rs`) verifies the signed URL, sends each hop and streams the body;
//! every decision about what crosses between the client and the partner is here, testable
//! without the platform:
//!
//! * [`partner_request_headers`]: the few client headers a partner gets (no cookies, no
//!   credentials, no forwarding claims);
//! * [`next_hop`]: whether a partner response is a redirect to follow, and where, re-checked
//!   by the SSRF policy at every hop and bounded by [`MAX_REDIRECTS`];
//! * [`client_response_headers`]: the partner's headers the client gets, from a short list
//!   of what describes the body and its caching (no cookies, no CORS, nothing that makes the
//!   browser go, fetch or report anywhere, nothing that acts on the publisher's whole
//!   origin), bounded;
//! * [`allow_cors`]: `Access-Control-Allow-Origin: *` on what it relays, which a sandboxed
//!   creative fetches in CORS mode from an opaque origin (fonts, `fetch()`);
//! * [`confine`]: what every proxied response gets last: `nosniff` and a sandboxing
//!   `Content-Security-Policy`, so partner content never runs as the publisher;
//! * [`body_plan`]: whether the body is rewritten by the creative stage or streamed unchanged;
//! * [`signer`]: the creative stage's signer, making `/first-party/proxy` URLs.
//!
//! See `docs/first-party.md`, "The proxy route".

use std::fmt;

use http::{HeaderName, HeaderValue};
use url::Url;

use super::creative::{Creative, Signer, UrlUse};
use super::target::{Refusal, Target, TargetPolicy};
use super::token::{UrlKey, CLICK_PATH, PROXY_PATH};
use crate::content::Codec;
use crate::forward::{connection_listed, supported_accept_encoding};
use crate::response::weaken_etag;

/// Redirects followed for one proxied request: the signed target and then at most this many
/// `Location`s, so at most `MAX_REDIRECTS + 1` requests reach partners. A redirect after that
/// is refused ([`HopError::TooMany`]).
pub const MAX_REDIRECTS: usize = 4;

/// Most header lines a partner response may carry; more and the response is refused (`502`).
pub const MAX_RESPONSE_HEADERS: usize = 100;

/// Most bytes (names and values) a partner response's headers may carry; more and the
/// response is refused (`502`). Headers are held in the guest, so they are bounded like bodies.
pub const MAX_RESPONSE_HEADER_BYTES: usize = 32 * 1024;

/// Client request headers a partner gets, besides the `Accept-Encoding` the proxy decides:
/// what a browser's fetch of the resource needs to be answered in the right form. Everything
/// else (cookies, `Authorization`, `Referer`, forwarding headers, client hints) stays with
/// the publisher.
const PASSED_REQUEST: [&str; 3] = ["accept", "accept-language", "user-agent"];

/// Partner response headers the client may get: what describes the body, its caching and
/// its validators, and two that only restrict how it is embedded. Everything else is dropped,
/// because the client sees it on the publisher's host and a browser acts on many headers:
/// some change state for the whole origin (`Set-Cookie`, `Clear-Site-Data`,
/// `Strict-Transport-Security`, `Alt-Svc`, `NEL`, `Accept-CH`, `Origin-Trial`, CORS), some
/// make it go or fetch somewhere the proxy would refuse (`Refresh`, `Link` preloads,
/// `Location` on a response the proxy did not follow, `Report-To`, `Reporting-Endpoints`,
/// `SourceMap`, `Speculation-Rules`), some ask the reader for something
/// (`WWW-Authenticate`, `Content-Disposition`), and the partner's own
/// `Content-Security-Policy` is replaced by [`SANDBOX_POLICY`]. A list of what may pass
/// stays safe when browsers learn new headers; a list of what may not would not.
pub const PASSED_RESPONSE: [&str; 16] = [
    "content-type",
    "content-length",
    "content-encoding",
    "content-language",
    "content-range",
    "accept-ranges",
    "cache-control",
    "expires",
    "pragma",
    "age",
    "date",
    "last-modified",
    "etag",
    "vary",
    "x-frame-options",
    "cross-origin-resource-policy",
];

/// The `Content-Security-Policy` every proxied response carries: partner content runs in a
/// sandbox, an opaque origin, never as the publisher. A creative may run its own script,
/// submit its forms, open its landing page in a new window (which is not sandboxed: it is the
/// partner's site) and send the reader's top window there on a click; it may not read or
/// write the publisher's cookies or storage, nor call the publisher's routes with the
/// reader's credentials, nor script the publisher's other pages. `allow-same-origin` is
/// never granted: with `allow-scripts` it would undo the sandbox. Browsers apply a CSP only
/// to documents (and workers, which ignore `sandbox`), so the header is harmless on images,
/// sheets and scripts, and holds for any type a browser might render as a page (HTML, SVG,
/// XML, a missing or wrong `Content-Type`).
pub const SANDBOX_POLICY: &str = "sandbox allow-scripts allow-forms allow-popups \
allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation";

/// Response headers describing the exact bytes, dropped when the body is rewritten.
const BODY_BOUND: [&str; 1] = ["content-length"];

/// The headers sent to the partner with each hop: `Accept`, `Accept-Language` and
/// `User-Agent` from the client, one
/// `Accept-Encoding` limited to the codings the creative stage decodes (so whatever comes
/// back can be rewritten, and the client can read it since it offered them), and the edge ID
/// in `X-TS-EC` when the caller gives one. `Host` and the signature are the adapter's.
pub fn partner_request_headers<'h>(
    client_headers: impl IntoIterator<Item = (&'h HeaderName, &'h HeaderValue)>,
    edge_id: Option<&str>,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    let mut accepted: Vec<&HeaderValue> = Vec::new();
    for (name, value) in client_headers {
        let n = name.as_str();
        if n == "accept-encoding" {
            accepted.push(value);
        } else if PASSED_REQUEST.contains(&n) {
            out.push((name.clone(), value.clone()));
        }
    }
    let encoding =
        supported_accept_encoding(&accepted).unwrap_or(HeaderValue::from_static("identity"));
    out.push((HeaderName::from_static("accept-encoding"), encoding));
    if let Some(value) = edge_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        out.push((
            HeaderName::from_static(crate::publisher::identity::ORIGIN_HEADER),
            value,
        ));
    }
    out
}

/// Whether a partner request with these headers ([`partner_request_headers`]) must bypass
/// the platform's HTTP cache in front of the fetch: when it carries the reader's edge ID. A
/// partner may answer such a request for that reader alone without saying so (`max-age`
/// without `Vary: X-TS-EC`), and a shared cache keyed on the URL would hand that answer to the
/// next reader of the creative.
pub fn partner_fetch_passes(headers: &[(HeaderName, HeaderValue)]) -> bool {
    headers
        .iter()
        .any(|(name, _)| name.as_str() == crate::publisher::identity::ORIGIN_HEADER)
}

/// What to do with a partner response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hop {
    /// Not a redirect: this response goes to the client.
    Final,
    /// A redirect to an allowed target: fetch it next.
    Follow(Target),
}

/// Why a redirect is not followed. The client gets `502` whatever the reason (the signed URL
/// was good; the partner answered with something the service will not relay).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HopError {
    /// A redirect status without a `Location`, or with one that is not text.
    NoLocation(u16),
    /// A `Location` that does not resolve against the current URL.
    BadLocation(String),
    /// The policy refuses where it points.
    Refused(Refusal),
    /// More than [`MAX_REDIRECTS`] redirects.
    TooMany,
}

impl fmt::Display for HopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HopError::NoLocation(status) => write!(f, "redirect {status} without a Location"),
            HopError::BadLocation(e) => write!(f, "redirect Location does not resolve: {e}"),
            HopError::Refused(e) => write!(f, "redirect refused: {e}"),
            HopError::TooMany => write!(f, "more than {MAX_REDIRECTS} redirects"),
        }
    }
}

impl std::error::Error for HopError {}

/// Whether `status` is a redirect the proxy follows (the ones with a `Location` to a single
/// new URL: 301, 302, 303, 307, 308).
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The next step after a partner answered `status` (with `location`, if any) for `current`,
/// when `followed` redirects were already followed. A redirect's `Location` is resolved
/// against `current` as a browser resolves it, its fragment dropped (never sent), and checked
/// by the same policy as the signed target.
///
/// # Errors
/// [`HopError`], for the log.
pub fn next_hop(
    status: u16,
    location: Option<&str>,
    current: &str,
    followed: usize,
    policy: &TargetPolicy,
) -> Result<Hop, HopError> {
    if !is_redirect(status) {
        return Ok(Hop::Final);
    }
    let location = location.ok_or(HopError::NoLocation(status))?;
    if followed >= MAX_REDIRECTS {
        return Err(HopError::TooMany);
    }
    let base = Url::parse(current).map_err(|e| HopError::BadLocation(e.to_string()))?;
    let mut next = base
        .join(location)
        .map_err(|e| HopError::BadLocation(e.to_string()))?;
    next.set_fragment(None);
    policy
        .check(next.as_str())
        .map(Hop::Follow)
        .map_err(HopError::Refused)
}

/// Why a partner's headers are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderError {
    /// More than [`MAX_RESPONSE_HEADERS`] lines.
    TooMany(usize),
    /// More than [`MAX_RESPONSE_HEADER_BYTES`] bytes.
    TooLarge(usize),
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::TooMany(n) => write!(
                f,
                "partner sent {n} header lines (at most {MAX_RESPONSE_HEADERS})"
            ),
            HeaderError::TooLarge(n) => write!(
                f,
                "partner sent {n} bytes of headers (at most {MAX_RESPONSE_HEADER_BYTES})"
            ),
        }
    }
}

impl std::error::Error for HeaderError {}

/// The partner's response headers as the client gets them: only those in
/// [`PASSED_RESPONSE`], and not those a `Connection` header names (hop-by-hop); when the body
/// is `rewritten`, without `Content-Length` and with a strong `ETag` made weak (the bytes
/// differ; the meaning does not). The adapter then adds the service's own headers and, last,
/// [`confine`].
///
/// # Errors
/// [`HeaderError`] when the partner sent more than the bounds allow.
pub fn client_response_headers(
    headers: Vec<(HeaderName, HeaderValue)>,
    rewritten: bool,
) -> Result<Vec<(HeaderName, HeaderValue)>, HeaderError> {
    if headers.len() > MAX_RESPONSE_HEADERS {
        return Err(HeaderError::TooMany(headers.len()));
    }
    let bytes: usize = headers
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len())
        .sum();
    if bytes > MAX_RESPONSE_HEADER_BYTES {
        return Err(HeaderError::TooLarge(bytes));
    }
    let connection_listed = connection_listed(headers.iter().map(|(n, v)| (n, v)));
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        let dropped = !PASSED_RESPONSE.contains(&n)
            || connection_listed.iter().any(|c| c == n)
            || (rewritten && BODY_BOUND.contains(&n));
        if dropped {
            continue;
        }
        if rewritten && n == "etag" {
            // The bytes differ from the partner's: only a weak validator still holds.
            if let Some(weak) = weaken_etag(&value) {
                out.push((name, weak));
            }
            continue;
        }
        out.push((name, value));
    }
    Ok(out)
}

/// Confines a proxied response, whatever its type or status: `X-Content-Type-Options:
/// nosniff` (the browser uses the `Content-Type` as sent, never guesses a document out of an
/// image or text) replacing any other, and [`SANDBOX_POLICY`] added as its own
/// `Content-Security-Policy` line. Call it on the final header list, after any configured
/// headers: another policy there (the publisher's `response_headers`) is kept, and since a
/// browser enforces every policy it gets, the sandbox holds.
pub fn confine(headers: &mut Vec<(HeaderName, HeaderValue)>) {
    headers.retain(|(n, _)| n != "x-content-type-options");
    headers.push((
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    ));
    headers.push((
        HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static(SANDBOX_POLICY),
    ));
}

/// Lets a sandboxed creative read what the proxy relays: `Access-Control-Allow-Origin: *` on
/// every proxied response (replacing one from `[response_headers]`, and dropping any
/// `Access-Control-Allow-Credentials`). A proxied creative runs in an opaque origin (the
/// sandbox has no `allow-same-origin`), so every request it makes in CORS mode is
/// cross-origin to the proxy even though the URL is first-party: a font, a `fetch()` of a
/// config or a VAST document, an image or script with `crossorigin`. Without this header the
/// browser discards each of them, and the creative that rendered when served directly breaks.
///
/// `*` admits no credentials, which is what keeps it safe against another site's page: the
/// browser sends no cookie with a cross-origin CORS request unless the page asks for
/// credentials, and then refuses to let it read a response that says `*`. So whatever a
/// script can read is what an anonymous request gets: the proxy forwards no edge ID without
/// the reader's cookie ([`partner_request_headers`]), and the partner answers what anyone
/// could fetch from it directly. The partner's own CORS headers never reach the client
/// ([`client_response_headers`]). Call it on the final header list, before [`confine`].
pub fn allow_cors(headers: &mut Vec<(HeaderName, HeaderValue)>) {
    headers.retain(|(n, _)| {
        n != "access-control-allow-origin" && n != "access-control-allow-credentials"
    });
    headers.push((
        HeaderName::from_static("access-control-allow-origin"),
        HeaderValue::from_static("*"),
    ));
}

/// What happens to a final partner response's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyBody {
    /// Decoded from `codec`, rewritten as `creative`, re-encoded: an HTML or CSS creative.
    Rewrite {
        /// The body's `Content-Encoding`.
        codec: Codec,
        /// HTML (with its charset) or CSS.
        creative: Creative,
    },
    /// Streamed to the client byte for byte, and why.
    PassThrough(PassWhy),
}

/// Why a body streams unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassWhy {
    /// Not a `200`: error pages, partial content and bodiless statuses are relayed as sent.
    Status,
    /// Not an HTML or CSS creative in a charset the stage rewrites (images, scripts, …).
    NotCreative,
    /// A `Content-Encoding` the pipeline does not decode.
    Encoding,
}

impl ProxyBody {
    /// Whether the body the client gets differs from the partner's bytes.
    pub fn rewritten(&self) -> bool {
        matches!(self, ProxyBody::Rewrite { .. })
    }

    /// `rewrite:html+gzip`, `pass:NotCreative`: the plan as the access line shows it.
    pub fn label(&self) -> String {
        match self {
            ProxyBody::Rewrite { codec, creative } => {
                let stage = match creative {
                    Creative::Html(_) => "html",
                    Creative::Css => "css",
                    Creative::Script => "script",
                };
                format!(
                    "first-party-proxy:rewrite:{stage}+{}",
                    format!("{codec:?}").to_ascii_lowercase()
                )
            }
            ProxyBody::PassThrough(why) => format!("first-party-proxy:pass:{why:?}"),
        }
    }
}

/// The plan for a final response of `status` with these `Content-Type` and
/// `Content-Encoding` values (several lines joined with `, `, as the adapter reads them).
pub fn body_plan(
    status: u16,
    content_type: Option<&str>,
    content_encoding: Option<&str>,
) -> ProxyBody {
    if status != 200 {
        return ProxyBody::PassThrough(PassWhy::Status);
    }
    let Some(creative) = Creative::for_content_type(content_type) else {
        return ProxyBody::PassThrough(PassWhy::NotCreative);
    };
    match Codec::from_header(content_encoding) {
        Some(codec) => ProxyBody::Rewrite { codec, creative },
        None => ProxyBody::PassThrough(PassWhy::Encoding),
    }
}

/// The creative stage's signer: an absolute URL the policy allows becomes its
/// `/first-party/proxy` URL (a URL the creative loads) or its `/first-party/click` URL (a link
/// the reader follows), good until `expires`, signed over the normalised form that the proxy
/// and the click route verify; any other URL is left as written (`None`).
pub fn signer(key: UrlKey, policy: TargetPolicy, expires: u64) -> Signer {
    Box::new(move |url: &str, use_: UrlUse| {
        let target = policy.check(url).ok()?;
        let path = match use_ {
            UrlUse::Load => PROXY_PATH,
            UrlUse::Follow => CLICK_PATH,
        };
        Some(key.signed_url(path, &target.url, expires))
    })
}

#[cfg(test)]
mod tests;
