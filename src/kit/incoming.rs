//! The client's request and the origin's response, read from the platform once, into buffers
//! sized for them.
//!
//! Why: `Request::from_client` stays attached to its host-side handle and reads lazily. Every
//! listing of its headers asks the host for their names again, and each header's values are
//! read into a fresh 4 KiB buffer that the value then keeps alive (the fastly crate's initial
//! value buffer): on a request with eighteen headers, reading them all took about 50 µs and
//! grew the instance's memory by two wasm pages (128 KiB of fresh memory, each 4 KiB page of
//! it a page fault on first touch), and the proxy lists them five times on its way to the
//! origin. Read here once, the request is a detached `Request`: one listing of the names, one
//! read per name into a buffer of [`VALUE_BUFFER`] bytes (grown and read again only for a
//! longer value), and every later read is the guest's own. The request a flow forwards is
//! written to a new host-side handle when it is sent. The origin's response is read the same
//! way ([`response`]): the response phase lists its headers, rewrites them and hands them to
//! the cache and the client, and a detached response does all of that in the guest until it
//! is sent.
//!
//! A detached request cannot answer what the platform observed of the connection (the fastly
//! crate answers `None` for any request but the attached client request), so that is read
//! here as well, once, and asked for through [`client_ip`] and [`client_tls`]. One instance
//! serves one request, so the observation is the instance's.

use std::net::IpAddr;
use std::sync::OnceLock;

use fastly::error::BufferSizeError;
use fastly::handle::{client_request_and_body, BodyHandle, RequestHandle, ResponseHandle};
use fastly::http::Url;
use fastly::http::{HeaderName, HeaderValue, Method};
use fastly::{Body, Request, Response};

/// The first buffer for one header name's values: most request headers fit (a browser's
/// `User-Agent` and `Accept` are under 200 bytes); a longer one (a large `Cookie`) is read
/// again with the size the host asks for.
pub const VALUE_BUFFER: usize = 512;

/// The first buffer for the header names, several at a time.
const NAMES_BUFFER: usize = 512;

/// The first buffer for the URL, and for the method.
const URL_BUFFER: usize = 1024;
const METHOD_BUFFER: usize = 16;

/// Beyond this a value cannot come from the platform (its request header limits are far
/// lower); a read that asks for more is given up rather than grown forever.
const LARGEST: usize = 1 << 20;

/// What the platform observed of the client's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Connection {
    ip: Option<IpAddr>,
    tls: bool,
}

static CONNECTION: OnceLock<Connection> = OnceLock::new();

/// The client's address as the platform observed it (never a header). `None` before
/// [`client_request`] ran, as in a unit test's synthetic request.
pub fn client_ip() -> Option<IpAddr> {
    CONNECTION.get().and_then(|c| c.ip)
}

/// Whether the client's connection came over TLS, as the platform observed it. `false`
/// before [`client_request`] ran.
pub fn client_tls() -> bool {
    CONNECTION.get().is_some_and(|c| c.tls)
}

/// A client request whose URL is not one: the host builds the URL from the request's `Host`
/// as sent, and a `Host` such as `example.com:99999`, `1.2.3.999` or `[zz]` makes a URL
/// that WHATWG URL parsing refuses. The service answers it `400` (a `Host` nothing can
/// reach); the fastly crate's own read of the URL panics on it.
#[derive(Debug)]
pub struct Unreadable {
    /// The request's method, for the access line.
    pub method: Method,
    /// Why the URL was refused (for the log; never the URL itself, which the client chose).
    pub why: &'static str,
}

/// Takes the client's request from the platform (once per instance, as
/// `Request::from_client` does): its method, URL, version, every header line in the order
/// the host lists them, and its body, as a detached `Request`. `Err` when the URL the host
/// made of it does not parse ([`Unreadable`]).
pub fn client_request() -> Result<Request, Unreadable> {
    let (handle, body) = client_request_and_body();
    let _ = CONNECTION.set(Connection {
        ip: handle.client_ip_addr(),
        tls: handle.client_tls_protocol_bytes().is_some(),
    });
    let method = read_growing(METHOD_BUFFER, |size| {
        handle.get_method(size).map_err(needed)
    })
    .unwrap_or(Method::GET);
    let url = match read_growing(URL_BUFFER, |size| url_bytes(&handle, size)) {
        Some(Ok(bytes)) => parse_url(&bytes),
        Some(Err(())) => Err("the platform could not give the URL"),
        None => Err("the URL is longer than the service reads"),
    };
    let url = url.map_err(|why| Unreadable {
        method: method.clone(),
        why,
    })?;
    let mut request = Request::new(method, url);
    request.set_version(handle.get_version());
    let lines = header_lines(
        |size| all(handle.get_header_names(size)),
        |name: &HeaderName, size| all(handle.get_header_values(name, size)),
    );
    for (name, value) in lines {
        request.append_header(name, value);
    }
    request.set_body(Body::from(body));
    Ok(request)
}

/// The URL as WHATWG URL parsing reads it, as the fastly crate would have it.
fn parse_url(bytes: &[u8]) -> Result<Url, &'static str> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the URL is not UTF-8")?;
    Url::parse(text).map_err(|_| "the URL does not parse (its Host is not one)")
}

/// The ABI's status for a buffer too small (`fastly_shared::FastlyStatus::BUFLEN`, which the
/// fastly crate does not re-export).
const BUFLEN: i32 = 4;

/// The client request's URL as the host has it, read into `size` bytes: `Ok(Ok(bytes))`,
/// `Err(needed)` when it needs a larger buffer, `Ok(Err(()))` on any other failure. Read
/// through the ABI because `RequestHandle::get_url` parses the bytes itself and panics when
/// they do not parse.
fn url_bytes(handle: &RequestHandle, size: usize) -> Result<Result<Vec<u8>, ()>, usize> {
    let mut buffer = Vec::<u8>::with_capacity(size);
    let mut written = 0;
    // Deprecated for a future WASI target only (wasip2); this is wasip1's ABI.
    #[allow(deprecated)]
    let raw = handle.as_u32();
    // SAFETY: `buffer` has room for `size` bytes and outlives the call; `written` is a live
    // `usize`. The host writes at most `size` bytes.
    #[allow(unsafe_code)]
    let status = unsafe {
        fastly_sys::fastly_http_req::uri_get(raw, buffer.as_mut_ptr(), size, &mut written)
    };
    match status.code {
        0 if written <= size => {
            // SAFETY: the host initialised the first `written` bytes, within the capacity.
            #[allow(unsafe_code)]
            unsafe {
                buffer.set_len(written)
            };
            Ok(Ok(buffer))
        }
        BUFLEN => Err(written.max(size + 1)),
        _ => Ok(Err(())),
    }
}

/// A backend's response from its handles (`PendingRequestHandle::wait`): status, version,
/// every header line in the host's order, and the body, as a detached `Response`.
pub fn response(head: ResponseHandle, body: BodyHandle) -> Response {
    let mut response = Response::new();
    response.set_status(head.get_status());
    response.set_version(head.get_version());
    let lines = header_lines(
        |size| all(head.get_header_names(size)),
        |name: &HeaderName, size| all(head.get_header_values(name, size)),
    );
    for (name, value) in lines {
        response.append_header(name, value);
    }
    response.set_body(Body::from(body));
    response
}

/// Every header line of a handle, through its `names` and `values` reads (the request's and
/// the response's handles share no trait), the names in the host's order.
fn header_lines(
    names: impl Fn(usize) -> Result<Vec<HeaderName>, usize>,
    values: impl Fn(&HeaderName, usize) -> Result<Vec<HeaderValue>, usize>,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut lines = Vec::new();
    let Some(names) = read_growing(NAMES_BUFFER, names) else {
        log::warn!("incoming: the header names exceed {LARGEST} bytes: no header read");
        return lines;
    };
    for name in names {
        match read_growing(VALUE_BUFFER, |size| values(&name, size)) {
            Some(read) => lines.extend(read.into_iter().map(|value| (name.clone(), value))),
            None => log::warn!("incoming: the values of {name} exceed {LARGEST} bytes: not read"),
        }
    }
    lines
}

/// The size a read that was too small asks for.
fn needed(e: BufferSizeError) -> usize {
    e.needed_buf_size
}

/// Every item of a multi-value read, or the size the first one that did not fit asks for.
fn all<T>(read: impl Iterator<Item = Result<T, BufferSizeError>>) -> Result<Vec<T>, usize> {
    read.collect::<Result<Vec<_>, _>>().map_err(needed)
}

/// `read` with a buffer of `first` bytes, then, while the host says it needs more (the
/// error), with at least what it asks for (and at least twice the last size: a later value
/// may be longer still), up to [`LARGEST`].
fn read_growing<T>(first: usize, read: impl Fn(usize) -> Result<T, usize>) -> Option<T> {
    let mut size = first;
    loop {
        match read(size) {
            Ok(value) => return Some(value),
            Err(asked) => size = next_size(size, asked)?,
        }
    }
}

/// The buffer after one of `size` bytes was too small for `needed`: `None` past [`LARGEST`].
fn next_size(size: usize, needed: usize) -> Option<usize> {
    let next = needed.max(size.saturating_mul(2));
    (next <= LARGEST).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_grows_to_what_is_needed_and_at_least_doubles_up_to_the_largest() {
        assert_eq!(next_size(512, 3000), Some(3000));
        assert_eq!(next_size(512, 600), Some(1024));
        assert_eq!(next_size(512, 0), Some(1024));
        assert_eq!(next_size(LARGEST / 2, 10), Some(LARGEST));
        assert_eq!(next_size(LARGEST, 10), None);
        assert_eq!(next_size(512, LARGEST + 1), None);
    }

    #[test]
    fn reading_stops_when_the_buffer_would_pass_the_largest() {
        let tries = std::cell::Cell::new(0);
        let read = |size: usize| {
            tries.set(tries.get() + 1);
            Err::<(), _>(size + 1)
        };
        assert_eq!(read_growing(512, read), None);
        // 512, 1 KiB, ... 1 MiB: 12 tries, none past the largest.
        assert_eq!(tries.get(), 12);
    }

    #[test]
    fn a_synthetic_request_has_no_observed_connection() {
        // Unit tests never take the client request: nothing was observed.
        assert_eq!(client_ip(), None);
        assert!(!client_tls());
    }

    #[test]
    fn a_url_made_of_a_host_that_is_not_one_is_refused_not_a_panic() {
        for bad in [
            "http://www.example.com:99999/",
            "http://www.example.com:abc/",
            "http://1.2.3.999/",
            "http://1.2.3.4.5/",
            "http://[zz]/",
            "http://xn--zz/",
        ] {
            assert!(parse_url(bad.as_bytes()).is_err(), "{bad}");
        }
        assert!(parse_url(b"http://www.example.com/\xff").is_err());
        let good = parse_url(b"http://www.example.com:8080/a?b=c").expect("a URL");
        assert_eq!((good.port(), good.path()), (Some(8080), "/a"));
    }
}
