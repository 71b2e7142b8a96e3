//! The exported roster on the host, against a fake platform: SoC memory is one zeroed host
//! buffer, the data scratch another, and the host services are installed directly. The
//! runtime's globals are per process here, so these tests take a lock.

use core::ffi::{c_char, c_int, c_void, CStr};
use std::boxed::Box;
use std::string::{String, ToString};
use std::sync::{Mutex, MutexGuard};
use std::vec::Vec;

use crate::descriptor::*;
use crate::runtime::exports::*;
use crate::runtime::platform::{self, HostServices};
use crate::runtime::{self, scratch, ArgBlob, ARG_BLOB_MAGIC, ARG_TYPE_TENSOR};
use crate::status::*;

static LOCK: Mutex<()> = Mutex::new(());

/// SoC memory: [SOC_BASE, SOC_BASE + SOC_SIZE).
const SOC_BASE: u64 = 0x0040_0000_0000;
const SOC_SIZE: usize = 192 << 20;
const HBM_SCRATCH: u64 = SOC_BASE;
const HBM_SCRATCH_SIZE: usize = 2 << 20;
const TENSORS: u64 = SOC_BASE + (80 << 20) - 64; // outside the pinned window, straddling a 16 MiB boundary
const SBUF_BASE: u64 = SOC_BASE + (128 << 20);

static mut SOC: *mut u8 = core::ptr::null_mut();
static mut SCRATCH: *mut u8 = core::ptr::null_mut();
static WRITES: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());
static REGISTERED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static mut KERNEL_COUNT: c_int = 2;
static mut REGISTER_RESULT: Status = 0;

unsafe extern "C" fn map(soc: u64, len: u64) -> *mut c_void {
    if soc >= SOC_BASE && soc + len <= SOC_BASE + SOC_SIZE as u64 {
        // SAFETY: inside the fake SoC buffer.
        unsafe { SOC.add((soc - SOC_BASE) as usize).cast() }
    } else {
        core::ptr::null_mut()
    }
}

unsafe extern "C" fn cpu_id() -> u32 {
    5
}

unsafe extern "C" fn dma(local: *mut c_void, soc: u64, to_local: bool, n: u32) -> i32 {
    // SAFETY: test buffers.
    unsafe {
        let s = map(soc, u64::from(n)).cast::<u8>();
        if to_local {
            core::ptr::copy(s, local.cast(), n as usize)
        } else {
            core::ptr::copy(local.cast::<u8>(), s, n as usize)
        }
    }
    0
}

unsafe extern "C" fn write(fd: i32, _buf: *const c_void, len: usize) -> isize {
    WRITES.lock().unwrap().push((fd, len));
    len as isize
}

unsafe extern "C" fn resolve(name: *const c_char) -> *mut c_void {
    // SAFETY: NUL-terminated name from the runtime.
    match unsafe { CStr::from_ptr(name) }.to_bytes() {
        b"neuron_host_map" => map as *mut c_void,
        b"neuron_host_cpu_id" => cpu_id as *mut c_void,
        b"neuron_host_dma" => dma as *mut c_void,
        b"neuron_host_write" => write as *mut c_void,
        _ => core::ptr::null_mut(),
    }
}

unsafe extern "C" fn data_scratch(addr: *mut *mut c_void, size: *mut usize) -> *mut c_void {
    // SAFETY: out pointers from entry_func.
    unsafe {
        *addr = SCRATCH.cast();
        *size = scratch::MIN_SIZE;
    }
    core::ptr::null_mut()
}

unsafe extern "C" fn hbm_scratch(addr: *mut u64, size: *mut usize) -> *mut c_void {
    // SAFETY: as above.
    unsafe {
        *addr = HBM_SCRATCH;
        *size = HBM_SCRATCH_SIZE;
    }
    core::ptr::null_mut()
}

unsafe extern "C" fn register(_h: *mut c_void, name: *const c_char) -> Status {
    // SAFETY: the kernel table's names are NUL-terminated.
    REGISTERED.lock().unwrap().push(
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    );
    // SAFETY: test-controlled global.
    unsafe { REGISTER_RESULT }
}

// The op author's table for these tests.
#[export_name = "_Z12get_func_cntv"]
extern "C" fn get_func_cnt() -> c_int {
    // SAFETY: test-controlled global.
    unsafe { KERNEL_COUNT }
}

#[export_name = "_Z13get_func_namei"]
extern "C" fn get_func_name(i: c_int) -> *const c_char {
    [c"axpb".as_ptr(), c"copy_out".as_ptr()]
        .get(i as usize)
        .copied()
        .unwrap_or(c"error".as_ptr())
}

#[export_name = "_Z12get_func_ptri"]
extern "C" fn get_func_ptr(i: c_int) -> Option<WrapperFn> {
    [axpb_stack_switch as WrapperFn, copy_out_stack_switch]
        .get(i as usize)
        .copied()
}

/// A kernel as the op build helper generates it: out = x * a + b, written into the
/// destination (multicore style).
unsafe extern "C" fn axpb_wrapper() {
    customop_setup(true);
    let x = customop_next_tensor_desc();
    let b = customop_next_int();
    let a = customop_next_float();
    let out = customop_dst_tensor_desc();
    // SAFETY: descriptors and their data from the runtime.
    unsafe {
        let n = (*x).num_elem();
        let mut buf = std::vec![0f32; n];
        neuron_memcpy_from_hbm(
            buf.as_mut_ptr().cast(),
            customop_tensor_soc_addr(x),
            (4 * n) as u32,
        );
        for v in &mut buf {
            *v = *v * a + b as f32;
        }
        neuron_memcpy_to_hbm(
            customop_tensor_soc_addr(out),
            buf.as_mut_ptr().cast(),
            (4 * n) as u32,
        );
    }
    customop_cleanup();
}

unsafe extern "C" fn axpb_stack_switch() -> c_int {
    // SAFETY: the generated wrapper.
    unsafe { customop_call_wrapper(Some(axpb_wrapper)) }
}

/// Returns its input: the runtime copies it into the destination.
unsafe extern "C" fn copy_out_wrapper() {
    customop_setup(true);
    let x = customop_next_tensor_desc();
    // SAFETY: a runtime descriptor.
    unsafe { customop_return_tensor_desc(x) };
    customop_cleanup();
}

unsafe extern "C" fn copy_out_stack_switch() -> c_int {
    // SAFETY: the generated wrapper.
    unsafe { customop_call_wrapper(Some(copy_out_wrapper)) }
}

fn handoff(size: usize) -> SundaUcodeLib {
    SundaUcodeLib {
        sizeof_ncore_ucode_lib: size,
        library_handle: 0x1234 as *mut c_void,
        register_ext_isa_fn: Some(register),
        get_libc_fn: Some(resolve),
        get_data_scratch: Some(data_scratch),
        get_hbm_scratch: Some(hbm_scratch),
        get_dma_queue: None,
        register_ext_isa_fn_v2: None,
        register_ext_isa_fn_v3: None,
    }
}

/// Fresh fake memory, the library started.
fn start() -> MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: test setup under the lock; the buffers are leaked for the process.
    unsafe {
        if SOC.is_null() {
            SOC = Box::leak(std::vec![0u8; SOC_SIZE].into_boxed_slice()).as_mut_ptr();
            #[repr(C, align(64))]
            struct Scratch([u8; scratch::MIN_SIZE]);
            SCRATCH = Box::leak(Box::new(Scratch([0; scratch::MIN_SIZE])))
                .0
                .as_mut_ptr();
        }
        KERNEL_COUNT = 2;
        REGISTER_RESULT = 0;
        REGISTERED.lock().unwrap().clear();
        WRITES.lock().unwrap().clear();
        platform::install(HostServices::default());
        assert_eq!(
            entry_func(&handoff(MIN_HANDOFF_SIZE)),
            SUNDA_UCODE_LIB_SUCCESS
        );
    }
    g
}

fn soc_f32(addr: u64, n: usize) -> Vec<f32> {
    // SAFETY: inside the fake SoC buffer.
    unsafe { core::slice::from_raw_parts(map(addr, (4 * n) as u64).cast::<f32>(), n).to_vec() }
}

fn put_f32(addr: u64, v: &[f32]) {
    // SAFETY: inside the fake SoC buffer.
    unsafe { core::ptr::copy(v.as_ptr(), map(addr, (4 * v.len()) as u64).cast(), v.len()) }
}

fn blob() -> &'static mut ArgBlob {
    // SAFETY: the fake scratch area holds the blob.
    unsafe { &mut *(SCRATCH.add(scratch::ARG_BLOB) as *mut ArgBlob) }
}

fn write_args(args: &[ArgTensor], output: ArgTensor) {
    let b = blob();
    b.magic = ARG_BLOB_MAGIC;
    b.num_args = args.len() as u32;
    b.sbuf_base = SBUF_BASE;
    for (i, a) in args.iter().enumerate() {
        b.args[i] = *a;
        b.types[i] = ARG_TYPE_TENSOR;
    }
    b.output = output;
}

#[test]
fn entry_func_gates_and_registration() {
    let _g = start();
    assert_eq!(*REGISTERED.lock().unwrap(), ["axpb", "copy_out"]);
    // SAFETY: test globals and handoff blocks.
    unsafe {
        assert_eq!(core::ptr::addr_of!(SDK_HBM_SCRATCH).read(), HBM_SCRATCH);
        assert_eq!(core::ptr::addr_of!(data_scratch_map).read(), SCRATCH.cast());
        assert_eq!(
            entry_func(&handoff(MIN_HANDOFF_SIZE - 1)),
            SUNDA_UCODE_LIB_FAILURE_ABI_MISMATCH
        );
        KERNEL_COUNT = 0x8000;
        assert_eq!(
            entry_func(&handoff(MIN_HANDOFF_SIZE)),
            SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS
        );
        KERNEL_COUNT = -1;
        assert_eq!(
            entry_func(&handoff(MIN_HANDOFF_SIZE)),
            SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS
        );
        KERNEL_COUNT = 2;
        REGISTER_RESULT = SUNDA_UCODE_LIB_FAILURE_OPCODE_TO_KERNEL_MAP;
        assert_eq!(
            entry_func(&handoff(MIN_HANDOFF_SIZE)),
            SUNDA_UCODE_LIB_FAILURE_OPCODE_TO_KERNEL_MAP
        );
    }
}

static SEEN: Mutex<Vec<(usize, String, usize)>> = Mutex::new(Vec::new());

unsafe extern "C" fn record(h: *mut c_void, name: *const c_char, f: Option<WrapperFn>) -> Status {
    // SAFETY: a kernel name.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    SEEN.lock()
        .unwrap()
        .push((h as usize, name, f.map_or(0, |f| f as usize)));
    7
}

#[test]
fn register_funcs_calls_back_with_handle_name_and_pointer() {
    let _g = start();
    // SAFETY: a valid callback.
    assert_eq!(
        unsafe { register_funcs(Some(record)) },
        0,
        "callback results are ignored"
    );
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (
                0x1234,
                "axpb".to_string(),
                axpb_stack_switch as *const () as usize
            ),
            (
                0x1234,
                "copy_out".to_string(),
                copy_out_stack_switch as *const () as usize
            )
        ]
    );
}

#[test]
fn a_kernel_runs_through_marshalling_translation_and_memcpy() {
    let _g = start();
    for method in [0u32, 1, 2] {
        let x: Vec<f32> = (0..40).map(|i| i as f32).collect();
        put_f32(TENSORS, &x);
        put_f32(TENSORS + 0x1000, &[-3.0]); // b as int below
                                            // SAFETY: fake SoC memory.
        unsafe { *map(TENSORS + 0x1000, 4).cast::<i32>() = -3 };
        put_f32(TENSORS + 0x2000, &[0.5]);
        let out = ArgTensor::hbm(DTYPE_FP32, TENSORS + 0x3000, &[40]);
        write_args(
            &[
                ArgTensor::hbm(DTYPE_FP32, TENSORS, &[40]),
                ArgTensor::hbm(DTYPE_INT32, TENSORS + 0x1000, &[1]),
                ArgTensor::hbm(DTYPE_FP32, TENSORS + 0x2000, &[1]),
            ],
            out,
        );
        platform::install(HostServices {
            dma: Some(dma),
            ..platform::services()
        });
        assert_eq!(neuron_set_memcpy_method(method), 0);
        // SAFETY: the registered launcher.
        assert_eq!(unsafe { axpb_stack_switch() }, 0);
        let got = soc_f32(TENSORS + 0x3000, 40);
        let want: Vec<f32> = x.iter().map(|v| v * 0.5 - 3.0).collect();
        assert_eq!(got, want, "method {method}");
    }
    assert_eq!(
        neuron_set_memcpy_method(3),
        -1,
        "the 3-entry table's end is refused"
    );
    assert_eq!(
        *WRITES.lock().unwrap().first().unwrap(),
        (2, 0),
        "cleanup flushes stderr first"
    );
}

#[test]
fn returned_tensor_is_copied_to_the_destination() {
    let _g = start();
    let x: Vec<f32> = (0..1000).map(|i| i as f32 * 1.5).collect();
    put_f32(TENSORS, &x);
    write_args(
        &[ArgTensor::hbm(DTYPE_FP32, TENSORS, &[10, 100])],
        ArgTensor::hbm(DTYPE_FP32, TENSORS + 0x8000, &[1000]),
    );
    // SAFETY: the registered launcher.
    unsafe { copy_out_stack_switch() };
    assert_eq!(soc_f32(TENSORS + 0x8000, 1000), x);
}

#[test]
fn sbuf_tensors_are_relative_to_the_sbuf_base() {
    let _g = start();
    put_f32(SBUF_BASE + 0x400, &[9.0, 8.0]);
    write_args(
        &[ArgTensor::sbuf(DTYPE_FP32, 0x400, &[2], 1)],
        ArgTensor::hbm(DTYPE_FP32, TENSORS, &[2]),
    );
    runtime::init_for_launch();
    runtime::setup();
    let t = runtime::next_arg();
    assert_eq!(runtime::tensor_soc_addr(t), SBUF_BASE + 0x400);
    // SAFETY: the translated address of a mapped f32.
    let second = unsafe { *(runtime::translate(SBUF_BASE + 0x404) as *const f32) };
    assert_eq!(second, 8.0, "through the pinned SBUF window");
}

fn fatal_message(f: impl FnOnce()) -> String {
    let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
    *e.downcast::<String>().unwrap()
}

#[test]
fn argument_rules_are_fatal() {
    let _g = start();
    let t = ArgTensor::hbm(DTYPE_FP32, TENSORS, &[1]);
    write_args(&[t; 10], t);
    blob().num_args = 11;
    runtime::init_for_launch();
    assert!(fatal_message(runtime::setup).contains("arg_extractor.hpp:16"));
    write_args(&[t], t);
    runtime::setup();
    runtime::next_arg();
    assert!(fatal_message(|| {
        runtime::next_arg();
    })
    .contains("arg_parser.hpp:66 curr_arg_ < isa_args.get_num()"));
    write_args(&[t], t);
    blob().types[0] = 0;
    runtime::setup();
    assert!(fatal_message(|| {
        runtime::next_arg();
    })
    .contains("arg_parser.hpp:67"));
    write_args(&[t], ArgTensor::hbm(DTYPE_INT32, TENSORS, &[1]));
    runtime::setup();
    assert!(fatal_message(|| runtime::return_tensor(&t)).contains("utypes.hpp:65"));
}

#[test]
fn allocators_translation_and_spmd() {
    let _g = start();
    // SAFETY: exported functions with valid out pointers.
    unsafe {
        assert_eq!(customop_call_wrapper(None), 0);
        let mut a = 0u64;
        assert_eq!(neuron_hbm_allocate(100, &mut a, 0), 0);
        assert!(a >= HBM_SCRATCH && a.is_multiple_of(64));
        let mut sz = 0u32;
        assert_eq!(neuron_hbm_get_alloc_size(a, &mut sz), 0);
        assert_eq!(sz, 100);
        let mut b = 7u64;
        assert_eq!(
            neuron_hbm_allocate(HBM_SCRATCH_SIZE as u32 + 1, &mut b, 0),
            -1
        );
        assert_eq!(b, 7, "untouched on failure");
        assert_eq!(neuron_hbm_deallocate(a), 0);
        assert_eq!(neuron_hbm_deallocate(a), -1, "double free");
        let local = neuron_translate(neuron_translate_ctx(), HBM_SCRATCH + 8);
        assert_eq!(local, map(HBM_SCRATCH + 8, 1));
        let (mut s, mut e) = (0u64, 0u64);
        assert_eq!(
            neuron_translate_mapping_lookup(core::ptr::null_mut(), HBM_SCRATCH, &mut s, &mut e),
            0
        );
        assert_eq!((s, e), (HBM_SCRATCH, HBM_SCRATCH + (64 << 20) - 1));
        assert_eq!(
            neuron_translate_mapping_lookup(core::ptr::null_mut(), TENSORS, &mut s, &mut e),
            -1
        );

        let mut free = 0u32;
        neuron_dataram_max_free_space(&mut free, 0);
        assert_eq!(free as usize, scratch::DATARAM_POOL_SIZE);
        let p = tcm_malloc(1000);
        assert!(!p.is_null() && (p as usize).is_multiple_of(64));
        assert!((p as usize) >= SCRATCH as usize + scratch::DATARAM_POOL);
        assert!(tcm_malloc(20_000).is_null());
        let mut q = core::ptr::dangling_mut::<c_void>();
        assert_eq!(neuron_dataram_allocate(20_000, &mut q, 0), -1);
        assert!(q.is_null(), "written even on failure");
        tcm_free(p);
        tcm_free(core::ptr::null_mut());
        assert_eq!(neuron_dataram_deallocate(p), -1, "already freed");
        let stack = allocate_hbm_stack(8192, 0, 0);
        assert!(stack != 0);
        deallocate_hbm_stack(stack);

        assert_eq!(
            get_cpu_id(),
            5,
            "the emulator's core id, through get_libc_fn"
        );
        platform::install(HostServices {
            cpu_id: None,
            ..platform::services()
        });
        assert_eq!(get_cpu_id(), 0, "no service: core 0");
        assert_eq!(get_cpu_count(), 8);

        // The emulator's launch core count, clamped to the engine's 1..=8.
        unsafe extern "C" fn three() -> u32 {
            3
        }
        unsafe extern "C" fn zero() -> u32 {
            0
        }
        platform::install(HostServices {
            cpu_count: Some(three),
            ..platform::services()
        });
        assert_eq!(get_cpu_count(), 3);
        platform::install(HostServices {
            cpu_count: Some(zero),
            ..platform::services()
        });
        assert_eq!(get_cpu_count(), 1);
    }
}

#[test]
fn stdio_write_goes_through_the_host_service() {
    static SEEN: Mutex<Vec<(i32, Vec<u8>)>> = Mutex::new(Vec::new());
    unsafe extern "C" fn write(fd: i32, buf: *const c_void, len: usize) -> isize {
        let b = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: the runtime passes len readable bytes.
            unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) }.to_vec()
        };
        SEEN.lock().unwrap().push((fd, b));
        len as isize
    }
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let saved = platform::services();
    platform::install(HostServices {
        write: Some(write),
        ..saved
    });
    // SAFETY: valid buffers; NULL only with a length the function refuses.
    unsafe {
        assert_eq!(customop_stdio_write(1, b"hi\n".as_ptr().cast(), 3), 3);
        assert_eq!(customop_stdio_write(2, core::ptr::null(), 0), 0);
        assert_eq!(customop_stdio_write(1, core::ptr::null(), 4), -1);
    }
    // Before the services are known (a static constructor's printf on the host): kept
    // whole, up to the buffer, and passed on in order when a write service arrives.
    platform::install(HostServices {
        write: None,
        ..saved
    });
    let big = [b'z'; crate::runtime::stdio::EARLY_BYTES];
    // SAFETY: as above.
    unsafe {
        assert_eq!(customop_stdio_write(1, b"early ".as_ptr().cast(), 6), 6);
        assert_eq!(customop_stdio_write(2, b"err".as_ptr().cast(), 3), 3);
        assert_eq!(customop_stdio_write(3, b"x".as_ptr().cast(), 1), -1);
        assert_eq!(customop_stdio_write(1, big.as_ptr().cast(), big.len()), -1);
        assert_eq!(customop_stdio_write(1, b"out".as_ptr().cast(), 3), 3);
    }
    assert_eq!(SEEN.lock().unwrap().len(), 2, "nothing written yet");
    platform::install(HostServices {
        write: Some(write),
        ..saved
    });
    platform::install(saved);
    assert_eq!(
        *SEEN.lock().unwrap(),
        [
            (1, b"hi\n".to_vec()),
            (2, Vec::new()),
            (1, b"early ".to_vec()),
            (2, b"err".to_vec()),
            (1, b"out".to_vec())
        ]
    );
}

/// Checking mode: with the blob's check_fill set, every block the heaps hand out
/// starts as that byte (tcm_malloc, HBM blocks through neuron_hbm_allocate); without it,
/// a block keeps what memory held.
#[test]
fn a_checked_launch_hands_out_poisoned_blocks() {
    let _g = start();
    runtime::init_for_launch();
    let t = ArgTensor::hbm(DTYPE_INT32, TENSORS, &[1]);
    write_args(&[t], t);
    blob().check_fill = 0xA5;
    runtime::setup();
    let p = tcm_malloc(100).cast::<u8>();
    // SAFETY: a 100-byte block just handed out.
    let block = unsafe { core::slice::from_raw_parts_mut(p, 100) };
    assert!(block.iter().all(|&b| b == 0xA5), "tcm_malloc: {block:?}");
    block.fill(0x11);
    tcm_free(p.cast());
    let mut soc = 0u64;
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { neuron_hbm_allocate(64, &mut soc, 64) }, 0);
    // SAFETY: the 64-byte HBM block just handed out, in the fake SoC buffer.
    let hbm = unsafe { core::slice::from_raw_parts(map(soc, 64).cast::<u8>(), 64) };
    assert!(hbm.iter().all(|&b| b == 0xA5), "HBM block: {hbm:?}");
    assert_eq!(neuron_hbm_deallocate(soc), 0);
    // Unchecked: the same block comes back as it was left.
    blob().check_fill = 0;
    runtime::setup();
    let q = tcm_malloc(100).cast::<u8>();
    assert_eq!(q, p, "first fit gives the same block");
    // SAFETY: the same block, handed out again.
    assert!(unsafe { core::slice::from_raw_parts(q, 100) }
        .iter()
        .all(|&b| b == 0x11));
    tcm_free(q.cast());
}

/// The runtime exports the start code under the names the engine and the board look up
/// (`customop_abi::handoff`; an `#[export_name]` cannot take a constant).
#[test]
fn start_code_symbols_are_spelled_as_the_contract_names_them() {
    let src = include_str!("exports.rs");
    for name in [
        customop_abi::handoff::REGISTER_FUNCS_SYMBOL,
        customop_abi::handoff::CALL_WRAPPER_SYMBOL,
    ] {
        assert!(
            src.contains(&std::format!("#[export_name = \"{name}\"]")),
            "{name}"
        );
    }
    assert!(src.contains(&std::format!("fn {}(", customop_abi::handoff::ENTRY_SYMBOL)));
}
