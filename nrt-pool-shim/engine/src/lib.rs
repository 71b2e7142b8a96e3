//! The emulated Pool engine: device memory by SoC address, the control block, 1 to 8
//! isolated cores behind an ISA backend, launches and fault reports.
//!
//! A launch marshals its arguments as 48-byte descriptors into each core's data scratch
//! area and runs the kernel on the cores ([`backend`]: host builds in forked processes
//! today, see [`core`] and [`pool`]). The engine knows nothing of files or command lines:
//! tensors come and go as bytes, libraries by path or as an image in memory.

pub mod accesses;
pub mod backend;
pub mod backing;
pub mod check;
pub mod control;
pub mod core;
pub mod deadline;
pub mod debug;
pub mod doorbell;
pub mod estimate;
pub mod library;
pub mod memory;
pub mod pool;
pub mod profile;
pub mod spawner;
pub mod symbolize;
pub mod tensor;

// `PoolEngine`'s jobs, one file each (issue #26).
mod call;
mod copy;
mod device_tensors;
mod error;
mod gdbserver;
mod launch;
mod load;
mod marshal;
mod run;
mod settings;
mod shape;

/// The op contract launches are checked against (kernel signatures, element types).
pub use nrt_pool_schema as schema;

use std::collections::HashMap;
use std::ffi::CString;
use std::path::Path;
use std::time::{Duration, Instant};

use customop_abi::blob::{scratch, ArgBlob, ARG_TYPE_TENSOR};
use customop_abi::descriptor::ArgTensor;

use self::backend::{CoreLines, FaultRecord, HostBackend, IsaBackend, Outcome, Stack, Stdio, Team};
use self::control::FaultKind;
use self::library::{LibraryError, OpLibrary};
use self::memory::{DeviceMemory, MemoryError, Placed, CORES, PAGE};
use self::schema::KernelSig;
use self::tensor::{DType, HostTensor, Location, TensorError};

pub use self::call::{ArgValue, Call, Called, Destination, Output};
pub use self::copy::host_buffer;
use self::copy::{copy_parallel, fill_parallel, host_copy};
pub use self::deadline::{Deadline, Interrupt};
pub use self::error::{status_name, DeviceFault, EmuError};
use self::launch::device_descriptor;
pub use self::launch::{
    check_signature, expected_output, Completion, DeviceTensor, Launch, LaunchArg, LaunchPhases,
    OutputSpec, Run,
};
use self::marshal::{empty_blob, named, Contents, Fill};
pub use self::settings::CallOptions;
use self::settings::Settings;
use self::shape::check_op_args;

/// Whether `$GPSIMD_OPEN_ALL_CORES_STDIO` asks for every core's printf (`1`, `true`,
/// `yes`): the front ends' default for [`PoolEngine::all_cores_stdio`].
pub fn all_cores_stdio_from_env() -> bool {
    std::env::var("GPSIMD_OPEN_ALL_CORES_STDIO")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// Most arguments a kernel takes.
pub const MAX_ARGS: usize = nrt_pool_schema::MAX_ARGS;
/// Bytes a scalar argument occupies in device memory: the widest scalar pull reads 8.
const SCALAR_ROOM: usize = 8;
/// How long a launch may run before its cores are stopped.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// HBM the engine offers tensors by default (sparse: only touched pages cost memory).
pub const DEFAULT_HBM_BYTES: u64 = 1 << 30;

/// The Pool image the engine was initialised with: the stock one, or the pair registered
/// through `nrt_set_pool_eng_ucode`, which replaces it (as `tpb_eng_init_hals_v2` does).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolImage {
    pub iram: Vec<u8>,
    pub dram: Vec<u8>,
    pub registered: bool,
}

/// A tensor placed for the current launch (or resident), for fault reports.
#[derive(Clone, Debug)]
struct PlacedTensor {
    label: String,
    soc: u64,
    len: u64,
    /// Bytes per element (reports count elements).
    elem: u64,
    guard: Option<u64>,
}

/// The emulated Pool engine: device memory, the loaded op library and its cores.
pub struct PoolEngine {
    /// First: the cores stop before the memory they use is unmapped.
    backend: Box<dyn IsaBackend>,
    pub memory: DeviceMemory,
    library: Option<OpLibrary>,
    kernels: Vec<String>,
    image: PoolImage,
    pub timeout: Duration,
    /// Asked while waiting for the cores; `true` stops the wait (see `set_interrupt`).
    interrupt: Option<Interrupt>,
    /// Place each tensor so that its first byte past the end is a guard page the cores
    /// protect: an out-of-bounds access is a reported fault naming the tensor (on by
    /// default; hardware would corrupt silently).
    pub guard_tensors: bool,
    /// This launch's tensors.
    placed: Vec<PlacedTensor>,
    /// Resident (device) tensors' guard pages, by SoC address.
    resident_guards: HashMap<u64, u64>,
    /// Inside [`PoolEngine::with_temporaries`]: the device tensors allocated since.
    temporaries: Option<Vec<u64>>,
    /// What op code printed outside a launch (start code, shape functions: fd 1, fd 2, bytes
    /// dropped) since the last launch, which reports it first: on hardware that output is
    /// seen, but loading a library and `op_output` return no output of their own.
    kept_output: Stdio,
    /// Launches measure their kernel (`--profile`): see [`profile`] and
    /// [`PoolEngine::take_profile`].
    pub profile: bool,
    /// The last profiled launch's profile.
    last_profile: Option<profile::Profile>,
    /// A launch stops this core for a debugger (`--gdb`): see [`debug`].
    pub debug: Option<debug::DebugRequest>,
    /// Every core's printf reaches the caller, each line prefixed with its core (an
    /// emulator aid, `--all-cores-stdio`; hardware shows core 0's alone, the default).
    pub all_cores_stdio: bool,
    /// The checks each call makes (issue #27; none by default).
    pub checks: check::Checks,
    /// Host buffers checked launches reuse for their copies.
    check_buffers: Vec<Vec<u8>>,
    /// The other backend's engine the parity check compares with.
    parity_twin: check::parity::Twin,
}

impl PoolEngine {
    /// An engine with `hbm_bytes` of HBM for tensors and the given Pool image (stock, or a
    /// registered pair that replaces it).
    pub fn new(hbm_bytes: u64, image: PoolImage) -> Result<PoolEngine, EmuError> {
        PoolEngine::with_backend(hbm_bytes, image, Box::new(HostBackend::default()))
    }

    /// An engine whose cores are `backend`'s (host builds, or Xtensa images on QEMU cores),
    /// with HBM laid out as the backend needs: `hbm_bytes` for tensors at most, fewer where
    /// its cores reach less.
    pub fn with_backend(
        hbm_bytes: u64,
        image: PoolImage,
        backend: Box<dyn IsaBackend>,
    ) -> Result<PoolEngine, EmuError> {
        let (reserved, limit) = backend.hbm_layout();
        let hbm_bytes = match limit {
            Some(l) => hbm_bytes.min(l.saturating_sub(reserved)),
            None => hbm_bytes,
        };
        Ok(PoolEngine {
            backend,
            memory: DeviceMemory::with_reserve(hbm_bytes, reserved)?,
            library: None,
            kernels: Vec::new(),
            image,
            timeout: DEFAULT_TIMEOUT,
            interrupt: None,
            guard_tensors: true,
            placed: Vec::new(),
            resident_guards: HashMap::new(),
            temporaries: None,
            kept_output: Default::default(),
            profile: false,
            last_profile: None,
            debug: None,
            all_cores_stdio: false,
            checks: check::Checks::NONE,
            check_buffers: Vec::new(),
            parity_twin: check::parity::Twin::default(),
        })
    }

    /// How long the next wait for the cores may last, and what may interrupt it.
    pub(crate) fn deadline(&self) -> Deadline {
        Deadline::after(self.timeout).with_interrupt(self.interrupt.clone())
    }

    /// Lets `interrupt` stop a launch (or a load, or a shape function) while it waits for
    /// the cores: asked every few milliseconds from the waiting thread; `true` stops the
    /// cores still running, as a timeout does, and the call returns
    /// [`EmuError::Interrupted`]. The next launch starts fresh cores.
    pub fn set_interrupt(&mut self, interrupt: Option<Interrupt>) {
        self.interrupt = interrupt;
    }

    /// The profile of the last launch made with [`PoolEngine::profile`] on (taken once).
    pub fn take_profile(&mut self) -> Option<profile::Profile> {
        self.last_profile.take()
    }

    pub fn image(&self) -> &PoolImage {
        &self.image
    }

    /// The backend's name ("host", "xtensa").
    pub fn isa(&self) -> &'static str {
        self.backend.name()
    }

    /// Keeps what op code printed outside a launch for the next launch's report (at most
    /// what a stdio ring holds; the rest counted as dropped).
    pub(crate) fn keep_output(&mut self, stdio: Stdio) {
        self.kept_output
            .append(stdio, control::RING_ENTRIES * control::RING_PAYLOAD);
    }

    /// The kept output, then `stdio`.
    pub(crate) fn take_output(&mut self, stdio: Stdio) -> Stdio {
        let mut all = std::mem::take(&mut self.kept_output);
        all.append(stdio, usize::MAX);
        all
    }
}
