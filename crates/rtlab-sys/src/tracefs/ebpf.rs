//! The eBPF split backend: programs on two BTF-typed tracepoints (bpf/split.bpf.c) follow
//! this process's timer threads (`rtlab-timer/<cpu>`) and write one [`SplitRecord`] per
//! wake-up into a BPF ring buffer: the timer's expiry, when its handling started, when the
//! thread was switched in. Nothing else is recorded, so the measured path pays for two
//! small programs, which get the tracepoints' arguments directly, instead of a dozen
//! ftrace events written to the ring buffer.
//!
//! Main types:
//! - [`EbpfSession`]: loads and attaches the programs (the kernel fields they read are
//!   relocated against the kernel's BTF), and a non-real-time reader thread that polls the
//!   ring buffer every 10 ms and hands the records to a [`RecordConsumer`]. Stopping or
//!   dropping it detaches everything: nothing of it stays in the kernel.
//! - [`SplitRecord`]: one wake-up, in CLOCK_MONOTONIC ns.
//! - [`object_problem`]: why this rtlab has no eBPF object (built without clang or
//!   libbpf's headers), if it has none.
//!
//! The backend cuts timer samples only (the `net` probe's split needs every CPU's
//! wake-ups: tracefs), and records no events to explain a spike with (`--explain-above`
//! uses tracefs).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use aya::maps::{Array, PerCpuArray, RingBuf};
use aya::programs::tp_btf::BtfTracePointLinkId;
use aya::programs::BtfTracePoint;
use aya::{Btf, BtfError, Ebpf};

use super::TraceError;

/// The compiled programs (empty when rtlab was built without clang); the ELF parser needs
/// them 8-byte aligned.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/split.bpf.o"));
/// What the build lacked to compile them; empty when it compiled them.
const BUILD_NOTE: &str = env!("RTLAB_EBPF_BUILD");

/// How often the reader polls the ring buffer when it was empty.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// A record is written at the switch-in and readable once submitted, at once: a ring buffer
/// found empty at instant r holds every record of a switch-in this much before r.
const SUBMIT_MARGIN_NS: u64 = 1_000_000;

/// Per tracepoint (category, name), the programs that can serve it, best first: a kernel
/// whose verifier refuses the first gets the next.
const PROGRAMS: [(&str, &str, &[&str]); 2] = [
    ("timer", "hrtimer_expire_entry", &["hrtimer_expire_entry", "hrtimer_expire_entry_clock"]),
    ("sched", "sched_switch", &["sched_switch"]),
];

/// Where the kernel describes its types (BTF): the programs' arguments and the fields
/// they read are found there.
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// One wake-up of a timer thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitRecord {
    pub cpu: u32,
    pub tid: i32,
    /// The timer's programmed expiry (the request plus the thread's timer slack).
    pub expires_ns: u64,
    /// The start of the timer interrupt handling that expiry: the clock read with which
    /// `hrtimer_interrupt` found it expired (the `now` of `hrtimer_expire_entry`: on entry,
    /// or a re-read after long callbacks), as the tracefs cut takes it.
    pub handled_at_ns: u64,
    /// The thread switched in (the handling itself when the thread was running).
    pub switched_in_at_ns: u64,
}

impl SplitRecord {
    /// Size of the C `struct split_record`.
    pub const SIZE: usize = 32;

    /// Decodes a record as the programs write it (native endianness).
    pub fn parse(bytes: &[u8]) -> Option<SplitRecord> {
        let u32_at = |at: usize| bytes.get(at..at + 4).and_then(|b| b.try_into().ok()).map(u32::from_ne_bytes);
        let u64_at = |at: usize| bytes.get(at..at + 8).and_then(|b| b.try_into().ok()).map(u64::from_ne_bytes);
        if bytes.len() < Self::SIZE {
            return None;
        }
        Some(SplitRecord {
            cpu: u32_at(0)?,
            tid: i32::try_from(u32_at(4)?).ok()?,
            expires_ns: u64_at(8)?,
            handled_at_ns: u64_at(16)?,
            switched_in_at_ns: u64_at(24)?,
        })
    }
}

/// Takes the records of a running session, on its reader thread.
pub trait RecordConsumer: Send {
    /// Records read from the ring buffer, in the order they were submitted.
    fn records(&mut self, records: Vec<SplitRecord>);
    /// Every record of a switch-in before `ns` has been handed over; `u64::MAX` once the
    /// programs are detached and the ring buffer drained.
    fn complete_before(&mut self, ns: u64);
}

/// A consumer shared by the reader thread and its owner.
pub type SharedRecordConsumer = Arc<Mutex<dyn RecordConsumer>>;

/// Why this rtlab cannot use the eBPF backend whatever the kernel offers, if it cannot.
pub fn object_problem() -> Option<String> {
    if !BUILD_NOTE.is_empty() {
        return Some(BUILD_NOTE.to_string());
    }
    OBJECT.is_empty().then(|| "rtlab was built without its eBPF object".to_string())
}

/// Whether the backend can run here: the object, root, and the kernel's BTF (which every
/// kernel with BTF-typed tracepoints has; the two are looked up when the session starts).
/// Cheap: it does not parse the BTF, whose few MB would stay in a locked process's heap.
/// Does not need tracefs.
pub fn check_support() -> Result<(), TraceError> {
    if let Some(problem) = object_problem() {
        return Err(TraceError::Unsupported(problem));
    }
    if crate::privileges::current().euid != 0 {
        return Err(TraceError::Unsupported("loading eBPF programs needs root".into()));
    }
    if !Path::new(KERNEL_BTF).exists() {
        return Err(TraceError::Unsupported(format!(
            "this kernel has no BTF ({KERNEL_BTF}; it needs CONFIG_DEBUG_INFO_BTF=y)"
        )));
    }
    Ok(())
}

/// The kernel's BTF, once [`check_support`] passes and every tracepoint is there.
fn kernel_btf() -> Result<Btf, TraceError> {
    check_support()?;
    let btf = Btf::from_sys_fs().map_err(|e| ebpf_error(&format!("reading {KERNEL_BTF}"), e))?;
    for (category, name, _) in PROGRAMS {
        match btf.id_by_type_name_kind(&format!("btf_trace_{name}"), aya_obj::btf::BtfKind::Typedef) {
            Ok(_) => {}
            Err(BtfError::UnknownBtfTypeName { .. }) => {
                return Err(TraceError::Unsupported(format!("this kernel lacks the tracepoint {category}:{name}")));
            }
            Err(e) => return Err(ebpf_error(&format!("looking up {category}:{name} in {KERNEL_BTF}"), e)),
        }
    }
    Ok(btf)
}

fn tracepoint<'a>(bpf: &'a mut Ebpf, program: &str) -> Result<&'a mut BtfTracePoint, TraceError> {
    bpf.program_mut(program)
        .ok_or_else(|| TraceError::Format(format!("eBPF object without program {program}")))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| ebpf_error(program, e))
}

fn ebpf_error(what: &str, e: impl std::fmt::Display) -> TraceError {
    TraceError::Unsupported(format!("eBPF: {what}: {e}"))
}

/// What one program cost, as the kernel counts it while `kernel.bpf_stats_enabled` is 1
/// (`bench/split-overhead` sets it for one run); the capture's description lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ProgramCost {
    program: &'static str,
    runs: u64,
    total_ns: u64,
}

/// What a stopped session recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EbpfCapture {
    /// Records read.
    pub records: u64,
    /// Records the ring buffer had no room for (all CPUs).
    pub dropped: u64,
    /// What the session did, for run.json.
    pub description: String,
}

/// A running eBPF session; see the module documentation.
pub struct EbpfSession {
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<Result<EbpfCapture, TraceError>>>,
}

impl std::fmt::Debug for EbpfSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EbpfSession").finish_non_exhaustive()
    }
}

/// The programs loaded into the kernel (verified), not attached yet.
struct Loaded {
    bpf: Ebpf,
    /// Per tracepoint: the program that serves it, and the tracepoint as "category:name".
    programs: Vec<(&'static str, String)>,
    /// What the kernel refused on the way, if a fallback program was loaded instead.
    fallbacks: Vec<String>,
}

/// Loads (and so verifies) the programs for this process's timer threads.
fn load_programs() -> Result<Loaded, TraceError> {
    let btf = kernel_btf()?;
    let mut bpf =
        aya::EbpfLoader::new().btf(Some(&btf)).load(OBJECT).map_err(|e| ebpf_error("loading the programs", e))?;
    {
        let map = bpf.map_mut("config").ok_or_else(|| TraceError::Format("eBPF object without config".into()))?;
        let mut config: Array<_, u64> = Array::try_from(map).map_err(|e| ebpf_error("config map", e))?;
        config.set(0, u64::from(std::process::id()), 0).map_err(|e| ebpf_error("config map", e))?;
        let wakeup = super::session::hrtimer_wakeup_address().unwrap_or(0);
        config.set(1, wakeup, 0).map_err(|e| ebpf_error("config map", e))?;
    }
    let mut programs = Vec::new();
    let mut fallbacks = Vec::new();
    for (category, name, candidates) in PROGRAMS {
        let mut refused: Vec<String> = Vec::new();
        let mut served = None;
        for &program in candidates {
            match tracepoint(&mut bpf, program)?.load(name, &btf) {
                Ok(()) => {
                    served = Some(program);
                    break;
                }
                Err(e) => refused.push(format!("{program}: {}", first_line(&e.to_string()))),
            }
        }
        let Some(program) = served else {
            return Err(TraceError::Unsupported(format!(
                "this kernel refuses rtlab's eBPF programs on {category}:{name}: {}",
                refused.join("; ")
            )));
        };
        programs.push((program, format!("{category}:{name}")));
        if !refused.is_empty() {
            fallbacks.push(format!("{category}:{name} with {program} ({} refused)", refused.join("; ")));
        }
    }
    Ok(Loaded { bpf, programs, fallbacks })
}

/// The first line of a (verifier) message, at most 200 characters.
fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or_default().chars().take(200).collect()
}

/// Whether this kernel loads the programs (its verifier included), without attaching them:
/// what `--split-backend ebpf`/`auto` check before a run.
pub fn check_loadable() -> Result<(), TraceError> {
    load_programs().map(drop)
}

impl EbpfSession {
    /// Loads the programs for this process's timer threads, attaches them and starts the
    /// reader.
    pub fn start(consumer: SharedRecordConsumer) -> Result<Self, TraceError> {
        let Loaded { mut bpf, programs, fallbacks } = load_programs()?;
        let mut links = Vec::new();
        for (program, tracepoint_name) in &programs {
            let link = tracepoint(&mut bpf, program)?
                .attach()
                .map_err(|e| ebpf_error(&format!("attaching {program} to {tracepoint_name}"), e))?;
            links.push((*program, link));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let reader_stop = stop.clone();
        let reader = std::thread::Builder::new()
            .name("rtlab-ebpf".into())
            .spawn(move || read_records(bpf, links, &fallbacks, consumer, reader_stop))
            .map_err(|source| TraceError::Io { op: "starting the eBPF reader thread".into(), source })?;
        Ok(Self { stop, reader: Some(reader) })
    }

    /// Detaches the programs, drains the ring buffer and stops the reader.
    pub fn stop(mut self) -> Result<EbpfCapture, TraceError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<EbpfCapture, TraceError> {
        self.stop.store(true, Ordering::Release);
        match self.reader.take() {
            Some(handle) => {
                handle.join().unwrap_or_else(|_| Err(TraceError::Format("the eBPF reader thread panicked".into())))
            }
            None => Err(TraceError::Format("the eBPF session was already stopped".into())),
        }
    }
}

impl Drop for EbpfSession {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.finish();
        }
    }
}

/// The reader: polls the ring buffer; at stop, detaches the programs (dropping them)
/// before the last drain, so that nothing is written after it.
fn read_records(
    mut bpf: Ebpf,
    mut links: Vec<(&'static str, BtfTracePointLinkId)>,
    fallbacks: &[String],
    consumer: SharedRecordConsumer,
    stop: Arc<AtomicBool>,
) -> Result<EbpfCapture, TraceError> {
    let map = bpf.take_map("records").ok_or_else(|| TraceError::Format("eBPF object without records".into()))?;
    let mut ring = RingBuf::try_from(map).map_err(|e| ebpf_error("records ring buffer", e))?;
    let mut read = 0u64;
    let mut costs = Vec::new();
    loop {
        let stopping = stop.load(Ordering::Acquire);
        if stopping {
            // Optional figures: a failure to read them costs the figures, not the run.
            let programs: Vec<&'static str> = links.iter().map(|(program, _)| *program).collect();
            costs = program_costs(&mut bpf, &programs).unwrap_or_default();
            for (program, link) in links.drain(..) {
                tracepoint(&mut bpf, program)?
                    .detach(link)
                    .map_err(|e| ebpf_error(&format!("detaching {program}"), e))?;
            }
        }
        let empty_from_ns = crate::clock::monotonic_ns();
        let mut batch = Vec::new();
        while let Some(item) = ring.next() {
            let record = SplitRecord::parse(&item)
                .ok_or_else(|| TraceError::Format(format!("eBPF record of {} bytes", item.len())))?;
            batch.push(record);
        }
        read += batch.len() as u64;
        let any = !batch.is_empty();
        {
            let mut consumer = super::lock_consumer(&consumer);
            if any {
                consumer.records(batch);
            }
            consumer.complete_before(if stopping { u64::MAX } else { empty_from_ns.saturating_sub(SUBMIT_MARGIN_NS) });
        }
        if stopping {
            break;
        }
        if !any {
            std::thread::sleep(POLL_INTERVAL);
        }
    }
    let dropped = match bpf.map("dropped").map(PerCpuArray::<_, u64>::try_from) {
        Some(Ok(array)) => array.get(&0, 0).map(|values| values.iter().sum()).unwrap_or(0),
        _ => 0,
    };
    let cost_note = if costs.is_empty() {
        String::new()
    } else {
        let each: Vec<String> = costs
            .iter()
            .map(|c| format!("{} {} runs, {} ns each", c.program, c.runs, c.total_ns / c.runs.max(1)))
            .collect();
        format!("; kernel.bpf_stats_enabled counted {}", each.join(", "))
    };
    let handling = if fallbacks.is_empty() {
        "the handling's start is hrtimer_interrupt's clock read".to_string()
    } else {
        format!(
            "the handling's start is the clock when the expiry's callback is entered, as this kernel's verifier refused the better program: {}",
            fallbacks.join("; ")
        )
    };
    Ok(EbpfCapture {
        records: read,
        dropped,
        description: format!(
            "eBPF programs on the BTF tracepoints timer:hrtimer_expire_entry and sched:sched_switch following this process's rtlab-timer threads; {handling}; one record per wake-up through a 1 MiB BPF ring buffer polled every 10 ms ({read} records, {dropped} dropped){cost_note}"
        ),
    })
}

/// The programs' costs if the kernel counted any (it does only while
/// `kernel.bpf_stats_enabled` is 1: counting costs two clock reads per run).
fn program_costs(bpf: &mut Ebpf, programs: &[&'static str]) -> Result<Vec<ProgramCost>, TraceError> {
    let mut costs = Vec::new();
    for &program in programs {
        let info = tracepoint(bpf, program)?.info().map_err(|e| ebpf_error(&format!("{program}'s counters"), e))?;
        costs.push(ProgramCost {
            program,
            runs: info.run_count(),
            total_ns: u64::try_from(info.run_time().as_nanos()).unwrap_or(u64::MAX),
        });
    }
    if costs.iter().all(|c| c.runs == 0) {
        costs.clear();
    }
    Ok(costs)
}
