//! The op library an engine runs and what its start code registered (its kernels, its
//! schema or NEURON_LIBRARY ops), and resolving what a call names: a kernel, or an op.

use super::*;

/// The loaded op library (a part of [`PoolEngine`]; none until one is loaded).
#[derive(Default)]
pub struct Loaded {
    library: Option<OpLibrary>,
    kernels: Vec<String>,
}

impl Loaded {
    /// `lib` with the kernel names its start code registered (`funcs` of them by its
    /// count), each checked to be text and short enough for a command.
    pub(crate) fn registered(
        lib: OpLibrary,
        names: Vec<Vec<u8>>,
        funcs: usize,
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
        if let Some(long) = kernels
            .iter()
            .find(|n| n.len() > crate::host::core::MAX_KERNEL_NAME)
        {
            return Err(EmuError::Signature {
                kernel: long.clone(),
                why: format!(
                    "kernel names are at most {} bytes",
                    crate::host::core::MAX_KERNEL_NAME
                ),
            });
        }
        Ok(Loaded {
            library: Some(lib),
            kernels,
        })
    }

    /// The labels of a launch's `n` arguments.
    pub(crate) fn arg_labels(&self, kernel: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| self.arg_label(kernel, i)).collect()
    }

    /// "argument N (name)" for fault reports and errors.
    pub(crate) fn arg_label(&self, kernel: &str, i: usize) -> String {
        let name = self
            .library
            .as_ref()
            .and_then(|l| l.signature(kernel))
            .and_then(|s| s.params.get(i))
            .map(|p| format!(" ({})", p.name));
        format!("argument {i}{}", name.unwrap_or_default())
    }

    pub fn kernels(&self) -> &[String] {
        &self.kernels
    }

    pub fn library(&self) -> Option<&OpLibrary> {
        self.library.as_ref()
    }

    /// The output a kernel's signature implies for these arguments (libraries with a schema).
    pub fn output_for(&self, kernel: &str, args: &[LaunchArg]) -> Result<OutputSpec, EmuError> {
        let sig = self.signature(kernel)?.ok_or_else(|| EmuError::Signature {
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

    /// The registered kernel a launch names: `NS::OP` or `OP` for a NEURON_LIBRARY
    /// library, the kernel's name otherwise.
    pub(crate) fn kernel_name(&self, name: &str) -> Result<String, EmuError> {
        let Some(lib) = self.neuron_library() else {
            return Ok(name.to_string());
        };
        match lib.op(name) {
            Some(op) => Ok(op.name.clone()),
            None => Err(EmuError::UnknownKernel {
                kernel: name.into(),
                known: lib
                    .ops
                    .iter()
                    .map(|o| format!("{}::{}", lib.namespace, o.name))
                    .collect(),
            }),
        }
    }

    /// The registered kernel's schema signature, if the library carries one.
    pub(crate) fn signature(&self, kernel: &str) -> Result<Option<&KernelSig>, EmuError> {
        let lib = self.library.as_ref().ok_or(EmuError::NoLibrary)?;
        if !self.kernels.iter().any(|k| k == kernel) {
            return Err(EmuError::UnknownKernel {
                kernel: kernel.into(),
                known: self.kernels.clone(),
            });
        }
        Ok(lib.signature(kernel))
    }
}
