//! A JavaScript or JSON body the proxy relays: a creative's external `<script src>`, or a
//! config it `fetch`es. Its whole-URL string literals are signed exactly as an inline
//! script's are (see `script`), so an image URL a creative's own script or config names
//! loads first-party too.
//!
//! A script runs, and a config is parsed, only once the whole body has arrived, so holding it
//! costs the browser nothing it would not wait for anyway. The body is held whole up to
//! [`SCRIPT_CAP`](script::SCRIPT_CAP): past it, what is held and the rest pass through as written, and the report
//! says so. A body that is not UTF-8 passes through as written (counted unreadable): only
//! UTF-8 text is read here ([`Creative::for_content_type`](super::Creative::for_content_type)
//! takes only UTF-8 or unlabelled JavaScript and JSON).

use std::rc::Rc;

use super::script;
use super::signing::{Signing, UrlUse};

/// What the report says when a script or JSON body over the cap passed through.
pub(crate) const OVER_CAP: &str =
    "a script or JSON body longer than 256 KiB passed through unrewritten";

/// The body stage's rewriter for one script or JSON body.
pub(crate) struct ScriptBody {
    signing: Rc<Signing>,
    held: Vec<u8>,
    cap: usize,
    /// The body outgrew the cap: everything passes through from here.
    over: bool,
}

impl ScriptBody {
    /// A rewriter holding at most `cap` bytes ([`SCRIPT_CAP`](script::SCRIPT_CAP) in production).
    pub(crate) fn with_cap(signing: Rc<Signing>, cap: usize) -> Self {
        ScriptBody {
            signing,
            held: Vec::new(),
            cap,
            over: false,
        }
    }

    /// Takes `input`: held while the body fits the cap, else released with the rest.
    pub(crate) fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if !self.over && self.held.len() + input.len() > self.cap {
            out.append(&mut self.held);
            self.over = true;
        }
        if self.over {
            out.extend_from_slice(input);
        } else {
            self.held.extend_from_slice(input);
        }
    }

    /// Ends the body: the held text with its URL literals signed, or as written. Says why
    /// the body passed through unrewritten for lack of memory, if it did.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Option<&'static str> {
        if self.over {
            return Some(OVER_CAP);
        }
        let held = std::mem::take(&mut self.held);
        let Ok(text) = std::str::from_utf8(&held) else {
            self.signing.unreadable();
            out.extend_from_slice(&held);
            return None;
        };
        let sign = |url: &str, use_: UrlUse| self.signing.sign(url, use_);
        match script::rewrite(text, &sign) {
            Some(new) => out.extend_from_slice(new.as_bytes()),
            None => out.extend_from_slice(&held),
        }
        None
    }
}
