//! Signing a request and checking a signed one (RFC 9421 §3.1, §3.2), with the `ed25519`
//! algorithm.

use std::fmt;

use super::base::signature_base;
use super::components::{
    Component, ComponentError, RequestParts, PARTNER_COMPONENTS, SIGNED_WHEN_PRESENT,
};
use super::keys::{Keypair, PublicKey};
use super::params::{
    parse_signature, serialize_input, serialize_signature, ParamValue, SignatureParams, SyntaxError,
};

/// The label of our signature in both fields.
pub const LABEL: &str = "sig1";
/// The `alg` parameter value (RFC 9421 §6.2.2).
pub const ALG: &str = "ed25519";

/// The two header fields that carry a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHeaders {
    /// The `Signature-Input` value: `sig1=(…);created=…;keyid="…";alg="ed25519"`.
    pub signature_input: String,
    /// The `Signature` value: `sig1=:BASE64:`.
    pub signature: String,
}

/// The parameters the service signs `request` with: its partner components
/// ([`RequestParts::partner_components`]), `created`, `keyid` and `alg`, in that order.
pub fn partner_params(request: &RequestParts<'_>, created: u64, kid: &str) -> SignatureParams {
    SignatureParams {
        components: request.partner_components(),
        params: vec![
            // Seconds since 1970 fit 15 digits until the year 33658.
            (
                "created".into(),
                ParamValue::Integer(i64::try_from(created).unwrap_or(i64::MAX)),
            ),
            ("keyid".into(), ParamValue::String(kid.to_owned())),
            ("alg".into(), ParamValue::String(ALG.to_owned())),
        ],
    }
}

/// Signs `request`, covering `@method`, `@authority`, `@path`, `@query` and, when the request
/// carries it, `x-ts-ec` ([`SIGNED_WHEN_PRESENT`]), created at `created` (seconds since 1970),
/// with `key`. The caller passes the request's `X-TS-EC` in `fields`.
///
/// # Errors
/// A request part that cannot go in a signature base (a control character in the method).
pub fn sign_request(
    request: &RequestParts<'_>,
    key: &Keypair,
    created: u64,
) -> Result<SignatureHeaders, ComponentError> {
    let params = partner_params(request, created, key.kid());
    let base = signature_base(request, &params)?;
    let signature = key.sign(base.as_bytes());
    Ok(SignatureHeaders {
        signature_input: serialize_input(LABEL, &params),
        signature: serialize_signature(LABEL, &signature),
    })
}

/// Why a signed request was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// `Signature-Input` or `Signature` is not readable, or lacks the label.
    Syntax(SyntaxError),
    /// No `keyid`, or one that is not among the keys.
    UnknownKey(Option<String>),
    /// An `alg` other than `ed25519`.
    Algorithm(String),
    /// A required component (or a field the request carries that must then be covered)
    /// that the signature does not cover.
    NotCovered(Component),
    /// No `created`, or one outside the accepted window.
    Created(&'static str),
    /// A covered component without a usable value in the request.
    Component(ComponentError),
    /// The signature does not match the rebuilt base.
    Mismatch,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Syntax(e) => write!(f, "unreadable signature fields: {e}"),
            VerifyError::UnknownKey(None) => f.write_str("no keyid"),
            VerifyError::UnknownKey(Some(kid)) => write!(f, "unknown keyid {kid:?}"),
            VerifyError::Algorithm(alg) => write!(f, "unsupported alg {alg:?}"),
            VerifyError::NotCovered(c) => write!(f, "`{c}` is not covered"),
            VerifyError::Created(why) => write!(f, "created: {why}"),
            VerifyError::Component(e) => e.fmt(f),
            VerifyError::Mismatch => f.write_str("the signature does not match the request"),
        }
    }
}

/// What a verifier requires beyond a valid signature.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    /// Components the signature must cover.
    pub required: &'a [Component],
    /// Header fields the signature must cover when the request carries them (lowercase).
    pub required_when_present: &'a [&'a str],
    /// The label to check.
    pub label: &'a str,
    /// `(now, max_age)`: `created` must be within `max_age` seconds before `now` (and not
    /// more than `max_age` after it, for clock skew). `None` skips the check.
    pub freshness: Option<(u64, u64)>,
}

impl Policy<'static> {
    /// Our partner signatures: the four components, `x-ts-ec` when the request has it,
    /// label `sig1`, no clock check.
    pub const PARTNER: Policy<'static> = Policy {
        required: &PARTNER_COMPONENTS,
        required_when_present: &SIGNED_WHEN_PRESENT,
        label: LABEL,
        freshness: None,
    };
}

/// Checks the signature `policy.label` of `request` against `keys` (found by `keyid`).
/// Returns the key ID that signed.
///
/// # Errors
/// The first reason the request is not accepted.
pub fn verify_request(
    request: &RequestParts<'_>,
    signature_input: &str,
    signature: &str,
    keys: &[PublicKey],
    policy: &Policy<'_>,
) -> Result<String, VerifyError> {
    let params = SignatureParams::parse_member(signature_input, policy.label)
        .map_err(VerifyError::Syntax)?;
    let bytes = parse_signature(signature, policy.label).map_err(VerifyError::Syntax)?;
    let kid = params.string("keyid");
    let key = (keys.iter())
        .find(|k| Some(k.kid()) == kid)
        .ok_or_else(|| VerifyError::UnknownKey(kid.map(str::to_owned)))?;
    match params.string("alg") {
        None | Some(ALG) => {}
        Some(other) => return Err(VerifyError::Algorithm(other.to_owned())),
    }
    if let Some(missing) = (policy.required.iter()).find(|c| !params.components.contains(c)) {
        return Err(VerifyError::NotCovered(missing.clone()));
    }
    let uncovered = (policy.required_when_present.iter())
        .map(|name| Component::Field((*name).to_owned()))
        .find(|c| request.has_field(c.name()) && !params.components.contains(c));
    if let Some(missing) = uncovered {
        return Err(VerifyError::NotCovered(missing));
    }
    if let Some((now, max_age)) = policy.freshness {
        let created = params
            .integer("created")
            .ok_or(VerifyError::Created("missing"))?;
        let created = u64::try_from(created).map_err(|_| VerifyError::Created("negative"))?;
        if created.saturating_add(max_age) < now {
            return Err(VerifyError::Created("too old"));
        }
        if created > now.saturating_add(max_age) {
            return Err(VerifyError::Created("in the future"));
        }
    }
    let base = signature_base(request, &params).map_err(VerifyError::Component)?;
    if key.verify(base.as_bytes(), &bytes) {
        Ok(key.kid().to_owned())
    } else {
        Err(VerifyError::Mismatch)
    }
}
