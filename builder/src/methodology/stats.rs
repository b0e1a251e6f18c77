//! The small statistics the scorecard reports: medians, percentiles and the range of coverage
//! counts a calibrated band would show.

/// The median, the mean of the two middle values for an even count.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The q-th quantile (0..=1) of sorted values, interpolating linearly between order statistics
/// (numpy's default).
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let position = q.clamp(0.0, 1.0) * last as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(last);
    let share = position - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * share)
}

/// The central range of a Binomial(n, p) count holding `mass` of its probability: from the
/// smallest k with P(X <= k) >= (1 - mass)/2 to the smallest k with P(X <= k) >= (1 + mass)/2.
/// A band with true coverage p lands inside it that often, so an observed coverage outside it
/// is evidence of miscalibration, and one inside it is not.
pub fn binomial_central_range(n: usize, p: f64, mass: f64) -> (usize, usize) {
    if n == 0 {
        return (0, 0);
    }
    let (low_tail, high_tail) = ((1.0 - mass) / 2.0, (1.0 + mass) / 2.0);
    let log_n_factorial = libm::lgamma(n as f64 + 1.0);
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let mut cumulative = 0.0;
    let mut low = None;
    for k in 0..=n {
        let (kf, rest) = (k as f64, (n - k) as f64);
        let log_pmf = log_n_factorial - libm::lgamma(kf + 1.0) - libm::lgamma(rest + 1.0) + kf * ln_p + rest * ln_q;
        cumulative += log_pmf.exp();
        if low.is_none() && cumulative >= low_tail {
            low = Some(k);
        }
        if cumulative >= high_tail {
            return (low.unwrap_or(k), k);
        }
    }
    (low.unwrap_or(n), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(Vec::new()), None);
        let sorted = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&sorted, 0.5), Some(3.0));
        assert_eq!(percentile(&sorted, 0.125), Some(1.5));
        assert_eq!(percentile(&sorted, 1.0), Some(5.0));
    }

    #[test]
    fn binomial_range_by_hand() {
        // n = 2, p = 0.5: P(0) = 0.25, P(<=1) = 0.75, P(<=2) = 1. 5% -> 0; 95% -> 2.
        assert_eq!(binomial_central_range(2, 0.5, 0.9), (0, 2));
        // n = 10, p = 0.8: P(X <= 5) = 0.0328, P(X <= 6) = 0.1209 -> 6;
        // P(X <= 9) = 0.8926, P(X <= 10) = 1 -> 10.
        assert_eq!(binomial_central_range(10, 0.8, 0.9), (6, 10));
        // n = 100, p = 0.8: sd 4, the range is close to 80 -/+ 1.645 x 4.
        let (low, high) = binomial_central_range(100, 0.8, 0.9);
        assert!((73..=74).contains(&low) && (86..=87).contains(&high), "{low}..{high}");
    }
}
