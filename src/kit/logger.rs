//! The `log` facade onto the real-time log endpoint [`LOG_ENDPOINT`]: each record's message,
//! as one write (one log line), nothing added.
//!
//! Why not `log-fastly`: its builder makes its "built once" error before it builds, every
//! time, and an `anyhow` error captures a backtrace, which reads the environment; with its
//! maps and endpoint lookups that was a few percent of a small page's guest time, paid by
//! every request (each runs in a fresh instance, so "once" is per request). Here the setup is
//! two stores, and the endpoint is opened when the first record is written.

use std::io::Write as _;
use std::sync::Mutex;

use fastly::log::Endpoint;
use log::{LevelFilter, Log, Metadata, Record};

/// The log endpoint the records go to (see docs/deploy.md).
pub const LOG_ENDPOINT: &str = "trusted_server";

/// The one logger; its level is `log`'s global maximum.
static LOGGER: EndpointLogger = EndpointLogger {
    endpoint: Mutex::new(None),
};

/// Writes records to [`LOG_ENDPOINT`], opened on the first record.
struct EndpointLogger {
    endpoint: Mutex<Option<Endpoint>>,
}

impl Log for EndpointLogger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        // One write per record, so a message formatted in pieces is still one line.
        let owned;
        let message = match record.args().as_str() {
            Some(text) => text,
            None => {
                owned = record.args().to_string();
                &owned
            }
        };
        let Ok(mut endpoint) = self.endpoint.lock() else {
            return;
        };
        if endpoint.is_none() {
            // A name the platform refuses leaves nothing to write to: the record is dropped.
            *endpoint = Endpoint::try_from_name(LOG_ENDPOINT).ok();
        }
        if let Some(endpoint) = endpoint.as_mut() {
            // Nowhere to report a failed log write.
            let _ = endpoint.write_all(message.as_bytes());
        }
    }

    fn flush(&self) {}
}

/// Sends records up to `level` to [`LOG_ENDPOINT`]. Called once, first thing; a logger set
/// before (a test's) is kept.
pub fn init(level: LevelFilter) {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}
