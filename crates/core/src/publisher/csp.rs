//! What a page's `Content-Security-Policy` means for the injected script.
//!
//! A script element is checked against each enforced policy's `script-src-elem`, else
//! `script-src`, else `default-src` (CSP Level 3); a policy without any of them allows it. The
//! injected script is same-origin, so a policy allows it by `'self'`, `*`, a scheme source for
//! the page's scheme, a host source naming the page's host (and the script's path), or a nonce
//! the tag carries. `'strict-dynamic'` turns the URL-based sources off, leaving the nonce.
//!
//! Every policy must allow the script (a response may carry several), and a tag carries one
//! nonce: the first one that every policy without a URL-based allowance lists. When none
//! does, the tag would only be blocked (and reported), so it is not injected.
//! `Content-Security-Policy-Report-Only` blocks nothing and is not read; a policy in a
//! `<meta>` tag is not seen (it would arrive after the script is decided).

/// The verdict on the injected script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptPolicy {
    /// The script may run; with this nonce on its tag, when the policy uses one.
    Allowed {
        /// The nonce the tag must carry.
        nonce: Option<String>,
    },
    /// Every policy would not allow it: why, for the log.
    Blocked(String),
}

/// Where the script is served from, as the policy's sources are matched against it.
#[derive(Debug, Clone, Copy)]
pub struct ScriptOrigin<'a> {
    /// The page's scheme, `https` or `http`.
    pub scheme: &'a str,
    /// The page's host, without port.
    pub host: &'a str,
    /// The page's port when it is not the scheme's default.
    pub port: Option<u16>,
    /// The script's path.
    pub path: &'a str,
}

/// What one policy allows the script by.
#[derive(Debug, Default)]
struct Allowance {
    /// A URL-based source matches.
    by_url: bool,
    nonces: Vec<String>,
}

/// The verdict for the script under the `Content-Security-Policy` header values `headers`
/// (each may hold several comma-separated policies).
pub fn script_policy<'h>(
    headers: impl IntoIterator<Item = &'h str>,
    origin: &ScriptOrigin<'_>,
) -> ScriptPolicy {
    let mut allowances = Vec::new();
    for header in headers {
        for policy in header.split(',') {
            if let Some(sources) = script_sources(policy) {
                let allowance = allowance(&sources, origin);
                if !allowance.by_url && allowance.nonces.is_empty() {
                    return ScriptPolicy::Blocked(format!(
                        "the policy's script sources ({}) allow neither this host nor a nonce",
                        sources.join(" ")
                    ));
                }
                allowances.push(allowance);
            }
        }
    }
    let candidates = allowances.iter().flat_map(|a| a.nonces.iter());
    if allowances.iter().all(|a| a.by_url) {
        // The nonce is not needed, but a page that uses one expects it on every script.
        return ScriptPolicy::Allowed {
            nonce: candidates.clone().next().cloned(),
        };
    }
    for nonce in candidates {
        if allowances
            .iter()
            .all(|a| a.by_url || a.nonces.contains(nonce))
        {
            return ScriptPolicy::Allowed {
                nonce: Some(nonce.clone()),
            };
        }
    }
    ScriptPolicy::Blocked("the policies use different nonces, and one tag carries one".into())
}

/// The source list that governs script elements in `policy`, if one does.
fn script_sources(policy: &str) -> Option<Vec<&str>> {
    let mut found: [Option<Vec<&str>>; 3] = [None, None, None];
    for directive in policy.split(';') {
        let mut tokens = directive.split_ascii_whitespace();
        let Some(name) = tokens.next() else { continue };
        let slot = ["script-src-elem", "script-src", "default-src"]
            .iter()
            .position(|n| name.eq_ignore_ascii_case(n));
        // The first of a repeated directive counts.
        if let Some(slot) = slot {
            found[slot].get_or_insert_with(|| tokens.collect());
        }
    }
    found.into_iter().flatten().next()
}

fn allowance(sources: &[&str], origin: &ScriptOrigin<'_>) -> Allowance {
    let strict_dynamic = sources
        .iter()
        .any(|s| s.eq_ignore_ascii_case("'strict-dynamic'"));
    let mut allowance = Allowance::default();
    for source in sources {
        if let Some(nonce) = nonce(source) {
            allowance.nonces.push(nonce.to_owned());
        } else if !strict_dynamic && url_source_matches(source, origin) {
            allowance.by_url = true;
        }
    }
    allowance
}

/// The value of a `'nonce-…'` source, if it is one with a valid value (base64 or base64url).
fn nonce(source: &str) -> Option<&str> {
    let inner = source.strip_prefix('\'')?.strip_suffix('\'')?;
    let (prefix, value) = inner.split_at_checked(6)?;
    (prefix.eq_ignore_ascii_case("nonce-")
        && !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_' | b'=')))
    .then_some(value)
}

/// Whether a source expression that is not a nonce allows the same-origin script.
fn url_source_matches(source: &str, origin: &ScriptOrigin<'_>) -> bool {
    if source.eq_ignore_ascii_case("'self'") || source == "*" {
        return true;
    }
    if source.starts_with('\'') {
        return false; // 'none', hashes, 'unsafe-inline', ...
    }
    // A scheme source: `https:`; `http:` also allows https (CSP3 upgrades).
    if let Some(scheme) = source.strip_suffix(':') {
        return scheme_matches(scheme, origin.scheme);
    }
    host_source_matches(source, origin)
}

fn scheme_matches(source: &str, page: &str) -> bool {
    source.eq_ignore_ascii_case(page)
        || (source.eq_ignore_ascii_case("http") && page.eq_ignore_ascii_case("https"))
}

/// `[scheme://]host[:port][/path]`, the host possibly `*.` something.
fn host_source_matches(source: &str, origin: &ScriptOrigin<'_>) -> bool {
    let rest = match source.split_once("://") {
        Some((scheme, rest)) => {
            if !scheme_matches(scheme, origin.scheme) {
                return false;
            }
            rest
        }
        None => source,
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let host_ok = match host.strip_prefix("*.") {
        Some(parent) => origin
            .host
            .len()
            .checked_sub(parent.len() + 1)
            .is_some_and(|at| {
                origin.host.as_bytes()[at] == b'.'
                    && origin.host[at + 1..].eq_ignore_ascii_case(parent)
            }),
        None => host.eq_ignore_ascii_case(origin.host),
    };
    let default_port = if origin.scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    let port_ok = match port {
        None => origin.port.is_none(),
        Some("*") => true,
        Some(p) => p.parse::<u16>().ok() == Some(origin.port.unwrap_or(default_port)),
    };
    let path_ok = path.is_empty()
        || if path.ends_with('/') {
            origin.path.starts_with(path)
        } else {
            origin.path == path
        };
    host_ok && port_ok && path_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: ScriptOrigin<'static> = ScriptOrigin {
        scheme: "https",
        host: "www.pub.test",
        port: None,
        path: "/static/tsjs=0123456789abcdef.js",
    };

    fn verdict(headers: &[&str]) -> ScriptPolicy {
        script_policy(headers.iter().copied(), &ORIGIN)
    }

    fn allowed(nonce: Option<&str>) -> ScriptPolicy {
        ScriptPolicy::Allowed {
            nonce: nonce.map(str::to_owned),
        }
    }

    #[test]
    fn no_policy_or_no_script_directive_allows_without_nonce() {
        assert_eq!(verdict(&[]), allowed(None));
        assert_eq!(
            verdict(&["img-src 'none'; frame-ancestors 'self'"]),
            allowed(None)
        );
        assert_eq!(verdict(&[""]), allowed(None));
    }

    #[test]
    fn a_nonce_for_script_src_is_carried() {
        let csp = "default-src 'self'; script-src 'nonce-r4nd0m+/=' 'strict-dynamic'";
        assert_eq!(verdict(&[csp]), allowed(Some("r4nd0m+/=")));
        // Even when 'self' would allow it: the page expects the nonce.
        assert_eq!(
            verdict(&["script-src 'self' 'NONCE-abc'"]),
            allowed(Some("abc"))
        );
    }

    #[test]
    fn script_src_elem_then_script_src_then_default_src_govern() {
        assert_eq!(
            verdict(&["script-src 'none'; script-src-elem 'self'"]),
            allowed(None)
        );
        assert_eq!(
            verdict(&["default-src 'self'; script-src 'nonce-n1'"]),
            allowed(Some("n1"))
        );
        assert_eq!(verdict(&["default-src 'nonce-d'"]), allowed(Some("d")));
        assert!(matches!(
            verdict(&["default-src 'none'"]),
            ScriptPolicy::Blocked(_)
        ));
        // The first of a repeated directive counts.
        assert!(matches!(
            verdict(&["script-src 'none'; script-src 'self'"]),
            ScriptPolicy::Blocked(_)
        ));
    }

    #[test]
    fn policies_that_block_the_script() {
        for csp in [
            "script-src 'none'",
            "script-src",
            "script-src https://cdn.example.com 'unsafe-inline'",
            "script-src 'self' 'strict-dynamic'",
            "script-src 'sha256-abc='",
            "script-src *.pub.test:8443",
            "script-src www.pub.test/other.js",
            "script-src 'nonce-'",
            "script-src 'nonce-a\"b'",
            "script-src ftp:",
        ] {
            assert!(
                matches!(verdict(&[csp]), ScriptPolicy::Blocked(_)),
                "{csp} should block"
            );
        }
    }

    #[test]
    fn url_sources_that_allow_the_script() {
        for csp in [
            "script-src 'self'",
            "script-src *",
            "script-src https:",
            "script-src http:",
            "script-src www.pub.test",
            "script-src https://WWW.pub.test:443",
            "script-src *.pub.test",
            "script-src https://www.pub.test:*/static/",
            "script-src www.pub.test/static/tsjs=0123456789abcdef.js",
        ] {
            assert_eq!(verdict(&[csp]), allowed(None), "{csp}");
        }
        assert!(matches!(
            verdict(&["script-src *.www.pub.test"]),
            ScriptPolicy::Blocked(_)
        ));
    }

    #[test]
    fn every_policy_must_allow_it_with_one_nonce() {
        // Two headers, or two policies in one header.
        assert_eq!(
            verdict(&["script-src 'self'", "script-src 'nonce-x'"]),
            allowed(Some("x"))
        );
        assert!(matches!(
            verdict(&["script-src 'self', script-src 'none'"]),
            ScriptPolicy::Blocked(_)
        ));
        assert!(matches!(
            verdict(&["script-src 'nonce-a'", "script-src 'nonce-b'"]),
            ScriptPolicy::Blocked(_)
        ));
        assert_eq!(
            verdict(&["script-src 'nonce-a' 'nonce-b'", "script-src 'nonce-b'"]),
            allowed(Some("b"))
        );
    }
}
