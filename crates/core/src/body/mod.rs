//! The body: decode → stages → encode → batched writes.
//!
//! Every stage keeps one contract ([`stage::BodyStage`]): it is pushed the decoded body in
//! pieces of any size, split anywhere, and appends what it has decided to the buffer it is
//! given; its output does not depend on the splits. It may hold bytes it cannot decide yet,
//! and `finish`, which consumes it, writes them and returns one [`stage::StageReport`]:
//! passed through, bailed out part-way (and why), Flight degraded (and why), bytes held at
//! most. A stage never fails; what it cannot rewrite it passes through unchanged. The
//! pipeline composes stages in one place (`pipeline::compose`) and knows nothing else of them.
//!
//! * [`decode`]: gzip / deflate / br, push-based, in bounded pieces;
//! * the stages: [`utf16`] (a UTF-16 page passes through) in front of one rewriter:
//!   [`lazy_html`] (the URL rule alone until a page needs its structure, then [`html`]:
//!   lol_html marks structure, the URL rule runs on its output, with [`rsc`] for the Next.js
//!   Flight payloads inside it), [`rsc`] for `text/x-component` responses, or [`text`] (the
//!   URL rule alone) for CSS / JS / JSON; [`charset`] is what a `<meta>` declares, read the
//!   same way by both HTML stages;
//! * [`codec`]: the re-encoder;
//! * [`pipeline`]: ties them together and batches writes to the client;
//! * [`release`]: when those writes leave for the client.

pub(crate) mod charset;
pub(crate) mod codec;
pub(crate) mod decode;
#[cfg(test)]
mod example_stage;
pub(crate) mod html;
pub(crate) mod inject;
pub(crate) mod lazy_html;
pub(crate) mod pipeline;
pub(crate) mod release;
pub(crate) mod rsc;
pub(crate) mod stage;
pub(crate) mod staging;
pub(crate) mod text;
pub(crate) mod utf16;
