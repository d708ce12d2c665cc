//! A real Prometheus scrapes two `rtlab monitor` processes on loopback: what PromQL sees
//! of the window maxima is what each monitor's history holds, and `promtool check metrics`
//! accepts the endpoint's text.

mod common;

use common::prometheus::{available, value_of, Prometheus, PROMETHEUS, PROMTOOL};
use common::rtlab_path;
use rtlab_history::HistoryDb;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Monitor {
    child: Child,
    address: SocketAddr,
    stopped: bool,
}

impl Monitor {
    /// SIGTERM, the normal stop: the open window is committed.
    fn stop(&mut self) {
        if !self.stopped {
            let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
            let _ = self.child.wait();
            self.stopped = true;
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop();
    }
}

fn start_monitor(db: &Path, token: &Path) -> Monitor {
    let mut child = Command::new(rtlab_path())
        .args(["monitor", "--db"])
        .arg(db)
        .args(["--window", "3s", "-q", "--listen", "127.0.0.1:0", "--metrics-token-file"])
        .arg(token)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start rtlab monitor");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let address = first
        .split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no metrics address in {first:?}"));
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = stdout.read_to_string(&mut sink);
    });
    Monitor { child, address, stopped: false }
}

/// GET /metrics as a plain client (the text format promtool reads).
fn scrape(address: SocketAddr, token: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET /metrics HTTP/1.0\r\nAuthorization: Bearer {token}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200"), "{response}");
    response.split_once("\r\n\r\n").unwrap().1.to_string()
}

#[test]
fn prometheus_sees_what_the_history_holds() {
    if !available(PROMETHEUS) || !available(PROMTOOL) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let token_text = "a-token-only-prometheus-knows";
    let token = dir.path().join("token");
    common::write_secret(&token, &format!("{token_text}\n"));
    let mut boards: Vec<(String, Monitor)> = ["a", "b"]
        .iter()
        .map(|name| {
            let db = dir.path().join(format!("{name}.db"));
            let monitor = start_monitor(&db, &token);
            (db.display().to_string(), monitor)
        })
        .collect();
    let targets: Vec<String> = boards.iter().map(|(_, m)| format!("'{}'", m.address)).collect();
    // Scrapes every 500 ms see each 3 s window's gauge several times.
    let config = format!(
        "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\nscrape_configs:\n  - job_name: rtlab\n    \
         authorization:\n      credentials_file: {}\n    static_configs:\n      - targets: [{}]\n",
        token.display(),
        targets.join(", ")
    );
    let prometheus = Prometheus::start(dir.path(), &config);
    prometheus.wait_for("count_over_time(up[1m])", 2, 2.0, Duration::from_secs(90));
    prometheus.wait_for("rtlab_windows_total", 2, 2.0, Duration::from_secs(90));
    // Prometheus negotiated OpenMetrics and read every family.
    let up = prometheus.query("up").unwrap();
    assert!(up.iter().all(|s| value_of(s) == Some(1.0)), "{up:?}");

    // promtool accepts the text a plain client gets.
    for (_, monitor) in &boards {
        let text = scrape(monitor.address, token_text);
        let mut promtool = Command::new(PROMTOOL)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        promtool.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let checked = promtool.wait_with_output().unwrap();
        assert!(
            checked.status.success(),
            "promtool check metrics: {}{}",
            String::from_utf8_lossy(&checked.stdout),
            String::from_utf8_lossy(&checked.stderr)
        );
    }
    // Stopped, the boards are scraped no more: what Prometheus holds is final.
    for (_, monitor) in &mut boards {
        monitor.stop();
    }
    std::thread::sleep(Duration::from_millis(800));

    // Per board: the windows Prometheus has seen (K), and its maximum per CPU, against the
    // first K windows of that board's history.
    let windows_seen = prometheus.query("max_over_time(rtlab_windows_total[10m])").unwrap();
    let maxima = prometheus.query("max_over_time(rtlab_window_max_seconds{metric=\"timer.latency\"}[10m])").unwrap();
    for (db, monitor) in &boards {
        let instance = monitor.address.to_string();
        let k = windows_seen
            .iter()
            .find(|s| s["metric"]["instance"] == instance.as_str())
            .and_then(value_of)
            .expect("rtlab_windows_total of the board") as usize;
        let history = HistoryDb::open_existing(Path::new(db)).unwrap();
        let windows = history.windows(None, None).unwrap();
        assert!(windows.len() >= k && k >= 2, "{k} windows seen, {} in the history", windows.len());
        let mut expected: BTreeMap<usize, i64> = BTreeMap::new();
        for w in &windows[..k] {
            for m in w.record.metrics.iter().filter(|m| m.metric == "timer.latency" && m.moments.count > 0) {
                let max = expected.entry(m.cpu).or_insert(i64::MIN);
                *max = (*max).max(m.moments.max);
            }
        }
        for (cpu, max_ns) in expected {
            let seen = maxima
                .iter()
                .find(|s| {
                    s["metric"]["instance"] == instance.as_str() && s["metric"]["cpu"] == cpu.to_string().as_str()
                })
                .and_then(value_of)
                .unwrap_or_else(|| panic!("no maximum of {instance} cpu{cpu}"));
            assert!(
                (seen - max_ns as f64 / 1e9).abs() < 1e-12,
                "{instance} cpu{cpu}: PromQL max_over_time {seen} s, history {max_ns} ns"
            );
        }
        // The host and build info reached Prometheus with their labels.
        let host =
            prometheus.query(&format!("last_over_time(rtlab_host_info{{instance=\"{instance}\"}}[10m])")).unwrap();
        assert_eq!(host.len(), 1);
        assert!(host[0]["metric"]["kernel_release"].as_str().is_some_and(|k| !k.is_empty()));
    }
}
