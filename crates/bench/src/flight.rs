//! A small, independent reader of Next.js Flight payloads, for checking and describing the
//! benchmark's RSC pages.
//!
//! It shares no code with the core's streaming rewriter. It works on whole bodies: it decodes
//! the inline `self.__next_f.push([1,"…"])` strings of an HTML page into one row stream (a
//! `text/x-component` body already is one) and splits the stream into rows. The benchmark
//! uses it to check the pipeline's output row by row (each output row is the input row with
//! the URL rule applied, and every `T` row's declared length matches its text) and to report a
//! page's largest `T` row.

use trusted_server_core::UrlRule;

/// How a Flight text push starts; the string literal follows.
const PUSH: &[u8] = b"self.__next_f.push([1,\"";

/// Row tags whose rows are length-prefixed binary data (typed arrays), never rewritten.
const BINARY_TAGS: &[u8] = b"AOoUSsLlGgMmV";

/// One row of a Flight stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// `<id>:T<hex length>,<text>`.
    Text {
        /// Row id (hex digits).
        id: Vec<u8>,
        /// The text, exactly the declared number of bytes.
        text: Vec<u8>,
    },
    /// `<id>:<tag><hex length>,<bytes>` with a binary tag.
    Binary {
        /// Row id.
        id: Vec<u8>,
        /// The tag byte.
        tag: u8,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Any other row: id, `:`, content, up to and including its `\n`.
    Line(Vec<u8>),
}

/// Splits a Flight stream into rows.
///
/// # Errors
/// A row without a hex id and `:`, a bad length, or a length-prefixed row cut short.
pub fn rows(stream: &[u8]) -> Result<Vec<Row>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    let hex_run = |from: usize| {
        from + stream[from..]
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count()
    };
    while at < stream.len() {
        let start = at;
        at = hex_run(at);
        if stream.get(at) != Some(&b':') {
            return Err(format!(
                "byte {start}: a row that does not start with `<hex id>:`"
            ));
        }
        let id = stream[start..at].to_vec();
        at += 1;
        match stream.get(at).copied() {
            Some(tag) if tag == b'T' || BINARY_TAGS.contains(&tag) => {
                let digits = at + 1;
                at = hex_run(digits);
                if at == digits || stream.get(at) != Some(&b',') {
                    return Err(format!(
                        "byte {start}: a {} row without `<hex length>,`",
                        tag as char
                    ));
                }
                let len = std::str::from_utf8(&stream[digits..at])
                    .ok()
                    .and_then(|h| usize::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("byte {start}: row length out of range"))?;
                at += 1;
                let end = at
                    .checked_add(len)
                    .filter(|&end| end <= stream.len())
                    .ok_or_else(|| {
                        format!(
                            "byte {start}: a {} row declares {len} bytes, {} are left",
                            tag as char,
                            stream.len() - at
                        )
                    })?;
                let body = stream[at..end].to_vec();
                out.push(if tag == b'T' {
                    Row::Text { id, text: body }
                } else {
                    Row::Binary {
                        id,
                        tag,
                        bytes: body,
                    }
                });
                at = end;
            }
            _ => {
                let end = stream[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(stream.len(), |p| at + p + 1);
                out.push(Row::Line(stream[start..end].to_vec()));
                at = end;
            }
        }
    }
    Ok(out)
}

/// Decodes a JavaScript string literal's contents, from just after its opening `"`. Returns the
/// decoded bytes (UTF-8) and the index of the closing quote.
///
/// # Errors
/// An unterminated literal, a bad `\x`/`\u` escape or a lone surrogate.
pub fn decode_js_string(s: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let hex = |at: usize, n: usize| -> Result<u32, String> {
        s.get(at..at + n)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| format!("byte {at}: a bad hex escape"))
    };
    let push_char = |out: &mut Vec<u8>, v: u32, at: usize| -> Result<(), String> {
        let c =
            char::from_u32(v).ok_or_else(|| format!("byte {at}: U+{v:04X} is not a character"))?;
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        Ok(())
    };
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'"' => return Ok((out, i)),
            b'\n' | b'\r' => return Err(format!("byte {i}: a line break inside the string")),
            b'\\' => {
                let e = *s.get(i + 1).ok_or("the input ends inside an escape")?;
                let at = i;
                i += 2;
                match e {
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'b' => out.push(0x08),
                    b'f' => out.push(0x0c),
                    b'v' => out.push(0x0b),
                    b'0' => out.push(0),
                    b'x' => {
                        push_char(&mut out, hex(i, 2)?, at)?;
                        i += 2;
                    }
                    b'u' => {
                        let mut v = hex(i, 4)?;
                        i += 4;
                        if (0xD800..0xDC00).contains(&v) {
                            let low = if s.get(i..i + 2) == Some(b"\\u") {
                                hex(i + 2, 4)?
                            } else {
                                0
                            };
                            if !(0xDC00..0xE000).contains(&low) {
                                return Err(format!("byte {at}: a lone high surrogate"));
                            }
                            i += 6;
                            v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
                        }
                        push_char(&mut out, v, at)?;
                    }
                    // A line continuation adds nothing.
                    b'\n' => {}
                    // `\"`, `\\`, `\/`, `\'` and any other identity escape.
                    other => out.push(other),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Err("an unterminated string literal".into())
}

/// One `self.__next_f.push([1,"…"])` string of an HTML page.
#[derive(Debug, Clone)]
pub struct PushString {
    /// Where the literal's contents (between the quotes) are in the page.
    pub range: std::ops::Range<usize>,
    /// The decoded contents.
    pub text: Vec<u8>,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Every Flight text push of an HTML page, in order.
///
/// # Errors
/// A push whose string cannot be decoded.
pub fn push_strings(html: &[u8]) -> Result<Vec<PushString>, String> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(p) = find(&html[from..], PUSH) {
        let start = from + p + PUSH.len();
        let (text, len) = decode_js_string(&html[start..])
            .map_err(|e| format!("the push string at byte {start}: {e}"))?;
        found.push(PushString {
            range: start..start + len,
            text,
        });
        from = start + len + 1;
    }
    Ok(found)
}

/// The Flight row stream of a body: the decoded push strings of an HTML page, concatenated,
/// or a `text/x-component` body itself.
///
/// # Errors
/// As [`push_strings`].
pub fn stream(html: bool, body: &[u8]) -> Result<Vec<u8>, String> {
    if !html {
        return Ok(body.to_vec());
    }
    Ok(push_strings(body)?
        .into_iter()
        .flat_map(|p| p.text)
        .collect())
}

/// The page without the contents of its push strings (the quotes stay).
fn skeleton(html: &[u8], strings: &[PushString]) -> Vec<u8> {
    let mut out = Vec::with_capacity(html.len());
    let mut at = 0;
    for s in strings {
        out.extend_from_slice(&html[at..s.range.start]);
        at = s.range.end;
    }
    out.extend_from_slice(&html[at..]);
    out
}

/// Text rows in a Flight stream, and the largest one's declared length in bytes.
///
/// # Errors
/// As [`rows`].
pub fn text_rows(stream: &[u8]) -> Result<(usize, usize), String> {
    let lens: Vec<usize> = rows(stream)?
        .into_iter()
        .filter_map(|r| match r {
            Row::Text { text, .. } => Some(text.len()),
            _ => None,
        })
        .collect();
    Ok((lens.len(), lens.iter().copied().max().unwrap_or(0)))
}

/// Checks that `output` is `input` with `rule` applied the way a Flight-aware rewriter must:
/// for an HTML page, the markup around the push strings is the input's with the rule applied
/// and the same number of push strings is there; the Flight stream (decoded) has the same rows
/// in the same order, each the input row with the rule applied to its content, and every `T`
/// row's length matching its new text (checked by parsing). How the stream is split across
/// push strings may differ.
///
/// # Errors
/// A message saying what differs first.
pub fn check_rewrite(
    html: bool,
    input: &[u8],
    output: &[u8],
    rule: &UrlRule,
) -> Result<(), String> {
    let (want_stream, got_stream) = if html {
        let (si, so) = (push_strings(input)?, push_strings(output)?);
        if si.len() != so.len() {
            return Err(format!(
                "{} Flight push strings in, {} out",
                si.len(),
                so.len()
            ));
        }
        if skeleton(output, &so) != rule.rewrite_all(&skeleton(input, &si)) {
            return Err(
                "the markup around the Flight strings is not the input's with the URL rule applied"
                    .into(),
            );
        }
        let cat = |v: Vec<PushString>| v.into_iter().flat_map(|p| p.text).collect::<Vec<u8>>();
        (cat(si), cat(so))
    } else {
        (input.to_vec(), output.to_vec())
    };
    let (want, got) = (rows(&want_stream)?, rows(&got_stream)?);
    if want.len() != got.len() {
        return Err(format!("{} Flight rows in, {} out", want.len(), got.len()));
    }
    for (n, (a, b)) in want.into_iter().zip(got).enumerate() {
        let expected = match a {
            Row::Text { id, text } => Row::Text {
                id,
                text: rule.rewrite_all(&text),
            },
            Row::Line(line) => Row::Line(rule.rewrite_all(&line)),
            binary => binary,
        };
        if expected != b {
            return Err(format!(
                "Flight row {n} is not the input row with the URL rule applied"
            ));
        }
    }
    Ok(())
}

/// FNV-1a, 64 bits: a digest to compare outputs across processes (native and wasm).
pub fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> UrlRule {
        UrlRule::new("origin.example", "http", "proxy.example:7676")
    }

    #[test]
    fn decodes_next_style_string_literals() {
        let lit = r#"a\"b\\c\n\u0026\u003c\ud83d\ude00\/\x41ü" rest"#.as_bytes();
        let (s, end) = decode_js_string(lit).unwrap();
        assert_eq!(s, "a\"b\\c\n&<😀/Aü".as_bytes());
        assert_eq!(&lit[end..], b"\" rest");
        assert!(decode_js_string(b"abc").is_err());
        assert!(decode_js_string(br#"\ud83d""#).is_err());
        assert!(decode_js_string(br#"\u00zz""#).is_err());
    }

    #[test]
    fn splits_rows_by_newline_and_by_length() {
        let stream = "0:[\"a\"]\n1:T5,h\nllo2:I[1]\n:HL[\"x\"]\n3:A2,\n\n4:\"end\"".as_bytes();
        let r = rows(stream).unwrap();
        assert_eq!(r.len(), 6);
        assert_eq!(
            r[1],
            Row::Text {
                id: b"1".to_vec(),
                text: b"h\nllo".to_vec()
            }
        );
        assert_eq!(r[2], Row::Line(b"2:I[1]\n".to_vec()));
        assert_eq!(r[3], Row::Line(b":HL[\"x\"]\n".to_vec()));
        assert!(matches!(r[4], Row::Binary { tag: b'A', .. }));
        assert_eq!(text_rows(stream).unwrap(), (1, 5));
        assert!(rows(b"1:T9,short").is_err());
        assert!(rows(b"zz:1\n").is_err());
    }

    #[test]
    fn the_check_wants_fixed_text_row_lengths() {
        let input = b"1:T1b,see http://origin.example/a2:[\"http://origin.example/b\"]\n";
        let good = b"1:T1f,see http://proxy.example:7676/a2:[\"http://proxy.example:7676/b\"]\n";
        check_rewrite(false, input, good, &rule()).unwrap();
        // A plain replacement leaves the old length: the text row swallows the next row.
        let plain = rule().rewrite_all(input);
        assert!(check_rewrite(false, input, &plain, &rule()).is_err());
        assert!(check_rewrite(false, input, input, &rule()).is_err());
    }

    #[test]
    fn the_check_reads_inline_pushes_and_the_markup_around_them() {
        let page = |flight: &str, href: &str| {
            format!("<a href=\"{href}\">x</a><script>self.__next_f.push([1,\"{flight}\"])</script>")
                .into_bytes()
        };
        let input = page(r#"1:T16,http://origin.example/"#, "http://origin.example/");
        let good = page(
            r#"1:T1a,http://proxy.example:7676/"#,
            "http://proxy.example:7676/",
        );
        check_rewrite(true, &input, &good, &rule()).unwrap();
        let bad_markup = page(
            r#"1:T1a,http://proxy.example:7676/"#,
            "http://origin.example/",
        );
        assert!(check_rewrite(true, &input, &bad_markup, &rule()).is_err());
        assert_eq!(
            stream(true, &input).unwrap(),
            b"1:T16,http://origin.example/"
        );
    }

    /// The number after `"key":` in `text`, if any (enough JSON for the test below, which must
    /// not add a dependency).
    fn json_number(text: &str, key: &str) -> Option<u64> {
        let rest = &text[text.find(&format!("\"{key}\":"))? + key.len() + 3..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    }

    /// The reader agrees with the capture script's own counts in `fixtures/nextjs/index.json`.
    #[test]
    fn reads_the_captured_pages_as_the_capture_script_counted_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nextjs");
        let index = std::fs::read_to_string(dir.join("index.json")).unwrap();
        let mut checked = 0;
        // Each capture's entry runs from its `"name"` to the next one's.
        for entry in index.split("\"name\":").skip(1) {
            let name = entry.split('"').nth(1).unwrap();
            let Some(flight) = entry.find("\"flight\":").map(|at| &entry[at..]) else {
                continue;
            };
            let body = std::fs::read(dir.join(format!("{name}.body"))).unwrap();
            let html = entry.contains("\"kind\": \"html\"");
            let s = stream(html, &body).unwrap();
            if html {
                assert_eq!(
                    Some(s.len() as u64),
                    json_number(flight, "flight_bytes"),
                    "{name}"
                );
                assert_eq!(
                    Some(push_strings(&body).unwrap().len() as u64),
                    json_number(flight, "push_scripts"),
                    "{name}"
                );
            } else {
                assert_eq!(
                    Some(rows(&s).unwrap().len() as u64),
                    json_number(flight, "rows"),
                    "{name}"
                );
            }
            assert_eq!(
                Some(text_rows(&s).unwrap().0 as u64),
                json_number(flight, "t_rows"),
                "{name}"
            );
            checked += 1;
        }
        assert!(checked >= 8, "{checked}");
    }
}
