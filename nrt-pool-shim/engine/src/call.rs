//! The one call path (issue #26). A front end (the launch FFI, the CLI, Python) names a
//! kernel or a NEURON_LIBRARY op, gives the argument values as it has them and says where
//! the output goes; the engine does the rest once: it resolves the target, converts the
//! values (doubles travel as f32: the device has no 64-bit float, D44), checks them, finds
//! the output (the op's shape function, run once; the kernel's schema; or the caller's
//! word for a library that carries neither), places everything and runs the launch.

use super::*;
use crate::check::parity::{self, ParityInputs};
use crate::check::{reborrow, Check, CheckReport};

/// One argument, as a front end holds it.
#[derive(Clone, Debug)]
pub enum ArgValue<'a> {
    /// A tensor's bytes, the caller's: an HBM tensor is copied once into a device tensor
    /// freed when the call ends; an SBUF tensor is placed with the launch.
    Bytes {
        dtype: DType,
        shape: Vec<u64>,
        data: &'a [u8],
        location: Location,
    },
    /// A host tensor, placed with the launch.
    Tensor(HostTensor, Location),
    /// A tensor already in device memory (passed by address).
    Device(DeviceTensor),
    /// A scalar of a given dtype (a schema kernel's parameter), its little-endian bytes.
    Scalar(DType, Vec<u8>),
    /// An op's `double`, or a floating `torch::Scalar`: passed as an f32 (D44).
    Double(f64),
    /// An op's `int64_t`, or an integral `torch::Scalar`.
    Long(i64),
}

/// Where the output goes.
#[derive(Debug)]
pub enum Destination<'a> {
    /// Back to the host: [`Called::output`].
    Host,
    /// Into this device tensor (dtype and shape must be the output's); nothing is copied.
    Device(DeviceTensor),
    /// Into the caller's buffer, which holds exactly the output's bytes.
    Buffer(&'a mut [u8]),
}

/// What the caller says of the output.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Nothing: the op's shape function (run once) or the kernel's schema gives it.
    Find,
    /// This dtype, shape and location: required for a library with neither schema nor
    /// shape functions, checked against them otherwise (its location is kept).
    Check(OutputSpec),
    /// What [`PoolEngine::output`] gave for these same arguments earlier (a repeated
    /// launch): not derived again, so an op's shape function does not run again; the
    /// arguments are still checked against the op.
    Known(OutputSpec),
    /// The second half of a prepared pair: what [`PoolEngine::output`] gave for arguments
    /// of the very same dtypes, shapes and values, checked then (the launch FFI's
    /// `nrt_pool_op_output_v2` + `nrt_pool_launch_v2`): neither checked nor derived again.
    Prepared(OutputSpec),
}

/// A call of a kernel or an op.
#[derive(Debug)]
pub struct Call<'a> {
    /// A kernel's name, or an op's `NS::OP` or `OP`.
    pub target: &'a str,
    pub args: Vec<ArgValue<'a>>,
    pub output: Output,
    pub to: Destination<'a>,
    /// Cores to run on (1-8); `None`: the library's default ([`Loaded::default_cores`](crate::Loaded::default_cores)).
    pub cores: Option<usize>,
    /// Checks, profile, debugger, timeout, stdio: each left open takes the engine's.
    pub options: CallOptions,
}

/// What a call did.
#[derive(Debug)]
pub struct Called {
    /// The output's dtype, shape and location.
    pub spec: OutputSpec,
    /// The output, for [`Destination::Host`].
    pub output: Option<HostTensor>,
    /// Core 0's output, each core's result, the time taken.
    pub run: Run,
    pub phases: LaunchPhases,
    /// What the checks found ([`Settings::checks`](crate::Settings::checks) or the call's own; empty without checks).
    pub check: CheckReport,
}

impl ArgValue<'_> {
    /// The same argument, its host tensor's data borrowed instead of copied (a value passed
    /// to several calls: `PoolEngine::output`, then repeated launches).
    pub fn view(&self) -> ArgValue<'_> {
        match self {
            ArgValue::Tensor(t, location) => ArgValue::Bytes {
                dtype: t.dtype,
                shape: t.shape.clone(),
                data: &t.data,
                location: *location,
            },
            ArgValue::Bytes {
                dtype,
                shape,
                data,
                location,
            } => ArgValue::Bytes {
                dtype: *dtype,
                shape: shape.clone(),
                data,
                location: *location,
            },
            ArgValue::Device(d) => ArgValue::Device(d.clone()),
            ArgValue::Scalar(dt, b) => ArgValue::Scalar(*dt, b.clone()),
            ArgValue::Double(v) => ArgValue::Double(*v),
            ArgValue::Long(v) => ArgValue::Long(*v),
        }
    }

    /// A scalar value as the device receives it: the one place the f32 rule is applied.
    fn scalar(self) -> Result<LaunchArg, Self> {
        match self {
            ArgValue::Double(v) => Ok(LaunchArg::f32(v as f32)),
            ArgValue::Long(v) => Ok(LaunchArg::Scalar(DType::I64, v.to_le_bytes().to_vec())),
            ArgValue::Scalar(dt, b) => Ok(LaunchArg::Scalar(dt, b)),
            other => Err(other),
        }
    }
}

/// Calls a kernel or an op (see [`Call`]); argument device tensors this call makes are
/// freed when it ends, whatever happened.
pub fn call(e: &mut PoolEngine, call: Call<'_>) -> Result<Called, EmuError> {
    let start = Instant::now();
    let s = e.defaults.for_call(&call.options);
    // The parity check runs the call again from the same inputs: taken before the
    // launch, which may write its device tensors.
    // (Only where there is another build to compare with: a device tensor's copy is
    // not made for nothing.)
    let parity = (s.checks.has(Check::Parity) && parity::has_parity_twin(e))
        .then(|| parity::parity_inputs(e, &call.args));
    let (target, cores) = (call.target, call.cores);
    let r = e.with_temporaries(|e| call_in(e, call, start, parity.as_ref(), &s));
    match (r, parity) {
        // A fault here that the other build does not give is named as such.
        (Err(EmuError::Fault(mut f)), Some(inputs)) => {
            let cores = cores.unwrap_or_else(|| e.loaded.default_cores());
            parity::parity_of_fault(e, target, &inputs, cores, &s, &mut f);
            Err(EmuError::Fault(f))
        }
        (r, _) => r,
    }
}

/// The output a call of `target` with these arguments gives (the op's shape function,
/// the kernel's schema, or `given` for a library with neither; `given` is checked
/// against the first two), without running it: no tensor data is placed.
pub fn output(
    e: &mut PoolEngine,
    target: &str,
    args: Vec<ArgValue<'_>>,
    given: Output,
) -> Result<OutputSpec, EmuError> {
    let kernel = e.loaded.kernel_name(target)?;
    check_counts(1, args.len())?;
    let args: Vec<LaunchArg> = args.into_iter().map(shape_arg).collect();
    output_of(e, &kernel, &args, given)
}

/// A call's first half, done once: the kernel it names, its arguments as a launch carries
/// them (converted, checked, tensors copied in), its output and cores, its settings. The
/// unchecked, checked and inspecting runs all take it.
pub(crate) struct Prepared<'a> {
    pub kernel: String,
    pub args: Vec<LaunchArg>,
    pub spec: OutputSpec,
    pub cores: usize,
    pub settings: &'a Settings,
    /// The caller's bytes of each tensor the call copied into device memory: a checked
    /// launch restores those from here, with no copy of its own.
    pub sources: Vec<Option<&'a [u8]>>,
    /// When the call started (its phases count from here).
    pub start: Instant,
}

/// The first half of `call`: its target resolved, its arguments converted and checked
/// against the op or schema, its output found, its destination checked (once).
fn prepare<'p, 'c: 'p>(
    e: &mut PoolEngine,
    call: &mut Call<'c>,
    settings: &'p Settings,
    start: Instant,
) -> Result<Prepared<'p>, EmuError> {
    let kernel = e.loaded.kernel_name(call.target)?;
    let cores = call.cores.unwrap_or_else(|| e.loaded.default_cores());
    check_counts(cores, call.args.len())?;
    let sources = call
        .args
        .iter()
        .map(|a| match a {
            ArgValue::Bytes {
                data,
                location: Location::Hbm,
                ..
            } => Some(*data),
            _ => None,
        })
        .collect();
    let mut args = Vec::with_capacity(call.args.len());
    for (i, a) in std::mem::take(&mut call.args).into_iter().enumerate() {
        args.push(launch_arg(e, &kernel, i, a)?);
    }
    let output = std::mem::replace(&mut call.output, Output::Find);
    let spec = output_of(e, &kernel, &args, output)?;
    check_destination(e, &kernel, &spec, &call.to)?;
    Ok(Prepared {
        kernel,
        args,
        spec,
        cores,
        settings,
        sources,
        start,
    })
}

fn call_in(
    e: &mut PoolEngine,
    mut call: Call<'_>,
    start: Instant,
    parity: Option<&ParityInputs<'_>>,
    s: &Settings,
) -> Result<Called, EmuError> {
    let p = prepare(e, &mut call, s, start)?;
    let mut to = call.to;
    let device_out = match &to {
        Destination::Device(d) => Some(d.clone()),
        _ => None,
    };
    let (output, run, phases, mut check) = if s.checks.without(Check::Parity).any() {
        // A race check records one run's accesses: the call's launches share cores
        // that can (D101).
        e.backend.trace_session(s.checks.has(Check::Race));
        let checked = check::run_checking(e, &p, reborrow(&mut to));
        e.backend.trace_session(false);
        checked?
    } else {
        let team = Team::all(p.cores)
            .with_all_stdio(s.all_cores_stdio)
            .with_profile(s.profile);
        let (output, run, phases) =
            run::run_checked(e, &p, team, reborrow(&mut to), Fill::default())?;
        let report = CheckReport {
            checks: s.checks,
            ..CheckReport::default()
        };
        (output, run, phases, report)
    };
    if let (None, true) = (parity, s.checks.has(Check::Parity)) {
        check.notes.push(parity::parity_unavailable(e));
    }
    if let Some(inputs) = parity {
        let mine = delivered(e, &output, &to, device_out.as_ref());
        let this = parity::ThisRun {
            target: call.target,
            output: &mine,
            stdout: &run.stdout,
        };
        parity::check_parity(e, &p, inputs, this, &mut check);
    }
    Ok(Called {
        spec: p.spec,
        output,
        run,
        phases,
        check,
    })
}

/// The output a call names (its destination) against the one it gives: a device tensor
/// of its dtype and shape, a buffer of its bytes.
fn check_destination(
    e: &PoolEngine,
    kernel: &str,
    spec: &OutputSpec,
    to: &Destination<'_>,
) -> Result<(), EmuError> {
    tensor::check_rank(&spec.shape).map_err(|e| named("the output", e.into()))?;
    match to {
        Destination::Device(d) => check_output(e, kernel, spec, d.dtype, &d.shape),
        Destination::Buffer(dst) => {
            let want = tensor::byte_len(&spec.shape, spec.dtype);
            if want == Some(dst.len() as u64) {
                return Ok(());
            }
            Err(EmuError::Argument {
                what: "the output buffer".into(),
                source: TensorError::Size {
                    dtype: spec.dtype,
                    shape: spec.shape.clone(),
                    want: want.unwrap_or(u64::MAX),
                    got: dst.len() as u64,
                },
            })
        }
        Destination::Host => Ok(()),
    }
}

/// What a launch gave, from where it went.
fn delivered(
    e: &PoolEngine,
    output: &Option<HostTensor>,
    to: &Destination<'_>,
    device_out: Option<&DeviceTensor>,
) -> Vec<u8> {
    match (output, to, device_out) {
        (Some(t), _, _) => t.data.clone(),
        (None, Destination::Buffer(b), _) => b.to_vec(),
        (None, _, Some(d)) => e.tensors.device_bytes(d).unwrap_or_default().to_vec(),
        _ => Vec::new(),
    }
}

/// Argument `i` as a launch carries it.
fn launch_arg(
    e: &mut PoolEngine,
    kernel: &str,
    i: usize,
    a: ArgValue<'_>,
) -> Result<LaunchArg, EmuError> {
    let a = match a.scalar() {
        Ok(s) => return Ok(s),
        Err(a) => a,
    };
    let label = e.loaded.arg_label(kernel, i);
    Ok(match a {
        ArgValue::Bytes {
            dtype,
            shape,
            data,
            location: Location::Hbm,
        } => LaunchArg::Device(
            e.tensors
                .upload_bytes(dtype, shape, data)
                .map_err(|e| named(&label, e))?,
        ),
        ArgValue::Bytes {
            dtype,
            shape,
            data,
            location,
        } => LaunchArg::Tensor(
            HostTensor::new(dtype, shape, data.to_vec()).map_err(|e| named(&label, e.into()))?,
            location,
        ),
        ArgValue::Tensor(t, loc) => LaunchArg::Tensor(t, loc),
        ArgValue::Device(d) => LaunchArg::Device(d),
        ArgValue::Scalar(..) | ArgValue::Double(_) | ArgValue::Long(_) => {
            unreachable!("scalars converted above")
        }
    })
}

/// The call's output, from the op's shape function (run once, unless the caller knows
/// it from an earlier [`PoolEngine::output`]), the kernel's schema, or the caller; the
/// arguments are checked against the op or schema on the way (once).
pub(crate) fn output_of(
    e: &mut PoolEngine,
    kernel: &str,
    args: &[LaunchArg],
    given: Output,
) -> Result<OutputSpec, EmuError> {
    let found = if let Some(lib) = e.loaded.neuron_library() {
        // Prepared: the arguments were checked and the shape function ran for these same
        // arguments (once per output + launch pair).
        if let Output::Prepared(g) = given {
            return Ok(g);
        }
        let sig = lib.op(kernel).expect("resolved by kernel_name").clone();
        let qualified = format!("{}::{}", lib.namespace, sig.name);
        check_op_args(&qualified, &sig, args)?;
        if let Output::Known(g) = given {
            return Ok(g);
        }
        Some(shape::run_shape(e, kernel, &qualified, args)?)
    } else {
        match e.loaded.signature(kernel)? {
            Some(sig) => Some(expected_output(sig, args)?),
            None => None,
        }
    };
    match (found, given) {
        (Some(f), Output::Find) => Ok(f),
        (Some(f), Output::Check(g) | Output::Known(g) | Output::Prepared(g)) => {
            check_output(e, kernel, &f, g.dtype, &g.shape)?;
            // The caller's location stands (an output in SBUF).
            Ok(g)
        }
        (None, Output::Check(g) | Output::Known(g) | Output::Prepared(g)) => Ok(g),
        (None, Output::Find) => Err(EmuError::Signature {
            kernel: kernel.into(),
            why: "the library carries no schema; give the output's dtype and shape".into(),
        }),
    }
}

/// The one check of an output a caller names (a dtype and shape, a destination device
/// tensor) against the one the op's shape function or the kernel's schema gives.
pub(crate) fn check_output(
    e: &PoolEngine,
    kernel: &str,
    found: &OutputSpec,
    dtype: DType,
    shape: &[u64],
) -> Result<(), EmuError> {
    if (found.dtype, found.shape.as_slice()) == (dtype, shape) {
        return Ok(());
    }
    let source = if e.loaded.neuron_library().is_some() {
        "shape function"
    } else {
        "schema"
    };
    Err(EmuError::Output {
        target: kernel.into(),
        why: format!(
            "the output is {} {:?}, the launch asked for {dtype} {shape:?}; the {source} gives {:?}",
            found.dtype, found.shape, found.shape
        ),
    })
}

/// A call argument as a shape function sees it: dtypes and shapes, scalars with values.
fn shape_arg(a: ArgValue<'_>) -> LaunchArg {
    match a.scalar() {
        Ok(s) => s,
        Err(ArgValue::Bytes { dtype, shape, .. }) => LaunchArg::Device(DeviceTensor {
            dtype,
            shape,
            soc: 0,
        }),
        Err(ArgValue::Tensor(t, _)) => LaunchArg::Device(DeviceTensor {
            dtype: t.dtype,
            shape: t.shape,
            soc: 0,
        }),
        Err(ArgValue::Device(d)) => LaunchArg::Device(d),
        Err(ArgValue::Scalar(..) | ArgValue::Double(_) | ArgValue::Long(_)) => {
            unreachable!("scalars converted above")
        }
    }
}

/// The counts every launch is checked for: 1 to 8 cores, at most [`MAX_ARGS`] arguments.
pub(crate) fn check_counts(cores: usize, args: usize) -> Result<(), EmuError> {
    if !(1..=CORES).contains(&cores) {
        return Err(EmuError::Cores(cores));
    }
    if args > MAX_ARGS {
        return Err(EmuError::TooManyArgs { n: args });
    }
    Ok(())
}
