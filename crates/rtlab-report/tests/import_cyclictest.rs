//! The cyclictest importer on real files (cyclictest 2.40 on the development VM, under
//! tests/fixtures/import/cyclictest/real-*) and hand-written ones for the layouts rt-tests
//! 2.4 does not write (newer histogram layout, --json without histogram, odd JSON). The
//! oracles are cyclictest's own figures, read here independently of the importer: every
//! thread's count, min and max must equal them exactly, the mean cyclictest's rounding.
//! Then bad input: each refusal names the file and line; and no input makes it panic.

use rtlab_formats::import::cyclictest::{HISTOGRAM_LIMIT_DETAIL, OVERFLOW_CYCLES_DETAIL, OVERFLOW_UNLISTED_DETAIL};
use rtlab_formats::import::{build_run, cyclictest, import, ImportFormat, ImportOptions, SourceFile, SourceUnit};
use rtlab_results::host::Policy;
use rtlab_results::run::{Detail, Measurement, RunResult};
use std::path::Path;

fn fixture(name: &str) -> SourceFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    SourceFile { path: name.to_string(), bytes }
}

fn import_one(file: SourceFile) -> RunResult {
    let path = file.path.clone();
    import(ImportFormat::Cyclictest, &[file], &ImportOptions::default()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn import_text(name: &str, text: &str) -> Result<RunResult, String> {
    import(
        ImportFormat::Cyclictest,
        &[SourceFile { path: name.into(), bytes: text.as_bytes().to_vec() }],
        &ImportOptions::default(),
    )
    .map_err(|e| e.to_string())
}

fn latency(run: &RunResult) -> Vec<&Measurement> {
    run.measurements.iter().filter(|m| m.metric == "timer.latency").collect()
}

/// The footer of a histogram file as cyclictest printed it: label -> values.
fn footer(text: &str, label: &str) -> Vec<u64> {
    let line = text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label}"));
    line[label.len()..].split_whitespace().map(|v| v.parse().unwrap()).collect()
}

/// Per thread (bucket, count) of the non-empty rows of a histogram file.
fn rows(text: &str) -> Vec<Vec<(u64, u64)>> {
    let mut threads: Vec<Vec<(u64, u64)>> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line == "# Histogram" {
            inside = true;
            continue;
        }
        if !inside || line.starts_with('#') || line.is_empty() {
            inside &= !line.starts_with('#');
            continue;
        }
        let mut words = line.split_whitespace();
        let bucket: u64 = words.next().unwrap().parse().unwrap();
        for (t, count) in words.enumerate() {
            if threads.len() <= t {
                threads.resize(t + 1, Vec::new());
            }
            let count: u64 = count.parse().unwrap();
            if count > 0 {
                threads[t].push((bucket, count));
            }
        }
    }
    threads
}

/// Exact oracles of a histogram file: per thread, count = rows + overflows, min and max
/// as printed, and the mean truncates to the printed Avg when nothing overflowed.
fn assert_matches_histogram_file(run: &RunResult, text: &str) {
    let (mins, avgs, maxes, overflows) = (
        footer(text, "# Min Latencies:"),
        footer(text, "# Avg Latencies:"),
        footer(text, "# Max Latencies:"),
        footer(text, "# Histogram Overflows:"),
    );
    let buckets = rows(text);
    let ms = latency(run);
    assert_eq!(ms.len(), mins.len());
    for (t, m) in ms.iter().enumerate() {
        let in_rows: u64 = buckets[t].iter().map(|b| b.1).sum();
        assert_eq!(m.count, in_rows + overflows[t], "thread {t} count");
        assert_eq!(m.thread, format!("T:{t}"));
        let s = m.summary.as_ref().unwrap();
        assert_eq!(s.min, mins[t] as i64 * 1000, "thread {t} min");
        assert_eq!(s.max, maxes[t] as i64 * 1000, "thread {t} max");
        assert_eq!(m.details.get("source_avg_ns"), Some(&Detail::Float(avgs[t] as f64 * 1000.0)));
        if overflows[t] == 0 {
            // The buckets hold every value exactly (whole µs): the mean is cyclictest's.
            assert_eq!((s.mean / 1000.0) as u64, avgs[t], "thread {t} mean");
        }
    }
}

#[test]
fn real_2_4_histogram_gives_cyclictest_s_own_figures() {
    let file = fixture("real-2.4-h400.hist");
    let text = String::from_utf8(file.bytes.clone()).unwrap();
    let run = import_one(file);
    assert_matches_histogram_file(&run, &text);
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.from, "cyclictest");
    assert_eq!(info.layouts, ["cyclictest-histogram"]);
    assert_eq!(info.bucket_ns, Some(1000));
    assert_eq!(info.resolution_ns, 1000);
    assert!(info.notes.iter().any(|n| n.contains("rt-tests 2.4 histogram layout") && n.contains("400 buckets")));
    assert!(info.assumed.iter().any(|a| a.starts_with("values in µs")));
    assert!(info.assumed.iter().any(|a| a.starts_with("CPU of each thread")));
    assert!(info.assumed.iter().any(|a| a.starts_with("interval 1 ms")), "{:?}", info.assumed);
    for (t, m) in latency(&run).iter().enumerate() {
        assert_eq!(m.cpu, t, "thread index stands for the CPU");
        assert_eq!(m.details.get(HISTOGRAM_LIMIT_DETAIL), Some(&Detail::Int(400_000)));
        assert_eq!(m.interval_ns, 1_000_000);
    }
}

#[test]
fn real_2_4_json_of_the_same_run_agrees_with_its_histogram_file() {
    let hs = |m: &Measurement| m.summary.clone().unwrap();
    let hist = import_one(fixture("real-2.4-h400.hist"));
    let file = fixture("real-2.4-h400.json");
    let json: serde_json::Value = serde_json::from_slice(&file.bytes).unwrap();
    let run = import_one(file);
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.source_tool.as_deref(), Some("cyclictest 2.40"));
    assert_eq!(info.source_command_line.as_deref(), json["cmdline:"].as_str());
    assert!(info.assumed.is_empty(), "everything is recorded: {:?}", info.assumed);
    assert_eq!(run.experiment.interval_ns, 1_000_000);
    assert_eq!((run.experiment.policy, run.experiment.priority), (Policy::Fifo, 95));
    assert_eq!(run.host.hostname, json["sysinfo"]["nodename"].as_str().unwrap());
    assert_eq!(run.host.kernel_release, json["sysinfo"]["release"].as_str().unwrap());
    assert_eq!(run.start_time, "2026-11-21T08:23:01+00:00");
    for (t, (m, h)) in latency(&run).iter().zip(latency(&hist)).enumerate() {
        let thread = &json["thread"][t.to_string()];
        assert_eq!(m.count, thread["cycles"].as_u64().unwrap(), "thread {t} count");
        let s = m.summary.as_ref().unwrap();
        assert_eq!(s.min, thread["min"].as_i64().unwrap() * 1000);
        assert_eq!(s.max, thread["max"].as_i64().unwrap() * 1000);
        assert_eq!(m.cpu as u64, thread["cpu"].as_u64().unwrap());
        // Histogram file and JSON of one run: the same samples and percentiles. Two samples
        // overflowed the 400 µs histogram: the JSON's avg (two decimals) is the exact mean;
        // the file's Avg, truncated to 31 µs, is below what its buckets allow, so its mean
        // is the buckets' lower bound, marked so.
        assert_eq!((m.count, &m.histogram, s.percentiles()), (h.count, &h.histogram, hs(h).percentiles()));
        assert!((s.mean - thread["avg"].as_f64().unwrap() * 1000.0).abs() < 1e-6, "{}", s.mean);
        assert!(!s.is_lower_bound("mean") && hs(h).is_lower_bound("mean") && hs(h).mean <= s.mean);
        assert_eq!(m.details.get(HISTOGRAM_LIMIT_DETAIL), Some(&Detail::Int(400_000)));
    }
}

#[test]
fn overflows_are_counted_with_their_cycle_lists() {
    let file = fixture("real-2.4-overflow.hist");
    let text = String::from_utf8(file.bytes.clone()).unwrap();
    let run = import_one(file);
    assert_matches_histogram_file(&run, &text);
    let overflows = footer(&text, "# Histogram Overflows:");
    let avgs = footer(&text, "# Avg Latencies:");
    for (t, m) in latency(&run).iter().enumerate() {
        assert!(overflows[t] > 0, "the fixture overflows");
        assert_eq!(m.count, 600);
        assert_eq!(m.details.get("source_overflows"), Some(&Detail::Int(overflows[t] as i64)));
        // 25 listed (as many as the histogram has buckets), the rest "others".
        let list = text.lines().find(|l| l.starts_with(&format!("# Thread {t}:"))).unwrap();
        let (listed, others) = list.split_once(" # ").unwrap();
        let listed: Vec<u64> = listed.split_whitespace().skip(3).map(|c| c.parse().unwrap()).collect();
        assert_eq!(listed.len(), 25);
        let expected: Vec<String> = listed.iter().map(u64::to_string).collect();
        assert_eq!(m.details.get(OVERFLOW_CYCLES_DETAIL), Some(&Detail::Text(expected.join(" "))));
        let others: i64 = others.split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(m.details.get(OVERFLOW_UNLISTED_DETAIL), Some(&Detail::Int(others)));
        // Overflows are censored at the 25 µs bound: the mean is cyclictest's own Avg (at
        // least: the Avg is truncated, and never below what the buckets and bound allow).
        let s = m.summary.as_ref().unwrap();
        assert!(s.mean / 1000.0 >= avgs[t] as f64 && s.mean / 1000.0 < avgs[t] as f64 + 1.0, "{}", s.mean);
        assert_eq!(s.censored.as_ref().map(|c| (c.above_ns, c.count)), Some((25_000, overflows[t])));
        assert!(s.p99_999 <= s.max);
    }
    let info = run.imported.as_ref().unwrap();
    assert!(info.notes.iter().any(|n| n.contains("overflows") && n.contains("25 µs")), "{:?}", info.notes);
}

#[test]
fn captured_stdout_with_status_lines_and_escapes() {
    let file = fixture("real-2.4-stdout.txt");
    let text = String::from_utf8(file.bytes.clone()).unwrap();
    assert!(text.contains("\u{1b}[") && text.contains("policy: fifo"), "the fixture has cyclictest's screen output");
    let run = import_one(file);
    assert_matches_histogram_file(&run, &text);
    // From the "T: 0 (...) P:95 I:1000" lines.
    assert_eq!(
        (run.experiment.policy, run.experiment.priority, run.experiment.interval_ns),
        (Policy::Fifo, 95, 1_000_000)
    );
    assert!(!run.imported.as_ref().unwrap().assumed.iter().any(|a| a.starts_with("interval")));
}

#[test]
fn histofall_column_is_checked_and_left_out() {
    let file = fixture("real-2.4-histofall.txt");
    let text = String::from_utf8(file.bytes.clone()).unwrap();
    let run = import_one(file);
    assert_eq!(latency(&run).len(), 2);
    assert_matches_histogram_file(&run, &text.replace("\t", " "));
    let info = run.imported.as_ref().unwrap();
    assert!(info.notes.iter().any(|n| n.contains("-H")));
    // A damaged all-threads column is refused on its row.
    let row = text.lines().position(|l| l.starts_with("000020 ")).unwrap();
    let damaged: Vec<String> =
        text.lines().enumerate().map(|(i, l)| if i == row { format!("{}9", l) } else { l.to_string() }).collect();
    let err = import_text("h.txt", &(damaged.join("\n") + "\n")).unwrap_err();
    assert_eq!(err, format!("h.txt:{}: the all-threads column (-H) is not the sum of the threads' columns", row + 1));
}

#[test]
fn verbose_output_gives_every_sample() {
    let file = fixture("real-2.4-verbose.txt");
    let text = String::from_utf8(file.bytes.clone()).unwrap();
    let run = import_one(file);
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.layouts, ["cyclictest-verbose"]);
    assert_eq!(info.bucket_ns, None);
    assert!(info.bounded.is_empty());
    let mut expected: Vec<Vec<i64>> = vec![Vec::new(); 2];
    for line in text.lines() {
        let parts: Vec<&str> = line.split(':').map(str::trim).collect();
        if let [t, _, v] = parts[..] {
            if let (Ok(t), Ok(v)) = (t.parse::<usize>(), v.parse::<i64>()) {
                expected[t].push(v * 1000);
            }
        }
    }
    assert_eq!(expected[0].len(), 20, "-l 20");
    for (t, m) in latency(&run).iter().enumerate() {
        assert_eq!(m.count, expected[t].len() as u64);
        assert_eq!(m.moments.sum, expected[t].iter().map(|&v| v as i128).sum::<i128>());
        assert_eq!(m.moments.min, *expected[t].iter().min().unwrap());
        assert_eq!(m.moments.max, *expected[t].iter().max().unwrap());
    }
}

#[test]
fn verbose_output_names_the_cpus_it_pinned() {
    let text = "Using 1 cpus.\nThread 0 using cpu 1.\nThread 0 Interval: 1500\n       0:       0:      33\n       0:       1:      24\n";
    let run = import_text("v.txt", text).unwrap();
    assert_eq!(latency(&run)[0].cpu, 1);
    assert!(!run.imported.as_ref().unwrap().assumed.iter().any(|a| a.starts_with("CPU")));
}

#[test]
fn json_without_histogram_keeps_min_avg_max_and_cycles() {
    let file = fixture("real-2.4-nohist.json");
    let json: serde_json::Value = serde_json::from_slice(&file.bytes).unwrap();
    let run = import_one(file);
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.exact, ["min", "mean", "max"]);
    assert!(info.notes.iter().any(|n| n.contains("cyclictest ran without -h")));
    for (t, m) in latency(&run).iter().enumerate() {
        let thread = &json["thread"][t.to_string()];
        assert_eq!(m.count, 0);
        assert_eq!(m.details.get("source_cycles"), Some(&Detail::Int(thread["cycles"].as_i64().unwrap())));
        assert_eq!(m.details.get("source_min_ns"), Some(&Detail::Int(thread["min"].as_i64().unwrap() * 1000)));
        assert_eq!(m.details.get("source_max_ns"), Some(&Detail::Int(thread["max"].as_i64().unwrap() * 1000)));
        let Some(Detail::Float(avg)) = m.details.get("source_avg_ns") else { panic!("no average") };
        assert!((avg - thread["avg"].as_f64().unwrap() * 1000.0).abs() < 1e-6);
        // No -h: thread N's interval is -i plus N times -d (500 µs by default).
        assert_eq!(m.interval_ns, 1_000_000 + t as u64 * 500_000);
    }
    assert!(info.assumed.iter().any(|a| a.contains("interval 1000 µs")), "{:?}", info.assumed);
    assert!(info.assumed.iter().any(|a| a.contains("distance 500 µs")));
}

#[test]
fn json_in_nanoseconds_says_so_with_its_flag() {
    let file = fixture("real-2.4-nsecs.json");
    let json: serde_json::Value = serde_json::from_slice(&file.bytes).unwrap();
    assert_eq!(json["resolution_in_ns"], 1);
    let run = import_one(file);
    assert_eq!(run.imported.as_ref().unwrap().resolution_ns, 1);
    assert_eq!(run.imported.as_ref().unwrap().bucket_ns, Some(1));
    for (t, m) in latency(&run).iter().enumerate() {
        let thread = &json["thread"][t.to_string()];
        assert_eq!(m.count, thread["cycles"].as_u64().unwrap());
        assert_eq!(m.moments.min, thread["min"].as_i64().unwrap());
        assert_eq!(m.moments.max, thread["max"].as_i64().unwrap());
        assert_eq!(m.details.get(HISTOGRAM_LIMIT_DETAIL), Some(&Detail::Int(100_000)));
    }
    // The file's flag wins over a contradicting --unit.
    let options = ImportOptions { unit: Some(SourceUnit::Us), ..ImportOptions::default() };
    let err = import(ImportFormat::Cyclictest, &[fixture("real-2.4-nsecs.json")], &options).unwrap_err();
    assert!(err.to_string().contains("records its values in ns"), "{err}");
}

#[test]
fn newer_layout_without_empty_buckets() {
    let file = fixture("newer-2threads.hist");
    let text = String::from_utf8(file.bytes.clone()).unwrap();
    let run = import_one(file);
    assert_matches_histogram_file(&run, &text);
    let ms = latency(&run);
    assert_eq!((ms[0].count, ms[1].count), (16, 12));
    // The size is not recorded: the lowest the rows allow, just above the highest bucket.
    for m in &ms {
        assert_eq!(m.details.get(HISTOGRAM_LIMIT_DETAIL), Some(&Detail::Int(46_000)));
    }
    assert_eq!(ms[1].moments.max, 950_000);
    assert_eq!(ms[1].details.get(OVERFLOW_CYCLES_DETAIL), Some(&Detail::Text("4 9".into())));
    let info = run.imported.as_ref().unwrap();
    assert!(info.notes.iter().any(|n| n.starts_with("newer histogram layout")));
    assert!(info.notes.iter().any(|n| n.contains("not in this layout") && n.contains("46 µs")));
}

#[test]
fn newer_layout_size_from_a_full_overflow_list() {
    let run = import_one(fixture("newer-others.hist"));
    let m = latency(&run)[0];
    assert_eq!(m.count, 16);
    assert_eq!(m.details.get(HISTOGRAM_LIMIT_DETAIL), Some(&Detail::Int(8_000)));
    assert_eq!(m.details.get(OVERFLOW_UNLISTED_DETAIL), Some(&Detail::Int(2)));
    assert_eq!((m.moments.min, m.moments.max), (3_000, 120_000));
}

#[test]
fn newer_layout_histofall_with_one_thread() {
    let run = import_one(fixture("newer-histofall-1thread.hist"));
    let m = latency(&run)[0];
    assert_eq!((m.count, m.moments.min, m.moments.max), (4, 2_000, 4_000));
}

#[test]
fn old_layout_four_threads_one_without_samples() {
    let file = fixture("old-4threads.hist");
    let run = import_one(file);
    let ms = latency(&run);
    assert_eq!(ms.iter().map(|m| m.count).collect::<Vec<_>>(), [8, 8, 4, 0]);
    assert!(ms[3].summary.is_none());
    assert_eq!(ms[2].moments.max, 5_000);
    assert!(run.imported.as_ref().unwrap().notes.iter().any(|n| n == "thread 3 recorded no samples"));
}

#[test]
fn json_from_a_newer_cyclictest_without_histogram_key() {
    let run = import_one(fixture("newer-nohist.json"));
    assert_eq!(run.label, "rig");
    assert_eq!(run.start_time, "2026-03-03T10:00:00+01:00");
    assert_eq!(run.duration_s, 10.0);
    assert_eq!(run.host.preemption_model, rtlab_results::host::PreemptionModel::PreemptRt);
    assert_eq!(run.host.machine, "aarch64");
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.source_tool.as_deref(), Some("cyclictest 2.80"));
    assert!(info.assumed.iter().any(|a| a.contains("cpu -1")));
    assert!(info.assumed.iter().any(|a| a.contains("SCHED_OTHER")), "{:?}", info.assumed);
    assert_eq!((run.experiment.policy, run.experiment.priority), (Policy::Other, 0));
    let ms = latency(&run);
    assert_eq!((ms[0].cpu, ms[1].cpu), (0, 1));
}

#[test]
fn json_quirks_thread_order_string_keys_and_overflows_without_h() {
    let run = import_one(fixture("quirks.json"));
    assert_eq!((run.experiment.policy, run.experiment.priority), (Policy::Rr, 80));
    assert_eq!(run.experiment.interval_ns, 250_000);
    assert_eq!(run.start_time, "2026-04-01T23:59:58-05:00");
    assert_eq!(run.duration_s, 3.0);
    let ms = latency(&run);
    assert_eq!(
        ms.iter().map(|m| (m.thread.as_str(), m.cpu, m.count)).collect::<Vec<_>>(),
        [("T:0", 2, 4), ("T:1", 3, 10)]
    );
    // Thread 1: 8 in the buckets ("9", "10", "12": keys are strings, in any order), 2
    // overflows at or above 13 µs (the highest bucket + 1: no -h in the command line).
    assert_eq!(ms[1].details.get("source_overflows"), Some(&Detail::Int(2)));
    assert_eq!(ms[1].details.get(HISTOGRAM_LIMIT_DETAIL), Some(&Detail::Int(13_000)));
    assert_eq!(ms[1].moments.sum, (9 * 5 + 10 * 2 + 12 + 13 + 640) as i128 * 1000);
    assert_eq!(ms[1].interval_ns, 250_000, "with a histogram every thread has -i");
    let info = run.imported.as_ref().unwrap();
    assert!(info.notes.iter().any(|n| n.contains("no overflow count") && n.contains("lower bound")));
}

/// Refusals: (file name, content, expected "FILE:LINE: reason" prefix).
#[test]
fn bad_input_is_refused_with_file_line_and_reason() {
    let good = "# Histogram\n000001 000002\t000001\n000002 000001\t000003\n# Total: 000000003 000000004\n\
                # Min Latencies: 00001 00001\n# Avg Latencies: 00001 00001\n# Max Latencies: 00002 00002\n\
                # Histogram Overflows: 00000 00000\n# Histogram Overflow at cycle number:\n# Thread 0:\n# Thread 1:\n";
    import_text("h.txt", good).expect("the base case imports");
    let cases: Vec<(String, &str)> = vec![
        (good.lines().take(4).collect::<Vec<_>>().join("\n"), "h.txt:4: the footer has no `# Min Latencies:` line"),
        (
            good.replace("# Total: 000000003", "# Total: 000000004"),
            "h.txt:4: thread 0: `# Total:` says 4 but its rows add up to 3",
        ),
        (
            good.replace("# Min Latencies: 00001 00001", "# Min Latencies: 00001 00002"),
            "h.txt:5: thread 1: `# Min Latencies:` says 2 but the lowest bucket is 1",
        ),
        (
            good.replace("# Max Latencies: 00002 00002", "# Max Latencies: 00002 00009"),
            "h.txt:7: thread 1: `# Max Latencies:` says 9 but the highest bucket is 2",
        ),
        (good.replace("000002 000001\t000003", "000002 0000x1\t000003"), "h.txt:3: not a histogram row"),
        (good.replace("000002 000001\t000003", "000002 000001"), "h.txt:3: 1 columns where the rows above have 2"),
        (good.replace("000002 000001", "000001 000001"), "h.txt:3: bucket 1 follows bucket 1"),
        (good.replace("# Histogram\n", ""), "h.txt:1: a histogram row before the `# Histogram` line"),
        (
            good.replace("# Avg Latencies: 00001 00001", "# Avg Latencies: 00001"),
            "h.txt:6: `# Avg Latencies:` has 1 values where `# Min Latencies:` has 2",
        ),
        (
            good.replace("# Histogram Overflows: 00000 00000", "# Histogram Overflows: 00000 00001")
                .replace("# Thread 1:", "# Thread 1: 00000"),
            "h.txt:7: thread 1: 1 samples overflowed, yet `# Max Latencies:` 2 is below the histogram's size 3",
        ),
        (good.replace("# Thread 1:", "# Thread 1: 00007"), "h.txt:11: thread 1: 1 overflow cycles listed and 0 others"),
        (
            good.replace("# Thread 1:", "# Thread 2:"),
            "h.txt:11: an overflow list for thread 2, but the footer has 2 threads",
        ),
        (format!("{good}# Histogram\n"), "h.txt:12: a second `# Histogram`"),
        (format!("{good}hello\n"), "h.txt:12: not cyclictest output after the histogram: \"hello\""),
        (
            good.replace("000002 000001", "99999999999999999999 000001"),
            "h.txt:3: bucket 99999999999999999999 is out of range",
        ),
        (
            good.replace("000002 000001", "2000000000000 000001"),
            "h.txt:3: bucket 2000000000000 is out of range (more than 1000 s)",
        ),
        (good.replace("000002 000001", "000002 99999999999999999"), "h.txt:3: count 99999999999999999 is out of range"),
        (
            good.replace("# Max Latencies: 00002 00002", "# Max Latencies: 00002 99999999999999999999"),
            "h.txt:7: `# Max Latencies:` value 99999999999999999999 is out of range",
        ),
        ("just some words\n".to_string(), "h.txt:1: not cyclictest output: \"just some words\""),
        ("# only comments\n".to_string(), "h.txt: no cyclictest histogram"),
        ("0:0:5\n0:1:6\n0:3:7\n".to_string(), "h.txt:3: thread 0 goes from cycle 1 to 3"),
        ("0:4:5\n".to_string(), "h.txt:1: thread 0 starts at cycle 4, not 0"),
        ("0:0:99999999999999\n".to_string(), "h.txt:1: sample value 99999999999999 is out of range"),
        ("70000:0:5\n".to_string(), "h.txt:1: thread number 70000 is out of range"),
    ];
    for (text, expected) in cases {
        let err = import_text("h.txt", &text).expect_err(expected);
        assert!(err.starts_with(expected), "expected {expected:?}\n     got {err:?}");
    }
    let mut bytes = good.as_bytes().to_vec();
    bytes.splice(30..30, [0xff, 0xfe]);
    let err =
        import(ImportFormat::Cyclictest, &[SourceFile { path: "h.txt".into(), bytes }], &ImportOptions::default())
            .unwrap_err();
    assert_eq!(err.to_string(), "h.txt:2: not UTF-8 text");
}

#[test]
fn bad_json_is_refused_with_the_line_of_the_key() {
    let good = String::from_utf8(fixture("quirks.json").bytes).unwrap();
    import_text("c.json", &good).expect("the base case imports");
    let line_of = |needle: &str| good.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let cases: Vec<(String, String)> = vec![
        (
            good.replace("\"cycles\": 10,", "\"cycles\": 10"),
            format!("c.json:{}: not valid JSON", line_of("\"min\": 9")),
        ),
        (
            good.replace("\"9\": 5", "\"nine\": 5"),
            format!("c.json:{}: thread 1: histogram entry \"nine\"", line_of("\"9\": 5")),
        ),
        (
            good.replace("\"cycles\": 10,", "\"cycles\": 7,"),
            format!("c.json:{}: thread 1: the histogram holds 8 samples, more than its 7 cycles", line_of("\"1\": {")),
        ),
        (
            good.replace("\"min\": 9,", "\"min\": 8,"),
            format!("c.json:{}: thread 1: min says 8 but the lowest bucket is 9", line_of("\"min\": 9")),
        ),
        (
            good.replace("\"cpu\": 3,", "\"cpu\": 1e30,"),
            format!("c.json:{}: thread 1: cpu 1e+30 is out of range", line_of("\"cpu\": 3")),
        ),
        (
            good.replace("\"avg\": 73.00,", "\"avg\": 1000.5,"),
            format!("c.json:{}: thread 1: avg missing or outside min..max", line_of("\"avg\": 73.00")),
        ),
        (
            good.replace("\"num_threads\": 2,", "\"num_threads\": 3,"),
            format!("c.json:{}: num_threads 3 but the file has 2 threads", line_of("num_threads")),
        ),
        (
            good.replace("\"resolution_in_ns\": 0,", "\"resolution_in_ns\": 7,"),
            format!("c.json:{}: resolution_in_ns 7", line_of("resolution_in_ns")),
        ),
        (
            good.replace("/usr/local/bin/cyclictest", "signaltest"),
            format!("c.json:{}: written by \"signaltest\", not cyclictest", line_of("cmdline:")),
        ),
        (good.replace("\"thread\": {", "\"threads\": {"), "c.json: no \"thread\" object".to_string()),
        (
            good.replace("--interval=250", "--interval=250 -h 11"),
            format!("c.json:{}: thread 1: bucket 12 is beyond the histogram's 11 buckets", line_of("\"1\": {")),
        ),
        (
            good.replace("\"min\": 9,", "\"min\": 99999999999999999,"),
            format!("c.json:{}: thread 1: min missing or out of range", line_of("\"min\": 9")),
        ),
        (
            good.replace("\"9\": 5", "\"9\": 5,\n        \"9\": 1"),
            format!("c.json:{}: not valid JSON: a key appears twice in one object", line_of("\"9\": 5") + 1),
        ),
        (good.replace("\"1\": {", "\"00\": {"), format!("c.json:{}: thread 0 appears twice", line_of("\"1\": {"))),
        ("{\"thread\": 5}".to_string(), "c.json:1: no \"thread\" object".to_string()),
        ("[1, 2]".to_string(), "c.json:1: a cyclictest --json file is an object".to_string()),
        ("{".to_string(), "c.json:1: not valid JSON".to_string()),
    ];
    for (text, expected) in cases {
        let err = import_text("c.json", &text).expect_err(&expected);
        assert!(err.starts_with(&expected), "expected {expected:?}\n     got {err:?}");
    }
}

#[test]
fn one_file_per_import() {
    let err = import(
        ImportFormat::Cyclictest,
        &[fixture("real-2.4-h400.hist"), fixture("real-2.4-h400.json")],
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.file, "real-2.4-h400.json");
    assert!(err.reason.contains("import each file separately"), "{err}");
}

#[test]
fn unit_option_reads_histograms_in_ns() {
    let options = ImportOptions { unit: Some(SourceUnit::Ns), ..ImportOptions::default() };
    let run = import(ImportFormat::Cyclictest, &[fixture("old-4threads.hist")], &options).unwrap();
    let m = latency(&run)[2];
    assert_eq!((m.moments.min, m.moments.max), (1, 5));
    let info = run.imported.as_ref().unwrap();
    assert_eq!(info.resolution_ns, 1);
    assert!(info.assumed.iter().any(|a| a == "values in ns: given with --unit ns"));
}

#[test]
fn windows_line_endings_are_read_the_same() {
    let file = fixture("real-2.4-overflow.hist");
    let unix = import_one(file.clone());
    let text = String::from_utf8(file.bytes).unwrap().replace('\n', "\r\n");
    let dos = import_text(&file.path, &text).unwrap();
    assert_eq!(unix.measurements, dos.measurements);
}

// ---------------------------------------------------------------------------------------
// Robustness: garbage, truncations and mutations of every fixture never panic, and what
// imports is a consistent run (build_run checks it). A seeded generator (xorshift), so a
// failure reproduces; the seed is in the message.
// ---------------------------------------------------------------------------------------

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const FIXTURES: [&str; 15] = [
    "real-2.4-h400.hist",
    "real-2.4-h400.json",
    "real-2.4-overflow.hist",
    "real-2.4-overflow.json",
    "real-2.4-stdout.txt",
    "real-2.4-histofall.txt",
    "real-2.4-verbose.txt",
    "real-2.4-nohist.json",
    "real-2.4-nsecs.json",
    "newer-2threads.hist",
    "newer-others.hist",
    "newer-histofall-1thread.hist",
    "old-4threads.hist",
    "newer-nohist.json",
    "quirks.json",
];

/// The parser on `bytes`; every `build_every`-th success also through build_run (which
/// is slow: a 5-digit histogram per thread), checking the run it makes.
fn must_not_panic(bytes: Vec<u8>, what: &str, build: bool) {
    let files = [SourceFile { path: "fuzz".into(), bytes }];
    let options = ImportOptions::default();
    let parsed = std::panic::catch_unwind(|| cyclictest::parse(&files, &options))
        .unwrap_or_else(|_| panic!("the parser panicked on {what}"));
    match parsed {
        Err(e) => assert!(e.to_string().starts_with("fuzz"), "{what}: the error names the file: {e}"),
        Ok(parsed) if build => {
            let built = std::panic::catch_unwind(|| build_run(ImportFormat::Cyclictest, &files, parsed, &options))
                .unwrap_or_else(|_| panic!("build_run panicked on {what}"));
            if let Ok(run) = built {
                run.check().unwrap_or_else(|e| panic!("{what}: inconsistent run: {e}"));
            }
        }
        Ok(_) => {}
    }
}

#[test]
fn truncations_never_panic() {
    for name in FIXTURES {
        let bytes = fixture(name).bytes;
        let cuts: Vec<usize> = (0..bytes.len()).filter(|&i| i % 7 == 0 || bytes[i] == b'\n').collect();
        for cut in cuts {
            must_not_panic(bytes[..cut].to_vec(), &format!("{name} cut at {cut}"), cut.is_multiple_of(50));
        }
    }
}

const INSERTS: [&[u8]; 12] = [
    b"99999999999999999999999",
    b"18446744073709551615",
    b"-9223372036854775808",
    b"1e308",
    b"\xff\xfe",
    b"\n",
    b"\t",
    b":",
    b"# Histogram\n",
    b"# Thread 0: 00001 # 99999 others\n",
    b"{\"thread\":{\"0\":{\"cycles\":1}}}",
    b"\"histogram\": {\"0\": 18446744073709551615},",
];

/// One to five edits of `bytes`: a byte replaced, a stretch cut, a hostile string
/// inserted, a digit changed (numbers grow, footers disagree), a line repeated.
fn mutate(rng: &mut XorShift, bytes: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(5) {
            0 if !bytes.is_empty() => {
                let i = at.min(bytes.len() - 1);
                bytes[i] = rng.next() as u8;
            }
            1 => {
                let end = (at + rng.below(40)).min(bytes.len());
                bytes.drain(at..end);
            }
            2 => {
                let insert = INSERTS[rng.below(INSERTS.len())];
                bytes.splice(at..at, insert.iter().copied());
            }
            3 => {
                if let Some(i) = (at..bytes.len()).find(|&i| bytes[i].is_ascii_digit()) {
                    bytes[i] = b'0' + rng.below(10) as u8;
                }
            }
            _ => {
                let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
                let end = bytes[at..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| at + p + 1);
                let line = bytes[start..end].to_vec();
                bytes.splice(start..start, line);
            }
        }
    }
}

/// Random bytes; a third of them from cyclictest's alphabet (digits, colons, '#',
/// whitespace, JSON braces), garbage that gets further into the parsers.
fn garbage(rng: &mut XorShift, round: usize) -> Vec<u8> {
    const ALPHABET: &[u8] = b"0123456789:# \t\n{}\"";
    let len = rng.below(300);
    let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    if round.is_multiple_of(3) {
        bytes.iter_mut().for_each(|b| *b = ALPHABET[*b as usize % ALPHABET.len()]);
    }
    bytes
}

/// 300 mutations of each fixture and 2000 pieces of garbage (seeded, so a failure
/// reproduces). `RTLAB_FUZZ_SECONDS=600` keeps going that long with fresh seeds:
/// `RTLAB_FUZZ_SECONDS=600 cargo test -p rtlab-report --test import_cyclictest mutations -- --nocapture`.
#[test]
fn mutations_and_garbage_never_panic() {
    let seed = 0x5eed_cafe_f00d_0001;
    let mut rng = XorShift(seed);
    for name in FIXTURES {
        let original = fixture(name).bytes;
        for round in 0..300u32 {
            let mut bytes = original.clone();
            mutate(&mut rng, &mut bytes);
            must_not_panic(bytes, &format!("{name} mutation round {round} (seed {seed:#x})"), round.is_multiple_of(10));
        }
    }
    for round in 0..2000 {
        must_not_panic(garbage(&mut rng, round), &format!("random bytes round {round} (seed {seed:#x})"), true);
    }
    let Some(seconds) = std::env::var("RTLAB_FUZZ_SECONDS").ok().and_then(|s| s.parse::<u64>().ok()) else {
        return;
    };
    let fixtures: Vec<(&str, Vec<u8>)> = FIXTURES.iter().map(|&name| (name, fixture(name).bytes)).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let (mut inputs, mut imported) = (0u64, 0u64);
    let mut round = 0usize;
    while std::time::Instant::now() < deadline {
        // Each round its own seed, printed on failure.
        let round_seed = seed ^ (round as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = XorShift(round_seed | 1);
        let bytes = if round % 10 == 9 {
            garbage(&mut rng, round)
        } else {
            let (_, original) = &fixtures[rng.below(fixtures.len())];
            let mut bytes = original.clone();
            mutate(&mut rng, &mut bytes);
            bytes
        };
        let files = [SourceFile { path: "fuzz".into(), bytes: bytes.clone() }];
        if cyclictest::parse(&files, &ImportOptions::default()).is_ok() {
            imported += 1;
        }
        must_not_panic(bytes, &format!("timed round {round} (seed {round_seed:#x})"), round.is_multiple_of(100));
        inputs += 1;
        round += 1;
    }
    eprintln!("fuzzed {seconds} s: {inputs} inputs, {imported} parsed without error, no panic");
}
