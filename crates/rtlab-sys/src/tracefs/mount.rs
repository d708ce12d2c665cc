//! Mounting tracefs for a run when the host booted without it (no systemd), and unmounting
//! it again when the run ends: the rtla-like lifecycle (save the state, change it, restore
//! it) applied to the mount itself.
//!
//! - [`TracefsMount::acquire`]: as root, takes the tracing lock (`/run/rtlab-tracefs.lock`,
//!   held shared for the run) and, when no tracefs is mounted, mounts tracefs at
//!   `/sys/kernel/tracing`; where that fails, debugfs at `/sys/kernel/debug` (whose
//!   `tracing/` is tracefs, automounted). Without root it does nothing: the session's check
//!   then says how to mount it by hand.
//! - [`TracefsMount::release`] (and drop): unmounts what this process mounted, unless another
//!   rtlab run holds the lock or a live rtlab process has an instance
//!   (`instances/rtlab-<pid>`) there, or something else keeps the file system busy: then it
//!   stays mounted and the outcome says why.
//! - [`register_emergency_unmount`]: for the second SIGINT/SIGTERM, which exits at once
//!   without running destructors: a signal handler that lazily detaches what this process
//!   mounted (same live-instance check, with async-signal-safe system calls only).

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{instance_pid, pid_alive, tracefs_root, TraceError, NOT_MOUNTED};

/// What this process mounted, for the emergency handler: 0 nothing, else a [`MountKind`].
static MOUNTED: AtomicU8 = AtomicU8::new(0);

/// What rtlab mounted to reach tracefs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountKind {
    /// tracefs at `/sys/kernel/tracing`.
    Tracefs,
    /// debugfs at `/sys/kernel/debug` (tracefs automounted at its `tracing/`).
    Debugfs,
}

impl MountKind {
    fn code(self) -> u8 {
        match self {
            MountKind::Tracefs => 1,
            MountKind::Debugfs => 2,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(MountKind::Tracefs),
            2 => Some(MountKind::Debugfs),
            _ => None,
        }
    }

    /// The mount point rtlab mounted.
    pub fn target(self) -> &'static str {
        match self {
            MountKind::Tracefs => "/sys/kernel/tracing",
            MountKind::Debugfs => "/sys/kernel/debug",
        }
    }

    fn target_c(self) -> &'static CStr {
        match self {
            MountKind::Tracefs => c"/sys/kernel/tracing",
            MountKind::Debugfs => c"/sys/kernel/debug",
        }
    }

    /// The file system type mounted.
    pub fn fstype(self) -> &'static str {
        match self {
            MountKind::Tracefs => "tracefs",
            MountKind::Debugfs => "debugfs",
        }
    }

    /// The tracefs root this mount gives.
    fn tracing_dir(self) -> &'static str {
        match self {
            MountKind::Tracefs => "/sys/kernel/tracing",
            MountKind::Debugfs => "/sys/kernel/debug/tracing",
        }
    }

    fn instances_c(self) -> &'static CStr {
        match self {
            MountKind::Tracefs => c"/sys/kernel/tracing/instances",
            MountKind::Debugfs => c"/sys/kernel/debug/tracing/instances",
        }
    }

    /// What was mounted, in words: "tracefs at /sys/kernel/tracing".
    pub fn describe(self) -> String {
        match self {
            MountKind::Tracefs => "tracefs at /sys/kernel/tracing".into(),
            MountKind::Debugfs => "debugfs at /sys/kernel/debug (tracefs at /sys/kernel/debug/tracing)".into(),
        }
    }
}

/// How [`TracefsMount::release`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Release {
    /// Unmounted.
    Unmounted(MountKind),
    /// Left mounted, with the reason (another rtlab still traces; busy).
    LeftMounted(MountKind, String),
}

/// A tracefs mount made by this process; see the module documentation.
#[derive(Debug)]
pub struct TracefsMount {
    /// What this process mounted.
    kind: Option<MountKind>,
    /// The tracing lock, held shared.
    lock: Option<File>,
    released: bool,
}

fn errno_text(e: std::io::Error) -> String {
    e.to_string()
}

fn mount(source: &CStr, target: &CStr, fstype: &CStr) -> Result<(), std::io::Error> {
    // SAFETY: the three arguments are NUL-terminated strings that live across the call; no
    // data argument is passed (null is allowed for tracefs and debugfs).
    let rc = unsafe { libc::mount(source.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn umount(target: &CStr, flags: libc::c_int) -> Result<(), std::io::Error> {
    // SAFETY: `target` is a NUL-terminated string that lives across the call.
    let rc = unsafe { libc::umount2(target.as_ptr(), flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether `path` is a mount point of file system type `fstype` (/proc/mounts).
pub fn is_mounted(path: &str, fstype: &str) -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(path) && l.split_whitespace().nth(2) == Some(fstype))
}

/// Live rtlab processes other than this one with an instance under `tracing_dir`.
pub fn other_tracing_pids(tracing_dir: &Path) -> Vec<u32> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir(tracing_dir.join("instances")) else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(instance_pid))
        .filter(|&pid| pid != own && pid_alive(pid))
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The lock file that orders rtlab processes around mounting and unmounting: each `--split`
/// run as root holds it shared from its mount check to its end; mounting takes it
/// exclusively, and so does unmounting, without waiting (held shared by another run: that
/// run uses tracefs, which then stays mounted).
fn lock_path() -> &'static str {
    if Path::new("/run").is_dir() {
        "/run/rtlab-tracefs.lock"
    } else {
        "/tmp/rtlab-tracefs.lock"
    }
}

/// The lock file's descriptor while this process holds it, for the emergency handler.
static LOCK_FD: AtomicI32 = AtomicI32::new(-1);

use crate::filelock::flock;

impl TracefsMount {
    /// For a `--split` run: as root, takes the tracing lock (shared, held until release or
    /// drop) and mounts tracefs when none is mounted. Not root: nothing (the session's check
    /// then says how to mount it by hand). An error says what failed and the command to run
    /// by hand.
    pub fn acquire() -> Result<Self, TraceError> {
        let mut this = Self { kind: None, lock: None, released: false };
        if crate::privileges::current().euid != 0 {
            return Ok(this);
        }
        // No lock file (read-only /run and /tmp): go on unlocked, the instance check remains.
        let lock =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(lock_path()).ok();
        if let Some(file) = &lock {
            // Shared: waits only while another run mounts or unmounts.
            let _ = flock(file, libc::LOCK_SH);
        }
        let mut mounted = Ok(None);
        if tracefs_root().is_none() {
            if let Some(file) = &lock {
                // Exclusive to mount, without waiting on a run that holds the lock shared for
                // its whole length (tracefs unmounted by hand under it): 10 s at most.
                let deadline = Instant::now() + Duration::from_secs(10);
                while flock(file, libc::LOCK_EX | libc::LOCK_NB).is_err() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            // Another run may have mounted it meanwhile.
            if tracefs_root().is_none() {
                mounted = mount_tracing().map(Some);
            }
            if let Some(file) = &lock {
                // Downgrade: other runs may start (and use this mount) while this one runs.
                let _ = flock(file, libc::LOCK_SH);
            }
        }
        if let Some(file) = &lock {
            LOCK_FD.store(file.as_raw_fd(), Ordering::SeqCst);
        }
        this.lock = lock;
        this.kind = mounted?;
        if let Some(kind) = this.kind {
            MOUNTED.store(kind.code(), Ordering::SeqCst);
        }
        Ok(this)
    }

    /// What this process mounted, if anything.
    pub fn kind(&self) -> Option<MountKind> {
        self.kind
    }

    /// Unmounts what was mounted, unless another rtlab run holds the tracing lock or has a
    /// live instance there, or the file system stays busy (retried for 2 s); then releases
    /// the lock. None: this process mounted nothing (or released already).
    pub fn release(&mut self) -> Option<Release> {
        if self.released {
            return None;
        }
        self.released = true;
        // From here on the emergency handler leaves it alone.
        MOUNTED.store(0, Ordering::SeqCst);
        let outcome = self.kind.map(|kind| self.unmount(kind));
        LOCK_FD.store(-1, Ordering::SeqCst);
        // Closing the file releases the lock.
        self.lock = None;
        outcome
    }

    fn unmount(&self, kind: MountKind) -> Release {
        if let Some(file) = &self.lock {
            if flock(file, libc::LOCK_EX | libc::LOCK_NB).is_err() {
                return Release::LeftMounted(kind, "another rtlab run still uses it".into());
            }
        }
        let others = other_tracing_pids(Path::new(kind.tracing_dir()));
        if !others.is_empty() {
            let pids: Vec<String> = others.iter().map(u32::to_string).collect();
            return Release::LeftMounted(
                kind,
                format!("another rtlab process (pid {}) still traces there", pids.join(", ")),
            );
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let result = match kind {
                MountKind::Tracefs => umount(kind.target_c(), 0),
                MountKind::Debugfs => {
                    unmount_debugfs_tracing(0);
                    umount(kind.target_c(), 0)
                }
            };
            match result {
                Ok(()) => return Release::Unmounted(kind),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Release::LeftMounted(kind, format!("unmounting failed: {e}")),
            }
        }
    }
}

/// Mounts tracefs (debugfs as the fallback); what it mounted, or why each attempt failed.
fn mount_tracing() -> Result<MountKind, TraceError> {
    let mut failures = Vec::new();
    if Path::new(MountKind::Tracefs.target()).is_dir() {
        match mount(c"nodev", MountKind::Tracefs.target_c(), c"tracefs") {
            Ok(()) if Path::new(MountKind::Tracefs.tracing_dir()).join("events").is_dir() => {
                return Ok(MountKind::Tracefs);
            }
            Ok(()) => {
                let _ = umount(MountKind::Tracefs.target_c(), 0);
                failures.push("tracefs mounted at /sys/kernel/tracing has no events/".to_string());
            }
            Err(e) => failures.push(format!("mounting tracefs at /sys/kernel/tracing: {}", errno_text(e))),
        }
    } else {
        failures.push("/sys/kernel/tracing does not exist".into());
    }
    // The fallback of older kernels: debugfs, whose tracing/ is tracefs.
    if Path::new(MountKind::Debugfs.target()).is_dir() && !is_mounted(MountKind::Debugfs.target(), "debugfs") {
        match mount(c"debugfs", MountKind::Debugfs.target_c(), c"debugfs") {
            Ok(()) if Path::new(MountKind::Debugfs.tracing_dir()).join("events").is_dir() => {
                return Ok(MountKind::Debugfs);
            }
            Ok(()) => {
                unmount_debugfs(0);
                failures.push("debugfs mounted at /sys/kernel/debug has no tracing/events".to_string());
            }
            Err(e) => failures.push(format!("mounting debugfs at /sys/kernel/debug: {}", errno_text(e))),
        }
    }
    Err(TraceError::Unsupported(format!("{NOT_MOUNTED}; rtlab could not mount it: {}", failures.join("; "))))
}

impl Drop for TracefsMount {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// The tracefs automounted under debugfs' `tracing/`, if mounted.
fn unmount_debugfs_tracing(flags: libc::c_int) {
    let _ = umount(c"/sys/kernel/debug/tracing", flags);
}

fn unmount_debugfs(flags: libc::c_int) {
    unmount_debugfs_tracing(flags);
    let _ = umount(MountKind::Debugfs.target_c(), flags);
}

/// Registers a handler for `signal` that, when the signal arrives while `armed` is set (the
/// run's stop flag: this is the second signal, which ends the process at once), lazily
/// unmounts what this process mounted, unless another live rtlab process has an instance
/// there. Register it before the handler that exits, so that it runs first.
pub fn register_emergency_unmount(signal: libc::c_int, armed: Arc<AtomicBool>) -> Result<(), std::io::Error> {
    let action = move || {
        if armed.load(Ordering::SeqCst) {
            emergency_unmount();
        }
    };
    // SAFETY: the action is async-signal-safe: it reads atomics and makes only the system
    // calls open, getdents64, close, getpid, kill and umount2, on stack buffers and static
    // strings; it neither allocates nor takes locks.
    unsafe { signal_hook::low_level::register(signal, action) }.map(|_| ())
}

/// The signal handler's unmount: async-signal-safe (see [`register_emergency_unmount`]).
fn emergency_unmount() {
    let Some(kind) = MountKind::from_code(MOUNTED.swap(0, Ordering::SeqCst)) else { return };
    let lock = LOCK_FD.load(Ordering::SeqCst);
    // SAFETY: flock on the lock file's descriptor (still open: the process is running);
    // async-signal-safe. Held shared by another run: it uses tracefs.
    if lock >= 0 && unsafe { libc::flock(lock, libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return;
    }
    if other_rtlab_alive_signal_safe(kind.instances_c()) {
        return;
    }
    // MNT_DETACH: the reader of the running session still holds its files open.
    if kind == MountKind::Debugfs {
        // SAFETY: a static NUL-terminated path; umount2 is async-signal-safe.
        unsafe { libc::umount2(c"/sys/kernel/debug/tracing".as_ptr(), libc::MNT_DETACH) };
    }
    // SAFETY: a static NUL-terminated path; umount2 is async-signal-safe.
    unsafe { libc::umount2(kind.target_c().as_ptr(), libc::MNT_DETACH) };
}

/// Writes "0" to `<name>/tracing_on` under the directory `dir_fd`, without allocating: the
/// instance of a process that exits at once stays (its reader's files are open until the
/// exit), but records nothing until the next rtlab removes it as stale.
fn stop_own_instance(dir_fd: libc::c_int, name: &[u8]) {
    const SUFFIX: &[u8] = b"/tracing_on\0";
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let mut path = [0u8; 128];
    let (Some(stem), Some(head)) = (name.get(..len), path.get_mut(..len)) else { return };
    head.copy_from_slice(stem);
    let Some(rest) = path.get_mut(len..len + SUFFIX.len()) else { return };
    rest.copy_from_slice(SUFFIX);
    // SAFETY: `path` is NUL-terminated (SUFFIX ends with NUL) and lives across the call;
    // openat is async-signal-safe.
    let fd = unsafe { libc::openat(dir_fd, path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return;
    }
    // SAFETY: writes one byte from a static buffer to the descriptor opened above, then
    // closes it once; both calls are async-signal-safe.
    unsafe {
        libc::write(fd, b"0".as_ptr().cast(), 1);
        libc::close(fd);
    }
}

/// Whether `instances` holds `rtlab-<pid>[-<n>]` of a live process other than this one,
/// with system calls only (no allocation); this process' own instances stop recording.
/// Unreadable: false.
fn other_rtlab_alive_signal_safe(instances: &CStr) -> bool {
    // SAFETY: getpid has no arguments and is async-signal-safe.
    let own = unsafe { libc::getpid() };
    // SAFETY: a NUL-terminated path; open is async-signal-safe.
    let fd = unsafe { libc::open(instances.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 4096];
    let mut found = false;
    'outer: loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`, which outlives the
        // call; `fd` is an open directory.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            break;
        }
        let end = usize::try_from(n).unwrap_or(0).min(buf.len());
        let mut off = 0usize;
        // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name.
        while off + 19 < end {
            let reclen = match (buf.get(off + 16), buf.get(off + 17)) {
                (Some(&lo), Some(&hi)) => usize::from(u16::from_ne_bytes([lo, hi])),
                _ => break,
            };
            if reclen == 0 {
                break;
            }
            let name = buf.get(off + 19..(off + reclen).min(end)).unwrap_or_default();
            if let Some(pid) = rtlab_pid_of_name(name) {
                if pid == own {
                    stop_own_instance(fd, name);
                } else {
                    // SAFETY: signal 0 only checks that the process exists.
                    let alive = unsafe { libc::kill(pid, 0) } == 0
                        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
                    if alive {
                        found = true;
                        break 'outer;
                    }
                }
            }
            off += reclen;
        }
    }
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    found
}

/// The pid of a NUL-terminated `rtlab-<pid>` or `rtlab-<pid>-<n>` name, without allocating.
fn rtlab_pid_of_name(name: &[u8]) -> Option<libc::pid_t> {
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let rest = name.get(..len)?.strip_prefix(b"rtlab-")?;
    let digits_end = rest.iter().position(|&b| b == b'-').unwrap_or(rest.len());
    let (digits, suffix) = rest.split_at(digits_end);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if let Some(n) = suffix.strip_prefix(b"-") {
        if n.is_empty() || !n.iter().all(u8::is_ascii_digit) {
            return None;
        }
    } else if !suffix.is_empty() {
        return None;
    }
    let mut pid: libc::pid_t = 0;
    for &d in digits {
        pid = pid.checked_mul(10)?.checked_add(libc::pid_t::from(d - b'0'))?;
    }
    Some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_names_give_pids_without_allocating() {
        assert_eq!(rtlab_pid_of_name(b"rtlab-123\0junk"), Some(123));
        assert_eq!(rtlab_pid_of_name(b"rtlab-123-2\0"), Some(123));
        assert_eq!(rtlab_pid_of_name(b"rtlab-12"), Some(12));
        assert_eq!(rtlab_pid_of_name(b"rtlab-\0"), None);
        assert_eq!(rtlab_pid_of_name(b"rtlab-12-\0"), None);
        assert_eq!(rtlab_pid_of_name(b"rtlab-12x\0"), None);
        assert_eq!(rtlab_pid_of_name(b"other-12\0"), None);
        assert_eq!(rtlab_pid_of_name(b"rtlab-99999999999999\0"), None);
    }

    #[test]
    fn mount_kinds_name_their_paths() {
        for kind in [MountKind::Tracefs, MountKind::Debugfs] {
            assert_eq!(MountKind::from_code(kind.code()), Some(kind));
            assert_eq!(kind.target_c().to_str().unwrap(), kind.target());
            assert!(kind.instances_c().to_str().unwrap().starts_with(kind.tracing_dir()));
            assert!(kind.describe().contains(kind.fstype()));
        }
        assert_eq!(MountKind::from_code(0), None);
    }
}
