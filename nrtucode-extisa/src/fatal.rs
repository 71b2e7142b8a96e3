//! The two ways a call ends the process, as the vendor's does.

use std::io::Write;

/// The vendor's null-argument guard: one line on stderr, then `abort()`.
pub fn null_abort(func: &str, arg: &str) -> ! {
    let _ = writeln!(
        std::io::stderr(),
        "nrtucode: invalid API usage in `{func}`: `{arg}` is null"
    );
    std::process::abort()
}

/// Where the vendor has no guard and dereferences NULL (or calls a NULL table slot), the
/// process dies of SIGSEGV with nothing on stderr. Dereferencing NULL is undefined behaviour
/// in Rust, so the same outcome is produced deliberately (docs/decisions.md, "Unguarded NULL").
pub fn unguarded_null() -> ! {
    // SAFETY: raising a signal and resetting its disposition have no memory-safety
    // preconditions. A real fault whose handler returns faults again on the same
    // instruction; the second, default-disposition raise stands for that. Should even
    // that return (signal blocked), we still must not continue.
    unsafe {
        libc::raise(libc::SIGSEGV);
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::raise(libc::SIGSEGV);
    }
    std::process::abort()
}

/// A Rust panic reached an `extern "C"` boundary: it must not unwind into C.
pub fn panic_abort(func: &str) -> ! {
    let _ = writeln!(
        std::io::stderr(),
        "nrtucode: internal error in `{func}`: unexpected panic, aborting"
    );
    std::process::abort()
}
