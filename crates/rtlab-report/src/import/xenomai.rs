//! xenomai files -> [`ParsedSource`] (stub: filled in by the importer's author).

use super::{ImportError, ImportOptions, ParsedSource, SourceFile};

pub fn parse(files: &[SourceFile], _options: &ImportOptions) -> Result<ParsedSource, ImportError> {
    Err(ImportError::whole(
        files.first().map_or("xenomai", |f| f.path.as_str()),
        "the xenomai importer is not written yet",
    ))
}
