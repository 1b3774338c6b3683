use super::*;
use proptest::prelude::*;

/// Runs `input` through a stage cut at `cuts` (sorted, in range): the written output, the
/// report, and the output's length after each piece.
fn run(input: &[u8], cuts: &[usize], cap: usize) -> (Vec<u8>, HeldTail, Vec<usize>) {
    run_scanning(input, cuts, cap, true)
}

/// [`run`], passing over the bytes that cannot change the scan's state (`skip`), or stepping
/// through every byte.
fn run_scanning(
    input: &[u8],
    cuts: &[usize],
    cap: usize,
    skip: bool,
) -> (Vec<u8>, HeldTail, Vec<usize>) {
    let mut stage = TailStage::with_cap(cap);
    let mut out = Vec::new();
    let mut lens = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([input.len()].iter()) {
        stage.0.write_scanning(&input[from..cut], &mut out, skip);
        lens.push(out.len());
        from = cut;
    }
    let tail = stage.finish(&mut out);
    (out, tail, lens)
}

/// Where the hold starts, or `None`, at every single and double cut, checking that nothing
/// is lost or reordered and that only a prefix of `</body` ever waits at a cut.
fn hold_point(input: &str) -> Option<usize> {
    let bytes = input.as_bytes();
    let (out, tail, _) = run(bytes, &[], TAIL_MAX);
    let point = match tail.point {
        TailPoint::BeforeBodyEnd => Some(out.len()),
        TailPoint::AtEnd => None,
        TailPoint::AfterCap => panic!("capped: {input}"),
    };
    assert_eq!([out, tail.bytes].concat(), bytes, "{input}");
    for a in 0..=bytes.len() {
        for b in a..=bytes.len() {
            let (out, tail, lens) = run(bytes, &[a, b], TAIL_MAX);
            let at = out.len();
            assert_eq!([out, tail.bytes].concat(), bytes, "{input} cut {a} {b}");
            assert_eq!(
                point,
                (tail.point == TailPoint::BeforeBodyEnd).then_some(at)
            );
            for (len, cut) in lens.iter().zip([a, b]) {
                // Everything before the hold point is written, but for a possible `</body`.
                let due = cut.min(point.unwrap_or(usize::MAX));
                assert!(
                    *len <= due && due - len <= 6,
                    "{input} cut {a} {b}: {len} of {due}"
                );
                let waiting = &bytes[*len..due];
                assert!(
                    waiting.is_empty() || b"</body".starts_with(&waiting.to_ascii_lowercase()),
                    "{input} cut {a} {b}: {:?} waits",
                    String::from_utf8_lossy(waiting)
                );
            }
        }
    }
    point
}

#[test]
fn the_hold_starts_at_the_first_real_end_tag() {
    for (input, want) in [
        ("<p>x</p></body></html>", Some(8)),
        ("</BODY>", Some(0)),
        ("a</bOdY >x", Some(1)),
        ("a</body\n>", Some(1)),
        ("a</body/>", Some(1)),
        ("a</body foo='>'>b</body>", Some(1)),
        ("<</body>", Some(1)),
        ("<p>text, no end tag", None),
        ("</bodyx></body>", Some(8)),
        ("</bod></body>", Some(6)),
        ("<body></body>", Some(6)),
        ("a</body", None),
        ("<!-- </body> --></body>", Some(16)),
        ("<!--></body>", Some(5)),
        ("<!---></body>", Some(6)),
        ("<!--!></body>--></body>", Some(16)),
        ("<!----!></body>", Some(8)),
        ("<!DOCTYPE html></body>", Some(15)),
        ("<? </body> ></body>", Some(12)),
        ("</ </body>></body>", Some(11)),
        ("<p title=\"</body>\"></body>", Some(19)),
        ("<p title='</body>'></body>", Some(19)),
        ("<p title=a</body>></body>", Some(18)),
        ("<p a\"</body>></body>", Some(13)),
        ("<script>'</body>'</script></body>", Some(26)),
        ("<SCRIPT type=x>'</body>'</script ></body>", Some(34)),
        ("<script/>'</body>'</script></body>", Some(27)),
        (
            "<script><!--<script></script></body>--></script></body>",
            Some(48),
        ),
        ("<script><!--</script></body>", Some(21)),
        ("<script><!--></script></body>", Some(22)),
        ("<script><!--<script>--></script></body>", Some(32)),
        ("<style></body></style></body>", Some(22)),
        ("<textarea></body></TEXTAREA></body>", Some(28)),
        ("<title></body></title></body>", Some(22)),
        ("<noscript></body></noscript></body>", Some(28)),
        ("<noframes></body></noframes></body>", Some(28)),
        ("<xmp></body></xmp></body>", Some(18)),
        ("<iframe></body></iframe></body>", Some(24)),
        ("<noembed></body></noembed></body>", Some(26)),
        ("<plaintext></body>", None),
        ("<plaintextx></body>", Some(12)),
        ("<styles></body>", Some(8)),
        ("</style></body>", Some(8)),
        ("</script><p></body>", Some(12)),
    ] {
        assert_eq!(hold_point(input), want, "{input}");
    }
}

#[test]
fn a_tail_past_the_cap_is_written_and_the_point_moves_to_the_end() {
    let input = b"<p>x</body></html><!-- more -->";
    for cap in [0, 5, 19] {
        for cut in 0..=input.len() {
            let (out, tail, _) = run(input, &[cut], cap);
            assert_eq!(tail.point, TailPoint::AfterCap, "cap {cap} cut {cut}");
            assert_eq!(out, input, "cap {cap} cut {cut}");
            assert!(tail.bytes.is_empty());
        }
    }
    let (out, tail, _) = run(input, &[], input.len() - 4);
    assert_eq!((tail.point, tail.held), (TailPoint::BeforeBodyEnd, 27));
    assert_eq!([out, tail.bytes].concat(), input);
}

/// Pieces of a document, each leaving the tokenizer in its data state, with where its first
/// real `</body>` end tag starts (the model the stage is held to: each piece's reading is
/// written out by hand).
const PIECES: &[(&str, Option<usize>)] = &[
    ("text ", None),
    ("a < b ", None),
    ("<< ", None),
    ("<p>", None),
    ("</p>", None),
    ("<div class=\"a>b\">", None),
    ("<p title='</body>'>", None),
    ("<!-- </body> -->", None),
    ("<!---->", None),
    ("<!-->", None),
    ("<!DOCTYPE html>", None),
    ("<script>var s='</body>';</script>", None),
    ("<script><!--<script></script></body>--></script>", None),
    ("<script><!--</script></body>", Some(21)),
    ("<style>p{}</body></style>", None),
    ("<textarea></body></textarea>", None),
    ("<title></BODY></title>", None),
    ("</bodyx>", None),
    ("</bod>", None),
    ("<body>", None),
    ("</body>", Some(0)),
    ("</BODY >", Some(0)),
    ("</body\n>", Some(0)),
    ("</html>", None),
    ("\n", None),
];

prop_compose! {
    fn document()(picks in proptest::collection::vec(0..PIECES.len(), 0..24)) -> (String, Option<usize>) {
        let mut doc = String::new();
        let mut first = None;
        for i in picks {
            let (piece, at) = PIECES[i];
            if first.is_none() {
                first = at.map(|at| doc.len() + at);
            }
            doc.push_str(piece);
        }
        (doc, first)
    }
}

proptest! {
    /// At any cuts: nothing lost or reordered, the hold at the model's first real `</body>`,
    /// and before it every byte written by the end of its piece but for a possible `</body`.
    #[test]
    fn the_hold_is_the_models_at_any_cuts(
        (doc, first) in document(),
        cuts in proptest::collection::vec(0usize..2000, 0..6),
    ) {
        let bytes = doc.as_bytes();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let (out, tail, lens) = run(bytes, &cuts, TAIL_MAX);
        let at = out.len();
        prop_assert_eq!([out, tail.bytes].concat(), bytes);
        match first {
            Some(first) => {
                prop_assert_eq!(tail.point, TailPoint::BeforeBodyEnd);
                prop_assert_eq!(at, first);
            }
            None => prop_assert_eq!(tail.point, TailPoint::AtEnd),
        }
        for (len, cut) in lens.iter().zip(cuts.iter().chain([bytes.len()].iter())) {
            let due = (*cut).min(first.unwrap_or(usize::MAX));
            prop_assert!(*len <= due && due - len <= 6);
            let waiting = bytes[*len..due].to_ascii_lowercase();
            prop_assert!(b"</body".starts_with(&waiting));
        }
    }

    /// Any bytes at all: nothing lost, never a panic.
    #[test]
    fn any_bytes_come_out_whole(
        bytes in proptest::collection::vec(proptest::sample::select(b"<>/!-'\"= bodyBODYscript\n".to_vec()), 0..200),
        cuts in proptest::collection::vec(0usize..200, 0..6),
    ) {
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let (out, tail, _) = run(&bytes, &cuts, 64);
        prop_assert_eq!([out, tail.bytes].concat(), bytes);
    }
}

/// Tokens that move the scan between its states, and text that does not.
const TOKENS: &[&str] = &[
    "<",
    ">",
    "/",
    "!",
    "-",
    "'",
    "\"",
    "=",
    " ",
    "\n",
    "</",
    "<!",
    "<?",
    "<!--",
    "-->",
    "--!>",
    "->",
    "<p",
    " a=",
    "<script>",
    "<SCRIPT type=x>",
    "</script>",
    "</script ",
    "<script",
    "<style>",
    "</style>",
    "</STYLE\n",
    "<textarea>",
    "</textarea>",
    "<title>",
    "</title>",
    "<plaintext>",
    "<body>",
    "</body>",
    "</BODY >",
    "</bod",
    "ody>",
    "lorem ipsum dolor sit amet, ",
    "var s = a < b && c > d; ",
    "x",
];

proptest! {
    /// Passing over the bytes that cannot change the scan's state (`Hold::pass`) gives what
    /// stepping through every byte gives: the same output after every piece, the same tail.
    #[test]
    fn passing_over_bytes_is_stepping_through_them(
        picks in proptest::collection::vec(0..TOKENS.len(), 0..80),
        cuts in proptest::collection::vec(0usize..2000, 0..6),
        cap in proptest::sample::select(vec![8usize, 64, TAIL_MAX]),
    ) {
        let doc: String = picks.into_iter().map(|i| TOKENS[i]).collect();
        let bytes = doc.as_bytes();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let passing = run_scanning(bytes, &cuts, cap, true);
        let stepping = run_scanning(bytes, &cuts, cap, false);
        prop_assert_eq!(passing, stepping, "{}", doc);
    }
}
