//! The `context_` family.

use core::ffi::c_void;
use core::ptr;

use super::boundary::ffi_boundary;
use super::put;
use crate::abi::*;
use crate::context;
use crate::error::result_code;
use crate::handles::nrtucode_context_t;

/// Creates a context bound to the caller's rw table. `api_level` must be 3.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_context_create(
    api_level: u32,
    rw_impl: *const nrtucode_platform_rw_t,
    out: *mut *mut nrtucode_context_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let rw_impl = call.non_null(rw_impl.cast_mut(), "rw_impl");
        let out = call.non_null(out, "out");
        put(out, ptr::null_mut());
        result_code(context::create(api_level, rw_impl).map(|c| put(out, c.as_ptr())))
    })
}

/// Frees the context. Its tables and child objects are not touched.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_context_destroy(
    ctx: *mut nrtucode_context_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        context::destroy(super::ctx(call.non_null(ctx, "ctx")));
        NRTUCODE_SUCCESS
    })
}

/// Installs the caller's memhandle table (stored as given).
#[no_mangle]
pub unsafe extern "C" fn nrtucode_context_set_memhandle_impl(
    ctx: *mut nrtucode_context_t,
    memhandle_impl: *const nrtucode_platform_memhandle_t,
) {
    ffi_boundary!(call => {
        context::set_memhandle_impl(super::ctx(call.non_null(ctx, "ctx")), memhandle_impl)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_context_get_userdata(
    ctx: *mut nrtucode_context_t,
) -> *mut c_void {
    ffi_boundary!(call => context::userdata(super::ctx(call.non_null(ctx, "ctx"))))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_context_set_userdata(
    ctx: *mut nrtucode_context_t,
    userdata: *mut c_void,
) {
    ffi_boundary!(call => context::set_userdata(super::ctx(call.non_null(ctx, "ctx")), userdata))
}
