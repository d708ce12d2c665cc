//! The switch probe (Dodiu et al. 2010 Table 3; Xenomai switchtest; RTAI `switches`): on one
//! CPU a low-priority task makes a blocked high-priority task runnable and the
//! high-priority task records when it runs: the task-switch time, per sample, through a
//! futex (`switch.futex`, the main metric) and a POSIX semaphore (`switch.sem`); plus the
//! RTAI figure: N back-to-back switches, total time, time per switch.

use crate::live::LiveStats;
use crate::{Probe, ProbeError, ProbeOutput, Sampling, Stimulus};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub const DEFAULT_RATE_HZ: f64 = 1_000.0;
/// Back-to-back switches of the RTAI-style figure, per variant.
pub const DEFAULT_BURST_SWITCHES: u64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchVariant {
    Futex,
    Semaphore,
}

#[derive(Debug, Clone)]
pub struct SwitchConfig {
    /// Both tasks run on `stimulus.receiver_cpu`; `trigger_cpu` is ignored.
    pub stimulus: Stimulus,
    /// Shared by the variants (a duration is split equally).
    pub sampling: Sampling,
    pub variants: Vec<SwitchVariant>,
    pub burst_switches: u64,
}

pub struct SwitchProbe {
    #[allow(dead_code)]
    config: SwitchConfig,
    live: Arc<LiveStats>,
}

impl SwitchProbe {
    pub fn new(config: SwitchConfig) -> Result<Self, ProbeError> {
        let live = Arc::new(LiveStats::new(config.stimulus.receiver_cpu));
        Ok(Self { config, live })
    }
}

impl Probe for SwitchProbe {
    fn name(&self) -> &'static str {
        "switch"
    }
    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.live.clone()]
    }
    fn run(self: Box<Self>, _stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        Err(ProbeError::Config("the switch probe is not implemented yet".into()))
    }
}
