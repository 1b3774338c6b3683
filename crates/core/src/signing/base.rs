//! The signature base (RFC 9421 §2.5): the exact text that is signed, one line per covered
//! component and then the parameters.

use super::components::{ComponentError, RequestParts};
use super::params::SignatureParams;

/// The signature base of `request` for `params`: `"<name>": <value>` for each covered
/// component in order, then `"@signature-params": <params>`, lines joined by `\n`, with no
/// newline at the end.
///
/// # Errors
/// A covered component the request has no usable value for.
pub fn signature_base(
    request: &RequestParts<'_>,
    params: &SignatureParams,
) -> Result<String, ComponentError> {
    let mut base = String::new();
    for component in &params.components {
        base.push('"');
        base.push_str(component.name());
        base.push_str("\": ");
        base.push_str(&request.value(component)?);
        base.push('\n');
    }
    base.push_str("\"@signature-params\": ");
    base.push_str(&params.serialize());
    Ok(base)
}
