use super::spelling::MAX_SKIPPED;
use super::*;
use proptest::prelude::*;

fn rule() -> UrlRule {
    UrlRule::new("origin.example.com", "http", "127.0.0.1:7676")
}

fn rewrite(input: &str) -> String {
    String::from_utf8(rule().rewrite_all(input.as_bytes())).unwrap()
}

#[test]
fn rewrites_every_form_of_the_origin() {
    let cases = [
        ("https://origin.example.com/a", "http://127.0.0.1:7676/a"),
        ("http://origin.example.com", "http://127.0.0.1:7676"),
        ("HTTPS://origin.example.com/", "http://127.0.0.1:7676/"),
        (
            "src=\"//origin.example.com/x.js\"",
            "src=\"//127.0.0.1:7676/x.js\"",
        ),
        (
            r#""https:\/\/origin.example.com\/api""#,
            r#""http:\/\/127.0.0.1:7676\/api""#,
        ),
        (
            r#""\/\/origin.example.com\/api""#,
            r#""\/\/127.0.0.1:7676\/api""#,
        ),
        (
            "url(https://origin.example.com/bg.png)",
            "url(http://127.0.0.1:7676/bg.png)",
        ),
        (
            "a.jpg 1x, https://origin.example.com/b.jpg 2x,//origin.example.com/c.jpg 3x",
            "a.jpg 1x, http://127.0.0.1:7676/b.jpg 2x,//127.0.0.1:7676/c.jpg 3x",
        ),
        (
            "https://origin.example.com?q=1#f",
            "http://127.0.0.1:7676?q=1#f",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(rewrite(input), expected, "input {input:?}");
    }
}

#[test]
fn every_spelling_a_browser_resolves_to_the_origin_is_rewritten() {
    let cases = [
        ("HTTPS://ORIGIN.Example.COM/a", "http://127.0.0.1:7676/a"),
        (
            "https://origin.example.com:443/a",
            "http://127.0.0.1:7676/a",
        ),
        (
            "https://origin.example.com:0443/a",
            "http://127.0.0.1:7676/a",
        ),
        ("http://origin.example.com:80", "http://127.0.0.1:7676"),
        ("https://origin.example.com./a", "http://127.0.0.1:7676/a"),
        (
            "https://origin.example.com.:443/a",
            "http://127.0.0.1:7676/a",
        ),
        ("//Origin.Example.Com./x", "//127.0.0.1:7676/x"),
        // Scheme-relative URLs resolve against the proxied page: http here.
        ("//origin.example.com:80/x", "//127.0.0.1:7676/x"),
        (
            r#""https:\/\/ORIGIN.example.com:443\/api""#,
            r#""http:\/\/127.0.0.1:7676\/api""#,
        ),
        (
            r#""\/\/origin.example.com.\/""#,
            r#""\/\/127.0.0.1:7676\/""#,
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(rewrite(input), expected, "input {input:?}");
    }
}

#[test]
fn ports_follow_the_scheme_and_the_origin_authority() {
    // The default port belongs to the URL's scheme, or for `//` to the request's.
    for input in [
        "http://origin.example.com:443/",
        "https://origin.example.com:80/",
        "//origin.example.com:443/",
        "https://origin.example.com:443443/",
        "https://origin.example.com:/",
        "https://origin.example.com.:8443/",
        "https://origin.example.com../",
    ] {
        assert_eq!(rewrite(input), input);
    }
    let https = UrlRule::new("o.test", "https", "p.test");
    assert_eq!(https.rewrite_all(b"//o.test:443/"), b"//p.test/");
    assert_eq!(https.rewrite_all(b"//o.test:80/"), b"//o.test:80/");
    // An origin on its own port: that port is required, unless it is the default one.
    let own_port = UrlRule::new("O.test:8080", "https", "p.test");
    assert_eq!(
        own_port.rewrite_all(b"http://o.test:8080/ http://o.test/ https://o.test:8080"),
        b"https://p.test/ http://o.test/ https://p.test"
    );
    let default_port = UrlRule::new("o.test:443", "https", "p.test");
    assert_eq!(
        default_port.rewrite_all(b"https://o.test/ https://o.test:443/ http://o.test/"),
        b"https://p.test/ https://p.test/ http://o.test/"
    );
}

#[test]
fn leaves_other_authorities_alone() {
    for input in [
        "https://origin.example.com.evil.test/",
        "https://origin.example.comx/",
        "https://origin.example.com:8443/",
        "https://origin.example.com@evil.test/",
        "https://notorigin.example.com/",
        "https://cdn.example.com/origin.example.com/",
        "origin.example.com without a scheme",
        "https:origin.example.com",
        "https://origin.example.co",
        "//user@origin.example.com/",
    ] {
        assert_eq!(rewrite(input), input);
    }
}

#[test]
fn host_lengths_in_both_directions() {
    let longer_origin = UrlRule::new("origin.really-long-publisher.example", "https", "a.io");
    assert_eq!(
        longer_origin.rewrite_all(b"<a href=\"https://origin.really-long-publisher.example/p\">"),
        b"<a href=\"https://a.io/p\">"
    );
    let shorter_origin = UrlRule::new("o.io", "https", "www.first-party-publisher.example");
    assert_eq!(
        shorter_origin.rewrite_all(b"x //o.io/p y http://o.io"),
        b"x //www.first-party-publisher.example/p y https://www.first-party-publisher.example"
    );
    // A one-letter host (an intranet name) is searched for by its only byte, in either case.
    let one_letter = UrlRule::new("x", "https", "a.io");
    assert_eq!(
        one_letter.rewrite_all(b"//x/p http://X:80 //xx/"),
        b"//a.io/p https://a.io //xx/"
    );
}

/// Splits `input` at the given cut points (sorted, deduplicated) and runs the replacer.
fn run_split(rule: &UrlRule, input: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut replacer = StreamReplacer::new(rule.clone());
    let mut out = Vec::new();
    let mut last = 0;
    for &cut in cuts {
        replacer.write(&input[last..cut], &mut out);
        last = cut;
    }
    replacer.write(&input[last..], &mut out);
    replacer.finish(&mut out);
    out
}

#[test]
fn every_single_split_point_gives_the_same_output() {
    let input = b"<img srcset=\"https://origin.example.com/a.jpg 1x, //origin.example.com/b.jpg 2x\">\
        x https:\\/\\/origin.example.com\\/y https://origin.example.com.evil/ http://origin.example.com";
    let whole = rule().rewrite_all(input);
    for cut in 0..=input.len() {
        assert_eq!(run_split(&rule(), input, &[cut]), whole, "cut at {cut}");
    }
    // One byte at a time.
    let all: Vec<usize> = (1..input.len()).collect();
    assert_eq!(run_split(&rule(), input, &all), whole);
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("https://origin.example.com".to_owned()),
        Just("http://origin.example.com".to_owned()),
        Just("//origin.example.com".to_owned()),
        Just("https:\\/\\/origin.example.com".to_owned()),
        Just("origin.example.com".to_owned()),
        Just(".evil".to_owned()),
        Just(":8443".to_owned()),
        Just("/path é✓😀 ".to_owned()),
        Just("HTTPS:".to_owned()),
        Just("//ORIGIN.example.COM".to_owned()),
        Just(".".to_owned()),
        Just(":443".to_owned()),
        Just(":80".to_owned()),
        Just(":44".to_owned()),
        Just(":".to_owned()),
        Just("https:\\\\/\\\\/origin.example.com".to_owned()),
        Just("\\u002F\\u002forigin.example.com".to_owned()),
        Just("https:&#x2F;&#47;&sol;".to_owned()),
        Just("&#x2F;&#x2F;origin.example.com".to_owned()),
        Just("https%3A%2F%2Forigin.example.com".to_owned()),
        Just("%2f%2fORIGIN.example.com%3a80".to_owned()),
        Just("%2e".to_owned()),
        Just("%3A443".to_owned()),
        Just("\\u002e".to_owned()),
        Just("\t\u{ad}\u{3002}".to_owned()),
        Just("\r\n".to_owned()),
        Just("\n".to_owned()),
        Just("\t".to_owned()),
        Just("\\n".to_owned()),
        Just("\\\\r".to_owned()),
        Just("\\u000A".to_owned()),
        Just("%0D%0A".to_owned()),
        Just("\n".repeat(MAX_SKIPPED)),
        Just("evil.test".to_owned()),
        Just("-->".to_owned()),
        Just("@".to_owned()),
        Just("https:/\\origin.example.com".to_owned()),
        Just("/\\".to_owned()),
        "[a-z/:. \\\\\"%&#;u0-9]{0,12}",
    ]
}

proptest! {
    #[test]
    fn output_is_independent_of_chunking(
        parts in proptest::collection::vec(fragment(), 0..24),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let input = parts.concat().into_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        points.sort_unstable();
        points.dedup();
        let whole = rule().rewrite_all(&input);
        prop_assert_eq!(run_split(&rule(), &input, &points), whole);
    }

    /// The host and scheme comparison agrees with folding every byte's case, and its word
    /// comparison (wasm's) with `==`, for lengths around the eight-byte steps it reads in
    /// and for bytes that differ anywhere.
    #[test]
    fn compared_as_written_then_folded_as_eq_ignore_ascii_case(
        lower in "[a-z0-9.:-]{0,40}",
        flips in proptest::collection::vec(any::<bool>(), 40),
        change in proptest::option::of((0..40usize, any::<u8>())),
        cut in 0..3usize,
    ) {
        let lower = lower.as_bytes();
        let mut bytes: Vec<u8> = lower
            .iter()
            .zip(&flips)
            .map(|(&b, &flip)| if flip { b.to_ascii_uppercase() } else { b })
            .collect();
        if let Some((at, b)) = change {
            if let Some(slot) = bytes.get_mut(at) {
                *slot = b;
            }
        }
        bytes.truncate(bytes.len().saturating_sub(cut));
        prop_assert_eq!(is_lowercase_of(&bytes, lower), bytes.eq_ignore_ascii_case(lower));
        if bytes.len() == lower.len() {
            prop_assert_eq!(same_words(&bytes, lower), bytes == lower);
        }
    }

    #[test]
    fn bytes_outside_matches_are_unchanged(input in "[a-z/:. <>\"=]{0,200}") {
        // Without the origin authority in the input nothing may change.
        prop_assume!(!input.contains("origin.example.com"));
        prop_assert_eq!(rule().rewrite_all(input.as_bytes()), input.as_bytes());
    }
}

#[test]
fn every_form_keeps_its_spelling() {
    let cases = [
        (
            r#"JSON.parse("{\"api\":\"https:\\/\\/origin.example.com\\/api\"}")"#,
            r#"JSON.parse("{\"api\":\"http:\\/\\/127.0.0.1:7676\\/api\"}")"#,
        ),
        (r"\\/\\/Origin.Example.com\\/", r"\\/\\/127.0.0.1:7676\\/"),
        (
            r#"{"u":"https:\u002F\u002Forigin.example.com\u002Fa"}"#,
            r#"{"u":"http:\u002F\u002F127.0.0.1:7676\u002Fa"}"#,
        ),
        (
            r"http:\u002f\u002forigin.example.com:80\u002f",
            r"http:\u002f\u002f127.0.0.1:7676\u002f",
        ),
        (
            r"\u002F\u002Forigin.example.com",
            r"\u002F\u002F127.0.0.1:7676",
        ),
        (
            "https:&#x2F;&#x2F;origin.example.com&#x2F;a",
            "http:&#x2F;&#x2F;127.0.0.1:7676&#x2F;a",
        ),
        (
            "https:&#X2f;&#X2f;origin.example.com.",
            "http:&#X2f;&#X2f;127.0.0.1:7676",
        ),
        (
            "https:&#47;&#47;origin.example.com/",
            "http:&#47;&#47;127.0.0.1:7676/",
        ),
        (
            "&sol;&sol;origin.example.com&sol;",
            "&sol;&sol;127.0.0.1:7676&sol;",
        ),
        (
            "/wp-login.php?redirect_to=https%3A%2F%2Forigin.example.com%2Fwp-admin%2F&amp;x=1",
            "/wp-login.php?redirect_to=http%3A%2F%2F127.0.0.1%3A7676%2Fwp-admin%2F&amp;x=1",
        ),
        (
            "?u=HTTPS%3a%2f%2forigin.example.com%3a443%2f",
            "?u=http%3a%2f%2f127.0.0.1%3a7676%2f",
        ),
        (
            "?u=%2F%2Forigin.example.com%2F",
            "?u=%2F%2F127.0.0.1%3A7676%2F",
        ),
        // Character references in an attribute around a scheme-relative URL.
        (
            "data-x=\"{&quot;u&quot;:&quot;//origin.example.com/a&quot;}\"",
            "data-x=\"{&quot;u&quot;:&quot;//127.0.0.1:7676/a&quot;}\"",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(rewrite(input), expected, "input {input:?}");
    }
}

#[test]
fn backslashes_and_single_slashes_are_slashes() {
    let cases = [
        (r"https:\origin.example.com/a", "http://127.0.0.1:7676/a"),
        (r"https:/\origin.example.com/a", "http://127.0.0.1:7676/a"),
        (r"https:\\origin.example.com/a", "http://127.0.0.1:7676/a"),
        ("https:/origin.example.com/a", "http://127.0.0.1:7676/a"),
        ("https:///origin.example.com/a", "http://127.0.0.1:7676/a"),
        (
            r"href='\\origin.example.com/a'",
            "href='//127.0.0.1:7676/a'",
        ),
        (
            r"href='/\origin.example.com/a'",
            "href='//127.0.0.1:7676/a'",
        ),
        (
            "href='///origin.example.com/a'",
            "href='//127.0.0.1:7676/a'",
        ),
        (
            r"https:\/origin.example.com\/a",
            r"http:\/\/127.0.0.1:7676\/a",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(rewrite(input), expected, "input {input:?}");
    }
}

#[test]
fn boundaries_that_leave_the_url_alone() {
    for input in [
        // Slashes inside another URL's path.
        "https://evil.test//origin.example.com/a",
        "https://evil.test:8080//origin.example.com/a",
        "https://evil.test/x///origin.example.com/a",
        r"https:\/\/evil.test\/\/origin.example.com\/a",
        "https%3A%2F%2Fevil.test%2F%2Forigin.example.com%2Fa",
        "https:&#x2F;&#x2F;evil.test&#x2F;&#x2F;origin.example.com",
        // A longer host once decoded, percent-decoded, or mapped by IDNA.
        "https://origin.example.com%2eevil.test/",
        "https://origin.example.com%2Eevil.test/",
        "https://origin.example.com\tevil.test/",
        "https://origin.example.com\u{ad}evil.test/",
        "https://origin.example.com\u{3002}evil.test/",
        r"https:\u002F\u002Forigin.example.com\u002eevil.test",
        "https%3A%2F%2Forigin.example.com%2Eevil.test%2F",
        "https%3A%2F%2Forigin.example.com%3A8443%2F",
        "https%3A%2F%2Forigin.example.com%40evil.test",
        // Not covered: four slashes, a form mixed within one URL, no slash at all.
        "https:////origin.example.com/a",
        "https:/&#47;origin.example.com/a",
        "https:origin.example.com/a",
    ] {
        assert_eq!(rewrite(input), input);
    }
}

#[test]
fn the_percent_form_encodes_the_whole_authority() {
    let ipv6 = UrlRule::new("o.test", "https", "[::1]:8443");
    assert_eq!(
        ipv6.rewrite_all(b"x=https%3a%2f%2fo.test%2f y=//o.test/"),
        b"x=https%3a%2f%2f%5b%3a%3a1%5d%3a8443%2f y=//[::1]:8443/".to_vec()
    );
}

#[test]
fn what_precedes_a_write_decides_its_leading_slashes() {
    let input = b"https://evil.test//origin.example.com/a x //origin.example.com/b";
    let whole = rule().rewrite_all(input);
    assert_eq!(
        whole,
        b"https://evil.test//origin.example.com/a x //127.0.0.1:7676/b".to_vec()
    );
    for cut in 0..=input.len() {
        assert_eq!(run_split(&rule(), input, &[cut]), whole, "cut at {cut}");
    }
    // Bytes passed through unrewritten still count as what came before.
    let mut replacer = StreamReplacer::new(rule());
    let mut out = Vec::new();
    replacer.write(b"https://evil.test/", &mut out);
    replacer.pass_held(&mut out);
    replacer.write(b"/origin.example.com/a", &mut out);
    replacer.finish(&mut out);
    assert_eq!(out, b"https://evil.test//origin.example.com/a".to_vec());
}

#[test]
fn every_split_of_the_new_forms_gives_the_same_output() {
    let input =
        "a https:\\\\/\\\\/origin.example.com\\\\/ b http:\\u002F\\u002Forigin.example.com:80 \
        c https:&#x2F;&#x2F;origin.example.com&#x2F; d ?r=https%3A%2F%2Forigin.example.com%2F \
        e https%3A%2F%2Forigin.example.com%2eevil f https://evil.test//origin.example.com \
        g /\\origin.example.com h https:/origin.example.com j \t i //origin.example.com\u{3002}";
    let input = input.as_bytes();
    let whole = rule().rewrite_all(input);
    let rewritten = String::from_utf8(whole.clone()).unwrap();
    assert_eq!(rewritten.matches("127.0.0.1").count(), 6, "{rewritten}");
    for cut in 0..=input.len() {
        assert_eq!(run_split(&rule(), input, &[cut]), whole, "cut at {cut}");
    }
    let all: Vec<usize> = (1..input.len()).collect();
    assert_eq!(run_split(&rule(), input, &all), whole);
}

#[test]
fn the_match_byte_set_holds_only_match_bytes() {
    let rule = UrlRule::new("a-b.test", "https", "t.test");
    for b in [b' ', b'"', b'<', b'\'', b'=', b'(', b','] {
        assert!(!rule.in_match(b), "{}", b as char);
    }
    for b in [
        b'a', b'Z', b'0', b'/', b'\\', b'%', b'&', b'#', b';', b':', b'.', b'-', b'\t', b'\n',
        b'\r',
    ] {
        assert!(rule.in_match(b), "{}", b as char);
    }
    assert!(!UrlRule::new("ab.test", "https", "t.test").in_match(b'-'));
}

#[test]
fn the_host_is_found_in_either_case_of_every_byte() {
    // The search anchors on one byte of the host; whichever it is, an uppercase or lowercase
    // spelling of it must be found, at the host's start or its end.
    for host in [
        "origin.example.com",
        "x.io",
        "ab",
        "q",
        "[::1]",
        "cdn-77.test",
    ] {
        let rule = UrlRule::new(host, "http", "127.0.0.1:7676");
        for spelled in [host.to_owned(), host.to_ascii_uppercase()] {
            for (input, expected) in [
                (
                    format!("https://{spelled}/a"),
                    "http://127.0.0.1:7676/a".to_owned(),
                ),
                (format!("a //{spelled}"), "a //127.0.0.1:7676".to_owned()),
            ] {
                let out = rule.rewrite_all(input.as_bytes());
                assert_eq!(String::from_utf8_lossy(&out), expected, "input {input:?}");
            }
        }
    }
}

/// A URL at the end of a line: tab, CR and LF after the host (raw, escaped in JS/JSON, or
/// percent-encoded in the percent form) are looked past, and the next character decides.
#[test]
fn tab_and_newlines_after_the_host_are_looked_past() {
    for (input, want) in [
        (
            "source:  http://origin.example.com:80\r\n<!-- -->",
            "source:  http://127.0.0.1:7676\r\n<!-- -->",
        ),
        ("//origin.example.com\n", "//127.0.0.1:7676\n"),
        (
            "//origin.example.com\r\n\t\r\n/a",
            "//127.0.0.1:7676\r\n\t\r\n/a",
        ),
        (
            r#""https:\/\/origin.example.com\n""#,
            r#""http:\/\/127.0.0.1:7676\n""#,
        ),
        (
            r#""https:\\/\\/origin.example.com\\r\\n""#,
            r#""http:\\/\\/127.0.0.1:7676\\r\\n""#,
        ),
        (
            r"\u002F\u002Forigin.example.com\u000D\u000A ",
            r"\u002F\u002F127.0.0.1:7676\u000D\u000A ",
        ),
        (
            "https%3A%2F%2Forigin.example.com%0A&x",
            "http%3A%2F%2F127.0.0.1%3A7676%0A&x",
        ),
    ] {
        assert_eq!(rewrite(input), want, "{input:?}");
    }
    for input in [
        // The host goes on after the newline.
        "//origin.example.com\n.evil.test/",
        "//origin.example.com\r\nevil.test",
        "//origin.example.com\n\t-x.test",
        "//origin.example.com\n:8443/",
        "http://origin.example.com:80\n80/",
        r"https:\/\/origin.example.com\n.evil.test",
        r"https:\\/\\/origin.example.com\\n.evil.test",
        r"https:\\/\\/origin.example.com\\u002eevil.test",
        r"https:\u002F\u002Forigin.example.com\u000Aevil.test",
        "https%3A%2F%2Forigin.example.com%0A.evil.test",
        // `%0A` outside the percent form: an invalid host, left alone.
        "https://origin.example.com%0A/",
    ] {
        assert_eq!(rewrite(input), input, "{input:?}");
    }
}

/// At most `MAX_SKIPPED` bytes of tab and newlines are looked past; beyond, the match is left
/// alone, so the streaming replacer decides from a bounded window. Either way the output is
/// the same for every split, including a cut between CR and LF.
#[test]
fn the_bytes_looked_past_are_bounded_and_every_split_agrees() {
    let at_limit = format!("//origin.example.com{}/a", "\n".repeat(MAX_SKIPPED));
    let over = format!("//origin.example.com{}/a", "\n".repeat(MAX_SKIPPED + 1));
    assert_eq!(
        rewrite(&at_limit),
        at_limit.replace("origin.example.com", "127.0.0.1:7676")
    );
    assert_eq!(rewrite(&over), over);
    let input = format!(
        "a //origin.example.com\r\n b //origin.example.com\r\n.evil c {at_limit} d {over} \
         e https:\\/\\/origin.example.com\\r\\n f //origin.example.com\\u000A\\u000D"
    );
    let input = input.as_bytes();
    let whole = rule().rewrite_all(input);
    assert_eq!(
        String::from_utf8_lossy(&whole).matches("127.0.0.1").count(),
        4,
        "{}",
        String::from_utf8_lossy(&whole)
    );
    for cut in 0..=input.len() {
        assert_eq!(run_split(&rule(), input, &[cut]), whole, "cut at {cut}");
    }
    let all: Vec<usize> = (1..input.len()).collect();
    assert_eq!(run_split(&rule(), input, &all), whole);
}

/// After a port only more port digits (`:80\n80` is port 8080) or `@` (`:80@evil.test` makes
/// the origin user info of another host) continue the authority; URL parsing fails on
/// anything else, so it ends the URL, also after a newline (`<!-- http://origin:80\n-->`).
#[test]
fn after_a_port_only_digits_and_at_continue() {
    for (input, want) in [
        (
            "<!-- http://origin.example.com:80\n-->",
            "<!-- http://127.0.0.1:7676\n-->",
        ),
        (
            "<!-- http://origin.example.com:80\r\n-->",
            "<!-- http://127.0.0.1:7676\r\n-->",
        ),
        (
            "see http://origin.example.com:80\nfor more",
            "see http://127.0.0.1:7676\nfor more",
        ),
        (
            "//origin.example.com:80\r\n\t_x",
            "//127.0.0.1:7676\r\n\t_x",
        ),
        (
            "https://origin.example.com:443\n.",
            "http://127.0.0.1:7676\n.",
        ),
        (
            "https://origin.example.com.:443\n:",
            "http://127.0.0.1:7676\n:",
        ),
        (
            "http://origin.example.com:80-->",
            "http://127.0.0.1:7676-->",
        ),
        (
            "http://origin.example.com:80\u{3002}",
            "http://127.0.0.1:7676\u{3002}",
        ),
        (
            r#""https:\/\/origin.example.com:443\n-->""#,
            r#""http:\/\/127.0.0.1:7676\n-->""#,
        ),
        (
            r#""https:\\/\\/origin.example.com:443\\r\\n-""#,
            r#""http:\\/\\/127.0.0.1:7676\\r\\n-""#,
        ),
        (
            r"\u002F\u002Forigin.example.com:80\u000Aa",
            r"\u002F\u002F127.0.0.1:7676\u000Aa",
        ),
        (
            "https%3A%2F%2Forigin.example.com%3A443%0A-",
            "http%3A%2F%2F127.0.0.1%3A7676%0A-",
        ),
        // `%0A` outside the percent form: URL parsing fails at the `%` after the port.
        (
            "http://origin.example.com:80%0A-",
            "http://127.0.0.1:7676%0A-",
        ),
    ] {
        assert_eq!(rewrite(input), want, "{input:?}");
    }
    for input in [
        // Another port once the newline is removed.
        "http://origin.example.com:80\n80/",
        "http://origin.example.com:80\r\n\t0",
        r#""https:\/\/origin.example.com:443\n3""#,
        r"https:\u002F\u002Forigin.example.com:443\u000A\u0033",
        "https%3A%2F%2Forigin.example.com%3A443%0A%33",
        // User info of another host.
        "http://origin.example.com:80@evil.test/",
        "http://origin.example.com:80\n@evil.test/",
        r#""https:\/\/origin.example.com:443\n\u0040evil.test""#,
        "https%3A%2F%2Forigin.example.com%3A443%40evil.test",
        // More than the bounded window of newlines.
        &format!(
            "http://origin.example.com:80{}-->",
            "\n".repeat(MAX_SKIPPED + 1)
        ),
    ] {
        assert_eq!(rewrite(input), input, "{input:?}");
    }
}

/// How one form writes a URL with the origin's default port, what it becomes, and the
/// spellings of tab, LF and CR it looks past.
struct PortForm {
    url: &'static str,
    /// For [`rule`], whose target has a port.
    rewritten: &'static str,
    /// For [`bare_rule`], whose target has none, and the port it adds when the next
    /// character would go on with its host.
    rewritten_bare: &'static str,
    port: &'static str,
    removed: &'static [&'static str],
}

/// A rule whose target authority has no port.
fn bare_rule() -> UrlRule {
    UrlRule::new("origin.example.com", "http", "p.test")
}

const PORT_FORMS: [PortForm; 4] = [
    PortForm {
        url: "http://origin.example.com:80",
        rewritten: "http://127.0.0.1:7676",
        rewritten_bare: "http://p.test",
        port: ":80",
        removed: &["\n", "\r", "\t"],
    },
    PortForm {
        url: "//origin.example.com.:80",
        rewritten: "//127.0.0.1:7676",
        rewritten_bare: "//p.test",
        port: ":80",
        removed: &["\n", "\r", "\t"],
    },
    PortForm {
        url: r"https:\/\/origin.example.com:443",
        rewritten: r"http:\/\/127.0.0.1:7676",
        rewritten_bare: r"http:\/\/p.test",
        port: ":80",
        removed: &["\n", "\r", "\t", r"\n", r"\r", r"\t", r"\u000A", r"\u000d"],
    },
    PortForm {
        url: "https%3A%2F%2Forigin.example.com%3A443",
        rewritten: "http%3A%2F%2F127.0.0.1%3A7676",
        rewritten_bare: "http%3A%2F%2Fp.test",
        port: "%3A80",
        removed: &["\n", "\r", "\t", "%0A", "%0d", "%09"],
    },
];

proptest! {
    /// An origin URL with a port, then tab and newlines, then one character (or the end):
    /// rewritten unless the character is a digit or `@` (or the newlines are more than the
    /// window), with the same output for every split. To a target without a port, the port
    /// is written when the character would go on with the target's host.
    #[test]
    fn after_a_port_a_character_other_than_a_digit_or_at_ends_the_url(
        form in 0..PORT_FORMS.len(),
        removed in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        next in proptest::option::of(prop_oneof![
            Just('-'), Just('>'), Just('@'), Just('.'), Just(':'), Just('_'), Just('/'),
            Just('?'), Just('#'), Just(' '), Just('"'), Just('<'), Just('é'), Just('\u{3002}'),
            proptest::char::range('0', '9'),
            proptest::char::range('a', 'z'),
            proptest::char::range('A', 'Z'),
        ]),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let form = &PORT_FORMS[form];
        let gap: String = removed.iter().map(|i| *i.get(form.removed)).collect();
        let tail = format!("{gap}{}", next.map(String::from).unwrap_or_default());
        let input = format!("x {}{tail}", form.url);
        let ends = next.is_none_or(|c| !c.is_ascii_digit() && c != '@');
        let host_char = next.is_some_and(|c| c.is_alphanumeric() || ".-_:\u{3002}".contains(c));
        let rewritten = ends && gap.len() <= MAX_SKIPPED;
        for (rule, want) in [
            (rule(), format!("x {}{tail}", form.rewritten)),
            (
                bare_rule(),
                format!(
                    "x {}{}{tail}",
                    form.rewritten_bare,
                    if host_char { form.port } else { "" }
                ),
            ),
        ] {
            let want = if rewritten { want } else { input.clone() };
            let input = input.as_bytes();
            let text = |out: Vec<u8>| String::from_utf8(out).unwrap();
            prop_assert_eq!(text(rule.rewrite_all(input)), want.as_str());
            for cut in 0..=input.len() {
                prop_assert_eq!(
                    text(run_split(&rule, input, &[cut])),
                    want.as_str(),
                    "cut at {}",
                    cut
                );
            }
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            points.sort_unstable();
            points.dedup();
            prop_assert_eq!(
                text(run_split(&rule, input, &points)),
                want.as_str()
            );
        }
    }
}

/// A target without a port gets one after the match when the character that ended the URL
/// would go on with its host: `https://origin:443.evil.test` is no URL, and must not become
/// `https://p.test.evil.test`.
#[test]
fn a_target_without_a_port_keeps_one_where_its_host_would_go_on() {
    let rule = UrlRule::new("o.test", "https", "p.test");
    for (input, want) in [
        (
            "<!-- https://o.test:443\r\n-->",
            "<!-- https://p.test:443\r\n-->",
        ),
        (
            "https://o.test:443.evil.test/",
            "https://p.test:443.evil.test/",
        ),
        ("//o.test:443\n-x.evil.test", "//p.test:443\n-x.evil.test"),
        ("http://o.test:80\nevil", "https://p.test:443\nevil"),
        (
            r"https:\/\/o.test:443\u000A_",
            r"https:\/\/p.test:443\u000A_",
        ),
        (
            "https%3a%2f%2fo.test%3a443%0a-",
            "https%3a%2f%2fp.test%3a443%0a-",
        ),
        (
            "https://o.test:443%2eevil.test",
            "https://p.test:443%2eevil.test",
        ),
        // What cannot go on with a host: no port, as before.
        ("https://o.test:443\n/a", "https://p.test\n/a"),
        ("https://o.test:443 x", "https://p.test x"),
        ("\"https://o.test:443\"", "\"https://p.test\""),
        ("https://o.test:443", "https://p.test"),
    ] {
        assert_eq!(
            String::from_utf8_lossy(&rule.rewrite_all(input.as_bytes())),
            want,
            "{input:?}"
        );
    }
    let ipv6 = UrlRule::new("o.test:8080", "http", "[::1]");
    assert_eq!(
        ipv6.rewrite_all(b"http://o.test:8080\n-->"),
        b"http://[::1]:80\n-->"
    );
}
