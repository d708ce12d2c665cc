//! `disk`: dd-like sequential write then read in 1 MiB blocks with fsync, and a file copy
//! (Regnier's `dd`; Senoner's copy/read/write in Dankwardt), in a scratch directory.
//!
//! Reads bypass the page cache with O_DIRECT where the file system allows it, so they reach
//! the device instead of re-reading what was just written; without O_DIRECT (tmpfs) they
//! are cached reads and the report says so (`direct_read: false`). This evicts only the
//! load's own data, never the whole page cache (`drop_caches` would disturb every other
//! process and needs root).

use crate::scratch;
use crate::worker::{stop_started, Pacer, Workers};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

pub const NAME: &str = "disk";

const BLOCK: usize = 1 << 20;
/// O_DIRECT needs buffers aligned to the logical block size; 4 KiB covers every device.
const ALIGN: usize = 4096;

/// Parameters of [`DiskLoad`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiskParams {
    /// Where the scratch directory is created.
    pub parent: PathBuf,
    /// Size of the file written, read and copied in each cycle, in MiB.
    pub file_mib: u64,
    /// fsync (fdatasync) after this many MiB, so no single sync holds a stop up.
    pub sync_every_mib: u64,
    /// Copy the file after reading it.
    pub copy: bool,
    /// MB (10^6 bytes) per second over writes, reads and copies together; None = as fast
    /// as the device allows.
    pub rate_mb_s: Option<f64>,
}

impl Default for DiskParams {
    fn default() -> Self {
        Self { parent: crate::scratch::default_parent(), file_mib: 64, sync_every_mib: 8, copy: true, rate_mb_s: None }
    }
}

#[derive(Default)]
struct Counters {
    written: AtomicU64,
    read: AtomicU64,
    copied: AtomicU64,
    cycles: AtomicU64,
    direct: AtomicBool,
}

/// Writes, reads and copies files in a scratch directory, removed on stop and on drop.
pub struct DiskLoad {
    params: DiskParams,
    counters: Arc<Counters>,
    // Field order matters: the workers are dropped (joined) before the directory goes.
    workers: Option<Workers>,
    scratch: Option<tempfile::TempDir>,
}

impl DiskLoad {
    pub fn new(params: DiskParams) -> Result<Self, LoadError> {
        if params.file_mib == 0 || params.file_mib > 1 << 20 {
            return Err(LoadError::config(NAME, format!("file size must be 1 MiB to 1 TiB, not {}", params.file_mib)));
        }
        if let Some(rate) = params.rate_mb_s {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(LoadError::config(NAME, format!("rate must be a positive number of MB/s, not {rate}")));
            }
        }
        if params.sync_every_mib == 0 {
            return Err(LoadError::config(NAME, "sync_every_mib must be at least 1"));
        }
        scratch::check_parent(NAME, &params.parent)?;
        Ok(Self { params, counters: Arc::default(), workers: None, scratch: None })
    }

    /// The scratch directory while the load runs.
    pub fn scratch_dir(&self) -> Option<&Path> {
        self.scratch.as_ref().map(|d| d.path())
    }
}

/// A 1 MiB buffer aligned for O_DIRECT, in safe code: over-allocate and slice.
struct AlignedBlock {
    storage: Vec<u8>,
    offset: usize,
}

impl AlignedBlock {
    fn new() -> Self {
        let storage = vec![0u8; BLOCK + ALIGN];
        let offset = storage.as_ptr().align_offset(ALIGN);
        Self { storage, offset }
    }

    fn get(&mut self) -> &mut [u8] {
        &mut self.storage[self.offset..self.offset + BLOCK]
    }
}

/// Fills the block with a pattern that differs per cycle, so no layer can deduplicate or
/// compress it away.
fn fill(block: &mut [u8], cycle: u64) {
    let mut x = cycle.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in block.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_ne_bytes()[..chunk.len()]);
    }
}

struct Cycle<'a> {
    dir: &'a Path,
    params: &'a DiskParams,
    counters: &'a Counters,
    stop: &'a AtomicBool,
    /// Paces 1 MiB blocks.
    pacer: Pacer,
    blocks: std::cell::Cell<u64>,
}

impl Cycle<'_> {
    /// True if stopped; otherwise waits for the pacer to allow the next block.
    fn stopped(&self) -> bool {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return true;
            }
            if self.pacer.allowance(self.blocks.get(), 1) > 0 {
                self.blocks.set(self.blocks.get() + 1);
                return false;
            }
        }
    }

    /// Sequential write of the data file; false if stopped.
    fn write(&self, block: &mut [u8], cycle: u64) -> std::io::Result<bool> {
        let mut file = File::create(self.dir.join("data"))?;
        fill(block, cycle);
        for i in 0..self.params.file_mib {
            if self.stopped() {
                return Ok(false);
            }
            block[0] = i as u8;
            file.write_all(block)?;
            self.counters.written.fetch_add(BLOCK as u64, Ordering::Relaxed);
            if (i + 1) % self.params.sync_every_mib == 0 {
                file.sync_data()?;
            }
        }
        file.sync_all()?;
        Ok(true)
    }

    /// Sequential read of the data file, O_DIRECT where possible; false if stopped.
    fn read(&self, aligned: &mut AlignedBlock) -> std::io::Result<bool> {
        let path = self.dir.join("data");
        let direct = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path);
        let (mut file, mut is_direct) = match direct {
            Ok(file) => (file, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (File::open(&path)?, false),
            Err(e) => return Err(e),
        };
        loop {
            if self.stopped() {
                return Ok(false);
            }
            match file.read(aligned.get()) {
                Ok(0) => break,
                Ok(n) => {
                    self.counters.read.fetch_add(n as u64, Ordering::Relaxed);
                }
                // Some file systems accept O_DIRECT at open and refuse the read.
                Err(e) if is_direct && e.raw_os_error() == Some(libc::EINVAL) => {
                    file = File::open(&path)?;
                    is_direct = false;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.counters.direct.store(is_direct, Ordering::Relaxed);
        Ok(true)
    }

    /// Copies the data file block by block (not copy_file_range, which a file system may
    /// turn into a reflink that moves no data); false if stopped.
    fn copy(&self, block: &mut [u8]) -> std::io::Result<bool> {
        let mut from = File::open(self.dir.join("data"))?;
        let mut to = File::create(self.dir.join("copy"))?;
        let mut since_sync = 0u64;
        loop {
            if self.stopped() {
                return Ok(false);
            }
            let n = from.read(block)?;
            if n == 0 {
                break;
            }
            to.write_all(&block[..n])?;
            self.counters.copied.fetch_add(n as u64, Ordering::Relaxed);
            since_sync += n as u64;
            if since_sync >= self.params.sync_every_mib << 20 {
                to.sync_data()?;
                since_sync = 0;
            }
        }
        to.sync_all()?;
        Ok(true)
    }
}

impl Load for DiskLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() || self.scratch.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let dir = scratch::create(NAME, &self.params.parent)?;
        let path = dir.path().to_path_buf();
        self.scratch = Some(dir);
        let mut workers = Workers::new(NAME);
        let params = self.params.clone();
        let counters = self.counters.clone();
        workers.mark_start();
        workers.spawn("load-disk".into(), None, move |stop| {
            let rate = params.rate_mb_s.map(|r| r * 1e6 / BLOCK as f64);
            let cycle = Cycle {
                dir: &path,
                params: &params,
                counters: &counters,
                stop,
                pacer: Pacer::new(rate),
                blocks: std::cell::Cell::new(0),
            };
            let mut block = vec![0u8; BLOCK];
            let mut aligned = AlignedBlock::new();
            for n in 0.. {
                let done = cycle.write(&mut block, n).map_err(|e| format!("write: {e}"))?
                    && cycle.read(&mut aligned).map_err(|e| format!("read: {e}"))?
                    && (!params.copy || cycle.copy(&mut block).map_err(|e| format!("copy: {e}"))?);
                if !done {
                    break;
                }
                counters.cycles.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })?;
        self.workers = Some(workers);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let stopped = stop_started(&mut self.workers, NAME)?;
        scratch::remove(NAME, self.scratch.take())?;
        let c = &self.counters;
        let d = stopped.duration_s;
        let (written, read, copied) =
            (c.written.load(Ordering::Relaxed), c.read.load(Ordering::Relaxed), c.copied.load(Ordering::Relaxed));
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["block_bytes"] = BLOCK.into();
        parameters["direct_read"] = (read > 0 && c.direct.load(Ordering::Relaxed)).into();
        let mut achieved = vec![
            Intensity::new("MB/s written", per_second(mb(written), d), "MB/s"),
            Intensity::new("MB/s read", per_second(mb(read), d), "MB/s"),
        ];
        if self.params.copy {
            achieved.push(Intensity::new("MB/s copied", per_second(mb(copied), d), "MB/s"));
        }
        achieved.push(Intensity::new("cycles", c.cycles.load(Ordering::Relaxed) as f64, "cycles"));
        Ok(stopped.into_report(NAME, parameters, achieved))
    }

    fn check_alive(&mut self) -> Option<String> {
        self.workers.as_ref().and_then(Workers::failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{positive, run_for};
    use std::time::Duration;

    #[test]
    fn writes_reads_copies_and_cleans_up() {
        let parent = tempfile::tempdir().unwrap();
        let params =
            DiskParams { parent: parent.path().into(), file_mib: 4, sync_every_mib: 2, copy: true, rate_mb_s: None };
        let mut load = DiskLoad::new(params).unwrap();
        load.start().unwrap();
        let dir = load.scratch_dir().unwrap().to_path_buf();
        assert!(dir.starts_with(parent.path()) && dir.is_dir());
        std::thread::sleep(Duration::from_millis(700));
        let asked = std::time::Instant::now();
        let report = load.stop().unwrap();
        assert!(asked.elapsed() < Duration::from_secs(1), "stop took {:?}", asked.elapsed());
        assert!(!dir.exists(), "scratch directory left behind");
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
        positive(&report, "MB/s written");
        positive(&report, "MB/s read");
        positive(&report, "MB/s copied");
        assert_eq!(report.died_early, None);
    }

    #[test]
    fn run_and_stop_within_a_second() {
        let parent = tempfile::tempdir().unwrap();
        let mut load = DiskLoad::new(DiskParams { parent: parent.path().into(), ..Default::default() }).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        positive(&report, "MB/s written");
    }

    #[test]
    fn keeps_a_rate() {
        let parent = tempfile::tempdir().unwrap();
        let params = DiskParams { parent: parent.path().into(), rate_mb_s: Some(10.0), ..Default::default() };
        let mut load = DiskLoad::new(params).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        let total: f64 =
            ["MB/s written", "MB/s read", "MB/s copied"].iter().map(|n| report.intensity(n).unwrap()).sum();
        // 10 MB/s in 1 MiB blocks, the first one at once: at most 7 blocks in 0.5 s.
        assert!(total > 0.0 && total < 16.0, "{report:?}");
    }

    #[test]
    fn drop_removes_the_scratch_directory() {
        let parent = tempfile::tempdir().unwrap();
        let mut load =
            DiskLoad::new(DiskParams { parent: parent.path().into(), file_mib: 2, ..Default::default() }).unwrap();
        load.start().unwrap();
        let dir = load.scratch_dir().unwrap().to_path_buf();
        std::thread::sleep(Duration::from_millis(100));
        drop(load);
        assert!(!dir.exists());
    }

    #[test]
    fn unwritable_scratch_is_a_usage_error() {
        let err = DiskLoad::new(DiskParams { parent: "/proc".into(), ..Default::default() }).err().unwrap();
        assert!(err.is_usage_error(), "{err}");
        assert!(err.to_string().contains("/proc"), "{err}");
        let err = DiskLoad::new(DiskParams { file_mib: 0, ..Default::default() }).err().unwrap();
        assert!(err.is_usage_error());
    }
}
