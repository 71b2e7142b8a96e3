//! What goes wrong in the emulator: load and launch errors, and device faults.

use super::backend::Stdio;
use super::library::LibraryError;
use super::memory::MemoryError;
use super::symbolize::SourceFrame;
use super::tensor::TensorError;
use super::MAX_ARGS;
use customop_abi::control::{FaultKind, PHASE_LOAD, PHASE_START};

/// `SUNDA_UCODE_LIB_STATUS` names (from the wire layouts, `customop-abi`).
pub use customop_abi::status::name as status_name;

/// A kernel (or a library's loading or start code) that stopped a launch.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceFault {
    pub kernel: String,
    pub core: usize,
    pub kind: FaultKind,
    /// `PHASE_*`: loading the library, its start code, or the kernel.
    pub phase: u32,
    /// The faulting SoC address, when the fault was a memory access inside device memory.
    pub soc_addr: Option<u64>,
    /// The faulting host address, when known (a data address; a trap's instruction).
    pub host_addr: Option<u64>,
    /// The faulting instruction, symbolized from the op library where possible.
    pub location: Option<String>,
    /// "read" or "write", where the processor says.
    pub access: Option<&'static str>,
    /// The tensor the access ran past, and where: "the output (16 bytes) at offset 16".
    pub tensor: Option<String>,
    pub message: String,
    /// The call stack at the fault, innermost first, named from the library's debug
    /// information (empty when the backend could not walk it).
    pub stack: Vec<SourceFrame>,
    /// Core 0's output up to the fault, then what the faulting core wrote to fd 2.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl DeviceFault {
    /// The fault with what came out before it: `stdio` (the launch's, ahead of the fault)
    /// and the faulting core's own fd 2 after it (a failed assert's message), once.
    pub(crate) fn with_output(mut self, stdio: Stdio, core_stderr: &[u8]) -> DeviceFault {
        let Stdio { out, mut err, .. } = stdio;
        err.extend_from_slice(core_stderr);
        (self.stdout, self.stderr) = (out, err);
        self
    }

    /// Whether the kernel faulted (not the library's loading or start code, in a core a
    /// launch started).
    pub fn in_kernel(&self) -> bool {
        self.phase == customop_abi::control::PHASE_KERNEL
    }

    /// The op author's frames of the call stack, innermost first: the line that faulted
    /// (or called the runtime check that stopped it), then its callers.
    pub fn op_frames(&self) -> impl Iterator<Item = &SourceFrame> {
        self.stack.iter().filter(|f| f.is_op_code())
    }

    /// The frame a fault is shown at: the innermost of the op author's, else the innermost
    /// of all (None: the stack was not walked).
    pub fn shown_frame(&self) -> Option<&SourceFrame> {
        self.op_frames().next().or_else(|| self.stack.first())
    }
}

impl std::fmt::Display for DeviceFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.fmt_line(f)?;
        let mut frames = self.op_frames();
        if let Some(at) = frames.next() {
            write!(f, ", at {}", at.describe())?;
        }
        for caller in frames {
            write!(f, "\n    called from {}", caller.describe())?;
        }
        Ok(())
    }
}

impl DeviceFault {
    fn fmt_line(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.phase {
            PHASE_LOAD => write!(
                f,
                "device fault while loading the op library (its static constructors) on core {}: {}",
                self.core,
                self.kind.describe()
            )?,
            PHASE_START => write!(
                f,
                "device fault in the library's start code (entry_func / register_funcs) on core {}: {}",
                self.core,
                self.kind.describe()
            )?,
            _ => write!(
                f,
                "device fault in kernel '{}' on core {}: {}",
                self.kernel,
                self.core,
                self.kind.describe()
            )?,
        }
        if let Some(t) = &self.tensor {
            write!(
                f,
                ": {} past the end of {t}",
                self.access.unwrap_or("access")
            )?;
        } else if let Some(a) = self.access {
            write!(f, " ({a})")?;
        }
        if self.kind == FaultKind::Timeout {
            // Where it was: the source line that follows (or the instruction, without one).
            write!(f, ": {}", self.message)?;
            if let (true, Some(l)) = (self.stack.is_empty(), &self.location) {
                write!(f, " at instruction {l}")?;
            }
            return Ok(());
        }
        if self.kind == FaultKind::Trap {
            if !self.message.is_empty() {
                write!(f, ": {}", self.message)?;
            }
            match (&self.location, self.host_addr) {
                (Some(l), _) => write!(f, " at instruction {l}")?,
                (None, Some(a)) => write!(f, " at instruction {a:#x}")?,
                _ => {}
            }
            return Ok(());
        }
        // A stack overflow's address is its guard page's: the message says what overflowed.
        match (self.kind, self.soc_addr, self.host_addr) {
            (FaultKind::StackOverflow, ..) => {}
            (_, Some(a), _) => write!(f, " at SoC address {a:#x}")?,
            (_, None, Some(a)) => write!(f, " at host address {a:#x} (outside device memory)")?,
            _ => {}
        }
        if let Some(l) = &self.location {
            write!(f, " by the instruction at {l}")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("op library {path}: entry_func returned {status} ({})", status_name(*status))]
    Entry { path: String, status: u32 },
    #[error("op library {path}: {fault}")]
    StartFault {
        path: String,
        fault: Box<DeviceFault>,
    },
    #[error("op library {path}: entry_func registered {names} kernel name(s) but register_funcs reported {funcs}")]
    Registration {
        path: String,
        names: usize,
        funcs: usize,
    },
    #[error("no op library is loaded (register one, or a Pool image, first)")]
    NoLibrary,
    /// A call names no op or kernel of the library: the one error every front end gives.
    #[error("unknown {kind} '{name}'; the library registers: {}", known.join(", "))]
    UnknownTarget {
        name: String,
        /// "op" (a NEURON_LIBRARY library) or "kernel".
        kind: &'static str,
        known: Vec<String>,
    },
    /// A call's target was resolved against a library since replaced.
    #[error("{name}: resolved against an earlier library; resolve it again after a load")]
    StaleTarget { name: String },
    #[error("{n} arguments; a kernel takes at most {MAX_ARGS}")]
    TooManyArgs { n: usize },
    #[error("{0} cores requested; the Pool engine has 1 to 8")]
    Cores(usize),
    #[error("kernel '{kernel}': {why}")]
    Signature { kernel: String, why: String },
    #[error(transparent)]
    Tensor(#[from] TensorError),
    #[error("{what}: {source}")]
    Argument { what: String, source: TensorError },
    #[error("{0}")]
    Fault(Box<DeviceFault>),
    #[error("op {op}: {why}")]
    Shape { op: String, why: String },
    /// The output the caller gave (a device tensor, a buffer, a dtype and shape) is not the
    /// one the op's shape function or the kernel's schema gives.
    #[error("{target}: {why}")]
    Output { target: String, why: String },
    #[error("cannot start the cores: {0}")]
    Spawn(std::io::Error),
    #[error("cannot stop core {core} for a debugger: {why}")]
    Debug { core: usize, why: String },
    #[error("{what}: interrupted; the cores still running were stopped (fresh ones start at the next launch)")]
    Interrupted { what: String },
}
