//! `Signature-Input` and `Signature` (RFC 9421 §4): what a signature puts in a Structured
//! Field Dictionary (RFC 8941). The syntax (keys, inner lists, parameters, strings, byte
//! sequences, their escapes and limits) is `sfv`'s; this module says which of its shapes a
//! signature may take.
//!
//! Written: `sig1=("@method" "@authority");created=1;keyid="k";alg="ed25519"` and
//! `sig1=:BASE64:`. Read: any dictionary whose members are inner lists of strings naming
//! supported components (without item parameters) or byte sequences (without parameters),
//! with integer, string or boolean parameters. Anything else is an error, never a guess: a
//! verifier must rebuild exactly what was signed.
//!
//! Where RFC 8941 says how to read a field leniently, `sfv` does and so do we: a byte
//! sequence without its `=` padding is read (§4.2.7), a repeated parameter keeps its first
//! place with its last value (§4.2.3.2), and a repeated dictionary key replaces the earlier
//! member before it is looked at (§4.2.2).

use std::fmt;

use sfv::{BareItem, Dictionary, KeyRef, ListEntry, Parameters, Parser, RefBareItem, Version};

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
pub struct SyntaxError(String);

impl SyntaxError {
    fn new(why: &str) -> SyntaxError {
        SyntaxError(why.to_owned())
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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
    ///
    /// What is read always serializes whole, and so does what the service signs (component
    /// names are HTTP tokens, key IDs are checked by the settings, `created` has 15 digits
    /// until the year 33658). A name or value a structured field cannot carry (an integer
    /// beyond 15 digits, a string outside printable ASCII, a parameter name that is not a
    /// lowercase key) is left out: the header and the base still agree, and a partner sees a
    /// signature without it rather than a field it cannot read.
    pub fn serialize(&self) -> String {
        let mut list = sfv::ListSerializer::new();
        self.write(list.inner_list());
        list.finish().unwrap_or_default()
    }

    /// Writes the components and the parameters into `list`.
    fn write(&self, mut list: sfv::InnerListSerializer<'_>) {
        for component in &self.components {
            if let Ok(name) = sfv::StringRef::from_str(component.name()) {
                let _ = list.bare_item(name);
            } else {
                debug_assert!(false, "component {component} cannot be serialized");
            }
        }
        let mut params = list.finish();
        for (name, value) in &self.params {
            let name = KeyRef::from_str(name).ok();
            let value = match value {
                ParamValue::Integer(i) => sfv::Integer::try_from(*i).ok().map(RefBareItem::from),
                ParamValue::String(s) => sfv::StringRef::from_str(s).ok().map(RefBareItem::from),
                ParamValue::Boolean(b) => Some(RefBareItem::from(*b)),
            };
            match (name, value) {
                (Some(name), Some(value)) => params = params.parameter(name, value),
                _ => debug_assert!(false, "a parameter that cannot be serialized"),
            }
        }
    }

    /// Reads the member `label` of a `Signature-Input` field value.
    ///
    /// # Errors
    /// A field that is not a valid dictionary of the supported subset, or has no `label`.
    pub fn parse_member(field: &str, label: &str) -> Result<SignatureParams, SyntaxError> {
        match member(field, label)? {
            Member::List(params) => Ok(params),
            Member::Bytes(_) => Err(SyntaxError::new("the member is not an inner list")),
        }
    }
}

/// `label=(…);…`, the `Signature-Input` field value for one signature (see
/// [`SignatureParams::serialize`] for what cannot be written).
pub fn serialize_input(label: &str, params: &SignatureParams) -> String {
    let mut dictionary = sfv::DictSerializer::new();
    match KeyRef::from_str(label) {
        Ok(label) => params.write(dictionary.inner_list(label)),
        Err(_) => debug_assert!(false, "label {label:?} is not a key"),
    }
    dictionary.finish().unwrap_or_default()
}

/// `label=:BASE64:`, the `Signature` field value for one signature.
pub fn serialize_signature(label: &str, signature: &[u8]) -> String {
    let mut dictionary = sfv::DictSerializer::new();
    match KeyRef::from_str(label) {
        Ok(label) => {
            let _ = dictionary.bare_item(label, signature);
        }
        Err(_) => debug_assert!(false, "label {label:?} is not a key"),
    }
    dictionary.finish().unwrap_or_default()
}

/// The bytes of member `label` of a `Signature` field value.
///
/// # Errors
/// A field that is not a valid dictionary of the supported subset, or has no `label`.
pub fn parse_signature(field: &str, label: &str) -> Result<Vec<u8>, SyntaxError> {
    match member(field, label)? {
        Member::Bytes(bytes) => Ok(bytes),
        Member::List(_) => Err(SyntaxError::new("the member is not a byte sequence")),
    }
}

/// A dictionary member value a signature field may have.
enum Member {
    List(SignatureParams),
    Bytes(Vec<u8>),
}

/// Reads the whole dictionary `field` and returns its member `label`. Every member must be
/// of the subset, not only `label`'s: a field with one member we cannot read is not one we
/// read part of. A later member with the same key replaces an earlier one (RFC 8941).
fn member(field: &str, label: &str) -> Result<Member, SyntaxError> {
    // The whitespace HTTP allows around a field value (RFC 9110 §5.5); sfv reads the value.
    let value = field.trim_matches([' ', '\t']);
    let dictionary: Dictionary = Parser::new(value)
        .with_version(Version::Rfc8941)
        .parse()
        .map_err(|e| SyntaxError(format!("not a structured field dictionary: {e}")))?;
    let mut found = None;
    for (key, entry) in &dictionary {
        check_key(key)?;
        let member = read_member(entry)?;
        if key.as_str() == label {
            found = Some(member);
        }
    }
    found.ok_or_else(|| SyntaxError::new("no member with the signature's label"))
}

/// One member: an inner list of components with parameters, or a byte sequence alone.
fn read_member(entry: &ListEntry) -> Result<Member, SyntaxError> {
    let item = match entry {
        ListEntry::InnerList(list) => {
            let mut components = Vec::new();
            for item in &list.items {
                if !item.params.is_empty() {
                    return Err(SyntaxError::new("component parameters are not supported"));
                }
                let name = (item.bare_item.as_string())
                    .ok_or_else(|| SyntaxError::new("a component name must be a string"))?;
                let component = Component::from_name(name.as_str())
                    .ok_or_else(|| SyntaxError::new("an unsupported component"))?;
                if components.contains(&component) {
                    return Err(SyntaxError::new("a component covered twice"));
                }
                components.push(component);
            }
            let params = read_params(&list.params)?;
            return Ok(Member::List(SignatureParams { components, params }));
        }
        ListEntry::Item(item) => item,
    };
    match &item.bare_item {
        BareItem::ByteSequence(bytes) if item.params.is_empty() => Ok(Member::Bytes(bytes.clone())),
        BareItem::ByteSequence(_) => Err(SyntaxError::new("parameters on a signature value")),
        _ => Err(SyntaxError::new(
            "a member that is neither a list nor bytes",
        )),
    }
}

/// A signature's parameters: integers, strings and booleans.
fn read_params(params: &Parameters) -> Result<Vec<(String, ParamValue)>, SyntaxError> {
    (params.iter())
        .map(|(name, value)| {
            check_key(name)?;
            let value = match value {
                BareItem::Integer(i) => ParamValue::Integer(i64::from(*i)),
                BareItem::String(s) => ParamValue::String(s.as_str().to_owned()),
                BareItem::Boolean(b) => ParamValue::Boolean(*b),
                _ => return Err(SyntaxError::new("an unsupported parameter value")),
            };
            Ok((name.as_str().to_owned(), value))
        })
        .collect()
}

/// A key no longer than [`MAX_KEY`].
fn check_key(key: &KeyRef) -> Result<(), SyntaxError> {
    if key.as_str().len() > MAX_KEY {
        return Err(SyntaxError::new("a key is too long"));
    }
    Ok(())
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

    /// The bytes the hand-written serializer (before `sfv`) wrote for these values, kept so
    /// a change of serializer cannot change what partners receive or what is signed.
    #[test]
    fn serialized_bytes_are_those_partners_already_receive() {
        let string = |s: &str| ParamValue::String(s.into());
        let field = |s: &str| Component::Field(s.into());
        for (p, want) in [
            (
                SignatureParams {
                    components: vec![
                        Component::Method,
                        Component::Authority,
                        Component::Path,
                        Component::Query,
                        field("x-ts-ec"),
                    ],
                    params: vec![
                        ("created".into(), ParamValue::Integer(1_700_000_000)),
                        ("keyid".into(), string("ts-signing-1")),
                        ("alg".into(), string("ed25519")),
                    ],
                },
                r#"("@method" "@authority" "@path" "@query" "x-ts-ec");created=1700000000;keyid="ts-signing-1";alg="ed25519""#,
            ),
            (
                SignatureParams {
                    components: vec![field("content-digest"), field("!#$%&'*+-.^_`|~0")],
                    params: vec![
                        ("expires".into(), ParamValue::Integer(-999_999_999_999_999)),
                        ("nonce".into(), string(" a\"b\\c ~")),
                        ("*t".into(), ParamValue::Boolean(true)),
                        ("f-1.x_*".into(), ParamValue::Boolean(false)),
                    ],
                },
                r#"("content-digest" "!#$%&'*+-.^_`|~0");expires=-999999999999999;nonce=" a\"b\\c ~";*t;f-1.x_*=?0"#,
            ),
            (
                SignatureParams {
                    components: vec![],
                    params: vec![],
                },
                "()",
            ),
            (
                SignatureParams {
                    components: vec![Component::Query],
                    params: vec![
                        ("created".into(), ParamValue::Integer(0)),
                        ("tag".into(), string("")),
                    ],
                },
                r#"("@query");created=0;tag="""#,
            ),
        ] {
            assert_eq!(p.serialize(), want);
            assert_eq!(serialize_input("sig1", &p), format!("sig1={want}"));
        }
        let counting: Vec<u8> = (0..64).collect();
        for (bytes, want) in [
            (&b""[..], "sig1=::"),
            (&[0], "sig1=:AA==:"),
            (&[0xff, 0xfe], "sig1=://4=:"),
            (&[1, 2, 3, 4, 5], "sig1=:AQIDBAU=:"),
            (&counting, "sig1=:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==:"),
        ] {
            assert_eq!(serialize_signature("sig1", bytes), want);
        }
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
