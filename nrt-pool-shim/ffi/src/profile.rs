//! Profiled launches through the launch FFI: `nrt_pool_set_profile` profiles
//! every later launch, `nrt_pool_last_profile` gives the last profiled launch's report as
//! `nrt-pool run --profile` prints it: instructions by function and, on Xtensa cores, the
//! estimated time on a trn1 Pool engine (an estimate with its stated error, D100).

use std::ffi::c_char;

use nrt_pool_open::Pool;

use crate::boundary::{guard, set_error, status, with_engine};
use crate::launch::{NRT_POOL_ERR_ARGUMENT, NRT_POOL_ERR_STATE};

/// Functions the report lists.
const REPORT_FUNCTIONS: usize = 10;

thread_local! {
    /// The calling thread's last profiled launch's report (as `nrt_pool_last_error` is the
    /// calling thread's: two threads launching at once each read their own).
    static LAST: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Keeps the report of the launch `e` just made, if it was profiled.
pub(crate) fn keep(e: &mut Pool) {
    if let Some(p) = e.take_profile() {
        let report = p.report(REPORT_FUNCTIONS);
        LAST.with(|l| *l.borrow_mut() = Some(report));
    }
}

/// Profiles every later launch (`on` nonzero) or none (0, the default).
#[no_mangle]
pub extern "C" fn nrt_pool_set_profile(on: i32) -> i32 {
    guard(|| {
        status(with_engine(|e| {
            e.defaults.profile = on != 0;
            Ok(())
        }))
    })
}

/// Copies the calling thread's last profiled launch's report into `buf` (`cap` bytes, NUL-terminated, cut
/// to fit) and returns the report's length in bytes without the NUL: a call with `cap` 0
/// sizes the buffer. `-NRT_POOL_ERR_STATE` when no launch was profiled yet,
/// `-NRT_POOL_ERR_ARGUMENT` for a NULL `buf` with a nonzero `cap`.
///
/// # Safety
/// `buf` is writable for `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_last_profile(buf: *mut c_char, cap: usize) -> i64 {
    guard(|| {
        let last = LAST.with(|l| l.borrow().clone());
        let Some(report) = last.as_deref() else {
            set_error(
                "no launch was profiled (nrt_pool_set_profile(1) first)",
                false,
            );
            return -i64::from(NRT_POOL_ERR_STATE);
        };
        if cap > 0 {
            if buf.is_null() {
                set_error("nrt_pool_last_profile: buf is NULL", false);
                return -i64::from(NRT_POOL_ERR_ARGUMENT);
            }
            let n = report.len().min(cap - 1);
            // SAFETY: the caller's contract: `buf` spans `cap` bytes, and n + 1 <= cap.
            unsafe {
                std::ptr::copy_nonoverlapping(report.as_ptr(), buf.cast::<u8>(), n);
                *buf.add(n) = 0;
            }
        }
        i64::try_from(report.len()).unwrap_or(i64::MAX)
    })
}
