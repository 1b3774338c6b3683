//! Surrogate keys: the names a stored page can be purged by.
//!
//! Every stored page carries the origin's own `Surrogate-Key` tokens (so a publisher's CMS
//! purges as it would on any Fastly service), one key for the page (its host and path, every
//! query and variant of it) and one key for all rewritten pages (purged after a change the
//! fingerprint cannot see, such as a partner's new domain list served from elsewhere).
//!
//! Fastly's limits: a key is at most 1024 bytes and an object has at most 16 KiB of keys.
//! Tokens beyond these bounds are dropped (and counted, for the log), never stored half.

use sha2::{Digest, Sha256};

/// The key every rewritten page is stored under.
pub const ALL_REWRITTEN: &str = "ts-rewritten";

/// Prefix of the per-page key (`ts-page-` and 32 hex digits).
pub const PAGE_PREFIX: &str = "ts-page-";

/// Longest surrogate key Fastly accepts.
pub const MAX_KEY_BYTES: usize = 1024;

/// Most bytes of surrogate keys stored with one page (Fastly's header limit for them).
pub const MAX_TOTAL_BYTES: usize = 16 * 1024;

/// The per-page key: `ts-page-` and the first 16 bytes of SHA-256 of `authority`, a newline
/// and `path` (without query), in hex. An operator computes it with
/// `printf '%s\n%s' www.example.com /article | sha256sum | cut -c1-32`.
pub fn page_key(authority: &str, path: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(authority.as_bytes());
    hash.update(b"\n");
    hash.update(path.as_bytes());
    let digest = hash.finalize();
    let mut key = String::with_capacity(PAGE_PREFIX.len() + 32);
    key.push_str(PAGE_PREFIX);
    for b in &digest[..16] {
        key.push_str(&format!("{b:02x}"));
    }
    key
}

/// Whether `token` can be a surrogate key: visible ASCII, no space, 1 to 1024 bytes.
pub fn is_valid(token: &str) -> bool {
    !token.is_empty() && token.len() <= MAX_KEY_BYTES && token.bytes().all(|b| b.is_ascii_graphic())
}

/// The keys to store a page under: the origin's `Surrogate-Key` tokens (space-separated,
/// over any number of lines; invalid ones dropped), then the page's and [`ALL_REWRITTEN`],
/// each once, within [`MAX_TOTAL_BYTES`]. Returns the keys and how many origin tokens were
/// dropped.
pub fn keys<'h>(
    origin_values: impl IntoIterator<Item = &'h [u8]>,
    authority: &str,
    path: &str,
) -> (Vec<String>, usize) {
    let ours = [page_key(authority, path), ALL_REWRITTEN.to_owned()];
    let mut budget = MAX_TOTAL_BYTES - ours.iter().map(|k| k.len() + 1).sum::<usize>();
    let mut out: Vec<String> = Vec::new();
    let mut dropped = 0;
    for value in origin_values {
        for token in value
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
        {
            let Ok(token) = std::str::from_utf8(token) else {
                dropped += 1;
                continue;
            };
            if !is_valid(token) || token.len() + 1 > budget {
                dropped += 1;
                continue;
            }
            if !out.iter().any(|k| k == token) && !ours.iter().any(|k| k == token) {
                budget -= token.len() + 1;
                out.push(token.to_owned());
            }
        }
    }
    out.extend(ours);
    (out, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_page_key_is_the_documented_shell_command() {
        // `printf '%s\n%s' www.pub.test /article | sha256sum | cut -c1-32`
        assert_eq!(
            page_key("www.pub.test", "/article"),
            "ts-page-7a65be7371b12f0460b964d0a025f9d6"
        );
    }

    #[test]
    fn origin_tokens_then_ours_each_once() {
        let lines: [&[u8]; 2] = [
            b" article-1  section-news ",
            b"article-1\tts-rewritten \xff",
        ];
        let (keys, dropped) = keys(lines, "www.pub.test", "/article");
        assert_eq!(
            keys,
            [
                "article-1".to_owned(),
                "section-news".to_owned(),
                page_key("www.pub.test", "/article"),
                ALL_REWRITTEN.to_owned(),
            ]
        );
        assert_eq!(dropped, 1, "the token that is not UTF-8");
    }

    #[test]
    fn validity() {
        assert!(is_valid("a"));
        assert!(is_valid(&"k".repeat(MAX_KEY_BYTES)));
        assert!(!is_valid(&"k".repeat(MAX_KEY_BYTES + 1)));
        assert!(!is_valid(""));
        assert!(!is_valid("a b"));
        assert!(!is_valid("é"));
    }

    proptest! {
        /// Whatever the origin sends: every key valid, ours always there, within the budget.
        #[test]
        fn bounded_and_valid(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..3000), 0..12)) {
            let (keys, _) = keys(lines.iter().map(Vec::as_slice), "h", "/p");
            prop_assert!(keys.iter().all(|k| is_valid(k)));
            prop_assert!(keys.iter().map(|k| k.len() + 1).sum::<usize>() <= MAX_TOTAL_BYTES);
            prop_assert_eq!(keys.last().map(String::as_str), Some(ALL_REWRITTEN));
            prop_assert!(keys.contains(&page_key("h", "/p")));
        }
    }
}
