//! `rtlab monitor` end to end: windows in the history, clean stops, kill -9 and restarts,
//! the /metrics endpoint (authentication, methods, consistent scrapes), bad flags.
//! Behaviour and invariants only: this VM's latencies are whatever the hypervisor makes them.

mod common;

use common::rtlab_path;
use common::timerlat::{check_no_tracer_error, check_timerlat_history, has_timerlat};
use common::tmpfs::{may_mount, Tmpfs};
use rtlab_history::{HistoryDb, StoredWindow};
use rtlab_results::history::Resolution;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SECOND: i64 = 1_000_000_000;

/// A monitor started in the background; killed (SIGKILL) if the test ends without
/// stopping it.
struct Monitor {
    child: Option<Child>,
    /// The metrics address it printed, with --listen.
    address: Option<SocketAddr>,
}

impl Monitor {
    fn start(db: &Path, extra: &[&str]) -> Monitor {
        Self::start_with_stderr(db, extra, Stdio::inherit())
    }

    fn start_with_stderr(db: &Path, extra: &[&str], stderr: Stdio) -> Monitor {
        let mut child = Command::new(rtlab_path())
            .args(["monitor", "--db"])
            .arg(db)
            .args(["--window", "1s", "-q"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start rtlab monitor");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).expect("the start line");
        assert!(first.starts_with("rtlab monitor: "), "{first}");
        let address = first
            .split("metrics on http://")
            .nth(1)
            .map(|rest| rest.split('/').next().unwrap().parse().expect("an address"));
        // Keep draining stdout so the monitor never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = stdout.read_to_string(&mut sink);
        });
        Monitor { child: Some(child), address }
    }

    fn signal(&mut self, signal: &str) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        let status = Command::new("kill").args(["-s", signal, &child.id().to_string()]).status().unwrap();
        assert!(status.success());
        child.wait().unwrap()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn windows(db: &Path) -> Vec<StoredWindow> {
    HistoryDb::open_existing(db).unwrap().windows(None, None).unwrap()
}

/// Waits until the history holds at least `n` windows.
fn wait_for_windows(db: &Path, n: usize) -> Vec<StoredWindow> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if db.exists() {
            if let Ok(db) = HistoryDb::open_existing(db) {
                let w = db.windows(None, None).unwrap();
                if w.len() >= n {
                    return w;
                }
            }
        }
        assert!(Instant::now() < deadline, "fewer than {n} windows after 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Per window and CPU: histogram and moments agree; per CPU over the session: one jitter
/// sample fewer than latency samples; consecutive full windows tile the time.
fn check_windows(windows: &[StoredWindow], cpus: usize) {
    for w in windows {
        let r = &w.record;
        assert_eq!((r.resolution, r.merged), (Resolution::Window, 1));
        assert!(r.end_ns > r.start_ns && r.end_ns - r.start_ns <= SECOND, "{} .. {}", r.start_ns, r.end_ns);
        assert_eq!(r.metrics.len(), 2 * cpus, "latency and jitter per CPU");
        for m in &r.metrics {
            let h = rtlab_analysis::LatencyHistogram::decode(&m.histogram).unwrap();
            assert_eq!(h.count(), m.moments.count, "{} cpu{}", m.metric, m.cpu);
            if m.moments.count > 0 {
                assert!(m.moments.min <= m.moments.max);
            }
        }
    }
    for pair in windows.windows(2) {
        if pair[0].session_id == pair[1].session_id {
            assert_eq!(pair[0].record.end_ns, pair[1].record.start_ns, "windows of a session tile the time");
        }
    }
}

fn count_of(windows: &[StoredWindow], metric: &str, cpu: usize) -> u64 {
    windows
        .iter()
        .flat_map(|w| &w.record.metrics)
        .filter(|m| m.metric == metric && m.cpu == cpu)
        .map(|m| m.moments.count)
        .sum()
}

#[test]
fn a_monitor_fills_the_history_and_stops_at_its_duration() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h/monitor.db");
    let output = Command::new(rtlab_path())
        .args(["monitor", "--db"])
        .arg(&db)
        .args(["--window", "1s", "--duration", "3500ms", "--interval", "2ms"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("rtlab monitor: 2000 µs period"), "{stdout}");
    assert_eq!(lines.len(), 2 + 4, "start, four windows (the last one partial), stop: {stdout}");
    assert!(lines[5].contains("stopped (--duration) after 4 windows"), "{stdout}");

    let history = HistoryDb::open_existing(&db).unwrap();
    history.integrity_check().unwrap();
    let sessions = history.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].end_reason.as_deref(), Some("duration"));
    assert_eq!(sessions[0].settings.interval_ns, 2_000_000);
    let windows = history.windows(None, None).unwrap();
    assert_eq!(windows.len(), 4);
    let cpus = sessions[0].settings.cpus.len();
    check_windows(&windows, cpus);
    assert!(windows[3].record.end_ns - windows[3].record.start_ns < SECOND, "the last window is partial");
    for cpu in &sessions[0].settings.cpus {
        let latency = count_of(&windows, "timer.latency", *cpu);
        assert_eq!(count_of(&windows, "timer.jitter", *cpu), latency - 1);
        // Every expiry of the 3.5 s is a sample, an overrun or a lost sample.
        let accounted: u64 = latency
            + windows
                .iter()
                .flat_map(|w| &w.record.metrics)
                .filter(|m| m.metric == "timer.latency" && m.cpu == *cpu)
                .map(|m| m.overruns + m.lost)
                .sum::<u64>();
        assert!((1_600..=1_800).contains(&accounted), "cpu{cpu}: {accounted} expiries in 3.5 s at 2 ms");
    }
    // System activity of every whole window.
    assert!(windows[1].record.activity.as_ref().is_some_and(|a| a.window_s > 0.5));
}

#[test]
fn a_schedule_alternates_its_phases_by_window() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("monitor.db");
    let output = Command::new(rtlab_path())
        .args(["monitor", "--db"])
        .arg(&db)
        .args(["--window", "1s", "--duration", "4s", "--schedule", "idle:1s,cpu:1s", "-q"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let windows = windows(&db);
    let phases: Vec<&str> = windows.iter().map(|w| w.record.phase.as_str()).collect();
    assert_eq!(phases, ["idle", "cpu", "idle", "cpu"]);
    let history = HistoryDb::open_existing(&db).unwrap();
    assert_eq!(history.sessions().unwrap()[0].settings.schedule, "idle:1s,cpu:1s");
    // The cpu phase's load ran: the CPUs were busier in its windows than in the idle ones.
    let busy = |w: &StoredWindow| {
        w.record.activity.as_ref().map(|a| a.cpus.iter().map(|c| c.busy).sum::<f64>()).unwrap_or(0.0)
    };
    assert!(busy(&windows[1]) > busy(&windows[0]) + 0.5, "{} vs {}", busy(&windows[1]), busy(&windows[0]));
}

#[test]
fn sigterm_closes_the_open_window_and_a_restart_records_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("monitor.db");
    let mut monitor = Monitor::start(&db, &[]);
    wait_for_windows(&db, 2);
    // One monitor per history.
    let second = Command::new(rtlab_path()).args(["monitor", "--db"]).arg(&db).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&second.stderr).contains("another rtlab monitor is writing this history"));
    std::thread::sleep(Duration::from_millis(400));
    let status = monitor.signal("TERM");
    assert_eq!(status.code(), Some(0), "SIGTERM is the normal stop");
    let first = windows(&db);
    assert!(first.len() >= 3);
    check_windows(&first, first[0].record.metrics.len() / 2);

    std::thread::sleep(Duration::from_millis(300));
    let mut again = Monitor::start(&db, &[]);
    wait_for_windows(&db, first.len() + 1);
    assert_eq!(again.signal("INT").code(), Some(0));
    let history = HistoryDb::open_existing(&db).unwrap();
    let sessions = history.sessions().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0].end_reason.as_deref(), Some("signal"));
    let last_end = first.last().unwrap().record.end_ns;
    assert_eq!(sessions[1].gap_before_ns, Some(sessions[1].started_ns - last_end));
    assert!(sessions[1].gap_before_ns.unwrap() >= 300_000_000);
    assert_eq!(sessions[1].previous_kernel, None, "same kernel");
    // The first session's windows are untouched; the second appended its own.
    let all = history.windows(None, None).unwrap();
    assert_eq!(&all[..first.len()], &first[..]);
    assert!(all[first.len()..].iter().all(|w| w.session_id == sessions[1].id));
}

#[test]
fn kill_9_loses_at_most_the_open_window() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("monitor.db");
    for round in 0..3 {
        let before = if db.exists() { windows(&db).len() } else { 0 };
        let mut monitor = Monitor::start(&db, &[]);
        let seen = wait_for_windows(&db, before + 2);
        // A moment inside a window (or a commit): the kill loses at most that window.
        std::thread::sleep(Duration::from_millis(150 + 230 * round));
        monitor.signal("KILL");
        let history = HistoryDb::open_existing(&db).unwrap();
        history.integrity_check().unwrap();
        let after = history.windows(None, None).unwrap();
        assert_eq!(&after[..seen.len()], &seen[..], "every window committed before the kill is there");
        let sessions = history.sessions().unwrap();
        assert_eq!(sessions.len(), round as usize + 1);
        assert_eq!(sessions.last().unwrap().ended_ns, None, "a killed session has no end");
        if round > 0 {
            assert!(sessions.last().unwrap().gap_before_ns.is_some_and(|g| g > 0));
        }
        check_windows(&after, after[0].record.metrics.len() / 2);
    }
}

/// One HTTP/1.0 request; (status, body).
fn http(address: SocketAddr, method: &str, path: &str, headers: &[&str]) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.0\r\nHost: {address}\r\n");
    for h in headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn sample(body: &str, prefix: &str) -> Option<f64> {
    body.lines().find(|l| l.starts_with(prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
}

#[test]
fn the_metrics_endpoint_is_read_only_authenticated_and_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("monitor.db");
    let token = dir.path().join("token");
    common::write_secret(&token, "s3cret-token-for-the-test\n");
    let mut monitor = Monitor::start(
        &db,
        &["--listen", "127.0.0.1:0", "--metrics-token-file", token.to_str().unwrap(), "--interval", "500us"],
    );
    let address = monitor.address.expect("the start line names the metrics address");
    assert!(address.ip().is_loopback());
    let auth = "Authorization: Bearer s3cret-token-for-the-test";
    assert_eq!(http(address, "GET", "/metrics", &[]).0, 401);
    assert_eq!(http(address, "GET", "/metrics", &["Authorization: Bearer s3cret-token-for-the-tesT"]).0, 401);
    assert_eq!(http(address, "GET", "/healthz", &[auth]), (200, "ok\n".into()));
    assert_eq!(http(address, "POST", "/metrics", &[auth]).0, 405);
    assert_eq!(http(address, "DELETE", "/metrics", &[auth]).0, 405);
    assert_eq!(http(address, "GET", "/admin", &[auth]).0, 404);

    // Scrape continuously across window commits: every exposition is whole, and no
    // counter ever goes backwards.
    let series = "{metric=\"timer.latency\",cpu=\"0\"}";
    let mut previous = (0.0, 0.0, 0.0);
    let started = Instant::now();
    let mut scrapes = 0;
    while started.elapsed() < Duration::from_millis(3_500) {
        let accept = "Accept: application/openmetrics-text; version=1.0.0";
        let (status, body) = http(address, "GET", "/metrics", &[auth, accept]);
        assert_eq!(status, 200);
        assert!(body.ends_with("# EOF\n"), "an OpenMetrics exposition is whole");
        let windows = sample(&body, "rtlab_windows_total").unwrap();
        if let Some(count) = sample(&body, &format!("rtlab_latency_seconds_count{series}")) {
            let inf = sample(&body, "rtlab_latency_seconds_bucket{metric=\"timer.latency\",cpu=\"0\",le=\"+Inf\"}");
            assert_eq!(inf, Some(count), "+Inf bucket == count");
            assert_eq!(sample(&body, &format!("rtlab_samples_total{series}")), Some(count));
            assert!(windows >= previous.0 && count >= previous.1, "went backwards: {previous:?} -> {windows} {count}");
            let overruns = sample(&body, &format!("rtlab_overruns_total{series}")).unwrap();
            assert!(overruns >= previous.2);
            previous = (windows, count, overruns);
        }
        scrapes += 1;
        std::thread::sleep(Duration::from_millis(15));
    }
    assert!(previous.0 >= 2.0, "at least two windows were exposed in 3.5 s ({scrapes} scrapes)");
    // A plain client gets the text format 0.0.4.
    let (_, plain) = http(address, "GET", "/metrics", &[auth]);
    assert!(plain.contains("# TYPE rtlab_samples_total counter") && !plain.contains("# EOF"));
    assert_eq!(monitor.signal("TERM").code(), Some(0));
}

/// What the endpoint sends back to raw `bytes` (empty when it closes without answering).
fn raw_exchange(address: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A server that closes early may reset the rest of a long send: that is its answer.
    let _ = stream.write_all(bytes);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    String::from_utf8_lossy(&response).into_owned()
}

fn threads_of(child: &Child) -> usize {
    std::fs::read_dir(format!("/proc/{}/task", child.id())).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn hostile_clients_cost_scrapes_not_memory_or_windows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("monitor.db");
    let token = dir.path().join("token");
    common::write_secret(&token, "another-test-token-0123456789\n");
    let mut monitor =
        Monitor::start(&db, &["--listen", "127.0.0.1:0", "--metrics-token-file", token.to_str().unwrap()]);
    let address = monitor.address.unwrap();
    // Measuring (every thread started) before the count.
    wait_for_windows(&db, 1);
    let threads = threads_of(monitor.child.as_ref().unwrap());
    let auth = "Authorization: Bearer another-test-token-0123456789";

    assert!(raw_exchange(address, b"\x00\xffjunk\r\n\r\n").starts_with("HTTP/1.1 400"));
    let mut oversized = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
    oversized.extend(std::iter::repeat_n(b'a', 1 << 20));
    assert!(raw_exchange(address, &oversized).starts_with("HTTP/1.1 431"));
    // Truncated, then silent: closed without an answer after the head's deadline.
    assert_eq!(raw_exchange(address, b"GET /metr"), "");
    assert_eq!(raw_exchange(address, &[0xAB; 3000]), "", "junk without a head end is dropped unanswered");
    // A burst of idle connections and of unauthenticated requests.
    let idle: Vec<TcpStream> = (0..60).filter_map(|_| TcpStream::connect(address).ok()).collect();
    let during = threads_of(monitor.child.as_ref().unwrap());
    assert!(during <= threads, "{during} threads while {} connections idle, {threads} before", idle.len());
    // A scrape behind them waits, but not without bound: each of the eight workers gives a
    // silent connection at most the 1 s head deadline, so 60 of them delay it by at most
    // ⌈60 / 8⌉ s (plus scheduling on this loaded 2-CPU machine).
    let started = Instant::now();
    let (status, _) = http(address, "GET", "/metrics", &[auth]);
    let delay = started.elapsed();
    assert_eq!(status, 200);
    let bound = Duration::from_secs((idle.len() as u64).div_ceil(8) + 3);
    assert!(delay <= bound, "a scrape behind {} held connections took {delay:?} (bound {bound:?})", idle.len());
    eprintln!("a scrape behind {} held connections took {delay:?}", idle.len());
    drop(idle);
    for _ in 0..300 {
        assert_eq!(http(address, "GET", "/metrics", &[]).0, 401);
    }
    // The real peer is still served, and the windows kept coming.
    let before = windows(&db).len();
    let (status, body) = http(address, "GET", "/metrics", &[auth]);
    assert_eq!(status, 200);
    assert!(body.contains("rtlab_windows_total"));
    wait_for_windows(&db, before + 1);
    assert_eq!(monitor.signal("TERM").code(), Some(0));
    let history = HistoryDb::open_existing(&db).unwrap();
    assert_eq!(history.sessions().unwrap()[0].end_reason.as_deref(), Some("signal"));
}

/// `-P timerlat`: on a kernel with the tracer (the PREEMPT_RT guest runs this too:
/// tests/guest_kernels.rs) a history of the kernel's timerlat threads; without it (this
/// host's kernel) exit 3, one line naming the kernels that have it, and no history.
#[test]
fn timerlat_monitors_the_kernels_tracer_or_refuses_before_touching_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h/monitor.db");
    let output = Command::new(rtlab_path())
        .args(["monitor", "-P", "timerlat", "-w", "2s", "-D", "4s", "-q", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if has_timerlat() {
        assert!(output.status.success(), "{stderr}");
        check_timerlat_history(&db, 2, 4);
    } else {
        assert_eq!(output.status.code(), Some(3), "{stderr}");
        check_no_tracer_error(&stderr);
        assert!(stderr.contains("the history was not touched"), "{stderr}");
        assert!(!db.parent().unwrap().exists(), "nothing created");
    }
}

/// Each case is refused for its own reason (the flag it names), in one line, before
/// anything is measured: the others are valid (1 s windows, 2 s).
#[test]
fn bad_flags_get_one_line_and_exit_2() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let not_history = dir.path().join("other.db");
    std::fs::write(&not_history, "not sqlite at all, long enough to have a header................................................................").unwrap();
    let open_token = dir.path().join("open.token");
    std::fs::write(&open_token, "a-token-everyone-can-read-0123\n").unwrap();
    std::fs::set_permissions(&open_token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = |p: &Path| p.display().to_string();
    let mut cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--window".into(), "10ms".into()], "--window"),
        (vec!["--window".into(), "soon".into()], "--window"),
        (vec!["--listen".into(), "0.0.0.0:9464".into()], "--listen"),
        (vec!["--listen".into(), "not-an-address".into()], "--listen"),
        (vec!["--schedule".into(), "idle:1500ms".into()], "--schedule"),
        (vec!["--schedule".into(), "warp-drive:1m".into()], "--schedule"),
        (vec!["--keep".into(), "500ms".into()], "--keep"),
        (vec!["--metrics-token-file".into(), "/nonexistent/token".into()], "--metrics-token-file"),
        (vec!["--metrics-token-file".into(), path(&open_token)], "chmod 600"),
        (vec!["--db".into(), path(&not_history)], "--db"),
        (vec!["-P".into(), "timerlat".into(), "--interval".into(), "50us".into()], "--interval"),
        (vec!["-P".into(), "timerlat".into(), "--policy".into(), "other".into()], "--policy"),
    ];
    let foreign_token = dir.path().join("foreign.token");
    if common::euid() == 0 {
        // Root can give the file away: a token another user could rewrite.
        common::write_secret(&foreign_token, "a-token-of-another-user-0123\n");
        std::os::unix::fs::chown(&foreign_token, Some(65534), None).unwrap();
        cases.push((vec!["--metrics-token-file".into(), path(&foreign_token)], "owned by uid 65534"));
    }
    for (case, names) in cases {
        let mut command = Command::new(rtlab_path());
        command.args(["monitor", "--duration", "2s"]);
        if !case.contains(&"--window".to_string()) {
            command.args(["--window", "1s"]);
        }
        if !case.contains(&"--db".to_string()) {
            command.arg("--db").arg(&db);
        }
        command.args(&case);
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{case:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{case:?}: {stderr}");
        assert!(stderr.contains(names), "{case:?} is refused for its own reason: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(!db.exists() || windows(&db).is_empty(), "nothing was measured");
}

/// Polls the exposition until `metric` satisfies `wanted` (at most 30 s); its last value.
fn wait_for_metric(address: SocketAddr, metric: &str, wanted: impl Fn(f64) -> bool) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = http(address, "GET", "/metrics", &[]);
        assert_eq!(status, 200, "the monitor serves throughout");
        let value = sample(&body, metric).unwrap_or_else(|| panic!("{metric} in {body}"));
        if wanted(value) {
            return value;
        }
        assert!(Instant::now() < deadline, "{metric} stayed at {value} for 30 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A history on a file system that fills up: the monitor goes on measuring and serving,
/// holds the windows it cannot store and says how many, and stores them, in order, when
/// space returns. A real 4 MiB tmpfs, filled by a file (root: CI runs as root).
#[test]
fn a_full_disk_holds_windows_back_and_stores_them_when_space_returns() {
    if !may_mount() {
        return;
    }
    let fs = Tmpfs::mount("4m");
    let db = fs.path().join("monitor.db");
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut monitor = Monitor::start_with_stderr(
        &db,
        &["--listen", "127.0.0.1:0", "--interval", "2ms"],
        Stdio::from(log.reopen().unwrap()),
    );
    let address = monitor.address.unwrap();
    wait_for_windows(&db, 2);

    // Fill the file system to the last byte.
    let filler_path = fs.path().join("filler");
    let mut filler = std::fs::File::create(&filler_path).unwrap();
    let chunk = vec![0xA5u8; 16 * 1024];
    while filler.write_all(&chunk).is_ok() {}
    while filler.write_all(&chunk[..512]).is_ok() {}
    while filler.write_all(&[0]).is_ok() {}
    drop(filler);
    let unstored = wait_for_metric(address, "rtlab_windows_unstored ", |v| v >= 3.0);
    assert!(unstored >= 3.0);
    let stored_while_full = windows(&db).len();

    // Space returns: what waited is stored.
    std::fs::remove_file(&filler_path).unwrap();
    wait_for_metric(address, "rtlab_windows_unstored ", |v| v == 0.0);
    let (_, body) = http(address, "GET", "/metrics", &[]);
    assert_eq!(sample(&body, "rtlab_windows_dropped_total "), Some(0.0));
    assert_eq!(monitor.signal("TERM").code(), Some(0), "every window stored in the end");

    let history = HistoryDb::open_existing(&db).unwrap();
    history.integrity_check().unwrap();
    let stored = history.windows(None, None).unwrap();
    assert!(
        stored.len() >= stored_while_full + 3,
        "{} windows, {stored_while_full} before space returned",
        stored.len()
    );
    check_windows(&stored, history.sessions().unwrap()[0].settings.cpus.len());
    // In order and without a hole: each window starts where the one before ended.
    for pair in stored.windows(2) {
        assert_eq!(pair[0].record.end_ns, pair[1].record.start_ns);
    }
    let stderr = std::fs::read_to_string(log.path()).unwrap();
    assert!(stderr.contains("cannot store a window"), "{stderr}");
    assert!(stderr.contains("storing again; every window held back is stored"), "{stderr}");
}
