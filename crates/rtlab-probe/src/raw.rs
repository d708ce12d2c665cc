//! Raw samples out of a sampling thread: the ring that carries them and the writer that
//! drains rings into files. The file format and its reader are `rtlab_results::raw`
//! (docs/raw-samples.md), re-exported here.

use crate::ProbeError;
pub use rtlab_results::raw::{
    header, read_all, RawReader, RawSample, FLAG_OVERRUN, FORMAT_VERSION, HEADER_SIZE, MAGIC, RECORD_SIZE,
};
use rtlab_results::ResultsError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Ring capacity per sampling thread: at 20,000 samples/s (50 µs) over three seconds of
/// writer stall before anything is lost.
pub const DEFAULT_RING_CAPACITY: usize = 1 << 16;

/// An I/O error on the raw sample file at `path`.
fn raw_io(path: &Path) -> impl FnOnce(std::io::Error) -> ProbeError + '_ {
    move |source| ResultsError::RawIo { path: path.to_path_buf(), source }.into()
}

/// Producer side, owned by the sampling thread. `push` is wait-free; a full ring counts
/// the sample as lost instead of blocking.
pub struct RawSink {
    producer: rtrb::Producer<RawSample>,
}

impl RawSink {
    /// Returns false when the ring was full and the sample was lost.
    #[inline]
    pub fn push(&mut self, sample: RawSample) -> bool {
        self.producer.push(sample).is_ok()
    }
}

/// Samples of one metric of one thread, as the writer took them from its ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TappedSamples {
    pub cpu: usize,
    pub metric: String,
    pub samples: Vec<RawSample>,
    /// Expiries the probe knows gave no sample of this metric (the timerlat probe's
    /// sequence numbers say so); empty where the consumer finds them from the gaps between
    /// expiries (the timer probe's expiries lie on an exact grid).
    pub unrecorded: Vec<Unrecorded>,
}

/// Expiries without a sample, as the probe accounted for them: `lost` consecutive ones
/// from `expected_ns` on (a record the trace lost), or `overruns` periods skipped after a
/// wake-up that came a whole period late or more, from `expected_ns` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unrecorded {
    pub expected_ns: u64,
    pub lost: u64,
    pub overruns: u64,
}

/// Where the writer also hands a ring's samples, in order, as it drains them: the streaming
/// split (`rtlab run --split`) reads them during the run, so that it needs no raw file.
#[derive(Clone)]
pub struct SampleTap(std::sync::mpsc::Sender<TappedSamples>);

impl SampleTap {
    /// A tap and the receiving end the split reads.
    pub fn new() -> (Self, std::sync::mpsc::Receiver<TappedSamples>) {
        let (sender, receiver) = std::sync::mpsc::channel();
        (Self(sender), receiver)
    }

    /// Hands over samples; a receiver that has gone (its run failed) no longer wants them.
    pub fn deliver(&self, samples: TappedSamples) {
        let _ = self.0.send(samples);
    }
}

impl std::fmt::Debug for SampleTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SampleTap")
    }
}

/// A ring's samples handed to a tap: whose they are.
struct TapTarget {
    tap: SampleTap,
    cpu: usize,
    metric: String,
}

/// The consumer side of a ring and where it drains to (a file, a tap or both), handed to
/// [`RawWriter::spawn`].
pub struct RawDrain {
    consumer: rtrb::Consumer<RawSample>,
    path: Option<PathBuf>,
    tap: Option<TapTarget>,
}

impl RawDrain {
    /// The raw file, if the samples go to one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

/// Allocates a ring of `capacity` samples: the sink for the sampling thread, the drain for
/// the writer (which creates the file when it starts).
pub fn channel(path: PathBuf, capacity: usize) -> (RawSink, RawDrain) {
    ring(Some(path), capacity, None)
}

/// A ring whose samples go to `path` (if any) and to `tap` as samples of `metric` on `cpu`.
pub fn tapped_channel(
    path: Option<PathBuf>,
    capacity: usize,
    tap: SampleTap,
    cpu: usize,
    metric: impl Into<String>,
) -> (RawSink, RawDrain) {
    ring(path, capacity, Some(TapTarget { tap, cpu, metric: metric.into() }))
}

fn ring(path: Option<PathBuf>, capacity: usize, tap: Option<TapTarget>) -> (RawSink, RawDrain) {
    let (producer, consumer) = rtrb::RingBuffer::new(capacity);
    (RawSink { producer }, RawDrain { consumer, path, tap })
}

/// The least free space the writer leaves on the file system of the raw files: run.json
/// and report.html must still fit when the raw samples have filled it. A short run's two
/// files take about 0.5 MB (measured: 0.35 MB for a 20 s run on 2 CPUs, 0.48 MB for a 2 × 5 s
/// run with loads, 0.77 MB for a 1 h run on 2 CPUs).
pub const MIN_RESERVE_BYTES: u64 = 1 << 20;
/// The reserve is at most this: enough for run.json and report.html of about 50 CPU-days
/// (each per-second maximum adds about 31 bytes to the two, 5.3 MB per CPU and day).
pub const MAX_RESERVE_BYTES: u64 = 256 << 20;

/// Free space the raw writer keeps on a file system of `total_bytes`: 5 % of it (as
/// journald keeps free space for the rest of the system), at least [`MIN_RESERVE_BYTES`]
/// and at most [`MAX_RESERVE_BYTES`].
pub fn reserve_bytes(total_bytes: u64) -> u64 {
    (total_bytes / 20).clamp(MIN_RESERVE_BYTES, MAX_RESERVE_BYTES)
}

/// How many of `wanted` records may still be written when the file system has
/// `available_bytes` free, `pending_bytes` of earlier records are buffered but not yet on
/// it, and `reserve` bytes must stay free.
pub fn records_that_fit(available_bytes: u64, pending_bytes: u64, reserve: u64, wanted: u64) -> u64 {
    let room = available_bytes.saturating_sub(pending_bytes).saturating_sub(reserve);
    (room / RECORD_SIZE as u64).min(wanted)
}

/// Why a writer stopped writing raw samples before its rings were done. The samples it
/// took from the rings afterwards are counted as not written (and so as `lost`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawStop {
    /// The free space of the file system fell below the reserve ([`reserve_bytes`]):
    /// `available_bytes` were free (less what was buffered) when the next chunk of samples
    /// did not fit.
    Reserve { available_bytes: u64, reserve_bytes: u64 },
    /// A write failed because the file system or the disk quota was full (ENOSPC, EDQUOT).
    Full { path: PathBuf, error: String },
}

impl std::fmt::Display for RawStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RawStop::Reserve { reserve_bytes, .. } => write!(
                f,
                "the file system had less than {} free, the reserve kept for run.json and report.html",
                format_bytes(*reserve_bytes)
            ),
            RawStop::Full { path, error } => write!(f, "writing {} failed: {error}", path.display()),
        }
    }
}

/// "1.0 MiB", "512 KiB", "100 B".
pub fn format_bytes(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match bytes {
        b if b >= GIB => format!("{:.1} GiB", b as f64 / GIB as f64),
        b if b >= MIB => format!("{:.1} MiB", b as f64 / MIB as f64),
        b if b >= KIB => format!("{} KiB", b / KIB),
        b => format!("{b} B"),
    }
}

/// What became of one raw file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFileOutcome {
    pub path: PathBuf,
    /// Records in the file.
    pub written: u64,
    /// Samples taken from the ring but not written because the writer had stopped.
    pub not_written: u64,
}

/// What a writer did: per file, and why it stopped early, if it did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawOutcome {
    pub files: Vec<RawFileOutcome>,
    pub stop: Option<RawStop>,
}

impl RawOutcome {
    /// Samples written per file.
    pub fn written(&self) -> Vec<(PathBuf, u64)> {
        self.files.iter().map(|f| (f.path.clone(), f.written)).collect()
    }

    /// Samples not written to `path`.
    pub fn not_written(&self, path: &Path) -> u64 {
        self.files.iter().filter(|f| f.path == path).map(|f| f.not_written).sum()
    }
}

/// Free space of the file system holding a file; replaceable in tests.
pub type SpaceOf = fn(&File) -> std::io::Result<rtlab_sys::statvfs::Space>;

fn statvfs_space(file: &File) -> std::io::Result<rtlab_sys::statvfs::Space> {
    rtlab_sys::statvfs::space_of(file).map_err(|e| match e {
        rtlab_sys::SysError::Os { source, .. } | rtlab_sys::SysError::PermissionDenied { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })
}

/// ENOSPC or EDQUOT: the file system (or the quota) is full.
fn is_full(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
}

/// A non-real-time thread that drains rings into files until every producer is gone.
///
/// Before each chunk it writes, it checks the free space of the file system (`fstatvfs`)
/// and writes only what leaves [`reserve_bytes`] free; a write that fails with ENOSPC or
/// EDQUOT anyway is cut back to whole records. Either way the writer stops writing (all its
/// files) but goes on draining the rings, so the sampling threads never notice; the samples
/// it drops are counted per file ([`RawFileOutcome::not_written`]).
pub struct RawWriter {
    handle: std::thread::JoinHandle<Result<RawOutcome, ProbeError>>,
}

/// One file being written.
struct Output {
    drain: RawDrain,
    /// None once the file was closed after a write failed for want of space.
    writer: Option<BufWriter<File>>,
    /// Samples taken from the ring.
    taken: u64,
    /// Records written (buffered or on the file system).
    written: u64,
}

impl Output {
    fn buffered_bytes(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.buffer().len() as u64)
    }

    /// After a write failed for want of space: drops what is buffered, cuts the file back
    /// to its whole records and closes it; `written` becomes the records it holds.
    fn settle_full(&mut self) {
        let Some(writer) = self.writer.take() else { return };
        let (file, _unwritten) = writer.into_parts();
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let (records, keep) = if len >= HEADER_SIZE as u64 {
            let records = (len - HEADER_SIZE as u64) / RECORD_SIZE as u64;
            (records, HEADER_SIZE as u64 + records * RECORD_SIZE as u64)
        } else {
            (0, 0)
        };
        // Freeing the tail gives the space back; a file that cannot be cut (not a regular
        // file) keeps its length.
        if keep < len {
            let _ = file.set_len(keep);
        }
        let _ = file.sync_all();
        self.written = records.min(self.written);
    }
}

impl RawWriter {
    /// Creates the files and starts draining. `poll` is how long the writer sleeps when all
    /// rings are empty.
    pub fn spawn(drains: Vec<RawDrain>, poll: Duration) -> Result<Self, ProbeError> {
        Self::spawn_with(drains, poll, statvfs_space)
    }

    /// [`spawn`](Self::spawn) with another source of free space (tests).
    pub fn spawn_with(drains: Vec<RawDrain>, poll: Duration, space_of: SpaceOf) -> Result<Self, ProbeError> {
        let mut outputs = Vec::with_capacity(drains.len());
        for drain in drains {
            let writer = match &drain.path {
                Some(path) => {
                    let file = File::create(path).map_err(raw_io(path))?;
                    let mut writer = BufWriter::with_capacity(1 << 20, file);
                    writer.write_all(&header()).map_err(raw_io(path))?;
                    Some(writer)
                }
                None => None,
            };
            outputs.push(Output { drain, writer, taken: 0, written: 0 });
        }
        let handle = std::thread::Builder::new()
            .name("rtlab-raw-writer".into())
            .spawn(move || drain_until_done(outputs, poll, space_of))
            .map_err(raw_io(Path::new("<writer thread>")))?;
        Ok(Self { handle })
    }

    /// A writer for the drains of a probe, polling every 5 ms; None without raw output.
    pub fn for_drains(drains: Vec<RawDrain>) -> Result<Option<Self>, ProbeError> {
        if drains.is_empty() {
            return Ok(None);
        }
        Self::spawn(drains, Duration::from_millis(5)).map(Some)
    }

    /// Waits for the writer to drain everything; returns what became of each file. An I/O
    /// error other than a full file system is an error.
    pub fn finish(self) -> Result<RawOutcome, ProbeError> {
        self.handle.join().unwrap_or_else(|_| {
            Err(ResultsError::RawFormat { path: PathBuf::from("<writer thread>"), reason: "writer panicked".into() }
                .into())
        })
    }
}

fn drain_until_done(mut outputs: Vec<Output>, poll: Duration, space_of: SpaceOf) -> Result<RawOutcome, ProbeError> {
    let mut stop: Option<RawStop> = None;
    loop {
        let mut moved = 0usize;
        let mut all_abandoned = true;
        for index in 0..outputs.len() {
            // Read abandonment before draining, so nothing pushed before the producer was
            // dropped can be left behind.
            let abandoned = outputs[index].drain.consumer.is_abandoned();
            all_abandoned &= abandoned;
            let available = outputs[index].drain.consumer.slots();
            if available == 0 {
                continue;
            }
            // Room for this chunk: what the file system has free, minus what is buffered
            // for it, minus the reserve. Without an answer (a file system that cannot
            // say), write and rely on ENOSPC.
            let stopped = stop.is_some();
            let fit = match outputs[index].writer.as_ref().filter(|_| !stopped) {
                Some(writer) => match space_of(writer.get_ref()) {
                    Ok(space) => {
                        let pending: u64 = outputs.iter().map(Output::buffered_bytes).sum();
                        let reserve = reserve_bytes(space.total_bytes);
                        let fit = records_that_fit(space.available_bytes, pending, reserve, available as u64) as usize;
                        if fit < available {
                            stop = Some(RawStop::Reserve {
                                available_bytes: space.available_bytes.saturating_sub(pending),
                                reserve_bytes: reserve,
                            });
                        }
                        fit
                    }
                    Err(_) => available,
                },
                None => 0,
            };
            let output = &mut outputs[index];
            let chunk = output.drain.consumer.read_chunk(available).expect("slots() were available");
            let (first, second) = chunk.as_slices();
            if let Some(target) = &output.drain.tap {
                target.tap.deliver(TappedSamples {
                    cpu: target.cpu,
                    metric: target.metric.clone(),
                    samples: first.iter().chain(second.iter()).copied().collect(),
                    unrecorded: Vec::new(),
                });
            }
            if let (Some(writer), Some(path)) = (output.writer.as_mut(), output.drain.path.as_ref()) {
                for sample in first.iter().chain(second.iter()).take(fit) {
                    match writer.write_all(&sample.to_bytes()) {
                        Ok(()) => output.written += 1,
                        Err(e) if is_full(&e) => {
                            stop.get_or_insert(RawStop::Full { path: path.clone(), error: e.to_string() });
                            break;
                        }
                        Err(e) => return Err(raw_io(path)(e)),
                    }
                }
            }
            output.taken += available as u64;
            moved += available;
            chunk.commit_all();
            if matches!(&stop, Some(RawStop::Full { path, .. }) if Some(path) == output.drain.path.as_ref()) {
                output.settle_full();
            }
        }
        if all_abandoned && moved == 0 {
            break;
        }
        if moved == 0 {
            std::thread::sleep(poll);
        }
    }
    let mut files = Vec::with_capacity(outputs.len());
    for mut output in outputs {
        // A tap-only ring has no file to account for.
        let Some(path) = output.drain.path.clone() else { continue };
        if let Some(writer) = output.writer.as_mut() {
            match writer.flush().and_then(|_| writer.get_ref().sync_all()) {
                Ok(()) => {}
                Err(e) if is_full(&e) => {
                    stop.get_or_insert(RawStop::Full { path: path.clone(), error: e.to_string() });
                    output.settle_full();
                }
                Err(e) => return Err(raw_io(&path)(e)),
            }
        }
        files.push(RawFileOutcome { not_written: output.taken - output.written, path, written: output.written });
    }
    Ok(RawOutcome { files, stop })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_back_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        let (mut sink, drain) = channel(path.clone(), 8);
        let writer = RawWriter::spawn(vec![drain], Duration::from_millis(1)).unwrap();
        let mut pushed = 0;
        let mut lost = 0;
        for i in 0..10_000u64 {
            let s = RawSample { expected_ns: i, value_ns: -(i as i64), cpu: 1, flags: (i % 2) as u32 };
            if sink.push(s) {
                pushed += 1;
            } else {
                lost += 1;
                std::thread::yield_now();
            }
        }
        drop(sink);
        let outcome = writer.finish().unwrap();
        assert_eq!(outcome.written(), vec![(path.clone(), pushed)]);
        assert_eq!(outcome.stop, None);
        assert_eq!(pushed + lost, 10_000);
        let back = read_all(&path).unwrap();
        assert_eq!(back.len() as u64, pushed);
        assert!(back.windows(2).all(|w| w[0].expected_ns < w[1].expected_ns));
    }

    #[test]
    fn the_reserve_is_5_percent_between_1_and_256_mib() {
        const MIB: u64 = 1 << 20;
        assert_eq!(reserve_bytes(0), MIB);
        assert_eq!(reserve_bytes(2 * MIB), MIB, "a 2 MiB tmpfs keeps 1 MiB");
        assert_eq!(reserve_bytes(20 * MIB), MIB);
        assert_eq!(reserve_bytes(1000 * MIB), 50 * MIB);
        assert_eq!(reserve_bytes(100 << 30), 256 * MIB);
        // A short run's run.json and report.html (0.35 to 0.77 MB measured) fit the least.
        const { assert!(MIN_RESERVE_BYTES > 800_000) };
    }

    #[test]
    fn records_fit_in_what_is_free_beyond_the_buffered_bytes_and_the_reserve() {
        let reserve = 1 << 20;
        assert_eq!(records_that_fit(2 << 20, 0, reserve, 1_000_000), (1 << 20) / 24);
        assert_eq!(records_that_fit(2 << 20, 0, reserve, 10), 10);
        assert_eq!(records_that_fit(reserve + 24 * 5 + 23, 0, reserve, 10), 5);
        assert_eq!(records_that_fit(reserve + 24 * 5, 24 * 2, reserve, 10), 3);
        assert_eq!(records_that_fit(reserve, 0, reserve, 10), 0);
        assert_eq!(records_that_fit(reserve - 1, 0, reserve, 10), 0);
        assert_eq!(records_that_fit(1000, 5000, reserve, 10), 0);
    }

    /// Pushes `n` samples, yielding while the ring is full; returns (pushed, lost).
    fn push_all(sink: &mut RawSink, n: u64) -> (u64, u64) {
        let (mut pushed, mut lost) = (0, 0);
        for i in 0..n {
            if sink.push(RawSample { expected_ns: i, value_ns: i as i64, cpu: 0, flags: 0 }) {
                pushed += 1;
            } else {
                lost += 1;
                std::thread::yield_now();
            }
        }
        (pushed, lost)
    }

    /// A 2 MiB file system that holds only the file being written.
    fn two_mib(file: &File) -> std::io::Result<rtlab_sys::statvfs::Space> {
        let total_bytes = 2 << 20;
        Ok(rtlab_sys::statvfs::Space {
            available_bytes: total_bytes - file.metadata()?.len().min(total_bytes),
            total_bytes,
        })
    }

    #[test]
    fn the_writer_stops_at_the_reserve_and_counts_what_it_did_not_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        let (mut sink, drain) = channel(path.clone(), 4096);
        let writer = RawWriter::spawn_with(vec![drain], Duration::from_millis(1), two_mib).unwrap();
        // 100,000 samples are 2.4 MB: more than the file system holds.
        let (pushed, lost) = push_all(&mut sink, 100_000);
        drop(sink);
        let outcome = writer.finish().unwrap();
        let file = &outcome.files[0];
        assert_eq!(file.written + file.not_written, pushed);
        assert_eq!(pushed + lost, 100_000);
        assert!(file.not_written > 0);
        let size = std::fs::metadata(&path).unwrap().len();
        assert_eq!(size, HEADER_SIZE as u64 + 24 * file.written);
        assert!(size <= 1 << 20, "{size} bytes leave less than the 1 MiB reserve of 2 MiB free");
        assert!(size > (1 << 20) - 64 * 1024, "only {size} bytes written");
        assert_eq!(read_all(&path).unwrap().len() as u64, file.written);
        match &outcome.stop {
            Some(RawStop::Reserve { available_bytes, reserve_bytes }) => {
                assert_eq!(*reserve_bytes, 1 << 20);
                assert!(*available_bytes < (1 << 20) + 24 * 4096);
            }
            other => panic!("stopped for {other:?}"),
        }
        let text = outcome.stop.unwrap().to_string();
        assert_eq!(text, "the file system had less than 1.0 MiB free, the reserve kept for run.json and report.html");
    }

    #[test]
    fn a_full_file_system_stops_the_writer_without_failing_it() {
        // Every write to /dev/full fails with ENOSPC.
        if !Path::new("/dev/full").exists() {
            eprintln!("skipped: no /dev/full");
            return;
        }
        fn roomy(_: &File) -> std::io::Result<rtlab_sys::statvfs::Space> {
            Ok(rtlab_sys::statvfs::Space { available_bytes: 1 << 40, total_bytes: 1 << 40 })
        }
        let path = PathBuf::from("/dev/full");
        let (mut sink, drain) = channel(path.clone(), 4096);
        let writer = RawWriter::spawn_with(vec![drain], Duration::from_millis(1), roomy).unwrap();
        // More than the 1 MiB buffer, so that the failure comes while draining.
        let (pushed, _) = push_all(&mut sink, 100_000);
        drop(sink);
        let outcome = writer.finish().unwrap();
        assert_eq!(outcome.files, vec![RawFileOutcome { path: path.clone(), written: 0, not_written: pushed }]);
        match &outcome.stop {
            Some(RawStop::Full { path: p, error }) => {
                assert_eq!(p, &path);
                assert!(error.contains("No space left on device"), "{error}");
            }
            other => panic!("stopped for {other:?}"),
        }
    }

    #[test]
    fn a_full_file_system_at_the_last_flush_stops_the_writer_too() {
        if !Path::new("/dev/full").exists() {
            eprintln!("skipped: no /dev/full");
            return;
        }
        let path = PathBuf::from("/dev/full");
        let (mut sink, drain) = channel(path.clone(), 4096);
        let writer = RawWriter::spawn_with(vec![drain], Duration::from_millis(1), |_| {
            Ok(rtlab_sys::statvfs::Space { available_bytes: 1 << 40, total_bytes: 1 << 40 })
        })
        .unwrap();
        let (pushed, _) = push_all(&mut sink, 100);
        drop(sink);
        let outcome = writer.finish().unwrap();
        assert_eq!(outcome.files[0].not_written, pushed);
        assert!(matches!(outcome.stop, Some(RawStop::Full { .. })), "{:?}", outcome.stop);
    }

    #[test]
    fn bytes_are_shown_in_binary_units() {
        assert_eq!(format_bytes(1 << 20), "1.0 MiB");
        assert_eq!(format_bytes(1_572_864), "1.5 MiB");
        assert_eq!(format_bytes(700 * 1024), "700 KiB");
        assert_eq!(format_bytes(3 << 30), "3.0 GiB");
        assert_eq!(format_bytes(12), "12 B");
    }
}
