//! `customop-conformance ARCHIVE.a [--json]`: checks a device archive's symbol table
//! (ours or the vendor's libneuroncustomop.a) and exits non-zero on any FAIL.

use std::path::PathBuf;
use std::process::ExitCode;

use abi_tests::{conformance, customop_conformance};
use clap::Parser;

/// Checks a device archive (ours or the vendor's libneuroncustomop.a): its members, the
/// symbols it defines and the ones it needs. Exits 1 on any FAIL.
#[derive(Parser)]
#[command(name = "customop-conformance", version)]
struct Args {
    /// The archive to check
    #[arg(value_name = "ARCHIVE.a")]
    archive: PathBuf,
    /// One JSON document of rows on stdout instead of the table
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rows = customop_conformance::run(&args.archive);
    conformance::report(&rows, args.json)
}
