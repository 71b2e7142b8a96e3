//! The emulated Pool engine: device memory by SoC address, the control block, 1 to 8
//! isolated cores behind an ISA backend, launches and fault reports.
//!
//! A call reads: [`PoolEngine::target`] resolves what it names into a [`Target`];
//! [`PoolEngine::call`] prepares a `Launch` once (arguments converted and validated, the
//! output derived: `derive.rs`, `shape.rs`), marshals its arguments as 48-byte descriptors
//! into each core's data scratch area and runs the kernel on the cores behind a
//! [`backend`] (`launch.rs`), or in checking mode several times ([`check`]). [`host`]
//! builds run in forked processes here, Xtensa Pool images on QEMU cores in
//! `nrt-pool-qemu`. `PoolEngine`'s API is this file; its parts ([`DeviceTensors`],
//! [`Loaded`], [`Settings`]) and each stage of a call keep their methods in their own
//! files. The engine parses no command line and reads no tensor
//! file: tensors come and go as bytes, libraries by path or as an image in memory. It
//! reads none of the front ends' variables (`nrt-pool-open` does, once); the two it reads
//! are its own machinery's, where they are used: `$NRT_POOL_HUGE_PAGES` (`backing.rs`)
//! and `$XDG_RUNTIME_DIR` for gdb's session files (`debug.rs`).

pub mod accesses;
pub mod adapters;
pub mod backend;
pub mod backing;
pub mod check;
pub mod deadline;
pub mod debug;
pub mod elf_ident;
pub mod estimate;
pub mod library;
pub mod memory;
pub mod profile;
pub mod signal;
pub mod spawner;
pub mod symbolize;
pub mod tensor;

// The engine's jobs, one file each: its parts (device_tensors, load, settings) and the
// stages of a call (target, launch, derive, shape, fault; check/ for checking mode) as
// types with their methods.
mod call;
mod copy;
mod derive;
mod device_tensors;
mod error;
mod fault;
mod launch;
mod load;
mod marshal;
mod settings;
mod shape;
mod target;
mod values;

/// The op contract launches are checked against (kernel signatures, element types).
pub use nrt_pool_schema as schema;

use std::path::Path;
use std::time::{Duration, Instant};

use customop_abi::control::FaultKind;

use self::backend::{IsaBackend, Outcome, Stdio, Team};
use self::check::{Check, CheckReport, Checking};
use self::derive::Derivation;
use self::fault::FaultReport;
use self::launch::Launch;
use self::library::{LibraryError, OpLibrary};
use self::marshal::Fill;
use self::memory::DeviceMemory;

pub use self::call::{ArgValue, Arguments, Call, Called, Destination, Output};
pub use self::copy::{cpus, host_buffer};
pub use self::deadline::{Deadline, Interrupt};
pub use self::device_tensors::DeviceTensors;
pub use self::error::{status_name, DeviceFault, EmuError};
pub use self::load::Loaded;
pub use self::settings::{CallOptions, Settings};
pub use self::target::{Target, TargetModel};
pub use self::values::{
    expected_output, validate_signature, DeviceTensor, LaunchArg, LaunchPhases, OutputSpec, Run,
};

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

/// The emulated Pool engine: device memory, the loaded op library and its cores.
pub struct PoolEngine {
    /// First: the cores stop before the memory they use is unmapped.
    backend: Box<dyn IsaBackend>,
    /// Device memory and the tensors in it.
    pub tensors: DeviceTensors,
    /// The op library and what its start code registered.
    pub loaded: Loaded,
    image: PoolImage,
    /// What each call takes where its options leave something open.
    pub defaults: Settings,
    /// What op code printed outside a launch (start code, shape functions: fd 1, fd 2, bytes
    /// dropped) since the last launch, which reports it first: on hardware that output is
    /// seen, but loading a library and `op_output` return no output of their own.
    kept_output: Stdio,
    /// The last profiled launch's profile.
    last_profile: Option<profile::Profile>,
    /// Host buffers checking launches reuse for their copies.
    check_buffers: check::Buffers,
}

impl PoolEngine {
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
            tensors: DeviceTensors::new(DeviceMemory::with_reserve(hbm_bytes, reserved)?),
            loaded: Loaded::default(),
            image,
            defaults: Settings::default(),
            kept_output: Default::default(),
            last_profile: None,
            check_buffers: check::Buffers::default(),
        })
    }

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
        let deadline = self.defaults.deadline();
        let probed = self
            .backend
            .probe(&self.tensors.memory, &lib, &deadline)
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
                let file = lib.file();
                let fault = FaultReport::new(&self.tensors, &file)
                    .of(0, record, "entry_func")
                    .with_output(stdio, &probed.end.stderr);
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
        let max_name = self.backend.max_kernel_name();
        let loaded = Loaded::registered(lib, probed.names, funcs, max_name)?;
        // The old library's cores go before the new library replaces it.
        self.backend.shutdown();
        self.loaded = loaded;
        Ok(self.loaded.kernels())
    }

    /// Runs `f`, then releases every device tensor allocated while it ran (a binding's
    /// arguments copied in for one call), whether `f` succeeded or not. Nested, the inner
    /// call's tensors go with the outer one's.
    pub fn with_temporaries<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        if !self.tensors.begin_temporaries() {
            return f(self);
        }
        let r = f(self);
        self.tensors.end_temporaries();
        r
    }

    /// What a call names, resolved once: `NS::OP` or `OP` for a NEURON_LIBRARY library, a
    /// kernel's name otherwise. Front ends decode their arguments against it.
    pub fn target(&self, name: &str) -> Result<Target, EmuError> {
        self.loaded.target(name)
    }

    /// Calls a kernel or an op (see [`Call`]); argument device tensors this call makes are
    /// freed when it ends, whatever happened. Checking mode's parity check is not made
    /// here (the engine runs one backend): `nrt-pool-open`'s `Pool` makes it.
    pub fn call(&mut self, mut call: Call<'_>) -> Result<Called, EmuError> {
        let start = Instant::now();
        let s = self.defaults.for_call(&call.options);
        self.with_temporaries(|e| {
            let launch = Launch::prepare(e, &mut call, &s, start)?;
            let (output, run, phases, check) = if s.checks.without(Check::Parity).any() {
                // A race check records one run's accesses: the call's launches share
                // cores that can (D101).
                e.backend.trace_session(s.checks.has(Check::Race));
                let checked = Checking { launch: &launch }.run(e, call.to);
                e.backend.trace_session(false);
                checked?
            } else {
                let team = Team::all(launch.cores)
                    .with_all_stdio(s.all_cores_stdio)
                    .with_profile(s.profile);
                let (output, run, phases) = launch.run(e, team, call.to, Fill::default())?;
                let report = CheckReport {
                    checks: s.checks,
                    ..CheckReport::default()
                };
                (output, run, phases, report)
            };
            let mut check = check;
            check.place_unsourced(|| e.kernel_line(launch.target));
            Ok(Called {
                spec: launch.spec,
                output,
                run,
                phases,
                check,
            })
        })
    }

    /// The source lines the named functions of the loaded library are defined at, for those
    /// its debug information names (a profile's functions, demangled).
    pub fn function_lines<'n>(
        &self,
        names: impl IntoIterator<Item = &'n str>,
    ) -> std::collections::HashMap<String, check::SourceLine> {
        let mut lines = std::collections::HashMap::new();
        let mut names = names.into_iter().peekable();
        if names.peek().is_none() {
            return lines;
        }
        let Some(image) = self
            .loaded
            .library()
            .and_then(|l| library::debug_image(&l.file()))
        else {
            return lines;
        };
        let Some(known) = symbolize::FunctionLines::new(&image) else {
            return lines;
        };
        for name in names {
            if let Some(at) = known.line(name) {
                lines.insert(name.to_string(), at.into());
            }
        }
        lines
    }

    /// The source line `target`'s kernel starts at (an op's compute function), from the
    /// loaded library's debug information: where findings about its output point.
    pub fn kernel_line(&self, target: &Target) -> Option<check::SourceLine> {
        let function = self.loaded.compute_function(&target.kernel);
        self.function_lines([function.as_str()]).remove(&function)
    }

    /// The output a call of `target` with these arguments gives (the op's shape function,
    /// the kernel's schema, or `given` for a library with neither; `given` is validated
    /// against the first two), without running it: no tensor data is placed.
    pub fn output(
        &mut self,
        target: &Target,
        args: Vec<ArgValue<'_>>,
        given: Output,
    ) -> Result<OutputSpec, EmuError> {
        self.loaded.resolved_here(target)?;
        Launch::validate_counts(1, args.len())?;
        let args: Vec<LaunchArg> = args.into_iter().map(ArgValue::for_shape).collect();
        Derivation {
            target,
            args: &args,
        }
        .output(self, given)
    }

    /// The profile of the last profiled launch ([`Settings::profile`], or the call's own
    /// option), taken once.
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
        self.kept_output.append(
            stdio,
            customop_abi::control::RING_ENTRIES * customop_abi::control::RING_PAYLOAD,
        );
    }

    /// The kept output, then `stdio`.
    pub(crate) fn take_output(&mut self, stdio: Stdio) -> Stdio {
        let mut all = std::mem::take(&mut self.kept_output);
        all.append(stdio, usize::MAX);
        all
    }
}
