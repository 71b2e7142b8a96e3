//! `nrt-pool`: run GPSIMD microcode and (to come) custom ops without hardware.
//!
//!   nrt-pool bringup [--provider PATH]   libnrt's microcode sequence on the simulated device

use std::path::PathBuf;
use std::process::ExitCode;

use nrt_pool_shim::bringup;

const USAGE: &str = "usage: nrt-pool bringup [--provider PATH/libnrtucode_extisa.so]";

/// The provider beside this executable (target/<profile>/), as `make demo` builds it.
fn default_provider() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("libnrtucode_extisa.so")))
        .unwrap_or_else(|| PathBuf::from("libnrtucode_extisa.so"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["bringup"] => bringup_cmd(default_provider()),
        ["bringup", "--provider", path] => bringup_cmd(PathBuf::from(path)),
        ["-h"] | ["--help"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn bringup_cmd(provider: PathBuf) -> ExitCode {
    match bringup::run(&provider) {
        Ok(report) => {
            print!("{report}");
            println!(
                "ok: {} provider log lines, {} load / {} unload record(s), {} device memhandles left",
                report.provider_log_lines,
                report.load_records.len(),
                report.unload_records.len(),
                report.live_memhandles_after
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nrt-pool bringup: {e}");
            ExitCode::FAILURE
        }
    }
}
