//! End-to-end scenarios of cached rewrites (docs/caching.md) against the streaming build:
//! Viceroy's core cache lives as long as its process, so every scenario uses a query value
//! of its own (`t=`) and counts the origin's requests for it in the demo origin's log.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest, Sha256};

pub mod vary;

use super::{assert_incomplete, check, fetch, fetch_complete, identity, Outcome, World, TIMEOUT};

const PAGE: &str = "/news/article.html";
const NAV: (&str, &str) = ("sec-fetch-dest", "document");
/// `public, max-age=300`, percent-encoded for the demo origin's `cache_control` knob.
const CACHEABLE: &str = "cache_control=public%2C%20max-age%3D300";

/// A query value no other request of this run has.
pub fn unique() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("c{nanos}x{}", N.fetch_add(1, Ordering::Relaxed))
}

/// How many requests with `token` in their URL the demo origin answered (its log has a line
/// per request once the response ended; waits until it has at least `at_least`, up to 3 s).
pub fn origin_requests(w: &World, token: &str, at_least: usize) -> usize {
    let path = w.root.join(super::ORIGIN_LOG);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let n = text.lines().filter(|l| l.contains(token)).count();
        if n >= at_least || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn state(r: &e2e::Timed) -> &str {
    r.header("x-ts-cache").unwrap_or("(none)")
}

/// Our `Set-Cookie` lines (`ts-ec=…`) of a response.
pub fn our_cookies(r: &e2e::Timed) -> Vec<String> {
    r.header_values("set-cookie")
        .into_iter()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|v| v.starts_with("ts-ec="))
        .collect()
}

/// A cacheable page of its own fetched twice from `proxy` in `coding`: the first a MISS, the
/// second a HIT with the same bytes, the origin asked once, and (uncompressed) the stored copy
/// the rewrite of the origin's page, not its bytes. The two answers, for more checks.
fn miss_then_hit(
    w: &World,
    proxy: std::net::SocketAddr,
    coding: &str,
) -> Result<(e2e::Timed, e2e::Timed), String> {
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&t={t}");
    let headers = [("accept-encoding", coding)];
    let first = fetch_complete(proxy, &path, &headers)?;
    let second = fetch_complete(proxy, &path, &headers)?;
    check(state(&first) == "MISS" && state(&second) == "HIT", || {
        format!("{coding}: {} then {}", state(&first), state(&second))
    })?;
    super::same_bytes(coding, &second.body, &first.body)?;
    let n = origin_requests(w, &t, 1);
    check(n == 1, || {
        format!("{coding}: the origin was asked {n} times")
    })?;
    if coding == "identity" {
        let want = super::expected(&super::fixture(w, "news/article.html"), &proxy.to_string());
        super::same_bytes("hit vs rewrite oracle", &second.body, &want)?;
    }
    Ok((first, second))
}

pub fn miss_then_hit_with_identical_bytes(w: &World) -> Outcome {
    for coding in ["identity", "gzip"] {
        let (first, second) = miss_then_hit(w, w.streaming, coding)?;
        for (r, want) in [(&first, "cache;desc=MISS"), (&second, "cache;desc=HIT")] {
            let timing = r.header("server-timing").unwrap_or("");
            check(timing.contains(want), || {
                format!("{coding}: Server-Timing {timing:?}")
            })?;
        }
        for name in ["content-type", "content-encoding", "etag", "vary"] {
            check(first.header(name) == second.header(name), || {
                format!(
                    "{coding}: {name} differs: {:?} / {:?}",
                    first.header(name),
                    second.header(name)
                )
            })?;
        }
    }
    // This page's own hit (other scenarios' hits are logged too).
    let line = super::log_line(w, &["access", "path=\"/news/article.html\"", "cache=HIT"])?;
    check(line.contains("plan=cache"), || line.clone())
}

pub fn concurrent_misses_make_one_origin_request(w: &World) -> Outcome {
    const N: usize = 6;
    let t = unique();
    // The origin waits before its headers, so every request arrives during the one fill.
    let path = format!("{PAGE}?{CACHEABLE}&headers_delay_ms=700&t={t}");
    let addr = w.streaming;
    let handles: Vec<_> = (0..N)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                e2e::get(addr, &path, &[("accept-encoding", "identity")], TIMEOUT)
            })
        })
        .collect();
    let mut bodies = Vec::new();
    let mut states = Vec::new();
    for h in handles {
        let r = h
            .join()
            .map_err(|_| "client thread panicked".to_owned())?
            .map_err(|e| e.to_string())?;
        check(r.status == 200 && r.complete, || {
            format!("status {} complete {}", r.status, r.complete)
        })?;
        states.push(state(&r).to_owned());
        bodies.push(r.body);
    }
    let n = origin_requests(w, &t, 1);
    check(n == 1, || {
        format!("{N} concurrent requests, {n} origin requests ({states:?})")
    })?;
    check(states.iter().filter(|s| *s == "MISS").count() == 1, || {
        format!("{states:?}")
    })?;
    check(bodies.iter().all(|b| *b == bodies[0]), || {
        "bodies differ".into()
    })
}

pub fn per_user_responses_pass_with_the_reason(w: &World) -> Outcome {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 6] = [
        ("set_cookie=1", &[], "PASS(set-cookie)"),
        ("vary=Cookie", &[], "PASS(vary-cookie)"),
        (
            "cache_control=private%2C%20max-age%3D300",
            &[],
            "PASS(private)",
        ),
        ("cache_control=no-store", &[], "PASS(no-store)"),
        (
            "",
            &[("authorization", "Bearer e2e")],
            "PASS(authorization)",
        ),
        ("cache_control=public", &[], "PASS(no-ttl)"),
    ];
    for (knob, extra, want) in cases {
        let t = unique();
        let cc = if knob.starts_with("cache_control") {
            String::new()
        } else {
            format!("{CACHEABLE}&")
        };
        let path = format!("{PAGE}?{cc}{knob}&t={t}");
        let mut headers = vec![identity()];
        headers.extend_from_slice(extra);
        for round in 0..2 {
            let r = fetch_complete(w.streaming, &path, &headers)?;
            check(state(&r) == want, || {
                format!("{path} round {round}: {} not {want}", state(&r))
            })?;
        }
        let n = origin_requests(w, &t, 2);
        check(n == 2, || {
            format!("{path}: the origin was asked {n} times, not twice")
        })?;
    }
    super::log_line(w, &["access", "cache=PASS(set-cookie)"]).map(|_| ())
}

pub fn the_edge_id_cookie_is_never_served_from_cache(w: &World) -> Outcome {
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&t={t}");
    let first = fetch_complete(w.streaming, &path, &[identity(), NAV])?;
    let second = fetch_complete(w.streaming, &path, &[identity(), NAV])?;
    check(state(&first) == "MISS" && state(&second) == "HIT", || {
        format!("{} then {}", state(&first), state(&second))
    })?;
    let (a, b) = (our_cookies(&first), our_cookies(&second));
    check(a.len() == 1 && b.len() == 1 && a != b, || {
        format!("each client gets its own new ID: {a:?} / {b:?}")
    })?;
    // A client with its ID keeps it: a hit sets no cookie for it.
    let id = a[0]
        .trim_start_matches("ts-ec=")
        .split(';')
        .next()
        .unwrap_or("");
    let cookie = format!("ts-ec={id}");
    let third = fetch_complete(w.streaming, &path, &[identity(), NAV, ("cookie", &cookie)])?;
    check(
        state(&third) == "HIT" && our_cookies(&third).is_empty(),
        || format!("{}: {:?}", state(&third), our_cookies(&third)),
    )?;
    // The stored headers are the shared ones: no `private` from the first reader's cookie.
    check(
        third.header("cache-control") == Some("public, max-age=300"),
        || format!("cache-control {:?}", third.header("cache-control")),
    )?;
    check(super::contains(&second.body, b"<script"), || {
        "the navigation copy has the script".into()
    })
}

fn admin_basic(w: &World) -> Result<String, String> {
    let path = w
        .root
        .join("fixtures/dev-only/admin-credentials.DEVELOPMENT-ONLY.json");
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let (user, password) = (
        json["admin_user"].as_str().unwrap_or(""),
        json["admin_password"].as_str().unwrap_or(""),
    );
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    Ok(format!("Basic {token}"))
}

fn purge(w: &World, key: &str, auth: &str) -> Result<e2e::Timed, String> {
    let path = format!("/_ts/admin/purge?key={key}");
    let headers: Vec<(&str, &str)> = if auth.is_empty() {
        vec![]
    } else {
        vec![("authorization", auth)]
    };
    e2e::request(w.streaming, "POST", &path, &headers, TIMEOUT)
        .map_err(|e| format!("POST {path}: {e}"))
}

/// `ts-page-` and the first 32 hex digits of SHA-256 of `authority\npath` (docs/caching.md).
fn page_key(authority: &str, path: &str) -> String {
    let digest = Sha256::digest(format!("{authority}\n{path}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("ts-page-{}", &hex[..32])
}

pub fn purge_by_surrogate_key(w: &World) -> Outcome {
    let auth = admin_basic(w)?;
    let origin_key = unique();
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&surrogate_key=e2e-a%20{origin_key}&t={t}");
    let authority = w.streaming.to_string();
    let keys = [
        origin_key.clone(),
        page_key(&authority, PAGE),
        "ts-rewritten".to_owned(),
    ];
    for key in &keys {
        let first = fetch_complete(w.streaming, &path, &[identity()])?;
        let again = fetch_complete(w.streaming, &path, &[identity()])?;
        check(state(&again) == "HIT", || {
            format!("before purging {key}: {}", state(&again))
        })?;
        check(
            first.header("surrogate-key").is_none() && again.header("surrogate-key").is_none(),
            || "Surrogate-Key reached the client".into(),
        )?;
        let stranger = purge(w, key, "")?;
        check(stranger.status == 401, || {
            format!("purge without credentials: {}", stranger.status)
        })?;
        let still = fetch_complete(w.streaming, &path, &[identity()])?;
        check(state(&still) == "HIT", || {
            format!("a refused purge purged: {}", state(&still))
        })?;
        let done = purge(w, key, &auth)?;
        check(done.status == 200, || {
            format!(
                "purge {key}: {} {}",
                done.status,
                String::from_utf8_lossy(&done.body)
            )
        })?;
        let after = fetch_complete(w.streaming, &path, &[identity()])?;
        check(state(&after) == "MISS", || {
            format!("after purging {key}: {}", state(&after))
        })?;
    }
    let bad = purge(w, "a%20b", &auth)?;
    check(bad.status == 400, || {
        format!("an invalid key: {}", bad.status)
    })
}

pub fn a_death_mid_body_is_not_stored(w: &World) -> Outcome {
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&die_after=3000&t={t}");
    for _ in 0..2 {
        assert_incomplete(w.streaming, &path, &[identity()])?;
    }
    let n = origin_requests(w, &t, 2);
    check(n == 2, || {
        format!("the origin was asked {n} times: a short copy was served")
    })?;
    // The same page without the death is stored, so it was the death that kept it out.
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&t={t}");
    fetch_complete(w.streaming, &path, &[identity()])?;
    let r = fetch(w.streaming, &path, &[identity()])?;
    check(state(&r) == "HIT", || format!("control: {}", state(&r)))
}

pub fn stale_while_revalidate_serves_stale_and_refreshes(w: &World) -> Outcome {
    let t = unique();
    // One second fresh, then a minute in which a stale copy may be served while refreshed.
    let path = format!(
        "{PAGE}?cache_control=public%2C%20max-age%3D1%2C%20stale-while-revalidate%3D60&t={t}"
    );
    let first = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&first) == "MISS", || {
        format!("first: {}", state(&first))
    })?;
    std::thread::sleep(Duration::from_millis(1600));
    let stale = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&stale) == "HIT", || {
        format!("stale: {}", state(&stale))
    })?;
    super::same_bytes("stale copy", &stale.body, &first.body)?;
    let n = origin_requests(w, &t, 2);
    check(n == 2, || {
        format!("the stale hit's refresh: {n} origin requests, not 2")
    })?;
    super::log_line(w, &["cache: stale entry refreshed: true"])?;
    let fresh = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&fresh) == "HIT", || {
        format!("after the refresh: {}", state(&fresh))
    })?;
    let n = origin_requests(w, &t, 3);
    check(n == 2, || format!("after the refresh: {n} origin requests"))?;
    // Control: without stale-while-revalidate an expired entry is a MISS.
    let t = unique();
    let path = format!("{PAGE}?cache_control=public%2C%20max-age%3D1&t={t}");
    fetch_complete(w.streaming, &path, &[identity()])?;
    std::thread::sleep(Duration::from_millis(1600));
    let expired = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&expired) == "MISS", || {
        format!("expired: {}", state(&expired))
    })
}

pub fn concurrent_requests_for_a_page_that_passes_do_not_queue(w: &World) -> Outcome {
    const N: usize = 5;
    const DELAY_MS: u64 = 700;
    let t = unique();
    // No lifetime: PASS(no-ttl). Every request reaches the origin, which waits 700 ms.
    let path = format!("{PAGE}?headers_delay_ms={DELAY_MS}&t={t}");
    let addr = w.streaming;
    let started = Instant::now();
    let handles: Vec<_> = (0..N)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                e2e::get(addr, &path, &[("accept-encoding", "identity")], TIMEOUT)
            })
        })
        .collect();
    for h in handles {
        let r = h
            .join()
            .map_err(|_| "client thread panicked".to_owned())?
            .map_err(|e| e.to_string())?;
        check(state(&r) == "PASS(no-ttl)", || state(&r).to_string())?;
    }
    let took = started.elapsed();
    // Queued one behind the other they would take N × 700 ms; the first answer is remembered,
    // so the rest go to the origin together: about two delays.
    check(
        took < Duration::from_millis(DELAY_MS * (N as u64 - 1)),
        || format!("{N} requests took {took:?}: they queued"),
    )?;
    let n = origin_requests(w, &t, N);
    check(n == N, || format!("{n} origin requests, not {N}"))
}

/// Milliseconds since the Unix epoch, `ahead` from now: a `faults_from` value for the demo
/// origin (the same clock: both run on this machine).
pub fn unix_ms_in(ahead: Duration) -> u128 {
    (std::time::SystemTime::now() + ahead)
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// `public, max-age=1, stale-if-error=<sie>`, percent-encoded.
pub fn stale_if_error(sie: u32) -> String {
    format!("cache_control=public%2C%20max-age%3D1%2C%20stale-if-error%3D{sie}")
}

pub fn stale_if_error_serves_the_stale_copy_when_the_origin_fails(w: &World) -> Outcome {
    // Each fault starts a second after the fill (`faults_from`), when the one-second lifetime
    // is over: the origin is asked first, fails, and the stale copy answers.
    let faults = [
        ("status=503", "origin answered 503"),
        ("status=500", "origin answered 500"),
        // Past the e2e builds' 2 s first-byte timeout: the service's 504 exit.
        ("headers_delay_ms=3000", "origin timed out"),
    ];
    for (fault, named) in faults {
        let t = unique();
        let from = unix_ms_in(Duration::from_millis(1000));
        let path = format!(
            "{PAGE}?{}&{fault}&faults_from={from}&t={t}",
            stale_if_error(60)
        );
        let first = fetch_complete(w.streaming, &path, &[identity()])?;
        check(state(&first) == "MISS", || {
            format!("{fault}: first {}", state(&first))
        })?;
        std::thread::sleep(Duration::from_millis(1600));
        let stale = fetch_complete(w.streaming, &path, &[identity()])?;
        check(state(&stale) == "HIT(stale-if-error)", || {
            format!("{fault}: after the expiry {}", state(&stale))
        })?;
        super::same_bytes(fault, &stale.body, &first.body)?;
        let timing = stale.header("server-timing").unwrap_or("");
        // Quoted: parentheses are not token characters.
        check(
            timing.contains("cache;desc=\"HIT(stale-if-error)\""),
            || format!("{fault}: Server-Timing {timing:?}"),
        )?;
        // The origin was asked before the stale copy answered: its log has the request
        // (once answered), or for the timeout the head came after the service's wait (the
        // origin logs nothing for a response whose client, the service, had gone).
        if fault.starts_with("headers_delay") {
            let waited = Duration::from_millis(super::FIRST_BYTE_TIMEOUT_MS);
            check(stale.headers_at >= waited, || {
                format!("{fault}: headers after {:?}", stale.headers_at)
            })?;
        } else {
            let n = origin_requests(w, &t, 2);
            check(n == 2, || {
                format!("{fault}: the origin was asked {n} times, not twice")
            })?;
        }
        super::log_line(w, &["cache: origin failed (", named, "stale-if-error"])?;
    }
    super::log_line(w, &["access", "cache=HIT(stale-if-error)"]).map(|_| ())
}

pub fn stale_if_error_refreshes_when_the_origin_answers(w: &World) -> Outcome {
    let t = unique();
    let path = format!("{PAGE}?{}&t={t}", stale_if_error(60));
    let first = fetch_complete(w.streaming, &path, &[identity()])?;
    std::thread::sleep(Duration::from_millis(1600));
    // The origin answers: the normal fill path, a MISS that stores the new copy.
    let refreshed = fetch_complete(w.streaming, &path, &[identity()])?;
    let again = fetch_complete(w.streaming, &path, &[identity()])?;
    let states = [state(&first), state(&refreshed), state(&again)];
    check(states == ["MISS", "MISS", "HIT"], || format!("{states:?}"))?;
    super::same_bytes("refreshed", &again.body, &first.body)?;
    let n = origin_requests(w, &t, 3);
    check(n == 2, || {
        format!("the origin was asked {n} times, not twice")
    })
}

pub fn past_stale_if_error_the_failure_reaches_the_client(w: &World) -> Outcome {
    // One second fresh, one more kept for errors; asked 2.6 s after the fill.
    let cases = [
        ("status=502", 502, "PASS(server-error)"),
        ("headers_delay_ms=3000", 504, "PASS(origin-error)"),
    ];
    for (fault, status, want) in cases {
        let t = unique();
        let from = unix_ms_in(Duration::from_millis(1000));
        let path = format!(
            "{PAGE}?{}&{fault}&faults_from={from}&t={t}",
            stale_if_error(1)
        );
        let first = fetch_complete(w.streaming, &path, &[identity()])?;
        check(state(&first) == "MISS", || {
            format!("{fault}: first {}", state(&first))
        })?;
        std::thread::sleep(Duration::from_millis(2600));
        let late = fetch(w.streaming, &path, &[identity()])?;
        check(late.status == status && state(&late) == want, || {
            format!(
                "{fault}: past stale-if-error {} {}, not {status} {want}",
                late.status,
                state(&late)
            )
        })?;
    }
    Ok(())
}

pub fn a_hit_answers_conditional_requests_with_304(w: &World) -> Outcome {
    const MODIFIED: &str = "Tue, 15 Nov 1994 12:45:26 GMT";
    let t = unique();
    let path = format!(
        "{PAGE}?{CACHEABLE}&etag=%22v1%22&last_modified=Tue%2C%2015%20Nov%201994%2012%3A45%3A26%20GMT&t={t}"
    );
    let first = fetch_complete(w.streaming, &path, &[identity(), NAV])?;
    check(state(&first) == "MISS", || {
        format!("first: {}", state(&first))
    })?;
    // The rewrite weakens the origin's validator; that is what the browser sends back.
    let etag = first.header("etag").unwrap_or("").to_owned();
    check(etag == "W/\"v1\"", || format!("ETag {etag:?}"))?;
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);
    let cases: [Case; 7] = [
        ("the stored ETag", &[("if-none-match", &etag)], 304),
        ("the strong form", &[("if-none-match", "\"v1\"")], 304),
        (
            "a list with it",
            &[("if-none-match", "\"x\", W/\"v1\"")],
            304,
        ),
        ("another ETag", &[("if-none-match", "\"v2\"")], 200),
        (
            "Last-Modified itself",
            &[("if-modified-since", MODIFIED)],
            304,
        ),
        (
            "an earlier date",
            &[("if-modified-since", "Mon, 14 Nov 1994 00:00:00 GMT")],
            200,
        ),
        (
            "If-None-Match decides when both are sent",
            &[("if-none-match", "\"v2\""), ("if-modified-since", MODIFIED)],
            200,
        ),
    ];
    for (label, conditions, want) in cases {
        let mut headers = vec![identity(), NAV];
        headers.extend_from_slice(conditions);
        let r = fetch(w.streaming, &path, &headers)?;
        check(r.status == want && r.complete, || {
            format!("{label}: status {} complete {}", r.status, r.complete)
        })?;
        check(state(&r) == "HIT", || format!("{label}: {}", state(&r)))?;
        let timing = r.header("server-timing").unwrap_or("");
        check(timing.contains("cache;desc=HIT"), || {
            format!("{label}: Server-Timing {timing:?}")
        })?;
        // Each new reader gets its own edge ID, also on a 304.
        check(our_cookies(&r).len() == 1, || {
            format!("{label}: cookies {:?}", our_cookies(&r))
        })?;
        if want == 200 {
            super::same_bytes(label, &r.body, &first.body)?;
            continue;
        }
        check(r.body.is_empty(), || {
            format!("{label}: a 304 with {} body bytes", r.body.len())
        })?;
        for name in ["etag", "vary"] {
            check(r.header(name) == first.header(name), || {
                format!(
                    "{label}: {name} {:?}, not {:?}",
                    r.header(name),
                    first.header(name)
                )
            })?;
        }
        check(r.header("cache-control").is_some(), || {
            format!("{label}: no Cache-Control")
        })?;
        for name in ["content-type", "content-encoding", "last-modified"] {
            check(r.header(name).is_none(), || {
                format!("{label}: a 304 with {name}: {:?}", r.header(name))
            })?;
        }
        check(r.header("content-length").is_none_or(|v| v == "0"), || {
            format!("{label}: Content-Length {:?}", r.header("content-length"))
        })?;
    }
    let n = origin_requests(w, &t, 1);
    check(n == 1, || format!("the origin was asked {n} times"))?;
    super::log_line(
        w,
        &["access", "status=304", "cache-not-modified", "cache=HIT"],
    )
    .map(|_| ())
}

pub fn a_buffered_build_stores_whole_pages_and_sends_their_length(w: &World) -> Outcome {
    for coding in ["identity", "gzip"] {
        let (first, second) = miss_then_hit(w, w.buffered, coding)?;
        for (label, r) in [("MISS", &first), ("HIT", &second)] {
            let length = r.header("content-length").unwrap_or("(none)");
            check(length == r.body.len().to_string(), || {
                format!(
                    "{coding} {label}: Content-Length {length}, body {} bytes",
                    r.body.len()
                )
            })?;
            check(r.header("transfer-encoding").is_none(), || {
                format!("{coding} {label}: Transfer-Encoding on a buffered answer")
            })?;
        }
    }
    // A body that dies is not stored: each request gets buffered mode's 502 and asks again.
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&die_after=3000&t={t}");
    for round in 0..2 {
        let r = fetch(w.buffered, &path, &[identity()])?;
        check(r.status == 502 && state(&r) == "PASS(origin-error)", || {
            format!("round {round}: {} {}", r.status, state(&r))
        })?;
    }
    let n = origin_requests(w, &t, 2);
    check(n == 2, || {
        format!("the origin was asked {n} times: a failed page was stored")
    })
}
