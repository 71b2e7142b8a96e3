//! Profiled launches through the launch FFI: `nrt_pool_set_profile` profiles
//! every later launch, `nrt_pool_last_profile` gives the last profiled launch's report as
//! `nrt-pool run --profile` prints it: instructions by function and, on Xtensa cores, the
//! estimated time on a trn1 Pool engine (an estimate with its stated error, D100), and
//! `nrt_pool_last_trace` its trace as `nrt-pool run --trace` writes it (D113).

use std::ffi::c_char;

use nrt_pool_engine::check::CheckReport;
use nrt_pool_open::views::trace_json;
use nrt_pool_open::Pool;

use crate::boundary::{guard, set_error, status, with_engine};
use crate::launch::{NRT_POOL_ERR_ARGUMENT, NRT_POOL_ERR_STATE};

/// Functions the report lists.
const REPORT_FUNCTIONS: usize = 10;

/// A profiled launch as the FFI hands it out.
struct Kept {
    report: String,
    trace: String,
}

thread_local! {
    /// The calling thread's last profiled launch (as `nrt_pool_last_error` is the
    /// calling thread's: two threads launching at once each read their own).
    static LAST: std::cell::RefCell<Option<Kept>> = const { std::cell::RefCell::new(None) };
}

/// Keeps the report and trace of the launch `e` just made (with `check`'s findings), if it
/// was profiled.
pub(crate) fn keep(e: &mut Pool, check: &CheckReport) {
    if let Some(p) = e.take_profile() {
        let kept = Kept {
            report: p.report(REPORT_FUNCTIONS),
            trace: trace_json(Some(&p), Some(check)),
        };
        LAST.with(|l| *l.borrow_mut() = Some(kept));
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
    // SAFETY: the caller's contract, passed on.
    guard(|| unsafe { copy_out("nrt_pool_last_profile", |k| &k.report, buf, cap) })
}

/// Copies the calling thread's last profiled launch's trace (Trace Event JSON, as `nrt-pool
/// run --trace` writes it: a track per core, the kernel and its functions, the tensor
/// copies, the checks' findings) into `buf`, as [`nrt_pool_last_profile`] copies its report.
///
/// # Safety
/// `buf` is writable for `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_last_trace(buf: *mut c_char, cap: usize) -> i64 {
    // SAFETY: the caller's contract, passed on.
    guard(|| unsafe { copy_out("nrt_pool_last_trace", |k| &k.trace, buf, cap) })
}

/// The copy both functions make of what `pick` chooses of the last profiled launch.
///
/// # Safety
/// `buf` is writable for `cap` bytes.
unsafe fn copy_out(
    name: &str,
    pick: impl Fn(&Kept) -> &String,
    buf: *mut c_char,
    cap: usize,
) -> i64 {
    LAST.with(|l| {
        let last = l.borrow();
        let Some(text) = last.as_ref().map(pick) else {
            set_error(
                "no launch was profiled (nrt_pool_set_profile(1) first)",
                false,
            );
            return -i64::from(NRT_POOL_ERR_STATE);
        };
        if cap > 0 {
            if buf.is_null() {
                set_error(format!("{name}: buf is NULL"), false);
                return -i64::from(NRT_POOL_ERR_ARGUMENT);
            }
            let n = text.len().min(cap - 1);
            // SAFETY: the caller's contract: `buf` spans `cap` bytes, and n + 1 <= cap.
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
                *buf.add(n) = 0;
            }
        }
        i64::try_from(text.len()).unwrap_or(i64::MAX)
    })
}
