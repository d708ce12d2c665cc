//! The kernel's own timer latency (`rtlab run -P timerlat`): the timerlat tracer's per-CPU
//! kernel threads, driven as `rtla timerlat` drives them, recorded per activation.
//!
//! The tracer writes one `ftrace:timerlat` record per activation from the timer's interrupt
//! handler (context irq: `timerlat.irq`) and one from the woken kernel thread (context thread:
//! `timerlat.thread`, the main metric), both as the time since the timer's expiry, with the
//! activation's per-CPU sequence number. User-space threads (`timerlat_fd`, Linux 6.8+)
//! would add context user (`timerlat.user`); their records are recorded if they come, but
//! rtlab starts none (run.json says whether the kernel offers them).
//!
//! Nothing here runs in real time: the kernel samples, and the tracing session's reader
//! thread hands the decoded records to [`TimerlatRecords`], which records them into the
//! same histograms, moments and per-second maxima as every probe and accounts for every
//! activation: irq and thread records pair by sequence number, and what the ring buffer lost
//! (its lost-events markers, and the `overrun` of `per_cpu/cpuN/stats`), irq records without
//! their thread record, thread records without their irq record and activations of which no
//! record came are counted ([`TimerlatCounts`]), never dropped silently.

use crate::live::LiveStats;
use crate::raw::{RawSample, SampleTap, TappedSamples, Unrecorded};
use crate::recorder::MetricRecorder;
use crate::{Budget, Detail, MetricOutput, Probe, ProbeError, ProbeOutput, ThreadOutput};
use rtlab_sys::tracefs::event::{EventKind, KernelEvent, TIMERLAT_IRQ, TIMERLAT_THREAD, TIMERLAT_USER};
use rtlab_sys::tracefs::timerlat::{TimerlatConfig, TimerlatSession};
use rtlab_sys::tracefs::{RingStats, StealSample, TraceConsumer, TraceError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// rtla's default period (`rtla timerlat -p`, the kernel's `timerlat_period_us`).
pub const DEFAULT_PERIOD_NS: u64 = 1_000_000;
/// Ring buffer per CPU: at 1 kHz two 32-byte records per activation fill 64 KiB/s, and the
/// reader drains every 100 ms; this leaves room for seconds of a stalled reader.
pub const BUFFER_KB_PER_CPU: usize = 4096;
/// How often the probe's own thread looks at the stop flag and the deadline.
const MAIN_THREAD_NAP: Duration = Duration::from_millis(100);
/// The tracer's period limits (kernel/trace/trace_osnoise.c: 100 µs to 1 s).
pub const PERIOD_RANGE_NS: std::ops::RangeInclusive<u64> = 100_000..=1_000_000_000;

/// What the probe runs with.
#[derive(Debug, Clone)]
pub struct TimerlatProbeConfig {
    pub cpus: Vec<usize>,
    pub period_ns: u64,
    /// None: until the stop flag is set (`rtlab monitor`).
    pub budget: Option<Budget>,
    pub histogram_max_ns: u64,
    /// SCHED_FIFO priority for the kernel's `timerlat/N` threads (rtla -P); None keeps the
    /// kernel's own (SCHED_FIFO 95).
    pub thread_priority: Option<i32>,
    /// Where every record also goes, with the activations that gave none, as the trace
    /// reader takes them (`rtlab monitor -P timerlat` cuts them into windows).
    pub tap: Option<SampleTap>,
}

/// How every activation of one CPU was accounted for. Identity (checked by
/// [`TimerlatCounts::adds_up`]): `activations = paired + irq_without_thread +
/// irq_in_flight_at_end + irq_before_tracing + thread_without_irq + no_record`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimerlatCounts {
    /// Activations from the first record's sequence number to the last one's (the tracer
    /// numbers a CPU's activations from 1 when its threads start, which may be before tracing
    /// is switched on: activations before the first record are not the window's).
    pub activations: u64,
    /// Activations with both their irq and their thread record.
    pub paired: u64,
    /// Irq records whose thread record never came (lost), the last one excepted.
    pub irq_without_thread: u64,
    /// 1 when the CPU's last irq record has no thread record: the activation tracing stopped
    /// in (its thread had not run yet), or a thread record lost at the very end.
    pub irq_in_flight_at_end: u64,
    /// 1 when the CPU's first record is a thread record: tracing was switched on between the
    /// activation's interrupt and its thread (the mirror of `irq_in_flight_at_end`).
    pub irq_before_tracing: u64,
    /// Thread records whose irq record never came (lost), the first one excepted.
    pub thread_without_irq: u64,
    /// Sequence numbers of which neither record came (lost).
    pub no_record: u64,
    /// Events the ring buffer's lost-events markers count (page headers).
    pub ring_lost_events: u64,
    /// Lost-events markers, with or without a count.
    pub ring_lost_markers: u64,
    /// Paired activations whose thread latency is below their irq latency: the thread runs
    /// after the interrupt, so this must stay 0.
    pub thread_before_irq: u64,
    /// Periods the tracer skipped because its thread woke a whole period or more late
    /// (`wait_next_period` moves the next expiry past now): ⌊thread latency / period⌋ summed.
    pub skipped_periods: u64,
    /// User-context records (`timerlat_fd` threads).
    pub user: u64,
    /// Records out of sequence (a sequence number lower than one already seen).
    pub out_of_order: u64,
}

impl TimerlatCounts {
    /// Every activation falls in exactly one class.
    pub fn adds_up(&self) -> bool {
        self.activations
            == self.paired
                + self.irq_without_thread
                + self.irq_in_flight_at_end
                + self.irq_before_tracing
                + self.thread_without_irq
                + self.no_record
    }

    /// Irq records recorded.
    pub fn irq_records(&self) -> u64 {
        self.paired + self.irq_without_thread + self.irq_in_flight_at_end
    }

    /// Thread records recorded.
    pub fn thread_records(&self) -> u64 {
        self.paired + self.irq_before_tracing + self.thread_without_irq
    }

    /// Activations whose thread record is missing (the one in flight at the end excepted).
    pub fn thread_lost(&self) -> u64 {
        self.irq_without_thread + self.no_record
    }
}

/// One CPU's records as they come.
struct CpuRecords {
    cpu: usize,
    irq: MetricRecorder,
    thread: MetricRecorder,
    user: Option<MetricRecorder>,
    counts: TimerlatCounts,
    /// The latest irq record still waiting for its thread record: (seqnum, latency, expiry).
    pending_irq: Option<(u32, i64, u64)>,
    first_seqnum: Option<u32>,
    last_seqnum: Option<u32>,
    /// Contexts (irq, thread, user) already recorded for `last_seqnum`.
    seen: [bool; 3],
    live: Arc<LiveStats>,
    thread_min: i64,
    thread_max: i64,
    thread_sum: i64,
    /// With a tap: what goes to it at the next delivery.
    tapped: Option<CpuTap>,
}

/// One CPU's records and missing activations since the last delivery to the tap, with the
/// expiry each happened at (the record's time minus its latency: the trace clock is
/// CLOCK_MONOTONIC).
#[derive(Default)]
struct CpuTap {
    thread: Vec<RawSample>,
    irq: Vec<RawSample>,
    thread_unrecorded: Vec<Unrecorded>,
    irq_unrecorded: Vec<Unrecorded>,
    /// Expiry of the latest activation that had a record.
    last_expected: Option<u64>,
}

impl CpuTap {
    fn lost(list: &mut Vec<Unrecorded>, expected_ns: u64, lost: u64) {
        list.push(Unrecorded { expected_ns, lost, overruns: 0 });
    }
}

/// Takes the decoded `ftrace:timerlat` records of a running session (a [`TraceConsumer`]) and
/// records, pairs and counts them; see the module documentation.
pub struct TimerlatRecords {
    cpus: Vec<CpuRecords>,
    period_ns: u64,
    histogram_max_ns: u64,
    planned_ns: u64,
    window_start_ns: u64,
    tap: Option<SampleTap>,
}

impl TimerlatRecords {
    /// Recorders for `cpus`, allocated now; `window_start_ns` (CLOCK_MONOTONIC, the trace
    /// clock `mono`) places the per-second maxima.
    pub fn new(
        cpus: &[usize],
        period_ns: u64,
        histogram_max_ns: u64,
        planned_ns: u64,
        window_start_ns: u64,
    ) -> Result<Self, ProbeError> {
        let mut all = Vec::new();
        for &cpu in cpus {
            let recorder = |metric: &str| -> Result<MetricRecorder, ProbeError> {
                let mut r = MetricRecorder::new(metric, histogram_max_ns, planned_ns, None, 0)?;
                r.start(window_start_ns);
                Ok(r)
            };
            all.push(CpuRecords {
                cpu,
                irq: recorder("timerlat.irq")?,
                thread: recorder("timerlat.thread")?,
                user: None,
                counts: TimerlatCounts::default(),
                pending_irq: None,
                first_seqnum: None,
                last_seqnum: None,
                seen: [false; 3],
                live: Arc::new(LiveStats::new(cpu)),
                thread_min: i64::MAX,
                thread_max: i64::MIN,
                thread_sum: 0,
                tapped: None,
            });
        }
        Ok(Self { cpus: all, period_ns: period_ns.max(1), histogram_max_ns, planned_ns, window_start_ns, tap: None })
    }

    /// Also hands every record, and every activation that gave none, to `tap`
    /// ([`deliver`](Self::deliver)).
    pub fn with_tap(mut self, tap: SampleTap) -> Self {
        for c in &mut self.cpus {
            c.tapped = Some(CpuTap::default());
        }
        self.tap = Some(tap);
        self
    }

    /// Sends what the CPUs took since the last delivery to the tap: per CPU and metric one
    /// chunk of samples in the order they came, with the activations that gave no record
    /// (`unrecorded.lost`) and the periods skipped after late thread wake-ups
    /// (`unrecorded.overruns`, on `timerlat.thread`).
    pub fn deliver(&mut self) {
        let Some(tap) = &self.tap else { return };
        for c in &mut self.cpus {
            let Some(t) = c.tapped.as_mut() else { continue };
            for (metric, samples, unrecorded) in [
                ("timerlat.thread", &mut t.thread, &mut t.thread_unrecorded),
                ("timerlat.irq", &mut t.irq, &mut t.irq_unrecorded),
            ] {
                if samples.is_empty() && unrecorded.is_empty() {
                    continue;
                }
                tap.deliver(TappedSamples {
                    cpu: c.cpu,
                    metric: metric.into(),
                    samples: std::mem::take(samples),
                    unrecorded: std::mem::take(unrecorded),
                });
            }
        }
    }

    /// The progress counters, one per CPU.
    pub fn live(&self) -> Vec<Arc<LiveStats>> {
        self.cpus.iter().map(|c| c.live.clone()).collect()
    }

    /// The counts of `cpu` so far.
    pub fn counts(&self, cpu: usize) -> Option<TimerlatCounts> {
        self.cpus.iter().find(|c| c.cpu == cpu).map(|c| c.counts)
    }

    /// Every CPU has at least `n` thread records.
    pub fn every_cpu_has(&self, n: u64) -> bool {
        self.cpus.iter().all(|c| c.counts.thread_records() >= n)
    }

    /// Takes one decoded event of `cpu` (events of one CPU in time order). Events other
    /// than `ftrace:timerlat` and lost markers are ignored, as are CPUs not traced.
    pub fn take(&mut self, cpu: u32, event: &KernelEvent) -> Result<(), ProbeError> {
        let period_ns = self.period_ns;
        let (histogram_max_ns, planned_ns, window_start_ns) =
            (self.histogram_max_ns, self.planned_ns, self.window_start_ns);
        let Some(c) = self.cpus.iter_mut().find(|c| c.cpu == cpu as usize) else { return Ok(()) };
        let (seqnum, context, latency) = match event.kind {
            EventKind::Timerlat { seqnum, context, timer_latency_ns } => (seqnum, context, timer_latency_ns),
            EventKind::Lost { events } => {
                c.counts.ring_lost_markers += 1;
                c.counts.ring_lost_events += events;
                return Ok(());
            }
            _ => return Ok(()),
        };
        let slot = match context {
            TIMERLAT_IRQ => 0,
            TIMERLAT_THREAD => 1,
            TIMERLAT_USER => 2,
            _ => {
                c.counts.out_of_order += 1;
                return Ok(());
            }
        };
        let first_record = c.first_seqnum.is_none();
        // The expiry: the trace clock is CLOCK_MONOTONIC, the latency counts from the expiry.
        let expected_ns = u64::try_from(i128::from(event.ts_ns) - i128::from(latency)).unwrap_or(0);
        // Sequence numbers: new ones extend the window; skipped ones had no record at all.
        if c.last_seqnum.is_none_or(|last| seqnum > last) {
            if let Some(last) = c.last_seqnum {
                let skipped = u64::from(seqnum - last - 1);
                c.counts.no_record += skipped;
                if let Some(t) = c.tapped.as_mut().filter(|_| skipped > 0) {
                    // Their expiries are not known: the periods after the last one seen.
                    let from = t.last_expected.map_or(expected_ns, |e| e + period_ns);
                    CpuTap::lost(&mut t.thread_unrecorded, from, skipped);
                    CpuTap::lost(&mut t.irq_unrecorded, from, skipped);
                }
            }
            let first = *c.first_seqnum.get_or_insert(seqnum);
            c.counts.activations = u64::from(seqnum - first) + 1;
            c.last_seqnum = Some(seqnum);
            c.seen = [false; 3];
            // The irq record of an earlier activation whose thread record never came.
            if let Some((_, _, pending_expected)) = c.pending_irq.take() {
                c.counts.irq_without_thread += 1;
                if let Some(t) = c.tapped.as_mut() {
                    CpuTap::lost(&mut t.thread_unrecorded, pending_expected, 1);
                }
            }
        } else if c.last_seqnum.is_some_and(|last| seqnum < last) || c.seen[slot] || (slot == 0 && c.seen[1]) {
            // An old sequence number, a context seen twice, an irq record after its thread's:
            // the tracer writes none of these.
            c.counts.out_of_order += 1;
            return Ok(());
        }
        c.seen[slot] = true;
        match context {
            TIMERLAT_IRQ => {
                c.pending_irq = Some((seqnum, latency, expected_ns));
                c.irq.record(event.ts_ns, latency, cpu, 0);
                if let Some(t) = c.tapped.as_mut() {
                    t.irq.push(RawSample { expected_ns, value_ns: latency, cpu, flags: 0 });
                    t.last_expected = Some(expected_ns);
                }
            }
            TIMERLAT_THREAD => {
                match c.pending_irq.take() {
                    Some((pending, irq_latency, _)) if pending == seqnum => {
                        c.counts.paired += 1;
                        if latency < irq_latency {
                            c.counts.thread_before_irq += 1;
                        }
                    }
                    // The window's first record: its irq came before tracing was on.
                    _ if first_record => c.counts.irq_before_tracing = 1,
                    _ => {
                        c.counts.thread_without_irq += 1;
                        if let Some(t) = c.tapped.as_mut() {
                            CpuTap::lost(&mut t.irq_unrecorded, expected_ns, 1);
                        }
                    }
                }
                let mut skipped = 0;
                if latency >= period_ns as i64 {
                    skipped = latency as u64 / period_ns;
                    c.counts.skipped_periods += skipped;
                }
                if let Some(t) = c.tapped.as_mut() {
                    t.thread.push(RawSample { expected_ns, value_ns: latency, cpu, flags: 0 });
                    if skipped > 0 {
                        t.thread_unrecorded.push(Unrecorded {
                            expected_ns: expected_ns + period_ns,
                            lost: 0,
                            overruns: skipped,
                        });
                    }
                    t.last_expected = Some(expected_ns);
                }
                c.thread.record(event.ts_ns, latency, cpu, 0);
                c.thread_min = c.thread_min.min(latency);
                c.thread_max = c.thread_max.max(latency);
                c.thread_sum = c.thread_sum.saturating_add(latency);
                c.live.publish(
                    c.counts.thread_records(),
                    c.counts.skipped_periods,
                    c.counts.thread_lost(),
                    c.thread_min,
                    c.thread_max,
                    c.thread_sum,
                );
            }
            TIMERLAT_USER => {
                c.counts.user += 1;
                if c.user.is_none() {
                    let mut r = MetricRecorder::new("timerlat.user", histogram_max_ns, planned_ns, None, 0)?;
                    r.start(window_start_ns);
                    c.user = Some(r);
                }
                if let Some(user) = c.user.as_mut() {
                    user.record(event.ts_ns, latency, cpu, 0);
                }
            }
            _ => c.counts.out_of_order += 1,
        }
        Ok(())
    }

    /// The finished measurement: per CPU a thread output with `timerlat.irq`,
    /// `timerlat.thread` (and `timerlat.user` if any came), the counts as details.
    pub fn finish(self, ring_stats: &[RingStats], extra: &[(String, Detail)]) -> Vec<ThreadOutput> {
        let period_ns = self.period_ns;
        self.cpus
            .into_iter()
            .map(|mut c| {
                if c.pending_irq.take().is_some() {
                    c.counts.irq_in_flight_at_end = 1;
                }
                let n = c.counts;
                let stats = ring_stats.iter().find(|s| s.cpu == c.cpu).copied().unwrap_or_default();
                let int = |v: u64| Detail::Int(i64::try_from(v).unwrap_or(i64::MAX));
                let mut details: Vec<(String, Detail)> = vec![
                    ("period_ns".into(), int(period_ns)),
                    ("activations".into(), int(n.activations)),
                    ("paired".into(), int(n.paired)),
                    ("irq_without_thread".into(), int(n.irq_without_thread)),
                    ("irq_in_flight_at_end".into(), int(n.irq_in_flight_at_end)),
                    ("irq_before_tracing".into(), int(n.irq_before_tracing)),
                    ("thread_without_irq".into(), int(n.thread_without_irq)),
                    ("no_record".into(), int(n.no_record)),
                    ("ring_lost_events".into(), int(n.ring_lost_events)),
                    ("ring_lost_markers".into(), int(n.ring_lost_markers)),
                    ("ring_overrun".into(), int(stats.overrun)),
                    ("ring_dropped".into(), int(stats.dropped)),
                    ("thread_before_irq".into(), int(n.thread_before_irq)),
                    ("skipped_periods".into(), int(n.skipped_periods)),
                    ("out_of_order".into(), int(n.out_of_order)),
                ];
                details.extend(extra.iter().cloned());
                let block_s = c.thread.block_s();
                let mut metrics: Vec<MetricOutput> = vec![c.thread.finish(), c.irq.finish()];
                if let Some(user) = c.user {
                    metrics.push(user.finish());
                }
                ThreadOutput {
                    cpu: c.cpu,
                    thread_name: format!("timerlat/{}", c.cpu),
                    cycles: n.activations + n.skipped_periods,
                    overruns: n.skipped_periods,
                    lost: n.thread_lost(),
                    metrics,
                    interrupted: false,
                    block_s,
                    interval_ns: period_ns,
                    details,
                }
            })
            .collect()
    }
}

/// The session's reader hands decoded events here; errors are kept for the end.
struct Consumer {
    records: TimerlatRecords,
    error: Option<ProbeError>,
}

impl TraceConsumer for Consumer {
    fn events(&mut self, cpu: u32, events: Vec<KernelEvent>) {
        for event in &events {
            if let Err(e) = self.records.take(cpu, event) {
                self.error.get_or_insert(e);
            }
        }
        self.records.deliver();
    }

    fn complete_before(&mut self, _cpu: u32, _ns: u64) {}

    fn steal(&mut self, _readings: &[StealSample]) {}
}

/// `-P timerlat`: see the module documentation.
pub struct TimerlatProbe {
    config: TimerlatProbeConfig,
    live: Vec<Arc<LiveStats>>,
}

impl TimerlatProbe {
    /// Checks the configuration and that this kernel has the tracer (exit 3 otherwise:
    /// [`ProbeError::Unavailable`] with the kernels that have it).
    pub fn new(config: TimerlatProbeConfig) -> Result<Self, ProbeError> {
        if config.cpus.is_empty() {
            return Err(ProbeError::Config("no CPU to measure".into()));
        }
        if !PERIOD_RANGE_NS.contains(&config.period_ns) || !config.period_ns.is_multiple_of(1_000) {
            return Err(ProbeError::Config(format!(
                "the timerlat tracer's period is whole microseconds from 100us to 1s (--interval), not {} ns",
                config.period_ns
            )));
        }
        rtlab_sys::tracefs::timerlat::check_support().map_err(unavailable)?;
        let live = config.cpus.iter().map(|&cpu| Arc::new(LiveStats::new(cpu))).collect();
        Ok(Self { config, live })
    }
}

fn unavailable(e: TraceError) -> ProbeError {
    ProbeError::Unavailable { probe: "timerlat".into(), what: "the timerlat tracer".into(), reason: e.to_string() }
}

impl Probe for TimerlatProbe {
    fn name(&self) -> &'static str {
        "timerlat"
    }

    fn live(&self) -> Vec<Arc<LiveStats>> {
        self.live.clone()
    }

    fn run(self: Box<Self>, stop: Arc<AtomicBool>) -> Result<ProbeOutput, ProbeError> {
        let c = &self.config;
        let planned_ns = c.budget.map_or(0, |b| b.planned_ns(c.period_ns));
        let window_start_ns = rtlab_sys::clock::monotonic_ns();
        let mut records = TimerlatRecords::new(&c.cpus, c.period_ns, c.histogram_max_ns, planned_ns, window_start_ns)?;
        if let Some(tap) = &c.tap {
            records = records.with_tap(tap.clone());
        }
        // The progress display holds the probe's counters: publish through them.
        for (r, live) in records.cpus.iter_mut().zip(&self.live) {
            r.live = live.clone();
        }
        let consumer = Arc::new(Mutex::new(Consumer { records, error: None }));
        let session = TimerlatSession::start(
            TimerlatConfig {
                cpus: c.cpus.clone(),
                period_us: c.period_ns / 1_000,
                buffer_kb_per_cpu: BUFFER_KB_PER_CPU,
            },
            consumer.clone(),
        )
        .map_err(unavailable)?;
        let mut notes = vec![format!("kernel trace: {}", session.description())];
        let (user_threads, why) = if session.user_threads_offered() {
            (
                "offered by this kernel, not used",
                "osnoise/per_cpu/cpuN/timerlat_fd exists; rtlab records the kernel threads",
            )
        } else {
            ("not offered by this kernel", "timerlat_fd came with Linux 6.8; rtlab records the kernel threads")
        };
        notes.push(format!("timerlat user-space threads: {user_threads} ({why})."));
        // The kernel creates its threads when tracing starts; rtla -P sets them after.
        let mut policy = "SCHED_FIFO 95 (the kernel's default)".to_string();
        let mut result = Ok(());
        if let Some(priority) = c.thread_priority {
            std::thread::sleep(Duration::from_millis(50));
            match rtlab_sys::tracefs::timerlat::set_thread_priority(&c.cpus, priority) {
                Ok(set) if set.len() == c.cpus.len() => policy = format!("SCHED_FIFO {priority} (set by rtlab)"),
                Ok(set) => {
                    result = Err(unavailable(TraceError::Unsupported(format!(
                        "found {} of the {} timerlat threads to set to SCHED_FIFO {priority}",
                        set.len(),
                        c.cpus.len()
                    ))))
                }
                Err(e) => result = Err(unavailable(e)),
            }
        }
        let deadline = match c.budget {
            Some(Budget::Duration { ns }) => Some(std::time::Instant::now() + Duration::from_nanos(ns)),
            Some(Budget::Samples(_)) | None => None,
        };
        let mut interrupted = false;
        while result.is_ok() {
            if stop.load(Ordering::SeqCst) {
                interrupted = true;
                break;
            }
            let done = match (deadline, c.budget) {
                (Some(deadline), _) => std::time::Instant::now() >= deadline,
                (None, Some(Budget::Samples(n))) => lock(&consumer).records.every_cpu_has(n),
                // Until stopped.
                (None, None) => false,
                (None, Some(Budget::Duration { .. })) => true,
            };
            if done {
                break;
            }
            // Wakes as seldom as the trace reader (every wake-up is noise on the CPUs
            // measured), but ends on time.
            let nap = deadline.map_or(MAIN_THREAD_NAP, |d| {
                d.saturating_duration_since(std::time::Instant::now()).min(MAIN_THREAD_NAP)
            });
            std::thread::sleep(nap);
        }
        // Stopping drains the buffers into the consumer, removes the instance and restores
        // the osnoise settings, on every path.
        let capture = session.stop().map_err(unavailable);
        result?;
        let capture = capture?;
        let consumer = Arc::try_unwrap(consumer)
            .map_err(|_| ProbeError::Unavailable {
                probe: "timerlat".into(),
                what: "the trace reader's records".into(),
                reason: "the reader still holds them after it stopped".into(),
            })?
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = consumer.error {
            return Err(e);
        }
        let extra = vec![
            ("thread_policy".to_string(), Detail::Text(policy.clone())),
            ("user_threads".to_string(), Detail::Text(user_threads.into())),
        ];
        let mut threads = consumer.records.finish(&capture.ring_stats, &extra);
        for t in &mut threads {
            t.interrupted = interrupted;
        }
        notes.push(format!("timerlat threads ran at {policy}."));
        Ok(ProbeOutput { probe: "timerlat".into(), threads, raw_written: Vec::new(), notes })
    }
}

fn lock(consumer: &Mutex<Consumer>) -> std::sync::MutexGuard<'_, Consumer> {
    consumer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
