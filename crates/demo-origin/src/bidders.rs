//! OpenRTB 2.6 demo bidders under `/bidders/`: the demand partners the edge's server-side
//! auction calls in the demo and in the end-to-end tests.
//!
//! * `POST /bidders/fast/id` and `/bidders/slow/id` are the two partners' ID endpoints (the
//!   edge asks them for a reader's ID: [`ID_SUFFIX`]).
//! * `POST /bidders/fast` answers at once, `POST /bidders/slow` after a delay, and
//!   `POST /bidders/misbehave` answers the way `imp[0].ext.bidder.how` asks (see
//!   [`Misbehaviour`]): late, huge, not JSON, a gzip bomb, bids the edge must drop.
//! * `POST /bidders/corpus` answers with a creative of the corpus as its markup: each banner
//!   impression's `ext.bidder.creative` names a file under the server's root (a relative path
//!   such as `img-banner.html`; no `..`, no absolute path), and the bid's `adm` is that file's
//!   text, unchanged (see [`corpus_response`]). The browser test serves `fixtures/creatives`
//!   with one demo origin and points its corpus bidders at it, so every creative of the corpus
//!   can win an auction. The markup is sent as written, as ad servers send `adm`: with absolute
//!   URLs. A creative with relative URLs has no address to resolve them against in an `adm`
//!   (the frame Prebid.js writes it into has the publisher page's), so the corpus manifest
//!   marks those not applicable to the auction rather than this bidder inventing a `<base>`.
//! * Every request a bidder route receives is kept (the last [`MAX_RECORDS`]), and
//!   `GET /bidders/received?id=ID` answers those whose body's top-level `id` (an ID ask's
//!   `ec`) is `ID` (or, with
//!   `?page=TEXT`, whose `site.page` contains `TEXT`): what the
//!   edge sent each bidder, headers included, is what the tests check (no cookie, the IDs,
//!   the consent signals, `tmax`).
//!
//! The answers are deterministic: one bid per banner or native impression at the bidder's own
//! price (or the impression's `ext.bidder.price`), sized by the first banner format, with a
//! creative from the demo partner (`fixtures/partner`), so a test can say which bidder should
//! win and what its markup is.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hyper::header::{HeaderValue, ALLOW, CONTENT_ENCODING, CONTENT_TYPE, LOCATION};
use hyper::http::request::Parts;
use hyper::{Method, Response, StatusCode};
use serde_json::{json, Value};

use crate::body::{Limits, Payload, TimedChunk};
use crate::codec::{self, Encoding};
use crate::knobs::percent_decode;

/// Requests under this path are the bidders'.
pub const BASE_PATH: &str = "/bidders/";
/// How many received requests are kept (the oldest go first).
pub const MAX_RECORDS: usize = 500;
/// At most this much of a received body is kept (its `id` is read from all of it).
const MAX_RECORDED_BODY: usize = 1024 * 1024;
/// What `slow` waits by default before answering.
pub const SLOW_DEFAULT_DELAY: Duration = Duration::from_millis(300);
/// The longest `ext.bidder.delay_ms` honoured.
pub const MAX_DELAY_MS: u64 = 20_000;
/// How long `how: "stall"` keeps the connection open after half its body, by default.
pub const STALL: Duration = Duration::from_secs(20);
/// `how: "huge"` answers at least this many bytes: over any sane bidder-answer limit.
pub const HUGE_BYTES: usize = 2 * 1024 * 1024 + 1024;
/// `how: "gzip-bomb"` inflates to this many zeros.
pub const BOMB_BYTES: usize = 50 * 1024 * 1024;

/// The advertiser domain every demo bid declares.
const ADOMAIN: &str = "demo-advertiser.example";
/// The one creative image the demo partner serves (`fixtures/partner/banner.svg`, 300×250;
/// as an SVG it scales to any banner size).
/// Plain `http://`, as the demo partner's other creatives (`fixtures/partner`): locally the
/// partner has no TLS, and the first-party proxy fetches these as written.
const CREATIVE_IMAGE: &str = "http://cdn.demo-partner.example/banner.svg";
/// The win beacon (`burl`): on the creative's own host, a 1x1 GIF.
const WIN_URL: &str = "http://cdn.demo-partner.example/bidders/win";
/// What the corpus bidder bids when the impression names no `ext.bidder.price`.
pub const CORPUS_PRICE: f64 = 1.00;
/// The corpus bidder's seat (the edge names each seat after the bidder's code anyway).
pub const CORPUS_SEAT: &str = "corpus";
/// The largest corpus creative the corpus bidder sends.
const MAX_CORPUS_CREATIVE: u64 = 256 * 1024;
/// A transparent 1x1 GIF: what a win beacon answers, as ad servers' pixels do.
const PIXEL: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
/// Where a creative's click goes (a partner URL the edge turns first-party).
const CLICK_URL: &str = "https://ads.demo-partner.example/click";
const JSON: &str = "application/json";

/// One of the demo bidders: its seat, its price, how it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bidder {
    /// `/bidders/fast`: answers at once.
    Fast,
    /// `/bidders/slow`: answers after `ext.bidder.delay_ms` (default 300 ms).
    Slow,
    /// `/bidders/misbehave`: answers as `ext.bidder.how` asks.
    Misbehave,
}

impl Bidder {
    /// The bidder a path's last segment names.
    pub fn from_name(name: &str) -> Option<Bidder> {
        match name {
            "fast" => Some(Bidder::Fast),
            "slow" => Some(Bidder::Slow),
            "misbehave" => Some(Bidder::Misbehave),
            _ => None,
        }
    }

    /// Its seat (and route name).
    pub fn seat(self) -> &'static str {
        match self {
            Bidder::Fast => "fast",
            Bidder::Slow => "slow",
            Bidder::Misbehave => "misbehave",
        }
    }

    /// What it bids when the impression names no `ext.bidder.price`: distinct per bidder, so
    /// a test knows who won.
    pub fn price(self) -> f64 {
        match self {
            Bidder::Fast => 1.50,
            Bidder::Slow => 2.10,
            Bidder::Misbehave => 1.20,
        }
    }
}

/// What `/bidders/misbehave` does, from `imp[0].ext.bidder.how`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    /// `stall`: `200`, half a valid body, then nothing for 20 s (or `delay_ms`), then the
    /// connection drops with the body unfinished.
    Stall,
    /// `huge`: a valid answer of over 2 MiB (a long string in `ext`).
    Huge,
    /// `not-json`: `200` with `text/html` garbage.
    NotJson,
    /// `gzip-bomb`: `Content-Encoding: gzip` that inflates to 50 MiB of zeros.
    GzipBomb,
    /// `wrong-impid`: its bids name impression `nope`.
    WrongImpid,
    /// `negative-price`: its bids are priced `-1`.
    NegativePrice,
    /// `nan-price`: one bid priced `"NaN"` (a string: JSON has no NaN), another `1e309`
    /// (infinite as a double), written literally.
    NanPrice,
    /// `status-500`: `500` with a JSON error.
    Status500,
    /// `redirect`: `302` to `/bidders/fast`.
    Redirect,
    /// `script-adm`: markup with `<script>alert(1)</script>` and a `javascript:` link.
    ScriptAdm,
    /// `no-content`: `204`.
    NoContent,
    /// `other-currency`: `cur` `EUR`.
    OtherCurrency,
}

impl Misbehaviour {
    /// Every `how` value, as written in the request.
    pub const NAMES: [&'static str; 12] = [
        "stall",
        "huge",
        "not-json",
        "gzip-bomb",
        "wrong-impid",
        "negative-price",
        "nan-price",
        "status-500",
        "redirect",
        "script-adm",
        "no-content",
        "other-currency",
    ];

    /// The misbehaviour `how` names (`None` for a name not in [`Misbehaviour::NAMES`]).
    pub fn from_name(how: &str) -> Option<Misbehaviour> {
        Some(match how {
            "stall" => Misbehaviour::Stall,
            "huge" => Misbehaviour::Huge,
            "not-json" => Misbehaviour::NotJson,
            "gzip-bomb" => Misbehaviour::GzipBomb,
            "wrong-impid" => Misbehaviour::WrongImpid,
            "negative-price" => Misbehaviour::NegativePrice,
            "nan-price" => Misbehaviour::NanPrice,
            "status-500" => Misbehaviour::Status500,
            "redirect" => Misbehaviour::Redirect,
            "script-adm" => Misbehaviour::ScriptAdm,
            "no-content" => Misbehaviour::NoContent,
            "other-currency" => Misbehaviour::OtherCurrency,
            _ => return None,
        })
    }
}

/// Whether `path` is one of the bidders' (including `/bidders/received`).
pub fn is_bidder_path(path: &str) -> bool {
    path.starts_with(BASE_PATH)
}

/// A bid request the bidders can answer: a JSON object with a string `id` and at least one
/// impression.
///
/// # Errors
/// Why the body is not one, for the `400`.
pub fn parse_request(body: &[u8]) -> Result<Value, String> {
    let request: Value =
        serde_json::from_slice(body).map_err(|e| format!("body is not JSON: {e}"))?;
    if !request.get("id").is_some_and(Value::is_string) {
        return Err("the request has no string id".to_owned());
    }
    match request.get("imp").and_then(Value::as_array) {
        Some(imps) if !imps.is_empty() => Ok(request),
        _ => Err("the request has no imp".to_owned()),
    }
}

/// `imp[i].ext.bidder.<key>`: the bidder parameters a test sets.
fn param<'a>(imp: &'a Value, key: &str) -> Option<&'a Value> {
    imp.get("ext")?.get("bidder")?.get(key)
}

/// `imp[0].ext.bidder.<key>` of `request`.
fn first_param<'a>(request: &'a Value, key: &str) -> Option<&'a Value> {
    param(request.get("imp")?.get(0)?, key)
}

/// `imp[0].ext.bidder.delay_ms`, bounded to `0..=MAX_DELAY_MS` (`None` when absent or not a
/// number).
pub fn delay(request: &Value) -> Option<Duration> {
    let ms = first_param(request, "delay_ms")?.as_f64()?;
    // `as` saturates, and NaN cannot come out of JSON.
    Some(Duration::from_millis((ms as u64).min(MAX_DELAY_MS)))
}

/// The banner size an impression asks for: its first `format`, else `w`/`h`, else 300×250.
fn banner_size(banner: &Value) -> (u64, u64) {
    let size = |v: &Value| Some((v.get("w")?.as_u64()?, v.get("h")?.as_u64()?));
    let first_format = banner.get("format").and_then(|f| f.get(0));
    first_format
        .and_then(size)
        .or_else(|| size(banner))
        .unwrap_or((300, 250))
}

/// `s` percent-encoded for a query value (unreserved characters kept).
fn query_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The banner markup: the demo partner's image, linked to its click URL.
fn banner_markup(click: &str, w: u64, h: u64) -> String {
    format!("<a href=\"{click}\"><img src=\"{CREATIVE_IMAGE}\" width=\"{w}\" height=\"{h}\" alt=\"Demo ad\"></a>")
}

/// The bid `bidder` makes for `imp` (the `index`th), or `None` when it offers neither banner
/// nor native.
fn bid_for(bidder: Bidder, index: usize, imp: &Value) -> Option<Value> {
    let seat = bidder.seat();
    let impid = imp.get("id")?.as_str()?;
    let price = param(imp, "price")
        .and_then(Value::as_f64)
        .unwrap_or(bidder.price());
    let click = format!(
        "{CLICK_URL}?c={}",
        query_component(&format!("{seat}-{impid}"))
    );
    let mut bid = json!({
        "id": format!("{seat}-{}", index + 1),
        "impid": impid,
        "price": price,
        "adomain": [ADOMAIN],
        "burl": format!("{WIN_URL}?bidder={seat}&price=${{AUCTION_PRICE}}"),
    });
    if let Some(banner) = imp.get("banner").filter(|b| b.is_object()) {
        let (w, h) = banner_size(banner);
        bid["w"] = json!(w);
        bid["h"] = json!(h);
        bid["crid"] = json!(format!("{seat}-banner-{w}x{h}"));
        bid["mtype"] = json!(1);
        bid["adm"] = json!(banner_markup(&click, w, h));
    } else if imp.get("native").is_some_and(|n| !n.is_null()) {
        let native = json!({"native": {
            "assets": [{"id": 1, "title": {"text": format!("Demo native ad from {seat}")}}],
            "link": {"url": click},
        }});
        bid["crid"] = json!(format!("{seat}-native"));
        bid["mtype"] = json!(4);
        bid["adm"] = json!(native.to_string());
    } else {
        return None;
    }
    Some(bid)
}

/// `bidder`'s OpenRTB 2.6 answer to `request` (one [`parse_request`] accepted): one bid per
/// banner or native impression, in the order asked, in seat `bidder.seat()`. `None` when it
/// bids on nothing (the answer is then `204 No Content`, OpenRTB's no-bid).
pub fn bid_response(bidder: Bidder, request: &Value) -> Option<Value> {
    let imps = request.get("imp").and_then(Value::as_array)?;
    let bids: Vec<Value> = (imps.iter().enumerate())
        .filter_map(|(i, imp)| bid_for(bidder, i, imp))
        .collect();
    if bids.is_empty() {
        return None;
    }
    Some(json!({
        "id": request.get("id").cloned().unwrap_or(Value::Null),
        "cur": "USD",
        "seatbid": [{"seat": bidder.seat(), "bid": bids}],
    }))
}

/// Why `name` cannot be a corpus creative's path under the root: empty, absolute, with a
/// `..`, `.` or empty segment, a backslash or a control character.
fn corpus_path_error(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if name.starts_with('/') {
        return Some("is absolute");
    }
    if name.chars().any(|c| c == '\\' || c.is_control()) {
        return Some("holds a backslash or a control character");
    }
    if name
        .split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        return Some("has an empty, `.` or `..` segment");
    }
    None
}

/// The corpus creative `name` under `root`, as text.
///
/// # Errors
/// Why it cannot be sent: a bad path, an unreadable or too large file, not UTF-8.
pub fn corpus_creative(root: &Path, name: &str) -> Result<String, String> {
    if let Some(why) = corpus_path_error(name) {
        return Err(format!("creative {name:?} {why}"));
    }
    let path = root.join(name);
    let meta = std::fs::metadata(&path).map_err(|e| format!("creative {name:?}: {e}"))?;
    if !meta.is_file() || meta.len() > MAX_CORPUS_CREATIVE {
        return Err(format!(
            "creative {name:?} is not a file of at most {MAX_CORPUS_CREATIVE} bytes"
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("creative {name:?}: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("creative {name:?} is not UTF-8"))
}

/// The corpus bidder's answer to `request`: for each banner impression, a bid whose `adm` is
/// the corpus creative its `ext.bidder.creative` names (read from `root`), sized by its first
/// format, at its `ext.bidder.price` or [`CORPUS_PRICE`]. Impressions that are not banners, or
/// name no creative, get no bid; `None` when none gets one.
///
/// # Errors
/// A named creative that cannot be sent ([`corpus_creative`]): the test asked for a file
/// that is not there, which should fail loudly, not look like a no-bid.
pub fn corpus_response(root: &Path, request: &Value) -> Result<Option<Value>, String> {
    let imps = request.get("imp").and_then(Value::as_array);
    let mut bids = Vec::new();
    for (i, imp) in imps.into_iter().flatten().enumerate() {
        let Some(banner) = imp.get("banner").filter(|b| b.is_object()) else {
            continue;
        };
        let (Some(impid), Some(name)) = (
            imp.get("id").and_then(Value::as_str),
            param(imp, "creative").and_then(Value::as_str),
        ) else {
            continue;
        };
        let markup = corpus_creative(root, name)?;
        let (w, h) = banner_size(banner);
        let price = param(imp, "price")
            .and_then(Value::as_f64)
            .unwrap_or(CORPUS_PRICE);
        bids.push(json!({
            "id": format!("{CORPUS_SEAT}-{}", i + 1),
            "impid": impid,
            "price": price,
            "adomain": [ADOMAIN],
            "w": w,
            "h": h,
            "crid": format!("{CORPUS_SEAT}-{name}"),
            "mtype": 1,
            "adm": markup,
        }));
    }
    if bids.is_empty() {
        return Ok(None);
    }
    Ok(Some(json!({
        "id": request.get("id").cloned().unwrap_or(Value::Null),
        "cur": "USD",
        "seatbid": [{"seat": CORPUS_SEAT, "bid": bids}],
    })))
}

/// A bidder's answer, for the server to frame and log: the response head, the body, its
/// limits and the log label.
pub struct Reply {
    /// Status and headers (no framing headers; the server adds `Server`).
    pub response: Response<()>,
    /// The body.
    pub payload: Payload,
    /// Body-shaping limits (only `stall` has any).
    pub limits: Limits,
    /// What the log line says about it.
    pub label: String,
}

impl Reply {
    fn new(status: u16, content_type: Option<&'static str>, body: Vec<u8>, label: String) -> Self {
        let mut response = Response::new(());
        *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        if let Some(content_type) = content_type {
            let value = HeaderValue::from_static(content_type);
            response.headers_mut().insert(CONTENT_TYPE, value);
        }
        let payload = if status == 204 {
            Payload::Empty
        } else {
            Payload::Whole(Arc::new(body))
        };
        Reply {
            response,
            payload,
            limits: Limits::default(),
            label,
        }
    }

    fn json(status: u16, body: &Value, label: String) -> Self {
        Reply::new(status, Some(JSON), body.to_string().into_bytes(), label)
    }

    fn error(status: u16, message: &str, label: String) -> Self {
        Reply::json(status, &json!({"error": message}), label)
    }

    /// `200` with `body`, or `204` when there is no bid.
    fn answer(body: Option<Value>, label: String) -> Self {
        match body {
            Some(body) => Reply::json(200, &body, label),
            None => Reply::new(204, None, Vec::new(), format!("{label} no-bid")),
        }
    }
}

/// Answers a request under [`BASE_PATH`] (its body already read), recording it first when
/// it is for a bidder. Sleeps for `slow` before the answer's head. `root` is the server's
/// root, where the corpus bidder finds its creatives.
pub async fn answer(recorder: &Recorder, root: &Path, head: &Parts, body: &[u8]) -> Reply {
    let path = head.uri.path();
    let name = &path[BASE_PATH.len()..];
    if name == "received" {
        return received(recorder, head);
    }
    if name == "win" {
        // The browser fires it (an image); logged like every request, nothing to record.
        return Reply::new(
            200,
            Some("image/gif"),
            PIXEL.to_vec(),
            "bidders=win".to_owned(),
        );
    }
    recorder.record(name, head, body);
    if let Some(partner) = name.strip_suffix(ID_SUFFIX) {
        return id_answer(partner, head, body).await;
    }
    if name == CORPUS_SEAT {
        return tokio::task::block_in_place(|| corpus(root, head, body));
    }
    let Some(bidder) = Bidder::from_name(name) else {
        let message = format!("no bidder {name:?}: fast, slow, misbehave or corpus");
        return Reply::error(404, &message, "bidder=none".to_owned());
    };
    let label = format!("bidder={}", bidder.seat());
    if head.method != Method::POST {
        let mut reply = Reply::error(405, "bidders answer POST", label);
        let allow = HeaderValue::from_static("POST");
        reply.response.headers_mut().insert(ALLOW, allow);
        return reply;
    }
    let request = match parse_request(body) {
        Ok(request) => request,
        Err(e) => return Reply::error(400, &e, label),
    };
    match bidder {
        Bidder::Fast => Reply::answer(bid_response(bidder, &request), label),
        Bidder::Slow => {
            let wait = delay(&request).unwrap_or(SLOW_DEFAULT_DELAY);
            tokio::time::sleep(wait).await;
            let label = format!("{label} delay={}ms", wait.as_millis());
            Reply::answer(bid_response(bidder, &request), label)
        }
        Bidder::Misbehave => {
            let how = first_param(&request, "how").and_then(Value::as_str);
            match how.map(|h| (h, Misbehaviour::from_name(h))) {
                None => Reply::answer(bid_response(bidder, &request), label),
                Some((_, Some(how))) => {
                    let label = format!("{label} how={}", how_name(how));
                    tokio::task::block_in_place(|| misbehave(how, &request, label))
                }
                Some((name, None)) => {
                    let message = format!(
                        "unknown how {name:?}: one of {}",
                        Misbehaviour::NAMES.join(", ")
                    );
                    Reply::error(400, &message, label)
                }
            }
        }
    }
}

/// The ID endpoints of the demo partners of the ID graph: `POST /bidders/fast/id` and
/// `/bidders/slow/id`.
pub const ID_SUFFIX: &str = "/id";

/// `POST /bidders/<fast|slow>/id` with `{"ec":"<edge id>"}`: the partner's ID for that reader,
/// `{"id":"<seat>-uid-<the edge ID's first 16 characters>"}` (`fast` at once, `slow` after
/// [`SLOW_DEFAULT_DELAY`]); `400` without a string `ec`, `404` for any other partner.
async fn id_answer(partner: &str, head: &Parts, body: &[u8]) -> Reply {
    let label = format!("ids={partner}");
    if head.method != Method::POST {
        let mut reply = Reply::error(405, "ID endpoints answer POST", label);
        let allow = HeaderValue::from_static("POST");
        reply.response.headers_mut().insert(ALLOW, allow);
        return reply;
    }
    let bidder = match Bidder::from_name(partner) {
        Some(b @ (Bidder::Fast | Bidder::Slow)) => b,
        _ => return Reply::error(404, "no ID endpoint: fast or slow", label),
    };
    let request = serde_json::from_slice::<Value>(body).ok();
    let Some(ec) = (request.as_ref()).and_then(|r| r.get("ec")?.as_str()) else {
        return Reply::error(400, "the ask has no string ec", label);
    };
    if bidder == Bidder::Slow {
        tokio::time::sleep(SLOW_DEFAULT_DELAY).await;
    }
    let prefix: String = ec.chars().take(16).collect();
    let id = json!({ "id": format!("{}-uid-{prefix}", bidder.seat()) });
    Reply::json(200, &id, label)
}

/// `/bidders/corpus`: [`corpus_response`], `400` for a creative that cannot be sent.
fn corpus(root: &Path, head: &Parts, body: &[u8]) -> Reply {
    let label = format!("bidder={CORPUS_SEAT}");
    if head.method != Method::POST {
        let mut reply = Reply::error(405, "bidders answer POST", label);
        let allow = HeaderValue::from_static("POST");
        reply.response.headers_mut().insert(ALLOW, allow);
        return reply;
    }
    let request = match parse_request(body) {
        Ok(request) => request,
        Err(e) => return Reply::error(400, &e, label),
    };
    match corpus_response(root, &request) {
        Ok(answer) => Reply::answer(answer, label),
        Err(e) => Reply::error(400, &e, label),
    }
}

fn how_name(how: Misbehaviour) -> &'static str {
    Misbehaviour::NAMES
        .into_iter()
        .find(|n| Misbehaviour::from_name(n) == Some(how))
        .unwrap_or("none")
}

/// Placeholder for the literal `1e309` of `nan-price`, which no JSON library writes.
const INFINITE_PRICE: &str = "__demo_origin_1e309__";

/// The misbehaving answer to `request`.
fn misbehave(how: Misbehaviour, request: &Value, label: String) -> Reply {
    let bidder = Bidder::Misbehave;
    // The normal answer, to spoil; an answer with no bid at all has a bid-less seat.
    let mut body = bid_response(bidder, request).unwrap_or_else(|| {
        json!({"id": request["id"], "cur": "USD", "seatbid": [{"seat": bidder.seat(), "bid": []}]})
    });
    let mut bids = |f: &mut dyn FnMut(&mut Value)| {
        if let Some(bids) = body["seatbid"][0]["bid"].as_array_mut() {
            bids.iter_mut().for_each(f);
        }
    };
    match how {
        Misbehaviour::WrongImpid => bids(&mut |b| b["impid"] = json!("nope")),
        Misbehaviour::NegativePrice => bids(&mut |b| b["price"] = json!(-1)),
        Misbehaviour::ScriptAdm => bids(&mut |b| {
            let w = b["w"].as_u64().unwrap_or(300);
            let h = b["h"].as_u64().unwrap_or(250);
            let markup = format!(
                "<script>alert(1)</script><a href=\"javascript:alert(1)\"><img src=\"{CREATIVE_IMAGE}\" width=\"{w}\" height=\"{h}\"></a>"
            );
            b["adm"] = json!(markup);
            b["mtype"] = json!(1);
        }),
        Misbehaviour::OtherCurrency => body["cur"] = json!("EUR"),
        Misbehaviour::NanPrice => {
            if let Some(bids) = body["seatbid"][0]["bid"].as_array_mut() {
                if let Some(first) = bids.first_mut() {
                    let mut infinite = first.clone();
                    first["price"] = json!("NaN");
                    infinite["id"] = json!("misbehave-infinite");
                    infinite["price"] = json!(INFINITE_PRICE);
                    bids.push(infinite);
                }
            }
            let text = body
                .to_string()
                .replace(&format!("\"{INFINITE_PRICE}\""), "1e309");
            return Reply::new(200, Some(JSON), text.into_bytes(), label);
        }
        Misbehaviour::Huge => {
            body["ext"] = json!({"padding": "x".repeat(HUGE_BYTES)});
        }
        Misbehaviour::NotJson => {
            let garbage =
                b"<html><body><h1>Bidder dashboard</h1><p>{\"id\": oops</p>\x00\xff</body>"
                    .to_vec();
            return Reply::new(200, Some("text/html"), garbage, label);
        }
        Misbehaviour::Status500 => {
            return Reply::error(500, "internal bidder error", label);
        }
        Misbehaviour::NoContent => return Reply::new(204, None, Vec::new(), label),
        Misbehaviour::Redirect => {
            let mut reply = Reply::error(302, "moved to /bidders/fast", label);
            let location = HeaderValue::from_static("/bidders/fast");
            reply.response.headers_mut().insert(LOCATION, location);
            return reply;
        }
        Misbehaviour::GzipBomb => {
            let mut reply = Reply::new(200, Some(JSON), Vec::new(), label);
            reply.payload = Payload::Whole(gzip_bomb());
            let gzip = HeaderValue::from_static("gzip");
            reply.response.headers_mut().insert(CONTENT_ENCODING, gzip);
            return reply;
        }
        Misbehaviour::Stall => {
            let stall = delay(request).unwrap_or(STALL);
            let label = format!("{label} stall={}ms", stall.as_millis());
            return stalled(&body, stall, label);
        }
    }
    Reply::json(200, &body, label)
}

/// `200` with the first half of `body` (chunked), then nothing for `stall`, then the
/// connection drops with the body unfinished. Told with the body shaper's own pieces: the
/// replay sends the whole body as two pieces, the second after `stall`, `truncate` cuts it
/// to the first half (so the second piece is empty), and a `die_after` never reached makes
/// the body end in a dropped connection rather than a chunked terminator.
fn stalled(body: &Value, stall: Duration, label: String) -> Reply {
    let text = body.to_string().into_bytes();
    let half = text.len() / 2;
    let chunks = vec![
        TimedChunk {
            len: half,
            at: Duration::ZERO,
        },
        TimedChunk {
            len: text.len() - half,
            at: stall,
        },
    ];
    let mut reply = Reply::new(200, Some(JSON), Vec::new(), label);
    reply.payload = Payload::Replay {
        plain: Arc::new(text),
        encoding: Encoding::Identity,
        chunks: Arc::new(chunks),
        timing: true,
    };
    reply.limits = Limits {
        truncate: Some(half as u64),
        die_after: Some(u64::MAX),
    };
    reply
}

/// The gzip bomb: [`BOMB_BYTES`] zeros, gzip-compressed once (about 50 KiB) and kept.
pub fn gzip_bomb() -> Arc<Vec<u8>> {
    static BOMB: OnceLock<Arc<Vec<u8>>> = OnceLock::new();
    BOMB.get_or_init(|| Arc::new(codec::compress(Encoding::Gzip, &vec![0u8; BOMB_BYTES])))
        .clone()
}

/// One request a bidder route received.
#[derive(Debug, Clone)]
struct Record {
    bidder: String,
    method: String,
    path: String,
    query: String,
    /// Names lowercase, values as received (lossily UTF-8), in order.
    headers: Vec<(String, String)>,
    /// The body, lossily UTF-8, cut to [`MAX_RECORDED_BODY`] bytes.
    body: String,
    /// The body's length as received.
    body_len: usize,
    /// The body's top-level `id`, when it is JSON with a string one.
    id: Option<String>,
    /// Its body's `site.page`, if any.
    page: Option<String>,
    /// Arrival, Unix milliseconds.
    received_unix_ms: u64,
}

impl Record {
    fn to_json(&self) -> Value {
        let headers: Vec<Value> = (self.headers.iter()).map(|(n, v)| json!([n, v])).collect();
        json!({
            "bidder": self.bidder,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": headers,
            "body": self.body,
            "body_len": self.body_len,
            "received_unix_ms": self.received_unix_ms,
        })
    }
}

/// The requests the bidder routes received, newest last, at most [`MAX_RECORDS`].
#[derive(Default)]
pub struct Recorder {
    records: Mutex<VecDeque<Record>>,
}

impl Recorder {
    /// Keeps the request `bidder` received (the oldest kept goes when full).
    pub fn record(&self, bidder: &str, head: &Parts, body: &[u8]) {
        let json = serde_json::from_slice::<Value>(body).ok();
        // A bid request's `id`; an ID ask's is the edge ID it asks about.
        let id = (json.as_ref()).and_then(|v| {
            let id = v.get("id").or_else(|| v.get("ec"))?;
            id.as_str().map(str::to_owned)
        });
        let page =
            (json.as_ref()).and_then(|v| v.get("site")?.get("page")?.as_str().map(str::to_owned));
        let headers = (head.headers.iter())
            .map(|(n, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_ascii_lowercase(), value)
            })
            .collect();
        let received_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let kept = &body[..body.len().min(MAX_RECORDED_BODY)];
        let record = Record {
            bidder: bidder.to_owned(),
            method: head.method.to_string(),
            path: head.uri.path().to_owned(),
            query: head.uri.query().unwrap_or("").to_owned(),
            headers,
            body: String::from_utf8_lossy(kept).into_owned(),
            body_len: body.len(),
            id,
            page,
            received_unix_ms,
        };
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if records.len() == MAX_RECORDS {
            records.pop_front();
        }
        records.push_back(record);
    }

    /// The records whose body's top-level `id` is `id`, in arrival order, as a JSON array.
    pub fn with_id(&self, id: &str) -> Value {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let matching = records.iter().filter(|r| r.id.as_deref() == Some(id));
        Value::Array(matching.map(Record::to_json).collect())
    }

    /// The records whose body's `site.page` contains `page`, in arrival order, as a JSON
    /// array (a navigation's auction has an ID the test cannot know; its page's URL it can).
    pub fn with_page(&self, page: &str) -> Value {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let matching =
            (records.iter()).filter(|r| r.page.as_deref().is_some_and(|p| p.contains(page)));
        Value::Array(matching.map(Record::to_json).collect())
    }
}

/// `GET /bidders/received?id=ID`, or `?page=TEXT` (the records whose `site.page` contains it).
fn received(recorder: &Recorder, head: &Parts) -> Reply {
    let label = "bidders=received".to_owned();
    if head.method != Method::GET {
        let mut reply = Reply::error(405, "received answers GET", label);
        let allow = HeaderValue::from_static("GET");
        reply.response.headers_mut().insert(ALLOW, allow);
        return reply;
    }
    let param = |name: &str| {
        (head.uri.query().unwrap_or("").split('&'))
            .filter_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .next()
            .and_then(percent_decode)
            .and_then(|value| String::from_utf8(value).ok())
    };
    match (param("id"), param("page")) {
        (Some(id), _) => Reply::json(200, &recorder.with_id(&id), label),
        (None, Some(page)) => Reply::json(200, &recorder.with_page(&page), label),
        (None, None) => Reply::error(
            400,
            "received needs ?id=<request id> or ?page=<text>",
            label,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Value {
        json!({
            "id": "auction-1",
            "tmax": 500,
            "imp": [
                {"id": "top", "banner": {"format": [{"w": 728, "h": 90}, {"w": 970, "h": 250}]}},
                {"id": "side", "banner": {"w": 300, "h": 600}, "ext": {"bidder": {"price": 3.25}}},
                {"id": "feed", "native": {"request": "{}"}},
                {"id": "video", "video": {"mimes": ["video/mp4"]}},
            ],
        })
    }

    fn bids(response: &Value) -> &Vec<Value> {
        response["seatbid"][0]["bid"].as_array().unwrap()
    }

    #[test]
    fn one_bid_per_banner_or_native_imp_sized_by_the_first_format() {
        let response = bid_response(Bidder::Fast, &request()).unwrap();
        assert_eq!(response["id"], "auction-1");
        assert_eq!(response["cur"], "USD");
        assert_eq!(response["seatbid"][0]["seat"], "fast");
        let bids = bids(&response);
        let impids: Vec<&str> = bids.iter().map(|b| b["impid"].as_str().unwrap()).collect();
        assert_eq!(impids, ["top", "side", "feed"]);
        let ids: std::collections::HashSet<&str> =
            bids.iter().map(|b| b["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 3);

        let top = &bids[0];
        assert_eq!(
            (top["w"].as_u64(), top["h"].as_u64()),
            (Some(728), Some(90))
        );
        assert_eq!(top["price"], 1.5);
        assert_eq!(top["mtype"], 1);
        assert_eq!(top["adomain"], json!(["demo-advertiser.example"]));
        assert_eq!(
            top["burl"],
            "http://cdn.demo-partner.example/bidders/win?bidder=fast&price=${AUCTION_PRICE}"
        );
        let adm = top["adm"].as_str().unwrap();
        assert!(adm.starts_with("<a href=\"https://ads.demo-partner.example/click?c=fast-top\">"));
        assert!(adm.contains("src=\"http://cdn.demo-partner.example/banner.svg\""));
        assert!(adm.contains("width=\"728\" height=\"90\""));

        let side = &bids[1];
        assert_eq!(
            (side["w"].as_u64(), side["h"].as_u64()),
            (Some(300), Some(600))
        );
        assert_eq!(side["price"], 3.25, "ext.bidder.price overrides");
    }

    #[test]
    fn a_native_imp_gets_a_native_response_as_markup() {
        let response = bid_response(Bidder::Slow, &request()).unwrap();
        let feed = &bids(&response)[2];
        assert_eq!(feed["mtype"], 4);
        assert_eq!(feed["price"], 2.1);
        assert!(feed.get("w").is_none());
        let native: Value = serde_json::from_str(feed["adm"].as_str().unwrap()).unwrap();
        assert_eq!(native["native"]["assets"][0]["id"], 1);
        assert!(native["native"]["assets"][0]["title"]["text"].is_string());
        assert_eq!(
            native["native"]["link"]["url"],
            "https://ads.demo-partner.example/click?c=slow-feed"
        );
    }

    #[test]
    fn nothing_to_bid_on_is_no_bid_and_bad_requests_are_refused() {
        let video_only = json!({"id": "a", "imp": [{"id": "v", "video": {}}]});
        assert_eq!(bid_response(Bidder::Fast, &video_only), None);
        assert!(parse_request(b"{\"id\":\"a\",\"imp\":[]}").is_err());
        assert!(parse_request(b"{\"id\":\"a\"}").is_err());
        assert!(parse_request(b"{\"imp\":[{\"id\":\"1\"}]}").is_err());
        assert!(parse_request(b"{\"id\":\"a\",").is_err());
        assert!(parse_request(b"{\"id\":\"a\",\"imp\":[{\"id\":\"1\"}]}").is_ok());
    }

    #[test]
    fn delay_is_bounded() {
        let with =
            |d: Value| json!({"id": "a", "imp": [{"id": "1", "ext": {"bidder": {"delay_ms": d}}}]});
        assert_eq!(delay(&with(json!(40))), Some(Duration::from_millis(40)));
        assert_eq!(delay(&with(json!(-5))), Some(Duration::ZERO));
        assert_eq!(
            delay(&with(json!(1e12))),
            Some(Duration::from_millis(MAX_DELAY_MS))
        );
        assert_eq!(delay(&with(json!("soon"))), None);
        assert_eq!(delay(&request()), None);
    }

    fn misbehaving(how: Misbehaviour) -> (u16, Vec<u8>) {
        let reply = misbehave(how, &request(), String::new());
        let body = match reply.payload {
            Payload::Whole(body) => body.to_vec(),
            Payload::Empty => Vec::new(),
            other => panic!("{other:?}"),
        };
        (reply.response.status().as_u16(), body)
    }

    #[test]
    fn misbehaviours_spoil_the_answer_as_named() {
        for name in Misbehaviour::NAMES {
            let how = Misbehaviour::from_name(name).unwrap();
            assert_eq!(how_name(how), name);
        }
        let parsed = |how| serde_json::from_slice::<Value>(&misbehaving(how).1).unwrap();
        let wrong = parsed(Misbehaviour::WrongImpid);
        assert!(bids(&wrong).iter().all(|b| b["impid"] == "nope"));
        let negative = parsed(Misbehaviour::NegativePrice);
        assert!(bids(&negative).iter().all(|b| b["price"] == -1));
        assert_eq!(parsed(Misbehaviour::OtherCurrency)["cur"], "EUR");
        let script = parsed(Misbehaviour::ScriptAdm);
        let adm = bids(&script)[0]["adm"].as_str().unwrap();
        assert!(adm.contains("<script>alert(1)</script>"));
        assert!(adm.contains("href=\"javascript:alert(1)\""));

        let (status, nan) = misbehaving(Misbehaviour::NanPrice);
        let nan = String::from_utf8(nan).unwrap();
        assert_eq!(status, 200);
        assert!(nan.contains("\"price\":\"NaN\""), "{nan}");
        assert!(nan.contains("\"price\":1e309"), "{nan}");
        assert!(!nan.contains(INFINITE_PRICE));

        let (status, huge) = misbehaving(Misbehaviour::Huge);
        assert_eq!(status, 200);
        assert!(huge.len() > 2 * 1024 * 1024);
        serde_json::from_slice::<Value>(&huge).unwrap();

        let (status, html) = misbehaving(Misbehaviour::NotJson);
        assert_eq!(status, 200);
        assert!(serde_json::from_slice::<Value>(&html).is_err());
        assert_eq!(misbehaving(Misbehaviour::Status500).0, 500);
        assert_eq!(misbehaving(Misbehaviour::NoContent), (204, Vec::new()));
        let redirect = misbehave(Misbehaviour::Redirect, &request(), String::new());
        assert_eq!(redirect.response.status(), 302);
        assert_eq!(redirect.response.headers()[LOCATION], "/bidders/fast");
    }

    #[test]
    fn the_gzip_bomb_inflates_to_50_mib_of_zeros() {
        use std::io::Read;
        let bomb = gzip_bomb();
        assert!(bomb.len() < 1024 * 1024, "{} compressed bytes", bomb.len());
        let limit = 2 * BOMB_BYTES as u64;
        let mut inflated = flate2::read::GzDecoder::new(&bomb[..]).take(limit);
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0usize;
        loop {
            let n = inflated.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            assert!(buf[..n].iter().all(|&b| b == 0));
            total += n;
        }
        assert!(total >= 50 * 1024 * 1024, "{total}");
    }

    #[test]
    fn the_recorder_keeps_the_last_500_and_finds_by_id() {
        let recorder = Recorder::default();
        let head = |uri: &str| {
            let request = hyper::Request::post(uri)
                .header("Content-Type", "application/json")
                .body(())
                .unwrap();
            request.into_parts().0
        };
        for i in 0..=MAX_RECORDS {
            let body = format!("{{\"id\":\"r{}\"}}", i % 3);
            recorder.record("fast", &head("/bidders/fast?x=1"), body.as_bytes());
        }
        recorder.record("slow", &head("/bidders/slow"), b"not json");
        let r0 = recorder.with_id("r0");
        let r0 = r0.as_array().unwrap();
        // 501 requests with ids r0, r1, r2, …: the first (an r0) is gone.
        assert_eq!(r0.len(), (MAX_RECORDS + 1).div_ceil(3) - 1);
        assert_eq!(r0[0]["bidder"], "fast");
        assert_eq!(r0[0]["query"], "x=1");
        assert_eq!(
            r0[0]["headers"],
            json!([["content-type", "application/json"]])
        );
        assert_eq!(r0[0]["body"], "{\"id\":\"r0\"}");
        assert_eq!(recorder.with_id("nope"), json!([]));
        assert_eq!(recorder.records.lock().unwrap().len(), MAX_RECORDS);
    }
}
