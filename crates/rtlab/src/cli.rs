//! Command-line definition. Parsing only: values are checked in `experiment`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("RTLAB_COMMIT"), ")");

#[derive(Debug, Parser)]
#[command(
    name = "rtlab",
    version = VERSION,
    about = "Tells whether this Linux machine can carry a real-time workload",
    long_about = "rtlab measures timer latency and period jitter the way cyclictest does, saves \
                  every result as run.json, and explains it: percentiles to 99.999 %, how often \
                  a threshold is exceeded in wall time, and what on this host distorts results."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure (default: timer latency on every CPU, 20 s unloaded then 20 s loaded)
    Run(RunArgs),
    /// Print what this host is and what on it may distort results
    Sysinfo(SysinfoArgs),
    /// Report on saved runs: terminal summary, and report.html (or Markdown, CSV, JSON)
    Report(ReportArgs),
    /// Compare saved runs: side-by-side tables, "is B better than A?", and one report
    Compare(ReportArgs),
    /// The bisect gate: is CANDIDATE worse than BASELINE beyond a tolerance, with 95 %
    /// confidence? Exit 0 good, 1 bad, 125 cannot judge (git bisect run's skip), 2 bad input
    Gate(crate::gate_cmd::GateArgs),
    /// Export a run's raw samples (csv), or a run or suite for KernelCI (kcidb)
    Export(ExportArgs),
    /// Convert other tools' results (cyclictest, rtla, jitterdebugger, Xenomai) into a
    /// results directory that report, compare and --require work on
    Import(ImportArgs),
    /// Is a task set schedulable on this platform? Utilization bounds and response-time
    /// analysis with the platform's measured activation latency and task-switch time
    Check(CheckArgs),
    /// The published evaluations, end to end: `suite list`, `suite NAME [--quick]`
    Suite(SuiteArgs),
    /// Measure without end: a window every --window into a SQLite history, and OpenMetrics
    /// for Prometheus with --listen
    Monitor(MonitorArgs),
    /// The history of a monitor database: maxima over time with kernel changes, the last
    /// day's histogram, percentiles per day, regressions
    History(crate::history_cmd::HistoryArgs),
    /// The farm overview from Prometheus: every board it scrapes, worst latency today and
    /// this week, kernel changes, silent boards, requirements broken
    Fleet(crate::fleet_cmd::FleetArgs),
    /// The second station: run on the host under test, it answers the authenticated
    /// stimuli of `rtlab run -P remote` and receives the floods of remote loads
    Station(StationArgs),
    /// Print a shell completion script (bash, zsh or fish) on stdout
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout
    #[command(name = "manpage")]
    Manpage(ManpageArgs),
    /// Runs one load scenario for `rtlab run` (internal: started by rtlab itself)
    #[command(name = "__load-host", hide = true)]
    LoadHost(LoadHostArgs),
}

#[derive(Debug, Args)]
pub struct LoadHostArgs {
    #[arg(long)]
    pub scenario: String,
    #[arg(long)]
    pub cpus: Option<String>,
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    #[arg(long)]
    pub station: Option<String>,
    #[arg(long)]
    pub station_key: Option<PathBuf>,
}

/// `--split-backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SplitBackendArg {
    #[default]
    Tracefs,
    Ebpf,
    /// ebpf where it can do the run's split (timer probe, no --explain-above, usable
    /// here), else tracefs: what the suites use.
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MonitorProbeArg {
    /// timer.latency and timer.jitter of rtlab's own pinned threads
    Timer,
    /// timerlat.thread and timerlat.irq of the kernel's timerlat threads
    Timerlat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyArg {
    Fifo,
    Rr,
    Other,
}

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Experiment file (TOML): every option below as a key; options given here override it
    #[arg(long, short = 'e')]
    pub experiment: Option<PathBuf>,
    /// Probes, run one after another in each load scenario, each for its share of the
    /// duration: timer, jitter, sleep, net, remote, ipc:eventfd, ipc:pipe, ipc:futex,
    /// ipc:mqueue, ipc:signal, switch, sweep, timerlat (the kernel's timerlat tracer), noise
    /// (a busy loop on every CPU but the first unless --cpus) [default: timer]
    #[arg(long, short = 'P')]
    pub probe: Option<String>,
    /// jitter: the periods, measured one after another, e.g. "300us,1ms" (a bare number is
    /// µs) [default: 300,500,1000,2000,5000,10000]
    #[arg(long)]
    pub periods: Option<String>,
    /// sleep: the relative sleep requested [default: 50ms]
    #[arg(long)]
    pub sleep: Option<String>,
    /// net, ipc, switch: stimuli per second, e.g. 1000 or 1khz [default: net 20, ipc and
    /// switch 1000]
    #[arg(long)]
    pub rate: Option<String>,
    /// sweep: the stimulus rates in Hz, measured one after another
    /// [default: 500,800,1000,5000,8000,10000]
    #[arg(long)]
    pub rates: Option<String>,
    /// sweep: the stimulus probe to repeat: net or ipc:MECHANISM [default: net]
    #[arg(long)]
    pub sweep_of: Option<String>,
    /// net, ipc: the trigger's CPU, a number or "same" (the receiver's, the first of
    /// --cpus) [default: another CPU than the receiver's]
    #[arg(long)]
    pub trigger_cpu: Option<String>,
    /// net: receive on this local address [default: 127.0.0.1]
    #[arg(long)]
    pub bind: Option<String>,
    /// net, remote: receive on this network interface (hardware timestamps where it offers
    /// them; remote: the interface towards the station, for transmit times too)
    #[arg(long)]
    pub interface: Option<String>,
    /// remote, remote loads: the station (`rtlab station`) at HOST:PORT
    #[arg(long)]
    pub station: Option<String>,
    /// remote, remote loads: the file with the key shared with the station
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// remote: this host's own latency (delta) to subtract from L_irq [default: calibrated
    /// against the station before any load starts]
    #[arg(long)]
    pub delta: Option<String>,
    /// noise: record the gaps longer than this (oslat's bucket, `rtla osnoise -T`) [default: 1us]
    #[arg(long)]
    pub noise_threshold: Option<String>,
    /// A suite's file check: the station comes with the suite's run, not with the file.
    #[arg(skip)]
    pub station_later: bool,
    /// Wake-up period: 1ms, 50us, ... (a bare number is µs, as in cyclictest -i; timerlat:
    /// the tracer's period, whole µs from 100us to 1s) [default: 1ms]
    #[arg(long, short = 'i')]
    pub interval: Option<String>,
    /// Priority of the measuring threads (default 95; 0 with --policy other); timerlat: given,
    /// the kernel's timerlat threads' SCHED_FIFO priority (rtla -P f:N), else the kernel's
    #[arg(long, short = 'p', allow_negative_numbers = true)]
    pub priority: Option<i64>,
    /// Scheduling policy of the measuring threads [default: fifo]
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// CPUs to measure on, as a list "0,2-3" (default: every online CPU)
    #[arg(long, short = 'c')]
    pub cpus: Option<String>,
    /// How long to measure each load scenario, shared by the probes: 30s, 10m, 2h (default
    /// 20s; sleep alone takes its 1000 samples)
    #[arg(long, short = 'D', conflicts_with = "samples")]
    pub duration: Option<String>,
    /// Samples per CPU and scenario instead of a duration (jitter: per period; sweep: per
    /// rate; sleep: taken, including the discarded ones)
    #[arg(long, short = 'n')]
    pub samples: Option<u64>,
    /// Load scenarios, measured one after the other: presets (idle, mixed, akamina, regnier,
    /// dodiu, senoner, dohell, osadl) or loads joined with '+' ("cpu+disk:file_mib=16"),
    /// separated by commas. Default: idle,mixed (unloaded, then loaded)
    #[arg(long, short = 'L')]
    pub load: Option<String>,
    /// CPUs the loads may run on, as a list "0,2-3" (default: every online CPU)
    #[arg(long)]
    pub load_cpus: Option<String>,
    /// How long the loads run before measuring starts [default: 2s]
    #[arg(long)]
    pub settle: Option<String>,
    /// Directory for the loads' scratch files (default: the system's temporary directory)
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Wake-ups to discard at the start of each thread [default: 0; sleep: 2, as Dankwardt]
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Results directory (default results/<YYYYmmdd-HHMMSS>-<label>)
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Name of this run, used in the directory name and reports (default: the hostname)
    #[arg(long, short = 'l')]
    pub label: Option<String>,
    /// Also save every sample (expected time, latency, CPU) under samples/; stops before
    /// the file system is full, keeping 5 % of it (1 MiB to 256 MiB) free for run.json and
    /// report.html, then exits 3 after saving
    #[arg(long)]
    pub raw: bool,
    /// Print nothing while running and no summary (only the verdict line, with --require)
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Print the summary as JSON on stdout instead of tables
    #[arg(long)]
    pub json: bool,
    /// Leave /dev/cpu_dma_latency alone (default: hold it at 0 while measuring)
    #[arg(long)]
    pub no_dma_latency: bool,
    /// Largest latency the histograms hold exactly; larger samples are clamped and counted
    /// [default: 10s]
    #[arg(long)]
    pub histogram_max: Option<String>,
    /// Deterministic simulated clock with this seed (tests only)
    #[arg(long, hide = true)]
    pub simulate: Option<u64>,
    /// With --simulate: every simulated latency times FACTOR, e.g. 1.5 (tests only: a
    /// slower or faster simulated "kernel" for the bisect gate's tests; docs/gate.md)
    #[arg(long, hide = true, value_name = "FACTOR", requires = "simulate")]
    pub simulate_scale: Option<f64>,
    /// Requirement the results must meet, e.g. "timer max < 500us" (repeatable; all must
    /// hold): <metric> <statistic> < <bound>, statistic max, mean, pNN[.N] or pwcet(P) (the
    /// latency exceeded with probability P per activation, by extreme value theory, e.g.
    /// "timer pwcet(1e-9) < 500us"). Exit 1 when not met, or undecided (a pWCET not
    /// defensible from the run)
    #[arg(long = "require", value_name = "EXPR")]
    pub require: Vec<String>,
    /// Run a task set for real (TOML or rt-app JSON): one SCHED_FIFO thread per task,
    /// released by absolute periodic timers, busy for C; per-job response times and deadline
    /// misses (instead of --probe)
    #[arg(long, value_name = "FILE", conflicts_with = "probe")]
    pub taskset: Option<PathBuf>,
    /// timer, net: cut every sample with kernel tracing into interrupt latency (or, for net,
    /// wake-up), scheduling part and return to user space, saved as the metrics timer.irq,
    /// timer.sched, timer.return (net.wakeup, net.sched, net.return); see `rtlab sysinfo`
    /// for the backends. Needs root
    #[arg(long)]
    pub split: bool,
    /// With --split: tracefs (every event of the traced CPUs; explains spikes), ebpf (one
    /// record per wake-up made in the kernel: cheaper; timer probe only, no explanations) or
    /// auto (ebpf where it can do the split, else tracefs)
    #[arg(long, value_enum, value_name = "BACKEND", default_value = "tracefs")]
    pub split_backend: SplitBackendArg,
    /// With --split: explain every sample above this latency (the worst 20 per thread are
    /// kept), e.g. 100us [default: the 3 worst samples of each thread]
    #[arg(long, value_name = "DURATION")]
    pub explain_above: Option<String>,
    /// Stop rule: measure in windows until the statistic's 95 % interval has stayed within
    /// --target for 3 windows, each scenario up to --max-duration: converged[:STATISTIC] or
    /// converged:METRIC:STATISTIC, STATISTIC a percentile (p99.9) or pwcet[(P)] [default
    /// statistic: the main metric's p99.99]. One probe: timer, net, ipc or switch
    #[arg(long, value_name = "RULE", conflicts_with_all = ["duration", "samples"])]
    pub until: Option<String>,
    /// With --until: the longest each scenario is measured, e.g. 10m, 2h [default: 1h]
    #[arg(long, value_name = "DURATION", requires = "until")]
    pub max_duration: Option<String>,
    /// With --until: the relative 95 % half-width to reach, e.g. 5% or 0.05 [default: 5%]
    #[arg(long, value_name = "PERCENT", requires = "until")]
    pub target: Option<String>,
    /// With --until: the length of a window, after each of which convergence is checked
    /// [default: 10s]
    #[arg(long, value_name = "DURATION", requires = "until")]
    pub window: Option<String>,
    /// --gate BASELINE and its options: judge the saved run as `rtlab gate` does.
    #[command(flatten)]
    pub gating: crate::gate_cmd::RunGateArgs,
    /// Scenario presets defined in the experiment file: name -> loads.
    #[arg(skip)]
    pub presets: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Args)]
pub struct SysinfoArgs {
    /// Print as JSON
    #[arg(long)]
    pub json: bool,
}

/// Output of `rtlab check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Terminal,
    Json,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The task set: rtlab TOML or rt-app JSON (recognised by content)
    #[arg(value_name = "TASKSET")]
    pub taskset: PathBuf,
    /// A results directory (or run.json), or a suite directory, whose measured activation
    /// latency and task-switch time the analysis charges to every task; repeatable: the
    /// worst figure of all their runs is charged
    #[arg(long, value_name = "RESULT")]
    pub platform: Vec<PathBuf>,
    /// Statistic of the platform's figures: max, pNN[.N] or pwcet(P) [default: max]
    #[arg(long, value_name = "STAT")]
    pub jitter_stat: Option<String>,
    /// Activation latency (release jitter) charged to every task, overriding the platform's
    #[arg(long, value_name = "TIME")]
    pub jitter: Option<String>,
    /// Task-switch time charged twice per job, overriding the platform's
    #[arg(long, value_name = "TIME")]
    pub switch: Option<String>,
    /// Output format
    #[arg(long, short = 'f', value_enum, default_value = "terminal")]
    pub format: CheckFormat,
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// `list`, a suite's name (akamina-2004, ...) or a suite file (TOML)
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Scale every duration down so the suite finishes in minutes (the report says so)
    #[arg(long, conflicts_with = "long")]
    pub quick: bool,
    /// The paper's long-duration variant where it has one (regnier-2008: 14 hours)
    #[arg(long)]
    pub long: bool,
    /// Name of this configuration, used in the directory name and reports [default: the hostname]
    #[arg(long, short = 'l')]
    pub label: Option<String>,
    /// Results directory of the suite [default: results/<YYYYmmdd-HHMMSS>-<suite>-<label>]
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Print nothing while running
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Check the suite file and print what each condition would run and how long; run nothing
    #[arg(long)]
    pub check: bool,
    /// Deterministic simulated clock with this seed for every condition (tests only)
    #[arg(long, hide = true)]
    pub simulate: Option<u64>,
    /// A second station (`rtlab station`) at HOST:PORT: the conditions that need one
    /// (regnier-2008's experiment 2) run against it; without it they are not measured
    #[arg(long, requires = "key")]
    pub station: Option<String>,
    /// The key file shared with --station
    #[arg(long, requires = "station")]
    pub key: Option<PathBuf>,
    /// remote conditions: δ to subtract, held for every one of them: a time (`9us`) or a
    /// stored calibration (a delta.json, or the directory of a run or suite holding one)
    /// [default: calibrated once, by the first remote condition, and held]
    #[arg(long, requires = "station")]
    pub delta: Option<String>,
}

/// `rtlab station`.
#[derive(Debug, Args)]
pub struct StationArgs {
    /// Address and UDP port to listen on (IPv4). The flood sink listens on PORT+1 (UDP),
    /// the comms echo server on PORT+2 (TCP) [default: 127.0.0.1:7450]
    #[arg(long)]
    pub listen: Option<String>,
    /// File holding the shared key (at least 32 bytes; readable by its owner only)
    #[arg(long)]
    pub key: PathBuf,
    /// Regnier's Delta: how long the real-time task waits after waking before it answers
    #[arg(long, default_value = "10us")]
    pub delta: String,
    /// Stimuli answered per second at most; more are dropped and counted
    #[arg(long, default_value_t = rtlab_station::station::DEFAULT_MAX_RATE_HZ)]
    pub max_rate: u32,
    /// CPU of the real-time task [default: the last online CPU]
    #[arg(long)]
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the real-time task
    #[arg(long, default_value_t = 95)]
    pub priority: i32,
    /// Stop after this long (e.g. 10m) [default: until SIGINT/SIGTERM]
    #[arg(long)]
    pub duration: Option<String>,
    /// Print the counters this often (0: only at the end)
    #[arg(long, default_value = "10s")]
    pub status_every: String,
    /// Send the loads the measuring side asks for (`--load station:udp-flood`,
    /// `station:comms`, `station:ping-flood`), only ever to that side's own address, and run
    /// `station:shell-loop` (Regnier's shell loop) and `station:cpu` on this host
    #[arg(long)]
    pub serve_loads: bool,
    /// With --serve-loads: datagrams or pings per second sent at most (a UDP flood asked
    /// for flat out gets this rate; a ping flood without a rate runs as `ping -f`)
    #[arg(long, default_value_t = 250_000)]
    pub max_load_rate: u64,
    /// With --serve-loads: bytes per second sent at most, with a unit (`125MB/s`,
    /// `100Mbit/s`): datagrams with their IP and UDP/ICMP headers, comms as message bytes
    /// sent plus echoed (a comms load asked for flat out gets this rate)
    #[arg(long, default_value = "125MB/s")]
    pub max_load_bytes: String,
    /// Print only the final counters
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Output formats of `report` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Self-contained HTML page with figures (default: written to a file)
    Html,
    /// Markdown (GitHub tables)
    Md,
    /// CSV, one section per table
    Csv,
    /// JSON ("schema": "rtlab.report/1")
    Json,
    /// One PNG image per figure, written into a directory (--output DIR)
    Png,
    /// cyclictest's -h/--histfile layout (one metric, one scenario: see --metric, --scenario)
    CyclictestHist,
    /// cyclictest's --json layout (one metric, one scenario)
    CyclictestJson,
    /// HdrHistogram interval log, one interval per thread (one metric, one scenario)
    HdrLog,
    /// JUnit XML: one test per requirement (needs --require or a saved verdict)
    Junit,
    /// LAVA test cases: statistics, pWCET and requirements, through lava-test-case where it
    /// is on PATH, else its signal lines (docs/lava.md); also for suite directories
    Lava,
    /// OpenMetrics / Prometheus text exposition: summaries and histogram buckets
    Openmetrics,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results directories or run.json files
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// Output format
    #[arg(long, short = 'f', value_enum, default_value = "html")]
    pub format: ReportFormat,
    /// Output file (default: html to report.html in the results directory, for one run,
    /// else ./rtlab-report.html or ./rtlab-compare.html; md, csv and json to stdout). For
    /// png, a directory (default: figures/ in the results directory, for one run, else
    /// ./rtlab-figures/)
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Requirement to judge the runs against, e.g. "timer max < 500us" or "timer pwcet(1e-9) <
    /// 500us" (repeatable; statistic max, mean, pNN[.N] or pwcet(P)). Exit 1 when not met,
    /// or undecided (a pWCET not defensible from the run)
    #[arg(long = "require", value_name = "EXPR")]
    pub require: Vec<String>,
    /// cyclictest-hist, cyclictest-json, hdr-log: the metric to export [default: the main
    /// metric of the run's first probe]
    #[arg(long)]
    pub metric: Option<String>,
    /// cyclictest-hist, cyclictest-json, hdr-log: the scenario to export [default: the
    /// run's only scenario]
    #[arg(long)]
    pub scenario: Option<String>,
    /// A monitor database (rtlab monitor --db) given as RESULT is read as a run from this time
    /// on: RFC 3339, a UTC date (2026-11-20), or a time ago (7d) [default: its first window]
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// ... until this time [default: its last window]
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
}

/// The `--from` values of `rtlab import`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFrom {
    /// -h/--histfile text (old and new layouts), -v output, --json file
    Cyclictest,
    /// rtla timerlat hist / osnoise hist output
    Rtla,
    /// results.json and/or samples.raw of jitterdebugger -o DIR [-s]
    Jitterdebugger,
    /// Xenomai latency output and/or its -g histogram file
    Xenomai,
    /// oslat --json file (rt-tests' busy loop)
    Oslat,
}

/// Units for sources that do not record theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitArg {
    Us,
    Ns,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The tool that wrote the files
    #[arg(long, value_enum)]
    pub from: ImportFrom,
    /// The files of one run (jitterdebugger: results.json and samples.raw; xenomai: the
    /// latency output and its -g histogram)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Name of the imported run [default: the source's host name, else the file name]
    #[arg(long, short = 'l')]
    pub label: Option<String>,
    /// Results directory [default: results/<YYYYmmdd-HHMMSS>-<label>]
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Unit of sources that do not record it (cyclictest histogram and -v output: us, or
    /// ns when cyclictest ran with -N) [default: us]
    #[arg(long, value_enum)]
    pub unit: Option<UnitArg>,
    /// The measuring period, for sources that do not record it (a bare number is µs)
    #[arg(long)]
    pub interval: Option<String>,
    /// Print nothing but errors
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Shells `rtlab completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: ShellArg,
}

#[derive(Debug, Args)]
pub struct ManpageArgs {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The raw samples of a run recorded with --raw, one per line
    Csv,
    /// A KCIDB v5.3 submission (KernelCI) of a run or a suite: statistics, pWCET and
    /// requirements as tests (docs/kcidb.md)
    Kcidb,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Results directory or its run.json (kcidb: also a suite directory)
    pub result: PathBuf,
    #[arg(long, value_enum, default_value = "csv")]
    pub format: ExportFormat,
    /// Output file (default: stdout)
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// kcidb: the CI system submitting, lowercase letters, digits and _ [default: rtlab]
    #[arg(long, value_name = "NAME")]
    pub origin: Option<String>,
    /// kcidb: the checkout's ID [default: ORIGIN:<kernel release>]; an ID not starting with
    /// "ORIGIN:" gets it before it (another origin's ID only with --tests-only)
    #[arg(long, value_name = "ID")]
    pub checkout_id: Option<String>,
    /// kcidb: the build's ID [default: ORIGIN:<kernel release>:<host name>]
    #[arg(long, value_name = "ID")]
    pub build_id: Option<String>,
    /// kcidb: what each test's ID starts with, its path follows [default:
    /// ORIGIN:<host name>:<run or suite start, UTC, YYYYmmddTHHMMSSZ>:]
    #[arg(long, value_name = "PREFIX")]
    pub test_id_prefix: Option<String>,
    /// kcidb: write only the tests, for a checkout and build the CI submits itself (give
    /// their --checkout-id and --build-id)
    #[arg(long)]
    pub tests_only: bool,
    /// kcidb: requirements to judge instead of the verdict saved with the runs (repeatable,
    /// as for rtlab report)
    #[arg(long = "require", value_name = "EXPR")]
    pub require: Vec<String>,
}

/// `rtlab monitor` (checked in monitor_cmd::plan).
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The history database (SQLite; created when missing, appended to when it exists)
    #[arg(long, default_value = "results/monitor.db")]
    pub db: PathBuf,
    /// What measures: rtlab's timer probe (as `rtlab run`), or the kernel's timerlat tracer
    /// (as `rtla timerlat`; kernels with it, such as linux-image-rt-amd64)
    #[arg(long, short = 'P', value_enum, default_value = "timer")]
    pub probe: MonitorProbeArg,
    /// Length of a window: 1m, 10s, 1h (at least 1s)
    #[arg(long, short = 'w', default_value = "1m")]
    pub window: String,
    /// Wake-up period: 1ms, 50us, ... (a bare number is µs, as in cyclictest -i)
    #[arg(long, short = 'i', default_value = "1ms")]
    pub interval: String,
    /// Priority of the measuring threads (default 95; 0 with --policy other)
    #[arg(long, short = 'p', allow_negative_numbers = true)]
    pub priority: Option<i64>,
    /// Scheduling policy of the measuring threads [default: fifo]
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// CPUs to measure on, as a list "0,2-3" (default: every online CPU)
    #[arg(long, short = 'c')]
    pub cpus: Option<String>,
    /// Load phases repeated in turn, as NAME:LENGTH,...: "idle:30m,cpu+io:30m" alternates
    /// OSADL's idle and loaded phases. Names are `rtlab run --load` scenarios; lengths are
    /// whole windows [default: idle throughout]
    #[arg(long)]
    pub schedule: Option<String>,
    /// CPUs the loads may run on, as a list "0,2-3" (default: every online CPU)
    #[arg(long)]
    pub load_cpus: Option<String>,
    /// How long the history keeps anything: windows older than --keep-windows become hourly
    /// rows, hourly rows older than 14 days daily rows, and rows older than this go
    #[arg(long, default_value = "90d")]
    pub keep: String,
    /// How long windows are kept as measured before they are merged into hours (with 1 s
    /// windows, 2 days are 172,800 windows)
    #[arg(long, default_value = "2d")]
    pub keep_windows: String,
    /// Serve OpenMetrics on http://ADDR:PORT/metrics (and /healthz) for Prometheus, e.g.
    /// 127.0.0.1:9464. An address other than loopback needs --metrics-token-file
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// File holding the bearer token Prometheus must send (`authorization:
    /// credentials_file:` in its scrape configuration)
    #[arg(long, value_name = "FILE")]
    pub metrics_token_file: Option<PathBuf>,
    /// Stop after this long (default: at SIGINT or SIGTERM)
    #[arg(long, short = 'D')]
    pub duration: Option<String>,
    /// Largest latency the histograms hold exactly [default: 10s]
    #[arg(long, default_value = "10s")]
    pub histogram_max: String,
    /// Leave /dev/cpu_dma_latency alone (default: hold it at 0 while measuring)
    #[arg(long)]
    pub no_dma_latency: bool,
    /// Print one line when starting and stopping, none per window
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
