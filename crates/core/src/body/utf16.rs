//! A guard in front of a rewriter: a body that starts with a UTF-16 byte order mark is UTF-16
//! whatever its headers say (browsers sniff the mark first), and rewriting its bytes as ASCII
//! would garble it, so it passes through unchanged.

use crate::body::stage::{BodyStage, StageReport};

/// UTF-16 byte order marks, little- and big-endian.
const UTF16_BOMS: [[u8; 2]; 2] = [[0xff, 0xfe], [0xfe, 0xff]];

/// Why a marked body passed through, as the report says it.
pub(crate) const UTF16_PASSED_THROUGH: &str = "UTF-16 byte order mark";

/// Holds the first two bytes until they tell whether the body is UTF-16, then hands every
/// byte to the rewriter, or to nobody.
pub(crate) struct Utf16Guard<S> {
    rewriter: S,
    /// The first bytes, until there are two; `None` once decided.
    head: Option<Vec<u8>>,
    utf16: bool,
}

impl<S: BodyStage> Utf16Guard<S> {
    pub(crate) fn new(rewriter: S) -> Self {
        Utf16Guard {
            rewriter,
            head: Some(Vec::with_capacity(2)),
            utf16: false,
        }
    }

    fn pass(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if self.utf16 {
            out.extend_from_slice(input);
        } else if !input.is_empty() {
            self.rewriter.write(input, out);
        }
    }
}

impl<S: BodyStage> BodyStage for Utf16Guard<S> {
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let Some(head) = self.head.as_mut() else {
            return self.pass(input, out);
        };
        let take = input.len().min(2 - head.len());
        head.extend_from_slice(&input[..take]);
        if head.len() < 2 {
            return;
        }
        let head = self.head.take().unwrap_or_default();
        self.utf16 = UTF16_BOMS.iter().any(|bom| head[..] == bom[..]);
        self.pass(&head, out);
        self.pass(&input[take..], out);
    }

    fn finish(mut self: Box<Self>, out: &mut Vec<u8>) -> StageReport {
        if let Some(head) = self.head.take() {
            // A body shorter than a byte order mark.
            self.pass(&head, out);
        }
        if self.utf16 {
            // The rewriter never saw a byte: there is nothing for it to end.
            return StageReport {
                passed_through: Some(UTF16_PASSED_THROUGH),
                ..StageReport::default()
            };
        }
        Box::new(self.rewriter).finish(out)
    }
}
