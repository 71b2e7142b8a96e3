//! The GCC plugin that makes host builds in the device's data model follow the device
//! compiler and cores where no flag can: alignment judged as GCC for Xtensa judges it
//! (D105: aggregates word-aligned, and no run-time check of an access whose misalignment
//! the compiler knows, which the device build moves piecewise), float-to-integer
//! conversions computed as a core computes them (D117: NaN and out-of-range values), and
//! the stack depth the device build's frames reach (D118, given their table).
//!
//! The plugin is C++ against the host compiler's own plugin headers, so it is built for
//! the compiler in use, once, into a cache folder, and found there by later builds. A
//! compiler without plugin headers builds op libraries without it: host cores then fault
//! on those accesses (the stricter answer), convert as x86 does and judge the stack by x86
//! frames, and the build says once what to install and what is lost.
//!
//! A cached plugin is trusted only when its bytes match the SHA-256 digest written beside it
//! when it was built (`NAME.so.sha256`): a file a killed write, a full disk or a bad sector
//! damaged would make GCC refuse every later compile, so it is rebuilt, saying so once.

use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The plugin's source, carried in the build crate (an installed wheel has no checkout).
const SOURCE: &str = include_str!("../gcc-plugin/device_rules.cc");

/// The plugin's name, as GCC takes it from the file's stem.
const NAME: &str = "device_rules";

/// The plugin argument that gives it the device build's frames of the compiled source
/// (`device_frames`; D118).
pub(crate) fn frames_argument(table: &Path) -> OsString {
    let mut arg = OsString::from(format!("-fplugin-arg-{NAME}-frames="));
    arg.push(table);
    arg
}

/// The `-fplugin=` argument for `cxx`, building the plugin on first use; None when this
/// compiler cannot load one (said once per process on stderr).
pub(crate) fn argument(cxx: &str) -> Option<OsString> {
    static BUILT: OnceLock<Mutex<HashMap<String, Option<PathBuf>>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let plugin = built.entry(cxx.to_string()).or_insert_with(|| {
        match find_or_build(cxx, &crate::cache_dir()) {
            Ok(p) => Some(p),
            Err(why) => {
                eprintln!(
                    "note: {why}; host cores will fault on misaligned accesses whose \
                     misalignment GCC for Xtensa sees at compile time (the device build \
                     moves those bytewise; docs/decisions.md D105), float-to-integer \
                     conversions of NaN or out-of-range values give x86's values, not the \
                     device's (D117), and a kernel's stack is judged by x86 frames, not the \
                     device build's, so its edge can lie a few hundred bytes from the \
                     device's (D94, D118)"
                );
                None
            }
        }
    });
    plugin.as_ref().map(|p| {
        let mut arg = OsString::from("-fplugin=");
        arg.push(p);
        arg
    })
}

fn ask(cxx: &str, what: &str) -> Option<String> {
    let out = Command::new(cxx).arg(what).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The plugin for `cxx` cached in `dir`, built there if absent or damaged; or why there is
/// none.
fn find_or_build(cxx: &str, dir: &Path) -> Result<PathBuf, String> {
    let headers = ask(cxx, "-print-file-name=plugin")
        .map(PathBuf::from)
        .filter(|d| d.join("include/gcc-plugin.h").is_file());
    let version = crate::compiler_version(cxx.as_ref());
    let (Some(headers), Some(version)) = (headers, version) else {
        let major = ask(cxx, "-dumpversion").unwrap_or_else(|| "N".into());
        return Err(format!(
            "{cxx} has no plugin headers (apt-get install gcc-{major}-plugin-dev)"
        ));
    };
    // Built for this compiler (its version and headers) from this source, in a folder of
    // its own: GCC names a plugin by its file's stem, which its arguments repeat
    // (`-fplugin-arg-device_rules-frames=`), and a name with a '-' cannot take any.
    let mut key = std::collections::hash_map::DefaultHasher::new();
    (SOURCE, &version, &headers, cxx).hash(&mut key);
    let dir = dir.join(format!("device_rules-{version}-{:016x}", key.finish()));
    let plugin = dir.join(format!("{NAME}.so"));
    match verify(&plugin) {
        Ok(()) => return Ok(plugin),
        Err(Unverified::Absent) => {}
        Err(Unverified::Damaged(why)) => {
            eprintln!(
                "note: the cached device-rules plugin {} cannot be trusted ({why}); building it again",
                plugin.display()
            );
        }
    }
    build(cxx, &headers, &dir, &plugin)
        .map(|()| plugin)
        .map_err(|e| format!("the device-rules plugin could not be built for {cxx}: {e}"))
}

/// Why a cached plugin is not used as it is.
enum Unverified {
    /// Never built.
    Absent,
    /// Damaged, or not known to be whole.
    Damaged(String),
}

/// The digest file beside a plugin.
fn digest_path(plugin: &Path) -> PathBuf {
    let mut name = plugin.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// Whether `plugin` is a whole plugin as it was built: its bytes match the digest beside it.
fn verify(plugin: &Path) -> Result<(), Unverified> {
    let bytes = match std::fs::read(plugin) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unverified::Absent),
        Err(e) => return Err(Unverified::Damaged(e.to_string())),
    };
    let owner = std::fs::metadata(plugin).map(|m| std::os::unix::fs::MetadataExt::uid(&m));
    if owner.is_ok_and(|u| u != crate::user_id()) {
        return Err(Unverified::Damaged("another user's file".into()));
    }
    let recorded = std::fs::read_to_string(digest_path(plugin)).map_err(|e| {
        Unverified::Damaged(match e.kind() {
            std::io::ErrorKind::NotFound => {
                "no digest beside it: an earlier version built it, or its build was cut short"
                    .into()
            }
            _ => format!("its digest: {e}"),
        })
    })?;
    if recorded.trim() != crate::reuse::digest(&bytes) {
        return Err(Unverified::Damaged(format!(
            "{} bytes that do not match the digest written when it was built",
            bytes.len()
        )));
    }
    Ok(())
}

/// Compiles the plugin beside `plugin` and renames it there: builds running at once
/// (compile threads, processes) each find a whole file or none.
fn build(cxx: &str, headers: &Path, dir: &Path, plugin: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let work = tempfile::Builder::new()
        .prefix(".device_rules")
        .tempdir_in(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = work.path().join("device_rules.cc");
    let out = work.path().join("device_rules.so");
    std::fs::write(&src, SOURCE).map_err(|e| format!("{}: {e}", src.display()))?;
    let result = Command::new(cxx)
        .args(["-shared", "-fPIC", "-fno-rtti", "-O2", "-I"])
        .arg(headers.join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .map_err(|e| format!("{cxx}: {e}"))?;
    if !result.status.success() {
        return Err(String::from_utf8_lossy(&result.stderr).into_owned());
    }
    let bytes = std::fs::read(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let digest = work.path().join("device_rules.so.sha256");
    std::fs::write(&digest, crate::reuse::digest(&bytes))
        .map_err(|e| format!("{}: {e}", digest.display()))?;
    // The plugin first, then its digest: a plugin whose digest never arrived is rebuilt.
    std::fs::rename(&out, plugin).map_err(|e| format!("{}: {e}", plugin.display()))?;
    std::fs::rename(&digest, digest_path(plugin))
        .map_err(|e| format!("{}: {e}", digest_path(plugin).display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plugin stores each charged path's depth in its slot of the runtime's
    /// `__customop_stack_charged`, an array as long as customop_abi says (D132).
    #[test]
    fn the_plugin_knows_as_many_charged_slots_as_the_runtime_has() {
        let line = format!(
            "const long CHARGED_SLOTS = {};",
            customop_abi::stack::CHARGED_SLOTS
        );
        assert!(SOURCE.contains(&line), "device_rules.cc lacks `{line}`");
    }

    #[test]
    fn a_compiler_without_plugin_headers_is_told_what_to_install() {
        // `true` answers every question with nothing: no plugin folder.
        let dir = tempfile::tempdir().unwrap();
        let why = find_or_build("true", dir.path()).unwrap_err();
        assert!(why.contains("no plugin headers"), "{why}");
        assert!(why.contains("plugin-dev"), "{why}");
    }

    /// A damaged plugin (truncated, garbage, empty, its digest lost) is built again, and
    /// GCC then loads it.
    #[test]
    fn a_damaged_cached_plugin_is_built_again() {
        if ask("g++", "-print-file-name=plugin")
            .is_none_or(|d| !Path::new(&d).join("include/gcc-plugin.h").is_file())
        {
            eprintln!("skipped: g++ has no plugin headers (make tools installs them)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let plugin = find_or_build("g++", dir.path()).unwrap();
        let good = std::fs::read(&plugin).unwrap();
        type Damage = fn(&Path);
        let damages: [(&str, Damage); 5] = [
            ("truncated", |p| {
                let b = std::fs::read(p).unwrap();
                std::fs::write(p, &b[..b.len() / 2]).unwrap()
            }),
            ("garbage", |p| {
                std::fs::write(p, b"not an ELF file").unwrap()
            }),
            ("empty", |p| std::fs::write(p, b"").unwrap()),
            ("digest lost", |p| {
                std::fs::remove_file(digest_path(p)).unwrap()
            }),
            ("another user's", |p| {
                if crate::user_id() == 0 {
                    std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap()
                } else {
                    std::fs::write(p, b"").unwrap() // (only root can give a file away)
                }
            }),
        ];
        for (what, damage) in damages {
            damage(&plugin);
            assert!(verify(&plugin).is_err(), "{what}: still trusted");
            assert_eq!(find_or_build("g++", dir.path()).unwrap(), plugin, "{what}");
            assert!(verify(&plugin).is_ok(), "{what}: not rebuilt");
            assert_eq!(std::fs::read(&plugin).unwrap().len(), good.len(), "{what}");
            let loaded = Command::new("g++")
                .arg(format!("-fplugin={}", plugin.display()))
                .args(["-fsyntax-only", "-x", "c++", "/dev/null"])
                .status()
                .unwrap();
            assert!(
                loaded.success(),
                "{what}: GCC does not load the rebuilt plugin"
            );
        }
    }
}
