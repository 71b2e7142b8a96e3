//! `nrt-pool-ffi-sequence SHIM LIBRARY < BYTES`: runs the launch-FFI call sequence the bytes
//! describe in this process, through the shim library at SHIM with op library LIBRARY
//! (`nrt_pool_shim::sequence`; the FFI fuzz target starts one per input). Exits 0 when
//! every call kept the header's contract, 3 (saying why) when one did not.

use std::io::Read as _;
use std::path::PathBuf;

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [shim, library] = args.as_slice() else {
        eprintln!("usage: nrt-pool-ffi-sequence SHIM LIBRARY < BYTES");
        std::process::exit(2);
    };
    let mut data = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut data) {
        eprintln!("stdin: {e}");
        std::process::exit(2);
    }
    if let Err(e) = nrt_pool_shim::sequence::run_in_this_process(&data, shim, library) {
        eprintln!("{e}");
        std::process::exit(3);
    }
}
