//! `rtlab fleet`'s overview of the boards a Prometheus server scrapes, rendered: terminal
//! text, Markdown, JSON (the [`FleetReport`] itself) and a self-contained HTML page in the
//! report's style. One table, one row per board, the same cells in every format
//! ([`board_cells`]).

use crate::text::escape;
use crate::ReportError;
use rtlab_analysis::units::{format_us, thousands};
use rtlab_results::fleet::{Board, FleetReport, Trend};
use std::fmt::Write;

/// The output formats of `rtlab fleet`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetFormat {
    Terminal,
    Markdown,
    Json,
    Html,
}

/// The report in one format.
pub fn render(report: &FleetReport, format: FleetFormat) -> Result<String, ReportError> {
    match format {
        FleetFormat::Terminal => Ok(terminal(report)),
        FleetFormat::Markdown => Ok(markdown(report)),
        FleetFormat::Json => json(report),
        FleetFormat::Html => Ok(html(report)),
    }
}

/// The columns of the boards' table.
pub const COLUMNS: [&str; 9] = [
    "Board",
    "Host",
    "Kernel",
    "Worst today (µs)",
    "Worst 7 d (µs)",
    "Trend",
    "Last kernel change",
    "Overruns / lost today",
    "Status",
];

/// "3 boards, 1 breaking a requirement, 1 silent".
pub fn summary_line(report: &FleetReport) -> String {
    let s = &report.summary;
    let boards = format!("{} board{}", s.boards, if s.boards == 1 { "" } else { "s" });
    let breaking = if report.requirements.is_empty() {
        "no requirement given".to_string()
    } else {
        format!("{} breaking a requirement", s.breaking)
    };
    format!("{boards}, {breaking}, {} silent", s.silent)
}

/// "45 s", "20 min", "5 h", "3 d": a span for people.
pub fn span_words(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 90.0 * 60.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 48.0 * 3600.0 {
        format!("{:.0} h", s / 3600.0)
    } else {
        format!("{:.0} d", s / 86400.0)
    }
}

/// "2025-11-26 20:40" from an RFC 3339 time.
fn short_time(rfc3339: &str) -> String {
    crate::html::short_time(rfc3339)
}

fn us(ns: Option<i64>) -> String {
    ns.map_or_else(|| "-".to_string(), format_us)
}

/// "higher (+50 %)" (on the 6 days before), "steady", "new", "no data".
pub fn trend_words(board: &Board) -> String {
    match (board.trend, board.worst_today_ns, board.worst_previous_days_ns) {
        (Trend::Higher, Some(t), Some(p)) if p > 0 => {
            format!("higher (+{:.0} %)", (t as f64 / p as f64 - 1.0) * 100.0)
        }
        (trend, _, _) => trend.word().to_string(),
    }
}

/// "2025-11-26 20:40: 6.1.0-rt → 6.6.0-rt", or "none in 7 d".
pub fn kernel_change_words(board: &Board) -> String {
    match &board.last_kernel_change {
        None => "none in 7 d".to_string(),
        Some(c) => {
            let at = c.at.as_deref().map_or_else(|| "within the last minute".to_string(), short_time);
            format!("{at}: {} → {}", c.from, c.to)
        }
    }
}

/// What is wrong with a board, worst first: broken requirements, then silence. Empty when
/// nothing is.
pub fn problems(board: &Board) -> Vec<String> {
    let mut out: Vec<String> = board
        .judgements
        .iter()
        .filter(|j| j.broken)
        .map(|j| format!("breaks {} ({} µs today)", j.requirement, us(j.worst_today_ns)))
        .collect();
    if let Some(s) = &board.silent {
        let mut words = format!("silent: {}", s.words());
        if let Some(for_s) = s.for_s {
            let _ = write!(words, ", last window {} ago", span_words(for_s));
        }
        out.push(words);
    }
    out
}

/// The cells of a board's row, in [`COLUMNS`] order.
pub fn board_cells(board: &Board) -> Vec<String> {
    let dash = || "-".to_string();
    let kernel = match (&board.kernel_release, &board.preemption) {
        (Some(k), Some(p)) => format!("{k} ({p})"),
        (Some(k), None) => k.clone(),
        _ => dash(),
    };
    let counts = match (board.overruns_today, board.lost_today) {
        (None, None) => dash(),
        (o, l) => format!("{} / {}", o.map_or_else(dash, thousands), l.map_or_else(dash, thousands)),
    };
    let problems = problems(board);
    vec![
        board.instance.clone(),
        board.hostname.clone().unwrap_or_else(dash),
        kernel,
        us(board.worst_today_ns),
        us(board.worst_week_ns),
        trend_words(board),
        kernel_change_words(board),
        counts,
        if problems.is_empty() { "ok".to_string() } else { problems.join("; ") },
    ]
}

/// Whether column `i` holds figures (aligned right).
fn numeric(i: usize) -> bool {
    matches!(i, 3 | 4 | 7)
}

/// The notes under the table: how each column is made.
pub fn notes(report: &FleetReport) -> Vec<String> {
    vec![
        format!(
            "Worst: the largest window maximum of {} over all CPUs (rtlab_window_max_seconds), in the 24 h and the 7 days \
             before {} UTC.",
            report.metric,
            short_time(&report.generated_at)
        ),
        format!(
            "Trend: today's worst against the worst of the 6 days before; \"higher\" when it exceeds it by more than {:.0} %, \
             \"new\" when there is nothing before to compare with.",
            rtlab_results::fleet::TREND_MARGIN * 100.0
        ),
        "Last kernel change: when the previous kernel release was last seen in rtlab_host_info (to the minute).".into(),
        format!(
            "Silent: the last scrape failed (up = 0), Prometheus no longer scrapes the board, or its last window closed more \
             than {} ago.",
            span_words(report.silent_after_s)
        ),
        "Requirements are judged on the worst of today; a requirement holds when the worst is strictly below its bound."
            .into(),
    ]
}

fn title(report: &FleetReport) -> String {
    format!("rtlab fleet: {}", report.prometheus)
}

fn subtitle(report: &FleetReport) -> String {
    format!("{} UTC · {}", short_time(&report.generated_at), report.metric)
}

/// Text for a terminal: the summary on top, then the table.
pub fn terminal(report: &FleetReport) -> String {
    let mut out = format!("{} · {}\n{}\n", title(report), subtitle(report), summary_line(report));
    for r in &report.requirements {
        let _ = writeln!(out, "Requirement: {}", r.text);
    }
    if report.boards.is_empty() {
        out.push_str(
            "\nPrometheus scrapes no board exposing rtlab's metrics (rtlab_host_info, rtlab_window_max_seconds).\n",
        );
        return out;
    }
    let rows: Vec<Vec<String>> = report.boards.iter().map(board_cells).collect();
    let header: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    let width = |i: usize| std::iter::once(&header).chain(&rows).map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..COLUMNS.len()).map(width).collect();
    out.push('\n');
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = widths[i].saturating_sub(cell.chars().count());
            if numeric(i) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else if i + 1 < row.len() {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push('\n');
    for n in notes(report) {
        let _ = writeln!(out, "{n}");
    }
    out
}

/// Markdown (a GitHub table), for pasting into an issue.
pub fn markdown(report: &FleetReport) -> String {
    use crate::markdown::escape as md;
    let mut out =
        format!("# {}\n\n{}\n\n**{}**\n", md(&title(report)), md(&subtitle(report)), md(&summary_line(report)));
    if !report.requirements.is_empty() {
        out.push_str("\nRequirements:\n\n");
        for r in &report.requirements {
            let _ = writeln!(out, "- `{}`", r.text);
        }
    }
    out.push_str("\n## Boards\n\n");
    if report.boards.is_empty() {
        out.push_str("Prometheus scrapes no board exposing rtlab's metrics.\n");
    } else {
        let row = |cells: &[String]| {
            format!(
                "| {} |\n",
                cells.iter().map(|c| if c.is_empty() { " ".into() } else { md(c) }).collect::<Vec<_>>().join(" | ")
            )
        };
        out.push_str(&row(&COLUMNS.iter().map(|c| c.to_string()).collect::<Vec<_>>()));
        out.push_str(&row(&(0..COLUMNS.len())
            .map(|i| if numeric(i) { "---:".into() } else { ":---".into() })
            .collect::<Vec<_>>()));
        for b in &report.boards {
            out.push_str(&row(&board_cells(b)));
        }
    }
    out.push('\n');
    for n in notes(report) {
        let _ = writeln!(out, "- {}", md(&n));
    }
    out
}

/// The [`FleetReport`] as JSON (docs/fleet.md).
pub fn json(report: &FleetReport) -> Result<String, ReportError> {
    let mut text = serde_json::to_string_pretty(report).map_err(|e| ReportError::Encode(e.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// The page's own rules, on top of the report's style sheet.
const FLEET_CSS: &str = r#"
table.boards { font-size: 0.88rem; }
table.boards th { vertical-align: bottom; }
table.boards td.n, table.boards td.nw { white-space: nowrap; }
table.boards td.change { min-width: 9em; }
table.boards td.status { min-width: 13em; text-align: left; }
td.bad, td.status .brk { color: var(--bad); font-weight: 600; }
td.status .sil { color: var(--warn); font-weight: 600; }
tr.breaking td:first-child { box-shadow: inset 4px 0 0 var(--bad); }
tr.silent td:first-child { box-shadow: inset 4px 0 0 #e0a030; }
td.ok { color: var(--good); }
.counts { display: flex; gap: 12px; margin: 12px 0 4px; flex-wrap: wrap; }
.count { border: 1px solid var(--line); border-radius: 6px; padding: 8px 16px; min-width: 9em; }
.count .n { display: block; font-size: 1.8rem; font-weight: 700; line-height: 1.1; }
.count.bad { border-color: var(--bad); background: #fdecef; }
.count.bad .n { color: var(--bad); }
.count.warn { border-color: #e0a030; background: #fff4e0; }
.count.warn .n { color: var(--warn); }
code { font-size: 0.92em; }
"#;

/// The self-contained page: summary counts, the breaking and silent boards, the table.
pub fn html(report: &FleetReport) -> String {
    let mut page = String::with_capacity(16 << 10);
    let title = title(report);
    crate::html::page_start(&mut page, &title, FLEET_CSS);
    let _ = writeln!(
        page,
        "<header>\n<h1>rtlab fleet</h1>\n<p class=\"subtitle\">Boards scraped by Prometheus at <code>{}</code> · {} UTC · \
         worst = largest window maximum of {} over all CPUs</p>\n</header>",
        escape(&report.prometheus),
        escape(&short_time(&report.generated_at)),
        escape(&report.metric)
    );
    let s = &report.summary;
    page.push_str("<div class=\"counts\">\n");
    let _ = writeln!(
        page,
        "<div class=\"count\"><span class=\"n\">{}</span>board{}</div>",
        s.boards,
        if s.boards == 1 { "" } else { "s" }
    );
    if report.requirements.is_empty() {
        page.push_str("<div class=\"count\"><span class=\"n\">–</span>no requirement given</div>\n");
    } else {
        let _ = writeln!(
            page,
            "<div class=\"count{}\"><span class=\"n\">{}</span>breaking a requirement</div>",
            if s.breaking > 0 { " bad" } else { "" },
            s.breaking
        );
    }
    let _ = writeln!(
        page,
        "<div class=\"count{}\"><span class=\"n\">{}</span>silent</div>\n</div>",
        if s.silent > 0 { " warn" } else { "" },
        s.silent
    );

    if !report.requirements.is_empty() {
        let breaking: Vec<&Board> = report.boards.iter().filter(|b| b.breaks()).collect();
        let class = if breaking.is_empty() { "met" } else { "not-met" };
        let word = if breaking.is_empty() { "MET" } else { "NOT MET" };
        let requirements: Vec<String> =
            report.requirements.iter().map(|r| format!("<code>{}</code>", escape(&r.text))).collect();
        let _ = writeln!(
            page,
            "<section class=\"banner verdict {class}\" id=\"verdict\">\n<h2><span class=\"word\">{word}</span></h2>\n\
             <p>{} on every board's worst of the last 24 h: {}.</p>",
            requirements.join(", "),
            if breaking.is_empty() {
                format!(
                    "all {} boards with data meet {}",
                    report.boards.len(),
                    if requirements.len() == 1 { "it" } else { "them" }
                )
            } else {
                format!(
                    "{} of {} boards break {}",
                    breaking.len(),
                    report.boards.len(),
                    if requirements.len() == 1 { "it" } else { "them" }
                )
            }
        );
        if !breaking.is_empty() {
            page.push_str("<ul>\n");
            for b in breaking {
                let broken: Vec<String> = b
                    .judgements
                    .iter()
                    .filter(|j| j.broken)
                    .map(|j| format!("{} µs against <code>{}</code>", us(j.worst_today_ns), escape(&j.requirement)))
                    .collect();
                let _ = writeln!(
                    page,
                    "<li><strong>{}</strong>{}: {}</li>",
                    escape(&b.instance),
                    host_suffix(b),
                    broken.join(", ")
                );
            }
            page.push_str("</ul>\n");
        }
        page.push_str("</section>\n");
    }
    let silent: Vec<&Board> = report.boards.iter().filter(|b| b.silent.is_some()).collect();
    if !silent.is_empty() {
        let _ = writeln!(
            page,
            "<div class=\"banner warning\" id=\"silent\">\n<h3>Silent boards: their figures may be old</h3>\n<ul>"
        );
        for b in silent {
            let words = problems(b).iter().filter_map(|p| p.strip_prefix("silent: ")).collect::<Vec<_>>().join("; ");
            let _ = writeln!(
                page,
                "<li><strong>{}</strong>{}: {}</li>",
                escape(&b.instance),
                host_suffix(b),
                escape(&words)
            );
        }
        page.push_str("</ul>\n</div>\n");
    }

    page.push_str("<h2 id=\"boards\">Boards</h2>\n");
    if report.boards.is_empty() {
        page.push_str(
            "<p>Prometheus scrapes no board exposing rtlab's metrics (<code>rtlab_host_info</code>, \
             <code>rtlab_window_max_seconds</code>).</p>\n",
        );
    } else {
        page.push_str("<div class=\"scroll\">\n<table class=\"boards\">\n<thead><tr>");
        for (i, c) in COLUMNS.iter().enumerate() {
            let _ = write!(page, "<th{}>{}</th>", if numeric(i) || i == 0 { "" } else { " class=\"l\"" }, escape(c));
        }
        page.push_str("</tr></thead>\n<tbody>\n");
        for b in &report.boards {
            let class = if b.breaks() {
                " class=\"breaking\""
            } else if b.silent.is_some() {
                " class=\"silent\""
            } else {
                ""
            };
            let _ = write!(page, "<tr{class}>");
            let today_bad =
                b.judgements.iter().any(|j| j.broken && j.requirement.starts_with(&format!("{} ", report.metric)));
            for (i, cell) in board_cells(b).iter().enumerate() {
                let mut classes: Vec<&str> = Vec::new();
                if !numeric(i) && i > 0 {
                    classes.push("l");
                }
                if numeric(i) {
                    classes.push("n");
                }
                if matches!(i, 0 | 1 | 5) {
                    classes.push("nw");
                }
                if i == 6 {
                    classes.push("change");
                }
                if i == 3 && today_bad {
                    classes.push("bad");
                }
                if i == 5 && b.trend == Trend::Higher {
                    classes.push("bad");
                }
                if i == 8 {
                    classes.push("status");
                    if cell == "ok" {
                        classes.push("ok");
                    }
                }
                let class =
                    if classes.is_empty() { String::new() } else { format!(" class=\"{}\"", classes.join(" ")) };
                // The status's problems one to a line.
                let text = if i == 8 {
                    problems(b)
                        .iter()
                        .map(|p| {
                            let class = if p.starts_with("silent") { "sil" } else { "brk" };
                            format!("<span class=\"{class}\">{}</span>", escape(p))
                        })
                        .collect::<Vec<_>>()
                        .join("<br>")
                } else {
                    String::new()
                };
                let text = if text.is_empty() { escape(cell) } else { text };
                let _ = write!(page, "<td{class}>{text}</td>");
            }
            page.push_str("</tr>\n");
        }
        page.push_str("</tbody>\n</table>\n</div>\n");
    }
    page.push_str("<ul class=\"notes\">\n");
    for n in notes(report) {
        let _ = writeln!(page, "<li>{}</li>", escape(&n));
    }
    page.push_str("</ul>\n");
    let _ = writeln!(
        page,
        "<footer>\n<p>Made by rtlab fleet from Prometheus' query API at <code>{}</code> (queries and JSON fields: \
         docs/fleet.md). rtlab fleet never talks to the boards.</p>\n</footer>",
        escape(&report.prometheus)
    );
    page.push_str("</main>\n</body>\n</html>\n");
    page
}

/// " (board-a)" when the host name is known and not the instance's own.
fn host_suffix(board: &Board) -> String {
    match &board.hostname {
        Some(h) if !board.instance.starts_with(h.as_str()) => format!(" ({})", escape(h)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtlab_analysis::requirement::parse_requirement;
    use rtlab_results::fleet::{BoardJudgement, KernelChange, Silence, SilenceReason};

    const NOW: f64 = 1_764_196_800.0;

    fn board(instance: &str, host: &str, today: Option<i64>, week: Option<i64>, previous: Option<i64>) -> Board {
        Board {
            instance: instance.into(),
            job: "lab".into(),
            hostname: Some(host.into()),
            kernel_release: Some("6.1.0-rt".into()),
            preemption: Some("PREEMPT_RT".into()),
            worst_today_ns: today,
            worst_week_ns: week,
            worst_previous_days_ns: previous,
            trend: Trend::of(today, previous),
            last_kernel_change: None,
            up: Some(true),
            last_window_end_unix: Some(NOW - 30.0),
            last_window_end: Some("2025-11-26T22:39:30Z".into()),
            silent: None,
            overruns_today: Some(0),
            lost_today: Some(0),
            judgements: vec![],
        }
    }

    /// One fixed report: a steady board, one breaking after a kernel change that also stopped
    /// closing windows, a silent one.
    pub fn example() -> FleetReport {
        let requirement = parse_requirement("timer max < 100us").unwrap();
        let judge = |today: Option<i64>| BoardJudgement {
            requirement: requirement.text.clone(),
            worst_today_ns: today,
            bound_ns: requirement.bound_ns,
            broken: today.is_some_and(|t| t >= requirement.bound_ns),
        };
        let mut a = board("rpi4-a:9464", "rpi4-a", Some(57_000), Some(61_200), Some(61_200));
        a.judgements = vec![judge(a.worst_today_ns)];
        let mut b = board("bbb-2:9464", "beaglebone-2", Some(120_400), Some(120_400), Some(80_100));
        b.kernel_release = Some("6.6.0-rt15".into());
        b.last_kernel_change = Some(KernelChange {
            at_unix: Some(NOW - 7200.0),
            at: Some("2025-11-26T20:40:00Z".into()),
            from: "6.1.0-rt".into(),
            to: "6.6.0-rt15".into(),
        });
        b.overruns_today = Some(3);
        b.lost_today = Some(1_250);
        b.last_window_end_unix = Some(NOW - 1_200.0);
        b.last_window_end = Some("2025-11-26T22:20:00Z".into());
        b.silent = Some(Silence { reason: SilenceReason::NoWindow, for_s: Some(1_200.0) });
        b.judgements = vec![judge(b.worst_today_ns)];
        let mut c = board("x86-lab:9464", "x86-lab", None, Some(44_000), Some(44_000));
        c.up = Some(false);
        c.last_window_end_unix = Some(NOW - 86_400.0);
        c.last_window_end = Some("2025-11-25T22:40:00Z".into());
        c.silent = Some(Silence { reason: SilenceReason::Down, for_s: Some(86_400.0) });
        c.overruns_today = None;
        c.lost_today = None;
        c.judgements = vec![judge(None)];
        let boards = vec![b, a, c];
        FleetReport {
            schema: rtlab_results::fleet::FLEET_SCHEMA.into(),
            prometheus: "http://prometheus.lab:9090".into(),
            generated_at_unix: NOW,
            generated_at: "2025-11-26T22:40:00Z".into(),
            metric: "timer.latency".into(),
            silent_after_s: 600.0,
            requirements: vec![requirement],
            summary: FleetReport::summarise(&boards),
            boards,
        }
    }

    #[test]
    fn fleet_terminal() {
        insta::assert_snapshot!(render(&example(), FleetFormat::Terminal).unwrap());
    }

    #[test]
    fn fleet_markdown() {
        insta::assert_snapshot!(render(&example(), FleetFormat::Markdown).unwrap());
    }

    #[test]
    fn fleet_json() {
        let text = render(&example(), FleetFormat::Json).unwrap();
        let back: FleetReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, example());
        insta::assert_snapshot!(text);
    }

    #[test]
    fn fleet_html() {
        let page = render(&example(), FleetFormat::Html).unwrap();
        assert!(!page.contains("<script"), "no scripts");
        assert!(!page.contains("http-equiv"), "nothing fetched");
        insta::assert_snapshot!(page);
    }

    #[test]
    fn fleet_summary_words() {
        let report = example();
        assert_eq!(summary_line(&report), "3 boards, 1 breaking a requirement, 2 silent");
        let mut none = report.clone();
        none.requirements.clear();
        none.boards.truncate(1);
        none.summary = FleetReport::summarise(&none.boards);
        assert_eq!(summary_line(&none), "1 board, no requirement given, 1 silent");
        assert_eq!(span_words(45.0), "45 s");
        assert_eq!(span_words(1200.0), "20 min");
        assert_eq!(span_words(5.0 * 3600.0), "5 h");
        assert_eq!(span_words(3.0 * 86400.0), "3 d");
        assert_eq!(trend_words(&report.boards[0]), "higher (+50 %)");
        assert_eq!(kernel_change_words(&report.boards[0]), "2025-11-26 20:40: 6.1.0-rt → 6.6.0-rt15");
        assert_eq!(kernel_change_words(&report.boards[1]), "none in 7 d");
        assert_eq!(problems(&report.boards[2]), ["silent: scrape failing (up = 0), last window 24 h ago"]);
        assert_eq!(
            problems(&report.boards[0]),
            ["breaks timer.latency max < 100us (120.4 µs today)", "silent: no window closed, last window 20 min ago"]
        );
    }

    #[test]
    fn fleet_without_boards() {
        let mut report = example();
        report.boards.clear();
        report.summary = FleetReport::summarise(&report.boards);
        for format in [FleetFormat::Terminal, FleetFormat::Markdown, FleetFormat::Html] {
            assert!(render(&report, format).unwrap().contains("no board"), "{format:?}");
        }
    }
}
