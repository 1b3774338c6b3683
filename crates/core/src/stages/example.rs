//! A stage added the way a new one is: this file, its `mod` line, and one `.then(…)` after the
//! stages [`crate::page::compose`] gives a page. It appends a comment with the byte count of
//! the page it saw and reports that count in a report of its own, which shows it runs after
//! the URL rule, at every split of a compressed body, and that its report reaches whoever
//! composed it without the engine or the page's report knowing it. Test-only.
#![cfg(test)]

use crate::body::stage::BodyStage;

/// Appends `<!-- N bytes -->` to the body it sees.
#[derive(Default)]
struct Footer {
    seen: usize,
}

/// What the footer saw.
#[derive(Debug, PartialEq, Eq)]
struct Seen(usize);

impl BodyStage for Footer {
    type Report = Seen;

    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.seen += input.len();
        out.extend_from_slice(input);
    }

    fn finish(self, out: &mut Vec<u8>) -> Seen {
        out.extend_from_slice(format!("<!-- {} bytes -->", self.seen).as_bytes());
        Seen(self.seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::codec::compress;
    use crate::body::decode::Decoder;
    use crate::body::pipeline::BodyPipeline;
    use crate::page::{compose, PageOptions};
    use crate::{Codec, Rewrite, UrlRule};

    #[test]
    fn a_stage_composed_after_the_rewriter_sees_its_output_at_every_split() {
        let page = b"<p><a href=\"https://origin.example.com/a\">a</a></p>";
        let rewritten = b"<p><a href=\"http://127.0.0.1:7676/a\">a</a></p>";
        let want = [
            &rewritten[..],
            format!("<!-- {} bytes -->", rewritten.len()).as_bytes(),
        ]
        .concat();
        let html = Rewrite::Html(lol_html::AsciiCompatibleEncoding::utf_8());
        let body = compress(Codec::Gzip, page);
        let options = PageOptions::default();
        for cut in 0..=body.len() {
            let rule = UrlRule::new("origin.example.com", "http", "127.0.0.1:7676");
            let stages = compose(html, rule, &options).then(Footer::default());
            let mut p = BodyPipeline::new(Codec::Gzip, stages, Vec::new());
            p.push(&body[..cut]).unwrap();
            p.push(&body[cut..]).unwrap();
            let (sent, report) = p.finish().unwrap();
            let mut plain = Vec::new();
            let mut d = Decoder::new(Codec::Gzip, &mut plain);
            d.write(&sent).unwrap();
            d.finish().unwrap();
            assert_eq!(plain, want, "cut at {cut}");
            // The page's report survives the composition, and the footer's own comes with it.
            let (page_report, seen) = report.stages;
            assert_eq!(page_report.html_structured, Some(false));
            assert_eq!(seen, Seen(rewritten.len()));
        }
    }
}
