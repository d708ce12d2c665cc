//! The second station for real (docs/station.md): `rtlab station` in one network namespace,
//! `rtlab run -P remote` in another, joined by a veth pair (tests/common/netns.rs); and a
//! station on loopback fed wrong keys, truncated, replayed, oversized and junk packets while
//! the real peer measures. As root; without root or `ip`, each test says so and fails under
//! CI=true.

mod common;

use common::netns::TwoHosts;
use common::*;
use rtlab_station::client::{accept_welcome, hello, StationClient};
use rtlab_station::protocol::{self, Key, Kind, StationCounters, MAX_MESSAGE_LEN};
use rtlab_sys::icmp::{internet_checksum, IcmpSocket, ECHO_REQUEST};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether the real part can run here; under CI=true a missing part fails the test.
fn can_run(what: &str) -> bool {
    let problem = if euid() != 0 {
        Some("needs root (raw ICMP sockets, SCHED_FIFO, network namespaces)".to_string())
    } else {
        common::netns::available().err()
    };
    match problem {
        None => true,
        Some(why) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: {what} cannot run: {why}");
            eprintln!("{what}: not run: {why}");
            false
        }
    }
}

fn write_key(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    write_secret(&path, text);
    path
}

/// A key file that is not the user's own secret stops the station (and `rtlab run -P
/// remote`, which reads it the same way) before anything starts: exit 2, one line, the
/// reason.
#[test]
fn key_files_are_refused_unless_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let good = write_key(dir.path(), "good.key", "a key of thirty-three bytes, good\n");
    let short = write_key(dir.path(), "short.key", "thirty-one bytes are too few...\n");
    let open = write_key(dir.path(), "open.key", "a key that the group may read, 38 bytes\n");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("link.key");
    std::os::unix::fs::symlink(&good, &link).unwrap();
    let mut cases = vec![
        (short, "fewer than 32"),
        (open, "chmod 600"),
        (link, "symbolic link"),
        (dir.path().join("missing.key"), "cannot read it"),
        (dir.path().to_path_buf(), "not a regular file"),
    ];
    if euid() == 0 {
        let foreign = write_key(dir.path(), "foreign.key", "a key another user could rewrite, 40 b\n");
        std::os::unix::fs::chown(&foreign, Some(65534), None).unwrap();
        cases.push((foreign, "owned by uid 65534"));
    }
    for (key, reason) in cases {
        let output = Command::new(rtlab_path())
            .args(["station", "--listen", "127.0.0.1:7499", "--duration", "1s", "--key"])
            .arg(&key)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}: {stderr}", key.display());
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("--key") && stderr.contains(reason), "{}: {stderr}", key.display());
    }
}

/// A station child, killed on drop unless stopped.
struct StationProcess(Option<Child>);

impl StationProcess {
    fn start(command: Command, listen: &str, key: &Path) -> StationProcess {
        Self::start_with(command, listen, key, &[])
    }

    fn start_with(mut command: Command, listen: &str, key: &Path, extra: &[&str]) -> StationProcess {
        command
            .args(["station", "--listen", listen, "--key"])
            .arg(key)
            .args(["--status-every", "0", "--duration", "20m"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        StationProcess(Some(command.spawn().expect("rtlab station starts")))
    }

    /// SIGTERM, then the exit status and the output.
    fn stop(mut self) -> (std::process::ExitStatus, String) {
        let child = self.0.take().expect("running");
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let output = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr);
        (output.status, text)
    }
}

impl Drop for StationProcess {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits until a control session opens (the station is up).
fn wait_for_station(address: SocketAddrV4, key: &Key) -> StationClient {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match StationClient::connect(address, key.clone()) {
            Ok(client) => return client,
            Err(e) if Instant::now() > deadline => panic!("the station did not come up: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

fn detail(m: &serde_json::Value, key: &str) -> i64 {
    m["details"][key].as_i64().unwrap_or_else(|| panic!("detail {key} in {}", m["details"]))
}

/// The value of an achieved row `name` of the first load of scenario `scenario`.
fn achieved(run: &serde_json::Value, scenario: usize, name: &str) -> f64 {
    let load = &run["scenarios"][scenario]["loads"][0];
    load["achieved"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {load}"))["value"]
        .as_f64()
        .unwrap()
}

/// Two network namespaces and a key file both hosts read: the measuring host and the
/// station at 192.0.2.2:7450.
struct Lab {
    hosts: TwoHosts,
    dir: tempfile::TempDir,
    key: std::path::PathBuf,
    address: SocketAddrV4,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let hosts = TwoHosts::create(tag).expect("two network namespaces");
        let dir = tempfile::tempdir().unwrap();
        let key = write_key(dir.path(), "station.key", "a key shared by both hosts, 38 bytes\n");
        let address = SocketAddrV4::new(hosts.station_addr, 7450);
        Lab { hosts, dir, key, address }
    }

    /// `rtlab station` in the station's namespace with `extra` flags, given time to listen.
    fn station(&self, extra: &[&str]) -> StationProcess {
        let mut command = self.hosts.command(&self.hosts.station, rtlab_path());
        command.current_dir(self.dir.path());
        let station = StationProcess::start_with(command, &self.address.to_string(), &self.key, extra);
        std::thread::sleep(Duration::from_millis(500));
        station
    }

    /// `rtlab ARGS --station ADDRESS --key KEY -o OUT` on the measuring host.
    fn measure(&self, args: &[&str], out: &Path) -> Command {
        let mut command = self.hosts.command(&self.hosts.measuring, rtlab_path());
        command
            .args(args)
            .arg("--station")
            .arg(self.address.to_string())
            .arg("--key")
            .arg(&self.key)
            .arg("-o")
            .arg(out);
        command
    }
}

/// Two namespaces: a run with an idle and a flooded scenario. Every stimulus is a sample or
/// counted lost; per sample irq + act + Δ + δ̄ = rtt exactly; δ was calibrated; the flood
/// reached the station's sink at the rate the sender reports.
#[test]
fn a_namespaced_remote_run_accounts_for_every_stimulus_and_adds_up() {
    if !can_run("the namespaced remote run") {
        return;
    }
    let lab = Lab::new("remote");
    let station = lab.station(&[]);
    // The veth end towards the station: asked for hardware timestamps, which a veth has not.
    let links = lab.hosts.command(&lab.hosts.measuring, "ip").args(["-o", "link", "show"]).output().unwrap();
    let links = String::from_utf8_lossy(&links.stdout).to_string();
    let veth = links
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name))
        .find(|name| *name != "lo")
        .unwrap_or_else(|| panic!("no veth in {links}"))
        .to_string();
    let out = lab.dir.path().join("run");
    let loads = "idle,remote:udp-flood:rate=20000,remote:comms:rate=20MB/s,remote:ping-flood:rate=2000";
    let args = ["run", "-P", "remote", "--rate", "100", "--duration", "3s", "--raw", "-q", "--interface", &veth];
    let output = lab.measure(&args, &out).args(["--load", loads]).output().unwrap();
    assert!(output.status.success(), "rtlab run failed: {}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    let said = run.to_string();
    assert!(said.contains("hardware timestamps are not available, software ones are used"), "the fall-back is said");
    let irq = measurements(&run, "remote.irq");
    assert_eq!(irq.len(), 4, "one per scenario");
    for m in &irq {
        // Every stimulus is accounted for.
        let lost = detail(m, "lost_echo") + detail(m, "lost_answer") + detail(m, "lost_both") + detail(m, "lost_t1");
        assert_eq!(u(m, "cycles"), u(m, "count") + lost as u64, "{}", m["details"]);
        assert_eq!(u(m, "overruns") as i64, lost);
        assert!(u(m, "count") > 0);
        // δ was calibrated: 400 stimuli against the idle station.
        assert_eq!(detail(m, "delta_samples"), 400);
        let (low, mean, high) = (detail(m, "delta_min_ns"), detail(m, "delta_mean_ns"), detail(m, "delta_max_ns"));
        assert!(0 < low && low <= mean && mean <= high, "δ {low} {mean} {high}");
        assert_eq!(detail(m, "station_delta_ns"), 10_000);
        // A veth has no hardware timestamps: software ones, t1 the kernel's transmit time.
        assert_eq!(m["details"]["timestamping"], "software");
        assert_eq!(detail(m, "t1_from_clock"), 0, "every stimulus had its transmit timestamp");
        // irq + act + Δ + δ̄ = rtt, sample by sample.
        let scenario = m["scenario"].as_str().unwrap();
        let raw = |metric: &str| {
            let m = measurements(&run, metric).into_iter().find(|x| x["scenario"] == scenario).unwrap();
            rtlab_results::raw::read_all(&out.join(m["raw_file"].as_str().unwrap())).unwrap()
        };
        let (i, a, r) = (raw("remote.irq"), raw("remote.act"), raw("remote.rtt"));
        assert_eq!((i.len(), a.len()), (r.len(), r.len()));
        assert_eq!(i.len() as u64, u(m, "count"));
        for ((i, a), r) in i.iter().zip(&a).zip(&r) {
            assert_eq!((i.expected_ns, a.expected_ns), (r.expected_ns, r.expected_ns));
            assert_eq!(i.value_ns + a.value_ns + 10_000 + mean, r.value_ns, "at {}", r.expected_ns);
        }
        // The paper's pitfalls are counted within the samples.
        assert!(detail(m, "crossed") + detail(m, "negative_act") <= u(m, "count") as i64);
    }
    // The loads reached the station: what it counted per second is what was sent.
    let achieved = |scenario: usize, name: &str| achieved(&run, scenario, name);
    assert_eq!(run["scenarios"][1]["loads"][0]["name"], "remote:udp-flood");
    let (sent, received) = (achieved(1, "packets/s sent"), achieved(1, "station: datagrams/s received"));
    assert!(sent > 10_000.0, "the flood ran at {sent}/s");
    assert!(received > 0.8 * sent && received < 1.1 * sent, "sent {sent}/s, the station received {received}/s");
    assert!(achieved(1, "station: NET_RX softirqs/s") > 0.5 * sent);
    let (echoed, at_station) = (achieved(2, "MB/s echoed"), achieved(2, "station: MB/s echoed"));
    assert!(echoed > 1.0 && (echoed - at_station).abs() < 0.2 * echoed, "comms {echoed} MB/s, station {at_station}");
    let (pings, replies) = (achieved(3, "requests/s sent"), achieved(3, "station: echo replies/s (its kernel)"));
    // The station's kernel also echoed the probe's 100 stimuli a second.
    assert!(pings > 1_000.0 && replies >= 0.9 * pings && replies <= 1.1 * pings + 150.0, "{pings} {replies}");
    let (status, text) = station.stop();
    assert!(status.success(), "the station exits 0 on SIGTERM: {text}");
    assert!(text.contains("station: answered"), "{text}");
    drop(lab);
}

/// Sends `count` ICMP echo requests carrying `payload` to `to`.
fn send_icmp(socket: &mut IcmpSocket, to: Ipv4Addr, payload: &[u8], count: usize) {
    let mut message = vec![0u8; 8 + payload.len()];
    message[0] = ECHO_REQUEST;
    message[8..].copy_from_slice(payload);
    let sum = internet_checksum(&message);
    message[2..4].copy_from_slice(&sum.to_be_bytes());
    for _ in 0..count {
        socket.send_to(&message, to).unwrap();
    }
}

fn settle() {
    std::thread::sleep(Duration::from_millis(300));
}

/// Wrong key, truncated, replayed, oversized, junk flood: each is counted and dropped,
/// nothing is answered, the station keeps serving the real peer and does not crash.
#[test]
fn bad_peers_cost_packets_not_correctness() {
    if !can_run("the bad-peer test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key_text = "the real peer's key, long enough";
    let key_file = write_key(dir.path(), "station.key", key_text);
    let key = Key::from_bytes(key_text.as_bytes()).unwrap();
    let wrong = Key::from_bytes(b"somebody else's key, at least 32 bytes").unwrap();
    let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 17450);
    let station = StationProcess::start(Command::new(rtlab_path()), &address.to_string(), &key_file);
    let mut client = wait_for_station(address, &key);
    let base = client.status().unwrap();
    let counted = |client: &mut StationClient| -> StationCounters { client.status().unwrap() };
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    attacker.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut out = [0u8; MAX_MESSAGE_LEN];
    let mut buf = [0u8; 2048];

    // Wrong key: a HELLO (its tag fails) and a stimulus naming a made-up session (dropped
    // before the MAC as an unknown session); neither is answered.
    let (n, _) = hello(&wrong, &mut out);
    attacker.send_to(&out[..n], address).unwrap();
    let mut icmp = IcmpSocket::open().unwrap();
    let n = protocol::encode(&wrong, Kind::Stimulus, 1, 1, &[0; 8], &mut out);
    send_icmp(&mut icmp, *address.ip(), &out[..n], 1);
    settle();
    assert!(attacker.recv(&mut buf).is_err(), "a HELLO with the wrong key was answered");
    let c = counted(&mut client);
    assert_eq!(c.bad_tag - base.bad_tag, 1, "{c:?}");
    assert_eq!(c.unknown_session - base.unknown_session, 1, "{c:?}");

    // Truncated: a valid HELLO cut short; a stimulus cut short.
    let (n, _) = hello(&key, &mut out);
    attacker.send_to(&out[..n - 5], address).unwrap();
    let n = protocol::encode(&key, Kind::Stimulus, 1, 1, &[0; 8], &mut out);
    send_icmp(&mut icmp, *address.ip(), &out[..n - 9], 1);
    settle();
    assert!(attacker.recv(&mut buf).is_err());
    let c2 = counted(&mut client);
    assert_eq!(c2.malformed - c.malformed, 2, "{c2:?}");

    // Oversized.
    attacker.send_to(&[0x52; 2000], address).unwrap();
    settle();
    let c3 = counted(&mut client);
    assert_eq!(c3.oversized - c2.oversized, 1, "{c3:?}");

    // Replayed: a valid HELLO sent twice (one WELCOME), a valid stimulus sent twice (one
    // answer).
    let (n, nonce) = hello(&key, &mut out);
    attacker.send_to(&out[..n], address).unwrap();
    attacker.send_to(&out[..n], address).unwrap();
    let got = attacker.recv(&mut buf).expect("the first HELLO is welcomed");
    let (session, _) = accept_welcome(&key, &buf[..got], &nonce).expect("an authenticated WELCOME");
    assert!(attacker.recv(&mut buf).is_err(), "the replayed HELLO was answered");
    // The wrong key on a real session from its peer's address: the MAC fails.
    let n = protocol::encode(&wrong, Kind::Stimulus, session, 8, &[0; 8], &mut out);
    send_icmp(&mut icmp, *address.ip(), &out[..n], 1);
    let n = protocol::encode(&key, Kind::Stimulus, session, 9, &[0; 8], &mut out);
    send_icmp(&mut icmp, *address.ip(), &out[..n], 2);
    let got = attacker.recv(&mut buf).expect("the stimulus is answered once");
    let (header, _) = protocol::decode(&key, &buf[..got]).unwrap();
    assert_eq!((header.kind, header.session, header.sequence), (Kind::Answer, session, 9));
    assert!(attacker.recv(&mut buf).is_err(), "the replayed stimulus was answered");
    // An old session's stimulus (a station restarted, or a made-up id) is unknown.
    let n = protocol::encode(&key, Kind::Stimulus, 0x5eed, 1, &[0; 8], &mut out);
    send_icmp(&mut icmp, *address.ip(), &out[..n], 1);
    settle();
    let c4 = counted(&mut client);
    assert_eq!(c4.replayed - c3.replayed, 2, "{c4:?}");
    assert_eq!(c4.bad_tag - c3.bad_tag, 1, "{c4:?}");
    assert_eq!(c4.unknown_session - c3.unknown_session, 1, "{c4:?}");
    assert_eq!(c4.answered - c3.answered, 1);

    // HELLOs above 10 a second: 20 at once open at most the bucket's 10 (11 if it refilled
    // meanwhile), the rest are counted rate_limited, and the real peer's run below still
    // gets its sessions.
    let mut welcomes = 0u64;
    for _ in 0..20 {
        let (n, _) = hello(&key, &mut out);
        attacker.send_to(&out[..n], address).unwrap();
    }
    while attacker.recv(&mut buf).is_ok() {
        welcomes += 1;
    }
    let c4b = counted(&mut client);
    assert!((5..=11).contains(&welcomes), "{welcomes} of 20 HELLOs welcomed");
    assert_eq!(c4b.rate_limited - c4.rate_limited, 20 - welcomes, "{c4b:?}");
    assert_eq!(c4b.sessions - c4.sessions, welcomes, "{c4b:?}");
    std::thread::sleep(Duration::from_millis(1_100));
    let c4 = c4b;

    // A junk flood while the real peer measures: the peer's stimuli are all answered.
    let flooding = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flood = {
        let flooding = flooding.clone();
        std::thread::spawn(move || {
            let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut icmp = IcmpSocket::open().unwrap();
            let mut sent = 0u64;
            let mut x = 0x2545_f491_4f6c_dd1du64;
            while flooding.load(std::sync::atomic::Ordering::Relaxed) {
                for _ in 0..100 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let mut bytes = [0u8; 64];
                    bytes[..8].copy_from_slice(&x.to_le_bytes());
                    bytes[..4].copy_from_slice(b"RTLB");
                    bytes[4] = protocol::VERSION;
                    bytes[5] = (x % 7) as u8;
                    let _ = junk.send_to(&bytes[..(x % 64) as usize], address);
                    send_icmp(&mut icmp, *address.ip(), &bytes[..48], 1);
                    sent += 2;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            sent
        })
    };
    let out_dir = dir.path().join("run");
    let output = Command::new(rtlab_path())
        .args([
            "run",
            "-P",
            "remote",
            "--rate",
            "100",
            "--duration",
            "2s",
            "--delta",
            "5us",
            "--load",
            "idle",
            "-q",
            "--station",
        ])
        .arg(address.to_string())
        .arg("--key")
        .arg(&key_file)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    flooding.store(false, std::sync::atomic::Ordering::Relaxed);
    let junk_sent = flood.join().unwrap();
    assert!(output.status.success(), "the real peer's run failed: {}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out_dir);
    let m = measurements(&run, "remote.irq")[0];
    assert_eq!(u(m, "cycles"), 200);
    assert_eq!(detail(m, "lost_answer") + detail(m, "lost_both"), 0, "the real peer lost answers: {}", m["details"]);
    let c5 = counted(&mut client);
    eprintln!("bad-peer counters at the end: {c5:?}; junk sent during the run: {junk_sent}");
    let junk_counted = c5.junk() - c4.junk();
    assert!(junk_counted > junk_sent / 4, "the station counted {junk_counted} of {junk_sent} junk packets");
    // The run checks a round trip when it validates the plan and again before measuring:
    // one stimulus each, more when the first came back untimestamped (at most 10 each).
    let answered = c5.answered - c4.answered;
    assert!((202..=220).contains(&answered), "the check stimuli and the 200: {c5:?}");
    let (status, text) = station.stop();
    assert!(status.success(), "the station survived and exits 0: {text}");
}

/// Loads sent by the station (`--serve-loads`) to the measuring host, as the papers' came
/// from other machines: what this host received is what the station sent; a station
/// started without --serve-loads refuses, and the run says so (exit 3).
#[test]
fn the_station_sends_the_loads_asked_for_and_both_sides_count_them() {
    if !can_run("the station's loads") {
        return;
    }
    let lab = Lab::new("loads");
    let station = lab.station(&["--serve-loads"]);
    let out = lab.dir.path().join("run");
    let loads = "station:udp-flood:rate=20000,station:comms:rate=20MB/s,station:ping-flood:rate=2000";
    let args = ["run", "-P", "timer", "--duration", "2s", "-q", "--settle", "1s", "--load", loads];
    let output = lab.measure(&args, &out).output().unwrap();
    assert!(output.status.success(), "rtlab run failed: {}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    let achieved = |scenario: usize, name: &str| achieved(&run, scenario, name);
    let (sent, received) = (achieved(0, "station: datagrams sent"), achieved(0, "packets received"));
    assert!(sent > 10_000.0, "the station sent {sent} datagrams");
    assert!(received >= 0.99 * sent && received <= sent, "the station sent {sent}, this host received {received}");
    let (echoed_here, echoed_back) = (achieved(1, "MB/s echoed"), achieved(1, "station: MB/s echoed back"));
    assert!(echoed_here > 1.0 && (echoed_here - echoed_back).abs() < 0.2 * echoed_here, "{echoed_here} {echoed_back}");
    let (requests, replies) = (achieved(2, "station: requests/s sent"), achieved(2, "echo replies/s (this kernel)"));
    assert!(requests > 1_000.0 && (requests - replies).abs() < 0.1 * requests, "{requests} {replies}");
    let (status, text) = station.stop();
    assert!(status.success(), "{text}");

    // A station that does not serve loads refuses; the scenario is marked, exit 3.
    let plain = lab.station(&[]);
    let args = ["run", "-P", "timer", "--duration", "1s", "-q", "--load", "station:udp-flood"];
    let output = lab.measure(&args, &lab.dir.path().join("refused")).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("refused to send udp-flood") && stderr.contains("--serve-loads"), "{stderr}");
    drop(plain);
}

/// The parent of process `pid`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid ...: the comm may hold spaces, the last ')' ends it.
    stat.rsplit_once(") ")?.1.split_whitespace().nth(1)?.parse().ok()
}

/// The scenarios (`rtlab __load-host --scenario SPEC`) of the load processes descending
/// from `ancestor` (the load host runs under a supervisor child).
fn load_children(ancestor: u32) -> Vec<String> {
    let mut specs = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let Some(i) = args.iter().position(|a| a == "__load-host") else { continue };
        let Some(spec) = args.iter().skip(i).skip_while(|a| *a != "--scenario").nth(1) else { continue };
        let mut up = parent_of(pid);
        for _ in 0..4 {
            match up {
                Some(p) if p == ancestor => {
                    specs.push(spec.clone());
                    break;
                }
                Some(p) if p > 1 => up = parent_of(p),
                _ => break,
            }
        }
    }
    specs
}

/// `station:cpu` and `station:shell-loop` run on the station itself, in load children of
/// the station's process (one cpu thread on each of its CPUs; the shell loop's disk,
/// fs-walk, compress and compile), started and stopped by the measuring run; their
/// LOAD_REPORT counts arrive in the run's load reports.
#[test]
fn the_station_runs_the_shell_loop_and_cpu_on_itself_and_reports_them() {
    if !can_run("the station's own loads") {
        return;
    }
    let lab = Lab::new("local");
    let station = lab.station(&["--serve-loads"]);
    let station_pid = station.0.as_ref().unwrap().id();
    let out = lab.dir.path().join("run");
    let args =
        ["run", "-P", "timer", "--duration", "4s", "-q", "--settle", "1s", "--load", "station:cpu,station:shell-loop"];
    let mut run = lab.measure(&args, &out).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    // Watch the station's children while the two scenarios run.
    let mut seen: Vec<String> = Vec::new();
    while run.try_wait().unwrap().is_none() {
        for spec in load_children(station_pid) {
            if !seen.contains(&spec) {
                seen.push(spec);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = run.wait_with_output().unwrap();
    assert!(output.status.success(), "rtlab run failed: {}", String::from_utf8_lossy(&output.stderr));
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpus = rtlab_sys::sched::parse_cpu_list(online.trim()).unwrap();
    let cpu_spec = format!("cpu:cpus={}", cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(";"));
    assert_eq!(seen, [cpu_spec, rtlab_load::REGNIER_SHELL_LOOP.to_string()], "the station's load children");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(load_children(station_pid), Vec::<String>::new(), "the station stopped its loads");
    let run = run_json(&out);
    let names: Vec<&str> = (0..2).map(|i| run["scenarios"][i]["loads"][0]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["station:cpu", "station:shell-loop"]);
    for i in 0..2 {
        assert!(run["scenarios"][i]["loads"][0]["died_early"].is_null(), "{}", run["scenarios"][i]["loads"][0]);
    }
    let achieved = |scenario: usize, name: &str| achieved(&run, scenario, name);
    // cpu: one thread per CPU of the station, busy for a good part of the scenario.
    assert_eq!(achieved(0, "station: threads"), cpus.len() as f64);
    assert!(achieved(0, "station: Mflop") > 0.0);
    let busy = achieved(0, "station: CPUs busy");
    assert!(busy > 0.2 && busy <= cpus.len() as f64 + 0.1, "{busy} CPUs busy");
    // The shell loop: its components' work, counted on the station.
    assert!(achieved(1, "station: disk MB") > 0.0);
    assert!(achieved(1, "station: files searched") > 0.0);
    assert!(achieved(1, "station: MB compressed") > 0.0);
    assert!(achieved(1, "station: builds") >= 0.0 && achieved(1, "station: builds/min") >= 0.0);
    let (status, text) = station.stop();
    assert!(status.success(), "{text}");
    assert!(!text.contains("not started") && !text.contains("stopped working"), "{text}");
}

/// The station dies in the middle of a run: its kernel still echoes, its task no longer
/// answers. Every stimulus is still accounted for, to the last one (those lost in the last
/// half second too), and the run says what was lost.
#[test]
fn a_station_that_dies_mid_run_leaves_every_stimulus_accounted_for() {
    if !can_run("the dying station") {
        return;
    }
    let lab = Lab::new("dies");
    let station = lab.station(&[]);
    let out = lab.dir.path().join("run");
    let args = ["run", "-P", "remote", "--rate", "50", "--duration", "4s", "--delta", "10us", "--load", "idle", "-q"];
    let run = lab.measure(&args, &out).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(2_500));
    drop(station); // SIGKILL
    let output = run.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    let m = measurements(&run, "remote.irq")[0];
    let lost = detail(m, "lost_echo") + detail(m, "lost_answer") + detail(m, "lost_both") + detail(m, "lost_t1");
    assert_eq!(u(m, "cycles"), 200);
    assert_eq!(u(m, "count") + lost as u64, 200, "{}", m["details"]);
    assert!(detail(m, "lost_answer") >= 50, "the task's answers stopped: {}", m["details"]);
    assert!(u(m, "count") >= 50, "answered before it died: {}", m["details"]);
}

/// `rtlab suite regnier-2008 --quick --station` in two namespaces runs both experiments:
/// Table 1's experiment 2 rows and Figure 8 come from the remote probe's runs; under load
/// the station runs the paper's shell loop on itself while the measuring host floods it,
/// and Figure 9 is drawn from that run. (About four minutes: the paper's conditions at
/// their quick durations.)
#[test]
fn the_regnier_suite_with_a_station_fills_experiment_2() {
    if !can_run("the regnier-2008 suite with a station") {
        return;
    }
    let lab = Lab::new("suite");
    let station = lab.station(&["--serve-loads"]);
    let out = lab.dir.path().join("suite");
    let output = lab.measure(&["suite", "regnier-2008", "--quick", "-q"], &out).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // 3 only where the split (experiment 1's timer conditions) cannot trace the kernel.
    assert!(matches!(output.status.code(), Some(0) | Some(3)), "{stderr}");
    let suite = read_json(&out.join("suite.json"));
    for c in suite["conditions"].as_array().unwrap() {
        if c["name"].as_str().unwrap().starts_with("exp2") {
            assert_eq!(c["status"], "done", "{c}");
        }
    }
    for id in ["table-1-exp2-no-load", "table-1-exp2-load"] {
        let table = suite["tables"].as_array().unwrap().iter().find(|t| t["spec"]["id"] == id).expect(id);
        let values = table["measured"]["values"][0].as_array().unwrap();
        assert_eq!(values.len(), 8, "{id}: L_irq and L_act, Mean SD Min Max");
        for cell in values {
            assert_ne!(cell["kind"], "not_measured", "{id}: {cell}");
        }
    }
    // Experiment 1 is there too.
    let exp1 = suite["tables"].as_array().unwrap().iter().find(|t| t["spec"]["id"] == "table-1-no-load").unwrap();
    assert_ne!(exp1["measured"]["values"][0][0]["kind"], "not_measured");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"fig-8-irq\"") && html.contains("id=\"fig-8-act\""));
    // Under load the station ran the shell loop (its LOAD_REPORT counts) while the measuring
    // host flooded it (the station's sink counted the datagrams).
    let loaded = run_json(&out.join("exp2-with-load"));
    let loads = loaded["scenarios"][0]["loads"].as_array().unwrap();
    let load = |name: &str| loads.iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("{name} in {loads:?}"));
    let value = |load: &serde_json::Value, row: &str| {
        let rows = load["achieved"].as_array().unwrap();
        rows.iter().find(|a| a["name"] == row).unwrap_or_else(|| panic!("{row} in {load}"))["value"].as_f64().unwrap()
    };
    let shell = load("station:shell-loop");
    assert!(shell["died_early"].is_null(), "{shell}");
    for row in ["station: disk MB", "station: files searched", "station: MB compressed"] {
        assert!(value(shell, row) > 0.0, "{row}: {shell}");
    }
    assert!(value(load("remote:udp-flood"), "station: datagrams/s received") > 1_000.0);
    // Figure 9 is experiment 2's run under load: its metrics, drawn from that condition.
    let figures = suite["figures"].as_array().unwrap();
    for (id, metric) in [("fig-9-irq", "remote.irq"), ("fig-9-act", "remote.act")] {
        let f = figures.iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("{id} in {figures:?}"));
        assert_eq!(
            (f["metric"].as_str(), f["conditions"].clone()),
            (Some(metric), serde_json::json!(["exp2-with-load"]))
        );
        assert!(html.contains(&format!("id=\"{id}\"")), "{id} drawn");
    }
    // The figure's run is there: Figure 9's count is judged on its samples, not "not measured".
    let judgements = suite["judgements"].as_array().unwrap();
    let fig9 = judgements.iter().find(|j| j["id"] == "fig-9-count").expect("the Figure 9 judgement");
    assert!(!fig9.to_string().contains("not measured"), "{fig9}");
    // δ measured once and held, as the paper's: the unloaded condition calibrated it (and
    // the suite stored it), the loaded one subtracted the same δ̄ without calibrating.
    let delta = |condition: &str| {
        let run = run_json(&out.join(condition));
        let m = measurements(&run, "remote.irq")[0].clone();
        (m["details"]["delta_mean_ns"].clone(), m["details"]["delta_samples"].clone(), run.to_string())
    };
    let (calibrated, samples, idle_run) = delta("exp2-without-load");
    let (held, held_samples, loaded_run) = delta("exp2-with-load");
    assert!(idle_run.contains("calibrated for this run"));
    assert!(loaded_run.contains("measured once before and held"), "the loaded condition calibrated again");
    assert_eq!((held, held_samples), (calibrated.clone(), samples));
    let stored = read_json(&out.join("delta.json"));
    assert_eq!(stored["mean_ns"], calibrated);
    let (status, text) = station.stop();
    assert!(status.success(), "{text}");
    assert!(!text.contains("not started") && !text.contains("stopped working"), "{text}");
}
