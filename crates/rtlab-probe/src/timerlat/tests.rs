use super::*;
use rtlab_sys::tracefs::format::{EventFormat, EventFormats, EventId};
use rtlab_sys::tracefs::ring::{decode_pages, PageLayout};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/timerlat-6.1-rt");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

/// The recorded pages of one CPU, decoded as the session's reader decodes them.
fn recorded_events(cpu: u32) -> Vec<KernelEvent> {
    let layout = PageLayout::parse(&String::from_utf8(fixture("header_page")).unwrap()).unwrap();
    let format =
        EventFormat::parse(EventId::Timerlat, &String::from_utf8(fixture("timerlat.format")).unwrap()).unwrap();
    let mut formats = EventFormats::default();
    formats.insert(format);
    decode_pages(&fixture(&format!("cpu{cpu}.pages")), layout, cpu, &formats).unwrap().events
}

fn event(cpu: u32, ts_ns: u64, seqnum: u32, context: i32, latency: i64) -> KernelEvent {
    KernelEvent { ts_ns, cpu, pid: 0, kind: EventKind::Timerlat { seqnum, context, timer_latency_ns: latency } }
}

fn records(cpus: &[usize]) -> TimerlatRecords {
    TimerlatRecords::new(cpus, 1_000_000, 10_000_000_000, 10_000_000_000, 0).unwrap()
}

#[test]
fn the_6_1_rt_format_decodes_into_timerlat_records() {
    let format =
        EventFormat::parse(EventId::Timerlat, &String::from_utf8(fixture("timerlat.format")).unwrap()).unwrap();
    assert_eq!(format.id, 17);
    let events = recorded_events(0);
    let first: Vec<_> = events.iter().take(2).map(|e| e.kind.clone()).collect();
    // The tracer's threads started when it was set, before tracing was switched on: the
    // first record is not activation 1. The irq record comes first, then its thread's.
    assert!(matches!(first[0], EventKind::Timerlat { seqnum: 1796, context: TIMERLAT_IRQ, .. }), "{first:?}");
    assert!(matches!(first[1], EventKind::Timerlat { seqnum: 1796, context: TIMERLAT_THREAD, .. }), "{first:?}");
}

#[test]
fn every_recorded_record_is_counted_and_paired() {
    // per_cpu/cpuN/stats said "read events" 2963 and 3034, overrun 0: the oracle.
    for (cpu, read_events) in [(0u32, 2963u64), (1, 3034)] {
        let events = recorded_events(cpu);
        assert_eq!(events.len() as u64, read_events, "cpu{cpu}");
        let mut r = records(&[cpu as usize]);
        for e in &events {
            r.take(cpu, e).unwrap();
        }
        let out = r.finish(&[], &[]);
        let t = &out[0];
        let detail = |k: &str| match t.details.iter().find(|(key, _)| key == k) {
            Some((_, Detail::Int(v))) => *v as u64,
            other => panic!("{k}: {other:?}"),
        };
        let counts = TimerlatCounts {
            activations: detail("activations"),
            paired: detail("paired"),
            irq_without_thread: detail("irq_without_thread"),
            irq_in_flight_at_end: detail("irq_in_flight_at_end"),
            irq_before_tracing: detail("irq_before_tracing"),
            thread_without_irq: detail("thread_without_irq"),
            no_record: detail("no_record"),
            ..TimerlatCounts::default()
        };
        assert!(counts.adds_up(), "cpu{cpu}: {counts:?}");
        // Nothing was lost here: every activation but possibly the last is paired.
        assert_eq!(counts.no_record + counts.irq_without_thread + counts.thread_without_irq, 0, "cpu{cpu}");
        assert_eq!(detail("thread_before_irq"), 0, "cpu{cpu}: a thread ran before its interrupt");
        assert_eq!(detail("out_of_order"), 0);
        assert_eq!(counts.irq_records() + counts.thread_records(), read_events, "cpu{cpu}");
        let metric = |name: &str| t.metrics.iter().find(|m| m.metric == name).unwrap();
        assert_eq!(metric("timerlat.thread").moments.count, counts.thread_records());
        assert_eq!(metric("timerlat.irq").moments.count, counts.irq_records());
        assert_eq!(metric("timerlat.irq").histogram.count(), counts.irq_records());
        assert!(t.metrics.iter().all(|m| m.metric != "timerlat.user"));
        assert_eq!(t.cycles, counts.activations + detail("skipped_periods"));
        assert_eq!(t.lost, 0);
        assert_eq!(t.thread_name, format!("timerlat/{cpu}"));
    }
}

#[test]
fn losses_are_classified_exactly() {
    let mut r = records(&[0, 1]);
    let feed = |r: &mut TimerlatRecords, e: KernelEvent| r.take(e.cpu, &e).unwrap();
    // 1: paired. 2: thread record lost. 3: irq record lost. 4, 5: nothing came. 6: paired,
    // after a lost-events marker. 7: irq only, tracing stopped.
    feed(&mut r, event(0, 10, 1, TIMERLAT_IRQ, 5_000));
    feed(&mut r, event(0, 11, 1, TIMERLAT_THREAD, 9_000));
    feed(&mut r, event(0, 20, 2, TIMERLAT_IRQ, 4_000));
    feed(&mut r, event(0, 31, 3, TIMERLAT_THREAD, 2_500_000)); // two periods skipped
    feed(&mut r, KernelEvent { ts_ns: 55, cpu: 0, pid: -1, kind: EventKind::Lost { events: 4 } });
    feed(&mut r, event(0, 60, 6, TIMERLAT_IRQ, 3_000));
    feed(&mut r, event(0, 61, 6, TIMERLAT_THREAD, 2_000)); // thread below irq: counted
    feed(&mut r, event(0, 70, 7, TIMERLAT_IRQ, 3_000));
    // Not timerlat records, another CPU's, an untraced CPU's: ignored or kept apart.
    feed(&mut r, KernelEvent { ts_ns: 71, cpu: 0, pid: 0, kind: EventKind::SoftirqEntry { vec: 1 } });
    feed(&mut r, event(1, 10, 1, TIMERLAT_IRQ, 1_000));
    feed(&mut r, event(1, 12, 1, TIMERLAT_THREAD, 2_000));
    feed(&mut r, event(1, 13, 1, TIMERLAT_THREAD, 2_000)); // a repeat: out of order
    feed(&mut r, event(1, 14, 2, TIMERLAT_USER, 7_000));
    feed(&mut r, event(5, 10, 1, TIMERLAT_IRQ, 1_000));
    let c0 = r.counts(0).unwrap();
    assert_eq!(c0.irq_in_flight_at_end, 0, "decided at finish");
    let out = r.finish(&[RingStats { cpu: 0, overrun: 4, dropped: 0 }], &[]);
    let mut c0 = c0;
    c0.irq_in_flight_at_end = 1;
    assert_eq!(
        c0,
        TimerlatCounts {
            activations: 7,
            paired: 2,
            irq_without_thread: 1,
            irq_in_flight_at_end: 1,
            irq_before_tracing: 0,
            thread_without_irq: 1,
            no_record: 2,
            ring_lost_events: 4,
            ring_lost_markers: 1,
            thread_before_irq: 1,
            skipped_periods: 2,
            user: 0,
            out_of_order: 0,
        }
    );
    assert!(c0.adds_up());
    let cpu0 = &out[0];
    assert_eq!(cpu0.lost, 3, "irq without thread + no record");
    assert_eq!(cpu0.overruns, 2);
    assert_eq!(cpu0.cycles, 9);
    assert!(cpu0.details.contains(&("ring_overrun".into(), Detail::Int(4))));
    let count = |t: &ThreadOutput, m: &str| t.metrics.iter().find(|x| x.metric == m).map(|x| x.moments.count);
    assert_eq!(count(cpu0, "timerlat.irq"), Some(4));
    assert_eq!(count(cpu0, "timerlat.thread"), Some(3));
    let cpu1 = &out[1];
    assert!(cpu1.details.contains(&("out_of_order".into(), Detail::Int(1))));
    assert_eq!(count(cpu1, "timerlat.user"), Some(1));
    assert_eq!(count(cpu1, "timerlat.thread"), Some(1));
    assert_eq!(out.len(), 2);
}

#[test]
fn a_kernel_without_the_tracer_is_an_environment_error_naming_the_kernels_that_have_it() {
    if rtlab_sys::tracefs::timerlat::check_support().is_ok() {
        return; // a kernel with timerlat: the guest tests cover it
    }
    let e = TimerlatProbe::new(TimerlatProbeConfig {
        cpus: vec![0],
        period_ns: DEFAULT_PERIOD_NS,
        budget: Some(Budget::Duration { ns: 1_000_000_000 }),
        tap: None,
        histogram_max_ns: 1_000_000_000,
        thread_priority: None,
    })
    .err()
    .unwrap();
    assert!(matches!(e, ProbeError::Unavailable { .. }), "{e}");
}

#[test]
fn periods_the_tracer_refuses_are_configuration_errors() {
    for period_ns in [50_000, 1_500, 2_000_000_000] {
        let e = TimerlatProbe::new(TimerlatProbeConfig {
            cpus: vec![0],
            period_ns,
            budget: Some(Budget::Duration { ns: 1_000_000_000 }),
            tap: None,
            histogram_max_ns: 1_000_000_000,
            thread_priority: None,
        })
        .err()
        .unwrap();
        assert!(matches!(e, ProbeError::Config(_)), "{period_ns}: {e}");
    }
}

#[test]
fn a_first_thread_record_is_an_activation_tracing_started_in_not_a_loss() {
    // Tracing was switched on between activation 41's interrupt and its thread (seen in the
    // PREEMPT_RT guest); a later thread record without its irq is a loss.
    let mut r = records(&[0]);
    let feed = |r: &mut TimerlatRecords, e: KernelEvent| r.take(e.cpu, &e).unwrap();
    feed(&mut r, event(0, 10, 41, TIMERLAT_THREAD, 9_000));
    feed(&mut r, event(0, 20, 42, TIMERLAT_IRQ, 5_000));
    feed(&mut r, event(0, 21, 42, TIMERLAT_THREAD, 8_000));
    feed(&mut r, event(0, 31, 43, TIMERLAT_THREAD, 7_000));
    let c = r.counts(0).unwrap();
    assert_eq!((c.activations, c.paired, c.irq_before_tracing, c.thread_without_irq), (3, 1, 1, 1));
    assert!(c.adds_up());
    assert_eq!(c.thread_records(), 3);
    let out = r.finish(&[RingStats { cpu: 0, overrun: 0, dropped: 0 }], &[]);
    assert_eq!(out[0].lost, 0, "neither is a missing thread record");
}

/// What a tap received of `metric`: the samples' (expiry, latency) and the missing ones.
fn tapped_by_metric(chunks: &[TappedSamples], metric: &str) -> (Vec<(u64, i64)>, Vec<Unrecorded>) {
    let mut samples = Vec::new();
    let mut unrecorded = Vec::new();
    for chunk in chunks.iter().filter(|c| c.metric == metric) {
        samples.extend(chunk.samples.iter().map(|s| (s.expected_ns, s.value_ns)));
        unrecorded.extend(chunk.unrecorded.iter().copied());
    }
    (samples, unrecorded)
}

#[test]
fn the_tap_gets_every_record_at_its_expiry_and_every_missing_activation() {
    const MS: u64 = 1_000_000;
    let (tap, receiver) = SampleTap::new();
    let mut r = records(&[0]).with_tap(tap);
    let feed = |r: &mut TimerlatRecords, e: KernelEvent| r.take(e.cpu, &e).unwrap();
    // Expiries at 100, 101, ... ms. 1: paired. 2: its thread record lost. 3: its irq record
    // lost, the thread 2.5 periods late (two periods skipped). 4, 5: no record. 6: paired.
    // 7: irq only, tracing stopped.
    feed(&mut r, event(0, 100 * MS + 5_000, 1, TIMERLAT_IRQ, 5_000));
    feed(&mut r, event(0, 100 * MS + 9_000, 1, TIMERLAT_THREAD, 9_000));
    feed(&mut r, event(0, 101 * MS + 4_000, 2, TIMERLAT_IRQ, 4_000));
    r.deliver();
    feed(&mut r, event(0, 102 * MS + 2_500_000, 3, TIMERLAT_THREAD, 2_500_000));
    feed(&mut r, event(0, 108 * MS + 3_000, 6, TIMERLAT_IRQ, 3_000));
    feed(&mut r, event(0, 108 * MS + 7_000, 6, TIMERLAT_THREAD, 7_000));
    feed(&mut r, event(0, 109 * MS + 3_000, 7, TIMERLAT_IRQ, 3_000));
    r.deliver();
    r.deliver(); // nothing new: no empty chunk
    let chunks: Vec<TappedSamples> = receiver.try_iter().collect();
    assert_eq!(chunks.len(), 4, "thread and irq, twice: {chunks:?}");
    let lost = |expected_ns, lost| Unrecorded { expected_ns, lost, overruns: 0 };

    let (thread, thread_missing) = tapped_by_metric(&chunks, "timerlat.thread");
    assert_eq!(thread, [(100 * MS, 9_000), (102 * MS, 2_500_000), (108 * MS, 7_000)]);
    assert_eq!(
        thread_missing,
        [
            lost(101 * MS, 1),                                          // 2's thread record
            Unrecorded { expected_ns: 103 * MS, lost: 0, overruns: 2 }, // after 3's late wake-up
            lost(103 * MS, 2),                                          // 4 and 5
        ]
    );
    let (irq, irq_missing) = tapped_by_metric(&chunks, "timerlat.irq");
    assert_eq!(irq, [(100 * MS, 5_000), (101 * MS, 4_000), (108 * MS, 3_000), (109 * MS, 3_000)]);
    assert_eq!(irq_missing, [lost(102 * MS, 1), lost(103 * MS, 2)]);

    // The same as the run's counts.
    let counts = r.counts(0).unwrap();
    assert_eq!(thread.len() as u64, counts.thread_records());
    assert_eq!(thread_missing.iter().map(|u| u.lost).sum::<u64>(), counts.thread_lost());
    assert_eq!(thread_missing.iter().map(|u| u.overruns).sum::<u64>(), counts.skipped_periods);
    // The last irq record waits for its thread record: a sample all the same.
    assert_eq!(irq.len() as u64, counts.irq_records() + 1);
    assert_eq!(irq_missing.iter().map(|u| u.lost).sum::<u64>(), counts.thread_without_irq + counts.no_record);
}

/// The recorded RT-kernel pages, through the tap into a monitor's windows: every record is
/// in exactly one window, and nothing is missing (the recording lost nothing).
#[test]
fn recorded_records_land_in_windows_and_add_up() {
    use crate::windows::{WindowAggregator, WindowSource};
    for cpu in [0u32, 1] {
        let events = recorded_events(cpu);
        let (tap, receiver) = SampleTap::new();
        let mut r = records(&[cpu as usize]).with_tap(tap);
        for chunk in events.chunks(100) {
            for e in chunk {
                r.take(cpu, e).unwrap();
            }
            r.deliver();
        }
        let first_ts = events.iter().map(|e| e.ts_ns).min().unwrap();
        let last_ts = events.iter().map(|e| e.ts_ns).max().unwrap();
        // 1 s windows from 1 s before the first record.
        let start = first_ts - 1_000_000_000;
        let mut agg = WindowAggregator::new(
            WindowSource::Timerlat,
            &[cpu as usize],
            1_000_000,
            1_000_000_000,
            10_000_000_000,
            start,
            0,
        );
        for chunk in receiver.try_iter() {
            agg.add(&chunk);
        }
        let windows = agg.close_all(last_ts + 1, &|_| "idle".to_string());
        let sum = |metric: &str, f: &dyn Fn(&rtlab_results::history::WindowMetric) -> u64| -> u64 {
            windows.iter().flat_map(|w| &w.record.metrics).filter(|m| m.metric == metric).map(f).sum()
        };
        let counts = r.counts(cpu as usize).unwrap();
        assert_eq!(sum("timerlat.thread", &|m| m.moments.count), counts.thread_records(), "cpu{cpu}");
        let in_flight = u64::from(r.cpus[0].pending_irq.is_some());
        assert_eq!(sum("timerlat.irq", &|m| m.moments.count), counts.irq_records() + in_flight, "cpu{cpu}");
        assert_eq!(sum("timerlat.thread", &|m| m.lost + m.overruns), counts.thread_lost() + counts.skipped_periods);
        assert_eq!(sum("timerlat.irq", &|m| m.lost), 0, "cpu{cpu}");
        assert_eq!((agg.late(), agg.beyond_end()), (0, 0));
        // Every window's exposition buckets hold its samples.
        for w in &windows {
            for (m, buckets) in w.record.metrics.iter().zip(&w.buckets) {
                assert_eq!(buckets.iter().sum::<u64>(), m.moments.count);
            }
        }
    }
}
