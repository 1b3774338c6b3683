use super::*;
use proptest::prelude::*;

fn lines(cookies: &[&str]) -> Reader {
    reader(cookies.iter().map(|l| l.as_bytes()))
}

fn heads<'a>(headers: &'a [(&'a str, &'a str)]) -> Vec<(&'a str, &'a [u8])> {
    headers.iter().map(|(n, v)| (*n, v.as_bytes())).collect()
}

fn aud(reader: Reader, headers: &[(&str, &str)]) -> Result<Audience, PassWhy> {
    audience(reader, heads(headers))
}

const GET: Ask<'static> = Ask {
    method: "GET",
    authorization: false,
    reader: Reader::Anonymous,
};

const WITH_COOKIES: Ask<'static> = Ask {
    reader: Reader::WithCookies,
    ..GET
};

#[test]
fn only_ts_ec_and_consent_cookies_are_not_reader_cookies() {
    use Reader::{Anonymous, ConsentOnly, WithCookies};
    let cases: &[(&[&str], Reader)] = &[
        (&[], Anonymous),
        (&[""], Anonymous),
        (&[" ; ;"], Anonymous),
        (&["ts-ec=abc.123456"], Anonymous),
        (&["ts-ec=a; ts-ec=b"], Anonymous),
        (&["ts-ec=a", "ts-ec=b"], Anonymous),
        (&[" ts-ec = v ;"], Anonymous),
        (&["ts-ec="], Anonymous),
        (&["session=alice"], WithCookies),
        (&["ts-ec=a; session=alice"], WithCookies),
        (&["ts-ec=a", "session=alice"], WithCookies),
        (&["ts-ec2=a"], WithCookies),
        (&["xts-ec=a"], WithCookies),
        (&["TS-EC=a"], WithCookies),
        (&["ts-ec"], WithCookies),
        (&["=ts-ec"], WithCookies),
        (&["ts-ec=a;b"], WithCookies),
        // Consent cookies, alone or with `ts-ec`: read and fill as anonymous.
        (&["euconsent-v2=CQ"], ConsentOnly),
        (
            &["ts-ec=a; __gpp=DBA; __gpp_sid=7", "usprivacy=1YNN"],
            ConsentOnly,
        ),
        (&["us_privacy=1---"], ConsentOnly),
        (&["euconsent-v2=CQ; session=alice"], WithCookies),
        (&["EUCONSENT-V2=CQ"], WithCookies),
        (&["__gpp_sid2=7"], WithCookies),
    ];
    for (cookie_lines, want) in cases {
        assert_eq!(lines(cookie_lines), *want, "{cookie_lines:?}");
    }
    assert_eq!(reader([&b"\xff=1"[..]]), WithCookies);
    assert_eq!(reader([&b"ts-ec=\xff"[..]]), Anonymous);
}

#[test]
fn reader_cookies_need_an_explicitly_shared_answer() {
    use Reader::{Anonymous, ConsentOnly, WithCookies};
    let max_age = [("cache-control", "max-age=300")];
    assert_eq!(aud(Anonymous, &max_age), Ok(Audience::Anonymous));
    assert_eq!(aud(ConsentOnly, &max_age), Ok(Audience::Anonymous));
    assert!(Audience::Anonymous.serves(ConsentOnly) && !Audience::Anonymous.serves(WithCookies));
    assert_eq!(aud(WithCookies, &max_age), Err(PassWhy::Cookie));
    for explicit in [
        "public, max-age=300",
        "max-age=60, s-maxage=300",
        "S-MAXAGE=1",
        "Public",
    ] {
        let h = [("Cache-Control", explicit)];
        assert_eq!(aud(WithCookies, &h), Ok(Audience::Everyone), "{explicit}");
        assert_eq!(aud(Anonymous, &h), Ok(Audience::Everyone), "{explicit}");
    }
    // Surrogate-Control alone is not an explicit sharing.
    let surrogate = [("surrogate-control", "max-age=300")];
    assert_eq!(aud(WithCookies, &surrogate), Err(PassWhy::Cookie));
    // A directive whose name merely contains "public" is not `public`.
    assert_eq!(
        aud(WithCookies, &[("cache-control", "x-public, max-age=5")]),
        Err(PassWhy::Cookie)
    );
}

#[test]
fn per_reader_markers_win_whatever_the_order_and_the_reader() {
    type Case<'a> = (&'a [(&'a str, &'a str)], PassWhy);
    let cases: &[Case] = &[
        (
            &[
                ("set-cookie", "a=1"),
                ("cache-control", "public, max-age=5"),
            ],
            PassWhy::SetCookie,
        ),
        (
            &[("cache-control", "public"), ("Set-Cookie", "a=1")],
            PassWhy::SetCookie,
        ),
        (&[("vary", "Accept-Encoding, COOKIE")], PassWhy::VaryCookie),
        (&[("vary", "*")], PassWhy::VaryStar),
        (&[("cache-control", "public, private")], PassWhy::Private),
        (
            &[("cache-control", "private=\"x\", s-maxage=60")],
            PassWhy::Private,
        ),
        (&[("cache-control", "public, no-store")], PassWhy::NoStore),
        (
            &[
                ("surrogate-control", "no-store"),
                ("cache-control", "public"),
            ],
            PassWhy::NoStore,
        ),
        // Read whole: a later Set-Cookie still wins over an earlier Vary.
        (&[("vary", "*"), ("set-cookie", "a=1")], PassWhy::SetCookie),
    ];
    for (headers, want) in cases {
        for reader in [Reader::Anonymous, Reader::WithCookies] {
            assert_eq!(aud(reader, headers), Err(*want), "{headers:?} {reader:?}");
        }
    }
    let bad = [("cache-control", &b"public\xff"[..])];
    assert_eq!(audience(Reader::Anonymous, bad), Err(PassWhy::Unreadable));
}

#[test]
fn the_page_cache_stores_a_cookie_readers_page_only_when_explicitly_shared() {
    use Reader::{Anonymous, WithCookies};
    let s = |reader, headers: &[(&str, &str)]| {
        storable(reader, 200, &heads(headers)).map(|(f, a)| (f.max_age.as_secs(), a))
    };
    assert_eq!(
        s(Anonymous, &[("cache-control", "max-age=300")]),
        Ok((300, Audience::Anonymous))
    );
    assert_eq!(
        s(WithCookies, &[("cache-control", "max-age=300")]),
        Err(PassWhy::Cookie)
    );
    assert_eq!(
        s(WithCookies, &[("cache-control", "public, max-age=300")]),
        Ok((300, Audience::Everyone))
    );
    assert_eq!(
        s(WithCookies, &[("cache-control", "s-maxage=60")]),
        Ok((60, Audience::Everyone))
    );
    assert_eq!(
        s(
            WithCookies,
            &[
                ("cache-control", "max-age=60"),
                ("surrogate-control", "max-age=60")
            ]
        ),
        Err(PassWhy::Cookie)
    );
    // The response-side reasons of the policy still come first.
    assert_eq!(
        s(WithCookies, &[("cache-control", "public")]),
        Err(PassWhy::NoTtl)
    );
    assert_eq!(
        s(WithCookies, &[("cache-control", "private, max-age=60")]),
        Err(PassWhy::Private)
    );
}

#[test]
fn entries_serve_the_readers_their_audience_names() {
    assert!(Audience::Everyone.serves(Reader::WithCookies));
    assert!(Audience::Everyone.serves(Reader::Anonymous));
    assert!(Audience::Anonymous.serves(Reader::Anonymous));
    assert!(!Audience::Anonymous.serves(Reader::WithCookies));
}

#[test]
fn a_reader_with_cookies_never_leaves_a_remembered_pass() {
    for why in PassWhy::ALL {
        assert_eq!(remembered_for(why, Reader::WithCookies), None, "{why}");
        assert_eq!(
            remembered_for(why, Reader::Anonymous),
            why.remembered_for(),
            "{why}"
        );
    }
    assert!(remembered_for(PassWhy::Private, Reader::Anonymous).is_some());
}

#[test]
fn the_origin_fetch_passes_the_platform_cache_for_readers_own_requests() {
    assert!(!origin_fetch_passes(GET));
    assert!(!origin_fetch_passes(Ask {
        method: "HEAD",
        ..GET
    }));
    assert!(origin_fetch_passes(WITH_COOKIES));
    assert!(origin_fetch_passes(Ask {
        method: "HEAD",
        ..WITH_COOKIES
    }));
    assert!(origin_fetch_passes(Ask {
        authorization: true,
        ..GET
    }));
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "get"] {
        assert!(origin_fetch_passes(Ask { method, ..GET }), "{method}");
    }
}

#[test]
fn hints_are_learned_only_from_answers_any_reader_could_get() {
    let none: [(&str, &[u8]); 0] = [];
    assert!(
        teaches_hints(GET, 200, none),
        "no lifetime: heuristically shared"
    );
    assert!(teaches_hints(
        GET,
        200,
        [("cache-control", &b"no-cache"[..])]
    ));
    assert!(!teaches_hints(GET, 404, none));
    assert!(!teaches_hints(WITH_COOKIES, 200, none));
    assert!(!teaches_hints(
        WITH_COOKIES,
        200,
        [("cache-control", &b"max-age=60"[..])]
    ));
    assert!(teaches_hints(
        WITH_COOKIES,
        200,
        [("cache-control", &b"public"[..])]
    ));
    for private in ["private", "no-store", "public, private"] {
        assert!(
            !teaches_hints(GET, 200, [("cache-control", private.as_bytes())]),
            "{private}"
        );
    }
    assert!(!teaches_hints(GET, 200, [("set-cookie", &b"a=1"[..])]));
    assert!(!teaches_hints(GET, 200, [("vary", &b"cookie"[..])]));
    // An answer that varies per reader (the edge ID, the address, any header the key does not
    // tell apart) teaches nothing: learned hints have no variants.
    for per_reader in [
        "X-TS-EC",
        "x-forwarded-for",
        "Accept-Encoding, Forwarded",
        "Origin",
    ] {
        assert!(
            !teaches_hints(GET, 200, [("vary", per_reader.as_bytes())]),
            "{per_reader}"
        );
    }
    assert!(!teaches_hints(GET, 200, [("vary", &b"\xff"[..])]));
    assert!(teaches_hints(
        GET,
        200,
        [
            ("Vary", &b"Accept-Encoding"[..]),
            ("vary", &b"accept, Sec-Fetch-Dest"[..])
        ]
    ));
    let authorized = Ask {
        authorization: true,
        ..GET
    };
    assert!(!teaches_hints(authorized, 200, none));
    assert!(!teaches_hints(
        Ask {
            method: "POST",
            ..GET
        },
        200,
        none
    ));
}

/// Cookie names, some only one character away from the service's own.
fn cookie_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("ts-ec".to_owned()),
        2 => prop::sample::select(&CONSENT_COOKIES[..]).prop_map(str::to_owned),
        1 => Just("ts-ec2".to_owned()),
        1 => Just("__gpp_sid_".to_owned()),
        1 => Just("xts-ec".to_owned()),
        1 => Just("TS-EC".to_owned()),
        1 => Just("ts_ec".to_owned()),
        1 => Just("session".to_owned()),
        1 => "[A-Za-z0-9_-]{1,8}",
    ]
}

/// Directives and headers an origin might send, valid or not.
fn header() -> impl Strategy<Value = (&'static str, Vec<u8>)> {
    let name = prop_oneof![
        Just("cache-control"),
        Just("Cache-Control"),
        Just("surrogate-control"),
        Just("vary"),
        Just("set-cookie"),
        Just("age"),
        Just("x-other"),
    ];
    let word = prop_oneof![
        Just("public".to_owned()),
        Just("private".to_owned()),
        Just("no-store".to_owned()),
        Just("no-cache".to_owned()),
        Just("max-age=60".to_owned()),
        Just("s-maxage=60".to_owned()),
        Just("cookie".to_owned()),
        Just("*".to_owned()),
        "[ -~]{0,12}",
    ];
    let value = proptest::collection::vec(word, 0..4).prop_map(|w| w.join(", ").into_bytes());
    let bytes = proptest::collection::vec(any::<u8>(), 0..20);
    (name, prop_oneof![4 => value, 1 => bytes])
}

fn directives(headers: &[(&str, Vec<u8>)], header: &str) -> Vec<String> {
    headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(header))
        .flat_map(|(_, v)| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|d| {
                    d.split('=')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

proptest! {
    /// Whatever the cookies, however they are spread over `Cookie` lines, the request is
    /// anonymous exactly when every cookie it carries is named `ts-ec`, and consent-only when
    /// every one is `ts-ec` or a consent cookie and one is the latter.
    #[test]
    fn anonymous_exactly_when_every_cookie_is_ts_ec(
        cookies in proptest::collection::vec((cookie_name(), "[A-Za-z0-9.=_-]{0,10}"), 0..6),
        split in 1usize..4,
    ) {
        let pairs: Vec<String> = cookies.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let cookie_lines: Vec<String> =
            pairs.chunks(split).map(|c| c.join("; ")).collect();
        let consent = |n: &str| CONSENT_COOKIES.contains(&n);
        let want = if cookies.iter().all(|(n, _)| n == "ts-ec") {
            Reader::Anonymous
        } else if cookies.iter().all(|(n, _)| n == "ts-ec" || consent(n)) {
            Reader::ConsentOnly
        } else {
            Reader::WithCookies
        };
        prop_assert_eq!(reader(cookie_lines.iter().map(|l| l.as_bytes())), want);
    }

    /// Never a panic; an answer stored or learned from carries no per-reader marker; one
    /// stored for a reader with cookies (or for every reader) said `public` or `s-maxage`;
    /// the verdict does not depend on the order of the headers.
    #[test]
    fn nothing_per_reader_is_ever_shared(
        headers in proptest::collection::vec(header(), 0..6),
        cookies in any::<bool>(),
        status in prop_oneof![Just(200u16), 100u16..600],
    ) {
        let reader = if cookies { Reader::WithCookies } else { Reader::Anonymous };
        let view: Vec<(&str, &[u8])> = headers.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        let verdict = audience(reader, view.iter().copied());
        let reversed = audience(reader, view.iter().rev().copied());
        prop_assert_eq!(verdict, reversed);
        let stored = storable(reader, status, &view);
        let ask = Ask { method: "GET", authorization: false, reader };
        let hints = teaches_hints(ask, status, view.iter().copied());
        if let Ok((_, stored_for)) = stored {
            prop_assert_eq!(Ok(stored_for), verdict);
        }
        if stored.is_ok() || hints {
            prop_assert!(verdict.is_ok());
        }
        if let Ok(who) = verdict {
            prop_assert!(headers.iter().all(|(n, _)| !n.eq_ignore_ascii_case("set-cookie")));
            let cc = directives(&headers, "cache-control");
            prop_assert!(!cc.iter().any(|d| d == "private" || d == "no-store"));
            prop_assert!(!directives(&headers, "vary").iter().any(|d| d == "cookie" || d == "*"));
            let explicit = cc.iter().any(|d| d == "public" || d == "s-maxage");
            prop_assert_eq!(who == Audience::Everyone, explicit);
            if reader == Reader::WithCookies {
                prop_assert!(explicit);
            }
        }
    }
}
