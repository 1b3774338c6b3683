//! Learned `103 Early Hints`, adapter side: the cache read and the `103` before the origin is
//! asked, and the cache write after the page finished. What a hint is, the bounds and the
//! stored form are the core's (`trusted_server_core::hints`).
//!
//! Only `GET` page navigations, with `delivery.early_hints` on. The hints are stored in the
//! core cache under a key of their own derived from the page's cache key, with the page's
//! surrogate key (a purge of the page forgets them too), and rewritten only when they changed.
//! A cache failure is logged at `warn`; the page is served as if there were no hints.
//!
//! Hints are replayed to every reader, so they are learned only from an answer any reader
//! could have got (`trusted_server_core::cache::shared::teaches_hints`): never from a request
//! with `Authorization` or the reader's own cookies (unless the origin said `public` or
//! `s-maxage`), nor from a `private`, `no-store`, `Set-Cookie` or `Vary: Cookie` answer
//! ([`from_shared_answer`]).

use std::time::Duration;

use fastly::cache::core::{self as cache_core, CacheKey};
use fastly::{Request, Response};
use trusted_server_core::cache::shared::{self, Reader};
use trusted_server_core::cache::surrogate;
use trusted_server_core::hints::{self, Hints};
use trusted_server_core::Settings;

use crate::phases::client::Client;

/// How long learned hints are kept. A day: they are re-learned on each miss that finds them
/// changed, and an outdated hint costs one wasted fetch, never a wrong page.
const KEEP: Duration = Duration::from_secs(24 * 60 * 60);

/// A navigation whose hints are being learned.
pub struct Learning {
    key: [u8; 32],
    stored: Option<Hints>,
    authority: String,
    path: String,
    /// The request's side of the shared rule (a `GET`, so only these two vary).
    authorization: bool,
    reader: Reader,
}

/// Before the origin (and the page cache) is asked: for a `GET` navigation, sends the hints
/// stored for the page whose cache key is `page_key` (`phases::cache::page_key`) as a
/// `103 Early Hints`, and starts learning them. `None` when the request gets no hints.
pub fn before_origin(
    request: &Request,
    client: &Client,
    page_key: &[u8; 32],
    settings: &Settings,
) -> Option<Learning> {
    if !settings.delivery.early_hints || request.get_method_str() != "GET" || !client.navigation {
        return None;
    }
    let key = hints::hints_key(page_key);
    let stored = match cache_core::lookup(CacheKey::copy_from_slice(&key)).execute() {
        Ok(Some(found)) => {
            let decoded = Hints::decode(&found.user_metadata());
            if decoded.is_none() {
                log::warn!("hints: stored hints unreadable, ignored");
            }
            decoded
        }
        Ok(None) => None,
        Err(e) => {
            log::warn!("hints: lookup failed: {e}");
            None
        }
    };
    // RFC 9110, section 15.2: no 1xx to an HTTP/1.0 client (it would read the 103 as the
    // answer); it still gets the page, and the page still teaches.
    let interim_allowed = request.get_version() >= fastly::http::Version::HTTP_11;
    if let Some(found) = (stored.as_ref())
        .filter(|h| !h.is_empty())
        .filter(|_| interim_allowed)
    {
        let mut interim = Response::from_status(103);
        for value in found.values() {
            interim.append_header("link", value.as_str());
        }
        log::info!("hints: 103 sent with {} links", found.values().len());
        interim.send_to_client();
    }
    let ask = crate::phases::origin::ask(request);
    Some(Learning {
        key,
        stored,
        authority: client.authority.clone(),
        path: request.get_path().to_owned(),
        authorization: ask.authorization,
        reader: ask.reader,
    })
}

/// Once the origin answered, before the response phase changes its headers: keeps learning
/// only when a shared cache could have stored the answer for any reader
/// (`shared::teaches_hints`); otherwise stops (nothing is learned from the page, and its body
/// is not scanned for hints).
pub fn from_shared_answer(learning: Option<Learning>, origin: &Response) -> Option<Learning> {
    let learning = learning?;
    let ask = shared::Ask {
        method: "GET",
        authorization: learning.authorization,
        reader: learning.reader,
    };
    let headers = origin
        .get_headers()
        .map(|(n, v)| (n.as_str(), v.as_bytes()));
    if shared::teaches_hints(ask, origin.get_status().as_u16(), headers) {
        return Some(learning);
    }
    log::info!("hints: not learned from this answer: it may be this reader's own");
    None
}

/// The `Link` header values of the page's response (already rewritten first-party by the
/// response phase) that are text; `None` unless the page is a `200`, the only answer worth
/// hinting for.
pub fn from_response(response: &Response) -> Option<Vec<String>> {
    if response.get_status().as_u16() != 200 {
        return None;
    }
    // A value that is not visible ASCII is skipped, not read (`get_header_all_str` would
    // panic on one that is not UTF-8): a hint must be visible ASCII anyway.
    Some(
        response
            .get_header_all("link")
            .filter_map(|value| value.to_str().ok())
            .flat_map(hints::from_link_header)
            .collect(),
    )
}

/// After the page was sent whole: stores the hints it carried (its `Link` headers
/// ([`from_response`]) first, then its head's, as the body phase found them), bounded, when
/// they differ from the stored ones.
pub fn after_page(learning: Learning, headers: Option<Vec<String>>, head: Vec<String>) {
    let Some(headers) = headers else {
        return;
    };
    let mut learned = Hints::new();
    for value in headers.into_iter().chain(head) {
        learned.push(value);
    }
    if learning.stored.as_ref() == Some(&learned)
        || (learning.stored.is_none() && learned.is_empty())
    {
        return;
    }
    let page = surrogate::page_key(&learning.authority, &learning.path);
    let written = cache_core::insert(CacheKey::copy_from_slice(&learning.key), KEEP)
        .surrogate_keys([page.as_str(), surrogate::ALL_REWRITTEN])
        .user_metadata(CacheKey::from(learned.encode()))
        .known_length(0)
        .execute()
        .map_err(|e| e.to_string())
        .and_then(|body| body.finish().map_err(|e| e.to_string()));
    match written {
        Ok(()) => log::info!("hints: learned {} links", learned.values().len()),
        Err(e) => log::warn!("hints: cannot store: {e}"),
    }
}
