//! The UTF-16 rule: a body that starts with a UTF-16 byte order mark is UTF-16 whatever its
//! headers say (browsers sniff the mark first), and rewriting its bytes as ASCII would garble
//! it, so it passes through unchanged. The rule is a [`Gate`]: a rewriter behind
//! [`utf16_guard`] sees a body only if the body does not start with a mark.

use crate::body::stage::{BodyStage, Gate, Guard};

/// UTF-16 byte order marks, little- and big-endian.
const UTF16_BOMS: [[u8; 2]; 2] = [[0xff, 0xfe], [0xfe, 0xff]];

/// Admits a body unless its first two bytes are a UTF-16 byte order mark.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NotUtf16;

impl Gate for NotUtf16 {
    fn head_len(&self) -> usize {
        2
    }

    fn admits(&self, head: &[u8]) -> bool {
        !UTF16_BOMS.iter().any(|bom| head == bom)
    }
}

/// `rewriter` behind the UTF-16 rule. Its report is `None` for a body that passed through
/// because it is UTF-16 (the rewriter never saw a byte).
pub(crate) fn utf16_guard<S: BodyStage>(rewriter: S) -> Guard<NotUtf16, S> {
    Guard::new(NotUtf16, rewriter)
}
