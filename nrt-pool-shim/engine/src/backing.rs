//! Where the device memory's pages come from (D66): a file on a private tmpfs mounted with
//! `huge=always` when the kernel lets this process mount one, else a plain memfd.
//!
//! Every core process maps the device memory, so it must be shared memory, and Linux's
//! shared memory comes in 4 KiB pages unless its mount asks for more: memfds follow the
//! system's `shmem_enabled` switch, which is commonly `never`. A 64 MiB tensor in 4 KiB
//! pages costs 16k page allocations and 16k page faults in every process that touches it,
//! which dominated a 64 MiB launch. A tmpfs of our own, mounted with `huge=always`, backs
//! the same file with 2 MiB pages whatever that switch says. The mount is detached (never
//! attached to any directory) and made inside a short-lived child in a user namespace of
//! its own, so nothing on the machine changes and no privilege is needed where the kernel
//! allows unprivileged user namespaces; where it does not, the memfd is used as before.

use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;

/// What backs the device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A file on a private `huge=always` tmpfs: 2 MiB pages where the kernel finds them.
    HugeTmpfs,
    /// A memfd: the system's shared-memory page size (4 KiB unless `shmem_enabled` says more).
    Memfd,
}

/// `NRT_POOL_HUGE_PAGES=0` keeps the device memory in a memfd (for comparisons).
pub const HUGE_PAGES_ENV: &str = "NRT_POOL_HUGE_PAGES";

/// A fresh, empty memory file for `len` bytes of device memory, and what backs it: a huge
/// tmpfs file if one can be made (and `NRT_POOL_HUGE_PAGES` is not `0`), else a memfd.
pub fn device_file(len: u64) -> io::Result<(File, Backing)> {
    device_file_with(
        len,
        std::env::var_os(HUGE_PAGES_ENV).is_none_or(|v| v != "0"),
    )
}

/// [`device_file`] with the choice made: huge pages tried only when `huge`.
fn device_file_with(len: u64, huge: bool) -> io::Result<(File, Backing)> {
    if huge {
        if let Ok(file) = huge_tmpfs_file(len) {
            return Ok((file, Backing::HugeTmpfs));
        }
    }
    Ok((memfd(c"nrt-pool-device")?, Backing::Memfd))
}

/// A memfd named `name` (close-on-exec).
pub fn memfd(name: &std::ffi::CStr) -> io::Result<File> {
    // SAFETY: memfd_create with a NUL-terminated name; the File owns the fd from here on.
    unsafe {
        let fd = libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(File::from_raw_fd(fd))
    }
}

// The new mount API (Linux 5.2), from <linux/mount.h>.
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const MOUNT_ATTR_NOSUID: libc::c_uint = 0x2;
const MOUNT_ATTR_NODEV: libc::c_uint = 0x4;

/// Which step of the child's work failed, for the error message.
const STEPS: [&str; 8] = [
    "unshare(CLONE_NEWUSER|CLONE_NEWNS)",
    "writing /proc/self/setgroups",
    "writing /proc/self/uid_map",
    "writing /proc/self/gid_map",
    "fsopen(tmpfs)",
    "fsconfig",
    "fsmount",
    "openat(O_TMPFILE)",
];

/// A file on a fresh detached tmpfs mounted `huge=always,size=len` (rounded up to 2 MiB).
///
/// The mount needs CAP_SYS_ADMIN over a mount namespace; a child process gets it by
/// entering a user namespace of its own (which a threaded process cannot do, hence the
/// child). The child shares this process's file table (CLONE_FILES), so the file it opens
/// is open here too; it reports the descriptor's number, or the step that failed, on a pipe.
fn huge_tmpfs_file(len: u64) -> io::Result<File> {
    let size = len.div_ceil(2 << 20).checked_mul(2 << 20).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "device memory size overflows")
    })?;
    // Everything the child needs is prepared here: after the clone it makes system calls
    // only (another thread of ours may hold the allocator's lock).
    let size_arg = std::ffi::CString::new(size.to_string()).expect("digits have no NUL");
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let uid_map = format!("{uid} {uid} 1");
    let gid_map = format!("{gid} {gid} 1");
    let mut pipe = [0i32; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded; each File owns one end.
    let (reader, writer) = unsafe { (File::from_raw_fd(pipe[0]), File::from_raw_fd(pipe[1])) };
    // SAFETY: a fork-like clone (no new stack: the child runs on a copy of ours) that also
    // shares the file table. The child calls `child` (system calls only) and exits.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_FILES | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        let report = child(&size_arg, Some((uid_map.as_bytes(), gid_map.as_bytes())));
        let bytes = report.to_ne_bytes();
        // SAFETY: a write to our pipe and _exit: async-signal-safe calls.
        unsafe {
            libc::write(
                std::os::fd::AsRawFd::as_raw_fd(&writer),
                bytes.as_ptr().cast(),
                8,
            );
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    while unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } < 0 {
        match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::Interrupted => continue,
            // Reaped by someone else (a SIGCHLD handler of the host program): it has
            // ended, and what it reported is in the pipe.
            e if e.raw_os_error() == Some(libc::ECHILD) => break,
            e => return Err(e),
        }
    }
    // The pipe's write end is the child's too (one file table): close it only now.
    drop(writer);
    let mut bytes = [0u8; 8];
    io::Read::read_exact(&mut &reader, &mut bytes)?;
    let report = i64::from_ne_bytes(bytes);
    if report >= 0 {
        // SAFETY: the child opened this descriptor in our shared file table and left it to us.
        return Ok(unsafe { File::from_raw_fd(report as i32) });
    }
    let (step, errno) = ((-report) >> 32, (-report) & 0xffff_ffff);
    Err(io::Error::new(
        io::Error::from_raw_os_error(errno as i32).kind(),
        format!(
            "huge-page tmpfs: {} failed: {}",
            STEPS.get(step as usize).unwrap_or(&"?"),
            io::Error::from_raw_os_error(errno as i32)
        ),
    ))
}

/// The child's work: the file's descriptor, or -(step << 32 | errno). It shares the
/// parent's file table, so every other descriptor it opens is closed again, whatever
/// happens.
/// `maps`: the user namespace's uid and gid maps, or None to try without one (a process
/// that must not enter one, as a test's).
fn child(size: &std::ffi::CStr, maps: Option<(&[u8], &[u8])>) -> i64 {
    let mut opened = [-1; 2];
    let r = mount_and_open(size, maps, &mut opened);
    for fd in opened.into_iter().filter(|&fd| fd >= 0) {
        // SAFETY: descriptors this child opened and nothing else uses.
        unsafe { libc::close(fd) };
    }
    r
}

/// [`child`]'s steps; the filesystem and mount descriptors it opens go in `opened`.
fn mount_and_open(
    size: &std::ffi::CStr,
    maps: Option<(&[u8], &[u8])>,
    opened: &mut [i32; 2],
) -> i64 {
    let fail = |step: i64| {
        -((step << 32) | i64::from(io::Error::last_os_error().raw_os_error().unwrap_or(0)))
    };
    // SAFETY (whole body): system calls on NUL-terminated constants and buffers we own.
    unsafe {
        // Already privileged over our mount namespace (root): no user namespace needed.
        let mut fs = libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC);
        if fs < 0 {
            let Some((uid_map, gid_map)) = maps else {
                return fail(4);
            };
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                return fail(0);
            }
            for (step, path, text) in [
                (1, c"/proc/self/setgroups", &b"deny"[..]),
                (2, c"/proc/self/uid_map", uid_map),
                (3, c"/proc/self/gid_map", gid_map),
            ] {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return fail(step);
                }
                let written = libc::write(fd, text.as_ptr().cast(), text.len());
                let r = fail(step);
                libc::close(fd);
                if written != text.len() as isize {
                    return r;
                }
            }
            fs = libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC);
            if fs < 0 {
                return fail(4);
            }
        }
        let fs = fs as libc::c_int;
        opened[0] = fs;
        for (key, value) in [(c"huge", c"always"), (c"size", size), (c"mode", c"0700")] {
            let rc = libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_SET_STRING,
                key.as_ptr(),
                value.as_ptr(),
                0,
            );
            if rc != 0 {
                return fail(5);
            }
        }
        if libc::syscall(
            libc::SYS_fsconfig,
            fs,
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        ) != 0
        {
            return fail(5);
        }
        let mnt = libc::syscall(
            libc::SYS_fsmount,
            fs,
            FSMOUNT_CLOEXEC,
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        );
        if mnt < 0 {
            return fail(6);
        }
        opened[1] = mnt as libc::c_int;
        let fd = libc::openat(
            mnt as libc::c_int,
            c".".as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        );
        if fd < 0 {
            return fail(7);
        }
        i64::from(fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    /// Whichever backing this machine gives, the file holds what is written to it and the
    /// memfd fallback always works. Reports loudly when the huge backing is unavailable.
    #[test]
    fn both_backings_hold_data() {
        let m = memfd(c"t").unwrap();
        m.set_len(4 << 20).unwrap();
        m.write_all_at(b"memfd", 3 << 20).unwrap();
        let mut b = [0u8; 5];
        m.read_exact_at(&mut b, 3 << 20).unwrap();
        assert_eq!(&b, b"memfd");
        match huge_tmpfs_file(5 << 20) {
            Ok(f) => {
                f.set_len(5 << 20).unwrap();
                f.write_all_at(b"huge", (4 << 20) + 7).unwrap();
                let mut b = [0u8; 4];
                f.read_exact_at(&mut b, (4 << 20) + 7).unwrap();
                assert_eq!(&b, b"huge");
                // The mount holds the device memory's size, rounded up to 2 MiB, and no more.
                f.write_all_at(&vec![7u8; 6 << 20], 0).unwrap();
                assert!(f.write_all_at(&[1; 4096], 6 << 20).is_err());
            }
            Err(e) => eprintln!("UNSUPPORTED here: huge-page device memory ({e}); memfd used"),
        }
    }

    /// The helper child closes what it opened besides the file (it shares our file table):
    /// no filesystem context stays open here.
    #[test]
    fn the_helper_leaves_no_descriptors_behind() {
        for _ in 0..8 {
            drop(device_file_with(1 << 20, true).unwrap());
        }
        // A step that fails after the filesystem context is open (a size tmpfs refuses),
        // run in this process, never entering a user namespace: where fsopen needs one,
        // it fails earlier and opens nothing.
        assert!(child(c"lots", None) < 0);
        let contexts = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|l| l.to_string_lossy().contains("fscontext"))
            .count();
        assert_eq!(contexts, 0);
    }

    /// Turned off, the memfd is used; turned on, the huge backing exactly where it can be
    /// made (and the file has the asked length either way).
    #[test]
    fn the_choice_is_honoured() {
        let (f, b) = device_file_with(3 << 20, false).unwrap();
        assert_eq!(b, Backing::Memfd);
        f.set_len(3 << 20).unwrap();
        let possible = huge_tmpfs_file(1 << 20).is_ok();
        let (f, b) = device_file_with(3 << 20, true).unwrap();
        assert_eq!(b == Backing::HugeTmpfs, possible);
        f.set_len(3 << 20).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 3 << 20);
    }
}
