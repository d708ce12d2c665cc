//! System activity during a measurement window (run.json `activity`): interrupt and
//! softirq rates, context switches, CPU use and steal. `rtlab-sys` computes it from /proc.

use serde::{Deserialize, Serialize};

/// Interrupt rate of one /proc/interrupts line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqRate {
    pub irq: String,
    pub name: String,
    pub per_s: f64,
}

/// CPU use of one CPU over the window, as fractions of the window (0..1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuActivity {
    pub cpu: usize,
    pub busy: f64,
    pub steal: f64,
}

/// System activity during a window (run.json `activity`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    pub window_s: f64,
    /// Lines with a non-zero rate, highest first.
    pub interrupts_per_s: Vec<IrqRate>,
    /// /proc/softirqs lines with a non-zero rate, highest first (`name` is empty).
    #[serde(default)]
    pub softirqs_per_s: Vec<IrqRate>,
    pub context_switches_per_s: f64,
    pub cpus: Vec<CpuActivity>,
}
