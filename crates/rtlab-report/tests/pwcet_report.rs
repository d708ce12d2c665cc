//! The report's tail section (pWCET by extreme value theory) on the saved fixtures
//! (tests/fixtures; `simulated-120s.run.json` is `rtlab run --simulate 11 -D 120s`: 120
//! per-second maxima per CPU) and on runs made thin in code: the tail input, the estimates'
//! invariants, the tables (snapshots of a fixed analysis, so that they do not move with the
//! fitting code), the figures' structure, the HTML section and the too-little-data case.
//!
//! No test asserts that a pWCET is at or above the largest sample: an extrapolation of a
//! fitted tail need not be.

use rtlab_analysis::evt::{
    Defensibility, Diagnostic, Estimator, PwcetAnalysis, PwcetConfig, PwcetEstimate, ShapeAtThreshold, TailCurves,
    TailFit, TailModel,
};
use rtlab_analysis::requirement::parse_requirement;
use rtlab_analysis::{LatencyHistogram, Moments, Summary};
use rtlab_report::figures::{all_figures, metric_tail_figures, tail_figures};
use rtlab_report::html::HtmlReport;
use rtlab_report::markdown::MarkdownReport;
use rtlab_report::pwcet::{report_tails, tail_input, MetricTail, TailAnalysis};
use rtlab_report::tables::tail::metric_tables;
use rtlab_report::tables::{report_tables, text_table};
use rtlab_report::verdict::judge;
use rtlab_results::run::{Measurement, RunResult};
use rtlab_results::set::{Configuration, ReportExporter, ReportSet, SourcedRun};
use std::path::Path;
use std::sync::Arc;

const LONG: &str = "simulated-120s.run.json";
const FIXTURES: [&str; 5] = [
    LONG,
    "simulated-2cpu.run.json",
    "simulated-two-scenarios.run.json",
    "derived-probes.run.json",
    "imported-histogram.run.json",
];

fn fixture(name: &str) -> RunResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    RunResult::load(&path).expect("the fixture loads")
}

fn set_of(runs: Vec<RunResult>) -> ReportSet {
    let runs =
        runs.into_iter().map(|run| SourcedRun { source: format!("tests/fixtures/{}", run.label), run }).collect();
    ReportSet { runs, verdict: None }
}

fn with_requirements(mut set: ReportSet, texts: &[&str]) -> ReportSet {
    let requirements: Vec<_> = texts.iter().map(|t| parse_requirement(t).unwrap()).collect();
    set.verdict = Some(judge(&set, &requirements).unwrap());
    set
}

/// The fixture with every measurement replaced by `per_cpu` samples in two seconds.
fn thin(per_cpu: i64) -> RunResult {
    let mut run = fixture("simulated-2cpu.run.json");
    for m in &mut run.measurements {
        let mut h = LatencyHistogram::new(run.experiment.histogram_max_ns).unwrap();
        let mut moments = Moments::new();
        for v in 0..per_cpu {
            h.record(10_000 + v * 100);
            moments.record(10_000 + v * 100);
        }
        m.count = per_cpu as u64;
        m.cycles = per_cpu as u64;
        m.overruns = 0;
        m.summary = Summary::from_parts(&h, &moments);
        m.moments = moments;
        m.histogram = h.encode().unwrap();
        m.per_second_max_ns = vec![Some(10_000), Some(10_000 + (per_cpu - 1) * 100)];
    }
    run.check().unwrap();
    run
}

#[test]
fn the_tail_input_of_a_long_run() {
    let run = fixture(LONG);
    let measurements: Vec<&Measurement> = run.measurements_of("idle", "timer.latency").collect();
    let input = tail_input(&measurements).unwrap();
    assert_eq!(input.block_maxima_ns.len(), 120);
    let total: u64 = measurements.iter().map(|m| m.count).sum();
    assert_eq!(input.total_samples, total);
    // Each block maximum is the larger of the two CPUs' in that second.
    for (i, block) in input.block_maxima_ns.iter().enumerate() {
        let expected = measurements.iter().filter_map(|m| m.per_second_max_ns[i]).max().unwrap();
        assert_eq!(*block, expected as f64, "second {i}");
    }
    // Two CPUs at 1 kHz, a few overruns: just under 2,000 samples per one-second block.
    assert!((1_900.0..=2_000.0).contains(&input.samples_per_block), "{}", input.samples_per_block);
    assert!((input.samples_per_block - input.sample_rate_hz).abs() < 1e-9);
    let tail: u64 = input.tail_ns.iter().map(|(_, c)| c).sum();
    assert!(tail >= total / 20 && tail < total / 20 + 200, "{tail} of {total}");
    let max = measurements.iter().filter_map(|m| m.moments.max()).max().unwrap();
    assert_eq!(input.tail_ns.last().map(|(v, _)| *v), Some(max as f64));
}

#[test]
fn estimates_are_ordered_and_inside_their_intervals() {
    for name in FIXTURES {
        let set = set_of(vec![fixture(name)]);
        let tails = report_tails(&set).unwrap();
        assert!(!tails.is_empty(), "{name}");
        for tail in &tails {
            for (_, c, t) in &tail.configurations {
                let what = format!("{name} {} {}", tail.metric, c.name);
                let Some(a) = t.analysis() else { continue };
                let probabilities: Vec<f64> = a.estimates.iter().map(|e| e.probability).collect();
                assert_eq!(probabilities, [1e-6, 1e-9, 1e-12], "{what}");
                for e in &a.estimates {
                    assert!(e.ci_low_ns <= e.value_ns && e.value_ns <= e.ci_high_ns, "{what}: {e:?}");
                    assert!((0.0..=1.0).contains(&e.per_hour_probability), "{what}: {e:?}");
                }
                for pair in a.estimates.windows(2) {
                    assert!(pair[0].value_ns <= pair[1].value_ns, "{what}: {:?}", a.estimates);
                    assert!(pair[0].per_hour_probability >= pair[1].per_hour_probability, "{what}");
                }
                assert!(a.chosen < a.fits.len(), "{what}");
            }
        }
    }
}

#[test]
fn the_tail_section_covers_each_probes_main_metric_and_pwcet_requirements() {
    let probes = set_of(vec![fixture("derived-probes.run.json")]);
    let metrics: Vec<String> = report_tails(&probes).unwrap().into_iter().map(|t| t.metric).collect();
    assert_eq!(
        metrics,
        [
            "jitter.jitter",
            "sleep.overshoot",
            "net.activation",
            "ipc:futex.latency",
            "ipc:eventfd.latency",
            "switch.futex",
            "sweep.latency"
        ]
    );
    // A pwcet(P) requirement on another metric adds it, with P among the estimates.
    let set = with_requirements(set_of(vec![fixture(LONG)]), &["timer.jitter pwcet(1e-7) < 10ms"]);
    let tails = report_tails(&set).unwrap();
    let metrics: Vec<&str> = tails.iter().map(|t| t.metric.as_str()).collect();
    assert_eq!(metrics, ["timer.latency", "timer.jitter"]);
    let jitter = &tails[1];
    assert_eq!(jitter.requirements.len(), 1);
    assert_eq!(jitter.config.probabilities, [1e-6, 1e-7, 1e-9, 1e-12]);
    let (_, _, t) = &jitter.configurations[0];
    assert!(t.estimate(1e-7).is_some(), "{:?}", t.outcome);
}

#[test]
fn every_format_gets_the_tail_tables() {
    let set = set_of(vec![fixture(LONG)]);
    let ids: Vec<String> = report_tables(&set).unwrap().into_iter().map(|t| t.id).collect();
    let tail: Vec<&str> = ids.iter().map(String::as_str).filter(|id| id.starts_with("pwcet-")).collect();
    assert_eq!(
        tail,
        [
            "pwcet-timer.latency",
            "pwcet-warnings-timer.latency",
            "pwcet-selection-timer.latency",
            "pwcet-fits-timer.latency",
            "pwcet-tests-timer.latency"
        ]
    );
    // Before loads, activity and environment, after the papers' tables.
    let position = |id: &str| ids.iter().position(|i| i == id).unwrap();
    assert!(position("mean-sd-min-max") < position("pwcet-timer.latency"));
    assert!(position("pwcet-tests-timer.latency") < position("environment"));
}

/// A fixed analysis: what the tables show, independent of the fitting code. Its 120 input
/// blocks were merged in pairs (60 maxima of 2 s blocks).
fn fixed_analysis() -> PwcetAnalysis {
    let pot = |model| matches!(model, TailModel::Gpd | TailModel::Exponential);
    let fit = |model, estimator, location_ns, scale_ns, shape, observations| TailFit {
        model,
        estimator,
        location_ns,
        scale_ns,
        shape,
        observations,
        exceedance_rate: pot(model).then_some(0.005),
        samples_per_block: (!pot(model)).then_some(4_000.0),
    };
    let estimate = |probability: f64, value_ns: f64| PwcetEstimate {
        probability,
        per_hour_probability: -(2_000.0 * 3600.0 * (-probability).ln_1p()).exp_m1(),
        value_ns,
        ci_low_ns: value_ns * 0.9,
        ci_high_ns: value_ns * 1.2,
    };
    let test = |test: &str, on: &str, statistic: f64, p_value: f64| Diagnostic {
        test: test.into(),
        on: on.into(),
        statistic,
        p_value,
        passed: p_value >= 0.05,
    };
    let shape_at = |threshold_ns: f64, exceedances: usize, shape: f64, mean_excess_ns: f64| {
        let half = 1.96 * (1.0 + shape) / (exceedances as f64).sqrt();
        ShapeAtThreshold {
            threshold_ns,
            exceedances,
            shape,
            shape_low: shape - half,
            shape_high: shape + half,
            mean_excess_ns,
        }
    };
    PwcetAnalysis {
        fits: vec![
            fit(TailModel::Gev, Estimator::Mle, 2_500_000.0, 300_000.0, -0.21, 60),
            fit(TailModel::Gumbel, Estimator::Mle, 2_480_000.0, 280_000.0, 0.0, 60),
            fit(TailModel::Gpd, Estimator::Mle, 14_100.0, 2_600_000.0, -0.88, 1_000),
            fit(TailModel::Exponential, Estimator::Mle, 14_100.0, 1_400_000.0, 0.0, 1_000),
        ],
        chosen: 1,
        chosen_because: "Gumbel by maximum likelihood: the likelihood-ratio test does not reject ξ = 0".into(),
        estimates: vec![estimate(1e-6, 3_100_000.0), estimate(1e-9, 3_350_000.0), estimate(1e-12, 3_420_000.0)],
        diagnostics: vec![
            test("Ljung-Box (20 lags)", "block maxima", 21.26, 0.382),
            test("Kolmogorov-Smirnov, first vs second half", "block maxima", 0.117, 0.784),
        ],
        goodness_of_fit: vec![test("Anderson-Darling, held-out blocks", "a random half of the blocks", 3.9, 1.2e-4)],
        curves: TailCurves {
            empirical: vec![(2_000_000.0, 1e-4), (2_900_000.0, 1e-6)],
            fitted: vec![(2_000_000.0, 1e-4), (3_420_000.0, 1e-12)],
            qq: vec![(2_000_000.0, 2_050_000.0), (2_900_000.0, 2_990_000.0)],
            stability: vec![
                shape_at(12_000.0, 2_000, 0.31, 900_000.0),
                shape_at(14_100.0, 1_000, 0.05, 1_400_000.0),
                shape_at(30_000.0, 400, 0.02, 1_450_000.0),
                shape_at(300_000.0, 120, -0.04, 1_380_000.0),
                shape_at(1_500_000.0, 30, -0.3, 1_000_000.0),
            ],
        },
        warnings: vec!["The Anderson-Darling test of the held-out blocks failed (p = 1.2e-4)".into()],
        selection: vec![
            test("likelihood ratio, GEV against Gumbel", "60 maxima of 2 s blocks", 2.1, 0.147),
            test("likelihood ratio, GPD against exponential", "1,000 samples above 14.1 µs", 9.8, 0.0017),
            test("MBPTA-CV, residual coefficient of variation", "1,000 samples above 14.1 µs", 1.31, 0.012),
        ],
        blocks_merged: 2,
        blocks_because: "the maxima of the 1 s blocks are autocorrelated (Ljung-Box p = 0.010); those of 2 s blocks \
                         pass (p = 0.382)"
            .into(),
        threshold_ns: Some(14_100.0),
        threshold_because: "the lowest candidate above which ξ stays inside the intervals of the higher ones".into(),
        defensibility: Defensibility { defensible: true, reasons: Vec::new(), remedies: Vec::new() },
    }
}

/// [`fixed_analysis`], refused: the held-out test failed.
fn refused_analysis() -> PwcetAnalysis {
    PwcetAnalysis {
        defensibility: Defensibility {
            defensible: false,
            reasons: vec!["the fitted tail does not describe held-out data (Anderson-Darling p < 0.001)".into()],
            remedies: vec!["a longer run under a steady load".into()],
        },
        ..fixed_analysis()
    }
}

/// A metric's tail with `analysis` for `idle` and too little data for `loaded`.
fn tail_of(run: &RunResult, analysis: PwcetAnalysis) -> MetricTail<'_> {
    let configuration = |name: &str| Configuration { run, run_index: 0, scenario: "idle", name: name.into() };
    let analysed = |outcome| TailAnalysis {
        metric: "timer.latency".into(),
        samples: 240_000,
        blocks: 120,
        block_s: 1,
        sample_rate_hz: 2_000.0,
        observed_max_ns: Some(2_994_012),
        outcome,
    };
    MetricTail {
        metric: "timer.latency".into(),
        requirements: vec![parse_requirement("timer pwcet(1e-9) < 3ms").unwrap()],
        config: PwcetConfig::default(),
        configurations: vec![
            (0, configuration("idle"), analysed(Ok(Arc::new(analysis)))),
            (
                1,
                configuration("loaded"),
                analysed(Err("the tail analysis could not be made: 2 block maxima and 7 samples above a threshold: \
                              at least 10 of either are needed; run longer"
                    .into())),
            ),
        ],
    }
}

/// A metric's tail with the fixed analysis for `idle` and too little data for `loaded`.
fn fixed_tail(run: &RunResult) -> MetricTail<'_> {
    tail_of(run, fixed_analysis())
}

#[test]
fn tail_tables_as_text() {
    let run = fixture(LONG);
    let tables = metric_tables(&fixed_tail(&run));
    let text: Vec<String> = tables.iter().map(text_table).collect();
    insta::assert_snapshot!("tail_tables_text", text.join("\n"));
    for t in &tables {
        for (row, raw) in t.rows.iter().zip(&t.csv_rows) {
            assert_eq!(row.len(), t.columns.len(), "{}", t.id);
            assert_eq!(raw.len(), t.columns.len(), "{}", t.id);
        }
    }
    // Raw values for spreadsheets: ns and probabilities unformatted.
    let pwcet = &tables[0];
    let raw = &pwcet.csv_rows[1];
    assert_eq!((raw[0].as_str(), raw[1].as_str(), raw[3].as_str()), ("idle", "1e-9", "3350000"));
    // A defensible analysis: no status column, no refusal.
    assert!(!pwcet.columns.iter().any(|c| c == "status"), "{:?}", pwcet.columns);
    assert!(!text.join("\n").contains("not defensible from this run"));
    assert!(!text.join("\n").contains("fitted, not defensible"));
    // The blocks the GEV and Gumbel were fitted to are 2 s long (1 s blocks merged in pairs).
    assert!(pwcet.rows[0].last().unwrap().ends_with("60 maxima of 2 s blocks"), "{:?}", pwcet.rows[0]);
}

#[test]
fn tail_tables_of_a_refused_pwcet_as_text() {
    let run = fixture(LONG);
    let tables = metric_tables(&tail_of(&run, refused_analysis()));
    let text: Vec<String> = tables.iter().map(text_table).collect();
    insta::assert_snapshot!("tail_tables_text_not_defensible", text.join("\n"));
    let pwcet = &tables[0];
    // The only configuration analysed is refused: the title says so for the whole table.
    assert!(pwcet.title.contains(": not defensible from this run; fitted latency"), "{}", pwcet.title);
    assert_eq!(pwcet.columns[1], "status");
    let statuses: Vec<&str> = pwcet.rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(statuses, ["fitted, not defensible", "fitted, not defensible", "fitted, not defensible", "no analysis"]);
    // The fitted values stay, raw too.
    assert_eq!(pwcet.csv_rows[1][4], "3350000");
    assert!(
        pwcet.notes[0].starts_with(
            "idle: pWCET not defensible from this run — the fitted tail does not describe held-out data \
             (Anderson-Darling p < 0.001); a longer run under a steady load."
        ),
        "{:?}",
        pwcet.notes
    );
}

#[test]
fn tail_tables_as_json() {
    let run = fixture(LONG);
    let tables: Vec<_> = metric_tables(&tail_of(&run, refused_analysis()));
    insta::assert_snapshot!("tail_tables_json_not_defensible", serde_json::to_string_pretty(&tables).unwrap());
}

#[test]
fn the_stability_figure_draws_the_shape_the_mean_excess_and_the_threshold() {
    let run = fixture(LONG);
    let figures = metric_tail_figures(&tail_of(&run, refused_analysis())).unwrap();
    let ids: Vec<&str> = figures.figures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        ["fig-pwcet-exceedance-timer-latency", "fig-pwcet-qq-timer-latency", "fig-pwcet-stability-timer-latency"]
    );
    let stability = &figures.figures[2];
    for bad in ["NaN", "inf", "Infinity"] {
        assert!(!stability.svg.contains(bad), "{bad} in the SVG");
    }
    let text = texts(&stability.svg);
    for wanted in [
        "shape ξ of the GPD above u",
        "mean excess above u (µs)",
        "Dots: ξ (top) and mean excess (bottom) at each candidate u · bars: 95 % interval · dashed: u used",
        "u = 14.1 µs",
        "idle (fitted, not defensible)",
        "ξ = 0: an exponential tail",
    ] {
        assert!(text.iter().any(|t| t == wanted), "no {wanted:?}: {text:?}");
    }
    assert!(text.iter().any(|t| t.starts_with("threshold u (µs")), "{text:?}");
    // Five candidates: five dots per panel, five interval bars.
    assert_eq!(stability.svg.matches("<circle").count(), 10, "dots");
    assert!(stability.svg.matches("<polyline").count() >= 5 + 2, "bars and lines");
    assert!(stability.description.contains("idle 14.1 µs"), "{}", stability.description);
    // The exceedance figure says the refused configuration's bars are fitted values.
    assert!(figures.figures[0].description.contains("The pWCET of idle is not defensible from this run"));
    // Without stability points there is no stability figure.
    let mut plain = fixed_analysis();
    plain.curves.stability.clear();
    let figures = metric_tail_figures(&tail_of(&run, plain)).unwrap();
    assert_eq!(figures.figures.len(), 2);
}

#[test]
fn tail_section_in_markdown() {
    let set = with_requirements(set_of(vec![fixture(LONG)]), &["timer pwcet(1e-9) < 3ms"]);
    let md = MarkdownReport.render(&set).unwrap();
    let start = md.find("\n## pWCET of ").expect("the tail section");
    let end = md[start..].find("\n## Environment").expect("the environment after it") + start;
    insta::assert_snapshot!("tail_section_markdown", &md[start..end]);
}

/// The text of every `<text>` element of an SVG, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|rest| rest.split_once('>').and_then(|(_, body)| body.split_once("</text>")))
        .map(|(text, _)| text.trim().to_string())
        .collect()
}

#[test]
fn the_figures_are_log_scaled_and_finite() {
    let set = with_requirements(set_of(vec![fixture(LONG)]), &["timer pwcet(1e-9) < 3ms", "timer max < 2ms"]);
    let tails = tail_figures(&set).unwrap();
    assert_eq!(tails.len(), 1);
    let figures = &tails[0].figures;
    let ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["fig-pwcet-exceedance-timer-latency", "fig-pwcet-qq-timer-latency"]);
    for f in figures {
        assert!(f.svg.starts_with("<svg class=\"rtlab-svg\""), "{}", f.id);
        for bad in ["NaN", "inf", "Infinity"] {
            assert!(!f.svg.contains(bad), "{}: {bad} in the SVG", f.id);
        }
        assert!(f.svg.matches("<polyline").count() >= 2, "{}: lines", f.id);
        assert!(f.svg.contains("<circle"), "{}: measured points", f.id);
        assert!(!f.description.is_empty());
    }
    let exceedance = texts(&figures[0].svg);
    // The probability axis is logarithmic down to the smallest probability of the table.
    for tick in ["1e-3", "1e-6", "1e-9", "1e-12"] {
        assert!(exceedance.iter().any(|t| t == tick), "no tick {tick}: {exceedance:?}");
    }
    assert!(exceedance.iter().any(|t| t == "exceedance probability per activation (log)"));
    // Both requirements as bound lines, labelled without the metric.
    assert!(exceedance.iter().any(|t| t == "pwcet(1e-9) &lt; 3ms"), "the pwcet bound: {exceedance:?}");
    assert!(exceedance.iter().any(|t| t == "max &lt; 2ms"), "the max bound: {exceedance:?}");
    assert!(texts(&figures[1].svg).iter().any(|t| t.starts_with("quantile of the fitted model")));
    // The PNG export takes them too, after the metrics' own figures.
    let all: Vec<String> = all_figures(&set).unwrap().into_iter().map(|f| f.id).collect();
    let at = all.iter().position(|id| id == "fig-pwcet-exceedance-timer-latency").unwrap();
    assert!(all[..at].iter().any(|id| id == "fig-histogram-timer-latency"), "{all:?}");
}

#[test]
fn too_little_data_gives_sentences_not_figures() {
    let set = with_requirements(set_of(vec![thin(4)]), &["timer pwcet(1e-9) < 1s"]);
    let tails = tail_figures(&set).unwrap();
    let latency = tails.iter().find(|t| t.metric == "timer.latency").unwrap();
    assert!(latency.figures.is_empty());
    assert_eq!(latency.notes.len(), 1, "{:?}", latency.notes);
    assert!(
        latency.notes[0].starts_with("pWCET of Timer latency: idle: the tail analysis could not be made:"),
        "{:?}",
        latency.notes
    );
    let tables = report_tables(&set).unwrap();
    let pwcet = tables.iter().find(|t| t.id == "pwcet-timer.latency").unwrap();
    assert_eq!(pwcet.rows, [["idle", "-", "-", "-", "-", "-", "10.3", "none"]]);
    let warnings = tables.iter().find(|t| t.id == "pwcet-warnings-timer.latency").unwrap();
    assert!(warnings.rows[0][1].starts_with("no pWCET: the tail analysis could not be made"), "{:?}", warnings.rows);
    assert!(!tables.iter().any(|t| t.id == "pwcet-fits-timer.latency"), "no fits without an analysis");
    // The HTML report says so where the figures would be.
    let html = HtmlReport.render(&set).unwrap();
    let section = &html[html.find("<section id=\"tail\">").unwrap()..];
    assert!(section.contains("the tail analysis could not be made"));
    assert!(!section.contains("fig-pwcet-"));
    // The verdict: not met, with the reason.
    let check = &set.verdict.as_ref().unwrap().checks[0];
    assert!(!check.met && check.measured_ns.is_none());
}

#[test]
fn the_html_report_has_a_tail_section_in_reading_order() {
    let set = with_requirements(set_of(vec![fixture(LONG)]), &["timer pwcet(1e-9) < 3ms"]);
    let html = HtmlReport.render(&set).unwrap();
    assert!(html.contains("<li><a href=\"#tail\">Tail analysis: pWCET</a></li>"));
    let section_at = html.find("<section id=\"tail\">").expect("the tail section");
    let tables_at = html.find("<h2 id=\"tables\">").expect("the tables");
    assert!(section_at < tables_at, "the tail section comes before the other tables");
    let at = |needle: &str| html[section_at..].find(needle).unwrap_or_else(|| panic!("no {needle}"));
    let order = [
        at("id=\"table-pwcet-timer.latency\""),
        at("id=\"table-pwcet-warnings-timer.latency\""),
        at("id=\"fig-pwcet-exceedance-timer-latency\""),
        at("id=\"fig-pwcet-qq-timer-latency\""),
        at("id=\"table-pwcet-selection-timer.latency\""),
        at("id=\"table-pwcet-fits-timer.latency\""),
        at("id=\"table-pwcet-tests-timer.latency\""),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    // Tail tables appear once, in their section only.
    assert_eq!(html.matches("id=\"table-pwcet-timer.latency\"").count(), 1);
}

/// The HTML of the tail section, each `<svg>` replaced by its label (the drawing is tested
/// on its own: a snapshot of its coordinates would move with every change of layout).
fn tail_section_html(html: &str) -> String {
    let start = html.find("<section id=\"tail\">").expect("the tail section");
    let end = html[start..].find("</section>\n<h2 id=\"tables\">").expect("the tables after it") + start;
    let mut out = String::new();
    let mut rest = &html[start..end];
    while let Some(at) = rest.find("<svg") {
        out.push_str(&rest[..at]);
        let svg_end = rest[at..].find("</svg>").expect("closed") + at + "</svg>".len();
        let label = rest[at..svg_end].split("aria-label=\"").nth(1).and_then(|l| l.split('"').next()).unwrap_or("");
        out.push_str(&format!("<svg aria-label=\"{label}\">…</svg>"));
        rest = &rest[svg_end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn tail_section_in_html() {
    let set = with_requirements(set_of(vec![fixture(LONG)]), &["timer pwcet(1e-9) < 3ms"]);
    let html = HtmlReport.render(&set).unwrap();
    insta::assert_snapshot!("tail_section_html", tail_section_html(&html));
}

/// The 120 s fixture with per-second maxima that climb steadily through the run (from the
/// median to the largest sample): a trend, so the block maxima are neither independent nor
/// identically distributed.
fn trending() -> RunResult {
    let mut run = fixture(LONG);
    for m in &mut run.measurements {
        let (Some(summary), Some(max)) = (m.summary.as_ref(), m.moments.max()) else { continue };
        let (low, n) = (summary.p50, m.per_second_max_ns.len().max(2));
        m.per_second_max_ns = (0..n).map(|i| Some(low + (max - low) * i as i64 / (n as i64 - 1))).collect();
    }
    run.check().unwrap();
    run
}

#[test]
fn a_trend_makes_the_pwcet_not_defensible_in_every_format() {
    let set = set_of(vec![trending()]);
    let tails = report_tails(&set).unwrap();
    let (_, _, t) = &tails[0].configurations[0];
    let analysis = t.analysis().expect("an analysis");
    assert!(!analysis.defensibility.defensible, "a trend is not defensible: {:?}", analysis.defensibility);
    let refusal = analysis.defensibility.refusal().unwrap();
    // Terminal (the tables as `rtlab compare` prints them).
    let tables = report_tables(&set).unwrap();
    let text: String = tables.iter().filter(|t| t.id.starts_with("pwcet-")).map(text_table).collect();
    assert!(text.contains("not defensible from this run"), "{text}");
    assert!(text.contains("fitted, not defensible"), "{text}");
    assert!(text.contains(&format!("idle: pWCET {}", refusal.trim_end_matches('.'))), "{text}");
    // Markdown.
    let md = MarkdownReport.render(&set).unwrap();
    assert!(md.contains("## pWCET of Timer latency (timer.latency): not defensible from this run"), "{md}");
    assert!(md.contains("| idle | fitted, not defensible | 1e-9 |"), "{md}");
    assert!(md.contains(&format!("idle: pWCET {}", refusal.trim_end_matches('.'))));
    // HTML: a box above the table with the reasons, the table's rows marked.
    let html = HtmlReport.render(&set).unwrap();
    let section = tail_section_html(&html);
    let boxed = section.find("<div class=\"banner warning refusal\">").expect("the refusal box");
    assert!(boxed < section.find("id=\"table-pwcet-timer.latency\"").unwrap(), "the box comes first");
    assert!(section.contains("<h3>pWCET of Timer latency: not defensible from this run</h3>"), "{section}");
    assert!(section.contains("<td class=\"l\">fitted, not defensible</td>"), "{section}");
    let reason = rtlab_report::text::escape(&analysis.defensibility.reasons[0]);
    assert!(section.contains(&reason), "{reason} in {section}");
}

#[test]
fn the_json_report_has_the_analyses_as_data() {
    use rtlab_report::json_report::JsonReport;
    let json =
        |set: &ReportSet| -> serde_json::Value { serde_json::from_str(&JsonReport.render(set).unwrap()).unwrap() };
    let long = json(&set_of(vec![fixture(LONG)]));
    let entry = &long["pwcet"][0];
    assert_eq!(entry["metric"], "timer.latency");
    assert_eq!(entry["configuration"], "idle");
    assert_eq!(entry["blocks"], 120);
    assert_eq!(entry["not_analysed"], serde_json::Value::Null);
    let estimates = entry["analysis"]["estimates"].as_array().unwrap();
    assert_eq!(estimates.len(), 3);
    assert!(estimates.iter().all(|e| e["value_ns"].as_f64().is_some() && e["ci_high_ns"].as_f64().is_some()));
    assert!(entry["analysis"].get("curves").is_none(), "the figures' points stay out");
    let thin = json(&set_of(vec![thin(4)]));
    let entry = &thin["pwcet"][0];
    assert_eq!(entry["analysis"], serde_json::Value::Null);
    assert!(entry["not_analysed"].as_str().unwrap().starts_with("the tail analysis could not be made"), "{entry}");
}
