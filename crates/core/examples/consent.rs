//! Decodes consent strings from stdin and prints what the decoders read, one JSON line each.
//!
//! Each input line is `<kind>\t<string>`, kind `tcf`, `gpp` or `usp`; the output line is
//! `null` when the string is no valid signal, else an object whose field names follow the
//! IAB reference libraries (`@iabtechlabtcf/core`'s `TCModel`, `@iabgpp/cmpapi`'s section
//! fields), so the differential test in `tests/consent/` compares them field by field.

use std::io::{BufRead, BufWriter, Write};

use serde_json::{json, Map, Value};
use trusted_server_core::consent::{
    Flags, Gpp, SectionBody, TcString, UsPrivacy, UsSection, VendorSet,
};

/// Two 6-bit letter codes as `@iabtechlabtcf/core` shows them: `A` + code, upper-cased (codes
/// past `Z` only occur in damaged strings).
fn letters(l: [u8; 2]) -> String {
    l.iter()
        .map(|&c| char::from(b'A' + c).to_ascii_uppercase())
        .collect()
}

fn flags(f: Flags) -> Value {
    json!(f.iter().collect::<Vec<_>>())
}

fn vendors(v: &VendorSet) -> Value {
    json!(v.iter().collect::<Vec<_>>())
}

fn tcf(tc: &TcString) -> Value {
    let c = &tc.core;
    let restrictions: Vec<Value> = c
        .publisher_restrictions
        .iter()
        .map(|r| {
            let ids: Vec<u32> = r
                .vendors
                .iter()
                .flat_map(|&(a, b)| u32::from(a)..=u32::from(b))
                .collect();
            json!({"purposeId": r.purpose_id, "restrictionType": r.restriction_type.code(), "vendors": ids})
        })
        .collect();
    json!({
        "version": c.version,
        "created": c.created_ds * 100,
        "lastUpdated": c.last_updated_ds * 100,
        "cmpId": c.cmp_id,
        "cmpVersion": c.cmp_version,
        "consentScreen": c.consent_screen,
        "consentLanguage": letters(c.consent_language),
        "vendorListVersion": c.vendor_list_version,
        "policyVersion": c.policy_version,
        "isServiceSpecific": c.is_service_specific,
        "useNonStandardTexts": c.use_non_standard_texts,
        "specialFeatureOptins": flags(c.special_feature_optins),
        "purposeConsents": flags(c.purpose_consents),
        "purposeLegitimateInterests": flags(c.purpose_legitimate_interests),
        "purposeOneTreatment": c.purpose_one_treatment,
        "publisherCountryCode": letters(c.publisher_cc),
        "vendorConsents": vendors(&c.vendor_consents),
        "vendorLegitimateInterests": vendors(&c.vendor_legitimate_interests),
        "publisherRestrictions": restrictions,
        "vendorsDisclosed": tc.disclosed_vendors.as_ref().map(vendors),
        "vendorsAllowed": tc.allowed_vendors.as_ref().map(vendors),
        "publisherTC": tc.publisher_tc.map(|p| json!({
            "publisherConsents": flags(p.purpose_consents),
            "publisherLegitimateInterests": flags(p.purpose_legitimate_interests),
            "numCustomPurposes": p.num_custom_purposes,
            "publisherCustomConsents": flags(p.custom_purpose_consents),
            "publisherCustomLegitimateInterests": flags(p.custom_purpose_legitimate_interests),
        })),
    })
}

fn usp(u: &UsPrivacy) -> Value {
    json!({
        "Version": u.version,
        "Notice": u.notice.as_char().to_string(),
        "OptOutSale": u.opt_out_sale.as_char().to_string(),
        "LspaCovered": u.lspa_covered.as_char().to_string(),
    })
}

fn us(s: &UsSection) -> Value {
    let mut m = Map::new();
    m.insert(s.version_field_name().into(), json!(s.version()));
    for name in s.field_names().skip(1) {
        let values = s.field(name).unwrap_or(&[]);
        // A list field (always two or more values) stays a list; a 2-bit field is a number.
        let value = match values {
            [v] => json!(v),
            _ => json!(values),
        };
        m.insert(name.into(), value);
    }
    if s.has_gpc_field() {
        m.insert("GpcSegmentIncluded".into(), json!(s.gpc().is_some()));
        if let (Some(t), Some(g)) = (s.gpc_segment_type(), s.gpc()) {
            m.insert("GpcSegmentType".into(), json!(t));
            m.insert("Gpc".into(), json!(g));
        }
    }
    if s.field("SensitiveDataProcessing").is_none() {
        m.insert(
            "SensitiveDataConsentSegmentIncluded".into(),
            json!(s.has_sensitive_data_segment()),
        );
        if let Some(list) = s.sensitive_data_processing() {
            m.insert("SensitiveDataProcessing".into(), json!(list));
        }
    }
    m.insert(
        "_derived".into(),
        json!({
            "saleOptOut": s.sale_opt_out().map(|o| format!("{o:?}")),
            "sharingOptOut": s.sharing_opt_out().map(|o| format!("{o:?}")),
            "targetedAdvertisingOptOut": s.targeted_advertising_opt_out().map(|o| format!("{o:?}")),
            "knownChild": s.known_child_sensitive_data_consents(),
            "gpc": s.gpc(),
        }),
    );
    Value::Object(m)
}

fn gpp(g: &Gpp) -> Value {
    let mut sections = Map::new();
    for section in &g.sections {
        let (key, value) = match &section.body {
            SectionBody::TcfEu(tc) => ("tcfeuv2".to_string(), tcf(tc)),
            SectionBody::UsPrivacy(u) => ("uspv1".to_string(), usp(u)),
            SectionBody::Us(s) => (s.name().to_string(), us(s)),
            SectionBody::Unsupported => (section.id.to_string(), json!("unsupported")),
            SectionBody::Malformed => (section.id.to_string(), json!("malformed")),
        };
        sections.insert(key, value);
    }
    json!({
        "version": g.version,
        "sectionIds": g.section_ids().collect::<Vec<_>>(),
        "sections": sections,
    })
}

fn main() {
    let stdin = std::io::stdin();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let (kind, text) = line.split_once('\t').unwrap_or((line.as_str(), ""));
        let value = match kind {
            "tcf" => TcString::decode(text).as_ref().map(tcf),
            "gpp" => Gpp::decode(text).as_ref().map(gpp),
            "usp" => UsPrivacy::decode(text).as_ref().map(usp),
            _ => {
                eprintln!("consent: unknown kind {kind:?} (tcf, gpp or usp)");
                std::process::exit(2);
            }
        };
        let _ = writeln!(out, "{}", value.unwrap_or(Value::Null));
    }
}
