//! What a load achieved while it ran (run.json `scenarios[].loads`), as reported by
//! `rtlab-load`, so a report can prove that the load was there.

use serde::{Deserialize, Serialize};

/// One figure of achieved load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intensity {
    /// What was measured: "packets/s sent", "MB/s echoed", "CPU-seconds".
    pub name: String,
    pub value: f64,
    /// Unit of `value`: "packets/s", "MB/s" (10^6 bytes per second), "s", "CPUs".
    pub unit: String,
}

impl Intensity {
    pub fn new(name: &str, value: f64, unit: &str) -> Self {
        Self { name: name.to_string(), value, unit: unit.to_string() }
    }
}

/// What a load did while it ran: the entry in run.json "loads".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    pub name: String,
    /// The resolved parameters, every default explicit.
    pub parameters: serde_json::Value,
    /// Rates over the whole time the load ran, then totals.
    pub achieved: Vec<Intensity>,
    /// CPU time the load consumed (its threads, or its processes and their descendants).
    pub cpu_seconds: Option<f64>,
    /// Why the load stopped working before it was stopped, if it did.
    pub died_early: Option<String>,
    /// From `start` to `stop`.
    pub duration_s: f64,
}

impl LoadReport {
    /// The achieved value named `name`, if reported.
    pub fn intensity(&self, name: &str) -> Option<f64> {
        self.achieved.iter().find(|i| i.name == name).map(|i| i.value)
    }
}
