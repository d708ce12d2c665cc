//! The bisect gate (`rtlab gate`, `rtlab run --gate`, docs/gate.md) on simulated runs:
//! `--simulate-scale` makes a simulated "kernel" slower, so a synthetic git history whose
//! commits change it can be bisected for real with `git bisect run`; and every way a
//! candidate cannot be judged answers 125, every bad input 2.

mod common;

use common::{rtlab, rtlab_path};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A simulated run (idle, 2 CPUs × `samples`) into `dir`.
fn simulated_run(dir: &Path, seed: u64, scale: &str, samples: u64, extra: &[&str]) {
    let output = rtlab()
        .args(["run", "-q", "-L", "idle", "--simulate", &seed.to_string(), "--simulate-scale", scale])
        .args(["-n", &samples.to_string(), "--output"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&output.stderr));
}

/// `rtlab gate` with these arguments: exit code and stdout.
fn gate(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let output = rtlab().arg("gate").args(args).output().unwrap();
    (output.status.code(), String::from_utf8(output.stdout).unwrap(), String::from_utf8(output.stderr).unwrap())
}

fn os(p: &Path) -> &std::ffi::OsStr {
    p.as_os_str()
}

/// A copy of a run.json changed by `edit`, in its own directory.
fn edited(from: &Path, to: &Path, edit: impl FnOnce(&mut Value)) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    let mut run: Value = serde_json::from_str(&std::fs::read_to_string(from.join("run.json")).unwrap()).unwrap();
    edit(&mut run);
    std::fs::write(to.join("run.json"), serde_json::to_string(&run).unwrap()).unwrap();
    to.to_path_buf()
}

#[test]
fn good_bad_and_the_lines_it_prints() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    simulated_run(&base, 1, "1.0", 20_000, &[]);
    let same_kernel = tmp.path().join("same");
    simulated_run(&same_kernel, 2, "1.0", 20_000, &[]);
    let slower = tmp.path().join("slower");
    simulated_run(&slower, 2, "1.5", 20_000, &[]);

    let (code, stdout, stderr) = gate(&[os(&base), os(&same_kernel)]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    // One line per statistic, then the answer.
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[0].starts_with("idle timer.latency p99.9: baseline "), "{stdout}");
    assert!(lines[1].starts_with("idle timer.latency max: baseline "), "{stdout}");
    for line in &lines[..2] {
        for part in [", candidate ", ", ratio ", "95 % CI ", "allowed +"] {
            assert!(line.contains(part), "{part:?} in {line}");
        }
        assert!(line.ends_with(": not worse") || line.ends_with(": not shown worse"), "{line}");
    }
    assert!(lines[2].starts_with("gate: good (exit 0): "), "{stdout}");
    insta::assert_snapshot!("gate_simulated_good", stdout);

    let (code, stdout, _) = gate(&[os(&base), os(&slower)]);
    assert_eq!(code, Some(1), "{stdout}");
    let ratio =
        |line: &str| -> f64 { line.split("ratio ").nth(1).unwrap().split(',').next().unwrap().parse().unwrap() };
    assert!(stdout.lines().take(2).all(|l| l.ends_with(": worse") && (1.4..1.6).contains(&ratio(l))), "{stdout}");
    assert!(stdout
        .lines()
        .last()
        .unwrap()
        .starts_with("gate: bad (exit 1): worse than the baseline by more than 10 %"));
    insta::assert_snapshot!("gate_simulated_bad", stdout);

    // A tolerance of 60 % lets 1.5 times through; the statistics and metric can be chosen.
    let (code, stdout, _) = gate(&[os(&base), os(&slower), "--tolerance".as_ref(), "60%".as_ref()]);
    assert_eq!(code, Some(0), "{stdout}");
    let (code, stdout, _) =
        gate(&[os(&base), os(&slower), "--stat".as_ref(), "p50".as_ref(), "--metric".as_ref(), "timer".as_ref()]);
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.starts_with("idle timer.latency p50: "), "{stdout}");

    // The interval is the one `rtlab compare BASELINE CANDIDATE` shows for the p99.9.
    let output = rtlab().arg("compare").arg(&base).arg(&slower).args(["-f", "json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let table = report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "b-vs-a-timer.latency")
        .expect("compare's B-vs-A table");
    let row = &table["csv_rows"][0];
    let columns: Vec<&str> = table["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let raw =
        |name: &str| row[columns.iter().position(|c| *c == name).unwrap()].as_str().unwrap().parse::<i64>().unwrap();
    let (low, high) = (raw("p99.9 CI low"), raw("p99.9 CI high"));
    let (_, stdout, _) = gate(&[os(&base), os(&slower)]);
    let expected = format!("95 % CI +{:.1} to +{:.1} µs", low as f64 / 1000.0, high as f64 / 1000.0);
    assert!(stdout.lines().next().unwrap().contains(&expected), "{expected} in\n{stdout}");
}

#[test]
fn a_candidate_that_cannot_be_judged_answers_125_and_bad_input_2() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    simulated_run(&base, 1, "1.0", 20_000, &[]);
    let slower = tmp.path().join("slower");
    simulated_run(&slower, 2, "1.5", 20_000, &[]);
    let cannot = |candidate: &Path, expected: &str| {
        let (code, stdout, stderr) = gate(&[os(&base), os(candidate)]);
        assert_eq!(code, Some(125), "{stdout}{stderr}");
        let last = stdout.lines().last().unwrap();
        assert!(last.starts_with("gate: cannot judge (exit 125): "), "{stdout}");
        assert!(last.contains(expected), "{expected:?} in {last}");
    };

    // Absent or unreadable: this bisect step produced nothing to judge.
    cannot(&tmp.path().join("missing"), "cannot read the candidate");
    // Too few samples for the p99.9 (2 × 2,000 < 10,000).
    let short = tmp.path().join("short");
    simulated_run(&short, 2, "1.5", 2_000, &[]);
    cannot(&short, "4,000 samples; a p99.9 needs 10,000");
    // Censored: the histogram's ceiling (1 ms) is below the simulated spikes, so the p99.9
    // and the max lie among clamped samples.
    let clipped = tmp.path().join("clipped");
    simulated_run(&clipped, 2, "1.5", 20_000, &["--histogram-max", "1ms"]);
    cannot(&clipped, "censored: the p99.9 falls among");
    // High steal on a measured CPU, even though the candidate is worse.
    let stolen = edited(&slower, &tmp.path().join("stolen"), |run| {
        run["scenarios"][0]["activity"] = serde_json::json!({
            "window_s": 40.0, "interrupts_per_s": [], "softirqs_per_s": [], "context_switches_per_s": 100.0,
            "cpus": [{"cpu": 0, "busy": 0.1, "steal": 0.01}, {"cpu": 1, "busy": 0.1, "steal": 0.2},
                     {"cpu": 7, "busy": 0.1, "steal": 0.9}]
        });
    });
    // CPU 7 is not measured: its steal does not count.
    cannot(&stolen, "steal 20 % on CPU 1 in scenario \"idle\", above the limit of 5 %");
    let (code, _, _) = gate(&[os(&base), os(&stolen), "--max-steal".as_ref(), "25%".as_ref()]);
    assert_eq!(code, Some(1), "steal within --max-steal: judged");
    // A scenario whose loads failed, and an interrupted run.
    let failed = edited(&slower, &tmp.path().join("failed"), |run| {
        run["scenarios"][0]["load_failure"] = "cpu: exited with status 1".into();
    });
    cannot(&failed, "not measured under its loads: cpu: exited with status 1");
    let interrupted = edited(&slower, &tmp.path().join("interrupted"), |run| run["interrupted"] = true.into());
    cannot(&interrupted, "interrupted");
    // A probe that measured nothing: no samples of the metric.
    let empty = edited(&slower, &tmp.path().join("empty"), |run| {
        run["measurements"].as_array_mut().unwrap().retain(|m| m["metric"] != "timer.latency");
    });
    cannot(&empty, "no samples of timer.latency in scenario \"idle\"");

    // Bad input: 2, whatever the candidate.
    for args in [
        vec![os(&tmp.path().join("missing")), os(&slower)],
        vec![os(&short), os(&slower)],
        vec![os(&base), os(&slower), "--tolerance".as_ref(), "fast".as_ref()],
        vec![os(&base), os(&slower), "--stat".as_ref(), "mean".as_ref()],
        vec![os(&base), os(&slower), "--metric".as_ref(), "net".as_ref()],
        vec![os(&base)],
    ] {
        let (code, stdout, stderr) = gate(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(!stderr.trim().is_empty(), "{args:?}: a one-line error on stderr");
    }
    let (_, _, stderr) = gate(&[os(&short), os(&slower)]);
    assert!(stderr.contains("cannot be judged against") && stderr.contains("a p99.9 needs 10,000"), "{stderr}");
}

#[test]
fn run_gate_measures_and_judges_and_checks_the_baseline_first() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    simulated_run(&base, 1, "1.0", 20_000, &[]);
    let run = |dir: &Path, scale: &str, samples: &str, gate_args: &[&str]| {
        rtlab()
            .args(["run", "-q", "-L", "idle", "--simulate", "3", "--simulate-scale", scale, "-n", samples, "--output"])
            .arg(dir)
            .arg("--gate")
            .arg(&base)
            .args(gate_args)
            .output()
            .unwrap()
    };
    let bad = run(&tmp.path().join("bad"), "1.5", "20000", &[]);
    assert_eq!(bad.status.code(), Some(1), "{}", String::from_utf8_lossy(&bad.stderr));
    let stdout = String::from_utf8_lossy(&bad.stdout);
    assert!(stdout.lines().last().unwrap().starts_with("gate: bad (exit 1)"), "{stdout}");
    assert!(tmp.path().join("bad/run.json").is_file(), "the run is saved before it is judged");
    let good = run(&tmp.path().join("good"), "1.5", "20000", &["--gate-tolerance", "60%"]);
    assert_eq!(good.status.code(), Some(0), "{}", String::from_utf8_lossy(&good.stdout));
    let short = run(&tmp.path().join("short"), "1.0", "1000", &[]);
    assert_eq!(short.status.code(), Some(125), "{}", String::from_utf8_lossy(&short.stdout));
    // A baseline that cannot serve is bad input, said before measuring anything.
    let unfit = rtlab()
        .args(["run", "-q", "-L", "idle", "--simulate", "3", "-n", "1000", "--output"])
        .arg(tmp.path().join("never"))
        .arg("--gate")
        .arg(tmp.path().join("short"))
        .output()
        .unwrap();
    assert_eq!(unfit.status.code(), Some(2), "{}", String::from_utf8_lossy(&unfit.stderr));
    assert!(!tmp.path().join("never").exists(), "nothing measured");
    let flag = run(&tmp.path().join("flag"), "1.0", "20000", &["--gate-stat", "pwcet(1e-9)"]);
    assert_eq!(flag.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&flag.stderr).contains("--gate-stat"));
}

fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(repo)
        .args(args)
        .env("GIT_AUTHOR_NAME", "rtlab test")
        .env("GIT_AUTHOR_EMAIL", "test@rtlab.invalid")
        .env("GIT_COMMITTER_NAME", "rtlab test")
        .env("GIT_COMMITTER_EMAIL", "test@rtlab.invalid")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "git {args:?}:\n{text}");
    text
}

/// The acceptance test: a synthetic history whose commits change the simulated "kernel"
/// (`kernel.conf`: its latency scale, and how long the run may measure), bisected by `git
/// bisect run` over a script that runs `rtlab run --gate`. It must end on the first commit
/// that made the kernel slower beyond the tolerance, skip the commit whose run is too short
/// to judge, and let a 5 % slowdown (within the 10 % tolerance) pass as good.
#[test]
fn git_bisect_run_finds_the_first_bad_commit() {
    let started = std::time::Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("kernel");
    std::fs::create_dir(&repo).unwrap();
    let baseline = tmp.path().join("baseline");
    // The known-good kernel's run.
    simulated_run(&baseline, 100, "1.0", 20_000, &[]);

    git(&repo, &["init", "-q", "-b", "main"]);
    // (subject, scale, samples per CPU): the fifth commit is the first bad one.
    let history = [
        ("v1.0: the known-good kernel", "1.0", 20_000),
        ("sched: tidy comments", "1.0", 20_000),
        ("timers: 5 % slower wake-ups (within tolerance)", "1.05", 20_000),
        ("debug: a kernel whose run is cut short", "1.05", 1_000),
        ("mm: unrelated change", "1.05", 20_000),
        ("irq: the regression, 1.6 times slower", "1.6", 20_000),
        ("docs: after the regression", "1.6", 20_000),
        ("net: still slow", "1.6", 20_000),
    ];
    let mut commits = Vec::new();
    for (i, (subject, scale, samples)) in history.iter().enumerate() {
        // Each commit's run has its own seed: the noise of the measurement differs between steps.
        let conf = format!("SEED={}\nSCALE={scale}\nSAMPLES={samples}\n", 200 + i);
        std::fs::write(repo.join("kernel.conf"), conf).unwrap();
        git(&repo, &["add", "kernel.conf"]);
        git(&repo, &["commit", "-q", "-m", subject]);
        commits.push(git(&repo, &["rev-parse", "HEAD"]).trim().to_string());
    }
    let script = tmp.path().join("bisect-step.sh");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
# One bisect step: "build and boot" the kernel (read kernel.conf), measure it and judge it
# against the baseline. rtlab's 0/1/125 pass through; anything else aborts the bisect.
. ./kernel.conf
out="{runs}/$(git rev-parse --short HEAD)"
rm -rf "$out"
"{rtlab}" run -q -L idle --simulate "$SEED" --simulate-scale "$SCALE" -n "$SAMPLES" -o "$out" --gate "{baseline}"
rc=$?
case $rc in
    0|1|125) exit $rc ;;
    *) echo "rtlab exited $rc: aborting the bisect" >&2; exit 128 ;;
esac
"#,
            runs = tmp.path().join("runs").display(),
            rtlab = rtlab_path(),
            baseline = baseline.display(),
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    git(&repo, &["bisect", "start", commits.last().unwrap(), &commits[0]]);
    let log = git(&repo, &["bisect", "run", script.to_str().unwrap()]);
    let bisect_log = git(&repo, &["bisect", "log"]);
    println!("{log}\n--- git bisect log ---\n{bisect_log}");
    let first_bad = &commits[5];
    assert!(log.contains(&format!("{first_bad} is the first bad commit")), "{log}");
    assert!(log.contains("irq: the regression, 1.6 times slower"), "{log}");
    // The short run was visited and skipped, the 5 % slower commits judged good.
    assert!(bisect_log.contains(&format!("git bisect skip {}", commits[3])), "{bisect_log}");
    assert!(log.contains("gate: cannot judge (exit 125): idle timer.latency p99.9: 2,000 samples"), "{log}");
    assert!(bisect_log.contains(&format!("git bisect good {}", commits[4])), "{bisect_log}");
    assert!(log.contains("gate: bad (exit 1)"), "{log}");
    git(&repo, &["bisect", "reset"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "{:?}", started.elapsed());
}
