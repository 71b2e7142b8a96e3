//! Host op libraries in the device's data model (D97): op code built by the host's GCC for
//! i386 with the device's type sizes and alignment (32-bit `long`, `size_t` and pointers,
//! 8-byte aligned `long long` and `double` members, 8-byte `long double`, 2-byte `wchar_t`,
//! unsigned plain `char`), against the device's C headers and libc++ configuration, linked
//! with the device runtime and C library built for i386 (no glibc, no libstdc++). Its
//! cores run in 32-bit core processes (the engine's core runner).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{device_plugin, io, BuildError, CompileFlags, DEVICE_RULES_ON_HOST};

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
    // What GCC for Xtensa predefines where i386's differs (compared macro by
    // macro in a test): the fast 8-bit types are 32-bit there, `new` guarantees 8 bytes,
    // and there is no __float128 or 80-bit float to size.
    "-faligned-new=8",
    "-U__INT_FAST8_TYPE__",
    "-D__INT_FAST8_TYPE__=__INT32_TYPE__",
    "-U__INT_FAST8_MAX__",
    "-D__INT_FAST8_MAX__=__INT32_MAX__",
    "-U__INT_FAST8_WIDTH__",
    "-D__INT_FAST8_WIDTH__=32",
    "-U__UINT_FAST8_TYPE__",
    "-D__UINT_FAST8_TYPE__=__UINT32_TYPE__",
    "-U__UINT_FAST8_MAX__",
    "-D__UINT_FAST8_MAX__=__UINT32_MAX__",
    "-U__SIZEOF_FLOAT128__",
    "-U__SIZEOF_FLOAT80__",
];

/// GCC's own header folder (stddef.h, stdarg.h, stdint.h, intrinsics), the same for -m32
/// as for the host: only the compile for i386 is asked of the compiler, not the system's
/// 32-bit C libraries (`g++-multilib`): the link takes GCC's helper library from the
/// installation ([`libgcc_beside`]), D114.
pub fn gcc_include(cxx: &str) -> Result<PathBuf, BuildError> {
    let include = Command::new(cxx)
        .args(["-m32", "-print-file-name=include"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    match include {
        Some(i) if i.join("stddef.h").is_file() => Ok(i),
        _ => Err(BuildError::NoDeviceModelCompiler(cxx.to_string())),
    }
}

/// The file name of GCC's helper library for i386 (`__popcountsi2`, `__muldc3`, ...: what
/// the runtime's compiler builtins lack), which the installation carries beside the
/// device-model archive, so a host build needs no 32-bit libgcc of the system's.
pub const LIBGCC: &str = "libgcc.a";

/// The device runtime's table of how deep a call of each of its functions reaches on a
/// core's stack (`xtensa-device-frames`), carried beside the device-model archive: host
/// builds that judge their stack by the device build's frames charge calls into the
/// runtime by it (D118).
pub const RUNTIME_FRAMES: &str = "runtime-frames.txt";

/// The runtime's frames table beside the device-model archive `archive`.
pub fn runtime_frames_beside(archive: &Path) -> PathBuf {
    archive.with_file_name(RUNTIME_FRAMES)
}

/// The helper library carried beside the device-model archive `archive`.
pub fn libgcc_beside(archive: &Path) -> PathBuf {
    archive.with_file_name(LIBGCC)
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
    if let Some(plugin) = device_plugin::argument(cxx) {
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
/// helper library carried beside it, nothing of the host's C libraries; every symbol
/// resolved.
pub(crate) fn link(cxx: &str, objs: &[PathBuf], archive: &Path, map: &Path, out: &Path) -> Command {
    let mut c = Command::new(cxx);
    c.args(["-m32", "-shared", "-fPIC", "-nostdlib", "-Wl,-z,defs"])
        .args(objs)
        .arg(archive)
        .arg(libgcc_beside(archive))
        .arg(format!("-Wl,--version-script={}", map.display()))
        .arg("-o")
        .arg(out);
    c
}

/// The link of the registration library the core runner loads (D114): the registration
/// text function and the shape objects with the runtime and GCC's helper library; calls
/// the shape code names but registration never makes may stay unresolved (bound lazily).
pub(crate) fn registration_link(
    cxx: &str,
    objs: &[PathBuf],
    archive: &Path,
    out: &Path,
) -> Command {
    let mut c = Command::new(cxx);
    c.args(["-m32", "-shared", "-fPIC", "-nostdlib"])
        .args(objs)
        .arg(archive)
        .arg(libgcc_beside(archive))
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

    /// The object-like macros `compiler` (with `flags`) predefines that say a type, size,
    /// alignment or limit, each expanded to its final tokens.
    fn data_model_macros(
        compiler: &str,
        flags: &[&str],
    ) -> std::collections::BTreeMap<String, String> {
        use std::io::Write as _;
        let run = |args: &[&str], input: &str| {
            let mut c = Command::new(compiler)
                .args(flags)
                .args(["-x", "c++"])
                .args(args)
                .arg("-")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "{compiler} {args:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        let said = [
            "_TYPE__",
            "__SIZEOF_",
            "_MAX__",
            "_MIN__",
            "_WIDTH__",
            "_EPSILON__",
            "_DIG__",
            "_EXP__",
            "ALIGN",
            "_UNSIGNED__",
            "__CHAR_BIT__",
            "__BYTE_ORDER__",
            "_HAS_",
            "__FLT_EVAL_METHOD__",
        ];
        let names: Vec<String> = run(&["-dM", "-E"], "")
            .lines()
            .filter_map(|l| {
                l.strip_prefix("#define ")?
                    .split(' ')
                    .next()
                    .map(str::to_string)
            })
            .filter(|n| !n.contains('(') && said.iter().any(|s| n.contains(s)))
            .collect();
        // Each name as a string (never expanded), then the name (expanded).
        let probe: String = names.iter().map(|n| format!("\"{n}\" {n}\n")).collect();
        run(&["-E", "-P"], &probe)
            .lines()
            .filter_map(|l| {
                let (name, value) = l.strip_prefix('"')?.split_once('"')?;
                Some((
                    name.to_string(),
                    value.split_whitespace().collect::<Vec<_>>().join(" "),
                ))
            })
            .collect()
    }

    /// A floating limit as a number (`double(2.2e-16L)`, `1.0F32x`, ...), where it is one.
    fn float_value(v: &str) -> Option<f64> {
        let v = v
            .trim_start_matches("double(")
            .trim_start_matches("float(")
            .trim_end_matches(')');
        let end = v
            .find(|c: char| !(c.is_ascii_digit() || ".e+-".contains(c)))
            .unwrap_or(v.len());
        v[..end].parse().ok()
    }

    /// Every type, size, alignment and limit GCC for Xtensa predefines holds in host builds
    /// in the device's data model, macro by macro: `int_fast8_t`, `new`'s
    /// default alignment and the rest. Floating limits compare as numbers (each compiler
    /// prints its own digits); the sizes of types the device lacks are not predefined.
    #[test]
    fn the_device_compilers_types_sizes_and_limits_hold_in_host_builds() {
        if crate::XtensaTools::on_path_for_test().is_none() {
            return;
        }
        let device = data_model_macros(crate::XtensaTools::CXX, &[]);
        let host = data_model_macros("g++", DEVICE_MODEL_FLAGS);
        assert!(device.len() > 150, "{}", device.len());
        let mut differ = Vec::new();
        for (name, want) in &device {
            let got = host.get(name).map(String::as_str).unwrap_or("<undefined>");
            let same =
                got == want || float_value(got).is_some_and(|g| Some(g) == float_value(want));
            if !same {
                differ.push(format!("{name}: device {want}, host builds {got}"));
            }
        }
        for name in host
            .keys()
            .filter(|n| n.starts_with("__SIZEOF_") && !device.contains_key(*n))
        {
            differ.push(format!("{name}: host builds size a type the device lacks"));
        }
        assert!(differ.is_empty(), "{}", differ.join("\n"));
    }

    #[test]
    fn the_archive_script_builds_with_the_same_model_flags() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../customop-device/i386/build-archive.sh");
        assert!(script_flags_agree(&script).unwrap());
    }
}
