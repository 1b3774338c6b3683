//! The first-party script's route, `GET /static/tsjs=<hash>.js`: which representation a
//! request gets and whether the client's copy is still current. Pure decisions over header
//! values; the adapter (`src/script.rs`) holds the bytes, compressed once at build time, and
//! builds the response (docs/script.md, "Serving").

use crate::qvalue::quality;

/// Every script path starts with this; what follows is `<hash>.js`.
pub const SCRIPT_PATH_PREFIX: &str = "/static/tsjs=";

/// `Content-Type` of the script.
pub const SCRIPT_CONTENT_TYPE: &str = "application/javascript; charset=utf-8";

/// `Cache-Control` of the script: its URL names its content, so a copy never goes stale.
pub const SCRIPT_CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The stored representations of the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptEncoding {
    /// Brotli (`Content-Encoding: br`).
    Br,
    /// gzip (`Content-Encoding: gzip`).
    Gzip,
    /// The bytes as written, no `Content-Encoding`.
    Identity,
}

impl ScriptEncoding {
    /// Picks the representation for a request's `Accept-Encoding` (several header lines
    /// joined with `", "`), after RFC 9110 §12.5.3:
    ///
    /// - no header: identity (a client that says nothing may not decode anything);
    /// - codings not listed are refused unless `*` lists them; `q=0` refuses; `x-gzip` is
    ///   `gzip`; names and `q` are case-insensitive; an element with a malformed `q` counts as
    ///   not sent;
    /// - the higher `q` of br and gzip wins, br on a tie;
    /// - identity is the fallback when neither is acceptable, and is chosen over them only when
    ///   the header itself gives `identity` a higher `q` than both. When even identity is
    ///   refused, identity is still sent: the script has nothing else, and RFC 9110 lets a
    ///   server ignore the field rather than answer `415`.
    pub fn negotiate(accept_encoding: Option<&str>) -> ScriptEncoding {
        let Some(header) = accept_encoding else {
            return ScriptEncoding::Identity;
        };
        let (mut br, mut gzip, mut identity, mut star) = (None, None, None, None);
        for element in header.split(',') {
            let mut parts = element.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            if name.is_empty() {
                continue;
            }
            let Some(q) = quality(parts) else { continue };
            let slot = match name.as_str() {
                "br" => &mut br,
                "gzip" | "x-gzip" => &mut gzip,
                "identity" => &mut identity,
                "*" => &mut star,
                _ => continue,
            };
            // A coding listed twice: the first says it (RFC 9110 gives no rule; the first is
            // what most servers read).
            slot.get_or_insert(q);
        }
        let br = br.or(star).unwrap_or(0);
        let gzip = gzip.or(star).unwrap_or(0);
        let (best, q) = if br >= gzip {
            (ScriptEncoding::Br, br)
        } else {
            (ScriptEncoding::Gzip, gzip)
        };
        match identity {
            _ if q == 0 => ScriptEncoding::Identity,
            Some(identity) if identity > q => ScriptEncoding::Identity,
            _ => best,
        }
    }

    /// The `Content-Encoding` value, `None` for identity.
    pub fn content_encoding(self) -> Option<&'static str> {
        match self {
            ScriptEncoding::Br => Some("br"),
            ScriptEncoding::Gzip => Some("gzip"),
            ScriptEncoding::Identity => None,
        }
    }
}

/// Whether an `If-None-Match` value names `etag` (a quoted entity tag, as sent in `ETag`),
/// by the weak comparison RFC 9110 §13.1.2 prescribes for this header: `W/"x"` matches `"x"`.
/// `*` matches (the script exists). A list is searched in order; entity tags may contain
/// commas, so they are read quote to quote rather than split. A malformed value stops the
/// search without a match, which only costs a full `200`.
pub fn if_none_match(header: &str, etag: &str) -> bool {
    let wanted = etag.strip_prefix("W/").unwrap_or(etag);
    let mut rest = header;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return false;
        }
        if rest.starts_with('*') {
            return true;
        }
        let tag = rest.strip_prefix("W/").unwrap_or(rest);
        if !tag.starts_with('"') {
            return false;
        }
        let Some(close) = tag[1..].find('"') else {
            return false;
        };
        let (opaque, after) = tag.split_at(close + 2);
        if opaque == wanted {
            return true;
        }
        rest = after;
    }
}

/// What to answer on the script's route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptAnswer {
    /// Another `/static/tsjs=…` path: an old or unknown hash (docs/script.md says why not a
    /// redirect).
    NotFound,
    /// `304`: the client's copy of this representation is current.
    NotModified(ScriptEncoding),
    /// `200` with this representation.
    Full(ScriptEncoding),
}

/// Decides the answer to a request for `path` when the current script is at `script_path`.
/// `etag_of` gives each representation's strong `ETag`: they differ, because their bytes do,
/// and `If-None-Match` is compared with the one this request would get.
pub fn answer(
    path: &str,
    accept_encoding: Option<&str>,
    if_none_match_header: Option<&str>,
    script_path: &str,
    etag_of: impl Fn(ScriptEncoding) -> &'static str,
) -> ScriptAnswer {
    if path != script_path {
        return ScriptAnswer::NotFound;
    }
    let encoding = ScriptEncoding::negotiate(accept_encoding);
    match if_none_match_header {
        Some(header) if if_none_match(header, etag_of(encoding)) => {
            ScriptAnswer::NotModified(encoding)
        }
        _ => ScriptAnswer::Full(encoding),
    }
}

#[cfg(test)]
mod tests {
    use super::ScriptEncoding::{Br, Gzip, Identity};
    use super::*;

    #[test]
    fn negotiation_follows_the_header() {
        let cases: &[(Option<&str>, ScriptEncoding)] = &[
            (None, Identity),
            (Some(""), Identity),
            (Some("gzip, deflate, br, zstd"), Br),
            (Some("gzip, deflate"), Gzip),
            (Some("deflate, zstd"), Identity),
            (Some("identity"), Identity),
            (Some("GZIP"), Gzip),
            (Some("x-gzip"), Gzip),
            (Some("BR;Q=1"), Br),
            (Some("br;q=0.5, gzip;q=0.8"), Gzip),
            (Some("br;q=0.8, gzip;q=0.5"), Br),
            (Some("br;q=0.5, gzip;q=0.5"), Br),
            (Some("gzip, br;q=0"), Gzip),
            (Some("br;q=0, gzip;q=0"), Identity),
            (Some("br;q=0.000, gzip;q=0.0"), Identity),
            (Some("*"), Br),
            (Some("*;q=0.5, br;q=0"), Gzip),
            (Some("*;q=0"), Identity),
            (Some("*;q=0, identity;q=0"), Identity),
            (Some("gzip;q=0.5, identity;q=0.9"), Identity),
            (Some("gzip;q=0.5, identity;q=0.5"), Gzip),
            (Some("gzip;q=0.9"), Gzip),
            (Some("  br ; q=0.3 ,gzip;q=0.2"), Br),
            (Some("br;q=0.001"), Br),
            // Malformed q values: the element is ignored.
            (Some("br;q=2, gzip"), Gzip),
            (Some("br;q=0.0001, gzip"), Gzip),
            (Some("br;q=1.5, gzip"), Gzip),
            (Some("br;q=, gzip"), Gzip),
            (Some("br;q=abc"), Identity),
            (Some("br;q"), Identity),
            (Some("br;level=5"), Br),
            (Some(",,br,,"), Br),
            (Some("gzip, gzip;q=0"), Gzip),
            (Some("compress, deflate;q=1"), Identity),
        ];
        for (header, want) in cases {
            assert_eq!(ScriptEncoding::negotiate(*header), *want, "{header:?}");
        }
    }

    #[test]
    fn content_encoding_names() {
        assert_eq!(Br.content_encoding(), Some("br"));
        assert_eq!(Gzip.content_encoding(), Some("gzip"));
        assert_eq!(Identity.content_encoding(), None);
    }

    #[test]
    fn if_none_match_compares_weakly_over_lists() {
        let etag = "\"0123abcd-br\"";
        let matches = [
            "\"0123abcd-br\"",
            "W/\"0123abcd-br\"",
            "*",
            " *",
            "\"other\", \"0123abcd-br\"",
            "\"other\",W/\"0123abcd-br\"",
            "\"a,b\", \"0123abcd-br\"",
            "\t\"0123abcd-br\"\t",
        ];
        for header in matches {
            assert!(if_none_match(header, etag), "{header:?} should match");
        }
        let misses = [
            "",
            "\"0123abcd\"",
            "\"0123abcd-gzip\"",
            "\"0123ABCD-br\"",
            "0123abcd-br",
            "\"0123abcd-br",
            "w/\"0123abcd-br\"",
            "\"other\", garbage, \"0123abcd-br\"",
            "\"0123abcd-br-x\"",
            "\"a,\"0123abcd-br\"\"",
        ];
        for header in misses {
            assert!(!if_none_match(header, etag), "{header:?} should not match");
        }
        // A weak ETag given as the current one compares by its opaque tag too.
        assert!(if_none_match("\"x\"", "W/\"x\""));
    }

    fn etag_of(encoding: ScriptEncoding) -> &'static str {
        match encoding {
            Br => "\"h-br\"",
            Gzip => "\"h-gzip\"",
            Identity => "\"h\"",
        }
    }

    #[test]
    fn answers_not_found_not_modified_or_full() {
        let path = "/static/tsjs=0123456789abcdef.js";
        let ask = |p: &str, ae: Option<&str>, inm: Option<&str>| answer(p, ae, inm, path, etag_of);
        assert_eq!(ask(path, None, None), ScriptAnswer::Full(Identity));
        assert_eq!(ask(path, Some("gzip, br"), None), ScriptAnswer::Full(Br));
        assert_eq!(
            ask(path, Some("gzip"), Some("\"h-gzip\"")),
            ScriptAnswer::NotModified(Gzip)
        );
        // The copy the client names is another representation than the one it would get.
        assert_eq!(
            ask(path, Some("br"), Some("\"h-gzip\"")),
            ScriptAnswer::Full(Br)
        );
        assert_eq!(
            ask(path, Some("br"), Some("*")),
            ScriptAnswer::NotModified(Br)
        );
        assert_eq!(
            ask(path, None, Some("\"x\", W/\"h\"")),
            ScriptAnswer::NotModified(Identity)
        );
        for other in [
            "/static/tsjs=fedcba9876543210.js",
            "/static/tsjs=0123456789abcdef.js.map",
            "/static/tsjs=0123456789ABCDEF.js",
            "/static/tsjs=",
            "/static/tsjs=0123456789abcdef",
        ] {
            assert_eq!(
                ask(other, None, Some("*")),
                ScriptAnswer::NotFound,
                "{other}"
            );
        }
    }

    proptest::proptest! {
        /// Whatever the header, negotiation answers (never panics), and a coding refused with
        /// `q=0` by name is never chosen.
        #[test]
        fn negotiation_never_picks_a_refused_coding(header in "[ -~]{0,60}") {
            let _ = ScriptEncoding::negotiate(Some(&header));
            let refused_br = format!("br;q=0, {header}");
            proptest::prop_assert_ne!(ScriptEncoding::negotiate(Some(&refused_br)), Br);
            let refused_gzip = format!("gzip;q=0,x-gzip;q=0, {header}");
            proptest::prop_assert_ne!(ScriptEncoding::negotiate(Some(&refused_gzip)), Gzip);
            let _ = if_none_match(&header, "\"h\"");
        }
    }
}
