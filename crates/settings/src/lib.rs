//! The one settings type of Trusted Server Edge.
//!
//! Settings are read from `trusted-server.toml`, merged with `TRUSTED_SERVER__SECTION__KEY`
//! environment overrides and validated **at build time** (see the service's `build.rs`). The
//! validated value is then emitted as Rust source and compiled into the binary as a `static`, so
//! a request never parses anything: every Fastly request runs in a fresh WASM instance, and
//! parsing TOML per request cost the system we replace several percent of its CPU.
//!
//! Every knob has a documented default (see [`Settings::DEFAULT`] and `docs/settings.md`). A bad value
//! fails the build with a message naming the key.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::borrow::Cow;

pub mod country;
#[cfg(feature = "load")]
mod load;

#[cfg(feature = "load")]
pub use load::{keys, load, load_with_notes, override_variables, LoadError, Origin};

/// A string that is `&'static` when embedded and owned while loading.
pub type Text = Cow<'static, str>;

/// Scheme used to reach the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS; the origin's certificate is checked against its host name.
    Https,
}

impl Scheme {
    /// The scheme as written in a URL (`http` or `https`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// The port a URL of this scheme uses when it names none.
    pub const fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// Where and how the publisher origin is reached (`[publisher]` section).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Publisher {
    /// `publisher.domain`: the publisher's first-party host (e.g. `www.example.com`). Used as
    /// the public host when a request carries no `Host` header. Required.
    pub domain: Text,
    /// `publisher.origin_url`: where the origin is fetched (`http://` or `https://`, host,
    /// optional port, no path). Required.
    pub origin_url: Text,
    /// Scheme of `origin_url`.
    pub origin_scheme: Scheme,
    /// `host[:port]` of `origin_url`: the address the backend connects to.
    pub origin_address: Text,
    /// Host name of `origin_url` (no port): used for TLS SNI and certificate checks.
    pub origin_tls_host: Text,
    /// `publisher.origin_host`: the `Host` header sent to the origin and the authority the
    /// origin's pages use in absolute URLs, which the proxy rewrites to the request's host.
    /// Default: the `host[:port]` of `origin_url`.
    pub origin_host: Text,
    /// Host name of `origin_host` (no port), lowercase: what origin cookies' `Domain` and the
    /// URL rule match. Parsed once, at load.
    pub origin_host_name: Text,
    /// Explicit port of `origin_host`, if it has one.
    pub origin_port: Option<u16>,
    /// `publisher.cookie_domain`: the `Domain` given to origin cookies that named the origin's
    /// own domain. Empty (the default) removes such `Domain` attributes, making the cookies
    /// host-only on the first-party host.
    pub cookie_domain: Text,
    /// `publisher.streaming`: stream bodies as they arrive (default `true`). `false` buffers the
    /// whole body and sends it with a `Content-Length`: kept for comparison and as a fallback.
    pub streaming: bool,
    /// `publisher.connect_timeout_ms`: origin connect timeout (default 5000).
    pub connect_timeout_ms: u32,
    /// `publisher.first_byte_timeout_ms`: time allowed for the origin's response headers
    /// (default 15000). Exceeding it answers 504.
    pub first_byte_timeout_ms: u32,
    /// `publisher.between_bytes_timeout_ms`: longest silence allowed inside an origin body
    /// (default 10000). Exceeding it abandons the response.
    pub between_bytes_timeout_ms: u32,
}

/// One `[response_headers]` entry: added to every response, after everything else.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct HeaderSetting {
    /// Header name, lowercase.
    pub name: Text,
    /// Header value.
    pub value: Text,
}

/// Next.js support (`[integrations.nextjs]` section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Nextjs {
    /// `integrations.nextjs.enabled`: rewrite React Server Component payloads, inline in
    /// `self.__next_f.push(…)` scripts and in `text/x-component` responses (default `true`).
    /// `false` passes them through untouched, as a page without Next.js would.
    pub enabled: bool,
    /// `integrations.nextjs.max_held_bytes`: most bytes held back at once while a Flight text
    /// row is open (default 10 MiB, 10485760). A row that would need more is passed through
    /// with its original bytes (still valid, not rewritten) instead of being held.
    pub max_held_bytes: u32,
}

/// Optional integrations (`[integrations.*]` sections).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Integrations {
    /// `[integrations.nextjs]`.
    pub nextjs: Nextjs,
}

/// The edge ID (`[identity]` section): a first-party ID per browser in the `ts-ec` cookie,
/// an HMAC of the client's network keyed by a secret from a Fastly Secret Store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Identity {
    /// `identity.enabled`: set the cookie on page navigations, forward the ID to the origin in
    /// `X-TS-EC` and answer `GET /_ts/ec` (default `true`). `false` turns all of it off.
    pub enabled: bool,
    /// `identity.secret_store`: the Fastly Secret Store holding the HMAC key (default
    /// `ts_identity`). Read at run time, never compiled in.
    pub secret_store: Text,
    /// `identity.secret_key`: the key's name in that store (default `ec_hmac_key`).
    pub secret_key: Text,
}

/// Signed partner requests and the discovery document (`[signing]` section): Ed25519 keys
/// from a Fastly Secret Store, named by key IDs (`kid`s).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Signing {
    /// `signing.enabled`: sign requests to partners (RFC 9421), publish the public keys at
    /// `GET /.well-known/trusted-server.json` and answer `POST /verify-signature` (default
    /// `true`). `false` turns all three off: requests go unsigned, both routes answer `404`.
    pub enabled: bool,
    /// `signing.secret_store`: the Fastly Secret Store holding the private keys (default
    /// `ts_signing`). Read at run time, never compiled in.
    pub secret_store: Text,
    /// `signing.current_kid`: the key that signs, and the store key holding it (default
    /// `ts-signing-1`). Its value is the base64 of a 32-byte Ed25519 seed.
    pub current_kid: Text,
    /// `signing.previous_kids`: keys no longer used to sign but still published and accepted
    /// for verification while partners roll over (default none).
    pub previous_kids: Cow<'static, [Text]>,
}

/// The admin routes (`[admin]` section): everything under `/_ts/admin`, behind HTTP Basic
/// authentication whose user and password live in a Fastly Secret Store.
///
/// Only the store's and keys' *names* are settings; the credentials themselves are read at run
/// time and never compiled in, so the package (and this value) holds nothing secret.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Admin {
    /// `admin.enabled`: answer the admin routes (default `true`). `false` answers `404` to
    /// every admin path (still never proxied) and reads no secret.
    pub enabled: bool,
    /// `admin.secret_store`: the Fastly Secret Store holding the credentials (default
    /// `ts_admin`).
    pub secret_store: Text,
    /// `admin.user_key`: the key of the user name in that store (default `admin_user`).
    pub user_key: Text,
    /// `admin.password_key`: the key of the password in that store (default
    /// `admin_password`).
    pub password_key: Text,
}

/// One `first_party.resolve` entry: connect to `address` for `host`, as curl's `--resolve`
/// does. Development only: it is how local tests reach partners on 127.0.0.1 while the URLs
/// keep their names (an IP literal in a URL is always refused).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Resolve {
    /// The host name (lowercase, an allowed domain or a subdomain of one).
    pub host: Text,
    /// `127.0.0.1:PORT` (any loopback address and a port): where to connect instead of
    /// asking DNS.
    pub address: Text,
}

/// First-party URLs for third-party content (`[first_party]` section): `/first-party/sign`,
/// `/first-party/click` and the proxy, and the SSRF policy they share.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct FirstParty {
    /// `first_party.allowed_domains`: the partner domains (and their subdomains) that
    /// first-party URLs may point at, lowercase, without a trailing dot. Empty (the default)
    /// allows nothing.
    pub allowed_domains: Cow<'static, [Text]>,
    /// `first_party.allowed_ports`: ports allowed besides 80 and 443 (default none).
    pub allowed_ports: Cow<'static, [u16]>,
    /// `first_party.resolve`: development-only addresses for allowed host names, sorted by
    /// host (default none).
    pub resolve: Cow<'static, [Resolve]>,
    /// `first_party.secret_store`: the Fastly Secret Store holding the URL-signing key
    /// (default `ts_first_party`).
    pub secret_store: Text,
    /// `first_party.token_key`: the key's name in that store (default `url_hmac_key`).
    pub token_key: Text,
    /// `first_party.sign_ttl_secs`: how long a URL from `/first-party/sign` stays good
    /// (default 300): short, since anyone may ask for one.
    pub sign_ttl_secs: u32,
    /// `first_party.page_ttl_secs`: how long URLs the service writes into pages itself stay
    /// good (default 3600): a page may sit open in a tab for a while before a click.
    pub page_ttl_secs: u32,
}

/// The first-party script (`[script]` section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Script {
    /// `script.inject`: put the script's tag at the start of `<head>` in rewritten HTML page
    /// navigations (default `true`). `false` leaves pages without it; the script is still
    /// served.
    pub inject: bool,
}

/// How much the service logs: the most verbose level sent to the log endpoint.
///
/// The settings crate stays free of the `log` crate (the service maps this onto
/// `log::LevelFilter`), so `build.rs` and the tools do not pull it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub enum LogLevel {
    /// Nothing.
    Off,
    /// Errors only.
    Error,
    /// Failure reports (every failure that ends or degrades a request), no access lines.
    Warn,
    /// Failure reports and one access line per request (the default).
    Info,
    /// Everything above and debug records.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// Every level, from quietest to most verbose.
    pub const ALL: [LogLevel; 6] = [
        LogLevel::Off,
        LogLevel::Error,
        LogLevel::Warn,
        LogLevel::Info,
        LogLevel::Debug,
        LogLevel::Trace,
    ];

    /// The level as written in the settings (`off`, `error`, `warn`, `info`, `debug`, `trace`).
    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Off => "off",
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// Where a rewritten body is compressed for the client (`delivery.compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub enum Compression {
    /// The origin sends whatever coding the client accepts (of those the pipeline decodes); the
    /// pipeline decodes, rewrites and encodes it again in wasm, billed as guest CPU.
    Wasm,
    /// The origin is asked for `identity`; the pipeline rewrites plain text and marks the
    /// response `x-compress-hint: on`, so Fastly compresses it on delivery, outside the guest.
    Edge,
}

impl Compression {
    /// Every choice.
    pub const ALL: [Compression; 2] = [Compression::Wasm, Compression::Edge];

    /// The choice as written in the settings (`wasm` or `edge`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Compression::Wasm => "wasm",
            Compression::Edge => "edge",
        }
    }
}

/// How responses are delivered (`[delivery]` section): timings exposed, and where bodies are
/// compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Delivery {
    /// `delivery.server_timing`: send a `Server-Timing` header (origin wait, time in the
    /// service) on every response (default `true`). `false` for publishers who do not want
    /// timings exposed; the access line keeps them either way.
    pub server_timing: bool,
    /// `delivery.compression`: `wasm` (default) re-encodes rewritten bodies in the guest;
    /// `edge` asks the origin for `identity` and leaves compression to Fastly's delivery.
    pub compression: Compression,
    /// `delivery.early_hints`: on a page navigation, send `103 Early Hints` with the preload
    /// and preconnect hints the page carried last time (default `true`), so the browser
    /// starts fetching while the origin is still thinking. `false` sends none and learns none.
    pub early_hints: bool,
}

/// Logging (`[logging]` section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Logging {
    /// `logging.level`: the most verbose records sent to the log endpoint (default `info`:
    /// access lines and failure reports; `warn` keeps only the failure reports).
    pub level: LogLevel,
}

/// What a location's consent rule is (`consent.unknown`, and the rule a jurisdiction
/// stands for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub enum ConsentRule {
    /// GDPR-style opt-in: nothing without the reader's recorded consent (`opt-in`).
    OptIn,
    /// US-state-style opt-out: allowed unless the reader opted out (`opt-out`).
    OptOut,
    /// No consent law: only `Sec-GPC: 1` refuses (`none`), as before consent was read.
    None,
}

impl ConsentRule {
    /// Every rule, strictest first.
    pub const ALL: [ConsentRule; 3] = [ConsentRule::OptIn, ConsentRule::OptOut, ConsentRule::None];

    /// The rule as written in the settings (`opt-in`, `opt-out` or `none`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ConsentRule::OptIn => "opt-in",
            ConsentRule::OptOut => "opt-out",
            ConsentRule::None => "none",
        }
    }
}

/// One `consent.partner_vendors` entry: a partner domain and its IAB TCF Global Vendor List ID.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct PartnerVendor {
    /// The partner's domain, lowercase, without a trailing dot; its subdomains share the ID.
    pub domain: Text,
    /// Its Global Vendor List ID, 1 to 65535.
    pub vendor_id: u16,
}

/// Consent (`[consent]` section): which locations fall under which consent rule, what an
/// opt-in reader must have consented to, and the partners' TCF vendor IDs. The decision these
/// feed is `trusted_server_core::consent::Decision`; `docs/consent.md` explains the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Consent {
    /// `consent.opt_in_countries`: ISO 3166-1 alpha-2 codes (upper case) of the countries under
    /// GDPR-style opt-in. Default: [`Consent::DEFAULT_OPT_IN_COUNTRIES`] (the EEA, `GB`, `CH` and
    /// the territories under their law with codes of their own). A reader's code is read
    /// through [`country::iso_code`] first, and a placeholder code
    /// ([`country::is_placeholder`]) is no location at all.
    pub opt_in_countries: Cow<'static, [Text]>,
    /// `consent.opt_out_regions`: `US-XX` codes (ISO 3166-2) of the US states whose
    /// comprehensive privacy law gives readers an opt-out. Default: the 19 states with such a
    /// law in force in 2026 ([`Consent::US_STATES_2026`]).
    pub opt_out_regions: Cow<'static, [Text]>,
    /// `consent.unknown`: the rule for a reader whose location is unknown (default
    /// [`ConsentRule::OptIn`], the strictest).
    pub unknown: ConsentRule,
    /// `consent.purposes`: the TCF purposes (1 to 24) an opt-in reader must consent to before
    /// an edge ID is created or used, ascending, each once (default `[1]`, storing and
    /// reading information on a device).
    pub purposes: Cow<'static, [u8]>,
    /// `consent.publisher_segment`: read the purpose consents from the TC string's publisher
    /// segment (the publisher's own purposes) instead of its core segment (default `false`).
    pub publisher_segment: bool,
    /// `consent.gpc_refuses_opt_in`: in an opt-in location, `Sec-GPC: 1` refuses the edge ID
    /// even when the TC string consents (default `true`: GPC is an explicit objection to the
    /// sale and sharing of the ID). `false`: a recorded TCF consent wins over GPC there.
    pub gpc_refuses_opt_in: bool,
    /// `consent.partner_vendors`: partner domains and their TCF vendor IDs, sorted by domain
    /// (default none). In an opt-in location a partner without one never gets the edge ID.
    pub partner_vendors: Cow<'static, [PartnerVendor]>,
}

impl Consent {
    /// The default `consent.opt_in_countries`: the European Economic Area (the 27 EU member
    /// states, Iceland, Liechtenstein and Norway), the United Kingdom and Switzerland, and
    /// the places under their data protection law that geolocation reports with a code of
    /// their own: Åland (`AX`, Finland), the French outermost regions (`GF`, `GP`, `MQ`, `RE`,
    /// `YT`, `MF`), Svalbard and Jan Mayen (`SJ`, Norway), and Gibraltar, Guernsey, Jersey and
    /// the Isle of Man (`GI`, `GG`, `JE`, `IM`), whose laws follow the GDPR. The Canary
    /// Islands, Ceuta and Melilla, the Azores and Madeira have no ISO 3166-1 code of their
    /// own (geolocation gives `ES` and `PT`; the reserved `IC` and `EA` are read as `ES`, see
    /// [`country`]).
    pub const DEFAULT_OPT_IN_COUNTRIES: [Text; 44] = [
        Cow::Borrowed("AT"),
        Cow::Borrowed("BE"),
        Cow::Borrowed("BG"),
        Cow::Borrowed("HR"),
        Cow::Borrowed("CY"),
        Cow::Borrowed("CZ"),
        Cow::Borrowed("DK"),
        Cow::Borrowed("EE"),
        Cow::Borrowed("FI"),
        Cow::Borrowed("FR"),
        Cow::Borrowed("DE"),
        Cow::Borrowed("GR"),
        Cow::Borrowed("HU"),
        Cow::Borrowed("IE"),
        Cow::Borrowed("IT"),
        Cow::Borrowed("LV"),
        Cow::Borrowed("LT"),
        Cow::Borrowed("LU"),
        Cow::Borrowed("MT"),
        Cow::Borrowed("NL"),
        Cow::Borrowed("PL"),
        Cow::Borrowed("PT"),
        Cow::Borrowed("RO"),
        Cow::Borrowed("SK"),
        Cow::Borrowed("SI"),
        Cow::Borrowed("ES"),
        Cow::Borrowed("SE"),
        Cow::Borrowed("IS"),
        Cow::Borrowed("LI"),
        Cow::Borrowed("NO"),
        Cow::Borrowed("GB"),
        Cow::Borrowed("CH"),
        Cow::Borrowed("AX"),
        Cow::Borrowed("GF"),
        Cow::Borrowed("GP"),
        Cow::Borrowed("MQ"),
        Cow::Borrowed("RE"),
        Cow::Borrowed("YT"),
        Cow::Borrowed("MF"),
        Cow::Borrowed("SJ"),
        Cow::Borrowed("GI"),
        Cow::Borrowed("GG"),
        Cow::Borrowed("JE"),
        Cow::Borrowed("IM"),
    ];

    /// The US states whose comprehensive consumer privacy law is in force in 2026, by the
    /// date it took effect: California, Virginia, Colorado, Connecticut, Utah, Oregon, Texas,
    /// Montana, Delaware, Iowa, Nebraska, New Hampshire, New Jersey, Tennessee, Minnesota,
    /// Maryland, Indiana, Kentucky, Rhode Island. The default `consent.opt_out_regions`.
    /// Florida (GPP's `usfl`) is left out: its law reaches only businesses with over a billion
    /// dollars of revenue; a publisher it covers adds `US-FL`.
    pub const US_STATES_2026: [Text; 19] = [
        Cow::Borrowed("US-CA"),
        Cow::Borrowed("US-VA"),
        Cow::Borrowed("US-CO"),
        Cow::Borrowed("US-CT"),
        Cow::Borrowed("US-UT"),
        Cow::Borrowed("US-OR"),
        Cow::Borrowed("US-TX"),
        Cow::Borrowed("US-MT"),
        Cow::Borrowed("US-DE"),
        Cow::Borrowed("US-IA"),
        Cow::Borrowed("US-NE"),
        Cow::Borrowed("US-NH"),
        Cow::Borrowed("US-NJ"),
        Cow::Borrowed("US-TN"),
        Cow::Borrowed("US-MN"),
        Cow::Borrowed("US-MD"),
        Cow::Borrowed("US-IN"),
        Cow::Borrowed("US-KY"),
        Cow::Borrowed("US-RI"),
    ];

    /// The vendor ID configured for `host` (lowercase): the entry for its longest configured
    /// domain that is `host` itself or a parent of it.
    pub fn vendor_for(&self, host: &str) -> Option<u16> {
        let covers = |d: &str| {
            host == d
                || (host.len() > d.len()
                    && host.ends_with(d)
                    && host.as_bytes()[host.len() - d.len() - 1] == b'.')
        };
        (self.partner_vendors.iter())
            .filter(|p| covers(&p.domain))
            .max_by_key(|p| p.domain.len())
            .map(|p| p.vendor_id)
    }
}

/// A price granularity named in the settings (`auction.price_granularity`): Prebid's named
/// bucket sets. A request's own `ext.prebid.targeting.pricegranularity` (named or custom) wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub enum PriceGranularity {
    /// $0.50 steps to $5.
    Low,
    /// $0.10 steps to $20 (Prebid's default).
    Medium,
    /// $0.01 steps to $20.
    High,
    /// $0.05 to $5, $0.10 to $10, $0.50 to $20.
    Auto,
    /// $0.01 to $3, $0.05 to $8, $0.50 to $20.
    Dense,
}

impl PriceGranularity {
    /// Every granularity, in the order the error message lists them.
    pub const ALL: [PriceGranularity; 5] = [
        PriceGranularity::Low,
        PriceGranularity::Medium,
        PriceGranularity::High,
        PriceGranularity::Auto,
        PriceGranularity::Dense,
    ];

    /// The name as written in the settings and by Prebid (`low`, `medium`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            PriceGranularity::Low => "low",
            PriceGranularity::Medium => "medium",
            PriceGranularity::High => "high",
            PriceGranularity::Auto => "auto",
            PriceGranularity::Dense => "dense",
        }
    }
}

/// How a bidder's winning creative is served (`auction.bidders[].rendering`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub enum Rendering {
    /// `first-party` (the default): the creative's URLs become signed first-party URLs and it
    /// is written into the page's frame by Prebid.js (what it loads through the first-party
    /// proxy is sandboxed there; the markup itself is not).
    FirstParty,
    /// `as-sent`: the markup is given to Prebid.js as the bidder sent it (with
    /// `${AUCTION_PRICE}` substituted), for creatives that build their URLs in running code.
    AsSent,
}

impl Rendering {
    /// Every choice.
    pub const ALL: [Rendering; 2] = [Rendering::FirstParty, Rendering::AsSent];

    /// The choice as written in the settings (`first-party` or `as-sent`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Rendering::FirstParty => "first-party",
            Rendering::AsSent => "as-sent",
        }
    }
}

/// One `[[auction.bidders]]` entry: a demand partner the edge asks for bids directly, with
/// OpenRTB 2.6 over HTTP POST. An upstream Prebid Server is a bidder like any other.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Bidder {
    /// `code`: the Prebid.js bidder code the page names it by (`imp[].ext.prebid.bidder.<code>`)
    /// and the `seat` its bids come back under: 1 to 32 of `A-Z a-z 0-9 _ -`, unique.
    pub code: Text,
    /// `endpoint`: its OpenRTB URL, `http://` or `https://`, host, optional port, path and
    /// query (no user info, no fragment). Only ever from the settings, never from a request.
    pub endpoint: Text,
    /// Scheme of `endpoint`.
    pub scheme: Scheme,
    /// `host:port` of `endpoint`: where its backend connects.
    pub address: Text,
    /// Host name of `endpoint` (no port): TLS SNI and certificate checks.
    pub tls_host: Text,
    /// The `Host` header and signed `@authority`: the host, with the port when it is not the
    /// scheme's default.
    pub authority: Text,
    /// Path and query of `endpoint` (`/` when it has none).
    pub path_and_query: Text,
    /// `vendor_id`: its IAB TCF Global Vendor List ID (1 to 65535). Without one, a bidder is
    /// never asked for a reader in an opt-in location.
    pub vendor_id: Option<u16>,
    /// `timeout_ms`: the most this bidder is given (default, and at most, `auction.timeout_ms`).
    pub timeout_ms: u32,
    /// `signed`: sign its requests with RFC 9421 and the service's current key (default
    /// `false`).
    pub signed: bool,
    /// `rendering`: how its winning creatives are served (default [`Rendering::FirstParty`]).
    pub rendering: Rendering,
    /// `eid_source`: the domain its own reader IDs go under in `user.eids` (the EID's
    /// `source`, e.g. `adnxs.com`). A bidder with one is a partner of the ID graph
    /// ([`Ids`]); without one (the default) the graph holds nothing for it.
    pub eid_source: Option<Text>,
    /// `sync_token_key`: the key, in `ids.secret_store`, of the bearer token this partner
    /// pushes its IDs with (`POST /_ts/ids/sync`). Needs `eid_source`; without it (the
    /// default) the partner cannot push.
    pub sync_token_key: Option<Text>,
    /// `id_path`: the path (and query) of this partner's ID endpoint on the host of its
    /// `endpoint` (same backend, TLS and signing). Where it is set, a page view of a returning
    /// reader (an edge ID their cookie brought) whose entry lacks this partner's ID, and whose
    /// consent allows the partner, makes the edge ask it once in the background, after the
    /// page has left (at most once per reader per
    /// `ids.ask_interval_hours`). Needs `eid_source`; without it (the default) the edge never
    /// asks this partner.
    pub id_path: Option<Text>,
}

/// The partner-ID graph (`[ids]` section): each reader's IDs at the ad partners (the bidders
/// with an `eid_source`), kept per edge ID in a Fastly KV Store, pushed by the partners server
/// to server (`POST /_ts/ids/sync`), and sent to bidders in `user.eids` where the reader's
/// consent allows. Only the stores' and keys' names are settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Ids {
    /// `ids.enabled`: keep the graph (default `true`; it holds nothing until a bidder has an
    /// `eid_source`). `false`: the sync route answers `404` and nothing is read or written.
    pub enabled: bool,
    /// `ids.kv_store`: the Fastly KV Store holding one entry per edge ID (default
    /// `ts_partner_ids`).
    pub kv_store: Text,
    /// `ids.secret_store`: the Fastly Secret Store holding the partners' sync tokens (default
    /// `ts_ids`). Read at run time, never compiled in.
    pub secret_store: Text,
    /// `ids.ttl_days`: how long a partner's ID is kept after it was last pushed, and an entry
    /// after its last write (default 30, 1 to 395).
    pub ttl_days: u32,
    /// `ids.max_batch`: the most pairs one sync may carry (default 100, 1 to 1000); a larger
    /// batch is refused whole (`413`).
    pub max_batch: u32,
    /// `ids.max_pairs_per_minute`: the most pairs one partner may push per minute, counted per
    /// Fastly POP and approximate under concurrent syncs (default 6000, 1 to 1,000,000, at
    /// least `ids.max_batch`); a sync past it is refused whole (`429`, with `Retry-After`) and
    /// changes nothing.
    pub max_pairs_per_minute: u32,
    /// `ids.ask_interval_hours`: how long after asking a partner's ID endpoint for a reader the
    /// edge waits before asking it for that reader again (default 24, 1 to 8760).
    pub ask_interval_hours: u32,
}

/// Server-side auctions (`[auction]` section): `POST /_ts/openrtb2/auction`, the endpoint
/// Prebid.js's `prebidServerBidAdapter` is pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Auction {
    /// `auction.enabled`: answer the auction endpoint (default `true`). `false` answers `404`.
    pub enabled: bool,
    /// `auction.timeout_ms`: the longest an auction runs, whatever the request's `tmax` asks
    /// (default 1000, 10 to 10000).
    pub timeout_ms: u32,
    /// `auction.margin_ms`: what the edge keeps of the request's `tmax` for its own work and
    /// the answer's trip back (default 50, at most 1000).
    pub margin_ms: u32,
    /// `auction.price_granularity`: the buckets of `hb_pb` when a request names none (default
    /// [`PriceGranularity::Medium`]).
    pub price_granularity: PriceGranularity,
    /// `auction.currency`: the one currency bids are accepted in, ISO 4217 (default `USD`);
    /// a bid in another is dropped with a reason.
    pub currency: Text,
    /// `auction.bidders`: the demand partners, in the order written (default none).
    pub bidders: Cow<'static, [Bidder]>,
    /// `auction.navigation`: start an auction for the slots of a page as the page is asked
    /// for, and write its bids before `</body>` (default `true`; it does nothing until
    /// `auction.slots` names a slot). `false`: slots are asked for only by the page's own
    /// Prebid.js, through the auction endpoint.
    pub navigation: bool,
    /// `auction.navigation_timeout_ms`: the `tmax` of a navigation's auction, from which
    /// `auction.margin_ms` is kept like any request's (default 500, or `auction.timeout_ms`
    /// when smaller; 10 to `auction.timeout_ms`). The page streams meanwhile; only its last
    /// bytes (from `</body>`) wait for the bids.
    pub navigation_timeout_ms: u32,
    /// `auction.origin_first_within_ms`: how long a navigation waits for the origin's head
    /// before asking its bidders (default 1, 0 to 100). An origin that answers within this
    /// has the page's first bytes sent first and the bidders asked after them (asking costs
    /// a fraction of a millisecond per bidder, which the first byte would otherwise pay):
    /// half a millisecond after them where the page streams on, at once where they are
    /// everything before `</body>`; a slower origin has its bidders asked while it thinks,
    /// at most this much later than at once. `0` asks them as the origin is asked.
    pub origin_first_within_ms: u32,
    /// `auction.bots`: `User-Agent` substrings, compared ignoring ASCII case, whose requests
    /// start no navigation auction (default [`Auction::DEFAULT_BOTS`]).
    pub bots: Cow<'static, [Text]>,
    /// `auction.slots`: the ad slots known at the edge, in the order written (default none).
    pub slots: Cow<'static, [Slot]>,
}

impl Auction {
    /// The default `auction.bots`: the crawlers of the search engines, social networks, SEO
    /// tools and AI companies that identify themselves, ad-quality crawlers, and headless or
    /// audit browsers. None of them is a reader an ad could be shown to.
    pub const DEFAULT_BOTS: [Text; 26] = [
        Cow::Borrowed("Googlebot"),
        Cow::Borrowed("Google-InspectionTool"),
        Cow::Borrowed("AdsBot-Google"),
        Cow::Borrowed("Mediapartners-Google"),
        Cow::Borrowed("bingbot"),
        Cow::Borrowed("Applebot"),
        Cow::Borrowed("DuckDuckBot"),
        Cow::Borrowed("YandexBot"),
        Cow::Borrowed("Baiduspider"),
        Cow::Borrowed("Slurp"),
        Cow::Borrowed("facebookexternalhit"),
        Cow::Borrowed("Twitterbot"),
        Cow::Borrowed("LinkedInBot"),
        Cow::Borrowed("Slackbot"),
        Cow::Borrowed("Discordbot"),
        Cow::Borrowed("AhrefsBot"),
        Cow::Borrowed("SemrushBot"),
        Cow::Borrowed("MJ12bot"),
        Cow::Borrowed("DotBot"),
        Cow::Borrowed("PetalBot"),
        Cow::Borrowed("GPTBot"),
        Cow::Borrowed("ClaudeBot"),
        Cow::Borrowed("CCBot"),
        Cow::Borrowed("Bytespider"),
        Cow::Borrowed("HeadlessChrome"),
        Cow::Borrowed("Chrome-Lighthouse"),
    ];
}

/// A width and height in CSS pixels: one size an ad slot takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Size {
    /// Width, 1 to 10000.
    pub w: u32,
    /// Height, 1 to 10000.
    pub h: u32,
}

/// One bidder of a slot: its code and the params the page would give it in Prebid.js.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct SlotBidder {
    /// The code of an `[[auction.bidders]]` entry, exactly as written there.
    pub code: Text,
    /// Its params (`imp[].ext.prebid.bidder.<code>`), as the text of a JSON object: the
    /// TOML table written, converted once at load (a constant cannot hold a JSON value).
    pub params: Text,
}

/// One `[[auction.slots]]` entry: an ad slot the edge knows, the shape of a Prebid.js ad
/// unit. A page whose path matches one of its `paths` gets its bids without asking.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Slot {
    /// `id`: the id of the page's element the ad goes in, also the impression's `imp.id`
    /// (the ad unit code): 1 to 64 of `A-Z a-z 0-9 _ - . :`, unique.
    pub id: Text,
    /// `paths`: the pages it is on. Each is an exact path (`/ads.html`) or a prefix ending in
    /// `*` (`/news/*`, `/*`); matched against the path alone, without the query.
    pub paths: Cow<'static, [Text]>,
    /// `sizes`: the banner sizes it takes, in the order written (at least one).
    pub sizes: Cow<'static, [Size]>,
    /// `bidders`: who is asked for it, with their params, in the order written.
    pub bidders: Cow<'static, [SlotBidder]>,
    /// `floor`: the lowest price accepted, in millionths of `auction.currency` (CPM), 0 for
    /// none (default). Written as a number of the currency's units (`0.5`).
    pub floor_micros: u32,
}

/// All settings of the service.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "load", derive(databake::Bake), databake(path = trusted_server_settings))]
pub struct Settings {
    /// The `[publisher]` section.
    pub publisher: Publisher,
    /// The `[integrations.*]` sections.
    pub integrations: Integrations,
    /// The `[identity]` section.
    pub identity: Identity,
    /// The `[signing]` section.
    pub signing: Signing,
    /// The `[first_party]` section.
    pub first_party: FirstParty,
    /// The `[script]` section.
    pub script: Script,
    /// The `[admin]` section.
    pub admin: Admin,
    /// The `[logging]` section.
    pub logging: Logging,
    /// The `[delivery]` section.
    pub delivery: Delivery,
    /// The `[consent]` section.
    pub consent: Consent,
    /// The `[auction]` section.
    pub auction: Auction,
    /// The `[ids]` section.
    pub ids: Ids,
    /// The `[response_headers]` section, sorted by name (file and environment merged).
    pub response_headers: Cow<'static, [HeaderSetting]>,
}

impl Settings {
    /// Defaults for every optional key. `domain` and `origin_url` have no sensible default and
    /// must be set; these placeholders fail validation.
    pub const DEFAULT: Settings = Settings {
        publisher: Publisher {
            domain: Cow::Borrowed(""),
            origin_url: Cow::Borrowed(""),
            origin_scheme: Scheme::Http,
            origin_address: Cow::Borrowed(""),
            origin_tls_host: Cow::Borrowed(""),
            origin_host: Cow::Borrowed(""),
            origin_host_name: Cow::Borrowed(""),
            origin_port: None,
            cookie_domain: Cow::Borrowed(""),
            streaming: true,
            connect_timeout_ms: 5_000,
            first_byte_timeout_ms: 15_000,
            between_bytes_timeout_ms: 10_000,
        },
        integrations: Integrations {
            nextjs: Nextjs {
                enabled: true,
                max_held_bytes: 10 << 20,
            },
        },
        identity: Identity {
            enabled: true,
            secret_store: Cow::Borrowed("ts_identity"),
            secret_key: Cow::Borrowed("ec_hmac_key"),
        },
        signing: Signing {
            enabled: true,
            secret_store: Cow::Borrowed("ts_signing"),
            current_kid: Cow::Borrowed("ts-signing-1"),
            previous_kids: Cow::Borrowed(&[]),
        },
        first_party: FirstParty {
            allowed_domains: Cow::Borrowed(&[]),
            allowed_ports: Cow::Borrowed(&[]),
            resolve: Cow::Borrowed(&[]),
            secret_store: Cow::Borrowed("ts_first_party"),
            token_key: Cow::Borrowed("url_hmac_key"),
            sign_ttl_secs: 300,
            page_ttl_secs: 3600,
        },
        script: Script { inject: true },
        admin: Admin {
            enabled: true,
            secret_store: Cow::Borrowed("ts_admin"),
            user_key: Cow::Borrowed("admin_user"),
            password_key: Cow::Borrowed("admin_password"),
        },
        logging: Logging {
            level: LogLevel::Info,
        },
        delivery: Delivery {
            server_timing: true,
            compression: Compression::Wasm,
            early_hints: true,
        },
        consent: Consent {
            opt_in_countries: Cow::Borrowed(&Consent::DEFAULT_OPT_IN_COUNTRIES),
            opt_out_regions: Cow::Borrowed(&Consent::US_STATES_2026),
            unknown: ConsentRule::OptIn,
            purposes: Cow::Borrowed(&[1]),
            publisher_segment: false,
            gpc_refuses_opt_in: true,
            partner_vendors: Cow::Borrowed(&[]),
        },
        auction: Auction {
            enabled: true,
            timeout_ms: 1_000,
            margin_ms: 50,
            price_granularity: PriceGranularity::Medium,
            currency: Cow::Borrowed("USD"),
            bidders: Cow::Borrowed(&[]),
            navigation: true,
            navigation_timeout_ms: 500,
            origin_first_within_ms: 1,
            bots: Cow::Borrowed(&Auction::DEFAULT_BOTS),
            slots: Cow::Borrowed(&[]),
        },
        ids: Ids {
            enabled: true,
            kv_store: Cow::Borrowed("ts_partner_ids"),
            secret_store: Cow::Borrowed("ts_ids"),
            ttl_days: 30,
            max_batch: 100,
            max_pairs_per_minute: 6_000,
            ask_interval_hours: 24,
        },
        response_headers: Cow::Borrowed(&[]),
    };

    /// Rust source for a `Settings` expression equal to `self`, built only from `const`
    /// constructors, so `build.rs` can emit `pub static SETTINGS: Settings = <this>;`.
    ///
    /// The expression is derived from the types (`#[derive(Bake)]`), so a new field is baked
    /// without touching this. The baked paths name the `alloc` crate (`alloc::borrow::Cow`),
    /// which a `std` crate has no name for: the expression is a block that declares it first.
    /// The text is deterministic, and two different values never give the same text: the
    /// embedded settings' fingerprint hashes it.
    #[cfg(feature = "load")]
    pub fn to_rust_expr(&self) -> String {
        let env = databake::CrateEnv::default();
        let expr = databake::Bake::bake(self, &env);
        databake::quote! { { extern crate alloc; #expr } }.to_string()
    }
}
