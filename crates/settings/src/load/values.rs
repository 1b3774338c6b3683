//! The forms a value may be written in, shared by the sections: a flag, a bounded integer, a
//! list or table (also as a string holding one, as environment values are strings), a log
//! level, a compression choice. Each says what it expected when the value does not fit.

use serde::Deserialize;
use toml::{Table, Value};

use crate::{Compression, LogLevel};

/// A value as written. Environment values are always strings.
#[derive(Deserialize)]
#[serde(untagged, expecting = "expected a boolean, an integer or a string")]
enum Raw {
    Bool(bool),
    Int(i64),
    Text(String),
}

/// A boolean, also written `"true"` or `"false"`.
#[derive(Deserialize)]
#[serde(try_from = "Raw")]
pub(super) struct Flag(pub(super) bool);

impl TryFrom<Raw> for Flag {
    type Error = String;
    fn try_from(raw: Raw) -> Result<Self, String> {
        match raw {
            Raw::Bool(b) => Ok(Flag(b)),
            Raw::Text(s) if s == "true" || s == "false" => Ok(Flag(s == "true")),
            Raw::Text(s) => Err(format!("expected true or false, got {s:?}")),
            Raw::Int(n) => Err(format!("expected true or false, got {n}")),
        }
    }
}

/// An array or a table, also written as a string holding one in TOML syntax (environment
/// values are strings: `TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS='["a.example"]'`).
#[derive(Deserialize)]
#[serde(try_from = "RawComposite")]
pub(super) struct Composite(pub(super) Value);

#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "expected an array, a table, or a string holding one"
)]
enum RawComposite {
    Array(Vec<Value>),
    Table(Table),
    Text(String),
}

impl TryFrom<RawComposite> for Composite {
    type Error = String;
    fn try_from(raw: RawComposite) -> Result<Self, String> {
        match raw {
            RawComposite::Array(a) => Ok(Composite(Value::Array(a))),
            RawComposite::Table(t) => Ok(Composite(Value::Table(t))),
            RawComposite::Text(text) => {
                let bad = || format!("expected a TOML array or inline table, got {text:?}");
                if text.contains(['\n', '\r']) {
                    return Err(bad());
                }
                let mut table: Table = format!("v = {text}").parse().map_err(|_| bad())?;
                match (table.len(), table.remove("v")) {
                    (1, Some(v @ (Value::Array(_) | Value::Table(_)))) => Ok(Composite(v)),
                    _ => Err(bad()),
                }
            }
        }
    }
}

/// A value that is one of a few names: a log level (`"warn"`), where bodies are compressed
/// (`"wasm"` or `"edge"`).
pub(super) trait Named: Copy + 'static {
    /// Every value, in the order the error message lists them.
    fn all() -> &'static [Self];
    /// The name it is written as.
    fn name(self) -> &'static str;
}

impl Named for LogLevel {
    fn all() -> &'static [Self] {
        &LogLevel::ALL
    }
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Named for Compression {
    fn all() -> &'static [Self] {
        &Compression::ALL
    }
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// One of the names of `T`, as written.
#[derive(Deserialize)]
#[serde(try_from = "Raw", bound = "T: Named")]
pub(super) struct OneOf<T: Named>(pub(super) T);

impl<T: Named> TryFrom<Raw> for OneOf<T> {
    type Error = String;
    fn try_from(raw: Raw) -> Result<Self, String> {
        let names = || {
            T::all()
                .iter()
                .map(|v| v.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match raw {
            Raw::Text(s) => (T::all().iter().find(|v| v.name() == s))
                .map(|v| OneOf(*v))
                .ok_or_else(|| format!("expected one of {}, got {s:?}", names())),
            Raw::Bool(b) => Err(format!("expected one of {}, got {b}", names())),
            Raw::Int(n) => Err(format!("expected one of {}, got {n}", names())),
        }
    }
}

/// An integer in `MIN..=MAX`, also written as a string.
#[derive(Deserialize)]
#[serde(try_from = "Raw")]
pub(super) struct Int<const MIN: u32, const MAX: u32>(pub(super) u32);

impl<const MIN: u32, const MAX: u32> TryFrom<Raw> for Int<MIN, MAX> {
    type Error = String;
    fn try_from(raw: Raw) -> Result<Self, String> {
        let n: i64 = match raw {
            Raw::Int(n) => n,
            Raw::Text(s) => {
                (s.trim().parse()).map_err(|_| format!("expected an integer, got {s:?}"))?
            }
            Raw::Bool(b) => return Err(format!("expected an integer, got {b}")),
        };
        let in_range = u32::try_from(n).ok().filter(|n| (MIN..=MAX).contains(n));
        in_range
            .map(Int)
            .ok_or_else(|| format!("{n} is outside {MIN}..={MAX}"))
    }
}

/// A value for a message: strings quoted, integers as written, anything else by its type.
pub(super) fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Integer(n) => n.to_string(),
        other => format!("a {}", other.type_str()),
    }
}
