//! Raw sample files to CSV: one row per sample, columns named with their units.
//!
//! The first column is the load scenario the sample was measured in: a run measures each
//! scenario in turn (`idle`, then `mixed` by default) with the same probes on the same
//! CPUs, so without it the unloaded and loaded samples of a CPU could not be told apart.
//! It is there for a single-scenario run too, so that the columns do not depend on the run.

use crate::FormatError;
use rtlab_results::raw::RawReader;
use rtlab_results::run::RunResult;
use std::io::Write;
use std::path::Path;

pub const HEADER: &str = "scenario,probe,metric,cpu,expected_ns,value_ns,overrun";

/// Writes every raw sample of `run` (stored under `dir`) as CSV; returns the rows written.
/// Fails when the run has no raw samples, naming the option that records them.
pub fn export_raw_csv(run: &RunResult, dir: &Path, out: &mut dyn Write) -> Result<u64, FormatError> {
    let with_raw: Vec<_> = run.measurements.iter().filter(|m| m.raw_file.is_some()).collect();
    if with_raw.is_empty() {
        return Err(FormatError::Invalid {
            path: dir.display().to_string(),
            reason: "this run has no raw samples (record them with `rtlab run --raw`)".into(),
        });
    }
    let io = |source| FormatError::Io { path: "<output>".into(), source };
    writeln!(out, "{HEADER}").map_err(io)?;
    let mut rows = 0u64;
    for m in with_raw {
        // The text columns of the measurement, quoted once for all its rows.
        let prefix = format!("{},{},{}", field(&m.scenario), field(&m.probe), field(&m.metric));
        let file = dir.join(m.raw_file.as_deref().unwrap_or_default());
        let mut reader = RawReader::open(&file)?;
        let mut in_file = 0u64;
        while let Some(s) = reader.next_sample()? {
            writeln!(out, "{prefix},{},{},{},{}", s.cpu, s.expected_ns, s.value_ns, u8::from(s.overran()))
                .map_err(io)?;
            in_file += 1;
        }
        if let Some(expected) = m.raw_samples {
            if expected != in_file {
                return Err(FormatError::Invalid {
                    path: file.display().to_string(),
                    reason: format!("holds {in_file} samples but run.json records {expected}"),
                });
            }
        }
        rows += in_file;
    }
    out.flush().map_err(io)?;
    Ok(rows)
}

/// A text field as RFC 4180 wants it: quoted, with quotes doubled, when it holds a comma, a
/// quote or a line break (a scenario named in an experiment file or a hand-edited run.json
/// may).
fn field(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\"")).into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_fields_are_quoted_only_when_they_must_be() {
        assert_eq!(field("cpu:threads=1+proc-read"), "cpu:threads=1+proc-read");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\"\n"), "\"say \"\"hi\"\"\n\"");
    }
}
