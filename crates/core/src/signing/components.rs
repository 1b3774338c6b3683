//! What a signature covers (RFC 9421 §2): the request's derived components and plain header
//! fields, and how each becomes one line of the signature base.

use std::fmt;

/// One covered component, as named in `Signature-Input`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Component {
    /// `"@method"`: the request method, as sent (case-sensitive).
    Method,
    /// `"@authority"`: the target's `host[:port]`, lowercase, default port left out.
    Authority,
    /// `"@path"`: the target's absolute path, as sent (`/` when empty).
    Path,
    /// `"@query"`: `?` and the query as sent, or `?` alone when there is none.
    Query,
    /// A header field, by its lowercase name: its values, trimmed, joined with `, `.
    Field(String),
}

/// The components every partner request signature covers, in this order.
pub const PARTNER_COMPONENTS: [Component; 4] = [
    Component::Method,
    Component::Authority,
    Component::Path,
    Component::Query,
];

/// Header fields a partner signature covers whenever the request carries them, after
/// [`PARTNER_COMPONENTS`]: `X-TS-EC`, the reader's edge ID. A partner keys what it knows
/// about a reader on it, so a request whose ID was changed on the way (or added to a signed
/// request) must not verify.
pub const SIGNED_WHEN_PRESENT: [&str; 1] = [crate::publisher::identity::ORIGIN_HEADER];

impl Component {
    /// The component's name as it is quoted in `Signature-Input` and the base (`@method`,
    /// `date`).
    pub fn name(&self) -> &str {
        match self {
            Component::Method => "@method",
            Component::Authority => "@authority",
            Component::Path => "@path",
            Component::Query => "@query",
            Component::Field(name) => name,
        }
    }

    /// Reads a component name. `None` for a derived component this subset does not support
    /// (`@target-uri`, `@status`, …) or a field name that is not a lowercase HTTP token.
    pub fn from_name(name: &str) -> Option<Component> {
        Some(match name {
            "@method" => Component::Method,
            "@authority" => Component::Authority,
            "@path" => Component::Path,
            "@query" => Component::Query,
            field if is_field_name(field) => Component::Field(field.to_owned()),
            _ => return None,
        })
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A lowercase HTTP token (RFC 9110 `tchar`s without upper case letters).
fn is_field_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b)
        })
}

/// The parts of a request a signature can cover, as they go on the wire.
///
/// The caller takes them from the request it sends (or received): `authority` is the `Host`
/// header (HTTP/1.1) or `:authority`, `path` and `query` are the request target's, still
/// percent-encoded. Nothing here decodes, so signer and verifier see the same bytes.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'a> {
    /// The method (`GET`).
    pub method: &'a str,
    /// `http` or `https`: which port is the default one, left out of `@authority`.
    pub scheme: &'a str,
    /// `host[:port]`.
    pub authority: &'a str,
    /// The path, without the query (`/bid`); empty is read as `/`.
    pub path: &'a str,
    /// The query without its `?`, or `None`.
    pub query: Option<&'a str>,
    /// Header fields `(name, value)`, names in any case, for `Component::Field`.
    pub fields: &'a [(&'a str, &'a str)],
}

/// Why a component has no value in a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComponentError {
    /// A covered header field the request does not have.
    MissingField(String),
    /// A value with a line break, a control character or a non-ASCII byte: it could not be
    /// put on one line of the base unambiguously.
    InvalidValue(String),
}

impl fmt::Display for ComponentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComponentError::MissingField(name) => write!(f, "the request has no `{name}` field"),
            ComponentError::InvalidValue(name) => {
                write!(f, "the value of `{name}` cannot go in a signature base")
            }
        }
    }
}

impl RequestParts<'_> {
    /// Whether the request carries the header field `name` (any case).
    pub fn has_field(&self, name: &str) -> bool {
        self.fields
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// What a partner signature of this request covers: [`PARTNER_COMPONENTS`], then each
    /// of [`SIGNED_WHEN_PRESENT`] the request carries.
    pub fn partner_components(&self) -> Vec<Component> {
        let mut components = PARTNER_COMPONENTS.to_vec();
        components.extend(
            (SIGNED_WHEN_PRESENT.iter())
                .filter(|name| self.has_field(name))
                .map(|name| Component::Field((*name).to_owned())),
        );
        components
    }

    /// The value of `component` in this request (RFC 9421 §2.1, §2.2).
    ///
    /// # Errors
    /// A covered field that is missing, or a value that cannot go on one line of the base.
    pub fn value(&self, component: &Component) -> Result<String, ComponentError> {
        let value = match component {
            Component::Method => self.method.to_owned(),
            Component::Authority => normalise_authority(self.scheme, self.authority),
            Component::Path if self.path.is_empty() => "/".to_owned(),
            Component::Path => self.path.to_owned(),
            Component::Query => format!("?{}", self.query.unwrap_or("")),
            Component::Field(name) => {
                let values: Vec<&str> = (self.fields.iter())
                    .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.trim_matches([' ', '\t']))
                    .collect();
                if values.is_empty() {
                    return Err(ComponentError::MissingField(name.clone()));
                }
                values.join(", ")
            }
        };
        if value
            .bytes()
            .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
        {
            Ok(value)
        } else {
            Err(ComponentError::InvalidValue(component.name().to_owned()))
        }
    }
}

/// `host[:port]` lowercased, without the scheme's default port (RFC 9110 §4.2.3).
fn normalise_authority(scheme: &str, authority: &str) -> String {
    let lower = authority.to_ascii_lowercase();
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => return lower,
    };
    match lower.strip_suffix(default) {
        // `[::1]:80` and `host:80`, but not the `80` of an IPv6 literal without a port.
        Some(host) if !host.is_empty() && (!host.contains(':') || host.ends_with(']')) => {
            host.to_owned()
        }
        _ => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(authority: &'a str, fields: &'a [(&'a str, &'a str)]) -> RequestParts<'a> {
        RequestParts {
            method: "GET",
            scheme: "https",
            authority,
            path: "",
            query: None,
            fields,
        }
    }

    /// The values RFC 9421 §2.2 gives for its examples.
    #[test]
    fn derived_values_as_the_rfc_defines_them() {
        let p = RequestParts {
            method: "POST",
            scheme: "http",
            authority: "www.example.com",
            path: "/path",
            query: Some("param=value&foo=bar&baz=bat%2Dman"),
            fields: &[],
        };
        assert_eq!(p.value(&Component::Method).unwrap(), "POST");
        assert_eq!(p.value(&Component::Authority).unwrap(), "www.example.com");
        assert_eq!(p.value(&Component::Path).unwrap(), "/path");
        assert_eq!(
            p.value(&Component::Query).unwrap(),
            "?param=value&foo=bar&baz=bat%2Dman"
        );
        // "the leading ? character alone" when there is no query, and `/` for no path.
        let bare = parts("x", &[]);
        assert_eq!(bare.value(&Component::Query).unwrap(), "?");
        assert_eq!(bare.value(&Component::Path).unwrap(), "/");
    }

    #[test]
    fn authority_is_lowercased_without_the_default_port() {
        for (scheme, given, want) in [
            ("https", "Example.COM:443", "example.com"),
            ("https", "example.com:80", "example.com:80"),
            ("http", "example.com:80", "example.com"),
            ("http", "example.com:8080", "example.com:8080"),
            ("https", "[2001:DB8::1]:443", "[2001:db8::1]"),
            ("http", "[2001:db8::80]", "[2001:db8::80]"),
            ("http", ":80", ":80"),
        ] {
            let p = RequestParts {
                scheme,
                ..parts(given, &[])
            };
            assert_eq!(p.value(&Component::Authority).unwrap(), want, "{given}");
        }
    }

    #[test]
    fn fields_are_trimmed_and_joined_and_must_be_there() {
        let fields = [
            ("Cache-Control", " max-age=60 "),
            ("x-other", "1"),
            ("cache-control", "must-revalidate"),
        ];
        let p = parts("x", &fields);
        let cc = Component::from_name("cache-control").unwrap();
        assert_eq!(p.value(&cc).unwrap(), "max-age=60, must-revalidate");
        let missing = Component::Field("date".into());
        assert_eq!(
            p.value(&missing),
            Err(ComponentError::MissingField("date".into()))
        );
    }

    #[test]
    fn a_value_that_could_forge_a_line_is_refused() {
        for bad in ["a\nb", "a\rb", "caf\u{e9}", "\u{7f}"] {
            let fields = [("x-a", bad)];
            let p = RequestParts {
                method: bad,
                ..parts("x", &fields)
            };
            assert!(p.value(&Component::Method).is_err(), "{bad:?}");
            assert!(p.value(&Component::Field("x-a".into())).is_err());
        }
    }

    #[test]
    fn names_round_trip_and_unsupported_ones_are_refused() {
        for c in PARTNER_COMPONENTS {
            assert_eq!(Component::from_name(c.name()), Some(c.clone()));
        }
        for bad in ["@target-uri", "@status", "Date", "", "a b", "@query-param"] {
            assert_eq!(Component::from_name(bad), None, "{bad}");
        }
    }
}
