//! Deciding what to do with a response body from its headers.
//!
//! The decision is made once, before the headers are sent, because it determines them
//! (`Content-Length` stays only when the body passes through untouched).

use lol_html::AsciiCompatibleEncoding;

/// A `Content-Encoding` the pipeline can decode and re-encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// No content coding (absent or `identity`).
    Identity,
    /// `gzip` (RFC 1952).
    Gzip,
    /// `deflate`: zlib-wrapped (RFC 1950) as the spec says; raw deflate, which some servers send
    /// instead, is detected on the first bytes.
    Deflate,
    /// `br` (RFC 7932).
    Brotli,
}

impl Codec {
    /// Parses a `Content-Encoding` header value. `None` for anything the pipeline cannot decode
    /// (zstd, compress, stacked codings): such bodies pass through untouched, since guessing
    /// would turn them into garbage.
    pub fn from_header(value: Option<&str>) -> Option<Codec> {
        let Some(value) = value else {
            return Some(Codec::Identity);
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Some(Codec::Identity),
            "gzip" | "x-gzip" => Some(Codec::Gzip),
            "deflate" => Some(Codec::Deflate),
            "br" => Some(Codec::Brotli),
            _ => None,
        }
    }

    /// The codings the pipeline can handle, for filtering the client's `Accept-Encoding`.
    pub const SUPPORTED_TOKENS: [&'static str; 3] = ["gzip", "deflate", "br"];
}

/// How a body is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// HTML through lol_html plus the URL rule, in the given charset.
    Html(AsciiCompatibleEncoding),
    /// CSS, JavaScript, JSON, SVG, XML, plain text: the URL rule on the byte stream.
    Text,
    /// A Next.js Flight response (`text/x-component`): the URL rule row by row, `T` row
    /// lengths fixed.
    Flight,
}

/// What happens to a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyPlan {
    /// Decode `codec`, rewrite, re-encode with `codec`.
    Rewrite {
        /// The body's (and the output's) content coding.
        codec: Codec,
        /// The rewriter.
        rewrite: Rewrite,
    },
    /// Send the origin's bytes untouched.
    PassThrough(PassReason),
}

/// Why a body is not rewritten (logged, and useful in tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassReason {
    /// Images, fonts, video, archives and unknown types carry no origin URLs we can rewrite.
    NotText,
    /// A `Content-Encoding` the pipeline cannot decode (zstd, stacked codings...).
    UnsupportedEncoding,
    /// A charset in which ASCII bytes can be part of multi-byte characters (Shift_JIS, Big5,
    /// GBK, gb18030) or that is not ASCII-compatible (UTF-16): a byte-level rewrite could
    /// corrupt text.
    UnsafeCharset,
    /// A Next.js Flight response (`text/x-component`) while `integrations.nextjs.enabled` is
    /// off: its length-prefixed rows must not meet a plain replacement.
    FlightPayload,
    /// A partial (206) or bodiless response.
    NoFullBody,
}

impl BodyPlan {
    /// Plans a body from the response status, `Content-Type` and `Content-Encoding`, and
    /// whether Next.js Flight payloads are rewritten (`integrations.nextjs.enabled`).
    pub fn decide(
        status: u16,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
        rewrite_flight: bool,
    ) -> Self {
        if status == 206 || status == 204 || status == 304 || (100..200).contains(&status) {
            return BodyPlan::PassThrough(PassReason::NoFullBody);
        }
        let (mime, charset) = split_content_type(content_type.unwrap_or(""));
        let rewrite = match mime.as_str() {
            "text/html" | "application/xhtml+xml" => match html_encoding(charset.as_deref()) {
                Some(encoding) => Rewrite::Html(encoding),
                None => return BodyPlan::PassThrough(PassReason::UnsafeCharset),
            },
            "text/x-component" if rewrite_flight => Rewrite::Flight,
            "text/x-component" => return BodyPlan::PassThrough(PassReason::FlightPayload),
            m if is_rewritable_text(m) => {
                if html_encoding(charset.as_deref()).is_none() {
                    return BodyPlan::PassThrough(PassReason::UnsafeCharset);
                }
                Rewrite::Text
            }
            _ => return BodyPlan::PassThrough(PassReason::NotText),
        };
        match Codec::from_header(content_encoding) {
            Some(codec) => BodyPlan::Rewrite { codec, rewrite },
            None => BodyPlan::PassThrough(PassReason::UnsupportedEncoding),
        }
    }

    /// Whether the body's bytes may change (so `Content-Length` and validators must go).
    pub fn changes_body(&self) -> bool {
        matches!(self, BodyPlan::Rewrite { .. })
    }
}

fn is_rewritable_text(mime: &str) -> bool {
    matches!(
        mime,
        "text/css"
            | "text/javascript"
            | "application/javascript"
            | "application/x-javascript"
            | "application/ecmascript"
            | "text/ecmascript"
            | "application/json"
            | "text/json"
            | "application/ld+json"
            | "application/manifest+json"
            | "image/svg+xml"
            | "application/xml"
            | "text/xml"
            | "application/rss+xml"
            | "application/atom+xml"
            | "text/plain"
    ) || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// Lowercased media type and the `charset` parameter, if any.
pub(crate) fn split_content_type(value: &str) -> (String, Option<String>) {
    let mut parts = value.split(';');
    let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_owned())
    });
    (mime, charset)
}

/// Whether bytes in `charset` (a label such as `shift_jis`) can be rewritten byte-wise. Unknown
/// labels count as UTF-8 (safe).
pub(crate) fn charset_allows_rewrite(charset: &str) -> bool {
    html_encoding(Some(charset)).is_some()
}

/// The encoding to parse with, or `None` when a byte-level rewrite is unsafe in this charset.
/// A missing or unknown label means UTF-8, the web's default for the pages we serve.
fn html_encoding(charset: Option<&str>) -> Option<AsciiCompatibleEncoding> {
    let encoding = match charset {
        None => encoding_rs::UTF_8,
        // The label nearly every page sends, without the label table's search: a fresh
        // instance pays for the first touch of every table it reads (8 µs here under Viceroy).
        Some(label) if label.eq_ignore_ascii_case("utf-8") => encoding_rs::UTF_8,
        Some(label) => {
            encoding_rs::Encoding::for_label(label.as_bytes()).unwrap_or(encoding_rs::UTF_8)
        }
    };
    // In these, a byte in the ASCII range may be the second half of a character.
    let ascii_bytes_can_be_trail_bytes = [
        encoding_rs::SHIFT_JIS,
        encoding_rs::BIG5,
        encoding_rs::GBK,
        encoding_rs::GB18030,
    ];
    if ascii_bytes_can_be_trail_bytes.contains(&encoding) {
        return None;
    }
    AsciiCompatibleEncoding::new(encoding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_utf8_shortcut_gives_what_the_label_table_gives() {
        for label in [
            "utf-8", "UTF-8", "Utf-8", "uTf-8", "utf8", " utf-8", "utf-16", "x",
        ] {
            let table =
                encoding_rs::Encoding::for_label(label.as_bytes()).unwrap_or(encoding_rs::UTF_8);
            let expected = AsciiCompatibleEncoding::new(table)
                .map(|e| <&encoding_rs::Encoding>::from(e).name());
            let got = html_encoding(Some(label)).map(|e| <&encoding_rs::Encoding>::from(e).name());
            assert_eq!(got, expected, "{label:?}");
        }
    }

    const NEXTJS: bool = trusted_server_settings::Settings::DEFAULT
        .integrations
        .nextjs
        .enabled;
    const NEXTJS_OFF: bool = false;

    #[test]
    fn flight_responses_are_rewritten_unless_next_js_is_off() {
        assert_eq!(
            plan("text/x-component", Some("gzip")),
            BodyPlan::Rewrite {
                codec: Codec::Gzip,
                rewrite: Rewrite::Flight
            }
        );
    }

    fn plan(ct: &str, ce: Option<&str>) -> BodyPlan {
        BodyPlan::decide(200, Some(ct), ce, NEXTJS)
    }

    #[test]
    fn html_and_text_types_are_rewritten_with_their_codec() {
        assert!(matches!(
            plan("text/html; charset=UTF-8", Some("gzip")),
            BodyPlan::Rewrite {
                codec: Codec::Gzip,
                rewrite: Rewrite::Html(_)
            }
        ));
        for ct in [
            "text/css",
            "application/javascript",
            "application/json",
            "application/vnd.api+json",
            "image/svg+xml",
        ] {
            assert_eq!(
                plan(ct, Some("br")),
                BodyPlan::Rewrite {
                    codec: Codec::Brotli,
                    rewrite: Rewrite::Text
                },
                "{ct}"
            );
        }
    }

    #[test]
    fn latin1_html_is_parsed_as_windows_1252() {
        let BodyPlan::Rewrite {
            rewrite: Rewrite::Html(enc),
            ..
        } = plan("text/html; charset=\"ISO-8859-1\"", None)
        else {
            panic!("latin-1 must be rewritten");
        };
        assert_eq!(
            enc,
            AsciiCompatibleEncoding::new(encoding_rs::WINDOWS_1252).unwrap()
        );
    }

    #[test]
    fn everything_else_passes_through_with_a_reason() {
        let cases = [
            (plan("image/png", None), PassReason::NotText),
            (plan("font/woff2", None), PassReason::NotText),
            (
                plan("text/html", Some("zstd")),
                PassReason::UnsupportedEncoding,
            ),
            (
                plan("text/html", Some("gzip, br")),
                PassReason::UnsupportedEncoding,
            ),
            (
                plan("text/html; charset=shift_jis", None),
                PassReason::UnsafeCharset,
            ),
            (
                plan("text/html; charset=utf-16le", None),
                PassReason::UnsafeCharset,
            ),
            (
                plan("text/css; charset=gbk", None),
                PassReason::UnsafeCharset,
            ),
            (
                BodyPlan::decide(200, Some("text/x-component"), None, NEXTJS_OFF),
                PassReason::FlightPayload,
            ),
            (
                BodyPlan::decide(206, Some("text/html"), None, NEXTJS),
                PassReason::NoFullBody,
            ),
            (
                BodyPlan::decide(304, Some("text/html"), None, NEXTJS),
                PassReason::NoFullBody,
            ),
        ];
        for (got, reason) in cases {
            assert_eq!(got, BodyPlan::PassThrough(reason));
        }
    }
}
