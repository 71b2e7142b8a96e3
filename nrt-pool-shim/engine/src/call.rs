//! The one call path (issue #26). A front end (the launch FFI, the CLI, Python) names a
//! kernel or a NEURON_LIBRARY op, gives the argument values as it has them and says where
//! the output goes; the engine does the rest once: it resolves the target, converts the
//! values (doubles travel as f32: the device has no 64-bit float, D44), checks them, finds
//! the output (the op's shape function, run once; the kernel's schema; or the caller's
//! word for a library that carries neither), places everything and runs the launch.

use super::run::Sink;
use super::*;

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
    /// launch): not derived again, so an op's shape function does not run again.
    Known(OutputSpec),
}

/// A call of a kernel or an op.
#[derive(Debug)]
pub struct Call<'a> {
    /// A kernel's name, or an op's `NS::OP` or `OP`.
    pub target: &'a str,
    pub args: Vec<ArgValue<'a>>,
    pub output: Output,
    pub to: Destination<'a>,
    /// Cores to run on (1-8); `None`: the library's default ([`PoolEngine::default_cores`]).
    pub cores: Option<usize>,
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
    /// The cores it ran on.
    pub cores: usize,
}

impl ArgValue<'_> {
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

impl PoolEngine {
    /// Calls a kernel or an op (see [`Call`]); argument device tensors this call makes are
    /// freed when it ends, whatever happened.
    pub fn call(&mut self, call: Call<'_>) -> Result<Called, EmuError> {
        let start = Instant::now();
        self.with_temporaries(|e| e.call_in(call, start))
    }

    /// The output a call of `target` with these arguments would give (the op's shape
    /// function, or the kernel's schema), without running it; no tensor data is placed.
    pub fn output(
        &mut self,
        target: &str,
        args: Vec<ArgValue<'_>>,
    ) -> Result<OutputSpec, EmuError> {
        let kernel = self.kernel_name(target)?;
        if args.len() > MAX_ARGS {
            return Err(EmuError::TooManyArgs { n: args.len() });
        }
        let args: Vec<LaunchArg> = args
            .into_iter()
            .map(|a| match a.scalar() {
                Ok(s) => s,
                // A shape function sees dtypes and shapes only.
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
                Err(_) => unreachable!("scalars converted above"),
            })
            .collect();
        self.output_of(&kernel, &args, Output::Find)
    }

    fn call_in(&mut self, call: Call<'_>, start: Instant) -> Result<Called, EmuError> {
        let Call {
            target,
            args,
            output,
            to,
            cores,
        } = call;
        let kernel = self.kernel_name(target)?;
        let cores = cores.unwrap_or_else(|| self.default_cores());
        if !(1..=CORES).contains(&cores) {
            return Err(EmuError::Cores(cores));
        }
        if args.len() > MAX_ARGS {
            return Err(EmuError::TooManyArgs { n: args.len() });
        }
        let mut launch_args = Vec::with_capacity(args.len());
        for (i, a) in args.into_iter().enumerate() {
            launch_args.push(self.launch_arg(&kernel, i, a)?);
        }
        let spec_source = if self.neuron_library().is_some() {
            "shape function"
        } else {
            "schema"
        };
        let spec = self.output_of(&kernel, &launch_args, output)?;
        tensor::check_rank(&spec.shape).map_err(|e| named("the output", e.into()))?;
        let sink = match to {
            Destination::Host => Sink::Host,
            Destination::Device(ref d) => {
                if (d.dtype, d.shape.as_slice()) != (spec.dtype, spec.shape.as_slice()) {
                    return Err(EmuError::Output {
                        target: target.into(),
                        why: format!(
                            "the destination is {} {:?}; the {} gives {:?} ({})",
                            d.dtype, d.shape, spec_source, spec.shape, spec.dtype
                        ),
                    });
                }
                Sink::Device(d)
            }
            Destination::Buffer(dst) => {
                let want = tensor::byte_len(&spec.shape, spec.dtype);
                if want != Some(dst.len() as u64) {
                    return Err(EmuError::Argument {
                        what: "the output buffer".into(),
                        source: TensorError::Size {
                            dtype: spec.dtype,
                            shape: spec.shape.clone(),
                            want: want.unwrap_or(u64::MAX),
                            got: dst.len() as u64,
                        },
                    });
                }
                Sink::Buffer(dst)
            }
        };
        let (output, run, phases) =
            self.run_checked(&kernel, &launch_args, &spec, cores, sink, start)?;
        Ok(Called {
            spec,
            output,
            run,
            phases,
            cores,
        })
    }

    /// Argument `i` as a launch carries it.
    fn launch_arg(
        &mut self,
        kernel: &str,
        i: usize,
        a: ArgValue<'_>,
    ) -> Result<LaunchArg, EmuError> {
        Ok(match a.scalar() {
            Ok(s) => s,
            Err(ArgValue::Bytes {
                dtype,
                shape,
                data,
                location: Location::Hbm,
            }) => {
                let label = self.arg_label(kernel, i);
                LaunchArg::Device(
                    self.upload_bytes(dtype, shape, data)
                        .map_err(|e| named(&label, e))?,
                )
            }
            Err(ArgValue::Bytes {
                dtype,
                shape,
                data,
                location,
            }) => LaunchArg::Tensor(HostTensor::new(dtype, shape, data.to_vec())?, location),
            Err(ArgValue::Tensor(t, loc)) => LaunchArg::Tensor(t, loc),
            Err(ArgValue::Device(d)) => LaunchArg::Device(d),
            Err(_) => unreachable!("scalars converted above"),
        })
    }

    /// The call's output, from the op's shape function (run once), the kernel's schema, or
    /// the caller; the arguments are checked against the op or schema on the way (once).
    fn output_of(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        given: Output,
    ) -> Result<OutputSpec, EmuError> {
        let (given, trusted) = match given {
            Output::Find => (None, false),
            Output::Check(g) => (Some(g), false),
            Output::Known(g) => (Some(g), true),
        };
        let known = if let Some(lib) = self.neuron_library() {
            let sig = lib.op(kernel).expect("resolved by kernel_name").clone();
            let qualified = format!("{}::{}", lib.namespace, sig.name);
            check_op_args(&qualified, &sig, args)?;
            if trusted {
                return given.ok_or(EmuError::NoLibrary);
            }
            Some(self.run_shape(kernel, &qualified, args)?)
        } else {
            match self.signature(kernel)? {
                Some(sig) => Some(expected_output(sig, args)?),
                None => None,
            }
        };
        match (known, given) {
            (Some(k), None) => Ok(k),
            (None, Some(g)) => Ok(g),
            (None, None) => Err(EmuError::Signature {
                kernel: kernel.into(),
                why: "the library carries no schema; give the output's dtype and shape".into(),
            }),
            (Some(k), Some(g)) => {
                if (k.dtype, &k.shape) != (g.dtype, &g.shape) {
                    let source = if self.neuron_library().is_some() {
                        "shape function"
                    } else {
                        "schema"
                    };
                    return Err(EmuError::Output {
                        target: kernel.into(),
                        why: format!(
                            "the output given is {} {:?}; the {source} gives {:?} ({})",
                            g.dtype, g.shape, k.shape, k.dtype
                        ),
                    });
                }
                Ok(g)
            }
        }
    }
}
