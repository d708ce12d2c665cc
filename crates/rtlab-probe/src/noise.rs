//! The noise probe: oslat's method (rt-tests' oslat). One thread per selected CPU, pinned,
//! at the requested policy and priority, reads CLOCK_MONOTONIC in a busy loop. Every gap
//! between two consecutive reads longer than the threshold (default 1 µs) is time the CPU
//! was taken from the thread: it is recorded as a sample of `noise.gap` (ns), placed at the
//! read before it. Per CPU: the runtime (first to last read), the noise (sum of the gaps),
//! noise % = noise / runtime, the number of gaps and the largest.
//!
//! The loop reads the clock through the vDSO (`rtlab_sys::clock::monotonic_ns`, no system
//! call where the clocksource allows it: tsc, kvm-clock, hyperv), touches only the
//! preallocated recorder, and leaves each gap through the recorder's wait-free ring to a
//! [`SampleTap`] when the gaps are attributed from a kernel trace ([`crate::noise_trace`]).

use crate::live::LiveStats;
use crate::raw::{RawWriter, SampleTap};
use crate::recorder::{tapped_raw_target, MetricRecorder};
use crate::workers::{run_workers, Ending, Worker};
use crate::{ClockKind, Detail, Probe, ProbeError, ProbeOutput, ThreadOutput, ThreadSetup};
use rtlab_results::noise::NOISE_GAP_METRIC;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// oslat's default bucket width and rtlab's default threshold: gaps above 1 µs are noise.
pub const DEFAULT_THRESHOLD_NS: u64 = 1_000;

/// Detail keys of each thread (docs/run-json.md).
pub const THRESHOLD_NS: &str = "threshold_ns";
pub const RUNTIME_NS: &str = "runtime_ns";
pub const NOISE_NS: &str = "noise_ns";
pub const NOISE_PERCENT: &str = "noise_percent";
pub const GAPS: &str = "gaps";
pub const LARGEST_GAP_NS: &str = "largest_gap_ns";
pub const READS: &str = "reads";

/// How often (in reads) the loop looks at the stop flag and publishes its progress.
const CHECK_EVERY_READS: u64 = 1 << 12;

/// Validated configuration of a noise probe.
#[derive(Debug, Clone)]
pub struct NoiseConfig {
    pub cpus: Vec<usize>,
    /// How long each thread reads the clock.
    pub duration_ns: u64,
    /// Gaps longer than this are recorded.
    pub threshold_ns: u64,
    pub histogram_max_ns: u64,
    pub raw_dir: Option<PathBuf>,
    pub raw_ring_capacity: usize,
    pub clock: ClockKind,
    pub setup: ThreadSetup,
    /// Where the gaps also go while the probe runs (their attribution).
    pub tap: Option<SampleTap>,
}

/// What one busy loop measured, besides the gaps' recorder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopTotals {
    pub first_read_ns: u64,
    pub last_read_ns: u64,
    pub reads: u64,
    pub gaps: u64,
    pub noise_ns: u64,
    pub largest_gap_ns: u64,
}

impl LoopTotals {
    pub fn runtime_ns(&self) -> u64 {
        self.last_read_ns.saturating_sub(self.first_read_ns)
    }
}

/// A clock the busy loop reads.
pub trait ReadClock {
    fn now_ns(&mut self) -> u64;
}

/// CLOCK_MONOTONIC through the vDSO.
pub struct Monotonic;

impl ReadClock for Monotonic {
    #[inline]
    fn now_ns(&mut self) -> u64 {
        rtlab_sys::clock::monotonic_ns()
    }
}

/// Deterministic reads for simulated runs: 40 ns per read, a 2–9 µs gap about every
/// 25,000 reads (1 ms: a 1 kHz tick's worth).
struct SimulatedReads {
    now: u64,
    state: u64,
}

impl ReadClock for SimulatedReads {
    fn now_ns(&mut self) -> u64 {
        // xorshift64*: reproducible per seed and CPU.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        self.now += 40;
        if r.is_multiple_of(25_000) {
            self.now += 2_000 + (r >> 32) % 7_000;
        }
        self.now
    }
}

struct PreparedThread {
    cpu: usize,
    gaps: MetricRecorder,
    live: Arc<LiveStats>,
}

/// A noise probe with everything allocated; see the module documentation.
pub struct NoiseProbe {
    config: NoiseConfig,
    threads: Vec<PreparedThread>,
    raw_drains: Vec<crate::raw::RawDrain>,
}

impl NoiseProbe {
    pub fn new(config: NoiseConfig) -> Result<Self, ProbeError> {
        if config.cpus.is_empty() {
            return Err(ProbeError::Config("no CPU selected".into()));
        }
        if config.duration_ns == 0 {
            return Err(ProbeError::Config("the busy loop must run for a duration greater than 0".into()));
        }
        if config.threshold_ns == 0 || config.threshold_ns >= config.histogram_max_ns {
            return Err(ProbeError::Config(format!(
                "the gap threshold must be above 0 and below the histogram's maximum ({} ns)",
                config.histogram_max_ns
            )));
        }
        let mut threads = Vec::with_capacity(config.cpus.len());
        let mut raw_drains = Vec::new();
        for &cpu in &config.cpus {
            let raw = tapped_raw_target(
                config.raw_dir.as_deref(),
                &format!("noise-cpu{cpu}.bin"),
                config.raw_ring_capacity,
                &mut raw_drains,
                config.tap.as_ref().map(|tap| (tap, cpu, NOISE_GAP_METRIC)),
            );
            threads.push(PreparedThread {
                cpu,
                gaps: MetricRecorder::new(NOISE_GAP_METRIC, config.histogram_max_ns, config.duration_ns, raw, 0)?,
                live: Arc::new(LiveStats::new(cpu)),
            });
        }
        Ok(Self { config, threads, raw_drains })
    }
}

impl Probe for NoiseProbe {
    fn name(&self) -> &'static str {
        "noise"
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        self.threads.iter().map(|t| t.live.clone()).collect()
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let NoiseProbe { config, threads, raw_drains } = *self;
        let writer = match housekeeping_cpus(&config) {
            // The writer carries the gaps to their attribution: on a busy loop's CPU it would
            // run only when that loop is throttled (seen in the PREEMPT_RT guest: the ring
            // filled once and every later gap was lost to the attribution). It starts on the
            // other CPUs, from a thread restricted to them (it inherits the mask).
            Some(cpus) => std::thread::spawn(move || {
                let _ = rtlab_sys::sched::restrict_current_thread(&cpus);
                RawWriter::for_drains(raw_drains)
            })
            .join()
            .map_err(|_| ProbeError::ThreadPanicked { cpu: config.cpus[0] })??,
            None => RawWriter::for_drains(raw_drains)?,
        };
        let workers = threads
            .into_iter()
            .map(|thread| {
                let cpu = thread.cpu;
                let stop = stop.clone();
                let config = config.clone();
                Worker {
                    cpu,
                    name: format!("rtlab-noise/{cpu}"),
                    body: Box::new(move || run_thread(thread, &config, &stop).map(Some)),
                }
            })
            .collect();
        // The loop never blocks: no wake-up signal is needed to stop it.
        let (threads, raw_written) = run_workers(workers, &stop, Ending::Independent, writer, false)?;
        Ok(ProbeOutput { probe: "noise".into(), threads, raw_written, notes: notes(&config) })
    }
}

/// The online CPUs without a busy loop, for the threads that serve the loops; None when
/// simulated, unknown, or every CPU has a loop.
pub fn housekeeping_cpus(config: &NoiseConfig) -> Option<Vec<usize>> {
    if !matches!(config.clock, ClockKind::Monotonic) {
        return None;
    }
    let online = rtlab_sys::sched::online_cpus().ok()?;
    let rest: Vec<usize> = online.into_iter().filter(|c| !config.cpus.contains(c)).collect();
    (!rest.is_empty()).then_some(rest)
}

/// How the probe ran, for run.json's notes.
fn notes(config: &NoiseConfig) -> Vec<String> {
    let mut notes = Vec::new();
    if matches!(config.clock, ClockKind::Monotonic) {
        let source = rtlab_sys::sysinfo::current_clocksource();
        match source.as_deref() {
            Some("tsc" | "kvm-clock" | "hyperv_clocksource_tsc_page" | "arch_sys_counter") | None => {}
            Some(other) => notes.push(format!(
                "the clocksource is {other}: clock_gettime may not use the vDSO, so each read is a system call and \
                 the smallest gap is that call's cost"
            )),
        }
    }
    notes
}

fn run_thread(mut thread: PreparedThread, config: &NoiseConfig, stop: &AtomicBool) -> Result<ThreadOutput, ProbeError> {
    let cpu = thread.cpu;
    let totals = match config.clock {
        ClockKind::Monotonic => {
            let _setup = config.setup.apply(cpu)?;
            busy_loop(&mut Monotonic, &mut thread, config.threshold_ns, config.duration_ns, stop)
        }
        ClockKind::Simulated { seed, .. } => {
            let state = (seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_add(cpu as u64 + 1).max(1);
            busy_loop(&mut SimulatedReads { now: 0, state }, &mut thread, config.threshold_ns, config.duration_ns, stop)
        }
    };
    Ok(thread_output(thread, config.threshold_ns, &totals, stop.load(Relaxed)))
}

fn thread_output(thread: PreparedThread, threshold_ns: u64, totals: &LoopTotals, interrupted: bool) -> ThreadOutput {
    let runtime = totals.runtime_ns();
    let percent = rtlab_results::noise::NoiseCpu::percent(totals.noise_ns, runtime);
    let int = |v: u64| Detail::Int(i64::try_from(v).unwrap_or(i64::MAX));
    ThreadOutput {
        cpu: thread.cpu,
        thread_name: format!("noise/{}", thread.cpu),
        // Each gap is one sample; none is skipped.
        cycles: totals.gaps,
        overruns: 0,
        lost: thread.gaps.lost(),
        interrupted,
        block_s: thread.gaps.block_s(),
        // The mean time between gaps: count × interval is the runtime.
        interval_ns: (runtime / totals.gaps.max(1)).max(1),
        details: vec![
            (THRESHOLD_NS.into(), int(threshold_ns)),
            (RUNTIME_NS.into(), int(runtime)),
            (NOISE_NS.into(), int(totals.noise_ns)),
            (NOISE_PERCENT.into(), Detail::Float(percent)),
            (GAPS.into(), int(totals.gaps)),
            (LARGEST_GAP_NS.into(), int(totals.largest_gap_ns)),
            (READS.into(), int(totals.reads)),
        ],
        metrics: vec![thread.gaps.finish()],
    }
}

/// The real-time loop: reads the clock until `duration_ns` has passed since the first read
/// or a stop is requested, recording every gap above `threshold_ns`. Touches only
/// preallocated memory; its only system call, where the vDSO cannot serve the clock, is the
/// clock read.
fn busy_loop<C: ReadClock>(
    clock: &mut C,
    thread: &mut PreparedThread,
    threshold_ns: u64,
    duration_ns: u64,
    stop: &AtomicBool,
) -> LoopTotals {
    let first = clock.now_ns();
    thread.gaps.start(first);
    let end = first.saturating_add(duration_ns);
    let mut totals = LoopTotals { first_read_ns: first, last_read_ns: first, ..LoopTotals::default() };
    let mut previous = first;
    let cpu = thread.cpu as u32;
    loop {
        let now = clock.now_ns();
        totals.reads += 1;
        let gap = now.saturating_sub(previous);
        if gap > threshold_ns {
            thread.gaps.record(previous, gap as i64, cpu, 0);
            totals.gaps += 1;
            totals.noise_ns += gap;
            totals.largest_gap_ns = totals.largest_gap_ns.max(gap);
        }
        previous = now;
        if now >= end {
            break;
        }
        if totals.reads.is_multiple_of(CHECK_EVERY_READS) {
            if stop.load(Relaxed) {
                break;
            }
            let m = thread.gaps.moments();
            thread.live.publish(m.count, 0, thread.gaps.lost(), m.min, m.max, m.sum as i64);
        }
    }
    totals.last_read_ns = previous;
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads from a script of increments.
    struct Scripted {
        now: u64,
        steps: Vec<u64>,
        next: usize,
    }

    impl ReadClock for Scripted {
        fn now_ns(&mut self) -> u64 {
            let step = self.steps[self.next % self.steps.len()];
            self.next += 1;
            self.now += step;
            self.now
        }
    }

    fn config(duration_ns: u64) -> NoiseConfig {
        NoiseConfig {
            cpus: vec![3],
            duration_ns,
            threshold_ns: 1_000,
            histogram_max_ns: 1_000_000_000,
            raw_dir: None,
            raw_ring_capacity: 64,
            clock: ClockKind::simulated(1),
            setup: ThreadSetup::unchanged(),
            tap: None,
        }
    }

    #[test]
    fn gaps_above_the_threshold_are_recorded_and_add_up() {
        let probe = NoiseProbe::new(config(1_000_000)).unwrap();
        let mut thread = probe.threads.into_iter().next().unwrap();
        // 50 ns reads, a gap exactly at the threshold (not noise), 1,001 ns and 70 µs (noise).
        let steps = vec![50, 50, 1_000, 50, 1_001, 50, 70_000, 50, 50, 50];
        let mut clock = Scripted { now: 10_000, steps, next: 0 };
        let totals = busy_loop(&mut clock, &mut thread, 1_000, 1_000_000, &AtomicBool::new(false));
        // The oracle: replay the script.
        // The first read takes the script's first step.
        let (mut t, mut expected_gaps, mut expected_noise, mut largest) = (10_050u64, 0u64, 0u64, 0u64);
        let mut reads = 0;
        let script = [50u64, 50, 1_000, 50, 1_001, 50, 70_000, 50, 50, 50];
        loop {
            let step = script[(reads + 1) % script.len()];
            t += step;
            reads += 1;
            if step > 1_000 {
                expected_gaps += 1;
                expected_noise += step;
                largest = largest.max(step);
            }
            if t >= 10_050 + 1_000_000 {
                break;
            }
        }
        assert_eq!(totals.gaps, expected_gaps);
        assert_eq!(totals.noise_ns, expected_noise);
        assert_eq!(totals.largest_gap_ns, largest);
        assert_eq!(totals.reads, reads as u64);
        assert_eq!(totals.runtime_ns(), t - 10_050);
        let m = thread.gaps.moments();
        assert_eq!(m.count, expected_gaps);
        assert_eq!(m.sum as u64, expected_noise);
        assert_eq!(m.min, 1_001);
        let out = thread_output(thread, 1_000, &totals, false);
        assert_eq!(out.metrics[0].histogram.count(), expected_gaps);
        assert_eq!(out.cycles, expected_gaps);
        let percent = out.details.iter().find(|(k, _)| k == NOISE_PERCENT).map(|(_, v)| v.clone());
        assert_eq!(percent, Some(Detail::Float(100.0 * expected_noise as f64 / (t - 10_050) as f64)));
    }

    #[test]
    fn the_gap_is_placed_at_the_read_before_it_and_reaches_the_tap() {
        let (tap, samples) = SampleTap::new();
        let mut cfg = config(5_000_000);
        cfg.tap = Some(tap);
        let probe = Box::new(NoiseProbe::new(cfg).unwrap());
        let output = probe.run(Arc::new(AtomicBool::new(false))).unwrap();
        let thread = &output.threads[0];
        let tapped: Vec<_> = samples.try_iter().flat_map(|t| t.samples).collect();
        assert_eq!(tapped.len() as u64 + thread.lost, thread.metrics[0].moments.count);
        assert!(tapped.iter().all(|s| s.value_ns > 1_000 && s.cpu == 3));
        assert!(thread.metrics[0].moments.count > 0, "the simulation makes gaps");
    }

    #[test]
    fn a_stop_request_ends_the_loop() {
        let probe = Box::new(NoiseProbe::new(config(u64::MAX / 2)).unwrap());
        let output = probe.run(Arc::new(AtomicBool::new(true))).unwrap();
        assert!(output.threads[0].interrupted);
        let reads = output.threads[0].details.iter().find(|(k, _)| k == READS).map(|(_, v)| v.clone());
        assert_eq!(reads, Some(Detail::Int(CHECK_EVERY_READS as i64)));
    }

    #[test]
    fn invalid_configurations_are_rejected() {
        let mut c = config(0);
        assert!(NoiseProbe::new(c.clone()).is_err());
        c.duration_ns = 1;
        c.threshold_ns = 0;
        assert!(NoiseProbe::new(c.clone()).is_err());
        c.threshold_ns = 1_000;
        c.cpus.clear();
        assert!(NoiseProbe::new(c).is_err());
    }
}
