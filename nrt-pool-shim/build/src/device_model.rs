//! Host op libraries in the device's data model (D97): op code built by the host's GCC for
//! i386 with the device's type sizes and alignment (32-bit `long`, `size_t` and pointers,
//! 8-byte aligned `long long` and `double` members, 8-byte `long double`, 2-byte `wchar_t`,
//! unsigned plain `char`), against the device's C headers and libc++ configuration, linked
//! with the device runtime and C library built for i386 (no glibc, no libstdc++). Its
//! cores run in 32-bit core processes (the engine's core runner).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{alignment_plugin, io, BuildError, CompileFlags, DEVICE_RULES_ON_HOST};

/// Which data model a host op library is built in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataModel {
    /// The device's (i386 with the device's sizes, the device's libraries): what host
    /// cores compute is what the device computes for the same source (D97).
    #[default]
    Device,
    /// The host's (x86-64 LP64 with glibc and libstdc++): 64-bit `long`, signed `char`
    /// is not (D92), the host's C++ library; results can differ from the device's.
    Host,
}

impl DataModel {
    /// Its name on command lines and in Python (`device`, `host`).
    pub fn name(self) -> &'static str {
        match self {
            DataModel::Device => "device",
            DataModel::Host => "host",
        }
    }

    pub fn from_name(name: &str) -> Option<DataModel> {
        [DataModel::Device, DataModel::Host]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// The type sizes, alignment and ABI of a Pool core on i386 (the Xtensa GCC's predefined
/// model: `xtensa-lx106-elf-gcc -dM -E`), SSE arithmetic (IEEE single and double, no x87
/// excess precision), and no host system headers or platform macros: the device's C
/// library headers only. `customop-device/i386/build-archive.sh` uses the same words.
pub const DEVICE_MODEL_FLAGS: &[&str] = &[
    "-m32",
    "-msse2",
    "-mfpmath=sse",
    "-malign-double",
    "-mlong-double-64",
    "-fshort-wchar",
    "-funsigned-char",
    "-ffreestanding",
    "-nostdinc",
    "-U__linux__",
    "-U__linux",
    "-Ulinux",
    "-U__gnu_linux__",
    "-U__unix__",
    "-U__unix",
    "-Uunix",
];

/// GCC's own header folder for i386 (stddef.h, stdarg.h, stdint.h, intrinsics), or what to
/// install when the compiler cannot build for i386.
pub fn gcc_include(cxx: &str) -> Result<PathBuf, BuildError> {
    let ask = |what: &str| {
        Command::new(cxx)
            .args(["-m32", what])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
    };
    // Without the multilib packages g++ answers with the bare names: nothing is there.
    let libgcc = ask("-print-libgcc-file-name");
    let include = ask("-print-file-name=include");
    match (libgcc, include) {
        (Some(l), Some(i)) if l.is_file() && i.join("stddef.h").is_file() => Ok(i),
        _ => Err(BuildError::NoDeviceModelCompiler(cxx.to_string())),
    }
}

/// The compile of op source `src` for host cores in the device's data model: the device
/// build's language rules (no exceptions or RTTI, libc++ configured for a core) with the
/// host build's instrumentation (line tables, stack-clash probes, the device's rules where
/// a flag can say them: D92, D95) and the device compiler's view of alignment (D105).
pub(crate) fn cxx(
    cxx: &str,
    include: &Path,
    libcxx: &Path,
    gcc_include: &Path,
    flags: &CompileFlags,
    src: &Path,
    obj: &Path,
) -> Command {
    let mut c = Command::new(cxx);
    c.args(DEVICE_MODEL_FLAGS);
    c.args(crate::HOST_CODEGEN);
    c.args([
        // A main() in an op source is a plain function on a core.
        "-Wno-main",
        // Fault reports name the line that failed: GCC would merge calls to functions that
        // do not return (the runtime's fatal checks), and two checks sharing one call
        // would be reported at the other's line.
        "-fno-crossjumping",
        "-fasynchronous-unwind-tables",
        "-fno-exceptions",
        "-fno-rtti",
        "-nostdinc++",
        "-c",
    ]);
    c.args(DEVICE_RULES_ON_HOST);
    // Alignment judged as GCC for Xtensa judges it, where this compiler loads plugins (D105).
    if let Some(plugin) = alignment_plugin::argument(cxx) {
        c.arg(plugin);
    }
    crate::device_system_includes(&mut c, include, libcxx);
    c.arg("-isystem")
        .arg(gcc_include)
        .arg("-idirafter")
        .arg(include.join("device/i386"));
    flags.add_includes(&mut c);
    c.arg("-I").arg(include);
    flags.add_cflags(&mut c);
    c.arg(src).arg("-o").arg(obj);
    c
}

/// The link of an i386 op library: the objects and the device-model runtime archive, GCC's
/// helper library, nothing of the host's C libraries; every symbol resolved.
pub(crate) fn link(cxx: &str, objs: &[PathBuf], archive: &Path, map: &Path, out: &Path) -> Command {
    let mut c = Command::new(cxx);
    c.args(["-m32", "-shared", "-fPIC", "-nostdlib", "-Wl,-z,defs"])
        .args(objs)
        .arg(archive)
        .arg("-lgcc")
        .arg(format!("-Wl,--version-script={}", map.display()))
        .arg("-o")
        .arg(out);
    c
}

/// Checks the script that builds the device-model archive uses [`DEVICE_MODEL_FLAGS`].
pub fn script_flags_agree(script: &Path) -> Result<bool, BuildError> {
    let text = std::fs::read_to_string(script).map_err(io(script))?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("model=\""))
        .and_then(|l| l.strip_suffix('"'));
    Ok(line.is_some_and(|l| l.split(' ').eq(DEVICE_MODEL_FLAGS.iter().copied())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_script_builds_with_the_same_model_flags() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../customop-device/i386/build-archive.sh");
        assert!(script_flags_agree(&script).unwrap());
    }

    #[test]
    fn data_model_names_round_trip() {
        for m in [DataModel::Device, DataModel::Host] {
            assert_eq!(DataModel::from_name(m.name()), Some(m));
        }
        assert_eq!(DataModel::from_name("lp64"), None);
        assert_eq!(DataModel::default(), DataModel::Device);
    }
}
