//! Kernels written in Rust for the loader tests: reached through a `.kernel_info_table`,
//! with function and data pointers in data and literal-pool addresses in text, so the
//! prelinker sees the relocations a Rust-built library carries.
#![no_std]

// One core runs a kernel at a time, and the call0 lx106 configuration has no atomic
// compare-and-swap: plain statics, accessed through raw pointers.
static mut CALLS: u32 = 0;
static mut SCRATCH: [u32; 32] = [0; 32];
static GREETING: &str = "rust kernels";
static WORDS: [&str; 3] = ["iota", "sum", "greeting"];

type Kernel = extern "C" fn(*mut u32);

#[no_mangle]
pub extern "C" fn rust_iota(args: *mut u32) {
    // SAFETY: the host passes at least one word of arguments; one core runs a kernel.
    let n = unsafe { *args }.min(32) as usize;
    for i in 0..n {
        // SAFETY: single-threaded kernel; index bounded by the array length.
        unsafe { (*core::ptr::addr_of_mut!(SCRATCH))[i] = i as u32 * 3 };
    }
    // SAFETY: single-threaded kernel.
    unsafe { *core::ptr::addr_of_mut!(CALLS) += 1 };
}

#[no_mangle]
pub extern "C" fn rust_sum(args: *mut u32) {
    // SAFETY: the host passes two words of arguments.
    let n = unsafe { *args }.min(32) as usize;
    let mut sum = GREETING.len() as u32 + WORDS[n % 3].len() as u32;
    for i in 0..n {
        // SAFETY: as above.
        sum = sum.wrapping_add(unsafe { (*core::ptr::addr_of!(SCRATCH))[i] });
    }
    // SAFETY: as above.
    unsafe { *args.add(1) = sum };
    // SAFETY: single-threaded kernel.
    unsafe { *core::ptr::addr_of_mut!(CALLS) += 1 };
}

/// One `kernel_info_table` record: big-endian key (opcode | spec << 8), entry address.
#[repr(C)]
pub struct KernelInfo {
    key: [u8; 4],
    entry: Kernel,
}

#[no_mangle]
#[used]
#[link_section = ".kernel_info_table"]
pub static KERNEL_INFO_TABLE: [KernelInfo; 2] = [
    KernelInfo { key: [0, 0, 0, 65], entry: rust_iota },
    KernelInfo { key: [0, 0, 1, 0xF0], entry: rust_sum },
];

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
