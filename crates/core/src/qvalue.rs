//! RFC 9110 quality values (`;q=0.5`), read the same way wherever a header ranks its elements
//! (`Accept-Encoding` for the script, `Accept` for what counts as a page navigation).

/// The `q` of one list element's parameters (the `;`-separated parts after its value), in
/// thousandths; no `q` parameter means 1. `None`: a parameter is malformed.
pub(crate) fn quality<'a>(params: impl Iterator<Item = &'a str>) -> Option<u16> {
    let mut q = 1000;
    for param in params {
        let (key, value) = param.split_once('=')?;
        if !key.trim().eq_ignore_ascii_case("q") {
            continue;
        }
        q = qvalue(value.trim())?;
    }
    Some(q)
}

/// RFC 9110 `qvalue`: `0[.ddd]` or `1[.000]`, in thousandths.
fn qvalue(text: &str) -> Option<u16> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // The digits after the point, padded to three: "5" is 500, "05" is 50.
    let thousandths = frac
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qvalues_in_thousandths() {
        for (text, want) in [
            ("1", Some(1000)),
            ("1.000", Some(1000)),
            ("0", Some(0)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.123", Some(123)),
            ("1.5", None),
            ("0.1234", None),
            ("2", None),
            ("0.x", None),
            ("", None),
        ] {
            assert_eq!(qvalue(text), want, "{text:?}");
        }
        assert_eq!(quality(["level=1", " Q = 0.8 "].into_iter()), Some(800));
        assert_eq!(quality(std::iter::empty()), Some(1000));
        assert_eq!(quality(["q"].into_iter()), None);
    }
}
