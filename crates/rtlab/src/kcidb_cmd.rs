//! `rtlab export --format kcidb`: a run or a suite directory -> a KCIDB submission
//! (rtlab_formats::export::kcidb), with the pWCET of each scenario's main metric computed
//! here, where the tail analysis (rtlab-report) is within reach.

use crate::cli::ExportArgs;
use crate::errors::{usage, EXIT_OK};
use rtlab_formats::export::kcidb::{KcidbIds, KcidbReport, PwcetFigure, PwcetValue};
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use rtlab_results::suite::{LoadedSuite, SuiteRecord};

pub fn export_kcidb(args: &ExportArgs) -> anyhow::Result<u8> {
    let requirements = crate::experiment::parse_requirements(&args.require)?;
    let (runs, suite) = if SuiteRecord::is_suite(&args.result) {
        let loaded = LoadedSuite::load(&args.result)?;
        let runs = loaded
            .record
            .conditions
            .iter()
            .zip(loaded.runs)
            .filter_map(|(c, run)| {
                run.map(|run| SourcedRun { source: format!("{}/{}", args.result.display(), c.directory), run })
            })
            .collect::<Vec<_>>();
        (runs, Some(loaded.record))
    } else {
        let run = RunResult::load(&args.result)?;
        (vec![SourcedRun { source: args.result.display().to_string(), run }], None)
    };
    let mut set = ReportSet { runs, verdict: None };
    if !requirements.is_empty() {
        set.verdict = Some(rtlab_report::verdict::judge(&set, &requirements)?);
    }
    let mut pwcet = Vec::new();
    for sourced in &set.runs {
        pwcet.extend(pwcet_figures(&sourced.run)?);
    }
    let exporter = KcidbReport {
        ids: KcidbIds {
            origin: args.origin.clone(),
            checkout_id: args.checkout_id.clone(),
            build_id: args.build_id.clone(),
            test_id_prefix: args.test_id_prefix.clone(),
            tests_only: args.tests_only,
        },
        pwcet,
        suite,
    };
    let text = exporter.render(&set)?;
    match &args.output {
        Some(path) => {
            rtlab_results::run::write_atomically(path, text.as_bytes())
                .map_err(|e| usage(format!("--output {}: {e}", path.display())))?;
            eprintln!("rtlab: wrote the KCIDB submission to {}", path.display());
        }
        None => crate::print(&text)?,
    }
    Ok(EXIT_OK)
}

/// The pWCET at 1e-9 per activation of each scenario's main metric, as the terminal summary
/// states it: a number where it can be quoted, else why not.
fn pwcet_figures(run: &RunResult) -> anyhow::Result<Vec<PwcetFigure>> {
    let digest = rtlab_report::digest::RunDigest::of(run)?;
    let mut out = Vec::new();
    for scenario in &digest.scenarios {
        let Some(metric) = scenario.main_metric.as_deref() else { continue };
        let Some(h) = rtlab_report::pwcet::summary_headline(run, &scenario.name, Some(metric))? else { continue };
        let estimate = match (&h.estimate, &h.fit) {
            (Some(e), Some(fit)) => Ok(PwcetValue {
                value_ns: e.value_ns,
                ci_low_ns: e.ci_low_ns,
                ci_high_ns: e.ci_high_ns,
                confidence: h.confidence,
                fit: fit.clone(),
            }),
            _ => Err(h.not_quoted.clone().unwrap_or_else(|| "not estimated".to_string())),
        };
        out.push(PwcetFigure {
            run_label: run.label.clone(),
            scenario: scenario.name.clone(),
            metric: metric.to_string(),
            probability: h.probability,
            estimate,
        });
    }
    Ok(out)
}
