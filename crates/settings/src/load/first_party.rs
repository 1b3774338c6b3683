//! `[first_party]`: the SSRF policy of first-party URLs (which partner domains and ports they
//! may point at, and development-only loopback addresses for them) and their signing key.

use std::borrow::Cow;

use serde::Deserialize;
use toml::{Table, Value};

use super::publisher::is_host;
use super::secrets::store_name;
use super::values::{shown, Composite, Int};
use super::{Context, LoadError, Section};
use crate::{FirstParty, Resolve, Settings, Text};

/// `[first_party]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct FirstPartyFile {
    allowed_domains: Option<Composite>,
    allowed_ports: Option<Composite>,
    resolve: Option<Composite>,
    secret_store: Option<String>,
    token_key: Option<String>,
    /// At most a day: anyone may ask for these.
    sign_ttl_secs: Option<Int<1, 86_400>>,
    /// At most a week.
    page_ttl_secs: Option<Int<1, 604_800>>,
}

impl Section for FirstPartyFile {
    type Valid = FirstParty;

    fn validate(self, cx: &mut Context<'_>) -> Result<FirstParty, LoadError> {
        let d = Settings::DEFAULT.first_party;
        let domains = allowed_domains(cx, self.allowed_domains)?;
        let ports = allowed_ports(cx, self.allowed_ports)?;
        let resolve = resolve(cx, self.resolve, &domains)?;
        let (store, token) = (self.secret_store, self.token_key);
        Ok(FirstParty {
            allowed_domains: Cow::Owned(domains),
            allowed_ports: Cow::Owned(ports),
            resolve: Cow::Owned(resolve),
            secret_store: store_name(cx, "first_party.secret_store", store, &d.secret_store)?,
            token_key: store_name(cx, "first_party.token_key", token, &d.token_key)?,
            sign_ttl_secs: self.sign_ttl_secs.map_or(d.sign_ttl_secs, |i| i.0),
            page_ttl_secs: self.page_ttl_secs.map_or(d.page_ttl_secs, |i| i.0),
        })
    }
}

/// The items of an array at `key` (none when unset).
fn array(cx: &Context<'_>, key: &str, value: Option<Composite>) -> Result<Vec<Value>, LoadError> {
    match value.map(|c| c.0) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(cx.error(key, "expected an array")),
    }
}

/// `first_party.allowed_domains`: names of at least two labels (never an IP address),
/// lowercase, without a trailing dot, each once, in the order written.
fn allowed_domains(cx: &Context<'_>, value: Option<Composite>) -> Result<Vec<Text>, LoadError> {
    let key = "first_party.allowed_domains";
    let mut domains: Vec<Text> = Vec::new();
    for item in array(cx, key, value)? {
        let Value::String(domain) = item else {
            return Err(cx.error(key, "expected an array of domain names"));
        };
        let lower = domain.to_ascii_lowercase();
        let name = lower.strip_suffix('.').unwrap_or(&lower);
        let numeric = name
            .rsplit('.')
            .next()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
        if !is_host(name) || numeric {
            let problem =
                format!("{domain:?} is not a domain name (IP addresses are never allowed)");
            return Err(cx.error(key, &problem));
        }
        // A single label ("com") would allow a whole top-level domain.
        if !name.contains('.') {
            return Err(cx.error(
                key,
                &format!("{domain:?} is a single label; name a registered domain"),
            ));
        }
        if !domains.iter().any(|d| d == name) {
            domains.push(Cow::Owned(name.to_owned()));
        }
    }
    Ok(domains)
}

/// `first_party.allowed_ports`: ports 1 to 65535, each once, in the order written.
fn allowed_ports(cx: &Context<'_>, value: Option<Composite>) -> Result<Vec<u16>, LoadError> {
    let key = "first_party.allowed_ports";
    let mut ports = Vec::new();
    for item in array(cx, key, value)? {
        match item {
            Value::Integer(n) if (1..=65_535).contains(&n) => {
                let port = u16::try_from(n).unwrap_or_default();
                if !ports.contains(&port) {
                    ports.push(port);
                }
            }
            other => {
                let problem = format!("{} is not a port (1 to 65535)", shown(&other));
                return Err(cx.error(key, &problem));
            }
        }
    }
    Ok(ports)
}

/// `first_party.resolve`: `host = "127.0.0.1:PORT"` for hosts under `domains`, sorted by
/// host, each once.
fn resolve(
    cx: &Context<'_>,
    value: Option<Composite>,
    domains: &[Text],
) -> Result<Vec<Resolve>, LoadError> {
    let key = "first_party.resolve";
    let entries = match value.map(|c| c.0) {
        None => Table::new(),
        Some(Value::Table(t)) => t,
        Some(_) => return Err(cx.error(key, "expected a table of host = \"127.0.0.1:PORT\"")),
    };
    let allowed = |host: &str| {
        domains
            .iter()
            .any(|d| host == d || host.ends_with(&format!(".{d}")))
    };
    let mut resolve = Vec::new();
    for (host, address) in entries {
        let lower = host.to_ascii_lowercase();
        if !is_host(&lower) || !allowed(&lower) {
            let problem = format!("{host:?} is not in first_party.allowed_domains");
            return Err(cx.error(key, &problem));
        }
        let loopback = match &address {
            Value::String(a) => a
                .parse::<std::net::SocketAddr>()
                .ok()
                .filter(|a| a.ip().is_loopback() && a.port() != 0),
            _ => None,
        };
        let Some(address) = loopback else {
            let problem = format!(
                "{host:?} = {}: expected \"127.0.0.1:PORT\" (a loopback address and a port; development only)",
                shown(&address)
            );
            return Err(cx.error(key, &problem));
        };
        resolve.push(Resolve {
            host: Cow::Owned(lower),
            address: Cow::Owned(address.to_string()),
        });
    }
    resolve.sort_by(|a, b| a.host.cmp(&b.host));
    resolve.dedup_by(|a, b| a.host == b.host);
    Ok(resolve)
}
