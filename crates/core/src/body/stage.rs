//! The contract every body stage keeps, and how stages are chained.
//!
//! A stage is pushed the body's plain (decoded) bytes in pieces of any size, split anywhere, and
//! appends the output it has decided to the buffer it is given. Its output must not depend on
//! where the input was split. It may hold bytes it cannot decide yet (the end of what may be a
//! URL, an open Flight `T` row), and [`BodyStage::finish`], which consumes it, writes them.
//!
//! A stage never fails: when it cannot rewrite a part of the body, it passes that part's
//! original bytes through and says so in its [`StageReport`]. Errors belong to the decoder,
//! the encoder and the client, which the pipeline handles; a stage only degrades.
//!
//! Stages compose with [`Chain::then`]: each one's output is the next one's input. The
//! pipeline knows stages only through this trait.

use crate::body::inject::Injected;
use crate::body::rsc::RscReport;
use crate::first_party::creative::CreativeReport;

/// A streaming body rewriter; see the module docs.
pub(crate) trait BodyStage {
    /// Takes the next `input` bytes of the body and appends what is decided to `out`.
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>);

    /// Ends the body: appends everything still held to `out`, and reports what happened.
    fn finish(self: Box<Self>, out: &mut Vec<u8>) -> StageReport;

    /// Whether the stage holds nothing and will write every later input unchanged: a chain
    /// then hands the stage before it `out` directly (or, for a stage at the start, the stage
    /// after it the input), so the rest of the body is not copied through this one. Once
    /// `true`, it stays `true`. Its `finish` is still called.
    fn passes_through(&self) -> bool {
        false
    }
}

/// What a stage (or a chain of them) did with a body. The default is "rewritten, nothing to
/// say": every byte went through the stage's rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StageReport {
    /// The whole body passed through unchanged, and why (it is not text the rule can read).
    pub passed_through: Option<&'static str>,
    /// Rewriting stopped part-way and the rest passed through unchanged: why (lol_html's
    /// error). The output is still a valid page.
    pub bail_out: Option<String>,
    /// The Next.js Flight rewriting: the most bytes it held back at once, and why it degraded
    /// to passing original bytes, if it did.
    pub rsc: RscReport,
    /// For the HTML stage: whether it needed lol_html's view of the page's structure.
    pub structured: Option<bool>,
    /// For the injection stage: whether the script's tag went into the page, or why not.
    pub injected: Option<Injected>,
    /// For a first-party creative: what its rewriting did.
    pub creative: Option<CreativeReport>,
    /// For the early-hints stage: the hints in the page's head (`crate::hints`).
    pub hints: Option<Vec<String>>,
}

impl StageReport {
    /// Both reports in one, for stages that ran one after the other: the first reason given
    /// for each kind of degradation, and the most bytes held.
    fn and(self, later: StageReport) -> StageReport {
        StageReport {
            passed_through: self.passed_through.or(later.passed_through),
            bail_out: self.bail_out.or(later.bail_out),
            rsc: RscReport {
                peak_held: self.rsc.peak_held.max(later.rsc.peak_held),
                degraded: self.rsc.degraded.or(later.rsc.degraded),
            },
            structured: self.structured.or(later.structured),
            injected: self.injected.or(later.injected),
            creative: self.creative.or(later.creative),
            hints: self.hints.or(later.hints),
        }
    }
}

/// Stages run one after the other, each on the previous one's output.
pub(crate) struct Chain {
    stages: Vec<Box<dyn BodyStage>>,
    /// Output of every stage but the last, which is the next one's input; reused.
    between: Vec<Vec<u8>>,
}

impl Chain {
    /// A chain of one stage.
    pub(crate) fn new(first: impl BodyStage + 'static) -> Self {
        Chain {
            stages: vec![Box::new(first)],
            between: Vec::new(),
        }
    }

    /// Adds `stage` after the stages so far: it sees their output.
    pub(crate) fn then(mut self, stage: impl BodyStage + 'static) -> Self {
        self.stages.push(Box::new(stage));
        // Sized for a typical decoded piece, so the first writes do not grow it step by step.
        self.between.push(Vec::with_capacity(16 * 1024));
        self
    }
}

impl BodyStage for Chain {
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        // Stages that pass everything through are skipped: at the end, the one before them
        // writes to `out`; at the start, the one after them reads `input`.
        let mut last = self.between.len();
        while last > 0 && self.stages[last].passes_through() {
            last -= 1;
        }
        let mut first = 0;
        while first < last && self.stages[first].passes_through() {
            first += 1;
        }
        for (i, stage) in self
            .stages
            .iter_mut()
            .enumerate()
            .take(last + 1)
            .skip(first)
        {
            let (done, later) = self.between.split_at_mut(i);
            let input: &[u8] = match done.last() {
                Some(previous) if i > first => previous,
                _ => input,
            };
            match later.first_mut() {
                Some(next) if i < last => {
                    next.clear();
                    if !input.is_empty() {
                        stage.write(input, next);
                    }
                }
                _ => {
                    if !input.is_empty() {
                        stage.write(input, out);
                    }
                }
            }
        }
    }

    fn finish(self: Box<Self>, out: &mut Vec<u8>) -> StageReport {
        let Chain {
            stages,
            mut between,
        } = *self;
        let mut report = StageReport::default();
        let mut carried: Vec<u8> = Vec::new();
        let count = stages.len();
        for (i, mut stage) in stages.into_iter().enumerate() {
            // What the previous stage wrote at its end is this one's last input.
            let target = if i + 1 == count {
                &mut *out
            } else {
                let next = &mut between[i];
                next.clear();
                next
            };
            if !carried.is_empty() {
                stage.write(&carried, target);
            }
            report = report.and(stage.finish(target));
            carried = if i + 1 == count {
                Vec::new()
            } else {
                std::mem::take(&mut between[i])
            };
        }
        report
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
        fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
            self.seen.set(self.seen.get() + input.len());
            out.extend_from_slice(input);
        }
        fn finish(self: Box<Self>, _: &mut Vec<u8>) -> StageReport {
            StageReport::default()
        }
        fn passes_through(&self) -> bool {
            self.seen.get() >= self.until
        }
    }

    /// Upper-cases, holding the last byte until the next write (so holding matters).
    #[derive(Default)]
    struct Upper {
        held: Option<u8>,
    }

    impl BodyStage for Upper {
        fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
            out.extend(self.held.take());
            let (last, rest) = input.split_last().expect("never given an empty input");
            out.extend(rest.iter().map(u8::to_ascii_uppercase));
            self.held = Some(last.to_ascii_uppercase());
        }
        fn finish(self: Box<Self>, out: &mut Vec<u8>) -> StageReport {
            out.extend(self.held);
            StageReport::default()
        }
    }

    /// A watcher at the start and one at the end of a chain stop seeing the body once they
    /// pass through, and the output is the same at every cut.
    #[test]
    fn stages_that_pass_through_are_skipped_at_both_ends() {
        let body = b"abcdefghijklmnopqrstuvwxyz";
        for cut in 0..=body.len() {
            let (front, back) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
            let chain = Chain::new(Watcher {
                seen: Rc::clone(&front),
                until: 3,
            })
            .then(Upper::default())
            .then(Watcher {
                seen: Rc::clone(&back),
                until: 2,
            });
            let mut stage: Box<dyn BodyStage> = Box::new(chain);
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
}
