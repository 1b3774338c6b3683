//! The fault matrix: what a client gets when the origin misbehaves, one row per fault.
//!
//! One process (harness = false) starts a scripted raw origin (`e2e::raw_origin`), builds the
//! service twice against it (streaming and buffered, with short origin timeouts so the timeout
//! rows stay quick), and plays every row against both builds. A row is the origin's exact
//! bytes (or its silence, its reset, its refusal), the client's request, and the outcome
//! expected in each mode: a complete response with a given body, an abandoned transfer, or
//! the service's own `502`/`504`. Where docs/failures.md's table names the outcome, the row
//! uses it; elsewhere the row encodes the outcome the rules call for (never a panic, never a
//! short body that looks complete, never a byte dropped that could pass through, clear
//! errors). Every response is also checked for a `500` and for a panic message.
//!
//! One line per row and mode; any failure (or no row at all) fails the process.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use e2e::raw_origin::{chunk, RawOrigin, Script, Step, LAST_CHUNK};
use e2e::wire::send_raw;
use e2e::{send_version, start_service_pair, target_dir, workspace_root, Timed, Version};
use trusted_server_core::UrlRule;

/// `publisher.origin_host` in trusted-server.toml: the authority the origin's pages use.
const ORIGIN_HOST: &str = "origin.demo-publisher.example";
/// The host the clients ask for. It is `publisher.domain`, the service's fallback when a
/// request has no `Host` (an HTTP/2 request may carry only `:authority`), so every client
/// kind expects the same rewritten page.
const PUBLIC_HOST: &str = "www.demo-publisher.example";
/// Origin timeouts compiled into the builds under test.
const FIRST_BYTE_TIMEOUT_MS: u64 = 1000;
const BETWEEN_BYTES_TIMEOUT_MS: u64 = 1000;
/// The client gives up after this long (no row needs nearly as much).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

type Bytes = Arc<Vec<u8>>;

// ---------------------------------------------------------------------------------------------
// What a row expects

/// The outcome a row expects in one mode.
#[derive(Clone)]
enum Expect {
    /// A complete transfer (the framing says the body ended) with this status and body.
    Complete { status: u16, body: Want },
    /// The transfer is cut short (a chunked body without its terminator, fewer bytes than the
    /// `Content-Length`), or the connection closes before a response head: never a short body
    /// that looks complete.
    Abandoned,
    /// The service's own error response: this status, a short generic body, the standard
    /// headers.
    Error(u16),
}

/// The body a complete response must carry.
#[derive(Clone)]
enum Want {
    /// Exactly these bytes on the wire (after transfer decoding).
    Bytes(Bytes),
    /// These bytes once the response's `Content-Encoding` is undone: a re-encoded body need
    /// not repeat the origin's compressed bytes.
    Decoded(Bytes),
}

fn complete(status: u16, body: Vec<u8>) -> Expect {
    Expect::Complete {
        status,
        body: Want::Bytes(Arc::new(body)),
    }
}

fn decoded(body: Vec<u8>) -> Expect {
    Expect::Complete {
        status: 200,
        body: Want::Decoded(Arc::new(body)),
    }
}

/// How the client asks.
#[derive(Clone)]
enum Client {
    /// HTTP/1.1 from the e2e client, with these headers (and `Host: PUBLIC_HOST` unless
    /// they have a `Host`).
    Http11(Vec<(&'static str, &'static str)>),
    /// An HTTP/1.0 request (hyper, which also holds the response to HTTP/1.0's rules).
    Http10,
    /// An HTTP/1.1 `GET` written raw and its response read raw to the close: for the rows that
    /// check wire bytes an HTTP client hides (a body after a `204` or `304`).
    Wire,
    /// HTTP/2 over cleartext with prior knowledge (curl), for this authority (`:authority`;
    /// HTTP/2 has no `Host` header).
    H2c(&'static str),
}

type HeadCheck = Box<dyn Fn(&[u8]) -> Result<(), String>>;
type ResponseCheck = Box<dyn Fn(&Got) -> Result<(), String>>;

/// One fault and what each mode must make of it.
struct Row {
    name: String,
    script: Script,
    client: Client,
    /// The origin refuses connections (its listener is closed) while this row runs.
    refused: bool,
    streaming: Expect,
    buffered: Expect,
    /// A check on each request header section the origin received for this row.
    origin_saw: Option<HeadCheck>,
    /// A further check on the response, after the expected outcome matched.
    response: Option<ResponseCheck>,
}

impl Row {
    /// A row expecting `expect` in both modes.
    fn new(name: impl Into<String>, script: Script, expect: Expect) -> Self {
        Row {
            name: name.into(),
            script,
            client: Client::Http11(Vec::new()),
            refused: false,
            streaming: expect.clone(),
            buffered: expect,
            origin_saw: None,
            response: None,
        }
    }

    /// A failure after the headers: the streaming build abandons the transfer; the buffered
    /// build has sent nothing yet, so it answers `502`.
    fn broken_body(name: impl Into<String>, script: Script) -> Self {
        Row::new(name, script, Expect::Abandoned).buffered(Expect::Error(502))
    }

    fn buffered(mut self, expect: Expect) -> Self {
        self.buffered = expect;
        self
    }

    fn client(mut self, client: Client) -> Self {
        self.client = client;
        self
    }

    fn origin_saw(mut self, check: impl Fn(&[u8]) -> Result<(), String> + 'static) -> Self {
        self.origin_saw = Some(Box::new(check));
        self
    }

    fn response(mut self, check: impl Fn(&Got) -> Result<(), String> + 'static) -> Self {
        self.response = Some(Box::new(check));
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Building origin responses

#[derive(Clone, Copy, PartialEq, Eq)]
enum Coding {
    Identity,
    Gzip,
    Deflate,
    Br,
}

impl Coding {
    const ALL: [Coding; 4] = [Coding::Identity, Coding::Gzip, Coding::Deflate, Coding::Br];

    fn token(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Br => "br",
        }
    }

    fn encode(self, data: &[u8]) -> Vec<u8> {
        let level = flate2::Compression::default();
        match self {
            Coding::Identity => data.to_vec(),
            Coding::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
                e.write_all(data).expect("in memory");
                e.finish().expect("in memory")
            }
            Coding::Deflate => {
                let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
                e.write_all(data).expect("in memory");
                e.finish().expect("in memory")
            }
            Coding::Br => {
                let mut e = brotli::CompressorWriter::new(Vec::new(), 4096, 5, 22);
                e.write_all(data).expect("in memory");
                e.into_inner()
            }
        }
    }
}

/// Undoes a `Content-Encoding` value the service may send (one coding or none).
fn decode(coding: Option<&str>, data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let result = match coding.map(str::trim) {
        None | Some("identity") => return Ok(data.to_vec()),
        Some("gzip") => flate2::read::MultiGzDecoder::new(data).read_to_end(&mut out),
        Some("deflate") => flate2::read::ZlibDecoder::new(data).read_to_end(&mut out),
        Some("br") => brotli::Decompressor::new(data, 4096).read_to_end(&mut out),
        Some(other) => return Err(format!("unexpected content-encoding {other:?}")),
    };
    result
        .map(|_| out)
        .map_err(|e| format!("decoding the body: {e}"))
}

/// How the origin frames its body.
#[derive(Clone, Copy)]
enum Framing {
    Chunked,
    Length,
    /// No length, no chunking: the body ends when the connection closes.
    Close,
}

fn head(status: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        h.push_str(&format!("{name}: {value}\r\n"));
    }
    h.push_str("\r\n");
    h.into_bytes()
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// `body` as chunks of at most `piece` bytes, without the last chunk.
fn chunks(body: &[u8], piece: usize) -> Vec<u8> {
    body.chunks(piece).flat_map(chunk).collect()
}

/// The head of a `200` with this type, coding and framing for a body of `len` bytes.
fn head_for(content_type: &str, coding: Coding, framing: Framing, len: usize) -> Vec<u8> {
    let len = len.to_string();
    let mut headers = vec![("content-type", content_type)];
    if coding != Coding::Identity {
        headers.push(("content-encoding", coding.token()));
    }
    match framing {
        Framing::Chunked => headers.push(("transfer-encoding", "chunked")),
        Framing::Length => headers.push(("content-length", &len)),
        Framing::Close => headers.push(("connection", "close")),
    }
    head("200 OK", &headers)
}

/// A well-formed response: the head, then `encoded` framed as said.
fn respond(content_type: &str, coding: Coding, framing: Framing, encoded: &[u8]) -> Script {
    cut_at(content_type, coding, framing, encoded, encoded.len(), true)
}

/// The head of a response for all of `encoded`, then only its first `at` bytes, framed; the
/// chunked terminator only if `end`. Then a clean close.
fn cut_at(
    content_type: &str,
    coding: Coding,
    framing: Framing,
    encoded: &[u8],
    at: usize,
    end: bool,
) -> Script {
    let mut script = vec![Step::Write(head_for(
        content_type,
        coding,
        framing,
        encoded.len(),
    ))];
    let part = &encoded[..at];
    script.push(Step::Write(match framing {
        Framing::Chunked => chunks(part, 4096),
        Framing::Length | Framing::Close => part.to_vec(),
    }));
    if end && matches!(framing, Framing::Chunked) {
        script.push(Step::Write(LAST_CHUNK.to_vec()));
    }
    script.push(Step::Close);
    script
}

const HTML: &str = "text/html; charset=utf-8";

/// A deterministic HTML page of about `size` bytes, full of absolute origin URLs, with text
/// varied enough that compression leaves it several KiB long.
fn page(size: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "edge", "stream", "origin", "proxy", "chunk", "byte", "header", "page", "rewrite", "fault",
        "matrix", "reset", "timeout", "gzip", "brotli", "deflate",
    ];
    let mut out = format!(
        "<!doctype html>\n<html><head><title>Fault page</title>\n\
         <link rel=\"stylesheet\" href=\"http://{ORIGIN_HOST}/style.css\">\n</head><body>\n"
    )
    .into_bytes();
    let mut x: u32 = 0x2545_f491;
    let mut i = 0;
    while out.len() + 200 < size {
        out.extend_from_slice(b"<p>");
        for _ in 0..12 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            out.extend_from_slice(WORDS[(x >> 28) as usize].as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(
            format!("<a href=\"http://{ORIGIN_HOST}/article/{i}?r={x}\">more</a></p>\n").as_bytes(),
        );
        i += 1;
    }
    out.extend_from_slice(b"</body></html>\n");
    out
}

/// What the service must make of `original` for this suite's clients (the URL rule; the rule
/// itself is tested exhaustively in the core).
fn rewritten(original: &[u8]) -> Vec<u8> {
    UrlRule::new(ORIGIN_HOST, "http", PUBLIC_HOST).rewrite_all(original)
}

/// `page` as a navigation gets it: the first-party script's tag (docs/script.md) right after
/// `<head>`, its path named by the first 16 hex digits of an independent SHA-256 of the
/// script's source.
fn with_script(page: &[u8]) -> Vec<u8> {
    let source = std::fs::read(workspace_root().join("js/tsjs/src/tsjs.js")).expect("script");
    let hash = e2e::script_hash(&source);
    let tag = format!(r#"<script src="/static/tsjs={hash}.js" id="ts-js"></script>"#);
    let at = page
        .windows(6)
        .position(|w| w == b"<head>")
        .expect("the page has a <head>")
        + 6;
    [&page[..at], tag.as_bytes(), &page[at..]].concat()
}

/// Bytes that look like a PNG (an untouched type, passed through with its length).
fn png(size: usize) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut x: u32 = 7;
    while out.len() < size {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        out.push((x >> 16) as u8);
    }
    out
}

/// The request line the origin received must be an HTTP/1.1 `GET`.
fn origin_saw_http11(head: &[u8]) -> Result<(), String> {
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    check(
        line.starts_with("GET /") && line.ends_with(" HTTP/1.1"),
        || format!("the origin received request line {line:?}"),
    )
}

/// The values of header `name` in a raw header section, exact bytes.
fn raw_values(head: &[u8], name: &str) -> Vec<Vec<u8>> {
    let fields = head_fields(head).into_iter();
    fields.filter(|(n, _)| n == name).map(|(_, v)| v).collect()
}

/// The `name: value` lines of a raw header section (after its first line), names lowercase,
/// exact value bytes: request heads the raw origin received, and response heads from curl or
/// the raw client.
fn head_fields(head: &[u8]) -> Vec<(String, Vec<u8>)> {
    head.split(|&b| b == b'\n')
        .skip(1)
        .filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let colon = line.iter().position(|&b| b == b':')?;
            let (n, v) = line.split_at(colon);
            let name = String::from_utf8_lossy(n).to_ascii_lowercase();
            Some((name, v[1..].trim_ascii().to_vec()))
        })
        .collect()
}

/// The origin received one `Accept-Encoding`, limited to codings the pipeline decodes.
fn origin_accept_encoding(head: &[u8], want: Option<&str>) -> Result<(), String> {
    let values = raw_values(head, "accept-encoding");
    let [value] = values.as_slice() else {
        return Err(format!(
            "the origin received {} Accept-Encoding headers",
            values.len()
        ));
    };
    let value = String::from_utf8_lossy(value);
    let codings: Vec<&str> = value
        .split(',')
        .map(|c| c.split(';').next().unwrap_or("").trim())
        .collect();
    check(
        codings
            .iter()
            .all(|c| ["gzip", "deflate", "br", "identity"].contains(c)),
        || format!("the origin received Accept-Encoding {value:?}"),
    )?;
    match want {
        Some(want) => check(value == want, || {
            format!("the origin received Accept-Encoding {value:?}, expected {want:?}")
        }),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// The rows

fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    let small = page(6 * 1024);
    let ok_small = || complete(200, rewritten(&small));
    let html_chunked = |body: &[u8]| respond(HTML, Coding::Identity, Framing::Chunked, body);

    // Connection-level faults.
    rows.push(Row::new(
        "origin refuses the connection",
        vec![],
        Expect::Error(502),
    ));
    rows.last_mut().expect("just pushed").refused = true;
    rows.push(Row::new(
        "reset before the headers",
        vec![Step::Reset],
        Expect::Error(502),
    ));
    rows.push(Row::new(
        "closed before the headers",
        vec![Step::Close],
        Expect::Error(502),
    ));
    rows.push(Row::new(
        "reset inside the status line",
        vec![Step::Write(b"HTTP/1.1 20".to_vec()), Step::Reset],
        Expect::Error(502),
    ));
    rows.push(Row::new(
        "closed inside the header section",
        vec![
            Step::Write(b"HTTP/1.1 200 OK\r\ncontent-type: text/ht".to_vec()),
            Step::Close,
        ],
        Expect::Error(502),
    ));
    rows.push(Row::new(
        "not HTTP at all",
        vec![Step::Write(b"hello there\r\n\r\n".to_vec()), Step::Close],
        Expect::Error(502),
    ));
    let mut slow = vec![Step::Sleep(Duration::from_millis(
        FIRST_BYTE_TIMEOUT_MS + 600,
    ))];
    slow.extend(html_chunked(&small));
    rows.push(Row::new(
        "headers slower than first_byte_timeout",
        slow,
        Expect::Error(504),
    ));
    rows.push(Row::new(
        "no headers ever (the origin hangs)",
        vec![Step::Hang],
        Expect::Error(504),
    ));
    let mut in_time = vec![Step::Sleep(Duration::from_millis(
        FIRST_BYTE_TIMEOUT_MS / 2,
    ))];
    in_time.extend(html_chunked(&small));
    rows.push(Row::new(
        "control: headers within first_byte_timeout",
        in_time,
        ok_small(),
    ));
    let half = small.len() / 2;
    let silence = |ms: u64| {
        vec![
            Step::Write(head_for(HTML, Coding::Identity, Framing::Chunked, 0)),
            Step::Write(chunk(&small[..half])),
            Step::Sleep(Duration::from_millis(ms)),
            Step::Write(cat(&[&chunk(&small[half..]), LAST_CHUNK])),
            Step::Close,
        ]
    };
    rows.push(Row::broken_body(
        "silence mid-body longer than between_bytes_timeout",
        silence(BETWEEN_BYTES_TIMEOUT_MS + 1500),
    ));
    rows.push(Row::new(
        "control: a pause mid-body within between_bytes_timeout",
        silence(BETWEEN_BYTES_TIMEOUT_MS / 3),
        ok_small(),
    ));

    // Death mid-body, for each coding, at several points.
    for coding in Coding::ALL {
        let name = coding.token();
        let encoded = coding.encode(&small);
        let len = encoded.len();
        rows.push(Row::new(
            format!("control: {name}, chunked, complete"),
            respond(HTML, coding, Framing::Chunked, &encoded),
            decoded(rewritten(&small)),
        ));
        rows.push(Row::new(
            format!("control: {name}, Content-Length, complete"),
            respond(HTML, coding, Framing::Length, &encoded),
            decoded(rewritten(&small)),
        ));
        for (point, at) in [
            ("right after the headers", 0),
            ("after 1 body byte", 1),
            ("halfway", len / 2),
            ("1 byte short", len - 1),
        ] {
            rows.push(Row::broken_body(
                format!("{name}, chunked: the origin dies {point}"),
                cut_at(HTML, coding, Framing::Chunked, &encoded, at, false),
            ));
        }
        rows.push(Row::broken_body(
            format!("{name}, chunked: every byte but no last chunk"),
            cut_at(HTML, coding, Framing::Chunked, &encoded, len, false),
        ));
        rows.push(Row::broken_body(
            format!("{name}, Content-Length: the origin dies halfway"),
            cut_at(HTML, coding, Framing::Length, &encoded, len / 2, false),
        ));
        let mut reset = cut_at(HTML, coding, Framing::Chunked, &encoded, len / 2, false);
        reset.pop();
        reset.push(Step::Sleep(Duration::from_millis(50)));
        reset.push(Step::Reset);
        rows.push(Row::broken_body(
            format!("{name}, chunked: the origin resets halfway"),
            reset,
        ));
    }
    rows.push(Row::new(
        "control: identity, no framing (ends at close), complete",
        respond(HTML, Coding::Identity, Framing::Close, &small),
        ok_small(),
    ));
    // Without a length or chunking the close is the end: a cut cannot be told from the end
    // by anyone, so the proxy can only pass on what came (framed, and complete).
    let paragraph = small.len() / 2
        + small[small.len() / 2..]
            .windows(4)
            .position(|w| w == b"\n<p>")
            .expect("the page has paragraphs")
        + 1;
    rows.push(Row::new(
        "identity, no framing: the origin dies halfway (indistinguishable from the end)",
        cut_at(
            HTML,
            Coding::Identity,
            Framing::Close,
            &small,
            paragraph,
            false,
        ),
        complete(200, rewritten(&small[..paragraph])),
    ));
    let gz = Coding::Gzip.encode(&small);
    rows.push(Row::broken_body(
        "gzip, no framing: the origin dies halfway (the gzip stream is incomplete)",
        cut_at(HTML, Coding::Gzip, Framing::Close, &gz, gz.len() / 2, false),
    ));
    let image = png(20_000);
    rows.push(Row::new(
        "control: an image passes through with its length",
        respond("image/png", Coding::Identity, Framing::Length, &image),
        complete(200, image.clone()),
    ));
    // Untouched bodies stream host-side in both modes, so buffered mode abandons them too.
    rows.push(Row::new(
        "an image with Content-Length: the origin dies halfway",
        cut_at(
            "image/png",
            Coding::Identity,
            Framing::Length,
            &image,
            image.len() / 2,
            false,
        ),
        Expect::Abandoned,
    ));
    rows.push(Row::new(
        "an image, chunked: the origin dies halfway",
        cut_at(
            "image/png",
            Coding::Identity,
            Framing::Chunked,
            &image,
            image.len() / 2,
            false,
        ),
        Expect::Abandoned,
    ));

    // Content-Length that lies, and Content-Length with Transfer-Encoding.
    let cl_head = |content_type: &str, len: usize| {
        head(
            "200 OK",
            &[
                ("content-type", content_type),
                ("content-length", &len.to_string()),
            ],
        )
    };
    rows.push(Row::broken_body(
        "Content-Length too long (HTML)",
        vec![
            Step::Write(cat(&[&cl_head(HTML, small.len() + 100), &small])),
            Step::Close,
        ],
    ));
    rows.push(Row::new(
        "Content-Length too long (image)",
        vec![
            Step::Write(cat(&[&cl_head("image/png", image.len() + 100), &image])),
            Step::Close,
        ],
        Expect::Abandoned,
    ));
    // The length frames the message; what follows it is not part of the response.
    let junk = vec![b'J'; 100];
    rows.push(Row::new(
        "Content-Length too short (HTML): the bytes beyond it are not the body",
        vec![
            Step::Write(cat(&[&cl_head(HTML, small.len()), &small, &junk])),
            Step::Close,
        ],
        ok_small(),
    ));
    rows.push(Row::new(
        "Content-Length too short (image): the bytes beyond it are not the body",
        vec![
            Step::Write(cat(&[&cl_head("image/png", image.len()), &image, &junk])),
            Step::Close,
        ],
        complete(200, image.clone()),
    ));
    let cl_and_te = |content_type: &str, body: &[u8]| {
        vec![
            Step::Write(cat(&[
                &head(
                    "200 OK",
                    &[
                        ("content-type", content_type),
                        ("content-length", "10"),
                        ("transfer-encoding", "chunked"),
                    ],
                ),
                &chunks(body, 4096),
                LAST_CHUNK,
            ])),
            Step::Close,
        ]
    };
    // RFC 9112 6.3: Transfer-Encoding overrides Content-Length. Either that reading or a
    // refusal is safe; a body cut at the 10 bytes the length claims is not.
    let no_stale_length = |got: &Got| {
        check(
            got.header("content-length").as_deref() != Some("10"),
            || "the client got the origin's Content-Length: 10".into(),
        )
    };
    rows.push(
        Row::new(
            "Content-Length with Transfer-Encoding (HTML): chunked wins",
            cl_and_te(HTML, &small),
            ok_small(),
        )
        .response(no_stale_length),
    );
    rows.push(
        Row::new(
            "Content-Length with Transfer-Encoding (image): chunked wins",
            cl_and_te("image/png", &image),
            complete(200, image.clone()),
        )
        .response(no_stale_length),
    );
    rows.push(Row::new(
        "two different Content-Length values",
        vec![
            Step::Write(cat(&[
                &head(
                    "200 OK",
                    &[
                        ("content-type", HTML),
                        ("content-length", "10"),
                        ("content-length", "20"),
                    ],
                ),
                &small[..20],
            ])),
            Step::Close,
        ],
        Expect::Error(502),
    ));

    // Malformed chunked framing.
    let te_head = head_for(HTML, Coding::Identity, Framing::Chunked, 0);
    let first = chunk(&small[..2048]);
    for (what, bytes) in [
        ("a chunk size that is not hex", b"zz\r\nhello\r\n".to_vec()),
        ("a negative chunk size", b"-5\r\nhello\r\n".to_vec()),
        (
            "a chunk size that overflows 64 bits",
            b"100000000000000005\r\nhello\r\n".to_vec(),
        ),
        (
            "a chunk longer than its size",
            b"5\r\nhello world\r\n".to_vec(),
        ),
        ("a chunk size line without CRLF", b"5 hello\r\n".to_vec()),
    ] {
        rows.push(Row::broken_body(
            format!("malformed chunks: {what}, after a good chunk"),
            vec![
                Step::Write(cat(&[&te_head, &first, &bytes, LAST_CHUNK])),
                Step::Close,
            ],
        ));
    }
    rows.push(Row::broken_body(
        "malformed chunks: a bad first chunk size",
        vec![
            Step::Write(cat(&[&te_head, b"xyz\r\nhello\r\n", LAST_CHUNK])),
            Step::Close,
        ],
    ));
    let mut extended = Vec::new();
    for piece in small.chunks(1000) {
        extended.extend_from_slice(format!("{:x};note=\"x\"\r\n", piece.len()).as_bytes());
        extended.extend_from_slice(piece);
        extended.extend_from_slice(b"\r\n");
    }
    rows.push(Row::new(
        "control: chunk extensions and a trailer are legal",
        vec![
            Step::Write(cat(&[&te_head, &extended, b"0\r\nx-trailer: 1\r\n\r\n"])),
            Step::Close,
        ],
        ok_small(),
    ));

    // Interim (1xx) responses before the response.
    let final_response = cat(&[&te_head, &chunks(&small, 4096), LAST_CHUNK]);
    for (what, interim) in [
        ("100 Continue", head("100 Continue", &[])),
        (
            "103 Early Hints",
            head(
                "103 Early Hints",
                &[(
                    "link",
                    &format!("<http://{ORIGIN_HOST}/style.css>; rel=preload; as=style"),
                )],
            ),
        ),
        ("102 Processing", head("102 Processing", &[])),
        (
            "two interim responses",
            cat(&[&head("100 Continue", &[]), &head("102 Processing", &[])]),
        ),
    ] {
        rows.push(Row::new(
            format!("{what} before the response"),
            vec![Step::Write(cat(&[&interim, &final_response])), Step::Close],
            ok_small(),
        ));
    }
    rows.push(Row::new(
        "101 Switching Protocols instead of a response",
        vec![
            Step::Write(head(
                "101 Switching Protocols",
                &[("upgrade", "websocket"), ("connection", "upgrade")],
            )),
            Step::Write(b"\x81\x05hello".to_vec()),
            Step::Sleep(Duration::from_millis(200)),
            Step::Close,
        ],
        Expect::Error(502),
    ));
    rows.push(Row::new(
        "102 Processing and then nothing",
        vec![Step::Write(head("102 Processing", &[])), Step::Close],
        Expect::Error(502),
    ));

    // Statuses that have no body, sent with one.
    for (status, extra) in [
        ("204 No Content", ("content-length", "12")),
        ("204 No Content", ("transfer-encoding", "chunked")),
        ("304 Not Modified", ("content-length", "12")),
    ] {
        let code: u16 = status[..3].parse().expect("a status code");
        let body: &[u8] = if extra.0 == "content-length" {
            b"body, wrong!"
        } else {
            b"c\r\nbody, wrong!\r\n0\r\n\r\n"
        };
        rows.push(
            Row::new(
                format!("{status} with a body ({})", extra.0),
                vec![
                    Step::Write(cat(&[
                        &head(status, &[("content-type", HTML), ("etag", "\"v1\""), extra]),
                        body,
                    ])),
                    Step::Close,
                ],
                complete(code, Vec::new()),
            )
            .client(Client::Wire)
            .response(|got| {
                check(!got.body_raw.contains_seq(b"wrong"), || {
                    "the body of a bodiless status reached the client".into()
                })
            }),
        );
    }

    // Oversized and malformed header sections.
    let big_value = |n: usize| "v".repeat(n);
    let with_header = |name: &str, value: &str| {
        vec![
            Step::Write(cat(&[
                &head(
                    "200 OK",
                    &[
                        ("content-type", HTML),
                        (name, value),
                        ("transfer-encoding", "chunked"),
                    ],
                ),
                &chunks(&small, 4096),
                LAST_CHUNK,
            ])),
            Step::Close,
        ]
    };
    rows.push(Row::new(
        "a 1 MiB header",
        with_header("x-big", &big_value(1 << 20)),
        Expect::Error(502),
    ));
    rows.push(
        Row::new(
            "control: a 16 KiB header",
            with_header("x-big", &big_value(16 << 10)),
            ok_small(),
        )
        .response(|got| {
            let values = got.values("x-big");
            check(values.len() == 1 && values[0].len() == 16 << 10, || {
                "the 16 KiB header did not reach the client whole".into()
            })
        }),
    );
    let many: Vec<(String, String)> = (0..200)
        .map(|i| (format!("x-h{i}"), i.to_string()))
        .collect();
    let many_refs: Vec<(&str, &str)> = many
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .chain([("content-type", HTML), ("transfer-encoding", "chunked")])
        .collect();
    rows.push(Row::new(
        "200 header fields",
        vec![
            Step::Write(cat(&[
                &head("200 OK", &many_refs),
                &chunks(&small, 4096),
                LAST_CHUNK,
            ])),
            Step::Close,
        ],
        Expect::Error(502),
    ));
    rows.push(Row::new(
        "a header line without a colon",
        vec![
            Step::Write(cat(&[
                b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nno colon here\r\ncontent-length: 5\r\n\r\nhello",
            ])),
            Step::Close,
        ],
        Expect::Error(502),
    ));
    rows.push(Row::new(
        "a folded header line (obs-fold)",
        vec![
            Step::Write(cat(&[
                b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nx-folded: a\r\n b\r\ncontent-length: 5\r\n\r\nhello",
            ])),
            Step::Close,
        ],
        Expect::Error(502),
    ));

    // The defects of issue 7.
    let raw_ok = |headers: &[u8], body: &[u8]| {
        vec![
            Step::Write(cat(&[
                b"HTTP/1.1 200 OK\r\n",
                headers,
                format!("content-length: {}\r\n\r\n", body.len()).as_bytes(),
                body,
            ])),
            Step::Close,
        ]
    };
    rows.push(
        Row::new(
            "a Content-Type that is not UTF-8: passed through",
            raw_ok(b"content-type: text/html; charset=\xe9t\xe9\r\n", &small),
            complete(200, small.clone()),
        )
        .response(|got| {
            check(
                got.values("content-type") == [b"text/html; charset=\xe9t\xe9"],
                || "the Content-Type did not reach the client unchanged".into(),
            )
        }),
    );
    rows.push(
        Row::new(
            "a Content-Encoding that is not UTF-8: passed through",
            raw_ok(
                b"content-type: text/html\r\ncontent-encoding: gzip\xff\r\n",
                &gz,
            ),
            complete(200, gz.clone()),
        )
        .response(|got| {
            check(got.values("content-encoding") == [b"gzip\xff"], || {
                "the Content-Encoding did not reach the client unchanged".into()
            })
        }),
    );
    // A navigation to a page any reader could get teaches Early Hints from its `Link`
    // headers: one whose bytes are not text is passed through, never learned, never a panic.
    rows.push(
        Row::new(
            "a Link that is not UTF-8 on a page that teaches hints: passed through",
            raw_ok(
                b"content-type: text/html\r\ncache-control: public, max-age=60\r\n\
                  link: </caf\xe9.css>; rel=preload; as=style\r\n",
                &small,
            ),
            complete(200, with_script(&rewritten(&small))),
        )
        .client(Client::Http11(vec![
            ("accept", "text/html"),
            ("sec-fetch-dest", "document"),
            ("sec-fetch-mode", "navigate"),
        ]))
        .response(|got| {
            check(
                got.values("link") == [b"</caf\xe9.css>; rel=preload; as=style"],
                || "the Link did not reach the client unchanged".into(),
            )
        }),
    );
    for (size_mib, fits) in [(8, true), (32, false), (40, false)] {
        let big = page(size_mib << 20);
        let expect = complete(200, rewritten(&big));
        let row = Row::new(
            format!("a {size_mib} MiB chunked HTML page"),
            vec![
                Step::Write(head_for(HTML, Coding::Identity, Framing::Chunked, 0)),
                Step::Write(chunks(&big, 64 << 10)),
                Step::Write(LAST_CHUNK.to_vec()),
                Step::Close,
            ],
            expect,
        );
        rows.push(if fits {
            row
        } else {
            // Over the buffered mode's cap (16 MiB): a clear 502, not a trap.
            row.buffered(Expect::Error(502))
        });
    }
    let stacked = |codings: [Coding; 2]| {
        let body = codings[1].encode(&codings[0].encode(&small));
        let head = head(
            "200 OK",
            &[
                ("content-type", HTML),
                ("content-encoding", codings[0].token()),
                ("content-encoding", codings[1].token()),
                ("transfer-encoding", "chunked"),
            ],
        );
        let script = vec![
            Step::Write(cat(&[&head, &chunks(&body, 4096), LAST_CHUNK])),
            Step::Close,
        ];
        let want: Vec<Vec<u8>> = codings.iter().map(|c| c.token().into()).collect();
        Row::new(
            format!(
                "two Content-Encoding lines ({}, then {}): passed through",
                codings[0].token(),
                codings[1].token()
            ),
            script,
            complete(200, body),
        )
        .response(move |got| {
            let got_codings = got.values("content-encoding");
            check(got_codings == want, || {
                format!("Content-Encoding lines at the client: {got_codings:?}")
            })
        })
    };
    rows.push(stacked([Coding::Gzip, Coding::Br]));
    rows.push(stacked([Coding::Gzip, Coding::Gzip]));
    let gz_br = Coding::Br.encode(&gz);
    rows.push(Row::new(
        "control: one Content-Encoding line \"gzip, br\": passed through",
        vec![
            Step::Write(cat(&[
                &head(
                    "200 OK",
                    &[
                        ("content-type", HTML),
                        ("content-encoding", "gzip, br"),
                        ("content-length", &gz_br.len().to_string()),
                    ],
                ),
                &gz_br,
            ])),
            Step::Close,
        ],
        complete(200, gz_br.clone()),
    ));
    rows.push(
        Row::new(
            "an HTTP/2 (h2c prior knowledge) client",
            html_chunked(&small),
            ok_small(),
        )
        .client(Client::H2c(PUBLIC_HOST))
        .origin_saw(origin_saw_http11),
    );
    // Viceroy hands the guest an HTTP/2 request without a `Host`: the public host is the
    // URL's authority, and pages must be rewritten to it, not to `publisher.domain`.
    let other_host = "other.pub.test";
    rows.push(
        Row::new(
            "an HTTP/2 client's :authority is the host pages are rewritten to",
            html_chunked(&small),
            complete(
                200,
                UrlRule::new(ORIGIN_HOST, "http", other_host).rewrite_all(&small),
            ),
        )
        .client(Client::H2c(other_host)),
    );
    rows.push(
        Row::new(
            "control: an HTTP/1.1 client's Host is the host pages are rewritten to",
            html_chunked(&small),
            complete(
                200,
                UrlRule::new(ORIGIN_HOST, "http", other_host).rewrite_all(&small),
            ),
        )
        .client(Client::Http11(vec![("host", other_host)])),
    );
    rows.push(
        Row::new("an HTTP/1.0 client", html_chunked(&small), ok_small())
            .client(Client::Http10)
            .origin_saw(origin_saw_http11),
    );
    rows.push(
        Row::new(
            "control: an HTTP/1.1 client",
            html_chunked(&small),
            ok_small(),
        )
        .origin_saw(origin_saw_http11),
    );
    rows.push(
        Row::new(
            "the client lists Accept-Encoding in Connection",
            html_chunked(&small),
            ok_small(),
        )
        .client(Client::Http11(vec![
            ("connection", "accept-encoding"),
            ("accept-encoding", "gzip"),
        ]))
        .origin_saw(|head| origin_accept_encoding(head, None)),
    );
    rows.push(
        Row::new(
            "control: Accept-Encoding limited to decodable codings",
            html_chunked(&small),
            ok_small(),
        )
        .client(Client::Http11(vec![("accept-encoding", "zstd, br")]))
        .origin_saw(|head| origin_accept_encoding(head, Some("br"))),
    );
    rows.push(
        Row::new(
            "control: no Accept-Encoding asks for identity",
            html_chunked(&small),
            ok_small(),
        )
        .origin_saw(|head| origin_accept_encoding(head, Some("identity"))),
    );
    let cookie_row = |name: &str, cookie: &[u8], want: &'static [u8]| {
        let headers = cat(&[
            b"content-type: text/html; charset=utf-8\r\nset-cookie: ",
            cookie,
            b"\r\n",
        ]);
        Row::new(name, raw_ok(&headers, &small), ok_small()).response(move |got| {
            let cookies = got.values("set-cookie");
            check(cookies == [want], || {
                format!(
                    "Set-Cookie at the client: {:?}",
                    cookies
                        .iter()
                        .map(|c| String::from_utf8_lossy(c).into_owned())
                        .collect::<Vec<_>>()
                )
            })
        })
    };
    rows.push(cookie_row(
        "a Set-Cookie that is not UTF-8 loses the origin's Domain",
        &cat(&[b"a=\xe9; Domain=", ORIGIN_HOST.as_bytes(), b"; Path=/"]),
        b"a=\xe9; Path=/",
    ));
    rows.push(cookie_row(
        "control: a UTF-8 Set-Cookie loses the origin's Domain",
        format!("b=1; Domain={ORIGIN_HOST}; Path=/").as_bytes(),
        b"b=1; Path=/",
    ));
    let mut trailing = gz.clone();
    trailing.extend_from_slice(b"\0\0junk after the gzip member\r\n");
    rows.push(Row::new(
        "gzip with trailing junk after a complete member: decoded, junk dropped",
        respond(HTML, Coding::Gzip, Framing::Chunked, &trailing),
        decoded(rewritten(&small)),
    ));
    let mut utf16 = vec![0xff, 0xfe];
    let text =
        format!("<html><body><a href=\"http://{ORIGIN_HOST}/x\">x</a> caf\u{e9}</body></html>\n");
    utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    rows.push(Row::new(
        "a UTF-16 page with a BOM and no charset: passed through",
        respond("text/html", Coding::Identity, Framing::Chunked, &utf16),
        complete(200, utf16.clone()),
    ));
    rows
}

// ---------------------------------------------------------------------------------------------
// Running a row

/// A response as the client saw it, whatever client asked.
struct Got {
    /// `None` when the connection closed before a complete response head.
    status: Option<u16>,
    /// The response headers: names lowercase, exact value bytes.
    headers: Vec<(String, Vec<u8>)>,
    /// The body after transfer decoding.
    body: Vec<u8>,
    /// The raw bytes after the header section, from the raw client only (to see a body a
    /// bodiless status must not have).
    body_raw: Vec<u8>,
    complete: bool,
}

trait ContainsSeq {
    fn contains_seq(&self, needle: &[u8]) -> bool;
}

impl ContainsSeq for [u8] {
    fn contains_seq(&self, needle: &[u8]) -> bool {
        self.windows(needle.len()).any(|w| w == needle)
    }
}

impl ContainsSeq for Vec<u8> {
    fn contains_seq(&self, needle: &[u8]) -> bool {
        self.as_slice().contains_seq(needle)
    }
}

impl Got {
    fn header(&self, name: &str) -> Option<String> {
        self.values(name)
            .first()
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// Every value of header `name` (lowercase), exact bytes.
    fn values(&self, name: &str) -> Vec<Vec<u8>> {
        let named = self.headers.iter().filter(|(n, _)| n == name);
        named.map(|(_, v)| v.clone()).collect()
    }

    fn describe(&self) -> String {
        match self.status {
            None => "no response head".into(),
            Some(s) => format!(
                "{s}, {}, {} body bytes",
                if self.complete {
                    "complete"
                } else {
                    "incomplete"
                },
                self.body.len()
            ),
        }
    }
}

fn from_timed(t: Timed) -> Got {
    Got {
        status: Some(t.status),
        body_raw: Vec::new(),
        headers: t.headers,
        body: t.body,
        complete: t.complete,
    }
}

/// A raw response: status and headers from its head, everything after the head as
/// `body_raw`. Complete when the status has no body (the only rows that use it), since such a
/// response ends at its head.
fn from_wire(bytes: &[u8]) -> Got {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return no_head();
    };
    let head = &bytes[..end + 4];
    let status: Option<u16> = String::from_utf8_lossy(head)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok());
    Got {
        status,
        headers: head_fields(head),
        body: Vec::new(),
        body_raw: bytes[end + 4..].to_vec(),
        complete: matches!(status, Some(204 | 304)),
    }
}

/// The connection closed before a complete response head.
fn no_head() -> Got {
    Got {
        status: None,
        headers: Vec::new(),
        body: Vec::new(),
        body_raw: Vec::new(),
        complete: false,
    }
}

fn fetch(addr: SocketAddr, path: &str, client: &Client, scratch: &Path) -> Result<Got, String> {
    let result = match client {
        Client::Http11(extra) => {
            let mut headers = extra.clone();
            if !headers.iter().any(|(n, _)| *n == "host") {
                headers.push(("host", PUBLIC_HOST));
            }
            send_version(
                addr,
                Version::HTTP_11,
                "GET",
                path,
                &headers,
                &[],
                CLIENT_TIMEOUT,
            )
        }
        Client::Http10 => {
            let headers = [("host", PUBLIC_HOST)];
            send_version(
                addr,
                Version::HTTP_10,
                "GET",
                path,
                &headers,
                &[],
                CLIENT_TIMEOUT,
            )
        }
        Client::Wire => {
            let request =
                format!("GET {path} HTTP/1.1\r\nhost: {PUBLIC_HOST}\r\nconnection: close\r\n\r\n");
            return send_raw(addr, request.as_bytes(), CLIENT_TIMEOUT)
                .map(|bytes| from_wire(&bytes))
                .map_err(|e| format!("request failed: {e}"));
        }
        Client::H2c(authority) => return fetch_h2c(addr, authority, path, scratch),
    };
    match result {
        Ok(t) => Ok(from_timed(t)),
        // The connection closed before a complete head.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Ok(no_head()),
        Err(e) => Err(format!("request failed: {e}")),
    }
}

/// HTTP/2 without TLS, with prior knowledge, through curl.
fn fetch_h2c(addr: SocketAddr, authority: &str, path: &str, scratch: &Path) -> Result<Got, String> {
    let body_file = scratch.join("h2c-body");
    let head_file = scratch.join("h2c-head");
    let _ = std::fs::remove_file(&body_file);
    let _ = std::fs::remove_file(&head_file);
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--http2-prior-knowledge"])
        .args(["--max-time", &CLIENT_TIMEOUT.as_secs().to_string()])
        .arg("--connect-to")
        .arg(format!("{authority}:80:{addr}"))
        .arg("--output")
        .arg(&body_file)
        .arg("--dump-header")
        .arg(&head_file)
        .args(["--write-out", "%{http_version}"])
        .arg(format!("http://{authority}{path}"))
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    let heads = std::fs::read(&head_file).unwrap_or_default();
    // The last header block (interim responses come first).
    let start = heads
        .windows(5)
        .rposition(|w| w == b"HTTP/")
        .unwrap_or(heads.len());
    let head = heads[start..].to_vec();
    let status = String::from_utf8_lossy(&head)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok());
    if status.is_some() && version != "2" {
        return Err(format!(
            "curl spoke HTTP/{version}, not HTTP/2: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if status.is_none() && !out.status.success() {
        eprintln!(
            "    curl: {} ({})",
            String::from_utf8_lossy(&out.stderr).trim(),
            out.status
        );
    }
    Ok(Got {
        status,
        headers: head_fields(&head),
        body: std::fs::read(&body_file).unwrap_or_default(),
        body_raw: Vec::new(),
        complete: out.status.success(),
    })
}

fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

fn same_bytes(got: &[u8], want: &[u8]) -> Result<(), String> {
    e2e::same_bytes(got, want).map_err(|e| format!("body: {e}"))
}

fn describe(expect: &Expect) -> String {
    match expect {
        Expect::Complete { status, body } => {
            let (kind, len) = match body {
                Want::Bytes(b) => ("bytes", b.len()),
                Want::Decoded(b) => ("decoded bytes", b.len()),
            };
            format!("{status}, complete, {len} {kind}")
        }
        Expect::Abandoned => "an abandoned transfer".into(),
        Expect::Error(s) => format!("the service's {s}"),
    }
}

/// Whether `got` is what `expect` says, plus the checks every row makes.
fn judge(expect: &Expect, got: &Got) -> Result<(), String> {
    check(got.status != Some(500), || "a 500".into())?;
    check(!got.body.contains_seq(b"panicked"), || {
        "the body mentions a panic".into()
    })?;
    match expect {
        Expect::Complete { status, body } => {
            check(got.status == Some(*status), || {
                format!("status {:?}", got.status)
            })?;
            check(got.complete, || "the transfer is incomplete".into())?;
            match body {
                Want::Bytes(want) => same_bytes(&got.body, want),
                Want::Decoded(want) => {
                    let coding = got.header("content-encoding");
                    same_bytes(&decode(coding.as_deref(), &got.body)?, want)
                }
            }
        }
        Expect::Abandoned => check(
            got.status.is_none() || (!got.complete && got.status < Some(500)),
            || "not an abandoned transfer".into(),
        ),
        Expect::Error(status) => {
            check(got.status == Some(*status), || {
                format!("status {:?}", got.status)
            })?;
            check(got.complete, || "the error is incomplete".into())?;
            check(got.header("x-ts-version").is_some(), || {
                "no standard headers (x-ts-version)".into()
            })?;
            check(
                got.body.starts_with(status.to_string().as_bytes()) && got.body.len() < 64,
                || {
                    format!(
                        "not the generic error body: {:?}",
                        String::from_utf8_lossy(&got.body)
                    )
                },
            )
        }
    }
}

struct World {
    origin: RawOrigin,
    streaming: SocketAddr,
    buffered: SocketAddr,
    /// The Viceroy logs of the two builds: a guest panic after the headers looks like an
    /// abandoned transfer to the client, so the log is where it shows.
    streaming_log: LogWatch,
    buffered_log: LogWatch,
    scratch: PathBuf,
    _servers: Vec<e2e::ChildGuard>,
}

/// Reads what a log file gained since the last look.
struct LogWatch {
    path: PathBuf,
    seen: std::cell::Cell<usize>,
}

impl LogWatch {
    fn new(path: PathBuf) -> Self {
        LogWatch {
            path,
            seen: std::cell::Cell::new(0),
        }
    }

    fn news(&self) -> String {
        let all = std::fs::read(&self.path).unwrap_or_default();
        let from = self.seen.get().min(all.len());
        self.seen.set(all.len());
        String::from_utf8_lossy(&all[from..]).into_owned()
    }

    /// A panic reported since the last look, if any.
    fn panic(&self) -> Option<String> {
        let news = self.news();
        news.lines()
            .find(|l| l.contains("panicked"))
            .map(str::to_owned)
    }
}

fn set_up() -> Result<World, String> {
    let root = workspace_root();
    let origin = RawOrigin::start().map_err(|e| format!("raw origin: {e}"))?;
    let scratch = target_dir(&root).join("faults");
    let timeouts = [
        (
            "TRUSTED_SERVER__PUBLISHER__FIRST_BYTE_TIMEOUT_MS",
            FIRST_BYTE_TIMEOUT_MS.to_string(),
        ),
        (
            "TRUSTED_SERVER__PUBLISHER__BETWEEN_BYTES_TIMEOUT_MS",
            BETWEEN_BYTES_TIMEOUT_MS.to_string(),
        ),
    ];
    let pair = start_service_pair(&root, &scratch, origin.addr(), &timeouts)?;
    // The file names start_service_pair gives the logs.
    let streaming_log = LogWatch::new(scratch.join("viceroy-streaming.log"));
    let buffered_log = LogWatch::new(scratch.join("viceroy-buffered.log"));
    streaming_log.news();
    buffered_log.news();
    Ok(World {
        origin,
        streaming: pair.streaming,
        buffered: pair.buffered,
        streaming_log,
        buffered_log,
        scratch,
        _servers: pair.guards,
    })
}

fn run_row(world: &World, row: &Row, path: &str, buffered: bool) -> (String, Result<(), String>) {
    let (addr, expect, log) = if buffered {
        (world.buffered, &row.buffered, &world.buffered_log)
    } else {
        (world.streaming, &row.streaming, &world.streaming_log)
    };
    world.origin.take_requests(path);
    if row.refused {
        world.origin.refuse();
    }
    let got = fetch(addr, path, &row.client, &world.scratch);
    if row.refused {
        if let Err(e) = world.origin.resume() {
            return (
                "-".into(),
                Err(format!("the origin cannot listen again: {e}")),
            );
        }
    }
    let got = match got {
        Ok(got) => got,
        Err(e) => return ("no response".into(), Err(e)),
    };
    let observed = got.describe();
    // The guest writes its panic message before its instance ends; give the log a moment.
    std::thread::sleep(Duration::from_millis(20));
    let mut result = match log.panic() {
        Some(line) => Err(format!("the guest panicked: {line}")),
        None => judge(expect, &got),
    };
    if result.is_ok() {
        if let Some(check) = &row.response {
            result = check(&got);
        }
    }
    if result.is_ok() {
        if let Some(check) = &row.origin_saw {
            let heads = world.origin.take_requests(path);
            result = if heads.is_empty() {
                Err("the origin received no request".into())
            } else {
                heads.iter().try_for_each(|h| check(h))
            };
        }
    }
    (
        observed,
        result.map_err(|e| format!("expected {}: {e}", describe(expect))),
    )
}

fn main() {
    let started = Instant::now();
    let world = e2e::set_up_or_exit("faults", set_up);
    let rows = rows();
    for (i, row) in rows.iter().enumerate() {
        world
            .origin
            .script(&format!("/fault/{i}"), row.script.clone());
    }
    let mut runs = 0;
    let mut failures = 0;
    for (i, row) in rows.iter().enumerate() {
        let path = format!("/fault/{i}");
        for (mode, buffered) in [("streaming", false), ("buffered", true)] {
            let t = Instant::now();
            let (observed, result) = run_row(&world, row, &path, buffered);
            runs += 1;
            match result {
                Ok(()) => println!(
                    "row {} [{mode}] ... ok: {observed} ({:.2}s)",
                    row.name,
                    t.elapsed().as_secs_f64()
                ),
                Err(e) => {
                    failures += 1;
                    println!(
                        "row {} [{mode}] ... FAILED: got {observed}\n    {e}",
                        row.name
                    );
                }
            }
        }
    }
    // A panic reported after its row was judged still fails the run.
    let mut late_panics = 0;
    for (mode, log) in [
        ("streaming", &world.streaming_log),
        ("buffered", &world.buffered_log),
    ] {
        std::thread::sleep(Duration::from_millis(100));
        if let Some(line) = log.panic() {
            late_panics += 1;
            println!("the {mode} build panicked after the last row: {line}");
        }
    }
    println!(
        "\nfaults: {} rows x 2 modes, {} passed, {failures} failed ({:.1}s)",
        rows.len(),
        runs - failures,
        started.elapsed().as_secs_f64()
    );
    drop(world);
    if failures > 0 || late_panics > 0 || runs == 0 {
        std::process::exit(1);
    }
}
