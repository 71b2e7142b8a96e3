//! C API of the simulated device (`include/nrt_sim_device.h`), for C/C++ test programs that
//! drive a microcode provider the way libnrt does.
//!
//! Results: 0 on success, the callback code for a device error (5 allocation, 6 I/O), and
//! -1 for a NULL device or buffer argument.
//!
//! Safety contract of every function: pointer arguments are NULL or valid for the access
//! their documentation describes, and device handles come from `nrt_sim_device_create`.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

use super::tables;
use super::SimDevice;

const RC_BAD_ARGUMENT: c_int = -1;

/// The provider's `nrtucode_context_get_userdata`, as the simulated callbacks call it.
#[allow(non_camel_case_types)]
pub type nrt_sim_userdata_getter_t = Option<unsafe extern "C" fn(ctx: *mut c_void) -> *mut c_void>;

fn guard<R>(f: impl FnOnce() -> R) -> R {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| std::process::abort())
}

/// Borrows the device behind a handle from `nrt_sim_device_create`.
fn dev<'a>(d: *const SimDevice) -> Option<&'a SimDevice> {
    // SAFETY: non-NULL handles come from nrt_sim_device_create and stay valid until
    // nrt_sim_device_destroy (C contract).
    unsafe { d.as_ref() }
}

fn rc(r: Result<(), super::SimError>) -> c_int {
    r.map_or_else(|e| e.rc(), |()| 0)
}

/// A new simulated device with nothing mapped. Pass it as the provider context's userdata.
#[no_mangle]
pub extern "C" fn nrt_sim_device_create() -> *const SimDevice {
    guard(|| Arc::into_raw(SimDevice::new()))
}

/// Releases a device. Contexts using it must be destroyed first.
#[no_mangle]
pub unsafe extern "C" fn nrt_sim_device_destroy(dev: *const SimDevice) {
    if !dev.is_null() {
        // SAFETY: `dev` came from nrt_sim_device_create and is released once (C contract).
        guard(|| drop(unsafe { Arc::from_raw(dev) }))
    }
}

/// Binds the provider's `nrtucode_context_get_userdata`; callbacks use it to find their
/// device, as libnrt's do.
#[no_mangle]
pub extern "C" fn nrt_sim_bind_userdata_getter(getter: nrt_sim_userdata_getter_t) {
    if let Some(g) = getter {
        tables::bind_userdata_getter(g);
    }
}

/// The rw callback table (a `nrtucode_platform_rw_t`).
#[no_mangle]
pub extern "C" fn nrt_sim_rw_table() -> *const c_void {
    (&tables::RW_TABLE as *const tables::RwTable).cast()
}

/// The memhandle callback table (a `nrtucode_platform_memhandle_t`).
#[no_mangle]
pub extern "C" fn nrt_sim_memhandle_table() -> *const c_void {
    (&tables::MEMHANDLE_TABLE as *const tables::MemhandleTable).cast()
}

/// Maps a core's control block at `dram_base`, holding the booted firmware's unclaimed word.
#[no_mangle]
pub extern "C" fn nrt_sim_device_map_control_block(dev: *const SimDevice, dram_base: u64) -> c_int {
    guard(|| self::dev(dev).map_or(RC_BAD_ARGUMENT, |d| rc(d.map_control_block(dram_base))))
}

/// Reads device memory directly (not traced, no fault injection).
#[no_mangle]
pub unsafe extern "C" fn nrt_sim_device_read(
    dev: *const SimDevice,
    addr: u64,
    len: usize,
    dst: *mut c_void,
) -> c_int {
    guard(|| {
        let (Some(d), false) = (self::dev(dev), dst.is_null()) else {
            return RC_BAD_ARGUMENT;
        };
        // SAFETY: `dst` is writable for `len` bytes (C contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), len) };
        rc(d.peek(addr, dst))
    })
}

/// Writes device memory directly, as the firmware would.
#[no_mangle]
pub unsafe extern "C" fn nrt_sim_device_write(
    dev: *const SimDevice,
    addr: u64,
    len: usize,
    src: *const c_void,
) -> c_int {
    guard(|| {
        let (Some(d), false) = (self::dev(dev), src.is_null()) else {
            return RC_BAD_ARGUMENT;
        };
        // SAFETY: `src` is readable for `len` bytes (C contract).
        let src = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), len) };
        rc(d.poke(addr, src))
    })
}

/// The firmware appends a log record to the ring of the control block at `dram_base`.
/// Returns 1 if kept, 0 if filtered or full, or an error code.
#[no_mangle]
pub unsafe extern "C" fn nrt_sim_device_firmware_log(
    dev: *const SimDevice,
    dram_base: u64,
    sev: u8,
    text: *const c_char,
) -> c_int {
    guard(|| {
        let (Some(d), false) = (self::dev(dev), text.is_null()) else {
            return RC_BAD_ARGUMENT;
        };
        // SAFETY: NUL-terminated C string (C contract).
        let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        d.firmware_log(dram_base, sev, &text)
            .map_or_else(|e| e.rc(), c_int::from)
    })
}

/// Log levels 1..=threshold are reported enabled to the provider.
#[no_mangle]
pub extern "C" fn nrt_sim_device_set_log_threshold(dev: *const SimDevice, threshold: u32) {
    guard(|| {
        if let Some(d) = self::dev(dev) {
            d.set_log_threshold(threshold)
        }
    })
}

/// Number of lines the provider has logged through the rw table.
#[no_mangle]
pub extern "C" fn nrt_sim_device_host_log_count(dev: *const SimDevice) -> usize {
    guard(|| self::dev(dev).map_or(0, |d| d.host_logs().len()))
}

/// Copies logged line `idx` (NUL-terminated, truncated to `cap`) and its severity.
#[no_mangle]
pub unsafe extern "C" fn nrt_sim_device_host_log_line(
    dev: *const SimDevice,
    idx: usize,
    sev: *mut u32,
    buf: *mut c_char,
    cap: usize,
) -> c_int {
    guard(|| {
        let (Some(d), false, true) = (self::dev(dev), buf.is_null(), cap > 0) else {
            return RC_BAD_ARGUMENT;
        };
        let Some(line) = d.host_logs().into_iter().nth(idx) else {
            return RC_BAD_ARGUMENT;
        };
        let n = line.bytes.len().min(cap - 1);
        // SAFETY: `buf` is writable for `cap` bytes and n + 1 <= cap.
        unsafe {
            std::ptr::copy_nonoverlapping(line.bytes.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
            if !sev.is_null() {
                *sev = line.sev;
            }
        }
        0
    })
}

/// Memhandles allocated and not yet freed.
#[no_mangle]
pub extern "C" fn nrt_sim_device_live_memhandles(dev: *const SimDevice) -> usize {
    guard(|| self::dev(dev).map_or(0, |d| d.live_memhandles()))
}
