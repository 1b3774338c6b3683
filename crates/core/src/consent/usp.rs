//! The IAB CCPA / US Privacy string (`usprivacy` cookie, also `us_privacy`, and GPP's
//! section 6): four characters, `1YNN`.
//!
//! Character 1 is the version (only `1` exists); characters 2 to 4 are the notice given, the
//! reader's opt-out of sale, and whether the publisher is a signatory of the LSPA, each `Y`,
//! `N` or `-` (not applicable). Anything else (lowercase included, as the specification writes
//! only uppercase) is no valid signal.

/// The length of every US Privacy string; anything longer or shorter is no valid signal.
pub const USP_LEN: usize = 4;

/// One of the three flags of a US Privacy string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UspFlag {
    /// `Y`.
    Yes,
    /// `N`.
    No,
    /// `-`: not applicable.
    NotApplicable,
}

impl UspFlag {
    fn from_byte(b: u8) -> Option<Self> {
        match b {
            b'Y' => Some(Self::Yes),
            b'N' => Some(Self::No),
            b'-' => Some(Self::NotApplicable),
            _ => None,
        }
    }

    /// The character as written.
    pub fn as_char(self) -> char {
        match self {
            Self::Yes => 'Y',
            Self::No => 'N',
            Self::NotApplicable => '-',
        }
    }
}

/// A decoded US Privacy string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsPrivacy {
    /// The version (1).
    pub version: u8,
    /// Whether explicit notice and an opportunity to opt out was given.
    pub notice: UspFlag,
    /// Whether the reader opted out of the sale of personal information.
    pub opt_out_sale: UspFlag,
    /// Whether the publisher is a signatory of the IAB Limited Service Provider Agreement.
    pub lspa_covered: UspFlag,
}

impl UsPrivacy {
    /// Decodes a US Privacy string; `None` unless it is exactly four valid characters.
    pub fn decode(text: &str) -> Option<Self> {
        let &[version, notice, sale, lspa] = text.as_bytes() else {
            return None;
        };
        if version != b'1' {
            return None;
        }
        Some(Self {
            version: 1,
            notice: UspFlag::from_byte(notice)?,
            opt_out_sale: UspFlag::from_byte(sale)?,
            lspa_covered: UspFlag::from_byte(lspa)?,
        })
    }

    /// Whether the reader opted out of sale (`Y` in the third character).
    pub fn opted_out_of_sale(&self) -> bool {
        self.opt_out_sale == UspFlag::Yes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_four_characters() {
        let u = UsPrivacy::decode("1YYN").unwrap();
        assert_eq!(u.notice, UspFlag::Yes);
        assert!(u.opted_out_of_sale());
        assert_eq!(u.lspa_covered, UspFlag::No);
        assert!(!UsPrivacy::decode("1---").unwrap().opted_out_of_sale());
    }

    #[test]
    fn anything_else_is_no_signal() {
        for bad in ["", "1YN", "1YNNN", "2YNN", "1ynn", "1YXN", "1YN\u{e9}"] {
            assert!(UsPrivacy::decode(bad).is_none(), "{bad:?}");
        }
    }
}
