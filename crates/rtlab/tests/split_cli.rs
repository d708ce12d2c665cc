//! `rtlab run --split`: the interrupt/scheduling split of timer samples with kernel tracing.
//! Real runs need root and tracefs (CI runs as root); they assert structure and exact
//! consistency (counts add up, the parts add up to each sample), never latencies.

mod common;

use common::{euid, measurements, rtlab, rtlab_path, run_json, u};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tracing_usable() -> bool {
    if euid() != 0 {
        eprintln!("skipped: --split needs root");
        return false;
    }
    // These runs use the tracefs backend (the default); ./run-tests mounts tracefs.
    let usable = rtlab_sys::tracefs::support().iter().any(|b| b.usable && b.name == "tracefs");
    if !usable {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "tracefs unusable, and CI=true: these tests must run");
        eprintln!("skipped: the tracefs backend is not usable: {:?}", rtlab_sys::tracefs::support());
    }
    usable
}

/// Whether this rtlab has its eBPF object; without it the test says why, and fails under
/// CI=true (./run-tests installs what builds it).
fn ebpf_built() -> bool {
    let Some(problem) = rtlab_sys::tracefs::ebpf::object_problem() else { return true };
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{problem}, and CI=true: the eBPF backend must be tested");
    eprintln!("skipped: {problem}");
    false
}

/// How far two kernel reads of CLOCK_MONOTONIC may disagree (the trace clock's fast accessor
/// and the hrtimer base's read).
const CLOCK_GRANULARITY_NS: i64 = 1_000;

/// Every thread's samples are split or counted, the parts add up to each sample, and the
/// part metrics hold one value per split sample. Returns the split samples.
fn check_coverage(run: &serde_json::Value) -> u64 {
    let coverage = run["split"]["coverage"].as_array().unwrap();
    let cpus = run["experiment"]["cpus"].as_array().unwrap().len();
    assert_eq!(coverage.len(), cpus);
    let mut split_samples = 0;
    for c in coverage {
        let samples = u(c, "samples");
        let unsplit: u64 = c["unsplit"].as_array().unwrap().iter().map(|p| p[1].as_u64().unwrap()).sum();
        assert_eq!(u(c, "split") + unsplit, samples, "every sample split or accounted for: {c}");
        // The parts are differences of consecutive instants: they add up exactly.
        assert_eq!(u(c, "sum_within_1us"), u(c, "split"), "{c}");
        assert!(u(c, "split") * 10 >= samples * 9, "at least 90 % split (the issue asks 99 % on a 30 s run): {c}");
        split_samples += u(c, "split");
        let cpu = u(c, "cpu");
        let latency = measurements(run, "timer.latency").into_iter().find(|m| u(m, "cpu") == cpu).unwrap();
        assert_eq!(u(latency, "count"), samples, "the split saw every sample");
        for metric in ["timer.irq", "timer.sched", "timer.return"] {
            let m = measurements(run, metric).into_iter().find(|m| u(m, "cpu") == cpu).expect(metric);
            assert_eq!(u(m, "count"), u(c, "split"), "{metric} has one sample per split sample");
        }
        // The handling starts at the kernel's clock read that found the timer expired, on
        // the due time's clock: never before it, by more than the clock's granularity. A
        // structural invariant, not a latency bound (docs/split.md, "One clock").
        let irq = measurements(run, "timer.irq").into_iter().find(|m| u(m, "cpu") == cpu).unwrap();
        if u(c, "split") > 0 {
            let min = irq["summary"]["min"].as_i64().unwrap();
            assert!(min >= -CLOCK_GRANULARITY_NS, "timer.irq min {min} ns on CPU {cpu}: before the due time");
        }
    }
    split_samples
}

#[test]
fn split_is_refused_where_it_cannot_apply() {
    let cases: [(&[&str], &str); 7] = [
        (&["--split", "--probe", "sleep"], "--split cuts timer and net samples"),
        (&["--split-backend", "ebpf"], "--split-backend chooses the backend of --split"),
        (&["--split", "--split-backend", "ebpf", "--probe", "net"], "cuts timer samples only"),
        (&["--split", "--split-backend", "ebpf", "--explain-above", "100us"], "use --split-backend tracefs"),
        (&["--explain-above", "100us"], "--explain-above explains the samples of --split"),
        (&["--split", "--explain-above", "soon"], "--explain-above"),
        (&["--split", "--simulate", "1"], "a simulated run has no kernel to trace"),
    ];
    for (args, message) in cases {
        let dir = tempfile::tempdir().unwrap();
        let output = rtlab()
            .args(["run", "--load", "idle", "--duration", "1s", "--output"])
            .arg(dir.path().join("out"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(!dir.path().join("out").exists(), "{args:?} wrote results");
    }
}

#[test]
fn without_privilege_split_exits_3_and_says_what_is_missing() {
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
    if euid() != 0 || !setpriv {
        eprintln!("skipped: needs root and setpriv to become another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    // `rtlab run --split <extra> --load idle --duration 1s --output out` as nobody.
    let as_nobody = |extra: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(rtlab_path())
            .args(["run", "--split"])
            .args(extra)
            .args(["--load", "idle", "--duration", "1s", "--output"])
            .arg(&out)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let output = as_nobody(&[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    // The real blocker, once, with what to do: not a list of backends that all say it.
    assert!(stderr.contains("--split needs kernel tracing: tracefs "), "{stderr}");
    assert!(stderr.contains("run as root"), "{stderr}");
    assert!(!stderr.contains("timerlat") && !stderr.contains("ebpf"), "{stderr}");
    if rtlab_sys::tracefs::tracefs_root().is_none() {
        assert!(
            stderr.contains(
                "tracefs is not mounted and mounting it needs root (run as root: rtlab mounts it for the run and \
                 unmounts it afterwards; or mount it: mount -t tracefs nodev /sys/kernel/tracing)"
            ),
            "{stderr}"
        );
        assert_eq!(stderr.matches("not mounted").count(), 1, "said once: {stderr}");
    } else {
        assert!(stderr.contains("is usable only by root"), "{stderr}");
    }
    assert!(!out.join("run.json").exists());

    // The eBPF backend asked for: its own blocker, not tracefs'.
    let output = as_nobody(&["--split-backend", "ebpf"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("ebpf: "), "{stderr}");
    assert!(!stderr.contains("tracefs"), "{stderr}");
    assert!(!out.join("run.json").exists());
}

#[test]
fn sysinfo_lists_the_split_backends() {
    let output = rtlab().args(["sysinfo", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> =
        doc["split_backends"].as_array().unwrap().iter().map(|b| b["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["timerlat", "ebpf", "tracefs"]);
    let text = rtlab().arg("sysinfo").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("Interrupt/scheduling split backends"));
}

#[test]
fn a_split_run_cuts_every_sample_into_parts_that_add_up() {
    if !tracing_usable() {
        return;
    }
    let before = rtlab_sys::tracefs::tracing_state_snapshot().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output =
        rtlab().args(["run", "--split", "--load", "idle", "--duration", "3s", "--output"]).arg(&out).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(rtlab_sys::tracefs::tracing_state_snapshot().unwrap(), before, "tracefs restored");
    let run = run_json(&out);
    let split = &run["split"];
    assert_eq!(split["backend"], "tracefs");
    check_coverage(&run);
    let cpus = run["experiment"]["cpus"].as_array().unwrap().len();
    // Without --explain-above, the worst 3 samples of each thread are explained; their
    // causes add up to the sample.
    let explanations = split["explanations"].as_array().unwrap();
    assert_eq!(explanations.len(), 3 * cpus);
    for e in explanations {
        let e = &e["explanation"];
        let sum: i64 = e["causes"].as_array().unwrap().iter().map(|c| c["ns"].as_i64().unwrap()).sum();
        assert_eq!(sum, e["latency_ns"].as_i64().unwrap(), "causes sum to the sample: {e}");
    }
    assert!(stdout.contains("median interrupt latency"), "{stdout}");
}

#[test]
fn an_ebpf_split_run_cuts_every_sample_with_one_record_per_wake_up() {
    if !tracing_usable() {
        return;
    }
    if !ebpf_built() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--split", "--split-backend", "ebpf", "--load", "idle", "--duration", "3s", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    let split = &run["split"];
    assert_eq!(split["backend"], "ebpf");
    assert_eq!(split["events_lost"], 0, "no record dropped");
    let split_samples = check_coverage(&run);
    // Every split sample was cut at its own record.
    assert!(u(split, "events") >= split_samples, "{split}");
    assert!(split["explanations"].as_array().unwrap().is_empty(), "records explain nothing");
    assert!(!out.join("samples").exists() && !out.join("trace").exists(), "nothing on disk without --raw");
}

#[test]
fn auto_takes_ebpf_where_it_can_do_the_split_and_tracefs_where_not() {
    if !tracing_usable() {
        return;
    }
    if !ebpf_built() {
        return;
    }
    let cases: [(&[&str], &str, &str); 2] = [
        (&[], "ebpf", "ebpf can do this split"),
        (&["--explain-above", "1ms"], "tracefs", "not ebpf: --explain-above needs every event"),
    ];
    for (extra, backend, why) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let output = rtlab()
            .args(["run", "--split", "--split-backend", "auto", "--load", "idle", "--duration", "1s", "--quiet"])
            .args(extra)
            .arg("--output")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{extra:?}: {}", String::from_utf8_lossy(&output.stderr));
        let split = &run_json(&out)["split"];
        assert_eq!(split["backend"], backend, "{extra:?}");
        let choice = split["backend_choice"].as_str().unwrap();
        assert!(choice.contains(why), "{extra:?}: {choice}");
    }
}

#[test]
fn with_raw_a_split_run_keeps_the_trace_pages_and_the_samples() {
    if !tracing_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = rtlab()
        .args(["run", "--split", "--raw", "--load", "idle", "--duration", "2s", "--quiet", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&out);
    let mut pages_bytes = 0;
    for cpu in run["experiment"]["cpus"].as_array().unwrap() {
        let cpu = cpu.as_u64().unwrap();
        let pages = out.join("trace").join("1-idle").join("timer").join(format!("cpu{cpu}.pages"));
        let len = std::fs::metadata(&pages).unwrap_or_else(|e| panic!("{}: {e}", pages.display())).len();
        assert!(len > 0 && len.is_multiple_of(4096), "{}: {len} bytes, not whole pages", pages.display());
        pages_bytes += len;
        assert!(out.join("samples").join("1-idle").join(format!("timer-cpu{cpu}.bin")).exists());
    }
    // The pages hold what the split decoded while the run went on.
    assert!(u(&run["split"], "events") > 0 && pages_bytes > 0);
    assert!(run["split"]["backend_detail"].as_str().unwrap().contains("decoded as they are read and spooled to"));
}

#[test]
fn sigint_during_a_split_run_restores_tracefs() {
    if !tracing_usable() {
        return;
    }
    let before = rtlab_sys::tracefs::tracing_state_snapshot().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = Command::new(rtlab_path())
        .args(["run", "--split", "--load", "idle", "--duration", "30s", "--quiet", "--output"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until the session's instance exists: then tracing is on.
    let instance = rtlab_sys::tracefs::tracefs_root().unwrap().join("instances").join(format!("rtlab-{}", child.id()));
    let started = Instant::now();
    while !instance.exists() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(instance.exists(), "the tracing instance {} appeared", instance.display());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(Command::new("kill").arg("-INT").arg(child.id().to_string()).status().unwrap().success());
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("rtlab did not stop within 60 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = String::from_utf8_lossy(&child.wait_with_output().unwrap().stderr).into_owned();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(rtlab_sys::tracefs::tracing_state_snapshot().unwrap(), before, "tracefs as it was before the run");
    assert!(!instance.exists());
    let run = run_json(&out);
    assert_eq!(run["interrupted"], true);
    assert!(run["split"]["coverage"].as_array().is_some_and(|c| !c.is_empty()), "the partial run is split too");
}
