use super::*;
use proptest::prelude::*;
use serde_json::json;

/// Edge IDs written by hand in the form `is_well_formed` accepts.
const EC1: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.AbC123";
const EC2: &str = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff.zzzzzz";

fn body(value: Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

#[test]
fn the_edge_id_form_is_checked() {
    assert!(is_well_formed(EC1) && is_well_formed(EC2));
    for bad in [
        "",
        "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.AbC123",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde.AbC123",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.AbC12",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.AbC-23",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef-AbC123",
    ] {
        assert!(!is_well_formed(bad), "{bad}");
    }
}

#[test]
fn bad_pairs_are_answered_one_by_one() {
    let long = "x".repeat(MAX_PARTNER_ID_LEN_FOR_TESTS + 1);
    let sent = json!({"pairs": [
        {"ec": EC1, "id": "good-1"},
        {"ec": "not an edge id", "id": "good-2"},
        {"id": "good-3"},
        {"ec": EC2},
        {"ec": EC2, "id": 5},
        {"ec": EC2, "id": "has space"},
        {"ec": EC2, "id": ""},
        {"ec": EC2, "id": long},
        "a string",
        {"ec": EC2, "id": "good-4", "extra": true},
    ], "also": "ignored"});
    let pairs = read_batch(&body(sent), 10).unwrap();
    let malformed = |ec: Option<&str>, why| Pair::Malformed {
        ec: ec.map(str::to_owned),
        why,
    };
    let bad_chars = "partner ID has a character outside A-Z a-z 0-9 - . _ ~ + / =";
    assert_eq!(
        pairs,
        [
            Pair::Valid {
                ec: EC1.into(),
                id: "good-1".into()
            },
            malformed(None, "ec not an edge ID"),
            malformed(None, "no ec"),
            malformed(Some(EC2), "no id"),
            malformed(Some(EC2), "id not a string"),
            malformed(Some(EC2), bad_chars),
            malformed(Some(EC2), "empty partner ID"),
            malformed(Some(EC2), "partner ID longer than 256 bytes"),
            malformed(None, "pair not an object"),
            Pair::Valid {
                ec: EC2.into(),
                id: "good-4".into()
            },
        ]
    );
}

/// The entry module's bound, written again so a change to it shows here.
const MAX_PARTNER_ID_LEN_FOR_TESTS: usize = 256;

#[test]
fn whole_batch_refusals_and_their_status() {
    let cases: &[(&[u8], BatchError, u16)] = &[
        (b"", BatchError::NotJson, 400),
        (b"pairs", BatchError::NotJson, 400),
        (b"{\"pairs\":[", BatchError::NotJson, 400),
        (b"[]", BatchError::NotABatch, 400),
        (b"{}", BatchError::NotABatch, 400),
        (b"{\"pairs\":{}}", BatchError::NotABatch, 400),
        (b"{\"pairs\":null}", BatchError::NotABatch, 400),
        (
            b"{\"pairs\":[1,2,3]}",
            BatchError::TooManyPairs { count: 3, max: 2 },
            413,
        ),
    ];
    for (bytes, error, status) in cases {
        let got = read_batch(bytes, 2);
        assert_eq!(
            got.as_ref(),
            Err(error),
            "{}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(error.status(), *status);
    }
    // Exactly the bound is fine; the pairs are each malformed, not the batch.
    assert_eq!(read_batch(b"{\"pairs\":[1,2]}", 2).unwrap().len(), 2);
    assert_eq!(read_batch(b"{\"pairs\":[]}", 0), Ok(Vec::new()));

    let mut big = b"{\"pairs\":[]}".to_vec();
    big.resize(MAX_SYNC_BODY_BYTES + 1, b' ');
    let error = read_batch(&big, 10).unwrap_err();
    assert_eq!(error, BatchError::TooLarge(MAX_SYNC_BODY_BYTES + 1));
    assert_eq!(error.status(), 413);
    big.truncate(MAX_SYNC_BODY_BYTES);
    assert_eq!(
        read_batch(&big, 10),
        Ok(Vec::new()),
        "whitespace up to the bound"
    );
}

#[test]
fn duplicate_edge_ids_are_applied_in_order_and_the_last_wins() {
    let sent = json!({"pairs": [
        {"ec": EC1, "id": "first"},
        {"ec": EC2, "id": "other"},
        {"ec": "bad", "id": "x"},
        {"ec": EC1, "id": "second"},
        {"ec": EC1, "id": "second"},
    ]});
    let pairs = read_batch(&body(sent), 10).unwrap();
    let groups = by_edge_id(&pairs);
    assert_eq!(groups, [(EC1, vec![0, 3, 4]), (EC2, vec![1])]);

    let mut entry = Entry::new();
    entry.note_consent(&["fast"], 0);
    let ids = groups[0].1.iter().map(|&i| match &pairs[i] {
        Pair::Valid { id, .. } => id.as_str(),
        Pair::Malformed { .. } => unreachable!(),
    });
    let (answers, changed) = apply_in_order(&mut entry, "fast", ids, 100, 50);
    assert!(changed);
    assert_eq!(
        answers,
        [
            PairAnswer::Stored,
            PairAnswer::Stored,
            PairAnswer::Unchanged
        ]
    );
    assert_eq!(entry.held("fast").unwrap().id, "second");

    // Nothing new: nothing to write.
    let (answers, changed) = apply_in_order(&mut entry, "fast", ["second"], 100, 50);
    assert_eq!((answers, changed), (vec![PairAnswer::Unchanged], false));
    let (answers, changed) = apply_in_order(&mut entry, "slow", ["s"], 100, 50);
    assert_eq!(
        (answers, changed),
        (vec![PairAnswer::RefusedByConsent], false)
    );
}

#[test]
fn the_answer_is_in_order_and_never_carries_a_partner_id() {
    let sent = json!({"pairs": [
        {"ec": EC1, "id": "SECRET-one"},
        {"ec": "nope", "id": "SECRET-two"},
        {"ec": EC2, "id": "SECRET three"},
        {"ec": EC2, "id": "SECRET-four"},
        {"ec": EC1, "id": "SECRET-five"},
        {"ec": EC1, "id": "SECRET-six"},
    ]});
    let pairs = read_batch(&body(sent), 10).unwrap();
    let answers = [
        PairAnswer::Stored,
        PairAnswer::Malformed("ec not an edge ID"),
        PairAnswer::Malformed("partner ID has a character outside A-Z a-z 0-9 - . _ ~ + / ="),
        PairAnswer::UnknownEdgeId,
        PairAnswer::RefusedByConsent,
        PairAnswer::Unchanged,
    ];
    let answer = answer_json(&pairs, &answers);
    assert_eq!(
        answer,
        json!({"results": [
            {"ec": EC1, "status": "stored"},
            {"ec": null, "status": "malformed", "why": "ec not an edge ID"},
            {"ec": EC2, "status": "malformed",
             "why": "partner ID has a character outside A-Z a-z 0-9 - . _ ~ + / ="},
            {"ec": EC2, "status": "unknown_ec"},
            {"ec": EC1, "status": "refused_by_consent"},
            {"ec": EC1, "status": "unchanged"},
        ]})
    );
    assert!(!answer.to_string().contains("SECRET"));
}

#[test]
fn refusals_map_to_answers() {
    use super::super::entry::Refusal;
    assert_eq!(
        PairAnswer::from(Err(Refusal::Withdrawn)),
        PairAnswer::RefusedByConsent
    );
    assert_eq!(
        PairAnswer::from(Err(Refusal::NotAllowed)),
        PairAnswer::RefusedByConsent
    );
    assert_eq!(
        PairAnswer::from(Ok(SetOutcome::Refreshed)),
        PairAnswer::Unchanged
    );
    assert_eq!(
        PairAnswer::from(Err(Refusal::Malformed("m"))),
        PairAnswer::Malformed("m")
    );
}

proptest! {
    #[test]
    fn read_batch_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = read_batch(&bytes, 8);
    }

    /// Batches of valid and bad pairs: never a batch error within the bound, one pair read per
    /// pair sent, and a pair is valid exactly when its parts are.
    #[test]
    fn each_pair_is_judged_on_its_own(
        sent in proptest::collection::vec(
            (
                prop_oneof![Just(EC1.to_owned()), Just(EC2.to_owned()), "[ -~]{0,80}"],
                prop_oneof!["[A-Za-z0-9._~+/=-]{1,300}", "[ -~]{0,20}"],
            ),
            0..8,
        ),
    ) {
        let list: Vec<Value> = sent.iter().map(|(ec, id)| json!({"ec": ec, "id": id})).collect();
        let pairs = read_batch(&body(json!({ "pairs": list })), 8).unwrap();
        prop_assert_eq!(pairs.len(), sent.len());
        for ((ec, id), pair) in sent.iter().zip(&pairs) {
            let valid = (ec == EC1 || ec == EC2) && partner_id_problem(id).is_none();
            prop_assert_eq!(matches!(pair, Pair::Valid { .. }), valid);
        }
        let answers: Vec<PairAnswer> = (pairs.iter())
            .map(|pair| match pair {
                Pair::Valid { .. } => PairAnswer::Stored,
                Pair::Malformed { why, .. } => PairAnswer::Malformed(why),
            })
            .collect();
        let answer = answer_json(&pairs, &answers).to_string();
        for (_, id) in sent.iter().filter(|(_, id)| id.len() > 12) {
            prop_assert!(!answer.contains(id.as_str()));
        }
    }
}
