//! The partner-ID graph in Fastly's KV Store: one entry per edge ID, the core's
//! `trusted_server_core::ids::Entry`, encoded as the core encodes it. This phase only stores:
//! what a change means is the core's, which flow makes it is the flows'.
//!
//! Every change is a compare-and-set: the entry is read with its generation, the change is
//! applied to it, and it is written only if the store still holds that generation (a new
//! entry only if there is none yet). When another writer got there first (a page view and a
//! partner's sync for the same reader, from two POPs), the entry is read again and the same
//! change applied again, up to [`MAX_TRIES`] times, so no writer's change is lost. A change
//! that changes nothing is not written. Each write sets the entry's time to live, so an
//! entry no reader or partner touches leaves the store by itself.

//!
//! What the reader's own requests change ([`note_reader`], [`store_asked`], [`erase`]) is done
//! after their response has left, so the store's round trips never delay a page.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fastly::kv_store::{InsertMode, KVStore, KVStoreError, PendingLookupHandle};
use trusted_server_core::admin::IdsOutcome;
use trusted_server_core::auction::PartnerEid;
use trusted_server_core::consent::Decision;
use trusted_server_core::ids::{allowed_partners, DecodeError, Entry};
use trusted_server_core::Settings;
use trusted_server_settings::Bidder;

/// How many times a change is tried before the store's contention is reported.
pub const MAX_TRIES: usize = 8;

/// Why the graph could not be read or changed.
#[derive(Debug)]
pub enum GraphError {
    /// The store named in the settings is not linked to the service.
    NoStore(String),
    /// The store refused or failed a read or a write.
    Store(KVStoreError),
    /// The entry held for this key is not one the core can read; it is left as it is.
    Unreadable(DecodeError),
    /// Every try met a newer generation.
    Contended,
}

impl std::fmt::Display for GraphError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GraphError::NoStore(name) => write!(f, "KV store {name:?} is not linked"),
            GraphError::Store(e) => write!(f, "KV store: {e}"),
            GraphError::Unreadable(e) => write!(f, "partner-ID entry unreadable: {e:?}"),
            GraphError::Contended => write!(f, "partner-ID entry changed {MAX_TRIES} times"),
        }
    }
}

/// Whether the graph is kept: `ids.enabled`, and at least one bidder is a partner of it.
pub fn kept(settings: &Settings) -> bool {
    settings.ids.enabled && (settings.auction.bidders.iter()).any(|b| b.eid_source.is_some())
}

/// An entry's time to live from a write: `ids.ttl_days`.
pub fn ttl(settings: &Settings) -> Duration {
    Duration::from_secs(u64::from(settings.ids.ttl_days) * 86_400)
}

/// Seconds since the Unix epoch (0 if the clock is before it, which no entry's times can be).
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A page view of the reader with `edge_id`: their entry records which partners their
/// `decision` allows now (`Entry::note_consent`; a partner no longer allowed loses its ID), and
/// which partners with an ID endpoint (`id_path`) are due to be asked for their ID
/// (`Entry::due_asks`; only when `asks` is true), noting the ask in the same write, so that
/// of two page views at once only one asks. An entry is made only when some partner is
/// allowed; an unchanged decision with nothing due writes nothing. Returns the partners to
/// ask now (none on a failure, which is logged without the edge ID).
pub fn note_reader<'s>(
    edge_id: &str,
    asks: bool,
    decision: &Decision,
    settings: &'s Settings,
) -> Vec<&'s Bidder> {
    if !kept(settings) {
        return Vec::new();
    }
    let allowed = allowed_partners(decision, &settings.auction.bidders);
    let with_endpoint: Vec<&str> = (settings.auction.bidders.iter())
        .filter(|b| asks && b.id_path.is_some() && b.eid_source.is_some())
        .map(|b| &*b.code)
        .collect();
    let interval = u64::from(settings.ids.ask_interval_hours) * 3600;
    let now = now();
    let noted = Graph::open(&settings.ids.kv_store).and_then(|graph| {
        graph.update(edge_id, !allowed.is_empty(), ttl(settings), |entry| {
            let mut changed = entry.note_consent(&allowed, now);
            let due = entry.due_asks(&with_endpoint, &allowed, now, interval);
            for code in &due {
                changed |= entry.note_asked(code, now);
            }
            (due, changed)
        })
    });
    match noted {
        Ok(due) => (due.unwrap_or_default().into_iter())
            .filter_map(|code| settings.auction.bidders.iter().find(|b| b.code == code))
            .collect(),
        Err(e) => {
            log::warn!("partner IDs: a reader's consent was not recorded: {e}");
            Vec::new()
        }
    }
}

/// The partners' answers to the edge's asks for the reader with `edge_id` (`phases::id_asks`):
/// each ID given is stored as if the partner had pushed it (`Entry::set`: refused when the
/// reader's consent no longer allows the partner or they withdrew meanwhile). Returns each
/// given ID's partner and whether it was stored; failures are logged without the edge ID.
pub fn store_asked<'a>(
    edge_id: &str,
    answers: &[(&'a str, String)],
    settings: &Settings,
) -> Vec<(&'a str, bool)> {
    if answers.is_empty() {
        return Vec::new();
    }
    let ttl = ttl(settings);
    let now = now();
    let stored = Graph::open(&settings.ids.kv_store).and_then(|graph| {
        graph.update(edge_id, false, ttl, |entry| {
            let mut changed = false;
            let mut stored = Vec::with_capacity(answers.len());
            for (code, id) in answers {
                let set = entry.set(code, id, now, ttl.as_secs());
                changed |= set.as_ref().is_ok_and(|outcome| outcome.changed());
                stored.push((*code, set.is_ok()));
            }
            (stored, changed)
        })
    });
    match stored {
        Ok(stored) => stored.unwrap_or_default(),
        Err(e) => {
            log::warn!("partner IDs: the IDs partners gave were not stored: {e}");
            Vec::new()
        }
    }
}

/// A withdrawal by a reader whose request carried `edge_ids` (their `ts-ec` cookies): each
/// such entry becomes a tombstone (`Entry::withdraw`), which no later sync can fill. No entry
/// is made for an ID the graph does not hold. Failures are logged and change nothing.
pub fn erase(edge_ids: &[String], settings: &Settings) {
    if !kept(settings) {
        return;
    }
    for edge_id in edge_ids {
        if let IdsOutcome::Failed(e) = erase_one(edge_id, settings) {
            log::warn!("a withdrawal could not be applied: {e}");
        }
    }
}

/// What the graph holds for `edge_id`, for the admin (a reader's access request): the entry as
/// stored, or that there is none.
pub fn show(edge_id: &str, settings: &Settings) -> IdsOutcome {
    let held = Graph::open(&settings.ids.kv_store).and_then(|graph| graph.read(edge_id));
    match held {
        Ok(entry) => {
            IdsOutcome::Shown(entry.and_then(|e| serde_json::from_slice(&e.encode()).ok()))
        }
        Err(e) => IdsOutcome::Failed(format!("partner IDs: {e}")),
    }
}

/// Erases what the graph holds for `edge_id`, for the admin (a reader's erasure request): the
/// entry becomes a tombstone, as on a withdrawal. Whether there was one.
pub fn erase_one(edge_id: &str, settings: &Settings) -> IdsOutcome {
    let now = now();
    let erased = Graph::open(&settings.ids.kv_store).and_then(|graph| {
        graph.update(edge_id, false, ttl(settings), |entry| {
            ((), entry.withdraw(now))
        })
    });
    match erased {
        Ok(held) => IdsOutcome::Erased(held.is_some()),
        Err(e) => IdsOutcome::Failed(format!("partner IDs: {e}")),
    }
}

/// The reader's partner IDs for an auction: a lookup of `edge_id`'s entry started now, and a
/// closure that waits for it and gives each live ID of a partner the reader's `decision`
/// allows, under the partner's `eid_source`. `None` when the graph is not kept. A failed
/// lookup gives no IDs (logged): the auction goes on without them.
pub fn eids_for_auction<'a>(
    edge_id: &str,
    decision: &Decision,
    settings: &'a Settings,
) -> Option<impl FnOnce() -> Vec<PartnerEid> + 'a> {
    if !kept(settings) {
        return None;
    }
    let allowed = allowed_partners(decision, &settings.auction.bidders);
    let pending = Graph::open(&settings.ids.kv_store)
        .and_then(|graph| graph.lookup_async(edge_id).map(|pending| (graph, pending)));
    Some(move || {
        let entry = pending.and_then(|(graph, pending)| graph.wait(pending));
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                log::warn!("partner IDs: not read for an auction: {e}");
                None
            }
        };
        let Some(entry) = entry else {
            return Vec::new();
        };
        (entry.ids_for(&allowed, now()))
            .filter_map(|(code, id)| {
                let partner = settings.auction.bidders.iter().find(|b| b.code == code)?;
                Some(PartnerEid {
                    source: partner.eid_source.as_deref()?.to_owned(),
                    id: id.to_owned(),
                })
            })
            .collect()
    })
}

/// The graph's store, opened.
pub struct Graph {
    store: KVStore,
}

impl Graph {
    /// Opens the KV store `name`.
    pub fn open(name: &str) -> Result<Graph, GraphError> {
        match KVStore::open(name) {
            Ok(Some(store)) => Ok(Graph { store }),
            Ok(None) => Err(GraphError::NoStore(name.to_owned())),
            Err(KVStoreError::StoreNotFound(_)) => Err(GraphError::NoStore(name.to_owned())),
            Err(e) => Err(GraphError::Store(e)),
        }
    }

    /// The entry held for `edge_id`, if any.
    pub fn read(&self, edge_id: &str) -> Result<Option<Entry>, GraphError> {
        Ok(self.lookup(edge_id)?.map(|(entry, _)| entry))
    }

    /// Applies `change` to the entry of `edge_id` and writes it back by compare-and-set (see
    /// the module docs). `change` returns its answer and whether it changed the entry; it may
    /// run more than once, each time on the newest entry, and the answer returned is the one
    /// of the try that was written. Without an entry, `change` runs on a new one when
    /// `create` is true, and otherwise not at all (`Ok(None)`). `ttl` is the entry's time to
    /// live from this write.
    pub fn update<T>(
        &self,
        edge_id: &str,
        create: bool,
        ttl: Duration,
        mut change: impl FnMut(&mut Entry) -> (T, bool),
    ) -> Result<Option<T>, GraphError> {
        for _ in 0..MAX_TRIES {
            let (mut entry, generation) = match self.lookup(edge_id)? {
                Some((entry, generation)) => (entry, Some(generation)),
                None if create => (Entry::new(), None),
                None => return Ok(None),
            };
            let (answer, changed) = change(&mut entry);
            if !changed {
                return Ok(Some(answer));
            }
            let insert = self.store.build_insert().time_to_live(ttl);
            let insert = match generation {
                Some(generation) => insert.if_generation_match(generation),
                None => insert.mode(InsertMode::Add),
            };
            match insert.execute(edge_id, entry.encode()) {
                Ok(()) => return Ok(Some(answer)),
                Err(KVStoreError::ItemPreconditionFailed) => continue,
                Err(e) => return Err(GraphError::Store(e)),
            }
        }
        Err(GraphError::Contended)
    }

    /// Starts reading `edge_id`'s entry; [`Graph::wait`] gives it.
    pub fn lookup_async(&self, edge_id: &str) -> Result<PendingLookupHandle, GraphError> {
        (self.store.build_lookup().execute_async(edge_id)).map_err(GraphError::Store)
    }

    /// The entry a [`Graph::lookup_async`] read, if any.
    pub fn wait(&self, pending: PendingLookupHandle) -> Result<Option<Entry>, GraphError> {
        match self.store.pending_lookup_wait(pending) {
            Ok(mut found) => Entry::decode(&found.take_body_bytes())
                .map(Some)
                .map_err(GraphError::Unreadable),
            Err(KVStoreError::ItemNotFound) => Ok(None),
            Err(e) => Err(GraphError::Store(e)),
        }
    }

    /// The entry held for `edge_id` and the generation it was read at, if any.
    fn lookup(&self, edge_id: &str) -> Result<Option<(Entry, u64)>, GraphError> {
        match self.store.lookup(edge_id) {
            Ok(mut found) => {
                let generation = found.current_generation();
                let entry =
                    Entry::decode(&found.take_body_bytes()).map_err(GraphError::Unreadable)?;
                Ok(Some((entry, generation)))
            }
            Err(KVStoreError::ItemNotFound) => Ok(None),
            Err(e) => Err(GraphError::Store(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Under Viceroy, against the KV store `fastly.toml` declares for local runs.
    use super::*;

    const STORE: &str = "ts_partner_ids";
    const TTL: Duration = Duration::from_secs(3600);
    const NOW: u64 = 1_800_000_000;

    fn key(test: &str) -> String {
        format!("{}.{test}", "a".repeat(64))
    }

    fn allow(entry: &mut Entry, codes: &[&str]) -> bool {
        entry.note_consent(codes, NOW)
    }

    /// Sets `partner`'s ID on an entry whose consent allows both test partners.
    fn set(entry: &mut Entry, partner: &str, id: &str) -> (bool, bool) {
        let allowed = allow(entry, &["alpha", "beta"]);
        let set = entry.set(partner, id, NOW, 86_400);
        let changed = allowed || set.as_ref().is_ok_and(|o| o.changed());
        (set.is_ok(), changed)
    }

    #[test]
    fn a_change_between_a_read_and_its_write_is_kept_and_the_write_retried() {
        let graph = Graph::open(STORE).unwrap();
        let k = key("race01");
        // Partner beta's sync reads the entry; before it writes, alpha's whole sync lands.
        // First on a new entry (insert mode Add guards it), then on one that exists (its
        // generation does).
        for (a, b) in [("A-1", "B-1"), ("A-2", "B-2")] {
            let mut tries = 0;
            let beta = graph.update(&k, true, TTL, |entry| {
                tries += 1;
                if tries == 1 {
                    let alpha = graph.update(&k, true, TTL, |e| set(e, "alpha", a));
                    assert_eq!(alpha.unwrap(), Some(true));
                }
                set(entry, "beta", b)
            });
            assert_eq!(beta.unwrap(), Some(true));
            assert_eq!(tries, 2, "beta's first write must have met alpha's write");
            let entry = graph.read(&k).unwrap().unwrap();
            assert_eq!(entry.held("alpha").map(|h| h.id.as_str()), Some(a));
            assert_eq!(entry.held("beta").map(|h| h.id.as_str()), Some(b));
        }
    }

    #[test]
    fn without_an_entry_nothing_is_made_unless_asked() {
        let graph = Graph::open(STORE).unwrap();
        let k = key("none01");
        let ran = graph.update(&k, false, TTL, |e| set(e, "alpha", "A-1"));
        assert_eq!(ran.unwrap(), None);
        assert!(graph.read(&k).unwrap().is_none());
    }

    #[test]
    fn an_unchanged_entry_is_not_written() {
        let graph = Graph::open(STORE).unwrap();
        let k = key("same01");
        graph
            .update(&k, true, TTL, |e| set(e, "alpha", "A-1"))
            .unwrap();
        let generation = || graph.store.lookup(&k).unwrap().current_generation();
        let before = generation();
        let mut tries = 0;
        let answer = graph.update(&k, true, TTL, |_| {
            tries += 1;
            ("nothing", false)
        });
        assert_eq!(answer.unwrap(), Some("nothing"));
        assert_eq!(tries, 1);
        assert_eq!(generation(), before, "written although unchanged");
        // The same ID again, still live and no later expiry: unchanged, not written.
        graph
            .update(&k, true, TTL, |e| set(e, "alpha", "A-1"))
            .unwrap();
        assert_eq!(generation(), before, "the same ID again was written");
    }

    #[test]
    fn a_withdrawn_reader_stays_withdrawn() {
        let graph = Graph::open(STORE).unwrap();
        let k = key("gone01");
        graph
            .update(&k, true, TTL, |e| set(e, "alpha", "A-1"))
            .unwrap();
        let withdrawn = graph.update(&k, false, TTL, |e| ((), e.withdraw(NOW)));
        assert_eq!(withdrawn.unwrap(), Some(()));
        let late = graph.update(&k, false, TTL, |e| set(e, "beta", "B-1"));
        assert_eq!(late.unwrap(), Some(false), "a late sync was stored");
        let entry = graph.read(&k).unwrap().unwrap();
        assert!(entry.withdrawn().is_some());
        assert!(entry.held("alpha").is_none() && entry.held("beta").is_none());
    }

    #[test]
    fn an_unreadable_entry_is_reported_and_left_alone() {
        let graph = Graph::open(STORE).unwrap();
        let k = key("junk01");
        graph.store.insert(&k, "not an entry").unwrap();
        let e = graph.update(&k, true, TTL, |e| set(e, "alpha", "A-1"));
        assert!(matches!(e, Err(GraphError::Unreadable(_))), "{e:?}");
        let mut held = graph.store.lookup(&k).unwrap();
        assert_eq!(held.take_body_bytes(), b"not an entry");
    }

    #[test]
    fn a_store_that_is_not_linked_is_named() {
        let e = Graph::open("no_such_store").err().unwrap();
        assert!(e.to_string().contains("no_such_store"), "{e}");
    }
}
