//! Where kernels run: the ISA backend interface the engine drives, and the host backend
//! behind it today (op libraries built for the host, one forked process per core). A QEMU
//! backend for Xtensa images implements the same interface against the same device memory
//! and control block.

use std::ffi::CStr;

use super::core::Program;
use super::deadline::Deadline;
use super::library::OpLibrary;
use super::memory::DeviceMemory;
use super::pool::{self, CoreExit, CorePool};

/// An ISA backend: it loads an op library onto cores that share the engine's device memory,
/// runs kernels on them, and reports through the control block (completion, faults, stdio).
pub trait IsaBackend: Send {
    /// A short name for reports: "host", "xtensa".
    fn name(&self) -> &'static str;

    /// The HBM this backend's cores can use: bytes at HBM's start to keep free of tensors,
    /// and the most HBM (from its start) they reach, if limited.
    fn hbm_layout(&self) -> (u64, Option<u64>) {
        (
            (super::memory::CORES as u64) * super::memory::HBM_SCRATCH_BYTES,
            None,
        )
    }

    /// Loads `library` on a fresh probe core and runs its start code; the core reports the
    /// kernel names, launcher count and schema text through the control block.
    fn probe(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        deadline: &Deadline,
    ) -> std::io::Result<CoreExit>;

    /// Runs `kernel` on cores `0..cores` (starting those not running) until each completes,
    /// faults or passes `deadline`.
    fn launch(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        kernel: &CStr,
        cores: usize,
        deadline: &Deadline,
    ) -> std::io::Result<Vec<CoreExit>>;

    /// Runs op `op`'s shape function on core 0 over the argument blob the engine wrote in
    /// its scratch area; the core writes the output's descriptor there.
    fn shape(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        op: &CStr,
        deadline: &Deadline,
    ) -> std::io::Result<CoreExit>;

    /// Stops every core (a new library, or the engine's end).
    fn shutdown(&mut self);
}

/// Host builds of op libraries, each core a persistent forked process (see [`pool`]).
#[derive(Default)]
pub struct HostBackend {
    cores: CorePool,
}

impl IsaBackend for HostBackend {
    fn name(&self) -> &'static str {
        "host"
    }

    fn probe(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        deadline: &Deadline,
    ) -> std::io::Result<CoreExit> {
        let program = Program {
            memory,
            library: &library.c_path,
        };
        let (exit, stderr) = pool::probe(&program, deadline)?;
        Ok(CoreExit { exit, stderr })
    }

    fn launch(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        kernel: &CStr,
        cores: usize,
        deadline: &Deadline,
    ) -> std::io::Result<Vec<CoreExit>> {
        let program = Program {
            memory,
            library: &library.c_path,
        };
        self.cores.launch(&program, kernel, cores, deadline)
    }

    fn shape(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        op: &CStr,
        deadline: &Deadline,
    ) -> std::io::Result<CoreExit> {
        let program = Program {
            memory,
            library: &library.c_path,
        };
        self.cores.shape(&program, op, deadline)
    }

    fn shutdown(&mut self) {
        self.cores.shutdown();
    }
}
