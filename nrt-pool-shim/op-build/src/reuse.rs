//! Builds into one folder one at a time, and not again while nothing they read changed: what
//! `custom_op.load` in every rank of a `torchrun` job needs (8 or 32 processes loading the
//! same sources into a shared home at once), as `torch.utils.cpp_extension` does.
//!
//! - **The lock**: `.lib{name}.lock` in the build folder, held with `flock` for the whole
//!   build. The kernel releases it when its holder dies, so a process killed mid-build
//!   holds no one up; the next waiter finds no record and builds.
//! - **The record**: `lib{name}.so.build` beside the library, written last (renamed into
//!   place): the build's inputs (a digest of its options, tools and archives), every file
//!   its compiles read (GCC's dependency output: sources and headers, by SHA-256 digest,
//!   files above 4 MiB by length and modification time) and a digest of each file it made. A build whose record
//!   matches all three is not done again; a damaged or missing output, a changed header or
//!   flag, a new runtime archive or compiler version each rebuild.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use crate::{io, BuildError};

/// The environment variable GCC writes a compile's dependencies to (all headers, system
/// ones too, as `-M`), without changing its command line (so a precompiled header's key,
/// D106, stays the same).
const DEPENDENCIES_ENV: &str = "SUNPRO_DEPENDENCIES";
/// The suffix of the dependency file written beside each object.
const DEPS_SUFFIX: &str = "deps";

/// The build folder's lock for library `out`, held until dropped (or the process ends).
pub(crate) struct BuildLock {
    _file: File,
}

impl BuildLock {
    pub(crate) fn acquire(out: &Path) -> Result<BuildLock, BuildError> {
        let dir = out.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let name = out.file_name().unwrap_or_default().to_string_lossy();
        let path = dir.join(format!(".{name}.lock"));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        file.lock().map_err(io(&path))?;
        Ok(BuildLock { _file: file })
    }
}

/// Makes `cmd` (a compile writing `-o OUT`) write its dependencies to `OUT.deps`.
pub(crate) fn record_dependencies(cmd: &mut std::process::Command) {
    let args: Vec<_> = cmd.get_args().collect();
    let compiles = args.iter().any(|a| *a == "-c" || *a == "-S");
    let Some(out) = args
        .iter()
        .position(|a| *a == "-o")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
    else {
        return;
    };
    // Not for a precompiled header: it is a cache entry of its own (D106).
    if !compiles || out.extension().is_some_and(|e| e == "gch") {
        return;
    }
    let mut deps = out.into_os_string();
    deps.push(".");
    deps.push(DEPS_SUFFIX);
    cmd.env(DEPENDENCIES_ENV, deps);
}

/// Every file the compiles under `work` read, from their dependency files (sorted, once
/// each), files inside `work` itself left out (generated sources).
pub(crate) fn dependencies(work: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = files_under(work)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == DEPS_SUFFIX))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| parse_make_rule(&text))
        .filter(|p| !p.starts_with(work))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Every file below `dir`.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(d) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                folders.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The prerequisites of a make rule as GCC writes it (`target: a b \` lines, spaces in
/// names escaped with a backslash).
fn parse_make_rule(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\n", " ");
    let mut paths = Vec::new();
    for line in joined.lines() {
        let Some((_, prerequisites)) = line.split_once(": ") else {
            continue;
        };
        let mut word = String::new();
        let mut chars = prerequisites.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => word.push(chars.next().unwrap_or(' ')),
                ' ' | '\t' => {
                    if !word.is_empty() {
                        paths.push(PathBuf::from(std::mem::take(&mut word)));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            paths.push(PathBuf::from(word));
        }
    }
    paths
}

/// A finished build's record (see the module's note).
#[derive(Debug, PartialEq)]
pub(crate) struct Record {
    inputs: String,
    read: Vec<(PathBuf, String)>,
    made: Vec<(PathBuf, String)>,
}

impl Record {
    /// The record of library `out`.
    fn path(out: &Path) -> PathBuf {
        let mut p = out.as_os_str().to_owned();
        p.push(".build");
        PathBuf::from(p)
    }

    /// The record of a build with `inputs` (a digest of its options) that read `read` and
    /// made `made`; None when one of them cannot be read.
    pub(crate) fn of(inputs: String, read: &[PathBuf], made: &[PathBuf]) -> Option<Record> {
        Some(Record {
            inputs,
            // Absolute: GCC names files as the compile found them, relative to this
            // process's folder, which a later load need not share.
            read: read
                .iter()
                .map(|p| {
                    let p = std::fs::canonicalize(p).ok()?;
                    let s = stamp(&p)?;
                    Some((p, s))
                })
                .collect::<Option<_>>()?,
            made: made
                .iter()
                .map(|p| Some((p.clone(), digest_file(p)?)))
                .collect::<Option<_>>()?,
        })
    }

    /// Whether library `out` was built from `inputs` and nothing it read or made has
    /// changed since.
    pub(crate) fn is_current(out: &Path, inputs: &str) -> bool {
        let Ok(text) = std::fs::read_to_string(Self::path(out)) else {
            return false;
        };
        let Some(record) = Self::parse(&text) else {
            return false;
        };
        record.inputs == inputs
            && record
                .read
                .iter()
                .all(|(p, s)| stamp(p).as_ref() == Some(s))
            && record
                .made
                .iter()
                .all(|(p, d)| digest_file(p).as_ref() == Some(d))
    }

    /// Writes the record beside library `out` (renamed into place: a reader finds a whole
    /// record or the previous one).
    pub(crate) fn write(&self, out: &Path) -> Result<(), BuildError> {
        let path = Self::path(out);
        let mut partial = path.clone().into_os_string();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        std::fs::write(&partial, self.text()).map_err(io(&partial))?;
        std::fs::rename(&partial, &path).map_err(io(&path))
    }

    /// Forgets the record of library `out` (before a build replaces what it describes).
    pub(crate) fn remove(out: &Path) {
        let _ = std::fs::remove_file(Self::path(out));
    }

    fn text(&self) -> String {
        let mut t = format!("inputs {}\n", self.inputs);
        for (kind, list) in [("read", &self.read), ("made", &self.made)] {
            for (p, s) in list {
                t.push_str(&format!("{kind} {s} {}\n", p.display()));
            }
        }
        t
    }

    fn parse(text: &str) -> Option<Record> {
        let mut lines = text.lines();
        let inputs = lines.next()?.strip_prefix("inputs ")?.to_string();
        let (mut read, mut made) = (Vec::new(), Vec::new());
        for line in lines {
            let (kind, rest) = line.split_once(' ')?;
            let (s, path) = rest.split_once(' ')?;
            let entry = (PathBuf::from(path), s.to_string());
            match kind {
                "read" => read.push(entry),
                "made" => made.push(entry),
                _ => return None,
            }
        }
        (!made.is_empty()).then_some(Record { inputs, read, made })
    }
}

/// Files read by a build up to this size are known by their bytes' digest; larger ones (a
/// precompiled header) by length and modification time, as make judges them.
const DIGESTED: u64 = 4 << 20;

/// A file's length and modification time (seconds and nanoseconds since the epoch), as
/// the build record and the precompiled header's manifest know a file they do not digest.
pub(crate) fn length_and_time(p: &Path) -> Option<(u64, String)> {
    let m = std::fs::metadata(p).ok()?;
    let t = m.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some((m.len(), format!("{}.{:09}", t.as_secs(), t.subsec_nanos())))
}

/// A file read by a build, as the record knows it.
fn stamp(p: &Path) -> Option<String> {
    let (len, time) = length_and_time(p)?;
    if len <= DIGESTED {
        return digest_file(p);
    }
    Some(format!("{len}:{time}"))
}

/// SHA-256 of a file's bytes, in hex (kept per path, length and time for the process: a
/// runtime archive is read for its check and for the build record).
pub(crate) fn digest_file(p: &Path) -> Option<String> {
    type Known = Vec<(PathBuf, String, String)>;
    static KNOWN: std::sync::Mutex<Known> = std::sync::Mutex::new(Vec::new());
    let when = length_and_time(p).map(|(len, time)| format!("{len}:{time}"))?;
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, d)) = known.iter().find(|(q, w, _)| q == p && *w == when) {
        return Some(d.clone());
    }
    let d = digest(&std::fs::read(p).ok()?);
    known.push((p.to_path_buf(), when, d.clone()));
    Some(d)
}

/// Checks an installed file the build reads (a runtime archive) against the digest written
/// beside it when it was made (`FILE.sha256`: `make customop-archives`, the install and the
/// wheel carry it); a file without one is taken as it is.
pub(crate) fn verify_installed(what: &'static str, path: &Path) -> Result<(), BuildError> {
    let Ok(recorded) = std::fs::read_to_string(format!("{}.sha256", path.display())) else {
        return Ok(());
    };
    if digest_file(path).as_deref() == Some(recorded.trim()) {
        return Ok(());
    }
    Err(BuildError::Damaged {
        what,
        path: path.to_path_buf(),
        hint: "reinstall gpsimd-open (pip install --force-reinstall), or run `make customop-archives` in a checkout",
    })
}

/// SHA-256 of `bytes`, in hex.
pub(crate) fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installed_file_is_checked_against_its_digest_where_it_has_one() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("libneuroncustomop.a");
        std::fs::write(&a, b"!<arch>\nrest").unwrap();
        assert!(
            verify_installed("archive", &a).is_ok(),
            "no digest: taken as it is"
        );
        std::fs::write(
            dir.path().join("libneuroncustomop.a.sha256"),
            digest(b"!<arch>\nrest"),
        )
        .unwrap();
        assert!(verify_installed("archive", &a).is_ok());
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&a, b"!<arch>\nREST").unwrap();
        let e = verify_installed("archive", &a).unwrap_err().to_string();
        assert!(
            e.contains("does not match the digest") && e.contains("reinstall"),
            "{e}"
        );
    }

    #[test]
    fn make_rules_are_read_as_gcc_writes_them() {
        let text = "a.o: /src/a.cpp /inc/x\\ y.h \\\n  /inc/b.h\n/inc/b.h:\n";
        assert_eq!(
            parse_make_rule(text),
            ["/src/a.cpp", "/inc/x y.h", "/inc/b.h"].map(PathBuf::from)
        );
    }

    #[test]
    fn a_record_is_current_until_what_it_read_or_made_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (src, lib) = (dir.path().join("a.h"), dir.path().join("liba.so"));
        std::fs::write(&src, "int x;").unwrap();
        std::fs::write(&lib, "library").unwrap();
        let record = Record::of(
            "k1".into(),
            std::slice::from_ref(&src),
            std::slice::from_ref(&lib),
        )
        .unwrap();
        record.write(&lib).unwrap();
        assert_eq!(Record::parse(&record.text()).as_ref(), Some(&record));
        assert!(Record::is_current(&lib, "k1"));
        assert!(!Record::is_current(&lib, "k2"), "other inputs");
        std::fs::write(&lib, "damaged").unwrap();
        assert!(!Record::is_current(&lib, "k1"), "a damaged output");
        std::fs::write(&lib, "library").unwrap();
        assert!(Record::is_current(&lib, "k1"));
        std::fs::write(&src, "int x, y;").unwrap();
        assert!(!Record::is_current(&lib, "k1"), "a changed header");
        Record::remove(&lib);
        assert!(!Record::is_current(&lib, "k1"));
    }
}
