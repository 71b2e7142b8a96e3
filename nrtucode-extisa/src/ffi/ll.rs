//! The `ll_` family.

use crate::platform::PlatformObject;
use core::ffi::c_char;
use core::ptr;

use super::boundary::{ffi_boundary, Call};
use super::put;
use crate::abi::*;
use crate::error::result_code;
use crate::handles::{nrtucode_context_t, nrtucode_core_t, nrtucode_loadable_library_t};
use crate::images;
use crate::ll::{self, Direction};

/// The libraries an opcode list needs. The lists are not inspected: any non-empty list
/// yields one library (0, or 3 with the CPTC switch on Cayman and later).
#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_get_libraries_from_opcodes(
    ct: nrtucode_coretype_t,
    opcodes: *const u8,
    num_opcodes: usize,
    subopcodes: *const u8,
    num_subopcodes: usize,
    libs: *mut usize,
    num_libs: *mut usize,
) -> nrtucode_result_t {
    let _ = (opcodes, subopcodes, num_subopcodes); // never read, as in the vendor library
    ffi_boundary!(call => {
        let libs = call.non_null(libs, "libs");
        let num_libs = call.non_null(num_libs, "num_libs");
        put(num_libs, 0);
        result_code(images::libraries_from_opcodes(ct, num_opcodes).map(|lib| {
            if let Some(lib) = lib {
                put(libs, lib);
                put(num_libs, 1);
            }
        }))
    })
}

/// Resolves library `library` of a Q7 POOL coretype and stages it on the device.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_create(
    ctx: *mut nrtucode_context_t,
    ct: nrtucode_coretype_t,
    flavor: nrtucode_flavors_t,
    library: u64,
    out_ll: *mut *mut nrtucode_loadable_library_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let ctx = super::ctx(call.non_null(ctx, "ctx"));
        let out = call.non_null(out_ll, "out_ll");
        put(out, ptr::null_mut());
        result_code(ll::create(ctx, ct, flavor, library).map(|l| put(out, l.as_ptr())))
    })
}

/// Frees the staged device buffer (if any) and the handle.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_destroy(
    ll: *mut nrtucode_loadable_library_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        ll::destroy(super::ll(call.non_null(ll, "ll")));
        NRTUCODE_SUCCESS
    })
}

fn num_instrs(
    call: Call,
    ll: *mut nrtucode_loadable_library_t,
    core: *mut nrtucode_core_t,
    dir: Direction,
) -> usize {
    let ll = super::ll(call.non_null(ll, "ll"));
    let core = super::core(call.non_null(core, "core"));
    ll::num_instrs(ll, core, dir)
}

/// Records the load sequence needs: 1, or 8 (with a logged check failure) when `ll` and
/// `core` belong to different contexts.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_get_load_sequence_num_instrs(
    ll: *mut nrtucode_loadable_library_t,
    core: *mut nrtucode_core_t,
) -> usize {
    ffi_boundary!(call => num_instrs(call, ll, core, Direction::Load))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_get_unload_sequence_num_instrs(
    ll: *mut nrtucode_loadable_library_t,
    core: *mut nrtucode_core_t,
) -> usize {
    ffi_boundary!(call => num_instrs(call, ll, core, Direction::Unload))
}

unsafe fn sequence(
    call: Call,
    dir: Direction,
    ll: *mut nrtucode_loadable_library_t,
    core: *mut nrtucode_core_t,
    max_instrs: usize,
    instr_buf: *mut c_char,
    num_instrs_pushed: *mut usize,
) -> nrtucode_result_t {
    let ll = super::ll(call.non_null(ll, "ll"));
    let core = super::core(call.non_null(core, "core"));
    let buf = call.non_null(instr_buf, "instr_buf");
    let pushed = call.non_null(num_instrs_pushed, "num_instrs_pushed");
    let emitted = ll::sequence(
        ll,
        core,
        dir,
        max_instrs,
        buf.as_ptr() as usize,
        call.name(),
        |records| {
            // SAFETY: the caller's buffer holds `max_instrs` records of 0x40 bytes and
            // `records` is at most that long (the capacity check passed).
            unsafe {
                ptr::copy_nonoverlapping(records.as_ptr(), buf.as_ptr().cast::<u8>(), records.len())
            }
        },
    );
    result_code(emitted.map(|n| put(pushed, n)))
}

/// Emits the 0x40-byte push records that load the library into `core`'s Pool engine.
/// `instr_buf` must be 8-byte aligned and hold `max_instrs` records.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_get_load_sequence(
    ll: *mut nrtucode_loadable_library_t,
    core: *mut nrtucode_core_t,
    max_instrs: usize,
    instr_buf: *mut c_char,
    num_instrs_pushed: *mut usize,
) -> nrtucode_result_t {
    // SAFETY: the C contract of this export, forwarded.
    ffi_boundary!(call => unsafe {
        sequence(call, Direction::Load, ll, core, max_instrs, instr_buf, num_instrs_pushed)
    })
}

/// Emits the push records that unload the library (device address and size are 0).
#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_get_unload_sequence(
    ll: *mut nrtucode_loadable_library_t,
    core: *mut nrtucode_core_t,
    max_instrs: usize,
    instr_buf: *mut c_char,
    num_instrs_pushed: *mut usize,
) -> nrtucode_result_t {
    // SAFETY: the C contract of this export, forwarded.
    ffi_boundary!(call => unsafe {
        sequence(call, Direction::Unload, ll, core, max_instrs, instr_buf, num_instrs_pushed)
    })
}

/// Renames the library handle (at most 0x20 bytes kept). No NULL guard.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_set_friendly_name(
    ll: *mut nrtucode_loadable_library_t,
    name: *const c_char,
) {
    ffi_boundary!(call => {
        let ll = super::ll(call.unguarded(ll));
        ll.rename(call.unguarded(name.cast_mut()))
    })
}

/// Bytes staged on the device (0 for SUNDA). No NULL guard.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_ll_get_library_size(
    ll: *mut nrtucode_loadable_library_t,
) -> usize {
    ffi_boundary!(call => super::ll(call.unguarded(ll)).get(|l| l.prelinked_size as usize))
}
