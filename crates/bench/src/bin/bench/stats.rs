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

/// The `q` quantile of `v` (`0 < q ≤ 1`) by nearest rank: the smallest sample with at least a
/// share `q` of the samples at or below it. `NaN` when `v` is empty.
pub fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(percentile(&v, 0.95), 19.0);
        assert_eq!(percentile(&v, 0.5), 10.0);
        assert_eq!(percentile(&v, 1.0), 20.0);
        assert_eq!(percentile(&[3.0], 0.95), 3.0);
        assert!(percentile(&[], 0.95).is_nan());
    }
}
