//! Secrets from Fastly Secret Stores: the one way every feature reads them (the edge ID's and
//! the first-party URLs' HMAC keys, the signing keys, the admin credentials).
//!
//! A store is opened by name and a key read from it, per request (each request runs in a fresh
//! instance). A failure names the store, the key and the setting that names them, so an
//! operator knows what to create or link, and never the value: the error carries no secret
//! bytes, and a value that cannot be used is described by the parser's message only.

use std::fmt;

use fastly::SecretStore;

/// Why a secret could not be had.
#[derive(Debug)]
pub enum SecretError {
    /// The store cannot be opened (not linked to the service, or not declared for Viceroy).
    Store {
        /// The store's name.
        store: String,
        /// The setting that names it.
        setting: &'static str,
        /// The platform's message.
        cause: String,
    },
    /// The store has no such key.
    Missing {
        /// The store's name.
        store: String,
        /// The key's name.
        key: String,
        /// The setting that names the key.
        setting: &'static str,
    },
    /// The key is there but cannot be read, or its value is not usable (too short, not a key).
    Unusable {
        /// The store's name.
        store: String,
        /// The key's name.
        key: String,
        /// What is wrong (never the value).
        cause: String,
    },
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Store {
                store,
                setting,
                cause,
            } => write!(f, "cannot open secret store `{store}` ({setting}): {cause}"),
            SecretError::Missing {
                store,
                key,
                setting,
            } => write!(f, "secret store `{store}` has no key `{key}` ({setting})"),
            SecretError::Unusable { store, key, cause } => {
                write!(f, "secret `{key}` in store `{store}` is unusable: {cause}")
            }
        }
    }
}

impl std::error::Error for SecretError {}

/// An opened store and its name, for reading several keys from it.
pub struct Store {
    store: SecretStore,
    name: String,
}

impl Store {
    /// Opens the store `name`, which the setting `setting` names.
    ///
    /// # Errors
    /// [`SecretError::Store`].
    pub fn open(name: &str, setting: &'static str) -> Result<Store, SecretError> {
        let store = SecretStore::open(name).map_err(|e| SecretError::Store {
            store: name.into(),
            setting,
            cause: e.to_string(),
        })?;
        Ok(Store {
            store,
            name: name.into(),
        })
    }

    /// Reads `key` (named by the setting `setting`) and makes it usable with `parse`, whose
    /// error message must not contain the value.
    ///
    /// # Errors
    /// [`SecretError::Missing`], or [`SecretError::Unusable`] when the platform cannot read
    /// the value or `parse` refuses it.
    pub fn read<T, E: fmt::Display>(
        &self,
        key: &str,
        setting: &'static str,
        parse: impl FnOnce(&[u8]) -> Result<T, E>,
    ) -> Result<T, SecretError> {
        let unusable = |cause: String| SecretError::Unusable {
            store: self.name.clone(),
            key: key.into(),
            cause,
        };
        let secret = self
            .store
            .try_get(key)
            .map_err(|e| unusable(e.to_string()))?
            .ok_or_else(|| SecretError::Missing {
                store: self.name.clone(),
                key: key.into(),
                setting,
            })?;
        let bytes = secret
            .try_plaintext()
            .map_err(|e| unusable(e.to_string()))?;
        parse(&bytes).map_err(|e| unusable(e.to_string()))
    }
}

/// Opens `store` and reads `key` from it: [`Store::open`] then [`Store::read`], for a feature
/// with one secret. `settings` names the store's setting and the key's.
///
/// # Errors
/// As [`Store::open`] and [`Store::read`].
pub fn read<T, E: fmt::Display>(
    store: &str,
    key: &str,
    settings: (&'static str, &'static str),
    parse: impl FnOnce(&[u8]) -> Result<T, E>,
) -> Result<T, SecretError> {
    Store::open(store, settings.0)?.read(key, settings.1, parse)
}
