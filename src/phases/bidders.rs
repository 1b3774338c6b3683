//! Asking the bidders (for bids, or as partners of the ID graph for their IDs): each call
//! built for its bidder's own backend ([`post`], [`call`]), every request sent at once
//! ([`send_all`]), then (at once for the endpoint, after the page has streamed for a
//! navigation) one loop that waits on whatever is still open (a response head, or a body
//! still arriving) until the deadline. A navigation also takes in what has arrived while its
//! page streams, without waiting ([`Asked::read_ready`]). A bidder that has sent its headers
//! and then stalls mid-body is waited for no longer than one that never answered: both are
//! cut off at the deadline, and only they lose their bids.
//!
//! Each body is read as it arrives, at most `MAX_BIDDER_BODY_BYTES` (+1, to tell "too
//! large"); nothing is decompressed (requests ask for `identity`), and a body shorter than
//! its `Content-Length` is a failure, not an answer.

use std::io::Read;
use std::time::{Duration, Instant};

use fastly::backend::BackendCreationError;
use fastly::handle::{BodyHandle, PendingRequestHandle, PollHandleResult};
use fastly::{Backend, Request, Response};
use trusted_server_core::auction::MAX_BIDDER_BODY_BYTES;
use trusted_server_core::Settings;
use trusted_server_settings::{Bidder, Scheme};

use crate::kit::partner;
use crate::kit::ready::{first_ready, is_ready, Waitable};

/// One bidder's request, ready to go: the request and the name of its backend.
pub struct Call {
    /// The request, its URL, headers and body final (and signed, if it is).
    pub request: Request,
    /// The dynamic backend it goes through.
    pub backend: Backend,
    /// When this bidder is cut off (its own timeout, never past the auction's deadline).
    pub deadline: Instant,
}

/// A `POST` of the JSON `body` to `path_and_query` on `bidder`'s host, with a fresh set of
/// headers (none of the reader's): the body's type, `identity` encoding, the `Host`.
pub fn post(bidder: &Bidder, path_and_query: &str, body: String) -> Request {
    let url = format!(
        "{}://{}{path_and_query}",
        bidder.scheme.as_str(),
        bidder.authority
    );
    Request::post(url)
        .with_header("content-type", "application/json")
        .with_header("accept-encoding", "identity")
        .with_header("host", &*bidder.authority)
        .with_body(body)
}

/// `request` (final but for its signature) made a call to `bidder`: signed with `key` when the
/// bidder wants it, through its own backend, cut off after its `timeout_ms`.
///
/// # Errors
/// The platform's refusal of the bidder's backend.
pub fn call(
    mut request: Request,
    bidder: &Bidder,
    key: &partner::Key,
    settings: &Settings,
) -> Result<Call, String> {
    if bidder.signed {
        partner::sign_with(&mut request, key);
    }
    let backend = backend(bidder, settings)?;
    Ok(Call {
        request,
        backend,
        deadline: Instant::now() + Duration::from_millis(bidder.timeout_ms.into()),
    })
}

/// The dynamic backend of `bidder`, named after it, created once per instance. Its timeouts
/// are the bidder's own (an auction's deadline cuts it off sooner when it must).
fn backend(bidder: &Bidder, settings: &Settings) -> Result<Backend, String> {
    let name = format!("bidder_{}", bidder.code);
    let timeout = Duration::from_millis(bidder.timeout_ms.into());
    let connect = timeout.min(Duration::from_millis(
        settings.publisher.connect_timeout_ms.into(),
    ));
    let mut builder = Backend::builder(&name, &*bidder.address)
        .connect_timeout(connect)
        .first_byte_timeout(timeout)
        .between_bytes_timeout(timeout);
    if bidder.scheme == Scheme::Https {
        builder = builder
            .enable_ssl()
            .sni_hostname(&*bidder.tls_host)
            .check_certificate(&*bidder.tls_host);
    }
    match builder.finish() {
        Ok(backend) => Ok(backend),
        Err(BackendCreationError::NameInUse) => {
            Backend::from_name(&name).map_err(|e| format!("backend {name}: {e}"))
        }
        Err(e) => Err(format!(
            "cannot create a backend for {}: {e}",
            bidder.address
        )),
    }
}

/// What came back from one bidder.
#[derive(Debug)]
pub enum Collected {
    /// A whole answer: its status and body, `ms` after the start.
    Whole {
        /// The status.
        status: u16,
        /// The body (at most `MAX_BIDDER_BODY_BYTES`).
        body: Vec<u8>,
        /// Milliseconds from the start.
        ms: u64,
    },
    /// A body over `MAX_BIDDER_BODY_BYTES`: refused without being read further.
    TooLarge {
        /// Milliseconds from the start.
        ms: u64,
    },
    /// A compressed body, or one cut short: refused.
    Unreadable {
        /// Why.
        why: String,
        /// Milliseconds from the start.
        ms: u64,
    },
    /// The request could not be sent or answered (the platform's message).
    Failed {
        /// What the platform said.
        why: String,
        /// Milliseconds from the start.
        ms: u64,
    },
    /// Nothing whole by its deadline, `ms` after the start.
    Late {
        /// Milliseconds from the start.
        ms: u64,
    },
}

enum State {
    Waiting(PendingRequestHandle),
    Reading {
        status: u16,
        body: BodyHandle,
        read: Vec<u8>,
        length: Option<usize>,
    },
    Done(Collected),
}

/// The calls in flight: sent, not yet collected. The platform carries them meanwhile, so a
/// caller may do other work (stream a page) before it [`collect`](Asked::collect)s; a call
/// whose deadline passed by then keeps what has already arrived and is cut off where it
/// would have to wait. Dropping it abandons every call.
pub struct Asked {
    states: Vec<State>,
    deadlines: Vec<Instant>,
    start: Instant,
}

/// Sends every call at once (`start` is the auction's start, for the `ms` figures).
pub fn send_all(calls: Vec<Call>, start: Instant) -> Asked {
    let ms = || elapsed_ms(start);
    let deadlines: Vec<Instant> = calls.iter().map(|c| c.deadline).collect();
    let states: Vec<State> = calls
        .into_iter()
        .map(|call| {
            let (request, body) = call.request.into_handles();
            let body = body.unwrap_or_else(BodyHandle::new);
            match request.send_async_to_backend(body, &call.backend) {
                Ok(pending) => State::Waiting(pending),
                Err(e) => State::Done(Collected::Failed {
                    why: e.to_string(),
                    ms: ms(),
                }),
            }
        })
        .collect();
    Asked {
        states,
        deadlines,
        start,
    }
}

fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl Asked {
    /// Reads whatever the platform already holds for the calls still open (a response head,
    /// a body's bytes or its end), without waiting; `true` once every call is done, and
    /// [`collect`](Asked::collect) will then not wait. A caller with other work between reads
    /// (a page streaming while its bidders think) takes the answers in as they come, so
    /// that little is left to read at the end, where the page waits for it.
    pub fn read_ready(&mut self) -> bool {
        let start = self.start;
        let ms = || elapsed_ms(start);
        let mut done = true;
        for state in &mut self.states {
            let open = std::mem::replace(state, State::Done(Collected::Late { ms: 0 }));
            *state = while_ready(open, ms);
            done &= matches!(state, State::Done(_));
        }
        done
    }

    /// Waits on whatever is still open (a response head, or a body still arriving) until
    /// each call's deadline; the results in the order the calls were given.
    pub fn collect(self) -> Vec<Collected> {
        let Asked {
            mut states,
            deadlines,
            start,
        } = self;
        let ms = || elapsed_ms(start);
        loop {
            let now = Instant::now();
            for (state, deadline) in states.iter_mut().zip(&deadlines) {
                if !matches!(state, State::Done(_)) && *deadline <= now {
                    let open = std::mem::replace(state, State::Done(Collected::Late { ms: 0 }));
                    *state = past_deadline(open, ms);
                }
            }
            let open: Vec<usize> = (0..states.len())
                .filter(|&i| !matches!(states[i], State::Done(_)))
                .collect();
            let Some(next) = open.iter().map(|&i| deadlines[i]).min() else {
                break;
            };
            let left = next.saturating_duration_since(now);
            let waitables: Vec<Waitable<'_>> = (open.iter())
                .map(|&i| match &states[i] {
                    State::Waiting(pending) => Waitable::Pending(pending),
                    State::Reading { body, .. } => Waitable::Body(body),
                    State::Done(_) => unreachable!("only open calls are waited on"),
                })
                .collect();
            let Some(ready) = first_ready(&waitables, left) else {
                // The earliest deadline came (the next turn cuts those calls off), or the
                // platform would not wait: then every open call is cut off now.
                if Instant::now() < next {
                    break;
                }
                continue;
            };
            let i = open[ready];
            let state = std::mem::replace(&mut states[i], State::Done(Collected::Late { ms: 0 }));
            // What else is in already (a body behind its head, its end behind its bytes) is
            // read at once: a readiness question is cheaper than another wait.
            states[i] = while_ready(advance(state, ms), ms);
        }
        (states.into_iter())
            .map(|state| match state {
                State::Done(collected) => collected,
                State::Waiting(_) | State::Reading { .. } => Collected::Late { ms: ms() },
            })
            .collect()
    }
}

/// A call whose deadline has passed: what has already arrived is read without waiting (an
/// answer that came in time is not lost because the page's end, where the bids are
/// collected, came later); where the next step would wait, it is cut off as late. Dropping
/// its handles abandons the request: nothing more is read.
fn past_deadline(state: State, ms: impl Fn() -> u64) -> State {
    match while_ready(state, &ms) {
        State::Waiting(_) | State::Reading { .. } => State::Done(Collected::Late { ms: ms() }),
        done => done,
    }
}

/// `state` advanced as far as the platform can take it without waiting: done, or at the step
/// that would wait.
fn while_ready(mut state: State, ms: impl Fn() -> u64) -> State {
    loop {
        let ready = match &state {
            State::Done(_) => return state,
            State::Waiting(pending) => is_ready(Waitable::Pending(pending)),
            State::Reading { body, .. } => is_ready(Waitable::Body(body)),
        };
        if !ready {
            return state;
        }
        state = advance(state, &ms);
    }
}

/// One step of a call the platform said is ready.
fn advance(state: State, ms: impl Fn() -> u64) -> State {
    match state {
        State::Waiting(pending) => match pending.poll() {
            PollHandleResult::Pending(pending) => State::Waiting(pending),
            PollHandleResult::Done(Err(e)) => State::Done(Collected::Failed {
                why: e.to_string(),
                ms: ms(),
            }),
            PollHandleResult::Done(Ok((head, body))) => {
                let response = Response::from_handles(head, body);
                headed(response, ms)
            }
        },
        State::Reading {
            status,
            mut body,
            mut read,
            length,
        } => {
            let mut chunk = [0u8; 16 * 1024];
            match body.read(&mut chunk) {
                Ok(0) => match length {
                    Some(length) if length != read.len() => State::Done(Collected::Unreadable {
                        why: format!("the body ended after {} of {length} bytes", read.len()),
                        ms: ms(),
                    }),
                    _ => State::Done(Collected::Whole {
                        status,
                        body: read,
                        ms: ms(),
                    }),
                },
                Ok(n) if read.len() + n > MAX_BIDDER_BODY_BYTES => {
                    State::Done(Collected::TooLarge { ms: ms() })
                }
                Ok(n) => {
                    read.extend_from_slice(&chunk[..n]);
                    State::Reading {
                        status,
                        body,
                        read,
                        length,
                    }
                }
                Err(e) => State::Done(Collected::Failed {
                    why: format!("reading the answer: {e}"),
                    ms: ms(),
                }),
            }
        }
        done @ State::Done(_) => done,
    }
}

/// A response whose head is in: a status without a body to read is done; otherwise its body
/// is read if it can be.
fn headed(mut response: Response, ms: impl Fn() -> u64) -> State {
    let status = response.get_status().as_u16();
    if status != 200 {
        return State::Done(Collected::Whole {
            status,
            body: Vec::new(),
            ms: ms(),
        });
    }
    // Lossy, never `get_header_str`, which panics on a value that is not UTF-8 (a bidder can
    // send one): a mangled coding is no identity, so the answer is unreadable.
    let coding = (response.get_header_str_lossy("content-encoding"))
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"));
    if let Some(coding) = coding {
        return State::Done(Collected::Unreadable {
            why: format!("a {coding:?}-encoded answer (asked for identity)"),
            ms: ms(),
        });
    }
    let length = (response.get_header("content-length"))
        .and_then(|l| l.to_str().ok())
        .and_then(|l| l.trim().parse::<usize>().ok());
    if length.is_some_and(|l| l > MAX_BIDDER_BODY_BYTES) {
        return State::Done(Collected::TooLarge { ms: ms() });
    }
    let body = response.take_body().into_handle();
    State::Reading {
        status,
        body,
        read: Vec::new(),
        length,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bidder may answer with any bytes a header allows: a `Content-Encoding` that is not
    /// UTF-8 makes the answer unreadable, a `Content-Length` that is not is no length, and
    /// neither panics.
    #[test]
    fn header_values_that_are_not_utf8_never_panic() {
        let value = |bytes: &[u8]| fastly::http::HeaderValue::from_bytes(bytes).unwrap();
        let coded = Response::from_status(200).with_header("content-encoding", value(b"gzip\xff"));
        match headed(coded, || 7) {
            State::Done(Collected::Unreadable { why, ms: 7 }) => {
                assert!(why.contains("gzip\u{fffd}"), "{why}")
            }
            _ => panic!("a mangled coding must be unreadable"),
        }
        let sized = Response::from_status(200).with_header("content-length", value(b"12\xff"));
        match headed(sized, || 7) {
            State::Reading { length, .. } => assert_eq!(length, None),
            _ => panic!("a mangled length is no length"),
        }
    }

    /// What the platform already holds is read whole without waiting, and the calls are done;
    /// a body shorter than its length is still a failure when read this way.
    #[test]
    fn answers_already_in_are_read_without_waiting() {
        let reading = |text: &str, length: usize| State::Reading {
            status: 200,
            body: fastly::Body::from(text).into_handle(),
            read: Vec::new(),
            length: Some(length),
        };
        let start = Instant::now();
        let far = Duration::from_secs(60);
        let mut asked = Asked {
            states: vec![reading("{\"id\":\"a\"}", 10), reading("{}", 5)],
            deadlines: vec![start + far, start + far],
            start,
        };
        assert!(asked.read_ready(), "both bodies were in");
        let collected = asked.collect();
        match &collected[..] {
            [Collected::Whole {
                status: 200, body, ..
            }, Collected::Unreadable { why, .. }] => {
                assert_eq!(body, b"{\"id\":\"a\"}");
                assert!(why.contains("2 of 5"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(start.elapsed() < far, "nothing waited");
    }
}
