//! The memory primitives: the C and vector memcpy backends and the device libc's
//! memcpy/memmove/memset/memcmp. The crate is `#![no_builtins]`, so these loops are never
//! turned back into calls to the functions they implement.

use core::ptr;

const WORD: usize = core::mem::size_of::<usize>();

/// Bytes one "vector" iteration moves (the IVP loop's 128-byte step).
pub const VECTOR_STEP: usize = 128;

/// Forward copy: words while both pointers allow it, bytes otherwise.
///
/// # Safety
/// `dst` is writable and `src` readable for `n` bytes; the ranges do not overlap.
pub unsafe fn copy_bytes(dst: *mut u8, src: *const u8, n: usize) {
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

/// The vector backend: 128-byte blocks of unaligned 16-byte moves, then the tail.
///
/// # Safety
/// As [`copy_bytes`].
pub unsafe fn copy_vector(dst: *mut u8, src: *const u8, n: usize) {
    let blocks = n / VECTOR_STEP;
    // SAFETY: every block lies within the first blocks * 128 <= n bytes.
    unsafe {
        for b in 0..blocks {
            let (d, s) = (dst.add(b * VECTOR_STEP), src.add(b * VECTOR_STEP));
            for k in 0..VECTOR_STEP / 16 {
                let v = (s.add(16 * k) as *const u128).read_unaligned();
                (d.add(16 * k) as *mut u128).write_unaligned(v);
            }
        }
        let done = blocks * VECTOR_STEP;
        copy_bytes(dst.add(done), src.add(done), n - done);
    }
}

/// `memmove`: a correct copy for overlapping ranges.
///
/// # Safety
/// `dst` is writable and `src` readable for `n` bytes.
pub unsafe fn move_bytes(dst: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dst as usize, src as usize);
    if d >= s.wrapping_add(n) || s >= d.wrapping_add(n) || s - d.min(s) >= WORD {
        // SAFETY: disjoint ranges, or dst trailing src by at least a word: copy_bytes reads
        // each word (or byte) before writing a destination that lies wholly below the
        // source bytes still to be read.
        unsafe { copy_bytes(dst, src, n) }
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
