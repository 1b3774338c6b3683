//! The sections whose values need no check beyond their form (a flag, a bounded integer, a
//! named choice), which serde already made: `[integrations.nextjs]`, `[script]`,
//! `[logging]` and `[delivery]`. Validating them only fills in the defaults.

use serde::Deserialize;

use super::values::{Flag, Int, OneOf};
use super::{Context, LoadError, Section};
use crate::{Compression, Delivery, Integrations, LogLevel, Logging, Nextjs, Script, Settings};

/// `[integrations.*]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct IntegrationsFile {
    nextjs: NextjsFile,
}

/// `[integrations.nextjs]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
struct NextjsFile {
    enabled: Option<Flag>,
    /// At least one kilobyte (a row header and some text), at most 1 GiB.
    max_held_bytes: Option<Int<1024, { 1 << 30 }>>,
}

/// `[script]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct ScriptFile {
    inject: Option<Flag>,
}

/// `[logging]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct LoggingFile {
    level: Option<OneOf<LogLevel>>,
}

/// `[delivery]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct DeliveryFile {
    server_timing: Option<Flag>,
    compression: Option<OneOf<Compression>>,
    early_hints: Option<Flag>,
}

/// A flag's value, or `default` when unset.
fn flag(value: Option<Flag>, default: bool) -> bool {
    value.map_or(default, |f| f.0)
}

impl Section for IntegrationsFile {
    type Valid = Integrations;

    fn validate(self, _: &mut Context<'_>) -> Result<Integrations, LoadError> {
        let (n, d) = (self.nextjs, Settings::DEFAULT.integrations.nextjs);
        Ok(Integrations {
            nextjs: Nextjs {
                enabled: flag(n.enabled, d.enabled),
                max_held_bytes: n.max_held_bytes.map_or(d.max_held_bytes, |i| i.0),
            },
        })
    }
}

impl Section for ScriptFile {
    type Valid = Script;

    fn validate(self, _: &mut Context<'_>) -> Result<Script, LoadError> {
        let d = Settings::DEFAULT.script;
        Ok(Script {
            inject: flag(self.inject, d.inject),
        })
    }
}

impl Section for LoggingFile {
    type Valid = Logging;

    fn validate(self, _: &mut Context<'_>) -> Result<Logging, LoadError> {
        let d = Settings::DEFAULT.logging;
        Ok(Logging {
            level: self.level.map_or(d.level, |l| l.0),
        })
    }
}

impl Section for DeliveryFile {
    type Valid = Delivery;

    fn validate(self, _: &mut Context<'_>) -> Result<Delivery, LoadError> {
        let d = Settings::DEFAULT.delivery;
        Ok(Delivery {
            server_timing: flag(self.server_timing, d.server_timing),
            compression: self.compression.map_or(d.compression, |c| c.0),
            early_hints: flag(self.early_hints, d.early_hints),
        })
    }
}
