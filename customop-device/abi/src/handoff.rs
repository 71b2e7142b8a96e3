//! `SUNDA_UCODE_LIB`, the handoff block `entry_func` receives (36 bytes on a 32-bit core,
//! 72 on a 64-bit host), and the host services its `get_libc_fn` resolves by name.

use core::ffi::{c_char, c_void};
use core::mem::{offset_of, size_of};

use crate::status::Status;

/// `SUNDA_UCODE_LIB`: nine pointer-sized fields.
#[repr(C)]
pub struct SundaUcodeLib {
    pub sizeof_ncore_ucode_lib: usize,
    pub library_handle: *mut c_void,
    pub register_ext_isa_fn: Option<unsafe extern "C" fn(*mut c_void, *const c_char) -> Status>,
    /// On the host: `void *get_libc_fn(const char *name)`, the emulator's service resolver.
    pub get_libc_fn: Option<unsafe extern "C" fn(*const c_char) -> *mut c_void>,
    pub get_data_scratch: Option<unsafe extern "C" fn(*mut *mut c_void, *mut usize) -> *mut c_void>,
    pub get_hbm_scratch: Option<unsafe extern "C" fn(*mut u64, *mut usize) -> *mut c_void>,
    pub get_dma_queue: Option<unsafe extern "C" fn(*mut u32, *mut u32) -> *mut c_void>,
    pub register_ext_isa_fn_v2:
        Option<unsafe extern "C" fn(*mut c_void, *const c_char, u8) -> Status>,
    pub register_ext_isa_fn_v3: Option<unsafe extern "C" fn()>,
}

const _: () = assert!(size_of::<SundaUcodeLib>() == 9 * size_of::<usize>());
const _: () = assert!(offset_of!(SundaUcodeLib, get_libc_fn) == 3 * size_of::<usize>());
#[cfg(target_pointer_width = "32")]
const _: () = assert!(size_of::<SundaUcodeLib>() == 36);
#[cfg(target_pointer_width = "64")]
const _: () = assert!(size_of::<SundaUcodeLib>() == 72);

/// The start code's symbols an op library exports (the firmware and the emulator look them
/// up by these names): `entry_func`, and `register_funcs` as its C++ mangling spells it
/// (`SUNDA_UCODE_LIB_STATUS register_funcs(SUNDA_UCODE_LIB_STATUS (*)(void *, const char *,
/// int (*)()))`). The runtime's `#[export_name]` must spell the same (a test says so).
pub const ENTRY_SYMBOL: &str = "entry_func";
pub const REGISTER_FUNCS_SYMBOL: &str = "_Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE";
/// The launcher a Pool core's board calls (`switch_stack_or_call_wrapper(unsigned, unsigned)`).
pub const CALL_WRAPPER_SYMBOL: &str = "_Z28switch_stack_or_call_wrapperjj";

/// The smallest handoff block `entry_func` accepts (36 on the device).
pub const MIN_HANDOFF_SIZE: usize = size_of::<SundaUcodeLib>();
/// Kernel counts from this on are refused.
pub const MAX_KERNELS: i32 = 0x8000;

/// `void *neuron_host_map(soc, len)`: a local pointer to device memory.
pub type MapFn = unsafe extern "C" fn(soc: u64, len: u64) -> *mut c_void;
/// This core's id.
pub type CpuIdFn = unsafe extern "C" fn() -> u32;
/// The launch's core count.
pub type CpuCountFn = unsafe extern "C" fn() -> u32;
/// A DMA copy between local memory and the SoC address `soc`.
pub type DmaFn = unsafe extern "C" fn(local: *mut c_void, soc: u64, to_local: bool, n: u32) -> i32;
/// Reports a fault with its message; does not return on the device.
pub type FaultFn = unsafe extern "C" fn(msg: *const c_char, len: usize);
/// Writes kernel output to fd 1 or 2 (a zero-length write flushes).
pub type WriteFn = unsafe extern "C" fn(fd: i32, buf: *const c_void, len: usize) -> isize;
/// Chooses the stack a kernel runs on (Xtensa board; D79).
pub type StackFn = unsafe extern "C" fn(size: u32, guard_lo: u32, guard_hi: u32) -> u32;
/// Host cores: the top of a stack for a kernel of STACK_SIZE `stack_size`, as much as the
/// device would give it and guarded below (D94); NULL: run on the current stack.
pub type KernelStackFn = unsafe extern "C" fn(stack_size: u32) -> *mut c_void;
/// `void *neuron_host_window(record, soc, len)`: programs dynamic window `record` to show
/// `len` bytes from SoC `soc` at a local address of its own (so an older pointer into the
/// window reads what the window shows now, as on the device); NULL where not offered.
pub type WindowFn = unsafe extern "C" fn(record: u32, soc: u64, len: u64) -> *mut c_void;
/// Host cores: a copy of `bytes` is about to be made (`flags`: [`crate::access::COPY_OUT`]
/// or 0) after `elements_before` element-wise accesses, or has been made (`flags |
/// `[`crate::control::COPY_DONE`]): the measured timeline's copies (D124).
pub type CopyFn = unsafe extern "C" fn(bytes: u32, flags: u32, elements_before: u32);

/// The services a host offers, by the name `get_libc_fn` is asked for (all optional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    Map,
    CpuId,
    CpuCount,
    Dma,
    Fault,
    Write,
    Stack,
    Window,
    KernelStack,
    Copy,
}

impl Service {
    pub const ALL: [Service; 10] = [
        Service::Map,
        Service::CpuId,
        Service::CpuCount,
        Service::Dma,
        Service::Fault,
        Service::Write,
        Service::Stack,
        Service::Window,
        Service::KernelStack,
        Service::Copy,
    ];

    /// The name `get_libc_fn` is asked for.
    pub const fn name(self) -> &'static str {
        match self {
            Service::Map => "neuron_host_map",
            Service::CpuId => "neuron_host_cpu_id",
            Service::CpuCount => "neuron_host_cpu_count",
            Service::Dma => "neuron_host_dma",
            Service::Fault => "neuron_host_fault",
            Service::Write => "neuron_host_write",
            Service::Stack => "neuron_host_stack",
            Service::Window => "neuron_host_window",
            Service::KernelStack => "neuron_host_kernel_stack",
            Service::Copy => "neuron_host_copy",
        }
    }

    /// The service a name asks for.
    pub fn from_name(name: &[u8]) -> Option<Service> {
        Service::ALL
            .into_iter()
            .find(|s| s.name().as_bytes() == name)
    }
}

/// The service names, in [`Service::ALL`] order.
pub const SERVICE_NAMES: [&str; 10] = {
    let mut n = [""; 10];
    let mut i = 0;
    while i < 10 {
        n[i] = Service::ALL[i].name();
        i += 1;
    }
    n
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_round_trip_by_name() {
        for s in Service::ALL {
            assert_eq!(Service::from_name(s.name().as_bytes()), Some(s));
        }
        assert_eq!(Service::from_name(b"neuron_host_mapx"), None);
        assert_eq!(SERVICE_NAMES[5], "neuron_host_write");
    }
}
