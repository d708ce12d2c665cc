//! The wake-up mechanisms of the ipc and switch probes: eventfd, pipe, futex, POSIX
//! message queue, real-time signal, POSIX semaphore.
//!
//! Each is a safe wrapper whose methods are one system call (no allocation), so a
//! real-time loop may call them. Every blocking wait returns [`WaitOutcome::Interrupted`]
//! (or [`FutexWait::Interrupted`]) on EINTR, so that a thread woken by
//! [`crate::clock::WAKE_SIGNAL`] can check its stop flag.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Result of a blocking wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome<T> {
    /// The wait returned with this (a counter, a message).
    Ready(T),
    /// A signal handler ran first (EINTR): nothing was consumed.
    Interrupted,
}

/// Result of a non-blocking send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcome {
    Sent,
    /// The pipe or queue is full (EAGAIN): the message was not sent.
    Full,
}

/// Length of the fixed messages of [`Pipe`] and [`MessageQueue`]: enough for a sequence
/// number and a timestamp.
pub const MESSAGE_LEN: usize = 16;
pub type Message = [u8; MESSAGE_LEN];

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A file descriptor returned by a call that gives -1 on failure.
fn owned_fd(fd: libc::c_int, op: &'static str) -> crate::Result<OwnedFd> {
    if fd < 0 {
        return Err(crate::SysError::last_os(op));
    }
    // SAFETY: `fd` was just returned by the kernel, is valid, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `read(fd, buf)` of exactly `buf.len()` bytes; EINTR gives `Interrupted`.
fn read_exact_once(fd: &OwnedFd, buf: &mut [u8], op: &'static str) -> crate::Result<WaitOutcome<()>> {
    // SAFETY: `buf` is valid and writable for `buf.len()` bytes; `fd` is open.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return match errno() {
            libc::EINTR => Ok(WaitOutcome::Interrupted),
            _ => Err(crate::SysError::last_os(op)),
        };
    }
    if n as usize != buf.len() {
        return Err(crate::SysError::Invalid(format!("{op}: read {n} bytes instead of {}", buf.len())));
    }
    Ok(WaitOutcome::Ready(()))
}

/// `write(fd, buf)` of exactly `buf.len()` bytes; EAGAIN gives `Full`.
fn write_once(fd: &OwnedFd, buf: &[u8], op: &'static str) -> crate::Result<SendOutcome> {
    // SAFETY: `buf` is valid for `buf.len()` bytes; `fd` is open.
    let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        return match errno() {
            libc::EAGAIN => Ok(SendOutcome::Full),
            _ => Err(crate::SysError::last_os(op)),
        };
    }
    if n as usize != buf.len() {
        return Err(crate::SysError::Invalid(format!("{op}: wrote {n} bytes instead of {}", buf.len())));
    }
    Ok(SendOutcome::Sent)
}

/// An eventfd counter (blocking reads): `signal` adds 1, `wait` returns the counter and
/// resets it, so several signals before one wait come back as one count above 1.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    pub fn new() -> crate::Result<Self> {
        // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        Ok(Self { fd: owned_fd(fd, "eventfd")? })
    }

    /// Adds 1 to the counter, waking a blocked reader.
    pub fn signal(&self) -> crate::Result<()> {
        write_once(&self.fd, &1u64.to_ne_bytes(), "write(eventfd)").map(|_| ())
    }

    /// Blocks until the counter is non-zero; returns it (and resets it to 0).
    pub fn wait(&self) -> crate::Result<WaitOutcome<u64>> {
        let mut buf = [0u8; 8];
        Ok(match read_exact_once(&self.fd, &mut buf, "read(eventfd)")? {
            WaitOutcome::Ready(()) => WaitOutcome::Ready(u64::from_ne_bytes(buf)),
            WaitOutcome::Interrupted => WaitOutcome::Interrupted,
        })
    }
}

/// A pipe carrying fixed-size messages (atomic, since [`MESSAGE_LEN`] < PIPE_BUF). The
/// write end is non-blocking so a sender never stalls on a receiver that stopped reading.
#[derive(Debug)]
pub struct Pipe {
    read_end: OwnedFd,
    write_end: OwnedFd,
}

impl Pipe {
    pub fn new() -> crate::Result<Self> {
        let mut fds = [-1 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(crate::SysError::last_os("pipe2"));
        }
        let read_end = owned_fd(fds[0], "pipe2")?;
        let write_end = owned_fd(fds[1], "pipe2")?;
        // SAFETY: F_GETFL takes no pointer; the descriptor is open.
        let flags = unsafe { libc::fcntl(write_end.as_raw_fd(), libc::F_GETFL) };
        // SAFETY: F_SETFL takes an integer; the descriptor is open.
        if flags < 0 || unsafe { libc::fcntl(write_end.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } != 0 {
            return Err(crate::SysError::last_os("fcntl(pipe, O_NONBLOCK)"));
        }
        Ok(Self { read_end, write_end })
    }

    pub fn send(&self, message: &Message) -> crate::Result<SendOutcome> {
        write_once(&self.write_end, message, "write(pipe)")
    }

    /// Blocks until a whole message is there.
    pub fn receive(&self) -> crate::Result<WaitOutcome<Message>> {
        let mut message = [0u8; MESSAGE_LEN];
        Ok(match read_exact_once(&self.read_end, &mut message, "read(pipe)")? {
            WaitOutcome::Ready(()) => WaitOutcome::Ready(message),
            WaitOutcome::Interrupted => WaitOutcome::Interrupted,
        })
    }
}

// The _PRIVATE forms: the word is never shared with another process.
const FUTEX_WAIT_PRIVATE: libc::c_int = libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG;
const FUTEX_WAKE_PRIVATE: libc::c_int = libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG;

/// What a futex wait returned for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FutexWait {
    /// FUTEX_WAKE (or a spurious wake-up: the caller re-checks the word).
    Woken,
    /// The word did not hold the expected value (EAGAIN): it changed before the wait.
    ValueChanged,
    /// A signal handler ran (EINTR).
    Interrupted,
}

/// A process-private futex word. Share it between threads in an `Arc` (its address must
/// not change while a thread waits on it, which borrowing guarantees).
#[derive(Debug, Default)]
#[repr(transparent)]
pub struct Futex {
    word: AtomicU32,
}

impl Futex {
    pub fn new(value: u32) -> Self {
        Self { word: AtomicU32::new(value) }
    }

    /// The word itself: the waker changes it before [`wake`](Self::wake).
    pub fn word(&self) -> &AtomicU32 {
        &self.word
    }

    /// `FUTEX_WAIT_PRIVATE`: sleeps while the word holds `expected`.
    pub fn wait(&self, expected: u32) -> crate::Result<FutexWait> {
        // SAFETY: the word is a valid, aligned u32 for as long as `self` is borrowed, which
        // outlasts the call; the timeout and the unused arguments are null/0.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                FUTEX_WAIT_PRIVATE,
                expected,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            )
        };
        if rc == 0 {
            return Ok(FutexWait::Woken);
        }
        match errno() {
            libc::EAGAIN => Ok(FutexWait::ValueChanged),
            libc::EINTR => Ok(FutexWait::Interrupted),
            _ => Err(crate::SysError::last_os("futex(FUTEX_WAIT_PRIVATE)")),
        }
    }

    /// `FUTEX_WAKE_PRIVATE`: wakes up to `waiters` threads; returns how many woke.
    pub fn wake(&self, waiters: u32) -> crate::Result<u32> {
        let waiters = waiters.min(i32::MAX as u32);
        // SAFETY: as in `wait`; FUTEX_WAKE only looks the address up, it reads nothing.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                FUTEX_WAKE_PRIVATE,
                waiters,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            )
        };
        if rc < 0 {
            return Err(crate::SysError::last_os("futex(FUTEX_WAKE_PRIVATE)"));
        }
        Ok(rc as u32)
    }
}

/// Distinguishes the queues of one process.
static QUEUE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A POSIX message queue of [`MESSAGE_LEN`]-byte messages, unlinked as soon as it is open
/// (so nothing is left in /dev/mqueue, even after a crash). Two descriptors: a blocking
/// one to receive, a non-blocking one to send (a full queue refuses instead of stalling).
#[derive(Debug)]
pub struct MessageQueue {
    receive_end: libc::mqd_t,
    send_end: libc::mqd_t,
    name: String,
}

impl MessageQueue {
    /// Creates a queue holding up to `capacity` messages, named "/rtlab-<pid>-<n>".
    /// ENOSYS (no POSIX message queues in the kernel), EACCES, EMFILE, ENOSPC (queues_max)
    /// and EINVAL (capacity above msg_max) come back as errors.
    pub fn new(capacity: usize) -> crate::Result<Self> {
        let name = format!("/rtlab-{}-{}", std::process::id(), QUEUE_COUNTER.fetch_add(1, Ordering::Relaxed));
        let c_name = std::ffi::CString::new(name.clone()).expect("the name has no NUL byte");
        // SAFETY: mq_attr is plain data; all-zero is valid before the fields are set.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = capacity as libc::c_long;
        attr.mq_msgsize = MESSAGE_LEN as libc::c_long;
        let mode: libc::mode_t = 0o600;
        // SAFETY: `c_name` is a NUL-terminated string and `attr` a valid mq_attr, both alive
        // for the call; with O_CREAT, mq_open reads exactly a mode_t and an mq_attr pointer.
        let receive_end = unsafe {
            libc::mq_open(c_name.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDONLY, mode, &attr as *const _)
        };
        if receive_end < 0 {
            return Err(crate::SysError::last_os("mq_open"));
        }
        // SAFETY: as above; without O_CREAT no further argument is read.
        let send_end = unsafe { libc::mq_open(c_name.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK) };
        let send_error = (send_end < 0).then(|| crate::SysError::last_os("mq_open (sender)"));
        // SAFETY: `c_name` is a valid NUL-terminated string.
        let unlinked = unsafe { libc::mq_unlink(c_name.as_ptr()) };
        let unlink_error = (unlinked != 0).then(|| crate::SysError::last_os("mq_unlink"));
        let queue = Self { receive_end, send_end, name };
        match (send_error, unlink_error) {
            // Dropping `queue` closes what was opened.
            (Some(e), _) | (None, Some(e)) => Err(e),
            (None, None) => Ok(queue),
        }
    }

    /// The name the queue had while it was being opened (it is unlinked now).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn send(&self, message: &Message) -> crate::Result<SendOutcome> {
        // SAFETY: `message` is valid for MESSAGE_LEN bytes (the queue's message size); the
        // descriptor is open for writing.
        let rc = unsafe { libc::mq_send(self.send_end, message.as_ptr().cast(), MESSAGE_LEN, 0) };
        if rc != 0 {
            return match errno() {
                libc::EAGAIN => Ok(SendOutcome::Full),
                _ => Err(crate::SysError::last_os("mq_send")),
            };
        }
        Ok(SendOutcome::Sent)
    }

    /// Blocks until a message is there.
    pub fn receive(&self) -> crate::Result<WaitOutcome<Message>> {
        let mut message = [0u8; MESSAGE_LEN];
        // SAFETY: `message` is writable for MESSAGE_LEN bytes, the queue's message size; a
        // null priority pointer is allowed.
        let n = unsafe {
            libc::mq_receive(self.receive_end, message.as_mut_ptr().cast(), MESSAGE_LEN, std::ptr::null_mut())
        };
        if n < 0 {
            return match errno() {
                libc::EINTR => Ok(WaitOutcome::Interrupted),
                _ => Err(crate::SysError::last_os("mq_receive")),
            };
        }
        if n as usize != MESSAGE_LEN {
            return Err(crate::SysError::Invalid(format!("mq_receive: {n} bytes instead of {MESSAGE_LEN}")));
        }
        Ok(WaitOutcome::Ready(message))
    }
}

impl Drop for MessageQueue {
    fn drop(&mut self) {
        for mqd in [self.receive_end, self.send_end] {
            if mqd >= 0 {
                // SAFETY: the descriptor was opened by `new` and is closed only here.
                unsafe { libc::mq_close(mqd) };
            }
        }
    }
}

/// A thread of this process as the kernel knows it (gettid), for [`RtSignal::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadId(pub libc::pid_t);

/// The calling thread's id.
pub fn current_thread_id() -> ThreadId {
    // SAFETY: gettid takes no argument and cannot fail.
    ThreadId(unsafe { libc::syscall(libc::SYS_gettid) } as libc::pid_t)
}

extern "C" fn ignore_rt_signal(_: libc::c_int) {}

/// A real-time signal (queued, never merged) sent to one thread with `tgkill` and taken
/// with `sigwaitinfo` by that thread, which keeps it blocked.
#[derive(Debug)]
pub struct RtSignal {
    signo: libc::c_int,
    set: libc::sigset_t,
}

impl RtSignal {
    /// SIGRTMIN + `offset`. Installs a handler that does nothing, so a signal that arrives
    /// where it is not blocked (a receiver that already ended) never kills the process.
    pub fn new(offset: libc::c_int) -> crate::Result<Self> {
        let signo = libc::SIGRTMIN() + offset;
        if offset < 0 || signo > libc::SIGRTMAX() {
            return Err(crate::SysError::Invalid(format!("SIGRTMIN+{offset} is not a real-time signal")));
        }
        // SAFETY: sigaction is plain data; zeroed is a valid start, sigemptyset fills the mask.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = ignore_rt_signal as *const () as libc::sighandler_t;
        // SAFETY: `action.sa_mask` is valid and writable.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is initialised; the handler does nothing, so it is async-signal-safe.
        if unsafe { libc::sigaction(signo, &action, std::ptr::null_mut()) } != 0 {
            return Err(crate::SysError::last_os("sigaction(SIGRTMIN+n)"));
        }
        // SAFETY: sigset_t is plain data; sigemptyset initialises it before sigaddset.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is valid and writable; `signo` is a valid signal number.
        unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signo);
        }
        Ok(Self { signo, set })
    }

    pub fn number(&self) -> libc::c_int {
        self.signo
    }

    /// Blocks the signal in the calling thread (so it stays pending for
    /// [`wait`](Self::wait)); the guard restores the previous mask on drop.
    pub fn block_current_thread(&self) -> crate::Result<SignalMaskGuard> {
        // SAFETY: sigset_t is plain data; pthread_sigmask overwrites it.
        let mut previous: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: both sets are valid; the call changes only this thread's mask.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.set, &mut previous) };
        if rc != 0 {
            return Err(crate::SysError::from_io("pthread_sigmask", std::io::Error::from_raw_os_error(rc)));
        }
        Ok(SignalMaskGuard { previous, _not_send: std::marker::PhantomData })
    }

    /// `sigwaitinfo` for this signal; the calling thread must have it blocked. Another
    /// signal with a handler (the stop signal) gives `Interrupted`.
    pub fn wait(&self) -> crate::Result<WaitOutcome<()>> {
        // SAFETY: `self.set` is a valid set; a null siginfo pointer is allowed.
        let rc = unsafe { libc::sigwaitinfo(&self.set, std::ptr::null_mut()) };
        if rc < 0 {
            return match errno() {
                libc::EINTR => Ok(WaitOutcome::Interrupted),
                _ => Err(crate::SysError::last_os("sigwaitinfo")),
            };
        }
        Ok(WaitOutcome::Ready(()))
    }

    /// `tgkill(getpid(), thread, signal)`. EAGAIN (the queue of pending real-time signals
    /// is at RLIMIT_SIGPENDING) gives `Full`; ESRCH (the thread has ended) is an error.
    pub fn send(&self, thread: ThreadId) -> crate::Result<SendOutcome> {
        // SAFETY: tgkill takes integers only; it can signal threads of this process only.
        let rc = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), thread.0, self.signo) };
        if rc != 0 {
            return match errno() {
                libc::EAGAIN => Ok(SendOutcome::Full),
                _ => Err(crate::SysError::last_os("tgkill")),
            };
        }
        Ok(SendOutcome::Sent)
    }
}

/// Restores the calling thread's signal mask on drop; must be dropped on that thread.
pub struct SignalMaskGuard {
    previous: libc::sigset_t,
    // The mask is per thread: the guard stays on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for SignalMaskGuard {
    fn drop(&mut self) {
        // A pending signal is delivered now, to the handler that does nothing.
        // SAFETY: `previous` is the mask read when the guard was made.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}

/// A POSIX unnamed semaphore for the threads of this process (pshared 0). Boxed so its
/// address never changes; destroyed on drop, when no thread can be waiting (waiting
/// borrows it).
pub struct Semaphore {
    sem: Box<std::cell::UnsafeCell<libc::sem_t>>,
}

// SAFETY: sem_post/sem_wait are thread-safe on a shared sem_t; the struct only hands out
// these calls through &self and destroys the semaphore with exclusive access.
unsafe impl Send for Semaphore {}
// SAFETY: as above.
unsafe impl Sync for Semaphore {}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Semaphore")
    }
}

impl Semaphore {
    pub fn new(value: u32) -> crate::Result<Self> {
        // SAFETY: sem_t is plain data; sem_init initialises it below.
        let sem = Box::new(std::cell::UnsafeCell::new(unsafe { std::mem::zeroed::<libc::sem_t>() }));
        // SAFETY: the pointer is to boxed, writable memory that stays put; pshared 0.
        if unsafe { libc::sem_init(sem.get(), 0, value) } != 0 {
            return Err(crate::SysError::last_os("sem_init"));
        }
        Ok(Self { sem })
    }

    pub fn post(&self) -> crate::Result<()> {
        // SAFETY: the semaphore was initialised in `new` and is destroyed only in drop.
        if unsafe { libc::sem_post(self.sem.get()) } != 0 {
            return Err(crate::SysError::last_os("sem_post"));
        }
        Ok(())
    }

    /// Blocks until the count is above 0 and takes one (sem_wait is never restarted after
    /// a signal handler: EINTR gives `Interrupted`).
    pub fn wait(&self) -> crate::Result<WaitOutcome<()>> {
        // SAFETY: as in `post`.
        if unsafe { libc::sem_wait(self.sem.get()) } != 0 {
            return match errno() {
                libc::EINTR => Ok(WaitOutcome::Interrupted),
                _ => Err(crate::SysError::last_os("sem_wait")),
            };
        }
        Ok(WaitOutcome::Ready(()))
    }

    /// The current count (sem_getvalue).
    pub fn value(&self) -> crate::Result<i32> {
        let mut value = 0;
        // SAFETY: as in `post`; `value` is writable.
        if unsafe { libc::sem_getvalue(self.sem.get(), &mut value) } != 0 {
            return Err(crate::SysError::last_os("sem_getvalue"));
        }
        Ok(value)
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; `&mut self` means no thread is waiting on it.
        unsafe { libc::sem_destroy(self.sem.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::thread::JoinHandleExt;
    use std::sync::Arc;
    use std::thread::JoinHandle;
    use std::time::Duration;

    /// Sends the stop signal to `handle`'s thread until it ends (the first one may come
    /// before the thread blocks), as run_workers does, and returns its result.
    fn interrupt_until_done<T>(handle: JoinHandle<T>) -> T {
        crate::clock::install_wake_handler().unwrap();
        while !handle.is_finished() {
            crate::clock::wake_thread(handle.as_pthread_t()).unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
        handle.join().unwrap()
    }

    fn message(byte: u8) -> Message {
        [byte; MESSAGE_LEN]
    }

    #[test]
    fn eventfd_counts_signals_and_wakes_a_blocked_reader() {
        let e = Arc::new(EventFd::new().unwrap());
        e.signal().unwrap();
        e.signal().unwrap();
        assert_eq!(e.wait().unwrap(), WaitOutcome::Ready(2), "two signals before a wait coalesce");
        let waiter = e.clone();
        let handle = std::thread::spawn(move || waiter.wait().unwrap());
        std::thread::sleep(Duration::from_millis(20));
        e.signal().unwrap();
        assert_eq!(handle.join().unwrap(), WaitOutcome::Ready(1));
    }

    #[test]
    fn eventfd_wait_returns_interrupted_on_eintr() {
        let e = Arc::new(EventFd::new().unwrap());
        let waiter = e.clone();
        let outcome = interrupt_until_done(std::thread::spawn(move || waiter.wait().unwrap()));
        assert_eq!(outcome, WaitOutcome::Interrupted);
    }

    #[test]
    fn pipe_carries_messages_in_order_and_refuses_when_full() {
        let p = Pipe::new().unwrap();
        assert_eq!(p.send(&message(1)).unwrap(), SendOutcome::Sent);
        assert_eq!(p.send(&message(2)).unwrap(), SendOutcome::Sent);
        assert_eq!(p.receive().unwrap(), WaitOutcome::Ready(message(1)));
        assert_eq!(p.receive().unwrap(), WaitOutcome::Ready(message(2)));
        // The non-blocking write end says Full instead of blocking (64 KiB pipe: 4096).
        let sent = (0..100_000).take_while(|_| p.send(&message(3)).unwrap() == SendOutcome::Sent).count();
        assert!(sent > 0 && sent < 100_000, "{sent} messages fit");
    }

    #[test]
    fn pipe_receive_blocks_until_a_message_and_returns_interrupted_on_eintr() {
        let p = Arc::new(Pipe::new().unwrap());
        let receiver = p.clone();
        let handle = std::thread::spawn(move || receiver.receive().unwrap());
        std::thread::sleep(Duration::from_millis(20));
        p.send(&message(7)).unwrap();
        assert_eq!(handle.join().unwrap(), WaitOutcome::Ready(message(7)));
        let receiver = p.clone();
        assert_eq!(
            interrupt_until_done(std::thread::spawn(move || receiver.receive().unwrap())),
            WaitOutcome::Interrupted
        );
    }

    #[test]
    fn futex_wait_checks_the_word_and_wakes() {
        let f = Arc::new(Futex::new(5));
        assert_eq!(f.wait(4).unwrap(), FutexWait::ValueChanged);
        assert_eq!(f.wake(1).unwrap(), 0, "nobody waits");
        let waiter = f.clone();
        let handle = std::thread::spawn(move || {
            // A spurious wake-up is allowed: wait until the word really changed.
            while waiter.word().load(Ordering::Acquire) == 5 {
                waiter.wait(5).unwrap();
            }
        });
        std::thread::sleep(Duration::from_millis(20));
        f.word().store(6, Ordering::Release);
        f.wake(1).unwrap();
        handle.join().unwrap();
    }

    #[test]
    fn futex_wait_returns_interrupted_on_eintr() {
        let f = Arc::new(Futex::new(0));
        let waiter = f.clone();
        let outcome = interrupt_until_done(std::thread::spawn(move || loop {
            match waiter.wait(0).unwrap() {
                FutexWait::Woken => continue,
                other => break other,
            }
        }));
        assert_eq!(outcome, FutexWait::Interrupted);
    }

    #[test]
    fn message_queue_is_unlinked_at_once_and_carries_messages() {
        let q = MessageQueue::new(4).unwrap();
        let other = MessageQueue::new(4).unwrap();
        assert_ne!(q.name(), other.name(), "unique names");
        assert!(q.name().starts_with(&format!("/rtlab-{}-", std::process::id())));
        // Nothing is left behind under the name: opening it again fails with ENOENT.
        let c_name = std::ffi::CString::new(q.name()).unwrap();
        // SAFETY: (test) a valid NUL-terminated name; without O_CREAT nothing else is read.
        let reopened = unsafe { libc::mq_open(c_name.as_ptr(), libc::O_RDONLY) };
        assert_eq!(reopened, -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ENOENT));

        for i in 0..4 {
            assert_eq!(q.send(&message(i)).unwrap(), SendOutcome::Sent);
        }
        assert_eq!(q.send(&message(9)).unwrap(), SendOutcome::Full, "capacity 4");
        for i in 0..4 {
            assert_eq!(q.receive().unwrap(), WaitOutcome::Ready(message(i)));
        }
    }

    #[test]
    fn message_queue_receive_returns_interrupted_on_eintr() {
        let q = Arc::new(MessageQueue::new(2).unwrap());
        let receiver = q.clone();
        assert_eq!(
            interrupt_until_done(std::thread::spawn(move || receiver.receive().unwrap())),
            WaitOutcome::Interrupted
        );
    }

    #[test]
    fn message_queue_beyond_msg_max_is_an_error() {
        // msg_max is at most 65536 on Linux; far beyond that is EINVAL for everyone.
        assert!(MessageQueue::new(10_000_000).is_err());
    }

    #[test]
    fn rt_signal_reaches_the_blocked_thread_and_eintr_interrupts_the_wait() {
        let signal = Arc::new(RtSignal::new(3).unwrap());
        assert!(signal.number() >= libc::SIGRTMIN() && signal.number() <= libc::SIGRTMAX());
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let receiver = signal.clone();
        let handle = std::thread::spawn(move || {
            let _blocked = receiver.block_current_thread().unwrap();
            tid_tx.send(current_thread_id()).unwrap();
            let first = receiver.wait().unwrap();
            // Real-time signals queue: two sends give two waits.
            let second = receiver.wait().unwrap();
            (first, second)
        });
        let tid = tid_rx.recv().unwrap();
        signal.send(tid).unwrap();
        signal.send(tid).unwrap();
        assert_eq!(handle.join().unwrap(), (WaitOutcome::Ready(()), WaitOutcome::Ready(())));

        let receiver = signal.clone();
        let outcome = interrupt_until_done(std::thread::spawn(move || {
            let _blocked = receiver.block_current_thread().unwrap();
            receiver.wait().unwrap()
        }));
        assert_eq!(outcome, WaitOutcome::Interrupted, "the handled SIGUSR2 interrupts sigwaitinfo");
        assert!(RtSignal::new(1_000).is_err());
    }

    #[test]
    fn signal_mask_guard_restores_the_mask() {
        let signal = RtSignal::new(4).unwrap();
        let blocked = |signo| {
            // SAFETY: (test) sigset_t is plain data, filled by pthread_sigmask.
            let mut current: libc::sigset_t = unsafe { std::mem::zeroed() };
            // SAFETY: (test) a null new set only reads the current mask.
            unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut current) };
            // SAFETY: (test) `current` is a valid set.
            unsafe { libc::sigismember(&current, signo) == 1 }
        };
        assert!(!blocked(signal.number()));
        {
            let _guard = signal.block_current_thread().unwrap();
            assert!(blocked(signal.number()));
            // A signal left pending goes to the do-nothing handler when unblocked.
            signal.send(current_thread_id()).unwrap();
        }
        assert!(!blocked(signal.number()));
    }

    #[test]
    fn semaphore_posts_wait_and_interrupt() {
        let s = Arc::new(Semaphore::new(0).unwrap());
        s.post().unwrap();
        assert_eq!(s.value().unwrap(), 1);
        assert_eq!(s.wait().unwrap(), WaitOutcome::Ready(()));
        assert_eq!(s.value().unwrap(), 0);
        let waiter = s.clone();
        let handle = std::thread::spawn(move || waiter.wait().unwrap());
        std::thread::sleep(Duration::from_millis(20));
        s.post().unwrap();
        assert_eq!(handle.join().unwrap(), WaitOutcome::Ready(()));
        let waiter = s.clone();
        assert_eq!(interrupt_until_done(std::thread::spawn(move || waiter.wait().unwrap())), WaitOutcome::Interrupted);
        // The last Arc drops here: sem_destroy with no waiter.
        drop(s);
    }
}
