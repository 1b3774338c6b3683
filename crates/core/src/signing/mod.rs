//! Signed partner requests: the subset of RFC 9421 (HTTP Message Signatures) the service
//! uses, over Ed25519, and the discovery document that publishes the public keys.
//!
//! Requests the service sends to partners carry
//!
//! ```text
//! Signature-Input: sig1=("@method" "@authority" "@path" "@query");created=1700000000;keyid="ts-signing-1";alg="ed25519"
//! Signature: sig1=:<base64 of the Ed25519 signature of the signature base>:
//! ```
//!
//! so a partner can prove that a request came from this publisher and was not changed: the
//! signature covers the method, the host, the path and the query, and the time it was made.
//! A request that carries the reader's edge ID in `X-TS-EC` covers that field too
//! (`("@method" "@authority" "@path" "@query" "x-ts-ec")`), so the ID cannot be changed or
//! added on the way.
//! The partner fetches the public key by `keyid` from `/.well-known/trusted-server.json`.
//!
//! * [`components`](RequestParts): the covered components and their values;
//! * [`signature_base`]: the text that is signed;
//! * [`SignatureParams`]: `Signature-Input` written and read (the Structured Field syntax is
//!   the `sfv` crate's);
//! * [`sign_request`] / [`verify_request`]: both ends;
//! * [`Keypair`] / [`PublicKey`]: keys from their secrets, and as JWKs;
//! * [`discovery_document`] / [`verify_signature`]: the two public endpoints.
//!
//! Plain header fields can be covered and verified too (the RFC's own examples cover
//! `date`, `content-type` and `content-length`); component parameters (`;sf`, `;req`, …) and
//! the other derived components are not supported and are refused when read.

mod base;
mod components;
mod discovery;
mod keys;
mod message;
mod params;

pub use base::signature_base;
pub use components::{
    Component, ComponentError, RequestParts, PARTNER_COMPONENTS, SIGNED_WHEN_PRESENT,
};
pub use discovery::{
    discovery_document, verify_signature, JsonAnswer, DISCOVERY_CACHE_CONTROL, MAX_VERIFY_BODY,
};
pub use keys::{KeyError, Keypair, PublicKey};
pub use message::{
    partner_params, sign_request, verify_request, Policy, SignatureHeaders, VerifyError, ALG, LABEL,
};
pub use params::{
    parse_signature, serialize_input, serialize_signature, ParamValue, SignatureParams, SyntaxError,
};

#[cfg(test)]
mod tests;
