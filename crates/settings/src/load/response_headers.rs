//! `[response_headers]`: an open table of headers added to every response. Names must be
//! HTTP tokens the proxy does not manage itself; values must hold no control characters.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::{Context, LoadError, Section};
use crate::HeaderSetting;

/// `[response_headers]` as written (file and environment merged), by name.
pub(super) type ResponseHeadersFile = BTreeMap<String, String>;

/// Headers whose values the proxy derives from the body and connection; setting them on
/// every response would break framing or content decoding.
const MANAGED_HEADERS: [&str; 10] = [
    "content-length",
    "transfer-encoding",
    "content-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "host",
    "proxy-connection",
];

impl Section for ResponseHeadersFile {
    /// In the order of the names as written; names lowercase.
    type Valid = Cow<'static, [HeaderSetting]>;

    fn validate(self, cx: &mut Context<'_>) -> Result<Self::Valid, LoadError> {
        let mut headers = Vec::with_capacity(self.len());
        for (name, value) in self {
            let key = format!("response_headers.{name}");
            let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            if name.is_empty() || !name.bytes().all(token) {
                return Err(cx.error(&key, "not a valid HTTP header name"));
            }
            let name = name.to_ascii_lowercase();
            if MANAGED_HEADERS.contains(&name.as_str()) {
                return Err(cx.error(
                    &key,
                    "framing and hop-by-hop headers are managed by the proxy and cannot be set here",
                ));
            }
            if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
                return Err(cx.error(&key, "header values may not contain control characters"));
            }
            let (name, value) = (Cow::Owned(name), Cow::Owned(value));
            headers.push(HeaderSetting { name, value });
        }
        Ok(Cow::Owned(headers))
    }
}
