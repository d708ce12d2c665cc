//! cyclictest interoperability through the binary: a short real cyclictest run (when
//! cyclictest is installed and we are root) imported with `rtlab import --from cyclictest`
//! reports exactly cyclictest's count, min and max per thread and its average within its
//! rounding; `rtlab report --format cyclictest-hist|cyclictest-json` gives the files back.
//! Nothing here looks at how large the latencies are.

mod common;

use common::{euid, measurements, on_path, read_json, rtlab, run_json};
use serde_json::Value;
use std::path::Path;

/// A histogram file's footer values after `label`.
fn footer(text: &str, label: &str) -> Vec<u64> {
    let line = text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label} line"));
    line[label.len()..].split_whitespace().map(|v| v.parse().unwrap()).collect()
}

/// Per thread, the non-empty (bucket, count) rows of a histogram file.
fn buckets(text: &str) -> Vec<Vec<(u64, u64)>> {
    let threads = footer(text, "# Min Latencies:").len();
    let mut out = vec![Vec::new(); threads];
    for line in text.lines().skip_while(|l| *l != "# Histogram").skip(1).take_while(|l| !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        let bucket: u64 = words.next().unwrap().parse().unwrap();
        for (t, count) in words.take(threads).enumerate() {
            let count: u64 = count.parse().unwrap();
            if count > 0 {
                out[t].push((bucket, count));
            }
        }
    }
    out
}

fn latency(run: &Value) -> Vec<&Value> {
    measurements(run, "timer.latency")
}

fn import(source: &Path, dir: &Path) {
    let output =
        rtlab().args(["import", "--from", "cyclictest", "-q"]).arg(source).arg("-o").arg(dir).output().unwrap();
    assert!(output.status.success(), "import {}: {}", source.display(), String::from_utf8_lossy(&output.stderr));
}

fn export(dir: &Path, format: &str, file: &Path) -> String {
    let output = rtlab().arg("report").arg(dir).args(["--format", format, "-o"]).arg(file).output().unwrap();
    assert!(output.status.success(), "report {format}: {}", String::from_utf8_lossy(&output.stderr));
    std::fs::read_to_string(file).unwrap()
}

#[test]
fn real_cyclictest_run_round_trips() {
    if on_path("cyclictest").is_none() {
        eprintln!("SKIPPED: cyclictest is not on PATH (apt-get install rt-tests)");
        return;
    }
    if euid() != 0 {
        eprintln!("SKIPPED: cyclictest -p95 -m needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (hist_file, json_file) = (tmp.path().join("cyclictest.hist"), tmp.path().join("cyclictest.json"));
    let status = std::process::Command::new("cyclictest")
        .args(["-m", "-p95", "-i1000", "-a", "-t", "-q", "-l", "2000", "-h", "20000", "--histfile"])
        .arg(&hist_file)
        .arg("--json")
        .arg(&json_file)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "cyclictest failed");
    let hist_text = std::fs::read_to_string(&hist_file).unwrap();
    let json: Value = read_json(&json_file);

    // The histogram file: count = rows + overflows, min and max exact, mean truncates to
    // the printed Avg (when nothing overflowed: overflows are counted at the bound).
    let (from_hist, from_json) = (tmp.path().join("from-hist"), tmp.path().join("from-json"));
    import(&hist_file, &from_hist);
    let run = run_json(&from_hist);
    let (mins, avgs, maxes, overflows) = (
        footer(&hist_text, "# Min Latencies:"),
        footer(&hist_text, "# Avg Latencies:"),
        footer(&hist_text, "# Max Latencies:"),
        footer(&hist_text, "# Histogram Overflows:"),
    );
    let rows = buckets(&hist_text);
    let threads = latency(&run);
    assert_eq!(threads.len(), mins.len());
    for (t, m) in threads.iter().enumerate() {
        let in_rows: u64 = rows[t].iter().map(|b| b.1).sum();
        assert_eq!(m["count"], in_rows + overflows[t], "thread {t} count");
        // cyclictest's files sometimes hold a thread a few loops short of -l (1995 and 1998
        // seen on this VM): the file's own count is asserted exactly above, -l only roughly.
        let count = m["count"].as_u64().unwrap();
        assert!((1900..=2000).contains(&count), "-l 2000: thread {t} recorded {count}");
        assert_eq!(m["summary"]["min"], mins[t] * 1000, "thread {t} min");
        assert_eq!(m["summary"]["max"], maxes[t] * 1000, "thread {t} max");
        let mean_us = m["summary"]["mean"].as_f64().unwrap() / 1000.0;
        if overflows[t] == 0 {
            assert_eq!(mean_us as u64, avgs[t], "thread {t} mean");
        }
    }

    // The JSON of the same run: count = cycles, min and max exact, mean within avg's two
    // decimals; the same samples as the histogram file.
    import(&json_file, &from_json);
    let run_j = run_json(&from_json);
    for (t, (m, h)) in latency(&run_j).iter().zip(&threads).enumerate() {
        let thread = &json["thread"][t.to_string()];
        assert_eq!(m["count"], thread["cycles"], "thread {t} cycles");
        assert_eq!(m["summary"]["min"], thread["min"].as_i64().unwrap() * 1000, "thread {t} min");
        assert_eq!(m["summary"]["max"], thread["max"].as_i64().unwrap() * 1000, "thread {t} max");
        assert_eq!(m["cpu"], thread["cpu"]);
        if overflows[t] == 0 {
            let mean_us = m["summary"]["mean"].as_f64().unwrap() / 1000.0;
            assert!((mean_us - thread["avg"].as_f64().unwrap()).abs() <= 0.005 + 1e-9, "thread {t} mean {mean_us}");
        }
        assert_eq!(m["moments"], h["moments"], "thread {t}: histogram file and JSON hold the same samples");
    }

    // Back out: the histogram file from either import has the original's buckets and
    // footer (from the histogram file: the whole file, byte for byte); the JSON comes back.
    let again = export(&from_hist, "cyclictest-hist", &tmp.path().join("again.hist"));
    assert_eq!(buckets(&again), rows);
    assert_eq!(again, hist_text);
    let from_json_hist = export(&from_json, "cyclictest-hist", &tmp.path().join("from-json.hist"));
    assert_eq!(buckets(&from_json_hist), rows);
    for label in ["# Total:", "# Min Latencies:", "# Avg Latencies:", "# Max Latencies:", "# Histogram Overflows:"] {
        assert_eq!(footer(&from_json_hist, label), footer(&hist_text, label), "{label}");
    }
    let json_again = export(&from_json, "cyclictest-json", &tmp.path().join("again.json"));
    assert_eq!(json_again, std::fs::read_to_string(&json_file).unwrap());
}

#[test]
fn a_damaged_file_exits_2_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("broken.hist");
    std::fs::write(&file, "# Histogram\n000001 000002\n000002 0000x1\n").unwrap();
    let output = rtlab()
        .args(["import", "--from", "cyclictest"])
        .arg(&file)
        .arg("-o")
        .arg(tmp.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("{}:3: not a histogram row", file.display())), "{stderr}");
    assert!(!tmp.path().join("out").join("run.json").exists(), "nothing saved");
}

/// The real files of the censored-data fixtures (crates/rtlab-report/tests/fixtures/import).
fn import_fixture(dir: &str, name: &str) -> std::path::PathBuf {
    common::repo_root().join("crates/rtlab-report/tests/fixtures/import").join(dir).join(name)
}

/// `rtlab report DIR --require R`: (exit code, stdout).
fn report_with(dir: &Path, requirement: &str) -> (i32, String) {
    let output = rtlab().arg("report").arg(dir).args(["--require", requirement]).output().unwrap();
    (output.status.code().unwrap(), String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn an_overflowing_histogram_is_judged_on_the_sources_figures_and_lower_bounds() {
    // A real `cyclictest -m -p 90 -i 1000 -l 3000 -h 20 -q` of this VM: 2,566 of 3,000
    // samples beyond the 20 µs histogram; cyclictest's Avg is 50 µs.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("h20");
    import(&import_fixture("cyclictest", "real-2.4-h20-overflowing.hist"), &dir);
    let run = run_json(&dir);
    let m = latency(&run)[0];
    assert_eq!(m["summary"]["mean"].as_f64(), Some(50_000.0), "cyclictest's Avg, not the buckets'");
    let censored = &m["summary"]["censored"];
    assert_eq!((censored["above_ns"].as_i64(), censored["count"].as_u64()), (Some(20_000), Some(2566)));
    assert!(censored["lower_bound"].as_array().unwrap().iter().any(|v| v == "p99"));
    // p99 is at least 20 µs: below 50 µs it cannot be decided; it already breaks 10 µs.
    let (code, out) = report_with(&dir, "timer p99 < 50us");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Verdict: UNDECIDED"), "{out}");
    assert!(out.contains("≥ 20.0") && out.contains("50.0"), "{out}");
    // The header claims bucket precision only for the percentiles within the histogram.
    assert!(out.contains("above it): percentiles within the histogram."), "{out}");
    let (code, out) = report_with(&dir, "timer p99 < 10us");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Verdict: NOT MET") && out.contains("was ≥ 20.0 µs"), "{out}");
    // The source's exact mean decides.
    let (code, out) = report_with(&dir, "timer mean < 100us");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn an_overflowing_rtla_histogram_is_judged_on_rtlas_avg() {
    // rtla timerlat hist -d 10s -E 20 -b 1 -c 0 on Debian's PREEMPT_RT 6.1 under QEMU:
    // 2,999 of 3,002 IRQ samples in over:, rtla's avg 1791 µs.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rtla");
    let output = rtlab()
        .args(["import", "--from", "rtla", "-q"])
        .arg(import_fixture("rtla", "timerlat-6.1-rt-guest-E20-b1.txt"))
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let run = run_json(&dir);
    let irq = measurements(&run, "timerlat.irq")[0];
    assert_eq!(irq["summary"]["mean"].as_f64(), Some(1_791_000.0));
    let (code, out) = report_with(&dir, "timerlat.irq mean < 300us");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Verdict: NOT MET") && out.contains("1791.0"), "{out}");
    let (code, out) = report_with(&dir, "timerlat.irq p99 < 300us");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Verdict: UNDECIDED"), "{out}");
}
