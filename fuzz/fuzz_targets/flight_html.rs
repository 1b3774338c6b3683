//! Next.js pages built from the fuzzer's bytes out of a vocabulary that is hostile to a
//! byte-level reading of HTML (Flight scripts, and comments, raw text, `<template>`,
//! `<plaintext>`, foreign content and CDATA, attribute values holding `>` or `<script`,
//! uppercase tags and unusual end-tag spellings that hide scripts or show scripts that are not
//! there), cut off anywhere. The lazy HTML stage reads these pages' structure itself, until
//! it cannot follow lol_html: its output must be the HTML stage's with lol_html from the
//! first byte, whole and cut into chunks anywhere.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::{PageOptions, UrlRule};
use trusted_server_fuzz::{assert_split_invariant, run, show, split_input, vocabulary_page};
use trusted_server_fuzz::{rewrite_for, whole_and_split, ORIGIN, TARGETS};

/// What a page is built of: a body byte picks one (or, past the end, is itself the next byte).
const VOCABULARY: &[&str] = &[
    "<script>self.__next_f.push([1,\"",
    "\"])</script>",
    "<script>self.__next_f.push([1,\"0:T2a,https://origin.demo-publisher.example/a\\n\"])</script>",
    "<script>self.__next_f.push([1,\"1:[\\\"https://origin.demo-publisher.example/\\\"]\\n\"])</script>",
    "3:T1c,",
    "https://origin.demo-publisher.example/x",
    "//origin.demo-publisher.example",
    "\\\"",
    "\\n",
    "\\u003c",
    "<script>",
    "</script>",
    "<SCRIPT type=module>",
    "</ScRiPt >",
    "</script\t/>",
    "</script x='>'>",
    "<script/>",
    "<script a=>",
    "self.__next_f.push(",
    "<!--",
    "-->",
    "--!>",
    "<!-->",
    "<!DOCTYPE html '>'>",
    "<?pi <script> ?>",
    "</ x>",
    "<template>",
    "</template>",
    "<plaintext>",
    "<svg>",
    "</svg>",
    "<math><mi>",
    "</mi></math>",
    "<foreignObject>",
    "</foreignObject>",
    "<![CDATA[",
    "]]>",
    "<style>",
    "</style>",
    "<title>",
    "</title>",
    "<textarea>",
    "</textarea>",
    "<noscript>",
    "</noscript>",
    "<a title='>' href=\"//origin.demo-publisher.example/\">",
    "<a title=\"<script>\">",
    "<p>",
    "</p>",
    "<meta charset=utf-8>",
    "<meta charset=shift_jis>",
    "<font size=2>",
    "<custom-el x>",
    "</custom-el>",
    "<",
    ">",
    "/",
    "'",
    "\"",
    "=",
    " ",
    "-",
    "!",
    "]",
];

fuzz_target!(|data: &[u8]| {
    let input = split_input(data);
    let (page, cuts) = vocabulary_page(&input, VOCABULARY);
    let (scheme, target) = TARGETS[usize::from(input.config >> 2) % TARGETS.len()];
    let rule = UrlRule::new(ORIGIN, scheme, target);
    let mut options = PageOptions::default();
    options.nextjs.enabled = input.config & 1 == 0;
    if input.config & 2 != 0 {
        // The smallest cap the settings allow.
        options.nextjs.max_held_bytes = 1024;
    }
    let html = rewrite_for("text/html; charset=utf-8");
    let ((whole, report), (split, _)) = whole_and_split(html, &rule, &options, &page, &cuts);
    assert_split_invariant(&page, &cuts, &whole, &split);
    let lol_html_first = PageOptions {
        html_lookback: 0,
        ..options.clone()
    };
    let (structured, _) = run(
        trusted_server_core::Codec::Identity,
        html,
        &rule,
        &lol_html_first,
        &page,
        &cuts,
    )
    .unwrap_or_else(|e| panic!("an identity body gave an error: {e}"));
    assert!(
        structured == whole,
        "the lazy HTML stage (scanned: {}) differs from lol_html from the start:\npage     {}\nlazy     {}\nlol_html {}",
        report.stages.html_scanned,
        show(&page),
        show(&whole),
        show(&structured)
    );
});
