//! `compress`: compress a tree into a temporary archive, over and over (Regnier's
//! `tar -cjf`), with gzip (flate2) instead of bzip2.
//!
//! The archive is a gzip stream of, per file, its path, its length and its contents: not a
//! tar file, since nothing ever unpacks it; the load is reading the tree, compressing and
//! writing the result. It lives in a scratch directory removed on stop and on drop.

use crate::scratch;
use crate::worker::{stop_started, Workers};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

pub const NAME: &str = "compress";

const READ_CHUNK: usize = 64 << 10;

/// Parameters of [`CompressLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressParams {
    /// Tree to compress.
    pub root: PathBuf,
    /// gzip level, 1 (fast) to 9 (best).
    pub level: u32,
    /// Where the scratch directory holding the archive is created.
    pub parent: PathBuf,
}

impl Default for CompressParams {
    fn default() -> Self {
        Self { root: PathBuf::from("/usr/share"), level: 6, parent: crate::scratch::default_parent() }
    }
}

#[derive(Default)]
struct Counters {
    files: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    archives: AtomicU64,
}

/// Compresses a tree into an archive in a scratch directory.
pub struct CompressLoad {
    params: CompressParams,
    counters: Arc<Counters>,
    // Dropped (joined) before the scratch directory is removed.
    workers: Option<Workers>,
    scratch: Option<tempfile::TempDir>,
}

impl CompressLoad {
    pub fn new(params: CompressParams) -> Result<Self, LoadError> {
        if !(1..=9).contains(&params.level) {
            return Err(LoadError::config(NAME, format!("level must be 1 to 9, not {}", params.level)));
        }
        std::fs::read_dir(&params.root)
            .map_err(|e| LoadError::config(NAME, format!("cannot read {}: {e}", params.root.display())))?;
        scratch::check_parent(NAME, &params.parent)?;
        Ok(Self { params, counters: Arc::default(), workers: None, scratch: None })
    }
}

/// Counts what reaches the archive file.
struct CountingWriter<'a> {
    inner: BufWriter<File>,
    counter: &'a AtomicU64,
}

impl Write for CountingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes one archive of `root`; Ok(false) if stopped.
fn archive(root: &Path, out: &Path, level: u32, counters: &Counters, stop: &AtomicBool) -> std::io::Result<bool> {
    let file = CountingWriter { inner: BufWriter::new(File::create(out)?), counter: &counters.bytes_out };
    let mut gz = GzEncoder::new(file, Compression::new(level));
    let mut buf = vec![0u8; READ_CHUNK];
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                dirs.push(entry.path());
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let path = entry.path();
            let Ok(mut input) = File::open(&path) else { continue };
            let len = input.metadata().map(|m| m.len()).unwrap_or(0);
            writeln!(gz, "{}\n{len}", path.display())?;
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                let n = match input.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                gz.write_all(&buf[..n])?;
                counters.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
            }
            counters.files.fetch_add(1, Ordering::Relaxed);
        }
    }
    gz.finish()?.flush()?;
    Ok(true)
}

impl Load for CompressLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() || self.scratch.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let dir = scratch::create(NAME, &self.params.parent)?;
        let out = dir.path().join("archive.gz");
        self.scratch = Some(dir);
        let mut workers = Workers::new(NAME);
        let params = self.params.clone();
        let counters = self.counters.clone();
        workers.mark_start();
        workers.spawn("load-compress".into(), None, move |stop| {
            while archive(&params.root, &out, params.level, &counters, stop).map_err(|e| format!("archive: {e}"))? {
                counters.archives.fetch_add(1, Ordering::Relaxed);
                if counters.files.load(Ordering::Relaxed) == 0 {
                    // Nothing to compress: do not spin on an empty tree.
                    std::thread::sleep(crate::worker::POLL_INTERVAL);
                }
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
        let (bytes_in, bytes_out) = (c.bytes_in.load(Ordering::Relaxed), c.bytes_out.load(Ordering::Relaxed));
        let files = c.files.load(Ordering::Relaxed);
        Ok(stopped.into_report(
            NAME,
            serde_json::to_value(&self.params).unwrap_or_default(),
            vec![
                Intensity::new("MB/s compressed", per_second(mb(bytes_in), d), "MB/s"),
                Intensity::new("files/s", per_second(files as f64, d), "files/s"),
                Intensity::new("MB/s written", per_second(mb(bytes_out), d), "MB/s"),
                Intensity::new("archives", c.archives.load(Ordering::Relaxed) as f64, "archives"),
            ],
        ))
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
    fn compresses_and_cleans_up() {
        let parent = tempfile::tempdir().unwrap();
        let params = CompressParams { parent: parent.path().into(), ..Default::default() };
        let mut load = CompressLoad::new(params).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        positive(&report, "MB/s compressed");
        positive(&report, "files/s");
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0, "scratch left behind");
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(CompressLoad::new(CompressParams { level: 0, ..Default::default() }).err().unwrap().is_usage_error());
        assert!(CompressLoad::new(CompressParams { root: "/nonexistent".into(), ..Default::default() })
            .err()
            .unwrap()
            .is_usage_error());
        assert!(CompressLoad::new(CompressParams { parent: "/proc".into(), ..Default::default() })
            .err()
            .unwrap()
            .is_usage_error());
    }
}
