//! Price buckets: the `hb_pb` targeting value of a bid, by Prebid's price granularities.
//!
//! A publisher's ad server has one line item per price bucket, so a bid's price is rounded down
//! to the bucket its line item targets. Prebid.js and Prebid Server agree on five named
//! granularities and a custom one; the bucket string must be exactly what Prebid.js computes,
//! or a bid matches no line item (or a cheaper one). The rules, as Prebid.js 11.36.0's
//! `src/cpmBucketManager.js` applies them (`getPriceBucketString`, which the differential test
//! in `tests/auction/` runs against [`Granularity::bucket`]):
//!
//! * A granularity is a list of ranges, each a `max` and an `increment`, and a `precision`
//!   (decimals printed; 2 unless a custom granularity says otherwise). A range starts where the
//!   previous one ends (the first at 0) and includes its `max`: a price exactly on a boundary
//!   belongs to the lower range.
//! * A price above the last range's `max` is that `max` (the cap). A negative price or NaN has
//!   no bucket: the empty string. Zero and −0 are `0.00`; infinity is the cap.
//! * Within a range starting at `min`, the bucket is `floor((cpm·p − min·p) / (increment·p)) ·
//!   increment + min` with `p = 10^(precision + 2)` (scaling first keeps `4.01 / 0.01` from
//!   flooring to 400), rounded to 10 decimals (so `0.1 · 3` is `0.3`), then printed with
//!   `precision` decimals as JavaScript's `toFixed` prints: from the exact binary value, halves
//!   rounded up. Float artefacts survive this: a price one unit in the last place below a
//!   bucket can land in it (`0.3 − 2⁻⁵⁴` is `0.30`), as it does in Prebid.js.
//!
//! A custom granularity is read as Prebid Server reads `ext.prebid.targeting.pricegranularity`:
//! `{"precision": 2, "ranges": [{"max": 5, "increment": 0.05}, ...]}`, with `max` strictly
//! ascending, every `increment` positive, and any `min` ignored (Prebid Server ignores it too).
//! Tighter than Prebid Server, so that every price stays a plain decimal and no step can
//! overflow: at most [`MAX_RANGES`] ranges, precision at most 6, `max` at most 10⁹ and
//! `increment` at least 10⁻⁶.

use serde_json::{Map, Value};

/// At most this many ranges in a custom granularity.
const MAX_RANGES: usize = 64;
/// The most decimals a bucket may print.
const MAX_PRECISION: u8 = 6;
/// Prebid's precision when none is given.
const DEFAULT_PRECISION: u8 = 2;
/// The highest `max` a custom range may have: keeps `cpm · 10^(precision + 2)` far from
/// overflow and every bucket a plain decimal (JavaScript prints numbers from 10²¹ in exponent
/// form).
const MAX_PRICE: f64 = 1e9;
/// The smallest `increment` a custom range may have (one step of the finest precision): keeps
/// the number of steps finite.
const MIN_INCREMENT: f64 = 1e-6;

/// `10^(precision + 2)` for precisions 0 to [`MAX_PRECISION`], as literals (each exact).
const SCALE: [f64; MAX_PRECISION as usize + 1] = [1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];

/// One range of a granularity: prices above the previous range's `max` (or 0) up to and
/// including `max` are rounded down to a multiple of `increment` above that start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceRange {
    /// The range's top, included.
    pub max: f64,
    /// The bucket step within the range.
    pub increment: f64,
}

const fn range(max: f64, increment: f64) -> PriceRange {
    PriceRange { max, increment }
}

const LOW: &[PriceRange] = &[range(5.0, 0.5)];
const MEDIUM: &[PriceRange] = &[range(20.0, 0.1)];
const HIGH: &[PriceRange] = &[range(20.0, 0.01)];
const AUTO: &[PriceRange] = &[range(5.0, 0.05), range(10.0, 0.1), range(20.0, 0.5)];
const DENSE: &[PriceRange] = &[range(3.0, 0.01), range(8.0, 0.05), range(20.0, 0.5)];

/// A custom granularity: validated ranges and a precision.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomGranularity {
    precision: u8,
    ranges: Vec<PriceRange>,
}

impl CustomGranularity {
    /// Checks and keeps `ranges` (1 to 64, `max` strictly ascending from above 0 up to 10⁹,
    /// each `increment` from 10⁻⁶, all finite) and `precision` (0 to 6 decimals).
    pub fn new(precision: u8, ranges: Vec<PriceRange>) -> Result<Self, String> {
        if precision > MAX_PRECISION {
            return Err(format!(
                "price granularity: precision {precision} is not supported (0 to {MAX_PRECISION})"
            ));
        }
        if ranges.is_empty() {
            return Err("price granularity: \"ranges\" is empty".into());
        }
        if ranges.len() > MAX_RANGES {
            return Err(format!(
                "price granularity: {} ranges, at most {MAX_RANGES} are allowed",
                ranges.len()
            ));
        }
        let mut previous = 0.0;
        for (i, r) in ranges.iter().enumerate() {
            if r.max.is_nan() || r.max <= previous {
                return Err(format!(
                    "price granularity: ranges[{i}].max ({}) must be greater than {previous} \
                     (the ranges ascend from 0)",
                    r.max
                ));
            }
            if r.max > MAX_PRICE {
                return Err(format!(
                    "price granularity: ranges[{i}].max ({}) is above {MAX_PRICE}",
                    r.max
                ));
            }
            if !r.increment.is_finite() || r.increment < MIN_INCREMENT {
                return Err(format!(
                    "price granularity: ranges[{i}].increment ({}) must be a finite number \
                     from {MIN_INCREMENT}",
                    r.increment
                ));
            }
            previous = r.max;
        }
        Ok(CustomGranularity { precision, ranges })
    }

    /// Decimals printed.
    pub fn precision(&self) -> u8 {
        self.precision
    }

    /// The ranges, ascending.
    pub fn ranges(&self) -> &[PriceRange] {
        &self.ranges
    }
}

/// A price granularity: how a bid's price becomes its `hb_pb` bucket.
///
/// ```
/// use trusted_server_core::auction::Granularity;
///
/// let g = Granularity::from_openrtb(&serde_json::json!("auto")).unwrap();
/// assert_eq!(g.bucket(1.37), "1.35");
/// assert_eq!(g.bucket(25.0), "20.00");
/// assert_eq!(g.bucket(-1.0), "");
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Granularity {
    /// $0.50 steps up to $5.
    Low,
    /// $0.10 steps up to $20; the default of Prebid.js and Prebid Server.
    #[default]
    Medium,
    /// $0.01 steps up to $20.
    High,
    /// $0.05 steps up to $5, $0.10 to $10, $0.50 to $20.
    Auto,
    /// $0.01 steps up to $3, $0.05 to $8, $0.50 to $20.
    Dense,
    /// The publisher's own ranges and precision.
    Custom(CustomGranularity),
}

impl Granularity {
    /// Reads `ext.prebid.targeting.pricegranularity`: a name (`low`, `med` or `medium`, `high`,
    /// `auto`, `dense`, in any case) or an object `{"precision": 2, "ranges": [{"max": 5,
    /// "increment": 0.05}, ...]}` (precision optional, 2 by default; see
    /// [`CustomGranularity::new`] for the bounds). The error says what is wrong, for
    /// `ext.errors`.
    pub fn from_openrtb(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(name) => Self::from_name(name),
            Value::Object(object) => Self::from_object(object),
            _ => Err(
                "price granularity: expected a name (low, medium, high, auto, dense) or \
                      an object with \"ranges\""
                    .into(),
            ),
        }
    }

    fn from_name(name: &str) -> Result<Self, String> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "low" => Granularity::Low,
            "med" | "medium" => Granularity::Medium,
            "high" => Granularity::High,
            "auto" => Granularity::Auto,
            "dense" => Granularity::Dense,
            _ => {
                let shown: String = name.chars().take(32).collect();
                return Err(format!(
                    "price granularity: unknown name {shown:?} (low, medium, high, auto or dense)"
                ));
            }
        })
    }

    fn from_object(object: &Map<String, Value>) -> Result<Self, String> {
        let precision = match object.get("precision") {
            None | Some(Value::Null) => DEFAULT_PRECISION,
            Some(p) => p
                .as_u64()
                .filter(|&p| p <= u64::from(MAX_PRECISION))
                .and_then(|p| u8::try_from(p).ok())
                .ok_or_else(|| {
                    format!(
                        "price granularity: precision must be an integer from 0 to \
                         {MAX_PRECISION}, not {}",
                        shorten(p)
                    )
                })?,
        };
        let list = match object.get("ranges") {
            Some(Value::Array(list)) => list,
            Some(other) => {
                return Err(format!(
                    "price granularity: \"ranges\" must be a list, not {}",
                    shorten(other)
                ))
            }
            None => return Err("price granularity: \"ranges\" is missing".into()),
        };
        if list.len() > MAX_RANGES {
            return Err(format!(
                "price granularity: {} ranges, at most {MAX_RANGES} are allowed",
                list.len()
            ));
        }
        let mut ranges = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let number = |key: &str| {
                item.get(key)
                    .and_then(Value::as_f64)
                    .ok_or_else(|| format!("price granularity: ranges[{i}].{key} must be a number"))
            };
            ranges.push(PriceRange {
                max: number("max")?,
                increment: number("increment")?,
            });
        }
        CustomGranularity::new(precision, ranges).map(Granularity::Custom)
    }

    /// The ranges and the precision.
    fn parts(&self) -> (&[PriceRange], u8) {
        match self {
            Granularity::Low => (LOW, DEFAULT_PRECISION),
            Granularity::Medium => (MEDIUM, DEFAULT_PRECISION),
            Granularity::High => (HIGH, DEFAULT_PRECISION),
            Granularity::Auto => (AUTO, DEFAULT_PRECISION),
            Granularity::Dense => (DENSE, DEFAULT_PRECISION),
            Granularity::Custom(c) => (&c.ranges, c.precision),
        }
    }

    /// The `hb_pb` bucket of a bid priced `cpm`, exactly as Prebid.js's
    /// `getPriceBucketString(cpm, …)` gives it: `precision` decimals, capped at the top
    /// range's `max`, and empty for a negative price or NaN. Never panics.
    pub fn bucket(&self, cpm: f64) -> String {
        let (ranges, precision) = self.parts();
        let Some(top) = ranges.last() else {
            return String::new();
        };
        if cpm.is_nan() {
            return String::new();
        }
        if cpm > top.max {
            return to_fixed(top.max, precision.into());
        }
        let mut min = 0.0;
        for r in ranges {
            if cpm <= r.max && cpm >= min {
                return floor_to_step(cpm, min, r.increment, precision);
            }
            min = r.max;
        }
        // Below 0.
        String::new()
    }
}

/// `cpm` rounded down to `min` plus a multiple of `increment`, printed with `precision`
/// decimals, in Prebid.js's order of operations (every step an IEEE double operation, as in
/// JavaScript, so the artefacts are the same).
fn floor_to_step(cpm: f64, min: f64, increment: f64, precision: u8) -> String {
    let scale = SCALE[usize::from(precision.min(MAX_PRECISION))];
    let steps = (cpm * scale - min * scale) / (increment * scale);
    let bucket = steps.floor() * increment + min;
    // `Number(bucket.toFixed(10))`: the nearest double to the 10-decimal text.
    let bucket = to_fixed(bucket, 10).parse().unwrap_or(bucket);
    to_fixed(bucket, precision.into())
}

/// JavaScript's `Number.prototype.toFixed(digits)` for numbers below 10²¹: the decimal with
/// `digits` decimals nearest to the exact binary value of `x`, a tie going away from zero
/// (Rust's `{:.N}` breaks ties to even, so it is only used where it is exact).
fn to_fixed(x: f64, digits: usize) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // `toFixed` of −0 has no sign.
    let sign = if x < 0.0 { "-" } else { "" };
    let x = x.abs();
    let exact = exact_decimals(x);
    if exact <= digits {
        return format!("{sign}{x:.digits$}");
    }
    // Every decimal of the binary value (more than `digits` of them), then rounded half up by
    // hand.
    let full = format!("{x:.exact$}");
    let (int, frac) = full.split_once('.').unwrap_or((full.as_str(), ""));
    let frac = frac.as_bytes();
    let mut kept: Vec<u8> = int.bytes().collect();
    kept.extend((0..digits).map(|i| frac.get(i).copied().unwrap_or(b'0')));
    if frac.get(digits).is_some_and(|&d| d >= b'5') {
        let mut carried = true;
        for d in kept.iter_mut().rev() {
            if *d == b'9' {
                *d = b'0';
            } else {
                *d += 1;
                carried = false;
                break;
            }
        }
        if carried {
            kept.insert(0, b'1');
        }
    }
    let point = kept.len().saturating_sub(digits);
    let mut out = String::with_capacity(kept.len() + 2);
    out.push_str(sign);
    out.extend(kept[..point].iter().map(|&b| char::from(b)));
    if digits > 0 {
        out.push('.');
        out.extend(kept[point..].iter().map(|&b| char::from(b)));
    }
    out
}

/// How many decimals the exact value of a finite, non-negative `x` has (`m · 2^e` with `m` odd
/// has `-e` of them when `e < 0`): at most 1074.
fn exact_decimals(x: f64) -> usize {
    if x == 0.0 {
        return 0;
    }
    let bits = x.to_bits();
    let biased = i32::try_from((bits >> 52) & 0x7ff).unwrap_or(0);
    let fraction = bits & ((1u64 << 52) - 1);
    let (mantissa, exponent) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), biased - 1075)
    };
    let exponent = exponent + i32::try_from(mantissa.trailing_zeros()).unwrap_or(0);
    if exponent >= 0 {
        0
    } else {
        usize::try_from(exponent.unsigned_abs()).unwrap_or(0)
    }
}

/// A JSON value for an error message, at most 32 characters of it.
fn shorten(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(32) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn named(name: &str) -> Granularity {
        Granularity::from_openrtb(&json!(name)).unwrap()
    }

    fn custom(value: Value) -> Granularity {
        Granularity::from_openrtb(&value).unwrap()
    }

    #[test]
    fn prebid_documented_example() {
        // Prebid's own example: a $1.37 bid in each granularity.
        assert_eq!(named("low").bucket(1.37), "1.00");
        assert_eq!(named("medium").bucket(1.37), "1.30");
        assert_eq!(named("high").bucket(1.37), "1.37");
        assert_eq!(named("auto").bucket(1.37), "1.35");
        assert_eq!(named("dense").bucket(1.37), "1.37");
    }

    #[test]
    fn caps_at_the_top() {
        assert_eq!(named("low").bucket(5.01), "5.00");
        assert_eq!(named("low").bucket(1000.0), "5.00");
        assert_eq!(named("medium").bucket(20.0), "20.00");
        assert_eq!(named("medium").bucket(19.999), "19.90");
        assert_eq!(named("high").bucket(19.999), "19.99");
        assert_eq!(named("high").bucket(f64::INFINITY), "20.00");
        assert_eq!(named("auto").bucket(20.5), "20.00");
        assert_eq!(named("dense").bucket(1e300), "20.00");
    }

    #[test]
    fn dense_and_auto_ranges() {
        let dense = named("dense");
        assert_eq!(dense.bucket(2.99), "2.99");
        assert_eq!(dense.bucket(3.0), "3.00");
        assert_eq!(dense.bucket(3.07), "3.05");
        assert_eq!(dense.bucket(7.99), "7.95");
        assert_eq!(dense.bucket(8.0), "8.00");
        assert_eq!(dense.bucket(8.49), "8.00");
        assert_eq!(dense.bucket(19.99), "19.50");
        let auto = named("auto");
        assert_eq!(auto.bucket(4.99), "4.95");
        assert_eq!(auto.bucket(5.0), "5.00");
        assert_eq!(auto.bucket(9.99), "9.90");
        assert_eq!(auto.bucket(10.0), "10.00");
        assert_eq!(auto.bucket(10.49), "10.00");
    }

    #[test]
    fn empty_zero_and_artefacts() {
        for g in ["low", "medium", "high", "auto", "dense"].map(named) {
            assert_eq!(g.bucket(-0.01), "");
            assert_eq!(g.bucket(f64::NAN), "");
            assert_eq!(g.bucket(f64::NEG_INFINITY), "");
            assert_eq!(g.bucket(0.0), "0.00");
            assert_eq!(g.bucket(-0.0), "0.00");
            assert_eq!(g.bucket(f64::MIN_POSITIVE), "0.00");
        }
        // Scaling before the floor: 4.01 / 0.01 alone is 400.99999999999994.
        assert_eq!(named("high").bucket(4.01), "4.01");
        assert_eq!(named("medium").bucket(0.1 + 0.2), "0.30");
        assert_eq!(named("high").bucket(2.675), "2.67");
    }

    #[test]
    fn custom_precision_and_ties() {
        let g = custom(json!({"precision": 3, "ranges": [{"max": 1, "increment": 0.125}]}));
        // 0.125 · 5 = 0.625 exactly: `toFixed` rounds a tie up, Rust's `{:.2}` would not.
        assert_eq!(g.bucket(0.7), "0.625");
        let g = custom(json!({"precision": 2, "ranges": [{"max": 1, "increment": 0.125}]}));
        assert_eq!(g.bucket(0.7), "0.63");
        assert_eq!(g.bucket(0.2), "0.13");
        let g = custom(json!({"precision": 0, "ranges": [{"max": 10, "increment": 2.5}]}));
        assert_eq!(g.bucket(2.6), "3");
        assert_eq!(g.bucket(11.0), "10");
        // `min` is ignored: each range starts at the previous one's max.
        let g = custom(json!({"ranges": [
            {"max": 5, "increment": 1},
            {"min": 7, "max": 10, "increment": 2}
        ]}));
        assert_eq!(g.bucket(5.5), "5.00");
        assert_eq!(g.bucket(7.5), "7.00");
        assert_eq!(g.bucket(5.0), "5.00");
    }

    #[test]
    fn to_fixed_is_javascripts() {
        assert_eq!(to_fixed(0.0, 2), "0.00");
        assert_eq!(to_fixed(-0.0, 2), "0.00");
        assert_eq!(to_fixed(1.005, 2), "1.00"); // 1.00499999999999989...
        assert_eq!(to_fixed(0.125, 2), "0.13");
        assert_eq!(to_fixed(2.5, 0), "3");
        assert_eq!(to_fixed(9.995, 2), "9.99"); // 9.9949999999999992...
        assert_eq!(to_fixed(9.9951, 2), "10.00");
        assert_eq!(to_fixed(0.000_488_281_25, 10), "0.0004882813");
        assert_eq!(to_fixed(-1.5, 0), "-2");
        assert_eq!(to_fixed(20.0, 6), "20.000000");
        assert_eq!(to_fixed(f64::NAN, 2), "NaN");
        assert_eq!(to_fixed(5e-324, 3), "0.000");
    }

    #[test]
    fn names_in_any_case() {
        assert_eq!(named("LOW"), Granularity::Low);
        assert_eq!(named("Med"), Granularity::Medium);
        assert_eq!(named("Medium"), Granularity::Medium);
        assert_eq!(named("hIgH"), Granularity::High);
        assert_eq!(named("AUTO"), Granularity::Auto);
        assert_eq!(named("dense"), Granularity::Dense);
        assert_eq!(Granularity::default(), Granularity::Medium);
    }

    #[test]
    fn refusals_say_why() {
        let err = |v: Value| Granularity::from_openrtb(&v).unwrap_err();
        assert!(err(json!("fine")).contains("unknown name \"fine\""));
        assert!(err(json!(2)).contains("expected a name"));
        assert!(err(json!({})).contains("\"ranges\" is missing"));
        assert!(err(json!({"ranges": []})).contains("empty"));
        assert!(err(json!({"ranges": {}})).contains("must be a list"));
        let one = json!({"max": 1, "increment": 0.1});
        assert!(err(json!({"ranges": vec![one.clone(); 65]})).contains("at most 64"));
        assert!(err(json!({"precision": 7, "ranges": [one]})).contains("precision"));
        assert!(err(json!({"precision": -1, "ranges": [one]})).contains("precision"));
        assert!(err(json!({"precision": 2.5, "ranges": [one]})).contains("precision"));
        assert!(err(json!({"ranges": [{"max": 1}]})).contains("ranges[0].increment"));
        assert!(err(json!({"ranges": [{"max": "5", "increment": 1}]})).contains("ranges[0].max"));
        assert!(err(json!({"ranges": [{"max": 0, "increment": 1}]})).contains("greater than 0"));
        assert!(err(json!({"ranges": [{"max": 5, "increment": 0}]})).contains("increment"));
        assert!(err(json!({"ranges": [{"max": 5, "increment": -1}]})).contains("increment"));
        assert!(err(json!({"ranges": [{"max": 5, "increment": 1e-7}]})).contains("increment"));
        assert!(err(json!({"ranges": [{"max": 2e9, "increment": 1}]})).contains("above"));
        let unordered = json!({"ranges": [{"max": 5, "increment": 1}, {"max": 5, "increment": 1}]});
        assert!(err(unordered).contains("ranges[1].max"));
        // Through the constructor too, where NaN can reach it.
        assert!(CustomGranularity::new(2, vec![range(f64::NAN, 1.0)]).is_err());
        assert!(CustomGranularity::new(2, vec![range(1.0, f64::NAN)]).is_err());
        assert!(CustomGranularity::new(2, vec![range(1.0, f64::INFINITY)]).is_err());
        assert!(CustomGranularity::new(2, vec![range(1.0, 0.5)]).is_ok());
        assert!(CustomGranularity::new(7, vec![range(1.0, 0.5)]).is_err());
    }

    fn granularities() -> Vec<Granularity> {
        let mut all: Vec<Granularity> = ["low", "medium", "high", "auto", "dense"]
            .map(named)
            .to_vec();
        all.push(custom(json!({"precision": 3, "ranges": [
            {"max": 1, "increment": 0.125},
            {"max": 2.5, "increment": 0.003},
            {"max": 100, "increment": 7}
        ]})));
        all.push(custom(
            json!({"precision": 0, "ranges": [{"max": 1000, "increment": 5}]}),
        ));
        all.push(custom(json!({"precision": 6, "ranges": [
            {"max": 0.01, "increment": 0.000001},
            {"max": 1e9, "increment": 1e6}
        ]})));
        all
    }

    fn any_cpm() -> impl Strategy<Value = f64> {
        prop_oneof![
            0.0f64..30.0,
            -1.0f64..1.0,
            0.0f64..2e9,
            (0u32..3000).prop_map(|c| f64::from(c) / 100.0),
            any::<f64>(),
        ]
    }

    fn value(bucket: &str) -> f64 {
        bucket.parse().unwrap()
    }

    proptest! {
        /// Any f64 gives a bucket without panicking; no bucket for negatives and NaN, a
        /// number with `precision` decimals otherwise.
        #[test]
        fn any_price_has_a_well_formed_bucket(cpm in any_cpm()) {
            for g in granularities() {
                let b = g.bucket(cpm);
                let (_, precision) = g.parts();
                if cpm.is_nan() || cpm < 0.0 {
                    prop_assert_eq!(b, "");
                } else {
                    let decimals = b.split_once('.').map_or(0, |(_, f)| f.len());
                    prop_assert_eq!(decimals, usize::from(precision), "{}", b);
                    prop_assert!(b.bytes().all(|c| c.is_ascii_digit() || c == b'.'), "{}", b);
                }
            }
        }

        /// A higher price never gets a lower bucket.
        #[test]
        fn monotone(a in any_cpm(), b in any_cpm()) {
            prop_assume!(a >= 0.0 && b >= 0.0);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            for g in granularities() {
                prop_assert!(value(&g.bucket(lo)) <= value(&g.bucket(hi)), "{:?} {} {}", g, lo, hi);
            }
        }

        /// The bucket is the price rounded down: never above it (but for the float artefacts
        /// Prebid.js has too, far below a cent), and within one increment below it unless
        /// the price is above the cap.
        #[test]
        fn rounds_down_by_less_than_a_step(cpm in any_cpm()) {
            prop_assume!(cpm >= 0.0 && cpm.is_finite());
            for g in granularities() {
                let (ranges, _) = g.parts();
                let top = ranges[ranges.len() - 1].max;
                let b = value(&g.bucket(cpm));
                prop_assert!(b <= cpm + 1e-9 * cpm.max(1.0), "{:?} {} -> {}", g, cpm, b);
                if cpm <= top {
                    let step = ranges.iter().find(|r| cpm <= r.max).map_or(0.0, |r| r.increment);
                    // The printed precision can round a step's multiple by half a last digit.
                    prop_assert!(b > cpm - step - 1e-6 * cpm.max(1.0), "{:?} {} -> {}", g, cpm, b);
                } else {
                    prop_assert_eq!(b, top);
                }
            }
        }
    }
}
