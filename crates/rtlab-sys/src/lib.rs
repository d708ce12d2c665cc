//! rtlab-sys: the OS boundary of rtlab, and the only crate that holds `unsafe`.
//!
//! Main types:
//! - [`clock`]: CLOCK_MONOTONIC reads and absolute `clock_nanosleep`, the two calls the
//!   real-time sampling loop makes.
//! - RAII guards that set a system setting and restore the previous one on drop:
//!   [`sched::SchedulingGuard`] (policy/priority of the calling thread),
//!   [`sched::AffinityGuard`] (CPU pinning), [`memory::MemoryLockGuard`] (`mlockall`),
//!   [`pmqos::DmaLatencyGuard`] (`/dev/cpu_dma_latency`), [`slack::TimerSlackGuard`].
//! - [`sysinfo::SystemInfo`]: what the host is (kernel, preemption model, CPUs, governor,
//!   clocksource, virtualization, RT throttling, privileges) and
//!   [`sysinfo::distortions`], the list of what on this host may distort results.
//! - [`activity::ActivitySnapshot`]: /proc counters (interrupts per line, context switches,
//!   CPU time and steal) whose difference describes the system activity during a run.
//! - [`process::ManagedChild`]: a load's command in its own process group under a small
//!   supervisor, so that the command and everything it starts are killed on stop, on drop
//!   and when rtlab itself dies (even by SIGKILL).
//! - [`statvfs::space_of`]: free space of the file system holding a file.
//! - [`filelock::try_lock_exclusive`]: an advisory whole-file lock (one monitor per history).
//! - [`secret::read_private_file`]: a key or token file, read only when no other user can
//!   read or change it.
//! - [`net::UdpReceiver`] and [`icmp::IcmpSocket`]: UDP and raw ICMP sockets with kernel
//!   receive timestamps (the net probe, the second station).

// Every unsafe block must say why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod activity;
pub mod clock;
pub mod filelock;
pub mod icmp;
pub mod ipc;
pub mod memory;
pub mod net;
pub mod pmqos;
pub mod privileges;
pub mod process;
pub mod sched;
pub mod secret;
pub mod slack;
pub mod statvfs;
pub mod sysinfo;
pub mod tracefs;

/// Errors at the OS boundary. Each names the operation so the binary can tell the user
/// what failed and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    #[error("{op}: permission denied ({source})")]
    PermissionDenied {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{op}: {source}")]
    Os {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

impl SysError {
    /// Builds an error from `errno` of the last failed call, classifying EPERM/EACCES.
    pub fn last_os(op: &'static str) -> Self {
        Self::from_io(op, std::io::Error::last_os_error())
    }

    pub fn from_io(op: &'static str, source: std::io::Error) -> Self {
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => Self::PermissionDenied { op, source },
            _ => Self::Os { op, source },
        }
    }

    pub fn is_permission_denied(&self) -> bool {
        matches!(self, Self::PermissionDenied { .. })
    }
}

pub type Result<T> = std::result::Result<T, SysError>;
