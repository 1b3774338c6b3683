//! Shared pieces of the fuzz targets: how a fuzz input is read, the pipeline driver, an
//! independent reference of the URL rule, and an independent model of Flight rows and of
//! Next.js's string escaping.
//!
//! Every target reads its input the same way ([`split_input`]): the body, then a short
//! trailer that says where the body is cut into chunks and picks options. A file cut from a
//! fixture is a usable seed as it is (its last bytes become a harmless trailer), and
//! `fuzz/make-seeds.py` writes seeds with an explicit trailer.

pub mod flight;
pub mod reference;

use trusted_server_core::{
    BodyPipeline, BodyPlan, Codec, PipelineError, PipelineOptions, PipelineReport, Rewrite, UrlRule,
};

/// The demo origin's host, which every fixture (and so every seed) uses in its URLs.
pub const ORIGIN: &str = "origin.demo-publisher.example";

/// Request authorities shorter and longer than the origin's (equal lengths would hide length
/// bugs), with both schemes.
pub const TARGETS: [(&str, &str); 4] = [
    ("http", "127.0.0.1:7676"),
    ("https", "www.a-much-longer-first-party-host-name.example"),
    ("https", "a.io"),
    ("http", "p.test:8080"),
];

/// A body and how to push it.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The bytes to push.
    pub body: &'a [u8],
    /// Sorted, deduplicated cut points in `0..=body.len()`.
    pub cuts: Vec<usize>,
    /// Option bits; each target says what they mean.
    pub config: u8,
    /// The raw cut values (for targets that use them for more than cuts).
    pub raw_cuts: Vec<u16>,
    /// One-byte chunks were asked for.
    pub bytewise: bool,
}

/// Longest body pushed one byte at a time (a 1-byte chunking of a large input costs seconds).
const MAX_BYTEWISE: usize = 4096;

/// Reads a fuzz input: `body ‖ cuts ‖ config ‖ n`. The last byte's low nibble `n` is the
/// number of cuts, each two little-endian bytes taken modulo `body.len() + 1`; `n == 15` means
/// one-byte chunks. The byte before it is `config`. Inputs shorter than the trailer are all
/// body.
pub fn split_input(data: &[u8]) -> Input<'_> {
    let empty = |body| Input {
        body,
        cuts: Vec::new(),
        config: 0,
        raw_cuts: Vec::new(),
        bytewise: false,
    };
    let Some((&last, rest)) = data.split_last() else {
        return empty(data);
    };
    let n = usize::from(last & 0x0f);
    let pairs = if n == 15 { 0 } else { n };
    let Some((&config, rest)) = rest.split_last() else {
        return empty(data);
    };
    if rest.len() < 2 * pairs {
        return empty(data);
    }
    let (body, spec) = rest.split_at(rest.len() - 2 * pairs);
    let raw_cuts: Vec<u16> = spec
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let cuts = if n == 15 {
        if body.len() <= MAX_BYTEWISE {
            (1..body.len()).collect()
        } else {
            Vec::new()
        }
    } else {
        cut_points(&raw_cuts, body.len())
    };
    Input {
        body,
        cuts,
        config,
        raw_cuts,
        bytewise: n == 15,
    }
}

/// Cut values taken modulo `len + 1`, sorted and deduplicated.
pub fn cut_points(raw: &[u16], len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = raw.iter().map(|&c| usize::from(c) % (len + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The rewrite the service picks for `content_type`.
pub fn rewrite_for(content_type: &str) -> Rewrite {
    match BodyPlan::decide(
        200,
        Some(content_type),
        None,
        PipelineOptions::default().nextjs.enabled,
    ) {
        BodyPlan::Rewrite { rewrite, .. } => rewrite,
        other => panic!("{content_type} is not rewritten: {other:?}"),
    }
}

/// Pipeline options from a config bit: lol_html from the first byte (no lookback) or the
/// default lookback. Neither may change the output.
pub fn options(config: u8) -> PipelineOptions {
    let mut options = PipelineOptions::default();
    if config & 1 != 0 {
        options.html_lookback = 0;
    }
    options
}

/// Pushes `body` cut at `cuts` through a fresh pipeline and finishes it.
pub fn run(
    codec: Codec,
    rewrite: Rewrite,
    rule: &UrlRule,
    options: &PipelineOptions,
    body: &[u8],
    cuts: &[usize],
) -> Result<(Vec<u8>, PipelineReport), PipelineError> {
    let mut pipeline = BodyPipeline::new(codec, rewrite, rule.clone(), options, Vec::new());
    let mut last = 0;
    for (i, &cut) in cuts.iter().enumerate() {
        pipeline.push(&body[last..cut])?;
        // The adapter flushes when the origin pauses, not after every read: flush after every
        // other cut, so both a flushed and an unflushed chunk end are fuzzed.
        if i % 2 == 0 {
            pipeline.flush()?;
        }
        last = cut;
    }
    pipeline.push(&body[last..])?;
    pipeline.finish()
}

/// An identity body run whole and cut at `cuts`: (whole output and report, split output and
/// report). Identity input never gives an error, so one is a failure of the target.
pub fn whole_and_split(
    rewrite: Rewrite,
    rule: &UrlRule,
    options: &PipelineOptions,
    body: &[u8],
    cuts: &[usize],
) -> ((Vec<u8>, PipelineReport), (Vec<u8>, PipelineReport)) {
    let go = |cuts: &[usize]| {
        run(Codec::Identity, rewrite, rule, options, body, cuts)
            .unwrap_or_else(|e| panic!("an identity body cut at {cuts:?} gave an error: {e}"))
    };
    (go(&[]), go(cuts))
}

/// Asserts that the whole and split outputs are the same bytes, showing `body` on failure.
pub fn assert_split_invariant(body: &[u8], cuts: &[usize], whole: &[u8], split: &[u8]) {
    assert!(
        whole == split,
        "cut at {cuts:?}, the output differs:
body  {}
whole {}
split {}",
        show(body),
        show(whole),
        show(split)
    );
}

/// Whether a body starts with a UTF-16 byte order mark: the pipeline then passes it through
/// untouched, whatever its declared type (a byte-wise rewrite could corrupt UTF-16 text).
pub fn utf16_bom(body: &[u8]) -> bool {
    body.starts_with(&[0xff, 0xfe]) || body.starts_with(&[0xfe, 0xff])
}

/// Whether `haystack` contains `needle`, ASCII letters compared case-insensitively.
pub fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// Shows bytes for a failure message.
pub fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}
