//! `libnrt_pool_shim.so`: the emulated Pool engine's C interface (`include/nrt_pool.h`),
//! `nrt_set_pool_eng_ucode` and the versioned launch FFI, and nothing else.
//!
//! [`seam`] is libnrt's `nrt_set_pool_eng_ucode` and the engine's lifecycle; [`launch`] is
//! the launch FFI for C/C++ runtimes. The engine state both share lives here.

pub mod checks;
pub mod launch;
pub mod profile;
pub mod seam;

use parking_lot::Mutex;

use nrt_pool_engine::PoolEngine;

/// Runs `f`, turning a panic into an abort: panics never cross the C boundary.
pub(crate) fn guard<R>(f: impl FnOnce() -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| std::process::abort())
}

/// Where the process's runtime is in its life (libnrt's `nrt_init_state`).
pub(crate) enum Lifecycle {
    Uninitialized,
    Initializing,
    Initialized(Box<PoolEngine>),
    Closed,
}

pub(crate) static STATE: Mutex<Lifecycle> = Mutex::new(Lifecycle::Uninitialized);

thread_local! {
    static LAST_ERROR: std::cell::RefCell<std::ffi::CString> = Default::default();
}

/// Records the calling thread's last error (`nrt_pool_last_error`), and says it on stderr
/// when `loud` (the diagnostics the contract promises).
pub(crate) fn set_error(msg: impl Into<String>, loud: bool) {
    let msg = msg.into();
    if loud {
        eprintln!("nrt_pool: {msg}");
    }
    let c = std::ffi::CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

pub(crate) fn last_error_ptr() -> *const std::ffi::c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
