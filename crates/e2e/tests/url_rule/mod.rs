//! End-to-end scenario of the URL rule at the end of a line: `fixtures/site/news/line-ends.html`
//! (CRLF line endings) has origin URLs followed by a newline, raw or JSON-escaped, in a
//! comment, in text and in scripts, and origin hosts that go on after a newline. A browser
//! removes tab, CR and LF from a URL and reads on, so the first kind is the origin (rewritten)
//! and the second another host (left alone). After a port only digits (another port) and `@`
//! (user info of another host) go on; anything else, such as the `-->` that closes a comment
//! on the next line, ends the URL (issue 35). The expected page is written here line by line,
//! not computed by the rule.

use std::net::SocketAddr;

use super::{check, fetch_complete, fixture, identity, same_bytes, without_tag, Outcome, World};

const PAGE: &str = "news/line-ends.html";
const ORIGIN: &str = "origin.demo-publisher.example";

/// The fixture with each origin URL written for `authority`: (before, after) pairs, each
/// found exactly once in the fixture.
fn expected_page(w: &World, authority: &SocketAddr) -> Result<Vec<u8>, String> {
    let a = authority.to_string();
    let o = ORIGIN;
    let pairs = [
        (
            format!("source:  http://{o}\r\n"),
            format!("source:  http://{a}\r\n"),
        ),
        (
            format!("mirror:  https://{o}:443\r\n"),
            format!("mirror:  http://{a}\r\n"),
        ),
        (format!("feed:    //{o}/api"), format!("feed:    //{a}/api")),
        (
            format!("served:  http://{o}:80\r\n-->"),
            format!("served:  http://{a}\r\n-->"),
        ),
        (
            format!("Mirrored at http://{o}:80\r\nevery"),
            format!("Mirrored at http://{a}\r\nevery"),
        ),
        (
            format!("href=\"https://{o}/news/line-ends"),
            format!("href=\"http://{a}/news/line-ends"),
        ),
        (
            format!("Sent from https://{o}\r\n"),
            format!("Sent from http://{a}\r\n"),
        ),
        (
            format!("// API base: https://{o}\r\n"),
            format!("// API base: http://{a}\r\n"),
        ),
        (
            format!(r#""https:\/\/{o}\n";"#),
            format!(r#""http:\/\/{a}\n";"#),
        ),
        (
            format!("\"https://{o}\\r\\n\\t\""),
            format!("\"http://{a}\\r\\n\\t\""),
        ),
        (
            format!(r#""https:\/\/{o}:443\n-";"#),
            format!(r#""http:\/\/{a}\n-";"#),
        ),
    ];
    let mut page = String::from_utf8(fixture(w, PAGE)).map_err(|e| e.to_string())?;
    for (before, after) in &pairs {
        check(page.matches(before.as_str()).count() == 1, || {
            format!("the fixture no longer has {before:?} once")
        })?;
        page = page.replacen(before.as_str(), after, 1);
    }
    // Everything else is left alone, byte for byte: the hosts that go on after a newline,
    // another port (`:80\r\n80`) and user info of another host (`:80\r\n@evil.example`).
    check(page.matches(o).count() == 4, || {
        format!("expected four origin hosts left alone, page:\n{page}")
    })?;
    Ok(page.into_bytes())
}

/// Origin URLs at the end of a line are rewritten and hosts that go on after a newline are
/// left alone, in the streaming and buffered builds, also when the origin sends the page in
/// small delayed chunks.
pub fn origin_urls_at_the_end_of_a_line(w: &World) -> Outcome {
    for (build, addr) in [("streaming", w.streaming), ("buffered", w.buffered)] {
        let want = expected_page(w, &addr)?;
        for query in ["", "?drip_ms=5&drip_chunks=40"] {
            let r = fetch_complete(addr, &format!("/{PAGE}{query}"), &[identity()])?;
            same_bytes(
                &format!("{build} {PAGE}{query}"),
                &without_tag(&r.body),
                &want,
            )?;
        }
    }
    Ok(())
}
