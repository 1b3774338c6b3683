//! The body stages: each one a [`BodyStage`](crate::body::stage::BodyStage) with a report of
//! its own type, each in its own file (or folder). None knows which others run beside it or
//! who puts them together: `crate::page` composes a publisher page's stages, and the
//! first-party creative's composer (`crate::first_party::creative`) its own.
//!
//! * [`text`]: the URL rule alone, for CSS / JS / JSON;
//! * [`lazy_html`]: the URL rule alone until a page needs its structure, then
//!   [`scanned_html`] (the structure read byte by byte by [`html_scan`]) or, where that reading
//!   cannot decide, [`html`] (lol_html marks structure); both feed [`segments`], which runs
//!   the URL rule, with [`rsc`] for the Next.js Flight payloads inside it;
//! * [`rsc`]: Next.js Flight payloads, inline in HTML or as `text/x-component` responses;
//! * [`charset`]: what a `<meta>` declares, read the same way by both HTML stages;
//! * [`staging`]: the staged lol_html driver shared by the page's HTML stage and the
//!   creative's HTML rewriter;
//! * [`inject`]: the first-party script's tag at the start of the `<head>`;
//! * [`hints`]: the early-hints head reader;
//! * [`tail`]: holds the output from the first `</body>` end tag on, for what goes before it
//!   once the body has ended (a navigation auction's bids);
//! * [`utf16`]: the UTF-16 rule, a gate in front of a rewriter;
//! * [`word_scan`]: byte searches for short distances, shared by the readers above.

pub(crate) mod charset;
mod example;
pub(crate) mod hints;
pub(crate) mod html;
pub(crate) mod html_scan;
pub(crate) mod inject;
pub(crate) mod lazy_html;
pub(crate) mod rsc;
pub(crate) mod scanned_html;
pub(crate) mod segments;
pub(crate) mod staging;
pub(crate) mod tail;
pub(crate) mod text;
pub(crate) mod utf16;
pub(crate) mod word_scan;
