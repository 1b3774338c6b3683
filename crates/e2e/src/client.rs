//! The timing HTTP/1 client of the end-to-end tests, the soak and the benchmarks, on hyper 1.
//!
//! hyper parses the response and undoes its transfer framing; this module only takes the
//! times: when the head was parsed, when each body frame came out of the decoder (the first
//! one is the first body byte), and when the decoder reported the end. hyper reports a chunked
//! body without its terminator, or fewer bytes than the `Content-Length`, as an error on the
//! body, which is what [`Timed::complete`] records: a cut transfer never looks complete.
//!
//! Each call opens one connection (`Connection: close`), on a current-thread tokio runtime
//! kept per calling thread, so the timing includes no other request's work. A [`Session`]
//! keeps one connection for several requests, for the checks of keep-alive.

use std::cell::OnceCell;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::runtime::Runtime;
use tokio::time::timeout_at;

pub use hyper::Version;

/// One response, with arrival times measured from the moment the request was sent.
#[derive(Debug, Clone)]
pub struct Timed {
    /// Status code.
    pub status: u16,
    /// The response's HTTP version.
    pub version: Version,
    /// Headers: names lowercase, exact value bytes, grouped by name in first-seen order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body after transfer decoding (still content-encoded).
    pub body: Vec<u8>,
    /// Whether the framing said the body ended (chunked terminator seen, `Content-Length`
    /// bytes received, or the close that ends a body without either). `false` means the
    /// transfer was cut short or did not end within the timeout.
    pub complete: bool,
    /// When the response head had arrived.
    pub headers_at: Duration,
    /// When the first body byte arrived, if any did.
    pub first_body_at: Option<Duration>,
    /// When the last byte arrived: the end of the body (its terminator, for chunked), or the
    /// last body bytes of a transfer that was cut short.
    pub last_at: Duration,
    /// `(arrival time, body bytes received by then)` after each body frame: the progress.
    pub progress: Vec<(Duration, usize)>,
}

impl Timed {
    /// The first value of header `name` (lowercase), if it is UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        let value = self.headers.iter().find(|(n, _)| n == name)?;
        std::str::from_utf8(&value.1).ok()
    }

    /// Every value of header `name` (lowercase), exact bytes, in order.
    pub fn header_values(&self, name: &str) -> Vec<&[u8]> {
        let named = self.headers.iter().filter(|(n, _)| n == name);
        named.map(|(_, v)| v.as_slice()).collect()
    }

    /// The edge ID a `Set-Cookie: ts-ec=…` of this response gives (not one that expires it).
    pub fn edge_id_set(&self) -> Option<String> {
        (self.header_values("set-cookie").iter())
            .filter_map(|v| std::str::from_utf8(v).ok())
            .find_map(|c| c.strip_prefix("ts-ec=")?.split(';').next())
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
    }

    /// Body bytes that had arrived by `at`.
    pub fn body_bytes_by(&self, at: Duration) -> usize {
        self.progress
            .iter()
            .take_while(|(t, _)| *t <= at)
            .last()
            .map_or(0, |(_, n)| *n)
    }
}

/// Sends one `GET` (with `Connection: close`) and reads the whole response.
///
/// # Errors
/// Connection failures; `InvalidData` when the connection ended (or the proxy sent something
/// unparseable) before a complete response head; `TimedOut` when no head came in `timeout`.
pub fn get(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> io::Result<Timed> {
    request(addr, "GET", path, headers, timeout)
}

/// Like [`get`] with any method and no body.
///
/// # Errors
/// As [`get`].
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> io::Result<Timed> {
    send(addr, method, path, headers, &[], timeout)
}

/// Like [`request`] with a request body (sent with a `content-length`).
///
/// # Errors
/// As [`get`]; `InvalidInput` for a method, path or header hyper would not send.
pub fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Timed> {
    send_version(addr, Version::HTTP_11, method, path, headers, body, timeout)
}

/// Like [`send`] in HTTP `version` (`HTTP_10` or `HTTP_11`): hyper writes the request line in
/// that version and holds the response to its rules (an HTTP/1.0 response cannot be chunked).
///
/// # Errors
/// As [`send`].
pub fn send_version(
    addr: SocketAddr,
    version: Version,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Timed> {
    one_exchange(None, addr, version, method, path, headers, body, timeout)
}

/// Like [`get`], from the local address `source` (any port): a second client, as the server
/// sees it. On Linux every `127.x.y.z` is local, so `127.0.0.2` and `127.0.0.3` are two
/// readers at two addresses on one machine (Viceroy reports the peer address as the client
/// IP).
///
/// # Errors
/// As [`get`]; `AddrNotAvailable` when `source` is not a local address.
pub fn get_from(
    source: IpAddr,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> io::Result<Timed> {
    send_from(source, addr, "GET", path, headers, &[], timeout)
}

/// Like [`send`], from the local address `source` (see [`get_from`]): any method, with a
/// body.
///
/// # Errors
/// As [`get_from`].
pub fn send_from(
    source: IpAddr,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Timed> {
    let version = Version::HTTP_11;
    one_exchange(
        Some(source),
        addr,
        version,
        method,
        path,
        headers,
        body,
        timeout,
    )
}

/// One request on a connection of its own, from `source` when given.
#[allow(clippy::too_many_arguments)]
fn one_exchange(
    source: Option<IpAddr>,
    addr: SocketAddr,
    version: Version,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Timed> {
    let request = build_request(addr, version, method, path, headers, body, true)?;
    on_runtime(|runtime| {
        runtime.block_on(async {
            let deadline = tokio::time::Instant::now() + timeout;
            let (mut sender, connection) = connect_from(source, addr, deadline).await?;
            let result = exchange(&mut sender, request, deadline).await;
            connection.abort();
            result
        })
    })
}

/// One keep-alive connection that carries several requests in turn, for the checks that one
/// response's framing leaves the connection usable for the next. Requests carry no
/// `Connection: close`; a request after the server closed the connection is an
/// `InvalidData` error.
///
/// The connection is driven by the runtime of the thread that opened it, so the session
/// stays on that thread (it is not `Send`).
#[derive(Debug)]
pub struct Session {
    addr: SocketAddr,
    sender: Sender,
    connection: tokio::task::JoinHandle<Result<(), hyper::Error>>,
    _one_thread: std::marker::PhantomData<*const ()>,
}

impl Session {
    /// Connects to `addr`.
    ///
    /// # Errors
    /// Connection failures, or no connection within `timeout`.
    pub fn open(addr: SocketAddr, timeout: Duration) -> io::Result<Session> {
        on_runtime(|runtime| {
            runtime.block_on(async {
                let deadline = tokio::time::Instant::now() + timeout;
                let (sender, connection) = connect(addr, deadline).await?;
                Ok(Session {
                    addr,
                    sender,
                    connection,
                    _one_thread: std::marker::PhantomData,
                })
            })
        })
    }

    /// Sends `GET path` on this connection and reads the whole response.
    ///
    /// # Errors
    /// As [`get`]; `InvalidData` also when the connection is closed.
    pub fn get(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> io::Result<Timed> {
        self.request("GET", path, headers, timeout)
    }

    /// Like [`Session::get`] with any method and no body.
    ///
    /// # Errors
    /// As [`Session::get`].
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> io::Result<Timed> {
        let request = build_request(
            self.addr,
            Version::HTTP_11,
            method,
            path,
            headers,
            &[],
            false,
        )?;
        let sender = &mut self.sender;
        on_runtime(|runtime| {
            runtime.block_on(async {
                let deadline = tokio::time::Instant::now() + timeout;
                // The previous response may still be winding down in the connection task.
                timeout_at(deadline, sender.ready())
                    .await
                    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connection not ready"))?
                    .map_err(no_head)?;
                exchange(sender, request, deadline).await
            })
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Runs `f` with this thread's current-thread runtime, built on first use.
fn on_runtime<T>(f: impl FnOnce(&Runtime) -> io::Result<T>) -> io::Result<T> {
    thread_local! {
        static RUNTIME: OnceCell<Runtime> = const { OnceCell::new() };
    }
    RUNTIME.with(|cell| {
        let runtime = match cell.get() {
            Some(runtime) => runtime,
            None => {
                let built = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                cell.get_or_init(|| built)
            }
        };
        f(runtime)
    })
}

fn build_request(
    addr: SocketAddr,
    version: Version,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    close: bool,
) -> io::Result<Request<Full<Bytes>>> {
    let invalid = |what: &str, e: &dyn std::fmt::Display| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{what}: {e}"))
    };
    let method = Method::from_bytes(method.as_bytes()).map_err(|e| invalid(method, &e))?;
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .version(version)
        .body(Full::new(Bytes::copy_from_slice(body)))
        .map_err(|e| invalid(path, &e))?;
    let map = request.headers_mut();
    // hyper's connection-level client sets no Host: it is ours to send, as any client must.
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        map.insert(
            hyper::header::HOST,
            HeaderValue::from_str(&addr.to_string()).map_err(|e| invalid("host", &e))?,
        );
    }
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(name, &e))?;
        let value = HeaderValue::from_bytes(value.as_bytes()).map_err(|e| invalid(value, &e))?;
        map.append(name, value);
    }
    if close {
        // Added to the caller's own `Connection` lines (which name headers to drop), if any.
        map.append(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    }
    Ok(request)
}

/// Opens a connection and hands it to a task of its own (aborted by the caller when done).
async fn connect(
    addr: SocketAddr,
    deadline: tokio::time::Instant,
) -> io::Result<(Sender, tokio::task::JoinHandle<Result<(), hyper::Error>>)> {
    connect_from(None, addr, deadline).await
}

/// [`connect`] from the local address `source` (any port) when given.
async fn connect_from(
    source: Option<IpAddr>,
    addr: SocketAddr,
    deadline: tokio::time::Instant,
) -> io::Result<(Sender, tokio::task::JoinHandle<Result<(), hyper::Error>>)> {
    let connecting = async {
        match source {
            None => tokio::net::TcpStream::connect(addr).await,
            Some(ip) => {
                let socket = if ip.is_ipv4() {
                    tokio::net::TcpSocket::new_v4()?
                } else {
                    tokio::net::TcpSocket::new_v6()?
                };
                socket.bind(SocketAddr::new(ip, 0))?;
                socket.connect(addr).await
            }
        }
    };
    let stream = timeout_at(deadline, connecting)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::Builder::new()
        // The fault matrix sends 200 headers through the proxy; hyper's default is 100.
        .max_headers(1000)
        .handshake(TokioIo::new(stream))
        .await
        .map_err(no_head)?;
    Ok((sender, tokio::spawn(connection)))
}

/// One request on `sender`'s connection, timed from just before the request is handed to
/// hyper.
async fn exchange(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
    deadline: tokio::time::Instant,
) -> io::Result<Timed> {
    let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "no response head in time");
    let start = Instant::now();
    let response = timeout_at(deadline, sender.send_request(request))
        .await
        .map_err(|_| timed_out())?
        .map_err(no_head)?;
    let headers_at = start.elapsed();
    let (head, mut body) = response.into_parts();
    let mut timed = Timed {
        status: head.status.as_u16(),
        version: head.version,
        headers: (head.headers.iter())
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect(),
        body: Vec::new(),
        complete: false,
        headers_at,
        first_body_at: None,
        last_at: headers_at,
        progress: Vec::new(),
    };
    loop {
        match timeout_at(deadline, body.frame()).await {
            // Out of time: what arrived is kept, and the transfer is not complete.
            Err(_) => break,
            Ok(None) => {
                timed.complete = true;
                timed.last_at = start.elapsed();
                break;
            }
            // Cut short (no terminator, short Content-Length, reset): not complete.
            Ok(Some(Err(_))) => break,
            Ok(Some(Ok(frame))) => {
                let Ok(data) = frame.into_data() else {
                    continue; // trailers
                };
                if data.is_empty() {
                    continue;
                }
                let now = start.elapsed();
                timed.first_body_at.get_or_insert(now);
                timed.body.extend_from_slice(&data);
                timed.progress.push((now, timed.body.len()));
                timed.last_at = now;
            }
        }
    }
    Ok(timed)
}

/// A failure before the response head: the connection closed, was reset, or carried
/// something that is not an HTTP/1 response.
fn no_head(e: hyper::Error) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("no complete response head: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// Accepts one connection on a free port and hands it to `handle` on a thread of its own.
    fn serve(handle: impl FnOnce(std::net::TcpStream) + Send + 'static) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            let (socket, _) = listener.accept().expect("accept");
            handle(socket);
        });
        addr
    }

    /// Serves one connection: reads the request head, then writes `parts` with `gap` between
    /// them and closes.
    fn serve_once(parts: Vec<&'static [u8]>, gap: Duration) -> SocketAddr {
        serve(move |mut socket| {
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            for part in parts {
                std::thread::sleep(gap);
                let _ = socket.write_all(part);
            }
        })
    }

    const SECOND: Duration = Duration::from_secs(5);

    #[test]
    fn a_complete_chunked_body_with_arrival_times() {
        let addr = serve_once(
            vec![
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nX-A: \xe92\r\n\r\n",
                b"5\r\nhello\r\n",
                b"6\r\n world\r\n",
                b"0\r\n\r\n",
            ],
            Duration::from_millis(40),
        );
        let t = get(addr, "/", &[], SECOND).unwrap();
        assert_eq!(t.status, 200);
        assert_eq!(t.body, b"hello world");
        assert!(t.complete);
        assert_eq!(t.header_values("x-a"), [&b"1"[..], b"\xe92"]);
        let first = t.first_body_at.unwrap();
        assert!(t.headers_at < first && first < t.last_at, "{t:?}");
        // The terminator came 40 ms after the last data: the last byte is the terminator.
        let last_data = t.progress.last().unwrap().0;
        assert!(t.last_at >= last_data + Duration::from_millis(20), "{t:?}");
        assert_eq!(t.body_bytes_by(first), 5);
        assert_eq!(t.body_bytes_by(t.last_at), 11);
    }

    #[test]
    fn a_chunked_body_without_terminator_is_incomplete() {
        let addr = serve_once(
            vec![b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n"],
            Duration::ZERO,
        );
        let t = get(addr, "/", &[], SECOND).unwrap();
        assert_eq!(t.body, b"hello");
        assert!(!t.complete);
    }

    #[test]
    fn a_short_content_length_body_is_incomplete() {
        let addr = serve_once(
            vec![b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhello"],
            Duration::ZERO,
        );
        let t = get(addr, "/", &[], SECOND).unwrap();
        assert_eq!(t.body, b"hello");
        assert!(!t.complete);
        let addr = serve_once(
            vec![b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"],
            Duration::ZERO,
        );
        assert!(get(addr, "/", &[], SECOND).unwrap().complete);
    }

    #[test]
    fn a_body_that_stops_arriving_is_incomplete_at_the_timeout() {
        let addr = serve_once(
            vec![
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n",
                b"",
            ],
            Duration::from_millis(800),
        );
        let t = get(addr, "/", &[], Duration::from_millis(400)).unwrap_err();
        assert_eq!(t.kind(), io::ErrorKind::TimedOut, "{t}");
        let addr = serve_once(
            vec![
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n",
                b"0\r\n\r\n",
            ],
            // The head at 1.5 s, the end at 3 s: a 2.5 s timeout falls between, with a second
            // to spare for the head on a loaded machine.
            Duration::from_millis(1500),
        );
        let t = get(addr, "/", &[], Duration::from_millis(2500)).unwrap();
        assert!(!t.complete && t.body == b"hello", "{t:?}");
    }

    #[test]
    fn a_close_before_the_head_is_invalid_data() {
        let addr = serve_once(vec![b"HTTP/1.1 200 OK\r\ncontent-le"], Duration::ZERO);
        let e = get(addr, "/", &[], SECOND).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    }

    /// Serves one connection: answers each request head in turn with the next of `responses`,
    /// then closes.
    fn serve_keep_alive(responses: Vec<&'static [u8]>) -> SocketAddr {
        serve(move |mut socket| {
            let mut pending = Vec::new();
            let mut buf = [0u8; 1024];
            for response in responses {
                let end = loop {
                    if let Some(at) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                    match socket.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => pending.extend_from_slice(&buf[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
                assert!(!head.contains("connection: close"), "{head}");
                pending.drain(..end);
                let _ = socket.write_all(response);
            }
        })
    }

    #[test]
    fn a_session_sends_its_requests_on_one_connection() {
        let addr = serve_keep_alive(vec![
            b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\none",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n",
        ]);
        let mut session = Session::open(addr, SECOND).unwrap();
        let one = session.get("/1", &[], SECOND).unwrap();
        let two = session.get("/2", &[], SECOND).unwrap();
        assert_eq!((&one.body[..], one.complete), (&b"one"[..], true));
        assert_eq!((&two.body[..], two.complete), (&b"two"[..], true));
        // The server closed after its two answers: a third request is an error.
        let e = session.get("/3", &[], SECOND).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    }

    #[test]
    fn head_and_http_1_0() {
        let addr = serve_once(
            vec![b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n"],
            Duration::ZERO,
        );
        let t = request(addr, "HEAD", "/", &[], SECOND).unwrap();
        assert!(t.complete && t.body.is_empty(), "{t:?}");
        // An HTTP/1.0 body ends at the close.
        let addr = serve_once(vec![b"HTTP/1.0 200 OK\r\n\r\nall of it"], Duration::ZERO);
        let t = send_version(addr, Version::HTTP_10, "GET", "/", &[], &[], SECOND).unwrap();
        assert_eq!((t.version, t.complete), (Version::HTTP_10, true));
        assert_eq!(t.body, b"all of it");
    }

    /// A request from `127.0.0.2` and one from `127.0.0.3` reach the server from those
    /// addresses, and a caller's `Connection` line stays next to `close`.
    #[test]
    fn get_from_binds_the_source_address() {
        for source in ["127.0.0.2", "127.0.0.3"] {
            let (tx, rx) = std::sync::mpsc::channel();
            let addr = serve(move |mut socket| {
                let peer = socket.peer_addr().expect("peer");
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tx.send((peer.ip(), request));
                let _ = socket.write_all(b"HTTP/1.1 204 No Content\r\n\r\n");
            });
            let ip: IpAddr = source.parse().unwrap();
            let t = get_from(ip, addr, "/", &[("connection", "accept-language")], SECOND)
                .expect("answered");
            assert_eq!(t.status, 204);
            let (peer, request) = rx.recv_timeout(SECOND).expect("seen");
            assert_eq!(peer, ip);
            let head = String::from_utf8_lossy(&request).to_ascii_lowercase();
            assert!(head.contains("connection: accept-language"), "{head}");
            assert!(head.contains("close"), "{head}");
        }
    }
}
