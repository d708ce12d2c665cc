//! The measuring side's control client: opens a session (HELLO, WELCOME) and reads the
//! station's counters (STATUS_REQUEST, STATUS). The stimuli themselves are sent by the
//! remote probe (rtlab-probe), which opens its own session with [`hello`] and
//! [`accept_welcome`] on the socket its answers must come back to.

use crate::protocol::{
    self, Hello, Key, Kind, LoadKind, LoadRequest, LoadTally, StationCounters, Welcome, MAX_MESSAGE_LEN,
};
use crate::StationError;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

/// Attempts of a request before the station is declared silent, and the wait for each.
const ATTEMPTS: u32 = 3;
const ATTEMPT_WAIT: Duration = Duration::from_millis(700);

/// A fresh HELLO in `out`, stamped with this host's clock; returns its length and the
/// nonce the WELCOME must echo.
pub fn hello(key: &Key, out: &mut [u8; MAX_MESSAGE_LEN]) -> (usize, [u8; 16]) {
    let now = rtlab_sys::net::realtime_ns();
    let mut nonce = [0u8; 16];
    if getrandom::fill(&mut nonce).is_err() {
        nonce[..8].copy_from_slice(&now.to_le_bytes());
    }
    let body = Hello { nonce, client_time_ns: now }.to_body();
    (protocol::encode(key, Kind::Hello, 0, 0, &body, out), nonce)
}

/// The session id and WELCOME in `message` if it authenticates and answers the HELLO with
/// `nonce`.
pub fn accept_welcome(key: &Key, message: &[u8], nonce: &[u8; 16]) -> Option<(u64, Welcome)> {
    let (header, body) = protocol::decode(key, message).ok()?;
    if header.kind != Kind::Welcome || header.session == 0 {
        return None;
    }
    let welcome = Welcome::from_body(body);
    (welcome.client_nonce == *nonce).then_some((header.session, welcome))
}

/// The message that tells the user why no station answered.
pub fn silent_station(station: SocketAddrV4) -> StationError {
    StationError::Silent(format!(
        "no authenticated answer from the station at {station}: is `rtlab station` running there, with the same key \
         file and protocol version {}, and do the two clocks agree within 30 s (a wrong key is counted by the station \
         as bad_tag, a HELLO outside 30 s as replayed)?",
        protocol::VERSION
    ))
}

/// A session for control requests, on a socket of its own.
pub struct StationClient {
    socket: UdpSocket,
    station: SocketAddrV4,
    key: Key,
    session: u64,
    welcome: Welcome,
    next_sequence: u64,
    /// When the station last answered on this session (it closes sessions idle for
    /// [`crate::station::SESSION_IDLE_NS`]).
    last_answer: Instant,
}

impl StationClient {
    /// Opens a session with the station at `station`.
    pub fn connect(station: SocketAddrV4, key: Key) -> Result<StationClient, StationError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| StationError::Io { what, source }
        };
        let socket = UdpSocket::bind("0.0.0.0:0").map_err(io("open a UDP socket"))?;
        socket.connect(station).map_err(io("connect the UDP socket to the station"))?;
        let mut out = [0u8; MAX_MESSAGE_LEN];
        let mut buf = [0u8; 2048];
        for _ in 0..ATTEMPTS {
            let (len, nonce) = hello(&key, &mut out);
            // ECONNREFUSED from an earlier attempt's ICMP error: try again.
            if socket.send(&out[..len]).is_err() {
                std::thread::sleep(ATTEMPT_WAIT);
                continue;
            }
            let deadline = Instant::now() + ATTEMPT_WAIT;
            while let Some(n) = recv_until(&socket, &mut buf, deadline) {
                if let Some((session, welcome)) = accept_welcome(&key, &buf[..n], &nonce) {
                    return Ok(StationClient {
                        socket,
                        station,
                        key,
                        session,
                        welcome,
                        next_sequence: 1,
                        last_answer: Instant::now(),
                    });
                }
            }
        }
        Err(silent_station(station))
    }

    pub fn welcome(&self) -> Welcome {
        self.welcome
    }

    pub fn station(&self) -> SocketAddrV4 {
        self.station
    }

    /// The station's counters now. A session the station may have closed for being idle is
    /// replaced first; a station that replaced this session (16 newer ones, or restarted)
    /// is asked again on a new session.
    pub fn status(&mut self) -> Result<StationCounters, StationError> {
        if self.last_answer.elapsed() > Duration::from_nanos(crate::station::SESSION_IDLE_NS / 2) {
            *self = StationClient::connect(self.station, self.key.clone())?;
        }
        match self.status_same_session() {
            Ok(counters) => Ok(counters),
            Err(_) => {
                let fresh = StationClient::connect(self.station, self.key.clone())?;
                *self = fresh;
                self.status_same_session()
            }
        }
    }

    /// The station's counters on this session only (no new session): what keeps a load
    /// the station sends for this session alive.
    pub fn status_same_session(&mut self) -> Result<StationCounters, StationError> {
        let body = self.request(Kind::StatusRequest, &[], Kind::Status)?;
        Ok(StationCounters::from_body(&body))
    }

    /// Asks the station to send the load `request` to this host (the session's address);
    /// Err when it refuses (started without loads, over its limits) or is silent.
    pub fn start_load(&mut self, request: LoadRequest) -> Result<(), StationError> {
        let body = self.request(Kind::LoadStart, &request.to_body(), Kind::LoadReport)?;
        match LoadTally::from_body(&body) {
            Some(t) if t.accepted && t.kind == request.kind => Ok(()),
            _ => Err(StationError::Config(format!(
                "the station at {} refused to send {} (it sends loads only when started with --serve-loads, one of each \
                 kind at a time, at most at its --max-load-rate and --max-load-bytes, datagrams of at most 1472 bytes, \
                 comms messages of at most 1 MiB)",
                self.station,
                request.kind.name()
            ))),
        }
    }

    /// Stops the station's load of `kind`; what it did, None when it was not running.
    pub fn stop_load(&mut self, kind: LoadKind) -> Result<Option<[u64; 4]>, StationError> {
        let mut stop = [0u8; 8];
        stop[0] = kind as u8;
        let body = self.request(Kind::LoadStop, &stop, Kind::LoadReport)?;
        Ok(LoadTally::from_body(&body).filter(|t| t.accepted && t.kind == kind).map(|t| t.counts))
    }

    /// One request and its authenticated reply's body. Each attempt is a new sequence
    /// number: the station answers a repeated one never (a replay), so a lost reply is
    /// asked for again, not repeated.
    fn request(&mut self, kind: Kind, body: &[u8], reply: Kind) -> Result<Vec<u8>, StationError> {
        let mut out = [0u8; MAX_MESSAGE_LEN];
        let mut buf = [0u8; 2048];
        for _ in 0..ATTEMPTS {
            let sequence = self.next_sequence;
            self.next_sequence += 1;
            let len = protocol::encode(&self.key, kind, self.session, sequence, body, &mut out);
            self.socket
                .send(&out[..len])
                .map_err(|source| StationError::Io { what: "send a request to the station".into(), source })?;
            let deadline = Instant::now() + ATTEMPT_WAIT;
            while let Some(n) = recv_until(&self.socket, &mut buf, deadline) {
                match protocol::decode(&self.key, &buf[..n]) {
                    Ok((h, body)) if h.kind == reply && h.session == self.session && h.sequence == sequence => {
                        self.last_answer = Instant::now();
                        return Ok(body.to_vec());
                    }
                    _ => {}
                }
            }
        }
        Err(silent_station(self.station))
    }

    /// This host's address as the station sees it (the local end of the session).
    pub fn local_ip(&self) -> Option<std::net::Ipv4Addr> {
        match self.socket.local_addr().ok()? {
            SocketAddr::V4(a) => Some(*a.ip()),
            SocketAddr::V6(_) => None,
        }
    }
}

/// One datagram before `deadline`, or None when it passes.
fn recv_until(socket: &UdpSocket, buf: &mut [u8], deadline: Instant) -> Option<usize> {
    loop {
        let left = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())?;
        socket.set_read_timeout(Some(left)).ok()?;
        match socket.recv(buf) {
            Ok(n) => return Some(n),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => return None,
            // ECONNREFUSED from an earlier datagram: nobody listens (yet); keep waiting.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// `HOST:PORT` of a station, IPv4 (the station's raw ICMP socket is IPv4).
pub fn parse_station_address(text: &str) -> Result<SocketAddrV4, String> {
    match text.trim().parse::<SocketAddr>() {
        Ok(SocketAddr::V4(a)) if a.port() != 0 => Ok(a),
        Ok(SocketAddr::V4(_)) => Err(format!("{text:?}: give the station's port (HOST:PORT, e.g. 192.0.2.2:7450)")),
        Ok(SocketAddr::V6(_)) => Err(format!("{text:?}: the station protocol runs over IPv4 only")),
        Err(_) => Err(format!("{text:?}: not an IPv4 HOST:PORT (e.g. 192.0.2.2:7450)")),
    }
}
