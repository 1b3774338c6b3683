//! Build-time loading: TOML text + environment overrides → validated [`Settings`].
//!
//! The file and the `TRUSTED_SERVER__SECTION__KEY` variables are merged into one TOML table,
//! which serde reads into [`SettingsFile`]: one `*File` type per section, every field
//! optional, unknown keys rejected, each value in one of the forms of [`values`]. Each section
//! then validates itself ([`Section`], one module per section) and fills in its defaults.
//! Every error names its key and where the value came from: the file's line, or the variable.
//!
//! A new setting is a field of its section's `*File` type and a line of its `validate`, beside
//! its field in the settings types and its row in `docs/settings.md`.

use std::collections::HashMap;
use std::{fmt, path::Path};

use serde::de::value::{Error as ProbeError, MapDeserializer};
use serde::de::{self, Deserializer, IntoDeserializer, Visitor};
use serde::Deserialize;
use toml::{Table, Value};

use crate::Settings;

mod auction;
mod consent;
mod first_party;
mod ids;
mod plain;
mod publisher;
mod response_headers;
mod secrets;
mod values;

use auction::AuctionFile;
use consent::ConsentFile;
use first_party::FirstPartyFile;
use ids::IdsFile;
use plain::{DeliveryFile, IntegrationsFile, LoggingFile, ScriptFile};
use publisher::PublisherFile;
use response_headers::ResponseHeadersFile;
use secrets::{AdminFile, IdentityFile, SigningFile};

/// Prefix of environment overrides: `TRUSTED_SERVER__PUBLISHER__ORIGIN_URL=...`.
pub const ENV_PREFIX: &str = "TRUSTED_SERVER__";

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The settings file, at this line (counted from 1).
    Line(usize),
    /// This environment variable (`TRUSTED_SERVER__PUBLISHER__ORIGIN_URL`).
    Variable(String),
}

/// A settings mistake. The message names the offending key and where its value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// Dotted key (`publisher.origin_url`), or `trusted-server.toml` for syntax errors.
    pub key: String,
    /// What is wrong with it.
    pub problem: String,
    /// The file's line or the variable that gave the value; `None` for a missing key.
    pub origin: Option<Origin>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid setting `{}`", self.key)?;
        match &self.origin {
            Some(Origin::Line(line)) => write!(f, " at line {line}")?,
            // An override of the wrong form is named by its variable already.
            Some(Origin::Variable(name)) if *name != self.key => write!(f, " from {name}")?,
            _ => {}
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for LoadError {}

impl LoadError {
    /// The message with the settings file's name where it helps: before a line of that file,
    /// or after an error that no single value caused (a missing key).
    pub fn in_file(&self, file: &Path) -> String {
        match self.origin {
            Some(Origin::Line(_)) => format!("{}: {self}", file.display()),
            Some(Origin::Variable(_)) => self.to_string(),
            None => format!("{self} (in {} or its overrides)", file.display()),
        }
    }
}

/// The whole file, with the environment merged in.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
struct SettingsFile {
    publisher: PublisherFile,
    integrations: IntegrationsFile,
    identity: IdentityFile,
    signing: SigningFile,
    first_party: FirstPartyFile,
    script: ScriptFile,
    admin: AdminFile,
    logging: LoggingFile,
    delivery: DeliveryFile,
    consent: ConsentFile,
    auction: AuctionFile,
    ids: IdsFile,
    /// An open table: any header name.
    response_headers: ResponseHeadersFile,
}

/// Parses `toml_text`, applies the `TRUSTED_SERVER__SECTION__KEY` variables found in `env`
/// (other variables are ignored) and validates the result.
///
/// Environment values are strings; a boolean or integer key also accepts its string form, so
/// `TRUSTED_SERVER__PUBLISHER__STREAMING=false` works. Under `[response_headers]` an
/// environment key's underscores become dashes (`..__RESPONSE_HEADERS__X_ENV=1` sets `x-env`).
/// When `publisher.origin_url` comes from the environment and `publisher.origin_host` does
/// not, the file's `origin_host` (which belongs to the file's `origin_url`) is not used:
/// `origin_host` is the new URL's `host[:port]`. [`load_with_notes`] says so.
///
/// # Errors
/// A [`LoadError`] naming the first bad key.
pub fn load<I, K, V>(toml_text: &str, env: I) -> Result<Settings, LoadError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    load_with_notes(toml_text, env).map(|(settings, _)| settings)
}

/// [`load`], plus notes for the person building: a file value that an override made unused.
///
/// # Errors
/// A [`LoadError`] naming the first bad key.
pub fn load_with_notes<I, K, V>(
    toml_text: &str,
    env: I,
) -> Result<(Settings, Vec<String>), LoadError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut table: Table = toml_text.parse().map_err(|e: toml::de::Error| LoadError {
        key: "trusted-server.toml".to_owned(),
        // toml gives no message for some mistakes (a control character in a comment).
        problem: Some(e.message().trim())
            .filter(|m| !m.is_empty())
            .unwrap_or("invalid TOML syntax")
            .to_owned(),
        origin: e.span().map(|s| Origin::Line(line_of(toml_text, s.start))),
    })?;
    let mut origins = file_lines(toml_text);
    let mut overrides: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k.as_ref().starts_with(ENV_PREFIX))
        .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
        .collect();
    // Deterministic: the process environment has no order.
    overrides.sort();
    for (variable, value) in overrides {
        let key = apply_override(&mut table, &variable, value)?;
        origins.insert(key, Origin::Variable(variable));
    }
    let file: SettingsFile =
        serde_path_to_error::deserialize(Value::Table(table)).map_err(|e| {
            let path: Vec<String> = e.path().iter().map(ToString::to_string).collect();
            let names: Vec<&str> = path.iter().map(String::as_str).collect();
            let (last, parent) = names.split_last().unwrap_or((&"", &[]));
            let problem = match (shape(parent), parent) {
                (Shape::Table(fields), _) if fields.contains(last) => e.inner().message(),
                (Shape::Table(_), []) => "unknown section",
                (Shape::Table(_), ["integrations"]) => "unknown integration",
                (Shape::Table(_), _) => "unknown key",
                _ => e.inner().message(),
            };
            // An empty or blank name (`"" = 1`) is shown quoted, so the message still names it.
            let quoted = names.iter().map(|n| match n.trim() {
                "" => format!("{n:?}"),
                _ => (*n).to_owned(),
            });
            LoadError {
                key: quoted.collect::<Vec<_>>().join("."),
                problem: problem.to_owned(),
                origin: origin_of(&origins, &names.join(".")),
            }
        })?;
    convert(file, &origins)
}

/// Where the value of `key` came from; for a table, where its first key did.
fn origin_of(origins: &HashMap<String, Origin>, key: &str) -> Option<Origin> {
    let inside = format!("{key}.");
    let first = || (origins.keys().filter(|k| k.starts_with(&inside))).min();
    (origins.get(key).or_else(|| origins.get(first()?))).cloned()
}

/// The line (from 1) of the byte at `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    let before = &text.as_bytes()[..offset.min(text.len())];
    before.iter().filter(|&&b| b == b'\n').count() + 1
}

/// The line of every key written in the file, by dotted key (`publisher.streaming` → 17). A
/// table in an array (`[[auction.bidders]]`, or inline) is `auction.bidders[0]`, counted from
/// 0, and its keys `auction.bidders[0].code`.
fn file_lines(text: &str) -> HashMap<String, Origin> {
    type Out = HashMap<String, Origin>;
    fn walk(table: &dyn toml_edit::TableLike, prefix: &str, text: &str, out: &mut Out) {
        let mut line = |key: &str, span: Option<std::ops::Range<usize>>| {
            if let Some(span) = span {
                out.insert(key.to_owned(), Origin::Line(line_of(text, span.start)));
            }
        };
        let mut tables: Vec<(String, &dyn toml_edit::TableLike)> = Vec::new();
        for (name, item) in table.iter() {
            let key = format!("{prefix}{name}");
            let key_span = table.get_key_value(name).and_then(|(k, _)| k.span());
            line(&key, key_span.or_else(|| item.span()));
            if let Some(inner) = item.as_table_like() {
                tables.push((key, inner));
            } else if let Some(array) = item.as_array_of_tables() {
                for (i, inner) in array.iter().enumerate() {
                    let key = format!("{key}[{i}]");
                    line(&key, inner.span());
                    tables.push((key, inner));
                }
            } else if let Some(array) = item.as_array() {
                for (i, value) in array.iter().enumerate() {
                    if let Some(inner) = value.as_inline_table() {
                        let key = format!("{key}[{i}]");
                        line(&key, value.span());
                        tables.push((key, inner));
                    }
                }
            }
        }
        for (key, inner) in tables {
            walk(inner, &format!("{key}."), text, out);
        }
    }
    let mut out = HashMap::new();
    if let Ok(doc) = toml_edit::ImDocument::parse(text) {
        walk(doc.as_table(), "", text, &mut out);
    }
    out
}

/// Puts one `TRUSTED_SERVER__A__B=value` into `table` as `a.b = "value"`; returns the key.
fn apply_override(table: &mut Table, variable: &str, value: String) -> Result<String, LoadError> {
    let rest = variable.strip_prefix(ENV_PREFIX).unwrap_or(variable);
    let mut parts: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
    let error = |key: &str, problem: &str| LoadError {
        key: key.to_owned(),
        problem: problem.to_owned(),
        origin: Some(Origin::Variable(variable.to_owned())),
    };
    let form = "environment overrides take the form TRUSTED_SERVER__SECTION__KEY";
    match parts.split_last_mut() {
        Some((last, sections)) if !sections.is_empty() && !last.is_empty() => {
            let parent: Vec<&str> = sections.iter().map(String::as_str).collect();
            if shape(&parent) == Shape::OpenTable {
                *last = last.replace('_', "-");
            }
        }
        _ => return Err(error(variable, form)),
    }
    let (last, sections) = parts.split_last().unwrap_or((&parts[0], &[]));
    let mut current = table;
    for (i, name) in sections.iter().enumerate() {
        let entry = current
            .entry(name.clone())
            .or_insert_with(|| Table::new().into());
        let Value::Table(inner) = entry else {
            return Err(error(&sections[..=i].join("."), "expected a table"));
        };
        current = inner;
    }
    current.insert(last.clone(), Value::String(value));
    Ok(parts.join("."))
}

/// What the settings types accept at a key path.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    /// A table with these keys only.
    Table(&'static [&'static str]),
    /// A table with any keys (`[response_headers]`).
    OpenTable,
    /// A value, or nothing.
    Value,
}

/// The shape at `path` (`[]` is the whole file). serde_derive passes every struct's field
/// names to `deserialize_struct`; [`Probe`] feeds the types one key per level to get there.
fn shape(path: &[&str]) -> Shape {
    let mut found = Shape::Value;
    // The probe always ends in an error, once it has recorded what is at `path`.
    let _ = SettingsFile::deserialize(Probe {
        path,
        found: &mut found,
    });
    found
}

/// A deserializer that records what the type asks for at the end of `path`.
struct Probe<'a> {
    path: &'a [&'a str],
    found: &'a mut Shape,
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = ProbeError;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ProbeError> {
        Err(de::Error::custom("a value"))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_some(self)
    }

    fn deserialize_map<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ProbeError> {
        if self.path.is_empty() {
            *self.found = Shape::OpenTable;
        }
        Err(de::Error::custom("an open table"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        let Some((key, path)) = self.path.split_first() else {
            *self.found = Shape::Table(fields);
            return Err(de::Error::custom("a table"));
        };
        let next = Probe {
            path,
            found: self.found,
        };
        visitor.visit_map(MapDeserializer::new(std::iter::once((*key, next))))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct enum identifier ignored_any
    }
}

impl<'de, 'a> IntoDeserializer<'de, ProbeError> for Probe<'a> {
    type Deserializer = Probe<'a>;
    fn into_deserializer(self) -> Self {
        self
    }
}

/// Every key of the settings types, dotted (`publisher.origin_url`), in declaration order; an
/// open table's keys are not listed.
pub fn keys() -> Vec<String> {
    fn walk(path: &mut Vec<&'static str>, out: &mut Vec<String>) {
        match shape(path) {
            Shape::Table(fields) => fields.iter().for_each(|field| {
                path.push(field);
                walk(path, out);
                path.pop();
            }),
            Shape::OpenTable => {}
            Shape::Value => out.push(path.join(".")),
        }
    }
    let mut out = Vec::new();
    walk(&mut Vec::new(), &mut out);
    out
}

/// The environment variable of every key in [`keys`] (`TRUSTED_SERVER__PUBLISHER__ORIGIN_URL`,
/// ...), for build scripts to watch even while unset.
pub fn override_variables() -> impl Iterator<Item = String> {
    let variable = |k: String| format!("{ENV_PREFIX}{}", k.replace('.', "__").to_uppercase());
    keys().into_iter().map(variable)
}

/// What a section's validation can see and say: where each value came from, and notes for
/// the person building.
struct Context<'a> {
    origins: &'a HashMap<String, Origin>,
    notes: Vec<String>,
}

impl Context<'_> {
    /// An error at `key`, with where its value came from.
    fn error(&self, key: &str, problem: &str) -> LoadError {
        LoadError {
            key: key.to_owned(),
            problem: problem.to_owned(),
            origin: origin_of(self.origins, key),
        }
    }

    /// Whether the value of `key` came from an environment variable.
    fn is_overridden(&self, key: &str) -> bool {
        matches!(self.origins.get(key), Some(Origin::Variable(_)))
    }

    /// Tells the person building something the settings did not fail on.
    fn note(&mut self, note: String) {
        self.notes.push(note);
    }
}

/// A section as read from the file (every key optional), validated into its settings value:
/// its own keys checked, each error naming its key, the defaults filled in.
trait Section {
    /// The validated value.
    type Valid;

    /// Checks the section's keys and fills in the defaults.
    fn validate(self, cx: &mut Context<'_>) -> Result<Self::Valid, LoadError>;
}

/// Validates each section and fills in the defaults. A mistake in an earlier section is
/// reported before one in a later section.
fn convert(
    file: SettingsFile,
    origins: &HashMap<String, Origin>,
) -> Result<(Settings, Vec<String>), LoadError> {
    let cx = &mut Context {
        origins,
        notes: Vec::new(),
    };
    let publisher = file.publisher.validate(cx)?;
    let response_headers = file.response_headers.validate(cx)?;
    let identity = file.identity.validate(cx)?;
    let admin = file.admin.validate(cx)?;
    let signing = file.signing.validate(cx)?;
    let first_party = file.first_party.validate(cx)?;
    let settings = Settings {
        publisher,
        integrations: file.integrations.validate(cx)?,
        identity,
        signing,
        first_party,
        script: file.script.validate(cx)?,
        admin,
        logging: file.logging.validate(cx)?,
        delivery: file.delivery.validate(cx)?,
        consent: file.consent.validate(cx)?,
        auction: file.auction.validate(cx)?,
        ids: file.ids.validate(cx)?,
        response_headers,
    };
    Ok((settings, std::mem::take(&mut cx.notes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compression, LogLevel, Resolve, Scheme};

    const MINIMAL: &str = r#"
        [publisher]
        domain = "www.example.com"
        origin_url = "https://origin.example.com"
    "#;

    /// [`MINIMAL`] with one allowed partner domain.
    const FP: &str = r#"
        [publisher]
        domain = "www.example.com"
        origin_url = "https://origin.example.com"
        [first_party]
        allowed_domains = ["demo-partner.example"]
    "#;

    fn no_env() -> Vec<(String, String)> {
        Vec::new()
    }

    #[test]
    fn minimal_file_gets_documented_defaults() {
        let s = load(MINIMAL, no_env()).unwrap();
        assert_eq!(s.publisher.origin_scheme, Scheme::Https);
        assert_eq!(s.publisher.origin_address, "origin.example.com:443");
        assert_eq!(s.publisher.origin_host, "origin.example.com");
        assert_eq!(s.publisher.origin_host_name, "origin.example.com");
        assert_eq!(s.publisher.origin_port, None);
        assert_eq!(s.publisher.origin_tls_host, "origin.example.com");
        assert!(s.publisher.streaming);
        assert!(s.response_headers.is_empty());
        assert!(s.integrations.nextjs.enabled);
        assert_eq!(s.integrations.nextjs.max_held_bytes, 10 * 1024 * 1024);
    }

    #[test]
    fn nextjs_settings_from_file_and_environment() {
        let text =
            format!("{MINIMAL}\n[integrations.nextjs]\nenabled = false\nmax_held_bytes = 4096\n");
        let s = load(&text, no_env()).unwrap();
        assert!(!s.integrations.nextjs.enabled);
        assert_eq!(s.integrations.nextjs.max_held_bytes, 4096);
        let env = [(
            "TRUSTED_SERVER__INTEGRATIONS__NEXTJS__MAX_HELD_BYTES",
            "2048",
        )];
        let s = load(&text, env).unwrap();
        assert_eq!(s.integrations.nextjs.max_held_bytes, 2048);
        assert!(s.to_rust_expr().contains("max_held_bytes : 2048u32"));
    }

    #[test]
    fn delivery_settings_from_file_and_environment() {
        let d = load(MINIMAL, no_env()).unwrap().delivery;
        assert_eq!(d, Settings::DEFAULT.delivery);
        assert!(d.server_timing);
        assert_eq!(d.compression, Compression::Wasm);
        assert!(d.early_hints);
        let text = format!(
            "{MINIMAL}\n[delivery]\nserver_timing = false\ncompression = \"edge\"\nearly_hints = false\n"
        );
        let s = load(&text, no_env()).unwrap();
        assert!(!s.delivery.early_hints);
        assert!(s.to_rust_expr().contains("early_hints : false"));
        let s2 = load(&text, [("TRUSTED_SERVER__DELIVERY__EARLY_HINTS", "true")]).unwrap();
        assert!(s2.delivery.early_hints);
        assert!(!s.delivery.server_timing);
        assert_eq!(s.delivery.compression, Compression::Edge);
        let expr = s.to_rust_expr();
        assert!(expr.contains("Compression :: Edge"), "{expr}");
        assert!(expr.contains("server_timing : false"), "{expr}");
        let var = "TRUSTED_SERVER__DELIVERY__COMPRESSION";
        let s = load(&text, [(var, "wasm")]).unwrap();
        assert_eq!(s.delivery.compression, Compression::Wasm);
        let s = load(
            MINIMAL,
            [("TRUSTED_SERVER__DELIVERY__SERVER_TIMING", "false")],
        )
        .unwrap();
        assert!(!s.delivery.server_timing);
        let e = load(&text, [(var, "fastly")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "invalid setting `delivery.compression` from {var}: expected one of wasm, edge, \
                 got \"fastly\""
            )
        );
        for (bad, key) in [
            ("compression = \"EDGE\"", "delivery.compression"),
            ("compression = 1", "delivery.compression"),
            ("compression = true", "delivery.compression"),
            ("server_timing = \"yes\"", "delivery.server_timing"),
            ("early_hints = \"on\"", "delivery.early_hints"),
            ("server-timing = false", "delivery.server-timing"),
        ] {
            let text = format!("{MINIMAL}\n[delivery]\n{bad}\n");
            let e = load(&text, no_env()).unwrap_err();
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (key, &Some(Origin::Line(7))),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn log_level_from_file_and_environment() {
        assert_eq!(
            load(MINIMAL, no_env()).unwrap().logging.level,
            LogLevel::Info
        );
        let text = format!("{MINIMAL}\n[logging]\nlevel = \"warn\"\n");
        let s = load(&text, no_env()).unwrap();
        assert_eq!(s.logging.level, LogLevel::Warn);
        assert!(
            s.to_rust_expr().contains("LogLevel :: Warn"),
            "{}",
            s.to_rust_expr()
        );
        let var = "TRUSTED_SERVER__LOGGING__LEVEL";
        for level in LogLevel::ALL {
            let s = load(&text, [(var, level.as_str())]).unwrap();
            assert_eq!(s.logging.level, level);
        }
        // A bad value names the key and where it came from, and lists what is accepted.
        let e = load(&text, [(var, "loud")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "invalid setting `logging.level` from {var}: expected one of off, error, warn, \
                 info, debug, trace, got \"loud\""
            )
        );
        for bad in [
            "level = 3",
            "level = true",
            "level = \"INFO\"",
            "lvl = \"info\"",
        ] {
            let text = format!("{MINIMAL}\n[logging]\n{bad}\n");
            let e = load(&text, no_env()).unwrap_err();
            let key = if bad.starts_with("lvl") {
                "logging.lvl"
            } else {
                "logging.level"
            };
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (key, &Some(Origin::Line(7))),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn env_overrides_win_and_are_typed() {
        let env = [
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL",
                "http://127.0.0.1:8080",
            ),
            ("TRUSTED_SERVER__PUBLISHER__STREAMING", "false"),
            ("TRUSTED_SERVER__PUBLISHER__CONNECT_TIMEOUT_MS", "4096"),
            ("TRUSTED_SERVER__RESPONSE_HEADERS__X_ENV_NAME", "staging"),
            ("UNRELATED", "ignored"),
        ];
        let s = load(MINIMAL, env).unwrap();
        assert_eq!(s.publisher.origin_address, "127.0.0.1:8080");
        assert_eq!(s.publisher.origin_host, "127.0.0.1:8080");
        assert_eq!(s.publisher.origin_host_name, "127.0.0.1");
        assert_eq!(s.publisher.origin_port, Some(8080));
        assert_eq!(s.publisher.origin_scheme, Scheme::Http);
        assert!(!s.publisher.streaming);
        assert_eq!(s.publisher.connect_timeout_ms, 4096);
        assert_eq!(s.response_headers[0].name, "x-env-name");
        assert_eq!(s.response_headers[0].value, "staging");
    }

    fn error_key(toml_text: &str, env: &[(&str, &str)]) -> String {
        load(toml_text, env.iter().copied()).unwrap_err().key
    }

    #[test]
    fn every_mistake_names_its_key() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            ("[publisher]\norigin_url='https://o.example'", &[], "publisher.domain"),
            ("[publisher]\ndomain='a.example'", &[], "publisher.origin_url"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__ORIGIN_URL", "ftp://x")], "publisher.origin_url"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__ORIGIN_URL", "http://x/path")], "publisher.origin_url"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__ORIGIN_URL", "http://x:99999")], "publisher.origin_url"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__STREAMING", "yes")], "publisher.streaming"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__CONNECT_TIMEOUT_MS", "-1")], "publisher.connect_timeout_ms"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__CONNECT_TIMEOUT_MS", "lots")], "publisher.connect_timeout_ms"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__STREMING", "true")], "publisher.streming"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__COOKIE_DOMAIN", ".other.com")], "publisher.cookie_domain"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST", "bad host")], "publisher.origin_host"),
            (MINIMAL, &[("TRUSTED_SERVER__NOPE", "1")], "TRUSTED_SERVER__NOPE"),
            ("[publisher\n", &[], "trusted-server.toml"),
            ("[other]\nx=1\n[publisher]\ndomain='a.b'\norigin_url='http://a.b'", &[], "other"),
            ("[response_headers]\n'bad name'='x'\n[publisher]\ndomain='a.b'\norigin_url='http://a.b'", &[], "response_headers.bad name"),
            ("[response_headers]\nx-a=\"a\\nb\"\n[publisher]\ndomain='a.b'\norigin_url='http://a.b'", &[], "response_headers.x-a"),
            ("[response_headers]\ncontent-length='0'\n[publisher]\ndomain='a.b'\norigin_url='http://a.b'", &[], "response_headers.content-length"),
            (MINIMAL, &[("TRUSTED_SERVER__RESPONSE_HEADERS__TRANSFER_ENCODING", "chunked")], "response_headers.transfer-encoding"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__COOKIE_DOMAIN", "com")], "publisher.cookie_domain"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__ORIGIN_URL", "https://o..example.com")], "publisher.origin_url"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__DOMAIN", "-bad.example.com")], "publisher.domain"),
            (MINIMAL, &[("TRUSTED_SERVER__INTEGRATIONS__NEXTJS__MAX_HELD_BYTES", "10")], "integrations.nextjs.max_held_bytes"),
            (MINIMAL, &[("TRUSTED_SERVER__INTEGRATIONS__NEXTJS__ENABLED", "maybe")], "integrations.nextjs.enabled"),
            (MINIMAL, &[("TRUSTED_SERVER__INTEGRATIONS__NEXTJS__MAX_HELD", "1")], "integrations.nextjs.max_held"),
            (MINIMAL, &[("TRUSTED_SERVER__INTEGRATIONS__REMIX__ENABLED", "true")], "integrations.remix"),
            ("[integrations]\nnextjs=1\n[publisher]\ndomain='a.b'\norigin_url='http://a.b'", &[], "integrations.nextjs"),
            (MINIMAL, &[("TRUSTED_SERVER__LOGGING__LEVEL", "verbose")], "logging.level"),
            (MINIMAL, &[("TRUSTED_SERVER__SCRIPT__INJECT", "sometimes")], "script.inject"),
            (MINIMAL, &[("TRUSTED_SERVER__LOGGING__COLOUR", "none")], "logging.colour"),
            (MINIMAL, &[("TRUSTED_SERVER__IDENTITY__ENABLED", "on")], "identity.enabled"),
            (MINIMAL, &[("TRUSTED_SERVER__IDENTITY__SECRET_STORE", "my store")], "identity.secret_store"),
            (MINIMAL, &[("TRUSTED_SERVER__IDENTITY__SECRET_KEY", "")], "identity.secret_key"),
            (MINIMAL, &[("TRUSTED_SERVER__IDENTITY__SECRET", "x")], "identity.secret"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__ENABLED", "yes")], "signing.enabled"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__SECRET_STORE", "a/b")], "signing.secret_store"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__CURRENT_KID", "")], "signing.current_kid"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__CURRENT_KID", "k\"1")], "signing.current_kid"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__PREVIOUS_KIDS", "a,b")], "signing.previous_kids"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__PREVIOUS_KIDS", "[\"a\", \"\"]")], "signing.previous_kids"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__PREVIOUS_KIDS", "[\"ts-signing-1\"]")], "signing.previous_kids"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__PREVIOUS_KIDS", "[\"a\", \"b\", \"a\"]")], "signing.previous_kids"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__PREVIOUS_KIDS", "[1]")], "signing.previous_kids"),
            (MINIMAL, &[("TRUSTED_SERVER__SIGNING__KEY", "x")], "signing.key"),
            ("[signing]\nprevious_kids = 3\n[publisher]\ndomain='a.b'\norigin_url='http://a.b'", &[], "signing.previous_kids"),
            ("[signing]\nprevious_kids = ['ok', 'not ok']\n[publisher]\ndomain='a.b'\norigin_url='http://a.b'", &[], "signing.previous_kids"),
            (MINIMAL, &[("TRUSTED_SERVER__ADMIN__ENABLED", "yes")], "admin.enabled"),
            (MINIMAL, &[("TRUSTED_SERVER__ADMIN__SECRET_STORE", "ts/admin")], "admin.secret_store"),
            (MINIMAL, &[("TRUSTED_SERVER__ADMIN__USER_KEY", "")], "admin.user_key"),
            (MINIMAL, &[("TRUSTED_SERVER__ADMIN__PASSWORD_KEY", "pass word")], "admin.password_key"),
            (MINIMAL, &[("TRUSTED_SERVER__ADMIN__PASSWORD_KEY", "admin_user")], "admin.password_key"),
            (MINIMAL, &[("TRUSTED_SERVER__ADMIN__PASSWORD", "hunter2")], "admin.password"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS", "a.example")], "first_party.allowed_domains"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS", "[\"a.example\"]\nx = 1")], "first_party.allowed_domains"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS", "[\"127.0.0.1\"]")], "first_party.allowed_domains"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS", "[\"com\"]")], "first_party.allowed_domains"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS", "[\"a b.example\"]")], "first_party.allowed_domains"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS", "[1]")], "first_party.allowed_domains"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS", "{}")], "first_party.allowed_domains"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_PORTS", "[0]")], "first_party.allowed_ports"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_PORTS", "[65536]")], "first_party.allowed_ports"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_PORTS", "[\"8080\"]")], "first_party.allowed_ports"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__RESOLVE", "{ \"a.example\" = \"127.0.0.1:1\" }")], "first_party.resolve"),
            (FP, &[("TRUSTED_SERVER__FIRST_PARTY__RESOLVE", "{ \"ads.demo-partner.example\" = \"10.0.0.1:80\" }")], "first_party.resolve"),
            (FP, &[("TRUSTED_SERVER__FIRST_PARTY__RESOLVE", "{ \"ads.demo-partner.example\" = \"127.0.0.1\" }")], "first_party.resolve"),
            (FP, &[("TRUSTED_SERVER__FIRST_PARTY__RESOLVE", "{ \"ads.demo-partner.example\" = \"127.0.0.1:0\" }")], "first_party.resolve"),
            (FP, &[("TRUSTED_SERVER__FIRST_PARTY__RESOLVE", "{ \"ads.demo-partner.example\" = \"localhost:80\" }")], "first_party.resolve"),
            (FP, &[("TRUSTED_SERVER__FIRST_PARTY__RESOLVE", "{ \"ads.demo-partner.example\" = 8080 }")], "first_party.resolve"),
            (FP, &[("TRUSTED_SERVER__FIRST_PARTY__RESOLVE", "[]")], "first_party.resolve"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__SECRET_STORE", "a/b")], "first_party.secret_store"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__TOKEN_KEY", "")], "first_party.token_key"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__SIGN_TTL_SECS", "0")], "first_party.sign_ttl_secs"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__SIGN_TTL_SECS", "86401")], "first_party.sign_ttl_secs"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__PAGE_TTL_SECS", "604801")], "first_party.page_ttl_secs"),
            (MINIMAL, &[("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_HOSTS", "[]")], "first_party.allowed_hosts"),
            (&format!("{MINIMAL}\n[first_party]\nallowed_domains = \"x\"\n"), &[], "first_party.allowed_domains"),
            (&format!("{MINIMAL}\n[first_party]\nallowed_domains = [[\"x.example\"]]\n"), &[], "first_party.allowed_domains"),
            (&format!("{MINIMAL}\n[first_party]\nallowed_domains = true\n"), &[], "first_party.allowed_domains"),
        ];
        for (text, env, key) in cases {
            assert_eq!(&error_key(text, env), key, "for {text:?} with {env:?}");
        }
    }

    #[test]
    fn every_listed_key_is_read() {
        // A watched variable that no type reads would be rejected as unknown; an unparsable
        // value must be reported against the key itself, from that variable.
        let vars: Vec<String> = override_variables().collect();
        assert_eq!(vars.len(), 58, "{vars:?}");
        for var in vars {
            let result = load(MINIMAL, [(var.as_str(), "\u{1}not valid for any key\u{1}")]);
            let key = var
                .trim_start_matches("TRUSTED_SERVER__")
                .replace("__", ".")
                .to_ascii_lowercase();
            match result {
                Err(e) => {
                    assert_eq!(e.key, key, "{e}");
                    assert!(!e.problem.starts_with("unknown"), "{e}");
                    assert_eq!(e.origin, Some(Origin::Variable(var.clone())), "{e}");
                }
                Ok(_) => panic!("{var} accepted an invalid value"),
            }
        }
    }

    #[test]
    fn identity_settings_from_file_and_environment() {
        let d = load(MINIMAL, no_env()).unwrap().identity;
        assert_eq!(d, Settings::DEFAULT.identity);
        let text = format!(
            "{MINIMAL}\n[identity]\nenabled = false\nsecret_store = \"pub.store-1\"\nsecret_key = \"k_2\"\n"
        );
        let s = load(&text, no_env()).unwrap();
        assert!(!s.identity.enabled);
        assert_eq!(s.identity.secret_store, "pub.store-1");
        assert_eq!(s.identity.secret_key, "k_2");
        let expr = s.to_rust_expr();
        assert!(
            expr.contains("secret_store : alloc :: borrow :: Cow :: Borrowed (\"pub.store-1\")")
        );
        let s = load(&text, [("TRUSTED_SERVER__IDENTITY__SECRET_KEY", "other")]).unwrap();
        assert_eq!(s.identity.secret_key, "other");
        let long = "k".repeat(256);
        let e = load(
            &text,
            [("TRUSTED_SERVER__IDENTITY__SECRET_KEY", long.as_str())],
        );
        assert_eq!(e.unwrap_err().key, "identity.secret_key");
    }

    #[test]
    fn signing_settings_from_file_and_environment() {
        let d = load(MINIMAL, no_env()).unwrap().signing;
        assert_eq!(d, Settings::DEFAULT.signing);
        assert!(d.enabled && d.previous_kids.is_empty());
        let text = format!(
            "{MINIMAL}\n[signing]\nenabled = false\nsecret_store = \"keys.1\"\n\
             current_kid = \"k-2026\"\nprevious_kids = [\"k-2025\", \"k_2024\"]\n"
        );
        let s = load(&text, no_env()).unwrap();
        assert!(!s.signing.enabled);
        assert_eq!(s.signing.secret_store, "keys.1");
        assert_eq!(s.signing.current_kid, "k-2026");
        assert_eq!(s.signing.previous_kids.as_ref(), ["k-2025", "k_2024"]);
        let expr = s.to_rust_expr();
        assert!(
            expr.contains(
                "previous_kids : alloc :: borrow :: Cow :: Borrowed (& [alloc :: borrow :: Cow :: Borrowed (\"k-2025\") , alloc :: borrow :: Cow :: Borrowed (\"k_2024\")])"
            ),
            "{expr}"
        );
        // From the environment: TOML syntax in a string, as for every list.
        let var = "TRUSTED_SERVER__SIGNING__PREVIOUS_KIDS";
        let s = load(&text, [(var, "[ \"a\", \"b.c\" ]")]).unwrap();
        assert_eq!(s.signing.previous_kids.as_ref(), ["a", "b.c"]);
        let s = load(&text, [(var, "[]")]).unwrap();
        assert!(s.signing.previous_kids.is_empty());
        // The file's mistake names the key and its line.
        let bad = format!("{MINIMAL}\n[signing]\nprevious_kids = [\"k-2026\", \"k-2026\"]\n");
        let e = load(&bad, no_env()).unwrap_err();
        assert_eq!(e.key, "signing.previous_kids");
        assert_eq!(e.origin, Some(Origin::Line(7)));
    }

    #[test]
    fn admin_settings_from_file_and_environment() {
        let d = load(MINIMAL, no_env()).unwrap().admin;
        assert_eq!(d, Settings::DEFAULT.admin);
        let text = format!(
            "{MINIMAL}\n[admin]\nenabled = false\nsecret_store = \"ops.store\"\n\
             user_key = \"u-1\"\npassword_key = \"p_1\"\n"
        );
        let s = load(&text, no_env()).unwrap();
        assert!(!s.admin.enabled);
        assert_eq!(
            (
                &*s.admin.secret_store,
                &*s.admin.user_key,
                &*s.admin.password_key
            ),
            ("ops.store", "u-1", "p_1")
        );
        let expr = s.to_rust_expr();
        assert!(
            expr.contains("password_key : alloc :: borrow :: Cow :: Borrowed (\"p_1\")"),
            "{expr}"
        );
        assert!(
            expr.contains("admin : trusted_server_settings :: Admin {"),
            "{expr}"
        );
        let s = load(&text, [("TRUSTED_SERVER__ADMIN__ENABLED", "true")]).unwrap();
        assert!(s.admin.enabled);
        // A mistake in the file names the key and its line.
        let bad = text.replace("\"p_1\"", "\"u-1\"");
        let e = load(&bad, no_env()).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.origin),
            ("admin.password_key", Some(Origin::Line(10)))
        );
    }

    #[test]
    fn first_party_settings_from_file_and_environment() {
        let d = load(MINIMAL, no_env()).unwrap().first_party;
        assert_eq!(d, Settings::DEFAULT.first_party);
        assert!(d.allowed_domains.is_empty(), "an empty list is the default");
        let text = format!(
            "{MINIMAL}\n[first_party]\nallowed_domains = [\"Demo-Partner.Example.\", \"cdn.other.example\", \"demo-partner.example\"]\n\
             allowed_ports = [8443, 8443, 80]\nsign_ttl_secs = 60\npage_ttl_secs = 7200\n\
             secret_store = \"fp.store\"\ntoken_key = \"k-1\"\n\
             [first_party.resolve]\n\"x.demo-partner.example\" = \"127.0.0.1:9001\"\n\
             \"CDN.other.example\" = \"[::1]:9002\"\n"
        );
        let s = load(&text, no_env()).unwrap();
        let fp = &s.first_party;
        // Lowercase, no trailing dot, each once, in the order written.
        assert_eq!(
            fp.allowed_domains[..],
            ["demo-partner.example", "cdn.other.example"]
        );
        assert_eq!(fp.allowed_ports[..], [8443, 80]);
        assert_eq!(
            fp.resolve[..],
            [
                Resolve {
                    host: "cdn.other.example".into(),
                    address: "[::1]:9002".into()
                },
                Resolve {
                    host: "x.demo-partner.example".into(),
                    address: "127.0.0.1:9001".into()
                },
            ]
        );
        assert_eq!((fp.sign_ttl_secs, fp.page_ttl_secs), (60, 7200));
        assert_eq!((&*fp.secret_store, &*fp.token_key), ("fp.store", "k-1"));
        let expr = s.to_rust_expr();
        for part in [
            "allowed_domains : alloc :: borrow :: Cow :: Borrowed (& [alloc :: borrow :: Cow :: Borrowed (\"demo-partner.example\") , ",
            "allowed_ports : alloc :: borrow :: Cow :: Borrowed (& [8443u16 , 80u16])",
            "trusted_server_settings :: Resolve { host : alloc :: borrow :: Cow :: Borrowed (\"cdn.other.example\") , address : alloc :: borrow :: Cow :: Borrowed (\"[::1]:9002\") , }",
            "sign_ttl_secs : 60u32 ,",
            "token_key : alloc :: borrow :: Cow :: Borrowed (\"k-1\")",
        ] {
            assert!(expr.contains(part), "{part} not in {expr}");
        }
        // From the environment: TOML syntax in a string.
        let env = [
            (
                "TRUSTED_SERVER__FIRST_PARTY__ALLOWED_DOMAINS",
                "[\"b.example\"]",
            ),
            ("TRUSTED_SERVER__FIRST_PARTY__ALLOWED_PORTS", "[ 9000 ]"),
            (
                "TRUSTED_SERVER__FIRST_PARTY__RESOLVE",
                "{ \"a.b.example\" = \"127.0.0.2:80\" }",
            ),
        ];
        let s = load(MINIMAL, env).unwrap().first_party;
        assert_eq!(s.allowed_domains[..], ["b.example"]);
        assert_eq!(s.allowed_ports[..], [9000]);
        assert_eq!(&*s.resolve[0].address, "127.0.0.2:80");
        // A resolve entry must name an allowed host: the file's line is given.
        let e = load(&text.replace("x.demo-partner", "x.unlisted"), no_env()).unwrap_err();
        assert_eq!(e.key, "first_party.resolve");
        assert!(e.problem.contains("\"x.unlisted.example\""), "{e}");
        assert!(matches!(e.origin, Some(Origin::Line(_))), "{e}");
    }

    #[test]
    fn consent_settings_from_file_and_environment() {
        use crate::{ConsentRule, PartnerVendor};
        let c = load(MINIMAL, no_env()).unwrap().consent;
        assert_eq!(c, Settings::DEFAULT.consent);
        assert_eq!(c.opt_in_countries.len(), 44);
        for territory in ["AX", "GF", "GP", "MQ", "RE", "YT", "MF"] {
            assert!(
                c.opt_in_countries.iter().any(|k| k == territory),
                "{territory}"
            );
        }
        assert!(c.opt_in_countries.iter().any(|k| k == "DE"));
        assert!(c.opt_out_regions.iter().any(|k| k == "US-CA"));
        assert_eq!(
            (c.unknown, &*c.purposes, c.publisher_segment),
            (ConsentRule::OptIn, &[1u8][..], false)
        );
        assert!(c.gpc_refuses_opt_in);
        let text = format!(
            "{MINIMAL}\n[consent]\nopt_in_countries = [\"DE\", \"FR\", \"DE\"]\nopt_out_regions = [\"US-CA\"]\n\
             unknown = \"none\"\npurposes = [3, 1, 3]\npublisher_segment = true\ngpc_refuses_opt_in = false\n\
             partner_vendors = {{ \"Ads.Demo-Partner.example.\" = 755, \"b.example\" = 1 }}\n"
        );
        let s = load(&text, no_env()).unwrap();
        let c = &s.consent;
        assert_eq!(&*c.opt_in_countries, &["DE", "FR"]);
        assert_eq!(&*c.opt_out_regions, &["US-CA"]);
        assert_eq!(c.unknown, ConsentRule::None);
        assert_eq!(&*c.purposes, &[1, 3]);
        assert!(c.publisher_segment);
        assert!(!c.gpc_refuses_opt_in);
        assert_eq!(
            &*c.partner_vendors,
            &[
                PartnerVendor {
                    domain: "ads.demo-partner.example".into(),
                    vendor_id: 755
                },
                PartnerVendor {
                    domain: "b.example".into(),
                    vendor_id: 1
                },
            ]
        );
        assert_eq!(c.vendor_for("ads.demo-partner.example"), Some(755));
        assert_eq!(c.vendor_for("x.ads.demo-partner.example"), Some(755));
        assert_eq!(c.vendor_for("demo-partner.example"), None);
        assert_eq!(c.vendor_for("xb.example"), None);
        assert!(s.to_rust_expr().contains("755u16"), "{}", s.to_rust_expr());
        let env = [
            ("TRUSTED_SERVER__CONSENT__OPT_IN_COUNTRIES", "[]"),
            ("TRUSTED_SERVER__CONSENT__UNKNOWN", "opt-out"),
            (
                "TRUSTED_SERVER__CONSENT__PARTNER_VENDORS",
                "{ \"c.example\" = 65535 }",
            ),
        ];
        let c = load(&text, env).unwrap().consent;
        assert!(c.opt_in_countries.is_empty());
        assert_eq!(c.unknown, ConsentRule::OptOut);
        assert_eq!(c.vendor_for("c.example"), Some(65535));
        for bad in [
            "opt_in_countries = [\"de\"]",
            "opt_in_countries = [\"DEU\"]",
            "opt_in_countries = [\"DE\", \"EU\"]",
            "opt_in_countries = [\"UK\"]",
            "opt_in_countries = [\"XX\"]",
            "opt_in_countries = [1]",
            "opt_in_countries = \"DE\"",
            "opt_out_regions = [\"CA\"]",
            "opt_out_regions = [\"US-ca\"]",
            "opt_out_regions = [\"DE-BY\"]",
            "unknown = \"strict\"",
            "purposes = []",
            "purposes = [0]",
            "purposes = [25]",
            "purposes = [\"1\"]",
            "publisher_segment = \"yes\"",
            "partner_vendors = { \"ads.example\" = 0 }",
            "partner_vendors = { \"ads.example\" = 65536 }",
            "partner_vendors = { \"ads.example\" = \"755\" }",
            "partner_vendors = { \"localhost\" = 1 }",
            "partner_vendors = { \"10.0.0.1\" = 1 }",
            "partner_vendors = { \"a.example\" = 1, \"A.example\" = 2 }",
            "partner_vendors = [1]",
        ] {
            let text = format!("{MINIMAL}\n[consent]\n{bad}\n");
            let e = load(&text, no_env()).unwrap_err();
            let key = format!("consent.{}", bad.split(' ').next().unwrap());
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (key.as_str(), &Some(Origin::Line(7))),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn cookie_domain_may_be_a_parent_of_domain() {
        let env = [("TRUSTED_SERVER__PUBLISHER__COOKIE_DOMAIN", ".example.com")];
        let s = load(MINIMAL, env).unwrap();
        assert_eq!(s.publisher.cookie_domain, ".example.com");
    }

    #[test]
    fn rust_expr_round_trips_the_values() {
        let env = [(
            "TRUSTED_SERVER__RESPONSE_HEADERS__X_QUOTE",
            "say \"hi\" \\ ü",
        )];
        let s = load(MINIMAL, env).unwrap();
        let expr = s.to_rust_expr();
        // Strings are emitted with Rust's own escaping, so quotes and backslashes survive.
        assert!(
            expr.contains(r#"Cow :: Borrowed ("say \"hi\" \\ ü")"#),
            "{expr}"
        );
        assert!(expr.contains("origin_scheme : trusted_server_settings :: Scheme :: Https"));
        assert!(expr.contains("connect_timeout_ms : 5000u32"));
    }

    /// Found by the `settings` fuzz target: an empty quoted name gave an error naming no key
    /// (``invalid setting ``: unknown section``).
    #[test]
    fn an_empty_or_blank_section_name_is_named_quoted() {
        for (toml, named) in [("\"\" = 1", "\"\""), ("\" \" = 1", "\" \"")] {
            let e = load(&format!("{toml}\n{MINIMAL}"), no_env()).unwrap_err();
            assert_eq!(e.key, named);
            assert_eq!(
                e.to_string(),
                format!("invalid setting `{named}` at line 1: unknown section")
            );
        }
    }

    #[test]
    fn a_file_mistake_names_its_line() {
        let text =
            "[publisher]\ndomain = 'www.example.com'\norigin_url = 'https://o.example.com'\n\
                    cookie_domain = '.other.com'\n\n[integrations.nextjs]\nenabled = 'maybe'\n";
        let cases: &[(&str, &str, usize)] = &[
            // A type error, from serde.
            (text, "integrations.nextjs.enabled", 7),
            // A validation error, after serde.
            (
                &text.replace("'maybe'", "true"),
                "publisher.cookie_domain",
                4,
            ),
            // An unknown key.
            (
                &text
                    .replace("cookie_domain", "cookie_domian")
                    .replace("'maybe'", "true"),
                "publisher.cookie_domian",
                4,
            ),
            // A syntax error.
            (&text.replace("'maybe'", "maybe"), "trusted-server.toml", 7),
            // One that toml gives no message for (found by the `settings` fuzz target).
            (
                &text.replace("\n\n", "\n# \u{7}\n"),
                "trusted-server.toml",
                5,
            ),
        ];
        for (text, key, line) in cases {
            let e = load(text, no_env()).unwrap_err();
            assert!(!e.problem.is_empty(), "{e:?}");
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (*key, &Some(Origin::Line(*line)))
            );
            assert!(
                e.to_string()
                    .starts_with(&format!("invalid setting `{key}` at line {line}: ")),
                "{e}"
            );
        }
    }

    #[test]
    fn an_environment_mistake_names_its_variable() {
        let text = format!("{MINIMAL}\nstreaming = 'yes'\n");
        let var = "TRUSTED_SERVER__PUBLISHER__CONNECT_TIMEOUT_MS";
        let e = load(&text, [(var, "lots")]).unwrap_err();
        // The file's own mistake (line 6) comes later in key order than connect_timeout_ms.
        assert_eq!(e.key, "publisher.connect_timeout_ms");
        assert_eq!(e.origin, Some(Origin::Variable(var.to_owned())));
        assert_eq!(
            e.to_string(),
            format!("invalid setting `publisher.connect_timeout_ms` from {var}: expected an integer, got \"lots\"")
        );
        // A value from the environment replaces the file's, and so does its origin.
        let e = load(&text, [("TRUSTED_SERVER__PUBLISHER__STREAMING", "no")]).unwrap_err();
        let var = "TRUSTED_SERVER__PUBLISHER__STREAMING".to_owned();
        assert_eq!(e.origin, Some(Origin::Variable(var)));
        let e = load(&text, no_env()).unwrap_err();
        assert_eq!(e.origin, Some(Origin::Line(6)));
    }

    /// The settings table (docs/settings.md) documents exactly the keys the types accept.
    #[test]
    fn every_key_of_the_types_is_documented_and_watched() {
        let doc = include_str!("../../../docs/settings.md");
        let settings = &doc[doc.find("# Settings").expect("a Settings section")..];
        let documented: Vec<&str> = settings
            .lines()
            .take_while(|l| !l.starts_with("## ") || l.starts_with("## Settings"))
            .filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|(k, _)| k))
            .filter(|k| !k.starts_with('['))
            .collect();
        assert_eq!(keys(), documented);
        for key in keys() {
            let var = format!("TRUSTED_SERVER__{}", key.replace('.', "__").to_uppercase());
            assert!(
                override_variables().any(|v| v == var),
                "{var} is not watched"
            );
        }
    }

    /// The settings table (docs/settings.md) repeats each default; the defaults live in
    /// `Settings::DEFAULT`. Setting a key to the value its row documents must change nothing.
    #[test]
    fn every_documented_default_is_the_default() {
        let doc = include_str!("../../../docs/settings.md");
        let settings = &doc[doc.find("# Settings").expect("a Settings section")..];
        let rows = settings
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("## "))
            .filter_map(|l| {
                let mut cells = l.strip_prefix("| `")?.split(" | ");
                let key = cells.next()?.strip_suffix('`')?;
                let default = cells.next()?.strip_prefix('`')?.split_once('`')?.0;
                Some((key, default))
            })
            .filter(|(k, _)| !k.starts_with('['));
        let defaults = load(MINIMAL, no_env()).unwrap();
        let mut checked = 0;
        for (key, default) in rows {
            let var = format!("TRUSTED_SERVER__{}", key.replace('.', "__").to_uppercase());
            let value = default.trim_matches('"');
            let set = load(MINIMAL, [(var.as_str(), value)]).unwrap();
            assert_eq!(set, defaults, "{key}: docs/settings.md says {default}");
            checked += 1;
        }
        assert_eq!(checked, 51, "rows with a literal default");
    }

    const DEMO: &str = include_str!("../../../trusted-server.toml");

    /// The rule behind the README's "set TRUSTED_SERVER__PUBLISHER__ORIGIN_URL to proxy your
    /// own origin": the file's origin_host goes with the file's origin_url.
    #[test]
    fn an_origin_url_override_brings_its_own_host() {
        let url = (
            "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL",
            "http://127.0.0.1:18181",
        );
        let host = (
            "TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST",
            "origin.example.com",
        );
        let effective = |env: &[(&str, &str)]| {
            let (s, notes) = load_with_notes(DEMO, env.iter().copied()).unwrap();
            let p = s.publisher;
            (
                p.origin_address.into_owned(),
                p.origin_host.into_owned(),
                notes,
            )
        };

        // The file alone: the demo's pinned host.
        let (address, origin_host, notes) = effective(&[]);
        assert_eq!(address, "127.0.0.1:8080");
        assert_eq!(origin_host, "origin.demo-publisher.example");
        assert!(notes.is_empty());

        // Only the URL overridden: the host is the new URL's, and the build says why.
        let (address, origin_host, notes) = effective(&[url]);
        assert_eq!(address, "127.0.0.1:18181");
        assert_eq!(origin_host, "127.0.0.1:18181");
        assert_eq!(notes.len(), 1);
        for named in [
            "publisher.origin_host",
            "\"origin.demo-publisher.example\"",
            "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL",
            "TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST",
        ] {
            assert!(notes[0].contains(named), "{named} not in {}", notes[0]);
        }

        // Both overridden: both are used.
        let (address, origin_host, notes) = effective(&[url, host]);
        assert_eq!(
            (address.as_str(), origin_host.as_str()),
            ("127.0.0.1:18181", "origin.example.com")
        );
        assert!(notes.is_empty());

        // Only the host overridden: the file's URL with the new host.
        let (address, origin_host, _) = effective(&[host]);
        assert_eq!(
            (address.as_str(), origin_host.as_str()),
            ("127.0.0.1:8080", "origin.example.com")
        );

        // A file without origin_host: nothing to drop, no note.
        let (s, notes) = load_with_notes(MINIMAL, [url]).unwrap();
        assert_eq!(s.publisher.origin_host, "127.0.0.1:18181");
        assert!(notes.is_empty());
    }
}
