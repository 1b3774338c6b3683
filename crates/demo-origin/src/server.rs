//! Listener, per-connection threads and the request/response loop.

use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::body::{self, Limits, Payload, Sent};
use crate::cache::BodyCache;
use crate::codec::{self, Encoding};
use crate::http::{self, BodyFraming, ReadError, RequestHead, ResponseHead};
use crate::knobs::Knobs;
use crate::nextjs::{self, Replay};
use crate::routes::{self, Resource};

/// Idle keep-alive connections (and stalled request reads) are closed
/// after this long.
const READ_TIMEOUT: Duration = Duration::from_secs(75);
/// A client that stops reading for this long is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// Public host of the demo publisher, used for redirects and cookies.
pub const ORIGIN_HOST: &str = "origin.demo-publisher.example";

/// A bound demo origin, ready to [`run`](Server::run).
pub struct Server {
    listener: TcpListener,
    state: State,
}

struct State {
    root: PathBuf,
    nextjs: Option<Replay>,
    cache: BodyCache,
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
            listener: TcpListener::bind(addr)?,
            state: State {
                root: root.into(),
                nextjs: replay,
                cache: BodyCache::default(),
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

    /// Accepts connections forever, one thread per connection.
    pub fn run(self) -> io::Result<()> {
        let state = Arc::new(self.state);
        loop {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // E.g. EMFILE under load: back off briefly, keep serving.
                    if state.log {
                        eprintln!("accept failed: {e}");
                    }
                    thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let state = state.clone();
            let spawned = thread::Builder::new()
                .name("demo-origin-conn".to_string())
                .spawn(move || handle_connection(stream, &state));
            if let Err(e) = spawned {
                eprintln!("cannot spawn connection thread: {e}");
            }
        }
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

/// What to do with the connection after one exchange.
enum Next {
    KeepAlive,
    Close,
    Abort,
}

fn handle_connection(stream: TcpStream, state: &State) {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    loop {
        match exchange(&mut reader, &mut writer, state, &peer) {
            Next::KeepAlive => continue,
            Next::Close => {
                lingering_close(&mut reader, &writer);
                return;
            }
            Next::Abort => {
                let _ = writer.shutdown(Shutdown::Both);
                return;
            }
        }
    }
}

/// Half-closes, then discards what the client still sends for a moment so
/// that the kernel does not reset the connection before it read our reply.
fn lingering_close(reader: &mut BufReader<TcpStream>, writer: &TcpStream) {
    if writer.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let _ = reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(500)));
    let mut sink = [0u8; 8192];
    let mut budget: usize = 1024 * 1024;
    while budget > 0 {
        match reader.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => budget = budget.saturating_sub(n),
        }
    }
}

fn exchange(
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
    state: &State,
    peer: &str,
) -> Next {
    let head = match http::read_head(reader) {
        Ok(Some(head)) => head,
        Ok(None) => return Next::Close,
        Err(e) => return fail(writer, state, peer, None, &e),
    };
    let framing = match head.body_framing() {
        Ok(f) => f,
        Err(e) => return fail(writer, state, peer, Some(&head), &e),
    };
    if framing != BodyFraming::None
        && head.expects_continue()
        && writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err()
    {
        return Next::Abort;
    }
    let request_body = match http::read_body(reader, framing) {
        Ok(b) => b,
        Err(e) => return fail(writer, state, peer, Some(&head), &e),
    };
    let started = Instant::now();
    let (knobs, resource) = match Knobs::parse(head.query.as_deref()) {
        Ok(knobs) => {
            let resource = routes::route(
                &state.root,
                state.nextjs.as_ref(),
                &state.cache,
                &head,
                &request_body,
            );
            (knobs, resource)
        }
        Err(msg) => (
            Knobs::default(),
            Resource::html_message(400, "Bad Request", &format!("Invalid knob: {msg}")),
        ),
    };
    let keep_alive = head.keep_alive();
    let (response, payload, limits, label) = prepare(&head, &knobs, resource, &state.cache);
    let mut response = response;
    if !keep_alive {
        response.add("Connection", "close");
    }
    if let Some(delay) = knobs.headers_delay {
        thread::sleep(delay);
    }
    let status = response.status;
    let result = body::send(writer, response, payload, limits, head.method == "HEAD");
    // When the last byte was handed to the kernel, on the wall clock, so benchmarks on the same
    // machine can tell which client bytes arrived before the origin finished.
    let end_unix_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let outcome = match &result {
        Ok(sent) => describe(sent),
        Err(e) => format!(" write-error=\"{e}\""),
    };
    if state.log {
        eprintln!(
            "{peer} \"{} {} HTTP/1.{}\" {status} {label}{outcome} {}ms end_unix_us={end_unix_us}",
            head.method,
            head.target,
            head.minor_version,
            started.elapsed().as_millis()
        );
    }
    match result {
        Ok(Sent { aborted: true, .. }) | Err(_) => Next::Abort,
        Ok(_) if keep_alive => Next::KeepAlive,
        Ok(_) => Next::Close,
    }
}

fn describe(sent: &Sent) -> String {
    let died = if sent.aborted { " died" } else { "" };
    format!(" bytes={}{died}", sent.body_bytes)
}

/// Applies the knobs to `resource`: status, redirect, cookies, content
/// coding and body shaping. Returns the head (without framing headers),
/// payload, limits and a short log label.
fn prepare(
    head: &RequestHead,
    knobs: &Knobs,
    resource: Resource,
    cache: &BodyCache,
) -> (ResponseHead, Payload, Limits, String) {
    let mut resource = resource;
    if let Some(path) = &knobs.redirect {
        let location = format!("https://{ORIGIN_HOST}{path}");
        let mut redirect = Resource::html_message(302, "Found", &format!("Moved to {location}"));
        redirect.headers.push(("Location".to_string(), location));
        resource = redirect;
    }
    let status = knobs.status.unwrap_or(resource.status);
    let mut response = ResponseHead::new(status);
    if let Some(content_type) = &resource.content_type {
        response.add("Content-Type", content_type.as_ref());
    }
    for (name, value) in &resource.headers {
        response.add(name, value.clone());
    }
    if knobs.set_cookie {
        response.add(
            "Set-Cookie",
            format!("session=abc123; Domain={ORIGIN_HOST}; Path=/; HttpOnly"),
        );
        response.add("Set-Cookie", "pref=dark; Path=/");
    }
    let varies_on_coding = resource.headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("vary") && v.to_ascii_lowercase().contains("accept-encoding")
    });
    if resource.text && !varies_on_coding {
        response.add("Vary", "Accept-Encoding");
    }
    let encoding = if knobs.lie_encoding.is_some() {
        Encoding::Identity
    } else if let Some(forced) = knobs.encoding {
        forced
    } else if resource.text {
        codec::negotiate(head.header("accept-encoding"))
    } else {
        Encoding::Identity
    };
    let content_encoding = knobs.lie_encoding.or(encoding.header_value());
    if let Some(ce) = content_encoding {
        response.add("Content-Encoding", ce);
    }
    let limits = Limits {
        truncate: knobs.truncate,
        die_after: knobs.die_after,
    };
    let mut label = format!("ce={}", content_encoding.unwrap_or("identity"));
    let payload = if status == 204 || status == 304 {
        Payload::Empty
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

/// Answers a request that could not be read, then closes (or aborts when
/// the peer is gone).
fn fail(
    writer: &mut TcpStream,
    state: &State,
    peer: &str,
    head: Option<&RequestHead>,
    err: &ReadError,
) -> Next {
    let request = head.map_or_else(|| "-".to_string(), |h| format!("{} {}", h.method, h.target));
    let Some(status) = err.status() else {
        if state.log && head.is_some() {
            eprintln!("{peer} \"{request}\" - {}", err.message());
        }
        return Next::Abort;
    };
    if state.log {
        eprintln!("{peer} \"{request}\" {status} {}", err.message());
    }
    let page = Resource::html_message(status, http::reason(status), &err.message());
    let mut response = ResponseHead::new(status);
    if let Some(content_type) = &page.content_type {
        response.add("Content-Type", content_type.as_ref());
    }
    response.add("Connection", "close");
    let sent = body::send(
        writer,
        response,
        Payload::Whole(page.body),
        Limits::default(),
        false,
    );
    match sent {
        Ok(_) => Next::Close,
        Err(_) => Next::Abort,
    }
}
