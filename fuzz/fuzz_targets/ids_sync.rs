//! The partner ID sync body (`crates/core/src/ids/sync.rs`) and the stored entry
//! (`crates/core/src/ids/entry.rs`) on any bytes, read both ways. Neither ever panics. A batch
//! read keeps its bound and every pair it calls valid has a well-formed edge ID and a partner ID
//! that may be stored, and its answer names no partner ID; an entry that decodes encodes within
//! `MAX_ENTRY_BYTES` to bytes that decode to it again, also after a sync is applied to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::ids::{
    answer_json, partner_id_problem, read_batch, Entry, Pair, PairAnswer, MAX_ENTRY_BYTES,
};
use trusted_server_core::publisher::identity::is_well_formed;

const MAX_PAIRS: usize = 16;

fuzz_target!(|data: &[u8]| {
    if let Ok(pairs) = read_batch(data, MAX_PAIRS) {
        assert!(pairs.len() <= MAX_PAIRS);
        let answers: Vec<PairAnswer> = (pairs.iter())
            .map(|pair| match pair {
                Pair::Valid { ec, id } => {
                    assert!(is_well_formed(ec));
                    assert_eq!(partner_id_problem(id), None);
                    PairAnswer::Stored
                }
                Pair::Malformed { ec, why } => {
                    assert!(ec.as_deref().is_none_or(is_well_formed));
                    PairAnswer::Malformed(why)
                }
            })
            .collect();
        let answer = answer_json(&pairs, &answers).to_string();
        for pair in &pairs {
            if let Pair::Valid { id, .. } = pair {
                // Short IDs can be a piece of the answer's own text by chance.
                assert!(id.len() < 24 || !answer.contains(id.as_str()));
            }
        }
    }

    let Ok(mut entry) = Entry::decode(data) else {
        return;
    };
    let round_trip = |entry: &Entry| {
        let bytes = entry.encode();
        assert!(bytes.len() <= MAX_ENTRY_BYTES);
        assert_eq!(Entry::decode(&bytes).as_ref(), Ok(entry));
    };
    round_trip(&entry);
    if entry.withdrawn().is_some() {
        assert_eq!(entry.allowed().count(), 0);
    }
    let first = entry.allowed().next().map(str::to_owned);
    if let Some(partner) = first {
        let _ = entry.set(&partner, "fuzz-id", 1_700_000_000, 86_400);
        round_trip(&entry);
    }
});
