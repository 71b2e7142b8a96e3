//! The versioned launch FFI (`include/nrt_pool.h`), after the register + launch contract
//! style of seed 004: an ABI-version call, library and per-kernel parameter registration
//! with an append-only kind enum, and `nrt_pool_launch_v1` with a core count, an argv of
//! typed slots, a stream and a device id. New fields come only as new suffixed symbols
//! (`_v2`, ...); old symbols keep their signature and behaviour.
#![allow(clippy::missing_safety_doc, non_camel_case_types)]

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::io::Write;
use std::mem::{offset_of, size_of};

use parking_lot::Mutex;

use super::{guard, last_error_ptr, set_error, Lifecycle, STATE};
use nrt_pool_engine::control::PHASE_KERNEL;
use nrt_pool_engine::schema::{ArgKind, ParamKind};
use nrt_pool_engine::tensor::{DType, Location};
use nrt_pool_engine::{
    ArgValue, Call, CallOptions, Destination, EmuError, Output, OutputSpec, PoolEngine,
};

/// The contract version compiled into this library. History: 1, the register + launch
/// trio with `nrt_pool_launch_v1`; 2, `nrt_pool_op_output_v2` and `nrt_pool_launch_v2`
/// for NEURON_LIBRARY ops by `NS::OP`; 3, `nrt_pool_set_checks` and
/// `NRT_POOL_CHECK_FOUND`.
pub const NRT_POOL_ABI_VERSION: i32 = 3;

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

pub(crate) fn with_engine<R>(
    f: impl FnOnce(&mut PoolEngine) -> Result<R, (i32, String)>,
) -> Result<R, i32> {
    let mut s = STATE.lock();
    let Lifecycle::Initialized(e) = &mut *s else {
        set_error("the engine is not initialised (nrt_pool_init)", false);
        return Err(NRT_POOL_ERR_STATE);
    };
    f(e).map_err(|(rc, msg)| {
        set_error(msg, false);
        rc
    })
}

pub(crate) fn cstr<'a>(p: *const c_char, what: &str) -> Result<&'a str, (i32, String)> {
    if p.is_null() {
        return Err((NRT_POOL_ERR_ARGUMENT, format!("{what} is NULL")));
    }
    // SAFETY: non-NULL C strings from the caller (C contract).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| (NRT_POOL_ERR_ARGUMENT, format!("{what} is not UTF-8")))
}

pub(crate) fn code(rc: Result<(), i32>) -> i32 {
    rc.err().unwrap_or(NRT_POOL_OK)
}

/// Loads an op library built for the host (replacing any loaded one) and runs its start
/// code once to learn its kernels.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_register_library(path: *const c_char) -> i32 {
    guard(|| {
        code(with_engine(|e| {
            let p = std::path::Path::new(cstr(path, "path")?);
            e.load(p)
                // Any failure to load or start it is LIBRARY (what start code printed
                // before faulting is echoed).
                .map_err(|err| (NRT_POOL_ERR_LIBRARY, failed(err).1))?;
            // --check=parity compares with the other build beside it (D93).
            let o = nrt_pool_open::OpenOptions::from_env("nrt_pool")
                .map_err(|err| (NRT_POOL_ERR_ARGUMENT, err.to_string()))?;
            let isa = nrt_pool_open::Isa::of(p);
            e.set_parity_twin(nrt_pool_open::parity_twin(p, isa, &o));
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
        let r = (|| {
            let name = cstr(kernel, "kernel")?;
            let bad = |m: String| (NRT_POOL_ERR_ARGUMENT, format!("{name}: {m}"));
            if !(1..=(nrt_pool_engine::MAX_ARGS as i32 + 1)).contains(&count)
                || kind.is_null()
                || dtype.is_null()
            {
                return Err(bad(format!(
                    "count {count} (1 to {} including the output) or NULL arrays",
                    nrt_pool_engine::MAX_ARGS + 1
                )));
            }
            // SAFETY: `count` readable entries each (C contract; count checked positive).
            let (k, d) = unsafe {
                (
                    std::slice::from_raw_parts(kind, count as usize),
                    std::slice::from_raw_parts(dtype, count as usize),
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
        })();
        match r {
            Ok(()) => NRT_POOL_OK,
            Err((rc, m)) => {
                set_error(m, false);
                rc
            }
        }
    })
}

/// Why an initialised engine has no op library.
fn no_library_reason(e: &PoolEngine) -> String {
    let img = e.image();
    if !img.registered {
        return "no op library: register one with nrt_set_pool_eng_ucode before nrt_pool_init, \
                or with nrt_pool_register_library (the emulator has no stock Pool ucode)"
            .into();
    }
    let what = match img.iram.get(..20) {
        Some(h) if &h[..4] == b"\x7fELF" => format!(
            "an ELF{} image for machine {}",
            if h[4] == 1 { "32" } else { "64" },
            if h[5] == 2 {
                u16::from_be_bytes([h[18], h[19]])
            } else {
                u16::from_le_bytes([h[18], h[19]])
            }
        ),
        _ => "not an ELF image".into(),
    };
    format!(
        "the registered Pool image ({} bytes of IRAM, {what}) is not an op library built for \
         this host: the emulator runs host builds (nrt-pool build), not device code",
        img.iram.len()
    )
}

/// The metadata for a kernel: registered, or derived from the library's schema.
fn params_for(e: &PoolEngine, kernel: &str) -> Option<Vec<(u8, u8)>> {
    if let Some(p) = PARAMS.lock().as_ref().and_then(|m| m.get(kernel)) {
        return Some(p.clone());
    }
    let sig = e.library()?.signature(kernel)?;
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

/// Reads a tensor slot.
///
/// # Safety
/// `slot` points at an `nrt_pool_tensor` whose data spans the shape's bytes (C contract).
unsafe fn read_tensor_slot(
    slot: *const c_void,
    dtype: DType,
    i: usize,
) -> Result<(&'static nrt_pool_tensor, Vec<u64>, Location), String> {
    // SAFETY: function contract.
    let t = unsafe { &*(slot as *const nrt_pool_tensor) };
    if t.dtype != dtype.isa() {
        return Err(format!(
            "argument {i}: dtype code {} but the kernel takes {dtype} ({})",
            t.dtype,
            dtype.isa()
        ));
    }
    if t.rank == 0 || t.rank > 8 || t.data.is_null() {
        return Err(format!(
            "argument {i}: rank {} (1 to 8) or NULL data",
            t.rank
        ));
    }
    let loc = match t.location {
        NRT_POOL_LOCATION_HBM => Location::Hbm,
        NRT_POOL_LOCATION_SBUF => Location::Sbuf,
        x => return Err(format!("argument {i}: location {x}")),
    };
    let shape = t.shape[..t.rank as usize].to_vec();
    // Before any byte count is computed from the caller's shape: no zero dimension, and a
    // size that fits (the data slice below is that long).
    nrt_pool_engine::tensor::check_rank(&shape).map_err(|e| format!("argument {i}: {e}"))?;
    Ok((t, shape, loc))
}

/// The launch entry points' device argument: -1 or 0 to the device count - 1; otherwise
/// NRT_POOL_ERR_DEVICE, reported.
fn check_device(device: i32) -> Result<(), i32> {
    if device < -1 || device >= nrt_pool_device_count() {
        set_error(
            format!(
                "device {device} is out of range (-1, or 0 to {}): nothing launched",
                nrt_pool_device_count() - 1
            ),
            true,
        );
        return Err(NRT_POOL_ERR_DEVICE);
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
        if let Err(code) = check_device(device) {
            return code;
        }
        code(with_engine(|e| {
            let name = cstr(kernel, "kernel")?;
            let params = launch_target(e, name, stream)?;
            if argv.is_null() {
                return Err((NRT_POOL_ERR_ARGUMENT, "argv is NULL".into()));
            }
            // SAFETY: one slot per registered parameter (C contract).
            let (args, out_slot, output) = unsafe { read_argv(argv, &params, name) }?;
            // SAFETY: the OUTPUT slot's data spans the output's bytes (C contract).
            unsafe {
                call_into(
                    e,
                    name,
                    args,
                    output,
                    out_slot.data.cast::<u8>(),
                    Some(cores as usize),
                )
            }
        }))
    })
}

pub(crate) type Failed = (i32, String);

/// What every launch needs first: the default stream and a registered library.
fn ready_for_launch(e: &PoolEngine, stream: i64) -> Result<(), Failed> {
    if stream != 0 {
        return Err((
            NRT_POOL_ERR_ARGUMENT,
            format!("stream {stream}: only the default stream 0 exists"),
        ));
    }
    if e.library().is_none() {
        return Err((NRT_POOL_ERR_LIBRARY, no_library_reason(e)));
    }
    Ok(())
}

/// The kernel a launch names, on the default stream, with its parameter metadata.
fn launch_target(e: &PoolEngine, name: &str, stream: i64) -> Result<Vec<(u8, u8)>, Failed> {
    ready_for_launch(e, stream)?;
    if !e.kernels().iter().any(|k| k == name) {
        return Err((
            NRT_POOL_ERR_KERNEL,
            format!(
                "unknown kernel '{name}'; the library registers: {}",
                e.kernels().join(", ")
            ),
        ));
    }
    params_for(e, name).ok_or((
        NRT_POOL_ERR_KERNEL,
        format!("{name}: no parameter metadata (nrt_pool_register_kernel_params)"),
    ))
}

/// The launch arguments and the output slot from the caller's argv (the tensors' bytes
/// borrowed from the caller for the call).
///
/// # Safety
/// `argv` holds one valid slot per parameter in `params` (the launch FFI's contract).
unsafe fn read_argv<'a>(
    argv: *const *mut c_void,
    params: &[(u8, u8)],
    name: &str,
) -> Result<(Vec<ArgValue<'a>>, &'a nrt_pool_tensor, OutputSpec), Failed> {
    let arg = |m: String| (NRT_POOL_ERR_ARGUMENT, format!("{name}: {m}"));
    let mut args = Vec::new();
    let mut output = None;
    for (i, &(kind, code)) in params.iter().enumerate() {
        let dtype = DType::from_isa(code).ok_or_else(|| arg(format!("dtype code {code}")))?;
        // SAFETY: one slot per registered parameter (function contract).
        let slot = unsafe { *argv.add(i) };
        if slot.is_null() {
            return Err(arg(format!("argument {i} is NULL")));
        }
        if kind == NRT_POOL_PARAM_SCALAR {
            // SAFETY: the slot holds one value of the dtype (C contract).
            let b = unsafe { std::slice::from_raw_parts(slot as *const u8, dtype.size()) };
            args.push(ArgValue::Scalar(dtype, b.to_vec()));
            continue;
        }
        // SAFETY: a tensor slot (C contract).
        let (t, shape, loc) = unsafe { read_tensor_slot(slot, dtype, i) }.map_err(arg)?;
        if kind == NRT_POOL_PARAM_OUTPUT {
            output = Some((
                t,
                OutputSpec {
                    dtype,
                    shape,
                    location: loc,
                },
            ));
            continue;
        }
        // SAFETY: the tensor's bytes (C contract; the shape was checked by read_tensor_slot).
        args.push(unsafe { tensor_bytes(t, dtype, shape, loc) }.map_err(arg)?);
    }
    let (slot, spec) = output.ok_or_else(|| arg("no OUTPUT parameter".into()))?;
    Ok((args, slot, spec))
}

/// A tensor slot's bytes as a call argument, borrowed from the caller.
///
/// # Safety
/// `t.data` spans the tensor's bytes (the launch FFI's contract).
unsafe fn tensor_bytes<'a>(
    t: &nrt_pool_tensor,
    dtype: DType,
    shape: Vec<u64>,
    location: Location,
) -> Result<ArgValue<'a>, String> {
    let n = nrt_pool_engine::tensor::byte_len(&shape, dtype)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("shape {shape:?} is too large"))?;
    // SAFETY: the function's contract.
    let data = unsafe { std::slice::from_raw_parts(t.data as *const u8, n) };
    Ok(ArgValue::Bytes {
        dtype,
        shape,
        data,
        location,
    })
}

/// Calls `target` through the engine's one call path, the output landing in the caller's
/// `out`. What core 0 printed reaches the process's stdout and stderr, also when the launch
/// faults.
///
/// # Safety
/// `out` is writable for the output's bytes (the launch FFI's contract).
unsafe fn call_into(
    e: &mut PoolEngine,
    target: &str,
    args: Vec<ArgValue<'_>>,
    output: OutputSpec,
    out: *mut u8,
    cores: Option<usize>,
) -> Result<(), Failed> {
    let n = nrt_pool_engine::tensor::byte_len(&output.shape, output.dtype)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            (
                NRT_POOL_ERR_ARGUMENT,
                format!(
                    "{target}: the output's shape {:?} is too large",
                    output.shape
                ),
            )
        })?;
    // SAFETY: the caller's contract: `out` spans the output's bytes.
    let dst = unsafe { std::slice::from_raw_parts_mut(out, n) };
    let called = e
        .call(Call {
            target,
            args,
            output: Output::Check(output),
            to: Destination::Buffer(dst),
            cores,
            options: CallOptions::default(),
        })
        .map_err(failed)?;
    super::profile::keep(e);
    echo(&called.run.stdout, &called.run.stderr);
    super::checks::checked(&called.check)
}

/// The launch FFI's code and message for a launch that failed (a fault's output echoed).
fn failed(err: EmuError) -> Failed {
    if let EmuError::Fault(f) | EmuError::StartFault { fault: f, .. } = &err {
        echo(&f.stdout, &f.stderr);
    }
    (error_code(&err), err.to_string())
}

/// Kernel output to the process's streams, byte for byte (best effort, as printf is).
fn echo(stdout: &[u8], stderr: &[u8]) {
    let mut out = std::io::stdout();
    let _ = out.write_all(stdout);
    let _ = out.flush();
    let _ = std::io::stderr().write_all(stderr);
}

/// The call arguments of a NEURON_LIBRARY op from its argv (inputs only): tensor slots
/// point at `nrt_pool_tensor`, `double` slots at a double, `int64_t` slots at an int64_t,
/// `torch::Scalar` slots at an `nrt_pool_scalar`.
///
/// # Safety
/// `argv` holds one valid slot per op argument (the launch FFI's contract).
unsafe fn read_op_argv<'a>(
    argv: *const *mut c_void,
    kinds: &[ArgKind],
    name: &str,
) -> Result<Vec<ArgValue<'a>>, Failed> {
    let arg = |m: String| (NRT_POOL_ERR_ARGUMENT, format!("{name}: {m}"));
    let mut args = Vec::with_capacity(kinds.len());
    for (i, kind) in kinds.iter().enumerate() {
        // SAFETY: one slot per op argument (function contract).
        let slot = unsafe { *argv.add(i) };
        if slot.is_null() {
            return Err(arg(format!("argument {i} is NULL")));
        }
        args.push(match kind {
            ArgKind::Tensor => {
                // SAFETY: a tensor slot (C contract).
                let t = unsafe { &*(slot as *const nrt_pool_tensor) };
                let dtype = DType::from_isa(t.dtype)
                    .ok_or_else(|| arg(format!("argument {i}: dtype code {}", t.dtype)))?;
                // SAFETY: as above; the slot's shape and data are checked there.
                let (t, shape, loc) = unsafe { read_tensor_slot(slot, dtype, i) }.map_err(arg)?;
                // SAFETY: the tensor's bytes (C contract; the shape was checked).
                unsafe { tensor_bytes(t, dtype, shape, loc) }.map_err(arg)?
            }
            // SAFETY: a double slot (C contract).
            ArgKind::Double => ArgValue::Double(unsafe { *(slot as *const f64) }),
            // SAFETY: an int64_t slot (C contract).
            ArgKind::Long => ArgValue::Long(unsafe { *(slot as *const i64) }),
            ArgKind::Scalar => {
                // SAFETY: an nrt_pool_scalar slot (C contract).
                let s = unsafe { &*(slot as *const nrt_pool_scalar) };
                if s.is_integral != 0 {
                    ArgValue::Long(s.integer)
                } else {
                    ArgValue::Double(s.floating)
                }
            }
        });
    }
    Ok(args)
}

/// The op a v2 call names, with its argument kinds.
fn op_target(e: &PoolEngine, op: &str, stream: i64) -> Result<Vec<ArgKind>, Failed> {
    ready_for_launch(e, stream)?;
    let lib = e.neuron_library().ok_or_else(|| {
        (
            NRT_POOL_ERR_KERNEL,
            "the registered library has no NEURON_LIBRARY ops (use nrt_pool_launch_v1)".to_string(),
        )
    })?;
    let sig = lib.op(op).ok_or_else(|| {
        let known: Vec<String> = lib
            .ops
            .iter()
            .map(|o| format!("{}::{}", lib.namespace, o.name))
            .collect();
        (
            NRT_POOL_ERR_KERNEL,
            format!(
                "unknown op '{op}'; the library registers: {}",
                known.join(", ")
            ),
        )
    })?;
    Ok(sig.args.clone())
}

/// The output of NEURON_LIBRARY op `op` ("NS::OP" or "OP") for these inputs, from its
/// shape function: fills `out`'s dtype, rank and shape (its data and location untouched).
/// `argv` holds the inputs only, one slot per op argument (see `nrt_pool_launch_v2`).
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_op_output_v2(
    op: *const c_char,
    argv: *const *mut c_void,
    out: *mut nrt_pool_tensor,
) -> i32 {
    guard(|| {
        code(with_engine(|e| {
            let name = cstr(op, "op")?;
            let kinds = op_target(e, name, 0)?;
            if argv.is_null() && !kinds.is_empty() {
                return Err((NRT_POOL_ERR_ARGUMENT, "argv is NULL".into()));
            }
            if out.is_null() {
                return Err((NRT_POOL_ERR_ARGUMENT, "out is NULL".into()));
            }
            // SAFETY: one slot per op argument (C contract).
            let args = unsafe { read_op_argv(argv, &kinds, name) }?;
            let spec = e.output(name, args, Output::Find).map_err(failed)?;
            // SAFETY: `out` is a writable nrt_pool_tensor (C contract).
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
/// dtype and shape must be the shape function's (`nrt_pool_op_output_v2`). Stream and
/// device as for `nrt_pool_launch_v1`.
#[no_mangle]
pub unsafe extern "C" fn nrt_pool_launch_v2(
    op: *const c_char,
    cores: u32,
    argv: *const *mut c_void,
    stream: i64,
    device: i32,
) -> i32 {
    guard(|| {
        if let Err(code) = check_device(device) {
            return code;
        }
        code(with_engine(|e| {
            let name = cstr(op, "op")?;
            let kinds = op_target(e, name, stream)?;
            if argv.is_null() {
                return Err((NRT_POOL_ERR_ARGUMENT, "argv is NULL".into()));
            }
            // SAFETY: one slot per op argument, then the output's (C contract).
            let args = unsafe { read_op_argv(argv, &kinds, name) }?;
            // SAFETY: as above.
            let out_slot = unsafe { *argv.add(kinds.len()) };
            if out_slot.is_null() {
                return Err((
                    NRT_POOL_ERR_ARGUMENT,
                    format!("{name}: the output slot is NULL"),
                ));
            }
            // SAFETY: a tensor slot (C contract).
            let code = unsafe { (*(out_slot as *const nrt_pool_tensor)).dtype };
            let dtype = DType::from_isa(code).ok_or_else(|| {
                (
                    NRT_POOL_ERR_ARGUMENT,
                    format!("{name}: the output: dtype code {code}"),
                )
            })?;
            // SAFETY: as above.
            let (t, shape, location) = unsafe { read_tensor_slot(out_slot, dtype, kinds.len()) }
                .map_err(|m| (NRT_POOL_ERR_ARGUMENT, format!("{name}: the output: {m}")))?;
            let output = OutputSpec {
                dtype,
                shape,
                location,
            };
            let cores = (cores != 0).then_some(cores as usize);
            // SAFETY: the output slot's data spans the output's bytes (C contract; its dtype
            // and shape are checked against the shape function's by the engine).
            unsafe { call_into(e, name, args, output, t.data.cast::<u8>(), cores) }
        }))
    })
}

/// The launch FFI's code for an engine error, as the header documents them: a kernel's
/// (or shape function's) fault is FAULT; an op library that cannot be loaded or whose start
/// code fails (also in a core started for this launch) is LIBRARY, as for
/// `nrt_pool_register_library`; an unknown kernel is KERNEL; the rest are the call's
/// arguments.
fn error_code(err: &EmuError) -> i32 {
    match err {
        // A core started for this launch that faulted loading or starting the library.
        EmuError::Fault(f) if f.phase != PHASE_KERNEL => NRT_POOL_ERR_LIBRARY,
        EmuError::Fault(_) => NRT_POOL_ERR_FAULT,
        EmuError::UnknownKernel { .. } => NRT_POOL_ERR_KERNEL,
        EmuError::Library(_)
        | EmuError::NoLibrary
        | EmuError::StartFault { .. }
        | EmuError::Entry { .. }
        | EmuError::Registration { .. } => NRT_POOL_ERR_LIBRARY,
        _ => NRT_POOL_ERR_ARGUMENT,
    }
}
