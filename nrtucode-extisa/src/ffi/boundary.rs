//! The one boundary every `extern "C"` entry point goes through: it names the function for
//! null-argument aborts and keeps panics from unwinding into C.

use core::ptr::NonNull;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::fatal::{null_abort, panic_abort, unguarded_null};

/// Identifies the exported function currently executing.
#[derive(Clone, Copy)]
pub struct Call {
    path: &'static str,
}

impl Call {
    /// `path` is the `type_name` of a marker fn nested in the export (see `ffi_boundary!`).
    pub fn new(path: &'static str) -> Self {
        Call { path }
    }

    /// The export's name, e.g. `nrtucode_core_destroy`.
    pub fn name(self) -> &'static str {
        let p = self.path.strip_suffix("::__marker").unwrap_or(self.path);
        p.rsplit("::").next().unwrap_or(p)
    }

    /// The vendor's guard: NULL aborts with "`arg` is null" naming this function.
    pub fn non_null<T>(self, p: *mut T, arg: &str) -> NonNull<T> {
        NonNull::new(p).unwrap_or_else(|| null_abort(self.name(), arg))
    }

    /// A pointer the vendor dereferences without a guard: NULL ends in SIGSEGV.
    pub fn unguarded<T>(self, p: *mut T) -> NonNull<T> {
        NonNull::new(p).unwrap_or_else(|| unguarded_null())
    }
}

/// Runs `f`, turning a panic into a message and `abort()` rather than unwinding into C.
pub fn catch<R>(name: &str, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => panic_abort(name),
    }
}

/// `ffi_boundary!(call => body)`: binds `call` (a [`Call`] naming the enclosing export) and
/// evaluates `body` under the panic guard.
macro_rules! ffi_boundary {
    ($call:ident => $body:expr) => {{
        fn __marker() {}
        let $call = $crate::ffi::boundary::Call::new(::core::any::type_name_of_val(&__marker));
        $crate::ffi::boundary::catch($call.name(), || $body)
    }};
}
pub(crate) use ffi_boundary;

#[cfg(test)]
mod tests {
    #[test]
    fn call_names_the_enclosing_function() {
        fn nrtucode_example() -> &'static str {
            ffi_boundary!(call => call.name())
        }
        assert_eq!(nrtucode_example(), "nrtucode_example");
    }
}
