//! Loading an op library (its start code runs once in a core process, never in this one)
//! and resolving what a call names: a kernel, or a NEURON_LIBRARY op.

use super::*;

impl PoolEngine {
    /// Finds an op library, and loads it and runs its start code once in a core process
    /// (never in this process) to learn the kernels and schema it carries.
    pub fn load(&mut self, path: &Path) -> Result<&[String], EmuError> {
        let lib = OpLibrary::locate(path)?;
        self.load_library(lib)
    }

    /// [`PoolEngine::load`] for a library image in memory (a registered Pool image), named
    /// `label` in reports.
    pub fn load_image(&mut self, bytes: &[u8], label: &str) -> Result<&[String], EmuError> {
        let lib = OpLibrary::from_bytes(bytes, label)?;
        self.load_library(lib)
    }

    pub(crate) fn load_library(&mut self, mut lib: OpLibrary) -> Result<&[String], EmuError> {
        let path = lib.path.clone();
        let path = path.as_path();
        let shown = path.display().to_string();
        let deadline = self.deadline();
        let probed = self
            .backend
            .probe(&self.memory, &lib, &deadline)
            .map_err(EmuError::Spawn)?;
        if deadline.interrupted() {
            return Err(EmuError::Interrupted {
                what: format!("loading {shown}"),
            });
        }
        let funcs = match &probed.end.outcome {
            Outcome::Done(funcs) => *funcs as usize,
            Outcome::Fault(record) => {
                let stdio = self.take_output(probed.stdio);
                let fault = self.fault_with_output(
                    0,
                    record,
                    "entry_func",
                    &lib.file(),
                    stdio,
                    &probed.end.stderr,
                );
                return Err(match fault.kind {
                    FaultKind::Entry => EmuError::Entry {
                        path: shown,
                        status: record.status,
                    },
                    FaultKind::Load => LibraryError::Load {
                        path: path.into(),
                        why: fault.message,
                    }
                    .into(),
                    _ => EmuError::StartFault {
                        path: shown,
                        fault: Box::new(fault),
                    },
                });
            }
        };
        self.keep_output(probed.stdio);
        lib.set_schema(probed.schema)?;
        let mut names = Vec::new();
        for n in probed.names {
            names.push(String::from_utf8(n).map_err(|e| LibraryError::NameNotText {
                path: path.into(),
                name: e.into_bytes().escape_ascii().to_string(),
            })?);
        }
        if names.len() != funcs {
            return Err(EmuError::Registration {
                path: shown,
                names: names.len(),
                funcs,
            });
        }
        if let Some(long) = names.iter().find(|n| n.len() > core::MAX_KERNEL_NAME) {
            return Err(EmuError::Signature {
                kernel: long.clone(),
                why: format!("kernel names are at most {} bytes", core::MAX_KERNEL_NAME),
            });
        }
        // The old library's cores go before the new library replaces it.
        self.backend.shutdown();
        self.kernels = names;
        self.library = Some(lib);
        Ok(&self.kernels)
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
