//! The device's `string.h` beyond the memory primitives (device builds of the archive;
//! `mem*` and `strlen` come with the archive's libc and compiler-builtins), and
//! `stdlib.h`'s `abs` family.
#![allow(clippy::missing_safety_doc)]

use core::ffi::{c_char, c_int, c_void};

/// Bytes as C compares them (unsigned char).
unsafe fn at(s: *const c_char, i: usize) -> u8 {
    // SAFETY: the caller keeps `i` within the string (its NUL included).
    unsafe { *s.cast::<u8>().add(i) }
}

/// `strlen` of the i386 device-model archive (D97): rustc's compiler-builtins defines it
/// for device targets only (an operating system's C library has it elsewhere).
#[cfg(all(target_arch = "x86", not(target_os = "none")))]
#[no_mangle]
pub unsafe extern "C" fn strlen(s: *const c_char) -> usize {
    let mut n = 0;
    // SAFETY: a NUL-terminated string (C's contract); stops at the NUL.
    while unsafe { at(s, n) } != 0 {
        n += 1;
    }
    n
}

#[no_mangle]
pub unsafe extern "C" fn strnlen(s: *const c_char, max: usize) -> usize {
    let mut n = 0;
    // SAFETY: stops at the NUL or at `max`.
    while n < max && unsafe { at(s, n) } != 0 {
        n += 1;
    }
    n
}

#[no_mangle]
pub unsafe extern "C" fn strncmp(a: *const c_char, b: *const c_char, n: usize) -> c_int {
    for i in 0..n {
        // SAFETY: both strings are read up to their NUL at most.
        let (x, y) = unsafe { (at(a, i), at(b, i)) };
        if x != y || x == 0 {
            return c_int::from(x) - c_int::from(y);
        }
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn strcmp(a: *const c_char, b: *const c_char) -> c_int {
    // SAFETY: as strncmp, bounded by the NULs.
    unsafe { strncmp(a, b, usize::MAX) }
}

#[no_mangle]
pub unsafe extern "C" fn strcpy(dst: *mut c_char, src: *const c_char) -> *mut c_char {
    // SAFETY: the caller's `dst` holds `src` and its NUL, as C requires.
    unsafe {
        let n = strnlen(src, usize::MAX);
        core::ptr::copy_nonoverlapping(src, dst, n + 1);
    }
    dst
}

#[no_mangle]
pub unsafe extern "C" fn strncpy(dst: *mut c_char, src: *const c_char, n: usize) -> *mut c_char {
    // SAFETY: `dst` holds `n` bytes; the rest is zero-filled, as C specifies.
    unsafe {
        let k = strnlen(src, n);
        core::ptr::copy_nonoverlapping(src, dst, k);
        core::ptr::write_bytes(dst.add(k), 0, n - k);
    }
    dst
}

#[no_mangle]
pub unsafe extern "C" fn strcat(dst: *mut c_char, src: *const c_char) -> *mut c_char {
    // SAFETY: `dst` has room for both strings and a NUL.
    unsafe { strcpy(dst.add(strnlen(dst, usize::MAX)), src) };
    dst
}

#[no_mangle]
pub unsafe extern "C" fn strncat(dst: *mut c_char, src: *const c_char, n: usize) -> *mut c_char {
    // SAFETY: `dst` has room for its string, `n` more bytes and a NUL.
    unsafe {
        let end = dst.add(strnlen(dst, usize::MAX));
        let k = strnlen(src, n);
        core::ptr::copy_nonoverlapping(src, end, k);
        *end.add(k) = 0;
    }
    dst
}

#[no_mangle]
pub unsafe extern "C" fn strchr(s: *const c_char, c: c_int) -> *mut c_char {
    let c = c as u8;
    let mut i = 0;
    loop {
        // SAFETY: reads up to the NUL.
        let b = unsafe { at(s, i) };
        if b == c {
            return s.wrapping_add(i).cast_mut();
        }
        if b == 0 {
            return core::ptr::null_mut();
        }
        i += 1;
    }
}

#[no_mangle]
pub unsafe extern "C" fn strrchr(s: *const c_char, c: c_int) -> *mut c_char {
    let c = c as u8;
    let mut found = core::ptr::null_mut();
    let mut i = 0;
    loop {
        // SAFETY: reads up to the NUL.
        let b = unsafe { at(s, i) };
        if b == c {
            found = s.wrapping_add(i).cast_mut();
        }
        if b == 0 {
            return found;
        }
        i += 1;
    }
}

#[no_mangle]
pub unsafe extern "C" fn strstr(hay: *const c_char, needle: *const c_char) -> *mut c_char {
    // SAFETY: both are NUL-terminated.
    let n = unsafe { strnlen(needle, usize::MAX) };
    let mut i = 0;
    loop {
        // SAFETY: the comparison stops at the haystack's NUL (a mismatch with the needle).
        if unsafe { strncmp(hay.add(i), needle, n) } == 0 {
            return hay.wrapping_add(i).cast_mut();
        }
        // SAFETY: reads up to the NUL.
        if unsafe { at(hay, i) } == 0 {
            return core::ptr::null_mut();
        }
        i += 1;
    }
}

#[no_mangle]
pub extern "C" fn abs(v: c_int) -> c_int {
    v.wrapping_abs()
}

#[no_mangle]
pub extern "C" fn labs(v: core::ffi::c_long) -> core::ffi::c_long {
    v.wrapping_abs()
}

#[no_mangle]
pub extern "C" fn llabs(v: i64) -> i64 {
    v.wrapping_abs()
}

#[no_mangle]
pub unsafe extern "C" fn memchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void {
    if n == 0 {
        return core::ptr::null_mut();
    }
    let c = c as u8;
    // SAFETY: the caller's `s` holds `n` bytes (C contract), so it is not NULL.
    let bytes = unsafe { core::slice::from_raw_parts(s.cast::<u8>(), n) };
    bytes
        .iter()
        .position(|&b| b == c)
        .map_or(core::ptr::null_mut(), |i| s.wrapping_add(i).cast_mut())
}

/// The "C" locale collates as strcmp.
#[no_mangle]
pub unsafe extern "C" fn strcoll(a: *const c_char, b: *const c_char) -> c_int {
    // SAFETY: as strcmp.
    unsafe { strcmp(a, b) }
}

/// The "C" locale's transformation is the identity: copies `src` when it fits in `n`
/// bytes with its NUL; the length it needs either way.
#[no_mangle]
pub unsafe extern "C" fn strxfrm(dst: *mut c_char, src: *const c_char, n: usize) -> usize {
    // SAFETY: NUL-terminated `src`; `dst` holds `n` bytes (C contract).
    unsafe {
        let len = strnlen(src, usize::MAX);
        if len < n {
            core::ptr::copy_nonoverlapping(src, dst, len + 1);
        }
        len
    }
}

/// The length of the prefix of `s` whose bytes are (`inside`) or are not in `set`.
unsafe fn span(s: *const c_char, set: *const c_char, inside: bool) -> usize {
    // SAFETY: both NUL-terminated (C contract).
    let set = unsafe { core::ffi::CStr::from_ptr(set) }.to_bytes();
    let mut i = 0;
    loop {
        // SAFETY: reads up to the NUL.
        let b = unsafe { at(s, i) };
        if b == 0 || set.contains(&b) != inside {
            return i;
        }
        i += 1;
    }
}

#[no_mangle]
pub unsafe extern "C" fn strspn(s: *const c_char, accept: *const c_char) -> usize {
    // SAFETY: the C contract, passed on.
    unsafe { span(s, accept, true) }
}

#[no_mangle]
pub unsafe extern "C" fn strcspn(s: *const c_char, reject: *const c_char) -> usize {
    // SAFETY: the C contract, passed on.
    unsafe { span(s, reject, false) }
}

#[no_mangle]
pub unsafe extern "C" fn strpbrk(s: *const c_char, accept: *const c_char) -> *mut c_char {
    // SAFETY: the C contract; the offset lies within `s` (its NUL at most).
    unsafe {
        let i = span(s, accept, false);
        if at(s, i) == 0 {
            core::ptr::null_mut()
        } else {
            s.add(i).cast_mut()
        }
    }
}

/// Where `strtok` goes on (NULL: nothing left); one per core, as C's one per program.
static STRTOK_NEXT: crate::runtime::global::Global<usize> = crate::runtime::global::Global::new(0);

#[no_mangle]
pub unsafe extern "C" fn strtok(s: *mut c_char, delim: *const c_char) -> *mut c_char {
    let start = if s.is_null() {
        STRTOK_NEXT.with(|n| *n) as *mut c_char
    } else {
        s
    };
    if start.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: `start` points into the caller's NUL-terminated, writable string (C
    // contract: the string of the first call, still alive).
    unsafe {
        let tok = start.add(span(start, delim, true));
        if *tok == 0 {
            STRTOK_NEXT.with(|n| *n = 0);
            return core::ptr::null_mut();
        }
        let end = tok.add(span(tok, delim, false));
        let next = if *end == 0 {
            0
        } else {
            *end = 0;
            end.add(1) as usize
        };
        STRTOK_NEXT.with(|n| *n = next);
        tok
    }
}

/// glibc's wording for the numbers the device libc reports; others are unknown.
#[no_mangle]
pub extern "C" fn strerror(e: c_int) -> *mut c_char {
    use crate::libc::cerrno::{EDOM, EILSEQ, EINVAL, ENOMEM, ERANGE};
    let text: &'static core::ffi::CStr = match e {
        0 => c"Success",
        ENOMEM => c"Cannot allocate memory",
        EINVAL => c"Invalid argument",
        EDOM => c"Numerical argument out of domain",
        ERANGE => c"Numerical result out of range",
        EILSEQ => c"Invalid or incomplete multibyte or wide character",
        _ => c"Unknown error",
    };
    text.as_ptr().cast_mut()
}
