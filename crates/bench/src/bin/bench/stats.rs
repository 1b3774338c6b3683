//! Plain statistics over samples, shared by the report and the chart.

/// The median of `v` (the upper one of the two middle values for an even count); `NaN` when
/// `v` is empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The geometric mean of `v` (the mean for ratios); `1` when `v` is empty.
pub fn geometric_mean(v: &[f64]) -> f64 {
    (v.iter().map(|r| r.ln()).sum::<f64>() / v.len().max(1) as f64).exp()
}
