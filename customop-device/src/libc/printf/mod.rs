//! The C `printf` formatter for the device's `printf` family (the variadic entry points are
//! in [`crate::libc`] on device builds). Safe and independent of `va_list`: the arguments
//! come from an [`Args`] source, so the host tests drive it with a list and compare with
//! the host libc's `snprintf`, and the Xtensa self-test runs it in place.
//!
//! Supported: flags `-+ #0`, width and precision (numbers or `*`), length modifiers
//! `hh h l ll j z t L`, conversions `d i u o x X c s p f F e E g G a A %`. `%n` writes nothing
//! (it is a classic format-string hole) and an unknown conversion is copied through as
//! written. Floats are formatted from their exact decimal value (a small bignum, no
//! `core::fmt`: its float tables and algorithms would take a third of a lean device image),
//! rounded ties-to-even on that value, as glibc does.

mod decimal;
#[cfg(test)]
mod tests;

use decimal::Decimal;

/// The size of an integer argument, from its length modifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntSize {
    Char,
    Short,
    Int,
    Long,
    LongLong,
    /// `size_t`, `ptrdiff_t`, `intmax_t`: pointer-sized or 64-bit, as the target says.
    Size,
    Max,
}

/// Where the arguments come from (a `va_list`, or a test's list).
pub trait Args {
    /// The next integer argument, as C promotes it, sign-extended from its size.
    fn signed(&mut self, size: IntSize) -> i64;
    /// The next integer argument, zero-extended from its size.
    fn unsigned(&mut self, size: IntSize) -> u64;
    /// The next `double` (floats are promoted).
    fn double(&mut self) -> f64;
    /// The next pointer, as an address.
    fn pointer(&mut self) -> usize;
    /// The next `char *` argument's bytes up to its NUL, at most `max` of them (`None`: NULL).
    fn string(&mut self, max: usize) -> Option<&[u8]>;
}

/// Formats `format` (without its NUL) with `args`, handing the output to `out` in pieces;
/// returns the number of bytes produced.
pub fn format(format: &[u8], args: &mut dyn Args, out: &mut dyn FnMut(&[u8])) -> usize {
    let mut sink = Sink { out, count: 0 };
    let mut i = 0;
    while i < format.len() {
        let Some(at) = format[i..].iter().position(|&b| b == b'%') else {
            sink.put(&format[i..]);
            break;
        };
        sink.put(&format[i..i + at]);
        i += at + 1;
        let start = i - 1;
        let (spec, used) = parse(&format[i..], args);
        i += used;
        match spec {
            Some(spec) => convert(&spec, args, &mut sink),
            None => sink.put(&format[start..i]),
        }
    }
    sink.count
}

struct Sink<'a> {
    out: &'a mut dyn FnMut(&[u8]),
    count: usize,
}

impl Sink<'_> {
    fn put(&mut self, b: &[u8]) {
        if !b.is_empty() {
            (self.out)(b);
            self.count += b.len();
        }
    }

    fn pad(&mut self, byte: u8, n: usize) {
        let chunk = [byte; 16];
        let mut left = n;
        while left > 0 {
            let k = left.min(16);
            self.put(&chunk[..k]);
            left -= k;
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    size: Option<IntSize>,
    conv: u8,
}

/// The widest field honoured: a larger width or precision is clamped (no unbounded output
/// from a corrupt format).
const MAX_FIELD: usize = 4096;

/// Parses one conversion after its `%`: the spec (None: not a conversion we know) and the
/// bytes consumed.
fn parse(f: &[u8], args: &mut dyn Args) -> (Option<Spec>, usize) {
    let mut s = Spec::default();
    let mut i = 0;
    while let Some(&c) = f.get(i) {
        match c {
            b'-' => s.left = true,
            b'+' => s.plus = true,
            b' ' => s.space = true,
            b'#' => s.alt = true,
            b'0' => s.zero = true,
            _ => break,
        }
        i += 1;
    }
    if f.get(i) == Some(&b'*') {
        let w = args.signed(IntSize::Int);
        if w < 0 {
            s.left = true;
        }
        s.width = (w.unsigned_abs() as usize).min(MAX_FIELD);
        i += 1;
    } else {
        while let Some(d) = f.get(i).filter(|c| c.is_ascii_digit()) {
            s.width = (s.width * 10 + usize::from(d - b'0')).min(MAX_FIELD);
            i += 1;
        }
    }
    if f.get(i) == Some(&b'.') {
        i += 1;
        if f.get(i) == Some(&b'*') {
            let p = args.signed(IntSize::Int);
            // A negative precision is taken as if it were omitted.
            s.precision = (p >= 0).then(|| (p as usize).min(MAX_FIELD));
            i += 1;
        } else {
            let mut p = 0usize;
            while let Some(d) = f.get(i).filter(|c| c.is_ascii_digit()) {
                p = (p * 10 + usize::from(d - b'0')).min(MAX_FIELD);
                i += 1;
            }
            s.precision = Some(p);
        }
    }
    let size = match (f.get(i), f.get(i + 1)) {
        (Some(b'h'), Some(b'h')) => Some((IntSize::Char, 2)),
        (Some(b'h'), _) => Some((IntSize::Short, 1)),
        (Some(b'l'), Some(b'l')) => Some((IntSize::LongLong, 2)),
        (Some(b'l'), _) => Some((IntSize::Long, 1)),
        (Some(b'z' | b't'), _) => Some((IntSize::Size, 1)),
        (Some(b'j'), _) => Some((IntSize::Max, 1)),
        // long double is double on the device.
        (Some(b'L'), _) => Some((IntSize::Int, 1)),
        _ => None,
    };
    if let Some((sz, n)) = size {
        s.size = Some(sz);
        i += n;
    }
    match f.get(i) {
        Some(&c) if b"diuoxXcspfFeEgGaAn%".contains(&c) => {
            s.conv = c;
            (Some(s), i + 1)
        }
        Some(_) => (None, i + 1),
        None => (None, i),
    }
}

fn convert(s: &Spec, args: &mut dyn Args, out: &mut Sink<'_>) {
    let size = s.size.unwrap_or(IntSize::Int);
    match s.conv {
        b'%' => out.put(b"%"),
        b'n' => {
            // Consumed, never written through.
            args.pointer();
        }
        b'c' => {
            let c = args.signed(IntSize::Int) as u8;
            field(s, out, b"", &[c], 0);
        }
        b's' => {
            let max = s.precision.unwrap_or(usize::MAX);
            match args.string(max) {
                Some(bytes) => field(s, out, b"", bytes, 0),
                // glibc prints "(null)" when it fits the precision.
                None => {
                    let null: &[u8] = if max >= 6 { b"(null)" } else { b"" };
                    field(s, out, b"", null, 0)
                }
            }
        }
        b'd' | b'i' => {
            let v = args.signed(size);
            integer(s, out, sign(s, v < 0), v.unsigned_abs(), 10, false);
        }
        b'u' => integer(s, out, b"", args.unsigned(size), 10, false),
        b'o' => integer(s, out, b"", args.unsigned(size), 8, false),
        b'x' => integer(s, out, b"", args.unsigned(size), 16, false),
        b'X' => integer(s, out, b"", args.unsigned(size), 16, true),
        b'p' => {
            let p = args.pointer() as u64;
            if p == 0 {
                field(s, out, b"", b"(nil)", 0);
            } else {
                let mut digits = Digits::new();
                digits.number(p, 16, false);
                field(s, out, b"0x", digits.bytes(), 0);
            }
        }
        b'a' | b'A' => hex_float(s, out, args.double()),
        _ => float(s, out, args.double()),
    }
}

/// `%a`: `[-]0xh.hhhp±d`, as glibc prints it: a normal number's leading digit is 1, a
/// subnormal's 0 with exponent -1022; without a precision the 13 hex digits of the
/// fraction lose their trailing zeros, with one the fraction is rounded to nearest (ties
/// to even), a carry showing as a leading 2.
fn hex_float(s: &Spec, out: &mut Sink<'_>, v: f64) {
    const FRACTION_DIGITS: usize = 13;
    if !v.is_finite() {
        return float(s, out, v);
    }
    let upper = s.conv == b'A';
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let mut fraction = bits & ((1u64 << 52) - 1);
    let (mut lead, exp) = match (biased, fraction) {
        (0, 0) => (0u8, 0i64),
        (0, _) => (0, -1022),
        _ => (1, biased - 1023),
    };
    let shown = match s.precision {
        Some(p) if p < FRACTION_DIGITS => {
            let drop = 4 * (FRACTION_DIGITS - p) as u32;
            let rest = fraction & ((1u64 << drop) - 1);
            let half = 1u64 << (drop - 1);
            fraction >>= drop;
            // Ties go to an even last digit: the leading one when no fraction is shown.
            let odd = if p == 0 {
                lead & 1 == 1
            } else {
                fraction & 1 == 1
            };
            if rest > half || (rest == half && odd) {
                fraction += 1;
                if fraction >> (4 * p) != 0 {
                    fraction = 0;
                    lead += 1;
                }
            }
            p
        }
        Some(_) => FRACTION_DIGITS,
        None => {
            let mut n = FRACTION_DIGITS;
            while n > 0 && fraction & 0xf == 0 {
                fraction >>= 4;
                n -= 1;
            }
            n
        }
    };
    let hex: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut digits = [0u8; FRACTION_DIGITS];
    for (i, d) in digits[..shown].iter_mut().rev().enumerate() {
        *d = hex[((fraction >> (4 * i)) & 0xf) as usize];
    }
    let zeros = s.precision.map_or(0, |p| p.saturating_sub(shown));
    let mut head = [0u8; 3];
    let sign = sign(s, v.is_sign_negative());
    head[..sign.len()].copy_from_slice(sign);
    head[sign.len()..sign.len() + 2].copy_from_slice(if upper { b"0X" } else { b"0x" });
    let head = &head[..sign.len() + 2];
    let dot: &[u8] = if shown + zeros > 0 || s.alt {
        b"."
    } else {
        b""
    };
    let mut e = Digits::new();
    e.number(exp.unsigned_abs(), 10, false);
    let p_sign: &[u8] = match (upper, exp < 0) {
        (false, true) => b"p-",
        (false, false) => b"p+",
        (true, true) => b"P-",
        (true, false) => b"P+",
    };
    field_parts(
        s,
        out,
        head,
        &[
            Part::Bytes(&[b'0' + lead]),
            Part::Bytes(dot),
            Part::Bytes(&digits[..shown]),
            Part::Zeros(zeros),
            Part::Bytes(p_sign),
            Part::Bytes(e.bytes()),
        ],
    );
}

/// The sign a signed conversion shows: '-', or what the '+' / ' ' flags ask for.
fn sign(s: &Spec, negative: bool) -> &'static [u8] {
    match (negative, s.plus, s.space) {
        (true, _, _) => b"-",
        (false, true, _) => b"+",
        (false, false, true) => b" ",
        _ => b"",
    }
}

/// Digits of a number, most significant first, in a fixed buffer.
struct Digits {
    buf: [u8; 24],
    start: usize,
}

impl Digits {
    fn new() -> Digits {
        Digits {
            buf: [0; 24],
            start: 24,
        }
    }

    fn number(&mut self, mut v: u64, base: u64, upper: bool) {
        let table: &[u8; 16] = if upper {
            b"0123456789ABCDEF"
        } else {
            b"0123456789abcdef"
        };
        loop {
            self.start -= 1;
            self.buf[self.start] = table[(v % base) as usize];
            v /= base;
            if v == 0 {
                break;
            }
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn integer(s: &Spec, out: &mut Sink<'_>, sign: &[u8], v: u64, base: u64, upper: bool) {
    let mut digits = Digits::new();
    // Precision 0 with value 0 prints no digits.
    if !(v == 0 && s.precision == Some(0)) {
        digits.number(v, base, upper);
    }
    let d = digits.bytes();
    let mut zeros = s.precision.map_or(0, |p| p.saturating_sub(d.len()));
    let prefix: &[u8] = match (s.alt, base, v) {
        (true, 16, 1..) => {
            if upper {
                b"0X"
            } else {
                b"0x"
            }
        }
        // '#' with octal: the first digit is a 0.
        (true, 8, _) if zeros == 0 && d.first() != Some(&b'0') => {
            zeros = 1;
            b""
        }
        _ => b"",
    };
    let mut head = [0u8; 3];
    head[..sign.len()].copy_from_slice(sign);
    head[sign.len()..sign.len() + prefix.len()].copy_from_slice(prefix);
    let spec = Spec {
        // '0' is ignored when a precision is given.
        zero: s.zero && s.precision.is_none(),
        ..*s
    };
    field(&spec, out, &head[..sign.len() + prefix.len()], d, zeros);
}

/// Writes `head` (sign, 0x), `zeros` zeros and `body` in a field of `s.width`.
fn field(s: &Spec, out: &mut Sink<'_>, head: &[u8], body: &[u8], zeros: usize) {
    let len = head.len() + zeros + body.len();
    let fill = s.width.saturating_sub(len);
    if s.left {
        out.put(head);
        out.pad(b'0', zeros);
        out.put(body);
        out.pad(b' ', fill);
    } else if s.zero {
        out.put(head);
        out.pad(b'0', zeros + fill);
        out.put(body);
    } else {
        out.pad(b' ', fill);
        out.put(head);
        out.pad(b'0', zeros);
        out.put(body);
    }
}

/// A float's text in parts, written by [`field_parts`]: digits, runs of zeros, marks.
#[derive(Clone, Copy)]
enum Part<'a> {
    Bytes(&'a [u8]),
    /// Decimal digit values (0-9), written as ASCII.
    Digits(&'a [u8]),
    Zeros(usize),
}

fn field_parts(s: &Spec, out: &mut Sink<'_>, head: &[u8], parts: &[Part<'_>]) {
    let body: usize = parts
        .iter()
        .map(|p| match p {
            Part::Bytes(b) | Part::Digits(b) => b.len(),
            Part::Zeros(n) => *n,
        })
        .sum();
    let fill = s.width.saturating_sub(head.len() + body);
    if !s.left && !s.zero {
        out.pad(b' ', fill);
    }
    out.put(head);
    if !s.left && s.zero {
        out.pad(b'0', fill);
    }
    for p in parts {
        match p {
            Part::Bytes(b) => out.put(b),
            Part::Digits(d) => {
                for chunk in d.chunks(16) {
                    let mut text = [0u8; 16];
                    for (t, &v) in text.iter_mut().zip(chunk) {
                        *t = b'0' + v;
                    }
                    out.put(&text[..chunk.len()]);
                }
            }
            Part::Zeros(n) => out.pad(b'0', *n),
        }
    }
    if s.left {
        out.pad(b' ', fill);
    }
}

/// The digits of `dec` in `[from, to)` (indexes into its digit list; clipped to it).
fn digits(dec: &Decimal, from: usize, to: usize) -> &[u8] {
    let to = to.min(dec.n);
    &dec.d[from.min(to)..to]
}

/// A conversion of a float: the deep path of printf (about 2 KiB of a Pool core's stack),
/// which host builds charge when it is taken (D122). Never inlined: the device frames
/// table finds it by its name.
#[inline(never)]
fn float(s: &Spec, out: &mut Sink<'_>, v: f64) {
    crate::runtime::stack::charged_path(customop_abi::stack::PRINTF_FLOAT);
    let upper = s.conv.is_ascii_uppercase();
    let sign = sign(s, v.is_sign_negative());
    if !v.is_finite() {
        let text: &[u8] = match (v.is_nan(), upper) {
            (true, false) => b"nan",
            (true, true) => b"NAN",
            (false, false) => b"inf",
            (false, true) => b"INF",
        };
        let spec = Spec { zero: false, ..*s };
        return field(&spec, out, sign, text, 0);
    }
    let p = s.precision.unwrap_or(6).min(MAX_FIELD.min(1000));
    let mut dec = Decimal::of(v.abs());
    let style_e = match s.conv.to_ascii_lowercase() {
        b'f' => {
            dec.round(i64::from(dec.point) + p as i64);
            return fixed(s, out, sign, &dec, p, s.alt);
        }
        b'e' => {
            dec.round(p as i64 + 1);
            return scientific(s, out, sign, &dec, p, s.alt, upper);
        }
        // %g: P significant digits; style e when the exponent is < -4 or >= P.
        _ => {
            let p = p.max(1);
            dec.round(p as i64);
            let x = if dec.n == 0 { 0 } else { dec.point as i64 - 1 };
            (x < -4 || x >= p as i64, p, x)
        }
    };
    let (e_style, p, x) = style_e;
    // Without '#', trailing zeros go (the digit list has none): the precision shrinks to
    // what the digits need.
    let digits = if s.alt { p } else { dec.n.max(1) };
    if e_style {
        scientific(s, out, sign, &dec, digits - 1, s.alt, upper);
    } else {
        let decimals = (digits as i64 - 1 - x).max(0) as usize;
        fixed(s, out, sign, &dec, decimals, s.alt);
    }
}

/// `ddd.ddd` with `p` decimals of the rounded `dec`.
fn fixed(s: &Spec, out: &mut Sink<'_>, sign: &[u8], dec: &Decimal, p: usize, alt: bool) {
    let point = dec.point as i64;
    let int_digits = point.max(0) as usize;
    let int_part = digits(dec, 0, int_digits);
    let int_zeros = int_digits - int_part.len();
    // Fraction: `p` places starting at digit `point`; leading zeros while point < 0.
    let lead = ((-point).max(0) as usize).min(p);
    let from = point.max(0) as usize;
    let frac = digits(dec, from, from + (p - lead));
    let trail = p - lead - frac.len();
    let zero_int: &[u8] = if int_digits == 0 { b"0" } else { b"" };
    let dot: &[u8] = if p > 0 || alt { b"." } else { b"" };
    field_parts(
        s,
        out,
        sign,
        &[
            Part::Bytes(zero_int),
            Part::Digits(int_part),
            Part::Zeros(int_zeros),
            Part::Bytes(dot),
            Part::Zeros(lead),
            Part::Digits(frac),
            Part::Zeros(trail),
        ],
    );
}

/// `d.ddde±XX` (at least two exponent digits) with `p` decimals of the rounded `dec`.
fn scientific(
    s: &Spec,
    out: &mut Sink<'_>,
    sign: &[u8],
    dec: &Decimal,
    p: usize,
    alt: bool,
    upper: bool,
) {
    let x = if dec.n == 0 { 0 } else { dec.point as i64 - 1 };
    let first: &[u8] = &[b'0' + dec.digit(0)];
    let rest = digits(dec, 1, 1 + p);
    let trail = p - rest.len();
    let dot: &[u8] = if p > 0 || alt { b"." } else { b"" };
    let mut e = [0u8; 6];
    e[0] = if upper { b'E' } else { b'e' };
    e[1] = if x < 0 { b'-' } else { b'+' };
    let mut n = 2;
    let ax = x.unsigned_abs();
    if ax >= 100 {
        e[n] = b'0' + (ax / 100) as u8;
        n += 1;
    }
    e[n] = b'0' + (ax / 10 % 10) as u8;
    e[n + 1] = b'0' + (ax % 10) as u8;
    n += 2;
    field_parts(
        s,
        out,
        sign,
        &[
            Part::Bytes(first),
            Part::Bytes(dot),
            Part::Digits(rest),
            Part::Zeros(trail),
            Part::Bytes(&e[..n]),
        ],
    );
}
