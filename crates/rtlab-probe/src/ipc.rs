//! The ipc probes (`ipc:eventfd`, `ipc:pipe`, `ipc:futex`, `ipc:mqueue`, `ipc:signal`), the
//! family of rt-tests' pmqtest, ptsematest and sigwaittest: a lower-priority trigger
//! timestamps and signals through the mechanism; the real-time receiver records its
//! wake-up latency as `ipc:<mechanism>.latency`. One loop; one small piece per mechanism.

use crate::live::LiveStats;
use crate::{Probe, ProbeError, ProbeOutput, Sampling, Stimulus};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// rt-tests' default interval of 1 ms.
pub const DEFAULT_RATE_HZ: f64 = 1_000.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Eventfd,
    Pipe,
    Futex,
    Mqueue,
    Signal,
}

impl Mechanism {
    pub const ALL: [Mechanism; 5] =
        [Mechanism::Eventfd, Mechanism::Pipe, Mechanism::Futex, Mechanism::Mqueue, Mechanism::Signal];

    /// "eventfd", as in the probe name `ipc:eventfd`.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Eventfd => "eventfd",
            Mechanism::Pipe => "pipe",
            Mechanism::Futex => "futex",
            Mechanism::Mqueue => "mqueue",
            Mechanism::Signal => "signal",
        }
    }

    /// The probe name, `ipc:eventfd`.
    pub fn probe_name(self) -> &'static str {
        match self {
            Mechanism::Eventfd => "ipc:eventfd",
            Mechanism::Pipe => "ipc:pipe",
            Mechanism::Futex => "ipc:futex",
            Mechanism::Mqueue => "ipc:mqueue",
            Mechanism::Signal => "ipc:signal",
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }
}

#[derive(Debug, Clone)]
pub struct IpcConfig {
    pub mechanism: Mechanism,
    pub stimulus: Stimulus,
    pub sampling: Sampling,
    /// Prefix of the metric names: the probe name (`ipc:futex`), or "sweep".
    pub name: &'static str,
}

pub struct IpcProbe {
    #[allow(dead_code)]
    config: IpcConfig,
    live: Arc<LiveStats>,
}

impl IpcProbe {
    /// Sets the mechanism up (fails with [`ProbeError::Unavailable`] when the host lacks it).
    pub fn new(config: IpcConfig) -> Result<Self, ProbeError> {
        let live = Arc::new(LiveStats::new(config.stimulus.receiver_cpu));
        Ok(Self { config, live })
    }
}

impl Probe for IpcProbe {
    fn name(&self) -> &'static str {
        self.config.name
    }
    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.live.clone()]
    }
    fn run(self: Box<Self>, _stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        Err(ProbeError::Config("the ipc probe is not implemented yet".into()))
    }
}
