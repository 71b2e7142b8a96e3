//! The GCC plugin that makes host builds judge alignment as GCC for Xtensa does (D105):
//! aggregates word-aligned, and no run-time check of an access whose misalignment the
//! compiler knows (the device build moves such a value piecewise, so it does not fault).
//!
//! The plugin is C++ against the host compiler's own plugin headers, so it is built for
//! the compiler in use, once, into a cache folder, and found there by later builds. A
//! compiler without plugin headers builds op libraries without it: host cores then fault
//! on those accesses (the stricter answer), and the build says once what to install.

use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The plugin's source, carried in the build crate (an installed wheel has no checkout).
const SOURCE: &str = include_str!("../gcc-plugin/device_alignment.cc");

/// The `-fplugin=` argument for `cxx`, building the plugin on first use; None when this
/// compiler cannot load one (said once per process on stderr).
pub(crate) fn argument(cxx: &str) -> Option<OsString> {
    static BUILT: OnceLock<Mutex<HashMap<String, Option<PathBuf>>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let plugin = built
        .entry(cxx.to_string())
        .or_insert_with(|| match find_or_build(cxx) {
            Ok(p) => Some(p),
            Err(why) => {
                eprintln!(
                    "note: {why}; host cores will fault on misaligned accesses whose \
                     misalignment GCC for Xtensa sees at compile time (the device build \
                     moves those bytewise; docs/decisions.md D105)"
                );
                None
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

/// The cached plugin for `cxx`, built there if absent; or why there is none.
fn find_or_build(cxx: &str) -> Result<PathBuf, String> {
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
    // Built for this compiler (its version and headers) from this source.
    let mut key = std::collections::hash_map::DefaultHasher::new();
    (SOURCE, &version, &headers, cxx).hash(&mut key);
    let dir = crate::cache_dir();
    let plugin = dir.join(format!(
        "device_alignment-{version}-{:016x}.so",
        key.finish()
    ));
    if plugin.is_file() {
        return Ok(plugin);
    }
    build(cxx, &headers, &dir, &plugin)
        .map(|()| plugin)
        .map_err(|e| format!("the alignment plugin could not be built for {cxx}: {e}"))
}

/// Compiles the plugin beside `plugin` and renames it there: builds running at once
/// (compile threads, processes) each find a whole file or none.
fn build(cxx: &str, headers: &Path, dir: &Path, plugin: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let work = tempfile::Builder::new()
        .prefix(".device_alignment")
        .tempdir_in(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = work.path().join("device_alignment.cc");
    let out = work.path().join("device_alignment.so");
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
    std::fs::rename(&out, plugin).map_err(|e| format!("{}: {e}", plugin.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compiler_without_plugin_headers_is_told_what_to_install() {
        // `true` answers every question with nothing: no plugin folder.
        let why = find_or_build("true").unwrap_err();
        assert!(why.contains("no plugin headers"), "{why}");
        assert!(why.contains("plugin-dev"), "{why}");
    }
}
