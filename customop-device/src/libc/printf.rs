//! The C `printf` formatter for the device's `printf` family (the variadic entry points are
//! in [`crate::libc`] on device builds). Safe and independent of `va_list`: the arguments
//! come from an [`Args`] source, so the host tests drive it with a list and compare with
//! the host libc's `snprintf`, and the Xtensa self-test runs it in place.
//!
//! Supported: flags `-+ #0`, width and precision (numbers or `*`), length modifiers
//! `hh h l ll j z t L`, conversions `d i u o x X c s p f F e E g G %`. `%n` writes nothing
//! (it is a classic format-string hole) and an unknown conversion is copied through as
//! written. Floats are formatted from their exact decimal value (a small bignum, no
//! `core::fmt`: its float tables and algorithms would take a third of a lean device image),
//! rounded ties-to-even on that value, as glibc does.

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
        Some(&c) if b"diuoxXcspfFeEgGn%".contains(&c) => {
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
        _ => float(s, out, args.double()),
    }
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

/// The exact decimal value of a finite, non-negative `f64`: `0.d0 d1 d2 ... x 10^point`, the
/// digits without leading or trailing zeros (none for zero). A double has at most 767
/// significant decimal digits.
struct Decimal {
    d: [u8; 770],
    n: usize,
    point: i32,
}

/// Little-endian 32-bit limbs: 2^1024 and the 1126-bit fractions of subnormals fit.
const LIMBS: usize = 37;

impl Decimal {
    fn of(v: f64) -> Decimal {
        let mut dec = Decimal {
            d: [0; 770],
            n: 0,
            point: 1,
        };
        let bits = v.to_bits();
        let (e, f) = (((bits >> 52) & 0x7ff) as i32, bits & ((1 << 52) - 1));
        let (mut m, mut q) = if e == 0 {
            (f, -1074)
        } else {
            (f | 1 << 52, e - 1075)
        };
        if m == 0 {
            return dec;
        }
        while m & 1 == 0 {
            m >>= 1;
            q += 1;
        }
        if q >= 0 {
            // m * 2^q: digits by repeated division by 10^9.
            let mut big = [0u32; LIMBS];
            big[0] = m as u32;
            big[1] = (m >> 32) as u32;
            shift_left(&mut big, q as usize);
            let mut chunks = [0u32; 40];
            let mut c = 0;
            while big.iter().any(|&l| l != 0) {
                chunks[c] = div_small(&mut big, 1_000_000_000);
                c += 1;
            }
            for k in (0..c).rev() {
                dec.push_chunk(chunks[k], k + 1 == c);
            }
            dec.point = dec.n as i32;
        } else {
            let k = (-q) as usize;
            let int = if k >= 64 { 0 } else { m >> k };
            let mut frac = [0u32; LIMBS];
            frac[0] = m as u32;
            frac[1] = (m >> 32) as u32;
            keep_low(&mut frac, k);
            if int != 0 {
                let (mut chunks, mut c, mut i) = ([0u32; 3], 0, int);
                while i != 0 {
                    chunks[c] = (i % 1_000_000_000) as u32;
                    i /= 1_000_000_000;
                    c += 1;
                }
                for j in (0..c).rev() {
                    dec.push_chunk(chunks[j], j + 1 == c);
                }
                dec.point = dec.n as i32;
            } else {
                dec.point = 0;
            }
            // The fraction's digits, 9 at a time: frac * 10^9, the bits above k.
            while frac.iter().any(|&l| l != 0) {
                let chunk = mul_small(&mut frac, 1_000_000_000, k);
                for j in (0..9).rev() {
                    let digit = (chunk / 10u32.pow(j)) % 10;
                    if dec.n == 0 && digit == 0 {
                        dec.point -= 1;
                    } else if dec.n < dec.d.len() {
                        dec.d[dec.n] = digit as u8;
                        dec.n += 1;
                    }
                }
            }
        }
        while dec.n > 0 && dec.d[dec.n - 1] == 0 {
            dec.n -= 1;
        }
        dec
    }

    /// Appends a base-10^9 chunk (the first without its leading zeros).
    fn push_chunk(&mut self, chunk: u32, first: bool) {
        for j in (0..9).rev() {
            let digit = (chunk / 10u32.pow(j)) % 10;
            if !(first && self.n == 0 && digit == 0) {
                self.d[self.n] = digit as u8;
                self.n += 1;
            }
        }
    }

    fn digit(&self, i: i64) -> u8 {
        if i >= 0 && (i as usize) < self.n {
            self.d[i as usize]
        } else {
            0
        }
    }

    /// Rounds to the first `keep` digits (ties to even, as glibc rounds the exact value);
    /// `keep` may be 0 or negative (then the value rounds to zero or to one unit at
    /// digit `keep - 1`).
    fn round(&mut self, keep: i64) {
        if keep >= self.n as i64 {
            return;
        }
        let up = if keep < 0 {
            false
        } else {
            let k = keep as usize;
            let rest_nonzero = self.d[k + 1..self.n].iter().any(|&d| d != 0);
            match self.d[k] {
                6.. => true,
                5 if rest_nonzero => true,
                5 => k > 0 && self.d[k - 1] % 2 == 1,
                _ => false,
            }
        };
        let k = keep.max(0) as usize;
        self.n = k;
        if up {
            let mut i = k;
            loop {
                if i == 0 {
                    // 9...9 rounded up: 1 followed by zeros, one place higher.
                    self.d[0] = 1;
                    self.n = 1;
                    self.point += 1;
                    break;
                }
                i -= 1;
                if self.d[i] == 9 {
                    self.d[i] = 0;
                } else {
                    self.d[i] += 1;
                    break;
                }
            }
        }
        while self.n > 0 && self.d[self.n - 1] == 0 {
            self.n -= 1;
        }
        if self.n == 0 {
            self.point = 1;
        }
    }
}

fn shift_left(big: &mut [u32; LIMBS], by: usize) {
    let (limbs, bits) = (by / 32, by % 32);
    for i in (0..LIMBS).rev() {
        let lo = i.checked_sub(limbs).map_or(0, |j| big[j]);
        let lower = i.checked_sub(limbs + 1).map_or(0, |j| big[j]);
        big[i] = if bits == 0 {
            lo
        } else {
            lo << bits | lower >> (32 - bits)
        };
    }
}

/// Clears the bits at and above `k`.
fn keep_low(big: &mut [u32; LIMBS], k: usize) {
    for (i, l) in big.iter_mut().enumerate() {
        let base = i * 32;
        if base >= k {
            *l = 0;
        } else if k - base < 32 {
            *l &= (1u32 << (k - base)) - 1;
        }
    }
}

fn div_small(big: &mut [u32; LIMBS], by: u32) -> u32 {
    let mut rem = 0u64;
    for l in big.iter_mut().rev() {
        let cur = rem << 32 | u64::from(*l);
        *l = (cur / u64::from(by)) as u32;
        rem = cur % u64::from(by);
    }
    rem as u32
}

/// `big *= by` (big < 2^k), returning the part at and above bit `k` and keeping the rest.
fn mul_small(big: &mut [u32; LIMBS], by: u32, k: usize) -> u32 {
    let mut carry = 0u64;
    for l in big.iter_mut() {
        let cur = u64::from(*l) * u64::from(by) + carry;
        *l = cur as u32;
        carry = cur >> 32;
    }
    let (i, off) = (k / 32, k % 32);
    let at = |j: usize| big.get(j).copied().unwrap_or(0);
    let high = if off == 0 {
        at(i)
    } else {
        at(i) >> off | at(i + 1) << (32 - off)
    };
    keep_low(big, k);
    high
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

fn float(s: &Spec, out: &mut Sink<'_>, v: f64) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::vec::Vec;

    /// A test's argument list.
    enum A {
        I(i64),
        F(f64),
        S(Option<&'static [u8]>),
        P(usize),
    }

    struct List(Vec<A>, usize);

    impl Args for List {
        fn signed(&mut self, size: IntSize) -> i64 {
            self.1 += 1;
            match self.0[self.1 - 1] {
                A::I(v) => match size {
                    IntSize::Char => v as i8 as i64,
                    IntSize::Short => v as i16 as i64,
                    IntSize::Int => v as i32 as i64,
                    _ => v,
                },
                _ => panic!("not an integer"),
            }
        }
        fn unsigned(&mut self, size: IntSize) -> u64 {
            self.1 += 1;
            match self.0[self.1 - 1] {
                A::I(v) => match size {
                    IntSize::Char => v as u8 as u64,
                    IntSize::Short => v as u16 as u64,
                    IntSize::Int => v as u32 as u64,
                    _ => v as u64,
                },
                _ => panic!("not an integer"),
            }
        }
        fn double(&mut self) -> f64 {
            self.1 += 1;
            match self.0[self.1 - 1] {
                A::F(v) => v,
                _ => panic!("not a double"),
            }
        }
        fn pointer(&mut self) -> usize {
            self.1 += 1;
            match self.0[self.1 - 1] {
                A::P(v) => v,
                _ => panic!("not a pointer"),
            }
        }
        fn string(&mut self, max: usize) -> Option<&[u8]> {
            self.1 += 1;
            match self.0[self.1 - 1] {
                A::S(s) => s.map(|s| &s[..s.len().min(max)]),
                _ => panic!("not a string"),
            }
        }
    }

    fn ours(f: &str, args: Vec<A>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut list = List(args, 0);
        let n = format(f.as_bytes(), &mut list, &mut |b| out.extend_from_slice(b));
        assert_eq!(n, out.len());
        assert_eq!(list.1, list.0.len(), "{f}: every argument consumed");
        out
    }

    /// The host libc's snprintf of a format with one argument, as the oracle.
    fn theirs(f: &str, a: &A) -> Vec<u8> {
        let fmt = CString::new(f).unwrap();
        let mut buf = std::vec![0u8; 4096];
        let (p, n) = (buf.as_mut_ptr().cast::<core::ffi::c_char>(), buf.len());
        // SAFETY: a NUL-terminated format with one conversion of the argument's type.
        let len = unsafe {
            match a {
                A::I(v) if f.contains("ll") || f.contains('j') => {
                    libc_snprintf(p, n, fmt.as_ptr(), *v)
                }
                A::I(v) => libc_snprintf(p, n, fmt.as_ptr(), *v as i32),
                A::F(v) => libc_snprintf(p, n, fmt.as_ptr(), *v),
                A::S(Some(s)) => {
                    let c = CString::new(*s).unwrap();
                    libc_snprintf(p, n, fmt.as_ptr(), c.as_ptr())
                }
                A::S(None) => libc_snprintf(p, n, fmt.as_ptr(), core::ptr::null::<u8>()),
                A::P(v) => libc_snprintf(p, n, fmt.as_ptr(), *v as *const u8),
            }
        };
        assert!((len as usize) < n, "{f}: the oracle's buffer is too small");
        buf[..len as usize].to_vec()
    }

    extern "C" {
        #[link_name = "snprintf"]
        fn libc_snprintf(
            buf: *mut core::ffi::c_char,
            n: usize,
            f: *const core::ffi::c_char,
            ...
        ) -> core::ffi::c_int;
    }

    fn same(f: &str, a: A) {
        let want = theirs(f, &a);
        let got = ours(f, std::vec![a]);
        assert_eq!(
            std::string::String::from_utf8_lossy(&got),
            std::string::String::from_utf8_lossy(&want),
            "format {f:?}"
        );
    }

    #[test]
    fn integers_match_the_host_libc() {
        let formats = [
            "%d", "%i", "%5d", "%-5d|", "%05d", "%+d", "% d", "%.3d", "%8.3d", "%-8.3d|", "%.0d",
            "%u", "%x", "%X", "%#x", "%#X", "%o", "%#o", "%#.0o", "%#08x", "%hhd", "%hd", "%hhu",
            "%lld", "%llx", "%jd", "%+05d", "%-+6d|", "%c", "%5c", "%-3c|",
        ];
        let values = [
            0i64,
            1,
            -1,
            42,
            -42,
            255,
            65_535,
            2_147_483_647,
            -2_147_483_648,
        ];
        for f in formats {
            for &v in &values {
                if f.contains('c') && !(0..128).contains(&v) {
                    continue;
                }
                same(f, A::I(v));
            }
        }
        for v in [i64::MIN, i64::MAX, 1 << 40] {
            for f in ["%lld", "%llu", "%llx", "%#llo", "%20lld", "%-22lld|"] {
                same(f, A::I(v));
            }
        }
    }

    #[test]
    fn floats_match_the_host_libc() {
        let formats = [
            "%f", "%.0f", "%.1f", "%.3f", "%10.2f", "%-10.2f|", "%010.2f", "%+f", "% f", "%#.0f",
            "%e", "%.0e", "%.2e", "%E", "%#.0e", "%12.3e", "%g", "%.0g", "%.3g", "%.10g", "%G",
            "%#g", "%#.3g", "%10g", "%-10g|", "%F", "%.15g", "%.17g",
        ];
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.5,
            0.5,
            2.5,
            2.345678901,
            1e-5,
            1.0e-4,
            123456.789,
            1e15,
            1e16,
            1e300,
            -2.2250738585072014e-308,
            0.1,
            99999.5,
            9.9999e-5,
            1e100,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for f in formats {
            for &v in &values {
                same(f, A::F(v));
            }
        }
    }

    #[test]
    fn random_doubles_match_the_host_libc_in_every_float_conversion() {
        // Random bit patterns (every exponent, subnormals included) and random decimals.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let formats = [
            "%f", "%.0f", "%.1f", "%.17f", "%.40f", "%e", "%.0e", "%.3e", "%.16e", "%.25e", "%g",
            "%.1g", "%.5g", "%.17g", "%.30g", "%#g", "%#.0g", "%#.0f", "%#.0e", "%+12.4f",
            "%-14.3e|", "%020.6g",
        ];
        for i in 0..4000 {
            let v = match i % 4 {
                0 => f64::from_bits(next()),
                1 => (next() % 2_000_000) as f64 / 1000.0 - 1000.0,
                2 => (next() % 100_000) as f64 / 8.0,
                _ => f64::from_bits(next() & 0x000F_FFFF_FFFF_FFFF),
            };
            for f in formats {
                same(f, A::F(v));
            }
        }
        for v in [
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            0.5,
            1.5,
            2.5,
            0.125,
            0.375,
            1e23,
        ] {
            for f in [
                "%.400f", "%.1000f", "%.800e", "%.0f", "%.2f", "%.1e", "%.3g",
            ] {
                same(f, A::F(v));
            }
        }
    }

    #[test]
    fn strings_pointers_and_the_rest_match_the_host_libc() {
        for f in ["%s", "%10s", "%-10s|", "%.2s", "%5.1s", "%.0s"] {
            same(f, A::S(Some(b"hello")));
            same(f, A::S(Some(b"")));
        }
        same("%s", A::S(None));
        same("%p", A::P(0x1234));
        same("%18p", A::P(0xdead_beef));
        same("%p", A::P(0));
        assert_eq!(ours("100%% done", std::vec![]), b"100% done");
        assert_eq!(
            ours("%*d|%-*d|", std::vec![A::I(5), A::I(42), A::I(4), A::I(7)]),
            b"   42|7   |"
        );
        assert_eq!(ours("%.*f", std::vec![A::I(2), A::F(2.34567)]), b"2.35");
        assert_eq!(ours("%.*f", std::vec![A::I(-1), A::F(1.5)]), b"1.500000");
        // Unknown conversions are copied through; %n writes nothing; a trailing % stays.
        assert_eq!(ours("a%qb", std::vec![]), b"a%qb");
        assert_eq!(ours("x%n|", std::vec![A::P(0x10)]), b"x|");
        assert_eq!(ours("tail%", std::vec![]), b"tail%");
        // Widths are clamped, not trusted.
        let wide = ours("%99999d", std::vec![A::I(1)]);
        assert_eq!(wide.len(), MAX_FIELD);
    }
}
