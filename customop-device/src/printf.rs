//! The C `printf` formatter for the device's `printf` family (the variadic entry points are
//! in [`crate::libc`] on device builds). Safe and independent of `va_list`: the arguments
//! come from an [`Args`] source, so the host tests drive it with a list and compare with
//! the host libc's `snprintf`, and the Xtensa self-test runs it in place.
//!
//! Supported: flags `-+ #0`, width and precision (numbers or `*`), length modifiers
//! `hh h l ll j z t L`, conversions `d i u o x X c s p f F e E g G %`. `%n` writes nothing
//! (it is a classic format-string hole) and an unknown conversion is copied through as
//! written. Floats are formatted by `core::fmt`, which rounds exactly (ties to even on the
//! decimal value, as glibc does).

use core::fmt::Write as _;

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

/// A fixed buffer `core::fmt` writes into (a float's digits: at most ~330 + precision).
struct Buf {
    b: [u8; 1400],
    n: usize,
}

impl core::fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.n.checked_add(s.len()).filter(|&e| e <= self.b.len());
        let end = end.ok_or(core::fmt::Error)?;
        self.b[self.n..end].copy_from_slice(s.as_bytes());
        self.n = end;
        Ok(())
    }
}

impl Buf {
    fn new() -> Buf {
        Buf { b: [0; 1400], n: 0 }
    }
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
    let a = v.abs();
    let p = s.precision.unwrap_or(6).min(MAX_FIELD.min(1000));
    let mut buf = Buf::new();
    match s.conv.to_ascii_lowercase() {
        b'f' => {
            let _ = write!(buf, "{a:.p$}");
            if s.alt && p == 0 {
                let _ = buf.write_str(".");
            }
        }
        b'e' => exp(&mut buf, a, p, s.alt, upper),
        _ => {
            // %g: P significant digits; style e when the exponent is < -4 or >= P.
            let p = if p == 0 { 1 } else { p };
            let mut probe = Buf::new();
            let _ = write!(probe, "{a:.prec$e}", prec = p - 1);
            let text = &probe.b[..probe.n];
            let at = text.iter().position(|&c| c == b'e').unwrap_or(text.len());
            let x: i64 = parse_exp(&text[at + 1..]);
            if x < -4 || x >= p as i64 {
                exp(&mut buf, a, p - 1, s.alt, upper);
            } else {
                let decimals = (p as i64 - 1 - x) as usize;
                let _ = write!(buf, "{a:.decimals$}");
                if s.alt && decimals == 0 {
                    let _ = buf.write_str(".");
                }
            }
            if !s.alt {
                strip_zeros(&mut buf);
            }
        }
    }
    field(s, out, sign, &buf.b[..buf.n], 0);
}

/// `d.ddde±XX` (at least two exponent digits), from core's `{:e}`.
fn exp(buf: &mut Buf, a: f64, p: usize, alt: bool, upper: bool) {
    let mut raw = Buf::new();
    let _ = write!(raw, "{a:.p$e}");
    let text = &raw.b[..raw.n];
    let at = text.iter().position(|&c| c == b'e').unwrap_or(text.len());
    let _ = buf.write_str(core::str::from_utf8(&text[..at]).unwrap_or(""));
    if alt && p == 0 {
        let _ = buf.write_str(".");
    }
    let x = parse_exp(&text[at + 1..]);
    let _ = write!(
        buf,
        "{}{}{:02}",
        if upper { 'E' } else { 'e' },
        if x < 0 { '-' } else { '+' },
        x.unsigned_abs()
    );
}

fn parse_exp(t: &[u8]) -> i64 {
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        _ => (false, t),
    };
    let v = digits
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'));
    if neg {
        -v
    } else {
        v
    }
}

/// %g without '#': trailing zeros of the fraction go, and a bare '.'.
fn strip_zeros(buf: &mut Buf) {
    let text = &buf.b[..buf.n];
    let Some(dot) = text.iter().position(|&c| c == b'.') else {
        return;
    };
    let end = text[dot..]
        .iter()
        .position(|&c| c == b'e' || c == b'E')
        .map_or(text.len(), |k| dot + k);
    let mut keep = end;
    while keep > dot + 1 && text[keep - 1] == b'0' {
        keep -= 1;
    }
    if keep == dot + 1 {
        keep = dot;
    }
    let tail = end - keep;
    buf.b.copy_within(end..buf.n, keep);
    buf.n -= tail;
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
        let mut buf = [0u8; 512];
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
