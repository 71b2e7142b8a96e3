//! The device's C `printf` family (device builds of the archive): formatting by
//! [`crate::libc::printf`], output to the Pool stdio ring through the runtime's write service
//! (fd 1), as the vendor's printf reaches the host. `snprintf` and friends format into the
//! caller's buffer with C's truncation rules.
//!
//! On Xtensa the variadic entry points are C (`customop-device/xtensa/cstdio.c`, built by
//! GCC), since LLVM's Xtensa `va_list` disagrees with GCC's under QEMU (D54): they read
//! their arguments with GCC's `va_arg` and hand them to [`customop_vformat`] through a
//! table of readers. Other device targets use Rust's variadic functions below.
#![allow(clippy::missing_safety_doc)]

use core::ffi::{c_char, c_int};
#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
use core::ffi::{c_long, VaList};

use crate::libc::printf::{self, Args, IntSize};

/// Arguments from a C `va_list`.
#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
struct VaArgs<'a, 'f>(&'a mut VaList<'f>);

#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
impl Args for VaArgs<'_, '_> {
    fn signed(&mut self, size: IntSize) -> i64 {
        // SAFETY (all reads): the format promised an argument of this C type; C promotes
        // char and short to int.
        unsafe {
            match size {
                IntSize::Char => i64::from(self.0.arg::<c_int>() as i8),
                IntSize::Short => i64::from(self.0.arg::<c_int>() as i16),
                IntSize::Int => i64::from(self.0.arg::<c_int>()),
                IntSize::Long => self.0.arg::<c_long>() as i64,
                IntSize::LongLong | IntSize::Max => self.0.arg::<i64>(),
                IntSize::Size => self.0.arg::<isize>() as i64,
            }
        }
    }

    fn unsigned(&mut self, size: IntSize) -> u64 {
        // SAFETY: as for `signed`.
        unsafe {
            match size {
                IntSize::Char => u64::from(self.0.arg::<c_int>() as u8),
                IntSize::Short => u64::from(self.0.arg::<c_int>() as u16),
                IntSize::Int => u64::from(self.0.arg::<c_int>() as u32),
                IntSize::Long => self.0.arg::<c_long>() as u32 as u64,
                IntSize::LongLong | IntSize::Max => self.0.arg::<u64>(),
                IntSize::Size => self.0.arg::<usize>() as u64,
            }
        }
    }

    fn double(&mut self) -> f64 {
        // SAFETY: the format promised a double (floats are promoted).
        unsafe { self.0.arg::<f64>() }
    }

    fn pointer(&mut self) -> usize {
        // SAFETY: the format promised a pointer.
        unsafe { self.0.arg::<*const u8>() as usize }
    }

    fn string(&mut self, max: usize) -> Option<&[u8]> {
        // SAFETY: the format promised a char *, NUL-terminated or at least `max` readable.
        unsafe { c_string(self.0.arg::<*const u8>(), max) }
    }
}

/// The bytes of a NUL-terminated C string.
unsafe fn c_bytes<'a>(s: *const c_char) -> &'a [u8] {
    // SAFETY: the caller passes a NUL-terminated string.
    unsafe { core::ffi::CStr::from_ptr(s) }.to_bytes()
}

/// Output collected in a small buffer and written to fd 1 in pieces.
struct Stdout {
    buf: [u8; 128],
    n: usize,
}

impl Stdout {
    fn put(&mut self, b: &[u8]) {
        for chunk in b.chunks(self.buf.len()) {
            if self.n + chunk.len() > self.buf.len() {
                self.flush();
            }
            self.buf[self.n..self.n + chunk.len()].copy_from_slice(chunk);
            self.n += chunk.len();
        }
    }

    fn flush(&mut self) {
        if self.n > 0 {
            crate::runtime::stdio::write(1, &self.buf[..self.n]);
            self.n = 0;
        }
    }
}

fn clamp(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// Argument readers the C entry points give [`customop_vformat`] (each reads the next
/// argument of its C type from the caller's `va_list`, which `ctx` points to).
#[repr(C)]
pub struct CArgReaders {
    pub ctx: *mut core::ffi::c_void,
    pub int: unsafe extern "C" fn(*mut core::ffi::c_void) -> c_int,
    pub long_long: unsafe extern "C" fn(*mut core::ffi::c_void) -> i64,
    pub double: unsafe extern "C" fn(*mut core::ffi::c_void) -> f64,
    pub pointer: unsafe extern "C" fn(*mut core::ffi::c_void) -> *const u8,
}

impl Args for &CArgReaders {
    fn signed(&mut self, size: IntSize) -> i64 {
        // SAFETY (all calls): the C side's readers over the caller's va_list, one argument
        // of the promised C type each. On the device long and size_t are 32 bits.
        unsafe {
            match size {
                IntSize::Char => i64::from((self.int)(self.ctx) as i8),
                IntSize::Short => i64::from((self.int)(self.ctx) as i16),
                IntSize::Int | IntSize::Long | IntSize::Size => i64::from((self.int)(self.ctx)),
                IntSize::LongLong | IntSize::Max => (self.long_long)(self.ctx),
            }
        }
    }

    fn unsigned(&mut self, size: IntSize) -> u64 {
        // SAFETY: as for `signed`.
        unsafe {
            match size {
                IntSize::Char => u64::from((self.int)(self.ctx) as u8),
                IntSize::Short => u64::from((self.int)(self.ctx) as u16),
                IntSize::Int | IntSize::Long | IntSize::Size => {
                    u64::from((self.int)(self.ctx) as u32)
                }
                IntSize::LongLong | IntSize::Max => (self.long_long)(self.ctx) as u64,
            }
        }
    }

    fn double(&mut self) -> f64 {
        // SAFETY: as for `signed`.
        unsafe { (self.double)(self.ctx) }
    }

    fn pointer(&mut self) -> usize {
        // SAFETY: as for `signed`.
        unsafe { (self.pointer)(self.ctx) as usize }
    }

    fn string(&mut self, max: usize) -> Option<&[u8]> {
        // SAFETY: as for `signed`; then as `VaArgs::string`.
        let p = unsafe { (self.pointer)(self.ctx) };
        // SAFETY: a char * the format promised.
        unsafe { c_string(p, max) }
    }
}

/// The bytes of a C string at `p` up to its NUL or `max` (`None`: NULL).
unsafe fn c_string<'a>(p: *const u8, max: usize) -> Option<&'a [u8]> {
    if p.is_null() {
        return None;
    }
    let mut n = 0;
    // SAFETY: reads stop at the NUL or at `max`, within what the caller promised.
    while n < max && unsafe { *p.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: the `n` bytes just read.
    Some(unsafe { core::slice::from_raw_parts(p, n) })
}

/// Formats for the C entry points: into `buf` (at most `size` bytes with the NUL, C's
/// snprintf rules) or, when `buf` is NULL, to fd 1. Returns the full length.
#[no_mangle]
pub unsafe extern "C" fn customop_vformat(
    buf: *mut c_char,
    size: usize,
    format: *const c_char,
    readers: *const CArgReaders,
) -> c_int {
    // SAFETY: the C entry points pass their own reader table and a NUL-terminated format.
    let (mut args, f) = unsafe { (&*readers, c_bytes(format)) };
    if buf.is_null() {
        let mut out = Stdout {
            buf: [0; 128],
            n: 0,
        };
        let n = printf::format(f, &mut args, &mut |b| out.put(b));
        out.flush();
        return clamp(n);
    }
    // SAFETY: the caller's buffer holds `size` bytes.
    unsafe { into_buffer(buf, size, f, &mut args) }
}

/// `vsnprintf`'s body: formatted bytes into `buf` (`size` with the NUL), the full length.
unsafe fn into_buffer(buf: *mut c_char, size: usize, f: &[u8], args: &mut dyn Args) -> c_int {
    let mut at = 0usize;
    let n = printf::format(f, args, &mut |b| {
        // Keep room for the NUL; bytes beyond `size - 1` are counted, not stored.
        let room = size.saturating_sub(1).saturating_sub(at);
        let k = b.len().min(room);
        if k > 0 {
            // SAFETY: the caller's buffer holds `size` bytes; at + k < size.
            unsafe { core::ptr::copy_nonoverlapping(b.as_ptr(), buf.cast::<u8>().add(at), k) };
        }
        at += k;
    });
    if size > 0 {
        // SAFETY: at <= size - 1.
        unsafe { *buf.add(at) = 0 };
    }
    clamp(n)
}

#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
#[no_mangle]
pub unsafe extern "C" fn vprintf(format: *const c_char, mut ap: VaList<'_>) -> c_int {
    let mut out = Stdout {
        buf: [0; 128],
        n: 0,
    };
    // SAFETY: a NUL-terminated format, as C requires.
    let f = unsafe { c_bytes(format) };
    let n = printf::format(f, &mut VaArgs(&mut ap), &mut |b| out.put(b));
    out.flush();
    clamp(n)
}

#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
#[no_mangle]
pub unsafe extern "C" fn printf(format: *const c_char, args: ...) -> c_int {
    // SAFETY: forwarded as C's printf forwards to vprintf.
    unsafe { vprintf(format, args) }
}

#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
#[no_mangle]
pub unsafe extern "C" fn vsnprintf(
    buf: *mut c_char,
    size: usize,
    format: *const c_char,
    mut ap: VaList<'_>,
) -> c_int {
    // SAFETY: a NUL-terminated format and the caller's buffer of `size` bytes.
    unsafe { into_buffer(buf, size, c_bytes(format), &mut VaArgs(&mut ap)) }
}

#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
#[no_mangle]
pub unsafe extern "C" fn snprintf(
    buf: *mut c_char,
    size: usize,
    format: *const c_char,
    args: ...
) -> c_int {
    // SAFETY: forwarded.
    unsafe { vsnprintf(buf, size, format, args) }
}

#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
#[no_mangle]
pub unsafe extern "C" fn vsprintf(
    buf: *mut c_char,
    format: *const c_char,
    ap: VaList<'_>,
) -> c_int {
    // SAFETY: sprintf trusts the caller's buffer to be large enough, as C does.
    unsafe { vsnprintf(buf, usize::MAX, format, ap) }
}

#[cfg(not(any(target_arch = "xtensa", target_arch = "x86")))]
#[no_mangle]
pub unsafe extern "C" fn sprintf(buf: *mut c_char, format: *const c_char, args: ...) -> c_int {
    // SAFETY: forwarded.
    unsafe { vsprintf(buf, format, args) }
}

#[no_mangle]
pub unsafe extern "C" fn puts(s: *const c_char) -> c_int {
    // SAFETY: a NUL-terminated string.
    let b = unsafe { c_bytes(s) };
    crate::runtime::stdio::write(1, b);
    crate::runtime::stdio::write(1, b"\n");
    clamp(b.len() + 1)
}

#[no_mangle]
pub extern "C" fn putchar(c: c_int) -> c_int {
    crate::runtime::stdio::write(1, &[c as u8]);
    c & 0xff
}
