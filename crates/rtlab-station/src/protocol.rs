//! The station protocol, version 2 (docs/station.md is its specification).
//!
//! Every message is a fixed-length record for its kind:
//!
//! ```text
//! 0   magic "RTLB"          4 bytes
//! 4   version               u8 (1)
//! 5   kind                  u8
//! 6   reserved              u16, zero
//! 8   session               u64 (0 in HELLO)
//! 16  sequence              u64
//! 24  body                  kind-specific, fixed length
//! ..  tag                   first 16 bytes of HMAC-SHA256(key, every byte before the tag)
//! ```
//!
//! Integers are little-endian. A message of the wrong length for its kind, of another
//! version, or whose tag does not verify is dropped and counted, never answered.

use crate::StationError;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::Path;

pub const MAGIC: [u8; 4] = *b"RTLB";
/// Version 2: HELLO carries the client's clock (freshness), STATUS two more counters
/// (`foreign_source`, `auth_limited`).
pub const VERSION: u8 = 2;
pub const HEADER_LEN: usize = 24;
pub const TAG_LEN: usize = 16;
/// The longest message of any kind: longer datagrams are "oversized".
pub const MAX_MESSAGE_LEN: usize = HEADER_LEN + STATUS_BODY_LEN + TAG_LEN;
/// Shortest key accepted (bytes of the key file, surrounding whitespace removed).
pub const MIN_KEY_LEN: usize = 32;

/// The kinds of message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Measuring side -> station (UDP): open a session. Body: the client's nonce and its
    /// CLOCK_REALTIME ([`Hello`]).
    Hello = 1,
    /// Station -> measuring side: the session is open. Body: the client's nonce, Δ, the
    /// accepted stimulus rate and the load ports.
    Welcome = 2,
    /// Measuring side -> station, as the payload of an ICMP echo request. Body: 8 bytes the
    /// station echoes back in the ANSWER without reading them (rtlab's probe sends zeros: it
    /// keeps t1 itself, so that the tag is computed before t1 is read).
    Stimulus = 3,
    /// Station -> measuring side (UDP), from the real-time task Δ after it woke. Body: the
    /// echoed send time and the station's own receive, wake and send times.
    Answer = 4,
    /// Measuring side -> station: ask for the counters. No body.
    StatusRequest = 5,
    /// Station -> measuring side: the counters ([`StationCounters`]).
    Status = 6,
    /// Measuring side -> station: start sending a load to the measuring side
    /// ([`LoadRequest`]; Akamina's comms client, the flood ping, a UDP flood from another
    /// host). The station sends only to the session's own address.
    LoadStart = 7,
    /// Measuring side -> station: stop the load of this kind. Body: the kind, 7 zero bytes.
    LoadStop = 8,
    /// Station -> measuring side: a LOAD_START accepted or refused, or what a stopped load
    /// did ([`LoadTally`]).
    LoadReport = 9,
}

impl Kind {
    pub fn from_u8(value: u8) -> Option<Kind> {
        Some(match value {
            1 => Kind::Hello,
            2 => Kind::Welcome,
            3 => Kind::Stimulus,
            4 => Kind::Answer,
            5 => Kind::StatusRequest,
            6 => Kind::Status,
            7 => Kind::LoadStart,
            8 => Kind::LoadStop,
            9 => Kind::LoadReport,
            _ => return None,
        })
    }

    /// Length of the body of this kind.
    pub fn body_len(self) -> usize {
        match self {
            Kind::Hello => HELLO_BODY_LEN,
            Kind::Welcome => WELCOME_BODY_LEN,
            Kind::Stimulus => 8,
            Kind::Answer => 32,
            Kind::StatusRequest => 0,
            Kind::Status => STATUS_BODY_LEN,
            Kind::LoadStart => 24,
            Kind::LoadStop => 8,
            Kind::LoadReport => LOAD_REPORT_BODY_LEN,
        }
    }

    /// Length of a whole message of this kind.
    pub fn message_len(self) -> usize {
        HEADER_LEN + self.body_len() + TAG_LEN
    }
}

const HELLO_BODY_LEN: usize = 16 + 8;
const WELCOME_BODY_LEN: usize = 16 + 8 + 4 + 2 + 2;
const LOAD_REPORT_BODY_LEN: usize = 8 + 4 * 8;
const STATUS_BODY_LEN: usize = StationCounters::FIELDS * 8;

/// The shared secret both sides read from a file.
#[derive(Clone)]
pub struct Key(Vec<u8>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// The key in `path`: its bytes with surrounding whitespace removed, at least
    /// [`MIN_KEY_LEN`] of them, from a file only its owner (you or root) can read or change,
    /// opened without following a symbolic link ([`rtlab_sys::secret::read_private_file`]).
    pub fn from_file(path: &Path) -> Result<Key, StationError> {
        let shown = path.display();
        let bytes = rtlab_sys::secret::read_private_file(path)
            .map_err(|e| StationError::Key(format!("the key file {shown} {e}")))?;
        Key::from_bytes(&bytes).map_err(|e| StationError::Key(format!("{shown}: {e}")))
    }

    /// A key from its file's content.
    pub fn from_bytes(bytes: &[u8]) -> Result<Key, String> {
        let trimmed = bytes.trim_ascii();
        if trimmed.len() < MIN_KEY_LEN {
            return Err(format!(
                "the key has {} bytes, fewer than {MIN_KEY_LEN} (make one with: head -c 32 /dev/urandom | base64 > FILE; \
                 chmod 600 FILE)",
                trimmed.len()
            ));
        }
        Ok(Key(trimmed.to_vec()))
    }

    /// The truncated HMAC-SHA256 of `data`. Allocates nothing (the key schedule is on the
    /// stack), so real-time loops may call it.
    pub fn tag(&self, data: &[u8]) -> [u8; TAG_LEN] {
        self.tag_parts(&[data])
    }

    fn tag_parts(&self, parts: &[&[u8]]) -> [u8; TAG_LEN] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        for part in parts {
            mac.update(part);
        }
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }

    /// Whether `tag` is the tag of `data`, compared in constant time.
    pub fn verify(&self, data: &[u8], tag: &[u8]) -> bool {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(data);
        mac.verify_truncated_left(tag).is_ok()
    }

    /// The proof the comms echo server asks for: the tag of "rtlab comms v1" followed by
    /// its 16-byte challenge.
    pub fn comms_proof(&self, challenge: &[u8; 16]) -> [u8; TAG_LEN] {
        self.tag_parts(&[b"rtlab comms v1", challenge])
    }

    /// The comms echo server's side of the proof: sends a random challenge on `stream` and
    /// takes the proof within one `limit` for the whole exchange (a peer trickling its bytes
    /// cannot stretch it: each read waits only for what is left), checked in constant time.
    /// False: close the connection.
    pub fn challenge_comms_peer(&self, stream: &mut std::net::TcpStream, limit: std::time::Duration) -> bool {
        use std::io::{Read, Write};
        let deadline = std::time::Instant::now() + limit;
        let mut challenge = [0u8; 16];
        if getrandom::fill(&mut challenge).is_err() || stream.write_all(&challenge).is_err() {
            return false;
        }
        let mut proof = [0u8; TAG_LEN];
        let mut have = 0;
        while have < proof.len() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
                return false;
            }
            match stream.read(&mut proof[have..]) {
                Ok(0) | Err(_) => return false,
                Ok(n) => have += n,
            }
        }
        self.verify_parts(&[b"rtlab comms v1", &challenge], &proof)
    }

    fn verify_parts(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        for part in parts {
            mac.update(part);
        }
        mac.verify_truncated_left(tag).is_ok()
    }
}

/// A decoded message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub session: u64,
    pub sequence: u64,
}

/// Why a received message was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Longer than any message ([`MAX_MESSAGE_LEN`]).
    Oversized,
    /// No magic, an unknown kind, a non-zero reserved field, or the wrong length for its
    /// kind (e.g. truncated).
    Malformed,
    /// Another protocol version.
    WrongVersion,
    /// The tag does not verify: another key, or altered.
    BadTag,
}

/// Writes a message of `kind` into `out` (which must hold [`Kind::message_len`] bytes) and
/// returns its length. Allocates nothing.
pub fn encode(key: &Key, kind: Kind, session: u64, sequence: u64, body: &[u8], out: &mut [u8]) -> usize {
    debug_assert_eq!(body.len(), kind.body_len());
    let len = kind.message_len();
    out[0..4].copy_from_slice(&MAGIC);
    out[4] = VERSION;
    out[5] = kind as u8;
    out[6..8].copy_from_slice(&[0, 0]);
    out[8..16].copy_from_slice(&session.to_le_bytes());
    out[16..24].copy_from_slice(&sequence.to_le_bytes());
    out[HEADER_LEN..HEADER_LEN + body.len()].copy_from_slice(body);
    let signed = len - TAG_LEN;
    let tag = key.tag(&out[..signed]);
    out[signed..len].copy_from_slice(&tag);
    len
}

/// Checks and decodes `message`: its header and body when it is well formed and its tag
/// verifies. Allocates nothing.
pub fn decode<'m>(key: &Key, message: &'m [u8]) -> Result<(Header, &'m [u8]), Rejection> {
    let header = check_form(message)?;
    if !verify_tag(key, message) {
        return Err(Rejection::BadTag);
    }
    Ok((header, &message[HEADER_LEN..message.len() - TAG_LEN]))
}

/// The checks that cost no MAC (steps 1 to 4 of docs/station.md): the header of a message
/// that is well formed, whose tag is not yet verified. The station's real-time task runs
/// its cheap session checks on this before it spends an HMAC ([`verify_tag`]).
pub fn check_form(message: &[u8]) -> Result<Header, Rejection> {
    // Another version first: its messages may be longer than this version's longest.
    if message.len() > 4 && message[0..4] == MAGIC && message[4] != VERSION {
        return Err(Rejection::WrongVersion);
    }
    if message.len() > MAX_MESSAGE_LEN {
        return Err(Rejection::Oversized);
    }
    if message.len() < HEADER_LEN + TAG_LEN || message[0..4] != MAGIC {
        return Err(Rejection::Malformed);
    }
    let kind = Kind::from_u8(message[5]).ok_or(Rejection::Malformed)?;
    if message[6..8] != [0, 0] || message.len() != kind.message_len() {
        return Err(Rejection::Malformed);
    }
    Ok(Header { kind, session: le_u64(&message[8..16]), sequence: le_u64(&message[16..24]) })
}

/// Whether the tag of a message that passed [`check_form`] verifies (constant time).
pub fn verify_tag(key: &Key, message: &[u8]) -> bool {
    let Some(signed) = message.len().checked_sub(TAG_LEN) else { return false };
    key.verify(&message[..signed], &message[signed..])
}

/// The body of a message that passed [`check_form`].
pub fn body_of(message: &[u8]) -> &[u8] {
    &message[HEADER_LEN..message.len() - TAG_LEN]
}

/// The little-endian u64 at the start of `bytes` (0 when shorter).
pub fn le_u64(bytes: &[u8]) -> u64 {
    bytes.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes)
}

/// The body of a HELLO: a random nonce (the WELCOME echoes it) and the client's
/// CLOCK_REALTIME when it sent the HELLO. The station refuses a HELLO whose time is more
/// than [`HELLO_FRESH_NS`] from its own clock, and remembers the nonces of every HELLO it
/// accepted within that window, so a captured HELLO cannot open a session later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub nonce: [u8; 16],
    pub client_time_ns: u64,
}

/// How far a HELLO's time may be from the station's clock, either way.
pub const HELLO_FRESH_NS: u64 = 30_000_000_000;

impl Hello {
    pub fn to_body(self) -> [u8; HELLO_BODY_LEN] {
        let mut body = [0u8; HELLO_BODY_LEN];
        body[0..16].copy_from_slice(&self.nonce);
        body[16..24].copy_from_slice(&self.client_time_ns.to_le_bytes());
        body
    }

    pub fn from_body(body: &[u8]) -> Hello {
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(&body[0..16]);
        Hello { nonce, client_time_ns: le_u64(&body[16..24]) }
    }

    /// Whether its time is within [`HELLO_FRESH_NS`] of `station_now_ns`.
    pub fn is_fresh(&self, station_now_ns: u64) -> bool {
        self.client_time_ns.abs_diff(station_now_ns) <= HELLO_FRESH_NS
    }
}

/// The body of a WELCOME.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Welcome {
    pub client_nonce: [u8; 16],
    /// Regnier's Δ: how long the real-time task waits after waking before it answers.
    pub delta_ns: u64,
    /// Stimuli per second the station answers at most (more are dropped and counted).
    pub max_rate_hz: u32,
    /// UDP port of the flood sink, TCP port of the comms echo server.
    pub sink_port: u16,
    pub comms_port: u16,
}

impl Welcome {
    pub fn to_body(self) -> [u8; WELCOME_BODY_LEN] {
        let mut body = [0u8; WELCOME_BODY_LEN];
        body[0..16].copy_from_slice(&self.client_nonce);
        body[16..24].copy_from_slice(&self.delta_ns.to_le_bytes());
        body[24..28].copy_from_slice(&self.max_rate_hz.to_le_bytes());
        body[28..30].copy_from_slice(&self.sink_port.to_le_bytes());
        body[30..32].copy_from_slice(&self.comms_port.to_le_bytes());
        body
    }

    pub fn from_body(body: &[u8]) -> Welcome {
        let mut client_nonce = [0u8; 16];
        client_nonce.copy_from_slice(&body[0..16]);
        Welcome {
            client_nonce,
            delta_ns: le_u64(&body[16..24]),
            max_rate_hz: u32::from_le_bytes(body[24..28].try_into().unwrap_or_default()),
            sink_port: u16::from_le_bytes(body[28..30].try_into().unwrap_or_default()),
            comms_port: u16::from_le_bytes(body[30..32].try_into().unwrap_or_default()),
        }
    }
}

/// The body of an ANSWER: times on the measuring side's clock (`sent_ns`, echoed) and on the
/// station's CLOCK_REALTIME (the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Answer {
    /// The stimulus's send time, as the measuring side wrote it.
    pub sent_ns: u64,
    /// The kernel's receive timestamp of the stimulus at the station (0: none attached).
    pub station_rx_ns: u64,
    /// When the station's real-time task returned from recvmsg.
    pub station_wake_ns: u64,
    /// When it sent this answer (at least Δ after waking).
    pub station_send_ns: u64,
}

impl Answer {
    pub fn to_body(self) -> [u8; 32] {
        let mut body = [0u8; 32];
        for (i, v) in [self.sent_ns, self.station_rx_ns, self.station_wake_ns, self.station_send_ns].iter().enumerate()
        {
            body[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        body
    }

    pub fn from_body(body: &[u8]) -> Answer {
        let word = |i: usize| le_u64(&body[i * 8..]);
        Answer { sent_ns: word(0), station_rx_ns: word(1), station_wake_ns: word(2), station_send_ns: word(3) }
    }
}

/// The loads a station can send to the measuring side, and those it runs on itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LoadKind {
    /// 64-byte (or `payload`) UDP datagrams at `rate` per second to the measuring side's
    /// sink at `port`.
    UdpFlood = 1,
    /// A comms client: 60,000-byte (or `payload`) messages to the measuring side's echo
    /// server at `port`, `rate` message bytes per second sent plus echoed (0: flat out),
    /// after proving the key.
    Comms = 2,
    /// ICMP echo requests at `rate` per second (0: as `ping -f`) to the measuring side,
    /// whose kernel answers them.
    PingFlood = 3,
    /// Run on the station itself (port, payload and rate 0): Regnier's shell loop on the
    /// measured station E_M, as rtlab's disk, fs-walk, compress and compile loads.
    ShellLoop = 4,
    /// Run on the station itself (port, payload and rate 0): rtlab's cpu load, one
    /// floating-point thread per online CPU of the station.
    Cpu = 5,
}

impl LoadKind {
    pub fn from_u8(value: u8) -> Option<LoadKind> {
        Some(match value {
            1 => LoadKind::UdpFlood,
            2 => LoadKind::Comms,
            3 => LoadKind::PingFlood,
            4 => LoadKind::ShellLoop,
            5 => LoadKind::Cpu,
            _ => return None,
        })
    }

    /// Whether the station runs the load on itself (no target) rather than sending it to
    /// the measuring side.
    pub fn is_local(self) -> bool {
        matches!(self, LoadKind::ShellLoop | LoadKind::Cpu)
    }

    pub fn name(self) -> &'static str {
        match self {
            LoadKind::UdpFlood => "udp-flood",
            LoadKind::Comms => "comms",
            LoadKind::PingFlood => "ping-flood",
            LoadKind::ShellLoop => "shell-loop",
            LoadKind::Cpu => "cpu",
        }
    }
}

/// The body of a LOAD_START.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadRequest {
    pub kind: LoadKind,
    /// Port on the session's address (udp-flood: the sink; comms: the echo server; 0 for
    /// the others).
    pub port: u16,
    /// Bytes per datagram or message (0: the load's default; always 0 for the loads the
    /// station runs on itself).
    pub payload: u32,
    /// Datagrams/s (udp-flood), message bytes/s (comms) or requests/s (ping-flood); 0: flat
    /// out (always 0 for the loads the station runs on itself).
    pub rate: u64,
    /// The station stops the load by itself after this long (a lost LOAD_STOP cannot leave
    /// it running).
    pub duration_ms: u64,
}

impl LoadRequest {
    pub fn to_body(self) -> [u8; 24] {
        let mut body = [0u8; 24];
        body[0] = self.kind as u8;
        body[2..4].copy_from_slice(&self.port.to_le_bytes());
        body[4..8].copy_from_slice(&self.payload.to_le_bytes());
        body[8..16].copy_from_slice(&self.rate.to_le_bytes());
        body[16..24].copy_from_slice(&self.duration_ms.to_le_bytes());
        body
    }

    /// None for an unknown kind.
    pub fn from_body(body: &[u8]) -> Option<LoadRequest> {
        Some(LoadRequest {
            kind: LoadKind::from_u8(body[0])?,
            port: u16::from_le_bytes(body[2..4].try_into().ok()?),
            payload: u32::from_le_bytes(body[4..8].try_into().ok()?),
            rate: le_u64(&body[8..16]),
            duration_ms: le_u64(&body[16..24]),
        })
    }
}

/// The body of a LOAD_REPORT: whether the load runs (or ran), and four counts whose meaning
/// depends on the kind: udp-flood (datagrams sent, send errors, bytes sent, ns it ran),
/// comms (round trips, bytes echoed, 1 if the client failed or saw a corrupted echo
/// else 0, ns), ping-flood (requests sent, echoes received, 0, ns), shell-loop (disk bytes
/// written, read and copied; files searched; bytes compressed; builds), cpu (floating-point
/// operations, ns of CPU time its threads used, threads, ns it ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadTally {
    pub kind: LoadKind,
    pub accepted: bool,
    pub counts: [u64; 4],
}

impl LoadTally {
    pub fn to_body(self) -> [u8; LOAD_REPORT_BODY_LEN] {
        let mut body = [0u8; LOAD_REPORT_BODY_LEN];
        body[0] = self.kind as u8;
        body[1] = u8::from(self.accepted);
        for (i, v) in self.counts.iter().enumerate() {
            body[8 + i * 8..16 + i * 8].copy_from_slice(&v.to_le_bytes());
        }
        body
    }

    pub fn from_body(body: &[u8]) -> Option<LoadTally> {
        let kind = LoadKind::from_u8(body[0])?;
        let counts = [0, 1, 2, 3].map(|i| le_u64(&body[8 + i * 8..]));
        Some(LoadTally { kind, accepted: body[1] == 1, counts })
    }
}

/// What the station counted since it started, as a STATUS carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct StationCounters {
    /// The station's CLOCK_MONOTONIC when the counters were read (rates between two
    /// STATUS; a step of its wall clock does not move it).
    pub station_time_ns: u64,
    /// Stimuli authenticated and answered by the real-time task.
    pub answered: u64,
    /// Dropped: authenticated stimuli above the accepted rate, and HELLOs above
    /// [`crate::station::MAX_HELLOS_PER_S`].
    pub rate_limited: u64,
    /// Dropped: the tag did not verify (wrong key or altered).
    pub bad_tag: u64,
    /// Dropped: no magic, an unknown kind, a non-zero reserved field, the wrong length for
    /// its kind (e.g. truncated), an ICMP packet that is not an echo request, or a kind that
    /// does not belong on the socket it came to (an ANSWER sent to the station).
    pub malformed: u64,
    /// Dropped: longer than any message.
    pub oversized: u64,
    /// Dropped: another protocol version.
    pub wrong_version: u64,
    /// Dropped: authenticated, but a sequence number already seen in its session, or a
    /// HELLO nonce already seen.
    pub replayed: u64,
    /// Dropped: authenticated, but for a session the station does not know (an old run's,
    /// or one evicted).
    pub unknown_session: u64,
    /// Sessions opened (HELLOs accepted).
    pub sessions: u64,
    /// Datagrams and bytes that reached the flood sink.
    pub sink_packets: u64,
    pub sink_bytes: u64,
    /// Comms echo server: bytes echoed and connections refused (bad proof, too many).
    pub comms_bytes: u64,
    pub comms_refused: u64,
    /// Authenticated stimuli whose ANSWER could not be sent (sendto failed).
    pub answer_send_errors: u64,
    /// The host's totals, for rates between two STATUS: interrupts (all lines, all CPUs),
    /// NET_RX softirqs (all CPUs), ICMP echo replies the kernel sent (/proc/net/snmp).
    pub interrupts: u64,
    pub net_rx_softirqs: u64,
    pub icmp_echo_replies: u64,
    /// Dropped before the MAC: a stimulus of a held session from another address than the
    /// session's peer (the kernel filter keeps non-peer addresses out; these came while it
    /// was being replaced, or from a spoofed peer address reaching the wrong session).
    pub foreign_source: u64,
    /// Dropped before the MAC: stimuli that reached the real-time task while packets failing
    /// authentication were over their budget ([`crate::station::AUTH_FAILURES_PER_S`]).
    pub auth_limited: u64,
}

impl StationCounters {
    pub const FIELDS: usize = 20;

    fn values(&self) -> [u64; Self::FIELDS] {
        [
            self.station_time_ns,
            self.answered,
            self.rate_limited,
            self.bad_tag,
            self.malformed,
            self.oversized,
            self.wrong_version,
            self.replayed,
            self.unknown_session,
            self.sessions,
            self.sink_packets,
            self.sink_bytes,
            self.comms_bytes,
            self.comms_refused,
            self.answer_send_errors,
            self.interrupts,
            self.net_rx_softirqs,
            self.icmp_echo_replies,
            self.foreign_source,
            self.auth_limited,
        ]
    }

    pub fn to_body(self) -> [u8; STATUS_BODY_LEN] {
        let mut body = [0u8; STATUS_BODY_LEN];
        for (i, v) in self.values().iter().enumerate() {
            body[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        body
    }

    pub fn from_body(body: &[u8]) -> StationCounters {
        let w = |i: usize| le_u64(&body[i * 8..]);
        StationCounters {
            station_time_ns: w(0),
            answered: w(1),
            rate_limited: w(2),
            bad_tag: w(3),
            malformed: w(4),
            oversized: w(5),
            wrong_version: w(6),
            replayed: w(7),
            unknown_session: w(8),
            sessions: w(9),
            sink_packets: w(10),
            sink_bytes: w(11),
            comms_bytes: w(12),
            comms_refused: w(13),
            answer_send_errors: w(14),
            interrupts: w(15),
            net_rx_softirqs: w(16),
            icmp_echo_replies: w(17),
            foreign_source: w(18),
            auth_limited: w(19),
        }
    }

    /// Messages dropped as junk: everything not answered for a reason other than the rate.
    pub fn junk(&self) -> u64 {
        self.bad_tag
            + self.malformed
            + self.oversized
            + self.wrong_version
            + self.replayed
            + self.unknown_session
            + self.foreign_source
            + self.auth_limited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> Key {
        Key::from_bytes(b"0123456789abcdef0123456789abcdef\n").unwrap()
    }

    #[test]
    fn a_message_round_trips_and_any_change_is_refused() {
        let k = key();
        let mut out = [0u8; MAX_MESSAGE_LEN];
        let len = encode(&k, Kind::Stimulus, 7, 42, &99u64.to_le_bytes(), &mut out);
        assert_eq!(len, 48);
        let (header, body) = decode(&k, &out[..len]).unwrap();
        assert_eq!(header, Header { kind: Kind::Stimulus, session: 7, sequence: 42 });
        assert_eq!(le_u64(body), 99);
        let other = Key::from_bytes(b"another key of at least 32 bytes!").unwrap();
        assert_eq!(decode(&other, &out[..len]), Err(Rejection::BadTag));
        assert_eq!(decode(&k, &out[..len - 1]), Err(Rejection::Malformed));
        let mut v1 = out;
        v1[4] = 1;
        assert_eq!(decode(&k, &v1[..len]), Err(Rejection::WrongVersion));
        // A longer message of another version is still another version, not oversized.
        let mut long_v3 = [0u8; MAX_MESSAGE_LEN + 100];
        long_v3[..5].copy_from_slice(b"RTLB\x03");
        assert_eq!(decode(&k, &long_v3), Err(Rejection::WrongVersion));
        assert_eq!(decode(&k, &[0u8; MAX_MESSAGE_LEN + 1]), Err(Rejection::Oversized));
    }

    #[test]
    fn short_keys_are_refused_with_the_way_to_make_one() {
        let e = Key::from_bytes(b"  short \n").unwrap_err();
        assert!(e.contains("fewer than 32") && e.contains("/dev/urandom"), "{e}");
    }

    #[test]
    fn bodies_round_trip() {
        let h = Hello { nonce: [7; 16], client_time_ns: 1_700_000_000_000_000_000 };
        assert_eq!(Hello::from_body(&h.to_body()), h);
        assert!(h.is_fresh(h.client_time_ns + HELLO_FRESH_NS) && h.is_fresh(h.client_time_ns - HELLO_FRESH_NS));
        assert!(
            !h.is_fresh(h.client_time_ns + HELLO_FRESH_NS + 1) && !h.is_fresh(h.client_time_ns - HELLO_FRESH_NS - 1)
        );
        let w = Welcome { client_nonce: [3; 16], delta_ns: 10_000, max_rate_hz: 1000, sink_port: 5, comms_port: 6 };
        assert_eq!(Welcome::from_body(&w.to_body()), w);
        let a = Answer { sent_ns: 1, station_rx_ns: 2, station_wake_ns: 3, station_send_ns: 4 };
        assert_eq!(Answer::from_body(&a.to_body()), a);
        let c = StationCounters {
            station_time_ns: 1,
            icmp_echo_replies: 17,
            sink_bytes: 12,
            auth_limited: 19,
            foreign_source: 18,
            ..Default::default()
        };
        assert_eq!(StationCounters::from_body(&c.to_body()), c);
        let r = LoadRequest { kind: LoadKind::Comms, port: 4000, payload: 60_000, rate: 12_500_000, duration_ms: 9 };
        assert_eq!(LoadRequest::from_body(&r.to_body()), Some(r));
        let t = LoadTally { kind: LoadKind::PingFlood, accepted: true, counts: [1, 2, 3, 4] };
        assert_eq!(LoadTally::from_body(&t.to_body()), Some(t));
        // The loads the station runs on itself: kinds 4 and 5, then unknown.
        for (value, kind, name) in [(4, LoadKind::ShellLoop, "shell-loop"), (5, LoadKind::Cpu, "cpu")] {
            assert_eq!(LoadKind::from_u8(value), Some(kind));
            assert_eq!((kind as u8, kind.name(), kind.is_local()), (value, name, true));
            let r = LoadRequest { kind, port: 0, payload: 0, rate: 0, duration_ms: 60_000 };
            assert_eq!(LoadRequest::from_body(&r.to_body()), Some(r));
        }
        assert!(![LoadKind::UdpFlood, LoadKind::Comms, LoadKind::PingFlood].iter().any(|k| k.is_local()));
        assert_eq!(LoadKind::from_u8(6), None);
    }

    proptest! {
        /// Whatever arrives, decoding never panics, and only a correctly tagged message of
        /// the right length for its kind is accepted.
        #[test]
        fn decoding_junk_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let k = key();
            if let Ok((header, body)) = decode(&k, &bytes) {
                prop_assert_eq!(bytes.len(), header.kind.message_len());
                prop_assert_eq!(body.len(), header.kind.body_len());
            }
        }
    }

    /// The server's side of the comms proof: the right proof passes, a wrong one fails, and
    /// a peer sending it one byte every 200 ms (3.2 s in all) is cut off at the 1 s limit.
    #[test]
    fn the_comms_proof_has_one_deadline() {
        use std::io::{Read, Write};
        let k = key();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let peer = |how: u8| {
            let k = key();
            std::thread::spawn(move || {
                let mut stream = std::net::TcpStream::connect(address).unwrap();
                let mut challenge = [0u8; 16];
                stream.read_exact(&mut challenge).unwrap();
                let mut proof = k.comms_proof(&challenge);
                match how {
                    0 => drop(stream.write_all(&proof)),
                    1 => {
                        proof[15] ^= 1;
                        drop(stream.write_all(&proof));
                    }
                    _ => {
                        for byte in proof {
                            if stream.write_all(&[byte]).is_err() {
                                break;
                            }
                            std::thread::sleep(std::time::Duration::from_millis(200));
                        }
                    }
                }
            })
        };
        let limit = std::time::Duration::from_secs(1);
        for (how, passes) in [(0, true), (1, false), (2, false)] {
            let client = peer(how);
            let (mut stream, _) = listener.accept().unwrap();
            let started = std::time::Instant::now();
            assert_eq!(k.challenge_comms_peer(&mut stream, limit), passes, "peer {how}");
            if how == 2 {
                // Well before the 3.2 s the trickle would take (a loaded machine may add some).
                assert!(started.elapsed() < std::time::Duration::from_millis(2_500), "{:?}", started.elapsed());
            }
            drop(stream);
            client.join().unwrap();
        }
    }
}
