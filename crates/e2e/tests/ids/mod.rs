//! End-to-end scenarios of the partner-ID graph under Viceroy's KV Store emulation
//! (`[local_server.kv_stores]` in fastly.toml): partners push IDs for readers the edge knows
//! (`POST /_ts/ids/sync`), each with its own bearer token (the DEVELOPMENT-ONLY tokens of the
//! local `ts_ids` secret store); a reader's page view records which partners their consent
//! allows; a withdrawal erases.
//!
//! The partners are the demo bidders `fast` (vendor 1) and `slow` (vendor 755), set with
//! `eid_source` and `sync_token_key` by `e2e::demo_bidders`; `misbehave` is no partner.
//! Whether a pair is held is read back the way a partner would: sending the same ID again
//! answers `unchanged` only while it is the one held.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{check, Outcome, World, TIMEOUT};

const PATH: &str = "/_ts/ids/sync";
/// The demo partners' DEVELOPMENT-ONLY tokens (fixtures/dev-only/ids-sync-tokens...json).
const FAST_TOKEN: &str = "DEVELOPMENT-ONLY-fast-3f9a1c7e5b2d4086";
const SLOW_TOKEN: &str = "DEVELOPMENT-ONLY-slow-8e4b0d2a6c1f9735";

/// Japan, outside every consent rule: every partner allowed.
const ELSEWHERE: [u8; 4] = [127, 0, 0, 1];
/// Germany: opt-in.
const GERMANY: [u8; 4] = [127, 0, 0, 10];
/// TCF from the IAB's encoder: purposes {1, 2, 3, 4, 7, 9, 10}, vendors 1 and 2 with consent,
/// 755 without (the auction scenarios' `TCF_MANY`): `fast` allowed, `slow` not.
const TCF_MANY: &str = "CQeEcwAQeEcwAAKABBENBkFAAPLAAELAAAYgEsP379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv379-_fv3wJXbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLTbZabbLADCQAQAQBgAIALREAEAMgAA.IFeQAYAAgV4A";

/// A reader's new edge ID: a page view from `source` with `cookie`; the graph records the
/// reader's consent once the page has left.
fn reader(w: &World, source: [u8; 4], cookie: &str) -> Result<String, String> {
    crate::auction::edge_id(w, source, cookie)
}

/// `POST /_ts/ids/sync?partner=<partner>` to the service at `to`, with `authorization` (if
/// any) and `body`.
fn post(
    to: SocketAddr,
    partner: &str,
    authorization: Option<&str>,
    body: &[u8],
) -> Result<e2e::Timed, String> {
    let path = format!("{PATH}?partner={partner}");
    let mut headers = vec![("content-type", "application/json")];
    if let Some(value) = authorization {
        headers.push(("authorization", value));
    }
    e2e::send(to, "POST", &path, &headers, body, TIMEOUT).map_err(|e| format!("{path}: {e}"))
}

/// A sync body of `(edge ID, partner ID)` pairs.
fn pairs_body<E: AsRef<str>>(pairs: &[(E, &str)]) -> String {
    let pairs: Vec<Value> = (pairs.iter())
        .map(|(ec, id)| json!({ "ec": ec.as_ref(), "id": id }))
        .collect();
    json!({ "pairs": pairs }).to_string()
}

/// The statuses answered for `pairs` pushed by `partner` with its own token, in order.
fn sync(w: &World, partner: &str, pairs: &[(&str, &str)]) -> Result<Vec<String>, String> {
    sync_at(w.streaming, partner, pairs)
}

/// [`sync`] to the service at `service`.
fn sync_at(
    service: SocketAddr,
    partner: &str,
    pairs: &[(&str, &str)],
) -> Result<Vec<String>, String> {
    let token = match partner {
        "fast" => FAST_TOKEN,
        _ => SLOW_TOKEN,
    };
    let body = pairs_body(pairs);
    let r = post(
        service,
        partner,
        Some(&format!("Bearer {token}")),
        body.as_bytes(),
    )?;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    check(r.status == 200, || {
        format!("sync as {partner}: {} {text}", r.status)
    })?;
    for (_, id) in pairs {
        check(!text.contains(id), || {
            format!("the answer echoes a partner ID: {text}")
        })?;
    }
    let answer: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
    let statuses = (answer["results"].as_array().ok_or(text.clone())?.iter())
        .map(|r| r["status"].as_str().unwrap_or("?").to_owned())
        .collect();
    Ok(statuses)
}

/// [`sync`] of one pair, sent again while its edge ID is still `unknown_ec`: the reader's
/// entry is written after their page has left, so a partner that syncs at once may be early.
/// Each reader's first sync goes through here; later batches can expect exact answers.
fn sync_once_known(
    w: &World,
    partner: &str,
    pairs: &[(&str, &str)],
) -> Result<Vec<String>, String> {
    sync_once_known_at(w.streaming, partner, pairs)
}

/// [`sync_once_known`] to the service at `service`.
fn sync_once_known_at(
    service: SocketAddr,
    partner: &str,
    pairs: &[(&str, &str)],
) -> Result<Vec<String>, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = sync_at(service, partner, pairs)?;
        if got.first().map(String::as_str) != Some("unknown_ec") || Instant::now() > deadline {
            return Ok(got);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A well-formed edge ID no reader was given: 64 hex digits, a dot, six letters or digits.
fn unknown_edge_id() -> String {
    format!("{}.ZZZZZZ", "0".repeat(64))
}

/// Each pair of a partner's batch gets its own answer: stored for a reader whose consent
/// allows the partner, refused for one whose does not, unknown for an ID the edge never gave,
/// malformed for what cannot be an edge ID or a partner ID; the same ID again is unchanged;
/// no answer repeats a partner ID.
pub fn a_partner_syncs_ids_for_readers_it_knows(w: &World) -> Outcome {
    let anywhere = reader(w, ELSEWHERE, "")?;
    let german = reader(w, GERMANY, &format!("euconsent-v2={TCF_MANY}"))?;
    let got = sync_once_known(w, "fast", &[(&anywhere, "fast-id-anywhere")])?;
    check(got == ["stored"], || {
        format!("fast, the reader in Japan: {got:?}")
    })?;
    // `slow` is vendor 755: not allowed for the reader in Germany.
    let got = sync_once_known(w, "slow", &[(&german, "slow-id-german")])?;
    check(got == ["refused_by_consent"], || {
        format!("slow, the reader in Germany: {got:?}")
    })?;
    let unknown = unknown_edge_id();
    let got = sync(
        w,
        "fast",
        &[
            (&anywhere, "fast-id-anywhere"),
            (&german, "fast-id-german"),
            (&unknown, "fast-id-nobody"),
            ("not-an-edge-id", "fast-id-bad-ec"),
            (&anywhere, "a partner id with spaces"),
        ],
    )?;
    let want = [
        "unchanged",
        "stored",
        "unknown_ec",
        "malformed",
        "malformed",
    ];
    check(got == want, || format!("fast: {got:?}, want {want:?}"))?;
    let got = sync(
        w,
        "slow",
        &[(&anywhere, "slow-id-anywhere"), (&german, "slow-id-german")],
    )?;
    check(got == ["stored", "refused_by_consent"], || {
        format!("slow: {got:?}")
    })?;
    // Held: the same IDs again change nothing; a new ID replaces the old.
    let got = sync(
        w,
        "fast",
        &[(&anywhere, "fast-id-anywhere"), (&german, "fast-id-german")],
    )?;
    check(got == ["unchanged", "unchanged"], || {
        format!("fast again: {got:?}")
    })?;
    let got = sync(
        w,
        "fast",
        &[(&anywhere, "fast-id-2"), (&anywhere, "fast-id-2")],
    )?;
    check(got == ["stored", "unchanged"], || {
        format!("fast, a new ID twice: {got:?}")
    })?;
    // One partner's writes never touch another's ID.
    let got = sync(w, "slow", &[(&anywhere, "slow-id-anywhere")])?;
    check(got == ["unchanged"], || {
        format!("slow after fast's changes: {got:?}")
    })
}

/// A forged or missing token, another partner's token, a partner without one: the same `401`;
/// a batch that cannot be read: `400` or `413`. None of them changes what is held.
pub fn bad_tokens_and_batches_are_refused_and_lose_nothing(w: &World) -> Outcome {
    let ec = reader(w, ELSEWHERE, "")?;
    let got = sync_once_known(w, "fast", &[(&ec, "fast-held")])?;
    check(got == ["stored"], || format!("first sync: {got:?}"))?;
    let overwrite = json!({ "pairs": [{ "ec": ec, "id": "overwritten" }] }).to_string();
    let fast = format!("Bearer {FAST_TOKEN}");
    let forged = format!("Bearer {}", FAST_TOKEN.replace('3', "4"));
    let unauthorized: [(&str, &str, Option<&str>); 7] = [
        ("no token", "fast", None),
        ("a forged token", "fast", Some(forged.as_str())),
        ("fast's token as slow", "slow", Some(fast.as_str())),
        ("a Basic credential", "fast", Some("Basic ZmFzdDpmYXN0")),
        (
            "a partner without a token",
            "misbehave",
            Some(fast.as_str()),
        ),
        ("no such partner", "nobody", Some(fast.as_str())),
        ("no partner named", "", Some(fast.as_str())),
    ];
    for (what, partner, authorization) in unauthorized {
        let r = post(w.streaming, partner, authorization, overwrite.as_bytes())?;
        check(r.status == 401, || format!("{what}: {}", r.status))?;
        check(
            r.header("www-authenticate")
                .is_some_and(|v| v.starts_with("Bearer")),
            || format!("{what}: no Bearer challenge"),
        )?;
    }
    let many: Vec<Value> = (0..101)
        .map(|i| json!({ "ec": ec, "id": format!("id-{i}") }))
        .collect();
    let too_many = json!({ "pairs": many }).to_string();
    let huge = format!("{{\"pairs\": [], \"pad\": \"{}\"}}", "x".repeat(70 * 1024));
    let bad_batches: [(&str, &[u8], u16); 5] = [
        ("not JSON", b"pairs=1", 400),
        ("not a batch", b"[{\"ec\": \"x\", \"id\": \"y\"}]", 400),
        ("pairs not an array", b"{\"pairs\": {}}", 400),
        ("101 pairs (ids.max_batch is 100)", too_many.as_bytes(), 413),
        ("a body over 64 KiB", huge.as_bytes(), 413),
    ];
    for (what, body, status) in bad_batches {
        let r = post(w.streaming, "fast", Some(&fast), body)?;
        check(r.status == status, || {
            format!("{what}: {} (want {status})", r.status)
        })?;
    }
    let got = sync(w, "fast", &[(&ec, "fast-held")])?;
    check(got == ["unchanged"], || {
        format!("after the refusals: {got:?}")
    })
}

/// Two partners syncing the same reader at the same moment, round after round: both land
/// (the store's compare-and-set retries the loser), so each partner's ID is held afterwards.
pub fn two_partners_syncing_one_reader_at_once_both_land(w: &World) -> Outcome {
    // On the service whose Viceroy has one runtime thread: Viceroy 0.22's KV insert reads the
    // entry, checks the generation (or the absence for `Add`) and writes under two separate
    // locks, so two inserts on two threads can both pass the check and the later overwrite
    // the earlier, which lost one partner's ID about once in 150 rounds. On one thread an
    // insert runs whole; the two syncs still interleave at every wait (the lookups), so a
    // blind write still loses a partner's ID here.
    let service = w.one_thread;
    let ec = crate::auction::edge_id_at(service, ELSEWHERE, "")?;
    let got = sync_once_known_at(service, "fast", &[(&ec, "fast-0")])?;
    check(got == ["stored"], || format!("first sync: {got:?}"))?;
    for round in 1..=12 {
        let (fast_id, slow_id) = (format!("fast-{round}"), format!("slow-{round}"));
        let (fast, slow) = std::thread::scope(|s| {
            let fast = s.spawn(|| sync_at(service, "fast", &[(&ec, &fast_id)]));
            let slow = s.spawn(|| sync_at(service, "slow", &[(&ec, &slow_id)]));
            (fast.join(), slow.join())
        });
        let fast = fast.map_err(|_| "fast's thread panicked".to_owned())??;
        let slow = slow.map_err(|_| "slow's thread panicked".to_owned())??;
        check(fast == ["stored"] && slow == ["stored"], || {
            format!("round {round}: fast {fast:?}, slow {slow:?}")
        })?;
        let fast = sync_at(service, "fast", &[(&ec, &fast_id)])?;
        let slow = sync_at(service, "slow", &[(&ec, &slow_id)])?;
        check(fast == ["unchanged"] && slow == ["unchanged"], || {
            format!(
                "round {round}: a write was lost (fast {fast:?}, slow {slow:?} on reading back)"
            )
        })?;
    }
    Ok(())
}

/// A reader who withdraws (`Sec-GPC: 1` with their cookie) has their entry erased by that
/// request, and a later sync for them is refused; a partner learns only that.
pub fn a_withdrawn_reader_is_erased_and_a_later_sync_refused(w: &World) -> Outcome {
    let ec = reader(w, ELSEWHERE, "")?;
    let got = sync_once_known(w, "fast", &[(&ec, "fast-before")])?;
    check(got == ["stored"], || format!("first sync: {got:?}"))?;
    let page = e2e::get_from(
        IpAddr::from(ELSEWHERE),
        w.streaming,
        "/news/article.html",
        &[
            ("sec-fetch-dest", "document"),
            ("cookie", &format!("ts-ec={ec}")),
            ("sec-gpc", "1"),
        ],
        TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    let expired = (page.header_values("set-cookie").iter())
        .filter_map(|v| std::str::from_utf8(v).ok())
        .any(|c| c.starts_with("ts-ec=;") && c.contains("Max-Age=0"));
    check(expired, || {
        "the withdrawal did not expire the cookie".into()
    })?;
    // The erasure is done once the page has left: a partner may be quicker.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = sync(w, "fast", &[(&ec, "fast-after")])?;
    while got == ["stored"] || got == ["unchanged"] {
        check(Instant::now() < deadline, || {
            format!("still held after the withdrawal: {got:?}")
        })?;
        std::thread::sleep(Duration::from_millis(50));
        got = sync(w, "fast", &[(&ec, "fast-after")])?;
    }
    check(got == ["refused_by_consent"], || {
        format!("after the withdrawal: {got:?}")
    })?;
    // A page view from the same reader after withdrawing makes no new entry for the old ID.
    let got = sync(w, "slow", &[(&ec, "slow-after")])?;
    check(got == ["refused_by_consent"], || {
        format!("slow after the withdrawal: {got:?}")
    })
}

/// `GET /_ts/admin/ids/<edge ID>` shows the admin what is held for a reader (their access
/// request) and `DELETE` erases it (their erasure request); a stranger gets `401`; an erased
/// reader's later syncs are refused.
pub fn the_admin_shows_and_erases_one_readers_ids(w: &World) -> Outcome {
    let ec = reader(w, ELSEWHERE, "")?;
    let got = sync_once_known(w, "fast", &[(&ec, "fast-shown")])?;
    check(got == ["stored"], || format!("first sync: {got:?}"))?;
    let (user, password) = crate::admin::dev_credentials(w)?;
    let admin = crate::admin::basic(&user, &password);
    let ask = |method: &str, ec: &str, auth: Option<&str>| -> Result<(u16, Value), String> {
        let path = format!("/_ts/admin/ids/{ec}");
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        let r = e2e::send(w.streaming, method, &path, &headers, b"", TIMEOUT)
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let body = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        Ok((r.status, body))
    };
    let (status, shown) = ask("GET", &ec, Some(&admin))?;
    check(status == 200 && shown["held"] == true, || {
        format!("GET: {status} {shown}")
    })?;
    let entry = &shown["entry"];
    check(entry["ids"]["fast"]["id"] == "fast-shown", || {
        format!("fast's ID not shown: {shown}")
    })?;
    check(
        entry["allow"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("fast")) && a.contains(&json!("slow"))),
        || format!("the consent held not shown: {shown}"),
    )?;
    for method in ["GET", "DELETE"] {
        let (status, body) = ask(method, &ec, None)?;
        check(
            status == 401 && !body.to_string().contains("fast-shown"),
            || format!("a stranger's {method}: {status} {body}"),
        )?;
    }
    let (status, body) = ask("GET", &unknown_edge_id(), Some(&admin))?;
    check(status == 200 && body["held"] == false, || {
        format!("GET of nobody: {status} {body}")
    })?;
    let (status, body) = ask("DELETE", &ec, Some(&admin))?;
    check(status == 200 && body["erased"] == true, || {
        format!("DELETE: {status} {body}")
    })?;
    let (_, shown) = ask("GET", &ec, Some(&admin))?;
    check(
        shown["entry"]["withdrawn"].is_u64()
            && shown["entry"]["ids"]
                .as_object()
                .is_none_or(|ids| ids.is_empty()),
        || format!("after the erasure: {shown}"),
    )?;
    let got = sync(w, "fast", &[(&ec, "fast-shown")])?;
    check(got == ["refused_by_consent"], || {
        format!("a sync after the erasure: {got:?}")
    })
}

/// A bidder's code and the `user.eids` it was sent, as `(source, id)`.
type Seen = (String, Vec<(String, String)>);

/// Per bidder the demo origin saw for pages whose URL has `marker`: the `user.eids` it was
/// sent, as `(source, id)`.
fn eids_seen(w: &World, marker: &str) -> Result<Vec<Seen>, String> {
    let path = format!("/bidders/received?page={marker}");
    let r = e2e::get(w.origin_addr, &path, &[], TIMEOUT).map_err(|e| format!("{path}: {e}"))?;
    let records: Vec<Value> =
        serde_json::from_slice(&r.body).map_err(|e| format!("{path}: not JSON: {e}"))?;
    let mut seen: Vec<Seen> = Vec::new();
    for record in records {
        let bidder = record["bidder"].as_str().unwrap_or("?").to_owned();
        let body: Value = serde_json::from_str(record["body"].as_str().unwrap_or("null"))
            .map_err(|e| format!("{bidder}'s request: {e}"))?;
        let eids = (body["user"]["eids"].as_array().into_iter().flatten())
            .map(|e| {
                let id = e["uids"][0]["id"].as_str().unwrap_or("?").to_owned();
                (e["source"].as_str().unwrap_or("?").to_owned(), id)
            })
            .collect();
        seen.push((bidder, eids));
    }
    seen.sort();
    Ok(seen)
}

/// A navigation auction sends each bidder the reader's partner IDs their consent allows, next
/// to the edge ID, and only to bidders that may get the edge ID: in Japan every partner's, in
/// Germany with a TC string for vendors 1 and 2 only `fast`'s (vendor 755, `slow`, neither
/// stores nor bids). No partner ID ever reaches the page.
pub fn a_bidder_gets_exactly_the_partner_ids_its_consent_allows(w: &World) -> Outcome {
    /// A reader, who their consent lets be asked, and whose partner IDs (source, code) each
    /// asked bidder must get.
    struct Case {
        what: &'static str,
        source: [u8; 4],
        consent: String,
        asked: &'static [&'static str],
        want: &'static [(&'static str, &'static str)],
    }
    let cases = [
        Case {
            what: "japan",
            source: ELSEWHERE,
            consent: String::new(),
            asked: &["fast", "misbehave", "slow"],
            want: &[
                ("fast.bidders.example", "fast"),
                ("slow.bidders.example", "slow"),
            ],
        },
        Case {
            what: "germany",
            source: GERMANY,
            consent: format!("euconsent-v2={TCF_MANY}"),
            asked: &["fast", "misbehave"],
            want: &[("fast.bidders.example", "fast")],
        },
    ];
    for case in cases {
        let Case {
            what,
            source,
            consent,
            asked,
            want,
        } = case;
        let ec = reader(w, source, &consent)?;
        let fast_id = format!("fast-eid-{what}");
        let got = sync_once_known(w, "fast", &[(&ec, &fast_id)])?;
        check(got == ["stored"], || {
            format!("{what}: fast's sync: {got:?}")
        })?;
        let slow_id = format!("slow-eid-{what}");
        let stored = sync(w, "slow", &[(&ec, &slow_id)])?;
        let marker = format!("eids-{what}-{}", crate::cache::unique());
        let path = format!("/slots/article.html?r={marker}");
        let cookie = match consent.is_empty() {
            true => format!("ts-ec={ec}"),
            false => format!("{consent}; ts-ec={ec}"),
        };
        let page = e2e::send_from(
            IpAddr::from(source),
            w.streaming,
            "GET",
            &path,
            &crate::auction::page::navigation(&[("cookie", &cookie)]),
            b"",
            TIMEOUT,
        )
        .map_err(|e| format!("{what}: {path}: {e}"))?;
        let text = String::from_utf8_lossy(&page.body);
        check(page.status == 200 && text.contains("ts-bids"), || {
            format!("{what}: the page ({}) has no bids", page.status)
        })?;
        check(!text.contains(&fast_id) && !text.contains(&slow_id), || {
            format!("{what}: a partner ID in the page")
        })?;
        let seen = eids_seen(w, &marker)?;
        let bidders: Vec<&str> = seen.iter().map(|(b, _)| b.as_str()).collect();
        check(bidders == asked, || {
            format!("{what}: asked {bidders:?} (slow's sync: {stored:?})")
        })?;
        for (bidder, eids) in &seen {
            check(eids.iter().any(|(_, id)| id == &ec), || {
                format!("{what}: {bidder} without the edge ID: {eids:?}")
            })?;
            let partners: Vec<(&str, &str)> = (eids.iter())
                .filter(|(source, _)| source.ends_with(".bidders.example"))
                .map(|(source, id)| (source.as_str(), id.as_str()))
                .collect();
            let expected: Vec<(&str, String)> = want
                .iter()
                .map(|(source, code)| (*source, format!("{code}-eid-{what}")))
                .collect();
            let expected: Vec<(&str, &str)> =
                expected.iter().map(|(s, id)| (*s, id.as_str())).collect();
            check(partners == expected, || {
                format!("{what}: {bidder} got partner IDs {partners:?}, want {expected:?}")
            })?;
        }
    }
    Ok(())
}

/// What the admin sees held for `ec`: each partner code with its ID.
fn held_ids(w: &World, ec: &str) -> Result<Vec<(String, String)>, String> {
    let (user, password) = crate::admin::dev_credentials(w)?;
    let auth = crate::admin::basic(&user, &password);
    let path = format!("/_ts/admin/ids/{ec}");
    let r = e2e::send(
        w.streaming,
        "GET",
        &path,
        &[("authorization", &auth)],
        b"",
        TIMEOUT,
    )
    .map_err(|e| format!("GET {path}: {e}"))?;
    let shown: Value = serde_json::from_slice(&r.body).map_err(|e| format!("{path}: {e}"))?;
    check(r.status == 200, || {
        format!("GET {path}: {} {shown}", r.status)
    })?;
    Ok((shown["entry"]["ids"].as_object().into_iter().flatten())
        .map(|(code, held)| (code.clone(), held["id"].as_str().unwrap_or("?").to_owned()))
        .collect())
}

/// The ID asks the demo partners received about `ec`: `(route, body)` in arrival order.
fn asks_about(w: &World, ec: &str) -> Result<Vec<(String, Value)>, String> {
    let path = format!("/bidders/received?id={ec}");
    let r = e2e::get(w.origin_addr, &path, &[], TIMEOUT).map_err(|e| format!("{path}: {e}"))?;
    let records: Vec<Value> =
        serde_json::from_slice(&r.body).map_err(|e| format!("{path}: not JSON: {e}"))?;
    let mut asks = Vec::new();
    for record in records {
        let route = record["bidder"].as_str().unwrap_or("?").to_owned();
        for header in ["cookie", "x-ts-ec", "x-forwarded-for"] {
            check(record["headers"].get(header).is_none(), || {
                format!("the ask to {route} carried {header}: {record}")
            })?;
        }
        let body = serde_json::from_str(record["body"].as_str().unwrap_or("null"))
            .map_err(|e| format!("the ask to {route}: {e}"))?;
        asks.push((route, body));
    }
    Ok(asks)
}

/// A returning reader's navigation (their `ts-ec` cookie) from `source`; its time to the last
/// byte.
fn navigate_back(w: &World, source: [u8; 4], cookie: &str) -> Result<Duration, String> {
    let page = e2e::get_from(
        IpAddr::from(source),
        w.streaming,
        "/news/article.html",
        &[("sec-fetch-dest", "document"), ("cookie", cookie)],
        TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    check(page.status == 200 && page.complete, || {
        format!("the returning reader's page: {}", page.status)
    })?;
    Ok(page.last_at)
}

/// Polls `get` until `done` says so, for at most five seconds; the last value either way.
fn poll<T>(
    mut get: impl FnMut() -> Result<T, String>,
    done: impl Fn(&T) -> bool,
) -> Result<T, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = get()?;
        if done(&got) || Instant::now() > deadline {
            return Ok(got);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A returning reader's page view makes the edge ask each partner with an ID endpoint, that
/// their consent allows, for its ID, after the page has left (the slow partner answers after
/// 300 ms; the page does not wait), with nothing but the edge ID; the answers are stored; the
/// same reader's next page views ask no one again, even one that comes before any answer
/// (`ids.ask_interval_hours`); a new reader's
/// page view asks no one (no partner can know a new ID); in Germany with vendors 1 and 2
/// only `fast` is asked.
pub fn the_edge_asks_partners_for_a_returning_readers_id(w: &World) -> Outcome {
    let uid = |code: &str, ec: &str| format!("{code}-uid-{}", &ec[..16]);
    for (what, source, consent, partners) in [
        ("japan", ELSEWHERE, String::new(), &["fast", "slow"][..]),
        (
            "germany",
            GERMANY,
            format!("euconsent-v2={TCF_MANY}"),
            &["fast"][..],
        ),
    ] {
        let ec = reader(w, source, &consent)?;
        let cookie = match consent.is_empty() {
            true => format!("ts-ec={ec}"),
            false => format!("{consent}; ts-ec={ec}"),
        };
        std::thread::sleep(Duration::from_millis(300));
        let asks = asks_about(w, &ec)?;
        check(asks.is_empty(), || {
            format!("{what}: a new reader's ID was asked for: {asks:?}")
        })?;
        // Two page views in a row: the second comes while `slow` is still answering the first's
        // ask (300 ms), before any ID is held, so only the noted ask keeps it from asking again.
        for _ in 0..2 {
            let took = navigate_back(w, source, &cookie)?;
            check(took < Duration::from_millis(250), || {
                format!("{what}: the page took {took:?}: it waited for an ID endpoint")
            })?;
        }
        let want: Vec<(String, String)> = (partners.iter())
            .map(|code| ((*code).to_owned(), uid(code, &ec)))
            .collect();
        let held = poll(|| held_ids(w, &ec), |held| *held == want)?;
        check(held == want, || {
            format!("{what}: held {held:?}, want {want:?}")
        })?;
        let routes = |asks: &[(String, Value)]| {
            let mut routes: Vec<String> = asks.iter().map(|(r, _)| r.clone()).collect();
            routes.sort();
            routes
        };
        let want_routes: Vec<String> = partners.iter().map(|c| format!("{c}/id")).collect();
        let asks = asks_about(w, &ec)?;
        check(routes(&asks) == want_routes, || {
            format!("{what}: asks {asks:?}, want one to each of {want_routes:?}")
        })?;
        for (route, body) in &asks {
            check(*body == json!({ "ec": ec }), || {
                format!("{what}: the ask to {route} carried {body}")
            })?;
        }
        // Within the interval, and now with the IDs held: still no one is asked again.
        navigate_back(w, source, &cookie)?;
        std::thread::sleep(Duration::from_millis(500));
        let again = asks_about(w, &ec)?;
        check(routes(&again) == want_routes, || {
            format!("{what}: asked again: {again:?}")
        })?;
    }
    Ok(())
}

/// The build whose `ids.max_pairs_per_minute` is [`BUDGET`] (`e2e.rs`).
pub const BUDGET: u32 = 300;

/// A partner past `ids.max_pairs_per_minute` at this POP is refused whole (`429` with
/// `Retry-After`), and nothing of the refused batch is stored; after `Retry-After` it is
/// served again. Run against the buffered build, whose budget is [`BUDGET`] and whose cache
/// and store no other scenario's syncs share.
pub fn a_partner_past_its_budget_is_refused_whole(w: &World) -> Outcome {
    let ec = crate::auction::edge_id_at(w.buffered, ELSEWHERE, "")?;
    let token = format!("Bearer {FAST_TOKEN}");
    let batch = |pairs: &[(String, &str)]| -> Result<e2e::Timed, String> {
        post(
            w.buffered,
            "fast",
            Some(&token),
            pairs_body(pairs).as_bytes(),
        )
    };
    let minute = || crate::ids::unix_secs() / 60;
    let hundred: Vec<(String, &str)> = (0..100)
        .map(|i| (format!("{}.N{i:05}", "0".repeat(64)), "fast-flood"))
        .collect();
    // A minute's budget spent in three batches of 100, the fourth refused: begun with at least
    // 10 s of the minute left, and begun again in a fresh minute if one began meanwhile (the
    // budget is per minute of the clock, and a try spans a minute's turn only by bad luck).
    let fresh_minute = || {
        let into = crate::ids::unix_secs() % 60;
        if into >= 50 {
            std::thread::sleep(Duration::from_secs(60 - into) + Duration::from_millis(200));
        }
    };
    let mut refused = None;
    for attempt in 0..3 {
        if attempt > 0 {
            let into = crate::ids::unix_secs() % 60;
            std::thread::sleep(Duration::from_secs(60 - into) + Duration::from_millis(200));
        }
        fresh_minute();
        // Its own ID each try: one sent as a minute began may have been stored.
        let id = format!("fast-while-spent-{attempt}");
        let started = minute();
        let mut statuses = Vec::new();
        for _ in 0..4 {
            statuses.push(batch(&hundred)?.status);
        }
        if minute() != started {
            continue;
        }
        check(statuses == [200, 200, 200, 429], || {
            format!("batches of 100 against a budget of {BUDGET}: {statuses:?}")
        })?;
        // While spent, a batch with a pair for a reader the edge knows is refused whole...
        let known = batch(&[(ec.clone(), id.as_str())])?;
        if minute() != started {
            continue;
        }
        refused = Some((known, id));
        break;
    }
    let (refused, id) = refused.ok_or("a new minute began during every try")?;
    let text = String::from_utf8_lossy(&refused.body).into_owned();
    let retry = (refused.header("retry-after")).and_then(|v| v.parse::<u64>().ok());
    check(
        refused.status == 429 && retry.is_some_and(|s| (1..=60).contains(&s)),
        || {
            format!(
                "while spent: {} retry-after {retry:?} {text}",
                refused.status
            )
        },
    )?;
    check(
        text.contains("max_pairs_per_minute") && !text.contains(&id),
        || format!("the refusal: {text}"),
    )?;
    // ...and after Retry-After the same pair is new to the graph: nothing of it was stored.
    std::thread::sleep(Duration::from_secs(retry.unwrap_or(60)) + Duration::from_millis(200));
    let after = batch(&[(ec.clone(), id.as_str())])?;
    let text = String::from_utf8_lossy(&after.body).into_owned();
    check(after.status == 200 && text.contains("\"stored\""), || {
        format!("after Retry-After: {} {text}", after.status)
    })
}

/// Seconds since the Unix epoch.
pub fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
