//! `nrt-pool`: run GPSIMD microcode and (to come) custom ops without hardware.
//!
//!   nrt-pool bringup [--provider PATH] [--cayman-library ELF]
//!       libnrt's microcode sequence on the simulated device; with an Xtensa split-load
//!       library, also stages it on a Cayman Q7 POOL core through ll_create

use std::path::PathBuf;
use std::process::ExitCode;

use nrt_pool_shim::bringup;

const USAGE: &str =
    "usage: nrt-pool bringup [--provider PATH/libnrtucode_extisa.so] [--cayman-library LIB.so]";

/// The provider beside this executable (target/<profile>/), as `make demo` builds it.
fn default_provider() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("libnrtucode_extisa.so")))
        .unwrap_or_else(|| PathBuf::from("libnrtucode_extisa.so"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bringup") => match bringup_options(&args[1..]) {
            Some(opts) => bringup_cmd(&opts),
            None => usage(),
        },
        Some("-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn bringup_options(args: &[String]) -> Option<bringup::Options> {
    let mut opts = bringup::Options {
        provider: default_provider(),
        cayman_library: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--provider" => opts.provider = it.next()?.into(),
            "--cayman-library" => opts.cayman_library = Some(it.next()?.into()),
            _ => return None,
        }
    }
    Some(opts)
}

fn bringup_cmd(opts: &bringup::Options) -> ExitCode {
    match bringup::run(opts) {
        Ok(report) => {
            print!("{report}");
            println!(
                "ok: {} provider log lines, {} load / {} unload record(s), {} staged Cayman library, {} device memhandles left",
                report.provider_log_lines,
                report.load_records.len() + report.cayman_load_records.len(),
                report.unload_records.len() + report.cayman_unload_records.len(),
                report.cayman_load_records.len(),
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
