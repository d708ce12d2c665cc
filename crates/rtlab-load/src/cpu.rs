//! `cpu`: floating-point burn on N threads (the Xenomai/RTAI paper's CPU Burn-in).

use crate::worker::{available_cpus, stop_started, Workers};
use crate::{per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub const NAME: &str = "cpu";

/// Parameters of [`CpuLoad`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpuParams {
    /// Burning threads; 0 = one per CPU in `cpus`, or per CPU this process may use.
    pub threads: usize,
    /// CPUs to pin the threads to (thread i on `cpus[i % len]`); empty = not pinned.
    pub cpus: Vec<usize>,
}

/// Floating-point operations per burn chunk and lane count; a chunk takes about a
/// millisecond, so the stop flag is seen far more often than every 100 ms.
const LANES: usize = 16;
const CHUNK_ITERATIONS: u64 = 20_000;
/// One multiply and one add per lane per iteration.
const FLOPS_PER_CHUNK: u64 = CHUNK_ITERATIONS * LANES as u64 * 2;

/// Burns floating point on `threads` threads and counts the operations.
pub struct CpuLoad {
    params: CpuParams,
    threads: usize,
    flops: Arc<AtomicU64>,
    workers: Option<Workers>,
}

impl CpuLoad {
    pub fn new(params: CpuParams) -> Result<Self, LoadError> {
        let threads = match (params.threads, params.cpus.len()) {
            (0, 0) => available_cpus(),
            (0, n) => n,
            (t, _) => t,
        };
        if threads > 4096 {
            return Err(LoadError::config(NAME, format!("{threads} threads is not a sensible number")));
        }
        Ok(Self { params, threads, flops: Arc::new(AtomicU64::new(0)), workers: None })
    }
}

/// One chunk of burn: x = x * a + b on independent lanes, which the compiler vectorises.
/// The multiplier below 1 keeps the values bounded and normal (denormals would slow the
/// loop down and make the flop rate meaningless).
#[inline(never)]
fn burn_chunk(state: &mut [f64; LANES]) {
    let a = std::hint::black_box(0.999_999_9_f64);
    let b = std::hint::black_box(0.000_000_3_f64);
    for _ in 0..CHUNK_ITERATIONS {
        for x in state.iter_mut() {
            *x = *x * a + b;
        }
    }
    std::hint::black_box(state);
}

impl Load for CpuLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let mut workers = Workers::new(NAME);
        workers.mark_start();
        for i in 0..self.threads {
            let cpu = (!self.params.cpus.is_empty()).then(|| self.params.cpus[i % self.params.cpus.len()]);
            let flops = self.flops.clone();
            workers.spawn(format!("load-cpu-{i}"), cpu, move |stop| {
                let mut state = [0.0f64; LANES];
                for (k, x) in state.iter_mut().enumerate() {
                    *x = 1.0 + k as f64;
                }
                while !stop.load(Ordering::Relaxed) {
                    burn_chunk(&mut state);
                    flops.fetch_add(FLOPS_PER_CHUNK, Ordering::Relaxed);
                }
                Ok(())
            })?;
        }
        self.workers = Some(workers);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let stopped = stop_started(&mut self.workers, NAME)?;
        let flops = self.flops.load(Ordering::Relaxed);
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["threads"] = self.threads.into();
        let achieved = vec![
            Intensity::new("Mflop/s", per_second(flops as f64 / 1e6, stopped.duration_s), "Mflop/s"),
            Intensity::new("CPUs busy", per_second(stopped.cpu_seconds, stopped.duration_s), "CPUs"),
            Intensity::new("Mflop", flops as f64 / 1e6, "Mflop"),
        ];
        Ok(stopped.into_report(NAME, parameters, achieved))
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
    fn burns_and_stops() {
        let mut load = CpuLoad::new(CpuParams { threads: 2, cpus: vec![] }).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        positive(&report, "Mflop/s");
        positive(&report, "CPUs busy");
        assert!(report.cpu_seconds.unwrap() > 0.05, "{report:?}");
        assert_eq!(report.parameters["threads"], 2);
    }

    #[test]
    fn pinned_to_first_cpu() {
        let cpu = rtlab_sys::sched::online_cpus().unwrap()[0];
        let mut load = CpuLoad::new(CpuParams { threads: 0, cpus: vec![cpu] }).unwrap();
        let report = run_for(&mut load, Duration::from_millis(300));
        assert_eq!(report.parameters["threads"], 1);
        positive(&report, "Mflop/s");
    }

    #[test]
    fn default_threads_follow_the_cpus() {
        assert_eq!(CpuLoad::new(CpuParams::default()).unwrap().threads, available_cpus());
        assert_eq!(CpuLoad::new(CpuParams { threads: 0, cpus: vec![0, 0, 0] }).unwrap().threads, 3);
    }

    #[test]
    fn stop_before_start_is_an_error() {
        let mut load = CpuLoad::new(CpuParams::default()).unwrap();
        assert!(matches!(load.stop(), Err(LoadError::State { .. })));
    }
}
