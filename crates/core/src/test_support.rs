//! Helpers shared by the core's unit tests.

use http::{HeaderName, HeaderValue};

/// Header lines from `(name, value)` text pairs (test input only: panics on an invalid one).
pub(crate) fn header_list(list: &[(&str, &str)]) -> Vec<(HeaderName, HeaderValue)> {
    list.iter()
        .map(|(n, v)| {
            (
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            )
        })
        .collect()
}
