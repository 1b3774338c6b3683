use super::*;
use proptest::prelude::*;

const DAY: u64 = 24 * 60 * 60;

fn allowing(codes: &[&str], now: u64) -> Entry {
    let mut entry = Entry::new();
    assert!(entry.note_consent(codes, now));
    entry
}

#[test]
fn set_needs_consent_and_a_valid_id() {
    let mut entry = Entry::new();
    assert_eq!(entry.set("fast", "abc", 10, DAY), Err(Refusal::NotAllowed));
    entry.note_consent(&["fast"], 10);
    assert_eq!(entry.set("slow", "abc", 10, DAY), Err(Refusal::NotAllowed));
    for bad in [
        "", "a b", "a\"b", "a'b", "a\\b", "a<b", "a;b", "a,b", "é", "a\u{0}b",
    ] {
        assert!(
            matches!(entry.set("fast", bad, 10, DAY), Err(Refusal::Malformed(_))),
            "{bad:?}"
        );
    }
    let long = "a".repeat(MAX_PARTNER_ID_LEN + 1);
    assert!(matches!(
        entry.set("fast", &long, 10, DAY),
        Err(Refusal::Malformed(_))
    ));
    assert_eq!(entry.held("fast"), None);

    let longest = "Z".repeat(MAX_PARTNER_ID_LEN);
    assert_eq!(entry.set("fast", &longest, 10, DAY), Ok(SetOutcome::Stored));
    let base64ish = "aZ09-._~+/=";
    assert_eq!(
        entry.set("fast", base64ish, 11, DAY),
        Ok(SetOutcome::Stored)
    );
    assert_eq!(
        entry.held("fast"),
        Some(&Held {
            id: base64ish.into(),
            set_at: 11,
            expires_at: 11 + DAY
        })
    );
}

#[test]
fn the_same_id_again_only_moves_the_expiry_later() {
    let mut entry = allowing(&["fast"], 0);
    assert_eq!(entry.set("fast", "x1", 100, 50), Ok(SetOutcome::Stored));
    // Same second, same TTL: the expiry would not move.
    assert_eq!(entry.set("fast", "x1", 100, 50), Ok(SetOutcome::Unchanged));
    // A shorter TTL never shortens it.
    assert_eq!(entry.set("fast", "x1", 120, 10), Ok(SetOutcome::Unchanged));
    assert_eq!(entry.set("fast", "x1", 120, 50), Ok(SetOutcome::Refreshed));
    assert_eq!(
        entry.held("fast"),
        Some(&Held {
            id: "x1".into(),
            set_at: 100,
            expires_at: 170
        })
    );
    // Once expired, the same ID is a new store.
    assert_eq!(entry.set("fast", "x1", 170, 50), Ok(SetOutcome::Stored));
    assert_eq!(entry.held("fast").unwrap().set_at, 170);
    // A different ID replaces it.
    assert_eq!(entry.set("fast", "x2", 171, 50), Ok(SetOutcome::Stored));
    assert_eq!(entry.held("fast").unwrap().id, "x2");
    assert!(SetOutcome::Stored.changed() && SetOutcome::Refreshed.changed());
    assert!(!SetOutcome::Unchanged.changed());
}

#[test]
fn a_partner_no_longer_allowed_loses_its_id_at_once() {
    let mut entry = allowing(&["fast", "slow"], 0);
    entry.set("fast", "f", 1, DAY).unwrap();
    entry.set("slow", "s", 1, DAY).unwrap();
    assert!(!entry.note_consent(&["slow", "fast"], 5), "same set");
    assert_eq!(entry.consent_since(), Some(0));
    assert!(entry.note_consent(&["slow", "bad code!"], 7));
    assert_eq!(entry.held("fast"), None);
    assert_eq!(entry.held("slow").unwrap().id, "s");
    assert_eq!(entry.allowed().collect::<Vec<_>>(), ["slow"]);
    assert_eq!(entry.consent_since(), Some(7));
    assert_eq!(entry.set("fast", "f", 8, DAY), Err(Refusal::NotAllowed));
}

#[test]
fn consent_keeps_at_most_max_partners_codes() {
    let codes: Vec<String> = (0..MAX_PARTNERS + 5).map(|i| format!("p{i:03}")).collect();
    let refs: Vec<&str> = codes.iter().map(String::as_str).collect();
    let entry = allowing(&refs, 0);
    assert_eq!(entry.allowed().count(), MAX_PARTNERS);
    assert!(entry.allows("p000") && entry.allows("p031"));
    assert!(!entry.allows("p032"));
}

#[test]
fn withdraw_is_a_tombstone() {
    let mut entry = allowing(&["fast"], 0);
    entry.set("fast", "f", 1, DAY).unwrap();
    entry.note_asked("fast", 1);
    assert!(entry.withdraw(50));
    assert!(!entry.withdraw(60), "withdrawing again changes nothing");
    assert_eq!(entry.withdrawn(), Some(50));
    assert_eq!(entry.held("fast"), None);
    assert_eq!(entry.allowed().count(), 0);
    assert_eq!(entry.asked_at("fast"), None);
    assert!(!entry.note_consent(&["fast"], 70));
    assert_eq!(entry.set("fast", "f", 80, DAY), Err(Refusal::Withdrawn));
    assert!(entry.due_asks(&["fast"], &["fast"], 90, 0).is_empty());
    assert_eq!(entry.encode(), br#"{"v":1,"withdrawn":50}"#);
    assert_eq!(entry.expires_at(100), 150);
}

#[test]
fn an_expired_id_is_not_sent_and_live_drops_it() {
    let mut entry = allowing(&["fast", "slow"], 0);
    entry.set("fast", "f", 100, 10).unwrap(); // expires at 110
    entry.set("slow", "s", 100, 20).unwrap(); // expires at 120
    let both = ["fast", "slow"];
    assert_eq!(
        entry.ids_for(&both, 109).collect::<Vec<_>>(),
        [("fast", "f"), ("slow", "s")]
    );
    assert_eq!(
        entry.ids_for(&both, 110).collect::<Vec<_>>(),
        [("slow", "s")]
    );
    assert_eq!(
        entry.ids_for(&["fast"], 105).collect::<Vec<_>>(),
        [("fast", "f")]
    );
    assert!(!entry.live(109));
    assert!(entry.held("fast").is_some());
    assert!(entry.live(110));
    assert_eq!(entry.held("fast"), None);
    assert_eq!(entry.held("slow").unwrap().id, "s");
    assert!(entry.live(500));
    assert_eq!(entry.ids_for(&both, 500).count(), 0);
}

#[test]
fn asks_are_due_once_per_interval_and_not_with_a_live_id() {
    let mut entry = allowing(&["a", "b", "c"], 0);
    let endpoints = ["c", "b", "a", "d"];
    let allowed = ["a", "b", "d"];
    // "c" is not allowed by this request's decision; "d" has an endpoint and is allowed.
    assert_eq!(
        entry.due_asks(&endpoints, &allowed, 1000, 600),
        ["b", "a", "d"]
    );
    assert!(entry.note_asked("a", 1000));
    assert!(!entry.note_asked("a", 1000));
    entry.set("b", "held", 1000, DAY).unwrap();
    assert_eq!(entry.due_asks(&endpoints, &allowed, 1599, 600), ["d"]);
    assert_eq!(entry.due_asks(&endpoints, &allowed, 1600, 600), ["a", "d"]);
    // An ask recorded in the future (a clock step) counts as recent.
    entry.note_asked("d", 5000);
    assert_eq!(entry.due_asks(&endpoints, &allowed, 1600, 600), ["a"]);
    assert!(!entry.note_asked("not a code", 1));
}

#[test]
fn asks_keep_at_most_max_partners_forgetting_the_oldest() {
    let mut entry = Entry::new();
    for i in 0..MAX_PARTNERS {
        entry.note_asked(&format!("p{i}"), 100 + i as u64);
    }
    assert!(entry.note_asked("late", 10));
    assert_eq!(entry.asked.len(), MAX_PARTNERS);
    assert_eq!(
        entry.asked_at("p0"),
        None,
        "the oldest but the new one goes"
    );
    assert_eq!(entry.asked_at("late"), Some(10));
    assert_eq!(entry.asked_at("p1"), Some(101));
}

#[test]
fn last_touched_and_expiry() {
    let mut entry = Entry::new();
    assert_eq!(entry.last_touched(), 0);
    entry.note_consent(&["fast"], 10);
    entry.note_asked("slow", 30);
    entry.set("fast", "f", 20, 1000).unwrap();
    assert_eq!(entry.last_touched(), 30);
    assert_eq!(entry.expires_at(100), 1020, "the live ID outlasts 30 + 100");
    assert_eq!(entry.expires_at(2000), 2030);
}

#[test]
fn encoding_by_hand() {
    let mut entry = allowing(&["slow", "fast"], 5);
    entry.set("fast", "f-1", 10, 90).unwrap();
    entry.note_asked("slow", 7);
    let written = String::from_utf8(entry.encode()).unwrap();
    assert_eq!(
        written,
        r#"{"allow":["fast","slow"],"allow_since":5,"asked":{"slow":7},"ids":{"fast":{"exp":100,"id":"f-1","set":10}},"v":1}"#
    );
    assert_eq!(Entry::decode(written.as_bytes()), Ok(entry));
    assert_eq!(Entry::decode(br#"{"v":1}"#), Ok(Entry::new()));
}

#[test]
fn decode_refuses_what_breaks_the_rules() {
    let cases: &[(&[u8], DecodeError)] = &[
        (b"", DecodeError::NotJson),
        (b"{\"v\":1", DecodeError::NotJson),
        (b"[1]", DecodeError::Version),
        (br#"{}"#, DecodeError::Version),
        (br#"{"v":2}"#, DecodeError::Version),
        (br#"{"v":"1"}"#, DecodeError::Version),
        (br#"{"v":1,"x":0}"#, DecodeError::Invalid("unknown field")),
        (
            br#"{"v":1,"allow":["a"]}"#,
            DecodeError::Invalid("allow without since"),
        ),
        (
            br#"{"v":1,"allow_since":3}"#,
            DecodeError::Invalid("allow_since without allow"),
        ),
        (
            br#"{"v":1,"allow":["a","a"],"allow_since":3}"#,
            DecodeError::Invalid("allow has a code twice"),
        ),
        (
            br#"{"v":1,"allow":["a b"],"allow_since":3}"#,
            DecodeError::Invalid("not a partner code"),
        ),
        (
            br#"{"v":1,"ids":{"a":{"id":"x","set":1,"exp":2}}}"#,
            DecodeError::Invalid("ID of a partner the consent does not allow"),
        ),
        (
            br#"{"v":1,"allow":["a"],"allow_since":0,"ids":{"a":{"id":"x y","set":1,"exp":2}}}"#,
            DecodeError::Invalid(
                "partner ID has a character outside A-Z a-z 0-9 - . _ ~ + / =",
            ),
        ),
        (
            br#"{"v":1,"allow":["a"],"allow_since":0,"ids":{"a":{"id":"x","set":3,"exp":2}}}"#,
            DecodeError::Invalid("set after exp"),
        ),
        (
            br#"{"v":1,"allow":["a"],"allow_since":0,"ids":{"a":{"id":"x","set":-1,"exp":2}}}"#,
            DecodeError::Invalid("time not an integer >= 0"),
        ),
        (
            br#"{"v":1,"allow":["a"],"allow_since":0,"ids":{"a":{"id":"x","set":1,"exp":2,"z":0}}}"#,
            DecodeError::Invalid("ID fields not exactly id, set, exp"),
        ),
        (
            br#"{"v":1,"withdrawn":3,"asked":{"a":1}}"#,
            DecodeError::Invalid("withdrawn entry holds more"),
        ),
        (
            br#"{"v":1,"asked":{"a":1.5}}"#,
            DecodeError::Invalid("time not an integer >= 0"),
        ),
    ];
    for (bytes, expected) in cases {
        assert_eq!(
            Entry::decode(bytes).as_ref(),
            Err(expected),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
    let asked: Vec<String> = (0..=MAX_PARTNERS).map(|i| format!("\"p{i}\":1")).collect();
    let too_many = format!(r#"{{"v":1,"asked":{{{}}}}}"#, asked.join(","));
    assert_eq!(
        Entry::decode(too_many.as_bytes()),
        Err(DecodeError::Invalid("more partners than MAX_PARTNERS"))
    );
    let big = vec![b' '; MAX_ENTRY_BYTES + 1];
    assert_eq!(
        Entry::decode(&big),
        Err(DecodeError::TooLarge(MAX_ENTRY_BYTES + 1))
    );
}

/// The largest entry the operations can make: every part full, every code and ID at its
/// longest, every time at `u64::MAX`'s 20 digits.
#[test]
fn the_largest_entry_fits() {
    let codes: Vec<String> = (0..MAX_PARTNERS)
        .map(|i| format!("{i:0>width$}", width = MAX_PARTNER_CODE_LEN))
        .collect();
    let refs: Vec<&str> = codes.iter().map(String::as_str).collect();
    let now = u64::MAX - 1;
    let mut entry = allowing(&refs, now);
    let id = "=".repeat(MAX_PARTNER_ID_LEN);
    for code in &refs {
        assert_eq!(entry.set(code, &id, now, 0), Ok(SetOutcome::Stored));
        assert!(entry.note_asked(code, now));
    }
    let bytes = entry.encode();
    assert!(bytes.len() <= MAX_ENTRY_BYTES, "{} bytes", bytes.len());
    assert!(
        bytes.len() > MAX_ENTRY_BYTES / 2,
        "the bound is not loose by far"
    );
    assert_eq!(Entry::decode(&bytes), Ok(entry));
}

/// An operation on an entry, as a proptest input.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Set(usize, String, u64, u64),
    Consent(Vec<usize>, u64),
    Asked(usize, u64),
    Withdraw(u64),
    Live(u64),
}

pub(crate) const CODES: [&str; 5] = ["fast", "slow", "a-b", "X_1", "p9"];

pub(crate) fn partner_id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9._~+/=-]{1,40}"
}

pub(crate) fn op() -> impl Strategy<Value = Op> {
    let time = 0u64..2_000_000_000;
    prop_oneof![
        4 => (0..CODES.len(), partner_id(), time.clone(), 0u64..1_000_000)
            .prop_map(|(c, id, now, ttl)| Op::Set(c, id, now, ttl)),
        2 => (proptest::collection::vec(0..CODES.len(), 0..6), time.clone())
            .prop_map(|(c, now)| Op::Consent(c, now)),
        1 => (0..CODES.len(), time.clone()).prop_map(|(c, now)| Op::Asked(c, now)),
        1 => time.clone().prop_map(Op::Withdraw),
        1 => time.prop_map(Op::Live),
    ]
}

pub(crate) fn apply(entry: &mut Entry, op: &Op) {
    match op {
        Op::Set(c, id, now, ttl) => {
            let _ = entry.set(CODES[*c], id, *now, *ttl);
        }
        Op::Consent(codes, now) => {
            let codes: Vec<&str> = codes.iter().map(|c| CODES[*c]).collect();
            entry.note_consent(&codes, *now);
        }
        Op::Asked(c, now) => {
            entry.note_asked(CODES[*c], *now);
        }
        Op::Withdraw(now) => {
            entry.withdraw(*now);
        }
        Op::Live(now) => {
            entry.live(*now);
        }
    }
}

/// Entries the operations can reach: every valid entry is one.
fn entry() -> impl Strategy<Value = Entry> {
    proptest::collection::vec(op(), 0..24).prop_map(|ops| {
        let mut entry = Entry::new();
        for op in &ops {
            apply(&mut entry, op);
        }
        entry
    })
}

proptest! {
    #[test]
    fn encode_then_decode_is_the_same_entry(entry in entry()) {
        let bytes = entry.encode();
        prop_assert!(bytes.len() <= MAX_ENTRY_BYTES);
        prop_assert_eq!(Entry::decode(&bytes), Ok(entry));
    }

    #[test]
    fn decode_of_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Entry::decode(&bytes);
    }

    /// Bytes close to an entry: a valid encoding with one byte changed. Whatever decodes must
    /// keep the invariants, so encoding it again decodes to the same entry.
    #[test]
    fn decode_of_a_mangled_entry_keeps_the_rules(
        entry in entry(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = entry.encode();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        if let Ok(read) = Entry::decode(&bytes) {
            prop_assert!(read.ids.keys().all(|code| read.allows(code)));
            prop_assert!(read.ids.values().all(|h| partner_id_problem(&h.id).is_none()));
            prop_assert_eq!(Entry::decode(&read.encode()), Ok(read));
        }
    }

    #[test]
    fn a_tombstone_is_absorbing(
        before in proptest::collection::vec(op(), 0..12),
        at in 0u64..2_000_000_000,
        after in proptest::collection::vec(op(), 0..24),
    ) {
        let mut entry = Entry::new();
        for op in &before {
            apply(&mut entry, op);
        }
        entry.withdraw(at);
        let tombstone = entry.clone();
        for op in &after {
            apply(&mut entry, op);
            prop_assert!(entry.ids.is_empty());
            prop_assert_eq!(entry.allowed().count(), 0);
        }
        prop_assert_eq!(&entry, &tombstone);
        prop_assert_eq!(entry.ids_for(&CODES, 0).count(), 0);
    }

    /// Held IDs are always of allowed partners, and `set` succeeds exactly when the partner is
    /// allowed, the entry not withdrawn and the ID valid.
    #[test]
    fn ids_are_only_ever_held_for_allowed_partners(ops in proptest::collection::vec(op(), 0..32)) {
        let mut entry = Entry::new();
        for op in &ops {
            if let Op::Set(c, id, now, ttl) = op {
                let expect_ok = entry.withdrawn().is_none() && entry.allows(CODES[*c]);
                prop_assert_eq!(entry.clone().set(CODES[*c], id, *now, *ttl).is_ok(), expect_ok);
            }
            apply(&mut entry, op);
            prop_assert!(entry.ids.keys().all(|code| entry.allows(code)));
        }
    }
}
