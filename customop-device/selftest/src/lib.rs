//! The device runtime on the Xtensa ISA, under QEMU: allocators, translation, descriptors,
//! marshalling and the memory primitives, checked in place. `selftest_main` returns
//! [`PASS`] or the number of the first failing check; the start code (start.S) passes it
//! to semihosting's exit.
#![no_std]

use neuroncustomop::descriptor::*;
use neuroncustomop::runtime::heap::{Heap, HeapError};
use neuroncustomop::runtime::{self, scratch, ArgBlob, ARG_BLOB_MAGIC, ARG_TYPE_TENSOR};
use neuroncustomop::runtime::translate::{TranslationCtx, Windows};

pub const PASS: u32 = 42;

struct Fake;

impl Windows for Fake {
    fn program(&mut self, record: usize, _reg: u64, _soc_base: u64) -> usize {
        0x0700_0000 + 0x0100_0000 * record
    }
}

#[repr(C, align(64))]
struct Scratch([u8; scratch::MIN_SIZE]);
static mut SCRATCH: Scratch = Scratch([0; scratch::MIN_SIZE]);

macro_rules! check {
    ($n:expr, $c:expr) => {
        if !$c {
            return $n;
        }
    };
}

#[no_mangle]
pub extern "C" fn selftest_main() -> u32 {
    // Layouts, as the ISA sees them.
    check!(1, core::mem::size_of::<ArgTensor>() == 48);
    check!(2, core::mem::size_of::<ArgBlob>() == 560);
    check!(3, core::mem::size_of::<TranslationCtx>() == 168);
    check!(4, core::mem::size_of::<runtime::ArgParser>() == 512);

    // Heap: first fit, alignment, coalescing, errors.
    let mut h: Heap = Heap::empty();
    h.init(0x8_1000, 0x4000);
    let a = h.alloc(100, 0);
    let b = h.alloc(10, 256);
    check!(10, a == Ok(0x8_1000));
    check!(11, b == Ok(0x8_1100));
    check!(12, h.alloc(0, 0) == Err(HeapError::InvalidArgs));
    check!(13, h.alloc(8, 24) == Err(HeapError::IllegalAlign));
    check!(14, h.free(0x8_1001) == Err(HeapError::PtrOutOfBounds));
    check!(15, h.free(0x8_1000).is_ok() && h.free(0x8_1100).is_ok());
    check!(16, h.max_free_space(0) == 0x4000);
    let mut s = 12345u32;
    let mut live = [0u64; 8];
    let mut n = 0;
    for _ in 0..500 {
        s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
        if n < 8 && s & 0x100 != 0 {
            if let Ok(p) = h.alloc(64 + (s >> 20) % 900, 64) {
                check!(17, p % 64 == 0);
                live[n] = p;
                n += 1;
            }
        } else if n > 0 {
            n -= 1;
            check!(18, h.free(live[n]).is_ok());
        }
    }
    while n > 0 {
        n -= 1;
        check!(19, h.free(live[n]).is_ok());
    }
    check!(20, h.max_free_space(0) == 0x4000);

    // Translation: pinned hit, miss programming, round robin.
    let mut t = TranslationCtx::new(
        [(0x0700_0000, 0x0010_0218), (0x0900_0000, 0x0010_0228), (0x0A00_0000, 0x0010_0230)],
        (0x0020_0000_0000, 0x8000_0000),
        (0x0010_0400_0000, 0x8400_0000),
    );
    check!(30, t.translate(0x0010_0400_0010, &mut Fake) == 0x8400_0010);
    check!(31, t.translate(0x0001_2345_6789, &mut Fake) == 0x0700_0000 + 0x45_6789);
    check!(32, t.lookup(0x0001_2345_0000) == Some((0x0001_2300_0000, 0x0001_23FF_FFFF)));
    t.translate(0x0002_0000_0000, &mut Fake);
    t.translate(0x0003_0000_0000, &mut Fake);
    check!(33, t.translate(0x0004_0000_0004, &mut Fake) == 0x0700_0004);
    check!(34, t.lookup(0x0001_2345_6789).is_none());

    // Descriptors and the argument protocol, on a data scratch area in RAM.
    let x = ArgTensor::hbm(DTYPE_FP16, 0x0010_0400_1000, &[4, 8, 2]);
    check!(40, x.num_elem() == 64 && x.num_bytes() == 128);
    check!(41, isa_to_torch_dtype(DTYPE_BFLOAT16) == SCALAR_BFLOAT16);
    let base = core::ptr::addr_of_mut!(SCRATCH) as usize;
    runtime::set_scratch(base, scratch::MIN_SIZE, 0x0010_0400_0000, 1 << 20, (0, 0));
    runtime::init_for_launch();
    // SAFETY: the blob lies inside SCRATCH, 64-byte aligned.
    let blob = unsafe { &mut *((base + scratch::ARG_BLOB) as *mut ArgBlob) };
    blob.magic = ARG_BLOB_MAGIC;
    blob.num_args = 2;
    blob.args[0] = x;
    blob.args[1] = ArgTensor::hbm(DTYPE_INT32, 0x0010_0400_2000, &[1]);
    blob.types = [ARG_TYPE_TENSOR; 10];
    runtime::setup();
    check!(50, runtime::next_arg().num_elem() == 64);
    check!(51, runtime::tensor_soc_addr(runtime::next_arg()) == 0x0010_0400_2000);
    let p = runtime::dataram_allocate(4096, 0);
    check!(52, p.map_or(false, |p| p == base + scratch::DATARAM_POOL));
    check!(53, runtime::hbm_allocate(1000, 0) == Ok(0x0010_0400_0000));

    // Memory primitives at odd offsets.
    let mut src = [0u8; 300];
    let mut dst = [0u8; 300];
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i * 13) as u8;
    }
    for off in 0..4 {
        // SAFETY: in-bounds, disjoint buffers.
        unsafe {
            neuroncustomop::runtime::mem::copy_vector(dst.as_mut_ptr().add(off), src.as_ptr().add(3), 257);
            check!(60, neuroncustomop::runtime::mem::compare_bytes(dst.as_ptr().add(off), src.as_ptr().add(3), 257) == 0);
        }
    }

    // The printf formatter on the ISA (soft float, 32-bit): the device's printf family.
    check!(70, formats(b"%d|%5s|%-4x|%08.3f", &[Arg::I(-42), Arg::S(b"ok"), Arg::I(255), Arg::F(3.14159)], b"-42|   ok|ff  |0003.142"));
    check!(71, formats(b"%.3e %g %g %G", &[Arg::F(123456.0), Arg::F(0.0001), Arg::F(1e20), Arg::F(2.5e-7)], b"1.235e+05 0.0001 1e+20 2.5E-07"));
    check!(72, formats(b"%lld %llu %#o %c%%", &[Arg::I(i64::MIN), Arg::I(-1), Arg::I(8), Arg::I(65)], b"-9223372036854775808 18446744073709551615 010 A%"));
    PASS
}

enum Arg {
    I(i64),
    F(f64),
    S(&'static [u8]),
}

struct List<'a>(&'a [Arg], usize);

impl List<'_> {
    fn next(&mut self) -> Option<&Arg> {
        self.1 += 1;
        self.0.get(self.1 - 1)
    }
}

impl neuroncustomop::libc::printf::Args for List<'_> {
    fn signed(&mut self, size: neuroncustomop::libc::printf::IntSize) -> i64 {
        use neuroncustomop::libc::printf::IntSize;
        match (self.next(), size) {
            (Some(Arg::I(v)), IntSize::Int) => *v as i32 as i64,
            (Some(Arg::I(v)), _) => *v,
            _ => 0,
        }
    }
    fn unsigned(&mut self, size: neuroncustomop::libc::printf::IntSize) -> u64 {
        use neuroncustomop::libc::printf::IntSize;
        match (self.next(), size) {
            (Some(Arg::I(v)), IntSize::Int) => *v as u32 as u64,
            (Some(Arg::I(v)), _) => *v as u64,
            _ => 0,
        }
    }
    fn double(&mut self) -> f64 {
        match self.next() {
            Some(Arg::F(v)) => *v,
            _ => 0.0,
        }
    }
    fn pointer(&mut self) -> usize {
        0
    }
    fn string(&mut self, max: usize) -> Option<&[u8]> {
        match self.next() {
            Some(Arg::S(s)) => Some(&s[..s.len().min(max)]),
            _ => None,
        }
    }
}

/// `format` with `args` gives exactly `want`.
fn formats(format: &[u8], args: &[Arg], want: &[u8]) -> bool {
    let mut out = [0u8; 128];
    let mut n = 0;
    let mut over = false;
    let count = neuroncustomop::libc::printf::format(format, &mut List(args, 0), &mut |b| {
        if n + b.len() <= out.len() {
            out[n..n + b.len()].copy_from_slice(b);
            n += b.len();
        } else {
            over = true;
        }
    });
    !over && count == n && &out[..n] == want
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    extern "C" {
        fn selftest_exit(code: u32) -> !;
    }
    // SAFETY: start.S's semihosting exit.
    unsafe { selftest_exit(99) }
}
