//! `GET`/`HEAD /static/tsjs=<hash>.js`: the first-party script, from the bytes build.rs
//! hashed and compressed. The core decides (`trusted_server_core::script_answer`); this file
//! builds the response.

use fastly::http::StatusCode;
use fastly::{Request, Response};
use trusted_server_core::{
    script_answer, ScriptAnswer, ScriptEncoding, Settings, SCRIPT_CACHE_CONTROL,
    SCRIPT_CONTENT_TYPE,
};

use crate::kit::reply;

use crate::kit::generated::{
    SCRIPT_BR, SCRIPT_ETAG_BR, SCRIPT_ETAG_GZIP, SCRIPT_ETAG_IDENTITY, SCRIPT_GZIP,
    SCRIPT_IDENTITY, SCRIPT_PATH,
};

/// The stored bytes of a representation.
fn bytes_of(encoding: ScriptEncoding) -> &'static [u8] {
    match encoding {
        ScriptEncoding::Br => SCRIPT_BR,
        ScriptEncoding::Gzip => SCRIPT_GZIP,
        ScriptEncoding::Identity => SCRIPT_IDENTITY,
    }
}

/// The strong `ETag` of a representation.
fn etag_of(encoding: ScriptEncoding) -> &'static str {
    match encoding {
        ScriptEncoding::Br => SCRIPT_ETAG_BR,
        ScriptEncoding::Gzip => SCRIPT_ETAG_GZIP,
        ScriptEncoding::Identity => SCRIPT_ETAG_IDENTITY,
    }
}

/// The response to a request classified as `Route::Script`, with the standard headers. A
/// `HEAD` gets the `GET`'s response: the platform sends its headers (with the
/// `Content-Length`) and not its body.
pub fn respond(request: &Request, settings: &Settings) -> Response {
    let header = |name: &str| -> Option<String> {
        let lines: Vec<&str> = request
            .get_header_all(name)
            .filter_map(|v| v.to_str().ok())
            .collect();
        (!lines.is_empty()).then(|| lines.join(", "))
    };
    let answer = script_answer(
        request.get_path(),
        header("accept-encoding").as_deref(),
        header("if-none-match").as_deref(),
        SCRIPT_PATH,
        etag_of,
    );
    let (status, encoding) = match answer {
        // Not cacheable (`no-store`): a hash unknown here may be a newer deploy's that another
        // instance already serves.
        ScriptAnswer::NotFound => return reply::error(StatusCode::NOT_FOUND, settings),
        ScriptAnswer::NotModified(encoding) => (StatusCode::NOT_MODIFIED, encoding),
        ScriptAnswer::Full(encoding) => (StatusCode::OK, encoding),
    };
    // A 304 carries the validators and caching headers the 200 would have (RFC 9110
    // §15.4.5), not the representation's type, coding or length.
    let mut response = Response::from_status(status)
        .with_header("etag", etag_of(encoding))
        .with_header("cache-control", SCRIPT_CACHE_CONTROL)
        .with_header("vary", "Accept-Encoding");
    if status == StatusCode::OK {
        response.set_header("content-type", SCRIPT_CONTENT_TYPE);
        if let Some(coding) = encoding.content_encoding() {
            response.set_header("content-encoding", coding);
        }
        response.set_body(bytes_of(encoding));
    }
    reply::with_standard_headers(response, settings)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use sha2::Digest;
    use std::io::Read;

    fn get(path: &str, headers: &[(&str, &str)]) -> Response {
        let mut request = Request::get(format!("http://www.pub.test{path}"));
        for (name, value) in headers {
            request.append_header(*name, *value);
        }
        respond(&request, &crate::kit::generated::SETTINGS)
    }

    #[test]
    fn the_generated_path_names_the_sha256_of_the_identity_bytes() {
        let hash = SCRIPT_PATH
            .strip_prefix("/static/tsjs=")
            .and_then(|rest| rest.strip_suffix(".js"))
            .expect("path shape");
        assert_eq!(hash.len(), 16);
        assert!(hash
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(SCRIPT_IDENTITY, include_bytes!("../../js/tsjs/src/tsjs.js"));
        let digest = sha2::Sha256::digest(SCRIPT_IDENTITY);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hash, &hex[..16]);
        assert_eq!(SCRIPT_ETAG_IDENTITY, format!("\"{hash}\""));
    }

    #[test]
    fn compressed_bytes_decode_to_the_script() {
        let mut gunzipped = Vec::new();
        flate2::read::GzDecoder::new(SCRIPT_GZIP)
            .read_to_end(&mut gunzipped)
            .expect("gzip");
        assert_eq!(gunzipped, SCRIPT_IDENTITY);
        let mut unbrotli = Vec::new();
        brotli::Decompressor::new(SCRIPT_BR, 4096)
            .read_to_end(&mut unbrotli)
            .expect("br");
        assert_eq!(unbrotli, SCRIPT_IDENTITY);
        assert!(SCRIPT_BR.len() < SCRIPT_IDENTITY.len());
        assert!(SCRIPT_GZIP.len() < SCRIPT_IDENTITY.len());
    }

    #[test]
    fn responses_carry_the_representation_and_the_standard_headers() {
        let mut r = get(SCRIPT_PATH, &[("accept-encoding", "gzip, br")]);
        assert_eq!(r.get_status(), StatusCode::OK);
        assert_eq!(r.get_header_str("content-encoding"), Some("br"));
        assert_eq!(r.get_header_str("etag"), Some(SCRIPT_ETAG_BR));
        assert_eq!(r.get_header_str("content-type"), Some(SCRIPT_CONTENT_TYPE));
        assert_eq!(
            r.get_header_str(trusted_server_core::VERSION_HEADER),
            Some(trusted_server_core::VERSION)
        );
        assert_eq!(r.take_body_bytes(), SCRIPT_BR);

        let mut r = get(SCRIPT_PATH, &[]);
        assert_eq!(r.get_header_str("content-encoding"), None);
        assert_eq!(r.take_body_bytes(), SCRIPT_IDENTITY);

        let mut r = get(
            SCRIPT_PATH,
            &[
                ("accept-encoding", "gzip"),
                ("if-none-match", SCRIPT_ETAG_GZIP),
            ],
        );
        assert_eq!(r.get_status(), StatusCode::NOT_MODIFIED);
        assert_eq!(r.get_header_str("etag"), Some(SCRIPT_ETAG_GZIP));
        assert_eq!(r.get_header_str("content-type"), None);
        assert!(r.take_body_bytes().is_empty());

        let r = get("/static/tsjs=0000000000000000.js", &[]);
        assert_eq!(r.get_status(), StatusCode::NOT_FOUND);
        assert_eq!(
            r.get_header_str(trusted_server_core::VERSION_HEADER),
            Some(trusted_server_core::VERSION)
        );
    }
}
