//! The injected signer, with the stage's bookkeeping around it.

use std::cell::Cell;

use super::report::CreativeReport;
use super::resolve::absolute;

/// Turns an absolute target URL into its first-party URL for the given use, or `None` when
/// the target is not allowed (the URL is then left as written). Injected by the caller, so
/// this stage knows nothing of tokens or of the SSRF policy.
pub type Signer = Box<dyn Fn(&str, UrlUse) -> Option<String>>;

/// What the browser does with a URL in a creative, which decides the first-party URL it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlUse {
    /// The creative loads it (an image, a sheet, a frame, a script, a refresh): its bytes
    /// come through the first-party proxy.
    Load,
    /// The reader follows it (`<a href>`, `<area href>`): a first-party click URL that
    /// redirects the browser to the target, so the landing page is the advertiser's own and
    /// not a proxied copy under the publisher's host.
    Follow,
}

/// The signer and the counts for the report, shared by everything in one body.
pub(crate) struct Signing {
    signer: Signer,
    /// Whether a replacement must be ASCII: in a document that is not UTF-8, other bytes
    /// would be read as other characters.
    ascii_only: bool,
    rewritten: Cell<u64>,
    not_allowed: Cell<u64>,
    unreadable: Cell<u64>,
}

impl Signing {
    pub(crate) fn new(signer: Signer, ascii_only: bool) -> Self {
        Signing {
            signer,
            ascii_only,
            rewritten: Cell::new(0),
            not_allowed: Cell::new(0),
            unreadable: Cell::new(0),
        }
    }

    /// The replacement for a URL written as `value` (already decoded from HTML or CSS), or
    /// `None` to leave it as written: not absolute, or not allowed by the signer.
    pub(crate) fn sign(&self, value: &str, use_: UrlUse) -> Option<String> {
        let target = absolute(value)?;
        if self.ascii_only && !target.is_ascii() {
            // The browser would percent-encode the query in the document's charset, not
            // UTF-8: the signer could not be given what the browser requests.
            self.unreadable();
            return None;
        }
        match (self.signer)(&target, use_) {
            Some(url) if !self.ascii_only || url.is_ascii() => {
                self.rewritten.set(self.rewritten.get() + 1);
                Some(url)
            }
            _ => {
                self.not_allowed.set(self.not_allowed.get() + 1);
                None
            }
        }
    }

    /// Whether text in this document may hold only ASCII to be read here.
    pub(crate) fn ascii_only(&self) -> bool {
        self.ascii_only
    }

    /// Counts a value left as written because it could not be read safely.
    pub(crate) fn unreadable(&self) {
        self.unreadable.set(self.unreadable.get() + 1);
    }

    /// The counts so far, for the report.
    pub(crate) fn report(&self, degraded: Option<String>) -> CreativeReport {
        CreativeReport {
            rewritten: self.rewritten.get(),
            not_allowed: self.not_allowed.get(),
            unreadable: self.unreadable.get(),
            degraded,
        }
    }
}
