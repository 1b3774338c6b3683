//! `[publisher]`: where and how the origin is reached. The URL is split once here into what
//! the backend needs (scheme, address, TLS host), and `origin_host` and `cookie_domain` are
//! checked against it and against `domain`.

use std::borrow::Cow;

use serde::Deserialize;

use super::values::{Flag, Int};
use super::{Context, LoadError, Section, ENV_PREFIX};
use crate::{Publisher, Scheme, Settings};

/// `[publisher]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct PublisherFile {
    domain: Option<String>,
    origin_url: Option<String>,
    origin_host: Option<String>,
    cookie_domain: Option<String>,
    streaming: Option<Flag>,
    connect_timeout_ms: Option<Int<1, 600_000>>,
    first_byte_timeout_ms: Option<Int<1, 600_000>>,
    between_bytes_timeout_ms: Option<Int<1, 600_000>>,
}

impl Section for PublisherFile {
    type Valid = Publisher;

    fn validate(self, cx: &mut Context<'_>) -> Result<Publisher, LoadError> {
        let d = Settings::DEFAULT.publisher;
        let domain = domain(cx, self.domain)?;
        let url = OriginUrl::parse(cx, self.origin_url)?;
        let (origin_host, origin_host_name, origin_port) =
            origin_host(cx, self.origin_host, &url.authority)?;
        let cookie_domain = cookie_domain(cx, self.cookie_domain, &domain)?;
        let port = url.port.unwrap_or(url.scheme.default_port());
        Ok(Publisher {
            origin_scheme: url.scheme,
            origin_address: Cow::Owned(format!("{}:{port}", url.host)),
            origin_tls_host: Cow::Owned(url.host),
            origin_host: Cow::Owned(origin_host),
            origin_host_name: Cow::Owned(origin_host_name),
            origin_port,
            domain: Cow::Owned(domain),
            origin_url: Cow::Owned(url.url),
            cookie_domain: Cow::Owned(cookie_domain),
            streaming: self.streaming.map_or(d.streaming, |f| f.0),
            connect_timeout_ms: (self.connect_timeout_ms).map_or(d.connect_timeout_ms, |i| i.0),
            first_byte_timeout_ms: (self.first_byte_timeout_ms)
                .map_or(d.first_byte_timeout_ms, |i| i.0),
            between_bytes_timeout_ms: (self.between_bytes_timeout_ms)
                .map_or(d.between_bytes_timeout_ms, |i| i.0),
        })
    }
}

/// `publisher.domain`: required, a host name.
fn domain(cx: &Context<'_>, domain: Option<String>) -> Result<String, LoadError> {
    let domain = domain.unwrap_or_default();
    if domain.is_empty() {
        return Err(cx.error("publisher.domain", "is required"));
    }
    if !is_host(&domain) {
        return Err(cx.error(
            "publisher.domain",
            "expected a host name like www.example.com",
        ));
    }
    Ok(domain)
}

/// `publisher.origin_url`, split.
struct OriginUrl {
    /// As written.
    url: String,
    scheme: Scheme,
    /// `host[:port]`, as written.
    authority: String,
    host: String,
    port: Option<u16>,
}

impl OriginUrl {
    /// Required: `http://` or `https://`, a host, an optional port, no path.
    fn parse(cx: &Context<'_>, url: Option<String>) -> Result<OriginUrl, LoadError> {
        let url = url.unwrap_or_default();
        let url_error = |problem| cx.error("publisher.origin_url", problem);
        let (scheme, rest) = if url.is_empty() {
            return Err(url_error("is required"));
        } else if let Some(rest) = url.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else {
            return Err(url_error("must start with http:// or https://"));
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#', '@']) {
            return Err(url_error(
                "must be scheme://host[:port] with no path, query or credentials",
            ));
        }
        let (host, port) = split_authority(authority)
            .ok_or_else(|| url_error("expected a host and optional port"))?;
        Ok(OriginUrl {
            scheme,
            authority: authority.to_owned(),
            host: host.to_owned(),
            port,
            url,
        })
    }
}

/// `publisher.origin_host`, lowercase, with its host name and port; by default the origin
/// URL's `host[:port]`.
///
/// The file's origin_host belongs to the file's origin_url: an origin_url from the
/// environment brings its own host unless origin_host is overridden too (and the person
/// building is told).
fn origin_host(
    cx: &mut Context<'_>,
    mut origin_host: Option<String>,
    authority: &str,
) -> Result<(String, String, Option<u16>), LoadError> {
    if cx.is_overridden("publisher.origin_url") && !cx.is_overridden("publisher.origin_host") {
        if let Some(dropped) = origin_host.take() {
            cx.note(format!(
                "publisher.origin_host = {dropped:?} from the file is not used because \
                 {ENV_PREFIX}PUBLISHER__ORIGIN_URL overrides publisher.origin_url: origin_host \
                 is {:?}, the new URL's host[:port] (set {ENV_PREFIX}PUBLISHER__ORIGIN_HOST to \
                 choose another)",
                authority.to_ascii_lowercase()
            ));
        }
    }
    let origin_host = origin_host
        .unwrap_or_else(|| authority.to_owned())
        .to_ascii_lowercase();
    let Some((name, port)) = split_authority(&origin_host) else {
        return Err(cx.error(
            "publisher.origin_host",
            "expected host[:port] such as origin.example.com",
        ));
    };
    let name = name.to_owned();
    Ok((origin_host, name, port))
}

/// `publisher.cookie_domain`: empty, or `domain` or a parent of it (never a single label).
fn cookie_domain(
    cx: &Context<'_>,
    cookie_domain: Option<String>,
    domain: &str,
) -> Result<String, LoadError> {
    let cookie_domain = cookie_domain.unwrap_or_default();
    let bare = cookie_domain.trim_start_matches('.').to_ascii_lowercase();
    let lower = domain.to_ascii_lowercase();
    if !cookie_domain.is_empty() {
        // A single label ("com") is a public suffix: browsers reject such cookies.
        if !is_host(&bare) || !bare.contains('.') {
            let problem = "expected a domain like .example.com";
            return Err(cx.error("publisher.cookie_domain", problem));
        }
        if !(lower == bare || lower.ends_with(&format!(".{bare}"))) {
            let problem = format!("must be publisher.domain ({lower}) or a parent of it");
            return Err(cx.error("publisher.cookie_domain", &problem));
        }
    }
    Ok(cookie_domain)
}

/// Splits `host[:port]`; `None` when the host is not a plausible name or the port is bad.
pub(super) fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p.parse::<u16>().ok().filter(|p| *p != 0)?)),
        None => (authority, None),
    };
    is_host(host).then_some((host, port))
}

/// A DNS name or IPv4 address: labels of 1–63 letters, digits or inner hyphens.
pub(super) fn is_host(host: &str) -> bool {
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
