//! Two "hosts" on one machine, for tests of a second station: two network namespaces joined by
//! a veth pair, 192.0.2.1/24 on the measuring side and 192.0.2.2/24 on the station side, and
//! `lo` up in both. That link is all they have (no route, bridge or forwarding out), so no
//! packet leaves them; the host's own addresses do not matter, even inside 192.0.2.0/24, and
//! the host cannot reach the two addresses: run both ends with [`TwoHosts::command`]. The same
//! topology as `contrib/netns/two-hosts`, with names unique to the test process.
//!
//! Dropping a [`TwoHosts`] kills what is left inside its namespaces and deletes them; the
//! namespaces of an earlier test process that died without dropping are removed by the next
//! [`TwoHosts::create`]. Root and iproute2's `ip` are needed: see [`available`].

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every namespace made here is `rtl<pid % 100000>-<tag>-m` or `-s`, and nothing else is ever
/// removed as stale (see [`parse_name`]).
const PREFIX: &str = "rtl";
const MAX_TAG: usize = 24;
const MEASURING_ADDR: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const STATION_ADDR: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const PREFIX_LEN: u8 = 24;
/// How long the veth ends may take to be operationally up (linkwatch runs within ~1 s).
const LINK_UP_TIMEOUT: Duration = Duration::from_secs(5);

/// The measuring host and the station; both namespaces are deleted on drop.
#[derive(Debug)]
pub struct TwoHosts {
    pub measuring: String,
    pub station: String,
    pub measuring_addr: Ipv4Addr,
    pub station_addr: Ipv4Addr,
    /// The namespaces this value created, in creation order: only these are deleted on drop
    /// (not one of the same name that already existed when `ip netns add` refused it).
    owned: Vec<String>,
}

impl TwoHosts {
    /// Creates the namespaces `rtl<pid%100000>-<tag>-m` (measuring, 192.0.2.1/24) and `-s`
    /// (station, 192.0.2.2/24), joined by the veth pair `v<pid%100000><tag[..2]>m`/`...s` (at
    /// most 9 characters: under the 15 of an interface name), `lo` and both ends up, and
    /// returns once both ends are operationally up (a packet sent before is dropped). `tag`:
    /// 1 to 24 ASCII letters, digits or '_', unique among the TwoHosts alive in this process.
    /// First removes the namespaces left by test processes that died. On an error (not root,
    /// `ip` missing, a step of `ip` failing), what was already created is removed again.
    pub fn create(tag: &str) -> Result<TwoHosts, String> {
        available()?;
        if !valid_tag(tag) {
            return Err(format!("bad netns tag {tag:?}: 1 to {MAX_TAG} ASCII letters, digits or '_'"));
        }
        remove_stale();

        let id = std::process::id() % 100_000;
        let measuring = format!("{PREFIX}{id}-{tag}-m");
        let station = format!("{PREFIX}{id}-{tag}-s");
        let short: String = tag.chars().take(2).collect();
        let (vm, vs) = (format!("v{id}{short}m"), format!("v{id}{short}s"));
        let (m, s) = (measuring.clone(), station.clone());
        let mut hosts = TwoHosts {
            measuring,
            station,
            measuring_addr: MEASURING_ADDR,
            station_addr: STATION_ADDR,
            owned: Vec::new(),
        };

        // From here on, returning an error drops `hosts`, which removes what was created.
        for ns in [&m, &s] {
            ip(&["netns", "add", ns])?;
            hosts.owned.push(ns.clone());
        }
        // Both ends are created inside their namespaces: they never appear in the host's.
        ip(&["link", "add", &vm, "netns", &m, "type", "veth", "peer", "name", &vs, "netns", &s])?;
        for (ns, dev, addr) in [(&m, &vm, MEASURING_ADDR), (&s, &vs, STATION_ADDR)] {
            // No IPv6 link-local address, hence no solicitations on the link (best effort: the
            // kernel may have no IPv6).
            let _ = ip(&["-n", ns, "link", "set", "dev", dev, "addrgenmode", "none"]);
            ip(&["-n", ns, "addr", "add", &format!("{addr}/{PREFIX_LEN}"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
        }
        for (ns, dev) in [(&m, &vm), (&s, &vs)] {
            ip(&["-n", ns, "link", "set", "dev", dev, "up"])?;
        }
        for (ns, dev) in [(&m, &vm), (&s, &vs)] {
            wait_oper_up(ns, dev)?;
        }
        Ok(hosts)
    }

    /// A Command running `program` inside namespace `ns` (`self.measuring` or `self.station`)
    /// via `ip netns exec`, which execs `program` in place: the Child's pid is the program's.
    /// Add arguments, stdio etc. as usual.
    pub fn command(&self, ns: &str, program: &str) -> Command {
        assert!(
            ns == self.measuring || ns == self.station,
            "{ns:?} is neither {:?} nor {:?}",
            self.measuring,
            self.station
        );
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, program]);
        cmd
    }
}

impl Drop for TwoHosts {
    /// Kills what is left in the namespaces (a child still running would keep the network
    /// alive), then deletes them. Errors are ignored; never panics.
    fn drop(&mut self) {
        for ns in &self.owned {
            kill_processes_in(ns);
        }
        for ns in &self.owned {
            let _ = ip(&["netns", "delete", ns]);
        }
    }
}

/// Whether this process can create network namespaces: effective uid 0 with CAP_SYS_ADMIN and
/// CAP_NET_ADMIN, and an `ip` (iproute2) that knows `netns`. The Err says what is missing, for
/// a test to print when it skips, or to fail with under CI=true.
pub fn available() -> Result<(), String> {
    let status =
        std::fs::read_to_string("/proc/self/status").map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    let field = |name: &str| status.lines().find_map(|line| line.strip_prefix(name)).map(str::trim);
    // Uid: real, effective, saved, filesystem.
    let euid = field("Uid:").and_then(|v| v.split_whitespace().nth(1)).and_then(|v| v.parse::<u32>().ok());
    if euid != Some(0) {
        let euid = euid.map_or_else(|| "unknown".to_string(), |u| u.to_string());
        return Err(format!("not root (effective uid {euid}): network namespaces need root"));
    }
    const CAP_NET_ADMIN: u64 = 1 << 12;
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    let needed = CAP_NET_ADMIN | CAP_SYS_ADMIN;
    let effective = field("CapEff:").and_then(|v| u64::from_str_radix(v, 16).ok()).unwrap_or(0);
    if effective & needed != needed {
        return Err(format!(
            "root without CAP_SYS_ADMIN and CAP_NET_ADMIN (CapEff {effective:016x}): cannot create network namespaces"
        ));
    }
    match Command::new("ip").args(["netns", "list"]).stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`ip netns list` failed ({}): {} (iproute2's `ip` is needed)",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err("`ip` not found in PATH: iproute2 is needed".to_string())
        }
        Err(e) => Err(format!("cannot run `ip`: {e}")),
    }
}

/// Kills (SIGKILL) every process in network namespace `ns` (`ip netns pids`), so that a child
/// left running cannot keep the namespace alive, and repeats while new ones appear (a shell
/// forking); never this process. Errors are ignored.
pub fn kill_processes_in(ns: &str) {
    let me = std::process::id();
    for round in 0..5 {
        let Ok(out) =
            Command::new("ip").args(["netns", "pids", ns]).stdin(Stdio::null()).stderr(Stdio::null()).output()
        else {
            return;
        };
        let pids: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .filter(|&pid| pid > 1 && pid != me)
            .map(|pid| pid.to_string())
            .collect();
        if pids.is_empty() {
            return;
        }
        // The shell's builtin kill: no procps needed.
        let _ = Command::new("sh")
            .args(["-c", "kill -9 \"$@\"", "sh"])
            .args(&pids)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // A killed process is only listed until it has exited (a zombie holds no namespace).
        std::thread::sleep(Duration::from_millis(10 << round));
    }
}

/// Runs `ip ARGS`, returning its stdout, or an Err with the command line and its stderr.
fn ip(args: &[&str]) -> Result<String, String> {
    let line = format!("ip {}", args.join(" "));
    let out =
        Command::new("ip").args(args).stdin(Stdio::null()).output().map_err(|e| format!("cannot run `{line}`: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("`{line}` failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Waits until `dev` in `ns` is operationally UP: until linkwatch has seen the carrier, a veth
/// end drops what is sent through it.
fn wait_oper_up(ns: &str, dev: &str) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let brief = ip(&["-n", ns, "-brief", "link", "show", "dev", dev])?;
        if brief.split_whitespace().nth(1) == Some("UP") {
            return Ok(());
        }
        if start.elapsed() > LINK_UP_TIMEOUT {
            return Err(format!("{dev} in {ns} is not up after {LINK_UP_TIMEOUT:?}: {}", brief.trim()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn valid_tag(tag: &str) -> bool {
    !tag.is_empty() && tag.len() <= MAX_TAG && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The `pid % 100000` of a name made by [`TwoHosts::create`]: exactly `rtl`, 1 to 5 digits
/// (no leading zero), `-`, a valid tag (no `-` in it), then `-m` or `-s`. None for any other
/// name, which is therefore never removed.
fn parse_name(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let rest = rest.strip_suffix("-m").or_else(|| rest.strip_suffix("-s"))?;
    let (digits, tag) = rest.split_once('-')?;
    let digits_ok = (1..=5).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !digits_ok || !valid_tag(tag) {
        return None;
    }
    digits.parse().ok()
}

/// `pid % 100000` of every process running now, None if /proc cannot be read. A name's pid is
/// truncated, so a namespace counts as someone's as long as any running pid has its suffix:
/// at worst a dead process's namespaces stay until that pid is gone too.
fn running_pid_suffixes() -> Option<HashSet<u32>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let suffixes: HashSet<u32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .map(|pid| pid % 100_000)
        .collect();
    // /proc always lists this process: an empty set means something is wrong, keep everything.
    (!suffixes.is_empty()).then_some(suffixes)
}

/// Deletes the namespaces named by [`TwoHosts::create`] whose process is no longer running
/// (killing what is left inside first). Errors are ignored: another process may be removing
/// the same ones.
fn remove_stale() {
    let Ok(list) = ip(&["netns", "list"]) else {
        return;
    };
    let Some(running) = running_pid_suffixes() else {
        return;
    };
    // `ip netns list` prints "NAME" or "NAME (id: N)".
    for name in list.lines().filter_map(|line| line.split_whitespace().next()) {
        match parse_name(name) {
            Some(id) if !running.contains(&id) => {
                kill_processes_in(name);
                let _ = ip(&["netns", "delete", name]);
            }
            _ => {}
        }
    }
}
