//! The station: what runs on the host under test (`rtlab station`).
//!
//! Four threads, each on its own socket:
//! - the **responder** (SCHED_FIFO, pinned, memory locked): blocks on a raw ICMP socket
//!   that the kernel filters down to echo requests carrying the protocol's magic. The
//!   kernel answers each such request itself, from its receive softirq (the early answer,
//!   [`crate`] docs); the responder checks the copy it receives, the cheap checks first
//!   (form, session, the session's peer address, sequence) and the MAC only then, within a
//!   budget for packets that fail it; it waits Δ from its wake-up and sends the ANSWER. The
//!   kernel filter also keeps out every source that is not a session's peer. Its loop
//!   allocates and locks nothing: sessions live in a fixed table of atomics.
//! - **control** (UDP, the listen address): HELLO opens a session (WELCOME), STATUS_REQUEST
//!   returns the counters (STATUS), LOAD_START and LOAD_STOP start and stop a load sent by
//!   the station within its [`LoadLimits`], or one it runs on itself
//!   ([`LoadKind::is_local`]: the shell loop, cpu). Nothing else is answered. It closes sessions
//!   idle for [`SESSION_IDLE_NS`] and keeps the kernel filter's peer list.
//! - the **flood sink** (UDP, listen port + 1): counts datagrams and bytes, answers nothing.
//! - the **comms echo server** (TCP, listen port + 2): after a challenge that only a key
//!   holder can answer, echoes what it receives; at most [`MAX_COMMS_CONNECTIONS`].

use crate::protocol::{
    self, Answer, Hello, Key, Kind, LoadKind, LoadRequest, LoadTally, Rejection, StationCounters, Welcome,
    MAX_MESSAGE_LEN,
};
use crate::StationError;
use rtlab_sys::clock::monotonic_ns;
use rtlab_sys::icmp::{IcmpFilter, IcmpRecv, IcmpSocket, ECHO_REQUEST};
use rtlab_sys::net::{clock_pair_ns, realtime_ns, wait_readable_any};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Regnier's Δ.
pub const DEFAULT_DELTA_NS: u64 = 10_000;
/// Stimuli per second answered at most by default (the paper sends 20).
pub const DEFAULT_MAX_RATE_HZ: u32 = 1_000;
/// Sessions the station keeps at once; the least recently used is replaced.
pub const SESSIONS: usize = 16;
/// A session used this recently is never replaced by a new one.
pub const SESSION_KEPT_NS: u64 = 1_000_000_000;
/// HELLOs accepted per second at most (each opens a session).
pub const MAX_HELLOS_PER_S: u32 = 10;
/// A session unused this long is closed: its messages are then `unknown_session`, and its
/// peer leaves the kernel filter. The measuring side's clients open a new one when theirs
/// may have been closed (a STATUS after a long scenario).
pub const SESSION_IDLE_NS: u64 = 60_000_000_000;
/// Packets failing authentication that the real-time task verifies per second at most,
/// with a burst of a tenth of that: above it, stimuli that passed the cheap checks are
/// dropped before the MAC (`auth_limited`), so a flood that guessed a session's id and
/// peer costs the task a recvmsg per packet, not an HMAC.
pub const AUTH_FAILURES_PER_S: u32 = 100;
/// HELLO nonces remembered: every HELLO accepted within the freshness window
/// ([`protocol::HELLO_FRESH_NS`] either way, 60 s at 10 per second, 600) and a margin.
const REMEMBERED_NONCES: usize = 640;
/// The largest UDP or ICMP payload a load is sent with: one unfragmented IPv4 packet on
/// an Ethernet MTU of 1500 (20 bytes of IP and 8 of UDP or ICMP header).
pub const MAX_DATAGRAM_PAYLOAD: u32 = 1472;
/// The largest comms message (each client holds two buffers of it).
pub const MAX_COMMS_MESSAGE: u32 = 1 << 20;
/// Bytes of IP and UDP (or ICMP) header counted with each datagram against
/// [`LoadLimits::max_bytes_per_s`].
const DATAGRAM_OVERHEAD: u64 = 28;
/// Comms connections served at once.
pub const MAX_COMMS_CONNECTIONS: usize = 4;
/// How often blocking threads look at the stop flag.
const STOP_POLL_MS: i32 = 200;

/// Sends the loads that the measuring side asks for (LOAD_START) to the measuring side, or
/// runs them on this host ([`LoadKind::is_local`]): the binary implements it with rtlab's
/// loads. The station only ever passes the requesting session's own address as the target.
pub trait LoadSource: Send + Sync {
    /// Starts `request` towards `target` (the session's address with the request's port;
    /// unused, with port 0, for a load the station runs on itself); Err(why) when it is
    /// refused or cannot start.
    fn start(&self, request: LoadRequest, target: SocketAddrV4) -> Result<(), String>;
    /// Stops the load of `kind` (if it runs) and returns what it did.
    fn stop(&self, kind: LoadKind) -> Option<[u64; 4]>;
}

/// A load sent for a session stops when the session has been silent this long (the
/// measuring side keeps it alive with STATUS requests; a measuring side that died cannot
/// leave the station flooding).
pub const LOAD_IDLE_NS: u64 = 10_000_000_000;
/// The longest a load may be asked to run.
pub const MAX_LOAD_DURATION_MS: u64 = 24 * 3600 * 1000;

/// How the station runs.
#[derive(Debug, Clone)]
pub struct StationConfig {
    /// Control address: the UDP port of HELLO and STATUS; the sink listens on port + 1, the
    /// comms server on port + 2; the ICMP socket on the address. IPv4.
    pub listen: SocketAddrV4,
    pub key: Key,
    pub delta_ns: u64,
    pub max_rate_hz: u32,
    /// The responder's CPU and SCHED_FIFO priority (None: not pinned / SCHED_OTHER).
    pub responder_cpu: Option<usize>,
    pub responder_priority: Option<i32>,
    /// What a LOAD_START may ask for.
    pub load_limits: LoadLimits,
    /// Sessions unused this long are closed ([`SESSION_IDLE_NS`]; shorter only in tests).
    pub session_idle_ns: u64,
}

/// The most a load sent by the station may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadLimits {
    /// Datagrams or echo requests per second (`--max-load-rate`).
    pub max_rate: u64,
    /// Bytes per second on the wire (`--max-load-bytes`): datagrams counted with their IP and
    /// UDP or ICMP headers, comms as message bytes sent plus echoed.
    pub max_bytes_per_s: u64,
}

impl Default for LoadLimits {
    fn default() -> Self {
        LoadLimits { max_rate: 250_000, max_bytes_per_s: 125_000_000 }
    }
}

impl LoadLimits {
    /// `request` with its defaults filled in and flat out turned into the highest rate the
    /// limits allow, or why it is refused. A flood ping without a rate stays unpaced: it
    /// keeps one request in flight, so the requesting host's own replies pace it. A load
    /// the station runs on itself has no port, payload or rate: all three must be 0.
    pub fn resolve(&self, request: LoadRequest) -> Result<LoadRequest, String> {
        let name = request.kind.name();
        if request.kind.is_local() {
            if request.port != 0 || request.payload != 0 || request.rate != 0 {
                return Err(format!("{name}: runs on the station itself; its port, payload and rate must be 0"));
            }
            if request.duration_ms > MAX_LOAD_DURATION_MS {
                return Err(format!("{name}: {} ms is longer than 24 h", request.duration_ms));
            }
            return Ok(request);
        }
        let payload = match (request.kind, request.payload) {
            (LoadKind::UdpFlood, 0) => 64,
            (LoadKind::PingFlood, 0) => 56,
            (LoadKind::Comms, 0) => 60_000,
            (_, p) => p,
        };
        match request.kind {
            LoadKind::UdpFlood | LoadKind::PingFlood if payload > MAX_DATAGRAM_PAYLOAD => {
                return Err(format!(
                    "{name}: a payload of {payload} B is above {MAX_DATAGRAM_PAYLOAD} B (one unfragmented packet)"
                ))
            }
            LoadKind::Comms if payload > MAX_COMMS_MESSAGE => {
                return Err(format!("comms: a message of {payload} B is above {MAX_COMMS_MESSAGE} B"))
            }
            _ => {}
        }
        let rate = match request.kind {
            LoadKind::UdpFlood | LoadKind::PingFlood => {
                let wire = u64::from(payload) + DATAGRAM_OVERHEAD;
                let most = self.max_rate.min(self.max_bytes_per_s / wire);
                match request.rate {
                    0 if request.kind == LoadKind::PingFlood => 0,
                    0 if most == 0 => {
                        return Err(format!("{name}: one {wire}-byte packet a second is above --max-load-bytes"))
                    }
                    0 => most,
                    r if r > self.max_rate => {
                        return Err(format!("{name}: {r}/s is above --max-load-rate {}", self.max_rate))
                    }
                    r if r.saturating_mul(wire) > self.max_bytes_per_s => {
                        return Err(format!(
                            "{name}: {r} packets/s of {wire} B is above --max-load-bytes {} B/s",
                            self.max_bytes_per_s
                        ))
                    }
                    r => r,
                }
            }
            LoadKind::Comms => match request.rate {
                0 => self.max_bytes_per_s,
                r if r > self.max_bytes_per_s => {
                    return Err(format!("comms: {r} B/s is above --max-load-bytes {} B/s", self.max_bytes_per_s))
                }
                r => r,
            },
            // Returned above: no rate.
            LoadKind::ShellLoop | LoadKind::Cpu => 0,
        };
        if request.duration_ms > MAX_LOAD_DURATION_MS {
            return Err(format!("{name}: {} ms is longer than 24 h", request.duration_ms));
        }
        Ok(LoadRequest { payload, rate, ..request })
    }
}

/// The counters, shared by the threads.
#[derive(Default)]
struct Counters {
    answered: AtomicU64,
    rate_limited: AtomicU64,
    bad_tag: AtomicU64,
    malformed: AtomicU64,
    oversized: AtomicU64,
    wrong_version: AtomicU64,
    replayed: AtomicU64,
    unknown_session: AtomicU64,
    sessions: AtomicU64,
    sink_packets: AtomicU64,
    sink_bytes: AtomicU64,
    comms_bytes: AtomicU64,
    comms_refused: AtomicU64,
    answer_send_errors: AtomicU64,
    foreign_source: AtomicU64,
    auth_limited: AtomicU64,
}

impl Counters {
    fn reject(&self, why: Rejection) {
        let counter = match why {
            Rejection::Oversized => &self.oversized,
            Rejection::Malformed => &self.malformed,
            Rejection::WrongVersion => &self.wrong_version,
            Rejection::BadTag => &self.bad_tag,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> StationCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (interrupts, net_rx_softirqs) = host_interrupt_totals();
        StationCounters {
            station_time_ns: monotonic_ns(),
            answered: get(&self.answered),
            rate_limited: get(&self.rate_limited),
            bad_tag: get(&self.bad_tag),
            malformed: get(&self.malformed),
            oversized: get(&self.oversized),
            wrong_version: get(&self.wrong_version),
            replayed: get(&self.replayed),
            unknown_session: get(&self.unknown_session),
            sessions: get(&self.sessions),
            sink_packets: get(&self.sink_packets),
            sink_bytes: get(&self.sink_bytes),
            comms_bytes: get(&self.comms_bytes),
            comms_refused: get(&self.comms_refused),
            answer_send_errors: get(&self.answer_send_errors),
            interrupts,
            net_rx_softirqs,
            icmp_echo_replies: icmp_echo_replies().unwrap_or(0),
            foreign_source: get(&self.foreign_source),
            auth_limited: get(&self.auth_limited),
        }
    }
}

/// One session: written by the control thread, read by the responder without a lock.
/// `id` 0 is a free slot; a slot is replaced by first zeroing `id`, so the responder never
/// pairs a new id with an old peer for longer than the replacement takes.
#[derive(Default)]
struct SessionSlot {
    id: AtomicU64,
    /// IPv4 address << 16 | port of the answers' destination (the HELLO's source).
    peer: AtomicU64,
    /// Highest stimulus sequence answered (replay protection).
    last_stimulus: AtomicU64,
    /// Highest STATUS_REQUEST sequence answered.
    last_control: AtomicU64,
    /// CLOCK_REALTIME of the last use, for replacing the least recently used.
    last_used_ns: AtomicU64,
}

struct SessionTable {
    slots: [SessionSlot; SESSIONS],
}

impl SessionTable {
    fn find(&self, id: u64) -> Option<&SessionSlot> {
        if id == 0 {
            return None;
        }
        self.slots.iter().find(|s| s.id.load(Ordering::Acquire) == id)
    }

    /// Opens a session for `peer` in a free slot or the least recently used one, but never
    /// in one used within the last [`SESSION_KEPT_NS`]: false when every slot is that busy.
    /// (So a flood of HELLOs cannot take an active measurement's session, and the
    /// responder, which reads a slot without a lock, never sees it replaced mid-stimulus.)
    fn open(&self, id: u64, peer: SocketAddrV4, now_ns: u64) -> bool {
        let slot = self
            .slots
            .iter()
            .min_by_key(|s| if s.id.load(Ordering::Acquire) == 0 { 0 } else { s.last_used_ns.load(Ordering::Relaxed) })
            .expect("the table has slots");
        let in_use = slot.id.load(Ordering::Acquire) != 0;
        if in_use && now_ns.saturating_sub(slot.last_used_ns.load(Ordering::Relaxed)) < SESSION_KEPT_NS {
            return false;
        }
        slot.id.store(0, Ordering::Release);
        slot.peer.store(u64::from(u32::from(*peer.ip())) << 16 | u64::from(peer.port()), Ordering::Relaxed);
        slot.last_stimulus.store(0, Ordering::Relaxed);
        slot.last_control.store(0, Ordering::Relaxed);
        slot.last_used_ns.store(now_ns, Ordering::Relaxed);
        slot.id.store(id, Ordering::Release);
        true
    }
}

impl SessionTable {
    /// Closes every session unused for longer than `idle_ns`; whether any was closed.
    fn close_idle(&self, now_ns: u64, idle_ns: u64) -> bool {
        let mut closed = false;
        for slot in &self.slots {
            if slot.id.load(Ordering::Acquire) != 0 && slot.idle_for(now_ns) > idle_ns {
                slot.id.store(0, Ordering::Release);
                closed = true;
            }
        }
        closed
    }

    /// The peer addresses of the open sessions, each once.
    fn peer_addresses(&self) -> Vec<Ipv4Addr> {
        let mut peers: Vec<Ipv4Addr> =
            self.slots.iter().filter(|s| s.id.load(Ordering::Acquire) != 0).map(|s| *s.peer().ip()).collect();
        peers.sort();
        peers.dedup();
        peers
    }
}

impl SessionSlot {
    fn idle_for(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.last_used_ns.load(Ordering::Relaxed))
    }

    fn peer(&self) -> SocketAddrV4 {
        let packed = self.peer.load(Ordering::Relaxed);
        SocketAddrV4::new(Ipv4Addr::from((packed >> 16) as u32), packed as u16)
    }

    /// Accepts `sequence` if it is higher than every one accepted before in `last`.
    fn advance(last: &AtomicU64, sequence: u64) -> bool {
        last.fetch_max(sequence, Ordering::AcqRel) < sequence
    }
}

/// A station with its sockets open, ready to [`run`](Station::run).
pub struct Station {
    config: StationConfig,
    loads: Option<Arc<dyn LoadSource>>,
    control: UdpSocket,
    sink: UdpSocket,
    comms: TcpListener,
    icmp: IcmpSocket,
    /// The ICMP socket's kernel filter, which the control thread keeps to the sessions'
    /// peers.
    filter: IcmpFilter,
    counters: Arc<Counters>,
    sessions: Arc<SessionTable>,
}

impl Station {
    /// Opens the four sockets (fails when a port is taken or raw sockets are not allowed).
    pub fn bind(config: StationConfig) -> Result<Station, StationError> {
        let ip = *config.listen.ip();
        let port = config.listen.port();
        if port == 0 || port > u16::MAX - 2 {
            return Err(StationError::Config(format!(
                "the listen port must be 1 to {} (the sink and comms server take the next two)",
                u16::MAX - 2
            )));
        }
        let bind_error = |what: &str, e: std::io::Error| StationError::Io { what: what.to_string(), source: e };
        let control = UdpSocket::bind(SocketAddrV4::new(ip, port))
            .map_err(|e| bind_error(&format!("bind the control socket to {ip}:{port}"), e))?;
        let sink = UdpSocket::bind(SocketAddrV4::new(ip, port + 1))
            .map_err(|e| bind_error(&format!("bind the flood sink to {ip}:{}", port + 1), e))?;
        let comms = TcpListener::bind(SocketAddrV4::new(ip, port + 2))
            .map_err(|e| bind_error(&format!("bind the comms server to {ip}:{}", port + 2), e))?;
        let icmp = IcmpSocket::open().map_err(StationError::Sys)?;
        if !ip.is_unspecified() {
            icmp.bind(ip).map_err(StationError::Sys)?;
        }
        // No session yet: no source passes.
        let filter = icmp.filter_handle().map_err(StationError::Sys)?;
        filter.keep_only_from(ECHO_REQUEST, protocol::MAGIC, &[]).map_err(StationError::Sys)?;
        match rtlab_sys::icmp::kernel_answers_echo() {
            Ok(true) => {}
            Ok(false) => {
                return Err(StationError::Host(
                    "the kernel does not answer ICMP echo requests (net.ipv4.icmp_echo_ignore_all = 1): the early \
                     answer needs it; run: sysctl net.ipv4.icmp_echo_ignore_all=0"
                        .into(),
                ))
            }
            Err(e) => return Err(StationError::Host(format!("cannot tell whether the kernel answers pings: {e}"))),
        }
        for socket in [&control, &sink] {
            socket
                .set_read_timeout(Some(Duration::from_millis(STOP_POLL_MS as u64)))
                .map_err(|e| bind_error("set a read timeout", e))?;
        }
        comms.set_nonblocking(true).map_err(|e| bind_error("make the comms listener non-blocking", e))?;
        Ok(Station {
            config,
            loads: None,
            control,
            sink,
            comms,
            icmp,
            filter,
            counters: Arc::new(Counters::default()),
            sessions: Arc::new(SessionTable { slots: Default::default() }),
        })
    }

    /// Lets the measuring side ask for loads sent from here (LOAD_START); without it every
    /// LOAD_START is refused.
    pub fn with_loads(mut self, loads: Arc<dyn LoadSource>) -> Station {
        self.loads = Some(loads);
        self
    }

    /// The control address (the port the measuring side gives with --station).
    pub fn local_addr(&self) -> SocketAddr {
        self.control.local_addr().unwrap_or(SocketAddr::V4(self.config.listen))
    }

    /// The counters now.
    pub fn counters_handle(&self) -> CountersHandle {
        CountersHandle(self.counters.clone())
    }

    /// Serves until `stop` is set; returns the final counters. The responder's real-time
    /// settings are made on its own thread and undone when it ends.
    pub fn run(self, stop: Arc<AtomicBool>) -> Result<StationCounters, StationError> {
        let Station { config, loads, control, sink, comms, icmp, filter, counters, sessions } = self;
        let answer_socket =
            control.try_clone().map_err(|e| StationError::Io { what: "clone the control socket".into(), source: e })?;
        let small = |name: &str| std::thread::Builder::new().name(name.into()).stack_size(256 * 1024);
        let spawn_error = |e| StationError::Io { what: "start a station thread".into(), source: e };

        let responder = {
            let (counters, sessions, stop, config) = (counters.clone(), sessions.clone(), stop.clone(), config.clone());
            std::thread::Builder::new()
                .name("rtlab-station-rt".into())
                .spawn(move || respond(icmp, answer_socket, &config, &counters, &sessions, &stop))
                .map_err(spawn_error)?
        };
        let control_thread = {
            let (counters, sessions, stop, config) = (counters.clone(), sessions.clone(), stop.clone(), config.clone());
            small("rtlab-station-ctl")
                .spawn(move || {
                    let result =
                        serve_control(control, &filter, &config, loads.as_deref(), &counters, &sessions, &stop);
                    // A control thread that cannot keep the filter ends the station.
                    stop.store(true, Ordering::Relaxed);
                    result
                })
                .map_err(spawn_error)?
        };
        let sink_thread = {
            let (counters, stop) = (counters.clone(), stop.clone());
            small("rtlab-station-sink").spawn(move || serve_sink(sink, &counters, &stop)).map_err(spawn_error)?
        };
        let comms_thread = {
            let (counters, stop, key) = (counters.clone(), stop.clone(), config.key.clone());
            small("rtlab-station-comms").spawn(move || serve_comms(comms, key, counters, &stop)).map_err(spawn_error)?
        };
        let responder_result = responder.join().unwrap_or(Err(StationError::Panicked("responder")));
        // Whatever ended the responder ends the others.
        stop.store(true, Ordering::Relaxed);
        let control_result = control_thread.join().unwrap_or(Err(StationError::Panicked("control")));
        let _ = sink_thread.join();
        let _ = comms_thread.join();
        responder_result?;
        control_result?;
        Ok(counters.snapshot())
    }
}

/// Reads the station's counters from another thread (the command's progress line).
#[derive(Clone)]
pub struct CountersHandle(Arc<Counters>);

impl CountersHandle {
    pub fn snapshot(&self) -> StationCounters {
        self.0.snapshot()
    }
}

/// The responder thread: real-time set-up, then the loop until `stop`.
fn respond(
    mut icmp: IcmpSocket,
    answers: UdpSocket,
    config: &StationConfig,
    counters: &Counters,
    sessions: &SessionTable,
    stop: &AtomicBool,
) -> Result<(), StationError> {
    let _affinity = match config.responder_cpu {
        Some(cpu) => Some(rtlab_sys::sched::AffinityGuard::pin_current_thread(cpu).map_err(StationError::Sys)?),
        None => None,
    };
    let _scheduling = match config.responder_priority {
        Some(priority) => Some(
            rtlab_sys::sched::SchedulingGuard::set_current_thread(rtlab_sys::sched::Policy::Fifo, priority)
                .map_err(StationError::Sys)?,
        ),
        None => None,
    };
    rtlab_sys::memory::prefault_stack(64 * 1024);
    let mut packet = [0u8; 1536];
    let mut out = [0u8; MAX_MESSAGE_LEN];
    // A burst of a tenth of a second's stimuli.
    let mut bucket = TokenBucket::new(config.max_rate_hz, (config.max_rate_hz / 10).max(1), monotonic_ns());
    let mut auth_failures = TokenBucket::new(AUTH_FAILURES_PER_S, AUTH_FAILURES_PER_S / 10, monotonic_ns());
    let fd = icmp.as_raw_fd();
    while !stop.load(Ordering::Relaxed) {
        // A bounded wait, so a stop is seen without a packet.
        if !wait_readable_any([fd], STOP_POLL_MS).map_err(StationError::Sys)?[0] {
            continue;
        }
        let received = icmp.recv(&mut packet).map_err(StationError::Sys)?;
        // CLOCK_REALTIME for the answer (the kernel's receive time is on it); the
        // monotonic clock for Δ, the rate and the session's age (a clock step moves neither).
        let (wake_ns, wake_monotonic) = clock_pair_ns();
        let IcmpRecv::Packet { len, from, kernel_rx_ns } = received else { continue };
        let Some(payload) = echo_payload(&packet[..len]) else {
            counters.malformed.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        // The checks that cost no MAC first: a flood without the key is dropped by them.
        let header = match protocol::check_form(payload) {
            Ok(header) => header,
            Err(why) => {
                counters.reject(why);
                continue;
            }
        };
        if header.kind != Kind::Stimulus {
            counters.malformed.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let Some(session) = sessions.find(header.session) else {
            counters.unknown_session.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        if from != *session.peer().ip() {
            counters.foreign_source.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if session.last_stimulus.load(Ordering::Acquire) >= header.sequence {
            counters.replayed.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        // Only a packet that names a held session, comes from its peer and carries a new
        // sequence costs an HMAC; those that fail it are held to a budget.
        if !auth_failures.has_token(wake_monotonic) {
            counters.auth_limited.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if !protocol::verify_tag(&config.key, payload) {
            auth_failures.take(wake_monotonic);
            counters.bad_tag.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let body = protocol::body_of(payload);
        // The control thread never replaces a slot used within SESSION_KEPT_NS, nor closes
        // one used within SESSION_IDLE_NS; the id is checked again around the replay check
        // for one idle longer than that.
        if session.id.load(Ordering::Acquire) != header.session {
            counters.unknown_session.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if !SessionSlot::advance(&session.last_stimulus, header.sequence) {
            counters.replayed.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if session.id.load(Ordering::Acquire) != header.session {
            counters.unknown_session.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if !bucket.take(wake_monotonic) {
            counters.rate_limited.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        session.last_used_ns.store(wake_monotonic, Ordering::Relaxed);
        // Regnier's Δ: the answer leaves no earlier than Δ after the task woke, so that it
        // cannot overtake the kernel's early answer. A busy wait: Δ is microseconds.
        let due = wake_monotonic + config.delta_ns;
        let mut now = monotonic_ns();
        while now < due {
            std::hint::spin_loop();
            now = monotonic_ns();
        }
        let send_ns = wake_ns + (now - wake_monotonic);
        let answer = Answer {
            sent_ns: protocol::le_u64(body),
            station_rx_ns: kernel_rx_ns.unwrap_or(0),
            station_wake_ns: wake_ns,
            station_send_ns: send_ns,
        };
        let len =
            protocol::encode(&config.key, Kind::Answer, header.session, header.sequence, &answer.to_body(), &mut out);
        if answers.send_to(&out[..len], session.peer()).is_ok() {
            counters.answered.fetch_add(1, Ordering::Relaxed);
        } else {
            counters.answer_send_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// The protocol message inside an IPv4 packet holding an ICMP echo request: the bytes after
/// the IP header and the 8-byte ICMP header.
fn echo_payload(packet: &[u8]) -> Option<&[u8]> {
    let ihl = usize::from(*packet.first()? & 0x0f) * 4;
    if ihl < 20 || packet.get(ihl).copied() != Some(ECHO_REQUEST) {
        return None;
    }
    packet.get(ihl + 8..)
}

/// At most `rate` per second on average, `burst` at once.
struct TokenBucket {
    rate: u64,
    capacity: u64,
    /// Tokens × 1e9, to stay in integers.
    tokens_ns: u64,
    last_ns: u64,
}

impl TokenBucket {
    fn new(rate: u32, burst: u32, now_ns: u64) -> Self {
        let rate = u64::from(rate.max(1));
        let capacity = u64::from(burst.max(1)) * 1_000_000_000;
        Self { rate, capacity, tokens_ns: capacity, last_ns: now_ns }
    }

    fn refill(&mut self, now_ns: u64) {
        let elapsed = now_ns.saturating_sub(self.last_ns);
        self.last_ns = now_ns.max(self.last_ns);
        self.tokens_ns = self.tokens_ns.saturating_add(elapsed.saturating_mul(self.rate)).min(self.capacity);
    }

    /// Whether a token is there now, without taking it.
    fn has_token(&mut self, now_ns: u64) -> bool {
        self.refill(now_ns);
        self.tokens_ns >= 1_000_000_000
    }

    fn take(&mut self, now_ns: u64) -> bool {
        self.refill(now_ns);
        if self.tokens_ns >= 1_000_000_000 {
            self.tokens_ns -= 1_000_000_000;
            true
        } else {
            false
        }
    }
}

/// The control thread: HELLO, STATUS_REQUEST, LOAD_START and LOAD_STOP, answered only when
/// authenticated; it also closes idle sessions and keeps the kernel filter to the open
/// sessions' peers. Err when the filter cannot be replaced.
fn serve_control(
    socket: UdpSocket,
    filter: &IcmpFilter,
    config: &StationConfig,
    loads: Option<&dyn LoadSource>,
    counters: &Counters,
    sessions: &SessionTable,
    stop: &AtomicBool,
) -> Result<(), StationError> {
    let mut buf = [0u8; 2048];
    let mut out = [0u8; MAX_MESSAGE_LEN];
    // Nonces of the HELLOs accepted within the freshness window: a replayed HELLO is
    // refused, and an older one is refused by its time.
    let mut recent_nonces = vec![[0u8; 16]; REMEMBERED_NONCES];
    let mut next_nonce = 0usize;
    let keep_peers =
        || filter.keep_only_from(ECHO_REQUEST, protocol::MAGIC, &sessions.peer_addresses()).map_err(StationError::Sys);
    let mut hellos = TokenBucket::new(MAX_HELLOS_PER_S, MAX_HELLOS_PER_S, monotonic_ns());
    // Loads sent or run here: (kind, session, started, duration), each stopped at its
    // duration or when its session goes silent.
    let mut active: Vec<(LoadKind, u64, u64, u64)> = Vec::new();
    // What the last stopped load of each (kind, session) did: a LOAD_STOP repeated because
    // its reply was lost gets the same answer.
    let mut stopped: Vec<(LoadKind, u64, [u64; 4])> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        if sessions.close_idle(monotonic_ns(), config.session_idle_ns) {
            keep_peers()?;
        }
        if let Some(loads) = loads {
            let now = monotonic_ns();
            active.retain(|&(kind, session, started, duration)| {
                let silent = sessions
                    .find(session)
                    .is_none_or(|s| now.saturating_sub(s.last_used_ns.load(Ordering::Relaxed)) > LOAD_IDLE_NS);
                let over = now.saturating_sub(started) > duration;
                if silent || over {
                    loads.stop(kind);
                }
                !(silent || over)
            });
        }
        let (len, from) = match socket.recv_from(&mut buf) {
            Ok(received) => received,
            Err(_) => continue, // the read timeout, or an ICMP error from an earlier send
        };
        let SocketAddr::V4(from) = from else { continue };
        let (header, body) = match protocol::decode(&config.key, &buf[..len]) {
            Ok(decoded) => decoded,
            Err(why) => {
                counters.reject(why);
                continue;
            }
        };
        match header.kind {
            Kind::Hello => {
                let hello = Hello::from_body(body);
                let nonce = hello.nonce;
                if !hello.is_fresh(realtime_ns()) || recent_nonces.contains(&nonce) {
                    counters.replayed.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                if !hellos.take(monotonic_ns()) {
                    counters.rate_limited.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                recent_nonces[next_nonce] = nonce;
                next_nonce = (next_nonce + 1) % recent_nonces.len();
                let id = new_session_id();
                if !sessions.open(id, from, monotonic_ns()) {
                    // Every session is in use: refused like a HELLO above the rate.
                    counters.rate_limited.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                counters.sessions.fetch_add(1, Ordering::Relaxed);
                // The peer's stimuli pass the kernel filter before it learns the session.
                keep_peers()?;
                let welcome = Welcome {
                    client_nonce: nonce,
                    delta_ns: config.delta_ns,
                    max_rate_hz: config.max_rate_hz,
                    sink_port: config.listen.port() + 1,
                    comms_port: config.listen.port() + 2,
                };
                let n = protocol::encode(&config.key, Kind::Welcome, id, 0, &welcome.to_body(), &mut out);
                let _ = socket.send_to(&out[..n], from);
            }
            Kind::StatusRequest => {
                let Some(session) = control_session(sessions, counters, header, config.session_idle_ns) else {
                    continue;
                };
                let status = counters.snapshot();
                let n = protocol::encode(
                    &config.key,
                    Kind::Status,
                    header.session,
                    header.sequence,
                    &status.to_body(),
                    &mut out,
                );
                // To the session's address: an authenticated request cannot redirect it.
                let _ = socket.send_to(&out[..n], session.peer());
            }
            Kind::LoadStart | Kind::LoadStop => {
                // An unknown load kind is malformed before it uses up a sequence number.
                if LoadKind::from_u8(body[0]).is_none() {
                    counters.malformed.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let Some(session) = control_session(sessions, counters, header, config.session_idle_ns) else {
                    continue;
                };
                let peer = session.peer();
                let tally = match (header.kind, loads) {
                    (Kind::LoadStart, _) => match LoadRequest::from_body(body) {
                        Some(asked) => {
                            // Defaults filled in, flat out made concrete; refused above the
                            // limits (answered `accepted = 0`, as every refusal).
                            let resolved = config.load_limits.resolve(asked);
                            let request = resolved.clone().unwrap_or(asked);
                            // Only ever towards the session's own address.
                            let target = SocketAddrV4::new(*peer.ip(), request.port);
                            let running = active.iter().find(|a| a.0 == request.kind).map(|a| a.1);
                            // A LOAD_START repeated by the same session (its reply was lost)
                            // is answered again; another session's is refused.
                            let already = running == Some(header.session);
                            let accepted = already
                                || match loads {
                                    Some(l) if running.is_none() && resolved.is_ok() => {
                                        l.start(request, target).is_ok()
                                    }
                                    _ => false,
                                };
                            if accepted && !already {
                                active.push((
                                    request.kind,
                                    header.session,
                                    monotonic_ns(),
                                    request.duration_ms.saturating_mul(1_000_000),
                                ));
                            }
                            LoadTally { kind: request.kind, accepted, counts: [0; 4] }
                        }
                        None => {
                            counters.malformed.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    },
                    (_, l) => match LoadKind::from_u8(body[0]) {
                        Some(kind) => {
                            // Only the session that started it stops it.
                            let mine = active.iter().position(|a| a.0 == kind && a.1 == header.session);
                            let done = match (l, mine) {
                                (Some(l), Some(i)) => {
                                    active.remove(i);
                                    let done = l.stop(kind);
                                    stopped.retain(|s| s.0 != kind || s.1 != header.session);
                                    if let Some(counts) = done {
                                        stopped.push((kind, header.session, counts));
                                        if stopped.len() > SESSIONS {
                                            stopped.remove(0);
                                        }
                                    }
                                    done
                                }
                                _ => stopped.iter().find(|s| s.0 == kind && s.1 == header.session).map(|s| s.2),
                            };
                            LoadTally { kind, accepted: done.is_some(), counts: done.unwrap_or([0; 4]) }
                        }
                        None => {
                            counters.malformed.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    },
                };
                let n = protocol::encode(
                    &config.key,
                    Kind::LoadReport,
                    header.session,
                    header.sequence,
                    &tally.to_body(),
                    &mut out,
                );
                let _ = socket.send_to(&out[..n], peer);
            }
            // Kinds only the station sends, or stimuli on the wrong socket.
            _ => {
                counters.malformed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    if let Some(loads) = loads {
        for (kind, ..) in active {
            loads.stop(kind);
        }
    }
    Ok(())
}

/// The session of an authenticated control request (STATUS_REQUEST, LOAD_START,
/// LOAD_STOP) when it is known and its sequence number is new; the request is counted as
/// unknown_session or replayed otherwise.
fn control_session<'t>(
    sessions: &'t SessionTable,
    counters: &Counters,
    header: protocol::Header,
    idle_ns: u64,
) -> Option<&'t SessionSlot> {
    let Some(session) = sessions.find(header.session) else {
        counters.unknown_session.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    // An idle session is closed even between two sweeps of the control loop.
    if session.idle_for(monotonic_ns()) > idle_ns {
        counters.unknown_session.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    if !SessionSlot::advance(&session.last_control, header.sequence) {
        counters.replayed.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    session.last_used_ns.store(monotonic_ns(), Ordering::Relaxed);
    Some(session)
}

/// A random, non-zero session id (it is the station's nonce: replays of an earlier
/// session's messages name an id this station never gave).
fn new_session_id() -> u64 {
    let mut bytes = [0u8; 8];
    loop {
        if getrandom::fill(&mut bytes).is_err() {
            // No entropy source: the clock still differs between sessions.
            bytes = realtime_ns().to_le_bytes();
        }
        let id = u64::from_le_bytes(bytes);
        if id != 0 {
            return id;
        }
    }
}

/// The flood sink: counts, never answers.
fn serve_sink(socket: UdpSocket, counters: &Counters, stop: &AtomicBool) {
    let mut buf = [0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        if let Ok(n) = socket.recv(&mut buf) {
            counters.sink_packets.fetch_add(1, Ordering::Relaxed);
            counters.sink_bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}

/// The comms echo server: one small thread per connection, at most
/// [`MAX_COMMS_CONNECTIONS`]; others are closed at once and counted.
fn serve_comms(listener: TcpListener, key: Key, counters: Arc<Counters>, stop: &AtomicBool) {
    let open = Arc::new(AtomicUsize::new(0));
    let stop_flag = Arc::new(AtomicBool::new(false));
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                if open.load(Ordering::Relaxed) >= MAX_COMMS_CONNECTIONS {
                    counters.comms_refused.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                open.fetch_add(1, Ordering::Relaxed);
                let (key, counters, still_open, stop_flag) =
                    (key.clone(), counters.clone(), open.clone(), stop_flag.clone());
                let spawned = std::thread::Builder::new()
                    .name("rtlab-station-echo".into())
                    .stack_size(256 * 1024)
                    .spawn(move || {
                        if !echo_connection(stream, &key, &counters, &stop_flag) {
                            counters.comms_refused.fetch_add(1, Ordering::Relaxed);
                        }
                        still_open.fetch_sub(1, Ordering::Relaxed);
                    });
                if spawned.is_err() {
                    open.fetch_sub(1, Ordering::Relaxed);
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    stop_flag.store(true, Ordering::Relaxed);
    // Connections see the flag within their read timeout.
    while open.load(Ordering::Relaxed) > 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Challenge, proof, then echo until the peer closes or the station stops. False when the
/// peer failed the challenge.
fn echo_connection(mut stream: TcpStream, key: &Key, counters: &Counters, stop: &AtomicBool) -> bool {
    let _ = stream.set_nodelay(true);
    // The proof must come within 1 s: a peer that cannot give it holds a place no longer.
    if !key.challenge_comms_peer(&mut stream, Duration::from_secs(1)) {
        return false;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_millis(STOP_POLL_MS as u64)));
    // A peer that stops reading must not hold the station's stop: a send blocked 1 s ends
    // the connection.
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if stream.write_all(&buf[..n]).is_err() {
                    break;
                }
                counters.comms_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    true
}

/// Interrupts (all lines and CPUs) and NET_RX softirqs (all CPUs) since boot.
fn host_interrupt_totals() -> (u64, u64) {
    match rtlab_sys::activity::ActivitySnapshot::take() {
        Ok(snapshot) => (
            snapshot.interrupts.iter().map(|(_, _, n)| n).sum(),
            snapshot.softirqs.iter().filter(|(id, _, _)| id == "NET_RX").map(|(_, _, n)| n).sum(),
        ),
        Err(_) => (0, 0),
    }
}

/// OutEchoReps of /proc/net/snmp: echo replies this network namespace's kernel sent.
pub fn icmp_echo_replies() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/snmp").ok()?;
    parse_out_echo_reps(&text)
}

fn parse_out_echo_reps(snmp: &str) -> Option<u64> {
    let mut icmp_lines = snmp.lines().filter(|l| l.starts_with("Icmp:"));
    let names = icmp_lines.next()?;
    let values = icmp_lines.next()?;
    let index = names.split_whitespace().position(|n| n == "OutEchoReps")?;
    values.split_whitespace().nth(index)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_bucket_holds_the_rate_with_a_tenth_of_a_second_burst() {
        let mut bucket = TokenBucket::new(100, 10, 0);
        let burst = (0..100).filter(|_| bucket.take(0)).count();
        assert_eq!(burst, 10);
        // One second later: 100 more at most (the burst capacity caps it at 10).
        let after = (0..100).filter(|_| bucket.take(1_000_000_000)).count();
        assert_eq!(after, 10);
        // Spread out at the rate: every one accepted.
        assert!((1..=200u64).all(|i| bucket.take(1_000_000_000 + i * 10_000_000)));
    }

    #[test]
    fn sessions_replace_the_least_recently_used_and_refuse_replays() {
        let table = SessionTable { slots: Default::default() };
        let peer = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 4000);
        for id in 1..=SESSIONS as u64 {
            assert!(table.open(id, peer, id));
        }
        // All used within the last second: a new session is refused.
        assert!(!table.open(98, peer, 500_000_000));
        table.find(1).unwrap().last_used_ns.store(1_000, Ordering::Relaxed);
        assert!(table.open(99, peer, 2_000_000_000));
        assert!(table.find(2).is_none(), "the least recently used session goes");
        assert!(table.find(1).is_some() && table.find(99).is_some());
        assert_eq!(table.find(99).unwrap().peer(), peer);
        let last = &table.find(99).unwrap().last_stimulus;
        assert!(SessionSlot::advance(last, 1));
        assert!(SessionSlot::advance(last, 5));
        assert!(!SessionSlot::advance(last, 5), "a replay");
        assert!(!SessionSlot::advance(last, 3), "an older one");
        assert!(table.find(0).is_none());
    }

    #[test]
    fn echo_payload_skips_the_ip_and_icmp_headers() {
        let mut packet = vec![0x45u8; 20];
        packet.extend([ECHO_REQUEST, 0, 0, 0, 0, 0, 0, 0]);
        packet.extend(b"RTLB...");
        assert_eq!(echo_payload(&packet), Some(&b"RTLB..."[..]));
        packet[20] = 0;
        assert_eq!(echo_payload(&packet), None);
        assert_eq!(echo_payload(&[]), None);
        assert_eq!(echo_payload(&[0x41; 4]), None);
    }

    #[test]
    fn out_echo_reps_is_read_by_name() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\nIcmp: InMsgs InErrors OutEchoReps\nIcmp: 5 0 42\nIcmpMsg: x\n";
        assert_eq!(parse_out_echo_reps(snmp), Some(42));
        assert_eq!(parse_out_echo_reps("Ip: a\nIp: 1\n"), None);
    }
}
