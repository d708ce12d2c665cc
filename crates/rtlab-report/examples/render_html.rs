//! Renders report.html from saved runs, and says how long it took:
//!
//!     cargo run --release -p rtlab-report --example render_html -- OUT.html RESULT_DIR|run.json... \
//!         [--require "timer max < 500us"]...
//!
//! (`rtlab report`/`rtlab compare` do the same with all their options; this example keeps
//! the HTML renderer measurable on its own, see bench/report-speed.)

use rtlab_report::html::HtmlReport;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let mut args: Vec<String> = Vec::new();
    let mut requirements = Vec::new();
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        if arg == "--require" {
            match argv.next().map(|text| rtlab_analysis::requirement::parse_requirement(&text)) {
                Some(Ok(r)) => requirements.push(r),
                Some(Err(e)) => {
                    eprintln!("render_html: {e}");
                    return ExitCode::from(2);
                }
                None => {
                    eprintln!("render_html: --require needs a requirement");
                    return ExitCode::from(2);
                }
            }
        } else {
            args.push(arg);
        }
    }
    let Some((out, sources)) = args.split_first().filter(|(_, s)| !s.is_empty()) else {
        eprintln!("usage: render_html OUT.html RESULT_DIR|run.json... [--require REQUIREMENT]...");
        return ExitCode::from(2);
    };
    let start = Instant::now();
    let mut runs = Vec::new();
    for source in sources {
        match RunResult::load(Path::new(source)) {
            Ok(run) => runs.push(SourcedRun { source: source.clone(), run }),
            Err(e) => {
                eprintln!("render_html: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let loaded = start.elapsed();
    let mut set = ReportSet { runs, verdict: None };
    if !requirements.is_empty() {
        match rtlab_report::verdict::judge(&set, &requirements) {
            Ok(v) => set.verdict = Some(v),
            Err(e) => {
                eprintln!("render_html: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let html = match HtmlReport.render(&set) {
        Ok(html) => html,
        Err(e) => {
            eprintln!("render_html: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::write(out, &html) {
        eprintln!("render_html: {out}: {e}");
        return ExitCode::from(3);
    }
    let total = start.elapsed();
    let samples: u64 = set.runs.iter().flat_map(|r| &r.run.measurements).map(|m| m.count).sum();
    println!(
        "{} runs, {samples} samples: loaded in {:.3} s, rendered and written in {:.3} s, total {:.3} s ({} KiB)",
        set.runs.len(),
        loaded.as_secs_f64(),
        (total - loaded).as_secs_f64(),
        total.as_secs_f64(),
        html.len() / 1024
    );
    ExitCode::SUCCESS
}
