//! The text stage: CSS, JavaScript and JSON bodies get the URL rule alone, byte by byte.

use crate::body::stage::BodyStage;
use crate::url_rewrite::{StreamReplacer, UrlRule};

/// The URL rule on a whole body; it holds only the end of what may be a URL.
#[derive(Debug)]
pub(crate) struct TextStage(StreamReplacer);

impl TextStage {
    pub(crate) fn new(rule: UrlRule) -> Self {
        TextStage(StreamReplacer::new(rule))
    }
}

impl BodyStage for TextStage {
    type Report = ();

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.0.write(input, out);
    }

    fn finish(self, out: &mut Vec<u8>) {
        self.0.finish(out);
    }
}
