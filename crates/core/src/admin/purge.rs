//! `POST /_ts/admin/purge?key=…`: purge every cached page stored under one surrogate key.
//!
//! Behind the admin's basic auth ([`super::answer`] lets the request in and marks it with
//! [`super::Action::Purge`]); the purge itself is the platform's, passed in, so the decision
//! is tested here without it.

use super::{json_line, Reply};
use crate::cache::surrogate;

/// Why a purge request names no usable key.
pub const BAD_KEY: &str =
    "expected exactly one key=<surrogate key> (visible ASCII, 1 to 1024 bytes)";

/// The one `key` parameter of `query`, percent-decoded, if it is a valid surrogate key.
pub fn key_of(query: Option<&str>) -> Option<String> {
    let mut keys = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .filter(|(name, _)| name == "key")
        .map(|(_, value)| value.into_owned());
    let key = keys.next()?;
    (keys.next().is_none() && surrogate::is_valid(&key)).then_some(key)
}

/// The answer to a purge request the admin's credentials let in: `400` without a usable key,
/// `200` once `purge` purged it, `502` when it failed (its error goes to the log, not the
/// answer).
pub fn answer(query: Option<&str>, purge: impl FnOnce(&str) -> Result<(), String>) -> Reply {
    let Some(key) = key_of(query) else {
        return Reply::error(400, BAD_KEY);
    };
    match purge(&key) {
        Ok(()) => Reply::json(200, json_line(&serde_json::json!({ "purged": key }))),
        Err(e) => {
            let mut reply = Reply::error(502, "purge failed");
            reply.log = Some(format!("purge of surrogate key {key:?} failed: {e}"));
            reply
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_valid_key_or_400() {
        assert_eq!(key_of(Some("key=article-1")).as_deref(), Some("article-1"));
        assert_eq!(key_of(Some("x=1&key=a%2Fb")).as_deref(), Some("a/b"));
        for bad in [
            None,
            Some(""),
            Some("key="),
            Some("key=a+b"),
            Some("key=a%20b"),
            Some("key=a&key=b"),
            Some("keys=a"),
        ] {
            assert_eq!(key_of(bad), None, "{bad:?}");
        }
        let long = format!("key={}", "k".repeat(1025));
        assert_eq!(key_of(Some(&long)), None);
    }

    #[test]
    fn purged_failed_or_refused() {
        let mut asked = Vec::new();
        let ok = answer(Some("key=ts-rewritten"), |k| {
            asked.push(k.to_owned());
            Ok(())
        });
        assert_eq!(ok.status, 200);
        assert_eq!(ok.body, "{\"purged\":\"ts-rewritten\"}\n");
        assert_eq!(asked, ["ts-rewritten"]);
        let failed = answer(Some("key=a"), |_| Err("host said no".into()));
        assert_eq!(failed.status, 502);
        assert!(!failed.body.contains("host said no"));
        assert!(failed.log.unwrap().contains("host said no"));
        let refused = answer(Some("key=a b"), |_| panic!("never purged"));
        assert_eq!(refused.status, 400);
    }
}
