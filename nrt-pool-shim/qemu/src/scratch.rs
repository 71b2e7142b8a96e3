//! The backend's scratch folders (the profile plugin's counts, the race check's accesses),
//! which heal: a process that ends without dropping its backend (a Python interpreter's
//! exit, a kill) leaves its folder behind, so each new folder's creation first removes the
//! folders of processes that no longer run.
//!
//! A folder is named `nrt-pool-qemu.<pid namespace>.<pid>.<random>` in the temporary
//! directory: only folders of this user, of this PID namespace (a `/tmp` shared between
//! containers holds other namespaces' PIDs) and of a PID that does not run are removed.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use tempfile::TempDir;

const PREFIX: &str = "nrt-pool-qemu.";

/// A new scratch folder, after the folders processes left behind are removed.
pub(crate) fn folder() -> io::Result<TempDir> {
    let tmp = std::env::temp_dir();
    let namespace = pid_namespace();
    sweep(&tmp, &namespace);
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{namespace}.{}.", std::process::id()))
        .tempdir_in(&tmp)
}

/// This process's PID namespace, by its inode (`pid:[4026531836]` -> `4026531836`).
fn pid_namespace() -> String {
    fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|l| {
            let l = l.to_string_lossy().into_owned();
            let digits: String = l.chars().filter(char::is_ascii_digit).collect();
            (!digits.is_empty()).then_some(digits)
        })
        .unwrap_or_else(|| "0".into())
}

/// Removes the folders in `tmp` of processes of `namespace` that no longer run.
fn sweep(tmp: &Path, namespace: &str) {
    let Ok(entries) = fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|n| n.strip_prefix(namespace))
            .and_then(|n| n.strip_prefix('.'))
            .and_then(|n| n.split('.').next())
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let ours = entry.metadata().is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && pid > 0 && !runs(pid) {
            // Best effort: a folder another process removes first is gone either way.
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether process `pid` runs (or exists under another user, which also keeps its folder).
fn runs(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PID no process has: a child that has exited and been reaped.
    fn ended_pid() -> libc::pid_t {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        child.wait().unwrap();
        pid
    }

    #[test]
    fn the_folders_of_ended_processes_are_removed_and_no_others() {
        let tmp = tempfile::tempdir().unwrap();
        let ns = pid_namespace();
        let dead = ended_pid();
        let mine = std::process::id();
        let left = tmp.path().join(format!("{PREFIX}{ns}.{dead}.abc"));
        let live = tmp.path().join(format!("{PREFIX}{ns}.{mine}.def"));
        let other_ns = tmp.path().join(format!("{PREFIX}1{ns}.{dead}.ghi"));
        let unrelated = tmp.path().join(format!("other.{dead}.jkl"));
        for d in [&left, &live, &other_ns, &unrelated] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("core0.blocks"), b"x").unwrap();
        }
        sweep(tmp.path(), &ns);
        assert!(!left.exists(), "an ended process's folder stays");
        for kept in [&live, &other_ns, &unrelated] {
            assert!(
                kept.join("core0.blocks").exists(),
                "{} removed",
                kept.display()
            );
        }
    }

    #[test]
    fn a_new_folder_is_named_by_this_process() {
        let dir = folder().unwrap();
        let name = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let expected = format!("{PREFIX}{}.{}.", pid_namespace(), std::process::id());
        assert!(name.starts_with(&expected), "{name}");
    }
}
