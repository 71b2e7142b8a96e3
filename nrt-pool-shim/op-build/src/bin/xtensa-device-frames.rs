//! `xtensa-device-frames OUT IN.s...`: the runtime table host builds judge calls into the
//! device runtime by (D118): how deep a call of each global function of the Xtensa
//! archive's assembly reaches on a Pool core's stack (customop-device/xtensa/build-archive.sh
//! runs it).

use std::path::PathBuf;
use std::process::ExitCode;

use nrt_pool_build::device_frames::DeviceFrames;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [out, inputs @ ..] = args.as_slice() else {
        eprintln!("usage: xtensa-device-frames OUT IN.s...");
        return ExitCode::from(2);
    };
    let mut all = DeviceFrames::default();
    for path in inputs {
        match std::fs::read_to_string(path) {
            Ok(text) => all.merge(DeviceFrames::from_assembly(&text)),
            Err(e) => {
                eprintln!("xtensa-device-frames: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    // Written beside, then renamed: never half a table.
    let mut partial = out.clone().into_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    match std::fs::write(&partial, all.to_runtime_text())
        .and_then(|()| std::fs::rename(&partial, out))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            eprintln!("xtensa-device-frames: {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
