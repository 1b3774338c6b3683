//! The GPP US sections: the national section (7) and every state section the IAB has
//! published (8 to 27), read through one table of field layouts.
//!
//! Every field is a 2-bit value (0 = not applicable, 1 = yes / opted out / no consent, per the
//! field, 2 = the opposite, 3 = invalid) or a list of them, after a 6-bit version. A section is
//! its core segment, optionally followed (after a `.`) by a GPC sub-section (a 2-bit segment
//! type, 1, and the GPC flag) or, for Indiana, Kentucky and Rhode Island, a sensitive-data
//! consent segment (a list of 2-bit values). Layouts follow the IAB GPP specification's
//! section documents (`Sections/US-States/` in the IAB Tech Lab's GPP repository), checked
//! against `@iabgpp/cmpapi` by `tests/consent/`.

use super::bits::BitReader;

/// One field of a layout.
#[derive(Debug, Clone, Copy)]
enum Field {
    /// The 6-bit version (named `Version` or `MspaVersion` by the section).
    Version(&'static str),
    /// One 2-bit value.
    Two(&'static str),
    /// A list of 2-bit values.
    List(&'static str, usize),
}

/// What may follow the core segment after a `.`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trailer {
    /// Nothing.
    None,
    /// The GPC sub-section.
    Gpc,
    /// A sensitive-data consent segment of this many 2-bit values.
    SensitiveData(usize),
}

/// The layout of one US section (for one version of it).
#[derive(Debug)]
struct Layout {
    id: u16,
    name: &'static str,
    /// `Some(1)` only for the national section's version 1 layout; `None` for the layout
    /// every other string of the section is read with.
    version: Option<u8>,
    core: &'static [Field],
    trailer: Trailer,
}

use Field::{List, Two, Version};

const SALE_NOTICE: Field = Two("SaleOptOutNotice");
const TA_NOTICE: Field = Two("TargetedAdvertisingOptOutNotice");
const SALE: Field = Two("SaleOptOut");
const TA: Field = Two("TargetedAdvertisingOptOut");
const MSPA_TAIL: [Field; 3] = [
    Two("MspaCoveredTransaction"),
    Two("MspaOptOutOptionMode"),
    Two("MspaServiceProviderMode"),
];

/// The layouts of the sections that use the MSPA version / mode header (Indiana, Kentucky,
/// Maryland, Rhode Island).
const MSPA_HEAD: [Field; 6] = [
    Version("MspaVersion"),
    Two("MspaCoveredTransaction"),
    Two("MspaMode"),
    Two("ProcessingNotice"),
    SALE_NOTICE,
    TA_NOTICE,
];

macro_rules! fields {
    ($($f:expr),* $(,)?) => { &[$($f),*] };
}

static LAYOUTS: &[Layout] = &[
    Layout {
        id: 7,
        name: "usnat",
        version: Some(1),
        core: fields![
            Version("Version"),
            Two("SharingNotice"),
            SALE_NOTICE,
            Two("SharingOptOutNotice"),
            TA_NOTICE,
            Two("SensitiveDataProcessingOptOutNotice"),
            Two("SensitiveDataLimitUseNotice"),
            SALE,
            Two("SharingOptOut"),
            TA,
            List("SensitiveDataProcessing", 12),
            List("KnownChildSensitiveDataConsents", 2),
            Two("PersonalDataConsents"),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::Gpc,
    },
    Layout {
        id: 7,
        name: "usnat",
        version: None,
        core: fields![
            Version("Version"),
            Two("SharingNotice"),
            SALE_NOTICE,
            Two("SharingOptOutNotice"),
            TA_NOTICE,
            Two("SensitiveDataProcessingOptOutNotice"),
            Two("SensitiveDataLimitUseNotice"),
            SALE,
            Two("SharingOptOut"),
            TA,
            List("SensitiveDataProcessing", 16),
            List("KnownChildSensitiveDataConsents", 3),
            Two("PersonalDataConsents"),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::Gpc,
    },
    Layout {
        id: 8,
        name: "usca",
        version: None,
        core: fields![
            Version("Version"),
            SALE_NOTICE,
            Two("SharingOptOutNotice"),
            Two("SensitiveDataLimitUseNotice"),
            SALE,
            Two("SharingOptOut"),
            List("SensitiveDataProcessing", 9),
            List("KnownChildSensitiveDataConsents", 2),
            Two("PersonalDataConsents"),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::Gpc,
    },
    Layout {
        id: 9,
        name: "usva",
        version: None,
        core: fields![
            Version("Version"),
            Two("SharingNotice"),
            SALE_NOTICE,
            TA_NOTICE,
            SALE,
            TA,
            List("SensitiveDataProcessing", 8),
            Two("KnownChildSensitiveDataConsents"),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::None,
    },
    Layout {
        id: 10,
        name: "usco",
        version: None,
        core: fields![
            Version("Version"),
            Two("SharingNotice"),
            SALE_NOTICE,
            TA_NOTICE,
            SALE,
            TA,
            List("SensitiveDataProcessing", 7),
            Two("KnownChildSensitiveDataConsents"),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::Gpc,
    },
    Layout {
        id: 11,
        name: "usut",
        version: None,
        core: fields![
            Version("Version"),
            Two("SharingNotice"),
            SALE_NOTICE,
            TA_NOTICE,
            Two("SensitiveDataProcessingOptOutNotice"),
            SALE,
            TA,
            List("SensitiveDataProcessing", 8),
            Two("KnownChildSensitiveDataConsents"),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::None,
    },
    Layout {
        id: 12,
        name: "usct",
        version: None,
        core: fields![
            Version("Version"),
            Two("SharingNotice"),
            SALE_NOTICE,
            TA_NOTICE,
            SALE,
            TA,
            List("SensitiveDataProcessing", 8),
            List("KnownChildSensitiveDataConsents", 3),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::Gpc,
    },
    layout(13, "usfl", PROCESSING_8_3, Trailer::None),
    Layout {
        id: 14,
        name: "usmt",
        version: None,
        core: fields![
            Version("Version"),
            Two("SharingNotice"),
            SALE_NOTICE,
            TA_NOTICE,
            SALE,
            TA,
            List("SensitiveDataProcessing", 8),
            List("KnownChildSensitiveDataConsents", 3),
            Two("AdditionalDataProcessingConsent"),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::Gpc,
    },
    layout(15, "usor", PROCESSING_11_3, Trailer::Gpc),
    layout(16, "ustx", PROCESSING_8_1, Trailer::Gpc),
    layout(17, "usde", PROCESSING_9_5, Trailer::Gpc),
    Layout {
        id: 18,
        name: "usia",
        version: None,
        core: fields![
            Version("Version"),
            Two("ProcessingNotice"),
            SALE_NOTICE,
            TA_NOTICE,
            Two("SensitiveDataOptOutNotice"),
            SALE,
            TA,
            List("SensitiveDataProcessing", 8),
            Two("KnownChildSensitiveDataConsents"),
            MSPA_TAIL[0],
            MSPA_TAIL[1],
            MSPA_TAIL[2],
        ],
        trailer: Trailer::Gpc,
    },
    layout(19, "usne", PROCESSING_8_1, Trailer::Gpc),
    layout(20, "usnh", PROCESSING_8_3, Trailer::Gpc),
    layout(21, "usnj", PROCESSING_10_5, Trailer::Gpc),
    layout(22, "ustn", PROCESSING_8_1, Trailer::Gpc),
    layout(23, "usmn", PROCESSING_8_1, Trailer::Gpc),
    Layout {
        id: 24,
        name: "usmd",
        version: None,
        core: fields![
            MSPA_HEAD[0],
            MSPA_HEAD[1],
            MSPA_HEAD[2],
            MSPA_HEAD[3],
            MSPA_HEAD[4],
            MSPA_HEAD[5],
            SALE,
            TA,
            Two("AdditionalDataProcessingConsent"),
        ],
        trailer: Trailer::Gpc,
    },
    layout(25, "usin", MSPA_STATE, Trailer::SensitiveData(8)),
    layout(26, "usky", MSPA_STATE, Trailer::SensitiveData(8)),
    layout(27, "usri", MSPA_STATE, Trailer::SensitiveData(8)),
];

/// The layout shared by DE, FL, MN, NE, NH, NJ, OR, TN and TX: version, processing notice,
/// sale and targeted-advertising notices and opt-outs, sensitive data, known child, additional
/// data processing consent, then the MSPA fields; they differ in the list lengths
/// (`PROCESSING_<sensitive>_<known child>`).
const PROCESSING_8_1: &[Field] = &[
    Version("Version"),
    Two("ProcessingNotice"),
    SALE_NOTICE,
    TA_NOTICE,
    SALE,
    TA,
    List("SensitiveDataProcessing", 8),
    Two("KnownChildSensitiveDataConsents"),
    Two("AdditionalDataProcessingConsent"),
    MSPA_TAIL[0],
    MSPA_TAIL[1],
    MSPA_TAIL[2],
];
const PROCESSING_8_3: &[Field] = &[
    Version("Version"),
    Two("ProcessingNotice"),
    SALE_NOTICE,
    TA_NOTICE,
    SALE,
    TA,
    List("SensitiveDataProcessing", 8),
    List("KnownChildSensitiveDataConsents", 3),
    Two("AdditionalDataProcessingConsent"),
    MSPA_TAIL[0],
    MSPA_TAIL[1],
    MSPA_TAIL[2],
];
const PROCESSING_9_5: &[Field] = &[
    Version("Version"),
    Two("ProcessingNotice"),
    SALE_NOTICE,
    TA_NOTICE,
    SALE,
    TA,
    List("SensitiveDataProcessing", 9),
    List("KnownChildSensitiveDataConsents", 5),
    Two("AdditionalDataProcessingConsent"),
    MSPA_TAIL[0],
    MSPA_TAIL[1],
    MSPA_TAIL[2],
];
const PROCESSING_10_5: &[Field] = &[
    Version("Version"),
    Two("ProcessingNotice"),
    SALE_NOTICE,
    TA_NOTICE,
    SALE,
    TA,
    List("SensitiveDataProcessing", 10),
    List("KnownChildSensitiveDataConsents", 5),
    Two("AdditionalDataProcessingConsent"),
    MSPA_TAIL[0],
    MSPA_TAIL[1],
    MSPA_TAIL[2],
];
const PROCESSING_11_3: &[Field] = &[
    Version("Version"),
    Two("ProcessingNotice"),
    SALE_NOTICE,
    TA_NOTICE,
    SALE,
    TA,
    List("SensitiveDataProcessing", 11),
    List("KnownChildSensitiveDataConsents", 3),
    Two("AdditionalDataProcessingConsent"),
    MSPA_TAIL[0],
    MSPA_TAIL[1],
    MSPA_TAIL[2],
];

/// Indiana, Kentucky and Rhode Island: the MSPA header, the opt-outs, known child and
/// additional data processing consent; sensitive data in a segment of its own.
const MSPA_STATE: &[Field] = &[
    MSPA_HEAD[0],
    MSPA_HEAD[1],
    MSPA_HEAD[2],
    MSPA_HEAD[3],
    MSPA_HEAD[4],
    MSPA_HEAD[5],
    SALE,
    TA,
    Two("KnownChildSensitiveDataConsents"),
    Two("AdditionalDataProcessingConsent"),
];

/// A layout for any version of section `id`.
const fn layout(id: u16, name: &'static str, core: &'static [Field], trailer: Trailer) -> Layout {
    Layout {
        id,
        name,
        version: None,
        core,
        trailer,
    }
}

/// The US national section id (the one section whose layout changed between versions).
pub const SECTION_US_NATIONAL: u16 = 7;

/// A version-2-shaped national section's values in the version 1 shape: the first 12 of 16
/// sensitive-data values and the first 2 of 3 known-child values.
fn narrow_national(values: &[u8]) -> Option<Vec<u8>> {
    // After the version: 9 notices and opt-outs, 16 sensitive data, 3 known child, 4 more.
    if values.len() != 32 {
        return None;
    }
    let mut out = Vec::with_capacity(28);
    out.extend_from_slice(&values[..21]);
    out.extend_from_slice(&values[25..27]);
    out.extend_from_slice(&values[28..]);
    Some(out)
}

/// Whether `id` is a US section this module reads (7 to 27).
pub(crate) fn is_us_section(id: u16) -> bool {
    LAYOUTS.iter().any(|l| l.id == id)
}

/// A value of a 2-bit opt-out field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptOut {
    /// 0: not applicable (the right does not apply, or the CMP did not ask).
    NotApplicable,
    /// 1: the reader opted out.
    OptedOut,
    /// 2: the reader did not opt out.
    DidNotOptOut,
    /// 3: invalid; a decision should read it as an opt-out.
    Invalid,
}

impl OptOut {
    fn from_bits(v: u8) -> Self {
        match v {
            0 => Self::NotApplicable,
            1 => Self::OptedOut,
            2 => Self::DidNotOptOut,
            _ => Self::Invalid,
        }
    }
}

/// A decoded US section (national or state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsSection {
    layout: &'static Layout,
    version: u8,
    /// The 2-bit values of the core fields after the version, in layout order (a list field
    /// takes as many values as it has elements).
    values: Vec<u8>,
    /// The GPC sub-section: `Some((segment type, GPC))` when present.
    gpc: Option<(u8, bool)>,
    /// The separate sensitive-data consent segment (IN, KY, RI), when present.
    sensitive_segment: Option<Vec<u8>>,
}

impl PartialEq for Layout {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}
impl Eq for Layout {}

impl UsSection {
    /// Decodes the text of section `id` (the part between `~`s); `None` when malformed or
    /// when `id` is not a US section.
    pub(crate) fn decode(id: u16, text: &str) -> Option<Self> {
        let mut parts = text.split('.');
        let mut r = BitReader::new(parts.next()?.as_bytes())?;
        // The national section's version 1 had 12 sensitive-data categories and 2 known-child
        // values; version 2 has 16 and 3. Like the reference library, the layout is told by
        // the segment's length (60 bits, or 66 with the encoder's padding, is version 1), and
        // a longer segment that says version 1 is read as version 2 and narrowed to version 1.
        let old_national = id == SECTION_US_NATIONAL && matches!(r.len(), 60 | 66);
        let version = r.u8(6)?;
        let layout = LAYOUTS
            .iter()
            .find(|l| l.id == id && (l.version == Some(1)) == old_national)?;
        let mut values = Vec::new();
        for field in &layout.core[1..] {
            let n = match field {
                Version(_) => return None,
                Two(_) => 1,
                List(_, n) => *n,
            };
            for _ in 0..n {
                values.push(r.u8(2)?);
            }
        }
        let mut layout = layout;
        if id == SECTION_US_NATIONAL && version == 1 && !old_national {
            values = narrow_national(&values)?;
            layout = LAYOUTS
                .iter()
                .find(|l| l.id == id && l.version == Some(1))?;
        }
        let mut section = Self {
            layout,
            version,
            values,
            gpc: None,
            sensitive_segment: None,
        };
        if let Some(trailer) = parts.next() {
            let mut r = BitReader::new(trailer.as_bytes())?;
            match layout.trailer {
                Trailer::None => return None,
                Trailer::Gpc => {
                    let kind = r.u8(2)?;
                    if kind != 1 {
                        return None;
                    }
                    section.gpc = Some((kind, r.bool()?));
                }
                Trailer::SensitiveData(n) => {
                    let mut list = Vec::with_capacity(n);
                    for _ in 0..n {
                        list.push(r.u8(2)?);
                    }
                    section.sensitive_segment = Some(list);
                }
            }
        }
        if parts.next().is_some() {
            return None;
        }
        Some(section)
    }

    /// The GPP section id.
    pub fn id(&self) -> u16 {
        self.layout.id
    }

    /// The IAB's short name of the section (`usnat`, `usca`, …).
    pub fn name(&self) -> &'static str {
        self.layout.name
    }

    /// The section's version field.
    pub fn version(&self) -> u8 {
        self.version
    }

    /// The raw 2-bit values of a core field by its IAB name (`SaleOptOut`,
    /// `KnownChildSensitiveDataConsents`, …): one value, or a list's values; `None` when the
    /// section has no such field. `SensitiveDataProcessing` of IN, KY and RI lives in its own
    /// segment: see [`UsSection::sensitive_data_processing`].
    pub fn field(&self, name: &str) -> Option<&[u8]> {
        let mut at = 0;
        for field in &self.layout.core[1..] {
            let (field_name, n) = match *field {
                Version(name) => (name, 0),
                Two(name) => (name, 1),
                List(name, n) => (name, n),
            };
            if field_name == name {
                return self.values.get(at..at + n);
            }
            at += n;
        }
        None
    }

    /// The names of the core fields (after the version), in string order.
    pub fn field_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.layout.core.iter().map(|f| match *f {
            Version(n) | Two(n) | List(n, _) => n,
        })
    }

    /// The name of the version field (`Version`, or `MspaVersion` for IN, KY, MD, RI).
    pub fn version_field_name(&self) -> &'static str {
        match self.layout.core[0] {
            Version(n) | Two(n) | List(n, _) => n,
        }
    }

    fn opt_out(&self, name: &str) -> Option<OptOut> {
        self.field(name)
            .and_then(|v| v.first())
            .map(|&v| OptOut::from_bits(v))
    }

    /// The sale opt-out (every US section has one).
    pub fn sale_opt_out(&self) -> Option<OptOut> {
        self.opt_out("SaleOptOut")
    }

    /// The sharing opt-out (usnat and usca only).
    pub fn sharing_opt_out(&self) -> Option<OptOut> {
        self.opt_out("SharingOptOut")
    }

    /// The targeted-advertising opt-out (every section but usca).
    pub fn targeted_advertising_opt_out(&self) -> Option<OptOut> {
        self.opt_out("TargetedAdvertisingOptOut")
    }

    /// The known-child consents (0 = not applicable, 1 = no consent, 2 = consent), one value
    /// or one per age band as the section defines them.
    pub fn known_child_sensitive_data_consents(&self) -> &[u8] {
        self.field("KnownChildSensitiveDataConsents").unwrap_or(&[])
    }

    /// The sensitive-data processing values, per category as the section defines them (for
    /// opt-out states 1 = opted out; for opt-in states 1 = no consent); `None` when the
    /// section carries none (IN, KY, RI without their sensitive-data segment).
    pub fn sensitive_data_processing(&self) -> Option<&[u8]> {
        self.field("SensitiveDataProcessing")
            .or(self.sensitive_segment.as_deref())
    }

    /// Whether the section has a GPC sub-section in its layout.
    pub fn has_gpc_field(&self) -> bool {
        self.layout.trailer == Trailer::Gpc
    }

    /// The GPC flag of the GPC sub-section, when the string carries one.
    pub fn gpc(&self) -> Option<bool> {
        self.gpc.map(|(_, g)| g)
    }

    /// The GPC sub-section's segment type, when present (always 1).
    pub fn gpc_segment_type(&self) -> Option<u8> {
        self.gpc.map(|(t, _)| t)
    }

    /// Whether the separate sensitive-data segment (IN, KY, RI) is present.
    pub fn has_sensitive_data_segment(&self) -> bool {
        self.sensitive_segment.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bits in each core segment, version included, per the IAB's section documents.
    #[test]
    fn layouts_match_the_published_lengths() {
        let expected: &[(u16, Option<u8>, usize)] = &[
            (7, Some(1), 60),
            (7, None, 70),
            (8, None, 6 + 2 * 5 + 18 + 4 + 2 + 6),
            (9, None, 6 + 2 * 5 + 16 + 2 + 6),
            (10, None, 6 + 2 * 5 + 14 + 2 + 6),
            (11, None, 6 + 2 * 6 + 16 + 2 + 6),
            (12, None, 6 + 2 * 5 + 16 + 6 + 6),
            (13, None, 6 + 2 * 5 + 16 + 6 + 2 + 6),
            (24, None, 6 + 2 * 8),
            (25, None, 6 + 2 * 9),
        ];
        for &(id, version, bits) in expected {
            let layout = LAYOUTS
                .iter()
                .find(|l| l.id == id && l.version == version)
                .unwrap();
            let sum: usize = layout
                .core
                .iter()
                .map(|f| match f {
                    Version(_) => 6,
                    Two(_) => 2,
                    List(_, n) => 2 * n,
                })
                .sum();
            assert_eq!(sum, bits, "section {id}");
        }
        for id in 7..=27 {
            assert!(is_us_section(id), "{id}");
        }
    }

    #[test]
    fn gpc_trailer_is_read() {
        // usca: version 1 then zeros, GPC segment type 1 with GPC set: "01" "1" -> 011000 = 'Y'.
        let s = UsSection::decode(8, "BAAAAAAA.YA").unwrap();
        assert_eq!(s.version(), 1);
        assert_eq!(s.gpc(), Some(true));
        assert_eq!(s.sale_opt_out(), Some(OptOut::NotApplicable));
        assert!(
            UsSection::decode(9, "BAAAAAAA.YA").is_none(),
            "usva has no GPC segment"
        );
        assert!(UsSection::decode(8, "BAAAAAAA.YA.YA").is_none());
        assert!(UsSection::decode(8, "BA").is_none(), "truncated");
    }
}
