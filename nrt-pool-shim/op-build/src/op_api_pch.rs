//! The op API (`<torch/torch.h>`) precompiled for host compiles (D106).
//!
//! Every translation unit of a NEURON_LIBRARY build parses the op API and the libc++
//! headers under it (about 350 files, half of a small source's compile). A precompiled
//! header built once per compile command (compiler, flags, include folders) is used by
//! every later compile with that command: `-include <cache>/op_api.h` finds
//! `op_api.h.gch` beside it, and GCC itself refuses a precompiled header made with other
//! options (the optimisation level, macros the headers test) and reads the header instead,
//! so a compile means the same with or without it.
//!
//! A source takes the op API first only where that cannot change its meaning: it opens
//! with `#include <torch/torch.h>`, perhaps after other `#include <name>` lines of standard
//! headers (which may come in any order) and comments. Anything else before it (a
//! `#define`, a conditional, a header of the author's) keeps the source as it is.

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::reuse::length_and_time;

/// `NRT_POOL_PCH=0` builds without the precompiled header.
pub const PCH_ENV: &str = "NRT_POOL_PCH";

/// The header precompiled: the op API, as op sources include it.
const HEADER: &str = "#include <torch/torch.h>\n";

/// How many precompiled headers the cache keeps (each is tens of MB): the newest.
const KEEP: usize = 8;

/// True when `source` opens with the op API, after nothing but standard headers,
/// comments and blank lines (so including the op API first changes nothing).
pub(crate) fn opens_with_the_op_api(source: &[u8]) -> bool {
    let mut in_comment = false;
    for raw in source.split(|&b| b == b'\n') {
        let mut line = raw.trim_ascii();
        if in_comment {
            match find(line, b"*/") {
                Some(end) => {
                    in_comment = false;
                    line = line[end + 2..].trim_ascii();
                }
                None => continue,
            }
        }
        if let Some(start) = line.strip_prefix(b"/*") {
            match find(start, b"*/") {
                Some(end) => line = start[end + 2..].trim_ascii(),
                None => {
                    in_comment = true;
                    continue;
                }
            }
        }
        if line.is_empty() || line.starts_with(b"//") {
            continue;
        }
        let Some(directive) = line.strip_prefix(b"#") else {
            return false;
        };
        let directive = directive.trim_ascii_start();
        if directive == b"pragma once" {
            continue;
        }
        let Some(name) = directive
            .strip_prefix(b"include")
            .map(<[u8]>::trim_ascii)
            .and_then(|n| n.strip_prefix(b"<"))
            .and_then(|n| n.split(|&b| b == b'>').next())
        else {
            return false;
        };
        if name == b"torch/torch.h" {
            return true;
        }
        // A standard header's name has no folder; anything else may be the author's.
        if name.contains(&b'/') {
            return false;
        }
    }
    false
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Adds the precompiled op API to `c`, a compile that `command` makes, when `opening`
/// (the source the compile starts with) opens with it.
pub(crate) fn add_when_opening_with_it(
    c: &mut Command,
    opening: &Path,
    command: impl Fn(&Path, &Path) -> Command,
) {
    if std::fs::read(opening).is_ok_and(|text| opens_with_the_op_api(&text)) {
        if let Some(include) = include_args(&crate::cache_dir(), command) {
            c.args(include);
        }
    }
}

/// The `-include` arguments that bring in the precompiled op API for compiles made by
/// `command` (called with a header and an output path, as for any source), building it
/// into the cache on first use; none when it cannot be built (the compile then parses
/// the headers as before).
pub(crate) fn include_args(
    cache: &Path,
    command: impl Fn(&Path, &Path) -> Command,
) -> Option<[OsString; 2]> {
    if std::env::var_os(PCH_ENV).is_some_and(|v| v == "0") {
        return None;
    }
    // The compile command with placeholders names the precompiled header it needs.
    let probe = command(Path::new("@header"), Path::new("@output"));
    let mut key = DefaultHasher::new();
    let version = crate::compiler_version(probe.get_program());
    (
        HEADER,
        probe.get_program(),
        version,
        probe.get_args().collect::<Vec<_>>(),
    )
        .hash(&mut key);
    let root = root(cache);
    let dir = root.join(format!("{:016x}", key.finish()));
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    if current(&dir) {
        mark_used(&dir);
        return Some(["-include".into(), dir.join("op_api.h").into()]);
    }
    // One process builds an entry; the others wait and take it. Without this, a second
    // process built the same entry and replaced the first's, and a build that was reading
    // the first's header in that moment found it gone and left its library unrecorded
    // (the next load built it again: seen as five builds of four folders in
    // test_build_sharing.py).
    let _lock = lock_entry(&root, &dir);
    if !current(&dir) {
        // (Nothing cached for this command yet is no entry to distrust.)
        let distrusted = dir.exists().then(|| trusted(&dir).err()).flatten();
        if let Some(why) = distrusted {
            eprintln!(
                "note: the cached precompiled op API {} cannot be trusted ({why}); building it again",
                dir.display()
            );
        }
        build(&root, &dir, &command).ok()?;
        // (An entry this process cannot replace, another user's, stays untrusted.)
        trusted(&dir).ok()?;
    }
    mark_used(&dir);
    Some(["-include".into(), dir.join("op_api.h").into()])
}

/// The cache's lock for entry `dir` (a file beside it, held until dropped or the process
/// ends); None where it cannot be taken (a read-only cache: the entry is then built
/// unlocked, as before).
fn lock_entry(root: &Path, dir: &Path) -> Option<std::fs::File> {
    std::fs::create_dir_all(root).ok()?;
    let name = dir.file_name()?.to_string_lossy();
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(format!(".{name}.lock")))
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

/// Whether `dir` holds a whole precompiled header (see [`trusted`]) whose every input is
/// as it was when built.
fn current(dir: &Path) -> bool {
    let Ok(manifest) = std::fs::read_to_string(dir.join("inputs")) else {
        return false;
    };
    trusted(dir).is_ok()
        && manifest.lines().all(|l| {
            let mut f = l.rsplitn(3, ' ');
            let (Some(stamp), Some(len), Some(path)) = (f.next(), f.next(), f.next()) else {
                return false;
            };
            length_and_time(Path::new(path))
                .is_some_and(|(n, s)| n.to_string() == len && s == stamp)
        })
}

/// Whether the entry in `dir` is as it was built: its header and precompiled header match
/// the digests written with them, and this user owns them (a damaged or planted entry
/// is built again). The digest of a precompiled header (~35 MB) is checked once per
/// process and entry.
fn trusted(dir: &Path) -> Result<(), String> {
    let gch = dir.join("op_api.h.gch");
    let Some(stamp) = length_and_time(&gch) else {
        return Err("no precompiled header".into());
    };
    let mut checked = CHECKED.lock().unwrap_or_else(|p| p.into_inner());
    if checked.iter().any(|(d, s)| d == dir && *s == stamp) {
        return Ok(());
    }
    let recorded =
        std::fs::read_to_string(dir.join(DIGESTS)).map_err(|e| format!("its digests: {e}"))?;
    for name in ["op_api.h", "op_api.h.gch"] {
        let path = dir.join(name);
        let meta = std::fs::metadata(&path).map_err(|e| format!("{name}: {e}"))?;
        if std::os::unix::fs::MetadataExt::uid(&meta) != crate::user_id() {
            return Err(format!("{name} belongs to another user"));
        }
        let want = recorded
            .lines()
            .find_map(|l| l.strip_suffix(name).and_then(|d| d.strip_suffix(' ')))
            .ok_or_else(|| format!("no digest of {name}"))?;
        let bytes = std::fs::read(&path).map_err(|e| format!("{name}: {e}"))?;
        if crate::reuse::digest(&bytes) != want {
            return Err(format!("{name} does not match its digest"));
        }
    }
    checked.push((dir.to_path_buf(), stamp));
    Ok(())
}

/// The entries this process checked, with the precompiled header's length and time then.
static CHECKED: Mutex<Vec<(PathBuf, (u64, String))>> = Mutex::new(Vec::new());

#[cfg(test)]
fn forget_checks() {
    CHECKED.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// The file of an entry with its header's and precompiled header's digests.
const DIGESTS: &str = "digests";

/// Builds the precompiled header in a fresh folder and renames it to `dir`, so another
/// build finds a whole entry or none; then keeps the cache to its newest [`KEEP`] entries.
fn build(
    root: &Path,
    dir: &Path,
    command: &impl Fn(&Path, &Path) -> Command,
) -> Result<(), String> {
    std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
    let work = tempfile::Builder::new()
        .prefix(".building")
        .tempdir_in(root)
        .map_err(|e| e.to_string())?;
    // The header's own name is what compiles include, so it is built under that name
    // in the work folder and the folder is renamed: GCC records no path of it.
    let header = work.path().join("op_api.h");
    std::fs::write(&header, HEADER).map_err(|e| e.to_string())?;
    let deps = work.path().join("deps.d");
    let out = command(&header, &work.path().join("op_api.h.gch"))
        .arg("-MD")
        .arg("-MF")
        .arg(&deps)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let inputs = manifest(&std::fs::read_to_string(&deps).map_err(|e| e.to_string())?);
    std::fs::write(work.path().join("inputs"), inputs).map_err(|e| e.to_string())?;
    let mut digests = String::new();
    for name in ["op_api.h", "op_api.h.gch"] {
        let bytes = std::fs::read(work.path().join(name)).map_err(|e| e.to_string())?;
        digests.push_str(&format!("{} {name}\n", crate::reuse::digest(&bytes)));
    }
    std::fs::write(work.path().join(DIGESTS), digests).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(dir);
    let built = work.keep();
    if std::fs::rename(&built, dir).is_err() {
        // Another build put the same entry in place first.
        let _ = std::fs::remove_dir_all(&built);
    }
    evict(root);
    Ok(())
}

/// The manifest of a dependency file: `path length mtime` per input header.
fn manifest(deps: &str) -> String {
    let joined = deps.replace("\\\n", " ");
    let files = joined.split_once(':').map_or("", |(_, f)| f);
    let mut out = String::new();
    for f in files.split_whitespace() {
        // The work folder's own header is not an input that can change.
        if f.ends_with("/op_api.h") {
            continue;
        }
        if let Some((len, stamp)) = length_and_time(Path::new(f)) {
            out.push_str(&format!("{f} {len} {stamp}\n"));
        }
    }
    out
}

/// The folder of the precompiled entries in cache folder `cache` (a build's record leaves
/// what lies in it out: an entry is checked as a cache entry of its own, and another
/// process may evict it).
pub(crate) fn root(cache: &Path) -> PathBuf {
    cache.join("pch")
}

/// An entry used within this long is never evicted: a build may be compiling with it.
const IN_USE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Stamps entry `dir` as used now (its manifest's modification time), for [`evict`].
fn mark_used(dir: &Path) {
    if let Ok(f) = std::fs::File::options()
        .append(true)
        .open(dir.join("inputs"))
    {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// When entry `dir` was last used (or built).
fn last_used(dir: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(dir.join("inputs")).ok()?.modified().ok()
}

/// Removes all but the [`KEEP`] entries under `root` used last, sparing any used within
/// [`IN_USE`] (before, an entry another process was compiling with could go, and that
/// build failed or left its library unrecorded).
fn evict(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            Some((
                last_used(&e.path()).or(e.metadata().ok()?.modified().ok())?,
                e.path(),
            ))
        })
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.0));
    let now = std::time::SystemTime::now();
    for (used, d) in dirs.into_iter().skip(KEEP) {
        if now.duration_since(used).is_ok_and(|age| age >= IN_USE) {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::opens_with_the_op_api as opens;
    use super::*;

    /// A compile command with a stand-in op API under `api`.
    fn gxx(api: &Path) -> impl Fn(&Path, &Path) -> Command + '_ {
        move |src, out| {
            let mut c = Command::new("g++");
            c.arg("-I").arg(api).arg("-c").arg(src).arg("-o").arg(out);
            c
        }
    }

    #[test]
    fn a_header_is_built_once_used_and_rebuilt_when_an_input_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let api = tmp.path().join("include");
        std::fs::create_dir_all(api.join("torch")).unwrap();
        let torch = api.join("torch/torch.h");
        std::fs::write(&torch, "#pragma once\ninline int api() { return 1; }\n").unwrap();
        let cache = tmp.path().join("cache");
        let args = include_args(&cache, gxx(&api)).expect("g++ builds a precompiled header");
        let gch = PathBuf::from(&args[1]).with_extension("h.gch");
        let first = std::fs::metadata(&gch).unwrap().modified().unwrap();
        // A compile with it uses it (GCC's -H marks a used one with '!').
        let src = tmp.path().join("k.cpp");
        std::fs::write(
            &src,
            "#include <torch/torch.h>\nint k() { return api(); }\n",
        )
        .unwrap();
        let out = gxx(&api)(&src, &tmp.path().join("k.o"))
            .args(&args)
            .arg("-H")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("! "),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The same command again: the same entry, not rebuilt.
        assert_eq!(include_args(&cache, gxx(&api)), Some(args.clone()));
        assert_eq!(std::fs::metadata(&gch).unwrap().modified().unwrap(), first);
        // An input header changes: the entry is rebuilt.
        std::fs::write(&torch, "#pragma once\ninline int api() { return 22; }\n").unwrap();
        assert!(!current(gch.parent().unwrap()));
        assert_eq!(include_args(&cache, gxx(&api)), Some(args));
        assert!(current(gch.parent().unwrap()));
    }

    /// A damaged entry (its precompiled header truncated, overwritten, emptied, another
    /// user's, or its digests lost) is not trusted and is built again.
    #[test]
    fn a_damaged_entry_is_built_again() {
        let tmp = tempfile::tempdir().unwrap();
        let api = tmp.path().join("include");
        std::fs::create_dir_all(api.join("torch")).unwrap();
        std::fs::write(
            api.join("torch/torch.h"),
            "#pragma once\ninline int api() { return 1; }\n",
        )
        .unwrap();
        let cache = tmp.path().join("cache");
        let args = include_args(&cache, gxx(&api)).expect("g++ builds a precompiled header");
        let dir = PathBuf::from(&args[1]).parent().unwrap().to_path_buf();
        let gch = dir.join("op_api.h.gch");
        let good = std::fs::read(&gch).unwrap();
        type Damage = fn(&Path);
        let damages: [(&str, Damage); 5] = [
            ("truncated", |g| {
                let b = std::fs::read(g).unwrap();
                std::fs::write(g, &b[..b.len() / 3]).unwrap()
            }),
            ("garbage", |g| {
                let mut b = std::fs::read(g).unwrap();
                let n = b.len();
                b[n / 2..n / 2 + 64].fill(0xA5);
                std::fs::write(g, b).unwrap()
            }),
            ("empty", |g| std::fs::write(g, b"").unwrap()),
            ("another user's", |g| {
                if crate::user_id() == 0 {
                    std::os::unix::fs::chown(g, Some(65534), Some(65534)).unwrap()
                } else {
                    std::fs::write(g, b"").unwrap()
                }
            }),
            ("digests lost", |g| {
                std::fs::remove_file(g.with_file_name(DIGESTS)).unwrap()
            }),
        ];
        for (what, damage) in damages {
            damage(&gch);
            assert!(trusted_afresh(&dir).is_err(), "{what}: still trusted");
            forget_checks();
            assert_eq!(
                include_args(&cache, gxx(&api)),
                Some(args.clone()),
                "{what}"
            );
            assert!(trusted_afresh(&dir).is_ok(), "{what}: not built again");
            // (GCC records its work folder's name: lengths differ by a few bytes.)
            assert!(
                std::fs::read(&gch).unwrap().len() > good.len() * 9 / 10,
                "{what}"
            );
        }
    }

    /// [`trusted`] as a process that has not checked `dir` yet sees it.
    fn trusted_afresh(dir: &Path) -> Result<(), String> {
        forget_checks();
        trusted(dir)
    }

    #[test]
    fn only_standard_headers_and_comments_may_come_before_the_op_api() {
        assert!(opens(b"#include <torch/torch.h>\nint x;"));
        assert!(opens(b"// op\n/* a\n b */\n#include <stdint.h>\n#include <string.h>\n  #  include <torch/torch.h>\n"));
        assert!(opens(
            b"#pragma once\n#include <vector>\n#include <torch/torch.h>\n"
        ));
        assert!(!opens(b"#define N 4\n#include <torch/torch.h>\n"));
        assert!(!opens(b"#include \"mine.h\"\n#include <torch/torch.h>\n"));
        assert!(!opens(
            b"#include <neuron/neuron-utils.hpp>\n#include <torch/torch.h>\n"
        ));
        assert!(!opens(b"#ifdef X\n#include <torch/torch.h>\n#endif\n"));
        assert!(!opens(b"int x;\n#include <torch/torch.h>\n"));
        assert!(!opens(b"#include \"neuron_customop.hpp\"\n"));
        assert!(!opens(b""));
    }

    #[test]
    fn eviction_keeps_the_entries_used_last_and_spares_those_in_use() {
        let root = tempfile::tempdir().unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let entry = |i: usize, used: std::time::SystemTime| {
            let d = root.path().join(format!("{i:016x}"));
            std::fs::create_dir(&d).unwrap();
            let f = std::fs::File::create(d.join("inputs")).unwrap();
            f.set_modified(used - std::time::Duration::from_secs(i as u64))
                .unwrap();
        };
        // Twelve entries: ten unused for an hour, two in use now.
        for i in 0..10 {
            entry(i, hour_ago);
        }
        entry(10, std::time::SystemTime::now());
        entry(11, std::time::SystemTime::now());
        // A lock file is not an entry.
        std::fs::write(root.path().join(".0000000000000000.lock"), "").unwrap();
        evict(root.path());
        let mut left: Vec<String> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        // The two in use and the six used last of the rest stay (KEEP = 8); the four
        // used longest ago go.
        let mut want: Vec<String> = (0..6)
            .chain([10, 11])
            .map(|i| format!("{i:016x}"))
            .collect();
        want.push(".0000000000000000.lock".into());
        want.sort();
        assert_eq!(left, want);
        // Used now, an old entry is spared even beyond KEEP.
        mark_used(&root.path().join(format!("{:016x}", 5)));
        for i in 12..20 {
            entry(i, std::time::SystemTime::now());
        }
        evict(root.path());
        assert!(root.path().join(format!("{:016x}", 5)).exists());
    }
}
