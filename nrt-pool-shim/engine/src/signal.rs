//! Unix signals as reports name them: both backends' cores are processes (forked host
//! cores, QEMU for Xtensa cores), and a core that a signal ended is reported by its name.

/// The signal, and what the processor said about it (`si_code`).
pub fn signal_cause(sig: i32, code: i32) -> &'static str {
    match (sig, code) {
        (libc::SIGFPE, 1) => "SIGFPE: integer division by zero",
        (libc::SIGFPE, 2) => "SIGFPE: integer overflow",
        (libc::SIGFPE, 3) => "SIGFPE: floating-point division by zero",
        (libc::SIGFPE, 4) => "SIGFPE: floating-point overflow",
        (libc::SIGFPE, 5) => "SIGFPE: floating-point underflow",
        (libc::SIGFPE, 6) => "SIGFPE: floating-point inexact result",
        (libc::SIGFPE, 7) => "SIGFPE: invalid floating-point operation",
        (libc::SIGILL, _) => "SIGILL: illegal instruction",
        (libc::SIGTRAP, _) => "SIGTRAP: breakpoint or trap instruction",
        (libc::SIGBUS, _) => "SIGBUS: bus error",
        (s, _) => signal_name(s),
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGKILL => "SIGKILL",
        _ => "signal",
    }
}
