//! The Ed25519 keys of `[signing]`, read from the Fastly Secret Store: the store key of each
//! key is its kid, its value the base64 of a 32-byte seed (`trusted_server_core::signing`).
//!
//! Failures name the store, the kid and the setting, never the value. The current key is
//! required by every caller; a previous key that is missing is logged and left out, so a
//! rotation that removed it from the store but not from `signing.previous_kids` only stops
//! publishing it.

use std::fmt;

use fastly::SecretStore;
use trusted_server_core::signing::{Keypair, PublicKey};
use trusted_server_settings::Signing;

/// Why a key could not be read.
#[derive(Debug)]
pub enum Unavailable {
    /// The store cannot be opened (not linked to the service, or not declared for Viceroy).
    Store(String, String),
    /// The store has no such kid.
    MissingKey(String, String),
    /// The secret is there but cannot be read or is not a key.
    Unusable(String, String, String),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Store(store, e) => {
                write!(f, "cannot open secret store `{store}` (signing.secret_store): {e}")
            }
            Unavailable::MissingKey(store, kid) => write!(
                f,
                "secret store `{store}` has no key `{kid}` (signing.current_kid or signing.previous_kids)"
            ),
            Unavailable::Unusable(store, kid, e) => {
                write!(f, "secret `{kid}` in store `{store}` is unusable: {e}")
            }
        }
    }
}

/// Reads the key `kid`.
fn read(store: &SecretStore, name: &str, kid: &str) -> Result<Keypair, Unavailable> {
    let unusable = |e: String| Unavailable::Unusable(name.into(), kid.into(), e);
    let secret = store
        .try_get(kid)
        .map_err(|e| unusable(e.to_string()))?
        .ok_or_else(|| Unavailable::MissingKey(name.into(), kid.into()))?;
    let bytes = secret
        .try_plaintext()
        .map_err(|e| unusable(e.to_string()))?;
    Keypair::from_secret(kid, &bytes).map_err(|e| unusable(e.to_string()))
}

fn open(settings: &Signing) -> Result<SecretStore, Unavailable> {
    let name = &*settings.secret_store;
    SecretStore::open(name).map_err(|e| Unavailable::Store(name.into(), e.to_string()))
}

/// The key that signs.
///
/// # Errors
/// When the store or the key is missing or unusable.
pub fn current(settings: &Signing) -> Result<Keypair, Unavailable> {
    read(
        &open(settings)?,
        &settings.secret_store,
        &settings.current_kid,
    )
}

/// The public keys: the current one first, then each previous one that can be read (the
/// others are logged at `warn`).
///
/// # Errors
/// When the store or the current key is missing or unusable.
pub fn public_keys(settings: &Signing) -> Result<Vec<PublicKey>, Unavailable> {
    let store = open(settings)?;
    let mut keys = vec![read(&store, &settings.secret_store, &settings.current_kid)?.public()];
    for kid in settings.previous_kids.iter() {
        match read(&store, &settings.secret_store, kid) {
            Ok(key) => keys.push(key.public()),
            Err(e) => log::warn!("previous signing key left out of the discovery document: {e}"),
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    /// Under `viceroy run`, fastly.toml's development store is there.
    #[test]
    fn keys_are_read_and_failures_name_store_and_kid_never_the_value() {
        let settings = &crate::SETTINGS.signing;
        let key = current(settings).unwrap();
        assert_eq!(key.kid(), settings.current_kid);
        let all = public_keys(settings).unwrap();
        assert_eq!(all.len(), 1 + settings.previous_kids.len());
        assert_eq!(all[0], key.public());

        let missing = Signing {
            current_kid: Cow::Borrowed("no_such_kid"),
            ..settings.clone()
        };
        let e = current(&missing).unwrap_err().to_string();
        assert!(
            e.contains("no_such_kid") && e.contains("signing.current_kid"),
            "{e}"
        );
        assert!(public_keys(&missing).is_err());

        let no_store = Signing {
            secret_store: Cow::Borrowed("no_such_store"),
            ..settings.clone()
        };
        let e = current(&no_store).unwrap_err().to_string();
        assert!(e.contains("no_such_store"), "{e}");

        // A previous kid the store lacks is left out, not fatal.
        let gone = Signing {
            previous_kids: Cow::Owned(vec![Cow::Borrowed("retired")]),
            ..settings.clone()
        };
        assert_eq!(public_keys(&gone).unwrap().len(), 1);

        // An entry that is not a key (the edge ID's store entry is not base64 of 32 bytes):
        // the error names it and never shows the value.
        let not_a_key = Signing {
            secret_store: Cow::Borrowed("ts_identity"),
            current_kid: Cow::Borrowed("ec_hmac_key"),
            ..settings.clone()
        };
        let e = current(&not_a_key).unwrap_err().to_string();
        assert!(e.contains("ec_hmac_key") && e.contains("unusable"), "{e}");
        assert!(!e.contains("DEVELOPMENT") && !e.contains("dev-only"), "{e}");
    }
}
