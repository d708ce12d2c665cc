//! The noise probe's gaps attributed from the kernel trace, as the osnoise tracer does it
//! but from the split's generic tracepoints (tracefs session of `rtlab_sys::tracefs`).
//!
//! A gap runs from one clock read of the busy loop to the next, on its CPU. At its start the
//! busy loop was running in user space: no handler open, its own thread current. The gap is
//! cut into slices at every event of its CPU inside it, and each slice is charged to what
//! the CPU was doing ([`crate::split::CpuContext`], the split's replay):
//! - the innermost open handler: IRQ (device line `irq 11 virtio0`, or x86 vector
//!   `local_timer`) or softirq (`softirq TIMER`), by name;
//! - an NMI (`nmi:nmi_handler` gives its duration; that time is carved out of the slice it
//!   fell into);
//! - another task: a higher (or equal) priority thread, named by its comm ([`Thread`]); a
//!   lower-priority task or idle while the real-time busy loop was runnable: RT throttling
//!   ([`RtThrottling`]);
//! - the busy loop's own thread with nothing open ("bare" time): up to
//!   [`UNACCOUNTED_GAP_NS`] next to a handler or task it is that neighbour's entry or exit
//!   (charged to it); longer, or in a gap with no event at all, it is time no kernel event
//!   accounts for, as is a handler slice longer than [`UNACCOUNTED_GAP_NS`] without any
//!   event. That time is charged to [`Steal`] as far as the CPU's steal counter (/proc/stat,
//!   sampled by the tracing session) has grown and not yet been charged, the rest to
//!   [`HardwareOrHypervisor`].
//!
//! Every gap's time is charged exactly once: the shares of a gap add up to it. A gap with
//! events lost inside it (full buffer, or dropped by the bounded window) is [`Unattributed`].
//!
//! [`Thread`]: NoiseCauseKind::Thread
//! [`RtThrottling`]: NoiseCauseKind::RtThrottling
//! [`Steal`]: NoiseCauseKind::Steal
//! [`HardwareOrHypervisor`]: NoiseCauseKind::HardwareOrHypervisor
//! [`Unattributed`]: NoiseCauseKind::Unattributed

use crate::raw::TappedSamples;
use crate::split::{CauseKind, CpuContext, UNACCOUNTED_GAP_NS};
use rtlab_results::noise::{NoiseCause, NoiseCauseKind, NOISE_GAP_METRIC};
use rtlab_sys::tracefs::event::{EventKind, KernelEvent};
use rtlab_sys::tracefs::{StealSample, TraceConsumer};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::mpsc::Receiver;

/// One gap of the busy loop: from the read before it to the read after it (CLOCK_MONOTONIC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoiseGap {
    pub cpu: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl NoiseGap {
    pub fn ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// A part of one gap charged to one cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    pub kind: NoiseCauseKind,
    pub name: String,
    pub ns: u64,
}

/// The name of an unattributed gap whose events the kernel or the window dropped.
pub const EVENTS_LOST: &str = "events lost";

/// What a slice of a gap is charged to before the bare time is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Charge {
    Cause(NoiseCauseKind, String),
    /// The busy loop's thread current, nothing open.
    Bare,
    /// No kernel event accounts for it (steal or hardware/hypervisor).
    NoEvent,
}

#[derive(Debug, Clone)]
struct Slice {
    from: u64,
    to: u64,
    charge: Charge,
}

/// The busy loop's scheduling, for telling a preempting thread from RT throttling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopPriority {
    /// SCHED_FIFO/RR: a lower-priority task running means the kernel throttled the loop.
    pub realtime: bool,
    /// The kernel's priority of the loop's thread (SCHED_FIFO p: 99 - p; other: 120).
    pub kernel_prio: i32,
}

/// Attributes one gap from the events of its CPU (time order; only those inside the gap
/// are used). `steal_available` is the steal time not yet charged on this CPU: what this
/// gap charges to steal is taken from it. The shares add up to the gap.
pub fn attribute_gap(
    events: &[KernelEvent],
    gap: &NoiseGap,
    priority: LoopPriority,
    steal_available: &mut u64,
) -> Vec<Share> {
    let first = events.partition_point(|e| e.ts_ns <= gap.start_ns);
    let last = events.partition_point(|e| e.ts_ns < gap.end_ns);
    let inside: Vec<&KernelEvent> =
        events.get(first..last.max(first)).unwrap_or_default().iter().filter(|e| e.cpu == gap.cpu).collect();
    if inside.iter().any(|e| matches!(e.kind, EventKind::Lost { .. })) {
        return vec![Share { kind: NoiseCauseKind::Unattributed, name: EVENTS_LOST.into(), ns: gap.ns() }];
    }
    // At the gap's start the busy loop ran in user space: every event inside names it as
    // current until a switch (the first event's pid is its thread id).
    let tid = inside.first().map(|e| e.pid);
    let mut tasks: HashMap<i32, (String, i32)> = HashMap::new();
    for e in &inside {
        if let EventKind::SchedSwitch { prev_comm, prev_pid, prev_prio, next_comm, next_pid, next_prio, .. } = &e.kind {
            tasks.entry(*prev_pid).or_insert((prev_comm.to_string(), *prev_prio));
            tasks.entry(*next_pid).or_insert((next_comm.to_string(), *next_prio));
        }
    }
    let mut context = CpuContext::default();
    context.current = tid;
    let mut slices = Vec::new();
    let mut nmis = Vec::new();
    let mut cut = gap.start_ns;
    for e in &inside {
        push_slice(&mut slices, cut, e.ts_ns, charge_of(&context, tid, &tasks, priority));
        cut = e.ts_ns;
        if let EventKind::Nmi { delta_ns } = e.kind {
            let from = e.ts_ns.saturating_sub(u64::try_from(delta_ns).unwrap_or(0)).max(gap.start_ns);
            nmis.push((from, e.ts_ns));
        }
        context.apply(e, false);
    }
    push_slice(&mut slices, cut, gap.end_ns, charge_of(&context, tid, &tasks, priority));
    for (from, to) in nmis {
        slices = carve(slices, from, to, Charge::Cause(NoiseCauseKind::Nmi, String::new()));
    }
    resolve_bare(&mut slices);

    let mut shares: Vec<Share> = Vec::new();
    let mut add = |kind: NoiseCauseKind, name: String, ns: u64| {
        if ns == 0 {
            return;
        }
        match shares.iter_mut().find(|s| s.kind == kind && s.name == name) {
            Some(s) => s.ns += ns,
            None => shares.push(Share { kind, name, ns }),
        }
    };
    let mut no_event = 0;
    for slice in slices {
        let ns = slice.to - slice.from;
        match slice.charge {
            Charge::Cause(kind, name) => add(kind, name, ns),
            Charge::Bare | Charge::NoEvent => no_event += ns,
        }
    }
    let steal = no_event.min(*steal_available);
    *steal_available -= steal;
    add(NoiseCauseKind::Steal, String::new(), steal);
    add(NoiseCauseKind::HardwareOrHypervisor, String::new(), no_event - steal);
    shares
}

fn push_slice(slices: &mut Vec<Slice>, from: u64, to: u64, charge: Charge) {
    if to > from {
        slices.push(Slice { from, to, charge });
    }
}

/// What a slice in `context` is charged to.
fn charge_of(context: &CpuContext, tid: Option<i32>, tasks: &HashMap<i32, (String, i32)>, p: LoopPriority) -> Charge {
    if let Some(handler) = context.handlers.last() {
        let (kind, name) = handler.cause();
        let kind = if kind == CauseKind::Softirq { NoiseCauseKind::Softirq } else { NoiseCauseKind::Irq };
        return Charge::Cause(kind, name);
    }
    let pid = context.current;
    if pid.is_none() || pid == tid {
        return Charge::Bare;
    }
    let pid = pid.unwrap_or(0);
    let (comm, prio) = match (pid, tasks.get(&pid)) {
        (0, _) => ("idle".to_string(), None),
        (_, Some((comm, prio))) => (comm.clone(), Some(*prio)),
        (_, None) => (format!("pid {pid}"), None),
    };
    // The kernel never runs a lower-priority task (or idles) while a runnable real-time
    // task waits, except to throttle it.
    let lower = pid == 0 || prio.is_some_and(|prio| prio > p.kernel_prio);
    if p.realtime && lower {
        Charge::Cause(NoiseCauseKind::RtThrottling, String::new())
    } else {
        Charge::Cause(NoiseCauseKind::Thread, comm)
    }
}

/// Charges [from, to) to `charge`, taking it out of the slices it overlaps (which cover
/// the gap without holes, so the result covers the same span).
fn carve(slices: Vec<Slice>, from: u64, to: u64, charge: Charge) -> Vec<Slice> {
    let mut out = Vec::with_capacity(slices.len() + 2);
    for s in slices {
        if s.to <= from || s.from >= to {
            out.push(s);
            continue;
        }
        push_slice(&mut out, s.from, from.max(s.from), s.charge.clone());
        push_slice(&mut out, from.max(s.from), to.min(s.to), charge.clone());
        push_slice(&mut out, to.min(s.to), s.to, s.charge);
    }
    out
}

/// Bare time next to a handler or task (its entry or exit) goes to that neighbour; bare
/// time longer than [`UNACCOUNTED_GAP_NS`], or with no neighbour, and handler slices that
/// long with no event inside, are time no kernel event accounts for.
fn resolve_bare(slices: &mut Vec<Slice>) {
    let long = |s: &Slice| (s.to - s.from) as i64 > UNACCOUNTED_GAP_NS;
    // Adjacent bare slices are one stretch of the loop's own time (events that did not
    // change the context, e.g. a wake-up sent from here).
    let mut merged: Vec<Slice> = Vec::with_capacity(slices.len());
    for s in slices.drain(..) {
        match merged.last_mut() {
            Some(last) if last.charge == Charge::Bare && s.charge == Charge::Bare => last.to = s.to,
            _ => merged.push(s),
        }
    }
    let neighbours: Vec<Option<Charge>> = (0..merged.len())
        .map(|i| {
            let before = i.checked_sub(1).and_then(|j| merged.get(j));
            let after = merged.get(i + 1);
            before.or(after).map(|n| n.charge.clone())
        })
        .collect();
    for (s, neighbour) in merged.iter_mut().zip(neighbours) {
        let is_handler = matches!(&s.charge, Charge::Cause(NoiseCauseKind::Irq | NoiseCauseKind::Softirq, _));
        s.charge = match (&s.charge, neighbour) {
            (Charge::Bare, _) if long(s) => Charge::NoEvent,
            (Charge::Bare, Some(n @ Charge::Cause(..))) => n,
            (Charge::Bare, _) => Charge::NoEvent,
            (_, _) if is_handler && long(s) => Charge::NoEvent,
            (c, _) => c.clone(),
        };
    }
    *slices = merged;
}

/// One CPU's figures per cause, gap by gap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CauseTally {
    pub gaps: u64,
    pub ns: u64,
    pub causes: Vec<NoiseCause>,
}

impl CauseTally {
    /// Adds one gap's shares: its main cause is the largest share (ties: the first).
    pub fn add(&mut self, shares: &[Share]) {
        let total: u64 = shares.iter().map(|s| s.ns).sum();
        self.gaps += 1;
        self.ns += total;
        let main = shares.iter().enumerate().max_by(|(i, a), (j, b)| a.ns.cmp(&b.ns).then(j.cmp(i))).map(|(i, _)| i);
        for (i, share) in shares.iter().enumerate() {
            let cause = match self.causes.iter_mut().position(|c| c.kind == share.kind && c.name == share.name) {
                Some(at) => &mut self.causes[at],
                None => {
                    self.causes.push(NoiseCause {
                        kind: share.kind,
                        name: share.name.clone(),
                        ns: 0,
                        gaps: 0,
                        main_of: 0,
                        max_ns: 0,
                    });
                    self.causes.last_mut().expect("just pushed")
                }
            };
            cause.ns += share.ns;
            cause.gaps += 1;
            cause.max_ns = cause.max_ns.max(share.ns);
            cause.main_of += u64::from(Some(i) == main);
        }
    }

    /// Gaps that never reached the attribution (lost from the ring) or were not traced:
    /// `gaps` of `ns` in total, unattributed.
    pub fn add_unattributed(&mut self, name: &str, gaps: u64, ns: u64) {
        if gaps == 0 && ns == 0 {
            return;
        }
        self.gaps += gaps;
        self.ns += ns;
        match self.causes.iter_mut().find(|c| c.kind == NoiseCauseKind::Unattributed && c.name == name) {
            Some(c) => {
                c.ns += ns;
                c.gaps += gaps;
                c.main_of += gaps;
            }
            None => self.causes.push(NoiseCause {
                kind: NoiseCauseKind::Unattributed,
                name: name.into(),
                ns,
                gaps,
                main_of: gaps,
                max_ns: 0,
            }),
        }
    }

    /// The causes, largest time first (ties in a fixed order).
    pub fn sorted(mut self) -> Vec<NoiseCause> {
        self.causes.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.kind.cmp(&b.kind)).then(a.name.cmp(&b.name)));
        self.causes
    }
}

/// How much trace to keep behind the newest complete instant for gaps still on their way
/// from the sampling thread's ring (the writer drains it every 5 ms).
const KEEP_BEHIND_NS: u64 = 2_000_000_000;
/// The most events held per CPU (80 bytes each: 20 MiB); past it the oldest go and the
/// gaps that needed them are unattributed ("events lost").
const MAX_EVENTS_PER_CPU: usize = 1 << 18;

#[derive(Debug, Default)]
struct CpuNoise {
    events: VecDeque<KernelEvent>,
    complete_before_ns: u64,
    /// Events up to here were dropped (0: none).
    dropped_through_ns: u64,
    pending: VecDeque<NoiseGap>,
    /// Steal readings: the first, and the newest.
    steal_first: Option<StealSample>,
    steal_last: Option<StealSample>,
    steal_charged_ns: u64,
    tally: CauseTally,
}

impl CpuNoise {
    /// Attributes the pending gaps whose events are all in (and, unless `finishing`, whose
    /// steal is known: a reading at or after their end).
    fn work(&mut self, priority: LoopPriority, finishing: bool) {
        while let Some(&gap) = self.pending.front() {
            let steal_known = self.steal_last.is_some_and(|s| s.ts_ns >= gap.end_ns);
            if !finishing && (gap.end_ns >= self.complete_before_ns || !steal_known) {
                break;
            }
            self.pending.pop_front();
            if self.dropped_through_ns != 0 && gap.start_ns <= self.dropped_through_ns {
                self.tally.add(&[Share { kind: NoiseCauseKind::Unattributed, name: EVENTS_LOST.into(), ns: gap.ns() }]);
                continue;
            }
            let grown = match (self.steal_first, self.steal_last) {
                (Some(a), Some(b)) => b.steal_ns.saturating_sub(a.steal_ns),
                _ => 0,
            };
            let mut available = grown.saturating_sub(self.steal_charged_ns);
            let before = available;
            let events = self.events.make_contiguous();
            let shares = attribute_gap(events, &gap, priority, &mut available);
            self.steal_charged_ns += before - available;
            self.tally.add(&shares);
        }
        // What no pending or coming gap needs.
        let floor = match self.pending.front() {
            Some(gap) => gap.start_ns,
            None => self.complete_before_ns.saturating_sub(KEEP_BEHIND_NS),
        };
        let unneeded = self.events.partition_point(|e| e.ts_ns < floor);
        // A gap that reaches the attribution later than this (its writer was held off) finds
        // its events gone: it is counted as lost, not charged to the hardware.
        if let Some(last) = self.events.drain(..unneeded).next_back() {
            self.dropped_through_ns = self.dropped_through_ns.max(last.ts_ns);
        }
    }
}

/// The attribution while the probe runs: takes the gaps from the probe's tap and the events
/// from the tracing session's reader; see the module documentation.
pub struct NoiseTrace {
    gaps: Receiver<TappedSamples>,
    priority: LoopPriority,
    cpus: BTreeMap<u32, CpuNoise>,
    events: u64,
}

/// What the attribution found, per CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseAccount {
    pub cpus: BTreeMap<usize, CauseTally>,
    /// Events decoded.
    pub events: u64,
}

impl NoiseTrace {
    /// The attribution of the gaps of `traced_cpus` that come through `gaps`.
    pub fn new(gaps: Receiver<TappedSamples>, priority: LoopPriority, traced_cpus: &[usize]) -> NoiseTrace {
        let cpus = traced_cpus.iter().map(|&c| (c as u32, CpuNoise::default())).collect();
        NoiseTrace { gaps, priority, cpus, events: 0 }
    }

    fn take_gaps(&mut self) {
        while let Ok(tapped) = self.gaps.try_recv() {
            if tapped.metric != NOISE_GAP_METRIC {
                continue;
            }
            let cpu = self.cpus.entry(tapped.cpu as u32).or_default();
            cpu.pending.extend(tapped.samples.iter().map(|s| NoiseGap {
                cpu: tapped.cpu as u32,
                start_ns: s.expected_ns,
                end_ns: s.expected_ns.saturating_add_signed(s.value_ns),
            }));
        }
    }

    /// Works through everything once tracing has stopped and the probe has finished.
    pub fn finish(mut self) -> NoiseAccount {
        self.take_gaps();
        for cpu in self.cpus.values_mut() {
            cpu.complete_before_ns = u64::MAX;
            cpu.work(self.priority, true);
        }
        NoiseAccount { cpus: self.cpus.into_iter().map(|(c, n)| (c as usize, n.tally)).collect(), events: self.events }
    }
}

impl TraceConsumer for NoiseTrace {
    fn events(&mut self, cpu: u32, events: Vec<KernelEvent>) {
        self.events += events.len() as u64;
        let window = self.cpus.entry(cpu).or_default();
        window.events.extend(events);
        let over = window.events.len().saturating_sub(MAX_EVENTS_PER_CPU);
        if over > 0 {
            if let Some(last) = window.events.drain(..over).next_back() {
                window.dropped_through_ns = window.dropped_through_ns.max(last.ts_ns);
            }
        }
    }

    fn complete_before(&mut self, cpu: u32, ns: u64) {
        self.take_gaps();
        let priority = self.priority;
        let window = self.cpus.entry(cpu).or_default();
        window.complete_before_ns = window.complete_before_ns.max(ns);
        window.work(priority, false);
    }

    fn steal(&mut self, readings: &[StealSample]) {
        for r in readings {
            let cpu = self.cpus.entry(r.cpu).or_default();
            cpu.steal_first.get_or_insert(*r);
            cpu.steal_last = Some(*r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_sys::tracefs::event::Vector;

    const LOOP: i32 = 42;
    const FIFO: LoopPriority = LoopPriority { realtime: true, kernel_prio: 4 };

    fn ev(ts_ns: u64, pid: i32, kind: EventKind) -> KernelEvent {
        KernelEvent { ts_ns, cpu: 1, pid, kind }
    }

    fn switch(ts_ns: u64, prev: (i32, &str, i32), next: (i32, &str, i32)) -> KernelEvent {
        ev(
            ts_ns,
            prev.0,
            EventKind::SchedSwitch {
                prev_comm: prev.1.into(),
                prev_pid: prev.0,
                prev_prio: prev.2,
                prev_state: 0,
                next_comm: next.1.into(),
                next_pid: next.0,
                next_prio: next.2,
            },
        )
    }

    fn gap(start_ns: u64, end_ns: u64) -> NoiseGap {
        NoiseGap { cpu: 1, start_ns, end_ns }
    }

    fn share(kind: NoiseCauseKind, name: &str, ns: u64) -> Share {
        Share { kind, name: name.into(), ns }
    }

    fn sum(shares: &[Share]) -> u64 {
        shares.iter().map(|s| s.ns).sum()
    }

    #[test]
    fn a_timer_interrupt_is_charged_with_its_entry_and_exit() {
        // Read at 1,000; vector entry 1,800, softirq inside it, exit 6,000; read at 6,500.
        let events = vec![
            ev(1_800, LOOP, EventKind::VectorEntry { vector: Vector::LocalTimer }),
            ev(3_000, LOOP, EventKind::VectorExit { vector: Vector::LocalTimer }),
            ev(3_100, LOOP, EventKind::SoftirqEntry { vec: 1 }),
            ev(6_000, LOOP, EventKind::SoftirqExit { vec: 1 }),
        ];
        let mut steal = 1_000_000;
        let shares = attribute_gap(&events, &gap(1_000, 6_500), FIFO, &mut steal);
        // Before the entry (800) goes to the IRQ; 3,000..3,100 bare: to the IRQ before it;
        // the exit's 500 to the softirq before it.
        assert_eq!(
            shares,
            vec![
                share(NoiseCauseKind::Irq, "local_timer", 800 + 1_200 + 100),
                share(NoiseCauseKind::Softirq, "softirq TIMER", 2_900 + 500)
            ]
        );
        assert_eq!(sum(&shares), 5_500);
        assert_eq!(steal, 1_000_000, "no steal charged where events account for the time");
    }

    #[test]
    fn a_silent_gap_is_steal_as_far_as_the_counter_grew_then_hardware_or_hypervisor() {
        let mut steal = 3_000_000;
        let shares = attribute_gap(&[], &gap(0, 5_000_000), FIFO, &mut steal);
        assert_eq!(
            shares,
            vec![
                share(NoiseCauseKind::Steal, "", 3_000_000),
                share(NoiseCauseKind::HardwareOrHypervisor, "", 2_000_000)
            ]
        );
        assert_eq!(steal, 0);
        // A long silence before the interrupt that ends a stall: hypervisor, then the IRQ.
        let events = vec![
            ev(4_000_000, LOOP, EventKind::VectorEntry { vector: Vector::LocalTimer }),
            ev(4_010_000, LOOP, EventKind::VectorExit { vector: Vector::LocalTimer }),
        ];
        let shares = attribute_gap(&events, &gap(0, 4_011_000), FIFO, &mut steal);
        assert_eq!(
            shares,
            vec![
                share(NoiseCauseKind::Irq, "local_timer", 11_000),
                share(NoiseCauseKind::HardwareOrHypervisor, "", 4_000_000)
            ]
        );
    }

    #[test]
    fn a_lower_priority_task_while_the_loop_waits_is_rt_throttling_a_higher_one_a_thread() {
        let me = (LOOP, "rtlab-noise/1", 4);
        let events = vec![
            ev(2_000, LOOP, EventKind::VectorEntry { vector: Vector::LocalTimer }),
            ev(4_000, LOOP, EventKind::VectorExit { vector: Vector::LocalTimer }),
            switch(4_500, me, (7, "kworker/1:1", 120)),
            switch(50_004_500, (7, "kworker/1:1", 120), (0, "swapper/1", 120)),
            switch(50_010_000, (0, "swapper/1", 120), (9, "migration/1", 0)),
            switch(50_020_000, (9, "migration/1", 0), me),
        ];
        let mut steal = 0;
        let shares = attribute_gap(&events, &gap(1_000, 50_021_000), FIFO, &mut steal);
        assert_eq!(
            shares,
            vec![
                share(NoiseCauseKind::Irq, "local_timer", 1_000 + 2_000 + 500),
                share(NoiseCauseKind::RtThrottling, "", 50_000_000 + 5_500),
                share(NoiseCauseKind::Thread, "migration/1", 10_000 + 1_000),
            ]
        );
        assert_eq!(sum(&shares), 50_020_000);
        // Under SCHED_OTHER the same tasks are threads sharing the CPU.
        let other = LoopPriority { realtime: false, kernel_prio: 120 };
        let shares = attribute_gap(&events, &gap(1_000, 50_021_000), other, &mut steal);
        assert!(shares.iter().all(|s| s.kind != NoiseCauseKind::RtThrottling));
        assert_eq!(sum(&shares), 50_020_000);
    }

    #[test]
    fn an_nmi_is_carved_out_of_the_slice_it_interrupted() {
        let events = vec![
            ev(2_000, LOOP, EventKind::VectorEntry { vector: Vector::LocalTimer }),
            ev(8_000, LOOP, EventKind::Nmi { delta_ns: 3_000 }),
            ev(9_000, LOOP, EventKind::VectorExit { vector: Vector::LocalTimer }),
        ];
        let mut steal = 0;
        let shares = attribute_gap(&events, &gap(1_000, 9_500), FIFO, &mut steal);
        assert_eq!(
            shares,
            vec![
                share(NoiseCauseKind::Irq, "local_timer", 1_000 + 3_000 + 1_000 + 500),
                share(NoiseCauseKind::Nmi, "", 3_000)
            ]
        );
    }

    #[test]
    fn events_lost_inside_a_gap_leave_it_unattributed() {
        let events = vec![ev(2_000, -1, EventKind::Lost { events: 3 })];
        let mut steal = 10;
        let shares = attribute_gap(&events, &gap(1_000, 9_000), FIFO, &mut steal);
        assert_eq!(shares, vec![share(NoiseCauseKind::Unattributed, EVENTS_LOST, 8_000)]);
        assert_eq!(steal, 10);
    }

    #[test]
    fn the_tally_counts_every_gap_once_and_its_time_once() {
        // Pseudo-random event streams: every gap's shares add up to it, and the tally's
        // main causes add up to the gaps.
        let mut state = 0x1234_5678_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut tally = CauseTally::default();
        let mut total = 0;
        let mut steal = 50_000_000;
        for g in 0..500u64 {
            let start = g * 100_000_000;
            let mut t = start;
            let mut events = Vec::new();
            let mut open: Vec<EventKind> = Vec::new();
            for _ in 0..next(8) {
                t += 1 + next(80_000);
                let kind = match (next(5), open.last()) {
                    (0, None) => EventKind::VectorEntry { vector: Vector::LocalTimer },
                    (1, _) => EventKind::SoftirqEntry { vec: next(10) as u32 },
                    (2, Some(EventKind::VectorEntry { vector })) => EventKind::VectorExit { vector: *vector },
                    (2, Some(EventKind::SoftirqEntry { vec })) => EventKind::SoftirqExit { vec: *vec },
                    (3, _) => EventKind::Nmi { delta_ns: next(5_000) as i64 },
                    _ => EventKind::IrqEntry { irq: 11, name: "virtio0".into() },
                };
                match &kind {
                    EventKind::VectorEntry { .. } | EventKind::SoftirqEntry { .. } => open.push(kind.clone()),
                    EventKind::VectorExit { .. } | EventKind::SoftirqExit { .. } => {
                        open.pop();
                    }
                    _ => {}
                }
                events.push(ev(t, LOOP, kind));
            }
            let end = t + 1 + next(200_000);
            let shares = attribute_gap(&events, &gap(start, end), FIFO, &mut steal);
            assert_eq!(sum(&shares), end - start, "gap {g}: {shares:?}");
            tally.add(&shares);
            total += end - start;
        }
        assert_eq!(tally.gaps, 500);
        assert_eq!(tally.ns, total);
        let causes = tally.sorted();
        assert_eq!(causes.iter().map(|c| c.main_of).sum::<u64>(), 500);
        assert_eq!(causes.iter().map(|c| c.ns).sum::<u64>(), total);
        assert!(causes.windows(2).all(|w| w[0].ns >= w[1].ns));
    }

    #[test]
    fn the_streaming_attribution_waits_for_events_and_steal_then_charges_every_gap() {
        use crate::raw::{RawSample, SampleTap};
        let (tap, receiver) = SampleTap::new();
        let mut trace = NoiseTrace::new(receiver, FIFO, &[1]);
        trace.steal(&[StealSample { ts_ns: 0, cpu: 1, steal_ns: 0 }]);
        tap.deliver(TappedSamples {
            cpu: 1,
            metric: NOISE_GAP_METRIC.into(),
            samples: vec![
                RawSample { expected_ns: 1_000, value_ns: 5_500, cpu: 1, flags: 0 },
                RawSample { expected_ns: 3_000_000_000, value_ns: 4_000_000, cpu: 1, flags: 0 },
            ],
            unrecorded: Vec::new(),
        });
        trace.events(
            1,
            vec![
                ev(1_800, LOOP, EventKind::VectorEntry { vector: Vector::LocalTimer }),
                ev(6_000, LOOP, EventKind::VectorExit { vector: Vector::LocalTimer }),
            ],
        );
        trace.complete_before(1, 1_000_000);
        // No steal reading after the first gap yet: it waits.
        assert_eq!(trace.cpus[&1].tally.gaps, 0);
        trace.steal(&[StealSample { ts_ns: 2_000_000, cpu: 1, steal_ns: 10_000_000 }]);
        trace.complete_before(1, 1_500_000);
        assert_eq!(trace.cpus[&1].tally.gaps, 1);
        let account = trace.finish();
        let tally = &account.cpus[&1];
        assert_eq!(tally.gaps, 2);
        assert_eq!(tally.ns, 5_500 + 4_000_000);
        let steal: u64 = tally.causes.iter().filter(|c| c.kind == NoiseCauseKind::Steal).map(|c| c.ns).sum();
        assert_eq!(steal, 4_000_000, "the silent gap is within the steal counter's growth");
    }
}
