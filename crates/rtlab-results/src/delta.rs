//! A stored δ calibration (`delta.json`): the remote probe's δ̄ and its spread, measured once
//! and held, as Regnier et al. measured δ on E_T once and subtracted it from every
//! measurement. `rtlab run -P remote` writes one whenever it calibrates; `--delta FILE` of
//! `run` and `suite` reads it back (docs/probes/remote.md, "δ, the paper's way").

use crate::ResultsError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The schema tag of delta.json.
pub const DELTA_SCHEMA: &str = "rtlab.delta/1";
/// The file's name in a run's (or a suite's) directory.
pub const DELTA_FILE: &str = "delta.json";

/// One calibration of δ against an idle station: half of the echo's round trip t2 − t1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredDelta {
    pub schema: String,
    /// δ̄ in whole ns (what is subtracted), and δ's spread: SD, min and max (halves of
    /// t2 − t1's).
    pub mean_ns: i64,
    pub sd_ns: f64,
    pub min_ns: i64,
    pub max_ns: i64,
    /// Calibration stimuli behind it, and their rate.
    pub samples: u64,
    pub rate_hz: f64,
    /// The station it was measured against (HOST:PORT) and when (local time, RFC 3339).
    pub station: String,
    pub calibrated_at: String,
    /// The measuring host: its name and kernel release (δ is this host's own latency).
    pub hostname: String,
    pub kernel: String,
    /// Where it was read from; absent in the file itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_from: Option<String>,
}

impl StoredDelta {
    /// Reads `path`: a delta.json, or a directory holding one (a run's or a suite's), and
    /// checks it.
    pub fn read(path: &Path) -> Result<StoredDelta, ResultsError> {
        let file: PathBuf = if path.is_dir() { path.join(DELTA_FILE) } else { path.to_path_buf() };
        let shown = file.display().to_string();
        let text = std::fs::read_to_string(&file).map_err(|source| ResultsError::Io { path: shown.clone(), source })?;
        let invalid = |reason: String| ResultsError::Invalid { path: shown.clone(), reason };
        let mut delta: StoredDelta =
            serde_json::from_str(&text).map_err(|e| invalid(format!("not a δ calibration ({DELTA_FILE}): {e}")))?;
        delta.check().map_err(invalid)?;
        delta.read_from = Some(shown.clone());
        Ok(delta)
    }

    /// What a calibration must satisfy to be used.
    pub fn check(&self) -> Result<(), String> {
        if self.schema != DELTA_SCHEMA {
            return Err(format!("schema {:?}, expected {DELTA_SCHEMA:?}", self.schema));
        }
        if self.samples < 10 {
            return Err(format!("{} calibration stimuli, fewer than 10", self.samples));
        }
        if !(self.min_ns <= self.mean_ns && self.mean_ns <= self.max_ns) {
            return Err(format!("mean {} ns outside its range [{}, {}] ns", self.mean_ns, self.min_ns, self.max_ns));
        }
        if self.mean_ns < 0 || self.mean_ns > 10_000_000 {
            return Err(format!("mean {} ns outside 0 to 10 ms", self.mean_ns));
        }
        if !(self.sd_ns.is_finite() && self.sd_ns >= 0.0) {
            return Err(format!("SD {} is not a non-negative number", self.sd_ns));
        }
        if !(self.rate_hz.is_finite() && self.rate_hz > 0.0) {
            return Err(format!("rate {} Hz is not positive", self.rate_hz));
        }
        Ok(())
    }

    /// Writes it as `dir/delta.json` (without `read_from`).
    pub fn write(&self, dir: &Path) -> Result<(), ResultsError> {
        let path = dir.join(DELTA_FILE);
        let stored = StoredDelta { read_from: None, ..self.clone() };
        let text = serde_json::to_string_pretty(&stored).expect("a δ calibration serializes") + "\n";
        std::fs::write(&path, text).map_err(|source| ResultsError::Io { path: path.display().to_string(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StoredDelta {
        StoredDelta {
            schema: DELTA_SCHEMA.into(),
            mean_ns: 9_000,
            sd_ns: 100.0,
            min_ns: 8_700,
            max_ns: 9_400,
            samples: 80,
            rate_hz: 20.0,
            station: "192.0.2.2:7450".into(),
            calibrated_at: "2026-11-29T03:00:00+00:00".into(),
            hostname: "et".into(),
            kernel: "6.1.0-56-rt-amd64".into(),
            read_from: None,
        }
    }

    #[test]
    fn a_calibration_round_trips_through_its_file_and_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        sample().write(dir.path()).unwrap();
        let from_dir = StoredDelta::read(dir.path()).unwrap();
        let from_file = StoredDelta::read(&dir.path().join(DELTA_FILE)).unwrap();
        assert_eq!(StoredDelta { read_from: None, ..from_dir.clone() }, sample());
        assert_eq!(from_file.read_from.as_deref(), Some(dir.path().join(DELTA_FILE).to_str().unwrap()));
        assert!(!std::fs::read_to_string(dir.path().join(DELTA_FILE)).unwrap().contains("read_from"));
    }

    #[test]
    fn bad_calibrations_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        type Spoil = fn(&mut StoredDelta);
        let cases: [(&str, Spoil); 5] = [
            ("schema", |d| d.schema = "rtlab.run/1".into()),
            ("fewer than 10", |d| d.samples = 3),
            ("outside its range", |d| d.min_ns = 9_500),
            ("SD", |d| d.sd_ns = f64::NAN),
            ("rate", |d| d.rate_hz = 0.0),
        ];
        for (why, change) in cases {
            let mut d = sample();
            change(&mut d);
            // Written as JSON by hand: write() itself is not the check.
            let mut value = serde_json::to_value(&d).unwrap();
            if d.sd_ns.is_nan() {
                value["sd_ns"] = serde_json::json!(-1.0);
            }
            std::fs::write(dir.path().join(DELTA_FILE), value.to_string()).unwrap();
            let e = StoredDelta::read(dir.path()).unwrap_err().to_string();
            assert!(e.contains(why), "{why}: {e}");
        }
        std::fs::write(dir.path().join(DELTA_FILE), "{\"schema\": 1").unwrap();
        assert!(StoredDelta::read(dir.path()).unwrap_err().to_string().contains("not a δ calibration"));
        let missing = StoredDelta::read(&dir.path().join("nothing.json")).unwrap_err().to_string();
        assert!(missing.contains("nothing.json"), "{missing}");
    }
}
