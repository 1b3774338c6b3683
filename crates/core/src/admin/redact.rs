//! `GET /_ts/admin/settings`: the effective settings as JSON, with every value that is or
//! could be a secret redacted.
//!
//! **The rule.** A value is shown only when its *type* or its *validated shape* cannot carry a
//! secret:
//!
//! * booleans, numbers and enumerated words (`logging.level`);
//! * strings the loader has validated into a shape that leaves no room for one: host names,
//!   the origin URL (scheme, host and port only: user info, path and query are refused at
//!   load), country, region and currency codes, bidder codes, and the *names* of Secret
//!   Stores and their keys (never their values, which the settings do not hold).
//!
//! A bidder's endpoint is shown as its scheme, host and port (user info is refused at load);
//! its path and query, which may carry an account key, read `/[redacted]`.
//!
//! Every other string is free text the operator wrote, and appears as [`REDACTED`]: today the
//! `[response_headers]` values (their names are shown) and an ad slot's bidder params (its
//! bidder codes are shown). Ad slots' element ids and path patterns, and `auction.bots`
//! entries, are shown by their validated shapes. The service never reads a Secret
//! Store for this answer, so no secret value can reach it.
//!
//! **By design, not by list.** [`SettingsView`] has no method that prints an arbitrary string:
//! showing one takes a [`Shape`] saying why it is safe, and a redacted value is never passed
//! in at all. [`settings_json`] destructures every settings section without `..`, so a new
//! setting does not compile until someone decides here how it is shown.

use serde_json::{Map, Value};
use trusted_server_settings::{
    Admin, Auction, Bidder, Consent, Delivery, FirstParty, Identity, Ids, Integrations, Logging,
    Nextjs, PartnerVendor, Publisher, Resolve, Script, Settings, Signing, Size, Slot, SlotBidder,
};

use crate::VERSION;

/// What a redacted value reads as.
pub const REDACTED: &str = "[redacted]";

/// Why a string setting may be shown: the shape the loader validated it into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A host name (`www.example.com`) or `host[:port]`, or empty.
    Host,
    /// `http(s)://host[:port]`: user info, path, query and fragment are refused at load.
    OriginUrl,
    /// The name of a Secret Store or of a key in one (letters, digits, `-`, `_`, `.`).
    SecretName,
    /// A country or region code: two upper-case letters, or `US-` and two; or a currency
    /// code: three upper-case letters.
    Code,
    /// A bidder code: 1 to 32 of `A-Z a-z 0-9 _ -`.
    BidderCode,
    /// An ad slot's element id: 1 to 64 of `A-Z a-z 0-9 _ - . :`, the id the page's own
    /// markup carries.
    ElementId,
    /// An ad slot's path pattern: a public page path (`/news/*`); a query is refused at load.
    PathPattern,
    /// An `auction.bots` entry: a `User-Agent` substring, 1 to 64 printable ASCII
    /// characters, a name crawlers announce themselves by.
    UserAgentToken,
}

/// One JSON object of settings, whose methods are the rule above.
#[derive(Debug)]
pub struct SettingsView<'v> {
    object: &'v mut Map<String, Value>,
}

impl SettingsView<'_> {
    /// A boolean setting.
    pub fn flag(&mut self, key: &str, value: bool) {
        self.object.insert(key.to_owned(), Value::Bool(value));
    }

    /// A numeric setting.
    pub fn number(&mut self, key: &str, value: u32) {
        self.object.insert(key.to_owned(), Value::from(value));
    }

    /// An enumerated setting, by its word (only `'static` words: the types' own names).
    pub fn word(&mut self, key: &str, value: &'static str) {
        self.object.insert(key.to_owned(), Value::from(value));
    }

    /// A string setting whose validated `shape` cannot carry a secret.
    pub fn shaped(&mut self, key: &str, value: &str, _why: Shape) {
        self.object.insert(key.to_owned(), Value::from(value));
    }

    /// A list of strings, each of the validated `shape`.
    pub fn shaped_list(&mut self, key: &str, values: &[impl AsRef<str>], _why: Shape) {
        let list = values.iter().map(|v| Value::from(v.as_ref())).collect();
        self.object.insert(key.to_owned(), Value::Array(list));
    }

    /// A list of numbers.
    pub fn numbers(&mut self, key: &str, values: &[u16]) {
        let list = values.iter().map(|&n| Value::from(n)).collect();
        self.object.insert(key.to_owned(), Value::Array(list));
    }

    /// A setting that is or could be secret: only its key appears. The value is not taken.
    pub fn redacted(&mut self, key: &str) {
        self.object.insert(key.to_owned(), Value::from(REDACTED));
    }

    /// A list of nested sections, one per item.
    pub fn sections<T>(
        &mut self,
        key: &str,
        items: impl IntoIterator<Item = T>,
        fill: impl Fn(&mut SettingsView<'_>, T),
    ) {
        let list = items
            .into_iter()
            .map(|item| {
                let mut object = Map::new();
                fill(
                    &mut SettingsView {
                        object: &mut object,
                    },
                    item,
                );
                Value::Object(object)
            })
            .collect();
        self.object.insert(key.to_owned(), Value::Array(list));
    }

    /// A nested section.
    pub fn section(&mut self, key: &str, fill: impl FnOnce(&mut SettingsView<'_>)) {
        let mut object = Map::new();
        fill(&mut SettingsView {
            object: &mut object,
        });
        self.object.insert(key.to_owned(), Value::Object(object));
    }
}

/// The admin answer for `settings`:
/// `{"version": "…", "settings": {"publisher": {…}, …}}`, keys as in `trusted-server.toml`.
pub fn settings_json(settings: &Settings) -> String {
    let Settings {
        publisher,
        integrations,
        identity,
        signing,
        first_party,
        script,
        admin,
        logging,
        delivery,
        consent,
        auction,
        ids,
        response_headers,
    } = settings;
    let mut object = Map::new();
    {
        let mut view = SettingsView {
            object: &mut object,
        };
        view.section("publisher", |v| publisher_view(v, publisher));
        view.section("integrations", |v| integrations_view(v, integrations));
        view.section("identity", |v| identity_view(v, identity));
        view.section("signing", |v| signing_view(v, signing));
        view.section("first_party", |v| first_party_view(v, first_party));
        view.section("script", |v| {
            let Script { inject } = script;
            v.flag("inject", *inject);
        });
        view.section("admin", |v| admin_view(v, admin));
        view.section("logging", |v| {
            let Logging { level } = logging;
            v.word("level", level.as_str());
        });
        view.section("delivery", |v| {
            let Delivery {
                server_timing,
                compression,
                early_hints,
            } = delivery;
            v.flag("server_timing", *server_timing);
            v.word("compression", compression.as_str());
            v.flag("early_hints", *early_hints);
        });
        view.section("consent", |v| consent_view(v, consent));
        view.section("auction", |v| auction_view(v, auction));
        view.section("ids", |v| {
            let Ids {
                enabled,
                kv_store,
                secret_store,
                ttl_days,
                max_batch,
                max_pairs_per_minute,
                ask_interval_hours,
            } = ids;
            v.flag("enabled", *enabled);
            v.shaped("kv_store", kv_store, Shape::SecretName);
            v.shaped("secret_store", secret_store, Shape::SecretName);
            v.number("ttl_days", *ttl_days);
            v.number("max_batch", *max_batch);
            v.number("max_pairs_per_minute", *max_pairs_per_minute);
            v.number("ask_interval_hours", *ask_interval_hours);
        });
        view.section("response_headers", |v| {
            // Free text: a name is an HTTP token, the value could be anything.
            for header in response_headers.iter() {
                v.redacted(&header.name);
            }
        });
    }
    let mut out = serde_json::json!({ "version": VERSION, "settings": object }).to_string();
    out.push('\n');
    out
}

fn publisher_view(v: &mut SettingsView<'_>, publisher: &Publisher) {
    let Publisher {
        domain,
        origin_url,
        // Derived from origin_url and origin_host, which are shown.
        origin_scheme: _,
        origin_address: _,
        origin_tls_host: _,
        origin_host_name: _,
        origin_port: _,
        origin_host,
        cookie_domain,
        streaming,
        connect_timeout_ms,
        first_byte_timeout_ms,
        between_bytes_timeout_ms,
    } = publisher;
    v.shaped("domain", domain, Shape::Host);
    v.shaped("origin_url", origin_url, Shape::OriginUrl);
    v.shaped("origin_host", origin_host, Shape::Host);
    v.shaped("cookie_domain", cookie_domain, Shape::Host);
    v.flag("streaming", *streaming);
    v.number("connect_timeout_ms", *connect_timeout_ms);
    v.number("first_byte_timeout_ms", *first_byte_timeout_ms);
    v.number("between_bytes_timeout_ms", *between_bytes_timeout_ms);
}

fn integrations_view(v: &mut SettingsView<'_>, integrations: &Integrations) {
    let Integrations { nextjs } = integrations;
    let Nextjs {
        enabled,
        max_held_bytes,
    } = nextjs;
    v.section("nextjs", |v| {
        v.flag("enabled", *enabled);
        v.number("max_held_bytes", *max_held_bytes);
    });
}

fn identity_view(v: &mut SettingsView<'_>, identity: &Identity) {
    let Identity {
        enabled,
        secret_store,
        secret_key,
    } = identity;
    v.flag("enabled", *enabled);
    v.shaped("secret_store", secret_store, Shape::SecretName);
    v.shaped("secret_key", secret_key, Shape::SecretName);
}

fn signing_view(v: &mut SettingsView<'_>, signing: &Signing) {
    let Signing {
        enabled,
        secret_store,
        current_kid,
        previous_kids,
    } = signing;
    v.flag("enabled", *enabled);
    v.shaped("secret_store", secret_store, Shape::SecretName);
    v.shaped("current_kid", current_kid, Shape::SecretName);
    v.shaped_list("previous_kids", previous_kids, Shape::SecretName);
}

fn first_party_view(v: &mut SettingsView<'_>, first_party: &FirstParty) {
    let FirstParty {
        allowed_domains,
        allowed_ports,
        resolve,
        secret_store,
        token_key,
        sign_ttl_secs,
        page_ttl_secs,
    } = first_party;
    v.shaped_list("allowed_domains", allowed_domains, Shape::Host);
    v.numbers("allowed_ports", allowed_ports);
    v.section("resolve", |v| {
        // Validated at load: an allowed host name and a loopback `address:port`.
        for Resolve { host, address } in resolve.iter() {
            v.shaped(host, address, Shape::Host);
        }
    });
    v.shaped("secret_store", secret_store, Shape::SecretName);
    v.shaped("token_key", token_key, Shape::SecretName);
    v.number("sign_ttl_secs", *sign_ttl_secs);
    v.number("page_ttl_secs", *page_ttl_secs);
}

fn admin_view(v: &mut SettingsView<'_>, admin: &Admin) {
    let Admin {
        enabled,
        secret_store,
        user_key,
        password_key,
    } = admin;
    v.flag("enabled", *enabled);
    v.shaped("secret_store", secret_store, Shape::SecretName);
    v.shaped("user_key", user_key, Shape::SecretName);
    v.shaped("password_key", password_key, Shape::SecretName);
}

fn consent_view(v: &mut SettingsView<'_>, consent: &Consent) {
    let Consent {
        opt_in_countries,
        opt_out_regions,
        unknown,
        purposes,
        publisher_segment,
        gpc_refuses_opt_in,
        partner_vendors,
    } = consent;
    v.shaped_list("opt_in_countries", opt_in_countries, Shape::Code);
    v.shaped_list("opt_out_regions", opt_out_regions, Shape::Code);
    v.word("unknown", unknown.as_str());
    let purposes: Vec<u16> = purposes.iter().map(|&p| u16::from(p)).collect();
    v.numbers("purposes", &purposes);
    v.flag("publisher_segment", *publisher_segment);
    v.flag("gpc_refuses_opt_in", *gpc_refuses_opt_in);
    v.section("partner_vendors", |v| {
        // Validated at load: a domain name and a number.
        for PartnerVendor { domain, vendor_id } in partner_vendors.iter() {
            v.number(domain, u32::from(*vendor_id));
        }
    });
}

fn auction_view(v: &mut SettingsView<'_>, auction: &Auction) {
    let Auction {
        enabled,
        timeout_ms,
        margin_ms,
        price_granularity,
        currency,
        bidders,
        navigation,
        navigation_timeout_ms,
        origin_first_within_ms,
        bots,
        slots,
    } = auction;
    v.flag("enabled", *enabled);
    v.number("timeout_ms", *timeout_ms);
    v.number("margin_ms", *margin_ms);
    v.word("price_granularity", price_granularity.as_str());
    v.shaped("currency", currency, Shape::Code);
    v.sections("bidders", bidders.iter(), bidder_view);
    v.flag("navigation", *navigation);
    v.number("navigation_timeout_ms", *navigation_timeout_ms);
    v.number("origin_first_within_ms", *origin_first_within_ms);
    v.shaped_list("bots", bots, Shape::UserAgentToken);
    v.sections("slots", slots.iter(), slot_view);
}

fn slot_view(v: &mut SettingsView<'_>, slot: &Slot) {
    let Slot {
        id,
        paths,
        sizes,
        bidders,
        floor_micros,
    } = slot;
    v.shaped("id", id, Shape::ElementId);
    v.shaped_list("paths", paths, Shape::PathPattern);
    v.sections("sizes", sizes.iter(), |v, Size { w, h }| {
        v.number("w", *w);
        v.number("h", *h);
    });
    // A bidder's params may carry an account key: only the codes are shown.
    v.section("bidders", |v| {
        for SlotBidder { code, params: _ } in bidders.iter() {
            v.redacted(code);
        }
    });
    v.number("floor_micros", *floor_micros);
}

fn bidder_view(v: &mut SettingsView<'_>, bidder: &Bidder) {
    let Bidder {
        code,
        // Its path and query may carry an account key: only the parts below are shown.
        endpoint: _,
        scheme,
        // Derived from the endpoint, like the authority shown.
        address: _,
        tls_host: _,
        authority,
        path_and_query,
        vendor_id,
        timeout_ms,
        signed,
        rendering,
        eid_source,
        sync_token_key,
        id_path,
    } = bidder;
    v.shaped("code", code, Shape::BidderCode);
    let origin = format!("{}://{authority}", scheme.as_str());
    let endpoint = match &**path_and_query {
        "/" => origin,
        _ => format!("{origin}/{REDACTED}"),
    };
    // Validated at load: scheme, host and port, no user info; the rest is the word above.
    v.shaped("endpoint", &endpoint, Shape::OriginUrl);
    if let Some(id) = vendor_id {
        v.number("vendor_id", u32::from(*id));
    }
    v.number("timeout_ms", *timeout_ms);
    v.flag("signed", *signed);
    v.word("rendering", rendering.as_str());
    if let Some(source) = eid_source {
        // Validated at load: a lowercase domain name.
        v.shaped("eid_source", source, Shape::Host);
    }
    if let Some(key) = sync_token_key {
        v.shaped("sync_token_key", key, Shape::SecretName);
    }
    if id_path.is_some() {
        // Free text, like the endpoint's path: it could carry an account key.
        v.redacted("id_path");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const MINIMAL: &str = "[publisher]\ndomain = \"www.example.com\"\n\
                           origin_url = \"https://origin.example.com:8443\"\n";

    fn view(settings: &Settings) -> Value {
        serde_json::from_str(&settings_json(settings)).expect("valid JSON")
    }

    /// Dotted paths of every leaf under `value`; an object at a path the loader knows as one
    /// setting (a map such as `first_party.resolve`) is a leaf.
    fn leaves(value: &Value, prefix: &str, out: &mut Vec<String>) {
        let path = prefix.trim_end_matches('.').to_owned();
        match value {
            Value::Object(map) if !trusted_server_settings::keys().contains(&path) => {
                for (k, v) in map {
                    leaves(v, &format!("{prefix}{k}."), out);
                }
            }
            _ => out.push(path),
        }
    }

    /// Every key the loader accepts is in the view (the settings crate's own list, in its
    /// order), and nothing else except the open `[response_headers]` table.
    #[test]
    fn the_view_has_every_setting_and_only_settings() {
        let settings = trusted_server_settings::load(MINIMAL, [("X", "y")]).unwrap();
        let v = view(&settings);
        let mut found = Vec::new();
        leaves(&v["settings"], "", &mut found);
        // serde_json's map is sorted; compare as sets.
        let mut keys = trusted_server_settings::keys();
        keys.sort();
        assert_eq!(found, keys);
        assert_eq!(v["version"], VERSION);
        assert_eq!(v["settings"]["response_headers"], serde_json::json!({}));
    }

    #[test]
    fn values_are_the_effective_ones() {
        let env = [
            ("TRUSTED_SERVER__LOGGING__LEVEL", "debug"),
            ("TRUSTED_SERVER__ADMIN__USER_KEY", "ops_user"),
            ("TRUSTED_SERVER__PUBLISHER__CONNECT_TIMEOUT_MS", "1234"),
            ("TRUSTED_SERVER__INTEGRATIONS__NEXTJS__ENABLED", "false"),
            ("TRUSTED_SERVER__DELIVERY__COMPRESSION", "edge"),
        ];
        let v = view(&trusted_server_settings::load(MINIMAL, env).unwrap());
        let s = &v["settings"];
        assert_eq!(
            s["publisher"]["origin_url"],
            "https://origin.example.com:8443"
        );
        assert_eq!(s["publisher"]["origin_host"], "origin.example.com:8443");
        assert_eq!(s["publisher"]["connect_timeout_ms"], 1234);
        assert_eq!(s["integrations"]["nextjs"]["enabled"], false);
        assert_eq!(s["logging"]["level"], "debug");
        assert_eq!(s["admin"]["user_key"], "ops_user");
        assert_eq!(s["admin"]["password_key"], "admin_password");
        assert_eq!(s["identity"]["secret_store"], "ts_identity");
        assert_eq!(s["delivery"]["compression"], "edge");
        assert_eq!(s["delivery"]["server_timing"], true);
        assert_eq!(s["delivery"]["early_hints"], true);
    }

    /// Free text is redacted: a response header's value never shows, its name does.
    #[test]
    fn free_text_is_redacted() {
        let secretish = "Bearer do-not-show-me-4c1d\"\\";
        let env = [("TRUSTED_SERVER__RESPONSE_HEADERS__X_TOKEN", secretish)];
        let settings = trusted_server_settings::load(MINIMAL, env).unwrap();
        let text = settings_json(&settings);
        assert!(!text.contains("do-not-show-me"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["settings"]["response_headers"],
            serde_json::json!({ "x-token": REDACTED })
        );
    }

    /// An ad slot shows its id, paths, sizes, floor and bidder codes; its params do not show.
    #[test]
    fn a_slots_bidder_params_are_redacted() {
        let env = [
            (
                "TRUSTED_SERVER__AUCTION__BIDDERS",
                "[{ code = \"fast\", endpoint = \"https://bids.example/\" }]",
            ),
            (
                "TRUSTED_SERVER__AUCTION__SLOTS",
                "[{ id = \"ad-top\", paths = [\"/news/*\"], sizes = [[728, 90]], floor = 0.5, \
                 bidders = { fast = { account = \"do-not-show-me\" } } }]",
            ),
        ];
        let settings = trusted_server_settings::load(MINIMAL, env).unwrap();
        let text = settings_json(&settings);
        assert!(!text.contains("do-not-show-me"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["settings"]["auction"]["slots"],
            serde_json::json!([{
                "id": "ad-top",
                "paths": ["/news/*"],
                "sizes": [{"w": 728, "h": 90}],
                "bidders": {"fast": REDACTED},
                "floor_micros": 500_000,
            }])
        );
        assert_eq!(v["settings"]["auction"]["bots"][0], "Googlebot");
    }

    /// A bidder's endpoint shows its scheme, host and port; its path and query do not show.
    #[test]
    fn a_bidders_path_and_query_are_redacted() {
        let bidders = "[{ code = \"fast\", endpoint = \"https://bids.example:8443/rtb?key=do-not-show-me\", \
                       vendor_id = 1001 }, { code = \"root\", endpoint = \"http://127.0.0.1:8080\" }]";
        let env = [("TRUSTED_SERVER__AUCTION__BIDDERS", bidders)];
        let settings = trusted_server_settings::load(MINIMAL, env).unwrap();
        let text = settings_json(&settings);
        assert!(!text.contains("do-not-show-me"), "{text}");
        assert!(!text.contains("rtb"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        let a = &v["settings"]["auction"];
        assert_eq!(a["currency"], "USD");
        assert_eq!(a["price_granularity"], "medium");
        assert_eq!(
            a["bidders"],
            serde_json::json!([
                {
                    "code": "fast",
                    "endpoint": format!("https://bids.example:8443/{REDACTED}"),
                    "vendor_id": 1001,
                    "timeout_ms": 1000,
                    "signed": false,
                    "rendering": "first-party",
                },
                {
                    "code": "root",
                    "endpoint": "http://127.0.0.1:8080",
                    "timeout_ms": 1000,
                    "signed": false,
                    "rendering": "first-party",
                },
            ])
        );
    }

    #[test]
    fn strings_that_need_escaping_stay_valid_json() {
        let mut settings = Settings::DEFAULT;
        settings.publisher.domain = "a\"b\\c\u{1}".into();
        assert_eq!(
            view(&settings)["settings"]["publisher"]["domain"],
            "a\"b\\c\u{1}"
        );
    }
}
