//! Inside one emulated Pool core: the process a core runs in (see [`super::pool`] for the
//! host's side). It installs the core's host services and fault handlers, runs the library's
//! start code with this core's handoff block, collects the kernels `register_funcs` gives,
//! then runs one kernel per launch command and reports into the Pool control block. A fault
//! ends only this process.

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

use customop_abi::handoff::{Service, SundaUcodeLib};
use customop_abi::stdio;

use super::control::{
    ControlBlock, FaultKind, CORE_DONE, CORE_RUNNING, PHASE_KERNEL, PHASE_LOAD, PHASE_START,
};
use nrt_pool_engine::library::{
    ENTRY_SYMBOL, OPS_SYMBOL, REGISTER_FUNCS_SYMBOL, SCHEMA_SYMBOL, SHAPE_SYMBOL,
};
use nrt_pool_engine::memory::{DeviceMemory, PAGE};

mod divide;
mod kernel_stack;
mod registration;
pub mod runner;
mod services;
mod signals;
mod timeline;
mod watch;

pub use nrt_pool_engine::signal::{signal_cause, signal_name};
use services::*;
pub use signals::STOP_AT_DEADLINE;
use signals::*;

/// `SUNDA_UCODE_LIB` as a 64-bit host lays it out (nine pointer-sized fields).
pub type Handoff = SundaUcodeLib;

pub type EntryFn = unsafe extern "C" fn(*const Handoff) -> u32;
pub type WrapperFn = unsafe extern "C" fn() -> i32;
pub type RegisterCb = unsafe extern "C" fn(*mut c_void, *const c_char, Option<WrapperFn>) -> u32;
pub type RegisterFuncsFn = unsafe extern "C" fn(Option<RegisterCb>) -> u32;

/// The child's exit code after a reported fault (any report is in the control block).
pub const FAULT_EXIT: i32 = 70;

// The child's view of the device. Set once, after fork, in the child only.
static MEMORY: AtomicPtr<DeviceMemory> = AtomicPtr::new(std::ptr::null_mut());
static CORE: AtomicUsize = AtomicUsize::new(0);
static CORE_COUNT: AtomicUsize = AtomicUsize::new(8);
/// What this core is doing (`PHASE_*`), for fault reports.
static PHASE: AtomicU32 = AtomicU32::new(PHASE_LOAD);
/// Whether this process is the load-time probe: the one whose start code's output (static
/// constructors, entry_func) reaches the host, as the device runs them once per load; the
/// cores started later run them again and say nothing of it.
static PROBE: AtomicBool = AtomicBool::new(false);
/// The file the probe's library prints into before entry_func hands over the services
/// (on `stdio::EARLY_STDIO_FD`, where the runtime recognises it by name; D67); -1 when
/// there is none or once drained.
static EARLY_FD: AtomicI32 = AtomicI32::new(-1);
/// The op library's load base in this process (0 until loaded).
static MODULE_BASE: AtomicU64 = AtomicU64::new(0);
/// A fault is being reported (its call stack is being unwound): a profiled kernel's sample
/// timer takes no more samples (D124).
static REPORTING: AtomicBool = AtomicBool::new(false);
/// Where the engine maps device memory when this core maps it elsewhere (a 32-bit core
/// runner, D97); 0: at the same place (a forked core).
static ENGINE_BASE: AtomicU64 = AtomicU64::new(0);

/// `addr` in the engine's terms: an address in this core's mapping of device memory moved
/// to where the engine maps the same byte (the engine names device memory by its own
/// mapping); anything else as it is. Async-signal-safe.
fn engine_address(addr: u64) -> u64 {
    let theirs = ENGINE_BASE.load(Ordering::Relaxed);
    if theirs == 0 {
        return addr;
    }
    let m = memory();
    let ours = m.base();
    if addr >= ours && addr - ours < m.file_len() {
        addr - ours + theirs
    } else {
        addr
    }
}

/// The stack a host core runs kernels on: the spawner thread's, which the core's process
/// is forked from (D79).
pub const HOST_CORE_STACK: usize = nrt_pool_engine::spawner::SPAWNER_STACK;
/// The lowest address of this core's stack (0: unknown); a fault just below it is a stack
/// overflow.
static STACK_LO: AtomicU64 = AtomicU64::new(0);

/// Notes the calling thread's stack bounds for the fault handler.
fn note_stack() {
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread; it is destroyed after.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) == 0 {
            let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
            if libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0 {
                STACK_LO.store(addr as u64, Ordering::Relaxed);
            }
            libc::pthread_attr_destroy(&mut attr);
        }
    }
}

/// Whether a SIGSEGV at `addr` hit the guard below this core's stack (with stack-clash
/// probes in op code, the first page below it; 1 MiB of slack for other code).
fn is_stack_overflow(addr: u64) -> bool {
    let lo = STACK_LO.load(Ordering::Relaxed);
    lo != 0 && addr < lo + 4096 && addr >= lo.saturating_sub(1 << 20)
}
/// `nrt_pool_op_shape` of a NEURON_LIBRARY library (NULL: none).
static SHAPE_FN: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// `int nrt_pool_op_shape(const char *op, const NeuronArgTensor *args, NeuronArgTensor *out,
/// char *why, size_t cap)`.
type ShapeFn = unsafe extern "C" fn(
    *const c_char,
    *const customop_abi::descriptor::ArgTensor,
    *mut customop_abi::descriptor::ArgTensor,
    *mut c_char,
    usize,
) -> i32;

/// A shape request (command core count 0): runs op `name`'s shape function on the
/// argument blob in this core's scratch area and writes the output descriptor there.
fn shape_request(core: usize, name: &[u8]) {
    let ctl = control();
    let r = ctl.core(core);
    let f = SHAPE_FN.load(Ordering::Relaxed);
    let Ok(op) = CString::new(name) else {
        ctl.set_fault(core, FaultKind::NoKernel, 0, 0, name);
        return;
    };
    if f.is_null() {
        ctl.set_fault(
            core,
            FaultKind::NoKernel,
            0,
            0,
            b"the library has no shape functions",
        );
        return;
    }
    let (scratch, _) = memory().scratch_host(core);
    // SAFETY: the host wrote an ArgBlob at ARG_BLOB of this core's scratch area (inside the
    // region) before the request; the shape entry reads its args and writes its output.
    let blob = unsafe {
        &mut *scratch
            .add(customop_abi::blob::scratch::ARG_BLOB)
            .cast::<customop_abi::blob::ArgBlob>()
    };
    let mut why = [0u8; 448];
    // SAFETY: the library's shape entry with its documented signature.
    let rc = unsafe {
        let f: ShapeFn = std::mem::transmute::<*mut c_void, ShapeFn>(f);
        f(
            op.as_ptr(),
            blob.args.as_ptr(),
            &mut blob.output,
            why.as_mut_ptr().cast(),
            why.len(),
        )
    };
    finish_stdio();
    r.result.store(rc as u32, Ordering::Release);
    if rc != 0 {
        let n = why.iter().position(|&b| b == 0).unwrap_or(why.len());
        ctl.set_message(core, &why[..n]);
    }
    r.state.store(CORE_DONE, Ordering::Release);
}
/// The registration collector of this core process (a foreign library may pass any handle
/// back to the callbacks, so they do not rely on it).
static COLLECTOR: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

fn collector<'a>() -> Option<&'a mut Collector> {
    // SAFETY: set by `start` to its live Collector before the library can call back; one
    // thread per core process.
    unsafe {
        COLLECTOR
            .load(Ordering::Acquire)
            .cast::<Collector>()
            .as_mut()
    }
}

fn memory() -> &'static DeviceMemory {
    // SAFETY: set by `enter` before any service can be called; the DeviceMemory outlives the
    // child (the child never returns to the code that owns it).
    unsafe { &*MEMORY.load(Ordering::Acquire) }
}

fn control() -> ControlBlock {
    // SAFETY: the status region is the control block (DeviceMemory's layout).
    unsafe { ControlBlock::new(memory().status_host()) }
}

fn core() -> usize {
    CORE.load(Ordering::Relaxed)
}

/// What a core process runs: the op library (loaded inside the core, never in the host
/// process), its start code, then kernels.
#[derive(Clone, Copy)]
pub struct Program<'a> {
    pub memory: &'a DeviceMemory,
    /// The op library's absolute path.
    pub library: &'a CStr,
    /// The 32-bit core runner that cores of an i386 library exec (D97); None: the forked
    /// process serves the core itself.
    pub runner: Option<&'a CStr>,
}

/// What the library registers: names through the handoff block (the probe keeps them),
/// launchers through `register_funcs`.
struct Collector {
    probe: bool,
    funcs: Vec<(CString, Option<WrapperFn>)>,
}

/// Opens the file the probe's library prints into before the services exist, on the
/// descriptor the runtime looks at. Without it (no memfd, or the descriptor taken; and in
/// cores started for launches, whose start code says nothing) the output goes to the
/// runtime's own buffer, which reaches the host only if the start code completes.
fn open_early_stdio() {
    let at = stdio::EARLY_STDIO_FD;
    // SAFETY: a fresh close-on-exec memfd, moved to the fixed descriptor only when that is
    // free (fcntl says EBADF), so nothing of this process is replaced.
    unsafe {
        if libc::fcntl(at, libc::F_GETFD) != -1 {
            return;
        }
        let fd = libc::memfd_create(stdio::EARLY_STDIO_NAME.as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return;
        }
        let placed = libc::dup3(fd, at, libc::O_CLOEXEC);
        libc::close(fd);
        if placed == at {
            EARLY_FD.store(placed, Ordering::Relaxed);
        }
    }
}

/// Passes what the probe's start code printed before the services existed to the stdio
/// ring (core 0's: start code prints once per load, D67), then closes the file. Records as
/// `stdio::record` reads them (at most 1 KiB each from the runtime); one that does not fit
/// the buffer ends the reading. Async-signal-safe (a fault during the start calls it):
/// pread, memory copies, close.
fn drain_early_stdio() {
    let fd = EARLY_FD.swap(-1, Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    let mut at: i64 = 0;
    let mut have = 0usize;
    loop {
        // SAFETY: pread into the free part of a local buffer.
        let n = unsafe { libc::pread64(fd, buf[have..].as_mut_ptr().cast(), buf.len() - have, at) };
        if n <= 0 {
            break;
        }
        at += n as i64;
        have += n as usize;
        let mut used = 0;
        while let Some((which, bytes, size)) = stdio::record::first(&buf[used..have]) {
            control().stdio_append(if which == 2 { 2 } else { 1 }, 0, bytes);
            used += size;
        }
        buf.copy_within(used..have, 0);
        have -= used;
    }
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
}

fn finish_stdio() {
    // SAFETY: flushes the C library's buffered streams (kernels that printf through glibc).
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// Ends this core with a load failure (`FaultKind::Load`) and its reason.
fn load_failed(core: usize, why: &[u8]) -> ! {
    drain_early_stdio();
    control().set_fault(core, FaultKind::Load, 0, 0, why);
    exit(FAULT_EXIT)
}

fn dlerror_text() -> Vec<u8> {
    // SAFETY: dlerror returns NULL or this thread's NUL-terminated message.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        b"unknown dlopen error".to_vec()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(e) }.to_bytes().to_vec()
    }
}

/// Gives the core's process a name of its own: messages the C library prints for a kernel
/// (a failed `assert`) start with "pool core N:" instead of the host program's name.
fn name_the_process(core: usize) {
    #[cfg(target_env = "gnu")]
    {
        extern "C" {
            static mut program_invocation_short_name: *mut c_char;
        }
        let name = CString::new(format!("pool core {core}")).expect("no NUL");
        // SAFETY: glibc's writable program-name pointer, set once in this single-threaded
        // process to a string that lives as long as the process (leaked).
        unsafe { program_invocation_short_name = name.into_raw() };
    }
}

/// Loads the op library in this core process (its static constructors run here, with the
/// fault handlers installed) and finds its start code; the probe also copies its schema.
fn load(core: usize, p: &Program<'_>, probe: bool) -> (EntryFn, RegisterFuncsFn) {
    let ctl = control();
    PHASE.store(PHASE_LOAD, Ordering::Relaxed);
    ctl.set_phase(core, PHASE_LOAD);
    if probe {
        open_early_stdio();
    }
    // SAFETY: dlopen of the library the host named; its constructors are user code and run
    // in this core's process only.
    let h = unsafe { libc::dlopen(p.library.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        load_failed(core, &dlerror_text());
    }
    let sym = |name: &str| {
        let c = CString::new(name).expect("no NUL");
        // SAFETY: a symbol lookup in the handle we just opened.
        unsafe { libc::dlsym(h, c.as_ptr()) }
    };
    let entry = sym(ENTRY_SYMBOL);
    let register = sym(REGISTER_FUNCS_SYMBOL);
    for (f, name) in [(entry, ENTRY_SYMBOL), (register, "register_funcs")] {
        if f.is_null() {
            load_failed(
                core,
                format!("does not export {name} (link it with libneuroncustomop.a and export entry_func and register_funcs)").as_bytes(),
            );
        }
    }
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr on a symbol of the loaded library, into a local Dl_info.
    if unsafe { libc::dladdr(entry, &mut info) } != 0 {
        MODULE_BASE.store(info.dli_fbase as u64, Ordering::Relaxed);
        kernel_stack::note_library(info.dli_fbase as usize);
    }
    SHAPE_FN.store(sym(SHAPE_SYMBOL), Ordering::Relaxed);
    if probe {
        // A NEURON_LIBRARY library's op metadata, or a schema library's schema.
        let ops = sym(OPS_SYMBOL);
        let schema = if ops.is_null() {
            sym(SCHEMA_SYMBOL)
        } else {
            ops
        };
        if !schema.is_null() {
            PHASE.store(PHASE_START, Ordering::Relaxed);
            ctl.set_phase(core, PHASE_START);
            // SAFETY: `const char *nrt_pool_op_schema(void)` (generated code) returns a
            // static NUL-terminated string.
            let text = unsafe {
                let f: unsafe extern "C" fn() -> *const c_char = std::mem::transmute(schema);
                let t = f();
                if t.is_null() {
                    load_failed(core, b"nrt_pool_op_schema returned NULL");
                }
                CStr::from_ptr(t).to_bytes()
            };
            if !ctl.set_schema(text) {
                load_failed(core, b"its schema is longer than the control block holds");
            }
        }
    }
    // SAFETY: the symbols have these C signatures in every op library (the contract of
    // entry_func and register_funcs).
    unsafe {
        (
            std::mem::transmute::<*mut c_void, EntryFn>(entry),
            std::mem::transmute::<*mut c_void, RegisterFuncsFn>(register),
        )
    }
}

/// In a fresh core process: installs the core's services and fault handlers, loads the
/// library, runs its start code with this core's handoff block and collects its kernels.
/// A failing load or start code is reported and ends the process.
fn start(core: usize, p: &Program<'_>, probe: bool) -> Vec<(CString, Option<WrapperFn>)> {
    MEMORY.store(p.memory as *const _ as *mut _, Ordering::Release);
    CORE.store(core, Ordering::Relaxed);
    PROBE.store(probe, Ordering::Relaxed);
    name_the_process(core);
    install_fault_handlers();
    let ctl = control();
    ctl.core(core).state.store(CORE_RUNNING, Ordering::Release);
    let (entry, register_funcs) = load(core, p, probe);
    PHASE.store(PHASE_START, Ordering::Relaxed);
    ctl.set_phase(core, PHASE_START);
    // Leaked: it lives as long as the process.
    let collector = Box::leak(Box::new(Collector {
        probe,
        funcs: Vec::new(),
    }));
    COLLECTOR.store((collector as *mut Collector).cast(), Ordering::Release);
    let handoff = Handoff {
        sizeof_ncore_ucode_lib: std::mem::size_of::<Handoff>(),
        library_handle: (collector as *mut Collector).cast(),
        register_ext_isa_fn: Some(on_register_name),
        get_libc_fn: Some(get_libc_fn),
        get_data_scratch: Some(get_data_scratch),
        get_hbm_scratch: Some(get_hbm_scratch),
        get_dma_queue: Some(get_dma_queue),
        register_ext_isa_fn_v2: None,
        register_ext_isa_fn_v3: None,
    };
    // SAFETY: the library's start code with a complete handoff block.
    let status = unsafe { entry(&handoff) };
    if status != 0 {
        drain_early_stdio();
        ctl.core(core).result.store(status, Ordering::Release);
        ctl.set_fault(core, FaultKind::Entry, 0, 0, b"entry_func");
        exit(FAULT_EXIT);
    }
    // SAFETY: the library's registration walk with our callback.
    unsafe { register_funcs(Some(on_register_func)) };
    // (The early-output file was drained when the runtime asked for its services.)
    PHASE.store(PHASE_KERNEL, Ordering::Relaxed);
    ctl.set_phase(core, PHASE_KERNEL);
    std::mem::take(&mut collector.funcs)
}

/// Protects (or releases) this launch's guard pages in this core's view of device memory:
/// a tensor's first byte past its end faults here, as a write past it is a bug.
fn guard_pages(pages: &[u64], protect: bool) {
    let prot = if protect {
        libc::PROT_NONE
    } else {
        libc::PROT_READ | libc::PROT_WRITE
    };
    for &soc in pages {
        if let Some(p) = memory().host(soc, PAGE) {
            // SAFETY: a whole page of this process's device mapping (guard pages are
            // page-aligned SoC addresses inside a region).
            unsafe { libc::mprotect(p.cast(), PAGE as usize, prot) };
        }
    }
}

/// Points the core's fd 2 at the host's capture file for it (the host shows it once, with
/// the fault or core 0's output, instead of each core writing to the terminal), and fd 1
/// too: op code writing to the descriptor directly, past the stdio channel, lands there
/// rather than in the host process's stdout (where it would break `nrt-pool run --json`
/// and escape the engine API and Python).
fn capture_stdio_descriptors(fd: i32) {
    if fd >= 0 {
        // SAFETY: dup2 onto fds 1 and 2 in this core process; the capture fd stays open.
        unsafe {
            libc::dup2(fd, 1);
            libc::dup2(fd, 2);
        }
    }
}

/// A launch command (host to core, through the doorbell): the core count, the name's
/// length, the kernel's name.
pub(super) use super::doorbell::CMD_BYTES;
pub const MAX_KERNEL_NAME: usize = CMD_BYTES - 8;
/// A command whose core count is 0 is a shape request (op name instead of kernel name).
pub(super) const SHAPE_REQUEST: usize = 0;

/// The load-time probe's core process: start code, then the names it registered (control
/// block) and how many launchers `register_funcs` gave (`result`).
pub(super) fn probe_child(p: &Program<'_>, stderr: i32) -> ! {
    capture_stdio_descriptors(stderr);
    let funcs = start(0, p, true);
    let r = control();
    r.core(0)
        .result
        .store(funcs.len() as u32, Ordering::Release);
    r.core(0).state.store(CORE_DONE, Ordering::Release);
    exit(0)
}

/// A core process's life: start code once, then one launch per command the host rings in
/// on the doorbell (see [`super::doorbell`]); the host kills the process to end it.
/// `struct perf_event_attr` as its first version laid it out (the kernel takes any
/// version it knows by `size`; libc does not declare it).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// The bit fields: disabled (bit 0), exclude_kernel (5), exclude_hv (6), ...
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    bp_addr: u64,
}
const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 64);
const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
const PERF_DISABLED: u64 = 1;
const PERF_EXCLUDE_KERNEL: u64 = 1 << 5;
const PERF_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const PERF_EVENT_IOC_ENABLE: libc::Ioctl = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::Ioctl = 0x2401;
const PERF_EVENT_IOC_RESET: libc::Ioctl = 0x2403;

/// A profiled kernel's wall time and, where the host lets this process count them, the
/// instructions its thread retires in user space (perf_event_open; `perf_event_paranoid`
/// above 2 or a container without the syscall leaves the count at 0).
struct KernelMeter {
    start: std::time::Instant,
    counter: Option<i32>,
}

impl KernelMeter {
    fn start() -> KernelMeter {
        let attr = PerfEventAttr {
            type_: PERF_TYPE_HARDWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_HW_INSTRUCTIONS,
            flags: PERF_DISABLED | PERF_EXCLUDE_KERNEL | PERF_EXCLUDE_HV,
            ..PerfEventAttr::default()
        };
        // SAFETY: a valid attr (the first ABI version's 64 bytes) for this thread (pid 0,
        // any CPU), no group.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                0,
                -1,
                -1,
                PERF_FLAG_FD_CLOEXEC,
            )
        } as i32;
        let counter = (fd >= 0).then(|| {
            // SAFETY: our own perf fd.
            unsafe {
                libc::ioctl(fd, PERF_EVENT_IOC_RESET, 0);
                libc::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
            }
            fd
        });
        KernelMeter {
            start: std::time::Instant::now(),
            counter,
        }
    }

    /// (wall nanoseconds, instructions or 0).
    fn stop(self) -> (u64, u64) {
        let wall = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let instructions = self.counter.map_or(0, |fd| {
            let mut n = 0u64;
            // SAFETY: our own perf fd; reads one u64 into `n`, then closes it.
            unsafe {
                libc::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
                let got = libc::read(fd, (&mut n as *mut u64).cast(), 8);
                libc::close(fd);
                if got != 8 {
                    n = 0;
                }
            }
            n
        });
        (wall, instructions)
    }
}

/// The function a core calls when a kernel has returned: a debugger's breakpoint there
/// ends its `continue` (the core's process lives on for the next launch).
pub const KERNEL_RETURNED: &str = "nrt_pool_kernel_returned";

/// See [`KERNEL_RETURNED`]; `status` is the launcher's.
#[no_mangle]
#[inline(never)]
pub extern "C" fn nrt_pool_kernel_returned(status: i32) {
    std::hint::black_box(status);
}

pub(super) fn serve(core: usize, p: &Program<'_>, seen: u32, stderr: i32) -> ! {
    capture_stdio_descriptors(stderr);
    let funcs = start(core, p, false);
    let ctl = control();
    let bell = ctl.doorbell(core);
    let host = ctl.host_bell();
    let mut seen = seen;
    // The guard pages this process has protected (kept while launches reuse them).
    let mut protected: Vec<u64> = Vec::new();
    loop {
        let spin = std::time::Duration::from_nanos(u64::from(host.spin_ns.load(Ordering::Relaxed)));
        seen = super::doorbell::await_command(core, bell, host, seen, spin);
        let mut cmd = [0u8; CMD_BYTES];
        // SAFETY: the host wrote the command before moving cmd_seq and does not touch it
        // until this core completes.
        unsafe { std::ptr::copy_nonoverlapping(bell.cmd.as_ptr(), cmd.as_mut_ptr(), CMD_BYTES) };
        let cores = u32::from_le_bytes(cmd[..4].try_into().expect("4 bytes")) as usize;
        let len = (u32::from_le_bytes(cmd[4..8].try_into().expect("4 bytes")) as usize)
            .min(MAX_KERNEL_NAME);
        let name = &cmd[8..8 + len];
        let r = ctl.core(core);
        r.state.store(CORE_RUNNING, Ordering::Release);
        if cores == SHAPE_REQUEST {
            // The shape call's own guard pages: a page a previous launch guarded may hold
            // one of its scalars now.
            update_guards(&mut protected, &ctl.guards());
            shape_request(core, name);
            super::doorbell::complete(bell, host, Some(seen));
            continue;
        }
        CORE_COUNT.store(cores, Ordering::Relaxed);
        match funcs.iter().find(|(n, _)| n.to_bytes() == name) {
            Some((_, Some(f))) => {
                let guards = ctl.guards();
                update_guards(&mut protected, &guards);
                watch::begin(&ctl);
                let measure = ctl.profiling().then(KernelMeter::start);
                if measure.is_some() {
                    timeline::start();
                }
                // SAFETY: a launcher the library registered under the kernel's name.
                let code = unsafe { f() };
                watch::finish(&ctl);
                if let Some(m) = measure {
                    let (wall, instructions) = m.stop();
                    timeline::finish(wall);
                    r.wall_ns.store(wall, Ordering::Release);
                    r.instructions.store(instructions, Ordering::Release);
                }
                nrt_pool_kernel_returned(code);
                finish_stdio();
                r.result.store(code as u32, Ordering::Release);
                r.state.store(CORE_DONE, Ordering::Release);
            }
            _ => ctl.set_fault(core, FaultKind::NoKernel, 0, 0, name),
        }
        super::doorbell::complete(bell, host, Some(seen));
    }
}

/// Protects this launch's guard pages and releases the previous launch's others: a launch
/// with the same tensors as the last makes no system call here.
fn update_guards(protected: &mut Vec<u64>, now: &[u64]) {
    let stale: Vec<u64> = protected
        .iter()
        .copied()
        .filter(|g| !now.contains(g))
        .collect();
    let fresh: Vec<u64> = now
        .iter()
        .copied()
        .filter(|g| !protected.contains(g))
        .collect();
    guard_pages(&stale, false);
    guard_pages(&fresh, true);
    *protected = now.to_vec();
}

/// Wakes the host if it sleeps on completions: it then finds this process gone.
/// Async-signal-safe (atomics and a futex wake).
fn notify_exit() {
    if !MEMORY.load(Ordering::Acquire).is_null() {
        let ctl = control();
        super::doorbell::complete(ctl.doorbell(core()), ctl.host_bell(), None);
    }
}

pub(super) fn exit(code: i32) -> ! {
    finish_stdio();
    notify_exit();
    // SAFETY: ends the core process without running the host's atexit handlers or
    // destructors (they belong to the host process).
    unsafe { libc::_exit(code) }
}
