//! The values a plan is made of, parsed and checked: defaults and limits, the sampling
//! interval, CPU lists. Below both the experiment ([`crate::experiment`]) and the probes'
//! resolution ([`crate::probe_plan`]), which use them alike.

use crate::errors::usage;
use rtlab_analysis::units::parse_time_ns;

/// Per scenario: the main job (idle, then loaded) takes under a minute.
pub const DEFAULT_DURATION_NS: u64 = 20_000_000_000;

/// The main job: unloaded, then under a load that reaches every subsystem.
pub const DEFAULT_LOADS: &str = "idle,mixed";

/// Longest settle time accepted.
pub const MAX_SETTLE_NS: u64 = 3_600_000_000_000;

/// Longest accepted interval: a timer probe wakes at least once a minute.
pub const MAX_INTERVAL_NS: u64 = 60_000_000_000;

/// Longest accepted measurement (duration, or samples times interval): a year.
pub const MAX_RUN_NS: u64 = 366 * 86_400 * 1_000_000_000;

/// cyclictest's customary priority (`-p95`).
pub const DEFAULT_PRIORITY: i64 = 95;

/// Parses "1ms"/"50us"; a bare number is µs as in cyclictest.
pub fn parse_interval(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let ns = if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        t.parse::<u64>().map_err(|_| usage(format!("--interval {text:?}: number too large")))?.saturating_mul(1000)
    } else {
        parse_time_ns(t).map_err(|e| usage(format!("--interval: {e}")))?
    };
    if ns == 0 {
        return Err(usage("--interval must be greater than 0"));
    }
    if ns > MAX_INTERVAL_NS {
        return Err(usage(format!("--interval {text}: at most 60s")));
    }
    Ok(ns)
}

/// Checks the CPU list against the online CPUs.
pub fn resolve_cpus(flag: &str, text: Option<&str>, online: &[usize]) -> anyhow::Result<Vec<usize>> {
    let Some(text) = text else { return Ok(online.to_vec()) };
    let mut cpus = rtlab_sys::sched::parse_cpu_list(text).map_err(|e| usage(format!("{flag} {text:?}: {e}")))?;
    if cpus.is_empty() {
        return Err(usage(format!("{flag} {text:?}: no CPU selected")));
    }
    cpus.sort_unstable();
    cpus.dedup();
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(usage(format!("{flag}: CPU {bad} is not online (online: {})", list(online))));
    }
    Ok(cpus)
}

fn list(cpus: &[usize]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}
