//! Company-clustered bootstrap of the difference between two forecasters' errors on one score,
//! so a reader can tell a real improvement from a tie. Events of one company are not
//! independent (one company's long silence makes several large errors), so whole companies
//! are resampled with replacement, never single events.
//!
//! Deterministic: a fixed seed, and each draw its own ChaCha stream, so the intervals are the
//! same bytes whatever the thread count.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::methodology::round_to;
use crate::methodology::stats::percentile;

/// Draws of the published intervals.
pub const DRAWS: usize = 1000;
/// Seed of the published intervals; fixed so every build of one dataset says the same thing.
pub const SEED: u64 = 20_221_111;

/// One company's errors for forecasters A (index 0) and B (index 1).
#[derive(Clone, Debug, Default)]
pub struct ClusterErrors {
    /// |ln observed - forecast| at each scored target.
    pub abs_log_errors: Vec<[f64; 2]>,
}

/// One figure's difference A - B, with its bootstrap interval.
#[derive(Clone, Debug, Serialize)]
pub struct Difference {
    pub figure: &'static str,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// A - B on the whole sample (negative: A's error is smaller).
    pub difference: Option<f64>,
    /// 2.5th and 97.5th percentiles of A - B over the draws.
    pub interval_95: Option<[f64; 2]>,
    /// "a_better", "b_better" or "tie": whether the interval excludes 0, and on which side.
    pub verdict: &'static str,
}

/// The errors of every event of the drawn companies, for one forecaster, with the per-company
/// sums that make a draw's means O(companies).
struct Pooled {
    /// All |log errors|, sorted, and the company each came from.
    sorted_companies: Vec<u32>,
    sorted_values: Vec<f64>,
    abs_log_sum: Vec<f64>,
}

impl Pooled {
    fn new(clusters: &[ClusterErrors], side: usize) -> Pooled {
        let mut all: Vec<(f64, u32)> = clusters
            .iter()
            .enumerate()
            .flat_map(|(c, cluster)| cluster.abs_log_errors.iter().map(move |e| (e[side], c as u32)))
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        Pooled {
            sorted_companies: all.iter().map(|e| e.1).collect(),
            sorted_values: all.iter().map(|e| e.0).collect(),
            abs_log_sum: clusters
                .iter()
                .map(|c| c.abs_log_errors.iter().map(|e| e[side]).sum())
                .collect(),
        }
    }

    /// The median of the multiset in which company c's errors appear `counts[c]` times.
    fn weighted_median(&self, counts: &[u32], total: u64) -> Option<f64> {
        if total == 0 {
            return None;
        }
        // 1-based ranks of the middle value(s).
        let (low_rank, high_rank) = if total % 2 == 1 {
            (total.div_ceil(2), total.div_ceil(2))
        } else {
            (total / 2, total / 2 + 1)
        };
        let mut cumulative = 0u64;
        let mut low = None;
        for (i, &company) in self.sorted_companies.iter().enumerate() {
            cumulative += u64::from(counts[company as usize]);
            if low.is_none() && cumulative >= low_rank {
                low = Some(self.sorted_values[i]);
            }
            if cumulative >= high_rank {
                return low.map(|low| (low + self.sorted_values[i]) / 2.0);
            }
        }
        None
    }
}

/// The figures of one draw (or of the sample, with every count 1), in `FIGURES` order, for A
/// and B: median and mean |log error|.
fn figures(a: &Pooled, b: &Pooled, clusters: &[ClusterErrors], counts: &[u32]) -> [[Option<f64>; 2]; 2] {
    let targets: u64 = clusters
        .iter()
        .zip(counts)
        .map(|(c, &k)| u64::from(k) * c.abs_log_errors.len() as u64)
        .sum();
    let mean = |pooled: &Pooled| -> Option<f64> {
        (targets > 0).then(|| {
            counts
                .iter()
                .zip(&pooled.abs_log_sum)
                .map(|(&k, sum)| sum * f64::from(k))
                .sum::<f64>()
                / targets as f64
        })
    };
    [
        [a.weighted_median(counts, targets), b.weighted_median(counts, targets)],
        [mean(a), mean(b)],
    ]
}

const FIGURES: [&str; 2] = ["median_abs_log_error", "mean_abs_log_error"];

/// A - B for each of the figures (`FIGURES`), each with its 95% interval over `draws` resamples of the
/// companies.
pub fn compare(clusters: &[ClusterErrors], draws: usize, seed: u64) -> Vec<Difference> {
    let (a, b) = (Pooled::new(clusters, 0), Pooled::new(clusters, 1));
    let whole = figures(&a, &b, clusters, &vec![1; clusters.len()]);
    let resampled: Vec<[Option<f64>; 2]> = (0..draws)
        .into_par_iter()
        .map(|draw| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(draw as u64);
            let mut counts = vec![0u32; clusters.len()];
            for _ in 0..clusters.len() {
                counts[rng.gen_range(0..clusters.len())] += 1;
            }
            let f = figures(&a, &b, clusters, &counts);
            f.map(|[a, b]| a.zip(b).map(|(a, b)| a - b))
        })
        .collect();
    FIGURES
        .iter()
        .enumerate()
        .map(|(i, &figure)| {
            let mut values: Vec<f64> = resampled.iter().filter_map(|d| d[i]).collect();
            values.sort_by(f64::total_cmp);
            let interval = percentile(&values, 0.025).zip(percentile(&values, 0.975));
            let verdict = match interval {
                Some((_, high)) if high < 0.0 => "a_better",
                Some((low, _)) if low > 0.0 => "b_better",
                _ => "tie",
            };
            let [fa, fb] = whole[i];
            // Four decimals: far below what 1,000 draws can resolve, and readable.
            let round = |v: f64| round_to(v, 4);
            Difference {
                figure,
                a: fa.map(round),
                b: fb.map(round),
                difference: fa.zip(fb).map(|(a, b)| round(a - b)),
                interval_95: interval.map(|(low, high)| [round(low), round(high)]),
                verdict,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(errors: &[(f64, f64)]) -> ClusterErrors {
        ClusterErrors {
            abs_log_errors: errors.iter().map(|&(a, b)| [a, b]).collect(),
        }
    }

    #[test]
    fn weighted_median_counts_each_company_as_often_as_it_was_drawn() {
        let clusters = [cluster(&[(1.0, 0.0), (5.0, 0.0)]), cluster(&[(2.0, 0.0)])];
        let a = Pooled::new(&clusters, 0);
        // {1, 5, 2}: median 2.
        assert_eq!(a.weighted_median(&[1, 1], 3), Some(2.0));
        // {1, 5, 1, 5}: median 3.
        assert_eq!(a.weighted_median(&[2, 0], 4), Some(3.0));
        // {2, 2, 2, 1, 5}: median 2.
        assert_eq!(a.weighted_median(&[1, 3], 5), Some(2.0));
    }

    #[test]
    fn a_uniformly_smaller_error_is_significant_and_a_coin_flip_is_a_tie() {
        let better: Vec<ClusterErrors> = (0..40).map(|i| cluster(&[(0.1 + 0.001 * i as f64, 0.5)])).collect();
        let differences = compare(&better, 200, 1);
        let figure = |name: &str| differences.iter().find(|d| d.figure == name).unwrap();
        assert_eq!(figure("median_abs_log_error").verdict, "a_better");
        assert_eq!(figure("mean_abs_log_error").verdict, "a_better");
        assert!(compare(&[], 200, 1)
            .iter()
            .all(|d| d.verdict == "tie" && d.interval_95.is_none()));
        let mixed: Vec<ClusterErrors> = (0..40)
            .map(|i| {
                if i % 2 == 0 {
                    cluster(&[(0.2, 0.4)])
                } else {
                    cluster(&[(0.4, 0.2)])
                }
            })
            .collect();
        assert!(compare(&mixed, 200, 1).iter().all(|d| d.verdict == "tie"));
        // Same seed, same intervals.
        let again = compare(&better, 200, 1);
        assert_eq!(again[0].interval_95, differences[0].interval_95);
    }
}
