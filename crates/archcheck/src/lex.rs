//! A Rust lexer just fine enough for the checker: identifiers, punctuation (with `::` as one
//! token), literals and comments, each with its line. Comments and literals are tokens of their
//! own so that no path is ever read out of them, while the engine rule can still read their
//! words.

/// What a token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// An identifier or keyword (`r#` raw identifiers without the prefix).
    Ident(String),
    /// `::`.
    PathSep,
    /// Any other single punctuation character.
    Punct(char),
    /// A string, byte string, character or number literal: the text between its quotes
    /// (escapes left as written), or the number as written.
    Lit(String),
    /// A lifetime or loop label, without its `'`.
    Lifetime(String),
    /// A line or block comment, doc comments included: its text without the markers.
    Comment(String),
}

/// A token and the line (from 1) it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Its first line.
    pub line: u32,
}

/// A lexing failure: what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    /// Line of the construct that did not end.
    pub line: u32,
    /// What did not end.
    pub what: &'static str,
}

/// Splits `source` into tokens.
///
/// # Errors
///
/// An unterminated block comment, string or character literal.
pub fn lex(source: &str) -> Result<Vec<Token>, LexError> {
    Lexer {
        chars: source.chars().collect(),
        pos: 0,
        line: 1,
        out: Vec::new(),
    }
    .run()
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    line: u32,
    out: Vec<Token>,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn push(&mut self, tok: Tok, line: u32) {
        self.out.push(Token { tok, line });
    }

    fn run(mut self) -> Result<Vec<Token>, LexError> {
        while let Some(c) = self.peek(0) {
            let line = self.line;
            match c {
                c if c.is_whitespace() => {
                    self.bump();
                }
                '/' if self.peek(1) == Some('/') => self.line_comment(line),
                '/' if self.peek(1) == Some('*') => self.block_comment(line)?,
                '"' => {
                    self.bump();
                    self.quoted(line)?;
                }
                '\'' => self.quote_or_lifetime(line)?,
                c if c.is_ascii_digit() => self.number(line),
                c if is_ident_start(c) => self.ident_or_prefixed_literal(line)?,
                ':' if self.peek(1) == Some(':') => {
                    self.pos += 2;
                    self.push(Tok::PathSep, line);
                }
                c => {
                    self.bump();
                    self.push(Tok::Punct(c), line);
                }
            }
        }
        Ok(self.out)
    }

    fn line_comment(&mut self, line: u32) {
        self.pos += 2;
        let mut text = String::new();
        while let Some(c) = self.peek(0) {
            if c == '\n' {
                break;
            }
            text.push(c);
            self.bump();
        }
        self.push(Tok::Comment(text), line);
    }

    fn block_comment(&mut self, line: u32) -> Result<(), LexError> {
        self.pos += 2;
        let mut depth = 1;
        let mut text = String::new();
        while depth > 0 {
            match (self.peek(0), self.peek(1)) {
                (Some('/'), Some('*')) => {
                    depth += 1;
                    self.pos += 2;
                }
                (Some('*'), Some('/')) => {
                    depth -= 1;
                    self.pos += 2;
                }
                (Some(_), _) => text.extend(self.bump()),
                (None, _) => {
                    return Err(LexError {
                        line,
                        what: "block comment",
                    })
                }
            }
        }
        self.push(Tok::Comment(text), line);
        Ok(())
    }

    /// After an opening `"`: up to the closing one, escapes skipped.
    fn quoted(&mut self, line: u32) -> Result<(), LexError> {
        let text = self.up_to('"', line, "string")?;
        self.push(Tok::Lit(text), line);
        Ok(())
    }

    /// The text up to an unescaped `close` (consumed), escapes kept as written; `what` names
    /// the literal when the file ends first.
    fn up_to(&mut self, close: char, line: u32, what: &'static str) -> Result<String, LexError> {
        let mut text = String::new();
        loop {
            match self.bump() {
                Some(c) if c == close => return Ok(text),
                Some('\\') => {
                    text.push('\\');
                    text.extend(self.bump());
                }
                Some(c) => text.push(c),
                None => return Err(LexError { line, what }),
            }
        }
    }

    /// At `r`, after any `b` / `c` prefix: `r"…"` or `r#…#"…"#…#`.
    fn raw_string(&mut self, line: u32) -> Result<(), LexError> {
        self.bump(); // r
        let mut hashes = 0;
        while self.peek(0) == Some('#') {
            hashes += 1;
            self.bump();
        }
        self.bump(); // "
        let mut text = String::new();
        loop {
            match self.bump() {
                Some('"') if (0..hashes).all(|i| self.peek(i) == Some('#')) => {
                    self.pos += hashes;
                    break;
                }
                Some(c) => text.push(c),
                None => {
                    return Err(LexError {
                        line,
                        what: "raw string",
                    })
                }
            }
        }
        self.push(Tok::Lit(text), line);
        Ok(())
    }

    /// At `'`: a character literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime / label.
    fn quote_or_lifetime(&mut self, line: u32) -> Result<(), LexError> {
        let is_char = matches!(
            (self.peek(1), self.peek(2)),
            (Some('\\'), _) | (Some(_), Some('\''))
        );
        self.bump();
        if is_char {
            let text = self.up_to('\'', line, "character literal")?;
            self.push(Tok::Lit(text), line);
        } else {
            let name = self.take_ident();
            self.push(Tok::Lifetime(name), line);
        }
        Ok(())
    }

    fn number(&mut self, line: u32) {
        let mut text = String::new();
        while let Some(c) = self.peek(0) {
            let fraction = c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit());
            if !(is_ident_continue(c) || fraction) {
                break;
            }
            text.push(c);
            self.bump();
        }
        self.push(Tok::Lit(text), line);
    }

    fn take_ident(&mut self) -> String {
        let mut name = String::new();
        while let Some(c) = self.peek(0).filter(|&c| is_ident_continue(c)) {
            name.push(c);
            self.bump();
        }
        name
    }

    /// An identifier, or a literal with a prefix (`b"…"`, `b'…'`, `c"…"`, `r"…"`, `br#"…"#`,
    /// `cr"…"`), or a raw identifier (`r#type`).
    fn ident_or_prefixed_literal(&mut self, line: u32) -> Result<(), LexError> {
        let (c0, c1, c2) = (self.peek(0), self.peek(1), self.peek(2));
        let raw_start = |at: Option<char>, next: Option<char>| {
            at == Some('r') && matches!(next, Some('"') | Some('#'))
        };
        match (c0, c1) {
            (Some('b' | 'c'), Some('"')) => {
                self.pos += 2;
                return self.quoted(line);
            }
            (Some('b'), Some('\'')) => {
                self.bump();
                return self.quote_or_lifetime(line);
            }
            (Some('b' | 'c'), _) if raw_start(c1, c2) && self.raw_follows(1) => {
                self.bump();
                return self.raw_string(line);
            }
            (Some('r'), Some('#')) if c2.is_some_and(is_ident_start) => {
                self.pos += 2;
                let name = self.take_ident();
                self.push(Tok::Ident(name), line);
                return Ok(());
            }
            (Some('r'), _) if raw_start(c0, c1) && self.raw_follows(0) => {
                return self.raw_string(line);
            }
            _ => {}
        }
        let name = self.take_ident();
        self.push(Tok::Ident(name), line);
        Ok(())
    }

    /// Whether the `r` at `self.pos + at` opens a raw string: `#`s then `"`.
    fn raw_follows(&self, at: usize) -> bool {
        let mut i = at + 1;
        while self.peek(i) == Some('#') {
            i += 1;
        }
        self.peek(i) == Some('"')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn literals_and_comments_are_set_apart() {
        let t = toks(r##"a::b("crate::x", r#"c"d"#, 'q', '\'', b'x', 1.5) // crate::y"##);
        assert_eq!(t[0], Tok::Ident("a".into()));
        assert_eq!(t[1], Tok::PathSep);
        assert!(t.contains(&Tok::Lit("crate::x".into())));
        assert!(t.contains(&Tok::Lit("c\"d".into())));
        assert!(t.contains(&Tok::Lit("1.5".into())));
        assert_eq!(t.last(), Some(&Tok::Comment(" crate::y".into())));
    }

    #[test]
    fn lifetimes_nested_comments_and_raw_idents() {
        let t = toks("fn f<'a>(x: &'a r#type) /* a /* b */ c */ -> u8 { 'l: loop {} }");
        assert!(t.contains(&Tok::Lifetime("a".into())));
        assert!(t.contains(&Tok::Lifetime("l".into())));
        assert!(t.contains(&Tok::Ident("type".into())));
        assert!(t.contains(&Tok::Comment(" a  b  c ".into())));
    }

    #[test]
    fn unterminated_string_is_an_error() {
        assert_eq!(lex("\n\"abc").unwrap_err().line, 2);
    }
}
