//! 32-bit core processes (D97). A library built in the device's data model (i386: 32-bit
//! `long`, `size_t` and pointers, the device's libc and libc++) cannot be loaded by a
//! 64-bit host, so its cores run in a process of their own architecture: the engine forks
//! as for any core, and the child execs the core runner (`nrt-pool-core`, this crate built
//! for i686), handing over what a forked core inherits: the device memory file, the core's
//! socket end and stderr capture, its doorbell position and the library's path. The runner
//! maps the same device memory and serves the core exactly as a forked core does.

use std::ffi::{CStr, CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use super::{probe_child, serve, Program, ENGINE_BASE, FAULT_EXIT};
use customop_abi::runner::REGISTRATION_ROLE;
use nrt_pool_engine::memory::DeviceMemory;
use nrt_pool_engine::memory::CORES;
use std::ffi::c_char;
use std::sync::atomic::Ordering;

/// What the runner is asked to be: the load-time probe, or a core serving launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Probe,
    Serve { core: usize, seen: u32 },
}

pub use nrt_pool_engine::elf_ident::is_i386_library;

pub use customop_abi::runner::PROTOCOL;

/// The variable that names the core runner (front ends may pass another).
pub const CORE_RUNNER_ENV: &str = "NRT_POOL_CORE_RUNNER";

/// `path` as the C string forked cores exec, kept for the process's life (one per engine).
pub fn leak_path(path: &std::path::Path) -> Option<&'static CStr> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    Some(&*Box::leak(c.into_boxed_c_str()))
}

/// `$NRT_POOL_CORE_RUNNER`, else the runner `make core-runner` put in the build tree this
/// crate was built in, if it is there.
pub fn default_runner() -> Option<&'static CStr> {
    static RUNNER: std::sync::OnceLock<Option<&'static CStr>> = std::sync::OnceLock::new();
    *RUNNER.get_or_init(|| {
        let path = std::env::var_os(CORE_RUNNER_ENV)
            .map(std::path::PathBuf::from)
            .or_else(|| {
                let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../target/customop/i386-device/nrt-pool-core");
                built.is_file().then_some(built)
            })?;
        leak_path(&path)
    })
}

/// Lets `fd` pass into an exec'd program.
fn keep_across_exec(fd: i32) {
    // SAFETY: fcntl on a descriptor of this (forked, single-threaded) process.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
        }
    }
}

/// In a freshly forked core process: becomes the runner at `runner` for `role`. Returns
/// only if the exec failed (the caller then ends the process).
pub(crate) fn exec(
    runner: &CStr,
    role: Role,
    p: &Program<'_>,
    stderr: i32,
    keep: &[i32],
) -> std::io::Error {
    let mem_fd = p.memory.file().as_raw_fd();
    for fd in [mem_fd, stderr].iter().chain(keep) {
        keep_across_exec(*fd);
    }
    // An in-memory image is opened through /proc/self/fd/N: N must reach the runner too.
    if let Some(n) = p
        .library
        .to_bytes()
        .strip_prefix(b"/proc/self/fd/")
        .and_then(|n| std::str::from_utf8(n).ok()?.parse::<i32>().ok())
    {
        keep_across_exec(n);
    }
    let (role_arg, core, seen) = match role {
        Role::Probe => ("probe", 0, 0),
        Role::Serve { core, seen } => ("serve", core, seen),
    };
    let args: Vec<CString> = [
        runner.to_bytes().to_vec(),
        PROTOCOL.into(),
        role_arg.into(),
        core.to_string().into_bytes(),
        seen.to_string().into_bytes(),
        stderr.to_string().into_bytes(),
        mem_fd.to_string().into_bytes(),
        p.memory.hbm_size().0.to_string().into_bytes(),
        p.memory.hbm_size().1.to_string().into_bytes(),
        p.memory.base().to_string().into_bytes(),
        p.library.to_bytes().to_vec(),
    ]
    .into_iter()
    .map(|a| CString::new(a).expect("no NUL: numbers and C strings"))
    .collect();
    let mut argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: a NUL-terminated path and a NULL-terminated vector of C strings that live
    // across the call; on success this process image is replaced.
    unsafe { libc::execv(runner.as_ptr(), argv.as_ptr()) };
    std::io::Error::last_os_error()
}

/// What a runner's command line says, or why it cannot be read.
#[derive(Debug, PartialEq, Eq)]
pub struct RunnerArgs {
    pub role: Role,
    pub stderr: i32,
    pub memory_fd: i32,
    pub hbm_size: u64,
    pub reserved: u64,
    /// Where the engine maps the device memory (fault addresses are reported there).
    pub engine_base: u64,
    pub library: CString,
}

impl RunnerArgs {
    /// Reads `PROTOCOL ROLE CORE SEEN STDERR_FD MEMORY_FD HBM_SIZE RESERVED ENGINE_BASE
    /// LIBRARY` (after the program).
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<RunnerArgs, String> {
        let mut args: Vec<Vec<u8>> = args.into_iter().map(OsStringExt::into_vec).collect();
        if args.first().map(Vec::as_slice) != Some(PROTOCOL.as_bytes()) {
            return Err(format!(
                "started by an engine of another build (this runner speaks {PROTOCOL}): \
                 rebuild the runner with the engine (make core-runner)"
            ));
        }
        args.remove(0);
        let [role, core, seen, stderr, memory_fd, hbm_size, reserved, engine_base, library] =
            <[Vec<u8>; 9]>::try_from(args)
                .map_err(|a| format!("expected 9 arguments, got {}", a.len()))?;
        fn number<T: std::str::FromStr>(what: &str, b: &[u8]) -> Result<T, String> {
            std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("{what}: not a number: {}", String::from_utf8_lossy(b)))
        }
        let core: usize = number("core", &core)?;
        if core >= CORES {
            return Err(format!("core {core}: a Pool engine has {CORES}"));
        }
        let role = match role.as_slice() {
            b"probe" => Role::Probe,
            b"serve" => Role::Serve {
                core,
                seen: number("doorbell sequence", &seen)?,
            },
            other => return Err(format!("unknown role {}", String::from_utf8_lossy(other))),
        };
        Ok(RunnerArgs {
            role,
            stderr: number("stderr descriptor", &stderr)?,
            memory_fd: number("memory descriptor", &memory_fd)?,
            hbm_size: number("HBM size", &hbm_size)?,
            reserved: number("reserved HBM", &reserved)?,
            engine_base: number("engine's memory base", &engine_base)?,
            library: CString::new(library).map_err(|_| "the library path has a NUL byte")?,
        })
    }
}

/// The runner program's body: maps the device memory the engine handed over and becomes
/// the core it was asked to be. Never returns; a runner that cannot start says why on its
/// stderr capture and exits with [`FAULT_EXIT`] (the host reports the core's end).
pub fn runner_main() -> ! {
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    if let [protocol, role, library] = argv.as_slice() {
        if protocol == PROTOCOL && role == REGISTRATION_ROLE {
            super::registration::print(library)
        }
    }
    let args = match RunnerArgs::parse(argv.clone()) {
        Ok(a) => a,
        Err(why) => {
            let line =
                format!("nrt-pool-core: {why} (this program is started by the Pool engine)\n");
            // Into the core's stderr capture where the arguments name one (the engine
            // reports it with the core's end), else to our own stderr.
            let fd = argv
                .get(4)
                .and_then(|a| a.to_str()?.parse::<i32>().ok())
                .unwrap_or(2);
            // SAFETY: a write of a local buffer to a descriptor of this process.
            unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
            std::process::exit(2);
        }
    };
    // SAFETY: the engine passed this descriptor, open on its device memory file, for this
    // process to own.
    let file = unsafe { std::fs::File::from_raw_fd(args.memory_fd) };
    let memory = match DeviceMemory::attach(file, args.hbm_size, args.reserved) {
        Ok(m) => Box::leak(Box::new(m)),
        Err(e) => {
            let line = format!("nrt-pool-core: cannot map the device memory: {e}\n");
            // SAFETY: writes a local buffer to the core's stderr capture.
            unsafe { libc::write(args.stderr, line.as_ptr().cast(), line.len()) };
            std::process::exit(FAULT_EXIT);
        }
    };
    let library: &'static CStr = Box::leak(args.library.into_boxed_c_str());
    ENGINE_BASE.store(args.engine_base, Ordering::Relaxed);
    let p = Program {
        memory,
        library,
        runner: None,
    };
    match args.role {
        Role::Probe => probe_child(&p, args.stderr),
        Role::Serve { core, seen } => serve(core, &p, seen, args.stderr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn runner_arguments_round_trip_and_refuse_what_is_wrong() {
        let a = RunnerArgs::parse(args(&[
            PROTOCOL,
            "serve",
            "3",
            "17",
            "9",
            "10",
            "123",
            "45",
            "4096",
            "/x/libop.so",
        ]));
        assert_eq!(
            a,
            Ok(RunnerArgs {
                role: Role::Serve { core: 3, seen: 17 },
                stderr: 9,
                memory_fd: 10,
                hbm_size: 123,
                reserved: 45,
                engine_base: 4096,
                library: c"/x/libop.so".into(),
            })
        );
        assert!(RunnerArgs::parse(args(&[
            PROTOCOL, "serve", "8", "0", "9", "10", "1", "0", "0", "/l"
        ]))
        .unwrap_err()
        .contains("core 8"));
        assert!(RunnerArgs::parse(args(&[
            PROTOCOL, "probe", "0", "0", "x", "10", "1", "0", "0", "/l"
        ]))
        .unwrap_err()
        .contains("stderr descriptor"));
        assert!(RunnerArgs::parse(args(&[PROTOCOL, "serve"]))
            .unwrap_err()
            .contains("9 arguments"));
        assert!(RunnerArgs::parse(args(&["nrt-pool-core/1", "serve"]))
            .unwrap_err()
            .contains("another build"));
        assert!(RunnerArgs::parse(args(&[
            PROTOCOL, "run", "0", "0", "1", "2", "3", "0", "0", "/l"
        ]))
        .unwrap_err()
        .contains("unknown role"));
    }

    #[test]
    fn only_32_bit_x86_elf_files_are_i386_libraries() {
        let dir = tempfile::tempdir().unwrap();
        let mut head = [0u8; 64];
        head[..4].copy_from_slice(b"\x7fELF");
        head[4] = 1;
        head[5] = 1;
        head[18] = 3;
        let f = dir.path().join("a.so");
        std::fs::write(&f, head).unwrap();
        let c = |p: &std::path::Path| CString::new(p.as_os_str().as_bytes()).unwrap();
        assert!(is_i386_library(&c(&f)));
        head[4] = 2;
        head[18] = 62;
        std::fs::write(&f, head).unwrap();
        assert!(!is_i386_library(&c(&f)));
        assert!(!is_i386_library(&c(&dir.path().join("missing.so"))));
    }
}
