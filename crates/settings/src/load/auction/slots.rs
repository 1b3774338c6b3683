//! `auction.slots`: the ad slots the edge knows, each the shape of a Prebid.js ad unit (its
//! element id, the pages it is on, its sizes, its bidders and their params, a floor).
//!
//! A slot's key is written `auction.slots[I].KEY`, `I` counted from 0 in the order the slots
//! are written, and deeper where the value is a list or a table (`auction.slots[2].paths[0]`,
//! `auction.slots[0].bidders.fast`).

use std::borrow::Cow;

use toml::{Table, Value};

use super::At;
use crate::load::values::{shown, Composite};
use crate::load::LoadError;
use crate::{Bidder, Size, Slot, SlotBidder, Text};

/// The most slots (the core's `MAX_IMPS`: a navigation's auction asks for each matching slot
/// in one request, so all of them may match one page).
pub(super) const MAX_SLOTS: usize = 32;

/// The most bidders a slot names (the core's `MAX_BIDDERS`).
const MAX_SLOT_BIDDERS: usize = 32;

/// The most path patterns of one slot.
const MAX_PATHS: usize = 32;

/// The most sizes of one slot.
const MAX_SIZES: usize = 16;

/// The longest element id.
const MAX_ID_LEN: usize = 64;

/// The longest path pattern.
const MAX_PATH_LEN: usize = 256;

/// The largest side of a size, in CSS pixels.
const MAX_SIDE: i64 = 10_000;

/// The longest params of one bidder, as JSON text.
const MAX_PARAMS_BYTES: usize = 4096;

/// The highest floor, in units of the currency (CPM).
const MAX_FLOOR: f64 = 1000.0;

/// The keys a slot table accepts.
const SLOT_KEYS: [&str; 5] = ["id", "paths", "sizes", "bidders", "floor"];

/// `auction.slots`: an array of slot tables (none when unset), at most [`MAX_SLOTS`], ids
/// unique, every bidder one of `bidders`, in the order written.
pub(super) fn slots(
    at: &At<'_, '_>,
    value: Option<Composite>,
    bidders: &[Bidder],
) -> Result<Vec<Slot>, LoadError> {
    let items = match value.map(|c| c.0) {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(at.whole(
                "expected an array of slot tables ([[auction.slots]] in the file, \
                 '[{ id = \"…\", paths = [\"/…\"], sizes = [[300, 250]], bidders = { … } }]' \
                 in the environment)",
            ))
        }
    };
    if items.len() > MAX_SLOTS {
        let problem = format!("{} slots: at most {MAX_SLOTS}", items.len());
        return Err(at.whole(&problem));
    }
    let mut out: Vec<Slot> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let Value::Table(table) = item else {
            let problem = format!(
                "{}: expected a table of {}",
                shown(&item),
                SLOT_KEYS.join(", ")
            );
            return Err(at.error(index, None, &problem));
        };
        let slot = slot(at, index, table, bidders)?;
        if let Some(first) = out.iter().position(|s| s.id == slot.id) {
            let problem = format!("{:?} is also the id of auction.slots[{first}]", slot.id);
            return Err(at.error(index, Some("id"), &problem));
        }
        out.push(slot);
    }
    Ok(out)
}

/// One slot table, checked key by key.
fn slot(
    at: &At<'_, '_>,
    index: usize,
    mut table: Table,
    bidders: &[Bidder],
) -> Result<Slot, LoadError> {
    if let Some(unknown) = table.keys().find(|k| !SLOT_KEYS.contains(&k.as_str())) {
        let problem = format!("unknown key (a slot has {})", SLOT_KEYS.join(", "));
        return Err(at.error(index, Some(unknown), &problem));
    }
    let error = |key: &str, problem: &str| at.error(index, Some(key), problem);
    let id = match table.remove("id") {
        None => return Err(error("id", "is required")),
        Some(Value::String(id)) if is_element_id(&id) => id,
        Some(other) => {
            let problem = format!(
                "expected an element id of 1 to {MAX_ID_LEN} of A-Z a-z 0-9 _ - . :, got {}",
                shown(&other)
            );
            return Err(error("id", &problem));
        }
    };
    let paths = list(&error, "paths", table.remove("paths"), MAX_PATHS)?;
    let paths = (paths.iter().enumerate())
        .map(|(i, p)| path_pattern(p).map_err(|problem| error(&format!("paths[{i}]"), &problem)))
        .collect::<Result<Vec<Text>, _>>()?;
    let sizes = list(&error, "sizes", table.remove("sizes"), MAX_SIZES)?;
    let sizes = (sizes.iter().enumerate())
        .map(|(i, s)| size(s).map_err(|problem| error(&format!("sizes[{i}]"), &problem)))
        .collect::<Result<Vec<Size>, _>>()?;
    let slot_bidders = match table.remove("bidders") {
        None => return Err(error("bidders", "is required")),
        Some(Value::Table(t)) if t.is_empty() => {
            return Err(error(
                "bidders",
                "names no bidder: a slot needs at least one",
            ))
        }
        Some(Value::Table(t)) if t.len() > MAX_SLOT_BIDDERS => {
            let problem = format!("{} bidders: at most {MAX_SLOT_BIDDERS}", t.len());
            return Err(error("bidders", &problem));
        }
        Some(Value::Table(t)) => t,
        Some(other) => {
            let problem = format!(
                "expected a table of bidder codes and their params ({{ fast = {{ placement \
                 = 1 }} }}), got {}",
                shown(&other)
            );
            return Err(error("bidders", &problem));
        }
    };
    let mut out_bidders = Vec::with_capacity(slot_bidders.len());
    for (code, params) in slot_bidders {
        let key = format!("bidders.{code}");
        if !bidders.iter().any(|b| b.code == code) {
            let configured: Vec<&str> = bidders.iter().map(|b| &*b.code).collect();
            let hint = match bidders.iter().find(|b| b.code.eq_ignore_ascii_case(&code)) {
                Some(b) => format!(" (codes are exact: {:?})", b.code),
                None if configured.is_empty() => " (auction.bidders names none)".to_owned(),
                None => format!(" ({})", configured.join(", ")),
            };
            let problem = format!("{code:?} is not the code of an auction.bidders entry{hint}");
            return Err(error(&key, &problem));
        }
        let Value::Table(params) = params else {
            let problem = format!(
                "expected a table of the bidder's params ({{}} for none), got {}",
                shown(&params)
            );
            return Err(error(&key, &problem));
        };
        let mut json = String::new();
        json_of(&Value::Table(params), &mut json).map_err(|problem| error(&key, &problem))?;
        if json.len() > MAX_PARAMS_BYTES {
            let problem = format!(
                "params of {} bytes as JSON: at most {MAX_PARAMS_BYTES}",
                json.len()
            );
            return Err(error(&key, &problem));
        }
        out_bidders.push(SlotBidder {
            code: Cow::Owned(code),
            params: Cow::Owned(json),
        });
    }
    let floor_micros = match table.remove("floor") {
        None => 0,
        Some(value) => floor(&value).map_err(|problem| error("floor", &problem))?,
    };
    Ok(Slot {
        id: Cow::Owned(id),
        paths: Cow::Owned(paths),
        sizes: Cow::Owned(sizes),
        bidders: Cow::Owned(out_bidders),
        floor_micros,
    })
}

/// The items of a required, non-empty array of at most `max`.
fn list(
    error: &impl Fn(&str, &str) -> LoadError,
    key: &str,
    value: Option<Value>,
    max: usize,
) -> Result<Vec<Value>, LoadError> {
    match value {
        None => Err(error(key, "is required")),
        Some(Value::Array(items)) if items.is_empty() => {
            Err(error(key, "is empty: at least one is needed"))
        }
        Some(Value::Array(items)) if items.len() > max => Err(error(
            key,
            &format!("{} entries: at most {max}", items.len()),
        )),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(error(
            key,
            &format!("expected an array, got {}", shown(&other)),
        )),
    }
}

/// An element id: 1 to [`MAX_ID_LEN`] of `A-Z a-z 0-9 _ - . :`.
fn is_element_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b))
}

/// A path pattern: `/` and then characters a path may hold as written, with `*` only as the
/// last character (a prefix). No query, no fragment, no `..` or `.` segment (a browser
/// never asks for one, so the pattern could never match).
fn path_pattern(value: &Value) -> Result<Text, String> {
    let Value::String(path) = value else {
        return Err(format!(
            "expected a path like \"/news/*\", got {}",
            shown(value)
        ));
    };
    let fail = |why: &str| Err(format!("{path:?} {why}"));
    if !path.starts_with('/') {
        return fail("must start with /");
    }
    if path.len() > MAX_PATH_LEN {
        return fail(&format!("is longer than {MAX_PATH_LEN} bytes"));
    }
    let exact = path.strip_suffix('*').unwrap_or(path);
    if exact.contains('*') {
        return fail("has a * before its end: only a final * (a prefix: \"/news/*\") is allowed");
    }
    if let Some(c) = exact.chars().find(|&c| !is_path_char(c)) {
        let why = match c {
            '?' | '#' => "has a query or fragment: a pattern matches the path alone".to_owned(),
            _ => format!("contains {c:?}, which a path must percent-encode"),
        };
        return fail(&why);
    }
    if exact.split('/').any(|s| s == "." || s == "..") {
        return fail("has a . or .. segment, which a browser never asks for");
    }
    Ok(Cow::Owned(path.clone()))
}

/// A character a URL's path may hold as written (RFC 3986's `pchar` and `/`).
fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()+,;=:@/%".contains(c)
}

/// `[w, h]`: two integers of 1 to [`MAX_SIDE`].
fn size(value: &Value) -> Result<Size, String> {
    let side = |v: &Value| match v {
        Value::Integer(n) if (1..=MAX_SIDE).contains(n) => u32::try_from(*n).ok(),
        _ => None,
    };
    match value {
        Value::Array(wh) if wh.len() == 2 => match (side(&wh[0]), side(&wh[1])) {
            (Some(w), Some(h)) => Ok(Size { w, h }),
            _ => Err(format!("expected [width, height] of 1 to {MAX_SIDE} each")),
        },
        _ => Err(format!(
            "expected [width, height] like [300, 250], got {}",
            shown(value)
        )),
    }
}

/// `floor`: a number (integer or float) of 0 to [`MAX_FLOOR`], in millionths, rounded.
fn floor(value: &Value) -> Result<u32, String> {
    let units = match value {
        // The integers allowed are far below 2^53: exact as f64.
        #[allow(clippy::cast_precision_loss)]
        Value::Integer(n) => *n as f64,
        Value::Float(f) => *f,
        other => {
            return Err(format!(
                "expected a price like 0.5 (in auction.currency), got {}",
                shown(other)
            ))
        }
    };
    if !(0.0..=MAX_FLOOR).contains(&units) {
        return Err(format!("{units} is outside 0 to {MAX_FLOOR}"));
    }
    // In range: at most 1e9, which a u32 holds.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok((units * 1e6).round() as u32)
}

/// Appends the JSON text of a TOML value. A TOML table is a JSON object (keys in the order
/// `toml` keeps them), an array an array; a float that is not finite, or a date and time,
/// has no JSON form and is refused.
fn json_of(value: &Value, out: &mut String) -> Result<(), String> {
    match value {
        Value::String(s) => json_string(s, out),
        Value::Integer(n) => out.push_str(&n.to_string()),
        Value::Float(f) if f.is_finite() => {
            // `{:?}` keeps a fraction (`1.0`), so the value stays a float in JSON.
            out.push_str(&format!("{f:?}"));
        }
        Value::Float(f) => return Err(format!("{f} has no JSON form")),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Datetime(d) => {
            return Err(format!(
                "the date {d} has no JSON form: write it as a string"
            ))
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_of(item, out)?;
            }
            out.push(']');
        }
        Value::Table(table) => {
            out.push('{');
            for (i, (key, item)) in table.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(key, out);
                out.push(':');
                json_of(item, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// Appends `s` as a JSON string.
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{keys, load, override_variables, Origin};
    use crate::Settings;

    const VAR: &str = "TRUSTED_SERVER__AUCTION__SLOTS";

    /// Two bidders, then the slot tables given.
    fn with_slots(slots: &str) -> String {
        format!(
            "[publisher]\ndomain = \"www.example.com\"\norigin_url = \"https://origin.example.com\"\n\
             \n[[auction.bidders]]\ncode = \"fast\"\nendpoint = \"https://fast.example/bid\"\n\
             \n[[auction.bidders]]\ncode = \"slow\"\nendpoint = \"https://slow.example/bid\"\n\
             \n{slots}"
        )
    }

    const FIRST: &str = "[[auction.slots]]\nid = \"ad-top\"\npaths = [\"/ads.html\"]\n\
                         sizes = [[728, 90]]\nbidders = { fast = {} }\n";

    fn no_env() -> Vec<(String, String)> {
        Vec::new()
    }

    #[test]
    fn defaults_and_every_key() {
        let a = load(&with_slots(""), no_env()).unwrap().auction;
        assert!(a.slots.is_empty());
        assert!(a.navigation);
        assert_eq!(a.navigation_timeout_ms, 500);
        assert_eq!(a.bots, Settings::DEFAULT.auction.bots);

        let text = with_slots(&format!(
            "{FIRST}\n[[auction.slots]]\nid = \"side_2:b.c\"\npaths = [\"/news/*\", \"/*\", \"/a%20b/\"]\n\
             sizes = [[300, 250], [300, 600]]\nfloor = 0.25\n\
             bidders = {{ slow = {{ zone = \"a\\\"<b>\\u0001\", n = [1, 2.5, true], t = {{ x = -1 }} }}, fast = {{ placement = 7 }} }}\n"
        ));
        let s = load(&text, no_env()).unwrap();
        let slots = &s.auction.slots;
        assert_eq!(slots.len(), 2);
        assert_eq!(
            slots[0],
            Slot {
                id: "ad-top".into(),
                paths: Cow::Owned(vec!["/ads.html".into()]),
                sizes: Cow::Owned(vec![Size { w: 728, h: 90 }]),
                bidders: Cow::Owned(vec![SlotBidder {
                    code: "fast".into(),
                    params: "{}".into(),
                }]),
                floor_micros: 0,
            }
        );
        let side = &slots[1];
        assert_eq!(&*side.id, "side_2:b.c");
        assert_eq!(side.paths.len(), 3);
        assert_eq!(
            &*side.sizes,
            &[Size { w: 300, h: 250 }, Size { w: 300, h: 600 }]
        );
        assert_eq!(side.floor_micros, 250_000);
        // Params as JSON text, keys in toml's order (sorted), strings escaped.
        let codes: Vec<(&str, &str)> = (side.bidders.iter())
            .map(|b| (&*b.code, &*b.params))
            .collect();
        assert_eq!(
            codes,
            [
                ("fast", "{\"placement\":7}"),
                (
                    "slow",
                    "{\"n\":[1,2.5,true],\"t\":{\"x\":-1},\"zone\":\"a\\\"<b>\\u0001\"}"
                ),
            ]
        );
        let expr = s.to_rust_expr();
        assert!(expr.contains("floor_micros : 250000u32"), "{expr}");

        // Watched by build.rs and documented, like every key.
        for key in [
            "slots",
            "bots",
            "navigation",
            "navigation_timeout_ms",
            "origin_first_within_ms",
        ] {
            assert!(keys().contains(&format!("auction.{key}")), "{key}");
        }
        assert!(override_variables().any(|v| v == VAR));
    }

    #[test]
    fn the_environment_replaces_the_files_slots() {
        let env = [(
            VAR,
            "[{ id = \"x\", paths = [\"/p\"], sizes = [[1, 1]], bidders = { slow = { a = 1 } }, floor = 2 }]",
        )];
        let a = load(&with_slots(FIRST), env).unwrap().auction;
        assert_eq!(a.slots.len(), 1);
        assert_eq!((&*a.slots[0].id, a.slots[0].floor_micros), ("x", 2_000_000));
        assert_eq!(&*a.slots[0].bidders[0].params, "{\"a\":1}");
        let a = load(&with_slots(FIRST), [(VAR, "[]")]).unwrap().auction;
        assert!(a.slots.is_empty());
    }

    #[test]
    fn each_slot_mistake_names_its_key_and_origin() {
        // (the second slot's lines, the key named under auction.slots[1], a word of the problem)
        let ok = [
            "id = \"ad-side\"",
            "paths = [\"/ads.html\"]",
            "sizes = [[300, 250]]",
            "bidders = { fast = {} }",
        ];
        let cases = [
            ("colour = 1", "colour", "unknown key"),
            ("id = \"\"", "id", "element id"),
            ("id = \"a b\"", "id", "element id"),
            ("id = \"a<b\"", "id", "element id"),
            ("id = \"ad-top\"", "id", "auction.slots[0]"),
            ("id = 3", "id", "got 3"),
            ("paths = []", "paths", "at least one"),
            ("paths = \"/ads.html\"", "paths", "expected an array"),
            ("paths = [\"ads.html\"]", "paths[0]", "start with /"),
            ("paths = [\"/ok\", \"/a*b\"]", "paths[1]", "final *"),
            ("paths = [\"/**\"]", "paths[0]", "final *"),
            ("paths = [\"/a?b=1\"]", "paths[0]", "query"),
            ("paths = [\"/a#b\"]", "paths[0]", "query"),
            ("paths = [\"/a b\"]", "paths[0]", "percent-encode"),
            ("paths = [\"/é\"]", "paths[0]", "percent-encode"),
            ("paths = [\"/a/../b\"]", "paths[0]", ".."),
            ("paths = [\"/./*\"]", "paths[0]", ".."),
            ("paths = [1]", "paths[0]", "got 1"),
            ("sizes = []", "sizes", "at least one"),
            ("sizes = [[300]]", "sizes[0]", "[width, height]"),
            ("sizes = [[300, 250], [0, 1]]", "sizes[1]", "1 to 10000"),
            ("sizes = [[300, 10001]]", "sizes[0]", "1 to 10000"),
            ("sizes = [[\"300\", 250]]", "sizes[0]", "1 to 10000"),
            ("sizes = [300, 250]", "sizes[0]", "got 300"),
            ("bidders = {}", "bidders", "at least one"),
            ("bidders = [\"fast\"]", "bidders", "a table of bidder codes"),
            ("bidders = { nobody = {} }", "bidders.nobody", "fast, slow"),
            ("bidders = { Fast = {} }", "bidders.Fast", "codes are exact"),
            ("bidders = { fast = 1 }", "bidders.fast", "params"),
            (
                "bidders = { fast = { x = inf } }",
                "bidders.fast",
                "no JSON form",
            ),
            ("floor = -0.1", "floor", "outside 0 to 1000"),
            ("floor = 1000.5", "floor", "outside 0 to 1000"),
            ("floor = nan", "floor", "outside 0 to 1000"),
            ("floor = \"0.5\"", "floor", "a price"),
        ];
        for (bad, key, problem) in cases {
            let replaced = bad.split(' ').next().unwrap();
            let mut lines: Vec<&str> = ok
                .iter()
                .copied()
                .filter(|l| !l.starts_with(&format!("{replaced} ")))
                .collect();
            lines.insert(0, bad);
            let second = format!("[[auction.slots]]\n{}\n", lines.join("\n"));
            let text = with_slots(&format!("{FIRST}\n{second}"));
            let e = load(&text, no_env()).unwrap_err();
            let full = format!("auction.slots[1].{key}");
            let at = text
                .lines()
                .collect::<Vec<_>>()
                .iter()
                .rposition(|l| *l == bad)
                .unwrap()
                + 1;
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (full.as_str(), &Some(Origin::Line(at))),
                "{bad}: {e}"
            );
            assert!(e.problem.contains(problem), "{bad}: {e}");

            // The same slot in the variable: named the same, from the variable.
            let entry = format!(
                "[{{ id = \"ad-top\", paths = [\"/x\"], sizes = [[1, 1]], bidders = {{ fast = {{}} }} }}, {{ {} }}]",
                lines.join(", ")
            );
            let e = load(&with_slots(""), [(VAR, entry)]).unwrap_err();
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (full.as_str(), &Some(Origin::Variable(VAR.to_owned()))),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_missing_key_is_named_at_its_table() {
        for missing in ["id", "paths", "sizes", "bidders"] {
            let lines: Vec<&str> = FIRST
                .lines()
                .filter(|l| !l.starts_with(&format!("{missing} ")))
                .collect();
            let text = with_slots(&lines.join("\n"));
            let e = load(&text, no_env()).unwrap_err();
            assert_eq!(e.key, format!("auction.slots[0].{missing}"));
            assert_eq!(e.problem, "is required");
            let at = text.lines().position(|l| l == "[[auction.slots]]").unwrap() + 1;
            assert_eq!(e.origin, Some(Origin::Line(at)), "{missing}");
        }
        for bad in ["1", "\"x\"", "{ id = \"x\" }", "[1]"] {
            let e = load(&with_slots(""), [(VAR, bad)]).unwrap_err();
            assert!(e.key.starts_with("auction.slots"), "{bad}: {e}");
            assert_eq!(e.origin, Some(Origin::Variable(VAR.to_owned())), "{bad}");
        }
    }

    #[test]
    fn at_most_32_slots() {
        let list = |n: usize| {
            let entries: Vec<String> = (0..n)
                .map(|i| {
                    format!(
                        "{{ id = \"s{i}\", paths = [\"/*\"], sizes = [[1, 1]], bidders = {{ fast = {{}} }} }}"
                    )
                })
                .collect();
            format!("[{}]", entries.join(", "))
        };
        let a = load(&with_slots(""), [(VAR, list(32))]).unwrap().auction;
        assert_eq!(a.slots.len(), MAX_SLOTS);
        let e = load(&with_slots(""), [(VAR, list(33))]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("invalid setting `auction.slots` from {VAR}: 33 slots: at most 32")
        );
    }

    #[test]
    fn the_auction_knobs_of_navigations() {
        let text = |lines: &str| {
            with_slots("").replacen("\n[[", &format!("\n[auction]\n{lines}\n\n[["), 1)
        };
        let a = load(&text("timeout_ms = 300"), no_env()).unwrap().auction;
        // The default follows a smaller auction timeout.
        assert_eq!(a.navigation_timeout_ms, 300);
        assert_eq!(a.origin_first_within_ms, 1);
        let a = load(
            &text(
                "navigation = false\nnavigation_timeout_ms = 700\norigin_first_within_ms = 0\n\
                 bots = [\"MyCrawler\", \"a b\"]",
            ),
            no_env(),
        )
        .unwrap()
        .auction;
        assert!(!a.navigation);
        assert_eq!(a.navigation_timeout_ms, 700);
        assert_eq!(a.origin_first_within_ms, 0);
        assert_eq!(
            &*a.bots,
            &[Cow::Borrowed("MyCrawler"), Cow::Borrowed("a b")]
        );
        let env = [("TRUSTED_SERVER__AUCTION__BOTS", "[]")];
        assert!(load(&text(""), env).unwrap().auction.bots.is_empty());

        for (bad, key, problem) in [
            (
                "navigation_timeout_ms = 9",
                "auction.navigation_timeout_ms",
                "10..=10000",
            ),
            (
                "timeout_ms = 300\nnavigation_timeout_ms = 301",
                "auction.navigation_timeout_ms",
                "more than auction.timeout_ms",
            ),
            (
                "origin_first_within_ms = 101",
                "auction.origin_first_within_ms",
                "0..=100",
            ),
            ("navigation = 1", "auction.navigation", "true or false"),
            ("bots = \"Googlebot\"", "auction.bots", "TOML array"),
            ("bots = [\"ok\", \"\"]", "auction.bots[1]", "printable"),
            ("bots = [\" x\"]", "auction.bots[0]", "printable"),
            ("bots = [\"é\"]", "auction.bots[0]", "printable"),
            ("bots = [1]", "auction.bots[0]", "got 1"),
        ] {
            let text = text(bad);
            let e = load(&text, no_env()).unwrap_err();
            let last = bad.lines().last().unwrap();
            let at = text.lines().position(|l| l == last).unwrap() + 1;
            assert_eq!(
                (e.key.as_str(), &e.origin),
                (key, &Some(Origin::Line(at))),
                "{bad}: {e}"
            );
            assert!(e.problem.contains(problem), "{bad}: {e}");
        }
        let many = format!("[{}]", vec!["\"x\""; 65].join(","));
        let e = load(&text(""), [("TRUSTED_SERVER__AUCTION__BOTS", many)]).unwrap_err();
        assert!(e.problem.contains("at most 64"), "{e}");
    }

    /// `trusted-server.toml`'s demo slots load: on the demo's page (and the Next.js demo's
    /// home), asking the demo's bidders.
    #[test]
    fn the_demo_files_slots_are_valid() {
        let demo = include_str!("../../../../../trusted-server.toml");
        let a = load(demo, no_env()).unwrap().auction;
        assert!(a.navigation);
        let ids: Vec<&str> = a.slots.iter().map(|s| &*s.id).collect();
        assert_eq!(ids, ["ad-top", "ad-side"]);
        assert!(a
            .slots
            .iter()
            .all(|s| s.paths.contains(&Cow::Borrowed("/ads.html"))));
        let codes: Vec<&str> = a.bidders.iter().map(|b| &*b.code).collect();
        assert!(a
            .slots
            .iter()
            .flat_map(|s| s.bidders.iter())
            .all(|b| codes.contains(&&*b.code)));
    }
}
