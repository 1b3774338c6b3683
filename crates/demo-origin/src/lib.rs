//! Offline demo publisher origin.
//!
//! An HTTP/1.1 server on hyper 1 and tokio that serves `fixtures/site`
//! (or another directory) the way a real publisher origin would, plus a set
//! of query-string knobs that reproduce slow, compressed, truncated and
//! broken responses for end-to-end tests and benchmarks of the proxy.
//!
//! # Routes
//!
//! * `GET`/`HEAD /path` serves `<root>/path` (directories and `/` serve
//!   `index.html`); `..` segments (also percent-encoded) answer 400; missing
//!   files answer 404 with a small HTML page.
//! * `/__gen/<N>kb.html` (1 ≤ N ≤ 16384): a deterministic publisher-style
//!   page of exactly N KiB, see [`pages`].
//! * `GET`/`HEAD /next` and below: the captured Next.js app of
//!   `fixtures/nextjs` (HTML pages, Flight responses selected by the `RSC`,
//!   `Next-Router-Prefetch` and `Next-Router-Segment-Prefetch` request
//!   headers, static assets), replayed with the captured status, headers and
//!   chunk timing, see [`nextjs`].
//! * `/__echo` (any method) and `POST` to any path: a JSON description of
//!   the request, see [`routes::echo_json`].
//! * `/bidders/fast`, `/bidders/slow`, `/bidders/misbehave` (`POST`): OpenRTB 2.6 demo
//!   bidders, and `GET /bidders/received?id=ID`: the requests they received for auction `ID`,
//!   see [`bidders`]. The knobs do not apply to them.
//! * Other methods answer 405.
//!
//! # Knobs (query parameters, combinable)
//!
//! See [`knobs::Knobs`] for parsing rules and [`body`] for how they shape the
//! bytes on the wire.
//!
//! | knob | effect |
//! |------|--------|
//! | `drip_ms=N`, `drip_chunks=K` | chunked body: head part (through `</head>`, else 1/K) at once, then K parts, N ms before each |
//! | `encoding=gzip\|br\|deflate\|identity` | force the content coding (streamed with sync flushes when dripping) |
//! | `die_after=N` | abort the connection after N encoded body bytes |
//! | `truncate=N` | send only N encoded body bytes, framed cleanly |
//! | `lie_encoding=gzip\|br\|zstd\|deflate` | plain body, wrong `Content-Encoding` |
//! | `headers_delay_ms=N` | sleep before the status line |
//! | `status=NNN` | answer with this status (200–599) |
//! | `set_cookie=1` | add two `Set-Cookie` headers |
//! | `redirect=/path` | 302 to `https://origin.demo-publisher.example/path` |
//! | `nextjs_timing=0` | replay a Next.js capture's chunks back to back instead of at their recorded times |
//! | `cache_control=`, `surrogate_control=`, `surrogate_key=`, `vary=`, `link=`, `etag=`, `last_modified=` | add that header (percent-encoded value) |
//! | `no_vary=1` | no automatic `Vary: Accept-Encoding` (repeat `vary=` for several `Vary` lines) |
//! | `echo=NAME` | a text page ends with `<!-- echo NAME: VALUES -->`, the request header as received (repeatable); every answer also carries it as the response header `x-echo-NAME` |
//! | `conditional=1` | `304` for an `If-None-Match` matching the `etag=` knob; `206` for one `Range: bytes=A-B` on an uncompressed `200` |
//! | `faults_from=T` | the fault knobs (`status`, `headers_delay_ms`, `die_after`, `truncate`, `lie_encoding`) apply only from T (Unix ms) on |
//!
//! ```no_run
//! let server = demo_origin::Server::bind("127.0.0.1:0", demo_origin::default_root())?;
//! let addr = server.spawn()?;
//! println!("serving on http://{addr}");
//! # Ok::<(), std::io::Error>(())
//! ```

#![warn(missing_docs)]

pub mod bidders;
pub mod body;
pub mod cache;
pub mod codec;
pub mod knobs;
pub mod nextjs;
pub mod pages;
pub mod routes;
pub mod server;

use std::path::PathBuf;

pub use server::{Server, ORIGIN_HOST};

/// The default site root: `fixtures/site` at the workspace root.
pub fn default_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/site"))
}
