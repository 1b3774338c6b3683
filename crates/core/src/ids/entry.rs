//! [`Entry`]: what is held for one reader, the operations on it, and its encoding.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// The longest partner ID stored, in bytes. Partners' IDs are UUIDs, hex digests or base64
/// tokens of a few dozen bytes; the bound keeps a full entry under [`MAX_ENTRY_BYTES`].
pub const MAX_PARTNER_ID_LEN: usize = 256;

/// The longest partner code, in bytes (codes are the settings' names for partners, like
/// Prebid's bidder codes).
pub const MAX_PARTNER_CODE_LEN: usize = 32;

/// The most partners one entry holds anything for: IDs, allowed codes and asks alike.
pub const MAX_PARTNERS: usize = 32;

/// The largest encoded entry, in bytes. [`Entry::encode`] stays within it for every entry the
/// operations can make (the bounds above are chosen so; a test builds the largest one), and
/// [`Entry::decode`] refuses anything larger before parsing it.
pub const MAX_ENTRY_BYTES: usize = 16 * 1024;

/// The encoding's version, the `"v"` of [`Entry::encode`].
pub const ENTRY_VERSION: u64 = 1;

/// Whether `code` can name a partner: 1 to [`MAX_PARTNER_CODE_LEN`] ASCII letters, digits,
/// `-` or `_`.
pub fn is_partner_code(code: &str) -> bool {
    (1..=MAX_PARTNER_CODE_LEN).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Why `id` cannot be stored as a partner ID, if it cannot.
///
/// An ID is 1 to [`MAX_PARTNER_ID_LEN`] bytes of ASCII letters, digits and `-._~+/=`: the
/// URL-unreserved characters plus base64's, which covers UUIDs, hex, base64 and base64url.
/// Nothing else: no spaces, quotes, backslashes, `<`, `&`, `;` or `,`, so a stored ID needs no
/// escaping wherever the adapter later puts it (JSON, a URL, a header, a cookie).
pub fn partner_id_problem(id: &str) -> Option<&'static str> {
    if id.is_empty() {
        Some("empty partner ID")
    } else if id.len() > MAX_PARTNER_ID_LEN {
        Some("partner ID longer than 256 bytes")
    } else if !id.bytes().all(is_partner_id_byte) {
        Some("partner ID has a character outside A-Z a-z 0-9 - . _ ~ + / =")
    } else {
        None
    }
}

fn is_partner_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// One partner's ID for the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The partner's ID.
    pub id: String,
    /// When this ID was first stored (unix seconds); a refresh keeps it.
    pub set_at: u64,
    /// When it stops being live (unix seconds): live while `now < expires_at`.
    pub expires_at: u64,
}

/// The reader's consent as the edge last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Consent {
    /// The partner codes whose vendor the reader's decision allows.
    allowed: BTreeSet<String>,
    /// Since when this decision has held: when the edge first saw this set.
    since: u64,
}

/// What [`Entry::set`] did. Every outcome but [`Unchanged`](SetOutcome::Unchanged) changed
/// the entry, so the adapter writes it back ([`changed`](SetOutcome::changed)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOutcome {
    /// A new ID, or a different one than held (or than an expired one): stored, `set_at` now.
    Stored,
    /// The same ID as held, live: its expiry moved to `now + ttl` (never earlier than it
    /// was), `set_at` kept.
    Refreshed,
    /// The same ID as held, whose expiry is already at least `now + ttl`: nothing changed.
    Unchanged,
}

impl SetOutcome {
    /// Whether the entry changed and must be written back.
    pub fn changed(self) -> bool {
        !matches!(self, SetOutcome::Unchanged)
    }
}

/// Why [`Entry::set`] stored nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The entry is a tombstone: nothing is ever stored in it again.
    Withdrawn,
    /// The partner is not among the codes the reader's last seen consent allows (or no consent
    /// was seen yet).
    NotAllowed,
    /// The ID breaks the rules of [`partner_id_problem`], which says why.
    Malformed(&'static str),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Withdrawn => f.write_str("the reader withdrew; nothing is stored"),
            Refusal::NotAllowed => f.write_str("the reader's consent does not allow this partner"),
            Refusal::Malformed(why) => f.write_str(why),
        }
    }
}

/// Why [`Entry::decode`] refused its bytes. Never a panic: whatever the store holds, the
/// adapter gets one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// More than [`MAX_ENTRY_BYTES`] (the length given).
    TooLarge(usize),
    /// Not JSON.
    NotJson,
    /// JSON whose `"v"` is missing or not [`ENTRY_VERSION`].
    Version,
    /// The right version, but a field breaks the entry's rules (which one, said here).
    Invalid(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::TooLarge(len) => {
                write!(f, "entry of {len} bytes, over {MAX_ENTRY_BYTES}")
            }
            DecodeError::NotJson => f.write_str("entry is not JSON"),
            DecodeError::Version => write!(f, "entry is not of version {ENTRY_VERSION}"),
            DecodeError::Invalid(why) => write!(f, "invalid entry: {why}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// What is held for one reader, under their edge ID: the partners' IDs, the consent last seen,
/// when each partner was last asked, or a tombstone. See the [module](crate::ids) for why.
///
/// Invariants, kept by every operation and checked by [`decode`](Entry::decode): every held ID
/// is valid ([`partner_id_problem`]) and its partner is allowed by the consent held; at most
/// [`MAX_PARTNERS`] codes in each part; a withdrawn entry holds nothing else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    ids: BTreeMap<String, Held>,
    consent: Option<Consent>,
    asked: BTreeMap<String, u64>,
    withdrawn: Option<u64>,
}

impl Entry {
    /// An empty entry: no IDs and no consent seen, so every [`set`](Entry::set) is refused
    /// until [`note_consent`](Entry::note_consent).
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `id` as `partner`'s ID, live until `now + ttl_secs`.
    ///
    /// The ID is checked first (so the answer to a malformed ID never depends on what is
    /// held), then the tombstone, then the consent.
    ///
    /// # Errors
    /// [`Refusal::Malformed`], [`Refusal::Withdrawn`], [`Refusal::NotAllowed`]; nothing changed.
    pub fn set(
        &mut self,
        partner: &str,
        id: &str,
        now: u64,
        ttl_secs: u64,
    ) -> Result<SetOutcome, Refusal> {
        if let Some(why) = partner_id_problem(id) {
            return Err(Refusal::Malformed(why));
        }
        if self.withdrawn.is_some() {
            return Err(Refusal::Withdrawn);
        }
        if !self.allows(partner) {
            return Err(Refusal::NotAllowed);
        }
        let expires_at = now.saturating_add(ttl_secs);
        match self.ids.get_mut(partner) {
            Some(held) if held.id == id && now < held.expires_at => {
                if expires_at > held.expires_at {
                    held.expires_at = expires_at;
                    Ok(SetOutcome::Refreshed)
                } else {
                    Ok(SetOutcome::Unchanged)
                }
            }
            _ => {
                let held = Held {
                    id: id.to_owned(),
                    set_at: now,
                    expires_at,
                };
                self.ids.insert(partner.to_owned(), held);
                Ok(SetOutcome::Stored)
            }
        }
    }

    /// Records the reader's consent decision: `allowed` are the partner codes whose vendor it
    /// allows. A partner no longer allowed loses its ID at once (withdrawal per vendor).
    ///
    /// Codes that cannot name a partner ([`is_partner_code`]) are ignored, and past
    /// [`MAX_PARTNERS`] only the first in code order are kept (a partner left out is refused,
    /// the safe side). The time is recorded only when the set changes, so a reader whose
    /// decision stays the same costs no write. Does nothing on a withdrawn entry.
    ///
    /// Returns whether the entry changed.
    pub fn note_consent(&mut self, allowed: &[&str], now: u64) -> bool {
        if self.withdrawn.is_some() {
            return false;
        }
        let allowed: BTreeSet<String> = (allowed.iter())
            .filter(|code| is_partner_code(code))
            .map(|code| (*code).to_owned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .take(MAX_PARTNERS)
            .collect();
        let before = self.ids.len();
        self.ids.retain(|code, _| allowed.contains(code));
        let dropped = self.ids.len() != before;
        let same = (self.consent.as_ref()).is_some_and(|seen| seen.allowed == allowed);
        if !same {
            self.consent = Some(Consent {
                allowed,
                since: now,
            });
        }
        dropped || !same
    }

    /// Makes the entry a tombstone: every ID, the consent and the asks are dropped, and no later
    /// operation stores anything again; only the entry's own expiry in the store removes it.
    /// Withdrawing again keeps the first time.
    ///
    /// Returns whether the entry changed.
    pub fn withdraw(&mut self, now: u64) -> bool {
        if self.withdrawn.is_some() {
            return false;
        }
        *self = Entry {
            withdrawn: Some(now),
            ..Entry::default()
        };
        true
    }

    /// Drops every ID whose expiry has come (`now >= expires_at`).
    ///
    /// Returns whether any was dropped.
    pub fn live(&mut self, now: u64) -> bool {
        let before = self.ids.len();
        self.ids.retain(|_, held| now < held.expires_at);
        self.ids.len() != before
    }

    /// The IDs to send: `(partner code, ID)` for each partner in `allowed` whose ID is live at
    /// `now`, in code order.
    pub fn ids_for<'a>(
        &'a self,
        allowed: &'a [&'a str],
        now: u64,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        (self.ids.iter())
            .filter(move |(code, held)| now < held.expires_at && allowed.contains(&code.as_str()))
            .map(|(code, held)| (code.as_str(), held.id.as_str()))
    }

    /// The partners to ask for their ID now, in the order of `with_endpoint`: those with an ID
    /// endpoint, allowed by `allowed`, without a live ID, and not asked in the last
    /// `interval_secs` (an ask recorded in the future, from a clock step, counts as recent).
    /// None on a withdrawn entry.
    pub fn due_asks<'p>(
        &self,
        with_endpoint: &[&'p str],
        allowed: &[&str],
        now: u64,
        interval_secs: u64,
    ) -> Vec<&'p str> {
        if self.withdrawn.is_some() {
            return Vec::new();
        }
        (with_endpoint.iter().copied())
            .filter(|code| allowed.contains(code))
            .filter(|code| self.ids.get(*code).is_none_or(|h| now >= h.expires_at))
            .filter(|code| match self.asked.get(*code) {
                Some(&at) => at <= now && now - at >= interval_secs,
                None => true,
            })
            .collect()
    }

    /// Records that `partner`'s ID endpoint was asked at `now`. Past [`MAX_PARTNERS`] codes the
    /// oldest ask is forgotten (asks only pace the next ones). Does nothing on a withdrawn
    /// entry or for a code that cannot name a partner.
    ///
    /// Returns whether the entry changed.
    pub fn note_asked(&mut self, partner: &str, now: u64) -> bool {
        if self.withdrawn.is_some() || !is_partner_code(partner) {
            return false;
        }
        if self.asked.insert(partner.to_owned(), now) == Some(now) {
            return false;
        }
        while self.asked.len() > MAX_PARTNERS {
            let oldest = (self.asked.iter())
                .filter(|(code, _)| code.as_str() != partner)
                .min_by_key(|(code, at)| (**at, code.as_str()))
                .map(|(code, _)| code.clone());
            match oldest {
                Some(code) => self.asked.remove(&code),
                None => break,
            };
        }
        true
    }

    /// `partner`'s ID as held, live or not (see [`live`](Entry::live)).
    pub fn held(&self, partner: &str) -> Option<&Held> {
        self.ids.get(partner)
    }

    /// The partner codes the last seen consent allows, in code order (none before any was seen).
    pub fn allowed(&self) -> impl Iterator<Item = &str> {
        (self.consent.iter()).flat_map(|c| c.allowed.iter().map(String::as_str))
    }

    /// Whether the last seen consent allows `partner`.
    pub fn allows(&self, partner: &str) -> bool {
        (self.consent.as_ref()).is_some_and(|c| c.allowed.contains(partner))
    }

    /// Since when the consent held has held (unix seconds), if any was seen.
    pub fn consent_since(&self) -> Option<u64> {
        self.consent.as_ref().map(|c| c.since)
    }

    /// When `partner`'s ID endpoint was last asked (unix seconds).
    pub fn asked_at(&self, partner: &str) -> Option<u64> {
        self.asked.get(partner).copied()
    }

    /// When the entry was withdrawn (unix seconds), if it is a tombstone.
    pub fn withdrawn(&self) -> Option<u64> {
        self.withdrawn
    }

    /// The latest time recorded anywhere in the entry (0 for an empty one): what the store's
    /// time to live should count from.
    pub fn last_touched(&self) -> u64 {
        let ids = self.ids.values().map(|h| h.set_at);
        let asked = self.asked.values().copied();
        (ids.chain(asked))
            .chain(self.consent_since())
            .chain(self.withdrawn)
            .max()
            .unwrap_or(0)
    }

    /// When the whole entry may go, for a store time to live of `ttl_secs`:
    /// [`last_touched`](Entry::last_touched) plus it, and never before its last live ID expires
    /// (a tombstone's is its withdrawal plus it).
    pub fn expires_at(&self, ttl_secs: u64) -> u64 {
        let last_id = self.ids.values().map(|h| h.expires_at).max().unwrap_or(0);
        self.last_touched().saturating_add(ttl_secs).max(last_id)
    }

    /// The entry as compact JSON, `{"v":1,...}`; see [`decode`](Entry::decode) for the fields.
    /// Empty parts are left out. At most [`MAX_ENTRY_BYTES`] for every entry the operations
    /// make.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Map::new();
        out.insert("v".into(), ENTRY_VERSION.into());
        if let Some(at) = self.withdrawn {
            out.insert("withdrawn".into(), at.into());
        }
        if !self.ids.is_empty() {
            let ids = (self.ids.iter())
                .map(|(code, held)| {
                    let mut one = Map::new();
                    one.insert("id".into(), held.id.clone().into());
                    one.insert("set".into(), held.set_at.into());
                    one.insert("exp".into(), held.expires_at.into());
                    (code.clone(), Value::Object(one))
                })
                .collect();
            out.insert("ids".into(), Value::Object(ids));
        }
        if let Some(consent) = &self.consent {
            let allowed = consent.allowed.iter().cloned().map(Value::from).collect();
            out.insert("allow".into(), Value::Array(allowed));
            out.insert("allow_since".into(), consent.since.into());
        }
        if !self.asked.is_empty() {
            let asked = (self.asked.iter())
                .map(|(code, at)| (code.clone(), Value::from(*at)))
                .collect();
            out.insert("asked".into(), Value::Object(asked));
        }
        Value::Object(out).to_string().into_bytes()
    }

    /// Reads what [`encode`](Entry::encode) wrote. The fields:
    ///
    /// | field | value |
    /// | --- | --- |
    /// | `v` | `1` |
    /// | `ids` | `{code: {"id": ID, "set": secs, "exp": secs}}`, with `set <= exp` |
    /// | `allow` | `[code, ...]`, no duplicates: the codes the consent allows |
    /// | `allow_since` | secs, present exactly when `allow` is |
    /// | `asked` | `{code: secs}` |
    /// | `withdrawn` | secs; then no other field but `v` |
    ///
    /// Every part is optional (absent is empty), no other field is allowed, and every rule of
    /// the operations holds (codes, IDs, [`MAX_PARTNERS`], each ID's partner allowed).
    ///
    /// # Errors
    /// [`DecodeError`]: over [`MAX_ENTRY_BYTES`], not JSON, another version, or a broken rule.
    pub fn decode(bytes: &[u8]) -> Result<Entry, DecodeError> {
        if bytes.len() > MAX_ENTRY_BYTES {
            return Err(DecodeError::TooLarge(bytes.len()));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|_| DecodeError::NotJson)?;
        let Value::Object(fields) = value else {
            return Err(DecodeError::Version);
        };
        if fields.get("v").and_then(Value::as_u64) != Some(ENTRY_VERSION) {
            return Err(DecodeError::Version);
        }
        let invalid = DecodeError::Invalid;
        let mut entry = Entry::default();
        for (name, value) in &fields {
            match name.as_str() {
                "v" => {}
                "withdrawn" => entry.withdrawn = Some(secs(value)?),
                "ids" => entry.ids = read_ids(value)?,
                "allow" => {
                    let since = fields
                        .get("allow_since")
                        .ok_or(invalid("allow without since"))?;
                    entry.consent = Some(Consent {
                        allowed: read_allowed(value)?,
                        since: secs(since)?,
                    });
                }
                "allow_since" if fields.contains_key("allow") => {}
                "allow_since" => return Err(invalid("allow_since without allow")),
                "asked" => entry.asked = read_asked(value)?,
                _ => return Err(invalid("unknown field")),
            }
        }
        if entry.withdrawn.is_some() && fields.len() > 2 {
            return Err(invalid("withdrawn entry holds more"));
        }
        if !entry.ids.keys().all(|code| entry.allows(code)) {
            return Err(invalid("ID of a partner the consent does not allow"));
        }
        Ok(entry)
    }
}

fn secs(value: &Value) -> Result<u64, DecodeError> {
    value
        .as_u64()
        .ok_or(DecodeError::Invalid("time not an integer >= 0"))
}

/// A JSON object of at most [`MAX_PARTNERS`] partner codes.
fn partner_object(value: &Value) -> Result<&Map<String, Value>, DecodeError> {
    let map = value
        .as_object()
        .ok_or(DecodeError::Invalid("not an object"))?;
    if map.len() > MAX_PARTNERS {
        return Err(DecodeError::Invalid("more partners than MAX_PARTNERS"));
    }
    if !map.keys().all(|code| is_partner_code(code)) {
        return Err(DecodeError::Invalid("not a partner code"));
    }
    Ok(map)
}

fn read_ids(value: &Value) -> Result<BTreeMap<String, Held>, DecodeError> {
    let invalid = DecodeError::Invalid;
    let mut ids = BTreeMap::new();
    for (code, one) in partner_object(value)? {
        let one = one.as_object().ok_or(invalid("ID not an object"))?;
        if one.len() != 3 {
            return Err(invalid("ID fields not exactly id, set, exp"));
        }
        let id = (one.get("id").and_then(Value::as_str)).ok_or(invalid("id not a string"))?;
        if let Some(why) = partner_id_problem(id) {
            return Err(invalid(why));
        }
        let set_at = secs(one.get("set").ok_or(invalid("no set"))?)?;
        let expires_at = secs(one.get("exp").ok_or(invalid("no exp"))?)?;
        if set_at > expires_at {
            return Err(invalid("set after exp"));
        }
        let held = Held {
            id: id.to_owned(),
            set_at,
            expires_at,
        };
        ids.insert(code.clone(), held);
    }
    Ok(ids)
}

fn read_allowed(value: &Value) -> Result<BTreeSet<String>, DecodeError> {
    let list = (value.as_array()).ok_or(DecodeError::Invalid("allow not an array"))?;
    if list.len() > MAX_PARTNERS {
        return Err(DecodeError::Invalid("more partners than MAX_PARTNERS"));
    }
    let mut allowed = BTreeSet::new();
    for code in list {
        let code = (code.as_str())
            .filter(|code| is_partner_code(code))
            .ok_or(DecodeError::Invalid("not a partner code"))?;
        if !allowed.insert(code.to_owned()) {
            return Err(DecodeError::Invalid("allow has a code twice"));
        }
    }
    Ok(allowed)
}

fn read_asked(value: &Value) -> Result<BTreeMap<String, u64>, DecodeError> {
    (partner_object(value)?.iter())
        .map(|(code, at)| Ok((code.clone(), secs(at)?)))
        .collect()
}

#[cfg(test)]
mod tests;
