//! Compression at the edge (`delivery.compression = "edge"`): the origin is asked for
//! `identity`, the pipeline rewrites plain text (no decode, no encode in wasm) and the response
//! is marked for Fastly's delivery compression with `x-compress-hint: on`.
//!
//! Why: decoding and re-encoding a page is most of the guest's CPU per page, and Fastly bills
//! guest CPU; compression on delivery happens outside the guest. The decisions live here, pure,
//! so both choices are tested natively; the adapter only applies them.

use http::{HeaderName, HeaderValue};
use trusted_server_settings::Compression;

use crate::content::Codec;
use crate::content::{BodyPlan, PassReason};

/// The response header that asks Fastly to compress a response on delivery. Fastly removes it
/// whether or not it compresses; Viceroy leaves it in place.
pub const COMPRESS_HINT: &str = "x-compress-hint";

/// The `Accept-Encoding` the origin request carries instead of the client's (filtered) one,
/// if the setting overrides it: `identity` with edge compression, so the body reaches the
/// pipeline uncompressed. `None` keeps the client's codings.
pub fn upstream_accept_encoding(compression: Compression) -> Option<&'static str> {
    match compression {
        Compression::Wasm => None,
        Compression::Edge => Some("identity"),
    }
}

/// Whether the response gets the compress hint: edge compression is on, the body is text the
/// client receives uncompressed (no `Content-Encoding`, so Fastly may add one), and it is the
/// whole body. `plan` is what a GET would do with the body (so a HEAD is marked like its GET).
///
/// An origin that ignores `Accept-Encoding: identity` and compresses anyway gets the `wasm`
/// treatment for that response: its body is re-encoded in the guest, and not marked.
pub fn edge_compresses(
    compression: Compression,
    plan: &BodyPlan,
    content_encoding: Option<&str>,
) -> bool {
    if compression != Compression::Edge {
        return false;
    }
    let identity = Codec::from_header(content_encoding) == Some(Codec::Identity);
    let text = match plan {
        BodyPlan::Rewrite { .. } => true,
        // Text the pipeline leaves alone is still worth compressing.
        BodyPlan::PassThrough(PassReason::UnsafeCharset | PassReason::FlightPayload) => true,
        BodyPlan::PassThrough(
            PassReason::NotText | PassReason::UnsupportedEncoding | PassReason::NoFullBody,
        ) => false,
    };
    identity && text
}

/// Marks response `headers` for delivery compression: `x-compress-hint: on` (Fastly picks
/// brotli or gzip from the client's `Accept-Encoding`), and `Vary: Accept-Encoding`, since what
/// a client receives now depends on it even if the origin's identity response did not.
pub fn mark_for_edge_compression(headers: &mut Vec<(HeaderName, HeaderValue)>) {
    headers.retain(|(n, _)| n.as_str() != COMPRESS_HINT);
    headers.push((
        HeaderName::from_static(COMPRESS_HINT),
        HeaderValue::from_static("on"),
    ));
    crate::response::add_vary(headers, &["Accept-Encoding"]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Rewrite;

    fn plan(content_type: &str, coding: Option<&str>) -> BodyPlan {
        BodyPlan::decide(200, Some(content_type), coding, true)
    }

    #[test]
    fn only_edge_compression_overrides_the_origins_accept_encoding() {
        assert_eq!(upstream_accept_encoding(Compression::Wasm), None);
        assert_eq!(
            upstream_accept_encoding(Compression::Edge),
            Some("identity")
        );
    }

    #[test]
    fn identity_text_is_marked_with_edge_compression_only() {
        let html = plan("text/html; charset=utf-8", None);
        assert!(edge_compresses(Compression::Edge, &html, None));
        assert!(edge_compresses(Compression::Edge, &html, Some("identity")));
        assert!(!edge_compresses(Compression::Wasm, &html, None));
        let js = plan("application/javascript", None);
        assert!(edge_compresses(Compression::Edge, &js, None));
        let sjis = plan("text/html; charset=shift_jis", None);
        assert!(matches!(
            sjis,
            BodyPlan::PassThrough(PassReason::UnsafeCharset)
        ));
        assert!(edge_compresses(Compression::Edge, &sjis, None));
    }

    #[test]
    fn compressed_partial_and_binary_bodies_are_not_marked() {
        // The origin ignored `identity`: the body is re-encoded in wasm, never compressed twice.
        let gzip = plan("text/html", Some("gzip"));
        assert!(matches!(
            gzip,
            BodyPlan::Rewrite {
                codec: Codec::Gzip,
                rewrite: Rewrite::Html(_)
            }
        ));
        assert!(!edge_compresses(Compression::Edge, &gzip, Some("gzip")));
        let png = plan("image/png", None);
        assert!(!edge_compresses(Compression::Edge, &png, None));
        let partial = BodyPlan::decide(206, Some("text/html"), None, true);
        assert!(!edge_compresses(Compression::Edge, &partial, None));
        let zstd = plan("text/html", Some("zstd"));
        assert!(!edge_compresses(Compression::Edge, &zstd, Some("zstd")));
    }

    #[test]
    fn marking_adds_the_hint_once_and_varies_on_accept_encoding() {
        let mut headers = vec![
            (http::header::VARY, HeaderValue::from_static("Accept")),
            (
                HeaderName::from_static(COMPRESS_HINT),
                HeaderValue::from_static("off"),
            ),
        ];
        mark_for_edge_compression(&mut headers);
        mark_for_edge_compression(&mut headers);
        let hints: Vec<_> = headers
            .iter()
            .filter(|(n, _)| n.as_str() == COMPRESS_HINT)
            .map(|(_, v)| v.to_str().unwrap())
            .collect();
        assert_eq!(hints, ["on"]);
        let vary: Vec<String> = headers
            .iter()
            .filter(|(n, _)| *n == http::header::VARY)
            .flat_map(|(_, v)| {
                v.to_str()
                    .unwrap()
                    .split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(vary, ["accept", "accept-encoding"]);
    }
}
