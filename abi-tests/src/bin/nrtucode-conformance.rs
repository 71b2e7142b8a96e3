//! `nrtucode-conformance PATH.so [--json]`: checks a libnrtucode_extisa.so (ours or a
//! vendor release) against the documented contract, check by check, and exits non-zero on
//! any FAIL. Live checks run in child processes of this program.

use std::path::PathBuf;
use std::process::ExitCode;

use abi_tests::conformance;
use clap::Parser;

/// Checks a libnrtucode_extisa.so (ours or a vendor release) against the documented
/// contract: exports, handle layouts, API level, claim handshake, prelinker and push
/// records. Exits 1 on any FAIL; UNSUPPORTED checks are listed, never hidden.
#[derive(Parser)]
#[command(name = "nrtucode-conformance", version)]
struct Args {
    /// The provider library to check
    #[arg(value_name = "PATH/libnrtucode_extisa.so")]
    library: PathBuf,
    /// One JSON document of rows on stdout instead of the table
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    // The live checks re-enter this program as children; they are not command lines.
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if conformance::child_main(&raw) {
        return ExitCode::SUCCESS;
    }
    let args = Args::parse();
    if !args.library.exists() {
        eprintln!(
            "nrtucode-conformance: {} does not exist",
            args.library.display()
        );
        return ExitCode::from(2);
    }
    let exe = std::env::current_exe().expect("own path");
    let rows = conformance::run(&args.library, &exe);
    conformance::report(&rows, args.json)
}
