//! The `core_` family.

use crate::platform::PlatformObject;
use core::ffi::{c_char, c_void};
use core::ptr;

use super::boundary::ffi_boundary;
use super::put;
use crate::abi::*;
use crate::core::{self as core_, claim, dge, logs};
use crate::error::result_code;
use crate::handles::{nrtucode_context_t, nrtucode_core_t};

/// Creates a core handle. No device I/O; the coretype is stored unvalidated.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_create(
    ctx: *mut nrtucode_context_t,
    ct: nrtucode_coretype_t,
    iram_base: u64,
    dram_base: u64,
    apb_base: u64,
    out: *mut *mut nrtucode_core_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let ctx = super::ctx(call.non_null(ctx, "ctx"));
        let out = call.non_null(out, "out");
        put(out, ptr::null_mut());
        result_code(
            core_::create(ctx, ct, iram_base, dram_base, apb_base).map(|c| put(out, c.as_ptr())),
        )
    })
}

/// Turns logs off, releases the claim if taken, frees the handle.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_destroy(core: *mut nrtucode_core_t) -> nrtucode_result_t {
    ffi_boundary!(call => {
        core_::destroy(super::core(call.non_null(core, "core")));
        NRTUCODE_SUCCESS
    })
}

/// The claim handshake with freshly booted firmware. `flavor` is accepted and unused.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_on_ucode_booted(
    core: *mut nrtucode_core_t,
    flavor: nrtucode_flavors_t,
) -> nrtucode_result_t {
    let _ = flavor; // libnrt passes DEFAULT; the provider never reads it.
    ffi_boundary!(call => result_code(claim::on_ucode_booted(super::core(call.non_null(core, "core")))))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_get_context(
    core: *mut nrtucode_core_t,
) -> *mut nrtucode_context_t {
    ffi_boundary!(call => super::core(call.non_null(core, "core")).get(|c| c.context))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_get_userdata(core: *mut nrtucode_core_t) -> *mut c_void {
    ffi_boundary!(call => super::core(call.non_null(core, "core")).get(|c| c.userdata))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_set_userdata(
    core: *mut nrtucode_core_t,
    userdata: *mut c_void,
) {
    ffi_boundary!(call => super::core(call.non_null(core, "core")).update(|c| c.userdata = userdata))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_get_coretype(
    core: *mut nrtucode_core_t,
) -> nrtucode_coretype_t {
    ffi_boundary!(call => super::core(call.non_null(core, "core")).get(|c| c.coretype))
}

/// Renames the core (at most 0x20 bytes are kept). No NULL guard.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_set_friendly_name(
    core: *mut nrtucode_core_t,
    name: *const c_char,
) {
    ffi_boundary!(call => {
        let core = super::core(call.unguarded(core));
        core.rename(call.unguarded(name.cast_mut()))
    })
}

/// The core's name, inside the handle: `core + 0x48`, computed without a guard or a read
/// (a NULL core yields 0x48, as in the vendor library).
#[no_mangle]
pub extern "C" fn nrtucode_core_get_friendly_name(core: *mut nrtucode_core_t) -> *const c_char {
    core.cast::<u8>()
        .wrapping_add(::core::mem::offset_of!(nrtucode_core_t, friendly_name))
        .cast::<c_char>()
}

/// Enables the device log ring with the default size (0x20000 bytes).
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_enable_logs(
    core: *mut nrtucode_core_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let core = super::core(call.non_null(core, "core"));
        result_code(logs::enable(core, logs::DEFAULT_RING_SIZE))
    })
}

/// Enables the device log ring with `size` rounded up to 0x20 bytes.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_enable_logs_with_size_hint(
    core: *mut nrtucode_core_t,
    size: u32,
) -> nrtucode_result_t {
    ffi_boundary!(call => result_code(logs::enable(super::core(call.non_null(core, "core")), size)))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_disable_logs(
    core: *mut nrtucode_core_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => result_code(logs::disable(super::core(call.non_null(core, "core")))))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_set_max_loglevel(
    core: *mut nrtucode_core_t,
    level: u32,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        result_code(logs::set_max_loglevel(super::core(call.non_null(core, "core")), level))
    })
}

/// Drains new device log records into the rw table's log slot.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_print_logs(core: *mut nrtucode_core_t) -> nrtucode_result_t {
    ffi_boundary!(call => result_code(logs::print(super::core(call.non_null(core, "core")))))
}

/// Writes `n` (at most 4) priority classes: entry i is ISA class i + 1 in preferred bytes
/// per packet.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_dge_set_priority_class_map(
    core: *mut nrtucode_core_t,
    classes: *const u32,
    n: usize,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let core = super::core(call.non_null(core, "core"));
        result_code(dge::gates(core, call.name()).and_then(|()| {
            let classes = call.non_null(classes.cast_mut(), "classes");
            // SAFETY: the caller's array holds `n` classes (C contract).
            unsafe { dge::set_priority_class_map(core, classes.as_ptr(), n) }
        }))
    })
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_dge_get_priority_class_map(
    core: *mut nrtucode_core_t,
    classes: *mut u32,
    n: usize,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let core = super::core(call.non_null(core, "core"));
        result_code(dge::gates(core, call.name()).and_then(|()| {
            let classes = call.non_null(classes, "classes");
            // SAFETY: the caller's array has room for `n` classes (C contract).
            unsafe { dge::get_priority_class_map(core, classes.as_ptr(), n) }
        }))
    })
}

/// Resets the mailboxes from `num_mailbox` on and returns the mailbox array's address.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_get_dge_mailbox_addr(
    core: *mut nrtucode_core_t,
    num_mailbox: usize,
    addr: *mut u64,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let core = super::core(call.non_null(core, "core"));
        result_code(dge::gates(core, call.name()).and_then(|()| {
            let addr = call.non_null(addr, "addr");
            dge::mailbox_addr(core, num_mailbox).map(|a| put(addr, a))
        }))
    })
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_private_set_dge_mailbox(
    core: *mut nrtucode_core_t,
    idx: usize,
    mailbox: nrtucode_dge_mailbox_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => result_code(dge::set_mailbox(super::core(call.unguarded(core)), idx, mailbox)))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_private_get_dge_mailbox_values(
    core: *mut nrtucode_core_t,
    idx: usize,
    out: *mut nrtucode_dge_mailbox_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let core = super::core(call.unguarded(core));
        result_code(dge::get_mailbox(core, idx, || call.non_null(out, "out")))
    })
}

/// Confines the Pool cores' PC to [lo, hi). Requires lo < hi.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_enable_pc_bounds_check(
    core: *mut nrtucode_core_t,
    lo: u64,
    hi: u64,
) -> nrtucode_result_t {
    ffi_boundary!(call => result_code(dge::enable_pc_bounds(super::core(call.non_null(core, "core")), lo, hi)))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_disable_pc_bounds_check(
    core: *mut nrtucode_core_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => result_code(dge::disable_pc_bounds(super::core(call.non_null(core, "core")))))
}

/// Reads both bounds; outputs are written only if both reads succeed.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_core_private_get_pc_bounds(
    core: *mut nrtucode_core_t,
    lo: *mut u64,
    hi: *mut u64,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let core = super::core(call.non_null(core, "core"));
        let lo = call.non_null(lo, "lo");
        let hi = call.non_null(hi, "hi");
        result_code(dge::pc_bounds(core).map(|(l, h)| {
            put(lo, l);
            put(hi, h);
        }))
    })
}
