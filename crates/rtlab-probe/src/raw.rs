//! Raw samples: the file format, the ring that carries samples out of a sampling thread,
//! and the writer that drains rings into files.
//!
//! File format (documented in docs/raw-samples.md), little-endian:
//! - header, 16 bytes: magic `RTLABRAW`, u16 format version (1), u16 record size (24),
//!   u32 reserved (0);
//! - records, 24 bytes each: u64 `expected_ns` (the programmed absolute CLOCK_MONOTONIC
//!   expiry), i64 `value_ns` (the sample, e.g. timer latency), u32 `cpu`, u32 `flags`
//!   (bit 0: this wake-up overran, i.e. later expiries were skipped).

use crate::ProbeError;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const MAGIC: &[u8; 8] = b"RTLABRAW";
pub const FORMAT_VERSION: u16 = 1;
pub const HEADER_SIZE: usize = 16;
pub const RECORD_SIZE: usize = 24;
/// Flag bit: the wake-up of this sample overran one or more later expiries.
pub const FLAG_OVERRUN: u32 = 1;

/// Ring capacity per sampling thread: at 20,000 samples/s (50 µs) over three seconds of
/// writer stall before anything is lost.
pub const DEFAULT_RING_CAPACITY: usize = 1 << 16;

/// One raw sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawSample {
    pub expected_ns: u64,
    pub value_ns: i64,
    pub cpu: u32,
    pub flags: u32,
}

impl RawSample {
    pub fn overran(&self) -> bool {
        self.flags & FLAG_OVERRUN != 0
    }

    fn to_bytes(self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&self.expected_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.value_ns.to_le_bytes());
        b[16..20].copy_from_slice(&self.cpu.to_le_bytes());
        b[20..24].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8; RECORD_SIZE]) -> Self {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Self { expected_ns: u64_at(0), value_ns: u64_at(8) as i64, cpu: u32_at(16), flags: u32_at(20) }
    }
}

fn header() -> [u8; HEADER_SIZE] {
    let mut h = [0u8; HEADER_SIZE];
    h[0..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&(RECORD_SIZE as u16).to_le_bytes());
    h
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

/// The consumer side of a ring and the file it drains into, handed to [`RawWriter::spawn`].
pub struct RawDrain {
    consumer: rtrb::Consumer<RawSample>,
    path: PathBuf,
}

impl RawDrain {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Allocates a ring of `capacity` samples: the sink for the sampling thread, the drain for
/// the writer (which creates the file when it starts).
pub fn channel(path: PathBuf, capacity: usize) -> (RawSink, RawDrain) {
    let (producer, consumer) = rtrb::RingBuffer::new(capacity);
    (RawSink { producer }, RawDrain { consumer, path })
}

/// A non-real-time thread that drains rings into files until every producer is gone.
pub struct RawWriter {
    handle: std::thread::JoinHandle<Result<Vec<(PathBuf, u64)>, ProbeError>>,
}

impl RawWriter {
    /// Creates the files and starts draining. `poll` is how long the writer sleeps when all
    /// rings are empty.
    pub fn spawn(drains: Vec<RawDrain>, poll: Duration) -> Result<Self, ProbeError> {
        let mut outputs = Vec::with_capacity(drains.len());
        for drain in drains {
            let file =
                File::create(&drain.path).map_err(|source| ProbeError::RawIo { path: drain.path.clone(), source })?;
            let mut writer = BufWriter::with_capacity(1 << 20, file);
            writer.write_all(&header()).map_err(|source| ProbeError::RawIo { path: drain.path.clone(), source })?;
            outputs.push((drain, writer, 0u64));
        }
        let handle = std::thread::Builder::new()
            .name("rtlab-raw-writer".into())
            .spawn(move || drain_until_done(outputs, poll))
            .map_err(|source| ProbeError::RawIo { path: PathBuf::from("<writer thread>"), source })?;
        Ok(Self { handle })
    }

    /// A writer for the drains of a probe, polling every 5 ms; None without raw output.
    pub fn for_drains(drains: Vec<RawDrain>) -> Result<Option<Self>, ProbeError> {
        if drains.is_empty() {
            return Ok(None);
        }
        Self::spawn(drains, Duration::from_millis(5)).map(Some)
    }

    /// Waits for the writer to drain everything; returns samples written per file.
    pub fn finish(self) -> Result<Vec<(PathBuf, u64)>, ProbeError> {
        self.handle.join().unwrap_or_else(|_| {
            Err(ProbeError::RawFormat { path: PathBuf::from("<writer thread>"), reason: "writer panicked".into() })
        })
    }
}

fn drain_until_done(
    mut outputs: Vec<(RawDrain, BufWriter<File>, u64)>,
    poll: Duration,
) -> Result<Vec<(PathBuf, u64)>, ProbeError> {
    loop {
        let mut moved = 0usize;
        let mut all_abandoned = true;
        for (drain, writer, written) in outputs.iter_mut() {
            // Read abandonment before draining, so nothing pushed before the producer was
            // dropped can be left behind.
            let abandoned = drain.consumer.is_abandoned();
            all_abandoned &= abandoned;
            let available = drain.consumer.slots();
            if available == 0 {
                continue;
            }
            let chunk = drain.consumer.read_chunk(available).expect("slots() were available");
            let (first, second) = chunk.as_slices();
            for sample in first.iter().chain(second.iter()) {
                writer
                    .write_all(&sample.to_bytes())
                    .map_err(|source| ProbeError::RawIo { path: drain.path.clone(), source })?;
            }
            *written += available as u64;
            moved += available;
            chunk.commit_all();
        }
        if all_abandoned && moved == 0 {
            break;
        }
        if moved == 0 {
            std::thread::sleep(poll);
        }
    }
    let mut counts = Vec::with_capacity(outputs.len());
    for (drain, mut writer, written) in outputs {
        writer
            .flush()
            .and_then(|_| writer.get_ref().sync_all())
            .map_err(|source| ProbeError::RawIo { path: drain.path.clone(), source })?;
        counts.push((drain.path, written));
    }
    Ok(counts)
}

/// Reads a raw sample file, checking header and record alignment.
pub struct RawReader {
    reader: BufReader<File>,
    path: PathBuf,
}

impl RawReader {
    pub fn open(path: &Path) -> Result<Self, ProbeError> {
        let io = |source| ProbeError::RawIo { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io)?;
        let length = file.metadata().map_err(io)?.len();
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut h = [0u8; HEADER_SIZE];
        let bad = |reason: String| ProbeError::RawFormat { path: path.to_path_buf(), reason };
        reader.read_exact(&mut h).map_err(|_| bad("shorter than the 16-byte header".into()))?;
        if &h[0..8] != MAGIC {
            return Err(bad("not an rtlab raw sample file (bad magic)".into()));
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        let record = u16::from_le_bytes([h[10], h[11]]) as usize;
        if version != FORMAT_VERSION || record != RECORD_SIZE {
            return Err(bad(format!("unsupported format version {version} / record size {record}")));
        }
        if !(length - HEADER_SIZE as u64).is_multiple_of(RECORD_SIZE as u64) {
            return Err(bad(format!(
                "truncated: {} bytes after the header is not a whole number of {RECORD_SIZE}-byte records",
                length - HEADER_SIZE as u64
            )));
        }
        Ok(Self { reader, path: path.to_path_buf() })
    }

    /// The next sample, None at the end of the file.
    pub fn next_sample(&mut self) -> Result<Option<RawSample>, ProbeError> {
        let mut b = [0u8; RECORD_SIZE];
        match self.reader.read_exact(&mut b) {
            Ok(()) => Ok(Some(RawSample::from_bytes(&b))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(source) => Err(ProbeError::RawIo { path: self.path.clone(), source }),
        }
    }
}

/// Convenience for tests and small files: every sample of a file.
pub fn read_all(path: &Path) -> Result<Vec<RawSample>, ProbeError> {
    let mut reader = RawReader::open(path)?;
    let mut samples = Vec::new();
    while let Some(s) = reader.next_sample()? {
        samples.push(s);
    }
    Ok(samples)
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
        let written = writer.finish().unwrap();
        assert_eq!(written, vec![(path.clone(), pushed)]);
        assert_eq!(pushed + lost, 10_000);
        let back = read_all(&path).unwrap();
        assert_eq!(back.len() as u64, pushed);
        assert!(back.windows(2).all(|w| w[0].expected_ns < w[1].expected_ns));
    }

    #[test]
    fn rejects_foreign_and_truncated_files() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("f.bin");
        std::fs::write(&foreign, b"hello world, not raw samples").unwrap();
        assert!(matches!(RawReader::open(&foreign), Err(ProbeError::RawFormat { .. })));
        let truncated = dir.path().join("t.bin");
        let mut bytes = header().to_vec();
        bytes.extend_from_slice(&[0u8; RECORD_SIZE + 5]);
        std::fs::write(&truncated, bytes).unwrap();
        let err = RawReader::open(&truncated).err().unwrap().to_string();
        assert!(err.contains("truncated"), "{err}");
    }
}
