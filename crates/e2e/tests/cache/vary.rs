//! End-to-end scenarios of the cache key as the origin saw it (docs/caching.md, "Vary"): a
//! stored variant is keyed on the headers the origin received, so no reader gets a page made
//! for another reader's edge ID, address or headers; a fill asks for the whole page; pages
//! without `Vary` are cached.
//!
//! The demo origin's `echo=NAME` knob ends the page with `<!-- echo NAME: VALUES -->`, the
//! request header as the origin received it: a page personalised by that header.

use std::net::IpAddr;

use super::super::{check, contains, fetch, fetch_complete, identity, Outcome, World, TIMEOUT};
use super::{origin_requests, our_cookies, state, unique, CACHEABLE, NAV, PAGE};

/// The line the demo origin's `echo=` knob writes for `name` when it received `values`.
fn echoed(name: &str, values: &str) -> Vec<u8> {
    format!("<!-- echo {name}: {values} -->").into_bytes()
}

/// The edge ID of the one `ts-ec` cookie a response sets.
fn new_id(r: &e2e::Timed) -> Result<String, String> {
    let cookies = our_cookies(r);
    let [cookie] = cookies.as_slice() else {
        return Err(format!("expected one ts-ec cookie, got {cookies:?}"));
    };
    let id = cookie.trim_start_matches("ts-ec=").split(';').next();
    Ok(id.unwrap_or("").to_owned())
}

fn text(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let echoes: Vec<&str> = s.lines().filter(|l| l.contains("<!-- echo")).collect();
    format!("{echoes:?}")
}

pub fn vary_x_ts_ec_gives_each_reader_its_own_page(w: &World) -> Outcome {
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&vary=X-TS-EC&echo=x-ts-ec&t={t}");
    let a = fetch_complete(w.streaming, &path, &[identity(), NAV])?;
    let a_id = new_id(&a)?;
    check(contains(&a.body, &echoed("x-ts-ec", &a_id)), || {
        format!(
            "the origin did not see reader A's ID {a_id}: {}",
            text(&a.body)
        )
    })?;
    let b = fetch_complete(w.streaming, &path, &[identity(), NAV])?;
    let b_id = new_id(&b)?;
    check(a_id != b_id, || format!("two readers, one ID {a_id}"))?;
    check(!contains(&b.body, a_id.as_bytes()), || {
        format!(
            "reader B ({}) got reader A's page: {}",
            state(&b),
            text(&b.body)
        )
    })?;
    check(contains(&b.body, &echoed("x-ts-ec", &b_id)), || {
        format!("reader B's page is not its own: {}", text(&b.body))
    })?;
    check(state(&b) == "MISS", || format!("reader B: {}", state(&b)))?;
    // Reader A again, with its cookie: its own stored variant.
    let cookie = format!("ts-ec={a_id}");
    let again = fetch_complete(w.streaming, &path, &[identity(), NAV, ("cookie", &cookie)])?;
    check(
        state(&again) == "HIT" && contains(&again.body, &echoed("x-ts-ec", &a_id)),
        || format!("reader A again: {} {}", state(&again), text(&again.body)),
    )?;
    let n = origin_requests(w, &t, 2);
    check(n == 2, || format!("{n} origin requests, not 2"))
}

fn from(source: &str, w: &World, path: &str, extra: &[(&str, &str)]) -> Result<e2e::Timed, String> {
    let ip: IpAddr = source.parse().map_err(|e| format!("{source}: {e}"))?;
    let mut headers = vec![identity()];
    headers.extend_from_slice(extra);
    let r = e2e::get_from(ip, w.streaming, path, &headers, TIMEOUT)
        .map_err(|e| format!("GET {path} from {source}: {e}"))?;
    check(r.status == 200 && r.complete, || {
        format!("from {source}: status {} complete {}", r.status, r.complete)
    })?;
    Ok(r)
}

pub fn vary_x_forwarded_for_keys_on_the_readers_address(w: &World) -> Outcome {
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&vary=X-Forwarded-For&echo=x-forwarded-for&t={t}");
    let two = from("127.0.0.2", w, &path, &[])?;
    check(
        contains(&two.body, &echoed("x-forwarded-for", "127.0.0.2")),
        || format!("the origin did not see 127.0.0.2: {}", text(&two.body)),
    )?;
    let three = from("127.0.0.3", w, &path, &[])?;
    check(
        contains(&three.body, &echoed("x-forwarded-for", "127.0.0.3"))
            && !contains(&three.body, b"127.0.0.2"),
        || format!("127.0.0.3 got ({}) {}", state(&three), text(&three.body)),
    )?;
    // A client's own X-Forwarded-For is not what the origin sees, nor what the page is keyed on.
    let spoof = from("127.0.0.3", w, &path, &[("x-forwarded-for", "127.0.0.2")])?;
    check(
        state(&spoof) == "HIT" && !contains(&spoof.body, b"127.0.0.2"),
        || {
            format!(
                "127.0.0.3 claiming 127.0.0.2: {} {}",
                state(&spoof),
                text(&spoof.body)
            )
        },
    )?;
    let two_again = from("127.0.0.2", w, &path, &[])?;
    check(
        state(&two_again) == "HIT"
            && contains(&two_again.body, &echoed("x-forwarded-for", "127.0.0.2")),
        || {
            format!(
                "127.0.0.2 again: {} {}",
                state(&two_again),
                text(&two_again.body)
            )
        },
    )?;
    let n = origin_requests(w, &t, 2);
    check(n == 2, || format!("{n} origin requests, not 2"))
}

pub fn connection_cannot_poison_a_variant(w: &World) -> Outcome {
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&vary=Accept-Language&echo=accept-language&t={t}");
    let de = ("accept-language", "de");
    // The attacker: German, but its Connection line removes the header on the way.
    let poison = fetch_complete(
        w.streaming,
        &path,
        &[identity(), de, ("connection", "accept-language")],
    )?;
    check(
        contains(&poison.body, &echoed("accept-language", "(none)")),
        || format!("the origin saw the removed header: {}", text(&poison.body)),
    )?;
    let german = fetch_complete(w.streaming, &path, &[identity(), de])?;
    check(
        contains(&german.body, &echoed("accept-language", "de")),
        || {
            format!(
                "a German reader got ({}) {}",
                state(&german),
                text(&german.body)
            )
        },
    )?;
    check(state(&german) == "MISS", || {
        format!("German: {}", state(&german))
    })?;
    // What the attacker stored is the page for no Accept-Language, and only that.
    let plain = fetch_complete(w.streaming, &path, &[identity()])?;
    check(
        state(&plain) == "HIT" && contains(&plain.body, &echoed("accept-language", "(none)")),
        || format!("no language: {} {}", state(&plain), text(&plain.body)),
    )?;
    let german_again = fetch_complete(w.streaming, &path, &[identity(), de])?;
    check(
        state(&german_again) == "HIT"
            && contains(&german_again.body, &echoed("accept-language", "de")),
        || {
            format!(
                "German again: {} {}",
                state(&german_again),
                text(&german_again.body)
            )
        },
    )
}

pub fn a_conditional_or_range_request_fills_with_the_whole_page(w: &World) -> Outcome {
    // The origin honours If-None-Match and Range (`conditional=1`).
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&etag=%22v1%22&conditional=1&t={t}");
    let first = fetch(
        w.streaming,
        &path,
        &[identity(), ("if-none-match", "\"v1\"")],
    )?;
    check(first.status == 304 && first.body.is_empty(), || {
        format!(
            "a current copy on a miss: {} ({}), {} body bytes",
            first.status,
            state(&first),
            first.body.len()
        )
    })?;
    check(state(&first) == "MISS", || {
        format!("first: {}", state(&first))
    })?;
    let second = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&second) == "HIT", || {
        format!("after a conditional request: {}", state(&second))
    })?;
    let n = origin_requests(w, &t, 1);
    check(n == 1, || format!("{n} origin requests, not 1"))?;
    // The same in a buffered build: the 304 once the page is stored.
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&etag=%22v1%22&conditional=1&t={t}");
    let first = fetch(
        w.buffered,
        &path,
        &[identity(), ("if-none-match", "\"v1\"")],
    )?;
    check(
        first.status == 304 && first.body.is_empty() && state(&first) == "MISS",
        || format!("buffered: {} ({})", first.status, state(&first)),
    )?;
    let second = fetch_complete(w.buffered, &path, &[identity()])?;
    check(state(&second) == "HIT", || {
        format!("buffered, after a conditional request: {}", state(&second))
    })?;
    // A Range: the whole page, stored, and the next reader's hit.
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&conditional=1&t={t}");
    let ranged = fetch_complete(w.streaming, &path, &[identity(), ("range", "bytes=0-99")])?;
    check(state(&ranged) == "MISS" && ranged.body.len() > 100, || {
        format!(
            "a range: {} with {} bytes",
            state(&ranged),
            ranged.body.len()
        )
    })?;
    let whole = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&whole) == "HIT", || {
        format!("after a range: {}", state(&whole))
    })?;
    super::super::same_bytes("range then whole", &whole.body, &ranged.body)?;
    let n = origin_requests(w, &t, 1);
    check(n == 1, || format!("{n} origin requests, not 1"))
}

pub fn pages_without_vary_with_vary_star_and_with_several_vary_lines(w: &World) -> Outcome {
    // No Vary at all: stored (MISS, then HIT).
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&no_vary=1&t={t}");
    let first = fetch_complete(w.streaming, &path, &[identity()])?;
    // The service's own `Vary` (navigation, `src/phases/inject.rs`) may be there; the origin's none.
    let vary = first.header("vary").unwrap_or("").to_ascii_lowercase();
    check(!vary.contains("accept-encoding"), || {
        format!("the origin sent Vary {vary:?}")
    })?;
    let second = fetch_complete(w.streaming, &path, &[identity()])?;
    check(state(&first) == "MISS" && state(&second) == "HIT", || {
        format!("no Vary: {} then {}", state(&first), state(&second))
    })?;
    let n = origin_requests(w, &t, 1);
    check(n == 1, || format!("no Vary: {n} origin requests, not 1"))?;
    // Vary: * passes with its reason, each time.
    let t = unique();
    let path = format!("{PAGE}?{CACHEABLE}&no_vary=1&vary=*&t={t}");
    for round in 0..2 {
        let r = fetch_complete(w.streaming, &path, &[identity()])?;
        check(state(&r) == "PASS(vary-star)", || {
            format!("Vary: * round {round}: {}", state(&r))
        })?;
    }
    // Two Vary lines: both honoured.
    let t = unique();
    let path = format!(
        "{PAGE}?{CACHEABLE}&no_vary=1&vary=Accept-Language&vary=X-E2e-Variant\
         &echo=accept-language&echo=x-e2e-variant&t={t}"
    );
    let get = |lang: &'static str, variant: &'static str| {
        fetch_complete(
            w.streaming,
            &path,
            &[
                identity(),
                ("accept-language", lang),
                ("x-e2e-variant", variant),
            ],
        )
    };
    let cases = [
        ("en", "a", "MISS"),
        ("en", "b", "MISS"),
        ("fr", "a", "MISS"),
        ("en", "a", "HIT"),
        ("fr", "a", "HIT"),
    ];
    for (lang, variant, want) in cases {
        let r = get(lang, variant)?;
        let own = contains(&r.body, &echoed("accept-language", lang))
            && contains(&r.body, &echoed("x-e2e-variant", variant));
        check(state(&r) == want && own, || {
            format!(
                "{lang}/{variant}: {} (want {want}) {}",
                state(&r),
                text(&r.body)
            )
        })?;
    }
    let n = origin_requests(w, &t, 3);
    check(n == 3, || {
        format!("two Vary lines: {n} origin requests, not 3")
    })
}
