//! What differs between the device and the host: how a translation window is programmed,
//! where the core id comes from, who does DMA and where fatal errors go.
//!
//! - Device (`target_os = "none"`): MEM_WINDOWn_LO/HI registers, the PRID special register,
//!   no DMA engine driver (docs/decisions.md, "DMA on the device").
//! - Host: services a Pool emulator resolves through the handoff block's `get_libc_fn`
//!   (`void *get_libc_fn(const char *name)`), or that tests install directly.

use core::ffi::{c_char, c_void};

use crate::runtime::global::Global;

pub use customop_abi::handoff::{
    CopyFn, CpuCountFn, CpuIdFn, DmaFn, FaultFn, KernelStackFn, MapFn, StackFn, WindowFn, WriteFn,
    SERVICE_NAMES,
};

/// Host services, all optional. Names are what `get_libc_fn` is asked for.
#[derive(Clone, Copy, Default)]
pub struct HostServices {
    pub map: Option<MapFn>,
    pub cpu_id: Option<CpuIdFn>,
    pub cpu_count: Option<CpuCountFn>,
    pub dma: Option<DmaFn>,
    pub fault: Option<FaultFn>,
    pub write: Option<WriteFn>,
    pub stack: Option<StackFn>,
    /// Host cores only (a device programs its windows' registers).
    #[cfg(not(target_os = "none"))]
    pub window: Option<WindowFn>,
    /// Host cores only: the stack a kernel runs on, as the device's (D94).
    #[cfg(not(target_os = "none"))]
    pub kernel_stack: Option<KernelStackFn>,
    /// Host cores only: each copy's start and end, for a profiled launch's timeline (D124).
    #[cfg(not(target_os = "none"))]
    pub copy: Option<CopyFn>,
}

static SERVICES: Global<HostServices> = Global::new(HostServices {
    map: None,
    cpu_id: None,
    cpu_count: None,
    dma: None,
    fault: None,
    write: None,
    stack: None,
    #[cfg(not(target_os = "none"))]
    window: None,
    #[cfg(not(target_os = "none"))]
    kernel_stack: None,
    #[cfg(not(target_os = "none"))]
    copy: None,
});

/// Ends the kernel with a device fault: the host's fault service reports `msg` and stops
/// this core (a device without one halts here).
pub fn fault(msg: &[u8]) -> ! {
    if let Some(f) = services().fault {
        // SAFETY: the service has the documented signature; `msg` is readable.
        unsafe { f(msg.as_ptr().cast(), msg.len()) };
    }
    loop {
        core::hint::spin_loop();
    }
}

/// Installs host services (the emulator via `entry_func`, or tests).
pub fn install(s: HostServices) {
    SERVICES.with(|g| *g = s);
    // What static constructors printed before the services were known.
    crate::runtime::stdio::replay_early(s.write);
}

pub fn services() -> HostServices {
    SERVICES.with(|g| *g)
}

/// Resolves the services through a `get_libc_fn` resolver.
///
/// # Safety
/// `resolve` must return NULL or a function of the documented signature for each name.
pub unsafe fn resolve(resolve: unsafe extern "C" fn(*const c_char) -> *mut c_void) {
    let get = |name: &[u8]| {
        // SAFETY: NUL-terminated literal; the resolver's contract (function doc).
        unsafe { resolve(name.as_ptr().cast()) }
    };
    /// # Safety
    /// `p` is NULL or a function of type `F`.
    unsafe fn cast<F>(p: *mut c_void) -> Option<F> {
        // SAFETY: Option<fn> has the pointer's layout, NULL being None (function contract).
        unsafe { core::mem::transmute_copy::<*mut c_void, Option<F>>(&p) }
    }
    // SAFETY: non-NULL results are functions of the documented signatures.
    let s = unsafe {
        HostServices {
            map: cast::<MapFn>(get(b"neuron_host_map\0")),
            cpu_id: cast::<CpuIdFn>(get(b"neuron_host_cpu_id\0")),
            cpu_count: cast::<CpuCountFn>(get(b"neuron_host_cpu_count\0")),
            dma: cast::<DmaFn>(get(b"neuron_host_dma\0")),
            fault: cast::<FaultFn>(get(b"neuron_host_fault\0")),
            write: cast::<WriteFn>(get(b"neuron_host_write\0")),
            stack: cast::<StackFn>(get(b"neuron_host_stack\0")),
            #[cfg(not(target_os = "none"))]
            window: cast::<WindowFn>(get(b"neuron_host_window\0")),
            #[cfg(not(target_os = "none"))]
            kernel_stack: cast::<KernelStackFn>(get(b"neuron_host_kernel_stack\0")),
            #[cfg(not(target_os = "none"))]
            copy: cast::<CopyFn>(get(b"neuron_host_copy\0")),
        }
    };
    install(s);
}

/// The running core's index (0-7): the host's answer where a host (the emulator, or the
/// QEMU board whose single-core machines all read PRID 0) offers one, else PRID.
pub fn cpu_id() -> u32 {
    if let Some(f) = services().cpu_id {
        // SAFETY: the installed service has the documented signature.
        return unsafe { f() } & 0x7;
    }
    #[cfg(all(target_arch = "xtensa", target_os = "none"))]
    {
        extern "C" {
            /// `rsr.prid` (`crate::runtime::xtensa`).
            fn __neuron_read_prid() -> u32;
        }
        // SAFETY: reads a special register; no memory effects.
        unsafe { __neuron_read_prid() & 0xF }
    }
    #[cfg(not(all(target_arch = "xtensa", target_os = "none")))]
    {
        0
    }
}

/// The cores running this launch: the host's count where it offers one (the emulator and
/// the QEMU board: `--cores 1` runs one), else 8 (every Pool core runs every kernel).
pub fn cpu_count() -> u32 {
    // SAFETY: the installed service has the documented signature.
    services()
        .cpu_count
        .map_or(8, |f| unsafe { f() }.clamp(1, 8))
}

/// Maps SoC memory for the translation table's windows.
pub struct WindowHw;

impl crate::runtime::translate::Windows for WindowHw {
    #[allow(unused_variables)]
    fn program(&mut self, record: usize, reg_location: u64, soc_base: u64) -> usize {
        #[cfg(target_os = "none")]
        {
            // MEM_WINDOWn_HI then LO, bracketed by barriers (memw) on the device.
            let lo = reg_location as usize as *mut u32;
            // SAFETY: reg_location is the window's MMIO register (the table's contract).
            unsafe {
                core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
                lo.add(1).write_volatile((soc_base >> 32) as u32);
                lo.write_volatile(soc_base as u32 & 0xFF00_0000);
                core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
            }
            crate::runtime::DYNAMIC_WINDOWS[record].0
        }
        #[cfg(not(target_os = "none"))]
        {
            // A checked launch maps each dynamic window on its own where the host offers it,
            // so an old pointer into a window reads what the window shows now, as on the
            // device; otherwise the pointer is into the host's device memory.
            let checking = crate::runtime::STATE.with(|s| s.check_fill != 0);
            if let (true, Some(w)) = (checking, services().window) {
                // SAFETY: the installed service has the documented signature.
                let p = unsafe { w(record as u32, soc_base, 1 << 24) } as usize;
                if p != 0 {
                    return p;
                }
            }
            host_map(soc_base, 1 << 24)
        }
    }
}

/// The host address of SoC memory; a missing mapping is a device fault.
#[cfg(not(target_os = "none"))]
pub fn host_map(soc: u64, len: u64) -> usize {
    let f = services().map.unwrap_or_else(|| {
        crate::rule::fatal(customop_abi::rule!(
            "translation.cpp",
            "a host platform (neuron_host_map) is installed"
        ))
    });
    // SAFETY: the installed service has the documented signature.
    let p = unsafe { f(soc, len) } as usize;
    if p == 0 {
        crate::rule::fatal_with(
            "translation.cpp",
            format_args!(
                "no device memory backs the window at SoC address {soc:#x} (+{len:#x} bytes)"
            ),
        );
    }
    p
}
