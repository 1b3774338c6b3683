//! Query-string knobs that make the origin misbehave in controlled ways.
//!
//! Unknown parameters are ignored (pages may carry cache busters); a known
//! parameter with an invalid value is an error, answered with `400`.
//! When a parameter is repeated, the last occurrence wins, except the header knobs
//! (`vary=`, `cache_control=`, …: one header line each) and `echo=` (one line each).

use std::time::Duration;

use crate::codec::Encoding;

/// Default number of drip parts after the first one.
pub const DEFAULT_DRIP_CHUNKS: usize = 10;
/// Largest accepted `drip_chunks`.
pub const MAX_DRIP_CHUNKS: usize = 1000;
/// Largest accepted `drip_ms`.
pub const MAX_DRIP_MS: u64 = 60_000;
/// Largest accepted `headers_delay_ms`.
pub const MAX_HEADERS_DELAY_MS: u64 = 600_000;

/// Drip settings: send the head of the body at once, then `chunks` parts,
/// sleeping `delay` before each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drip {
    /// Pause before each of the remaining parts.
    pub delay: Duration,
    /// Number of parts after the first one (at least 1).
    pub chunks: usize,
}

/// All knobs of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Knobs {
    /// `drip_ms` / `drip_chunks`: chunked, slow body.
    pub drip: Option<Drip>,
    /// `encoding`: forced content coding.
    pub encoding: Option<Encoding>,
    /// `die_after`: abort the connection after this many body bytes.
    pub die_after: Option<u64>,
    /// `truncate`: send only this many (encoded) body bytes, framed cleanly.
    pub truncate: Option<u64>,
    /// `lie_encoding`: plain body labelled with this `Content-Encoding`.
    pub lie_encoding: Option<&'static str>,
    /// `headers_delay_ms`: pause before the status line.
    pub headers_delay: Option<Duration>,
    /// `status`: status code to answer with.
    pub status: Option<u16>,
    /// `set_cookie`: add two `Set-Cookie` headers.
    pub set_cookie: bool,
    /// `redirect`: answer 302 to `https://origin.demo-publisher.example` + path.
    pub redirect: Option<String>,
    /// `nextjs_timing=0`: replay captured Next.js chunks back to back instead
    /// of at their recorded times.
    pub nextjs_instant: bool,
    /// `cache_control`, `surrogate_control`, `surrogate_key`, `vary`, `link`, `etag`,
    /// `last_modified`: headers to add (percent-decoded), for the proxy's cache and
    /// early-hints tests.
    pub cache_headers: Vec<(&'static str, String)>,
    /// `faults_from`: a wall-clock time (milliseconds since the Unix epoch) before which the
    /// fault knobs are ignored (see [`Knobs::in_effect`]).
    pub faults_from: Option<u64>,
    /// `no_vary=1`: no automatic `Vary: Accept-Encoding` on text (a page with no `Vary` at
    /// all unless `vary=` adds one), for the proxy's cache tests.
    pub no_vary: bool,
    /// `echo=<header name>` (repeatable, lowercase): a text page ends with one HTML comment
    /// per name, `<!-- echo NAME: VALUES -->`, with the values of that request header as the
    /// origin received them (`(none)` when absent): a page personalised by a request header,
    /// for the proxy's cache tests. Every answer (any status, `HEAD` too) also carries them
    /// as a response header `x-echo-NAME`.
    pub echo: Vec<String>,
    /// `conditional=1`: honour the request's `If-None-Match` against the `etag=` knob (`304`)
    /// and a single `Range: bytes=A-B` on an uncompressed `200` (`206`), as many servers do.
    pub conditional: bool,
}

impl Knobs {
    /// Parses the knobs out of a query string (without `?`).
    pub fn parse(query: Option<&str>) -> Result<Knobs, String> {
        let mut knobs = Knobs::default();
        let mut drip_ms: Option<u64> = None;
        let mut drip_chunks: Option<usize> = None;
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(raw)
                .and_then(|v| String::from_utf8(v).ok())
                .ok_or_else(|| format!("{key}: invalid percent-encoding"))?;
            let v = value.as_str();
            match key {
                "drip_ms" => drip_ms = Some(number(key, v, 0, MAX_DRIP_MS)?),
                "drip_chunks" => {
                    drip_chunks = Some(number(key, v, 1, MAX_DRIP_CHUNKS as u64)? as usize)
                }
                "encoding" => {
                    knobs.encoding = Some(
                        Encoding::from_token(v)
                            .ok_or_else(|| format!("encoding: unsupported {v:?}"))?,
                    )
                }
                "die_after" => knobs.die_after = Some(number(key, v, 0, u64::MAX)?),
                "truncate" => knobs.truncate = Some(number(key, v, 0, u64::MAX)?),
                "lie_encoding" => {
                    knobs.lie_encoding = Some(match v {
                        "gzip" => "gzip",
                        "br" => "br",
                        "zstd" => "zstd",
                        "deflate" => "deflate",
                        _ => return Err(format!("lie_encoding: unsupported {v:?}")),
                    })
                }
                "headers_delay_ms" => {
                    knobs.headers_delay = Some(Duration::from_millis(number(
                        key,
                        v,
                        0,
                        MAX_HEADERS_DELAY_MS,
                    )?))
                }
                "status" => {
                    if v.len() != 3 {
                        return Err(format!("status: expected three digits, got {v:?}"));
                    }
                    knobs.status = Some(number(key, v, 200, 599)? as u16)
                }
                "set_cookie" => knobs.set_cookie = flag(key, v)?,
                "cache_control" | "surrogate_control" | "surrogate_key" | "vary" | "link"
                | "etag" | "last_modified" => {
                    if v.bytes().any(|b| !(b == b' ' || b.is_ascii_graphic())) {
                        return Err(format!("{key}: not a header value: {v:?}"));
                    }
                    let name = match key {
                        "cache_control" => "Cache-Control",
                        "surrogate_control" => "Surrogate-Control",
                        "surrogate_key" => "Surrogate-Key",
                        "link" => "Link",
                        "etag" => "ETag",
                        "last_modified" => "Last-Modified",
                        _ => "Vary",
                    };
                    knobs.cache_headers.push((name, value.clone()));
                }
                "nextjs_timing" => knobs.nextjs_instant = !flag(key, v)?,
                "no_vary" => knobs.no_vary = flag(key, v)?,
                "conditional" => knobs.conditional = flag(key, v)?,
                "echo" => {
                    let name = v.to_ascii_lowercase();
                    let token =
                        |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
                    if name.is_empty() || !name.bytes().all(token) {
                        return Err(format!("echo: not a header name: {v:?}"));
                    }
                    knobs.echo.push(name);
                }
                "faults_from" => knobs.faults_from = Some(number(key, v, 0, u64::MAX)?),
                "redirect" => {
                    let ok = v.starts_with('/')
                        && !v.starts_with("//")
                        && v.bytes().all(|b| b.is_ascii_graphic());
                    if !ok {
                        return Err(format!("redirect: expected an absolute path, got {v:?}"));
                    }
                    knobs.redirect = Some(value.clone())
                }
                _ => {}
            }
        }
        if drip_ms.is_some() || drip_chunks.is_some() {
            knobs.drip = Some(Drip {
                delay: Duration::from_millis(drip_ms.unwrap_or(0)),
                chunks: drip_chunks.unwrap_or(DEFAULT_DRIP_CHUNKS),
            });
        }
        Ok(knobs)
    }
}

impl Knobs {
    /// The knobs that apply to a request arriving at `now_unix_ms`: before `faults_from`, the
    /// fault knobs (`status`, `headers_delay_ms`, `die_after`, `truncate`, `lie_encoding`)
    /// are dropped and the page is served as it is. So one URL (one cache key at the proxy)
    /// answers well, then fails from a time the test chose: what the proxy's stale-if-error
    /// tests need, without state in the origin.
    pub fn in_effect(mut self, now_unix_ms: u64) -> Knobs {
        if self.faults_from.is_some_and(|from| now_unix_ms < from) {
            self.status = None;
            self.headers_delay = None;
            self.die_after = None;
            self.truncate = None;
            self.lie_encoding = None;
        }
        self
    }
}

/// Decodes `%XX` escapes. Returns `None` for malformed escapes. `+` is kept.
pub fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

fn flag(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("{key}: expected 1 or 0, got {value:?}")),
    }
}

fn number(key: &str, value: &str, min: u64, max: u64) -> Result<u64, String> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{key}: expected a number, got {value:?}"));
    }
    match value.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("{key}: {value} outside {min}..={max}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_query_means_no_knobs() {
        assert_eq!(Knobs::parse(None).unwrap(), Knobs::default());
        assert_eq!(Knobs::parse(Some("cb=123&&x")).unwrap(), Knobs::default());
    }

    #[test]
    fn parses_every_knob() {
        let k = Knobs::parse(Some(
            "drip_ms=50&encoding=br&die_after=10&truncate=7&lie_encoding=zstd\
             &headers_delay_ms=20&status=503&set_cookie=1&redirect=%2Fnews%2Fa.html%3Fx%3D1\
             &nextjs_timing=0&cache_control=public%2C%20max-age%3D60&vary=Cookie\
             &surrogate_key=a%20b&surrogate_control=max-age%3D5&etag=%22v1%22\
             &last_modified=Tue%2C%2015%20Nov%201994%2012%3A45%3A26%20GMT",
        ))
        .unwrap();
        assert_eq!(
            k.cache_headers,
            [
                ("Cache-Control", "public, max-age=60".to_owned()),
                ("Vary", "Cookie".to_owned()),
                ("Surrogate-Key", "a b".to_owned()),
                ("Surrogate-Control", "max-age=5".to_owned()),
                ("ETag", "\"v1\"".to_owned()),
                ("Last-Modified", "Tue, 15 Nov 1994 12:45:26 GMT".to_owned()),
            ]
        );
        assert!(Knobs::parse(Some("vary=a%0Ab")).is_err());
        assert_eq!(
            k.drip,
            Some(Drip {
                delay: Duration::from_millis(50),
                chunks: DEFAULT_DRIP_CHUNKS
            })
        );
        assert_eq!(k.encoding, Some(Encoding::Br));
        assert_eq!(k.die_after, Some(10));
        assert_eq!(k.truncate, Some(7));
        assert_eq!(k.lie_encoding, Some("zstd"));
        assert_eq!(k.headers_delay, Some(Duration::from_millis(20)));
        assert_eq!(k.status, Some(503));
        assert!(k.set_cookie);
        assert_eq!(k.redirect.as_deref(), Some("/news/a.html?x=1"));
        assert!(k.nextjs_instant);
        assert!(
            !Knobs::parse(Some("nextjs_timing=1"))
                .unwrap()
                .nextjs_instant
        );
    }

    #[test]
    fn faults_apply_from_their_time_on() {
        let k = Knobs::parse(Some(
            "status=503&headers_delay_ms=5&die_after=1&truncate=2&lie_encoding=gzip\
             &cache_control=max-age%3D1&drip_chunks=2&faults_from=1000",
        ))
        .unwrap();
        assert_eq!(k.faults_from, Some(1000));
        let before = k.clone().in_effect(999);
        assert_eq!(
            (
                before.status,
                before.headers_delay,
                before.die_after,
                before.truncate,
                before.lie_encoding
            ),
            (None, None, None, None, None)
        );
        // What is not a fault stays.
        assert_eq!(before.cache_headers, k.cache_headers);
        assert_eq!(before.drip, k.drip);
        assert_eq!(k.clone().in_effect(1000), k);
        assert_eq!(k.clone().in_effect(5000), k);
        // Without `faults_from`, faults always apply.
        let always = Knobs::parse(Some("status=503")).unwrap();
        assert_eq!(always.clone().in_effect(0), always);
        assert!(Knobs::parse(Some("faults_from=soon")).is_err());
    }

    #[test]
    fn vary_echo_and_conditional_knobs() {
        let k = Knobs::parse(Some(
            "no_vary=1&vary=Accept-Language&vary=X-A&echo=X-TS-EC&echo=accept-language&conditional=1",
        ))
        .unwrap();
        assert!(k.no_vary && k.conditional);
        assert_eq!(k.echo, ["x-ts-ec", "accept-language"]);
        assert_eq!(
            k.cache_headers,
            [
                ("Vary", "Accept-Language".to_owned()),
                ("Vary", "X-A".to_owned())
            ]
        );
        assert!(Knobs::parse(Some("echo=a%20b")).is_err());
        assert!(Knobs::parse(Some("echo=")).is_err());
        assert!(Knobs::parse(Some("no_vary=2")).is_err());
    }

    #[test]
    fn drip_chunks_alone_drips_without_delay() {
        let k = Knobs::parse(Some("drip_chunks=3")).unwrap();
        assert_eq!(
            k.drip,
            Some(Drip {
                delay: Duration::ZERO,
                chunks: 3
            })
        );
    }

    #[test]
    fn rejects_invalid_values() {
        for q in [
            "drip_ms=abc",
            "drip_ms=-1",
            "drip_chunks=0",
            "encoding=zstd",
            "die_after=",
            "lie_encoding=snappy",
            "status=99",
            "status=600",
            "status=0200",
            "set_cookie=maybe",
            "nextjs_timing=fast",
            "redirect=https://evil.test/",
            "redirect=//evil.test/",
            "redirect=%2",
        ] {
            assert!(Knobs::parse(Some(q)).is_err(), "accepted {q}");
        }
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("/a%2Fb+c").unwrap(), b"/a/b+c");
        assert!(percent_decode("%zz").is_none());
        assert!(percent_decode("%4").is_none());
    }
}
