//! First-party creatives (HTML and CSS) on arbitrary bytes: no panic, the same output for
//! every way the body is cut into chunks, and a signer that allows nothing leaves every byte
//! as it was. The allowing signer answers with quotes, `<` and `&` in its URL, so the
//! escaping of what is written back is fuzzed too; whatever it was offered must be an
//! absolute `http`/`https` URL.
#![no_main]

use std::cell::RefCell;
use std::rc::Rc;

use libfuzzer_sys::fuzz_target;
use trusted_server_core::first_party::creative::{
    self, Creative, CreativeOutcome, Placement, Signer, UrlUse,
};
use trusted_server_core::{Codec, BodyReport};
use trusted_server_settings::Scheme;
use trusted_server_fuzz::{assert_split_invariant, show, split_input};

/// Markup without an address (as an auction's), shown in an https page.
const NO_ADDRESS: Placement<'static> = Placement {
    address: None,
    page_scheme: Scheme::Https,
};

const TYPES: [&str; 3] = [
    "text/html; charset=utf-8",
    "text/css",
    "text/html; charset=windows-1252",
];

/// Offered targets are recorded; with `allow`, each gets a first-party URL that depends only
/// on the target (the output must not depend on anything else).
fn signer(allow: bool, offered: &Rc<RefCell<Vec<String>>>) -> Signer {
    let offered = Rc::clone(offered);
    Box::new(move |target: &str, use_: UrlUse| {
        offered.borrow_mut().push(target.to_owned());
        allow.then(|| format!("/fp?n={}&u={use_:?}&q=\"'<)\\{}", target.len(), &target[..1]))
    })
}

fn run(creative: Creative, allow: bool, body: &[u8], cuts: &[usize]) -> (Vec<u8>, BodyReport<CreativeOutcome>) {
    let offered = Rc::new(RefCell::new(Vec::new()));
    let pipeline = creative::pipeline(Codec::Identity, creative, signer(allow, &offered), NO_ADDRESS, Vec::new());
    let result = ts_testkit::drive(
        pipeline,
        ts_testkit::pieces(body, cuts),
        ts_testkit::Flush::EveryOtherPiece,
        || {},
    )
    .unwrap_or_else(|e| panic!("an identity creative gave an error: {e}"));
    for target in offered.borrow().iter() {
        let lower = target.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("https:")
            .or_else(|| lower.strip_prefix("http:"))
            .unwrap_or("");
        assert!(
            rest.len() >= 2 && rest.bytes().take(2).all(|b| b == b'/' || b == b'\\'),
            "offered {target:?} for {}",
            show(body)
        );
    }
    result
}

fuzz_target!(|data: &[u8]| {
    let input = split_input(data);
    let content_type = TYPES[usize::from(input.config) % TYPES.len()];
    let Some(creative) = Creative::for_content_type(Some(content_type)) else {
        panic!("{content_type} is a creative");
    };
    let body = input.body;
    for allow in [true, false] {
        let (whole, report) = run(creative, allow, body, &[]);
        let (split, _) = run(creative, allow, body, &input.cuts);
        assert_split_invariant(body, &input.cuts, &whole, &split);
        if !allow {
            assert!(
                whole == body,
                "nothing allowed, yet the creative changed:\ninput  {}\noutput {}",
                show(body),
                show(&whole)
            );
        }
        let creative = report.stages.creative.unwrap_or_default();
        assert!(allow || creative.rewritten == 0);
    }
});
