//! A core's fault handlers: what a signal means, where it hit, and its report in the
//! control block.

use super::{
    control, core, drain_early_stdio, engine_address, is_stack_overflow, memory, note_stack,
    notify_exit, signal_cause, FAULT_EXIT, HOST_CORE_STACK, MODULE_BASE, PHASE,
};
use crate::control::{FaultKind, ACCESS_READ, ACCESS_UNKNOWN, ACCESS_WRITE, MAX_FRAMES};
use std::ffi::c_void;
use std::sync::atomic::Ordering;

// ---- faults ----

/// The faulting instruction and, for a memory fault, whether it wrote, from the signal's
/// machine context.
pub(super) fn fault_context(uctx: *mut c_void) -> (u64, u32) {
    if uctx.is_null() {
        return (0, ACCESS_UNKNOWN);
    }
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        // SAFETY: SA_SIGINFO handlers get the interrupted context as a ucontext_t.
        let g = unsafe { &(*uctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
        let pc = g[libc::REG_RIP as usize] as u64;
        // Page-fault error code: bit 1 set for a write.
        let access = if g[libc::REG_ERR as usize] & 2 != 0 {
            ACCESS_WRITE
        } else {
            ACCESS_READ
        };
        (pc, access)
    }
    #[cfg(all(target_arch = "x86", target_os = "linux"))]
    {
        // SAFETY: as above (the i386 core runner, D97).
        let g = unsafe { &(*uctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
        let pc = u64::from(g[libc::REG_EIP as usize] as u32);
        let access = if g[libc::REG_ERR as usize] & 2 != 0 {
            ACCESS_WRITE
        } else {
            ACCESS_READ
        };
        (pc, access)
    }
    #[cfg(all(target_arch = "aarch64", target_os = "linux"))]
    {
        // SAFETY: as above.
        let pc = unsafe { (*uctx.cast::<libc::ucontext_t>()).uc_mcontext.pc };
        (pc, ACCESS_UNKNOWN)
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", target_os = "linux"),
        all(target_arch = "x86", target_os = "linux"),
        all(target_arch = "aarch64", target_os = "linux")
    )))]
    {
        (0, ACCESS_UNKNOWN)
    }
}

pub(super) extern "C" fn on_signal(sig: i32, info: *mut libc::siginfo_t, uctx: *mut c_void) {
    // SAFETY: the kernel hands SA_SIGINFO handlers a valid siginfo.
    let (addr, code) = if info.is_null() {
        (0, 0)
    } else {
        unsafe { ((*info).si_addr() as u64, (*info).si_code) }
    };
    // INT_MIN / -1: the device's quotient, and the kernel goes on (D95).
    if sig == libc::SIGFPE && super::divide::device_overflow(uctx) {
        install_handlers();
        return;
    }
    use super::kernel_stack::Touch;
    let touch = if sig == libc::SIGSEGV {
        super::kernel_stack::touch(addr, fault_context(uctx).0)
    } else {
        Touch::Elsewhere
    };
    if touch == Touch::Opened {
        // Host-only code past the device's budget: the instruction goes on (the handler is
        // set again, as it resets on delivery).
        install_handlers();
        return;
    }
    let kernel_overflow = touch == Touch::DeviceOverflow;
    let overflow = kernel_overflow
        || touch == Touch::HostOverflow
        || (sig == libc::SIGSEGV && is_stack_overflow(addr));
    let kind = match sig {
        _ if overflow => FaultKind::StackOverflow,
        // The host stops a core that overstays the launch's deadline with this first, so
        // the report says where it was (then it kills it).
        STOP_AT_DEADLINE => FaultKind::Timeout,
        libc::SIGSEGV | libc::SIGBUS => FaultKind::Memory,
        libc::SIGABRT => FaultKind::Abort,
        _ => FaultKind::Trap,
    };
    let addr = if matches!(kind, FaultKind::Abort | FaultKind::Timeout) {
        0
    } else {
        addr
    };
    // A fault in a separately mapped window (a checked launch) is reported at the host
    // address of the same SoC byte in the core's view of device memory, where the engine
    // names it. (Atomics and arithmetic only: async-signal-safe.)
    let addr = super::services::window_soc(addr)
        .and_then(|soc| memory().host(soc, 1))
        .map_or(addr, |p| p as u64);
    let (pc, access) = fault_context(uctx);
    record_frames(pc);
    let ctl = control();
    let r = ctl.core(core());
    r.pc.store(pc, Ordering::Relaxed);
    r.module_base
        .store(MODULE_BASE.load(Ordering::Relaxed), Ordering::Relaxed);
    r.access.store(
        if kind == FaultKind::Memory {
            access
        } else {
            ACCESS_UNKNOWN
        },
        Ordering::Relaxed,
    );
    r.phase
        .store(PHASE.load(Ordering::Relaxed), Ordering::Relaxed);
    let mut buf = [0u8; 320];
    let why: &[u8] = if kernel_overflow {
        super::kernel_stack::overflow_message(&mut buf, super::kernel_stack::Found::Guard)
    } else if touch == Touch::HostOverflow {
        super::kernel_stack::HOST_RESERVE_OVERFLOW.as_bytes()
    } else if overflow {
        HOST_STACK_OVERFLOW.as_bytes()
    } else if kind == FaultKind::Timeout {
        b"still running at the launch's deadline; stopped"
    } else {
        signal_cause(sig, code).as_bytes()
    };
    ctl.set_fault(core(), kind, sig as u32, engine_address(addr), why);
    drain_early_stdio();
    notify_exit();
    // SAFETY: async-signal-safe exit of this core's process.
    unsafe { libc::_exit(FAULT_EXIT) }
}

/// The signal the host sends a core that overstays a launch's deadline: the core records
/// its call stack and ends (the host kills it if it does not within a moment).
pub const STOP_AT_DEADLINE: i32 = libc::SIGUSR2;

pub(super) const HOST_STACK_OVERFLOW: &str =
    "stack overflow: more than the host core's 8 MiB of stack \
     (a Pool core has far less: run the device image, --isa xtensa, to check the kernel \
     against STACK_SIZE; D79)";
const _: () = assert!(
    HOST_CORE_STACK == 8 << 20,
    "HOST_STACK_OVERFLOW names the size"
);

/// Records this core's call stack for the host's report: the faulting instruction `pc`
/// (0 when no signal says it), then its callers' return addresses, as glibc's unwinder
/// finds them through the signal frame. The host keeps those inside the op library.
pub(super) fn record_frames(pc: u64) {
    // The kernel ends here: no sample interrupts the unwinder (D124).
    super::REPORTING.store(true, Ordering::Relaxed);
    const ROOM: usize = MAX_FRAMES + 8;
    let mut buf = [std::ptr::null_mut::<c_void>(); ROOM];
    // SAFETY: backtrace writes at most ROOM entries into buf. Its unwinder was loaded at
    // the core's start (install_fault_handlers), so nothing is loaded here.
    let n = unsafe { libc::backtrace(buf.as_mut_ptr(), ROOM as i32) }.clamp(0, ROOM as i32);
    let found = &buf[..n as usize];
    let mut addrs = [0u64; ROOM];
    let mut k = 0;
    // After a signal the interrupted instruction follows the handler's own frames; the
    // ones before it are dropped (or, when the unwinder did not reach it, all but it).
    let from = match found.iter().position(|&a| a as u64 == pc) {
        Some(i) if pc != 0 => i,
        _ if pc != 0 => {
            addrs[0] = pc;
            k = 1;
            found.len()
        }
        _ => 0,
    };
    for &a in &found[from..] {
        if k == MAX_FRAMES {
            break;
        }
        addrs[k] = a as u64;
        k += 1;
    }
    let ctl = control();
    ctl.set_frames(core(), &addrs[..k]);
    ctl.core(core())
        .module_base
        .store(MODULE_BASE.load(Ordering::Relaxed), Ordering::Relaxed);
}

pub(super) fn install_fault_handlers() {
    note_stack();
    // The first backtrace loads glibc's unwinder (libgcc_s), which a signal handler must not.
    let mut warm = [std::ptr::null_mut::<c_void>(); 2];
    // SAFETY: writes at most 2 entries.
    unsafe { libc::backtrace(warm.as_mut_ptr(), 2) };
    const ALT_STACK: usize = 64 << 10;
    // SAFETY: a leaked buffer for the alternate stack (the process ends with the kernel).
    unsafe {
        let stack = Box::leak(vec![0u8; ALT_STACK].into_boxed_slice());
        let ss = libc::stack_t {
            ss_sp: stack.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: ALT_STACK,
        };
        libc::sigaltstack(&ss, std::ptr::null_mut());
    }
    install_handlers();
}

/// Sets this core's handler for the fault signals (each resets on delivery).
fn install_handlers() {
    // SAFETY: plain sigaction calls with a handler that only does async-signal-safe work.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction =
            on_signal as extern "C" fn(i32, *mut libc::siginfo_t, *mut c_void) as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESETHAND;
        libc::sigemptyset(&mut sa.sa_mask);
        // A profiled kernel's sample timer waits while a fault is reported (D124).
        libc::sigaddset(&mut sa.sa_mask, libc::SIGPROF);
        for s in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGABRT,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            STOP_AT_DEADLINE,
        ] {
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
    }
}
