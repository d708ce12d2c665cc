//! Lock-free progress counters published by a sampling thread.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// Values a sampling thread publishes with relaxed single-writer stores (no read-modify-
/// write, no lock) and the progress display reads. Aligned to a cache line so threads on
/// different CPUs do not share one.
#[repr(align(64))]
#[derive(Debug)]
pub struct LiveStats {
    pub cpu: usize,
    count: AtomicU64,
    overruns: AtomicU64,
    lost: AtomicU64,
    min: AtomicI64,
    max: AtomicI64,
    sum: AtomicI64,
}

/// A consistent-enough copy of [`LiveStats`] for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSnapshot {
    pub cpu: usize,
    pub count: u64,
    pub overruns: u64,
    pub lost: u64,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub mean: Option<i64>,
}

impl LiveStats {
    pub fn new(cpu: usize) -> Self {
        Self {
            cpu,
            count: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            min: AtomicI64::new(i64::MAX),
            max: AtomicI64::new(i64::MIN),
            sum: AtomicI64::new(0),
        }
    }

    /// Called by the sampling thread after each sample.
    #[inline]
    pub fn publish(&self, count: u64, overruns: u64, lost: u64, min: i64, max: i64, sum: i64) {
        self.count.store(count, Relaxed);
        self.overruns.store(overruns, Relaxed);
        self.lost.store(lost, Relaxed);
        self.min.store(min, Relaxed);
        self.max.store(max, Relaxed);
        self.sum.store(sum, Relaxed);
    }

    pub fn snapshot(&self) -> LiveSnapshot {
        let count = self.count.load(Relaxed);
        let some = |v| (count > 0).then_some(v);
        LiveSnapshot {
            cpu: self.cpu,
            count,
            overruns: self.overruns.load(Relaxed),
            lost: self.lost.load(Relaxed),
            min: some(self.min.load(Relaxed)),
            max: some(self.max.load(Relaxed)),
            mean: some(self.sum.load(Relaxed) / count.max(1) as i64),
        }
    }
}
