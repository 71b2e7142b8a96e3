//! `nrtucode-tool`: the provider's microcode images outside a runtime (`inspect`, `prelink`,
//! `extract`), as a library for the binary and the fuzz targets.

pub mod extract;
pub mod inspect;
pub mod prelink;
mod vendor_tables;

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Invalid(String),
}

/// Prints, loudly, what the vendor's prelinker would stage wrongly in this library.
pub fn warn_hazards(path: &str, image: &[u8]) {
    for h in nrtucode_extisa::prelink::hazards(image, &nrtucode_extisa::prelink::CAYMAN_GEOMETRY) {
        eprintln!("nrtucode-tool: WARNING: {path}: {h}");
    }
}

/// Reads a whole input file.
pub fn read(path: &str) -> Result<Vec<u8>, ToolError> {
    std::fs::read(path).map_err(|e| ToolError::Io(path.into(), e))
}

/// Writes an output file atomically: a temporary sibling, then a rename, so a failed run
/// never leaves a half-written file.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<(), ToolError> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, bytes).map_err(|e| ToolError::Io(tmp.clone(), e))?;
    std::fs::rename(&tmp, path).map_err(|e| ToolError::Io(path.into(), e))
}
