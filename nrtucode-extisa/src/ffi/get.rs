//! The `get_` family: versions and the image getters.

use core::ffi::{c_char, c_int, c_void};

use super::boundary::ffi_boundary;
use super::put;
use crate::abi::*;
use crate::error::result_code;
use crate::images;

/// Always 3; libnrt refuses any other level.
#[no_mangle]
pub extern "C" fn nrtucode_get_api_level() -> c_int {
    NRTUCODE_API_LEVEL as c_int
}

/// The microcode release this provider stands in for.
#[no_mangle]
pub extern "C" fn nrtucode_get_build_version() -> *const c_char {
    c"1.21.1.0".as_ptr()
}

/// The source revision of the release this provider stands in for.
#[no_mangle]
pub extern "C" fn nrtucode_get_git_version() -> *const c_char {
    c"6db9edc09474e79d0c0e283c14c16e51ee7417e5".as_ptr()
}

/// A base IRAM/DRAM/SRAM/EXTRAM image of a coretype and flavor.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_get_memory_image(
    ct: nrtucode_coretype_t,
    region: nrtucode_image_t,
    flavor: nrtucode_flavors_t,
    buf: *mut *mut u8,
    size: *mut usize,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        result_code(images::memory_image(ct, region, flavor).map(|img| {
            put(call.unguarded(buf), img.as_ptr().cast_mut());
            put(call.unguarded(size), img.len());
        }))
    })
}

/// Library 0 of a Q7 POOL coretype and its JSON manifest.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_get_ext_isa(
    ct: nrtucode_coretype_t,
    flavor: nrtucode_flavors_t,
    out: *mut nrtucode_extkernel_t,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        result_code(images::ext_isa(ct, flavor, 0).map(|img| {
            let json = img.json.unwrap_or_default();
            put(
                call.unguarded(out),
                nrtucode_extkernel_t {
                    so_ptr: img.so.as_ptr().cast::<c_void>(),
                    so_len: img.so.len(),
                    json_ptr: if json.is_empty() { core::ptr::null() } else { json.as_ptr().cast() },
                    json_len: json.len(),
                },
            );
        }))
    })
}

/// How many ext-ISA libraries a Q7 POOL coretype has. `*num` is zeroed first.
#[no_mangle]
pub unsafe extern "C" fn nrtucode_get_num_ext_isa_libs(
    ct: nrtucode_coretype_t,
    num: *mut usize,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        let num = call.unguarded(num);
        put(num, 0);
        result_code(images::num_ext_isa_libs(ct).map(|n| put(num, n)))
    })
}

/// A hardware-decode profile table (kind 0: PROF_CAM, 1: PROF_TABLE).
#[no_mangle]
pub unsafe extern "C" fn nrtucode_get_hwdecode_table(
    ct: nrtucode_coretype_t,
    kind: nrtucode_hwdecode_kind_t,
    ptr: *mut *mut c_void,
    size: *mut usize,
) -> nrtucode_result_t {
    ffi_boundary!(call => {
        result_code(images::hwdecode_table(ct, kind).map(|t| {
            put(call.unguarded(ptr), t.as_ptr().cast_mut().cast());
            put(call.unguarded(size), t.len());
        }))
    })
}
