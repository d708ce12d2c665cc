//! Raw ICMPv4 sockets with kernel receive timestamps, for the second station.
//!
//! - [`IcmpSocket`]: a raw `IPPROTO_ICMP` socket (CAP_NET_RAW). It sends ICMP messages
//!   built by the caller ([`IcmpSocket::send_to`]) and receives copies of the ICMP messages
//!   that reach this host, IP header included, with the kernel's software receive time
//!   (SO_TIMESTAMPING). [`IcmpSocket::keep_only`] attaches a classic BPF filter in the
//!   kernel, so that only one ICMP type carrying a given 4-byte magic after the ICMP header
//!   ever wakes the reader: a ping flood at the host costs the kernel, not the reader.
//!
//! A raw socket sees a copy: the kernel itself still answers echo requests (that answer is
//! the station's early, kernel-level one). Receiving allocates nothing per call.
//!
//! Timestamps are the kernel's software ones, or the NIC's ([`IcmpSocket::use_hardware`])
//! where its driver offers them. With [`IcmpSocket::enable_tx_timestamps`] each send's
//! transmit time comes back on the error queue ([`IcmpSocket::tx_timestamp`]).

use crate::net::{
    enable_hardware_timestamps, hwtstamp_ioctl, recvmsg_into, scm_timestamping_ns, set_option, Timestamping,
    CONTROL_WORDS,
};
use crate::{Result, SysError};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// ICMP echo request and echo reply types.
pub const ECHO_REQUEST: u8 = 8;
pub const ECHO_REPLY: u8 = 0;

/// One ICMP message received by [`IcmpSocket::recv`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpRecv {
    /// `len` bytes (IP header first) from `from`, with the kernel's software receive time
    /// (CLOCK_REALTIME ns) when it attached one.
    Packet { len: usize, from: Ipv4Addr, kernel_rx_ns: Option<u64> },
    /// A signal interrupted the wait.
    Interrupted,
}

/// A raw ICMPv4 socket.
pub struct IcmpSocket {
    fd: OwnedFd,
    control: Box<[u64; CONTROL_WORDS]>,
    timestamping: Timestamping,
    /// The interface's timestamping configuration before [`use_hardware`](Self::use_hardware)
    /// changed it, put back on drop.
    restore_hardware: Option<(String, libc::hwtstamp_config)>,
    /// Messages sent: the id of the next send's transmit timestamp (OPT_ID counts sends).
    sends: u32,
}

impl IcmpSocket {
    /// Opens a raw ICMPv4 socket with software receive timestamps. Needs CAP_NET_RAW.
    pub fn open() -> Result<Self> {
        // SAFETY: socket(2) with constant arguments; the result is checked.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_ICMP) };
        if raw < 0 {
            return Err(SysError::last_os("socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) (needs CAP_NET_RAW)"));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let flags = (libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE) as libc::c_int;
        set_option(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPING, &flags, "setsockopt(SO_TIMESTAMPING)")?;
        Ok(Self {
            fd,
            control: Box::new([0; CONTROL_WORDS]),
            timestamping: Timestamping::Software,
            restore_hardware: None,
            sends: 0,
        })
    }

    /// Receives only through `interface` (SO_BINDTODEVICE) and takes the NIC's hardware
    /// timestamps of received packets, and with `transmit` of sent ones too. Fails (the
    /// socket keeps software timestamps) when the driver offers none (veth, loopback).
    pub fn use_hardware(&mut self, interface: &str, transmit: bool) -> Result<()> {
        crate::net::bind_to_device(self.fd.as_raw_fd(), interface)?;
        let previous = enable_hardware_timestamps(self.fd.as_raw_fd(), interface, transmit)?;
        self.restore_hardware = Some((interface.to_string(), previous));
        self.timestamping = Timestamping::Hardware;
        Ok(())
    }

    /// Receives only through `interface` and reads the NIC's receive timestamps, which
    /// another socket asked the NIC for ([`use_hardware`](Self::use_hardware)): the NIC's
    /// setting is changed and restored by that one socket only.
    pub fn read_hardware_timestamps(&mut self, interface: &str) -> Result<()> {
        crate::net::bind_to_device(self.fd.as_raw_fd(), interface)?;
        crate::net::read_hardware_flags(self.fd.as_raw_fd())?;
        self.timestamping = Timestamping::Hardware;
        Ok(())
    }

    /// Software transmit timestamps of every send, numbered by send (software mode; the
    /// hardware mode asks for hardware ones in [`use_hardware`](Self::use_hardware)).
    pub fn enable_tx_timestamps(&mut self) -> Result<()> {
        let flags = (libc::SOF_TIMESTAMPING_RX_SOFTWARE
            | libc::SOF_TIMESTAMPING_SOFTWARE
            | libc::SOF_TIMESTAMPING_TX_SOFTWARE
            | crate::net::TX_ID_FLAGS) as libc::c_int;
        set_option(
            self.fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            &flags,
            "setsockopt(SO_TIMESTAMPING, tx)",
        )
    }

    pub fn timestamping(&self) -> Timestamping {
        self.timestamping
    }

    /// The id the next send's transmit timestamp will carry.
    pub fn next_send_id(&self) -> u32 {
        self.sends
    }

    /// The transmit timestamp of send `id` (see [`next_send_id`](Self::next_send_id)),
    /// waiting up to `wait_ms` for it on the error queue; older ones found first are
    /// dropped. None when it did not come in time. Nothing allocated.
    pub fn tx_timestamp(&mut self, id: u32, wait_ms: i32) -> Result<Option<u64>> {
        let fd = self.fd.as_raw_fd();
        let deadline = crate::clock::monotonic_ns() + u64::try_from(wait_ms.max(0)).unwrap_or(0) * 1_000_000;
        let slot = self.slot();
        loop {
            let mut buf = [0u8; 64];
            let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
            let e = match recvmsg_into(fd, &mut buf, &mut self.control, None, flags) {
                Ok((_, msg)) => match (scm_timestamping_ns(&msg, slot), timestamp_id(&msg)) {
                    (Some(ns), Some(found)) if found == id => return Ok(Some(ns)),
                    // A later id than this socket's count: the kernel spent ids on sends that
                    // failed after it numbered them. Resynchronised on the newest.
                    (Some(ns), Some(found)) if found.wrapping_sub(id) < u32::MAX / 2 => {
                        self.sends = found.wrapping_add(1);
                        return Ok(Some(ns));
                    }
                    // An older send's, or one without a time: dropped.
                    _ => continue,
                },
                Err(e) => e,
            };
            if !matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
                return Err(SysError::from_io("recvmsg (error queue)", e));
            }
            let now = crate::clock::monotonic_ns();
            if now >= deadline {
                return Ok(None);
            }
            let mut poll = libc::pollfd { fd, events: 0, revents: 0 };
            let left_ms = ((deadline - now) / 1_000_000).max(1) as libc::c_int;
            // SAFETY: `poll` is one valid, writable pollfd. POLLERR is reported without being asked for.
            unsafe { libc::poll(&mut poll, 1, left_ms) };
        }
    }

    /// Which timespec of SCM_TIMESTAMPING holds this socket's kind of time.
    fn slot(&self) -> usize {
        match self.timestamping {
            Timestamping::Software => 0,
            Timestamping::Hardware => 2,
        }
    }

    /// Receives only ICMP messages addressed to `address` (bind(2)).
    pub fn bind(&self, address: Ipv4Addr) -> Result<()> {
        let sin = sockaddr_in(address);
        // SAFETY: `sin` is a valid sockaddr_in and its size is passed with it.
        let rc = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&sin as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(SysError::last_os("bind the ICMP socket"));
        }
        Ok(())
    }

    /// Lets through only ICMP messages of type `icmp_type` whose first 4 bytes after the
    /// 8-byte ICMP header are `magic`: a classic BPF program run by the kernel for each
    /// packet, so others never reach this socket's queue.
    pub fn keep_only(&self, icmp_type: u8, magic: [u8; 4]) -> Result<()> {
        attach_filter(self.fd.as_raw_fd(), &filter_program(icmp_type, magic, None))
    }

    /// A second handle on this socket's kernel filter, for another thread to replace it
    /// ([`IcmpFilter::keep_only_from`]) while this one receives: the kernel swaps a socket's
    /// filter atomically, so the reader sees the old one or the new one, never neither.
    pub fn filter_handle(&self) -> Result<IcmpFilter> {
        let fd = self.fd.try_clone().map_err(|e| SysError::from_io("dup the ICMP socket", e))?;
        Ok(IcmpFilter { fd })
    }

    /// Sends one ICMP message (header and payload, checksum filled in by the caller) to
    /// `to`; the kernel adds the IP header. One `sendto`.
    pub fn send_to(&mut self, message: &[u8], to: Ipv4Addr) -> Result<usize> {
        let sin = sockaddr_in(to);
        // SAFETY: `message` and `sin` are valid for the call and their lengths are passed.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                message.as_ptr().cast(),
                message.len(),
                0,
                (&sin as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if n < 0 {
            return Err(SysError::last_os("sendto (ICMP)"));
        }
        self.sends = self.sends.wrapping_add(1);
        Ok(n as usize)
    }

    /// Blocks until an ICMP message arrives (or a signal interrupts the wait). One
    /// `recvmsg`; nothing allocated.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<IcmpRecv> {
        let mut from = sockaddr_in(Ipv4Addr::UNSPECIFIED);
        match recvmsg_into(self.fd.as_raw_fd(), buf, &mut self.control, Some(&mut from), 0) {
            Ok((n, msg)) => Ok(IcmpRecv::Packet {
                len: n.min(buf.len()),
                from: Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)),
                kernel_rx_ns: scm_timestamping_ns(&msg, self.slot()),
            }),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(IcmpRecv::Interrupted),
            Err(e) => Err(SysError::from_io("recvmsg (ICMP)", e)),
        }
    }
}

impl Drop for IcmpSocket {
    fn drop(&mut self) {
        if let Some((interface, mut previous)) = self.restore_hardware.take() {
            // Best effort: nothing can be done about a failure while dropping.
            let _ = hwtstamp_ioctl(self.fd.as_raw_fd(), &interface, libc::SIOCSHWTSTAMP, &mut previous);
        }
    }
}

/// The send id (`ee_data`) of a transmit timestamp on the error queue.
fn timestamp_id(msg: &libc::msghdr) -> Option<u32> {
    // SAFETY: `msg` was filled by recvmsg: its control pointer and length describe the
    // control buffer, which CMSG_FIRSTHDR/CMSG_NXTHDR walk within.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: a non-null header returned by CMSG_FIRSTHDR/NXTHDR lies in the buffer.
        let header = unsafe { &*cmsg };
        if header.cmsg_level == libc::SOL_IP && header.cmsg_type == libc::IP_RECVERR {
            let needed = std::mem::size_of::<libc::sock_extended_err>();
            // SAFETY: CMSG_LEN is arithmetic.
            if header.cmsg_len as usize >= unsafe { libc::CMSG_LEN(needed as u32) } as usize {
                // SAFETY: the message holds a sock_extended_err (length checked), read
                // unaligned as the data may not be aligned for it.
                let err = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::sock_extended_err>()) };
                if err.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING {
                    return Some(err.ee_data);
                }
            }
        }
        // SAFETY: as above; NXTHDR returns null past the end.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    None
}

impl AsRawFd for IcmpSocket {
    fn as_raw_fd(&self) -> libc::c_int {
        self.fd.as_raw_fd()
    }
}

/// The Internet checksum (RFC 1071) of `bytes`: what goes into an ICMP header whose
/// checksum field is zero while it is computed.
pub fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = bytes.chunks_exact(2);
    for pair in &mut chunks {
        sum += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Whether net.ipv4.icmp_echo_ignore_all is off (the kernel answers echo requests).
pub fn kernel_answers_echo() -> Result<bool> {
    let path = "/proc/sys/net/ipv4/icmp_echo_ignore_all";
    let text = std::fs::read_to_string(path).map_err(|e| SysError::from_io("read icmp_echo_ignore_all", e))?;
    Ok(text.trim() == "0")
}

fn sockaddr_in(address: Ipv4Addr) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from(address).to_be() },
        sin_zero: [0; 8],
    }
}

/// Replaces the kernel filter of an [`IcmpSocket`] from another thread.
pub struct IcmpFilter {
    fd: OwnedFd,
}

impl IcmpFilter {
    /// As [`IcmpSocket::keep_only`], and only from one of `sources` (the IPv4 source
    /// address): any other sender's packets are dropped in the kernel and never wake the
    /// reader. An empty list keeps nothing. At most 64 sources.
    pub fn keep_only_from(&self, icmp_type: u8, magic: [u8; 4], sources: &[Ipv4Addr]) -> Result<()> {
        if sources.len() > MAX_FILTER_SOURCES {
            return Err(SysError::Invalid(format!(
                "an ICMP filter holds at most {MAX_FILTER_SOURCES} source addresses, not {}",
                sources.len()
            )));
        }
        attach_filter(self.fd.as_raw_fd(), &filter_program(icmp_type, magic, Some(sources)))
    }
}

/// Source addresses one filter checks at most (each is one compare; jumps are 8-bit).
pub const MAX_FILTER_SOURCES: usize = 64;

/// The classic BPF program: the ICMP type at the IP header's end, the payload word after the
/// 8-byte ICMP header, then (with `sources`) the IP source address at offset 12.
fn filter_program(icmp_type: u8, magic: [u8; 4], sources: Option<&[Ipv4Addr]>) -> Vec<libc::sock_filter> {
    let magic_word = u32::from_be_bytes(magic);
    let mut program = vec![
        // X = IP header length; then the ICMP type at [X], the payload word at [X + 8].
        sock_filter(libc::BPF_LDX | libc::BPF_B | libc::BPF_MSH, 0, 0, 0),
        sock_filter(libc::BPF_LD | libc::BPF_B | libc::BPF_IND, 0, 0, 0),
    ];
    let Some(sources) = sources else {
        program.extend([
            sock_filter(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, 3, u32::from(icmp_type)),
            sock_filter(libc::BPF_LD | libc::BPF_W | libc::BPF_IND, 0, 0, 8),
            sock_filter(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, 1, magic_word),
            sock_filter(libc::BPF_RET | libc::BPF_K, 0, 0, 0xffff),
            sock_filter(libc::BPF_RET | libc::BPF_K, 0, 0, 0),
        ]);
        return program;
    };
    let n = sources.len();
    // Layout: 2 type test, 3 load, 4 magic test, 5 load source, 6..6+n source tests,
    // 6+n jump to drop, 7+n accept, 8+n drop. A jump's offset counts from the next
    // instruction.
    let (accept, drop) = (7 + n, 8 + n);
    let offset = |from: usize, to: usize| (to - from - 1) as u8;
    program.extend([
        sock_filter(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, offset(2, drop), u32::from(icmp_type)),
        sock_filter(libc::BPF_LD | libc::BPF_W | libc::BPF_IND, 0, 0, 8),
        sock_filter(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, 0, offset(4, drop), magic_word),
        sock_filter(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 12),
    ]);
    for (i, source) in sources.iter().enumerate() {
        program.push(sock_filter(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            offset(6 + i, accept),
            0,
            u32::from(*source),
        ));
    }
    program.push(sock_filter(libc::BPF_JMP | libc::BPF_JA, 0, 0, offset(6 + n, drop) as u32));
    program.push(sock_filter(libc::BPF_RET | libc::BPF_K, 0, 0, 0xffff));
    program.push(sock_filter(libc::BPF_RET | libc::BPF_K, 0, 0, 0));
    debug_assert_eq!(program.len(), drop + 1);
    program
}

fn attach_filter(fd: libc::c_int, program: &[libc::sock_filter]) -> Result<()> {
    let fprog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr().cast_mut() };
    set_option(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog, "setsockopt(SO_ATTACH_FILTER)")
}

fn sock_filter(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt, jf, k }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_matches_rfc1071_examples() {
        // RFC 1071 section 3: the one's complement sum of these words is 0xddf2.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(internet_checksum(&bytes), !0xddf2);
        // A message with its checksum filled in sums to zero.
        let mut echo = [8u8, 0, 0, 0, 0x12, 0x34, 0, 1, b'R', b'T', b'L'];
        let sum = internet_checksum(&echo);
        echo[2..4].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(internet_checksum(&echo), 0);
    }

    /// As root: an echo request to 127.0.0.1 comes back as a kernel echo reply that passes
    /// the filter, with a receive timestamp; a request without the magic never arrives; each
    /// send's transmit timestamp comes back with its id; loopback has no hardware times.
    #[test]
    fn the_kernel_echo_passes_the_filter_with_a_timestamp() {
        let Ok(mut socket) = IcmpSocket::open() else {
            assert!(std::env::var_os("CI").is_none(), "CI=true: a raw ICMP socket needs root (CAP_NET_RAW)");
            eprintln!("skipped: a raw ICMP socket needs CAP_NET_RAW");
            return;
        };
        if !kernel_answers_echo().unwrap_or(false) {
            return;
        }
        socket.keep_only(ECHO_REPLY, *b"RTLT").unwrap();
        let message = |payload: &[u8; 4]| {
            let mut m = [0u8; 16];
            m[0] = ECHO_REQUEST;
            m[4..6].copy_from_slice(&0x7e57u16.to_be_bytes());
            m[8..12].copy_from_slice(payload);
            let sum = internet_checksum(&m);
            m[2..4].copy_from_slice(&sum.to_be_bytes());
            m
        };
        socket.enable_tx_timestamps().unwrap();
        socket.send_to(&message(b"XXXX"), Ipv4Addr::LOCALHOST).unwrap();
        // The kernel turns timestamping on from a work queue when a socket first asks for
        // it: the first packets may come without; up to 10 attempts.
        let mut buf = [0u8; 128];
        let mut stamped = None;
        for _ in 0..10 {
            let id = socket.next_send_id();
            let before = crate::net::realtime_ns();
            socket.send_to(&message(b"RTLT"), Ipv4Addr::LOCALHOST).unwrap();
            let sent = socket.tx_timestamp(id, 1_000).unwrap();
            let ready = crate::net::wait_readable_any([socket.as_raw_fd()], 2_000).unwrap();
            assert!(ready[0], "no echo reply within 2 s");
            match socket.recv(&mut buf).unwrap() {
                IcmpRecv::Packet { len, from, kernel_rx_ns } => {
                    let ihl = usize::from(buf[0] & 0xf) * 4;
                    assert_eq!(len, ihl + 16);
                    assert_eq!(buf[ihl], ECHO_REPLY);
                    assert_eq!(&buf[ihl + 8..ihl + 12], b"RTLT", "the filtered-out request came first");
                    assert_eq!(from, Ipv4Addr::LOCALHOST);
                    if let (Some(sent), Some(received)) = (sent, kernel_rx_ns) {
                        stamped = Some((before, sent, received, id));
                        break;
                    }
                }
                IcmpRecv::Interrupted => panic!("interrupted"),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let (before, sent, received, id) = stamped.expect("a timestamped send and echo within 10 attempts");
        // The transmit time of that send, after `before`; the echo received after it.
        assert!(sent >= before && sent - before < 1_000_000_000, "tx {sent}, before {before}");
        assert!(received >= sent, "received {received} before sent {sent}");
        assert_eq!(socket.tx_timestamp(id + 1, 0).unwrap(), None, "no timestamp of a send not made");
        // Nothing else passed: the request copies and the XXXX reply were filtered out.
        assert!(!crate::net::wait_readable_any([socket.as_raw_fd()], 200).unwrap()[0]);
        let mut other = IcmpSocket::open().unwrap();
        assert!(other.use_hardware("lo", true).is_err(), "loopback offers no hardware timestamps");
        assert_eq!(other.timestamping(), Timestamping::Software);
    }

    /// As root: a filter on source addresses lets through only the listed senders' packets
    /// (echo replies from 127.0.0.2 pass, those from 127.0.0.1 do not), and is replaced from
    /// the second handle while the socket stays open; an empty list keeps nothing.
    #[test]
    fn the_source_filter_keeps_only_the_listed_senders() {
        let Ok(mut socket) = IcmpSocket::open() else {
            assert!(std::env::var_os("CI").is_none(), "CI=true: a raw ICMP socket needs root (CAP_NET_RAW)");
            eprintln!("NOT RUN: a raw ICMP socket needs CAP_NET_RAW");
            return;
        };
        if !kernel_answers_echo().unwrap_or(false) {
            assert!(std::env::var_os("CI").is_none(), "CI=true: the kernel must answer echo requests");
            return;
        }
        let filter = socket.filter_handle().unwrap();
        let echo = |seq: u16| {
            let mut m = [0u8; 16];
            m[0] = ECHO_REQUEST;
            m[4..6].copy_from_slice(&0x5f17u16.to_be_bytes());
            m[6..8].copy_from_slice(&seq.to_be_bytes());
            m[8..12].copy_from_slice(b"RTLS");
            let sum = internet_checksum(&m);
            m[2..4].copy_from_slice(&sum.to_be_bytes());
            m
        };
        let second = Ipv4Addr::new(127, 0, 0, 2);
        let received = |socket: &mut IcmpSocket| {
            let mut from = Vec::new();
            let mut buf = [0u8; 128];
            while crate::net::wait_readable_any([socket.as_raw_fd()], 200).unwrap()[0] {
                if let IcmpRecv::Packet { from: f, .. } = socket.recv(&mut buf).unwrap() {
                    from.push(f);
                }
            }
            from
        };
        // What reached the socket before it had a filter (another test's echoes, in
        // parallel) is dropped first: a filter keeps out what arrives after it.
        filter.keep_only_from(ECHO_REPLY, *b"RTLS", &[]).unwrap();
        let _ = received(&mut socket);
        let mut sender = IcmpSocket::open().unwrap();
        for sources in [vec![second], vec![], vec![Ipv4Addr::LOCALHOST, second]] {
            filter.keep_only_from(ECHO_REPLY, *b"RTLS", &sources).unwrap();
            sender.send_to(&echo(1), Ipv4Addr::LOCALHOST).unwrap();
            sender.send_to(&echo(2), second).unwrap();
            let mut from = received(&mut socket);
            from.sort();
            let mut expected = sources.clone();
            expected.sort();
            assert_eq!(from, expected, "filter {sources:?}");
        }
        let too_many = vec![second; MAX_FILTER_SOURCES + 1];
        assert!(filter.keep_only_from(ECHO_REPLY, *b"RTLS", &too_many).is_err());
    }
}
