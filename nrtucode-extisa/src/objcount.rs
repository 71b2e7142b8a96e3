//! The live-object counter and the at-exit teardown check. Contexts, cores and loadable
//! libraries count; opsets do not (as in the vendor library).

use std::io::Write;
use std::sync::atomic::{AtomicI64, Ordering};

static OBJCOUNT: AtomicI64 = AtomicI64::new(0);

pub fn created() {
    OBJCOUNT.fetch_add(1, Ordering::Relaxed);
}

pub fn destroyed() {
    OBJCOUNT.fetch_sub(1, Ordering::Relaxed);
}

pub fn live() -> i64 {
    OBJCOUNT.load(Ordering::Relaxed)
}

/// The shipped build's exit message (0x4f bytes with its newline). The shipped build is
/// silent about leaks; only a negative count is reported.
pub const DOUBLE_FREE_MESSAGE: &str =
    "nrtucode: internal error: object(s) double-freed, improper teardown of library\n";
const _: () = assert!(DOUBLE_FREE_MESSAGE.len() == 0x4f);

/// What the exit check prints for a final count: only a negative count is reported.
pub fn exit_report(count: i64) -> Option<&'static str> {
    (count < 0).then_some(DOUBLE_FREE_MESSAGE)
}

extern "C" fn check_at_exit() {
    if let Some(msg) = exit_report(live()) {
        let _ = std::io::stderr().write_all(msg.as_bytes());
    }
}

extern "C" fn register_exit_check() {
    // SAFETY: atexit with a plain extern "C" fn that never unwinds.
    unsafe {
        libc::atexit(check_at_exit);
    }
}

// Runs at load time like the vendor's constructor: the counter starts at 0 (its static
// initialiser) and the exit check is registered.
#[used]
#[link_section = ".init_array"]
static REGISTER_EXIT_CHECK: extern "C" fn() = register_exit_check;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_negative_count_is_reported_at_exit() {
        assert_eq!(exit_report(-1), Some(DOUBLE_FREE_MESSAGE));
        assert_eq!(exit_report(0), None);
        assert_eq!(
            exit_report(3),
            None,
            "the shipped build is silent about leaks"
        );
    }
}
