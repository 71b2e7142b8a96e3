//! The device runtime on the Xtensa ISA: customop-device/selftest is built for the windowed
//! ABI (the archive's, through GNU as, with the open start code and window vectors; core
//! de212) and for call0, linked with the Debian Xtensa binutils and run under
//! qemu-system-xtensa, exercising the allocators, translation, descriptors, marshalling,
//! memory primitives and the printf formatter. It reports through semihosting: exit status
//! 42 when every check held, else the number of the first failing check.

use std::path::Path;
use std::process::Command;

/// make test-full (CI) only: two builds of the self-test for Xtensa take about a minute (D130);
/// make test runs the same runtime on QEMU cores through every op it tests.
mod full_tier {
    use super::*;

    #[test]
    fn self_test_image_passes_under_qemu() {
        let qemu = std::env::var_os("NRT_POOL_QEMU").map_or_else(
            || {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../target/customop/xtensa-q7-none-elf/qemu-system-xtensa")
            },
            std::path::PathBuf::from,
        );
        for tool in [
            qemu.as_os_str(),
            "xtensa-lx106-elf-as".as_ref(),
            "xtensa-lx106-elf-ld".as_ref(),
        ] {
            let ok = Command::new(tool)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(
            ok,
            "{} not found: make customop-archives builds QEMU, make tools installs binutils-xtensa-lx106",
            tool.to_string_lossy()
        );
        }
        for script in ["run-windowed.sh", "run.sh"] {
            let dir = tempfile::tempdir().unwrap();
            let script = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../customop-device/selftest")
                .join(script);
            let out = Command::new(&script).arg(dir.path()).output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                stdout.lines().any(|l| l == "exit status 42"),
                "{}: self-test did not pass:\n{stdout}\n{}",
                script.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
