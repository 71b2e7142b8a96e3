//! The device libc the archive defines (feature `archive`): the allocation functions on the
//! libc heap carved from the data scratch area, the memory primitives, `abort` and
//! `fsync`, and the panic handler that turns a fatal error into a device fault.
#![allow(clippy::missing_safety_doc)]

use core::ffi::{c_int, c_void};

use crate::rule;
use crate::rule::fatal;
use crate::runtime::redzone::{self, HeapKind};
use crate::runtime::STATE;

/// malloc's alignment (max_align_t on the targets).
const MALLOC_ALIGN: u32 = 16;

/// `malloc` where no C unit names the caller (the riscv32 layout check): no site.
#[cfg(not(alloc_sites))]
#[no_mangle]
pub extern "C" fn malloc(n: usize) -> *mut c_void {
    malloc_at(n, 0)
}

/// `malloc` for the code at `site` (its caller, which `alloc.c`'s `malloc` names; 0:
/// unknown): a checked launch keeps the site in the block's red zone (D104).
#[no_mangle]
pub extern "C" fn customop_malloc_at(n: usize, site: usize) -> *mut c_void {
    malloc_at(n, site)
}

pub fn malloc_at(n: usize, site: usize) -> *mut c_void {
    let Ok(n) = u32::try_from(n) else {
        return core::ptr::null_mut();
    };
    let p = libc_alloc(n, MALLOC_ALIGN, site);
    crate::runtime::poison_block(p as usize, n as usize);
    p
}

/// A block of the libc heap, with a red zone in a checked launch (redzone.rs); NULL when
/// the heap is full.
fn libc_alloc(n: u32, align: u32, site: usize) -> *mut c_void {
    redzone::allocate(
        HeapKind::Libc,
        n,
        site,
        |k| STATE.with(|s| s.libc_heap.alloc(k, align)),
        |a| a as usize,
    )
    .map_or(core::ptr::null_mut(), |a| a as usize as *mut c_void)
}

/// `calloc(n, size)` where no C unit names the caller: no site.
#[cfg(not(alloc_sites))]
#[no_mangle]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    customop_calloc_at(n, size, 0)
}

/// `calloc(n, size)` for the code at `site`: zeroed, with the product checked (an overflow
/// is NULL, as C says).
#[no_mangle]
pub extern "C" fn customop_calloc_at(n: usize, size: usize, site: usize) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        return core::ptr::null_mut();
    };
    let p = malloc_at(total, site);
    if !p.is_null() {
        // SAFETY: a fresh allocation of `total` bytes.
        unsafe { core::ptr::write_bytes(p.cast::<u8>(), 0, total) };
    }
    p
}

#[no_mangle]
pub extern "C" fn memalign(align: usize, n: usize) -> *mut c_void {
    let (Ok(a), Ok(n)) = (u32::try_from(align), u32::try_from(n)) else {
        return core::ptr::null_mut();
    };
    let p = libc_alloc(n, a, 0);
    crate::runtime::poison_block(p as usize, n as usize);
    p
}

/// C11 `aligned_alloc`: NULL for an alignment that is not a power of two.
#[no_mangle]
pub extern "C" fn aligned_alloc(align: usize, n: usize) -> *mut c_void {
    if !align.is_power_of_two() {
        return core::ptr::null_mut();
    }
    memalign(align, n)
}

/// POSIX `posix_memalign`: EINVAL for an alignment that is not a power of two multiple
/// of the pointer size, ENOMEM when the heap is full; `*out` is written only on success.
///
/// # Safety
/// `out` is valid for a write (the C contract).
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, n: usize) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(core::mem::size_of::<*mut c_void>()) {
        return crate::libc::cerrno::EINVAL;
    }
    let p = memalign(align, n);
    if p.is_null() {
        return crate::libc::cerrno::ENOMEM;
    }
    // SAFETY: the caller's writable `out`.
    unsafe { out.write(p) };
    0
}

/// Freeing something malloc did not return (or twice) is fatal.
#[no_mangle]
pub extern "C" fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    redzone::release(p as usize);
    if STATE.with(|s| s.libc_heap.free(p as usize as u64)).is_err() {
        fatal(rule!(
            "start_exit.cpp",
            "free() of a pointer malloc did not return"
        ));
    }
}

/// `realloc` where no C unit names the caller: no site.
///
/// # Safety
/// `p` is NULL or a block of this heap (the C contract).
#[cfg(not(alloc_sites))]
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: usize) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { customop_realloc_at(p, n, 0) }
}

/// `realloc` for the code at `site`.
///
/// # Safety
/// `p` is NULL or a block of this heap (the C contract).
#[no_mangle]
pub unsafe extern "C" fn customop_realloc_at(p: *mut c_void, n: usize, site: usize) -> *mut c_void {
    if p.is_null() {
        return malloc_at(n, site);
    }
    if n == 0 {
        free(p);
        return core::ptr::null_mut();
    }
    let Some(old) = STATE.with(|s| s.libc_heap.alloc_size(p as usize as u64)) else {
        fatal(rule!(
            "start_exit.cpp",
            "realloc() of a pointer malloc did not return"
        ));
    };
    let q = malloc_at(n, site);
    if !q.is_null() {
        // SAFETY: both blocks are live heap blocks at least min(old, n) bytes long.
        unsafe { crate::runtime::mem::copy_bytes(q.cast(), p.cast(), (old as usize).min(n)) };
        free(p);
    }
    q
}

#[no_mangle]
pub unsafe extern "C" fn memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: the C contract of memcpy.
    unsafe { crate::runtime::mem::copy_bytes(dst.cast(), src.cast(), n) };
    dst
}

#[no_mangle]
pub unsafe extern "C" fn memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: the C contract of memmove.
    unsafe { crate::runtime::mem::move_bytes(dst.cast(), src.cast(), n) };
    dst
}

#[no_mangle]
pub unsafe extern "C" fn memset(dst: *mut c_void, c: c_int, n: usize) -> *mut c_void {
    // SAFETY: the C contract of memset.
    unsafe { crate::runtime::mem::set_bytes(dst.cast(), c as u8, n) };
    dst
}

#[no_mangle]
pub unsafe extern "C" fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    // SAFETY: the C contract of memcmp.
    unsafe { crate::runtime::mem::compare_bytes(a.cast(), b.cast(), n) }
}

/// LLVM lowers `memcmp(..) == 0` to `bcmp` on some targets.
#[no_mangle]
pub unsafe extern "C" fn bcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    // SAFETY: as memcmp.
    unsafe { memcmp(a, b, n) }
}

/// `fsync(fd)`: flushes the stdio channel `fd` (see `customop_cleanup`).
#[no_mangle]
pub extern "C" fn fsync(fd: c_int) -> c_int {
    crate::runtime::stdio::flush(fd)
}

/// Stops the kernel: reported to the host as a fault, then the core waits forever.
#[no_mangle]
pub extern "C" fn abort() -> ! {
    crate::runtime::platform::fault(b"customop: abort()")
}

/// What libc++ would throw in device builds (include/device/libcxx's support functions,
/// customop-device/xtensa/libcxx.cpp): a device fault with `what` as its message.
///
/// # Safety
/// `what` is NUL-terminated.
#[cfg(device_libc)]
#[no_mangle]
pub unsafe extern "C" fn __neuron_cxx_fatal(what: *const core::ffi::c_char) -> ! {
    // SAFETY: NUL-terminated (the contract).
    crate::runtime::platform::fault(unsafe { core::ffi::CStr::from_ptr(what) }.to_bytes())
}

/// A failed `assert` (include/device/assert.h): a device fault whose message reads as
/// glibc's, "file:line: function: Assertion `expr' failed." (cut at 255 bytes). Device
/// targets only: a host build's asserts are the C library's.
///
/// # Safety
/// Each pointer is NULL or a NUL-terminated string.
#[cfg(device_libc)]
#[no_mangle]
pub unsafe extern "C" fn __assert_fail(
    assertion: *const core::ffi::c_char,
    file: *const core::ffi::c_char,
    line: core::ffi::c_uint,
    function: *const core::ffi::c_char,
) -> ! {
    let text = |p: *const core::ffi::c_char| {
        if p.is_null() {
            &b"?"[..]
        } else {
            // SAFETY: a NUL-terminated string (C contract).
            unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes()
        }
    };
    let mut m = Message::<255>::new();
    m.put(text(file));
    let _ = core::fmt::Write::write_fmt(&mut m, format_args!(":{line}: "));
    m.put(text(function));
    m.put(b": Assertion `");
    m.put(text(assertion));
    m.put(b"' failed.");
    crate::runtime::platform::fault(m.bytes())
}

/// A fault message of at most `N` bytes: bytes (kept as they are) and formatted text, cut
/// at the end.
#[cfg(any(not(test), target_os = "none"))]
struct Message<const N: usize> {
    buf: [u8; N],
    len: usize,
}

#[cfg(any(not(test), target_os = "none"))]
impl<const N: usize> Message<N> {
    fn new() -> Self {
        Message {
            buf: [0; N],
            len: 0,
        }
    }

    fn put(&mut self, b: &[u8]) {
        let k = b.len().min(N - self.len);
        self.buf[self.len..self.len + k].copy_from_slice(&b[..k]);
        self.len += k;
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

#[cfg(any(not(test), target_os = "none"))]
impl<const N: usize> core::fmt::Write for Message<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.put(s.as_bytes());
        Ok(())
    }
}

#[cfg(not(test))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    use core::fmt::Write;
    let mut m = Message::<256>::new();
    let _ = write!(m, "{}", info.message());
    crate::runtime::platform::fault(m.bytes())
}
