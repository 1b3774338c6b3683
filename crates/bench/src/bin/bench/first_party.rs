//! The first-party proxy (`GET /first-party/proxy`): a 100 KB image (streamed through
//! untouched) and an HTML creative (rewritten by the creative stage) fetched through the
//! streaming build and directly from the partner, in interleaved rounds; the result is the
//! ratio of the medians of the time to the last byte, proxy ÷ direct.
//!
//! The partner is a minimal server here ([`Partner`]: blocking accept, one request per
//! connection, the response in one write), reached by the service through
//! `first_party.resolve`. (The e2e suite's raw origin polls its listener every 5 ms, which
//! would add up to that to both sides and flatten the ratio.) The direct side opens a
//! connection per request too, so both pay the same connection set-up to the partner and the
//! ratio shows what the proxy adds: the client connection to Viceroy, verifying the URL,
//! signing the partner request, the dynamic backend, and for the creative the rewrite.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use trusted_server_core::first_party::token::PROXY_PATH;
use trusted_server_core::first_party::UrlKey;

use crate::stats::median;

/// The partner host the signed URLs name (an allowed domain of the shipped settings).
const PARTNER: &str = "ads.demo-partner.example";
const IMAGE_PATH: &str = "/bench/img.png";
const HTML_PATH: &str = "/bench/creative.html";
const IMAGE_LEN: usize = 100 * 1024;
const KEY_FILE: &str = "fixtures/dev-only/first-party-url-key.DEVELOPMENT-ONLY.txt";
const TIMEOUT: Duration = Duration::from_secs(30);

/// `first_party.resolve` for the builds under test: the partner host to `partner`.
pub fn resolve(partner: SocketAddr) -> String {
    format!("{{ \"{PARTNER}\" = \"{partner}\" }}")
}

/// The test partner: answers [`IMAGE_PATH`] and [`HTML_PATH`] (any other path `404`), one
/// request per connection. Its threads end with the benchmark process.
pub struct Partner {
    addr: SocketAddr,
}

impl Partner {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Starts the partner on a free loopback port.
pub fn start_partner() -> Result<Partner, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("partner: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("partner: {e}"))?;
    let image: Vec<u8> = (0..IMAGE_LEN).map(|i| (i * 31 % 251) as u8).collect();
    let answers: Arc<HashMap<&'static str, Vec<u8>>> = Arc::new(HashMap::from([
        (IMAGE_PATH, response("image/png", &image)),
        (
            HTML_PATH,
            response("text/html; charset=utf-8", creative().as_bytes()),
        ),
    ]));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answers = Arc::clone(&answers);
            std::thread::spawn(move || serve(stream, &answers));
        }
    });
    Ok(Partner { addr })
}

/// Reads one request head and answers it, then closes.
fn serve(mut stream: TcpStream, answers: &HashMap<&'static str, Vec<u8>>) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(TIMEOUT));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let path = line.split(' ').nth(1).unwrap_or("");
    let not_found = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    let answer = answers.get(path).map_or(&not_found[..], Vec::as_slice);
    let _ = stream.write_all(answer);
    let _ = stream.shutdown(Shutdown::Write);
    // Until the peer closes, so the close is clean.
    while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
}

/// A 300x250 creative as ad servers write them: markup, inline style, a few partner URLs
/// (images, a sheet, a frame) among others, about 6 KB.
fn creative() -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\">\
         <link rel=\"stylesheet\" href=\"https://ads.demo-partner.example/c/style.css\">\
         <style>.ad{width:300px;height:250px;background:url(https://ads.demo-partner.example/bg.png)}</style>\
         </head><body><div class=\"ad\">",
    );
    for i in 0..40 {
        html.push_str(&format!(
            "<p class=\"line\">Offer {i}: <img src=\"https://ads.demo-partner.example/i/{i}.png\" \
             width=\"10\" alt=\"\"> text that is not a URL, <b>bold</b></p>\n"
        ));
    }
    html.push_str(
        "<iframe src=\"https://ads.demo-partner.example/frame.html\"></iframe>\
         <a href=\"https://landing.other.example/\">more</a></div></body></html>\n",
    );
    html
}

fn response(content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         cache-control: public, max-age=600\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Medians of the time to the last byte, in ms, and the ratio.
#[derive(Debug, Clone)]
pub struct FpCase {
    /// `image` or `html`.
    pub name: &'static str,
    /// Through the proxy.
    pub proxy_ms: f64,
    /// Straight from the partner.
    pub direct_ms: f64,
    /// Rounds measured.
    pub rounds: usize,
}

impl FpCase {
    /// Proxy ÷ direct.
    pub fn ratio(&self) -> f64 {
        self.proxy_ms / self.direct_ms
    }
}

/// A signed `/first-party/proxy` URL of the partner's 100 KB image, valid for an hour, signed
/// with the development key the builds under test use.
///
/// # Errors
/// If the key file cannot be read.
pub fn signed_image_url(root: &std::path::Path) -> Result<String, String> {
    signed_url(root, IMAGE_PATH)
}

/// A signed `/first-party/proxy` URL of the partner's `path`, valid for an hour, signed with
/// the development key the builds under test use.
fn signed_url(root: &std::path::Path, path: &str) -> Result<String, String> {
    let secret = std::fs::read(root.join(KEY_FILE)).map_err(|e| format!("{KEY_FILE}: {e}"))?;
    let key = UrlKey::new(&secret).map_err(|e| e.to_string())?;
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        + 3600;
    Ok(key.signed_url(PROXY_PATH, &format!("http://{PARTNER}{path}"), exp))
}

/// Checks the outputs, then measures both cases through `proxies` (alternating) and directly.
pub fn run(
    root: &std::path::Path,
    partner: &Partner,
    proxies: &[SocketAddr],
    quick: bool,
) -> Result<Vec<FpCase>, String> {
    let rounds = if quick { 31 } else { 151 };
    let mut out = Vec::new();
    for (name, path) in [("image", IMAGE_PATH), ("html", HTML_PATH)] {
        let signed = signed_url(root, path)?;
        let host = [("host", PARTNER)];
        let direct = e2e::get(partner.addr(), path, &host, TIMEOUT).map_err(|e| e.to_string())?;
        for &proxy in proxies {
            let via = e2e::get(proxy, &signed, &[], TIMEOUT).map_err(|e| e.to_string())?;
            let same = via.body == direct.body;
            let ok = via.status == 200
                && via.complete
                && if name == "image" {
                    same
                } else {
                    !same && String::from_utf8_lossy(&via.body).contains(PROXY_PATH)
                };
            if !ok {
                return Err(format!(
                    "first-party {name}: status {} complete {} ({} bytes)",
                    via.status,
                    via.complete,
                    via.body.len()
                ));
            }
        }
        let (mut p, mut d) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let proxy = proxies[round % proxies.len()];
            // Alternate which side goes first, so neither always runs on a warmer machine, and
            // per process (rounds alternate processes), so each process sees both orders.
            let sample = |direct_side: bool| -> Result<f64, String> {
                let r = if direct_side {
                    e2e::get(partner.addr(), path, &host, TIMEOUT)
                } else {
                    e2e::get(proxy, &signed, &[], TIMEOUT)
                }
                .map_err(|e| e.to_string())?;
                Ok(r.last_at.as_secs_f64() * 1000.0)
            };
            if (round / proxies.len()).is_multiple_of(2) {
                d.push(sample(true)?);
                p.push(sample(false)?);
            } else {
                p.push(sample(false)?);
                d.push(sample(true)?);
            }
        }
        out.push(FpCase {
            name,
            proxy_ms: median(p),
            direct_ms: median(d),
            rounds,
        });
    }
    Ok(out)
}

/// The table.
pub fn print(cases: &[FpCase]) {
    println!("\nfirst-party proxy (time to last byte, medians)");
    println!(
        "{:<8} {:>10} {:>10} {:>8} {:>7}",
        "case", "direct ms", "proxy ms", "ratio", "rounds"
    );
    for c in cases {
        println!(
            "{:<8} {:>10.3} {:>10.3} {:>8.3} {:>7}",
            c.name,
            c.direct_ms,
            c.proxy_ms,
            c.ratio(),
            c.rounds
        );
    }
}

/// The `---RESULTS---` lines: `fp_proxy_<case>_over_direct` and both medians.
pub fn results(cases: &[FpCase]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in cases {
        out.push((
            format!("fp_proxy_{}_over_direct", c.name),
            format!("{:.3}", c.ratio()),
        ));
        out.push((
            format!("fp_{}_direct_ms", c.name),
            format!("{:.3}", c.direct_ms),
        ));
        out.push((
            format!("fp_{}_proxy_ms", c.name),
            format!("{:.3}", c.proxy_ms),
        ));
    }
    out
}
