//! What one file says, read from its tokens: the `mod` declarations, the `use` trees, the
//! paths in code that start at `crate`, `super`, `self` or another name, the names it
//! defines, and its words. Test-only code is dropped first.

use crate::lex::{Tok, Token};

/// A scope inside a file: the names of the inline `mod x { … }` blocks it is nested in, outermost
/// first (empty for the file's own module).
pub type Scope = Vec<String>;

/// `mod name;`: a module in a file of its own.
#[derive(Debug, Clone)]
pub struct ModDecl {
    /// Scope the declaration sits in.
    pub scope: Scope,
    /// The module's name.
    pub name: String,
    /// The `#[path = "…"]` given, if any.
    pub path_attr: Option<String>,
    /// Line of the declaration.
    pub line: u32,
}

/// How a `use` leaf binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UseKind {
    /// `a::b` or `a::b as c`: binds the name given (`None` for `as _`).
    Name(Option<String>),
    /// `a::b::*`.
    Glob,
}

/// One name a path reaches: either a leaf of a `use` tree, spelt out in full, or a path in code.
#[derive(Debug, Clone)]
pub struct PathRef {
    /// Scope the path is written in.
    pub scope: Scope,
    /// Its segments (`crate`, `super`, `self` kept as written; `$crate` read as `crate`).
    pub segs: Vec<String>,
    /// `Some` for a `use` leaf; `None` for a path in code.
    pub use_kind: Option<UseKind>,
    /// Whether a `use` sits directly in a module (so its names are the module's), not in a block.
    pub module_level: bool,
    /// Line it is written on.
    pub line: u32,
}

/// A word of the file for the engine's word rule: an identifier, or the text of a comment or a
/// string literal.
#[derive(Debug, Clone)]
pub struct Word {
    /// The identifier, or the whole comment or literal text.
    pub text: String,
    /// Line it starts on.
    pub line: u32,
}

/// Everything the checker reads from one file, test-only code left out.
#[derive(Debug, Clone, Default)]
pub struct FileFacts {
    /// `mod x;` declarations.
    pub mods: Vec<ModDecl>,
    /// Inline `mod x { … }` blocks, as the scope each opens.
    pub inline_mods: Vec<Scope>,
    /// `use` leaves and paths in code.
    pub paths: Vec<PathRef>,
    /// Names defined directly in a module (functions, types, constants, …), with their scope.
    pub defs: Vec<(Scope, String)>,
    /// Identifiers, comments and string literals.
    pub words: Vec<Word>,
}

/// Reads a file's tokens.
pub fn read(tokens: &[Token]) -> FileFacts {
    let kept: Vec<&Token> = without_test_code(tokens);
    let mut facts = FileFacts::default();
    for t in &kept {
        match &t.tok {
            Tok::Ident(s) | Tok::Comment(s) => facts.words.push(Word {
                text: s.clone(),
                line: t.line,
            }),
            Tok::Lit(s) if !s.starts_with(|c: char| c.is_ascii_digit()) => facts.words.push(Word {
                text: s.clone(),
                line: t.line,
            }),
            _ => {}
        }
    }
    let code: Vec<&Token> = kept
        .into_iter()
        .filter(|t| !matches!(t.tok, Tok::Comment(_)))
        .collect();
    Reader {
        code: &code,
        pos: 0,
        frames: Vec::new(),
        facts: &mut facts,
    }
    .run();
    facts
}

fn ident<'a>(t: Option<&&'a Token>) -> Option<&'a str> {
    match t.map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn is_punct(t: Option<&&Token>, c: char) -> bool {
    matches!(t.map(|t| &t.tok), Some(Tok::Punct(p)) if *p == c)
}

fn is_sep(t: Option<&&Token>) -> bool {
    matches!(t.map(|t| &t.tok), Some(Tok::PathSep))
}

/// The tokens left once every item, statement, field or arm under `#[cfg(test)]` (or any `cfg`
/// that holds only under test) or `#[test]` is removed, with the comments inside it.
fn without_test_code(tokens: &[Token]) -> Vec<&Token> {
    let code: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].tok, Tok::Comment(_)))
        .collect();
    let at = |k: usize| code.get(k).map(|&i| &tokens[i]);
    let mut drop = vec![false; tokens.len()];
    let mut k = 0;
    while k < code.len() {
        if !(is_punct(at(k).as_ref(), '#') && is_punct(at(k + 1).as_ref(), '[')) {
            k += 1;
            continue;
        }
        // A run of outer attributes, then the thing they are on.
        let first = k;
        let mut test_only = false;
        while is_punct(at(k).as_ref(), '#') && is_punct(at(k + 1).as_ref(), '[') {
            let close = matching(&code, tokens, k + 1);
            let attr: Vec<&Token> = code[k + 2..close].iter().map(|&i| &tokens[i]).collect();
            test_only |= attribute_is_test_only(&attr);
            k = close + 1;
        }
        if !test_only {
            continue;
        }
        let end = item_end(&code, tokens, k);
        for &i in &code[first..end] {
            drop[i] = true;
        }
        // Comments inside the dropped range go with it.
        let (lo, hi) = (code[first], code.get(end).copied().unwrap_or(tokens.len()));
        drop[lo..hi].iter_mut().for_each(|d| *d = true);
        k = end;
    }
    tokens
        .iter()
        .zip(drop)
        .filter(|(_, d)| !d)
        .map(|(t, _)| t)
        .collect()
}

/// Index in `code` of the bracket closing the one at `open` (or the end).
fn matching(code: &[usize], tokens: &[Token], open: usize) -> usize {
    closing(code.iter().skip(open).map(|&i| &tokens[i].tok)).map_or(code.len(), |k| open + k)
}

/// Offset, in `toks`, of the bracket closing the one `toks` starts with, if it closes.
fn closing<'t>(toks: impl Iterator<Item = &'t Tok>) -> Option<usize> {
    let mut depth = 0usize;
    for (k, tok) in toks.enumerate() {
        match tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Index in `code` just past the item, statement, field or arm starting at `start`: its `;`
/// or `,`, or its closing `}`, or up to a bracket that closes around it.
fn item_end(code: &[usize], tokens: &[Token], start: usize) -> usize {
    let tok = |k: usize| code.get(k).map(|&i| &tokens[i].tok);
    // Generic brackets (`<` after a name or `::`), so that `fn f<A, B>` is not cut at its comma.
    let mut angles = 0usize;
    let mut k = start;
    while k < code.len() {
        match tok(k) {
            Some(Tok::Punct(';')) => return k + 1,
            Some(Tok::Punct(',')) if angles == 0 => return k + 1,
            Some(Tok::Punct('<'))
                if k > start && matches!(tok(k - 1), Some(Tok::Ident(_) | Tok::PathSep)) =>
            {
                angles += 1
            }
            Some(Tok::Punct('>'))
                if angles > 0 && !matches!(tok(k - 1), Some(Tok::Punct('-' | '='))) =>
            {
                angles -= 1
            }
            Some(Tok::Punct('(' | '[')) => k = matching(code, tokens, k),
            Some(Tok::Punct('{')) => {
                let close = matching(code, tokens, k);
                // An arm `x => { … },` keeps its comma with it.
                let comma = matches!(tok(close + 1), Some(Tok::Punct(',')));
                return close + 1 + usize::from(comma);
            }
            Some(Tok::Punct(')' | ']' | '}')) => return k,
            _ => {}
        }
        k += 1;
    }
    code.len()
}

/// `test`, or `cfg(P)` where `P` holds only under test.
fn attribute_is_test_only(attr: &[&Token]) -> bool {
    match attr.first().map(|t| &t.tok) {
        Some(Tok::Ident(s)) if s == "test" && attr.len() == 1 => true,
        Some(Tok::Ident(s)) if s == "cfg" && attr.len() > 1 => {
            let members = predicate_members(attr, &mut 1);
            members == [true]
        }
        _ => false,
    }
}

/// Reads the members of a `cfg` predicate list, from its `(` to past its `)`: for each, whether
/// it can hold only under `test` (`test`, `all(…)` with such a member, `any(…)` with only such
/// members; `not(…)` never).
fn predicate_members(attr: &[&Token], pos: &mut usize) -> Vec<bool> {
    let mut out = Vec::new();
    *pos += 1; // (
    while *pos < attr.len() && !matches!(attr[*pos].tok, Tok::Punct(')')) {
        if matches!(attr[*pos].tok, Tok::Punct(',')) {
            *pos += 1;
            continue;
        }
        out.push(predicate_needs_test(attr, pos));
    }
    *pos += 1; // )
    out
}

/// Reads one `cfg` predicate at `pos`.
fn predicate_needs_test(attr: &[&Token], pos: &mut usize) -> bool {
    let name = match &attr[*pos].tok {
        Tok::Ident(s) => s.clone(),
        _ => {
            *pos += 1;
            return false;
        }
    };
    *pos += 1;
    match attr.get(*pos).map(|t| &t.tok) {
        Some(Tok::Punct('(')) => {
            let members = predicate_members(attr, pos);
            match name.as_str() {
                "all" => members.iter().any(|&m| m),
                "any" => !members.is_empty() && members.iter().all(|&m| m),
                _ => false,
            }
        }
        Some(Tok::Punct('=')) => {
            *pos += 2; // = "value"
            false
        }
        _ => name == "test",
    }
}

/// What a `{` opened.
#[derive(Debug, Clone)]
enum Frame {
    /// An inline module, by name.
    Module(String),
    /// Anything else: a function body, an `impl`, a block, a struct body.
    Block,
}

struct Reader<'a, 'f> {
    code: &'a [&'a Token],
    pos: usize,
    frames: Vec<Frame>,
    facts: &'f mut FileFacts,
}

const DEF_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

impl Reader<'_, '_> {
    fn at(&self, ahead: usize) -> Option<&&Token> {
        self.code.get(self.pos + ahead)
    }

    fn scope(&self) -> Scope {
        self.frames
            .iter()
            .filter_map(|f| match f {
                Frame::Module(name) => Some(name.clone()),
                Frame::Block => None,
            })
            .collect()
    }

    fn module_level(&self) -> bool {
        self.frames.iter().all(|f| matches!(f, Frame::Module(_)))
    }

    fn run(&mut self) {
        let mut path_attr: Option<String> = None;
        while let Some(t) = self.at(0) {
            let line = t.line;
            match &t.tok {
                Tok::Punct('#') if is_punct(self.at(1), '!') && is_punct(self.at(2), '[') => {
                    self.pos = self.close_of(self.pos + 2) + 1;
                    continue;
                }
                Tok::Punct('#') if is_punct(self.at(1), '[') => {
                    if ident(self.at(2)) == Some("path") && is_punct(self.at(3), '=') {
                        if let Some(Tok::Lit(p)) = self.at(4).map(|t| &t.tok) {
                            path_attr = Some(p.clone());
                        }
                    }
                    // Attributes name no module path worth an edge (`#[cfg]`, `#[derive]`).
                    self.pos = self.close_of(self.pos + 1) + 1;
                    continue;
                }
                Tok::Punct('{') => {
                    self.frames.push(Frame::Block);
                    path_attr = None;
                }
                Tok::Punct('}') => {
                    self.frames.pop();
                    path_attr = None;
                }
                Tok::Punct(';') => path_attr = None,
                Tok::Ident(kw) if kw == "mod" && !is_sep(self.at(1)) => {
                    if let Some(name) = ident(self.at(1)).map(str::to_owned) {
                        let scope = self.scope();
                        if self.module_level() {
                            self.facts.defs.push((scope.clone(), name.clone()));
                        }
                        if is_punct(self.at(2), '{') {
                            let mut inner = scope;
                            inner.push(name.clone());
                            self.facts.inline_mods.push(inner);
                            self.frames.push(Frame::Module(name));
                            self.pos += 3;
                        } else {
                            self.facts.mods.push(ModDecl {
                                scope,
                                name,
                                path_attr: path_attr.take(),
                                line,
                            });
                            self.pos += 2;
                        }
                        continue;
                    }
                }
                Tok::Ident(kw) if kw == "use" => {
                    self.pos += 1;
                    self.use_item(line);
                    continue;
                }
                Tok::Ident(kw) if kw == "pub" && is_punct(self.at(1), '(') => {
                    // `pub(in path)` restricts visibility; it imports nothing.
                    self.pos = self.close_of(self.pos + 1) + 1;
                    continue;
                }
                Tok::Ident(kw) if DEF_KEYWORDS.contains(&kw.as_str()) => {
                    if let (true, Some(name)) = (self.module_level(), ident(self.at(1))) {
                        self.facts.defs.push((self.scope(), name.to_owned()));
                    }
                }
                Tok::Ident(_) | Tok::Punct('$') if self.path_starts_here() => {
                    self.code_path(line);
                    continue;
                }
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// Index of the bracket closing the one at `open`.
    fn close_of(&self, open: usize) -> usize {
        let toks = self.code[open..].iter().map(|token| &token.tok);
        closing(toks).map_or(self.code.len(), |k| open + k)
    }

    /// An identifier followed by `::` that is not itself after `::` (nor after `.` as a method
    /// turbofish), or `$crate::`.
    fn path_starts_here(&self) -> bool {
        let prev = self.pos.checked_sub(1).and_then(|p| self.code.get(p));
        if is_sep(prev) || is_punct(prev, '.') {
            return false;
        }
        if is_punct(self.at(0), '$') {
            return ident(self.at(1)) == Some("crate") && is_sep(self.at(2));
        }
        is_sep(self.at(1)) && ident(self.at(2)).is_some()
    }

    fn code_path(&mut self, line: u32) {
        if is_punct(self.at(0), '$') {
            self.pos += 1;
        }
        let mut segs = Vec::new();
        while let Some(s) = ident(self.at(0)) {
            segs.push(s.to_owned());
            self.pos += 1;
            if is_sep(self.at(0)) && ident(self.at(1)).is_some() {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.facts.paths.push(PathRef {
            scope: self.scope(),
            segs,
            use_kind: None,
            module_level: false,
            line,
        });
    }

    /// After `use`: the tree, up to its `;`.
    fn use_item(&mut self, line: u32) {
        let mut leaves = Vec::new();
        if is_sep(self.at(0)) {
            // `use ::name`: an external crate, never this one.
            self.pos += 1;
            self.use_tree(vec!["::".to_owned()], &mut leaves);
        } else {
            self.use_tree(Vec::new(), &mut leaves);
        }
        while self.at(0).is_some() && !is_punct(self.at(0), ';') {
            self.pos += 1;
        }
        let (scope, module_level) = (self.scope(), self.module_level());
        for (segs, kind) in leaves {
            self.facts.paths.push(PathRef {
                scope: scope.clone(),
                segs,
                use_kind: Some(kind),
                module_level,
                line,
            });
        }
    }

    fn use_tree(&mut self, mut prefix: Vec<String>, out: &mut Vec<(Vec<String>, UseKind)>) {
        loop {
            if is_punct(self.at(0), '$') {
                self.pos += 1;
            }
            if is_punct(self.at(0), '*') {
                self.pos += 1;
                out.push((prefix, UseKind::Glob));
                return;
            }
            if is_punct(self.at(0), '{') {
                self.pos += 1;
                while self.at(0).is_some() && !is_punct(self.at(0), '}') {
                    if is_punct(self.at(0), ',') {
                        self.pos += 1;
                        continue;
                    }
                    let before = self.pos;
                    self.use_tree(prefix.clone(), out);
                    if self.pos == before {
                        self.pos += 1;
                    }
                }
                self.pos += 1;
                return;
            }
            let Some(seg) = ident(self.at(0)).map(str::to_owned) else {
                return;
            };
            self.pos += 1;
            prefix.push(seg);
            if is_sep(self.at(0)) {
                self.pos += 1;
                continue;
            }
            let mut alias = prefix.last().cloned();
            if ident(self.at(0)) == Some("as") {
                alias = ident(self.at(1)).filter(|a| *a != "_").map(str::to_owned);
                self.pos += 2;
            }
            if prefix.last().map(String::as_str) == Some("self") {
                prefix.pop();
                if alias.as_deref() == Some("self") {
                    alias = prefix.last().cloned();
                }
            }
            out.push((prefix, UseKind::Name(alias)));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::lex;

    fn facts(src: &str) -> FileFacts {
        read(&lex(src).unwrap())
    }

    fn uses(f: &FileFacts) -> Vec<String> {
        f.paths
            .iter()
            .filter(|p| p.use_kind.is_some())
            .map(|p| format!("{}:{:?}", p.segs.join("::"), p.use_kind.as_ref().unwrap()))
            .collect()
    }

    #[test]
    fn grouped_uses_are_spelt_out() {
        let f = facts("use crate::{a::X, b::{self, Y as Z, c::*}}; use super::q as _;");
        assert_eq!(
            uses(&f),
            [
                "crate::a::X:Name(Some(\"X\"))",
                "crate::b:Name(Some(\"b\"))",
                "crate::b::Y:Name(Some(\"Z\"))",
                "crate::b::c:Glob",
                "super::q:Name(None)",
            ]
        );
    }

    #[test]
    fn test_only_code_is_dropped() {
        let f = facts(
            "#[cfg(test)]\nmod tests { use crate::a::X; }\n#[cfg(test)]\nmod fixtures;\n\
             #[cfg(all(test, feature = \"x\"))] use crate::b;\n#[test] fn t() { crate::c::f(); }\n\
             #[cfg(not(test))] use crate::d;\nfn g() { #[cfg(test)] crate::e::f(); crate::h::f(); }",
        );
        let all: Vec<String> = f.paths.iter().map(|p| p.segs.join("::")).collect();
        assert_eq!(all, ["crate::d", "crate::h::f"]);
        assert!(f.mods.is_empty());
    }

    #[test]
    fn mods_inline_mods_and_code_paths() {
        let f = facts(
            "#[path = \"other.rs\"] pub(crate) mod a; mod b { use super::a::X; fn f() { super::c::g(); x.y::<u8>(); } }",
        );
        assert_eq!(f.mods.len(), 1);
        assert_eq!(f.mods[0].path_attr.as_deref(), Some("other.rs"));
        assert_eq!(f.inline_mods, [vec!["b".to_owned()]]);
        let code: Vec<String> = f
            .paths
            .iter()
            .map(|p| format!("{:?}{}", p.scope, p.segs.join("::")))
            .collect();
        assert_eq!(code, ["[\"b\"]super::a::X", "[\"b\"]super::c::g"]);
    }
}
