//! The SSRF policy: which URLs the service may sign, fetch or redirect to. **All** of it is
//! here, so every route (sign, click, proxy, the creative rewriter, each redirect hop) asks the
//! same question and gets the same answer.
//!
//! The URL is read by the `url` crate, which implements the WHATWG URL standard: the same
//! reading a browser makes of the same text (tabs and newlines removed, `\` read as `/`, hosts
//! percent-decoded and IDNA-mapped, IPv4 in decimal, octal, hex and short forms). The policy
//! is applied to *that* host, and what is signed and fetched is that parser's serialisation
//! ([`Target::url`]), never the text as received, so no second reading of the text can reach
//! another host. As a second guard, the authority written in the text must also read the same
//! way to a plain RFC 3986 reader (scheme `://` authority, up to the first `/ ? #`): a URL
//! whose host depends on which parser reads it (`http://a.example\@b.example/`) is
//! [`Refusal::Ambiguous`], not allowed.
//!
//! What cannot be checked here is what a DNS name resolves to: see `docs/first-party.md`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Longest URL accepted, in bytes, as received and once normalised. Longer ones are refused,
/// not truncated.
pub const MAX_URL_LEN: usize = 4096;

/// Ports allowed without being listed in `first_party.allowed_ports`.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// The hosts and ports a first-party URL may point at (`[first_party]` settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Lowercase, without a trailing dot.
    domains: Vec<String>,
    /// Allowed besides [`DEFAULT_PORTS`].
    ports: Vec<u16>,
}

/// A URL the policy allows, as the WHATWG parser reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The normalised URL (the `url` crate's serialisation, trailing dot removed): what is
    /// signed, fetched and redirected to.
    pub url: String,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The host name, lowercase ASCII (IDNA applied), without a trailing dot.
    pub host: String,
    /// The port, explicit or the scheme's default.
    pub port: u16,
    /// Path and query (`/a/b?c=d`), what an HTTP request line carries.
    pub path_and_query: String,
}

/// Why a URL is refused. For the log only: clients get one generic answer whatever the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Longer than [`MAX_URL_LEN`], as received or once normalised (the length given).
    TooLong(usize),
    /// Not a URL to the WHATWG parser (relative, a bad host, a zone ID, …).
    Unparseable(url::ParseError),
    /// A scheme other than `http` or `https`.
    Scheme(String),
    /// A user name or password in the URL.
    Userinfo,
    /// An IP literal in a range the service must never reach.
    Address(IpAddr, AddressKind),
    /// An IP literal in a public range: still refused, since only names are allowed.
    IpLiteral(IpAddr),
    /// The text's authority reads differently to a plain RFC 3986 reader than to the WHATWG
    /// parser (a `\`, tab or newline in it, a percent-encoded or non-ASCII host, a missing
    /// `//`), so the host depends on who reads it.
    Ambiguous,
    /// A host with an empty label (`a..example`, or more than one trailing dot).
    MalformedHost,
    /// The host is not an allowed domain or a subdomain of one (or the list is empty).
    NotAllowed(String),
    /// A port other than 80, 443 and `first_party.allowed_ports`.
    Port(u16),
}

/// The address ranges an IP literal is refused for (besides not being a name at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressKind {
    /// Cloud instance metadata: `169.254.169.254`, `fd00:ec2::254`.
    CloudMetadata,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`, `192.0.0/24`, and IPv6 site-local `fec0::/10`.
    Private,
    /// `169.254/16`, `fe80::/10`.
    LinkLocal,
    /// Carrier-grade NAT, `100.64/10`.
    Cgnat,
    /// Unique-local IPv6, `fc00::/7`.
    UniqueLocal,
    /// `0.0.0.0/8` ("this network"), `::`.
    Unspecified,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `198.18/15` (benchmarking), `240/4` (reserved), `100::/64` (discard-only).
    Reserved,
}

impl AddressKind {
    /// Its name in words (what `Display` writes) and its short stable tag
    /// ([`Refusal::tag`]), side by side so the two never drift apart.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            AddressKind::CloudMetadata => ("cloud metadata", "metadata"),
            AddressKind::Loopback => ("loopback", "loopback"),
            AddressKind::Private => ("private", "private"),
            AddressKind::LinkLocal => ("link-local", "link-local"),
            AddressKind::Cgnat => ("carrier-grade NAT", "cgnat"),
            AddressKind::UniqueLocal => ("unique-local", "unique-local"),
            AddressKind::Unspecified => ("unspecified", "unspecified"),
            AddressKind::Broadcast => ("broadcast", "broadcast"),
            AddressKind::Documentation => ("documentation", "documentation"),
            AddressKind::Multicast => ("multicast", "multicast"),
            AddressKind::Reserved => ("reserved", "reserved"),
        }
    }
}

impl fmt::Display for AddressKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.names().0)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::TooLong(n) => write!(f, "URL of {n} bytes, over {MAX_URL_LEN}"),
            Refusal::Unparseable(e) => write!(f, "not an absolute URL: {e}"),
            Refusal::Scheme(s) => write!(f, "scheme {s:?} is not http or https"),
            Refusal::Userinfo => f.write_str("the URL carries a user name or password"),
            Refusal::Address(ip, kind) => write!(f, "IP literal {ip} is {kind}"),
            Refusal::IpLiteral(ip) => write!(f, "IP literal {ip}: only host names are allowed"),
            Refusal::Ambiguous => {
                f.write_str("the host reads differently to an RFC 3986 and a WHATWG parser")
            }
            Refusal::MalformedHost => f.write_str("the host has an empty label"),
            Refusal::NotAllowed(h) => {
                write!(f, "host {h:?} is not in first_party.allowed_domains")
            }
            Refusal::Port(p) => {
                write!(f, "port {p} is not 80, 443 or in first_party.allowed_ports")
            }
        }
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// A short stable name for the reason (`loopback`, `not-allowed`, …): what the tests'
    /// table names, and a log field.
    pub fn tag(&self) -> &'static str {
        match self {
            Refusal::TooLong(_) => "too-long",
            Refusal::Unparseable(_) => "unparseable",
            Refusal::Scheme(_) => "scheme",
            Refusal::Userinfo => "userinfo",
            Refusal::Address(_, kind) => kind.names().1,
            Refusal::IpLiteral(_) => "ip-literal",
            Refusal::Ambiguous => "ambiguous",
            Refusal::MalformedHost => "malformed-host",
            Refusal::NotAllowed(_) => "not-allowed",
            Refusal::Port(_) => "port",
        }
    }
}

impl TargetPolicy {
    /// A policy allowing `domains` (and their subdomains) on ports 80, 443 and `ports`.
    /// Domains are compared lowercase and without a trailing dot. **An empty list allows
    /// nothing**: the system we replace read an empty allowlist as "allow every host".
    pub fn new<I, S>(domains: I, ports: &[u16]) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let domains = domains
            .into_iter()
            .map(|d| {
                let d = d.as_ref().to_ascii_lowercase();
                d.strip_suffix('.').map(str::to_owned).unwrap_or(d)
            })
            .filter(|d| !d.is_empty())
            .collect();
        TargetPolicy {
            domains,
            ports: ports.to_vec(),
        }
    }

    /// Checks `url` (absolute, as received) against the policy.
    ///
    /// # Errors
    /// The first [`Refusal`] that applies, in this order: length, parse, scheme, userinfo, IP
    /// literal, ambiguity, host shape, allowlist, port.
    pub fn check(&self, url: &str) -> Result<Target, Refusal> {
        if url.len() > MAX_URL_LEN {
            return Err(Refusal::TooLong(url.len()));
        }
        let mut parsed = Url::parse(url).map_err(Refusal::Unparseable)?;
        let scheme = match parsed.scheme() {
            "http" => "http",
            "https" => "https",
            other => return Err(Refusal::Scheme(other.to_owned())),
        };
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(Refusal::Userinfo);
        }
        let host = match parsed.host() {
            // http and https URLs always have a host; refuse rather than assume.
            None => return Err(Refusal::MalformedHost),
            Some(Host::Ipv4(ip)) => return Err(refuse_ip(IpAddr::V4(ip))),
            Some(Host::Ipv6(ip)) => return Err(refuse_ip(IpAddr::V6(ip))),
            Some(Host::Domain(d)) => d.to_owned(),
        };
        let port = parsed
            .port_or_known_default()
            .ok_or(Refusal::MalformedHost)?;
        if !plain_reading_agrees(url, &host, port) {
            return Err(Refusal::Ambiguous);
        }
        let bare = host.strip_suffix('.').unwrap_or(&host);
        if bare.is_empty() || bare.split('.').any(str::is_empty) {
            return Err(Refusal::MalformedHost);
        }
        if !self.allows_host(bare) {
            return Err(Refusal::NotAllowed(bare.to_owned()));
        }
        if !(DEFAULT_PORTS.contains(&port) || self.ports.contains(&port)) {
            return Err(Refusal::Port(port));
        }
        if bare.len() != host.len() {
            // `set_host` re-parses a domain; this one just parsed, so it cannot fail.
            parsed.set_host(Some(bare)).map_err(Refusal::Unparseable)?;
        }
        // Percent-encoding can triple the text: what is signed and fetched is bounded too.
        if parsed.as_str().len() > MAX_URL_LEN {
            return Err(Refusal::TooLong(parsed.as_str().len()));
        }
        let path_and_query = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_owned(),
        };
        Ok(Target {
            url: parsed.into(),
            scheme,
            host: bare.to_owned(),
            port,
            path_and_query,
        })
    }

    /// `host` (lowercase, no trailing dot) is an allowed domain or a subdomain of one.
    pub fn allows_host(&self, host: &str) -> bool {
        self.domains.iter().any(|d| {
            host == d
                || (host.len() > d.len()
                    && host.ends_with(d.as_str())
                    && host.as_bytes()[host.len() - d.len() - 1] == b'.')
        })
    }
}

/// The refusal for an IP literal: its forbidden range, or simply "a literal".
fn refuse_ip(ip: IpAddr) -> Refusal {
    match classify(ip) {
        Some(kind) => Refusal::Address(ip, kind),
        None => Refusal::IpLiteral(ip),
    }
}

/// The forbidden range `ip` is in, if any. IPv6 addresses that embed an IPv4 address
/// (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
/// `2002::/16`) are judged by that address too, since some stacks route them to it.
pub fn classify(ip: IpAddr) -> Option<AddressKind> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressKind> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) => AddressKind::CloudMetadata,
        _ if ip == Ipv4Addr::BROADCAST => AddressKind::Broadcast,
        (0, _, _) => AddressKind::Unspecified,
        (127, _, _) => AddressKind::Loopback,
        (10, _, _) | (192, 168, _) | (192, 0, 0) => AddressKind::Private,
        (172, 16..=31, _) => AddressKind::Private,
        (169, 254, _) => AddressKind::LinkLocal,
        (100, 64..=127, _) => AddressKind::Cgnat,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddressKind::Documentation,
        (198, 18..=19, _) => AddressKind::Reserved,
        (224..=239, _, _) => AddressKind::Multicast,
        (240..=255, _, _) => AddressKind::Reserved,
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressKind> {
    let s = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some(AddressKind::CloudMetadata);
    }
    if ip == Ipv6Addr::LOCALHOST {
        return Some(AddressKind::Loopback);
    }
    if ip == Ipv6Addr::UNSPECIFIED {
        return Some(AddressKind::Unspecified);
    }
    let embedded = |hi: usize| Ipv4Addr::from((u32::from(s[hi]) << 16) | u32::from(s[hi + 1]));
    // IPv4-mapped and IPv4-compatible: judge the IPv4 address; a public one is still a
    // literal (refused by the caller).
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return classify_v4(embedded(6));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(embedded(6));
    }
    if s[0] == 0x2002 {
        return classify_v4(embedded(1));
    }
    Some(match s[0] {
        0xfe80..=0xfebf => AddressKind::LinkLocal,
        0xfec0..=0xfeff => AddressKind::Private,
        0xfc00..=0xfdff => AddressKind::UniqueLocal,
        0xff00..=0xffff => AddressKind::Multicast,
        0x2001 if s[1] == 0x0db8 => AddressKind::Documentation,
        0x3fff if s[1] <= 0x0fff => AddressKind::Documentation,
        0x0100 if s[1..4] == [0, 0, 0] => AddressKind::Reserved,
        _ => return None,
    })
}

/// Whether a plain RFC 3986 reading of `text` finds the same host and port as the WHATWG
/// parser did: `scheme://authority` with the authority running to the first `/`, `?` or `#`,
/// no userinfo, the host equal (ASCII case-insensitively, trailing dot aside) and the port
/// equal (explicit, or the scheme's default).
fn plain_reading_agrees(text: &str, host: &str, port: u16) -> bool {
    let Some((scheme, rest)) = text.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let (raw_host, raw_port) = match authority.rsplit_once(':') {
        Some((h, p)) => match (p.is_empty(), p.bytes().all(|b| b.is_ascii_digit())) {
            (true, _) => (h, None),
            (false, true) => (h, Some(p)),
            (false, false) => return false,
        },
        None => (authority, None),
    };
    let default: u16 = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    let raw_port = match raw_port {
        // Leading zeros are read the same by both; more than five digits by neither.
        Some(p) if p.len() <= 5 => p.parse::<u32>().ok(),
        Some(_) => None,
        None => Some(u32::from(default)),
    };
    let trim = |h: &str| h.strip_suffix('.').unwrap_or(h).to_owned();
    raw_port == Some(u32::from(port))
        && raw_host.is_ascii()
        && trim(raw_host).eq_ignore_ascii_case(&trim(host))
}

#[cfg(test)]
mod tests;
