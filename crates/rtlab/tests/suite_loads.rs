//! Where the suites' loads run and how hard they push: every paper ran its loads on the one
//! CPU of its machine, so every suite keeps its loads on the measured CPU (`load_cpus` =
//! `cpus`) and its docs page says so; Akamina's comms load runs at the paper's 100BaseT rate.
//! Nothing here runs a suite.

use std::path::{Path, PathBuf};
use toml::{Table, Value};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn suites() -> Vec<(String, Table)> {
    let mut found: Vec<(String, Table)> = std::fs::read_dir(repository().join("suites"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let table: Table = text.parse().unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_stem().unwrap().to_str().unwrap().to_string(), table)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

fn conditions(suite: &Table) -> Vec<&Table> {
    suite["condition"].as_array().unwrap().iter().map(|c| c.as_table().unwrap()).collect()
}

/// A key of the condition, else of `[experiment]`.
fn key<'a>(suite: &'a Table, condition: &'a Table, key: &str) -> Option<&'a str> {
    condition.get(key).or_else(|| suite["experiment"].get(key)).and_then(Value::as_str)
}

#[test]
fn every_suite_runs_its_loads_on_the_measured_cpu_and_says_why() {
    let all = suites();
    assert!(all.len() >= 5, "{:?}", all.iter().map(|s| &s.0).collect::<Vec<_>>());
    for (name, suite) in &all {
        for condition in conditions(suite) {
            let cond = condition["name"].as_str().unwrap();
            // Experiment 2 loads another host (the station), not the measured CPU here.
            let needs = condition.get("needs").and_then(Value::as_array).cloned().unwrap_or_default();
            if needs.iter().any(|n| n.as_str() == Some("station")) {
                continue;
            }
            let cpus = key(suite, condition, "cpus");
            assert!(cpus.is_some(), "{name} {cond}: the measured CPU is named");
            assert_eq!(
                key(suite, condition, "load_cpus"),
                cpus,
                "{name} {cond}: the paper's machine had one CPU, so the loads share the measured one"
            );
        }
        let docs = std::fs::read_to_string(repository().join("docs/suites").join(format!("{name}.md"))).unwrap();
        assert!(docs.contains("load_cpus = \"0\""), "docs/suites/{name}.md does not say where the loads run");
    }
}

#[test]
fn akamina_comms_load_runs_at_the_papers_lan_rate() {
    let (_, suite) = suites().into_iter().find(|(n, _)| n == "akamina-2004").unwrap();
    let loaded = conditions(&suite).into_iter().find(|c| c["name"].as_str() == Some("loaded")).unwrap();
    assert_eq!(key(&suite, loaded, "load"), Some("comms:rate=12.5MB/s"), "100BaseT: 100 Mbit/s");
    let docs = std::fs::read_to_string(repository().join("docs/suites/akamina-2004.md")).unwrap();
    assert!(docs.contains("comms:rate=12.5MB/s") && docs.contains("## Where the loads run"));
}
