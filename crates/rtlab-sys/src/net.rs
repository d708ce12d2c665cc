//! UDP sockets with kernel receive timestamps (SO_TIMESTAMPING) for the net probe.
//!
//! - [`UdpReceiver`]: a UDP socket bound to an address (port 0: an ephemeral port),
//!   optionally to an interface (SO_BINDTODEVICE, with an attempt at hardware receive
//!   timestamps), whose datagrams carry the kernel's receive time. [`UdpReceiver::recv_with_timestamp`]
//!   is one `recvmsg` into a control buffer allocated with the socket: nothing is allocated
//!   per call.
//! - [`UdpSender`]: a UDP socket connected to a receiver; [`UdpSender::send`] is one `send`.
//! - [`clock_pair_ns`]: CLOCK_REALTIME (the clock of socket timestamps) and CLOCK_MONOTONIC
//!   read together.
//!
//! The kernel turns receive timestamping on from a work queue when the first socket asks
//! for it: datagrams received just after set-up may carry no timestamp (None).
//!
//! Both sockets are `std::net::UdpSocket`s underneath (address handling, close on drop);
//! this module adds the socket options and the `recvmsg` that std does not offer.

use crate::{Result, SysError};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

const NS_PER_S: u64 = 1_000_000_000;

/// Where the kernel's receive timestamps come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timestamping {
    /// Taken by the kernel when the packet enters the network stack (CLOCK_REALTIME).
    Software,
    /// Taken by the NIC (its PTP hardware clock, raw: not converted to system time).
    Hardware,
}

impl Timestamping {
    pub fn name(self) -> &'static str {
        match self {
            Timestamping::Software => "software",
            Timestamping::Hardware => "hardware",
        }
    }
}

/// Result of one [`UdpReceiver::recv_with_timestamp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvOutcome {
    /// A datagram of `len` bytes (truncated to the buffer if longer). `kernel_rx_ns` is its
    /// receive timestamp in ns, None when the kernel attached none of the configured kind.
    Datagram { len: usize, kernel_rx_ns: Option<u64> },
    /// A signal interrupted the wait (EINTR); the caller decides whether to wait again.
    Interrupted,
}

/// Room for the control messages of one receive (SCM_TIMESTAMPING's three timespecs, an
/// IP_RECVERR); u64 elements keep it aligned for `cmsghdr`.
pub(crate) const CONTROL_WORDS: usize = 32;

/// A UDP socket that receives datagrams with kernel receive timestamps.
pub struct UdpReceiver {
    socket: UdpSocket,
    timestamping: Timestamping,
    /// Why hardware timestamps were asked for but are not used.
    hardware_refused: Option<String>,
    /// The recvmsg control buffer, allocated once with the socket.
    control: Box<[u64; CONTROL_WORDS]>,
    /// The interface's timestamping configuration before this socket changed it, put
    /// back on drop (the setting is the NIC's, shared with e.g. a PTP daemon).
    restore_hardware: Option<(String, libc::hwtstamp_config)>,
}

/// `setsockopt` with a plain-data value.
pub(crate) fn set_option<T>(
    fd: libc::c_int,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
    op: &'static str,
) -> Result<()> {
    // SAFETY: `value` points to a valid T for the duration of the call and its size is
    // passed with it; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(SysError::last_os(op));
    }
    Ok(())
}

const SOFTWARE_FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
const HARDWARE_FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_RX_HARDWARE | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
/// Transmit timestamps numbered per send (OPT_ID), without the packet looped back (TSONLY).
pub(crate) const TX_ID_FLAGS: libc::c_uint = libc::SOF_TIMESTAMPING_OPT_ID | libc::SOF_TIMESTAMPING_OPT_TSONLY;

impl UdpReceiver {
    /// Binds a UDP socket to `address` on an ephemeral port and enables kernel receive
    /// timestamps. With `interface`, the socket only receives what arrives through it
    /// (SO_BINDTODEVICE) and hardware timestamps are tried first: when the NIC or its
    /// driver refuses them, software timestamps are used and
    /// [`hardware_refused`](Self::hardware_refused) says why.
    pub fn bind(address: IpAddr, interface: Option<&str>) -> Result<Self> {
        let socket =
            UdpSocket::bind(SocketAddr::new(address, 0)).map_err(|e| SysError::from_io("bind the UDP receiver", e))?;
        let fd = socket.as_raw_fd();
        let mut receiver = Self {
            socket,
            timestamping: Timestamping::Software,
            hardware_refused: None,
            control: Box::new([0; CONTROL_WORDS]),
            restore_hardware: None,
        };
        if let Some(name) = interface {
            bind_to_device(fd, name)?;
            match enable_hardware_rx_timestamps(fd, name) {
                Ok(previous) => {
                    receiver.restore_hardware = Some((name.to_string(), previous));
                    receiver.timestamping = Timestamping::Hardware;
                }
                Err(e) => receiver.hardware_refused = Some(e.to_string()),
            }
        }
        if receiver.timestamping == Timestamping::Software {
            receiver.use_software_timestamps()?;
        }
        Ok(receiver)
    }

    /// Switches to software timestamps, e.g. when a datagram came without a hardware one
    /// (this host's own traffic never passes through the NIC); `reason` is kept for
    /// [`hardware_refused`](Self::hardware_refused).
    pub fn fall_back_to_software(&mut self, reason: impl Into<String>) -> Result<()> {
        self.use_software_timestamps()?;
        self.hardware_refused = Some(reason.into());
        Ok(())
    }

    fn use_software_timestamps(&mut self) -> Result<()> {
        let flags = SOFTWARE_FLAGS as libc::c_int;
        let fd = self.socket.as_raw_fd();
        set_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, &flags, "setsockopt(SO_TIMESTAMPING, software)")?;
        self.timestamping = Timestamping::Software;
        Ok(())
    }

    /// The address and port datagrams must be sent to.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.socket.local_addr().map_err(|e| SysError::from_io("getsockname", e))
    }

    /// Connects the socket to `peer`: from then on it receives only `peer`'s datagrams
    /// (a stray datagram to this port cannot pass for a stimulus).
    pub fn accept_only_from(&self, peer: SocketAddr) -> Result<()> {
        self.socket.connect(peer).map_err(|e| SysError::from_io("connect the UDP receiver to its sender", e))
    }

    /// Waits up to `timeout_ms` for a datagram to be ready; false on timeout. For set-up
    /// checks, not for the sampling loop.
    pub fn wait_readable(&self, timeout_ms: i32) -> Result<bool> {
        let mut poll = libc::pollfd { fd: self.socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        loop {
            // SAFETY: `poll` is one valid, writable pollfd.
            let rc = unsafe { libc::poll(&mut poll, 1, timeout_ms) };
            if rc >= 0 {
                return Ok(rc > 0);
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(SysError::from_io("poll", e));
            }
        }
    }

    pub fn timestamping(&self) -> Timestamping {
        self.timestamping
    }

    /// Why hardware timestamps were asked for (an interface was given) but not enabled.
    pub fn hardware_refused(&self) -> Option<&str> {
        self.hardware_refused.as_deref()
    }

    /// Blocks until a datagram arrives (or a signal interrupts the wait), then returns its
    /// length and the kernel's receive timestamp. One `recvmsg`; no allocation.
    pub fn recv_with_timestamp(&mut self, buf: &mut [u8]) -> Result<RecvOutcome> {
        match recvmsg_into(self.socket.as_raw_fd(), buf, &mut self.control, None, 0) {
            Ok((n, msg)) => Ok(RecvOutcome::Datagram { len: n.min(buf.len()), kernel_rx_ns: self.timestamp_of(&msg) }),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(RecvOutcome::Interrupted),
            Err(e) => Err(SysError::from_io("recvmsg", e)),
        }
    }

    /// The SCM_TIMESTAMPING timespec of the configured kind in `msg`'s control data.
    fn timestamp_of(&self, msg: &libc::msghdr) -> Option<u64> {
        // Software times are in the first timespec, raw hardware times in the third.
        let slot = match self.timestamping {
            Timestamping::Software => 0,
            Timestamping::Hardware => 2,
        };
        scm_timestamping_ns(msg, slot)
    }

    /// Receives only through `interface` and reads the NIC's receive timestamps, which
    /// another socket asked the NIC for: the NIC's setting is changed by that one only.
    pub fn read_hardware_timestamps(&mut self, interface: &str) -> Result<()> {
        bind_to_device(self.socket.as_raw_fd(), interface)?;
        read_hardware_flags(self.socket.as_raw_fd())?;
        self.timestamping = Timestamping::Hardware;
        Ok(())
    }

    /// Sends one datagram to `to` from this socket (its replies come back here).
    pub fn send_to(&self, payload: &[u8], to: SocketAddr) -> Result<usize> {
        self.socket.send_to(payload, to).map_err(|e| SysError::from_io("sendto", e))
    }
}

impl AsRawFd for UdpReceiver {
    fn as_raw_fd(&self) -> libc::c_int {
        self.socket.as_raw_fd()
    }
}

/// One `recvmsg(flags)` of `fd` into `buf`, its control messages into `control` and, with
/// `from`, the sender's address. Returns the length and the message header, whose only
/// pointers left are to `control` (for [`scm_timestamping_ns`] and other readers of the
/// control messages). Nothing allocated.
pub(crate) fn recvmsg_into(
    fd: libc::c_int,
    buf: &mut [u8],
    control: &mut [u64; CONTROL_WORDS],
    from: Option<&mut libc::sockaddr_in>,
    flags: libc::c_int,
) -> std::io::Result<(usize, libc::msghdr)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: msghdr is plain data; all-zero is a valid (empty) value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    if let Some(from) = from {
        msg.msg_name = (from as *mut libc::sockaddr_in).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    }
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(control) as _;
    // SAFETY: `msg` points to `iov` (over `buf`), to `from` when given and to `control`, all
    // valid and writable for their stated lengths during the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, flags) };
    // `iov` and `from` end here: only the control buffer stays pointed to.
    msg.msg_iov = std::ptr::null_mut();
    msg.msg_iovlen = 0;
    msg.msg_name = std::ptr::null_mut();
    msg.msg_namelen = 0;
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((n as usize, msg))
}

/// The timespec at `slot` (0: software, 2: raw hardware) of the SCM_TIMESTAMPING message in
/// `msg`'s control data, in ns; None when there is none or it is zero.
pub(crate) fn scm_timestamping_ns(msg: &libc::msghdr, slot: usize) -> Option<u64> {
    // SAFETY: `msg` was filled by recvmsg: its control pointer and length describe the
    // control buffer, which CMSG_FIRSTHDR/CMSG_NXTHDR walk within.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: a non-null header returned by CMSG_FIRSTHDR/NXTHDR lies in the buffer.
        let header = unsafe { &*cmsg };
        if header.cmsg_level == libc::SOL_SOCKET && header.cmsg_type == libc::SCM_TIMESTAMPING {
            let needed = std::mem::size_of::<[libc::timespec; 3]>();
            // SAFETY: CMSG_LEN is arithmetic.
            if header.cmsg_len as usize >= unsafe { libc::CMSG_LEN(needed as u32) } as usize {
                // SAFETY: the message holds three timespecs (length checked); the data
                // may not be aligned for timespec, so it is read unaligned.
                let times = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<[libc::timespec; 3]>()) };
                let ts = times[slot];
                if ts.tv_sec == 0 && ts.tv_nsec == 0 {
                    return None;
                }
                return Some(ts.tv_sec as u64 * NS_PER_S + ts.tv_nsec as u64);
            }
        }
        // SAFETY: as above; NXTHDR returns null past the end.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    None
}

/// Waits up to `timeout_ms` (-1: no limit) until one of `fds` is readable; which ones are.
/// One `poll`, nothing allocated: for sampling loops that serve two sockets.
pub fn wait_readable_any<const N: usize>(fds: [libc::c_int; N], timeout_ms: i32) -> Result<[bool; N]> {
    let mut polls = fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    // SAFETY: `polls` is N valid, writable pollfds and N is passed with them.
    let rc = unsafe { libc::poll(polls.as_mut_ptr(), N as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok([false; N]);
        }
        return Err(SysError::from_io("poll", e));
    }
    Ok(polls.map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0))
}

impl Drop for UdpReceiver {
    fn drop(&mut self) {
        if let Some((interface, mut previous)) = self.restore_hardware.take() {
            // Best effort: nothing can be done about a failure while dropping.
            let _ = hwtstamp_ioctl(self.socket.as_raw_fd(), &interface, libc::SIOCSHWTSTAMP, &mut previous);
        }
    }
}

/// SO_BINDTODEVICE: receive only what arrives through `interface`.
pub(crate) fn bind_to_device(fd: libc::c_int, interface: &str) -> Result<()> {
    if interface.is_empty() || interface.len() >= libc::IFNAMSIZ || interface.contains('\0') {
        return Err(SysError::Invalid(format!("{interface:?} is not an interface name")));
    }
    // SAFETY: the name's bytes are valid for the call and their length is passed with them.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            interface.as_ptr().cast::<libc::c_void>(),
            interface.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(SysError::last_os("setsockopt(SO_BINDTODEVICE)"));
    }
    Ok(())
}

/// SO_TIMESTAMPING for the NIC's raw hardware receive times (and software ones), without
/// changing the NIC's setting.
pub(crate) fn read_hardware_flags(fd: libc::c_int) -> Result<()> {
    let flags = (HARDWARE_FLAGS | SOFTWARE_FLAGS) as libc::c_int;
    set_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, &flags, "setsockopt(SO_TIMESTAMPING, hardware)")
}

/// SIOCGHWTSTAMP / SIOCSHWTSTAMP on `interface` with `config`.
pub(crate) fn hwtstamp_ioctl(
    fd: libc::c_int,
    interface: &str,
    request_code: libc::c_ulong,
    config: &mut libc::hwtstamp_config,
) -> Result<()> {
    // SAFETY: ifreq is plain data; all-zero is a valid value (empty name, null data).
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    // At most IFNAMSIZ - 1 bytes (bind_to_device checked), so the name stays NUL-terminated.
    for (dst, &src) in request.ifr_name.iter_mut().zip(interface.as_bytes()) {
        *dst = src as libc::c_char;
    }
    request.ifr_ifru.ifru_data = (config as *mut libc::hwtstamp_config).cast();
    // SAFETY: `request` names the interface and points to `config`, which outlives the
    // call; the kernel reads and writes only that configuration.
    let rc = unsafe { libc::ioctl(fd, request_code as _, &mut request) };
    if rc != 0 {
        let op = if request_code == libc::SIOCSHWTSTAMP { "ioctl(SIOCSHWTSTAMP)" } else { "ioctl(SIOCGHWTSTAMP)" };
        return Err(SysError::last_os(op));
    }
    Ok(())
}

/// Asks the driver to timestamp every received packet (SIOCSHWTSTAMP) and the socket to
/// report those raw hardware times (SO_TIMESTAMPING, software times too, for a fall-back
/// without another set-up). Returns the interface's previous configuration.
fn enable_hardware_rx_timestamps(fd: libc::c_int, interface: &str) -> Result<libc::hwtstamp_config> {
    enable_hardware_timestamps(fd, interface, false)
}

/// As [`enable_hardware_rx_timestamps`], and with `transmit` sent packets' hardware times
/// too (HWTSTAMP_TX_ON; reported on the socket's error queue, each with its send's id).
pub(crate) fn enable_hardware_timestamps(
    fd: libc::c_int,
    interface: &str,
    transmit: bool,
) -> Result<libc::hwtstamp_config> {
    let off = libc::hwtstamp_config {
        flags: 0,
        tx_type: libc::HWTSTAMP_TX_OFF as libc::c_int,
        rx_filter: libc::HWTSTAMP_FILTER_NONE as libc::c_int,
    };
    let mut previous = off;
    // A driver without SIOCGHWTSTAMP had it off.
    if hwtstamp_ioctl(fd, interface, libc::SIOCGHWTSTAMP, &mut previous).is_err() {
        previous = off;
    }
    let mut config = libc::hwtstamp_config { rx_filter: libc::HWTSTAMP_FILTER_ALL as libc::c_int, ..previous };
    if transmit {
        config.tx_type = libc::HWTSTAMP_TX_ON as libc::c_int;
    }
    hwtstamp_ioctl(fd, interface, libc::SIOCSHWTSTAMP, &mut config)?;
    let mut restore = previous;
    if config.rx_filter == libc::HWTSTAMP_FILTER_NONE as libc::c_int {
        let _ = hwtstamp_ioctl(fd, interface, libc::SIOCSHWTSTAMP, &mut restore);
        return Err(SysError::Invalid(format!("{interface} timestamps no received packet (rx_filter none)")));
    }
    if transmit && config.tx_type != libc::HWTSTAMP_TX_ON as libc::c_int {
        let _ = hwtstamp_ioctl(fd, interface, libc::SIOCSHWTSTAMP, &mut restore);
        return Err(SysError::Invalid(format!("{interface} timestamps no sent packet (tx_type off)")));
    }
    let mut flags = HARDWARE_FLAGS | SOFTWARE_FLAGS;
    if transmit {
        flags |= libc::SOF_TIMESTAMPING_TX_HARDWARE | TX_ID_FLAGS;
    }
    let flags = flags as libc::c_int;
    if let Err(e) =
        set_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, &flags, "setsockopt(SO_TIMESTAMPING, hardware)")
    {
        let _ = hwtstamp_ioctl(fd, interface, libc::SIOCSHWTSTAMP, &mut restore);
        return Err(e);
    }
    Ok(previous)
}

/// A UDP socket connected to one receiver.
pub struct UdpSender {
    socket: UdpSocket,
}

impl UdpSender {
    /// A socket on an ephemeral port of the unspecified address of `to`'s family,
    /// connected to `to` (the kernel picks the source address by its routes).
    pub fn connect(to: SocketAddr) -> Result<Self> {
        let any: IpAddr = match to {
            SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
        };
        let socket =
            UdpSocket::bind(SocketAddr::new(any, 0)).map_err(|e| SysError::from_io("bind the UDP sender", e))?;
        socket.connect(to).map_err(|e| SysError::from_io("connect the UDP sender", e))?;
        Ok(Self { socket })
    }

    /// The address and port the datagrams come from.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.socket.local_addr().map_err(|e| SysError::from_io("getsockname", e))
    }

    /// Sends one datagram: one `send` call.
    pub fn send(&self, payload: &[u8]) -> Result<usize> {
        self.socket.send(payload).map_err(|e| SysError::from_io("send", e))
    }
}

/// CLOCK_REALTIME now, in ns: the clock of the kernel's software receive timestamps.
#[inline]
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always exists.
    unsafe {
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
    }
    // Before 1970 only on a badly set clock; saturate instead of wrapping.
    (ts.tv_sec.max(0) as u64) * NS_PER_S + ts.tv_nsec as u64
}

/// Longest accepted span of one [`clock_pair_ns`] read.
pub const CLOCK_PAIR_MAX_SPAN_NS: u64 = 5_000;

/// CLOCK_REALTIME then CLOCK_MONOTONIC, read back to back: `(realtime, monotonic)`.
/// A third read (realtime again) checks that nothing (a preemption, a virtual CPU not
/// scheduled) came between the two: if more than [`CLOCK_PAIR_MAX_SPAN_NS`] passed, the
/// pair is read again (at most 3 times), so both values describe one instant.
#[inline]
pub fn clock_pair_ns() -> (u64, u64) {
    let mut pair = (0, 0);
    for _ in 0..3 {
        let realtime = realtime_ns();
        let monotonic = crate::clock::monotonic_ns();
        pair = (realtime, monotonic);
        if realtime_ns().saturating_sub(realtime) <= CLOCK_PAIR_MAX_SPAN_NS {
            break;
        }
    }
    pair
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    #[test]
    fn receiver_binds_an_ephemeral_port_and_closes_on_drop() {
        let receiver = UdpReceiver::bind(LOOPBACK, None).unwrap();
        let address = receiver.local_addr().unwrap();
        assert_eq!(address.ip(), LOOPBACK);
        assert_ne!(address.port(), 0);
        assert_eq!(receiver.timestamping(), Timestamping::Software);
        assert_eq!(receiver.hardware_refused(), None);
        drop(receiver);
        // The port is free again.
        UdpSocket::bind(address).unwrap();
    }

    /// Sends `payload` and receives it until it comes with a timestamp: the kernel turns
    /// receive timestamping on from a work queue, so the first datagrams after the first
    /// timestamping socket opens may have none. Returns the length and the timestamp.
    fn timestamped_round_trip(receiver: &mut UdpReceiver, sender: &UdpSender, payload: &[u8]) -> (usize, u64) {
        let mut buf = [0u8; 64];
        for _ in 0..100 {
            assert_eq!(sender.send(payload).unwrap(), payload.len());
            loop {
                match receiver.recv_with_timestamp(&mut buf).unwrap() {
                    RecvOutcome::Interrupted => continue,
                    RecvOutcome::Datagram { len, kernel_rx_ns } => {
                        assert_eq!(&buf[..len], payload);
                        if let Some(rx) = kernel_rx_ns {
                            return (len, rx);
                        }
                        break;
                    }
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("no datagram came with a receive timestamp within 1 s");
    }

    #[test]
    fn a_datagram_round_trip_carries_a_kernel_timestamp() {
        let mut receiver = UdpReceiver::bind(LOOPBACK, None).unwrap();
        let sender = UdpSender::connect(receiver.local_addr().unwrap()).unwrap();
        // Timestamping on first, then one datagram timed from before its send.
        timestamped_round_trip(&mut receiver, &sender, b"warm");
        let before = realtime_ns();
        let (len, rx) = timestamped_round_trip(&mut receiver, &sender, b"hello");
        let after = realtime_ns();
        assert_eq!(len, 5);
        assert!(before <= rx && rx <= after, "{before} <= {rx} <= {after}");
    }

    #[test]
    fn ipv6_loopback_works_too() {
        let address: IpAddr = std::net::Ipv6Addr::LOCALHOST.into();
        // Some hosts have no IPv6 at all: nothing to test there.
        let Ok(mut receiver) = UdpReceiver::bind(address, None) else { return };
        let sender = UdpSender::connect(receiver.local_addr().unwrap()).unwrap();
        assert_eq!(timestamped_round_trip(&mut receiver, &sender, &[1, 2, 3]).0, 3);
    }

    #[test]
    fn a_connected_receiver_ignores_other_senders_and_polls() {
        let mut receiver = UdpReceiver::bind(LOOPBACK, None).unwrap();
        let to = receiver.local_addr().unwrap();
        let sender = UdpSender::connect(to).unwrap();
        let stranger = UdpSender::connect(to).unwrap();
        receiver.accept_only_from(sender.local_addr().unwrap()).unwrap();
        assert!(!receiver.wait_readable(0).unwrap());
        stranger.send(b"no").unwrap();
        sender.send(b"yes").unwrap();
        assert!(receiver.wait_readable(1_000).unwrap());
        let mut buf = [0u8; 8];
        match receiver.recv_with_timestamp(&mut buf).unwrap() {
            RecvOutcome::Datagram { len, .. } => assert_eq!(&buf[..len], b"yes"),
            RecvOutcome::Interrupted => panic!("no signal was sent"),
        }
        assert!(!receiver.wait_readable(0).unwrap());
    }

    #[test]
    fn a_foreign_address_is_refused() {
        // TEST-NET-3 (RFC 5737): never an address of this host.
        let e = UdpReceiver::bind("203.0.113.77".parse().unwrap(), None).err().expect("bind fails");
        assert!(e.to_string().contains("bind"), "{e}");
    }

    #[test]
    fn a_bad_interface_name_is_refused() {
        assert!(UdpReceiver::bind(LOOPBACK, Some("no-such-if0")).is_err());
        assert!(UdpReceiver::bind(LOOPBACK, Some("name-much-too-long-for-linux")).is_err());
    }

    #[test]
    fn a_signal_interrupts_the_wait() {
        use std::os::unix::thread::JoinHandleExt;
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        use std::sync::Arc;
        crate::clock::install_wake_handler().unwrap();
        let mut receiver = UdpReceiver::bind(LOOPBACK, None).unwrap();
        let waiting = Arc::new(AtomicBool::new(false));
        let flag = waiting.clone();
        let handle = std::thread::spawn(move || {
            flag.store(true, SeqCst);
            let mut buf = [0u8; 8];
            receiver.recv_with_timestamp(&mut buf).unwrap()
        });
        while !waiting.load(SeqCst) {
            std::thread::yield_now();
        }
        // Signal until the thread has returned (it may not have entered recvmsg yet).
        while !handle.is_finished() {
            crate::clock::wake_thread(handle.as_pthread_t()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(handle.join().unwrap(), RecvOutcome::Interrupted);
    }

    #[test]
    fn hardware_timestamps_on_loopback_fall_back_to_software() {
        // lo has no PTP clock: SIOCSHWTSTAMP fails and software timestamps are used.
        let Ok(mut receiver) = UdpReceiver::bind(LOOPBACK, Some("lo")) else { return };
        assert_eq!(receiver.timestamping(), Timestamping::Software);
        assert!(receiver.hardware_refused().is_some());
        let sender = UdpSender::connect(receiver.local_addr().unwrap()).unwrap();
        timestamped_round_trip(&mut receiver, &sender, &[7]);
    }

    #[test]
    fn clock_pair_reads_both_clocks_at_one_instant() {
        let (rt1, mono1) = clock_pair_ns();
        let (rt2, mono2) = clock_pair_ns();
        assert!(rt1 > 1_000_000_000 * NS_PER_S, "realtime is wall-clock time (after 2001)");
        assert!(mono2 >= mono1);
        // Unless the clock was stepped in between, the offsets agree closely.
        let offset1 = rt1 as i128 - mono1 as i128;
        let offset2 = rt2 as i128 - mono2 as i128;
        assert!((offset1 - offset2).abs() < 1_000_000, "{offset1} vs {offset2}");
    }
}
