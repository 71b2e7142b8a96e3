//! `xtensa-windowed-as IN.s OUT.o`: windowed-ABI Xtensa assembly through the lx106 GNU
//! assembler ([`nrt_pool_build::assemble_windowed`]), for the scripts that build the device
//! archive and the self-test (customop-device/xtensa/windowed-as.sh runs it).

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let [asm, obj] = args.as_slice() else {
        eprintln!("usage: xtensa-windowed-as IN.s OUT.o");
        return ExitCode::from(2);
    };
    match nrt_pool_build::assemble_windowed(
        &nrt_pool_build::XtensaTools::on_path(),
        Path::new(asm),
        Path::new(obj),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtensa-windowed-as: {e}");
            ExitCode::FAILURE
        }
    }
}
