//! How an index weighs its constituents (docs/methodology.md, "Indices"): by value, each weight
//! capped at `WEIGHT_CAP` with what a capped company gives up shared by value among the others;
//! with fewer constituents than the cap allows (fewer than ten at 10%), the cap is 1/n, so they
//! weigh the same. The builder moves an index by these weights and the server shows them beside
//! the constituents; both call this one definition.

/// No constituent weighs more than this (when there are at least 1/cap of them).
pub const WEIGHT_CAP: f64 = 0.10;

/// A sector with fewer companies than this has no index of its own: its companies count in
/// "other".
pub const MIN_SECTOR_COMPANIES: usize = 5;

/// The cap in force for `n` constituents: `WEIGHT_CAP`, or 1/n when that cannot hold.
pub fn cap_for(n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    WEIGHT_CAP.max(1.0 / n as f64)
}

/// How many of the largest values are held at the cap, and the cap: `largest` holds the largest
/// values (descending; as many as can be capped, at most 1/cap of them), `total` the sum of
/// all `n` values. Each capped value weighs `cap`; every other value `v` weighs
/// `v / (total - capped sum) * (1 - capped * cap)`.
pub fn capped(largest: &[f64], total: f64, n: usize) -> (usize, f64) {
    let cap = cap_for(n);
    let mut held = 0;
    let mut rest = total;
    while held < largest.len() && held < n {
        let weight_left = 1.0 - cap * held as f64;
        if rest <= 0.0 || largest[held] / rest * weight_left <= cap {
            break;
        }
        rest -= largest[held];
        held += 1;
    }
    (held, cap)
}

/// The capped weight of each value, in the order given.
pub fn weights(values: &[f64]) -> Vec<f64> {
    let total: f64 = values.iter().sum();
    if total <= 0.0 {
        return vec![0.0; values.len()];
    }
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let largest: Vec<f64> = order.iter().map(|&i| values[i]).collect();
    let (held, cap) = capped(&largest, total, values.len());
    let rest: f64 = total - largest[..held].iter().sum::<f64>();
    let weight_left = 1.0 - cap * held as f64;
    let mut out = vec![0.0; values.len()];
    for (rank, &i) in order.iter().enumerate() {
        out[i] = if rank < held {
            cap
        } else if rest > 0.0 {
            values[i] / rest * weight_left
        } else {
            0.0
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hand() {
        // Twelve companies: one of 50, eleven of 5 (total 105). Uncapped the first weighs 47.6%;
        // capped at 10%, the others share 90% equally: 8.18% each.
        let mut values = vec![50.0];
        values.extend([5.0; 11]);
        let w = weights(&values);
        assert!((w[0] - 0.10).abs() < 1e-12);
        assert!((w[1] - 0.9 / 11.0).abs() < 1e-12);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // Capping one can push the next over: 40, 30, then ten of 1.
        let mut values = vec![40.0, 30.0];
        values.extend([1.0; 10]);
        let w = weights(&values);
        assert!((w[0] - 0.1).abs() < 1e-12 && (w[1] - 0.1).abs() < 1e-12, "{w:?}");
        assert!((w[2] - 0.08).abs() < 1e-12);
        // Fewer than ten: the cap is 1/n, so a dominant one cannot weigh more than the rest.
        let w = weights(&[10.0, 1.0, 1.0]);
        assert!(w.iter().all(|x| (x - 1.0 / 3.0).abs() < 1e-12), "{w:?}");
        // Nothing above the cap: plain value weights.
        let w = weights(&[1.0; 20]);
        assert!(w.iter().all(|x| (x - 0.05).abs() < 1e-12));
    }
}
