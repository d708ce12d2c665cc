//! `rtlab import --from jitterdebugger` on a real jitterdebugger run, when jitterdebugger is
//! installed (CI installs it; elsewhere the test prints SKIPPED). Only counts and extremes
//! are compared, never latencies: the import must hold every sample of both files.

mod common;

use common::{on_path, read_json, rtlab, run_json};
use std::path::Path;
use std::process::{Command, Stdio};

/// Size of jitterdebugger's packed `struct latency_sample`.
const RECORD_BYTES: usize = 28;

/// samples.raw per thread: (records, values in the file's unit).
fn records(path: &Path) -> std::collections::BTreeMap<u64, Vec<u64>> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len() % RECORD_BYTES, 0, "samples.raw holds whole records");
    let mut threads: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for record in bytes.chunks_exact(RECORD_BYTES) {
        let thread = u32::from_le_bytes(record[0..4].try_into().unwrap()) as u64;
        threads.entry(thread).or_default().push(u64::from_le_bytes(record[20..28].try_into().unwrap()));
    }
    threads
}

#[test]
fn a_real_jitterdebugger_run_imports_with_every_sample() {
    let Some(jitterdebugger) = on_path("jitterdebugger") else {
        eprintln!("SKIPPED: jitterdebugger is not on PATH");
        return;
    };
    if common::euid() != 0 {
        eprintln!("SKIPPED: jitterdebugger needs root (SCHED_FIFO threads, mlockall)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("jd");
    let output = Command::new(&jitterdebugger)
        .args(["-D", "2s", "-s", "-o"])
        .arg(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("jitterdebugger runs");
    if !output.status.success() {
        eprintln!("SKIPPED: jitterdebugger failed here: {}", String::from_utf8_lossy(&output.stderr));
        return;
    }
    let (results, samples) = (dir.join("results.json"), dir.join("samples.raw"));
    let out = tmp.path().join("imported");
    rtlab()
        .args(["import", "--from", "jitterdebugger", "-q"])
        .arg(&results)
        .arg(&samples)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();

    let run = run_json(&out);
    let json = read_json(&results);
    let unit = json["sysinfo"]["resolution_in_ns"].as_i64().unwrap();
    let saved = records(&samples);
    let measurements = run["measurements"].as_array().unwrap();
    let threads = json["cpu"].as_object().unwrap();
    assert_eq!(measurements.len(), threads.len());
    let mut counted = 0;
    for (key, figures) in threads {
        let thread: u64 = key.parse().unwrap();
        let m = measurements.iter().find(|m| m["thread"] == format!("T:{thread}")).expect("one measurement per thread");
        let count = figures["count"].as_u64().unwrap();
        // results.json counts every sample; samples.raw may lack each thread's last few (the
        // writer stops before draining its buffer): the import holds them all.
        let records = saved.get(&thread).map_or(0, Vec::len) as u64;
        assert!(records <= count && count - records < 100, "thread {thread}: {records} records of {count}");
        assert_eq!(m["count"].as_u64().unwrap(), count, "thread {thread}");
        assert_eq!(m["summary"]["min"].as_i64().unwrap(), figures["min"].as_i64().unwrap() * unit);
        assert_eq!(m["summary"]["max"].as_i64().unwrap(), figures["max"].as_i64().unwrap() * unit);
        // Saved samples at or above the 1000 µs histogram cap are inside the import's range.
        let largest_saved = saved.get(&thread).and_then(|v| v.iter().max()).copied().unwrap_or(0) as i64 * unit;
        assert!(largest_saved <= m["summary"]["max"].as_i64().unwrap());
        counted += count;
    }
    let total_records: usize = saved.values().map(Vec::len).sum();
    assert_eq!(std::fs::metadata(&samples).unwrap().len() as usize, total_records * RECORD_BYTES);
    assert_eq!(measurements.iter().map(|m| m["count"].as_u64().unwrap()).sum::<u64>(), counted);
    assert_eq!(run["imported"]["from"], "jitterdebugger");
    assert_eq!(run["imported"]["layouts"], serde_json::json!(["jitterdebugger-results", "jitterdebugger-samples"]));
}
