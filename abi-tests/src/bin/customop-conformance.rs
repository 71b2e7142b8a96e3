//! `customop-conformance ARCHIVE.a [--json] [--link LD_SCRIPT]`: checks a device archive's
//! symbol table (ours or the vendor's libneuroncustomop.a), and with --link that it links
//! into a Pool core image; exits non-zero on any FAIL.

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
    /// Also link the whole archive into a Pool core image with this GNU ld script
    /// (customop-device/xtensa/pool-core.ld) and check nothing is left undefined
    #[arg(long, value_name = "LD_SCRIPT")]
    link: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut rows = customop_conformance::run(&args.archive);
    if let Some(script) = &args.link {
        rows.push(customop_conformance::link_row(&args.archive, script));
    }
    conformance::report(&rows, args.json)
}
