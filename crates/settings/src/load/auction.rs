//! `[auction]`: server-side auctions. The deadline cap and the edge's margin, the default price
//! granularity and currency, and the bidders (`[[auction.bidders]]`), whose endpoints are split
//! once here into what a backend needs (scheme, address, TLS host, authority, path).
//!
//! A bidder's key is written `auction.bidders[I].KEY`, `I` counted from 0 in the order the
//! bidders are written; an error in one names its own line when the file wrote it, else where
//! `auction.bidders` came from (its line, or `TRUSTED_SERVER__AUCTION__BIDDERS`).

use std::borrow::Cow;
use std::net::Ipv4Addr;

use serde::Deserialize;
use toml::{Table, Value};

use super::publisher::{is_host, split_authority};
use super::secrets::is_store_name;
use super::values::{shown, Composite, Flag, Int, Named, OneOf};
use super::{origin_of, Context, LoadError, Origin, Section};
use crate::{Auction, Bidder, PriceGranularity, Rendering, Scheme, Settings, Text};

mod slots;

/// The most bidders an auction may name (the core's `MAX_BIDDERS`).
const MAX_BIDDERS: usize = 32;

/// The shortest timeout, for the auction and for a bidder.
const MIN_TIMEOUT_MS: u32 = 10;

/// `[auction]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct AuctionFile {
    enabled: Option<Flag>,
    timeout_ms: Option<Int<MIN_TIMEOUT_MS, 10_000>>,
    margin_ms: Option<Int<0, 1_000>>,
    price_granularity: Option<OneOf<PriceGranularity>>,
    currency: Option<String>,
    /// An array of tables: `[[auction.bidders]]` in the file, a TOML array of inline tables
    /// in `TRUSTED_SERVER__AUCTION__BIDDERS`.
    bidders: Option<Composite>,
    navigation: Option<Flag>,
    navigation_timeout_ms: Option<Int<MIN_TIMEOUT_MS, 10_000>>,
    origin_first_within_ms: Option<Int<0, 100>>,
    /// An array of strings.
    bots: Option<Composite>,
    /// An array of tables, as `bidders`.
    slots: Option<Composite>,
}

impl Named for PriceGranularity {
    fn all() -> &'static [Self] {
        &PriceGranularity::ALL
    }
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Section for AuctionFile {
    type Valid = Auction;

    fn validate(self, cx: &mut Context<'_>) -> Result<Auction, LoadError> {
        let d = Settings::DEFAULT.auction;
        let timeout_ms = self.timeout_ms.map_or(d.timeout_ms, |i| i.0);
        let bidders = bidders(cx, self.bidders, timeout_ms)?;
        let at = At {
            cx,
            key: "auction.slots",
        };
        let slots = slots::slots(&at, self.slots, &bidders)?;
        let navigation_timeout_ms = match self.navigation_timeout_ms {
            None => d.navigation_timeout_ms.min(timeout_ms),
            Some(Int(n)) if n <= timeout_ms => n,
            Some(Int(n)) => {
                let problem = format!("{n} is more than auction.timeout_ms ({timeout_ms})");
                return Err(cx.error("auction.navigation_timeout_ms", &problem));
            }
        };
        Ok(Auction {
            enabled: self.enabled.map_or(d.enabled, |f| f.0),
            timeout_ms,
            margin_ms: self.margin_ms.map_or(d.margin_ms, |i| i.0),
            price_granularity: self.price_granularity.map_or(d.price_granularity, |g| g.0),
            currency: currency(cx, self.currency)?.map_or(d.currency, Cow::Owned),
            bidders: Cow::Owned(bidders),
            navigation: self.navigation.map_or(d.navigation, |f| f.0),
            navigation_timeout_ms,
            origin_first_within_ms: (self.origin_first_within_ms)
                .map_or(d.origin_first_within_ms, |i| i.0),
            bots: bots(cx, self.bots)?.map_or(d.bots, Cow::Owned),
            slots: Cow::Owned(slots),
        })
    }
}

/// `auction.currency`: three upper-case ASCII letters (ISO 4217); `None` when unset.
fn currency(cx: &Context<'_>, value: Option<String>) -> Result<Option<String>, LoadError> {
    match value {
        Some(code) if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) => {
            let problem =
                format!("expected three upper-case letters (ISO 4217) like \"USD\", got {code:?}");
            Err(cx.error("auction.currency", &problem))
        }
        other => Ok(other),
    }
}

/// The most `auction.bots` entries.
const MAX_BOTS: usize = 64;

/// The longest `auction.bots` entry.
const MAX_BOT_LEN: usize = 64;

/// `auction.bots`: 1 to [`MAX_BOT_LEN`] printable ASCII characters each, not starting or
/// ending with a space, at most [`MAX_BOTS`]; `None` when unset. An entry's error names it
/// (`auction.bots[2]`) where `auction.bots` came from.
fn bots(cx: &Context<'_>, value: Option<Composite>) -> Result<Option<Vec<Text>>, LoadError> {
    let key = "auction.bots";
    let items = match value.map(|c| c.0) {
        None => return Ok(None),
        Some(Value::Array(items)) if items.len() > MAX_BOTS => {
            let problem = format!("{} entries: at most {MAX_BOTS}", items.len());
            return Err(cx.error(key, &problem));
        }
        Some(Value::Array(items)) => items,
        Some(_) => return Err(cx.error(key, "expected an array of User-Agent substrings")),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        match item {
            Value::String(s)
                if (1..=MAX_BOT_LEN).contains(&s.len())
                    && s.bytes().all(|b| (0x20..0x7f).contains(&b))
                    && s.trim() == s =>
            {
                out.push(Cow::Owned(s));
            }
            other => {
                let problem = format!(
                    "expected 1 to {MAX_BOT_LEN} printable ASCII characters, not starting or \
                     ending with a space, got {}",
                    shown(&other)
                );
                return Err(LoadError {
                    key: format!("{key}[{i}]"),
                    ..cx.error(key, &problem)
                });
            }
        }
    }
    Ok(Some(out))
}

/// Where errors about a list of tables (`auction.bidders`, `auction.slots`) go: the key of an
/// item or of one of its values, and where it came from.
struct At<'c, 'o> {
    cx: &'c Context<'o>,
    /// The list's key.
    key: &'static str,
}

impl At<'_, '_> {
    /// An error at `LIST[index]` (`key` `None`) or `LIST[index].key` (`key` may go deeper:
    /// `paths[0]`). Its origin is the value's own line, else its item's, else that of the
    /// list; a list from the environment is all from its variable.
    fn error(&self, index: usize, key: Option<&str>, problem: &str) -> LoadError {
        let bidder = format!("{}[{index}]", self.key);
        let full = key.map_or_else(|| bidder.clone(), |k| format!("{bidder}.{k}"));
        // `paths[0]` and `bidders.fast` are inside `paths` and `bidders`.
        let field = key.map(|k| format!("{bidder}.{}", k.split(['[', '.']).next().unwrap_or(k)));
        let origins = self.cx.origins;
        let origin = if self.cx.is_overridden(self.key) {
            origin_of(origins, self.key)
        } else {
            (origin_of(origins, &full))
                .or_else(|| origin_of(origins, field.as_deref()?))
                .or_else(|| origin_of(origins, &bidder))
                .or_else(|| self.whole_origin())
        };
        LoadError {
            key: full,
            problem: problem.to_owned(),
            origin,
        }
    }

    /// An error about the list as a whole.
    fn whole(&self, problem: &str) -> LoadError {
        LoadError {
            origin: self.whole_origin(),
            ..self.cx.error(self.key, problem)
        }
    }

    /// Where the list came from: its variable or its line, else the first item's
    /// (`[[auction.bidders]]` headers may give the list itself no line).
    fn whole_origin(&self) -> Option<Origin> {
        let origins = self.cx.origins;
        origin_of(origins, self.key).or_else(|| origin_of(origins, &format!("{}[0]", self.key)))
    }
}

/// The keys a bidder table accepts.
const BIDDER_KEYS: [&str; 9] = [
    "code",
    "endpoint",
    "vendor_id",
    "timeout_ms",
    "signed",
    "rendering",
    "eid_source",
    "sync_token_key",
    "id_path",
];

/// `auction.bidders`: an array of bidder tables (none when unset), at most [`MAX_BIDDERS`],
/// codes unique ignoring case, in the order written.
fn bidders(
    cx: &Context<'_>,
    value: Option<Composite>,
    auction_timeout_ms: u32,
) -> Result<Vec<Bidder>, LoadError> {
    let at = At {
        cx,
        key: "auction.bidders",
    };
    let items = match value.map(|c| c.0) {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(at.whole(
                "expected an array of bidder tables ([[auction.bidders]] in the file, \
                 '[{ code = \"…\", endpoint = \"…\" }]' in the environment)",
            ))
        }
    };
    if items.len() > MAX_BIDDERS {
        let problem = format!("{} bidders: at most {MAX_BIDDERS}", items.len());
        return Err(at.whole(&problem));
    }
    let mut out: Vec<Bidder> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let Value::Table(table) = item else {
            let problem = format!(
                "{}: expected a table of {}",
                shown(&item),
                BIDDER_KEYS.join(", ")
            );
            return Err(at.error(index, None, &problem));
        };
        let bidder = bidder(&at, index, table, auction_timeout_ms)?;
        if let Some(first) = out
            .iter()
            .position(|b| b.code.eq_ignore_ascii_case(&bidder.code))
        {
            let problem = format!(
                "{:?} is also the code of auction.bidders[{first}] (codes are compared \
                 ignoring case)",
                bidder.code
            );
            return Err(at.error(index, Some("code"), &problem));
        }
        // A partner's token is its own: a shared one would let either write as the other.
        let token = bidder.sync_token_key.as_ref();
        if let Some(first) =
            (out.iter()).position(|b| token.is_some() && b.sync_token_key.as_ref() == token)
        {
            let problem = format!(
                "{:?} is also the sync_token_key of auction.bidders[{first}] (each partner \
                 pushes with its own token)",
                token.map(|t| &**t).unwrap_or_default()
            );
            return Err(at.error(index, Some("sync_token_key"), &problem));
        }
        out.push(bidder);
    }
    Ok(out)
}

/// One bidder table, checked key by key.
fn bidder(
    at: &At<'_, '_>,
    index: usize,
    mut table: Table,
    auction_timeout_ms: u32,
) -> Result<Bidder, LoadError> {
    if let Some(unknown) = table.keys().find(|k| !BIDDER_KEYS.contains(&k.as_str())) {
        let problem = format!("unknown key (a bidder has {})", BIDDER_KEYS.join(", "));
        return Err(at.error(index, Some(unknown), &problem));
    }
    let error = |key: &str, problem: &str| at.error(index, Some(key), problem);
    let code = match table.remove("code") {
        None => return Err(error("code", "is required")),
        Some(Value::String(code)) if is_code(&code) => code,
        Some(other) => {
            let problem = format!(
                "expected a bidder code of 1 to 32 of A-Z a-z 0-9 _ -, got {}",
                shown(&other)
            );
            return Err(error("code", &problem));
        }
    };
    let (url, endpoint) = match table.remove("endpoint") {
        None => return Err(error("endpoint", "is required")),
        Some(Value::String(url)) => match Endpoint::parse(&url) {
            Ok(endpoint) => (url, endpoint),
            Err(problem) => return Err(error("endpoint", &format!("{url:?} {problem}"))),
        },
        Some(other) => {
            let problem = format!("expected an http:// or https:// URL, got {}", shown(&other));
            return Err(error("endpoint", &problem));
        }
    };
    let vendor_id = match table.remove("vendor_id") {
        None => None,
        Some(Value::Integer(n)) if (1..=65_535).contains(&n) => u16::try_from(n).ok(),
        Some(other) => {
            let problem = format!(
                "expected a TCF vendor ID (1 to 65535), got {}",
                shown(&other)
            );
            return Err(error("vendor_id", &problem));
        }
    };
    let range = i64::from(MIN_TIMEOUT_MS)..=i64::from(auction_timeout_ms);
    let timeout_ms = match table.remove("timeout_ms") {
        None => auction_timeout_ms,
        Some(Value::Integer(n)) if range.contains(&n) => u32::try_from(n).unwrap_or_default(),
        Some(Value::Integer(n)) => {
            let problem = format!(
                "{n} is outside {MIN_TIMEOUT_MS}..={auction_timeout_ms} (at most \
                 auction.timeout_ms)"
            );
            return Err(error("timeout_ms", &problem));
        }
        Some(other) => {
            let problem = format!("expected an integer, got {}", shown(&other));
            return Err(error("timeout_ms", &problem));
        }
    };
    let signed = match table.remove("signed") {
        None => false,
        Some(Value::Boolean(b)) => b,
        Some(other) => {
            let problem = format!("expected true or false, got {}", shown(&other));
            return Err(error("signed", &problem));
        }
    };
    let rendering = match table.remove("rendering") {
        None => Rendering::FirstParty,
        Some(value) => {
            let found = match &value {
                Value::String(s) => Rendering::ALL.iter().find(|r| r.as_str() == s),
                _ => None,
            };
            let Some(rendering) = found else {
                let names: Vec<&str> = Rendering::ALL.iter().map(|r| r.as_str()).collect();
                let problem = format!(
                    "expected one of {}, got {}",
                    names.join(", "),
                    shown(&value)
                );
                return Err(error("rendering", &problem));
            };
            *rendering
        }
    };
    let eid_source = match table.remove("eid_source") {
        None => None,
        Some(Value::String(source)) if is_eid_source(&source) => Some(Cow::Owned(source)),
        Some(other) => {
            let problem = format!(
                "expected a lowercase domain name (the EID source, e.g. \"adnxs.com\"), got {}",
                shown(&other)
            );
            return Err(error("eid_source", &problem));
        }
    };
    let sync_token_key = match table.remove("sync_token_key") {
        None => None,
        Some(_) if eid_source.is_none() => {
            return Err(error(
                "sync_token_key",
                "needs eid_source (only a partner of the ID graph pushes IDs)",
            ))
        }
        Some(Value::String(key)) if is_store_name(&key) => Some(Cow::Owned(key)),
        Some(other) => {
            let problem = format!(
                "expected a secret name (1 to 255 letters, digits, dashes, underscores or \
                 periods), got {}",
                shown(&other)
            );
            return Err(error("sync_token_key", &problem));
        }
    };
    let id_path = match table.remove("id_path") {
        None => None,
        Some(_) if eid_source.is_none() => {
            return Err(error(
                "id_path",
                "needs eid_source (only a partner of the ID graph is asked for IDs)",
            ))
        }
        Some(Value::String(path)) => match id_path_problem(&path) {
            None => Some(Cow::Owned(path)),
            Some(problem) => return Err(error("id_path", &format!("{path:?} {problem}"))),
        },
        Some(other) => {
            let problem = format!("expected a path starting with /, got {}", shown(&other));
            return Err(error("id_path", &problem));
        }
    };
    Ok(Bidder {
        code: Cow::Owned(code),
        endpoint: Cow::Owned(url),
        scheme: endpoint.scheme,
        address: Cow::Owned(endpoint.address),
        tls_host: Cow::Owned(endpoint.host),
        authority: Cow::Owned(endpoint.authority),
        path_and_query: Cow::Owned(endpoint.path_and_query),
        vendor_id,
        timeout_ms,
        signed,
        rendering,
        eid_source,
        sync_token_key,
        id_path,
    })
}

/// Why `path` cannot be a partner's ID endpoint path (the rest of a sentence starting with
/// it): it must start with one `/`, be at most 2048 bytes of printable ASCII without spaces,
/// and carry no fragment.
fn id_path_problem(path: &str) -> Option<&'static str> {
    if !path.starts_with('/') || path.starts_with("//") {
        return Some("must start with one / (a path on the host of endpoint)");
    }
    if path.len() > 2048 {
        return Some("is longer than 2048 bytes");
    }
    if !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Some("holds a space, a control character or non-ASCII (percent-encode it)");
    }
    if path.contains('#') {
        return Some("holds a fragment");
    }
    None
}

/// An EID source: a lowercase domain name of at least two labels.
fn is_eid_source(source: &str) -> bool {
    is_host(source)
        && source.contains('.')
        && source == source.to_ascii_lowercase()
        && !source.ends_with('.')
        && !(source.rsplit('.').next()).is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
}

/// A bidder code: 1 to 32 of `A-Z a-z 0-9 _ -`.
fn is_code(code: &str) -> bool {
    (1..=32).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A bidder's `endpoint`, split.
#[derive(Debug, PartialEq, Eq)]
struct Endpoint {
    scheme: Scheme,
    /// `host:port`, the port explicit or the scheme's default.
    address: String,
    /// The host, lowercase.
    host: String,
    /// The host, with the port when it is not the scheme's default.
    authority: String,
    /// Path and query, `/` when there is neither.
    path_and_query: String,
}

impl Endpoint {
    /// `http://` or `https://`, a host name or a loopback IPv4 address, an optional port, a
    /// path and query; no user info, no fragment, nothing a URL must percent-encode. The
    /// error completes a sentence that starts with the URL.
    fn parse(url: &str) -> Result<Endpoint, String> {
        if url.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return Err("contains whitespace or a control character".to_owned());
        }
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else {
            return Err("must start with http:// or https://".to_owned());
        };
        if url.contains('#') {
            return Err("has a fragment (#…): an endpoint has none".to_owned());
        }
        let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        if authority.contains('@') {
            return Err(
                "has user info (…@): put credentials elsewhere, never in the URL".to_owned(),
            );
        }
        if let Some(c) = tail.chars().find(|&c| !is_url_char(c)) {
            return Err(format!("contains {c:?}, which a URL must percent-encode"));
        }
        if authority.starts_with('[') {
            return Err("has an IPv6 address: name the host, or use 127.0.0.1".to_owned());
        }
        let Some((host, port)) = split_authority(authority) else {
            return Err(
                "needs a host name (or 127.0.0.1) and an optional port (1 to 65535) after \
                 the scheme"
                    .to_owned(),
            );
        };
        let host = host.to_ascii_lowercase();
        let numeric =
            (host.rsplit('.').next()).is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
        if numeric && !host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback()) {
            return Err(
                "names an IP address: only a loopback address (127.0.0.1) is allowed; name \
                 the host otherwise"
                    .to_owned(),
            );
        }
        let default = scheme.default_port();
        let port = port.unwrap_or(default);
        let authority = if port == default {
            host.clone()
        } else {
            format!("{host}:{port}")
        };
        let path_and_query = match tail {
            "" => "/".to_owned(),
            query if query.starts_with('?') => format!("/{query}"),
            path => path.to_owned(),
        };
        Ok(Endpoint {
            scheme,
            address: format!("{host}:{port}"),
            host,
            authority,
            path_and_query,
        })
    }
}

/// A character a URL's path or query may hold as written (RFC 3986's unreserved and reserved
/// characters, and `%` of an escape).
fn is_url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?[]@!$&'()*+,;=%".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{keys, load, override_variables};

    const MINIMAL: &str = "[publisher]\ndomain = \"www.example.com\"\n\
                           origin_url = \"https://origin.example.com\"\n";

    const VAR: &str = "TRUSTED_SERVER__AUCTION__BIDDERS";

    fn no_env() -> Vec<(String, String)> {
        Vec::new()
    }

    /// The line (from 1) of the first line of `text` that starts with `start`, after
    /// `after` lines.
    fn line(text: &str, after: usize, start: &str) -> usize {
        let found = text.lines().skip(after).position(|l| l.starts_with(start));
        after + found.unwrap_or_else(|| panic!("{start:?} not in {text}")) + 1
    }

    #[test]
    fn defaults_and_every_key_from_the_file() {
        let a = load(MINIMAL, no_env()).unwrap().auction;
        assert_eq!(a, Settings::DEFAULT.auction);
        assert!(a.enabled);
        assert_eq!((a.timeout_ms, a.margin_ms), (1000, 50));
        assert_eq!(a.price_granularity, PriceGranularity::Medium);
        assert_eq!((&*a.currency, a.bidders.len()), ("USD", 0));

        let text = format!(
            "{MINIMAL}\n[auction]\nenabled = false\ntimeout_ms = 800\nmargin_ms = 0\n\
             price_granularity = \"dense\"\ncurrency = \"EUR\"\n\n\
             [[auction.bidders]]\ncode = \"fast\"\nendpoint = \"http://127.0.0.1:8080/bidders/fast\"\n\
             vendor_id = 1001\n\n\
             [[auction.bidders]]\ncode = \"Slow_2\"\nendpoint = \"https://Bids.Example:443/rtb?x=1&y=%20\"\n\
             timeout_ms = 10\nsigned = true\nrendering = \"as-sent\"\n"
        );
        let s = load(&text, no_env()).unwrap();
        let a = &s.auction;
        assert!(!a.enabled);
        assert_eq!((a.timeout_ms, a.margin_ms), (800, 0));
        assert_eq!(a.price_granularity, PriceGranularity::Dense);
        assert_eq!(a.currency, "EUR");
        let fast = Bidder {
            code: "fast".into(),
            endpoint: "http://127.0.0.1:8080/bidders/fast".into(),
            scheme: Scheme::Http,
            address: "127.0.0.1:8080".into(),
            tls_host: "127.0.0.1".into(),
            authority: "127.0.0.1:8080".into(),
            path_and_query: "/bidders/fast".into(),
            vendor_id: Some(1001),
            // The auction's, by default.
            timeout_ms: 800,
            signed: false,
            rendering: Rendering::FirstParty,
            eid_source: None,
            sync_token_key: None,
            id_path: None,
        };
        let slow = Bidder {
            code: "Slow_2".into(),
            endpoint: "https://Bids.Example:443/rtb?x=1&y=%20".into(),
            scheme: Scheme::Https,
            address: "bids.example:443".into(),
            tls_host: "bids.example".into(),
            // The scheme's own port is not repeated.
            authority: "bids.example".into(),
            path_and_query: "/rtb?x=1&y=%20".into(),
            vendor_id: None,
            timeout_ms: 10,
            signed: true,
            rendering: Rendering::AsSent,
            eid_source: None,
            sync_token_key: None,
            id_path: None,
        };
        assert_eq!(&*a.bidders, &[fast.clone(), slow]);
        let expr = s.to_rust_expr();
        for part in [
            "PriceGranularity :: Dense",
            "Rendering :: AsSent",
            "vendor_id : Some (1001u16)",
            "path_and_query : alloc :: borrow :: Cow :: Borrowed (\"/bidders/fast\")",
        ] {
            assert!(expr.contains(part), "{part} not in {expr}");
        }

        // Inline tables in an array are the same thing.
        let inline = format!(
            "{MINIMAL}\n[auction]\ntimeout_ms = 800\nbidders = [\n  {{ code = \"fast\", \
             endpoint = \"http://127.0.0.1:8080/bidders/fast\", vendor_id = 1001 }},\n]\n"
        );
        assert_eq!(&*load(&inline, no_env()).unwrap().auction.bidders, &[fast]);
    }

    #[test]
    fn a_partner_of_the_id_graph_has_its_source_and_its_own_token() {
        let partner = |code: &str, extra: &str| {
            format!(
                "[[auction.bidders]]\ncode = \"{code}\"\nendpoint = \"https://{code}.example/bid\"\n\
                 eid_source = \"{code}.example\"\n{extra}\n"
            )
        };
        let text = format!(
            "{MINIMAL}\n{}{}",
            partner("a", "sync_token_key = \"a_token\""),
            partner("b", "id_path = \"/ids?account=7\"")
        );
        let s = load(&text, no_env()).unwrap();
        let (a, b) = (&s.auction.bidders[0], &s.auction.bidders[1]);
        assert_eq!(
            (a.eid_source.as_deref(), a.sync_token_key.as_deref()),
            (Some("a.example"), Some("a_token"))
        );
        assert_eq!(
            (b.eid_source.as_deref(), b.sync_token_key.as_deref()),
            (Some("b.example"), None)
        );
        assert_eq!(
            (a.id_path.as_deref(), b.id_path.as_deref()),
            (None, Some("/ids?account=7"))
        );
        let expr = s.to_rust_expr();
        assert!(
            expr.contains(
                "sync_token_key : Some (alloc :: borrow :: Cow :: Borrowed (\"a_token\"))"
            ),
            "{expr}"
        );

        // A token name is a secret name, and each partner's own.
        let bad = format!(
            "{MINIMAL}\n{}",
            partner("a", "sync_token_key = \"a token\"")
        );
        let e = load(&bad, no_env()).unwrap_err();
        assert_eq!(e.key, "auction.bidders[0].sync_token_key");
        assert!(e.problem.contains("secret name"), "{e}");
        let shared = format!(
            "{MINIMAL}\n{}{}",
            partner("a", "sync_token_key = \"t\""),
            partner("b", "sync_token_key = \"t\"")
        );
        let e = load(&shared, no_env()).unwrap_err();
        assert_eq!(e.key, "auction.bidders[1].sync_token_key");
        assert!(e.problem.contains("auction.bidders[0]"), "{e}");

        // An ID endpoint is a path on the bidder's own host.
        for (path, problem) in [
            ("\"ids\"", "must start with one /"),
            ("\"//other.example/ids\"", "must start with one /"),
            ("\"/ids?a=b c\"", "a space"),
            ("\"/ids#top\"", "fragment"),
            ("7", "expected a path"),
        ] {
            let bad = format!("{MINIMAL}\n{}", partner("a", &format!("id_path = {path}")));
            let e = load(&bad, no_env()).unwrap_err();
            assert_eq!(e.key, "auction.bidders[0].id_path", "{path}");
            assert!(e.problem.contains(problem), "{path}: {e}");
        }
    }

    #[test]
    fn every_key_from_the_environment() {
        let env = [
            ("TRUSTED_SERVER__AUCTION__ENABLED", "false"),
            ("TRUSTED_SERVER__AUCTION__TIMEOUT_MS", "300"),
            ("TRUSTED_SERVER__AUCTION__MARGIN_MS", "1000"),
            ("TRUSTED_SERVER__AUCTION__PRICE_GRANULARITY", "auto"),
            ("TRUSTED_SERVER__AUCTION__CURRENCY", "GBP"),
            (
                VAR,
                "[{ code = \"fast\", endpoint = \"http://127.0.0.1:8080/bidders/fast\", vendor_id = 1001 }]",
            ),
        ];
        let a = load(MINIMAL, env).unwrap().auction;
        assert!(!a.enabled);
        assert_eq!((a.timeout_ms, a.margin_ms), (300, 1000));
        assert_eq!(a.price_granularity, PriceGranularity::Auto);
        assert_eq!(a.currency, "GBP");
        assert_eq!(a.bidders.len(), 1);
        let b = &a.bidders[0];
        assert_eq!(
            (&*b.code, &*b.address, b.vendor_id),
            ("fast", "127.0.0.1:8080", Some(1001))
        );
        assert_eq!(b.timeout_ms, 300);

        // The variable replaces the file's whole list.
        let text = format!(
            "{MINIMAL}\n[[auction.bidders]]\ncode = \"a\"\nendpoint = \"https://a.example\"\n\
             [[auction.bidders]]\ncode = \"b\"\nendpoint = \"https://b.example\"\n"
        );
        assert_eq!(load(&text, no_env()).unwrap().auction.bidders.len(), 2);
        let a = load(&text, [(VAR, "[]")]).unwrap().auction;
        assert!(a.bidders.is_empty());

        // Watched by build.rs, documented with the other keys (load.rs checks the docs).
        assert!(keys().contains(&"auction.bidders".to_owned()));
        assert!(override_variables().any(|v| v == VAR));
    }

    #[test]
    fn each_auction_mistake_names_its_key_and_line() {
        for bad in [
            "enabled = \"yes\"",
            "timeout_ms = 9",
            "timeout_ms = 10001",
            "timeout_ms = \"soon\"",
            "margin_ms = 1001",
            "margin_ms = -1",
            "price_granularity = \"Medium\"",
            "price_granularity = \"custom\"",
            "price_granularity = 1",
            "currency = \"usd\"",
            "currency = \"US\"",
            "currency = \"USDT\"",
            "currency = \"ÜSD\"",
            "currency = 840",
            "bidders = 1",
            "bidders = \"fast\"",
            "bidders = { code = \"fast\" }",
            "bidder = []",
        ] {
            let text = format!("{MINIMAL}\n[auction]\n{bad}\n");
            let e = load(&text, no_env()).unwrap_err();
            let key = format!("auction.{}", bad.split(' ').next().unwrap());
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (key.as_str(), &Some(Origin::Line(6))),
                "{bad}: {e}"
            );
        }
        let e = load(MINIMAL, [("TRUSTED_SERVER__AUCTION__CURRENCY", "eur")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid setting `auction.currency` from TRUSTED_SERVER__AUCTION__CURRENCY: \
             expected three upper-case letters (ISO 4217) like \"USD\", got \"eur\""
        );
    }

    /// The second of two bidders written as `[[auction.bidders]]` with `lines` in its table,
    /// and the first as an inline table in the variable with `entry` in its braces.
    fn second_bidder(lines: &str) -> String {
        format!(
            "{MINIMAL}\n[auction]\ntimeout_ms = 500\n\n[[auction.bidders]]\ncode = \"first\"\n\
             endpoint = \"https://first.example/bid\"\n\n[[auction.bidders]]\n{lines}\n"
        )
    }

    #[test]
    fn each_bidder_mistake_names_its_key_and_origin() {
        let ok = "code = \"second\"\nendpoint = \"https://second.example/bid\"";
        assert_eq!(
            load(&second_bidder(ok), no_env())
                .unwrap()
                .auction
                .bidders
                .len(),
            2
        );
        // (a line of the second bidder's table, its key, a word of the problem)
        let cases = [
            ("colour = \"red\"", "colour", "unknown key"),
            ("Code = \"x\"", "Code", "unknown key"),
            ("code = \"\"", "code", "1 to 32"),
            ("code = \"a.b\"", "code", "1 to 32"),
            ("code = \"a b\"", "code", "1 to 32"),
            (
                "code = \"abcdefghijklmnopqrstuvwxyz0123456\"",
                "code",
                "1 to 32",
            ),
            ("code = 7", "code", "got 7"),
            ("code = \"FIRST\"", "code", "auction.bidders[0]"),
            (
                "endpoint = \"ftp://h.example/\"",
                "endpoint",
                "http:// or https://",
            ),
            (
                "endpoint = \"HTTP://h.example/\"",
                "endpoint",
                "http:// or https://",
            ),
            (
                "endpoint = \"//h.example/\"",
                "endpoint",
                "http:// or https://",
            ),
            ("endpoint = \"http://user@h/\"", "endpoint", "user info"),
            (
                "endpoint = \"http://u:p@h.example/\"",
                "endpoint",
                "user info",
            ),
            ("endpoint = \"http://h/#f\"", "endpoint", "fragment"),
            (
                "endpoint = \"http://h.example/a b\"",
                "endpoint",
                "whitespace",
            ),
            (
                "endpoint = \" http://h.example/\"",
                "endpoint",
                "whitespace",
            ),
            (
                "endpoint = \"http://h.example/\\t\"",
                "endpoint",
                "whitespace",
            ),
            (
                "endpoint = \"http://h.example/\\u0001\"",
                "endpoint",
                "control",
            ),
            (
                "endpoint = \"http://h.example/é\"",
                "endpoint",
                "percent-encode",
            ),
            (
                "endpoint = \"http://h.example/a\\\"b\"",
                "endpoint",
                "percent-encode",
            ),
            (
                "endpoint = \"http://h.example/{x}\"",
                "endpoint",
                "percent-encode",
            ),
            ("endpoint = \"http://\"", "endpoint", "host name"),
            ("endpoint = \"http:///bid\"", "endpoint", "host name"),
            (
                "endpoint = \"http://h.example:/bid\"",
                "endpoint",
                "host name",
            ),
            (
                "endpoint = \"http://h.example:0/bid\"",
                "endpoint",
                "host name",
            ),
            (
                "endpoint = \"http://h.example:65536/\"",
                "endpoint",
                "host name",
            ),
            (
                "endpoint = \"http://h_x.example/\"",
                "endpoint",
                "host name",
            ),
            ("endpoint = \"http://-h.example/\"", "endpoint", "host name"),
            ("endpoint = \"http://h.example./\"", "endpoint", "host name"),
            ("endpoint = \"http://10.0.0.1/bid\"", "endpoint", "loopback"),
            (
                "endpoint = \"http://169.254.169.254/\"",
                "endpoint",
                "loopback",
            ),
            ("endpoint = \"http://127.0.0.256/\"", "endpoint", "loopback"),
            ("endpoint = \"http://h.123/\"", "endpoint", "loopback"),
            ("endpoint = \"http://[::1]:8080/\"", "endpoint", "IPv6"),
            ("endpoint = 1", "endpoint", "got 1"),
            ("vendor_id = 0", "vendor_id", "1 to 65535"),
            ("vendor_id = 65536", "vendor_id", "1 to 65535"),
            ("vendor_id = \"1001\"", "vendor_id", "1 to 65535"),
            ("timeout_ms = 9", "timeout_ms", "10..=500"),
            // At most the auction's own timeout.
            ("timeout_ms = 501", "timeout_ms", "auction.timeout_ms"),
            ("timeout_ms = \"100\"", "timeout_ms", "an integer"),
            ("signed = \"true\"", "signed", "true or false"),
            ("signed = 1", "signed", "true or false"),
            (
                "rendering = \"as_sent\"",
                "rendering",
                "first-party, as-sent",
            ),
            (
                "rendering = \"First-Party\"",
                "rendering",
                "first-party, as-sent",
            ),
            ("rendering = true", "rendering", "first-party, as-sent"),
            (
                "eid_source = \"Adnxs.com\"",
                "eid_source",
                "lowercase domain",
            ),
            ("eid_source = \"adnxs\"", "eid_source", "lowercase domain"),
            (
                "eid_source = \"adnxs.com.\"",
                "eid_source",
                "lowercase domain",
            ),
            (
                "eid_source = \"10.0.0.1\"",
                "eid_source",
                "lowercase domain",
            ),
            (
                "eid_source = \"https://adnxs.com\"",
                "eid_source",
                "lowercase domain",
            ),
            ("eid_source = 1", "eid_source", "lowercase domain"),
            // Only a partner of the graph pushes IDs.
            (
                "sync_token_key = \"t\"",
                "sync_token_key",
                "needs eid_source",
            ),
            ("id_path = \"/ids\"", "id_path", "needs eid_source"),
        ];
        for (bad, key, problem) in cases {
            // The mistake replaces a key the bidder has, or comes first.
            let replaced = bad.split(' ').next().unwrap();
            let lines: Vec<&str> = ok
                .lines()
                .filter(|l| !l.starts_with(&format!("{replaced} ")))
                .collect();
            let text = second_bidder(&format!("{bad}\n{}", lines.join("\n")));
            let e = load(&text, no_env()).unwrap_err();
            let full = format!("auction.bidders[1].{key}");
            let at = line(&text, 12, bad);
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (full.as_str(), &Some(Origin::Line(at))),
                "{bad}: {e}"
            );
            assert!(e.problem.contains(problem), "{bad}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("invalid setting `{full}` at line {at}: ")),
                "{e}"
            );

            // The same bidder in the variable: named the same, from the variable.
            let entry = text.lines().skip(12).collect::<Vec<_>>().join(", ");
            let env = [(
                VAR,
                format!("[{{ code = \"first\", endpoint = \"https://first.example/bid\" }}, {{ {entry} }}]"),
            )];
            // The file's own bidders (and their lines) are replaced.
            let e = load(&text, env).unwrap_err();
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (full.as_str(), &Some(Origin::Variable(VAR.to_owned()))),
                "{bad}: {e}"
            );
            assert!(e.problem.contains(problem), "{bad}: {e}");
        }
    }

    #[test]
    fn a_missing_or_malformed_bidder_is_named_at_its_table() {
        let text = second_bidder("endpoint = \"https://second.example/bid\"");
        let e = load(&text, no_env()).unwrap_err();
        assert_eq!(e.key, "auction.bidders[1].code");
        assert_eq!(e.problem, "is required");
        // The line of the bidder's `[[auction.bidders]]`.
        assert_eq!(e.origin, Some(Origin::Line(line(&text, 11, "[[auction"))));
        let e = load(&second_bidder("code = \"second\""), no_env()).unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.problem.as_str()),
            ("auction.bidders[1].endpoint", "is required")
        );

        let env = [(
            VAR,
            "[{ code = \"a\", endpoint = \"https://a.example\" }, \"b\"]",
        )];
        let e = load(MINIMAL, env).unwrap_err();
        assert_eq!(e.key, "auction.bidders[1]");
        assert_eq!(e.origin, Some(Origin::Variable(VAR.to_owned())));
        assert!(e.problem.contains("expected a table"), "{e}");
        let env = [(VAR, "[{}]")];
        let e = load(MINIMAL, env).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("invalid setting `auction.bidders[0].code` from {VAR}: is required")
        );
        for bad in ["fast", "{ code = \"fast\" }", "[{ code = \"fast\"", "[1] x"] {
            let e = load(MINIMAL, [(VAR, bad)]).unwrap_err();
            assert_eq!(e.key, "auction.bidders", "{bad}: {e}");
            assert_eq!(
                e.origin,
                Some(Origin::Variable(VAR.to_owned())),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn at_most_32_bidders() {
        let list = |n: usize| {
            let entries: Vec<String> = (0..n)
                .map(|i| format!("{{ code = \"b{i}\", endpoint = \"https://b{i}.example/\" }}"))
                .collect();
            format!("[{}]", entries.join(", "))
        };
        assert_eq!(
            load(MINIMAL, [(VAR, list(32))])
                .unwrap()
                .auction
                .bidders
                .len(),
            32
        );
        let e = load(MINIMAL, [(VAR, list(33))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("invalid setting `auction.bidders` from {VAR}: 33 bidders: at most 32")
        );
        // In the file: the line of the first bidder.
        let tables: String = (0..33)
            .map(|i| {
                format!(
                    "[[auction.bidders]]\ncode = \"b{i}\"\nendpoint = \"https://b{i}.example/\"\n"
                )
            })
            .collect();
        let e = load(&format!("{MINIMAL}{tables}"), no_env()).unwrap_err();
        assert_eq!(
            (e.key.as_str(), &e.origin),
            ("auction.bidders", &Some(Origin::Line(4)))
        );
    }

    #[test]
    fn endpoints_are_split_for_the_backend() {
        // (endpoint, scheme, address, TLS host, authority, path and query)
        let cases = [
            (
                "http://127.0.0.1:8080/bidders/fast",
                Scheme::Http,
                "127.0.0.1:8080",
                "127.0.0.1",
                "127.0.0.1:8080",
                "/bidders/fast",
            ),
            (
                "http://127.1.2.3/",
                Scheme::Http,
                "127.1.2.3:80",
                "127.1.2.3",
                "127.1.2.3",
                "/",
            ),
            (
                "https://bids.example",
                Scheme::Https,
                "bids.example:443",
                "bids.example",
                "bids.example",
                "/",
            ),
            (
                "https://bids.example?k=v",
                Scheme::Https,
                "bids.example:443",
                "bids.example",
                "bids.example",
                "/?k=v",
            ),
            (
                "https://BIDS.example:8443/a/b?c=d&e=%2F",
                Scheme::Https,
                "bids.example:8443",
                "bids.example",
                "bids.example:8443",
                "/a/b?c=d&e=%2F",
            ),
            (
                "http://bids.example:80/x",
                Scheme::Http,
                "bids.example:80",
                "bids.example",
                "bids.example",
                "/x",
            ),
            (
                "http://bids.example:443/x",
                Scheme::Http,
                "bids.example:443",
                "bids.example",
                "bids.example:443",
                "/x",
            ),
            (
                "http://localhost:9000/rtb/@me",
                Scheme::Http,
                "localhost:9000",
                "localhost",
                "localhost:9000",
                "/rtb/@me",
            ),
        ];
        for (url, scheme, address, host, authority, path_and_query) in cases {
            let expected = Endpoint {
                scheme,
                address: address.to_owned(),
                host: host.to_owned(),
                authority: authority.to_owned(),
                path_and_query: path_and_query.to_owned(),
            };
            assert_eq!(Endpoint::parse(url), Ok(expected), "{url}");
        }
    }

    /// `trusted-server.toml` names the demo's three bidders; its commented example is a
    /// valid fourth.
    #[test]
    fn the_demo_files_commented_bidder_is_valid() {
        let demo = include_str!("../../../../trusted-server.toml");
        let a = load(demo, no_env()).unwrap().auction;
        let codes: Vec<&str> = a.bidders.iter().map(|b| &*b.code).collect();
        assert_eq!(codes, ["fast", "slow", "misbehave"]);
        let start = demo
            .find("# [[auction.bidders]]")
            .expect("an example bidder");
        let example: Vec<&str> = demo[start..]
            .lines()
            .map_while(|l| l.strip_prefix("# "))
            .collect();
        let text = format!("{demo}\n{}\n", example.join("\n"));
        let a = load(&text, no_env()).unwrap().auction;
        assert_eq!(a.bidders.len(), 4);
        assert_eq!(
            (&*a.bidders[3].code, a.bidders[3].timeout_ms),
            ("examplebidder", 400)
        );
    }
}
