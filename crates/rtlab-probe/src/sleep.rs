//! The sleep probe (Dankwardt 2002): relative `nanosleep(D)` (default 50 ms), N samples
//! (default 1000), the first two discarded as in the paper; metric `sleep.overshoot` =
//! measured sleep - requested, per sample, kept in order for the per-sample plot.

use crate::live::LiveStats;
use crate::{Probe, ProbeError, ProbeOutput, Sampling};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub const DEFAULT_REQUEST_NS: u64 = 50_000_000;
pub const DEFAULT_SAMPLES: u64 = 1_000;
/// The paper discards the first two samples (cold cache).
pub const DISCARDED: u64 = 2;

#[derive(Debug, Clone)]
pub struct SleepConfig {
    pub cpu: usize,
    pub request_ns: u64,
    /// Samples taken (recorded = taken - `discard`), or a duration.
    pub sampling: Sampling,
    pub discard: u64,
}

pub struct SleepProbe {
    #[allow(dead_code)]
    config: SleepConfig,
    live: Arc<LiveStats>,
}

impl SleepProbe {
    pub fn new(config: SleepConfig) -> Result<Self, ProbeError> {
        let live = Arc::new(LiveStats::new(config.cpu));
        Ok(Self { config, live })
    }
}

impl Probe for SleepProbe {
    fn name(&self) -> &'static str {
        "sleep"
    }
    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.live.clone()]
    }
    fn run(self: Box<Self>, _stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        Err(ProbeError::Config("the sleep probe is not implemented yet".into()))
    }
}
