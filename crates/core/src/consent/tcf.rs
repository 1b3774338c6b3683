//! The IAB TCF v2 Transparency and Consent string (TCF v2.2 and v2.3: the `euconsent-v2`
//! cookie, and GPP's section 2).
//!
//! A TC string is base64url segments joined by `.`: the core segment first, then at most one
//! of each optional segment, each starting with a 3-bit segment type: DisclosedVendors (1,
//! mandatory for global strings since TCF 2.3), AllowedVendors (2, deprecated but still read)
//! and the publisher TC segment (3). Everything the core segment carries is read, publisher
//! restrictions included.
//!
//! Strictness: only encoding version 2 is accepted; a segment that ends before its last field,
//! a character outside base64url, an unknown or repeated segment type, or a vendor range whose
//! end is before its start makes the whole string "no valid signal". Bits after the last field
//! of a segment are padding and ignored.

use super::bits::BitReader;

/// The longest `euconsent-v2` value read, in bytes: a browser keeps at most about 4 KiB per
/// cookie, so anything longer did not come from a CMP. A longer value is no valid signal.
pub const TCF_MAX_LEN: usize = 4096;

/// A 1-based set of up to 64 flags (purposes, special features, custom purposes): item `n`
/// is bit `n - 1`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags(pub u64);

impl Flags {
    /// Whether item `n` (1-based) is set.
    pub fn has(self, n: u8) -> bool {
        (1..=64).contains(&n) && self.0 & (1 << (n - 1)) != 0
    }

    /// The set items, ascending.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        (1..=64u8).filter(move |&n| self.has(n))
    }
}

/// A set of TCF vendor ids (1..=65535), as a bit set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VendorSet {
    /// The `MaxVendorId` field as written in the string.
    pub max_vendor_id: u16,
    /// Whether the string used the range encoding (else the bitfield).
    pub range_encoded: bool,
    words: Vec<u64>,
}

impl VendorSet {
    /// Whether `vendor` is in the set.
    pub fn contains(&self, vendor: u16) -> bool {
        let i = usize::from(vendor);
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// The vendor ids in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            (0..64u32)
                .filter(move |b| w & (1 << b) != 0)
                .filter_map(move |b| u16::try_from(wi * 64 + b as usize).ok())
        })
    }

    /// How many vendors are in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Adds `from..=to` word by word (a range may cover all 65535 ids).
    fn insert_range(&mut self, from: u16, to: u16) {
        let (from, to) = (usize::from(from), usize::from(to));
        if self.words.len() <= to / 64 {
            self.words.resize(to / 64 + 1, 0);
        }
        for wi in from / 64..=to / 64 {
            let lo = if wi == from / 64 { from % 64 } else { 0 };
            let hi = if wi == to / 64 { to % 64 } else { 63 };
            let width = hi - lo + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                ((1u64 << width) - 1) << lo
            };
            self.words[wi] |= mask;
        }
    }
}

/// What a publisher restriction requires of the vendors it names for its purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestrictionType {
    /// 0: the purpose is not allowed for these vendors.
    NotAllowed,
    /// 1: the vendors need consent (not legitimate interest) for the purpose.
    RequireConsent,
    /// 2: the vendors need legitimate interest (not consent) for the purpose.
    RequireLegitimateInterest,
    /// 3: undefined by the policy; a decision should treat it as the strictest.
    Undefined,
}

impl RestrictionType {
    fn from_bits(bits: u8) -> Self {
        match bits {
            0 => Self::NotAllowed,
            1 => Self::RequireConsent,
            2 => Self::RequireLegitimateInterest,
            _ => Self::Undefined,
        }
    }

    /// The 2-bit value as written in the string.
    pub fn code(self) -> u8 {
        match self {
            Self::NotAllowed => 0,
            Self::RequireConsent => 1,
            Self::RequireLegitimateInterest => 2,
            Self::Undefined => 3,
        }
    }
}

/// One publisher restriction: a purpose, a restriction type and the vendors it applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherRestriction {
    /// The purpose restricted (6 bits).
    pub purpose_id: u8,
    /// What the restriction requires.
    pub restriction_type: RestrictionType,
    /// The vendor ranges, inclusive, as written.
    pub vendors: Vec<(u16, u16)>,
}

impl PublisherRestriction {
    /// Whether the restriction names `vendor`.
    pub fn applies_to(&self, vendor: u16) -> bool {
        self.vendors
            .iter()
            .any(|&(a, b)| a <= vendor && vendor <= b)
    }
}

/// The core segment of a TC string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcCore {
    /// Encoding version (always 2 here).
    pub version: u8,
    /// When the string was created, in deciseconds since the Unix epoch.
    pub created_ds: u64,
    /// When the string was last updated, in deciseconds since the Unix epoch.
    pub last_updated_ds: u64,
    /// The CMP's id.
    pub cmp_id: u16,
    /// The CMP's version.
    pub cmp_version: u16,
    /// The CMP screen the consent was given on.
    pub consent_screen: u8,
    /// The language of the consent screen, two letters (6 bits each, `A` = 0).
    pub consent_language: [u8; 2],
    /// The Global Vendor List version used.
    pub vendor_list_version: u16,
    /// The TCF policy version (4 for TCF 2.2, 5 for TCF 2.3).
    pub policy_version: u8,
    /// Whether the string is for one service only (not global).
    pub is_service_specific: bool,
    /// Whether the CMP used non-standard texts.
    pub use_non_standard_texts: bool,
    /// Special feature opt-ins (1..=12).
    pub special_feature_optins: Flags,
    /// Purpose consents (1..=24).
    pub purpose_consents: Flags,
    /// Purpose legitimate-interest transparency (1..=24): set when the reader did not object.
    pub purpose_legitimate_interests: Flags,
    /// Whether purpose 1 was not disclosed (a country-specific treatment).
    pub purpose_one_treatment: bool,
    /// The publisher's country, two letters (6 bits each, `A` = 0).
    pub publisher_cc: [u8; 2],
    /// Vendors with the reader's consent.
    pub vendor_consents: VendorSet,
    /// Vendors whose legitimate interest was disclosed and not objected to.
    pub vendor_legitimate_interests: VendorSet,
    /// The publisher restrictions, in string order.
    pub publisher_restrictions: Vec<PublisherRestriction>,
}

/// The publisher TC segment (type 3): the publisher's own purposes and custom purposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublisherTc {
    /// The publisher's purpose consents (1..=24).
    pub purpose_consents: Flags,
    /// The publisher's purpose legitimate interests (1..=24).
    pub purpose_legitimate_interests: Flags,
    /// How many custom purposes follow (0..=63).
    pub num_custom_purposes: u8,
    /// Custom purpose consents (1..=num_custom_purposes).
    pub custom_purpose_consents: Flags,
    /// Custom purpose legitimate interests (1..=num_custom_purposes).
    pub custom_purpose_legitimate_interests: Flags,
}

/// A decoded TC string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcString {
    /// The core segment.
    pub core: TcCore,
    /// The DisclosedVendors segment (type 1), when present.
    pub disclosed_vendors: Option<VendorSet>,
    /// The AllowedVendors segment (type 2, deprecated), when present.
    pub allowed_vendors: Option<VendorSet>,
    /// The publisher TC segment (type 3), when present.
    pub publisher_tc: Option<PublisherTc>,
}

impl TcString {
    /// Decodes a TC string; `None` when it is not a valid TCF v2 string or is longer than
    /// [`TCF_MAX_LEN`].
    pub fn decode(text: &str) -> Option<Self> {
        if text.len() > TCF_MAX_LEN {
            return None;
        }
        let mut segments = text.split('.');
        let core = read_core(&mut BitReader::new(segments.next()?.as_bytes())?)?;
        let mut tc = Self {
            core,
            disclosed_vendors: None,
            allowed_vendors: None,
            publisher_tc: None,
        };
        for segment in segments {
            let mut r = BitReader::new(segment.as_bytes())?;
            match r.u8(3)? {
                1 if tc.disclosed_vendors.is_none() => {
                    tc.disclosed_vendors = Some(vendors(&mut r)?)
                }
                2 if tc.allowed_vendors.is_none() => tc.allowed_vendors = Some(vendors(&mut r)?),
                3 if tc.publisher_tc.is_none() => {
                    tc.publisher_tc = Some(read_publisher_tc(&mut r)?)
                }
                _ => return None,
            }
        }
        Some(tc)
    }
}

fn letters(r: &mut BitReader<'_>) -> Option<[u8; 2]> {
    Some([r.u8(6)?, r.u8(6)?])
}

fn read_core(r: &mut BitReader<'_>) -> Option<TcCore> {
    let version = r.u8(6)?;
    if version != 2 {
        return None;
    }
    Some(TcCore {
        version,
        created_ds: r.uint(36)?,
        last_updated_ds: r.uint(36)?,
        cmp_id: r.u16(12)?,
        cmp_version: r.u16(12)?,
        consent_screen: r.u8(6)?,
        consent_language: letters(r)?,
        vendor_list_version: r.u16(12)?,
        policy_version: r.u8(6)?,
        is_service_specific: r.bool()?,
        use_non_standard_texts: r.bool()?,
        special_feature_optins: Flags(r.flags(12)?),
        purpose_consents: Flags(r.flags(24)?),
        purpose_legitimate_interests: Flags(r.flags(24)?),
        purpose_one_treatment: r.bool()?,
        publisher_cc: letters(r)?,
        vendor_consents: vendors(r)?,
        vendor_legitimate_interests: vendors(r)?,
        publisher_restrictions: restrictions(r)?,
    })
}

/// `NumEntries` (12 bits) then that many entries: `IsARange`, a vendor id, and the end id
/// when a range. Vendor ids start at 1; an end before its start is malformed.
fn ranges(r: &mut BitReader<'_>) -> Option<Vec<(u16, u16)>> {
    let count = r.u16(12)?;
    // Each entry takes at least 17 bits: a count the text cannot hold is refused before
    // anything is allocated for it.
    if usize::from(count) * 17 > r.remaining() {
        return None;
    }
    let mut out = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let is_range = r.bool()?;
        let start = r.u16(16)?;
        let end = if is_range { r.u16(16)? } else { start };
        if start == 0 || end < start {
            return None;
        }
        out.push((start, end));
    }
    Some(out)
}

/// A vendor section: `MaxVendorId` (16), `IsRangeEncoding` (1), then a bitfield of
/// `MaxVendorId` bits or a range list.
fn vendors(r: &mut BitReader<'_>) -> Option<VendorSet> {
    let max_vendor_id = r.u16(16)?;
    let range_encoded = r.bool()?;
    let mut set = VendorSet {
        max_vendor_id,
        range_encoded,
        words: Vec::new(),
    };
    if range_encoded {
        for (a, b) in ranges(r)? {
            set.insert_range(a, b);
        }
    } else {
        if r.remaining() < usize::from(max_vendor_id) {
            return None;
        }
        set.words = vec![0; usize::from(max_vendor_id) / 64 + 1];
        for vendor in 1..=max_vendor_id {
            if r.bool()? {
                set.insert_range(vendor, vendor);
            }
        }
    }
    Some(set)
}

fn restrictions(r: &mut BitReader<'_>) -> Option<Vec<PublisherRestriction>> {
    let count = r.u16(12)?;
    // Each restriction takes at least 20 bits.
    if usize::from(count) * 20 > r.remaining() {
        return None;
    }
    let mut out = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let purpose_id = r.u8(6)?;
        let restriction_type = RestrictionType::from_bits(r.u8(2)?);
        out.push(PublisherRestriction {
            purpose_id,
            restriction_type,
            vendors: ranges(r)?,
        });
    }
    Some(out)
}

fn read_publisher_tc(r: &mut BitReader<'_>) -> Option<PublisherTc> {
    let purpose_consents = Flags(r.flags(24)?);
    let purpose_legitimate_interests = Flags(r.flags(24)?);
    let num_custom_purposes = r.u8(6)?;
    let n = usize::from(num_custom_purposes);
    Some(PublisherTc {
        purpose_consents,
        purpose_legitimate_interests,
        num_custom_purposes,
        custom_purpose_consents: Flags(r.flags(n)?),
        custom_purpose_legitimate_interests: Flags(r.flags(n)?),
    })
}

#[cfg(test)]
impl VendorSet {
    /// The set of `ids` (tests build TC strings field by field).
    pub(crate) fn of(ids: &[u16]) -> Self {
        let mut set = Self::default();
        for &id in ids {
            set.insert_range(id, id);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_2_string_too_short_for_its_vendor_sections_is_no_signal() {
        assert!(TcString::decode("CAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA").is_none());
    }

    #[test]
    fn flags_are_one_based() {
        let f = Flags(0b101);
        assert!(f.has(1) && !f.has(2) && f.has(3) && !f.has(0) && !f.has(65));
        assert_eq!(f.iter().collect::<Vec<_>>(), vec![1, 3]);
    }

    #[test]
    fn vendor_ranges_fill_word_by_word() {
        let mut s = VendorSet::default();
        s.insert_range(3, 130);
        s.insert_range(65535, 65535);
        assert!(!s.contains(2) && s.contains(3) && s.contains(64) && s.contains(130));
        assert!(!s.contains(131) && s.contains(65535));
        assert_eq!(s.len(), 129);
        assert_eq!(s.iter().next(), Some(3));
        assert_eq!(s.iter().last(), Some(65535));
    }

    #[test]
    fn refuses_oversized_and_foreign_text() {
        assert!(TcString::decode(&"C".repeat(TCF_MAX_LEN + 1)).is_none());
        assert!(TcString::decode("").is_none());
        assert!(TcString::decode("CO w4").is_none());
        assert!(TcString::decode("BOEFEAyOEFEAyAHABDENAI4AAAB9vABAASA").is_none());
    }
}
