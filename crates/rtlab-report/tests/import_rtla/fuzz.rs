//! Mutation fuzzing of an importer, shared by import_rtla.rs, import_jitterdebugger.rs and
//! import_xenomai.rs: truncations, byte flips, line deletions and duplications, huge numbers
//! and garbage, for `RTLAB_FUZZ_SECONDS` (default: a fixed budget of mutations). A panic
//! saves the input under target/fuzz-crashes and fails.

#![allow(dead_code)]

use rtlab_formats::import::{ImportFormat, ImportOptions, SourceFile};
use std::path::Path;

pub struct Rng(u64);

impl Rng {
    pub fn below(&mut self, n: usize) -> usize {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as usize % n.max(1)
    }
}

const NUMBERS: [&str; 8] =
    ["0", "-1", "18446744073709551615", "99999999999999999999", "1e308", "nan", "-", "4294967296"];

fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(8) {
            0 => out.truncate(at),
            1 => {
                if let Some(b) = out.get_mut(at) {
                    *b = rng.below(256) as u8;
                }
            }
            2 => out.splice(at..at, NUMBERS[rng.below(NUMBERS.len())].bytes()).for_each(drop),
            3 => {
                // Delete or duplicate a line.
                let start = out[..at].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
                let end = out[at..].iter().position(|&b| b == b'\n').map_or(out.len(), |p| at + p + 1);
                let line = out[start..end].to_vec();
                if rng.below(2) == 0 {
                    out.drain(start..end);
                } else {
                    out.splice(start..start, line).for_each(drop);
                }
            }
            4 => {
                // Replace a digit run with a huge or odd number.
                if let Some(p) = out[at.min(out.len())..].iter().position(u8::is_ascii_digit) {
                    let from = at + p;
                    let to = out[from..].iter().position(|b| !b.is_ascii_digit()).map_or(out.len(), |q| from + q);
                    out.splice(from..to, NUMBERS[rng.below(NUMBERS.len())].bytes()).for_each(drop);
                }
            }
            5 => {
                out.splice(at..at, (0..rng.below(64)).map(|_| rng.below(256) as u8).collect::<Vec<_>>()).for_each(drop)
            }
            6 => out
                .splice(at..at, [b' ', b'\t', b'\r', b'\n', b'-', b'|', b'#'][rng.below(7)..][..1].to_vec())
                .for_each(drop),
            _ => out = (0..rng.below(512)).map(|_| rng.below(256) as u8).collect(),
        }
    }
    out
}

/// Parses `files`; builds and checks the run of every `full_every`-th input that parses
/// (building the HDR histograms dominates the time of a debug build).
fn check(format: ImportFormat, files: &[SourceFile], tried: usize, full_every: usize) {
    let options = ImportOptions::default();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let parsed = rtlab_formats::import::parse_source(format, files, &options);
        match parsed {
            Ok(parsed) if tried.is_multiple_of(full_every) => {
                rtlab_formats::import::build_run(format, files, parsed, &options)
                    .map(Some)
                    .map_err(|why| rtlab_formats::import::ImportError::whole(&files[0].path, why))
            }
            Ok(_) => Ok(None),
            Err(error) => Err(error),
        }
    }));
    match outcome {
        Ok(Ok(Some(run))) => {
            run.check().unwrap_or_else(|e| panic!("an import of input {tried} fails run.check(): {e}"))
        }
        Ok(Ok(None)) => {}
        Ok(Err(error)) => {
            assert!(files.iter().any(|f| f.path == error.file), "the error names no given file: {error}");
            assert!(!error.reason.is_empty());
        }
        Err(_) => {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-crashes");
            std::fs::create_dir_all(&dir).unwrap();
            for (i, f) in files.iter().enumerate() {
                std::fs::write(dir.join(format!("{}-{tried}-{i}", format.name())), &f.bytes).unwrap();
            }
            panic!("{} panicked on input {tried}, saved in {}", format.name(), dir.display());
        }
    }
}

/// Returns the number of inputs tried.
pub fn run(format: ImportFormat, seeds: &[Vec<SourceFile>]) -> usize {
    let seconds: u64 = std::env::var("RTLAB_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let seed: u64 = std::env::var("RTLAB_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let mut rng = Rng(seed | 1);
    // A long run builds every run; the test suite's short one every 8th.
    let full_every = if seconds > 0 { 1 } else { 8 };
    let mut tried = 0;
    // Every truncation at a line end, and at some byte offsets, of every file.
    for files in seeds {
        for (index, file) in files.iter().enumerate() {
            let cuts: Vec<usize> = file
                .bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1)
                .chain((0..16).map(|_| rng.below(file.bytes.len() + 1)))
                .collect();
            for cut in cuts {
                let mut damaged = files.clone();
                damaged[index].bytes.truncate(cut);
                check(format, &damaged, tried, full_every);
                tried += 1;
            }
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let budget = if seconds == 0 { 1000 } else { usize::MAX };
    let mut round = 0;
    while round < budget && (seconds == 0 || std::time::Instant::now() < deadline) {
        let mut files = seeds[rng.below(seeds.len())].clone();
        let index = rng.below(files.len());
        files[index].bytes = mutate(&mut rng, &files[index].bytes);
        check(format, &files, tried, full_every);
        tried += 1;
        round += 1;
    }
    if seconds > 0 {
        eprintln!("fuzzed {} for {seconds} s: {tried} inputs, no panic", format.name());
    }
    tried
}
