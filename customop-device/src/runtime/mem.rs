//! The memory primitives: the C and vector memcpy backends and the device libc's
//! memcpy/memmove/memset/memcmp. The crate is `#![no_builtins]`, so these loops are never
//! turned back into calls to the functions they implement.

use core::ptr;

const WORD: usize = core::mem::size_of::<usize>();

/// Bytes one "vector" iteration moves (the IVP loop's 128-byte step).
pub const VECTOR_STEP: usize = 128;

/// Forward copy of a few bytes: words while both pointers allow it, bytes otherwise. Kept
/// out of line so [`copy_bytes`] needs no stack frame on its wide paths.
///
/// # Safety
/// `dst` is writable and `src` readable for `n` bytes; the ranges do not overlap.
#[inline(never)]
unsafe fn copy_small(dst: *mut u8, src: *const u8, n: usize) {
    let mut i = 0;
    // SAFETY (whole body): i + WORD <= n and i < n keep every access in bounds.
    unsafe {
        if (dst as usize) % WORD == (src as usize) % WORD {
            while i < n && !(dst as usize + i).is_multiple_of(WORD) {
                *dst.add(i) = *src.add(i);
                i += 1;
            }
            while i + WORD <= n {
                (dst.add(i) as *mut usize).write((src.add(i) as *const usize).read());
                i += WORD;
            }
        } else {
            while i + WORD <= n {
                (dst.add(i) as *mut usize)
                    .write_unaligned((src.add(i) as *const usize).read_unaligned());
                i += WORD;
            }
        }
        while i < n {
            *dst.add(i) = *src.add(i);
            i += 1;
        }
    }
}

/// Forward copy (the C backend of `neuron_memcpy`, and the device libc's memcpy): 16-byte
/// moves (32-byte ones where the host CPU has AVX), the last partial block as one
/// overlapping move; words and bytes below 16.
///
/// # Safety
/// `dst` is writable and `src` readable for `n` bytes; the ranges do not overlap.
#[inline]
pub unsafe fn copy_bytes(dst: *mut u8, src: *const u8, n: usize) {
    // A dispatcher only: every path is a tail call, so the common sizes pay no frame.
    if n < 16 {
        // SAFETY: the caller's contract.
        return unsafe { copy_small(dst, src, n) };
    }
    #[cfg(strict_alignment)]
    // SAFETY: the caller's contract.
    return unsafe { aligned::copy(dst, src, n) };
    #[cfg(all(target_arch = "x86_64", not(target_os = "none")))]
    if n >= 64 {
        match avx::known() {
            // SAFETY: AVX is present (checked); the caller's contract.
            Some(true) => return unsafe { avx::copy(dst, src, n) },
            // SAFETY: the caller's contract.
            None => return unsafe { copy_after_look(dst, src, n) },
            Some(false) => {}
        }
    }
    // SAFETY: the caller's contract, n >= 16.
    #[cfg(not(strict_alignment))]
    unsafe {
        copy_16(dst, src, n)
    }
}

/// [`copy_bytes`] the first time, before the CPU's AVX is known (out of line, so the common
/// path keeps no frame).
///
/// # Safety
/// As [`copy_bytes`], and `n >= 64`.
#[cfg(all(target_arch = "x86_64", not(target_os = "none")))]
#[cold]
#[inline(never)]
unsafe fn copy_after_look(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's contract; AVX checked.
    unsafe {
        if avx::available() {
            avx::copy(dst, src, n)
        } else {
            copy_16(dst, src, n)
        }
    }
}

/// Forward copy of 16 bytes or more in 16-byte moves, the last partial block as one
/// overlapping move.
///
/// # Safety
/// As [`copy_bytes`], and `n >= 16`.
#[cfg_attr(strict_alignment, allow(dead_code))]
#[inline(never)]
unsafe fn copy_16(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY (whole body): every 16-byte move lies within [0, n), n >= 16.
    unsafe {
        let mut i = 0;
        while i + 64 <= n {
            let a = (src.add(i) as *const u128).read_unaligned();
            let b = (src.add(i + 16) as *const u128).read_unaligned();
            let c = (src.add(i + 32) as *const u128).read_unaligned();
            let d = (src.add(i + 48) as *const u128).read_unaligned();
            (dst.add(i) as *mut u128).write_unaligned(a);
            (dst.add(i + 16) as *mut u128).write_unaligned(b);
            (dst.add(i + 32) as *mut u128).write_unaligned(c);
            (dst.add(i + 48) as *mut u128).write_unaligned(d);
            i += 64;
        }
        while i + 16 <= n {
            let v = (src.add(i) as *const u128).read_unaligned();
            (dst.add(i) as *mut u128).write_unaligned(v);
            i += 16;
        }
        if i < n {
            let v = (src.add(n - 16) as *const u128).read_unaligned();
            (dst.add(n - 16) as *mut u128).write_unaligned(v);
        }
    }
}

/// The VEC backend of `neuron_memcpy`: the device's IVP loop moves 128-byte steps through
/// vector registers; here the same wide moves as [`copy_bytes`] (both backends give the
/// same bytes; the record does not pin their speeds).
///
/// # Safety
/// As [`copy_bytes`].
#[inline]
pub unsafe fn copy_vector(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's contract.
    unsafe { copy_bytes(dst, src, n) }
}

/// 32-byte moves on hosts with AVX (the emulator's builds), found once with CPUID.
#[cfg(all(target_arch = "x86_64", not(target_os = "none")))]
mod avx {
    use core::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_storeu_si256};
    use core::sync::atomic::{AtomicU8, Ordering};

    /// 0 unknown, 1 absent, 2 present.
    static AVX: AtomicU8 = AtomicU8::new(0);

    /// Whether the CPU has AVX, if already found (one load: a copy's fast path then makes
    /// no call).
    #[inline(always)]
    pub fn known() -> Option<bool> {
        match AVX.load(Ordering::Relaxed) {
            2 => Some(true),
            1 => Some(false),
            _ => None,
        }
    }

    /// Inlined, so a copy's fast path is one load and a tail call (no frame, no call).
    #[inline(always)]
    pub fn available() -> bool {
        match AVX.load(Ordering::Relaxed) {
            2 => true,
            1 => false,
            _ => first_look(),
        }
    }

    #[cold]
    #[inline(never)]
    fn first_look() -> bool {
        let yes = detect();
        AVX.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
        yes
    }

    fn detect() -> bool {
        // SAFETY: CPUID leaf 1 exists on every x86_64 CPU (the call is unsafe in older
        // toolchains, safe in newer ones).
        #[allow(unused_unsafe)]
        let ecx = unsafe { core::arch::x86_64::__cpuid(1) }.ecx;
        let (osxsave, avx) = (ecx & (1 << 27) != 0, ecx & (1 << 28) != 0);
        if !(osxsave && avx) {
            return false;
        }
        // SAFETY: XGETBV is available (OSXSAVE set); register 0 is XCR0.
        let xcr0 = unsafe { core::arch::x86_64::_xgetbv(0) };
        xcr0 & 0b110 == 0b110
    }

    /// # Safety
    /// AVX is available; `dst` writable and `src` readable for `n >= 64` bytes, disjoint.
    #[target_feature(enable = "avx")]
    pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY (whole body): every 32-byte move lies within [0, n), n >= 64.
        unsafe {
            let ld = |at: usize| _mm256_loadu_si256(src.add(at) as *const __m256i);
            let st = |at: usize, v| _mm256_storeu_si256(dst.add(at) as *mut __m256i, v);
            if n <= 128 {
                // Two moves from each end, overlapping in the middle.
                let (a, b, c, d) = (ld(0), ld(32), ld(n - 64), ld(n - 32));
                st(0, a);
                st(32, b);
                st(n - 64, c);
                st(n - 32, d);
                return;
            }
            if n <= 256 {
                let (a, b, c, d) = (ld(0), ld(32), ld(64), ld(96));
                let (e, f, g, h) = (ld(n - 128), ld(n - 96), ld(n - 64), ld(n - 32));
                st(0, a);
                st(32, b);
                st(64, c);
                st(96, d);
                st(n - 128, e);
                st(n - 96, f);
                st(n - 64, g);
                st(n - 32, h);
                return;
            }
            if n >= 2048 {
                // Large copies: the CPU's own string move (ERMS), as glibc uses.
                core::arch::asm!(
                    "rep movsb",
                    inout("rcx") n => _,
                    inout("rdi") dst => _,
                    inout("rsi") src => _,
                    options(nostack, preserves_flags)
                );
                return;
            }
            let mut i = 0;
            while i + 128 <= n {
                let a = _mm256_loadu_si256(src.add(i) as *const __m256i);
                let b = _mm256_loadu_si256(src.add(i + 32) as *const __m256i);
                let c = _mm256_loadu_si256(src.add(i + 64) as *const __m256i);
                let d = _mm256_loadu_si256(src.add(i + 96) as *const __m256i);
                _mm256_storeu_si256(dst.add(i) as *mut __m256i, a);
                _mm256_storeu_si256(dst.add(i + 32) as *mut __m256i, b);
                _mm256_storeu_si256(dst.add(i + 64) as *mut __m256i, c);
                _mm256_storeu_si256(dst.add(i + 96) as *mut __m256i, d);
                i += 128;
            }
            while i + 32 <= n {
                let v = _mm256_loadu_si256(src.add(i) as *const __m256i);
                _mm256_storeu_si256(dst.add(i) as *mut __m256i, v);
                i += 32;
            }
            if i < n {
                let v = _mm256_loadu_si256(src.add(n - 32) as *const __m256i);
                _mm256_storeu_si256(dst.add(n - 32) as *mut __m256i, v);
            }
        }
    }
}

/// `memmove`: a correct copy for overlapping ranges.
///
/// # Safety
/// `dst` is writable and `src` readable for `n` bytes.
pub unsafe fn move_bytes(dst: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dst as usize, src as usize);
    if d >= s.wrapping_add(n) || s >= d.wrapping_add(n) {
        // SAFETY: disjoint ranges.
        unsafe { copy_bytes(dst, src, n) }
    } else if s - d.min(s) >= WORD {
        // SAFETY: dst trailing src by at least a word: copy_small reads each word (or byte)
        // before writing a destination that lies wholly below the source bytes still to be
        // read.
        unsafe { copy_small(dst, src, n) }
    } else if d < s {
        // SAFETY: dst trails src by less than a word: byte by byte, forwards.
        unsafe {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
    } else {
        // SAFETY: dst above src and overlapping: byte by byte, backwards.
        unsafe {
            let mut i = n;
            while i > 0 {
                i -= 1;
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// `memset`.
///
/// # Safety
/// `dst` is writable for `n` bytes.
pub unsafe fn set_bytes(dst: *mut u8, c: u8, n: usize) {
    #[cfg(strict_alignment)]
    // SAFETY: the caller's contract.
    return unsafe { aligned::set(dst, c, n) };
    #[cfg(not(strict_alignment))]
    // SAFETY: the caller's contract.
    unsafe {
        set_unaligned(dst, c, n)
    }
}

/// `memset` where unaligned word stores are cheap.
///
/// # Safety
/// `dst` is writable for `n` bytes.
#[cfg_attr(strict_alignment, allow(dead_code))]
unsafe fn set_unaligned(dst: *mut u8, c: u8, n: usize) {
    // SAFETY: in bounds by the loop conditions.
    unsafe {
        let mut i = 0;
        let word = usize::from_ne_bytes([c; WORD]);
        while i + WORD <= n {
            (dst.add(i) as *mut usize).write_unaligned(word);
            i += WORD;
        }
        while i < n {
            ptr::write(dst.add(i), c);
            i += 1;
        }
    }
}

/// Copies and fills for cores without unaligned loads and stores (the device's Xtensa
/// cores, where the compiler turns every unaligned word access into byte accesses: the
/// 16-byte moves above cost 16 loads and 16 stores each there, D85). Word accesses are
/// aligned; a source misaligned against its destination is read as aligned words and
/// shifted together. Built on every target, so the host's tests cover it; used where
/// `strict_alignment` is set (build.rs).
#[cfg_attr(not(strict_alignment), allow(dead_code))]
mod aligned {
    use super::WORD;

    /// # Safety
    /// As [`super::copy_bytes`].
    #[inline(never)]
    pub unsafe fn copy(mut dst: *mut u8, mut src: *const u8, mut n: usize) {
        // SAFETY (whole body): each access lies in [dst, dst+n) or [src, src+n) as they
        // stand, or (the shifted path) reads an aligned word holding at least one byte of
        // the source range: such a word never crosses a page or a guard.
        unsafe {
            // Bytes until the destination is aligned.
            while n > 0 && !(dst as usize).is_multiple_of(WORD) {
                *dst = *src;
                dst = dst.add(1);
                src = src.add(1);
                n -= 1;
            }
            let mut d = dst as *mut usize;
            let skew = src as usize % WORD;
            if skew == 0 {
                let mut s = src as *const usize;
                while n >= 4 * WORD {
                    let (a, b, c, e) = (*s, *s.add(1), *s.add(2), *s.add(3));
                    *d = a;
                    *d.add(1) = b;
                    *d.add(2) = c;
                    *d.add(3) = e;
                    d = d.add(4);
                    s = s.add(4);
                    n -= 4 * WORD;
                }
                while n >= WORD {
                    *d = *s;
                    d = d.add(1);
                    s = s.add(1);
                    n -= WORD;
                }
                src = s as *const u8;
            } else if n >= WORD {
                // Each destination word takes the top of one aligned source word and the
                // bottom of the next.
                let (lo, hi) = (skew * 8, (WORD - skew) * 8);
                let mut s = src.sub(skew) as *const usize;
                let mut prev = *s;
                while n >= WORD {
                    let next = *s.add(1);
                    #[cfg(target_endian = "little")]
                    let w = (prev >> lo) | (next << hi);
                    #[cfg(target_endian = "big")]
                    let w = (prev << lo) | (next >> hi);
                    *d = w;
                    prev = next;
                    d = d.add(1);
                    s = s.add(1);
                    n -= WORD;
                }
                src = (s as *const u8).add(skew);
            }
            let mut dst = d as *mut u8;
            while n > 0 {
                *dst = *src;
                dst = dst.add(1);
                src = src.add(1);
                n -= 1;
            }
        }
    }

    /// # Safety
    /// `dst` is writable for `n` bytes.
    #[inline(never)]
    pub unsafe fn set(mut dst: *mut u8, c: u8, mut n: usize) {
        // SAFETY (whole body): every store lies in [dst, dst+n) as they stand.
        unsafe {
            while n > 0 && !(dst as usize).is_multiple_of(WORD) {
                *dst = c;
                dst = dst.add(1);
                n -= 1;
            }
            let word = usize::from_ne_bytes([c; WORD]);
            let mut d = dst as *mut usize;
            while n >= 4 * WORD {
                *d = word;
                *d.add(1) = word;
                *d.add(2) = word;
                *d.add(3) = word;
                d = d.add(4);
                n -= 4 * WORD;
            }
            while n >= WORD {
                *d = word;
                d = d.add(1);
                n -= WORD;
            }
            let mut dst = d as *mut u8;
            while n > 0 {
                *dst = c;
                dst = dst.add(1);
                n -= 1;
            }
        }
    }
}

/// `memcmp`: the sign of the first differing byte (as unsigned char).
///
/// # Safety
/// Both pointers are readable for `n` bytes.
pub unsafe fn compare_bytes(a: *const u8, b: *const u8, n: usize) -> i32 {
    for i in 0..n {
        // SAFETY: i < n.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn copies_match_core_ptr_copy_at_every_offset_and_length() {
        let src = pattern(600);
        for len in (0..=257).chain([1000, 4096, 65_537]) {
            let src = if len > 600 {
                pattern(len + 16)
            } else {
                src.clone()
            };
            for off_s in 0..8 {
                for off_d in 0..8 {
                    if off_s + len > src.len() {
                        continue;
                    }
                    let mut want = std::vec![0xEEu8; len + 16];
                    let mut got_c = want.clone();
                    let mut got_v = want.clone();
                    // SAFETY: in-bounds, non-overlapping buffers.
                    unsafe {
                        ptr::copy(src.as_ptr().add(off_s), want.as_mut_ptr().add(off_d), len);
                        copy_bytes(got_c.as_mut_ptr().add(off_d), src.as_ptr().add(off_s), len);
                        copy_vector(got_v.as_mut_ptr().add(off_d), src.as_ptr().add(off_s), len);
                    }
                    assert_eq!(got_c, want, "C len {len} src+{off_s} dst+{off_d}");
                    assert_eq!(got_v, want, "VEC len {len} src+{off_s} dst+{off_d}");
                }
            }
        }
    }

    #[test]
    fn aligned_copy_and_set_match_at_every_offset_and_length() {
        for len in (0..=130).chain([1000, 4099]) {
            let src = pattern(len + 16);
            for off_s in 0..8 {
                for off_d in 0..8 {
                    let mut want = std::vec![0xEEu8; len + 16];
                    let mut got = want.clone();
                    // SAFETY: in-bounds, non-overlapping buffers.
                    unsafe {
                        ptr::copy(src.as_ptr().add(off_s), want.as_mut_ptr().add(off_d), len);
                        aligned::copy(got.as_mut_ptr().add(off_d), src.as_ptr().add(off_s), len);
                    }
                    assert_eq!(got, want, "len {len} src+{off_s} dst+{off_d}");
                }
                let mut want = std::vec![1u8; len + 16];
                let mut got = want.clone();
                want[off_s..off_s + len].fill(0xAB);
                // SAFETY: in bounds.
                unsafe { aligned::set(got.as_mut_ptr().add(off_s), 0xAB, len) };
                assert_eq!(got, want, "set len {len} at +{off_s}");
            }
        }
    }

    #[test]
    fn memmove_handles_overlap_both_ways() {
        for len in 0..=70 {
            for shift in 0..=10usize {
                for backwards in [false, true] {
                    let mut want = pattern(100);
                    let mut got = want.clone();
                    let (s, d) = if backwards { (shift, 0) } else { (0, shift) };
                    want.copy_within(s..s + len, d);
                    // SAFETY: both ranges are inside the 100-byte buffer.
                    unsafe { move_bytes(got.as_mut_ptr().add(d), got.as_ptr().add(s), len) };
                    assert_eq!(got, want, "len {len} shift {shift} backwards {backwards}");
                }
            }
        }
    }

    #[test]
    fn memset_and_memcmp() {
        for len in 0..40 {
            let mut b = std::vec![1u8; 50];
            // SAFETY: in bounds.
            unsafe { set_bytes(b.as_mut_ptr().add(3), 0xAB, len) };
            assert!(
                b[3..3 + len].iter().all(|&x| x == 0xAB) && b[3 + len..].iter().all(|&x| x == 1)
            );
        }
        let (a, b) = (b"abcdef", b"abcxef");
        // SAFETY: 6-byte buffers.
        unsafe {
            assert_eq!(
                compare_bytes(a.as_ptr(), b.as_ptr(), 6),
                i32::from(b'd') - i32::from(b'x')
            );
            assert_eq!(compare_bytes(a.as_ptr(), b.as_ptr(), 3), 0);
            assert!(
                compare_bytes(b"\xff".as_ptr(), b"\x01".as_ptr(), 1) > 0,
                "unsigned bytes"
            );
        }
    }
}
