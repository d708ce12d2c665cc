//! `rtlab monitor`: `rtlab run` that never ends (docs/monitor.md).
//!
//! Lifecycle: check the arguments (and, with `-P timerlat`, that the kernel has the tracer),
//! open (or create) the history and check its integrity, listen (with --listen), take the
//! real-time conditions, start the probe (rtlab's timer probe, or the kernel's timerlat
//! tracer) with its samples tapped, open a session; then, on this non-real-time thread, cut
//! the tapped samples into windows, commit each closed window in one transaction, update
//! the exposition, switch the load phases; at SIGINT/SIGTERM or --duration, stop the probe,
//! close the open window, end the session, and restore every setting (the tracer's too).

mod plan;
mod server;

use crate::cli::MonitorArgs;
use plan::MonitorPlan;

use crate::errors::{environment, usage};
use anyhow::Context;
use rtlab_history::{HistoryDb, Retention};
use rtlab_load::host::LoadHost;
use rtlab_probe::raw::SampleTap;
use rtlab_probe::timer::{EndCondition, TimerConfig, TimerProbe};
use rtlab_probe::timerlat::{TimerlatProbe, TimerlatProbeConfig};
use rtlab_probe::windows::{ClosedWindow, WindowAggregator, WindowSource};
use rtlab_probe::{ClockKind, Probe, ProbeError};
use rtlab_results::history::MonitorSettings;
use rtlab_results::monitor::MonitorTotals;
use rtlab_sys::activity::{activity_between, ActivitySnapshot};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the history is thinned (and once at the start).
const THIN_EVERY_NS: u64 = 3_600_000_000_000;
/// Closed windows held in memory while the history cannot store them (a full disk): a day
/// of one-minute windows, a few MiB. Beyond it the oldest go, counted.
const MAX_UNSTORED_WINDOWS: usize = 1_440;

pub fn cmd_monitor(args: &MonitorArgs) -> anyhow::Result<u8> {
    let host = rtlab_sys::sysinfo::collect();
    let plan = MonitorPlan::from_args(args, &host.online_cpus)?;
    let stop = crate::runner::stop_on_signals()?;
    let (tap, tapped) = SampleTap::new();
    // The probe takes the only sender: the end of its samples is the end of the channel.
    let mut tap = Some(tap);
    // The kernel's tracer is looked for before the history is touched: on a kernel without
    // it nothing changes.
    let timerlat = match plan.source {
        WindowSource::Timerlat => Some(
            TimerlatProbe::new(TimerlatProbeConfig {
                cpus: plan.cpus.clone(),
                period_ns: plan.interval_ns,
                budget: None,
                histogram_max_ns: plan.histogram_max_ns,
                thread_priority: plan.timerlat_priority,
                tap: tap.take(),
            })
            .map_err(|e| probe_error(e, "timerlat"))?,
        ),
        WindowSource::Timer => None,
    };

    // One monitor per history: two would interleave their sessions and windows.
    let _db_lock = lock_history(&plan.db)?;
    let mut db = HistoryDb::open(&plan.db).map_err(|e| usage(format!("--db: {e}")))?;
    db.integrity_check().map_err(|e| environment(format!("--db: {e}; move the file aside to start a new history")))?;
    let totals = Arc::new(Mutex::new(MonitorTotals::new(
        env!("CARGO_PKG_VERSION"),
        env!("RTLAB_COMMIT"),
        rtlab_results::history::HostIdentity::of(&host),
    )));
    let server = match plan.listen {
        Some(address) => Some(server::MetricsServer::start(address, plan.token.clone(), totals.clone())?),
        None => None,
    };

    let conditions = crate::runner::realtime_conditions(plan.policy, plan.priority, plan.dma_latency, false);
    let mut settings = MonitorSettings {
        rtlab_version: crate::cli::VERSION.to_string(),
        command_line: std::env::args().collect(),
        probe: "timer".into(),
        interval_ns: plan.interval_ns,
        window_ns: plan.window_ns,
        cpus: plan.cpus.clone(),
        policy: conditions.status.policy,
        priority: conditions.status.priority,
        histogram_max_ns: plan.histogram_max_ns,
        schedule: plan.schedule_text.clone(),
        real_time: conditions.status.real_time_results,
        notes: conditions.status.notes.clone(),
    };
    let probe: Box<dyn Probe> = match timerlat {
        Some(probe) => {
            // The kernel's threads measure: their policy is the session's, whatever rtlab's
            // own threads could get.
            let priority = plan.timerlat_priority.unwrap_or(TIMERLAT_KERNEL_PRIORITY);
            settings.probe = "timerlat".into();
            settings.policy = rtlab_results::host::Policy::Fifo;
            settings.priority = priority;
            settings.real_time = true;
            settings.notes.push(format!(
                "the kernel's timerlat threads measured, at SCHED_FIFO {priority}{}.",
                if plan.timerlat_priority.is_some() { " (set by rtlab)" } else { " (the kernel's default)" }
            ));
            Box::new(probe)
        }
        None => Box::new(
            TimerProbe::new(TimerConfig {
                cpus: plan.cpus.clone(),
                interval_ns: plan.interval_ns,
                warmup: 0,
                end: EndCondition::Never,
                histogram_max_ns: plan.histogram_max_ns,
                raw_dir: None,
                raw_ring_capacity: rtlab_probe::raw::DEFAULT_RING_CAPACITY,
                clock: ClockKind::Monotonic,
                setup: conditions.setup,
                name: "timer",
                split_tap: tap.take(),
            })
            .map_err(|e| environment(format!("cannot prepare the timer probe: {e}")))?,
        ),
    };
    let (unix_at_start, mono_at_start) = clocks_now();
    let session = db.begin_session(&host, &settings, unix_at_start).map_err(|e| environment(format!("--db: {e}")))?;
    print_start(&plan, &db, &session, server.as_ref().map(|s| s.address));
    for note in &conditions.status.notes {
        eprintln!("rtlab: note: {note}");
    }

    let mut aggregator = WindowAggregator::new(
        plan.source,
        &plan.cpus,
        plan.interval_ns,
        plan.window_ns,
        plan.histogram_max_ns,
        mono_at_start,
        unix_at_start - mono_at_start as i64,
    );
    if let Some(duration) = plan.duration_ns {
        aggregator = aggregator.ending_at(mono_at_start + duration);
    }
    let probe_stop = stop.clone();
    let probe_thread = std::thread::Builder::new()
        .name("rtlab-monitor-probe".into())
        .spawn(move || probe.run(probe_stop))
        .context("cannot start the measuring threads")?;

    let mut state = Monitoring {
        plan: &plan,
        db,
        session_id: session.id,
        totals,
        activity: BTreeMap::new(),
        running_phase: None,
        load: None,
        retention: Retention::keeping(plan.keep_ns).windows_for(plan.keep_windows_ns),
        next_thin_mono: mono_at_start,
        unstored: std::collections::VecDeque::new(),
        dropped: 0,
        storing_fails: None,
    };
    let phase_of = |i: u64| plan.phase_of(i).name.clone();
    let outcome = state.watch(&mut aggregator, &tapped, &stop, mono_at_start, &phase_of);

    // Stop: the probe's threads end, the tap closes, what is left becomes the last window.
    stop.store(true, Ordering::SeqCst);
    let probe_result = probe_thread.join();
    while let Ok(chunk) = tapped.recv() {
        aggregator.add(&chunk);
    }
    let (_, mono_at_stop) = clocks_now();
    state.take_activity(aggregator.index_at(mono_at_stop) + 1);
    let mut outcome = outcome;
    if outcome.is_ok() {
        for window in aggregator.close_all(mono_at_stop, &phase_of) {
            state.commit(window);
        }
        // Whatever the history still could not take is lost with the process: say so.
        if let Some(why) = &state.storing_fails {
            outcome = Err(environment(format!(
                "--db: {} closed windows could not be stored ({why}){}; the windows before them are saved",
                state.unstored.len(),
                if state.dropped > 0 { format!(", and {} were dropped before", state.dropped) } else { String::new() }
            )));
        } else if state.dropped > 0 {
            outcome = Err(environment(format!(
                "--db: {} windows were dropped while the history could not store them (more than {MAX_UNSTORED_WINDOWS} waited); every other window is saved",
                state.dropped
            )));
        }
    }
    state.stop_load();
    drop(conditions.guards);
    drop(server);
    let reason = match &outcome {
        Err(_) => "error",
        Ok(Ending::Duration) => "duration",
        Ok(Ending::Signal) => "signal",
        Ok(Ending::ProbeEnded) => "error",
    };
    let (unix_at_stop, _) = clocks_now();
    let ended = state.db.end_session(session.id, unix_at_stop, reason);
    let ending = outcome?;
    ended.map_err(|e| environment(format!("--db: {e}")))?;
    match probe_result {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(environment(format!("the measuring threads failed: {e}"))),
        Err(_) => return Err(environment("a measuring thread panicked")),
    }
    if aggregator.late() > 0 {
        eprintln!(
            "rtlab: note: {} samples reached their window after it had closed (a measuring thread stalled for more than 2 s); they are counted in the oldest window still open",
            aggregator.late()
        );
    }
    say(&format!(
        "rtlab monitor: stopped ({}) after {} windows; history in {}",
        match ending {
            Ending::Signal => "signal",
            Ending::Duration => "--duration",
            Ending::ProbeEnded => "the measuring threads ended",
        },
        state.totals.lock().unwrap_or_else(|p| p.into_inner()).windows,
        plan.db.display()
    ));
    Ok(crate::errors::EXIT_OK)
}

/// The kernel's own SCHED_FIFO priority for its timerlat threads (kernel/trace/trace_osnoise.c).
const TIMERLAT_KERNEL_PRIORITY: i32 = 95;

/// A probe that cannot start: a kernel without what it needs is an environment error
/// (exit 3), a setting it refuses a usage error (exit 2).
fn probe_error(e: ProbeError, probe: &str) -> anyhow::Error {
    match e {
        ProbeError::Config(why) => usage(format!("--probe {probe}: {why}")),
        e @ ProbeError::Unavailable { .. } => environment(format!("{e}; the history was not touched")),
        other => environment(format!("probe {probe}: {other}; the history was not touched")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Signal,
    Duration,
    /// The measuring threads ended without being asked (they failed).
    ProbeEnded,
}

/// An exclusive advisory lock on the history file, held while the monitor runs.
fn lock_history(path: &std::path::Path) -> anyhow::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| usage(format!("--db {}: cannot create {}: {e}", path.display(), dir.display())))?;
    }
    // An empty new file is what SQLite starts a database in.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| usage(format!("--db {}: cannot open it: {e}", path.display())))?;
    match rtlab_sys::filelock::try_lock_exclusive(&file) {
        Ok(true) => Ok(file),
        Ok(false) => Err(usage(format!(
            "--db {}: another rtlab monitor is writing this history; stop it or give another --db",
            path.display()
        ))),
        Err(e) => Err(environment(format!("--db {}: cannot lock it: {e}", path.display()))),
    }
}

/// Unix time and CLOCK_MONOTONIC read back to back: the offset that turns expiries into
/// the history's unix times for this session.
fn clocks_now() -> (i64, u64) {
    let mono = rtlab_sys::clock::monotonic_ns();
    let unix =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0);
    (unix, mono)
}

struct Monitoring<'a> {
    plan: &'a MonitorPlan,
    db: HistoryDb,
    session_id: i64,
    totals: Arc<Mutex<MonitorTotals>>,
    /// Activity snapshots taken as each window began, by window index.
    activity: BTreeMap<u64, ActivitySnapshot>,
    /// The phase whose loads run (None before the first window).
    running_phase: Option<String>,
    load: Option<(String, LoadHost)>,
    retention: Retention,
    next_thin_mono: u64,
    /// Closed windows the history could not store yet, oldest first (served all the same).
    unstored: std::collections::VecDeque<rtlab_results::history::WindowRecord>,
    /// Windows that left `unstored` unstored when it was full.
    dropped: u64,
    /// Why storing fails, while it does.
    storing_fails: Option<String>,
}

impl Monitoring<'_> {
    /// The loop of the non-real-time side, until a stop request or --duration.
    fn watch(
        &mut self,
        aggregator: &mut WindowAggregator,
        tapped: &std::sync::mpsc::Receiver<rtlab_probe::raw::TappedSamples>,
        stop: &std::sync::atomic::AtomicBool,
        mono_at_start: u64,
        phase_of: &dyn Fn(u64) -> String,
    ) -> anyhow::Result<Ending> {
        let plan = self.plan;
        loop {
            match tapped.recv_timeout(Duration::from_millis(50)) {
                Ok(chunk) => aggregator.add(&chunk),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                // The probe ended by itself: its threads failed; the caller reports it.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(Ending::ProbeEnded),
            }
            while let Ok(chunk) = tapped.try_recv() {
                aggregator.add(&chunk);
            }
            let (_, now) = clocks_now();
            let current = aggregator.index_at(now);
            self.take_activity(current);
            self.follow_schedule(current);
            for window in aggregator.close_ready(now, phase_of) {
                self.commit(window);
            }
            if now >= self.next_thin_mono {
                let (unix, _) = clocks_now();
                // Thinning only saves space: a history that cannot take it now gets it next time.
                if let Err(e) = self.db.thin(unix, &self.retention) {
                    eprintln!("rtlab: warning: --db: thinning the history failed ({e}); tried again in an hour");
                }
                self.next_thin_mono = now + THIN_EVERY_NS;
            }
            if stop.load(Ordering::SeqCst) {
                return Ok(Ending::Signal);
            }
            if plan.duration_ns.is_some_and(|d| now >= mono_at_start + d) {
                return Ok(Ending::Duration);
            }
        }
    }

    /// A snapshot of /proc counters as window `index` begins (once per window).
    fn take_activity(&mut self, index: u64) {
        if let std::collections::btree_map::Entry::Vacant(entry) = self.activity.entry(index) {
            if let Ok(snapshot) = ActivitySnapshot::take() {
                entry.insert(snapshot);
            }
        }
    }

    /// Runs the loads of the phase that window `current` belongs to: at a phase change, the
    /// old phase's loads stop and the new one's start.
    fn follow_schedule(&mut self, current: u64) {
        let wanted = &self.plan.phase_of(current).name;
        if self.running_phase.as_ref() == Some(wanted) {
            return;
        }
        self.stop_load();
        self.running_phase = Some(wanted.clone());
        if wanted == "idle" {
            return;
        }
        let started = std::env::current_exe().map_err(|e| e.to_string()).and_then(|exe| {
            LoadHost::start(&exe, wanted, self.plan.load_cpus.as_deref(), None).map_err(|e| e.to_string())
        });
        match started {
            Ok(host) => self.load = Some((wanted.clone(), host)),
            Err(why) => {
                eprintln!("rtlab: warning: the loads of phase {wanted:?} could not start: {why}; measuring unloaded")
            }
        }
    }

    fn stop_load(&mut self) {
        if let Some((name, host)) = self.load.take() {
            if let Err(e) = host.stop() {
                eprintln!("rtlab: warning: the loads of phase {name:?} did not stop cleanly: {e}");
            }
        }
    }

    /// Shows a closed window to Prometheus and on stdout, and stores it (one transaction).
    /// A history that cannot take it (a full disk) does not stop the monitor: the window
    /// waits in memory with the others, in order, and they are stored when it can.
    fn commit(&mut self, mut window: ClosedWindow) {
        if let (Some(a), Some(b)) = (self.activity.get(&window.index), self.activity.get(&(window.index + 1))) {
            window.record.activity = Some(activity_between(a, b));
        }
        self.activity.retain(|&i, _| i > window.index);
        if !self.plan.quiet {
            say(&window_line(&window, self.plan.source));
        }
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        totals.add_window(&window.record, &window.buckets);
        drop(totals);
        self.unstored.push_back(window.record);
        if self.unstored.len() > MAX_UNSTORED_WINDOWS {
            self.unstored.pop_front();
            self.dropped += 1;
        }
        self.store_unstored();
    }

    /// Stores the windows waiting, oldest first, until one fails.
    fn store_unstored(&mut self) {
        while let Some(record) = self.unstored.front() {
            match self.db.append_window(self.session_id, record) {
                Ok(_) => {
                    self.unstored.pop_front();
                }
                Err(e) => {
                    if self.storing_fails.is_none() {
                        eprintln!(
                            "rtlab: warning: --db: cannot store a window ({e}); measuring and serving go on, and the windows wait in memory (up to {MAX_UNSTORED_WINDOWS}) until the history can take them"
                        );
                    }
                    self.storing_fails = Some(e.to_string());
                    break;
                }
            }
        }
        if self.unstored.is_empty() && self.storing_fails.take().is_some() {
            let dropped = match self.dropped {
                0 => String::new(),
                n => format!(" but {n} dropped while the backlog was full"),
            };
            eprintln!("rtlab: note: --db: storing again; every window held back is stored{dropped}");
        }
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        totals.windows_unstored = self.unstored.len() as u64;
        totals.windows_dropped = self.dropped;
    }
}

/// A line on stdout; a reader that went away (`rtlab monitor | head`) does not stop the
/// monitor: the history is what it writes.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}

fn print_start(
    plan: &MonitorPlan,
    db: &HistoryDb,
    session: &rtlab_results::history::Session,
    listening: Option<std::net::SocketAddr>,
) {
    let mut line = format!(
        "rtlab monitor: {}{} µs period on CPUs {}, a window every {}; history {} (session {})",
        if plan.source == WindowSource::Timerlat { "the kernel's timerlat tracer, " } else { "" },
        plan.interval_ns as f64 / 1000.0,
        plan.cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","),
        rtlab_analysis::units::format_period(plan.window_ns as i64),
        db.path().display(),
        session.id
    );
    if let Some(gap) = session.gap_before_ns {
        line.push_str(&format!("; {} since the last window", rtlab_analysis::units::format_period(gap)));
    }
    if let Some(previous) = &session.previous_kernel {
        line.push_str(&format!("; kernel changed from {previous} to {}", session.identity.kernel_release));
    }
    if let Some(address) = listening {
        line.push_str(&format!("; metrics on http://{address}/metrics"));
    }
    say(&line);
}

/// "22:41:00  idle    max µs cpu0 45.2 cpu1 38.0  samples 120000  overruns 0  lost 0", of
/// the source's main metric (named when it is not the timer probe's).
fn window_line(window: &ClosedWindow, source: WindowSource) -> String {
    let r = &window.record;
    let time =
        chrono::DateTime::from_timestamp_nanos(r.end_ns).with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S");
    let main = source.main_metric();
    let latency: Vec<_> = r.metrics.iter().filter(|m| m.metric == main).collect();
    let maxima = latency
        .iter()
        .map(|m| match m.moments.count {
            0 => format!("cpu{} -", m.cpu),
            _ => format!("cpu{} {:.1}", m.cpu, m.moments.max as f64 / 1000.0),
        })
        .collect::<Vec<_>>()
        .join("  ");
    let samples: u64 = latency.iter().map(|m| m.moments.count).sum();
    let overruns: u64 = latency.iter().map(|m| m.overruns).sum();
    let lost: u64 = latency.iter().map(|m| m.lost).sum();
    let named = if source == WindowSource::Timer { String::new() } else { format!("{main} ") };
    format!("{time}  {:<8} {named}max µs: {maxima}   samples {samples}  overruns {overruns}  lost {lost}", r.phase)
}
