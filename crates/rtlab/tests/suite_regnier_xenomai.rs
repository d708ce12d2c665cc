//! The suites `regnier-2008` and `xenomai-rtai` (suites/*.toml, docs/suites/*.md): their
//! structure only. Each file passes `rtlab suite --check` in every mode it has, its quick mode
//! fits the 5-minute budget, its experiments are the papers' (rates, periods, durations,
//! loads), and its tables carry the papers' values exactly as printed. Nothing is measured
//! here: the suites' real-time runs take minutes and their numbers are the machine's.

mod common;

use common::{repo_root, rtlab};
use std::path::PathBuf;

fn suite_file(name: &str) -> PathBuf {
    repo_root().join("suites").join(format!("{name}.toml"))
}

fn suite(name: &str) -> toml::Table {
    let text = std::fs::read_to_string(suite_file(name)).expect("the suite file exists");
    toml::from_str(&text).expect("the suite file is TOML")
}

/// `rtlab suite FILE --check [mode]`: exit code and stdout.
fn check(name: &str, mode: Option<&str>) -> (Option<i32>, String) {
    let out = rtlab().arg("suite").arg(suite_file(name)).arg("--check").args(mode).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// Seconds of "... ; 2 min 5 s in this mode" (format_duration's "h", "min", "s" parts).
fn estimate_s(check_output: &str) -> u64 {
    let line = check_output.lines().next().unwrap_or_default();
    let text = line.rsplit("; ").next().unwrap_or_default().trim_end_matches(" in this mode");
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut seconds = 0;
    for pair in words.chunks(2) {
        let n: u64 = pair[0].parse().unwrap_or_else(|_| panic!("not a duration: {line}"));
        seconds += n * match pair[1] {
            "h" => 3600,
            "min" => 60,
            "s" => 1,
            other => panic!("unit {other} in {line}"),
        };
    }
    seconds
}

fn condition<'a>(suite: &'a toml::Table, name: &str) -> &'a toml::Table {
    suite["condition"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.as_table())
        .find(|c| c["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("condition {name}"))
}

fn table<'a>(suite: &'a toml::Table, id: &str) -> &'a toml::Table {
    suite["table"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_table())
        .find(|t| t["id"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("table {id}"))
}

fn strings(value: &toml::Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

/// (metric, statistic) of every column.
fn columns(table: &toml::Table) -> Vec<(String, String, String)> {
    table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let c = c.as_table().unwrap();
            let get = |k: &str| c[k].as_str().unwrap().to_string();
            (get("condition"), get("metric"), get("statistic"))
        })
        .collect()
}

#[test]
fn both_suites_pass_the_check_in_every_mode_and_quick_fits_five_minutes() {
    for name in ["regnier-2008", "xenomai-rtai"] {
        let (code, full) = check(name, None);
        assert_eq!(code, Some(0), "{name}: {full}");
        let (code, quick) = check(name, Some("--quick"));
        assert_eq!(code, Some(0), "{name} --quick: {quick}");
        // Measuring and settle time; rtlab's set-up and saving add seconds per condition.
        assert!(estimate_s(&quick) <= 4 * 60, "{name} --quick takes {} s", estimate_s(&quick));
        assert!(estimate_s(&quick) < estimate_s(&full), "{name}: --quick is shorter than full");
    }
    let (code, long) = check("regnier-2008", Some("--long"));
    assert_eq!(code, Some(0), "{long}");
    // net: 10 minutes each; timer: 10 minutes each; experiment 2: 10 minutes unloaded, 14
    // hours under load (Figure 9's run); settle times (shown to the minute past an hour).
    assert_eq!(estimate_s(&long), 14 * 3600 + 50 * 60);
    // The xenomai-rtai paper has no long run.
    let (code, out) = check("xenomai-rtai", Some("--long"));
    assert_eq!(code, Some(2), "{out}");
}

#[test]
fn regnier_measures_network_events_at_20_hz_for_ten_minutes_without_and_with_load() {
    let s = suite("regnier-2008");
    let experiment = s["experiment"].as_table().unwrap();
    assert_eq!(experiment["raw"].as_bool(), Some(true), "Figures 5-7 plot every event");
    let without = condition(&s, "without-load");
    let with = condition(&s, "with-load");
    for c in [without, with] {
        assert_eq!(c["probe"].as_str(), Some("net"));
        assert_eq!(c["rate"].as_str(), Some("20"));
    }
    // L_irq as a hardware interrupt's latency: the timer's, at the same 20 Hz, same loads.
    for (name, load) in [("timer-without-load", "idle"), ("timer-with-load", "regnier")] {
        let c = condition(&s, name);
        assert_eq!(c["probe"].as_str(), Some("timer"));
        assert_eq!(c["interval"].as_str(), Some("50ms"), "20 Hz");
        assert_eq!(c["load"].as_str(), Some(load));
        assert_eq!(strings(&c["needs"]), ["split"]);
    }
    let t = table(&s, "table-1-irq-timer");
    assert!(columns(t).iter().all(|(_, m, _)| m == "timer.irq"));
    assert_eq!(without["load"].as_str(), Some("idle"));
    assert_eq!(with["load"].as_str(), Some("regnier"));
    for c in [without, with] {
        assert_eq!(c["duration"].as_str(), Some("10m"));
        assert_eq!(c["quick"]["duration"].as_str(), Some("1m"), "the paper's one-minute window");
    }
    // The 14-hour run is experiment 2's (Figure 9), not experiment 1's.
    assert!(!without.contains_key("long") && !with.contains_key("long"), "experiment 1 has no 14-hour run");
}

/// One experiment's rows of Table 1, per platform: (no load: L_irq Mean SD Min Max, L_act
/// Mean SD Min Max), (load: the same).
type PrintedRows = [(&'static str, [&'static str; 8], [&'static str; 8]); 4];

/// The tables (no load, load) of `tables`, each of its condition: L_irq (`metrics[0]`) then
/// L_act, Mean SD Min Max; and the paper's rows exactly as `printed`.
fn assert_printed_rows(s: &toml::Table, tables: [(&str, &str); 2], metrics: [&str; 2], printed: &PrintedRows) {
    let stats = ["mean", "stddev", "min", "max"];
    for (load, (id, condition_name)) in tables.into_iter().enumerate() {
        let t = table(s, id);
        let expected_columns: Vec<(String, String, String)> = metrics
            .iter()
            .flat_map(|m| stats.iter().map(move |st| (condition_name.to_string(), m.to_string(), st.to_string())))
            .collect();
        assert_eq!(columns(t), expected_columns, "{id}: L_irq then L_act, Mean SD Min Max");
        let rows = t["paper_rows"].as_array().unwrap();
        assert_eq!(rows.len(), printed.len());
        for (row, (platform, no, yes)) in rows.iter().zip(printed) {
            let row = row.as_table().unwrap();
            assert!(row["label"].as_str().unwrap().starts_with(platform), "{id}: {row:?}");
            let values = strings(&row["values"]);
            assert_eq!(values, if load == 0 { no.to_vec() } else { yes.to_vec() }, "{id}: {platform}");
        }
    }
}

#[test]
fn regnier_table_1_is_experiment_1_as_printed() {
    let s = suite("regnier-2008");
    // Table 1, rows "Exp. 1", exactly as the paper prints them.
    let printed: PrintedRows = [
        (
            "Linux Std",
            ["8.9", "0.3", "8.7", "18.4", "4.6", "0.4", "4.4", "16.2"],
            ["10.4", "1.9", "8.8", "67.7", "37.3", "48.2", "4.6", "617.5"],
        ),
        (
            "Linux Prt ",
            ["21.5", "1.7", "20.3", "45.1", "2.1", "0.2", "1.2", "9.4"],
            ["58.5", "26.4", "17.2", "245.9", "3.8", "2.8", "1.1", "27.4"],
        ),
        (
            "Linux PrtND",
            ["8.9", "0.2", "8.8", "16.7", "5.3", "0.3", "5.0", "13.1"],
            ["10.6", "1.6", "8.9", "35.8", "8.0", "2.0", "5.2", "31.0"],
        ),
        (
            "Linux Xen",
            ["9.0", "0.1", "8.8", "11.1", "2.1", "0.5", "1.8", "8.4"],
            ["10.2", "0.1", "8.8", "20.8", "8.7", "0.3", "1.8", "18.7"],
        ),
    ];
    assert_printed_rows(
        &s,
        [("table-1-no-load", "without-load"), ("table-1-load", "with-load")],
        ["net.delivery", "net.activation"],
        &printed,
    );
}

/// Experiment 2: a second station measures (remote probe, 20 Hz), without load and under
/// E_L's 64-byte UDP flood at 200 kHz with the station running the shell loop on itself;
/// the loaded one is the paper's 14-hour run with --long; Table 1's "Exp. 2" rows exactly as
/// printed.
#[test]
fn regnier_experiment_2_needs_a_station_and_fills_table_1_exp_2_rows() {
    let s = suite("regnier-2008");
    let loads = [("exp2-without-load", "idle"), ("exp2-with-load", "remote:udp-flood:rate=200000+station:shell-loop")];
    for (name, load) in loads {
        let c = condition(&s, name);
        assert_eq!(c["probe"].as_str(), Some("remote"));
        assert_eq!(c["rate"].as_str(), Some("20"));
        assert_eq!(c["load"].as_str(), Some(load));
        assert_eq!(strings(&c["needs"]), ["station"]);
        assert_eq!(c["duration"].as_str(), Some("10m"));
    }
    assert_eq!(condition(&s, "exp2-with-load")["long"]["duration"].as_str(), Some("14h"), "Figure 9's 14 hours");
    assert!(!condition(&s, "exp2-without-load").contains_key("long"));
    let printed: PrintedRows = [
        (
            "Linux Std",
            ["9.0", "0.4", "8.8", "18.4", "3.6", "0.6", "-1.3", "19.0"],
            ["12.5", "3.2", "9.0", "75.0", "19.9", "17.4", "2.3", "428.4"],
        ),
        (
            "Linux Prt ",
            ["10.2", "0.5", "10.0", "30.8", "3.7", "0.4", "0.8", "12.7"],
            ["31.2", "19.0", "10.4", "203.9", "7.2", "3.1", "2.2", "21.2"],
        ),
        (
            "Linux PrtND",
            ["9.2", "0.4", "8.9", "14.9", "4.6", "0.5", "-0.3", "14.2"],
            ["11.8", "2.3", "9.1", "49.2", "14.9", "5.6", "4.5", "85.0"],
        ),
        (
            "Linux Xen",
            ["9.1", "0.3", "8.8", "13.4", "4.0", "0.3", "0.3", "9.6"],
            ["11.3", "1.2", "9.0", "19.7", "9.8", "2.0", "2.7", "11.8"],
        ),
    ];
    assert_printed_rows(
        &s,
        [("table-1-exp2-no-load", "exp2-without-load"), ("table-1-exp2-load", "exp2-with-load")],
        ["remote.irq", "remote.act"],
        &printed,
    );
}

#[test]
fn regnier_figures_are_time_series_and_log_histograms() {
    let s = suite("regnier-2008");
    let figures: Vec<(String, String, String)> = s["figure"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let f = f.as_table().unwrap();
            (f["id"].as_str().unwrap().into(), f["kind"].as_str().unwrap().into(), f["metric"].as_str().unwrap().into())
        })
        .collect();
    let expect = |id: &str, kind: &str, metric: &str| (id.to_string(), kind.to_string(), metric.to_string());
    assert_eq!(
        figures,
        [
            expect("fig-5-6", "timeseries", "net.delivery"),
            expect("fig-5-7", "timeseries", "net.activation"),
            expect("fig-8-irq", "timeseries", "remote.irq"),
            expect("fig-8-act", "timeseries", "remote.act"),
            expect("fig-9-irq", "histogram", "remote.irq"),
            expect("fig-9-act", "histogram", "remote.act"),
        ]
    );
    // Figure 9 is experiment 2's run under load, as the paper's 14-hour run was.
    for f in s["figure"].as_array().unwrap().iter().filter(|f| f["id"].as_str().unwrap().starts_with("fig-9")) {
        assert_eq!(strings(&f["conditions"]), ["exp2-with-load"], "{f}");
    }
}

#[test]
fn xenomai_rtai_measures_1_ms_events_and_a_100_us_task_under_io_and_cpu_load() {
    let s = suite("xenomai-rtai");
    let experiment = s["experiment"].as_table().unwrap();
    assert_eq!(experiment["load"].as_str(), Some("io-cpu"));
    assert_eq!(experiment["presets"]["io-cpu"].as_str(), Some("ping-flood+disk+cpu"));
    // The interrupt response: a real hardware interrupt (the timer's, split out by tracing).
    let interrupt = condition(&s, "interrupt");
    assert_eq!(interrupt["probe"].as_str(), Some("timer"));
    assert_eq!(interrupt["interval"].as_str(), Some("1ms"));
    assert_eq!(interrupt["duration"].as_str(), Some("1m"));
    assert_eq!(strings(&interrupt["needs"]), ["split"]);
    // The loopback substitute, kept and labelled.
    let substitute = condition(&s, "interrupt-net");
    assert_eq!(substitute["probe"].as_str(), Some("net"));
    assert_eq!(substitute["rate"].as_str(), Some("1khz"));
    assert!(substitute["title"].as_str().unwrap().starts_with("Substitute"));
    let periodic = condition(&s, "periodic");
    assert_eq!(periodic["probe"].as_str(), Some("timer"));
    assert_eq!(periodic["interval"].as_str(), Some("100us"));
    assert_eq!(periodic["samples"].as_integer(), Some(600_000), "one minute at 100 µs");
    for f in s["figure"].as_array().unwrap() {
        assert_eq!(f["kind"].as_str(), Some("histogram"), "the paper's figures are histograms");
    }
}

/// (row label, column title, value) of every filled paper cell of a table.
fn paper_statements(table: &toml::Table) -> Vec<(String, String, String)> {
    let titles: Vec<String> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_table().unwrap()["title"].as_str().unwrap().to_string())
        .collect();
    let mut out = Vec::new();
    for row in table["paper_rows"].as_array().unwrap() {
        let row = row.as_table().unwrap();
        for (title, value) in titles.iter().zip(strings(&row["values"])) {
            if !value.is_empty() {
                out.push((row["label"].as_str().unwrap().to_string(), title.clone(), value));
            }
        }
    }
    out
}

#[test]
fn xenomai_rtai_puts_each_published_statement_where_the_paper_does() {
    let s = suite("xenomai-rtai");
    // Interrupt response (Figures 4-7): one row per figure, the hardware interrupt's latency
    // first, the loopback substitute labelled as such.
    let t = table(&s, "interrupt-response");
    let cols = columns(t);
    assert_eq!(cols[..3].iter().map(|c| c.1.as_str()).collect::<Vec<_>>(), ["timer.irq"; 3]);
    assert_eq!(cols[..3].iter().map(|c| c.2.as_str()).collect::<Vec<_>>(), ["min", "mean", "max"]);
    for (c, m, _) in &cols[3..] {
        assert_eq!(c, "interrupt-net");
        assert!(m.starts_with("net."));
    }
    // "The maximum latencies are 95 % lower than standard Linux kernel with preemption
    // patch": the interrupt response maxima of RTAI (Fig 6) and Xenomai.
    assert_eq!(
        paper_statements(t),
        [
            ("RTAI (Fig 6)".to_string(), "Max (µs)".to_string(), "95 % lower than Fig 5".to_string()),
            ("Xenomai (Fig 7 per text)".into(), "Max (µs)".into(), "95 % lower than Fig 5".into()),
        ]
    );
    // Periodic task (Figures 7-10): "Nearly all latencies are below 2 µs" of the RTAI
    // kernel-space task, in a share-below-2-µs column, not a Max.
    let t = table(&s, "periodic-task");
    assert!(columns(t).iter().all(|(c, m, _)| c == "periodic" && m == "timer.latency"));
    assert_eq!(
        paper_statements(t),
        [(
            "RTAI kernel task (Fig 10)".to_string(),
            "Below 2 µs (share of samples)".to_string(),
            "nearly all".to_string()
        )]
    );
    assert!(columns(t).iter().any(|(_, _, statistic)| statistic == "below(2us)"));
    let labels: Vec<String> = t["paper_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_table().unwrap()["label"].as_str().unwrap().to_string())
        .collect();
    assert!(labels.iter().all(|l| !l.contains("Fig 6")), "Fig 6 is RTAI's interrupt response: {labels:?}");
}

/// A suite's `[[judgement]]` of id `id`.
fn judgement<'a>(suite: &'a toml::Table, id: &str) -> &'a toml::Table {
    suite["judgement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_table().unwrap())
        .find(|j| j["id"].as_str() == Some(id))
        .unwrap_or_else(|| panic!("no judgement {id}"))
}

/// The (condition, metric) of each cell of a judgement.
fn judgement_cells(j: &toml::Table) -> Vec<(String, String)> {
    j["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let c = c.as_table().unwrap();
            let text = |k: &str| c.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            (text("condition"), text("metric"))
        })
        .collect()
}

#[test]
fn regnier_figure_8_panels_carry_the_papers_letters() {
    // The paper's Figure 8: (a) and (b) are L_irq without and with load, (c) and (d) L_act.
    let s = suite("regnier-2008");
    let title = |id: &str| {
        let f = s["figure"].as_array().unwrap().iter().find(|f| f["id"].as_str() == Some(id)).unwrap();
        f["title"].as_str().unwrap().to_string()
    };
    assert!(title("fig-8-irq").starts_with("Figure 8 (a, b) - Interrupt latency L_irq"), "{}", title("fig-8-irq"));
    assert!(title("fig-8-act").starts_with("Figure 8 (c, d) - Activation latency L_act"), "{}", title("fig-8-act"));
}

#[test]
fn regnier_judges_its_words_mean_and_sd_the_conclusion_and_figure_9() {
    let s = suite("regnier-2008");
    // L_irq: "the lower mean and standard deviation values"; L_act: SD and worst against mean.
    assert_eq!(strings(&judgement(&s, "predictability-irq-load")["criteria"]), ["mean", "sd"]);
    assert!(!judgement(&s, "predictability-act-load").contains_key("criteria"), "the default: sd, max-over-mean");
    // The conclusion: over 100 µs for standard Linux, below 20 µs for Preempt-RT and Xenomai,
    // on the maxima of L_irq and L_act of both experiments (not the loopback net.delivery).
    let c = judgement(&s, "conclusion-worst-case");
    assert_eq!(c["kind"].as_str(), Some("worst-case"));
    assert_eq!(strings(&c["bounds"]), ["20us", "100us"]);
    let cells = judgement_cells(c);
    assert_eq!(cells.len(), 8);
    assert!(cells
        .iter()
        .all(|(_, m)| ["timer.irq", "net.activation", "remote.irq", "remote.act"].contains(&m.as_str())));
    // Figure 9: its cells name the figures, so that the figure alone says which run it is.
    let f = judgement(&s, "fig-9-count");
    assert_eq!(f["kind"].as_str(), Some("count-within"));
    assert_eq!((strings(&f["within"]), f["count"].as_integer()), (vec!["10us".into(), "11us".into()], Some(100_000)));
    let figures: Vec<&str> = f["cells"].as_array().unwrap().iter().map(|c| c["figure"].as_str().unwrap()).collect();
    assert_eq!(figures, ["fig-9-irq", "fig-9-act"]);
    assert_eq!(judgement_cells(f), vec![(String::new(), String::new()); 2], "no condition or metric of their own");
}

#[test]
fn xenomai_rtai_judges_the_timer_handlers_jitter_with_the_split() {
    let s = suite("xenomai-rtai");
    let split = condition(&s, "periodic-split");
    assert_eq!(strings(&split["needs"]), ["split"]);
    let periodic = condition(&s, "periodic");
    for key in ["probe", "interval", "samples"] {
        assert_eq!(split[key], periodic[key], "{key}: the same 100 µs task");
    }
    assert!(!periodic.contains_key("needs"), "the periodic task's figures stay untraced");
    let j = judgement(&s, "timer-handler-lowest-jitter");
    assert_eq!(j["kind"].as_str(), Some("lowest"));
    assert_eq!(
        judgement_cells(j),
        [("periodic-split".to_string(), "timer.irq".to_string()), ("periodic-split".into(), "timer.latency".into())]
    );
}
