//! The one boundary between C callers and the engine: every export runs inside [`guard`]
//! (a panic aborts, never unwinds into C), reaches the engine through [`with_engine`], and
//! reports a failure as a [`Failure`]: one of the header's codes and a message the calling
//! thread reads back with `nrt_pool_last_error`.

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};

use parking_lot::Mutex;

use nrt_pool_engine::EmuError;
use nrt_pool_open::Pool;

/// Runs `f`, turning a panic into an abort: panics never cross the C boundary.
pub(crate) fn guard<R>(f: impl FnOnce() -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| std::process::abort())
}

/// Where the process's runtime is in its life (libnrt's `nrt_init_state`).
pub(crate) enum Lifecycle {
    Uninitialized,
    Initializing,
    Initialized(Box<Pool>),
    Closed,
}

pub(crate) static STATE: Mutex<Lifecycle> = Mutex::new(Lifecycle::Uninitialized);

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::default();
}

/// Records the calling thread's last error (`nrt_pool_last_error`), and says it on stderr
/// when `loud` (the diagnostics the contract promises).
pub(crate) fn set_error(msg: impl Into<String>, loud: bool) {
    let msg = msg.into();
    if loud {
        eprintln!("nrt_pool: {msg}");
    }
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// The calling thread's last error, valid until its next call that records one.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The launch FFI's failure codes (`NRT_POOL_ERR_*`, `NRT_POOL_CHECK_FOUND`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Code {
    State = 1,
    Argument = 2,
    Library = 3,
    Kernel = 4,
    Fault = 5,
    Device = 6,
    CheckFound = 7,
    Engine = 8,
}

/// A call that failed: its code and what the calling thread reads in
/// `nrt_pool_last_error`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Failure {
    pub code: Code,
    pub message: String,
}

impl Failure {
    pub fn new(code: Code, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A bad argument.
    pub fn argument(message: impl Into<String>) -> Failure {
        Failure::new(Code::Argument, message)
    }
}

/// The header's code for each engine error, one arm per variant: a new engine error does
/// not compile until it is given its code here.
///
/// A kernel's (or shape function's) fault is FAULT; an op library that cannot be loaded or
/// whose start code fails (also in a core a launch starts) is LIBRARY; an unknown kernel is
/// KERNEL; what the emulator itself could not do (start cores, a wait interrupted, a
/// debugger stop) is ENGINE; what the caller passed is ARGUMENT, tensors larger than the
/// device memory left included (as before ABI 4).
pub(crate) fn code_of(err: &EmuError) -> Code {
    match err {
        EmuError::Fault(f) if !f.in_kernel() => Code::Library,
        EmuError::Fault(_) => Code::Fault,
        EmuError::UnknownTarget { .. } | EmuError::StaleTarget { .. } => Code::Kernel,
        EmuError::Library(_)
        | EmuError::NoLibrary
        | EmuError::StartFault { .. }
        | EmuError::Entry { .. }
        | EmuError::Registration { .. } => Code::Library,
        EmuError::TooManyArgs { .. }
        | EmuError::Cores(_)
        | EmuError::Signature { .. }
        | EmuError::Tensor(_)
        | EmuError::Argument { .. }
        | EmuError::Shape { .. }
        | EmuError::Output { .. }
        | EmuError::Memory(_) => Code::Argument,
        EmuError::Spawn(_) | EmuError::Debug { .. } | EmuError::Interrupted { .. } => Code::Engine,
    }
}

impl From<EmuError> for Failure {
    /// What a fault printed before it stopped reaches the process's streams first.
    fn from(err: EmuError) -> Failure {
        if let EmuError::Fault(f) | EmuError::StartFault { fault: f, .. } = &err {
            echo(&f.stdout, &f.stderr);
        }
        Failure::new(code_of(&err), err.to_string())
    }
}

/// Op output to the process's streams, byte for byte (best effort, as printf is).
pub(crate) fn echo(stdout: &[u8], stderr: &[u8]) {
    use std::io::Write;
    let mut out = std::io::stdout();
    let _ = out.write_all(stdout);
    let _ = out.flush();
    let _ = std::io::stderr().write_all(stderr);
}

/// The export's return value: 0, or the failure's code with its message recorded.
pub(crate) fn status(r: Result<(), Failure>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(f) => {
            set_error(f.message, false);
            f.code as i32
        }
    }
}

/// Runs `f` on the initialised engine (STATE otherwise).
pub(crate) fn with_engine<R>(
    f: impl FnOnce(&mut Pool) -> Result<R, Failure>,
) -> Result<R, Failure> {
    let mut s = STATE.lock();
    let Lifecycle::Initialized(e) = &mut *s else {
        return Err(Failure::new(
            Code::State,
            "the engine is not initialised (nrt_pool_init)",
        ));
    };
    f(e)
}

/// A caller's C string argument, as UTF-8 (names of kernels, ops, paths and lists).
pub(crate) fn cstr<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::argument(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL C strings from the caller live for the call (C contract).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Failure::argument(format!("{what} is not UTF-8")))
}

/// A caller's C string argument naming a file: its bytes as they are (a path need not be
/// UTF-8).
pub(crate) fn cpath<'a>(p: *const c_char, what: &str) -> Result<&'a std::path::Path, Failure> {
    use std::os::unix::ffi::OsStrExt;
    if p.is_null() {
        return Err(Failure::argument(format!("{what} is NULL")));
    }
    // SAFETY: as for `cstr`.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    Ok(std::path::Path::new(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_pool_engine::tensor::TensorError;

    #[test]
    fn engine_errors_map_to_the_headers_codes() {
        let cases = [
            (EmuError::NoLibrary, Code::Library),
            (
                EmuError::UnknownTarget {
                    name: "k".into(),
                    kind: "kernel",
                    known: vec![],
                },
                Code::Kernel,
            ),
            (EmuError::Cores(9), Code::Argument),
            (
                EmuError::Memory(nrt_pool_engine::memory::MemoryError::HbmFull {
                    want: 1 << 40,
                    left: 0,
                }),
                Code::Argument,
            ),
            (EmuError::Tensor(TensorError::Rank(0)), Code::Argument),
            (
                EmuError::Spawn(std::io::Error::other("no fork")),
                Code::Engine,
            ),
            (
                EmuError::Interrupted {
                    what: "the launch".into(),
                },
                Code::Engine,
            ),
        ];
        for (err, want) in cases {
            assert_eq!(code_of(&err), want, "{err}");
            let f = Failure::from(err);
            assert_eq!(f.code, want);
            assert!(!f.message.is_empty());
        }
    }

    #[test]
    fn a_failure_is_recorded_for_the_calling_thread_only() {
        assert_eq!(status(Err(Failure::argument("slot 3 is NULL"))), 2);
        // SAFETY: the thread's last error is a NUL-terminated string.
        let mine = unsafe { CStr::from_ptr(last_error_ptr()) }.to_owned();
        assert_eq!(mine.to_str().unwrap(), "slot 3 is NULL");
        let other = std::thread::spawn(|| {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(last_error_ptr()) }.to_bytes().len()
        });
        assert_eq!(other.join().unwrap(), 0);
        assert_eq!(status(Ok(())), 0);
    }
}
