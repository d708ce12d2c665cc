//! report.html: a self-contained page (inline SVG, no network) with the verdict and the
//! environment warnings first, then the figures and tables.

use crate::report_set::{ReportExporter, ReportSet};
use crate::ReportError;

/// The HTML report (helper R2 fills this in).
#[derive(Debug, Default)]
pub struct HtmlReport;

impl ReportExporter for HtmlReport {
    fn render(&self, set: &ReportSet) -> Result<String, ReportError> {
        let _ = set;
        Ok("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>rtlab report</title></head><body></body></html>\n"
            .into())
    }
}
