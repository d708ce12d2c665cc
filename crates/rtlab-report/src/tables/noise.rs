//! The noise probe's section of the terminal summary: per CPU the noise %, the gaps and the
//! largest, and the gaps' time per cause (run.json `noise`, docs/probes/noise.md).

use rtlab_analysis::units::{format_us, thousands};
use rtlab_results::noise::NoiseCauseKind;
use rtlab_results::run::RunResult;
use std::fmt::Write;

/// The lines of `scenario`; empty for a run without the noise probe.
pub fn terminal_section(run: &RunResult, scenario: &str) -> String {
    let Some(noise) = &run.noise else { return String::new() };
    let cpus: Vec<_> = noise.cpus.iter().filter(|c| c.scenario == scenario).collect();
    if cpus.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let threshold = cpus.first().map_or(0, |c| c.threshold_ns as i64);
    let _ = writeln!(out, "\nNoise (busy loop, gaps above {} µs)", format_us(threshold));
    for c in cpus {
        let _ = writeln!(
            out,
            "  CPU {}: noise {:.3} % of {:.1} s in {} gaps, largest {} µs",
            c.cpu,
            c.noise_percent,
            c.runtime_ns as f64 / 1e9,
            thousands(c.gaps),
            format_us(c.largest_gap_ns as i64)
        );
        for cause in &c.causes {
            let name = if cause.name.is_empty() {
                cause.kind.label().to_string()
            } else if cause.kind == NoiseCauseKind::Thread || cause.kind == NoiseCauseKind::Unattributed {
                format!("{}: {}", cause.kind.label(), cause.name)
            } else if cause.kind == NoiseCauseKind::Irq && !cause.name.starts_with("irq ") {
                format!("vector {}", cause.name)
            } else {
                cause.name.clone()
            };
            let _ = writeln!(
                out,
                "    {name:<42} {:>12} µs  {:>6.3} %  in {:>7} gaps (main cause of {:>7})  largest {} µs",
                format_us(cause.ns as i64),
                rtlab_results::noise::NoiseCpu::percent(cause.ns, c.runtime_ns),
                thousands(cause.gaps),
                thousands(cause.main_of),
                format_us(cause.max_ns as i64)
            );
        }
    }
    if run.scenarios.first().is_some_and(|s| s.name == scenario) {
        let how = if noise.attributed { "attributed from" } else { "NOT attributed" };
        let _ = writeln!(out, "  CPUs: {}", noise.cpus_choice);
        let _ = writeln!(out, "  Gaps {how}: {}", noise.tracing);
        let _ = writeln!(out, "  RT throttling: {}", noise.rt_throttling);
    }
    out
}
