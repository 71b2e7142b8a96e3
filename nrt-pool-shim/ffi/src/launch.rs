//! The versioned launch FFI (`include/nrt_pool.h`), after the register + launch contract
//! style of seed 004: an ABI-version call, library and per-kernel parameter registration
//! with an append-only kind enum, and `nrt_pool_launch_v1` with a core count, an argv of
//! typed slots, a stream and a device id. New fields come only as new suffixed symbols
//! (`_v2`, ...); old symbols keep their signature and behaviour.
#![allow(clippy::missing_safety_doc, non_camel_case_types)]

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::mem::{offset_of, size_of};

use parking_lot::Mutex;

use crate::argv::{Argv, TensorSlot};
use crate::boundary::{
    cpath, cstr, echo, guard, last_error_ptr, status, with_engine, Code, Failure,
};
use crate::pairs;
use nrt_pool_engine::schema::{ArgKind, ParamKind};
use nrt_pool_engine::tensor::DType;
use nrt_pool_engine::{ArgValue, Arguments, Call, CallOptions, Destination, Output, Target};
use nrt_pool_open::Pool;

/// The contract version compiled into this library. History: 1, the register + launch
/// trio with `nrt_pool_launch_v1`; 2, `nrt_pool_op_output_v2` and `nrt_pool_launch_v2`
/// for NEURON_LIBRARY ops by `NS::OP`; 3, `nrt_pool_set_checks` and
/// `NRT_POOL_CHECK_FOUND`; 4, `NRT_POOL_ERR_ENGINE` (failures of the emulator itself,
/// ARGUMENT before) and prepared output + launch pairs (the shape function runs once).
pub const NRT_POOL_ABI_VERSION: i32 = 4;

/// Results.
pub const NRT_POOL_OK: i32 = 0;
/// The engine is not initialised (or closed).
pub const NRT_POOL_ERR_STATE: i32 = 1;
/// A bad argument: NULL, unknown kind or dtype, wrong count, too many arguments.
pub const NRT_POOL_ERR_ARGUMENT: i32 = 2;
/// The op library cannot be loaded, or its start code failed (also in a core a launch
/// starts).
pub const NRT_POOL_ERR_LIBRARY: i32 = 3;
/// No such kernel, or no parameter metadata for it.
pub const NRT_POOL_ERR_KERNEL: i32 = 4;
/// The kernel, or the op's shape function, faulted (details in nrt_pool_last_error; what
/// it printed before is on stdout and stderr).
pub const NRT_POOL_ERR_FAULT: i32 = 5;
/// Out-of-range device id: a diagnostic on stderr, no launch.
pub const NRT_POOL_ERR_DEVICE: i32 = 6;
/// A checked launch (`nrt_pool_set_checks`, `$GPSIMD_OPEN_CHECK`) ran and wrote its output,
/// and the checks found something: the findings, one per line, in nrt_pool_last_error.
pub const NRT_POOL_CHECK_FOUND: i32 = 7;
/// The emulator itself could not do what was asked: start the cores, stop one for a
/// debugger, or finish a wait that was interrupted (details in nrt_pool_last_error).
pub const NRT_POOL_ERR_ENGINE: i32 = 8;

// The header's numbers are the boundary's codes.
const _: () = assert!(NRT_POOL_ERR_STATE == Code::State as i32);
const _: () = assert!(NRT_POOL_ERR_ARGUMENT == Code::Argument as i32);
const _: () = assert!(NRT_POOL_ERR_LIBRARY == Code::Library as i32);
const _: () = assert!(NRT_POOL_ERR_KERNEL == Code::Kernel as i32);
const _: () = assert!(NRT_POOL_ERR_FAULT == Code::Fault as i32);
const _: () = assert!(NRT_POOL_ERR_DEVICE == Code::Device as i32);
const _: () = assert!(NRT_POOL_CHECK_FOUND == Code::CheckFound as i32);
const _: () = assert!(NRT_POOL_ERR_ENGINE == Code::Engine as i32);

/// Parameter kinds. Append-only: new kinds go at the end; values are never renumbered.
pub type nrt_pool_param_kind = u8;
/// Slot points at an `nrt_pool_tensor` the kernel reads.
pub const NRT_POOL_PARAM_TENSOR: nrt_pool_param_kind = 0;
/// Slot points at one value of the parameter's dtype (marshalled as a 1-element tensor).
pub const NRT_POOL_PARAM_SCALAR: nrt_pool_param_kind = 1;
/// Slot points at the `nrt_pool_tensor` the kernel writes (exactly one per kernel).
pub const NRT_POOL_PARAM_OUTPUT: nrt_pool_param_kind = 2;

/// Tensor locations (`nrt_pool_tensor.location`).
pub const NRT_POOL_LOCATION_HBM: u8 = 0;
pub const NRT_POOL_LOCATION_SBUF: u8 = 1;

/// A tensor slot: caller-owned host memory of `numel * element size` bytes, C order.
#[repr(C)]
pub struct nrt_pool_tensor {
    pub data: *mut c_void,
    pub shape: [u64; 8],
    pub rank: u32,
    /// `NEURON_ISA_TPB_DTYPE` code (10 = fp32, 8 = int32, ...).
    pub dtype: u8,
    /// `NRT_POOL_LOCATION_*`.
    pub location: u8,
    pub reserved: [u8; 2],
}

const _: () = assert!(size_of::<nrt_pool_tensor>() == 80);

/// A `torch::Scalar` slot of `nrt_pool_launch_v2`: an integral or a floating value.
#[repr(C)]
pub struct nrt_pool_scalar {
    /// 1: `integer` holds the value; 0: `floating` does.
    pub is_integral: u32,
    pub reserved: u32,
    pub floating: f64,
    pub integer: i64,
}

const _: () = assert!(size_of::<nrt_pool_scalar>() == 24);
const _: () = assert!(offset_of!(nrt_pool_scalar, integer) == 16);
const _: () = assert!(offset_of!(nrt_pool_tensor, rank) == 72);
const _: () = assert!(offset_of!(nrt_pool_tensor, dtype) == 76);

/// Per kernel: (kind, dtype) per parameter, in declaration order.
type ParamTable = HashMap<String, Vec<(u8, u8)>>;
static PARAMS: Mutex<Option<ParamTable>> = Mutex::new(None);

/// The ABI version this library implements; compare with `NRT_POOL_ABI_VERSION`.
#[no_mangle]
pub extern "C" fn nrt_pool_abi_version() -> i32 {
    NRT_POOL_ABI_VERSION
}

/// The calling thread's last error message ("" if none). Valid until the thread's next call.
#[no_mangle]
pub extern "C" fn nrt_pool_last_error() -> *const c_char {
    last_error_ptr()
}

/// Devices the emulator offers (one).
#[no_mangle]
pub extern "C" fn nrt_pool_device_count() -> i32 {
    1
}

/// Loads an op library built for the host (replacing any loaded one) and runs its start
/// code once to learn its kernels.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_register_library(path: *const c_char) -> i32 {
    guard(|| {
        status(with_engine(|e| {
            let p = cpath(path, "path")?;
            pairs::forget_all();
            // Any failure to load or start it is LIBRARY (what start code printed before
            // faulting is echoed).
            // --check=parity compares with the other build beside it (D93).
            e.reload(p).map_err(|err| {
                let message = match err {
                    nrt_pool_open::OpenError::Engine(err) => Failure::from(err).message,
                    other => other.to_string(),
                };
                Failure::new(Code::Library, message)
            })?;
            Ok(())
        }))
    })
}

/// Registers a kernel's parameter metadata: `count` kinds (`NRT_POOL_PARAM_*`) and dtypes,
/// in declaration order, with exactly one OUTPUT. The arrays are copied.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_register_kernel_params(
    kernel: *const c_char,
    count: i32,
    kind: *const u8,
    dtype: *const u8,
) -> i32 {
    guard(|| {
        status((|| {
            let name = cstr(kernel, "kernel")?;
            let bad = |m: String| Failure::argument(format!("{name}: {m}"));
            let n = usize::try_from(count)
                .ok()
                .filter(|n| (1..=nrt_pool_engine::MAX_ARGS + 1).contains(n));
            let (Some(n), false, false) = (n, kind.is_null(), dtype.is_null()) else {
                return Err(bad(format!(
                    "count {count} (1 to {} including the output) or NULL arrays",
                    nrt_pool_engine::MAX_ARGS + 1
                )));
            };
            // SAFETY: `count` readable entries each (C contract; count checked positive).
            let (k, d) = unsafe {
                (
                    std::slice::from_raw_parts(kind, n),
                    std::slice::from_raw_parts(dtype, n),
                )
            };
            if let Some(x) = k.iter().find(|&&x| x > NRT_POOL_PARAM_OUTPUT) {
                return Err(bad(format!("unknown parameter kind {x}")));
            }
            if let Some(x) = d.iter().find(|&&x| DType::from_isa(x).is_none()) {
                return Err(bad(format!("unsupported dtype code {x}")));
            }
            if k.iter().filter(|&&x| x == NRT_POOL_PARAM_OUTPUT).count() != 1 {
                return Err(bad("exactly one OUTPUT parameter".into()));
            }
            PARAMS.lock().get_or_insert_with(HashMap::new).insert(
                name.into(),
                k.iter().copied().zip(d.iter().copied()).collect(),
            );
            Ok(())
        })())
    })
}

/// Why an initialised engine has no op library.
fn no_library_reason(e: &Pool) -> String {
    let img = e.image();
    if !img.registered {
        return "no op library: register one with nrt_set_pool_eng_ucode before nrt_pool_init, \
                or with nrt_pool_register_library (the emulator has no stock Pool ucode)"
            .into();
    }
    let what = match nrt_pool_engine::elf_ident::ElfIdent::parse(&img.iram) {
        Some(i) => format!("an ELF{} image for machine {}", i.bits, i.machine),
        None => "not an ELF image".into(),
    };
    format!(
        "the registered Pool image ({} bytes of IRAM, {what}) is not an op library built for \
         this host: the emulator runs host builds (nrt-pool build), not device code",
        img.iram.len()
    )
}

/// The metadata for a kernel: registered, or derived from the library's schema.
fn params_for(target: &Target) -> Option<Vec<(u8, u8)>> {
    let kernel = target.kernel.as_str();
    if let Some(p) = PARAMS.lock().as_ref().and_then(|m| m.get(kernel)) {
        return Some(p.clone());
    }
    let sig = target.signature()?;
    let mut v: Vec<(u8, u8)> = sig
        .params
        .iter()
        .map(|p| match &p.kind {
            ParamKind::Tensor { dtype, .. } => (NRT_POOL_PARAM_TENSOR, dtype.isa()),
            ParamKind::Scalar(dt) => (NRT_POOL_PARAM_SCALAR, dt.isa()),
        })
        .collect();
    v.push((NRT_POOL_PARAM_OUTPUT, sig.result.isa()));
    Some(v)
}

/// The launch entry points' device argument: -1 or 0 to the device count - 1; otherwise
/// NRT_POOL_ERR_DEVICE, said on stderr.
fn validate_device(device: i32) -> Result<(), Failure> {
    if device < -1 || device >= nrt_pool_device_count() {
        let m = format!(
            "device {device} is out of range (-1, or 0 to {}): nothing launched",
            nrt_pool_device_count() - 1
        );
        eprintln!("nrt_pool: {m}");
        return Err(Failure::new(Code::Device, m));
    }
    Ok(())
}

/// Launches `kernel` on `cores` (1 to 8) cores of device `device` (-1 or 0: the emulated
/// device) on stream 0. `argv` holds one pointer per registered parameter, in order; the
/// OUTPUT slot's data receives the result. Slots are caller-owned and only read during the
/// call. Core 0's output is written to this process's stdout.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_launch_v1(
    kernel: *const c_char,
    cores: u32,
    argv: *const *mut c_void,
    stream: i64,
    device: i32,
) -> i32 {
    guard(|| {
        status(validate_device(device).and_then(|()| {
            with_engine(|e| {
                let name = cstr(kernel, "kernel")?;
                let (target, params) = launch_target(e, name, stream)?;
                // SAFETY: one slot per registered parameter (C contract).
                let argv = unsafe { Argv::new(argv, params.len(), name) }?;
                let (args, out) = kernel_args(&argv, &params, name)?;
                let cores = Some(cores as usize);
                call_into(e, &target, args, Output::Stated(out.spec()), &out, cores)
            })
        }))
    })
}

/// What every launch needs first: the default stream and a registered library.
fn ready_for_launch(e: &Pool, stream: i64) -> Result<(), Failure> {
    if stream != 0 {
        return Err(Failure::argument(format!(
            "stream {stream}: only the default stream 0 exists"
        )));
    }
    if e.loaded.library().is_none() {
        return Err(Failure::new(Code::Library, no_library_reason(e)));
    }
    Ok(())
}

/// The kernel a launch names, on the default stream, with its parameter metadata.
fn launch_target(e: &Pool, name: &str, stream: i64) -> Result<(Target, Vec<(u8, u8)>), Failure> {
    ready_for_launch(e, stream)?;
    let target = e.target(name)?;
    let params = params_for(&target).ok_or_else(|| {
        Failure::new(
            Code::Kernel,
            format!("{name}: no parameter metadata (nrt_pool_register_kernel_params)"),
        )
    })?;
    Ok((target, params))
}

/// A kernel's arguments and its OUTPUT slot, by its parameter metadata.
fn kernel_args<'a>(
    argv: &Argv<'a>,
    params: &[(u8, u8)],
    name: &str,
) -> Result<(Vec<ArgValue<'a>>, TensorSlot<'a>), Failure> {
    let mut args = Vec::with_capacity(params.len());
    let mut output = None;
    for (i, &(kind, code)) in params.iter().enumerate() {
        let dtype = DType::from_isa(code)
            .ok_or_else(|| Failure::argument(format!("{name}: dtype code {code}")))?;
        match kind {
            NRT_POOL_PARAM_SCALAR => args.push(argv.scalar(i, dtype)?),
            NRT_POOL_PARAM_OUTPUT => output = Some(argv.output(i, Some(dtype))?),
            _ => args.push(argv.tensor(i, Some(dtype))?.value()),
        }
    }
    let out = output.ok_or_else(|| Failure::argument(format!("{name}: no OUTPUT parameter")))?;
    Ok((args, out))
}

/// The call arguments of a NEURON_LIBRARY op (its inputs: argv's first `kinds.len()`
/// slots).
fn op_args<'a>(argv: &Argv<'a>, kinds: &[ArgKind]) -> Result<Vec<ArgValue<'a>>, Failure> {
    kinds
        .iter()
        .enumerate()
        .map(|(i, kind)| match kind {
            ArgKind::Tensor => Ok(argv.tensor(i, None)?.value()),
            ArgKind::Double => Ok(ArgValue::Double(argv.double(i)?)),
            ArgKind::Long => Ok(ArgValue::Long(argv.long(i)?)),
            ArgKind::Scalar => argv.torch_scalar(i),
        })
        .collect()
}

/// Calls `target` through the engine's one call path, the output landing in the caller's
/// `out`. What core 0 printed reaches the process's stdout and stderr, also when the launch
/// faults.
fn call_into(
    e: &mut Pool,
    target: &Target,
    args: Vec<ArgValue<'_>>,
    output: Output,
    out: &TensorSlot<'_>,
    cores: Option<usize>,
) -> Result<(), Failure> {
    // SAFETY: the output slot is not one of the inputs (the launch FFI's contract).
    let dst = unsafe { out.buffer() };
    let called = e.call(Call {
        target,
        args,
        output,
        to: Destination::Buffer(dst),
        cores,
        options: CallOptions::default(),
    })?;
    super::profile::keep(e, &called.check);
    echo(&called.run.stdout, &called.run.stderr);
    super::checks::checked(&called.check)
}

/// The op a v2 call names, with its argument kinds.
fn op_target(e: &Pool, op: &str, stream: i64) -> Result<(Target, Vec<ArgKind>), Failure> {
    ready_for_launch(e, stream)?;
    if e.loaded.neuron_library().is_none() {
        return Err(Failure::new(
            Code::Kernel,
            "the registered library has no NEURON_LIBRARY ops (use nrt_pool_launch_v1)",
        ));
    }
    let target = e.target(op)?;
    let kinds = target.op_args().unwrap_or_default().to_vec();
    Ok((target, kinds))
}

/// The output of NEURON_LIBRARY op `op` ("NS::OP" or "OP") for these inputs, from its
/// shape function: fills `out`'s dtype, rank and shape (its data and location untouched).
/// `argv` holds the inputs only, one slot per op argument (see `nrt_pool_launch_v2`). The
/// calling thread's next `nrt_pool_launch_v2` of this op with the same inputs (dtypes,
/// shapes, locations, scalar values) and this output takes the result as it is: the shape
/// function runs and the inputs are checked once per output + launch pair.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_op_output_v2(
    op: *const c_char,
    argv: *const *mut c_void,
    out: *mut nrt_pool_tensor,
) -> i32 {
    guard(|| {
        status(with_engine(|e| {
            let name = cstr(op, "op")?;
            let (target, kinds) = op_target(e, name, 0)?;
            // SAFETY: one slot per op argument (C contract).
            let argv = unsafe { Argv::new(argv, kinds.len(), name) }?;
            if out.is_null() {
                return Err(Failure::argument("out is NULL"));
            }
            let args = op_args(&argv, &kinds)?;
            let inputs = pairs::ShapeInputs::of(&args);
            let spec = e.output(&target, args, Output::Derive)?;
            pairs::keep(name, inputs, &spec);
            // SAFETY: `out` is a writable nrt_pool_tensor (C contract; checked non-NULL).
            let o = unsafe { &mut *out };
            o.dtype = spec.dtype.isa();
            o.rank = spec.shape.len() as u32;
            o.shape = [0; 8];
            o.shape[..spec.shape.len()].copy_from_slice(&spec.shape);
            Ok(())
        }))
    })
}

/// Launches NEURON_LIBRARY op `op` ("NS::OP" or "OP") on `cores` cores (0: the library's
/// default, 8 for a multicore library, else 1). `argv` holds one slot per op argument in
/// order (tensor: `nrt_pool_tensor *`; double: `double *`; int64_t: `int64_t *`;
/// torch::Scalar: `nrt_pool_scalar *`) and then the output's `nrt_pool_tensor *`, whose
/// dtype and shape must be the shape function's (`nrt_pool_op_output_v2`: after it, on the
/// same thread with the same inputs and output, the shape function does not run again).
/// Stream and device as for `nrt_pool_launch_v1`.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_launch_v2(
    op: *const c_char,
    cores: u32,
    argv: *const *mut c_void,
    stream: i64,
    device: i32,
) -> i32 {
    guard(|| {
        status(validate_device(device).and_then(|()| {
            with_engine(|e| {
                let name = cstr(op, "op")?;
                let (target, kinds) = op_target(e, name, stream)?;
                // SAFETY: one slot per op argument, then the output's (C contract).
                let argv = unsafe { Argv::new(argv, kinds.len() + 1, name) }?;
                let args = op_args(&argv, &kinds)?;
                let out = argv.output(kinds.len(), None)?;
                let given = out.spec();
                let output = match pairs::known(name, &args, &given) {
                    Some(known) => Output::Derived(known, Arguments::Validated),
                    None => Output::Stated(given),
                };
                let cores = (cores != 0).then_some(cores as usize);
                call_into(e, &target, args, output, &out, cores)
            })
        }))
    })
}
