//! The net probe (Regnier et al. 2008, experiment 1): a trigger thread sends UDP datagrams
//! at a set rate carrying its send time; a real-time receiver blocks in `recvmsg` on a
//! socket with kernel receive timestamps. Metrics per event: `net.delivery` (send to kernel
//! receive), `net.activation` (kernel receive to the task running, Regnier's L_act, the main
//! metric) and `net.latency` (send to task running, the stimulus-to-response time).

use crate::live::LiveStats;
use crate::{Probe, ProbeError, ProbeOutput, Sampling, Stimulus};
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Regnier's 20 Hz.
pub const DEFAULT_RATE_HZ: f64 = 20.0;

#[derive(Debug, Clone)]
pub struct NetConfig {
    pub stimulus: Stimulus,
    pub sampling: Sampling,
    /// Receiver address (default 127.0.0.1).
    pub bind: Option<IpAddr>,
    /// Interface to receive on (SO_BINDTODEVICE; hardware timestamps where it has them).
    pub interface: Option<String>,
    /// Prefix of the metric names: "net", or "sweep" when the sweep probe runs it.
    pub name: &'static str,
}

pub struct NetProbe {
    #[allow(dead_code)]
    config: NetConfig,
    live: Arc<LiveStats>,
}

impl NetProbe {
    /// Opens and configures the sockets (fails with [`ProbeError::Unavailable`] when the
    /// host cannot timestamp received datagrams).
    pub fn new(config: NetConfig) -> Result<Self, ProbeError> {
        let live = Arc::new(LiveStats::new(config.stimulus.receiver_cpu));
        Ok(Self { config, live })
    }
}

impl Probe for NetProbe {
    fn name(&self) -> &'static str {
        self.config.name
    }
    fn live(&self) -> Vec<Arc<LiveStats>> {
        vec![self.live.clone()]
    }
    fn run(self: Box<Self>, _stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        Err(ProbeError::Config("the net probe is not implemented yet".into()))
    }
}
