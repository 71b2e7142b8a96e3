//! The emulated Pool engine: device memory by SoC address, the control block, 1 to 8
//! isolated cores behind an ISA backend, launches and fault reports.
//!
//! A launch marshals its arguments as 48-byte descriptors into each core's data scratch
//! area and runs the kernel on the cores ([`backend`]: host builds in forked processes
//! today, see [`core`] and [`pool`]). The engine knows nothing of files or command lines:
//! tensors come and go as bytes, libraries by path or as an image in memory.

pub mod backend;
pub mod backing;
pub mod control;
pub mod core;
pub mod deadline;
pub mod doorbell;
mod error;
mod launch;
pub mod library;
pub mod memory;
pub mod pool;
pub mod spawner;
pub mod symbolize;
pub mod tensor;

/// The op contract launches are checked against (kernel signatures, element types).
pub use nrt_pool_schema as schema;

use std::collections::HashMap;
use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use customop_abi::blob::{scratch, ArgBlob, ARG_TYPE_TENSOR};
use customop_abi::descriptor::ArgTensor;

use self::backend::{HostBackend, IsaBackend};
use self::control::{
    ControlBlock, FaultKind, ACCESS_READ, ACCESS_WRITE, CORE_DONE, CORE_FAULT, PHASE_KERNEL,
    PHASE_LOAD,
};
use self::library::{LibraryError, OpLibrary};
use self::memory::{DeviceMemory, MemoryError, Placed, CORES, PAGE};
use self::pool::{CoreExit, Exit};
use self::schema::KernelSig;
use self::tensor::{DType, HostTensor, Location, TensorError};

pub use self::deadline::{Deadline, Interrupt};
pub use self::error::{status_name, DeviceFault, EmuError};
use self::launch::device_descriptor;
pub use self::launch::{
    check_signature, expected_output, Completion, DeviceTensor, Launch, LaunchArg, LaunchPhases,
    OutputSpec, Run,
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

/// A tensor placed for the current launch (or resident), for fault reports.
#[derive(Clone, Debug)]
struct PlacedTensor {
    label: String,
    soc: u64,
    len: u64,
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
    kept_output: (Vec<u8>, Vec<u8>, u32),
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
        })
    }

    /// How long the next wait for the cores may last, and what may interrupt it.
    fn deadline(&self) -> Deadline {
        Deadline::after(self.timeout).with_interrupt(self.interrupt.clone())
    }

    /// Lets `interrupt` stop a launch (or a load, or a shape function) while it waits for
    /// the cores: asked every few milliseconds from the waiting thread; `true` stops the
    /// cores still running, as a timeout does, and the call returns
    /// [`EmuError::Interrupted`]. The next launch starts fresh cores.
    pub fn set_interrupt(&mut self, interrupt: Option<Interrupt>) {
        self.interrupt = interrupt;
    }

    pub fn image(&self) -> &PoolImage {
        &self.image
    }

    /// The backend's name ("host", "xtensa").
    pub fn isa(&self) -> &'static str {
        self.backend.name()
    }

    fn control(&self) -> ControlBlock {
        // SAFETY: the status region is STATUS_BYTES, page-aligned and lives with `memory`.
        unsafe { ControlBlock::new(self.memory.status_host()) }
    }

    /// Keeps what the cores printed through the stdio ring since its reset for the next
    /// launch's report (at most a ring's worth kept; the rest counted as dropped).
    fn keep_output(&mut self, ctl: &ControlBlock) {
        let (out, err, dropped) = &mut self.kept_output;
        let lost = drain_stdio(ctl, out, err, control::RING_ENTRIES * control::RING_PAYLOAD);
        *dropped = dropped.saturating_add(lost);
    }

    /// The kept output, then what the cores printed through the stdio ring since its reset:
    /// fd 1's bytes, fd 2's, and the bytes dropped.
    fn take_output(&mut self, ctl: &ControlBlock) -> (Vec<u8>, Vec<u8>, u32) {
        let (mut out, mut err, dropped) = std::mem::take(&mut self.kept_output);
        let lost = drain_stdio(ctl, &mut out, &mut err, usize::MAX);
        (out, err, dropped.saturating_add(lost))
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

    fn load_library(&mut self, mut lib: OpLibrary) -> Result<&[String], EmuError> {
        let path = lib.path.clone();
        let path = path.as_path();
        let shown = path.display().to_string();
        let ctl = self.control();
        ctl.reset();
        let deadline = self.deadline();
        let CoreExit { exit, stderr } = self
            .backend
            .probe(&self.memory, &lib, &deadline)
            .map_err(EmuError::Spawn)?;
        if deadline.interrupted() {
            return Err(EmuError::Interrupted {
                what: format!("loading {shown}"),
            });
        }
        let rec = ctl.core(0);
        if rec.state.load(Ordering::Acquire) != CORE_DONE {
            let mut fault = self.fault_of(0, exit, "entry_func", &lib.file());
            (fault.stdout, fault.stderr, _) = self.take_output(&ctl);
            fault.stderr.extend_from_slice(&stderr);
            return Err(match fault.kind {
                FaultKind::Entry => EmuError::Entry {
                    path: shown,
                    status: rec.result.load(Ordering::Acquire),
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
        self.keep_output(&ctl);
        lib.set_schema(ctl.schema())?;
        let mut names = Vec::new();
        for n in ctl.names() {
            names.push(String::from_utf8(n).map_err(|e| LibraryError::NameNotText {
                path: path.into(),
                name: e.into_bytes().escape_ascii().to_string(),
            })?);
        }
        let funcs = rec.result.load(Ordering::Acquire) as usize;
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
    fn kernel_name(&self, name: &str) -> Result<String, EmuError> {
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

    /// The output a NEURON_LIBRARY op gives these arguments: its shape function, run on
    /// core 0 over the arguments' dtypes and shapes (scalars with their values).
    pub fn op_output(&mut self, op: &str, args: &[LaunchArg]) -> Result<OutputSpec, EmuError> {
        let name = self.kernel_name(op)?;
        let lib = self.neuron_library().ok_or_else(|| EmuError::Signature {
            kernel: op.into(),
            why: "the library has no NEURON_LIBRARY registration (no shape functions)".into(),
        })?;
        let qualified = format!("{}::{name}", lib.namespace);
        let sig = lib.op(&name).expect("resolved").clone();
        check_op_args(&qualified, &sig, args)?;
        self.memory.reset_hbm();
        self.placed.clear();
        let mut blob = empty_blob(args.len());
        let mut sbuf_next = 0;
        for (i, a) in args.iter().enumerate() {
            let label = format!("argument {i}");
            blob.types[i] = ARG_TYPE_TENSOR;
            blob.args[i] = match a {
                // A shape function sees dtypes and shapes only: no data is placed.
                LaunchArg::Tensor(t, _) => {
                    tensor::check_rank(&t.shape).map_err(|e| named(&label, e.into()))?;
                    let dims: Vec<u32> = t.shape.iter().map(|&d| d as u32).collect();
                    ArgTensor::hbm(t.dtype.isa(), 0, &dims)
                }
                LaunchArg::Device(d) => {
                    tensor::check_rank(&d.shape).map_err(|e| named(&label, e.into()))?;
                    device_descriptor(d)
                }
                LaunchArg::Scalar(dt, bytes) => {
                    let mut padded = bytes.clone();
                    padded.resize(SCALAR_ROOM, 0);
                    self.place(
                        &label,
                        *dt,
                        &[1],
                        Some(&padded),
                        Location::Hbm,
                        &mut sbuf_next,
                    )
                    .map_err(|e| named(&label, e))?
                }
            };
        }
        self.write_blob(0, &blob);
        let ctl = self.control();
        ctl.reset();
        let lib = self.library.as_ref().ok_or(EmuError::NoLibrary)?;
        let c_op = CString::new(name.clone()).map_err(|_| EmuError::NoLibrary)?;
        let deadline = self.deadline();
        let CoreExit { exit, stderr } = self
            .backend
            .shape(&self.memory, lib, &c_op, &deadline)
            .map_err(EmuError::Spawn)?;
        if deadline.interrupted() {
            return Err(EmuError::Interrupted {
                what: format!("the shape function of {name}"),
            });
        }
        let rec = ctl.core(0);
        if rec.state.load(Ordering::Acquire) != CORE_DONE || exit != Exit::Code(0) {
            let file = lib.file();
            let mut fault =
                self.fault_of(0, exit, &format!("shape function of {qualified}"), &file);
            // What it printed before the fault, as a kernel's.
            (fault.stdout, fault.stderr, _) = self.take_output(&ctl);
            fault.stderr.extend_from_slice(&stderr);
            return Err(EmuError::Fault(Box::new(fault)));
        }
        self.keep_output(&ctl);
        if rec.result.load(Ordering::Acquire) != 0 {
            return Err(EmuError::Shape {
                op: qualified,
                why: ctl.message(0),
            });
        }
        let out = self.read_blob(0).output;
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

    /// Core `c`'s argument blob (in its data scratch area).
    fn write_blob(&self, c: usize, blob: &ArgBlob) {
        let (p, _) = self.memory.scratch_host(c);
        // SAFETY: the blob's place in this core's data scratch area (inside the region,
        // which is 64 KiB); unaligned-safe write.
        unsafe {
            p.add(scratch::ARG_BLOB)
                .cast::<ArgBlob>()
                .write_unaligned(*blob)
        };
    }

    fn read_blob(&self, c: usize) -> ArgBlob {
        let (p, _) = self.memory.scratch_host(c);
        // SAFETY: as write_blob; the core wrote it (plain data, any bits valid).
        unsafe { p.add(scratch::ARG_BLOB).cast::<ArgBlob>().read_unaligned() }
    }

    fn signature(&self, kernel: &str) -> Result<Option<&KernelSig>, EmuError> {
        let lib = self.library.as_ref().ok_or(EmuError::NoLibrary)?;
        if !self.kernels.iter().any(|k| k == kernel) {
            return Err(EmuError::UnknownKernel {
                kernel: kernel.into(),
                known: self.kernels.clone(),
            });
        }
        Ok(lib.signature(kernel))
    }

    /// Runs a launch to completion or to its first fault; the output comes back to the host.
    pub fn launch(&mut self, l: &Launch) -> Result<Completion, EmuError> {
        let start = Instant::now();
        let kernel = self.kernel_name(&l.kernel)?;
        self.check_launch(&kernel, &l.args, l.cores, l.output.dtype, &l.output.shape)?;
        self.memory.reset_hbm();
        self.placed.clear();
        let mut sbuf_next = 0u64;
        let mut blob = self.marshal(&kernel, &l.args, &mut sbuf_next)?;
        blob.output = self
            .place(
                "the output",
                l.output.dtype,
                &l.output.shape,
                None,
                l.output.location,
                &mut sbuf_next,
            )
            .map_err(|e| named("the output", e))?;
        let placed = Instant::now();
        let run = self.execute(&kernel, &blob, l.cores, start)?;
        let ran = Instant::now();
        let bytes = self.read_tensor(&blob.output, l.output.dtype)?;
        let output = HostTensor::new(l.output.dtype, l.output.shape.clone(), bytes)?;
        let end = Instant::now();
        Ok(Completion {
            output,
            stdout: run.stdout,
            stderr: run.stderr,
            stdio_dropped: run.stdio_dropped,
            results: run.results,
            elapsed: end - start,
            phases: LaunchPhases {
                place: placed - start,
                run: ran - placed,
                read: end - ran,
            },
        })
    }

    /// A launch whose output is a device tensor (nothing is copied back).
    pub fn launch_into(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        out: &DeviceTensor,
        cores: usize,
    ) -> Result<Run, EmuError> {
        let start = Instant::now();
        let kernel = &self.kernel_name(kernel)?;
        self.check_launch(kernel, args, cores, out.dtype, &out.shape)?;
        self.memory.reset_hbm();
        self.placed.clear();
        let mut sbuf_next = 0u64;
        let mut blob = self.marshal(kernel, args, &mut sbuf_next)?;
        blob.output = device_descriptor(out);
        self.place_device("the output", out);
        self.execute(kernel, &blob, cores, start)
    }

    /// Records a device tensor used by this launch (its guard page, if it has one).
    fn place_device(&mut self, label: &str, d: &DeviceTensor) {
        let len = tensor::numel(&d.shape) * d.dtype.size() as u64;
        self.placed.push(PlacedTensor {
            label: label.into(),
            soc: d.soc,
            len,
            guard: self.resident_guards.get(&d.soc).copied(),
        });
    }

    /// A zeroed device tensor.
    pub fn alloc_device(
        &mut self,
        dtype: DType,
        shape: Vec<u64>,
    ) -> Result<DeviceTensor, EmuError> {
        let d = self.alloc_device_for_overwrite(dtype, shape)?;
        let n = self.device_len(&d);
        self.memory.zero(d.soc, n).ok_or(MemoryError::HbmFull {
            want: n as u64,
            left: 0,
        })?;
        Ok(d)
    }

    /// A device tensor whose bytes the caller is about to write in full
    /// ([`PoolEngine::device_bytes_mut`]): until then they are whatever that memory held.
    pub fn alloc_device_for_overwrite(
        &mut self,
        dtype: DType,
        shape: Vec<u64>,
    ) -> Result<DeviceTensor, EmuError> {
        tensor::check_rank(&shape)?;
        let n = tensor::numel(&shape)
            .checked_mul(dtype.size() as u64)
            .ok_or(MemoryError::HbmFull {
                want: u64::MAX,
                left: 0,
            })?;
        let Placed { soc, guard } = self.memory.alloc_resident(n, self.guard_tensors)?;
        if let Some(g) = guard {
            self.resident_guards.insert(soc, g);
        }
        if let Some(t) = &mut self.temporaries {
            t.push(soc);
        }
        Ok(DeviceTensor { dtype, shape, soc })
    }

    fn device_len(&self, d: &DeviceTensor) -> usize {
        tensor::numel(&d.shape) as usize * d.dtype.size()
    }

    /// A device tensor's bytes, in place (no copy).
    pub fn device_bytes(&self, d: &DeviceTensor) -> Option<&[u8]> {
        self.memory.read(d.soc, self.device_len(d))
    }

    /// A device tensor's place in the device memory file: the file, the offset and the
    /// length, for copies between files that never touch the mapping (`sendfile`), so the
    /// kernel neither zeroes fresh pages first nor maps them into this process.
    pub fn device_file_range(&self, d: &DeviceTensor) -> Option<(&std::fs::File, u64, usize)> {
        let n = self.device_len(d);
        let off = self.memory.file_offset(d.soc, n)?;
        Some((self.memory.file(), off, n))
    }

    /// A device tensor's bytes, writable in place: a large tensor's pages are allocated up
    /// front in one call.
    pub fn device_bytes_mut(&mut self, d: &DeviceTensor) -> Option<&mut [u8]> {
        let n = self.device_len(d);
        self.memory.bytes_populated(d.soc, n)
    }

    /// A device tensor holding a copy of `t`.
    pub fn upload(&mut self, t: &HostTensor) -> Result<DeviceTensor, EmuError> {
        self.upload_bytes(t.dtype, t.shape.clone(), &t.data)
    }

    /// A device tensor of `dtype` and `shape` holding a copy of `bytes` (one copy, straight
    /// from the caller's buffer: a binding's array needs no staging tensor first).
    pub fn upload_bytes(
        &mut self,
        dtype: DType,
        shape: Vec<u64>,
        bytes: &[u8],
    ) -> Result<DeviceTensor, EmuError> {
        tensor::check_len(dtype, &shape, bytes.len())?;
        let d = self.alloc_device_for_overwrite(dtype, shape)?;
        let dst = self.device_bytes_mut(&d).ok_or(MemoryError::HbmFull {
            want: bytes.len() as u64,
            left: 0,
        })?;
        copy_parallel(dst, bytes);
        Ok(d)
    }

    /// Runs `f`, then releases every device tensor allocated while it ran (a binding's
    /// arguments copied in for one call), whether `f` succeeded or not. Nested, the inner
    /// call's tensors go with the outer one's.
    pub fn with_temporaries<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        if self.temporaries.is_some() {
            return f(self);
        }
        self.temporaries = Some(Vec::new());
        let r = f(self);
        for soc in self.temporaries.take().unwrap_or_default() {
            self.free_resident(soc);
        }
        r
    }

    /// Releases device tensor `d` (its handle must not be used again): its memory holds
    /// later device tensors. False, and nothing released, if `d` is not a live device
    /// tensor of this engine (released already, or from before a
    /// [`PoolEngine::free_device_tensors`]).
    pub fn free_device(&mut self, d: &DeviceTensor) -> bool {
        self.free_resident(d.soc)
    }

    /// Releases the device tensor at `soc` and forgets its guard page; whether it was live.
    fn free_resident(&mut self, soc: u64) -> bool {
        let live = self.memory.free_resident(soc);
        if live {
            self.resident_guards.remove(&soc);
        }
        live
    }

    /// What backs the device memory: huge pages or the system's shared-memory pages (D66).
    pub fn backing(&self) -> memory::Backing {
        self.memory.backing
    }

    /// Copies a device tensor's bytes into `dst` (exactly its length), one copy split over
    /// the CPUs when large: a binding's output buffer needs no staging tensor.
    pub fn download_into(&self, d: &DeviceTensor, dst: &mut [u8]) -> Result<(), EmuError> {
        let bytes = self.device_bytes(d).ok_or(MemoryError::HbmFull {
            want: self.device_len(d) as u64,
            left: 0,
        })?;
        tensor::check_len(d.dtype, &d.shape, dst.len())?;
        copy_parallel(dst, bytes);
        Ok(())
    }

    /// A device tensor's bytes on the host.
    pub fn download(&self, d: &DeviceTensor) -> Result<HostTensor, EmuError> {
        let bytes = self.device_bytes(d).ok_or(MemoryError::HbmFull {
            want: self.device_len(d) as u64,
            left: 0,
        })?;
        Ok(HostTensor::new(d.dtype, d.shape.clone(), host_copy(bytes))?)
    }

    /// Releases every device tensor (their handles must not be used again).
    pub fn free_device_tensors(&mut self) {
        self.memory.reset_resident();
        self.resident_guards.clear();
    }

    fn check_launch(
        &self,
        kernel: &str,
        args: &[LaunchArg],
        cores: usize,
        out_dtype: DType,
        out_shape: &[u64],
    ) -> Result<(), EmuError> {
        if !(1..=CORES).contains(&cores) {
            return Err(EmuError::Cores(cores));
        }
        if args.len() > MAX_ARGS {
            return Err(EmuError::TooManyArgs { n: args.len() });
        }
        if let Some(lib) = self.neuron_library() {
            if let Some(op) = lib.op(kernel) {
                check_op_args(&format!("{}::{}", lib.namespace, op.name), op, args)?;
            }
        }
        if let Some(sig) = self.signature(kernel)? {
            let want = expected_output(sig, args)?;
            if (want.dtype, want.shape.as_slice()) != (out_dtype, out_shape) {
                return Err(EmuError::Signature {
                    kernel: kernel.into(),
                    why: format!(
                        "the output is {} {:?}, the launch asked for {} {:?}",
                        want.dtype, want.shape, out_dtype, out_shape
                    ),
                });
            }
        }
        tensor::check_rank(out_shape).map_err(|e| named("the output", e.into()))?;
        Ok(())
    }

    /// "argument N (name)" for fault reports and errors.
    fn arg_label(&self, kernel: &str, i: usize) -> String {
        let name = self
            .library
            .as_ref()
            .and_then(|l| l.signature(kernel))
            .and_then(|s| s.params.get(i))
            .map(|p| format!(" ({})", p.name));
        format!("argument {i}{}", name.unwrap_or_default())
    }

    /// Places the arguments and builds the argument blob (output still empty).
    fn marshal(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        sbuf_next: &mut u64,
    ) -> Result<ArgBlob, EmuError> {
        let mut blob = empty_blob(args.len());
        for (i, a) in args.iter().enumerate() {
            blob.types[i] = ARG_TYPE_TENSOR;
            let label = self.arg_label(kernel, i);
            let (dtype, shape, data, loc) = match a {
                LaunchArg::Tensor(t, loc) => (t.dtype, t.shape.as_slice(), t.data.as_slice(), *loc),
                LaunchArg::Scalar(dt, bytes) => {
                    if bytes.len() != dt.size() {
                        return Err(TensorError::Size {
                            dtype: *dt,
                            shape: vec![1],
                            want: dt.size() as u64,
                            got: bytes.len() as u64,
                        }
                        .into());
                    }
                    // The scalar pulls read up to 8 bytes whatever the dtype (as the
                    // vendor's do): the 1-element tensor gets 8 bytes of room, zero-filled.
                    let mut padded = bytes.clone();
                    padded.resize(SCALAR_ROOM, 0);
                    blob.args[i] = self
                        .place(&label, *dt, &[1], Some(&padded), Location::Hbm, sbuf_next)
                        .map_err(|e| named(&label, e))?;
                    continue;
                }
                LaunchArg::Device(d) => {
                    tensor::check_rank(&d.shape).map_err(|e| named(&label, e.into()))?;
                    blob.args[i] = device_descriptor(d);
                    self.place_device(&label, d);
                    continue;
                }
            };
            blob.args[i] = self
                .place(&label, dtype, shape, Some(data), loc, sbuf_next)
                .map_err(|e| named(&label, e))?;
        }
        Ok(blob)
    }

    /// Writes the blob for each core and runs the kernel on them.
    fn execute(
        &mut self,
        kernel: &str,
        blob: &ArgBlob,
        cores: usize,
        start: Instant,
    ) -> Result<Run, EmuError> {
        let lib = self.library.as_ref().ok_or(EmuError::NoLibrary)?;
        let lib_file = lib.file();
        for c in 0..cores {
            self.write_blob(c, blob);
        }
        let ctl = self.control();
        ctl.reset();
        let guards: Vec<u64> = if self.guard_tensors {
            self.placed.iter().filter_map(|t| t.guard).collect()
        } else {
            Vec::new()
        };
        ctl.set_guards(&guards);
        let name = CString::new(kernel).map_err(|_| EmuError::UnknownKernel {
            kernel: kernel.into(),
            known: self.kernels.clone(),
        })?;
        let deadline = self.deadline();
        let exits = self
            .backend
            .launch(&self.memory, lib, &name, cores, &deadline)
            .map_err(EmuError::Spawn)?;
        if deadline.interrupted() {
            // The cores still running were stopped, as after a timeout; their output is
            // dropped with them.
            let _ = self.take_output(&ctl);
            return Err(EmuError::Interrupted {
                what: format!("kernel '{kernel}'"),
            });
        }
        let (stdout, mut stderr, dropped) = self.take_output(&ctl);
        let mut results = Vec::with_capacity(cores);
        for (c, CoreExit { exit, stderr: fd2 }) in exits.iter().enumerate() {
            let rec = ctl.core(c);
            if rec.state.load(Ordering::Acquire) == CORE_DONE && *exit == Exit::Code(0) {
                results.push(rec.result.load(Ordering::Acquire) as i32);
                continue;
            }
            let mut fault = self.fault_of(c, *exit, kernel, &lib_file);
            fault.stdout = stdout;
            // What the faulting core wrote to fd 2 (a failed assert's message), once.
            stderr.extend_from_slice(fd2);
            fault.stderr = stderr;
            return Err(EmuError::Fault(Box::new(fault)));
        }
        // Core 0's fd 2 reaches the host, as its printf does; the other cores' does not.
        if let Some(first) = exits.first() {
            stderr.extend_from_slice(&first.stderr);
        }
        Ok(Run {
            stdout,
            stderr,
            stdio_dropped: dropped,
            results,
            elapsed: start.elapsed(),
        })
    }

    fn place(
        &mut self,
        label: &str,
        dtype: DType,
        shape: &[u64],
        data: Option<&[u8]>,
        loc: Location,
        sbuf_next: &mut u64,
    ) -> Result<ArgTensor, EmuError> {
        tensor::check_rank(shape)?;
        // Bytes placed: the tensor's, or the data given (a scalar's room).
        let n = data.map_or(tensor::numel(shape) * dtype.size() as u64, |d| {
            d.len() as u64
        });
        let dims: Vec<u32> = shape.iter().map(|&d| d as u32).collect();
        let (t, soc, guard) = match loc {
            Location::Hbm => {
                let p = self.memory.alloc_hbm(n, self.guard_tensors)?;
                (ArgTensor::hbm(dtype.isa(), p.soc, &dims), p.soc, p.guard)
            }
            Location::Sbuf => {
                // Guarded: the tensor ends where a page starts, and that page stays unused.
                let (off, guard) = if self.guard_tensors {
                    let pages = n.div_ceil(PAGE) * PAGE;
                    let off = sbuf_next.next_multiple_of(PAGE) + (pages - n);
                    (off, Some(off + n))
                } else {
                    (sbuf_next.next_multiple_of(64), None)
                };
                let end = off + n + guard.map_or(0, |_| PAGE);
                self.memory.check_sbuf(end)?;
                *sbuf_next = end;
                // One partition: the runtime addresses SBUF tensors as contiguous bytes
                // from the SBUF base (docs/decisions.md, "SBUF tensors in the emulator").
                (
                    ArgTensor::sbuf(dtype.isa(), off as u32, &dims, 1),
                    memory::SBUF_BASE + off,
                    guard.map(|g| memory::SBUF_BASE + g),
                )
            }
        };
        let dst = self
            .memory
            .bytes_populated(soc, n as usize)
            .ok_or(MemoryError::HbmFull { want: n, left: 0 })?;
        match data {
            Some(d) => copy_parallel(dst, d),
            None => fill_parallel(dst, 0),
        }
        self.placed.push(PlacedTensor {
            label: label.into(),
            soc,
            len: n,
            guard,
        });
        Ok(t)
    }

    fn read_tensor(&self, t: &ArgTensor, dtype: DType) -> Result<Vec<u8>, EmuError> {
        let n = t.num_elem() * dtype.size();
        // The engine places tensors in HBM or SBUF only.
        let soc = t.soc_addr(memory::SBUF_BASE).unwrap_or(0);
        let src = self.memory.read(soc, n).ok_or(MemoryError::HbmFull {
            want: n as u64,
            left: 0,
        })?;
        Ok(host_copy(src))
    }

    fn fault_of(&self, c: usize, exit: Exit, kernel: &str, library: &Path) -> DeviceFault {
        let ctl = self.control();
        let rec = ctl.core(c);
        let mut fault = DeviceFault {
            kernel: kernel.into(),
            core: c,
            kind: FaultKind::Exited,
            phase: PHASE_KERNEL,
            soc_addr: None,
            host_addr: None,
            location: None,
            access: None,
            tensor: None,
            message: String::new(),
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
        if rec.state.load(Ordering::Acquire) == CORE_FAULT {
            fault.kind =
                FaultKind::from_u32(rec.kind.load(Ordering::Acquire)).unwrap_or(FaultKind::Exited);
            fault.phase = rec.phase.load(Ordering::Acquire);
            let a = rec.addr.load(Ordering::Acquire);
            fault.host_addr = (a != 0).then_some(a);
            fault.soc_addr = fault.host_addr.and_then(|h| self.memory.soc_of(h));
            fault.message = ctl.message(c);
            if fault.kind == FaultKind::Entry {
                let s = rec.result.load(Ordering::Acquire);
                fault.message = format!("entry_func returned {s} ({})", status_name(s));
            }
            fault.access = match rec.access.load(Ordering::Acquire) {
                ACCESS_READ => Some("read"),
                ACCESS_WRITE => Some("write"),
                _ => None,
            };
            let pc = rec.pc.load(Ordering::Acquire);
            let base = rec.module_base.load(Ordering::Acquire);
            if pc != 0 {
                fault.location = Some(match symbolize::locate(library, base, pc) {
                    Some(sym) => format!("{sym} (host {pc:#x})"),
                    None => format!("host {pc:#x}"),
                });
            }
            if let Some(soc) = fault.soc_addr {
                fault.tensor = self.tensor_at(soc);
            }
        } else {
            fault.message = match exit {
                Exit::TimedOut => {
                    fault.kind = FaultKind::Timeout;
                    format!("still running after {:?}; stopped", self.timeout)
                }
                Exit::Signal(s) => format!("killed by {}", core::signal_name(s)),
                Exit::Code(code) => {
                    format!("the core's process exited with code {code} before the kernel returned")
                }
            };
            // A core that ended during its start keeps the phase it reported.
            let phase = rec.phase.load(Ordering::Acquire);
            if phase == PHASE_LOAD || phase == control::PHASE_START {
                fault.phase = phase;
            }
        }
        fault
    }

    /// The tensor whose guard page holds `soc`: "the output (16 bytes) at offset 16".
    fn tensor_at(&self, soc: u64) -> Option<String> {
        self.placed.iter().find_map(|t| {
            let g = t.guard?;
            (soc >= g && soc < g + PAGE)
                .then(|| format!("{} ({} bytes) at offset {}", t.label, t.len, soc - t.soc))
        })
    }
}

/// Appends the stdio ring's entries to `out` (fd 1) and `err` (fd 2) while the two hold at
/// most `cap` bytes; the bytes the ring dropped or that did not fit.
fn drain_stdio(ctl: &ControlBlock, out: &mut Vec<u8>, err: &mut Vec<u8>, cap: usize) -> u32 {
    let (entries, mut dropped) = ctl.stdio_drain();
    for (fd, b) in entries {
        if out.len() + err.len() + b.len() > cap {
            dropped = dropped.saturating_add(b.len() as u32);
            continue;
        }
        if fd == 2 { &mut *err } else { &mut *out }.extend_from_slice(&b);
    }
    dropped
}

/// An argument blob for `n` arguments, nothing placed yet.
fn empty_blob(n: usize) -> ArgBlob {
    ArgBlob::empty(n as u32, memory::SBUF_BASE)
}

/// A NEURON_LIBRARY op's arguments: their number, and tensors where it takes tensors.
fn check_op_args(op: &str, sig: &schema::OpSig, args: &[LaunchArg]) -> Result<(), EmuError> {
    let bad = |why: String| EmuError::Signature {
        kernel: op.into(),
        why,
    };
    let kinds: Vec<String> = sig.args.iter().map(|k| k.to_string()).collect();
    if args.len() != sig.args.len() {
        return Err(bad(format!(
            "takes {} argument(s) ({}), got {}",
            sig.args.len(),
            kinds.join(", "),
            args.len()
        )));
    }
    for (i, (kind, a)) in sig.args.iter().zip(args).enumerate() {
        let tensor = matches!(a, LaunchArg::Tensor(..) | LaunchArg::Device(_));
        if tensor != (*kind == schema::ArgKind::Tensor) {
            return Err(bad(format!(
                "argument {i} is a {kind}, got a {}",
                if tensor { "tensor" } else { "scalar" }
            )));
        }
    }
    Ok(())
}

/// An `EmuError` about one argument (or the output), with its label.
fn named(what: &str, e: EmuError) -> EmuError {
    match e {
        EmuError::Tensor(source) => EmuError::Argument {
            what: what.into(),
            source,
        },
        other => other,
    }
}

/// A host copy of device bytes. Large results land in memory advised for transparent huge
/// pages: faulting in a fresh 64 MiB buffer 4 KiB at a time costs several times the copy.
fn host_copy(src: &[u8]) -> Vec<u8> {
    let mut v = host_buffer(src.len());
    let n = src.len();
    // SAFETY: the vector has room for n bytes (its capacity) and `src` holds n; a fresh
    // allocation does not overlap it.
    unsafe { copy_raw_parallel(v.spare_capacity_mut().as_mut_ptr().cast(), src.as_ptr(), n) };
    // SAFETY: all n bytes were written above.
    unsafe { v.set_len(n) };
    v
}

/// Bytes from which a copy or fill is split over the CPUs: a large tensor's copy is
/// bound by how fast one CPU moves memory and takes its page faults.
const PARALLEL_FROM: usize = 8 << 20;

/// Runs `part(lo, hi)` over [0, n) in pieces, one per CPU (up to four) when `n` is large,
/// the first on this thread.
fn in_parallel(n: usize, part: impl Fn(usize, usize) + Sync) {
    let ways = if n >= PARALLEL_FROM {
        doorbell::cpus().clamp(1, 4)
    } else {
        1
    };
    if ways == 1 {
        return part(0, n);
    }
    // Pieces of whole 2 MiB pages, so two threads never fault on one huge page.
    let piece = n.div_ceil(ways).next_multiple_of(2 << 20);
    std::thread::scope(|s| {
        let part = &part;
        for w in 1..ways {
            let (lo, hi) = ((w * piece).min(n), ((w + 1) * piece).min(n));
            if lo < hi {
                s.spawn(move || part(lo, hi));
            }
        }
        part(0, piece.min(n));
    });
}

/// `dst.copy_from_slice(src)`, split over the CPUs when large.
fn copy_parallel(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy of equal lengths");
    // SAFETY: both slices span the length (asserted); a `&mut` and a `&` never overlap.
    unsafe { copy_raw_parallel(dst.as_mut_ptr(), src.as_ptr(), src.len()) }
}

/// Copies `n` bytes from `src` to `dst`, split over the CPUs when large.
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes (initialised or not), they do not
/// overlap, and neither is touched elsewhere during the call.
unsafe fn copy_raw_parallel(dst: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dst as usize, src as usize);
    in_parallel(n, |lo, hi| {
        // SAFETY: [lo, hi) lies in both ranges (the contract); the pieces are disjoint.
        unsafe {
            std::ptr::copy_nonoverlapping((s as *const u8).add(lo), (d as *mut u8).add(lo), hi - lo)
        }
    });
}

/// `dst.fill(v)`, split over the CPUs when large.
fn fill_parallel(dst: &mut [u8], v: u8) {
    let d = dst.as_mut_ptr() as usize;
    in_parallel(dst.len(), |lo, hi| {
        // SAFETY: [lo, hi) lies in `dst`; the pieces are disjoint.
        unsafe { std::ptr::write_bytes((d as *mut u8).add(lo), v, hi - lo) }
    });
}

/// An empty vector with room for `len` bytes of tensor data; a large one asks for
/// transparent huge pages (as NumPy does for its arrays), so filling it takes a fault per
/// 2 MiB instead of per 4 KiB.
pub fn host_buffer(len: usize) -> Vec<u8> {
    const HUGE: usize = 2 << 20;
    let v: Vec<u8> = Vec::with_capacity(len);
    if len >= 2 * HUGE {
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + len) & !(HUGE - 1);
        if end > start {
            // SAFETY: advice on whole pages inside the vector's own allocation; it changes
            // no contents (the memory is not yet initialised).
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Device tensors are released one by one, in any order: their memory is reused, and
    /// once the lowest are gone, HBM's bottom-up launch tensors can use it again; a second
    /// release, or one from before a reset, changes nothing; uploads check their size.
    #[test]
    fn device_tensors_are_freed_one_by_one() {
        let mut e = PoolEngine::new(64 << 20, PoolImage::default()).unwrap();
        let kept = e.upload_bytes(DType::U8, vec![4], &[1, 2, 3, 4]).unwrap();
        let a = e.upload_bytes(DType::F32, vec![1024], &[7; 4096]).unwrap();
        let b = e.alloc_device(DType::U8, vec![3 << 20]).unwrap();
        let c = e.alloc_device(DType::U8, vec![100]).unwrap();
        assert!(c.soc < b.soc && b.soc < a.soc && a.soc < kept.soc);
        // A middle one: its place is reused by a tensor that fits.
        assert!(e.free_device(&a));
        assert!(!e.free_device(&a), "a second release is refused");
        let a2 = e.alloc_device(DType::F32, vec![512]).unwrap();
        assert!(a2.soc > b.soc && a2.soc < kept.soc, "in a's old range");
        assert_eq!(
            e.device_bytes(&a2).unwrap(),
            &[0; 2048],
            "zeroed on allocation"
        );
        // All but `kept`, in any order: the whole range below it is free again, as one.
        for d in [&c, &a2, &b] {
            assert!(e.free_device(d));
        }
        let big = e.alloc_device(DType::U8, vec![60 << 20]).unwrap();
        assert!(big.soc < kept.soc);
        assert_eq!(e.device_bytes(&kept).unwrap(), &[1, 2, 3, 4]);
        assert!(e.free_device(&big));
        assert!(matches!(
            e.upload_bytes(DType::F32, vec![2], &[0; 7]),
            Err(EmuError::Tensor(TensorError::Size {
                want: 8,
                got: 7,
                ..
            }))
        ));
        // Temporaries go when the scope ends, kept tensors stay, failure or not.
        let probe = e.alloc_device(DType::U8, vec![64]).unwrap();
        assert!(e.free_device(&probe));
        let r: Result<(), ()> = e.with_temporaries(|e| {
            e.upload_bytes(DType::U8, vec![1 << 20], &[9; 1 << 20])
                .unwrap();
            e.with_temporaries(|e| e.alloc_device(DType::U8, vec![1 << 20]).unwrap());
            Err(())
        });
        assert!(r.is_err());
        let after = e.alloc_device(DType::U8, vec![64]).unwrap();
        assert_eq!(after.soc, probe.soc, "the temporaries' range is free again");
        e.free_device_tensors();
        assert!(!e.free_device(&kept), "gone with the reset");
    }

    #[test]
    fn host_copies_are_exact_at_every_size() {
        // Below and above the size copies are split over CPUs at, and pieces that do not
        // divide evenly.
        for n in [
            0usize,
            1,
            4095,
            4 << 20,
            (5 << 20) + 17,
            super::PARALLEL_FROM,
            (9 << 20) + 3,
            (33 << 20) + 4097,
        ] {
            let src: Vec<u8> = (0..n).map(|i| (i * 31 + i / 4096) as u8).collect();
            assert_eq!(super::host_copy(&src), src, "{n} bytes");
            let mut dst = vec![0xEEu8; n];
            super::copy_parallel(&mut dst, &src);
            assert!(dst == src, "{n} bytes");
            super::fill_parallel(&mut dst, 7);
            assert!(dst.iter().all(|&b| b == 7), "{n} bytes");
        }
    }
}
