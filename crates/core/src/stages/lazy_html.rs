//! The HTML stage as a page gets it: lol_html only from the point a page needs it.
//!
//! [`HtmlStage`] runs lol_html to find two things: Next.js Flight scripts, whose text goes to
//! the RSC stage, and `<meta>` tags declaring a charset in which bytes must not be rewritten.
//! Everywhere else its output is the URL rule applied to the document's bytes in order, one
//! replacer across markup and script text. Registering those element handlers sends every
//! element through lol_html's selector VM, which doubles lol_html's cost, and most pages
//! have neither a Flight script nor such a `<meta>`.
//!
//! So this stage starts *plain*: it applies the URL rule to the bytes directly and scans them
//! for anything that could make [`HtmlStage`]'s output differ, a *trigger*:
//!
//! * the Flight marker `self.__next_f.push(` anywhere (a Flight script's text must start with
//!   it, so a page without it has none);
//! * a `<meta` tag, in any letter case, that declares a charset that is not safe to rewrite,
//!   read as lol_html reads it (the scan follows its tokenizer's attribute states), or one not
//!   wholly in hand. `<meta charset="utf-8">` is not a trigger.
//!
//! The scan is conservative: a marker in a comment or a `<meta` inside a script is a trigger
//! too. At the first trigger, before any byte of the input that holds it is rewritten, the
//! stage replays the document so far through [`ScannedHtml`], which reads the structure byte by
//! byte as lol_html's tokenizer does (`super::html_scan`) and writes it the way [`HtmlStage`]
//! does (`super::segments`), and hands over to it. A Next.js page needs lol_html's structure
//! only to find its Flight scripts, and this reading finds them at a fraction of lol_html's
//! cost. Where the reading cannot be sure to agree with lol_html (an unsafe `<meta>`, a script
//! in SVG, `<!--` inside a script, see `html_scan`), the stage replays the document again,
//! through a fresh [`HtmlStage`], and hands over to that. The output is exactly
//! [`HtmlStage`]'s at every split of the input:
//!
//! * Until a trigger, [`HtmlStage`] would also have applied the one URL rule to every byte: a
//!   Flight script starts only after a complete marker, and raw pass-through only at a `<meta>`
//!   (or a lol_html bail-out, which needs a tag of 8 MiB, more than the replay ever holds).
//! * The bytes the plain stage wrote were decided by the rule without seeing a trigger, so
//!   they are a prefix of [`HtmlStage`]'s output.
//! * [`ScannedHtml`] gives its writer the same bytes and the same marks as lol_html's handlers
//!   give [`HtmlStage`]'s, but only once they are final (it holds a construct not wholly in
//!   hand), so what it wrote is a prefix of [`HtmlStage`]'s output too.
//! * Each replay reproduces a prefix of that output. It is dropped up to the length already
//!   written; if the replay wrote less (an unfinished tag is held, a script's first bytes are
//!   held until its kind is known), as many bytes of what follows are dropped instead.
//!
//! The replay needs the input so far, which costs memory: a page that grows past
//! [`LOOKBACK_MAX`] hands over to lol_html at that point. Its cost is then [`HtmlStage`]'s
//! plus the pass over the first [`LOOKBACK_MAX`] bytes.
//!
//! Not foreseen, in the plain mode only: lol_html also gives up when its stack of open
//! elements outgrows its memory limit (200,000 `<div>`s never closed, 1 MB, do it; 20,000 do
//! not); the plain stage then goes on rewriting where lol_html would pass the rest through.
//! The byte-level reading counts open elements and hands over long before.

use lol_html::AsciiCompatibleEncoding;

use crate::body::stage::BodyStage;
use crate::stages::charset::{scan_metas, MetaScan};
use crate::stages::html::{HtmlReport, HtmlStage};
use crate::stages::scanned_html::ScannedHtml;
use crate::stages::segments::FLIGHT_MARKER;
use crate::url_rewrite::{StreamReplacer, UrlRule};

/// Most input kept for a replay. Larger than all but the largest HTML documents (the HTTP
/// Archive's 90th percentile is around 150 KB), small next to the 8 MiB lol_html may hold.
pub const LOOKBACK_MAX: usize = 2 << 20;

/// The streaming HTML rewriter a page gets. See the module docs.
#[derive(Debug)]
pub struct LazyHtml {
    mode: Mode,
    /// Every input byte so far, for a replay; not kept once lol_html runs.
    seen: Lookback,
    /// Output bytes written so far, before lol_html runs.
    written: usize,
    rule: UrlRule,
    encoding: AsciiCompatibleEncoding,
    flight_limit: Option<usize>,
    /// At most [`LOOKBACK_MAX`] by default.
    lookback_max: usize,
}

#[derive(Debug)]
enum Mode {
    Plain(Box<Plain>),
    Scanned {
        stage: Box<ScannedHtml>,
        /// Output still to drop: bytes the stage before wrote that the replay had not.
        skip: usize,
    },
    Structured {
        stage: Box<HtmlStage>,
        /// As for `Scanned`.
        skip: usize,
    },
}

/// Before the first trigger.
#[derive(Debug)]
struct Plain {
    replacer: StreamReplacer,
    /// The last input bytes, where a Flight marker cut by a chunk boundary starts.
    tail: Vec<u8>,
    /// The end of the input, from a `<` that may start a `<meta` tag not yet complete: held
    /// back from the replacer until the tag's verdict is known.
    held: Vec<u8>,
    encoding: AsciiCompatibleEncoding,
}

impl Plain {
    /// Takes `input` unless it holds a trigger; `false` leaves everything as it was.
    fn take(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        if has_marker(&self.tail, input) {
            return false;
        }
        // Held bytes are scanned again with what follows them (a copy, but only of an input
        // that comes after a chunk boundary inside a tag).
        let joined;
        let work = if self.held.is_empty() {
            input
        } else {
            joined = [self.held.as_slice(), input].concat();
            joined.as_slice()
        };
        let decided = match scan_metas(work, self.encoding.into()) {
            MetaScan::Trigger => return false,
            MetaScan::Clear => work.len(),
            MetaScan::Incomplete(at) => at,
        };
        self.replacer.write(&work[..decided], out);
        self.held = work[decided..].to_vec();
        let keep = FLIGHT_MARKER.len() - 1;
        if input.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&input[input.len() - keep..]);
        } else {
            self.tail.extend_from_slice(input);
            let excess = self.tail.len().saturating_sub(keep);
            self.tail.drain(..excess);
        }
        true
    }
}

/// Input kept for the replay, in blocks: one growing buffer would be copied each time it
/// doubles, and blocks this size are reused by the allocator instead of mapped afresh. The
/// first block is only as large as the first piece needs (a small page never takes a whole
/// block of fresh memory); the ones after it are whole blocks.
#[derive(Debug, Default)]
struct Lookback {
    blocks: Vec<Vec<u8>>,
    len: usize,
}

impl Lookback {
    const BLOCK: usize = 64 * 1024;
    /// The least a first block takes.
    const FIRST: usize = 4 * 1024;

    fn push(&mut self, mut input: &[u8]) {
        self.len += input.len();
        while !input.is_empty() {
            let block = match self.blocks.last_mut() {
                Some(block) if block.len() < block.capacity() => block,
                _ => {
                    let size = match self.blocks.is_empty() {
                        true => input
                            .len()
                            .next_power_of_two()
                            .clamp(Self::FIRST, Self::BLOCK),
                        false => Self::BLOCK,
                    };
                    self.blocks.push(Vec::with_capacity(size));
                    self.blocks.last_mut().expect("just pushed")
                }
            };
            let n = input.len().min(block.capacity() - block.len());
            block.extend_from_slice(&input[..n]);
            input = &input[n..];
        }
    }
}

impl LazyHtml {
    /// A stage for a document in `encoding`, with [`HtmlStage::new`]'s arguments, keeping at
    /// most `lookback_max` bytes for a replay (past that, lol_html takes over).
    pub fn new(
        rule: UrlRule,
        encoding: AsciiCompatibleEncoding,
        flight_limit: Option<usize>,
        lookback_max: usize,
    ) -> Self {
        LazyHtml {
            mode: Mode::Plain(Box::new(Plain {
                replacer: StreamReplacer::new(rule.clone()),
                tail: Vec::new(),
                held: Vec::new(),
                encoding,
            })),
            seen: Lookback::default(),
            written: 0,
            rule,
            encoding,
            flight_limit,
            lookback_max,
        }
    }

    /// Which reader runs: `"plain"`, `"scanned"` or `"structured"` (lol_html).
    #[cfg(test)]
    pub fn mode(&self) -> &'static str {
        match self.mode {
            Mode::Plain(_) => "plain",
            Mode::Scanned { .. } => "scanned",
            Mode::Structured { .. } => "structured",
        }
    }

    /// Whether `input` still fits in the lookback.
    fn fits(&self, input: &[u8]) -> bool {
        self.seen.len + input.len() <= self.lookback_max
    }

    /// At the first trigger: replays the input so far through the byte-level stage and
    /// continues with it, or with lol_html if that stage cannot read the input so far.
    fn scan(&mut self, out: &mut Vec<u8>) {
        let mut stage = Box::new(ScannedHtml::new(
            self.rule.clone(),
            self.encoding,
            self.flight_limit,
        ));
        let mut replayed = Vec::with_capacity(self.seen.len + self.seen.len / 8);
        for block in &self.seen.blocks {
            if !stage.write(block, &mut replayed) {
                return self.structure(out);
            }
        }
        let skip = self.catch_up(&replayed, out);
        self.mode = Mode::Scanned { stage, skip };
    }

    /// Replays the input so far through a fresh [`HtmlStage`] and continues with it.
    fn structure(&mut self, out: &mut Vec<u8>) {
        let mut stage = Box::new(HtmlStage::new(
            self.rule.clone(),
            self.encoding,
            self.flight_limit,
        ));
        let mut replayed = Vec::with_capacity(self.seen.len + self.seen.len / 8);
        for block in &self.seen.blocks {
            stage.write(block, &mut replayed);
        }
        let skip = self.catch_up(&replayed, out);
        self.seen = Lookback::default();
        self.mode = Mode::Structured { stage, skip };
    }

    /// A replay's output and what was written before it are prefixes of the same output
    /// (module docs): writes what has not been written, or returns how much of what follows
    /// has.
    fn catch_up(&mut self, replayed: &[u8], out: &mut Vec<u8>) -> usize {
        match replayed.get(self.written..) {
            Some(rest) => {
                out.extend_from_slice(rest);
                self.written += rest.len();
                0
            }
            None => self.written - replayed.len(),
        }
    }
}

impl BodyStage for LazyHtml {
    type Report = HtmlReport;

    /// Rewrites `input`, appending decided output to `out`.
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        if let Mode::Plain(plain) = &mut self.mode {
            if self.seen.len + input.len() <= self.lookback_max && plain.take(input, out) {
                self.seen.push(input);
                self.written += out.len() - start;
                return;
            }
            if self.fits(input) {
                self.scan(out);
            } else {
                self.structure(out);
            }
        }
        if let Mode::Scanned { stage, skip } = &mut self.mode {
            if self.seen.len + input.len() <= self.lookback_max {
                self.seen.push(input);
                let start = out.len();
                let decided = stage.write(input, out);
                drop_skipped(out, start, skip);
                self.written += out.len() - start;
                if !decided {
                    // The replay holds this input too.
                    self.structure(out);
                }
                return;
            }
            self.structure(out);
        }
        if let Mode::Structured { stage, skip } = &mut self.mode {
            let start = out.len();
            stage.write(input, out);
            drop_skipped(out, start, skip);
        }
    }

    /// Ends the document; reports what the HTML stage did, and which reader ran.
    fn finish(self, out: &mut Vec<u8>) -> HtmlReport {
        match self.mode {
            Mode::Plain(mut plain) => {
                // A tag cut off by the end of the document is text, not a `<meta>`.
                plain.replacer.write(&plain.held, out);
                plain.replacer.finish(out);
                HtmlReport::default()
            }
            Mode::Scanned { stage, mut skip } => {
                let start = out.len();
                let report = stage.finish(out);
                drop_skipped(out, start, &mut skip);
                debug_assert_eq!(skip, 0, "the replay wrote less than the plain stage");
                report
            }
            Mode::Structured { stage, mut skip } => {
                let start = out.len();
                let report = stage.finish(out);
                drop_skipped(out, start, &mut skip);
                debug_assert_eq!(skip, 0, "the replay wrote less than the stage before");
                report
            }
        }
    }
}

/// Drops up to `skip` bytes of the output appended to `out` from `start` on.
fn drop_skipped(out: &mut Vec<u8>, start: usize, skip: &mut usize) {
    if *skip > 0 {
        let n = (*skip).min(out.len() - start);
        out.drain(start..start + n);
        *skip -= n;
    }
}

/// Whether `input`, the bytes after `overlap` (the end of the input before it), holds the
/// Flight marker, or completes one started in `overlap`.
fn has_marker(overlap: &[u8], input: &[u8]) -> bool {
    const SEAM: usize = 2 * (FLIGHT_MARKER.len() - 1);
    let seam_len = input.len().min(FLIGHT_MARKER.len() - 1);
    let mut buffer = [0u8; SEAM];
    buffer[..overlap.len()].copy_from_slice(overlap);
    buffer[overlap.len()..overlap.len() + seam_len].copy_from_slice(&input[..seam_len]);
    let seam = &buffer[..overlap.len() + seam_len];
    seam.windows(FLIGHT_MARKER.len())
        .any(|w| w == FLIGHT_MARKER)
        || has_whole_marker(input)
}

/// Whether `bytes` holds the whole Flight marker. It is found from its `__`: `_` is rare in
/// markup, and a one-byte scan is cheap on every target (a substring search without SIMD, as
/// in wasm, costs several times more).
fn has_whole_marker(bytes: &[u8]) -> bool {
    const AT: usize = FLIGHT_MARKER.len() - b"__next_f.push(".len();
    memchr::memchr_iter(b'_', bytes).any(|i| i >= AT && bytes[i - AT..].starts_with(FLIGHT_MARKER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ORIGIN: &str = "origin.example.com";

    fn utf8() -> AsciiCompatibleEncoding {
        AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap()
    }

    fn rule() -> UrlRule {
        UrlRule::new(ORIGIN, "https", "www.pub.test")
    }

    /// The rule for the fixture site's pages.
    fn site_rule() -> UrlRule {
        UrlRule::new("origin.demo-publisher.example", "https", "www.pub.test")
    }

    /// The lazy stage's output for `input` cut at `cuts`, and whether it handed over.
    fn lazy(input: &[u8], cuts: &[usize], flight: bool, lookback_max: usize) -> (Vec<u8>, bool) {
        lazy_with(rule(), input, cuts, flight, lookback_max)
    }

    fn lazy_with(
        rule: UrlRule,
        input: &[u8],
        cuts: &[usize],
        flight: bool,
        lookback_max: usize,
    ) -> (Vec<u8>, bool) {
        let mut stage = LazyHtml::new(rule, utf8(), flight.then_some(64 * 1024), lookback_max);
        let mut out = Vec::new();
        let mut from = 0;
        for &cut in cuts.iter().chain([&input.len()]) {
            stage.write(&input[from..cut], &mut out);
            from = cut;
        }
        let structured = stage.mode() != "plain";
        stage.finish(&mut out);
        (out, structured)
    }

    /// What lol_html's stage writes for `input` in one piece: the reference.
    fn structured(input: &[u8], flight: bool) -> Vec<u8> {
        structured_with(rule(), input, flight)
    }

    fn structured_with(rule: UrlRule, input: &[u8], flight: bool) -> Vec<u8> {
        let mut stage = HtmlStage::new(rule, utf8(), flight.then_some(64 * 1024));
        let mut out = Vec::new();
        stage.write(input, &mut out);
        stage.finish(&mut out);
        out
    }

    fn every_cut(input: &[u8]) -> impl Iterator<Item = Vec<usize>> + '_ {
        (0..=input.len()).map(|i| vec![i])
    }

    #[test]
    fn a_page_without_triggers_never_needs_lol_html() {
        let page = include_bytes!("../../../../fixtures/site/index.html");
        for cuts in [vec![], (1..page.len()).step_by(97).collect()] {
            let (out, handed_over) = lazy_with(site_rule(), page, &cuts, true, LOOKBACK_MAX);
            assert!(!handed_over);
            assert!(out == structured_with(site_rule(), page, true));
            assert!(out != page, "the page has URLs to rewrite");
        }
    }

    #[test]
    fn a_safe_meta_cut_anywhere_is_no_trigger() {
        let page = b"<head><META charset='UTF-8'><meta http-equiv=Content-Type content=\"text/html; charset=utf-8\"><meta name=x content=\"a &amp; \xc3\xa9\"></head><a href=//origin.example.com/a>";
        for cuts in every_cut(page) {
            let (out, handed_over) = lazy(page, &cuts, true, LOOKBACK_MAX);
            assert!(!handed_over, "cut at {cuts:?}");
            assert_eq!(out, structured(page, true), "cut at {cuts:?}");
        }
    }

    #[test]
    fn an_unsafe_charset_or_a_flight_marker_hands_over_at_every_cut() {
        let pages: [&[u8]; 5] = [
            b"<a href=//origin.example.com/1><meta charset=shift_jis><a href=//origin.example.com/2>",
            b"<a href=//origin.example.com/1><MeTa\nhttp-equiv='content-type' content='text/html;charset=big5'>//origin.example.com/2",
            b"<a href=//origin.example.com/1><meta charset=gbk charset=utf-8>//origin.example.com/2",
            b"<p>https://origin.example.com/</p><script>self.__next_f.push([1,\"5:T1c,https://origin.example.com/x\"])</script>",
            b"<p>https://origin.example.com/</p><script> self.__next_f.push([1,\"https://origin.example.com/\"])</script><p>//origin.example.com/",
        ];
        for page in pages {
            let want = structured(page, true);
            assert_ne!(
                want,
                rule().rewrite_all(page),
                "{}",
                String::from_utf8_lossy(page)
            );
            for cuts in every_cut(page) {
                let (out, handed_over) = lazy(page, &cuts, true, LOOKBACK_MAX);
                assert!(handed_over, "cut at {cuts:?}");
                assert_eq!(
                    out,
                    want,
                    "cut at {cuts:?} of {}",
                    String::from_utf8_lossy(page)
                );
            }
        }
    }

    #[test]
    fn a_page_longer_than_the_lookback_hands_over_with_the_same_output() {
        let page = include_bytes!("../../../../fixtures/site/news/article.html");
        for max in [0, 1, 100, 4096, page.len() - 1] {
            let cuts: Vec<usize> = (1..page.len()).step_by(1000).collect();
            let (out, handed_over) = lazy_with(site_rule(), page, &cuts, true, max);
            assert!(handed_over, "lookback {max}");
            assert!(
                out == structured_with(site_rule(), page, true),
                "lookback {max}"
            );
        }
    }

    /// A Flight script, its string escaped as Next.js escapes it.
    fn push(text: &str) -> String {
        format!(
            "<script>self.__next_f.push([1,\"{}\"])</script>",
            crate::stages::rsc::next_js_escape(text)
        )
    }

    #[test]
    fn a_next_js_page_stays_off_lol_html_with_the_same_output() {
        let rows = "0:[\"$\",\"a\",null,{\"href\":\"https://origin.example.com/a\"}]\n3:T2a,https://origin.example.com/abcdefghijklmn\n";
        let page = format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>a <b></title>\
             <link href=\"//origin.example.com/c.css\"></head><body><!--$--><div hidden>\
             <template data-dgst=x></template><svg viewBox='0 0 1 1'><path d='M0'/></svg>\
             {}<p title='<script>'>https://origin.example.com/</p>{}{}<!--/$--></body></html>",
            push(&rows[..30]),
            push(&rows[30..]),
            push("4:I[\"x\"]\n"),
        );
        let page = page.as_bytes();
        let want = structured(page, true);
        assert_ne!(
            want,
            rule().rewrite_all(page),
            "the Flight rows are rewritten"
        );
        for cuts in every_cut(page) {
            let mut stage = LazyHtml::new(rule(), utf8(), Some(64 * 1024), LOOKBACK_MAX);
            let mut out = Vec::new();
            stage.write(&page[..cuts[0]], &mut out);
            stage.write(&page[cuts[0]..], &mut out);
            assert_eq!(stage.mode(), "scanned", "cut at {cuts:?}");
            stage.finish(&mut out);
            assert!(out == want, "cut at {cuts:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn the_output_is_lol_html_stage_output_at_any_split(
            parts in proptest::collection::vec(prop_oneof![
                Just(&b"<script>"[..]), Just(&b"</script>"[..]), Just(&b"<script> "[..]),
                Just(&b"self.__next_f.push("[..]), Just(&b"[1,\"a:https://origin.example.com/x\"])"[..]),
                Just(&b"[1,\"3:T2a,"[..]), Just(&b"<!--"[..]), Just(&b"-->"[..]),
                Just(&b"<meta"[..]), Just(&b"<META "[..]), Just(&b"<m"[..]), Just(&b"<"[..]), Just(&b">"[..]),
                Just(&b" charset="[..]), Just(&b"utf-8"[..]), Just(&b"shift_jis"[..]), Just(&b"big5"[..]),
                Just(&b" http-equiv=content-type"[..]), Just(&b" content='text/html; charset="[..]),
                Just(&b"'"[..]), Just(&b"\""[..]), Just(&b"/"[..]), Just(&b" "[..]), Just(&b"\r"[..]), Just(&b"="[..]),
                Just(&b"https://origin.example.com/x"[..]), Just(&b"//origin.example.com"[..]),
                Just(&b"<textarea>"[..]), Just(&b"</textarea>"[..]), Just(&b"\xff\xc3"[..]), Just("é".as_bytes()),
                // Whole tags, so that verdicts and hand-overs are common.
                Just(&b"<meta charset=shift_jis>"[..]), Just(&b"<meta charset=\"utf-8\">"[..]),
                Just(&b"<meta http-equiv=content-type content='text/html; charset=big5'>"[..]),
                Just(&b"<script>self.__next_f.push([1,\"https://origin.example.com/\"])</script>"[..]),
            ], 0..48),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
            flight in any::<bool>(),
            lookback in prop_oneof![Just(LOOKBACK_MAX), 0..256usize],
        ) {
            let input = parts.concat();
            let mut cuts: Vec<usize> = picks.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            let (out, _) = lazy(&input, &cuts, flight, lookback);
            prop_assert_eq!(out, structured(&input, flight), "{:?} cuts {:?}", String::from_utf8_lossy(&input), cuts);
        }

        /// Flight scripts among markup that hides scripts from a plain search or shows it
        /// scripts that are not there, cut anywhere, the document cut off anywhere.
        #[test]
        fn flight_pages_with_hostile_markup_are_lol_html_stage_output_at_any_split(
            parts in proptest::collection::vec(prop_oneof![
                Just(push("1:T2a,https://origin.example.com/")), Just(push("abcdefghijklmnopqrstuvwxyz0123\n")),
                Just(push("2:\"https://origin.example.com/x\"\n")), Just(push("9:I[\"//origin.example.com\"]\n")),
                Just("<script>self.__next_f.push([1,\"".to_owned()), Just("\"])</script>".to_owned()),
                Just("<!-- self.__next_f.push([1,\"x\"]) -->".to_owned()), Just("<!--".to_owned()), Just("-->".to_owned()),
                Just("--!>".to_owned()), Just("<!-->".to_owned()), Just("<!-- --!>".to_owned()), Just("<!DOCTYPE '>".to_owned()),
                Just("<script>x=1;self.__next_f.push([1,\"https://origin.example.com/\"])</script>".to_owned()),
                Just("<script type=module>import 'https://origin.example.com/m.js'</script>".to_owned()),
                Just("<template>".to_owned()), Just("</template>".to_owned()), Just("<plaintext>".to_owned()),
                Just("<svg><![CDATA[<script>self.__next_f.push(]]></svg>".to_owned()), Just("<svg>".to_owned()),
                Just("</svg>".to_owned()), Just("<![CDATA[".to_owned()), Just("]]>".to_owned()),
                Just("<a title='>'>".to_owned()), Just("<a title=\"<script>\" href=//origin.example.com/>".to_owned()),
                Just("<SCRIPT>".to_owned()), Just("</SCRIPT >".to_owned()), Just("</script\t/>".to_owned()),
                Just("</script x='>'>".to_owned()), Just("<script>".to_owned()), Just("</script>".to_owned()),
                Just("<style>".to_owned()), Just("</style>".to_owned()), Just("<title>".to_owned()), Just("</title>".to_owned()),
                Just("<meta charset=shift_jis>".to_owned()), Just("<meta charset=utf-8>".to_owned()),
                Just("<script a=>".to_owned()), Just("<".to_owned()), Just(">".to_owned()), Just("'".to_owned()),
                Just("https://origin.example.com/p".to_owned()), Just(" ".to_owned()), Just("\u{e9}".to_owned()),
            ], 0..32),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
            truncate in any::<prop::sample::Index>(),
            lookback in prop_oneof![Just(LOOKBACK_MAX), 0..4096usize],
        ) {
            let input = parts.concat();
            let input = &input.as_bytes()[..truncate.index(input.len() + 1)];
            let mut cuts: Vec<usize> = picks.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            let (out, _) = lazy(input, &cuts, true, lookback);
            prop_assert!(out == structured(input, true), "{:?} cuts {:?}", String::from_utf8_lossy(input), cuts);
        }
    }
}
