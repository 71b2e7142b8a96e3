//! The `opset_` family (used by compilers; libnrt binds none of it).

use crate::platform::PlatformObject;
use core::ffi::{c_char, c_void};
use core::ptr;

use super::boundary::ffi_boundary;
use super::put;
use crate::abi::*;
use crate::error::result_code;
use crate::handles::{nrtucode_context_t, nrtucode_opset_t};
use crate::opset::{self, SPECIALIZATION_OFFSET};

#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_create(
    ctx: *mut nrtucode_context_t,
    op_set: *mut *mut nrtucode_opset_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let ctx = super::ctx(call.non_null(ctx, "ctx"));
        let out = call.non_null(op_set, "op_set");
        // The vendor stores malloc's result before testing it: NULL on failure.
        let created = opset::create(ctx);
        put(out, created.map_or(ptr::null_mut(), |o| o.as_ptr()));
        result_code(created.map(drop))
    })
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_destroy(
    op_set: *mut nrtucode_opset_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        opset::destroy(super::opset(call.non_null(op_set, "op_set")));
        NRTUCODE_SUCCESS
    })
}

/// Adds a 64-byte instruction's opcode (byte 0) and, for 0xF0, its specialization
/// (byte 0x0c). Only those bytes are read.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_add_instruction(
    op_set: *mut nrtucode_opset_t,
    instruction_data: *const c_void,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let op = super::opset(call.non_null(op_set, "op_set"));
        let instr = call.non_null(instruction_data.cast_mut(), "instruction_data").cast::<u8>();
        // SAFETY: the caller passes a 64-byte instruction; bytes 0 and 0x0c are in it.
        let opcode = unsafe { instr.as_ptr().read() };
        // SAFETY: as above.
        let spec = || unsafe { instr.as_ptr().add(SPECIALIZATION_OFFSET).read() };
        result_code(opset::add_instruction(op, opcode, spec))
    })
}

fn opt(op_set: *const nrtucode_opset_t) -> Option<opset::Opset> {
    ptr::NonNull::new(op_set.cast_mut()).map(super::opset)
}

/// Opcodes present; 0 for a NULL set.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_private_get_num_opcodes(
    op_set: *const nrtucode_opset_t,
) -> usize {
    ffi_boundary!(_call => opt(op_set).map_or(0, opset::num_opcodes))
}

/// Specializations recorded for `opcode`; 0 for a NULL set or an absent opcode.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_private_get_num_specializations(
    op_set: *const nrtucode_opset_t,
    opcode: u8,
) -> usize {
    ffi_boundary!(_call => opt(op_set).map_or(0, |o| opset::num_specializations(o, opcode)))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_private_has_opcode(
    op_set: *const nrtucode_opset_t,
    opcode: u8,
) -> bool {
    ffi_boundary!(_call => opt(op_set).is_some_and(|o| opset::has_opcode(o, opcode)))
}

#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_private_has_specialization(
    op_set: *const nrtucode_opset_t,
    opcode: u8,
    specialization: u8,
) -> bool {
    ffi_boundary!(_call => opt(op_set).is_some_and(|o| opset::has_specialization(o, opcode, specialization)))
}

/// Renames the opset (at most 0x20 bytes kept). No NULL guard.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_set_friendly_name(
    op_set: *mut nrtucode_opset_t,
    name: *const c_char,
) {
    ffi_boundary!(call => {
        let op = super::opset(call.unguarded(op_set));
        op.rename(call.unguarded(name.cast_mut()))
    })
}

/// The library an opset needs on `ct`: always 0 when it resolves.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_opset_get_library_index(
    op_set: *mut nrtucode_opset_t,
    ct: nrtucode_coretype_t,
    lib_index: *mut usize,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let op = super::opset(call.non_null(op_set, "op_set"));
        let out = call.non_null(lib_index, "lib_index");
        result_code(opset::library_index(op, ct).map(|i| put(out, i)))
    })
}
