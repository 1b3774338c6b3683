//! Build-time loading: TOML text + environment overrides → validated [`Settings`].
//!
//! Values are read by hand from a `toml::Table` rather than through serde so that every error
//! names its key exactly as the publisher wrote it (`publisher.flush_threshold`), including
//! unknown keys, which are almost always typos.

use std::borrow::Cow;
use std::fmt;

use toml::{Table, Value};

use crate::{HeaderSetting, Scheme, Settings};

/// Prefix of environment overrides: `TRUSTED_SERVER__PUBLISHER__ORIGIN_URL=...`.
pub const ENV_PREFIX: &str = "TRUSTED_SERVER__";

/// A settings mistake. The message names the offending key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// Dotted key (`publisher.origin_url`), or `trusted-server.toml` for syntax errors.
    pub key: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid setting `{}`: {}", self.key, self.problem)
    }
}

impl std::error::Error for LoadError {}

fn err(key: &str, problem: impl Into<String>) -> LoadError {
    LoadError {
        key: key.to_owned(),
        problem: problem.into(),
    }
}

/// Parses `toml_text`, applies the `TRUSTED_SERVER__SECTION__KEY` variables found in `env`
/// (other variables are ignored) and validates the result.
///
/// Environment values are strings; they are converted to the key's type during validation, so
/// `TRUSTED_SERVER__PUBLISHER__STREAMING=false` works. Under `[response_headers]` an
/// environment key's underscores become dashes (`..__RESPONSE_HEADERS__X_ENV=1` sets `x-env`).
///
/// # Errors
/// A [`LoadError`] naming the first bad key.
pub fn load<I, K, V>(toml_text: &str, env: I) -> Result<Settings, LoadError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut table: Table = toml_text
        .parse()
        .map_err(|e: toml::de::Error| err("trusted-server.toml", e.to_string()))?;
    let mut overrides: Vec<(String, String)> = env
        .into_iter()
        .filter_map(|(k, v)| {
            let rest = k.as_ref().strip_prefix(ENV_PREFIX)?;
            Some((rest.to_owned(), v.as_ref().to_owned()))
        })
        .collect();
    // Deterministic: the process environment has no order.
    overrides.sort();
    for (path, value) in overrides {
        apply_override(&mut table, &path, value)?;
    }
    from_table(table)
}

fn apply_override(table: &mut Table, path: &str, value: String) -> Result<(), LoadError> {
    let parts: Vec<String> = path.split("__").map(str::to_ascii_lowercase).collect();
    let env_name = format!("{ENV_PREFIX}{path}");
    if let [integrations, name, key] = parts.as_slice() {
        if integrations == "integrations" {
            let section = table
                .entry("integrations")
                .or_insert_with(|| Value::Table(Table::new()));
            let Value::Table(section) = section else {
                return Err(err("integrations", "expected a table"));
            };
            let entry = section
                .entry(name.clone())
                .or_insert_with(|| Value::Table(Table::new()));
            let Value::Table(entry) = entry else {
                return Err(err(&format!("integrations.{name}"), "expected a table"));
            };
            entry.insert(key.clone(), Value::String(value));
            return Ok(());
        }
    }
    let [section, key] = parts.as_slice() else {
        return Err(err(
            &env_name,
            "environment overrides take the form TRUSTED_SERVER__SECTION__KEY",
        ));
    };
    let key = if section == "response_headers" {
        key.replace('_', "-")
    } else {
        key.clone()
    };
    let entry = table
        .entry(section.clone())
        .or_insert_with(|| Value::Table(Table::new()));
    let Value::Table(section_table) = entry else {
        return Err(err(section, "expected a table"));
    };
    section_table.insert(key, Value::String(value));
    Ok(())
}

fn from_table(mut table: Table) -> Result<Settings, LoadError> {
    let mut settings = Settings::DEFAULT;
    if let Some(publisher) = table.remove("publisher") {
        let Value::Table(publisher) = publisher else {
            return Err(err("publisher", "expected a table"));
        };
        read_publisher(&mut settings, publisher)?;
    }
    if let Some(integrations) = table.remove("integrations") {
        let Value::Table(integrations) = integrations else {
            return Err(err("integrations", "expected a table"));
        };
        read_integrations(&mut settings, integrations)?;
    }
    if let Some(headers) = table.remove("response_headers") {
        let Value::Table(headers) = headers else {
            return Err(err("response_headers", "expected a table"));
        };
        settings.response_headers = Cow::Owned(read_headers(headers)?);
    }
    if let Some(unknown) = table.keys().next() {
        // A quoted empty or blank name (`"" = 1`) is shown quoted, so the message still
        // names it.
        let name = if unknown.trim().is_empty() {
            format!("{unknown:?}")
        } else {
            unknown.clone()
        };
        return Err(err(&name, "unknown section"));
    }
    validate(&mut settings)?;
    Ok(settings)
}

/// Every `[publisher]` key. The one list of what is accepted: anything else is an unknown
/// key, and `build.rs` watches the environment override of each.
pub const PUBLISHER_KEYS: [&str; 10] = [
    "domain",
    "origin_url",
    "origin_host",
    "cookie_domain",
    "streaming",
    "flush_threshold",
    "flush_every_chunk",
    "connect_timeout_ms",
    "first_byte_timeout_ms",
    "between_bytes_timeout_ms",
];

/// Every `[integrations.nextjs]` key.
pub const NEXTJS_KEYS: [&str; 2] = ["enabled", "max_held_bytes"];

/// The environment variables that override the `[publisher]` and `[integrations.nextjs]` keys
/// (`TRUSTED_SERVER__PUBLISHER__ORIGIN_URL`, ...), for build scripts to watch even while unset.
pub fn publisher_override_variables() -> impl Iterator<Item = String> {
    let publisher = PUBLISHER_KEYS
        .iter()
        .map(|k| format!("{ENV_PREFIX}PUBLISHER__{}", k.to_ascii_uppercase()));
    let nextjs = NEXTJS_KEYS.iter().map(|k| {
        format!(
            "{ENV_PREFIX}INTEGRATIONS__NEXTJS__{}",
            k.to_ascii_uppercase()
        )
    });
    publisher.chain(nextjs)
}

fn read_integrations(settings: &mut Settings, table: Table) -> Result<(), LoadError> {
    for (name, value) in table {
        if name != "nextjs" {
            return Err(err(&format!("integrations.{name}"), "unknown integration"));
        }
        let Value::Table(nextjs) = value else {
            return Err(err("integrations.nextjs", "expected a table"));
        };
        let n = &mut settings.integrations.nextjs;
        for (key, value) in nextjs {
            let name = format!("integrations.nextjs.{key}");
            let name = name.as_str();
            match key.as_str() {
                "enabled" => n.enabled = boolean(name, value)?,
                // At least one kilobyte (a row header and some text), at most 1 GiB.
                "max_held_bytes" => n.max_held_bytes = integer(name, value, 1024, 1 << 30)?,
                _ => return Err(err(name, "unknown key")),
            }
        }
    }
    Ok(())
}

fn read_publisher(settings: &mut Settings, table: Table) -> Result<(), LoadError> {
    let p = &mut settings.publisher;
    for (key, value) in table {
        let name = format!("publisher.{key}");
        let name = name.as_str();
        if !PUBLISHER_KEYS.contains(&key.as_str()) {
            return Err(err(name, "unknown key"));
        }
        match key.as_str() {
            "domain" => p.domain = Cow::Owned(string(name, value)?),
            "origin_url" => p.origin_url = Cow::Owned(string(name, value)?),
            "origin_host" => p.origin_host = Cow::Owned(string(name, value)?),
            "cookie_domain" => p.cookie_domain = Cow::Owned(string(name, value)?),
            "streaming" => p.streaming = boolean(name, value)?,
            "flush_threshold" => p.flush_threshold = integer(name, value, 0, 16 << 20)?,
            "flush_every_chunk" => p.flush_every_chunk = boolean(name, value)?,
            "connect_timeout_ms" => p.connect_timeout_ms = integer(name, value, 1, 600_000)?,
            "first_byte_timeout_ms" => {
                p.first_byte_timeout_ms = integer(name, value, 1, 600_000)?;
            }
            "between_bytes_timeout_ms" => {
                p.between_bytes_timeout_ms = integer(name, value, 1, 600_000)?;
            }
            _ => return Err(err(name, "unknown key")),
        }
    }
    Ok(())
}

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

fn read_headers(table: Table) -> Result<Vec<HeaderSetting>, LoadError> {
    let mut headers = Vec::with_capacity(table.len());
    for (name, value) in table {
        let key = format!("response_headers.{name}");
        let value = string(&key, value)?;
        let token_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token_ok {
            return Err(err(&key, "not a valid HTTP header name"));
        }
        if MANAGED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(err(
                &key,
                "framing and hop-by-hop headers are managed by the proxy and cannot be set here",
            ));
        }
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(err(
                &key,
                "header values may not contain control characters",
            ));
        }
        headers.push(HeaderSetting {
            name: Cow::Owned(name.to_ascii_lowercase()),
            value: Cow::Owned(value),
        });
    }
    Ok(headers)
}

fn string(key: &str, value: Value) -> Result<String, LoadError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(err(
            key,
            format!("expected a string, got {}", other.type_str()),
        )),
    }
}

fn boolean(key: &str, value: Value) -> Result<bool, LoadError> {
    match value {
        Value::Boolean(b) => Ok(b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(err(
            key,
            format!("expected true or false, got a {}", other.type_str()),
        )),
    }
}

fn integer(key: &str, value: Value, min: u32, max: u32) -> Result<u32, LoadError> {
    let n: i64 = match &value {
        Value::Integer(n) => *n,
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| err(key, format!("expected an integer, got {s:?}")))?,
        other => {
            return Err(err(
                key,
                format!("expected an integer, got a {}", other.type_str()),
            ))
        }
    };
    if n < i64::from(min) || n > i64::from(max) {
        return Err(err(key, format!("{n} is outside {min}..={max}")));
    }
    // In range of u32 by the check above.
    Ok(u32::try_from(n).unwrap_or(max))
}

fn validate(settings: &mut Settings) -> Result<(), LoadError> {
    let p = &mut settings.publisher;
    if p.domain.is_empty() {
        return Err(err("publisher.domain", "is required"));
    }
    if !is_host(&p.domain) {
        return Err(err(
            "publisher.domain",
            "expected a host name like www.example.com",
        ));
    }
    if p.origin_url.is_empty() {
        return Err(err("publisher.origin_url", "is required"));
    }
    let (scheme, rest) = if let Some(rest) = p.origin_url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else if let Some(rest) = p.origin_url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else {
        return Err(err(
            "publisher.origin_url",
            "must start with http:// or https://",
        ));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains(['/', '?', '#', '@']) {
        return Err(err(
            "publisher.origin_url",
            "must be scheme://host[:port] with no path, query or credentials",
        ));
    }
    let (host, port) = split_authority(authority)
        .ok_or_else(|| err("publisher.origin_url", "expected a host and optional port"))?;
    let port = port.unwrap_or(scheme.default_port());
    p.origin_scheme = scheme;
    p.origin_tls_host = Cow::Owned(host.to_owned());
    p.origin_address = Cow::Owned(format!("{host}:{port}"));
    if p.origin_host.is_empty() {
        p.origin_host = Cow::Owned(authority.to_ascii_lowercase());
    } else if split_authority(&p.origin_host).is_none() {
        return Err(err(
            "publisher.origin_host",
            "expected host[:port] such as origin.example.com",
        ));
    }
    p.origin_host = Cow::Owned(p.origin_host.to_ascii_lowercase());
    if !p.cookie_domain.is_empty() {
        let bare = p.cookie_domain.trim_start_matches('.');
        // A single label ("com") is a public suffix: browsers reject such cookies.
        if !is_host(bare) || !bare.contains('.') {
            return Err(err(
                "publisher.cookie_domain",
                "expected a domain like .example.com",
            ));
        }
        let domain = p.domain.to_ascii_lowercase();
        let bare = bare.to_ascii_lowercase();
        if !(domain == bare || domain.ends_with(&format!(".{bare}"))) {
            return Err(err(
                "publisher.cookie_domain",
                format!("must be publisher.domain ({domain}) or a parent of it"),
            ));
        }
    }
    Ok(())
}

/// Splits `host[:port]`; `None` when the host is not a plausible name or the port is bad.
fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p.parse::<u16>().ok().filter(|p| *p != 0)?)),
        None => (authority, None),
    };
    is_host(host).then_some((host, port))
}

/// A DNS name or IPv4 address: labels of 1–63 letters, digits or inner hyphens.
fn is_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        [publisher]
        domain = "www.example.com"
        origin_url = "https://origin.example.com"
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
        assert_eq!(s.publisher.origin_tls_host, "origin.example.com");
        assert!(s.publisher.streaming);
        assert_eq!(s.publisher.flush_threshold, 8192);
        assert!(s.publisher.flush_every_chunk);
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
        assert!(s.to_rust_expr().contains("max_held_bytes: 2048"));
    }

    #[test]
    fn env_overrides_win_and_are_typed() {
        let env = [
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL",
                "http://127.0.0.1:8080",
            ),
            ("TRUSTED_SERVER__PUBLISHER__STREAMING", "false"),
            ("TRUSTED_SERVER__PUBLISHER__FLUSH_THRESHOLD", "4096"),
            ("TRUSTED_SERVER__RESPONSE_HEADERS__X_ENV_NAME", "staging"),
            ("UNRELATED", "ignored"),
        ];
        let s = load(MINIMAL, env).unwrap();
        assert_eq!(s.publisher.origin_address, "127.0.0.1:8080");
        assert_eq!(s.publisher.origin_host, "127.0.0.1:8080");
        assert_eq!(s.publisher.origin_scheme, Scheme::Http);
        assert!(!s.publisher.streaming);
        assert_eq!(s.publisher.flush_threshold, 4096);
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
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__FLUSH_THRESHOLD", "-1")], "publisher.flush_threshold"),
            (MINIMAL, &[("TRUSTED_SERVER__PUBLISHER__FLUSH_THRESHOLD", "lots")], "publisher.flush_threshold"),
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
        ];
        for (text, env, key) in cases {
            assert_eq!(&error_key(text, env), key, "for {text:?} with {env:?}");
        }
    }

    #[test]
    fn every_listed_key_is_read() {
        // A listed key without a reader (or the reverse) would be silently ignored or
        // rejected; an unparsable value must be reported against the key itself.
        for var in publisher_override_variables() {
            let result = load(MINIMAL, [(var.as_str(), "\u{1}not valid for any key\u{1}")]);
            let key = var
                .trim_start_matches("TRUSTED_SERVER__")
                .replace("__", ".")
                .to_ascii_lowercase();
            match result {
                Err(e) => {
                    assert_eq!(e.key, key, "{e}");
                    assert_ne!(e.problem, "unknown key", "{e}");
                }
                Ok(_) => panic!("{var} accepted an invalid value"),
            }
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
            expr.contains(r#"Cow::Borrowed("say \"hi\" \\ ü")"#),
            "{expr}"
        );
        assert!(expr.contains("origin_scheme: ::trusted_server_settings::Scheme::Https"));
        assert!(expr.contains("flush_threshold: 8192"));
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
                format!("invalid setting `{named}`: unknown section")
            );
        }
    }
}
