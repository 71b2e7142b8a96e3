//! The runner's registration role (D114): loads a device-model registration library (the
//! op's shape objects and the build flow's text function, linked with the device-model
//! runtime) and prints what its NEURON_LIBRARY block registered. The shape sources' static
//! constructors run here, in a 32-bit process of their own, as when a core loads an op
//! library: never in the build's process, and with no 32-bit C library of the machine's.

use std::ffi::{c_char, c_int, CStr, CString, OsStr};
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;

use customop_abi::runner::REGISTRATION_SYMBOL;

use super::dlerror_text;

/// The text function's type (see [`REGISTRATION_SYMBOL`]).
type TextFn = unsafe extern "C" fn(*mut c_char, c_int) -> c_int;

/// Why the role printed no registration, on stderr, and the exit `status`.
fn fail_with(why: &[u8], status: i32) -> ! {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(why);
    let _ = e.write_all(b"\n");
    std::process::exit(status)
}

/// A registration library that cannot be used: exit status 3.
fn fail(why: &[u8]) -> ! {
    fail_with(why, 3)
}

/// Prints the registration of `library` on stdout and exits 0; a failed registration's
/// message goes to stderr (exit 2), a library that cannot be loaded says so (exit 3).
pub(super) fn print(library: &OsStr) -> ! {
    let Ok(path) = CString::new(library.as_bytes()) else {
        fail(b"the registration library's path has a NUL byte")
    };
    // SAFETY: dlopen of the library the build flow named; its constructors are the op
    // author's code and run in this process, which exists for them. Lazy: the shape code
    // may name runtime calls it never makes during registration.
    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    if h.is_null() {
        fail(&dlerror_text())
    }
    let symbol = CString::new(REGISTRATION_SYMBOL).expect("no NUL in a constant");
    // SAFETY: a symbol lookup in the handle just opened.
    let f = unsafe { libc::dlsym(h, symbol.as_ptr()) };
    if f.is_null() {
        fail(format!("the registration library has no {REGISTRATION_SYMBOL}").as_bytes())
    }
    // SAFETY: the build flow defines this symbol with TextFn's signature (customop-abi).
    let f: TextFn = unsafe { std::mem::transmute::<*mut libc::c_void, TextFn>(f) };
    let mut buf = vec![0u8; 16 << 10];
    let n = loop {
        let size = c_int::try_from(buf.len()).unwrap_or(c_int::MAX);
        // SAFETY: the function writes at most `size` bytes, NUL included, into `buf`.
        let n = unsafe { f(buf.as_mut_ptr().cast(), size) };
        match usize::try_from(n) {
            Ok(len) if len >= buf.len() && len < (64 << 20) => buf.resize(len + 1, 0),
            _ => break n,
        }
    };
    let text = CStr::from_bytes_until_nul(&buf).map_or(&buf[..], CStr::to_bytes);
    if n < 0 {
        fail_with(text, 2)
    }
    let mut out = std::io::stdout().lock();
    if out.write_all(text).and_then(|()| out.flush()).is_err() {
        std::process::exit(3)
    }
    std::process::exit(0)
}
