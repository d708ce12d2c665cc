//! pWCET of a metric in a run: the measurements' block maxima and tail handed to
//! [`rtlab_analysis::evt`], for the verdict (`pwcet(P)` requirements), `rtlab check`
//! and the report's tail section.

use crate::model::Measurement;
use crate::ReportError;
use rtlab_analysis::evt::{PwcetAnalysis, PwcetConfig, TailInput};

/// The tail input of one metric over several measurements (CPUs) of one scenario.
pub fn tail_input(measurements: &[&Measurement]) -> Result<TailInput, ReportError> {
    let _ = measurements;
    todo!("issue 8: pwcet in reports")
}

/// The tail analysis of one metric over several measurements (CPUs) of one scenario.
pub fn analyse(measurements: &[&Measurement], config: &PwcetConfig) -> Result<PwcetAnalysis, ReportError> {
    let input = tail_input(measurements)?;
    Ok(rtlab_analysis::evt::analyse(&input, config)?)
}
