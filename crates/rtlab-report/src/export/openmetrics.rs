//! openmetrics export (stub: filled in by its author).

use crate::report_set::{ReportExporter, ReportSet};
use crate::ReportError;

/// Stub.
#[derive(Debug, Clone, Default)]
pub struct OpenMetrics;

impl ReportExporter for OpenMetrics {
    fn render(&self, _set: &ReportSet) -> Result<String, ReportError> {
        Err(ReportError::Encode("OpenMetrics is not written yet".into()))
    }
}
