//! The streaming build's client body: output is held while the origin has more ready, and
//! sent when the origin would make us wait.
//!
//! Why: under Viceroy (and any HTTP/1.1 server that does not set `TCP_NODELAY`), every write
//! of a response after the first one is a small TCP segment that Nagle's algorithm holds until
//! the client acknowledges the previous one, and a client on a kept-alive connection delays
//! that acknowledgement by about 40 ms. A streamed response whose head left alone, or whose
//! chunk terminator left after its last bytes, pays that stall; a response sent in one write
//! does not. Measured with `wrk` on the article: 170 req/s at 48 ms p50 streamed against
//! 480 req/s at 15 ms buffered (8 connections, before this module).
//!
//! When held bytes leave is decided in one place, the core's `Release` (the 256 KiB bound,
//! the origin pause, the compressed-flush credit); this module carries it out and answers the
//! one question only the platform can ([`origin_has_more_ready`]):
//!
//! - the pipeline writes into [`HoldingSink`], which holds, and sends only past the bound;
//! - flushing the sink, or [`ClientBody::send_held`], sends what is held now. The first send
//!   is the response head with those bytes as the start of its body (`set_body`, then
//!   `stream_to_client`), so head and first bytes leave in one write;
//! - [`ClientBody::finish`]: if nothing was sent yet, the whole output goes as one response
//!   with a `Content-Length`, in one write, as the buffered build sends it.
//!
//! A failure before anything was sent abandons the transfer (head, held bytes, no end), as a
//! failure after the head does: a body is sent with a `Content-Length` only once the pipeline
//! has finished it.
//!
//! What this cannot fix: once a body is streaming, its last bytes and the chunked terminator
//! are two host calls (`write`, then `finish`), and Viceroy writes them to the socket
//! separately when its connection task wakes between the two.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use fastly::handle::BodyHandle;
use fastly::http::body::StreamingBody;
use fastly::Response;
use trusted_server_core::{Release, HOLD_MAX_BYTES};

use crate::kit::access::SinkStats;
use crate::kit::ready::{self, Waitable};

/// How long to wait for an origin's next bytes, when its `Content-Length` says more are
/// coming, before sending what is held. On loopback and in a busy host, the next chunk of a
/// body that is all in flight is often a few microseconds from being readable when the
/// previous one has been processed; a wait this short lets such a body leave in one write,
/// and costs an origin that really stalls at most this much per read.
pub const ORIGIN_WAIT_MS: u32 = 1;

/// Whether the origin body has more for us within [`ORIGIN_WAIT_MS`]: bytes to read, its end,
/// or an error, so that the next read returns at once and holding output until after it costs
/// no latency.
///
/// Beware: under Viceroy 0.22, asking consumes a read error waiting in the body (its
/// `is_ready` reads a chunk and puts back only data), so the next read reports a clean end.
/// Ask only about a body with a `Content-Length`, and check at its end that every promised
/// byte came.
///
/// Asked through `kit::ready`, the one place the adapter calls the platform's readiness ABI
/// (the fastly crate's `async_io` is crate-private). A platform that refuses to say counts as
/// "not ready": the output is sent, as it always was.
pub fn origin_has_more_ready(body: &BodyHandle) -> bool {
    let body = [Waitable::Body(body)];
    let wait = Duration::from_millis(ORIGIN_WAIT_MS.into());
    ready::is_ready(body[0]) || ready::first_ready(&body, wait).is_some()
}

/// What has been sent to the client so far.
enum State {
    /// Nothing: the response head waits with the held bytes. (Boxed: a `Response` is a
    /// kilobyte, the other variants a few words.)
    Unsent(Box<Response>),
    /// The head and some body bytes are out; the body is streaming.
    Streaming(StreamingBody),
    /// Ended (finished, or abandoned).
    Done,
}

struct Inner {
    state: State,
    held: Vec<u8>,
    stats: Rc<SinkStats>,
}

/// The client body of the streaming build; see the module docs. The pipeline writes into its
/// [`ClientBody::sink`], which holds; the caller carries out `Release`'s decisions
/// ([`ClientBody::send_held`], [`ClientBody::finish`]).
pub struct ClientBody {
    inner: Rc<RefCell<Inner>>,
}

/// The pipeline's side of a [`ClientBody`]: `Write` that holds, sending only past the bound
/// (`Release::must_send`); `flush` sends what is held.
pub struct HoldingSink {
    inner: Rc<RefCell<Inner>>,
}

impl ClientBody {
    /// A body for `response`, whose headers are final; nothing is sent yet. `expected` is the
    /// origin body's length, if known: the output is about as long, so the held bytes get
    /// room for it (up to [`HOLD_MAX_BYTES`]) at once rather than by doubling.
    pub fn new(response: Response, stats: Rc<SinkStats>, expected: Option<u64>) -> Self {
        let room = expected.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        ClientBody {
            inner: Rc::new(RefCell::new(Inner {
                state: State::Unsent(Box::new(response)),
                held: Vec::with_capacity(room.min(HOLD_MAX_BYTES)),
                stats,
            })),
        }
    }

    /// Where the pipeline writes.
    pub fn sink(&self) -> HoldingSink {
        HoldingSink {
            inner: Rc::clone(&self.inner),
        }
    }

    /// Sends what is held now (the origin would make us wait): with the head if nothing was
    /// sent yet.
    ///
    /// # Errors
    /// If the client is gone.
    pub fn send_held(&self) -> io::Result<()> {
        self.inner.borrow_mut().release()
    }

    /// Ends the body after the pipeline finished: the whole output with a `Content-Length` if
    /// nothing was sent yet, else the held rest, then the stream's end.
    ///
    /// # Errors
    /// If the client is gone.
    pub fn finish(self) -> io::Result<()> {
        let mut inner = self.inner.borrow_mut();
        let held = std::mem::take(&mut inner.held);
        let n = held.len();
        match std::mem::replace(&mut inner.state, State::Done) {
            State::Unsent(mut response) => {
                response.set_body(held);
                inner.stats.sent_at.set(Some(Instant::now()));
                response.send_to_client();
                inner.stats.record(n);
                Ok(())
            }
            State::Streaming(mut body) => {
                if n > 0 {
                    body.write_all(&held)?;
                    inner.stats.record(n);
                }
                body.finish()
            }
            State::Done => Err(io::Error::other("client body used after its end")),
        }
    }
}

impl Inner {
    /// Sends the held bytes: the head with them if nothing was sent yet, else into the stream.
    fn release(&mut self) -> io::Result<()> {
        let held = std::mem::take(&mut self.held);
        let n = held.len();
        match std::mem::replace(&mut self.state, State::Done) {
            State::Unsent(mut response) => {
                if n > 0 {
                    // Viceroy (and Fastly) send a body's existing bytes before what is
                    // streamed into it, so these leave with the head.
                    response.set_body(held);
                }
                self.stats.sent_at.set(Some(Instant::now()));
                self.state = State::Streaming(response.stream_to_client());
                self.stats.record(n);
            }
            State::Streaming(mut body) => {
                if n > 0 {
                    let result = body.write_all(&held).and_then(|()| body.flush());
                    self.state = State::Streaming(body);
                    result?;
                    self.stats.record(n);
                } else {
                    self.state = State::Streaming(body);
                }
            }
            State::Done => return Err(io::Error::other("client body used after its end")),
        }
        Ok(())
    }
}

impl Write for HoldingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut inner = self.inner.borrow_mut();
        inner.held.extend_from_slice(buf);
        if Release::must_send(inner.held.len()) {
            inner.release()?;
        }
        Ok(buf.len())
    }

    /// Sends what is held now: the pipeline's flush, when `Release` decided the output must
    /// not wait.
    fn flush(&mut self) -> io::Result<()> {
        self.inner.borrow_mut().release()
    }
}

impl Drop for Inner {
    /// Dropped before [`ClientBody::finish`] (a failure): the transfer is abandoned. If nothing
    /// was sent yet, the head and the held bytes go first and the stream is then dropped
    /// unfinished, so the client sees an incomplete transfer, as when the failure comes after
    /// the head, and never a short body that looks complete.
    fn drop(&mut self) {
        if matches!(self.state, State::Unsent(_)) {
            let _ = self.release();
        }
        // A `StreamingBody` dropped without `finish()` is abandoned by the platform.
    }
}
