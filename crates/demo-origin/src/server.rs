//! Listener, connections (hyper 1 on a small tokio runtime) and the
//! request handler that applies the knobs.

use std::convert::Infallible;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Incoming};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONNECTION, VARY};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::bidders::{self, Recorder};
use crate::body::{self, Limits, Outcome, Payload, Shaped};
use crate::cache::BodyCache;
use crate::codec::{self, Encoding};
use crate::knobs::Knobs;
use crate::nextjs::{self, Replay};
use crate::routes::{self, Resource};

/// Upper bound for the request line plus all header lines, in bytes
/// (hyper answers `431` beyond it).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Upper bound for a request body, in bytes (`413` beyond it).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// A request head that takes longer than this to arrive closes the connection.
const HEAD_TIMEOUT: Duration = Duration::from_secs(75);
/// Public host of the demo publisher, used for redirects and cookies.
pub const ORIGIN_HOST: &str = "origin.demo-publisher.example";

/// A bound demo origin, ready to [`run`](Server::run).
pub struct Server {
    listener: std::net::TcpListener,
    state: State,
}

struct State {
    root: PathBuf,
    nextjs: Option<Replay>,
    cache: BodyCache,
    /// What the demo bidders received, for `/bidders/received`.
    bidders: Recorder,
    log: bool,
}

impl Server {
    /// Binds `addr` (use port 0 for an ephemeral port) and serves files
    /// from `root`, and the captured Next.js app from
    /// [`nextjs::default_dir`] under `/next` when it loads (see
    /// [`with_nextjs`](Server::with_nextjs)). Request logging to stderr is on.
    pub fn bind<A: ToSocketAddrs>(addr: A, root: impl Into<PathBuf>) -> io::Result<Server> {
        let default_dir = nextjs::default_dir();
        let replay = match Replay::load(&default_dir) {
            Ok(replay) => Some(replay),
            Err(e) => {
                if default_dir.exists() {
                    eprintln!("demo-origin: not serving /next: {e}");
                }
                None
            }
        };
        Ok(Server {
            listener: std::net::TcpListener::bind(addr)?,
            state: State {
                root: root.into(),
                nextjs: replay,
                cache: BodyCache::default(),
                bidders: Recorder::default(),
                log: true,
            },
        })
    }

    /// Serves these Next.js captures under `/next` (`None`: serve `/next`
    /// from the site root like any other path).
    pub fn with_nextjs(mut self, replay: Option<Replay>) -> Server {
        self.state.nextjs = replay;
        self
    }

    /// Enables or disables the one-line-per-request log on stderr.
    pub fn with_logging(mut self, enabled: bool) -> Server {
        self.state.log = enabled;
        self
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections forever on a multi-threaded tokio runtime.
    pub fn run(self) -> io::Result<()> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("demo-origin")
            .build()?;
        self.listener.set_nonblocking(true)?;
        let state = Arc::new(self.state);
        runtime.block_on(async move {
            let listener = TcpListener::from_std(self.listener)?;
            loop {
                match listener.accept().await {
                    Ok((stream, peer)) => {
                        tokio::spawn(serve_connection(stream, peer, state.clone()));
                    }
                    Err(e) => {
                        // E.g. EMFILE under load: back off briefly, keep serving.
                        if state.log {
                            eprintln!("accept failed: {e}");
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        })
    }

    /// Runs the server on a background thread and returns its address.
    pub fn spawn(self) -> io::Result<SocketAddr> {
        let addr = self.local_addr()?;
        thread::Builder::new()
            .name("demo-origin-accept".to_string())
            .spawn(move || self.run())?;
        Ok(addr)
    }
}

async fn serve_connection(stream: TcpStream, peer: SocketAddr, state: Arc<State>) {
    let _ = stream.set_nodelay(true);
    let ending = Arc::new(Mutex::new(None));
    let tap = Tap {
        stream,
        ending: ending.clone(),
        log: state.log,
    };
    let service = hyper::service::service_fn(move |request| {
        handle(request, peer, state.clone(), ending.clone())
    });
    // Errors here are the client going away, a request hyper could not
    // parse (it answers those itself) or a deliberate `die_after`.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_header_size(MAX_HEAD_BYTES)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(tap), service)
        .await;
}

/// A finished response waiting for its last byte to be flushed: its log
/// line and whether the connection then has to be dropped.
struct Ending {
    line: String,
    started: Instant,
    died: bool,
}

type Slot = Arc<Mutex<Option<Ending>>>;

/// The connection's socket. Once hyper has flushed a finished response it
/// logs that response (with the wall-clock time of its last byte) and, for
/// `die_after`, fails the flush so that hyper drops the connection without
/// finishing the message.
struct Tap {
    stream: TcpStream,
    ending: Slot,
    log: bool,
}

impl Tap {
    fn report(&self, ending: Ending, note: &str) {
        if self.log {
            // When the last byte was handed to the kernel, on the wall clock, so benchmarks on
            // the same machine can tell which client bytes arrived before the origin finished.
            let end_unix_us = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_micros());
            eprintln!(
                "{}{note} {}ms end_unix_us={end_unix_us}",
                ending.line,
                ending.started.elapsed().as_millis()
            );
        }
    }
}

impl AsyncRead for Tap {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tap {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    /// hyper calls this once its write buffer is empty.
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(Pin::new(&mut self.stream).poll_flush(cx))?;
        let ending = self.ending.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(ending) = ending {
            let died = ending.died;
            self.report(ending, "");
            if died {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "die_after: dropping the connection",
                )));
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let ending = self.ending.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(ending) = ending {
            self.report(ending, " unflushed");
        }
    }
}

async fn handle(
    request: Request<Incoming>,
    peer: SocketAddr,
    state: Arc<State>,
    slot: Slot,
) -> Result<Response<Shaped>, Infallible> {
    let started = Instant::now();
    let (head, request_body) = request.into_parts();
    let request_body = read_body(request_body).await;
    if let (Ok(body), true) = (&request_body, bidders::is_bidder_path(head.uri.path())) {
        // The bidders answer OpenRTB, not pages: no knobs, no content coding of their own.
        let reply = bidders::answer(&state.bidders, &state.root, &head, body).await;
        let mut response = reply.response;
        add(response.headers_mut(), "Server", "demo-origin");
        let prepared = (response, reply.payload, reply.limits, reply.label);
        return Ok(finish(&head, false, prepared, peer, started, slot));
    }
    let (knobs, resource, close) = match request_body {
        Ok(request_body) => match Knobs::parse(head.uri.query()) {
            Ok(knobs) => {
                let now_ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                let knobs = knobs.in_effect(now_ms);
                let resource = tokio::task::block_in_place(|| {
                    let nextjs = state.nextjs.as_ref();
                    routes::route(&state.root, nextjs, &state.cache, &head, &request_body)
                });
                (knobs, resource, false)
            }
            Err(msg) => (
                Knobs::default(),
                Resource::html_message(400, "Bad Request", &format!("Invalid knob: {msg}")),
                false,
            ),
        },
        Err((status, msg)) => (
            Knobs::default(),
            Resource::html_message(status, reason(status), msg),
            true,
        ),
    };
    let prepared = tokio::task::block_in_place(|| prepare(&head, &knobs, resource, &state.cache));
    if let Some(delay) = knobs.headers_delay {
        tokio::time::sleep(delay).await;
    }
    Ok(finish(&head, close, prepared, peer, started, slot))
}

/// A response ready to be framed: its head, body, body limits and log label.
type Prepared = (Response<()>, Payload, Limits, String);

/// Frames `prepared` as the answer to `head` (closing the connection after it when `close`
/// or the request asks), with the log line it writes once its last byte is flushed.
fn finish(
    head: &Parts,
    close: bool,
    prepared: Prepared,
    peer: SocketAddr,
    started: Instant,
    slot: Slot,
) -> Response<Shaped> {
    let (mut response, payload, limits, label) = prepared;
    let keep_alive = !close && head.version == Version::HTTP_11 && !has_token(head, "close");
    if !keep_alive {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    let line = format!(
        "{peer} \"{} {} {:?}\" {} {label}",
        head.method,
        head.uri,
        head.version,
        response.status().as_u16()
    );
    let on_end = Box::new(move |outcome: Outcome| {
        let note = match outcome {
            Outcome { died: true, .. } => " died",
            Outcome {
                finished: false, ..
            } => " write-error=\"not finished\"",
            _ => "",
        };
        let ending = Ending {
            line: format!("{line} bytes={}{note}", outcome.body_bytes),
            started,
            died: outcome.died,
        };
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(ending);
    });
    let head_only = head.method == Method::HEAD;
    let body = body::shape(payload, limits, head_only, response.headers_mut(), on_end);
    response.map(|()| body)
}

/// Reads the whole request body, or says which error status to answer.
async fn read_body(body: Incoming) -> Result<Vec<u8>, (u16, &'static str)> {
    let too_large = (413, "request body too large");
    if body.size_hint().lower() > MAX_BODY_BYTES as u64 {
        return Err(too_large);
    }
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes().to_vec()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large),
        Err(_) => Err((400, "bad request: unreadable body")),
    }
}

/// Whether any `Connection` header of the request lists `token`.
fn has_token(head: &Parts, token: &str) -> bool {
    head.headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Reason phrase of `status` (`"Status"` when it has none).
pub fn reason(status: u16) -> &'static str {
    StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Status")
}

/// Appends a header field, skipping values that are not valid in HTTP.
fn add(headers: &mut HeaderMap, name: &str, value: &str) {
    if let (Ok(n), Ok(v)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        headers.append(n, v);
    }
}

/// The `<!-- echo NAME: VALUES -->` line of the `echo=` knob: the request header's values as
/// received, joined with `, ` (`(none)` when absent), with `<` and `>` made `_` so the comment
/// stays one comment.
fn echo_line(head: &Parts, name: &str) -> String {
    format!("<!-- echo {name}: {} -->\n", echo_values(head, name))
}

/// The values of request header `name` as the `echo=` knob shows them: joined with `, `
/// (`(none)` when absent), `<` and `>` made `_`.
fn echo_values(head: &Parts, name: &str) -> String {
    let values: Vec<String> = head
        .headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).replace(['<', '>'], "_"))
        .collect();
    if values.is_empty() {
        "(none)".to_owned()
    } else {
        values.join(", ")
    }
}

/// What the `conditional=1` knob answers instead of the whole `200`.
#[derive(Debug, PartialEq, Eq)]
enum Conditional {
    /// `If-None-Match` matches the `etag=` knob (weak comparison, or `*`).
    NotModified,
    /// One satisfiable `Range: bytes=A-B` (or `A-`) on an uncompressed body: these bytes.
    Partial(usize, usize),
}

fn conditional_answer(
    head: &Parts,
    knobs: &Knobs,
    resource: &Resource,
    encoding: Encoding,
) -> Option<Conditional> {
    let opaque = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    let etag = knobs
        .cache_headers
        .iter()
        .find(|(n, _)| *n == "ETag")
        .map(|(_, v)| opaque(v));
    let if_none_match: Vec<String> = head
        .headers
        .get_all("if-none-match")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(opaque)
        .collect();
    if let Some(etag) = etag {
        if if_none_match.iter().any(|t| *t == etag || t == "*") {
            return Some(Conditional::NotModified);
        }
    }
    let plain = encoding == Encoding::Identity
        && knobs.drip.is_none()
        && resource.chunks.is_none()
        && knobs.lie_encoding.is_none();
    let spec = head
        .headers
        .get("range")?
        .to_str()
        .ok()?
        .strip_prefix("bytes=")?;
    let (first, last) = spec.split_once('-')?;
    let len = resource.body.len();
    let first: usize = first.trim().parse().ok()?;
    let last: usize = match last.trim() {
        "" => len.checked_sub(1)?,
        l => l.parse::<usize>().ok()?.min(len.checked_sub(1)?),
    };
    (plain && first <= last).then_some(Conditional::Partial(first, last))
}

/// Applies the knobs to `resource`: status, redirect, cookies, content
/// coding and body shaping. Returns the response (without framing
/// headers), payload, limits and a short log label.
fn prepare(head: &Parts, knobs: &Knobs, resource: Resource, cache: &BodyCache) -> Prepared {
    let mut resource = resource;
    if let Some(path) = &knobs.redirect {
        let location = format!("https://{ORIGIN_HOST}{path}");
        let mut redirect = Resource::html_message(302, "Found", &format!("Moved to {location}"));
        redirect.headers.push(("Location".to_string(), location));
        resource = redirect;
    }
    if !knobs.echo.is_empty() && resource.text && resource.chunks.is_none() {
        let mut body = resource.body.as_ref().clone();
        for name in &knobs.echo {
            body.extend_from_slice(echo_line(head, name).as_bytes());
        }
        resource.body = Arc::new(body);
        // Per request: not from the body cache.
        resource.cache_key = None;
    }
    let mut status = knobs.status.unwrap_or(resource.status);
    let mut response = Response::new(());
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    add(headers, "Server", "demo-origin");
    if let Some(content_type) = &resource.content_type {
        add(headers, "Content-Type", content_type);
    }
    for (name, value) in &resource.headers {
        add(headers, name, value);
    }
    for (name, value) in &knobs.cache_headers {
        add(headers, name, value);
    }
    // The `echo=` knob also as a response header, which a `HEAD` or any status carries.
    for name in &knobs.echo {
        add(headers, &format!("x-echo-{name}"), &echo_values(head, name));
    }
    if knobs.set_cookie {
        let session = format!("session=abc123; Domain={ORIGIN_HOST}; Path=/; HttpOnly");
        add(headers, "Set-Cookie", &session);
        add(headers, "Set-Cookie", "pref=dark; Path=/");
    }
    let varies_on_coding = headers.get_all(VARY).iter().any(|v| {
        v.to_str()
            .unwrap_or("")
            .to_ascii_lowercase()
            .contains("accept-encoding")
    });
    if resource.text && !varies_on_coding && !knobs.no_vary {
        add(headers, "Vary", "Accept-Encoding");
    }
    let encoding = if knobs.lie_encoding.is_some() {
        Encoding::Identity
    } else if let Some(forced) = knobs.encoding {
        forced
    } else if resource.text {
        let accept = head.headers.get("accept-encoding");
        codec::negotiate(accept.and_then(|v| v.to_str().ok()))
    } else {
        Encoding::Identity
    };
    let answer = if knobs.conditional && status == 200 {
        conditional_answer(head, knobs, &resource, encoding)
    } else {
        None
    };
    let mut range = None;
    match answer {
        Some(Conditional::NotModified) => status = 304,
        Some(Conditional::Partial(first, last)) => {
            status = 206;
            let total = resource.body.len();
            add(
                headers,
                "Content-Range",
                &format!("bytes {first}-{last}/{total}"),
            );
            range = Some((first, last));
        }
        None => {}
    }
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    let content_encoding = knobs.lie_encoding.or(encoding.header_value());
    if let Some(ce) = content_encoding {
        add(headers, "Content-Encoding", ce);
    }
    let limits = Limits {
        truncate: knobs.truncate,
        die_after: knobs.die_after,
    };
    let mut label = format!("ce={}", content_encoding.unwrap_or("identity"));
    let payload = if status == 204 || status == 304 {
        Payload::Empty
    } else if let Some((first, last)) = range {
        Payload::Whole(Arc::new(resource.body[first..=last].to_vec()))
    } else if let Some(drip) = knobs.drip {
        label.push_str(&format!(
            " drip={}x{}ms",
            drip.chunks,
            drip.delay.as_millis()
        ));
        Payload::Drip {
            plain: resource.body,
            encoding,
            drip,
        }
    } else if let Some(chunks) = resource.chunks {
        let pace = if knobs.nextjs_instant {
            "instant"
        } else {
            "timed"
        };
        label.push_str(&format!(" replay={}x{pace}", chunks.len()));
        Payload::Replay {
            plain: resource.body,
            encoding,
            chunks,
            timing: !knobs.nextjs_instant,
        }
    } else {
        Payload::Whole(match &resource.cache_key {
            Some(key) => cache.encoded(key, encoding, &resource.body),
            None => Arc::new(codec::compress(encoding, &resource.body)),
        })
    };
    (response, payload, limits, label)
}
