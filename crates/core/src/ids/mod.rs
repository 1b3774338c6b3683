//! Partner IDs kept per reader: the pure part (issue 39). The adapter keeps them in Fastly's
//! KV Store, one entry per edge ID; everything it decides with lives here.
//!
//! **What is stored** ([`Entry`]): for each ad partner (by code), its own ID for the reader,
//! when it was set and when it expires; the reader's consent as the edge last saw it (the
//! partner codes whose vendor the decision allows, and since when), because a partner's sync
//! arrives server to server, without the reader's request to decide on, so it is checked
//! against this; and when each partner's ID endpoint was last asked, so it is asked at most
//! once per interval ([`Entry::due_asks`]).
//!
//! **Why a tombstone** ([`Entry::withdraw`]): a reader who withdraws loses every partner ID at
//! once, but partners may still be sending syncs for the old edge ID. Deleting the entry would
//! let a late sync find an empty one to fill (or the adapter to make a new one); a tombstone
//! refuses every later [`set`](Entry::set) until the entry's own expiry in the store removes
//! it. A partner the reader's decision no longer allows loses its ID the same way, at once
//! ([`Entry::note_consent`]).
//!
//! **Why compare-and-set**: page views and several partners' syncs change one reader's entry
//! concurrently, from different POPs. Each change is a pure function of the entry
//! ([`Entry::decode`], an operation, [`Entry::encode`]); the adapter reads the entry with its
//! generation, applies the change, and writes only if the generation is still the one read.
//! On a conflict it reads again and applies the same change again (the operations take their
//! inputs as plain values, so re-applying is exactly applying once to the newer entry), so no
//! writer's change is lost; the answers it gives are those of the attempt that was written.
//! An operation that changed nothing (each says so) needs no write at all.
//!
//! **What is bounded**: at most [`MAX_PARTNERS`] partners in each part of an entry, IDs of at
//! most [`MAX_PARTNER_ID_LEN`] bytes of a strict character set ([`partner_id_problem`]), so an
//! encoded entry stays within [`MAX_ENTRY_BYTES`]; and a sync body at most
//! [`MAX_SYNC_BODY_BYTES`] with at most the caller's number of pairs ([`read_batch`]). Decoding
//! checks all of it: whatever the store holds is an entry or a [`DecodeError`], never a panic.
//!
//! The sync endpoint's body and answer are in [`read_batch`] and [`answer_json`], its partner's
//! bearer token in [`token`]; the edge's own ask of a partner's ID endpoint in [`ask_body`] and
//! [`read_ask_answer`].

mod ask;
mod consent;
mod entry;
mod sync;
pub mod token;

pub use ask::{ask_body, read_ask_answer, MAX_ASK_ANSWER_BYTES};
pub use consent::allowed_partners;

pub use entry::{
    is_partner_code, partner_id_problem, DecodeError, Entry, Held, Refusal, SetOutcome,
    ENTRY_VERSION, MAX_ENTRY_BYTES, MAX_PARTNERS, MAX_PARTNER_CODE_LEN, MAX_PARTNER_ID_LEN,
};
pub use sync::{
    answer_json, apply_in_order, by_edge_id, read_batch, BatchError, Pair, PairAnswer,
    MAX_SYNC_BODY_BYTES,
};

#[cfg(test)]
mod tests;
