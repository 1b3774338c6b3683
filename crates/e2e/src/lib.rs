//! Tools for end-to-end tests and benchmarks: a timing HTTP/1.1 client that records when the
//! headers, the first body byte and the last byte arrived, and whether the message was
//! complete; and process guards for the servers the tests start.
//!
//! The client is deliberately raw (a `TcpStream`): it must see exactly what went over the wire,
//! including a chunked body that stops without its terminator.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub mod raw_origin;

/// One response, with arrival times measured from the moment the request was written.
#[derive(Debug, Clone)]
pub struct Timed {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased, in order (bytes that are not UTF-8 replaced; see `head`).
    pub headers: Vec<(String, String)>,
    /// The raw header section: status line, headers and the empty line that ends them.
    pub head: Vec<u8>,
    /// Everything that arrived after the header section, transfer framing included (for a
    /// `204` or `304`, bytes that must not be there).
    pub raw_body: Vec<u8>,
    /// The body after transfer decoding (still content-encoded).
    pub body: Vec<u8>,
    /// Whether the framing said the body ended (chunked terminator seen, or Content-Length
    /// bytes received). `false` means the transfer was cut short.
    pub complete: bool,
    /// When the end of the header section arrived.
    pub headers_at: Duration,
    /// When the first body byte arrived, if any did.
    pub first_body_at: Option<Duration>,
    /// When the last byte arrived.
    pub last_at: Duration,
    /// `(arrival time, body bytes received by then)` after each read: the body's progress.
    pub progress: Vec<(Duration, usize)>,
}

impl Timed {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
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
/// Connection failures, or no complete header section within `timeout`.
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
/// As [`get`].
pub fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Timed> {
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("host: {addr}\r\n"));
    }
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    req.push_str("connection: close\r\n\r\n");
    let mut raw_request = req.into_bytes();
    raw_request.extend_from_slice(body);
    send_raw(addr, &raw_request, method == "HEAD", timeout)
}

/// Writes `raw_request` exactly as given (any version, any bytes) and reads the response until
/// the connection closes; `head_only` for a `HEAD`, whose response has no body.
///
/// # Errors
/// As [`get`].
pub fn send_raw(
    addr: SocketAddr,
    raw_request: &[u8],
    head_only: bool,
    timeout: Duration,
) -> io::Result<Timed> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(timeout))?;
    let start = Instant::now();
    stream.write_all(raw_request)?;
    let mut raw = Vec::new();
    let mut arrivals: Vec<(Duration, usize)> = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let deadline = start + timeout;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                arrivals.push((start.elapsed(), raw.len()));
            }
            // A reset after an abandoned stream is an end, not a test error.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut =>
            {
                break
            }
            Err(e) => return Err(e),
        }
        if Instant::now() > deadline {
            break;
        }
        if head_only && raw.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    parse(&raw, &arrivals, head_only)
}

fn arrival_of(arrivals: &[(Duration, usize)], offset: usize) -> Duration {
    arrivals
        .iter()
        .find(|(_, len)| *len > offset)
        .map_or_else(|| arrivals.last().map_or(Duration::ZERO, |a| a.0), |a| a.0)
}

fn parse(raw: &[u8], arrivals: &[(Duration, usize)], head_only: bool) -> io::Result<Timed> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_owned());
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no complete header section"))?
        + 4;
    // A header value may carry any byte but controls; `head` keeps the exact bytes.
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let length: Option<usize> = header("content-length").and_then(|v| v.parse().ok());
    let body_raw = &raw[head_end..];
    let no_body = head_only || status == 204 || status == 304;
    // (raw offset of each decoded body byte run, run length), to map bytes to arrival times.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let (body, complete) = if no_body {
        (Vec::new(), true)
    } else if chunked {
        let mut body = Vec::new();
        let mut pos = 0;
        let mut complete = false;
        while let Some(line_end) = body_raw[pos..].windows(2).position(|w| w == b"\r\n") {
            let size_text = std::str::from_utf8(&body_raw[pos..pos + line_end]).unwrap_or("");
            let size_text = size_text.split(';').next().unwrap_or("").trim();
            let Ok(size) = usize::from_str_radix(size_text, 16) else {
                break;
            };
            let data_start = pos + line_end + 2;
            if size == 0 {
                complete = body_raw[data_start..].starts_with(b"\r\n");
                break;
            }
            let available = body_raw.len().saturating_sub(data_start).min(size);
            body.extend_from_slice(&body_raw[data_start..data_start + available]);
            runs.push((head_end + data_start, available));
            if available < size || body_raw.len() < data_start + size + 2 {
                break;
            }
            pos = data_start + size + 2;
        }
        (body, complete)
    } else if let Some(len) = length {
        let got = body_raw.len().min(len);
        runs.push((head_end, got));
        (body_raw[..got].to_vec(), body_raw.len() >= len)
    } else {
        runs.push((head_end, body_raw.len()));
        (body_raw.to_vec(), true)
    };
    let first_body_at = runs
        .iter()
        .find(|(_, len)| *len > 0)
        .map(|(off, _)| arrival_of(arrivals, *off));
    // Body progress: decoded body bytes available after each read.
    let progress = arrivals
        .iter()
        .map(|(t, raw_len)| {
            let n: usize = runs
                .iter()
                .map(|(off, len)| raw_len.saturating_sub(*off).min(*len))
                .sum();
            (*t, n)
        })
        .collect();
    Ok(Timed {
        status,
        headers,
        head: raw[..head_end].to_vec(),
        raw_body: body_raw.to_vec(),
        body,
        complete,
        headers_at: arrival_of(arrivals, head_end - 1),
        first_body_at,
        last_at: arrivals.last().map_or(Duration::ZERO, |a| a.0),
        progress,
    })
}

/// A child process killed (and reaped) when dropped, so a failing test leaves nothing behind.
#[derive(Debug)]
pub struct ChildGuard {
    child: Option<Child>,
    /// What it is, for messages.
    pub name: String,
}

impl ChildGuard {
    /// Stops the process now.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The process id, while running.
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The workspace root (two levels above this crate), canonical when it can be.
pub fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Builds the demo origin (release) and starts it on a free port with the workspace's
/// fixtures, logging its requests to `log` if given.
///
/// # Errors
/// If the build fails or the origin does not start.
pub fn build_and_start_demo_origin(
    root: &Path,
    log: Option<&Path>,
) -> Result<(ChildGuard, SocketAddr), String> {
    run(Command::new(cargo()).current_dir(root).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "demo-origin",
    ]))?;
    // Where cargo just put it: `CARGO_TARGET_DIR` when set.
    start_demo_origin(
        &target_dir(root).join("release/demo-origin"),
        &root.join("fixtures/site"),
        log,
    )
    .map_err(|e| format!("demo origin: {e}"))
}

/// A port that was free on 127.0.0.1 a moment ago.
///
/// # Errors
/// If no port can be bound.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts the demo origin binary on a free port and returns it with its address. With `log`,
/// its request log (one line per request, with the wall-clock time its last byte was sent)
/// goes there.
///
/// # Errors
/// If it cannot start or does not announce its address within 30 s.
pub fn start_demo_origin(
    binary: &Path,
    root: &Path,
    log: Option<&Path>,
) -> io::Result<(ChildGuard, SocketAddr)> {
    let stderr = match log {
        Some(path) => Stdio::from(std::fs::File::create(path)?),
        None => Stdio::null(),
    };
    let mut child = Command::new(binary)
        .args(["--addr", "127.0.0.1:0", "--root"])
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    let guard = ChildGuard {
        child: Some(child),
        name: "demo-origin".into(),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| io::Error::other("demo origin did not announce its address"))?;
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| io::Error::other(format!("unexpected demo origin banner {line:?}")))?;
    Ok((guard, addr))
}

/// Starts `viceroy serve` for `wasm` on a free port and waits until it answers.
///
/// # Errors
/// If Viceroy cannot start or does not answer `/_ts/health` within 120 s.
pub fn start_viceroy(
    wasm: &Path,
    manifest: &Path,
    log: &Path,
) -> io::Result<(ChildGuard, SocketAddr)> {
    let port = free_port()?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let log_file = std::fs::File::create(log)?;
    let child = Command::new("viceroy")
        .arg("serve")
        .arg("-C")
        .arg(manifest)
        .arg("--addr")
        .arg(addr.to_string())
        .arg(wasm)
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()?;
    let guard = ChildGuard {
        child: Some(child),
        name: format!("viceroy {}", wasm.display()),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if let Ok(r) = get(addr, "/_ts/health", &[], Duration::from_secs(2)) {
            if r.status == 200 {
                return Ok((guard, addr));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(io::Error::other(format!(
        "viceroy did not answer on {addr}; see {}",
        log.display()
    )))
}

/// The `cargo` running us (or `cargo` from PATH).
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Runs a command to completion.
///
/// # Errors
/// If it cannot start or exits unsuccessfully.
pub fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{cmd:?}: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| format!("{cmd:?} failed: {status}"))
}

/// Compares a body with the expected bytes. The error gives both lengths and 40 bytes either
/// side of the first difference, which is what a reader needs to see what went wrong.
///
/// # Errors
/// When the bytes differ.
pub fn same_bytes(got: &[u8], want: &[u8]) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let show = |b: &[u8]| {
        String::from_utf8_lossy(&b[at.saturating_sub(40).min(b.len())..(at + 40).min(b.len())])
            .into_owned()
    };
    Err(format!(
        "{} bytes, expected {}; first difference at {at}: got {:?}, want {:?}",
        got.len(),
        want.len(),
        show(got),
        show(want)
    ))
}

/// Runs a test harness's set-up and reports how long it took; on failure prints the error
/// and exits 1, since no scenario can run without it.
pub fn set_up_or_exit<W>(harness: &str, set_up: impl FnOnce() -> Result<W, String>) -> W {
    let started = std::time::Instant::now();
    match set_up() {
        Ok(world) => {
            eprintln!(
                "{harness} set-up took {:.1}s",
                started.elapsed().as_secs_f64()
            );
            world
        }
        Err(e) => {
            eprintln!("{harness} set-up failed: {e}");
            std::process::exit(1);
        }
    }
}

/// Cargo's target directory for the workspace at `root`: `CARGO_TARGET_DIR` when set (so a
/// suite can build in its own directory without racing another one over the same module),
/// else `root/target`.
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Builds the service (release, wasm32-wasip1) with `TRUSTED_SERVER__*` overrides and copies
/// the module to `to`. Settings are compiled in, so a test or benchmark that needs the origin
/// on a port chosen at run time builds its own service.
///
/// # Errors
/// If the build or the copy fails.
pub fn build_service(
    root: &Path,
    to: &Path,
    overrides: &[(String, String)],
) -> Result<PathBuf, String> {
    let mut cmd = Command::new(cargo());
    cmd.current_dir(root).args([
        "build",
        "--quiet",
        "--release",
        "--target",
        "wasm32-wasip1",
        "--bin",
        "trusted-server-edge",
    ]);
    for (k, v) in overrides {
        cmd.env(k, v);
    }
    run(&mut cmd)?;
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(
        target_dir(root).join("wasm32-wasip1/release/trusted-server-edge.wasm"),
        to,
    )
    .map_err(|e| format!("copy wasm: {e}"))?;
    Ok(to.to_path_buf())
}

/// The two builds of the service the tests and benchmarks compare, running under Viceroy.
#[derive(Debug)]
pub struct ServicePair {
    /// The build with `publisher.streaming = true`.
    pub streaming: SocketAddr,
    /// The same settings with `publisher.streaming = false`.
    pub buffered: SocketAddr,
    /// Stops both when dropped.
    pub guards: Vec<ChildGuard>,
}

/// Builds the service twice for the origin at `origin` (streaming and buffered, plus
/// `extra` overrides), writes the modules and Viceroy logs to `dir`, and starts both.
///
/// # Errors
/// If a build fails or Viceroy does not come up.
pub fn start_service_pair(
    root: &Path,
    dir: &Path,
    origin: SocketAddr,
    extra: &[(&str, String)],
) -> Result<ServicePair, String> {
    start_service_pair_with(root, dir, origin, extra, &[])
}

/// [`start_service_pair`], with `buffered_extra` overrides for the buffered build only (the
/// e2e suite gives it another `logging.level`, so one pair proves both levels).
///
/// # Errors
/// If a build fails or Viceroy does not come up.
pub fn start_service_pair_with(
    root: &Path,
    dir: &Path,
    origin: SocketAddr,
    extra: &[(&str, String)],
    buffered_extra: &[(&str, String)],
) -> Result<ServicePair, String> {
    let overrides = |streaming: bool| {
        let mut list = vec![
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_URL".to_owned(),
                format!("http://{origin}"),
            ),
            // The demo origin's pages use this host; with only ORIGIN_URL overridden the
            // service would use the URL's host[:port] instead.
            (
                "TRUSTED_SERVER__PUBLISHER__ORIGIN_HOST".to_owned(),
                "origin.demo-publisher.example".to_owned(),
            ),
            (
                "TRUSTED_SERVER__PUBLISHER__STREAMING".to_owned(),
                streaming.to_string(),
            ),
        ];
        let only = if streaming { &[] } else { buffered_extra };
        list.extend((extra.iter().chain(only)).map(|(k, v)| ((*k).to_owned(), v.clone())));
        list
    };
    let manifest = root.join("fastly.toml");
    let mut guards = Vec::new();
    let mut addrs = Vec::new();
    for (name, streaming) in [("streaming", true), ("buffered", false)] {
        let wasm = build_service(
            root,
            &dir.join(format!("{name}.wasm")),
            &overrides(streaming),
        )?;
        let (guard, addr) =
            start_viceroy(&wasm, &manifest, &dir.join(format!("viceroy-{name}.log")))
                .map_err(|e| format!("viceroy ({name}): {e}"))?;
        guards.push(guard);
        addrs.push(addr);
    }
    Ok(ServicePair {
        streaming: addrs[0],
        buffered: addrs[1],
        guards,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn parses_a_complete_chunked_body_with_arrival_times() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let mut raw = head.to_vec();
        raw.extend_from_slice(b"5\r\nhello\r\n");
        let first = raw.len();
        raw.extend_from_slice(b"6\r\n world\r\n0\r\n\r\n");
        let t = parse(&raw, &[(at(1), first), (at(9), raw.len())], false).unwrap();
        assert_eq!(t.body, b"hello world");
        assert!(t.complete);
        assert_eq!(t.first_body_at, Some(at(1)));
        assert_eq!(t.last_at, at(9));
        assert_eq!(t.body_bytes_by(at(1)), 5);
        assert_eq!(t.body_bytes_by(at(9)), 11);
    }

    #[test]
    fn same_bytes_shows_where_bodies_differ() {
        assert!(same_bytes(b"abc", b"abc").is_ok());
        let e = same_bytes(b"abXd", b"abcd").unwrap_err();
        assert!(e.contains("first difference at 2"), "{e}");
        let e = same_bytes(b"ab", b"abcd").unwrap_err();
        assert!(e.contains("2 bytes, expected 4"), "{e}");
    }

    #[test]
    fn a_chunked_body_without_terminator_is_incomplete() {
        let raw = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n".to_vec();
        let t = parse(&raw, &[(at(1), raw.len())], false).unwrap();
        assert_eq!(t.body, b"hello");
        assert!(!t.complete);
    }

    #[test]
    fn a_short_content_length_body_is_incomplete() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhello".to_vec();
        let t = parse(&raw, &[(at(1), raw.len())], false).unwrap();
        assert!(!t.complete);
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello".to_vec();
        assert!(parse(&raw, &[(at(1), raw.len())], false).unwrap().complete);
    }
}
