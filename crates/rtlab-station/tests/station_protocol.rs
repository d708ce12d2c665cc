//! The station's rules, each checked against a real station on loopback (raw ICMP socket,
//! real UDP), message by message: replays of every control message, a LOAD_STOP from
//! another session, the load limits, the loads the station runs on itself (the shell loop,
//! cpu), the 10 s idle stop of a load, idle sessions, HELLO
//! freshness and rate, the kernel filter on the sessions' peers, the session's peer
//! address and the budget for packets that fail authentication.
//!
//! Needs root (CAP_NET_RAW for the raw ICMP socket): without it each test says so, and
//! fails under CI=true. A raw ICMP socket receives every echo request on the host, so the
//! tests take one lock and run one at a time (another station would count their packets).

use rtlab_station::client::{accept_welcome, hello};
use rtlab_station::protocol::{
    self, Header, Hello, Key, Kind, LoadKind, LoadRequest, LoadTally, StationCounters, MAX_MESSAGE_LEN,
};
use rtlab_station::station::{
    LoadLimits, LoadSource, Station, StationConfig, AUTH_FAILURES_PER_S, MAX_DATAGRAM_PAYLOAD, SESSION_IDLE_NS,
};
use rtlab_sys::icmp::{internet_checksum, IcmpSocket, ECHO_REQUEST};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn key() -> Key {
    Key::from_bytes(b"the station tests' key, 32 bytes or more").unwrap()
}

/// What the station asked its loads to do.
#[derive(Default)]
struct RecordedLoads {
    started: Mutex<Vec<(LoadRequest, SocketAddrV4)>>,
    stopped: Mutex<Vec<LoadKind>>,
}

impl LoadSource for RecordedLoads {
    fn start(&self, request: LoadRequest, target: SocketAddrV4) -> Result<(), String> {
        self.started.lock().unwrap().push((request, target));
        Ok(())
    }

    fn stop(&self, kind: LoadKind) -> Option<[u64; 4]> {
        self.stopped.lock().unwrap().push(kind);
        Some([1, 2, 3, 4])
    }
}

/// A station on 127.0.0.1:`port` running on its own thread until dropped.
struct Running {
    address: SocketAddrV4,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<StationCounters, rtlab_station::StationError>>>,
    loads: Arc<RecordedLoads>,
    _lock: MutexGuard<'static, ()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let ended = thread.join().expect("the station thread");
            if !std::thread::panicking() {
                ended.expect("the station ends without an error");
            }
        }
    }
}

/// A station, or None (said, and a failure under CI=true) without CAP_NET_RAW.
fn station(port: u16, limits: LoadLimits, session_idle_ns: u64) -> Option<Running> {
    station_with(port, limits, session_idle_ns, true)
}

/// As [`station`]; `serve_loads` false: a station started without `--serve-loads`.
fn station_with(port: u16, limits: LoadLimits, session_idle_ns: u64, serve_loads: bool) -> Option<Running> {
    let lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if IcmpSocket::open().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI=true: the station tests need root (CAP_NET_RAW)");
        eprintln!("NOT RUN: the station needs a raw ICMP socket (CAP_NET_RAW): run as root");
        return None;
    }
    let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let loads = Arc::new(RecordedLoads::default());
    let station = Station::bind(StationConfig {
        listen: address,
        key: key(),
        delta_ns: 1_000,
        max_rate_hz: 1_000,
        responder_cpu: None,
        responder_priority: None,
        load_limits: limits,
        session_idle_ns,
    })
    .expect("the station binds on loopback");
    let station = if serve_loads { station.with_loads(loads.clone()) } else { station };
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = stop.clone();
        std::thread::spawn(move || station.run(stop))
    };
    Some(Running { address, stop, thread: Some(thread), loads, _lock: lock })
}

fn limits() -> LoadLimits {
    LoadLimits { max_rate: 50_000, max_bytes_per_s: 10_000_000 }
}

/// A session opened from its own UDP socket (bound to `from`): the measuring side.
struct Peer {
    socket: UdpSocket,
    station: SocketAddrV4,
    session: u64,
    key: Key,
}

impl Peer {
    fn open(station: SocketAddrV4, from: Ipv4Addr) -> Peer {
        let socket = UdpSocket::bind(SocketAddrV4::new(from, 0)).unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let mut out = [0u8; MAX_MESSAGE_LEN];
        let (n, nonce) = hello(&key(), &mut out);
        socket.send_to(&out[..n], station).unwrap();
        let mut buf = [0u8; 2048];
        let got = socket.recv(&mut buf).expect("a WELCOME");
        let (session, _) = accept_welcome(&key(), &buf[..got], &nonce).expect("an authenticated WELCOME");
        Peer { socket, station, session, key: key() }
    }

    /// Sends one control message as encoded; the reply (kind, sequence, body) within 300 ms.
    fn send(&self, message: &[u8]) -> Option<(Header, Vec<u8>)> {
        self.socket.send_to(message, self.station).unwrap();
        let mut buf = [0u8; 2048];
        let n = self.socket.recv(&mut buf).ok()?;
        let (header, body) = protocol::decode(&self.key, &buf[..n]).ok()?;
        Some((header, body.to_vec()))
    }

    fn encode(&self, kind: Kind, sequence: u64, body: &[u8]) -> Vec<u8> {
        let mut out = [0u8; MAX_MESSAGE_LEN];
        let n = protocol::encode(&self.key, kind, self.session, sequence, body, &mut out);
        out[..n].to_vec()
    }

    fn counters(&self, sequence: u64) -> StationCounters {
        let (header, body) = self.send(&self.encode(Kind::StatusRequest, sequence, &[])).expect("a STATUS");
        assert_eq!((header.kind, header.sequence), (Kind::Status, sequence));
        StationCounters::from_body(&body)
    }

    fn load(&self, kind: Kind, sequence: u64, body: &[u8]) -> Option<LoadTally> {
        let (header, body) = self.send(&self.encode(kind, sequence, body))?;
        assert_eq!((header.kind, header.sequence), (Kind::LoadReport, sequence));
        LoadTally::from_body(&body)
    }

    /// The next datagram on the session's socket (an ANSWER), within 300 ms.
    fn answer(&self) -> Option<Header> {
        let mut buf = [0u8; 2048];
        let n = self.socket.recv(&mut buf).ok()?;
        protocol::decode(&self.key, &buf[..n]).ok().map(|(h, _)| h)
    }
}

fn stop_body(kind: LoadKind) -> [u8; 8] {
    let mut body = [0u8; 8];
    body[0] = kind as u8;
    body
}

fn udp_flood(rate: u64, payload: u32) -> LoadRequest {
    LoadRequest { kind: LoadKind::UdpFlood, port: 9, payload, rate, duration_ms: 60_000 }
}

/// An ICMP echo request carrying `message`, from a raw socket bound to `from`.
fn send_stimulus(socket: &mut IcmpSocket, to: Ipv4Addr, message: &[u8]) {
    let mut packet = vec![0u8; 8 + message.len()];
    packet[0] = ECHO_REQUEST;
    packet[8..].copy_from_slice(message);
    let sum = internet_checksum(&packet);
    packet[2..4].copy_from_slice(&sum.to_be_bytes());
    socket.send_to(&packet, to).unwrap();
}

fn icmp_from(address: Ipv4Addr) -> IcmpSocket {
    let socket = IcmpSocket::open().unwrap();
    socket.bind(address).unwrap();
    socket
}

fn settle() {
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
fn replayed_status_load_start_and_load_stop_are_refused() {
    let Some(station) = station(27_450, limits(), SESSION_IDLE_NS) else { return };
    let peer = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let base = peer.counters(1);
    // STATUS_REQUEST 2, then the same bytes again.
    let status = peer.encode(Kind::StatusRequest, 2, &[]);
    assert!(peer.send(&status).is_some());
    assert!(peer.send(&status).is_none(), "a replayed STATUS_REQUEST was answered");
    // LOAD_START 3 and its replay: one load started.
    let start = peer.encode(Kind::LoadStart, 3, &udp_flood(1_000, 0).to_body());
    let tally = peer.send(&start).map(|(_, b)| LoadTally::from_body(&b).unwrap()).expect("a LOAD_REPORT");
    assert!(tally.accepted);
    assert!(peer.send(&start).is_none(), "a replayed LOAD_START was answered");
    // LOAD_STOP 4 and its replay: one stop.
    let stop = peer.encode(Kind::LoadStop, 4, &stop_body(LoadKind::UdpFlood));
    let tally = peer.send(&stop).map(|(_, b)| LoadTally::from_body(&b).unwrap()).expect("a LOAD_REPORT");
    assert_eq!((tally.accepted, tally.counts), (true, [1, 2, 3, 4]));
    assert!(peer.send(&stop).is_none(), "a replayed LOAD_STOP was answered");
    // An older sequence than the highest is a replay too.
    assert!(peer.send(&peer.encode(Kind::StatusRequest, 3, &[])).is_none());
    let after = peer.counters(5);
    assert_eq!(after.replayed - base.replayed, 4, "{after:?}");
    assert_eq!(station.loads.started.lock().unwrap().len(), 1);
    assert_eq!(*station.loads.stopped.lock().unwrap(), vec![LoadKind::UdpFlood]);
}

#[test]
fn only_the_session_that_started_a_load_stops_it() {
    let Some(station) = station(27_460, limits(), SESSION_IDLE_NS) else { return };
    let owner = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let other = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    assert!(owner.load(Kind::LoadStart, 1, &udp_flood(1_000, 0).to_body()).unwrap().accepted);
    // Another session can neither start the same kind nor stop it.
    assert!(!other.load(Kind::LoadStart, 1, &udp_flood(1_000, 0).to_body()).unwrap().accepted);
    let refused = other.load(Kind::LoadStop, 2, &stop_body(LoadKind::UdpFlood)).unwrap();
    assert_eq!((refused.accepted, refused.counts), (false, [0; 4]));
    assert!(station.loads.stopped.lock().unwrap().is_empty(), "another session's LOAD_STOP stopped the load");
    let stopped = owner.load(Kind::LoadStop, 2, &stop_body(LoadKind::UdpFlood)).unwrap();
    assert!(stopped.accepted);
    assert_eq!(station.loads.stopped.lock().unwrap().len(), 1);
    // The station sent it only ever to the owner's address, at the port it asked for.
    let started = station.loads.started.lock().unwrap();
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].1, SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9));
}

#[test]
fn loads_above_the_limits_are_refused_and_flat_out_is_the_limit() {
    let Some(station) = station(27_470, limits(), SESSION_IDLE_NS) else { return };
    let peer = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let mut sequence = 0;
    let mut ask = |request: LoadRequest| {
        sequence += 2;
        let accepted = peer.load(Kind::LoadStart, sequence, &request.to_body()).unwrap().accepted;
        if accepted {
            peer.load(Kind::LoadStop, sequence + 1, &stop_body(request.kind)).unwrap();
        }
        accepted
    };
    // Above --max-load-rate, a fragmenting payload, above the bytes: refused.
    assert!(!ask(udp_flood(50_001, 0)));
    assert!(!ask(udp_flood(100, MAX_DATAGRAM_PAYLOAD + 1)));
    assert!(!ask(udp_flood(10_000, 1_000)), "10,000 × 1,028 B/s is above 10 MB/s");
    assert!(!ask(LoadRequest { kind: LoadKind::Comms, port: 9, payload: 0, rate: 10_000_001, duration_ms: 1 }));
    assert!(!ask(LoadRequest { kind: LoadKind::Comms, port: 9, payload: (1 << 20) + 1, rate: 0, duration_ms: 1 }));
    assert!(!ask(LoadRequest { kind: LoadKind::PingFlood, port: 0, payload: 65_000, rate: 0, duration_ms: 1 }));
    assert!(!ask(udp_flood(100, 0).with_duration(24 * 3600 * 1000 + 1)));
    assert!(station.loads.started.lock().unwrap().is_empty(), "a refused load started");
    // Within them: started with concrete rates.
    assert!(ask(udp_flood(0, 0)));
    assert!(ask(udp_flood(0, 1_000)));
    assert!(ask(LoadRequest { kind: LoadKind::Comms, port: 9, payload: 0, rate: 0, duration_ms: 1_000 }));
    assert!(ask(LoadRequest { kind: LoadKind::PingFlood, port: 0, payload: 0, rate: 0, duration_ms: 1_000 }));
    let started: Vec<(u32, u64)> =
        station.loads.started.lock().unwrap().iter().map(|(r, _)| (r.payload, r.rate)).collect();
    // 64-byte datagrams: the rate limit binds (50,000 × 92 B < 10 MB/s); 1000-byte ones:
    // the bytes (10 MB/s / 1028 B); comms flat out: the bytes; a flood ping stays unpaced.
    assert_eq!(started, vec![(64, 50_000), (1_000, 9_727), (60_000, 10_000_000), (56, 0)]);
}

/// A LOAD_START of a load the station runs on itself: no port, payload or rate.
fn local(kind: LoadKind) -> LoadRequest {
    LoadRequest { kind, port: 0, payload: 0, rate: 0, duration_ms: 60_000 }
}

/// The loads the station runs on itself (the shell loop, cpu) follow the floods' rules: a
/// port, payload or rate is refused, as is a duration above 24 h; one of each kind at a
/// time, over all sessions; a repeat by the starting session is answered again without a
/// second start; only that session stops it, and gets its counts; a load stops at its
/// duration; a station without --serve-loads refuses them.
#[test]
fn loads_run_on_the_station_start_stop_and_are_refused_like_the_floods() {
    let Some(station) = station(27_540, limits(), SESSION_IDLE_NS) else { return };
    let owner = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let other = Peer::open(station.address, Ipv4Addr::new(127, 0, 0, 2));
    // One counter for both sessions: each sequence is new in its session.
    let sequence = std::cell::Cell::new(0u64);
    let next = || {
        sequence.set(sequence.get() + 1);
        sequence.get()
    };
    let start = |peer: &Peer, request: LoadRequest| {
        let tally = peer.load(Kind::LoadStart, next(), &request.to_body()).expect("a LOAD_REPORT");
        assert_eq!((tally.kind, tally.counts), (request.kind, [0; 4]));
        tally.accepted
    };
    for kind in [LoadKind::ShellLoop, LoadKind::Cpu] {
        assert!(!start(&owner, LoadRequest { port: 9, ..local(kind) }), "{kind:?} with a port");
        assert!(!start(&owner, LoadRequest { payload: 64, ..local(kind) }), "{kind:?} with a payload");
        assert!(!start(&owner, LoadRequest { rate: 1_000, ..local(kind) }), "{kind:?} with a rate");
        assert!(!start(&owner, local(kind).with_duration(24 * 3600 * 1000 + 1)), "{kind:?} above 24 h");
    }
    assert!(station.loads.started.lock().unwrap().is_empty(), "a refused load started");
    // Both kinds at once, beside a flood: one of each kind.
    assert!(start(&owner, local(LoadKind::ShellLoop)));
    assert!(start(&owner, local(LoadKind::Cpu)));
    assert!(start(&owner, udp_flood(1_000, 0)));
    // Another session can neither start the same kind nor stop it.
    assert!(!start(&other, local(LoadKind::ShellLoop)));
    assert!(!start(&other, local(LoadKind::Cpu)));
    let refused = other.load(Kind::LoadStop, next(), &stop_body(LoadKind::ShellLoop)).unwrap();
    assert_eq!((refused.accepted, refused.counts), (false, [0; 4]));
    // The owner's repeat (its reply lost) is answered again, nothing new starts.
    assert!(start(&owner, local(LoadKind::ShellLoop)));
    {
        let started = station.loads.started.lock().unwrap();
        let kinds: Vec<LoadKind> = started.iter().map(|(r, _)| r.kind).collect();
        assert_eq!(kinds, [LoadKind::ShellLoop, LoadKind::Cpu, LoadKind::UdpFlood]);
        // Run on the station: as asked, with the session's address and port 0 (unused).
        assert_eq!(started[0], (local(LoadKind::ShellLoop), SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)));
    }
    assert!(station.loads.stopped.lock().unwrap().is_empty());
    // The owner stops them and gets the counts; a repeated LOAD_STOP the same answer.
    for kind in [LoadKind::ShellLoop, LoadKind::Cpu] {
        let tally = owner.load(Kind::LoadStop, next(), &stop_body(kind)).unwrap();
        assert_eq!((tally.kind, tally.accepted, tally.counts), (kind, true, [1, 2, 3, 4]));
        let again = owner.load(Kind::LoadStop, next(), &stop_body(kind)).unwrap();
        assert_eq!(again, tally, "a repeated LOAD_STOP");
    }
    assert_eq!(*station.loads.stopped.lock().unwrap(), vec![LoadKind::ShellLoop, LoadKind::Cpu]);
    // Stopped, the kind is free for another session; it stops at its duration.
    assert!(start(&other, local(LoadKind::Cpu).with_duration(300)));
    let asked = Instant::now();
    while station.loads.stopped.lock().unwrap().len() < 3 && asked.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = asked.elapsed();
    assert_eq!(station.loads.stopped.lock().unwrap().last(), Some(&LoadKind::Cpu), "not stopped at 300 ms");
    assert!(after >= Duration::from_millis(290) && after < Duration::from_millis(1_500), "stopped after {after:?}");
    drop(station);

    // Without --serve-loads: refused, like every LOAD_START.
    let Some(plain) = station_with(27_550, limits(), SESSION_IDLE_NS, false) else { return };
    let peer = Peer::open(plain.address, Ipv4Addr::LOCALHOST);
    for (i, kind) in [LoadKind::ShellLoop, LoadKind::Cpu].into_iter().enumerate() {
        let tally = peer.load(Kind::LoadStart, 1 + i as u64, &local(kind).to_body()).unwrap();
        assert_eq!((tally.kind, tally.accepted), (kind, false));
    }
    assert!(plain.loads.started.lock().unwrap().is_empty());
}

trait WithDuration {
    fn with_duration(self, ms: u64) -> Self;
}

impl WithDuration for LoadRequest {
    fn with_duration(self, ms: u64) -> Self {
        LoadRequest { duration_ms: ms, ..self }
    }
}

/// A load whose session goes silent stops within the 10 s idle limit (and the checks of
/// the control loop, every 200 ms), not before: a flood sent and a shell loop run on the
/// station alike.
#[test]
fn a_load_stops_when_its_session_is_silent_for_10_s() {
    let Some(station) = station(27_480, limits(), SESSION_IDLE_NS) else { return };
    let peer = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    assert!(peer.load(Kind::LoadStart, 1, &udp_flood(1_000, 0).to_body()).unwrap().accepted);
    assert!(peer.load(Kind::LoadStart, 2, &local(LoadKind::ShellLoop).to_body()).unwrap().accepted);
    let asked = Instant::now();
    while station.loads.stopped.lock().unwrap().len() < 2 && asked.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stopped_after = asked.elapsed();
    let mut stopped = station.loads.stopped.lock().unwrap().clone();
    stopped.sort_by_key(|k| *k as u8);
    assert_eq!(stopped, vec![LoadKind::UdpFlood, LoadKind::ShellLoop], "not both stopped in 15 s");
    assert!(stopped_after >= Duration::from_secs(10), "stopped after {stopped_after:?}, before 10 s of silence");
    assert!(stopped_after < Duration::from_millis(11_500), "stopped only after {stopped_after:?}");
}

/// A session unused for the idle limit (2 s here) is closed: its STATUS_REQUESTs and
/// stimuli are unknown, its peer leaves the kernel filter, and a new session works.
#[test]
fn idle_sessions_are_closed() {
    let Some(station) = station(27_490, limits(), 2_000_000_000) else { return };
    let peer = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let witness = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    // Used within the limit: answered.
    std::thread::sleep(Duration::from_millis(1_000));
    assert!(peer.send(&peer.encode(Kind::StatusRequest, 1, &[])).is_some());
    std::thread::sleep(Duration::from_millis(2_500));
    assert!(peer.send(&peer.encode(Kind::StatusRequest, 2, &[])).is_none(), "an idle session answered");
    let fresh = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let c = fresh.counters(1);
    assert!(c.unknown_session >= 1, "{c:?}");
    // The witness session went idle too.
    assert!(witness.send(&witness.encode(Kind::StatusRequest, 1, &[])).is_none());
}

/// A HELLO is fresh within 30 s of the station's clock, and its nonce is remembered: an old
/// one, one from the future and a repeated one open nothing.
#[test]
fn stale_and_repeated_hellos_open_no_session() {
    let Some(station) = station(27_500, limits(), SESSION_IDLE_NS) else { return };
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let now = rtlab_sys::net::realtime_ns();
    let mut buf = [0u8; 2048];
    let mut welcomed = |nonce: u8, time: u64| {
        let body = Hello { nonce: [nonce; 16], client_time_ns: time }.to_body();
        let mut out = [0u8; MAX_MESSAGE_LEN];
        let n = protocol::encode(&key(), Kind::Hello, 0, 0, &body, &mut out);
        socket.send_to(&out[..n], station.address).unwrap();
        let got = socket.recv(&mut buf).ok();
        got.and_then(|g| accept_welcome(&key(), &buf[..g], &[nonce; 16])).is_some()
    };
    assert!(!welcomed(1, now - 31_000_000_000), "a HELLO 31 s old");
    assert!(!welcomed(2, now + 31_000_000_000), "a HELLO 31 s ahead");
    assert!(welcomed(3, now - 25_000_000_000), "a HELLO 25 s old is fresh");
    assert!(!welcomed(3, now - 25_000_000_000), "the same HELLO again");
    let peer = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let c = peer.counters(1);
    assert_eq!(c.replayed, 3, "{c:?}");
    assert_eq!(c.sessions, 2, "{c:?}");
}

/// 20 HELLOs at once: the burst of 10 is welcomed, the rest counted rate_limited.
#[test]
fn hellos_above_ten_a_second_are_refused() {
    let Some(station) = station(27_510, limits(), SESSION_IDLE_NS) else { return };
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut out = [0u8; MAX_MESSAGE_LEN];
    for _ in 0..20 {
        let (n, _) = hello(&key(), &mut out);
        socket.send_to(&out[..n], station.address).unwrap();
    }
    let mut buf = [0u8; 2048];
    let mut welcomes = 0;
    while socket.recv(&mut buf).is_ok() {
        welcomes += 1;
    }
    // The bucket refills at 10/s while the 20 are handled: 10, or 11 on a slow machine.
    assert!((10..=12).contains(&welcomes), "{welcomes} WELCOMEs");
    std::thread::sleep(Duration::from_millis(200));
    let peer = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let c = peer.counters(1);
    assert_eq!(c.rate_limited, 20 - welcomes, "{c:?}");
    assert_eq!(c.sessions, welcomes + 1);
}

/// Stimuli from an address that is no session's peer never reach the real-time task (the
/// kernel filter drops them: no counter moves); from a peer of another session they are
/// dropped before the MAC as foreign_source; the session's own are answered.
#[test]
fn stimuli_from_other_addresses_cost_no_mac() {
    let Some(station) = station(27_520, limits(), SESSION_IDLE_NS) else { return };
    let peer = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let base = peer.counters(1);
    let mut stranger = icmp_from(Ipv4Addr::new(127, 0, 0, 2));
    let stimulus = peer.encode(Kind::Stimulus, 1, &[0; 8]);
    for _ in 0..50 {
        send_stimulus(&mut stranger, Ipv4Addr::LOCALHOST, &stimulus);
    }
    settle();
    let c = peer.counters(2);
    assert_eq!(c.junk(), base.junk(), "a stranger's packets reached the task: {c:?}");
    assert_eq!(c.answered, base.answered);
    // A second session from 127.0.0.2 lets its address through the filter; its stimuli
    // naming the first session are foreign.
    let _second = Peer::open(station.address, Ipv4Addr::new(127, 0, 0, 2));
    for _ in 0..5 {
        send_stimulus(&mut stranger, Ipv4Addr::LOCALHOST, &stimulus);
    }
    settle();
    let c2 = peer.counters(3);
    assert_eq!(c2.foreign_source - c.foreign_source, 5, "{c2:?}");
    assert_eq!(c2.bad_tag, c.bad_tag, "a foreign stimulus cost a MAC");
    // The peer's own stimulus is answered, once.
    let mut own = icmp_from(Ipv4Addr::LOCALHOST);
    send_stimulus(&mut own, Ipv4Addr::LOCALHOST, &stimulus);
    let answer = peer.answer().expect("the peer's stimulus is answered");
    assert_eq!((answer.kind, answer.sequence), (Kind::Answer, 1));
}

/// Stimuli that name the session, come from its peer and carry new sequences but fail the
/// MAC: at most the budget's burst and rate are verified, the rest are dropped before the
/// MAC as auth_limited; every one is counted once; the real peer is answered again once
/// the flood stops.
#[test]
fn packets_failing_authentication_are_held_to_a_budget() {
    let Some(station) = station(27_530, limits(), SESSION_IDLE_NS) else { return };
    let peer = Peer::open(station.address, Ipv4Addr::LOCALHOST);
    let base = peer.counters(1);
    let wrong = Key::from_bytes(b"not the station's key, but 32 bytes long").unwrap();
    let mut icmp = icmp_from(Ipv4Addr::LOCALHOST);
    let mut out = [0u8; MAX_MESSAGE_LEN];
    let started = Instant::now();
    const FLOOD: u64 = 2_000;
    for sequence in 0..FLOOD {
        let n = protocol::encode(&wrong, Kind::Stimulus, peer.session, 1_000 + sequence, &[0; 8], &mut out);
        send_stimulus(&mut icmp, Ipv4Addr::LOCALHOST, &out[..n]);
    }
    let flood_s = started.elapsed().as_secs_f64();
    settle();
    let c = peer.counters(2);
    let (verified, limited) = (c.bad_tag - base.bad_tag, c.auth_limited - base.auth_limited);
    assert_eq!(verified + limited, FLOOD, "every packet counted once: {c:?}");
    let budget = u64::from(AUTH_FAILURES_PER_S / 10) + (f64::from(AUTH_FAILURES_PER_S) * (flood_s + 0.3)).ceil() as u64;
    assert!(verified <= budget, "{verified} MACs failed in {flood_s:.3} s, above the budget {budget}");
    assert!(limited > 0, "the flood of {FLOOD} in {flood_s:.3} s was never limited");
    // The budget refills: the peer's next stimulus is verified and answered.
    std::thread::sleep(Duration::from_millis(200));
    let stimulus = peer.encode(Kind::Stimulus, 5_000, &[0; 8]);
    send_stimulus(&mut icmp, Ipv4Addr::LOCALHOST, &stimulus);
    let answer = peer.answer().expect("answered after the flood");
    assert_eq!(answer.sequence, 5_000);
}
