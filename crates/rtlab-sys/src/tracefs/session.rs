//! The tracing session itself: creating and configuring the tracefs instance, the reader
//! thread that drains `trace_pipe_raw` (into spool files, into a consumer, or both) and
//! samples steal time, and the teardown that leaves tracefs as it was.
//!
//! Reads of `trace_pipe_raw` are non-blocking (O_NONBLOCK): a blocking read of an empty
//! buffer is not woken by `tracing_on`=0 (tried on 6.18: still blocked after 17 s), so the
//! reader could hang at stop. Each non-blocking read returns one whole page, a partially
//! filled page included (its commit word says how much is data), and EAGAIN when the CPU's
//! buffer is empty (tried: pages with commit 4080, 816, 272, then EAGAIN; after
//! `tracing_on`=0 the last partial page, then EAGAIN). The reader polls every 10 ms, and
//! after `tracing_on`=0 drains every CPU until EAGAIN, so the last partial pages are
//! spooled too.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::event::Vector;
use super::format::{EventFormat, EventFormats, EventId};
use super::ring::PageLayout;
use super::{
    remove_stale_instances, tracefs_root, RingStats, SharedConsumer, StealSample, TraceCapture, TraceConfig,
    TraceError, NOT_MOUNTED,
};

/// Events without which the split cannot be made.
const REQUIRED: [EventId; 4] =
    [EventId::HrtimerStart, EventId::HrtimerExpireEntry, EventId::SchedSwitch, EventId::SchedWaking];

/// How often the reader polls the buffers when they were empty, for the split: its
/// streaming analysis and `--explain-above` want events soon after they happen.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// The same for the timerlat tracer, whose records are only counted: every wake-up of the
/// reader swaps a page out of the ring with interrupts off on the CPU being measured, which
/// is what timerlat measures (rtla reads once a second). 100 ms keeps the live figures live
/// and the 4 MiB per-CPU buffers far from full (at a 100 µs period, 640 KiB/s).
const TIMERLAT_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// How often the reader samples /proc/stat steal time.
const STEAL_INTERVAL: Duration = Duration::from_millis(100);
/// An event is stamped when its slot is reserved and readable once committed, a few
/// hundred ns later with preemption off: a CPU whose buffer was empty at instant r has
/// handed over every event stamped this much before r (and, pages coming out in time
/// order, every event this much before the last one read).
const COMMIT_MARGIN_NS: u64 = 1_000_000;

/// Sessions started by this process, for unique instance names.
static SESSIONS: AtomicU32 = AtomicU32::new(0);

fn io(op: impl Into<String>) -> impl FnOnce(std::io::Error) -> TraceError {
    let op = op.into();
    move |source| TraceError::Io { op, source }
}

fn write_file(path: &Path, value: &str) -> Result<(), TraceError> {
    std::fs::write(path, value).map_err(io(format!("writing {value:?} to {}", path.display())))
}

/// The tracefs root if the tracefs backend can be used: mounted, writable, required events
/// present.
pub(super) fn check_support() -> Result<PathBuf, TraceError> {
    let root = tracefs_root().ok_or_else(|| TraceError::Unsupported(NOT_MOUNTED.into()))?;
    let privileges = crate::privileges::current();
    if privileges.euid != 0 {
        return Err(TraceError::Unsupported(format!(
            "permission denied creating a tracefs instance under {}: run as root",
            root.join("instances").display()
        )));
    }
    let missing: Vec<String> = REQUIRED
        .iter()
        .map(|e| e.tracepoint())
        .filter(|tp| !root.join("events").join(tp).join("format").exists())
        .collect();
    if !missing.is_empty() {
        return Err(TraceError::Unsupported(format!(
            "this kernel lacks the tracepoint(s) {} under {}/events",
            missing.join(", ").replace('/', ":"),
            root.display()
        )));
    }
    Ok(root)
}

/// The address of `hrtimer_wakeup` (the callback of a sleeping task's timer) from
/// /proc/kallsyms; None when unreadable or hidden (kptr_restrict shows zeros).
pub(super) fn hrtimer_wakeup_address() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    text.lines().find_map(|line| {
        let mut f = line.split_whitespace();
        let (addr, _kind, name) = (f.next()?, f.next()?, f.next()?);
        if name != "hrtimer_wakeup" || f.next().is_some() {
            return None;
        }
        u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0)
    })
}

/// `tracing_cpumask` text for a CPU set: hex, comma-separated 32-bit groups.
pub(super) fn cpumask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |&m| m / 32 + 1);
    let mut mask = vec![0u32; words];
    for &cpu in cpus {
        if let Some(w) = mask.get_mut(cpu / 32) {
            *w |= 1 << (cpu % 32);
        }
    }
    let mut groups: Vec<String> = mask.iter().rev().map(|w| format!("{w:08x}")).collect();
    if let Some(first) = groups.first_mut() {
        let trimmed = first.trim_start_matches('0');
        *first = if trimmed.is_empty() { "0".into() } else { trimmed.into() };
    }
    groups.join(",")
}

/// rmdir of an instance, retried briefly while the kernel says it is busy (a reader's file
/// not yet released).
pub(super) fn remove_instance_dir(dir: &Path) -> Result<(), TraceError> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(io(format!("removing tracefs instance {}", dir.display()))(e)),
        }
    }
}

/// Ticks per second of /proc/stat's counters.
fn user_hz() -> u64 {
    // SAFETY: sysconf only reads a system constant; it has no memory arguments.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&h| h > 0).unwrap_or(100)
}

/// What the reader thread produced.
#[derive(Debug, Default)]
struct ReaderOutput {
    bytes: u64,
    /// Events the pages say were dropped, and pages that said so without a count.
    events_lost: u64,
    pages_with_uncounted_loss: u64,
    steal: Vec<StealSample>,
    ring_stats: Vec<RingStats>,
}

struct CpuReader {
    cpu: u32,
    pipe: File,
    spool: Option<File>,
    /// Bytes read (whole pages unless the kernel misbehaves: checked per read).
    bytes: u64,
    /// What the consumer was last told is complete (never goes back).
    complete_before_ns: u64,
}

/// What the reader hands the pages to besides the spool.
struct Decoding {
    consumer: SharedConsumer,
    formats: EventFormats,
}

impl CpuReader {
    /// One page read: spooled, its losses counted, decoded into the consumer.
    fn take_page(
        &mut self,
        page: &[u8],
        layout: PageLayout,
        decoding: Option<&Decoding>,
        out: &mut ReaderOutput,
    ) -> Result<(), TraceError> {
        if page.len() != layout.page_size {
            return Err(TraceError::Format(format!(
                "cpu{}: trace_pipe_raw gave {} bytes, not a whole {}-byte page",
                self.cpu,
                page.len(),
                layout.page_size
            )));
        }
        if let Some(spool) = self.spool.as_mut() {
            spool.write_all(page).map_err(io(format!("writing spool of cpu{}", self.cpu)))?;
        }
        let (lost, uncounted) = super::ring::count_lost(page, layout)?;
        out.events_lost += lost;
        out.pages_with_uncounted_loss += uncounted;
        self.bytes += page.len() as u64;
        let Some(d) = decoding else { return Ok(()) };
        let decoded = super::ring::decode_pages(page, layout, self.cpu, &d.formats)?;
        // A CPU's pages come out in time order: while a backlog is drained, what came before
        // the last event is complete, so the consumer can work through it instead of
        // holding the backlog.
        let last_ns = decoded.events.last().map(|e| e.ts_ns);
        let mut consumer = super::lock_consumer(&d.consumer);
        consumer.events(self.cpu, decoded.events);
        if let Some(last_ns) = last_ns {
            self.report_complete(&mut *consumer, last_ns.saturating_sub(COMMIT_MARGIN_NS));
        }
        Ok(())
    }

    /// Tells the consumer that this CPU's events before `ns` are complete (never going back).
    fn report_complete(&mut self, consumer: &mut dyn super::TraceConsumer, ns: u64) {
        self.complete_before_ns = self.complete_before_ns.max(ns);
        consumer.complete_before(self.cpu, self.complete_before_ns);
    }
}

fn reader_loop(
    mut readers: Vec<CpuReader>,
    layout: PageLayout,
    decoding: Option<Decoding>,
    tracing: Tracing,
    stop: Arc<AtomicBool>,
) -> Result<ReaderOutput, TraceError> {
    // Steal time attributes the split's samples; timerlat's records do not use it.
    let (poll_interval, sample_steal_time) = match tracing {
        Tracing::SplitEvents => (POLL_INTERVAL, true),
        Tracing::Timerlat => (TIMERLAT_POLL_INTERVAL, false),
    };
    let page_size = layout.page_size;
    let mut out = ReaderOutput::default();
    let mut page = vec![0u8; page_size];
    let hz = user_hz();
    let cpus: Vec<usize> = readers.iter().map(|r| r.cpu as usize).collect();
    let mut next_steal = Instant::now();
    let mut steal = Vec::new();
    loop {
        // Read the flag before draining: once it is set, tracing is off, and the drain that
        // follows empties the buffers completely.
        let stopping = stop.load(Ordering::Acquire);
        let mut read_any = false;
        for r in &mut readers {
            let empty_from_ns = crate::clock::monotonic_ns();
            loop {
                match r.pipe.read(&mut page) {
                    Ok(0) => break,
                    Ok(n) => {
                        r.take_page(page.get(..n).unwrap_or_default(), layout, decoding.as_ref(), &mut out)?;
                        read_any = true;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(io(format!("reading trace_pipe_raw of cpu{}", r.cpu))(e)),
                }
            }
            if let Some(d) = &decoding {
                // After the last drain nothing more can come.
                let complete = if stopping { u64::MAX } else { empty_from_ns.saturating_sub(COMMIT_MARGIN_NS) };
                r.report_complete(&mut *super::lock_consumer(&d.consumer), complete);
            }
        }
        if sample_steal_time && (Instant::now() >= next_steal || stopping) {
            steal.clear();
            sample_steal(&cpus, hz, &mut steal);
            match &decoding {
                Some(d) => super::lock_consumer(&d.consumer).steal(&steal),
                None => out.steal.extend_from_slice(&steal),
            }
            next_steal = Instant::now() + STEAL_INTERVAL;
        }
        if stopping {
            break;
        }
        // Each pass drains every buffer. The split reads again at once after a pass that found
        // events (its streaming analysis keeps up with bursts); the timerlat reader always
        // waits its interval: a pass at once would mostly find the next record or two, and
        // every pass costs the measured CPUs a page swap.
        if !read_any || tracing == Tracing::Timerlat {
            std::thread::sleep(poll_interval);
        }
    }
    for r in &mut readers {
        if let Some(spool) = r.spool.as_mut() {
            spool.flush().map_err(io(format!("writing spool of cpu{}", r.cpu)))?;
        }
        out.bytes += r.bytes;
    }
    Ok(out)
}

fn sample_steal(cpus: &[usize], hz: u64, steal: &mut Vec<StealSample>) {
    let Ok(text) = std::fs::read_to_string("/proc/stat") else { return };
    let ts_ns = crate::clock::monotonic_ns();
    let Ok((_, times)) = crate::activity::parse_proc_stat(&text) else { return };
    for t in times.iter().filter(|t| cpus.contains(&t.cpu)) {
        let Ok(cpu) = u32::try_from(t.cpu) else { continue };
        let steal_ns = u64::try_from(u128::from(t.steal) * 1_000_000_000 / u128::from(hz)).unwrap_or(u64::MAX);
        steal.push(StealSample { ts_ns, cpu, steal_ns });
    }
}

/// What a session records into its instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tracing {
    /// The split's tracepoints, with their filters.
    SplitEvents,
    /// The timerlat tracer as the instance's tracer (its global `osnoise/*` settings are
    /// written, and restored, by [`super::timerlat`]).
    Timerlat,
}

/// The session's state; [`super::TraceSession`] and `timerlat::TimerlatSession` are
/// its public faces.
pub(super) struct Session {
    tracing: Tracing,
    name: String,
    dir: PathBuf,
    config: TraceConfig,
    layout: PageLayout,
    formats: EventFormats,
    description: String,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<Result<ReaderOutput, TraceError>>>,
    consumer: Option<SharedConsumer>,
    spool_files: Vec<PathBuf>,
    /// Set once the instance is torn down (stop or drop).
    finished: bool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("name", &self.name)
            .field("streaming", &self.consumer.is_some())
            .field("spool_files", &self.spool_files)
            .finish_non_exhaustive()
    }
}

/// The one-line reason of a kernel without the tracer: which kernels have it.
pub const NO_TIMERLAT: &str = "this kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER, Linux 5.14 and later: \
     Debian's PREEMPT_RT kernel linux-image-rt-amd64 has it, its stock kernel does not)";

/// The tracefs root if the timerlat tracer can be used: mounted, root, tracer and its event
/// present. [`TraceError::Unsupported`] says what is missing.
pub fn check_timerlat_support() -> Result<PathBuf, TraceError> {
    let root = tracefs_root().ok_or_else(|| TraceError::Unsupported(NOT_MOUNTED.into()))?;
    let tracers = std::fs::read_to_string(root.join("available_tracers")).unwrap_or_default();
    if !tracers.split_whitespace().any(|t| t == "timerlat") {
        return Err(TraceError::Unsupported(NO_TIMERLAT.into()));
    }
    if crate::privileges::current().euid != 0 {
        return Err(TraceError::Unsupported(format!(
            "the timerlat tracer needs root (its settings under {} are global)",
            root.join("osnoise").display()
        )));
    }
    for needed in ["osnoise/timerlat_period_us", "osnoise/cpus", "events/ftrace/timerlat/format"] {
        if !root.join(needed).exists() {
            return Err(TraceError::Unsupported(format!(
                "the timerlat tracer is present but {} is missing",
                root.join(needed).display()
            )));
        }
    }
    Ok(root)
}

impl Session {
    pub(super) fn start(
        config: TraceConfig,
        consumer: Option<SharedConsumer>,
        tracing: Tracing,
    ) -> Result<Self, TraceError> {
        let root = match tracing {
            Tracing::SplitEvents => check_support()?,
            Tracing::Timerlat => check_timerlat_support()?,
        };
        if config.cpus.is_empty() {
            return Err(TraceError::Unsupported("no CPU to trace".into()));
        }
        for &cpu in &config.cpus {
            if !root.join("per_cpu").join(format!("cpu{cpu}")).is_dir() {
                return Err(TraceError::Unsupported(format!("CPU {cpu} has no tracing buffer")));
            }
        }
        let header_page = super::read_tracefs_file(&root.join("events/header_page"))?;
        let layout = PageLayout::parse(&header_page)?;
        remove_stale_instances();

        let (name, dir) = create_instance(&root)?;
        // From here on, Drop removes the instance whatever fails.
        let mut session = Session {
            tracing,
            name,
            dir,
            config,
            layout,
            formats: EventFormats::default(),
            description: String::new(),
            stop: Arc::new(AtomicBool::new(false)),
            reader: None,
            consumer,
            spool_files: Vec::new(),
            finished: false,
        };
        session.configure()?;
        Ok(session)
    }

    fn configure(&mut self) -> Result<(), TraceError> {
        let dir = self.dir.clone();
        write_file(&dir.join("tracing_on"), "0")?;
        write_file(&dir.join("trace_clock"), "mono").map_err(|_| {
            TraceError::Unsupported(
                "the trace clock mono is not available (timestamps would not be CLOCK_MONOTONIC)".into(),
            )
        })?;
        write_file(&dir.join("buffer_size_kb"), &self.config.buffer_kb_per_cpu.to_string())?;
        let mask = cpumask(&self.config.cpus);
        write_file(&dir.join("tracing_cpumask"), &mask)?;

        let (enabled, notes) = match self.tracing {
            Tracing::SplitEvents => self.enable_split_events(&dir)?,
            Tracing::Timerlat => self.enable_timerlat(&dir)?,
        };

        if let Some(spool_dir) = &self.config.spool_dir {
            std::fs::create_dir_all(spool_dir)
                .map_err(io(format!("creating spool directory {}", spool_dir.display())))?;
        }
        let mut readers = Vec::new();
        for &cpu in &self.config.cpus {
            let pipe_path = dir.join("per_cpu").join(format!("cpu{cpu}")).join("trace_pipe_raw");
            let pipe = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&pipe_path)
                .map_err(io(format!("opening {}", pipe_path.display())))?;
            let spool = match &self.config.spool_dir {
                Some(spool_dir) => {
                    let spool_path = spool_dir.join(format!("cpu{cpu}.pages"));
                    let spool =
                        File::create(&spool_path).map_err(io(format!("creating spool {}", spool_path.display())))?;
                    self.spool_files.push(spool_path);
                    Some(spool)
                }
                None => None,
            };
            let cpu = u32::try_from(cpu).map_err(|_| TraceError::Unsupported(format!("CPU number {cpu}")))?;
            readers.push(CpuReader { cpu, pipe, spool, bytes: 0, complete_before_ns: 0 });
        }

        let destination = match (&self.config.spool_dir, &self.consumer) {
            (Some(spool), Some(_)) => format!("decoded as they are read and spooled to {}", spool.display()),
            (Some(spool), None) => format!("spooled to {}", spool.display()),
            (None, _) => "decoded as they are read, pages not kept".to_string(),
        };
        self.description = format!(
            "tracefs instance {} (trace clock mono, {} KiB buffer per CPU, cpumask {mask}, {}-byte pages, non-blocking trace_pipe_raw reads {}{destination}); {}: {}{}",
            self.name,
            self.config.buffer_kb_per_cpu,
            self.layout.page_size,
            if self.tracing == Tracing::Timerlat {
                format!("every {} ms, ", TIMERLAT_POLL_INTERVAL.as_millis())
            } else {
                String::new()
            },
            if self.tracing == Tracing::Timerlat { "tracer timerlat, event" } else { "events" },
            enabled.join(", "),
            if notes.is_empty() { String::new() } else { format!("; notes: {}", notes.join("; ")) }
        );

        let stop = Arc::clone(&self.stop);
        let layout = self.layout;
        let decoding = self.consumer.clone().map(|consumer| Decoding { consumer, formats: self.formats.clone() });
        let tracing = self.tracing;
        let reader = std::thread::Builder::new()
            .name("rtlab-trace".into())
            .spawn(move || reader_loop(readers, layout, decoding, tracing, stop))
            .map_err(io("starting the trace reader thread"))?;
        self.reader = Some(reader);
        write_file(&dir.join("tracing_on"), "1")?;
        Ok(())
    }

    /// Enables the split's events (filtered where a filter applies). Returns the enabled
    /// events as described and the notes.
    fn enable_split_events(&mut self, dir: &Path) -> Result<(Vec<String>, Vec<String>), TraceError> {
        let mut notes = Vec::new();
        let mut enabled = Vec::new();
        let wakeup = hrtimer_wakeup_address();
        if wakeup.is_none() {
            notes.push(
                "hrtimer_wakeup's address is not readable in /proc/kallsyms: hrtimer events are not filtered"
                    .to_string(),
            );
        }
        let mut missing = Vec::new();
        for event in EventId::all() {
            let tp = event.tracepoint();
            let event_dir = dir.join("events").join(&tp);
            let Ok(text) = super::read_tracefs_file(&event_dir.join("format")) else {
                match event {
                    e if REQUIRED.contains(&e) => missing.push(tp.replace('/', ":")),
                    // x86 has the local timer vector tracepoints; other architectures have
                    // none, and the interrupt's start is hrtimer_expire_entry there.
                    EventId::VectorEntry(Vector::LocalTimer) | EventId::VectorExit(Vector::LocalTimer)
                        if cfg!(target_arch = "x86_64") || cfg!(target_arch = "x86") =>
                    {
                        missing.push(tp.replace('/', ":"))
                    }
                    EventId::VectorEntry(Vector::LocalTimer) => notes.push(
                        "this architecture has no irq_vectors:local_timer tracepoints: the timer interrupt's start is taken from hrtimer_expire_entry"
                            .into(),
                    ),
                    _ => {}
                }
                continue;
            };
            self.formats.insert(EventFormat::parse(event, &text)?);
            let filter = match (event, wakeup) {
                (EventId::HrtimerStart | EventId::HrtimerExpireEntry, Some(addr)) => {
                    Some(format!("function == 0x{addr:x}"))
                }
                _ => None,
            };
            if let Some(filter) = &filter {
                write_file(&event_dir.join("filter"), filter)?;
            }
            write_file(&event_dir.join("enable"), "1")?;
            enabled.push(match filter {
                Some(f) => format!("{} [{f}]", tp.replace('/', ":")),
                None => tp.replace('/', ":"),
            });
        }
        if !missing.is_empty() {
            return Err(TraceError::Unsupported(format!("this kernel lacks the tracepoint(s) {}", missing.join(", "))));
        }
        Ok((enabled, notes))
    }

    /// Makes timerlat the instance's tracer (it starts its per-CPU threads when tracing is
    /// switched on) and reads the layout of its `ftrace:timerlat` records.
    fn enable_timerlat(&mut self, dir: &Path) -> Result<(Vec<String>, Vec<String>), TraceError> {
        let event = EventId::Timerlat;
        let text = super::read_tracefs_file(&dir.join("events").join(event.tracepoint()).join("format"))
            .map_err(|e| TraceError::Unsupported(format!("the timerlat tracer's event ftrace:timerlat: {e}")))?;
        self.formats.insert(EventFormat::parse(event, &text)?);
        write_file(&dir.join("current_tracer"), "timerlat").map_err(|e| {
            TraceError::Unsupported(format!("the timerlat tracer cannot be set in a tracefs instance: {e}"))
        })?;
        Ok((vec!["ftrace:timerlat".into()], Vec::new()))
    }

    pub(super) fn instance_name(&self) -> &str {
        &self.name
    }

    pub(super) fn description(&self) -> &str {
        &self.description
    }

    /// Stops tracing, drains and joins the reader, removes the instance. Idempotent.
    fn finish(&mut self) -> Result<ReaderOutput, TraceError> {
        if self.finished {
            return Ok(ReaderOutput::default());
        }
        self.finished = true;
        let off = write_file(&self.dir.join("tracing_on"), "0");
        self.stop.store(true, Ordering::Release);
        let output = match self.reader.take() {
            Some(handle) => {
                handle.join().unwrap_or_else(|_| Err(TraceError::Format("the trace reader thread panicked".into())))
            }
            None => Ok(ReaderOutput::default()),
        };
        let mut output = output;
        if self.tracing == Tracing::Timerlat {
            if let Ok(out) = output.as_mut() {
                out.ring_stats = self.ring_stats();
            }
            // The tracer stops its threads when it is replaced (rmdir would do the same).
            let _ = write_file(&self.dir.join("current_tracer"), "nop");
        }
        // The reader's files are closed now (it returned), so the instance is not busy.
        let removed = remove_instance_dir(&self.dir);
        off?;
        let output = output?;
        removed?;
        Ok(output)
    }

    /// Each traced CPU's ring-buffer counters (`per_cpu/cpuN/stats`).
    fn ring_stats(&self) -> Vec<RingStats> {
        let mut all = Vec::new();
        for &cpu in &self.config.cpus {
            let path = self.dir.join("per_cpu").join(format!("cpu{cpu}")).join("stats");
            if let Ok(text) = super::read_tracefs_file(&path) {
                all.push(RingStats::parse(cpu, &text));
            }
        }
        all
    }

    pub(super) fn stop(&mut self) -> Result<TraceCapture, TraceError> {
        let output = self.finish()?;
        Ok(TraceCapture {
            cpus: self.config.cpus.clone(),
            spool_files: self.spool_files.clone(),
            bytes: output.bytes,
            events_lost: output.events_lost,
            pages_with_uncounted_loss: output.pages_with_uncounted_loss,
            steal: output.steal,
            ring_stats: output.ring_stats,
            description: self.description.clone(),
            formats: self.formats.clone(),
            layout: self.layout,
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Best effort: a session dropped without stop (an error path, a panic) still leaves
        // tracefs as it was.
        let _ = self.finish();
    }
}

/// Creates `instances/rtlab-<pid>` (or `rtlab-<pid>-<n>` for a further session of this
/// process).
fn create_instance(root: &Path) -> Result<(String, PathBuf), TraceError> {
    let pid = std::process::id();
    loop {
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let name = if n == 0 { format!("rtlab-{pid}") } else { format!("rtlab-{pid}-{n}") };
        let dir = root.join("instances").join(&name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok((name, dir)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
                return Err(TraceError::Unsupported(
                    "permission denied creating a tracefs instance: run as root".into(),
                ))
            }
            Err(e) => return Err(io(format!("creating tracefs instance {}", dir.display()))(e)),
        }
    }
}
