//! Fixtures shared by the integration tests, and the ways they talk to the server: the e2e
//! crate's hyper client for responses, and raw bytes only where the wire is what a test
//! checks (chunk boundaries, malformed requests, pipelining, connection close).

#![allow(dead_code)]

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use demo_origin::Server;
use e2e::{Session, Timed};

/// Every socket read in the tests gives up after this long.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A temporary site root with known files.
pub struct Site {
    pub root: PathBuf,
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Site {
    /// Bytes of `rel` under the root.
    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).unwrap()
    }
}

/// An HTML page of roughly `blocks * 200` bytes with a `<head>` and varied
/// non-ASCII text, so it compresses well but not trivially.
pub fn sample_html(blocks: usize) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html><HEAD><meta charset=\"utf-8\"><title>Sample</title>\n\
         <link rel=\"stylesheet\" href=\"https://origin.demo-publisher.example/s.css\"></Head>\n<body>\n",
    );
    for i in 0..blocks {
        s.push_str(&format!(
            "<p id=\"p{i}\">Paragraph {i}: café {} — Grüße {} — 東京 {} ✓ 😀 \
             <a href=\"https://origin.demo-publisher.example/n/{}\">more</a></p>\n",
            i * 7 % 13,
            i * 11 % 17,
            i * 3 % 19,
            i * 31 % 1000
        ));
    }
    s.push_str("</body></html>\n");
    s
}

/// Creates a fresh site root with:
/// `index.html` (~24 KB, has `</head>`), `sub/index.html`, `big.html`
/// (~200 KB), `data.json`, `plain.txt` (no `</head>`), `image.png`
/// (binary) and `page.latin1.html` (ISO-8859-1 bytes).
pub fn make_site() -> Site {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let root = std::env::temp_dir().join(format!(
        "demo-origin-test-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let write = |rel: &str, bytes: &[u8]| std::fs::write(root.join(rel), bytes).unwrap();
    write("index.html", sample_html(120).as_bytes());
    write(
        "sub/index.html",
        b"<html><head></head><body>sub</body></html>",
    );
    write("big.html", sample_html(1000).as_bytes());
    write(
        "data.json",
        br#"{"url":"https:\/\/origin.demo-publisher.example\/api","n":1}"#,
    );
    let text: String = (0..400)
        .map(|i| format!("line {i} of plain text\n"))
        .collect();
    write("plain.txt", text.as_bytes());
    let png: Vec<u8> = (0..5000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    write("image.png", &png);
    write(
        "page.latin1.html",
        b"<html><head><meta charset=\"iso-8859-1\"></head><body>caf\xe9 \xfcber Stra\xdfe</body></html>",
    );
    Site { root }
}

/// Starts an in-process server for `site` and returns its address.
pub fn start(site: &Site) -> SocketAddr {
    Server::bind("127.0.0.1:0", &site.root)
        .unwrap()
        .with_logging(false)
        .spawn()
        .unwrap()
}

/// `GET target` with `headers` on a connection of its own, parsed by the e2e crate's hyper
/// client (which sends `Connection: close`).
pub fn get(addr: SocketAddr, target: &str, headers: &[(&str, &str)]) -> Timed {
    request(addr, "GET", target, headers)
}

/// Like [`get`] with any method and no body.
pub fn request(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)]) -> Timed {
    e2e::request(addr, method, target, headers, IO_TIMEOUT)
        .unwrap_or_else(|e| panic!("{method} {target}: {e}"))
}

/// One keep-alive connection for requests in turn, for the checks that a response leaves the
/// connection usable.
pub struct KeepAlive(Session);

impl KeepAlive {
    pub fn open(addr: SocketAddr) -> KeepAlive {
        KeepAlive(Session::open(addr, IO_TIMEOUT).unwrap())
    }

    pub fn get(&mut self, target: &str, headers: &[(&str, &str)]) -> Timed {
        self.request("GET", target, headers)
    }

    pub fn request(&mut self, method: &str, target: &str, headers: &[(&str, &str)]) -> Timed {
        (self.0.request(method, target, headers, IO_TIMEOUT))
            .unwrap_or_else(|e| panic!("{method} {target}: {e}"))
    }
}

/// The body as text, for messages and substring checks.
pub fn text(r: &Timed) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// When the first `bytes` bytes of the body had arrived, from the moment the request was sent.
pub fn arrived(r: &Timed, bytes: usize) -> Duration {
    let (at, _) = (r.progress.iter())
        .find(|(_, n)| *n >= bytes)
        .unwrap_or_else(|| panic!("only {} body bytes arrived, not {bytes}", r.body.len()));
    *at
}

/// Writes `request` exactly as given on a new connection and returns every byte the server
/// sent back until it closed the connection.
///
/// # Panics
/// If the server keeps the connection open for [`IO_TIMEOUT`].
pub fn raw(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let started = Instant::now();
    let bytes = e2e::wire::send_raw(addr, request, IO_TIMEOUT).unwrap();
    assert!(
        started.elapsed() < IO_TIMEOUT,
        "the server did not close the connection after {:?}",
        String::from_utf8_lossy(&bytes)
    );
    bytes
}

/// The status code of the first response in raw response bytes.
pub fn status(raw: &[u8]) -> u16 {
    let line = String::from_utf8_lossy(&raw[..raw.len().min(12)]).into_owned();
    let version_ok = line.starts_with("HTTP/1.1 ") || line.starts_with("HTTP/1.0 ");
    assert!(version_ok, "bad status line {line:?}");
    line[9..12].parse().unwrap()
}

/// The chunks of a chunked response to `GET target`, as the server framed them on the wire:
/// the one place these tests read transfer framing, because the chunk boundaries are what
/// they check (an HTTP client rightly hides them).
///
/// # Panics
/// If the response is not chunked or its framing is not complete and exact.
pub fn chunks(addr: SocketAddr, target: &str, headers: &[(&str, &str)]) -> Vec<Vec<u8>> {
    let mut request = format!("GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n");
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    request.push_str("\r\n");
    let bytes = raw(addr, request.as_bytes());
    let head_end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_ascii_lowercase();
    assert!(
        head.contains("\r\ntransfer-encoding: chunked\r\n"),
        "{head}"
    );
    let mut rest = &bytes[head_end..];
    let mut chunks = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a size line");
        let line = std::str::from_utf8(&rest[..line_end]).expect("an ASCII size line");
        let size = usize::from_str_radix(line.split(';').next().unwrap_or(line), 16)
            .unwrap_or_else(|e| panic!("chunk size {line:?}: {e}"));
        rest = &rest[line_end + 2..];
        if size == 0 {
            assert_eq!(rest, b"\r\n", "the end of the chunked body");
            return chunks;
        }
        assert!(rest.len() >= size + 2, "a chunk cut short");
        assert_eq!(&rest[size..size + 2], b"\r\n", "the CRLF after a chunk");
        chunks.push(rest[..size].to_vec());
        rest = &rest[size + 2..];
    }
}

/// Fully decodes `data`; errors on corrupt or truncated input.
pub fn decode(encoding: &str, data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    match encoding {
        "gzip" => flate2::read::GzDecoder::new(data).read_to_end(&mut out)?,
        "deflate" => flate2::read::ZlibDecoder::new(data).read_to_end(&mut out)?,
        "br" => brotli::Decompressor::new(data, 4096).read_to_end(&mut out)?,
        other => panic!("unknown encoding {other}"),
    };
    Ok(out)
}

/// Decodes as much of a (possibly incomplete) stream as possible.
pub fn decode_prefix(encoding: &str, data: &[u8]) -> Vec<u8> {
    let mut reader: Box<dyn Read + '_> = match encoding {
        "gzip" => Box::new(flate2::read::GzDecoder::new(data)),
        "deflate" => Box::new(flate2::read::ZlibDecoder::new(data)),
        "br" => Box::new(brotli::Decompressor::new(data, 4096)),
        other => panic!("unknown encoding {other}"),
    };
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}
