//! `nrtucode-tool`: the microcode images, outside a runtime.
//!
//!   nrtucode-tool inspect FILE                      segments, dynamic entries, relocations,
//!                                                   kernel_info_table of an ELF or UCPL image
//!   nrtucode-tool prelink IMAGE [--coretype N] [-o OUT]
//!                                                   the UCPL image ll_create would stage
//!   nrtucode-tool extract VENDOR_FILE -o DIR [--allow-unverified]
//!                                                   the images of a vendor provider (ext-ISA
//!                                                   libraries, JSON, base memory images,
//!                                                   hwdecode tables) as an image directory

mod extract;
mod inspect;
mod prelink;
mod vendor_tables;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage:
  nrtucode-tool inspect FILE
  nrtucode-tool prelink IMAGE [--coretype 13|21|29] [-o OUT]
  nrtucode-tool extract VENDOR_FILE -o DIR [--allow-unverified]";

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Invalid(String),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("inspect") => inspect::run(&args[1..]),
        Some("prelink") => prelink::run(&args[1..]),
        Some("extract") => extract::run(&args[1..]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(ToolError::Usage(USAGE.into())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(ToolError::Usage(u)) => {
            // The full usage text stands alone; a specific complaint gets the prefix.
            if u == USAGE {
                eprintln!("{u}");
            } else {
                eprintln!("nrtucode-tool: {u}\n{USAGE}");
            }
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("nrtucode-tool: {e}");
            ExitCode::FAILURE
        }
    }
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
