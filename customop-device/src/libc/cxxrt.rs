//! The C++ runtime pieces a device op needs without a C++ standard library (device builds
//! of the archive): `operator new`/`delete` on the libc heap (no exceptions on the device,
//! so a failed `new` is a fatal error, as `-fno-exceptions` code expects), function-local
//! static guards (one thread per core: a flag, no lock), the pure-virtual trap, and the
//! `std::nothrow` forms of new and delete (NULL when the heap is full), and destructor
//! registration (`atexit`), accepted and never run.
#![allow(clippy::missing_safety_doc)]

use core::ffi::c_void;

use crate::libc::{free, malloc_at};

fn new(n: usize, site: usize) -> *mut c_void {
    let p = crate::libc::malloc_at(n.max(1), site);
    if p.is_null() {
        out_of_memory(n, None);
    }
    p
}

/// A failed `new`: fatal, saying how full the core's libc heap is (C++ containers live
/// there on the device, where host builds use the C library's heap; D17).
fn out_of_memory(n: usize, align: Option<usize>) -> ! {
    let (size, free, live) = crate::runtime::STATE.with(|s| {
        let h = &s.libc_heap;
        (h.pool().1, h.free_bytes(), h.live_allocations())
    });
    struct Aligned(Option<usize>);
    impl core::fmt::Display for Aligned {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self.0 {
                Some(a) => write!(f, " aligned to {a}"),
                None => Ok(()),
            }
        }
    }
    crate::rule::fatal_with(
        "operator new",
        format_args!(
            "out of memory for {n} bytes{}: the core's libc heap has {free} of {size} bytes \
             free, {live} allocations live ({} descriptors; docs/decisions.md D17)",
            Aligned(align),
            crate::runtime::LIBC_BLOCKS
        ),
    )
}

/// `operator new(size_t)` for the code at `site` (`alloc.c`'s `_Znwj` and `_Znaj` name
/// their caller).
#[no_mangle]
pub extern "C" fn customop_new_at(n: usize, site: usize) -> *mut c_void {
    new(n, site)
}

/// `operator new(size_t)` (32-bit size_t: `unsigned int`) where no C unit names the caller.
#[cfg(not(alloc_sites))]
#[no_mangle]
pub extern "C" fn _Znwj(n: usize) -> *mut c_void {
    new(n, 0)
}

/// `operator new[](size_t)` where no C unit names the caller.
#[cfg(not(alloc_sites))]
#[no_mangle]
pub extern "C" fn _Znaj(n: usize) -> *mut c_void {
    new(n, 0)
}

/// `std::nothrow` (an empty tag object; libc++'s `<new>` declares it, D72).
#[allow(non_upper_case_globals)]
#[no_mangle]
pub static _ZSt7nothrow: u8 = 0;

/// `operator new(size_t, const std::nothrow_t &)`: NULL when the heap is full.
#[no_mangle]
pub extern "C" fn _ZnwjRKSt9nothrow_t(n: usize, _tag: *const u8) -> *mut c_void {
    malloc_at(n.max(1), 0)
}

/// `operator new[](size_t, const std::nothrow_t &)`.
#[no_mangle]
pub extern "C" fn _ZnajRKSt9nothrow_t(n: usize, _tag: *const u8) -> *mut c_void {
    malloc_at(n.max(1), 0)
}

/// `atexit`, which GCC calls to register a global object's destructor: accepted and never
/// run, since a Pool core does not exit while its library is loaded (the host's core
/// processes are stopped without running them either).
#[no_mangle]
pub extern "C" fn atexit(_f: Option<extern "C" fn()>) -> core::ffi::c_int {
    0
}

/// `__cxa_atexit` (compilers that register destructors with it): as [`atexit`].
#[no_mangle]
pub extern "C" fn __cxa_atexit(
    _f: Option<extern "C" fn(*mut c_void)>,
    _arg: *mut c_void,
    _dso: *mut c_void,
) -> core::ffi::c_int {
    0
}

/// The module handle `__cxa_atexit` registrations name (crtbegin defines it elsewhere).
#[allow(non_upper_case_globals)]
#[no_mangle]
pub static __dso_handle: u8 = 0;

/// Returns 1 when the guarded static still needs its initializer (first byte 0).
#[no_mangle]
pub unsafe extern "C" fn __cxa_guard_acquire(guard: *mut u8) -> i32 {
    // SAFETY: the compiler passes its 64-bit guard object.
    i32::from(unsafe { *guard } == 0)
}

#[no_mangle]
pub unsafe extern "C" fn __cxa_guard_release(guard: *mut u8) {
    // SAFETY: as acquire.
    unsafe { *guard = 1 };
}

#[no_mangle]
pub extern "C" fn __cxa_guard_abort(_guard: *mut u8) {}

#[no_mangle]
pub extern "C" fn __cxa_pure_virtual() -> ! {
    crate::rule::fatal_with(
        "__cxa_pure_virtual",
        format_args!("a pure virtual function was called"),
    )
}

/// Over-aligned `new` (C++17 `std::align_val_t`, which libc++'s containers and `new` of an
/// `alignas` type above 16 use): aligned on the libc heap, fatal when the heap is full.
fn new_aligned(n: usize, align: usize) -> *mut c_void {
    let p = crate::libc::memalign(align.max(1), n.max(1));
    if p.is_null() {
        out_of_memory(n, Some(align));
    }
    p
}

/// `operator new(size_t, std::align_val_t)`.
#[no_mangle]
pub extern "C" fn _ZnwjSt11align_val_t(n: usize, align: usize) -> *mut c_void {
    new_aligned(n, align)
}

/// `operator new[](size_t, std::align_val_t)`.
#[no_mangle]
pub extern "C" fn _ZnajSt11align_val_t(n: usize, align: usize) -> *mut c_void {
    new_aligned(n, align)
}

/// `operator new(size_t, std::align_val_t, const std::nothrow_t &)`: NULL when full.
#[no_mangle]
pub extern "C" fn _ZnwjSt11align_val_tRKSt9nothrow_t(
    n: usize,
    align: usize,
    _tag: *const u8,
) -> *mut c_void {
    crate::libc::memalign(align.max(1), n.max(1))
}

/// `operator new[](size_t, std::align_val_t, const std::nothrow_t &)`.
#[no_mangle]
pub extern "C" fn _ZnajSt11align_val_tRKSt9nothrow_t(
    n: usize,
    align: usize,
    _tag: *const u8,
) -> *mut c_void {
    crate::libc::memalign(align.max(1), n.max(1))
}

/// Every form of `operator delete` (plain, array, sized, aligned, nothrow): the heap knows
/// each block's size and alignment, so each is a plain free.
macro_rules! delete_forms {
    ($($name:ident($($arg:ident: $t:ty),*) = $what:literal;)*) => {$(
        #[doc = $what]
        #[no_mangle]
        pub extern "C" fn $name(p: *mut c_void $(, $arg: $t)*) {
            free(p)
        }
    )*};
}

delete_forms! {
    _ZdlPv() = "`operator delete(void *)`";
    _ZdaPv() = "`operator delete[](void *)`";
    _ZdlPvj(_n: usize) = "`operator delete(void *, size_t)`";
    _ZdaPvj(_n: usize) = "`operator delete[](void *, size_t)`";
    _ZdlPvRKSt9nothrow_t(_tag: *const u8) = "`operator delete(void *, const std::nothrow_t &)`";
    _ZdaPvRKSt9nothrow_t(_tag: *const u8) = "`operator delete[](void *, const std::nothrow_t &)`";
    _ZdlPvSt11align_val_t(_align: usize) = "`operator delete(void *, std::align_val_t)`";
    _ZdaPvSt11align_val_t(_align: usize) = "`operator delete[](void *, std::align_val_t)`";
    _ZdlPvjSt11align_val_t(_n: usize, _align: usize) =
        "`operator delete(void *, size_t, std::align_val_t)`";
    _ZdaPvjSt11align_val_t(_n: usize, _align: usize) =
        "`operator delete[](void *, size_t, std::align_val_t)`";
    _ZdlPvSt11align_val_tRKSt9nothrow_t(_align: usize, _tag: *const u8) =
        "`operator delete(void *, std::align_val_t, const std::nothrow_t &)`";
    _ZdaPvSt11align_val_tRKSt9nothrow_t(_align: usize, _tag: *const u8) =
        "`operator delete[](void *, std::align_val_t, const std::nothrow_t &)`";
}
