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
            let file = File::create(&drain.path).map_err(raw_io(&drain.path))?;
            let mut writer = BufWriter::with_capacity(1 << 20, file);
            writer.write_all(&header()).map_err(raw_io(&drain.path))?;
            outputs.push((drain, writer, 0u64));
        }
        let handle = std::thread::Builder::new()
            .name("rtlab-raw-writer".into())
            .spawn(move || drain_until_done(outputs, poll))
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

    /// Waits for the writer to drain everything; returns samples written per file.
    pub fn finish(self) -> Result<Vec<(PathBuf, u64)>, ProbeError> {
        self.handle.join().unwrap_or_else(|_| {
            Err(ResultsError::RawFormat { path: PathBuf::from("<writer thread>"), reason: "writer panicked".into() }
                .into())
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
                writer.write_all(&sample.to_bytes()).map_err(raw_io(&drain.path))?;
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
        writer.flush().and_then(|_| writer.get_ref().sync_all()).map_err(raw_io(&drain.path))?;
        counts.push((drain.path, written));
    }
    Ok(counts)
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
}
