//! `rtlab fleet` against a real Prometheus (Debian's 2.42, /usr/bin/prometheus): the test
//! serves three fake boards' fixed OpenMetrics expositions on loopback, lets Prometheus scrape
//! them every second, and checks what `rtlab fleet` reads back. Also: bad URLs and answers,
//! and promtool on contrib/prometheus.
//!
//! Without prometheus/promtool the tests say why and return, or fail under CI=true
//! (`./run-tests` as root installs Debian's prometheus package).

mod common;

use assert_cmd::Command;
use common::prometheus::{available, free_port, Prometheus, PROMETHEUS, PROMTOOL};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// A board's fixed exposition, shaped like `rtlab monitor`'s: per-CPU window maxima (s).
struct FakeBoard {
    hostname: &'static str,
    kernel: &'static str,
    window_max_s: [f64; 2],
    /// Seconds before each scrape at which the last window ended.
    window_age_s: f64,
    /// After this many scrapes the board serves this kernel release (it "rebooted").
    reboot_into: Option<(usize, &'static str)>,
}

fn exposition(board: &FakeBoard, kernel: &str) -> String {
    let mut out = String::new();
    out.push_str("# TYPE rtlab_latency_seconds histogram\n# UNIT rtlab_latency_seconds seconds\n");
    let les = [
        "0.000001", "0.000002", "0.000005", "0.00001", "0.00002", "0.00005", "0.0001", "0.0002", "0.0005", "0.001",
        "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10",
    ];
    for (cpu, max) in board.window_max_s.iter().enumerate() {
        for metric in ["timer.jitter", "timer.latency"] {
            for le in les {
                let count = if le.parse::<f64>().unwrap() >= *max { 1000 } else { 999 };
                out.push_str(&format!(
                    "rtlab_latency_seconds_bucket{{metric=\"{metric}\",cpu=\"{cpu}\",le=\"{le}\"}} {count}\n"
                ));
            }
            out.push_str(&format!(
                "rtlab_latency_seconds_bucket{{metric=\"{metric}\",cpu=\"{cpu}\",le=\"+Inf\"}} 1000\n"
            ));
            out.push_str(&format!("rtlab_latency_seconds_count{{metric=\"{metric}\",cpu=\"{cpu}\"}} 1000\n"));
            out.push_str(&format!("rtlab_latency_seconds_sum{{metric=\"{metric}\",cpu=\"{cpu}\"}} 0.02\n"));
        }
    }
    out.push_str("# TYPE rtlab_window_max_seconds gauge\n# UNIT rtlab_window_max_seconds seconds\n");
    for (cpu, max) in board.window_max_s.iter().enumerate() {
        out.push_str(&format!("rtlab_window_max_seconds{{metric=\"timer.jitter\",cpu=\"{cpu}\"}} 0.000003\n"));
        out.push_str(&format!("rtlab_window_max_seconds{{metric=\"timer.latency\",cpu=\"{cpu}\"}} {max}\n"));
    }
    for counter in ["samples", "overruns", "lost"] {
        out.push_str(&format!("# TYPE rtlab_{counter} counter\n"));
        for cpu in 0..2 {
            for metric in ["timer.jitter", "timer.latency"] {
                let v = if counter == "samples" { 1000 } else { 0 };
                out.push_str(&format!("rtlab_{counter}_total{{metric=\"{metric}\",cpu=\"{cpu}\"}} {v}\n"));
            }
        }
    }
    out.push_str("# TYPE rtlab_windows counter\nrtlab_windows_total 10\n");
    out.push_str(&format!(
        "# TYPE rtlab_last_window_end_timestamp_seconds gauge\nrtlab_last_window_end_timestamp_seconds {:.3}\n",
        now_s() - board.window_age_s
    ));
    out.push_str("# TYPE rtlab_build info\nrtlab_build_info{version=\"0.1.0\",commit=\"abc1234\"} 1\n");
    out.push_str(&format!(
        "# TYPE rtlab_host info\nrtlab_host_info{{hostname=\"{}\",kernel_release=\"{}\",preemption=\"PREEMPT_RT\",\
         cmdline_hash=\"00112233aabbccdd\"}} 1\n# EOF\n",
        board.hostname, kernel
    ));
    out
}

/// Serves GET /metrics with the board's exposition on 127.0.0.1 (an ephemeral port) from a
/// thread; anything else is 404. Returns the port.
fn serve(board: FakeBoard) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut scrapes = 0;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim_end() != "" {
                line.clear();
            }
            let (status, content_type, body) = if request_line.starts_with("GET /metrics ") {
                scrapes += 1;
                let kernel = match board.reboot_into {
                    Some((after, kernel)) if scrapes > after => kernel,
                    _ => board.kernel,
                };
                ("200 OK", "application/openmetrics-text; version=1.0.0; charset=utf-8", exposition(&board, kernel))
            } else {
                ("404 Not Found", "text/plain; charset=utf-8", "not found\n".to_string())
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// Prometheus scraping the given boards every second, once each has been scraped twice.
fn start_prometheus(dir: &Path, targets: &[u16]) -> (Prometheus, u16) {
    let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
    let prometheus = Prometheus::start(
        dir,
        &format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
             - job_name: lab\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ),
    );
    prometheus.wait_for("count_over_time(up[1m])", targets.len(), 2.0, Duration::from_secs(60));
    let port = prometheus.port;
    (prometheus, port)
}

fn rtlab() -> Command {
    let mut c = Command::cargo_bin("rtlab").unwrap();
    c.timeout(Duration::from_secs(120));
    c
}

#[test]
fn fleet_reads_a_real_prometheus() {
    if !available(PROMETHEUS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = serve(FakeBoard {
        hostname: "board-a",
        kernel: "6.1.0-rt",
        window_max_s: [0.000042, 0.000057],
        window_age_s: 1.0,
        reboot_into: None,
    });
    // Board b measures 120 µs at worst and its monitor closed its last window 20 minutes ago.
    let b = serve(FakeBoard {
        hostname: "board-b",
        kernel: "6.6.0-rt15",
        window_max_s: [0.000120, 0.000033],
        window_age_s: 1200.0,
        reboot_into: None,
    });
    // Board c boots another kernel after its second scrape.
    let c = serve(FakeBoard {
        hostname: "board-c",
        kernel: "6.1.0-rt",
        window_max_s: [0.000080, 0.000080],
        window_age_s: 2.0,
        reboot_into: Some((2, "6.6.0-rt15")),
    });
    let (prometheus, port) = start_prometheus(dir.path(), &[a, b, c]);
    // Board c's second kernel has been scraped.
    prometheus.wait_for(
        "rtlab_host_info{hostname=\"board-c\",kernel_release=\"6.6.0-rt15\"}",
        1,
        1.0,
        Duration::from_secs(60),
    );
    let url = format!("http://127.0.0.1:{port}");
    let (inst_a, inst_b, inst_c) = (format!("127.0.0.1:{a}"), format!("127.0.0.1:{b}"), format!("127.0.0.1:{c}"));

    let out = rtlab().args(["fleet", "--prometheus", &url, "--format", "json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["schema"], "rtlab.fleet/1");
    assert_eq!(report["prometheus"], url.as_str());
    let boards = report["boards"].as_array().unwrap();
    let mut instances: Vec<&str> = boards.iter().map(|b| b["instance"].as_str().unwrap()).collect();
    instances.sort();
    let mut expected = vec![inst_a.as_str(), inst_b.as_str(), inst_c.as_str()];
    expected.sort();
    assert_eq!(instances, expected);
    let board = |instance: &str| boards.iter().find(|b| b["instance"] == instance).unwrap().clone();
    let (ba, bb) = (board(&inst_a), board(&inst_b));
    assert_eq!(ba["job"], "lab");
    assert_eq!(ba["hostname"], "board-a");
    assert_eq!(ba["kernel_release"], "6.1.0-rt");
    assert_eq!(ba["preemption"], "PREEMPT_RT");
    assert_eq!(bb["hostname"], "board-b");
    assert_eq!(bb["kernel_release"], "6.6.0-rt15");
    // The worst is the served gauge's maximum over both CPUs.
    assert_eq!(ba["worst_today_ns"], 57_000);
    assert_eq!(ba["worst_week_ns"], 57_000);
    assert_eq!(bb["worst_today_ns"], 120_000);
    assert_eq!(bb["worst_week_ns"], 120_000);
    // Nothing before today, one kernel each.
    assert_eq!(ba["trend"], "new");
    assert_eq!(ba["worst_previous_days_ns"], serde_json::Value::Null);
    assert_eq!(ba["last_kernel_change"], serde_json::Value::Null);
    assert_eq!(ba["up"], true);
    assert_eq!(ba["overruns_today"], 0);
    assert_eq!(ba["lost_today"], 0);
    // Board a's last window ended a second before the scrape; board b's 20 minutes before.
    assert_eq!(ba["silent"], serde_json::Value::Null);
    assert_eq!(bb["silent"]["reason"], "no_window");
    let silent_for = bb["silent"]["for_s"].as_f64().unwrap();
    assert!((1200.0..1300.0).contains(&silent_for), "{silent_for}");
    // Board c's change: from the kernel it left to the one it runs. Its time is the old
    // kernel's last sighting at a minute step, so null when the change came within the minute.
    let bc = board(&inst_c);
    assert_eq!(bc["kernel_release"], "6.6.0-rt15");
    assert_eq!(bc["last_kernel_change"]["from"], "6.1.0-rt");
    assert_eq!(bc["last_kernel_change"]["to"], "6.6.0-rt15");
    assert_eq!(bc["worst_today_ns"], 80_000);
    assert_eq!(report["summary"], serde_json::json!({"boards": 3, "breaking": 0, "silent": 1}));

    // A bound below board b's worst: exit 1, board b named as breaking, board a not.
    let out = rtlab()
        .args(["fleet", "--prometheus", &url, "--format", "json", "--require", "timer max < 100us"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["breaking"], 1);
    for b in report["boards"].as_array().unwrap() {
        let broken = b["judgements"][0]["broken"].as_bool().unwrap();
        assert_eq!(broken, b["instance"] == inst_b.as_str(), "{b}");
    }
    let out = rtlab().args(["fleet", "--prometheus", &url, "--require", "timer max < 100us"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("3 boards, 1 breaking a requirement, 1 silent"), "{text}");
    let line_b = text.lines().find(|l| l.starts_with(&inst_b)).unwrap();
    assert!(line_b.contains("breaks timer.latency max < 100us (120.0 µs today)"), "{text}");
    let line_a = text.lines().find(|l| l.starts_with(&inst_a)).unwrap();
    assert!(!line_a.contains("breaks"), "{text}");

    // A bound above both: exit 0. The HTML page goes to -o and names both boards.
    let html = dir.path().join("fleet.html");
    let out = rtlab()
        .args(["fleet", "--prometheus", &url, "--format", "html", "--require", "timer max < 121us", "-o"])
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("3 boards, 0 breaking a requirement, 1 silent"), "{stdout}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("board-a") && page.contains("board-b") && page.contains("MET"));
    assert!(page.contains("6.1.0-rt → 6.6.0-rt15"), "board c's kernel change");

    // Prometheus' query API at a fake board's port is not there: one line, exit 2.
    let out = rtlab().args(["fleet", "--prometheus", &format!("http://127.0.0.1:{a}")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("HTTP 404"), "{stderr}");
}

/// One line on stderr, the exit code, nothing on stdout, no panic.
fn refused(args: &[&str], code: i32, words: &str) {
    let out = rtlab().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(words), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn fleet_refuses_bad_urls_and_arguments() {
    refused(&["fleet", "--prometheus", "prometheus:9090"], 2, "not an http:// URL");
    refused(&["fleet", "--prometheus", "http://:9090"], 2, "no host");
    refused(&["fleet", "--prometheus", "http://prom:99999"], 2, "bad port");
    refused(&["fleet", "--prometheus", "https://127.0.0.1:9090"], 2, "https is not supported");
    refused(&["fleet", "--prometheus", "http://127.0.0.1:9090", "--require", "timer p99 < 1us"], 2, "max only");
    refused(&["fleet", "--prometheus", "http://127.0.0.1:9090", "--require", "timer max"], 2, "--require");
    refused(&["fleet", "--prometheus", "http://127.0.0.1:9090", "--silent-after", "ten"], 2, "--silent-after");
}

#[test]
fn fleet_says_when_prometheus_is_unreachable() {
    let port = free_port();
    refused(&["fleet", "--prometheus", &format!("http://127.0.0.1:{port}")], 3, "cannot reach Prometheus");
}

#[test]
fn fleet_refuses_an_answer_that_is_not_prometheus() {
    // An HTTP server answering 200 with a web page to every path.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<html><body>Grafana</body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    refused(&["fleet", "--prometheus", &format!("http://127.0.0.1:{port}")], 2, "not a Prometheus query API answer");
}

fn contrib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/prometheus")
}

fn promtool(args: &[&str], path: &Path) -> String {
    let out = std::process::Command::new(PROMTOOL).args(args).arg(path).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "promtool {args:?} {}: {text}", path.display());
    text
}

#[test]
fn promtool_accepts_the_contrib_configuration_and_rules() {
    if !available(PROMTOOL) {
        return;
    }
    let text = promtool(&["check", "rules"], &contrib().join("rtlab.rules.yml"));
    assert!(text.contains("SUCCESS"), "{text}");
    // The full check also reads the token file the configuration names: a copy names one
    // that exists.
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("rtlab-metrics.token");
    std::fs::write(&token, "secret\n").unwrap();
    let config = std::fs::read_to_string(contrib().join("prometheus.yml")).unwrap();
    assert!(config.contains("/etc/prometheus/rtlab-metrics.token"));
    let config = config.replace("/etc/prometheus/rtlab-metrics.token", token.to_str().unwrap());
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    std::fs::copy(contrib().join("rtlab.rules.yml"), dir.path().join("rtlab.rules.yml")).unwrap();
    let text = promtool(&["check", "config"], &dir.path().join("prometheus.yml"));
    assert!(text.contains("SUCCESS"), "{text}");
    // The rules' own unit tests: each alert fires on its series, and only there.
    let text = promtool(&["test", "rules"], &contrib().join("rtlab.rules.test.yml"));
    assert!(text.contains("SUCCESS"), "{text}");
}
