//! rtlab on the kernels it judges: Debian's PREEMPT_RT kernel and its stock kernel, each
//! booted once under QEMU (contrib/guest/boot, virtme-ng, TCG on the development VM) with
//! kernel parameters, running this build's rtlab inside (tests/guest/steps.sh). Timing in a
//! TCG guest is emulated: these tests check structure, counts and invariants, never
//! latencies. Each fails under CI=true when its guest cannot boot.

mod common;

use common::guest::{guest, GuestOutcome, GuestSpec};
use common::noise::check_noise;
use common::timerlat::{check_no_tracer_error, check_timerlat_history, check_timerlat_run};
use common::{measurements, read_json, rtlab, u};
use serde_json::Value;
use std::sync::OnceLock;

/// Boot parameters of a latency-tuned machine: CPU 1 isolated, tick-less and without RCU
/// callbacks. PREEMPT_RT threads every interrupt anyway; `threadirqs` says so on the stock
/// kernel.
const RT_APPEND: &str = "isolcpus=1 nohz_full=1 rcu_nocbs=1";
const STOCK_APPEND: &str = "threadirqs";

const RT: GuestSpec = GuestSpec {
    kernel: "rt",
    append: RT_APPEND,
    steps: &["sysinfo", "split-tracefs", "split-ebpf", "timerlat", "monitor-timerlat", "noise", "rtla", "suite"],
};
const STOCK: GuestSpec = GuestSpec {
    kernel: "stock",
    append: STOCK_APPEND,
    // The contrast needs less than the 10 s the PREEMPT_RT guest measures (each second of the
    // busy loop costs several of TCG time in the attribution).
    steps: &["sysinfo", "split-tracefs", "split-ebpf", "timerlat", "monitor-timerlat", "noise:5s"],
};

static RT_OUTCOME: OnceLock<GuestOutcome> = OnceLock::new();
static STOCK_OUTCOME: OnceLock<GuestOutcome> = OnceLock::new();

fn rt_guest() -> Option<&'static GuestOutcome> {
    guest(&RT_OUTCOME, RT)
}

fn stock_guest() -> Option<&'static GuestOutcome> {
    guest(&STOCK_OUTCOME, STOCK)
}

fn distortion_codes(sysinfo: &Value) -> Vec<&str> {
    sysinfo["distortions"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap()).collect()
}

fn cpu_list(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect()
}

/// The boot parameters reached the guest's kernel and sysinfo reads them back.
fn check_boot_parameters(g: &GuestOutcome, append: &str, sysinfo: &Value) {
    let cmdline = sysinfo["host"]["kernel_cmdline"].as_str().unwrap();
    for parameter in append.split_whitespace() {
        assert!(cmdline.split_whitespace().any(|p| p == parameter), "{}: {parameter} not in {cmdline}", g.kernel);
    }
    assert_eq!(sysinfo["host"]["kernel_release"].as_str().unwrap(), g.read("uname").trim());
    assert_eq!(cpu_list(&sysinfo["host"]["online_cpus"]), vec![0, 1], "the guest has the 2 CPUs it was given");
    assert!(sysinfo["host"]["virtualization"]["guest"].as_bool().unwrap(), "QEMU is detected");
}

#[test]
fn preempt_rt_guest_sysinfo_reads_the_model_the_parameters_and_the_tracers() {
    let Some(g) = rt_guest() else { return };
    g.assert_status("sysinfo", 0);
    g.assert_status("sysinfo-json", 0);
    let sysinfo: Value = serde_json::from_str(&g.stdout("sysinfo-json")).unwrap();
    assert!(g.read("uname").contains("-rt-"), "the rt kernel was booted: {}", g.read("uname"));
    assert_eq!(sysinfo["host"]["preemption_model"], "PREEMPT_RT", "{sysinfo}");
    check_boot_parameters(g, RT_APPEND, &sysinfo);
    assert_eq!(cpu_list(&sysinfo["host"]["isolated_cpus"]), vec![1]);
    assert_eq!(cpu_list(&sysinfo["host"]["nohz_full_cpus"]), vec![1]);
    let codes = distortion_codes(&sysinfo);
    assert!(!codes.contains(&"not-preempt-rt"), "{codes:?}");
    assert!(codes.contains(&"virtual-machine") && codes.contains(&"rt-throttling"), "{codes:?}");
    // All online CPUs are measured by default, and CPU 0 is not isolated.
    assert!(codes.contains(&"no-isolated-cpus"), "{codes:?}");
    let timerlat = sysinfo["split_backends"].as_array().unwrap().iter().find(|b| b["name"] == "timerlat").unwrap();
    assert!(!timerlat["detail"].as_str().unwrap().contains("no timerlat tracer"), "this kernel has it: {timerlat}");
    let text = g.stdout("sysinfo");
    assert!(text.contains("PREEMPT_RT") && text.contains("isolated CPUs  1"), "{text}");
    assert!(text.contains(&format!("RT boot params  {RT_APPEND}\n")), "the tuning parameters are named: {text}");
    assert!(text.contains("(CPU 1 is isolated: measure there with --cpus 1)"), "{text}");
}

#[test]
fn stock_guest_sysinfo_reads_the_model_and_the_parameters() {
    let Some(g) = stock_guest() else { return };
    g.assert_status("sysinfo-json", 0);
    let sysinfo: Value = serde_json::from_str(&g.stdout("sysinfo-json")).unwrap();
    assert!(!g.read("uname").contains("-rt-"), "the stock kernel was booted: {}", g.read("uname"));
    assert_ne!(sysinfo["host"]["preemption_model"], "PREEMPT_RT", "{sysinfo}");
    check_boot_parameters(g, STOCK_APPEND, &sysinfo);
    assert!(cpu_list(&sysinfo["host"]["isolated_cpus"]).is_empty());
    let codes = distortion_codes(&sysinfo);
    assert!(codes.contains(&"not-preempt-rt"), "{codes:?}");
    let text = g.stdout("sysinfo");
    assert!(text.contains(&format!("RT boot params  {STOCK_APPEND}\n")), "{text}");
    let timerlat = sysinfo["split_backends"].as_array().unwrap().iter().find(|b| b["name"] == "timerlat").unwrap();
    assert!(timerlat["detail"].as_str().unwrap().contains("no timerlat tracer"), "{timerlat}");
}

/// A split run in a guest: every sample split or counted by reason, the parts of each split
/// sample add up exactly, one part per split sample, and the tracing state as it was.
fn check_split_run(g: &GuestOutcome, step: &str) -> Value {
    g.assert_status(step, 0);
    let run = read_json(&g.path(step).join("run.json"));
    assert_eq!(run["host"]["kernel_release"].as_str().unwrap(), g.read("uname").trim());
    let coverage = run["split"]["coverage"].as_array().unwrap();
    assert_eq!(coverage.len(), 2, "{}: one coverage entry per CPU", g.kernel);
    for c in coverage {
        let samples = u(c, "samples");
        assert!(samples > 0, "{} {step}: CPU {} measured nothing", g.kernel, c["cpu"]);
        let unsplit: u64 = c["unsplit"].as_array().unwrap().iter().map(|p| p[1].as_u64().unwrap()).sum();
        assert_eq!(u(c, "split") + unsplit, samples, "{} {step}: every sample split or accounted for: {c}", g.kernel);
        assert_eq!(u(c, "sum_within_1us"), u(c, "split"), "{} {step}: the parts add up: {c}", g.kernel);
        assert_eq!(u(c, "max_sum_error_ns"), 0, "{c}");
        let cpu = u(c, "cpu");
        let of_cpu = |metric: &str| {
            measurements(&run, metric).into_iter().find(|m| u(m, "cpu") == cpu).unwrap_or_else(|| panic!("{metric}"))
        };
        assert_eq!(u(of_cpu("timer.latency"), "count"), samples);
        for metric in ["timer.irq", "timer.sched", "timer.return"] {
            assert_eq!(u(of_cpu(metric), "count"), u(c, "split"), "{} {step} {metric}", g.kernel);
        }
        // The interrupt's start and the due time are on one clock (docs/split.md, "One clock").
        if u(c, "split") > 0 {
            let irq_min = of_cpu("timer.irq")["summary"]["min"].as_i64().unwrap();
            assert!(irq_min >= -1_000, "{} {step} CPU {cpu}: timer.irq min {irq_min} ns", g.kernel);
        }
    }
    assert_eq!(
        g.read("tracing-before"),
        g.read(&format!("tracing-after-{step}")),
        "{} {step}: tracing restored",
        g.kernel
    );
    run
}

#[test]
fn preempt_rt_guest_split_with_tracefs() {
    let Some(g) = rt_guest() else { return };
    let run = check_split_run(g, "split-tracefs");
    assert_eq!(run["split"]["backend"], "tracefs");
    assert_eq!(run["host"]["preemption_model"], "PREEMPT_RT");
}

#[test]
fn preempt_rt_guest_split_with_ebpf() {
    let Some(g) = rt_guest() else { return };
    let run = check_split_run(g, "split-ebpf");
    assert_eq!(run["split"]["backend"], "ebpf");
}

#[test]
fn stock_guest_split_with_tracefs() {
    let Some(g) = stock_guest() else { return };
    let run = check_split_run(g, "split-tracefs");
    assert_eq!(run["split"]["backend"], "tracefs");
}

#[test]
fn stock_guest_split_with_ebpf() {
    let Some(g) = stock_guest() else { return };
    let run = check_split_run(g, "split-ebpf");
    assert_eq!(run["split"]["backend"], "ebpf");
}

#[test]
fn preempt_rt_guest_runs_a_quick_suite() {
    let Some(g) = rt_guest() else { return };
    let status = g.status_of("suite");
    // 1: a judgement or requirement not met (in a TCG guest, expected); never 2 or 3.
    assert!(status == 0 || status == 1, "suite exited {status}: {}", g.stderr("suite"));
    let suite = read_json(&g.path("suite").join("suite.json"));
    assert_eq!(suite["schema"], "rtlab.suite/1");
    assert_eq!(suite["quick"], true);
    assert_eq!(suite["interrupted"], false);
    let conditions = suite["conditions"].as_array().expect("conditions");
    let names: Vec<&str> = conditions.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["interrupt", "interrupt-net", "periodic", "periodic-split"], "xenomai-rtai's conditions");
    for c in conditions {
        assert_eq!(c["status"], "done", "{c}");
        // The split is there on this kernel: no condition ran without a capability it needs.
        assert!(c.get("gaps").is_none(), "{c}");
        let run = read_json(&g.path("suite").join(c["directory"].as_str().unwrap()).join("run.json"));
        assert_eq!(run["host"]["preemption_model"], "PREEMPT_RT");
        assert_eq!(run["interrupted"], false);
    }
    assert!(g.path("suite").join("report.html").is_file());
    // The periodic task under the split: its interrupt part is measured, and the judgement
    // of the timer handler's jitter has its two cells (a TCG guest decides nothing about
    // which is lower: only that it was judged).
    let split = read_json(&g.path("suite").join("periodic-split").join("run.json"));
    assert!(split["split"]["backend"].is_string(), "{}", split["split"]);
    assert!(!measurements(&split, "timer.irq").is_empty());
    let judged = suite["judgements"].as_array().unwrap().iter().find(|j| j["id"] == "timer-handler-lowest-jitter");
    let findings = judged.expect("the timer-handler judgement")["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{findings:?}");
    assert!(findings.iter().all(|f| !f.as_str().unwrap().contains("not measured")), "{findings:?}");
}

#[test]
fn compare_of_stock_against_preempt_rt() {
    let (Some(rt), Some(stock)) = (rt_guest(), stock_guest()) else { return };
    let output = rtlab()
        .args(["compare", "--format", "json"])
        .arg(stock.path("split-tracefs"))
        .arg(rt.path("split-tracefs"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let text = report.to_string();
    for release in [stock.read("uname"), rt.read("uname")] {
        assert!(text.contains(release.trim()), "the comparison names {}", release.trim());
    }
    assert!(text.contains("timer.irq"), "the split's parts are compared");
}

#[test]
fn preempt_rt_guest_timerlat_probe_accounts_for_every_activation() {
    let Some(g) = rt_guest() else { return };
    g.assert_status("timerlat", 0);
    let run = read_json(&g.path("timerlat").join("run.json"));
    check_timerlat_run(&run, 10.0);
    assert_eq!(g.read("osnoise-before"), g.read("osnoise-after"), "the tracer's osnoise/ settings restored");
    assert!(g.read("osnoise-before").contains("timerlat_period_us="), "the kernel has osnoise/");
    assert_eq!(g.read("tracing-before"), g.read("tracing-after-timerlat"), "tracing restored");
}

/// A step that needs the timerlat tracer, on the stock kernel: exit 3 with one line, nothing
/// written where its output would go, tracing as it was.
fn check_refused_without_timerlat(g: &GuestOutcome, step: &str) {
    g.assert_status(step, 3);
    check_no_tracer_error(&g.stderr(step));
    assert!(!g.path(step).exists(), "nothing written");
    assert_eq!(g.read("tracing-before"), g.read(&format!("tracing-after-{step}")));
}

#[test]
fn stock_guest_has_no_timerlat_and_says_so() {
    let Some(g) = stock_guest() else { return };
    check_refused_without_timerlat(g, "timerlat");
}

/// The noise probe on CPU 1 of a guest: every gap charged once, run.json consistent, the
/// tracing state restored. (Under TCG a clock read alone takes microseconds: noise % there
/// says nothing about the kernel.)
/// `rtlab monitor -P timerlat` on the PREEMPT_RT kernel: three windows of the kernel's
/// timerlat threads in the history, every activation accounted for, the tracer's settings
/// and the tracing state as they were.
#[test]
fn preempt_rt_guest_monitor_records_timerlat_windows() {
    let Some(g) = rt_guest() else { return };
    g.assert_status("monitor-timerlat", 0);
    let db = g.path("monitor-timerlat").join("monitor.db");
    check_timerlat_history(&db, 2, 6);
    // Its views, on the host: the thread latency without being asked.
    let output = rtlab().arg("history").arg(&db).args(["-f", "json"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let views: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(views["metric"], "timerlat.thread");
    assert_eq!(g.read("osnoise-before-monitor"), g.read("osnoise-after-monitor"), "osnoise/ restored");
    assert_eq!(g.read("tracing-before"), g.read("tracing-after-monitor-timerlat"), "tracing restored");
}

#[test]
fn stock_guest_monitor_without_timerlat_says_so_and_writes_no_history() {
    let Some(g) = stock_guest() else { return };
    check_refused_without_timerlat(g, "monitor-timerlat");
}

fn check_guest_noise(g: &GuestOutcome) {
    g.assert_status("noise", 0);
    let run = read_json(&g.path("noise").join("run.json"));
    check_noise(&run, "idle");
    assert!(run["noise"]["attributed"].as_bool().unwrap(), "root in the guest: attributed: {}", run["noise"]);
    assert_eq!(g.read("tracing-before"), g.read("tracing-after-noise"), "{}: tracing restored", g.kernel);
}

#[test]
fn preempt_rt_guest_noise_probe_attributes_every_gap() {
    let Some(g) = rt_guest() else { return };
    check_guest_noise(g);
}

#[test]
fn stock_guest_noise_probe_attributes_every_gap() {
    let Some(g) = stock_guest() else { return };
    check_guest_noise(g);
}

/// Real `rtla timerlat hist` output of this kernel, written in the same boot, imports with
/// both contexts on both CPUs, the counts of rtla's own `count:` lines, and its exact means.
#[test]
fn preempt_rt_guest_rtla_hist_imports() {
    let Some(g) = rt_guest() else { return };
    let (_dir, _, run) = import_rtla_output(g, "rtla-hist");
    let counts = rtla_row(&g.stdout("rtla-hist"), "count:");
    for metric in ["timerlat.irq", "timerlat.thread"] {
        let ms = measurements(&run, metric);
        assert_eq!(ms.len(), 2, "{metric} on both CPUs");
        for m in ms {
            assert!(u(m, "count") > 0, "{m}");
        }
    }
    let imported: u64 = run["measurements"].as_array().unwrap().iter().map(|m| u(m, "count")).sum();
    assert_eq!(imported as f64, counts.iter().sum::<f64>(), "every sample rtla counted is imported");
}

/// Real `rtla timerlat top -q` output of this kernel imports with rtla's exact count, min,
/// average and max per CPU and context, every percentile a lower bound at the min; a
/// requirement on a percentile is MET only above rtla's exact max.
#[test]
fn preempt_rt_guest_rtla_top_imports_exact_summaries() {
    let Some(g) = rt_guest() else { return };
    let (_dir, out, run) = import_rtla_output(g, "rtla-top");
    // "  0 #4262      |      332        33       383      6943 |      389       112       544     10854"
    let text = g.stdout("rtla-top");
    let rows: Vec<Vec<u64>> = text
        .lines()
        .filter_map(|l| {
            let (head, rest) = l.split_once('#')?;
            let cpu: u64 = head.trim().parse().ok()?;
            let numbers: Vec<u64> =
                rest.split(|c: char| c == '|' || c.is_whitespace()).filter_map(|v| v.parse().ok()).collect();
            (numbers.len() == 9).then(|| [vec![cpu], numbers].concat())
        })
        .collect();
    assert_eq!(rows.len(), 2, "one row per CPU: {text}");
    let mut max_us = 0;
    for row in &rows {
        let (cpu, count) = (row[0], row[1]);
        for (metric, at) in [("timerlat.irq", 2), ("timerlat.thread", 6)] {
            let (min, avg, max) = (row[at + 1], row[at + 2], row[at + 3]);
            max_us = max_us.max(max);
            let m = measurements(&run, metric).into_iter().find(|m| u(m, "cpu") == cpu).expect("the CPU's series");
            let s = &m["summary"];
            assert_eq!(
                (u(m, "count"), u(s, "min"), s["mean"].as_f64().unwrap(), u(s, "max")),
                (count, min * 1000, (avg * 1000) as f64, max * 1000),
                "{metric} cpu{cpu}: rtla's own figures, {text}"
            );
            let lower: Vec<&str> =
                s["censored"]["lower_bound"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
            assert!(lower.contains(&"p50") && lower.contains(&"p99"), "{metric} cpu{cpu}: {lower:?}");
        }
    }
    let judged = |requirement: &str| {
        rtlab().args(["report"]).arg(&out).args(["--require", requirement]).output().unwrap().status.code()
    };
    assert_eq!(judged(&format!("timerlat.thread p99 < {}us", max_us + 1)), Some(0), "below rtla's exact max");
    assert_eq!(judged("timerlat.thread p99 < 1us"), Some(1), "below rtla's exact min");
}

/// A guest step's rtla output imported on the host (exit 0): its directory (kept while the
/// first value lives), the run's directory and its run.json.
fn import_rtla_output(g: &GuestOutcome, step: &str) -> (tempfile::TempDir, std::path::PathBuf, Value) {
    g.assert_status(step, 0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported");
    let output = rtlab()
        .args(["import", "--from", "rtla"])
        .arg(g.path(&format!("{step}.out")))
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{step}: {}", String::from_utf8_lossy(&output.stderr));
    let run = read_json(&out.join("run.json"));
    (dir, out, run)
}

/// rtla's own figures of one output: the numbers after `label` (`count:`, `avg:`, `over:`).
fn rtla_row(text: &str, label: &str) -> Vec<f64> {
    let line = text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label} line in {text}"));
    line.split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect()
}

/// A real rtla histogram that overflowed: imported as censored data, with rtla's exact
/// mean, lower bounds beyond the last bucket, and a requirement on a clipped percentile
/// never MET.
#[test]
fn preempt_rt_guest_clipped_rtla_hist_is_censored() {
    let Some(g) = rt_guest() else { return };
    let (_dir, out, run) = import_rtla_output(g, "rtla-clipped");
    let text = g.stdout("rtla-clipped");
    let (over, avg) = (rtla_row(&text, "over:"), rtla_row(&text, "avg:"));
    assert!(over.iter().any(|&o| o > 0.0), "a TCG guest's wake-ups overflow 20 µs: {text}");
    let series: Vec<&Value> = run["measurements"].as_array().unwrap().iter().collect();
    assert_eq!(series.len(), over.len(), "one series per rtla column");
    for (m, (&o, &a)) in series.iter().zip(over.iter().zip(&avg)) {
        if o > 0.0 {
            assert!(m["summary"]["censored"].is_object(), "clipped data is marked: {m}");
            let mean = m["summary"]["mean"].as_f64().unwrap();
            assert!((mean - a * 1000.0).abs() <= 1000.0, "rtla's own mean {a} µs, imported {mean} ns");
        }
    }
    // A bound below rtla's exact max (which would otherwise decide every percentile) and
    // beyond the clipped p99's lower bound, or at it: UNDECIDED or NOT MET, never MET.
    let thread_max_us = rtla_row(&text, "max:")[1];
    let requirement = format!("timerlat.thread p99 < {}us", (thread_max_us / 2.0).floor().max(1.0));
    let output = rtlab().args(["report"]).arg(&out).args(["--require", &requirement]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "a clipped p99 is never MET: {stdout}");
    assert!(stdout.contains("UNDECIDED") || stdout.contains("NOT MET"), "{stdout}");
    assert!(stdout.contains('≥'), "lower bounds are shown as such: {stdout}");
}
