//! Managed child processes for the loads: a command runs in its own process group, and
//! nothing it starts outlives rtlab, even when rtlab is killed with SIGKILL.
//!
//! Why a supervisor: `PR_SET_PDEATHSIG` only reaches the direct child, and the kernel clears
//! it on fork. A command that forks (`sh -c`, `make`, `cc`, `stress-ng`) would leave its
//! descendants running after a `kill -9` of rtlab. So [`ManagedChild::spawn`] forks a small
//! supervisor that never execs and forks the command:
//!
//! ```text
//! rtlab ── supervisor S  (own process group, child subreaper, SCHED_OTHER)
//!             └── command C  (process group C: C and everything it starts; PDEATHSIG=SIGKILL)
//! ```
//!
//! S is outside the command's group, so signals to the group never reach it. It reaps C and,
//! as a child subreaper, every orphaned descendant (no zombies are left to an init that may
//! not reap them). It reports C's pid and wait status to rtlab over a datagram socket, and it
//! kills the whole group with SIGKILL as soon as rtlab disappears (`PR_SET_PDEATHSIG` wakes
//! it; a 100 ms `getppid` poll is the backstop, because PDEATHSIG fires when the *thread*
//! that spawned S exits, not the process). When C exits by itself, S sends SIGTERM to what
//! C left in its group, then SIGKILL after [`LEFTOVER_GRACE`], and exits once it has no
//! descendants left.
//!
//! Costs to know: S is a fork of rtlab kept alive for the load's lifetime, so pages of
//! rtlab that exist at spawn time are shared copy-on-write, and rtlab's first write to each
//! of them afterwards takes a page fault. Start loads before allocating and prefaulting the
//! measuring threads' memory. S and C run SCHED_OTHER whatever the spawning thread runs.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Time S gives what the command left in its group to leave after SIGTERM, once the
/// command itself has exited.
pub const LEFTOVER_GRACE: Duration = Duration::from_millis(500);

/// How long `stop` waits for the supervisor after the group was sent SIGKILL. S reaps a
/// killed group in milliseconds; only a process stuck in uninterruptible sleep (D state)
/// holds it longer.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Grace before SIGKILL when a [`ManagedChild`] is dropped without `stop`.
const DROP_GRACE: Duration = Duration::from_millis(200);

/// How often `stop` looks at the supervisor while waiting.
const POLL: Duration = Duration::from_millis(5);

/// Record tags on the report socket: (tag, value) as two native-endian i32.
const TAG_PID: i32 = 1;
const TAG_STATUS: i32 = 2;

/// Exit code of S when rtlab was gone before S could arm PDEATHSIG.
const EXIT_ORPHANED: i32 = 125;

/// How a stopped command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopOutcome {
    /// Wait status of the command itself (the direct child of the supervisor). None only
    /// if the supervisor died without reporting it (it was killed from outside).
    pub status: Option<ExitStatus>,
    /// The command had exited before `stop` was called.
    pub exited_before_stop: bool,
    /// The group did not leave within the grace time and was sent SIGKILL.
    pub killed: bool,
    /// User + system CPU time of the command and every descendant the supervisor reaped.
    pub cpu_time: Option<Duration>,
}

/// A command running in its own process group under a supervisor (see the module docs).
///
/// `stop` ends it (SIGTERM to the group, SIGKILL after a grace time, reap); dropping a
/// `ManagedChild` does the same with a short grace and never panics.
#[derive(Debug)]
pub struct ManagedChild {
    /// The supervisor S; never `wait`ed through std (S is reaped with `wait4` for its rusage).
    supervisor: Child,
    /// Pid of the command C, which is also its process group id.
    pid: i32,
    program: String,
    report: UnixDatagram,
    /// Wait status of C, once S reported it.
    status: Option<ExitStatus>,
    /// Wait status and CPU time of S, once reaped.
    reaped: Option<(ExitStatus, Duration)>,
    /// Result of the first `stop`, returned again by later calls.
    outcome: Option<StopOutcome>,
}

impl ManagedChild {
    /// Spawns `command` in a new process group under a supervisor.
    ///
    /// Stdio, environment and working directory are those set on `command`. A program that
    /// cannot be executed gives an error naming it. Do not set `process_group` or `pre_exec`
    /// on `command`: the supervisor takes care of both.
    pub fn spawn(mut command: Command) -> crate::Result<Self> {
        let program = command.get_program().to_string_lossy().into_owned();
        let (report, report_child_end) =
            UnixDatagram::pair().map_err(|e| crate::SysError::from_io("socketpair for the load supervisor", e))?;
        let report_fd = report_child_end.as_raw_fd();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        command.process_group(0);
        // SAFETY: the closure runs in the forked child of a possibly multi-threaded process,
        // where only async-signal-safe calls are allowed. `supervisor_pre_exec` makes only
        // raw system calls (sigprocmask, prctl, fork, setpgid, waitpid, kill, write,
        // close_range, sigtimedwait, clock_gettime, _exit) on stack data, and never allocates
        // or takes a lock.
        unsafe {
            command.pre_exec(move || supervisor_pre_exec(parent, report_fd));
        }
        let spawned = command.spawn();
        // The child end must stay open in rtlab until the fork happened; after it, only S
        // may hold it, so that a dead S shows up as end of file.
        drop(report_child_end);
        let mut supervisor = spawned.map_err(|e| crate::SysError::Invalid(format!("cannot run {program:?}: {e}")))?;
        // S writes C's pid right after forking it, so this answer comes within
        // microseconds; the timeout only guards against a supervisor that died.
        let pid = report
            .set_read_timeout(Some(Duration::from_secs(5)))
            .and_then(|()| read_record(&report, true))
            .ok()
            .flatten()
            .and_then(|(tag, value)| (tag == TAG_PID && value > 0).then_some(value));
        let Some(pid) = pid else {
            // SAFETY: kill takes plain integers; the pid is our unreaped child, so it is S.
            unsafe { libc::kill(supervisor.id() as i32, libc::SIGKILL) };
            let _ = supervisor.wait();
            return Err(crate::SysError::Invalid(format!("the supervisor of {program:?} did not report its pid")));
        };
        report.set_nonblocking(true).map_err(|e| crate::SysError::from_io("set report socket non-blocking", e))?;
        Ok(Self { supervisor, pid, program, report, status: None, reaped: None, outcome: None })
    }

    /// Pid of the command (not of its supervisor).
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Process group of the command and everything it starts (equal to [`Self::pid`]).
    pub fn pgid(&self) -> i32 {
        self.pid
    }

    /// Pid of the supervisor process.
    pub fn supervisor_pid(&self) -> u32 {
        self.supervisor.id()
    }

    /// The program as given to `spawn`.
    pub fn program(&self) -> &str {
        &self.program
    }

    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.supervisor.stdin.take()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.supervisor.stdout.take()
    }

    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.supervisor.stderr.take()
    }

    /// The command's wait status if it has exited, without blocking. A load uses this to
    /// notice that it died early.
    pub fn try_status(&mut self) -> crate::Result<Option<ExitStatus>> {
        self.poll()?;
        Ok(self.status.or(self.reaped.map(|(status, _)| status)))
    }

    /// Ends the command and its group: SIGTERM to the group, up to `grace` for everything
    /// to leave, then SIGKILL; returns once the supervisor is reaped. Calling it again
    /// returns the first outcome.
    pub fn stop(&mut self, grace: Duration) -> crate::Result<StopOutcome> {
        if let Some(outcome) = self.outcome {
            return Ok(outcome);
        }
        self.poll()?;
        let exited_before_stop = self.status.is_some();
        let mut killed = false;
        if self.reaped.is_none() {
            // ESRCH (group already empty) is not an error.
            let _ = kill_process_group(self.pid, libc::SIGTERM);
            if !self.wait_reaped(grace)? {
                killed = kill_process_group(self.pid, libc::SIGKILL).unwrap_or(false);
                if !self.wait_reaped(KILL_WAIT)? {
                    // Only a process in uninterruptible sleep can hold S this long. Kill S
                    // itself: its PDEATHSIG kills C; what C left is lost to init.
                    // SAFETY: kill takes plain integers; S is our unreaped child.
                    unsafe { libc::kill(self.supervisor.id() as i32, libc::SIGKILL) };
                    if !self.wait_reaped(KILL_WAIT)? {
                        return Err(crate::SysError::Invalid(format!(
                            "{:?} (pid {}) did not end after SIGKILL",
                            self.program, self.pid
                        )));
                    }
                }
            }
        }
        let outcome =
            StopOutcome { status: self.status, exited_before_stop, killed, cpu_time: self.reaped.map(|(_, cpu)| cpu) };
        self.outcome = Some(outcome);
        Ok(outcome)
    }

    /// Polls until S is reaped or `limit` passes; true if reaped.
    fn wait_reaped(&mut self, limit: Duration) -> crate::Result<bool> {
        let deadline = Instant::now() + limit;
        loop {
            self.poll()?;
            if self.reaped.is_some() {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            std::thread::sleep(POLL.min(deadline - now));
        }
    }

    /// Reads S's reports and reaps S if it has exited.
    fn poll(&mut self) -> crate::Result<()> {
        while self.status.is_none() {
            match read_record(&self.report, false) {
                Ok(Some((TAG_STATUS, raw))) => self.status = Some(ExitStatus::from_raw(raw)),
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => break,
            }
        }
        if self.reaped.is_none() {
            self.reaped = reap_nonblocking(self.supervisor.id() as i32)?;
        }
        Ok(())
    }
}

impl Drop for ManagedChild {
    fn drop(&mut self) {
        let _ = self.stop(DROP_GRACE);
    }
}

/// Reads one (tag, value) record; Ok(None) when there is none now (non-blocking) or S closed
/// the socket.
fn read_record(socket: &UnixDatagram, blocking: bool) -> io::Result<Option<(i32, i32)>> {
    let mut buf = [0u8; 8];
    match socket.recv(&mut buf) {
        Ok(8) => Ok(Some((
            i32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]),
            i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]),
        ))),
        Ok(_) => Ok(None),
        Err(e) if !blocking && e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// `wait4(pid, WNOHANG)`: the child's status and user + system CPU time if it has exited.
fn reap_nonblocking(pid: i32) -> crate::Result<Option<(ExitStatus, Duration)>> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain integers, all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid, writable and live for the call.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if rc == pid {
            let cpu = timeval_duration(usage.ru_utime) + timeval_duration(usage.ru_stime);
            return Ok(Some((ExitStatus::from_raw(status), cpu)));
        }
        if rc == 0 {
            return Ok(None);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(crate::SysError::from_io("wait4 (load supervisor)", err));
        }
    }
}

fn timeval_duration(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

/// Sends `signal` to every process in group `pgid` (`kill(-pgid, signal)`). Ok(false) when
/// the group has no process left (ESRCH).
pub fn kill_process_group(pgid: i32, signal: libc::c_int) -> crate::Result<bool> {
    if pgid <= 1 {
        // kill(0) / kill(-1) would hit our own group or every process: never what is meant.
        return Err(crate::SysError::Invalid(format!("refusing to signal process group {pgid}")));
    }
    // SAFETY: kill takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::kill(-pgid, signal) };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        return Ok(false);
    }
    Err(crate::SysError::from_io("kill(-pgid)", err))
}

/// One process found in /proc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessEntry {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// State letter from /proc/PID/stat ('R', 'S', 'D', 'Z', ...).
    pub state: char,
    pub comm: String,
}

/// Parses /proc/PID/stat. The command name is in parentheses and may itself contain
/// spaces and ')', so the fields are taken after the *last* ')'.
pub fn parse_proc_stat_line(text: &str) -> Option<ProcessEntry> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_string();
    let mut fields = text[close + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcessEntry { pid, ppid, pgrp, state, comm })
}

/// Every process now in /proc whose process group is `pgid`, zombies included (check
/// `state == 'Z'`). Processes that vanish during the scan are skipped.
pub fn process_group_members(pgid: i32) -> Vec<ProcessEntry> {
    all_processes().into_iter().filter(|p| p.pgrp == pgid).collect()
}

/// Every process now in /proc, zombies included.
pub fn all_processes() -> Vec<ProcessEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        entry.file_name().to_str()?.parse::<i32>().ok()?;
        let text = std::fs::read_to_string(entry.path().join("stat")).ok()?;
        parse_proc_stat_line(&text)
    })
    .collect()
}

/// Every descendant of `root` now (children, their children, ...), zombies included.
pub fn descendants(root: i32) -> Vec<ProcessEntry> {
    let all = all_processes();
    let mut found: Vec<ProcessEntry> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for p in all.iter().filter(|p| p.ppid == parent) {
            parents.push(p.pid);
            found.push(p.clone());
        }
    }
    found
}

/// The pids of `pids` still running now (a zombie is dead: an init that never reaps keeps it).
pub fn still_running(pids: &[i32]) -> Vec<i32> {
    let all = all_processes();
    pids.iter().copied().filter(|pid| all.iter().any(|p| p.pid == *pid && p.state != 'Z')).collect()
}

/// CPU time consumed so far by the calling thread (`CLOCK_THREAD_CPUTIME_ID`). In-process
/// loads add it up over their worker threads to report CPU-seconds.
pub fn thread_cpu_time() -> Duration {
    Duration::from_nanos(crate::clock::thread_cpu_time_ns())
}

/// Writes one (tag, value) record; async-signal-safe.
fn write_record(fd: libc::c_int, tag: i32, value: i32) {
    let mut buf = [0u8; 8];
    buf[..4].copy_from_slice(&tag.to_ne_bytes());
    buf[4..].copy_from_slice(&value.to_ne_bytes());
    // SAFETY: `buf` is valid for 8 bytes. A failed report (rtlab gone) is not recoverable
    // and not needed: the group is killed anyway.
    unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
}

fn monotonic_ms() -> i64 {
    // One clock_gettime (vDSO or system call): async-signal-safe.
    (crate::clock::monotonic_ns() / 1_000_000) as i64
}

/// Closes every descriptor of S except `keep`, so that S holds no pipe open (std's exec
/// error pipe, the command's stdio pipes): readers in rtlab see end of file when the
/// command ends, not when S does.
fn close_all_but(keep: libc::c_int) {
    // SAFETY: close_range only closes descriptors; it touches no memory.
    let rc = unsafe {
        let below = if keep > 0 { libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32) } else { 0 };
        let above = libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
        if below != 0 {
            below
        } else {
            above
        }
    };
    if rc != 0 {
        // Kernels before 5.9 have no close_range: close one by one up to a bound.
        for fd in 0..4096 {
            if fd != keep {
                // SAFETY: closing a descriptor number that may not be open is harmless.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// The signals S waits for with `sigtimedwait` (so they are blocked in S).
fn supervisor_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR2] {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Runs in the forked child of `Command::spawn` (which std has already put in its own
/// process group, with stdio set up and an empty signal mask). In the supervisor it never
/// returns; in the command's process it returns Ok so that std goes on to exec.
///
/// Only async-signal-safe system calls: the parent may be multi-threaded.
fn supervisor_pre_exec(parent: libc::pid_t, report_fd: libc::c_int) -> io::Result<()> {
    let signals = supervisor_signals();
    // SAFETY: every call below is an async-signal-safe system call on stack data; see
    // the SAFETY note in `ManagedChild::spawn`.
    unsafe {
        // Loads run SCHED_OTHER even when spawned from a real-time thread; lowering the
        // policy needs no privilege. C inherits it.
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_OTHER, &param);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut());
        // An ignored SIGCHLD (inherited from rtlab) would auto-reap and hide C's status.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR2 as libc::c_ulong, 0, 0, 0);
        if libc::getppid() != parent {
            // rtlab died between fork and prctl.
            libc::_exit(EXIT_ORPHANED);
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        let supervisor = libc::getpid();
        let command = libc::fork();
        if command < 0 {
            // std reports this to rtlab as the spawn error.
            return Err(io::Error::last_os_error());
        }
        if command == 0 {
            // The command C: its own group, killed by the kernel when S dies.
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            if libc::getppid() != supervisor {
                libc::_exit(EXIT_ORPHANED);
            }
            return Ok(());
        }
        // Also set from this side, so the group exists before rtlab hears the pid.
        libc::setpgid(command, command);
        close_all_but(report_fd);
        write_record(report_fd, TAG_PID, command);
        supervise(parent, command, report_fd, &signals)
    }
}

/// The supervisor's loop: reap, report C's status, clean up what C leaves, kill the group
/// if rtlab goes away; exit when no descendant is left.
fn supervise(parent: libc::pid_t, command: libc::pid_t, report_fd: libc::c_int, signals: &libc::sigset_t) -> ! {
    let mut command_status: Option<libc::c_int> = None;
    // When to SIGKILL what C left behind (monotonic ms).
    let mut kill_leftovers_at: Option<i64> = None;
    let timeout = libc::timespec { tv_sec: 0, tv_nsec: 100_000_000 };
    loop {
        // Reap everything that has exited: C and orphans adopted as subreaper.
        loop {
            let mut status: libc::c_int = 0;
            // SAFETY: `status` is valid and writable.
            let rc = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if rc > 0 {
                if rc == command {
                    command_status = Some(status);
                    write_record(report_fd, TAG_STATUS, status);
                    // SAFETY: kill takes plain integers; S is not in C's group.
                    unsafe { libc::kill(-command, libc::SIGTERM) };
                    kill_leftovers_at = Some(monotonic_ms() + LEFTOVER_GRACE.as_millis() as i64);
                }
                continue;
            }
            if rc == 0 {
                break;
            }
            // SAFETY: reading errno right after the failed call.
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            // ECHILD: no descendant left.
            let code = match command_status {
                Some(s) if libc::WIFEXITED(s) => libc::WEXITSTATUS(s),
                Some(s) if libc::WIFSIGNALED(s) => 128 + libc::WTERMSIG(s),
                _ => 1,
            };
            // SAFETY: _exit ends the process without running rtlab's atexit handlers or
            // destructors, which belong to the parent.
            unsafe { libc::_exit(code) };
        }
        // SAFETY: getppid has no preconditions.
        let orphaned = unsafe { libc::getppid() } != parent;
        let overdue = kill_leftovers_at.is_some_and(|at| monotonic_ms() >= at);
        if orphaned || overdue {
            // SAFETY: kill takes plain integers; S is not in C's group.
            unsafe { libc::kill(-command, libc::SIGKILL) };
            kill_leftovers_at = None;
        }
        // SAFETY: `signals` and `timeout` are valid; a null siginfo is allowed.
        let sig = unsafe { libc::sigtimedwait(signals, std::ptr::null_mut(), &timeout) };
        if matches!(sig, libc::SIGTERM | libc::SIGINT | libc::SIGHUP | libc::SIGQUIT) {
            // Someone wants the supervisor gone: end the group now, exit once reaped.
            // SAFETY: kill takes plain integers; S is not in C's group.
            unsafe { libc::kill(-command, libc::SIGKILL) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn live_members(pgid: i32) -> Vec<ProcessEntry> {
        process_group_members(pgid).into_iter().filter(|p| p.state != 'Z').collect()
    }

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        cmd
    }

    #[test]
    fn parses_stat_lines() {
        let p = parse_proc_stat_line("1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 ...").unwrap();
        assert_eq!((p.pid, p.ppid, p.pgrp, p.state, p.comm.as_str()), (1234, 1, 1234, 'S', "a) b (c)"));
        assert!(parse_proc_stat_line("garbage").is_none());
    }

    #[test]
    fn stop_kills_the_whole_group_and_leaves_no_zombie() {
        let mut child = ManagedChild::spawn(sh("sleep 100 & sleep 100")).unwrap();
        let pgid = child.pgid();
        assert_eq!(pgid as u32, child.pid());
        // Wait until both sleeps are there, so the test really covers a grandchild.
        let deadline = Instant::now() + Duration::from_secs(5);
        while live_members(pgid).iter().filter(|p| p.comm == "sleep").count() < 2 {
            assert!(Instant::now() < deadline, "sleeps did not start: {:?}", live_members(pgid));
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!live_members(pgid).iter().any(|p| p.pid == child.supervisor_pid() as i32));
        assert_eq!(child.try_status().unwrap(), None);
        let started = Instant::now();
        let outcome = child.stop(Duration::from_secs(1)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(1), "stop took {:?}", started.elapsed());
        assert!(!outcome.exited_before_stop);
        assert_eq!(outcome.status.unwrap().signal(), Some(libc::SIGTERM));
        // The supervisor reaped everything: not even zombies remain.
        assert_eq!(process_group_members(pgid), vec![]);
        assert!(!kill_process_group(pgid, 0).unwrap());
    }

    #[test]
    fn sigterm_resistant_group_is_killed_after_grace() {
        let mut child = ManagedChild::spawn(sh("trap '' TERM; sleep 100 & trap '' TERM; sleep 100")).unwrap();
        let pgid = child.pgid();
        std::thread::sleep(Duration::from_millis(100));
        let outcome = child.stop(Duration::from_millis(200)).unwrap();
        assert!(outcome.killed);
        assert_eq!(outcome.status.unwrap().signal(), Some(libc::SIGKILL));
        assert_eq!(live_members(pgid), vec![]);
    }

    #[test]
    fn early_exit_is_seen_and_leftovers_are_cleaned() {
        let mut child = ManagedChild::spawn(sh("sleep 100 & exit 3")).unwrap();
        let pgid = child.pgid();
        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            if let Some(status) = child.try_status().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(3));
        // The supervisor sends the left-over sleep SIGTERM and exits once it is reaped.
        let deadline = Instant::now() + LEFTOVER_GRACE + Duration::from_secs(3);
        while !process_group_members(pgid).is_empty() {
            assert!(Instant::now() < deadline, "{:?}", process_group_members(pgid));
            std::thread::sleep(Duration::from_millis(10));
        }
        let outcome = child.stop(Duration::from_secs(1)).unwrap();
        assert!(outcome.exited_before_stop);
        assert_eq!(outcome.status.unwrap().code(), Some(3));
    }

    #[test]
    fn missing_program_is_an_error_naming_it() {
        let err = ManagedChild::spawn(Command::new("/nonexistent/rtlab-no-such-program")).unwrap_err();
        assert!(err.to_string().contains("rtlab-no-such-program"), "{err}");
    }

    #[test]
    fn drop_kills_the_group() {
        let child = ManagedChild::spawn(sh("sleep 100 & sleep 100")).unwrap();
        let pgid = child.pgid();
        std::thread::sleep(Duration::from_millis(50));
        drop(child);
        assert_eq!(live_members(pgid), vec![]);
    }

    #[test]
    fn stdout_reaches_rtlab_and_cpu_time_is_counted() {
        let mut cmd = sh("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done");
        cmd.stdout(Stdio::piped());
        let mut child = ManagedChild::spawn(cmd).unwrap();
        let mut out = String::new();
        io::Read::read_to_string(&mut child.take_stdout().unwrap(), &mut out).unwrap();
        assert_eq!(out, "done\n");
        let outcome = child.stop(Duration::from_secs(1)).unwrap();
        assert_eq!(outcome.status.unwrap().code(), Some(0));
        assert!(outcome.cpu_time.unwrap() > Duration::ZERO);
    }

    const SPAWNER_ENV: &str = "RTLAB_SYS_TEST_SPAWNER";

    /// Not a test on its own: the role of "rtlab" in `sigkill_of_rtlab_kills_the_group`,
    /// active only when that test runs this binary with SPAWNER_ENV set.
    #[test]
    fn spawner_role_for_sigkill_test() {
        if std::env::var_os(SPAWNER_ENV).is_none() {
            return;
        }
        let child = ManagedChild::spawn(sh("sleep 100 & sleep 100")).unwrap();
        println!("pgid {}", child.pgid());
        std::thread::sleep(Duration::from_secs(30));
        drop(child);
    }

    #[test]
    fn sigkill_of_rtlab_kills_the_group() {
        use std::io::BufRead;
        let mut spawner = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "process::tests::spawner_role_for_sigkill_test", "--nocapture", "--test-threads=1"])
            .env(SPAWNER_ENV, "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = io::BufReader::new(spawner.stdout.take().unwrap()).lines();
        let pgid: i32 = loop {
            let line = lines.next().expect("spawner printed no pgid").unwrap();
            // libtest prints "test NAME ... " before the test's own output on the same line.
            if let Some((_, n)) = line.split_once("pgid ") {
                break n.trim().parse().unwrap();
            }
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while live_members(pgid).iter().filter(|p| p.comm == "sleep").count() < 2 {
            assert!(Instant::now() < deadline, "sleeps did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        spawner.kill().unwrap();
        spawner.wait().unwrap();
        let killed_at = Instant::now();
        while !live_members(pgid).is_empty() {
            assert!(
                killed_at.elapsed() < Duration::from_secs(2),
                "still running 2 s after SIGKILL of the spawner: {:?}",
                live_members(pgid)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn thread_cpu_time_advances() {
        let before = thread_cpu_time();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(thread_cpu_time() > before);
    }

    #[test]
    fn refuses_to_signal_own_or_every_group() {
        assert!(kill_process_group(0, 0).is_err());
        assert!(kill_process_group(1, 0).is_err());
        assert!(kill_process_group(-5, 0).is_err());
    }
}
