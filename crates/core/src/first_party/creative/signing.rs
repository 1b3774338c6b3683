//! The injected signer, with the stage's bookkeeping around it.

use std::cell::{Cell, RefCell};

use trusted_server_settings::Scheme;
use url::Url;

use super::report::CreativeReport;
use super::resolve::{base_href, resolve};

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
    /// The creative's own address, if known: what a `<base href>` resolves against.
    address: Option<Url>,
    /// The scheme of the publisher's page that shows the creative: what a scheme-relative
    /// URL takes when the document has no base.
    page_scheme: Scheme,
    /// What relative URLs resolve against: the first `<base href>` once seen, else the
    /// address.
    base: RefCell<Option<Url>>,
    /// Whether the first `<base href>` has been seen (later ones are ignored, as browsers do).
    base_seen: Cell<bool>,
    /// Whether the document's `<base href>` was refused by the signer and so left as written:
    /// the signer's root-relative URLs would then resolve on the base's host, so nothing more
    /// is signed in this document.
    base_refused: Cell<bool>,
    rewritten: Cell<u64>,
    not_allowed: Cell<u64>,
    unreadable: Cell<u64>,
}

impl Signing {
    /// Signing for a creative at `address` (`None` when it has none, as an auction's
    /// markup) shown in a page of `page_scheme`: relative URLs resolve against the address
    /// until a `<base href>` says otherwise.
    pub(crate) fn new(
        signer: Signer,
        ascii_only: bool,
        address: Option<Url>,
        page_scheme: Scheme,
    ) -> Self {
        Signing {
            signer,
            ascii_only,
            base: RefCell::new(address.clone()),
            address,
            page_scheme,
            base_seen: Cell::new(false),
            base_refused: Cell::new(false),
            rewritten: Cell::new(0),
            not_allowed: Cell::new(0),
            unreadable: Cell::new(0),
        }
    }

    /// The replacement for a URL written as `value` (already decoded from HTML or CSS), or
    /// `None` to leave it as written: not absolute and no base to resolve it against, not
    /// http(s), or not allowed by the signer.
    pub(crate) fn sign(&self, value: &str, use_: UrlUse) -> Option<String> {
        let target = resolve(
            value,
            self.base.borrow().as_ref(),
            self.page_scheme.as_str(),
        )?;
        if self.base_refused.get() {
            self.not_allowed.set(self.not_allowed.get() + 1);
            return None;
        }
        self.offer(target, use_, value)
    }

    /// The replacement for the document's `<base href>` value (decoded), when it is the first
    /// one: from here on relative URLs resolve against it. The base itself is signed as a URL
    /// the creative loads, so that it points at the publisher's host and the signer's
    /// root-relative URLs resolve there; refused, it stays as written and nothing more in the
    /// document is signed (see `docs/first-party.md`, "Relative URLs and `<base>`"). `None`
    /// for a later `<base>` (browsers ignore it) or one that is not an http(s) URL.
    pub(crate) fn base(&self, href: &str) -> Option<String> {
        if self.base_seen.replace(true) {
            return None;
        }
        let url = base_href(href, self.address.as_ref(), self.page_scheme.as_str())?;
        let target = String::from(url.clone());
        *self.base.borrow_mut() = Some(url);
        let signed = self.offer(target, UrlUse::Load, href);
        self.base_refused.set(signed.is_none());
        signed
    }

    /// Offers an absolute `target` (written as `value`) to the signer, counting the answer.
    fn offer(&self, target: String, use_: UrlUse, value: &str) -> Option<String> {
        if self.ascii_only && !(target.is_ascii() && value.is_ascii()) {
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

    /// Whether relative URLs have something to resolve against (an address or a base).
    pub(crate) fn has_base(&self) -> bool {
        self.base.borrow().is_some()
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
