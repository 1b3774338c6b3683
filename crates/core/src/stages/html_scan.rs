//! HTML read byte by byte the way lol_html's tokenizer reads it, as far as the HTML stage's
//! marks depend on it: where each `<script>`'s text starts and ends, and which `<meta>` tags
//! may stop rewriting.
//!
//! [`HtmlStage`](super::html::HtmlStage) learns both from lol_html's element handlers, which
//! cost lol_html's tokenizer and selector machinery on every byte. This reading finds the same
//! marks with a byte search per tag, so that the lazy stage can keep a Next.js page (whose
//! Flight scripts need those marks) off lol_html. It follows lol_html 3's tokenizer and its
//! tree-builder simulation (not strict, as the HTML stage runs it), state for state where a
//! mark can depend on it:
//!
//! * tags: a name up to whitespace, `/` or `>`, compared as lol_html compares names (by
//!   [`NameHash`]), then attributes, whose quoted values may hold `>`; end tags alike;
//! * comments `<!-- … -->` with every ending the tokenizer accepts (`<!-->`, `<!--->`,
//!   `--!>`, `<!--` inside), bogus comments (`<?…>`, `</` not followed by a letter, any other
//!   `<!…>`) and `<!DOCTYPE …>`, both to their first `>`;
//! * text that is not markup: a script's (script data); `<style>`, `<iframe>`, `<xmp>`,
//!   `<noembed>`, `<noframes>`, `<noscript>` (raw text; lol_html reads `<noscript>` as a browser
//!   with scripting does) and `<title>`, `<textarea>` (RCDATA), each to its own end tag only;
//!   `<plaintext>` to the end of the document;
//! * foreign content: `<svg>` and `<math>` and the namespace stack lol_html keeps (integration
//!   points, the HTML tags that leave foreign content, `<font>` with `color`, `size` or
//!   `face`), where `<![CDATA[ … ]]>` is text and no tag starts raw text;
//! * lol_html's stack of open elements, which counts against its memory limit (see
//!   [`OPEN_MAX`]).
//!
//! Where following lol_html would need more than this, the reading stops:
//! [`Scan::Undecidable`], and the lazy stage hands the page to lol_html. All of these are rare
//! on real pages: `<!--` inside a script (script data's escaped states, where `</script>` may
//! not end it); a `<script>` in foreign content (lol_html reads its text as markup); a tag
//! that starts raw text ended by `>` where an attribute value was due (`<style a=>`, after
//! which lol_html goes on reading markup); `<annotation-xml>` in MathML; a `<meta>` that may
//! declare a charset that stops rewriting; a tag lol_html reads whole that is longer than
//! [`MAX_LEXED_TAG`]; more than [`OPEN_MAX`] open elements.
//!
//! The reading hands back how far the bytes are *decided*: the marks up to there are final.
//! It stops before a construct not wholly in hand (a tag, a comment, the `</script` that may
//! end a script), which the next call reads again with what follows, so its marks do not
//! depend on how the input was cut. A construct cut off by the end of the document is text in
//! the current segment: lol_html emits an unfinished tag as text and runs no handler for it.

use encoding_rs::Encoding;

use crate::stages::charset::{is_space, walk_attributes, MetaAttributes, TagEnd, Verdict};
use crate::stages::segments::Segment;
use crate::stages::word_scan::find_near;

/// Most elements the reading lets lol_html's element stack hold. lol_html keeps an element
/// there from its start tag until an end tag with its name (it does not close `<p>` or `<li>`
/// implicitly), and counts the stack against its memory limit; over the limit it bails out and
/// passes the rest through as it is. Some hundred bytes an element, this many stay far below
/// the 8 MiB the HTML stage allows; real pages stay far below this many.
pub(crate) const OPEN_MAX: usize = 1024;

/// Longest tag the reading lets lol_html read whole: a `<script>` or `<meta>` (which have
/// handlers), a `</script>`, and the tags of foreign content whose attributes decide the
/// namespace. lol_html keeps such a tag's attributes in a list that counts against its memory
/// limit (tens of bytes per attribute, an attribute in as little as two bytes); the tag itself
/// is not limited, so tags this long stay far below the 8 MiB the HTML stage allows.
pub(crate) const MAX_LEXED_TAG: usize = 16 * 1024;

/// How far a call to [`HtmlScan::scan`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// The bytes up to this offset are decided; the reading continues from there.
    Upto(usize),
    /// Something lol_html must decide (module docs); the reading is over.
    Undecidable,
}

/// lol_html's tag name hash (its `LocalNameHash`): five bits a byte for ASCII letters
/// (either case) and the digits 1 to 6, the first byte's top bits shifted out past twelve;
/// any other byte, or a name too long to shift in, makes it empty. lol_html compares tag
/// names by this hash, so a long name can match a short one: this reading compares them the
/// same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NameHash(u64);

impl NameHash {
    const EMPTY: NameHash = NameHash(!0);

    /// The hash of `name`.
    pub(crate) const fn of(name: &[u8]) -> NameHash {
        let mut hash = NameHash(0);
        let mut i = 0;
        while i < name.len() {
            hash = hash.then(name[i]);
            i += 1;
        }
        hash
    }

    /// The hash of this hash's name followed by `b`.
    const fn then(self, b: u8) -> NameHash {
        if self.0 >> (64 - 5) != 0 {
            return NameHash::EMPTY;
        }
        match b {
            b'a'..=b'z' | b'A'..=b'Z' => NameHash((self.0 << 5) | ((b as u64 & 0x1f) + 5)),
            b'1'..=b'6' => NameHash((self.0 << 5) | ((b as u64 & 0x0f) - 1)),
            _ => NameHash::EMPTY,
        }
    }

    fn is_empty(self) -> bool {
        self == NameHash::EMPTY
    }

    fn is_one_of(self, names: &[NameHash]) -> bool {
        names.contains(&self)
    }
}

/// The tag names the reading tells apart.
mod tag {
    use super::NameHash;

    macro_rules! names {
        ($($name:ident = $text:literal),* $(,)?) => {
            $(pub(super) const $name: NameHash = NameHash::of($text);)*
        };
    }

    names!(
        SCRIPT = b"script",
        META = b"meta",
        SVG = b"svg",
        MATH = b"math",
        FONT = b"font",
        TITLE = b"title",
        TEXTAREA = b"textarea",
        PLAINTEXT = b"plaintext",
        STYLE = b"style",
        IFRAME = b"iframe",
        XMP = b"xmp",
        NOEMBED = b"noembed",
        NOFRAMES = b"noframes",
        NOSCRIPT = b"noscript",
        DESC = b"desc",
        FOREIGN_OBJECT = b"foreignObject",
        MI = b"mi",
        MO = b"mo",
        MN = b"mn",
        MS = b"ms",
        MTEXT = b"mtext",
        P = b"p",
        BR = b"br",
    );

    /// The hashes of `names`, in order (a `const fn`: the tables are built at compile time).
    const fn hashes<const N: usize>(names: [&[u8]; N]) -> [NameHash; N] {
        let mut hashes = [NameHash(0); N];
        let mut i = 0;
        while i < N {
            hashes[i] = NameHash::of(names[i]);
            i += 1;
        }
        hashes
    }

    /// Start tags that leave foreign content (lol_html's `causes_foreign_content_exit`).
    pub(super) const LEAVE_FOREIGN: [NameHash; 44] = {
        let names: [&[u8]; 44] = [
            b"b",
            b"big",
            b"blockquote",
            b"body",
            b"br",
            b"center",
            b"code",
            b"dd",
            b"div",
            b"dl",
            b"dt",
            b"em",
            b"embed",
            b"h1",
            b"h2",
            b"h3",
            b"h4",
            b"h5",
            b"h6",
            b"head",
            b"hr",
            b"i",
            b"img",
            b"li",
            b"listing",
            b"menu",
            b"meta",
            b"nobr",
            b"ol",
            b"p",
            b"pre",
            b"ruby",
            b"s",
            b"small",
            b"span",
            b"strong",
            b"strike",
            b"sub",
            b"sup",
            b"table",
            b"tt",
            b"u",
            b"ul",
            b"var",
        ];
        hashes(names)
    };

    /// Elements that never hold content in HTML (lol_html's `is_void_element`).
    pub(super) const VOID: [NameHash; 17] = {
        let names: [&[u8]; 17] = [
            b"area",
            b"base",
            b"basefont",
            b"bgsound",
            b"br",
            b"col",
            b"embed",
            b"hr",
            b"img",
            b"input",
            b"keygen",
            b"link",
            b"meta",
            b"param",
            b"source",
            b"track",
            b"wbr",
        ];
        hashes(names)
    };

    /// Raw text (and RCDATA: the same to this reading) in HTML.
    pub(super) const RAW_TEXT: [NameHash; 8] = [
        TITLE, TEXTAREA, STYLE, IFRAME, XMP, NOEMBED, NOFRAMES, NOSCRIPT,
    ];

    pub(super) const SVG_HTML_POINTS: [NameHash; 3] = [DESC, TITLE, FOREIGN_OBJECT];
    pub(super) const MATH_TEXT_POINTS: [NameHash; 5] = [MI, MO, MN, MS, MTEXT];
}

/// Where the tokenizer is between constructs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    /// Markup: tags, comments, text.
    Data,
    /// A `<script>`'s text, up to `</script`.
    Script,
    /// Raw text or RCDATA, up to an end tag of this name.
    Raw(NameHash),
    /// `<plaintext>`: the rest of the document is text.
    Plain,
    /// A CDATA section, up to `]]>`.
    Cdata,
}

/// A namespace of lol_html's tree-builder simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    Html,
    Svg,
    MathMl,
}

/// A name on the open-element stack, compared as lol_html compares them: by hash, or (for a
/// name without one) by its bytes in any letter case.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OpenName {
    Hash(NameHash),
    /// Lowercase.
    Bytes(Box<[u8]>),
}

impl OpenName {
    fn is(&self, hash: NameHash, name: &[u8]) -> bool {
        match self {
            OpenName::Hash(h) => *h == hash,
            OpenName::Bytes(b) => hash.is_empty() && b.eq_ignore_ascii_case(name),
        }
    }
}

/// The reading's state between calls; see the module docs.
#[derive(Debug)]
pub(crate) struct HtmlScan {
    text: Text,
    /// The namespace stack, never empty: HTML at the bottom, the current one last.
    ns: Vec<Ns>,
    /// lol_html's open elements, innermost last.
    open: Vec<OpenName>,
    /// The document's encoding, in which `<meta>` attribute values are read.
    encoding: &'static Encoding,
}

/// How far one construct got.
enum Step {
    /// It ends here; reading goes on from this offset.
    Next(usize),
    /// It does not end in the bytes in hand: they are decided up to this offset, where it
    /// starts.
    Stop(usize),
    Undecidable,
}

/// Where this reading cannot follow lol_html.
struct Undecidable;

impl HtmlScan {
    /// A reading from the start of a document in `encoding`.
    pub(crate) fn new(encoding: &'static Encoding) -> Self {
        HtmlScan {
            text: Text::Data,
            ns: vec![Ns::Html],
            open: Vec::new(),
            encoding,
        }
    }

    /// Reads `bytes`, the document from where the last call's decided bytes ended, pushing
    /// the marks it finds as `(offset in bytes, kind of the bytes from there)`.
    pub(crate) fn scan(&mut self, bytes: &[u8], marks: &mut Vec<(usize, Segment)>) -> Scan {
        let mut at = 0;
        while at < bytes.len() {
            let step = match self.text {
                Text::Plain => Step::Next(bytes.len()),
                Text::Cdata => match memchr::memmem::find(&bytes[at..], b"]]>") {
                    Some(i) => {
                        self.text = Text::Data;
                        Step::Next(at + i + 3)
                    }
                    // A `]` or `]]` at the end may start the `]]>`.
                    None => {
                        let tail = bytes[at..].iter().rev().take(2);
                        Step::Stop(bytes.len() - tail.take_while(|&&b| b == b']').count())
                    }
                },
                Text::Data => match find_near([b'<'], &bytes[at..]) {
                    None => Step::Next(bytes.len()),
                    Some(i) => self.markup(bytes, at + i, marks),
                },
                Text::Script | Text::Raw(_) => self.raw_text(bytes, at, marks),
            };
            match step {
                Step::Next(next) => at = next,
                Step::Stop(upto) => return Scan::Upto(upto),
                Step::Undecidable => return Scan::Undecidable,
            }
        }
        Scan::Upto(bytes.len())
    }

    fn current_ns(&self) -> Ns {
        *self.ns.last().expect("the namespace stack is never empty")
    }

    /// Text up to the end tag that ends it (`Text::Script` or `Text::Raw`), from `at`. In a
    /// script, marks where its end tag starts.
    fn raw_text(&mut self, bytes: &[u8], at: usize, marks: &mut Vec<(usize, Segment)>) -> Step {
        let (name, script) = match self.text {
            Text::Script => (tag::SCRIPT, true),
            Text::Raw(name) => (name, false),
            _ => unreachable!("raw_text is called in raw text"),
        };
        for lt in memchr::memchr_iter(b'<', &bytes[at..]).map(|i| at + i) {
            let rest = &bytes[lt + 1..];
            if script && rest.first() == Some(&b'!') {
                // `<!--` starts script data's escaped states.
                let dashes = &rest[1..rest.len().min(3)];
                if dashes == b"--" {
                    return Step::Undecidable;
                }
                if dashes.len() < 2 && b"--".starts_with(dashes) {
                    return Step::Stop(lt);
                }
                continue;
            }
            match rest.first() {
                None => return Step::Stop(lt),
                Some(b'/') => {}
                Some(_) => continue,
            }
            // An end tag's name here is letters only; any other byte makes it text.
            let Some(name_end) = rest[1..].iter().position(|b| !b.is_ascii_alphabetic()) else {
                return Step::Stop(lt);
            };
            let name_end = name_end + 1;
            let delimiter = rest[name_end];
            if name_end == 1
                || !(is_space(delimiter) || delimiter == b'/' || delimiter == b'>')
                || NameHash::of(&rest[1..name_end]) != name
            {
                continue;
            }
            let Some(end) = walk_attributes(&rest[name_end..], |_, _| {}) else {
                return Step::Stop(lt);
            };
            if script {
                if 1 + name_end + end.end > MAX_LEXED_TAG {
                    return Step::Undecidable;
                }
                marks.push((lt, Segment::Markup));
            }
            self.text = Text::Data;
            return match self.end_tag(name, &rest[1..name_end]) {
                Ok(()) => Step::Next(lt + 1 + name_end + end.end),
                Err(Undecidable) => Step::Undecidable,
            };
        }
        Step::Next(bytes.len())
    }

    /// The construct starting at `lt` (a `<`) in markup.
    fn markup(&mut self, bytes: &[u8], lt: usize, marks: &mut Vec<(usize, Segment)>) -> Step {
        let rest = &bytes[lt + 1..];
        let Some(&first) = rest.first() else {
            return Step::Stop(lt);
        };
        match first {
            b'a'..=b'z' | b'A'..=b'Z' => self.start_tag(bytes, lt, marks),
            b'/' => match rest.get(1) {
                None => Step::Stop(lt),
                Some(b) if b.is_ascii_alphabetic() => self.end_tag_in_markup(bytes, lt),
                Some(b'>') => Step::Next(lt + 3),
                Some(_) => to_first_gt(bytes, lt, lt + 2),
            },
            b'!' => self.declaration(bytes, lt),
            b'?' => to_first_gt(bytes, lt, lt + 2),
            // Text; the byte after the `<` is read again as markup.
            _ => Step::Next(lt + 1),
        }
    }

    /// `<!`: a comment, a doctype, a CDATA section (in foreign content) or a bogus comment.
    fn declaration(&mut self, bytes: &[u8], lt: usize) -> Step {
        let rest = &bytes[lt + 2..];
        // lol_html tries these in order, waiting for more input while one may still match.
        for (what, ignore_case) in [
            (&b"--"[..], false),
            (&b"DOCTYPE"[..], true),
            (&b"[CDATA["[..], false),
        ] {
            let n = rest.len().min(what.len());
            let same = if ignore_case {
                rest[..n].eq_ignore_ascii_case(&what[..n])
            } else {
                rest[..n] == what[..n]
            };
            if !same {
                continue;
            }
            if n < what.len() {
                return Step::Stop(lt);
            }
            let after = lt + 2 + what.len();
            if what == b"--" {
                return comment(bytes, lt, after);
            }
            if what == b"[CDATA[" && self.current_ns() != Ns::Html {
                self.text = Text::Cdata;
                return Step::Next(after);
            }
            // A doctype ends at its first `>`, even in quotes; so does a bogus comment.
            return to_first_gt(bytes, lt, after);
        }
        to_first_gt(bytes, lt, lt + 2)
    }

    fn start_tag(&mut self, bytes: &[u8], lt: usize, marks: &mut Vec<(usize, Segment)>) -> Step {
        let Some((name, hash, attributes)) = tag_name(&bytes[lt + 1..]) else {
            return Step::Stop(lt);
        };
        // A `<meta>`'s attributes are read for its charset in the same walk.
        let is_meta = hash == tag::META && name.eq_ignore_ascii_case(b"meta");
        let mut meta = MetaAttributes::default();
        let walked = if is_meta {
            walk_attributes(attributes, |name, value| meta.take(name, value))
        } else {
            walk_attributes(attributes, |_, _| {})
        };
        let Some(end) = walked else {
            return Step::Stop(lt);
        };
        let tag_end = lt + 1 + name.len() + end.end;
        if tag_end - lt > MAX_LEXED_TAG && self.lexes(hash) {
            return Step::Undecidable;
        }
        let Ok(text) = self.start_tag_feedback(hash, attributes, end) else {
            return Step::Undecidable;
        };
        let ns = self.current_ns();
        // The HTML stage's handlers, which run for these names in any namespace.
        if hash == tag::META
            && !(is_meta && meta.verdict_for(end.end, self.encoding) == Verdict::Safe)
        {
            return Step::Undecidable;
        }
        if hash == tag::SCRIPT {
            if ns != Ns::Html {
                return Step::Undecidable;
            }
            marks.push((tag_end, Segment::ScriptText));
        }
        // lol_html's element stack.
        let holds_content = match ns {
            Ns::Html => !hash.is_one_of(&tag::VOID),
            Ns::Svg | Ns::MathMl => !end.self_closing,
        };
        if holds_content {
            if self.open.len() == OPEN_MAX {
                return Step::Undecidable;
            }
            self.open.push(if hash.is_empty() {
                OpenName::Bytes(name.to_ascii_lowercase().into_boxed_slice())
            } else {
                OpenName::Hash(hash)
            });
        }
        if let Some(text) = text {
            if end.in_value {
                // lol_html goes on in its data state after this tag.
                return Step::Undecidable;
            }
            self.text = text;
        }
        Step::Next(tag_end)
    }

    /// Whether lol_html reads a start tag with this name whole, attributes and all, here: the
    /// HTML stage has handlers for `<script>` and `<meta>`, and in foreign content the tags
    /// whose attributes decide the namespace are read whole.
    fn lexes(&self, hash: NameHash) -> bool {
        hash == tag::SCRIPT
            || hash == tag::META
            || match self.current_ns() {
                Ns::Html => false,
                Ns::Svg => hash.is_one_of(&tag::SVG_HTML_POINTS) || hash == tag::FONT,
                Ns::MathMl => hash.is_one_of(&tag::MATH_TEXT_POINTS) || hash == tag::FONT,
            }
    }

    /// What lol_html's tree-builder simulation makes of a start tag: the namespace stack
    /// changes here, and the text that follows, if it is not markup, is returned.
    fn start_tag_feedback(
        &mut self,
        hash: NameHash,
        attributes: &[u8],
        end: TagEnd,
    ) -> Result<Option<Text>, Undecidable> {
        let ns = self.current_ns();
        if hash == tag::SVG {
            self.ns.push(Ns::Svg);
        } else if hash == tag::MATH {
            self.ns.push(Ns::MathMl);
        } else if ns != Ns::Html {
            let integration_point = match ns {
                Ns::Svg => hash.is_one_of(&tag::SVG_HTML_POINTS),
                _ => hash.is_one_of(&tag::MATH_TEXT_POINTS),
            };
            if hash.is_one_of(&tag::LEAVE_FOREIGN) {
                self.ns.pop();
            } else if integration_point {
                if !end.self_closing {
                    self.ns.push(Ns::Html);
                }
            } else if hash == tag::FONT {
                let mut leaves = false;
                walk_attributes(attributes, |attribute, _| {
                    leaves |= [&b"color"[..], b"size", b"face"]
                        .iter()
                        .any(|n| attribute.eq_ignore_ascii_case(n));
                });
                if leaves {
                    self.ns.pop();
                }
            } else if hash.is_empty() && ns == Ns::MathMl {
                // lol_html reads an `<annotation-xml>`'s attributes here.
                return Err(Undecidable);
            }
        } else if hash == tag::SCRIPT {
            return Ok(Some(Text::Script));
        } else if hash == tag::PLAINTEXT {
            return Ok(Some(Text::Plain));
        } else if hash.is_one_of(&tag::RAW_TEXT) {
            return Ok(Some(Text::Raw(hash)));
        }
        Ok(None)
    }

    /// An end tag in markup, starting at `lt`.
    fn end_tag_in_markup(&mut self, bytes: &[u8], lt: usize) -> Step {
        let Some((name, hash, attributes)) = tag_name(&bytes[lt + 2..]) else {
            return Step::Stop(lt);
        };
        let Some(end) = walk_attributes(attributes, |_, _| {}) else {
            return Step::Stop(lt);
        };
        match self.end_tag(hash, name) {
            Ok(()) => Step::Next(lt + 2 + name.len() + end.end),
            Err(Undecidable) => Step::Undecidable,
        }
    }

    /// What an end tag does to the namespace stack and the open elements.
    fn end_tag(&mut self, hash: NameHash, name: &[u8]) -> Result<(), Undecidable> {
        let ns = self.current_ns();
        if ns == Ns::Html {
            if let [.., outer, _] = self.ns[..] {
                let leaves = match outer {
                    Ns::MathMl => hash.is_one_of(&tag::MATH_TEXT_POINTS),
                    Ns::Svg => hash.is_one_of(&tag::SVG_HTML_POINTS),
                    Ns::Html => false,
                };
                if leaves {
                    self.ns.pop();
                } else if hash.is_empty() && outer == Ns::MathMl {
                    // lol_html compares the name with `annotation-xml` here.
                    return Err(Undecidable);
                }
            }
        } else if (ns == Ns::Svg && hash == tag::SVG)
            || (ns == Ns::MathMl && hash == tag::MATH)
            || hash == tag::P
            || hash == tag::BR
        {
            self.ns.pop();
        }
        if let Some(i) = self.open.iter().rposition(|open| open.is(hash, name)) {
            self.open.truncate(i);
        }
        Ok(())
    }
}

/// A tag's name, from just after `<` (or `</`), its hash and the bytes from the byte that
/// ends it; `None` if it does not end in `bytes`.
fn tag_name(bytes: &[u8]) -> Option<(&[u8], NameHash, &[u8])> {
    let mut hash = NameHash(0);
    for (i, &b) in bytes.iter().enumerate() {
        if is_space(b) || b == b'/' || b == b'>' {
            let (name, rest) = bytes.split_at(i);
            return Some((name, hash, rest));
        }
        hash = hash.then(b);
    }
    None
}

/// A comment's text starts at `text` (after `<!--`, at `lt`): it ends at the first `>` that
/// the tokenizer's comment states take as its end.
fn comment(bytes: &[u8], lt: usize, text: usize) -> Step {
    let mut from = text;
    while let Some(i) = find_near([b'>'], &bytes[from..]) {
        let gt = from + i;
        let t = &bytes[text..gt];
        if t.is_empty() || t == b"-" || t.ends_with(b"--") || t.ends_with(b"--!") {
            return Step::Next(gt + 1);
        }
        from = gt + 1;
    }
    Step::Stop(lt)
}

/// A construct at `lt` that ends at the first `>` from `from`.
fn to_first_gt(bytes: &[u8], lt: usize, from: usize) -> Step {
    match find_near([b'>'], &bytes[from..]) {
        Some(i) => Step::Next(from + i + 1),
        None => Step::Stop(lt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::stage::BodyStage;
    use crate::stages::charset::MAX_META_TAG;
    use crate::stages::html::HtmlStage;
    use crate::stages::scanned_html::ScannedHtml;
    use crate::url_rewrite::UrlRule;
    use lol_html::AsciiCompatibleEncoding;
    use proptest::prelude::*;

    fn utf8() -> AsciiCompatibleEncoding {
        AsciiCompatibleEncoding::new(encoding_rs::UTF_8).unwrap()
    }

    fn rule() -> UrlRule {
        UrlRule::new("origin.example.com", "https", "www.pub.test")
    }

    /// lol_html's marks for `input`, fed in one piece.
    fn lol_html_marks(input: &[u8]) -> Vec<(usize, Segment)> {
        let mut stage = HtmlStage::new(rule(), utf8(), Some(1 << 20));
        stage.write(input, &mut Vec::new());
        stage.into_marks()
    }

    /// This reading's marks for `input` cut at `cuts`, or `None` where it stopped.
    fn scanned_marks(input: &[u8], cuts: &[usize]) -> Option<Vec<(usize, Segment)>> {
        let mut stage = ScannedHtml::new(rule(), utf8(), Some(1 << 20));
        let mut from = 0;
        for &cut in cuts.iter().chain([&input.len()]) {
            if !stage.write(&input[from..cut], &mut Vec::new()) {
                return None;
            }
            from = cut;
        }
        Some(stage.all_marks.0)
    }

    #[test]
    fn names_hash_as_lol_html_hashes_them() {
        // lol_html's own `Tag` values.
        assert_eq!(NameHash::of(b"div"), NameHash(9691));
        assert_eq!(tag::SCRIPT, NameHash(814_463_673));
        assert_eq!(tag::META, NameHash(600_870));
        assert_eq!(tag::SVG, NameHash(25_452));
        assert_eq!(tag::FOREIGN_OBJECT, NameHash(13_428_975_859_192_539_417));
        assert_eq!(NameHash::of(b"ScRiPt"), tag::SCRIPT);
        assert!(NameHash::of(b"next-route-announcer").is_empty());
        assert!(NameHash::of(b"h7").is_empty());
        // Thirteen bytes fit only after a letter below `k`; fourteen never do.
        assert!(!NameHash::of(b"jjjjjjjjjjjjj").is_empty());
        assert!(NameHash::of(b"kkkkkkkkkkkkk").is_empty());
        assert!(NameHash::of(b"aaaaaaaaaaaaaa").is_empty());
    }

    /// Markup where a plain search would find scripts that are not there, or miss their ends.
    const TRICKY: &[&str] = &[
        "<script>a</script>b",
        "<SCRIPT type=module>x</ScRiPt >y",
        "<script>a</script\t foo='>'>b<script>c</script>",
        "<script>a</scriptx>b</script/>c",
        "<script>if(a<b)c</ script></script>",
        "<script>x<!- y</script><script>x<! y</script>",
        "<script/>x</script>",
        "<!-- <script> -->",
        "<!--> <script>x</script>",
        "<!---> <script>x</script>",
        "<!----> <script>x</script>",
        "<!-- --!> <script>x</script>",
        "<!-- --!-> <script> --> <script>x</script>",
        "<!-- <!--> <script>x</script>",
        "<!-- -- > <script> ---> <script>y</script>",
        "<!DOCTYPE html '>' <script>x</script>",
        "<!doctype html><script>x</script>",
        "<? <script> > <script>y</script>",
        "</ <script>> <script>z</script>",
        "</> <script>z</script>",
        "<! x <script> > <script>z</script>",
        "<a title='<script>'>x</a><script>y</script>",
        "<a title=\"x>y\"><script>1</script>",
        "<a<script>x</script>",
        "< script>x</script>",
        "<style></script><script>x</script></style><script>y</script>",
        "<title><script></title><script>ok</script>",
        "<textarea></textarea ><script>1</script>",
        "<noscript><script>a</script></noscript><script>b</script>",
        "<xmp><script></xmp><script>b</script>",
        "<iframe><script></iframe><script>b</script>",
        "<noembed><script></noembed><noframes><script></noframes><script>b</script>",
        "<plaintext><script>a</script>",
        "<template><script>t</script></template>",
        "<svg><![CDATA[<script>]]></svg><script>x</script>",
        "<![CDATA[<script>]]><script>x</script>",
        "<svg><p><script>x</script>",
        "<svg><foreignObject><script>x</script></foreignObject></svg><script>y</script>",
        "<math><mi><script>x</script></mi></math><script>y</script>",
        "<svg><font color=red><script>x</script>",
        "<svg><title><p>x</title><p><script>y</script>",
        "<svg></p><script>x</script>",
        "<meta charset=utf-8><script>x</script>",
        "<scriptx>y</scriptx><script>z</script>",
        "<div><p><p><li></div><script>x</script>",
        "<custom-el a=1></custom-el><script>x</script>",
        "<script>x</scr",
        "<script>x</script",
        "<script",
        "<!--",
        "<svg><![CDATA[ ]",
    ];

    /// Markup this reading leaves to lol_html.
    const UNDECIDABLE: &[&str] = &[
        "<script><!--x</script>",
        "<script a=>x</script>",
        "<style a=>x</style>",
        "<svg><script>x</script></svg>",
        "<svg><script/></svg><script>x</script>",
        "<svg><desc/><script>",
        "<svg><title><p>x</title><script>y</script>",
        "<svg><font><script>",
        "<math><annotation-xml encoding=text/html><script>",
        "<meta charset=shift_jis>",
        "<meta charset=utf-8 charset=utf-8>",
    ];

    #[test]
    fn marks_are_lol_html_marks_at_every_cut() {
        for page in TRICKY {
            let page = page.as_bytes();
            let want = lol_html_marks(page);
            for cut in 0..=page.len() {
                assert_eq!(
                    scanned_marks(page, &[cut]).as_ref(),
                    Some(&want),
                    "{} cut at {cut}",
                    String::from_utf8_lossy(page)
                );
            }
        }
    }

    #[test]
    fn what_this_reading_cannot_follow_goes_to_lol_html() {
        for page in UNDECIDABLE {
            assert_eq!(scanned_marks(page.as_bytes(), &[]), None, "{page}");
        }
    }

    #[test]
    fn tags_lol_html_reads_whole_go_to_lol_html_when_long() {
        let attributes = " a".repeat(MAX_LEXED_TAG / 2);
        for page in [
            format!("<script{attributes}>x</script>"),
            format!("<script>x</script{attributes}>"),
            format!("<svg><font{attributes}>"),
        ] {
            assert_eq!(scanned_marks(page.as_bytes(), &[]), None);
        }
        let page = format!("<div{attributes}><script>x</script>");
        assert!(scanned_marks(page.as_bytes(), &[]).is_some());
        // A `<meta>` is read no further than the plain stage's scan reads it: one whose
        // attributes run past that goes to lol_html, whatever it declares.
        let meta = |len: usize| {
            let pad = "x".repeat(len - r#" charset="utf-8" a="">"#.len());
            format!(r#"<meta charset="utf-8" a="{pad}"><script>x</script>"#)
        };
        assert!(scanned_marks(meta(MAX_META_TAG).as_bytes(), &[]).is_some());
        assert_eq!(scanned_marks(meta(MAX_META_TAG + 1).as_bytes(), &[]), None);
    }

    /// Why the reading has its limits: past them, lol_html's memory limit makes it give up
    /// and pass the rest through, which the reading could not foresee.
    #[test]
    fn lol_html_gives_up_on_many_attributes_or_open_elements() {
        for page in [
            format!("<script{}>x</script>", " a".repeat(200_000)),
            "<div>".repeat(200_000),
        ] {
            let mut stage = HtmlStage::new(rule(), utf8(), Some(1 << 20));
            for piece in page.as_bytes().chunks(8192) {
                stage.write(piece, &mut Vec::new());
            }
            assert!(stage.bail_out_reason().is_some());
            assert_eq!(scanned_marks(page.as_bytes(), &[]), None);
        }
    }

    #[test]
    fn too_many_open_elements_go_to_lol_html() {
        let open = "<div>".repeat(OPEN_MAX);
        assert!(scanned_marks(open.as_bytes(), &[]).is_some());
        let closed = format!("{open}{}", "</div>".repeat(OPEN_MAX)).repeat(2);
        assert!(scanned_marks(closed.as_bytes(), &[]).is_some());
        assert_eq!(scanned_marks(format!("{open}<p>").as_bytes(), &[]), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        #[test]
        fn marks_are_lol_html_marks_for_hostile_markup(
            parts in proptest::collection::vec(prop_oneof![
                Just("<script>"), Just("</script>"), Just("<SCRIPT type=x>"), Just("</script >"),
                Just("</ScRiPt\t/>"), Just("</script"), Just("<script/>"), Just("<script src='>'>"),
                Just("self.__next_f.push([1,\"x\"])"), Just("<!--"), Just("-->"), Just("--!>"),
                Just("<!-->"), Just("-"), Just("!"), Just("<"), Just(">"), Just("/"), Just("="),
                Just("'"), Just("\""), Just(" "), Just("\n"), Just("a"), Just("<a href="),
                Just("<template>"), Just("</template>"), Just("<plaintext>"), Just("<svg>"),
                Just("</svg>"), Just("<math>"), Just("</math>"), Just("<![CDATA["), Just("]]>"),
                Just("]"), Just("<p>"), Just("</p>"), Just("<foreignObject>"), Just("<mi>"),
                Just("</mi>"), Just("<title>"), Just("</title>"), Just("<style>"),
                Just("</style>"), Just("<textarea>"), Just("</textarea>"), Just("<noscript>"),
                Just("</noscript>"), Just("<!DOCTYPE html>"), Just("<?x>"), Just("</ x>"),
                Just("<font size=1>"), Just("<meta charset=utf-8>"), Just("<img/>"),
                Just("<custom-el>"), Just("</custom-el>"), Just("<br>"), Just("</br>"),
                Just("<desc/>"), Just("<title/>"), Just("<iframe>"), Just("</iframe>"),
                Just("<style a=>"), Just("<script a=>"), Just("<title a= >"),
            ], 0..40),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let input = parts.concat();
            let input = input.as_bytes();
            let mut cuts: Vec<usize> = picks.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            if let Some(marks) = scanned_marks(input, &cuts) {
                prop_assert_eq!(marks, lol_html_marks(input), "{:?} cuts {:?}", String::from_utf8_lossy(input), cuts);
            }
        }
    }
}
