//! `fs-walk`: walk a tree and search file contents for a word, over and over (Regnier's
//! `find / -name "*.c" | xargs egrep include`).
//!
//! The first pass reads from the device; later passes mostly from the page cache, as
//! Regnier's loop did. Symbolic links are not followed, unreadable entries are skipped.

use crate::worker::{stop_started, Workers};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

pub const NAME: &str = "fs-walk";

const READ_CHUNK: usize = 64 << 10;

/// Parameters of [`FsWalkLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FsWalkParams {
    /// Tree to walk.
    pub root: PathBuf,
    /// Word searched for in every file read.
    pub word: String,
    /// Only files whose name ends with this (".c" as in Regnier); None = every regular file.
    pub name_suffix: Option<String>,
}

impl Default for FsWalkParams {
    fn default() -> Self {
        Self { root: PathBuf::from("/usr"), word: "include".to_string(), name_suffix: None }
    }
}

#[derive(Default)]
struct Counters {
    files: AtomicU64,
    bytes: AtomicU64,
    matches: AtomicU64,
    directories: AtomicU64,
    passes: AtomicU64,
}

/// Walks a tree and greps its files.
pub struct FsWalkLoad {
    params: FsWalkParams,
    counters: Arc<Counters>,
    workers: Option<Workers>,
}

impl FsWalkLoad {
    pub fn new(params: FsWalkParams) -> Result<Self, LoadError> {
        if params.word.is_empty() {
            return Err(LoadError::config(NAME, "the word to search for is empty"));
        }
        std::fs::read_dir(&params.root)
            .map_err(|e| LoadError::config(NAME, format!("cannot walk {}: {e}", params.root.display())))?;
        Ok(Self { params, counters: Arc::default(), workers: None })
    }
}

struct Walker<'a> {
    finder: memchr::memmem::Finder<'a>,
    suffix: Option<&'a str>,
    counters: &'a Counters,
    stop: &'a AtomicBool,
    buf: Vec<u8>,
}

impl Walker<'_> {
    /// One pass over the tree; false if stopped.
    fn pass(&mut self, root: &Path) -> bool {
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            self.counters.directories.fetch_add(1, Ordering::Relaxed);
            for entry in entries.flatten() {
                if self.stop.load(Ordering::Relaxed) {
                    return false;
                }
                let Ok(kind) = entry.file_type() else { continue };
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file() && self.wanted(&entry.file_name()) && !self.grep(&entry.path()) {
                    return false;
                }
            }
        }
        true
    }

    fn wanted(&self, name: &std::ffi::OsStr) -> bool {
        match self.suffix {
            None => true,
            Some(suffix) => name.to_str().is_some_and(|n| n.ends_with(suffix)),
        }
    }

    /// Counts occurrences of the word in one file, reading it in chunks and keeping the
    /// last `word.len() - 1` bytes so a match across two chunks is found; false if stopped.
    fn grep(&mut self, path: &Path) -> bool {
        let Ok(mut file) = File::open(path) else { return true };
        let keep = self.finder.needle().len() - 1;
        let mut carried = 0;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let n = match file.read(&mut self.buf[carried..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let end = carried + n;
            let matches = self.finder.find_iter(&self.buf[..end]).count();
            self.counters.matches.fetch_add(matches as u64, Ordering::Relaxed);
            self.counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
            carried = keep.min(end);
            self.buf.copy_within(end - carried..end, 0);
        }
        self.counters.files.fetch_add(1, Ordering::Relaxed);
        true
    }
}

impl Load for FsWalkLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let mut workers = Workers::new(NAME);
        let params = self.params.clone();
        let counters = self.counters.clone();
        workers.mark_start();
        workers.spawn("load-fs-walk".into(), None, move |stop| {
            let mut walker = Walker {
                finder: memchr::memmem::Finder::new(params.word.as_bytes()),
                suffix: params.name_suffix.as_deref(),
                counters: &counters,
                stop,
                buf: vec![0u8; READ_CHUNK + params.word.len()],
            };
            while walker.pass(&params.root) {
                counters.passes.fetch_add(1, Ordering::Relaxed);
                if counters.files.load(Ordering::Relaxed) == 0 && counters.directories.load(Ordering::Relaxed) <= 1 {
                    // An empty tree: nothing to load the system with, and no reason to spin.
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
        let c = &self.counters;
        let d = stopped.duration_s;
        let files = c.files.load(Ordering::Relaxed);
        Ok(stopped.into_report(
            NAME,
            serde_json::to_value(&self.params).unwrap_or_default(),
            vec![
                Intensity::new("files/s", per_second(files as f64, d), "files/s"),
                Intensity::new("MB/s searched", per_second(mb(c.bytes.load(Ordering::Relaxed)), d), "MB/s"),
                Intensity::new("files searched", files as f64, "files"),
                Intensity::new("matches", c.matches.load(Ordering::Relaxed) as f64, "matches"),
                Intensity::new("passes", c.passes.load(Ordering::Relaxed) as f64, "passes"),
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
    fn walks_usr() {
        let mut load = FsWalkLoad::new(FsWalkParams::default()).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        positive(&report, "files/s");
        positive(&report, "MB/s searched");
    }

    #[test]
    fn counts_matches_across_chunk_boundaries() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir(tree.path().join("sub")).unwrap();
        // The first read fills the whole buffer (READ_CHUNK + word length): one match
        // straddles its end, one is further on, one is in a .h file that is not searched.
        let mut big = vec![b'x'; READ_CHUNK + "include".len() - 3];
        big.extend_from_slice(b"include");
        big.extend_from_slice(&[b'y'; 100]);
        big.extend_from_slice(b"include");
        std::fs::write(tree.path().join("sub/a.c"), &big).unwrap();
        std::fs::write(tree.path().join("b.h"), b"#include <x.h>").unwrap();
        let params = FsWalkParams { root: tree.path().into(), word: "include".into(), name_suffix: Some(".c".into()) };
        let mut load = FsWalkLoad::new(params).unwrap();
        let report = run_for(&mut load, Duration::from_millis(200));
        let files = report.intensity("files searched").unwrap();
        let passes = report.intensity("passes").unwrap();
        assert!(files >= 1.0 && passes >= 1.0, "{report:?}");
        // Only a.c is searched; each full pass finds exactly its two matches (the last,
        // interrupted pass may find fewer).
        let matches = report.intensity("matches").unwrap();
        assert!(matches >= 2.0 * passes && matches <= 2.0 * (passes + 1.0), "{report:?}");
        assert!(files <= passes + 1.0, "{report:?}");
    }

    #[test]
    fn missing_root_is_a_usage_error() {
        let err =
            FsWalkLoad::new(FsWalkParams { root: "/nonexistent/tree".into(), ..Default::default() }).err().unwrap();
        assert!(err.is_usage_error() && err.to_string().contains("/nonexistent/tree"), "{err}");
        assert!(FsWalkLoad::new(FsWalkParams { word: String::new(), ..Default::default() }).is_err());
    }
}
