//! `rtlab import`: reads the files, converts them (rtlab_formats::import), and saves a
//! results directory like `rtlab run` does: run.json and report.html.

use crate::cli::{ImportArgs, ImportFrom, UnitArg};
use crate::errors::{environment, usage, EXIT_OK};
use rtlab_formats::import::{ImportFormat, ImportOptions, SourceFile, SourceUnit};
use rtlab_report::Exporter;

pub fn cmd_import(args: &ImportArgs) -> anyhow::Result<u8> {
    let format = match args.from {
        ImportFrom::Cyclictest => ImportFormat::Cyclictest,
        ImportFrom::Rtla => ImportFormat::Rtla,
        ImportFrom::Jitterdebugger => ImportFormat::Jitterdebugger,
        ImportFrom::Xenomai => ImportFormat::Xenomai,
        ImportFrom::Oslat => ImportFormat::Oslat,
    };
    let interval_ns = args.interval.as_deref().map(crate::plan_values::parse_interval).transpose()?;
    if let Some(label) = &args.label {
        crate::experiment::check_label(label)?;
    }
    let options = ImportOptions {
        label: args.label.clone(),
        unit: args.unit.map(|u| match u {
            UnitArg::Us => SourceUnit::Us,
            UnitArg::Ns => SourceUnit::Ns,
        }),
        interval_ns,
    };
    let mut files = Vec::new();
    for path in &args.files {
        let bytes = std::fs::read(path).map_err(|e| usage(format!("{}: cannot read it: {e}", path.display())))?;
        files.push(SourceFile { path: path.display().to_string(), bytes });
    }
    let run = rtlab_formats::import::import(format, &files, &options)?;

    let output = args.output.clone().unwrap_or_else(|| {
        std::path::PathBuf::from("results").join(format!(
            "{}-{}",
            chrono::Local::now().format("%Y%m%d-%H%M%S"),
            crate::experiment::label_from(&run.label)
        ))
    });
    if output.join("run.json").exists() {
        return Err(usage(format!(
            "--output {}: already holds a run.json; choose another directory",
            output.display()
        )));
    }
    std::fs::create_dir_all(&output)
        .map_err(|e| usage(format!("--output {}: cannot create the directory: {e}", output.display())))?;
    let run_json = run.save(&output).map_err(|e| environment(format!("cannot save the import: {e}")))?;
    let report = crate::run_report::write_report_html(&run, &output);
    if !args.quiet {
        let mut text = rtlab_report::terminal::TerminalSummary.export(&run)?;
        if report.is_ok() {
            text.push_str(&format!("Report: {}\n", output.join("report.html").display()));
        }
        text.push_str(&format!("Results: {}\n", run_json.display()));
        crate::print(&text)?;
    }
    if let Err(why) = report {
        eprintln!("rtlab: warning: report.html was not written: {why}");
    }
    Ok(EXIT_OK)
}
