//! The exported C API: 52 `extern "C"` shims in five families. Each converts its arguments
//! (null guards exactly where the vendor has them), calls the safe core and maps the result.
//!
//! Safety contract of every export (the C API's, as the vendor's): a non-NULL handle is a
//! live object of this library, buffers are valid for the lengths passed, and strings are
//! NUL-terminated. NULL is handled exactly as documented per function.
#![allow(clippy::missing_safety_doc)]

pub mod boundary;
pub mod context;
pub mod core;
pub mod get;
pub mod ll;
pub mod opset;

use ::core::ptr::NonNull;

use crate::core::Core;
use crate::ll::Ll;
use crate::opset::Opset;
use crate::platform::Ctx;

// SAFETY (all four): the C contract: a non-NULL handle argument is a live object this
// library created and the caller has not destroyed.
pub(crate) fn ctx(p: NonNull<crate::handles::nrtucode_context_t>) -> Ctx {
    unsafe { Ctx::from_raw(p) }
}
pub(crate) fn core(p: NonNull<crate::handles::nrtucode_core_t>) -> Core {
    unsafe { Core::from_raw(p) }
}
pub(crate) fn ll(p: NonNull<crate::handles::nrtucode_loadable_library_t>) -> Ll {
    unsafe { Ll::from_raw(p) }
}
pub(crate) fn opset(p: NonNull<crate::handles::nrtucode_opset_t>) -> Opset {
    unsafe { Opset::from_raw(p) }
}

/// Stores `v` through a caller's out pointer.
pub(crate) fn put<T>(out: NonNull<T>, v: T) {
    // SAFETY: `out` is a non-NULL out argument the caller provides for writing.
    unsafe { out.as_ptr().write_unaligned(v) }
}
