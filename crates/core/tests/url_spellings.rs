//! The spellings of an origin URL the rule covers and the ones it leaves alone, as a table
//! written by hand from what the consumer does with each, then checked against a real
//! consumer: Node's WHATWG `URL` (after the decoding the text around the URL gets: JSON /
//! JavaScript string escapes, HTML character references, percent-decoding by the server that
//! reads a query parameter). The Node check runs when `node` is on the PATH.
//!
//! Each row says what the rule must output for `origin.example.com` → `http://127.0.0.1:7676`
//! and what the consumer makes of the input, with the proxied page
//! `http://127.0.0.1:7676/p/` as the base URL:
//!
//! * `Rewritten`: the input reaches the origin, the output reaches the first-party host;
//! * `Other`: the input reaches some other host (or no URL at all) and is left alone;
//! * `Missed`: the input reaches the origin but is a spelling the rule does not cover (listed
//!   in `crates/core/src/url_rewrite/mod.rs`), so it is left alone;
//! * `Ended`: the consumer reads no URL at all, because after the port comes a character no
//!   port or authority can go on with (`:80\n-->`: URL parsing fails there), while a reader
//!   sees an origin URL that ends at the port (in a comment, in text): it is rewritten, and the
//!   output reaches no host either.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use trusted_server_core::{Codec, UrlRule};

mod support;
use support::{rewrite_for, run};

const ORIGIN: &str = "origin.example.com";
const TARGET: &str = "127.0.0.1:7676";

/// How the text around the URL is decoded before URL parsing.
#[derive(Debug, Clone, Copy)]
enum Decode {
    /// As written (an HTML attribute without references, a header, CSS).
    None,
    /// A JSON string's contents (also a JavaScript string literal's).
    Json,
    /// A JavaScript string literal holding JSON: decoded twice.
    JsonInJs,
    /// An HTML attribute with character references.
    Html,
    /// A query parameter value, percent-decoded by the server that reads it.
    Percent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Consumer {
    Rewritten,
    Other,
    Missed,
    Ended,
}
use Consumer::{Ended, Missed, Other, Rewritten};

const TABLE: &[(Decode, &str, &str, Consumer)] = &[
    // Plain, as the browser reads an href.
    (
        Decode::None,
        "https://origin.example.com/a",
        "http://127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        "HTTPS://Origin.Example.COM.:443/a",
        "http://127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        "https:/origin.example.com/a",
        "http://127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        r"https:\origin.example.com/a",
        "http://127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        r"https:/\origin.example.com/a",
        "http://127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        r"https:\\origin.example.com/a",
        "http://127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        "https:///origin.example.com/a",
        "http://127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        "//origin.example.com/a",
        "//127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        r"\\origin.example.com/a",
        "//127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        r"/\origin.example.com/a",
        "//127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        r"\/origin.example.com/a",
        "//127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        "///origin.example.com/a",
        "//127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::None,
        "//origin.example.com:80/a",
        "//127.0.0.1:7676/a",
        Rewritten,
    ),
    // Paths inside another URL, and longer hosts.
    (
        Decode::None,
        "https://evil.test//origin.example.com/a",
        "https://evil.test//origin.example.com/a",
        Other,
    ),
    (
        Decode::None,
        "https://evil.test///origin.example.com/a",
        "https://evil.test///origin.example.com/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com%2eevil.test/a",
        "https://origin.example.com%2eevil.test/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com\tevil.test/a",
        "https://origin.example.com\tevil.test/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com\u{ad}evil.test/a",
        "https://origin.example.com\u{ad}evil.test/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com\u{3002}evil.test/a",
        "https://origin.example.com\u{3002}evil.test/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com.evil.test/a",
        "https://origin.example.com.evil.test/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com:8443/a",
        "https://origin.example.com:8443/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com@evil.test/a",
        "https://origin.example.com@evil.test/a",
        Other,
    ),
    (
        Decode::None,
        "http://origin.example.com:443/a",
        "http://origin.example.com:443/a",
        Other,
    ),
    // Tab, CR and LF after the host: URL parsing removes them and reads on, so the next
    // character decides (an origin URL at the end of a line is ours).
    (
        Decode::None,
        "https://origin.example.com\t/a",
        "http://127.0.0.1:7676\t/a",
        Rewritten,
    ),
    (
        Decode::None,
        "https://origin.example.com:443\r\n",
        "http://127.0.0.1:7676\r\n",
        Rewritten,
    ),
    (
        Decode::None,
        "//origin.example.com.\r\n\t/a",
        "//127.0.0.1:7676\r\n\t/a",
        Rewritten,
    ),
    (
        Decode::None,
        "http://origin.example.com\n",
        "http://127.0.0.1:7676\n",
        Rewritten,
    ),
    (
        Decode::None,
        "https://origin.example.com\n.evil.test/a",
        "https://origin.example.com\n.evil.test/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com\r\nevil.test/a",
        "https://origin.example.com\r\nevil.test/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com\r\n:8443/a",
        "https://origin.example.com\r\n:8443/a",
        Other,
    ),
    (
        Decode::None,
        "http://origin.example.com:80\n80/a",
        "http://origin.example.com:80\n80/a",
        Other,
    ),
    (
        Decode::None,
        "https://origin.example.com%0A/a",
        "https://origin.example.com%0A/a",
        Other,
    ),
    // After a port only digits (another port) and `@` (user info of another host) go on;
    // URL parsing fails on anything else, so a port then a newline ends an origin URL.
    (
        Decode::None,
        "http://origin.example.com:80\n@evil.test/a",
        "http://origin.example.com:80\n@evil.test/a",
        Other,
    ),
    (
        Decode::None,
        "http://origin.example.com:80\r\n-->",
        "http://127.0.0.1:7676\r\n-->",
        Ended,
    ),
    (
        Decode::None,
        "https://origin.example.com:443\nand",
        "http://127.0.0.1:7676\nand",
        Ended,
    ),
    (
        Decode::None,
        "//origin.example.com:80\t.evil.test",
        "//127.0.0.1:7676\t.evil.test",
        Ended,
    ),
    (
        Decode::Json,
        r"https:\/\/origin.example.com:443\n-->",
        r"http:\/\/127.0.0.1:7676\n-->",
        Ended,
    ),
    (
        Decode::Json,
        r"https:\/\/origin.example.com:443\n3\/a",
        r"https:\/\/origin.example.com:443\n3\/a",
        Other,
    ),
    (
        Decode::Percent,
        "https%3A%2F%2Forigin.example.com%3A443%0A-",
        "http%3A%2F%2F127.0.0.1%3A7676%0A-",
        Ended,
    ),
    // Spellings the rule does not cover.
    (
        Decode::None,
        "https://origin.example.com\n:443/a",
        "https://origin.example.com\n:443/a",
        Missed,
    ),
    (
        Decode::None,
        "https:////origin.example.com/a",
        "https:////origin.example.com/a",
        Missed,
    ),
    (
        Decode::None,
        "https:origin.example.com/a",
        "https:origin.example.com/a",
        Missed,
    ),
    (
        Decode::None,
        "https://origin%2Eexample.com/a",
        "https://origin%2Eexample.com/a",
        Missed,
    ),
    (
        Decode::None,
        "https://origin.example.com%2e/a",
        "https://origin.example.com%2e/a",
        Missed,
    ),
    (
        Decode::None,
        "https://origin.example.com\u{ad}/a",
        "https://origin.example.com\u{ad}/a",
        Missed,
    ),
    (
        Decode::None,
        "https://origin.example.com:000443/a",
        "https://origin.example.com:000443/a",
        Missed,
    ),
    // JSON and JavaScript strings.
    (
        Decode::Json,
        r"https:\/\/origin.example.com\/a",
        r"http:\/\/127.0.0.1:7676\/a",
        Rewritten,
    ),
    (
        Decode::Json,
        r"\/\/origin.example.com\/a",
        r"\/\/127.0.0.1:7676\/a",
        Rewritten,
    ),
    (
        Decode::Json,
        r"https:\u002F\u002Forigin.example.com\u002Fa",
        r"http:\u002F\u002F127.0.0.1:7676\u002Fa",
        Rewritten,
    ),
    (
        Decode::Json,
        r"\u002f\u002fOrigin.example.com\u002fa",
        r"\u002f\u002f127.0.0.1:7676\u002fa",
        Rewritten,
    ),
    (
        Decode::Json,
        r"https:\/\/evil.test\/\/origin.example.com\/a",
        r"https:\/\/evil.test\/\/origin.example.com\/a",
        Other,
    ),
    (
        Decode::Json,
        r"https:\u002F\u002Forigin.example.com\u002eevil.test\u002Fa",
        r"https:\u002F\u002Forigin.example.com\u002eevil.test\u002Fa",
        Other,
    ),
    (
        Decode::Json,
        r"https:\/\/origin.example.com\r\n",
        r"http:\/\/127.0.0.1:7676\r\n",
        Rewritten,
    ),
    (
        Decode::Json,
        r"https:\/\/origin.example.com\n.evil.test\/a",
        r"https:\/\/origin.example.com\n.evil.test\/a",
        Other,
    ),
    (
        Decode::Json,
        r"https:\u002F\u002Forigin.example.com\u000A\u002Fa",
        r"http:\u002F\u002F127.0.0.1:7676\u000A\u002Fa",
        Rewritten,
    ),
    (
        Decode::Json,
        r"https:\u002F\u002Forigin.example.com\u000d\u000aevil.test",
        r"https:\u002F\u002Forigin.example.com\u000d\u000aevil.test",
        Other,
    ),
    (
        Decode::JsonInJs,
        r"https:\\/\\/origin.example.com\\r\\n\\/api",
        r"http:\\/\\/127.0.0.1:7676\\r\\n\\/api",
        Rewritten,
    ),
    (
        Decode::JsonInJs,
        r"https:\\/\\/origin.example.com\\n.evil.test\\/api",
        r"https:\\/\\/origin.example.com\\n.evil.test\\/api",
        Other,
    ),
    (
        Decode::JsonInJs,
        r"https:\\/\\/origin.example.com\\u002eevil.test\\/api",
        r"https:\\/\\/origin.example.com\\u002eevil.test\\/api",
        Other,
    ),
    (
        Decode::JsonInJs,
        r"https:\\/\\/origin.example.com\\/api",
        r"http:\\/\\/127.0.0.1:7676\\/api",
        Rewritten,
    ),
    (
        Decode::JsonInJs,
        r"\\/\\/origin.example.com\\/api",
        r"\\/\\/127.0.0.1:7676\\/api",
        Rewritten,
    ),
    // HTML character references.
    (
        Decode::Html,
        "https:&#x2F;&#x2F;origin.example.com&#x2F;a",
        "http:&#x2F;&#x2F;127.0.0.1:7676&#x2F;a",
        Rewritten,
    ),
    (
        Decode::Html,
        "https:&#X2f;&#X2f;origin.example.com/a",
        "http:&#X2f;&#X2f;127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::Html,
        "https:&#47;&#47;origin.example.com/a",
        "http:&#47;&#47;127.0.0.1:7676/a",
        Rewritten,
    ),
    (
        Decode::Html,
        "&sol;&sol;origin.example.com&sol;a",
        "&sol;&sol;127.0.0.1:7676&sol;a",
        Rewritten,
    ),
    (
        Decode::Html,
        "https:&#x2F;&#x2F;origin.example.com\r\n&#x2F;a",
        "http:&#x2F;&#x2F;127.0.0.1:7676\r\n&#x2F;a",
        Rewritten,
    ),
    (
        Decode::Html,
        "https:/&#47;origin.example.com/a",
        "https:/&#47;origin.example.com/a",
        Missed,
    ),
    (
        Decode::Html,
        "https:&#047;&#047;origin.example.com/a",
        "https:&#047;&#047;origin.example.com/a",
        Missed,
    ),
    // Percent-encoded query parameters.
    (
        Decode::Percent,
        "https%3A%2F%2Forigin.example.com%2Fwp-admin%2F",
        "http%3A%2F%2F127.0.0.1%3A7676%2Fwp-admin%2F",
        Rewritten,
    ),
    (
        Decode::Percent,
        "https%3a%2f%2forigin.example.com%3a443%2f",
        "http%3a%2f%2f127.0.0.1%3a7676%2f",
        Rewritten,
    ),
    (
        Decode::Percent,
        "%2F%2Forigin.example.com%2Fa",
        "%2F%2F127.0.0.1%3A7676%2Fa",
        Rewritten,
    ),
    (
        Decode::Percent,
        "https%3A%2F%2Forigin.example.com%2Eevil.test%2F",
        "https%3A%2F%2Forigin.example.com%2Eevil.test%2F",
        Other,
    ),
    (
        Decode::Percent,
        "https%3A%2F%2Forigin.example.com%3A8443%2F",
        "https%3A%2F%2Forigin.example.com%3A8443%2F",
        Other,
    ),
    (
        Decode::Percent,
        "https%3A%2F%2Fevil.test%2F%2Forigin.example.com%2F",
        "https%3A%2F%2Fevil.test%2F%2Forigin.example.com%2F",
        Other,
    ),
    (
        Decode::Percent,
        "https%3A%2F%2Forigin.example.com%0D%0A%2F",
        "http%3A%2F%2F127.0.0.1%3A7676%0D%0A%2F",
        Rewritten,
    ),
    (
        Decode::Percent,
        "https%3A%2F%2Forigin.example.com%0A.evil.test%2F",
        "https%3A%2F%2Forigin.example.com%0A.evil.test%2F",
        Other,
    ),
    (
        Decode::Percent,
        "https%253A%252F%252Forigin.example.com%252F",
        "https%253A%252F%252Forigin.example.com%252F",
        Other,
    ),
];

fn rule() -> UrlRule {
    UrlRule::new(ORIGIN, "http", TARGET)
}

#[test]
fn the_table_of_spellings_is_what_the_rule_does() {
    for &(_, input, expected, consumer) in TABLE {
        let out = rule().rewrite_all(input.as_bytes());
        assert_eq!(String::from_utf8_lossy(&out), expected, "{input:?}");
        assert_eq!(
            matches!(consumer, Rewritten | Ended),
            input != expected,
            "row {input:?} contradicts itself"
        );
    }
}

/// Decodes every table entry as its consumer would and resolves it with Node's `URL`.
const NODE_SCRIPT: &str = r#"
const rows = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const html = s => s
  .replace(/&#[xX]([0-9a-fA-F]+);/g, (_, h) => String.fromCodePoint(parseInt(h, 16)))
  .replace(/&#([0-9]+);/g, (_, d) => String.fromCodePoint(parseInt(d, 10)))
  .replace(/&sol;/g, '/');
const decode = {
  None: s => s,
  Json: s => JSON.parse('"' + s + '"'),
  JsonInJs: s => JSON.parse('"' + JSON.parse('"' + s + '"') + '"'),
  Html: html,
  Percent: s => decodeURIComponent(s),
};
const host = (kind, s) => {
  try { return new URL(decode[kind](s), 'http://127.0.0.1:7676/p/').host; }
  catch (e) { return null; }
};
console.log(JSON.stringify(rows.map(([kind, input, output]) => [host(kind, input), host(kind, output)])));
"#;

#[test]
fn node_resolves_each_row_as_the_table_says() {
    let rows: Vec<(String, &str, &str)> = TABLE
        .iter()
        .map(|(kind, input, output, _)| (format!("{kind:?}"), *input, *output))
        .collect();
    let child = Command::new("node")
        .args(["-e", NODE_SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("node is not on the PATH: the table is not checked against WHATWG URL");
        return;
    };
    let json = serde_json::to_vec(&rows).unwrap();
    child.stdin.take().unwrap().write_all(&json).unwrap();
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "node failed");
    let hosts: Vec<(Option<String>, Option<String>)> = serde_json::from_slice(&done.stdout)
        .unwrap_or_else(|e| panic!("node output {e}: {}", String::from_utf8_lossy(&done.stdout)));
    for (&(_, input, _, consumer), (before, after)) in TABLE.iter().zip(hosts) {
        // A trailing dot names the same DNS host.
        let reaches_origin = before.as_deref().map(|h| h.trim_end_matches('.')) == Some(ORIGIN);
        match consumer {
            Rewritten => {
                assert!(reaches_origin, "{input:?} resolves to {before:?}");
                assert_eq!(after.as_deref(), Some(TARGET), "{input:?} rewritten");
            }
            Other => assert!(!reaches_origin, "{input:?} does reach the origin"),
            Missed => assert!(reaches_origin, "{input:?} resolves to {before:?}"),
            Ended => {
                assert_eq!(before, None, "{input:?} is a URL");
                assert_eq!(after, None, "{input:?} rewritten is a URL");
            }
        }
    }
}

/// Every covered row, pushed through the text stage (as CSS/JS/JSON bodies are) one write
/// per byte split: the output matches the table whatever the split.
#[test]
fn the_table_holds_in_the_text_stage_for_every_split() {
    let page: Vec<u8> = TABLE
        .iter()
        .flat_map(|(_, input, _, _)| [input.as_bytes(), b" "].concat())
        .collect();
    let expected: Vec<u8> = TABLE
        .iter()
        .flat_map(|(_, _, output, _)| [output.as_bytes(), b" "].concat())
        .collect();
    let kind = rewrite_for("application/javascript");
    assert_eq!(
        run(Codec::Identity, kind, &rule(), &page, &[]).unwrap(),
        expected
    );
    for cut in 0..=page.len() {
        let out = run(Codec::Identity, kind, &rule(), &page, &[cut]).unwrap();
        assert_eq!(out, expected, "cut at {cut}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The same page through the HTML stage (text, attributes, scripts) in random splits.
    #[test]
    fn the_table_holds_in_html_for_random_splits(
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..24),
    ) {
        let mut page = b"<!doctype html><html><head><title>t</title></head><body>".to_vec();
        let mut expected = page.clone();
        for (i, &(_, input, output, _)) in TABLE.iter().enumerate() {
            let attr = |url: &str| match i % 3 {
                0 => format!("<a href=\"{url}\">x</a>\n"),
                1 => format!("<p>{url}</p>\n"),
                _ => format!("<script>var u = \"{url}\";</script>\n"),
            };
            page.extend_from_slice(attr(input).as_bytes());
            expected.extend_from_slice(attr(output).as_bytes());
        }
        page.extend_from_slice(b"</body></html>");
        expected.extend_from_slice(b"</body></html>");
        let mut cuts: Vec<usize> = picks.iter().map(|p| p.index(page.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let kind = rewrite_for("text/html; charset=utf-8");
        let out = run(Codec::Identity, kind, &rule(), &page, &cuts).unwrap();
        prop_assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
    }
}

/// The demo site's own page has `json_encode` output inside a JavaScript string
/// (`JSON.parse("{\"api\":\"https:\\/\\/origin…`); through the HTML pipeline it must come out
/// pointing at the first-party host, in the same spelling.
#[test]
fn the_demo_page_json_in_a_script_string_is_rewritten() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/site");
    let page = std::fs::read(root.join("index.html")).unwrap();
    let origin = "origin.demo-publisher.example";
    let leak = format!(r#"\"api\":\"https:\\/\\/{origin}\\/api\""#);
    assert!(
        String::from_utf8_lossy(&page).contains(&leak),
        "the fixture no longer has the double-escaped URL this test is about"
    );
    let rule = UrlRule::new(origin, "https", "www.first-party.example");
    let kind = rewrite_for("text/html; charset=utf-8");
    let out = run(Codec::Identity, kind, &rule, &page, &[]).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains(r#"\"api\":\"https:\\/\\/www.first-party.example\\/api\""#),
        "not rewritten"
    );
    assert!(
        !out.contains(&format!(r"\\/\\/{origin}")),
        "left in the output"
    );
}
