//! The sweep probe (Dodiu et al. 2010, Table 2): a stimulus probe (`net` or an `ipc`
//! mechanism) repeated over a list of stimulus rates, each for its share of the budget.
//! Its metrics are the swept probe's under the prefix `sweep` (`sweep.latency`, the
//! stimulus-to-task-running time, is the main one); each rate's thread output carries the
//! details `rate_hz` and `stimulus` (the swept probe).

use crate::ipc::{IpcConfig, IpcProbe};
use crate::live::LiveStats;
use crate::net::{NetConfig, NetProbe};
use crate::{rate_tag, Budget, Detail, Probe, ProbeError, ProbeOutput};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Dodiu's stimulus frequencies (Hz).
pub const DEFAULT_RATES_HZ: [f64; 6] = [500.0, 800.0, 1_000.0, 5_000.0, 8_000.0, 10_000.0];

/// The probe swept, configured for its first rate (the rate and budget are set per step).
#[derive(Debug, Clone)]
pub enum SweptProbe {
    Net(NetConfig),
    Ipc(IpcConfig),
}

impl SweptProbe {
    /// The swept probe's name: "net", "ipc:eventfd".
    pub fn probe_name(&self) -> &'static str {
        match self {
            SweptProbe::Net(_) => "net",
            SweptProbe::Ipc(c) => c.mechanism.probe_name(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct SweepConfig {
    pub rates_hz: Vec<f64>,
    /// Shared by the rates (a duration is split equally; a sample count applies to each).
    pub budget: Budget,
    pub swept: SweptProbe,
}

pub struct SweepProbe {
    stimulus: &'static str,
    /// One prepared probe per rate, in order: every step is allocated and its mechanism set
    /// up before the first sample, so a missing mechanism fails before sampling.
    steps: Vec<(f64, Box<dyn Probe>)>,
}

impl SweepProbe {
    pub fn new(config: SweepConfig) -> Result<Self, ProbeError> {
        if config.rates_hz.is_empty() || config.rates_hz.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(ProbeError::Config("sweep: the rates must be positive numbers".into()));
        }
        let budget = config.budget.share(config.rates_hz.len());
        let steps = config
            .rates_hz
            .iter()
            .map(|&rate_hz| step(&config.swept, rate_hz, budget).map(|probe| (rate_hz, probe)))
            .collect::<Result<_, _>>()?;
        Ok(Self { stimulus: config.swept.probe_name(), steps })
    }
}

/// The swept probe at one rate.
fn step(swept: &SweptProbe, rate_hz: f64, budget: Budget) -> Result<Box<dyn Probe>, ProbeError> {
    Ok(match swept {
        SweptProbe::Net(c) => {
            let mut c = c.clone();
            c.stimulus.rate_hz = rate_hz;
            c.sampling.budget = budget;
            c.name = "sweep";
            Box::new(NetProbe::new(c)?)
        }
        SweptProbe::Ipc(c) => {
            let mut c = c.clone();
            c.stimulus.rate_hz = rate_hz;
            c.sampling.budget = budget;
            c.name = "sweep";
            Box::new(IpcProbe::new(c)?)
        }
    })
}

impl Probe for SweepProbe {
    fn name(&self) -> &'static str {
        "sweep"
    }

    /// One line per rate: the progress display shows each step as it runs.
    fn live(&self) -> Vec<Arc<LiveStats>> {
        self.steps.iter().flat_map(|(_, p)| p.live()).collect()
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let SweepProbe { stimulus, steps } = *self;
        let mut output =
            ProbeOutput { probe: "sweep".into(), threads: Vec::new(), raw_written: Vec::new(), notes: Vec::new() };
        for (rate_hz, probe) in steps {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let step = probe.run(stop.clone())?;
            for mut thread in step.threads {
                thread.thread_name = format!("sweep/{stimulus}@{}Hz", rate_tag(rate_hz));
                // The swept probe may already record its rate: one entry per key.
                thread.details.retain(|(key, _)| key != "rate_hz" && key != "stimulus");
                thread.details.push(("rate_hz".into(), Detail::Float(rate_hz)));
                thread.details.push(("stimulus".into(), Detail::Text(stimulus.into())));
                output.threads.push(thread);
            }
            output.raw_written.extend(step.raw_written);
            for note in step.notes {
                if !output.notes.contains(&note) {
                    output.notes.push(note);
                }
            }
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_formatted_without_needless_fractions() {
        assert_eq!(rate_tag(500.0), "500");
        assert_eq!(rate_tag(12.5), "12.5");
    }
}
