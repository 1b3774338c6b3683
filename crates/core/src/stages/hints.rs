//! The early-hints head reader: the first stage of an HTML page that learns its hints. It reads
//! the origin's head with [`HeadScanner`] (the pure part, in `crate::hints`), before the
//! rewrite, and never changes a byte.

use crate::body::stage::BodyStage;
use crate::hints::HeadScanner;
use crate::url_rewrite::UrlRule;

/// The head scanner as a body stage (the first of an HTML page's stages): it passes every
/// byte on unchanged and reports the head's hints at the end, URLs rewritten first-party
/// (unbounded here; [`Hints`](crate::hints::Hints) bounds them). Once the head is complete
/// it [passes through](BodyStage::passes_through), so the stages after it get the rest of
/// the page directly and the scanner costs nothing more.
pub(crate) struct HintsStage {
    scanner: HeadScanner,
    rule: UrlRule,
}

impl HintsStage {
    /// A stage learning the hints of a page whose URLs `rule` rewrites.
    pub(crate) fn new(rule: UrlRule) -> Self {
        HintsStage {
            scanner: HeadScanner::new(),
            rule,
        }
    }
}

impl BodyStage for HintsStage {
    type Report = Vec<String>;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.scanner.feed(input);
        out.extend_from_slice(input);
    }

    fn finish(self, _out: &mut Vec<u8>) -> Vec<String> {
        self.scanner.finish(&self.rule)
    }

    fn passes_through(&self) -> bool {
        self.scanner.is_done()
    }
}
