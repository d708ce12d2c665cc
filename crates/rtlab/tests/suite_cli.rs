//! `rtlab suite`: the suite files of the repository, the checks of a suite file, `suite
//! list`, a suite run end to end on the simulated clock (suite.json's structure, and every
//! table value against the statistic computed here from the conditions' run.json), the
//! comparison of two suite directories, and SIGINT during a suite.

mod common;

use common::{read_json, redact, repo_root as repository, rtlab, rtlab_path};
use rtlab_analysis::{percentile, HistogramEncoding, LatencyHistogram};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn suite_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repository().join("suites"))
        .expect("suites/ at the repository root")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_suite_file_of_the_repository_is_valid_and_built_in() {
    let files = suite_files();
    assert!(!files.is_empty());
    let list = rtlab().args(["suite", "list"]).output().unwrap();
    assert_eq!(list.status.code(), Some(0));
    let list = String::from_utf8(list.stdout).unwrap();
    for file in files {
        // --check parses the file and checks every table column (condition, metric,
        // statistic, paper values per column), every figure and every condition's experiment.
        for mode in [&[][..], &["--quick"][..]] {
            let out = rtlab().args(["suite"]).arg(&file).arg("--check").args(mode).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
        }
        let name = file.file_stem().unwrap().to_str().unwrap();
        assert!(
            list.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name} is not in crates/rtlab-suite/src/file.rs BUILT_IN:\n{list}"
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(&format!("name = \"{name}\"")), "{name}: [suite] name is the file's name");
        let docs = repository().join("docs/suites").join(format!("{name}.md"));
        assert!(docs.is_file(), "{} is missing", docs.display());
    }
}

#[test]
fn suite_list_names_conditions_and_durations() {
    let out = rtlab().args(["suite", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let akamina = text.lines().find(|l| l.starts_with("akamina-2004 ")).expect("akamina-2004 listed");
    // 2 conditions x 1,500,000 samples at 100 Hz; --quick 2 x 10,000 samples + the load's 2 s settle.
    assert!(akamina.contains("unloaded, loaded") && akamina.contains("8 h 20 min") && akamina.contains("3 min 22 s"));
    // The header and this suite's line (other suites add their own lines).
    let mine: Vec<&str> = text.lines().filter(|l| l.starts_with("NAME ") || l.starts_with("akamina-2004 ")).collect();
    insta::assert_snapshot!("suite_list_akamina", mine.join("\n"));
}

const SUITE: &str = r#"
[suite]
name = "mini"
title = "A two-condition suite"
paper = "Nobody, A paper (1999)."
paper_era = "1999, a toaster"

[experiment]
probe = "timer"
interval = "1ms"
cpus = "0,1"
require = ["timer max < 1s"]

[[condition]]
name = "quiet"
title = "Without loading"
samples = 3000
needs = ["split"]

[[condition]]
name = "busy"
title = "Also without loading"
samples = 2000
quick = { samples = 500 }

[[table]]
id = "table-a"
title = "Table A - by configuration"
row_header = "OS"
columns = [
  { title = "Max quiet", condition = "quiet", metric = "timer", statistic = "max" },
  { title = "p99.9 busy", condition = "busy", metric = "timer.latency", statistic = "p99.9" },
  { title = "Range quiet", condition = "quiet", metric = "timer", statistic = "range(p1.5,p98.5)" },
  { title = "Mean busy", condition = "busy", metric = "timer", statistic = "mean" },
  { title = "Count quiet", condition = "quiet", metric = "timer", statistic = "count" },
  { title = "t1 quiet", condition = "quiet", metric = "timer.irq", statistic = "max" },
]
paper_rows = [
  { label = "Old kernel", values = ["104", "48", "12 – 14", "", "1500000", "8.5"] },
]
notes = ["A note."]

[[table]]
id = "table-b"
title = "Table B - by setting"
row_header = "Statistic"
unit = "ns"
columns = [
  { title = "CPU 0", condition = "quiet", metric = "timer", where = { cpu = 0 } },
  { title = "CPU 1", condition = "quiet", metric = "timer", where = { cpu = 1 } },
]
rows = [
  { title = "min", statistic = "min", paper = ["28", "30"] },
  { title = "max", statistic = "max", paper = ["32", "38"] },
]

[[figure]]
id = "fig-1"
title = "Figure 1 - Curves"
kind = "cumulative"
metric = "timer"
conditions = ["quiet", "busy"]
bin_width = "2us"
bin_count = 2500

[[figure]]
id = "fig-2"
title = "Figure 2 - t1"
kind = "cumulative"
metric = "timer.irq"
conditions = ["quiet"]
top_percent = 2
"#;

fn write_suite(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("mini.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the suite file on the simulated clock into `out`; returns the exit code, and stdout
/// followed by stderr.
fn run_simulated(file: &Path, out: &Path, label: &str, seed: &str, extra: &[&str]) -> (i32, String) {
    let output = rtlab()
        .args(["suite"])
        .arg(file)
        .args(["--simulate", seed, "--label", label, "--output"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap() + &String::from_utf8(output.stderr).unwrap();
    (output.status.code().unwrap(), text)
}

/// All CPUs of one metric of one run.json: merged histogram and the exact sums.
struct Distribution {
    histogram: LatencyHistogram,
    count: u64,
    min: i64,
    max: i64,
    sum: f64,
}

fn distribution(run: &Value, metric: &str, cpu: Option<u64>) -> Distribution {
    let mut d = Distribution {
        histogram: LatencyHistogram::new(rtlab_analysis::DEFAULT_MAX_NS).unwrap(),
        count: 0,
        min: i64::MAX,
        max: i64::MIN,
        sum: 0.0,
    };
    for m in run["measurements"].as_array().unwrap() {
        if m["metric"] != metric || cpu.is_some_and(|c| m["cpu"] != c) {
            continue;
        }
        let encoding: HistogramEncoding = serde_json::from_value(m["histogram"].clone()).unwrap();
        d.histogram.merge(&LatencyHistogram::decode(&encoding).unwrap()).unwrap();
        d.count += m["count"].as_u64().unwrap();
        d.min = d.min.min(m["summary"]["min"].as_i64().unwrap());
        d.max = d.max.max(m["summary"]["max"].as_i64().unwrap());
        d.sum += m["moments"]["sum"].as_f64().unwrap();
    }
    assert!(d.count > 0, "{metric} measured");
    d
}

fn nearest_rank(d: &Distribution, p: f64) -> i64 {
    percentile(&d.histogram, p / 100.0).unwrap().clamp(d.min, d.max)
}

#[test]
fn a_suite_runs_end_to_end_and_its_tables_are_the_runs_statistics() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_suite(tmp.path(), SUITE);
    let out = tmp.path().join("suite");
    let (code, stdout) = run_simulated(&file, &out, "sim", "3", &[]);
    // "quiet" needs the split, which a simulated run has not: it measures everything else,
    // and the suite says it is not complete (exit 3, everything written).
    assert_eq!(code, 3, "{stdout}");
    assert!(stdout.contains("Table A - by configuration") && stdout.contains("Report: "), "{stdout}");
    assert!(
        stdout.contains("quiet: done in ")
            && stdout.contains("partly: not measured: needs the interrupt/activation split"),
        "{stdout}"
    );
    let error = stdout.lines().find(|l| l.starts_with("rtlab: error: ")).expect("the exit's reason");
    assert!(
        error.contains(
            "conditions ran without a capability they need: quiet (not measured: needs the interrupt/activation split"
        ) && error.contains("everything else is measured"),
        "{error}"
    );

    let suite = read_json(&out.join("suite.json"));
    assert_eq!(suite["schema"], "rtlab.suite/1");
    assert_eq!(suite["suite"]["name"], "mini");
    assert_eq!((suite["label"].as_str(), suite["quick"].as_bool()), (Some("sim"), Some(false)));
    assert_eq!(suite["interrupted"], false);
    assert_eq!(suite["file_text"], SUITE);
    assert!(out.join("report.html").is_file());
    let conditions = suite["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 2);
    for (c, name) in conditions.iter().zip(["quiet", "busy"]) {
        assert_eq!(c["name"], name);
        assert_eq!(c["status"], "done");
        assert_eq!(c["directory"], name);
        assert_eq!(c["run_label"], format!("sim-{name}"));
        let run = read_json(&out.join(name).join("run.json"));
        assert_eq!(run["label"], format!("sim-{name}"));
        assert!(out.join(name).join("report.html").is_file());
    }
    assert_eq!(conditions[0]["needs"][0], "split");
    assert!(conditions[0]["gaps"][0].as_str().unwrap().contains("timer.irq"));
    assert!(conditions[0]["gaps"][0].as_str().unwrap().ends_with("a simulated run has none"));
    assert!(conditions[1].get("gaps").is_none(), "busy needs nothing");
    let quiet_run = read_json(&out.join("quiet/run.json"));
    assert!(quiet_run["split"].is_null(), "quiet ran without the split");
    assert!(suite["verdict"]["met"].as_bool().unwrap());

    // Table A: every value from the runs' run.json.
    let quiet = read_json(&out.join("quiet/run.json"));
    let busy = read_json(&out.join("busy/run.json"));
    let (q, b) = (distribution(&quiet, "timer.latency", None), distribution(&busy, "timer.latency", None));
    assert_eq!(q.count, 6000, "3000 samples on each of 2 CPUs");
    let table = &suite["tables"][0];
    assert_eq!(table["spec"]["id"], "table-a");
    let values = &table["measured"]["values"][0];
    assert_eq!(table["measured"]["label"], "sim");
    assert_eq!(values[0], serde_json::json!({"kind": "time", "ns": q.max}));
    assert_eq!(values[1], serde_json::json!({"kind": "time", "ns": nearest_rank(&b, 99.9)}));
    assert_eq!(
        values[2],
        serde_json::json!({"kind": "range", "from_ns": nearest_rank(&q, 1.5), "to_ns": nearest_rank(&q, 98.5)})
    );
    assert_eq!(values[3], serde_json::json!({"kind": "time", "ns": (b.sum / b.count as f64).round() as i64}));
    assert_eq!(values[4], serde_json::json!({"kind": "count", "count": q.count}));
    assert_eq!(values[5]["kind"], "not_measured");
    assert!(values[5]["reason"].as_str().unwrap().contains("interrupt/activation split"), "{}", values[5]);

    // Table B (settings layout): one row per statistic, a CPU per column.
    let table = &suite["tables"][1];
    for (row, statistic) in [(0, "min"), (1, "max")] {
        for cpu in [0u64, 1] {
            let d = distribution(&quiet, "timer.latency", Some(cpu));
            let expected = if statistic == "min" { d.min } else { d.max };
            assert_eq!(
                table["measured"]["values"][row][cpu as usize],
                serde_json::json!({"kind": "time", "ns": expected})
            );
        }
    }

    // The report: the paper's rows and ours, the figures, t1 not measured.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Old kernel (paper)") && html.contains("sim (rtlab)"));
    assert!(html.contains("published figures: other hardware and era"));
    assert!(html.contains("id=\"fig-1\"") && html.contains("<svg"));
    assert!(html.contains("not measured: needs the interrupt/activation split"));
    assert!(html.contains("href=\"quiet/report.html\""));
    assert!(!html.contains("quick: durations scaled down"));

    // `rtlab report SUITE_DIR` writes the same page again from suite.json and the runs.
    std::fs::remove_file(out.join("report.html")).unwrap();
    let again = rtlab().arg("report").arg(&out).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(std::fs::read_to_string(out.join("report.html")).unwrap(), html);
}

#[test]
fn quick_uses_the_quick_keys_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_suite(tmp.path(), SUITE);
    let out = tmp.path().join("suite");
    let (code, stdout) = run_simulated(&file, &out, "sim", "3", &["--quick"]);
    assert_eq!(code, 3, "quiet needs the split: {stdout}");
    assert!(stdout.contains("quick: durations scaled down, not the paper's sample counts"), "{stdout}");
    let suite = read_json(&out.join("suite.json"));
    assert_eq!(suite["quick"], true);
    let busy = read_json(&out.join("busy/run.json"));
    assert_eq!(busy["experiment"]["samples_per_cpu"], 500, "busy's quick keys");
    let quiet = read_json(&out.join("quiet/run.json"));
    assert_eq!(quiet["experiment"]["samples_per_cpu"], 3000, "quiet is short: no quick keys");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Quick: durations scaled down, not the paper&#39;s sample counts"));
}

#[test]
fn suite_tables_markdown_snapshot_and_compare_gives_one_row_per_label() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_suite(tmp.path(), SUITE);
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    assert_eq!(run_simulated(&file, &a, "kernel-a", "3", &["-q"]).0, 3, "quiet needs the split");
    assert_eq!(run_simulated(&file, &b, "kernel-b", "4", &["-q"]).0, 3);

    let md = rtlab().arg("report").arg(&a).args(["--format", "md"]).output().unwrap();
    assert_eq!(md.status.code(), Some(0));
    insta::assert_snapshot!("suite_report_md_simulate_3", redact(&String::from_utf8(md.stdout).unwrap(), tmp.path()));

    let compare = rtlab().arg("compare").arg(&a).arg(&b).args(["--format", "md"]).output().unwrap();
    assert_eq!(compare.status.code(), Some(0));
    let text = String::from_utf8(compare.stdout).unwrap();
    let table_a: Vec<&str> = text
        .split("## Table A")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("| "))
        .collect::<Vec<_>>();
    // Header, alignment, the paper's row, one row per label in the order given.
    assert_eq!(table_a.len(), 5, "{text}");
    assert!(table_a[2].starts_with("| Old kernel (paper) |"));
    assert!(table_a[3].starts_with("| **kernel-a (rtlab)** |"));
    assert!(table_a[4].starts_with("| **kernel-b (rtlab)** |"));
    // Settings layout: the paper's column, then one per label.
    assert!(
        text.contains("| Statistic | CPU 0 (paper) | CPU 0 (kernel-a) | CPU 0 (kernel-b) | CPU 1 (paper) |"),
        "{text}"
    );

    // HTML: written to --output, both labels, links to every condition's report.
    let page = tmp.path().join("cmp.html");
    let html = rtlab().arg("compare").arg(&a).arg(&b).arg("-o").arg(&page).output().unwrap();
    assert_eq!(html.status.code(), Some(0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("kernel-a (rtlab)") && html.contains("kernel-b (rtlab)"));
    assert!(html.contains("/b/busy/report.html"));

    // A suite directory and a results directory together: exit 2, saying what to give.
    let mixed = rtlab().arg("compare").arg(&a).arg(a.join("quiet")).output().unwrap();
    assert_eq!(mixed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("is not a suite directory"));
    // The condition directories are ordinary results directories.
    let runs = rtlab().arg("compare").arg(a.join("quiet")).arg(b.join("quiet")).args(["-f", "md"]).output().unwrap();
    assert_eq!(runs.status.code(), Some(0));
}

#[test]
fn malformed_suite_files_exit_2_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (SUITE.replace("interval = \"1ms\"", "intervall = \"1ms\""), "unknown field `intervall`"),
        (
            SUITE.replace("statistic = \"p99.9\"", "statistic = \"p100\""),
            "column 2 (\"p99.9 busy\"): statistic \"p100\"",
        ),
        (
            SUITE.replace(
                "condition = \"busy\", metric = \"timer.latency\"",
                "condition = \"bsy\", metric = \"timer.latency\"",
            ),
            "condition \"bsy\" is not a condition",
        ),
        (SUITE.replace("\"\", \"1500000\"", "\"1500000\""), "has 5 values for 6 columns"),
        (SUITE.replace("needs = [\"split\"]", "needs = [\"warp\"]"), "needs: \"warp\" is not a capability"),
        (
            SUITE.replace("kind = \"cumulative\"\nmetric = \"timer\"", "kind = \"pie\"\nmetric = \"timer\""),
            "kind \"pie\"",
        ),
        (SUITE.replace("quick = { samples = 500 }", "quick = { samples = 500, label = \"x\" }"), "quick.label"),
        (
            SUITE.replace("samples = 2000\n", "samples = 200000\n").replace("quick = { samples = 500 }", ""),
            "no `quick` keys",
        ),
        (SUITE.replace("[suite]", "[suite]\nname2 = 1"), "unknown field `name2`"),
        ("[suite\nname = 1".to_string(), "line 1"),
    ];
    for (text, expected) in cases {
        let file = write_suite(tmp.path(), &text);
        let out = rtlab().arg("suite").arg(&file).arg("--check").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{expected}: {stderr}");
        assert!(stderr.starts_with("rtlab: error: suite ") && stderr.contains(expected), "{expected}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
    let unknown = rtlab().args(["suite", "no-such-suite"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    let long = rtlab().arg("suite").arg(write_suite(tmp.path(), SUITE)).arg("--long").output().unwrap();
    assert_eq!(long.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&long.stderr).contains("has no long variant"));
}

#[test]
fn a_condition_that_cannot_run_fails_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let text = SUITE.replace("samples = 2000\n", "samples = 2000\nload = \"exec:argv=rtlab-no-such-program\"\n");
    let file = write_suite(tmp.path(), &text);
    let out = tmp.path().join("suite");
    let output = rtlab().arg("suite").arg(&file).args(["--simulate", "3", "-q", "-o"]).arg(&out).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("busy") && stderr.contains("rtlab-no-such-program"), "{stderr}");
    let suite = read_json(&out.join("suite.json"));
    assert_eq!(suite["conditions"][0]["status"], "done");
    assert_eq!(suite["conditions"][1]["status"], "failed");
    assert!(suite["conditions"][1]["reason"].as_str().unwrap().contains("rtlab-no-such-program"));
    let busy_cell = &suite["tables"][0]["measured"]["values"][0][1];
    assert_eq!(busy_cell["kind"], "not_measured");
    assert!(busy_cell["reason"].as_str().unwrap().starts_with("the condition failed"));
    assert!(out.join("report.html").is_file());
}

/// A condition that needs a second station is not run without --station: its cells say
/// why, the others are measured, and the file passes the check without a station.
#[test]
fn a_condition_that_needs_a_station_is_not_measured_without_one() {
    let tmp = tempfile::tempdir().unwrap();
    let text = SUITE.replace(
        "samples = 2000\nquick = { samples = 500 }\n",
        "probe = \"remote\"\nrate = \"20\"\nduration = \"10s\"\nneeds = [\"station\"]\n",
    );
    assert_ne!(text, SUITE);
    let file = write_suite(tmp.path(), &text);
    let check = rtlab().arg("suite").arg(&file).arg("--check").output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stderr));
    assert!(String::from_utf8_lossy(&check.stdout).contains("needs station"));
    let out = tmp.path().join("suite");
    let (code, text) = run_simulated(&file, &out, "sim", "3", &[]);
    assert_eq!(code, 3, "quiet still lacks the split of a simulated run: {text}");
    assert!(text.contains("busy: not measured: needs a second station (--station"), "{text}");
    let suite = read_json(&out.join("suite.json"));
    assert_eq!(suite["conditions"][0]["status"], "done");
    assert_eq!(suite["conditions"][1]["status"], "not-run");
    let busy_cell = &suite["tables"][0]["measured"]["values"][0][1];
    assert_eq!(busy_cell["kind"], "not_measured");
    assert!(busy_cell["reason"].as_str().unwrap().contains("needs a second station"), "{busy_cell}");
    // --station without --key is refused before anything runs.
    let output = rtlab().arg("suite").arg(&file).args(["--station", "192.0.2.2:7450"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn sigint_keeps_the_conditions_measured_and_marks_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    // Real runs (no --simulate): 4 s each, SIGINT during the first.
    let text = SUITE.replace("samples = 3000", "duration = \"4s\"").replace("samples = 2000", "duration = \"4s\"");
    let file = write_suite(tmp.path(), &text);
    let out = tmp.path().join("suite");
    let mut child = std::process::Command::new(rtlab_path())
        .arg("suite")
        .arg(&file)
        .args(["-q", "--label", "int", "-o"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // kill(1) sends SIGINT to the child this test started, by its id.
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130));
    let suite = read_json(&out.join("suite.json"));
    assert_eq!(suite["interrupted"], true);
    assert_eq!(suite["conditions"][0]["status"], "incomplete");
    assert_eq!(suite["conditions"][1]["status"], "not-run");
    assert_eq!(read_json(&out.join("quiet/run.json"))["interrupted"], true);
    assert!(!out.join("busy/run.json").exists());
    let cell = &suite["tables"][0]["measured"]["values"][0][1];
    assert!(cell["reason"].as_str().unwrap().contains("interrupted"), "{cell}");
}

const JUDGEMENTS: &str = r#"
[[judgement]]
id = "requirement"
title = "Below a second, or else below a microsecond"
paper = "It must stay below 1 s; 1 µs would do too."
kind = "bounds"
bounds = ["1s", "1us"]
cells = [
  { condition = "quiet", metric = "timer.latency", statistic = "max", label = "quiet max" },
  { condition = "busy", metric = "timer.latency", statistic = "max" },
]

[[judgement]]
id = "lower"
title = "Lower by half"
paper = "One configuration's maximum is half the other's."
kind = "lower-by"
percent = 50
cells = [{ condition = "quiet", metric = "timer.latency", statistic = "max" }]
"#;

#[test]
fn judgements_are_computed_from_the_runs_and_compared_across_suite_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_suite(tmp.path(), &format!("{SUITE}{JUDGEMENTS}"));
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (code, stdout) = run_simulated(&file, &a, "first", "3", &[]);
    assert_eq!(code, 3, "quiet needs the split: {stdout}");
    assert!(stdout.contains("The paper's judgement, recomputed for this machine"), "{stdout}");
    let suite = read_json(&a.join("suite.json"));
    let quiet = distribution(&read_json(&a.join("quiet/run.json")), "timer.latency", None);
    let busy = distribution(&read_json(&a.join("busy/run.json")), "timer.latency", None);
    let j = &suite["judgements"][0];
    assert_eq!(j["id"], "requirement");
    assert_eq!(j["met"], true, "every maximum is below 1 s: {j}");
    assert_eq!(j["values_ns"], serde_json::json!([quiet.max, busy.max]));
    assert_eq!(j["conclusion"], "This machine meets the paper's requirement (1,000,000.0 µs).");
    assert!(j["findings"][1].as_str().unwrap().starts_with("< 1.0 µs, the alternative: not met"), "{j}");
    assert!(j["findings"][2].as_str().unwrap().contains("quiet max"), "{j}");
    let lower = &suite["judgements"][1];
    assert_eq!(lower["values_ns"], serde_json::json!([quiet.max]));
    assert!(lower["met"].is_null(), "one configuration cannot check a statement between two");
    let html = std::fs::read_to_string(a.join("report.html")).unwrap();
    assert!(
        html.contains("id=\"judgement\"") && html.contains("This machine meets the paper"),
        "the judgement section"
    );

    // A second run on another seed: the comparison names each pair.
    let (code, _) = run_simulated(&file, &b, "second", "4", &[]);
    assert_eq!(code, 3);
    let other = distribution(&read_json(&b.join("quiet/run.json")), "timer.latency", None);
    let compare = rtlab().args(["compare", "--format", "md"]).arg(&a).arg(&b).output().unwrap();
    assert_eq!(compare.status.code(), Some(0), "{}", String::from_utf8_lossy(&compare.stderr));
    let md = String::from_utf8(compare.stdout).unwrap();
    let (high, low) = if quiet.max > other.max { ("first", "second") } else { ("second", "first") };
    assert_ne!(quiet.max, other.max, "two seeds, two maxima");
    assert!(md.contains(&format!("**{low} (")) && md.contains(&format!("lower than {high} (")), "{md}");
}

/// A figure of one condition, and judgements of the kinds added for Regnier: one whose cells
/// name figures (counted from the figure's condition and metric), one on the worst case.
const FIGURE_JUDGEMENTS: &str = r#"
[[figure]]
id = "fig-busy"
title = "Busy, per 1 µs"
kind = "histogram"
metric = "timer.latency"
conditions = ["busy"]

[[judgement]]
id = "count"
title = "Over 1,000 below a second"
paper = "over 1,000 events within [0, 1 s)"
kind = "count-within"
within = ["0us", "1s"]
count = 1000
cells = [{ figure = "fig-busy", label = "busy" }]

[[judgement]]
id = "count-split"
title = "Over 1,000 t1 below a second"
paper = "over 1,000 events within [0, 1 s)"
kind = "count-within"
within = ["0us", "1s"]
count = 1000
cells = [{ figure = "fig-2", label = "t1" }]

[[judgement]]
id = "worst"
title = "Below a second, not over two"
paper = "fast below 1 s, slow over 2 s"
kind = "worst-case"
bounds = ["1s", "2s"]
classes = ["fast", "slow"]
cells = [{ condition = "busy", metric = "timer.latency", statistic = "max" }]
"#;

#[test]
fn judgements_of_a_figure_count_what_the_figure_draws() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_suite(tmp.path(), &format!("{SUITE}{FIGURE_JUDGEMENTS}"));
    let out = tmp.path().join("a");
    let (code, stdout) = run_simulated(&file, &out, "first", "3", &[]);
    assert_eq!(code, 3, "quiet needs the split: {stdout}");
    let suite = read_json(&out.join("suite.json"));
    let busy = distribution(&read_json(&out.join("busy/run.json")), "timer.latency", None);
    let by_id = |id: &str| suite["judgements"].as_array().unwrap().iter().find(|j| j["id"] == id).unwrap().clone();
    // fig-busy draws busy's timer.latency: every sample of it is below a second.
    let count = by_id("count");
    assert_eq!(count["values_ns"], serde_json::json!([busy.count]));
    assert_eq!(count["met"], true, "{count}");
    // fig-2 draws quiet's timer.irq, which a simulated run does not have: open, and why.
    let split = by_id("count-split");
    assert!(split["met"].is_null(), "{split}");
    assert!(split["findings"][0].as_str().unwrap().contains("needs the interrupt/activation split"), "{split}");
    let worst = by_id("worst");
    assert_eq!(worst["values_ns"], serde_json::json!([busy.max]));
    assert_eq!(worst["met"], true, "{worst}");
    assert!(worst["conclusion"].as_str().unwrap().starts_with("Below 1,000,000.0 µs: the worst case is"), "{worst}");
}

#[test]
fn a_judgement_with_a_mistake_is_the_files_mistake() {
    let tmp = tempfile::tempdir().unwrap();
    for (bad, expected) in [
        (JUDGEMENTS.replace("kind = \"bounds\"", "kind = \"vibes\""), "kind \"vibes\""),
        (JUDGEMENTS.replace("bounds = [\"1s\", \"1us\"]", "bounds = [\"soon\"]"), "bounds"),
        (JUDGEMENTS.replace("condition = \"busy\"", "condition = \"nowhere\""), "nowhere"),
        (JUDGEMENTS.replace("percent = 50", ""), "needs percent"),
        (
            JUDGEMENTS.replace("percent = 50", "percent = 50\ndesigner_percent = 20"),
            "designer_percent belongs to jitter-share judgements",
        ),
        (
            JUDGEMENTS.replace(
                "{ condition = \"busy\", metric = \"timer.latency\", statistic = \"max\" }",
                "{ figure = \"nowhere\", statistic = \"max\" }",
            ),
            "figure \"nowhere\" is not a figure of this suite",
        ),
        (
            JUDGEMENTS.replace("kind = \"lower-by\"", "kind = \"count-within\"\nwithin = [\"10us\"]").replace(
                "cells = [{ condition = \"quiet\", metric = \"timer.latency\", statistic = \"max\" }]",
                "cells = [{ condition = \"quiet\", metric = \"timer.latency\" }]",
            ),
            "within: give the interval as two durations",
        ),
    ] {
        let file = write_suite(tmp.path(), &format!("{SUITE}{bad}"));
        let out = rtlab().arg("suite").arg(&file).arg("--check").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{expected}: {stderr}");
        assert!(stderr.contains("judgement") && stderr.contains(expected), "{expected}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
}

#[test]
fn a_figure_can_take_one_period_of_a_metric() {
    let tmp = tempfile::tempdir().unwrap();
    let text = r#"
[suite]
name = "periods"
title = "Two periods"

[[condition]]
name = "jitter"
probe = "jitter"
periods = "300us,1ms"
duration = "2s"

[[figure]]
id = "fig-300"
title = "The 300 µs task"
kind = "timeseries"
metric = "jitter.jitter"
conditions = ["jitter"]
where = { period = "300us" }

[[figure]]
id = "fig-none"
title = "A period never measured"
kind = "histogram"
metric = "jitter.jitter"
conditions = ["jitter"]
where = { period = "700us" }
"#;
    let file = write_suite(tmp.path(), text);
    let out = tmp.path().join("suite");
    let (code, stdout) = run_simulated(&file, &out, "sim", "5", &[]);
    assert_eq!(code, 0, "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let figure = html.split("id=\"fig-300\"").nth(1).expect("the 300 µs figure is drawn");
    assert!(figure.split("</figure>").next().unwrap().contains("<svg"));
    let missing = html.split("id=\"fig-none\"").nth(1).expect("the other figure says why it is missing");
    assert!(
        missing.contains("no jitter.jitter measurements at period 700us"),
        "{}",
        &missing[..300.min(missing.len())]
    );
}

/// A real suite where the split cannot run (a user who may not trace: `nobody` when the
/// tests run as root, else the user running them): the condition that needs it runs without
/// it, measures t2, its t1 cell reads "not measured" with the split check's reason, and the
/// suite exits 3 with everything written.
#[test]
fn a_real_suite_without_tracing_measures_all_but_the_split_and_exits_3() {
    let text = r#"
[suite]
name = "nosplit"
title = "A split condition, run by a user who may not trace"
[experiment]
probe = "timer"
interval = "1ms"
cpus = "0"
[[condition]]
name = "unloaded"
samples = 300
needs = ["split"]
[[condition]]
name = "plain"
samples = 200
[[table]]
id = "t4"
title = "Table 4"
columns = [
  { title = "t1 max", condition = "unloaded", metric = "timer.irq", statistic = "max" },
  { title = "t2 max", condition = "unloaded", metric = "timer.latency", statistic = "max" },
  { title = "plain max", condition = "plain", metric = "timer.latency", statistic = "max" },
]
"#;
    let tmp = tempfile::tempdir().unwrap();
    let file = write_suite(tmp.path(), text);
    let out = tmp.path().join("suite");
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false);
    let mut command = if root {
        // nobody writes the suite directory and reads the file.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(rtlab_path());
        c
    } else {
        std::process::Command::new(rtlab_path())
    };
    let output = command.arg("suite").arg(&file).args(["--label", "user", "-o"]).arg(&out).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(3), "{stdout}{stderr}");
    assert!(stdout.contains("The split is unavailable: measuring without it"), "{stdout}");
    assert!(stdout.contains("[1/2] unloaded: done in ") && stdout.contains("partly: not measured: "), "{stdout}");
    assert!(stderr.contains("conditions ran without a capability they need: unloaded (not measured: "), "{stderr}");

    let suite = read_json(&out.join("suite.json"));
    let conditions = suite["conditions"].as_array().unwrap();
    assert_eq!(conditions[0]["status"], "done");
    let gap = conditions[0]["gaps"][0].as_str().unwrap();
    assert!(gap.starts_with("needs the interrupt/activation split (timer.irq, timer.sched), which traces the kernel: "));
    assert!(!gap.contains("--split"), "the split check's reason, without the flag: {gap}");
    assert!(conditions[1].get("gaps").is_none());
    let values = &suite["tables"][0]["measured"]["values"][0];
    assert_eq!(values[0], serde_json::json!({"kind": "not_measured", "reason": gap}));
    let t2 = distribution(&read_json(&out.join("unloaded/run.json")), "timer.latency", None);
    assert_eq!(values[1], serde_json::json!({"kind": "time", "ns": t2.max}), "t2 measured");
    assert_eq!(values[2]["kind"], "time");
    assert!(read_json(&out.join("unloaded/run.json"))["split"].is_null());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("not measured: needs the interrupt/activation split"));
}
