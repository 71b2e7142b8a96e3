//! What a call is made of: a front end (the launch FFI, the CLI, Python)
//! resolves a [`Target`], gives the argument values as it has them and says where the
//! output goes; the engine does the rest once ([`crate::PoolEngine::call`]): it converts
//! the values (doubles travel as f32: the device has no 64-bit float, D44), validates them,
//! finds the output (the op's shape function, run once; the kernel's schema; or the
//! caller's word for a library that carries neither), places everything and runs the
//! launch ([`crate::launch::Launch`]).

use super::check::report::CheckReport;
use super::settings::CallOptions;
use super::target::Target;
use super::tensor::{DType, HostTensor, Location};
use super::values::{DeviceTensor, LaunchArg, LaunchPhases, OutputSpec, Run};

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
    /// Nothing: derive it (the op's shape function, run once, or the kernel's schema).
    Derive,
    /// This dtype, shape and location: required for a library with neither schema nor
    /// shape functions, validated against what they derive otherwise (its location is
    /// kept).
    Stated(OutputSpec),
    /// What [`crate::PoolEngine::output`] derived earlier for these arguments' dtypes and
    /// shapes: not derived again (an op's shape function does not run again); the
    /// arguments as [`Arguments`] says.
    Derived(OutputSpec, Arguments),
}

/// Whether a call's arguments are validated against its target again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arguments {
    /// Yes (a repeated launch with new values).
    Validate,
    /// No: they are the very ones (dtypes, shapes, values) validated when the output was
    /// derived (the launch FFI's `nrt_pool_op_output_v2` + `nrt_pool_launch_v2` pair).
    Validated,
}

impl Destination<'_> {
    /// The same destination lent for one run.
    pub fn reborrow(&mut self) -> Destination<'_> {
        match self {
            Destination::Host => Destination::Host,
            Destination::Device(d) => Destination::Device(d.clone()),
            Destination::Buffer(b) => Destination::Buffer(b),
        }
    }
}

/// A call of a kernel or an op.
#[derive(Debug)]
pub struct Call<'a> {
    /// What it calls ([`crate::PoolEngine::target`]).
    pub target: &'a Target,
    pub args: Vec<ArgValue<'a>>,
    pub output: Output,
    pub to: Destination<'a>,
    /// Cores to run on (1-8); `None`: the library's default ([`crate::Loaded::default_cores`]).
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
    /// What checking mode found ([`crate::Settings::checks`] or the call's own; empty
    /// without checks).
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
    pub(crate) fn scalar(self) -> Result<LaunchArg, Self> {
        match self {
            ArgValue::Double(v) => Ok(LaunchArg::f32(v as f32)),
            ArgValue::Long(v) => Ok(LaunchArg::Scalar(DType::I64, v.to_le_bytes().to_vec())),
            ArgValue::Scalar(dt, b) => Ok(LaunchArg::Scalar(dt, b)),
            other => Err(other),
        }
    }
}

impl ArgValue<'_> {
    /// The argument as a shape function sees it: dtypes and shapes, scalars with values.
    pub(crate) fn for_shape(self) -> LaunchArg {
        match self.scalar() {
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
}
