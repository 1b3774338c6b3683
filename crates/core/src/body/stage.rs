//! The contract every body stage keeps, and the generic ways to combine stages.
//!
//! A stage is pushed the body's plain (decoded) bytes in pieces of any size, split anywhere, and
//! appends the output it has decided to the buffer it is given. Its output must not depend on
//! where the input was split. It may hold bytes it cannot decide yet (the end of what may be a
//! match), and [`BodyStage::finish`], which consumes it, writes them.
//!
//! A stage never fails: when it cannot rewrite a part of the body, it passes that part's
//! original bytes through and says so in its report. Errors belong to the decoder, the encoder
//! and the client, which the pipeline handles; a stage only degrades.
//!
//! Each stage says what it did in a report of its own type ([`BodyStage::Report`]); the engine
//! never looks inside one, it hands the composed stages' report back to whoever composed them.
//! The combinators here know nothing of any stage either:
//!
//! * [`BodyStage::then`]: two stages one after the other, each on the previous one's output;
//!   the report is the pair of theirs;
//! * `Option<S>`: a stage that may be absent (`None` passes every byte through and reports
//!   `None`);
//! * [`Guard`]: a stage that sees the body only if a [`Gate`] admits the body's first bytes;
//! * [`BodyStage::map_report`]: the same stage with its report turned into another type.

/// A streaming body rewriter; see the module docs.
pub trait BodyStage {
    /// What the stage says about the body once it has seen all of it.
    type Report;

    /// Takes the next `input` bytes of the body and appends what is decided to `out`.
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>);

    /// Ends the body: appends everything still held to `out`, and reports what happened.
    fn finish(self, out: &mut Vec<u8>) -> Self::Report;

    /// Whether the stage holds nothing and will write every later input unchanged: two stages
    /// composed with [`then`](BodyStage::then) then skip it (the other one reads the input or
    /// writes the output directly), so the rest of the body is not copied through this one.
    /// Once `true`, it stays `true`. Its `finish` is still called.
    fn passes_through(&self) -> bool {
        false
    }

    /// This stage, then `next` on its output. Reports `(this stage's, next's)`.
    fn then<B: BodyStage>(self, next: B) -> Then<Self, B>
    where
        Self: Sized,
    {
        Then {
            first: self,
            second: next,
            // Sized at its first use by the first piece (`room`).
            between: Vec::new(),
        }
    }

    /// This stage, its report turned into another by `map` at the end.
    fn map_report<R, F: FnOnce(Self::Report) -> R>(self, map: F) -> MapReport<Self, F>
    where
        Self: Sized,
    {
        MapReport { stage: self, map }
    }
}

/// Two stages one after the other ([`BodyStage::then`]).
#[derive(Debug)]
pub struct Then<A, B> {
    first: A,
    second: B,
    /// The first stage's output, which is the second one's input; reused.
    between: Vec<u8>,
}

impl<A: BodyStage, B: BodyStage> BodyStage for Then<A, B> {
    type Report = (A::Report, B::Report);

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        // A stage that passes everything through is skipped: the other one reads `input` or
        // writes to `out` directly.
        if self.first.passes_through() {
            if !input.is_empty() {
                self.second.write(input, out);
            }
        } else if self.second.passes_through() {
            if !input.is_empty() {
                self.first.write(input, out);
            }
        } else {
            self.between.clear();
            if !input.is_empty() {
                super::room::at_first_use(&mut self.between, input.len(), super::room::PIECE_ROOM);
                self.first.write(input, &mut self.between);
            }
            if !self.between.is_empty() {
                self.second.write(&self.between, out);
            }
        }
    }

    fn finish(self, out: &mut Vec<u8>) -> Self::Report {
        let Then {
            first,
            mut second,
            mut between,
        } = self;
        // What the first stage writes at its end is the second one's last input.
        between.clear();
        let first_report = first.finish(&mut between);
        if !between.is_empty() {
            second.write(&between, out);
        }
        (first_report, second.finish(out))
    }

    fn passes_through(&self) -> bool {
        self.first.passes_through() && self.second.passes_through()
    }
}

/// A stage that may be absent: `None` writes its input unchanged, passes through from the
/// start, and reports `None`.
impl<S: BodyStage> BodyStage for Option<S> {
    type Report = Option<S::Report>;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match self {
            Some(stage) => stage.write(input, out),
            None => out.extend_from_slice(input),
        }
    }

    fn finish(self, out: &mut Vec<u8>) -> Self::Report {
        self.map(|stage| stage.finish(out))
    }

    fn passes_through(&self) -> bool {
        self.as_ref().is_none_or(BodyStage::passes_through)
    }
}

/// A stage whose report is turned into another at the end ([`BodyStage::map_report`]).
#[derive(Debug)]
pub struct MapReport<S, F> {
    stage: S,
    map: F,
}

impl<S: BodyStage, R, F: FnOnce(S::Report) -> R> BodyStage for MapReport<S, F> {
    type Report = R;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.stage.write(input, out);
    }

    fn finish(self, out: &mut Vec<u8>) -> R {
        (self.map)(self.stage.finish(out))
    }

    fn passes_through(&self) -> bool {
        self.stage.passes_through()
    }
}

/// What decides, from a body's first bytes, whether a [`Guard`]'s stage sees the body.
pub trait Gate {
    /// How many bytes the decision needs. A body shorter than that is decided on all of it.
    fn head_len(&self) -> usize;

    /// Whether a body starting with `head` goes to the stage; `false` passes the whole body
    /// through unchanged.
    fn admits(&self, head: &[u8]) -> bool;
}

/// A stage behind a [`Gate`]: the body's first [`Gate::head_len`] bytes are held until the
/// gate decides, then every byte goes to the stage, or to nobody (the body passes through
/// unchanged). Reports `None` when the gate turned the body away: the stage never saw a byte
/// and is not finished.
#[derive(Debug)]
pub struct Guard<G, S> {
    gate: G,
    stage: S,
    /// The first bytes, until the gate can decide; `None` once decided.
    head: Option<Vec<u8>>,
    admitted: bool,
}

impl<G: Gate, S: BodyStage> Guard<G, S> {
    /// `stage`, behind `gate`.
    pub fn new(gate: G, stage: S) -> Self {
        let head = Vec::with_capacity(gate.head_len());
        Guard {
            gate,
            stage,
            head: Some(head),
            admitted: false,
        }
    }

    fn pass(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if !self.admitted {
            out.extend_from_slice(input);
        } else if !input.is_empty() {
            self.stage.write(input, out);
        }
    }

    fn decide(&mut self, head: &[u8], out: &mut Vec<u8>) {
        self.admitted = self.gate.admits(head);
        self.pass(head, out);
    }
}

impl<G: Gate, S: BodyStage> BodyStage for Guard<G, S> {
    type Report = Option<S::Report>;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let Some(head) = self.head.as_mut() else {
            return self.pass(input, out);
        };
        let wanted = self.gate.head_len();
        let take = input.len().min(wanted - head.len());
        head.extend_from_slice(&input[..take]);
        if head.len() < wanted {
            return;
        }
        let head = self.head.take().unwrap_or_default();
        self.decide(&head, out);
        self.pass(&input[take..], out);
    }

    fn finish(mut self, out: &mut Vec<u8>) -> Self::Report {
        if let Some(head) = self.head.take() {
            // A body shorter than the gate's head.
            self.decide(&head, out);
        }
        self.admitted.then(|| self.stage.finish(out))
    }

    fn passes_through(&self) -> bool {
        match self.head {
            Some(_) => false,
            None => !self.admitted || self.stage.passes_through(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Passes bytes on unchanged, counting them, and passes through after `until` bytes.
    struct Watcher {
        seen: Rc<Cell<usize>>,
        until: usize,
    }

    impl BodyStage for Watcher {
        type Report = ();
        fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
            self.seen.set(self.seen.get() + input.len());
            out.extend_from_slice(input);
        }
        fn finish(self, _: &mut Vec<u8>) {}
        fn passes_through(&self) -> bool {
            self.seen.get() >= self.until
        }
    }

    /// Upper-cases, holding the last byte until the next write (so holding matters); reports
    /// how many bytes it wrote.
    #[derive(Default)]
    struct Upper {
        held: Option<u8>,
        written: usize,
    }

    impl BodyStage for Upper {
        type Report = usize;
        fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
            out.extend(self.held.take());
            let (last, rest) = input.split_last().expect("never given an empty input");
            out.extend(rest.iter().map(u8::to_ascii_uppercase));
            self.written += input.len();
            self.held = Some(last.to_ascii_uppercase());
        }
        fn finish(self, out: &mut Vec<u8>) -> usize {
            out.extend(self.held);
            self.written
        }
    }

    /// A watcher at the start and one at the end of a chain stop seeing the body once they
    /// pass through, and the output is the same at every cut.
    #[test]
    fn stages_that_pass_through_are_skipped_at_both_ends() {
        let body = b"abcdefghijklmnopqrstuvwxyz";
        for cut in 0..=body.len() {
            let (front, back) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
            let mut stage = Watcher {
                seen: Rc::clone(&front),
                until: 3,
            }
            .then(Upper::default())
            .then(Watcher {
                seen: Rc::clone(&back),
                until: 2,
            });
            let mut out = Vec::new();
            for piece in [&body[..cut], &body[cut..]] {
                stage.write(piece, &mut out);
            }
            stage.finish(&mut out);
            assert_eq!(out, body.to_ascii_uppercase(), "cut {cut}");
            // The front watcher passes through once the first piece gave it 3 bytes; then the
            // second piece goes straight to `Upper`. The back watcher sees `Upper`'s output
            // (one byte behind) until it has 2, and the held byte at the end (a stage's
            // `finish` always runs): `cut` bytes in all when the first piece was enough.
            let want = if cut >= 3 { cut } else { body.len() };
            assert_eq!(front.get(), want, "front, cut {cut}");
            assert_eq!(back.get(), want, "back, cut {cut}");
        }
    }

    /// Admits a body unless it starts with `!!`.
    struct NoBang;

    impl Gate for NoBang {
        fn head_len(&self) -> usize {
            2
        }
        fn admits(&self, head: &[u8]) -> bool {
            head != b"!!"
        }
    }

    /// Reports come back as the composition's shape: pairs, options, mapped values; a guard
    /// that turns a body away passes it through and reports `None`, at every cut.
    #[test]
    fn reports_follow_the_composition() {
        for (body, want, report) in [
            (&b"!!abc"[..], &b"!!abc"[..], None),
            (b"abc", b"ABC", Some(((), 3))),
            (b"!", b"!", Some(((), 1))),
            (b"", b"", Some(((), 0))),
        ] {
            for cut in 0..=body.len() {
                let seen = Rc::new(Cell::new(0));
                let inner = None::<Upper>
                    .then(Upper::default())
                    .map_report(|(none, n)| {
                        assert_eq!(none, None);
                        n
                    });
                let mut stage = Guard::new(
                    NoBang,
                    Watcher {
                        seen: Rc::clone(&seen),
                        until: usize::MAX,
                    }
                    .then(inner),
                );
                let mut out = Vec::new();
                stage.write(&body[..cut], &mut out);
                stage.write(&body[cut..], &mut out);
                assert_eq!(stage.finish(&mut out), report, "cut {cut}");
                assert_eq!(out, want, "cut {cut}");
            }
        }
    }
}
