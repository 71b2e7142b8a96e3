//! Context lifecycle: the API-level gate, the log scratch buffer and the two tables.

use core::ffi::c_void;
use core::ptr::{self, NonNull};

use crate::abi::{nrtucode_platform_memhandle_t, nrtucode_platform_rw_t, NRTUCODE_API_LEVEL};
use crate::error::{Error, Result};
use crate::handles::{free_object, malloc_object, nrtucode_context_t};
use crate::objcount;
use crate::platform::{Ctx, MEMHANDLE_NOT_ATTACHED};

/// Initial size of the log scratch buffer.
pub const LOG_SCRATCH_INITIAL: usize = 0x200;

/// `context_create` after its null guards: the level gate, then malloc(0x28) and the
/// 0x200-byte scratch buffer.
pub fn create(api_level: u32, rw_impl: NonNull<nrtucode_platform_rw_t>) -> Result<Ctx> {
    if api_level != NRTUCODE_API_LEVEL {
        return Err(Error::Version);
    }
    let ctx = malloc_object(nrtucode_context_t {
        rw_impl: rw_impl.as_ptr(),
        memhandle_impl: &MEMHANDLE_NOT_ATTACHED,
        userdata: ptr::null_mut(),
        log_scratch_size: LOG_SCRATCH_INITIAL as u64,
        log_scratch: ptr::null_mut(),
    })
    .ok_or(Error::Allocation)?;
    // SAFETY: fresh object from malloc_object.
    let ctx = unsafe { Ctx::from_raw(ctx) };
    // SAFETY: plain malloc.
    let scratch = unsafe { libc::malloc(LOG_SCRATCH_INITIAL) };
    if scratch.is_null() {
        free_object(ctx);
        return Err(Error::Allocation);
    }
    ctx.update(|c| c.log_scratch = scratch.cast());
    objcount::created();
    Ok(ctx)
}

/// `context_destroy`: frees the scratch buffer, then the context. Tables and child objects
/// are the caller's.
pub fn destroy(ctx: Ctx) {
    let scratch = ctx.get(|c| c.log_scratch);
    // SAFETY: the scratch buffer was malloc'd (or realloc'd) by this context.
    unsafe { libc::free(scratch.cast()) };
    free_object(ctx);
    objcount::destroyed();
}

/// Stored as given, without validation (a NULL table faults on first use).
pub fn set_memhandle_impl(ctx: Ctx, table: *const nrtucode_platform_memhandle_t) {
    ctx.update(|c| c.memhandle_impl = table);
}

pub fn userdata(ctx: Ctx) -> *mut c_void {
    ctx.get(|c| c.userdata)
}

pub fn set_userdata(ctx: Ctx, ud: *mut c_void) {
    ctx.update(|c| c.userdata = ud);
}
