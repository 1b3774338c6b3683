//! End-to-end scenarios of `GET /first-party/proxy` against a test partner: the raw origin
//! (`e2e::raw_origin`), which plays exact bytes per path and records every request head it
//! receives, so the tests see what a partner sees. `ads.demo-partner.example` and
//! `cdn.demo-partner.example` resolve to it (`first_party.resolve`); `evil.example` is off the
//! allowlist. Signed URLs are made with the development key (the sign route is tested in the
//! parent module); expected rewrites are built here with the `url` crate's form encoder;
//! signatures are checked by the independent Python verifier against the live discovery
//! document.

use std::net::SocketAddr;

use e2e::raw_origin::{RawOrigin, Step};
use trusted_server_core::first_party::token::{CLICK_PATH, PROXY_PATH};
use trusted_server_core::first_party::FORBIDDEN_BODY;

use super::{dev_key, encode, now, param, params};
use crate::{check, fetch, Outcome, World};

pub const ADS: &str = "ads.demo-partner.example";
const CDN: &str = "cdn.demo-partner.example";
const IMAGE_LEN: usize = 100 * 1024;
/// The shipped `first_party.page_ttl_secs`.
const PAGE_TTL: u64 = 3600;
const DISCOVERY: &str = "/.well-known/trusted-server.json";

/// `first_party.resolve` for the e2e builds: both partner hosts to the test partner.
pub fn resolve(partner: SocketAddr) -> String {
    format!("{{ \"{ADS}\" = \"{partner}\", \"{CDN}\" = \"{partner}\" }}")
}

/// 100 KiB that no text rewriting would leave alone if it touched them (every byte value,
/// CR/LF and `http://` among them).
fn image() -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..IMAGE_LEN).map(|i| (i * 31 % 251) as u8).collect();
    let mark = b"http://ads.demo-partner.example";
    bytes[100..100 + mark.len()].copy_from_slice(mark);
    bytes
}

const HTML: &str = "<!doctype html><html><head>\
<link rel=\"stylesheet\" href=\"http://cdn.demo-partner.example/style.css\"></head>\
<body><img src=\"http://ads.demo-partner.example/img.png\" alt=\"ad\">\
<a href=\"https://evil.example/landing\">x</a>\
<a href=\"https://ads.demo-partner.example/landing?c=1\">go</a></body></html>\n";

const CSS: &str = ".ad{background:url(\"http://ads.demo-partner.example/img.png\")}\n\
.x{background:url(https://evil.example/x.png)}\n";

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = e.write_all(data);
    e.finish().unwrap_or_default()
}

/// The partner's paths (any host: the raw origin matches paths only).
pub fn install(p: &RawOrigin) {
    let hostile = [
        ("set-cookie", "partner_uid=1; Path=/"),
        ("set-cookie2", "old=1"),
        ("access-control-allow-origin", "https://other-site.example"),
        ("access-control-allow-credentials", "true"),
        ("access-control-expose-headers", "x-partner"),
        ("cache-control", "public, max-age=600"),
    ];
    let with = |ct: &'static str, extra: &[(&'static str, &'static str)]| {
        let mut h = vec![("content-type", ct)];
        h.extend_from_slice(&hostile);
        h.extend_from_slice(extra);
        h
    };
    let ok = |headers: &[(&str, &str)], body: &[u8]| {
        vec![Step::Write(response("200 OK", headers, body))]
    };
    p.script("/img.png", ok(&with("image/png", &[]), &image()));
    p.script(
        "/creative.html",
        ok(&with("text/html; charset=utf-8", &[]), HTML.as_bytes()),
    );
    p.script(
        "/creative-gz.html",
        ok(
            &with("text/html", &[("content-encoding", "gzip")]),
            &gzip(HTML.as_bytes()),
        ),
    );
    p.script("/style.css", ok(&with("text/css", &[]), CSS.as_bytes()));
    let redirect = |to: &str| {
        vec![Step::Write(response(
            "302 Found",
            &[("location", to), ("set-cookie", "hop=1")],
            b"",
        ))]
    };
    p.script(
        "/redirect-allowed",
        redirect("http://cdn.demo-partner.example/img.png"),
    );
    p.script(
        "/redirect-refused",
        redirect("https://evil.example/img.png"),
    );
    p.script(
        "/redirect-internal",
        redirect("http://169.254.169.254/latest/meta-data/"),
    );
    p.script("/loop", redirect("/loop"));
    p.script(
        "/px/beacon",
        vec![Step::Write(response("204 No Content", &[], b""))],
    );
    // Headers a browser acts on, on a creative (rewritten), an image (streamed) and a `300`
    // (a redirect status the proxy does not follow, which a browser would).
    p.script(
        "/acts.html",
        ok(&with("text/html", &ACTING), HTML.as_bytes()),
    );
    p.script("/acts.png", ok(&with("image/png", &ACTING), &image()));
    let mut choices = vec![("content-type", "text/html")];
    choices.extend_from_slice(&ACTING);
    p.script(
        "/acts-300",
        vec![Step::Write(response(
            "300 Multiple Choices",
            &choices,
            b"<p>pick</p>",
        ))],
    );
    let head = |ct: &str, len: usize| {
        format!("HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n")
            .into_bytes()
    };
    p.script(
        "/dies.png",
        vec![
            Step::Write(head("image/png", IMAGE_LEN)),
            Step::Write(image()[..30_000].to_vec()),
            Step::Close,
        ],
    );
    let mut page = HTML.repeat(200).into_bytes();
    page.truncate(10_000);
    p.script(
        "/dies.html",
        vec![
            Step::Write(head("text/html", 50_000)),
            Step::Write(page),
            Step::Close,
        ],
    );
}

/// Partner headers a browser acts on by going, fetching or reporting somewhere, or by
/// changing state for the whole origin; `evil.example` is off the allowlist.
const ACTING: [(&str, &str); 14] = [
    ("refresh", "0; url=https://evil.example/"),
    ("link", "<https://evil.example/x.js>; rel=preload; as=script"),
    ("link", "<https://evil.example>; rel=preconnect, <//evil.example>; rel=dns-prefetch"),
    ("link", "<https://evil.example/m.js>; rel=modulepreload"),
    ("location", "https://evil.example/"),
    ("content-location", "https://evil.example/"),
    ("report-to", "{\"group\":\"default\",\"max_age\":86400,\"endpoints\":[{\"url\":\"https://evil.example/r\"}]}"),
    ("reporting-endpoints", "default=\"https://evil.example/r\""),
    ("nel", "{\"report_to\":\"default\",\"max_age\":86400}"),
    ("sourcemap", "https://evil.example/map"),
    ("x-sourcemap", "https://evil.example/map"),
    ("speculation-rules", "\"https://evil.example/rules.json\""),
    ("content-security-policy", "default-src *; report-uri https://evil.example/csp"),
    ("x-content-type-options", "none"),
];

/// `POST` to a signed URL is a beacon (`<a ping>`, `sendBeacon`): relayed to the partner once,
/// with its body's type and length, signed, without the client's cookies; its answer relayed,
/// a redirect not followed; over 64 KiB a `413` and nothing sent; a tampered token the one
/// `403` and nothing sent.
pub fn beacons_relayed(w: &World) -> Outcome {
    install(&w.partner);
    for path in ["/px/beacon", "/img.png", "/redirect-allowed"] {
        w.partner.take_requests(path);
    }
    let body = b"{\"event\":\"impression\"}";
    let beacon = format!("http://{ADS}/px/beacon");
    let post = |path: &str, body: &[u8]| {
        let headers = [
            ("content-type", "text/plain;charset=UTF-8"),
            ("cookie", "session=reader-secret"),
        ];
        e2e::send(w.streaming, "POST", path, &headers, body, crate::TIMEOUT)
            .map_err(|e| format!("POST {path}: {e}"))
    };
    let r = post(&proxy_path(w, &beacon, 60)?, body)?;
    check(r.status == 204, || {
        format!("beacon: status {} {}", r.status, text(&r.body))
    })?;
    let heads = w.partner.take_requests("/px/beacon");
    check(heads.len() == 1, || {
        format!("the partner got {} beacons", heads.len())
    })?;
    let head = text(&heads[0]).to_ascii_lowercase();
    check(
        head.starts_with("post /px/beacon ")
            && head.contains("\r\ncontent-type: text/plain;charset=utf-8\r\n")
            && head.contains(&format!("\r\ncontent-length: {}\r\n", body.len()))
            && head.contains("\r\nsignature: ")
            && !head.contains("reader-secret"),
        || format!("what the partner got:\n{head}"),
    )?;
    // A redirect answering a beacon comes back; nothing is sent on.
    let r = post(
        &proxy_path(w, &format!("http://{ADS}/redirect-allowed"), 60)?,
        body,
    )?;
    let followed = w.partner.take_requests("/img.png");
    check(r.status == 302 && followed.is_empty(), || {
        format!(
            "beacon answered by a redirect: status {}, {} requests sent on",
            r.status,
            followed.len()
        )
    })?;
    w.partner.take_requests("/redirect-allowed");
    // Over the cap, and with a tampered token: refused, nothing sent.
    let r = post(&proxy_path(w, &beacon, 60)?, &vec![b'x'; 64 * 1024 + 1])?;
    check(r.status == 413, || {
        format!("65537 bytes: status {}", r.status)
    })?;
    let tampered = proxy_path(w, &beacon, 60)?.replace("beacon", "beacon2");
    let r = post(&tampered, body)?;
    check(
        r.status == 403 && r.body == FORBIDDEN_BODY.as_bytes(),
        || format!("tampered: status {} {}", r.status, text(&r.body)),
    )?;
    let sent =
        w.partner.take_requests("/px/beacon").len() + w.partner.take_requests("/px/beacon2").len();
    check(sent == 0, || {
        format!("{sent} refused beacons reached the partner")
    })
}

/// The proxy path for `target`, signed with the development key, good for `ttl` seconds.
pub fn proxy_path(w: &World, target: &str, ttl: u64) -> Result<String, String> {
    let exp = now() + ttl;
    Ok(format!(
        "{PROXY_PATH}?tsurl={}&tsexp={exp}&tstoken={}",
        encode(target),
        dev_key(w)?.token(target, exp)
    ))
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

/// No cookies and none of the partner's CORS headers reach the client, only the proxy's own
/// `Access-Control-Allow-Origin: *` (never with credentials); `Cache-Control` does.
fn filtered(label: &str, r: &e2e::Timed) -> Outcome {
    for (name, value) in &r.headers {
        let ours = name == "access-control-allow-origin" && value == b"*";
        check(
            !name.contains("cookie") && (ours || !name.starts_with("access-control-")),
            || format!("{label}: {name}: {} reached the client", text(value)),
        )?;
    }
    let origins = r.header_values("access-control-allow-origin");
    check(origins == [b"*"], || {
        format!("{label}: access-control-allow-origin {origins:?}, want one \"*\"")
    })?;
    check(
        r.header("cache-control") == Some("public, max-age=600"),
        || format!("{label}: cache-control {:?}", r.header("cache-control")),
    )
}

pub fn image_byte_identical(w: &World) -> Outcome {
    install(&w.partner);
    for build in [w.streaming, w.buffered] {
        let path = proxy_path(w, &format!("http://{ADS}/img.png"), 60)?;
        let r = fetch(build, &path, &[("accept-encoding", "gzip")])?;
        check(r.status == 200 && r.complete, || {
            format!("status {} complete {}", r.status, r.complete)
        })?;
        check(r.body == image(), || {
            format!("{} bytes, not the partner's image", r.body.len())
        })?;
        check(r.header("content-type") == Some("image/png"), || {
            format!("content-type {:?}", r.header("content-type"))
        })?;
        check(
            r.header("content-length") == Some(&IMAGE_LEN.to_string()),
            || format!("content-length {:?}", r.header("content-length")),
        )?;
        filtered("image", &r)?;
    }
    Ok(())
}

/// A partner's answer whose cache headers (`Surrogate-Key`, `Vary`) and others carry bytes
/// that are not UTF-8 reaches the reader whole from both builds, twice (the second may come
/// from the platform's HTTP cache): the proxy's send goes through the fastly crate's cache
/// handling, which must not panic on what a partner sends.
pub fn partner_header_bytes_not_utf8(w: &World) -> Outcome {
    let mut head = b"HTTP/1.1 200 OK\r\ncontent-type: image/png\r\n\
        cache-control: public, max-age=600\r\nsurrogate-key: ad-\xff one\r\n\
        vary: accept-encoding, x-\xe9\r\nx-partner: caf\xe9\r\n"
        .to_vec();
    head.extend_from_slice(
        format!("content-length: {IMAGE_LEN}\r\nconnection: close\r\n\r\n").as_bytes(),
    );
    w.partner
        .script("/obs-text.png", vec![Step::Write([head, image()].concat())]);
    for build in [w.streaming, w.buffered] {
        for round in 1..=2 {
            let path = proxy_path(w, &format!("http://{ADS}/obs-text.png"), 60)?;
            let r = fetch(build, &path, &[])?;
            check(r.status == 200 && r.complete, || {
                format!("round {round}: status {} complete {}", r.status, r.complete)
            })?;
            check(r.body == image(), || {
                format!("round {round}: {} bytes, not the image", r.body.len())
            })?;
        }
    }
    Ok(())
}

/// The first-party URL the service must write for `target`, given the expiry it used: built
/// here with the `url` crate's form encoder and the development key.
fn expected_url(w: &World, target: &str, exp: u64) -> Result<String, String> {
    expected_url_on(w, PROXY_PATH, target, exp)
}

/// [`expected_url`] on `path` (the proxy, or the click route for a link).
fn expected_url_on(w: &World, path: &str, target: &str, exp: u64) -> Result<String, String> {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("tsurl", target)
        .append_pair("tsexp", &exp.to_string())
        .append_pair("tstoken", &dev_key(w)?.token(target, exp))
        .finish();
    Ok(format!("{path}?{query}"))
}

/// The expiry of the first first-party URL in `body`.
fn first_expiry(body: &str) -> Result<u64, String> {
    let at = body.find("tsexp=").ok_or("no tsexp in the body")?;
    body[at + 6..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| "unreadable tsexp".to_owned())
}

pub fn creatives_rewritten(w: &World) -> Outcome {
    install(&w.partner);
    let img = format!("http://{ADS}/img.png");
    let css = format!("http://{CDN}/style.css");
    let landing = format!("https://{ADS}/landing?c=1");
    for (path, encoding) in [
        ("/creative.html", "identity"),
        ("/creative-gz.html", "gzip"),
    ] {
        let before = now();
        let r = fetch(
            w.streaming,
            &proxy_path(w, &format!("http://{ADS}{path}"), 60)?,
            &[("accept-encoding", encoding)],
        )?;
        let after = now();
        check(r.status == 200 && r.complete, || {
            format!("{path}: status {} {}", r.status, text(&r.body))
        })?;
        filtered(path, &r)?;
        let body = if encoding == "gzip" {
            check(r.header("content-encoding") == Some("gzip"), || {
                format!(
                    "{path}: content-encoding {:?}",
                    r.header("content-encoding")
                )
            })?;
            crate::gunzip(&r.body)?
        } else {
            r.body.clone()
        };
        if let Some(len) = r.header("content-length") {
            check(len == r.body.len().to_string(), || {
                format!("{path}: content-length {len} for {} bytes", r.body.len())
            })?;
        }
        let body = text(&body);
        let exp = first_expiry(&body)?;
        check(
            (before + PAGE_TTL..=after + PAGE_TTL).contains(&exp),
            || format!("{path}: expiry {exp}, not page_ttl_secs after {before}"),
        )?;
        // In HTML the `&`s of a rewritten attribute are written as character references.
        let want = HTML
            .replace(&img, &expected_url(w, &img, exp)?.replace('&', "&amp;"))
            .replace(&css, &expected_url(w, &css, exp)?.replace('&', "&amp;"))
            .replace(
                &landing,
                &expected_url_on(w, CLICK_PATH, &landing, exp)?.replace('&', "&amp;"),
            );
        check(body == want, || {
            format!("{path}: got\n{body}\nwant\n{want}")
        })?;
    }
    // The URLs written into the creative verify and fetch: the image, and the sheet, itself
    // rewritten.
    let r = fetch(
        w.streaming,
        &proxy_path(w, &format!("http://{ADS}/creative.html"), 60)?,
        &[],
    )?;
    let body = text(&r.body);
    let urls: Vec<String> = body
        .split("\"")
        .filter(|s| s.starts_with(PROXY_PATH))
        .map(|s| s.replace("&amp;", "&"))
        .collect();
    check(urls.len() == 2, || format!("first-party URLs {urls:?}"))?;
    // The link is a click URL: it redirects the reader to the landing page itself.
    let clicks: Vec<String> = body
        .split('"')
        .filter(|s| s.starts_with(CLICK_PATH))
        .map(|s| s.replace("&amp;", "&"))
        .collect();
    check(clicks.len() == 1, || format!("click URLs {clicks:?}"))?;
    let r = fetch(w.streaming, &clicks[0], &[])?;
    check(
        r.status == 302 && r.header("location") == Some(landing.as_str()),
        || format!("click: {} to {:?}", r.status, r.header("location")),
    )?;
    for url in &urls {
        let target = param(&params(url), "tsurl").unwrap_or_default().to_owned();
        let got = fetch(w.streaming, url, &[])?;
        check(got.status == 200, || {
            format!("{url}: status {}", got.status)
        })?;
        if target == img {
            check(got.body == image(), || format!("{url}: not the image"))?;
        } else {
            let sheet = text(&got.body);
            let exp = first_expiry(&sheet)?;
            let want = CSS.replace(&img, &expected_url(w, &img, exp)?);
            check(sheet == want, || {
                format!("sheet: got\n{sheet}\nwant\n{want}")
            })?;
            check(got.header("content-type") == Some("text/css"), || {
                format!("sheet content-type {:?}", got.header("content-type"))
            })?;
        }
    }
    crate::build_log_line(
        w,
        "streaming",
        &["first-party creative", "3 URLs rewritten, 1 not allowed"],
    )
    .map(|_| ())
}

pub fn bad_urls_refused(w: &World) -> Outcome {
    install(&w.partner);
    let key = dev_key(w)?;
    let target = format!("http://{ADS}/img.png");
    let good = proxy_path(w, &target, 60)?;
    let p = params(&good);
    let exp: u64 = param(&p, "tsexp").and_then(|e| e.parse().ok()).unwrap_or(0);
    let token = param(&p, "tstoken").unwrap_or_default().to_owned();
    let flipped = format!(
        "{}{}",
        if token.starts_with('A') { 'B' } else { 'A' },
        &token[1..]
    );
    let with = |t: &str, exp: u64, token: &str| {
        format!(
            "{PROXY_PATH}?tsurl={}&tsexp={exp}&tstoken={token}",
            encode(t)
        )
    };
    let past = now() - 10;
    let evil = "http://evil.example/img.png";
    w.partner.take_requests("/img.png");
    for (what, path) in [
        ("tampered token", with(&target, exp, &flipped)),
        ("wrong expiry", with(&target, exp + 1, &token)),
        ("expired", with(&target, past, &key.token(&target, past))),
        ("other host", with(evil, exp, &key.token(evil, exp))),
        ("no parameters", PROXY_PATH.to_owned()),
    ] {
        let r = fetch(w.streaming, &path, &[])?;
        check(
            r.status == 403 && r.body == FORBIDDEN_BODY.as_bytes(),
            || format!("{what}: {} {}", r.status, text(&r.body)),
        )?;
        check(
            r.header("cache-control") == Some("no-store, private"),
            || format!("{what}: cache-control {:?}", r.header("cache-control")),
        )?;
    }
    let reached = w.partner.take_requests("/img.png");
    check(reached.is_empty(), || {
        format!("{} refused requests reached the partner", reached.len())
    })?;
    for needle in [
        "the token does not match",
        "expired at",
        "signed, but refused now: host \"evil.example\"",
    ] {
        crate::build_log_line(w, "streaming", &["first-party proxy refused", needle])?;
    }
    Ok(())
}

pub fn redirects(w: &World) -> Outcome {
    install(&w.partner);
    w.partner.take_requests("/img.png");
    let r = fetch(
        w.streaming,
        &proxy_path(w, &format!("http://{ADS}/redirect-allowed"), 60)?,
        &[],
    )?;
    check(r.status == 200 && r.body == image(), || {
        format!(
            "allowed redirect: status {}, {} bytes",
            r.status,
            r.body.len()
        )
    })?;
    filtered("allowed redirect", &r)?;
    let hops = w.partner.take_requests("/img.png");
    check(
        hops.len() == 1
            && text(&hops[0])
                .to_ascii_lowercase()
                .contains(&format!("host: {CDN}\r\n")),
        || format!("the redirect's target got {hops:?}"),
    )?;
    for (path, needle) in [
        (
            "/redirect-refused",
            "redirect refused: host \"evil.example\"",
        ),
        (
            "/redirect-internal",
            "redirect refused: IP literal 169.254.169.254",
        ),
        ("/loop", "more than 4 redirects"),
    ] {
        w.partner.take_requests(path);
        let r = fetch(
            w.streaming,
            &proxy_path(w, &format!("http://{ADS}{path}"), 60)?,
            &[],
        )?;
        check(r.status == 502 && r.header("location").is_none(), || {
            format!(
                "{path}: status {} location {:?}",
                r.status,
                r.header("location")
            )
        })?;
        check(r.header_values("set-cookie").is_empty(), || {
            format!("{path}: a cookie")
        })?;
        crate::build_log_line(w, "streaming", &[needle])?;
        let seen = w.partner.take_requests(path).len();
        let want = if path == "/loop" { 5 } else { 1 };
        check(seen == want, || {
            format!("{path}: partner saw {seen} requests, want {want}")
        })?;
    }
    Ok(())
}

/// No header of `r` names the off-list host, none a browser would act on passes, and the
/// response is confined: `nosniff`, and a CSP `sandbox` that lets a creative run its script
/// but never grants it the publisher's origin.
fn confined(label: &str, r: &e2e::Timed) -> Outcome {
    for (name, value) in &r.headers {
        check(!text(value).contains("evil.example"), || {
            format!("{label}: {name}: {} reached the client", text(value))
        })?;
    }
    for (name, _) in ACTING {
        if name == "content-security-policy" || name == "x-content-type-options" {
            continue;
        }
        check(r.header(name).is_none(), || {
            format!("{label}: {name} reached the client")
        })?;
    }
    let nosniff: Vec<String> = r
        .header_values("x-content-type-options")
        .into_iter()
        .map(text)
        .collect();
    check(nosniff == ["nosniff"], || {
        format!("{label}: x-content-type-options {nosniff:?}")
    })?;
    let policies: Vec<String> = r
        .header_values("content-security-policy")
        .into_iter()
        .map(text)
        .collect();
    // Read as a browser does (CSP3): directives split on `;`, tokens on whitespace.
    let sandboxes: Vec<Vec<String>> = policies
        .iter()
        .flat_map(|p| p.split(';'))
        .map(|d| {
            d.split_ascii_whitespace()
                .map(str::to_ascii_lowercase)
                .collect::<Vec<_>>()
        })
        .filter(|d| d.first().map(String::as_str) == Some("sandbox"))
        .collect();
    check(sandboxes.len() == 1, || {
        format!("{label}: content-security-policy {policies:?}, want one sandbox")
    })?;
    let tokens = &sandboxes[0];
    check(
        tokens.iter().any(|t| t == "allow-scripts")
            && !tokens.iter().any(|t| t == "allow-same-origin"),
        || format!("{label}: sandbox {tokens:?}"),
    )
}

pub fn browser_acting_headers_dropped_and_content_sandboxed(w: &World) -> Outcome {
    install(&w.partner);
    for (path, status) in [("/acts.html", 200), ("/acts.png", 200), ("/acts-300", 300)] {
        for build in [w.streaming, w.buffered] {
            let signed = proxy_path(w, &format!("http://{ADS}{path}"), 60)?;
            let r = fetch(build, &signed, &[])?;
            check(r.status == status && r.complete, || {
                format!("{path}: status {} complete {}", r.status, r.complete)
            })?;
            confined(path, &r)?;
        }
    }
    // Content that was already on the allowlist is sandboxed too: the plain creative.
    let r = fetch(
        w.streaming,
        &proxy_path(w, &format!("http://{ADS}/creative.html"), 60)?,
        &[],
    )?;
    confined("/creative.html", &r)
}

pub fn partner_dies_mid_body(w: &World) -> Outcome {
    install(&w.partner);
    for path in ["/dies.png", "/dies.html"] {
        let signed = proxy_path(w, &format!("http://{ADS}{path}"), 60)?;
        crate::assert_incomplete(w.streaming, &signed, &[("accept-encoding", "identity")])
            .map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

/// The edge ID the service sets on a page navigation.
fn edge_id(w: &World) -> Result<String, String> {
    let r = fetch(
        w.streaming,
        "/news/article.html",
        &[crate::identity(), ("sec-fetch-dest", "document")],
    )?;
    r.header_values("set-cookie")
        .into_iter()
        .map(text)
        .find_map(|c| {
            c.strip_prefix("ts-ec=")
                .and_then(|rest| rest.split(';').next())
                .map(str::to_owned)
        })
        .ok_or_else(|| "no ts-ec cookie on a navigation".to_owned())
}

/// `head` with its `X-TS-EC` lines replaced by one carrying `id`.
fn with_edge_id(head: &[u8], id: &str) -> Vec<u8> {
    text(head)
        .split("\r\n")
        .map(|line| {
            if line.to_ascii_lowercase().starts_with("x-ts-ec:") {
                format!("x-ts-ec: {id}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\r\n")
        .into_bytes()
}

/// Another ID of the same form: `id` with its first character changed.
fn other_id(id: &str) -> String {
    let first = if id.starts_with('a') { 'b' } else { 'a' };
    format!("{first}{}", id.get(1..).unwrap_or_default())
}

/// A named request: its headers and the `X-TS-EC` the partner must see.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Option<&'a str>);

pub fn hops_signed_and_edge_id(w: &World) -> Outcome {
    install(&w.partner);
    let id = edge_id(w)?;
    let cookie = format!("ts-ec={id}");
    let keys = format!("http://{}{DISCOVERY}", w.streaming);
    let cases: [Case<'_>; 3] = [
        ("with the ID cookie", vec![("cookie", &cookie)], Some(&id)),
        (
            "under Sec-GPC",
            vec![("cookie", &cookie), ("sec-gpc", "1")],
            None,
        ),
        (
            "without a cookie",
            vec![("x-ts-ec", "spoofed.AAAAAA")],
            None,
        ),
    ];
    for (what, headers, want_id) in cases {
        w.partner.take_requests("/redirect-allowed");
        w.partner.take_requests("/img.png");
        let path = proxy_path(w, &format!("http://{ADS}/redirect-allowed"), 60)?;
        let r = fetch(w.streaming, &path, &headers)?;
        check(r.status == 200, || format!("{what}: status {}", r.status))?;
        let mut heads = w.partner.take_requests("/redirect-allowed");
        heads.extend(w.partner.take_requests("/img.png"));
        check(heads.len() == 2, || format!("{what}: {} hops", heads.len()))?;
        for head in &heads {
            let lower = text(head).to_ascii_lowercase();
            let (code, out) = crate::signing::verifier(
                w,
                &["verify", "--keys", &keys, "--scheme", "http"],
                head,
            )?;
            check(code == 0 && out.starts_with("verified "), || {
                format!("{what}: exit {code}: {out}\n{}", text(head))
            })?;
            if let Some(id) = want_id {
                // The ID is covered: the same head with another ID does not verify.
                let forged = with_edge_id(head, &other_id(id));
                let (code, out) = crate::signing::verifier(
                    w,
                    &["verify", "--keys", &keys, "--scheme", "http"],
                    &forged,
                )?;
                check(code == 1 && out.starts_with("rejected: "), || {
                    format!("{what}: another X-TS-EC still verifies: exit {code}: {out}")
                })?;
            }
            check(!lower.contains("\r\ncookie:"), || {
                format!("{what}: a cookie reached the partner")
            })?;
            let sent: Vec<&str> = lower
                .lines()
                .filter_map(|l| l.strip_prefix("x-ts-ec: "))
                .collect();
            let want: Vec<String> = want_id.map(str::to_ascii_lowercase).into_iter().collect();
            check(sent == want, || {
                format!("{what}: partner got X-TS-EC {sent:?}, want {want:?}")
            })?;
        }
    }
    Ok(())
}

/// Without its key the proxy answers the one `503` and logs which store and key, before any
/// partner is contacted; the key never shows in a proxy response or in either build's log.
pub fn missing_key_and_the_key_never_shows(w: &World) -> Outcome {
    install(&w.partner);
    w.partner.take_requests("/img.png");
    let path = proxy_path(w, &format!("http://{ADS}/img.png"), 60)?;
    let r = fetch(w.no_secret, &path, &[])?;
    check(
        r.status == 503 && r.body == trusted_server_core::first_party::UNAVAILABLE_BODY.as_bytes(),
        || format!("no key: {} {}", r.status, text(&r.body)),
    )?;
    check(w.partner.take_requests("/img.png").is_empty(), || {
        "a request reached the partner without a key".into()
    })?;
    crate::build_log_line(
        w,
        "no-secret",
        &[
            "first-party proxy unavailable",
            "`ts_first_party`",
            "no key `no_such_url_key`",
        ],
    )?;
    let secret = super::secret_line(w)?;
    check(secret.len() >= 16, || "no key line".into())?;
    let creative = proxy_path(w, &format!("http://{ADS}/creative.html"), 60)?;
    for path in [path, creative] {
        let r = fetch(w.streaming, &path, &[])?;
        let all: Vec<u8> = (r.headers.iter())
            .flat_map(|(n, v)| n.bytes().chain(v.iter().copied()))
            .chain(r.body.iter().copied())
            .collect();
        check(!String::from_utf8_lossy(&all).contains(&secret), || {
            format!("{path}: the key shows")
        })?;
    }
    for build in ["streaming", "no-secret"] {
        let log =
            std::fs::read_to_string(crate::viceroy_log(w, build)).map_err(|e| e.to_string())?;
        check(!log.contains(&secret) && !log.contains("panicked"), || {
            format!("the {build} log shows the key or a panic")
        })?;
    }
    Ok(())
}
