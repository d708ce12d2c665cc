//! Scratch directories of the loads that write files (`disk`, `compress`, `compile`).
//!
//! A scratch directory is named `rtlab-load-<load>-<pid>-<random>` so that one left behind
//! by a killed rtlab (SIGKILL runs no destructor) can be recognised and removed by the next
//! run: [`remove_stale_scratch`].

use crate::LoadError;
use std::path::{Path, PathBuf};

const PREFIX: &str = "rtlab-load-";

/// Where loads put their scratch directories unless a load's `parent` says otherwise.
static DEFAULT_PARENT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets the default parent of scratch directories (`rtlab run --scratch DIR`) for loads built
/// afterwards; the first call wins. Without it, the system's temporary directory.
pub fn set_default_scratch_parent(parent: PathBuf) {
    let _ = DEFAULT_PARENT.set(parent);
}

/// The default parent of scratch directories.
pub fn default_parent() -> PathBuf {
    DEFAULT_PARENT.get().cloned().unwrap_or_else(std::env::temp_dir)
}

/// Checks, before anything runs, that a scratch directory can be created under `parent`.
pub(crate) fn check_parent(load: &str, parent: &Path) -> Result<(), LoadError> {
    let meta = std::fs::metadata(parent)
        .map_err(|e| LoadError::config(load, format!("scratch directory {}: {e}", parent.display())))?;
    if !meta.is_dir() {
        return Err(LoadError::config(load, format!("scratch directory {} is not a directory", parent.display())));
    }
    // Permission bits say nothing to root and nothing about read-only mounts: try it.
    let probe = create(load, parent).map_err(|e| match e {
        LoadError::Io { source, .. } => {
            LoadError::config(load, format!("scratch directory {} is not writable: {source}", parent.display()))
        }
        other => other,
    })?;
    probe.close().map_err(|e| LoadError::io(load, format!("remove {}", parent.display()), e))
}

/// Creates this process's scratch directory for `load` under `parent`.
pub(crate) fn create(load: &str, parent: &Path) -> Result<tempfile::TempDir, LoadError> {
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{load}-{}-", std::process::id()))
        .tempdir_in(parent)
        .map_err(|e| LoadError::io(load, format!("create a scratch directory in {}", parent.display()), e))
}

/// The pid in a scratch directory name, if the name is one of ours.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    // "<load>-<pid>-<random>": the load name may itself contain '-'.
    let mut parts = rest.rsplitn(3, '-');
    let _random = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let _load = parts.next()?;
    Some(pid)
}

/// True if `pid` exists and is not a zombie (a killed rtlab stays a zombie for as long as
/// its parent does not reap it, and some container inits never do). A reused pid keeps the
/// directory: removing too little is the safe mistake.
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => rtlab_sys::process::parse_proc_stat_line(&text).is_some_and(|p| p.state != 'Z'),
        Err(_) => false,
    }
}

/// Removes a load's scratch directory when it is stopped, if it made one.
pub(crate) fn remove(load: &str, dir: Option<tempfile::TempDir>) -> Result<(), LoadError> {
    if let Some(dir) = dir {
        let shown = dir.path().display().to_string();
        dir.close().map_err(|e| LoadError::io(load, format!("remove scratch directory {shown}"), e))?;
    }
    Ok(())
}

/// Removes scratch directories under `parent` whose rtlab process no longer exists (it was
/// killed before it could clean up). Returns the directories removed.
pub fn remove_stale_scratch(parent: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(parent)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        let alive = pid == std::process::id() || process_alive(pid);
        if !alive && entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
            removed.push(entry.path());
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_owner_pids() {
        assert_eq!(owner_pid("rtlab-load-disk-1234-AbC123"), Some(1234));
        assert_eq!(owner_pid("rtlab-load-udp-flood-77-x"), Some(77));
        assert_eq!(owner_pid("rtlab-load-disk-x-y"), None);
        assert_eq!(owner_pid("other-1-2"), None);
    }

    #[test]
    fn removes_only_dead_owners() {
        let parent = tempfile::tempdir().unwrap();
        // Pid numbers above pid_max (at most 2^22) never belong to a live process.
        let dead = parent.path().join("rtlab-load-disk-99999999-abc");
        let ours = parent.path().join(format!("rtlab-load-disk-{}-abc", std::process::id()));
        let other = parent.path().join("unrelated");
        for dir in [&dead, &ours, &other] {
            std::fs::create_dir(dir).unwrap();
        }
        std::fs::write(dead.join("data"), b"x").unwrap();
        assert_eq!(remove_stale_scratch(parent.path()).unwrap(), vec![dead.clone()]);
        assert!(!dead.exists() && ours.exists() && other.exists());
    }

    #[test]
    fn a_zombie_owner_is_dead() {
        let parent = tempfile::tempdir().unwrap();
        // A child that exited and was not reaped yet: a zombie, as a SIGKILLed rtlab is
        // under an init that does not reap.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dir = parent.path().join(format!("rtlab-load-disk-{}-abc", child.id()));
        std::fs::create_dir(&dir).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process_alive(child.id()) {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(remove_stale_scratch(parent.path()).unwrap(), vec![dir]);
        child.wait().unwrap();
    }

    #[test]
    fn unusable_parents_are_config_errors() {
        let file = tempfile::NamedTempFile::new().unwrap();
        for parent in [Path::new("/nonexistent/rtlab"), Path::new("/proc"), file.path()] {
            let err = check_parent("disk", parent).unwrap_err();
            assert!(err.is_usage_error(), "{parent:?}: {err}");
            assert!(err.to_string().contains(&parent.display().to_string()), "{err}");
        }
        check_parent("disk", &std::env::temp_dir()).unwrap();
    }
}
