//! The stack a kernel runs on, as the vendor's `switch_stack_or_call_wrapper` chooses it
//! (../shared/spec/device-customop.md §8.1; docs/decisions.md D79): the current (local)
//! stack when the room left on it, from the stack pointer down to the local stack's limit,
//! holds STACK_SIZE bytes; otherwise an HBM block of STACK_SIZE bytes from the core's HBM
//! heap, aborting when there is none. The board names the limit and guards the page below
//! an HBM stack (the `neuron_host_stack` service). Host cores size and guard a stack of
//! their own as the device would (the `neuron_host_kernel_stack` service, D94); without
//! either service (tests) the kernel runs on the current stack.

#[cfg(all(not(target_os = "none"), feature = "archive"))]
use core::sync::atomic::{AtomicI32, Ordering};
use customop_abi::stack::ChargedPath;
#[cfg(all(not(target_os = "none"), feature = "archive"))]
use customop_abi::stack::CHARGED_SLOTS;

use crate::rule::fatal_with;
use crate::runtime;
use crate::runtime::platform;

pub use customop_abi::MAX_STACK_SIZE;
/// The machine's guard granularity: the page below an HBM stack faults when touched.
const PAGE: u32 = 4096;

#[cfg(all(target_arch = "xtensa", feature = "archive"))]
extern "C" {
    /// `f()` with the stack pointer at `top` (customop-device/xtensa/stack.c).
    fn __neuron_call_on_stack(f: unsafe extern "C" fn(), top: usize);
}

// Host cores: the x86-64 and i386 (device data model, D97) builds switch stacks.
#[cfg(all(
    not(target_os = "none"),
    any(target_arch = "x86_64", target_arch = "x86"),
    feature = "archive"
))]
extern "C" {
    /// `f()` with the stack pointer at `top` (16-aligned down), back on the caller's stack
    /// after; described to unwinders, so fault reports walk through it.
    fn __neuron_host_call_on_stack(f: unsafe extern "C" fn(), top: usize);
}

#[cfg(all(not(target_os = "none"), target_arch = "x86_64", feature = "archive"))]
core::arch::global_asm!(
    ".globl __neuron_host_call_on_stack",
    ".hidden __neuron_host_call_on_stack",
    ".type __neuron_host_call_on_stack,@function",
    "__neuron_host_call_on_stack:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbp, -16",
    "mov rbp, rsp",
    ".cfi_def_cfa_register rbp",
    "and rsi, -16",
    "mov rsp, rsi",
    "call rdi",
    "mov rsp, rbp",
    "pop rbp",
    ".cfi_def_cfa rsp, 8",
    "ret",
    ".cfi_endproc",
    ".size __neuron_host_call_on_stack, .-__neuron_host_call_on_stack",
);

// The same on i386 (cdecl: `f` and `top` on the stack).
#[cfg(all(not(target_os = "none"), target_arch = "x86", feature = "archive"))]
core::arch::global_asm!(
    ".globl __neuron_host_call_on_stack",
    ".hidden __neuron_host_call_on_stack",
    ".type __neuron_host_call_on_stack,@function",
    "__neuron_host_call_on_stack:",
    ".cfi_startproc",
    "push ebp",
    ".cfi_def_cfa_offset 8",
    ".cfi_offset ebp, -8",
    "mov ebp, esp",
    ".cfi_def_cfa_register ebp",
    "mov eax, [ebp + 8]",
    "mov ecx, [ebp + 12]",
    "and ecx, -16",
    "mov esp, ecx",
    "call eax",
    "mov esp, ebp",
    "pop ebp",
    ".cfi_def_cfa esp, 4",
    "ret",
    ".cfi_endproc",
    ".size __neuron_host_call_on_stack, .-__neuron_host_call_on_stack",
);

/// Host cores: the device build's stack depth (bytes of Xtensa frames) below the stack
/// switch, kept by op code a host build compiled with the device build's frames (the
/// GCC plugin's `device_stack` pass, D118): each function checks its deepest point against
/// [`__customop_stack_limit`] on entry, sets its callees' start before each call and puts
/// its caller's back on return. An `i32` in C (the same layout).
#[cfg(all(not(target_os = "none"), feature = "archive"))]
#[no_mangle]
pub static __customop_stack_depth: AtomicI32 = AtomicI32::new(0);

/// Host cores: the depth the running kernel may reach ([`customop_abi::stack::depth_limit`]
/// of its STACK_SIZE); no limit outside a launch (shape functions, registration).
#[cfg(all(not(target_os = "none"), feature = "archive"))]
#[no_mangle]
pub static __customop_stack_limit: AtomicI32 = AtomicI32::new(i32::MAX);

/// Whether the op library's code keeps [`__customop_stack_depth`] (its launchers say so:
/// `customop_launch` in a host build given the device build's frames).
#[cfg(all(not(target_os = "none"), feature = "archive"))]
static JUDGED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Called by the launchers of an op library whose code judges the stack by the device
/// build's frames, before the stack switch.
#[cfg(all(not(target_os = "none"), feature = "archive"))]
#[no_mangle]
pub extern "C" fn customop_stack_judged_by_device_frames() {
    JUDGED.store(true, Ordering::Relaxed);
}

/// An instrumented function's deepest point passes the limit: the device's stack
/// overflow (the host core reports it with the function's line, as Xtensa cores do).
#[cfg(all(not(target_os = "none"), feature = "archive"))]
#[no_mangle]
pub extern "C" fn __customop_device_stack_overflow() -> ! {
    platform::fault(customop_abi::stack::OVERFLOW_REPORT.as_bytes())
}

/// Host cores: per charged path ([`customop_abi::stack::CHARGED_PATHS`], D122, D132), the
/// depth a call into the runtime reaches if it takes that path, set by instrumented code
/// before such a call; `i32::MIN` when none is pending. An `int[5]` in C.
#[cfg(all(not(target_os = "none"), feature = "archive"))]
#[no_mangle]
pub static __customop_stack_charged: [AtomicI32; CHARGED_SLOTS] =
    [const { AtomicI32::new(i32::MIN) }; CHARGED_SLOTS];

/// On entry to a path the runtime charges when taken: the device's stack overflow when
/// the depth the caller's call set for it passes the limit. The value is used once (a
/// second conversion in the same call runs at the same depth).
#[cfg(all(not(target_os = "none"), feature = "archive"))]
pub fn charged_path(path: ChargedPath) {
    let need = __customop_stack_charged[path.slot].swap(i32::MIN, Ordering::Relaxed);
    if need > __customop_stack_limit.load(Ordering::Relaxed) {
        __customop_device_stack_overflow()
    }
}

/// Device builds keep no depth: the device's own stack decides.
#[cfg(not(all(not(target_os = "none"), feature = "archive")))]
#[inline(always)]
pub fn charged_path(_path: ChargedPath) {}

/// A block of instrumented code that goes deeper than its function's entry checked (code
/// inlined there) reaches `need` bytes: the device's stack overflow when past the limit.
#[cfg(all(not(target_os = "none"), feature = "archive"))]
#[no_mangle]
pub extern "C" fn __customop_device_stack_check(need: i32) {
    if need > __customop_stack_limit.load(Ordering::Relaxed) {
        __customop_device_stack_overflow()
    }
}

/// Runs `f` on a stack of at least `stack_size` bytes.
///
/// # Safety
/// `f` is a kernel wrapper (C contract).
pub unsafe fn run(f: unsafe extern "C" fn(), stack_size: u32) {
    #[cfg(all(
        not(target_os = "none"),
        any(target_arch = "x86_64", target_arch = "x86"),
        feature = "archive"
    ))]
    if let Some(kernel_stack) = platform::services().kernel_stack {
        // Said by this launch's launcher (a core may load another library later).
        let judged = JUDGED.swap(false, Ordering::Relaxed);
        let ask = if judged {
            stack_size | customop_abi::stack::JUDGED_BY_DEVICE_FRAMES
        } else {
            stack_size
        };
        // SAFETY: the host core's service (platform contract).
        let top = unsafe { kernel_stack(ask) } as usize;
        if top != 0 {
            if judged {
                let limit = customop_abi::stack::depth_limit(stack_size);
                __customop_stack_depth.store(0, Ordering::Relaxed);
                __customop_stack_limit.store(limit as i32, Ordering::Relaxed);
            }
            // SAFETY: `top` ends a writable stack the core keeps for its kernels; `f` per
            // the caller's contract.
            unsafe { __neuron_host_call_on_stack(f, top) };
            __customop_stack_limit.store(i32::MAX, Ordering::Relaxed);
            return;
        }
    }
    let Some(stack) = platform::services().stack else {
        // SAFETY: the caller's contract.
        return unsafe { f() };
    };
    let here = 0u8;
    let sp = core::hint::black_box(&here) as *const u8 as usize;
    // SAFETY: the board's service (platform contract): records the launch's stack.
    let limit = unsafe { stack(stack_size, 0, 0) } as usize;
    if sp.saturating_sub(limit) >= stack_size as usize {
        // SAFETY: as above.
        return unsafe { f() };
    }
    // SAFETY: as above.
    unsafe { on_hbm(f, stack_size, stack) }
}

/// `f` on an HBM stack: a block of a guard page and STACK_SIZE bytes (16-aligned), from the
/// core's HBM heap, page-aligned so the guard is exactly its first page.
unsafe fn on_hbm(f: unsafe extern "C" fn(), stack_size: u32, stack: platform::StackFn) {
    let size = customop_abi::stack::hbm_bytes(stack_size);
    let Some(total) = size.checked_add(PAGE) else {
        fatal_with(
            "stack_switch.cpp",
            format_args!("STACK_SIZE={stack_size} is more than a core can hold"),
        )
    };
    let Ok(block) = runtime::hbm_allocate(total, PAGE) else {
        fatal_with(
            "stack_switch.cpp",
            format_args!(
                "the HBM stack of STACK_SIZE={stack_size} bytes cannot be allocated from the \
                 core's HBM heap (the vendor's runtime aborts here)"
            ),
        )
    };
    let top = runtime::local_of_hbm_scratch(block + u64::from(total));
    // The device-time estimate prices a stack in HBM by its accesses (D121).
    runtime::access::hbm_stack(stack_size);
    #[cfg(all(target_arch = "xtensa", feature = "archive"))]
    runtime::access::hbm_stack_mark(runtime::local_of_hbm_scratch(block + u64::from(PAGE)), top);
    // SAFETY: the board's service, as in `run`: guards the block's first page.
    unsafe { stack(stack_size, block as u32, (block >> 32) as u32) };
    #[cfg(all(target_arch = "xtensa", feature = "archive"))]
    // SAFETY: `top` ends `size` writable bytes above the guard page (the block is this
    // launch's, shown by the pinned hbm_scratch window); `f` per the caller's contract.
    unsafe {
        __neuron_call_on_stack(f, top)
    };
    #[cfg(not(all(target_arch = "xtensa", feature = "archive")))]
    {
        let _ = top;
        // SAFETY: the caller's contract (no stack switch off the device).
        unsafe { f() };
    }
    // SAFETY: as above: the launch's stack is the local one again.
    unsafe { stack(stack_size, 0, 0) };
    if runtime::hbm_deallocate(block).is_err() {
        fatal_with(
            "stack_switch.cpp",
            format_args!("the HBM stack was freed during the launch"),
        );
    }
}
