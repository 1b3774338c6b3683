//! What a creative's rewriting reports: a leaf, so the rewriters that fill it and the stage
//! that returns it both import it.

/// What the rewriting of one creative did, for the proxy's log line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreativeReport {
    /// URLs replaced by the signer's first-party URL.
    pub rewritten: u64,
    /// Absolute URLs the signer refused (left as written).
    pub not_allowed: u64,
    /// Values left as written because they could not be read safely (a character reference
    /// not decoded here, invalid UTF-8, a NUL, non-ASCII in a document that is not UTF-8).
    pub unreadable: u64,
    /// Set when part of the creative passed through unrewritten to keep memory bounded (the
    /// HTML parser gave up on a token over 1 MiB, a CSS URL token was over 16 KiB, or an
    /// inline script over 256 KiB), and why. The output is still the creative, complete.
    pub degraded: Option<String>,
}
