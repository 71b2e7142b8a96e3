//! The host backend: op libraries built for the host (x86-64, or i386 in the device's data
//! model, D97), each core a persistent process (see [`pool`]) reporting into the
//! Pool control block, which this module decodes into the backend interface's outcomes.

use std::ffi::CStr;
use std::sync::atomic::Ordering;

pub mod control;
pub mod core;
pub mod doorbell;
mod gdbserver;
pub mod pool;
mod timeline;

/// The variable naming the 32-bit core runner (device-model libraries' cores).
pub use self::core::runner::CORE_RUNNER_ENV;

use self::control::{
    ControlBlock, FaultKind, ACCESS_READ, ACCESS_WRITE, CORE_DONE, CORE_FAULT, PHASE_KERNEL,
    PHASE_LOAD, PHASE_START,
};
use self::core::Program;
use self::pool::{CoreExit, CorePool, Exit};
use nrt_pool_engine::backend::*;
use nrt_pool_engine::deadline::Deadline;
use nrt_pool_engine::debug::{DataAccess, DebugSession};
use nrt_pool_engine::library::OpLibrary;
use nrt_pool_engine::memory::DeviceMemory;
use nrt_pool_engine::profile::CoreProfile;

/// An engine on host cores (the default core runner): the tests' and benches' engine.
pub fn host_engine(
    hbm_bytes: u64,
    image: nrt_pool_engine::PoolImage,
) -> Result<nrt_pool_engine::PoolEngine, nrt_pool_engine::EmuError> {
    nrt_pool_engine::PoolEngine::with_backend(hbm_bytes, image, Box::new(HostBackend::default()))
}

/// Host builds of op libraries, each core a persistent forked process (see [`pool`]).
pub struct HostBackend {
    cores: CorePool,
    /// A debug launch's gdbserver and the core it is attached to.
    debugger: Option<(usize, std::process::Child)>,
    /// The 32-bit core runner (D97); None: an i386 library cannot be loaded.
    runner: Option<&'static CStr>,
}

impl Default for HostBackend {
    /// Host cores with the core runner `$NRT_POOL_CORE_RUNNER` names, else the one of the
    /// build tree this crate was built in, if there is one (front ends pass theirs).
    fn default() -> HostBackend {
        HostBackend {
            cores: CorePool::default(),
            debugger: None,
            runner: self::core::runner::default_runner(),
        }
    }
}

impl HostBackend {
    fn program<'a>(
        memory: &'a DeviceMemory,
        library: &'a OpLibrary,
        runner: Option<&'static CStr>,
    ) -> Program<'a> {
        Program {
            memory,
            library: &library.c_path,
            runner: runner.filter(|_| library.i386),
        }
    }

    /// Host cores whose i386 libraries run in `runner` (D97).
    pub fn with_core_runner(runner: &std::path::Path) -> HostBackend {
        HostBackend {
            runner: self::core::runner::leak_path(runner),
            ..HostBackend::default()
        }
    }
}

/// The control block of `memory` (the host cores' reporting page).
fn control(memory: &DeviceMemory) -> ControlBlock {
    // SAFETY: the status region is the control block (DeviceMemory's layout), and lives
    // as long as `memory`.
    unsafe { ControlBlock::new(memory.status_host()) }
}

/// What the cores printed through the stdio ring since its reset: as it came (core 0's
/// alone), or with `all_cores` each core's lines prefixed with it.
fn drain(ctl: &ControlBlock, all_cores: bool) -> Stdio {
    let (entries, dropped) = ctl.stdio_drain();
    let mut stdio = Stdio {
        dropped,
        ..Stdio::default()
    };
    let mut lines = CoreLines::default();
    for (fd, core, b) in entries {
        if all_cores {
            lines.push(usize::from(core), fd, &b, &mut stdio);
        } else {
            stdio.stream(fd).extend_from_slice(&b);
        }
    }
    lines.finish(&mut stdio);
    stdio
}

/// Decodes core `c`'s record and its process's exit: done only when the record says so and
/// (with `clean_exit`) the process is still serving or exited 0.
fn decode(
    ctl: &ControlBlock,
    c: usize,
    exit: Exit,
    clean_exit: bool,
    deadline: &Deadline,
) -> Outcome {
    let rec = ctl.core(c);
    let state = rec.state.load(Ordering::Acquire);
    if state == CORE_DONE && (!clean_exit || exit == Exit::Code(0)) {
        return Outcome::Done(rec.result.load(Ordering::Acquire));
    }
    if state == CORE_FAULT {
        let kind =
            FaultKind::from_u32(rec.kind.load(Ordering::Acquire)).unwrap_or(FaultKind::Exited);
        // A core stopped at the deadline said where it was; how long it had is the host's.
        let message = if kind == FaultKind::Timeout {
            format!("still running after {:?}; stopped", deadline.span())
        } else {
            ctl.message(c)
        };
        let pc = rec.pc.load(Ordering::Acquire);
        let addr = rec.addr.load(Ordering::Acquire);
        return Outcome::Fault(FaultRecord {
            kind,
            phase: rec.phase.load(Ordering::Acquire),
            host_addr: (addr != 0).then_some(addr),
            access: match rec.access.load(Ordering::Acquire) {
                ACCESS_READ => Some(Access::Read),
                ACCESS_WRITE => Some(Access::Write),
                _ => None,
            },
            pc: (pc != 0).then(|| HostPc {
                pc,
                module_base: rec.module_base.load(Ordering::Acquire),
            }),
            stack: Stack::Host {
                addrs: ctl.frames(c),
                module_base: rec.module_base.load(Ordering::Acquire),
                first_exact: pc != 0,
            },
            message,
            status: rec.result.load(Ordering::Acquire),
        });
    }
    // No report: the process ended (or hung) on its own. A core that ended during its
    // start keeps the phase it reported.
    let phase = match rec.phase.load(Ordering::Acquire) {
        p @ (PHASE_LOAD | PHASE_START) => p,
        _ => PHASE_KERNEL,
    };
    let (kind, message) = match exit {
        Exit::TimedOut => (
            FaultKind::Timeout,
            format!("still running after {:?}; stopped", deadline.span()),
        ),
        Exit::Signal(s) => (
            FaultKind::Exited,
            format!("killed by {}", core::signal_name(s)),
        ),
        Exit::Code(code) => (
            FaultKind::Exited,
            format!("the core's process exited with code {code} before the kernel returned"),
        ),
    };
    Outcome::Fault(FaultRecord::new(kind, phase, message))
}

impl IsaBackend for HostBackend {
    fn name(&self) -> &'static str {
        "host"
    }

    fn max_kernel_name(&self) -> usize {
        core::MAX_KERNEL_NAME
    }

    fn probe(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        deadline: &Deadline,
    ) -> std::io::Result<Probed> {
        if library.i386 && self.runner.is_none() {
            return Err(std::io::Error::other(
                "the library is built for host cores in the device's data model (i386), and \
                 this engine has no 32-bit core runner (nrt-pool-core: make core-runner; D97)",
            ));
        }
        let ctl = control(memory);
        ctl.reset();
        let (exit, stderr) = pool::probe(&Self::program(memory, library, self.runner), deadline)?;
        // A probe's process exits after its report; its exit code does not matter.
        let outcome = decode(&ctl, 0, exit, false, deadline);
        let done = matches!(outcome, Outcome::Done(_));
        Ok(Probed {
            end: CoreEnd { outcome, stderr },
            names: if done { ctl.names() } else { Vec::new() },
            schema: if done { ctl.schema() } else { None },
            stdio: drain(&ctl, false),
        })
    }

    fn launch(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        kernel: &CStr,
        team: Team,
        guards: &[u64],
        deadline: &Deadline,
    ) -> std::io::Result<Launched> {
        let ctl = control(memory);
        ctl.reset();
        ctl.set_guards(guards);
        ctl.set_stdio_all_cores(team.all_stdio);
        ctl.set_profile(team.profile);
        let run = team.cores();
        if let Some((soc, bytes)) = team.watch {
            ctl.set_watch(soc, bytes);
        }
        let program = Self::program(memory, library, self.runner);
        let exits = self
            .cores
            .launch(&program, kernel, &run, team.count, deadline)?;
        let cores: Vec<CoreEnd> = exits
            .into_iter()
            .zip(&run)
            .map(|(CoreExit { exit, stderr }, &c)| CoreEnd {
                outcome: decode(&ctl, c, exit, true, deadline),
                stderr,
            })
            .collect();
        // The library's file names the sampled frames and places their functions (D124).
        let image = team
            .profile
            .then(|| std::fs::read(library.file()).ok())
            .flatten();
        let mut names = timeline::FrameNames::new(image.as_deref());
        let profiles: Vec<CoreProfile> = if team.profile {
            run.iter()
                .zip(&cores)
                .filter(|(_, end): &(&usize, &CoreEnd)| matches!(end.outcome, Outcome::Done(_)))
                .map(|(&c, _)| {
                    let r = ctl.core(c);
                    let n = r.instructions.load(Ordering::Acquire);
                    let (head, copies, samples) = ctl.timeline(c);
                    CoreProfile {
                        core: c,
                        wall: Some(std::time::Duration::from_nanos(
                            r.wall_ns.load(Ordering::Acquire),
                        )),
                        instructions: (n > 0).then_some(n),
                        measured: Some(timeline::measured(&head, &copies, &samples, &mut names)),
                        ..CoreProfile::default()
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let lines = team.profile.then(|| {
            let sampled = profiles.iter().filter_map(|p| p.measured.as_ref());
            let functions: std::collections::BTreeSet<&str> = sampled
                .flat_map(nrt_pool_engine::profile::MeasuredTimeline::functions)
                .collect();
            names.lines(functions)
        });
        // What each core touched of a watched range (only a core that completed reports).
        let done = |end: &CoreEnd| matches!(end.outcome, Outcome::Done(_));
        let watched = run.iter().zip(&cores).filter(|_| team.watch.is_some());
        let touched = watched
            .map(|(&c, e)| ctl.touched(c).filter(|_| done(e)))
            .collect();
        Ok(Launched {
            cores,
            stdio: drain(&ctl, team.all_stdio),
            profiles,
            touched,
            // Host cores run native code: no access is seen one by one (D101).
            accesses: Vec::new(),
            lines,
        })
    }

    fn shape(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        op: &CStr,
        guards: &[u64],
        deadline: &Deadline,
    ) -> std::io::Result<Shaped> {
        let ctl = control(memory);
        ctl.reset();
        ctl.set_guards(guards);
        let CoreExit { exit, stderr } =
            self.cores
                .shape(&Self::program(memory, library, self.runner), op, deadline)?;
        let outcome = decode(&ctl, 0, exit, true, deadline);
        let refused = matches!(outcome, Outcome::Done(s) if s != 0).then(|| ctl.message(0));
        Ok(Shaped {
            end: CoreEnd { outcome, stderr },
            refused,
            stdio: drain(&ctl, false),
            ran_in: None,
        })
    }

    fn shutdown(&mut self) {
        self.end_debug();
        self.cores.shutdown();
    }

    fn reports_touches(&self) -> bool {
        true
    }

    fn debug_core(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        core: usize,
        _count: usize,
        deadline: &Deadline,
    ) -> std::io::Result<DebugSession> {
        self.end_debug();
        let pid = self
            .cores
            .debuggable(core, &Self::program(memory, library, self.runner))?;
        // Forked cores map device memory where this process does; a 32-bit core runner
        // maps it where it can (D97): its maps say where, read before gdbserver stops it.
        let theirs = match (library.i386, self.runner) {
            (true, Some(runner)) => {
                Some(mapped_base(pid, runner, memory, deadline).ok_or_else(|| {
                    std::io::Error::other(
                        "the 32-bit core process did not map the device memory before the \
                         launch's deadline",
                    )
                })?)
            }
            _ => None,
        };
        let shift = |at: u64| match theirs {
            None => at,
            Some(b) => at - memory.base() + b,
        };
        let data = DataAccess::Mapped(
            memory
                .regions()
                .filter_map(|r| Some((r.soc, r.size, shift(memory.host(r.soc, r.size)? as u64))))
                .collect(),
        );
        let (child, port) = gdbserver::attach(pid, deadline)?;
        self.debugger = Some((core, child));
        Ok(DebugSession {
            core,
            isa: "host".into(),
            port,
            pid: pid as u32,
            library: library.path.clone(),
            kernel: String::new(),
            returned: core::KERNEL_RETURNED.into(),
            release: None,
            symbols: Vec::new(),
            data,
        })
    }

    fn end_debug(&mut self) {
        if let Some((core, mut child)) = self.debugger.take() {
            gdbserver::stop(&mut child);
            self.cores.stop_core(core);
        }
    }
}

/// Where process `pid`, once it runs `runner`, maps the start of `memory`'s file (its
/// /proc maps: the mapping at offset 0 of the file's inode), waiting for the exec'd core
/// runner to map it.
fn mapped_base(pid: i32, runner: &CStr, memory: &DeviceMemory, deadline: &Deadline) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let inode = memory.file().metadata().ok()?.ino();
    let runner = std::fs::canonicalize(std::ffi::OsStr::from_bytes(runner.to_bytes())).ok()?;
    loop {
        // Before its exec the process is a fork of this one, mapping the file where we do.
        if std::fs::read_link(format!("/proc/{pid}/exe")).ok().as_ref() != Some(&runner) {
            if deadline.passed() {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
            continue;
        }
        let maps = std::fs::read(format!("/proc/{pid}/maps")).ok()?;
        let found = maps.split(|&b| b == b'\n').find_map(|line| {
            let line = std::str::from_utf8(line).ok()?;
            let mut f = line.split_ascii_whitespace();
            let (range, _perms, offset, _dev, ino) =
                (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            (ino.parse::<u64>().ok()? == inode && u64::from_str_radix(offset, 16).ok()? == 0)
                .then(|| u64::from_str_radix(range.split('-').next()?, 16).ok())?
        });
        if found.is_some() || deadline.passed() {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}
