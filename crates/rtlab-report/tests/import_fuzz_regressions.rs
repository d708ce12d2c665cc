//! The importers against damaged input, in CI. Two sources of inputs:
//!
//! - every crash input the fuzzer found (tests/fixtures/import/crashes/<format>/, copied
//!   there by bench/fuzz-importers; none is an empty or missing directory);
//! - a few hundred generated inputs per format, from a fixed seed: arbitrary bytes, text
//!   made of the characters these formats use, and the seed files (fuzz/seeds/<format>/ and
//!   tests/fixtures/import/<format>/) mutated the ways a fuzzer does: bit flips, inserted
//!   and deleted bytes, truncation, splices, numbers replaced by huge or negative ones,
//!   invalid UTF-8, duplicated and dropped lines, extreme binary integers.
//!
//! Each input must give a one-line ImportError naming a file, or a run that holds its
//! invariants, never a panic: the rules are fuzz/src/harness.rs, shared with the fuzz
//! targets. A failing generated input is saved to the temporary directory, to be added to
//! the crash corpus once fixed.

#[allow(dead_code)]
#[path = "../../../fuzz/src/harness.rs"]
mod harness;

#[path = "support/splitmix.rs"]
mod splitmix;
use rtlab_formats::import::{ImportError, ImportFormat, SourceFile};
use splitmix::SplitMix64;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Generated inputs per format: enough to reach past the parsers' first checks, few enough
/// to keep the test to seconds in a debug build (an accepted input costs milliseconds there:
/// its run is built, checked and summarized). RTLAB_FUZZ_CASES=N runs N of each instead.
const ARBITRARY_CASES: u64 = 96;
const MUTATED_CASES: u64 = 104;
/// Seeds larger than this are imported as they are but not mutated (a 20000-bucket
/// histogram would make every mutant slow).
const MUTATED_SEED_MAX_BYTES: usize = 16 * 1024;

fn cases(default: u64) -> u64 {
    std::env::var("RTLAB_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, recursively, in name order; nothing when it does not exist.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Runs one input through the harness; a panic is re-raised naming what failed, and a
/// generated input is saved so it can join the crash corpus.
fn exercise(format: ImportFormat, data: &[u8], what: &str, save_as: Option<&str>) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| harness::exercise(format, data))) {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let saved = save_as.map(|name| {
            let path = std::env::temp_dir().join(name);
            let _ = std::fs::write(&path, data);
            format!("; the input is saved as {}", path.display())
        });
        panic!("{} importer, {what}: {message}{}", format.name(), saved.unwrap_or_default());
    }
}

#[test]
fn crash_inputs_found_by_the_fuzzer_are_handled() {
    let crashes = manifest_dir().join("tests/fixtures/import/crashes");
    let mut total = 0;
    for format in ImportFormat::ALL {
        for path in files_under(&crashes.join(format.name())) {
            exercise(format, &read(&path), &format!("crash input {}", path.display()), None);
            total += 1;
        }
    }
    eprintln!("{total} crash inputs replayed");
}

// One test per format, so that they run in parallel.
#[test]
fn cyclictest_survives_generated_input() {
    survives_generated_input(ImportFormat::Cyclictest);
}

#[test]
fn rtla_survives_generated_input() {
    survives_generated_input(ImportFormat::Rtla);
}

#[test]
fn jitterdebugger_survives_generated_input() {
    survives_generated_input(ImportFormat::Jitterdebugger);
}

#[test]
fn oslat_survives_generated_input() {
    survives_generated_input(ImportFormat::Oslat);
}

#[test]
fn xenomai_survives_generated_input() {
    survives_generated_input(ImportFormat::Xenomai);
}

/// The seeds as they are, arbitrary bytes and text, then mutated seeds.
fn survives_generated_input(format: ImportFormat) {
    let seeds = seed_inputs(format);
    assert!(!seeds.is_empty(), "no seed files for {}", format.name());
    for (path, data) in &seeds {
        exercise(format, data, &format!("seed {}", path.display()), None);
    }

    let mut rng = SplitMix64(0x5EED_0000 + format as u64);
    for case in 0..cases(ARBITRARY_CASES) {
        let data = if case % 2 == 0 { arbitrary_bytes(&mut rng) } else { format_like_text(&mut rng) };
        let name = format!("rtlab-import-{}-arbitrary-{case}.bin", format.name());
        exercise(format, &data, &format!("arbitrary case {case}"), Some(&name));
    }

    let small: Vec<(PathBuf, Vec<u8>)> =
        seeds.iter().filter(|(_, data)| data.len() <= MUTATED_SEED_MAX_BYTES).cloned().collect();
    let pool = if small.is_empty() { &seeds } else { &small };
    let mut rng = SplitMix64(0xF022_0000 + format as u64);
    for case in 0..cases(MUTATED_CASES) {
        let (path, original) = &pool[rng.below(pool.len())];
        let mut data = original.clone();
        for _ in 0..=rng.below(3) {
            mutate(&mut rng, &mut data, pool);
        }
        let name = format!("rtlab-import-{}-mutated-{case}.bin", format.name());
        exercise(format, &data, &format!("mutated case {case} of {}", path.display()), Some(&name));
    }
}

/// The harness itself: an error must name a file that was given, on one line.
#[test]
fn the_harness_rejects_a_badly_formed_error() {
    let files = [SourceFile { path: "hist.txt".into(), bytes: Vec::new() }];
    harness::check_error(&files, &ImportError::at("hist.txt", 3, "not a number"));
    for bad in [
        ImportError::at("other.txt", 3, "not a number"),
        ImportError::at("hist.txt", 0, "not a number"),
        ImportError::at("hist.txt", 3, "two\nlines"),
        ImportError::whole("hist.txt", " "),
    ] {
        let outcome = catch_unwind(|| harness::check_error(&files, &bad));
        assert!(outcome.is_err(), "accepted {bad:?}");
    }
}

/// The harness must not cry wolf: runs that `build_run` makes from sound sources (every
/// kind of series, overflows, extremes at the value limit) pass its checks.
#[test]
fn the_harness_accepts_well_formed_runs() {
    use rtlab_formats::import::{build_run, ImportOptions, ParsedSource, Series, SeriesData, SourceHistogram};
    use rtlab_formats::import::{ImportFormat::*, MAX_VALUE_NS};
    let histogram = SourceHistogram {
        width_ns: 1000,
        buckets: vec![(14_000, 3), (15_000, 0), (17_000, 2)],
        overflows: 2,
        overflow_from_ns: 20_000,
        min_ns: Some(14_000),
        max_ns: Some(46_135_000),
        count: Some(7),
        avg_ns: Some(37_000.0),
    };
    let sources = [
        (Cyclictest, SeriesData::Histogram(histogram)),
        (Jitterdebugger, SeriesData::Samples(vec![-MAX_VALUE_NS, 0, 24_000, MAX_VALUE_NS])),
        (Xenomai, SeriesData::SummaryOnly { min_ns: 701, avg_ns: 2300.0, max_ns: 5102 }),
        (Rtla, SeriesData::Samples(vec![7; 1000])),
    ];
    for (format, data) in sources {
        let files = [SourceFile { path: "source.txt".into(), bytes: b"x".to_vec() }];
        let parsed = ParsedSource {
            resolution_ns: 1000,
            series: vec![Series::new("timer", "timer.latency", Some(1), "T:0", data)],
            ..ParsedSource::default()
        };
        let run = build_run(format, &files, parsed, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{}: build_run: {e}", format.name()));
        harness::check_run(format, &files, &run);
    }
}

/// The seed files of `format`, each as the fuzz target gets it; a directory holding several
/// files (one run's results.json and samples.raw, say) also gives every ordered pair joined
/// at the harness's separator, as the two-file formats take them.
fn seed_inputs(format: ImportFormat) -> Vec<(PathBuf, Vec<u8>)> {
    let dirs = [
        manifest_dir().join("../../fuzz/seeds").join(format.name()),
        manifest_dir().join("tests/fixtures/import").join(format.name()),
    ];
    let mut inputs = Vec::new();
    for dir in dirs {
        let files: Vec<(PathBuf, Vec<u8>)> = files_under(&dir).into_iter().map(|p| (p.clone(), read(&p))).collect();
        if harness::file_pair_names(format).is_some() {
            for (first_path, first) in &files {
                for (second_path, second) in &files {
                    if first_path != second_path && first_path.parent() == second_path.parent() {
                        let mut joined = first.clone();
                        joined.push(harness::SEPARATOR);
                        joined.extend_from_slice(second);
                        inputs.push((first_path.with_extension("pair"), joined));
                    }
                }
            }
        }
        inputs.extend(files);
    }
    inputs
}

fn arbitrary_bytes(rng: &mut SplitMix64) -> Vec<u8> {
    let len = rng.below(600);
    (0..len).map(|_| rng.next() as u8).collect()
}

/// Lines of the tokens these formats are made of, so inputs get past "not my format".
fn format_like_text(rng: &mut SplitMix64) -> Vec<u8> {
    const TOKENS: &[&str] = &[
        "# Histogram",
        "# Total:",
        "# Min Latencies:",
        "# Avg Latencies:",
        "# Max Latencies:",
        "# Histogram Overflows:",
        "# Histogram Overflow at cycle number:",
        "# Thread 0:",
        "# RTLA timerlat histogram",
        "# RTLA osnoise histogram",
        "# Time unit is microseconds (us)",
        "# Time unit is nanoseconds (ns)",
        "Index",
        "IRQ-000",
        "Thr-000",
        "Usr-001",
        "CPU-000",
        "over:",
        "count:",
        "min:",
        "avg:",
        "max:",
        "ALL:",
        "RTT|",
        "RTH|",
        "RTD|",
        "RTS|",
        "|",
        "{",
        "}",
        "\"thread\":",
        "\"histogram\":",
        "\"cpu\":",
        "\"0\":",
        "\"14\": 1,",
        "\"sysinfo\":",
        "\"resolution_in_ns\":",
        "0",
        "1",
        "000017",
        "000123",
        "-1",
        "99999999999999999999",
        "18446744073709551615",
        "-9223372036854775808",
        "1e308",
        "NaN",
        "0.5",
        "3.740",
        ":",
        "\t",
        " ",
        "  ",
        "-",
        "00:00:01",
    ];
    let lines = rng.below(30);
    let mut text = String::new();
    for _ in 0..lines {
        for _ in 0..=rng.below(8) {
            let token = *rng.pick(TOKENS);
            text.push_str(token);
            text.push(' ');
        }
        text.push('\n');
    }
    text.into_bytes()
}

/// Replacements for a number in the text: the limits of every integer type, past them,
/// negative, zero, and what is not a plain integer.
const EXTREME_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1000000000001",
    "99999999999999999999999999",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "0x10",
    "+5",
    "",
];

/// Applies one mutation; `seeds` supply the other half of a splice.
fn mutate(rng: &mut SplitMix64, data: &mut Vec<u8>, seeds: &[(PathBuf, Vec<u8>)]) {
    let at = |rng: &mut SplitMix64, data: &Vec<u8>| rng.below(data.len() + 1);
    match rng.below(11) {
        0 if !data.is_empty() => {
            let i = rng.below(data.len());
            data[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = at(rng, data);
            let byte = rng.next() as u8;
            data.insert(i, byte);
        }
        2 if !data.is_empty() => {
            let i = rng.below(data.len());
            let end = (i + 1 + rng.below(16)).min(data.len());
            data.drain(i..end);
        }
        3 => {
            let i = at(rng, data);
            data.truncate(i);
        }
        4 => {
            let (_, other) = rng.pick(seeds);
            let cut = at(rng, data);
            let from = rng.below(other.len() + 1);
            data.truncate(cut);
            data.extend_from_slice(&other[from..]);
        }
        5 => replace_a_number(rng, data),
        6 => {
            const INVALID_UTF8: &[&[u8]] = &[b"\xFF", b"\xC3", b"\xED\xA0\x80", b"\xF0\x9F\x98", b"\xC0\xAF", b"\x00"];
            let i = at(rng, data);
            let bytes = rng.pick(INVALID_UTF8);
            data.splice(i..i, bytes.iter().copied());
        }
        7 => edit_a_line(rng, data, true),
        8 => edit_a_line(rng, data, false),
        9 if data.len() >= 8 => {
            // samples.raw's u32/u64 fields: extremes where a field could be.
            const EXTREMES: &[u64] = &[u64::MAX, i64::MAX as u64, 1 << 63, u32::MAX as u64, 0];
            let value = rng.pick(EXTREMES).to_le_bytes();
            let width = if rng.below(2) == 0 { 4 } else { 8 };
            let i = rng.below(data.len() - width + 1);
            data[i..i + width].copy_from_slice(&value[..width]);
        }
        _ => {
            // Repeats a chunk many times: long lines, many buckets, big files.
            let i = at(rng, data);
            let end = (i + 1 + rng.below(64)).min(data.len());
            let chunk = data[i..end].to_vec();
            for _ in 0..rng.below(200) {
                data.splice(i..i, chunk.iter().copied());
            }
        }
    }
}

/// Replaces a run of ASCII digits (with its sign) by one of [`EXTREME_NUMBERS`].
fn replace_a_number(rng: &mut SplitMix64, data: &mut Vec<u8>) {
    let starts: Vec<usize> =
        (0..data.len()).filter(|&i| data[i].is_ascii_digit() && (i == 0 || !data[i - 1].is_ascii_digit())).collect();
    if starts.is_empty() {
        return;
    }
    let mut start = *rng.pick(&starts);
    let end = (start..data.len()).find(|&i| !data[i].is_ascii_digit() && data[i] != b'.').unwrap_or(data.len());
    if start > 0 && data[start - 1] == b'-' {
        start -= 1;
    }
    let number = rng.pick(EXTREME_NUMBERS);
    data.splice(start..end, number.bytes());
}

/// Duplicates (or drops) one line.
fn edit_a_line(rng: &mut SplitMix64, data: &mut Vec<u8>, duplicate: bool) {
    let mut bounds = vec![0];
    bounds.extend(data.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1));
    let line = rng.below(bounds.len());
    let start = bounds[line];
    let end = bounds.get(line + 1).copied().unwrap_or(data.len());
    if duplicate {
        let copy = data[start..end].to_vec();
        data.splice(start..start, copy);
    } else {
        data.drain(start..end);
    }
}
