//! The streaming split against the batch split as its exact oracle: a long synthetic run
//! fed in small chunks, its samples arriving late as the raw writer hands them over, gives
//! the same cuts, counts and explanations as splitting the whole trace at once, while it
//! never holds more than about two seconds of events.

mod split_scenario;

use rtlab_probe::raw::{RawSample, TappedSamples};
use rtlab_probe::split::{explain, split_samples, Stimulus, Unsplit, WakeSample};
use rtlab_probe::traced::{SplitSettings, SplitSource, StreamingSplit};
use rtlab_probe::{ProbeOutput, ThreadOutput};
use rtlab_sys::tracefs::event::KernelEvent;
use rtlab_sys::tracefs::TraceConsumer;
use split_scenario::*;

const INTERVAL_NS: u64 = 1_000_000;
const CYCLES: u64 = 4_000;
/// The streaming split's thread name for the timer probe on CPU 0.
const STREAMED: Task = Task { pid: TID, comm: "rtlab-timer/0", prio: PRIO };

/// xorshift64*: a reproducible stream without a dependency.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// A run of the thread on CPU 0: each cycle it arms its timer, sleeps (CPU idle or a
/// stress task running), is woken by the timer interrupt and switched in. Some wake-ups
/// are late by hundreds of µs, some switches from idle are not traced, some events are
/// lost, and interrupts and softirqs come in between.
fn run(seed: u64) -> (Vec<KernelEvent>, Vec<WakeSample>) {
    run_with(seed, 0)
}

/// [`run`] with `softirqs` more softirqs (two events each) while the thread sleeps, each
/// cycle.
fn run_with(seed: u64, softirqs: u64) -> (Vec<KernelEvent>, Vec<WakeSample>) {
    let mut rng = Rng(seed);
    let mut sc = Scenario::on(0);
    let mut samples = Vec::new();
    let base = 10_000_000_000u64;
    let mut wake = base - 300_000;
    for k in 1..=CYCLES {
        let due = base + k * INTERVAL_NS;
        let busy = rng.below(3) == 0;
        let other = if busy { STRESS } else { IDLE };
        sc.arm(wake + 500, TID, TIMER, due as i64).switch(wake + 800, STREAMED, other);
        for i in 0..softirqs {
            let at = wake + 1_000 + i * 4_000;
            sc.softirq_in(at, other.pid, 1).softirq_out(at + 1_000, other.pid, 1);
        }
        if rng.below(4) == 0 {
            let at = wake + 20_000 + rng.below(200_000);
            sc.irq_in(at, other.pid, 24, "virtio0").irq_out(at + 3_000, other.pid, 24);
            sc.softirq_in(at + 3_100, other.pid, 3).softirq_out(at + 9_000, other.pid, 3);
        }
        if rng.below(500) == 0 {
            sc.lost(due - 200_000);
        }
        let late = if rng.below(150) == 0 { 100_000 + rng.below(700_000) } else { rng.below(3_000) };
        let irq = due + late;
        sc.timer_irq(irq, other.pid);
        let switch_in = irq + 2_000 + rng.below(5_000);
        // The kernel sometimes records no switch out of idle (docs/split.md).
        if busy || rng.below(300) != 0 {
            sc.switch(switch_in, other, STREAMED);
        }
        wake = switch_in + 500 + rng.below(3_000);
        samples.push(WakeSample { cpu: 0, due_ns: due, wake_ns: wake });
    }
    (sc.merged(), samples)
}

/// Samples as the raw writer hands the timer probe's latency samples of CPU 0 to the tap.
fn as_tapped(samples: &[WakeSample]) -> TappedSamples {
    let samples = samples
        .iter()
        .map(|s| RawSample { expected_ns: s.due_ns, value_ns: s.latency_ns(), cpu: 0, flags: 0 })
        .collect();
    TappedSamples { cpu: 0, metric: "timer.latency".into(), samples, unrecorded: Vec::new() }
}

fn settings(explain_above_ns: Option<u64>) -> SplitSettings {
    SplitSettings {
        explain_above_ns,
        max_explained: 20,
        default_explained: 3,
        thread_prio: PRIO,
        histogram_max_ns: 1_000_000_000,
    }
}

fn probe_output() -> ProbeOutput {
    ProbeOutput {
        probe: "timer".into(),
        threads: vec![ThreadOutput {
            cpu: 0,
            thread_name: "rtlab-timer/0".into(),
            cycles: CYCLES,
            overruns: 0,
            lost: 0,
            metrics: Vec::new(),
            interrupted: false,
            block_s: 1,
            interval_ns: INTERVAL_NS,
            details: Vec::new(),
        }],
        raw_written: Vec::new(),
        notes: Vec::new(),
    }
}

/// Feeds the run as the session and the raw writer would: events in 3 ms chunks (each
/// chunk's end then complete), the samples of a chunk handed over two chunks later.
fn stream(
    events: &[KernelEvent],
    samples: &[WakeSample],
    settings: SplitSettings,
) -> (ProbeOutput, rtlab_probe::traced::ProbeSplitAccount) {
    let (tap, mut split) =
        StreamingSplit::new("timer", SplitSource::KernelEvents, settings, INTERVAL_NS, CYCLES * INTERVAL_NS, &[0])
            .unwrap();
    let chunk_ns = 3_000_000;
    let start = events[0].ts_ns;
    let end = events.last().unwrap().ts_ns;
    let (mut next_event, mut next_sample) = (0, 0);
    let mut chunk_end = start + chunk_ns;
    while next_event < events.len() || next_sample < samples.len() {
        let upto = events[next_event..].partition_point(|e| e.ts_ns < chunk_end) + next_event;
        split.events(0, events[next_event..upto].to_vec());
        next_event = upto;
        split.complete_before(0, chunk_end);
        let lagged = chunk_end.saturating_sub(2 * chunk_ns);
        let upto = if next_event == events.len() {
            samples.len()
        } else {
            samples[next_sample..].partition_point(|s| s.wake_ns < lagged) + next_sample
        };
        if upto > next_sample {
            tap.deliver(as_tapped(&samples[next_sample..upto]));
            next_sample = upto;
        }
        split.steal(&[]);
        chunk_end += chunk_ns;
        assert!(chunk_end < end + 10 * chunk_ns + 1_000_000_000, "the feed did not end");
    }
    split.complete_before(0, u64::MAX);
    let mut output = probe_output();
    let account = split.finish(&mut output).unwrap();
    (output, account)
}

/// The worst `keep` samples, worst first, ties the earlier first (the split's rule).
fn worst(samples: &[WakeSample], above: Option<u64>, keep: usize) -> Vec<usize> {
    let mut order: Vec<usize> =
        (0..samples.len()).filter(|&i| above.is_none_or(|t| samples[i].latency_ns() > t as i64)).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(samples[i].latency_ns()));
    order.truncate(keep);
    order
}

fn check(seed: u64, explain_above_ns: Option<u64>) {
    let (events, samples) = run(seed);
    let batch = split_samples(&events, TID, Stimulus::Timer, &samples);
    let (output, account) = stream(&events, &samples, settings(explain_above_ns));
    let thread = &account.threads[0];
    let counts = &thread.counts;
    assert_eq!(counts.tid, Some(TID));
    assert_eq!(counts.samples, CYCLES);
    let split: Vec<_> = batch.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(counts.split, split.len() as u64);
    let mut unsplit: Vec<(Unsplit, u64)> = Vec::new();
    for reason in batch.iter().filter_map(|r| r.as_ref().err()) {
        match unsplit.iter_mut().find(|(r, _)| r == reason) {
            Some((_, n)) => *n += 1,
            None => unsplit.push((*reason, 1)),
        }
    }
    assert_eq!(counts.unsplit, unsplit);
    assert!(counts.unsplit.iter().any(|(r, _)| *r == Unsplit::EventsLost), "the run lost no events: {unsplit:?}");
    assert_eq!(counts.switch_in_inferred, split.iter().filter(|p| p.switch_in_inferred).count() as u64);
    assert!(counts.switch_in_inferred > 0);
    assert_eq!(counts.sum_within_1us, counts.split, "the parts add up to every sample");
    assert_eq!(counts.split + counts.unsplit.iter().map(|(_, n)| n).sum::<u64>(), counts.samples);

    // The part metrics hold exactly the batch's parts.
    let metric = |name: &str| output.threads[0].metrics.iter().find(|m| m.metric == name).unwrap();
    for (name, part) in [("timer.irq", 0), ("timer.sched", 1), ("timer.return", 2)] {
        let values: Vec<i64> = split.iter().map(|p| [p.first_ns, p.sched_ns, p.return_ns][part]).collect();
        let m = &metric(name).moments;
        assert_eq!(m.count, values.len() as u64, "{name}");
        assert_eq!((m.min, m.max), (*values.iter().min().unwrap(), *values.iter().max().unwrap()), "{name}");
        assert_eq!(m.sum, values.iter().map(|&v| v as i128).sum::<i128>(), "{name}");
    }

    // The same spikes, explained the same from the whole trace.
    let keep = if explain_above_ns.is_some() { 20 } else { 3 };
    let chosen = worst(&samples, explain_above_ns, keep);
    let expected: Vec<_> =
        chosen.iter().map(|&i| explain(&events, TID, PRIO, Stimulus::Timer, &samples[i], batch[i].ok(), &[])).collect();
    assert_eq!(thread.explanations, expected);
    let above = explain_above_ns.map_or(0, |t| samples.iter().filter(|s| s.latency_ns() > t as i64).count() as u64);
    assert_eq!(thread.above_threshold, above);
    assert_eq!(account.events, events.len() as u64);

    // Bounded by the explanations' context, a second either side of a spike, not the run.
    let per_second = events.len() as u64 * 1_000_000_000 / (CYCLES * INTERVAL_NS);
    assert!(
        account.peak_window_events < per_second * 5 / 2,
        "held {} events at once; the run has {} ({per_second} per second)",
        account.peak_window_events,
        events.len()
    );
}

#[test]
fn streaming_gives_the_batch_split_and_explanations_of_the_worst() {
    check(19, None);
}

#[test]
fn streaming_gives_the_batch_explanations_above_a_threshold() {
    check(7, Some(300_000));
}

#[test]
fn wake_up_records_give_the_parts_of_their_instants() {
    use rtlab_sys::tracefs::ebpf::{RecordConsumer, SplitRecord};
    let (events, samples) = run(23);
    let batch = split_samples(&events, TID, Stimulus::Timer, &samples);
    // The records an eBPF backend would have written: one per wake-up it saw, at the
    // instants the batch split found; none for the samples the batch could not cut.
    let records: Vec<SplitRecord> = samples
        .iter()
        .zip(&batch)
        .filter_map(|(s, r)| r.as_ref().ok().map(|p| (s, p)))
        .map(|(s, p)| SplitRecord {
            cpu: 0,
            tid: TID,
            expires_ns: s.due_ns,
            handled_at_ns: p.handled_at_ns,
            switched_in_at_ns: p.switched_in_at_ns,
        })
        .collect();
    let (tap, mut split) = StreamingSplit::new(
        "timer",
        SplitSource::WakeUpRecords,
        settings(None),
        INTERVAL_NS,
        CYCLES * INTERVAL_NS,
        &[0],
    )
    .unwrap();
    // In 100 record chunks, the samples of a chunk handed over a chunk later.
    let mut delivered = 0;
    for (n, chunk) in records.chunks(100).enumerate() {
        split.records(chunk.to_vec());
        let complete = chunk.last().unwrap().switched_in_at_ns + 1;
        RecordConsumer::complete_before(&mut split, complete);
        if n > 0 {
            let upto = samples.partition_point(|s| s.wake_ns < complete - 100 * INTERVAL_NS);
            tap.deliver(as_tapped(&samples[delivered..upto]));
            delivered = upto;
        }
    }
    tap.deliver(as_tapped(&samples[delivered..]));
    RecordConsumer::complete_before(&mut split, u64::MAX);
    let mut output = probe_output();
    let account = split.finish(&mut output).unwrap();
    let counts = &account.threads[0].counts;
    assert_eq!(counts.tid, Some(TID));
    assert_eq!(counts.samples, CYCLES);
    assert_eq!(counts.split, records.len() as u64);
    assert_eq!(counts.unsplit, vec![(Unsplit::NoSwitchIn, CYCLES - records.len() as u64)]);
    assert_eq!(counts.sum_within_1us, counts.split);
    assert!(account.threads[0].explanations.is_empty());
    let split_parts: Vec<_> = batch.iter().filter_map(|r| r.as_ref().ok()).collect();
    for (name, part) in [("timer.irq", 0), ("timer.sched", 1), ("timer.return", 2)] {
        let values: Vec<i64> = split_parts.iter().map(|p| [p.first_ns, p.sched_ns, p.return_ns][part]).collect();
        let m = &output.threads[0].metrics.iter().find(|m| m.metric == name).unwrap().moments;
        assert_eq!(m.count, values.len() as u64, "{name}");
        assert_eq!(m.sum, values.iter().map(|&v| v as i128).sum::<i128>(), "{name}");
        assert_eq!((m.min, m.max), (*values.iter().min().unwrap(), *values.iter().max().unwrap()), "{name}");
    }
    // Only records not yet matched are held.
    assert!(account.peak_window_events < 400, "held {} records", account.peak_window_events);
}

#[test]
fn a_stalled_tap_costs_samples_not_memory() {
    // Every sample comes only after all the events: the split must not hold them all.
    let (events, samples) = run_with(29, 40);
    const BOUND: usize = 1 << 18;
    assert!(events.len() > BOUND + 10_000, "{} events do not overflow the bound", events.len());
    let (tap, mut split) = StreamingSplit::new(
        "timer",
        SplitSource::KernelEvents,
        settings(None),
        INTERVAL_NS,
        CYCLES * INTERVAL_NS,
        &[0],
    )
    .unwrap();
    for chunk in events.chunk_by(|a, b| a.ts_ns / 3_000_000 == b.ts_ns / 3_000_000) {
        split.events(0, chunk.to_vec());
        split.complete_before(0, chunk.last().unwrap().ts_ns + 1);
    }
    tap.deliver(as_tapped(&samples));
    split.complete_before(0, u64::MAX);
    let mut output = probe_output();
    let account = split.finish(&mut output).unwrap();
    assert!(account.peak_window_events <= BOUND as u64, "held {}", account.peak_window_events);
    // The window kept the newest events (one place for the marker of the dropped); the
    // scenario's own lost-event markers among the dropped are no events.
    let gone = &events[..events.len() - (BOUND - 1)];
    let markers = gone.iter().filter(|e| matches!(e.kind, rtlab_sys::tracefs::event::EventKind::Lost { .. })).count();
    assert_eq!(account.events_dropped, (gone.len() - markers) as u64);
    let dropped_through = gone.last().unwrap().ts_ns;

    // Oracle: a sample whose events may be among the dropped is lost; every other sample
    // is what the batch split of the whole trace gives.
    let batch = split_samples(&events, TID, Stimulus::Timer, &samples);
    let expected: Vec<Result<(), Unsplit>> = samples
        .iter()
        .zip(&batch)
        .map(|(s, r)| {
            if s.due_ns.saturating_sub(2 * INTERVAL_NS + rtlab_probe::split::LOST_LOOKBACK_NS) <= dropped_through {
                Err(Unsplit::EventsLost)
            } else {
                r.map(|_| ())
            }
        })
        .collect();
    let counts = &account.threads[0].counts;
    assert_eq!(counts.samples, CYCLES);
    assert_eq!(counts.split, expected.iter().filter(|r| r.is_ok()).count() as u64);
    let lost = expected.iter().filter(|r| **r == Err(Unsplit::EventsLost)).count() as u64;
    assert!(lost > 1_000 && counts.split > 1_000, "lost {lost}, split {}", counts.split);
    assert_eq!(counts.unsplit.iter().find(|(r, _)| *r == Unsplit::EventsLost).map(|(_, n)| *n), Some(lost));
    assert_eq!(counts.split + counts.unsplit.iter().map(|(_, n)| n).sum::<u64>(), counts.samples);
    assert_eq!(counts.sum_within_1us, counts.split);
}
