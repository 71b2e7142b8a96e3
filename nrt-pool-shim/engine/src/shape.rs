//! A NEURON_LIBRARY op's shape function, run on core 0 over the arguments' dtypes and
//! shapes.

use std::ffi::CString;

use customop_abi::blob::ARG_TYPE_TENSOR;
use customop_abi::descriptor::ArgTensor;

use super::backend::Outcome;
use super::error::EmuError;
use super::fault::FaultReport;
use super::marshal::{empty_blob, named, Contents};
use super::target::{Target, TargetModel};
use super::tensor::{self, DType, Location};
use super::values::{device_descriptor, LaunchArg, OutputSpec};
use super::{PoolEngine, SCALAR_ROOM};

/// A call of an op's shape function over validated arguments.
pub(crate) struct ShapeCall<'a> {
    pub target: &'a Target,
    pub args: &'a [LaunchArg],
}

impl ShapeCall<'_> {
    /// The output the shape function gives, or its fault.
    pub(crate) fn run(self, e: &mut PoolEngine) -> Result<OutputSpec, EmuError> {
        let (name, args) = (self.target.kernel.as_str(), self.args);
        let qualified = match &self.target.model {
            TargetModel::Op { qualified, .. } => qualified.clone(),
            _ => name.to_string(),
        };
        e.tensors.memory.reset_hbm();
        e.tensors.clear_placed();
        let mut blob = empty_blob(args.len());
        let mut sbuf_next = 0;
        for (i, a) in args.iter().enumerate() {
            let label = format!("argument {i}");
            blob.types[i] = ARG_TYPE_TENSOR;
            blob.args[i] = match a {
                // A shape function sees dtypes and shapes only: no data is placed.
                LaunchArg::Tensor(t, _) => {
                    tensor::validate_rank(&t.shape).map_err(|e| named(&label, e.into()))?;
                    let dims: Vec<u32> = t.shape.iter().map(|&d| d as u32).collect();
                    ArgTensor::hbm(t.dtype.isa(), 0, &dims)
                }
                LaunchArg::Device(d) => {
                    tensor::validate_rank(&d.shape).map_err(|e| named(&label, e.into()))?;
                    device_descriptor(d)
                }
                LaunchArg::Scalar(dt, bytes) => {
                    let mut padded = bytes.clone();
                    padded.resize(SCALAR_ROOM, 0);
                    e.tensors
                        .place(
                            &label,
                            *dt,
                            &[1],
                            Contents::Bytes(&padded),
                            Location::Hbm,
                            &mut sbuf_next,
                        )
                        .map_err(|e| named(&label, e))?
                }
            };
        }
        e.tensors.write_blob(0, &blob);
        let lib = e.loaded.library().ok_or(EmuError::NoLibrary)?;
        let c_op = CString::new(name).map_err(|_| EmuError::NoLibrary)?;
        let deadline = e.defaults.deadline();
        let guards = e.tensors.guards();
        let shaped = e
            .backend
            .shape(&e.tensors.memory, lib, &c_op, &guards, &deadline)
            .map_err(EmuError::Spawn)?;
        if deadline.interrupted() {
            return Err(EmuError::Interrupted {
                what: format!("the shape function of {name}"),
            });
        }
        if let Outcome::Fault(record) = &shaped.end.outcome {
            // What it printed before the fault, as a kernel's.
            let file = shaped.ran_in.clone().unwrap_or_else(|| lib.file());
            let stdio = e.take_output(shaped.stdio);
            let fault = FaultReport::new(&e.tensors, &file)
                .of(0, record, &format!("shape function of {qualified}"))
                .with_output(stdio, &shaped.end.stderr);
            return Err(EmuError::Fault(Box::new(fault)));
        }
        e.keep_output(shaped.stdio);
        if let Some(why) = shaped.refused {
            return Err(EmuError::Shape { op: qualified, why });
        }
        let out = e.tensors.read_blob(0).output;
        let dtype = DType::from_isa(out.dtype).ok_or_else(|| EmuError::Shape {
            op: qualified.clone(),
            why: format!(
                "its output has dtype code {}, which no launch can carry",
                out.dtype
            ),
        })?;
        let (dims, rank) = out.try_dims().map_err(|r| EmuError::Shape {
            op: qualified.clone(),
            why: format!("its output's shape breaks {r}"),
        })?;
        Ok(OutputSpec {
            dtype,
            shape: dims[..rank].iter().map(|&d| u64::from(d)).collect(),
            location: Location::Hbm,
        })
    }
}
