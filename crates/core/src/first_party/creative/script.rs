//! URLs in inline `<script>` text: string literals of classic or module JavaScript and of
//! JSON (`application/json`, `application/ld+json`, any `+json`) whose whole value is an
//! absolute `http(s)://` or scheme-relative `//` URL.
//!
//! The stage holds a script's text whole (see `html`), so this works on the complete text and
//! its output cannot depend on how the body was cut. A small JavaScript tokenizer tells string
//! literals from comments, regular expressions and template substitutions, so a quote in a
//! comment or a regex does not make code look like a string. A literal is offered to the
//! signer only when:
//!
//! * it is `'…'`, `"…"` or a template `` `…` `` without `${`, on one line for quotes;
//! * its value, with the escapes JSON writers use read (`\/` and `\uXXXX`), is printable ASCII
//!   without spaces, quotes, `<`, `>` or `\`, and starts with `http://`, `https://` or `//`;
//! * it is not a piece of a URL built at run time: no `+` before or after it, no `.` or `[`
//!   after it (`'https://x/?u=' + id` stays as written: a signed prefix with more appended
//!   would no longer verify), and no tag before a template.
//!
//! A URL assigned or keyed to a name meaning the click-through (`clickTag`, `clickTAG1`,
//! `clickUrl`, `landingPage`, …; letter case and trailing digits ignored) is a link the reader
//! follows ([`UrlUse::Follow`]); any other is something the creative loads.
//!
//! The signed URL is written back as a literal of the same quote that reads as exactly that
//! URL: `\` and the quote escaped, `/` as `\/` when the original wrote its slashes so, `&` as
//! `\u0026` when the original wrote it so, `<` and `>` always as `\u003c` and `\u003e` (so
//! no `</script` can be produced), controls and line separators as `\uXXXX`, and `$` escaped
//! in a template. All of those escapes are valid JSON too, except the template's, which JSON
//! never has.

use super::signing::UrlUse;

/// Most bytes of one script's text held to be rewritten whole; a longer script passes through
/// as written, and the report says so.
pub(crate) const SCRIPT_CAP: usize = 256 * 1024;

/// What the report says when a script over the cap passed through.
pub(crate) const OVER_CAP: &str = "an inline script longer than 256 KiB passed through unrewritten";

/// Whether a `<script>` with this `type` attribute holds JavaScript or JSON, whose string
/// literals are read here; other types (`text/template`, `text/html`, …) are not script to
/// the browser, or not one read here.
pub(crate) fn readable_type(type_attr: Option<&str>) -> bool {
    let Some(value) = type_attr else {
        return true;
    };
    let mime = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim_matches(|c: char| c.is_ascii_whitespace())
        .to_ascii_lowercase();
    matches!(
        mime.as_str(),
        "" | "module"
            | "text/javascript"
            | "application/javascript"
            | "application/x-javascript"
            | "text/ecmascript"
            | "application/ecmascript"
            | "application/json"
            | "application/ld+json"
    ) || mime.ends_with("+json")
}

/// Names whose value is the click-through URL, lowercase, trailing digits removed.
const LINK_NAMES: [&str; 7] = [
    "clicktag",
    "clickurl",
    "clickthrough",
    "clickthroughurl",
    "landingpage",
    "landingpageurl",
    "landingurl",
];

/// Whether `name` (an identifier or a key) names a click-through URL.
pub(crate) fn is_link_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let stem = lower.trim_end_matches(|c: char| c.is_ascii_digit());
    LINK_NAMES.contains(&stem)
}

/// `text` with its URL literals signed by `sign`; `None` when nothing was signed.
pub(crate) fn rewrite(text: &str, sign: &dyn Fn(&str, UrlUse) -> Option<String>) -> Option<String> {
    let literals = literals(text);
    // Allocated at the first signed literal: most scripts have none.
    let mut out = String::new();
    let mut at = 0;
    let mut changed = false;
    for lit in literals {
        let Some(value) = candidate(text, &lit) else {
            continue;
        };
        let use_ = if link_context(text, lit.start) {
            UrlUse::Follow
        } else {
            UrlUse::Load
        };
        if let Some(url) = sign(&value.url, use_) {
            if !changed {
                out.reserve(text.len() + 64);
            }
            out.push_str(&text[at..lit.start + 1]);
            out.push_str(&escape(&url, lit.quote, value.slashes, value.amp));
            at = lit.end - 1;
            changed = true;
        }
    }
    out.push_str(&text[at..]);
    changed.then_some(out)
}

/// A string literal: `start` is its opening quote, `end` one past its closing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Literal {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) quote: u8,
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Keywords after which `/` starts a regular expression, not a division.
const BEFORE_REGEX: [&str; 14] = [
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

/// The complete, one-piece string literals of `text` (quotes and templates without `${`), in
/// order. Comments, regular expressions and template substitutions are stepped over.
pub(crate) fn literals(text: &str) -> Vec<Literal> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    // Whether a `/` here would start a regular expression.
    let mut regex_ok = true;
    // For each template we are inside a `${…}` of: the `{` depth within it.
    let mut templates: Vec<usize> = Vec::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                let (end, complete) = quoted_end(b, i);
                if complete {
                    found.push(Literal {
                        start: i,
                        end,
                        quote: c,
                    });
                }
                i = end;
                regex_ok = false;
            }
            b'`' => {
                i = template(b, i + 1, &mut templates, &mut found, i);
                regex_ok = false;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = b[i..]
                    .iter()
                    .position(|&x| x == b'\n' || x == b'\r')
                    .map_or(b.len(), |p| i + p);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            }
            b'/' if regex_ok => {
                i = regex_end(b, i + 1);
                regex_ok = false;
            }
            b'{' => {
                if let Some(depth) = templates.last_mut() {
                    *depth += 1;
                }
                i += 1;
                regex_ok = true;
            }
            b'}' => {
                match templates.last_mut() {
                    Some(0) => {
                        templates.pop();
                        i = template(b, i + 1, &mut templates, &mut found, usize::MAX);
                        regex_ok = false;
                        continue;
                    }
                    Some(depth) => *depth -= 1,
                    None => {}
                }
                i += 1;
                regex_ok = true;
            }
            _ if is_ident(c) => {
                let start = i;
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
                regex_ok = BEFORE_REGEX.contains(&&text[start..i]);
            }
            b')' | b']' => {
                i += 1;
                regex_ok = false;
            }
            _ if c.is_ascii_whitespace() => i += 1,
            _ => {
                i += 1;
                regex_ok = true;
            }
        }
    }
    found
}

/// Where the quoted literal opening at `open` ends, and whether it ended with its quote (not
/// at a line break or the end of the text).
fn quoted_end(b: &[u8], open: usize) -> (usize, bool) {
    let quote = b[open];
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' | b'\r' => return (i, false),
            x if x == quote => return (i + 1, true),
            _ => i += 1,
        }
    }
    (b.len(), false)
}

/// Steps through a template's text from `i`; returns where scanning resumes. A template that
/// ends without a substitution, opened at `open`, is a literal; at `${` the depth is pushed
/// and code resumes.
fn template(
    b: &[u8],
    mut i: usize,
    templates: &mut Vec<usize>,
    found: &mut Vec<Literal>,
    open: usize,
) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => {
                if open != usize::MAX {
                    found.push(Literal {
                        start: open,
                        end: i + 1,
                        quote: b'`',
                    });
                }
                return i + 1;
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                templates.push(0);
                return i + 2;
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// Where the regular expression whose body starts at `i` ends (after its flags are left to
/// the identifier rule): at its closing `/` outside a class, or at a line break.
fn regex_end(b: &[u8], mut i: usize) -> usize {
    let mut class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' => {
                class = true;
                i += 1;
            }
            b']' => {
                class = false;
                i += 1;
            }
            b'/' if !class => return i + 1,
            b'\n' | b'\r' => return i,
            _ => i += 1,
        }
    }
    b.len()
}

/// A literal's value that may be offered, and how it was written.
struct Value {
    url: String,
    /// Slashes were written `\/`.
    slashes: bool,
    /// `&` was written `\u0026`.
    amp: bool,
}

/// Characters a URL value may hold here.
fn url_char(c: char) -> bool {
    c.is_ascii_graphic() && !matches!(c, '"' | '\'' | '`' | '<' | '>' | '\\')
}

/// The literal's value if it is a whole absolute or scheme-relative URL that is not a piece
/// of one built at run time.
fn candidate(text: &str, lit: &Literal) -> Option<Value> {
    let raw = text.get(lit.start + 1..lit.end - 1)?;
    if lit.quote == b'`' && raw.contains("${") {
        return None;
    }
    let mut url = String::with_capacity(raw.len());
    let (mut slashes, mut amp) = (false, false);
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            if !url_char(c) {
                return None;
            }
            url.push(c);
            continue;
        }
        match chars.next() {
            Some('/') => {
                slashes = true;
                url.push('/');
            }
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let decoded = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .and_then(char::from_u32)
                    .filter(|&d| url_char(d))?;
                amp |= decoded == '&';
                url.push(decoded);
            }
            _ => return None,
        }
    }
    let lower = url.get(..8).unwrap_or(&url).to_ascii_lowercase();
    let absolute =
        lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("//");
    if !absolute || url.len() < 3 {
        return None;
    }
    let before = text[..lit.start].trim_end();
    let after = text[lit.end..].trim_start();
    let tagged = lit.quote == b'`' && before.ends_with(|c: char| is_ident(c as u8) || c == ')');
    let joined = before.ends_with('+') || after.starts_with(['+', '.', '[']);
    (!tagged && !joined).then_some(Value { url, slashes, amp })
}

/// Whether the literal opening at `start` is the value of a click-through name: `name = `,
/// `name: `, `"name": ` before it.
fn link_context(text: &str, start: usize) -> bool {
    let before = text[..start].trim_end();
    let Some(rest) = before.strip_suffix(':').or_else(|| {
        before
            .strip_suffix('=')
            .filter(|r| !r.ends_with(['=', '!', '<', '>']))
    }) else {
        return false;
    };
    let rest = rest.trim_end();
    let name = match rest.as_bytes().last() {
        Some(&q @ (b'"' | b'\'')) => {
            let inner = &rest[..rest.len() - 1];
            match inner.rfind(char::from(q)) {
                Some(open) => &inner[open + 1..],
                None => return false,
            }
        }
        _ => {
            let from = rest
                .bytes()
                .rposition(|b| !is_ident(b))
                .map_or(0, |p| p + 1);
            &rest[from..]
        }
    };
    is_link_name(name)
}

/// `url` as the content of a literal quoted with `quote`, reading back as exactly `url`.
pub(crate) fn escape(url: &str, quote: u8, slashes: bool, amp: bool) -> String {
    let mut out = String::with_capacity(url.len() + 16);
    for c in url.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '/' if slashes => out.push_str("\\/"),
            '&' if amp => out.push_str("\\u0026"),
            '$' if quote == b'`' => out.push_str("\\$"),
            c if c == char::from(quote) => {
                out.push('\\');
                out.push(c);
            }
            '<' | '>' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(text: &str) -> String {
        let sign = |url: &str, use_: UrlUse| {
            url.strip_prefix("https://ads.test/").map(|p| {
                let route = if use_ == UrlUse::Follow { "fc" } else { "fp" };
                format!("/{route}?u={p}&s=1")
            })
        };
        rewrite(text, &sign).unwrap_or_else(|| text.to_owned())
    }

    #[test]
    fn whole_url_literals_are_signed_and_pieces_are_not() {
        let cases = [
            ("var a='https://ads.test/a';", "var a='/fp?u=a&s=1';"),
            (
                "f(\"https://ads.test/b\", `https://ads.test/c`)",
                "f(\"/fp?u=b&s=1\", `/fp?u=c&s=1`)",
            ),
            (
                "x = 'https://ads.test/?u=' + id",
                "x = 'https://ads.test/?u=' + id",
            ),
            (
                "x = id + 'https://ads.test/'",
                "x = id + 'https://ads.test/'",
            ),
            (
                "'https://ads.test/a'.replace(1)",
                "'https://ads.test/a'.replace(1)",
            ),
            ("x = `https://ads.test/${p}`", "x = `https://ads.test/${p}`"),
            ("x = tag`https://ads.test/a`", "x = tag`https://ads.test/a`"),
            ("x = 'https://ads.test/a b'", "x = 'https://ads.test/a b'"),
            ("x = 'https://ads.test/\\n'", "x = 'https://ads.test/\\n'"),
            (
                "x = 'see https://ads.test/a'",
                "x = 'see https://ads.test/a'",
            ),
            (
                "// 'https://ads.test/a'\nx=1",
                "// 'https://ads.test/a'\nx=1",
            ),
            (
                "/* \"https://ads.test/a\" */",
                "/* \"https://ads.test/a\" */",
            ),
            (
                "r = /'/; s = 'https://ads.test/r'",
                "r = /'/; s = '/fp?u=r&s=1'",
            ),
            (
                "a = b / 2; c = 'https://ads.test/d'",
                "a = b / 2; c = '/fp?u=d&s=1'",
            ),
            ("`a${'https://ads.test/n'}b`", "`a${'/fp?u=n&s=1'}b`"),
            (
                "`a${ {k:1} }b'https://ads.test/x'`",
                "`a${ {k:1} }b'https://ads.test/x'`",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(signed(input), want, "{input}");
        }
    }

    #[test]
    fn click_tags_and_landing_pages_are_links() {
        let cases = [
            (
                "var clickTag = \"https://ads.test/l\";",
                "var clickTag = \"/fc?u=l&s=1\";",
            ),
            (
                "window.clickTAG1='https://ads.test/l'",
                "window.clickTAG1='/fc?u=l&s=1'",
            ),
            (
                "{\"landingPage\": \"https://ads.test/l\"}",
                "{\"landingPage\": \"/fc?u=l&s=1\"}",
            ),
            (
                "{clickUrl:'https://ads.test/l'}",
                "{clickUrl:'/fc?u=l&s=1'}",
            ),
            (
                "if (clickTag == 'https://ads.test/l')",
                "if (clickTag == '/fp?u=l&s=1')",
            ),
            (
                "var clickTagX = 'https://ads.test/l'",
                "var clickTagX = '/fp?u=l&s=1'",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(signed(input), want, "{input}");
        }
    }

    #[test]
    fn json_escapes_are_read_and_written_back_the_same_way() {
        let input = r#"{"img":"https:\/\/ads.test\/a?x=1\u0026y=2","u":"https://ads.test/b"}"#;
        let want = r#"{"img":"\/fp?u=a?x=1\u0026y=2\u0026s=1","u":"/fp?u=b&s=1"}"#;
        assert_eq!(signed(input), want);
    }

    #[test]
    fn script_types() {
        for t in [
            None,
            Some(""),
            Some("module"),
            Some(" Text/JavaScript "),
            Some("application/ld+json"),
        ] {
            assert!(readable_type(t), "{t:?}");
        }
        for t in [Some("text/template"), Some("text/html"), Some("x-shader")] {
            assert!(!readable_type(t), "{t:?}");
        }
    }

    #[test]
    fn written_back_literals_never_close_a_script() {
        let nasty = "a\\b\"c'd`e$f{g</script>\n\u{2028}";
        for quote in [b'"', b'\'', b'`'] {
            let escaped = escape(nasty, quote, true, true);
            assert!(!escaped.to_ascii_lowercase().contains("</script"));
            assert!(!escaped.contains(['<', '\n', '\u{2028}']));
            assert!(!escaped.contains("${"));
        }
    }

    /// Node reads every written-back literal as exactly the URL, as JavaScript and, for
    /// double quotes, as JSON too. Skipped where `node` is not installed.
    #[test]
    fn node_reads_written_literals_back_as_the_url() {
        let urls = [
            "/first-party/proxy?tsurl=https%3A%2F%2Fa.test%2F&tsexp=1&tstoken=x",
            "/x?a='\"`${}\\</script><!--\n\u{2028}\u{7f}>é",
        ];
        let mut program = String::from("const out = [];\n");
        let mut want = Vec::new();
        for url in urls {
            for (quote, slashes, amp) in [
                (b'"', false, false),
                (b'"', true, true),
                (b'\'', true, false),
                (b'`', false, true),
            ] {
                let q = char::from(quote);
                let lit = format!("{q}{}{q}", escape(url, quote, slashes, amp));
                program.push_str(&format!("out.push({lit});\n"));
                want.push(url.to_owned());
                if quote == b'"' {
                    let json = serde_json::to_string(&lit).unwrap();
                    program.push_str(&format!("out.push(JSON.parse({json}));\n"));
                    want.push(url.to_owned());
                }
            }
        }
        program.push_str("process.stdout.write(JSON.stringify(out));\n");
        let Ok(run) = std::process::Command::new("node")
            .arg("-e")
            .arg(&program)
            .output()
        else {
            eprintln!("node not found: the JavaScript reading is not checked");
            return;
        };
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let got: Vec<String> = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(got, want);
    }
}
