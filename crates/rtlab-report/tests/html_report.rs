//! The HTML report on the saved fixtures (tests/fixtures, simulated runs) and variants built
//! in code: every figure is there with drawn content, the warnings come before the first
//! figure, nothing is loaded from the network, requirement bounds are drawn, raw samples
//! feed the time series.

mod common;

use rtlab_analysis::requirement::parse_requirement;
use rtlab_report::html::HtmlReport;
use rtlab_report::verdict::judge;
use rtlab_results::raw::{header, RawSample};
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use std::path::{Path, PathBuf};

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn fixture(name: &str) -> SourcedRun {
    let path = fixture_path(name);
    let run = RunResult::load(&path).expect("the fixture loads");
    SourcedRun { source: path.display().to_string(), run }
}

fn set_of(runs: Vec<SourcedRun>) -> ReportSet {
    ReportSet { runs, verdict: None }
}

fn render(set: &ReportSet) -> String {
    HtmlReport.render(set).expect("the report renders")
}

/// Ids of the figures every metric of the (two-CPU) fixtures gets.
fn expected_figures(metric_slug: &str) -> Vec<String> {
    ["cumulative", "cumulative-top20", "cumulative-top3", "cumulative-top2", "exceedance", "timeseries", "histogram"]
        .iter()
        .chain(&["histogram-per-cpu"])
        .map(|kind| format!("fig-{kind}-{metric_slug}"))
        .collect()
}

/// The `<figure>` element with this id.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start =
        html.find(&format!("<figure class=\"rtlab-figure\" id=\"{id}\"")).unwrap_or_else(|| panic!("no figure {id}"));
    let end = html[start..].find("</figure>").expect("figure closes") + start;
    &html[start..end]
}

fn first_figure_at(html: &str) -> usize {
    html.find("<figure class=\"rtlab-figure\"").expect("the report has figures")
}

fn assert_self_contained(html: &str) {
    for forbidden in ["http://", "https://", "<script", "<link", "@import", "url("] {
        assert!(!html.contains(forbidden), "the report references {forbidden:?}");
    }
}

#[test]
fn both_fixtures_have_every_figure_with_drawn_content() {
    for runs in [
        vec![fixture("simulated-2cpu.run.json")],
        vec![fixture("simulated-two-scenarios.run.json")],
        vec![fixture("simulated-2cpu.run.json"), fixture("simulated-two-scenarios.run.json")],
    ] {
        let html = render(&set_of(runs));
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
        assert_self_contained(&html);
        for metric in ["timer-latency", "timer-jitter"] {
            for id in expected_figures(metric) {
                let f = figure(&html, &id);
                assert!(f.contains("<svg class=\"rtlab-svg\""), "{id}: no svg");
                let lines = f.matches("<polyline").count();
                assert!(lines >= 2, "{id}: {lines} polylines");
                assert!(f.contains("µs"), "{id}: no unit on an axis");
            }
        }
        // Every configuration is in the legends, in its colour.
        assert!(html.contains("#0072B2"));
    }
}

#[test]
fn overlaid_configurations_get_one_curve_and_one_colour_each() {
    let set = set_of(vec![fixture("simulated-2cpu.run.json"), fixture("simulated-two-scenarios.run.json")]);
    let html = render(&set);
    let cumulative = figure(&html, "fig-cumulative-timer-latency");
    for name in ["fixture", "two-scenarios · idle", "two-scenarios · cpu:threads=1+proc-read"] {
        assert!(cumulative.contains(name), "legend lacks {name}");
    }
    for colour in ["#0072B2", "#D55E00", "#009E73"] {
        assert!(cumulative.contains(&format!("stroke=\"{colour}\"")), "no curve in {colour}");
        assert!(html.contains(&format!("background:{colour}")), "no swatch in {colour}");
    }
}

#[test]
fn not_real_time_warning_comes_before_the_first_figure() {
    let html = render(&set_of(vec![fixture("simulated-2cpu.run.json")]));
    let banner = html.find("NOT REAL-TIME RESULTS").expect("the banner is there");
    assert!(banner < first_figure_at(&html));
    assert!(html[banner..].contains("samples come from a simulated clock"));
}

#[test]
fn virtual_machine_warning_comes_before_the_first_figure() {
    let mut sourced = fixture("simulated-2cpu.run.json");
    let run = &mut sourced.run;
    run.realtime.real_time_results = true;
    run.realtime.notes.clear();
    run.host.virtualization.guest = true;
    run.host.virtualization.hypervisor = Some("KVM".into());
    run.warnings.clear();
    let html = render(&set_of(vec![sourced]));
    assert!(!html.contains("NOT REAL-TIME RESULTS"));
    let vm = html.find("virtual machine (KVM)").expect("the VM is named");
    assert!(vm < first_figure_at(&html));
}

#[test]
fn interrupted_runs_and_failed_loads_are_flagged_first() {
    let mut sourced = fixture("simulated-two-scenarios.run.json");
    sourced.run.interrupted = true;
    sourced.run.scenarios[1].load_failure = Some("cpu died: killed by signal 9".into());
    let html = render(&set_of(vec![sourced]));
    let first = first_figure_at(&html);
    let interrupted = html.find("the run was interrupted").expect("interruption shown");
    let failure = html.find("killed by signal 9").expect("load failure shown");
    assert!(interrupted < first && failure < first);
}

#[test]
fn requirement_bounds_are_drawn_and_the_verdict_leads() {
    let mut set = set_of(vec![fixture("simulated-2cpu.run.json"), fixture("simulated-two-scenarios.run.json")]);
    let requirements =
        vec![parse_requirement("timer max < 500us").unwrap(), parse_requirement("timer p99.9 < 20us").unwrap()];
    set.verdict = Some(judge(&set, &requirements).unwrap());
    let html = render(&set);
    let verdict = html.find("id=\"verdict\"").expect("verdict box");
    assert!(verdict < first_figure_at(&html));
    assert!(html.contains("class=\"banner verdict not-met\""), "p99.9 < 20 µs is not met by the fixtures");
    for id in ["fig-cumulative-timer-latency", "fig-cumulative-top2-timer-latency", "fig-exceedance-timer-latency"] {
        let f = figure(&html, id);
        assert!(f.contains("max &lt; 500us"), "{id}: bound label missing");
        assert!(f.contains("requirement: timer.latency max &lt; 500us"), "{id}: legend entry missing");
    }
    assert!(figure(&html, "fig-timeseries-timer-latency").contains("max &lt; 500us"));
    // Not drawn on the jitter figures: the requirements are on timer.latency.
    assert!(!figure(&html, "fig-cumulative-timer-jitter").contains("500us"));
}

/// Writes `values` as a raw sample file, one sample per ms (the format `rtlab-probe`'s
/// writer produces: header, then 24-byte records).
fn write_raw(path: &Path, cpu: u32, values: impl Iterator<Item = i64>) -> u64 {
    let mut bytes = header().to_vec();
    let mut written = 0;
    for (i, value_ns) in values.enumerate() {
        let sample = RawSample { expected_ns: 1_000_000_000 + i as u64 * 1_000_000, value_ns, cpu, flags: 0 };
        bytes.extend_from_slice(&sample.to_bytes());
        written += 1;
    }
    std::fs::write(path, bytes).unwrap();
    written
}

#[test]
fn raw_samples_feed_the_time_series_with_out_of_range_triangles() {
    let dir = tempfile::tempdir().unwrap();
    let mut sourced = fixture("simulated-2cpu.run.json");
    std::fs::create_dir(dir.path().join("samples")).unwrap();
    for m in sourced.run.measurements.iter_mut().filter(|m| m.metric == "timer.latency") {
        let file = format!("samples/timer-cpu{}.bin", m.cpu);
        // Mostly 5 µs, every 1000th sample 3 ms: far above the range, so a triangle.
        let written = write_raw(
            &dir.path().join(&file),
            m.cpu as u32,
            (0..5000).map(|i| if i % 1000 == 999 { 3_000_000 } else { 5_000 }),
        );
        m.raw_file = Some(file);
        m.raw_samples = Some(written);
    }
    sourced.run.save(dir.path()).unwrap();
    sourced.source = dir.path().display().to_string();
    let html = render(&set_of(vec![sourced.clone()]));
    let series = figure(&html, "fig-timeseries-timer-latency");
    assert!(series.contains("every sample, all CPUs"), "raw samples not used");
    assert!(series.contains("▲ above it"));
    assert!(series.matches("<polygon").count() >= 5, "expected out-of-range triangles");
    assert!(series.contains("Mx 2936.6 µs"), "caption missing");
    // Jitter has no raw file: per-second maxima.
    assert!(figure(&html, "fig-timeseries-timer-jitter").contains("largest sample of each second"));

    // The same run read from elsewhere: the raw files are not found, the figure falls back.
    sourced.source = "/nonexistent/run.json".into();
    let html = render(&set_of(vec![sourced]));
    assert!(figure(&html, "fig-timeseries-timer-latency").contains("largest sample of each second"));
    assert!(html.contains("raw sample files of"));
}

#[test]
fn moments_caption_is_under_each_time_series_panel() {
    let html = render(&set_of(vec![fixture("simulated-two-scenarios.run.json")]));
    let series = figure(&html, "fig-timeseries-timer-latency");
    assert_eq!(series.matches("SD ").count(), 2, "one caption per configuration");
    for word in ["M ", "Mn ", "Mx "] {
        assert!(series.contains(word));
    }
}

#[test]
fn empty_and_hostile_input_does_not_break_the_page() {
    // No runs at all.
    let html = render(&set_of(Vec::new()));
    assert!(html.contains("no runs") && !html.contains("<figure"));
    // A run without samples, and a label that is markup.
    let mut sourced = fixture("simulated-2cpu.run.json");
    sourced.run.label = "<script>alert(1)</script>".into();
    let empty =
        rtlab_analysis::LatencyHistogram::new(sourced.run.experiment.histogram_max_ns).unwrap().encode().unwrap();
    for m in &mut sourced.run.measurements {
        m.count = 0;
        m.cycles = 0;
        m.summary = None;
        m.moments = rtlab_analysis::Moments::new();
        m.histogram = empty.clone();
        m.per_second_max_ns.clear();
    }
    sourced.run.check().unwrap();
    let html = render(&set_of(vec![sourced]));
    assert!(!html.contains("<script>"));
    assert!(html.contains("&lt;script&gt;"));
    assert!(html.contains("no samples"));
}

/// The run of every new probe (tests/common), as a report source.
fn probes_fixture() -> SourcedRun {
    SourcedRun { source: "probes/run.json".into(), run: common::derived_probes_run() }
}

/// The `<section>` of table `id`.
fn table_section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section class=\"rtlab-table\" id=\"table-{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let end = html[start..].find("</section>").expect("section closes") + start;
    &html[start..end]
}

const PROBE_FIGURES: [&str; 3] =
    ["fig-per-sample-sleep-overshoot", "fig-per-period-jitter-jitter", "fig-per-rate-sweep-latency"];

#[test]
fn the_new_probes_figures_are_there_with_their_data() {
    let html = render(&set_of(vec![probes_fixture()]));
    assert_self_contained(&html);
    let configurations = ["idle", "cpu:threads=1+proc-read"];
    // Dankwardt: every sample of every configuration, in the sleep overshoot's section.
    let per_sample = figure(&html, "fig-per-sample-sleep-overshoot");
    assert!(
        html.find("id=\"fig-per-sample-sleep-overshoot\"").unwrap()
            > html.find("id=\"metric-sleep-overshoot\"").unwrap()
    );
    assert!(per_sample.contains("sample number"), "x axis");
    assert!(per_sample.contains("sleep overshoot (µs"), "y axis");
    for (name, colour) in configurations.iter().zip(["#0072B2", "#D55E00"]) {
        assert!(per_sample.contains(name), "legend lacks {name}");
        assert!(per_sample.contains(&format!("stroke=\"{colour}\"")), "no line in {colour}");
    }
    // The sleep overshoot still gets its distribution's figures.
    for kind in ["cumulative", "exceedance", "timeseries", "histogram"] {
        figure(&html, &format!("fig-{kind}-sleep-overshoot"));
    }
    // Dodiu Tables 1 and 2: the chart sits in its table's section, min and max per
    // configuration, the setting on a log axis.
    for (table, id, x) in [
        ("jitter-per-period", "fig-per-period-jitter-jitter", "task period (µs), log scale"),
        ("sweep-per-rate", "fig-per-rate-sweep-latency", "stimulus rate (Hz), log scale"),
    ] {
        let section = table_section(&html, table);
        assert!(section.contains("<div class=\"beside\">"), "{table}: no chart beside");
        let f = figure(section, id);
        assert!(f.contains(x), "{id}: x axis {x:?}");
        for name in configurations {
            assert!(f.contains(&format!("{name} max")) && f.contains(&format!("{name} min")), "{id}: legend of {name}");
        }
        assert!(f.matches("<circle").count() >= 4 * 6, "{id}: a dot per step, min and max, per configuration");
        assert!(f.matches("<polyline").count() >= 2, "{id}: the max lines");
        assert_eq!(html.matches(&format!("id=\"{id}\"")).count(), 1, "{id} appears once");
        assert!(html.contains(&format!("<a href=\"#{id}\">")), "{id} in the contents");
    }
    // The ipc, switch and net metrics get the distribution figures.
    for slug in ["net-activation", "ipc-futex-latency", "switch-futex", "sweep-latency", "jitter-jitter"] {
        figure(&html, &format!("fig-cumulative-{slug}"));
    }
    // Several CPUs and periods of the jitter probe: one line per CPU, not per measurement.
    let per_cpu = figure(&html, "fig-histogram-per-cpu-jitter-jitter");
    assert_eq!(per_cpu.matches("CPU 0").count(), 2, "CPU 0 once per configuration panel");
}

#[test]
fn no_probe_figures_without_their_data() {
    let html = render(&set_of(vec![fixture("simulated-2cpu.run.json"), fixture("simulated-two-scenarios.run.json")]));
    assert!(!html.contains("fig-per-"), "a timer run has no per-sample or per-step figure");
    assert!(!html.contains("class=\"beside\""));
    // A sleep run whose samples were not kept in order: its distribution, no per-sample plot.
    let mut sleep = SourcedRun {
        source: "sleep/run.json".into(),
        run: common::only(common::derived_probes_run(), &["sleep"], "sleep"),
    };
    for m in &mut sleep.run.measurements {
        m.sequence_ns = None;
    }
    let html = render(&set_of(vec![sleep]));
    for id in PROBE_FIGURES {
        assert!(!html.contains(id), "{id} without its data");
    }
    figure(&html, "fig-cumulative-sleep-overshoot");
    // Jitter alone: its chart, none of the others.
    let jitter = SourcedRun {
        source: "jitter/run.json".into(),
        run: common::only(common::derived_probes_run(), &["jitter"], "jitter"),
    };
    let html = render(&set_of(vec![jitter]));
    assert!(html.contains("id=\"fig-per-period-jitter-jitter\""));
    assert!(!html.contains("fig-per-rate") && !html.contains("fig-per-sample"));
}

/// Compared with the sleep run under SCHED_OTHER: overlaid, each in its own colour.
#[test]
fn per_sample_overlays_every_configuration_of_a_comparison() {
    let other = SourcedRun { source: "sleep-other/run.json".into(), run: common::sleep_other_run() };
    let html = render(&set_of(vec![probes_fixture(), other]));
    let f = figure(&html, "fig-per-sample-sleep-overshoot");
    for (name, colour) in [
        ("probes · idle", "#0072B2"),
        ("probes · cpu:threads=1+proc-read", "#D55E00"),
        ("sleep-other · idle", "#009E73"),
        ("sleep-other · cpu:threads=1+proc-read", "#CC79A7"),
    ] {
        assert!(f.contains(name), "legend lacks {name}");
        assert!(f.contains(&format!("stroke=\"{colour}\"")), "no line for {name}");
    }
}
