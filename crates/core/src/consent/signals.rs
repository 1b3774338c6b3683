//! The consent signals of one request, read from its `Cookie` header and `Sec-GPC`, decoded,
//! and kept only as decoded facts: no raw string survives [`Signals::from_cookies`], and
//! [`Signals`]'s `Debug` prints a summary of what was found, never a consent string.
//!
//! | cookie | read as | when absent or malformed |
//! | --- | --- | --- |
//! | `euconsent-v2` | the TC string ([`TcString`]) | GPP's EU TCF section (2), when applicable |
//! | `__gpp` | the GPP string ([`Gpp`]) | no GPP signal |
//! | `__gpp_sid` | the applicable section ids, comma- (or `_`-) separated; `-1` is "none" | every section of the string applies |
//! | `usprivacy`, then `us_privacy` | the US Privacy string ([`UsPrivacy`]) | GPP's US Privacy section (6), when applicable |
//!
//! Every cookie of the header is looked at, however long the header and wherever a consent
//! cookie sits in it: no amount or order of other cookies hides a consent signal (the work is
//! one pass over the header's bytes, and a decoder runs only on a consent cookie's value).
//! Each value is held to its decoder's limit (a value longer than that is no signal). Values
//! may be percent-encoded (some CMPs write `~` or `,` that way). A malformed value is the same
//! as no cookie. When a name appears twice, the first valid copy is read, as browsers send the
//! cookie of the most specific path first; but valid copies with different values mark the
//! signals [`Signals::conflicting`], and the decision then refuses an edge ID wherever consent
//! cookies count.
//!
//! `__gpp_sid` is not part of the GPP string, and any page of the site (or a sibling
//! subdomain) can write it: it may only make the decision stricter. When it sets sections of
//! the string aside, the signals keep the whole string's reading too
//! ([`Signals::without_gpp_sid`]), and the decision refuses when either reading refuses.

use std::fmt;

use percent_encoding::percent_decode_str;

use super::{Gpp, SectionBody, TcString, UsPrivacy, UsSection, GPP_MAX_LEN, TCF_MAX_LEN, USP_LEN};

/// The names of the consent cookies this module reads. The page cache counts a request
/// whose only cookies are these (and `ts-ec`) as an anonymous reader's
/// (`cache::shared::Reader::ConsentOnly`).
pub const CONSENT_COOKIES: [&str; 5] = [
    "euconsent-v2",
    "__gpp",
    "__gpp_sid",
    "usprivacy",
    "us_privacy",
];

/// The longest `__gpp_sid` value read (section ids are small; a few dozen fit easily).
const GPP_SID_MAX_LEN: usize = 256;

/// The decoded consent signals of one request.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Signals {
    /// From `euconsent-v2`, else from GPP section 2.
    tcf: Option<TcString>,
    /// The GPP string, its sections narrowed to the applicable ones.
    gpp: Option<Gpp>,
    /// From `usprivacy` / `us_privacy`, else from GPP section 6.
    us_privacy: Option<UsPrivacy>,
    /// `Sec-GPC: 1`.
    gpc: bool,
    /// A consent cookie came twice with different values (see [`Signals::conflicting`]).
    conflicting: bool,
    /// The same signals with `__gpp_sid` ignored, when it set sections of the GPP string
    /// aside (see [`Signals::without_gpp_sid`]).
    whole: Option<Box<Signals>>,
}

impl Signals {
    /// Reads the consent cookies of a raw `Cookie` header (see the module docs) and the
    /// `Sec-GPC: 1` flag.
    pub fn from_cookies(cookie_header: &str, sec_gpc: bool) -> Self {
        let (mut tcf_copies, mut gpp_copies, mut sid_copies) = (Vec::new(), Vec::new(), Vec::new());
        let (mut usp_copies, mut us_privacy_copies) = (Vec::new(), Vec::new());
        for (name, value) in cookies(cookie_header) {
            match name {
                "euconsent-v2" => tcf_copies.push(value),
                "__gpp" => gpp_copies.push(value),
                "__gpp_sid" => sid_copies.push(value),
                "usprivacy" => usp_copies.push(value),
                "us_privacy" => us_privacy_copies.push(value),
                _ => {}
            }
        }
        // `usprivacy` is read before `us_privacy`, whatever their order in the header.
        usp_copies.append(&mut us_privacy_copies);
        let (gpp, gpp_conflict) =
            first_valid(&gpp_copies, |t| Gpp::decode(&decoded(t, GPP_MAX_LEN)?));
        let (sid, sid_conflict) = first_valid(&sid_copies, applicable_sections);
        let (tcf, tcf_conflict) =
            first_valid(&tcf_copies, |t| TcString::decode(&decoded(t, TCF_MAX_LEN)?));
        let (us_privacy, usp_conflict) =
            first_valid(&usp_copies, |t| UsPrivacy::decode(&decoded(t, USP_LEN)?));
        let bare = Self {
            gpc: sec_gpc,
            conflicting: gpp_conflict || sid_conflict || tcf_conflict || usp_conflict,
            ..Self::default()
        };
        // Only a `__gpp_sid` that sets a section aside needs a second, whole reading.
        let sets_aside = match (&gpp, &sid) {
            (Some(gpp), Some(sid)) => gpp.sections.iter().any(|s| !sid.contains(&s.id)),
            _ => false,
        };
        if !sets_aside {
            return bare.with_strings(tcf, gpp, us_privacy);
        }
        let sid = sid.unwrap_or_default();
        let mut narrowed = gpp.clone();
        if let Some(narrowed) = &mut narrowed {
            narrowed.sections.retain(|s| sid.contains(&s.id));
        }
        let whole = bare.clone().with_strings(tcf.clone(), gpp, us_privacy);
        bare.with_strings(tcf, narrowed, us_privacy).keeping(whole)
    }

    /// These signals with the strings read: the cookies' own TC and US Privacy strings, else
    /// the GPP string's sections for them.
    fn with_strings(
        mut self,
        tcf: Option<TcString>,
        gpp: Option<Gpp>,
        us_privacy: Option<UsPrivacy>,
    ) -> Self {
        self.tcf = tcf.or_else(|| gpp.as_ref()?.tcf_eu().cloned());
        self.us_privacy = us_privacy.or_else(|| gpp.as_ref()?.us_privacy().cloned());
        self.gpp = gpp;
        self
    }

    fn keeping(mut self, whole: Self) -> Self {
        self.whole = Some(Box::new(whole));
        self
    }

    /// The same signals read with every section of the GPP string, as if `__gpp_sid` were
    /// absent; `None` when `__gpp_sid` set no section aside (the signals are already whole).
    /// A `__gpp_sid` cookie is not part of the string the reader's CMP signed off, and any page
    /// of the site can plant one: the decision reads both and follows the stricter, so the
    /// cookie can withhold an edge ID but never grant one.
    pub fn without_gpp_sid(&self) -> Option<&Signals> {
        self.whole.as_deref()
    }

    /// The TC string: the `euconsent-v2` cookie's, else GPP's EU TCF section.
    pub fn tcf(&self) -> Option<&TcString> {
        self.tcf.as_ref()
    }

    /// The US Privacy string: the `usprivacy` (or `us_privacy`) cookie's, else GPP's section 6.
    pub fn us_privacy(&self) -> Option<&UsPrivacy> {
        self.us_privacy.as_ref()
    }

    /// The applicable, valid GPP US section with this id (7 national, 8 onward states).
    pub fn us_section(&self, id: u16) -> Option<&UsSection> {
        match self.gpp.as_ref()?.section(id)? {
            SectionBody::Us(us) => Some(us),
            _ => None,
        }
    }

    /// Every applicable, valid GPP US section, in string order.
    pub fn us_sections(&self) -> impl Iterator<Item = &UsSection> {
        self.gpp.iter().flat_map(Gpp::us_sections)
    }

    /// Whether the request carried `Sec-GPC: 1`.
    pub fn gpc(&self) -> bool {
        self.gpc
    }

    /// Whether a consent cookie (`euconsent-v2`, `__gpp`, `__gpp_sid`, or the US Privacy
    /// cookies, `usprivacy` and `us_privacy` together) came more than once with different
    /// values. The first copy is the one read, but which copy a browser sends first is not
    /// the reader's choice alone: a sibling subdomain can set a cookie of the same name on the
    /// parent domain with a longer path, and it is then sent first ("cookie tossing"). So the
    /// decision reads disagreeing copies as no choice it can trust, and refuses.
    pub fn conflicting(&self) -> bool {
        self.conflicting
    }
}

/// A summary: which signals were found, never their text.
impl fmt::Debug for Signals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sections: Vec<u16> = (self.gpp.iter()).flat_map(|g| g.section_ids()).collect();
        let mut d = f.debug_struct("Signals");
        d.field("tcf", &self.tcf.is_some())
            .field("gpp_sections", &sections)
            .field("us_privacy", &self.us_privacy.is_some())
            .field("gpc", &self.gpc);
        if self.conflicting {
            d.field("conflicting", &true);
        }
        if let Some(whole) = &self.whole {
            let all: Vec<u16> = (whole.gpp.iter()).flat_map(|g| g.section_ids()).collect();
            d.field("gpp_sections_without_sid", &all);
        }
        d.finish()
    }
}

/// The `name=value` pairs of a `Cookie` header, every one of them (names trimmed, values
/// trimmed and unquoted). The auction reads the consent strings it forwards with it too, so a
/// bidder gets exactly the value the decision read.
pub(crate) fn cookies(header: &str) -> impl Iterator<Item = (&str, &str)> {
    header.split(';').filter_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        Some((name.trim(), value))
    })
}

/// `value` percent-decoded, when its decoded form can be at most `max` bytes long and is
/// UTF-8; `None` otherwise.
fn decoded(value: &str, max: usize) -> Option<String> {
    // A percent-encoded byte takes three characters: anything longer is over `max` anyway.
    if value.len() > max.saturating_mul(3) {
        return None;
    }
    let text = percent_decode_str(value).decode_utf8().ok()?;
    (text.len() <= max).then(|| text.into_owned())
}

/// The section ids of a `__gpp_sid` value (`2,7`, `7_8`, `-1`); `None` when malformed, so
/// every section applies.
fn applicable_sections(value: &str) -> Option<Vec<u16>> {
    let text = decoded(value, GPP_SID_MAX_LEN)?;
    let mut ids = Vec::new();
    for item in text.split([',', '_']) {
        match item.trim() {
            "-1" => {}
            id => ids.push(id.parse::<u16>().ok()?),
        }
    }
    Some(ids)
}

/// The first of `copies` that `decode` reads (a malformed copy counts as absent), and
/// whether a later one reads as something else.
fn first_valid<T: PartialEq>(
    copies: &[&str],
    decode: impl Fn(&str) -> Option<T>,
) -> (Option<T>, bool) {
    let mut first = None;
    let mut conflict = false;
    for value in copies.iter().filter_map(|c| decode(c)) {
        match &first {
            None => first = Some(value),
            Some(seen) => conflict |= *seen != value,
        }
    }
    (first, conflict)
}

#[cfg(test)]
impl Signals {
    /// Signals holding only `tcf` and `Sec-GPC` (tests build TC strings field by field).
    pub(crate) fn with_tcf(tcf: TcString, gpc: bool) -> Self {
        Self {
            tcf: Some(tcf),
            gpc,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn reads_each_cookie_and_keeps_no_text() {
        let header = format!(
            "a=b; euconsent-v2={TCF_P1_V755}; __gpp={GPP_CA_SALE_OPT_OUT}; usprivacy=1YNN; x"
        );
        let s = Signals::from_cookies(&header, true);
        assert!(s.tcf().unwrap().core.purpose_consents.has(1));
        assert_eq!(s.us_section(8).unwrap().name(), "usca");
        assert_eq!(s.us_privacy().unwrap().opt_out_sale.as_char(), 'N');
        assert!(s.gpc());
        let debug = format!("{s:?}");
        assert_eq!(
            debug,
            "Signals { tcf: true, gpp_sections: [8], us_privacy: true, gpc: true }"
        );
        assert!(!debug.contains(TCF_P1_V755) && !debug.contains("1YNN"));
    }

    #[test]
    fn gpp_sections_fill_in_for_missing_cookies() {
        let s = Signals::from_cookies(&format!("__gpp={GPP_TCF_P1_V755}"), false);
        assert!(s.tcf().unwrap().core.vendor_consents.contains(755));
        let s = Signals::from_cookies(&format!("__gpp={GPP_USP_OPT_OUT}"), false);
        assert_eq!(s.us_privacy().unwrap().opt_out_sale.as_char(), 'Y');
        // The cookie wins over the section.
        let s = Signals::from_cookies(&format!("__gpp={GPP_USP_OPT_OUT}; us_privacy=1YNN"), false);
        assert_eq!(s.us_privacy().unwrap().opt_out_sale.as_char(), 'N');
        // `usprivacy` is read before `us_privacy`, whatever the order.
        let s = Signals::from_cookies("us_privacy=1YNN; usprivacy=1YYN", false);
        assert_eq!(s.us_privacy().unwrap().opt_out_sale.as_char(), 'Y');
    }

    #[test]
    fn gpp_sid_narrows_the_sections() {
        let gpp = GPP_VA_OK_NAT_SALE_OPT_OUT;
        let ids = |sid: &str| {
            let s = Signals::from_cookies(&format!("__gpp={gpp}; __gpp_sid={sid}"), false);
            s.us_sections().map(UsSection::id).collect::<Vec<_>>()
        };
        assert_eq!(ids("7,9"), [7, 9]);
        assert_eq!(ids("9"), [9]);
        assert_eq!(ids("7%2C9"), [7, 9]);
        assert_eq!(ids("7_9"), [7, 9]);
        assert_eq!(ids("-1"), Vec::<u16>::new());
        assert_eq!(ids("2"), Vec::<u16>::new());
        // The whole string's reading is kept whenever the cookie set a section aside.
        let whole = |sid: &str| {
            let s = Signals::from_cookies(&format!("__gpp={gpp}; __gpp_sid={sid}"), false);
            (s.without_gpp_sid()).map(|w| w.us_sections().map(UsSection::id).collect::<Vec<_>>())
        };
        assert_eq!(whole("-1"), Some(vec![7, 9]));
        assert_eq!(whole("9"), Some(vec![7, 9]));
        assert_eq!(whole("7,9"), None);
        assert_eq!(whole("seven"), None);
        // Malformed: ignored, every section applies.
        assert_eq!(ids("seven"), [7, 9]);
        let s = Signals::from_cookies(&format!("__gpp_sid=2; __gpp={GPP_TCF_P1_V755}"), false);
        assert!(s.tcf().is_some());
        let s = Signals::from_cookies(&format!("__gpp_sid=7; __gpp={GPP_TCF_P1_V755}"), false);
        assert!(s.tcf().is_none());
    }

    #[test]
    fn malformed_and_oversized_values_are_no_signal() {
        let long_tcf = format!("{TCF_P1_V755}{}", "A".repeat(TCF_MAX_LEN));
        for header in [
            "euconsent-v2=garbage; __gpp=~~; usprivacy=1yNN",
            "euconsent-v2=; __gpp=; usprivacy=",
            "usprivacy=1YNNN; us_privacy=%ZZ",
            &format!("euconsent-v2={long_tcf}"),
            &format!("euconsent-v2={}", "%41".repeat(TCF_MAX_LEN + 1)),
            &format!("euconsent-v2={}", &TCF_P1_V755[..20]),
        ] {
            let s = Signals::from_cookies(header, false);
            assert_eq!(s, Signals::default(), "{header}");
        }
        // Percent-encoding is undone.
        let s = Signals::from_cookies(
            &format!("euconsent-v2={}", TCF_P1_V755.replace('C', "%43")),
            false,
        );
        assert!(s.tcf().is_some());
        // Quoted values are read.
        let s = Signals::from_cookies("usprivacy=\"1YYN\"", false);
        assert!(s.us_privacy().is_some());
    }

    #[test]
    fn no_amount_of_other_cookies_hides_a_consent_cookie() {
        // Far past any bound a reader could have had (the old one was 16 KiB).
        let filler = format!("pad={}", "x".repeat(64 * 1024));
        let header = format!("{filler}; usprivacy=1YYN; euconsent-v2={TCF_P1_V755}");
        let s = Signals::from_cookies(&header, false);
        assert!(s.tcf().is_some());
        assert_eq!(s.us_privacy().unwrap().opt_out_sale.as_char(), 'Y');
        // A planted consenting copy first, filler, then the reader's own refusal: a conflict.
        let planted =
            format!("euconsent-v2={TCF_P1_V755}; {filler}; euconsent-v2={TCF_NO_CONSENT}");
        assert!(Signals::from_cookies(&planted, false).conflicting());
        // Multi-byte text does not panic.
        let wide = "é".repeat(64 * 1024);
        assert_eq!(Signals::from_cookies(&wide, false), Signals::default());
    }

    #[test]
    fn a_malformed_copy_is_absent_and_disagreeing_valid_copies_conflict() {
        // The malformed first copy does not hide the valid second one.
        let s = Signals::from_cookies(
            &format!("euconsent-v2=x; euconsent-v2={TCF_P1_V755}"),
            false,
        );
        assert!(s.tcf().is_some() && !s.conflicting());
        let same = format!("euconsent-v2={TCF_P1_V755}; euconsent-v2={TCF_P1_V755}");
        assert!(!Signals::from_cookies(&same, false).conflicting());
        for header in [
            format!("euconsent-v2={TCF_P1_V755}; euconsent-v2={TCF_NO_CONSENT}"),
            format!("__gpp={GPP_CA_SALE_OPT_OUT}; __gpp={GPP_CA_NO_OPT_OUT}"),
            "__gpp_sid=8; __gpp_sid=7".to_owned(),
            "usprivacy=1YYN; usprivacy=1NNN".to_owned(),
            "us_privacy=1YYN; usprivacy=1YNN".to_owned(),
        ] {
            let s = Signals::from_cookies(&header, false);
            assert!(s.conflicting(), "{header}");
            assert!(format!("{s:?}").contains("conflicting: true"), "{s:?}");
        }
        // A string's own section and a cookie are two carriers, not two copies.
        let s = Signals::from_cookies(&format!("__gpp={GPP_USP_OPT_OUT}; us_privacy=1YNN"), false);
        assert!(!s.conflicting());
    }

    #[test]
    fn the_first_of_two_cookies_of_a_name_counts() {
        let s = Signals::from_cookies("usprivacy=1YYN; usprivacy=1NNN", false);
        assert_eq!(s.us_privacy().unwrap().opt_out_sale.as_char(), 'Y');
    }
}
