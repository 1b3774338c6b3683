//! The two public endpoints of signing: the discovery document with the public keys
//! (`GET /.well-known/trusted-server.json`) and the signature check (`POST
//! /verify-signature`). Bytes in, JSON out; the adapter reads the keys and the body.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::keys::PublicKey;

/// `Cache-Control` of the discovery document: shared caches may keep it for five minutes,
/// so a rotation (a new current key, the old one kept as previous) reaches partners quickly.
pub const DISCOVERY_CACHE_CONTROL: &str = "public, max-age=300";

/// The largest `POST /verify-signature` body read (64 KiB): a signature base is a few
/// hundred bytes.
pub const MAX_VERIFY_BODY: usize = 64 * 1024;

/// The discovery document: `{"version":…,"jwks":{"keys":[…]}}`, the current key first.
pub fn discovery_document(version: &str, keys: &[PublicKey]) -> String {
    let jwks: Vec<serde_json::Value> = keys.iter().map(PublicKey::jwk).collect();
    let document = serde_json::json!({ "version": version, "jwks": { "keys": jwks } });
    format!("{document}\n")
}

/// A JSON answer: status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonAnswer {
    /// HTTP status.
    pub status: u16,
    /// The JSON body, with a final newline.
    pub body: String,
}

impl JsonAnswer {
    fn new(status: u16, value: &serde_json::Value) -> JsonAnswer {
        JsonAnswer {
            status,
            body: format!("{value}\n"),
        }
    }

    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: &str) -> JsonAnswer {
        JsonAnswer::new(status, &serde_json::json!({ "error": message }))
    }
}

/// Answers `POST /verify-signature`.
///
/// The body is a JSON object with three strings: `kid` (a key ID from the discovery
/// document), `payload` (the exact text that was signed, for a partner request its
/// signature base) and `signature` (the standard base64 of the 64-byte Ed25519 signature,
/// what `Signature: sig1=:…:` carries between the colons). The answer is `200
/// {"verified":true|false,"kid":…}`; an unknown `kid` is `false`. A body that is not such an
/// object, or a signature that is not base64 of 64 bytes, is `400 {"error":…}`; a body of
/// more than [`MAX_VERIFY_BODY`] bytes is `413` (the adapter reads one byte more to know).
pub fn verify_signature(body: &[u8], keys: &[PublicKey]) -> JsonAnswer {
    if body.len() > MAX_VERIFY_BODY {
        return JsonAnswer::error(413, "the body is larger than 65536 bytes");
    }
    let Ok(serde_json::Value::Object(object)) = serde_json::from_slice(body) else {
        return JsonAnswer::error(400, "expected a JSON object");
    };
    let field = |name: &str| object.get(name).and_then(serde_json::Value::as_str);
    let (Some(kid), Some(payload), Some(signature)) =
        (field("kid"), field("payload"), field("signature"))
    else {
        return JsonAnswer::error(400, "expected string members kid, payload and signature");
    };
    let Some(signature) = STANDARD.decode(signature).ok().filter(|s| s.len() == 64) else {
        return JsonAnswer::error(400, "signature must be the base64 of 64 bytes");
    };
    let verified = (keys.iter())
        .find(|k| k.kid() == kid)
        .is_some_and(|k| k.verify(payload.as_bytes(), &signature));
    JsonAnswer::new(
        200,
        &serde_json::json!({ "verified": verified, "kid": kid }),
    )
}
