//! The printf formatter against glibc's output.

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
            A::I(v) if f.contains("ll") || f.contains('j') => libc_snprintf(p, n, fmt.as_ptr(), *v),
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
fn hex_floats_match_the_host_libc() {
    let formats = [
        "%a", "%A", "%.0a", "%.1a", "%.3a", "%.13a", "%.20a", "%#.0a", "%20a", "%-20a|", "%020a",
        "%+a", "% a", "%+.2A",
    ];
    let values = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        3.0,
        1.96875,
        1.0 + f64::EPSILON,
        1.03125,
        1.09375,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::MIN_POSITIVE / 3.0,
        5e-324,
        123456.789,
        f64::INFINITY,
        f64::NAN,
    ];
    for f in formats {
        for &v in &values {
            same(f, A::F(v));
        }
    }
}

#[test]
fn a_hex_float_takes_its_argument_so_the_next_one_is_read_right() {
    let got = ours("%a %d", std::vec![A::F(0.5), A::I(7)]);
    assert_eq!(got, b"0x1p-1 7");
}

#[test]
fn integers_match_the_host_libc() {
    let formats = [
        "%d", "%i", "%5d", "%-5d|", "%05d", "%+d", "% d", "%.3d", "%8.3d", "%-8.3d|", "%.0d", "%u",
        "%x", "%X", "%#x", "%#X", "%o", "%#o", "%#.0o", "%#08x", "%hhd", "%hd", "%hhu", "%lld",
        "%llx", "%jd", "%+05d", "%-+6d|", "%c", "%5c", "%-3c|",
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
        "%f", "%.0f", "%.1f", "%.3f", "%10.2f", "%-10.2f|", "%010.2f", "%+f", "% f", "%#.0f", "%e",
        "%.0e", "%.2e", "%E", "%#.0e", "%12.3e", "%g", "%.0g", "%.3g", "%.10g", "%G", "%#g",
        "%#.3g", "%10g", "%-10g|", "%F", "%.15g", "%.17g",
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
        "%.1g", "%.5g", "%.17g", "%.30g", "%#g", "%#.0g", "%#.0f", "%#.0e", "%+12.4f", "%-14.3e|",
        "%020.6g",
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
