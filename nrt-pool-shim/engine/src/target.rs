//! What a call names, resolved once against the loaded library: a kernel, or a
//! NEURON_LIBRARY op. Front ends resolve a [`Target`] ([`crate::PoolEngine::target`]),
//! decode their arguments against its model and pass it in the call; the engine does not
//! look the name up again.

use super::error::EmuError;
use super::schema::{ArgKind, KernelSig};
use super::values::LaunchArg;

/// A resolved call target.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// As the caller named it (`NS::OP`, `OP`, or a kernel's name).
    pub name: String,
    /// The registered kernel a launch runs (an op's registered name).
    pub kernel: String,
    pub model: TargetModel,
    /// Which load it was resolved against: a call with a target of an earlier library is
    /// refused, not run on another kernel of the same name.
    pub(crate) load: u64,
}

/// What the library says of a target: what its arguments are and where its output
/// comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetModel {
    /// A NEURON_LIBRARY op: `NS::OP` and its arguments' kinds; its shape function gives
    /// the output.
    Op {
        qualified: String,
        args: Vec<ArgKind>,
    },
    /// A kernel with a schema signature, which gives the output.
    Schema(KernelSig),
    /// A kernel the library describes no further: the caller states the output.
    Bare,
}

impl Target {
    /// The op's argument kinds (NEURON_LIBRARY ops).
    pub fn op_args(&self) -> Option<&[ArgKind]> {
        match &self.model {
            TargetModel::Op { args, .. } => Some(args),
            _ => None,
        }
    }

    /// The kernel's schema signature (schema libraries).
    pub fn signature(&self) -> Option<&KernelSig> {
        match &self.model {
            TargetModel::Schema(sig) => Some(sig),
            _ => None,
        }
    }

    /// "argument N (name)" for fault reports and errors.
    pub(crate) fn arg_label(&self, i: usize) -> String {
        let name = self
            .signature()
            .and_then(|s| s.params.get(i))
            .map(|p| format!(" ({})", p.name));
        format!("argument {i}{}", name.unwrap_or_default())
    }

    /// The labels of a launch's `n` arguments.
    pub(crate) fn arg_labels(&self, n: usize) -> Vec<String> {
        (0..n).map(|i| self.arg_label(i)).collect()
    }

    /// A NEURON_LIBRARY op's arguments validated: their number, and tensors where it takes
    /// tensors (other targets: nothing to validate here).
    pub(crate) fn validate_op_args(&self, args: &[LaunchArg]) -> Result<(), EmuError> {
        let TargetModel::Op {
            qualified,
            args: kinds,
        } = &self.model
        else {
            return Ok(());
        };
        let bad = |why: String| EmuError::Signature {
            kernel: qualified.clone(),
            why,
        };
        if args.len() != kinds.len() {
            let names: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
            return Err(bad(format!(
                "takes {} argument(s) ({}), got {}",
                kinds.len(),
                names.join(", "),
                args.len()
            )));
        }
        for (i, (kind, a)) in kinds.iter().zip(args).enumerate() {
            let tensor = matches!(a, LaunchArg::Tensor(..) | LaunchArg::Device(_));
            if tensor != (*kind == ArgKind::Tensor) {
                return Err(bad(format!(
                    "argument {i} is a {kind}, got a {}",
                    if tensor { "tensor" } else { "scalar" }
                )));
            }
        }
        Ok(())
    }
}
