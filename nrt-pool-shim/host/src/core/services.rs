//! The host services a core offers the device runtime (resolved through the handoff's
//! `get_libc_fn`), the handoff's scratch and queue callbacks, and the registration
//! callbacks `register_funcs` calls.

use super::{
    collector, control, core, drain_early_stdio, finish_stdio, memory, notify_exit, record_frames,
    Service, WrapperFn, CORE_COUNT, FAULT_EXIT, PHASE, PROBE,
};
use crate::control::{FaultKind, PHASE_KERNEL};
use nrt_pool_engine::memory::PAGE;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub(super) unsafe extern "C" fn on_register_name(_handle: *mut c_void, name: *const c_char) -> u32 {
    if let (Some(c), false) = (collector(), name.is_null()) {
        if c.probe {
            // SAFETY: a C string from the library's table.
            let _ = control().push_name(unsafe { CStr::from_ptr(name) }.to_bytes());
        }
    }
    0
}

pub(super) unsafe extern "C" fn on_register_func(
    _handle: *mut c_void,
    name: *const c_char,
    f: Option<WrapperFn>,
) -> u32 {
    let Some(c) = collector() else { return 1 };
    let name = if name.is_null() {
        CString::default()
    } else {
        // SAFETY: a C string from the library's table.
        unsafe { CStr::from_ptr(name) }.into()
    };
    c.funcs.push((name, f));
    0
}

// ---- the services get_libc_fn resolves ----

pub(super) unsafe extern "C" fn svc_map(soc: u64, len: u64) -> *mut c_void {
    memory()
        .host(soc, len)
        .map_or(std::ptr::null_mut(), |p| p.cast())
}

/// Bytes a dynamic translation window spans, and the windows a core maps on their own.
const WINDOW_SPAN: usize = 16 << 20;
const WINDOWS: usize = 8;
/// The reserved address range the windows are mapped in (0: not yet reserved), and the SoC
/// base each shows.
static WINDOW_AREA: AtomicUsize = AtomicUsize::new(0);
static WINDOW_SOC: [AtomicU64; WINDOWS] = [const { AtomicU64::new(u64::MAX) }; WINDOWS];
static WINDOW_LEN: [AtomicU64; WINDOWS] = [const { AtomicU64::new(0) }; WINDOWS];

/// The windows mapped now: (local address, SoC address, bytes).
pub(super) fn windows() -> impl Iterator<Item = (usize, u64, u64)> {
    let area = WINDOW_AREA.load(Ordering::Relaxed);
    (0..WINDOWS).filter_map(move |r| {
        let soc = WINDOW_SOC[r].load(Ordering::Relaxed);
        (area != 0 && soc != u64::MAX).then(|| {
            (
                area + r * WINDOW_SPAN,
                soc,
                WINDOW_LEN[r].load(Ordering::Relaxed),
            )
        })
    })
}

/// The windows' address range, reserved (no access) on first use, 2 MiB aligned so huge
/// pages can back the windows.
fn window_area() -> Option<usize> {
    let at = WINDOW_AREA.load(Ordering::Relaxed);
    if at != 0 {
        return Some(at);
    }
    let len = WINDOWS * WINDOW_SPAN + (2 << 20);
    // SAFETY: a fresh private reservation, no access; nothing else maps there.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let at = (p as usize).next_multiple_of(2 << 20);
    WINDOW_AREA.store(at, Ordering::Relaxed);
    Some(at)
}

/// `neuron_host_window`: maps `len` bytes of device memory from SoC `soc` as window
/// `record`, replacing what the window showed (a pointer into it from before now reads the
/// new bytes, as on the device); the launch's guard pages in it are protected as in the
/// core's view of device memory. NULL when it cannot (the runtime then uses the shared view).
pub(super) unsafe extern "C" fn svc_window(record: u32, soc: u64, len: u64) -> *mut c_void {
    let r = record as usize;
    if r >= WINDOWS || len == 0 || len as usize > WINDOW_SPAN {
        return std::ptr::null_mut();
    }
    let (Some(area), Some(off)) = (window_area(), memory().window_offset(soc, len)) else {
        return std::ptr::null_mut();
    };
    let at = area + r * WINDOW_SPAN;
    let shown = WINDOW_SOC[r].load(Ordering::Relaxed);
    if shown != u64::MAX {
        // What a checked kernel touched through the window it replaces.
        super::watch::window_replaced(at, shown, WINDOW_LEN[r].load(Ordering::Relaxed));
    }
    // SAFETY: replaces window `r`'s part of this process's reserved range with a shared
    // mapping of the device memory file at the window's offset (inside the file: checked).
    let p = unsafe {
        // (mmap64: a 32-bit core's offsets pass 2 GiB in a large device memory.)
        libc::mmap64(
            at as *mut c_void,
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            std::os::fd::AsRawFd::as_raw_fd(memory().file()),
            off as libc::off64_t,
        )
    };
    if p == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    WINDOW_SOC[r].store(soc, Ordering::Relaxed);
    WINDOW_LEN[r].store(len, Ordering::Relaxed);
    for g in control().guards() {
        if g >= soc && g - soc < len {
            // SAFETY: a page of the window just mapped.
            unsafe {
                libc::mprotect(
                    (at + (g - soc) as usize) as *mut c_void,
                    PAGE as usize,
                    libc::PROT_NONE,
                )
            };
        }
    }
    p
}

/// The SoC address a local address inside a separately mapped window shows (fault
/// reports name device memory by SoC address).
pub(super) fn window_soc(local: u64) -> Option<u64> {
    let area = WINDOW_AREA.load(Ordering::Relaxed) as u64;
    if area == 0 || local < area || local >= area + (WINDOWS * WINDOW_SPAN) as u64 {
        return None;
    }
    let r = ((local - area) / WINDOW_SPAN as u64) as usize;
    let base = WINDOW_SOC[r].load(Ordering::Relaxed);
    (base != u64::MAX).then(|| base + (local - area) % WINDOW_SPAN as u64)
}

pub(super) unsafe extern "C" fn svc_cpu_id() -> u32 {
    core() as u32
}

pub(super) unsafe extern "C" fn svc_cpu_count() -> u32 {
    CORE_COUNT.load(Ordering::Relaxed) as u32
}

pub(super) unsafe extern "C" fn svc_dma(
    local: *mut c_void,
    soc: u64,
    to_local: bool,
    n: u32,
) -> i32 {
    let Some(p) = memory().host(soc, u64::from(n)) else {
        return -1;
    };
    // SAFETY: `p` spans n bytes of the mapping (guard bytes fault like the hardware would);
    // `local` is the kernel's buffer of n bytes (service contract).
    unsafe {
        if to_local {
            std::ptr::copy(p, local.cast(), n as usize);
        } else {
            std::ptr::copy(local.cast::<u8>(), p, n as usize);
        }
    }
    0
}

pub(super) unsafe extern "C" fn svc_fault(msg: *const c_char, len: usize) {
    // SAFETY: the runtime passes `len` readable bytes.
    let m = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) };
    drain_early_stdio();
    record_frames(0);
    // An access the device faults on is a memory fault there (Xtensa cores report it so);
    // the device build's frames outgrowing the device's stack is its stack overflow (D118).
    let mut buf = [0u8; 320];
    let (kind, m) = if m.starts_with(customop_abi::UNALIGNED_REPORT.as_bytes()) {
        (FaultKind::Memory, m)
    } else if m == customop_abi::stack::OVERFLOW_REPORT.as_bytes() {
        use super::kernel_stack::{overflow_message, Found};
        (
            FaultKind::StackOverflow,
            overflow_message(&mut buf, Found::DeviceFrames),
        )
    } else {
        (FaultKind::Fatal, m)
    };
    control().set_fault(core(), kind, 0, 0, m);
    finish_stdio();
    notify_exit();
    // SAFETY: ends this core's process, as a fault halts the core.
    unsafe { libc::_exit(FAULT_EXIT) }
}

pub(super) unsafe extern "C" fn svc_write(fd: i32, buf: *const c_void, len: usize) -> isize {
    if len == 0 || !(1..=2).contains(&fd) {
        return if len == 0 { 0 } else { -1 };
    }
    // printf reaches the host from core 0, as the firmware's stdio does (from every core
    // when the launch asks: --all-cores-stdio); start code's once.
    let ctl = control();
    if ctl.stdio_from(core())
        && (PHASE.load(Ordering::Relaxed) == PHASE_KERNEL || PROBE.load(Ordering::Relaxed))
    {
        // SAFETY: the runtime passes `len` readable bytes.
        let b = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
        ctl.stdio_append(fd as u8, core() as u8, b);
    }
    len as isize
}

pub(super) unsafe extern "C" fn get_libc_fn(name: *const c_char) -> *mut c_void {
    // The runtime is taking its services: what it printed before them comes first.
    drain_early_stdio();
    // SAFETY: the runtime asks with NUL-terminated names.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    // Host cores offer every service but the board's stack: a kernel's stack is theirs,
    // sized as the device's (`kernel_stack`, D94).
    match Service::from_name(name) {
        Some(Service::Map) => svc_map as *mut c_void,
        Some(Service::CpuId) => svc_cpu_id as *mut c_void,
        Some(Service::CpuCount) => svc_cpu_count as *mut c_void,
        Some(Service::Dma) => svc_dma as *mut c_void,
        Some(Service::Fault) => svc_fault as *mut c_void,
        Some(Service::Write) => svc_write as *mut c_void,
        Some(Service::Window) => svc_window as *mut c_void,
        Some(Service::KernelStack) => super::kernel_stack::svc_kernel_stack as *mut c_void,
        Some(Service::Copy) => super::timeline::svc_copy as *mut c_void,
        Some(Service::Stack) | None => std::ptr::null_mut(),
    }
}

pub(super) unsafe extern "C" fn get_data_scratch(
    addr: *mut *mut c_void,
    size: *mut usize,
) -> *mut c_void {
    let (p, n) = memory().scratch_host(core());
    // SAFETY: out pointers from the runtime's start code.
    unsafe {
        *addr = p.cast();
        *size = n;
    }
    std::ptr::null_mut()
}

pub(super) unsafe extern "C" fn get_hbm_scratch(addr: *mut u64, size: *mut usize) -> *mut c_void {
    let (a, n) = memory().hbm_scratch(core());
    // SAFETY: as above.
    unsafe {
        *addr = a;
        *size = n as usize;
    }
    std::ptr::null_mut()
}

pub(super) unsafe extern "C" fn get_dma_queue(m2s: *mut u32, s2m: *mut u32) -> *mut c_void {
    // SAFETY: as above. Queue 16 is the custom-op bundle; offsets per core.
    unsafe {
        *m2s = (core() as u32) * 0x100;
        *s2m = (core() as u32) * 0x100 + 0x80;
    }
    std::ptr::null_mut()
}
