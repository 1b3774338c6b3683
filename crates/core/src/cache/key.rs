//! The cache key: one entry per distinct rewritten output.
//!
//! The output depends on: the settings the service was built with (the URL rule, injection,
//! integrations, response headers, …, and the code: see [`KeyInputs::fingerprint`]), the
//! scheme and authority the client used (the URL rule rewrites origin URLs to them), the path
//! and query, the codings the client accepts (the coding sent), and whether the request is a
//! navigation (only navigations get the script tag). The origin's own `Vary` names are not in
//! the key: the core cache matches them itself (`vary_by`), as an HTTP cache does.
//!
//! Each field is length-prefixed before hashing, so no two different inputs share an encoding.

use sha2::{Digest, Sha256};

/// Version of this key's layout: a change of layout starts a new key space.
const LAYOUT: &[u8] = b"ts-cache-key/1";

/// Everything a rewritten response depends on, as known before the origin is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInputs<'a> {
    /// A digest of the embedded settings and the service version (`build.rs` makes it): a
    /// deploy with another rule or other code never reads the previous one's entries.
    pub fingerprint: &'a [u8],
    /// `http` or `https`, as the client connected.
    pub scheme: &'a str,
    /// `host[:port]` as the client asked for it (lowercase).
    pub authority: &'a str,
    /// Path and query, exactly as received (not normalised: two spellings are two entries,
    /// never one entry for two different origin answers).
    pub path_and_query: &'a str,
    /// The client's `Accept-Encoding` lines, joined: the origin chooses the coding from it,
    /// and the rewrite keeps the origin's coding.
    pub accept_encoding: &'a str,
    /// Whether the request is a page navigation (script injection applies to those only).
    pub navigation: bool,
}

impl KeyInputs<'_> {
    /// The key: SHA-256 over the length-prefixed fields.
    pub fn key(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        for field in [
            LAYOUT,
            self.fingerprint,
            self.scheme.as_bytes(),
            self.authority.as_bytes(),
            self.path_and_query.as_bytes(),
            self.accept_encoding.as_bytes(),
            if self.navigation { b"nav" } else { b"sub" },
        ] {
            hash.update((field.len() as u64).to_be_bytes());
            hash.update(field);
        }
        hash.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn base() -> KeyInputs<'static> {
        KeyInputs {
            fingerprint: b"settings-1",
            scheme: "https",
            authority: "www.pub.test",
            path_and_query: "/a?b=1",
            accept_encoding: "gzip, br",
            navigation: true,
        }
    }

    /// An independent reference: the same construction in Python's hashlib.
    /// `python3 -c 'import hashlib,struct;f=[b"ts-cache-key/1",b"settings-1",b"https",
    /// b"www.pub.test",b"/a?b=1",b"gzip, br",b"nav"];print(hashlib.sha256(b"".join(
    /// struct.pack(">Q",len(x))+x for x in f)).hexdigest())'`
    #[test]
    fn matches_the_reference_construction() {
        let hex: String = base().key().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, REFERENCE);
    }

    const REFERENCE: &str = "fe30149bb609dac8811db12a2299b1a3a5d4d85a439f55a724539a34e58dc1cd";

    #[test]
    fn every_input_changes_the_key() {
        let k = base().key();
        let changes = [
            KeyInputs {
                fingerprint: b"settings-2",
                ..base()
            },
            KeyInputs {
                scheme: "http",
                ..base()
            },
            KeyInputs {
                authority: "pub.test",
                ..base()
            },
            KeyInputs {
                path_and_query: "/a?b=2",
                ..base()
            },
            KeyInputs {
                accept_encoding: "gzip",
                ..base()
            },
            KeyInputs {
                navigation: false,
                ..base()
            },
        ];
        for changed in changes {
            assert_ne!(changed.key(), k, "{changed:?}");
        }
    }

    proptest! {
        /// Moving bytes from one field to the next never gives the same key.
        #[test]
        fn fields_do_not_run_into_each_other(a in "[a-z/?=]{0,12}", b in "[a-z/?=]{0,12}", cut in 0usize..12) {
            let joined = format!("{a}{b}");
            let cut = cut.min(joined.len());
            let (x, y) = joined.split_at(cut);
            let one = KeyInputs { authority: &a, path_and_query: &b, ..base() };
            let two = KeyInputs { authority: x, path_and_query: y, ..base() };
            prop_assert_eq!(one.key() == two.key(), a == x);
        }
    }
}
