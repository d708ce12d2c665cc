//! A key-less flood of the station's real-time task, for bench/station-flood: ICMP echo
//! requests carrying well-formed STIMULUS messages (the magic, this protocol version, the
//! right length) with random session ids, sequences and tags, sent as fast as one thread
//! can from a raw socket bound to `--from`. Exactly what an attacker without the key can
//! send at the station; it passes the kernel's magic test, so only the station's peer
//! filter and its checks before the MAC stand between it and an HMAC.
//!
//! Usage: keyless_flood --to IP --from IP --seconds S
//! Prints `sent N in S s (R/s), send errors E` every second and at the end (so a flood
//! killed early has said its rate). As root (CAP_NET_RAW).

use rtlab_station::protocol::{Kind, MAGIC, VERSION};
use rtlab_sys::icmp::{internet_checksum, IcmpSocket, ECHO_REQUEST};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| -> Option<&str> {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
    };
    let parse_ip = |name: &str| -> Ipv4Addr {
        value(name).and_then(|v| v.parse().ok()).unwrap_or_else(|| {
            eprintln!("keyless_flood: {name} IPV4 is required (usage: --to IP --from IP --seconds S)");
            std::process::exit(2)
        })
    };
    let (to, from) = (parse_ip("--to"), parse_ip("--from"));
    let seconds: f64 =
        value("--seconds").and_then(|v| v.parse().ok()).filter(|s: &f64| *s > 0.0).unwrap_or_else(|| {
            eprintln!("keyless_flood: --seconds S (above 0) is required");
            std::process::exit(2)
        });
    let mut socket = IcmpSocket::open().unwrap_or_else(|e| {
        eprintln!("keyless_flood: {e} (run as root)");
        std::process::exit(3)
    });
    socket.bind(from).unwrap_or_else(|e| {
        eprintln!("keyless_flood: bind {from}: {e} (is the address on an interface of this namespace?)");
        std::process::exit(3)
    });
    let length = Kind::Stimulus.message_len();
    let mut packet = vec![0u8; 8 + length];
    packet[0] = ECHO_REQUEST;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut sent, mut errors) = (0u64, 0u64);
    let started = Instant::now();
    let until = Duration::from_secs_f64(seconds);
    let mut said = Instant::now();
    let say = |sent: u64, errors: u64| {
        let elapsed = started.elapsed().as_secs_f64();
        println!("sent {sent} in {elapsed:.1} s ({:.0}/s), send errors {errors}", sent as f64 / elapsed);
    };
    while started.elapsed() < until {
        if said.elapsed() >= Duration::from_secs(1) {
            say(sent, errors);
            said = Instant::now();
        }
        for _ in 0..256 {
            let message = &mut packet[8..];
            message[0..4].copy_from_slice(&MAGIC);
            message[4] = VERSION;
            message[5] = Kind::Stimulus as u8;
            message[6..8].copy_from_slice(&[0, 0]);
            message[8..16].copy_from_slice(&next().to_le_bytes());
            message[16..24].copy_from_slice(&next().to_le_bytes());
            for chunk in message[24..].chunks_mut(8) {
                let word = next().to_le_bytes();
                chunk.copy_from_slice(&word[..chunk.len()]);
            }
            packet[2..4].copy_from_slice(&[0, 0]);
            let sum = internet_checksum(&packet);
            packet[2..4].copy_from_slice(&sum.to_be_bytes());
            match socket.send_to(&packet, to) {
                Ok(_) => sent += 1,
                Err(_) => errors += 1,
            }
        }
    }
    say(sent, errors);
}
