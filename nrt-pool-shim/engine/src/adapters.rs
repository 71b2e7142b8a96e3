//! Test adapters: the launch verbs of the engine's first API (`launch`, `launch_into`,
//! `op_output`), kept for the tests and benches written against it, over the one call path
//! ([`PoolEngine::call`], [`PoolEngine::output`]). Front ends do not use them
//! (`tests/layout.rs`).

use std::time::Duration;

use crate::tensor::{HostTensor, Location};
use crate::{
    ArgValue, Arguments, Call, CallOptions, Destination, DeviceTensor, EmuError, LaunchArg,
    LaunchPhases, Output, OutputSpec, PoolEngine, Run,
};

/// A launch as the first API named it: the kernel, its arguments, its output, its cores.
#[derive(Clone, Debug)]
pub struct KernelLaunch {
    pub kernel: String,
    pub args: Vec<LaunchArg>,
    pub output: OutputSpec,
    pub cores: usize,
}

/// A completed launch: its output on the host.
#[derive(Clone, Debug)]
pub struct Completion {
    pub output: HostTensor,
    /// Core 0's stdout and stderr, drained from the stdio ring.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes that did not fit in the ring.
    pub stdio_dropped: u32,
    /// Each core's launcher result.
    pub results: Vec<i32>,
    pub elapsed: Duration,
    /// Where `elapsed` went.
    pub phases: LaunchPhases,
}

/// The first API's verbs, over [`PoolEngine::call`].
pub trait LaunchVerbs {
    /// Runs a launch to completion or to its first fault; the output comes back to the
    /// host. A launch names its output itself: it is validated against the kernel's
    /// schema, and an op's shape function does not run (a [`Call`] with
    /// [`Output::Derived`]).
    fn launch(&mut self, l: &KernelLaunch) -> Result<Completion, EmuError>;

    /// A launch whose output is a device tensor (nothing is copied back).
    fn launch_into(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        out: &DeviceTensor,
        cores: usize,
    ) -> Result<Run, EmuError>;

    /// The output a NEURON_LIBRARY op gives these arguments: its shape function, run on
    /// core 0 over the arguments' dtypes and shapes (scalars with their values).
    fn op_output(&mut self, op: &str, args: &[LaunchArg]) -> Result<OutputSpec, EmuError>;
}

impl LaunchVerbs for PoolEngine {
    fn launch(&mut self, l: &KernelLaunch) -> Result<Completion, EmuError> {
        let target = self.target(&l.kernel)?;
        let called = self.call(Call {
            target: &target,
            args: l.args.iter().map(value).collect(),
            output: Output::Derived(l.output.clone(), Arguments::Validate),
            to: Destination::Host,
            cores: Some(l.cores),
            options: CallOptions::default(),
        })?;
        let run = called.run;
        Ok(Completion {
            output: called
                .output
                .expect("a host destination gives a host tensor"),
            stdout: run.stdout,
            stderr: run.stderr,
            stdio_dropped: run.stdio_dropped,
            results: run.results,
            elapsed: run.elapsed,
            phases: called.phases,
        })
    }

    fn launch_into(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        out: &DeviceTensor,
        cores: usize,
    ) -> Result<Run, EmuError> {
        let spec = OutputSpec {
            dtype: out.dtype,
            shape: out.shape.clone(),
            location: Location::Hbm,
        };
        let target = self.target(kernel)?;
        let called = self.call(Call {
            target: &target,
            args: args.iter().map(value).collect(),
            output: Output::Derived(spec, Arguments::Validate),
            to: Destination::Device(out.clone()),
            cores: Some(cores),
            options: CallOptions::default(),
        })?;
        Ok(called.run)
    }

    fn op_output(&mut self, op: &str, args: &[LaunchArg]) -> Result<OutputSpec, EmuError> {
        if self.loaded.neuron_library().is_none() {
            return Err(EmuError::Signature {
                kernel: op.into(),
                why: "the library has no NEURON_LIBRARY registration (no shape functions)".into(),
            });
        }
        let target = self.target(op)?;
        self.output(&target, args.iter().map(value).collect(), Output::Derive)
    }
}

/// A launch argument as a call takes it, its data borrowed.
pub fn value(a: &LaunchArg) -> ArgValue<'_> {
    match a {
        LaunchArg::Tensor(t, location) => ArgValue::Bytes {
            dtype: t.dtype,
            shape: t.shape.clone(),
            data: &t.data,
            location: *location,
        },
        LaunchArg::Scalar(dt, b) => ArgValue::Scalar(*dt, b.clone()),
        LaunchArg::Device(d) => ArgValue::Device(d.clone()),
    }
}
