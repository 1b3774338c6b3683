//! End-to-end scenarios of the shared-cache rule (`trusted_server_core::cache::shared`,
//! docs/caching.md "Readers with cookies"): no reader ever gets another reader's page or
//! hints. Reader A carries a session cookie (`session=alice`); reader B carries none. The demo
//! origin's `echo=cookie` knob ends the page with the request's `Cookie`, so a page that is
//! A's shows it.

use std::time::{Duration, Instant};

use super::cache::{origin_requests, state, unique};
use super::{check, contains, fetch_complete, identity, Outcome, World};

const PAGE: &str = "/news/article.html";
const NAV: (&str, &str) = ("sec-fetch-dest", "document");
const ALICE: (&str, &str) = ("cookie", "session=alice");
/// What the echo of A's cookie looks like in a page.
const ALICES_PAGE: &[u8] = b"echo cookie: session=alice";

/// A page the origin lets any cache keep for 5 minutes (`max-age`, not `public`): A's request
/// passes (`PASS(cookie)`) and stores nothing, remembers nothing; B then gets a page of its
/// own from the origin (a MISS, without A's cookie), and after it, a HIT; A again passes.
pub fn a_readers_cookie_page_is_never_served_to_another(w: &World) -> Outcome {
    let t = unique();
    let path = format!("{PAGE}?cache_control=max-age%3D300&echo=cookie&t={t}");
    let a = fetch_complete(w.streaming, &path, &[identity(), ALICE])?;
    check(state(&a) == "PASS(cookie)", || {
        format!("A (session cookie): {}", state(&a))
    })?;
    check(contains(&a.body, ALICES_PAGE), || "A's own page".into())?;
    let b = fetch_complete(w.streaming, &path, &[identity()])?;
    check(!contains(&b.body, b"alice"), || {
        format!("B got A's page ({})", state(&b))
    })?;
    check(state(&b) == "MISS", || {
        format!(
            "B after A: {} (a pass remembered from A's request?)",
            state(&b)
        )
    })?;
    let b2 = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&b2) == "HIT", || format!("B again: {}", state(&b2)))?;
    // A never reads the anonymous copy either: its answer may differ (it is logged in).
    let a2 = fetch_complete(w.streaming, &path, &[identity(), ALICE])?;
    check(
        state(&a2) == "PASS(cookie)" && contains(&a2.body, ALICES_PAGE),
        || format!("A again: {}", state(&a2)),
    )?;
    let n = origin_requests(w, &t, 3);
    check(n == 3, || format!("{n} origin requests, not 3 (A, B, A)"))?;
    super::log_line(w, &["access", "cache=PASS(cookie)"]).map(|_| ())
}

/// Only `ts-ec` (the service's own cookie) leaves a request anonymous: a `ts-ec` request
/// fills and reads the shared copy, a `ts-ec2` (or `xts-ec`) cookie is a reader's own.
pub fn only_the_edge_id_cookie_is_anonymous(w: &World) -> Outcome {
    let t = unique();
    let path = format!("{PAGE}?cache_control=max-age%3D300&echo=cookie&t={t}");
    for cookie in ["ts-ec2=x", "xts-ec=x", "ts-ec=a; theme=dark"] {
        let r = fetch_complete(w.streaming, &path, &[identity(), ("cookie", cookie)])?;
        check(state(&r) == "PASS(cookie)", || {
            format!("Cookie: {cookie}: {}", state(&r))
        })?;
    }
    let first = fetch_complete(w.streaming, &path, &[identity(), ("cookie", "ts-ec=abc")])?;
    let second = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&first) == "MISS" && state(&second) == "HIT", || {
        format!("ts-ec only: {} then {}", state(&first), state(&second))
    })?;
    check(!contains(&second.body, b"theme=dark"), || {
        "a reader cookie reached the shared copy".into()
    })
}

/// With `public` or `s-maxage` the origin shares the page explicitly: a request with a
/// session cookie fills the entry and reads it, as anonymous readers do.
pub fn an_explicitly_shared_page_is_filled_and_read_with_cookies(w: &World) -> Outcome {
    for cc in ["public%2C%20max-age%3D300", "s-maxage%3D300"] {
        let t = unique();
        let path = format!("{PAGE}?cache_control={cc}&t={t}");
        let a = fetch_complete(w.streaming, &path, &[identity(), ALICE])?;
        let b = fetch_complete(w.streaming, &path, &[identity()])?;
        let c = fetch_complete(
            w.streaming,
            &path,
            &[identity(), ("cookie", "session=carol")],
        )?;
        check(
            state(&a) == "MISS" && state(&b) == "HIT" && state(&c) == "HIT",
            || format!("{cc}: {} {} {}", state(&a), state(&b), state(&c)),
        )?;
        super::same_bytes(cc, &c.body, &a.body)?;
        let n = origin_requests(w, &t, 1);
        check(n == 1, || format!("{cc}: {n} origin requests"))?;
    }
    Ok(())
}

/// A stale entry stored for anonymous readers is not refreshed by a reader with cookies
/// (stale-while-revalidate): A passes to the origin and stores nothing; B gets the stale copy
/// and refreshes it; what is stored then is still no one's own page.
pub fn the_refresh_follows_the_rule(w: &World) -> Outcome {
    let t = unique();
    let path = format!(
        "{PAGE}?cache_control=max-age%3D1%2C%20stale-while-revalidate%3D60&echo=cookie&t={t}"
    );
    let first = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&first) == "MISS", || {
        format!("first: {}", state(&first))
    })?;
    std::thread::sleep(Duration::from_millis(1600));
    let a = fetch_complete(w.streaming, &path, &[identity(), ALICE])?;
    check(
        state(&a) == "PASS(cookie)" && contains(&a.body, ALICES_PAGE),
        || format!("A on the stale entry: {}", state(&a)),
    )?;
    let n = origin_requests(w, &t, 2);
    check(n == 2, || format!("after A: {n} origin requests, not 2"))?;
    let b = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&b) == "HIT", || {
        format!("B on the stale entry: {}", state(&b))
    })?;
    origin_requests(w, &t, 3);
    let deadline = Instant::now() + Duration::from_secs(3);
    let c = loop {
        let c = fetch_complete(w.streaming, &path, &[identity()])?;
        if !contains(&c.body, b"alice") || Instant::now() > deadline {
            break c;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    check(!contains(&c.body, b"alice"), || {
        format!("the refreshed copy is A's ({})", state(&c))
    })?;
    check(!contains(&b.body, b"alice"), || "B got A's page".into())
}

/// The streaming build's Viceroy log.
fn viceroy_log(w: &World) -> String {
    std::fs::read_to_string(crate::viceroy_log(w, "streaming")).unwrap_or_default()
}

/// `link` percent-encoded for the demo origin's `link` knob.
fn link_knob(link: &str) -> String {
    link.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Whether a `103` naming `needle` reaches the Viceroy log within `wait`.
fn a_103_names(w: &World, needle: &str, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        if viceroy_log(w).contains(needle) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Learned early hints are replayed to every reader, so they are learned only from answers
/// any reader could get. A's navigation with a session cookie (its page preloads
/// `/u/alice/…`), and an anonymous navigation to a `private` page, teach nothing: B's next
/// navigation gets no `103` naming them. Control: the same page without cookie and `private`
/// does teach, and the next navigation gets its `103`.
pub fn hints_are_never_learned_from_a_readers_own_page(w: &World) -> Outcome {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
    let cases: [Case; 5] = [
        ("session cookie", &[ALICE], false),
        // Learned hints have no variants: a page that varies by the edge ID is one reader's.
        ("page with Vary: X-TS-EC", &[("vary", "X-TS-EC")], false),
        ("private page", &[("cache_control", "private")], false),
        (
            "session cookie, private page",
            &[ALICE, ("cache_control", "private")],
            false,
        ),
        ("anonymous public page (control)", &[], true),
    ];
    for (label, setup, teaches) in cases {
        let t = unique();
        let link = format!("</u/alice/avatar.png?{t}>; rel=preload; as=image");
        let mut path = format!("{PAGE}?link={}&t={t}", link_knob(&link));
        let mut headers = vec![identity(), NAV];
        for (name, value) in setup {
            if *name == "cookie" {
                headers.push((name, value));
            } else {
                path.push_str(&format!("&{name}={value}"));
            }
        }
        fetch_complete(w.streaming, &path, &headers)?;
        // Reader B: anonymous, the same page.
        fetch_complete(w.streaming, &path, &[identity(), NAV])?;
        let needle = format!("/u/alice/avatar.png?{t}");
        let wait = Duration::from_millis(if teaches { 2000 } else { 300 });
        let got = a_103_names(w, &needle, wait);
        check(got == teaches, || {
            if teaches {
                format!("{label}: no 103 naming {needle}")
            } else {
                format!("{label}: reader B got a 103 with A's hint {needle}")
            }
        })?;
    }
    Ok(())
}
