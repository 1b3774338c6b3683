//! `Signature-Input` and `Signature` (RFC 9421 §4): the subset of Structured Field
//! Dictionaries (RFC 8941) they use, written and read.
//!
//! Written: `sig1=("@method" "@authority");created=1;keyid="k";alg="ed25519"` and
//! `sig1=:BASE64:`. Read: any dictionary whose members are inner lists of strings (without
//! item parameters) or byte sequences, with integer, string or boolean parameters. Anything
//! else is an error, never a guess: a verifier must rebuild exactly what was signed.

use std::fmt::{self, Write as _};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::components::Component;

/// A parameter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamValue {
    /// An integer (`created=1618884473`).
    Integer(i64),
    /// A string (`keyid="test-key-ed25519"`).
    String(String),
    /// A boolean (`?1`, or a bare name).
    Boolean(bool),
}

/// The covered components and parameters of one signature: the member of
/// `Signature-Input`, and the last line of the signature base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureParams {
    /// Covered components, in order.
    pub components: Vec<Component>,
    /// Parameters, in order (`created`, `keyid`, `alg`, …).
    pub params: Vec<(String, ParamValue)>,
}

/// The most a parameter name or dictionary key may be: far beyond any real one.
const MAX_KEY: usize = 64;

/// Why a field could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError(pub &'static str);

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl SignatureParams {
    /// The value of integer parameter `name`.
    pub fn integer(&self, name: &str) -> Option<i64> {
        self.params.iter().find_map(|(n, v)| match v {
            ParamValue::Integer(i) if n == name => Some(*i),
            _ => None,
        })
    }

    /// The value of string parameter `name`.
    pub fn string(&self, name: &str) -> Option<&str> {
        self.params.iter().find_map(|(n, v)| match v {
            ParamValue::String(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }

    /// The serialized inner list with its parameters: the member value in
    /// `Signature-Input`, and the value of `"@signature-params"` in the base.
    pub fn serialize(&self) -> String {
        let mut out = String::from("(");
        for (i, c) in self.components.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            write_string(&mut out, c.name());
        }
        out.push(')');
        for (name, value) in &self.params {
            let _ = write!(out, ";{name}");
            match value {
                ParamValue::Integer(i) => {
                    let _ = write!(out, "={i}");
                }
                ParamValue::String(s) => {
                    out.push('=');
                    write_string(&mut out, s);
                }
                ParamValue::Boolean(true) => {}
                ParamValue::Boolean(false) => out.push_str("=?0"),
            }
        }
        out
    }

    /// Reads the member `label` of a `Signature-Input` field value.
    ///
    /// # Errors
    /// A field that is not a valid dictionary of the supported subset, or has no `label`.
    pub fn parse_member(field: &str, label: &str) -> Result<SignatureParams, SyntaxError> {
        match dictionary(field)?.into_iter().find(|(k, _)| k == label) {
            Some((_, Member::List(params))) => Ok(params),
            Some((_, Member::Bytes(_))) => Err(SyntaxError("the member is not an inner list")),
            None => Err(SyntaxError("no member with the signature's label")),
        }
    }
}

/// `label=:BASE64:`, the `Signature` field value for one signature.
pub fn serialize_signature(label: &str, signature: &[u8]) -> String {
    format!("{label}=:{}:", STANDARD.encode(signature))
}

/// The bytes of member `label` of a `Signature` field value.
///
/// # Errors
/// A field that is not a valid dictionary of the supported subset, or has no `label`.
pub fn parse_signature(field: &str, label: &str) -> Result<Vec<u8>, SyntaxError> {
    match dictionary(field)?.into_iter().find(|(k, _)| k == label) {
        Some((_, Member::Bytes(bytes))) => Ok(bytes),
        Some((_, Member::List(_))) => Err(SyntaxError("the member is not a byte sequence")),
        None => Err(SyntaxError("no member with the signature's label")),
    }
}

/// An sf-string: `"` … `"` with `\` before `"` and `\`. Callers only pass printable ASCII
/// (component names, kids and algorithm names are checked where they are made).
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// A dictionary member value of the subset.
enum Member {
    List(SignatureParams),
    Bytes(Vec<u8>),
}

/// Parses a whole dictionary (RFC 8941 §4.2.2). A later member with the same key replaces
/// an earlier one, as the RFC says.
fn dictionary(field: &str) -> Result<Vec<(String, Member)>, SyntaxError> {
    let mut p = Parser {
        s: field.as_bytes(),
        at: 0,
    };
    let mut out: Vec<(String, Member)> = Vec::new();
    p.skip(b" \t");
    if p.done() {
        return Err(SyntaxError("an empty field"));
    }
    loop {
        let key = p.key()?;
        if !p.eat(b'=') {
            return Err(SyntaxError("a member without a value"));
        }
        let member = match p.peek() {
            Some(b'(') => Member::List(p.inner_list()?),
            Some(b':') => {
                let bytes = p.byte_sequence()?;
                if !p.params()?.is_empty() {
                    return Err(SyntaxError("parameters on a signature value"));
                }
                Member::Bytes(bytes)
            }
            _ => return Err(SyntaxError("a member that is neither a list nor bytes")),
        };
        out.retain(|(k, _)| *k != key);
        out.push((key, member));
        p.skip(b" \t");
        if p.done() {
            return Ok(out);
        }
        if !p.eat(b',') {
            return Err(SyntaxError("members not separated by a comma"));
        }
        p.skip(b" \t");
        if p.done() {
            return Err(SyntaxError("a trailing comma"));
        }
    }
}

/// A cursor over a field value.
struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn done(&self) -> bool {
        self.at >= self.s.len()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.at += usize::from(hit);
        hit
    }

    fn skip(&mut self, set: &[u8]) {
        while self.peek().is_some_and(|b| set.contains(&b)) {
            self.at += 1;
        }
    }

    /// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`.
    fn key(&mut self) -> Result<String, SyntaxError> {
        let start = self.at;
        if !self
            .peek()
            .is_some_and(|b| b.is_ascii_lowercase() || b == b'*')
        {
            return Err(SyntaxError("a key must start with a lowercase letter or *"));
        }
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.*".contains(&b))
        {
            self.at += 1;
        }
        if self.at - start > MAX_KEY {
            return Err(SyntaxError("a key is too long"));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.at]).into_owned())
    }

    /// `( sf-string *( 1*SP sf-string ) )` and its parameters.
    fn inner_list(&mut self) -> Result<SignatureParams, SyntaxError> {
        self.eat(b'(');
        let mut components = Vec::new();
        loop {
            self.skip(b" ");
            if self.eat(b')') {
                break;
            }
            if !components.is_empty() && self.s.get(self.at - 1) != Some(&b' ') {
                return Err(SyntaxError("list items not separated by a space"));
            }
            let name = self.string()?;
            if self.peek() == Some(b';') {
                return Err(SyntaxError("component parameters are not supported"));
            }
            let component =
                Component::from_name(&name).ok_or(SyntaxError("an unsupported component"))?;
            if components.contains(&component) {
                return Err(SyntaxError("a component covered twice"));
            }
            components.push(component);
            if !matches!(self.peek(), Some(b' ' | b')')) {
                return Err(SyntaxError("an unterminated inner list"));
            }
        }
        let params = self.params()?;
        Ok(SignatureParams { components, params })
    }

    /// `*( ";" *SP key [ "=" bare-item ] )`, of integers, strings and booleans.
    fn params(&mut self) -> Result<Vec<(String, ParamValue)>, SyntaxError> {
        let mut params: Vec<(String, ParamValue)> = Vec::new();
        while self.eat(b';') {
            self.skip(b" ");
            let name = self.key()?;
            let value = if self.eat(b'=') {
                match self.peek() {
                    Some(b'"') => ParamValue::String(self.string()?),
                    Some(b'-' | b'0'..=b'9') => ParamValue::Integer(self.integer()?),
                    Some(b'?') => {
                        self.at += 1;
                        let v = match self.peek() {
                            Some(b'1') => true,
                            Some(b'0') => false,
                            _ => return Err(SyntaxError("a bad boolean")),
                        };
                        self.at += 1;
                        ParamValue::Boolean(v)
                    }
                    _ => return Err(SyntaxError("an unsupported parameter value")),
                }
            } else {
                ParamValue::Boolean(true)
            };
            params.retain(|(n, _)| *n != name);
            params.push((name, value));
        }
        Ok(params)
    }

    /// An sf-integer: at most 15 digits (RFC 8941 §3.3.1).
    fn integer(&mut self) -> Result<i64, SyntaxError> {
        let negative = self.eat(b'-');
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        let digits = &self.s[start..self.at];
        if digits.is_empty() || digits.len() > 15 {
            return Err(SyntaxError("an integer of 1 to 15 digits expected"));
        }
        if self.peek() == Some(b'.') {
            return Err(SyntaxError("decimals are not supported"));
        }
        let n = digits
            .iter()
            .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        Ok(if negative { -n } else { n })
    }

    /// An sf-string: printable ASCII, `\"` and `\\` escapes only.
    fn string(&mut self) -> Result<String, SyntaxError> {
        if !self.eat(b'"') {
            return Err(SyntaxError("a string expected"));
        }
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err(SyntaxError("an unterminated string")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    match self.peek() {
                        Some(c @ (b'"' | b'\\')) => out.push(char::from(c)),
                        _ => return Err(SyntaxError("a bad escape in a string")),
                    }
                    self.at += 1;
                }
                Some(c @ 0x20..=0x7e) => {
                    out.push(char::from(c));
                    self.at += 1;
                }
                Some(_) => return Err(SyntaxError("a string with a non-printable byte")),
            }
        }
    }

    /// An sf-binary: `:` base64 `:`.
    fn byte_sequence(&mut self) -> Result<Vec<u8>, SyntaxError> {
        self.eat(b':');
        let start = self.at;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
        {
            self.at += 1;
        }
        let text = &self.s[start..self.at];
        if !self.eat(b':') {
            return Err(SyntaxError("an unterminated byte sequence"));
        }
        STANDARD
            .decode(text)
            .map_err(|_| SyntaxError("a byte sequence that is not base64"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params() -> SignatureParams {
        SignatureParams {
            components: super::super::components::PARTNER_COMPONENTS.to_vec(),
            params: vec![
                ("created".into(), ParamValue::Integer(1_618_884_473)),
                ("keyid".into(), ParamValue::String("k\"1\\".into())),
                ("alg".into(), ParamValue::String("ed25519".into())),
            ],
        }
    }

    #[test]
    fn serialized_as_the_rfc_writes_it() {
        assert_eq!(
            params().serialize(),
            r#"("@method" "@authority" "@path" "@query");created=1618884473;keyid="k\"1\\";alg="ed25519""#
        );
        let empty = SignatureParams {
            components: vec![],
            params: vec![("flag".into(), ParamValue::Boolean(true))],
        };
        assert_eq!(empty.serialize(), "();flag");
    }

    #[test]
    fn the_rfc_examples_parse() {
        // RFC 9421 §4.1 (signature input with several members) and B.2.6.
        let field = r#"sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519", other=();created=1"#;
        let p = SignatureParams::parse_member(field, "sig-b26").unwrap();
        assert_eq!(p.components.len(), 6);
        assert_eq!(p.components[0], Component::Field("date".into()));
        assert_eq!(p.integer("created"), Some(1_618_884_473));
        assert_eq!(p.string("keyid"), Some("test-key-ed25519"));
        assert_eq!(p.string("alg"), None);
        assert_eq!(
            p.serialize(),
            field["sig-b26=".len()..field.find(", other").unwrap()]
        );
        let other = SignatureParams::parse_member(field, "other").unwrap();
        assert!(other.components.is_empty());
        let sig = "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:";
        assert_eq!(parse_signature(sig, "sig-b26").unwrap().len(), 64);
    }

    #[test]
    fn malformed_fields_are_errors() {
        for (field, label) in [
            ("", "sig1"),
            ("sig1", "sig1"),
            ("sig1=()", "sig2"),
            ("Sig1=()", "Sig1"),
            ("sig1=(\"@method\"", "sig1"),
            ("sig1=(\"@method\"\"@path\")", "sig1"),
            ("sig1=(\"@method\";req)", "sig1"),
            ("sig1=(\"@target-uri\")", "sig1"),
            ("sig1=(\"@method\" \"@method\")", "sig1"),
            ("sig1=();created=1.5", "sig1"),
            ("sig1=();created=1234567890123456", "sig1"),
            ("sig1=();keyid=abc", "sig1"),
            ("sig1=();keyid=\"a\\b\"", "sig1"),
            ("sig1=(),", "sig1"),
            ("sig1=() sig2=()", "sig1"),
            ("sig1=:abc", "sig1"),
            ("sig1=tok", "sig1"),
        ] {
            assert!(
                SignatureParams::parse_member(field, label).is_err(),
                "{field:?} accepted"
            );
        }
        for field in ["sig1=:!!:", "sig1=()", "sig1=:AA==:;x", "sig1=:A:"] {
            assert!(parse_signature(field, "sig1").is_err(), "{field:?}");
        }
    }

    fn component() -> impl Strategy<Value = Component> {
        prop_oneof![
            Just(Component::Method),
            Just(Component::Authority),
            Just(Component::Path),
            Just(Component::Query),
            "[a-z][a-z0-9-]{0,12}".prop_map(Component::Field),
        ]
    }

    fn value() -> impl Strategy<Value = ParamValue> {
        prop_oneof![
            (-999_999_999_999_999i64..=999_999_999_999_999).prop_map(ParamValue::Integer),
            "[ -~]{0,20}".prop_map(ParamValue::String),
            any::<bool>().prop_map(ParamValue::Boolean),
        ]
    }

    proptest! {
        /// What we write, we read back as it was, whatever the values.
        #[test]
        fn serialize_then_parse_is_identity(
            components in proptest::collection::vec(component(), 0..6),
            params in proptest::collection::vec(("[a-z][a-z0-9_.*-]{0,8}", value()), 0..5),
        ) {
            let mut unique_c: Vec<Component> = Vec::new();
            for c in components { if !unique_c.contains(&c) { unique_c.push(c); } }
            let mut unique_p: Vec<(String, ParamValue)> = Vec::new();
            for (n, v) in params {
                unique_p.retain(|(m, _)| *m != n);
                unique_p.push((n, v));
            }
            let p = SignatureParams { components: unique_c, params: unique_p };
            let field = format!("sig1={}", p.serialize());
            prop_assert_eq!(SignatureParams::parse_member(&field, "sig1").unwrap(), p);
        }

        /// Any bytes: an answer, never a panic.
        #[test]
        fn any_field_is_read_without_panic(field in ".{0,80}", label in "[a-z0-9]{1,4}") {
            let _ = SignatureParams::parse_member(&field, &label);
            let _ = parse_signature(&field, &label);
        }

        /// Any signature bytes survive the `Signature` field.
        #[test]
        fn signatures_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            let field = serialize_signature("sig1", &bytes);
            prop_assert_eq!(parse_signature(&field, "sig1").unwrap(), bytes);
        }
    }
}
