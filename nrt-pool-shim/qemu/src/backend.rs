//! The engine's Xtensa backend: a library's Pool image (`libNAME.pool`) on QEMU cores, one
//! `qemu-system-xtensa` process per core (the nrt-pool machine, PRID = core), kept from
//! launch to launch until it faults or the library changes.
//!
//! Device memory is one: each core maps the engine's memory file and reaches it through
//! translation windows (docs/decisions.md D63), so the engine places arguments and reads
//! results exactly as for host cores, and the guard pages after tensors fault in a core as
//! they do on the host. Shape functions run in the library's host build beside the image
//! (`libNAME.so`), as PyTorch runs them on the host.

use std::ffi::CStr;
use std::io;
use std::path::{Path, PathBuf};

use customop_abi::control::{FaultKind, PHASE_KERNEL, PHASE_START};
use nrt_pool_engine::backend::{
    Access, CoreEnd, CoreLines, FaultRecord, IsaBackend, Launched, Outcome, Probed, Shaped, Stack,
    Stdio, Team,
};
use nrt_pool_engine::deadline::Deadline;
use nrt_pool_engine::debug::{DataAccess, DebugSession};
use nrt_pool_engine::library::OpLibrary;
use nrt_pool_engine::memory::DeviceMemory;

use crate::core::{pool_cores, Platform, QemuError, XtensaCore};
use crate::fault::{CoreFault, FaultCause};
use crate::layout;
use crate::protocol::MAX_GUARDS;
use crate::tools::{qemu_for, PROFILE_PLUGIN};
use customop_abi::access::{COPY_LOG_ENTRIES, COPY_MARK_SYMBOL, HBM_STACK_MARK_SYMBOL};

const _: () = assert!(customop_abi::control::MAX_GUARDS <= MAX_GUARDS);

/// The Xtensa backend.
pub struct XtensaBackend {
    board: PathBuf,
    qemu: PathBuf,
    /// The loaded library's file and its cores' images.
    images: Option<(PathBuf, Vec<Vec<u8>>)>,
    cores: Vec<Option<XtensaCore>>,
    /// The guard pages each running core was last given.
    guards: Vec<Vec<u64>>,
    /// The cores shape functions run on, in the host build beside the image (a front end
    /// gives them: `nrt-pool-open` its host cores).
    host: Option<Box<dyn IsaBackend>>,
    /// The core a debug launch runs with QEMU's gdb stub, and the stub's port.
    gdb_stub: Option<(usize, u16)>,
    /// While launches are profiled: the folder the cores' plugins write their counts to
    /// (the running cores were started with the plugin).
    profiling: Option<tempfile::TempDir>,
    /// While cores run with the access plugin (a checked call's launches, one of them
    /// traced: D101): the folder the plugins write their records to.
    tracing: Option<tempfile::TempDir>,
    /// A checked call with a race check is under way: its launches keep plugin cores.
    trace_session: bool,
}

impl XtensaBackend {
    /// A backend whose cores run under `board` (pool-board.elf), on the QEMU beside it
    /// (or `$NRT_POOL_QEMU`).
    pub fn new(board: PathBuf) -> XtensaBackend {
        XtensaBackend {
            qemu: qemu_for(&board),
            board,
            images: None,
            cores: (0..layout::CORES).map(|_| None).collect(),
            guards: vec![Vec::new(); layout::CORES],
            host: None,
            gdb_stub: None,
            profiling: None,
            tracing: None,
            trace_session: false,
        }
    }

    /// The same backend, its shape functions run on `host` (a front end's host cores, with
    /// the 32-bit core runner it found for host builds in the device's data model, D97).
    pub fn with_shape_cores(mut self, host: Box<dyn IsaBackend>) -> XtensaBackend {
        self.host = Some(host);
        self
    }

    fn images(&mut self, library: &OpLibrary) -> Result<&[Vec<u8>], QemuError> {
        let file = library.file();
        if self.images.as_ref().map(|(p, _)| p) != Some(&file) {
            self.stop_cores();
            let cores = pool_cores(&file).map_err(|e| match e {
                QemuError::Image { why, .. } => QemuError::Image {
                    path: library.path.clone(),
                    why,
                },
                e => e,
            })?;
            if cores.len() != layout::CORES {
                return Err(QemuError::Image {
                    path: library.path.clone(),
                    why: format!("{} core images; the engine runs 8", cores.len()),
                });
            }
            self.images = Some((file, cores));
        }
        Ok(&self.images.as_ref().expect("set above").1)
    }

    fn stop_cores(&mut self) {
        for c in self.cores.iter_mut() {
            if let Some(core) = c.take() {
                core.quit();
            }
        }
    }

    /// Core `c`, started if it is not running.
    /// Cores start with the access plugin (a traced launch), the profile plugin, or
    /// neither; a traced launch is not profiled. Cores started otherwise are stopped.
    fn equip(&mut self, team: &Team) -> io::Result<()> {
        let equip = team.trace || (self.trace_session && !team.profile);
        let profile = team.profile && !equip;
        if profile != self.profiling.is_some() || equip != self.tracing.is_some() {
            self.stop_cores();
            self.profiling = profile.then(crate::scratch::folder).transpose()?;
            self.tracing = equip.then(crate::scratch::folder).transpose()?;
        }
        if let Some(dir) = &self.tracing {
            for c in team.cores() {
                crate::access::arm(dir.path(), c, team.trace)?;
            }
        }
        Ok(())
    }

    /// Starts the cores of `run` not running, side by side (when more than one); those that
    /// failed to start, with why.
    fn start_missing(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        run: &[usize],
        cores: usize,
        deadline: &Deadline,
    ) -> Vec<(usize, QemuError)> {
        let missing: Vec<usize> = run
            .iter()
            .copied()
            .filter(|&c| self.cores[c].is_none())
            .collect();
        let mut failed = Vec::new();
        if missing.len() > 1 {
            match self.start_cores(memory, library, &missing, cores, deadline) {
                Ok(started) => {
                    for (c, core) in started {
                        match core {
                            Ok(core) => self.cores[c] = Some(core),
                            Err(e) => failed.push((c, e)),
                        }
                    }
                }
                Err(e) => failed.extend(missing.iter().map(|&c| (c, clone_error(&e, c)))),
            }
        }
        failed
    }

    /// Starts `kernel` on core `c` of a launch on `cores` cores (the core started first if
    /// it is not running), its guard pages set.
    fn begin(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        kernel: &CStr,
        (c, cores): (usize, usize),
        guards: &[u64],
        deadline: &Deadline,
    ) -> Result<(), QemuError> {
        let core = self.core(memory, library, c, cores, deadline)?;
        let k = core.kernel(kernel.to_bytes()).ok_or(QemuError::NoKernel {
            core: c,
            kernel: usize::MAX,
            count: core.kernels().len(),
        })?;
        if self.guards[c] != guards {
            let core = self.cores[c].as_mut().expect("started above");
            core.guard(guards)?;
            self.guards[c] = guards.to_vec();
        }
        let core = self.cores[c].as_mut().expect("started above");
        core.begin(k, cores as u32)
    }

    /// A profiled launch's profiles, per core that finished.
    fn profiles(
        &self,
        memory: &DeviceMemory,
        run: &[usize],
        ends: &[CoreEnd],
    ) -> Vec<nrt_pool_engine::profile::CoreProfile> {
        let mut profiles = Vec::new();
        if let (Some(dir), Some((_, images))) = (&self.profiling, &self.images) {
            let board = std::fs::read(&self.board).unwrap_or_default();
            for (&c, end) in run.iter().zip(ends) {
                let file = dir.path().join(format!("core{c}.blocks"));
                let counts = std::fs::read_to_string(&file);
                let _gone = std::fs::remove_file(&file);
                if let (Ok(counts), Outcome::Done(_)) = (counts, &end.outcome) {
                    let log = crate::access::copy_log(memory, c, &images[c]);
                    let counts = crate::profile::PluginCounts::parse(&counts);
                    let mut p = counts.profile(c, &[&images[c], &board], log.as_ref());
                    p.accesses = crate::access::counts(memory, c, &images[c]);
                    profiles.push(p);
                }
            }
        }
        profiles
    }

    /// A traced launch's accesses, per core (`None` for a core that did not finish).
    fn traces(
        &self,
        team: &Team,
        run: &[usize],
        ends: &[CoreEnd],
    ) -> Vec<Option<nrt_pool_engine::accesses::CoreAccesses>> {
        let mut accesses = Vec::new();
        if let (true, Some(dir), Some((_, images))) = (team.trace, &self.tracing, &self.images) {
            let board = std::fs::read(&self.board).unwrap_or_default();
            for (&c, end) in run.iter().zip(ends) {
                let done = matches!(end.outcome, Outcome::Done(_));
                accesses.push(
                    done.then(|| crate::access::trace(dir.path(), c, &[&images[c], &board]))
                        .flatten(),
                );
            }
        }
        accesses
    }

    fn core(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        c: usize,
        cores: usize,
        deadline: &Deadline,
    ) -> Result<&mut XtensaCore, QemuError> {
        if self.cores[c].is_none() {
            let started = self.start_cores(memory, library, &[c], cores, deadline)?;
            let [(_, core)] = <[_; 1]>::try_from(started).map_err(|_| QemuError::Protocol {
                core: c,
                why: "the core did not start".into(),
            })?;
            self.cores[c] = Some(core?);
        }
        Ok(self.cores[c].as_mut().expect("started above"))
    }

    /// Starts the cores `which` side by side (each QEMU boots, loads its image and runs the
    /// start code in a process of its own: on 2 CPUs, 8 cores start in about a third of the
    /// time one after another takes, D84); each one's result. The running ones are replaced.
    fn start_cores(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        which: &[usize],
        cores: usize,
        deadline: &Deadline,
    ) -> Result<Vec<Started>, QemuError> {
        let images = self.images(library)?.to_vec();
        let instrumented = self.profiling.is_some() || self.tracing.is_some();
        let markers = instrumented.then(|| board_markers(&self.board));
        let plugins: Vec<Option<String>> = which
            .iter()
            .map(|&c| {
                let (begin, end) = markers.unwrap_or_default();
                if let Some(dir) = &self.tracing {
                    return Some(crate::access::trace_plugin(
                        &self.qemu,
                        dir.path(),
                        c,
                        (begin, end),
                    ));
                }
                let dir = self.profiling.as_ref()?;
                let mut plugin = format!(
                    "{},out={},begin={begin:#x},end={end:#x}",
                    self.qemu.with_file_name(PROFILE_PLUGIN).display(),
                    dir.path().join(format!("core{c}.blocks")).display()
                );
                // Each logged copy stamped where it began (D120).
                if let Some(mark) = crate::access::symbol_address(&images[c], COPY_MARK_SYMBOL) {
                    plugin.push_str(&format!(",mark={mark:#x},marks={COPY_LOG_ENTRIES}"));
                }
                // A stack in HBM counted by its accesses (D121).
                if let Some((at, size)) =
                    crate::access::symbol_span(&images[c], HBM_STACK_MARK_SYMBOL)
                {
                    plugin.push_str(&format!(",stackmark={at:#x}+{size}"));
                }
                Some(plugin)
            })
            .collect();
        let (qemu, board, gdb_stub) = (&self.qemu, &self.board, self.gdb_stub);
        let started: Vec<Started> = std::thread::scope(|scope| {
            let runs: Vec<_> = which
                .iter()
                .zip(&plugins)
                .map(|(&c, plugin)| {
                    let elf = &images[c];
                    let path = &library.path;
                    scope.spawn(move || {
                        let platform = Platform {
                            qemu,
                            board,
                            memory,
                            gdb_port: gdb_stub.filter(|&(d, _)| d == c).map(|(_, p)| p),
                            plugin: plugin.as_deref(),
                        };
                        let core =
                            XtensaCore::start(platform, elf, path, c, cores as u32, deadline)
                                .and_then(|core| match core.entry_status() {
                                    0 => Ok(core),
                                    s => Err(QemuError::Protocol {
                                        core: c,
                                        why: format!("entry_func returned {s}"),
                                    }),
                                });
                        (c, core)
                    })
                })
                .collect();
            runs.into_iter()
                .zip(which)
                .map(|(r, &c)| {
                    r.join().unwrap_or_else(|_| {
                        (
                            c,
                            Err(QemuError::Protocol {
                                core: c,
                                why: "starting the core panicked".into(),
                            }),
                        )
                    })
                })
                .collect()
        });
        for &c in which {
            self.guards[c].clear();
        }
        Ok(started)
    }
}

/// A core started (or why it did not), by its number.
type Started = (usize, Result<XtensaCore, QemuError>);

/// `e` again for core `c` (an error that stopped every core's start).
fn clone_error(e: &QemuError, c: usize) -> QemuError {
    match e {
        QemuError::Image { path, why } => QemuError::Image {
            path: path.clone(),
            why: why.clone(),
        },
        other => QemuError::Protocol {
            core: c,
            why: other.to_string(),
        },
    }
}

/// The board's profile markers: `board_kernel_begin` and `board_kernel_returned` (0 when
/// the board lacks them: the plugin then refuses to load, and the core fails to start).
fn board_markers(board: &Path) -> (u64, u64) {
    let bytes = std::fs::read(board).unwrap_or_default();
    let find = |name: &str| crate::access::symbol_address(&bytes, name).unwrap_or(0);
    (find("board_kernel_begin"), find("board_kernel_returned"))
}

/// Core `c`'s fault record for `e`, in `phase`.
fn record(memory: &DeviceMemory, e: &QemuError, phase: u32) -> FaultRecord {
    let (kind, message) = match e {
        QemuError::Fault(f) => {
            let kind = match f {
                CoreFault::Exception { cause, window, .. } => {
                    if *window || cause.has_address() {
                        FaultKind::Memory
                    } else {
                        FaultKind::Trap
                    }
                }
                CoreFault::Fatal { .. } => FaultKind::Fatal,
                CoreFault::StackOverflow { .. } => FaultKind::StackOverflow,
                CoreFault::Timeout { .. } => FaultKind::Timeout,
                CoreFault::Exited { .. } => FaultKind::Exited,
            };
            (kind, f.detail().to_string())
        }
        QemuError::NoKernel { kernel, count, .. } => (
            FaultKind::NoKernel,
            format!("no kernel number {kernel} (the image registered {count})"),
        ),
        QemuError::Image { why, .. } => (FaultKind::Load, why.clone()),
        QemuError::Protocol { why, .. } => (
            FaultKind::Exited,
            format!("the board broke the protocol: {why}"),
        ),
        QemuError::Io { source, .. } => (FaultKind::Exited, format!("channel: {source}")),
        QemuError::Spawn { .. } => (FaultKind::Exited, e.to_string()),
    };
    let mut rec = FaultRecord::new(kind, phase, message);
    if let QemuError::Fault(f) = e {
        rec.stack = Stack::Named(f.stack().to_vec());
    }
    if let QemuError::Fault(CoreFault::Exception {
        cause,
        address,
        write,
        soc,
        ..
    }) = e
    {
        rec.access = write.map(|w| if w { Access::Write } else { Access::Read });
        // The host address of the SoC byte the core touched, so the engine can name the
        // tensor it belongs to.
        rec.host_addr = (cause.has_address() && *cause != FaultCause::Break)
            .then(|| soc.or_else(|| layout::soc_of(*address)))
            .flatten()
            .and_then(|soc| memory.host(soc, 1))
            .map(|p| p as u64);
    }
    rec
}

impl IsaBackend for XtensaBackend {
    fn name(&self) -> &'static str {
        "xtensa"
    }

    /// The shape cores' (a NEURON_LIBRARY op's shape function runs there by its name).
    fn max_kernel_name(&self) -> usize {
        self.host
            .as_ref()
            .map_or(usize::MAX, |h| h.max_kernel_name())
    }

    /// The op images and the cores' hbm_scratch take HBM's first 64 MiB; tensors beyond
    /// the pinned window are reached through the dynamic windows, as on hardware.
    fn hbm_layout(&self) -> (u64, Option<u64>) {
        (layout::RESERVED_HBM, None)
    }

    fn probe(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        deadline: &Deadline,
    ) -> io::Result<Probed> {
        self.stop_cores();
        self.images = None;
        let started = self.images(library).map(|i| i[0].clone()).and_then(|elf| {
            let platform = Platform {
                qemu: &self.qemu,
                board: &self.board,
                memory,
                gdb_port: None,
                plugin: None,
            };
            XtensaCore::start(platform, &elf, &library.path, 0, 8, deadline)
        });
        let failed = |end: CoreEnd| Probed {
            end,
            names: Vec::new(),
            schema: None,
            stdio: Stdio::default(),
        };
        let core = match started {
            Ok(core) => core,
            Err(e @ QemuError::Spawn { .. }) => return Err(io::Error::other(e.to_string())),
            Err(e) => return Ok(failed(CoreEnd::fault(record(memory, &e, PHASE_START)))),
        };
        if core.entry_status() != 0 {
            let mut rec = FaultRecord::new(FaultKind::Entry, PHASE_START, "entry_func");
            rec.status = core.entry_status();
            core.quit();
            return Ok(failed(CoreEnd::fault(rec)));
        }
        // What the start code printed reaches the host from this one start, as the host
        // backend's probe (the cores started for launches run it again silently).
        let probed = Probed {
            end: CoreEnd::done(core.kernels().len() as u32),
            names: core.kernels().iter().map(|k| k.name.clone()).collect(),
            schema: (!core.metadata().is_empty()).then(|| core.metadata().to_vec()),
            stdio: Stdio {
                out: core.start_output().stdout.clone(),
                err: core.start_output().stderr.clone(),
                dropped: 0,
            },
        };
        // The probed core is core 0 of the next launch (its start code has run, as a
        // launch's start would run it): one QEMU fewer to start.
        if self.profiling.is_none() && self.tracing.is_none() && self.gdb_stub.is_none() {
            self.guards[0].clear();
            self.cores[0] = Some(core);
        } else {
            core.quit();
        }
        Ok(probed)
    }

    fn trace_session(&mut self, on: bool) {
        self.trace_session = on && self.traces_accesses();
    }

    fn traces_accesses(&self) -> bool {
        // The access plugin beside QEMU (built with it; an older build tree lacks it).
        self.qemu
            .with_file_name(crate::tools::ACCESS_PLUGIN)
            .is_file()
    }

    fn launch(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        kernel: &CStr,
        team: Team,
        guards: &[u64],
        deadline: &Deadline,
    ) -> io::Result<Launched> {
        let run = team.cores();
        self.equip(&team)?;
        let mut ends: Vec<Option<CoreEnd>> = vec![None; run.len()];
        let mut failed = self.start_missing(memory, library, &run, team.count, deadline);
        for (&c, end) in run.iter().zip(ends.iter_mut()) {
            if let Some(at) = failed.iter().position(|(f, _)| *f == c) {
                let (_, e) = failed.swap_remove(at);
                *end = Some(CoreEnd::fault(record(memory, &e, PHASE_KERNEL)));
                continue;
            }
            let begun = self.begin(memory, library, kernel, (c, team.count), guards, deadline);
            match begun {
                Ok(()) => {}
                Err(QemuError::NoKernel { .. }) => {
                    *end = Some(CoreEnd::fault(FaultRecord::new(
                        FaultKind::NoKernel,
                        PHASE_KERNEL,
                        String::from_utf8_lossy(kernel.to_bytes()),
                    )));
                }
                Err(e) => {
                    *end = Some(CoreEnd::fault(record(memory, &e, PHASE_KERNEL)));
                    self.cores[c] = None;
                }
            }
        }
        let mut stdio = Stdio::default();
        let mut lines = CoreLines::default();
        for (&c, end) in run.iter().zip(ends.iter_mut()) {
            if end.is_some() {
                continue;
            }
            let core = self.cores[c].as_mut().expect("begun above");
            *end = Some(match core.finish(deadline) {
                Ok(done) => {
                    // Core 0's stdio reaches the host, as the firmware's does; every
                    // core's, its lines prefixed, when the launch asks.
                    if team.all_stdio {
                        lines.push(c, 1, &done.stdout, &mut stdio);
                        lines.push(c, 2, &done.stderr, &mut stdio);
                    } else if c == 0 {
                        stdio.out = done.stdout;
                        stdio.err = done.stderr;
                    }
                    CoreEnd::done(done.status)
                }
                Err(e) => {
                    self.cores[c] = None;
                    CoreEnd::fault(record(memory, &e, PHASE_KERNEL))
                }
            });
        }
        lines.finish(&mut stdio);
        let cores: Vec<CoreEnd> = ends
            .into_iter()
            .map(|e| e.expect("every core ended above"))
            .collect();
        Ok(Launched {
            profiles: self.profiles(memory, &run, &cores),
            accesses: self.traces(&team, &run, &cores),
            cores,
            stdio,
            // QEMU's cores report no watch: a check compares the whole range.
            touched: Vec::new(),
            lines: None,
        })
    }

    fn shape(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        op: &CStr,
        guards: &[u64],
        deadline: &Deadline,
    ) -> io::Result<Shaped> {
        let host = companion(&library.path).ok_or_else(|| {
            io::Error::other(format!(
                "{}: shape functions run in the library's host build, and there is no {} beside it",
                library.path.display(),
                library.path.with_extension("so").display()
            ))
        })?;
        let lib = OpLibrary::locate(&host).map_err(io::Error::other)?;
        let cores = self.host.as_mut().ok_or_else(|| {
            io::Error::other("no cores for shape functions (XtensaBackend::with_shape_cores)")
        })?;
        let mut shaped = cores.shape(memory, &lib, op, guards, deadline)?;
        shaped.ran_in = Some(host);
        Ok(shaped)
    }

    fn shutdown(&mut self) {
        self.stop_cores();
        if let Some(h) = self.host.as_mut() {
            h.shutdown();
        }
    }

    fn entry_stop(&self, core: usize, function: &str) -> Option<String> {
        let (_, images) = self.images.as_ref()?;
        let image = images.get(core)?;
        let body = nrt_pool_engine::symbolize::function_body(image, function)?;
        let after = crate::entry::after_argument_stores(body.code, body.start)?;
        // Only where the stores run past the line gdb would stop at.
        (after > body.body).then(|| format!("*{after:#x}"))
    }

    fn debug_core(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        core: usize,
        count: usize,
        deadline: &Deadline,
    ) -> io::Result<DebugSession> {
        self.end_debug();
        // A fresh QEMU for the core, its gdb stub listening from the start on a port free
        // now (another program could take it first: then QEMU fails to start, saying so).
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        if let Some(old) = self.cores[core].take() {
            old.quit();
        }
        self.gdb_stub = Some((core, port));
        let failed = |e: QemuError| io::Error::other(e.to_string());
        let c = self
            .core(memory, library, core, count, deadline)
            .map_err(failed)?;
        c.hold_next_run().map_err(failed)?;
        let pid = c.pid();
        let dir = nrt_pool_engine::debug::session_dir();
        std::fs::create_dir_all(&dir)?;
        let image = dir.join(format!("core{core}.elf"));
        std::fs::write(&image, c.image())?;
        Ok(DebugSession {
            core,
            isa: "xtensa".into(),
            port,
            pid,
            library: library.path.clone(),
            kernel: String::new(),
            returned: "board_kernel_returned".into(),
            release: Some("set var *(unsigned int *)&board_debug_wait = 0".into()),
            symbols: vec![image, self.board.clone()],
            data: DataAccess::Call("nrt_pool_debug_read".into()),
        })
    }

    fn end_debug(&mut self) {
        // The core a debugger touched is replaced by a fresh one at the next launch.
        if let Some((c, _)) = self.gdb_stub.take() {
            if let Some(core) = self.cores[c].take() {
                core.quit();
            }
        }
    }
}

/// `libNAME.so` beside `libNAME.pool`, if there.
fn companion(pool: &Path) -> Option<PathBuf> {
    let so = pool.with_extension("so");
    so.is_file().then_some(so)
}

impl Drop for XtensaBackend {
    fn drop(&mut self) {
        self.stop_cores();
    }
}
