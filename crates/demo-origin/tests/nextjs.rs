//! The captured Next.js app (`fixtures/nextjs`) replayed under `/next`: exact
//! bytes, the Flight capture for `RSC: 1` requests, and the recorded timing.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use demo_origin::nextjs::{self, Kind, Replay};
use e2e::Timed;
use serde_json::Value as Json;
use support::{arrived, chunks, decode, make_site, start, text};

fn replay() -> Replay {
    Replay::load(&nextjs::default_dir()).expect("fixtures/nextjs loads")
}

fn index() -> Json {
    let text = std::fs::read_to_string(nextjs::default_dir().join("index.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The request headers that select `kind`, as a browser sends them.
fn selecting(kind: &Kind) -> Vec<(&'static str, String)> {
    let mut h = Vec::new();
    if *kind != Kind::Html {
        h.push(("RSC", "1".to_string()));
        h.push((
            "Next-Router-State-Tree",
            "%5B%22%22%2C%7B%7D%5D".to_string(),
        ));
    }
    if matches!(kind, Kind::Prefetch | Kind::SegmentPrefetch(_)) {
        h.push(("Next-Router-Prefetch", "1".to_string()));
    }
    if let Kind::SegmentPrefetch(segment) = kind {
        h.push(("Next-Router-Segment-Prefetch", segment.clone()));
    }
    h
}

fn borrowed<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

fn get(addr: SocketAddr, target: &str, headers: &[(&'static str, String)]) -> Timed {
    support::get(addr, target, &borrowed(headers))
}

#[test]
fn every_capture_replays_its_exact_bytes_status_and_chunks() {
    let site = make_site();
    let addr = start(&site);
    let replay = replay();
    assert!(replay.captures().len() >= 10);
    for cap in replay.captures() {
        let target = if cap.kind == Kind::Html {
            format!("{}?nextjs_timing=0", cap.path)
        } else {
            format!("{}?_rsc=abc123&nextjs_timing=0", cap.path)
        };
        let r = get(addr, &target, &selecting(&cap.kind));
        assert_eq!(r.status, cap.status, "{}", cap.name);
        assert_eq!(
            r.header("content-type"),
            cap.content_type.as_deref(),
            "{}",
            cap.name
        );
        assert_eq!(
            r.header("transfer-encoding"),
            Some("chunked"),
            "{}",
            cap.name
        );
        assert_eq!(r.header("content-length"), None, "{}", cap.name);
        assert!(r.complete, "{}", cap.name);
        assert!(
            r.body == *cap.body,
            "{}: body differs from the capture",
            cap.name
        );
        let wire = chunks(addr, &target, &borrowed(&selecting(&cap.kind)));
        assert!(wire.concat() == r.body, "{}: the wire's chunks", cap.name);
        let lens: Vec<usize> = wire.iter().map(Vec::len).collect();
        let recorded: Vec<usize> = cap.chunks.iter().map(|c| c.len).collect();
        assert_eq!(lens, recorded, "{}: chunk boundaries", cap.name);
        let file = std::fs::read(nextjs::default_dir().join(format!("{}.body", cap.name))).unwrap();
        assert!(r.body == file, "{}: body differs from the file", cap.name);
    }
}

#[test]
fn rsc_request_gets_the_flight_capture_and_a_plain_get_the_html() {
    let site = make_site();
    let addr = start(&site);
    let replay = replay();
    let html = get(addr, "/next/about?nextjs_timing=0", &[]);
    assert_eq!(
        html.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(text(&html).starts_with("<!DOCTYPE html>"));
    assert!(text(&html).contains("self.__next_f.push("));
    assert_eq!(
        html.body,
        *replay.find("/next/about", &Kind::Html).unwrap().body
    );

    let flight = get(
        addr,
        "/next/about?_rsc=kbjVg&nextjs_timing=0",
        &selecting(&Kind::Rsc),
    );
    assert_eq!(flight.header("content-type"), Some("text/x-component"));
    assert!(!text(&flight).contains("<html"));
    assert!(
        text(&flight).contains(":T"),
        "the navigation payload has T rows"
    );
    assert_eq!(
        flight.body,
        *replay.find("/next/about", &Kind::Rsc).unwrap().body
    );
    // Next's own Vary header comes along (once), naming the RSC headers.
    let vary = flight.header_values("vary");
    assert_eq!(vary.len(), 1);
    assert!(String::from_utf8_lossy(vary[0]).contains("next-router-state-tree"));

    let prefetch = get(
        addr,
        "/next/about?_rsc=x&nextjs_timing=0",
        &selecting(&Kind::Prefetch),
    );
    assert_eq!(
        prefetch.body,
        *replay.find("/next/about", &Kind::Prefetch).unwrap().body
    );
    let tree = Kind::SegmentPrefetch("/_tree".to_string());
    let segment = get(
        addr,
        "/next/about?_rsc=y&nextjs_timing=0",
        &selecting(&tree),
    );
    assert_eq!(
        segment.body,
        *replay.find("/next/about", &tree).unwrap().body
    );
    assert_ne!(prefetch.body, segment.body);

    // A Flight kind nobody captured is a 404, never the HTML.
    let other = Kind::SegmentPrefetch("/children/__PAGE__".to_string());
    let missing = get(addr, "/next/about?_rsc=z", &selecting(&other));
    assert_eq!(missing.status, 404);
    assert_eq!(get(addr, "/next/nope", &[]).status, 404);
}

#[test]
fn nonce_page_keeps_its_policy_header_and_script_nonces() {
    let site = make_site();
    let addr = start(&site);
    let r = get(addr, "/next/nonce?nextjs_timing=0", &[]);
    let csp = r
        .header("content-security-policy")
        .expect("CSP header replayed");
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|s| s.split('\'').next())
        .unwrap();
    assert!(text(&r).contains(&format!("<script nonce=\"{nonce}\">self.__next_f.push(")));
}

#[test]
fn trailing_slash_redirects_like_next() {
    let site = make_site();
    let addr = start(&site);
    let r = get(addr, "/next/", &[]);
    assert_eq!(r.status, 308);
    assert_eq!(r.header("location"), Some("/next"));
}

#[test]
fn chunks_arrive_spread_over_time_like_the_capture() {
    let site = make_site();
    let addr = start(&site);
    let replay = replay();
    for path in ["/next", "/next/live"] {
        let cap = replay.find(path, &Kind::Html).unwrap();
        let first_ms = cap.chunks.first().unwrap().at;
        let last_ms = cap.chunks.last().unwrap().at;
        assert!(
            last_ms - first_ms >= Duration::from_millis(300),
            "{path}: the capture itself has no late Suspense boundary"
        );
        let r = support::get(addr, path, &[]);
        assert_eq!(r.body, *cap.body);
        // When each recorded chunk had fully arrived, from the head.
        let ends: Vec<usize> = (cap.chunks.iter())
            .scan(0, |end, c| {
                *end += c.len;
                Some(*end)
            })
            .collect();
        let at: Vec<Duration> = ends
            .iter()
            .map(|&end| arrived(&r, end) - r.headers_at)
            .collect();
        let (first, last) = (at[0], at[at.len() - 1]);
        assert!(
            first < first_ms + Duration::from_millis(150),
            "{path}: first chunk after {first:?}"
        );
        // Offsets count from the server's head write; the client sees the
        // head a little later, so allow some slack on that side.
        let slack = Duration::from_millis(50);
        assert!(
            last + slack >= last_ms,
            "{path}: last chunk after {last:?}, recorded {last_ms:?}"
        );
        assert!(
            last - first >= (last_ms - first_ms).mul_f64(0.9),
            "{path}: chunks not spread out ({first:?} .. {last:?})"
        );
        // Every chunk keeps its recorded offset.
        for (got, want) in at.iter().zip(cap.chunks.iter()) {
            assert!(*got + slack >= want.at);
        }
    }
}

#[test]
fn compressed_replay_still_streams_and_decodes_to_the_capture() {
    let site = make_site();
    let addr = start(&site);
    let cap = replay();
    let cap = cap.find("/next/live", &Kind::Rsc).unwrap();
    for coding in ["gzip", "br"] {
        let headers = [
            &selecting(&Kind::Rsc)[..],
            &[("Accept-Encoding", coding.to_string())],
        ]
        .concat();
        let target = "/next/live?_rsc=q&nextjs_timing=0";
        let r = get(addr, target, &headers);
        assert_eq!(r.header("content-encoding"), Some(coding));
        let wire = chunks(addr, target, &borrowed(&headers));
        assert!(wire.concat() == r.body, "{coding}: the wire's chunks");
        assert_eq!(
            wire.len(),
            cap.chunks.len(),
            "{coding}: one chunk per capture chunk"
        );
        assert_eq!(decode(coding, &r.body).unwrap(), *cap.body, "{coding}");
    }
}

#[test]
fn static_assets_are_served_from_the_capture_directory() {
    let site = make_site();
    let addr = start(&site);
    let static_root = replay().static_root();
    let chunks = static_root.join("next/_next/static/chunks");
    let js = std::fs::read_dir(&chunks)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "js"))
        .expect("a JS chunk");
    let name = js.file_name().unwrap().to_str().unwrap();
    let r = get(addr, &format!("/next/_next/static/chunks/{name}"), &[]);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(
        r.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(r.body, std::fs::read(&js).unwrap());

    let logo = get(addr, "/next/courier-logo.svg", &[]);
    assert_eq!(logo.header("content-type"), Some("image/svg+xml"));
    assert_eq!(
        logo.body,
        std::fs::read(static_root.join("next/courier-logo.svg")).unwrap()
    );
    assert_eq!(
        get(addr, "/next/_next/static/chunks/missing.js", &[]).status,
        404
    );
    assert_eq!(
        get(addr, "/next/_next/%2e%2e/%2e%2e/index.json", &[]).status,
        400
    );
}

#[test]
fn every_page_asset_is_there() {
    // Each script, stylesheet and icon a captured page names is served.
    let site = make_site();
    let addr = start(&site);
    for cap in replay().captures() {
        if cap.kind != Kind::Html || cap.status != 200 {
            continue;
        }
        let html = String::from_utf8(cap.body.to_vec()).unwrap();
        for attr in ["src=\"/next/", "href=\"/next/"] {
            for rest in html.split(attr).skip(1) {
                let url = format!("/next/{}", rest.split('"').next().unwrap());
                let path = url.split('?').next().unwrap();
                if !path.contains("/_next/") && !path.contains('.') {
                    continue; // a page link, not an asset
                }
                let r = get(addr, &url, &[]);
                assert_eq!(r.status, 200, "{}: {url}", cap.name);
            }
        }
    }
}

#[test]
fn the_index_describes_the_captures() {
    let index = index();
    let captures = index.get("captures").and_then(Json::as_array).unwrap();
    let replay = replay();
    assert_eq!(captures.len(), replay.captures().len());
    let mut crossing = 0;
    for entry in captures {
        let name = entry.get("name").and_then(Json::as_str).unwrap();
        let cap = replay.captures().iter().find(|c| c.name == name).unwrap();
        assert_eq!(
            entry.get("body_bytes").and_then(Json::as_u64),
            Some(cap.body.len() as u64)
        );
        assert_eq!(
            entry.get("content_type").and_then(Json::as_str),
            cap.content_type.as_deref()
        );
        if let Some(rows) = entry
            .get("flight")
            .and_then(|f| f.get("t_rows_crossing_scripts"))
            .and_then(Json::as_array)
        {
            crossing += rows.len();
        }
    }
    assert!(crossing > 0, "no T row crosses a self.__next_f.push script");
}
