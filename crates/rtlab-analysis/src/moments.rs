use serde::{Deserialize, Serialize};

/// Exact running moments of integer samples (ns). `record` is a handful of integer
/// operations, cheap enough for the real-time loop; i128/u128 keep sums exact for any
/// run length and any value up to the histogram maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moments {
    pub count: u64,
    pub min: i64,
    pub max: i64,
    pub sum: i128,
    pub sum_of_squares: u128,
}

impl Default for Moments {
    fn default() -> Self {
        Self::new()
    }
}

impl Moments {
    pub const fn new() -> Self {
        Self { count: 0, min: i64::MAX, max: i64::MIN, sum: 0, sum_of_squares: 0 }
    }

    #[inline]
    pub fn record(&mut self, value: i64) {
        self.count += 1;
        if value < self.min {
            self.min = value;
        }
        if value > self.max {
            self.max = value;
        }
        self.sum += value as i128;
        let magnitude = value.unsigned_abs() as u128;
        self.sum_of_squares += magnitude * magnitude;
    }

    /// Records `count` samples of one value (imports of bucketed sources). The caller keeps
    /// values and counts small enough for exact sums (imports bound both).
    pub fn record_n(&mut self, value: i64, count: u64) {
        if count == 0 {
            return;
        }
        self.count += count;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.sum += value as i128 * count as i128;
        let magnitude = value.unsigned_abs() as u128;
        self.sum_of_squares += magnitude * magnitude * count as u128;
    }

    pub fn merge(&mut self, other: &Moments) {
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_of_squares += other.sum_of_squares;
    }

    pub fn min(&self) -> Option<i64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max)
    }

    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// Population standard deviation (divides by n), computed from exact integer sums.
    pub fn stddev(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let n = self.count as i128;
        // n * sum(x^2) - (sum x)^2 is exact in i128 for realistic runs; fall back to f64
        // arithmetic if it would overflow.
        let exact =
            (self.sum_of_squares as i128).checked_mul(n).and_then(|a| self.sum.checked_mul(self.sum).map(|b| a - b));
        let variance = match exact {
            Some(numerator) => numerator.max(0) as f64 / (n as f64 * n as f64),
            None => {
                let mean = self.sum as f64 / n as f64;
                (self.sum_of_squares as f64 / n as f64 - mean * mean).max(0.0)
            }
        };
        Some(variance.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn empty_has_no_statistics() {
        let m = Moments::new();
        assert_eq!(m.min(), None);
        assert_eq!(m.mean(), None);
        assert_eq!(m.stddev(), None);
    }

    #[test]
    fn known_values() {
        let mut m = Moments::new();
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            m.record(v);
        }
        assert_eq!(m.min(), Some(2));
        assert_eq!(m.max(), Some(9));
        assert_eq!(m.mean(), Some(5.0));
        assert_eq!(m.stddev(), Some(2.0));
    }

    proptest! {
        #[test]
        fn merge_equals_recording_everything(a in proptest::collection::vec(-1_000_000i64..10_000_000_000, 1..200),
                                             b in proptest::collection::vec(-1_000_000i64..10_000_000_000, 1..200)) {
            let mut left = Moments::new();
            a.iter().for_each(|&v| left.record(v));
            let mut right = Moments::new();
            b.iter().for_each(|&v| right.record(v));
            let mut all = Moments::new();
            a.iter().chain(b.iter()).for_each(|&v| all.record(v));
            left.merge(&right);
            prop_assert_eq!(left, all);
        }

        #[test]
        fn stddev_matches_two_pass(values in proptest::collection::vec(0i64..10_000_000_000, 1..300)) {
            let mut m = Moments::new();
            values.iter().for_each(|&v| m.record(v));
            let n = values.len() as f64;
            let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
            let var = values.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
            let got = m.stddev().unwrap();
            prop_assert!((got - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0), "{} vs {}", got, var.sqrt());
        }
    }
}
