//! Where kernels run: the ISA backend interface the engine drives, and the host backend
//! behind it today (op libraries built for the host, one forked process per core). A QEMU
//! backend for Xtensa images implements the same interface against the same device
//! memory, and reports the same typed outcomes per core (done with a value, or a fault
//! record); the host backend decodes its own cores' control block into them.

use std::ffi::CStr;
use std::time::Duration;

use super::deadline::Deadline;
use super::debug::DebugSession;
use super::library::OpLibrary;
use super::memory::DeviceMemory;
use super::symbolize::SourceFrame;
pub use customop_abi::access::AccessCounts;
use customop_abi::control::FaultKind;

/// The kind of access a memory fault made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// Where a host-built core stopped: the instruction and the base its library was loaded at
/// (the engine names the function from the library file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPc {
    pub pc: u64,
    pub module_base: u64,
}

/// A faulting core's call stack, innermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Stack {
    #[default]
    Unknown,
    /// Host addresses a host-built core reported, with its library's load base; the engine
    /// keeps those inside the library and names them from its file. The first is the
    /// faulting instruction when `first_exact`, else every one is a return address.
    Host {
        addrs: Vec<u64>,
        module_base: u64,
        first_exact: bool,
    },
    /// Frames the backend named from its own images.
    Named(Vec<SourceFrame>),
}

/// What a backend knows of a core's fault; the engine adds the kernel, the SoC address and
/// the tensor it belongs to, and the function's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRecord {
    pub kind: FaultKind,
    /// When it happened: PHASE_LOAD, PHASE_START or PHASE_KERNEL.
    pub phase: u32,
    /// The host address of the byte a memory fault touched, when known.
    pub host_addr: Option<u64>,
    pub access: Option<Access>,
    pub pc: Option<HostPc>,
    /// The call stack at the fault, where the backend knows it.
    pub stack: Stack,
    /// The report's words (without the core's number or the kind, which the engine adds).
    pub message: String,
    /// For [`FaultKind::Entry`]: the status `entry_func` returned.
    pub status: u32,
}

impl FaultRecord {
    /// A fault of `kind` in `phase` with `message` and nothing else known.
    pub fn new(kind: FaultKind, phase: u32, message: impl Into<String>) -> FaultRecord {
        FaultRecord {
            kind,
            phase,
            host_addr: None,
            access: None,
            pc: None,
            stack: Stack::Unknown,
            message: message.into(),
            status: 0,
        }
    }
}

/// How one core's part ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It completed with this value: a kernel's return value, the probe's launcher count,
    /// a shape function's status.
    Done(u32),
    Fault(FaultRecord),
}

/// One core's outcome, and what it wrote to fd 2 meanwhile (a failed assert's message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreEnd {
    pub outcome: Outcome,
    pub stderr: Vec<u8>,
}

impl CoreEnd {
    pub fn done(value: u32) -> CoreEnd {
        CoreEnd {
            outcome: Outcome::Done(value),
            stderr: Vec::new(),
        }
    }

    pub fn fault(record: FaultRecord) -> CoreEnd {
        CoreEnd {
            outcome: Outcome::Fault(record),
            stderr: Vec::new(),
        }
    }
}

/// What the cores printed that reaches the host (core 0's stdout and stderr, as the
/// firmware forwards them), and the bytes that were dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stdio {
    pub out: Vec<u8>,
    pub err: Vec<u8>,
    pub dropped: u32,
}

impl Stdio {
    /// The stream for descriptor `fd`: 2 is stderr, anything else stdout.
    pub fn stream(&mut self, fd: u8) -> &mut Vec<u8> {
        if fd == 2 {
            &mut self.err
        } else {
            &mut self.out
        }
    }

    /// Appends `other` while the two streams hold at most `cap` bytes; counts the rest.
    pub fn append(&mut self, other: Stdio, cap: usize) {
        self.dropped = self.dropped.saturating_add(other.dropped);
        for (from, fd2) in [(other.out, false), (other.err, true)] {
            let room = cap.saturating_sub(self.out.len() + self.err.len());
            let take = from.len().min(room);
            self.dropped = self
                .dropped
                .saturating_add(u32::try_from(from.len() - take).unwrap_or(u32::MAX));
            if fd2 { &mut self.err } else { &mut self.out }.extend_from_slice(&from[..take]);
        }
    }
}

/// Several cores' output as lines prefixed with their core (`[core 3] ...`), for
/// `--all-cores-stdio`: each core's bytes on each descriptor are cut at newlines, in the
/// order they arrive; a line still open at the end is closed with a newline.
#[derive(Default)]
pub struct CoreLines {
    open: Vec<((usize, u8), Vec<u8>)>,
}

impl CoreLines {
    /// Adds what core `core` wrote to `fd`, moving its complete lines into `into`.
    pub fn push(&mut self, core: usize, fd: u8, bytes: &[u8], into: &mut Stdio) {
        let key = (core, fd);
        let at = match self.open.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.open.push((key, Vec::new()));
                self.open.len() - 1
            }
        };
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            let line = &mut self.open[at].1;
            line.extend_from_slice(piece);
            if piece.ends_with(b"\n") {
                let out = into.stream(fd);
                out.extend_from_slice(format!("[core {core}] ").as_bytes());
                out.append(line);
            }
        }
    }

    /// Closes the lines still open.
    pub fn finish(self, into: &mut Stdio) {
        for ((core, fd), mut line) in self.open {
            if !line.is_empty() {
                let out = into.stream(fd);
                out.extend_from_slice(format!("[core {core}] ").as_bytes());
                out.append(&mut line);
                out.push(b'\n');
            }
        }
    }
}

/// The load-time probe's result: the start code's outcome (done: the launcher count
/// `register_funcs` gave), the kernel names it registered, the schema text it carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probed {
    pub end: CoreEnd,
    pub names: Vec<Vec<u8>>,
    pub schema: Option<Vec<u8>>,
    pub stdio: Stdio,
}

/// The cores a launch runs: `count` cores take part (each kernel sees `get_cpu_count() ==
/// count`), and all of them start, or `only` some of them (a mask: a check's runs alone
/// or in groups, D82, D90).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Team {
    pub count: usize,
    pub only: Option<u8>,
    /// Every core's stdio reaches the host, each line prefixed with its core
    /// (`--all-cores-stdio`); otherwise core 0's alone, as on hardware.
    pub all_stdio: bool,
    /// The cores measure the kernel (`--profile`): [`Launched::profiles`].
    pub profile: bool,
    /// A SoC range (start, bytes) each core reports touching, where the backend can tell:
    /// [`Launched::touched`] (a check's runs, D89).
    pub watch: Option<(u64, u64)>,
    /// Every core records the bytes it reads and writes in the tensor windows, where the
    /// backend sees each access ([`IsaBackend::traces_accesses`]): [`Launched::accesses`].
    pub trace: bool,
}

impl Team {
    /// Cores `0..count`.
    pub fn all(count: usize) -> Team {
        Team {
            count,
            only: None,
            all_stdio: false,
            profile: false,
            watch: None,
            trace: false,
        }
    }

    /// The same team, measuring the kernel when `on`.
    pub fn with_profile(self, on: bool) -> Team {
        Team {
            profile: on,
            ..self
        }
    }

    /// The same team, with every core's stdio reaching the host when `all`.
    pub fn with_all_stdio(self, all: bool) -> Team {
        Team {
            all_stdio: all,
            ..self
        }
    }

    /// Core `core` of a launch of `count` cores, alone.
    pub fn alone(core: usize, count: usize) -> Team {
        Team::group(1 << core, count)
    }

    /// The cores in `mask` of a launch of `count` cores.
    pub fn group(mask: u8, count: usize) -> Team {
        Team {
            count,
            only: Some(mask),
            all_stdio: false,
            profile: false,
            watch: None,
            trace: false,
        }
    }

    /// The same team, each core recording its reads and writes (D101).
    pub fn with_trace(self) -> Team {
        Team {
            trace: true,
            ..self
        }
    }

    /// The same team, each core reporting what it touches of `bytes` at SoC `soc`.
    pub fn watching(self, soc: u64, bytes: u64) -> Team {
        Team {
            watch: Some((soc, bytes)),
            ..self
        }
    }

    /// The cores started, in order.
    pub fn cores(&self) -> Vec<usize> {
        (0..self.count)
            .filter(|&c| self.only.is_none_or(|m| c < 8 && m & (1 << c) != 0))
            .collect()
    }
}

/// A launch's result: one end per core started, in [`Team::cores`] order, and the stdio
/// that reaches the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launched {
    pub cores: Vec<CoreEnd>,
    pub stdio: Stdio,
    /// Each core's measurements when the team asked for them (else empty).
    pub profiles: Vec<CoreProfile>,
    /// What each core started touched of the watched range ([`Team::watch`]), in
    /// [`Team::cores`] order (empty without a watch): byte ranges from the range's start, a
    /// superset of what it wrote. None: the backend cannot tell (a core that did not
    /// complete, or no way to see).
    pub touched: Vec<Option<Vec<std::ops::Range<u64>>>>,
    /// What each core started read and wrote ([`Team::trace`]), in [`Team::cores`] order
    /// (empty without a trace; None: the core did not complete).
    pub accesses: Vec<Option<crate::accesses::CoreAccesses>>,
    /// Where the profiled functions are defined, when the backend looked every one up
    /// while it named them ([`crate::profile::Profile::lines`]); None: it did not.
    pub lines: Option<DefinitionLines>,
}

/// Where functions are defined: demangled name -> (source file, line).
pub type DefinitionLines = std::collections::HashMap<String, (String, u32)>;

/// A shape function's result: core 0's end and, when it completed with a nonzero status,
/// why it refused the arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shaped {
    pub end: CoreEnd,
    pub refused: Option<String>,
    pub stdio: Stdio,
    /// The file the shape function ran in where it is not the loaded library's (a Pool
    /// image's host build beside it): a fault is named from its symbols.
    pub ran_in: Option<std::path::PathBuf>,
}

/// One core's part of a profiled launch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreProfile {
    pub core: usize,
    /// The kernel's wall time on the core (host cores).
    pub wall: Option<Duration>,
    /// Instructions the kernel executed on the core, where counted.
    pub instructions: Option<u64>,
    /// Instructions by function (demangled names), most first (Xtensa cores).
    pub functions: Vec<(String, u64)>,
    /// The tensor accesses the core's runtime counted (Xtensa cores): with the
    /// instructions, what the device-time estimate prices (`crate::estimate`).
    pub accesses: Option<AccessCounts>,
    /// The core's copies one by one with what ran between them (Xtensa cores whose runtime
    /// logs copies: D120).
    pub copies: Option<CopyTimeline>,
    /// Loads and stores the kernel made to its stack where that stack was in HBM (Xtensa
    /// cores whose profile plugin counts them: D121; 0 on a local stack).
    pub hbm_stack_accesses: Option<u64>,
    /// Where the kernel's time went on this machine (host cores: D124).
    pub measured: Option<MeasuredTimeline>,
}

/// A host core's kernel as measured on this machine (D124): its call stack sampled at a
/// fixed interval, and each run of like copies with when it began and ended. Times are ns
/// since the kernel began.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeasuredTimeline {
    /// Time between samples at the kernel's end (it doubles each time the samples fill).
    pub interval_ns: u64,
    /// The sampled stacks in time order: when, and the functions outermost first (the
    /// kernel's own first; a frame outside the op library is [`OUTSIDE_FRAME`]).
    pub samples: Vec<(u64, Vec<String>)>,
    pub copies: Vec<MeasuredCopy>,
    /// Copies made after the log filled (counted, not timed).
    pub unlogged: u32,
}

/// A sampled frame outside the op library (a system library's or the core runner's code).
pub const OUTSIDE_FRAME: &str = "(outside the op library)";

/// One run of like copies as a host core measured it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeasuredCopy {
    pub start_ns: u64,
    pub end_ns: u64,
    pub out: bool,
    pub bytes: u32,
    pub copies: u32,
}

impl MeasuredTimeline {
    /// Every function its samples name, in sample order (repeats kept).
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.samples
            .iter()
            .flat_map(|(_, s)| s.iter().map(String::as_str))
    }

    /// The sampled stacks folded: each distinct stack (outermost first) with the time its
    /// samples stood for (ns), in the order first seen.
    pub fn folded(&self) -> Vec<(&[String], u64)> {
        let mut out: Vec<(&[String], u64)> = Vec::new();
        let mut at: std::collections::HashMap<&[String], usize> = Default::default();
        for (_, stack) in &self.samples {
            match at.get(stack.as_slice()) {
                Some(&i) => out[i].1 += self.interval_ns,
                None => {
                    at.insert(stack, out.len());
                    out.push((stack, self.interval_ns));
                }
            }
        }
        out
    }

    /// Sampled time by innermost function (ns: samples times the interval each stood
    /// for), most first.
    pub fn by_function(&self) -> Vec<(String, u64)> {
        let mut sum: Vec<(String, u64)> = Vec::new();
        for (_, stack) in &self.samples {
            let Some(f) = stack.last() else { continue };
            match sum.iter_mut().find(|(g, _)| g == f) {
                Some(e) => e.1 += 1,
                None => sum.push((f.clone(), 1)),
            }
        }
        sum.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        sum.into_iter()
            .map(|(f, n)| (f, n * self.interval_ns))
            .collect()
    }
}

/// A core's copies in the order it made them, each run of like copies with the
/// instructions that ran before it since the previous run (D120): the runtime logs each
/// run's bytes, direction and length, the profile plugin stamps where it began. The first
/// [`customop_abi::access::COPY_LOG_ENTRIES`] runs are logged; later copies are in the
/// access counts only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyTimeline {
    pub steps: Vec<CopyStep>,
    /// Instructions by function after the last logged run began.
    pub after: Vec<(String, u64)>,
    /// Copies made after the log filled (counted, not logged).
    pub unlogged: u32,
    /// Accesses to the kernel's HBM stack after the last logged run began (D121).
    pub after_stack_accesses: u64,
}

/// One logged run of like copies (one copy, often) and what ran before it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyStep {
    /// Instructions by function since the previous copy (or the kernel's start).
    pub before: Vec<(String, u64)>,
    /// From core memory into a tensor (else from a tensor into core memory).
    pub out: bool,
    /// Bytes each copy moved.
    pub bytes: u32,
    /// Copies in the run: the instructions between them are in the next step's `before`.
    pub copies: u32,
    /// Element-wise accesses the kernel made before this run.
    pub elements_before: u32,
    /// Accesses to the kernel's HBM stack since the previous run (D121).
    pub stack_accesses: u64,
}

/// An ISA backend: it loads an op library onto cores that share the engine's device memory,
/// runs kernels on them, and reports how each core ended.
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

    /// Loads `library` on a fresh probe core and runs its start code.
    fn probe(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        deadline: &Deadline,
    ) -> std::io::Result<Probed>;

    /// Runs `kernel` on `team`'s cores (starting those not running) until each completes,
    /// faults or passes `deadline`, over the argument blobs the engine wrote in their scratch
    /// areas; `guards` are the guard pages (SoC addresses) after this launch's tensors.
    fn launch(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        kernel: &CStr,
        team: Team,
        guards: &[u64],
        deadline: &Deadline,
    ) -> std::io::Result<Launched>;

    /// Runs op `op`'s shape function on core 0 over the argument blob the engine wrote in
    /// its scratch area; the core writes the output's descriptor there. `guards` are the
    /// guard pages of what the shape call placed (its scalars), as for a launch: any other
    /// page a previous launch guarded is released first.
    fn shape(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        op: &CStr,
        guards: &[u64],
        deadline: &Deadline,
    ) -> std::io::Result<Shaped>;

    /// Stops every core (a new library, or the engine's end).
    fn shutdown(&mut self);

    /// The longest kernel name a launch on these cores can carry (bytes).
    fn max_kernel_name(&self) -> usize {
        usize::MAX
    }

    /// Whether its cores report what they touch of a watched range ([`Team::watch`]).
    fn reports_touches(&self) -> bool {
        false
    }

    /// Whether its cores record every read and write of a traced launch ([`Team::trace`]).
    fn traces_accesses(&self) -> bool {
        false
    }

    /// The launches until `trace_session(false)` belong to one checked call, one of which
    /// is traced: a backend that must start its cores differently to trace starts them so
    /// once for all of them.
    fn trace_session(&mut self, _on: bool) {}

    /// Where a debugger's stop at `function`'s entry on core `core` goes when its name is
    /// not enough (gdb would stop before the arguments are where the debug information
    /// says): a gdb location such as `*0x84000844`. None: the function's name.
    fn entry_stop(&self, core: usize, function: &str) -> Option<String> {
        let _ = (core, function);
        None
    }

    /// Opens a gdb remote stub on core `core` before a launch of `count` cores: where it
    /// listens (the engine adds the kernel and library). The core waits, stopped, for the
    /// debugger to let it run. Backends without one say so.
    fn debug_core(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        core: usize,
        count: usize,
        deadline: &Deadline,
    ) -> std::io::Result<DebugSession> {
        let _ = (memory, library, core, count, deadline);
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("the {} backend has no debugger", self.name()),
        ))
    }

    /// Ends a debug session after its launch: the stub stops, and the core is replaced by a
    /// fresh one at the next launch.
    fn end_debug(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_stdio_stops_at_its_cap_and_counts_the_rest() {
        let mut kept = Stdio::default();
        let more = |out: &[u8], err: &[u8], dropped| Stdio {
            out: out.to_vec(),
            err: err.to_vec(),
            dropped,
        };
        kept.append(more(b"abc", b"de", 1), 4);
        assert_eq!(
            (&kept.out[..], &kept.err[..], kept.dropped),
            (&b"abc"[..], &b"d"[..], 2)
        );
        kept.append(more(b"x", b"", 0), 4);
        assert_eq!(
            (kept.out.len(), kept.dropped),
            (3, 3),
            "full: all of it is dropped"
        );
        kept.append(more(b"yz", b"w", 0), usize::MAX);
        assert_eq!((&kept.out[..], &kept.err[..]), (&b"abcyz"[..], &b"dw"[..]));
    }
}
