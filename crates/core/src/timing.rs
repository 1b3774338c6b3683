//! The `Server-Timing` response header: what the service knows when a response's headers
//! leave, as a list a browser's developer tools (and `PerformanceServerTiming`) show per
//! request.
//!
//! Why a pure function of a few numbers: the adapter measures (it owns the clock and the
//! platform calls), the core decides the wire format once, so every response (the service's
//! own endpoints, proxied pages, cache hits) writes the same grammar and a test can check it
//! for any input.
//!
//! The value is an RFC 9110 list (`#` rule: elements separated by `,`) of metrics in the W3C
//! Server Timing grammar: `name *( OWS ";" OWS param )`, with `dur=` a number of milliseconds
//! and `desc=` a token or a quoted string. Only the service's own vocabulary goes in: metric
//! names are constants here and the cache state is one of the cache's fixed words, so no
//! value taken from a request, a cookie or a page (per-reader data) can reach the header. The
//! durations are the reader's own request's, which the reader can time anyway.

use std::fmt::Write as _;
use std::time::Duration;

/// The header's name (lowercase, as HTTP/2 sends it).
pub const SERVER_TIMING: &str = "server-timing";

/// What is known of one request when its response headers leave.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings<'a> {
    /// The cache's verdict for this response (`HIT`, `MISS`, `PASS(reason)`, as in
    /// `x-ts-cache`), sent as `cache;desc=…`. `None` (no cache in the path, e.g. the
    /// service's own endpoints) leaves the entry out.
    ///
    /// This is the hook for the cache: the response phase is handed the verdict and passes it
    /// here. It must be one of the cache's fixed words, never text from the request.
    pub cache: Option<&'a str>,
    /// How long the origin took to answer with its headers (`origin;dur=…`), from sending the
    /// request to receiving the response head. `None` when the origin was not asked.
    pub origin: Option<Duration>,
    /// Time in the service from the request's arrival until these headers were decided
    /// (`edge;dur=…`), origin wait included.
    pub edge: Duration,
}

impl Timings<'_> {
    /// The header value: `cache;desc=HIT, origin;dur=12.3, edge;dur=15.1` (entries that are
    /// not known are left out; `edge` is always there). Always a valid header value.
    pub fn header_value(&self) -> String {
        let mut out = String::with_capacity(64);
        if let Some(state) = self.cache {
            out.push_str("cache;desc=");
            push_param_value(&mut out, state);
            out.push_str(", ");
        }
        if let Some(origin) = self.origin {
            push_duration(&mut out, "origin", origin);
            out.push_str(", ");
        }
        push_duration(&mut out, "edge", self.edge);
        out
    }
}

/// `name;dur=MS` with a tenth of a millisecond: finer than that is noise in a shared host,
/// and coarser would round fast endpoints to zero.
fn push_duration(out: &mut String, name: &str, duration: Duration) {
    // Integer arithmetic, rounding half up: no float formatting surprises.
    let tenths = duration.as_micros().saturating_add(50) / 100;
    let _ = write!(out, "{name};dur={}.{}", tenths / 10, tenths % 10);
}

/// A parameter value: a token when it is one, else a quoted string with `"` and `\` escaped
/// and anything a quoted string cannot carry (control characters, non-ASCII) shown as `?`.
fn push_param_value(out: &mut String, value: &str) {
    if !value.is_empty() && value.bytes().all(is_tchar) {
        out.push_str(value);
        return;
    }
    out.push('"');
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' ' | '\t' | '!'..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out.push('"');
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One parsed metric: its name and its parameters, values unquoted.
    type Metric = (String, Vec<(String, String)>);

    /// An independent reading of the grammar (W3C Server Timing over the RFC 9110 list rule),
    /// strict: anything outside it is an error. Written from the grammar, not from the code
    /// above: a character-by-character scanner rather than a formatter.
    fn parse(value: &str) -> Result<Vec<Metric>, String> {
        let b = value.as_bytes();
        let mut i = 0;
        let mut metrics = Vec::new();
        let ows = |i: &mut usize| {
            while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
                *i += 1;
            }
        };
        let token = |i: &mut usize| -> Result<String, String> {
            let start = *i;
            while *i < b.len() && is_tchar(b[*i]) {
                *i += 1;
            }
            if *i == start {
                return Err(format!("token expected at {start} in {value:?}"));
            }
            Ok(value[start..*i].to_owned())
        };
        loop {
            let name = token(&mut i)?;
            let mut params = Vec::new();
            loop {
                ows(&mut i);
                if i < b.len() && b[i] == b';' {
                    i += 1;
                    ows(&mut i);
                    let pname = token(&mut i)?;
                    if i >= b.len() || b[i] != b'=' {
                        return Err(format!("= expected at {i} in {value:?}"));
                    }
                    i += 1;
                    let pvalue = if i < b.len() && b[i] == b'"' {
                        i += 1;
                        let mut v = String::new();
                        loop {
                            match b.get(i) {
                                None => return Err(format!("unterminated string in {value:?}")),
                                Some(b'"') => {
                                    i += 1;
                                    break;
                                }
                                Some(b'\\') => {
                                    let c = *b.get(i + 1).ok_or("dangling escape")?;
                                    v.push(c as char);
                                    i += 2;
                                }
                                Some(&c) if c == b'\t' || (0x20..0x7f).contains(&c) => {
                                    v.push(c as char);
                                    i += 1;
                                }
                                Some(c) => return Err(format!("byte {c} in a quoted string")),
                            }
                        }
                        v
                    } else {
                        token(&mut i)?
                    };
                    params.push((pname, pvalue));
                } else {
                    break;
                }
            }
            metrics.push((name, params));
            if i == b.len() {
                return Ok(metrics);
            }
            if b[i] != b',' {
                return Err(format!(", expected at {i} in {value:?}"));
            }
            i += 1;
            ows(&mut i);
        }
    }

    fn dur(params: &[(String, String)]) -> f64 {
        let v = &params.iter().find(|(n, _)| n == "dur").expect("a dur").1;
        v.parse().expect("dur is a number")
    }

    #[test]
    fn known_entries_in_order() {
        let t = Timings {
            cache: Some("HIT"),
            origin: Some(Duration::from_micros(12_345)),
            edge: Duration::from_micros(15_050),
        };
        assert_eq!(
            t.header_value(),
            "cache;desc=HIT, origin;dur=12.3, edge;dur=15.1"
        );
    }

    #[test]
    fn unknown_entries_are_left_out() {
        let t = Timings {
            edge: Duration::from_millis(2),
            ..Timings::default()
        };
        assert_eq!(t.header_value(), "edge;dur=2.0");
    }

    #[test]
    fn a_desc_that_is_not_a_token_is_quoted() {
        let t = Timings {
            cache: Some("PASS(set-cookie)"),
            ..Timings::default()
        };
        assert_eq!(
            t.header_value(),
            "cache;desc=\"PASS(set-cookie)\", edge;dur=0.0"
        );
        let t = Timings {
            cache: Some("a\"b\\c\u{1}é"),
            ..Timings::default()
        };
        assert_eq!(
            t.header_value(),
            "cache;desc=\"a\\\"b\\\\c??\", edge;dur=0.0"
        );
    }

    proptest! {
        /// For any cache word and any durations, the value is a valid header value (the `http`
        /// crate's check), parses under the grammar, and carries the durations it was given.
        #[test]
        fn always_well_formed(
            cache in proptest::option::of(any::<String>()),
            origin_us in proptest::option::of(0u64..10_000_000_000),
            edge_us in 0u64..10_000_000_000,
        ) {
            let t = Timings {
                cache: cache.as_deref(),
                origin: origin_us.map(Duration::from_micros),
                edge: Duration::from_micros(edge_us),
            };
            let value = t.header_value();
            prop_assert!(http::HeaderValue::from_str(&value).is_ok(), "{value:?}");
            let metrics = parse(&value).map_err(TestCaseError::fail)?;
            let names: Vec<&str> = metrics.iter().map(|(n, _)| n.as_str()).collect();
            let mut expected = Vec::new();
            if cache.is_some() { expected.push("cache"); }
            if origin_us.is_some() { expected.push("origin"); }
            expected.push("edge");
            prop_assert_eq!(names, expected);
            let edge = &metrics.last().unwrap().1;
            prop_assert!((dur(edge) - edge_us as f64 / 1000.0).abs() <= 0.05 + 1e-9);
            if let Some(us) = origin_us {
                let origin = &metrics[metrics.len() - 2].1;
                prop_assert!((dur(origin) - us as f64 / 1000.0).abs() <= 0.05 + 1e-9);
            }
            if let Some(c) = &cache {
                // Printable ASCII survives exactly; anything else becomes `?`.
                let shown: String = c.chars()
                    .map(|ch| if ch == ' ' || ch == '\t' || ch.is_ascii_graphic() { ch } else { '?' })
                    .collect();
                prop_assert_eq!(&metrics[0].1, &vec![("desc".to_owned(), shown)]);
            }
        }
    }

    #[test]
    fn the_parser_rejects_what_the_grammar_rejects() {
        for bad in [
            "",
            "edge;dur",
            "edge;;dur=1",
            "a b",
            "edge;desc=\"x",
            "x,",
            "é",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse("a, b;dur=1;desc=\"q\\\"\"").is_ok());
    }
}
