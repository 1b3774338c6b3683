//! A stage added to the pipeline the way a new one is: this file, plus one `.then(…)` where
//! stages are composed. It appends a comment with the byte count of the page it saw, which
//! shows it runs after the URL rule, at every split of a compressed body.

use crate::body::stage::{BodyStage, StageReport};

#[derive(Default)]
struct Footer {
    seen: usize,
}

impl BodyStage for Footer {
    fn write(&mut self, input: &[u8], out: &mut Vec<u8>) {
        self.seen += input.len();
        out.extend_from_slice(input);
    }

    fn finish(self: Box<Self>, out: &mut Vec<u8>) -> StageReport {
        out.extend_from_slice(format!("<!-- {} bytes -->", self.seen).as_bytes());
        StageReport::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::codec::{compress, Codec};
    use crate::body::decode::Decoder;
    use crate::body::pipeline::{compose, BodyPipeline, PipelineOptions};
    use crate::{Rewrite, UrlRule};

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
        let options = PipelineOptions::default();
        for cut in 0..=body.len() {
            let rule = UrlRule::new("origin.example.com", "http", "127.0.0.1:7676");
            let stages = compose(html, rule, &options).then(Footer::default());
            let mut p = BodyPipeline::with_stages(Codec::Gzip, stages, Vec::new());
            p.push(&body[..cut]).unwrap();
            p.push(&body[cut..]).unwrap();
            let (sent, report) = p.finish().unwrap();
            let mut plain = Vec::new();
            let mut d = Decoder::new(Codec::Gzip, &mut plain);
            d.write(&sent).unwrap();
            d.finish().unwrap();
            assert_eq!(plain, want, "cut at {cut}");
            // The rewriter's report survives the chain.
            assert_eq!(report.html_structured, Some(false));
        }
    }
}
