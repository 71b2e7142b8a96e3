//! `nrtucode-conformance PATH.so [--json]`: checks a libnrtucode_extisa.so (ours or a
//! vendor release) against the documented contract, check by check, and exits non-zero on
//! any FAIL. Live checks run in child processes of this program.

use std::path::PathBuf;
use std::process::ExitCode;

use abi_tests::conformance;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if conformance::child_main(&args) {
        return ExitCode::SUCCESS;
    }
    let json = args.iter().any(|a| a == "--json");
    let paths: Vec<&String> = args.iter().filter(|a| *a != "--json").collect();
    let [path] = paths.as_slice() else {
        eprintln!("usage: nrtucode-conformance PATH/libnrtucode_extisa.so [--json]");
        return ExitCode::from(2);
    };
    let lib = PathBuf::from(path);
    if !lib.exists() {
        eprintln!("nrtucode-conformance: {} does not exist", lib.display());
        return ExitCode::from(2);
    }
    let exe = std::env::current_exe().expect("own path");
    let rows = conformance::run(&lib, &exe);
    conformance::report(&rows, json)
}
