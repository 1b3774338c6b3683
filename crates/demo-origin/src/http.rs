//! Minimal HTTP/1.x request parsing and response-head serialisation.
//!
//! The parser is deliberately strict about framing (it never guesses where a
//! message ends) and lenient about everything else. Every failure maps to a
//! [`ReadError`] so that the connection loop can answer with a status code
//! instead of panicking.

use std::fmt::Write as _;
use std::io::{self, BufRead, Read};
use std::time::{SystemTime, UNIX_EPOCH};

/// Upper bound for the request line plus all header lines, in bytes.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Upper bound for a request body (after de-chunking), in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Upper bound for one chunk-size line or the whole chunked trailer section.
const MAX_CHUNK_LINE_BYTES: usize = 4 * 1024;

/// Blank lines tolerated before a request line (RFC 9112 section 2.2).
const MAX_LEADING_BLANK_LINES: usize = 8;

/// A parsed request line and header section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// Request method, exactly as received (case-sensitive token).
    pub method: String,
    /// Request target, exactly as received.
    pub target: String,
    /// Path component of the target (absolute-form targets are reduced to
    /// their path), still percent-encoded.
    pub path: String,
    /// Query string without the leading `?`, if the target had one.
    pub query: Option<String>,
    /// Minor HTTP version: `0` for HTTP/1.0, `1` for HTTP/1.1.
    pub minor_version: u8,
    /// Header fields in received order; names are lower-cased, values are
    /// trimmed of surrounding whitespace (non-UTF-8 bytes are replaced).
    pub headers: Vec<(String, String)>,
}

/// How the request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body.
    None,
    /// Exactly this many bytes follow the head.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// Why a request could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The socket failed, timed out or closed mid-message; nothing is sent.
    Io(io::Error),
    /// The request is malformed; answer `400 Bad Request` and close.
    Bad(&'static str),
    /// The request head exceeds [`MAX_HEAD_BYTES`]; answer `431` and close.
    HeadTooLarge,
    /// The request body exceeds [`MAX_BODY_BYTES`]; answer `413` and close.
    BodyTooLarge,
}

impl ReadError {
    /// Status code to answer with, or `None` when the peer is gone.
    pub fn status(&self) -> Option<u16> {
        match self {
            ReadError::Io(_) => None,
            ReadError::Bad(_) => Some(400),
            ReadError::HeadTooLarge => Some(431),
            ReadError::BodyTooLarge => Some(413),
        }
    }

    /// Short human-readable description for logs and error bodies.
    pub fn message(&self) -> String {
        match self {
            ReadError::Io(e) => format!("i/o error: {e}"),
            ReadError::Bad(m) => format!("bad request: {m}"),
            ReadError::HeadTooLarge => "request head too large".to_string(),
            ReadError::BodyTooLarge => "request body too large".to_string(),
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

impl RequestHead {
    /// First value of the header `name` (which must be given lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether any `Connection` header lists `token` (case-insensitive).
    pub fn connection_has(&self, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == "connection")
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// Whether the connection may stay open after this exchange.
    /// HTTP/1.0 always closes; HTTP/1.1 closes only on `Connection: close`.
    pub fn keep_alive(&self) -> bool {
        self.minor_version == 1 && !self.connection_has("close")
    }

    /// Whether the client asked for `100 Continue` before sending its body.
    pub fn expects_continue(&self) -> bool {
        self.minor_version == 1
            && self
                .header("expect")
                .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    }

    /// Determines the body framing from `Transfer-Encoding`/`Content-Length`.
    pub fn body_framing(&self) -> Result<BodyFraming, ReadError> {
        let te: Vec<&str> = self
            .headers
            .iter()
            .filter(|(n, _)| n == "transfer-encoding")
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        let has_cl = self.headers.iter().any(|(n, _)| n == "content-length");
        if !te.is_empty() {
            if has_cl {
                return Err(ReadError::Bad("both transfer-encoding and content-length"));
            }
            if self.minor_version == 0 {
                return Err(ReadError::Bad("transfer-encoding in HTTP/1.0"));
            }
            if te.len() != 1 || !te[0].eq_ignore_ascii_case("chunked") {
                return Err(ReadError::Bad("unsupported transfer-encoding"));
            }
            return Ok(BodyFraming::Chunked);
        }
        let mut length: Option<u64> = None;
        for value in self
            .headers
            .iter()
            .filter(|(n, _)| n == "content-length")
            .flat_map(|(_, v)| v.split(','))
        {
            let value = value.trim();
            if value.is_empty() || value.len() > 19 || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ReadError::Bad("invalid content-length"));
            }
            let n: u64 = value
                .parse()
                .map_err(|_| ReadError::Bad("invalid content-length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(ReadError::Bad("conflicting content-length"));
            }
            length = Some(n);
        }
        Ok(match length {
            None | Some(0) => BodyFraming::None,
            Some(n) => BodyFraming::Length(n),
        })
    }
}

/// Reads one request head. Returns `Ok(None)` when the peer closed the
/// connection cleanly before sending any byte of a new request.
pub fn read_head<R: BufRead>(reader: &mut R) -> Result<Option<RequestHead>, ReadError> {
    let mut budget = MAX_HEAD_BYTES;
    let mut line = Vec::new();
    let mut blank_lines = 0;
    loop {
        line.clear();
        if !read_line(reader, &mut line, &mut budget, ReadError::HeadTooLarge)? {
            if blank_lines == 0 {
                return Ok(None);
            }
            return Err(ReadError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        if !line.is_empty() {
            break;
        }
        blank_lines += 1;
        if blank_lines > MAX_LEADING_BLANK_LINES {
            return Err(ReadError::Bad("too many blank lines"));
        }
    }
    let (method, target, minor_version) = parse_request_line(&line)?;
    let (path, query) = split_target(&target)?;

    let mut headers = Vec::new();
    loop {
        line.clear();
        if !read_line(reader, &mut line, &mut budget, ReadError::HeadTooLarge)? {
            return Err(ReadError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        if line.is_empty() {
            break;
        }
        headers.push(parse_header_line(&line)?);
    }
    Ok(Some(RequestHead {
        method,
        target,
        path,
        query,
        minor_version,
        headers,
    }))
}

/// Reads the request body described by `framing`, de-chunking if needed.
pub fn read_body<R: BufRead>(reader: &mut R, framing: BodyFraming) -> Result<Vec<u8>, ReadError> {
    match framing {
        BodyFraming::None => Ok(Vec::new()),
        BodyFraming::Length(n) => {
            if n > MAX_BODY_BYTES as u64 {
                return Err(ReadError::BodyTooLarge);
            }
            let mut body = vec![0; n as usize];
            reader.read_exact(&mut body)?;
            Ok(body)
        }
        BodyFraming::Chunked => read_chunked(reader),
    }
}

fn read_chunked<R: BufRead>(reader: &mut R) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut budget = MAX_CHUNK_LINE_BYTES;
        if !read_line(
            reader,
            &mut line,
            &mut budget,
            ReadError::Bad("chunk line too long"),
        )? {
            return Err(ReadError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        let size_part = line.split(|&b| b == b';').next().unwrap_or_default();
        let size = parse_hex(trim_ows(size_part)).ok_or(ReadError::Bad("invalid chunk size"))?;
        if size == 0 {
            break;
        }
        if size > (MAX_BODY_BYTES - body.len()) as u64 {
            return Err(ReadError::BodyTooLarge);
        }
        let start = body.len();
        body.resize(start + size as usize, 0);
        reader.read_exact(&mut body[start..])?;
        line.clear();
        let mut budget = 2;
        if !read_line(
            reader,
            &mut line,
            &mut budget,
            ReadError::Bad("missing chunk CRLF"),
        )? || !line.is_empty()
        {
            return Err(ReadError::Bad("missing chunk CRLF"));
        }
    }
    // Trailer section: ignored, but bounded and fully consumed.
    let mut budget = MAX_CHUNK_LINE_BYTES;
    loop {
        line.clear();
        if !read_line(
            reader,
            &mut line,
            &mut budget,
            ReadError::Bad("trailer too large"),
        )? {
            return Err(ReadError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        if line.is_empty() {
            return Ok(body);
        }
    }
}

/// Reads one line terminated by LF (an optional CR before it is stripped)
/// into `line`. Returns `Ok(false)` on EOF before any byte was read.
fn read_line<R: BufRead>(
    reader: &mut R,
    line: &mut Vec<u8>,
    budget: &mut usize,
    too_long: ReadError,
) -> Result<bool, ReadError> {
    let n = reader
        .by_ref()
        .take(*budget as u64 + 1)
        .read_until(b'\n', line)?;
    if n == 0 {
        return Ok(false);
    }
    if n > *budget {
        return Err(too_long);
    }
    *budget -= n;
    if line.last() != Some(&b'\n') {
        return Err(ReadError::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.iter().any(|&b| b == b'\r' || b == 0) {
        return Err(ReadError::Bad("stray CR or NUL"));
    }
    Ok(true)
}

fn parse_request_line(line: &[u8]) -> Result<(String, String, u8), ReadError> {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad("malformed request line"));
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(ReadError::Bad("invalid method"));
    }
    if target.is_empty() || !target.iter().all(|&b| b.is_ascii_graphic()) {
        return Err(ReadError::Bad("invalid request target"));
    }
    let minor_version = match version {
        b"HTTP/1.1" => 1,
        b"HTTP/1.0" => 0,
        _ => return Err(ReadError::Bad("unsupported HTTP version")),
    };
    // Both slices were validated as ASCII above.
    let method = String::from_utf8_lossy(method).into_owned();
    let target = String::from_utf8_lossy(target).into_owned();
    Ok((method, target, minor_version))
}

/// Splits a request target into (path, query). Absolute-form targets
/// (`http://host/path?q`) are reduced to their path.
fn split_target(target: &str) -> Result<(String, Option<String>), ReadError> {
    let mut rest = target;
    for scheme in ["http://", "https://"] {
        if rest.len() >= scheme.len() && rest[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let after = &rest[scheme.len()..];
            rest = match after.find(['/', '?']) {
                Some(i) if after.as_bytes()[i] == b'/' => &after[i..],
                Some(i) => return Ok(("/".to_string(), Some(after[i + 1..].to_string()))),
                None => "/",
            };
            break;
        }
    }
    if !rest.starts_with('/') {
        return Err(ReadError::Bad("request target must be origin-form"));
    }
    let rest = rest.split('#').next().unwrap_or(rest);
    Ok(match rest.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (rest.to_string(), None),
    })
}

fn parse_header_line(line: &[u8]) -> Result<(String, String), ReadError> {
    if line[0] == b' ' || line[0] == b'\t' {
        return Err(ReadError::Bad("obsolete line folding"));
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(ReadError::Bad("header without colon"))?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(ReadError::Bad("invalid header name"));
    }
    let value = trim_ows(&line[colon + 1..]);
    Ok((
        String::from_utf8_lossy(name).to_ascii_lowercase(),
        String::from_utf8_lossy(value).into_owned(),
    ))
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

fn parse_hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 15 {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
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

/// Status line and header fields of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// Status code.
    pub status: u16,
    /// Header fields in the order they will be written.
    pub headers: Vec<(String, String)>,
}

impl ResponseHead {
    /// A head with `status`, a `Date` and a `Server` header.
    pub fn new(status: u16) -> Self {
        ResponseHead {
            status,
            headers: vec![
                ("Date".to_string(), http_date(SystemTime::now())),
                ("Server".to_string(), "demo-origin".to_string()),
            ],
        }
    }

    /// Appends a header field.
    pub fn add(&mut self, name: &str, value: impl Into<String>) {
        self.headers.push((name.to_string(), value.into()));
    }

    /// Serialises the head, including the blank line that ends it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in &self.headers {
            let _ = write!(out, "{name}: {value}\r\n");
        }
        out.push_str("\r\n");
        out.into_bytes()
    }
}

/// Reason phrase for common status codes (`"Status"` otherwise).
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        410 => "Gone",
        413 => "Content Too Large",
        418 => "I'm a teapot",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// Formats `t` as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Converts days since 1970-01-01 into a proleptic Gregorian (y, m, d).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Shift the epoch to 0000-03-01 so that leap days end each 400-year era.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::time::Duration;

    fn head(raw: &str) -> Result<Option<RequestHead>, ReadError> {
        read_head(&mut Cursor::new(raw.as_bytes().to_vec()))
    }

    #[test]
    fn parses_request_line_and_headers() {
        let h = head("GET /a/b?x=1&y HTTP/1.1\r\nHost: h\r\nX-Thing:  v  \r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.method, "GET");
        assert_eq!(h.path, "/a/b");
        assert_eq!(h.query.as_deref(), Some("x=1&y"));
        assert_eq!(h.minor_version, 1);
        assert_eq!(
            h.headers,
            vec![("host".into(), "h".into()), ("x-thing".into(), "v".into())]
        );
        assert!(h.keep_alive());
    }

    #[test]
    fn absolute_form_is_reduced_to_path() {
        let h = head("GET http://example.test/p?q=1 HTTP/1.0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.path, "/p");
        assert_eq!(h.query.as_deref(), Some("q=1"));
        assert!(!h.keep_alive());
    }

    #[test]
    fn rejects_malformed_heads() {
        for raw in [
            "GET / HTTP/1.1 extra\r\n\r\n",
            "GET /\r\n\r\n",
            "GET / HTTP/2.0\r\n\r\n",
            "G(T / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
            "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Name: v\r\n\r\n",
            "GET relative HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",
        ] {
            assert!(
                matches!(head(raw), Err(ReadError::Bad(_))),
                "accepted {raw:?}"
            );
        }
    }

    #[test]
    fn empty_input_is_clean_eof_and_partial_is_io_error() {
        assert!(matches!(head(""), Ok(None)));
        assert!(matches!(
            head("GET / HTTP/1.1\r\nHost"),
            Err(ReadError::Io(_))
        ));
    }

    #[test]
    fn oversized_head_is_rejected() {
        let raw = format!(
            "GET / HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD_BYTES)
        );
        assert!(matches!(head(&raw), Err(ReadError::HeadTooLarge)));
    }

    #[test]
    fn reads_chunked_body_with_extensions_and_trailers() {
        let h = head("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.body_framing().unwrap(), BodyFraming::Chunked);
        let mut r = Cursor::new(b"5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\n\r\nNEXT".to_vec());
        assert_eq!(read_body(&mut r, BodyFraming::Chunked).unwrap(), b"hello!");
        let mut rest = String::new();
        r.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "NEXT");
    }

    #[test]
    fn rejects_bad_framing() {
        let both =
            head("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
                .unwrap()
                .unwrap();
        assert!(both.body_framing().is_err());
        let conflict = head("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(conflict.body_framing().is_err());
        let gzip_te = head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(gzip_te.body_framing().is_err());
        let mut r = Cursor::new(b"zz\r\n".to_vec());
        assert!(matches!(
            read_body(&mut r, BodyFraming::Chunked),
            Err(ReadError::Bad(_))
        ));
        assert!(matches!(
            read_body(
                &mut Cursor::new(Vec::new()),
                BodyFraming::Length(MAX_BODY_BYTES as u64 + 1)
            ),
            Err(ReadError::BodyTooLarge)
        ));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("/a%2Fb+c").unwrap(), b"/a/b+c");
        assert!(percent_decode("%zz").is_none());
        assert!(percent_decode("%4").is_none());
    }

    #[test]
    fn formats_http_dates() {
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(http_date(leap), "Tue, 29 Feb 2000 00:00:00 GMT");
    }
}
