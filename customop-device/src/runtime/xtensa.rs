//! What the Xtensa base ISA configuration leaves to the runtime: the PRID read (rustc has
//! no inline assembly for Xtensa, so the three instructions are placed as encoded bytes),
//! 32-bit multiply, and the atomic loads `core` refers to (plain loads suffice: a core runs
//! one kernel and shares no memory with its siblings).

/// Code bytes, aligned as a windowed call target must be.
#[repr(C, align(4))]
pub struct Code<const N: usize>(pub [u8; N]);

/// `__neuron_read_prid`: `entry a1, 32; rsr a2, prid (SR 235); retw.n` (windowed ABI).
#[no_mangle]
#[used]
#[link_section = ".text.__neuron_read_prid"]
pub static __neuron_read_prid: Code<8> = Code([0x36, 0x41, 0x00, 0x20, 0xEB, 0x03, 0x1D, 0xF0]);

/// `__mulsi3`: shift-and-add (no MUL32 in the base ISA).
#[no_mangle]
pub extern "C" fn __mulsi3(a: u32, b: u32) -> u32 {
    let (mut a, mut b, mut r) = (a, b, 0u32);
    while b != 0 {
        if b & 1 != 0 {
            r = r.wrapping_add(a);
        }
        a <<= 1;
        b >>= 1;
    }
    r
}

/// `__ucmpdi2`: libgcc's unsigned 64-bit compare (0 below, 1 equal, 2 above), which GCC
/// calls for some 64-bit comparisons and compiler-builtins lacks.
#[no_mangle]
pub extern "C" fn __ucmpdi2(a: u64, b: u64) -> i32 {
    match a.cmp(&b) {
        core::cmp::Ordering::Less => 0,
        core::cmp::Ordering::Equal => 1,
        core::cmp::Ordering::Greater => 2,
    }
}

/// `__cmpdi2`: the signed counterpart.
#[no_mangle]
pub extern "C" fn __cmpdi2(a: i64, b: i64) -> i32 {
    match a.cmp(&b) {
        core::cmp::Ordering::Less => 0,
        core::cmp::Ordering::Equal => 1,
        core::cmp::Ordering::Greater => 2,
    }
}

#[no_mangle]
pub unsafe extern "C" fn __atomic_load_1(p: *const u8, _order: i32) -> u8 {
    // SAFETY: the caller's valid pointer (the C ABI of the builtin).
    unsafe { p.read_volatile() }
}

#[no_mangle]
pub unsafe extern "C" fn __atomic_load_2(p: *const u16, _order: i32) -> u16 {
    // SAFETY: as above.
    unsafe { p.read_volatile() }
}

#[no_mangle]
pub unsafe extern "C" fn __atomic_load_4(p: *const u32, _order: i32) -> u32 {
    // SAFETY: as above.
    unsafe { p.read_volatile() }
}
