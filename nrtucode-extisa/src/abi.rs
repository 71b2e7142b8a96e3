//! Everything that crosses the C boundary by value or by caller-owned pointer: result codes,
//! the enums libnrt passes as plain integers, the two caller-supplied callback tables and the
//! small structs the getters fill. Names are the vendor's (`nrtucode.h`, as quoted in the
//! record); cbindgen turns this module into `include/nrtucode_extisa.h`.
//!
//! Enums are `u32` typedefs with constants, not Rust enums: the caller may pass any value
//! (the coretype is stored unvalidated), and a callback's error code is returned verbatim,
//! so neither side may assume a closed set.
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_void};
use core::mem::{offset_of, size_of};

use crate::handles::nrtucode_context_t;

/// A provider result (u32, returned in eax). 0-9 are the provider's own codes; a non-zero
/// code from an rw or memhandle callback is passed through unchanged.
pub type nrtucode_result_t = u32;
pub const NRTUCODE_SUCCESS: nrtucode_result_t = 0;
pub const NRTUCODE_ERR_UNKNOWN_CORE: nrtucode_result_t = 1;
pub const NRTUCODE_ERR_UNKNOWN_IMAGE: nrtucode_result_t = 2;
pub const NRTUCODE_ERR_MISSING_IMAGE: nrtucode_result_t = 3;
pub const NRTUCODE_ERR_VERSION: nrtucode_result_t = 4;
pub const NRTUCODE_ERR_ALLOCATION: nrtucode_result_t = 5;
pub const NRTUCODE_ERR_IO: nrtucode_result_t = 6;
pub const NRTUCODE_ERR_ENOSPC: nrtucode_result_t = 7;
pub const NRTUCODE_ERR_INVALID: nrtucode_result_t = 8;
pub const NRTUCODE_ERR_RELOCATION: nrtucode_result_t = 9;

/// The only API level this provider accepts in `nrtucode_context_create`.
pub const NRTUCODE_API_LEVEL: u32 = 3;

/// A dense (generation, engine) index, 0..=37. Only 0..=30 are public; 31..=37 belong to an
/// internal-only generation the 4-generation build does not serve.
pub type nrtucode_coretype_t = u32;
pub const NRTUCODE_CORE_SUNDA_NX_ACT: nrtucode_coretype_t = 0;
pub const NRTUCODE_CORE_SUNDA_NX_DVE: nrtucode_coretype_t = 1;
pub const NRTUCODE_CORE_SUNDA_NX_POOL: nrtucode_coretype_t = 2;
pub const NRTUCODE_CORE_SUNDA_NX_PE: nrtucode_coretype_t = 3;
pub const NRTUCODE_CORE_SUNDA_NX_SP: nrtucode_coretype_t = 4;
pub const NRTUCODE_CORE_SUNDA_NX_TOPSP: nrtucode_coretype_t = 5;
pub const NRTUCODE_CORE_SUNDA_Q7_POOL: nrtucode_coretype_t = 6;
pub const NRTUCODE_CORE_CAYMAN_NX_ACT: nrtucode_coretype_t = 7;
pub const NRTUCODE_CORE_CAYMAN_NX_DVE: nrtucode_coretype_t = 8;
pub const NRTUCODE_CORE_CAYMAN_NX_POOL: nrtucode_coretype_t = 9;
pub const NRTUCODE_CORE_CAYMAN_NX_PE: nrtucode_coretype_t = 10;
pub const NRTUCODE_CORE_CAYMAN_NX_SP: nrtucode_coretype_t = 11;
pub const NRTUCODE_CORE_CAYMAN_NX_TOPSP: nrtucode_coretype_t = 12;
pub const NRTUCODE_CORE_CAYMAN_Q7_POOL: nrtucode_coretype_t = 13;
pub const NRTUCODE_CORE_CAYMAN_Q7_CCE: nrtucode_coretype_t = 14;
pub const NRTUCODE_CORE_MARIANA_NX_ACT: nrtucode_coretype_t = 15;
pub const NRTUCODE_CORE_MARIANA_NX_DVE: nrtucode_coretype_t = 16;
pub const NRTUCODE_CORE_MARIANA_NX_POOL: nrtucode_coretype_t = 17;
pub const NRTUCODE_CORE_MARIANA_NX_PE: nrtucode_coretype_t = 18;
pub const NRTUCODE_CORE_MARIANA_NX_SP: nrtucode_coretype_t = 19;
pub const NRTUCODE_CORE_MARIANA_NX_TOPSP: nrtucode_coretype_t = 20;
pub const NRTUCODE_CORE_MARIANA_Q7_POOL: nrtucode_coretype_t = 21;
pub const NRTUCODE_CORE_MARIANA_Q7_CCE: nrtucode_coretype_t = 22;
pub const NRTUCODE_CORE_MARIANA_PLUS_NX_ACT: nrtucode_coretype_t = 23;
pub const NRTUCODE_CORE_MARIANA_PLUS_NX_DVE: nrtucode_coretype_t = 24;
pub const NRTUCODE_CORE_MARIANA_PLUS_NX_POOL: nrtucode_coretype_t = 25;
pub const NRTUCODE_CORE_MARIANA_PLUS_NX_PE: nrtucode_coretype_t = 26;
pub const NRTUCODE_CORE_MARIANA_PLUS_NX_SP: nrtucode_coretype_t = 27;
pub const NRTUCODE_CORE_MARIANA_PLUS_NX_TOPSP: nrtucode_coretype_t = 28;
pub const NRTUCODE_CORE_MARIANA_PLUS_Q7_POOL: nrtucode_coretype_t = 29;
pub const NRTUCODE_CORE_MARIANA_PLUS_Q7_CCE: nrtucode_coretype_t = 30;
/// Number of coretype slots every per-coretype table has (0..=37).
pub const NRTUCODE_CORE_SLOTS: u32 = 38;

/// Microcode flavor. DEFAULT resolves through `NEURON_UCODE_FLAVOR`.
pub type nrtucode_flavors_t = u32;
pub const NRTUCODE_FLAVORS_DEFAULT: nrtucode_flavors_t = 0;
pub const NRTUCODE_FLAVORS_RELEASE: nrtucode_flavors_t = 1;
pub const NRTUCODE_FLAVORS_DEBUG: nrtucode_flavors_t = 2;
pub const NRTUCODE_FLAVORS_TEST: nrtucode_flavors_t = 3;
pub const NRTUCODE_FLAVORS_CHICKEN: nrtucode_flavors_t = 8;
pub const NRTUCODE_FLAVORS_DYNAMIC_KERNEL_LOAD: nrtucode_flavors_t = 16;

/// Memory region of a base microcode image.
pub type nrtucode_image_t = u32;
pub const NRTUCODE_IMAGE_IRAM: nrtucode_image_t = 0;
pub const NRTUCODE_IMAGE_DRAM: nrtucode_image_t = 1;
pub const NRTUCODE_IMAGE_SRAM: nrtucode_image_t = 2;
pub const NRTUCODE_IMAGE_EXTRAM: nrtucode_image_t = 3;

/// Kind argument of `nrtucode_get_hwdecode_table`.
pub type nrtucode_hwdecode_kind_t = c_int;
/// 64 records of 16 bytes `{opcode_id, mask, enable, rsvd}`.
pub const NRTUCODE_HWDECODE_PROF_CAM: nrtucode_hwdecode_kind_t = 0;
/// 64 records of 128 bytes, parallel to the CAM.
pub const NRTUCODE_HWDECODE_PROF_TABLE: nrtucode_hwdecode_kind_t = 1;

/// Reads `len` bytes of device memory at `dev_addr` into `dst`; 0 or an error code.
pub type nrtucode_read_device_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut nrtucode_context_t,
        dev_addr: u64,
        len: usize,
        dst: *mut c_void,
    ) -> c_int,
>;
/// Writes `len` bytes from `src` to device memory at `dev_addr`; 0 or an error code.
pub type nrtucode_write_device_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut nrtucode_context_t,
        dev_addr: u64,
        len: usize,
        src: *const c_void,
    ) -> c_int,
>;
/// Receives one formatted, NUL-terminated log line of `len` bytes.
pub type nrtucode_log_fn = Option<
    unsafe extern "C" fn(ctx: *mut nrtucode_context_t, sev: u32, msg: *const c_char, len: usize),
>;
/// Whether messages of severity `level` are wanted (1 = error ... 4 = info/debug).
pub type nrtucode_log_level_enabled_fn =
    Option<unsafe extern "C" fn(ctx: *mut nrtucode_context_t, level: u32) -> bool>;

/// The caller's device accessor table (libnrt: `platform_rw_impl`). The context stores a
/// pointer to it; every slot receives the context first.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct nrtucode_platform_rw_t {
    pub read_device: nrtucode_read_device_fn,
    pub write_device: nrtucode_write_device_fn,
    pub log: nrtucode_log_fn,
    pub log_level_enabled: nrtucode_log_level_enabled_fn,
}

/// Allocates device memory; `*out_handle` receives an opaque memhandle.
pub type nrtucode_device_malloc_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut nrtucode_context_t,
        size: usize,
        alignment: usize,
        out_handle: *mut *mut c_void,
    ) -> c_int,
>;
/// Frees a memhandle from `device_malloc`. The provider ignores any return value.
pub type nrtucode_device_free_fn =
    Option<unsafe extern "C" fn(ctx: *mut nrtucode_context_t, handle: *mut c_void)>;
/// Reads `len` bytes at offset `off` of a memhandle into `dst`; 0 or an error code.
pub type nrtucode_read_memhandle_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut nrtucode_context_t,
        handle: *mut c_void,
        off: u64,
        len: usize,
        dst: *mut c_void,
    ) -> c_int,
>;
/// Writes `len` bytes from `src` at offset `off` of a memhandle; 0 or an error code.
pub type nrtucode_write_memhandle_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut nrtucode_context_t,
        handle: *mut c_void,
        off: u64,
        len: usize,
        src: *const c_void,
    ) -> c_int,
>;
/// The SoC (device) address of a memhandle's first byte.
pub type nrtucode_get_memhandle_soc_addr_fn =
    Option<unsafe extern "C" fn(ctx: *mut nrtucode_context_t, handle: *mut c_void) -> u64>;

/// The caller's device-memory table (libnrt: `platform_memhandle_impl`). Until one is set,
/// a context uses a built-in table whose allocations fail with "not attached".
#[repr(C)]
#[derive(Clone, Copy)]
pub struct nrtucode_platform_memhandle_t {
    pub device_malloc: nrtucode_device_malloc_fn,
    pub device_free: nrtucode_device_free_fn,
    pub read_memhandle: nrtucode_read_memhandle_fn,
    pub write_memhandle: nrtucode_write_memhandle_fn,
    pub get_memhandle_soc_addr: nrtucode_get_memhandle_soc_addr_fn,
}

/// One DGE mailbox, passed by value (4 bytes). An operation whose priority is greater than
/// `priority` has its DMA-enable mask ANDed with `bitmask`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct nrtucode_dge_mailbox_t {
    pub reserved: u8,
    /// 0xFF is the lowest priority (the reset value).
    pub priority: u8,
    /// Little-endian DMA enable mask; 0xFFFF after reset.
    pub bitmask: u16,
}

/// The reset value of a mailbox, read as a little-endian u32.
pub const NRTUCODE_DGE_MAILBOX_RESET: u32 = 0xFFFF_FF00;

/// What `nrtucode_get_ext_isa` returns: an Xtensa library image and its JSON manifest.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrtucode_extkernel_t {
    pub so_ptr: *const c_void,
    pub so_len: usize,
    pub json_ptr: *const c_void,
    pub json_len: usize,
}

const _: () = assert!(size_of::<nrtucode_platform_rw_t>() == 0x20);
const _: () = assert!(offset_of!(nrtucode_platform_rw_t, read_device) == 0x00);
const _: () = assert!(offset_of!(nrtucode_platform_rw_t, write_device) == 0x08);
const _: () = assert!(offset_of!(nrtucode_platform_rw_t, log) == 0x10);
const _: () = assert!(offset_of!(nrtucode_platform_rw_t, log_level_enabled) == 0x18);
const _: () = assert!(size_of::<nrtucode_platform_memhandle_t>() == 0x28);
const _: () = assert!(offset_of!(nrtucode_platform_memhandle_t, device_malloc) == 0x00);
const _: () = assert!(offset_of!(nrtucode_platform_memhandle_t, device_free) == 0x08);
const _: () = assert!(offset_of!(nrtucode_platform_memhandle_t, read_memhandle) == 0x10);
const _: () = assert!(offset_of!(nrtucode_platform_memhandle_t, write_memhandle) == 0x18);
const _: () = assert!(offset_of!(nrtucode_platform_memhandle_t, get_memhandle_soc_addr) == 0x20);
const _: () = assert!(size_of::<nrtucode_dge_mailbox_t>() == 4);
const _: () = assert!(offset_of!(nrtucode_dge_mailbox_t, priority) == 1);
const _: () = assert!(offset_of!(nrtucode_dge_mailbox_t, bitmask) == 2);
const _: () = assert!(size_of::<nrtucode_extkernel_t>() == 0x20);
const _: () = assert!(offset_of!(nrtucode_extkernel_t, json_ptr) == 0x10);
