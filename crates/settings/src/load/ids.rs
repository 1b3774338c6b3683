//! `[ids]`: the partner-ID graph's stores and bounds. Which bidders are its partners is said
//! on each bidder (`eid_source`, `sync_token_key`: `load::auction`), so the partners are one
//! list with the bidders.

use serde::Deserialize;

use super::secrets::store_name;
use super::values::{Flag, Int};
use super::{Context, LoadError, Section};
use crate::{Ids, Settings};

/// `[ids]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct IdsFile {
    enabled: Option<Flag>,
    kv_store: Option<String>,
    secret_store: Option<String>,
    /// At most 13 months, the longest the usual cookie rules keep an ID.
    ttl_days: Option<Int<1, 395>>,
    max_batch: Option<Int<1, 1_000>>,
    max_pairs_per_minute: Option<Int<1, 1_000_000>>,
    /// At most a year.
    ask_interval_hours: Option<Int<1, 8_760>>,
}

impl Section for IdsFile {
    type Valid = Ids;

    fn validate(self, cx: &mut Context<'_>) -> Result<Ids, LoadError> {
        let d = Settings::DEFAULT.ids;
        let max_batch = self.max_batch.map_or(d.max_batch, |i| i.0);
        let max_pairs_per_minute =
            (self.max_pairs_per_minute).map_or(d.max_pairs_per_minute, |i| i.0);
        // A batch larger than the budget would be refused every minute, whatever it waited.
        if max_pairs_per_minute < max_batch {
            let problem = format!(
                "{max_pairs_per_minute} is less than ids.max_batch ({max_batch}): a full batch \
                 could never be accepted"
            );
            return Err(cx.error("ids.max_pairs_per_minute", &problem));
        }
        Ok(Ids {
            enabled: self.enabled.map_or(d.enabled, |f| f.0),
            kv_store: store_name(cx, "ids.kv_store", self.kv_store, &d.kv_store)?,
            secret_store: store_name(cx, "ids.secret_store", self.secret_store, &d.secret_store)?,
            ttl_days: self.ttl_days.map_or(d.ttl_days, |i| i.0),
            max_batch,
            max_pairs_per_minute,
            ask_interval_hours: (self.ask_interval_hours).map_or(d.ask_interval_hours, |i| i.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::load::{keys, load, Origin};
    use crate::Settings;

    const MINIMAL: &str = "[publisher]\ndomain = \"www.example.com\"\n\
                           origin_url = \"https://origin.example.com\"\n";

    fn no_env() -> Vec<(String, String)> {
        Vec::new()
    }

    #[test]
    fn defaults_every_key_from_the_file_and_from_the_environment() {
        assert_eq!(load(MINIMAL, no_env()).unwrap().ids, Settings::DEFAULT.ids);
        let text = format!(
            "{MINIMAL}\n[ids]\nenabled = false\nkv_store = \"graph.v2\"\nsecret_store = \"ids-tokens\"\n\
             ttl_days = 395\nmax_batch = 1\nmax_pairs_per_minute = 1000000\nask_interval_hours = 1\n"
        );
        let ids = load(&text, no_env()).unwrap().ids;
        assert!(!ids.enabled);
        assert_eq!(
            (&*ids.kv_store, &*ids.secret_store),
            ("graph.v2", "ids-tokens")
        );
        assert_eq!((ids.ttl_days, ids.max_batch), (395, 1));
        assert_eq!(
            (ids.max_pairs_per_minute, ids.ask_interval_hours),
            (1_000_000, 1)
        );
        let env = [
            ("TRUSTED_SERVER__IDS__TTL_DAYS", "7"),
            ("TRUSTED_SERVER__IDS__MAX_BATCH", "1000"),
            ("TRUSTED_SERVER__IDS__MAX_PAIRS_PER_MINUTE", "1000"),
            ("TRUSTED_SERVER__IDS__ASK_INTERVAL_HOURS", "8760"),
        ];
        let ids = load(MINIMAL, env).unwrap().ids;
        assert_eq!((ids.ttl_days, ids.max_batch), (7, 1000));
        assert_eq!(
            (ids.max_pairs_per_minute, ids.ask_interval_hours),
            (1000, 8760)
        );
        for key in [
            "enabled",
            "kv_store",
            "secret_store",
            "ttl_days",
            "max_batch",
            "max_pairs_per_minute",
            "ask_interval_hours",
        ] {
            assert!(keys().contains(&format!("ids.{key}")), "{key}");
        }
    }

    #[test]
    fn a_budget_smaller_than_a_batch_is_refused() {
        let text = format!("{MINIMAL}\n[ids]\nmax_batch = 200\nmax_pairs_per_minute = 199\n");
        let e = load(&text, no_env()).unwrap_err();
        assert_eq!(
            (e.key.as_str(), &e.origin),
            ("ids.max_pairs_per_minute", &Some(Origin::Line(7)))
        );
        assert!(e.problem.contains("ids.max_batch (200)"), "{e}");
        let env = [("TRUSTED_SERVER__IDS__MAX_PAIRS_PER_MINUTE", "99")];
        let e = load(MINIMAL, env).unwrap_err();
        assert_eq!(e.key, "ids.max_pairs_per_minute", "{e}");
        let equal = format!("{MINIMAL}\n[ids]\nmax_batch = 200\nmax_pairs_per_minute = 200\n");
        assert_eq!(
            load(&equal, no_env()).unwrap().ids.max_pairs_per_minute,
            200
        );
    }

    #[test]
    fn each_mistake_names_its_key_and_line() {
        for bad in [
            "enabled = 1",
            "kv_store = \"a b\"",
            "kv_store = \"\"",
            "secret_store = \"ids/tokens\"",
            "ttl_days = 0",
            "ttl_days = 396",
            "max_batch = 0",
            "max_batch = 1001",
            "max_batches = 5",
            "max_pairs_per_minute = 0",
            "max_pairs_per_minute = 1000001",
            "ask_interval_hours = 0",
            "ask_interval_hours = 8761",
        ] {
            let text = format!("{MINIMAL}\n[ids]\n{bad}\n");
            let e = load(&text, no_env()).unwrap_err();
            let key = format!("ids.{}", bad.split(' ').next().unwrap());
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (key.as_str(), &Some(Origin::Line(6))),
                "{bad}: {e}"
            );
        }
    }
}
