//! The machinery shared by in-process loads: worker threads with a common stop flag,
//! CPU-time accounting, early-death detection and rate pacing.

use crate::{Intensity, LoadError, LoadReport};
use rtlab_sys::sched::{AffinityGuard, Policy, SchedulingGuard};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest a worker may go without looking at the stop flag; blocking calls use it as
/// their timeout.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// What a worker's body returns: Ok when asked to stop, Err(reason) when it failed.
pub(crate) type WorkResult = Result<(), String>;

/// A set of worker threads sharing one stop flag.
pub(crate) struct Workers {
    load: String,
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<Duration>>,
    /// First failure of a worker ("thread name: reason"), set before the stop was asked.
    failure: Arc<Mutex<Option<String>>>,
    started: Instant,
}

/// What `Workers::stop` found.
pub(crate) struct Stopped {
    pub duration_s: f64,
    pub cpu_seconds: f64,
    pub died_early: Option<String>,
}

impl Stopped {
    /// The report of a thread-based load: what it `achieved`, with the duration, CPU time
    /// and early death its workers recorded.
    pub fn into_report(self, load: &str, parameters: serde_json::Value, achieved: Vec<Intensity>) -> LoadReport {
        LoadReport {
            name: load.to_string(),
            parameters,
            achieved,
            cpu_seconds: Some(self.cpu_seconds),
            died_early: self.died_early,
            duration_s: self.duration_s,
        }
    }
}

/// Stops the workers of a started load (`stop` of every thread-based load begins here).
pub(crate) fn stop_started(workers: &mut Option<Workers>, load: &str) -> Result<Stopped, LoadError> {
    let mut workers = workers.take().ok_or_else(|| LoadError::state(load, "not started"))?;
    Ok(workers.stop())
}

impl Workers {
    pub fn new(load: &str) -> Self {
        Self {
            load: load.to_string(),
            stop: Arc::new(AtomicBool::new(false)),
            handles: Vec::new(),
            failure: Arc::new(Mutex::new(None)),
            started: Instant::now(),
        }
    }

    /// Resets the start time; call right before spawning the first worker.
    pub fn mark_start(&mut self) {
        self.started = Instant::now();
    }

    /// Spawns a worker running SCHED_OTHER (whatever the caller runs), pinned to `cpu` if
    /// given. `body` must return within [`POLL_INTERVAL`] of the stop flag being set.
    pub fn spawn<F>(&mut self, name: String, cpu: Option<usize>, body: F) -> Result<(), LoadError>
    where
        F: FnOnce(&AtomicBool) -> WorkResult + Send + 'static,
    {
        let stop = self.stop.clone();
        let failure = self.failure.clone();
        let thread_name = name.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), rtlab_sys::SysError>>();
        let handle = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                // Loads never compete with the measuring threads at real-time priority, even
                // when started from a real-time thread. Lowering needs no privilege.
                let _policy = SchedulingGuard::set_current_thread(Policy::Other, 0);
                let pinned = cpu.map(AffinityGuard::pin_current_thread).transpose();
                let _pin = match pinned {
                    Ok(pin) => {
                        let _ = ready_tx.send(Ok(()));
                        pin
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return Duration::ZERO;
                    }
                };
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&stop)));
                let reason = match outcome {
                    Ok(Ok(())) if stop.load(Ordering::Relaxed) => None,
                    Ok(Ok(())) => Some("ended before it was stopped".to_string()),
                    Ok(Err(reason)) => Some(reason),
                    Err(_) => Some("panicked".to_string()),
                };
                if let Some(reason) = reason {
                    let mut first = failure.lock().unwrap_or_else(|p| p.into_inner());
                    first.get_or_insert(format!("{thread_name}: {reason}"));
                }
                rtlab_sys::process::thread_cpu_time()
            })
            .map_err(|e| LoadError::io(&self.load, format!("spawn thread {name}"), e))?;
        self.handles.push(handle);
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(LoadError::sys(&self.load, e)),
            Err(_) => Err(LoadError::state(&self.load, format!("thread {name} ended during set-up"))),
        }
    }

    /// The first worker failure, if any worker failed or ended on its own.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sets the stop flag and joins every worker.
    pub fn stop(&mut self) -> Stopped {
        // The failure is read before the flag is set, so a worker that fails because it
        // was stopped (a peer closed its socket) is not reported as an early death.
        let died_early = self.failure();
        self.stop.store(true, Ordering::Relaxed);
        let duration_s = self.started.elapsed().as_secs_f64();
        let mut cpu = Duration::ZERO;
        for handle in self.handles.drain(..) {
            // A panicking body was caught inside the thread; join fails only if the
            // accounting itself panicked.
            cpu += handle.join().unwrap_or(Duration::ZERO);
        }
        Stopped { duration_s, cpu_seconds: cpu.as_secs_f64(), died_early }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

/// Paces work at `rate` units per second from a start instant, in bursts: a worker asks
/// how many units are due and sleeps (at most [`POLL_INTERVAL`]) when it is ahead.
pub(crate) struct Pacer {
    rate: Option<f64>,
    start: Instant,
}

impl Pacer {
    /// `rate` None: no pacing (as fast as possible).
    pub fn new(rate: Option<f64>) -> Self {
        Self { rate, start: Instant::now() }
    }

    /// Units that may be done now, given `done` so far; sleeps first if none is due.
    /// Returns 0 only after a sleep (the caller then re-checks its stop flag).
    pub fn allowance(&self, done: u64, batch: u64) -> u64 {
        let Some(rate) = self.rate else {
            return batch;
        };
        let due = (self.start.elapsed().as_secs_f64() * rate) as u64;
        if due > done {
            return (due - done).min(batch);
        }
        // Sleep until the next unit is due, in steps that keep the stop flag responsive.
        let next_at = Duration::from_secs_f64((done + 1) as f64 / rate);
        let wait = next_at.saturating_sub(self.start.elapsed()).min(POLL_INTERVAL);
        std::thread::sleep(wait.max(Duration::from_micros(50)));
        0
    }
}

/// True for the errors a socket with a timeout returns when the timeout expired.
pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
}

/// Fills `buf` from `reader` (which has a read timeout), checking `stop` between reads.
/// Ok(false): stopped (or the peer closed the connection while stopping).
pub(crate) fn read_full(reader: &mut impl std::io::Read, buf: &mut [u8], stop: &AtomicBool) -> std::io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        match reader.read(&mut buf[filled..]) {
            Ok(0) => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed by peer"));
            }
            Ok(n) => filled += n,
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Writes all of `buf` to `writer` (which has a write timeout), checking `stop` between
/// writes. Ok(false): stopped.
pub(crate) fn write_full(writer: &mut impl std::io::Write, buf: &[u8], stop: &AtomicBool) -> std::io::Result<bool> {
    let mut written = 0;
    while written < buf.len() {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        match writer.write(&buf[written..]) {
            Ok(0) => return Err(std::io::Error::new(std::io::ErrorKind::WriteZero, "connection closed by peer")),
            Ok(n) => written += n,
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Number of CPUs this process may run on (at least 1).
pub(crate) fn available_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_keeps_the_rate() {
        let pacer = Pacer::new(Some(2000.0));
        let mut done = 0;
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(300) {
            done += pacer.allowance(done, 64);
        }
        // 600 due at 300 ms; sleeping granularity and VM noise allow some slack.
        assert!((400..=700).contains(&done), "{done}");
    }

    #[test]
    fn unpaced_gives_the_batch() {
        assert_eq!(Pacer::new(None).allowance(1_000_000, 32), 32);
    }

    #[test]
    fn worker_failure_is_reported_and_stop_joins() {
        let mut workers = Workers::new("test");
        workers.spawn("fails".into(), None, |_| Err("boom".into())).unwrap();
        workers
            .spawn("loops".into(), None, |stop| {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(())
            })
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while workers.failure().is_none() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(workers.failure().unwrap(), "fails: boom");
        let stopped = workers.stop();
        assert_eq!(stopped.died_early.as_deref(), Some("fails: boom"));
    }

    #[test]
    fn pinning_to_a_missing_cpu_fails_at_spawn() {
        let mut workers = Workers::new("test");
        assert!(workers.spawn("pinned".into(), Some(100_000), |_| Ok(())).is_err());
    }
}
