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

use std::process::ExitCode;

use nrtucode_tool::{extract, inspect, prelink, ToolError, USAGE};

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
