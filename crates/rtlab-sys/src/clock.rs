//! Clock reads and absolute sleeps on CLOCK_MONOTONIC, and the calling thread's CPU time,
//! in integer nanoseconds.

/// Result of an absolute sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepOutcome {
    /// The deadline passed and the thread woke up.
    Expired,
    /// A signal interrupted the sleep before the deadline (EINTR).
    Interrupted,
}

const NS_PER_S: u64 = 1_000_000_000;

#[inline]
fn ns_to_timespec(ns: u64) -> libc::timespec {
    // Saturate rather than wrap: a deadline beyond time_t is "never" in practice.
    let secs = ns / NS_PER_S;
    libc::timespec {
        tv_sec: libc::time_t::try_from(secs).unwrap_or(libc::time_t::MAX),
        tv_nsec: (ns % NS_PER_S) as libc::c_long,
    }
}

/// `clock_gettime(clock)` in ns, for clocks that always exist on Linux (the call cannot
/// fail) and are never negative.
#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes into it.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    (ts.tv_sec as u64) * NS_PER_S + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC now, in ns. One `clock_gettime` (vDSO) call, no allocation.
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has consumed, in ns (CLOCK_THREAD_CPUTIME_ID): time it ran,
/// not time it waited or was preempted. A task-set job is busy until this has advanced by
/// its C, so preemption by higher-priority tasks is not counted as execution. One
/// `clock_gettime` (a system call for this clock), no allocation.
#[inline]
pub fn thread_cpu_time_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Maps the error number `clock_nanosleep` returns (it does not use errno) to an outcome.
#[inline]
fn nanosleep_outcome(rc: libc::c_int, op: &'static str) -> crate::Result<SleepOutcome> {
    match rc {
        0 => Ok(SleepOutcome::Expired),
        libc::EINTR => Ok(SleepOutcome::Interrupted),
        e => Err(crate::SysError::from_io(op, std::io::Error::from_raw_os_error(e))),
    }
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline)`. Returns `Interrupted` on EINTR
/// (the caller decides whether to sleep again), an error for anything else.
#[inline]
pub fn sleep_until_monotonic_ns(deadline_ns: u64) -> crate::Result<SleepOutcome> {
    let ts = ns_to_timespec(deadline_ns);
    // SAFETY: `ts` is valid for the call; a null remainder is allowed (unused with TIMER_ABSTIME).
    let rc = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    nanosleep_outcome(rc, "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)")
}

/// Relative `nanosleep(duration)`; returns on expiry or EINTR like [`sleep_until_monotonic_ns`].
#[inline]
pub fn sleep_relative_ns(duration_ns: u64) -> crate::Result<SleepOutcome> {
    let ts = ns_to_timespec(duration_ns);
    // The caller re-reads the clock after EINTR, so the remainder is not needed.
    // SAFETY: `ts` is valid for the call; a null remainder pointer is allowed.
    let rc = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
    nanosleep_outcome(rc, "clock_nanosleep(CLOCK_MONOTONIC)")
}

/// Resolution of CLOCK_MONOTONIC reported by `clock_getres`, in ns.
pub fn monotonic_resolution_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe {
        libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts);
    }
    (ts.tv_sec as u64) * NS_PER_S + ts.tv_nsec as u64
}

/// The signal used to cut a sampling thread's sleep short when a stop is requested.
pub const WAKE_SIGNAL: libc::c_int = libc::SIGUSR2;

extern "C" fn ignore_wake_signal(_: libc::c_int) {}

/// Installs a handler for [`WAKE_SIGNAL`] that does nothing, so that the signal interrupts
/// `clock_nanosleep` (which is never restarted after a handler, whatever SA_RESTART says)
/// instead of killing the process. Idempotent.
pub fn install_wake_handler() -> crate::Result<()> {
    // SAFETY: sigaction is plain data; zeroed is a valid starting value, and sigemptyset
    // initialises the mask it points to.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = ignore_wake_signal as *const () as libc::sighandler_t;
    action.sa_flags = 0;
    // SAFETY: `action.sa_mask` is valid and writable.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: `action` is fully initialised; the handler is async-signal-safe (it does nothing).
    if unsafe { libc::sigaction(WAKE_SIGNAL, &action, std::ptr::null_mut()) } != 0 {
        return Err(crate::SysError::last_os("sigaction(SIGUSR2)"));
    }
    Ok(())
}

/// Sends [`WAKE_SIGNAL`] to one thread of this process (its sleep returns EINTR).
/// [`install_wake_handler`] must have been called first.
pub fn wake_thread(thread: libc::pthread_t) -> crate::Result<()> {
    // SAFETY: pthread_kill takes a thread id of this process; a thread that has already
    // exited but is not yet joined is still a valid id.
    let rc = unsafe { libc::pthread_kill(thread, WAKE_SIGNAL) };
    if rc != 0 {
        return Err(crate::SysError::from_io("pthread_kill", std::io::Error::from_raw_os_error(rc)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_does_not_go_back() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(a > 0);
        assert!(b >= a);
    }

    #[test]
    fn sleep_until_future_deadline_expires_after_it() {
        let deadline = monotonic_ns() + 2_000_000;
        let outcome = sleep_until_monotonic_ns(deadline).unwrap();
        // A signal is possible in principle; only an expiry guarantees the deadline passed.
        if outcome == SleepOutcome::Expired {
            assert!(monotonic_ns() >= deadline);
        }
    }

    #[test]
    fn sleep_until_past_deadline_returns_at_once() {
        let deadline = monotonic_ns().saturating_sub(1_000_000);
        assert_eq!(sleep_until_monotonic_ns(deadline).unwrap(), SleepOutcome::Expired);
    }

    #[test]
    fn sleep_relative_sleeps_at_least_duration() {
        let start = monotonic_ns();
        let outcome = sleep_relative_ns(1_000_000).unwrap();
        if outcome == SleepOutcome::Expired {
            assert!(monotonic_ns() - start >= 1_000_000);
        }
    }

    #[test]
    fn thread_cpu_time_counts_running_not_sleeping() {
        let start = thread_cpu_time_ns();
        // Busy for 2 ms of wall time: at least some CPU time is consumed.
        let wall = monotonic_ns();
        while monotonic_ns() - wall < 2_000_000 {}
        let busy = thread_cpu_time_ns() - start;
        assert!(busy > 0);
        // Sleeping 20 ms consumes (almost) none: far less than the sleep.
        let before = thread_cpu_time_ns();
        let _ = sleep_relative_ns(20_000_000);
        assert!(thread_cpu_time_ns() - before < 20_000_000);
    }

    #[test]
    fn resolution_is_positive() {
        let r = monotonic_resolution_ns();
        assert!(r >= 1);
    }

    #[test]
    fn timespec_conversion() {
        let ts = ns_to_timespec(3_000_000_007);
        assert_eq!(ts.tv_sec, 3);
        assert_eq!(ts.tv_nsec, 7);
    }

    #[test]
    fn nanosleep_error_codes() {
        assert_eq!(nanosleep_outcome(0, "x").unwrap(), SleepOutcome::Expired);
        assert_eq!(nanosleep_outcome(libc::EINTR, "x").unwrap(), SleepOutcome::Interrupted);
        assert!(nanosleep_outcome(libc::EINVAL, "x").is_err());
        assert!(nanosleep_outcome(libc::EPERM, "x").unwrap_err().is_permission_denied());
    }
}
