//! hdr_log export (stub: filled in by its author).

use crate::report_set::{ReportExporter, ReportSet};
use crate::ReportError;

/// Stub.
#[derive(Debug, Clone, Default)]
pub struct HdrLog {
    pub selection: super::Selection,
}

impl ReportExporter for HdrLog {
    fn render(&self, _set: &ReportSet) -> Result<String, ReportError> {
        Err(ReportError::Encode("HdrLog is not written yet".into()))
    }
}
