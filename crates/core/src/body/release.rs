//! When output bytes leave for the client: one owner for the decision.
//!
//! The pipeline hands its encoded output to the client body in batches of at least
//! [`BATCH_BYTES`] (never per stage fragment); the client body holds it. [`Release`] then
//! decides, from events the adapter reports, when what is held leaves:
//!
//! - **held bytes reach [`HOLD_MAX_BYTES`]**: they leave now, whatever the origin does, so
//!   memory stays bounded ([`Release::must_send`]);
//! - **a body that streams whatever we do** (its `Content-Length` is past [`HOLD_MAX_BYTES`], so
//!   it can never leave in one write) sends its first bytes once [`FIRST_SEND_AFTER_BYTES`] of it
//!   have been read, however ready the origin is: its first byte waits for one read's rewriting,
//!   not for [`HOLD_MAX_BYTES`] of output; later writes keep the large bound;
//! - **after each origin read** ([`Release::after_read`]), if the origin has more ready (its
//!   next read would not wait: more bytes, or the end), or every byte its `Content-Length`
//!   promised is in: keep holding. Otherwise the origin would make us wait: send everything
//!   so far ([`Step::Send`]);
//! - **at the end**, if nothing has left yet, the whole output goes as one response with a
//!   `Content-Length`; else the rest, then the stream's end. (The adapter's client body knows
//!   which; nothing else is decided there.)
//!
//! Why hold at all: a response sent in one write does not pay the ~40 ms that Nagle's
//! algorithm and a delayed acknowledgement add to a small second write on a kept-alive
//! connection (see the adapter's `downstream` module for the measurements). Why not longer:
//! bytes never wait on the origin.
//!
//! Sending everything so far ends a compressed block (a sync flush), which costs a few bytes
//! and the compression context. So with gzip / deflate / br a send flushes the encoder only
//! while page bytes have earned it: each flush spends [`FLUSH_UNIT`] bytes of credit, page
//! bytes encoded earn it, up to [`FLUSH_CREDIT_MAX`], which is also where a body starts. Small
//! chunks after a pause still leave at once (the rows of a few bytes a streaming origin sends on
//! their own), but an origin that trickles a byte per chunk gets one flush per [`FLUSH_UNIT`] bytes
//! of page, not one per byte; what a send without a flush leaves behind goes with the next.
//!
//! Only a body with a `Content-Length` is asked whether it has more ready: under Viceroy 0.22,
//! asking consumes a read error waiting in the body (the next read then reports a clean end),
//! and only a length lets the adapter catch that ([`Release::origin_short`]). A chunked body
//! counts as "would make us wait" after every read.

use crate::content::Codec;

/// Least output the pipeline collects before it writes to the client body: one host call per
/// batch, not per stage fragment. The client body holds what it is given.
pub const BATCH_BYTES: usize = 8192;

/// Most output bytes held while the origin keeps delivering. A page whose output fits, from
/// an origin that sends it at once, leaves in one write with a `Content-Length`; a larger page
/// leaves in writes of at least this size, each several full TCP segments, which Nagle's
/// algorithm does not hold. Measured on the 1 MiB page with `wrk` (keep-alive): 256 KiB served
/// 77–100 req/s at 8 connections and 64–77 at 64, against 71–95 and 52–56 with a 2 MiB bound
/// (the whole page held) and 68–83 / 50–51 buffered.
pub const HOLD_MAX_BYTES: usize = 256 * 1024;

/// Origin bytes after which a body that streams whatever we do (a `Content-Length` past
/// [`HOLD_MAX_BYTES`]) sends its first bytes: the adapter's first read of such a body is this
/// size, so its first byte waits for 16 KiB to be read and rewritten, about what a 16 KB page
/// waits for. A page whose whole output fits in [`HOLD_MAX_BYTES`] still leaves in one write.
pub const FIRST_SEND_AFTER_BYTES: u64 = 16 * 1024;

/// Page bytes a compressed flush costs, on average. Measured on the demo site's home page
/// gzipped and sent one byte per chunk: one flush per chunk made the output 4.6× the origin's,
/// one per 512 bytes 1.23×, one per 1 KiB 1.12× (the same as 256-byte origin chunks).
pub const FLUSH_UNIT: usize = 1024;

/// Most flush credit saved up, and the credit a body starts with: the first few chunks of a
/// response, however small, always leave at once.
pub const FLUSH_CREDIT_MAX: usize = 8 * FLUSH_UNIT;

/// What the pipeline has done so far, as [`Release`] needs it
/// (`BodyPipeline::progress`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Rewritten page bytes handed to the encoder so far.
    pub page_bytes: u64,
    /// Whether the encoder holds page bytes a flush would push out.
    pub unflushed: bool,
}

/// What to do after an origin read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Keep holding: the origin has more for us at once.
    Hold,
    /// Send everything held now. `flush`: first make the pipeline push out all it has
    /// (`BodyPipeline::flush`); without it, send only what the client body already holds.
    Send {
        /// Flush the pipeline (and its encoder) first.
        flush: bool,
    },
}

/// Decides when output leaves for the client; see the module docs. Pure: the adapter reports
/// what happened and carries out the [`Step`].
#[derive(Debug, Clone)]
pub struct Release {
    /// The origin body's `Content-Length`, if it sent one.
    length: Option<u64>,
    /// Origin bytes read so far.
    read: u64,
    /// Whether the output is compressed, so that a flush costs.
    compressed: bool,
    /// Page bytes a flush may still be paid with.
    credit: usize,
    /// [`Progress::page_bytes`] when credit was last earned.
    earned_at: u64,
    /// Whether a [`Step::Send`] was decided yet.
    sent: bool,
}

impl Release {
    /// The decision for one response body, re-encoded with `codec`, from an origin that
    /// promised `length` bytes, if it said.
    pub fn new(codec: Codec, length: Option<u64>) -> Self {
        Release {
            length,
            read: 0,
            compressed: codec != Codec::Identity,
            credit: FLUSH_CREDIT_MAX,
            earned_at: 0,
            sent: false,
        }
    }

    /// The origin body's `Content-Length`, if it sent one.
    pub fn origin_length(&self) -> Option<u64> {
        self.length
    }

    /// Whether a body of `length` origin bytes (its `Content-Length`) streams whatever is
    /// done: past [`HOLD_MAX_BYTES`] it can never leave in one write, so its first bytes leave
    /// once [`FIRST_SEND_AFTER_BYTES`] are in, and its first read need be no larger.
    pub fn streams_anyway(length: Option<u64>) -> bool {
        length.is_some_and(|len| len > HOLD_MAX_BYTES as u64)
    }

    /// Whether `held` output bytes must leave now, however ready the origin is.
    pub fn must_send(held: usize) -> bool {
        held >= HOLD_MAX_BYTES
    }

    /// An origin read of `n` bytes has gone through the pipeline, which now stands at
    /// `progress`. `origin_has_more_ready` is asked only when the answer matters and is safe to
    /// ask (a body with a `Content-Length` not yet all in; module docs).
    pub fn after_read(
        &mut self,
        n: usize,
        progress: Progress,
        origin_has_more_ready: impl FnOnce() -> bool,
    ) -> Step {
        self.read += n as u64;
        let earned = progress.page_bytes.saturating_sub(self.earned_at);
        self.earned_at = progress.page_bytes;
        self.credit = usize::try_from(earned)
            .unwrap_or(usize::MAX)
            .saturating_add(self.credit)
            .min(FLUSH_CREDIT_MAX);
        let ready = match self.length {
            // Every promised byte is in: what follows is the end, not a wait.
            Some(len) if self.read >= len => true,
            // Streams whatever we do: its first bytes need not wait for the bound.
            Some(_)
                if !self.sent
                    && Self::streams_anyway(self.length)
                    && self.read >= FIRST_SEND_AFTER_BYTES =>
            {
                false
            }
            Some(_) => origin_has_more_ready(),
            None => false,
        };
        if ready {
            return Step::Hold;
        }
        self.sent = true;
        let flush = if !self.compressed {
            true
        } else if progress.unflushed && self.credit >= FLUSH_UNIT {
            self.credit -= FLUSH_UNIT;
            true
        } else {
            false
        };
        Step::Send { flush }
    }

    /// At the origin body's end: `Some((read, promised))` if it delivered fewer bytes than its
    /// `Content-Length` promised, which must not be presented as a complete body.
    pub fn origin_short(&self) -> Option<(u64, u64)> {
        self.length
            .filter(|&len| self.read < len)
            .map(|len| (self.read, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(page_bytes: u64, unflushed: bool) -> Progress {
        Progress {
            page_bytes,
            unflushed,
        }
    }

    #[test]
    fn a_chunked_body_sends_after_every_read_and_is_never_asked() {
        let mut r = Release::new(Codec::Identity, None);
        for i in 1..5 {
            let step = r.after_read(10, progress(10 * i, true), || panic!("asked"));
            assert_eq!(step, Step::Send { flush: true });
        }
        assert_eq!(r.origin_short(), None);
    }

    #[test]
    fn a_body_with_a_length_holds_while_more_is_ready_and_at_its_end() {
        let mut r = Release::new(Codec::Identity, Some(30));
        assert_eq!(r.after_read(10, progress(10, true), || true), Step::Hold);
        assert_eq!(
            r.after_read(10, progress(20, true), || false),
            Step::Send { flush: true }
        );
        // All promised bytes in: the end follows, so hold without asking.
        assert_eq!(
            r.after_read(10, progress(30, true), || panic!("asked")),
            Step::Hold
        );
        assert_eq!(r.origin_short(), None);
    }

    #[test]
    fn a_body_that_streams_anyway_sends_its_first_bytes_after_one_read() {
        let first = FIRST_SEND_AFTER_BYTES as usize;
        let large = HOLD_MAX_BYTES as u64 + 1;
        // Past the bound: the first read of FIRST_SEND_AFTER_BYTES sends, unasked; then the
        // origin's readiness decides again.
        let mut r = Release::new(Codec::Identity, Some(large * 4));
        assert_eq!(
            r.after_read(first - 1, progress(1, true), || true),
            Step::Hold
        );
        assert_eq!(
            r.after_read(1, progress(2, true), || panic!("asked")),
            Step::Send { flush: true }
        );
        assert_eq!(r.after_read(first, progress(3, true), || true), Step::Hold);
        // A compressed body flushes for it (the credit starts full).
        let mut r = Release::new(Codec::Gzip, Some(large));
        assert_eq!(
            r.after_read(first, progress(first as u64, true), || true),
            Step::Send { flush: true }
        );
        // A body that fits in the bound is held whole while the origin has more.
        let mut r = Release::new(Codec::Identity, Some(HOLD_MAX_BYTES as u64));
        for _ in 0..3 {
            assert_eq!(r.after_read(first, progress(1, true), || true), Step::Hold);
        }
        // A first send the origin's pause already made is the first send.
        let mut r = Release::new(Codec::Identity, Some(large * 4));
        assert_eq!(
            r.after_read(10, progress(10, true), || false),
            Step::Send { flush: true }
        );
        assert_eq!(r.after_read(first, progress(20, true), || true), Step::Hold);
    }

    #[test]
    fn a_short_body_is_caught() {
        let mut r = Release::new(Codec::Identity, Some(30));
        r.after_read(10, progress(10, true), || true);
        assert_eq!(r.origin_short(), Some((10, 30)));
    }

    #[test]
    fn the_hold_is_bounded() {
        assert!(!Release::must_send(HOLD_MAX_BYTES - 1));
        assert!(Release::must_send(HOLD_MAX_BYTES));
    }

    #[test]
    fn compressed_flushes_are_paid_with_page_bytes() {
        let mut r = Release::new(Codec::Gzip, None);
        let mut page = 0;
        let mut flushes = 0;
        // A byte of page per read: the starting credit pays 8 flushes, then one per KiB. The
        // first byte earns nothing (the credit starts full).
        for _ in 0..(16 * FLUSH_UNIT) {
            page += 1;
            if r.after_read(1, progress(page, true), || false) == (Step::Send { flush: true }) {
                flushes += 1;
            }
        }
        assert_eq!(
            flushes,
            (FLUSH_CREDIT_MAX + 16 * FLUSH_UNIT - 1) / FLUSH_UNIT
        );
        // Nothing unflushed: nothing to pay for, and the credit is kept.
        let mut r = Release::new(Codec::Brotli, None);
        assert_eq!(
            r.after_read(1, progress(0, false), || false),
            Step::Send { flush: false }
        );
        assert_eq!(r.credit, FLUSH_CREDIT_MAX);
    }
}
