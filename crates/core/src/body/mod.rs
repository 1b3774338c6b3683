//! The body stages, in the order bytes flow through them:
//!
//! * [`decode`]: gzip / deflate / br, push-based, in bounded pieces;
//! * a rewriter: [`lazy_html`] (the URL rule alone until a page needs its structure), then
//!   [`html`] (lol_html marks structure, the URL rule runs on its output) with
//!   [`rsc`] for the Next.js Flight payloads inside it and in `text/x-component` responses,
//!   or the URL rule alone for CSS / JS / JSON;
//! * [`codec`]: the re-encoder;
//! * [`pipeline`]: ties them together and batches writes to the client.

pub(crate) mod codec;
pub(crate) mod decode;
pub(crate) mod html;
pub(crate) mod lazy_html;
pub(crate) mod pipeline;
pub(crate) mod rsc;
