//! Facts about the two-letter country codes geolocation reports, which the consent rule and
//! the validation of `consent.opt_in_countries` share.
//!
//! Geolocation databases do not only return ISO 3166-1 alpha-2 codes of countries. Some
//! return a continent-level or "unknown" placeholder (`EU`, `AP`, `ZZ`, `XX`), and some use
//! codes ISO 3166 only reserves for a place that has another code (`UK` for `GB`, `EL` for
//! `GR`, `IC` for the Canary Islands, which are `ES`). A placeholder says nothing of where
//! the reader is, so it must count as unknown (the strict rule), never as "elsewhere"; a
//! reserved alias must count as the country it stands for.

/// The ISO 3166-1 code a reported code stands for: itself, or for a code ISO 3166 reserves
/// for a place with another code, that code. `code` is two upper-case ASCII letters.
///
/// | reported | read as | why |
/// | --- | --- | --- |
/// | `UK` | `GB` | the United Kingdom (exceptionally reserved) |
/// | `EL` | `GR` | Greece, as the EU's institutions write it |
/// | `FX` | `FR` | metropolitan France (transitionally reserved) |
/// | `IC` | `ES` | the Canary Islands (exceptionally reserved) |
/// | `EA` | `ES` | Ceuta and Melilla (exceptionally reserved) |
pub fn iso_code(code: &str) -> &str {
    match code {
        "UK" => "GB",
        "EL" => "GR",
        "FX" => "FR",
        "IC" | "EA" => "ES",
        other => other,
    }
}

/// Whether a two-letter code (upper case) names no place: a region larger than a country
/// (`EU` the European Union, `EZ` the eurozone, `UN` the United Nations, `AP` Asia/Pacific in
/// MaxMind's databases) or a code ISO 3166 leaves to users, which databases use for
/// "unknown" or "other" (`AA`, `QM` to `QZ`, `XA` to `XZ`, `ZZ`), except `XK`, which
/// everyone uses for Kosovo. A reader with such a code is at an unknown location.
pub fn is_placeholder(code: &str) -> bool {
    match code.as_bytes() {
        b"EU" | b"EZ" | b"UN" | b"AP" | b"AA" | b"ZZ" => true,
        b"XK" => false,
        [b'X', b'A'..=b'Z'] => true,
        [b'Q', b'M'..=b'Z'] => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_aliases() {
        for code in [
            "EU", "EZ", "UN", "AP", "AA", "ZZ", "XX", "XA", "XZ", "QM", "QZ",
        ] {
            assert!(is_placeholder(code), "{code}");
        }
        for code in ["XK", "DE", "QA", "GB", "UK", "US", "AX", "GF"] {
            assert!(!is_placeholder(code), "{code}");
        }
        assert_eq!(iso_code("UK"), "GB");
        assert_eq!(iso_code("EL"), "GR");
        assert_eq!(iso_code("IC"), "ES");
        assert_eq!(iso_code("DE"), "DE");
        // No alias is a placeholder, and no alias leads to one.
        for code in ["UK", "EL", "FX", "IC", "EA"] {
            assert!(!is_placeholder(code) && !is_placeholder(iso_code(code)));
        }
    }
}
