//! End-to-end scenarios of the navigation auction: a page with ad slots (`[[auction.slots]]`,
//! set for the e2e services by [`SLOTS`]) gets its bids from the demo bidders while it
//! streams, written before its `</body>` as the `#ts-bids` data block.
//!
//! The slots: `/slots/article.html` has `ad-top` (bidders `fast` and `slow`, the latter
//! answering after 150 ms) and `ad-side` (`misbehave` stalling mid-body, so every such page
//! waits for the deadline: [`NAVIGATION_TIMEOUT_MS`] less the 50 ms margin);
//! `/slots/late.html` has `ad-late`, asked of `slow` alone, answering after [`LATE_MS`];
//! `/next/about` (a Next.js page) has `ad-top`. Each scenario asks for its own query string,
//! so the bidders' records (`/bidders/received?page=`) and the cache entries are its own.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;

use super::{CALIFORNIA, ELSEWHERE, GERMANY, TCF_LI, TCF_MANY};
use crate::{check, gunzip, Outcome, World, TIMEOUT};

/// The slots the e2e services are built with (`TRUSTED_SERVER__AUCTION__SLOTS`).
pub const SLOTS: &str = "[\
    { id = \"ad-top\", paths = [\"/slots/article.html\", \"/next/about\"], sizes = [[300, 250]], \
      bidders = { fast = {}, slow = { delay_ms = 150 } } }, \
    { id = \"ad-side\", paths = [\"/slots/article.html\"], sizes = [[728, 90]], \
      bidders = { misbehave = { how = \"stall\", delay_ms = 3000 } } }, \
    { id = \"ad-late\", paths = [\"/slots/late.html\"], sizes = [[300, 600]], \
      bidders = { slow = { delay_ms = 500 } } }]";

/// The e2e services' `auction.navigation_timeout_ms`: the deadline is this less the margin.
pub const NAVIGATION_TIMEOUT_MS: u64 = 900;
/// The e2e services' `auction.origin_first_within_ms`: 50 ms, not the default 1, so that the
/// demo origin over loopback (about 1 ms on a quiet machine, several on a busy one) always
/// answers inside it, and the fast-origin path is taken whatever the machine's load; an origin
/// slow to send its head (300 ms here) still has its bidders asked while it thinks.
pub const ORIGIN_FIRST_WITHIN_MS: u64 = 50;
/// The deadline of a navigation's auction, from its start.
const DEADLINE_MS: u64 = NAVIGATION_TIMEOUT_MS - 50;
/// How late `slow` answers on `/slots/late.html`.
const LATE_MS: u64 = 500;

const OPEN: &str = "<script type=\"application/json\" id=\"ts-bids\">";

/// What Chrome sends for a typed URL, with `extra` headers.
pub(crate) fn navigation<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("sec-fetch-dest", "document"),
        ("sec-fetch-mode", "navigate"),
        ("accept", "text/html,application/xhtml+xml,*/*;q=0.8"),
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
        ),
        ("accept-encoding", "identity"),
    ];
    for (name, value) in extra {
        headers.retain(|(n, _)| n != name);
        headers.push((name, value));
    }
    headers
}

fn page(
    addr: std::net::SocketAddr,
    source: [u8; 4],
    path: &str,
    headers: &[(&str, &str)],
) -> Result<e2e::Timed, String> {
    let r = e2e::send_from(
        IpAddr::from(source),
        addr,
        "GET",
        path,
        headers,
        b"",
        TIMEOUT,
    )
    .map_err(|e| format!("GET {path}: {e}"))?;
    check(r.status == 200 && r.complete, || {
        format!("GET {path}: status {}, complete {}", r.status, r.complete)
    })?;
    Ok(r)
}

/// The page's plain text (gunzipped when it says so).
fn text(r: &e2e::Timed) -> Result<String, String> {
    let plain = match r.header("content-encoding") {
        Some("gzip") => gunzip(&r.body)?,
        None => r.body.clone(),
        Some(other) => return Err(format!("unexpected content-encoding {other}")),
    };
    String::from_utf8(plain).map_err(|e| format!("not UTF-8: {e}"))
}

/// The `#ts-bids` block: where it starts in the page, and its data. Exactly one, or an error.
fn bids(page: &str) -> Result<(usize, Value), String> {
    check(page.matches(OPEN).count() == 1, || {
        format!("{} bids blocks", page.matches(OPEN).count())
    })?;
    let at = page.find(OPEN).unwrap_or_default();
    let data = &page[at + OPEN.len()..];
    let end = data
        .find("</script>")
        .ok_or("the bids block is not closed")?;
    let json: Value =
        serde_json::from_str(&data[..end]).map_err(|e| format!("bids are not JSON: {e}"))?;
    check(json["v"] == 1, || format!("bids version: {json}"))?;
    Ok((at, json))
}

/// The bidder who won `slot`, or `None`.
fn winner(data: &Value, slot: &str) -> Option<String> {
    data["slots"][slot]["bid"]["bidder"]
        .as_str()
        .map(str::to_owned)
}

/// The page with its bids block taken out.
fn without_bids(page: &str) -> String {
    match page.find(OPEN) {
        Some(at) => {
            let end = page[at..]
                .find("</script>")
                .map_or(page.len(), |e| at + e + 9);
            format!("{}{}", &page[..at], &page[end..])
        }
        None => page.to_owned(),
    }
}

/// The names of the bidders the demo origin saw for pages whose URL contains `marker`.
fn asked(w: &World, marker: &str) -> Result<Vec<String>, String> {
    let path = format!("/bidders/received?page={marker}");
    let r = e2e::get(w.origin_addr, &path, &[], TIMEOUT).map_err(|e| format!("{path}: {e}"))?;
    let records: Vec<Value> =
        serde_json::from_slice(&r.body).map_err(|e| format!("{path}: not JSON: {e}"))?;
    let mut names: Vec<String> = (records.iter())
        .filter_map(|r| r["bidder"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

/// `/slots/late.html` with `query` (and a fresh `r=<tag>-…`, so no cache answers it) from the
/// streaming build, checked to carry `slow`'s bid for `ad-late`.
fn late_page_won_by_slow(w: &World, tag: &str, query: &str) -> Result<e2e::Timed, String> {
    let marker = format!("{tag}-{}", crate::cache::unique());
    let path = format!("/slots/late.html?r={marker}&{query}");
    let r = page(w.streaming, ELSEWHERE, &path, &navigation(&[]))?;
    let (_, data) = bids(&text(&r)?)?;
    check(winner(&data, "ad-late").as_deref() == Some("slow"), || {
        format!("ad-late: {data}")
    })?;
    Ok(r)
}

/// The number an access line gives for `name` (`name=1.234`), if it gives one.
fn field(line: &str, name: &str) -> Option<f64> {
    let at = line.find(&format!(" {name}="))? + name.len() + 2;
    line[at..].split(' ').next()?.parse().ok()
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The page's bytes leave before any bidder answers; only the bids, before `</body>`, wait.
pub fn the_page_leaves_before_the_bidders_answer(w: &World) -> Outcome {
    let marker = format!("late-{}", crate::cache::unique());
    let path = format!("/slots/late.html?r={marker}");
    let r = page(w.streaming, ELSEWHERE, &path, &navigation(&[]))?;
    let page_text = text(&r)?;
    let (at, data) = bids(&page_text)?;
    check(winner(&data, "ad-late").as_deref() == Some("slow"), || {
        format!("ad-late: {data}")
    })?;
    check(
        page_text[at..].starts_with(OPEN) && page_text[at + 1..].contains("</body>"),
        || "the bids are not before </body>".into(),
    )?;
    // Everything before the bids had arrived before the bidder could have answered.
    let early = (r.progress.iter())
        .filter(|(t, _)| ms(*t) < LATE_MS)
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0);
    check(early >= at, || {
        format!(
            "only {early} of the {at} bytes before the bids arrived in the first {LATE_MS} ms (first byte at {:?}, progress {:?})",
            r.first_body_at, r.progress
        )
    })?;
    check(ms(r.last_at) >= LATE_MS, || {
        format!(
            "the page ended at {:?}, before the bidder answered",
            r.last_at
        )
    })?;
    check(asked(w, &marker)? == ["slow"], || "asked whom?".into())
}

/// When the bidders are asked: an origin slow to send its head (300 ms here) has its bidders
/// asked while it thinks, so the page ends about when the later of the two answered, not at
/// their sum; and over every navigation auction in the log, bidders were asked before the
/// head left only when the origin had not answered within [`ORIGIN_FIRST_WITHIN_MS`], and
/// otherwise after the page's first bytes (`bidders_asked_ms`, `first_byte_ms`, `origin_ms`
/// on the access line), for every page streamed to its reader.
pub fn the_bidders_are_asked_after_the_origin_and_before_its_answer_only_when_slow(
    w: &World,
) -> Outcome {
    const HEAD_MS: u64 = 300;
    let r = late_page_won_by_slow(w, "slow-head", &format!("headers_delay_ms={HEAD_MS}"))?;
    // Asked after the head, the bidder would end the page at 800 ms or later.
    let sum = HEAD_MS + LATE_MS;
    check(ms(r.last_at) + 100 < sum, || {
        format!(
            "the page ended at {:?}: the bidder did not think alongside the origin ({HEAD_MS} ms to its head, the bidder {LATE_MS} ms)",
            r.last_at
        )
    })?;
    // A fast origin's page, until one in the log answered within the window.
    // A page filling the cache (`cache=MISS`) is written whole before the reader's copy
    // leaves: its bidders are asked at once.
    let streamed =
        |l: &&str| l.contains("access ") && l.contains(" auction=on") && !l.contains(" cache=MISS");
    let counted = |log: &str| -> Result<(usize, usize), String> {
        let (mut with_origin, mut after_first_bytes) = (0, 0);
        for line in log.lines().filter(streamed) {
            let Some(asked) = field(line, "bidders_asked_ms") else {
                continue;
            };
            let (origin, headers, first) = (
                field(line, "origin_ms"),
                field(line, "headers_ms"),
                field(line, "first_byte_ms"),
            );
            if first.is_some_and(|first| asked >= first) {
                after_first_bytes += 1;
            } else {
                // Asked before the reader's first byte: only for an origin that took the
                // window or more, and then before the head left.
                let window = ORIGIN_FIRST_WITHIN_MS as f64;
                check(
                    origin.is_some_and(|o| o >= window) && headers.is_some_and(|h| asked <= h),
                    || {
                        format!(
                            "bidders asked before the first byte of a fast origin's page: {line}"
                        )
                    },
                )?;
                with_origin += 1;
            }
        }
        Ok((with_origin, after_first_bytes))
    };
    let mut tries = 0;
    let (with_origin, after_first_bytes) = loop {
        tries += 1;
        let fast = format!("/slots/late.html?r=fast-head-{}", crate::cache::unique());
        page(w.streaming, ELSEWHERE, &fast, &navigation(&[]))?;
        let log = std::fs::read_to_string(crate::viceroy_log(w, "streaming"))
            .map_err(|e| format!("streaming log: {e}"))?;
        let counts = counted(&log)?;
        if counts.1 > 0 || tries == 20 {
            break counts;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    check(with_origin > 0 && after_first_bytes > 0, || {
        format!("{with_origin} auctions asked with the origin, {after_first_bytes} after the first bytes ({tries} fast pages)")
    })
}

/// A bidder that stalls mid-body: `</body>` and the others' bids arrive by the deadline, in
/// the streaming and the buffered build, plain and gzip; the bids go before the real end
/// tag (not the one in a script string), and the rest of the page is what a reader without
/// an auction gets.
pub fn a_hanging_bidder_holds_the_end_only_until_the_deadline(w: &World) -> Outcome {
    for (build, addr) in [("streaming", w.streaming), ("buffered", w.buffered)] {
        for coding in ["identity", "gzip"] {
            let marker = format!("hang-{build}-{coding}-{}", crate::cache::unique());
            let path = format!("/slots/article.html?r={marker}&drip_ms=5&drip_chunks=6");
            let headers = navigation(&[("accept-encoding", coding)]);
            let r = page(addr, ELSEWHERE, &path, &headers)?;
            let what = format!("{build} {coding}");
            let page_text = text(&r)?;
            let (at, data) = bids(&page_text)?;
            let top = winner(&data, "ad-top");
            check(matches!(top.as_deref(), Some("fast" | "slow")), || {
                format!("{what}: ad-top {data}")
            })?;
            check(data["slots"]["ad-side"]["bid"].is_null(), || {
                format!("{what}: the stalling bidder won ad-side: {data}")
            })?;
            let after = &page_text[at..];
            let close = after.find("</script>").unwrap_or_default() + "</script>".len();
            check(after[close..].trim_start().starts_with("</body>"), || {
                format!(
                    "{what}: after the bids: {:?}",
                    &after[close..after.len().min(close + 40)]
                )
            })?;
            let last = ms(r.last_at);
            check(
                (DEADLINE_MS - 100..DEADLINE_MS + 400).contains(&last),
                || format!("{what}: the page ended at {last} ms; the deadline is {DEADLINE_MS} ms"),
            )?;
            // The same page without an auction (a reader whose User-Agent is a bot's).
            let bot = navigation(&[("accept-encoding", coding), ("user-agent", "Googlebot/2.1")]);
            let plain = page(addr, ELSEWHERE, &path, &bot)?;
            let plain_text = text(&plain)?;
            check(!plain_text.contains(OPEN), || {
                format!("{what}: a bot got bids")
            })?;
            check(without_bids(&page_text) == plain_text, || {
                format!("{what}: the page differs beyond its bids")
            })?;
        }
    }
    Ok(())
}

/// A Next.js page with a slot gets its bids before its `</body>`, after its Flight scripts.
pub fn a_nextjs_page_gets_its_bids_before_its_end(w: &World) -> Outcome {
    let marker = format!("next-{}", crate::cache::unique());
    let path = format!("/next/about?r={marker}");
    let r = page(w.streaming, ELSEWHERE, &path, &navigation(&[]))?;
    let page_text = text(&r)?;
    let (at, data) = bids(&page_text)?;
    check(winner(&data, "ad-top").is_some(), || {
        format!("ad-top: {data}")
    })?;
    let flight = page_text.rfind("self.__next_f.push").unwrap_or(0);
    check(flight < at, || {
        "the bids came before a Flight script".into()
    })?;
    let after = &page_text[at..];
    let close = after.find("</script>").unwrap_or_default() + "</script>".len();
    check(after[close..].starts_with("</body>"), || {
        format!(
            "after the bids: {:?}",
            &after[close..after.len().min(close + 40)]
        )
    })
}

/// A page from the cache: the first reader fills it and gets bids, the next gets a hit with
/// bids of its own auction, and the stored page (read by a reader with no auction) holds none.
pub fn a_cached_page_gets_fresh_bids_and_stores_none(w: &World) -> Outcome {
    let marker = format!("cache-{}", crate::cache::unique());
    let path = format!("/slots/article.html?r={marker}&cache_control=max-age%3D300");
    let mut ids = Vec::new();
    for n in 0..2 {
        let r = page(w.streaming, ELSEWHERE, &path, &navigation(&[]))?;
        let state = r.header("x-ts-cache").unwrap_or("(none)").to_owned();
        let want = if n == 0 { "MISS" } else { "HIT" };
        check(state.starts_with(want), || {
            format!("request {n}: x-ts-cache {state}")
        })?;
        let (_, data) = bids(&text(&r)?)?;
        check(winner(&data, "ad-top").is_some(), || {
            format!("request {n}: {data}")
        })?;
        ids.push(data["id"].as_str().unwrap_or_default().to_owned());
    }
    check(ids[0] != ids[1] && !ids[1].is_empty(), || {
        format!("the hit's bids are not its own auction's: {ids:?}")
    })?;
    let bot = navigation(&[("user-agent", "Googlebot/2.1")]);
    let stored = page(w.streaming, ELSEWHERE, &path, &bot)?;
    check(
        stored
            .header("x-ts-cache")
            .is_some_and(|s| s.starts_with("HIT")),
        || format!("stored: x-ts-cache {:?}", stored.header("x-ts-cache")),
    )?;
    let stored_text = text(&stored)?;
    check(!stored_text.contains("ts-bids"), || {
        "the stored page holds bids".into()
    })?;
    // The same again in gzip: the hit's stored bytes are decoded, the bids put in, encoded.
    let gz = navigation(&[("accept-encoding", "gzip")]);
    let zipped = page(w.streaming, ELSEWHERE, &path, &gz)?;
    let zipped_text = text(&zipped)?;
    bids(&zipped_text)?;
    // Two hits of one auction each: the bidders were asked four times on `ad-top` (fast,
    // slow) and `ad-side` (misbehave) per reader with an auction.
    let asked = asked(w, &marker)?;
    check(asked.iter().filter(|b| *b == "fast").count() == 3, || {
        format!("asked: {asked:?}")
    })
}

/// A page whose `</body>` comes after the auction's deadline keeps the bids that came in time:
/// the answers already in when the page's end is reached are read, only the bidder still
/// sending (`misbehave`, stalled mid-body) is cut off, and the end does not wait.
pub fn a_page_that_ends_after_the_deadline_keeps_the_bids_in_time(w: &World) -> Outcome {
    let marker = format!("long-{}", crate::cache::unique());
    // Six parts 250 ms apart: the page ends about 1.5 s after its head, past the deadline.
    let path = format!("/slots/article.html?r={marker}&drip_ms=250&drip_chunks=6");
    let r = page(w.streaming, ELSEWHERE, &path, &navigation(&[]))?;
    let last = ms(r.last_at);
    check(last > DEADLINE_MS + 300, || {
        format!("the page ended at {last} ms, not after the {DEADLINE_MS} ms deadline")
    })?;
    let (_, data) = bids(&text(&r)?)?;
    check(
        matches!(winner(&data, "ad-top").as_deref(), Some("fast" | "slow")),
        || format!("the bids in time were lost: {data}"),
    )?;
    check(data["slots"]["ad-side"]["bid"].is_null(), || {
        format!("the stalling bidder won ad-side: {data}")
    })?;
    let got = asked(w, &marker)?;
    check(got == ["fast", "misbehave", "slow"], || {
        format!("asked {got:?}")
    })
}

/// Answers that come while the page streams are read then, not where the page's end waits
/// for them: `/slots/late.html` in five parts 200 ms apart (its end about 800 ms in, before
/// the deadline), `slow` answering 500 ms after it is asked. The access line's `bids_read_ms`
/// (the answers read) falls after the answer and well before `last_byte_ms`: at the send of a
/// part after the answer came. Read only at the end, the two would be within a few ms.
pub fn answers_that_come_while_the_page_streams_are_read_then(w: &World) -> Outcome {
    let before = crate::log_len(w)?;
    late_page_won_by_slow(w, "read-early", "drip_ms=200&drip_chunks=4")?;
    // The access line leaves after the last byte: looked for in what the log gained.
    let needles = ["access ", "path=\"/slots/late.html\""];
    let line = crate::log_line_after(w, before, &needles)?;
    let (asked, read, last) = (
        field(&line, "bidders_asked_ms"),
        field(&line, "bids_read_ms"),
        field(&line, "last_byte_ms"),
    );
    let (Some(asked), Some(read), Some(last)) = (asked, read, last) else {
        return Err(format!("asked, read or last byte missing: {line}"));
    };
    check(read >= asked + LATE_MS as f64, || {
        format!("the answers were read before the bidder answered: {line}")
    })?;
    check(read + 100.0 < last, || {
        format!("the answers were read at the page's end, not while it streamed: {line}")
    })
}

/// A stale copy served because the origin failed (stale-if-error) gets the reader's fresh bids
/// as a hit does, and the copy stays without any: for an origin that answers `503` at once
/// (the bidders asked once everything before `</body>` has left) and for one that never sends
/// its head (asked while it thought, the copy sent after the first-byte timeout).
pub fn a_stale_if_error_copy_gets_fresh_bids(w: &World) -> Outcome {
    for fault in ["status=503", "headers_delay_ms=3000"] {
        let marker = format!("stale-{}", crate::cache::unique());
        // The fault starts a second after the fill, when the copy's one-second life is over.
        let from = crate::cache::unix_ms_in(Duration::from_secs(1));
        let cache_control = crate::cache::stale_if_error(60);
        let path =
            format!("/slots/article.html?r={marker}&{cache_control}&{fault}&faults_from={from}");
        let first = page(w.streaming, ELSEWHERE, &path, &navigation(&[]))?;
        let first_text = text(&first)?;
        let (_, first_bids) = bids(&first_text)?;
        std::thread::sleep(Duration::from_millis(1600));
        let stale = page(w.streaming, ELSEWHERE, &path, &navigation(&[]))?;
        let states = [&first, &stale].map(|r| r.header("x-ts-cache").unwrap_or("(none)"));
        check(states == ["MISS", "HIT(stale-if-error)"], || {
            format!("{fault}: x-ts-cache {states:?}")
        })?;
        let stale_text = text(&stale)?;
        let (_, data) = bids(&stale_text)?;
        check(winner(&data, "ad-top").is_some(), || {
            format!("{fault}: the stale copy's bids: {data}")
        })?;
        check(data["id"] != first_bids["id"], || {
            format!("{fault}: the stale copy's bids are the first reader's: {data}")
        })?;
        check(
            without_bids(&stale_text) == without_bids(&first_text),
            || format!("{fault}: the stale copy is not the page"),
        )?;
        // A reader with no auction gets the copy as stored: no bids in it.
        let bot = navigation(&[("user-agent", "Googlebot/2.1")]);
        let stored = page(w.streaming, ELSEWHERE, &path, &bot)?;
        check(
            stored.header("x-ts-cache") == Some("HIT(stale-if-error)"),
            || {
                format!(
                    "{fault}: stored: x-ts-cache {:?}",
                    stored.header("x-ts-cache")
                )
            },
        )?;
        check(!text(&stored)?.contains("ts-bids"), || {
            format!("{fault}: the stored copy holds bids")
        })?;
        // One auction per navigation: `fast` asked for the fill's page and for the stale copy.
        let got = asked(w, &marker)?;
        check(got.iter().filter(|b| *b == "fast").count() == 2, || {
            format!("{fault}: asked {got:?}")
        })?;
    }
    Ok(())
}

/// Two readers with different consent get different bids; a reader whose consent allows no
/// bidder gets the page at once, and no bidder is asked.
pub fn each_readers_consent_decides_their_bids(w: &World) -> Outcome {
    let many = format!("euconsent-v2={TCF_MANY}");
    let li = format!("euconsent-v2={TCF_LI}");
    let cases: [(&str, [u8; 4], &str, &[&str]); 3] = [
        // Vendors 1 and 2: fast and misbehave.
        ("many", GERMANY, many.as_str(), &["fast", "misbehave"]),
        // Vendor 755 by legitimate interest: slow alone.
        ("li", GERMANY, li.as_str(), &["slow"]),
        // California: opt-out, nobody opted out: everyone.
        ("ca", CALIFORNIA, "", &["fast", "misbehave", "slow"]),
    ];
    for (what, source, cookie, want) in cases {
        let marker = format!("consent-{what}-{}", crate::cache::unique());
        let path = format!("/slots/article.html?r={marker}");
        let headers = navigation(&[("cookie", cookie)]);
        let r = page(w.streaming, source, &path, &headers)?;
        let (_, data) = bids(&text(&r)?)?;
        let got = asked(w, &marker)?;
        check(got == want, || {
            format!("{what}: asked {got:?}, want {want:?}")
        })?;
        let top = winner(&data, "ad-top").unwrap_or_default();
        check(want.contains(&top.as_str()), || {
            format!("{what}: ad-top won by {top:?}")
        })?;
    }
    // Germany without a TC string: no bidder may take part: no auction, no wait.
    let marker = format!("consent-none-{}", crate::cache::unique());
    let path = format!("/slots/article.html?r={marker}");
    let r = page(w.streaming, GERMANY, &path, &navigation(&[]))?;
    check(!text(&r)?.contains("ts-bids"), || {
        "bids without consent".into()
    })?;
    check(ms(r.last_at) < DEADLINE_MS / 2, || {
        format!("the page without an auction took {:?}", r.last_at)
    })?;
    let got = asked(w, &marker)?;
    check(got.is_empty(), || format!("asked without consent: {got:?}"))?;
    // The access lines say which pages ran an auction and why one did not.
    for why in ["on", "consent"] {
        let needles = [
            "access",
            "path=\"/slots/article.html\"",
            &format!("auction={why}"),
        ];
        crate::log_line(w, &needles)?;
    }
    Ok(())
}

/// `GET /_ts/page-bids?path=`: a single-page app's next page gets the same bids data, under
/// the same rules; another site's page, a missing path, a path without slots and a reader
/// whose consent allows no bidder each get their answer.
pub fn a_single_page_app_asks_for_the_next_pages_bids(w: &World) -> Outcome {
    let ua = navigation(&[])
        .into_iter()
        .find(|(n, _)| *n == "user-agent")
        .map(|(_, v)| v)
        .unwrap_or_default();
    let same = [("sec-fetch-site", "same-origin"), ("user-agent", ua)];
    let get = |source: [u8; 4], query: &str, headers: &[(&str, &str)]| {
        let path = format!("/_ts/page-bids{query}");
        e2e::send_from(
            IpAddr::from(source),
            w.streaming,
            "GET",
            &path,
            headers,
            b"",
            TIMEOUT,
        )
        .map_err(|e| format!("GET {path}: {e}"))
    };
    let r = get(ELSEWHERE, "?path=%2Fslots%2Farticle.html", &same)?;
    check(r.status == 200, || format!("status {}", r.status))?;
    check(
        r.header("cache-control")
            .is_some_and(|c| c.contains("no-store")),
        || format!("cache-control {:?}", r.header("cache-control")),
    )?;
    let data: Value = serde_json::from_slice(&r.body).map_err(|e| format!("not JSON: {e}"))?;
    check(data["v"] == 1 && winner(&data, "ad-top").is_some(), || {
        format!("{data}")
    })?;
    check(data["slots"]["ad-side"]["bid"].is_null(), || {
        format!("{data}")
    })?;
    let marker = format!("spa-{}", crate::cache::unique());
    // What, from where, the query, the headers, the status.
    type Case<'a> = (&'a str, [u8; 4], String, Vec<(&'a str, &'a str)>, u16);
    let cases: [Case; 4] = [
        (
            "another site's page",
            ELSEWHERE,
            format!("?path=%2Fslots%2Farticle.html%3F{marker}"),
            vec![("sec-fetch-site", "cross-site"), ("user-agent", ua)],
            403,
        ),
        ("no path", ELSEWHERE, String::new(), same.to_vec(), 400),
        (
            "a path without slots",
            ELSEWHERE,
            "?path=%2Findex.html".into(),
            same.to_vec(),
            404,
        ),
        (
            "no consent",
            GERMANY,
            format!("?path=%2Fslots%2Farticle.html%3F{marker}"),
            same.to_vec(),
            404,
        ),
    ];
    for (what, source, query, headers, status) in cases {
        let r = get(source, &query, &headers)?;
        check(r.status == status, || {
            format!(
                "{what}: status {} ({})",
                r.status,
                String::from_utf8_lossy(&r.body)
            )
        })?;
    }
    Ok(())
}

/// A client may send header bytes that are not UTF-8 (HTTP's obs-text), and none of them
/// panics the service: a navigation whose `User-Agent` has one gets its page, complete and
/// without an auction (an agent that is not text counts as none, so as a bot); the auction
/// endpoint reads such an agent lossily (each such byte U+FFFD) into what the bidders get and
/// answers with bids, and refuses an `Origin` or `Sec-Fetch-Site` that has one with its `403`.
/// Raw requests: a client library refuses to send such bytes.
pub fn header_bytes_that_are_not_utf8_get_answers_not_a_crash(w: &World) -> Outcome {
    let marker = format!("obs-text-{}", crate::cache::unique());
    let host = w.streaming.to_string();
    let send = |head: String, tail: &[u8]| {
        let mut raw = head.into_bytes();
        raw.extend_from_slice(tail);
        let got = e2e::wire::send_raw(w.streaming, &raw, TIMEOUT).map_err(|e| e.to_string())?;
        Ok::<_, String>(String::from_utf8_lossy(&got).into_owned())
    };
    let agent = b"user-agent: Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 \xff\r\n";
    let text = send(
        format!(
            "GET /next/about?r={marker} HTTP/1.1\r\nhost: {host}\r\nsec-fetch-dest: document\r\n\
             sec-fetch-mode: navigate\r\naccept: text/html\r\naccept-encoding: identity\r\n\
             connection: close\r\n"
        ),
        &[&agent[..], b"\r\n"].concat(),
    )?;
    check(text.starts_with("HTTP/1.1 200"), || {
        format!("navigation: {:?}", &text[..text.len().min(200)])
    })?;
    check(
        text.ends_with("0\r\n\r\n") && text.contains("</html>"),
        || "navigation: the page did not end".into(),
    )?;
    check(!text.contains(OPEN), || "navigation: bids for a bot".into())?;
    let id = format!("e2e-{marker}");
    let slots = [(
        "div-obs",
        (300, 250),
        serde_json::json!({"fast": {"price": 1.5}}),
    )];
    let body = super::prebid_request(&id, 800, &slots);
    let head = format!(
        "POST /_ts/openrtb2/auction HTTP/1.1\r\nhost: {host}\r\ncontent-type: text/plain\r\n\
         content-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    let text = send(head, &[&agent[..], b"\r\n", &body].concat())?;
    check(
        text.starts_with("HTTP/1.1 200") && text.contains("seatbid"),
        || format!("auction: {:?}", &text[..text.len().min(300)]),
    )?;
    let (sent, _) = super::sent_to(w, &id, "fast")?;
    check(
        sent["device"]["ua"]
            .as_str()
            .is_some_and(|ua| ua.ends_with("Chrome/131.0 \u{fffd}")),
        || format!("the bidder got device.ua {}", sent["device"]["ua"]),
    )?;
    for (name, value) in [
        ("origin", &b"http://127.0.0.1\xff"[..]),
        ("sec-fetch-site", b"same-origin\xff"),
    ] {
        let head = format!(
            "POST /_ts/openrtb2/auction HTTP/1.1\r\nhost: {host}\r\ncontent-type: text/plain\r\n\
             content-length: {}\r\nconnection: close\r\n{name}: ",
            body.len()
        );
        let text = send(head, &[value, b"\r\n\r\n", &body].concat())?;
        check(text.starts_with("HTTP/1.1 403"), || {
            format!("auction with {name}: {:?}", &text[..text.len().min(200)])
        })?;
    }
    Ok(())
}
