//! The body partners post to `/_ts/ids/sync` (server to server), read; and the answer to it.
//!
//! ```json
//! {"pairs": [{"ec": "<edge ID>", "id": "<the partner's ID>"}, ...]}
//! ```
//!
//! The whole batch is refused only when it cannot be read as a batch ([`BatchError`]: 400 for
//! not JSON or another shape, 413 past [`MAX_SYNC_BODY_BYTES`] or the caller's most pairs); a
//! bad pair is answered on its own ([`Pair::Malformed`]) and the others still count. Fields
//! other than `pairs`, `ec` and `id` are ignored, so partners may send more.
//!
//! Pairs are applied in the batch's order: pairs for the same edge ID go to that edge ID's one
//! entry in turn ([`by_edge_id`], [`apply_in_order`]), so the last ID sent wins and each pair is
//! answered by what its own turn did. The answer ([`answer_json`]) never carries a partner ID
//! back.

use std::fmt;

use serde_json::{json, Map, Value};

use super::entry::{partner_id_problem, Entry, Refusal, SetOutcome};
use crate::publisher::identity::is_well_formed;

/// The largest sync body read: 64 KiB, room for several hundred pairs of the longest IDs'
/// usual size; the caller's `max_pairs` is the tighter bound in practice.
pub const MAX_SYNC_BODY_BYTES: usize = 64 * 1024;

/// One pair of a batch, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pair {
    /// A well-formed edge ID and a partner ID that may be stored.
    Valid {
        /// The edge ID ([`is_well_formed`]).
        ec: String,
        /// The partner's ID ([`partner_id_problem`] finds nothing).
        id: String,
    },
    /// A pair that cannot be applied, and why.
    Malformed {
        /// The edge ID when it is well-formed (the answer repeats only that).
        ec: Option<String>,
        /// Why the pair cannot be applied.
        why: &'static str,
    },
}

impl Pair {
    /// The pair's edge ID, when well-formed.
    pub fn ec(&self) -> Option<&str> {
        match self {
            Pair::Valid { ec, .. } => Some(ec),
            Pair::Malformed { ec, .. } => ec.as_deref(),
        }
    }

    fn read(value: &Value) -> Pair {
        let Some(fields) = value.as_object() else {
            return Pair::Malformed {
                ec: None,
                why: "pair not an object",
            };
        };
        let ec = (fields.get("ec").and_then(Value::as_str)).filter(|ec| is_well_formed(ec));
        let malformed = |why| Pair::Malformed {
            ec: ec.map(str::to_owned),
            why,
        };
        let id = match fields.get("id") {
            None => return malformed("no id"),
            Some(Value::String(id)) => id,
            Some(_) => return malformed("id not a string"),
        };
        let Some(ec) = ec else {
            return malformed(match fields.get("ec") {
                None => "no ec",
                Some(_) => "ec not an edge ID",
            });
        };
        if let Some(why) = partner_id_problem(id) {
            return malformed(why);
        }
        Pair::Valid {
            ec: ec.to_owned(),
            id: id.clone(),
        }
    }
}

/// Why a whole batch was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchError {
    /// A body over [`MAX_SYNC_BODY_BYTES`] (its length given).
    TooLarge(usize),
    /// More pairs than the caller's bound.
    TooManyPairs {
        /// The pairs sent.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// Not JSON.
    NotJson,
    /// JSON, but not `{"pairs": [...]}`.
    NotABatch,
}

impl BatchError {
    /// The HTTP status to answer with: 413 for the size bounds, 400 otherwise.
    pub fn status(&self) -> u16 {
        match self {
            BatchError::TooLarge(_) | BatchError::TooManyPairs { .. } => 413,
            BatchError::NotJson | BatchError::NotABatch => 400,
        }
    }
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::TooLarge(len) => {
                write!(f, "body of {len} bytes, over {MAX_SYNC_BODY_BYTES}")
            }
            BatchError::TooManyPairs { count, max } => {
                write!(f, "{count} pairs, more than {max}")
            }
            BatchError::NotJson => f.write_str("body is not JSON"),
            BatchError::NotABatch => f.write_str(r#"body is not {"pairs": [...]}"#),
        }
    }
}

impl std::error::Error for BatchError {}

/// Reads a sync body: every pair, in order, each [`Valid`](Pair::Valid) or
/// [`Malformed`](Pair::Malformed).
///
/// # Errors
/// [`BatchError`] when the body is over [`MAX_SYNC_BODY_BYTES`] or has more than `max_pairs`
/// pairs (413), or is not JSON or not `{"pairs": [...]}` (400).
pub fn read_batch(body: &[u8], max_pairs: usize) -> Result<Vec<Pair>, BatchError> {
    if body.len() > MAX_SYNC_BODY_BYTES {
        return Err(BatchError::TooLarge(body.len()));
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| BatchError::NotJson)?;
    let pairs = (value.get("pairs").and_then(Value::as_array)).ok_or(BatchError::NotABatch)?;
    if pairs.len() > max_pairs {
        return Err(BatchError::TooManyPairs {
            count: pairs.len(),
            max: max_pairs,
        });
    }
    Ok(pairs.iter().map(Pair::read).collect())
}

/// The valid pairs grouped by edge ID, in the order each edge ID first appears: for each, the
/// indices of its pairs in the batch, in order. The adapter reads each edge ID's entry once and
/// applies its pairs with [`apply_in_order`].
pub fn by_edge_id(pairs: &[Pair]) -> Vec<(&str, Vec<usize>)> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (index, pair) in pairs.iter().enumerate() {
        let Pair::Valid { ec, .. } = pair else {
            continue;
        };
        match groups.iter_mut().find(|(seen, _)| seen == ec) {
            Some((_, indices)) => indices.push(index),
            None => groups.push((ec, vec![index])),
        }
    }
    groups
}

/// Applies `partner`'s `ids` (one edge ID's, in the batch's order) to its entry: the last wins.
/// Returns each ID's answer and whether the entry changed (so must be written back). On a
/// compare-and-set conflict the adapter calls this again on the entry read afresh, and answers
/// with that call's results.
pub fn apply_in_order<'i>(
    entry: &mut Entry,
    partner: &str,
    ids: impl IntoIterator<Item = &'i str>,
    now: u64,
    ttl_secs: u64,
) -> (Vec<PairAnswer>, bool) {
    let mut changed = false;
    let answers = (ids.into_iter())
        .map(|id| {
            let result = entry.set(partner, id, now, ttl_secs);
            changed |= result.is_ok_and(SetOutcome::changed);
            PairAnswer::from(result)
        })
        .collect();
    (answers, changed)
}

/// The answer to one pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairAnswer {
    /// The ID is stored (new, or replacing another).
    Stored,
    /// The same ID was already held (its expiry may have moved).
    Unchanged,
    /// No entry for this edge ID.
    UnknownEdgeId,
    /// The reader's consent does not allow this partner, or the reader withdrew: the two are
    /// not told apart, so a partner learns no more about the reader than that it may not sync.
    RefusedByConsent,
    /// The pair could not be read, and why.
    Malformed(&'static str),
    /// The store could not be read or written for this pair's edge ID: nothing changed, the
    /// partner may send it again.
    Unavailable,
}

impl PairAnswer {
    /// The `status` of the answer's JSON.
    pub fn status(self) -> &'static str {
        match self {
            PairAnswer::Stored => "stored",
            PairAnswer::Unchanged => "unchanged",
            PairAnswer::UnknownEdgeId => "unknown_ec",
            PairAnswer::RefusedByConsent => "refused_by_consent",
            PairAnswer::Malformed(_) => "malformed",
            PairAnswer::Unavailable => "unavailable",
        }
    }
}

impl From<Result<SetOutcome, Refusal>> for PairAnswer {
    fn from(result: Result<SetOutcome, Refusal>) -> Self {
        match result {
            Ok(SetOutcome::Stored) => PairAnswer::Stored,
            Ok(SetOutcome::Refreshed | SetOutcome::Unchanged) => PairAnswer::Unchanged,
            Err(Refusal::Withdrawn | Refusal::NotAllowed) => PairAnswer::RefusedByConsent,
            Err(Refusal::Malformed(why)) => PairAnswer::Malformed(why),
        }
    }
}

/// The answer body, `{"results": [{"ec": ..., "status": ..., "why": ...}, ...]}`: one result per
/// pair, in the batch's order (`answers[i]` answers `pairs[i]`; extra items of the longer slice
/// are left out). `ec` is the pair's edge ID when well-formed, else `null`; `why` only for
/// `malformed`. No partner ID is ever in it.
pub fn answer_json(pairs: &[Pair], answers: &[PairAnswer]) -> Value {
    let results = (pairs.iter().zip(answers))
        .map(|(pair, answer)| {
            let mut one = Map::new();
            one.insert("ec".into(), pair.ec().map_or(Value::Null, Value::from));
            one.insert("status".into(), answer.status().into());
            if let PairAnswer::Malformed(why) = answer {
                one.insert("why".into(), (*why).into());
            }
            Value::Object(one)
        })
        .collect::<Vec<_>>();
    json!({ "results": results })
}

#[cfg(test)]
mod tests;
