//! Query parameters of the first-party routes, decoded strictly: `application/x-www-form-
//! urlencoded` (`+` is a space, `%HH` a byte), the bytes must be UTF-8 (never replaced with
//! U+FFFD, which would sign or fetch another URL than the one sent), and a parameter the route
//! reads must appear exactly once (a repeated one is refused, not "first wins": two readers
//! of one query must not see two values).

use std::borrow::Cow;
use std::fmt;

use percent_encoding::percent_decode_str;

/// Why a query string cannot give a route its parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// The parameter is not there.
    Missing(&'static str),
    /// The parameter appears more than once.
    Repeated(&'static str),
    /// A name or value does not decode to UTF-8.
    Encoding,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::Missing(name) => write!(f, "no `{name}` parameter"),
            ParamError::Repeated(name) => write!(f, "`{name}` appears more than once"),
            ParamError::Encoding => f.write_str("a query parameter is not UTF-8 once decoded"),
        }
    }
}

impl std::error::Error for ParamError {}

/// The one value of `name` in `query` (without the `?`).
///
/// # Errors
/// [`ParamError`] when it is missing or repeated, or any parameter does not decode.
pub fn required(query: &str, name: &'static str) -> Result<String, ParamError> {
    let mut found = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        // Every name and value must decode, also those of parameters nobody reads.
        let value = decode(raw_value)?;
        if decode(raw_name)? == name {
            if found.is_some() {
                return Err(ParamError::Repeated(name));
            }
            found = Some(value.into_owned());
        }
    }
    found.ok_or(ParamError::Missing(name))
}

fn decode(text: &str) -> Result<Cow<'_, str>, ParamError> {
    let spaced = if text.contains('+') {
        Cow::Owned(text.replace('+', " "))
    } else {
        Cow::Borrowed(text)
    };
    let decoded = percent_decode_str(&spaced)
        .decode_utf8()
        .map_err(|_| ParamError::Encoding)?;
    Ok(Cow::Owned(decoded.into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_value_strictly_decoded() {
        assert_eq!(required("url=a%20b+c&x=1", "url").unwrap(), "a b c");
        assert_eq!(required("x=1&%75rl=%E2%9C%93", "url").unwrap(), "✓");
        assert_eq!(required("url", "url").unwrap(), "");
        assert_eq!(required("x=1", "url"), Err(ParamError::Missing("url")));
        assert_eq!(required("", "url"), Err(ParamError::Missing("url")));
        assert_eq!(
            required("url=a&url=b", "url"),
            Err(ParamError::Repeated("url"))
        );
        assert_eq!(required("url=%FF", "url"), Err(ParamError::Encoding));
        assert_eq!(required("url=a&x=%C3", "url"), Err(ParamError::Encoding));
    }

    proptest! {
        /// The `url` crate's form encoder is the independent writer: what it encodes, this
        /// reads back exactly.
        #[test]
        fn reads_what_a_form_encoder_writes(value in any::<String>(), other in any::<String>()) {
            let query = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("other", &other)
                .append_pair("url", &value)
                .finish();
            prop_assert_eq!(required(&query, "url").unwrap(), value);
        }
    }
}
