//! What a launch is made of: arguments (host tensors, scalars, device tensors), the one
//! output, what comes back, and the validation of arguments against a kernel's signature.

use std::time::Duration;

use customop_abi::descriptor::ArgTensor;

use super::error::EmuError;
use super::schema::{KernelSig, ParamKind, ResultShape};
use super::tensor::{DType, HostTensor, Location};

/// One launch argument.
#[derive(Clone, Debug)]
pub enum LaunchArg {
    Tensor(HostTensor, Location),
    /// A scalar: passed as a 1-element tensor of its type (in HBM).
    Scalar(DType, Vec<u8>),
    /// A tensor already in device memory: passed by address, nothing copied.
    Device(DeviceTensor),
}

/// A tensor kept in device HBM across launches, as a runtime's device tensors are: inputs
/// and outputs of chained launches without host copies.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTensor {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub soc: u64,
}

/// What a launch did besides its output.
#[derive(Clone, Debug)]
pub struct Run {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdio_dropped: u32,
    pub results: Vec<i32>,
    pub elapsed: Duration,
}

impl LaunchArg {
    pub fn f32(v: f32) -> LaunchArg {
        LaunchArg::Scalar(DType::F32, v.to_le_bytes().to_vec())
    }
    pub fn i32(v: i32) -> LaunchArg {
        LaunchArg::Scalar(DType::I32, v.to_le_bytes().to_vec())
    }
    pub fn hbm(t: HostTensor) -> LaunchArg {
        LaunchArg::Tensor(t, Location::Hbm)
    }
}

/// The one output tensor of a launch.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub location: Location,
}

/// A host-copy launch's time by phase (`nrt-pool run --timings`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LaunchPhases {
    /// Checking the launch and copying the inputs into device memory.
    pub place: Duration,
    /// From the go signal to the last core's completion (core start included).
    pub run: Duration,
    /// Copying the output out of device memory.
    pub read: Duration,
}

/// The descriptor of a device tensor (HBM).
pub(crate) fn device_descriptor(d: &DeviceTensor) -> ArgTensor {
    let dims: Vec<u32> = d.shape.iter().map(|&x| x as u32).collect();
    ArgTensor::hbm(d.dtype.isa(), d.soc, &dims)
}

/// Validates arguments against a signature: arity, kinds, dtypes and `like` shapes.
pub fn validate_signature(sig: &KernelSig, args: &[LaunchArg]) -> Result<(), EmuError> {
    let bad = |why: String| EmuError::Signature {
        kernel: sig.name.clone(),
        why,
    };
    if args.len() != sig.params.len() {
        return Err(bad(format!(
            "takes {} argument(s) ({sig}), got {}",
            sig.params.len(),
            args.len()
        )));
    }
    for (p, a) in sig.params.iter().zip(args) {
        match (&p.kind, a) {
            (ParamKind::Tensor { dtype, like }, LaunchArg::Tensor(..) | LaunchArg::Device(_)) => {
                let (t_dtype, t_shape) = tensor_meta(a).expect("a tensor argument");
                if t_dtype != *dtype {
                    return Err(bad(format!("{} is tensor<{dtype}>, got {t_dtype}", p.name)));
                }
                if let Some(o) = like {
                    let i = sig.params.iter().position(|q| &q.name == o).unwrap_or(0);
                    if let Some((_, o_shape)) = tensor_meta(&args[i]) {
                        if o_shape != t_shape {
                            return Err(bad(format!(
                                "{} must have {o}'s shape {o_shape:?}, got {t_shape:?}",
                                p.name
                            )));
                        }
                    }
                }
            }
            (ParamKind::Scalar(dt), LaunchArg::Scalar(got, _)) => {
                if got != dt {
                    return Err(bad(format!("{} is a {dt} scalar, got {got}", p.name)));
                }
            }
            (ParamKind::Tensor { .. }, LaunchArg::Scalar(..)) => {
                return Err(bad(format!("{} is a tensor, got a scalar", p.name)))
            }
            (ParamKind::Scalar(_), LaunchArg::Tensor(..) | LaunchArg::Device(_)) => {
                return Err(bad(format!("{} is a scalar, got a tensor", p.name)))
            }
        }
    }
    Ok(())
}

/// The output a signature gives these arguments (validated against it first); in HBM.
pub fn expected_output(sig: &KernelSig, args: &[LaunchArg]) -> Result<OutputSpec, EmuError> {
    validate_signature(sig, args)?;
    let shape = match &sig.result_shape {
        ResultShape::Fixed(d) => d.clone(),
        ResultShape::Like(p) => {
            let i = sig.params.iter().position(|q| &q.name == p).unwrap_or(0);
            tensor_meta(&args[i]).map_or(vec![1], |(_, s)| s.to_vec())
        }
    };
    Ok(OutputSpec {
        dtype: sig.result,
        shape,
        location: Location::Hbm,
    })
}

/// A tensor argument's dtype and shape (None for scalars).
fn tensor_meta(a: &LaunchArg) -> Option<(DType, &[u64])> {
    match a {
        LaunchArg::Tensor(t, _) => Some((t.dtype, &t.shape)),
        LaunchArg::Device(d) => Some((d.dtype, &d.shape)),
        LaunchArg::Scalar(..) => None,
    }
}
