//! Raw-socket HTTP/1.1 client and fixtures shared by the integration tests.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use demo_origin::Server;

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

/// One received chunk and when it was fully read.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub at: Instant,
    pub data: Vec<u8>,
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Chunks as received (chunked responses only).
    pub chunks: Vec<Chunk>,
    /// Whether the message was framed completely (all Content-Length bytes,
    /// or the chunked terminator).
    pub complete: bool,
    /// When the head was fully read.
    pub head_at: Instant,
}

impl Response {
    /// First value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// All values of header `name`.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A raw HTTP/1.1 connection.
pub struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).unwrap();
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    /// Writes raw request bytes.
    pub fn send_raw(&mut self, raw: &[u8]) {
        self.writer.write_all(raw).unwrap();
    }

    /// Sends `GET target` with `extra` header lines and reads the response.
    pub fn get(&mut self, target: &str, extra: &[(&str, &str)]) -> Response {
        self.request("GET", target, extra)
    }

    /// Sends a body-less request and reads the response.
    pub fn request(&mut self, method: &str, target: &str, extra: &[(&str, &str)]) -> Response {
        let mut raw = format!("{method} {target} HTTP/1.1\r\nHost: test.local\r\n");
        for (n, v) in extra {
            raw.push_str(&format!("{n}: {v}\r\n"));
        }
        raw.push_str("\r\n");
        self.send_raw(raw.as_bytes());
        self.read_response(method == "HEAD")
    }

    /// Reads one response (no body for HEAD, 1xx, 204, 304).
    pub fn read_response(&mut self, head_request: bool) -> Response {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        // hyper answers an HTTP/1.0 request in HTTP/1.0.
        let version_ok = line.starts_with("HTTP/1.1 ") || line.starts_with("HTTP/1.0 ");
        assert!(version_ok, "bad status line {line:?}");
        let status: u16 = line[9..12].parse().unwrap();
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let l = line.trim_end_matches(['\r', '\n']);
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').expect("header colon");
            headers.push((n.to_string(), v.trim().to_string()));
        }
        let mut resp = Response {
            status,
            headers,
            body: Vec::new(),
            chunks: Vec::new(),
            complete: true,
            head_at: Instant::now(),
        };
        if head_request || status == 204 || status == 304 || status < 200 {
            return resp;
        }
        if resp
            .header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
        {
            self.read_chunked(&mut resp);
        } else if let Some(len) = resp.header("content-length") {
            let len: usize = len.parse().unwrap();
            resp.body = read_up_to(&mut self.reader, len);
            resp.complete = resp.body.len() == len;
        } else {
            self.reader.read_to_end(&mut resp.body).unwrap();
        }
        resp
    }

    fn read_chunked(&mut self, resp: &mut Response) {
        resp.complete = false;
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if !line.ends_with("\r\n") {
                return;
            }
            let size = usize::from_str_radix(line.trim_end().split(';').next().unwrap(), 16)
                .expect("chunk size");
            if size == 0 {
                let mut end = String::new();
                self.reader.read_line(&mut end).unwrap();
                assert_eq!(end, "\r\n", "chunked trailer");
                resp.complete = true;
                return;
            }
            let data = read_up_to(&mut self.reader, size);
            resp.body.extend_from_slice(&data);
            let full = data.len() == size;
            resp.chunks.push(Chunk {
                at: Instant::now(),
                data,
            });
            if !full {
                return;
            }
            let mut crlf = [0u8; 2];
            if self.reader.read_exact(&mut crlf).is_err() {
                return;
            }
            assert_eq!(&crlf, b"\r\n", "chunk CRLF");
        }
    }

    /// Whether the server closed the connection (EOF within the timeout).
    pub fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 1];
        matches!(self.reader.read(&mut buf), Ok(0) | Err(_))
    }
}

/// Reads until `n` bytes or EOF.
fn read_up_to<R: Read>(r: &mut R, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut out).unwrap();
    out
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
