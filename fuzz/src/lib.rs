//! Shared pieces of the fuzz targets: how a fuzz input is read, the pipeline driver, an
//! independent reference of the URL rule, and an independent model of Flight rows and of
//! Next.js's string escaping.
//!
//! Every target reads its input the same way ([`split_input`], from the shared test kit
//! `crates/testkit`): the body, then a short trailer that says where the body is cut into
//! chunks and picks options.

pub mod flight;
pub mod reference;

use trusted_server_core::{
    Codec, PipelineError, PageOptions, BodyReport, PageReport, Rewrite, UrlRule,
};
pub use ts_testkit::fuzz_input::{split_input, Input, TARGETS};
pub use ts_testkit::{cut_points, rewrite_for, ORIGIN};

/// Pipeline options from a config bit: lol_html from the first byte (no lookback) or the
/// default lookback. Neither may change the output.
pub fn options(config: u8) -> PageOptions {
    let mut options = PageOptions::default();
    if config & 1 != 0 {
        options.html_lookback = 0;
    }
    options
}

/// Pushes `body` cut at `cuts` through a fresh pipeline and finishes it. The adapter flushes
/// when the origin pauses, not after every read: this flushes after every other cut, so both a
/// flushed and an unflushed chunk end are fuzzed.
pub fn run(
    codec: Codec,
    rewrite: Rewrite,
    rule: &UrlRule,
    options: &PageOptions,
    body: &[u8],
    cuts: &[usize],
) -> Result<(Vec<u8>, BodyReport<PageReport>), PipelineError> {
    let flush = ts_testkit::Flush::EveryOtherPiece;
    ts_testkit::run(codec, rewrite, rule, options, body, cuts, flush)
}

/// An identity body run whole and cut at `cuts`: (whole output and report, split output and
/// report). Identity input never gives an error, so one is a failure of the target.
pub fn whole_and_split(
    rewrite: Rewrite,
    rule: &UrlRule,
    options: &PageOptions,
    body: &[u8],
    cuts: &[usize],
) -> ((Vec<u8>, BodyReport<PageReport>), (Vec<u8>, BodyReport<PageReport>)) {
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

/// A page built from a fuzz input's body over `vocabulary`, and where to cut it: each body
/// byte picks a word (or, past the vocabulary's end, the byte after it is taken as it is); the
/// cuts are one-byte chunks (the first 4 KiB) when asked for, else the input's cut points.
pub fn vocabulary_page(input: &Input<'_>, vocabulary: &[&str]) -> (Vec<u8>, Vec<usize>) {
    let mut page = Vec::new();
    let mut bytes = input.body.iter();
    while let Some(&b) = bytes.next() {
        match vocabulary.get(usize::from(b)) {
            Some(word) => page.extend_from_slice(word.as_bytes()),
            None => page.extend(bytes.next()),
        }
    }
    let cuts = if input.bytewise {
        (1..page.len().min(4096)).collect()
    } else {
        cut_points(&input.raw_cuts, page.len())
    };
    (page, cuts)
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
