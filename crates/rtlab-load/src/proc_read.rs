//! `proc-read`: read /proc files in a loop (Senoner's load in Dankwardt). Generating
//! /proc/interrupts and /proc/stat walks per-CPU and per-IRQ kernel data under locks, which
//! is why it disturbs latency more than its small size suggests.

use crate::worker::{stop_started, Pacer, Workers};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub const NAME: &str = "proc-read";

/// Files read by default, in this order, over and over.
pub const DEFAULT_FILES: &[&str] = &[
    "/proc/interrupts",
    "/proc/stat",
    "/proc/meminfo",
    "/proc/self/status",
    "/proc/loadavg",
    "/proc/softirqs",
    "/proc/vmstat",
    "/proc/self/maps",
];

/// Parameters of [`ProcReadLoad`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProcReadParams {
    pub files: Vec<PathBuf>,
    /// Files read per second; None = as fast as possible.
    pub rate: Option<f64>,
}

impl Default for ProcReadParams {
    fn default() -> Self {
        Self { files: DEFAULT_FILES.iter().map(PathBuf::from).collect(), rate: None }
    }
}

#[derive(Default)]
struct Counters {
    files: AtomicU64,
    bytes: AtomicU64,
}

/// Reads /proc files in a loop.
pub struct ProcReadLoad {
    params: ProcReadParams,
    counters: Arc<Counters>,
    workers: Option<Workers>,
}

impl ProcReadLoad {
    pub fn new(params: ProcReadParams) -> Result<Self, LoadError> {
        if params.files.is_empty() {
            return Err(LoadError::config(NAME, "no file to read"));
        }
        if let Some(rate) = params.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(LoadError::config(NAME, format!("rate must be a positive number of files/s, not {rate}")));
            }
        }
        for file in &params.files {
            std::fs::File::open(file)
                .map_err(|e| LoadError::config(NAME, format!("cannot read {}: {e}", file.display())))?;
        }
        Ok(Self { params, counters: Arc::default(), workers: None })
    }
}

impl Load for ProcReadLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let mut workers = Workers::new(NAME);
        let files = self.params.files.clone();
        let rate = self.params.rate;
        let counters = self.counters.clone();
        workers.mark_start();
        workers.spawn("load-proc-read".into(), None, move |stop| {
            let pacer = Pacer::new(rate);
            let mut buf = Vec::with_capacity(64 << 10);
            let mut done = 0u64;
            let mut next = files.iter().cycle();
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..pacer.allowance(done, 1) {
                    let Some(path) = next.next() else { break };
                    buf.clear();
                    // Open each time, as a monitoring tool would: the kernel regenerates
                    // the text on every open and read.
                    let n = std::fs::File::open(path)
                        .and_then(|mut f| f.read_to_end(&mut buf))
                        .map_err(|e| format!("read {}: {e}", path.display()))?;
                    counters.files.fetch_add(1, Ordering::Relaxed);
                    counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
                    done += 1;
                }
            }
            Ok(())
        })?;
        self.workers = Some(workers);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let stopped = stop_started(&mut self.workers, NAME)?;
        let d = stopped.duration_s;
        let files = self.counters.files.load(Ordering::Relaxed);
        Ok(stopped.into_report(
            NAME,
            serde_json::to_value(&self.params).unwrap_or_default(),
            vec![
                Intensity::new("files/s", per_second(files as f64, d), "files/s"),
                Intensity::new("MB/s read", per_second(mb(self.counters.bytes.load(Ordering::Relaxed)), d), "MB/s"),
                Intensity::new("files read", files as f64, "files"),
            ],
        ))
    }

    fn check_alive(&mut self) -> Option<String> {
        self.workers.as_ref().and_then(Workers::failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{positive, run_for};
    use std::time::Duration;

    #[test]
    fn reads_proc_files() {
        let mut load = ProcReadLoad::new(ProcReadParams::default()).unwrap();
        let report = run_for(&mut load, Duration::from_millis(400));
        positive(&report, "files/s");
        positive(&report, "MB/s read");
    }

    #[test]
    fn paced_reads() {
        let mut load = ProcReadLoad::new(ProcReadParams { rate: Some(100.0), ..Default::default() }).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        let rate = positive(&report, "files/s");
        assert!(rate < 100.0 * 1.3, "{report:?}");
    }

    #[test]
    fn missing_file_is_a_usage_error() {
        let err =
            ProcReadLoad::new(ProcReadParams { files: vec!["/proc/no-such-file".into()], rate: None }).err().unwrap();
        assert!(err.is_usage_error() && err.to_string().contains("/proc/no-such-file"), "{err}");
    }
}
