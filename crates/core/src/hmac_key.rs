//! The service's HMAC-SHA256 key: one type for the two secrets that MAC what the service
//! alone may make, the edge ID ([`EdgeIdKey`](crate::publisher::identity::EdgeIdKey)) and
//! the first-party URL tokens ([`UrlKey`](crate::first_party::UrlKey)).
//!
//! What a key is for is decided by its user, not here: each wraps an [`HmacKey`] in its own
//! type and starts every message with its own label (`ts-ec/v2\n`, `ts-first-party-url/v1\0`),
//! so a MAC made for one use never verifies for the other, even under the same secret. This
//! module holds what both must get right the same way: the shortest secret accepted,
//! verification in constant time, and a `Debug` that never shows the key.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Shortest secret accepted, in bytes: shorter keys make the HMAC guessable.
pub const MIN_SECRET_LEN: usize = 16;

/// Length of a MAC, in bytes.
pub const TAG_LEN: usize = 32;

/// Why a secret cannot key the HMAC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeakSecret {
    /// The secret's length in bytes (never its content).
    pub len: usize,
}

impl std::fmt::Display for WeakSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the secret is {} bytes long; at least {MIN_SECRET_LEN} are required",
            self.len
        )
    }
}

impl std::error::Error for WeakSecret {}

/// An HMAC-SHA256 key from a secret of at least [`MIN_SECRET_LEN`] bytes.
///
/// Its `Debug` is `..`, so a wrapper that derives `Debug` prints `EdgeIdKey(..)`.
#[derive(Clone)]
pub struct HmacKey {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.write_str("..")
    }
}

impl HmacKey {
    /// A key from the secret's bytes, used as they are.
    ///
    /// # Errors
    /// [`WeakSecret`] when the secret is shorter than [`MIN_SECRET_LEN`] bytes.
    pub fn new(secret: &[u8]) -> Result<Self, WeakSecret> {
        if secret.len() < MIN_SECRET_LEN {
            return Err(WeakSecret { len: secret.len() });
        }
        // HMAC takes a key of any length; this cannot fail.
        let mac =
            Hmac::<Sha256>::new_from_slice(secret).map_err(|_| WeakSecret { len: secret.len() })?;
        Ok(HmacKey { mac })
    }

    /// The HMAC over the concatenation of `message`'s parts.
    fn over(&self, message: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        for part in message {
            mac.update(part);
        }
        mac
    }

    /// The MAC of the concatenation of `message`'s parts.
    pub fn tag(&self, message: &[&[u8]]) -> [u8; TAG_LEN] {
        self.over(message).finalize().into_bytes().into()
    }

    /// Whether `tag` is the MAC of the concatenation of `message`'s parts, compared in
    /// constant time (`hmac`'s `verify_slice`), so a forger learns nothing from how long the
    /// answer took.
    pub fn verify(&self, message: &[&[u8]], tag: &[u8]) -> bool {
        self.over(message).verify_slice(tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_in_parts_is_their_concatenation_and_any_change_fails() {
        // The HMAC itself is checked against RFC 4231 in the edge ID's tests.
        let key = HmacKey::new(b"sixteen-byte key").unwrap();
        let whole = key.tag(&[b"what do ya want for nothing?"]);
        assert_eq!(key.tag(&[b"what do ya ", b"want for nothing?"]), whole);
        assert!(key.verify(&[b"what do ya want ", b"for nothing?"], &whole));
        assert!(!key.verify(&[b"what do ya want for nothing!"], &whole));
        assert!(!key.verify(&[b"what do ya want for nothing?"], &whole[..31]));
    }

    #[test]
    fn short_secrets_are_refused_and_keys_are_never_shown() {
        assert_eq!(HmacKey::new(&[7; 15]).unwrap_err(), WeakSecret { len: 15 });
        let key = HmacKey::new(b"a secret of 16+ bytes").unwrap();
        assert_eq!(format!("{key:?}"), "..");
    }
}
