//! jitterdebugger files -> [`ParsedSource`] (stub: filled in by the importer's author).

use super::{ImportError, ImportOptions, ParsedSource, SourceFile};

pub fn parse(files: &[SourceFile], _options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    Err(ImportError::whole(
        files.first().map_or("jitterdebugger", |f| f.path.as_str()),
        "the jitterdebugger importer is not written yet",
    ))
}
