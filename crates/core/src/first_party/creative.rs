//! Creatives served through the first-party proxy: the absolute URLs of an HTML or CSS
//! creative that point at allowed hosts become signed first-party URLs while the body streams,
//! so the images, sheets and frames it loads come from the publisher's host too.
//!
//! The stage is given a [`Signer`]: absolute target URL and its use in, first-party URL out,
//! or `None` when the target is not allowed (the URL then stays as written). Which hosts are allowed
//! and how URLs are signed are the signer's business, so this module needs neither the token
//! nor the SSRF policy, and the signer sees every URL before it is written: nothing here can
//! make the service fetch what the signer refused.
//!
//! * HTML ([`Creative::Html`]): the values of `src`, `href`, `xlink:href`, the lazy-loading
//!   `data-src`, `data-lazy-src`, `data-background`, `data-bg`, `data-srcset`, `<a ping>`,
//!   `poster`, `action`, `formaction`, `background`, `data` on `<object>`, each `srcset` and
//!   `imagesrcset` candidate, a refresh `<meta>`'s `content` URL, and the `url(…)`s of inline
//!   `style` attributes and `<style>` sheets. The signer is told each URL's [`UrlUse`]: a
//!   link the reader follows (`href` on `<a>` and `<area>`) or something the creative loads
//!   (everything else). Values are read as the browser reads them
//!   (character references decoded, see `entities`), and a rewritten value is written back
//!   escaped for its quotes; a value holding a reference this stage does not decode is left
//!   exactly as it was.
//! * CSS ([`Creative::Css`]): `url(…)` (quoted, unquoted, with escapes) and `@import "…"`.
//! * Inline `<script>`s of JavaScript or JSON: string literals that are whole absolute URLs
//!   (see `script`); a `clickTag`-like name makes the URL a link the reader follows.
//! * JavaScript and JSON bodies ([`Creative::Script`]: an external script, a fetched config):
//!   the same literals, the body held whole up to 256 KiB (see `script_body`).
//!
//! Relative URLs are resolved against the document's base (its first `<base href>`, else the
//! creative's own address when the caller knows it) and offered absolute; the first
//! `<base href>` is signed too, so that the signer's root-relative URLs resolve on the
//! publisher's host (see `resolve` and `Signing::base`).
//!
//! Every other byte passes through unchanged, and the output does not depend on how the body
//! is cut into chunks. Memory is bounded: an HTML token larger than 1 MiB makes the parser
//! give up and the rest of the creative pass through; a CSS URL token larger than 16 KiB
//! passes through; an inline script, or a script or JSON body, longer than 256 KiB passes
//! through. Each says so in the report ([`CreativeReport::degraded`]). Images and other
//! bodies are not given to this stage at all ([`Creative::for_content_type`] says `None`).
//!
//! Details and limits: `docs/first-party.md`, "Creative rewriting".

use std::io::Write;
use std::rc::Rc;

use lol_html::AsciiCompatibleEncoding;
use trusted_server_settings::Scheme;
use url::Url;

use crate::body::pipeline::BodyPipeline;
use crate::body::stage::{BodyStage, Guard};
use crate::content::{split_content_type, BodyPlan, Codec, Rewrite};
use crate::stages::utf16::{utf16_guard, NotUtf16};

mod attrs;
mod css;
mod entities;
mod html;
mod report;
mod resolve;
mod script;
mod script_body;
mod signing;
#[cfg(test)]
mod tests;

pub use report::CreativeReport;
pub use signing::{Signer, UrlUse};

use css::CssRewriter;
use html::CreativeHtml;
use script_body::ScriptBody;
use signing::Signing;

/// Which rewriting a creative's body gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creative {
    /// An HTML document in the given charset (ASCII-compatible).
    Html(AsciiCompatibleEncoding),
    /// A style sheet (`text/css`).
    Css,
    /// JavaScript or JSON in UTF-8 (an external script, a config the creative fetches).
    Script,
}

impl Creative {
    /// The rewriting for a creative of `content_type`, or `None` when its body must stream
    /// unchanged: images, fonts and anything else that is not HTML, CSS, JavaScript or JSON,
    /// HTML or CSS in a charset where bytes cannot be rewritten safely (Shift_JIS, UTF-16,
    /// …), and JavaScript or JSON labelled with a charset other than UTF-8.
    pub fn for_content_type(content_type: Option<&str>) -> Option<Creative> {
        let mime = content_type
            .and_then(|c| c.split(';').next())
            .map(str::trim)
            .unwrap_or("");
        // `readable_type` reads a `<script type>`, where none or `module` means JavaScript;
        // as a `Content-Type` neither names one.
        let script_type = !mime.is_empty() && !mime.eq_ignore_ascii_case("module");
        if script_type && script::readable_type(Some(mime)) {
            return utf8_labelled(content_type).then_some(Creative::Script);
        }
        match BodyPlan::decide(200, content_type, None, false) {
            BodyPlan::Rewrite {
                rewrite: Rewrite::Html(encoding),
                ..
            } => Some(Creative::Html(encoding)),
            BodyPlan::Rewrite {
                rewrite: Rewrite::Text,
                ..
            } if mime.eq_ignore_ascii_case("text/css") => Some(Creative::Css),
            _ => None,
        }
    }

    fn ascii_only(self) -> bool {
        match self {
            Creative::Html(encoding) => encoding != AsciiCompatibleEncoding::utf_8(),
            Creative::Css | Creative::Script => false,
        }
    }
}

/// Whether a `Content-Type` names no charset, or UTF-8 (any of its labels) or its subset
/// US-ASCII (which encoding_rs reads as windows-1252, so it is named here).
fn utf8_labelled(content_type: Option<&str>) -> bool {
    let charset = content_type.and_then(|c| split_content_type(c).1);
    charset.is_none_or(|label| {
        label.eq_ignore_ascii_case("us-ascii")
            || encoding_rs::Encoding::for_label(label.as_bytes()) == Some(encoding_rs::UTF_8)
    })
}

/// The body stage: HTML or CSS, with the report at the end.
pub(crate) struct CreativeStage {
    rewriter: Rewriter,
    signing: Rc<Signing>,
}

enum Rewriter {
    Html(Box<CreativeHtml>),
    Css(CssRewriter),
    Script(ScriptBody),
}

impl CreativeStage {
    /// A stage for `creative` at `address` (if known) shown in a page of `page_scheme`,
    /// signing with `signer`.
    pub(crate) fn new(
        creative: Creative,
        signer: Signer,
        address: Option<Url>,
        page_scheme: Scheme,
    ) -> Self {
        Self::with_limits(
            creative,
            signer,
            address,
            page_scheme,
            html::MAX_PARSER_MEMORY,
            css::TOKEN_CAP,
            script::SCRIPT_CAP,
        )
    }

    /// With other memory limits, for tests of what happens over them.
    pub(crate) fn with_limits(
        creative: Creative,
        signer: Signer,
        address: Option<Url>,
        page_scheme: Scheme,
        html_memory: usize,
        css_cap: usize,
        script_cap: usize,
    ) -> Self {
        let signing = Rc::new(Signing::new(
            signer,
            creative.ascii_only(),
            address,
            page_scheme,
        ));
        let rewriter = match creative {
            Creative::Html(encoding) => Rewriter::Html(Box::new(CreativeHtml::new(
                Rc::clone(&signing),
                encoding,
                html_memory,
                css_cap,
                script_cap,
            ))),
            Creative::Css => Rewriter::Css(CssRewriter::with_cap(Rc::clone(&signing), css_cap)),
            Creative::Script => {
                Rewriter::Script(ScriptBody::with_cap(Rc::clone(&signing), script_cap))
            }
        };
        CreativeStage { rewriter, signing }
    }
}

impl BodyStage for CreativeStage {
    type Report = CreativeReport;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match &mut self.rewriter {
            Rewriter::Html(html) => html.write(input, out),
            Rewriter::Css(css) => css.write(input, out),
            Rewriter::Script(script) => script.write(input, out),
        }
    }

    fn finish(self, out: &mut Vec<u8>) -> CreativeReport {
        let degraded = match self.rewriter {
            Rewriter::Html(html) => html.finish(out),
            Rewriter::Css(mut css) => {
                css.finish(out);
                css.degraded().map(str::to_owned)
            }
            Rewriter::Script(mut script) => script.finish(out).map(str::to_owned),
        };
        self.signing.report(degraded)
    }
}

/// What a creative's stages did with its body: the rewriting's report, unless the body
/// passed through because it is UTF-16.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreativeOutcome {
    /// What the rewriting did; `None` for a body that passed through as UTF-16.
    pub creative: Option<CreativeReport>,
    /// The body started with a UTF-16 byte order mark and passed through unchanged.
    pub utf16: bool,
}

/// A creative's stages: the rewriter behind the UTF-16 rule, reporting a [`CreativeOutcome`].
pub struct CreativeStages(Guard<NotUtf16, CreativeStage>);

impl std::fmt::Debug for CreativeStages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreativeStages").finish_non_exhaustive()
    }
}

impl BodyStage for CreativeStages {
    type Report = CreativeOutcome;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.0.write(input, out);
    }

    fn finish(self, out: &mut Vec<u8>) -> CreativeOutcome {
        let creative = self.0.finish(out);
        CreativeOutcome {
            utf16: creative.is_none(),
            creative,
        }
    }
}

/// Where a creative is shown, which decides what the browser makes of its URLs.
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    /// Where the creative was fetched from (the proxy's final target): its relative URLs,
    /// scheme-relative ones and its `<base href>` resolve against it, as when the partner
    /// serves it directly. Markup without an address (an auction's `adm`) has `None`: its
    /// relative URLs stay as written unless it has an absolute `<base href>`. An address the
    /// WHATWG parser cannot read is as good as none.
    pub address: Option<&'a str>,
    /// The scheme of the publisher's page the creative is shown in (the scheme of the
    /// client's request): without an address, a scheme-relative URL (`//host/x`) takes it,
    /// as the browser does in a frame of that page.
    pub page_scheme: Scheme,
}

/// The pipeline for a creative's body: decode `codec`, rewrite as `creative` says with
/// `signer`, re-encode, write to `sink`, resolving URLs for `placement`. The proxy route calls this for the bodies
/// [`Creative::for_content_type`] accepts and streams every other body unchanged; the
/// finished pipeline's report says what was rewritten ([`CreativeOutcome`]). A body starting
/// with a UTF-16 byte order mark passes through.
pub fn pipeline<W: Write>(
    codec: Codec,
    creative: Creative,
    signer: Signer,
    placement: Placement<'_>,
    sink: W,
) -> BodyPipeline<W, CreativeStages> {
    let address = placement.address.and_then(|a| Url::parse(a).ok());
    let stage = CreativeStage::new(creative, signer, address, placement.page_scheme);
    BodyPipeline::new(codec, CreativeStages(utf16_guard(stage)), sink)
}
