//! The run.json `noise` section of `rtlab run -P noise`: per scenario and CPU, how much of
//! the busy loop's runtime was taken from it (noise %), in how many gaps, the largest one,
//! and each gap's time charged to what the kernel trace shows (IRQ per line or vector,
//! softirq, NMI, another thread, RT throttling, steal), the rest to "hardware or hypervisor
//! (no kernel event)" as the osnoise tracer does. Documented in docs/run-json.md and
//! docs/probes/noise.md.
//!
//! Main types:
//! - [`NoiseRun`]: the section (whether gaps were attributed, how, RT throttling settings).
//! - [`NoiseCpu`]: one CPU of one scenario: runtime, noise, gaps, per-cause figures.
//! - [`NoiseCause`], [`NoiseCauseKind`]: one cause: its time, the gaps it took part in, the
//!   gaps it dominated.
//!
//! Invariants (checked by [`NoiseRun::check`]): per CPU the causes' `ns` add up to
//! `noise_ns` and their `main_of` to `gaps`: every gap's time is charged once, and every gap
//! has exactly one main cause.

use serde::{Deserialize, Serialize};

/// The noise probe's main metric: each gap between consecutive clock reads above the
/// threshold is a sample (ns).
pub const NOISE_GAP_METRIC: &str = "noise.gap";

/// What took a slice of a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseCauseKind {
    /// A hard interrupt: a device IRQ line (`irq 11 virtio0`) or an x86 vector
    /// (`local_timer`), its entry and exit included.
    Irq,
    /// A softirq (`softirq TIMER`).
    Softirq,
    /// A non-maskable interrupt (`nmi:nmi_handler`'s own duration).
    Nmi,
    /// Another thread ran on the CPU while the busy loop waited (a higher-priority thread,
    /// or a per-CPU kernel thread), named by its comm.
    Thread,
    /// The kernel ran a lower-priority task or idled while the busy loop was runnable: RT
    /// throttling (`sched_rt_runtime_us`) or the fair server (6.12+), which give other
    /// tasks a share of a CPU that a real-time task would otherwise keep.
    RtThrottling,
    /// Time without any kernel event that the paravirtual steal clock (/proc/stat) says the
    /// hypervisor took from this vCPU.
    Steal,
    /// Time without any kernel event and without steal to explain it: the hardware (SMI,
    /// cache/TLB effects) or, in a VM, the hypervisor not running the vCPU.
    HardwareOrHypervisor,
    /// Not attributed: no kernel tracing (or the gap's events were lost). Not "hardware".
    Unattributed,
}

impl NoiseCauseKind {
    /// Words for tables and the terminal.
    pub fn label(self) -> &'static str {
        match self {
            NoiseCauseKind::Irq => "IRQ",
            NoiseCauseKind::Softirq => "softirq",
            NoiseCauseKind::Nmi => "NMI",
            NoiseCauseKind::Thread => "thread",
            NoiseCauseKind::RtThrottling => "RT throttling",
            NoiseCauseKind::Steal => "steal",
            NoiseCauseKind::HardwareOrHypervisor => "hardware or hypervisor (no kernel event)",
            NoiseCauseKind::Unattributed => "unattributed",
        }
    }
}

/// One cause on one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseCause {
    pub kind: NoiseCauseKind,
    /// IRQ line or vector, softirq, or the thread's comm; "" for the others.
    pub name: String,
    /// Total time charged to it, ns.
    pub ns: u64,
    /// Gaps it took any time of.
    pub gaps: u64,
    /// Gaps in which it took the largest share (each gap has exactly one).
    pub main_of: u64,
    /// Its largest share of a single gap, ns.
    pub max_ns: u64,
}

/// One CPU of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseCpu {
    pub scenario: String,
    pub cpu: usize,
    /// Gaps above this were recorded, ns.
    pub threshold_ns: u64,
    /// From the first to the last clock read of the busy loop, ns.
    pub runtime_ns: u64,
    /// Sum of the recorded gaps, ns.
    pub noise_ns: u64,
    /// 100 × noise / runtime.
    pub noise_percent: f64,
    /// Gaps above the threshold (= the `noise.gap` measurement's count).
    pub gaps: u64,
    pub largest_gap_ns: u64,
    /// Largest first.
    pub causes: Vec<NoiseCause>,
}

/// The `noise` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseRun {
    /// Whether gaps were attributed from a kernel trace.
    pub attributed: bool,
    /// How (the tracing session), or why not.
    pub tracing: String,
    /// The kernel's RT throttling settings and what they mean for a busy loop.
    pub rt_throttling: String,
    /// How the measured CPUs were chosen (without --cpus: all but the housekeeping CPU).
    pub cpus_choice: String,
    pub cpus: Vec<NoiseCpu>,
}

impl NoiseCpu {
    /// 100 × noise / runtime (0 without runtime).
    pub fn percent(noise_ns: u64, runtime_ns: u64) -> f64 {
        if runtime_ns == 0 {
            0.0
        } else {
            100.0 * noise_ns as f64 / runtime_ns as f64
        }
    }

    /// Time charged to causes of `kind`, ns.
    pub fn ns_of(&self, kind: NoiseCauseKind) -> u64 {
        self.causes.iter().filter(|c| c.kind == kind).map(|c| c.ns).sum()
    }

    /// Gaps whose main cause is of `kind`.
    pub fn main_of(&self, kind: NoiseCauseKind) -> u64 {
        self.causes.iter().filter(|c| c.kind == kind).map(|c| c.main_of).sum()
    }

    /// The invariants: causes add up to the noise and to the gaps; noise within runtime.
    pub fn check(&self) -> Result<(), String> {
        let what = format!("noise on CPU {} (scenario {:?})", self.cpu, self.scenario);
        let ns: u64 = self.causes.iter().map(|c| c.ns).sum();
        let main: u64 = self.causes.iter().map(|c| c.main_of).sum();
        if ns != self.noise_ns {
            return Err(format!("{what}: causes sum to {ns} ns, not the noise {} ns", self.noise_ns));
        }
        if main != self.gaps {
            return Err(format!("{what}: {main} gaps have a main cause, not {}", self.gaps));
        }
        if self.noise_ns > self.runtime_ns {
            return Err(format!("{what}: noise {} ns exceeds the runtime {} ns", self.noise_ns, self.runtime_ns));
        }
        if self.causes.iter().any(|c| c.gaps > self.gaps || c.max_ns > self.largest_gap_ns) {
            return Err(format!("{what}: a cause has more gaps or a larger share than the CPU"));
        }
        Ok(())
    }
}

impl NoiseRun {
    pub fn check(&self) -> Result<(), String> {
        self.cpus.iter().try_for_each(NoiseCpu::check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(kind: NoiseCauseKind, ns: u64, gaps: u64, main_of: u64) -> NoiseCause {
        NoiseCause { kind, name: String::new(), ns, gaps, main_of, max_ns: ns }
    }

    #[test]
    fn the_causes_must_add_up() {
        let mut cpu = NoiseCpu {
            scenario: "idle".into(),
            cpu: 1,
            threshold_ns: 1_000,
            runtime_ns: 1_000_000,
            noise_ns: 30_000,
            noise_percent: 3.0,
            gaps: 3,
            largest_gap_ns: 20_000,
            causes: vec![cause(NoiseCauseKind::Irq, 10_000, 2, 2), cause(NoiseCauseKind::Steal, 20_000, 1, 1)],
        };
        assert_eq!(cpu.check(), Ok(()));
        assert_eq!(cpu.ns_of(NoiseCauseKind::Steal), 20_000);
        cpu.causes[0].main_of = 1;
        assert!(cpu.check().is_err());
        cpu.causes[0].main_of = 2;
        cpu.causes[0].ns = 9_000;
        assert!(cpu.check().is_err());
        let json = serde_json::to_string(&cpu.causes[1]).unwrap();
        assert!(json.contains("\"kind\":\"steal\""), "{json}");
    }
}
