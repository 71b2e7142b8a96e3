//! The emulated Pool engine: device memory addressed by SoC addresses, an op library built
//! for the host, and launches that marshal arguments as 48-byte descriptors and run the
//! kernel on 1 to 8 cores, each an isolated process (see [`core`]).

pub mod control;
pub mod core;
mod error;
mod launch;
pub mod library;
pub mod memory;
pub mod npy;
pub mod pool;
pub mod schema;
pub mod tensor;

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use neuroncustomop::descriptor::ArgTensor;
use neuroncustomop::runtime::{scratch, ArgBlob, ARG_BLOB_MAGIC, ARG_TYPE_TENSOR};

use self::control::{ControlBlock, FaultKind, CORE_DONE, CORE_FAULT};
use self::core::Program;
use self::library::OpLibrary;
use self::memory::{DeviceMemory, MemoryError, CORES};
use self::pool::{CorePool, Exit};
use self::schema::KernelSig;
use self::tensor::{DType, HostTensor, Location, TensorError};

pub use self::error::{status_name, DeviceFault, EmuError};
use self::launch::device_descriptor;
pub use self::launch::{
    check_signature, expected_output, Completion, DeviceTensor, Launch, LaunchArg, OutputSpec, Run,
};

/// Most arguments a kernel takes.
pub const MAX_ARGS: usize = neuroncustomop::runtime::MAX_ARGS;
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
    cores: CorePool,
    pub memory: DeviceMemory,
    library: Option<OpLibrary>,
    kernels: Vec<String>,
    image: PoolImage,
    pub timeout: Duration,
}

impl PoolEngine {
    /// An engine with `hbm_bytes` of HBM for tensors and the given Pool image (stock, or a
    /// registered pair that replaces it).
    pub fn new(hbm_bytes: u64, image: PoolImage) -> Result<PoolEngine, EmuError> {
        Ok(PoolEngine {
            cores: CorePool::default(),
            memory: DeviceMemory::new(hbm_bytes)?,
            library: None,
            kernels: Vec::new(),
            image,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    pub fn image(&self) -> &PoolImage {
        &self.image
    }

    fn control(&self) -> ControlBlock {
        // SAFETY: the status region is STATUS_BYTES, page-aligned and lives with `memory`.
        unsafe { ControlBlock::new(self.memory.status_host()) }
    }

    /// Loads an op library and runs its start code once (in a core process) to learn the
    /// kernels it registers.
    pub fn load(&mut self, path: &Path) -> Result<&[String], EmuError> {
        let lib = OpLibrary::open(path)?;
        let shown = path.display().to_string();
        let ctl = self.control();
        ctl.reset();
        let program = Program {
            memory: &self.memory,
            entry: lib.entry,
            register_funcs: lib.register_funcs,
        };
        let exit = pool::probe(&program, Instant::now() + self.timeout).map_err(EmuError::Spawn)?;
        let rec = ctl.core(0);
        if rec.state.load(Ordering::Acquire) != CORE_DONE {
            let fault = self.fault_of(0, exit, "entry_func");
            if fault.kind == FaultKind::Entry {
                return Err(EmuError::Entry {
                    path: shown,
                    status: rec.result.load(Ordering::Acquire),
                });
            }
            return Err(EmuError::StartFault {
                path: shown,
                fault: Box::new(fault),
            });
        }
        let names = ctl.names();
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
        self.cores.shutdown();
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
        self.check_launch(&l.kernel, &l.args, l.cores, l.output.dtype, &l.output.shape)?;
        self.memory.reset_hbm();
        let mut sbuf_next = 0u64;
        let mut blob = self.marshal(&l.args, &mut sbuf_next)?;
        blob.output = self.place(
            l.output.dtype,
            &l.output.shape,
            None,
            l.output.location,
            &mut sbuf_next,
        )?;
        let run = self.execute(&l.kernel, &blob, l.cores, start)?;
        let bytes = self.read_tensor(&blob.output, l.output.dtype)?;
        Ok(Completion {
            output: HostTensor::new(l.output.dtype, l.output.shape.clone(), bytes)?,
            stdout: run.stdout,
            stderr: run.stderr,
            stdio_dropped: run.stdio_dropped,
            results: run.results,
            elapsed: start.elapsed(),
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
        self.check_launch(kernel, args, cores, out.dtype, &out.shape)?;
        self.memory.reset_hbm();
        let mut sbuf_next = 0u64;
        let mut blob = self.marshal(args, &mut sbuf_next)?;
        blob.output = device_descriptor(out);
        self.execute(kernel, &blob, cores, start)
    }

    /// A zeroed device tensor.
    pub fn alloc_device(
        &mut self,
        dtype: DType,
        shape: Vec<u64>,
    ) -> Result<DeviceTensor, EmuError> {
        tensor::check_rank(&shape)?;
        let n = tensor::numel(&shape) * dtype.size() as u64;
        let soc = self.memory.alloc_resident(n)?;
        self.memory
            .bytes(soc, n as usize)
            .ok_or(MemoryError::HbmFull { want: n, left: 0 })?
            .fill(0);
        Ok(DeviceTensor { dtype, shape, soc })
    }

    /// A device tensor holding a copy of `t`.
    pub fn upload(&mut self, t: &HostTensor) -> Result<DeviceTensor, EmuError> {
        let d = self.alloc_device(t.dtype, t.shape.clone())?;
        self.memory
            .bytes(d.soc, t.data.len())
            .ok_or(MemoryError::HbmFull {
                want: t.data.len() as u64,
                left: 0,
            })?
            .copy_from_slice(&t.data);
        Ok(d)
    }

    /// A device tensor's bytes on the host.
    pub fn download(&self, d: &DeviceTensor) -> Result<HostTensor, EmuError> {
        let n = tensor::numel(&d.shape) as usize * d.dtype.size();
        let bytes = self.memory.read(d.soc, n).ok_or(MemoryError::HbmFull {
            want: n as u64,
            left: 0,
        })?;
        Ok(HostTensor::new(d.dtype, d.shape.clone(), host_copy(bytes))?)
    }

    /// Releases every device tensor (their handles must not be used again).
    pub fn free_device_tensors(&mut self) {
        self.memory.reset_resident();
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
        tensor::check_rank(out_shape)?;
        Ok(())
    }

    /// Places the arguments and builds the argument blob (output still empty).
    fn marshal(&mut self, args: &[LaunchArg], sbuf_next: &mut u64) -> Result<ArgBlob, EmuError> {
        let mut blob = ArgBlob {
            magic: ARG_BLOB_MAGIC,
            num_args: args.len() as u32,
            sbuf_base: memory::SBUF_BASE,
            args: [ArgTensor::zeroed(); MAX_ARGS],
            types: [0; MAX_ARGS],
            reserved: [0; 6],
            output: ArgTensor::zeroed(),
        };
        for (i, a) in args.iter().enumerate() {
            blob.types[i] = ARG_TYPE_TENSOR;
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
                    (*dt, &[1u64][..], bytes.as_slice(), Location::Hbm)
                }
                LaunchArg::Device(d) => {
                    blob.args[i] = device_descriptor(d);
                    continue;
                }
            };
            blob.args[i] = self.place(dtype, shape, Some(data), loc, sbuf_next)?;
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
        let (entry, register_funcs) = {
            let lib = self.library.as_ref().ok_or(EmuError::NoLibrary)?;
            (lib.entry, lib.register_funcs)
        };
        for c in 0..cores {
            let (p, _) = self.memory.scratch_host(c);
            // SAFETY: the blob's place in this core's data scratch area (inside the region,
            // which is 64 KiB); unaligned-safe write.
            unsafe {
                p.add(scratch::ARG_BLOB)
                    .cast::<ArgBlob>()
                    .write_unaligned(*blob)
            };
        }
        let ctl = self.control();
        ctl.reset();
        let name = CString::new(kernel).map_err(|_| EmuError::UnknownKernel {
            kernel: kernel.into(),
            known: self.kernels.clone(),
        })?;
        let program = Program {
            memory: &self.memory,
            entry,
            register_funcs,
        };
        let exits = self
            .cores
            .launch(&program, &name, cores, Instant::now() + self.timeout)
            .map_err(EmuError::Spawn)?;
        let (entries, dropped) = ctl.stdio_drain();
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        for (fd, b) in entries {
            if fd == 2 { &mut stderr } else { &mut stdout }.extend_from_slice(&b);
        }
        let mut results = Vec::with_capacity(cores);
        for (c, &exit) in exits.iter().enumerate() {
            let rec = ctl.core(c);
            if rec.state.load(Ordering::Acquire) == CORE_DONE && exit == Exit::Code(0) {
                results.push(rec.result.load(Ordering::Acquire) as i32);
                continue;
            }
            let mut fault = self.fault_of(c, exit, kernel);
            fault.stdout = stdout;
            fault.stderr = stderr;
            return Err(EmuError::Fault(Box::new(fault)));
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
        dtype: DType,
        shape: &[u64],
        data: Option<&[u8]>,
        loc: Location,
        sbuf_next: &mut u64,
    ) -> Result<ArgTensor, EmuError> {
        tensor::check_rank(shape)?;
        let n = tensor::numel(shape) * dtype.size() as u64;
        let dims: Vec<u32> = shape.iter().map(|&d| d as u32).collect();
        let (t, soc) = match loc {
            Location::Hbm => {
                let a = self.memory.alloc_hbm(n)?;
                (ArgTensor::hbm(dtype.isa(), a, &dims), a)
            }
            Location::Sbuf => {
                let off = sbuf_next.next_multiple_of(64);
                self.memory.check_sbuf(off + n)?;
                *sbuf_next = off + n;
                // One partition: the runtime addresses SBUF tensors as contiguous bytes
                // from the SBUF base (docs/decisions.md, "SBUF tensors in the emulator").
                (
                    ArgTensor::sbuf(dtype.isa(), off as u32, &dims, 1),
                    memory::SBUF_BASE + off,
                )
            }
        };
        let dst = self
            .memory
            .bytes(soc, n as usize)
            .ok_or(MemoryError::HbmFull { want: n, left: 0 })?;
        match data {
            Some(d) => dst.copy_from_slice(d),
            None => dst.fill(0),
        }
        Ok(t)
    }

    fn read_tensor(&self, t: &ArgTensor, dtype: DType) -> Result<Vec<u8>, EmuError> {
        let n = t.num_elem() * dtype.size();
        let soc = match t.location {
            // SAFETY: plain data of the arm the location names.
            neuroncustomop::descriptor::LOCATION_HBM => unsafe { t.storage.hbm.addr },
            _ => memory::SBUF_BASE + u64::from(unsafe { t.storage.tpb.addr }),
        };
        let src = self.memory.read(soc, n).ok_or(MemoryError::HbmFull {
            want: n as u64,
            left: 0,
        })?;
        Ok(host_copy(src))
    }

    fn fault_of(&self, c: usize, exit: Exit, kernel: &str) -> DeviceFault {
        let ctl = self.control();
        let rec = ctl.core(c);
        let (kind, host, message) = if rec.state.load(Ordering::Acquire) == CORE_FAULT {
            let kind =
                FaultKind::from_u32(rec.kind.load(Ordering::Acquire)).unwrap_or(FaultKind::Exited);
            let a = rec.addr.load(Ordering::Acquire);
            let mut msg = ctl.message(c);
            if kind == FaultKind::Entry {
                let s = rec.result.load(Ordering::Acquire);
                msg = format!("entry_func returned {s} ({})", status_name(s));
            }
            (kind, (a != 0).then_some(a), msg)
        } else {
            match exit {
                Exit::TimedOut => (
                    FaultKind::Timeout,
                    None,
                    format!("still running after {:?}; stopped", self.timeout),
                ),
                Exit::Signal(s) => (
                    FaultKind::Exited,
                    None,
                    format!("killed by {}", core::signal_name(s)),
                ),
                Exit::Code(code) => (
                    FaultKind::Exited,
                    None,
                    format!(
                        "the core's process exited with code {code} before the kernel returned"
                    ),
                ),
            }
        };
        DeviceFault {
            kernel: kernel.into(),
            core: c,
            kind,
            soc_addr: host.and_then(|h| self.memory.soc_of(h)),
            host_addr: host,
            message,
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }
}

/// A host copy of device bytes. Large results land in memory advised for transparent huge
/// pages: faulting in a fresh 64 MiB buffer 4 KiB at a time costs several times the copy.
fn host_copy(src: &[u8]) -> Vec<u8> {
    const HUGE: usize = 2 << 20;
    let mut v: Vec<u8> = Vec::with_capacity(src.len());
    if src.len() >= 2 * HUGE {
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + src.len()) & !(HUGE - 1);
        if end > start {
            // SAFETY: advice on whole pages inside the vector's own allocation; it changes
            // no contents (the memory is not yet initialised).
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    v.extend_from_slice(src);
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_copies_are_exact_at_every_size() {
        for n in [0usize, 1, 4095, 4 << 20, (5 << 20) + 17] {
            let src: Vec<u8> = (0..n).map(|i| (i * 31 + i / 4096) as u8).collect();
            assert_eq!(super::host_copy(&src), src, "{n} bytes");
        }
    }
}
