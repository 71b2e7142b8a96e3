//! stdlib.h's floating-point parsing (`strtod`, `strtof`, `atof`) for device builds (D72):
//! C's grammar (white space, a sign, decimal digits with an optional exponent, `0x`
//! hexadecimal digits with an optional binary exponent, `inf`/`infinity`, `nan` with an
//! optional `(chars)`), correctly rounded to nearest: decimal text through Rust's own
//! parser (correctly rounded), hexadecimal text rounded here. The safe core is tested on
//! the host against glibc's; the C entry points are defined for device targets only.

/// A number read as `strtod` reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParsedFloat<F> {
    pub value: F,
    /// Bytes consumed; 0 when there was no number (the end pointer is the string's start).
    pub end: usize,
    /// The value over- or underflowed the type (C's ERANGE: an infinity from finite text,
    /// or zero or a subnormal from nonzero text).
    pub range_error: bool,
}

/// The binary formats parsed to: their significand bits and least normal exponent.
trait Format: Copy {
    const PRECISION: i32;
    const MIN_EXP: i32;
    const MAX_EXP: i32;
    /// Rust's parser takes its exact fast path (Clinger's) for at most 19 digits whose
    /// value fits the significand and a decimal exponent within this of zero.
    const FAST_PATH_EXP: i64;
    fn from_f64(v: f64) -> Self;
    fn parse_decimal(text: &str) -> Option<Self>;
    fn to_f64(self) -> f64;
    /// The least normal magnitude, as f64.
    fn least_normal() -> f64 {
        f64::from_bits(((Self::MIN_EXP + 1023) as u64) << 52)
    }
}

impl Format for f64 {
    const PRECISION: i32 = 53;
    const MIN_EXP: i32 = -1022;
    const MAX_EXP: i32 = 1023;
    const FAST_PATH_EXP: i64 = 22;
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn parse_decimal(text: &str) -> Option<f64> {
        text.parse().ok()
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl Format for f32 {
    const PRECISION: i32 = 24;
    const MIN_EXP: i32 = -126;
    const MAX_EXP: i32 = 127;
    const FAST_PATH_EXP: i64 = 10;
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn parse_decimal(text: &str) -> Option<f32> {
        text.parse().ok()
    }
    fn to_f64(self) -> f64 {
        self.into()
    }
}

pub fn parse_f64(s: &[u8]) -> ParsedFloat<f64> {
    parse(s)
}

pub fn parse_f32(s: &[u8]) -> ParsedFloat<f32> {
    parse(s)
}

fn starts_with_ignore_case(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word)
}

fn parse<F: Format>(s: &[u8]) -> ParsedFloat<F> {
    let none = ParsedFloat {
        value: F::from_f64(0.0),
        end: 0,
        range_error: false,
    };
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let signed = |v: f64| if negative { -v } else { v };
    let rest = &s[i..];
    if starts_with_ignore_case(rest, b"inf") {
        let n = if starts_with_ignore_case(rest, b"infinity") {
            8
        } else {
            3
        };
        return ParsedFloat {
            value: F::from_f64(signed(f64::INFINITY)),
            end: i + n,
            range_error: false,
        };
    }
    if starts_with_ignore_case(rest, b"nan") {
        let mut n = 3;
        if rest.get(3) == Some(&b'(') {
            let tail = rest[4..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if rest.get(4 + tail) == Some(&b')') {
                n = 5 + tail;
            }
        }
        return ParsedFloat {
            value: F::from_f64(signed(f64::NAN)),
            end: i + n,
            range_error: false,
        };
    }
    let hex = rest.len() > 2
        && rest[0] == b'0'
        && matches!(rest[1], b'x' | b'X')
        && (rest[2].is_ascii_hexdigit()
            || rest[2] == b'.' && rest.get(3).is_some_and(u8::is_ascii_hexdigit));
    let parsed = if hex {
        hexadecimal::<F>(&rest[2..]).map(|(v, n, e)| (v, n + 2, e))
    } else {
        decimal::<F>(rest)
    };
    match parsed {
        Some((v, n, range_error)) => ParsedFloat {
            value: F::from_f64(signed(v.to_f64())),
            end: i + n,
            range_error,
        },
        None => none,
    }
}

/// Digits (by `is_digit`) from `s[i..]`: how many.
fn run(s: &[u8], i: usize, is_digit: fn(&u8) -> bool) -> usize {
    s.get(i..)
        .map_or(0, |t| t.iter().take_while(|b| is_digit(b)).count())
}

/// An exponent's length at `s[i..]` (`e`/`p`, a sign, digits), 0 when there is none.
fn exponent_len(s: &[u8], i: usize, marker: u8) -> usize {
    if s.get(i).is_none_or(|b| b.to_ascii_lowercase() != marker) {
        return 0;
    }
    let sign = usize::from(matches!(s.get(i + 1), Some(b'+' | b'-')));
    let digits = run(s, i + 1 + sign, u8::is_ascii_digit);
    if digits == 0 {
        0
    } else {
        1 + sign + digits
    }
}

fn decimal<F: Format>(s: &[u8]) -> Option<(F, usize, bool)> {
    let int = run(s, 0, u8::is_ascii_digit);
    let mut n = int;
    let mut frac = 0;
    if s.get(n) == Some(&b'.') {
        frac = run(s, n + 1, u8::is_ascii_digit);
        if int + frac > 0 {
            n += 1 + frac;
        }
    }
    if int + frac == 0 {
        return None;
    }
    let mantissa_end = n;
    n += exponent_len(s, n, b'e');
    let text = core::str::from_utf8(&s[..n]).ok()?;
    if !surely_fast_path::<F>(&s[..mantissa_end], frac, &s[mantissa_end..n]) {
        crate::runtime::stack::charged_path(customop_abi::stack::PARSE_SLOW);
    }
    let v = F::parse_decimal(text)?;
    let nonzero = s[..mantissa_end].iter().any(|b| matches!(b, b'1'..=b'9'));
    let w = v.to_f64();
    Some((
        v,
        n,
        w.is_infinite() || nonzero && w.abs() < F::least_normal(),
    ))
}

/// Whether Rust's parser surely reads `digits` (with `frac` of them after the point) and
/// `exponent` (`e` and a signed integer, or nothing) by its fast path, as it decides: at
/// most 19 digits, their value within the significand, and the decimal exponent within
/// `F::FAST_PATH_EXP`. Any other text may take its slow path (a 768-digit decimal, about
/// 1.3 KiB of a Pool core's stack), which host builds charge when this says it may (D134).
fn surely_fast_path<F: Format>(digits: &[u8], frac: usize, exponent: &[u8]) -> bool {
    let mut mantissa = 0u64;
    let mut count = 0;
    for d in digits.iter().filter(|d| d.is_ascii_digit()) {
        count += 1;
        mantissa = mantissa * 10 + u64::from(d - b'0');
        if count > 19 || mantissa > 1u64 << F::PRECISION {
            return false;
        }
    }
    let mut e: i64 = 0;
    let negative = exponent.get(1) == Some(&b'-');
    for d in exponent.iter().filter(|d| d.is_ascii_digit()) {
        e = (e * 10 + i64::from(d - b'0')).min(1 << 20);
    }
    let e = if negative { -e } else { e } - frac as i64;
    (-F::FAST_PATH_EXP..=F::FAST_PATH_EXP).contains(&e)
}

/// Hexadecimal digits (after `0x`) with an optional binary exponent, rounded to nearest
/// even in `F`.
fn hexadecimal<F: Format>(s: &[u8]) -> Option<(F, usize, bool)> {
    let (mut mant, mut sticky, mut exp2) = (0u64, false, 0i64);
    let mut i = 0;
    let mut seen_point = false;
    let mut digits = 0;
    loop {
        match s.get(i) {
            Some(&b) if b.is_ascii_hexdigit() => {
                let d = u64::from((b as char).to_digit(16)?);
                if mant >> 60 == 0 {
                    mant = mant << 4 | d;
                    if seen_point {
                        exp2 -= 4;
                    }
                } else {
                    sticky |= d != 0;
                    if !seen_point {
                        exp2 += 4;
                    }
                }
                digits += 1;
            }
            Some(b'.') if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    let e = exponent_len(s, i, b'p');
    if e > 0 {
        let t = core::str::from_utf8(&s[i + 1..i + e]).ok()?;
        let (neg, ds) = match t.as_bytes()[0] {
            b'-' => (true, &t[1..]),
            b'+' => (false, &t[1..]),
            _ => (false, t),
        };
        // Saturate: beyond a few thousand every result is zero or infinite anyway.
        let v = ds
            .bytes()
            .fold(0i64, |a, b| (a * 10 + i64::from(b - b'0')).min(1 << 40));
        exp2 += if neg { -v } else { v };
        i += e;
    }
    Some(
        round_binary::<F>(mant, sticky, exp2)
            .map_or((F::from_f64(0.0), i, false), |(v, r)| (v, i, r)),
    )
}

/// `mant * 2^exp2` (plus a sticky nonzero tail below `mant`'s last bit) rounded to nearest
/// even in `F`, with ERANGE's flag; None for zero.
fn round_binary<F: Format>(mant: u64, sticky: bool, exp2: i64) -> Option<(F, bool)> {
    if mant == 0 {
        return None;
    }
    let lz = mant.leading_zeros();
    let m = mant << lz;
    // The value is m * 2^(e - 63), m's top bit set: e is its leading bit's exponent.
    let e = exp2 + 63 - i64::from(lz);
    if e > i64::from(F::MAX_EXP) {
        return Some((F::from_f64(f64::INFINITY), true));
    }
    // Significand bits the result keeps: all of them when normal, fewer below.
    let keep = if e >= i64::from(F::MIN_EXP) {
        i64::from(F::PRECISION)
    } else {
        i64::from(F::PRECISION) - (i64::from(F::MIN_EXP) - e)
    };
    let shift = 64 - keep; // >= 11
    let (q, up) = if shift >= 65 {
        (0u64, false)
    } else if shift == 64 {
        // Only the rounding decides: above half (m > 2^63, or a sticky tail) rounds up.
        (0, m > 1 << 63 || sticky)
    } else {
        let q = m >> shift;
        let rem = m & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        (q, rem > half || rem == half && (sticky || q & 1 == 1))
    };
    let q = q + u64::from(up);
    // q * 2^(e - keep + 1) is exact in f64 (q < 2^54 and the scale within range).
    let v = scale(q as f64, (e - keep + 1) as i32);
    let f = F::from_f64(v);
    let w = f.to_f64();
    Some((f, w.is_infinite() || w.abs() < F::least_normal()))
}

/// `x * 2^k`, exact when the result is representable (the factors stay normal).
fn scale(mut x: f64, mut k: i32) -> f64 {
    let two = |j: i32| f64::from_bits(((j + 1023) as u64) << 52);
    while k > 1023 {
        x *= two(1023);
        k -= 1023;
    }
    while k < -1022 {
        x *= two(-1022);
        k += 1022;
    }
    x * two(k)
}

/// The C entry points, device builds only.
#[cfg(all(feature = "archive", device_libc))]
mod c {
    use core::ffi::{c_char, CStr};

    use super::{parse_f32, parse_f64, ParsedFloat};

    /// Stores the end pointer and errno of `p`, parsed from `s`; its value.
    ///
    /// # Safety
    /// `end` is NULL or writable; `p.end` lies within `s`.
    unsafe fn finish<F>(s: *const c_char, end: *mut *mut c_char, p: ParsedFloat<F>) -> F {
        if !end.is_null() {
            // SAFETY: writable (C contract); the offset lies within the string.
            unsafe { *end = s.add(p.end).cast_mut() };
        }
        if p.range_error {
            crate::libc::cerrno::set(crate::libc::cerrno::ERANGE);
        }
        p.value
    }

    #[no_mangle]
    pub unsafe extern "C" fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64 {
        // SAFETY: NUL-terminated (C contract); the rest as `finish`.
        unsafe { finish(s, end, parse_f64(CStr::from_ptr(s).to_bytes())) }
    }

    /// `long double` is double on Xtensa.
    #[no_mangle]
    pub unsafe extern "C" fn strtold(s: *const c_char, end: *mut *mut c_char) -> f64 {
        // SAFETY: as strtod.
        unsafe { strtod(s, end) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn strtof(s: *const c_char, end: *mut *mut c_char) -> f32 {
        // SAFETY: as strtod.
        unsafe { finish(s, end, parse_f32(CStr::from_ptr(s).to_bytes())) }
    }

    #[no_mangle]
    pub unsafe extern "C" fn atof(s: *const c_char) -> f64 {
        // SAFETY: as strtod.
        unsafe { strtod(s, core::ptr::null_mut()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::format;
    use std::string::String;

    extern "C" {
        fn strtod(s: *const core::ffi::c_char, end: *mut *mut core::ffi::c_char) -> f64;
        fn strtof(s: *const core::ffi::c_char, end: *mut *mut core::ffi::c_char) -> f32;
    }

    /// glibc's reading of `text`: value bits and bytes consumed, as f64 and as f32.
    fn glibc(text: &str) -> ((u64, usize), (u32, usize)) {
        let c = CString::new(text).unwrap();
        let mut end = core::ptr::null_mut();
        // SAFETY: a NUL-terminated string and a writable end pointer.
        let d = unsafe { strtod(c.as_ptr(), &mut end) };
        // SAFETY: strtod's end lies within the string.
        let nd = unsafe { end.cast_const().offset_from(c.as_ptr()) } as usize;
        // SAFETY: as above.
        let f = unsafe { strtof(c.as_ptr(), &mut end) };
        // SAFETY: as above.
        let nf = unsafe { end.cast_const().offset_from(c.as_ptr()) } as usize;
        ((d.to_bits(), nd), (f.to_bits(), nf))
    }

    fn check(text: &str) {
        let ((d, nd), (f, nf)) = glibc(text);
        let ours = parse_f64(text.as_bytes());
        let ours32 = parse_f32(text.as_bytes());
        // NaNs compare by class and sign only (glibc keeps a payload, we do not).
        let same64 = |a: u64, b: u64| {
            a == b || f64::from_bits(a).is_nan() && f64::from_bits(b).is_nan() && a >> 63 == b >> 63
        };
        let same32 = |a: u32, b: u32| {
            a == b || f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan() && a >> 31 == b >> 31
        };
        assert!(
            same64(ours.value.to_bits(), d) && ours.end == nd,
            "strtod({text:?}): ours {:?} at {}, glibc {:?} at {nd}",
            ours.value,
            ours.end,
            f64::from_bits(d)
        );
        assert!(
            same32(ours32.value.to_bits(), f) && ours32.end == nf,
            "strtof({text:?}): ours {:?} at {}, glibc {:?} at {nf}",
            ours32.value,
            ours32.end,
            f32::from_bits(f)
        );
    }

    /// The text Rust's parser surely reads by its fast path, as D134 charges it: the split
    /// `decimal` makes (digits with the point, then the exponent).
    #[test]
    fn the_fast_path_is_told_as_rusts_parser_decides_it() {
        fn fast<F: Format>(text: &str) -> bool {
            let b = text.as_bytes();
            let int = run(b, 0, u8::is_ascii_digit);
            let (frac, end) = if b.get(int) == Some(&b'.') {
                let f = run(b, int + 1, u8::is_ascii_digit);
                (f, int + 1 + f)
            } else {
                (0, int)
            };
            surely_fast_path::<F>(&b[..end], frac, &b[end..])
        }
        for t in [
            "1.5",
            "100.0",
            "3e9",
            "0.001",
            "123456789012345",
            "1e22",
            "1e-22",
        ] {
            assert!(fast::<f64>(t), "{t}");
        }
        for t in [
            "9007199254740993",
            "12345678901234567890",
            "1e23",
            "1.5e-23",
            "0.1e-22",
        ] {
            assert!(!fast::<f64>(t), "{t}");
        }
        assert!(fast::<f32>("16777216") && fast::<f32>("1e10"));
        assert!(!fast::<f32>("16777217") && !fast::<f32>("1e11"));
    }

    #[test]
    fn floats_parse_as_glibc_reads_them() {
        for t in [
            "",
            " ",
            "-",
            "+",
            ".",
            "e5",
            "x",
            "1",
            "-0",
            "+0.0",
            "  \t\n3.25xyz",
            "1.",
            ".5",
            "1.e5",
            "1e",
            "1e+",
            "1e-2",
            "1E400",
            "-1e400",
            "1e-400",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "4.9406564584124654e-324",
            "2.2250738585072011e-308",
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "3.4028235e38",
            "3.4028236e38",
            "1.4e-45",
            "7e-46",
            "0.1",
            "123456789012345678901234567890",
            "9007199254740993",
            "inf",
            "-INF",
            "Infinity",
            "infinit",
            "infinityx",
            "nan",
            "-NaN",
            "nan(123)",
            "nan(abc_9)x",
            "nan(",
            "nan(a b)",
            "0x",
            "0x.",
            "0xg",
            "0x1",
            "0X1P3",
            "0x1p",
            "0x1p-",
            "0x.8",
            "0x1.8p1",
            "-0x1.fffffffffffffp1023",
            "0x1.fffffffffffff8p1023",
            "0x1p-1074",
            "0x1p-1075",
            "0x1.0000000000001p-1075",
            "0x1.8p-1074",
            "0x1p-1076",
            "0x0.0000000000001p-1022",
            "0x1.ffffffp127",
            "0x1.fffffe8p127",
            "0x1p-149",
            "0x1p-150",
            "0x1.000002p-150",
            "0x123456789abcdef0123p-4",
            "0xffffffffffffffffffff",
            "0x1.00000000000008p0",
            "0x1.00000000000008000001p0",
            "0x1.00000000000018p0",
            "0x1p999999999999",
            "0x1p-999999999999",
            "0x0p5",
            "-0x0.0",
            "1e99999999999",
            "00000000000000000000000000000000001.5",
            "1_000",
        ] {
            check(t);
        }
    }

    /// Random hexadecimal and decimal texts, within and around every range edge.
    #[test]
    fn random_texts_parse_as_glibc_reads_them() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let hex = b"0123456789abcdef";
        for k in 0..20_000 {
            let r = next();
            let digits = 1 + (r % 24) as usize;
            let mut t = String::from(if r >> 8 & 1 == 0 { "0x" } else { "-0x" });
            for j in 0..digits {
                if j == (r >> 16) as usize % (digits + 1) {
                    t.push('.');
                }
                t.push(hex[(next() % 16) as usize] as char);
            }
            let e = (next() % 2400) as i64 - 1200;
            t.push_str(&format!("p{e}"));
            check(&t);
            let mant = next() % 10_000_000_000_000_000;
            let e10 = (next() % 700) as i64 - 350;
            let dec = if k % 2 == 0 {
                format!("{mant}e{e10}")
            } else {
                format!("0.{mant:0>19}e{e10}")
            };
            check(&dec);
        }
    }
}
