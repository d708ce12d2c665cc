//! `memory`: allocate, touch and free memory at a rate (OSADL's memory load).
//!
//! Each chunk is allocated zeroed and then touched one byte per 4 KiB page, so the work is
//! the kernel's: a page fault, a page taken from the allocator and zeroed, and on free an
//! munmap that returns it. Chunks default to 64 MiB, above glibc's largest dynamic mmap
//! threshold (32 MiB), so every chunk is a fresh mmap rather than reused heap memory.

use crate::worker::{stop_started, Pacer, Workers};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub const NAME: &str = "memory";

const PAGE: usize = 4096;
/// Pages touched between two looks at the stop flag and the pacer.
const BATCH: u64 = 256;

/// Parameters of [`MemoryLoad`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryParams {
    /// MB (10^6 bytes) touched per second; None = as fast as possible.
    pub rate_mb_s: Option<f64>,
    /// Size of each allocation, in MiB.
    pub chunk_mib: u64,
}

impl Default for MemoryParams {
    fn default() -> Self {
        Self { rate_mb_s: None, chunk_mib: 64 }
    }
}

#[derive(Default)]
struct Counters {
    pages: AtomicU64,
    chunks: AtomicU64,
    minor_faults: AtomicU64,
}

/// Allocates, touches and frees memory.
pub struct MemoryLoad {
    params: MemoryParams,
    counters: Arc<Counters>,
    workers: Option<Workers>,
}

impl MemoryLoad {
    pub fn new(params: MemoryParams) -> Result<Self, LoadError> {
        if let Some(rate) = params.rate_mb_s {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(LoadError::config(NAME, format!("rate must be a positive number of MB/s, not {rate}")));
            }
        }
        if params.chunk_mib == 0 || params.chunk_mib > 64 << 10 {
            return Err(LoadError::config(
                NAME,
                format!("chunk size must be 1 MiB to 64 GiB, not {}", params.chunk_mib),
            ));
        }
        Ok(Self { params, counters: Arc::default(), workers: None })
    }
}

/// Minor page faults of the calling thread so far (field 10 of /proc/thread-self/stat).
fn thread_minor_faults() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name in parentheses: state is field 3, minflt field 10.
    text.rsplit_once(')')?.1.split_whitespace().nth(7)?.parse().ok()
}

impl Load for MemoryLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let mut workers = Workers::new(NAME);
        let chunk_bytes = (self.params.chunk_mib as usize) << 20;
        let pages_per_s = self.params.rate_mb_s.map(|r| r * 1e6 / PAGE as f64);
        let counters = self.counters.clone();
        workers.mark_start();
        workers.spawn("load-memory".into(), None, move |stop| {
            let faults_before = thread_minor_faults();
            let pacer = Pacer::new(pages_per_s);
            let mut done = 0u64;
            'chunks: while !stop.load(Ordering::Relaxed) {
                let mut chunk = vec![0u8; chunk_bytes];
                counters.chunks.fetch_add(1, Ordering::Relaxed);
                let mut page = 0;
                while page < chunk_bytes {
                    if stop.load(Ordering::Relaxed) {
                        break 'chunks;
                    }
                    let batch = pacer.allowance(done, BATCH);
                    let mut touched = 0;
                    while touched < batch && page < chunk_bytes {
                        chunk[page] = 1;
                        page += PAGE;
                        touched += 1;
                    }
                    done += touched;
                    counters.pages.fetch_add(touched, Ordering::Relaxed);
                }
                std::hint::black_box(&mut chunk);
            }
            if let (Some(before), Some(after)) = (faults_before, thread_minor_faults()) {
                counters.minor_faults.store(after.saturating_sub(before), Ordering::Relaxed);
            }
            Ok(())
        })?;
        self.workers = Some(workers);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let stopped = stop_started(&mut self.workers, NAME)?;
        let c = &self.counters;
        let d = stopped.duration_s;
        let pages = c.pages.load(Ordering::Relaxed);
        Ok(stopped.into_report(
            NAME,
            serde_json::to_value(&self.params).unwrap_or_default(),
            vec![
                Intensity::new("MB/s touched", per_second(mb(pages * PAGE as u64), d), "MB/s"),
                Intensity::new(
                    "allocations/s",
                    per_second(c.chunks.load(Ordering::Relaxed) as f64, d),
                    "allocations/s",
                ),
                Intensity::new(
                    "minor page faults/s",
                    per_second(c.minor_faults.load(Ordering::Relaxed) as f64, d),
                    "faults/s",
                ),
            ],
        ))
    }

    fn check_alive(&mut self) -> Option<String> {
        self.workers.as_ref().and_then(Workers::failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{positive, run_for};
    use std::time::Duration;

    #[test]
    fn touches_fresh_pages() {
        let mut load = MemoryLoad::new(MemoryParams::default()).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        positive(&report, "MB/s touched");
        positive(&report, "allocations/s");
        // Fresh mmap'd chunks: touching them faults (THP may make it one fault per 2 MiB).
        positive(&report, "minor page faults/s");
    }

    #[test]
    fn keeps_a_rate() {
        let mut load = MemoryLoad::new(MemoryParams { rate_mb_s: Some(20.0), chunk_mib: 4 }).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        let rate = positive(&report, "MB/s touched");
        assert!(rate < 20.0 * 1.3, "{report:?}");
    }

    #[test]
    fn rejects_bad_rates() {
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = MemoryLoad::new(MemoryParams { rate_mb_s: Some(rate), ..Default::default() }).err().unwrap();
            assert!(err.is_usage_error(), "{err}");
        }
    }
}
