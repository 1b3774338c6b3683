//! The sections that name Fastly Secret Stores and the secrets in them: `[identity]`,
//! `[admin]` and `[signing]`, and the rule every store or secret name follows (also used by
//! `[first_party]`). Only names are settings: the secrets are read at run time.

use std::borrow::Cow;

use serde::Deserialize;
use toml::Value;

use super::values::{Composite, Flag};
use super::{Context, LoadError, Section};
use crate::{Admin, Identity, Settings, Signing, Text};

/// `[identity]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct IdentityFile {
    enabled: Option<Flag>,
    secret_store: Option<String>,
    secret_key: Option<String>,
}

/// `[admin]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct AdminFile {
    enabled: Option<Flag>,
    secret_store: Option<String>,
    user_key: Option<String>,
    password_key: Option<String>,
}

/// `[signing]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct SigningFile {
    enabled: Option<Flag>,
    secret_store: Option<String>,
    current_kid: Option<String>,
    previous_kids: Option<Composite>,
}

/// The Fastly rule for store and secret names (also what Viceroy enforces): `value` checked
/// at `key`, or `default` when unset.
pub(super) fn store_name(
    cx: &Context<'_>,
    key: &str,
    value: Option<String>,
    default: &Text,
) -> Result<Text, LoadError> {
    match value {
        None => Ok(default.clone()),
        Some(v) if is_store_name(&v) => Ok(Cow::Owned(v)),
        Some(_) => Err(cx.error(
            key,
            "expected 1 to 255 letters, digits, dashes (-), underscores (_) or periods (.)",
        )),
    }
}

/// A Fastly Secret Store or secret name: 1 to 255 letters, digits, `-`, `_` or `.`.
pub(super) fn is_store_name(name: &str) -> bool {
    (1..=255).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl Section for IdentityFile {
    type Valid = Identity;

    fn validate(self, cx: &mut Context<'_>) -> Result<Identity, LoadError> {
        let d = Settings::DEFAULT.identity;
        Ok(Identity {
            enabled: self.enabled.map_or(d.enabled, |f| f.0),
            secret_store: store_name(
                cx,
                "identity.secret_store",
                self.secret_store,
                &d.secret_store,
            )?,
            secret_key: store_name(cx, "identity.secret_key", self.secret_key, &d.secret_key)?,
        })
    }
}

impl Section for AdminFile {
    type Valid = Admin;

    /// The user and the password must be two secrets.
    fn validate(self, cx: &mut Context<'_>) -> Result<Admin, LoadError> {
        let d = Settings::DEFAULT.admin;
        let admin = Admin {
            enabled: self.enabled.map_or(d.enabled, |f| f.0),
            secret_store: store_name(cx, "admin.secret_store", self.secret_store, &d.secret_store)?,
            user_key: store_name(cx, "admin.user_key", self.user_key, &d.user_key)?,
            password_key: store_name(cx, "admin.password_key", self.password_key, &d.password_key)?,
        };
        if admin.user_key == admin.password_key {
            return Err(cx.error(
                "admin.password_key",
                "must differ from admin.user_key (the user and the password are two secrets)",
            ));
        }
        Ok(admin)
    }
}

impl Section for SigningFile {
    type Valid = Signing;

    fn validate(self, cx: &mut Context<'_>) -> Result<Signing, LoadError> {
        let d = Settings::DEFAULT.signing;
        let current_kid = store_name(cx, "signing.current_kid", self.current_kid, &d.current_kid)?;
        let previous_kids = previous_kids(cx, self.previous_kids, &current_kid)?;
        Ok(Signing {
            enabled: self.enabled.map_or(d.enabled, |f| f.0),
            secret_store: store_name(
                cx,
                "signing.secret_store",
                self.secret_store,
                &d.secret_store,
            )?,
            current_kid,
            previous_kids: Cow::Owned(previous_kids),
        })
    }
}

/// `signing.previous_kids`: an array of key IDs, none twice and none the current one.
fn previous_kids(
    cx: &Context<'_>,
    kids: Option<Composite>,
    current_kid: &Text,
) -> Result<Vec<Text>, LoadError> {
    let key = "signing.previous_kids";
    let kids = match kids.map(|c| c.0) {
        None => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(cx.error(key, "expected an array of key IDs")),
    };
    let mut previous_kids: Vec<Text> = Vec::new();
    for item in kids {
        let Value::String(kid) = item else {
            return Err(cx.error(key, "expected an array of key IDs"));
        };
        let kid = store_name(cx, key, Some(kid), current_kid)?;
        if kid == *current_kid || previous_kids.contains(&kid) {
            let problem = format!("lists {kid:?} twice (or as signing.current_kid too)");
            return Err(cx.error(key, &problem));
        }
        previous_kids.push(kid);
    }
    Ok(previous_kids)
}
