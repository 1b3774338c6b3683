//! End-to-end tests of the in-process server: responses read with the e2e crate's hyper
//! client, raw bytes where the wire itself is checked.

mod support;

use std::io::{Read, Write};
use std::thread;
use std::time::{Duration, Instant};

use support::{arrived, chunks, decode, decode_prefix, get, make_site, raw, request, start};
use support::{status, text, KeepAlive, IO_TIMEOUT};

#[test]
fn plain_get_has_content_length_and_exact_bytes() {
    let site = make_site();
    let r = get(start(&site), "/index.html", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("transfer-encoding"), None);
    let expected = site.read("index.html");
    assert_eq!(
        r.header("content-length"),
        Some(expected.len().to_string().as_str())
    );
    assert_eq!(r.body, expected);
}

#[test]
fn root_and_directories_serve_index_html() {
    let site = make_site();
    let addr = start(&site);
    assert_eq!(get(addr, "/", &[]).body, site.read("index.html"));
    assert_eq!(get(addr, "/sub", &[]).body, site.read("sub/index.html"));
    assert_eq!(
        get(addr, "/sub/?cb=1", &[]).body,
        site.read("sub/index.html")
    );
}

#[test]
fn content_types_by_extension() {
    let site = make_site();
    let addr = start(&site);
    let cases = [
        ("/page.latin1.html", "text/html; charset=iso-8859-1"),
        ("/data.json", "application/json"),
        ("/plain.txt", "text/plain; charset=utf-8"),
        ("/image.png", "image/png"),
    ];
    for (path, ct) in cases {
        let r = get(addr, path, &[]);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some(ct), "{path}");
    }
    let latin1 = get(addr, "/page.latin1.html", &[]);
    assert!(latin1.body.windows(4).any(|w| w == b"caf\xe9"));
}

#[test]
fn keep_alive_sequential_and_pipelined() {
    let site = make_site();
    let addr = start(&site);
    let mut c = KeepAlive::open(addr);
    let a = c.get("/index.html", &[]);
    let b = c.get("/data.json", &[]);
    assert_eq!(a.body, site.read("index.html"));
    assert_eq!(b.body, site.read("data.json"));
    assert_eq!(a.header("connection"), None);

    // Two requests in one write (the second asks to close), answered in order on the same
    // socket: the first response's body runs straight into the second's status line.
    let both = raw(
        addr,
        b"GET /plain.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /sub/ HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    let mut first_then_second = site.read("plain.txt");
    first_then_second.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    assert_eq!(status(&both), 200);
    assert!(both
        .windows(first_then_second.len())
        .any(|w| w == first_then_second));
    assert!(both.ends_with(&site.read("sub/index.html")));
}

#[test]
fn connection_close_and_http10_close() {
    let site = make_site();
    let addr = start(&site);
    // `raw` fails unless the server closes the connection.
    let r = raw(
        addr,
        b"GET /plain.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status(&r), 200);
    let head = String::from_utf8_lossy(&r).to_ascii_lowercase();
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
    assert!(r.ends_with(&site.read("plain.txt")));

    let r = raw(addr, b"GET /plain.txt HTTP/1.0\r\n\r\n");
    assert_eq!(status(&r), 200);
    assert!(r.ends_with(&site.read("plain.txt")));
}

#[test]
fn head_sends_headers_only() {
    let site = make_site();
    let mut c = KeepAlive::open(start(&site));
    let h = c.request("HEAD", "/index.html", &[("Accept-Encoding", "gzip")]);
    assert_eq!(h.status, 200);
    let g = c.get("/index.html", &[("Accept-Encoding", "gzip")]);
    // HEAD announces the same length; the follow-up parses, so no body leaked.
    assert_eq!(h.header("content-length"), g.header("content-length"));
    assert_eq!(decode("gzip", &g.body).unwrap(), site.read("index.html"));
}

#[test]
fn not_found_is_404_html_and_keeps_connection() {
    let site = make_site();
    let mut c = KeepAlive::open(start(&site));
    let r = c.get("/nope/missing.html", &[]);
    assert_eq!(r.status, 404);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(text(&r).contains("404"));
    assert_eq!(c.get("/plain.txt", &[]).status, 200);
}

#[test]
fn traversal_is_400() {
    let site = make_site();
    let addr = start(&site);
    for target in [
        "/../etc/passwd",
        "/sub/../../x",
        "/%2e%2e/x",
        "/sub/%2E%2E/index.html",
    ] {
        let r = get(addr, target, &[]);
        assert_eq!(r.status, 400, "{target}");
    }
}

#[test]
fn malformed_requests_get_400_and_close() {
    let site = make_site();
    let addr = start(&site);
    for request in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n",
        b"\x00\x01\x02\xff\r\n\r\n",
    ] {
        // `raw` fails unless the server closes the connection.
        let r = raw(addr, request);
        assert_eq!(status(&r), 400, "{:?}", String::from_utf8_lossy(request));
    }
    // Both Content-Length and chunked: hyper reads the body as chunked (RFC
    // 9112 section 6.3 allows that instead of a 400), then closes.
    let r = raw(addr, b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    assert_eq!(status(&r), 200);
    assert!(
        r.ends_with(br#""body_len":5}"#),
        "{}",
        String::from_utf8_lossy(&r)
    );
    // Server still alive.
    assert_eq!(get(addr, "/", &[]).status, 200);
}

#[test]
fn oversized_head_and_body_are_rejected() {
    let site = make_site();
    let addr = start(&site);
    let big = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(70 * 1024));
    assert_eq!(status(&raw(addr, big.as_bytes())), 431);
    let post = raw(
        addr,
        b"POST /x HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n",
    );
    assert_eq!(status(&post), 413);
}

#[test]
fn compressed_bodies_decode_to_file_bytes() {
    let site = make_site();
    let mut c = KeepAlive::open(start(&site));
    let plain = site.read("big.html");
    for (accept, expected) in [
        ("gzip, deflate, br", "br"),
        ("gzip", "gzip"),
        ("deflate", "deflate"),
        ("br;q=0, gzip;q=0.8", "gzip"),
    ] {
        let r = c.get("/big.html", &[("Accept-Encoding", accept)]);
        assert_eq!(r.header("content-encoding"), Some(expected), "{accept}");
        assert_eq!(
            r.header("content-length"),
            Some(r.body.len().to_string().as_str())
        );
        assert!(r.body.len() < plain.len() / 3, "{accept}: not compressed");
        assert_eq!(decode(expected, &r.body).unwrap(), plain, "{accept}");
    }
    let r = c.get("/big.html", &[("Accept-Encoding", "identity")]);
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.body, plain);
}

#[test]
fn binary_types_are_not_negotiated_but_can_be_forced() {
    let site = make_site();
    let mut c = KeepAlive::open(start(&site));
    let png = site.read("image.png");
    let r = c.get("/image.png", &[("Accept-Encoding", "gzip, br")]);
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.header("vary"), None);
    assert_eq!(r.body, png);
    let r = c.get("/image.png?encoding=gzip", &[]);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(decode("gzip", &r.body).unwrap(), png);
    let r = c.get(
        "/index.html?encoding=identity",
        &[("Accept-Encoding", "br")],
    );
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.body, site.read("index.html"));
}

/// Expected plain part boundaries: up to `</head>`, then `k` equal parts.
fn expected_part_ends(plain: &[u8], k: usize) -> Vec<usize> {
    let lower = String::from_utf8_lossy(plain).to_ascii_lowercase();
    let first = lower.find("</head>").map(|i| i + 7).unwrap();
    let step = (plain.len() - first).div_ceil(k);
    let mut ends = vec![first];
    for j in 1..=k {
        ends.push((first + j * step).min(plain.len()));
    }
    ends
}

#[test]
fn drip_sends_head_first_then_parts_after_delays() {
    let site = make_site();
    let addr = start(&site);
    let mut c = KeepAlive::open(addr);
    let plain = site.read("index.html");
    let target = "/index.html?drip_ms=600&drip_chunks=2";
    let r = c.get(target, &[]);
    assert!(r.complete);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-length"), None);
    assert_eq!(r.body, plain);
    let ends = expected_part_ends(&plain, 2);
    assert!(
        arrived(&r, ends[0]) < Duration::from_millis(600),
        "first part arrived after the first drip delay: {:?}",
        arrived(&r, ends[0])
    );
    // The server sleeps 600 ms before each later part, so part k's first byte cannot have
    // arrived before k * 600 ms (a lower bound immune to client lag).
    for k in 1..=2u32 {
        let elapsed = arrived(&r, ends[k as usize - 1] + 1);
        assert!(
            elapsed >= Duration::from_millis(600) * k,
            "part {k} arrived after {elapsed:?}"
        );
    }
    // Keep-alive still works after a chunked response.
    assert_eq!(c.get("/plain.txt", &[]).body, site.read("plain.txt"));
    // The parts are the chunks on the wire.
    let parts = chunks(addr, target, &[]);
    assert_eq!(parts.len(), 3);
    assert!(
        parts[0].ends_with(b"</Head>"),
        "first part must end at </head>"
    );
    assert_eq!(parts[1].len(), ends[1] - ends[0]);
    assert_eq!(parts.concat(), plain);
}

#[test]
fn drip_without_head_starts_with_one_kth() {
    let site = make_site();
    let addr = start(&site);
    let plain = site.read("plain.txt");
    let r = get(addr, "/plain.txt?drip_chunks=4", &[]);
    assert!(r.complete);
    assert_eq!(r.body, plain);
    let parts = chunks(addr, "/plain.txt?drip_chunks=4", &[]);
    assert_eq!(parts.len(), 5);
    assert_eq!(parts[0].len(), plain.len() / 4);
    assert_eq!(parts.concat(), plain);
}

#[test]
fn dripped_compressed_chunks_are_decodable_progress() {
    let site = make_site();
    let addr = start(&site);
    let plain = site.read("big.html");
    let k = 5;
    let ends = expected_part_ends(&plain, k);
    for enc in ["gzip", "br", "deflate"] {
        let target = format!("/big.html?drip_ms=1&drip_chunks={k}&encoding={enc}");
        let r = get(addr, &target, &[]);
        assert!(r.complete, "{enc}");
        assert_eq!(r.header("content-encoding"), Some(enc));
        assert_eq!(r.header("transfer-encoding"), Some("chunked"));
        assert_eq!(decode(enc, &r.body).unwrap(), plain, "{enc}");
        let parts = chunks(addr, &target, &[]);
        assert_eq!(parts.len(), k + 1, "{enc}");
        assert_eq!(parts.concat(), r.body, "{enc}");
        let mut so_far = Vec::new();
        for (i, chunk) in parts.iter().enumerate() {
            so_far.extend_from_slice(chunk);
            let decoded = decode_prefix(enc, &so_far);
            assert_eq!(
                decoded.len(),
                ends[i],
                "{enc}: chunk {i} is not a sync-flushed boundary"
            );
            assert_eq!(decoded, plain[..ends[i]], "{enc}: chunk {i}");
        }
        assert!(r.body.len() < plain.len() / 3, "{enc}: not compressed");
    }
}

#[test]
fn negotiated_compression_also_drips() {
    let site = make_site();
    let r = get(
        start(&site),
        "/index.html?drip_chunks=3",
        &[("Accept-Encoding", "gzip")],
    );
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(decode("gzip", &r.body).unwrap(), site.read("index.html"));
}

#[test]
fn die_after_with_content_length_sends_fewer_bytes_then_closes() {
    let site = make_site();
    let addr = start(&site);
    let plain = site.read("index.html");
    let r = get(addr, "/index.html?die_after=1000", &[]);
    assert_eq!(
        r.header("content-length"),
        Some(plain.len().to_string().as_str())
    );
    assert!(!r.complete);
    assert_eq!(r.body, plain[..1000]);
    // On a connection that asked to stay open, too.
    let r = raw(
        addr,
        b"GET /index.html?die_after=1000 HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert!(r.ends_with(&plain[..1000]));
}

#[test]
fn die_after_while_dripping_has_no_terminator() {
    let site = make_site();
    let addr = start(&site);
    let plain = site.read("index.html");
    let r = get(addr, "/index.html?drip_chunks=4&die_after=5000", &[]);
    assert!(!r.complete, "chunked terminator must be missing");
    assert_eq!(r.body, plain[..5000]);
    // `raw` fails unless the server closes the connection it was asked to keep.
    let r = raw(
        addr,
        b"GET /index.html?drip_chunks=4&die_after=5000 HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert!(!r.ends_with(b"0\r\n\r\n"));

    let r = get(
        addr,
        "/index.html?drip_chunks=4&encoding=gzip&die_after=300",
        &[],
    );
    assert!(!r.complete);
    assert_eq!(r.body.len(), 300);
    assert!(decode("gzip", &r.body).is_err());
}

#[test]
fn truncate_is_cleanly_framed_but_undecodable() {
    let site = make_site();
    let mut c = KeepAlive::open(start(&site));
    let plain = site.read("big.html");
    for enc in ["gzip", "br", "deflate"] {
        let full = c.get(&format!("/big.html?encoding={enc}"), &[]);
        let n = full.body.len() / 2;
        let r = c.get(&format!("/big.html?encoding={enc}&truncate={n}"), &[]);
        assert!(r.complete, "{enc}");
        assert_eq!(r.header("content-length"), Some(n.to_string().as_str()));
        assert_eq!(r.body, full.body[..n], "{enc}");
        assert!(
            decode(enc, &r.body).is_err(),
            "{enc}: truncated body decoded"
        );
        let partial = decode_prefix(enc, &r.body);
        assert!(partial.len() < plain.len() && plain.starts_with(&partial));
    }
    // The connection is still usable: framing was clean.
    assert_eq!(c.get("/plain.txt", &[]).status, 200);

    let r = c.get("/big.html?encoding=gzip&truncate=100&drip_chunks=3", &[]);
    assert!(r.complete);
    assert_eq!(r.body.len(), 100);
}

#[test]
fn lie_encoding_sends_plain_body_with_wrong_header() {
    let site = make_site();
    let addr = start(&site);
    for lie in ["gzip", "br", "zstd"] {
        let r = get(
            addr,
            &format!("/index.html?lie_encoding={lie}"),
            &[("Accept-Encoding", "gzip, br")],
        );
        assert_eq!(r.header("content-encoding"), Some(lie));
        assert_eq!(r.body, site.read("index.html"));
    }
}

#[test]
fn headers_delay_status_cookies_redirect() {
    let site = make_site();
    let addr = start(&site);
    let r = get(addr, "/plain.txt?headers_delay_ms=300&status=503", &[]);
    assert!(r.headers_at >= Duration::from_millis(300));
    assert_eq!(r.status, 503);
    assert_eq!(r.body, site.read("plain.txt"));

    let r = get(addr, "/index.html?set_cookie=1", &[]);
    assert_eq!(
        r.header_values("set-cookie"),
        [
            &b"session=abc123; Domain=origin.demo-publisher.example; Path=/; HttpOnly"[..],
            b"pref=dark; Path=/"
        ]
    );

    let r = get(addr, "/?redirect=/news/article.html%3Fa%3D1", &[]);
    assert_eq!(r.status, 302);
    assert_eq!(
        r.header("location"),
        Some("https://origin.demo-publisher.example/news/article.html?a=1")
    );

    let r = get(addr, "/?status=abc", &[]);
    assert_eq!(r.status, 400);
    assert!(text(&r).contains("status"));
}

#[test]
fn echo_describes_the_request() {
    let site = make_site();
    let r = e2e::send(
        start(&site),
        "PUT",
        "/__echo?a=1&b=%22",
        &[("Host", "t"), ("X-Quote", "say \"hi\" \\ é")],
        b"hello",
        IO_TIMEOUT,
    )
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        text(&r),
        r#"{"method":"PUT","path":"/__echo","query":"a=1&b=%22","headers":[["host","t"],["x-quote","say \"hi\" \\ é"],["connection","close"],["content-length","5"]],"body_len":5}"#
    );
}

#[test]
fn post_anywhere_echoes_including_chunked_and_expect_continue() {
    let site = make_site();
    let addr = start(&site);
    // A chunked request body, with a chunk extension: raw, as a client library picks the
    // framing itself.
    let r = raw(
        addr,
        b"POST /submit HTTP/1.1\r\nHost: t\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n3;x=y\r\nefg\r\n0\r\n\r\n",
    );
    let echo = String::from_utf8_lossy(&r).into_owned();
    assert_eq!(status(&r), 200);
    assert!(echo.contains(r#""path":"/submit""#), "{echo}");
    assert!(echo.ends_with(r#""body_len":7}"#), "{echo}");

    // The interim 100 must come before the body is sent: one raw exchange at a time.
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.write_all(
        b"POST /form HTTP/1.1\r\nHost: t\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
    )
    .unwrap();
    let mut interim = Vec::new();
    let mut byte = [0u8; 1];
    while !interim.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).unwrap(),
            1,
            "closed before the interim response"
        );
        interim.push(byte[0]);
    }
    assert_eq!(status(&interim), 100);
    s.write_all(b"xyz").unwrap();
    let mut r = Vec::new();
    s.read_to_end(&mut r).unwrap();
    assert_eq!(status(&r), 200);
    assert!(r.ends_with(br#""body_len":3}"#));
}

#[test]
fn other_methods_are_405() {
    let site = make_site();
    let r = request(start(&site), "DELETE", "/index.html", &[]);
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD, POST"));
}

#[test]
fn generated_pages_have_requested_size() {
    let site = make_site();
    let addr = start(&site);
    let r = get(addr, "/__gen/110kb.html", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 110 * 1024);
    let again = get(addr, "/__gen/110kb.html", &[("Accept-Encoding", "br")]);
    assert_eq!(decode("br", &again.body).unwrap(), r.body);
    let dripped = chunks(addr, "/__gen/64kb.html?drip_chunks=3", &[]);
    assert!(dripped[0].ends_with(b"</head>"));
    assert_eq!(get(addr, "/__gen/0kb.html", &[]).status, 404);
    assert_eq!(get(addr, "/__gen/99999kb.html", &[]).status, 404);
}

#[test]
fn survives_64_concurrent_keep_alive_connections() {
    let site = make_site();
    let addr = start(&site);
    let expected = site.read("big.html");
    let deadline = Instant::now() + Duration::from_secs(60);
    let workers: Vec<_> = (0..64)
        .map(|i| {
            let expected = expected.clone();
            thread::spawn(move || {
                let mut c = KeepAlive::open(addr);
                for j in 0..10 {
                    let accept = if (i + j) % 2 == 0 { "gzip" } else { "identity" };
                    let r = c.get("/big.html", &[("Accept-Encoding", accept)]);
                    assert_eq!(r.status, 200);
                    let body = if accept == "gzip" {
                        decode("gzip", &r.body).unwrap()
                    } else {
                        r.body
                    };
                    assert!(body == expected);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker failed");
    }
    assert!(Instant::now() < deadline, "too slow under concurrency");
}

#[test]
fn half_sent_request_does_not_break_server() {
    let site = make_site();
    let addr = start(&site);
    {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /index.html HTTP/1.1\r\nHost: x").unwrap();
        // Dropped mid-head.
    }
    {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"POST /x HTTP/1.1\r\nContent-Length: 100\r\n\r\nshort")
            .unwrap();
    }
    assert_eq!(get(addr, "/", &[]).status, 200);
}

#[test]
fn serves_the_repository_fixtures() {
    let root = demo_origin::default_root();
    let addr = demo_origin::Server::bind("127.0.0.1:0", &root)
        .unwrap()
        .with_logging(false)
        .spawn()
        .unwrap();
    let mut c = KeepAlive::open(addr);
    for (path, file) in [
        ("/", "index.html"),
        ("/news/article.html", "news/article.html"),
        ("/static/hero.png", "static/hero.png"),
        ("/static/random.bin", "static/random.bin"),
    ] {
        let r = c.get(path, &[("Accept-Encoding", "gzip")]);
        assert_eq!(r.status, 200, "{path}");
        let body = match r.header("content-encoding") {
            Some(enc) => decode(enc, &r.body).unwrap(),
            None => r.body.clone(),
        };
        assert_eq!(body, std::fs::read(root.join(file)).unwrap(), "{path}");
    }
    let r = c.get("/latin1.latin1.html", &[]);
    assert_eq!(
        r.header("content-type"),
        Some("text/html; charset=iso-8859-1")
    );
}

#[test]
fn no_vary_echo_and_conditional_knobs() {
    let site = make_site();
    let addr = start(&site);
    // No Vary at all, or exactly the lines asked for.
    let r = get(addr, "/index.html?no_vary=1", &[]);
    assert_eq!(r.header_values("vary").len(), 0);
    let r = get(addr, "/index.html?no_vary=1&vary=A&vary=B", &[]);
    assert_eq!(r.header_values("vary"), [&b"A"[..], &b"B"[..]]);
    // Echo: the request header as received, or (none).
    let r = get(
        addr,
        "/index.html?echo=X-Who&echo=x-absent",
        &[("x-who", "r<1>")],
    );
    let mut want = site.read("index.html");
    want.extend_from_slice(b"<!-- echo x-who: r_1_ -->\n<!-- echo x-absent: (none) -->\n");
    assert_eq!(r.body, want);
    // Conditional: 304 on a matching If-None-Match (weak or strong), 206 on one range.
    let path = "/index.html?conditional=1&etag=%22v1%22";
    for inm in ["\"v1\"", "W/\"v1\"", "\"x\", \"v1\"", "*"] {
        let r = get(addr, path, &[("if-none-match", inm)]);
        assert_eq!((r.status, r.body.len()), (304, 0), "{inm}");
    }
    assert_eq!(get(addr, path, &[("if-none-match", "\"v2\"")]).status, 200);
    let r = get(addr, path, &[("range", "bytes=2-5")]);
    assert_eq!(r.status, 206);
    assert_eq!(r.body, site.read("index.html")[2..=5]);
    let len = site.read("index.html").len();
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 2-5/{len}").as_str())
    );
    // Without the knob, both are ignored.
    let plain = "/index.html?etag=%22v1%22";
    assert_eq!(get(addr, plain, &[("if-none-match", "\"v1\"")]).status, 200);
    assert_eq!(get(addr, plain, &[("range", "bytes=2-5")]).status, 200);
}
