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
use std::sync::atomic::Ordering;

use nrt_pool_engine::backend::{HostBackend, IsaBackend};
use nrt_pool_engine::control::{
    ControlBlock, FaultKind, ACCESS_READ, ACCESS_WRITE, CORE_DONE, PHASE_START,
};
use nrt_pool_engine::core::FAULT_EXIT;
use nrt_pool_engine::deadline::Deadline;
use nrt_pool_engine::library::OpLibrary;
use nrt_pool_engine::memory::DeviceMemory;
use nrt_pool_engine::pool::{CoreExit, Exit};

use crate::core::{pool_cores, qemu_for, Platform, QemuError, XtensaCore};
use crate::fault::{CoreFault, FaultCause};
use crate::layout;
use crate::protocol::MAX_GUARDS;

const _: () = assert!(nrt_pool_engine::control::MAX_GUARDS <= MAX_GUARDS);

/// The Xtensa backend.
pub struct XtensaBackend {
    board: PathBuf,
    qemu: PathBuf,
    /// The loaded library's file and its cores' images.
    images: Option<(PathBuf, Vec<Vec<u8>>)>,
    cores: Vec<Option<XtensaCore>>,
    /// The guard pages each running core was last given.
    guards: Vec<Vec<u64>>,
    /// Shape functions, in the host build beside the image.
    host: HostBackend,
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
            host: HostBackend::default(),
        }
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
    fn core(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        c: usize,
        cores: usize,
        deadline: &Deadline,
    ) -> Result<&mut XtensaCore, QemuError> {
        if self.cores[c].is_none() {
            let elf = self.images(library)?[c].clone();
            let platform = Platform {
                qemu: &self.qemu,
                board: &self.board,
                memory,
            };
            let core = XtensaCore::start(platform, &elf, &library.path, c, cores as u32, deadline)?;
            self.guards[c].clear();
            if core.entry_status() != 0 {
                return Err(QemuError::Protocol {
                    core: c,
                    why: format!("entry_func returned {}", core.entry_status()),
                });
            }
            self.cores[c] = Some(core);
        }
        Ok(self.cores[c].as_mut().expect("started above"))
    }
}

fn control(memory: &DeviceMemory) -> ControlBlock {
    // SAFETY: the status region is the control block (DeviceMemory's layout).
    unsafe { ControlBlock::new(memory.status_host()) }
}

/// Records `e` as core `c`'s fault in the control block; the exit the engine sees.
fn report(memory: &DeviceMemory, c: usize, e: &QemuError) -> Exit {
    let ctl = control(memory);
    let (kind, addr, exit) = match e {
        QemuError::Fault(f) => match f {
            CoreFault::Exception {
                cause,
                address,
                window,
                write,
                soc,
                ..
            } => {
                let kind = if *window || cause.has_address() {
                    FaultKind::Memory
                } else {
                    FaultKind::Trap
                };
                if let Some(w) = write {
                    let access = if *w { ACCESS_WRITE } else { ACCESS_READ };
                    ctl.core(c).access.store(access, Ordering::Release);
                }
                // The host address of the SoC byte the core touched, so the engine can name
                // the tensor it belongs to.
                let host = (cause.has_address() && *cause != FaultCause::Break)
                    .then(|| soc.or_else(|| layout::soc_of(*address)))
                    .flatten()
                    .and_then(|soc| memory.host(soc, 1))
                    .map_or(0, |p| p as u64);
                (kind, host, Exit::Code(FAULT_EXIT))
            }
            CoreFault::Fatal { .. } => (FaultKind::Fatal, 0, Exit::Code(FAULT_EXIT)),
            CoreFault::StackOverflow { .. } => {
                (FaultKind::StackOverflow, 0, Exit::Code(FAULT_EXIT))
            }
            CoreFault::Timeout { .. } => (FaultKind::Timeout, 0, Exit::TimedOut),
            CoreFault::Exited {
                signal: Some(s), ..
            } => (FaultKind::Exited, 0, Exit::Signal(*s)),
            CoreFault::Exited { status, .. } => {
                (FaultKind::Exited, 0, Exit::Code(status.unwrap_or(-1)))
            }
        },
        QemuError::NoKernel { .. } => (FaultKind::NoKernel, 0, Exit::Code(FAULT_EXIT)),
        QemuError::Image { .. } => (FaultKind::Load, 0, Exit::Code(FAULT_EXIT)),
        _ => (FaultKind::Exited, 0, Exit::Code(FAULT_EXIT)),
    };
    let msg = match e {
        QemuError::Fault(CoreFault::Fatal { message, .. }) => message.clone(),
        // The report without a leading "core N: " (the engine names the core).
        e => {
            let s = e.to_string();
            let s = match s.strip_prefix("core ") {
                Some(rest) => rest.split_once(": ").map_or(s.as_str(), |(_, r)| r),
                None => s.as_str(),
            };
            // The engine names the kind ("stack overflow: ...") itself.
            let s = s.strip_prefix("stack overflow: ").unwrap_or(s);
            s.as_bytes().to_vec()
        }
    };
    ctl.set_fault(c, kind, 0, addr, &msg);
    exit
}

impl IsaBackend for XtensaBackend {
    fn name(&self) -> &'static str {
        "xtensa"
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
    ) -> io::Result<CoreExit> {
        self.stop_cores();
        self.images = None;
        let ctl = control(memory);
        let rec = ctl.core(0);
        ctl.set_phase(0, PHASE_START);
        let started = self.images(library).map(|i| i[0].clone()).and_then(|elf| {
            let platform = Platform {
                qemu: &self.qemu,
                board: &self.board,
                memory,
            };
            XtensaCore::start(platform, &elf, &library.path, 0, 8, deadline)
        });
        let core = match started {
            Ok(core) => core,
            Err(e @ QemuError::Spawn { .. }) => return Err(io::Error::other(e.to_string())),
            Err(e) => {
                let exit = report(memory, 0, &e);
                return Ok(CoreExit {
                    exit,
                    stderr: Vec::new(),
                });
            }
        };
        if core.entry_status() != 0 {
            rec.result.store(core.entry_status(), Ordering::Release);
            ctl.set_fault(0, FaultKind::Entry, 0, 0, b"entry_func");
            core.quit();
            return Ok(CoreExit {
                exit: Exit::Code(FAULT_EXIT),
                stderr: Vec::new(),
            });
        }
        // What the start code printed reaches the host from this one start, as the host
        // backend's probe (the cores started for launches run it again silently).
        ctl.stdio_append(1, 0, &core.start_output().stdout);
        ctl.stdio_append(2, 0, &core.start_output().stderr);
        for k in core.kernels() {
            ctl.push_name(&k.name);
        }
        if !core.metadata().is_empty() {
            ctl.set_schema(core.metadata());
        }
        rec.result
            .store(core.kernels().len() as u32, Ordering::Release);
        rec.state.store(CORE_DONE, Ordering::Release);
        core.quit();
        Ok(CoreExit {
            exit: Exit::Code(0),
            stderr: Vec::new(),
        })
    }

    fn launch(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        kernel: &CStr,
        cores: usize,
        deadline: &Deadline,
    ) -> io::Result<Vec<CoreExit>> {
        let ctl = control(memory);
        let mut exits: Vec<CoreExit> = (0..cores)
            .map(|_| CoreExit {
                exit: Exit::Code(0),
                stderr: Vec::new(),
            })
            .collect();
        let mut running = vec![false; cores];
        // The guard pages the engine placed after the tensors (when it guards them); the
        // machine holds more than the control block does.
        let guards = ctl.guards();
        for c in 0..cores {
            let begun = (|| -> Result<(), QemuError> {
                let core = self.core(memory, library, c, cores, deadline)?;
                let k = core.kernel(kernel.to_bytes()).ok_or(QemuError::NoKernel {
                    core: c,
                    kernel: usize::MAX,
                    count: core.kernels().len(),
                })?;
                if self.guards[c] != guards {
                    let core = self.cores[c].as_mut().expect("started above");
                    core.guard(&guards)?;
                    self.guards[c].clone_from(&guards);
                }
                let core = self.cores[c].as_mut().expect("started above");
                core.begin(k, cores as u32)
            })();
            match begun {
                Ok(()) => running[c] = true,
                Err(QemuError::NoKernel { .. }) => {
                    ctl.set_fault(c, FaultKind::NoKernel, 0, 0, kernel.to_bytes());
                    exits[c].exit = Exit::Code(FAULT_EXIT);
                }
                Err(e) => {
                    exits[c].exit = report(memory, c, &e);
                    self.cores[c] = None;
                }
            }
        }
        for c in 0..cores {
            if !running[c] {
                continue;
            }
            let core = self.cores[c].as_mut().expect("begun above");
            match core.finish(deadline) {
                Ok(done) => {
                    let rec = ctl.core(c);
                    rec.result.store(done.status, Ordering::Release);
                    rec.state.store(CORE_DONE, Ordering::Release);
                    // Core 0's stdio reaches the host, as the firmware's does.
                    if c == 0 {
                        ctl.stdio_append(1, 0, &done.stdout);
                        ctl.stdio_append(2, 0, &done.stderr);
                    }
                }
                Err(e) => {
                    exits[c].exit = report(memory, c, &e);
                    self.cores[c] = None;
                }
            }
        }
        Ok(exits)
    }

    fn shape(
        &mut self,
        memory: &DeviceMemory,
        library: &OpLibrary,
        op: &CStr,
        deadline: &Deadline,
    ) -> io::Result<CoreExit> {
        let host = companion(&library.path).ok_or_else(|| {
            io::Error::other(format!(
                "{}: shape functions run in the library's host build, and there is no {} beside it",
                library.path.display(),
                library.path.with_extension("so").display()
            ))
        })?;
        let lib = OpLibrary::locate(&host).map_err(io::Error::other)?;
        self.host.shape(memory, &lib, op, deadline)
    }

    fn shutdown(&mut self) {
        self.stop_cores();
        self.host.shutdown();
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
