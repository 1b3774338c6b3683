//! Writes a response head plus body, applying the body-shaping knobs:
//! drip (chunked, slow, optionally stream-compressed), replay of recorded
//! chunk timing, `truncate` (short body, clean framing) and `die_after`
//! (short body, broken framing).

use std::io::{self, Write};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::codec::{Encoding, StreamEncoder};
use crate::http::ResponseHead;
use crate::knobs::Drip;

/// Bodies up to this size are sent in the same write as the head.
const COALESCE_LIMIT: usize = 16 * 1024;

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
    /// At this offset from the moment the head was handed over.
    At(Duration),
}

/// Body-shaping limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Send at most this many encoded body bytes, with correct framing.
    pub truncate: Option<u64>,
    /// Stop after this many encoded body bytes and report an abort; the
    /// caller must then shut the socket down. Framing is left incomplete.
    pub die_after: Option<u64>,
}

/// What was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Encoded body bytes written (chunk framing excluded).
    pub body_bytes: u64,
    /// Whether the response was cut short by `die_after`.
    pub aborted: bool,
}

/// Writes `head` (completed with framing headers) and `payload` to `out`.
/// With `head_only` (HEAD requests) only the head is written.
pub fn send<W: Write>(
    out: &mut W,
    mut head: ResponseHead,
    payload: Payload,
    limits: Limits,
    head_only: bool,
) -> io::Result<Sent> {
    match payload {
        Payload::Empty => {
            out.write_all(&head.to_bytes())?;
            out.flush()?;
            Ok(Sent {
                body_bytes: 0,
                aborted: false,
            })
        }
        Payload::Whole(encoded) => {
            let len = clamp(encoded.len(), limits.truncate);
            head.add("Content-Length", len.to_string());
            let body = if head_only { &[][..] } else { &encoded[..len] };
            send_whole(out, &head, body, limits.die_after)
        }
        Payload::Drip {
            plain,
            encoding,
            drip,
        } => {
            head.add("Transfer-Encoding", "chunked");
            if head_only {
                out.write_all(&head.to_bytes())?;
                out.flush()?;
                return Ok(Sent {
                    body_bytes: 0,
                    aborted: false,
                });
            }
            let parts = drip_split(&plain, drip.chunks);
            let paced = parts.iter().enumerate().map(|(i, part)| {
                let when = if i > 0 && !drip.delay.is_zero() {
                    When::After(drip.delay)
                } else {
                    When::Now
                };
                (when, *part)
            });
            send_paced(out, &head, paced.collect(), encoding, limits)
        }
        Payload::Replay {
            plain,
            encoding,
            chunks,
            timing,
        } => {
            head.add("Transfer-Encoding", "chunked");
            if head_only {
                out.write_all(&head.to_bytes())?;
                out.flush()?;
                return Ok(Sent {
                    body_bytes: 0,
                    aborted: false,
                });
            }
            let paced = replay_split(&plain, &chunks)
                .into_iter()
                .map(|(at, part)| (if timing { When::At(at) } else { When::Now }, part))
                .collect();
            send_paced(out, &head, paced, encoding, limits)
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

fn send_whole<W: Write>(
    out: &mut W,
    head: &ResponseHead,
    body: &[u8],
    die_after: Option<u64>,
) -> io::Result<Sent> {
    let n = clamp(body.len(), die_after);
    let mut buf = head.to_bytes();
    if n <= COALESCE_LIMIT {
        buf.extend_from_slice(&body[..n]);
        out.write_all(&buf)?;
    } else {
        out.write_all(&buf)?;
        out.write_all(&body[..n])?;
    }
    out.flush()?;
    Ok(Sent {
        body_bytes: n as u64,
        aborted: die_after.is_some(),
    })
}

/// Writes `head`, then each part as one chunk (encoded, flushed) at its
/// time, then the terminator. The head goes out with the first part unless
/// that part has to wait.
fn send_paced<W: Write>(
    out: &mut W,
    head: &ResponseHead,
    parts: Vec<(When, &[u8])>,
    encoding: Encoding,
    limits: Limits,
) -> io::Result<Sent> {
    let start = Instant::now();
    let mut encoder = Some(StreamEncoder::new(encoding));
    let mut truncate_left = limits.truncate.unwrap_or(u64::MAX);
    let mut die_left = limits.die_after;
    let mut sent = 0u64;
    let mut buf = head.to_bytes();
    if die_left == Some(0) {
        out.write_all(&buf)?;
        out.flush()?;
        return Ok(Sent {
            body_bytes: 0,
            aborted: true,
        });
    }
    let last = parts.len() - 1;
    for (i, (when, part)) in parts.iter().enumerate() {
        let wait = match *when {
            When::Now => Duration::ZERO,
            When::After(pause) => pause,
            When::At(offset) => offset.saturating_sub(start.elapsed()),
        };
        if !wait.is_zero() {
            if !buf.is_empty() {
                out.write_all(&buf)?;
                out.flush()?;
                buf.clear();
            }
            thread::sleep(wait);
        }
        let encoded = match encoder.take() {
            Some(e) if i == last => e.finish(part)?,
            Some(mut e) => {
                let out = e.push(part)?;
                encoder = Some(e);
                out
            }
            None => Vec::new(),
        };
        let len = clamp(encoded.len(), Some(truncate_left));
        truncate_left -= len as u64;
        let data = &encoded[..len];
        if data.is_empty() {
            if !buf.is_empty() {
                out.write_all(&buf)?;
                out.flush()?;
                buf.clear();
            }
            continue;
        }
        buf.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        if let Some(left) = die_left {
            if (left as usize) < data.len() {
                // Cut inside this chunk: declared size, fewer bytes.
                buf.extend_from_slice(&data[..left as usize]);
                out.write_all(&buf)?;
                out.flush()?;
                return Ok(Sent {
                    body_bytes: sent + left,
                    aborted: true,
                });
            }
        }
        buf.extend_from_slice(data);
        buf.extend_from_slice(b"\r\n");
        out.write_all(&buf)?;
        out.flush()?;
        buf.clear();
        sent += data.len() as u64;
        if let Some(left) = die_left.as_mut() {
            *left -= data.len() as u64;
            if *left == 0 {
                return Ok(Sent {
                    body_bytes: sent,
                    aborted: true,
                });
            }
        }
    }
    if !buf.is_empty() {
        out.write_all(&buf)?;
    }
    if die_left.is_some() {
        // die_after larger than the body: still die before the terminator.
        out.flush()?;
        return Ok(Sent {
            body_bytes: sent,
            aborted: true,
        });
    }
    out.write_all(b"0\r\n\r\n")?;
    out.flush()?;
    Ok(Sent {
        body_bytes: sent,
        aborted: false,
    })
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
    use std::time::Duration;

    fn drip(chunks: usize) -> Drip {
        Drip {
            delay: Duration::ZERO,
            chunks,
        }
    }

    /// Splits `raw` after the head and returns (head text, body bytes).
    fn split_response(raw: &[u8]) -> (String, &[u8]) {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        (
            String::from_utf8_lossy(&raw[..end]).into_owned(),
            &raw[end..],
        )
    }

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

    #[test]
    fn whole_body_truncate_and_die() {
        let body = Arc::new(b"0123456789".to_vec());
        let mut out = Vec::new();
        let limits = Limits {
            truncate: Some(4),
            die_after: None,
        };
        let sent = send(
            &mut out,
            ResponseHead::new(200),
            Payload::Whole(body.clone()),
            limits,
            false,
        )
        .unwrap();
        let (head, rest) = split_response(&out);
        assert!(head.contains("Content-Length: 4\r\n"));
        assert_eq!(rest, b"0123");
        assert!(!sent.aborted);

        let mut out = Vec::new();
        let limits = Limits {
            truncate: None,
            die_after: Some(3),
        };
        let sent = send(
            &mut out,
            ResponseHead::new(200),
            Payload::Whole(body),
            limits,
            false,
        )
        .unwrap();
        let (head, rest) = split_response(&out);
        assert!(head.contains("Content-Length: 10\r\n"));
        assert_eq!(rest, b"012");
        assert!(sent.aborted);
    }

    #[test]
    fn drip_frames_chunks_and_dies_mid_chunk() {
        let plain = Arc::new(b"<head></head>abcdefghij".to_vec());
        let payload = |enc| Payload::Drip {
            plain: plain.clone(),
            encoding: enc,
            drip: drip(2),
        };
        let mut out = Vec::new();
        send(
            &mut out,
            ResponseHead::new(200),
            payload(Encoding::Identity),
            Limits::default(),
            false,
        )
        .unwrap();
        let (head, rest) = split_response(&out);
        assert!(head.contains("Transfer-Encoding: chunked\r\n"));
        assert!(!head.contains("Content-Length"));
        assert_eq!(
            rest,
            b"d\r\n<head></head>\r\n5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\n"
        );

        let mut out = Vec::new();
        let limits = Limits {
            truncate: None,
            die_after: Some(15),
        };
        let sent = send(
            &mut out,
            ResponseHead::new(200),
            payload(Encoding::Identity),
            limits,
            false,
        )
        .unwrap();
        assert_eq!(split_response(&out).1, b"d\r\n<head></head>\r\n5\r\nab");
        assert_eq!(
            sent,
            Sent {
                body_bytes: 15,
                aborted: true
            }
        );

        let mut out = Vec::new();
        let limits = Limits {
            truncate: Some(15),
            die_after: None,
        };
        send(
            &mut out,
            ResponseHead::new(200),
            payload(Encoding::Identity),
            limits,
            false,
        )
        .unwrap();
        assert_eq!(
            split_response(&out).1,
            b"d\r\n<head></head>\r\n2\r\nab\r\n0\r\n\r\n"
        );
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

    #[test]
    fn replay_writes_each_recorded_chunk_at_its_time() {
        /// Records when each write happened.
        struct Clock(Instant, Vec<(Duration, Vec<u8>)>);
        impl Write for Clock {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.1.push((self.0.elapsed(), b.to_vec()));
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let plain = Arc::new(b"<head></head>abcdefghij".to_vec());
        let chunks = timed(&[(13, 0), (4, 40), (6, 80)]);
        for timing in [true, false] {
            let mut out = Clock(Instant::now(), Vec::new());
            let payload = Payload::Replay {
                plain: plain.clone(),
                encoding: Encoding::Identity,
                chunks: chunks.clone(),
                timing,
            };
            send(
                &mut out,
                ResponseHead::new(200),
                payload,
                Limits::default(),
                false,
            )
            .unwrap();
            let bytes: Vec<u8> = out.1.iter().flat_map(|(_, b)| b.clone()).collect();
            let (head, body) = split_response(&bytes);
            assert!(head.contains("Transfer-Encoding: chunked\r\n"));
            assert_eq!(
                body,
                b"d\r\n<head></head>\r\n4\r\nabcd\r\n6\r\nefghij\r\n0\r\n\r\n"
            );
            let at = |needle: &[u8]| {
                out.1
                    .iter()
                    .find(|(_, b)| b.windows(needle.len()).any(|w| w == needle))
                    .unwrap()
                    .0
            };
            if timing {
                assert!(at(b"abcd") >= Duration::from_millis(40));
                assert!(at(b"efghij") >= Duration::from_millis(80));
            } else {
                assert!(at(b"efghij") < Duration::from_millis(40));
            }
        }
    }

    #[test]
    fn head_only_sends_no_body() {
        let mut out = Vec::new();
        let payload = Payload::Whole(Arc::new(vec![1; 50]));
        send(
            &mut out,
            ResponseHead::new(200),
            payload,
            Limits::default(),
            true,
        )
        .unwrap();
        let (head, rest) = split_response(&out);
        assert!(head.contains("Content-Length: 50\r\n"));
        assert!(rest.is_empty());
    }
}
