//! Memory locking and stack prefaulting, so the sampling loop never page-faults.

/// `mlockall(MCL_CURRENT | MCL_FUTURE)`; `munlockall` on drop.
#[derive(Debug)]
pub struct MemoryLockGuard {
    _private: (),
}

impl MemoryLockGuard {
    pub fn lock_all() -> crate::Result<Self> {
        // SAFETY: mlockall takes only flags and touches no memory of ours.
        let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
        if rc != 0 {
            return Err(crate::SysError::last_os("mlockall(MCL_CURRENT|MCL_FUTURE)"));
        }
        Ok(Self { _private: () })
    }
}

impl Drop for MemoryLockGuard {
    fn drop(&mut self) {
        // Failure only leaves pages locked, so the return value is ignored (Drop must not panic).
        // SAFETY: munlockall takes no arguments and touches no memory of ours.
        unsafe {
            libc::munlockall();
        }
    }
}

/// Size of the frame each prefault step touches.
const PREFAULT_CHUNK: usize = 8 * 1024;
/// Upper bound so a mistaken request cannot overflow the stack (default threads get 2 MiB).
const PREFAULT_MAX: usize = 512 * 1024;

/// Touches `bytes` of the calling thread's stack so its pages are resident before sampling.
pub fn prefault_stack(bytes: usize) {
    let chunks = bytes.min(PREFAULT_MAX).div_ceil(PREFAULT_CHUNK);
    if chunks > 0 {
        touch_frames(chunks);
    }
}

/// One 8 KiB frame per level: each recursion places a new buffer deeper on the stack.
/// `black_box` keeps the writes and stops the compiler from turning this into a loop
/// that would reuse one frame.
#[inline(never)]
fn touch_frames(remaining: usize) {
    let mut buf = [0u8; PREFAULT_CHUNK];
    // Write one byte per (small) page so every page is faulted in.
    for i in (0..PREFAULT_CHUNK).step_by(1024) {
        buf[i] = 1;
    }
    std::hint::black_box(&mut buf);
    if remaining > 1 {
        touch_frames(remaining - 1);
    }
    std::hint::black_box(&buf);
}

/// Peak resident set size of this process (VmHWM from /proc/self/status), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_status_kib(&text, "VmHWM")
}

/// Value of a "Key:   1234 kB" line of /proc/<pid>/status, in KiB.
pub fn parse_status_kib(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        v.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vmhwm() {
        let status = "Name:\tcat\nVmPeak:\t    8000 kB\nVmHWM:\t    2204 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_status_kib(status, "VmHWM"), Some(2204));
        assert_eq!(parse_status_kib(status, "VmRSS"), Some(1000));
        assert_eq!(parse_status_kib(status, "VmSwap"), None);
        assert_eq!(parse_status_kib("VmHWM:\tjunk kB\n", "VmHWM"), None);
    }

    #[test]
    fn peak_rss_is_readable() {
        assert!(peak_rss_kib().unwrap() > 0);
    }

    #[test]
    fn prefault_stack_runs_and_raises_peak_rss() {
        prefault_stack(0);
        prefault_stack(1);
        // Runs on a fresh thread so the test's own stack use does not hide the effect.
        let peak = std::thread::spawn(|| {
            prefault_stack(10 * 1024 * 1024); // capped, must not overflow
            peak_rss_kib()
        })
        .join()
        .unwrap();
        assert!(peak.unwrap() > 0);
    }

    #[test]
    fn lock_all_then_unlock() {
        match MemoryLockGuard::lock_all() {
            Ok(guard) => drop(guard),
            Err(e) => assert!(e.is_permission_denied() || matches!(e, crate::SysError::Os { .. }), "{e}"),
        }
    }
}
