//! Runs with a known tail, for the pWCET's honest refusal (issue 19): the fixtures
//! `tests/fixtures/exponential-300s.run.json` (independent samples, 5 µs plus an exponential
//! of mean 20 µs: a light tail whose pWCET is defensible) and `trending-300s.run.json` (the
//! same, with a scale that grows fourfold over the run: not stationary, so its pWCET is not
//! defensible) are made here, from a fixed seed; `RTLAB_WRITE_FIXTURES=1 cargo test -p
//! rtlab-report --test synthetic_tails` writes them again. Both are 300 s of two CPUs at
//! 1 kHz (600,000 samples, 300 per-second maxima). Other crates' tests use them too
//! (crates/rtlab/tests/report_cli.rs, check_cli.rs).
//!
//! The tests here judge them at the report's level: the verdict, the terminal summary's
//! pWCET line, the JSON report's `pwcet` entries.

#[path = "support/splitmix.rs"]
mod splitmix;
use rtlab_analysis::requirement::parse_requirement;
use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_report::pwcet::{report_entries, summary_line};
use rtlab_report::verdict::judge_run;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportSet, SourcedRun};
use rtlab_results::verdict::Outcome;
use splitmix::SplitMix64;
use std::path::{Path, PathBuf};

const SECONDS: usize = 300;
const RATE_HZ: usize = 1_000;
const CPUS: usize = 2;

/// A run of `SECONDS` s on `CPUS` CPUs at `RATE_HZ` whose latency at second `t` is 5 µs plus
/// an exponential of mean `scale_ns(t)`.
fn synthetic(label: &str, seed: u64, scale_ns: impl Fn(usize) -> f64) -> RunResult {
    let base: RunResult = serde_json::from_str(include_str!("fixtures/simulated-2cpu.run.json")).unwrap();
    let mut run = base.clone();
    run.label = label.into();
    run.command_line = vec!["synthetic_tails.rs".into(), label.into()];
    run.duration_s = SECONDS as f64;
    run.experiment.samples_per_cpu = Some((SECONDS * RATE_HZ) as u64);
    run.scenarios.truncate(1);
    run.scenarios[0].duration_s = SECONDS as f64;
    run.verdict = None;
    let template = base.measurements.iter().find(|m| m.metric == "timer.latency").unwrap().clone();
    let mut rng = SplitMix64(seed);
    run.measurements = (0..CPUS)
        .map(|cpu| {
            let mut m = template.clone();
            let mut histogram = LatencyHistogram::new(run.experiment.histogram_max_ns).unwrap();
            let mut moments = Moments::new();
            let mut per_second = Vec::with_capacity(SECONDS);
            for t in 0..SECONDS {
                let mut max = i64::MIN;
                for _ in 0..RATE_HZ {
                    let v = 5_000 + (-(1.0 - rng.uniform()).ln() * scale_ns(t)).round() as i64;
                    histogram.record(v);
                    moments.record(v);
                    max = max.max(v);
                }
                per_second.push(Some(max));
            }
            m.cpu = cpu;
            m.thread = format!("timer/{cpu}");
            m.count = (SECONDS * RATE_HZ) as u64;
            m.cycles = m.count;
            m.overruns = 0;
            m.lost = 0;
            m.interval_ns = 1_000_000_000 / RATE_HZ as u64;
            m.summary = Summary::from_parts(&histogram, &moments);
            m.moments = moments;
            m.histogram = histogram.encode().unwrap();
            m.per_second_max_ns = per_second;
            m.block_s = 1;
            m
        })
        .collect();
    run.check().unwrap();
    run
}

fn exponential() -> RunResult {
    synthetic("exponential", 19, |_| 20_000.0)
}

fn trending() -> RunResult {
    synthetic("trending", 19, |t| 20_000.0 * (1.0 + 3.0 * t as f64 / SECONDS as f64))
}

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

#[test]
fn the_fixtures_are_what_this_file_makes() {
    for (name, run) in [("exponential-300s.run.json", exponential()), ("trending-300s.run.json", trending())] {
        let path = fixture_path(name);
        let tmp = tempfile::tempdir().unwrap();
        let made = std::fs::read_to_string(run.save(tmp.path()).unwrap()).unwrap();
        if std::env::var_os("RTLAB_WRITE_FIXTURES").is_some() {
            std::fs::write(&path, &made).unwrap();
        }
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(saved == made, "{name} is not what synthetic() makes: RTLAB_WRITE_FIXTURES=1 writes it again");
    }
}

fn set_of(run: RunResult) -> ReportSet {
    ReportSet { runs: vec![SourcedRun { source: run.label.clone(), run }], verdict: None }
}

#[test]
fn a_pwcet_requirement_on_a_run_whose_pwcet_is_not_defensible_is_undecided() {
    let run = RunResult::load(&fixture_path("trending-300s.run.json")).unwrap();
    // A bound above every sample: only an estimate could decide it.
    let requirement = parse_requirement("timer pwcet(1e-9) < 1s").unwrap();
    let v = judge_run(&run, &[requirement]).unwrap();
    assert_eq!(v.outcome(), Outcome::Undecided, "{v:#?}");
    assert!(!v.met && v.undecided);
    let check = &v.checks[0];
    let refusal = check.undecided.as_deref().expect("why it is undecided");
    assert!(refusal.starts_with("not defensible from this run — "), "{refusal}");
    assert!(refusal.contains("not stationary") || refusal.contains("cluster in time"), "{refusal}");
    assert_eq!((check.measured_ns, check.margin_ns), (None, None), "no number is quoted");
    assert_eq!(check.samples_above_bound, 0, "{check:?}");
    assert_eq!(v.summary, format!("UNDECIDED: timer.latency pwcet(1e-9) under idle: {refusal}."));

    // A requirement that fails on its own makes the verdict NOT MET, undecided or not.
    let both = [parse_requirement("timer pwcet(1e-9) < 1s").unwrap(), parse_requirement("timer max < 100us").unwrap()];
    let v = judge_run(&run, &both).unwrap();
    assert_eq!(v.outcome(), Outcome::NotMet);
    assert!(
        v.summary.starts_with("NOT MET: 1 of 2 checks failed, 1 undecided; the worst: timer.latency max"),
        "{}",
        v.summary
    );
    // Samples above the bound at a rate surely above 1e-9 break it without an estimate; the
    // samples above the bound are counted either way.
    let v = judge_run(&run, &[parse_requirement("timer pwcet(1e-9) < 500us").unwrap()]).unwrap();
    assert_eq!(v.outcome(), Outcome::NotMet, "{v:#?}");
    assert!(v.checks[0].samples_above_bound > 0 && v.checks[0].undecided.is_none());

    // The headline has no number; the JSON report's entry says why.
    let line = summary_line(&run, "idle", Some("timer.latency")).unwrap().unwrap();
    assert_eq!(line, format!("pWCET: {refusal}."));
    let entries = report_entries(&set_of(run)).unwrap();
    let analysis = entries[0].analysis.as_ref().unwrap();
    assert!(!analysis.defensibility.defensible);
    assert_eq!(analysis.refusal.as_deref(), Some(refusal));
}

#[test]
fn a_light_tail_gives_a_number_with_its_interval() {
    let run = RunResult::load(&fixture_path("exponential-300s.run.json")).unwrap();
    let line = summary_line(&run, "idle", Some("timer.latency")).unwrap().unwrap();
    assert!(line.starts_with("pWCET: ") && line.contains(" µs at 1e-9 per activation ("), "{line}");
    assert!(line.contains("95 % CI "), "{line}");
    let v = judge_run(&run, &[parse_requirement("timer pwcet(1e-9) < 10ms").unwrap()]).unwrap();
    assert_eq!(v.outcome(), Outcome::Met, "{v:#?}");
    let check = &v.checks[0];
    assert_eq!(check.undecided, None);
    // 5 µs + 20 µs × ln(1e9) = 419.5 µs is the true pWCET(1e-9).
    let measured = check.measured_ns.unwrap() as f64;
    assert!((measured / 419_465.0 - 1.0).abs() < 0.2, "{measured}");
    let entries = report_entries(&set_of(run)).unwrap();
    let analysis = entries[0].analysis.as_ref().unwrap();
    assert!(analysis.defensibility.defensible, "{:?}", analysis.defensibility);
    assert_eq!(analysis.refusal, None);
}
