//! The Ed25519 keys of `[signing]`, read from the Fastly Secret Store: the store key of each
//! key is its kid, its value the base64 of a 32-byte seed (`trusted_server_core::signing`).
//!
//! Failures name the store, the kid and the setting, never the value. The current key is
//! required by every caller; a previous key that is missing is logged and left out, so a
//! rotation that removed it from the store but not from `signing.previous_kids` only stops
//! publishing it.

use crate::kit::secrets::{SecretError, Store};
use trusted_server_core::signing::{Keypair, PublicKey};
use trusted_server_settings::Signing;

/// Why a key could not be read: its store or kid (named, never its value).
pub type Unavailable = SecretError;

/// The setting that names the store.
const STORE_SETTING: &str = "signing.secret_store";
/// The settings that name the kids (each kid is its key's name in the store).
const KID_SETTING: &str = "signing.current_kid or signing.previous_kids";

/// Reads the key `kid`.
fn read(store: &Store, kid: &str) -> Result<Keypair, Unavailable> {
    store.read(kid, KID_SETTING, |bytes| Keypair::from_secret(kid, bytes))
}

fn open(settings: &Signing) -> Result<Store, Unavailable> {
    Store::open(&settings.secret_store, STORE_SETTING)
}

/// The key that signs.
///
/// # Errors
/// When the store or the key is missing or unusable.
pub fn current(settings: &Signing) -> Result<Keypair, Unavailable> {
    read(&open(settings)?, &settings.current_kid)
}

/// The public keys: the current one first, then each previous one that can be read (the
/// others are logged at `warn`).
///
/// # Errors
/// When the store or the current key is missing or unusable.
pub fn public_keys(settings: &Signing) -> Result<Vec<PublicKey>, Unavailable> {
    let store = open(settings)?;
    let mut keys = vec![read(&store, &settings.current_kid)?.public()];
    for kid in settings.previous_kids.iter() {
        match read(&store, kid) {
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
        let settings = &crate::kit::generated::SETTINGS.signing;
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
