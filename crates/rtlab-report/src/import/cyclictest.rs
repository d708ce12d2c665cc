//! cyclictest files -> [`ParsedSource`] (stub: filled in by the importer's author).

use super::{ImportError, ImportOptions, ParsedSource, SourceFile};

pub fn parse(files: &[SourceFile], _options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    Err(ImportError::whole(
        files.first().map_or("cyclictest", |f| f.path.as_str()),
        "the cyclictest importer is not written yet",
    ))
}
