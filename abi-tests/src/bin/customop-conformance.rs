//! `customop-conformance ARCHIVE.a [--json]`: checks a device archive's symbol table
//! (ours or the vendor's libneuroncustomop.a) and exits non-zero on any FAIL.

use std::path::Path;
use std::process::ExitCode;

use abi_tests::{conformance, customop_conformance};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let paths: Vec<&String> = args.iter().filter(|a| *a != "--json").collect();
    let [path] = paths.as_slice() else {
        eprintln!("usage: customop-conformance ARCHIVE.a [--json]");
        return ExitCode::from(2);
    };
    let rows = customop_conformance::run(Path::new(path));
    conformance::report(&rows, json)
}
