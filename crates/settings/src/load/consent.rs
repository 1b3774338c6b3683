//! `[consent]`: which locations fall under which consent rule, the TCF purposes an opt-in
//! reader must consent to, and the partners' TCF vendor IDs.

use std::borrow::Cow;

use serde::Deserialize;
use toml::{Table, Value};

use super::publisher::is_host;
use super::values::{shown, Composite, Flag, Named, OneOf};
use super::{Context, LoadError, Section};
use crate::{Consent, ConsentRule, PartnerVendor, Settings, Text};

/// `[consent]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct ConsentFile {
    opt_in_countries: Option<Composite>,
    opt_out_regions: Option<Composite>,
    unknown: Option<OneOf<ConsentRule>>,
    purposes: Option<Composite>,
    publisher_segment: Option<Flag>,
    gpc_refuses_opt_in: Option<Flag>,
    partner_vendors: Option<Composite>,
}

impl Named for ConsentRule {
    fn all() -> &'static [Self] {
        &ConsentRule::ALL
    }
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl Section for ConsentFile {
    type Valid = Consent;

    fn validate(self, cx: &mut Context<'_>) -> Result<Consent, LoadError> {
        let d = Settings::DEFAULT.consent;
        let countries = "consent.opt_in_countries";
        let regions = "consent.opt_out_regions";
        Ok(Consent {
            opt_in_countries: codes(cx, countries, self.opt_in_countries, is_country)?
                .map_or(d.opt_in_countries, Cow::Owned),
            opt_out_regions: codes(cx, regions, self.opt_out_regions, is_us_region)?
                .map_or(d.opt_out_regions, Cow::Owned),
            unknown: self.unknown.map_or(d.unknown, |u| u.0),
            purposes: purposes(cx, self.purposes)?.map_or(d.purposes, Cow::Owned),
            publisher_segment: self.publisher_segment.map_or(d.publisher_segment, |f| f.0),
            gpc_refuses_opt_in: (self.gpc_refuses_opt_in).map_or(d.gpc_refuses_opt_in, |f| f.0),
            partner_vendors: Cow::Owned(partner_vendors(cx, self.partner_vendors)?),
        })
    }
}

/// Two upper-case ASCII letters (ISO 3166-1 alpha-2).
fn is_country(code: &str) -> bool {
    code.len() == 2 && code.bytes().all(|b| b.is_ascii_uppercase())
}

/// `US-` and two upper-case ASCII letters (ISO 3166-2 for a US state).
fn is_us_region(code: &str) -> bool {
    code.strip_prefix("US-").is_some_and(is_country)
}

/// An array of codes of the form `valid` accepts, each once, in the order written; `None`
/// when unset. An empty list is allowed: it names no location.
fn codes(
    cx: &Context<'_>,
    key: &str,
    value: Option<Composite>,
    valid: fn(&str) -> bool,
) -> Result<Option<Vec<Text>>, LoadError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let Value::Array(items) = value.0 else {
        return Err(cx.error(key, "expected an array of codes"));
    };
    let form = if key.ends_with("regions") {
        "\"US-\" and a state's two upper-case letters, like \"US-CA\""
    } else {
        "two upper-case letters (ISO 3166-1 alpha-2), like \"DE\""
    };
    let mut out: Vec<Text> = Vec::new();
    for item in items {
        match item {
            Value::String(code) if valid(&code) => {
                if let Some(problem) = not_a_place(key, &code) {
                    return Err(cx.error(key, &problem));
                }
                if !out.iter().any(|c| *c == code) {
                    out.push(Cow::Owned(code));
                }
            }
            other => {
                let problem = format!("{} is not a code: expected {form}", shown(&other));
                return Err(cx.error(key, &problem));
            }
        }
    }
    Ok(Some(out))
}

/// Why a well-formed code in `key` can never match a reader: a placeholder (no reader is
/// placed there: they are unknown) or an alias (readers reported with it are read as the code
/// it stands for). `None` for a code that names a place.
fn not_a_place(key: &str, code: &str) -> Option<String> {
    let country = code.strip_prefix("US-").map_or(code, |_| "US");
    if crate::country::is_placeholder(country) {
        return Some(format!(
            "\"{code}\" names no country (geolocation reports it for an unknown or larger place, \
             and such readers fall under consent.unknown): list the countries themselves"
        ));
    }
    let iso = crate::country::iso_code(country);
    (iso != country && key.ends_with("countries"))
        .then(|| format!("\"{code}\" is read as \"{iso}\" (ISO 3166-1): write \"{iso}\""))
}

/// `consent.purposes`: TCF purposes 1 to 24, at least one, ascending, each once.
fn purposes(cx: &Context<'_>, value: Option<Composite>) -> Result<Option<Vec<u8>>, LoadError> {
    let key = "consent.purposes";
    let Some(value) = value else {
        return Ok(None);
    };
    let Value::Array(items) = value.0 else {
        return Err(cx.error(key, "expected an array of TCF purpose numbers"));
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::Integer(n @ 1..=24) => out.push(n as u8),
            other => {
                let problem = format!("{} is not a TCF purpose (1 to 24)", shown(&other));
                return Err(cx.error(key, &problem));
            }
        }
    }
    if out.is_empty() {
        // An empty list would let any valid TC string through, consent or not.
        return Err(cx.error(key, "name at least one TCF purpose, e.g. [1]"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(Some(out))
}

/// `consent.partner_vendors`: `"domain" = vendor ID`, domains lowercase without a trailing
/// dot, sorted, each once; IDs 1 to 65535.
fn partner_vendors(
    cx: &Context<'_>,
    value: Option<Composite>,
) -> Result<Vec<PartnerVendor>, LoadError> {
    let key = "consent.partner_vendors";
    let entries = match value.map(|c| c.0) {
        None => Table::new(),
        Some(Value::Table(t)) => t,
        Some(_) => return Err(cx.error(key, "expected a table of \"domain\" = vendor ID")),
    };
    let mut out: Vec<PartnerVendor> = Vec::new();
    for (domain, id) in entries {
        let lower = domain.to_ascii_lowercase();
        let name = lower.strip_suffix('.').unwrap_or(&lower);
        let numeric =
            (name.rsplit('.').next()).is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
        if !is_host(name) || numeric || !name.contains('.') {
            let problem = format!("{domain:?} is not a domain name of two labels or more");
            return Err(cx.error(key, &problem));
        }
        let vendor_id = match &id {
            Value::Integer(n) => u16::try_from(*n).ok().filter(|&n| n != 0),
            _ => None,
        };
        let Some(vendor_id) = vendor_id else {
            let problem = format!(
                "{domain:?} = {}: expected a TCF vendor ID (1 to 65535)",
                shown(&id)
            );
            return Err(cx.error(key, &problem));
        };
        if out.iter().any(|p| p.domain == name) {
            let problem = format!("{domain:?} is listed twice");
            return Err(cx.error(key, &problem));
        }
        out.push(PartnerVendor {
            domain: Cow::Owned(name.to_owned()),
            vendor_id,
        });
    }
    out.sort_by(|a, b| a.domain.cmp(&b.domain));
    Ok(out)
}
