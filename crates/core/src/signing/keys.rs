//! Ed25519 keys by key ID: the private key read from its secret, and the public key as a JWK.
//!
//! A secret holds the base64 (standard alphabet) of a 32-byte Ed25519 seed, the private key
//! of RFC 8032. Lines starting with `#` and surrounding whitespace are ignored, so a
//! development file can say what it is. The seed is never shown: not in `Debug`, not in
//! errors.

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use zeroize::Zeroizing;

/// Why a secret is not a usable key. Never contains the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// Not UTF-8 text.
    NotText,
    /// Not standard base64.
    NotBase64,
    /// Base64 of this many bytes, not 32.
    WrongLength(usize),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::NotText => f.write_str("not text (expected the base64 of a 32-byte seed)"),
            KeyError::NotBase64 => {
                f.write_str("not base64 (expected the base64 of a 32-byte Ed25519 seed)")
            }
            KeyError::WrongLength(n) => {
                write!(
                    f,
                    "{n} bytes after base64 decoding, not a 32-byte Ed25519 seed"
                )
            }
        }
    }
}

impl std::error::Error for KeyError {}

/// A private key and its key ID: signs partner requests.
pub struct Keypair {
    kid: String,
    key: SigningKey,
}

impl fmt::Debug for Keypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keypair")
            .field("kid", &self.kid)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl Keypair {
    /// Reads `secret` (the base64 of a 32-byte seed, see the module) as the key `kid`.
    ///
    /// # Errors
    /// A secret that is not such text; the error never contains it.
    pub fn from_secret(kid: &str, secret: &[u8]) -> Result<Keypair, KeyError> {
        let text = std::str::from_utf8(secret).map_err(|_| KeyError::NotText)?;
        let mut encoded = Zeroizing::new(String::with_capacity(text.len()));
        for line in text.lines() {
            let line = line.trim();
            if !line.starts_with('#') {
                encoded.push_str(line);
            }
        }
        let seed = Zeroizing::new(
            STANDARD
                .decode(encoded.as_bytes())
                .map_err(|_| KeyError::NotBase64)?,
        );
        let seed: &[u8; 32] = seed
            .as_slice()
            .try_into()
            .map_err(|_| KeyError::WrongLength(seed.len()))?;
        Ok(Keypair::from_seed(kid, seed))
    }

    /// The key with seed `seed`.
    pub fn from_seed(kid: &str, seed: &[u8; 32]) -> Keypair {
        Keypair {
            kid: kid.to_owned(),
            key: SigningKey::from_bytes(seed),
        }
    }

    /// The key ID.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The Ed25519 signature of `message` (RFC 8032; deterministic).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    /// The public half, for the discovery document and for verifying.
    pub fn public(&self) -> PublicKey {
        PublicKey {
            kid: self.kid.clone(),
            key: self.key.verifying_key(),
        }
    }
}

/// A public key and its key ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    kid: String,
    key: VerifyingKey,
}

impl PublicKey {
    /// The key `kid` from its 32 bytes (the JWK's `x`, decoded).
    ///
    /// # Errors
    /// Bytes that are not a point on the curve.
    pub fn from_bytes(
        kid: &str,
        bytes: &[u8; 32],
    ) -> Result<PublicKey, ed25519_dalek::SignatureError> {
        Ok(PublicKey {
            kid: kid.to_owned(),
            key: VerifyingKey::from_bytes(bytes)?,
        })
    }

    /// The key ID.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The 32 bytes of the key.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// Whether `signature` is this key's Ed25519 signature of `message`. Uses the strict
    /// check (RFC 8032 §5.1.7, rejecting small-order keys and non-canonical signatures), so
    /// one signature has one valid encoding.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
            return false;
        };
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        self.key.verify_strict(message, &signature).is_ok()
    }

    /// The key as a JWK (RFC 8037): `{"kty":"OKP","crv":"Ed25519","x":…,"kid":…,"use":"sig",
    /// "alg":"EdDSA"}`.
    pub fn jwk(&self) -> serde_json::Value {
        serde_json::json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": URL_SAFE_NO_PAD.encode(self.key.as_bytes()),
            "kid": self.kid,
            "use": "sig",
            "alg": "EdDSA",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8032 §7.1, TEST 1: seed, public key and the signature of the empty message.
    #[test]
    fn rfc_8032_test_1() {
        let hex = |s: &str| -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let key = Keypair::from_secret("t1", STANDARD.encode(&seed).as_bytes()).unwrap();
        assert_eq!(
            key.public().to_bytes().to_vec(),
            hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        );
        let signature = key.sign(b"");
        assert_eq!(
            signature.to_vec(),
            hex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
        );
        assert!(key.public().verify(b"", &signature));
        assert!(!key.public().verify(b"x", &signature));
        assert!(!key.public().verify(b"", &signature[..63]));
    }

    #[test]
    fn secrets_may_carry_comments_and_bad_ones_are_named_not_shown() {
        let seed = [7u8; 32];
        let b64 = STANDARD.encode(seed);
        let file = format!("# DEVELOPMENT ONLY\n  {}\n{}  \n", &b64[..20], &b64[20..]);
        let key = Keypair::from_secret("dev", file.as_bytes()).unwrap();
        assert_eq!(key.public(), Keypair::from_seed("dev", &seed).public());
        let cases: [(&[u8], KeyError); 4] = [
            (b"\xff\xfe", KeyError::NotText),
            (b"not base64!", KeyError::NotBase64),
            (b"c2VjcmV0LXNlZWQ=", KeyError::WrongLength(11)),
            (b"", KeyError::WrongLength(0)),
        ];
        for (secret, want) in cases {
            let e = Keypair::from_secret("k", secret).unwrap_err();
            assert_eq!(e, want);
            let shown = format!("{e} {e:?}");
            assert!(
                !shown.contains("c2Vj") && !shown.contains("secret-seed"),
                "{shown}"
            );
        }
        let debug = format!("{key:?}");
        assert!(
            !debug.contains(&b64[..8]) && debug.contains("redacted"),
            "{debug}"
        );
    }

    #[test]
    fn the_jwk_has_exactly_the_rfc_8037_members() {
        let key = Keypair::from_seed("k1", &[1; 32]).public();
        let jwk = key.jwk();
        let x = jwk["x"].as_str().unwrap();
        assert_eq!(URL_SAFE_NO_PAD.decode(x).unwrap(), key.to_bytes());
        assert_eq!(jwk.as_object().unwrap().len(), 6);
        assert_eq!(
            (
                jwk["kty"].as_str(),
                jwk["crv"].as_str(),
                jwk["alg"].as_str()
            ),
            (Some("OKP"), Some("Ed25519"), Some("EdDSA"))
        );
        assert_eq!(
            (jwk["kid"].as_str(), jwk["use"].as_str()),
            (Some("k1"), Some("sig"))
        );
    }
}
