//! From parsed arguments to a validated experiment: every value checked and every default
//! made explicit before anything starts.

use crate::cli::{PolicyArg, RunArgs};
use crate::errors::usage;
use rtlab_analysis::units::parse_time_ns;
use rtlab_sys::sched::Policy;
use std::path::PathBuf;

pub const DEFAULT_DURATION_NS: u64 = 30_000_000_000;
/// Longest accepted interval: a timer probe wakes at least once a minute.
pub const MAX_INTERVAL_NS: u64 = 60_000_000_000;
/// Longest accepted measurement (duration, or samples times interval): a year.
pub const MAX_RUN_NS: u64 = 366 * 86_400 * 1_000_000_000;
/// cyclictest's customary priority (`-p95`).
pub const DEFAULT_PRIORITY: i64 = 95;

/// A validated `rtlab run`.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub interval_ns: u64,
    pub policy: Policy,
    pub priority: i32,
    pub cpus: Vec<usize>,
    pub duration_ns: Option<u64>,
    pub samples: Option<u64>,
    pub warmup: u64,
    pub output: PathBuf,
    pub label: String,
    pub raw: bool,
    pub quiet: bool,
    pub json: bool,
    pub dma_latency: bool,
    pub histogram_max_ns: u64,
    pub simulate: Option<u64>,
}

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

fn policy_of(arg: PolicyArg) -> Policy {
    match arg {
        PolicyArg::Fifo => Policy::Fifo,
        PolicyArg::Rr => Policy::Rr,
        PolicyArg::Other => Policy::Other,
    }
}

/// Checks the CPU list against the online CPUs.
pub fn resolve_cpus(text: Option<&str>, online: &[usize]) -> anyhow::Result<Vec<usize>> {
    let Some(text) = text else { return Ok(online.to_vec()) };
    let mut cpus = rtlab_sys::sched::parse_cpu_list(text).map_err(|e| usage(format!("--cpus {text:?}: {e}")))?;
    if cpus.is_empty() {
        return Err(usage(format!("--cpus {text:?}: no CPU selected")));
    }
    cpus.sort_unstable();
    cpus.dedup();
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(usage(format!("--cpus: CPU {bad} is not online (online: {})", list(online))));
    }
    Ok(cpus)
}

fn list(cpus: &[usize]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// A label is used in a directory name: keep it to a safe character set.
fn check_label(label: &str) -> anyhow::Result<()> {
    if label.is_empty()
        || label.len() > 64
        || !label.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(usage(format!("--label {label:?}: use 1 to 64 letters, digits, '-', '_' or '.'")));
    }
    Ok(())
}

impl RunPlan {
    /// `online` and `hostname` come from the host (or the simulated host).
    pub fn from_args(
        args: &RunArgs,
        online: &[usize],
        hostname: &str,
        now: chrono::DateTime<chrono::Local>,
    ) -> anyhow::Result<Self> {
        let interval_ns = parse_interval(&args.interval)?;
        let policy = policy_of(args.policy);
        let range = match policy {
            Policy::Other => 0..=0,
            // Linux's range for SCHED_FIFO and SCHED_RR.
            _ => 1..=99,
        };
        let priority = args.priority.unwrap_or(if policy.is_realtime() { DEFAULT_PRIORITY } else { 0 });
        if !range.contains(&priority) {
            return Err(usage(format!(
                "--priority {} is out of range for {}: use {}..={}",
                priority,
                policy.kernel_name(),
                range.start(),
                range.end()
            )));
        }
        let cpus = resolve_cpus(args.cpus.as_deref(), online)?;
        let (duration_ns, samples) = match (&args.duration, args.samples) {
            (Some(d), None) => (Some(parse_time_ns(d).map_err(|e| usage(format!("--duration: {e}")))?), None),
            (None, Some(0)) => return Err(usage("--samples must be at least 1")),
            (None, Some(n)) => {
                if n.checked_mul(interval_ns).is_none_or(|ns| ns > MAX_RUN_NS) {
                    return Err(usage(format!("--samples {n} at this interval would take more than a year")));
                }
                (None, Some(n))
            }
            (None, None) => (Some(DEFAULT_DURATION_NS), None),
            (Some(_), Some(_)) => return Err(usage("give --duration or --samples, not both")),
        };
        if let Some(ns) = duration_ns {
            let shown = args.duration.as_deref().unwrap_or("30s (the default)");
            if ns < interval_ns {
                return Err(usage(format!("--duration {shown} is shorter than one interval ({})", args.interval)));
            }
            if ns > MAX_RUN_NS {
                return Err(usage(format!("--duration {shown}: at most 366d")));
            }
        }
        let histogram_max_ns =
            parse_time_ns(&args.histogram_max).map_err(|e| usage(format!("--histogram-max: {e}")))?;
        if histogram_max_ns < 1_000 {
            return Err(usage("--histogram-max must be at least 1us"));
        }
        let label = match &args.label {
            Some(l) => {
                check_label(l)?;
                l.clone()
            }
            None => {
                let h: String = hostname
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
                    .take(64)
                    .collect();
                if h.is_empty() {
                    "run".into()
                } else {
                    h
                }
            }
        };
        let output = args
            .output
            .clone()
            .unwrap_or_else(|| PathBuf::from("results").join(format!("{}-{label}", now.format("%Y%m%d-%H%M%S"))));
        Ok(Self {
            interval_ns,
            policy,
            priority: priority as i32,
            cpus,
            duration_ns,
            samples,
            warmup: args.warmup,
            output,
            label,
            raw: args.raw,
            quiet: args.quiet,
            json: args.json,
            dma_latency: !args.no_dma_latency,
            histogram_max_ns,
            simulate: args.simulate,
        })
    }

    /// Expected wall time of the measurement, for the progress display.
    pub fn expected_ns(&self) -> u64 {
        self.duration_ns
            .unwrap_or_else(|| self.samples.unwrap_or(0).saturating_mul(self.interval_ns))
            .saturating_add(self.warmup.saturating_mul(self.interval_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1ms").unwrap(), 1_000_000);
        assert_eq!(parse_interval("50us").unwrap(), 50_000);
        assert_eq!(parse_interval("1000").unwrap(), 1_000_000);
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("0us").is_err());
        assert!(parse_interval("fast").is_err());
    }

    #[test]
    fn cpus() {
        assert_eq!(resolve_cpus(None, &[0, 1]).unwrap(), vec![0, 1]);
        assert_eq!(resolve_cpus(Some("1,0,1"), &[0, 1]).unwrap(), vec![0, 1]);
        assert!(resolve_cpus(Some("7"), &[0, 1]).is_err());
        assert!(resolve_cpus(Some("x"), &[0, 1]).is_err());
    }

    #[test]
    fn labels() {
        assert!(check_label("idle-1").is_ok());
        assert!(check_label("../etc").is_err());
        assert!(check_label("").is_err());
    }
}
