use super::*;
use crate::body::codec::Encoder;
use crate::body::decode::Decoder;
use crate::body::pipeline::{BodyReport, PipelineError};
use crate::body::release::{Release, Step};
use lol_html::AsciiCompatibleEncoding;
use std::io;

fn rule() -> UrlRule {
    UrlRule::new("origin.example.com", "http", "127.0.0.1:7676")
}

fn html() -> Rewrite {
    Rewrite::Html(AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap())
}

/// A sink that records each write and flush, and fails after `fail_after` writes.
#[derive(Default)]
struct Recorder {
    writes: Vec<Vec<u8>>,
    flushes: usize,
    fail_after: Option<usize>,
}

impl Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.fail_after.is_some_and(|n| self.writes.len() >= n) {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "client went away",
            ));
        }
        self.writes.push(buf.to_vec());
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        Ok(())
    }
}

/// Runs `input` through a pipeline split once at `cut`, returning output and report.
fn run_cut(
    codec: Codec,
    rewrite: Rewrite,
    input: &[u8],
    cut: usize,
) -> (Vec<u8>, BodyReport<PageReport>) {
    let mut p = pipeline(codec, rewrite, rule(), &PageOptions::default(), Vec::new());
    p.push(&input[..cut]).unwrap();
    p.push(&input[cut..]).unwrap();
    p.finish().unwrap()
}

#[test]
fn a_utf16_body_passes_through_unchanged_at_every_split() {
    let text = "<p>https://origin.example.com/ é ✓</p>";
    let le: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let be: Vec<u8> = [0xfe, 0xff]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
        .collect();
    // Not real UTF-16, but it would be rewritten if the mark were not honoured.
    let marked_ascii = [&[0xff, 0xfe][..], text.as_bytes()].concat();
    for body in [le, be, marked_ascii] {
        for rewrite in [html(), Rewrite::Text] {
            for cut in 0..=body.len() {
                let (out, report) = run_cut(Codec::Identity, rewrite, &body, cut);
                assert_eq!(out, body, "cut at {cut}");
                assert!(report.stages.utf16);
            }
        }
    }
    // Without a mark, and for bodies shorter than one, rewriting is as before.
    for (body, want) in [
        (
            text.as_bytes(),
            "<p>http://127.0.0.1:7676/ é ✓</p>".as_bytes(),
        ),
        (b"\xff", b"\xff"),
        (b"", b""),
    ] {
        for cut in 0..=body.len() {
            let (out, report) = run_cut(Codec::Identity, Rewrite::Text, body, cut);
            assert_eq!(out, want);
            assert!(!report.stages.utf16);
        }
    }
}

/// Pushes `origin` in pieces of `chunk` bytes, the origin pausing after each, flushing
/// when [`Release`] says; returns the output and each write's size.
fn run_chunks(codec: Codec, origin: &[u8], chunk: usize) -> (Vec<u8>, Vec<usize>) {
    let mut p = pipeline(
        codec,
        html(),
        rule(),
        &PageOptions::default(),
        Recorder::default(),
    );
    let mut after_each = Vec::new();
    let mut release = Release::new(codec, None);
    for piece in origin.chunks(chunk) {
        p.push(piece).unwrap();
        release_step(&mut release, &mut p, piece.len());
        after_each.push(p.sink_mut().writes.len());
    }
    let (sink, _) = p.finish().unwrap();
    (sink.writes.concat(), after_each)
}

/// What the adapter does after an origin read that the origin does not follow at once.
fn release_step<W: Write>(release: &mut Release, p: &mut PagePipeline<W>, n: usize) {
    if release.after_read(n, p.progress(), || false) == (Step::Send { flush: true }) {
        p.flush().unwrap();
    }
}

#[test]
fn a_trickling_origin_does_not_inflate_the_compressed_output() {
    let page = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/site/index.html"
    ));
    for codec in [Codec::Gzip, Codec::Deflate, Codec::Brotli] {
        let origin = crate::body::codec::compress(codec, page);
        let (whole, _) = run_chunks(codec, &origin, origin.len());
        let (trickled, _) = run_chunks(codec, &origin, 1);
        // One flush per chunk made this 4.6× for gzip.
        assert!(
            trickled.len() * 100 <= whole.len() * 120,
            "{codec:?}: {} bytes one byte at a time, {} in one go",
            trickled.len(),
            whole.len()
        );
        let mut plain = Vec::new();
        let mut d = Decoder::new(codec, &mut plain);
        d.write(&trickled).unwrap();
        d.finish().unwrap();
        let mut want = Vec::new();
        let mut d = Decoder::new(codec, &mut want);
        d.write(&whole).unwrap();
        d.finish().unwrap();
        assert_eq!(plain, want, "{codec:?}");
    }
}

#[test]
fn small_compressed_chunks_still_leave_at_once() {
    // Next.js sends a Suspense row of a few bytes on its own: it must not wait for more.
    let parts: [&[u8]; 4] = [
        &b"<p>head</p>".repeat(500),
        b"<p>1</p>",
        b"<p>2</p>",
        b"<p>3</p>",
    ];
    let mut encoder = crate::body::codec::Encoder::new(Codec::Gzip);
    let mut chunks = Vec::new();
    for part in parts {
        encoder.write(part).unwrap();
        encoder.flush().unwrap();
        chunks.push(encoder.output().to_vec());
        encoder.clear_output();
    }
    let mut p = pipeline(
        Codec::Gzip,
        html(),
        rule(),
        &PageOptions::default(),
        Recorder::default(),
    );
    let mut release = Release::new(Codec::Gzip, None);
    for (i, chunk) in chunks.iter().enumerate() {
        let before = p.sink_mut().writes.len();
        p.push(chunk).unwrap();
        release_step(&mut release, &mut p, chunk.len());
        assert!(p.sink_mut().writes.len() > before, "chunk {i} waited");
    }
}

#[test]
fn ignored_trailing_bytes_are_reported() {
    let mut body = crate::body::codec::compress(Codec::Gzip, b"<p>https://origin.example.com/</p>");
    body.extend_from_slice(b"\0\0\0");
    let (out, report) = run_cut(Codec::Gzip, html(), &body, body.len() - 1);
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&out[..]), &mut plain).unwrap();
    assert_eq!(plain, b"<p>http://127.0.0.1:7676/</p>");
    assert_eq!(report.ignored_trailing, 3);
}

#[test]
fn first_chunk_reaches_the_sink_before_the_second_is_pushed() {
    let mut p = pipeline(
        Codec::Identity,
        html(),
        rule(),
        &PageOptions::default(),
        Recorder::default(),
    );
    p.push(b"<html><head><link href=\"https://origin.example.com/a.css\"></head>")
        .unwrap();
    assert!(
        p.sink_mut().writes.is_empty(),
        "a push alone waits for more input, a flush or the threshold"
    );
    p.flush().unwrap();
    let sink = &p.sink_mut();
    assert_eq!(
        sink.writes.concat(),
        b"<html><head><link href=\"http://127.0.0.1:7676/a.css\"></head>"
    );
    assert_eq!(sink.flushes, 1);
    p.push(b"<body></body></html>").unwrap();
    let (sink, report) = p.finish().unwrap();
    assert_eq!(sink.writes.concat().len() as u64, report.bytes_out);
}

#[test]
fn writes_are_batched_not_per_fragment() {
    let page = "<p><a href=\"https://origin.example.com/x\">link</a></p>\n".repeat(2000);
    let mut p = pipeline(
        Codec::Identity,
        html(),
        rule(),
        &PageOptions::default(),
        Recorder::default(),
    );
    for piece in page.as_bytes().chunks(100) {
        p.push(piece).unwrap();
    }
    let (sink, _) = p.finish().unwrap();
    let expected = page.replace("https://origin.example.com", "http://127.0.0.1:7676");
    assert_eq!(sink.writes.concat(), expected.as_bytes());
    // ~100 KB in writes of >= 8 KiB: a dozen or so, not thousands.
    assert!(
        sink.writes.len() <= expected.len() / 8192 + 1,
        "{} writes",
        sink.writes.len()
    );
    assert!(sink.writes[..sink.writes.len() - 1]
        .iter()
        .all(|w| w.len() >= 8192));
}

#[test]
fn a_failing_client_is_reported_as_a_client_error() {
    let sink = Recorder {
        fail_after: Some(1),
        ..Recorder::default()
    };
    let mut p = pipeline(
        Codec::Identity,
        html(),
        rule(),
        &PageOptions::default(),
        sink,
    );
    p.push(b"<p>one</p>").unwrap();
    p.flush().unwrap();
    p.push(b"<p>two</p>").unwrap();
    let err = p.flush().unwrap_err();
    assert!(matches!(err, PipelineError::Client(_)), "{err}");
}

#[test]
fn a_truncated_gzip_body_fails_at_the_end() {
    let mut enc = Encoder::new(Codec::Gzip);
    enc.write(&b"<p>https://origin.example.com/</p>".repeat(100))
        .unwrap();
    enc.finish().unwrap();
    let gz = enc.output().to_vec();
    let mut p = pipeline(
        Codec::Gzip,
        html(),
        rule(),
        &PageOptions::default(),
        Vec::new(),
    );
    p.push(&gz[..gz.len() - 4]).unwrap();
    assert!(matches!(p.finish(), Err(PipelineError::Origin(_))));
}

#[test]
fn compressed_output_streams_per_chunk() {
    let options = PageOptions::default();
    let mut p = pipeline(Codec::Gzip, html(), rule(), &options, Vec::new());
    let mut enc = Encoder::new(Codec::Gzip);
    enc.write(b"<html><head><title>https://origin.example.com/</title></head>")
        .unwrap();
    enc.flush().unwrap();
    p.push(enc.output()).unwrap();
    p.flush().unwrap();
    // Before the body ends, what the client has must already decode to the rewritten head.
    let sent = p.sink_mut().clone();
    let mut d = Decoder::new(Codec::Gzip, Vec::new());
    d.write(&sent).unwrap();
    assert_eq!(
        d.inner_mut().as_slice(),
        b"<html><head><title>http://127.0.0.1:7676/</title></head>"
    );
}

#[test]
fn a_failing_client_inside_a_decoder_is_still_a_client_error() {
    let sink = Recorder {
        fail_after: Some(0),
        ..Recorder::default()
    };
    let options = PageOptions::default();
    let mut p = pipeline(Codec::Gzip, html(), rule(), &options, sink);
    // Varied enough that the re-encoded output passes a batch during the one push.
    let page: String = (0..40_000u64)
        .map(|i| format!("<p>https://origin.example.com/{}</p>", i * 7919 % 100_003))
        .collect();
    let mut enc = Encoder::new(Codec::Gzip);
    enc.write(page.as_bytes()).unwrap();
    enc.finish().unwrap();
    let err = p.push(enc.output()).unwrap_err();
    assert!(matches!(err, PipelineError::Client(_)), "{err}");
}

/// The early-hints head reader in the page's HTML chain.
mod hints {
    use super::*;
    use proptest::prelude::*;

    fn hints_rule() -> UrlRule {
        UrlRule::new("origin.pub.test", "https", "www.pub.test")
    }

    /// The page through the pipeline with or without the collector, pushed in pieces cut at
    /// `cuts`: its output and the hints it reports.
    fn through_pipeline(page: &[u8], cuts: &[usize], learn: bool) -> (Vec<u8>, Vec<String>) {
        let options = PageOptions {
            learn_hints: learn,
            ..PageOptions::default()
        };
        let html = Rewrite::Html(lol_html::AsciiCompatibleEncoding::utf_8());
        let mut pipeline = pipeline(Codec::Identity, html, hints_rule(), &options, Vec::new());
        let mut prev = 0;
        for &c in cuts.iter().chain([&page.len()]) {
            pipeline.push(&page[prev..c]).unwrap();
            prev = c;
        }
        let (out, report) = pipeline.finish().unwrap();
        (out, report.stages.hints)
    }

    #[test]
    fn the_pipeline_reports_the_head_hints() {
        let page = b"<html><head><link rel=preload href=http://origin.pub.test/a.css as=style></head><body>x</body></html>";
        let (out, hints) = through_pipeline(page, &[], true);
        assert_eq!(
            hints,
            ["<https://www.pub.test/a.css>; rel=preload; as=style"]
        );
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("href=https://www.pub.test/a.css"));
        assert!(through_pipeline(page, &[], false).1.is_empty());
    }

    proptest! {
        /// Learning hints never changes the page: the output with the collector is the output
        /// without it, however the body is split.
        #[test]
        fn the_collector_does_not_change_the_output(
            cuts in proptest::collection::vec(0usize..2000, 0..6),
            head in "[ a-z<>=/\"']{0,60}",
            body in "[ a-z<>=/.:\"']{0,200}",
        ) {
            let page = format!("<html><head>{head}<link rel=preload href=http://origin.pub.test/a.js as=script></head><body>{body}</body>");
            let bytes = page.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let (with, _) = through_pipeline(bytes, &cuts, true);
            let (without, _) = through_pipeline(bytes, &[], false);
            prop_assert_eq!(with, without);
        }
    }
}
