//! A call's output: derived from the op's shape function (run once, unless the caller
//! knows it from an earlier [`crate::PoolEngine::output`]), the kernel's schema, or stated
//! by the caller; the arguments are validated against the op or schema on the way (once).

use super::call::{Arguments, Output};
use super::error::EmuError;
use super::shape::ShapeCall;
use super::target::{Target, TargetModel};
use super::tensor::DType;
use super::values::{expected_output, LaunchArg, OutputSpec};
use super::PoolEngine;

/// The output of a call of `target` with `args` (as a launch carries them).
pub(crate) struct Derivation<'a> {
    pub target: &'a Target,
    pub args: &'a [LaunchArg],
}

impl Derivation<'_> {
    /// The output, as `given` says to find it.
    pub(crate) fn output(self, e: &mut PoolEngine, given: Output) -> Result<OutputSpec, EmuError> {
        let target = self.target;
        let found = match &target.model {
            TargetModel::Op { .. } => {
                if let Output::Derived(g, Arguments::Validated) = given {
                    return Ok(g);
                }
                target.validate_op_args(self.args)?;
                if let Output::Derived(g, Arguments::Validate) = given {
                    return Ok(g);
                }
                Some(
                    ShapeCall {
                        target,
                        args: self.args,
                    }
                    .run(e)?,
                )
            }
            TargetModel::Schema(sig) => Some(expected_output(sig, self.args)?),
            TargetModel::Bare => None,
        };
        match (found, given) {
            (Some(f), Output::Derive) => Ok(f),
            (Some(f), Output::Stated(g) | Output::Derived(g, _)) => {
                Derivation::validate_output(target, &f, g.dtype, &g.shape)?;
                // The caller's location stands (an output in SBUF).
                Ok(g)
            }
            (None, Output::Stated(g) | Output::Derived(g, _)) => Ok(g),
            (None, Output::Derive) => Err(EmuError::Signature {
                kernel: target.kernel.clone(),
                why: "the library carries no schema; give the output's dtype and shape".into(),
            }),
        }
    }

    /// The one validation of an output a caller names (a dtype and shape, a destination
    /// device tensor) against the one the op's shape function or the kernel's schema
    /// gives.
    pub(crate) fn validate_output(
        target: &Target,
        found: &OutputSpec,
        dtype: DType,
        shape: &[u64],
    ) -> Result<(), EmuError> {
        if (found.dtype, found.shape.as_slice()) == (dtype, shape) {
            return Ok(());
        }
        let source = match target.model {
            TargetModel::Op { .. } => "shape function",
            _ => "schema",
        };
        Err(EmuError::Output {
            target: target.kernel.clone(),
            why: format!(
                "the output is {} {:?}, the launch asked for {dtype} {shape:?}; the {source} \
                 gives {:?}",
                found.dtype, found.shape, found.shape
            ),
        })
    }
}
