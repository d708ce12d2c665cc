//! A probe's samples split with the kernel trace taken while it ran (`rtlab run --split`),
//! as the run goes on: [`StreamingSplit`] takes the probe's samples from a [`SampleTap`] and
//! the decoded events from the tracing session's reader, cuts each sample with
//! [`crate::split`] as soon as the events up to its wake-up are in, records the parts as
//! metrics of their own, explains the worst samples, and drops every event no sample can
//! still need. Memory stays bounded whatever the run's length: about two seconds of events
//! per CPU (the explanations' context, a second either side of a spike) plus the spikes.
//!
//! Main types:
//! - [`SplitSettings`]: which samples to explain and the measuring threads' priority.
//! - [`StreamingSplit`]: the running split; a [`TraceConsumer`] for a tracefs session's
//!   reader, or a [`RecordConsumer`] for the eBPF backend's, which hands over one record
//!   per wake-up instead of events (see [`SplitSource`]).
//! - [`ThreadSplit`]: per thread, how many samples were split, why the others were not, how
//!   exactly the parts add up, and the explanations.
//! - [`ProbeSplitAccount`]: what [`StreamingSplit::finish`] adds to a finished
//!   [`ProbeOutput`] (the part metrics) and returns (the per-thread account).

use crate::raw::{RawSample, SampleTap, TappedSamples};
use crate::recorder::MetricRecorder;
use crate::split::{self, Explanation, SplitParts, Stimulus, Unsplit, WakeSample};
use crate::{ProbeError, ProbeOutput};
pub use rtlab_results::split::{part_metrics, SplitCounts};
use rtlab_sys::tracefs::ebpf::{RecordConsumer, SplitRecord};
use rtlab_sys::tracefs::event::{EventKind, KernelEvent};
use rtlab_sys::tracefs::{StealSample, TraceConsumer};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::mpsc::Receiver;

/// Which samples to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitSettings {
    /// Explain samples above this; None: each thread's `default_explained` worst.
    pub explain_above_ns: Option<u64>,
    /// At most this many explanations per thread (the worst).
    pub max_explained: usize,
    pub default_explained: usize,
    /// The measuring threads' kernel priority (SCHED_FIFO p: 99 - p; SCHED_OTHER: 120).
    pub thread_prio: i32,
    pub histogram_max_ns: u64,
}

/// How one thread's samples were split, and its explained spikes.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSplit {
    pub counts: SplitCounts,
    /// The first sample's time (raw `expected_ns`): explanations are placed from here.
    pub window_start_ns: u64,
    /// Samples above `explain_above_ns` (0 without a threshold).
    pub above_threshold: u64,
    pub explanations: Vec<Explanation>,
}

/// What the split of one probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSplitAccount {
    pub threads: Vec<ThreadSplit>,
    /// Kernel events decoded for the split (every traced CPU).
    pub events: u64,
    /// The most events held at once (all CPUs): what bounds the split's memory.
    pub peak_window_events: u64,
    /// Events dropped before every sample needing them was split: over
    /// [`MAX_WINDOW_EVENTS_PER_CPU`], or older than the 10 s floor. Their samples count as
    /// [`Unsplit::EventsLost`].
    pub events_dropped: u64,
}

/// The kernel's priority of a thread at `policy` `priority` (what `sched_switch` reports).
pub fn kernel_prio(realtime: bool, priority: i32) -> i32 {
    if realtime {
        99 - priority
    } else {
        120
    }
}

/// What the split cuts samples with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitSource {
    /// Every kernel event of the traced CPUs (tracefs): the cut of `crate::split`, and the
    /// worst samples explained.
    KernelEvents,
    /// One record per timer wake-up made in the kernel (eBPF): the same instants, found by
    /// the programs; nothing to explain a spike with.
    WakeUpRecords,
}

/// How often the split works through what has come in, in trace time (it is handed events
/// every poll of the reader, 10 ms; each pass costs an index over the events it looks at).
const WORK_INTERVAL_NS: u64 = 50_000_000;

/// Events older than this before the oldest sample still to come are dropped whatever
/// happens: a thread whose samples stop coming cannot make the window grow. A sample
/// arriving later than that finds its events gone and is counted unsplit.
const MAX_SAMPLE_DELAY_NS: u64 = 10_000_000_000;

/// The most events held per traced CPU (80 bytes each: 20 MiB), whatever happens. The split
/// needs about two seconds of events: under `--load mixed` this VM traces 70,000 a second
/// per CPU (under akamina 12,600), so this is 3.7 s of mixed. Past it the oldest go, and
/// the samples that needed them count as [`Unsplit::EventsLost`]: a stalled reader costs
/// coverage, not memory.
const MAX_WINDOW_EVENTS_PER_CPU: usize = 1 << 18;

/// A thread whose name never appears in the trace: its samples wait this long for it, then
/// count as [`Unsplit::NoSwitchIn`].
const TID_PATIENCE_NS: u64 = 2_000_000_000;

/// One traced CPU's events not yet dropped, and up to when they are complete.
#[derive(Debug, Default)]
struct CpuWindow {
    events: VecDeque<KernelEvent>,
    complete_before_ns: u64,
    /// Events before this instant are needed by no sample or candidate (the last pass's
    /// reckoning): they go first, uncounted.
    needed_from_ns: u64,
    /// The newest event dropped before every sample that needed it was split (0: none).
    dropped_through_ns: u64,
}

/// Events dropped while a sample could still need them.
#[derive(Debug, Default)]
struct DropTally {
    /// Events (not markers).
    events: u64,
    /// What the `Lost` markers among them (the kernel's or an earlier drop's) stood for.
    marked_lost: u64,
    last_ns: Option<u64>,
}

impl DropTally {
    fn add(&mut self, event: &KernelEvent) {
        match event.kind {
            EventKind::Lost { events } => self.marked_lost += events,
            _ => self.events += 1,
        }
        self.last_ns = Some(event.ts_ns);
    }
}

impl CpuWindow {
    /// Appends a chunk of events. What no sample needs goes first; then, past
    /// [`MAX_WINDOW_EVENTS_PER_CPU`], the oldest, leaving a marker. The window's memory never
    /// grows past the bound: its capacity doubles up to it, not beyond. Returns how many
    /// events were dropped that samples may still need.
    fn push(&mut self, mut events: Vec<KernelEvent>, cpu: u32) -> u64 {
        self.drop_unneeded();
        // One slot stays for the marker of what goes.
        let over = (self.events.len() + events.len()).saturating_sub(MAX_WINDOW_EVENTS_PER_CPU - 1);
        let mut tally = DropTally::default();
        if over > 0 {
            let from_window = over.min(self.events.len());
            self.events.drain(..from_window).for_each(|e| tally.add(&e));
            events.drain(..over - from_window).for_each(|e| tally.add(&e));
        }
        let needed = self.events.len() + usize::from(tally.last_ns.is_some()) + events.len();
        if needed > self.events.capacity() {
            let target = (self.events.capacity() * 2).clamp(needed, MAX_WINDOW_EVENTS_PER_CPU);
            self.events.reserve_exact(target - self.events.len());
        }
        let dropped = self.leave_marker(tally, cpu);
        self.events.extend(events);
        dropped
    }

    /// Drops the events before [`CpuWindow::needed_from_ns`]: no sample or candidate needs
    /// them.
    fn drop_unneeded(&mut self) {
        let needed_from = self.needed_from_ns;
        let unneeded = self.events.partition_point(|e| e.ts_ns < needed_from);
        self.events.drain(..unneeded);
    }

    /// Drops the events before `floor` (samples may still need them), leaving a marker.
    fn drop_before(&mut self, floor_ns: u64, cpu: u32) -> u64 {
        let count = self.events.partition_point(|e| e.ts_ns < floor_ns);
        let mut tally = DropTally::default();
        self.events.drain(..count).for_each(|e| tally.add(&e));
        self.leave_marker(tally, cpu)
    }

    /// A `Lost` marker in place of the dropped events, for the explanations and for
    /// [`StreamingSplit::split_ready`]; returns how many events went.
    fn leave_marker(&mut self, tally: DropTally, cpu: u32) -> u64 {
        let Some(last_ns) = tally.last_ns else { return 0 };
        self.dropped_through_ns = self.dropped_through_ns.max(last_ns);
        let lost = tally.events + tally.marked_lost;
        self.events.push_front(KernelEvent { ts_ns: last_ns, cpu, pid: -1, kind: EventKind::Lost { events: lost } });
        tally.events
    }

    /// The events in [from, to], in order.
    fn range(&mut self, from_ns: u64, to_ns: u64) -> &[KernelEvent] {
        let events = self.events.make_contiguous();
        let first = events.partition_point(|e| e.ts_ns < from_ns);
        let last = events.partition_point(|e| e.ts_ns <= to_ns);
        events.get(first..last.max(first)).unwrap_or_default()
    }
}

/// A spike chosen for explanation; explained once the events up to a second past its
/// wake-up are in (the explanation names tasks from them).
#[derive(Debug)]
struct Candidate {
    sample: WakeSample,
    parts: Option<SplitParts>,
    explanation: Option<Explanation>,
}

/// One measuring thread.
struct ThreadState {
    cpu: usize,
    comm: String,
    /// Samples received and not yet split, with the time each is recorded at.
    pending: VecDeque<(u64, WakeSample)>,
    /// Net: the two metrics whose records make a wake-up, until their partner comes.
    activation: VecDeque<RawSample>,
    latency: VecDeque<RawSample>,
    /// Due time of the last sample received: later ones are due after it.
    last_due_ns: u64,
    /// The three part metrics, made when the first sample says where the window starts.
    recorders: Option<Vec<MetricRecorder>>,
    account: ThreadSplit,
    /// The worst samples so far, worst first (ties: the earlier first).
    candidates: Vec<Candidate>,
}

/// The split of one probe's samples while it runs; see the module documentation.
pub struct StreamingSplit {
    /// The measuring threads' names less the CPU: "rtlab-timer/".
    comm_prefix: String,
    source: SplitSource,
    /// Wake-up records not yet matched to a sample, per CPU by expiry.
    records: BTreeMap<u32, BTreeMap<u64, SplitRecord>>,
    stimulus: Stimulus,
    names: [&'static str; 3],
    settings: SplitSettings,
    interval_ns: u64,
    planned_ns: u64,
    samples: Receiver<TappedSamples>,
    cpus: BTreeMap<u32, CpuWindow>,
    threads: BTreeMap<usize, ThreadState>,
    steal: VecDeque<StealSample>,
    events: u64,
    peak_window_events: u64,
    events_dropped: u64,
    /// The completeness instant of the last pass.
    last_work_ns: u64,
    /// A recorder that could not be made (the histogram's range): reported by `finish`.
    failure: Option<ProbeError>,
}

impl StreamingSplit {
    /// A split of `probe` ("timer" or "net") whose threads sample every `interval_ns` for
    /// about `planned_ns`, with the events of `traced_cpus`; the tap to give the probe, and
    /// the split for the tracing session.
    pub fn new(
        probe: &str,
        source: SplitSource,
        settings: SplitSettings,
        interval_ns: u64,
        planned_ns: u64,
        traced_cpus: &[usize],
    ) -> Result<(SampleTap, StreamingSplit), ProbeError> {
        let Some(names) = part_metrics(probe) else {
            return Err(ProbeError::Config(format!("{probe} has no interrupt/scheduling split")));
        };
        if source == SplitSource::WakeUpRecords && probe != "timer" {
            return Err(ProbeError::Config(format!("wake-up records split the timer probe only, not {probe}")));
        }
        let (tap, samples) = SampleTap::new();
        let split = StreamingSplit {
            comm_prefix: format!("rtlab-{probe}/"),
            source,
            records: BTreeMap::new(),
            stimulus: if probe == "net" { Stimulus::Datagram } else { Stimulus::Timer },
            names,
            settings,
            interval_ns: interval_ns.max(1),
            planned_ns: planned_ns.max(1),
            samples,
            // Every traced CPU from the start: none is complete until its reader says so.
            cpus: traced_cpus.iter().map(|&cpu| (cpu as u32, CpuWindow::default())).collect(),
            threads: BTreeMap::new(),
            steal: VecDeque::new(),
            events: 0,
            peak_window_events: 0,
            events_dropped: 0,
            last_work_ns: 0,
            failure: None,
        };
        Ok((tap, split))
    }

    /// How far before a sample's due time its events are kept: the explanation's context,
    /// the arming of its timer (one interval before), the lost-event look-back.
    fn keep_before_ns(&self) -> u64 {
        split::CONTEXT_LOOKBACK_NS + self.cut_lookback_ns()
    }

    /// How far before a sample's due time its cut looks: its timer's arming (one interval
    /// before) and the lost-event look-back.
    fn cut_lookback_ns(&self) -> u64 {
        2 * self.interval_ns + split::LOST_LOOKBACK_NS
    }

    /// Works through everything, as if every CPU's events were complete: after the session
    /// stopped and the probe finished. Adds the part metrics to `output`'s threads.
    pub fn finish(mut self, output: &mut ProbeOutput) -> Result<ProbeSplitAccount, ProbeError> {
        for window in self.cpus.values_mut() {
            window.complete_before_ns = u64::MAX;
        }
        self.work();
        if let Some(failure) = self.failure.take() {
            return Err(failure);
        }
        let mut accounts = Vec::new();
        for thread in &mut output.threads {
            let state = self.threads.remove(&thread.cpu);
            let (account, recorders) = match state {
                Some(mut state) => {
                    state.account.explanations = state.candidates.into_iter().filter_map(|c| c.explanation).collect();
                    (state.account, state.recorders)
                }
                None => (empty_account(thread.cpu), None),
            };
            let recorders = match recorders {
                Some(r) => r,
                None => self.recorders(0)?,
            };
            thread.metrics.extend(recorders.into_iter().map(MetricRecorder::finish));
            accounts.push(account);
        }
        Ok(ProbeSplitAccount {
            threads: accounts,
            events: self.events,
            peak_window_events: self.peak_window_events,
            events_dropped: self.events_dropped,
        })
    }

    fn recorders(&self, window_start_ns: u64) -> Result<Vec<MetricRecorder>, ProbeError> {
        let mut recorders = self
            .names
            .iter()
            .map(|name| MetricRecorder::new(*name, self.settings.histogram_max_ns, self.planned_ns, None, 0))
            .collect::<Result<Vec<_>, _>>()?;
        for r in &mut recorders {
            r.start(window_start_ns);
        }
        Ok(recorders)
    }

    /// Takes the samples the tap has delivered.
    fn receive_samples(&mut self) {
        while let Ok(batch) = self.samples.try_recv() {
            let prefix = &self.comm_prefix;
            let thread = self
                .threads
                .entry(batch.cpu)
                .or_insert_with(|| ThreadState::new(batch.cpu, format!("{prefix}{}", batch.cpu)));
            let cpu = batch.cpu as u32;
            match self.stimulus {
                Stimulus::Timer => {
                    for s in batch.samples {
                        let wake = WakeSample {
                            cpu,
                            due_ns: s.expected_ns,
                            wake_ns: s.expected_ns.saturating_add_signed(s.value_ns),
                        };
                        thread.push(s.expected_ns, wake);
                    }
                }
                Stimulus::Datagram => {
                    match batch.metric.rsplit('.').next() {
                        Some("activation") => thread.activation.extend(batch.samples),
                        Some("latency") => thread.latency.extend(batch.samples),
                        _ => continue,
                    }
                    thread.pair_datagrams();
                }
            }
        }
    }

    /// [`work`](Self::work) once every [`WORK_INTERVAL_NS`] of trace time, and at the end.
    fn work_if_due(&mut self, complete_ns: u64) {
        if complete_ns == u64::MAX || complete_ns >= self.last_work_ns.saturating_add(WORK_INTERVAL_NS) {
            self.work();
            self.last_work_ns = complete_ns;
        }
    }

    /// Splits what can be split, explains what can be explained, drops what no sample
    /// needs any more.
    fn work(&mut self) {
        self.receive_samples();
        let keep_before = self.keep_before_ns();
        let all_complete = self.cpus.values().map(|w| w.complete_before_ns).min().unwrap_or(0);
        let cpus: Vec<usize> = self.threads.keys().copied().collect();
        for cpu in cpus {
            if let Err(e) = self.work_on_thread(cpu, all_complete) {
                self.failure.get_or_insert(e);
            }
        }
        // What a thread may still need: its oldest pending sample or candidate, else the
        // sample after its last one. Every CPU's events are kept for every thread: a
        // datagram is received on another CPU, and a timer of an isolated or tick-less CPU
        // expires on a housekeeping one. Before any sample has come, only the floor below.
        let interval_ns = self.interval_ns;
        let needs = |thread: &ThreadState| {
            let next_due = thread
                .pending
                .front()
                .map(|(_, s)| s.due_ns)
                .unwrap_or_else(|| thread.last_due_ns.saturating_add(interval_ns));
            let unexplained = thread.candidates.iter().filter(|c| c.explanation.is_none()).map(|c| c.sample.due_ns);
            unexplained.fold(next_due, u64::min)
        };
        let keep_from = self.threads.values().map(needs).min().unwrap_or(0);
        let newest = self.cpus.values().filter_map(|w| w.events.back()).map(|e| e.ts_ns).max().unwrap_or(0);
        let floor = newest.saturating_sub(MAX_SAMPLE_DELAY_NS + keep_before);
        for (&cpu, window) in &mut self.cpus {
            window.needed_from_ns = keep_from.saturating_sub(keep_before);
            window.drop_unneeded();
            self.events_dropped += window.drop_before(floor, cpu);
        }
        // Steal: the last reading before the kept window stays (it opens the interval).
        while self.steal.get(self.cpus.len().max(1)).is_some_and(|r| r.ts_ns < keep_from) {
            self.steal.pop_front();
        }
    }

    fn work_on_thread(&mut self, cpu: usize, all_complete: u64) -> Result<(), ProbeError> {
        let cpu_id = cpu as u32;
        // A datagram wakes its receiver from the sender's CPU, and a migrated timer expires
        // on another CPU: every CPU must be in.
        let complete = all_complete;
        let Some(mut thread) = self.threads.remove(&cpu) else { return Ok(()) };
        let result = match self.source {
            SplitSource::KernelEvents => self.split_ready(&mut thread, cpu_id, complete),
            SplitSource::WakeUpRecords => self.split_ready_from_records(&mut thread, cpu_id, complete),
        };
        self.explain_ready(&mut thread, cpu_id, complete);
        self.threads.insert(cpu, thread);
        result
    }

    /// Splits the thread's pending samples whose events are all in.
    fn split_ready(&mut self, thread: &mut ThreadState, cpu: u32, complete: u64) -> Result<(), ProbeError> {
        let ready = thread.pending.iter().take_while(|(_, s)| s.wake_ns < complete).count();
        if ready == 0 {
            return Ok(());
        }
        let batch: Vec<(u64, WakeSample)> = thread.pending.drain(..ready).collect();
        let samples: Vec<WakeSample> = batch.iter().map(|(_, s)| *s).collect();
        let first_due = samples.iter().map(|s| s.due_ns).min().unwrap_or(0);
        let last_wake = samples.iter().map(|s| s.wake_ns).max().unwrap_or(0);
        let from = first_due.saturating_sub(self.cut_lookback_ns());
        if thread.account.counts.tid.is_none() {
            let events = self.cpus.entry(cpu).or_default().range(0, last_wake);
            thread.account.counts.tid = thread_tid(events, cpu, &thread.comm, self.stimulus, &samples);
        }
        let results = match thread.account.counts.tid {
            Some(tid) => {
                let merged;
                let events: &[KernelEvent] = match self.stimulus {
                    Stimulus::Timer => self.cpus.entry(cpu).or_default().range(from, last_wake),
                    Stimulus::Datagram => {
                        merged = self.merged(from, last_wake);
                        &merged
                    }
                };
                let mut results = split::split_samples(events, tid, self.stimulus, &samples);
                // Timers of an isolated or tick-less CPU may expire on a housekeeping CPU:
                // those samples alone are cut again with every CPU's events.
                let migrated: Vec<usize> = (0..samples.len())
                    .filter(|&i| {
                        self.stimulus == Stimulus::Timer && matches!(results[i], Err(split::Unsplit::NoHandling))
                    })
                    .collect();
                if !migrated.is_empty() {
                    let merged = self.merged(from, last_wake);
                    let retried: Vec<WakeSample> = migrated.iter().map(|&i| samples[i]).collect();
                    let again = split::split_samples(&merged, tid, self.stimulus, &retried);
                    for (i, result) in migrated.into_iter().zip(again) {
                        results[i] = result;
                    }
                }
                results
            }
            None if complete.saturating_sub(first_due) < TID_PATIENCE_NS => {
                // The thread's name may not have been traced yet: wait for it.
                for item in batch.into_iter().rev() {
                    thread.pending.push_front(item);
                }
                return Ok(());
            }
            None => vec![Err(Unsplit::NoSwitchIn); samples.len()],
        };
        if thread.recorders.is_none() {
            thread.recorders = Some(self.recorders(thread.account.window_start_ns)?);
        }
        let dropped_through = match self.stimulus {
            Stimulus::Timer => self.cpus.get(&cpu).map_or(0, |w| w.dropped_through_ns),
            Stimulus::Datagram => self.cpus.values().map(|w| w.dropped_through_ns).max().unwrap_or(0),
        };
        for ((at_ns, sample), result) in batch.iter().zip(results) {
            // Its arming or its lost-event look-back may be among the dropped events.
            let needed_from = sample.due_ns.saturating_sub(self.cut_lookback_ns());
            let result =
                if dropped_through != 0 && needed_from <= dropped_through { Err(Unsplit::EventsLost) } else { result };
            thread.record(*at_ns, sample, result, &self.settings);
        }
        Ok(())
    }

    /// Splits the thread's pending samples whose records are all in: the record of the
    /// timer armed for the sample's due time (plus at most the timer slack) gives the two
    /// instants. No record: [`Unsplit::NoSwitchIn`] (the record is written at the switch-in).
    fn split_ready_from_records(
        &mut self,
        thread: &mut ThreadState,
        cpu: u32,
        complete: u64,
    ) -> Result<(), ProbeError> {
        let ready = thread.pending.iter().take_while(|(_, s)| s.wake_ns < complete).count();
        if ready == 0 {
            return Ok(());
        }
        if thread.recorders.is_none() {
            thread.recorders = Some(self.recorders(thread.account.window_start_ns)?);
        }
        // Records carry no events to explain a spike with.
        let settings = SplitSettings { default_explained: 0, max_explained: 0, ..self.settings };
        let records = self.records.entry(cpu).or_default();
        for (at_ns, sample) in thread.pending.drain(..ready).collect::<Vec<_>>() {
            let slack_end = sample.due_ns.saturating_add(split::MAX_TIMER_SLACK_NS as u64);
            let found = records.range(sample.due_ns..=slack_end).next().map(|(&expires, r)| (expires, *r));
            let result = match found {
                Some((expires, record)) if record.switched_in_at_ns <= sample.wake_ns => {
                    records.remove(&expires);
                    thread.account.counts.tid.get_or_insert(record.tid);
                    Ok(split::parts_at(&sample, record.handled_at_ns, record.switched_in_at_ns))
                }
                _ => Err(Unsplit::NoSwitchIn),
            };
            // Records of expiries before this sample's belong to no later sample.
            while records.first_key_value().is_some_and(|(&expires, _)| expires <= sample.due_ns) {
                records.pop_first();
            }
            thread.record(at_ns, &sample, result, &settings);
        }
        Ok(())
    }

    /// Explains the candidates whose events up to a second past the wake-up are in.
    fn explain_ready(&mut self, thread: &mut ThreadState, cpu: u32, complete: u64) {
        let Some(tid) = thread.account.counts.tid else { return };
        for candidate in thread.candidates.iter_mut().filter(|c| c.explanation.is_none()) {
            let sample = candidate.sample;
            if sample.wake_ns.saturating_add(split::CONTEXT_LOOKBACK_NS) >= complete {
                continue;
            }
            let events = self.cpus.entry(cpu).or_default().range(
                sample.due_ns.saturating_sub(split::CONTEXT_LOOKBACK_NS),
                sample.wake_ns.saturating_add(split::CONTEXT_LOOKBACK_NS),
            );
            let steal: Vec<StealSample> = self.steal.iter().copied().collect();
            candidate.explanation = Some(split::explain(
                events,
                tid,
                self.settings.thread_prio,
                self.stimulus,
                &sample,
                candidate.parts,
                &steal,
            ));
        }
    }

    /// Every CPU's events in [from, to], merged in time order (CPU by CPU for equal stamps).
    fn merged(&mut self, from_ns: u64, to_ns: u64) -> Vec<KernelEvent> {
        let mut all: Vec<KernelEvent> = self.cpus.values_mut().flat_map(|w| w.range(from_ns, to_ns).to_vec()).collect();
        all.sort_by_key(|e| e.ts_ns);
        all
    }
}

fn empty_account(cpu: usize) -> ThreadSplit {
    ThreadSplit {
        counts: SplitCounts { cpu, ..SplitCounts::default() },
        window_start_ns: 0,
        above_threshold: 0,
        explanations: Vec::new(),
    }
}

impl ThreadState {
    fn new(cpu: usize, comm: String) -> ThreadState {
        ThreadState {
            cpu,
            comm,
            pending: VecDeque::new(),
            activation: VecDeque::new(),
            latency: VecDeque::new(),
            last_due_ns: 0,
            recorders: None,
            account: empty_account(cpu),
            candidates: Vec::new(),
        }
    }

    fn push(&mut self, at_ns: u64, sample: WakeSample) {
        if self.account.counts.samples == 0 {
            self.account.window_start_ns = at_ns;
        }
        self.account.counts.samples += 1;
        self.last_due_ns = self.last_due_ns.max(sample.due_ns);
        self.pending.push_back((at_ns, sample));
    }

    /// Net: the activation and latency records of one datagram align (both recorded at the
    /// send's monotonic time): wake = send + latency; receive = wake - activation (the
    /// activation is a CLOCK_REALTIME difference, the same length on CLOCK_MONOTONIC within
    /// the sample). A record without its partner is dropped.
    fn pair_datagrams(&mut self) {
        while let (Some(a), Some(l)) = (self.activation.front().copied(), self.latency.front().copied()) {
            if a.expected_ns < l.expected_ns {
                self.activation.pop_front();
            } else if l.expected_ns < a.expected_ns {
                self.latency.pop_front();
            } else {
                self.activation.pop_front();
                self.latency.pop_front();
                let wake_ns = l.expected_ns.saturating_add_signed(l.value_ns);
                let due_ns = wake_ns.saturating_add_signed(-a.value_ns);
                self.push(a.expected_ns, WakeSample { cpu: self.cpu as u32, due_ns, wake_ns });
            }
        }
    }

    /// Records one sample's split and keeps it if it is among the worst.
    fn record(
        &mut self,
        at_ns: u64,
        sample: &WakeSample,
        result: Result<SplitParts, Unsplit>,
        settings: &SplitSettings,
    ) {
        let counts = &mut self.account.counts;
        match result {
            Ok(parts) => {
                counts.split += 1;
                counts.switch_in_inferred += u64::from(parts.switch_in_inferred);
                let error = (parts.first_ns + parts.sched_ns + parts.return_ns - sample.latency_ns()).abs();
                counts.max_sum_error_ns = counts.max_sum_error_ns.max(error);
                if error <= 1_000 {
                    counts.sum_within_1us += 1;
                }
                if let Some(recorders) = self.recorders.as_mut() {
                    let cpu = self.cpu as u32;
                    recorders[0].record(at_ns, parts.first_ns, cpu, 0);
                    recorders[1].record(at_ns, parts.sched_ns, cpu, 0);
                    recorders[2].record(at_ns, parts.return_ns, cpu, 0);
                }
            }
            Err(reason) => match counts.unsplit.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => counts.unsplit.push((reason, 1)),
            },
        }
        let latency = sample.latency_ns();
        let keep = match settings.explain_above_ns {
            Some(threshold) if latency > threshold as i64 => {
                self.account.above_threshold += 1;
                settings.max_explained
            }
            Some(_) => 0,
            None => settings.default_explained,
        };
        // Worst first; an equal latency keeps the earlier sample (strictly worse replaces).
        let worse_than_kept = self.candidates.len() < keep
            || self.candidates.last().is_some_and(|last| latency > last.sample.latency_ns());
        if keep == 0 || !worse_than_kept {
            return;
        }
        let at = self.candidates.partition_point(|c| c.sample.latency_ns() >= latency);
        self.candidates.insert(at, Candidate { sample: *sample, parts: result.ok(), explanation: None });
        self.candidates.truncate(keep);
    }
}

impl RecordConsumer for StreamingSplit {
    fn records(&mut self, records: Vec<SplitRecord>) {
        self.events += records.len() as u64;
        for record in records {
            self.records.entry(record.cpu).or_default().insert(record.expires_ns, record);
        }
        let held: usize = self.records.values().map(BTreeMap::len).sum();
        self.peak_window_events = self.peak_window_events.max(held as u64);
    }

    fn complete_before(&mut self, ns: u64) {
        for window in self.cpus.values_mut() {
            window.complete_before_ns = window.complete_before_ns.max(ns);
        }
        self.work_if_due(ns);
    }
}

impl TraceConsumer for StreamingSplit {
    fn events(&mut self, cpu: u32, events: Vec<KernelEvent>) {
        self.events += events.len() as u64;
        self.events_dropped += self.cpus.entry(cpu).or_default().push(events, cpu);
        let held: usize = self.cpus.values().map(|w| w.events.len()).sum();
        self.peak_window_events = self.peak_window_events.max(held as u64);
    }

    fn complete_before(&mut self, cpu: u32, ns: u64) {
        let window = self.cpus.entry(cpu).or_default();
        window.complete_before_ns = window.complete_before_ns.max(ns);
        self.work_if_due(ns);
    }

    fn steal(&mut self, readings: &[StealSample]) {
        self.steal.extend(readings.iter().copied());
    }
}

/// The measuring thread's id in the trace. Another rtlab running at the same time has
/// threads of the same name on the same CPU: for a timer, the one whose armed expiries are
/// this thread's samples' due times is it.
fn thread_tid(events: &[KernelEvent], cpu: u32, comm: &str, stimulus: Stimulus, samples: &[WakeSample]) -> Option<i32> {
    let named = split::find_tid(events, cpu, comm)?;
    if stimulus != Stimulus::Timer {
        return Some(named);
    }
    let wanted = split::truncated_comm(comm);
    let mut candidates: Vec<i32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SchedSwitch { next_comm, next_pid, .. }
                if e.cpu == cpu && split::truncated_comm(next_comm) == wanted =>
            {
                Some(*next_pid)
            }
            _ => None,
        })
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    if candidates.len() < 2 {
        return Some(named);
    }
    let due: BTreeSet<i64> = samples.iter().map(|s| s.due_ns as i64).collect();
    let armed_for_us = |pid: i32| {
        events
            .iter()
            .filter(|e| e.pid == pid)
            .filter(|e| match e.kind {
                EventKind::HrtimerStart { expires_ns, .. } => {
                    due.range(expires_ns.saturating_sub(split::MAX_TIMER_SLACK_NS)..=expires_ns).next().is_some()
                }
                _ => false,
            })
            .count()
    };
    candidates.into_iter().max_by_key(|&pid| armed_for_us(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(ts_ns: u64, pid: i32, kind: EventKind) -> KernelEvent {
        KernelEvent { ts_ns, cpu: 0, pid, kind }
    }

    fn switch_to(ts_ns: u64, pid: i32) -> KernelEvent {
        event(
            ts_ns,
            0,
            EventKind::SchedSwitch {
                prev_comm: "swapper/0".into(),
                prev_pid: 0,
                prev_prio: 120,
                prev_state: 0,
                next_comm: "rtlab-timer/0".into(),
                next_pid: pid,
                next_prio: 4,
            },
        )
    }

    fn armed(ts_ns: u64, pid: i32, expires_ns: i64) -> KernelEvent {
        event(ts_ns, pid, EventKind::HrtimerStart { timer: 1, function: 2, expires_ns })
    }

    #[test]
    fn a_window_never_holds_or_reserves_more_than_its_bound() {
        let mut window = CpuWindow::default();
        let mut dropped = 0;
        let mut ts = 0;
        let chunks = MAX_WINDOW_EVENTS_PER_CPU as u64 / 997 + 70;
        for _ in 0..chunks {
            let chunk: Vec<KernelEvent> = (0..997)
                .map(|_| {
                    ts += 10;
                    event(ts, 5, EventKind::SoftirqEntry { vec: 1 })
                })
                .collect();
            dropped += window.push(chunk, 0);
            assert!(window.events.len() <= MAX_WINDOW_EVENTS_PER_CPU);
            assert!(window.events.capacity() <= MAX_WINDOW_EVENTS_PER_CPU, "{}", window.events.capacity());
        }
        // A marker and the newest events; everything older counted once.
        assert_eq!(window.events.len(), MAX_WINDOW_EVENTS_PER_CPU);
        assert_eq!(dropped, chunks * 997 - (MAX_WINDOW_EVENTS_PER_CPU as u64 - 1));
        let marker = &window.events[0];
        assert_eq!(marker.kind, EventKind::Lost { events: dropped });
        assert_eq!(window.dropped_through_ns, marker.ts_ns);
        assert_eq!(window.events[1].ts_ns, marker.ts_ns + 10);
        // What no sample needs goes uncounted.
        window.needed_from_ns = ts - 100;
        assert_eq!(window.push(vec![event(ts + 10, 5, EventKind::SoftirqExit { vec: 1 })], 0), 0);
        assert_eq!(window.events.len(), 12, "the 11 events from ts - 100 and the new one");
        // A chunk larger than the bound keeps its newest events.
        let size = MAX_WINDOW_EVENTS_PER_CPU as u64 + 5_000;
        let big: Vec<KernelEvent> =
            (1..=size).map(|i| event(ts + 10 + i, 5, EventKind::SoftirqEntry { vec: 1 })).collect();
        assert_eq!(window.push(big, 0), 12 + size - (MAX_WINDOW_EVENTS_PER_CPU as u64 - 1));
        assert_eq!(window.events.back().map(|e| e.ts_ns), Some(ts + 10 + size));
        assert!(window.events.capacity() <= MAX_WINDOW_EVENTS_PER_CPU);
    }

    #[test]
    fn another_rtlab_s_thread_of_the_same_name_is_told_apart_by_its_expiries() {
        // Thread 7 (another rtlab) is switched in more often; thread 9 armed our due times.
        let events = vec![
            switch_to(10, 7),
            switch_to(20, 7),
            switch_to(30, 7),
            armed(40, 7, 5_000_500),
            switch_to(50, 9),
            armed(60, 9, 1_000_000),
            armed(70, 9, 2_000_001),
        ];
        let samples = [
            WakeSample { cpu: 0, due_ns: 1_000_000, wake_ns: 1_000_050 },
            WakeSample { cpu: 0, due_ns: 2_000_000, wake_ns: 2_000_050 },
        ];
        assert_eq!(split::find_tid(&events, 0, "rtlab-timer/0"), Some(7));
        assert_eq!(thread_tid(&events, 0, "rtlab-timer/0", Stimulus::Timer, &samples), Some(9));
        // A name with no other thread: the only one.
        assert_eq!(thread_tid(&events[4..], 0, "rtlab-timer/0", Stimulus::Timer, &samples), Some(9));
        assert_eq!(thread_tid(&events, 0, "rtlab-timer/1", Stimulus::Timer, &samples), None);
    }
}
