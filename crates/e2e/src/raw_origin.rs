//! A test-only origin that misbehaves on purpose: for each request it plays a script of raw
//! bytes, pauses, a clean close, a reset or a hang, chosen by the request's path.
//!
//! The demo origin stays a well-behaved server; this one exists so that the fault tests can
//! send exactly the bytes a broken or hostile origin would: wrong lengths, bad chunk sizes,
//! interim responses, bytes that are not UTF-8 in headers, a connection cut at any byte.
//!
//! It records the header section of every request it receives (request line and headers, raw
//! bytes), so a test can check what the proxy actually sent upstream.
//!
//! Everything is bounded: reads and writes time out, pauses and hangs end when the origin is
//! dropped, and dropping it joins every thread it started.
//!
//! A reset needs no socket option: the origin only *peeks* at the request, and a socket closed
//! with received data still unread makes the kernel send a reset (RST) instead of a normal
//! close (FIN), as RFC 2525 (section 2.17) describes and Linux does. Every other ending reads
//! the request first, so the close is a clean FIN.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest wait for a request's header section, and for any single read or write.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a [`Step::Hang`] lasts if neither side ends it.
const MAX_HANG: Duration = Duration::from_secs(60);
/// How often idle loops look at the stop flag.
const TICK: Duration = Duration::from_millis(5);
/// Largest request header section it reads.
const MAX_HEAD: usize = 64 * 1024;

/// One step of a scripted response.
#[derive(Debug, Clone)]
pub enum Step {
    /// Write these bytes (a status line, headers, body bytes, anything).
    Write(Vec<u8>),
    /// Say nothing for this long.
    Sleep(Duration),
    /// Close the connection cleanly (FIN), after reading the request.
    Close,
    /// Reset the connection (RST): close it with the request still unread.
    Reset,
    /// Keep the connection open and silent until the peer closes it or the origin stops.
    Hang,
}

/// A script: the steps played, in order, for one request. A script that ends without
/// [`Step::Close`], [`Step::Reset`] or [`Step::Hang`] closes cleanly.
pub type Script = Vec<Step>;

/// The origin: a listener on `127.0.0.1` (a free port) served by background threads.
/// Dropping it stops everything it started.
#[derive(Debug)]
pub struct RawOrigin {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    /// `None` while refusing connections (see [`RawOrigin::refuse`]).
    listener: Mutex<Option<TcpListener>>,
    scripts: Mutex<HashMap<String, Arc<Script>>>,
    /// `(path, raw header section)` of every request, in arrival order.
    requests: Mutex<Vec<(String, Vec<u8>)>>,
    connections: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking connection thread must not take the whole origin down with it.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RawOrigin {
    /// Starts listening on a free port of `127.0.0.1`.
    ///
    /// # Errors
    /// If no port can be bound.
    pub fn start() -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        *lock(&shared.listener) = Some(listener);
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || accept_loop(&shared))
        };
        Ok(Self {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Plays `script` for every request whose path (without query) is `path`. Other paths
    /// get a `404`.
    pub fn script(&self, path: &str, script: Script) {
        lock(&self.shared.scripts).insert(path.to_owned(), Arc::new(script));
    }

    /// The raw header sections (request line and headers, up to and including the empty
    /// line) of the requests received for `path` so far, oldest first, and forgets them.
    pub fn take_requests(&self, path: &str) -> Vec<Vec<u8>> {
        let mut all = lock(&self.shared.requests);
        let (mine, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|(p, _)| p == path);
        *all = rest;
        mine.into_iter().map(|(_, head)| head).collect()
    }

    /// Closes the listening socket, so that connections to the port are refused, until
    /// [`RawOrigin::resume`].
    pub fn refuse(&self) {
        lock(&self.shared.listener).take();
    }

    /// Listens on the same port again after [`RawOrigin::refuse`].
    ///
    /// # Errors
    /// If the port cannot be bound again (something else took it meanwhile).
    pub fn resume(&self) -> io::Result<()> {
        let mut slot = lock(&self.shared.listener);
        if slot.is_none() {
            let listener = TcpListener::bind(self.addr)?;
            listener.set_nonblocking(true)?;
            *slot = Some(listener);
        }
        Ok(())
    }
}

impl Drop for RawOrigin {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        for connection in connections {
            let _ = connection.join();
        }
    }
}

fn accept_loop(shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        let accepted = lock(&shared.listener).as_ref().map(TcpListener::accept);
        match accepted {
            Some(Ok((stream, _))) => {
                let shared_for_thread = Arc::clone(shared);
                let handle = std::thread::spawn(move || {
                    // Errors only mean the peer went away: the connection is over either way.
                    let _ = serve(stream, &shared_for_thread);
                });
                let mut connections = lock(&shared.connections);
                connections.retain(|c| !c.is_finished());
                connections.push(handle);
            }
            Some(Err(e)) if e.kind() != io::ErrorKind::WouldBlock => std::thread::sleep(TICK),
            _ => std::thread::sleep(TICK),
        }
    }
}

/// Sleeps for `d` in small steps; `false` if the origin is stopping.
fn pause(d: Duration, shared: &Shared) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if shared.stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(TICK.min(until.saturating_duration_since(Instant::now())));
    }
    true
}

fn serve(mut stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = peek_head(&stream, shared)?;
    let path = request_path(&head);
    lock(&shared.requests).push((path.clone(), head.clone()));
    let script = lock(&shared.scripts).get(&path).cloned();
    let Some(script) = script else {
        consume(&mut stream, head.len())?;
        stream.write_all(
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        )?;
        return close(stream);
    };
    // A reset needs the request unread; every other ending reads it first.
    let resets = script.iter().any(|s| matches!(s, Step::Reset));
    if !resets {
        consume(&mut stream, head.len())?;
    }
    for step in script.iter() {
        match step {
            Step::Write(bytes) => stream.write_all(bytes)?,
            Step::Sleep(d) => {
                if !pause(*d, shared) {
                    return close(stream);
                }
            }
            Step::Close => return close(stream),
            // Dropped with the request unread: the kernel answers with a reset.
            Step::Reset => return Ok(()),
            Step::Hang => return hang(stream, shared),
        }
    }
    close(stream)
}

/// Waits until the request's header section has arrived and returns it, without reading it
/// from the socket.
fn peek_head(stream: &TcpStream, shared: &Shared) -> io::Result<Vec<u8>> {
    let deadline = Instant::now() + IO_TIMEOUT;
    let mut buf = vec![0u8; MAX_HEAD];
    let mut seen = 0;
    loop {
        let n = stream.peek(&mut buf)?;
        if let Some(end) = buf[..n].windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(buf[..end + 4].to_vec());
        }
        if n == 0 || n == buf.len() || Instant::now() > deadline {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "no complete request header section",
            ));
        }
        if n == seen {
            // Nothing new: peek would return at once again.
            if !pause(TICK, shared) {
                return Err(io::Error::other("origin stopping"));
            }
        }
        seen = n;
    }
}

fn consume(stream: &mut TcpStream, n: usize) -> io::Result<()> {
    let mut head = vec![0u8; n];
    stream.read_exact(&mut head)
}

/// A clean close: reads whatever else the peer already sent (so the kernel has no reason to
/// reset), then sends FIN.
fn close(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nonblocking(true)?;
    let mut buf = [0u8; 4096];
    while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
    stream.shutdown(Shutdown::Write)
}

fn hang(mut stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_millis(50)))?;
    let until = Instant::now() + MAX_HANG;
    let mut buf = [0u8; 4096];
    while Instant::now() < until && !shared.stop.load(Ordering::SeqCst) {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    close(stream)
}

/// The path of a request line (`GET /a/b?q HTTP/1.1` → `/a/b`), or the whole target.
fn request_path(head: &[u8]) -> String {
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let target = line.split(|&b| b == b' ').nth(1).unwrap_or_default();
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    String::from_utf8_lossy(path).into_owned()
}

/// `body` as one chunk of a chunked transfer (`<hex size>\r\n<body>\r\n`); empty input gives
/// nothing (an empty chunk would be the terminator).
pub fn chunk(body: &[u8]) -> Vec<u8> {
    if body.is_empty() {
        return Vec::new();
    }
    let mut out = format!("{:x}\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
    out
}

/// The end of a chunked transfer: the last (empty) chunk and an empty trailer section.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(addr: SocketAddr, request: &[u8]) -> io::Result<Vec<u8>> {
        let mut s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(request)?;
        let mut out = Vec::new();
        s.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn plays_the_script_for_the_path_and_records_the_request() {
        let origin = RawOrigin::start().unwrap();
        origin.script(
            "/a",
            vec![
                Step::Write(b"HTTP/1.1 200 OK\r\n\r\nab".to_vec()),
                Step::Sleep(Duration::from_millis(20)),
                Step::Write(b"c".to_vec()),
            ],
        );
        let got = exchange(origin.addr(), b"GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
        assert_eq!(got, b"HTTP/1.1 200 OK\r\n\r\nabc");
        assert_eq!(
            origin.take_requests("/a"),
            vec![b"GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n".to_vec()]
        );
        assert!(origin.take_requests("/a").is_empty());
        let other = exchange(origin.addr(), b"GET /b HTTP/1.1\r\n\r\n").unwrap();
        assert!(other.starts_with(b"HTTP/1.1 404"));
    }

    #[test]
    fn a_reset_is_a_reset_and_a_close_is_not() {
        let origin = RawOrigin::start().unwrap();
        origin.script(
            "/rst",
            vec![Step::Write(b"HTTP/1.1 2".to_vec()), Step::Reset],
        );
        origin.script(
            "/fin",
            vec![Step::Write(b"HTTP/1.1 2".to_vec()), Step::Close],
        );
        let reset = exchange(origin.addr(), b"GET /rst HTTP/1.1\r\n\r\n");
        assert_eq!(
            reset.map_err(|e| e.kind()).err(),
            Some(io::ErrorKind::ConnectionReset)
        );
        let fin = exchange(origin.addr(), b"GET /fin HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(fin, b"HTTP/1.1 2");
    }

    #[test]
    fn refuses_connections_until_resumed() {
        let origin = RawOrigin::start().unwrap();
        origin.refuse();
        let refused = TcpStream::connect(origin.addr()).map(drop);
        assert_eq!(
            refused.map_err(|e| e.kind()).err(),
            Some(io::ErrorKind::ConnectionRefused)
        );
        origin.resume().unwrap();
        let got = exchange(origin.addr(), b"GET /none HTTP/1.1\r\n\r\n").unwrap();
        assert!(got.starts_with(b"HTTP/1.1 404"));
    }

    #[test]
    fn a_hang_ends_when_the_origin_is_dropped() {
        let origin = RawOrigin::start().unwrap();
        origin.script("/hang", vec![Step::Hang]);
        let mut s = TcpStream::connect(origin.addr()).unwrap();
        s.write_all(b"GET /hang HTTP/1.1\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        drop(origin);
        assert!(started.elapsed() < Duration::from_secs(2));
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut out = Vec::new();
        assert_eq!(s.read_to_end(&mut out).unwrap(), 0);
    }
}
