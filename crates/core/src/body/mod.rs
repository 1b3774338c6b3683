//! The body engine: decode → stages → encode → batched writes, and when those writes leave.
//!
//! The engine runs stages; it does not know which. Every stage keeps one contract
//! ([`stage::BodyStage`]): it is pushed the decoded body in pieces of any size, split anywhere,
//! and appends what it has decided to the buffer it is given; its output does not depend on the
//! splits. It may hold bytes it cannot decide yet, and `finish`, which consumes it, writes them
//! and returns the stage's own report, of the stage's own type. A stage never fails; what it
//! cannot rewrite it passes through unchanged. The engine hands the report back untouched to
//! whoever composed the stages: the stages themselves live in `crate::stages`, and what a kind
//! of body gets is decided by the composition roots above this module.
//!
//! * [`decode`]: gzip / deflate / br, push-based, in bounded pieces;
//! * [`stage`]: the stage contract and its generic combinators (one stage after another, an
//!   optional stage, a stage behind a gate on the body's first bytes, a mapped report);
//! * [`codec`]: the re-encoder;
//! * [`pipeline`]: ties them together and batches writes to the client;
//! * [`release`]: when those writes leave for the client;
//! * [`room`]: how much room the engine's buffers take at their first use.

pub(crate) mod codec;
pub(crate) mod decode;
pub(crate) mod pipeline;
pub(crate) mod release;
pub(crate) mod room;
pub(crate) mod stage;
