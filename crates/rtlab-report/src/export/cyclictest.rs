//! cyclictest export (stub: filled in by its author).

use crate::report_set::{ReportExporter, ReportSet};
use crate::ReportError;

/// Stub.
#[derive(Debug, Clone, Default)]
pub struct CyclictestHist {
    pub selection: super::Selection,
}

impl ReportExporter for CyclictestHist {
    fn render(&self, _set: &ReportSet) -> Result<String, ReportError> {
        Err(ReportError::Encode("CyclictestHist is not written yet".into()))
    }
}

/// Stub.
#[derive(Debug, Clone, Default)]
pub struct CyclictestJson {
    pub selection: super::Selection,
}

impl ReportExporter for CyclictestJson {
    fn render(&self, _set: &ReportSet) -> Result<String, ReportError> {
        Err(ReportError::Encode("CyclictestJson is not written yet".into()))
    }
}
