//! The jitter probe (Dodiu et al. 2010, Table 1): the timer probe at a list of periods, one
//! after another, each for its share of the budget. Metrics `jitter.jitter` (period jitter
//! |s[i+1] - (s[i] + kT)|, the main metric) and `jitter.latency`, one thread output per
//! period and CPU, each with the detail `period_ns`.

use crate::live::LiveStats;
use crate::timer::TimerConfig;
use crate::{Budget, Probe, ProbeError, ProbeOutput};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Dodiu's periods (µs): 300, 500, 1000, 2000, 5000, 10000.
pub const DEFAULT_PERIODS_NS: [u64; 6] = [300_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000];

#[derive(Debug, Clone)]
pub struct JitterConfig {
    pub periods_ns: Vec<u64>,
    /// Shared by the periods (a duration is split equally; a sample count applies to each).
    pub budget: Budget,
    /// Everything else of the timer probe; its `interval_ns`, `end` and `name` are set per
    /// period.
    pub timer: TimerConfig,
}

pub struct JitterProbe {
    #[allow(dead_code)]
    config: JitterConfig,
    live: Vec<Arc<LiveStats>>,
}

impl JitterProbe {
    pub fn new(config: JitterConfig) -> Result<Self, ProbeError> {
        let live = config.timer.cpus.iter().map(|&cpu| Arc::new(LiveStats::new(cpu))).collect();
        Ok(Self { config, live })
    }
}

impl Probe for JitterProbe {
    fn name(&self) -> &'static str {
        "jitter"
    }
    fn live(&self) -> Vec<Arc<LiveStats>> {
        self.live.clone()
    }
    fn run(self: Box<Self>, _stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        Err(ProbeError::Config("the jitter probe is not implemented yet".into()))
    }
}
