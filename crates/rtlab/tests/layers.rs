//! The workspace's layers, read from its sources: which crate may depend on which, and no
//! circle of imports between the modules of a crate (data flows one way: README.md, "More").
//! Run with `--nocapture` to see both graphs (`./run-tests --test layers -- --nocapture`).
//!
//! A module's imports are the `crate::...` and `super::...` paths in its file (comments and
//! `#[cfg(test)] mod tests` blocks left out: a test may reach anywhere). Checked at two
//! levels: the top-level modules of a crate, and the children of each directory module among
//! themselves (a child using its parent's types is not a circle).

mod common;

use common::repo_root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate and the rtlab crates it may depend on (normal dependencies). Anything not
/// listed here is a new crate: add it with its place in the layers.
const ALLOWED: [(&str, &[&str]); 11] = [
    ("rtlab-analysis", &[]),
    ("rtlab-results", &["rtlab-analysis"]),
    ("rtlab-history", &["rtlab-analysis", "rtlab-results"]),
    ("rtlab-sys", &["rtlab-results"]),
    ("rtlab-formats", &["rtlab-analysis", "rtlab-results"]),
    ("rtlab-station", &["rtlab-results", "rtlab-sys"]),
    ("rtlab-probe", &["rtlab-analysis", "rtlab-results", "rtlab-sys", "rtlab-station"]),
    ("rtlab-load", &["rtlab-results", "rtlab-sys", "rtlab-station"]),
    ("rtlab-report", &["rtlab-analysis", "rtlab-results"]),
    ("rtlab-suite", &["rtlab-analysis", "rtlab-results", "rtlab-report"]),
    (
        "rtlab",
        &[
            "rtlab-analysis",
            "rtlab-results",
            "rtlab-history",
            "rtlab-sys",
            "rtlab-station",
            "rtlab-formats",
            "rtlab-probe",
            "rtlab-load",
            "rtlab-report",
            "rtlab-suite",
        ],
    ),
];

/// What the results contract and the format converters must never reach, even indirectly.
const MEASURING: [&str; 4] = ["rtlab-sys", "rtlab-station", "rtlab-probe", "rtlab-load"];

fn crates_dir() -> PathBuf {
    repo_root().join("crates")
}

/// The rtlab crates `name` depends on in its `[dependencies]`.
fn rtlab_dependencies(name: &str) -> BTreeSet<String> {
    let path = crates_dir().join(name).join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let manifest: toml::Table = text.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    manifest
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| d.keys().filter(|k| k.starts_with("rtlab")).cloned().collect())
        .unwrap_or_default()
}

fn workspace_crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(crates_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn crates_depend_only_on_the_layers_below_them() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.into_iter().collect();
    let mut graph = BTreeMap::new();
    for name in workspace_crates() {
        let deps = rtlab_dependencies(&name);
        let Some(may) = allowed.get(name.as_str()) else {
            panic!("crate {name} has no place in the layers: add it to ALLOWED in {}", file!());
        };
        for dep in &deps {
            assert!(may.contains(&dep.as_str()), "{name} depends on {dep}, which is not below it ({may:?})");
        }
        println!("{name} -> {}", deps.iter().cloned().collect::<Vec<_>>().join(", "));
        graph.insert(name, deps);
    }
    for top in ["rtlab-results", "rtlab-history", "rtlab-formats"] {
        let mut reached = BTreeSet::new();
        let mut todo = vec![top.to_string()];
        while let Some(c) = todo.pop() {
            for d in graph.get(&c).into_iter().flatten() {
                if reached.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        for m in MEASURING {
            assert!(!reached.contains(m), "{top} reaches {m}: the results contract must not depend on measuring");
        }
    }
}

/// SQLite is compiled by the history's crate alone: the crates that only make or read its
/// records (results, sys, probes, loads, formats, report) build none.
#[test]
fn only_the_history_depends_on_sqlite() {
    for name in workspace_crates() {
        let path = crates_dir().join(&name).join("Cargo.toml");
        let manifest: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        let deps = manifest.get("dependencies").and_then(|d| d.as_table());
        let sqlite = deps.is_some_and(|d| d.contains_key("rusqlite"));
        assert_eq!(sqlite, name == "rtlab-history", "{name}: rusqlite belongs to rtlab-history alone");
    }
}

/// Module path ("tables::split") -> its source text without comments and test modules.
fn modules(src: &Path) -> BTreeMap<Vec<String>, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(parts, strip(&text));
        }
    }
    out
}

/// The text without `//` comments and without a trailing `#[cfg(test)] mod tests { ... }`.
fn strip(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    code.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The module paths `text` (the source of `module`) names: `crate::a::b`, `super::c`, and
/// the names inside `use crate::{a, b::c}`.
fn references(module: &[String], text: &str, known: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    let mut add = |path: Vec<String>| {
        // The longest known module that prefixes the path.
        for n in (1..=path.len()).rev() {
            if known.contains(&path[..n]) {
                found.insert(path[..n].to_vec());
                return;
            }
        }
    };
    let words = |s: &str| -> Vec<String> {
        s.split("::").map(|w| w.trim().to_string()).take_while(|w| !w.is_empty() && is_ident(w)).collect()
    };
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                add(words(item.trim()));
            }
        } else {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            add(words(&rest[..end]));
        }
    }
    for (at, _) in text.match_indices("super::") {
        if at > 0 && text[..at].ends_with("::") {
            continue;
        }
        let rest = &text[at + 7..];
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
        let mut base: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
        base.extend(words(&rest[..end]));
        add(base);
    }
    found
}

fn is_ident(w: &str) -> bool {
    w.chars().all(|c| c.is_alphanumeric() || c == '_') && !w.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// The circles of `edges` (strongly connected groups of more than one node).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = edges.keys().collect();
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for m in edges.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for n in &nodes {
        let group: Vec<String> = nodes
            .iter()
            .filter(|m| reaches[*n].contains(**m) && reaches[*m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        if group.len() > 1 && !out.contains(&group) {
            out.push(group);
        }
    }
    out
}

#[test]
fn no_module_imports_in_a_circle() {
    let mut found = Vec::new();
    for name in workspace_crates() {
        let src = crates_dir().join(&name).join("src");
        let modules = modules(&src);
        let known: BTreeSet<Vec<String>> = modules.keys().cloned().collect();
        // Level 1: top-level modules. Level 2: the children of each directory module.
        let mut levels: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (module, text) in &modules {
            for target in references(module, text, &known) {
                // The deepest common parent decides the level compared at.
                let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
                if common >= module.len() || common >= target.len() {
                    continue; // a module and its own parent or child
                }
                let parent = module[..common].to_vec();
                let level = levels.entry(parent).or_default();
                level.entry(module[common].clone()).or_default().insert(target[common].clone());
                level.entry(target[common].clone()).or_default();
            }
        }
        for (parent, edges) in &levels {
            let shown = if parent.is_empty() { name.clone() } else { format!("{name}::{}", parent.join("::")) };
            for (from, to) in edges.iter().filter(|(_, to)| !to.is_empty()) {
                println!("{shown}: {from} -> {}", to.iter().cloned().collect::<Vec<_>>().join(", "));
            }
            for circle in circles(edges) {
                found.push(format!("{shown}: {}", circle.join(" <-> ")));
            }
        }
    }
    assert!(found.is_empty(), "modules importing each other in a circle:\n{}", found.join("\n"));
}

#[test]
fn the_checker_finds_a_circle() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
        ("d".to_string(), BTreeSet::from(["a".to_string()])),
    ]
    .into_iter()
    .collect();
    assert_eq!(circles(&edges), vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]);
    let known: BTreeSet<Vec<String>> =
        [vec!["x".to_string()], vec!["x".to_string(), "y".to_string()], vec!["z".to_string()]].into_iter().collect();
    let text = strip("use crate::{z, x::y::Thing};\n// crate::q\nfn f() { super::y::g() }\n#[cfg(test)]\nmod tests { use crate::z; }");
    let found = references(&["x".to_string(), "w".to_string()], &text, &known);
    assert_eq!(found, [vec!["x".to_string(), "y".to_string()], vec!["z".to_string()]].into_iter().collect());
}
