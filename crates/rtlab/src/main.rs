//! rtlab: argument parsing -> validated experiment -> lifecycle runner -> results
//! directory -> exporters.

mod check_cmd;
mod cli;
mod errors;
mod experiment;
mod experiment_file;
mod fleet_cmd;
mod gate_cmd;
mod history_cmd;
mod import_cmd;
mod kcidb_cmd;
mod lava_cmd;
mod monitor_cmd;
mod noise_run;
mod packaging;
mod plan_values;
mod probe_build;
mod probe_plan;
mod progress;
mod run_report;
mod runner;
mod simulated_host;
mod split_run;
mod station_cmd;
mod suite;
mod until;

use clap::Parser;
use cli::{Cli, Command, ExportArgs, LoadHostArgs, ReportArgs, ReportFormat, RunArgs, SysinfoArgs};
use errors::{exit_code_of, usage, EXIT_INTERRUPTED, EXIT_NOT_MET, EXIT_OK};
use rtlab_report::Exporter;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // clap prints usage errors and exits 2; --help and --version exit 0.
        Err(e) => e.exit(),
    };
    let command = cli.command.unwrap_or_else(|| match Cli::parse_from(["rtlab", "run"]).command {
        Some(c) => c,
        None => unreachable!("\"run\" parses to the run command"),
    });
    let outcome = match command {
        Command::Run(args) => cmd_run(&args),
        Command::Report(args) => cmd_report(&args, false),
        Command::Compare(args) => cmd_report(&args, true),
        Command::Gate(args) => gate_cmd::cmd_gate(&args),
        Command::Sysinfo(args) => cmd_sysinfo(&args),
        Command::Export(args) => cmd_export(&args),
        Command::Import(args) => import_cmd::cmd_import(&args),
        Command::Check(args) => check_cmd::cmd_check(&args),
        Command::Suite(args) => suite::cmd_suite(&args),
        Command::Monitor(args) => monitor_cmd::cmd_monitor(&args),
        Command::History(args) => history_cmd::cmd_history(&args),
        Command::Fleet(args) => fleet_cmd::cmd_fleet(&args),
        Command::Station(args) => station_cmd::cmd_station(&args),
        Command::Completions(args) => packaging::cmd_completions(&args),
        Command::Manpage(args) => packaging::cmd_manpage(&args),
        Command::LoadHost(args) => cmd_load_host(&args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("rtlab: error: {}", errors::one_line(&error));
            ExitCode::from(exit_code_of(&error))
        }
    }
}

/// Writes to stdout; a reader that went away (`rtlab run | head`) is not an error: the
/// results are already saved.
fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn cmd_run(args: &RunArgs) -> anyhow::Result<u8> {
    let merged;
    let args = match &args.experiment {
        Some(path) => {
            merged = experiment_file::ExperimentFile::read(path)?.under(args.clone());
            &merged
        }
        None => args,
    };
    let host = runner::host_of(args.simulate);
    let plan = experiment::RunPlan::from_args(args, &host.online_cpus, &host.hostname, chrono::Local::now())?;
    // --gate: the baseline is checked before anything is measured (exit 2 when it cannot serve).
    let gate = gate_cmd::Baseline::of_run(&args.gating)?;

    // First SIGINT/SIGTERM: stop sampling and save what was measured. Second: exit now.
    let stop = runner::stop_on_signals()?;

    let command_line: Vec<String> = std::env::args().collect();
    let finished = match runner::run(&plan, host, command_line, stop) {
        Ok(finished) => finished,
        Err(e) => return gate_cmd::after_failed_run(gate.as_ref(), e),
    };
    let result = &finished.result;
    // report.html, or why it could not be written (the results are saved either way).
    let report_html = run_report::write_report_html(result, &plan.output);
    if plan.json {
        let exporter = rtlab_report::json::JsonSummary { run_json: Some(finished.run_json.display().to_string()) };
        print(&exporter.export(result)?)?;
    } else if !plan.quiet {
        let mut text = rtlab_report::terminal::TerminalSummary.export(result)?;
        if let Ok(path) = &report_html {
            text.push_str(&format!("Report: {}\n", path.display()));
        }
        text.push_str(&format!("Results: {}\n", finished.run_json.display()));
        print(&text)?;
    } else if let Some(v) = &result.verdict {
        // Quiet: the verdict's one line is all a CI log needs.
        print(&format!("Verdict: {}\n", v.summary))?;
    }
    if let Err(why) = &report_html {
        eprintln!("rtlab: warning: report.html was not written: {why}");
    }
    if let Some(gate) = &gate {
        // The gate judges what was saved: a failed load or stopped raw samples are warnings.
        for why in [&finished.failed_to_load, &finished.raw_stopped].into_iter().flatten() {
            eprintln!("rtlab: warning: {why}; the results, marked so, are in {}", finished.run_json.display());
        }
        return gate_cmd::after_run(gate, result, plan.json);
    }
    // Precedence: a load that failed (3), raw samples that stopped for want of space (3),
    // then an interruption (130), then the verdict (1).
    if let Some(why) = finished.failed_to_load {
        return Err(errors::environment(format!(
            "{why}; the results, marked so, are in {}",
            finished.run_json.display()
        )));
    }
    if let Some(why) = finished.raw_stopped {
        return Err(errors::environment(format!(
            "{why}; the results, marked so, are in {}",
            finished.run_json.display()
        )));
    }
    Ok(if result.interrupted {
        EXIT_INTERRUPTED
    } else if result.verdict.as_ref().is_some_and(|v| !v.met) {
        EXIT_NOT_MET
    } else {
        EXIT_OK
    })
}

/// `rtlab report` and `rtlab compare`: saved runs -> terminal text and one report document.
fn cmd_report(args: &ReportArgs, compare: bool) -> anyhow::Result<u8> {
    use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
    // Suite directories (suite.json) have their own report: the paper's tables.
    if args.results.iter().any(|p| rtlab_results::suite::SuiteRecord::is_suite(p)) {
        return suite::cmd_report_suites(args, compare);
    }
    let requirements = experiment::parse_requirements(&args.require)?;
    let mut runs = Vec::new();
    // A monitor database is read as a run: the range --since/--until of its history.
    let histories = args.results.iter().filter(|p| rtlab_history::HistoryDb::is_history(p)).count();
    if histories == 0 && (args.since.is_some() || args.until.is_some()) {
        return Err(usage(
            "--since/--until select a range of a monitor database (rtlab monitor --db); no RESULT is one",
        ));
    }
    let range = history_cmd::parse_range(args.since.as_deref(), args.until.as_deref(), history_cmd::now_ns())?;
    for path in &args.results {
        let run = if rtlab_history::HistoryDb::is_history(path) {
            rtlab_history::HistoryDb::open_existing(path)?.run_of_range(range)?
        } else {
            rtlab_results::run::RunResult::load(path)?
        };
        runs.push(SourcedRun { source: path.display().to_string(), run });
    }
    let mut set = ReportSet { runs, verdict: None };
    if !requirements.is_empty() {
        set.verdict = Some(rtlab_report::verdict::judge(&set, &requirements)?);
    }
    if args.format == ReportFormat::Png {
        return write_png_figures(args, compare, &set);
    }
    if args.format == ReportFormat::Lava {
        lava_cmd::report_runs(args, &set)?;
        let verdict = set.effective_verdict();
        return Ok(if verdict.is_some_and(|v| !v.met) { EXIT_NOT_MET } else { EXIT_OK });
    }
    let selection = rtlab_formats::export::Selection { metric: args.metric.clone(), scenario: args.scenario.clone() };
    let document = match args.format {
        ReportFormat::Html => rtlab_report::html::HtmlReport.render(&set)?,
        ReportFormat::CyclictestHist => rtlab_formats::export::cyclictest::CyclictestHist { selection }.render(&set)?,
        ReportFormat::CyclictestJson => rtlab_formats::export::cyclictest::CyclictestJson { selection }.render(&set)?,
        ReportFormat::HdrLog => rtlab_formats::export::hdr_log::HdrLog { selection }.render(&set)?,
        ReportFormat::Junit => rtlab_formats::export::junit::JunitReport.render(&set)?,
        ReportFormat::Openmetrics => rtlab_formats::export::openmetrics::OpenMetrics.render(&set)?,
        ReportFormat::Md => rtlab_report::markdown::MarkdownReport.render(&set)?,
        ReportFormat::Csv => rtlab_report::csv_report::CsvReport.render(&set)?,
        ReportFormat::Json => rtlab_report::json_report::JsonReport.render(&set)?,
        ReportFormat::Png | ReportFormat::Lava => unreachable!("handled above"),
    };
    let destination = match (&args.output, args.format) {
        (Some(path), _) => Some(path.clone()),
        (None, ReportFormat::Html) => Some(default_report_path(args, compare)),
        (None, _) => None,
    };
    let verdict = set.effective_verdict();
    match destination {
        // The document goes to stdout: nothing else may.
        None => print(&document)?,
        Some(path) => {
            let mut text = if compare { compare_text(&set)? } else { report_text(&set)? };
            // `report` shows the saved verdicts in the run summaries; `compare` shows them here.
            let shown = if compare { verdict.as_ref() } else { set.verdict.as_ref() };
            if let Some(v) = shown {
                text.push('\n');
                text.push_str(&rtlab_report::terminal::verdict_text(v));
            }
            rtlab_results::run::write_atomically(&path, document.as_bytes())
                .map_err(|e| errors::output_error(args.output.is_some(), format!("cannot write the report: {e}")))?;
            text.push_str(&format!("Report: {}\n", path.display()));
            print(&text)?;
        }
    }
    Ok(if verdict.is_some_and(|v| !v.met) { EXIT_NOT_MET } else { EXIT_OK })
}

/// `report|compare --format png`: every figure as `<figure id>.png` into the output
/// directory, one line per file written (after the verdict, when requirements were given).
fn write_png_figures(args: &ReportArgs, compare: bool, set: &rtlab_results::set::ReportSet) -> anyhow::Result<u8> {
    // Fonts first: without them nothing is written.
    let renderer = rtlab_report::png::PngRenderer::with_system_fonts()?;
    let figures = rtlab_report::figures::all_figures(set)?;
    let dir = args.output.clone().unwrap_or_else(|| default_figures_dir(args, compare));
    let cannot = |what: String| errors::output_error(args.output.is_some(), what);
    std::fs::create_dir_all(&dir)
        .map_err(|e| cannot(format!("cannot create the figure directory {}: {e}", dir.display())))?;
    if let Some(v) = &set.verdict {
        print(&format!("{}\n", rtlab_report::terminal::verdict_text(v)))?;
    }
    for figure in &figures {
        let path = dir.join(format!("{}.png", figure.id));
        let png = renderer.render(&figure.svg)?;
        rtlab_results::run::write_atomically(&path, &png)
            .map_err(|e| cannot(format!("cannot write the figure: {e}")))?;
        print(&format!("{}\n", path.display()))?;
    }
    let verdict = set.effective_verdict();
    Ok(if verdict.is_some_and(|v| !v.met) { EXIT_NOT_MET } else { EXIT_OK })
}

/// Where `--format png` writes when --output is not given: `figures/` in the results
/// directory of a single run (`report`), else ./rtlab-figures/.
fn default_figures_dir(args: &ReportArgs, compare: bool) -> std::path::PathBuf {
    match (&args.results[..], compare) {
        ([one], false) if one.is_dir() => one.join("figures"),
        ([one], false) => one.parent().unwrap_or(std::path::Path::new(".")).join("figures"),
        _ => "rtlab-figures".into(),
    }
}

/// Where an HTML report goes when --output is not given: into the results directory of a
/// single run (`report`), else into the current directory.
fn default_report_path(args: &ReportArgs, compare: bool) -> std::path::PathBuf {
    match (&args.results[..], compare) {
        ([one], false) if one.is_dir() => one.join("report.html"),
        ([one], false) => one.parent().unwrap_or(std::path::Path::new(".")).join("report.html"),
        (_, false) => "rtlab-report.html".into(),
        (_, true) => "rtlab-compare.html".into(),
    }
}

/// The terminal summary of each run; with requirements given, the verdicts saved with the
/// runs are left out (the new verdict follows).
fn report_text(set: &rtlab_results::set::ReportSet) -> anyhow::Result<String> {
    let mut text = String::new();
    for (i, sourced) in set.runs.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let summary = if set.verdict.is_some() && sourced.run.verdict.is_some() {
            let mut run = sourced.run.clone();
            run.verdict = None;
            rtlab_report::terminal::TerminalSummary.export(&run)?
        } else {
            rtlab_report::terminal::TerminalSummary.export(&sourced.run)?
        };
        text.push_str(&summary);
    }
    Ok(text)
}

/// `compare` on the terminal: the configurations, every table side by side, the warnings.
fn compare_text(set: &rtlab_results::set::ReportSet) -> anyhow::Result<String> {
    let mut text = String::from("Configurations:\n");
    for (i, c) in set.configurations().iter().enumerate() {
        let letter = if i == 0 { " (A, the baseline)" } else { "" };
        text.push_str(&format!(
            "  {}{letter}: run {} from {}, kernel {}\n",
            c.name, c.run.label, set.runs[c.run_index].source, c.run.host.kernel_release
        ));
    }
    for table in rtlab_report::tables::report_tables(set)? {
        // The verdict is printed after the tables.
        if table.id != "verdict-checks" {
            text.push('\n');
            text.push_str(&rtlab_report::tables::text_table(&table));
        }
    }
    let warnings = set.warnings();
    if !warnings.is_empty() {
        text.push_str("\nWarnings:\n");
        for w in warnings {
            text.push_str(&format!("  ! {w}\n"));
        }
    }
    Ok(text)
}

/// The child process that runs one scenario's loads (see rtlab_load::host).
fn cmd_load_host(args: &LoadHostArgs) -> anyhow::Result<u8> {
    let cpus = args
        .cpus
        .as_deref()
        .map(rtlab_sys::sched::parse_cpu_list)
        .transpose()
        .map_err(|e| usage(format!("--cpus: {e}")))?;
    if let Some(dir) = &args.scratch {
        rtlab_load::set_default_scratch_parent(dir.clone());
    }
    if let Some(text) = &args.station {
        let address =
            rtlab_station::client::parse_station_address(text).map_err(|e| usage(format!("--station {e}")))?;
        rtlab_load::remote::set_station(rtlab_load::remote::RemoteStation {
            address,
            key_file: args.station_key.clone(),
        });
    }
    let input = std::io::BufReader::new(std::io::stdin());
    let code = rtlab_load::host::serve(&args.scenario, cpus.as_deref(), input, &mut std::io::stdout());
    Ok(u8::try_from(code).unwrap_or(3))
}

fn cmd_sysinfo(args: &SysinfoArgs) -> anyhow::Result<u8> {
    let info = rtlab_sys::sysinfo::collect();
    let distortions = rtlab_sys::sysinfo::distortions(&info, &info.online_cpus);
    // `rtlab run --split` takes the first usable one.
    let backends = rtlab_sys::tracefs::support();
    if args.json {
        let split_backends: Vec<_> = backends
            .iter()
            .map(|b| serde_json::json!({ "name": b.name, "usable": b.usable, "detail": b.detail }))
            .collect();
        let doc = serde_json::json!({ "host": info, "distortions": distortions, "split_backends": split_backends });
        print(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        let mut text = rtlab_report::host::format_host(&info, &distortions);
        text.push_str("\nInterrupt/scheduling split backends (rtlab run --split uses the first usable one):\n");
        for b in &backends {
            text.push_str(&format!("  {:<9} {:<4} {}\n", b.name, if b.usable { "yes" } else { "no" }, b.detail));
        }
        print(&text)?;
    }
    Ok(EXIT_OK)
}

fn cmd_export(args: &ExportArgs) -> anyhow::Result<u8> {
    if args.format == cli::ExportFormat::Kcidb {
        return kcidb_cmd::export_kcidb(args);
    }
    let kcidb_only = [
        ("--origin", args.origin.is_some()),
        ("--checkout-id", args.checkout_id.is_some()),
        ("--build-id", args.build_id.is_some()),
        ("--test-id-prefix", args.test_id_prefix.is_some()),
        ("--tests-only", args.tests_only),
        ("--require", !args.require.is_empty()),
    ];
    if let Some((flag, _)) = kcidb_only.iter().find(|(_, given)| *given) {
        return Err(usage(format!("{flag} is for --format kcidb only")));
    }
    if rtlab_results::suite::SuiteRecord::is_suite(&args.result) {
        return Err(usage(format!(
            "{} is a suite: --format csv exports one run's raw samples; give a condition's directory inside it",
            args.result.display()
        )));
    }
    let run = rtlab_results::run::RunResult::load(&args.result)?;
    let dir = rtlab_results::run::results_dir(&args.result);
    match args.format {
        // Handled above, before run.json is read: a suite directory has none.
        cli::ExportFormat::Kcidb => return kcidb_cmd::export_kcidb(args),
        cli::ExportFormat::Csv => match &args.output {
            Some(path) => {
                let tmp = path.with_extension("csv.partial");
                let file =
                    std::fs::File::create(&tmp).map_err(|e| usage(format!("--output {}: {e}", path.display())))?;
                let mut writer = std::io::BufWriter::new(file);
                let rows = rtlab_formats::raw_csv::export_raw_csv(&run, &dir, &mut writer);
                drop(writer);
                match rows {
                    Ok(rows) => {
                        std::fs::rename(&tmp, path)?;
                        eprintln!("rtlab: wrote {rows} samples to {}", path.display());
                    }
                    Err(e) => {
                        let _ = std::fs::remove_file(&tmp);
                        return Err(e.into());
                    }
                }
            }
            None => {
                let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
                match rtlab_formats::raw_csv::export_raw_csv(&run, &dir, &mut stdout) {
                    Err(rtlab_formats::FormatError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::BrokenPipe => {}
                    other => {
                        other?;
                    }
                }
            }
        },
    }
    Ok(EXIT_OK)
}
