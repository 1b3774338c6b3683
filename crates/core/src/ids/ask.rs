//! The edge asking a partner for its ID for a reader (a bidder's `id_path`): the body it
//! sends and how it reads the answer.
//!
//! ```text
//! POST <id_path>  {"ec": "<edge ID>"}
//! 200             {"id": "<the partner's ID for that reader>"}   (other fields ignored)
//! 204 or 404      the partner has no ID for that reader
//! ```
//!
//! Anything else (another status, a body that is not that object, an ID that could not be
//! stored) is an error the adapter logs; nothing is stored from it. The edge ID goes only to a
//! partner the reader's consent lets have it, the same rule as the auction's `user.eids`.

use serde_json::{json, Value};

use super::entry::partner_id_problem;

/// The largest answer read: an ID is at most 256 bytes, so 4 KiB leaves room for fields the
/// partner adds and nothing a flood could use.
pub const MAX_ASK_ANSWER_BYTES: usize = 4 * 1024;

/// The body of the ask for the reader with `edge_id`: `{"ec":"<edge id>"}`.
pub fn ask_body(edge_id: &str) -> String {
    json!({ "ec": edge_id }).to_string()
}

/// The partner's answer to an ask, read: `Ok(Some(id))` for an ID that may be stored,
/// `Ok(None)` when the partner has none (`204`, `404`).
///
/// # Errors
/// Why nothing can be stored from the answer: another status, a body over
/// [`MAX_ASK_ANSWER_BYTES`], not a JSON object with a string `id`, or an ID the graph refuses
/// (`partner_id_problem`). The message never holds the body.
pub fn read_ask_answer(status: u16, body: &[u8]) -> Result<Option<String>, String> {
    match status {
        200 => {}
        204 | 404 => return Ok(None),
        other => return Err(format!("answered {other}")),
    }
    if body.len() > MAX_ASK_ANSWER_BYTES {
        return Err(format!(
            "answered {} bytes (at most {MAX_ASK_ANSWER_BYTES})",
            body.len()
        ));
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| "answered no JSON".to_owned())?;
    let Some(id) = value.get("id").and_then(Value::as_str) else {
        return Err("answered no string \"id\"".to_owned());
    };
    match partner_id_problem(id) {
        None => Ok(Some(id.to_owned())),
        Some(why) => Err(format!("answered an ID that {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_ask_carries_the_edge_id_and_nothing_else() {
        let body: Value = serde_json::from_str(&ask_body("abc.DEF")).unwrap();
        assert_eq!(body, json!({"ec": "abc.DEF"}));
    }

    #[test]
    fn each_kind_of_answer() {
        let ok = |status, body: &str| read_ask_answer(status, body.as_bytes());
        assert_eq!(
            ok(200, r#"{"id":"p-1","ttl":5}"#),
            Ok(Some("p-1".to_owned()))
        );
        assert_eq!(ok(204, ""), Ok(None));
        assert_eq!(ok(404, "not found"), Ok(None));
        for (status, body, why) in [
            (500, "", "answered 500"),
            (302, "", "answered 302"),
            (200, "", "no JSON"),
            (200, "[1]", "no string"),
            (200, r#"{"id":7}"#, "no string"),
            (200, r#"{"uid":"p-1"}"#, "no string"),
            (200, r#"{"id":""}"#, "an ID that"),
            (200, r#"{"id":"has space"}"#, "an ID that"),
        ] {
            let e = ok(status, body).unwrap_err();
            assert!(e.contains(why), "{status} {body}: {e}");
        }
        let huge = format!(
            r#"{{"id":"p-1","pad":"{}"}}"#,
            "x".repeat(MAX_ASK_ANSWER_BYTES)
        );
        assert!(ok(200, &huge).unwrap_err().contains("bytes"));
    }

    #[test]
    fn an_error_never_repeats_the_body() {
        let secret = r#"{"id":"has space SECRET"}"#;
        let e = read_ask_answer(200, secret.as_bytes()).unwrap_err();
        assert!(!e.contains("SECRET"), "{e}");
    }

    proptest! {
        /// Whatever the partner sends, the answer is read or refused, never a panic; and an ID
        /// it could store is exactly the one a JSON encoder wrote.
        #[test]
        fn any_answer_is_read_or_refused(status in 100u16..600, body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = read_ask_answer(status, &body);
        }

        #[test]
        fn a_valid_id_round_trips(id in "[A-Za-z0-9._~+/=-]{1,256}") {
            let body = serde_json::to_vec(&json!({"id": id, "extra": [1, 2]})).unwrap();
            prop_assert_eq!(read_ask_answer(200, &body), Ok(Some(id)));
        }
    }
}
