//! The stack a kernel runs on in a host core: as much as a Pool core would give it, with a
//! guard page below, so a kernel the device's stack cannot hold is a reported stack
//! overflow here too, naming STACK_SIZE (D94, D118).
//!
//! The device's rule (the runtime's stack switch, D79): a kernel runs on the core's local
//! stack when the room left there holds its STACK_SIZE, else on an HBM block of STACK_SIZE
//! bytes. Host cores judge the same budget in one of two ways:
//! - **by the device build's frames** (D118), when the op library's code was compiled
//!   with them (its launchers say so): the code itself keeps the device's depth and
//!   reports the overflow where the device has it; the x86 stack here only needs room
//!   to spare ([`JUDGED_STACK`]);
//! - **by x86 frames** otherwise (no plugin headers, no Xtensa tools, the host's data
//!   model): [`LOCAL_ROOM`] bytes, or STACK_SIZE rounded to 16, plus
//!   [`HOST_FRAME_ALLOWANCE`] for x86's larger frames, the guard page below (D94). The
//!   edge is then judged, not exact.
//!
//! Code the device build does not run (glibc's `assert`, libstdc++'s exception unwinding,
//! host-only library functions) is not held to the device's budget: when it touches the
//! guard, the guard opens for the rest of the launch and the stack goes on into a host-only
//! reserve below it (with a guard of its own). The op library's code (the op's and the
//! runtime's, which the device runs too) touching it is the device's overflow.

use nrt_pool_engine::memory::PAGE;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// What a Pool core's 8 KiB local stack leaves from the runtime's stack switch down: the
/// largest STACK_SIZE that runs there.
pub const LOCAL_ROOM: usize = customop_abi::stack::LOCAL_ROOM as usize;
/// Bytes host cores add to the device's budget for x86 frames being larger than the
/// Xtensa build's around the same locals. Measured: a kernel with an N-byte local array
/// and the guide's accessor and `torch::full` overflows the local stack from N = 6100 on
/// Xtensa cores, and on host cores from N = 3750 without the allowance; with 1024 bytes
/// both run N = 6050 and overflow at N = 6100 (with STACK_SIZE=32768, an HBM stack, both
/// run N = 30000 and overflow at N = 31000).
pub const HOST_FRAME_ALLOWANCE: usize = 1024;
/// The x86 stack a kernel gets whose code judges its stack by the device build's frames:
/// far more than any device stack (at most 400 KB), since an x86 frame is allocated before
/// the function's own check runs, and a large one (a 1 MiB array) must reach that check.
/// Only the pages a kernel touches take memory.
pub const JUDGED_STACK: usize = 64 << 20;
/// The largest budget.
const MOST: usize = JUDGED_STACK;
const _: () =
    assert!(JUDGED_STACK > 4 * (customop_abi::MAX_STACK_SIZE as usize + HOST_FRAME_ALLOWANCE));
const GUARD: usize = PAGE as usize;
/// Stack for host-only code past the device's budget (glibc, libstdc++), below its guard.
const HOST_RESERVE: usize = 1 << 20;

/// The region's base (0: not yet mapped): a guard page, the host-only reserve, the
/// device's guard page, then room for the largest budget.
static BASE: AtomicUsize = AtomicUsize::new(0);
/// Whether host-only code opened the device's guard in this launch.
static OPENED: AtomicBool = AtomicBool::new(false);
/// The op library's loaded range (its code and the runtime's), [lo, hi).
static LIBRARY: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// The device's guard page: [lo, hi).
fn device_guard(base: usize) -> (usize, usize) {
    let lo = base + GUARD + HOST_RESERVE;
    (lo, lo + GUARD)
}

/// Notes the loaded range of the op library whose load base is `base` (from its program
/// headers), so a fault can tell the op's code from the host's libraries.
pub(super) fn note_library(base: usize) {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        want: *mut c_void,
    ) -> i32 {
        // SAFETY: the loader hands each object's info; `want` is the base asked for.
        let (info, want) = unsafe { (&*info, *want.cast::<usize>()) };
        if info.dlpi_addr as usize != want || info.dlpi_phdr.is_null() {
            return 0;
        }
        let (mut lo, mut hi) = (usize::MAX, 0usize);
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: `dlpi_phnum` program headers follow `dlpi_phdr`.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_LOAD {
                lo = lo.min(ph.p_vaddr as usize);
                hi = hi.max((ph.p_vaddr + ph.p_memsz) as usize);
            }
        }
        if lo < hi {
            LIBRARY[0].store(want + lo, Ordering::Relaxed);
            LIBRARY[1].store(want + hi, Ordering::Relaxed);
        }
        1
    }
    let mut want = base;
    // SAFETY: the callback reads only what the loader passes and the base given here.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut want as *mut usize).cast()) };
}

/// Whether `pc` lies in the op library (code the device build runs too).
pub(super) fn in_library(pc: u64) -> bool {
    let (lo, hi) = (
        LIBRARY[0].load(Ordering::Relaxed),
        LIBRARY[1].load(Ordering::Relaxed),
    );
    lo < hi && (pc as usize) >= lo && (pc as usize) < hi
}
/// The running kernel's STACK_SIZE (0: none yet).
static STACK_SIZE: AtomicU32 = AtomicU32::new(0);
/// Whether the running kernel's code judges its stack by the device build's frames.
static JUDGED: AtomicBool = AtomicBool::new(false);

/// The bytes a kernel of `stack_size` gets: the local room when STACK_SIZE fits there,
/// else STACK_SIZE (16-aligned); and the host's allowance.
pub fn budget(stack_size: u32) -> usize {
    device_bytes(stack_size) + HOST_FRAME_ALLOWANCE
}

/// The device's bytes for a kernel of `stack_size`: the local room, or its HBM block.
fn device_bytes(stack_size: u32) -> usize {
    if stack_size as usize <= LOCAL_ROOM {
        LOCAL_ROOM
    } else {
        customop_abi::stack::hbm_bytes(stack_size) as usize
    }
}

/// The region, mapped on first use: a guard page, then room for the largest budget.
fn region() -> Option<usize> {
    let at = BASE.load(Ordering::Relaxed);
    if at != 0 {
        return Some(at);
    }
    let len = GUARD + HOST_RESERVE + GUARD + MOST;
    // SAFETY: a fresh private mapping nothing else uses; its first page and the device's
    // guard are then made inaccessible.
    let p = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return None;
        }
        let (g, _) = device_guard(p as usize);
        if libc::mprotect(p, GUARD, libc::PROT_NONE) != 0
            || libc::mprotect(g as *mut c_void, GUARD, libc::PROT_NONE) != 0
        {
            libc::munmap(p, len);
            return None;
        }
        p as usize
    };
    BASE.store(p, Ordering::Relaxed);
    Some(p)
}

/// `neuron_host_kernel_stack`: the top of the stack a kernel of STACK_SIZE `stack_size`
/// runs on (NULL: none could be mapped; the kernel then runs on the core's own). The
/// runtime sets [`customop_abi::stack::JUDGED_BY_DEVICE_FRAMES`] in `stack_size` when the
/// op library's code judges the stack by the device build's frames.
pub(super) unsafe extern "C" fn svc_kernel_stack(asked: u32) -> *mut c_void {
    let judged = asked & customop_abi::stack::JUDGED_BY_DEVICE_FRAMES != 0;
    let stack_size = asked & !customop_abi::stack::JUDGED_BY_DEVICE_FRAMES;
    let Some(base) = region() else {
        return std::ptr::null_mut();
    };
    let (g, hi) = device_guard(base);
    if OPENED.swap(false, Ordering::Relaxed) {
        // SAFETY: the device's guard page of this core's own mapping.
        if unsafe { libc::mprotect(g as *mut c_void, GUARD, libc::PROT_NONE) } != 0 {
            return std::ptr::null_mut();
        }
    }
    STACK_SIZE.store(stack_size, Ordering::Relaxed);
    JUDGED.store(judged, Ordering::Relaxed);
    let bytes = if judged {
        JUDGED_STACK
    } else {
        budget(stack_size)
    };
    (hi + bytes) as *mut c_void
}

/// The report when host-only code outgrows the reserve below the device's budget too.
pub(super) const HOST_RESERVE_OVERFLOW: &str = "stack overflow: host library code (glibc, \
    libstdc++) called by the kernel went past the device's stack and the host core's 1 MiB \
    reserve below it (D94)";
const _: () = assert!(
    HOST_RESERVE == 1 << 20,
    "HOST_RESERVE_OVERFLOW names the size"
);

/// What a fault at `addr` by the instruction at `pc` means for the kernel's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Touch {
    /// Not the kernel stack's guards.
    Elsewhere,
    /// The op's code went past the device's budget: the device's stack overflow.
    DeviceOverflow,
    /// Host-only code went past it: the guard is opened and the instruction may go on.
    Opened,
    /// Past the host-only reserve too.
    HostOverflow,
}

/// Classifies (and, for host-only code, opens) a touch of the kernel stack's guards. Only
/// atomics and mprotect: a signal handler calls it.
pub(super) fn touch(addr: u64, pc: u64) -> Touch {
    let base = BASE.load(Ordering::Relaxed);
    if base == 0 {
        return Touch::Elsewhere;
    }
    let (g, hi) = device_guard(base);
    let addr = addr as usize;
    if addr >= base && addr < base + GUARD {
        return Touch::HostOverflow;
    }
    if addr < g || addr >= hi {
        return Touch::Elsewhere;
    }
    if in_library(pc) {
        return Touch::DeviceOverflow;
    }
    // SAFETY: the device's guard page of this core's own mapping (async-signal-safe).
    if unsafe { libc::mprotect(g as *mut c_void, GUARD, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
        return Touch::DeviceOverflow;
    }
    OPENED.store(true, Ordering::Relaxed);
    Touch::Opened
}

/// How an overflow of the kernel's stack was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// The op code's own count of the device build's frames passed the device's limit.
    DeviceFrames,
    /// The guard page of the running kernel's stack was touched by the op's code.
    Guard,
}

/// The report of an overflow of the kernel's stack, written into `buf` (no allocation: a
/// signal handler calls this): what was outgrown (the fault's kind says "stack overflow").
pub(super) fn overflow_message(buf: &mut [u8], found: Found) -> &[u8] {
    struct W<'a>(&'a mut [u8], usize);
    impl std::fmt::Write for W<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let n = s.len().min(self.0.len() - self.1);
            self.0[self.1..self.1 + n].copy_from_slice(&s.as_bytes()[..n]);
            self.1 += n;
            Ok(())
        }
    }
    let size = STACK_SIZE.load(Ordering::Relaxed);
    let judged = JUDGED.load(Ordering::Relaxed);
    let mut w = W(buf, 0);
    let _ = overflow_text(&mut w, size, found, judged);
    let n = w.1;
    &buf[..n]
}

fn overflow_text(
    w: &mut impl std::fmt::Write,
    size: u32,
    found: Found,
    judged: bool,
) -> std::fmt::Result {
    if (size as usize) <= LOCAL_ROOM {
        write!(
            w,
            "more than a Pool core's 8 KiB of local stack leaves a kernel \
             ({LOCAL_ROOM} bytes; STACK_SIZE={size} fitted there)"
        )?;
    } else {
        write!(w, "more than STACK_SIZE={size} bytes (its HBM stack)")?;
    }
    let how = match (found, judged) {
        (Found::DeviceFrames, _) => "by the device build's frames (D118)",
        // x86 frames past JUDGED_STACK: far past any device stack, so the device's overflow
        // too, found before the code's own check could run.
        (Found::Guard, true) => {
            "by x86 frames past 64 MiB, before the device build's frames could be counted (D118)"
        }
        (Found::Guard, false) => "by x86 frames (D94)",
    };
    write!(
        w,
        ", as host cores judge the device's stack {how}; build with -DSTACK_SIZE=N for a \
         larger stack (N at most {})",
        customop_abi::MAX_STACK_SIZE
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_the_local_room_or_stack_size() {
        let more = HOST_FRAME_ALLOWANCE;
        assert_eq!(budget(4196), LOCAL_ROOM + more);
        assert_eq!(budget(LOCAL_ROOM as u32), LOCAL_ROOM + more);
        assert_eq!(budget(LOCAL_ROOM as u32 + 1), LOCAL_ROOM + 16 + more);
        assert_eq!(budget(32768), 32768 + more);
        assert_eq!(budget(20001), 20016 + more);
        assert!(budget(customop_abi::MAX_STACK_SIZE) <= MOST);
        assert_eq!(JUDGED_STACK >> 20, 64, "the report names the size");
    }

    #[test]
    fn the_report_names_stack_size_how_it_was_judged_and_the_way_out() {
        let text = |size, found, judged| {
            let mut m = String::new();
            overflow_text(&mut m, size, found, judged).unwrap();
            assert!(m.len() < 320, "the signal handler's buffer holds it: {m}");
            m
        };
        let m = text(4196, Found::DeviceFrames, true);
        assert!(m.starts_with("more than a Pool core's 8 KiB"), "{m}");
        assert!(
            m.contains("STACK_SIZE=4196 fitted there")
                && m.contains("by the device build's frames (D118)")
                && m.contains("-DSTACK_SIZE=N"),
            "{m}"
        );
        let m = text(32768, Found::Guard, false);
        assert!(
            m.contains("more than STACK_SIZE=32768 bytes (its HBM stack)")
                && m.contains("by x86 frames (D94)"),
            "{m}"
        );
        let m = text(4196, Found::Guard, true);
        assert!(m.contains("x86 frames past 64 MiB"), "{m}");
    }
}
