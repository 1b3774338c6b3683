//! Next.js Flight data, as a `text/x-component` response and as `self.__next_f.push([1,"…"])`
//! scripts in a page built from the fuzzer's stream (cut into scripts at fuzzer-chosen points,
//! with markup between them). Checked against an independent model of the row format
//! (`trusted_server_fuzz::flight`):
//!
//! * the same output for every way the body is cut into chunks, at any cap;
//! * a Flight response comes out exactly as the model says, row by row, and reports a degrade
//!   exactly when the model does; no rewritable origin URL is left when it did not degrade;
//! * in a page, the strings (each decoded on its own, as the browser does) decode to the
//!   model's rows (or, where it degraded, each row either rewritten or as it came, or a
//!   newline row rewritten up to a possible URL and as it came from there), and the markup
//!   around them gets the URL rule;
//! * without the origin host anywhere (in any case), a Flight response comes back byte for
//!   byte, and a page's markup and decoded stream are unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::{Rewrite, UrlRule};
use trusted_server_fuzz::flight::{inline_page, model, read_pushes};
use trusted_server_fuzz::{assert_split_invariant, whole_and_split};
use trusted_server_fuzz::{contains_ignore_case, cut_points, options, rewrite_for, show};
use trusted_server_fuzz::{split_input, utf16_bom, ORIGIN, TARGETS};

fuzz_target!(|data: &[u8]| {
    let input = split_input(data);
    let (scheme, target) = TARGETS[usize::from(input.config >> 4) % TARGETS.len()];
    let rule = UrlRule::new(ORIGIN, scheme, target);
    let mut options = options(input.config);
    if input.config & 8 != 0 {
        // The smallest cap the settings allow: rows and holds over it degrade.
        options.nextjs.max_held_bytes = 1024;
    }
    let max_held = u64::from(options.nextjs.max_held_bytes);
    let inline = input.config & 4 != 0;

    if !inline {
        let body = input.body;
        let ((whole, report), (split, _)) =
            whole_and_split(Rewrite::Flight, &rule, &options, body, &input.cuts);
        assert_split_invariant(body, &input.cuts, &whole, &split);
        if utf16_bom(body) {
            // Passed through untouched: a byte-wise rewrite could corrupt UTF-16 text.
            assert!(
                whole == body,
                "a body with a UTF-16 byte order mark changed"
            );
            return;
        }
        let expected = model(body, &rule, max_held);
        assert!(
            whole == expected.rewritten(),
            "not the model's rows:\ninput    {}\noutput   {}\nexpected {}",
            show(body),
            show(&whole),
            show(&expected.rewritten())
        );
        assert_eq!(
            report.stages.rsc.degraded.is_some(),
            expected.degrades,
            "degrade reported: {:?}",
            report.stages.rsc.degraded
        );
        if report.stages.rsc.degraded.is_none() {
            let again = model(&whole, &rule, max_held);
            assert!(
                again.rows.iter().all(|r| r.original == r.rewritten),
                "an origin URL is left in {}",
                show(&whole)
            );
        }
        if !contains_ignore_case(body, ORIGIN.as_bytes()) {
            assert!(
                whole == body,
                "no origin host, yet the body changed:\ninput  {}\noutput {}",
                show(body),
                show(&whole)
            );
        }
        return;
    }

    // A page: the stream (as text, like a JavaScript string) cut into scripts.
    let stream = String::from_utf8_lossy(input.body);
    let half = input.raw_cuts.len() / 2;
    let script_cuts = cut_points(&input.raw_cuts[..half], stream.len());
    let page = inline_page(&stream, &script_cuts, &input.raw_cuts);
    let cuts = if input.bytewise {
        (1..page.len().min(8192)).collect()
    } else {
        cut_points(&input.raw_cuts[half..], page.len())
    };
    let html = rewrite_for("text/html; charset=utf-8");
    let ((whole, report), (split, split_report)) =
        whole_and_split(html, &rule, &options, &page, &cuts);
    assert_split_invariant(&page, &cuts, &whole, &split);
    assert_eq!(
        report.stages.rsc.degraded.is_some(),
        split_report.stages.rsc.degraded.is_some(),
        "cut at {cuts:?}, one run degraded and the other did not"
    );
    let (stream_in, markup_in) = read_pushes(&page).expect("the page's own strings decode");
    assert!(
        stream_in == stream.as_bytes(),
        "the page builder lost bytes"
    );
    let Some((stream_out, markup_out)) = read_pushes(&whole) else {
        panic!("an output string is not a JSON string: {}", show(&whole));
    };
    assert!(
        markup_out == rule.rewrite_all(&markup_in),
        "the markup around the scripts:\npage   {}\noutput {}",
        show(&page),
        show(&whole)
    );
    let expected = model(&stream_in, &rule, max_held);
    if expected.degrades {
        assert!(report.stages.rsc.degraded.is_some(), "a degrade went unreported");
    }
    match report.stages.rsc.degraded {
        None => assert!(
            stream_out == expected.rewritten(),
            "not the model's rows:\nstream   {}\noutput   {}\nexpected {}",
            show(&stream_in),
            show(&stream_out),
            show(&expected.rewritten())
        ),
        Some(why) => assert!(
            expected.each_row_whole_or_released(&stream_out, &rule),
            "degraded ({why}), and a row is neither rewritten nor as it came:\nstream {}\noutput {}",
            show(&stream_in),
            show(&stream_out)
        ),
    }
    // The host may be in the decoded stream without being in the page: split across two
    // pushes, or written with escapes. Then the stream is rewritten, as it must be.
    if !contains_ignore_case(&page, ORIGIN.as_bytes())
        && !contains_ignore_case(&stream_in, ORIGIN.as_bytes())
    {
        // Not byte for byte: while a `T` row is open across scripts, the rows decoded meanwhile
        // move into the first string (the browser concatenates the strings, so it reads the
        // same stream). The markup and the stream are unchanged.
        assert!(
            markup_out == markup_in && stream_out == stream_in,
            "no origin host, yet the page changed:\npage   {}\noutput {}",
            show(&page),
            show(&whole)
        );
    }
});
