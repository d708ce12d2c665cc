//! Observations as distinct ascending values with counts: block maxima (mostly count 1) and
//! a histogram's tail (value, count) go through the same estimators, and a bootstrap replicate
//! is the same values with other counts.

use super::FitFailure;

/// Distinct finite values, ascending, each with a positive count (a whole number, stored as
/// f64 because the estimators weight by it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observations {
    pub values: Vec<f64>,
    pub counts: Vec<f64>,
}

impl Observations {
    /// From single values; None if one is not finite.
    pub fn from_values(values: &[f64]) -> Option<Observations> {
        Self::from_pairs(values.iter().map(|&v| (v, 1.0)))
    }

    /// From (value, count) pairs in any order; equal values merge, zero counts are dropped;
    /// None if a value with a positive count is not finite.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<Observations> {
        let mut pairs: Vec<(f64, f64)> = pairs.into_iter().filter(|&(_, c)| c > 0.0).collect();
        if pairs.iter().any(|&(v, c)| !v.is_finite() || !c.is_finite()) {
            return None;
        }
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut values: Vec<f64> = Vec::with_capacity(pairs.len());
        let mut counts: Vec<f64> = Vec::with_capacity(pairs.len());
        for (v, c) in pairs {
            match (values.last(), counts.last_mut()) {
                (Some(&last), Some(count)) if last == v => *count += c,
                _ => {
                    values.push(v);
                    counts.push(c);
                }
            }
        }
        Some(Observations { values, counts })
    }

    /// The same values with other counts (a bootstrap replicate, a split); zero counts are
    /// kept (the estimators skip them).
    pub fn with_counts(&self, counts: Vec<f64>) -> Observations {
        Observations { values: self.values.clone(), counts }
    }

    pub fn total(&self) -> f64 {
        self.counts.iter().sum()
    }

    pub fn min(&self) -> Option<f64> {
        self.values.iter().zip(&self.counts).find(|(_, &c)| c > 0.0).map(|(&v, _)| v)
    }

    pub fn max(&self) -> Option<f64> {
        self.values.iter().zip(&self.counts).rev().find(|(_, &c)| c > 0.0).map(|(&v, _)| v)
    }

    /// (value, count) with a positive count, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.values.iter().zip(&self.counts).filter(|(_, &c)| c > 0.0).map(|(&v, &c)| (v, c))
    }

    /// (min, max - min): the center and scale that map the values to [0, 1], so the estimators
    /// work in units where neither 1e15 ns nor 0.001 ns lose precision.
    pub fn unit_range(&self) -> Result<(f64, f64), FitFailure> {
        let (Some(min), Some(max)) = (self.min(), self.max()) else {
            return Err(FitFailure::new("no observations"));
        };
        let range = max - min;
        if !(range > 0.0) || !range.is_finite() {
            return Err(FitFailure::new("all observations are equal"));
        }
        Ok((min, range))
    }

    /// max - threshold, the scale that maps the excesses over `threshold` to (0, 1]; an error
    /// unless every value lies above the threshold.
    pub fn excess_range(&self, threshold: f64) -> Result<f64, FitFailure> {
        let Some(max) = self.max() else {
            return Err(FitFailure::new("no exceedances"));
        };
        let scale = max - threshold;
        if self.min().is_some_and(|min| min <= threshold) || !(scale > 0.0) || !scale.is_finite() {
            return Err(FitFailure::new("the exceedances are not above the threshold"));
        }
        Ok(scale)
    }

    /// The values mapped by x -> (x - center)/scale (scale > 0), counts unchanged.
    pub fn standardized(&self, center: f64, scale: f64) -> Observations {
        let values = self.values.iter().map(|v| (v - center) / scale).collect();
        Observations { values, counts: self.counts.clone() }
    }

    /// The values expanded by count, ascending.
    #[cfg(test)]
    pub fn ranked(&self) -> impl Iterator<Item = f64> + '_ {
        self.iter().flat_map(|(v, c)| std::iter::repeat_n(v, c as usize))
    }
}

/// `count` distinct ranks 1..=n, spaced evenly on a log scale so that the top of a sample keeps
/// every point (rank 1 is the largest) and the bulk is thinned: the figures stay readable.
pub(crate) fn log_spaced_ranks(n: usize, count: usize) -> Vec<usize> {
    if n <= count || count < 2 {
        return (1..=n).collect();
    }
    let mut ranks: Vec<usize> = (0..count)
        .map(|i| ((n as f64).ln() * i as f64 / (count - 1) as f64).exp().round() as usize)
        .map(|r| r.clamp(1, n))
        .collect();
    ranks.dedup();
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_merge_and_sort() {
        let o = Observations::from_pairs([(3.0, 1.0), (1.0, 2.0), (3.0, 4.0), (2.0, 0.0)]).unwrap();
        assert_eq!(o.values, vec![1.0, 3.0]);
        assert_eq!(o.counts, vec![2.0, 5.0]);
        assert_eq!(o.total(), 7.0);
        assert!(Observations::from_values(&[1.0, f64::NAN]).is_none());
        assert_eq!(o.ranked().collect::<Vec<_>>(), vec![1.0, 1.0, 3.0, 3.0, 3.0, 3.0, 3.0]);
    }

    #[test]
    fn log_spaced_ranks_keep_the_top() {
        assert_eq!(log_spaced_ranks(5, 10), vec![1, 2, 3, 4, 5]);
        let r = log_spaced_ranks(100_000, 500);
        assert_eq!(r[..10], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(*r.last().unwrap(), 100_000);
        assert!(r.windows(2).all(|w| w[0] < w[1]));
        assert!(r.len() <= 500);
    }
}
