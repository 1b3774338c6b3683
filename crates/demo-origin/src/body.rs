//! Turns a payload into a response body, applying the body-shaping knobs:
//! drip (chunked, slow, optionally stream-compressed), replay of recorded
//! chunk timing, `truncate` (short body, clean framing) and `die_after`
//! (short body, then the connection is dropped).
//!
//! Paced bodies are written by a task into a channel, one frame
//! per part, each sent at its time; hyper writes every frame as its own
//! chunk and flushes it while the task waits for the next one. A body that must die ends in [`Shaped`],
//! which then never finishes and tells the connection (through its
//! [`Outcome`]) to drop once everything before has been flushed.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Body, Bytes, Frame};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_LENGTH, TRANSFER_ENCODING};
use tokio::sync::mpsc;

use crate::codec::{Encoding, StreamEncoder};
use crate::knobs::Drip;

/// The body to send.
#[derive(Debug, Clone)]
pub enum Payload {
    /// No body and no framing headers (for 204 and 304 responses).
    Empty,
    /// An already-encoded body sent with `Content-Length`.
    Whole(Arc<Vec<u8>>),
    /// A plain body that is encoded incrementally and dripped in chunks.
    Drip {
        /// Plain bytes.
        plain: Arc<Vec<u8>>,
        /// Content coding to apply while streaming.
        encoding: Encoding,
        /// Drip timing.
        drip: Drip,
    },
    /// A plain body replayed in recorded pieces: each piece is encoded,
    /// written as its own chunk and flushed when its time comes.
    Replay {
        /// Plain bytes.
        plain: Arc<Vec<u8>>,
        /// Content coding to apply while streaming.
        encoding: Encoding,
        /// The pieces, in order. Their lengths should add up to the body's;
        /// bytes beyond them go out as one more piece, and pieces beyond the
        /// body are cut short.
        chunks: Arc<Vec<TimedChunk>>,
        /// Whether to wait for each piece's time (`false`: back to back).
        timing: bool,
    },
}

/// A recorded piece of a body: its length and when it arrived, measured
/// from the end of the response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedChunk {
    /// Bytes in this piece.
    pub len: usize,
    /// Arrival time after the head.
    pub at: Duration,
}

/// When a part of a paced body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// Right after the previous part.
    Now,
    /// After pausing this long.
    After(Duration),
    /// At this offset from the start of the body.
    At(Duration),
}

/// Body-shaping limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Send at most this many encoded body bytes, with correct framing.
    pub truncate: Option<u64>,
    /// Stop after this many encoded body bytes and drop the connection,
    /// leaving the framing incomplete.
    pub die_after: Option<u64>,
}

/// How a response body ended, reported once to the `on_end` callback of
/// [`Shaped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Encoded body bytes handed to hyper (chunk framing excluded).
    pub body_bytes: u64,
    /// `die_after`: the connection must be dropped once these bytes are out.
    pub died: bool,
    /// Whether the body was produced to its end (or death); `false` when the
    /// client went away first or the body failed.
    pub finished: bool,
}

/// Callback told how the body ended.
pub type OnEnd = Box<dyn FnOnce(Outcome) + Send>;

/// A response body that counts its bytes, reports its [`Outcome`] and, for
/// `die_after`, never ends: it stays pending after its last byte so that
/// hyper writes no terminator and the connection can be dropped.
pub struct Shaped {
    inner: UnsyncBoxBody<Bytes, io::Error>,
    body_bytes: u64,
    die: bool,
    on_end: Option<OnEnd>,
}

impl Shaped {
    fn new(inner: UnsyncBoxBody<Bytes, io::Error>, die: bool, on_end: OnEnd) -> Shaped {
        Shaped {
            inner,
            body_bytes: 0,
            die,
            on_end: Some(on_end),
        }
    }

    fn end(&mut self, finished: bool) {
        if let Some(on_end) = self.on_end.take() {
            on_end(Outcome {
                body_bytes: self.body_bytes,
                died: self.die && finished,
                finished,
            });
        }
    }
}

impl Body for Shaped {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                this.body_bytes += frame.data_ref().map_or(0, |d| d.len() as u64);
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => {
                this.end(false);
                Poll::Ready(Some(Err(e)))
            }
            None => {
                this.end(true);
                if this.die {
                    Poll::Pending
                } else {
                    Poll::Ready(None)
                }
            }
        }
    }
}

impl Drop for Shaped {
    /// hyper drops a body without asking for its end once it has all the
    /// bytes its `Content-Length` announced.
    fn drop(&mut self) {
        let finished = self.inner.is_end_stream();
        self.end(finished);
    }
}

/// Adds the framing header for `payload` to `headers` and returns its body.
/// With `head_only` (HEAD requests), and for [`Payload::Empty`], the body is
/// empty and the outcome is reported at once.
pub fn shape(
    payload: Payload,
    limits: Limits,
    head_only: bool,
    headers: &mut HeaderMap,
    on_end: OnEnd,
) -> Shaped {
    let die = limits.die_after.is_some();
    let at_once = head_only || matches!(payload, Payload::Empty);
    let (body, die) = match payload {
        Payload::Empty => (empty(), false),
        Payload::Whole(encoded) => {
            let len = clamp(encoded.len(), limits.truncate);
            headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
            let body = Bytes::from_owner(Shared(encoded)).slice(..clamp(len, limits.die_after));
            let full = Full::new(body).map_err(|never: Infallible| match never {});
            (
                if head_only {
                    empty()
                } else {
                    full.boxed_unsync()
                },
                die,
            )
        }
        Payload::Drip { .. } | Payload::Replay { .. } => {
            headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
            if head_only {
                (empty(), false)
            } else {
                let (tx, rx) = mpsc::channel(1);
                tokio::spawn(pace(tx, payload, limits));
                (Paced(rx).boxed_unsync(), die)
            }
        }
    };
    let mut shaped = Shaped::new(body, die, on_end);
    if at_once {
        shaped.end(true);
    }
    shaped
}

fn empty() -> UnsyncBoxBody<Bytes, io::Error> {
    Empty::new()
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

/// Lets a cached body be sent without copying it.
struct Shared(Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// A body fed by [`pace`]: one data frame per message; an error fails the
/// body, the sender's end ends it (after every message sent before).
/// (`http_body_util::channel::Channel` checks its frame and error channels
/// one after the other, so a frame sent just before the sender is dropped
/// can be lost between the two checks.)
struct Paced(mpsc::Receiver<io::Result<Bytes>>);

impl Body for Paced {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|item| item.map(|r| r.map(Frame::data)))
    }
}

/// Sends each part of a drip or replay payload as one frame at its time,
/// encoded and cut to the limits; stops early when `die_after` is reached.
async fn pace(tx: mpsc::Sender<io::Result<Bytes>>, payload: Payload, limits: Limits) {
    let start = tokio::time::Instant::now();
    let (parts, encoding): (Vec<(When, &[u8])>, Encoding) = match &payload {
        Payload::Drip {
            plain,
            encoding,
            drip,
        } => {
            let parts = drip_split(plain, drip.chunks).into_iter().enumerate();
            let paused = |i| i > 0 && !drip.delay.is_zero();
            let when = |i| {
                if paused(i) {
                    When::After(drip.delay)
                } else {
                    When::Now
                }
            };
            (parts.map(|(i, p)| (when(i), p)).collect(), *encoding)
        }
        Payload::Replay {
            plain,
            encoding,
            chunks,
            timing,
        } => {
            let parts = replay_split(plain, chunks).into_iter();
            let when = |at| if *timing { When::At(at) } else { When::Now };
            (parts.map(|(at, p)| (when(at), p)).collect(), *encoding)
        }
        Payload::Empty | Payload::Whole(_) => return,
    };
    let mut encoder = Some(StreamEncoder::new(encoding));
    let mut truncate_left = limits.truncate.unwrap_or(u64::MAX);
    let mut die_left = limits.die_after;
    let last = parts.len() - 1;
    for (i, (when, part)) in parts.into_iter().enumerate() {
        if die_left == Some(0) {
            return;
        }
        match when {
            When::Now => {}
            When::After(pause) => tokio::time::sleep(pause).await,
            When::At(offset) => tokio::time::sleep_until(start + offset).await,
        }
        let encoded = match encoder.take() {
            Some(e) if i == last => e.finish(part),
            Some(mut e) => {
                let out = e.push(part);
                encoder = Some(e);
                out
            }
            None => Ok(Vec::new()),
        };
        let encoded = match encoded {
            Ok(bytes) => bytes,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        let mut len = clamp(encoded.len(), Some(truncate_left));
        truncate_left -= len as u64;
        if let Some(left) = die_left.as_mut() {
            len = clamp(len, Some(*left));
            *left -= len as u64;
        }
        let mut data = Bytes::from(encoded);
        data.truncate(len);
        if len > 0 && tx.send(Ok(data)).await.is_err() {
            return;
        }
    }
}

/// Splits `plain` into the recorded pieces, each with its arrival time.
/// Bytes beyond the recorded lengths form one last piece (at the last time);
/// an empty body gives one empty piece.
pub fn replay_split<'a>(plain: &'a [u8], chunks: &[TimedChunk]) -> Vec<(Duration, &'a [u8])> {
    let mut parts = Vec::with_capacity(chunks.len() + 1);
    let mut rest = plain;
    let mut last = Duration::ZERO;
    for c in chunks {
        if rest.is_empty() {
            break;
        }
        let (part, tail) = rest.split_at(c.len.min(rest.len()));
        parts.push((c.at, part));
        rest = tail;
        last = c.at;
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push((last, rest));
    }
    parts
}

/// Splits `plain` into `1 + chunks` parts: everything up to and including
/// the first `</head>` (case-insensitive) — or the first `len / chunks`
/// bytes if there is none — followed by `chunks` equal parts of the rest
/// (the last may be shorter, trailing ones may be empty). Splits are at
/// byte offsets and may fall inside a multi-byte character.
pub fn drip_split(plain: &[u8], chunks: usize) -> Vec<&[u8]> {
    let chunks = chunks.max(1);
    let first = find_head_end(plain).unwrap_or(plain.len() / chunks);
    let (head, rest) = plain.split_at(first);
    let step = rest.len().div_ceil(chunks);
    let mut parts = Vec::with_capacity(chunks + 1);
    parts.push(head);
    for j in 0..chunks {
        let start = (j * step).min(rest.len());
        let end = (start + step).min(rest.len());
        parts.push(&rest[start..end]);
    }
    parts
}

/// Offset just past the first `</head>` (ASCII case-insensitive).
pub fn find_head_end(body: &[u8]) -> Option<usize> {
    const NEEDLE: &[u8] = b"</head>";
    body.windows(NEEDLE.len())
        .position(|w| w.eq_ignore_ascii_case(NEEDLE))
        .map(|p| p + NEEDLE.len())
}

fn clamp(len: usize, limit: Option<u64>) -> usize {
    match limit {
        Some(l) if l < len as u64 => l as usize,
        _ => len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Instant;

    #[test]
    fn split_at_head_end_then_equal_parts() {
        let page = b"<html><HEAD><title>t</title></Head><body>0123456789</body></html>";
        let parts = drip_split(page, 3);
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0], b"<html><HEAD><title>t</title></Head>");
        assert_eq!(parts[1..].concat(), b"<body>0123456789</body></html>");
        assert_eq!(parts[1].len(), 10);
        assert_eq!(parts[3].len(), 10);
    }

    #[test]
    fn split_without_head_uses_one_kth() {
        let data = [7u8; 100];
        let parts = drip_split(&data, 4);
        assert_eq!(parts[0].len(), 25);
        assert_eq!(
            parts[1..].iter().map(|p| p.len()).collect::<Vec<_>>(),
            [19, 19, 19, 18]
        );
        let tiny = drip_split(b"ab", 5);
        assert_eq!(tiny.concat(), b"ab");
        assert_eq!(tiny.len(), 6);
    }

    fn timed(spec: &[(usize, u64)]) -> Arc<Vec<TimedChunk>> {
        Arc::new(
            spec.iter()
                .map(|&(len, ms)| TimedChunk {
                    len,
                    at: Duration::from_millis(ms),
                })
                .collect(),
        )
    }

    #[test]
    fn replay_split_follows_the_recorded_lengths() {
        let chunks = timed(&[(2, 0), (3, 5), (4, 9)]);
        let parts = replay_split(b"abcdefghi", &chunks);
        assert_eq!(
            parts,
            vec![
                (Duration::ZERO, &b"ab"[..]),
                (Duration::from_millis(5), &b"cde"[..]),
                (Duration::from_millis(9), &b"fghi"[..]),
            ]
        );
        // Extra bytes form one more part; missing bytes shorten the last parts.
        assert_eq!(replay_split(b"abcdefghijk", &chunks)[3].1, b"jk");
        let short = replay_split(b"abcd", &chunks);
        assert_eq!(
            short.iter().map(|p| p.1).collect::<Vec<_>>(),
            [&b"ab"[..], b"cd"]
        );
        assert_eq!(replay_split(b"", &chunks), vec![(Duration::ZERO, &b""[..])]);
    }

    /// Shapes `payload`; returns the body, the response headers and where
    /// its outcome lands.
    fn shaped(
        payload: Payload,
        limits: Limits,
    ) -> (Shaped, HeaderMap, Arc<Mutex<Option<Outcome>>>) {
        let outcome = Arc::new(Mutex::new(None));
        let slot = outcome.clone();
        let mut headers = HeaderMap::new();
        let on_end = Box::new(move |o| *slot.lock().unwrap() = Some(o));
        let body = shape(payload, limits, false, &mut headers, on_end);
        (body, headers, outcome)
    }

    /// Reads frames (each with when it came) until the body ends (`true`)
    /// or stays pending for 300 ms (`false`).
    async fn frames(body: &mut Shaped) -> (Vec<(Instant, Vec<u8>)>, bool) {
        let mut out = Vec::new();
        loop {
            match tokio::time::timeout(Duration::from_millis(300), body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    out.push((Instant::now(), frame.into_data().unwrap().to_vec()))
                }
                Ok(Some(Err(e))) => panic!("body failed: {e}"),
                Ok(None) => return (out, true),
                Err(_) => return (out, false),
            }
        }
    }

    fn data(frames: &[(Instant, Vec<u8>)]) -> Vec<&[u8]> {
        frames.iter().map(|(_, d)| d.as_slice()).collect()
    }

    fn limits(truncate: Option<u64>, die_after: Option<u64>) -> Limits {
        Limits {
            truncate,
            die_after,
        }
    }

    #[tokio::test]
    async fn whole_body_truncates_cleanly_or_dies_pending() {
        let body = Arc::new(b"0123456789".to_vec());
        let (mut b, headers, outcome) = shaped(Payload::Whole(body.clone()), limits(Some(4), None));
        assert_eq!(headers[CONTENT_LENGTH], "4");
        let (got, ended) = frames(&mut b).await;
        assert_eq!((data(&got), ended), (vec![&b"0123"[..]], true));
        assert!(!outcome.lock().unwrap().unwrap().died);

        let (mut b, headers, outcome) = shaped(Payload::Whole(body), limits(None, Some(3)));
        assert_eq!(headers[CONTENT_LENGTH], "10");
        let (got, ended) = frames(&mut b).await;
        assert_eq!((data(&got), ended), (vec![&b"012"[..]], false));
        let died = Outcome {
            body_bytes: 3,
            died: true,
            finished: true,
        };
        assert_eq!(*outcome.lock().unwrap(), Some(died));
    }

    #[tokio::test]
    async fn drip_sends_one_frame_per_part_and_honours_the_limits() {
        let plain = Arc::new(b"<head></head>abcdefghij".to_vec());
        let drip = |limits| {
            let drip = Drip {
                delay: Duration::from_millis(30),
                chunks: 2,
            };
            let payload = Payload::Drip {
                plain: plain.clone(),
                encoding: Encoding::Identity,
                drip,
            };
            shaped(payload, limits)
        };
        let (mut b, headers, _) = drip(Limits::default());
        assert_eq!(headers[TRANSFER_ENCODING], "chunked");
        let (got, ended) = frames(&mut b).await;
        assert!(ended);
        assert_eq!(data(&got), [&b"<head></head>"[..], b"abcde", b"fghij"]);
        assert!(got[2].0 - got[1].0 >= Duration::from_millis(25));

        // die_after inside a part: the part is cut and the body never ends.
        let (mut b, _, outcome) = drip(limits(None, Some(15)));
        let (got, ended) = frames(&mut b).await;
        assert_eq!(
            (data(&got), ended),
            (vec![&b"<head></head>"[..], b"ab"], false)
        );
        assert!(outcome.lock().unwrap().unwrap().died);

        let (mut b, _, _) = drip(limits(Some(15), None));
        let (got, ended) = frames(&mut b).await;
        assert_eq!(
            (data(&got), ended),
            (vec![&b"<head></head>"[..], b"ab"], true)
        );
    }

    #[tokio::test]
    async fn replay_sends_each_recorded_chunk_at_its_time() {
        let plain = Arc::new(b"<head></head>abcdefghij".to_vec());
        let chunks = timed(&[(13, 0), (4, 40), (6, 80)]);
        for timing in [true, false] {
            let payload = Payload::Replay {
                plain: plain.clone(),
                encoding: Encoding::Identity,
                chunks: chunks.clone(),
                timing,
            };
            let start = Instant::now();
            let (mut b, _, _) = shaped(payload, Limits::default());
            let (got, ended) = frames(&mut b).await;
            assert!(ended);
            assert_eq!(data(&got), [&b"<head></head>"[..], b"abcd", b"efghij"]);
            if timing {
                assert!(got[1].0 - start >= Duration::from_millis(40));
                assert!(got[2].0 - start >= Duration::from_millis(80));
            } else {
                assert!(got[2].0 - start < Duration::from_millis(40));
            }
        }
    }
}
