//! junit export (stub: filled in by its author).

use crate::report_set::{ReportExporter, ReportSet};
use crate::ReportError;

/// Stub.
#[derive(Debug, Clone, Default)]
pub struct JunitReport;

impl ReportExporter for JunitReport {
    fn render(&self, _set: &ReportSet) -> Result<String, ReportError> {
        Err(ReportError::Encode("JunitReport is not written yet".into()))
    }
}
