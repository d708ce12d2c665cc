//! Every table of a report in one CSV file, one section per table, so that a spreadsheet
//! shows each table as a block of its own:
//!
//! ```text
//! table,percentiles-timer.latency,"Timer latency (timer.latency), all CPUs together (µs)","raw values: times in ns, …"
//! statistic,idle,loaded
//! samples,6000,6000
//! ...
//! (empty line)
//! ```
//!
//! The first line of a section is `table`, the table's id, its title and [`RAW_UNITS`]; then
//! the header (with "(ns)" where people read "(µs)") and the rows with raw values (times in
//! integer ns, counts without separators, shares as fractions). RFC 4180 quoting; UTF-8.

use crate::tables::report_tables;
use crate::ReportError;
use rtlab_results::set::{ReportExporter, ReportSet};

#[derive(Debug, Default)]
pub struct CsvReport;

/// Fourth field of a section's first line: the titles say how people read the figures
/// (µs), the CSV holds them raw.
pub const RAW_UNITS: &str =
    "raw values: times in ns, durations and intervals in s, rates per second, shares as fractions";

/// One CSV field, quoted when it must be.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) || text.starts_with(' ') || text.ends_with(' ') {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn record(fields: &[String]) -> String {
    let mut line = fields.iter().map(|f| field(f)).collect::<Vec<_>>().join(",");
    line.push_str("\r\n");
    line
}

impl ReportExporter for CsvReport {
    type Error = ReportError;

    fn render(&self, set: &ReportSet) -> Result<String, ReportError> {
        let mut out = String::new();
        for (i, table) in report_tables(set)?.iter().enumerate() {
            if i > 0 {
                out.push_str("\r\n");
            }
            out.push_str(&record(&["table".into(), table.id.clone(), table.title.clone(), RAW_UNITS.into()]));
            // The header names the unit of the raw values.
            let header: Vec<String> = table.columns.iter().map(|c| c.replace("(µs)", "(ns)")).collect();
            out.push_str(&record(&header));
            for row in &table.csv_rows {
                out.push_str(&record(row));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field(" padded"), "\" padded\"");
    }
}
