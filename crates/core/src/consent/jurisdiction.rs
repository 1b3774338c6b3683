//! Which consent rule a reader's location falls under, from a geolocated country and region
//! and the `[consent]` settings: GDPR-style opt-in, a US state's opt-out, no rule, or unknown.
//!
//! The location is the platform's geolocation of the client address; this module only reads
//! the two codes it is given, so the adapter decides where they come from.

use trusted_server_settings::{country, Consent, ConsentRule};

use super::SECTION_US_NATIONAL;

/// A US state, by its two upper-case letters (`CA`); written `US-CA` (ISO 3166-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UsState([u8; 2]);

impl UsState {
    /// The state of a region code, `CA` or `US-CA` (any case); `None` when it is not two
    /// ASCII letters after an optional `US-`.
    pub fn parse(region: &str) -> Option<Self> {
        let code = region.trim();
        let letters = match code.get(..3) {
            Some(prefix) if prefix.eq_ignore_ascii_case("US-") => &code[3..],
            _ => code,
        };
        two_letters(letters).map(UsState)
    }

    /// The ISO 3166-2 code, `US-CA`.
    pub fn code(self) -> String {
        format!("US-{}{}", char::from(self.0[0]), char::from(self.0[1]))
    }

    /// The GPP section of this state, when the IAB has published one (8 `usca` to 27
    /// `usri`); `None` for a state without one, which the national section (7) covers.
    pub fn gpp_section(self) -> Option<u16> {
        const SECTIONS: [(&[u8; 2], u16); 20] = [
            (b"CA", 8),
            (b"VA", 9),
            (b"CO", 10),
            (b"UT", 11),
            (b"CT", 12),
            (b"FL", 13),
            (b"MT", 14),
            (b"OR", 15),
            (b"TX", 16),
            (b"DE", 17),
            (b"IA", 18),
            (b"NE", 19),
            (b"NH", 20),
            (b"NJ", 21),
            (b"TN", 22),
            (b"MN", 23),
            (b"MD", 24),
            (b"IN", 25),
            (b"KY", 26),
            (b"RI", 27),
        ];
        (SECTIONS.iter())
            .find(|(code, _)| **code == self.0)
            .map(|&(_, id)| id)
    }

    /// The GPP sections that speak for a reader in this state: its own, and the national one.
    pub fn gpp_sections(self) -> impl Iterator<Item = u16> {
        self.gpp_section().into_iter().chain([SECTION_US_NATIONAL])
    }
}

/// Where a reader is, as far as consent goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Jurisdiction {
    /// A country of `consent.opt_in_countries`: GDPR-style opt-in.
    OptIn,
    /// A state of `consent.opt_out_regions`: that state's opt-out rules.
    OptOut(UsState),
    /// A known location under neither list.
    Elsewhere,
    /// No usable location: no country, or a country some of whose regions are listed without a
    /// usable region. `consent.unknown` says which rule applies.
    Unknown,
}

impl Jurisdiction {
    /// The jurisdiction of a reader geolocated in `country` (ISO 3166-1 alpha-2) and `region`
    /// (the subdivision, `CA` or `US-CA`). Codes are compared case-insensitively; anything
    /// that is not two letters (Fastly writes `**` or `--` when it does not know), and a
    /// placeholder code that names no country (`EU`, `AP`, `ZZ`, `XX`:
    /// [`country::is_placeholder`]), is unknown. A code reserved for a place with another
    /// code is read as that code (`UK` as `GB`, `IC` as `ES`: [`country::iso_code`]).
    pub fn of(country: Option<&str>, region: Option<&str>, settings: &Consent) -> Self {
        let Some(country) = country.and_then(|c| two_letters(c.trim())) else {
            return Self::Unknown;
        };
        let listed =
            |list: &[trusted_server_settings::Text], code: &str| list.iter().any(|c| c == code);
        let reported = std::str::from_utf8(&country).unwrap_or_default();
        if country::is_placeholder(reported) {
            return Self::Unknown;
        }
        let country_code = country::iso_code(reported);
        if listed(&settings.opt_in_countries, country_code) {
            return Self::OptIn;
        }
        let prefix = format!("{country_code}-");
        let has_regions = (settings.opt_out_regions.iter()).any(|r| r.starts_with(&prefix));
        if !has_regions {
            return Self::Elsewhere;
        }
        match region.and_then(UsState::parse) {
            Some(state) if listed(&settings.opt_out_regions, &state.code()) => Self::OptOut(state),
            Some(_) => Self::Elsewhere,
            None => Self::Unknown,
        }
    }

    /// The rule that applies here: `consent.unknown` for an unknown location.
    pub fn rule(self, settings: &Consent) -> ConsentRule {
        match self {
            Self::OptIn => ConsentRule::OptIn,
            Self::OptOut(_) => ConsentRule::OptOut,
            Self::Elsewhere => ConsentRule::None,
            Self::Unknown => settings.unknown,
        }
    }

    /// A short stable name: `opt-in`, `opt-out`, `elsewhere` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OptIn => "opt-in",
            Self::OptOut(_) => "opt-out",
            Self::Elsewhere => "elsewhere",
            Self::Unknown => "unknown",
        }
    }
}

/// Two ASCII letters, upper-cased.
fn two_letters(code: &str) -> Option<[u8; 2]> {
    match code.as_bytes() {
        &[a, b] if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() => {
            Some([a.to_ascii_uppercase(), b.to_ascii_uppercase()])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trusted_server_settings::Settings;

    fn of(country: Option<&str>, region: Option<&str>) -> Jurisdiction {
        Jurisdiction::of(country, region, &Settings::DEFAULT.consent)
    }

    #[test]
    fn the_defaults_place_readers() {
        let ca = UsState::parse("CA").unwrap();
        assert_eq!(of(Some("DE"), None), Jurisdiction::OptIn);
        assert_eq!(of(Some("de"), Some("BY")), Jurisdiction::OptIn);
        assert_eq!(of(Some("GB"), None), Jurisdiction::OptIn);
        assert_eq!(of(Some("CH"), None), Jurisdiction::OptIn);
        assert_eq!(of(Some("NO"), None), Jurisdiction::OptIn);
        assert_eq!(of(Some("US"), Some("CA")), Jurisdiction::OptOut(ca));
        assert_eq!(of(Some("US"), Some("US-CA")), Jurisdiction::OptOut(ca));
        assert_eq!(
            of(Some("US"), Some("ri")),
            Jurisdiction::OptOut(UsState::parse("RI").unwrap())
        );
        assert_eq!(of(Some("US"), Some("NY")), Jurisdiction::Elsewhere);
        assert_eq!(of(Some("US"), Some("FL")), Jurisdiction::Elsewhere);
        assert_eq!(of(Some("US"), None), Jurisdiction::Unknown);
        assert_eq!(of(Some("US"), Some("?")), Jurisdiction::Unknown);
        assert_eq!(of(Some("JP"), Some("13")), Jurisdiction::Elsewhere);
        assert_eq!(of(Some("BR"), None), Jurisdiction::Elsewhere);
        for unknown in [
            None,
            Some(""),
            Some("**"),
            Some("--"),
            Some("DEU"),
            Some("D"),
        ] {
            assert_eq!(
                of(unknown, Some("CA")),
                Jurisdiction::Unknown,
                "{unknown:?}"
            );
        }
        assert_eq!(ca.code(), "US-CA");
        assert_eq!(ca.gpp_sections().collect::<Vec<_>>(), [8, 7]);
        let ny = UsState::parse("US-NY").unwrap();
        assert_eq!(ny.gpp_sections().collect::<Vec<_>>(), [7]);
    }

    /// The EU's outermost regions (TFEU article 349) and Åland with codes of their own, the
    /// reserved codes for Spain's, and the EEA's other members: all opt-in by default.
    /// Placeholders that name no country are unknown, never elsewhere.
    #[test]
    fn territories_aliases_and_placeholders() {
        // Art. 349: Guadeloupe, French Guiana, Martinique, Mayotte, Réunion, Saint-Martin
        // (own ISO codes); the Azores, Madeira and the Canary Islands have none (PT, ES) but
        // `IC` is reserved for the Canaries, `EA` for Ceuta and Melilla.
        for code in [
            "GP", "GF", "MQ", "YT", "RE", "MF", "AX", "IC", "EA", "ic", "PT", "ES",
        ] {
            assert_eq!(of(Some(code), None), Jurisdiction::OptIn, "{code}");
        }
        for (alias, country) in [("UK", "GB"), ("EL", "GR"), ("FX", "FR")] {
            assert_eq!(of(Some(alias), None), of(Some(country), None), "{alias}");
            assert_eq!(of(Some(alias), None), Jurisdiction::OptIn, "{alias}");
        }
        for placeholder in ["EU", "eu", "AP", "ZZ", "XX", "AA", "QZ", "EZ", "UN"] {
            assert_eq!(
                of(Some(placeholder), None),
                Jurisdiction::Unknown,
                "{placeholder}"
            );
        }
        // Kosovo is a place (a user-assigned code everyone uses), outside every list; so are
        // the French territories outside the EU.
        for elsewhere in ["XK", "PF", "NC", "BL", "PM", "WF", "QA"] {
            assert_eq!(
                of(Some(elsewhere), None),
                Jurisdiction::Elsewhere,
                "{elsewhere}"
            );
        }
        // A publisher's own list follows the aliases too.
        let mut settings = Settings::DEFAULT.consent;
        settings.opt_in_countries = vec!["ES".into()].into();
        assert_eq!(
            Jurisdiction::of(Some("IC"), None, &settings),
            Jurisdiction::OptIn
        );
        assert_eq!(
            Jurisdiction::of(Some("EU"), None, &settings),
            Jurisdiction::Unknown
        );
    }

    #[test]
    fn every_default_state_and_every_gpp_state_maps() {
        let settings = Settings::DEFAULT.consent;
        for code in settings.opt_out_regions.iter() {
            let state = UsState::parse(code).unwrap();
            assert_eq!(&state.code(), code);
            assert!(state.gpp_section().is_some(), "{code} has a GPP section");
        }
        let ids: Vec<u16> = (b'A'..=b'Z')
            .flat_map(|a| (b'A'..=b'Z').map(move |b| UsState([a, b])))
            .filter_map(UsState::gpp_section)
            .collect();
        assert_eq!(ids.len(), 20);
        assert!((8..=27).all(|id| ids.contains(&id)));
    }

    #[test]
    fn the_settings_move_the_lines() {
        let mut settings = Settings::DEFAULT.consent;
        settings.opt_in_countries = vec!["US".into()].into();
        settings.unknown = ConsentRule::None;
        let j = Jurisdiction::of(Some("US"), Some("CA"), &settings);
        assert_eq!(
            (j, j.rule(&settings)),
            (Jurisdiction::OptIn, ConsentRule::OptIn)
        );
        let j = Jurisdiction::of(Some("DE"), None, &settings);
        assert_eq!(
            (j, j.rule(&settings)),
            (Jurisdiction::Elsewhere, ConsentRule::None)
        );
        let j = Jurisdiction::of(None, None, &settings);
        assert_eq!(
            (j, j.rule(&settings)),
            (Jurisdiction::Unknown, ConsentRule::None)
        );
        settings.opt_in_countries = Vec::new().into();
        settings.opt_out_regions = Vec::new().into();
        assert_eq!(
            Jurisdiction::of(Some("US"), None, &settings),
            Jurisdiction::Elsewhere
        );
    }
}
