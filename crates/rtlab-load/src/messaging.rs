//! `messaging`: hackbench-style messaging (rteval's hackbench load). `groups` groups, each of
//! `senders` sender threads and `receivers` receiver threads; every receiver owns one
//! channel (a Unix stream socket pair, or a pipe) that all senders of its group write to.
//! Every sender writes `message_bytes` messages round-robin to every receiver of its group,
//! over and over; receivers read whole messages. Most of the load is the scheduler's:
//! thousands of wake-ups per second of threads that block in read and write.
//!
//! Stopping: senders look at the stop flag between messages (socket writes also time out),
//! receivers between messages and, on sockets, when a read times out. A receiver blocked in
//! a pipe read wakes up when the last sender of its group has dropped the write end (end of
//! file), or when data arrives.

use crate::worker::{available_cpus, read_full, stop_started, write_full, Workers, POLL_INTERVAL};
use crate::{mb, per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "messaging";

/// Largest message: hackbench's messages are 100 bytes; 64 KiB is a full pipe.
const MAX_MESSAGE_BYTES: usize = 65_536;
/// Most threads the load starts (groups × (senders + receivers)).
const MAX_THREADS: usize = 10_000;
/// Messages a thread counts locally before adding them to the shared counter.
const FLUSH_EVERY: u64 = 1024;

/// What carries the messages from senders to a receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// An AF_UNIX SOCK_STREAM socket pair per receiver (hackbench's default).
    Socket,
    /// A pipe per receiver (hackbench `-p`).
    Pipe,
}

/// Parameters of [`MessagingLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MessagingParams {
    /// Groups of senders and receivers; default: one per CPU this process may use.
    pub groups: usize,
    /// Sender threads per group.
    pub senders: usize,
    /// Receiver threads per group.
    pub receivers: usize,
    /// Bytes per message.
    pub message_bytes: usize,
    /// `socket` (AF_UNIX stream socket pairs) or `pipe`.
    pub transport: Transport,
}

impl Default for MessagingParams {
    fn default() -> Self {
        Self { groups: available_cpus(), senders: 20, receivers: 20, message_bytes: 100, transport: Transport::Socket }
    }
}

/// The write end of a receiver's channel, shared by the senders of its group: it closes
/// when the last of them drops it.
enum WriteEnd {
    Socket(UnixStream),
    Pipe(PipeWriter),
}

impl Write for &WriteEnd {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match *self {
            WriteEnd::Socket(s) => (&*s).write(buf),
            WriteEnd::Pipe(p) => (&*p).write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One receiver's channel: its read end and the write end its group's senders share.
fn channel(transport: Transport) -> std::io::Result<(Box<dyn Read + Send>, WriteEnd)> {
    Ok(match transport {
        Transport::Socket => {
            let (reader, writer) = UnixStream::pair()?;
            reader.set_read_timeout(Some(POLL_INTERVAL))?;
            writer.set_write_timeout(Some(POLL_INTERVAL))?;
            (Box::new(reader), WriteEnd::Socket(writer))
        }
        Transport::Pipe => {
            let (reader, writer): (PipeReader, PipeWriter) = std::io::pipe()?;
            (Box::new(reader), WriteEnd::Pipe(writer))
        }
    })
}

/// Reads whole messages until stopped.
fn receive(
    mut reader: Box<dyn Read + Send>,
    size: usize,
    messages: &AtomicU64,
    stop: &AtomicBool,
) -> Result<(), String> {
    let mut buf = vec![0u8; size];
    let mut pending = 0u64;
    let outcome = loop {
        match read_full(&mut reader, &mut buf, stop) {
            Ok(true) => {
                pending += 1;
                if pending == FLUSH_EVERY {
                    messages.fetch_add(pending, Ordering::Relaxed);
                    pending = 0;
                }
            }
            Ok(false) => break Ok(()),
            // Senders that stop may close the channel in the middle of a message.
            Err(_) if stop.load(Ordering::Relaxed) => break Ok(()),
            Err(e) => break Err(format!("receive: {e}")),
        }
    };
    messages.fetch_add(pending, Ordering::Relaxed);
    outcome
}

/// Writes a message to every receiver of the group in turn, until stopped.
fn send(writers: Vec<Arc<WriteEnd>>, size: usize, go: &AtomicBool, stop: &AtomicBool) -> Result<(), String> {
    let message: Vec<u8> = (0..size).map(|k| k as u8).collect();
    // Start together with the other threads, once all are running.
    while !go.load(Ordering::Relaxed) {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    loop {
        for writer in &writers {
            match write_full(&mut &**writer, &message, stop) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                // A receiver that stopped first closed its end.
                Err(_) if stop.load(Ordering::Relaxed) => return Ok(()),
                Err(e) => return Err(format!("send: {e}")),
            }
        }
    }
}

/// hackbench-style groups of threads passing small messages.
pub struct MessagingLoad {
    params: MessagingParams,
    messages: Arc<AtomicU64>,
    workers: Option<Workers>,
}

impl MessagingLoad {
    pub fn new(params: MessagingParams) -> Result<Self, LoadError> {
        for (what, n) in [("groups", params.groups), ("senders", params.senders), ("receivers", params.receivers)] {
            if n == 0 {
                return Err(LoadError::config(NAME, format!("{what} must be at least 1")));
            }
        }
        if params.message_bytes == 0 || params.message_bytes > MAX_MESSAGE_BYTES {
            return Err(LoadError::config(
                NAME,
                format!("message_bytes must be 1 to {MAX_MESSAGE_BYTES}, not {}", params.message_bytes),
            ));
        }
        let threads = params.groups.saturating_mul(params.senders.saturating_add(params.receivers));
        if threads > MAX_THREADS {
            return Err(LoadError::config(
                NAME,
                format!(
                    "{} groups × ({} senders + {} receivers) = {threads} threads; at most {MAX_THREADS}",
                    params.groups, params.senders, params.receivers
                ),
            ));
        }
        Ok(Self { params, messages: Arc::default(), workers: None })
    }

    fn threads(&self) -> usize {
        self.params.groups * (self.params.senders + self.params.receivers)
    }

    /// A spawn failure (usually a limit on threads) as an error that says what was asked for.
    fn spawn_error(&self, started: usize, err: LoadError) -> LoadError {
        match err {
            LoadError::Io { source, .. } => LoadError::io(
                NAME,
                format!(
                    "could start only {started} of {} threads (groups × (senders + receivers)); use fewer groups, \
                     senders or receivers, or raise the limits (ulimit -u, kernel.threads-max)",
                    self.threads()
                ),
                source,
            ),
            other => other,
        }
    }
}

impl Load for MessagingLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let p = self.params.clone();
        let mut workers = Workers::new(NAME);
        let go = Arc::new(AtomicBool::new(false));
        let mut started = 0;
        for g in 0..p.groups {
            // Declared after `workers`, so dropped first on an error: receivers of pipes
            // then see end of file while `workers` joins them.
            let mut writers = Vec::with_capacity(p.receivers);
            for r in 0..p.receivers {
                let (reader, writer) = channel(p.transport).map_err(|e| {
                    let what = format!(
                        "create the channel of receiver {} of {} ({:?}; the limit on open files is `ulimit -n`)",
                        g * p.receivers + r + 1,
                        p.groups * p.receivers,
                        p.transport
                    );
                    LoadError::io(NAME, what, e)
                })?;
                writers.push(Arc::new(writer));
                let messages = self.messages.clone();
                let size = p.message_bytes;
                workers
                    .spawn(format!("load-msg{g}-r{r}"), None, move |stop| receive(reader, size, &messages, stop))
                    .map_err(|e| self.spawn_error(started, e))?;
                started += 1;
            }
            for s in 0..p.senders {
                let (writers, go) = (writers.clone(), go.clone());
                let size = p.message_bytes;
                workers
                    .spawn(format!("load-msg{g}-s{s}"), None, move |stop| send(writers, size, &go, stop))
                    .map_err(|e| self.spawn_error(started, e))?;
                started += 1;
            }
        }
        workers.mark_start();
        go.store(true, Ordering::Relaxed);
        self.workers = Some(workers);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let stopped = stop_started(&mut self.workers, NAME)?;
        let d = stopped.duration_s;
        let messages = self.messages.load(Ordering::Relaxed);
        let bytes = messages.saturating_mul(self.params.message_bytes as u64);
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["threads"] = self.threads().into();
        Ok(stopped.into_report(
            NAME,
            parameters,
            vec![
                Intensity::new("messages/s", per_second(messages as f64, d), "messages/s"),
                Intensity::new("MB/s", per_second(mb(bytes), d), "MB/s"),
                Intensity::new("messages", messages as f64, "messages"),
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

    #[test]
    fn default_groups_over_sockets() {
        let mut load = MessagingLoad::new(MessagingParams::default()).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        positive(&report, "messages/s");
        positive(&report, "MB/s");
        let messages = positive(&report, "messages");
        assert_eq!(report.parameters["transport"], "socket");
        assert_eq!(report.parameters["groups"], available_cpus());
        assert_eq!(report.parameters["threads"], available_cpus() * 40);
        let mb_s = report.intensity("MB/s").unwrap();
        assert!((mb_s * report.duration_s * 1e6 - messages * 100.0).abs() < 1.0, "{report:#?}");
    }

    #[test]
    fn pipes() {
        let params =
            MessagingParams { groups: 1, senders: 4, receivers: 3, transport: Transport::Pipe, ..Default::default() };
        let mut load = MessagingLoad::new(params).unwrap();
        let report = run_for(&mut load, Duration::from_millis(400));
        positive(&report, "messages/s");
        assert_eq!(report.parameters["transport"], "pipe");
    }

    #[test]
    fn large_messages_stop_promptly_on_both_transports() {
        // 64 KiB messages fill a pipe or socket buffer with one message: senders block in
        // write most of the time.
        for transport in [Transport::Pipe, Transport::Socket] {
            let params = MessagingParams { groups: 2, senders: 3, receivers: 2, message_bytes: 65_536, transport };
            let mut load = MessagingLoad::new(params).unwrap();
            let report = run_for(&mut load, Duration::from_millis(300));
            positive(&report, "MB/s");
        }
    }

    #[test]
    fn bad_parameters_are_usage_errors() {
        for params in [
            MessagingParams { groups: 0, ..Default::default() },
            MessagingParams { senders: 0, ..Default::default() },
            MessagingParams { receivers: 0, ..Default::default() },
            MessagingParams { message_bytes: 0, ..Default::default() },
            MessagingParams { message_bytes: 65_537, ..Default::default() },
            MessagingParams { groups: 1000, ..Default::default() },
        ] {
            let err = MessagingLoad::new(params).err().unwrap();
            assert!(err.is_usage_error() && err.to_string().contains("messaging"), "{err}");
        }
    }

    #[test]
    fn spawn_errors_say_what_was_asked() {
        let load = MessagingLoad::new(MessagingParams { groups: 2, ..Default::default() }).unwrap();
        let source = std::io::Error::from_raw_os_error(11);
        let err = load.spawn_error(57, LoadError::io(NAME, "spawn thread load-msg1-s17", source));
        let text = err.to_string();
        assert!(!err.is_usage_error());
        assert!(text.contains("only 57 of 80 threads") && text.contains("ulimit -u"), "{text}");
    }
}
