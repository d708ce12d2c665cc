//! The interchange exports (`hdr-log`, `junit`, `openmetrics`) on the saved fixtures, each
//! read back by an independent reader and checked against the run it came from: the
//! hdrhistogram crate's `IntervalLogIterator`, the `junit-parser` crate and roxmltree (a
//! strict XML 1.0 parser), and the `prometheus-parse` crate. Plus a snapshot of each.
//! (bench/check-interop runs the Python and Java readers on the same outputs.)

mod common;

use common::fixture_path;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use rtlab_analysis::requirement::parse_requirement;
use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_formats::export::hdr_log::HdrLog;
use rtlab_formats::export::junit::JunitReport;
use rtlab_formats::export::openmetrics::{bucket_ladder, cumulative_count, OpenMetrics};
use rtlab_formats::export::Selection;
use rtlab_report::verdict::judge;
use rtlab_results::run::{Measurement, RunResult};
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use std::collections::BTreeMap;
use std::time::Duration;

const TWO_CPUS: &str = "simulated-2cpu.run.json";
const TWO_SCENARIOS: &str = "simulated-two-scenarios.run.json";
const LOADED: &str = "cpu:threads=1+proc-read";

fn load(name: &str) -> RunResult {
    RunResult::load(&fixture_path(name)).expect("the fixture loads")
}

fn set_of(runs: Vec<RunResult>) -> ReportSet {
    let runs = runs.into_iter().map(|run| SourcedRun { source: format!("{}.run.json", run.label), run }).collect();
    ReportSet { runs, verdict: None }
}

/// The set with the verdict of `requirements` judged, as `rtlab report --require` does.
fn judged(runs: Vec<RunResult>, requirements: &[&str]) -> ReportSet {
    let mut set = set_of(runs);
    let requirements: Vec<_> = requirements.iter().map(|r| parse_requirement(r).unwrap()).collect();
    set.verdict = Some(judge(&set, &requirements).unwrap());
    set
}

fn decode(base64_histogram: &str) -> Histogram<u64> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(base64_histogram).expect("base64");
    Deserializer::new().deserialize(&mut bytes.as_slice()).expect("an HDR histogram")
}

// ---------------------------------------------------------------------------------------
// hdr-log

/// One interval of the log as the hdrhistogram crate reads it.
struct Interval {
    tag: Option<String>,
    start: Duration,
    length: Duration,
    max_field: f64,
    histogram: Histogram<u64>,
}

/// (StartTime, BaseTime, intervals) of a log, through the crate's reader.
fn read_log(text: &str) -> (Option<Duration>, Option<Duration>, Vec<Interval>) {
    let (mut start, mut base, mut intervals) = (None, None, Vec::new());
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        match entry.expect("every line parses") {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::Interval(i) => intervals.push(Interval {
                tag: i.tag().map(|t| t.as_str().to_string()),
                start: i.start_timestamp(),
                length: i.duration(),
                max_field: i.max(),
                histogram: decode(i.encoded_histogram()),
            }),
        }
    }
    (start, base, intervals)
}

fn hdr_of(m: &Measurement) -> Histogram<u64> {
    LatencyHistogram::decode(&m.histogram).unwrap().hdr().clone()
}

fn recorded(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
}

/// Every interval holds its thread's histogram bucket for bucket; the untagged one all
/// threads; maxima are the exact ones within the histogram's precision.
fn assert_log_matches(text: &str, run: &RunResult, scenario: &str, metric: &str) -> Vec<Interval> {
    let (_, _, intervals) = read_log(text);
    let mut threads: Vec<&Measurement> = run.measurements_of(scenario, metric).collect();
    threads.sort_by_key(|m| m.cpu);
    assert_eq!(intervals.len(), threads.len() + 1, "one untagged interval, then one per thread");
    let all = &intervals[0];
    assert_eq!(all.tag, None);
    assert_eq!(all.histogram.len(), threads.iter().map(|m| m.count).sum::<u64>());
    let exact_max = threads.iter().filter_map(|m| m.moments.max()).max().unwrap() as u64;
    assert_eq!(all.histogram.max(), all.histogram.highest_equivalent(exact_max));
    for (interval, m) in intervals[1..].iter().zip(&threads) {
        assert_eq!(interval.histogram.len(), m.count, "{:?}", interval.tag);
        assert_eq!(recorded(&interval.histogram), recorded(&hdr_of(m)), "{:?}", interval.tag);
        let max = m.moments.max().unwrap() as u64;
        assert_eq!(interval.histogram.max(), interval.histogram.highest_equivalent(max));
        assert!(interval.histogram.equivalent(interval.histogram.max(), max));
        // Interval_Max: the histogram's max in ms, to the 3 decimals the format keeps.
        assert!((interval.max_field - interval.histogram.max() as f64 / 1e6).abs() <= 0.0005 + 1e-12);
    }
    let scenario_s = run.scenario(scenario).unwrap().duration_s;
    assert!(intervals.iter().all(|i| (i.length.as_secs_f64() - scenario_s).abs() < 0.0005));
    intervals
}

#[test]
fn hdr_log_reads_back_with_every_threads_counts_and_maxima() {
    let run = load(TWO_CPUS);
    let text = HdrLog::default().render(&set_of(vec![run.clone()])).unwrap();
    let (start, base, _) = read_log(&text);
    // The simulated run's start is the epoch itself.
    assert_eq!((start, base), (Some(Duration::ZERO), Some(Duration::ZERO)));
    let intervals = assert_log_matches(&text, &run, "idle", "timer.latency");
    let tags: Vec<Option<&str>> = intervals.iter().map(|i| i.tag.as_deref()).collect();
    assert_eq!(tags, [None, Some("cpu0"), Some("cpu1")]);
    assert!(intervals.iter().all(|i| i.start == Duration::ZERO && i.length == Duration::from_millis(5029)));
    assert!(text.contains("#[Values in ns; Interval_Max in ms (max ns / MaxValueDivisor 1e6)]\n"), "{text}");
    assert!(
        text.contains("\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n")
    );

    let jitter = HdrLog { selection: Selection { metric: Some("timer.jitter".into()), scenario: None } };
    assert_log_matches(&jitter.render(&set_of(vec![run.clone()])).unwrap(), &run, "idle", "timer.jitter");
    insta::assert_snapshot!("hdr_log_two_cpus", text);
}

#[test]
fn hdr_log_of_a_later_scenario_starts_after_the_earlier_one() {
    let run = load(TWO_SCENARIOS);
    let selection = Selection { metric: None, scenario: Some(LOADED.into()) };
    let text = HdrLog { selection }.render(&set_of(vec![run.clone()])).unwrap();
    let intervals = assert_log_matches(&text, &run, LOADED, "timer.latency");
    // idle measured 3.015 s, then the loads settled 0.202 s.
    assert!(intervals.iter().all(|i| i.start == Duration::from_millis(3217)), "{text}");
    assert!(text.contains("scenario \"cpu:threads=1+proc-read\", metric \"timer.latency\""));
}

#[test]
fn hdr_log_refuses_to_guess_the_scenario() {
    let run = load(TWO_SCENARIOS);
    let error = HdrLog::default().render(&set_of(vec![run])).unwrap_err().to_string();
    assert!(error.contains("several scenarios (idle, cpu:threads=1+proc-read): choose one with --scenario"), "{error}");
}

/// A log never mixes scenarios: each holds one, named in its header, with that scenario's
/// threads only, and the two logs' intervals do not overlap in time (so even logs appended
/// to one file stay apart). The tags stay `cpuN`: see docs/export/hdr-log.md.
#[test]
fn hdr_log_holds_one_scenario_named_in_its_header() {
    let run = load(TWO_SCENARIOS);
    let mut spans = Vec::new();
    for scenario in ["idle", LOADED] {
        let selection = Selection { metric: None, scenario: Some(scenario.into()) };
        let text = HdrLog { selection }.render(&set_of(vec![run.clone()])).unwrap();
        assert!(
            text.contains(&format!(
                "#[rtlab {}: run \"two-scenarios\", scenario {scenario:?}, metric \"timer.latency\"]\n",
                run.tool.version
            )),
            "{text}"
        );
        let intervals = assert_log_matches(&text, &run, scenario, "timer.latency");
        let tags: Vec<Option<&str>> = intervals.iter().map(|i| i.tag.as_deref()).collect();
        assert_eq!(tags, [None, Some("cpu0"), Some("cpu1")]);
        spans.push((intervals[0].start, intervals[0].start + intervals[0].length, intervals[0].histogram.max()));
    }
    let (idle, loaded) = (spans[0], spans[1]);
    assert!(idle.1 <= loaded.0, "the loaded scenario's interval starts after the idle one ends: {spans:?}");
    assert_ne!(idle.2, loaded.2, "the fixture's scenarios differ, so a mix-up would show");
}

#[test]
fn hdr_log_tags_several_threads_on_one_cpu_apart() {
    let run = load(common::DERIVED);
    let selection = Selection { metric: Some("jitter.jitter".into()), scenario: Some("idle".into()) };
    let text = HdrLog { selection }.render(&set_of(vec![run.clone()])).unwrap();
    let intervals = assert_log_matches(&text, &run, "idle", "jitter.jitter");
    let mut tags: Vec<&str> = intervals.iter().filter_map(|i| i.tag.as_deref()).collect();
    assert!(tags.contains(&"cpu0-jitter/1000us/0"), "{tags:?}");
    let n = tags.len();
    tags.dedup();
    assert_eq!(tags.len(), n, "every tag is unique");
}

#[test]
fn hdr_log_without_a_recorded_start_says_so_and_stays_readable() {
    let mut run = load(TWO_CPUS);
    run.start_time = String::new();
    run.label = "line\n#[StartTime: 99.0 (seconds since epoch)]".into();
    let text = HdrLog::default().render(&set_of(vec![run.clone()])).unwrap();
    let (start, base, _) = read_log(&text);
    assert_eq!((start, base), (None, None), "neither the missing start nor the label make a header:\n{text}");
    assert!(text.contains("#[run.json records no start time (\"\"): timestamps are offsets from an unknown start]"));
    assert_log_matches(&text, &run, "idle", "timer.latency");
}

// ---------------------------------------------------------------------------------------
// junit

fn parse_junit(xml: &str) -> junit_parser::TestSuites {
    // Well-formed XML 1.0 first (roxmltree rejects what lenient readers let through).
    roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{xml}"));
    junit_parser::from_reader(xml.as_bytes()).expect("junit-parser reads it")
}

#[test]
fn junit_has_one_test_per_check_with_failures_and_errors() {
    let set = judged(vec![load(TWO_SCENARIOS)], &["timer max < 500us", "timer p99 < 1ms", "net max < 1ms"]);
    let xml = JunitReport.render(&set).unwrap();
    let suites = parse_junit(&xml);
    assert_eq!((suites.tests, suites.failures, suites.errors, suites.skipped), (6, 2, 2, 0));
    let [suite] = &suites.suites[..] else { panic!("one suite per run: {xml}") };
    assert_eq!(suite.name, "rtlab.two-scenarios");
    assert_eq!((suite.tests, suite.failures, suite.errors), (6, 2, 2));
    assert_eq!(suite.hostname.as_deref(), Some("simulated"));
    assert!((suite.time - 6.022).abs() < 1e-9);
    let properties: BTreeMap<&str, &str> = suite.properties.vec.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(properties["kernel"], "6.0.0-simulated");
    assert_eq!(properties["host"], "simulated");
    let samples: u64 = set.runs[0].run.measurements.iter().map(|m| m.count).sum();
    assert_eq!(properties["samples"], samples.to_string());
    assert!(properties["verdict"].starts_with("NOT MET: 4 of 6 checks failed"), "{properties:?}");

    let verdict = set.verdict.as_ref().unwrap();
    assert_eq!(suite.cases.len(), verdict.checks.len());
    for (case, check) in suite.cases.iter().zip(&verdict.checks) {
        assert_eq!(case.original_name, format!("{} · {}", check.requirement.text, check.scenario));
        assert_eq!(case.classname.as_deref(), Some("rtlab.two-scenarios"));
        assert!((case.time - check.duration_s).abs() < 0.0005);
        match (check.met, check.measured_ns) {
            (true, _) => assert!(case.status.is_success(), "{case:?}"),
            (false, Some(measured)) => {
                let failure = case.status.failure_as_ref();
                let us = |ns: i64| format!("{}.{:03} µs", ns / 1000, ns % 1000);
                assert_eq!(failure.failure_type, "requirement-not-met");
                assert!(failure.message.contains(&format!("was {} under {}", us(measured), check.scenario)));
                assert!(failure.message.contains("required < 500.000 µs"), "{}", failure.message);
                assert!(failure.text.contains(&format!("measured: {} ({measured} ns)", us(measured))));
            }
            (false, None) => {
                let error = case.status.error_as_ref();
                assert_eq!(error.message, "net.activation was not measured in this configuration");
            }
        }
    }
    insta::assert_snapshot!("junit_two_scenarios", xml);
}

/// One requirement on a two-scenario run: one test per scenario, each named with its
/// scenario (the classname is the run's suite), judged on that scenario's samples alone.
#[test]
fn junit_tells_the_scenarios_of_a_run_apart() {
    let run = load(TWO_SCENARIOS);
    let max_of = |scenario: &str| run.measurements_of(scenario, "timer.latency").filter_map(|m| m.moments.max()).max();
    let (idle_max, loaded_max) = (max_of("idle").unwrap(), max_of(LOADED).unwrap());
    // A bound between the two maxima: met unloaded, not met loaded.
    assert!(idle_max < 2_900_000 && 2_900_000 <= loaded_max, "{idle_max} {loaded_max}");
    let xml = JunitReport.render(&judged(vec![run], &["timer max < 2900us"])).unwrap();
    let suites = parse_junit(&xml);
    let cases = &suites.suites[0].cases;
    let names: Vec<(&str, Option<&str>)> =
        cases.iter().map(|c| (c.original_name.as_str(), c.classname.as_deref())).collect();
    assert_eq!(
        names,
        [
            ("timer.latency max < 2900us · idle", Some("rtlab.two-scenarios")),
            ("timer.latency max < 2900us · cpu:threads=1+proc-read", Some("rtlab.two-scenarios")),
        ]
    );
    assert!(cases[0].status.is_success(), "{:?}", cases[0]);
    assert!(cases[0].system_out.as_deref().unwrap_or_default().contains("run: two-scenarios, scenario: idle\n"));
    assert!(cases[0].system_out.as_deref().unwrap_or_default().contains(&format!("({idle_max} ns)")));
    let failure = cases[1].status.failure_as_ref();
    assert!(failure.message.contains(&format!("under {LOADED}; required < 2900.000 µs")), "{}", failure.message);
    assert!(failure.text.contains(&format!("run: two-scenarios, scenario: {LOADED}\n")), "{}", failure.text);
    assert!(failure.text.contains(&format!(
        "measured: {}.{:03} µs ({loaded_max} ns)",
        loaded_max / 1000,
        loaded_max % 1000
    )));
}

#[test]
fn junit_escapes_markup_quotes_and_keeps_non_ascii() {
    let mut run = load(TWO_CPUS);
    run.label = "a \"quoted\" <label> & 'µs'\nline".into();
    run.host.hostname = "host<&>\u{1}".into();
    let set = judged(vec![run], &["timer max < 5ms"]);
    let xml = JunitReport.render(&set).unwrap();
    let suites = parse_junit(&xml);
    let suite = &suites.suites[0];
    assert_eq!(suite.name, "rtlab.a \"quoted\" <label> & 'µs'\nline");
    // XML 1.0 cannot hold U+0001 at all: it becomes U+FFFD.
    assert_eq!(suite.hostname.as_deref(), Some("host<&>\u{FFFD}"));
    assert_eq!(suite.cases[0].original_name, "timer.latency max < 5ms · idle");
    assert!(suite.cases[0].status.is_success());
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let case = doc.descendants().find(|n| n.has_tag_name("testcase")).unwrap();
    assert_eq!(case.attribute("classname"), Some("rtlab.a \"quoted\" <label> & 'µs'\nline"));
}

#[test]
fn junit_uses_the_verdict_saved_with_the_run() {
    let mut run = load(TWO_CPUS);
    let saved = judged(vec![run.clone()], &["timer p99 < 1ms"]).verdict;
    run.verdict = saved;
    let xml = JunitReport.render(&set_of(vec![run])).unwrap();
    let suites = parse_junit(&xml);
    assert_eq!((suites.tests, suites.failures, suites.errors), (1, 0, 0));
}

#[test]
fn junit_of_several_runs_has_a_suite_each() {
    let mut other = load(TWO_CPUS);
    other.label = "other".into();
    let set = judged(vec![load(TWO_CPUS), other], &["timer max < 5ms"]);
    let suites = parse_junit(&JunitReport.render(&set).unwrap());
    let names: Vec<&str> = suites.suites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["rtlab.fixture", "rtlab.other"]);
    assert!(suites.suites.iter().all(|s| s.tests == 1 && s.cases[0].status.is_success()));
}

#[test]
fn junit_without_requirements_is_an_error_that_says_what_to_give() {
    let error = JunitReport.render(&set_of(vec![load(TWO_CPUS)])).unwrap_err().to_string();
    assert!(error.contains("junit needs requirements: give --require"), "{error}");
}

// ---------------------------------------------------------------------------------------
// openmetrics

/// Every sample of the exposition through prometheus-parse, by metric name and labels
/// (sorted `k=v` pairs, without `le`/`quantile`, which the parser gathers).
fn scrape(text: &str) -> BTreeMap<(String, String), prometheus_parse::Value> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("prometheus-parse reads it");
    let mut out = BTreeMap::new();
    for s in scrape.samples {
        let mut labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        let previous = out.insert((s.metric.clone(), labels.join(",")), s.value);
        assert!(previous.is_none(), "{} {labels:?} appears twice", s.metric);
    }
    out
}

fn key_of(run: &str, m: &Measurement) -> String {
    let mut labels = [
        format!("cpu={}", m.cpu),
        format!("metric={}", m.metric),
        format!("run={run}"),
        format!("scenario={}", m.scenario),
        format!("thread={}", m.thread),
    ];
    labels.sort();
    labels.join(",")
}

fn scalar(samples: &BTreeMap<(String, String), prometheus_parse::Value>, name: &str, key: &str) -> f64 {
    match samples.get(&(name.to_string(), key.to_string())) {
        Some(prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v)) => *v,
        other => panic!("{name} {{{key}}}: {other:?}"),
    }
}

fn ns(seconds: f64) -> i64 {
    (seconds * 1e9).round() as i64
}

/// Every sample of every measurement against the run: quantiles, count, sum, extremes,
/// mean, and each cumulative bucket recounted here from the histogram's buckets.
fn assert_exposition_matches(text: &str, run: &RunResult) {
    assert!(text.ends_with("# EOF\n"));
    let samples = scrape(text);
    let all_max = run.measurements.iter().filter_map(|m| m.moments.max()).max();
    let ladder = bucket_ladder(all_max);
    assert!(ladder.last().copied() >= all_max, "the ladder reaches the largest sample");
    for m in &run.measurements {
        let key = key_of(&run.label, m);
        let summary = m.summary.as_ref().unwrap();
        match samples.get(&("rtlab_sample_seconds".to_string(), key.clone())) {
            Some(prometheus_parse::Value::Summary(quantiles)) => {
                let got: Vec<(f64, i64)> = quantiles.iter().map(|q| (q.quantile, ns(q.count))).collect();
                let expected: Vec<(f64, i64)> = rtlab_analysis::SUMMARY_PERCENTILES
                    .iter()
                    .map(|(_, q)| *q)
                    .zip(summary.percentiles().map(|p| p.1))
                    .collect();
                assert_eq!(got, expected, "{key}");
            }
            other => panic!("no summary for {key}: {other:?}"),
        }
        assert_eq!(scalar(&samples, "rtlab_sample_seconds_count", &key), m.count as f64);
        assert_eq!(ns(scalar(&samples, "rtlab_sample_seconds_sum", &key)), m.moments.sum as i64);
        assert_eq!(ns(scalar(&samples, "rtlab_sample_min_seconds", &key)), summary.min);
        assert_eq!(ns(scalar(&samples, "rtlab_sample_max_seconds", &key)), summary.max);
        let mean = scalar(&samples, "rtlab_sample_mean_seconds", &key) * 1e9;
        assert!((mean - m.moments.mean().unwrap()).abs() < 1e-6, "{key}");

        let Some(prometheus_parse::Value::Histogram(buckets)) =
            samples.get(&("rtlab_sample_histogram_seconds".to_string(), key.clone()))
        else {
            panic!("no histogram for {key}")
        };
        let histogram = hdr_of(m);
        let (min, max) = (m.moments.min().unwrap(), m.moments.max().unwrap());
        let mut expected: Vec<(i64, u64)> = ladder
            .iter()
            .map(|&rung| {
                let count = if rung >= max {
                    m.count
                } else if rung < min {
                    0
                } else {
                    recorded(&histogram)
                        .iter()
                        .filter(|(v, _)| histogram.highest_equivalent(*v) <= rung as u64)
                        .map(|(_, c)| c)
                        .sum()
                };
                (rung, count)
            })
            .collect();
        expected.push((i64::MAX, m.count));
        let got: Vec<(i64, u64)> = buckets
            .iter()
            .map(|b| (if b.less_than.is_infinite() { i64::MAX } else { ns(b.less_than) }, b.count as u64))
            .collect();
        assert_eq!(got, expected, "{key}");
        assert!(got.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative");
        assert_eq!(scalar(&samples, "rtlab_sample_histogram_seconds_count", &key), m.count as f64);
        assert_eq!(ns(scalar(&samples, "rtlab_sample_histogram_seconds_sum", &key)), m.moments.sum as i64);
        // The library's own count agrees with the recount above.
        let library = cumulative_count(&LatencyHistogram::decode(&m.histogram).unwrap(), m, 10_000);
        assert_eq!(Some(&library), expected.iter().find(|(rung, _)| *rung == 10_000).map(|(_, c)| c));
    }
    for s in &run.scenarios {
        let key = format!("run={},scenario={}", run.label, s.name);
        assert_eq!(scalar(&samples, "rtlab_scenario_duration_seconds", &key), s.duration_s);
    }
}

#[test]
fn openmetrics_holds_every_statistic_and_bucket_of_the_run() {
    let run = load(TWO_CPUS);
    let set = judged(vec![run.clone()], &["timer max < 500us", "timer p99 < 1ms"]);
    let text = OpenMetrics.render(&set).unwrap();
    assert_exposition_matches(&text, &run);
    let samples = scrape(&text);
    let verdict = set.verdict.as_ref().unwrap();
    for check in &verdict.checks {
        let key = format!("requirement={},run=fixture,scenario=idle", check.requirement.text);
        assert_eq!(scalar(&samples, "rtlab_requirement_met", &key), f64::from(u8::from(check.met)));
        assert_eq!(ns(scalar(&samples, "rtlab_requirement_bound_seconds", &key)), check.requirement.bound_ns);
        assert_eq!(Some(ns(scalar(&samples, "rtlab_requirement_measured_seconds", &key))), check.measured_ns);
    }
    assert_eq!(scalar(&samples, "rtlab_verdict_met", ""), 0.0);
    insta::assert_snapshot!("openmetrics_two_cpus", text);
}

#[test]
fn openmetrics_of_every_probe_matches_the_run() {
    // prometheus-parse splits label pairs at every "=", so the loaded scenario is renamed
    // for it (the escaping test and bench/check-interop cover such names).
    let mut run = load(common::DERIVED);
    for m in run.measurements.iter_mut().filter(|m| m.scenario == LOADED) {
        m.scenario = "loaded".into();
    }
    for s in run.scenarios.iter_mut().filter(|s| s.name == LOADED) {
        s.name = "loaded".into();
    }
    let text = OpenMetrics.render(&set_of(vec![run.clone()])).unwrap();
    assert_exposition_matches(&text, &run);
    assert!(!text.contains("rtlab_requirement_met"), "no verdict, no verdict gauges");
}

/// The same metric, CPU and thread in two scenarios are two series, told apart by the
/// `scenario` label, each with its own scenario's values.
#[test]
fn openmetrics_keeps_the_scenarios_of_a_run_apart() {
    let run = load(TWO_SCENARIOS);
    let text = OpenMetrics.render(&set_of(vec![run.clone()])).unwrap();
    let series: Vec<&str> = text.lines().filter(|l| l.starts_with("rtlab_sample_max_seconds{")).collect();
    assert_eq!(series.len(), run.measurements.len(), "one series per measurement: {series:?}");
    for m in &run.measurements {
        let line = format!(
            "rtlab_sample_max_seconds{{run=\"two-scenarios\",scenario=\"{}\",metric=\"{}\",cpu=\"{}\",thread=\"{}\"}} {}",
            m.scenario,
            m.metric,
            m.cpu,
            m.thread,
            rtlab_formats::export::openmetrics::seconds(m.moments.max().unwrap().into())
        );
        assert!(series.contains(&line.as_str()), "{line} not in {series:?}");
    }
    // Every sample of a measurement or a scenario carries the label.
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.starts_with("rtlab_verdict_met")) {
        assert!(line.contains(",scenario=\""), "{line}");
    }
}

#[test]
fn openmetrics_escapes_label_values() {
    let mut run = load(TWO_CPUS);
    run.label = "a\\b \"c\"\nµs, x=y {z}".into();
    let text = OpenMetrics.render(&set_of(vec![run])).unwrap();
    assert!(
        text.contains("rtlab_sample_max_seconds{run=\"a\\\\b \\\"c\\\"\\nµs, x=y {z}\",scenario=\"idle\",metric=\"timer.latency\",cpu=\"0\",thread=\"timer/0\"} 0.002936598\n"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.starts_with("# ") || l.starts_with("rtlab_")), "no label breaks a line");
}

#[test]
fn openmetrics_numbers_runs_that_share_a_label() {
    let run = load(TWO_CPUS);
    let text = OpenMetrics.render(&set_of(vec![run.clone(), run])).unwrap();
    assert!(text.contains("rtlab_scenario_duration_seconds{run=\"fixture\",scenario=\"idle\"} 5.029\n"));
    assert!(text.contains("rtlab_scenario_duration_seconds{run=\"fixture #2\",scenario=\"idle\"} 5.029\n"));
}

/// A metric with negative samples: OpenMetrics forbids negative quantiles and a negative
/// `_sum`, so those are left out while min and mean still show the values.
#[test]
fn openmetrics_leaves_out_what_a_signed_metric_cannot_show() {
    let mut run = load(TWO_CPUS);
    run.measurements.retain(|m| m.metric == "timer.latency" && m.cpu == 0);
    let values = [-3_000i64, -2_000, -1_000, 500];
    let mut histogram = LatencyHistogram::new(run.experiment.histogram_max_ns).unwrap();
    let mut moments = Moments::new();
    for v in values {
        histogram.record(v);
        moments.record(v);
    }
    let m = &mut run.measurements[0];
    m.count = values.len() as u64;
    m.cycles = m.count;
    m.histogram = histogram.encode().unwrap();
    m.moments = moments;
    m.summary = Summary::from_parts(&histogram, &moments);
    run.check().unwrap();
    let text = OpenMetrics.render(&set_of(vec![run])).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("rtlab_sample_seconds")).collect();
    assert!(lines.iter().all(|l| !l.contains("} -")), "{lines:?}");
    assert!(!text.contains("rtlab_sample_seconds_sum") && !text.contains("rtlab_sample_histogram_seconds_sum"));
    assert!(text.contains("rtlab_sample_min_seconds{run=\"fixture\",scenario=\"idle\",metric=\"timer.latency\",cpu=\"0\",thread=\"timer/0\"} -0.000003\n"));
    assert!(text.contains("rtlab_sample_mean_seconds{run=\"fixture\",scenario=\"idle\",metric=\"timer.latency\",cpu=\"0\",thread=\"timer/0\"} -0.000001375\n"));
    assert!(text.contains("rtlab_sample_seconds_count{run=\"fixture\",scenario=\"idle\",metric=\"timer.latency\",cpu=\"0\",thread=\"timer/0\"} 4\n"));
    // The negative samples are at or below every rung: 3 of 4 at the first one.
    assert!(text.contains(",le=\"0.0000001\"} 3\n"), "{text}");
}
