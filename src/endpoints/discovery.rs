//! `GET /.well-known/trusted-server.json` and `POST /verify-signature`: the keys from the
//! Secret Store (`signing_keys`), the request body (bounded), and the core's answers
//! (`trusted_server_core::signing`).
//!
//! Without the current key both answer `503` with a JSON error, and the log says why (store
//! and kid, never the value). With `signing.enabled = false` both answer `404`.

use std::io::Read;

use fastly::http::StatusCode;
use fastly::{Request, Response};
use trusted_server_core::signing::{
    discovery_document, verify_signature, JsonAnswer, DISCOVERY_CACHE_CONTROL, MAX_VERIFY_BODY,
};
use trusted_server_core::{Settings, VERSION};

use crate::kit::{reply, signing_keys};

/// A JSON response of ours, with the standard headers.
fn json(answer: JsonAnswer, cache_control: &str, settings: &Settings) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    reply::json(status, answer.body, cache_control, settings)
}

/// The answer when the feature is off, or its keys cannot be read.
fn unavailable(status: u16, settings: &Settings) -> Response {
    let message = match status {
        404 => "signing is not enabled",
        _ => "signing keys are unavailable",
    };
    json(JsonAnswer::error(status, message), "no-store", settings)
}

/// `GET /.well-known/trusted-server.json`: the version and every public key.
pub fn well_known(settings: &Settings) -> Response {
    if !settings.signing.enabled {
        return unavailable(404, settings);
    }
    match signing_keys::public_keys(&settings.signing) {
        Ok(keys) => {
            let answer = JsonAnswer {
                status: 200,
                body: discovery_document(VERSION, &keys),
            };
            json(answer, DISCOVERY_CACHE_CONTROL, settings)
        }
        Err(e) => {
            log::error!("discovery document unavailable: {e}");
            unavailable(503, settings)
        }
    }
}

/// `POST /verify-signature`: reads at most [`MAX_VERIFY_BODY`] bytes and one more (to tell
/// a body that is too large), then lets the core answer.
pub fn verify(mut request: Request, settings: &Settings) -> Response {
    if !settings.signing.enabled {
        return unavailable(404, settings);
    }
    let mut body = Vec::new();
    let limit = u64::try_from(MAX_VERIFY_BODY + 1).unwrap_or(u64::MAX);
    if let Err(e) = request.take_body().take(limit).read_to_end(&mut body) {
        log::warn!("POST /verify-signature: reading the body failed: {e}");
        return json(
            JsonAnswer::error(400, "the body could not be read"),
            "no-store",
            settings,
        );
    }
    let keys = match signing_keys::public_keys(&settings.signing) {
        Ok(keys) => keys,
        Err(e) => {
            log::error!("signature check unavailable: {e}");
            return unavailable(503, settings);
        }
    };
    json(verify_signature(&body, &keys), "no-store", settings)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    use trusted_server_core::signing::Keypair;
    use trusted_server_settings::Signing;

    /// The two development seeds as written in their files (fastly.toml's store).
    fn seed_texts() -> [String; 2] {
        let files = [
            include_str!("../../fixtures/dev-only/signing-key-ts-signing-1.DEVELOPMENT-ONLY.txt"),
            include_str!("../../fixtures/dev-only/signing-key-ts-signing-0.DEVELOPMENT-ONLY.txt"),
        ];
        files.map(|text| text.lines().filter(|l| !l.starts_with('#')).collect())
    }

    #[test]
    fn the_document_lists_current_and_previous_keys_and_no_secret() {
        let mut r = well_known(&crate::kit::generated::SETTINGS);
        assert_eq!(r.get_status(), StatusCode::OK);
        assert_eq!(
            r.get_header_str("cache-control"),
            Some(DISCOVERY_CACHE_CONTROL)
        );
        assert_eq!(r.get_header_str("content-type"), Some("application/json"));
        let text = r.take_body_str();
        let current = signing_keys::current(&crate::kit::generated::SETTINGS.signing).unwrap();
        let x = current.public().jwk()["x"].as_str().unwrap().to_owned();
        assert!(text.contains(&x), "{text}");
        for kid in ["ts-signing-1", "ts-signing-0"] {
            assert!(text.contains(&format!("\"kid\":\"{kid}\"")), "{text}");
        }
        for seed in seed_texts() {
            assert!(!text.contains(&seed[..16]), "a private key in {text}");
        }
    }

    #[test]
    fn without_its_key_or_when_off_the_feature_answers_json_errors() {
        let mut settings = crate::kit::generated::SETTINGS.clone();
        settings.signing = Signing {
            current_kid: Cow::Borrowed("no_such_kid"),
            ..settings.signing.clone()
        };
        let mut r = well_known(&settings);
        assert_eq!(r.get_status(), StatusCode::SERVICE_UNAVAILABLE);
        let text = r.take_body_str();
        assert!(text.contains("\"error\""), "{text}");
        assert!(
            !text.contains("no_such_kid"),
            "the log names the kid, not the answer"
        );
        let post = Request::post("http://x/verify-signature").with_body("{}");
        assert_eq!(
            verify(post, &settings).get_status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        settings.signing.enabled = false;
        assert_eq!(well_known(&settings).get_status(), StatusCode::NOT_FOUND);
        let post = Request::post("http://x/verify-signature").with_body("{}");
        assert_eq!(verify(post, &settings).get_status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn a_signature_by_the_current_key_verifies_and_secrets_stay_out() {
        let key: Keypair = signing_keys::current(&crate::kit::generated::SETTINGS.signing).unwrap();
        let signature = key.sign(b"payload");
        let b64 = trusted_server_core_base64(&signature);
        let ask = |payload: &str| {
            let body = format!(
                "{{\"kid\":\"{}\",\"payload\":\"{payload}\",\"signature\":\"{b64}\"}}",
                key.kid()
            );
            verify(
                Request::post("http://x/verify-signature").with_body(body),
                &crate::kit::generated::SETTINGS,
            )
        };
        let mut yes = ask("payload");
        assert_eq!(yes.get_status(), StatusCode::OK);
        let text = yes.take_body_str();
        assert!(text.contains("\"verified\":true"), "{text}");
        let mut no = ask("payloaD");
        assert!(no.take_body_str().contains("\"verified\":false"));
        for seed in seed_texts() {
            assert!(!text.contains(&seed[..16]));
        }
        let huge = "x".repeat(MAX_VERIFY_BODY + 10);
        let r = verify(
            Request::post("http://x/verify-signature").with_body(huge),
            &crate::kit::generated::SETTINGS,
        );
        assert_eq!(r.get_status(), StatusCode::PAYLOAD_TOO_LARGE);
        let r = verify(
            Request::post("http://x/verify-signature").with_body("not json"),
            &crate::kit::generated::SETTINGS,
        );
        assert_eq!(r.get_status(), StatusCode::BAD_REQUEST);
    }

    /// Standard base64, written out here so the test does not share the core's encoder.
    fn trusted_server_core_base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}
