//! stdlib.h's number parsing (`strtol` and family, `atoi`) and `qsort`/`bsearch` for device
//! builds (D71): the safe core here is plain Rust (tested on the host); the C entry points
//! are defined for device targets only (a host build of an op uses the C library's).

/// An integer read as `strtoull` reads it, before the caller's range rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// A '-' sign preceded the digits.
    pub negative: bool,
    /// The digits' value, saturated at `u64::MAX`.
    pub magnitude: u64,
    /// The digits' value did not fit 64 bits.
    pub overflow: bool,
    /// Bytes consumed through the last digit; 0 when there was no number (then the end
    /// pointer is the string's start).
    pub end: usize,
}

/// Parses the integer at the start of `s` in `base` (0: by prefix; 2..=36), as C's
/// strto* functions: leading white space, a sign, `0x` for base 16 (and 0), a leading `0`
/// meaning octal for base 0. None for a base C refuses (EINVAL).
pub fn parse_integer(s: &[u8], base: u32) -> Option<Parsed> {
    if base == 1 || base > 36 {
        return None;
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let digit = |b: u8| -> Option<u32> {
        let d = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'a'..=b'z' => u32::from(b - b'a') + 10,
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            _ => return None,
        };
        Some(d)
    };
    let hex_prefix = s.get(i) == Some(&b'0')
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && s.get(i + 2).and_then(|&b| digit(b)).is_some_and(|d| d < 16);
    let base = match base {
        0 if hex_prefix => 16,
        0 if s.get(i) == Some(&b'0') => 8,
        0 => 10,
        b => b,
    };
    if base == 16 && hex_prefix {
        i += 2;
    }
    let (mut magnitude, mut overflow, start) = (0u64, false, i);
    while let Some(d) = s.get(i).and_then(|&b| digit(b)).filter(|&d| d < base) {
        match magnitude
            .checked_mul(u64::from(base))
            .and_then(|m| m.checked_add(u64::from(d)))
        {
            Some(m) => magnitude = m,
            None => {
                overflow = true;
                magnitude = u64::MAX;
            }
        }
        i += 1;
    }
    Some(if i == start {
        Parsed {
            negative: false,
            magnitude: 0,
            overflow: false,
            end: 0,
        }
    } else {
        Parsed {
            negative,
            magnitude,
            overflow,
            end: i,
        }
    })
}

/// `strtol`-style result for a signed type of `bits` bits: the value, clamped to the
/// type's range when it does not fit (C's ERANGE result).
pub fn to_signed(p: Parsed, bits: u32) -> i64 {
    let max = (1u64 << (bits - 1)) - 1;
    match (p.negative, p.overflow) {
        (false, false) if p.magnitude <= max => p.magnitude as i64,
        (false, _) => max as i64,
        (true, false) if p.magnitude <= max + 1 => (p.magnitude as i64).wrapping_neg(),
        (true, _) => (max as i64).wrapping_neg() - 1,
    }
}

/// Whether `p` fits a `bits`-bit type without clamping (C's strto* report ERANGE
/// otherwise); an unsigned type takes a negated magnitude up to its maximum, as C does.
pub fn in_range(p: &Parsed, bits: u32, signed: bool) -> bool {
    let max = u64::MAX >> (64 - bits + u32::from(signed));
    !p.overflow && (p.magnitude <= max || signed && p.negative && p.magnitude == max + 1)
}

/// `strtoul`-style result for an unsigned type of `bits` bits: the value (negated in the
/// type when signed, as C does), or the type's maximum when it does not fit.
pub fn to_unsigned(p: Parsed, bits: u32) -> u64 {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    if p.overflow || p.magnitude > max {
        return max;
    }
    if p.negative {
        p.magnitude.wrapping_neg() & max
    } else {
        p.magnitude
    }
}

/// Heap sort of `n` elements of `size` bytes at `base` under `less_or_equal` (C's
/// comparator, `cmp(a, b) <= 0`), swapping bytes in place: O(n log n), no recursion, no
/// memory of its own. Not stable, as qsort need not be.
///
/// # Safety
/// `base` is valid for reads and writes of `n * size` bytes; `cmp` reads two elements.
pub unsafe fn heap_sort(
    base: *mut u8,
    n: usize,
    size: usize,
    cmp: &mut dyn FnMut(*const u8, *const u8) -> i32,
) {
    if n < 2 || size == 0 {
        return;
    }
    // SAFETY (all element pointers): indices stay below n (caller's contract).
    let at = |i: usize| unsafe { base.add(i * size) };
    let swap = |a: usize, b: usize| unsafe { core::ptr::swap_nonoverlapping(at(a), at(b), size) };
    let sift = |cmp: &mut dyn FnMut(*const u8, *const u8) -> i32, mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && cmp(at(child), at(child + 1)) < 0 {
            child += 1;
        }
        if cmp(at(root), at(child)) >= 0 {
            return;
        }
        swap(root, child);
        root = child;
    };
    for root in (0..n / 2).rev() {
        sift(cmp, root, n);
    }
    for end in (1..n).rev() {
        swap(0, end);
        sift(cmp, 0, end);
    }
}

/// `rand`'s generator, as glibc's (an additive lagged Fibonacci generator, x[i] = x[i-3] +
/// x[i-31] mod 2^32, seeded by a Lehmer generator and run 310 steps before its first
/// output), so a host build of an op and its device build draw the same numbers (D72).
#[derive(Clone)]
pub struct Rand {
    r: [u32; 34],
    /// The next index into the ring of the last 34 values.
    i: usize,
}

impl Rand {
    pub fn new(seed: u32) -> Rand {
        let mut r = [0u32; 34];
        r[0] = if seed == 0 { 1 } else { seed };
        for i in 1..31 {
            // 16807 * r mod (2^31 - 1) by Schrage's method on the signed 32-bit value, as
            // glibc computes it (a seed of 2^31 or more is negative there).
            let word = i64::from(r[i - 1] as i32);
            let (hi, lo) = (word / 127_773, word % 127_773);
            let mut v = 16_807 * lo - 2_836 * hi;
            if v < 0 {
                v += 2_147_483_647;
            }
            r[i] = v as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = Rand { r, i: 0 };
        for _ in 0..310 {
            g.step();
        }
        g
    }

    fn step(&mut self) -> u32 {
        let at = |back: usize| self.r[(self.i + 34 - back) % 34];
        let v = at(31).wrapping_add(at(3));
        self.r[self.i] = v;
        self.i = (self.i + 1) % 34;
        v
    }

    /// The next value, 0..=RAND_MAX (2^31 - 1).
    pub fn next_value(&mut self) -> i32 {
        (self.step() >> 1) as i32
    }
}

/// C's `div` family: quotient truncated toward zero, remainder with the dividend's sign;
/// None for a zero divisor (the C entry points make it a device fault, as x86 traps) and
/// the wrapped quotient for MIN / -1 (D69).
pub fn divide(n: i64, d: i64) -> Option<(i64, i64)> {
    (d != 0).then(|| (n.wrapping_div(d), n.wrapping_rem(d)))
}

/// The C entry points, device builds only.
#[cfg(all(feature = "archive", device_libc))]
mod c {
    use core::ffi::{c_char, c_int, c_long, c_longlong, c_ulong, c_ulonglong, c_void, CStr};

    use super::{heap_sort, in_range, parse_integer, to_signed, to_unsigned, Parsed};
    use crate::libc::cerrno::{set as set_errno, EINVAL, ERANGE};

    type Compare = unsafe extern "C" fn(*const c_void, *const c_void) -> c_int;

    /// Parses `s` and stores the end pointer; None (and `*end = s`) for a bad base.
    ///
    /// # Safety
    /// `s` is a NUL-terminated string; `end` is NULL or writable.
    unsafe fn parse(s: *const c_char, end: *mut *mut c_char, base: c_int) -> Option<Parsed> {
        // SAFETY: NUL-terminated (C contract).
        let bytes = unsafe { CStr::from_ptr(s) }.to_bytes();
        let p = u32::try_from(base)
            .ok()
            .and_then(|b| parse_integer(bytes, b));
        if !end.is_null() {
            // SAFETY: writable (C contract); the offset lies within the string.
            unsafe { *end = s.add(p.map_or(0, |p| p.end)).cast_mut() };
        }
        p
    }

    /// [`parse`] for a `bits`-bit type, setting errno as C does: EINVAL for a bad base,
    /// ERANGE for a value the type cannot hold (then clamped by the caller).
    ///
    /// # Safety
    /// As [`parse`].
    unsafe fn parse_for(
        s: *const c_char,
        end: *mut *mut c_char,
        base: c_int,
        bits: u32,
        signed: bool,
    ) -> Option<Parsed> {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { parse(s, end, base) };
        match &p {
            None => set_errno(EINVAL),
            Some(v) if !in_range(v, bits, signed) => set_errno(ERANGE),
            Some(_) => {}
        }
        p
    }

    #[no_mangle]
    pub unsafe extern "C" fn strtol(
        s: *const c_char,
        end: *mut *mut c_char,
        base: c_int,
    ) -> c_long {
        // SAFETY: the caller's contract, passed on.
        unsafe { parse_for(s, end, base, c_long::BITS, true) }
            .map_or(0, |p| to_signed(p, c_long::BITS) as c_long)
    }

    #[no_mangle]
    pub unsafe extern "C" fn strtoll(
        s: *const c_char,
        end: *mut *mut c_char,
        base: c_int,
    ) -> c_longlong {
        // SAFETY: as strtol.
        unsafe { parse_for(s, end, base, 64, true) }.map_or(0, |p| to_signed(p, 64) as c_longlong)
    }

    #[no_mangle]
    pub unsafe extern "C" fn strtoul(
        s: *const c_char,
        end: *mut *mut c_char,
        base: c_int,
    ) -> c_ulong {
        // SAFETY: as strtol.
        unsafe { parse_for(s, end, base, c_ulong::BITS, false) }
            .map_or(0, |p| to_unsigned(p, c_ulong::BITS) as c_ulong)
    }

    #[no_mangle]
    pub unsafe extern "C" fn strtoull(
        s: *const c_char,
        end: *mut *mut c_char,
        base: c_int,
    ) -> c_ulonglong {
        // SAFETY: as strtol.
        unsafe { parse_for(s, end, base, 64, false) }
            .map_or(0, |p| to_unsigned(p, 64) as c_ulonglong)
    }

    #[no_mangle]
    pub unsafe extern "C" fn atoi(s: *const c_char) -> c_int {
        // SAFETY: as strtol; atoi is (int)strtol(s, NULL, 10).
        unsafe { strtol(s, core::ptr::null_mut(), 10) as c_int }
    }

    #[no_mangle]
    pub unsafe extern "C" fn atol(s: *const c_char) -> c_long {
        // SAFETY: as strtol.
        unsafe { strtol(s, core::ptr::null_mut(), 10) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn atoll(s: *const c_char) -> c_longlong {
        // SAFETY: as strtol.
        unsafe { strtoll(s, core::ptr::null_mut(), 10) }
    }

    /// `div_t`, `ldiv_t`, `lldiv_t` and `imaxdiv_t`: the quotient, then the remainder.
    #[repr(C)]
    pub struct QuotRem<T> {
        quot: T,
        rem: T,
    }

    /// The `div` family's result in the C type (`narrow` from the 64-bit quotient: for a
    /// 32-bit int, MIN / -1 wraps in its low half, as on the device); a zero divisor is a
    /// fault named after `site`.
    fn quot_rem<T>(site: &'static str, n: i64, d: i64, narrow: fn(i64) -> T) -> QuotRem<T> {
        let (quot, rem) = super::divide(n, d).unwrap_or_else(|| {
            crate::rule::fatal_with(site, format_args!("integer division by zero"))
        });
        QuotRem {
            quot: narrow(quot),
            rem: narrow(rem),
        }
    }

    #[no_mangle]
    pub extern "C" fn div(n: c_int, d: c_int) -> QuotRem<c_int> {
        quot_rem("div", n.into(), d.into(), |v| v as c_int)
    }

    #[no_mangle]
    pub extern "C" fn ldiv(n: c_long, d: c_long) -> QuotRem<c_long> {
        quot_rem("ldiv", n.into(), d.into(), |v| v as c_long)
    }

    #[no_mangle]
    pub extern "C" fn lldiv(n: c_longlong, d: c_longlong) -> QuotRem<c_longlong> {
        quot_rem("lldiv", n, d, |v| v)
    }

    /// inttypes.h's intmax_t (long long on the device) helpers.
    #[no_mangle]
    pub extern "C" fn imaxabs(v: c_longlong) -> c_longlong {
        v.wrapping_abs()
    }

    #[no_mangle]
    pub extern "C" fn imaxdiv(n: c_longlong, d: c_longlong) -> QuotRem<c_longlong> {
        quot_rem("imaxdiv", n, d, |v| v)
    }

    #[no_mangle]
    pub unsafe extern "C" fn strtoimax(
        s: *const c_char,
        end: *mut *mut c_char,
        base: c_int,
    ) -> c_longlong {
        // SAFETY: as strtoll.
        unsafe { strtoll(s, end, base) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn strtoumax(
        s: *const c_char,
        end: *mut *mut c_char,
        base: c_int,
    ) -> c_ulonglong {
        // SAFETY: as strtoull.
        unsafe { strtoull(s, end, base) }
    }

    /// The core's `rand` state; a core that never calls `srand` draws as after `srand(1)`.
    static RAND: crate::runtime::global::Global<Option<super::Rand>> =
        crate::runtime::global::Global::new(None);

    #[no_mangle]
    pub extern "C" fn srand(seed: core::ffi::c_uint) {
        RAND.with(|r| *r = Some(super::Rand::new(seed)));
    }

    #[no_mangle]
    pub extern "C" fn rand() -> c_int {
        RAND.with(|r| r.get_or_insert_with(|| super::Rand::new(1)).next_value())
    }

    /// A core has no environment: nothing is found.
    #[no_mangle]
    pub extern "C" fn getenv(_name: *const c_char) -> *mut c_char {
        core::ptr::null_mut()
    }

    #[no_mangle]
    pub unsafe extern "C" fn qsort(base: *mut c_void, n: usize, size: usize, cmp: Compare) {
        if base.is_null() || n.checked_mul(size).is_none() {
            return;
        }
        // SAFETY: the array spans n * size bytes (C contract); cmp reads two elements.
        unsafe { heap_sort(base.cast(), n, size, &mut |a, b| cmp(a.cast(), b.cast())) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn bsearch(
        key: *const c_void,
        base: *const c_void,
        n: usize,
        size: usize,
        cmp: Compare,
    ) -> *mut c_void {
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // SAFETY: mid < n: inside the sorted array (C contract).
            let at = unsafe { base.cast::<u8>().add(mid * size) };
            // SAFETY: the comparator reads the key and one element.
            match unsafe { cmp(key, at.cast()) } {
                0 => return at.cast_mut().cast(),
                c if c < 0 => hi = mid,
                _ => lo = mid + 1,
            }
        }
        core::ptr::null_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn strtol32(s: &str, base: u32) -> (i64, usize) {
        let p = parse_integer(s.as_bytes(), base).unwrap();
        (to_signed(p, 32), p.end)
    }

    #[test]
    fn integers_parse_as_c_reads_them() {
        assert_eq!(strtol32("  -42xyz", 10), (-42, 5));
        assert_eq!(strtol32("+17", 10), (17, 3));
        assert_eq!(strtol32("0x1F", 0), (31, 4));
        assert_eq!(strtol32("0x1F", 16), (31, 4));
        assert_eq!(strtol32("0X", 16), (0, 1), "0 then an X that is no prefix");
        assert_eq!(strtol32("0xg", 0), (0, 1));
        assert_eq!(strtol32("017", 0), (15, 3));
        assert_eq!(strtol32("019", 0), (1, 2), "octal stops at 9");
        assert_eq!(strtol32("zz", 36), (35 * 36 + 35, 2));
        assert_eq!(strtol32("  ", 10), (0, 0), "no digits: the start");
        assert_eq!(strtol32("-", 10), (0, 0));
        assert_eq!(strtol32("2147483647", 10), (i32::MAX.into(), 10));
        assert_eq!(strtol32("2147483648", 10), (i32::MAX.into(), 10), "clamped");
        assert_eq!(strtol32("-2147483648", 10), (i32::MIN.into(), 11));
        assert_eq!(strtol32("-2147483649", 10), (i32::MIN.into(), 11));
        assert_eq!(
            strtol32("99999999999999999999999", 10).0,
            i64::from(i32::MAX)
        );
        assert!(parse_integer(b"1", 1).is_none() && parse_integer(b"1", 37).is_none());
        let u = |s: &str, bits| to_unsigned(parse_integer(s.as_bytes(), 0).unwrap(), bits);
        assert_eq!(u("4294967295", 32), 4294967295);
        assert_eq!(u("4294967296", 32), 4294967295);
        assert_eq!(u("-1", 32), 4294967295, "negated in the type");
        assert_eq!(u("-1", 64), u64::MAX);
        assert_eq!(u("18446744073709551616", 64), u64::MAX);
        assert_eq!(
            to_signed(parse_integer(b"-9223372036854775808", 10).unwrap(), 64),
            i64::MIN
        );
    }

    #[test]
    fn heap_sort_sorts_any_element_size() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for n in [0usize, 1, 2, 3, 7, 64, 257] {
            let mut v: Vec<[u8; 3]> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    [(state >> 8) as u8, (state >> 16) as u8, (state >> 24) as u8]
                })
                .collect();
            let mut want = v.clone();
            want.sort();
            // SAFETY: the vector's elements, 3 bytes each.
            unsafe {
                heap_sort(v.as_mut_ptr().cast(), n, 3, &mut |a, b| {
                    let (a, b) = (&*a.cast::<[u8; 3]>(), &*b.cast::<[u8; 3]>());
                    a.cmp(b) as i32
                })
            };
            assert_eq!(v, want, "n = {n}");
        }
    }

    extern "C" {
        fn srand(seed: core::ffi::c_uint);
        fn rand() -> core::ffi::c_int;
    }

    #[test]
    fn rand_draws_what_glibc_draws() {
        for seed in [1u32, 0, 2, 42, 2024, 0x7fff_ffff, 0x8000_0000, u32::MAX] {
            let mut ours = Rand::new(seed);
            // SAFETY: the test thread alone uses the C library's rand state here.
            unsafe { srand(seed) };
            for k in 0..1000 {
                // SAFETY: as above.
                let theirs = unsafe { rand() };
                assert_eq!(ours.next_value(), theirs, "seed {seed}, draw {k}");
            }
        }
    }

    #[test]
    fn div_truncates_toward_zero() {
        assert_eq!(divide(-17, 5), Some((-3, -2)));
        assert_eq!(divide(17, -5), Some((-3, 2)));
        assert_eq!(divide(i64::MIN, -1), Some((i64::MIN, 0)));
        assert_eq!(divide(1, 0), None);
    }

    #[test]
    fn range_checks_match_the_clamps() {
        let p = |s: &str| parse_integer(s.as_bytes(), 10).unwrap();
        assert!(in_range(&p("2147483647"), 32, true));
        assert!(!in_range(&p("2147483648"), 32, true));
        assert!(in_range(&p("-2147483648"), 32, true));
        assert!(!in_range(&p("-2147483649"), 32, true));
        assert!(in_range(&p("4294967295"), 32, false));
        assert!(!in_range(&p("4294967296"), 32, false));
        assert!(
            in_range(&p("-1"), 64, false),
            "strtoull(\"-1\") is ULLONG_MAX, no ERANGE"
        );
        assert!(!in_range(&p("99999999999999999999"), 64, false));
    }
}
