//! The rw and memhandle callback tables of the simulated device, declared here (not taken
//! from a provider header) so the simulation can drive any provider.
//!
//! Every callback receives the provider's context and finds its [`SimDevice`] the way
//! libnrt's callbacks find their state: through the provider's `context_get_userdata`,
//! bound once per process with [`bind_userdata_getter`].

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{SimDevice, RC_IO};

/// The provider's `nrtucode_context_get_userdata`.
pub type UserdataGetter = unsafe extern "C" fn(ctx: *mut c_void) -> *mut c_void;

static USERDATA_GETTER: AtomicUsize = AtomicUsize::new(0);

/// Binds the provider whose contexts the callbacks will see.
pub fn bind_userdata_getter(getter: UserdataGetter) {
    USERDATA_GETTER.store(getter as usize, Ordering::Release);
}

/// `rw` table layout: read, write, log, log_level_enabled; context first in every slot.
#[repr(C)]
pub struct RwTable {
    pub read_device: unsafe extern "C" fn(*mut c_void, u64, usize, *mut c_void) -> c_int,
    pub write_device: unsafe extern "C" fn(*mut c_void, u64, usize, *const c_void) -> c_int,
    pub log: unsafe extern "C" fn(*mut c_void, u32, *const c_char, usize),
    pub log_level_enabled: unsafe extern "C" fn(*mut c_void, u32) -> bool,
}

/// `memhandle` table layout: malloc, free, read, write, SoC address.
#[repr(C)]
pub struct MemhandleTable {
    pub device_malloc: unsafe extern "C" fn(*mut c_void, usize, usize, *mut *mut c_void) -> c_int,
    pub device_free: unsafe extern "C" fn(*mut c_void, *mut c_void),
    pub read_memhandle:
        unsafe extern "C" fn(*mut c_void, *mut c_void, u64, usize, *mut c_void) -> c_int,
    pub write_memhandle:
        unsafe extern "C" fn(*mut c_void, *mut c_void, u64, usize, *const c_void) -> c_int,
    pub get_memhandle_soc_addr: unsafe extern "C" fn(*mut c_void, *mut c_void) -> u64,
}

const _: () = assert!(std::mem::size_of::<RwTable>() == 0x20);
const _: () = assert!(std::mem::size_of::<MemhandleTable>() == 0x28);

pub static RW_TABLE: RwTable = RwTable {
    read_device: sim_read_device,
    write_device: sim_write_device,
    log: sim_log,
    log_level_enabled: sim_log_level_enabled,
};

pub static MEMHANDLE_TABLE: MemhandleTable = MemhandleTable {
    device_malloc: sim_device_malloc,
    device_free: sim_device_free,
    read_memhandle: sim_read_memhandle,
    write_memhandle: sim_write_memhandle,
    get_memhandle_soc_addr: sim_memhandle_soc_addr,
};

/// Runs `f` on the context's device; without one (no getter bound, NULL userdata) the
/// callback fails with `missing`. Panics never unwind into the provider.
fn with_device<R>(ctx: *mut c_void, missing: R, f: impl FnOnce(&SimDevice) -> R) -> R {
    let getter = USERDATA_GETTER.load(Ordering::Acquire);
    if getter == 0 {
        return missing;
    }
    // SAFETY: only `bind_userdata_getter` stores here, always a valid UserdataGetter.
    let getter: UserdataGetter = unsafe { std::mem::transmute::<usize, UserdataGetter>(getter) };
    // SAFETY: the provider passes its own live context to its callbacks.
    let dev = unsafe { getter(ctx) }.cast::<SimDevice>();
    if dev.is_null() {
        return missing;
    }
    // SAFETY: the context's userdata is `Arc::as_ptr` of a SimDevice the caller keeps alive
    // while the context exists (this module's contract).
    let dev = unsafe { &*dev };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(dev)))
        .unwrap_or_else(|_| std::process::abort())
}

fn rc(r: Result<(), super::SimError>) -> c_int {
    r.map_or_else(|e| e.rc(), |()| 0)
}

/// A memhandle is the device's handle id carried as a pointer value; nothing dereferences it.
fn handle_id(h: *mut c_void) -> usize {
    h as usize
}

unsafe extern "C" fn sim_read_device(
    ctx: *mut c_void,
    addr: u64,
    len: usize,
    dst: *mut c_void,
) -> c_int {
    with_device(ctx, RC_IO, |d| {
        let mut buf = vec![0u8; len];
        let r = d.cb_read(addr, &mut buf);
        if r.is_ok() && len > 0 {
            // SAFETY: the provider passes a buffer writable for `len` bytes.
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), dst.cast::<u8>(), len) };
        }
        rc(r)
    })
}

/// Borrows a provider buffer of `len` bytes (empty for len 0, whatever the pointer).
///
/// # Safety
/// For `len > 0`, `p` must be readable for `len` bytes during the returned borrow.
unsafe fn bytes<'a>(p: *const c_void, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: function contract.
        unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
    }
}

unsafe extern "C" fn sim_write_device(
    ctx: *mut c_void,
    addr: u64,
    len: usize,
    src: *const c_void,
) -> c_int {
    // SAFETY: the provider passes a buffer readable for `len` bytes.
    let src = unsafe { bytes(src, len) };
    with_device(ctx, RC_IO, |d| rc(d.cb_write(addr, src)))
}

unsafe extern "C" fn sim_log(ctx: *mut c_void, sev: u32, msg: *const c_char, len: usize) {
    // SAFETY: the provider passes `len` readable bytes of message.
    let line = unsafe { bytes(msg.cast(), len) }.to_vec();
    with_device(ctx, (), |d| d.cb_log(sev, line))
}

unsafe extern "C" fn sim_log_level_enabled(ctx: *mut c_void, level: u32) -> bool {
    with_device(ctx, false, |d| d.cb_level_enabled(level))
}

unsafe extern "C" fn sim_device_malloc(
    ctx: *mut c_void,
    size: usize,
    align: usize,
    out: *mut *mut c_void,
) -> c_int {
    with_device(ctx, RC_IO, |d| match d.cb_malloc(size, align) {
        Ok(h) => {
            // SAFETY: the provider passes a writable out slot.
            unsafe { *out = h as *mut c_void };
            0
        }
        Err(e) => e.rc(),
    })
}

unsafe extern "C" fn sim_device_free(ctx: *mut c_void, handle: *mut c_void) {
    with_device(ctx, (), |d| d.cb_free(handle_id(handle)))
}

unsafe extern "C" fn sim_read_memhandle(
    ctx: *mut c_void,
    handle: *mut c_void,
    off: u64,
    len: usize,
    dst: *mut c_void,
) -> c_int {
    with_device(ctx, RC_IO, |d| {
        let mut buf = vec![0u8; len];
        let r = d.cb_mh_read(handle_id(handle), off, &mut buf);
        if r.is_ok() && len > 0 {
            // SAFETY: the provider passes a buffer writable for `len` bytes.
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), dst.cast::<u8>(), len) };
        }
        rc(r)
    })
}

unsafe extern "C" fn sim_write_memhandle(
    ctx: *mut c_void,
    handle: *mut c_void,
    off: u64,
    len: usize,
    src: *const c_void,
) -> c_int {
    // SAFETY: the provider passes a buffer readable for `len` bytes.
    let src = unsafe { bytes(src, len) };
    with_device(ctx, RC_IO, |d| {
        rc(d.cb_mh_write(handle_id(handle), off, src))
    })
}

unsafe extern "C" fn sim_memhandle_soc_addr(ctx: *mut c_void, handle: *mut c_void) -> u64 {
    with_device(ctx, 0, |d| d.cb_soc_addr(handle_id(handle)))
}
