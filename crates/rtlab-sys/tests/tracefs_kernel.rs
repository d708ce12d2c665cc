//! Real-kernel tests of the tracefs backend (root; each test mounts tracefs for itself when
//! it is not mounted and unmounts it after; skipped with a printed reason otherwise, and
//! then failing under CI=true): a session records a thread's sleeps exactly, each expiry's
//! `now` is on the due time's clock, and the top-level tracing state is the same before a
//! session, after stop and after a dropped session.

use std::sync::{Mutex, MutexGuard};

use rtlab_sys::clock::{monotonic_ns, sleep_until_monotonic_ns};
use rtlab_sys::sched::{AffinityGuard, Policy, SchedulingGuard};
use rtlab_sys::tracefs::event::EventKind;
use rtlab_sys::tracefs::mount::TracefsMount;
use rtlab_sys::tracefs::{tracefs_root, tracing_state_snapshot, TraceConfig, TraceError, TraceSession};

/// Sessions of this process share its pid in their instance names and the snapshot lists
/// this process's instances: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<&'static str> {
    if rtlab_sys::privileges::current().euid != 0 {
        return Some("not root");
    }
    if tracefs_root().is_none() {
        return Some("tracefs not mounted");
    }
    None
}

/// This test's turn, with tracefs mounted for it if it was not (unmounted when the turn
/// ends, as `run --split` does); None (after printing why, and failing under CI=true) when
/// the test cannot run here.
struct Turn {
    _mount: Option<TracefsMount>,
    _serial: MutexGuard<'static, ()>,
}

fn serial_unless_skipped() -> Option<Turn> {
    let serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mount = (rtlab_sys::privileges::current().euid == 0).then(TracefsMount::acquire).and_then(Result::ok);
    if let Some(reason) = skip_reason() {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{reason}, and CI=true: this test must run");
        println!("skipped: {reason}");
        return None;
    }
    Some(Turn { _mount: mount, _serial: serial })
}

/// How far two reads of CLOCK_MONOTONIC through different kernel accessors may disagree:
/// the split's structural tolerance (its `timer.irq` is never below minus this).
const CLOCK_GRANULARITY_NS: u64 = 1_000;

fn config(dir: &tempfile::TempDir) -> TraceConfig {
    TraceConfig { cpus: vec![0], buffer_kb_per_cpu: 1024, spool_dir: Some(dir.path().join("spool")) }
}

#[test]
fn a_session_records_the_sleeps_of_a_thread_exactly_and_restores_tracing_state() {
    let Some(_serial) = serial_unless_skipped() else { return };
    let before = tracing_state_snapshot().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = TraceSession::start(config(&dir)).unwrap();
    assert!(session.instance_name().starts_with(&format!("rtlab-{}", std::process::id())));
    assert!(tracefs_root().unwrap().join("instances").join(session.instance_name()).is_dir());

    let tid = rtlab_sys::ipc::current_thread_id().0;
    let requested: Vec<u64> = {
        let _pin = AffinityGuard::pin_current_thread(0).unwrap();
        // Real-time tasks have no timer slack, so the armed expiry is the requested one.
        let _fifo = SchedulingGuard::set_current_thread(Policy::Fifo, 10).unwrap();
        let mut requested = Vec::new();
        let mut next = monotonic_ns() + 1_000_000;
        for _ in 0..20 {
            sleep_until_monotonic_ns(next).unwrap();
            requested.push(next);
            next += 1_000_000;
        }
        requested
    };
    let capture = session.stop().unwrap();
    let after = tracing_state_snapshot().unwrap();
    assert_eq!(before, after, "tracing state changed by a session");
    assert!(capture.bytes > 0 && capture.bytes.is_multiple_of(4096), "{} bytes", capture.bytes);
    assert_eq!(capture.events_lost, 0);
    assert!(capture.description.contains("trace clock mono"), "{}", capture.description);
    assert!(capture.steal.iter().all(|s| s.cpu == 0));
    assert!(!capture.steal.is_empty());

    let events = capture.events_of_cpu(0).unwrap();
    println!("{}", capture.description);
    println!("{} bytes spooled, {} events decoded on CPU 0, {} lost", capture.bytes, events.len(), capture.events_lost);
    assert!(events.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns), "timestamps go backwards");
    let starts: Vec<(usize, u64, i64)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.pid == tid)
        .filter_map(|(i, e)| match e.kind {
            EventKind::HrtimerStart { timer, expires_ns, .. } => Some((i, timer, expires_ns)),
            _ => None,
        })
        .collect();
    let armed: Vec<u64> = starts.iter().map(|&(_, _, expires)| expires as u64).collect();
    assert_eq!(armed, requested, "hrtimer_start expiries of tid {tid}");
    // (trace timestamp - now) of each expiry: how far the split's handling start (now) is
    // from the event's own trace timestamp (docs/split.md, "One clock").
    let mut ts_minus_now: Vec<i64> = Vec::new();
    for &(i, timer, expires) in &starts {
        let rest = &events[i + 1..];
        let expire = rest
            .iter()
            .position(|e| matches!(e.kind, EventKind::HrtimerExpireEntry { timer: t, .. } if t == timer))
            .unwrap_or_else(|| panic!("no hrtimer_expire_entry after the start of {expires}"));
        // Same clock: the expiry is handled at or after the programmed time, and the
        // kernel's own clock read that found it expired (`now`, the split's handling start)
        // is at or after it too and not after the event's trace timestamp (trace clock mono
        // and the hrtimer base read one clock; CLOCK_GRANULARITY_NS of slack for the fast
        // accessor the trace clock uses).
        assert!(rest[expire].ts_ns >= expires as u64);
        let EventKind::HrtimerExpireEntry { now_ns, .. } = rest[expire].kind else { unreachable!() };
        assert!(now_ns >= expires, "now {now_ns} before the expiry {expires}");
        assert!(
            now_ns <= (rest[expire].ts_ns + CLOCK_GRANULARITY_NS) as i64,
            "now {now_ns} after its event at {}",
            rest[expire].ts_ns
        );
        ts_minus_now.push(rest[expire].ts_ns as i64 - now_ns);
        assert!(
            rest[expire + 1..]
                .iter()
                .any(|e| matches!(e.kind, EventKind::SchedSwitch { next_pid, .. } if next_pid == tid)),
            "no switch to tid {tid} after the expiry of {expires}"
        );
    }
    ts_minus_now.sort_unstable();
    println!("expiry trace timestamp - its now (ns), sorted: {ts_minus_now:?}");
    // all_events merges the same events (one CPU traced).
    assert_eq!(capture.all_events().unwrap(), events);
    capture.remove_spool().unwrap();
    assert!(capture.spool_files.iter().all(|p| !p.exists()));
}

/// Collects what a streaming session hands over.
#[derive(Default)]
struct Collected {
    events: Vec<rtlab_sys::tracefs::event::KernelEvent>,
    /// Every `complete_before` call, in order.
    complete: Vec<u64>,
    /// Events that came stamped before an earlier `complete_before` said all had come.
    late: usize,
    steal_readings: usize,
}

impl rtlab_sys::tracefs::TraceConsumer for Collected {
    fn events(&mut self, _cpu: u32, events: Vec<rtlab_sys::tracefs::event::KernelEvent>) {
        let complete = self.complete.last().copied().unwrap_or(0);
        self.late += events.iter().filter(|e| e.ts_ns < complete).count();
        self.events.extend(events);
    }
    fn complete_before(&mut self, _cpu: u32, ns: u64) {
        self.complete.push(ns);
    }
    fn steal(&mut self, readings: &[rtlab_sys::tracefs::StealSample]) {
        self.steal_readings += readings.len();
    }
}

#[test]
fn a_streaming_session_hands_over_exactly_the_spooled_events_in_order() {
    let Some(_serial) = serial_unless_skipped() else { return };
    let before = tracing_state_snapshot().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let collected = std::sync::Arc::new(Mutex::new(Collected::default()));
    let session = TraceSession::start_streaming(config(&dir), collected.clone()).unwrap();
    {
        let _pin = AffinityGuard::pin_current_thread(0).unwrap();
        let mut next = monotonic_ns() + 1_000_000;
        for _ in 0..300 {
            sleep_until_monotonic_ns(next).unwrap();
            next += 1_000_000;
        }
    }
    let capture = session.stop().unwrap();
    assert_eq!(before, tracing_state_snapshot().unwrap());
    let spooled = capture.events_of_cpu(0).unwrap();
    let c = collected.lock().unwrap();
    assert!(!spooled.is_empty());
    assert_eq!(c.events, spooled, "the consumer got other events than the spool holds");
    assert_eq!(c.late, 0, "events came after complete_before said they had all come");
    assert!(c.complete.windows(2).all(|w| w[0] <= w[1]), "complete_before went backwards");
    assert_eq!(c.complete.last(), Some(&u64::MAX), "the last call says tracing has ended");
    assert!(c.complete.len() > 2, "complete_before was called while tracing ran");
    assert!(c.steal_readings > 0 && capture.steal.is_empty(), "steal goes to the consumer");
}

#[test]
fn a_dropped_session_restores_tracing_state() {
    let Some(_serial) = serial_unless_skipped() else { return };
    let before = tracing_state_snapshot().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = TraceSession::start(config(&dir)).unwrap();
    let name = session.instance_name().to_string();
    std::thread::sleep(std::time::Duration::from_millis(50));
    drop(session);
    assert!(!tracefs_root().unwrap().join("instances").join(name).exists());
    assert_eq!(before, tracing_state_snapshot().unwrap(), "tracing state changed by a dropped session");
}

#[test]
fn support_lists_the_three_backends_in_order() {
    let support = rtlab_sys::tracefs::support();
    let names: Vec<&str> = support.iter().map(|b| b.name).collect();
    assert_eq!(names, ["timerlat", "ebpf", "tracefs"]);
    assert!(!support[0].usable);
    assert!(support.iter().all(|b| !b.detail.is_empty()));
    if skip_reason().is_none() {
        assert!(support[2].usable, "{}", support[2].detail);
        if rtlab_sys::tracefs::ebpf::object_problem().is_none() {
            assert!(support[1].usable, "{}", support[1].detail);
        }
    }
}

#[test]
fn a_failed_start_leaves_nothing_behind() {
    let Some(_serial) = serial_unless_skipped() else { return };
    let before = tracing_state_snapshot().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A CPU that does not exist: refused before anything is created.
    let err = TraceSession::start(TraceConfig { cpus: vec![100_000], ..config(&dir) }).unwrap_err();
    assert!(matches!(err, TraceError::Unsupported(ref m) if m.contains("CPU 100000")), "{err}");
    // A buffer size the kernel refuses (0): fails after the instance was made, which is
    // then removed.
    let err = TraceSession::start(TraceConfig { buffer_kb_per_cpu: 0, ..config(&dir) }).unwrap_err();
    assert!(err.to_string().contains("buffer_size_kb"), "{err}");
    assert_eq!(before, tracing_state_snapshot().unwrap());
}

#[test]
fn instances_of_dead_rtlab_processes_are_removed() {
    let Some(_serial) = serial_unless_skipped() else { return };
    // The pid of a process that has exited (as after a SIGKILLed run).
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = tracefs_root().unwrap().join("instances").join(format!("rtlab-{dead}"));
    std::fs::create_dir(&stale).unwrap();
    assert!(rtlab_sys::tracefs::remove_stale_instances() >= 1);
    assert!(!stale.exists());
}
