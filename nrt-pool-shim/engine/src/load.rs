//! The op library an engine runs and what its start code registered (its kernels, its
//! schema or NEURON_LIBRARY ops), and resolving what a call names into a [`Target`].

use std::sync::atomic::{AtomicU64, Ordering};

use super::error::EmuError;
use super::library::{LibraryError, OpLibrary};
use super::memory::CORES;
use super::schema;
use super::target::{Target, TargetModel};
use super::values::{expected_output, LaunchArg, OutputSpec};

/// Loads so far, in this process: each [`Loaded`] has its own number.
static LOADS: AtomicU64 = AtomicU64::new(1);

/// The loaded op library (a part of [`crate::PoolEngine`]; none until one is loaded).
#[derive(Default)]
pub struct Loaded {
    library: Option<OpLibrary>,
    kernels: Vec<String>,
    /// This load's number (0: nothing loaded).
    load: u64,
}

impl Loaded {
    /// `lib` with the kernel names its start code registered (`funcs` of them by its
    /// count), each text and at most `max_name` bytes (what the backend's command takes).
    pub(crate) fn registered(
        lib: OpLibrary,
        names: Vec<Vec<u8>>,
        funcs: usize,
        max_name: usize,
    ) -> Result<Loaded, EmuError> {
        let path = lib.path.clone();
        let mut kernels = Vec::new();
        for n in names {
            kernels.push(String::from_utf8(n).map_err(|e| LibraryError::NameNotText {
                path: path.clone(),
                name: e.into_bytes().escape_ascii().to_string(),
            })?);
        }
        if kernels.len() != funcs {
            return Err(EmuError::Registration {
                path: path.display().to_string(),
                names: kernels.len(),
                funcs,
            });
        }
        if let Some(long) = kernels.iter().find(|n| n.len() > max_name) {
            return Err(EmuError::Signature {
                kernel: long.clone(),
                why: format!("kernel names are at most {max_name} bytes"),
            });
        }
        Ok(Loaded {
            library: Some(lib),
            kernels,
            load: LOADS.fetch_add(1, Ordering::Relaxed),
        })
    }

    pub fn kernels(&self) -> &[String] {
        &self.kernels
    }

    pub fn library(&self) -> Option<&OpLibrary> {
        self.library.as_ref()
    }

    /// The output a kernel's schema gives these arguments (libraries with a schema).
    pub fn output_for(&self, kernel: &str, args: &[LaunchArg]) -> Result<OutputSpec, EmuError> {
        let target = self.target(kernel)?;
        let sig = target.signature().ok_or_else(|| EmuError::Signature {
            kernel: kernel.into(),
            why: "the library carries no schema; give the output's dtype and shape".into(),
        })?;
        expected_output(sig, args)
    }

    /// A NEURON_LIBRARY library's namespace and ops (None for other libraries).
    pub fn neuron_library(&self) -> Option<&schema::NeuronLibrary> {
        self.library.as_ref()?.ops.as_ref()
    }

    /// The cores a launch uses by default: all eight for a multicore library, else one.
    pub fn default_cores(&self) -> usize {
        if self.neuron_library().is_some_and(|l| l.multicore) {
            CORES
        } else {
            1
        }
    }

    /// What a call names, resolved: `NS::OP` or `OP` for a NEURON_LIBRARY library, a
    /// kernel's name otherwise.
    pub fn target(&self, name: &str) -> Result<Target, EmuError> {
        let lib = self.library.as_ref().ok_or(EmuError::NoLibrary)?;
        let target = |kernel: String, model| Target {
            name: name.into(),
            kernel,
            model,
            load: self.load,
        };
        if let Some(ops) = lib.ops.as_ref() {
            return match ops.op(name) {
                Some(op) => Ok(target(
                    op.name.clone(),
                    TargetModel::Op {
                        qualified: format!("{}::{}", ops.namespace, op.name),
                        args: op.args.clone(),
                    },
                )),
                None => Err(EmuError::UnknownTarget {
                    name: name.into(),
                    kind: "op",
                    known: ops
                        .ops
                        .iter()
                        .map(|o| format!("{}::{}", ops.namespace, o.name))
                        .collect(),
                }),
            };
        }
        if !self.kernels.iter().any(|k| k == name) {
            return Err(EmuError::UnknownTarget {
                name: name.into(),
                kind: "kernel",
                known: self.kernels.clone(),
            });
        }
        Ok(target(
            name.into(),
            match lib.signature(name) {
                Some(sig) => TargetModel::Schema(sig.clone()),
                None => TargetModel::Bare,
            },
        ))
    }

    /// The function a debugger stops at for `kernel`: an op's compute function (its name
    /// may differ from the op's), else the kernel itself.
    pub(crate) fn compute_function(&self, kernel: &str) -> String {
        self.neuron_library()
            .and_then(|l| l.ops.iter().find(|o| o.name == kernel))
            .map_or_else(|| kernel.to_string(), |o| o.kernel.clone())
    }

    /// Whether `t` was resolved against this load.
    pub(crate) fn resolved_here(&self, t: &Target) -> Result<(), EmuError> {
        if t.load == self.load && self.library.is_some() {
            Ok(())
        } else {
            Err(EmuError::StaleTarget {
                name: t.name.clone(),
            })
        }
    }
}
