//! The launch's tensor accesses on this core ([`customop_abi::access`]): counted where the
//! runtime serves them, zeroed when a launch starts, read by the engine after a profiled
//! launch on Xtensa cores to estimate the device's time (D100).

use customop_abi::access::{AccessCounts, CopyLog, Logged, COPY_OUT};

use super::global::Global;

/// Exported under [`customop_abi::access::ACCESS_COUNTS_SYMBOL`], so the engine finds it in
/// a core's image.
#[export_name = "customop_access_counts"]
pub static COUNTS: Global<AccessCounts> = Global::new(AccessCounts {
    element: 0,
    copies_in: 0,
    copies_out: 0,
    hbm_stack: 0,
    bytes_in: 0,
    bytes_out: 0,
});

/// The launch's copies, on Xtensa cores: the link script places the log past the image,
/// in the last bytes of the core's 2 MiB slot (`customop_copy_log` in pool-core.ld), so it
/// takes none of the image's loaded bytes, which the vendor's loader limits to 64 KiB
/// (D120). Off the device there is no log: host cores' traces do not read one.
#[cfg(all(target_arch = "xtensa", feature = "archive"))]
fn with_log<R>(f: impl FnOnce(&mut CopyLog) -> R) -> Option<R> {
    extern "C" {
        /// xtensa/copy_log.c: the link script's `customop_copy_log`, or null where the
        /// link does not place it (a weak reference: the vendor's link line links).
        fn customop_copy_log_address() -> *mut CopyLog;
    }
    // SAFETY: a plain C function of the archive.
    let log = unsafe { customop_copy_log_address() };
    // SAFETY: non-null, the link script reserves the log's bytes for this core's runtime
    // alone (its image slot's end, past what the image loads; shown by the pinned
    // hbm_scratch window), and one thread runs per core; `f` does not re-enter.
    (!log.is_null()).then(|| f(unsafe { &mut *log }))
}

#[cfg(not(all(target_arch = "xtensa", feature = "archive")))]
fn with_log<R>(_f: impl FnOnce(&mut CopyLog) -> R) -> Option<R> {
    None
}

pub fn reset() {
    COUNTS.with(|c| *c = AccessCounts::default());
    with_log(|l| {
        l.copies = 0;
        l.used = 0;
    });
}

/// Logs one copy: a run of like copies is one entry (D120).
fn log_copy(bytes: u32, flags: u32) {
    let elements = COUNTS.with(|c| c.element);
    if with_log(|l| l.extend(bytes, flags, elements)) == Some(Logged::New) {
        copy_mark(bytes, flags, elements);
    }
}

/// Starts a log entry. Its own function under a fixed name
/// ([`customop_abi::access::COPY_MARK_SYMBOL`]), never inlined: the profile plugin stamps
/// each entry to it with the instructions executed so far (D120).
#[export_name = "customop_copy_mark"]
#[inline(never)]
pub extern "C" fn copy_mark(bytes: u32, flags: u32, elements_before: u32) {
    with_log(|l| l.start(bytes, flags, elements_before));
}

/// The kernel's stack is an HBM block of `stack_size` bytes this launch.
pub fn hbm_stack(stack_size: u32) {
    COUNTS.with(|c| c.hbm_stack = stack_size);
}

/// Shows where the kernel's HBM stack lies, `[lo, hi)` in core-local addresses, to the
/// profile plugin, which counts the kernel's loads and stores there (D121): a function of
/// its own under a fixed name ([`customop_abi::access::HBM_STACK_MARK_SYMBOL`]), never
/// inlined, whose first two memory accesses are a load of the stack's lowest byte, then of
/// its highest (the plugin reads their addresses: it cannot read registers).
#[export_name = "customop_hbm_stack_mark"]
#[inline(never)]
pub extern "C" fn hbm_stack_mark(lo: usize, hi: usize) {
    // No branch here: the plugin watches this function's accesses in order.
    // SAFETY: the caller's [lo, hi) is the launch's HBM stack, not empty, allocated and
    // shown through the pinned hbm_scratch window (stack.rs); reads only.
    unsafe {
        core::ptr::read_volatile(lo as *const u8);
        core::ptr::read_volatile(hi.wrapping_sub(1) as *const u8);
    }
}

/// One element read or written through the translation windows.
pub fn element() {
    COUNTS.with(|c| c.element = c.element.wrapping_add(1));
}

/// One copy of `n` bytes from a tensor into core memory.
pub fn copy_in(n: u32) {
    COUNTS.with(|c| {
        c.copies_in = c.copies_in.wrapping_add(1);
        c.bytes_in = c.bytes_in.wrapping_add(u64::from(n));
    });
    log_copy(n, 0);
    report_copy(n, 0);
}

/// One copy of `n` bytes from core memory into a tensor.
pub fn copy_out(n: u32) {
    COUNTS.with(|c| {
        c.copies_out = c.copies_out.wrapping_add(1);
        c.bytes_out = c.bytes_out.wrapping_add(u64::from(n));
    });
    log_copy(n, COPY_OUT);
    report_copy(n, COPY_OUT);
}

/// The copy [`copy_in`] or [`copy_out`] announced has been made.
pub fn copied(n: u32, out: bool) {
    report_copy(
        n,
        if out { COPY_OUT } else { 0 } | customop_abi::control::COPY_DONE,
    );
}

/// Host cores: tells the core a copy begins or ended, for a profiled launch's measured
/// timeline (D124); the device has no such service (its copies are stamped by the profile
/// plugin, D120).
fn report_copy(bytes: u32, flags: u32) {
    #[cfg(not(target_os = "none"))]
    if let Some(f) = super::platform::services().copy {
        let elements = COUNTS.with(|c| c.element);
        // SAFETY: the service has the documented signature (`customop_abi::handoff::CopyFn`).
        unsafe { f(bytes, flags, elements) };
    }
    #[cfg(target_os = "none")]
    let _ = (bytes, flags);
}
