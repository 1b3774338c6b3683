//! The entry under concurrent writers: a model of the KV store's compare-and-set and of the
//! adapter's read → apply → write loop, run under every interleaving proptest picks.

use super::*;
use proptest::prelude::*;

const NOW: u64 = 1_700_000_000;
const TTL: u64 = 30 * 24 * 60 * 60;

/// The KV store's one entry for an edge ID: its bytes and generation.
struct Store {
    bytes: Option<Vec<u8>>,
    generation: u64,
}

#[derive(Clone, Copy)]
enum Change<'a> {
    Set(&'a str, &'a str),
    Withdraw,
}

enum Phase {
    Read,
    Write { generation: u64, bytes: Vec<u8> },
    Done,
}

/// One adapter request changing the entry: each [`step`](Writer::step) is one store call.
struct Writer<'a> {
    change: Change<'a>,
    phase: Phase,
    /// Compare-and-set (`true`) or a blind write (`false`, to show the model can fail).
    cas: bool,
}

impl Writer<'_> {
    fn step(&mut self, store: &mut Store) {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Read => {
                let mut entry = (store.bytes.as_deref())
                    .map_or_else(|| Ok(Entry::new()), Entry::decode)
                    .expect("the store holds what was encoded");
                let changed = match self.change {
                    Change::Set(partner, id) => entry
                        .set(partner, id, NOW, TTL)
                        .is_ok_and(SetOutcome::changed),
                    Change::Withdraw => entry.withdraw(NOW),
                };
                if changed {
                    self.phase = Phase::Write {
                        generation: store.generation,
                        bytes: entry.encode(),
                    };
                }
            }
            Phase::Write { generation, bytes } => {
                if !self.cas || store.generation == generation {
                    store.bytes = Some(bytes);
                    store.generation += 1;
                } else {
                    // A conflict: read again and apply the same change to the newer entry.
                    self.phase = Phase::Read;
                }
            }
            Phase::Done => {}
        }
    }

    fn done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }
}

/// Runs the writers to the end: `schedule` says whose step comes next (an index modulo the
/// writers still running); once it is used up, they take turns.
fn run(start: &Entry, changes: &[Change], schedule: &[usize], cas: bool) -> Entry {
    let mut store = Store {
        bytes: Some(start.encode()),
        generation: 7,
    };
    let mut writers: Vec<Writer> = (changes.iter())
        .map(|&change| Writer {
            change,
            phase: Phase::Read,
            cas,
        })
        .collect();
    let mut turns = schedule.iter().copied().chain(0..);
    for _ in 0..10_000 {
        let running: Vec<usize> = (0..writers.len()).filter(|&i| !writers[i].done()).collect();
        if running.is_empty() {
            break;
        }
        let pick = running[turns.next().unwrap_or(0) % running.len()];
        writers[pick].step(&mut store);
    }
    assert!(writers.iter().all(Writer::done), "the writers finish");
    Entry::decode(store.bytes.as_deref().unwrap()).unwrap()
}

fn allowing_both() -> Entry {
    let mut entry = Entry::new();
    entry.note_consent(&["fast", "slow"], NOW - 10);
    entry
}

#[test]
fn a_blind_write_loses_an_update_where_compare_and_set_does_not() {
    let changes = [Change::Set("fast", "f1"), Change::Set("slow", "s1")];
    // fast reads, slow reads, fast writes, slow writes.
    let schedule = [0, 1, 0, 0];
    let blind = run(&allowing_both(), &changes, &schedule, false);
    assert_eq!(blind.held("fast"), None, "the model can show a lost update");
    let cas = run(&allowing_both(), &changes, &schedule, true);
    assert_eq!(cas.held("fast").unwrap().id, "f1");
    assert_eq!(cas.held("slow").unwrap().id, "s1");
}

proptest! {
    #[test]
    fn two_partners_syncing_at_once_both_keep_their_id(
        schedule in proptest::collection::vec(0usize..2, 0..16),
        fast_before in proptest::option::of("[a-z0-9]{1,8}"),
        fast in "[a-z0-9]{1,8}",
        slow in "[A-Z0-9]{1,8}",
    ) {
        let mut start = allowing_both();
        if let Some(old) = &fast_before {
            start.set("fast", old, NOW - 5, TTL).unwrap();
        }
        let changes = [Change::Set("fast", &fast), Change::Set("slow", &slow)];
        let end = run(&start, &changes, &schedule, true);
        prop_assert_eq!(&end.held("fast").unwrap().id, &fast);
        prop_assert_eq!(&end.held("slow").unwrap().id, &slow);
    }

    /// With a withdrawal among the writers, whatever the order, the end is the tombstone:
    /// a sync that lands first is wiped, one that comes after is refused.
    #[test]
    fn a_withdrawal_racing_syncs_always_wins(
        schedule in proptest::collection::vec(0usize..3, 0..24),
    ) {
        let changes = [Change::Set("fast", "f1"), Change::Withdraw, Change::Set("slow", "s1")];
        let end = run(&allowing_both(), &changes, &schedule, true);
        prop_assert_eq!(end.withdrawn(), Some(NOW));
        prop_assert_eq!(end.held("fast"), None);
        prop_assert_eq!(end.held("slow"), None);
    }
}
