//! The tables of a report, in the papers' shapes, as data: every format (terminal, Markdown,
//! CSV, HTML) renders the same [`Table`]s.

use serde::Serialize;

/// One table: a header row and rows of cells, already formatted for people (µs with one
/// decimal, counts with thousands separators); `csv_rows` keeps raw numbers for spreadsheets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Stable identifier, used for anchors and CSV file names: "latency-percentiles".
    pub id: String,
    pub title: String,
    /// Where the shape comes from: "Akamina et al., Tables 4 and 6"; None for rtlab's own.
    pub source: Option<String>,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The same rows with unformatted values (ns as integers, no separators) for CSV.
    pub csv_rows: Vec<Vec<String>>,
    /// Sentences under the table (how to read it, caveats).
    pub notes: Vec<String>,
}

/// Every table of a report of `set`, in reading order (helper R1 fills this in).
pub fn report_tables(set: &crate::report_set::ReportSet) -> Result<Vec<Table>, crate::ReportError> {
    let _ = set;
    Ok(Vec::new())
}
