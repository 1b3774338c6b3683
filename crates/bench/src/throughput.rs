//! Pipeline throughput against bare lol_html, on real pages fed in 8 KiB chunks; and, on the
//! plain pages, against the plain way to do this job: lol_html with element handlers that
//! rewrite URL attributes ([`run_handlers`], what a typical HTMLRewriter-based proxy does).
//!
//! Every side gets the same bytes in the same chunks. Before anything is timed, each side's
//! output is checked: bare lol_html (no handlers) must return the input unchanged, the
//! pipeline must return exactly the URL rule applied to the input, and the handlers' output
//! must carry the same URL attribute values as the pipeline's. On the captured Next.js
//! pages ([`rsc_pages`]) a plain replacement is not the right answer (`T` row lengths change),
//! so there the pipeline's output is checked row by row with the independent reader in
//! [`crate::flight`], and must not depend on how the input was split; its digest is printed so
//! the caller can check that native and wasm outputs are identical. Rounds are interleaved
//! (bare, pipeline, bare, pipeline, ...) so drift hits both sides alike; medians and min–max are
//! reported.
//!
//! The `inject` side is the pipeline with the first-party script's injection on, as a page
//! navigation gets it (HTML pages only): its output must be the pipeline's plus the tag.

use std::time::{Duration, Instant};

use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::Element;
use lol_html::{element, HtmlRewriter, Settings};
use trusted_server_core::{Codec, Injection, PageOptions, UrlRule};
use ts_testkit::Flush;

/// Size of each pushed chunk.
pub const CHUNK: usize = 8 * 1024;

/// Whether this build has wasm's fixed-width SIMD (`+simd128`, from `.cargo/config.toml`;
/// `false` natively and in a build made with the switch off). [`run_all`] prints it as
/// `build.simd128`, so the benchmark can tell which wasm build it actually ran.
pub const SIMD128: bool = cfg!(target_feature = "simd128");

const ORIGIN: &str = "origin.demo-publisher.example";
const HOMEPAGE: &[u8] = include_bytes!("../../../fixtures/site/index.html");
const ARTICLE: &[u8] = include_bytes!("../../../fixtures/site/news/article.html");
const NEXT_INDEX: &[u8] = include_bytes!("../../../fixtures/nextjs/index.body");
const NEXT_LIVE: &[u8] = include_bytes!("../../../fixtures/nextjs/live.body");
const NEXT_ABOUT: &[u8] = include_bytes!("../../../fixtures/nextjs/about.body");
const NEXT_NONCE: &[u8] = include_bytes!("../../../fixtures/nextjs/nonce.body");
const NEXT_LIVE_FLIGHT: &[u8] = include_bytes!("../../../fixtures/nextjs/live.rsc.body");

const HTML: &str = "text/html; charset=utf-8";
const FLIGHT: &str = "text/x-component";

/// A named input page.
#[derive(Debug, Clone)]
pub struct Page {
    /// Short name used in reports.
    pub name: &'static str,
    /// The page's bytes.
    pub bytes: Vec<u8>,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// A captured Next.js response, checked with [`crate::flight`] instead of a plain
    /// replacement.
    pub rsc: bool,
}

impl Page {
    fn plain(name: &'static str, bytes: Vec<u8>) -> Page {
        Page {
            name,
            bytes,
            content_type: HTML,
            rsc: false,
        }
    }

    fn rsc(name: &'static str, bytes: &[u8], content_type: &'static str) -> Page {
        Page {
            name,
            bytes: bytes.to_vec(),
            content_type,
            rsc: true,
        }
    }

    fn is_html(&self) -> bool {
        self.content_type.starts_with("text/html")
    }

    /// The same page with its Flight marker renamed (`self.__next_X.push(`): the pipeline
    /// then reads a Next.js capture as a plain page (the URL rule alone, no script read as
    /// Flight), which is what the Flight rewriting is measured against.
    pub fn without_flight_marker(&self) -> Page {
        Page {
            bytes: String::from_utf8_lossy(&self.bytes)
                .replace("self.__next_f.push(", "self.__next_X.push(")
                .into_bytes(),
            rsc: false,
            ..self.clone()
        }
    }
}

/// The benchmark pages: the homepage (~35 KB), the article (~42 KB) and a ~1 MB page made of
/// article bodies, so the large case has realistic URL density.
pub fn pages() -> Vec<Page> {
    let mut big = Vec::with_capacity(1 << 20);
    while big.len() < 1 << 20 {
        big.extend_from_slice(ARTICLE);
    }
    vec![
        Page::plain("homepage", HOMEPAGE.to_vec()),
        Page::plain("article", ARTICLE.to_vec()),
        Page::plain("1mb", big),
    ]
}

/// The captured Next.js responses (`fixtures/nextjs`), named as the latency cases that fetch
/// them: the four HTML pages with inline Flight scripts (20–71 KB), and the `/next/live`
/// Flight navigation (`RSC: 1`, `text/x-component`).
pub fn rsc_pages() -> Vec<Page> {
    vec![
        Page::rsc("next", NEXT_INDEX, HTML),
        Page::rsc("next_live", NEXT_LIVE, HTML),
        Page::rsc("next_about", NEXT_ABOUT, HTML),
        Page::rsc("next_nonce", NEXT_NONCE, HTML),
        Page::rsc("next_live_rsc", NEXT_LIVE_FLIGHT, FLIGHT),
    ]
}

/// Pathological markup, measured for its floor rather than its ratio: a Flight script, so that
/// the HTML stage needs lol_html's structure from the start, then 1 MiB of empty
/// `<script></script>` elements. Every script is a candidate Next.js Flight script, so the
/// HTML stage's per-script work is all there is; a page of plain text runs at hundreds of MB/s.
pub fn pathological_pages() -> Vec<Page> {
    let mut scripts = Vec::with_capacity(1 << 20);
    scripts.extend_from_slice(b"<script>self.__next_f.push([1,\"x\"])</script>");
    while scripts.len() < 1 << 20 {
        scripts.extend_from_slice(b"<script></script>");
    }
    vec![Page::plain("scripts", scripts)]
}

/// Every page the tool measures: [`pages`], then [`rsc_pages`], then [`pathological_pages`].
pub fn all_pages() -> Vec<Page> {
    let mut all = pages();
    all.extend(rsc_pages());
    all.extend(pathological_pages());
    all
}

fn rule() -> UrlRule {
    UrlRule::new(ORIGIN, "http", "127.0.0.1:7676")
}

/// Bare lol_html with no handlers: the ceiling for any lol_html-based rewriter.
pub fn run_bare(input: &[u8]) -> Vec<u8> {
    run_lol_html(Settings::new(), input)
}

/// lol_html with `settings` over `input` in [`CHUNK`]-byte writes: its output.
fn run_lol_html(settings: Settings<'_, '_>, input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() + input.len() / 8);
    let mut rewriter = HtmlRewriter::new(settings, |c: &[u8]| out.extend_from_slice(c));
    for chunk in input.chunks(CHUNK) {
        rewriter.write(chunk).expect("lol_html accepts the page");
    }
    rewriter.end().expect("lol_html ends");
    out
}

/// One element handler per [`URL_ATTRIBUTES`] entry, called with the attribute's name and
/// value on every element that has it.
fn on_url_attributes<F>(on: F) -> Settings<'static, 'static>
where
    F: Fn(&'static str, String, &mut Element) -> lol_html::HandlerResult + Clone + 'static,
{
    URL_ATTRIBUTES
        .iter()
        .map(|&name| {
            let on = on.clone();
            element!(format!("[{name}]"), move |el: &mut Element| {
                match el.get_attribute(name) {
                    Some(value) => on(name, value, el),
                    None => Ok(()),
                }
            })
        })
        .fold(Settings::new(), Settings::append_element_content_handler)
}

/// URL attributes the handler-based rewriter ([`run_handlers`]) rewrites.
pub const URL_ATTRIBUTES: [&str; 8] = [
    "href",
    "src",
    "srcset",
    "action",
    "formaction",
    "poster",
    "imagesrcset",
    "content",
];

/// The plain way: lol_html with one element handler per URL attribute, each applying the URL
/// rule to the attribute's value and setting it when it changed. It rewrites attributes only,
/// not text, inline scripts or styles, and knows nothing of Flight payloads.
pub fn run_handlers(input: &[u8]) -> Vec<u8> {
    let rule = rule();
    let settings = on_url_attributes(move |name, value, el| {
        let rewritten = rule.rewrite_all(value.as_bytes());
        if rewritten != value.as_bytes() {
            el.set_attribute(name, &String::from_utf8_lossy(&rewritten))?;
        }
        Ok(())
    });
    run_lol_html(settings, input)
}

/// Every URL attribute's value in `html`, in document order, as `(attribute, value)`.
fn url_attribute_values(html: &[u8]) -> Vec<(&'static str, String)> {
    let found = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&found);
    let settings = on_url_attributes(move |name, value, _| {
        sink.borrow_mut().push((name, value));
        Ok(())
    });
    run_lol_html(settings, html);
    found.take()
}

/// The full pipeline (identity coding, the stage `page`'s content type selects, URL rule,
/// batched output), fed in [`CHUNK`]-byte chunks.
pub fn run_pipeline(page: &Page) -> Vec<u8> {
    run_pipeline_split(page, CHUNK)
}

/// [`run_pipeline`] with the script's injection on.
pub fn run_inject(page: &Page) -> Vec<u8> {
    run_pipeline_with(page, CHUNK, Some(injection()))
}

fn injection() -> Injection {
    Injection {
        src: "/static/tsjs=0123456789abcdef.js".into(),
        nonce: None,
    }
}

fn run_pipeline_split(page: &Page, chunk: usize) -> Vec<u8> {
    run_pipeline_with(page, chunk, None)
}

fn run_pipeline_with(page: &Page, chunk: usize, inject: Option<Injection>) -> Vec<u8> {
    let options = PageOptions {
        inject,
        ..PageOptions::default()
    };
    let rewrite = ts_testkit::rewrite_for(page.content_type);
    let sink = Vec::with_capacity(page.bytes.len() + page.bytes.len() / 8);
    let p = trusted_server_core::page::pipeline(Codec::Identity, rewrite, rule(), &options, sink);
    // Each piece leaves before the next, as bare lol_html's output does: the adapter's case
    // when the origin pauses after every read, its most expensive.
    let pieces = page.bytes.chunks(chunk);
    ts_testkit::drive(p, pieces, Flush::EveryPiece, || {})
        .expect("in-memory pipeline cannot fail")
        .0
}

/// Checks both sides' outputs before timing.
///
/// # Errors
/// A message naming the page and side whose output is wrong.
pub fn verify(page: &Page) -> Result<(), String> {
    if run_bare(&page.bytes) != page.bytes {
        return Err(format!("{}: bare lol_html changed the page", page.name));
    }
    let out = run_pipeline(page);
    if page.is_html() {
        let with = run_inject(page);
        let tag = injection().tag().into_bytes();
        let at = with.windows(tag.len()).position(|w| w == tag.as_slice());
        let rest = at.map(|at| [&with[..at], &with[at + tag.len()..]].concat());
        if rest.as_deref() != Some(&out[..]) {
            return Err(format!(
                "{}: with injection, the output is not the pipeline's plus the tag",
                page.name
            ));
        }
    }
    if !page.rsc {
        if out != rule().rewrite_all(&page.bytes) {
            return Err(format!(
                "{}: pipeline output differs from the URL rule",
                page.name
            ));
        }
        if page.name != "scripts" {
            let want = url_attribute_values(&out);
            let got = url_attribute_values(&run_handlers(&page.bytes));
            if got != want || want.is_empty() {
                let first = got.iter().zip(&want).position(|(a, b)| a != b);
                return Err(format!(
                    "{}: the handler rewriter's URL attributes differ from the pipeline's \
                     ({} against {} values, first difference at {first:?})",
                    page.name,
                    got.len(),
                    want.len()
                ));
            }
        }
        return Ok(());
    }
    crate::flight::check_rewrite(page.is_html(), &page.bytes, &out, &rule())
        .map_err(|e| format!("{}: pipeline output: {e}", page.name))?;
    if out == page.bytes {
        return Err(format!("{}: the pipeline rewrote nothing", page.name));
    }
    if run_pipeline_split(page, page.bytes.len()) != out {
        return Err(format!(
            "{}: pipeline output depends on how the input is split",
            page.name
        ));
    }
    Ok(())
}

/// Median, min and max of a set of samples, in MB/s.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    /// Median MB/s (10^6 bytes per second).
    pub median: f64,
    /// Slowest round.
    pub min: f64,
    /// Fastest round.
    pub max: f64,
}

fn rate(bytes: usize, times: &mut [Duration]) -> Rate {
    times.sort_unstable();
    let mbps = |d: Duration| bytes as f64 / d.as_secs_f64().max(1e-9) / 1e6;
    Rate {
        median: mbps(times[times.len() / 2]),
        min: mbps(times[times.len() - 1]),
        max: mbps(times[0]),
    }
}

/// Result for one page.
#[derive(Debug, Clone, Copy)]
pub struct PageResult {
    /// Bare lol_html.
    pub bare: Rate,
    /// The pipeline.
    pub pipeline: Rate,
    /// lol_html with URL attribute handlers ([`run_handlers`]), on the plain pages.
    pub handlers: Option<Rate>,
    /// The pipeline with the script's injection ([`run_inject`]), on the HTML pages.
    pub inject: Option<Rate>,
}

/// Whether [`run_handlers`] is measured on `page`: the plain pages (it cannot rewrite Flight
/// payloads, and the pathological page has no attributes).
fn has_handlers_side(page: &Page) -> bool {
    !page.rsc && page.name != "scripts"
}

/// Times both sides on `page` for `rounds` interleaved rounds. Each round processes ~16 MB
/// (tens of milliseconds), so timer resolution and scheduler blips matter little.
pub fn measure(page: &Page, rounds: usize) -> PageResult {
    // The pathological page runs at tens of MB/s: one pass per round keeps it to seconds.
    let round_bytes = if page.name == "scripts" {
        1
    } else {
        16_000_000
    };
    let reps = (round_bytes / page.bytes.len()).max(1);
    let mut bare = Vec::with_capacity(rounds);
    let mut pipeline = Vec::with_capacity(rounds);
    let mut handlers = Vec::with_capacity(rounds);
    let mut inject = Vec::with_capacity(rounds);
    // Warm-up.
    std::hint::black_box(run_bare(&page.bytes));
    std::hint::black_box(run_pipeline(page));
    for _ in 0..rounds {
        if has_handlers_side(page) {
            let t = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(run_handlers(std::hint::black_box(&page.bytes)));
            }
            handlers.push(t.elapsed() / reps as u32);
        }
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(run_bare(std::hint::black_box(&page.bytes)));
        }
        bare.push(t.elapsed() / reps as u32);
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(run_pipeline(std::hint::black_box(page)));
        }
        pipeline.push(t.elapsed() / reps as u32);
        if page.is_html() {
            let t = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(run_inject(std::hint::black_box(page)));
            }
            inject.push(t.elapsed() / reps as u32);
        }
    }
    PageResult {
        bare: rate(page.bytes.len(), &mut bare),
        pipeline: rate(page.bytes.len(), &mut pipeline),
        handlers: (!handlers.is_empty()).then(|| rate(page.bytes.len(), &mut handlers)),
        inject: (!inject.is_empty()).then(|| rate(page.bytes.len(), &mut inject)),
    }
}

/// Runs everything and returns `key=value` lines: `<page>.<side>.{median,min,max}` in MB/s
/// (sides `bare`, `pipeline`, `handlers` on the plain pages, `inject` on the HTML pages),
/// `<page>.bytes`, and for the RSC pages `<page>.digest` (FNV-1a of the pipeline's output, in
/// hex), and `build.simd128` ([`SIMD128`]).
///
/// # Errors
/// If an output check fails.
pub fn run_all(rounds: usize) -> Result<Vec<String>, String> {
    let mut lines = vec![format!("build.simd128={SIMD128}")];
    for page in all_pages() {
        verify(&page)?;
        if page.rsc {
            let digest = crate::flight::digest(&run_pipeline(&page));
            lines.push(format!("{}.digest={digest:016x}", page.name));
        }
        let r = measure(&page, rounds);
        let sides = [
            ("bare", Some(r.bare)),
            ("pipeline", Some(r.pipeline)),
            ("handlers", r.handlers),
            ("inject", r.inject),
        ];
        for (side, rate) in sides.into_iter().filter_map(|(s, r)| Some((s, r?))) {
            lines.push(format!("{}.{side}.median={:.2}", page.name, rate.median));
            lines.push(format!("{}.{side}.min={:.2}", page.name, rate.min));
            lines.push(format!("{}.{side}.max={:.2}", page.name, rate.max));
        }
        lines.push(format!("{}.bytes={}", page.name, page.bytes.len()));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_verify_on_every_page() {
        for page in all_pages() {
            verify(&page).unwrap();
        }
    }

    #[test]
    fn verification_catches_a_wrong_output() {
        // A page whose URLs the rule changes: the pipeline must not equal the bare output.
        let page = &pages()[1];
        assert_ne!(run_pipeline(page), run_bare(&page.bytes));
    }

    #[test]
    fn the_attribute_check_sees_what_the_handlers_rewrite() {
        // The handlers change URL attributes, so comparing their values is not vacuous.
        for page in pages() {
            let before = url_attribute_values(&page.bytes);
            let after = url_attribute_values(&run_handlers(&page.bytes));
            assert_eq!(before.len(), after.len(), "{}", page.name);
            assert!(before != after, "{}", page.name);
        }
    }

    #[test]
    fn a_plain_replacement_is_wrong_on_the_rsc_pages() {
        // The reason these pages get the Flight check: the URL rule changes `T` row lengths.
        for page in rsc_pages() {
            let plain = rule().rewrite_all(&page.bytes);
            assert!(
                crate::flight::check_rewrite(page.is_html(), &page.bytes, &plain, &rule()).is_err(),
                "{}",
                page.name
            );
        }
    }
}
