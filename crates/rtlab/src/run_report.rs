//! The page a finished run leaves beside its run.json: report.html, made from the saved
//! result by rtlab-report (the runner measures and saves; it does not present).

use rtlab_results::run::RunResult;
use std::path::Path;

/// report.html of a finished (or imported) run, in its results directory.
pub fn write_report_html(result: &RunResult, dir: &Path) -> Result<std::path::PathBuf, String> {
    use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
    let set = ReportSet {
        runs: vec![SourcedRun { source: dir.display().to_string(), run: result.clone() }],
        verdict: result.verdict.clone(),
    };
    let path = dir.join("report.html");
    let html = rtlab_report::html::HtmlReport.render(&set).map_err(|e| e.to_string())?;
    rtlab_results::run::write_atomically(&path, html.as_bytes()).map_err(|e| e.to_string())?;
    Ok(path)
}
