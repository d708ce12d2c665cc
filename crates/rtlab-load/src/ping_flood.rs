//! `ping-flood`: ICMP echo requests through a raw socket, paced as `ping -f` does (Dodiu et
//! al.'s load): the next request leaves as soon as the reply to the previous one arrived, or
//! after 10 ms without a reply, so at least about 100 requests per second go out.
//!
//! The target is 127.0.0.1 by default: the flood then exercises the ICMP path of the network
//! stack (softirq NET_RX) but no network card. A raw socket needs CAP_NET_RAW; without it
//! the load cannot be built, and the error says so. The kernel answers only while
//! net.ipv4.icmp_echo_ignore_all is 0; unanswered requests show as `lost`.

use crate::worker::{is_timeout, stop_started, Workers, POLL_INTERVAL};
use crate::{per_second, Intensity, Load, LoadError, LoadReport};
use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const NAME: &str = "ping-flood";

/// Largest ICMP payload in one IPv4 datagram: 65,535 - 20 (IP header) - 8 (ICMP header).
const MAX_PAYLOAD: usize = 65_507;
/// ICMP header bytes (type, code, checksum, identifier, sequence).
const ICMP_HEADER: usize = 8;
const ECHO_REPLY: u8 = 0;
const ECHO_REQUEST: u8 = 8;
/// `ping -f`: without a reply, the next request leaves after 10 ms.
const FLOOD_WAIT: Duration = Duration::from_millis(10);
/// After the stop flag, how long a sender still waits for the replies in flight.
const DRAIN: Duration = Duration::from_millis(50);
/// Requests sent at most in one go when a paced sender is behind.
const BATCH: u64 = 64;

/// Parameters of [`PingFloodLoad`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PingFloodParams {
    /// Host to flood (IPv4).
    pub target: Ipv4Addr,
    /// Payload bytes per request (ping's default: 56).
    pub payload: usize,
    /// Requests per second over all senders; None = flood as `ping -f` does.
    pub rate: Option<f64>,
    /// Sending threads, each with its own socket and identifier.
    pub senders: usize,
}

impl Default for PingFloodParams {
    fn default() -> Self {
        Self { target: Ipv4Addr::LOCALHOST, payload: 56, rate: None, senders: 1 }
    }
}

#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    received: AtomicU64,
    send_errors: AtomicU64,
}

/// Floods a host with ICMP echo requests and counts the replies.
pub struct PingFloodLoad {
    params: PingFloodParams,
    counters: Arc<Counters>,
    workers: Option<Workers>,
    identifiers: Vec<u16>,
}

/// Identifiers handed out in this process, so that two senders (or two loads) never take
/// each other's replies for their own.
static NEXT_IDENTIFIER: AtomicU16 = AtomicU16::new(0);

/// A process-unique ICMP identifier: derived from the pid, as ping's is, and different for
/// every socket of this process.
fn new_identifier() -> u16 {
    let n = NEXT_IDENTIFIER.fetch_add(1, Ordering::Relaxed);
    (std::process::id() as u16).wrapping_add(n.wrapping_mul(0x9e37))
}

/// Opens a raw ICMP socket connected to `target` (so it receives only that host's packets),
/// with the timeouts that keep its sender responsive to the stop flag.
fn open_socket(target: Ipv4Addr, receive_timeout: Duration) -> Result<Socket, LoadError> {
    let socket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            LoadError::io(NAME, "a raw ICMP socket needs CAP_NET_RAW (run as root, or `setcap cap_net_raw+ep`)", e)
        } else {
            LoadError::io(NAME, "open a raw ICMP socket", e)
        }
    })?;
    socket
        .connect(&SockAddr::from(SocketAddrV4::new(target, 0)))
        .map_err(|e| LoadError::io(NAME, format!("no route to {target}"), e))?;
    socket.set_read_timeout(Some(receive_timeout)).map_err(|e| LoadError::io(NAME, "socket receive timeout", e))?;
    socket.set_write_timeout(Some(POLL_INTERVAL)).map_err(|e| LoadError::io(NAME, "socket send timeout", e))?;
    Ok(socket)
}

/// The Internet checksum (RFC 1071) of `data`.
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = data.chunks_exact(2);
    for word in &mut words {
        sum += u32::from(u16::from_be_bytes([word[0], word[1]]));
    }
    if let [last] = words.remainder() {
        sum += u32::from(u16::from_be_bytes([*last, 0]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request with `payload` pattern bytes; `set_sequence` fills in the sequence
/// number and checksum before each send.
fn echo_request(identifier: u16, payload: usize) -> Vec<u8> {
    let mut packet = vec![0u8; ICMP_HEADER + payload];
    packet[0] = ECHO_REQUEST;
    packet[4..6].copy_from_slice(&identifier.to_be_bytes());
    for (k, b) in packet[ICMP_HEADER..].iter_mut().enumerate() {
        *b = k as u8;
    }
    packet
}

fn set_sequence(packet: &mut [u8], sequence: u16) {
    packet[6..8].copy_from_slice(&sequence.to_be_bytes());
    packet[2..4].fill(0);
    let sum = checksum(packet);
    packet[2..4].copy_from_slice(&sum.to_be_bytes());
}

/// The sequence number of `datagram` (an IPv4 datagram as a raw socket receives it, IP
/// header included) if it is an echo reply to `identifier`. Anything else (our own echo
/// requests, seen on loopback; other ICMP traffic) gives None.
fn echo_reply_sequence(datagram: &[u8], identifier: u16) -> Option<u16> {
    let first = *datagram.first()?;
    let header = usize::from(first & 0x0f) * 4;
    if first >> 4 != 4 || header < 20 || datagram.len() < header + ICMP_HEADER || datagram[9] != 1 {
        return None;
    }
    let icmp = &datagram[header..];
    if icmp[0] != ECHO_REPLY || icmp[1] != 0 || icmp[4..6] != identifier.to_be_bytes() {
        return None;
    }
    Some(u16::from_be_bytes([icmp[6], icmp[7]]))
}

impl PingFloodLoad {
    pub fn new(params: PingFloodParams) -> Result<Self, LoadError> {
        if let Some(rate) = params.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(LoadError::config(
                    NAME,
                    format!("rate must be a positive number of requests/s, not {rate}"),
                ));
            }
        }
        if params.payload > MAX_PAYLOAD {
            return Err(LoadError::config(
                NAME,
                format!("payload must be 0 to {MAX_PAYLOAD} bytes, not {}", params.payload),
            ));
        }
        if params.senders == 0 || params.senders > 16 {
            return Err(LoadError::config(NAME, format!("senders must be 1 to 16, not {}", params.senders)));
        }
        let target = params.target;
        if target.is_unspecified() || target.is_multicast() || target.is_broadcast() {
            return Err(LoadError::config(
                NAME,
                format!("target must be one host (127.0.0.1 for this one), not {target}"),
            ));
        }
        // The environment is checked here, before anything is measured: no CAP_NET_RAW, or
        // no route to the target, is found when the load is built.
        drop(open_socket(target, POLL_INTERVAL)?);
        Ok(Self { params, counters: Arc::default(), workers: None, identifiers: Vec::new() })
    }
}

/// One sender: its socket, identifier and share of the rate.
struct Sender {
    socket: Socket,
    identifier: u16,
    payload: usize,
    rate: Option<f64>,
}

impl Sender {
    /// Sends requests and receives replies until `stop`, then waits up to [`DRAIN`] for the
    /// replies still in flight.
    fn run(self, counters: &Counters, stop: &AtomicBool) -> Result<(), String> {
        let mut request = echo_request(self.identifier, self.payload);
        // Room for the largest IP header and our whole request.
        let mut buf = vec![0u8; (60 + ICMP_HEADER + self.payload).max(2048)];
        let mut sequence: u16 = 0;
        let (mut attempted, mut sent, mut received) = (0u64, 0u64, 0u64);
        // Flood mode: the request whose reply releases the next one, and when the next one
        // leaves anyway.
        let mut awaited: Option<u16> = None;
        let mut next_send = Instant::now();
        let started = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let due = match self.rate {
                None => u64::from(now >= next_send),
                Some(rate) => ((started.elapsed().as_secs_f64() * rate) as u64).saturating_sub(attempted).min(BATCH),
            };
            for _ in 0..due {
                sequence = sequence.wrapping_add(1);
                set_sequence(&mut request, sequence);
                attempted += 1;
                // Errors are counted, not fatal: unreachable hosts and full queues are what
                // a flood runs into.
                match self.socket.send(&request) {
                    Ok(_) => {
                        sent += 1;
                        counters.sent.fetch_add(1, Ordering::Relaxed);
                        awaited = Some(sequence);
                    }
                    Err(_) => {
                        counters.send_errors.fetch_add(1, Ordering::Relaxed);
                        awaited = None;
                    }
                }
                next_send = now + FLOOD_WAIT;
            }
            match (&self.socket).read(&mut buf) {
                Ok(n) => {
                    if let Some(reply) = echo_reply_sequence(&buf[..n], self.identifier) {
                        received += 1;
                        counters.received.fetch_add(1, Ordering::Relaxed);
                        if awaited == Some(reply) {
                            awaited = None;
                            next_send = Instant::now();
                        }
                    }
                }
                Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("receive: {e}")),
            }
        }
        // The replies to the last requests are on their way: count them, so that `lost`
        // means lost.
        let drain_until = Instant::now() + DRAIN;
        while received < sent && Instant::now() < drain_until {
            match (&self.socket).read(&mut buf) {
                Ok(n) => {
                    if echo_reply_sequence(&buf[..n], self.identifier).is_some() {
                        received += 1;
                        counters.received.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        Ok(())
    }
}

impl Load for PingFloodLoad {
    fn name(&self) -> &str {
        NAME
    }

    fn start(&mut self) -> Result<(), LoadError> {
        if self.workers.is_some() {
            return Err(LoadError::state(NAME, "already started"));
        }
        let senders = self.params.senders;
        let rate = self.params.rate.map(|r| r / senders as f64);
        // Flood mode waits 10 ms for a reply; a paced sender wakes at least once per request.
        let receive_timeout = match rate {
            None => FLOOD_WAIT,
            Some(r) => {
                Duration::try_from_secs_f64(1.0 / r).unwrap_or(FLOOD_WAIT).clamp(Duration::from_millis(1), FLOOD_WAIT)
            }
        };
        let mut sockets = Vec::with_capacity(senders);
        for _ in 0..senders {
            sockets.push(open_socket(self.params.target, receive_timeout)?);
        }
        let mut workers = Workers::new(NAME);
        self.identifiers.clear();
        workers.mark_start();
        for (i, socket) in sockets.into_iter().enumerate() {
            let identifier = new_identifier();
            self.identifiers.push(identifier);
            let sender = Sender { socket, identifier, payload: self.params.payload, rate };
            let counters = self.counters.clone();
            workers.spawn(format!("load-ping-{i}"), None, move |stop| sender.run(&counters, stop))?;
        }
        self.workers = Some(workers);
        Ok(())
    }

    fn stop(&mut self) -> Result<LoadReport, LoadError> {
        let stopped = stop_started(&mut self.workers, NAME)?;
        let c = &self.counters;
        let sent = c.sent.load(Ordering::Relaxed);
        let received = c.received.load(Ordering::Relaxed);
        let d = stopped.duration_s;
        let achieved = vec![
            Intensity::new("echoes/s", per_second(received as f64, d), "echoes/s"),
            Intensity::new("requests/s sent", per_second(sent as f64, d), "requests/s"),
            Intensity::new("echoes received", received as f64, "echoes"),
            Intensity::new("requests sent", sent as f64, "requests"),
            Intensity::new("lost", sent.saturating_sub(received) as f64, "requests"),
            Intensity::new("send errors", c.send_errors.load(Ordering::Relaxed) as f64, "requests"),
        ];
        let mut parameters = serde_json::to_value(&self.params).unwrap_or_default();
        parameters["identifiers"] = self.identifiers.clone().into();
        Ok(stopped.into_report(NAME, parameters, achieved))
    }

    fn check_alive(&mut self) -> Option<String> {
        self.workers.as_ref().and_then(Workers::failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{positive, run_for};

    /// CAP_NET_RAW in the effective set of this process.
    fn has_net_raw() -> bool {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        rtlab_sys::privileges::parse_cap_eff(&status).is_some_and(|caps| rtlab_sys::privileges::has_cap(caps, 13))
    }

    #[test]
    fn checksum_of_rfc1071_example_and_of_a_request() {
        // RFC 1071 section 3: the words sum to 0xddf2, so the checksum is its complement.
        assert_eq!(checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), !0xddf2);
        // A packet whose checksum field is filled in sums to zero, odd lengths included.
        for payload in [0, 1, 56, 1001] {
            let mut packet = echo_request(0x1234, payload);
            set_sequence(&mut packet, 7);
            assert_eq!(checksum(&packet), 0, "payload {payload}");
            assert_eq!(packet.len(), ICMP_HEADER + payload);
            assert_eq!((packet[0], &packet[4..8]), (ECHO_REQUEST, &[0x12, 0x34, 0, 7][..]));
        }
    }

    #[test]
    fn recognises_only_our_echo_replies() {
        let mut datagram = vec![0x45u8, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
        let mut icmp = echo_request(0xbeef, 4);
        set_sequence(&mut icmp, 42);
        datagram.extend_from_slice(&icmp);
        // Our own request, as loopback shows it to a raw socket: ignored.
        assert_eq!(echo_reply_sequence(&datagram, 0xbeef), None);
        datagram[20] = ECHO_REPLY;
        assert_eq!(echo_reply_sequence(&datagram, 0xbeef), Some(42));
        assert_eq!(echo_reply_sequence(&datagram, 0xbeee), None);
        assert_eq!(echo_reply_sequence(&datagram[..25], 0xbeef), None);
        assert_eq!(echo_reply_sequence(&[], 0xbeef), None);
    }

    #[test]
    fn identifiers_differ() {
        let (a, b) = (new_identifier(), new_identifier());
        assert_ne!(a, b);
    }

    #[test]
    fn floods_loopback_as_ping_f() {
        if !has_net_raw() {
            eprintln!("skipped: no CAP_NET_RAW");
            return;
        }
        let mut load = PingFloodLoad::new(PingFloodParams::default()).unwrap();
        let report = run_for(&mut load, Duration::from_millis(500));
        let echoes = positive(&report, "echoes/s");
        let sent = positive(&report, "requests/s sent");
        // ping -f: at least 100 requests/s; on loopback every one is answered.
        assert!(sent >= 80.0, "{report:#?}");
        assert!(echoes <= sent * 1.001 && echoes >= sent * 0.9, "{report:#?}");
        assert!(report.intensity("lost").unwrap() <= 0.01 * report.intensity("requests sent").unwrap() + 1.0);
        assert_eq!(report.parameters["payload"], 56);
        assert_eq!(report.parameters["target"], "127.0.0.1");
    }

    #[test]
    fn keeps_a_target_rate_with_two_senders() {
        if !has_net_raw() {
            eprintln!("skipped: no CAP_NET_RAW");
            return;
        }
        let params = PingFloodParams { rate: Some(2000.0), senders: 2, payload: 1000, ..Default::default() };
        let mut load = PingFloodLoad::new(params).unwrap();
        let report = run_for(&mut load, Duration::from_millis(600));
        let sent = positive(&report, "requests/s sent");
        assert!(sent < 2000.0 * 1.2 && sent > 2000.0 * 0.3, "{report:#?}");
        positive(&report, "echoes/s");
        let ids = report.parameters["identifiers"].as_array().unwrap();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
    }

    #[test]
    fn bad_parameters_are_usage_errors() {
        for params in [
            PingFloodParams { rate: Some(0.0), ..Default::default() },
            PingFloodParams { rate: Some(f64::NAN), ..Default::default() },
            PingFloodParams { payload: 70_000, ..Default::default() },
            PingFloodParams { senders: 0, ..Default::default() },
            PingFloodParams { target: Ipv4Addr::BROADCAST, ..Default::default() },
            PingFloodParams { target: Ipv4Addr::new(224, 0, 0, 1), ..Default::default() },
        ] {
            let err = PingFloodLoad::new(params).err().unwrap();
            assert!(err.is_usage_error() && err.to_string().contains("ping-flood"), "{err}");
        }
    }

    /// Without CAP_NET_RAW the load cannot be built, and says why in one line. As root, the
    /// check runs in a copy of this test binary started by `setpriv` without the capability.
    #[test]
    fn without_cap_net_raw_the_error_says_so() {
        let check = || {
            let err = PingFloodLoad::new(PingFloodParams::default()).err().expect("built without CAP_NET_RAW");
            let text = err.to_string();
            assert!(!err.is_usage_error(), "{text}");
            assert!(text.starts_with("load ping-flood: ") && text.contains("CAP_NET_RAW"), "{text}");
            assert!(!text.contains('\n'), "{text}");
            println!("ping-flood without CAP_NET_RAW: {text}");
        };
        if std::env::var_os("RTLAB_PING_FLOOD_NO_CAP").is_some() || !has_net_raw() {
            check();
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let output = std::process::Command::new("setpriv")
            .args(["--inh-caps=-net_raw", "--bounding-set=-net_raw", "--"])
            .arg(exe)
            .args(["--exact", "ping_flood::tests::without_cap_net_raw_the_error_says_so", "--nocapture"])
            .env("RTLAB_PING_FLOOD_NO_CAP", "1")
            .output();
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                eprintln!("skipped: cannot run setpriv: {e}");
                return;
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !stdout.contains("running 1 test") {
            eprintln!("skipped: setpriv could not drop CAP_NET_RAW: {}", String::from_utf8_lossy(&output.stderr));
            return;
        }
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let line = stdout.lines().find(|l| l.contains("needs CAP_NET_RAW"));
        assert!(line.is_some(), "{stdout}");
        println!("in a child without CAP_NET_RAW: {}", line.unwrap_or_default());
    }
}
