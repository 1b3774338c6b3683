//! The IAB Global Privacy Platform string (`__gpp` cookie): a header, then one section per id
//! the header lists, all joined by `~`.
//!
//! The header is base64url bits: type (6 bits, always 3), version (6 bits, 1) and the section
//! ids as a Fibonacci-coded range list (a 12-bit count, then per entry a range flag and
//! Fibonacci-coded offsets from the previous id). Sections read: EU TCF v2 (2, through
//! [`TcString`]), US Privacy (6, through [`UsPrivacy`]), and the US national (7) and state
//! (8 to 27) sections (through [`UsSection`]). Any other id (Canada's TCF, 5, or a section
//! published after this code) is kept as [`SectionBody::Unsupported`].
//!
//! A header that does not decode, a section count that does not match the `~`-separated parts,
//! an empty or repeated section, or a text longer than [`GPP_MAX_LEN`] makes the whole string
//! no valid signal. A listed section whose own text does not decode is kept as
//! [`SectionBody::Malformed`], so a decision can treat it as strictly as it chooses.

use super::bits::BitReader;
use super::tcf::TcString;
pub use super::us::SECTION_US_NATIONAL;
use super::us::{is_us_section, UsSection};
use super::usp::UsPrivacy;

/// The longest `__gpp` value read, in bytes (a browser keeps at most about 4 KiB per cookie).
/// A longer value is no valid signal.
pub const GPP_MAX_LEN: usize = 4096;

/// The EU TCF v2 section id.
pub const SECTION_TCF_EU: u16 = 2;
/// The US Privacy section id.
pub const SECTION_USP: u16 = 6;

/// What one GPP section holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionBody {
    /// Section 2: an EU TCF v2 string.
    TcfEu(Box<TcString>),
    /// Section 6: a US Privacy string.
    UsPrivacy(UsPrivacy),
    /// Sections 7 to 27: the US national or a state section.
    Us(UsSection),
    /// A section id this code does not read.
    Unsupported,
    /// A section this code reads whose text does not decode.
    Malformed,
}

/// One section of a GPP string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GppSection {
    /// The section id from the header.
    pub id: u16,
    /// What it holds.
    pub body: SectionBody,
}

/// A decoded GPP string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpp {
    /// The header's version (1).
    pub version: u8,
    /// The sections, in string order (the order of the header's ids).
    pub sections: Vec<GppSection>,
}

impl Gpp {
    /// Decodes a GPP string; `None` when it is no valid GPP string (see the module docs).
    pub fn decode(text: &str) -> Option<Self> {
        if text.len() > GPP_MAX_LEN {
            return None;
        }
        let mut parts = text.split('~');
        let mut header = BitReader::new(parts.next()?.as_bytes())?;
        let parts: Vec<&str> = parts.collect();
        if header.u8(6)? != 3 {
            return None;
        }
        let version = header.u8(6)?;
        let ids = section_ids(&mut header, parts.len())?;
        if ids.len() != parts.len() {
            return None;
        }
        let mut sections = Vec::with_capacity(ids.len());
        for (i, (&id, part)) in ids.iter().zip(&parts).enumerate() {
            if part.is_empty() || ids[..i].contains(&id) {
                return None;
            }
            sections.push(GppSection {
                id,
                body: section_body(id, part),
            });
        }
        Some(Self { version, sections })
    }

    /// The section with this id, when listed.
    pub fn section(&self, id: u16) -> Option<&SectionBody> {
        self.sections.iter().find(|s| s.id == id).map(|s| &s.body)
    }

    /// The section ids, in string order.
    pub fn section_ids(&self) -> impl Iterator<Item = u16> + '_ {
        self.sections.iter().map(|s| s.id)
    }

    /// The decoded US sections (national and states), in string order.
    pub fn us_sections(&self) -> impl Iterator<Item = &UsSection> {
        self.sections.iter().filter_map(|s| match &s.body {
            SectionBody::Us(us) => Some(us),
            _ => None,
        })
    }

    /// The EU TCF section, when listed and valid.
    pub fn tcf_eu(&self) -> Option<&TcString> {
        match self.section(SECTION_TCF_EU)? {
            SectionBody::TcfEu(tc) => Some(tc),
            _ => None,
        }
    }

    /// The US Privacy section, when listed and valid.
    pub fn us_privacy(&self) -> Option<&UsPrivacy> {
        match self.section(SECTION_USP)? {
            SectionBody::UsPrivacy(usp) => Some(usp),
            _ => None,
        }
    }
}

fn section_body(id: u16, text: &str) -> SectionBody {
    let body = match id {
        SECTION_TCF_EU => TcString::decode(text).map(|tc| SectionBody::TcfEu(Box::new(tc))),
        SECTION_USP => UsPrivacy::decode(text).map(SectionBody::UsPrivacy),
        _ if is_us_section(id) => UsSection::decode(id, text).map(SectionBody::Us),
        _ => Some(SectionBody::Unsupported),
    };
    body.unwrap_or(SectionBody::Malformed)
}

/// The header's Fibonacci range list of section ids; `None` when malformed or when it names
/// more than `most` ids (there cannot be more sections than `~`-separated parts).
fn section_ids(r: &mut BitReader<'_>, most: usize) -> Option<Vec<u16>> {
    let count = r.u16(12)?;
    let mut ids = Vec::new();
    let mut last = 0u64;
    for _ in 0..count {
        let is_range = r.bool()?;
        let start = last.checked_add(r.fibonacci()?)?;
        let end = if is_range {
            start.checked_add(r.fibonacci()?)?
        } else {
            start
        };
        last = end;
        let span = (end - start).checked_add(1)?;
        if span > (most - ids.len()) as u64 {
            return None;
        }
        for id in start..=end {
            ids.push(u16::try_from(id).ok()?);
        }
    }
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_only_strings_and_counts() {
        // `DBAA`: type 3, version 1, no sections.
        let g = Gpp::decode("DBAA").unwrap();
        assert_eq!(g.version, 1);
        assert!(g.sections.is_empty());
        assert!(
            Gpp::decode("DBAA~1YNN").is_none(),
            "a section the header does not list"
        );
        assert!(Gpp::decode("").is_none());
        assert!(Gpp::decode("CBAA").is_none(), "type 2 is not a GPP header");
        assert!(Gpp::decode(&"A".repeat(GPP_MAX_LEN + 1)).is_none());
    }
}
