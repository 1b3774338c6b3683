//! End-to-end scenario of learned `103 Early Hints` (issue 19, item 3) against the streaming
//! build. Viceroy does not forward a guest's `103`: it logs `Guest returned informational
//! response (103 <unknown status code>) which will not be sent to the client` (warn), then the
//! response with its headers (info; `start_viceroy` sets `RUST_LOG` for its `execute` module).
//! The scenario reads that log.

use std::time::{Duration, Instant};

use super::{check, fetch_complete, Outcome, World, ORIGIN_HOST};

const NAV: (&str, &str) = ("sec-fetch-dest", "document");
const WARN_103: &str = "Guest returned informational response (103";

/// The streaming build's Viceroy log.
fn viceroy_log(w: &World) -> String {
    std::fs::read_to_string(crate::viceroy_log(w, "streaming")).unwrap_or_default()
}

/// Lines of the demo origin's log naming `token` (one per request, once its response ended).
fn origin_lines(w: &World, token: &str) -> usize {
    std::fs::read_to_string(w.root.join(super::ORIGIN_LOG))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(token))
        .count()
}

/// First navigation: no `103`. Second: the `103` is in Viceroy's log, with the page's `Link`
/// header and head hints rewritten to the request's authority, while the origin (told to
/// wait 1.5 s before its headers) has not yet answered the second request.
pub fn second_navigation_gets_a_103_before_the_origin(w: &World) -> Outcome {
    let t = format!(
        "h{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    // A Link header naming the origin (percent-encoded for the demo origin's `link` knob).
    let link =
        format!("<https://{ORIGIN_HOST}/static/font.woff2?{t}>; rel=preload; as=font; crossorigin");
    let knob: String = link
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let path = format!("/news/article.html?headers_delay_ms=1500&t={t}&link={knob}");
    let before = viceroy_log(w).matches(WARN_103).count();
    fetch_complete(w.streaming, &path, &[NAV])?;
    // The access line of the first request is logged after its body: by then any 103 of it
    // would be in the log before it.
    let log = viceroy_log(w);
    check(!log.contains(&format!("font.woff2?{t}")), || {
        "a 103 on the first navigation".into()
    })?;
    let addr = w.streaming;
    let path2 = path.clone();
    let second = std::thread::spawn(move || fetch_complete(addr, &path2, &[NAV]));
    // Wait for the 103 (at most 1.2 s: the origin answers after 1.5 s).
    let asked = Instant::now();
    let want_header = format!("//{addr}/static/font.woff2?{t}>; rel=preload; as=font; crossorigin");
    let found = loop {
        let log = viceroy_log(w);
        if log.matches(WARN_103).count() > before && log.contains(&want_header) {
            break Some(log);
        }
        if asked.elapsed() > Duration::from_millis(1200) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let origin_answered_second = origin_lines(w, &t) > 1;
    second
        .join()
        .map_err(|_| "second request panicked".to_string())??;
    let log = found.ok_or_else(|| format!("no 103 with {want_header:?} in the Viceroy log"))?;
    check(!origin_answered_second, || {
        "the origin answered the second request before the 103 was logged".into()
    })?;
    for head_hint in [
        format!("<//{addr}>; rel=preconnect; crossorigin"),
        format!("<//{addr}/static/site.css>; rel=preload; as=style"),
        format!("<//{addr}/static/app.js>; rel=preload; as=script"),
    ] {
        check(log.contains(&head_hint), || {
            format!("the 103 lacks {head_hint:?}")
        })?;
    }
    check(
        !log.contains(&format!("{ORIGIN_HOST}/static/font.woff2?{t}")),
        || "a hint names the origin".into(),
    )
}

/// RFC 9110, section 15.2: a server must not send a 1xx to an HTTP/1.0 client (it would read
/// the `103` as the answer). A page whose hints are learned (a first navigation teaches them;
/// a second over HTTP/1.1 gets its `103`, which shows they are) is asked for over HTTP/1.0
/// with the same headers (the hints are stored under the page's cache key, which some of
/// them are part of): the page comes whole and no `103` is logged for it.
pub fn an_http10_navigation_gets_no_103(w: &World) -> Outcome {
    let path = format!("/news/article.html?t=h10-{}", super::cache::unique());
    let navigate = |version: &str| {
        let raw = format!(
            "GET {path} HTTP/{version}\r\nhost: {}\r\nsec-fetch-dest: document\r\n\
             accept: text/html\r\naccept-encoding: identity\r\nconnection: close\r\n\r\n",
            w.streaming
        );
        let got = e2e::wire::send_raw(w.streaming, raw.as_bytes(), Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&got).into_owned();
        check(
            text.starts_with("HTTP/1.") && text[8..].starts_with(" 200"),
            || format!("HTTP/{version}: {:?}", &text[..text.len().min(200)]),
        )?;
        check(text.contains("</html>"), || {
            format!("HTTP/{version}: the page did not end")
        })
    };
    navigate("1.1")?;
    let before = viceroy_log(w).matches(WARN_103).count();
    navigate("1.1")?;
    let learned = viceroy_log(w).matches(WARN_103).count();
    check(learned > before, || {
        "no 103 over HTTP/1.1: the hints were not learned, the test shows nothing".into()
    })?;
    navigate("1.0")?;
    let after = viceroy_log(w).matches(WARN_103).count();
    check(after == learned, || {
        format!("{} 103 for the HTTP/1.0 navigation", after - learned)
    })
}
